"""Sketch preconditioners for ridge regression: Frequent Directions and random projections.

See the paper "Frequent Directions for ridge regression: statistical and optimization
perspectives" for the estimators, the iterative scheme and its convergence theorems.

The names below load their submodule on first access (PEP 562 module ``__getattr__``), so
importing a light submodule such as :mod:`solvers.sketch.methods` does not load the sketches
and scipy.linalg; ``from solvers.sketch import X`` works for every name of ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solvers.sketch.distributed import fd_sketch_dask
    from solvers.sketch.fd import FrequentDirections, RobustFD
    from solvers.sketch.methods import RIDGE_METHODS
    from solvers.sketch.metrics import estimator_metrics, relative_errors, ridge_metrics
    from solvers.sketch.precondition import SketchPreconditioner
    from solvers.sketch.random import GaussianSketch, SJLTSketch, make_random_sketch
    from solvers.sketch.ridge import fdrr, solve_ridge

_HOME = {
    "RIDGE_METHODS": "methods",
    "FrequentDirections": "fd",
    "GaussianSketch": "random",
    "RobustFD": "fd",
    "SJLTSketch": "random",
    "SketchPreconditioner": "precondition",
    "estimator_metrics": "metrics",
    "fd_sketch_dask": "distributed",
    "fdrr": "ridge",
    "make_random_sketch": "random",
    "relative_errors": "metrics",
    "ridge_metrics": "metrics",
    "solve_ridge": "ridge",
}
"""Each exported name and the submodule that defines it."""

__all__ = [
    "RIDGE_METHODS",
    "FrequentDirections",
    "GaussianSketch",
    "RobustFD",
    "SJLTSketch",
    "SketchPreconditioner",
    "estimator_metrics",
    "fd_sketch_dask",
    "fdrr",
    "make_random_sketch",
    "relative_errors",
    "ridge_metrics",
    "solve_ridge",
]


def __getattr__(name: str) -> Any:
    """An exported name, from its submodule (imported now if need be)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
