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

The aggregated LP is solved in its primal form by HiGHS through :func:`solvers.backend.solve_qp`
(the constraints are declared on theta there), cold at each iteration, and its verified dual
objective is the lower bound F of the iteration (any dual feasible point bounds the
aggregated optimum, which bounds E*). An infeasible Theta is reported by the aggregated LP with
a Farkas certificate that the backend checked; the aggregated and original models share Theta,
so AID stops at once with INFEASIBLE.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.aid.lad_lp import LpOutcome
from solvers.backend import solve_qp
from solvers.constraints import CoefConstraints
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
