"""Reference LP/QP cases with known answers, shared by every backend (MOI's Test.jl style).

Each case is a function returning (QPData, expected) where ``expected`` holds the optimal
objective, or the termination the backend must report. Add a case here and every registered
backend runs it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.qp import QPData
from solvers.result import TerminationCondition as T

INF = np.inf


def _qp(c, A, lo, hi, clo, chi, P=None) -> QPData:
    return QPData(
        c=np.asarray(c, float),
        A=sp.csr_matrix(np.atleast_2d(A).astype(float)),
        row_lo=np.asarray(lo, float),
        row_hi=np.asarray(hi, float),
        col_lo=np.asarray(clo, float),
        col_hi=np.asarray(chi, float),
        P=None if P is None else sp.csr_matrix(P),
    )


def lp_lower_row():
    """min x0 + 2 x1 s.t. x0 + x1 >= 1, x >= 0 -> 1 at (1, 0)."""
    return _qp([1, 2], [[1, 1]], [1], [INF], [0, 0], [INF, INF]), {"objective": 1.0, "x": [1, 0]}


def lp_upper_row_free_var():
    """min -x s.t. x <= 3, x free -> -3."""
    return _qp([-1], [[1]], [-INF], [3], [-INF], [INF]), {"objective": -3.0, "x": [3]}


def lp_ranged_row_with_offset():
    """min x0 - x1 + 5 s.t. 1 <= x0 + x1 <= 4, 0 <= x <= 3 -> 5 + (0 - 3) = 2."""
    qp = _qp([1, -1], [[1, 1]], [1], [4], [0, 0], [3, 3])
    qp.offset = 5.0
    return qp, {"objective": 2.0, "x": [0, 3]}


def lp_fixed_and_negative_bounds():
    """min x0 + x1 s.t. x0 - x1 = 1, x0 in [-2, -1], x1 fixed at -3 -> x0 = -2, obj -5."""
    return _qp([1, 1], [[1, -1]], [1], [1], [-2, -3], [-1, -3]), {"objective": -5.0, "x": [-2, -3]}


def qp_equality():
    """min 1/2 ||x||^2 s.t. x0 + x1 = 2 -> 1 at (1, 1)."""
    return _qp([0, 0], [[1, 1]], [2], [2], [-INF, -INF], [INF, INF], np.eye(2)), {
        "objective": 1.0,
        "x": [1, 1],
    }


def qp_active_bound():
    """min 1/2 (x0^2 + x1^2) - 3 x0 s.t. x0 <= 1 (bound) -> x = (1, 0), obj -2.5."""
    return _qp([-3, 0], np.zeros((0, 2)), [], [], [-INF, -INF], [1, INF], np.eye(2)), {
        "objective": -2.5,
        "x": [1, 0],
    }


def lp_infeasible():
    """x >= 5 and x <= 1."""
    return _qp([1], [[1]], [5], [INF], [0], [1]), {
        "termination": {T.INFEASIBLE, T.INFEASIBLE_OR_UNBOUNDED}
    }


def lp_unbounded():
    """min -x0 s.t. x0 - x1 <= 1, x >= 0 (ray (1, 1))."""
    return _qp([-1, 0], [[1, -1]], [-INF], [1], [0, 0], [INF, INF]), {
        "termination": {T.UNBOUNDED, T.INFEASIBLE_OR_UNBOUNDED}
    }


def qp_unbounded():
    """min x0^2 + x1 with x1 free: HiGHS is known to mis-report such QPs; never 'optimal'."""
    return _qp([0, 1], np.zeros((0, 2)), [], [], [-INF, -INF], [INF, INF], np.diag([2.0, 0.0])), {
        "not_optimal": True
    }


CASES = [
    lp_lower_row,
    lp_upper_row_free_var,
    lp_ranged_row_with_offset,
    lp_fixed_and_negative_bounds,
    qp_equality,
    qp_active_bound,
    lp_infeasible,
    lp_unbounded,
    qp_unbounded,
]
