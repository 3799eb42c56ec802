"""The aggregated linear-SVM QP of AID with linear constraints and bounds on (w, b) (issue 33).

The user's model (docs/problems/svm.md, "Constraints on (w, b)") is

    P* = min_{(w, b) in Theta} P(w, b),
    P(w, b) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i (w'x_i + b)),
    Theta = {(w, b): lo <= G (w, b) <= hi, lb <= (w, b) <= ub},

and AID's aggregated model on label-pure clusters C_k (weight W_k = sum_{i in C_k} s_i, mean
xbar_k, label y_k) keeps the same Theta:

    F* = min_{(w, b) in Theta} Pbar(w, b),
    Pbar(w, b) = 1/2 ||w||^2 + C sum_k W_k max(0, 1 - y_k (w'xbar_k + b)).

**Lower bound.** The hinge h(t) = max(0, 1 - t) is convex, and on a label-pure cluster the
margin y_k (w'x + b) is affine in x, so by Jensen's inequality
sum_{i in C_k} s_i h(y_k (w'x_i + b)) >= W_k h(y_k (w'xbar_k + b)) for *every* (w, b). Hence
Pbar <= P pointwise, and minimising both over the same Theta gives F* <= P*. The aggregated QP
(:class:`ConstrainedSvmQP`) is solved by :func:`solvers.backend.solve_qp`, whose KKT check must
accept the answer; the bound F^t is then the Lagrangian dual function q of that QP (margin
rows, constraint rows and bounds) at the backend's multipliers made dual feasible
(:meth:`ConstrainedSvmQP.dual_bound`), computed here from the arrays. By weak duality
q <= F* <= P* whatever the solver's accuracy. (The Wolfe value g of the KKT check equals q at an
exact solution but is a bound only to the check's residual tolerance: on 20,000 rows, with
Clarabel's default tolerances, it stood 2.2e-9 of the scale *above* the exact optimum.) The
aggregated dual value sum_k alpha_k - 1/2 ||sum_k alpha_k y_k xbar_k||^2 of unconstrained AID
is *not* used: it bounds the unconstrained optimum only, which lies below P*.

**Certificate.** Let (w_K, b_K) solve the aggregated QP. If every cluster is sign-pure there
(all margins 1 - y_i (w_K'x_i + b_K) of a cluster on one side of 0), the hinge is affine on
each cluster at (w_K, b_K), Jensen holds with equality, and P(w_K, b_K) = Pbar(w_K, b_K) = F*
<= P*. Since (w_K, b_K) lies in Theta (the aggregated QP has the same constraints), it is
feasible for the user's model and attains a value at most P*: it is optimal. Nothing in the
argument uses the form of Theta. In floating point the run is CERTIFIED only when in addition
(E_best - F) / scale <= CERTIFICATE_TOL (:func:`solvers.aid.certificate.pure_verdict`) and the
problem's solution rule holds, hence Clarabel's tolerances of :data:`SUBSOLVER_OPTIONS`.

**Infeasible Theta.** The aggregated QP and the user's model share Theta, and the margin rows
are always satisfiable (xi free upward); so the aggregated QP is infeasible exactly when Theta
is empty. Before the first clustering AID solves the feasibility LP of Theta alone
(:meth:`solvers.constraints.CoefConstraints.proven_empty`); INFEASIBLE counts only with a
Farkas certificate that passes :func:`solvers.qp.farkas_ok`, and AID then stops at once (no
iteration). An aggregated QP found infeasible later, with its own checked certificate, stops
it the same way.

Units: AID solves on the equilibrated columns X' = X diag(c) (w = c w', b unchanged) with the
objective times sigma (:mod:`solvers.aid.scaling`; here sigma also scales a large C down); the
constraints are substituted exactly (powers of two,
:meth:`solvers.constraints.CoefConstraints.substituted`) and the bound is divided by sigma.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.aid.svm_qp import QpOutcome
from solvers.backend import solve_qp
from solvers.constraints import CoefConstraints
from solvers.qp import QPData
from solvers.result import TerminationCondition

SUBSOLVER_OPTIONS = {"clarabel": dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-10,
                                      tol_ktratio=1e-10)}
"""Clarabel's tolerances for the aggregated QP: the gap E - F at sign purity is the QP's own
primal-dual gap, and the SVM's solution rule (||w - w*|| <= sqrt(2 G) within 1e-3 of ||w||)
needs it near 1e-12 of the objective, below Clarabel's default 1e-8."""

ROUNDOFF = 1e-12
"""|r_b| within this fraction of the magnitudes it sums counts as 0 (where b is unbounded)."""


def scaled_svm_constraints(cc: CoefConstraints, col: np.ndarray) -> CoefConstraints:
    """The constraints on theta' = (w', b) where w = col * w' (AID's scaled columns)."""
    return cc.substituted(np.r_[np.asarray(col, dtype=float), 1.0])


class ConstrainedSvmQP:
    """The aggregated primal with the constraints (module docstring), in AID's units:

        min  1/2 sum_j h_j w_j^2 + sum_k box_k xi_k
        s.t. y_k (xbar_k'w + b) + xi_k >= 1,   lo <= G (w, b) <= hi,
             lb <= (w, b) <= ub,   xi >= 0,

    with ``h`` the diagonal Hessian (sigma c_j^2) and ``box_k = sigma C W_k``."""

    def __init__(self, hess: np.ndarray, constraints: CoefConstraints,
                 subsolver: str = "clarabel") -> None:
        self.hess = np.asarray(hess, dtype=float)
        self.cons = constraints
        self.subsolver = subsolver

    def qp(self, Xbar: np.ndarray, yk: np.ndarray, box: np.ndarray) -> QPData:
        """The QP as :class:`solvers.qp.QPData` (variables w, b, xi; rows margin, then the
        constraint rows)."""
        K, p = Xbar.shape
        cc = self.cons
        A = sp.hstack([sp.csr_matrix(np.column_stack([yk[:, None] * Xbar, yk])),
                       sp.identity(K, format="csr")], format="csr")
        row_lo, row_hi = np.ones(K), np.full(K, np.inf)
        row_blocks = [("margin", K)]
        if cc.m:
            A = sp.vstack([A, sp.hstack([sp.csr_matrix(cc.G), sp.csr_matrix((cc.m, K))])],
                          format="csr")
            row_lo, row_hi = np.r_[row_lo, cc.lo], np.r_[row_hi, cc.hi]
            row_blocks.append(("coef_constraint", cc.m))
        return QPData(
            c=np.r_[np.zeros(p + 1), box], A=A, row_lo=row_lo, row_hi=row_hi,
            col_lo=np.r_[cc.lb, np.zeros(K)], col_hi=np.r_[cc.ub, np.full(K, np.inf)],
            P=sp.diags(np.r_[self.hess, np.zeros(1 + K)], format="csr"),
            col_blocks=[("w", p), ("b", 1), ("xi", K)], row_blocks=row_blocks,
            name="aid_svm_constrained",
        )

    def solve(self, Xbar: np.ndarray, yk: np.ndarray, box: np.ndarray,
              time_limit: float | None = None, tight: bool = True) -> QpOutcome:
        """Solve and verify (KKT check; INFEASIBLE only with a checked Farkas certificate).
        ``bound`` of the outcome is the Lagrangian bound of :meth:`dual_bound`, in these
        units; an OPTIMAL answer without a finite one becomes NUMERICAL_ERROR (no bound, no
        certificate). ``tight=False`` keeps the backend's default tolerances (the subsample
        fit that only scores rows for the first clustering)."""
        options = SUBSOLVER_OPTIONS.get(self.subsolver) if tight else None
        res = solve_qp(self.qp(Xbar, yk, box), self.subsolver, feasible_bounded=False,
                       time_limit=time_limit, options=options)
        out = QpOutcome(res.termination, res.raw_status)
        if res.termination is TerminationCondition.INFEASIBLE and "certificate" not in res.extra:
            return QpOutcome(TerminationCondition.NUMERICAL_ERROR,
                             f"{res.raw_status}: an infeasible verdict without a checked "
                             "Farkas certificate")
        if res.termination is not TerminationCondition.OPTIMAL or res.x is None:
            return out
        if res.bound is None or not np.isfinite(res.bound):
            return QpOutcome(TerminationCondition.NUMERICAL_ERROR,
                             f"{res.raw_status} without a verified dual bound")
        K, p = Xbar.shape
        # an interior point ends a hair outside a bound (-9e-15 for w >= 0): clipped, so the
        # returned (w, b) satisfies the bounds exactly (E is evaluated at this point)
        theta = np.clip(np.asarray(res.x[:p + 1], dtype=float), self.cons.lb, self.cons.ub)
        out.w, out.b = theta[:p], float(theta[p])
        out.alpha, out.bound = self.dual_bound(Xbar, yk, box, np.asarray(res.extra["duals"]))
        if not np.isfinite(out.bound):
            return QpOutcome(TerminationCondition.NUMERICAL_ERROR,
                             f"{res.raw_status}, but its multipliers give no finite bound")
        return out

    def dual_bound(self, Xbar: np.ndarray, yk: np.ndarray, box: np.ndarray,
                   y: np.ndarray) -> tuple[np.ndarray, float]:
        """``(alpha, q)`` of :func:`lagrangian_bound` for this QP and the row multipliers y."""
        return lagrangian_bound(Xbar, yk, box, self.hess, self.cons, y)


def lagrangian_bound(X: Any, yk: np.ndarray, box: np.ndarray, hess: np.ndarray,
                     cons: CoefConstraints, y: np.ndarray, squared: bool = False
                     ) -> tuple[np.ndarray, float]:
    """``(alpha, q)``: the margin multipliers made feasible and the Lagrangian dual function q,
    at them, of the constrained linear-SVM QP on the rows of X (labels yk, boxes box, Hessian
    diag(hess) on w)

        min 1/2 sum_j h_j w_j^2 + sum_k box_k xi_k   (squared: box_k xi_k^2, xi free)
        s.t. y_k (x_k'w + b) + xi_k >= 1,   lo <= G (w, b) <= hi,   lb <= (w, b) <= ub,

    a lower bound on its optimum by weak duality whatever the solver's accuracy. ``y`` holds
    the row multipliers (the margin rows first) in :mod:`solvers.qp`'s convention.

    With alpha >= 0 on the margin rows and mu_i > 0 pressing on lo_i, < 0 on hi_i,
    L = f(x) - alpha'(A_m x - 1) - mu+'(G theta - lo) + mu-'(G theta - hi), and q = min of L
    over the bounds, in closed form: sum_k alpha_k + mu+'lo - mu-'hi
    + sum_j min_{lb_j <= w_j <= ub_j} (1/2 h_j w_j^2 - r_j w_j) + min_{lb_b <= b <= ub_b} (-r_b b)
    + (hinge: 0, as xi_k >= 0 is bounded below exactly when alpha_k <= box_k;
       squared: - sum_k alpha_k^2 / (4 box_k), alpha_k = 0 where box_k = 0),
    with r = sum_k alpha_k y_k (x_k, 1) + G'mu. So alpha is clipped into its box, mu loses the
    parts that press on an infinite side, and where b is unbounded on the side r_b pushes to,
    the larger class side of alpha is shrunk until r_b = 0 (to round-off, as y'alpha = 0 of
    unconstrained AID; a remainder above it gives q = -inf)."""
    K, p = X.shape
    cc = cons
    upper = np.where(box > 0, np.inf, 0.0) if squared else box
    alpha = np.clip(np.nan_to_num(y[:K]), 0.0, upper)
    mu = np.nan_to_num(y[K:]) if cc.m else np.zeros(0)
    mu = np.where((mu > 0) & np.isfinite(cc.lo) | (mu < 0) & np.isfinite(cc.hi), mu, 0.0)
    Gmu = cc.G.T @ mu if cc.m else np.zeros(p + 1)
    alpha = _balance_b(alpha, yk, float(Gmu[p]), cc.lb[p], cc.ub[p])
    r_w = np.asarray(X.T @ (alpha * yk)).ravel() + Gmu[:p]
    r_b = float(alpha @ yk) + float(Gmu[p])
    w = np.clip(r_w / hess, cc.lb[:p], cc.ub[:p])
    q = float(alpha.sum())
    if cc.m:
        q += float(np.where(mu > 0, mu * np.nan_to_num(cc.lo), 0.0).sum()
                   + np.where(mu < 0, mu * np.nan_to_num(cc.hi), 0.0).sum())
    q += float(np.sum(0.5 * hess * w * w - r_w * w))
    if squared:
        on = box > 0
        q -= float(np.sum(alpha[on] ** 2 / (4.0 * box[on])))
    side = cc.ub[p] if r_b > 0 else cc.lb[p]
    if np.isfinite(side):
        q -= r_b * side
    elif abs(r_b) > ROUNDOFF * (float(alpha.sum()) + abs(float(Gmu[p]))):
        q = -np.inf  # b unbounded where r_b pushes it: no bound at these multipliers
    return alpha, q


def _balance_b(alpha: np.ndarray, yk: np.ndarray, rest: float, lb: float,
               ub: float) -> np.ndarray:
    """alpha with r_b = y'alpha + rest brought to 0 by shrinking one class side
    proportionally, where b is unbounded in the direction r_b pushes it (r_b > 0 needs a
    finite ub, r_b < 0 a finite lb); unchanged otherwise. A side too small leaves it as is
    (``lagrangian_bound`` then finds r_b above round-off and returns no bound)."""
    excess = float(yk @ alpha) + rest
    if excess == 0.0 or (excess > 0 and np.isfinite(ub)) or (excess < 0 and np.isfinite(lb)):
        return alpha
    side = yk > 0 if excess > 0 else yk < 0
    total = float(alpha[side].sum())
    a = alpha.copy()
    if total > 0.0:
        a[side] *= max(0.0, 1.0 - abs(excess) / total)
    return a
