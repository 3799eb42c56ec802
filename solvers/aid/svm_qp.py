"""The aggregated weighted SVM problems of AID, built from arrays for Clarabel or HiGHS.

Linear kernel, primal (formulations.md section 2; paper problem (9)) on cluster means
xbar_k, labels y_k and weights W_k:

    min_{w, b, xi}  1/2 ||w||^2 + C sum_k W_k xi_k
    s.t.            y_k (w' xbar_k + b) + xi_k >= 1,   xi_k >= 0.

Any kernel, dual (paper appendix B), with Kbar_kl = sum_{i in C_k, j in C_l} s_i s_j K_ij /
(W_k W_l) and Qbar = diag(y) Kbar diag(y):

    min_alpha  1/2 alpha' Qbar alpha - sum_k alpha_k   s.t.  y' alpha = 0,  0 <= alpha_k <= C W_k.

The dual's intercept b is recovered by :func:`best_intercept` (an exact 1-D minimisation), which
needs no sign convention of the solver's equality dual.
"""

from __future__ import annotations

import clarabel
import highspy
import numpy as np
import scipy.sparse as sp

from solvers.highs_backend import new_highs

SUBSOLVERS = ("clarabel", "highs")


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


def _clarabel_ok(status: object) -> bool:
    return status in (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved)


def linear_svm_primal(
    Xbar: np.ndarray,
    yk: np.ndarray,
    Wk: np.ndarray,
    C: float,
    *,
    subsolver: str = "clarabel",
    tol: float = 1e-10,
    time_limit: float | None = None,
) -> tuple[str, np.ndarray, float]:
    """Solve the aggregated linear primal; return ``(status, w, b)`` (status "Optimal" if ok)."""
    if subsolver == "highs":
        return _linear_highs(Xbar, yk, Wk, C, time_limit)
    K, p = Xbar.shape
    nv = p + 1 + K
    P = sp.diags(np.r_[np.ones(p), np.zeros(1 + K)]).tocsc()
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
    x = np.array(sol.x)
    status = "Optimal" if _clarabel_ok(sol.status) else str(sol.status)
    assert x.shape[0] == nv
    return status, x[:p], float(x[p])


def _linear_highs(
    Xbar: np.ndarray, yk: np.ndarray, Wk: np.ndarray, C: float, time_limit: float | None
) -> tuple[str, np.ndarray, float]:
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
    hess.value_ = np.ones(p)
    model = highspy.HighsModel()
    model.lp_ = lp
    model.hessian_ = hess
    h.passModel(model)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    x = np.array(h.getSolution().col_value)
    return status, x[:p], float(x[p])


def kernel_svm_dual(
    Qbar: np.ndarray,
    yk: np.ndarray,
    Wk: np.ndarray,
    C: float,
    *,
    tol: float = 1e-10,
    time_limit: float | None = None,
) -> tuple[str, np.ndarray]:
    """Solve the aggregated dual by Clarabel; return ``(status, alpha)``."""
    K = Qbar.shape[0]
    P = sp.triu(sp.csc_matrix(Qbar)).tocsc()
    q = -np.ones(K)
    # y'alpha = 0 (zero cone); -alpha <= 0; alpha <= C W (nonnegative cone)
    A = sp.vstack([sp.csr_matrix(yk[None, :]), -sp.identity(K), sp.identity(K)]).tocsc()
    bvec = np.r_[0.0, np.zeros(K), C * Wk]
    cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(2 * K)]
    solver = clarabel.DefaultSolver(P, q, A, bvec, cones, _clarabel_settings(tol, time_limit))
    sol = solver.solve()
    status = "Optimal" if _clarabel_ok(sol.status) else str(sol.status)
    alpha = np.clip(np.array(sol.x), 0.0, C * Wk)
    return status, alpha


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
