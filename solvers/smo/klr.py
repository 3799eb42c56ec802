r"""Kernel logistic regression (KLR) and sparse KLR (S-KLR) dual trained by SMO.

Problem (docs/problems/klr.md; the paper's (22))::

    min_alpha  f(alpha) = 1/2 alpha' Q alpha + sum_i C_i G(alpha_i / C_i) - lambda sum_i alpha_i
    s.t.       y' alpha = 0,   gamma_i <= alpha_i <= C_i - gamma_i
    G(d) = d log d + (1 - d) log(1 - d),    C_i = C s_i,   gamma_i = bound_tol * s_i

* ``lam`` = lambda >= 0 (lambda = 0: plain KLR; lambda > 0: S-KLR, sparser alpha).
* ``bound_tol`` = the paper's gamma (for unit weight). ``None`` or 0 keeps the open box
  0 < alpha_i < C_i of the exact dual by an internal gamma_i = 1e-12 C_i (the entropy's
  derivative there is +-27.6, so only points with |lambda - y_i f(x_i)| > 27.6 would feel it).
* Gradient: grad_i = (Q alpha)_i + log(alpha_i / (C_i - alpha_i)) - lambda, so
  m_i = -y_i grad_i contains **+ lambda y_i** (the sign docs/problems/klr.md derives; the paper's
  printed "- lambda y_i" would solve the problem with + lambda sum alpha, which the tests show
  does not reproduce the monolithic optimum of the objective above). The generic core only
  sees the linear term p = -lambda, so the sign cannot drift between selection and update.
* Optimality: alpha_i / C_i = sigma(lambda - y_i f(x_i)), f(x) = sum_j alpha_j y_j k(x_j, x) + b,
  b = (max_{I_up} m + min_{I_low} m) / 2 at convergence.
* Sparsity: row i is in the model ("support") when alpha_i > gamma_i + sparse_tol * C_i
  (default sparse_tol = 1e-3, as in docs/problems/klr.md).
* Certificate: the primal of this dual is
  ``P(w, b) = 1/2 ||w||^2 + sum_i loss_i(y_i (w'phi(x_i) + b))`` with
  ``loss_i(t) = max_{gamma_i <= a <= C_i - gamma_i} [a (lam - t) - C_i G(a / C_i)]`` (the
  logistic loss ``C_i log(1 + e^{lam - t})`` for the open box; linear tails with S-KLR's
  bounds), and ``-P(w(alpha), b) <= min f`` (see :mod:`solvers.smo.certificate`). The result's
  ``bound`` is -P at the best b, ``gap = (f - bound) / scale`` with ``scale = sum_i loss_i(0)``.
  As for the SVM, SMO continues with ``tol / 10`` after meeting ``tol`` while the gap is above
  CERTIFICATE_TOL (``refine=True``, at most REFINE_ROUNDS times); OPTIMAL only when the gap is
  within CERTIFICATE_TOL, else CONVERGED (``extra['stopping_rule']``). ``b`` is the best b.
* ``tol=None`` (the default) stops on the certificate itself: the compiled loop evaluates the
  gap from its gradient (O(n), every 1,000 pair steps or 10 outer steps of the batched solver)
  at the midpoint b, and near the target again at b after a few Newton steps towards the best
  b, and stops once it is within 0.9 CERTIFICATE_TOL of the gap scale and within 0.9 of what
  the solution rule needs (core.GAP_SOLUTION: SOLUTION_TOL^2 max(alpha'Q alpha, 1 / max_i Q_ii)
  / 2, from the same pass); the certificate at the best b (a gap no larger) then holds after one
  run and ``stopping_rule['stopped_by']`` is "gap". Should the
  gap not get there first, the run stops at violation DEFAULT_TOL and refines as above. A
  float ``tol`` is the violation rule only. The gap falls much faster than the violation:
  two clouds (RBF gamma 0.1, C = 1, pilot start), n = 2*10^4: violation 1e-3 ends at a gap of
  5.7e-9, 170x inside CERTIFICATE_TOL, after 99,575 pair steps (3.8 s); the gap stop after
  79,233 (3.2 s, gap 8.7e-7). n = 5*10^4: 243,819 -> 191,901 pair steps, 18.9 -> 13.8 s. With
  ``cache_dtype="float32"`` (a loop gradient carrying float32 columns) None means DEFAULT_TOL.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.kernels import Kernel
from solvers.progress import Progress, verbose_line
from solvers.result import SolveResult
from solvers.smo.certificate import (
    Certificate,
    certified_status,
    klr_best_intercept,
    klr_primal,
    klr_scale,
    refine_loop,
    stopping_rule,
)
from solvers.smo.core import (
    GAP_REL,
    DualSolution,
    auto_working_set,
    entropy_terms,
    index_set_extremes,
    joined_history,
    q_times,
    solve_dual,
    termination_of,
)
from solvers.smo.kernel_sums import q_matrix
from solvers.smo.prediction import kernel_expansion
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix, QMatrix
from solvers.validation import (
    check_array,
    check_choice,
    check_int,
    check_kernel,
    check_labels,
    check_nonnegative,
    check_positive,
    check_sample_weight,
    check_vector,
)

OPEN_BOX_EPS = 1e-12
"""gamma_i / C_i used when ``bound_tol`` is None or 0 (the open box 0 < alpha_i < C_i)."""
KLR_COLUMNS = "float64"
"""What ``cache_dtype="auto"`` means for KLR when Q does not fit ``cache_mb``: float64 columns.
KLR's alphas are all inside the box, so every gradient update adds a full q-column block and
float32 rounding of the columns accumulates in the maintained Q alpha. Measured (n = 2000, RBF
gamma 1, weights scaled by 1e10, C in {1, 1e8}, lambda in {0, 1}): float32 columns gave
certificates of 4e-9 whose gap recomputed in float64 was 1.4e-4 (Keerthi's start) and up to
1e7 (the pilot start, objective off by 3x its scale); with float64 columns every recomputed
gap was <= 1.6e-8. The cost: 2-8% at n = 2*10^4 (KLR reuses few columns: each sweep of the
working sets computes every column once). An explicit ``cache_dtype="float32"`` is certified
from Q alpha recomputed in float64 (n x nnz(alpha) kernel values per certificate)."""
STARTS = ("auto", "keerthi", "pilot")
"""``start`` of :func:`smo_klr`: Keerthi's feasible point, the pilot start, or "auto"."""
DEFAULT_TOL = 1e-6
"""The violation rule behind ``tol=None`` when the gap check does not stop the run first."""
PILOT_FROM = 10_000
"""Kept rows from which ``start="auto"`` takes the pilot start (when Q is not held in full).
Measured (two clouds, p = 10, RBF gamma 0.1, C = 1, tol 1e-3, cache 200 MB), whole fits:
n = 10^4 2.5-2.7 -> 2.1-2.5 s, 2*10^4 9.1-9.5 -> 7.8 s, 5*10^4 51.2 -> 39.9 s (kernel values
1.24e10 -> 9.3e9; float32 columns, before KLR_COLUMNS)."""
PILOT_SHARE = 0.1
"""The pilot's rows: max(PILOT_MIN_ROWS, PILOT_SHARE n), drawn uniformly (seed PILOT_SEED)."""
PILOT_MIN_ROWS = 2000
PILOT_SEED = 0
PILOT_TOL = 1e-2
"""The pilot's SMO tolerance (its solution only shapes the start; no certificate is needed)."""


@dataclasses.dataclass
class KLRProblem:
    """Validated data of one KLR dual (rows with zero weight removed)."""

    X: np.ndarray  # all rows (or the full kernel matrix for 'precomputed')
    y: np.ndarray  # +-1, all rows
    classes: np.ndarray
    kernel: Kernel
    keep: np.ndarray  # rows with C_i > 0
    C: np.ndarray  # C_i of the kept rows
    lower: np.ndarray  # gamma_i
    upper: np.ndarray  # C_i - gamma_i
    qmat: QMatrix
    sparse_tol: float

    @property
    def yk(self) -> np.ndarray:
        return self.y[self.keep]


def prepare_klr(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    bound_tol: float | None = None,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | str = "rbf",
    cache_mb: float = 200.0,
    sparse_tol: float = 1e-3,
    owner: str = "smo_klr",
) -> KLRProblem:
    """Validate the inputs (messages name ``owner``) and build Q (in full when n^2 doubles fit
    in ``cache_mb``)."""
    kernel = check_kernel(kernel, owner)
    X = check_array(X, "X")
    n = X.shape[0]
    y_pm, classes = check_labels(y, n, numeric=False)
    C = check_positive(C, "C", owner)
    check_positive(cache_mb, "cache_mb", owner)
    sparse_tol = check_nonnegative(sparse_tol, "sparse_tol", owner)
    s = check_sample_weight(sample_weight, n)
    keep = s > 0
    if np.unique(y_pm[keep]).size < 2:
        raise DataError("Only one class is left after removing zero-weight rows ('sample_weight').")
    Ci = C * s[keep]
    if bound_tol is None or bound_tol == 0:
        lower = OPEN_BOX_EPS * Ci
    else:
        g = check_nonnegative(bound_tol, "bound_tol", owner)
        if not g < 0.5 * C:
            raise DataError(f"'bound_tol' (gamma) must be < C / 2 = {C / 2}; got {bound_tol!r}.")
        lower = g * s[keep]
    upper = Ci - lower
    _check_balance(y_pm[keep], lower, upper, bound_tol)
    idx = np.flatnonzero(keep)
    if kernel.name == "precomputed":
        if X.shape[1] != n:
            raise DataError(
                f"With kernel='precomputed', 'X' must be the n x n kernel matrix; got {X.shape}."
            )
        qmat: QMatrix = PrecomputedQMatrix(X[np.ix_(idx, idx)], y_pm[idx])
    elif 8 * idx.size**2 <= cache_mb * 2**20:  # Q fits the budget: keep it whole
        qmat = PrecomputedQMatrix.from_q(q_matrix(KernelQMatrix(X[idx], y_pm[idx], kernel)))
    else:
        qmat = KernelQMatrix(X[idx], y_pm[idx], kernel, cache_mb)
    return KLRProblem(X, y_pm, classes, kernel, keep, Ci, lower, upper, qmat, sparse_tol)


def feasible_start(
    y: np.ndarray, lower: np.ndarray, upper: np.ndarray, C: np.ndarray
) -> np.ndarray:
    """Keerthi's start (docs/strategies/smo.md).

    alpha_i = 1/m_1 in class 1 and 1/m_2 in class 2 (both class sums are 1, so y'alpha = 0)
    when that lies strictly inside every box; otherwise the class with the larger lower-bound
    sum sits at its lower bound and the other class shares that sum in proportion to C_i;
    if even that leaves the box, alpha_i = c_k C_i with c_k <= 1/2 chosen to balance the sums.
    """
    pos = y > 0
    m_pos, m_neg = pos.sum(), (~pos).sum()
    a = np.where(pos, 1.0 / m_pos, 1.0 / m_neg)
    if np.all(a > lower) and np.all(a < upper):
        return a
    big = pos if lower[pos].sum() >= lower[~pos].sum() else ~pos
    a = lower.copy()
    # shares C_i / sum C (at most 1) before the products: C near 1e200 or 1e-200 would make
    # the product overflow or underflow first (the start left its box)
    a[~big] = lower[big].sum() * (C[~big] / C[~big].sum())
    if np.all(a[~big] > lower[~big]) and np.all(a[~big] < upper[~big]):
        return a
    total = 0.5 * min(C[pos].sum(), C[~pos].sum())
    return np.where(pos, total * (C / C[pos].sum()), total * (C / C[~pos].sum()))


def solve_klr_problem(
    prob: KLRProblem,
    lam: float,
    *,
    tol: float | None = None,
    shrinking: bool = True,
    max_iter: int = 10_000_000,
    alpha0: np.ndarray | None = None,
    qa0: np.ndarray | None = None,
    cache_dtype: str = "auto",
    refine: bool = True,
    verbose: bool = False,
    working_set: int | None = None,
    start: str = "auto",
) -> SolveResult:
    """Solve one prepared KLR dual at ``lam`` (warm start from ``alpha0``, ``qa0`` = Q alpha0;
    without one, ``start`` picks Keerthi's point or the pilot start, see :func:`smo_klr`;
    ``refine``: continue until the gap certificate holds; ``tol=None``: stop once it holds,
    see the module docstring)."""
    t0 = time.perf_counter()
    progress = Progress("smo-klr", start=t0)
    lam = check_nonnegative(lam, "lam", "smo_klr")
    tol_requested = check_positive(tol, "tol", "smo_klr", none_ok=True)
    tol = DEFAULT_TOL if tol_requested is None else tol_requested
    max_iter = check_int(max_iter, "max_iter", "smo_klr")
    working_set = check_int(working_set, "working_set", "smo_klr", low=2, none_ok=True)
    start_kind = check_choice(start, "start", "smo_klr", STARTS)
    q = auto_working_set(prob.qmat) if working_set is None else working_set
    yk = prob.yk
    pilot_s = 0.0
    if alpha0 is None:
        if start_kind == "auto":
            big = isinstance(prob.qmat, KernelQMatrix) and yk.size >= PILOT_FROM
            start_kind = "pilot" if big else "keerthi"
        if start_kind == "pilot":
            tp = time.perf_counter()
            start = pilot_start(prob, lam)
            pilot_s = time.perf_counter() - tp
            if verbose:
                verbose_line(f"smo_klr: pilot start from {_pilot_rows(yk.size):,} of "
                             f"{yk.size:,} rows in {pilot_s:.2f} s")
        else:
            start = feasible_start(yk, prob.lower, prob.upper, prob.C)
        qa0 = None
    else:
        start = np.clip(alpha0, prob.lower, prob.upper)
        unbalanced = abs(yk @ start) > 1e-9 * max(1.0, np.abs(start).sum())
        if unbalanced or not np.array_equal(start, alpha0):
            start, qa0 = _repair(start, yk, prob), None
    lin = np.full(yk.size, -lam)
    runs: list[DualSolution] = []
    dtype = KLR_COLUMNS if cache_dtype == "auto" else cache_dtype
    exact = dtype == "float32" and isinstance(prob.qmat, KernelQMatrix)
    # the in-loop gap uses the loop's Q alpha: not with float32 columns, certified from Q alpha
    # recomputed in float64
    gap_scale = (klr_scale(lam, prob.C, prob.lower, prob.upper)
                 if tol_requested is None and not exact else 0.0)
    # ... and waits for the solution rule as well (core.GAP_SOLUTION), so that one run certifies
    q_max = float(np.max(prob.qmat.diag(), initial=0.0))
    gap_wfloor = 1.0 / q_max if q_max > 0.0 else 0.0

    certs: list[Certificate] = []

    def run(prev: DualSolution | None, tol_: float, budget: int) -> DualSolution:
        a0, q0 = (start, qa0) if prev is None else (prev.alpha, prev.qa)
        # a continued run aims its gap stop at what the solution rule needs (Certificate)
        gap_rel = certs[-1].gap_rel_target(GAP_REL) if prev is not None and certs else GAP_REL
        runs.append(solve_dual(prob.qmat, yk, prob.lower, prob.upper, lin, entropy_C=prob.C,
                               alpha0=a0, qa0=q0, tol=tol_, max_iter=budget,
                               shrinking=shrinking, cache_dtype=dtype, verbose=verbose,
                               cache=None if prev is None else prev.cache, working_set=q,
                               gap_scale=gap_scale, gap_rel=gap_rel, gap_wfloor=gap_wfloor,
                               progress=progress,
                               offset=sum(r.iterations for r in runs)))
        return runs[-1]

    def certificate(sol: DualSolution) -> Certificate:
        if exact:  # float32 columns: certify from Q alpha recomputed in float64
            _recompute_exactly(prob, lam, sol)
        certs.append(klr_certificate(prob, lam, sol))
        progress.update(sum(r.iterations for r in runs), sol.objective, certs[-1].gap,
                        violation=sol.violation)
        return certs[-1]

    first = run(None, tol, max_iter)
    sol, cert, tol_met, rounds, iters = refine_loop(
        run, certificate, first, tol, max_iter, refine)
    progress.done(iters, sol.objective, cert.gap, violation=sol.violation)
    res = _result(prob, lam, sol, cert, time.perf_counter() - t0)
    res.iterations = iters
    res.extra["stopping_rule"] = stopping_rule(sol.violation, tol_met, tol_requested, rounds,
                                               cert,
                                               stopped_by="gap" if sol.gap_stopped else "tol")
    res.extra["history"] = joined_history(runs)
    res.extra["kernel_evals"] = sum(r.kernel_evals for r in runs)
    res.extra["min_curvature"] = min(r.min_curvature for r in runs)
    res.extra["working_set"] = q
    res.extra["start"] = "warm" if alpha0 is not None else start_kind
    res.extra["pilot_s"] = pilot_s
    res.raw_status = (f"violation {sol.violation:.3e} (tol {tol_met:.0e}) after {iters} "
                      f"iterations, relative gap {cert.gap:.1e}{res.raw_status}")
    return res


def _recompute_exactly(prob: KLRProblem, lam: float, sol: DualSolution) -> None:
    """Replace the run's Q alpha, gradient, extremes and f(alpha) by their float64 values from
    alpha (n x nnz(alpha) kernel values by the compiled kernel sums), in place: a continued run
    starts from them too."""
    a = sol.alpha
    sol.qa = q_times(prob.qmat, a)
    hval, hp = entropy_terms(a, prob.C)
    sol.grad = sol.qa - lam + hp
    sol.m_up, sol.m_low = index_set_extremes(a, sol.grad, prob.yk, prob.lower, prob.upper)
    sol.objective = float(0.5 * a @ sol.qa + hval.sum() - lam * a.sum())


def klr_certificate(prob: KLRProblem, lam: float, sol: DualSolution) -> Certificate:
    """f(alpha), the bound -P(w(alpha), b*) at the best b*, and the scale sum_i loss_i(0)."""
    return klr_certificate_at(prob, lam, sol.alpha, sol.qa, sol.objective,
                              0.5 * (sol.m_up + sol.m_low))


def klr_certificate_at(prob: KLRProblem, lam: float, alpha: np.ndarray, qa: np.ndarray,
                       objective: float, b0: float = 0.0) -> Certificate:
    """:func:`klr_certificate` from alpha, Q alpha and f(alpha) (b0 starts the search for b*)."""
    args = (prob.yk, lam, prob.C, prob.lower, prob.upper)
    b = klr_best_intercept(qa, *args, b0)
    bound = -klr_primal(alpha, qa, *args, b)
    return Certificate.of(objective, bound, klr_scale(lam, prob.C, prob.lower, prob.upper), b,
                          float(alpha @ qa), float(np.max(prob.qmat.diag(), initial=0.0)))


def pilot_start(prob: KLRProblem, lam: float) -> np.ndarray:
    """A start from a KLR fit on a random tenth of the rows (docs/strategies/smo.md).

    The rows S (|S| = max(PILOT_MIN_ROWS, PILOT_SHARE n), seed PILOT_SEED) are solved with
    C_i n / |S| (their losses then weigh as the n rows' do, so w and f are about the same) to
    PILOT_TOL. Its expansion g(x) = sum_{j in S} alpha_j y_j k(x_j, x) on every row gives, by
    the optimality condition alpha_i / C_i = sigma(lambda - y_i f(x_i)),

        alpha_i(b) = clip(C_i sigma(lambda - y_i (g_i + b)), l_i, u_i),

    with b the root of y' alpha(b) = 0 (decreasing in b, so one exists and bisection finds it).
    The pilot uses the open box whatever ``bound_tol`` (its solution only shapes the start).
    Every alpha_i is then as dense as Keerthi's start, and about a quarter of the kernel values
    of the SMO run that follows are saved (PILOT_FROM).
    """
    yk, n = prob.yk, prob.yk.size
    ns = _pilot_rows(n)
    rows = np.sort(np.random.default_rng(PILOT_SEED).choice(n, ns, replace=False))
    if np.unique(yk[rows]).size < 2:  # a sample of one class: Keerthi's start instead
        return feasible_start(yk, prob.lower, prob.upper, prob.C)
    Cs = prob.C[rows] * (n / ns)
    lower = OPEN_BOX_EPS * Cs
    qmat = prob.qmat
    sub_q: QMatrix
    if isinstance(qmat, KernelQMatrix):
        # columns in the loop, as the main run's (a Q formed in full would be another code
        # path, whose compiled functions a fresh process would load for the pilot alone)
        sub_q = KernelQMatrix(qmat.X[rows], yk[rows], prob.kernel, qmat.cache_mb)
    else:
        sub_q = PrecomputedQMatrix.from_q(qmat.Q[np.ix_(rows, rows)])
    sub = KLRProblem(prob.X, yk[rows], prob.classes, prob.kernel, np.ones(ns, bool), Cs, lower,
                     Cs - lower, sub_q, prob.sparse_tol)
    pilot = solve_klr_problem(sub, lam, tol=PILOT_TOL, refine=False, start="keerthi")
    coef = pilot.x * yk[rows]
    if isinstance(qmat, KernelQMatrix):
        g = kernel_expansion(qmat.X[rows], coef, 0.0, prob.kernel, qmat.X)
    else:  # K_ij = y_i y_j Q_ij
        g = yk * (qmat.Q[:, rows] @ (yk[rows] * coef))

    def alpha_at(b: float) -> np.ndarray:
        z = lam - yk * (g + b)
        return np.clip(prob.C * 0.5 * (1.0 + np.tanh(0.5 * z)), prob.lower, prob.upper)

    # y' alpha(b) decreases in b: widen a bracket around the pilot's b, then bisect
    lo = hi = float(pilot.extra["b"])
    width = 1.0
    while yk @ alpha_at(lo) < 0:
        lo -= width
        width *= 2
    width = 1.0
    while yk @ alpha_at(hi) > 0:
        hi += width
        width *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if yk @ alpha_at(mid) > 0 else (lo, mid)
    a = alpha_at(0.5 * (lo + hi))
    k = int(np.argmax(np.minimum(a - prob.lower, prob.upper - a)))  # the most room both ways
    a[k] -= yk[k] * (yk @ a)  # y'a = 0 up to rounding, as for Keerthi's start
    return a


def _pilot_rows(n: int) -> int:
    """|S| = max(PILOT_MIN_ROWS, PILOT_SHARE n), at most n."""
    return min(n, max(PILOT_MIN_ROWS, int(PILOT_SHARE * n)))


def _check_balance(y: np.ndarray, lower: np.ndarray, upper: np.ndarray, bound_tol: Any) -> None:
    """The dual has a point with y'alpha = 0 inside the box only if each class's lower bounds
    sum to less than the other class's upper bounds. With the open box's floor
    (OPEN_BOX_EPS C_i) that fails when one class's C_i = C s_i (class weights included) sum to
    about 10^12 times the other's (a class weight of 1e20 did, and SMO then refused its own
    start); with bound_tol, when gamma is too large for the smaller class. DataError naming
    the weights and the fix."""
    pos = y > 0
    if lower[pos].sum() < upper[~pos].sum() and lower[~pos].sum() < upper[pos].sum():
        return
    if bound_tol is None or bound_tol == 0:
        raise DataError(
            "The KLR dual has no feasible point: C * sample_weight (class weights included) "
            f"sums to {upper[pos].sum() + lower[pos].sum():.3g} on one class and "
            f"{upper[~pos].sum() + lower[~pos].sum():.3g} on the other, more than "
            f"{1 / OPEN_BOX_EPS:.0e} apart, and the open box keeps alpha_i >= "
            f"{OPEN_BOX_EPS:g} C_i. Bring the class weights and sample weights of the two "
            "classes within a ratio of about 1e11.")
    raise DataError(
        f"The KLR dual has no feasible point: bound_tol={bound_tol!r} puts the lower bounds of "
        "one class above what the other class's upper bounds can balance (y'alpha = 0); "
        "lower bound_tol, or balance the classes' weights.")


def _repair(a: np.ndarray, y: np.ndarray, prob: KLRProblem) -> np.ndarray:
    """Move a clipped warm start back onto y'alpha = 0 by scaling the heavier class to the box."""
    pos = y > 0
    sp, sn = a[pos].sum(), a[~pos].sum()
    heavy = pos if sp > sn else ~pos
    target = min(sp, sn)
    lo_h = prob.lower[heavy]
    excess = a[heavy] - lo_h
    if excess.sum() <= 0:
        return feasible_start(y, prob.lower, prob.upper, prob.C)
    factor = (target - lo_h.sum()) / excess.sum()
    if not 0 < factor <= 1:
        return feasible_start(y, prob.lower, prob.upper, prob.C)
    a = a.copy()
    a[heavy] = lo_h + factor * excess
    return a


def _result(prob: KLRProblem, lam: float, sol: DualSolution, cert: Certificate,
            seconds: float) -> SolveResult:
    n = prob.y.size
    yk = prob.yk
    b = cert.b
    alpha = np.zeros(n)
    alpha[prob.keep] = sol.alpha
    thr = np.zeros(n)
    thr[prob.keep] = prob.lower + prob.sparse_tol * prob.C
    support = prob.keep & (alpha > thr)
    f_train = np.full(n, np.nan)
    f_train[prob.keep] = yk * sol.qa + b
    term, status, note = certified_status(*termination_of(sol), cert)
    extra: dict[str, Any] = {
        "b": b,
        "b_midpoint": 0.5 * (sol.m_up + sol.m_low),
        "lam": lam,
        "max_violation": sol.violation,
        "n_support": int(support.sum()),
        "support_share": float(support.sum() / max(prob.keep.sum(), 1)),
        "n_at_lower": int(prob.keep.sum() - support.sum()),
        "support": support,
        "support_threshold": thr,
        "lower": _scatter(prob.lower, prob.keep, n),
        "upper": _scatter(prob.upper, prob.keep, n),
        "classes": prob.classes,
        "y": prob.y,
        "qa": sol.qa,
        "decision_train": f_train,
    }
    return SolveResult(
        termination=term,
        solution_status=status,
        objective=sol.objective,
        x=alpha,
        bound=cert.bound,
        gap=cert.gap,
        scale=cert.scale,
        iterations=sol.iterations,
        solve_time=seconds,
        solver="smo",
        strategy="smo",
        raw_status=note,
        extra=extra,
    )


def _scatter(v: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    out[keep] = v
    return out


def smo_klr(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    lam: float = 0.0,
    bound_tol: float | None = None,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | str = "rbf",
    tol: float | None = None,
    cache_mb: float = 200.0,
    shrinking: bool = True,
    max_iter: int = 10_000_000,
    alpha0: np.ndarray | None = None,
    sparse_tol: float = 1e-3,
    cache_dtype: str = "auto",
    refine: bool = True,
    verbose: bool = False,
    working_set: int | None = None,
    start: str = "auto",
) -> SolveResult:
    """Train the (S-)KLR dual by second-order SMO with a Newton two-variable step.

    Parameters
    ----------
    X : (n, p) array
        Rows x_i (for ``kernel='precomputed'``: the n x n kernel matrix).
    y : (n,) array
        Two class labels (classes[1] -> y = +1).
    C : float
        C of the paper; C_i = C s_i.
    lam : float
        lambda >= 0 of (22).
    bound_tol : float or None
        gamma of (22) for a unit-weight row (gamma_i = bound_tol * s_i); None / 0: open box.
    sample_weight : (n,) array, optional
        s_i >= 0 (zero removes the row; integer weights equal repeated rows).
    kernel : Kernel or str
        k(x, z).
    tol : float or None
        tau: stop at max_{I_up} m - min_{I_low} m <= tau. None (default): stop as soon as the
        certificate holds (relative duality gap within CERTIFICATE_TOL, checked in the loop),
        at the latest at tau = DEFAULT_TOL = 1e-6 (module docstring).
    cache_mb : float
        Memory budget; Q is kept in full when it fits, else columns are cached.
    shrinking, max_iter, verbose :
        As in :func:`solvers.smo.svm.smo_svm` (``max_iter`` -> ITERATION_LIMIT).
    alpha0 : (n,) array, optional
        Warm start (clipped into the box and re-balanced if needed).
    sparse_tol : float
        Row i counts as support when alpha_i > gamma_i + sparse_tol * C_i.
    cache_dtype : {"auto", "float64", "float32"}
        Storage of cached kernel columns when Q is not kept in full; "auto" is float64 for KLR
        (KLR_COLUMNS); with "float32" the certificate is computed from Q alpha recomputed in
        float64.
    refine : bool
        Continue with tighter tolerances after ``tol`` until the relative duality gap is within
        CERTIFICATE_TOL (module docstring); False stops at ``tol``.
    working_set : int or None
        q, the variables per step, as in :func:`solvers.smo.svm.smo_svm` (2: pairwise SMO;
        None: pairwise for n <= 1024, else q = 256).
    start : {"auto", "keerthi", "pilot"}
        alpha^0 when ``alpha0`` is not given: Keerthi's feasible point (equal class sums), or
        the pilot start (:func:`pilot_start`: a fit on a random tenth of the rows, mapped to
        every row by alpha_i = C_i sigma(lambda - y_i f(x_i))); "auto" takes the pilot from
        PILOT_FROM = 10,000 rows when Q is not held in full.

    Returns
    -------
    SolveResult
        ``x`` = alpha, ``objective`` = f(alpha), ``bound`` = -P(w(alpha), b) <= min f, ``gap``,
        ``scale``; ``extra``: ``b``, ``max_violation``, ``stopping_rule``,
        ``n_support``, ``support_share``, ``n_at_lower``, ``support`` (mask),
        ``support_threshold``, ``lower``, ``upper``, ``classes``, ``y``, ``decision_train``,
        ``start`` ("keerthi", "pilot" or "warm") and ``pilot_s`` (the pilot's seconds).
    """
    prob = prepare_klr(X, y, C=C, bound_tol=bound_tol, sample_weight=sample_weight,
                       kernel=kernel, cache_mb=cache_mb, sparse_tol=sparse_tol)
    a0 = None if alpha0 is None else check_vector(alpha0, prob.y.size, "alpha0")
    return solve_klr_problem(prob, lam, tol=tol, shrinking=shrinking, max_iter=max_iter,
                             alpha0=None if a0 is None else a0[prob.keep],
                             cache_dtype=cache_dtype, refine=refine, verbose=verbose,
                             working_set=working_set, start=start)


def lam_path(
    X: np.ndarray, y: np.ndarray, lams: Sequence[float], **kwargs: Any
) -> list[SolveResult]:
    """Solve (22) for each lambda in ``lams`` (in the given order), each warm-started from the last.

    Q is built once; the warm start reuses alpha and Q alpha, since lambda only changes the
    linear term. ``kwargs`` are those of :func:`smo_klr` (without ``lam`` / ``alpha0``).
    """
    solve_kw = {k: kwargs.pop(k)
                for k in ("tol", "shrinking", "max_iter", "cache_dtype", "refine", "verbose",
                          "working_set", "start")
                if k in kwargs}
    prob = prepare_klr(X, y, **kwargs)
    out: list[SolveResult] = []
    alpha = qa = None
    for lam in lams:
        res = solve_klr_problem(prob, lam, alpha0=alpha, qa0=qa, **solve_kw)
        alpha, qa = res.x[prob.keep], res.extra["qa"]
        out.append(res)
    return out


def lam_max(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    bound_tol: float,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | str = "rbf",
) -> float:
    r"""A lambda beyond which every minority-class alpha_i sits at C_i - gamma_i (proposition 1).

    Derivation (the paper's (21) was lost in conversion; this is a sufficient version). Fix the
    minority class at u_t = C_t - gamma_t and let the majority solve the rest (feasible when the
    majority's box capacity covers the minority's sum). That point is optimal for (22) iff, for
    every minority t and majority k in I_low, m_t <= m_k (for a y = -1 minority; mirrored
    otherwise), which reads

        2 lambda >= (Q alpha)_t + L_t + (Q alpha)_k + h_k'(alpha_k),
        L_t = h_t'(u_t) = log((C_t - gamma_t) / gamma_t).

    With (Q alpha)_i <= sum_j u_j |K_ij| =: r_i and h_k'(alpha_k) <= L_k for any feasible alpha,

        lambda_max = 1/2 [ max_{t in minority} (r_t + L_t) + max_{k in majority} (r_k + L_k) ]

    suffices. The minority is the class with the smaller box capacity sum_i u_i (the smaller
    count for unit weights); for balanced classes both saturate. The open box (gamma = 0) has
    no finite threshold (the paper's lemma 1: alpha never reaches the bounds).
    """
    g = check_nonnegative(bound_tol, "bound_tol", "lam_max")
    if g == 0:
        raise DataError("'bound_tol' must be > 0: with the open box (gamma = 0) alpha never "
                        "reaches C, so no finite lambda saturates the minority class.")
    prob = prepare_klr(X, y, C=C, bound_tol=g, sample_weight=sample_weight, kernel=kernel,
                       cache_mb=1e-9)
    yk, u = prob.yk, prob.upper
    r = _abs_kernel_times(prob, u)
    score = r + np.log(u / prob.lower)
    pos = yk > 0
    minority = pos if u[pos].sum() < u[~pos].sum() else ~pos
    return float(0.5 * (score[minority].max() + score[~minority].max()))


def _abs_kernel_times(prob: KLRProblem, v: np.ndarray) -> np.ndarray:
    """|K| v in row blocks (|Q| = |K|)."""
    qmat = prob.qmat
    n = qmat.n
    out = np.empty(n)
    step = max(1, 2**24 // max(n, 1))
    for start in range(0, n, step):
        idx = np.arange(start, min(n, start + step))
        out[idx] = np.abs(qmat.columns(idx)).T @ v
    return out


# ---------------------------------------------------------------- prediction
def decision_function(
    X_train: np.ndarray,
    y: np.ndarray,
    alpha: np.ndarray,
    b: float,
    kernel: Kernel | str,
    X_new: np.ndarray,
    support_only: bool = True,
    threshold: float | np.ndarray | None = None,
) -> np.ndarray:
    """f(x) = sum_{i in support} alpha_i y_i k(x_i, x) + b.

    ``support_only``: keep only alpha_i > threshold (pass ``result.extra['support_threshold']``
    for the fit's own rule gamma_i + sparse_tol C_i; ``None`` uses 1e-3 max_i alpha_i).
    """
    kernel = check_kernel(kernel, "decision_function")
    alpha = np.asarray(alpha, dtype=float)
    y_pm = _as_pm(y)
    coef = alpha * y_pm
    if support_only:
        thr = 1e-3 * alpha.max() if threshold is None else threshold
        coef = np.where(alpha > thr, coef, 0.0)
    X_new = check_array(X_new, "X_new")
    Xt = np.asarray(X_train, dtype=float)
    if kernel.name != "precomputed" and X_new.shape[1] != Xt.shape[1]:
        raise DataError(f"'X_new' has {X_new.shape[1]} features, but the model is expecting "
                        f"{Xt.shape[1]} features as input.")
    return kernel_expansion(Xt, coef, b, kernel, X_new)


def predict_proba(*args: Any, **kwargs: Any) -> np.ndarray:
    """P(y = classes[1] | x) = sigma(f(x)) (arguments as :func:`decision_function`)."""
    f = decision_function(*args, **kwargs)
    return 0.5 * (1.0 + np.tanh(0.5 * f))


def predict(X_train, y, alpha, b, kernel, X_new, support_only=True, threshold=None) -> np.ndarray:
    """Labels: classes[1] where f(x) > 0, else classes[0] (``y`` in its original labels)."""
    classes = np.unique(np.asarray(y))
    f = decision_function(X_train, y, alpha, b, kernel, X_new, support_only, threshold)
    return np.where(f > 0, classes[-1], classes[0])


def _as_pm(y: Any) -> np.ndarray:
    arr = np.asarray(y)
    if set(np.unique(arr).tolist()) <= {-1.0, 1.0}:
        return arr.astype(float)
    return check_labels(arr, arr.shape[0], numeric=False)[0]


__all__ = ["decision_function", "feasible_start", "lam_max", "lam_path", "predict",
           "predict_proba", "prepare_klr", "smo_klr", "solve_klr_problem"]
