"""Linear constraints and bounds on a linear model's coefficients (issue 33).

    lo <= G theta <= hi,    lb <= theta <= ub,    theta = (beta, beta0)

theta is the coefficient vector with the intercept last where the model fits one. The public
types are scipy's (:class:`scipy.optimize.LinearConstraint`, :class:`scipy.optimize.Bounds`):
:func:`solvers.validation.check_coef_constraints` turns them into one :class:`CoefConstraints`
(a constraint written on beta alone gets a zero column for the intercept). Equalities are rows
with lo = hi; -inf / +inf leave a side free.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

INSIDE = 16.0
"""How far inside a violated row's side :meth:`CoefConstraints.feasible_point` aims, in units
of the round-off of the row's product (machine epsilon times ``|G_k| |theta| + |side|``), so
that the product computed again lands on the feasible side."""


@dataclasses.dataclass(frozen=True)
class CoefConstraints:
    """``lo <= G theta <= hi`` (m rows) and ``lb <= theta <= ub`` on the k coefficients."""

    G: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    lb: np.ndarray
    ub: np.ndarray

    @property
    def m(self) -> int:
        """The number of constraint rows."""
        return int(self.G.shape[0])

    @property
    def k(self) -> int:
        """The number of coefficients (beta, then the intercept where there is one)."""
        return int(self.lb.shape[0])

    def max_violation(self, theta: np.ndarray) -> float:
        """The largest violation of a row or a bound at ``theta``, relative to
        ``1 + |side|`` (0 when theta is feasible)."""
        theta = np.asarray(theta, dtype=float)
        worst = 0.0
        if self.m:
            g = self.G @ theta
            worst = max(worst, float(np.max(np.maximum(self.lo - g, 0.0)
                                            / (1.0 + np.abs(np.nan_to_num(self.lo))))),
                        float(np.max(np.maximum(g - self.hi, 0.0)
                                     / (1.0 + np.abs(np.nan_to_num(self.hi))))))
        worst = max(worst, float(np.max(np.maximum(self.lb - theta, 0.0)
                                        / (1.0 + np.abs(np.nan_to_num(self.lb))),
                                        initial=0.0)),
                    float(np.max(np.maximum(theta - self.ub, 0.0)
                                 / (1.0 + np.abs(np.nan_to_num(self.ub))), initial=0.0)))
        return worst

    def feasible_point(self, theta: np.ndarray, rounds: int = 8) -> np.ndarray:
        """``theta`` moved onto the constraints, for a point a solver returned within its
        feasibility tolerance (an interior point leaves a row ~1e-9 past its side, and there
        the objective can lie below the constrained optimum): clipped into the bounds, then,
        while a row is violated, moved by the least-norm step over the coordinates strictly
        inside their bounds that puts every violated row :data:`INSIDE` units of round-off
        inside its side (onto it for an equality), and clipped again; at most ``rounds``
        times. A feasible theta comes back unchanged; :meth:`max_violation` says whether the
        result is feasible (an equality row holds to round-off only)."""
        theta = np.clip(np.asarray(theta, dtype=float), self.lb, self.ub)
        for _ in range(rounds if self.m else 0):
            g = self.G @ theta
            below, above = g < self.lo, g > self.hi
            bad = below | above
            if not bad.any():
                break
            side = np.where(below, self.lo, self.hi)[bad]
            room = INSIDE * np.finfo(float).eps * (np.abs(self.G[bad]) @ np.abs(theta)
                                                   + np.abs(side))
            mid = 0.5 * (self.lo[bad] + self.hi[bad])  # lo == hi for an equality
            target = np.where(below[bad], np.minimum(side + room, mid),
                              np.maximum(side - room, mid))
            free = (theta > self.lb) & (theta < self.ub)
            if not free.any():
                break
            step = np.linalg.lstsq(self.G[bad][:, free], target - g[bad], rcond=None)[0]
            theta[free] += step
            theta = np.clip(theta, self.lb, self.ub)
        return theta

    def substituted(self, d: np.ndarray) -> CoefConstraints:
        """The same constraints on theta' where theta = d * theta' (entrywise, d > 0: a
        problem solved in rescaled units): ``lo <= (G diag(d)) theta' <= hi`` and
        ``lb / d <= theta' <= ub / d``, each row then normalised (:meth:`rows_normalized`);
        exact when d holds powers of two."""
        d = np.asarray(d, dtype=float)
        return CoefConstraints(self.G * d, self.lo, self.hi, self.lb / d,
                               self.ub / d).rows_normalized()

    def to_scipy(self) -> tuple[Any, Any]:
        """``(LinearConstraint or None, Bounds)``: the public types the problems take."""
        from scipy.optimize import Bounds, LinearConstraint

        rows = LinearConstraint(self.G, self.lo, self.hi) if self.m else None
        return rows, Bounds(self.lb, self.ub)

    def rows_normalized(self) -> CoefConstraints:
        """The same constraints with each row of G and its sides divided by the power of two
        nearest the row's largest |entry| (exact): a row of entries 1e9 and sides 1e9 (a
        covariance bound written on data scaled by 1e-10) becomes one of entries near 1."""
        if not self.m:
            return self
        peak = np.max(np.abs(self.G), axis=1)
        r = np.where(peak > 0, 2.0 ** np.round(np.log2(np.where(peak > 0, peak, 1.0))), 1.0)
        return CoefConstraints(self.G / r[:, None], self.lo / r, self.hi / r, self.lb, self.ub)

    def proven_empty(self) -> str | None:
        """Why the feasible set is empty, when a backend proves it with a Farkas certificate
        that passes the toolkit's check (:func:`solvers.qp.farkas_ok`), else None (it is
        nonempty, or nothing was proven).

        The feasibility LP ``min 0 s.t. lo <= G theta <= hi, lb <= theta <= ub`` is solved by
        HiGHS, then Clarabel. It holds the constraints alone: a certificate for a training
        model must also price its per-row rows and slacks at zero, where Clarabel leaves
        multipliers of 1e-8 that the check rightly rejects (AID-SVM's aggregated QP)."""
        if not self.m:
            return None  # bounds alone: lb <= ub was checked when the problem was built
        import scipy.sparse as sp

        from solvers.backend import solve_qp
        from solvers.qp import QPData
        from solvers.result import TerminationCondition

        qp = QPData(c=np.zeros(self.k), A=sp.csr_matrix(self.G), row_lo=self.lo,
                    row_hi=self.hi, col_lo=self.lb, col_hi=self.ub, name="coef_constraints")
        for backend in ("highs", "clarabel"):
            res = solve_qp(qp, backend, feasible_bounded=False)
            if res.termination is TerminationCondition.OPTIMAL:
                return None
            if res.termination is TerminationCondition.INFEASIBLE and "certificate" in res.extra:
                return f"{backend}: {res.raw_status}"
        return None

    def describe(self) -> str:
        """``2 rows (1 equality), bounds on 3 coefficients`` (for messages and summaries)."""
        eq = int(np.count_nonzero(self.lo == self.hi))
        bounded = int(np.count_nonzero(np.isfinite(self.lb) | np.isfinite(self.ub)))
        return (f"{self.m} constraint row{'s' if self.m != 1 else ''} ({eq} equalit"
                f"{'ies' if eq != 1 else 'y'}), bounds on {bounded} coefficient"
                f"{'s' if bounded != 1 else ''}")
