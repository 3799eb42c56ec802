"""Small real data sets shipped with the package (see ``instances/data/README.md``).

Files are read through :mod:`importlib.resources`, so the loaders work from a source checkout,
an installed wheel or a zipped package alike.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from instances.io import Data, load

__all__ = ["load_stackloss", "load_breast_cancer"]


def _load_shipped(filename: str, target: str) -> Data:
    ref = resources.files("instances").joinpath("data").joinpath(filename)
    with resources.as_file(ref) as path:
        return load(path, target=target)


def load_stackloss() -> Data:
    """Brownlee's stack-loss plant data: 21 days, 3 features, a standard LAD example.

    Features ``air_flow``, ``water_temp``, ``acid_conc``; target ``y = stack_loss`` (ten
    times the percentage of ingoing ammonia lost). The LAD (L1) fit is
    ``stack_loss ≈ -39.69 + 0.832 air_flow + 0.574 water_temp - 0.061 acid_conc``
    (Koenker, *Quantile Regression*, 2005). Public domain; Brownlee (1965).

    Returns
    -------
    Data
        ``X`` (21, 3), ``y`` (21,), ``sample_weight=None``, the three feature names.
    """
    return _load_shipped("stackloss.csv", "stack_loss")


def load_breast_cancer() -> Data:
    """Breast Cancer Wisconsin (Diagnostic): 569 tumours, 30 real features, 2 classes.

    ``y = +1`` for benign (357 rows) and ``-1`` for malignant (212 rows), i.e.
    ``2 * sklearn_target - 1`` for ``sklearn.datasets.load_breast_cancer``. Features are
    unscaled (areas are in the thousands, fractal dimensions near 0.06); standardise them
    before fitting kernels or regularised models. CC BY 4.0; Wolberg, Street, Mangasarian
    (1993), UCI Machine Learning Repository, doi:10.24432/C5DW2B.

    Returns
    -------
    Data
        ``X`` (569, 30), ``y`` (569,) in ``{-1.0, +1.0}``, ``sample_weight=None``, names.
    """
    d = _load_shipped("breast_cancer.csv", "benign")
    return d._replace(y=np.where(d.y > 0.5, 1.0, -1.0))
