"""The aggregated weighted SVM problems of AID, built from arrays for Clarabel or HiGHS.

Linear kernel, primal (docs/strategies/aid.md; paper problem (9)) on cluster means
xbar_k, labels y_k and weights W_k, with a diagonal Hessian ``h`` (1 unscaled; ``sigma c_j^2``
for the scaled columns of :mod:`solvers.aid.scaling`):

    min_{w, b, xi}  1/2 sum_j h_j w_j^2 + C sum_k W_k xi_k
    s.t.            y_k (w' xbar_k + b) + xi_k >= 1,   xi_k >= 0,

whose margin-row multipliers alpha_k (returned as well) are a point of the aggregated dual.

Any kernel, dual (paper appendix B), with Kbar_kl = sum_{i in C_k, j in C_l} s_i s_j K_ij /
(W_k W_l) and Qbar = diag(y) Kbar diag(y):

    min_alpha  1/2 alpha' Qbar alpha - sum_k alpha_k   s.t.  y' alpha = 0,  0 <= alpha_k <= C W_k.

Solver statuses go through the backends' status maps (``clarabel_termination``,
``highs_termination``; Clarabel's ``AlmostSolved`` is a numerical error there); the AID loop
raises :class:`~solvers.errors.SubproblemError` on anything but optimal or the user's stop.
The dual's intercept b is recovered by :func:`best_intercept` (an exact 1-D minimisation),
which needs no sign convention of the solver's equality dual.
"""

from __future__ import annotations

import dataclasses

import clarabel
import highspy
import numpy as np
import scipy.sparse as sp

from solvers.clarabel_backend import clarabel_termination
from solvers.highs_backend import highs_termination, new_highs
from solvers.result import TerminationCondition

SUBSOLVERS = ("clarabel", "highs")
SUBSOLVER_NAMES = {"clarabel": "Clarabel", "highs": "HiGHS (active-set QP)"}


def _clarabel_settings(tol: float, time_limit: float | None) -> clarabel.DefaultSettings:
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = tol
    st.tol_gap_rel = tol
    st.tol_feas = tol
    st.tol_ktratio = max(tol, 1e-10)
    st.max_iter = 200
    if time_limit is not None:
        st.time_limit = float(max(time_limit, 1e-3))
    return st


@dataclasses.dataclass
class QpOutcome:
    """One aggregated solve: the termination (through the backend's status map), the raw
    status name, and the solution when the solver returned one: ``w``, ``b`` (linear primal) and
    ``alpha`` (the margin-row multipliers, or the dual variables of the kernel dual); ``bound``
    is the verified dual objective of a constrained QP (:mod:`solvers.aid.svm_constrained`)."""

    termination: TerminationCondition
    raw: str
    w: np.ndarray | None = None
    b: float = 0.0
    alpha: np.ndarray | None = None
    bound: float | None = None


def feasible_alpha(alpha: np.ndarray, yk: np.ndarray, box: np.ndarray) -> np.ndarray:
    """alpha clipped to [0, box], then y'alpha = 0 restored by shrinking the entries of the
    class with the larger sum proportionally: a feasible point of the dual, whose value is
    therefore a lower bound on the optimum whatever the solver's accuracy."""
    a = np.clip(alpha, 0.0, box)
    excess = float(yk @ a)
    side = yk > 0 if excess > 0 else yk < 0
    total = float(a[side].sum())
    if excess != 0.0 and total > 0.0:
        a[side] *= max(0.0, 1.0 - abs(excess) / total)
    return a


def project_equalities(
    alpha: np.ndarray, A: np.ndarray, box: np.ndarray, *, rounds: int = 20
) -> np.ndarray | None:
    """A point of {0 <= alpha <= box, A alpha = 0} near ``alpha``, or None.

    Alternating projections: move the entries strictly inside the box by the least-norm
    correction of the residual ``A alpha``, clip, repeat until the residual is round-off
    (``|A alpha| <= 1e-14 |A| |alpha|`` row by row).
    """
    a = np.clip(alpha, 0.0, box)
    size = np.abs(A) @ np.abs(a) + np.finfo(float).tiny
    for _ in range(rounds):
        rho = A @ a
        if np.all(np.abs(rho) <= 1e-14 * size):
            return a
        free = (a > 0.0) & (a < box)
        Af = A[:, free]
        if Af.shape[1] < A.shape[0]:
            return None
        a[free] -= Af.T @ np.linalg.lstsq(Af @ Af.T, rho, rcond=None)[0]
        a = np.clip(a, 0.0, box)
        size = np.abs(A) @ np.abs(a) + np.finfo(float).tiny
    return None


def linear_svm_primal(
    Xbar: np.ndarray,
    yk: np.ndarray,
    Wk: np.ndarray,
    C: float,
    *,
    hess: np.ndarray | None = None,
    subsolver: str = "clarabel",
    tol: float = 1e-10,
    time_limit: float | None = None,
) -> QpOutcome:
    """Solve the aggregated linear primal (Hessian ``diag(hess)``, default the identity)."""
    hess = np.ones(Xbar.shape[1]) if hess is None else hess
    if subsolver == "highs":
        return _linear_highs(Xbar, yk, Wk, C, hess, time_limit)
    K, p = Xbar.shape
    P = sp.diags(np.r_[hess, np.zeros(1 + K)]).tocsc()
    q = np.r_[np.zeros(p + 1), C * Wk]
    # rows 0..K-1: -y_k xbar_k'w - y_k b - xi_k + s = -1 ; rows K..2K-1: -xi_k + s = 0
    YX = -(yk[:, None] * Xbar)
    top = sp.hstack([sp.csr_matrix(np.column_stack([YX, -yk])), -sp.identity(K, format="csr")])
    bot = sp.hstack([sp.csr_matrix((K, p + 1)), -sp.identity(K, format="csr")])
    A = sp.vstack([top, bot]).tocsc()
    bvec = np.r_[-np.ones(K), np.zeros(K)]
    solver = clarabel.DefaultSolver(
        P, q, A, bvec, [clarabel.NonnegativeConeT(2 * K)], _clarabel_settings(tol, time_limit)
    )
    sol = solver.solve()
    term, raw = clarabel_termination(sol)
    x, z = np.array(sol.x), np.array(sol.z)
    if x.shape[0] != p + 1 + K or z.shape[0] != 2 * K or not np.all(np.isfinite(x)):
        return QpOutcome(term, raw)
    # stationarity in w: diag(hess) w = sum_k z_k y_k xbar_k, so z_k (k < K) is alpha_k
    return QpOutcome(term, raw, w=x[:p], b=float(x[p]), alpha=z[:K])


def _linear_highs(
    Xbar: np.ndarray, yk: np.ndarray, Wk: np.ndarray, C: float, hess_diag: np.ndarray,
    time_limit: float | None,
) -> QpOutcome:
    K, p = Xbar.shape
    nv = p + 1 + K
    h = new_highs()
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nv, K
    lp.col_cost_ = np.r_[np.zeros(p + 1), C * Wk]
    inf = highspy.kHighsInf
    lp.col_lower_ = np.r_[np.full(p + 1, -inf), np.zeros(K)]
    lp.col_upper_ = np.full(nv, inf)
    lp.row_lower_ = np.ones(K)
    lp.row_upper_ = np.full(K, inf)
    M = sp.hstack([sp.csr_matrix(np.column_stack([yk[:, None] * Xbar, yk])),
                   sp.identity(K, format="csr")]).tocsc()
    A = lp.a_matrix_
    A.format_ = highspy.MatrixFormat.kColwise
    A.num_col_, A.num_row_ = nv, K
    A.start_, A.index_, A.value_ = M.indptr, M.indices, M.data
    hess = highspy.HighsHessian()
    hess.dim_ = nv
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_ = np.r_[np.arange(p + 1), np.full(nv - p, p)].astype(np.int32)
    hess.index_ = np.arange(p, dtype=np.int32)
    hess.value_ = np.ascontiguousarray(hess_diag, dtype=np.float64)
    model = highspy.HighsModel()
    model.lp_ = lp
    model.hessian_ = hess
    h.passModel(model)
    h.run()
    term, raw = highs_termination(h)
    sol = h.getSolution()
    if not (sol.value_valid and sol.dual_valid and len(sol.col_value) == nv):
        return QpOutcome(term, raw)
    x = np.array(sol.col_value)
    # HiGHS's row duals of this minimisation are >= 0 at the active lower bound 1: alpha_k
    return QpOutcome(term, raw, w=x[:p], b=float(x[p]), alpha=np.array(sol.row_dual))


def kernel_svm_dual(
    Qbar: np.ndarray,
    yk: np.ndarray,
    Wk: np.ndarray,
    C: float,
    *,
    tol: float = 1e-10,
    time_limit: float | None = None,
) -> QpOutcome:
    """Solve the aggregated dual by Clarabel; ``alpha`` of the outcome is its solution."""
    K = Qbar.shape[0]
    P = sp.triu(sp.csc_matrix(Qbar)).tocsc()
    q = -np.ones(K)
    # y'alpha = 0 (zero cone); -alpha <= 0; alpha <= C W (nonnegative cone)
    A = sp.vstack([sp.csr_matrix(yk[None, :]), -sp.identity(K), sp.identity(K)]).tocsc()
    bvec = np.r_[0.0, np.zeros(K), C * Wk]
    cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(2 * K)]
    solver = clarabel.DefaultSolver(P, q, A, bvec, cones, _clarabel_settings(tol, time_limit))
    sol = solver.solve()
    term, raw = clarabel_termination(sol)
    alpha = np.array(sol.x)
    if alpha.shape[0] != K or not np.all(np.isfinite(alpha)):
        return QpOutcome(term, raw)
    return QpOutcome(term, raw, alpha=alpha)


def best_intercept(g: np.ndarray, yk: np.ndarray, Wk: np.ndarray) -> float:
    """argmin_b sum_k W_k max(0, 1 - y_k (g_k + b)), exactly (a weighted-median search).

    The term of k is flat beyond its breakpoint t_k = y_k - g_k and has slope -W_k (y_k = +1,
    for b < t_k) or +W_k (y_k = -1, for b > t_k).  The minimiser is a breakpoint where the
    slope changes sign; ties go to the middle of the flat optimal segment.
    """
    t = yk - g
    order = np.argsort(t, kind="stable")
    t, y, W = t[order], yk[order], Wk[order]
    # slope just right of t_j: + (W of y=-1 with t <= t_j) - (W of y=+1 with t > t_j)
    neg_left = np.cumsum(np.where(y < 0, W, 0.0))
    pos_right = np.sum(np.where(y > 0, W, 0.0)) - np.cumsum(np.where(y > 0, W, 0.0))
    slope_right = neg_left - pos_right
    j = int(np.searchsorted(slope_right, 0.0, side="left"))
    j = min(j, t.shape[0] - 1)
    if slope_right[j] == 0.0 and j + 1 < t.shape[0]:
        return float(0.5 * (t[j] + t[j + 1]))
    return float(t[j])
