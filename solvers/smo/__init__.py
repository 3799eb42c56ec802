"""SMO decomposition for the weighted SVM dual and the (sparse) kernel logistic regression dual.

Modules: :mod:`~solvers.smo.qmatrix` (Q column protocol, kernel cache, full matrix),
:mod:`~solvers.smo.core` (the one generic second-order SMO solver, compiled C++),
:mod:`~solvers.smo.svm` and :mod:`~solvers.smo.klr` (the two problems),
:mod:`~solvers.smo.block` (working sets of q > 2 variables solved by HiGHS / CVXPY).
"""

from solvers.smo.block import block_klr, block_svm
from solvers.smo.core import DualSolution, solve_dual
from solvers.smo.klr import (
    decision_function,
    feasible_start,
    lam_max,
    lam_path,
    predict,
    predict_proba,
    smo_klr,
)
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix, QMatrix
from solvers.smo.svm import smo_svm, svm_decision_function

__all__ = [
    "DualSolution",
    "KernelQMatrix",
    "PrecomputedQMatrix",
    "QMatrix",
    "block_klr",
    "block_svm",
    "decision_function",
    "feasible_start",
    "lam_max",
    "lam_path",
    "predict",
    "predict_proba",
    "smo_klr",
    "smo_svm",
    "solve_dual",
    "svm_decision_function",
]
