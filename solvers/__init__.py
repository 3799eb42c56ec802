"""Monolithic backends and decomposition / sketching strategies, on arrays and small protocols.

This package never imports :mod:`optmodels`.
"""

from solvers.errors import (
    DataError,
    ExportError,
    InfeasibleError,
    LimitReachedError,
    NumericalError,
    SolveError,
    SubproblemError,
    UnboundedError,
)
from solvers.kernels import Kernel
from solvers.result import SolutionStatus, SolveResult, TerminationCondition

__all__ = [
    "DataError",
    "ExportError",
    "InfeasibleError",
    "Kernel",
    "LimitReachedError",
    "NumericalError",
    "SolutionStatus",
    "SolveError",
    "SolveResult",
    "SubproblemError",
    "TerminationCondition",
    "UnboundedError",
]
