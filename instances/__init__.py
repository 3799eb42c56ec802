"""Instance generators, loaders and writers, and small shipped datasets.

Imports neither :mod:`optmodels` nor :mod:`solvers`.
"""

from instances.datasets import load_breast_cancer, load_stackloss
from instances.generators import make_classification, make_lad, make_sklr_synth, make_weights
from instances.io import SUPPORTED_EXTENSIONS, Data, DataFileError, load, save

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "Data",
    "DataFileError",
    "load",
    "load_breast_cancer",
    "load_stackloss",
    "make_classification",
    "make_lad",
    "make_sklr_synth",
    "make_weights",
    "save",
]
