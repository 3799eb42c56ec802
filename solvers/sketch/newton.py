"""Truncated Newton-CG for linear classifiers, with CG preconditioned by an FD / RFD sketch.

Problems (primal, explicit features; ``a_i`` is row i of ``A``, ``z_i = y_i a_i'w``)::

    f(w) = 1/2 ||w||^2 + sum_i C_i loss(z_i),     C_i = C s_i cw_{y_i}
    loss="squared_hinge":  loss(z) = max(0, 1 - z)^2        (L2-loss SVM, LIBLINEAR -s 2)
    loss="logistic":       loss(z) = log(1 + exp(-z))       (L2 logistic regression, -s 0)

Intercept: with ``fit_intercept`` the data get an extra column of value ``B =
intercept_scaling`` and the intercept is ``b = B w_{d+1}``; that coordinate is regularised like
the others (LIBLINEAR's convention, and scikit-learn's LinearSVC), so the penalty on b is
``b^2 / (2 B^2)``: a larger B regularises b more lightly.

Unregularised intercept (``penalize_intercept=False``): f(w, b) = 1/2 ||w||^2 +
sum_i C_i loss(y_i (x_i'w + b)) with no penalty on b (the toolkit's SVM and KLR). Newton then
steps on (w, b) jointly with the Hessian ``diag(1, .., 1, 0) + A' D A`` and, after every step
(and at the start), b is minimised exactly over ``phi(b) = sum_i C_i loss(y_i (g_i + b))``
(g = X w):

- squared hinge: phi is convex piecewise quadratic with derivative ``2 sum_{active} C_i (b -
  beta_i)``, ``beta_i = y_i - g_i``, active = {y_i = +1, beta_i > b} u {y_i = -1, beta_i < b},
  so its minimiser is the C-weighted mean of beta over its own active set (found on the sorted
  breakpoints; :func:`intercept_shift`);
- logistic: phi is smooth and strictly convex, ``phi'(b) = -sum_i C_i y_i sigma(-t_i)``,
  ``phi''(b) = sum_i C_i sigma(t_i) sigma(-t_i)`` (t_i = y_i (g_i + b)); its root is found by
  Newton's method kept inside a bracket that every evaluation shrinks (bisection when a Newton
  step leaves it; :func:`logistic_intercept_shift`).

The certificate below then holds for the profile ``F(w) = min_b f(w, b)``, which is 1-strongly
convex in w (a partial minimum of a jointly convex function plus 1/2 ||w||^2) with gradient
``grad_w f(w, b*(w))``; and F's optimum is f's. Both classes need positive weight (else b runs
off to infinity).

Derivatives (``D`` is diagonal, so every Hessian has the form ``I + A' D A``)::

    grad f(w) = w + A' (y * C * loss'(z))
    H(w)      = I + A' diag(D) A,    D_i = C_i loss''(z_i)
    squared hinge: loss'(z) = -2 max(0, 1 - z),  D_i = 2 C_i [z_i < 1]  (generalised Hessian
                   over the active set I = {i : z_i < 1}: I + 2 A_I' C_I A_I)
    logistic:      loss'(z) = -sigma(-z),        D_i = C_i sigma(z_i) sigma(-z_i)

Newton step: ``p`` solves ``H p = -grad f`` by preconditioned CG, truncated once
``||H p + g|| <= eta ||g||`` with the forcing term ``eta = min(cg_tol, sqrt(||g|| / ||g_0||))``
(superlinear local convergence); then an Armijo backtracking line search
``f(w + t p) <= f(w) + 1e-4 t g'p`` (evaluated in O(n) from ``A w`` and ``A p``).

Preconditioners ``M ~ H`` (``preconditioner=``), applied in O(m d) by
:class:`solvers.sketch.precondition.SketchPreconditioner`:

- ``"none"``: M = I (the unpreconditioned Newton-CG, the reference for the CG-iteration ratio);
- ``"diag"``: Jacobi, M = diag(H) = 1 + sum_i D_i a_ij^2 (a baseline: it fixes feature scales,
  not correlated or duplicated columns);
- ``"fd"`` / ``"rfd"``: M = (1 + rho) I + B'B with B an FD / RFD sketch (rho = 0 for FD) of a
  weighted copy of A. ``reweight=`` says which copy, and when it is taken:

  * ``"scalar"``: one sketch B of ``diag(sqrt(C)) A`` taken once; at each step
    ``M = I + tau (B'B + rho I)`` with the scalar ``tau = sum_i D_i ||a_i||^2 /
    sum_i C_i ||a_i||^2`` (``tr(A'DA) = tau tr(A'CA)``); re-weighting costs O(m), no pass.
  * ``"resketch"``: B sketches ``diag(sqrt(D)) A`` over the rows with D_i > 0 (the squared
    hinge's active set), taken again only when the weights moved by more than
    ``resketch_tol`` since the last sketch, measured as
    ``sum_i |D_i - D_i^sk| ||a_i||^2 / sum_i D_i^sk ||a_i||^2`` (a bound on the relative trace
    norm of ``A'(D - D^sk)A``); ``resketch_tol=0`` sketches at every step. A sketch costs about
    2m passes' worth of flops (the 2m x 2m shrinks), so it pays only when it saves more CG
    iterations than that.

Certificate: f is 1-strongly convex and differentiable, so for every w
``f(w) - f* <= ||grad f(w)||^2 / 2``: ``bound = f(w) - ||g||^2 / 2`` is a proven lower bound on
the optimum. Gaps are relative to the natural scale ``f(0) = loss(0) sum_i C_i`` (``sum C_i``
for the squared hinge, ``log 2 sum C_i`` for the logistic loss) and go through
:func:`solvers.result.certify`. Statuses: OPTIMAL once ``||g||^2 / (2 f(0)) <= tol`` (and the
certificate holds), or when the line search can no longer decrease f (the rounding floor) with
the gap within :data:`solvers.result.CERTIFICATE_TOL`; ITERATION_LIMIT / FEASIBLE after
``max_iter`` Newton steps; NUMERICAL_ERROR / FEASIBLE on a non-finite value or a stall above the
tolerance. ``extra["cg_iterations"]`` lists the CG iterations of each Newton step.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from solvers.result import (
    CERTIFICATE_TOL,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    certify,
)
from solvers.sketch.precondition import SketchPreconditioner
from solvers.sketch.ridge import fd_preconditioner
from solvers.special import expit
from solvers.validation import (
    check_array,
    check_choice,
    check_class_weight,
    check_int,
    check_labels,
    check_nonnegative,
    check_number,
    check_positive,
    check_sample_weight,
    class_weight_vector,
    invalid,
)

OWNER = "sketched_newton"
LOSSES = ("squared_hinge", "logistic")
PRECONDITIONERS: dict[str, str] = {
    "none": "unpreconditioned CG",
    "diag": "Jacobi: diag(I + A'DA)",
    "fd": "Frequent Directions sketch: I + B'B",
    "rfd": "Robust FD sketch: (1 + rho) I + B'B",
}
REWEIGHTS = ("scalar", "resketch")
ARMIJO = 1e-4
MAX_BACKTRACKS = 60


# ---------------------------------------------------------------------------- losses
def loss_value(loss: str, z: np.ndarray, c: np.ndarray) -> float:
    """``sum_i c_i loss(z_i)``."""
    if loss == "squared_hinge":
        h = np.maximum(1.0 - z, 0.0)
        return float(c @ (h * h))
    return float(c @ np.logaddexp(0.0, -z))


def loss_change(loss: str, z: np.ndarray, dz: np.ndarray, c: np.ndarray) -> float:
    """``sum_i c_i (loss(z_i + dz_i) - loss(z_i))`` without cancellation against the total:
    ``(h' - h)(h' + h)`` for the squared hinge, ``log1p(sigma(-z) expm1(-dz))`` for the
    logistic loss."""
    if loss == "squared_hinge":
        h, h_new = np.maximum(1.0 - z, 0.0), np.maximum(1.0 - z - dz, 0.0)
        return float(c @ ((h_new - h) * (h_new + h)))
    with np.errstate(over="ignore"):
        return float(c @ np.log1p(expit(-z) * np.expm1(-dz)))


def loss_derivatives(loss: str, z: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(c_i loss'(z_i), D_i = c_i loss''(z_i))`` (the generalised second derivative for the
    squared hinge: 2 c_i on the active set z_i < 1, else 0)."""
    if loss == "squared_hinge":
        h = np.maximum(1.0 - z, 0.0)
        return -2.0 * c * h, np.where(h > 0.0, 2.0 * c, 0.0)
    s = expit(-z)
    return -c * s, c * s * (1.0 - s)


def loss_at_zero(loss: str) -> float:
    """``loss(0)``: 1 for the squared hinge, log 2 for the logistic loss."""
    return 1.0 if loss == "squared_hinge" else math.log(2.0)


# ---------------------------------------------------------------------------- entry point
def sketched_newton(
    X: Any,
    y: Any,
    C: float = 1.0,
    *,
    loss: str = "squared_hinge",
    sample_weight: Any = None,
    class_weight: Any = None,
    fit_intercept: bool = True,
    intercept_scaling: float = 1.0,
    penalize_intercept: bool = True,
    preconditioner: str = "rfd",
    m: int | None = None,
    reweight: str = "scalar",
    resketch_tol: float = 0.5,
    scale_columns: bool = True,
    tol: float = 1e-14,
    max_iter: int = 100,
    cg_tol: float = 0.1,
    cg_max_iter: int | None = None,
    block_size: int = 4096,
) -> SolveResult:
    """Minimise ``1/2 ||w||^2 + sum_i C_i loss(y_i (x_i'w + b))`` by truncated Newton-CG.

    See the module docstring for the formulas, the preconditioners and the certificate.
    ``m`` is the sketch size (default ``min(d', 64)``, d' = features plus the intercept
    column); ``tol`` the relative gap ``||g||^2 / (2 f(0))`` at which Newton stops;
    ``cg_max_iter`` caps CG per Newton step (default ``max(100, 2 d')``);
    ``penalize_intercept=False`` leaves b unregularised (minimised exactly after each step;
    see the module docstring). Returns a
    :class:`SolveResult` with ``x = w``, ``extra["intercept"]`` and the CG counts.
    """
    t0 = time.perf_counter()
    prob = _Problem.build(X, y, C, loss, sample_weight, class_weight, fit_intercept,
                          intercept_scaling, penalize_intercept)
    opts = _Options.build(prob, preconditioner, m, reweight, resketch_tol, scale_columns, tol,
                          max_iter, cg_tol, cg_max_iter, block_size)
    res = _Newton(prob, opts).run()
    res.build_time = 0.0
    res.wall_time = time.perf_counter() - t0
    res.solve_time = res.wall_time
    return res


@dataclasses.dataclass
class _Problem:
    """The checked data: A (n x d', intercept column last), labels, weights C_i > 0."""

    A: np.ndarray
    y: np.ndarray
    c: np.ndarray
    loss: str
    n_features: int
    scaling: float | None
    reg: np.ndarray  # 1 for a regularised coordinate, 0 for an unregularised intercept
    free_b: bool  # the intercept is unregularised and minimised exactly after each step

    @classmethod
    def build(cls, X, y, C, loss, sample_weight, class_weight, fit_intercept,
              intercept_scaling, penalize_intercept=True) -> _Problem:
        X = check_array(X, "X")
        n = X.shape[0]
        y, classes = check_labels(y, n, numeric=False)
        C = check_positive(C, "C", OWNER)
        check_choice(loss, "loss", OWNER, LOSSES)
        s = check_sample_weight(sample_weight, n)
        cw = class_weight_vector(check_class_weight(class_weight, classes), y)
        _check_bool(fit_intercept, "fit_intercept")
        scaling = check_positive(intercept_scaling, "intercept_scaling", OWNER)
        free_b = fit_intercept and not _check_bool(penalize_intercept, "penalize_intercept")
        c = C * s * cw
        if free_b:
            _check_free_intercept(loss, y, c)
        keep = c > 0.0  # rows of weight 0 do not enter f, its gradient or its Hessian
        A = np.hstack([X, np.full((n, 1), scaling)]) if fit_intercept else X
        reg = np.ones(A.shape[1])
        if free_b:
            reg[-1] = 0.0
        return cls(np.ascontiguousarray(A[keep]), y[keep], c[keep], loss, X.shape[1],
                   scaling if fit_intercept else None, reg, free_b)

    def split(self, w: np.ndarray) -> tuple[np.ndarray, float]:
        """``(w, b)`` from the extended vector (b = B w_{d+1})."""
        if self.scaling is None:
            return w, 0.0
        return w[: self.n_features], float(self.scaling * w[-1])


def _check_free_intercept(loss: str, y: np.ndarray, c: np.ndarray) -> None:
    """An unregularised b needs positive weight in both classes (for either loss)."""
    if not ((c[y > 0] > 0).any() and (c[y < 0] > 0).any()):
        raise invalid("penalize_intercept", OWNER,
                      "True when only one class has positive weight (an unregularised "
                      "intercept then has no minimiser)", False)


def intercept_shift(z: np.ndarray, y: np.ndarray, c: np.ndarray) -> float:
    """The exact minimiser ``delta`` of ``sum_i c_i max(0, 1 - z_i - y_i delta)^2`` (c > 0, both
    classes present): with ``beta_i = y_i (1 - z_i)`` its derivative is ``2 sum_{active} c_i
    (delta - beta_i)``, active = {y_i > 0, beta_i > delta} u {y_i < 0, beta_i < delta}; the
    root lies between the sorted breakpoints where that derivative changes sign, and is then the
    c-weighted mean of beta over that active set (one refinement from the differences)."""
    beta = y * (1.0 - z)
    order = np.argsort(beta, kind="stable")
    bs, cs, pos = beta[order], c[order], y[order] > 0
    cn, bn = np.cumsum(np.where(pos, 0.0, cs)), np.cumsum(np.where(pos, 0.0, cs * bs))
    cp, bp = np.cumsum(np.where(pos, cs, 0.0)), np.cumsum(np.where(pos, cs * bs, 0.0))
    slope = bs * (cn + cp[-1] - cp) - bn - (bp[-1] - bp)  # derivative / 2 at each breakpoint
    k = int(np.argmax(slope >= 0.0))  # slope[-1] >= 0: no positive row is active there
    below = (cn[k - 1], bn[k - 1], cp[k - 1], bp[k - 1]) if k > 0 else (0.0, 0.0, 0.0, 0.0)
    den = below[0] + cp[-1] - below[2]
    delta = (below[1] + bp[-1] - below[3]) / den if den > 0 else float(bs[k])
    delta = float(np.clip(delta, bs[k - 1] if k > 0 else -np.inf, bs[k]))
    active = np.where(y > 0, beta > delta, beta < delta)
    if active.any():
        delta += float(c[active] @ (beta[active] - delta)) / float(c[active].sum())
    return delta


def logistic_intercept_shift(z: np.ndarray, y: np.ndarray, c: np.ndarray,
                             max_iter: int = 200) -> float:
    """The minimiser ``delta`` of ``phi(delta) = sum_i c_i log(1 + exp(-(z_i + y_i delta)))``
    (c > 0, both classes present, so phi is strictly convex and coercive).

    ``phi'(delta) = -sum_i c_i y_i sigma(-t_i)`` and ``phi''(delta) = sum_i c_i sigma(t_i)
    sigma(-t_i)`` with ``t_i = z_i + y_i delta``. Safeguarded Newton from delta = 0: each
    evaluation moves one end of the bracket [lo, hi] of the root (phi' < 0 below it, > 0 above).
    While an end is infinite a step is at most ``max(1, 2 |delta|)`` (so the bracket closes
    after O(log |root|) doublings); once it is finite, a Newton point is taken only inside the
    bracket and at most half the previous step long, else the midpoint. Stops when the step is
    below the resolution of a double."""
    lo, hi, delta, last = -math.inf, math.inf, 0.0, math.inf
    for _ in range(max_iter):
        s = expit(-(z + y * delta))
        slope, curv = -float(c @ (y * s)), float(c @ (s * (1.0 - s)))
        if slope == 0.0:
            return delta
        if slope > 0.0:
            hi = delta
        else:
            lo = delta
        newton = delta - slope / curv if curv > 0.0 else math.nan
        if math.isfinite(lo) and math.isfinite(hi):
            good = lo < newton < hi and abs(newton - delta) <= 0.5 * abs(last)
            new = newton if good else 0.5 * (lo + hi)
        else:
            cap = max(1.0, 2.0 * abs(delta))
            new = newton if abs(newton - delta) <= cap else delta + math.copysign(cap, -slope)
        last = new - delta
        if abs(last) <= 4.0 * np.finfo(float).eps * max(1.0, abs(delta)):
            return new
        delta = new
    return delta


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(name, OWNER, "a bool (True or False)", value)
    return bool(value)


@dataclasses.dataclass
class _Options:
    preconditioner: str
    m: int
    reweight: str
    resketch_tol: float
    scale_columns: bool
    tol: float
    max_iter: int
    cg_tol: float
    cg_max_iter: int
    block_size: int

    @classmethod
    def build(cls, prob: _Problem, preconditioner, m, reweight, resketch_tol, scale_columns,
              tol, max_iter, cg_tol, cg_max_iter, block_size) -> _Options:
        p = prob.A.shape[1]
        check_choice(preconditioner, "preconditioner", OWNER, tuple(PRECONDITIONERS))
        check_choice(reweight, "reweight", OWNER, REWEIGHTS)
        m = check_int(min(p, 64) if m is None else m, "m", OWNER, low=1, high=p)
        return cls(
            preconditioner, m, reweight,
            check_nonnegative(resketch_tol, "resketch_tol", OWNER),
            _check_bool(scale_columns, "scale_columns"),
            check_positive(tol, "tol", OWNER),
            check_int(max_iter, "max_iter", OWNER),
            check_number(cg_tol, "cg_tol", OWNER, low=0.0, high=1.0),
            check_int(max(100, 2 * p) if cg_max_iter is None else cg_max_iter,
                      "cg_max_iter", OWNER),
            check_int(block_size, "block_size", OWNER),
        )


# ---------------------------------------------------------------------------- the method
@dataclasses.dataclass
class _Sketch:
    """One sketch: ``M = Sigma ((base_shift + tau rho) I + tau B'B) Sigma`` for a weight tau."""

    P: SketchPreconditioner  # B'B + I (only its factors are used, through reweighted)
    rho: float  # RFD's shift (0 for FD)
    sigma: np.ndarray  # column scaling Sigma (ones without scale_columns)
    base_shift: float  # mean(Sigma^-2): the identity of H in the scaled coordinates
    weights: np.ndarray  # the row weights sketched (C for "scalar", D for "resketch")
    row_norm2: np.ndarray  # ||Sigma^{-1} a_i||^2, for tau and the weight change


class _Newton:
    """Newton iterations with the state the line search and the preconditioner reuse."""

    def __init__(self, prob: _Problem, opts: _Options) -> None:
        self.prob, self.opts = prob, opts
        self.row_norm2 = np.einsum("ij,ij->i", prob.A, prob.A)
        self.f0 = loss_at_zero(prob.loss) * float(prob.c.sum())
        self.cg_counts: list[int] = []
        self.history: list[dict[str, float]] = []
        self.started = time.perf_counter()  # the history's clock
        self.n_sketches = 0
        self.sketch_time = 0.0
        self._sk: _Sketch | None = None

    # -- f, gradient, Hessian
    def evaluate(self, w: np.ndarray, Aw: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``(f(w), grad f(w), D)`` from the kept ``A w``."""
        z = self.prob.y * Aw
        rw = self.prob.reg * w
        f = 0.5 * float(w @ rw) + loss_value(self.prob.loss, z, self.prob.c)
        d1, D = loss_derivatives(self.prob.loss, z, self.prob.c)
        return f, rw + self.prob.A.T @ (self.prob.y * d1), D

    def minimise_intercept(self, w: np.ndarray, Aw: np.ndarray) -> None:
        """With an unregularised intercept: set b to its exact minimiser (in place)."""
        if self.prob.free_b:
            shift = intercept_shift if self.prob.loss == "squared_hinge" else (
                logistic_intercept_shift)
            delta = shift(self.prob.y * Aw, self.prob.y, self.prob.c)
            w[-1] += delta / float(self.prob.scaling)
            Aw += delta

    def run(self) -> SolveResult:
        A = self.prob.A
        w = np.zeros(A.shape[1])
        Aw = np.zeros(A.shape[0])
        self.minimise_intercept(w, Aw)
        f, g, D = self.evaluate(w, Aw)
        g0 = float(np.linalg.norm(g))
        it = 0
        for it in range(1, self.opts.max_iter + 1):
            gnorm = float(np.linalg.norm(g))
            if not (np.isfinite(f) and np.isfinite(gnorm)):
                return self.result(w, f, g, it - 1, TerminationCondition.NUMERICAL_ERROR,
                                   "a non-finite objective or gradient")
            if 0.5 * gnorm**2 / self.f0 <= self.opts.tol:
                return self.result(w, f, g, it - 1, TerminationCondition.OPTIMAL, "tol met")
            eta = min(self.opts.cg_tol, math.sqrt(gnorm / g0)) if g0 > 0 else self.opts.cg_tol
            p, n_cg = self.cg(D, g, eta * gnorm)
            Ap = A @ p
            step = self.line_search(w, Aw, Ap, p, float(g @ p))
            self.history.append({"f": f, "gap": 0.5 * gnorm**2 / self.f0, "cg": n_cg,
                                 "step": step, "active": int(np.count_nonzero(D)),
                                 "iteration": it, "time": time.perf_counter() - self.started})
            if step == 0.0:
                return self.stalled(w, f, g, it)
            w = w + step * p
            Aw = Aw + step * Ap
            self.minimise_intercept(w, Aw)
            f, g, D = self.evaluate(w, Aw)
        cond = TerminationCondition.ITERATION_LIMIT
        if 0.5 * float(g @ g) / self.f0 <= self.opts.tol:
            cond = TerminationCondition.OPTIMAL
        return self.result(w, f, g, it, cond, f"max_iter={self.opts.max_iter} Newton steps")

    def stalled(self, w: np.ndarray, f: float, g: np.ndarray, it: int) -> SolveResult:
        """The line search found no decrease: the rounding floor if the gap is certified."""
        gap = 0.5 * float(g @ g) / self.f0
        cond = (TerminationCondition.OPTIMAL if gap <= CERTIFICATE_TOL
                else TerminationCondition.NUMERICAL_ERROR)
        raw = (f"the line search found no decrease at Newton step {it} (relative gap {gap:.1e}"
               f", tol {self.opts.tol:.0e}); rescale the features or raise tol")
        return self.result(w, f, g, it - 1, cond, raw)

    def line_search(self, w, Aw, Ap, p, slope) -> float:
        """Armijo backtracking from t = 1 on the change ``f(w + t p) - f(w)`` (computed without
        cancellation, so decreases far below the rounding of f still count); 0.0 when no
        strict decrease was found (the rounding floor)."""
        if not slope < 0.0:
            return 0.0
        y, c, loss = self.prob.y, self.prob.c, self.prob.loss
        z, dz = y * Aw, y * Ap
        rp = self.prob.reg * p
        wp, pp = float(w @ rp), float(p @ rp)
        t = 1.0
        for _ in range(MAX_BACKTRACKS):
            change = t * wp + 0.5 * t * t * pp + loss_change(loss, z, t * dz, c)
            if change < 0.0 and change <= ARMIJO * t * slope:
                return t
            t *= 0.5
        return 0.0

    # -- conjugate gradient
    def cg(self, D: np.ndarray, g: np.ndarray, target: float) -> tuple[np.ndarray, int]:
        """Preconditioned CG on ``(I + A'DA) p = -g`` until ``||residual|| <= target``."""
        rows = np.flatnonzero(D)
        A_I = self.prob.A[rows] if rows.size < D.size else self.prob.A
        D_I = D[rows]
        solve = self.preconditioner(D, rows)
        p = np.zeros_like(g)
        r = -g
        z = solve(r)
        d = z.copy()
        rz = float(r @ z)
        k = 0
        while k < self.opts.cg_max_iter and float(np.linalg.norm(r)) > target:
            q = self.prob.reg * d + A_I.T @ (D_I * (A_I @ d))
            k += 1
            dq = float(d @ q)
            if not dq > 0.0:
                break
            alpha = rz / dq
            p += alpha * d
            r -= alpha * q
            z = solve(r)
            rz_new = float(r @ z)
            d = z + (rz_new / rz) * d
            rz = rz_new
        self.cg_counts.append(k)
        return p, k

    # -- preconditioners
    def preconditioner(self, D: np.ndarray, rows: np.ndarray):
        """``v -> M^{-1} v`` for this Newton step (see the module docstring)."""
        kind = self.opts.preconditioner
        if kind == "none" or rows.size == 0:
            return lambda v: v
        if kind == "diag":
            diag = self.prob.reg + (self.prob.A[rows] ** 2).T @ D[rows]
            return lambda v: v / diag
        if self.opts.reweight == "scalar":
            if self._sk is None:
                self._sk = self.sketch(self.prob.c, np.arange(D.size))
            sk = self._sk
            tau = float(D @ sk.row_norm2) / float(self.prob.c @ sk.row_norm2)
        else:
            if self._sk is None or self._moved(D) > self.opts.resketch_tol:
                self._sk = self.sketch(D, rows)
            sk, tau = self._sk, 1.0
        P = sk.P.reweighted(tau, sk.base_shift + tau * sk.rho)
        sigma = sk.sigma
        return lambda v: P.solve(v / sigma) / sigma

    def sketch(self, weights: np.ndarray, rows: np.ndarray) -> _Sketch:
        """An (R)FD sketch B of ``diag(sqrt(weights)) A[rows] Sigma^{-1}``."""
        t = time.perf_counter()
        A = self.prob.A[rows]
        sigma = np.ones(A.shape[1])
        if self.opts.scale_columns:
            sigma = np.sqrt(1.0 + (A**2).T @ weights[rows])
        scaled = (np.sqrt(weights[rows])[:, None] * A) / sigma
        P, fd = fd_preconditioner(scaled, 1.0, self.opts.m,
                                  robust=self.opts.preconditioner == "rfd",
                                  block_size=self.opts.block_size)
        self.n_sketches += 1
        self.sketch_time += time.perf_counter() - t
        return _Sketch(P, fd.rho_, sigma, float(np.mean(sigma**-2.0)), weights.copy(),
                       np.einsum("ij,ij->i", self.prob.A / sigma, self.prob.A / sigma))

    def _moved(self, D: np.ndarray) -> float:
        """``sum |D - D_sk| ||a||^2 / sum D_sk ||a||^2`` (inf for an empty sketch)."""
        assert self._sk is not None
        old, rn2 = self._sk.weights, self._sk.row_norm2
        base = float(old @ rn2)
        return float(np.abs(D - old) @ rn2) / base if base > 0 else math.inf

    # -- result
    def result(self, w: np.ndarray, f: float, g: np.ndarray, it: int,
               cond: TerminationCondition, raw: str) -> SolveResult:
        """The SolveResult, certified by ``bound = f - ||g||^2 / 2`` against ``f(0)``."""
        finite = bool(np.isfinite(f) and np.all(np.isfinite(g)))
        status = SolutionStatus.OPTIMAL if cond is TerminationCondition.OPTIMAL else (
            SolutionStatus.FEASIBLE)
        wv, b = self.prob.split(w)
        res = SolveResult(
            termination=cond, solution_status=status, objective=float(f),
            x=wv.copy(), bound=float(f - 0.5 * float(g @ g)) if finite else None,
            iterations=it, solver=OWNER, raw_status=raw,
            strategy=f"newton-{self.opts.preconditioner}",
            extra={"intercept": b, "b": b, "cg_iterations": list(self.cg_counts),
                   "total_cg": int(sum(self.cg_counts)), "n_sketches": self.n_sketches,
                   "sketch_time": self.sketch_time, "history": self.history,
                   "grad_norm": float(np.linalg.norm(g)) if finite else math.nan,
                   "loss": self.prob.loss},
        )
        return certify(res, self.f0, failure=TerminationCondition.NUMERICAL_ERROR)
