r"""One generic SMO solver with second-order working-set selection (after LIBSVM's ``Solver``).

Problem (both the weighted SVM dual and the (sparse) KLR dual are instances)::

    min_alpha  f(alpha) = 1/2 alpha' Q alpha + p' alpha + sum_i h_i(alpha_i)
    s.t.       y' alpha = 0,   l_i <= alpha_i <= u_i,          Q_ij = y_i y_j K_ij

* SVM:  h = 0, p = -1, l = 0, u = C_i.
* KLR:  h_i(a) = C_i G(a / C_i) = a log(a / C_i) + (C_i - a) log((C_i - a) / C_i),
        h_i'(a) = log(a / (C_i - a)),  h_i''(a) = 1/a + 1/(C_i - a);  p = -lambda;
        l = gamma_i, u = C_i - gamma_i.

Gradient ``G = Q alpha + p + h'(alpha)``; ``m_t = -y_t G_t``.

* I_up  = {t : y_t = +1, alpha_t < u_t} U {t : y_t = -1, alpha_t > l_t}
* I_low = {t : y_t = -1, alpha_t < u_t} U {t : y_t = +1, alpha_t > l_t}
* Stationary iff max_{I_up} m <= min_{I_low} m; stop when the violation
  ``max_{I_up} m - min_{I_low} m <= tau``.
* Working set (Fan, Chen & Lin 2005): ``i = argmax_{I_up} m_t``; ``j = argmin`` over
  t in I_low with m_t < m_i of ``-(m_i - m_t)^2 / a_it``, where
  ``a_it = Q_ii + Q_tt - 2 y_i y_t Q_it [+ h_i''(alpha_i) + h_t''(alpha_t)]`` and
  ``a_it <= 0`` is replaced by ``tau' = 1e-12``.
* Direction: ``alpha_i += s y_i``, ``alpha_j -= s y_j`` (keeps y'alpha = 0), s in [0, s_max]
  from the boxes. ``phi(s) = f(alpha + s d)``, ``phi'(0) = -(m_i - m_j) < 0``.
  SVM: ``s* = min((m_i - m_j) / a_ij, s_max)`` (closed form).
  KLR: ``phi'(s) = -(m_i - m_j) + s a_ij + y_i [h_i'(alpha_i + s y_i) - h_i'(alpha_i)]
  - y_j [h_j'(alpha_j - s y_j) - h_j'(alpha_j)]`` is increasing; its root on [0, s_max] is
  found by Newton's method safeguarded by a bisection bracket.
* Gradient update: ``G += dalpha_i Q_:i + dalpha_j Q_:j`` (active rows), plus the change of
  h' at i and j.
* Shrinking (LIBSVM): every min(n, 1000) iterations, drop t that lies in I_up only with
  m_t < min_{I_low} m, or in I_low only with m_t > max_{I_up} m. The first time the
  violation is below 10 tau the gradient is reconstructed and every variable re-enters; at the
  end the gradient is reconstructed and the stopping test is repeated on all variables (the
  final un-shrink check). ``G_bar = sum_{t at a bound} alpha_t Q_:t`` makes the reconstruction
  cost one column per free variable.
* Kernel columns: computed in the loop from X (kept transposed, p x n), on the active rows
  only while shrunk, in an LRU cache of fixed-length slots within ``cache_mb`` (float32 slots,
  as LIBSVM's, when Q does not fit in float64). A partial column is completed later by
  computing just its missing rows; while more than n / GATHER_COST rows are active a missing
  column is computed whole (contiguous loops are 2.5x cheaper per entry than gathered ones).
  The RBF exp is computed by ``exp_parts`` of kernel.hpp (vectorizable, <= 2 ulp). A
  refinement round continues with the previous run's cache and G_bar (:class:`ColumnCache`).

Why compiled: each iteration does O(n) work split into a dozen short loops (selection, gradient
update, a kernel column on a cache miss). In Python or numpy each loop costs a call overhead of
microseconds and temporaries, which at 10^4 - 10^6 iterations dominates, and numpy cannot fuse
the selection pass. The loop, the column cache and the kernel evaluation are C++
(solvers/_core/src/_smo.cpp: ``Solver``, ``KernelColumns``; the pair maths in
solvers/_core/include/optmodels/dual_terms.hpp, the columns in kernel.hpp), run with the GIL
released; Ctrl-C is noticed every 1000 pair steps.

The batched variant (working sets of q > 2 variables) is :mod:`solvers.smo.batched`; the full
Q for small problems comes from :func:`solvers.smo.kernel_sums.q_matrix`.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from solvers._core import _smo
from solvers.progress import Progress
from solvers.result import CERTIFICATE_TOL, SOLUTION_TOL
from solvers.smo.qmatrix import KIND_MATRIX, KernelQMatrix, QMatrix, cache_slots

TAU = 1e-12
"""LIBSVM's tau': the curvature used when a_it <= 0."""
PARALLEL_FROM = 4096
"""Kernel columns of this many entries or more are computed on all threads (OpenMP, kernel.hpp;
this copy must equal the compiled constant, which a test checks). Measured at n = 5*10^4
(RBF, clouds, 65,656 SMO steps): 77.2 s serial, 71.9 s from 20,000 entries, 68.1 s from 4,096;
a single column of 5*10^4 entries takes 0.48 ms instead of 0.83 ms on 2 cores. Since then a
column also needs PARALLEL_WORK units of work (kernel.hpp: entries x (p + 8), 4x that gathered;
2^23) to go parallel, against a fork / join per step on a loaded machine: at p = 10 the pairwise
solver's columns stay serial below 4.6e5 rows."""
FILL_BLOCK = 2048
"""Entries per parallel task of a column."""
GATHER_COST = 2.5
"""Cost of an entry of a column on the active rows only (gathered by index) relative to one of a
whole column (contiguous): 0.88 vs 0.34 ms for 4.9*10^4 of 5*10^4 rows (RBF, p = 10). While
more than n / GATHER_COST rows are active a missing column is computed whole (and is then
complete for later reconstructions)."""

STATUS_CONVERGED, STATUS_ITERATION_LIMIT, STATUS_STALLED, STATUS_GAP = 0, 1, 2, 3
STATUS_INTERRUPTED = 4
"""The loop stopped on Ctrl-C (it checks for signals every 1000 pair steps)."""
STATUS_TIME_LIMIT = 5
"""The loop stopped at ``solve_dual(time_limit=...)``."""
GAP_STOP_SHARE = 0.9
"""A KLR run given ``gap_scale`` stops once its in-loop gap estimate is within this share of
CERTIFICATE_TOL (relative to the gap scale). The certificate computed afterwards from the same
gradient at the best b is no larger; the share leaves room for the two sums' round-off (about
1e-12 of the scale at n = 5*10^4)."""
GAP_REL = GAP_STOP_SHARE * CERTIFICATE_TOL
"""The relative gap at which both loops stop a KLR run given ``gap_scale``."""
GAP_SOLUTION = GAP_STOP_SHARE * SOLUTION_TOL**2 / 2
"""With ``gap_wfloor`` > 0 the loops' gap stop also waits for the solution rule: the absolute
gap within this share of max(||w(alpha)||^2, gap_wfloor) (``gap_wfloor`` = 1 / max_i Q_ii;
:attr:`solvers.smo.certificate.Certificate.solution_allowance` with the GAP_STOP_SHARE margin).
Without it a KLR run stopped at the relative gap and then ran a second round for the solution
rule, which at C = 1 on clouds needs about 30x less: two clouds, n = 10^4, the second round
recomputed 7.9e7 of the 3.3e8 kernel entries (a round starts with an empty column cache)."""
GAP_NEWTON_WITHIN = 20.0
GAP_NEWTON_STEPS = 4
"""A gap check within GAP_NEWTON_WITHIN times its target at the midpoint b tries again at b
after GAP_NEWTON_STEPS Newton steps towards the best b (each one O(n) pass)."""
GAP_EVERY_PAIRS = 1000
"""Pair steps between the pairwise loop's gap checks (min(n, this)); one check is O(n)."""


# ---------------------------------------------------------------- the KLR gap (compiled)
def _klr_gap(y: np.ndarray, alpha: np.ndarray, beta: np.ndarray, grad: np.ndarray,
             lin: np.ndarray, lo: np.ndarray, up: np.ndarray, cent: np.ndarray,
             b: float) -> tuple[float, float]:
    """(f(alpha), f(alpha) + P(w(alpha), b)) of the KLR dual from the loop's gradient, as the
    compiled loop computes it (``optmodels::klr_gap`` of dual_terms.hpp): qa = G - p - h'(alpha),
    t_i = qa_i + y_i b, z_i = -p_i - t_i, f = sum_i 1/2 alpha_i qa_i + h_i(alpha_i) + p_i alpha_i,
    gap(b) = sum_i alpha_i qa_i + h_i(alpha_i) + p_i alpha_i + loss_i(t_i) with
    loss_i = C_i log(1 + e^z_i) when a* = C_i sigma(z_i) lies in [l_i, u_i], else
    a* z_i - h_i(a*) at the clipped a*."""
    arr = [np.ascontiguousarray(v, dtype=float) for v in (y, alpha, beta, grad, lin, lo, up, cent)]
    return _smo.klr_gap(*arr, float(b))


def _klr_b_newton(y: np.ndarray, alpha: np.ndarray, beta: np.ndarray, grad: np.ndarray,
                  lin: np.ndarray, lo: np.ndarray, up: np.ndarray, cent: np.ndarray, b: float,
                  steps: int) -> float:
    """``steps`` Newton steps from b on g(b) = sum_i y_i a*_i(t_i(b)) = 0 (the best b), with
    g'(b) = -sum_{a*_i unclipped} C_i s_i (1 - s_i), s_i = sigma(z_i) (compiled:
    ``optmodels::klr_b_newton``)."""
    arr = [np.ascontiguousarray(v, dtype=float) for v in (y, alpha, beta, grad, lin, lo, up, cent)]
    return _smo.klr_b_newton(*arr, float(b), int(steps))


TRACE_LENGTH = 128
"""Slots of the violation trace: 1.25-spaced checkpoints cover ~10^12 iterations."""


@dataclasses.dataclass
class DualSolution:
    """What :func:`solve_dual` returns.

    Attributes
    ----------
    alpha, grad:
        The final iterate and the gradient G = Q alpha + p + h'(alpha) at it.
    iterations:
        Number of two-variable updates.
    converged:
        True when the violation reached ``tol`` (or the gap, see ``gap_stopped``); False at
        ``max_iter``.
    m_up, m_low:
        max_{I_up} m and min_{I_low} m over all variables (violation = m_up - m_low).
    objective:
        f(alpha).
    qa:
        Q alpha (for warm starts and the decision values on the training rows).
    kernel_evals, reconstructions:
        Kernel entries computed by the loop's column cache; gradient reconstructions.
    stalled:
        The selected pair could not move in floating point before the violation reached
        ``tol`` (the front ends report NUMERICAL_ERROR).
    """

    alpha: np.ndarray
    grad: np.ndarray
    iterations: int
    converged: bool
    m_up: float
    m_low: float
    objective: float
    qa: np.ndarray
    stalled: bool = False
    kernel_evals: int = 0
    reconstructions: int = 0
    history: list[dict] = dataclasses.field(default_factory=list)
    """(iteration, violation on the active set, time, objective) at geometrically spaced
    iterations, then the final violation over all variables. ``time``: seconds since the
    solve's start (``solve_dual(progress=...)``'s start, else the call's); ``objective``: f(alpha)
    as the loop keeps it, step by step (the last entry's: the exact f(alpha))."""
    cache: object | None = dataclasses.field(default=None, repr=False)
    """What a continuation reuses (pass it to its ``solve_dual(cache=...)``): the pairwise
    loop's :class:`ColumnCache` (columns and G_bar), the batched loop's
    :class:`~solvers.smo.batched.GbarCarry` (G_bar where known)."""
    gap_stopped: bool = False
    """The run stopped on its gap estimate (``solve_dual(gap_scale=...)``) before ``tol``."""
    time_limited: bool = False
    """The run stopped at ``solve_dual(time_limit=...)``."""
    interrupted: bool = False
    """The run stopped on Ctrl-C (:mod:`solvers.interrupt`); alpha and its gradient are the
    loop's current point, consistent with each other."""
    tracked_objective: float = math.nan
    """f(alpha) as the compiled loop kept it, step by step (for the progress lines and the
    history); ``objective`` recomputed from the gradient at the end is the one to use."""
    min_curvature: float = math.inf
    """The most negative kernel curvature ``K_ii + K_jj - 2 K_ij`` (= Q_ii + Q_jj - 2 y_i y_j
    Q_ij, without KLR's entropy terms) over the pairs the working-set scans met (+inf if none).
    Below zero it proves K indefinite: v = e_i - e_j has v'Kv < 0, so the smallest eigenvalue
    is at most half of it. LIBSVM replaces such a curvature by TAU and carries on; the dual
    "bound" is then no bound (:func:`optmodels.kernel_check.kernel_check`)."""

    @property
    def violation(self) -> float:
        """max_{I_up} m - min_{I_low} m (<= 0 when no pair violates)."""
        return self.m_up - self.m_low


def _column_cache(spec, n: int, cache_dtype: str, cache_mb: float) -> np.ndarray:
    """The n_slots x n array the batched solver caches columns in (or the full Q)."""
    n_slots, f32 = _cache_storage(spec.kind, n, cache_dtype, cache_mb)
    if spec.kind == KIND_MATRIX:
        return spec.Q
    return np.empty((n_slots, n), dtype=np.float32 if f32 else np.float64)


def _cache_storage(kind: int, n: int, cache_dtype: str, cache_mb: float) -> tuple[int, bool]:
    """(slots, float32?) of the loop's column cache: as many length-n columns as fit
    ``cache_mb``; "auto" stores float64 when the whole of Q fits the budget so, else float32."""
    if cache_dtype not in ("auto", "float64", "float32"):
        raise ValueError(
            f"'cache_dtype' must be 'auto', 'float64' or 'float32'; got {cache_dtype!r}."
        )
    if kind == KIND_MATRIX:
        return n, False
    if cache_dtype == "auto":
        cache_dtype = "float64" if 8.0 * n * n <= cache_mb * 2**20 else "float32"
    itemsize = np.dtype(cache_dtype).itemsize
    return cache_slots(n, cache_mb, itemsize), itemsize == 4


@dataclasses.dataclass
class ColumnCache:
    """The compiled loop's column cache and G_bar, handed from one run to its continuation.

    A refinement round (a tighter tol after ``tol``) continues from the previous run's alpha; with
    this it also keeps the cached kernel columns and G_bar = sum_{t at a bound} alpha_t Q_:t
    instead of recomputing them (at n = 10^4 the restart cost about as many kernel entries as
    the whole first run). The columns depend only on Q; G_bar only on alpha, so it is reused
    only when the continued run starts from exactly the alpha it was left with.
    """

    qmat: object  # the QMatrix the columns belong to
    dtype: str  # the cache_dtype asked for
    columns: _smo.KernelColumns  # the slots and their LRU / shrinking-generation bookkeeping
    gbar: np.ndarray  # G_bar at alpha_end
    alpha_end: np.ndarray | None = None  # the alpha the last run ended with
    box_end: tuple[np.ndarray, np.ndarray] | None = None  # and its box (lower, upper)

    @classmethod
    def empty(cls, qmat: QMatrix, n: int, cache_dtype: str) -> ColumnCache:
        """A cache with no column computed yet, within ``qmat.cache_mb`` (200 MB default)."""
        spec = qmat.compiled_spec()
        n_slots, f32 = _cache_storage(spec.kind, n, cache_dtype,
                                      getattr(qmat, "cache_mb", 200.0))
        if spec.kind == KIND_MATRIX:
            Q = np.ascontiguousarray(spec.Q, dtype=float)
            if Q.shape != (n, n):
                raise ValueError(f"Q must be {n} x {n}; got {Q.shape}.")
            columns = _smo.KernelColumns.matrix(Q, Q)
        else:
            columns = _smo.KernelColumns(n, n_slots, f32)
        return cls(qmat, cache_dtype, columns, np.zeros(n))

    def fits(self, qmat: QMatrix, cache_dtype: str) -> bool:
        """Whether this cache holds columns of ``qmat`` in the storage asked for."""
        return self.qmat is qmat and self.dtype == cache_dtype

    def gbar_for(self, alpha: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> bool:
        """Prepare G_bar for a run from ``alpha`` in the box [lower, upper]: True when it is kept
        (the alpha and box the last run ended with), else it is zeroed for the loop to
        accumulate."""
        if (self.alpha_end is not None and self.box_end is not None
                and np.array_equal(self.alpha_end, alpha)
                and np.array_equal(self.box_end[0], lower)
                and np.array_equal(self.box_end[1], upper)):
            return True
        self.gbar[:] = 0.0
        return False

    def ended_at(self, alpha: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Record the alpha and box that G_bar now belongs to."""
        self.alpha_end = alpha.copy()
        self.box_end = (lower.copy(), upper.copy())


BATCHED_WORKING_SET = 256
"""q of the batched solver when the user gives none. Measured (2 cores, RBF clouds p = 10,
tol 1e-3, fresh processes; pairwise SMO in brackets): n = 10^4 SVM q = 64 / 256 / 1024
2.02 / 0.95 / 1.05 s (2.0), KLR 3.03 / 2.29 / 3.6 s (4.74); n = 5*10^4 SVM 16.4 / 12.8-13.3 /
15.8 s, q = 512 12.0-13.6 (33-35), KLR 47.9 / 45.7 / 55.2 s, q = 512 40.7-47.8 (148)."""


def auto_working_set(qmat: QMatrix) -> int:
    """The working-set size used when none is given: 2 (pairwise SMO) for n <= 4 q, else
    :data:`BATCHED_WORKING_SET`. Measured (same data, tol 1e-3, whole certified solves,
    pairwise / batched): n = 1500 SVM 0.080 / 0.053 s, KLR (Q held in full) 0.157 / 0.151 s;
    n = 3000 SVM 0.40 / 0.13, KLR 0.45 / 0.37; n = 6000 KLR 1.41 / 0.51."""
    return BATCHED_WORKING_SET if qmat.n > 4 * BATCHED_WORKING_SET else 2


def termination_of(sol: DualSolution):
    """(TerminationCondition, SolutionStatus) of a :class:`DualSolution`."""
    from solvers.result import SolutionStatus, TerminationCondition

    if sol.converged:
        return TerminationCondition.OPTIMAL, SolutionStatus.OPTIMAL
    if sol.stalled:
        return TerminationCondition.NUMERICAL_ERROR, SolutionStatus.FEASIBLE
    if sol.time_limited:
        return TerminationCondition.TIME_LIMIT, SolutionStatus.FEASIBLE
    if sol.interrupted:
        return TerminationCondition.INTERRUPTED, SolutionStatus.FEASIBLE
    return TerminationCondition.ITERATION_LIMIT, SolutionStatus.FEASIBLE


def joined_history(runs: list[DualSolution]) -> list[dict]:
    """The violation histories of consecutive warm-started runs, iterations counted on."""
    out, offset = [], 0
    for r in runs:
        out += [{**h, "iteration": h["iteration"] + offset} for h in r.history]
        offset += r.iterations
    return out


def q_times(qmat: QMatrix, v: np.ndarray, block_elems: int = 2**24) -> np.ndarray:
    """Q v using only the columns where v != 0.

    A kernel Q (:class:`~solvers.smo.qmatrix.KernelQMatrix`) is never formed:
    ``(Q v)_s = y_s sum_t k(x_s, x_t) y_t v_t`` by the compiled kernel sums of
    :mod:`solvers.smo.kernel_sums`. Otherwise Q's columns are multiplied in blocks of at most
    ``block_elems`` entries.
    """
    nz = np.flatnonzero(v)
    out = np.zeros(qmat.n)
    if nz.size == 0:
        return out
    if isinstance(qmat, KernelQMatrix):
        from solvers.smo.kernel_sums import kernel_sums  # imports this module

        return qmat.y * kernel_sums(qmat.kernel, qmat.X, qmat.X[nz], qmat.y[nz] * v[nz])
    step = max(1, block_elems // max(qmat.n, 1))
    for start in range(0, nz.size, step):
        idx = nz[start : start + step]
        out += qmat.columns(idx) @ v[idx]
    return out


def entropy_terms(
    alpha: np.ndarray, cent: np.ndarray, beta: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(h(alpha), h'(alpha)) for h_i(a) = C_i G(a / C_i), elementwise; beta = C - alpha."""
    if beta is None:
        beta = cent - alpha
    h = alpha * np.log(alpha / cent) + beta * np.log(beta / cent)
    hp = np.log(alpha) - np.log(beta)
    return h, hp


def index_set_extremes(
    alpha: np.ndarray, grad: np.ndarray, y: np.ndarray, lo: np.ndarray, up: np.ndarray
) -> tuple[float, float]:
    """(max_{I_up} m, min_{I_low} m) with m = -y * grad, over all variables."""
    m = -y * grad
    pos = y > 0
    i_up = (pos & (alpha < up)) | (~pos & (alpha > lo))
    i_low = (~pos & (alpha < up)) | (pos & (alpha > lo))
    m_up = float(m[i_up].max()) if i_up.any() else -np.inf
    m_low = float(m[i_low].min()) if i_low.any() else np.inf
    return m_up, m_low


def solve_dual(
    qmat: QMatrix,
    y: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    linear: np.ndarray,
    *,
    entropy_C: np.ndarray | None = None,
    alpha0: np.ndarray,
    qa0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = 10_000_000,
    shrinking: bool = True,
    cache_dtype: str = "auto",
    verbose: bool = False,
    cache: object | None = None,
    working_set: int = 2,
    gap_scale: float = 0.0,
    gap_rel: float = GAP_REL,
    gap_wfloor: float = 0.0,
    time_limit: float | None = None,
    progress: Progress | None = None,
    offset: int = 0,
    resume: bool = False,
) -> DualSolution:
    """Minimise 1/2 a'Qa + p'a + sum h_i(a_i) s.t. y'a = 0, l <= a <= u by SMO.

    Parameters
    ----------
    qmat : QMatrix
        Q (its :meth:`compiled_spec` feeds the compiled loop).
    y : (n,) array of +-1
    lower, upper : (n,) arrays
        The box l, u (SVM: 0, C_i; KLR: gamma_i, C_i - gamma_i).
    linear : (n,) array
        p (SVM: -1; KLR: -lambda).
    entropy_C : (n,) array or None
        C_i of the entropy terms h_i (KLR); ``None`` for h = 0 (SVM).
    alpha0 : (n,) array
        A feasible start (y'alpha0 = 0, inside the box); not modified.
    qa0 : (n,) array, optional
        Q alpha0 if known (saves the kernel products of a warm start).
    tol : float
        tau, the stopping violation.
    max_iter : int
        Cap on two-variable updates; reaching it returns ``converged=False``.
    shrinking : bool
        LIBSVM's shrinking heuristic.
    cache_dtype : {"auto", "float64", "float32"}
        Storage of cached kernel columns. float32 (LIBSVM's ``Qfloat``) holds twice the columns
        in the same budget; Q entries are then rounded to ~6e-8 relative, which bounds the
        attainable accuracy (the objective to ~1e-7 relative). "auto": float64 when the whole
        of Q fits the budget in float64, else float32.
    verbose : bool
        A line every 10^5 iterations (iteration, violation, active variables, f(alpha), seconds)
        through :func:`solvers.progress.verbose_line`.
    cache : ColumnCache, optional
        The previous run's ``DualSolution.cache`` when continuing it (same ``qmat`` and
        ``cache_dtype``): its columns, and G_bar when ``alpha0`` is the alpha it ended with,
        are reused and updated in place. None: a new cache.
    working_set : int
        q = 2: this module's pairwise SMO (LIBSVM's). q > 2: the batched solver of
        :mod:`solvers.smo.batched` (q variables per outer step, their q columns of Q in one
        pass over the data; ``shrinking`` on the active rows, ``cache`` its
        :class:`~solvers.smo.batched.GbarCarry`); :func:`auto_working_set` picks q.
    gap_scale : float
        KLR only (``entropy_C`` given): > 0 also stops the run once the duality gap at the
        midpoint b, checked every few steps, is within GAP_STOP_SHARE * CERTIFICATE_TOL of the
        gap scale min(gap_scale, |f|, |bound|) (``gap_scale`` = the natural scale P(0, 0)),
        before the violation reaches ``tol``; the result then has ``gap_stopped`` set and counts
        as converged. 0: stop at ``tol`` only.
    gap_rel : float
        The relative gap of that stop (default GAP_REL); a run continued because the
        solution's distance was not yet certified asks for less
        (:meth:`solvers.smo.certificate.Certificate.gap_rel_target`).
    gap_wfloor : float
        > 0 (KLR given ``gap_scale``): the gap stop also waits for the solution rule, an
        absolute gap within GAP_SOLUTION max(alpha'Q alpha, gap_wfloor); pass 1 / max_i Q_ii.
        0: the relative gap only.
    time_limit : float, optional
        Seconds after which the pairwise loop stops (``time_limited`` set, not converged).
        None: no limit.
    progress : solvers.progress.Progress, optional
        The solve's progress lines: the compiled loop reports (iteration + ``offset``, f(alpha),
        violation, active variables) to it a few times a second when it is enabled; the
        history's times count from its start.
    offset : int
        Iterations done before this run (a continuation's), for the progress lines.
    resume : bool
        The run continues a converged run (a refinement round, from the alpha where a run at a
        looser tol stopped): that run's final check made every variable active and verified
        them all, so the first shrinking check comes before the first step rather than after
        min(n, 1000) steps (LIBSVM's counter; else the first thousand steps of each round ran
        on all n rows), and there is no early un-shrink at 10 tol (LIBSVM's guard against
        variables shrunk far from the optimum; the final un-shrink check still runs). The
        steps are those of a fresh run: shrinking only leaves out variables that the selection
        would not pick.

    Ctrl-C stops the compiled loop within 1000 pair steps; the solution then has
    ``interrupted`` set (:mod:`solvers.interrupt`).
    """
    gap_scale = float(gap_scale) if entropy_C is not None else 0.0
    if working_set > 2:
        from solvers.smo.batched import solve_dual_batched  # imports this module

        return solve_dual_batched(
            qmat, y, lower, upper, linear, entropy_C=entropy_C, alpha0=alpha0, qa0=qa0, tol=tol,
            max_iter=max_iter, working_set=working_set, cache_dtype=cache_dtype,
            cache_mb=getattr(qmat, "cache_mb", 200.0), shrinking=shrinking, verbose=verbose,
            gap_scale=gap_scale, gap_rel=gap_rel, gap_wfloor=gap_wfloor, progress=progress,
            offset=offset, resume=resume, cache=cache)
    y = np.ascontiguousarray(y, dtype=float)
    lo = np.ascontiguousarray(lower, dtype=float)
    up = np.ascontiguousarray(upper, dtype=float)
    lin = np.ascontiguousarray(linear, dtype=float)
    alpha = np.array(alpha0, dtype=float)
    if np.any(alpha < lo) or np.any(alpha > up):
        raise ValueError("'alpha0' must lie inside the box [lower, upper]; clip it first.")
    ent = entropy_C is not None
    cent = np.ascontiguousarray(entropy_C if ent else np.ones_like(y), dtype=float)
    beta = cent - alpha  # C - alpha, carried by the entropy step
    qa = q_times(qmat, alpha * 1.0) if qa0 is None else np.array(qa0, dtype=float)
    grad = qa + lin
    if ent:
        grad += entropy_terms(alpha, cent, beta)[1]
    spec = qmat.compiled_spec()
    qd = np.ascontiguousarray(qmat.diag(), dtype=float)
    if not isinstance(cache, ColumnCache) or not cache.fits(qmat, cache_dtype):
        cache = ColumnCache.empty(qmat, y.size, cache_dtype)
    warm = cache.gbar_for(alpha, lo, up)
    if spec.kind != KIND_MATRIX:
        cache.columns.set_kernel(spec.kind, np.ascontiguousarray(spec.X, dtype=float),
                                 np.ascontiguousarray(spec.sqnorm, dtype=float),
                                 float(spec.gamma), float(spec.coef0), float(spec.degree), y)
    trace_it = np.full(TRACE_LENGTH, -1, dtype=np.int64)
    trace_v, trace_t, trace_f = (np.zeros(TRACE_LENGTH) for _ in range(3))
    origin = time.perf_counter() if progress is None else progress.start
    began = time.perf_counter() - origin
    report = None if progress is None else progress.callback(offset)
    it, status, n_rebuild, n_kernel, min_curv, tracked = _smo.solve(
        cache.columns, y, lo, up, lin, cent, qd, ent, alpha, beta, grad, cache.gbar, warm,
        float(tol), int(max_iter), bool(shrinking), bool(verbose), trace_it, trace_v, trace_t,
        trace_f, gap_scale, float(gap_rel), float(time_limit) if time_limit is not None else 0.0,
        report, progress.poll if progress is not None else 0.0, True, bool(resume),
        GAP_SOLUTION if gap_wfloor > 0.0 else 0.0, float(gap_wfloor),
    )
    cache.ended_at(alpha, lo, up)
    m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
    hval, hp = entropy_terms(alpha, cent, beta) if ent else (np.zeros(1), 0.0)
    qa = grad - lin - hp
    objective = float(0.5 * alpha @ qa + lin @ alpha + hval.sum())
    converged = (status in (STATUS_CONVERGED, STATUS_GAP)
                 or (status == STATUS_STALLED and m_up - m_low <= tol))
    kept = trace_it >= 0  # the trace's unused slots hold -1; filter in numpy (a Python pass
    # over every slot cost ~3 ms a run, a small fit's whole loop)
    history = [{"iteration": i, "violation": v, "time": began + t, "objective": f}
               for i, v, t, f in zip(trace_it[kept].tolist(), trace_v[kept].tolist(),
                                     trace_t[kept].tolist(), trace_f[kept].tolist(), strict=True)]
    history.append({"iteration": int(it), "violation": float(max(m_up - m_low, 0.0)),
                    "time": time.perf_counter() - origin, "objective": objective})
    return DualSolution(alpha, grad, int(it), converged, m_up, m_low, objective, qa,
                        stalled=status == STATUS_STALLED, kernel_evals=int(n_kernel),
                        reconstructions=int(n_rebuild), history=history, cache=cache,
                        gap_stopped=status == STATUS_GAP,
                        time_limited=status == STATUS_TIME_LIMIT,
                        interrupted=status == STATUS_INTERRUPTED,
                        min_curvature=float(min_curv), tracked_objective=float(tracked))


__all__ = ["BATCHED_WORKING_SET", "ColumnCache", "DualSolution", "KIND_MATRIX", "TAU",
           "auto_working_set", "entropy_terms",
           "index_set_extremes", "joined_history", "q_times", "solve_dual", "termination_of"]
