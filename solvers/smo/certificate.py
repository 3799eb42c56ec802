r"""Duality-gap certificates for the SVM and (S-)KLR duals, computed from SMO's gradient.

Both duals are minimised, ``min f(alpha)`` over ``y'alpha = 0, l <= alpha <= u``; a primal
value P(w, b) at *any* w, b gives the lower bound ``-P(w, b) <= min f`` (weak duality), and with
w = w(alpha) = sum_i alpha_i y_i phi(x_i) the gap ``f(alpha) + P(w(alpha), b)`` needs only
``Q alpha`` (which SMO keeps up to date) and O(n) work. ``t_i = y_i f(x_i) = (Q alpha)_i + y_i b``.

* SVM (f = 1/2 a'Qa - 1'a, the negated dual D):
  ``P(w(a), b) = 1/2 a'Qa + sum_i C_i max(0, 1 - t_i)``, so with grad = Qa - 1
  ``gap(b) = a'grad + sum_i C_i max(0, -grad_i - y_i b)``.
  The best b minimises the hinge sum: a weighted median of the breakpoints m_i = -y_i grad_i.
* (S-)KLR (f = 1/2 a'Qa + sum_i h_i(a_i) - lam 1'a, h_i(a) = C_i G(a / C_i)):
  ``P(w, b) = 1/2 ||w||^2 + sum_i loss_i(t_i)`` with the conjugate loss
  ``loss_i(t) = max_{l_i <= a <= u_i} [a (lam - t) - h_i(a)]``. For the open box [0, C_i] it is
  the shifted logistic loss ``C_i log(1 + exp(lam - t))``; with S-KLR's bounds [gamma_i,
  C_i - gamma_i] the maximiser is ``a* = clip(C_i sigma(lam - t), l_i, u_i)`` and the loss is
  logistic in the middle with linear tails of slopes -u_i and -l_i. Fenchel-Young gives
  ``P(w, b) + f(alpha) >= 1/2 ||w - w(alpha)||^2 >= 0`` for every feasible alpha, with equality
  at the optimum (where alpha_i = a*_i(t_i)). The best b solves ``sum_i y_i a*_i(t_i(b)) = 0``
  (decreasing in b; bisection).

Natural scales (gaps are relative to them; both equal P(0, 0), an upper bound on the primal
optimum that scales with C and the weights): SVM ``sum_i C_i``; KLR ``sum_i loss_i(0)``
(``log(1 + e^lam) sum_i C_i`` for the open box).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from solvers.result import (
    CERTIFICATE_TOL,
    SOLUTION_TOL,
    gap_within,
    objective_scale,
    roundoff_tol,
    solution_relative,
    strong_convexity_distance,
    verdict,
)
from solvers.special import expit, xlogy

REFINE_ROUNDS = 6
"""How many times SMO / block may continue, warm-started with ``tol / REFINE_FACTOR``, after
meeting ``tol`` while the relative duality gap is still above CERTIFICATE_TOL (6: from the
default 1e-3 down to 1e-9; a separable RBF SVM at C = 1e4 needed 1e-8, since its gap is
measured against the optimum, not against sum C_i, see :func:`solvers.result.objective_scale`)."""

REFINE_FACTOR = 10.0
"""Each refinement round divides the violation tolerance by this factor."""

TOL_FLOOR = 1e-12
"""Refinement never asks for a violation below this (round-off in m_t)."""

REFINE_SAFETY = 0.5
"""A predicted refinement tolerance (``refine_loop(predict=True)``) aims at this share of the gap
allowance: the SVM's gap / violation ratio varied by up to 1.7x over the rounds on the runs
measured (banana, breast cancer, clouds; C from 1 to 1e4)."""

REFINE_REACH = REFINE_FACTOR ** REFINE_ROUNDS
"""A predicted round divides the tolerance by at most this (1e6): no further than the fixed
schedule could reach in all its rounds."""


# ---------------------------------------------------------------------------- SVM
def svm_best_intercept(grad: np.ndarray, y: np.ndarray, upper: np.ndarray) -> float:
    """argmin_b sum_i C_i max(0, -grad_i - y_i b): the b minimising the hinge sum at fixed alpha.

    With m_i = -y_i grad_i the hinge of row i is ``C_i max(0, y_i (m_i - b))``: its slope in b
    is -C_i for y_i = +1 and b < m_i, +C_i for y_i = -1 and b > m_i. The sum's slope first turns
    >= 0 at a breakpoint m_k (a weighted median); on a flat piece the midpoint is returned.
    """
    m = -y * grad
    order = np.argsort(m, kind="stable")
    ms = m[order]
    pos = np.where(y[order] > 0, upper[order], 0.0)
    neg = np.where(y[order] < 0, upper[order], 0.0)
    slope = -(pos.sum() - np.cumsum(pos)) + np.cumsum(neg)  # slope just right of ms[k]
    k = int(np.argmax(slope >= 0.0)) if np.any(slope >= 0.0) else ms.size - 1
    if slope[k] == 0.0 and k + 1 < ms.size:
        return float(0.5 * (ms[k] + ms[k + 1]))
    return float(ms[k])


def svm_gap(
    alpha: np.ndarray, grad: np.ndarray, y: np.ndarray, upper: np.ndarray, b: float
) -> float:
    """P(w(alpha), b) - D(alpha) = alpha'grad + sum_i C_i max(0, -grad_i - y_i b)."""
    return float(alpha @ grad + upper @ np.maximum(0.0, -grad - y * b))


# ---------------------------------------------------------------------------- KLR
def _entropy(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """h(a) = a log(a / C) + (C - a) log((C - a) / C) (0 log 0 = 0)."""
    return xlogy(a, a / c) + xlogy(c - a, (c - a) / c)


def klr_best_response(
    t: np.ndarray, lam: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """a*_i(t) = clip(C_i sigma(lam - t_i), l_i, u_i), the maximiser in loss_i(t)."""
    return np.clip(C * expit(lam - t), lower, upper)


def klr_loss(
    t: np.ndarray, lam: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """loss_i(t) = max_{l_i <= a <= u_i} a (lam - t_i) - h_i(a) (see the module docstring).

    Inside the box this is C_i log(1 + exp(lam - t_i)) (computed by logaddexp); where the box
    clips the maximiser, the value at the clipped a.
    """
    z = lam - t
    free = C * expit(z)
    a = np.clip(free, lower, upper)
    clipped = a != free
    out = C * np.logaddexp(0.0, z)
    if clipped.any():
        ac, cc = a[clipped], C[clipped]
        out[clipped] = ac * z[clipped] - _entropy(ac, cc)
    return out


def klr_objective(
    alpha: np.ndarray, qa: np.ndarray, lam: float, C: np.ndarray
) -> float:
    """f(alpha) = 1/2 alpha'Q alpha + sum_i h_i(alpha_i) - lam sum_i alpha_i."""
    return float(0.5 * alpha @ qa + _entropy(alpha, C).sum() - lam * alpha.sum())


def klr_primal(
    alpha: np.ndarray, qa: np.ndarray, y: np.ndarray, lam: float, C: np.ndarray,
    lower: np.ndarray, upper: np.ndarray, b: float,
) -> float:
    """P(w(alpha), b) = 1/2 alpha'Q alpha + sum_i loss_i((Q alpha)_i + y_i b)."""
    return float(0.5 * alpha @ qa + klr_loss(qa + y * b, lam, C, lower, upper).sum())


def klr_best_intercept(
    qa: np.ndarray, y: np.ndarray, lam: float, C: np.ndarray, lower: np.ndarray,
    upper: np.ndarray, b0: float = 0.0,
) -> float:
    """argmin_b P(w(alpha), b): the root of g(b) = sum_i y_i a*_i((Q alpha)_i + y_i b).

    g decreases in b (each a*_i decreases in t_i); the root is bracketed by doubling steps
    from ``b0`` and found by 200 bisection steps at most (to the resolution of a double).
    """

    def g(b: float) -> float:
        return float(y @ klr_best_response(qa + y * b, lam, C, lower, upper))

    lo, hi, step = b0, b0, 1.0
    while g(lo) < 0.0 and step < 1e300:
        lo, step = lo - step, 2.0 * step
    step = 1.0
    while g(hi) > 0.0 and step < 1e300:
        hi, step = hi + step, 2.0 * step
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if g(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def klr_scale(lam: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """The natural scale P(0, 0) = sum_i loss_i(0)."""
    return float(klr_loss(np.zeros_like(C), lam, C, lower, upper).sum())


# ---------------------------------------------------------------------------- stopping record
@dataclasses.dataclass
class Certificate:
    """The gap at SMO's final iterate: ``gap = (objective - bound) / scale``; with
    ``w_norm2 = alpha'Q alpha = ||w(alpha)||^2`` and ``q_max = max_i Q_ii = max_i k(x_i, x_i)``,
    also the solution's: both duals are 1-strongly convex in w(alpha), so
    ``||w(alpha) - w*|| <= d = sqrt(2 (objective - bound))`` and every training row's
    ``w'phi(x_i)`` is within ``d sqrt(q_max)`` of the optimum's. The solution rule (the problem
    layer's, :func:`solvers.result.solution_relative`) holds when d is within
    :data:`solvers.result.SOLUTION_TOL` of ``||w(alpha)||`` or ``d sqrt(q_max)`` within it of
    the loss's unit (the margin 1 of the hinge, one logit of the logistic loss)."""

    objective: float
    bound: float
    scale: float
    b: float
    w_norm2: float | None = None
    q_max: float | None = None

    @classmethod
    def of(cls, objective: float, bound: float, natural: float, b: float,
           w_norm2: float | None = None, q_max: float | None = None) -> Certificate:
        """The certificate at the gap scale :func:`solvers.result.objective_scale` of the
        natural scale (sum C_i, or KLR's P(0, 0)) and the objective and bound, which is the
        problem layer's: SMO refines until the gap the user will be shown holds."""
        return cls(objective, bound, objective_scale(natural, objective, bound), b, w_norm2,
                   q_max)

    @property
    def gap(self) -> float:
        return (self.objective - self.bound) / self.scale

    @property
    def distance(self) -> float:
        """The proven ``||w(alpha) - w*||``, sqrt(2 (objective - bound))."""
        return strong_convexity_distance(self.objective - self.bound, 1.0)

    @property
    def solution_holds(self) -> bool:
        """The solution rule (True without ``w_norm2``)."""
        if self.w_norm2 is None:
            return True
        decisions = None if self.q_max is None else self.distance * np.sqrt(self.q_max)
        relative = solution_relative(self.distance, float(np.sqrt(max(self.w_norm2, 0.0))),
                                     decisions, 1.0)
        return relative <= SOLUTION_TOL

    @property
    def holds(self) -> bool:
        """The one certificate rule (:func:`solvers.result.gap_within`): at most
        CERTIFICATE_TOL and not negative beyond round-off (a "bound" above the objective),
        and the solution rule (:attr:`solution_holds`)."""
        return gap_within(self.gap, CERTIFICATE_TOL, self.roundoff) and self.solution_holds

    @property
    def roundoff(self) -> float:
        """The gap's round-off allowance (:func:`solvers.result.roundoff_tol`)."""
        return roundoff_tol(self.objective, self.bound, self.scale)

    @property
    def solution_allowance(self) -> float:
        """The absolute gap ``objective - bound`` at or below which the solution rule holds:
        ``SOLUTION_TOL^2 max(||w||^2, 1 / q_max) / 2`` (then ``d = sqrt(2 gap)`` is within
        SOLUTION_TOL of ``||w||`` or ``d sqrt(q_max)`` within it of 1); inf without
        ``w_norm2``, 0 when there is nothing to measure against."""
        if self.w_norm2 is None:
            return float("inf")
        reach = max(self.w_norm2, 0.0)
        if self.q_max is not None and self.q_max > 0.0:
            reach = max(reach, 1.0 / self.q_max)
        return 0.5 * SOLUTION_TOL ** 2 * reach

    def gap_rel_target(self, default: float) -> float:
        """The relative gap an in-loop gap stop should aim at so that both rules hold: the
        solution rule needs ``objective - bound <= SOLUTION_TOL^2 max(||w||^2, 1 / q_max) / 2``
        (:attr:`solution_allowance`), i.e. a relative gap of that over ``scale`` (with a 0.9
        margin, as the loop's own GAP_STOP_SHARE), when it is smaller than ``default``."""
        allowance = self.solution_allowance
        if allowance <= 0.0 or not np.isfinite(allowance):
            return default
        need = 0.9 * allowance / self.scale
        return max(min(default, need), 1e-15)

    def next_tol(self, tol: float, violation: float) -> float:
        """The violation tolerance a refinement round predicted to make the certificate hold
        should ask for, after a round that met ``tol`` with ``violation`` and left the absolute
        gap G = objective - bound above its allowance A = min(CERTIFICATE_TOL scale,
        :attr:`solution_allowance`).

        The SVM's gap is a sum of KKT violations weighted by C_i or alpha_i, so near the optimum
        it falls in proportion to the maximal violation (G / violation stayed within 1.7x over
        the rounds of every run measured, over six decades): the round asks for
        ``REFINE_SAFETY * violation * A / G``, at least a factor REFINE_FACTOR below ``tol`` (as
        the fixed schedule) and at most REFINE_REACH below it, not below TOL_FLOOR. One round
        then usually suffices where the fixed schedule ran three (its last one overshooting by
        up to a decade); a round that still misses is followed by another prediction."""
        fixed = tol / REFINE_FACTOR
        gap = self.objective - self.bound
        allowance = min(CERTIFICATE_TOL * self.scale, self.solution_allowance)
        if not (gap > 0.0 and violation > 0.0 and 0.0 < allowance < gap):
            return max(fixed, TOL_FLOOR)
        guess = REFINE_SAFETY * violation * allowance / gap
        return max(min(fixed, max(guess, tol / REFINE_REACH)), TOL_FLOOR)


def refine_loop(solve, certificate, state, tol: float, max_iter: int, refine: bool,
                predict: bool = False):
    """Continue a converged run until its certificate holds (the "refine" rule of SMO / block).

    ``state`` is the result of the first run at ``tol``; ``solve(state, tol, budget)`` continues
    from it (warm start) with a violation tolerance ``tol`` and at most ``budget`` more
    iterations; ``certificate(state)`` gives its :class:`Certificate`. While the run converged,
    the gap is above CERTIFICATE_TOL, fewer than REFINE_ROUNDS rounds were made and iterations
    remain, ``tol`` is divided by REFINE_FACTOR (not below TOL_FLOOR) and the run continues;
    not when float64 cannot resolve the gap at CERTIFICATE_TOL (``cert.roundoff``), which no
    tighter tolerance changes. With ``predict`` (the SVM, whose gap falls in proportion to the
    violation) the next tolerance is :meth:`Certificate.next_tol` instead: at least as tight as
    ``tol / REFINE_FACTOR``, aimed at the first violation where the certificate should hold.
    Returns (state, certificate, final tol, rounds, iterations of every round).
    """
    cert, rounds, used = certificate(state), 0, state.iterations
    while (refine and state.converged and not cert.holds and rounds < REFINE_ROUNDS
           and tol > TOL_FLOOR and used < max_iter and cert.roundoff < CERTIFICATE_TOL):
        tol = (cert.next_tol(tol, state.violation) if predict
               else max(tol / REFINE_FACTOR, TOL_FLOOR))
        state = solve(state, tol, max_iter - used)
        cert, rounds, used = certificate(state), rounds + 1, used + state.iterations
    return state, cert, tol, rounds, used


def certified_status(termination, status, cert: Certificate):
    """The loop's (termination, status) after :func:`solvers.result.verdict`, the rule of
    ``certify``, on the certificate: a bound above the objective beyond round-off is a
    NUMERICAL_ERROR, a run that met its stopping rule (OPTIMAL from the loop) stays OPTIMAL only
    when the certificate holds, else it is CONVERGED. Returns (termination, status, note for
    ``raw_status``)."""
    return verdict(termination, status, cert.gap, cert.roundoff)


def stopping_rule(violation: float, tol: float, tol_requested: float | None, rounds: int,
                  cert: Certificate, stopped_by: str = "tol") -> dict:
    """What ``extra['stopping_rule']`` records: the violation met, the tolerance it was held to
    (after ``rounds`` refinements of ``tol_requested``; None: KLR's stop on the certificate),
    the relative gap reached and what stopped the last run (``"tol"``: the violation;
    ``"gap"``: KLR's in-loop gap check)."""
    return {"max_violation": float(violation), "tol": float(tol),
            "tol_requested": None if tol_requested is None else float(tol_requested),
            "refinements": int(rounds),
            "gap": float(cert.gap), "certificate_tol": CERTIFICATE_TOL,
            "stopped_by": stopped_by}
