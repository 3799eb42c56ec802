"""AID-LAD with linear constraints and bounds on the coefficients (issue 33).

The aggregated model keeps the user's constraints (the same feasible set Theta):

    F = min_{theta in Theta} sum_k rho(SY_k - SXa_k' theta)
      <= min_{theta in Theta} sum_i s_i rho(y_i - x_i' theta) = E*

because rho is sublinear (rho(a + b) <= rho(a) + rho(b), rho(c a) = c rho(a) for c >= 0), so
for every theta the aggregated objective is at most the original one; and when every cluster
is sign-pure at the aggregated optimum theta_K (all its residuals of one sign), the two
objectives are equal there, so theta_K, feasible for the same Theta, attains F <= E* and is
optimal. Nothing in either argument uses the form of Theta: the certificate of unconstrained
AID holds as it is.

Two ways to solve the aggregated LP; both end with the same verified bound:

* :class:`ConstrainedLadLP` (``warm_start=False``): its primal form (K + m rows) by HiGHS
  through :func:`solvers.backend.solve_qp` (the constraints declared on theta there), cold at
  each iteration.
* :class:`ConstrainedDualLP` (the default): its LP dual, one row per coefficient, kept in one
  HiGHS model whose basis carries over between iterations (a split cluster's column is fixed
  to 0 and its pieces appended, as in unconstrained AID's :class:`~solvers.aid.lad_lp.
  AggregatedLadLP`), with one column per finite side of each constraint row and bound:

      max  SY'v - sum_j (hi_j mu+_j - lo_j mu-_j) - sum_i (ub_i l+_i - lb_i l-_i)
      s.t. SXa'v - G'(mu+ - mu-) - (l+ - l-) = 0,   lo_q <= v_k <= hi_q,   mu, l >= 0

  (an equality row, lo_j = hi_j, has one free column mu_j in place of mu+ - mu-). Its row duals
  are theta. The point comes back as (theta, the residuals' parts e+, e-) and the row duals
  (v, mu- - mu+) of the primal form, and :func:`solvers.backend.verify` checks it on the primal
  form exactly as it checks :func:`solvers.backend.solve_qp`'s answers: the bound is the dual
  objective the toolkit computes from v and mu. A run that HiGHS does not end optimal, or that
  fails the check, is solved again by :class:`ConstrainedLadLP` in that iteration.

The bound F of an iteration is that verified dual objective (any dual feasible point bounds the
aggregated optimum, which bounds E*). An infeasible Theta is reported by the primal form with a
Farkas certificate that the backend checked (the dual form is then unbounded and HiGHS's verdict
there is not trusted); the aggregated and original models share Theta, so AID stops at once with
INFEASIBLE.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.aid.lad_lp import AggregatedLadLP, LpOutcome
from solvers.backend import BackendOutput, solve_qp, verify
from solvers.constraints import CoefConstraints
from solvers.highs_backend import highs_termination
from solvers.qp import QPData
from solvers.result import TerminationCondition


def scaled_constraints(cc: CoefConstraints, col: np.ndarray, t: float,
                       fit_intercept: bool) -> CoefConstraints:
    """The constraints in the units of AID's equilibrated data (:class:`solvers.aid.scaling.
    LadScaling`: beta = beta' col / t, b = b' / t), exact with power-of-two factors."""
    d = (np.r_[col, 1.0] if fit_intercept else np.asarray(col, dtype=float)) / t
    return cc.substituted(d)


class ConstrainedLadLP:
    """The aggregated primal LP with the constraints (module docstring):

        min  sum_k (hi e+_k - lo e-_k)
        s.t. SXa_k' theta + e+_k - e-_k = SY_k,   lo_c <= G theta <= hi_c,
             lb <= theta <= ub,   e+, e- >= 0,

    with ``(lo, hi)`` the quantile box (the costs of the two sides, 2 tau and 2 (1 - tau))."""

    def __init__(self, SXa: np.ndarray, SY: np.ndarray, box: tuple[float, float],
                 constraints: CoefConstraints) -> None:
        self.box, self.cons = box, constraints
        self.iterations = 0
        self.rebuild(SXa, SY)

    def rebuild(self, SXa: np.ndarray, SY: np.ndarray) -> None:
        """The new clusters' sums (after a split)."""
        self.SXa, self.SY = np.asarray(SXa, dtype=float), np.asarray(SY, dtype=float)

    def qp(self) -> QPData:
        """The LP as :class:`solvers.qp.QPData`."""
        K, k = self.SXa.shape
        cc, (lo, hi) = self.cons, self.box
        eye = sp.identity(K, format="csr")
        A = sp.hstack([sp.csr_matrix(self.SXa), eye, -eye], format="csr")
        row_lo, row_hi = self.SY, self.SY
        if cc.m:
            A = sp.vstack([A, sp.hstack([sp.csr_matrix(cc.G), sp.csr_matrix((cc.m, 2 * K))])],
                          format="csr")
            row_lo, row_hi = np.r_[self.SY, cc.lo], np.r_[self.SY, cc.hi]
        return QPData(c=np.r_[np.zeros(k), np.full(K, hi), np.full(K, -lo)], A=A,
                      row_lo=row_lo, row_hi=row_hi,
                      col_lo=np.r_[cc.lb, np.zeros(2 * K)],
                      col_hi=np.r_[cc.ub, np.full(2 * K, np.inf)],
                      name="aid_lad_constrained")

    def solve(self, time_limit: float | None = None) -> LpOutcome:
        """Solve the LP (verified by the backend's KKT check; an infeasible verdict only with
        a checked Farkas certificate); ``bound`` is the verified dual objective."""
        res = solve_qp(self.qp(), "highs", feasible_bounded=False, time_limit=time_limit)
        self.iterations += int(res.iterations)
        out = LpOutcome(res.termination, res.raw_status)
        if res.termination is TerminationCondition.OPTIMAL and res.x is not None:
            if res.bound is None:  # no verified dual: not a bound, not a certificate
                return LpOutcome(TerminationCondition.NUMERICAL_ERROR,
                                 f"{res.raw_status} without a verified dual bound")
            k = self.SXa.shape[1]
            out.coef = np.asarray(res.x[:k], dtype=float)
            duals = res.extra.get("duals")
            out.v = (np.zeros(self.SXa.shape[0]) if duals is None
                     else np.asarray(duals[: self.SXa.shape[0]], dtype=float))
            out.bound = float(res.bound)
        return out

    def simplex_iterations(self) -> int:
        """Iterations of every solve so far."""
        return self.iterations


def multiplier_columns(cc: CoefConstraints) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                      np.ndarray, np.ndarray]:
    """The dual form's columns of the constraints (module docstring): ``(A, cost, lower, row,
    sign)`` with ``A`` (k, c) their entries ``sign * G_j`` (``sign * e_i`` for a bound), ``cost``
    ``lo_j`` on a lower side (sign +1) and ``-hi_j`` on an upper or equality side (sign -1),
    ``lower`` 0 or -inf (an equality's free column), and ``row`` the constraint row j of each
    column (m + i for the bound on theta_i)."""
    rows = np.vstack([cc.G, np.eye(cc.k)]) if cc.m else np.eye(cc.k)
    lo, hi = np.r_[cc.lo, cc.lb], np.r_[cc.hi, cc.ub]
    eq = lo == hi
    up = np.flatnonzero(np.isfinite(hi))
    down = np.flatnonzero(np.isfinite(lo) & ~eq)
    row = np.r_[up, down]
    sign = np.r_[-np.ones(up.shape[0]), np.ones(down.shape[0])]
    cost = np.r_[-hi[up], lo[down]]
    lower = np.r_[np.where(eq[up], -np.inf, 0.0), np.zeros(down.shape[0])]
    A = (rows[row] * sign[:, None]).T
    return np.ascontiguousarray(A), cost, lower, row, sign


THETA_TOL = 1e-10
"""Largest relative violation of the (scaled) constraints that the dual form's theta, HiGHS's row
duals, may have; beyond it the iteration is solved in primal form. Every iterate's theta may
become E_best's, and the LAD strategy refuses a returned theta that violates the user's
constraints by more than 1e-9."""


class ConstrainedDualLP(AggregatedLadLP):
    """The constrained aggregated LP in dual form, kept in one HiGHS model between iterations
    (module docstring); the answer of each run verified on the primal form
    (:class:`ConstrainedLadLP`), which also solves the iterations where the dual form fails."""

    def __init__(self, SXa: np.ndarray, SY: np.ndarray, box: tuple[float, float],
                 constraints: CoefConstraints) -> None:
        super().__init__(SXa, SY, box=box)
        self.primal = ConstrainedLadLP(SXa, SY, box, constraints)
        A, cost, lower, self.mult_row, self.mult_sign = multiplier_columns(constraints)
        k, c = A.shape
        self.mult_col = np.arange(SXa.shape[0], SXa.shape[0] + c)
        self.highs.addCols(c, cost, lower, np.full(c, np.inf), k * c,
                           np.arange(0, k * c, k, dtype=np.int32),
                           np.tile(np.arange(k, dtype=np.int32), c), A.T.ravel())
        self.n_rows = constraints.m + constraints.k
        self.m = constraints.m
        self.iterations = 0
        self.fallbacks = 0

    def split(self, old_ids: np.ndarray, new_ids: np.ndarray, SXa: np.ndarray, SY: np.ndarray,
              beta: np.ndarray) -> None:
        """The pieces of the split clusters as new columns (the basis kept, see
        :meth:`AggregatedLadLP.split`); the primal form takes the new sums."""
        super().split(old_ids, new_ids, SXa, SY, beta)
        self.primal.rebuild(SXa, SY)

    def solve(self, time_limit: float | None = None) -> LpOutcome:
        """Run HiGHS on the dual form and verify its answer on the primal form; solve the
        primal form cold instead when either fails. ``bound`` is the verified dual objective."""
        h = self.highs
        h.setOptionValue("time_limit", float(time_limit) if time_limit is not None else np.inf)
        h.run()
        info = h.getInfo()
        self.iterations += max(int(info.simplex_iteration_count), 0)
        term, raw = highs_termination(h)
        sol = h.getSolution()
        if term is TerminationCondition.OPTIMAL and sol.value_valid and sol.dual_valid:
            out = self._verified(np.array(sol.col_value), np.array(sol.row_dual), raw)
            if out is not None:
                return out
        if term in (TerminationCondition.TIME_LIMIT, TerminationCondition.INTERRUPTED):
            return LpOutcome(term, raw)
        self.fallbacks += 1
        out = self.primal.solve(time_limit)
        self.iterations += self.primal.iterations
        self.primal.iterations = 0
        return out

    def _verified(self, values: np.ndarray, theta: np.ndarray, raw: str) -> LpOutcome | None:
        """The outcome of (theta, v, mu) when theta satisfies the constraints (within
        :data:`THETA_TOL`) and the primal form's check passes, else None."""
        if self.primal.cons.max_violation(theta) > THETA_TOL:
            return None
        SXa, SY = self.primal.SXa, self.primal.SY
        v = values[self.col]
        y_cons = np.zeros(self.n_rows)
        np.add.at(y_cons, self.mult_row, self.mult_sign * values[self.mult_col])
        e = SY - SXa @ theta
        x = np.r_[theta, np.maximum(e, 0.0), np.maximum(-e, 0.0)]
        # the bounds' multipliers are the reduced costs of theta in the primal form
        y = np.r_[v, y_cons[: self.m]]
        res = verify(self.primal.qp(), BackendOutput(TerminationCondition.OPTIMAL, raw, x=x,
                                                     y=y, solver="highs"))
        if res.termination is not TerminationCondition.OPTIMAL or res.bound is None:
            return None
        return LpOutcome(TerminationCondition.OPTIMAL, raw, coef=theta, v=v,
                         bound=float(res.bound))

    def simplex_iterations(self) -> int:
        """Simplex iterations of every run so far (the primal form's included)."""
        return self.iterations

