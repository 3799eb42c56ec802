"""Solve results: why a solver stopped, what it returned, and the numbers around it.

Two enums, as in Pyomo's ``contrib.solver`` and MathOptInterface: :class:`TerminationCondition`
says *why* the run stopped, :class:`SolutionStatus` says *what* came back. They are separate
because a run can stop at a time limit and still return a feasible point.

The toolkit never passes a solver's word on; a backend sets ``OPTIMAL`` only after its own check
(a duality gap or KKT residual computed from the returned arrays, see each backend).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from typing import Any

import numpy as np

from solvers.errors import (
    InfeasibleError,
    LimitReachedError,
    NumericalError,
    SolveError,
    UnboundedError,
)

CERTIFICATE_TOL = 1e-6
"""The one tolerance behind "optimal" and "certified", for every problem and strategy: the
relative gap ``(objective - bound) / scale`` must lie in ``[-ROUNDOFF_TOL, CERTIFICATE_TOL]``,
where ``bound`` is a proven lower bound on the optimum and ``scale`` the problem's natural scale
(see each problem's ``natural_scale``; e.g. the LAD objective of the best constant fit). Being
relative to that scale, the check means the same on data rescaled by any factor."""

SOLUTION_TOL = 1e-3
"""The tolerance on the solution behind "optimal" and "certified" where the optimum is unique
(ridge x; the SVM's and KLR's w). The certificate proves a distance d >= ||x - x*|| from the
absolute gap G and the problem's strong convexity modulus mu, ``d = sqrt(2 G / mu)`` (see each
problem's ``solution_certificate``), and from it a bound on how far every training row's
decision value can be from the optimum's (ridge: the prediction; SVM / KLR: ``w'phi(x_i)``
at the same intercept, within ``d sqrt(k(x_i, x_i))`` by Cauchy-Schwarz). The solution is
certified when either is small: ``d <= SOLUTION_TOL ||x||``, or the decision bound within
SOLUTION_TOL of the decision values' unit (the SVM's margin 1, one logit of KLR's loss, the
targets' weighted standard deviation for ridge). Both ratios are invariant to rescaling of the
data, as the gap is; the second is what predictions see when the solution itself is tiny
(the SVM at C = 1e-10, where w is 1e-8 and the intercept decides)."""

ROUNDOFF_TOL = 1e-9
"""A relative gap below ``-ROUNDOFF_TOL`` means the "bound" exceeds the objective: it is not a
bound, and the result is a numerical error, never optimal (see :func:`roundoff_tol` for an
objective much larger than the scale)."""

RESOLUTION = 1e-12
"""The smallest difference of the objective and the bound, relative to their own magnitude,
that float64 sums of up to ~10^7 terms resolve (about 4500 machine epsilons)."""


def stable_norm(v: np.ndarray) -> float:
    """``||v||_2`` without overflow or underflow of the squares: ``numpy.linalg.norm`` sums
    squares, which are 0 for entries below 1e-154 and inf above 1e154 (a ridge problem scaled
    by 1e-100 had ||A'b|| = 0 and was "solved" by x = 0); outside [1e-140, 1e140] the vector
    is divided by its largest magnitude first (BLAS nrm2's idea, one more pass)."""
    v = np.asarray(v)
    if not v.size:
        return 0.0
    top = float(np.max(np.abs(v)))
    if top == 0.0 or not np.isfinite(top):
        return top  # 0, inf or nan, as the norm would be
    if 1e-140 < top < 1e140:
        return float(np.linalg.norm(v))
    return top * float(np.linalg.norm(v / top))


def objective_scale(natural: float, objective: float | None, bound: float | None) -> float:
    """``min(natural, max(|objective|, |bound|))``: the gap scale of a problem whose natural
    scale f(0) can lie far above its optimum (the SVM's sum C_i and KLR's P(0, 0) grow with C
    while the optimum on separable data stays at the hard-margin value: at C = 1e6 an RBF SVM
    with optimum 4241.5 against sum C_i = 2e8 was "optimal" 2.6% above it, at C = 1e10 258x
    above it). Never larger than ``natural``, so it only tightens; invariant to rescaling like
    it. ``natural`` itself when the objective and bound are unknown, zero or not finite."""
    mags = [abs(float(v)) for v in (objective, bound) if v is not None and np.isfinite(v)]
    top = max(mags, default=0.0)
    return min(natural, top) if top > 0 else natural


def roundoff_tol(objective: float | None, bound: float | None, scale: float | None) -> float:
    """The round-off allowance of a relative gap: ``max(ROUNDOFF_TOL, RESOLUTION *
    max(|objective|, |bound|) / scale)``.

    An objective far above its natural scale (e.g. S-KLR's box forcing large alphas, where
    1/2 ||w||^2 dominates and grows with the square of the weights while the scale grows
    linearly) is computed with round-off larger than ROUNDOFF_TOL of the scale. When the
    allowance reaches the certificate tolerance, float64 cannot prove the gap, and
    :func:`gap_within` is False.
    """
    values = [v for v in (objective, bound) if v is not None and np.isfinite(v)]
    if not values or not scale or not np.isfinite(scale) or scale <= 0:
        return ROUNDOFF_TOL
    return max(ROUNDOFF_TOL, RESOLUTION * max(abs(v) for v in values) / scale)


class TerminationCondition(str, enum.Enum):
    """Why the solver (or strategy) stopped."""

    OPTIMAL = "optimal"
    """Converged, and the toolkit's own check (gap / KKT residual) confirmed it."""
    CERTIFIED = "certified"
    """A decomposition strategy stopped with a proof of optimality (AID's sign purity) *and* the
    problem-level gap is within :data:`CERTIFICATE_TOL`."""
    CONVERGED = "converged"
    """The strategy met its own stopping rule (e.g. SMO's maximal violation <= tol), but the
    problem-level gap is above :data:`CERTIFICATE_TOL`; ``gap`` says how far the answer is proven
    to be. Tighten the strategy's ``tol`` to reach a certificate."""
    ESTIMATE = "estimate"
    """A one-shot estimator (a sketched closed form) returned its estimate; it is not an optimum
    and ``extra['rel_error']`` / ``gap`` give its measured distance."""
    GAP_LIMIT = "gap_limit"
    """Stopped at the user's gap tolerance; the solution is within ``gap`` of optimal."""
    ITERATION_LIMIT = "iteration_limit"
    """Hit the iteration cap; raise ``max_iter`` or loosen ``tol`` to finish."""
    TIME_LIMIT = "time_limit"
    """Hit the time limit; raise ``time_limit`` to finish."""
    INTERRUPTED = "interrupted"
    """Stopped by the user (Ctrl-C, :mod:`solvers.interrupt`); the best point so far is
    returned with its gap."""
    INFEASIBLE = "infeasible"
    """The model has no feasible point; check bounds and constraints."""
    UNBOUNDED = "unbounded"
    """The objective is unbounded below; add regularization or bounds."""
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    """The solver could not tell which; solve the feasibility problem to find out."""
    NUMERICAL_ERROR = "numerical_error"
    """The solver reported success but the toolkit's check failed, the solver gave up on
    numerics, an iteration diverged, or a solver called an always-feasible, bounded training
    problem infeasible / unbounded; ``raw_status`` says which. Rescale the data or try another
    solver (``--solver``)."""
    ERROR = "error"
    """The solver failed for another reason; see ``raw_status``."""


class SolutionStatus(str, enum.Enum):
    """What came back, ordered from worst to best (compare with :meth:`rank`)."""

    NO_SOLUTION = "no_solution"
    """No primal values were loaded."""
    INFEASIBLE = "infeasible"
    """Values were returned but violate the constraints beyond tolerance."""
    FEASIBLE = "feasible"
    """A feasible point, not proven optimal (a limit was hit); use it as a warm start only."""
    OPTIMAL = "optimal"
    """Feasible and verified optimal to the stated tolerance."""

    def rank(self) -> int:
        """Position in the order NO_SOLUTION < INFEASIBLE < FEASIBLE < OPTIMAL."""
        return list(SolutionStatus).index(self)


_ERROR_FOR = {
    TerminationCondition.INFEASIBLE: InfeasibleError,
    TerminationCondition.UNBOUNDED: UnboundedError,
    TerminationCondition.INFEASIBLE_OR_UNBOUNDED: InfeasibleError,
    TerminationCondition.ITERATION_LIMIT: LimitReachedError,
    TerminationCondition.TIME_LIMIT: LimitReachedError,
    TerminationCondition.GAP_LIMIT: LimitReachedError,
    TerminationCondition.NUMERICAL_ERROR: NumericalError,
    TerminationCondition.CONVERGED: LimitReachedError,
    TerminationCondition.ESTIMATE: LimitReachedError,
    TerminationCondition.ERROR: SolveError,
}


@dataclasses.dataclass(frozen=True)
class CertificateArrays:
    """What a result's bound is derived from, typed (:attr:`SolveResult.certificate_arrays`).

    ``dual``: LAD's dual vector u (``X'u = 0``, ``-2(1 - tau) s <= u <= 2 tau s``; the bound
    is ``y'u``), or the SVM's / KLR's alpha (the bound is D(alpha), or KLR's primal bound at
    w(alpha)); ``decision_train``: a kernel dual's decision values on the training rows
    (f = K(alpha * y) + b, what ``verify="auto"`` audits); ``gradient_norm``: ridge's
    ||grad f(x)|| (the bound is ``f - ||grad f||^2 / (2 alpha)``); ``verified``: who computed
    the objective and bound that were certified ("independent", "audited" or "strategy"; see
    ``optmodels.verify``). A field the result does not hold is None."""

    dual: np.ndarray | None
    decision_train: np.ndarray | None
    gradient_norm: float | None
    verified: str | None


@dataclasses.dataclass(frozen=True)
class HistoryPoint:
    """One step of a strategy's history (:attr:`SolveResult.history`): its iteration, the
    seconds since the strategy started (None where it kept no clock), the upper value (the
    objective at the iterate: ``objective``, AID's best E), the lower bound (AID's F, the dual
    D of SVM's SMO) and the gap where recorded, each in the units the strategy recorded them;
    ``values`` holds everything the strategy recorded, under its own names."""

    iteration: int
    time: float | None
    objective: float | None
    bound: float | None
    gap: float | None
    values: dict[str, Any]


def _first(h: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if h.get(key) is not None:
            return h[key]
    return None


@dataclasses.dataclass
class SolveResult:
    """The outcome of one solve, by a backend or a strategy.

    Attributes
    ----------
    termination, solution_status:
        See the enums. ``is_optimal`` is true only for OPTIMAL / CERTIFIED with an OPTIMAL solution.
    objective:
        The problem's objective (docs/problems/) evaluated *by the toolkit* at ``x``.
    bound:
        A proven lower bound on the optimum (a dual objective, AID's F), or ``None``.
    gap:
        Relative gap ``(objective - bound) / scale`` where a bound is known (see
        :func:`relative_gap`); ``scale`` is the problem's natural scale, ``certificate_tol`` the
        tolerance the gap was checked against.
    x:
        The main solution vector (LAD beta, SVM w or alpha, KLR alpha, ridge x).
    solution_bound, decision_bound, solution_gap, solution_unique:
        The certificate on the solution (:func:`certify`, :data:`SOLUTION_TOL`), where the
        optimum is unique: a proven bound on ``||x - x*||`` (ridge x; the SVM's and KLR's w in
        feature space), a proven bound on the decision values over the training rows (ridge:
        the predictions; SVM / KLR: ``w'phi(x_i)``, at the same intercept), and the
        smaller of ``solution_bound / ||x||`` and ``decision_bound`` over the decision values'
        unit (:data:`SOLUTION_TOL`), held to ``solution_tol``. ``solution_unique`` is True where
        the problem makes the optimum unique (strong convexity), None where it is not known
        (LAD: a linear program's optimum may be a face; only the objective is certified).
    solution:
        What the result predicts with (:mod:`solvers.solution`): a ``LinearSolution`` (coef,
        intercept) or a ``KernelSolution`` (dual coefficients, support, intercept), set by the
        problem layer for every strategy; None without a solution.
    extra:
        Other named arrays or values (``b`` / intercept, duals, ``history``, ...).
    """

    termination: TerminationCondition
    solution_status: SolutionStatus
    objective: float = float("nan")
    x: np.ndarray | None = None
    bound: float | None = None
    gap: float | None = None
    iterations: int = 0
    build_time: float = 0.0
    solve_time: float = 0.0
    solver: str = ""
    solver_version: str = ""
    raw_status: str = ""
    strategy: str = "full"
    scale: float | None = None
    certificate_tol: float = CERTIFICATE_TOL
    wall_time: float = 0.0
    solution_bound: float | None = None
    decision_bound: float | None = None
    solution_gap: float | None = None
    solution_tol: float = SOLUTION_TOL
    solution_unique: bool | None = None
    solution: Any = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def certified(self) -> bool:
        """True when the problem-level certificate holds: a proven bound within
        ``certificate_tol`` of the objective, relative to the natural scale."""
        return gap_within(self.gap, self.certificate_tol,
                          roundoff_tol(self.objective, self.bound, self.scale))

    @property
    def solution_certified(self) -> bool | None:
        """Whether the proven distance to the unique optimum is within ``solution_tol`` of the
        solution's norm; None where no such bound applies (:attr:`solution_unique` not True)."""
        if self.solution_gap is None:
            return None
        return bool(self.solution_gap <= self.solution_tol)

    @property
    def is_optimal(self) -> bool:
        """True when the run ended optimal (or certified) with a verified solution."""
        return (
            self.termination in (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED)
            and self.solution_status is SolutionStatus.OPTIMAL
        )

    @property
    def certificate_arrays(self) -> CertificateArrays:
        """The arrays the bound is derived from (:class:`CertificateArrays`)."""
        dual = _first(self.extra, "dual_u", "alpha")
        g = self.extra.get("gradient_norm")
        return CertificateArrays(
            dual=None if dual is None else np.asarray(dual, dtype=float),
            decision_train=self.extra.get("decision_train"),
            gradient_norm=None if g is None else float(g),
            verified=self.extra.get("verified"))

    @property
    def history(self) -> tuple[HistoryPoint, ...]:
        """The strategy's per-iteration history (:class:`HistoryPoint`), empty for a strategy
        that keeps none (a full solve)."""
        out = []
        for k, h in enumerate(self.extra.get("history") or []):
            it = _first(h, "iteration", "iter")
            t = h.get("time")
            out.append(HistoryPoint(
                iteration=k + 1 if it is None else int(it),
                time=None if t is None else float(t),
                objective=_first(h, "objective", "E_best", "f"),
                bound=_first(h, "bound", "F", "dual"),
                gap=h.get("gap"),
                values=dict(h)))
        return tuple(out)

    @property
    def time(self) -> float:
        """Wall-clock seconds of the whole call (build, solve, verification) where it was
        measured (``problem.solve``), else build plus solve time."""
        return self.wall_time if self.wall_time > 0 else self.build_time + self.solve_time

    def require_optimal(self) -> SolveResult:
        """Return ``self`` if optimal, else raise the matching :class:`SolveError` subclass."""
        if self.is_optimal:
            return self
        cls = _ERROR_FOR.get(self.termination, SolveError)
        raise cls(
            f"{self.solver or self.strategy} stopped with termination={self.termination.value} "
            f"(raw status {self.raw_status!r}); the solution is not optimal.",
            solver=self.solver,
            raw_status=self.raw_status,
            termination=self.termination.value,
            primal_available=self.x is not None,
            dual_available=self.extra.get("duals") is not None
            or self.extra.get("alpha") is not None,
        )

    def summary(self, names: list[str] | None = None, *, n_support: int | None = None) -> str:
        """A statsmodels-like report: status, certificate (certified, gap, tolerance, natural
        scale), objective, bound, iterations, times (wall, build, solve), solver and version;
        then, with ``names`` (one per entry of ``x``), the coefficient table, with the intercept
        (``extra['intercept']`` or ``extra['b']``) last; ``n_support`` adds the number of
        support vectors (kernel models). Numbers are formatted by :func:`format_number`."""
        left = [
            ("Status:", self.termination.value),
            ("Solution:", self.solution_status.value),
            ("Certified:", format_number(bool(self.certified and self.is_optimal))),
            ("Relative gap:", format_number(self.gap, "gap")),
            ("Tolerance:", format_number(self.certificate_tol)),
            ("Gap scale:", format_number(self.scale)),
            ("Objective:", format_number(self.objective)),
            ("Bound:", format_number(self.bound)),
        ]
        if self.solution_gap is not None:
            left += [("Solution within:", format_number(self.solution_bound)),
                     ("  relative:", format_number(self.solution_gap, "gap")),
                     ("Decisions within:", format_number(self.decision_bound))]
        right = [
            ("Strategy:", self.strategy),
            ("Solver:", " ".join(s for s in (self.solver, self.solver_version) if s) or "-"),
            ("Iterations:", format_number(self.iterations)),
            ("Wall time:", format_number(self.time, "seconds")),
            ("Build time:", format_number(self.build_time, "seconds")),
            ("Solve time:", format_number(self.solve_time, "seconds")),
        ]
        if self.extra.get("verified"):  # who computed objective and bound (optmodels.verify)
            right.append(("Verified by:", {"independent": "toolkit", "audited": "toolkit (audit)",
                                           "strategy": "strategy"}.get(
                                               self.extra["verified"], self.extra["verified"])))
        if n_support is not None:
            right.append(("Support vectors:", format_number(n_support)))
        rows = [_pair_cells(a, b) for a, b in itertools.zip_longest(left, right)]
        lines = ["=" * SUMMARY_WIDTH, "Solve result".center(SUMMARY_WIDTH).rstrip(),
                 "=" * SUMMARY_WIDTH, *rows]
        if names is not None:
            lines += ["-" * SUMMARY_WIDTH, coefficient_table(*self._coefficients(names))]
        return "\n".join([*lines, "=" * SUMMARY_WIDTH])

    def __str__(self) -> str:
        return self.summary()

    def _coefficients(self, names: list[str]) -> tuple[list[str], list[float]]:
        """``names`` with the values of ``x``, plus the intercept when the result has one."""
        x = [] if self.x is None else np.asarray(self.x, dtype=float).ravel().tolist()
        if len(names) != len(x):
            raise ValueError(
                f"summary(names=...) needs one name per entry of x ({len(x)}); got "
                f"{len(names)} names. Pass the feature names of a primal (coefficient) solution."
            )
        tail = next((k for k in ("intercept", "b") if self.extra.get(k) is not None), None)
        if tail is None:
            return list(names), x
        return [*names, "intercept"], [*x, float(self.extra[tail])]


SUMMARY_WIDTH = 78
"""Width of :meth:`SolveResult.summary` and :func:`coefficient_table`."""


def format_number(value: Any, kind: str = "value") -> str:
    """The one number format of the reports: ``None`` as "-", bools as yes/no, ints as they
    are, floats with 6 significant digits; ``kind="seconds"``: 3 significant digits and a unit
    ("2.93 s", "412 ms", "1234 s"); ``kind="gap"``: |gap| < 1e-12 shown as 0, else 3
    significant digits; ``kind="ratio"``: 2 significant digits and "x" ("4.1x", "12x");
    ``kind="megabytes"``: 3 significant digits and "MB" ("2.13 MB")."""
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if not np.isfinite(v):
        return str(v)
    if kind == "seconds":
        if 0 < v < 1.0:
            return f"{v * 1e3:.3g} ms"
        return f"{v:.0f} s" if v >= 1000 else f"{v:.3g} s"
    if kind == "gap":
        return "0" if abs(v) < 1e-12 else f"{v:.3g}"
    if kind == "ratio":
        return f"{v:.0f}x" if abs(v) >= 10 else f"{v:.2g}x"
    if kind == "megabytes":
        return f"{v:.0f} MB" if abs(v) >= 1000 else f"{v:.3g} MB"
    if kind != "value":
        raise ValueError(
            "format_number: kind must be 'value', 'seconds', 'gap', 'ratio' or 'megabytes'; "
            f"got {kind!r}."
        )
    return f"{v:.6g}"


def coefficient_table(names: list[str], values: list[float], header: str = "coef") -> str:
    """Names left, values right-aligned (:func:`format_number`), under a header row."""
    width = max([len(header), *(len(n) for n in names)])
    cells = [format_number(float(v)) for v in values]
    col = max([len(header), *(len(c) for c in cells)]) + 4
    rows = [f"{'':<{width}}{header:>{col}}"]
    rows += [f"{n:<{width}}{c:>{col}}" for n, c in zip(names, cells, strict=True)]
    return "\n".join(rows)


def _pair_cells(a: tuple[str, str] | None, b: tuple[str, str] | None) -> str:
    half = SUMMARY_WIDTH // 2
    left = "" if a is None else f"{a[0]:<16}{a[1]:>{half - 18}}"
    right = "" if b is None else f"{b[0]:<18}{b[1]:>{SUMMARY_WIDTH - half - 18}}"
    return f"{left:<{half}}{right}".rstrip()


def relative_gap(objective: float, bound: float | None, scale: float | None) -> float | None:
    """``(objective - bound) / scale``, or ``None`` without a finite bound.

    ``scale`` is the problem's natural scale (a positive number that scales with the data, so
    that the gap is invariant to rescaling); ``None`` or 0 falls back to
    ``max(|objective|, |bound|)``, and a gap of exactly 0 over a zero scale is 0. Round-off can
    make a valid gap slightly negative; values in ``[-ROUNDOFF_TOL, 0)`` read as 0. A larger
    negative gap is returned as it is: it means the bound is not a bound.
    """
    if bound is None or not np.isfinite(bound) or not np.isfinite(objective):
        return None
    diff = float(objective - bound)
    if not scale or not np.isfinite(scale) or scale <= 0:
        scale = max(abs(float(objective)), abs(float(bound)))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float(np.sign(diff)) * np.inf
    gap = diff / float(scale)
    return 0.0 if -ROUNDOFF_TOL <= gap < 0.0 else gap


def gap_within(gap: float | None, tol: float = CERTIFICATE_TOL,
               roundoff: float = ROUNDOFF_TOL) -> bool:
    """True when ``gap`` is known, not negative beyond ``roundoff`` (:func:`roundoff_tol`), at
    most ``tol``, and ``roundoff`` is below ``tol`` (else float64 cannot resolve the claim)."""
    return gap is not None and roundoff < tol and -roundoff <= gap <= tol


def uncertified_reason(gap: float | None, tol: float, roundoff: float) -> str:
    """Why a claim failed the certificate rule, for ``raw_status``."""
    if roundoff >= tol:
        return (f" (the objective is {roundoff / RESOLUTION:.1e} times its natural scale, so "
                f"float64 resolves its relative gap only to {roundoff:.0e}, above the "
                f"certificate tolerance {tol:.0e})")
    shown = "unknown" if gap is None else f"{gap:.1e}"
    return f" (relative gap {shown} above the certificate tolerance {tol:.0e})"


def solution_relative(distance: float, norm: float, decisions: float | None = None,
                      unit: float | None = None) -> float:
    """The solution rule's ratio (:data:`SOLUTION_TOL`): the smaller of ``distance / norm``
    and ``decisions / unit`` (the latter where both are given); 0 for a zero distance, inf for
    a nonzero one with nothing to measure it against."""
    if distance == 0.0:
        return 0.0
    ratios = [distance / norm if norm > 0 else float("inf")]
    if decisions is not None and unit is not None and unit > 0:
        ratios.append(decisions / unit)
    return float(min(ratios))


@dataclasses.dataclass(frozen=True)
class SolutionCertificate:
    """A problem's proven bounds on its solution (see :data:`SOLUTION_TOL`).

    ``distance``: ``||x - x*|| <=`` this (the problem's solution norm: ridge x, SVM / KLR w);
    ``decisions``: every training row's decision value is within this of the optimum's (None
    where not computed); ``norm``: ``||x||`` in the same norm, the distance's reference;
    ``unit``: the decision values' unit, the decisions' reference (None: not used)."""

    distance: float
    decisions: float | None
    norm: float
    unit: float | None = None

    @property
    def relative(self) -> float:
        """:func:`solution_relative` of the four."""
        return solution_relative(self.distance, self.norm, self.decisions, self.unit)


def strong_convexity_distance(gap: float, modulus: float) -> float:
    """``sqrt(2 G / mu)``: for f mu-strongly convex on a convex set with minimiser x*,
    ``f(x) - f* >= mu/2 ||x - x*||^2``, so an absolute gap ``G >= f(x) - f*`` bounds the
    distance (a negative round-off gap reads as 0)."""
    return float(np.sqrt(2.0 * max(float(gap), 0.0) / modulus))


def certify(
    res: SolveResult,
    scale: float | None,
    *,
    tol: float = CERTIFICATE_TOL,
    failure: TerminationCondition = TerminationCondition.CONVERGED,
    solution: SolutionCertificate | None = None,
) -> SolveResult:
    """Apply the one certificate rule to a result whose ``objective`` and ``bound`` are set.

    The gap is recomputed relative to ``scale``. A result that claims OPTIMAL / CERTIFIED keeps
    the claim (with ``solution_status`` OPTIMAL) only when :func:`gap_within` holds; otherwise it
    becomes ``failure`` (CONVERGED for a strategy that stopped on its own rule,
    NUMERICAL_ERROR for a solver whose "optimal" failed the check). A bound above the objective
    beyond round-off is a numerical error whatever was claimed.

    With ``solution`` (a problem whose optimum is unique), the claim also needs the proven
    distance to the optimum within :data:`SOLUTION_TOL` of the solution's norm, or the bound on
    the decision values within it of their unit; a result that passes the gap but not this
    becomes CONVERGED, with both numbers in ``raw_status``
    (the strategy should have refined; a full solve's answer is usable but not certified).
    """
    if solution is not None:
        res.solution_bound, res.decision_bound = solution.distance, solution.decisions
        res.solution_gap, res.solution_unique = solution.relative, True
    res.scale = None if scale is None else float(scale)
    res.certificate_tol = float(tol)
    if res.x is None:
        return res
    res.gap = relative_gap(res.objective, res.bound, res.scale)
    res.termination, res.solution_status, note = verdict(
        res.termination, res.solution_status, res.gap,
        roundoff_tol(res.objective, res.bound, res.scale), tol, failure)
    if res.termination in (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED) \
            and res.solution_certified is False:
        res.termination, res.solution_status = (TerminationCondition.CONVERGED,
                                                SolutionStatus.FEASIBLE)
        note += (f" (objective gap certified, but the solution is proven only within "
                 f"{res.solution_bound:.2e} of the optimum, relative "
                 f"{res.solution_gap:.1e} (the smaller of its norm's and the decisions' unit's), "
                 f"above the solution tolerance {res.solution_tol:.0e})")
    res.raw_status += note
    return res


def verdict(
    termination: TerminationCondition,
    status: SolutionStatus,
    gap: float | None,
    roundoff: float,
    tol: float = CERTIFICATE_TOL,
    failure: TerminationCondition = TerminationCondition.CONVERGED,
) -> tuple[TerminationCondition, SolutionStatus, str]:
    """The certificate rule of :func:`certify` on a termination and a relative gap:
    (termination, solution status, a note for ``raw_status``, empty when nothing changed).

    A gap below ``-roundoff`` is a NUMERICAL_ERROR whatever was claimed; a claimed OPTIMAL /
    CERTIFIED whose gap fails :func:`gap_within` becomes ``failure``; a claim that holds has an
    OPTIMAL solution. Anything else passes unchanged.
    """
    claimed = termination in (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED)
    if gap is not None and gap < -roundoff:
        return (TerminationCondition.NUMERICAL_ERROR, SolutionStatus.FEASIBLE,
                f" (bound above the objective: relative gap {gap:.1e})")
    if claimed and not gap_within(gap, tol, roundoff):
        shown = SolutionStatus.FEASIBLE if status is SolutionStatus.OPTIMAL else status
        return failure, shown, uncertified_reason(gap, tol, roundoff)
    return termination, SolutionStatus.OPTIMAL if claimed else status, ""
