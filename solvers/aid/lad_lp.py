"""The aggregated LAD problem as a HiGHS LP in dual form, built from arrays and kept between
AID iterations.

Aggregated weighted LAD (formulations.md section 1) with cluster sums W_k, SX_k, SY_k:

    F = min_beta sum_k W_k |ybar_k - xbar_k' beta|
      = max_v  sum_k SY_k v_k   s.t.  sum_k SX_k v_k = 0,  -1 <= v_k <= 1        (LP dual)

(v_k = u_k / W_k, so the columns are the cluster sums and every bound is [-1, 1]).  The
intercept, when fitted, is one more row whose coefficients are W_k.  beta is the vector of row
duals: HiGHS reports, for this maximisation, row duals with ``beta = +row_dual`` (checked in
``tests/test_aid_lad.py::test_dual_sign_convention``).

Warm start: a split cluster's column is fixed to [0, 0] and its two halves are appended as new
columns; the previous basis is kept, with each new column placed at the bound that makes its
reduced cost d = SY - SX'beta (= W times the aggregated residual) dual feasible, so the dual
simplex restarts from a dual feasible basis.  A basic column's first half inherits the basic
status.
"""

from __future__ import annotations

import highspy
import numpy as np

_KBASIC = highspy.HighsBasisStatus.kBasic
_KLOWER = highspy.HighsBasisStatus.kLower
_KUPPER = highspy.HighsBasisStatus.kUpper


def new_highs(*, threads: int | None = None) -> highspy.Highs:
    """A quiet HiGHS instance."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    return h


def lad_dual_lp(SXa: np.ndarray, SY: np.ndarray) -> highspy.HighsLp:
    """The LP ``max SY'v s.t. SXa'v = 0, -1 <= v <= 1`` as a column-wise HighsLp.

    ``SXa`` is (K, q): one column per cluster, one equality row per coefficient of beta.
    """
    K, q = SXa.shape
    lp = highspy.HighsLp()
    lp.num_col_ = K
    lp.num_row_ = q
    lp.col_cost_ = np.ascontiguousarray(SY, dtype=np.float64)
    lp.col_lower_ = -np.ones(K)
    lp.col_upper_ = np.ones(K)
    lp.row_lower_ = np.zeros(q)
    lp.row_upper_ = np.zeros(q)
    lp.sense_ = highspy.ObjSense.kMaximize
    A = lp.a_matrix_
    A.format_ = highspy.MatrixFormat.kColwise
    A.num_col_ = K
    A.num_row_ = q
    A.start_ = np.arange(0, K * q + 1, q, dtype=np.int32)
    A.index_ = np.tile(np.arange(q, dtype=np.int32), K)
    A.value_ = np.ascontiguousarray(SXa, dtype=np.float64).ravel()
    return lp


class AggregatedLadLP:
    """The aggregated LP of one AID run; ``col[k]`` is the HiGHS column of cluster k."""

    def __init__(self, SXa: np.ndarray, SY: np.ndarray, *, solver: str = "simplex") -> None:
        self.highs = new_highs()
        self.highs.setOptionValue("solver", solver)
        self.highs.passModel(lad_dual_lp(SXa, SY))
        self.col = np.arange(SXa.shape[0], dtype=np.int64)
        self.q = SXa.shape[1]

    def solve(self, time_limit: float | None = None) -> tuple[str, float, np.ndarray, np.ndarray]:
        """Run HiGHS; return ``(status, F, beta_full, v)`` with v indexed by cluster."""
        h = self.highs
        h.setOptionValue("time_limit", float(time_limit) if time_limit is not None else np.inf)
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        sol = h.getSolution()
        beta = np.array(sol.row_dual, dtype=np.float64)
        v_cols = np.array(sol.col_value, dtype=np.float64)
        F = float(h.getInfo().objective_function_value)
        return status, F, beta, v_cols[self.col]

    def split(
        self,
        old_ids: np.ndarray,
        new_ids: np.ndarray,
        SXa: np.ndarray,
        SY: np.ndarray,
        beta: np.ndarray,
    ) -> None:
        """Replace the columns of the split clusters ``old_ids`` and add those of ``new_ids``.

        ``SXa`` and ``SY`` hold the updated sums of all clusters.
        """
        h = self.highs
        m = old_ids.shape[0]
        basis = h.getBasis()
        col_status = list(basis.col_status)
        was_basic = np.array([col_status[c] == _KBASIC for c in self.col[old_ids]], dtype=bool)
        old_cols = self.col[old_ids]
        h.changeColsBounds(
            old_cols.shape[0], old_cols.astype(np.int32), np.zeros(m), np.zeros(m)
        )
        for c in old_cols:
            col_status[c] = _KLOWER
        first = h.getNumCol()
        ids = np.concatenate([old_ids, new_ids])
        K_add = ids.shape[0]
        q = self.q
        h.addCols(
            K_add,
            np.ascontiguousarray(SY[ids]),
            -np.ones(K_add),
            np.ones(K_add),
            K_add * q,
            np.arange(0, K_add * q, q, dtype=np.int32),
            np.tile(np.arange(q, dtype=np.int32), K_add),
            np.ascontiguousarray(SXa[ids]).ravel(),
        )
        col = np.concatenate([self.col, np.zeros(new_ids.shape[0], dtype=np.int64)])
        col[ids] = first + np.arange(K_add)
        self.col = col
        d = SY[ids] - SXa[ids] @ beta
        new_status = [_KUPPER if di > 0 else _KLOWER for di in d]
        for j in np.flatnonzero(was_basic):
            new_status[j] = _KBASIC
        basis.col_status = col_status + new_status
        if h.setBasis(basis) != highspy.HighsStatus.kOk:
            # fall back to HiGHS's own completion of the old basis
            pass

    def rebuild(self, SXa: np.ndarray, SY: np.ndarray) -> None:
        """Pass a fresh model (no warm start)."""
        self.highs.clearModel()
        self.highs.passModel(lad_dual_lp(SXa, SY))
        self.col = np.arange(SXa.shape[0], dtype=np.int64)
