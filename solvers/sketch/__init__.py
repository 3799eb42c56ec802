"""Sketch preconditioners for ridge regression: Frequent Directions and random projections.

See the paper "Frequent Directions for ridge regression: statistical and optimization
perspectives" for the estimators, the iterative scheme and its convergence theorems.
"""

from solvers.sketch.distributed import fd_sketch_dask
from solvers.sketch.fd import FrequentDirections, RobustFD
from solvers.sketch.metrics import estimator_metrics, relative_errors, ridge_metrics
from solvers.sketch.precondition import SketchPreconditioner
from solvers.sketch.random import GaussianSketch, SJLTSketch, make_random_sketch
from solvers.sketch.ridge import RIDGE_METHODS, fdrr, solve_ridge

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
