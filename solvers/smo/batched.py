r"""Batched working-set SMO (after ThunderSVM): q variables per outer step, their n x q block of
Q in one pass, the q-variable subproblem by pairwise SMO on Q_WW.

The same problem as :mod:`solvers.smo.core`::

    min_alpha  f(alpha) = 1/2 alpha' Q alpha + p' alpha + sum_i h_i(alpha_i)
    s.t.       y' alpha = 0,   l_i <= alpha_i <= u_i,          Q_ij = y_i y_j K_ij

with h = 0 (SVM) or the KLR entropy h_i(a) = a log(a / C_i) + (C_i - a) log((C_i - a) / C_i)
(beta = C - alpha carried separately, as in the core). G = Q alpha + p + h'(alpha),
m_t = -y_t G_t, I_up / I_low as in the core; violation v = max_{I_up} m - min_{I_low} m.

Outer step k:

* Working set W (|W| = q): the newest ``keep`` q of the previous W stay (ThunderSVM keeps
  half); the others are refilled by taking, alternately, the next largest m_t in I_up and
  the next smallest m_t in I_low, skipping variables already in W. W always holds
  argmax_{I_up} m and argmin_{I_low} m, so the subproblem's first violation is v.
* Block: Q_WW for the subproblem, from the cached columns and, for a column not in the cache,
  its q entries at W computed directly. The cache keeps the most recently used columns (at
  least q) within ``cache_mb``, in float32 (as the core's) when Q does not fit the budget in
  float64 (``cache_dtype="auto"``): the gradient updates then carry Q's entries rounded to
  ~6e-8 relative, and the directly computed entries are rounded the same way. With a
  precomputed Q the cache is Q itself.
* Subproblem: min over alpha_W with alpha_N fixed, i.e. the same dual restricted to W with
  the local gradient g_W = G_W, solved by the core's pairwise SMO: i = argmax_{I_up cap W} m,
  j by the second-order gain -(m_i - m_t)^2 / a_it, a_it = Q_ii + Q_tt - 2 y_i y_t Q_it
  [+ h_i'' + h_t''], the two-variable step along (+y_i, -y_j) (closed form for the SVM,
  safeguarded Newton for KLR, snapping onto the bound that limits the step) and
  g_W += dalpha_i Q_Wi + dalpha_j Q_Wj [+ the change of h' at i, j]. It stops when the local
  violation is <= max(tol, ``inner_factor`` v) or after ``inner_steps`` steps.
* Gradient: G += Q_:W (alpha_W^new - alpha_W^old) over all n rows (the nonzero changes only),
  plus h'(alpha_w^new) - h'(alpha_w^old) at w in W for KLR. The columns missing from the
  cache are computed, for the variables that moved only, in the same pass over X, in row
  blocks of ROW_BLOCK rows (a block's rows of X, and then its rows of the new columns, stay
  in the CPU cache while they are used: :func:`_fill_and_update`), on both cores when the
  pass's work pays for a fork / join (kernel.hpp's PARALLEL_WORK, ~1 ms serial); the slot of
  a variable that did not move goes back to the cache. Measured at n = 5*10^4 (clouds, RBF):
  the SVM's kernel values 2.96e9 -> 2.63e9, KLR's the same (its every variable moves).
* Stop when v <= tol (converged); when the pair steps taken reach ``max_iter`` (not
  converged); when a subproblem takes no step (stalled, as the core's NUMERICAL_ERROR); for
  KLR given ``gap_scale``, also when the gap, checked every GAP_EVERY outer steps by the
  core's ``klr_gap_stop`` (dual_terms.hpp), is within the core's GAP_REL (converged,
  ``gap_stopped``).

Kernel entries per outer step: n per column missing from the cache whose variable moved, plus
q per missing column for Q_WW (the core computes at most two columns of length n per pair
step, one at a time, re-reading all of X for each).

Shrinking (``shrinking=True``, LIBSVM's rule as in the core; not with Q given in full): before
the outer step that reaches min(n, SHRINK_EVERY) pair steps since the last check, t is dropped
when it lies in I_up only with m_t < min_{I_low} m, in I_low only with m_t > max_{I_up} m (in
neither: l = u); a check shrinks only when it drops at least SHRINK_MIN_FRACTION of the active
variables. The loop then works on compacted copies of the active variables (X's active
columns, y, alpha, G, ... contiguous; cached columns compacted in place to the active rows,
those of dropped variables evicted), so the block fill, the gradient update and the selection
run on the active rows only. For a shrunk row t the loop keeps
G_bar_t = sum_{s at a bound} alpha_s Q_ts: when t is dropped it is G_t - p_t [- h'_t] -
sum_{free s} alpha_s Q_ts (free x dropped kernel entries), and after each subproblem every
w in W whose bound share (alpha_w at a bound, else 0) changed adds its change times Q_tw
(those columns on the shrunk rows only). The shrunk rows' gradient is rebuilt as
G_t = G_bar_t + p_t [+ h'_t] + sum_{free s} alpha_s Q_ts (free x shrunk entries), every
variable made active again and the cache emptied (its columns lack the shrunk rows): the
first time a check sees a violation <= 10 tol (then shrinking goes on), when the violation on
the active set is <= tol (the stopping test is then repeated on all variables; the loop goes on
if it fails) and at an iteration limit or stall. KLR's variables stay strictly inside the box,
so it never shrinks (the run is the same as without).

The loop is compiled C++ (solvers/_core/src/_batched.cpp, class BatchedSolver; OpenMP over the
row blocks, the GIL released), a port of the former numba code taking the same steps (same pair
steps, outer steps and objective bit for bit on the reference runs).

Measured with the numba code (two Gaussian clouds, p = 10, RBF gamma 0.1, C = 1, tol 1e-3,
2 cores, cache 200 MB): n = 5*10^4 SVM without shrinking 12.0-13.6 s at q = 256 / 512
(solve_dual 33-35 s), KLR 41-48 s at q = 512 (solve_dual 148 s), the objectives within 1e-8
relative of solve_dual's.
About 70% of the time is the block fill (~3 ns per entry on 2 cores), the rest selection and
gradient updates. With shrinking (q = 256, solve_dual at tol 1e-3): 3.45e9 -> 2.67e9 kernel
entries, of which 0.18e9 G_bar updates and 0.18e9 the two rebuilds (1875 free variables);
nothing can be dropped in the first ~20% of the pair steps, where most entries are computed.
The certified smo_svm fit (which refines to tol 1e-4): 4.12e9 -> 2.96e9 entries, 13.6-16.2 s
-> 8.2-12.2 s (same session, fresh processes). At n = 10^4 the float32 cache holds half of Q,
so the columns lost at each rebuild cost more than shrinking saves (1.0e8 vs 0.75e8 entries,
the same time, ~0.5-0.85 s).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from solvers._core import _batched
from solvers.progress import Progress
from solvers.smo.core import (
    GAP_REL,
    GAP_SOLUTION,
    STATUS_GAP,
    STATUS_INTERRUPTED,
    STATUS_ITERATION_LIMIT,
    STATUS_STALLED,
    DualSolution,
    _column_cache,
    entropy_terms,
    index_set_extremes,
    q_times,
)
from solvers.smo.qmatrix import QMatrix
from solvers.validation import check_int, check_number, check_positive

ROW_BLOCK: int = _batched.ROW_BLOCK  # 512
"""Rows per parallel task of a block fill and of the gradient update (X's p x ROW_BLOCK rows
stay in the L1 / L2 cache while every missing column is computed on them)."""
SHRINK_EVERY = 1000
"""Pair steps between shrinking checks (LIBSVM: min(n, 1000) iterations); a check runs before
the working set of the outer step that reaches them."""
GAP_EVERY: int = _batched.GAP_EVERY  # 10
"""Outer steps between gap checks of a KLR run given ``gap_scale`` (one check is O(n) exp / log
evaluations, about a tenth of an outer step's kernel work at n = 5*10^4)."""
SHRINK_MIN_FRACTION = 0.05
"""A check shrinks only when it can drop at least this fraction of the active variables (each
shrink compacts the data and the cached columns)."""


# ---------------------------------------------------------------- compiled pieces
# The loop and its helpers are C++ (solvers/_core/src/_batched.cpp, class BatchedSolver); these
# wrappers expose three of its pieces with the former numba functions' signatures (tests check
# them against numpy).
def _fill_and_update(kind: int, XT: np.ndarray, sqn: np.ndarray, gamma: float, coef0: float,
                     degree: float, y: np.ndarray, cols: np.ndarray, slots: np.ndarray,
                     nfill: int, Kc: np.ndarray, buf: np.ndarray | None, grad: np.ndarray,
                     gslots: np.ndarray, d: np.ndarray, nnz: int) -> None:
    """Kc[slots[k]] = Q_:cols[k] (all n rows) for k < nfill, and G += sum_k d[k] Kc[gslots[k]]
    for k < nnz, in one pass over X in row blocks of ROW_BLOCK rows on all cores (serially
    below kernel.hpp's PARALLEL_WORK units of work)
    (Q_si = y_s y_i k(x_s, x_i); kind 0 linear, 1 rbf, 2 poly). G takes the entries as cached
    (rounded to float32 in a float32 cache). ``buf`` is unused (kept for the signature); Kc and
    grad are written in place (Kc float64 or float32, C-contiguous)."""
    del buf
    _batched.fill_and_update(
        int(kind), np.ascontiguousarray(XT, dtype=float), np.ascontiguousarray(sqn, dtype=float),
        float(gamma), float(coef0), float(degree), np.ascontiguousarray(y, dtype=float),
        np.ascontiguousarray(cols, dtype=np.int64), np.ascontiguousarray(slots, dtype=np.int64),
        int(nfill), Kc, grad, np.ascontiguousarray(gslots, dtype=np.int64),
        np.ascontiguousarray(d, dtype=float), int(nnz))


def _block_ww(kind: int, XT: np.ndarray, sqn: np.ndarray, gamma: float, coef0: float,
              degree: float, yw: np.ndarray, W: np.ndarray, nw: int, sl: np.ndarray,
              fresh: np.ndarray, outer: int, Kc: np.ndarray, Qw: np.ndarray, XWT: np.ndarray,
              sqw: np.ndarray, wcol: np.ndarray, buf: np.ndarray | None = None) -> int:
    """Qw[:nw, :nw] = Q_WW: Qw[k, r] = Q_{W[k] W[r]} from column r's cache slot sl[r], or, when
    W[r]'s column is new in this outer step (fresh[W[r]] == outer), its nw entries at W computed
    directly in the cache's precision (wcol's dtype, Kc's), as the column will hold them.
    XWT / sqw receive W's rows of X (p x nw) and squared norms. Returns the kernel entries
    computed."""
    del buf
    return int(_batched.block_ww(
        int(kind), np.ascontiguousarray(XT, dtype=float), np.ascontiguousarray(sqn, dtype=float),
        float(gamma), float(coef0), float(degree), np.ascontiguousarray(yw, dtype=float),
        np.ascontiguousarray(W, dtype=np.int64), int(nw), np.ascontiguousarray(sl, dtype=np.int64),
        np.ascontiguousarray(fresh, dtype=np.int64), int(outer), Kc, Qw, XWT, sqw, wcol))


def _ranked(key: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most) k largest keys above -inf, largest first (ties by index), by one
    pass with a heap of the best k (measured in numba at n = 5*10^4, k = 384: 0.07 ms against
    0.54 ms for a threshold from a partition)."""
    return _batched.ranked(np.ascontiguousarray(key, dtype=float), int(k))


# ---------------------------------------------------------------- Python entry point
@dataclasses.dataclass
class GbarCarry:
    """G_bar_t = sum_{s at a bound} alpha_s Q_ts where the batched loop knew it at its end (the
    rows shrunk then or un-shrunk by its final check; NaN elsewhere), handed to the run that
    continues from that alpha (a refinement round): its first shrink takes these values
    instead of computing free x dropped kernel entries (at n = 10^4, 637 free variables: 6e6
    entries a round)."""

    gbar: np.ndarray
    alpha_end: np.ndarray
    box_end: tuple[np.ndarray, np.ndarray]

    def start(self, alpha: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """The G_bar to start a run from ``alpha`` in [lower, upper]: the carried one when the
        alpha and box are those it belongs to, else all unknown (NaN)."""
        if (np.array_equal(self.alpha_end, alpha) and np.array_equal(self.box_end[0], lower)
                and np.array_equal(self.box_end[1], upper)):
            return self.gbar.copy()
        return np.full(alpha.size, np.nan)


@dataclasses.dataclass
class BatchedDualSolution(DualSolution):
    """:class:`~solvers.smo.core.DualSolution` plus the outer steps of the batched solver
    (``iterations`` counts the pair steps of all subproblems)."""

    outer_iterations: int = 0


def solve_dual_batched(
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
    working_set: int = 256,
    keep: float = 0.5,
    inner_factor: float = 0.1,
    inner_steps: int | None = None,
    cache_mb: float = 200.0,
    shrinking: bool = True,
    cache_dtype: str = "auto",
    verbose: bool = False,
    cache: object | None = None,
    gap_scale: float = 0.0,
    gap_rel: float = GAP_REL,
    gap_wfloor: float = 0.0,
    progress: Progress | None = None,
    offset: int = 0,
    resume: bool = False,
) -> BatchedDualSolution:
    """Minimise 1/2 a'Qa + p'a + sum h_i(a_i) s.t. y'a = 0, l <= a <= u by batched SMO.

    Parameters as :func:`solvers.smo.core.solve_dual` (``shrinking``: see the module
    docstring; ``cache``: the previous run's :class:`GbarCarry` (its ``cache``) when continuing
    it, else None; ``verbose`` prints a line every 200 outer
    steps and at each shrink / rebuild;
    ``cache_dtype`` as there: "auto" keeps float32 columns when Q does not fit ``cache_mb`` in
    float64), plus

    working_set : int
        q, the variables per outer step (>= 2; capped at n).
    keep : float in [0, 1)
        Fraction of W carried to the next outer step (its newest entries; ThunderSVM: 1/2).
    inner_factor : float in [0, 1]
        A subproblem stops when its violation is <= max(tol, inner_factor * v).
    inner_steps : int, optional
        Cap on one subproblem's pair steps (default 10 q).
    cache_mb : float
        Budget of the column cache (at least q columns are kept whatever the budget).
    gap_scale, gap_rel, gap_wfloor : float
        As :func:`solvers.smo.core.solve_dual`'s (checked every GAP_EVERY outer steps).
    progress, offset :
        As :func:`solvers.smo.core.solve_dual`'s (the loop reports after an outer step).
    resume : bool
        As :func:`solvers.smo.core.solve_dual`'s: the first shrinking check before the first
        outer step instead of after min(n, SHRINK_EVERY) pair steps, and no early un-shrink
        (a refinement round; with ``cache`` its first shrink takes the carried G_bar).
    """
    y = np.ascontiguousarray(y, dtype=float)
    n = y.size
    owner = "solve_dual_batched"
    q = min(check_int(working_set, "working_set", owner, low=2), n)
    keep = check_number(keep, "keep", owner, low=0.0, high=1.0, closed="left")
    inner_factor = check_number(inner_factor, "inner_factor", owner, low=0.0, high=1.0,
                                closed="both")
    cap = 10 * q if inner_steps is None else check_int(inner_steps, "inner_steps", owner)
    cache_mb = check_positive(cache_mb, "cache_mb", owner)
    lo = np.ascontiguousarray(lower, dtype=float)
    up = np.ascontiguousarray(upper, dtype=float)
    lin = np.ascontiguousarray(linear, dtype=float)
    alpha = np.array(alpha0, dtype=float)
    if np.any(alpha < lo) or np.any(alpha > up):
        raise ValueError("'alpha0' must lie inside the box [lower, upper]; clip it first.")
    ent = entropy_C is not None
    cent = np.ascontiguousarray(entropy_C if ent else np.ones_like(y), dtype=float)
    beta = cent - alpha
    qa = q_times(qmat, alpha * 1.0) if qa0 is None else np.array(qa0, dtype=float)
    grad = qa + lin
    if ent:
        grad += entropy_terms(alpha, cent, beta)[1]
    spec = qmat.compiled_spec()
    qd = np.ascontiguousarray(qmat.diag(), dtype=float)
    Kc = _column_cache(spec, n, cache_dtype, cache_mb)
    if Kc.shape[0] < q:  # at least the working set's columns
        Kc = np.empty((q, n), dtype=Kc.dtype)
    if not Kc.flags.writeable:  # a read-only full Q (never written: the compiled loop takes
        Kc = Kc.copy()  # one writable array for the cache and for Q)
    trace = np.full((4096, 4), -1.0)  # pair steps, violation, seconds, f(alpha)
    origin = time.perf_counter() if progress is None else progress.start
    began = time.perf_counter() - origin
    st = _batched.Settings()
    st.tol, st.max_iter, st.q = float(tol), int(max_iter), q
    st.n_keep, st.inner_factor, st.inner_steps = int(math.floor(keep * q)), float(inner_factor), cap
    st.shrink_every = SHRINK_EVERY if shrinking else 0
    st.min_drop, st.verbose = float(SHRINK_MIN_FRACTION), bool(verbose)
    st.gap_scale, st.gap_rel = (float(gap_scale) if ent else 0.0), float(gap_rel)
    st.gap_sol = GAP_SOLUTION if gap_wfloor > 0.0 else 0.0
    st.gap_wfloor = float(gap_wfloor)
    st.track = True
    st.resume = bool(resume)
    gbar = (cache.start(alpha, lo, up) if isinstance(cache, GbarCarry)
            else np.full(n, np.nan))
    st.report_every = progress.poll if progress is not None else 0.0
    outer, steps, status, evals, rebuilds, min_curv, tracked = _batched.batched_loop(
        spec.kind, np.ascontiguousarray(spec.X, dtype=float),
        np.ascontiguousarray(spec.sqnorm, dtype=float), float(spec.gamma), float(spec.coef0),
        float(spec.degree), y, lo, up, lin, cent, qd, ent, alpha, beta, grad, Kc, trace, st,
        None if progress is None else progress.callback(offset), gbar)
    m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
    hval, hp = entropy_terms(alpha, cent, beta) if ent else (np.zeros(1), 0.0)
    qa = grad - lin - hp
    objective = float(0.5 * alpha @ qa + lin @ alpha + hval.sum())
    converged = status == STATUS_GAP or (m_up - m_low <= tol and status not in
                                         (STATUS_ITERATION_LIMIT, STATUS_INTERRUPTED))
    used = trace[trace[:, 0] >= 0]  # unused slots hold -1 (filtered in numpy, as the core's)
    history = [{"iteration": int(s), "violation": max(v, 0.0), "time": began + t, "objective": f}
               for s, v, t, f in used.tolist()]
    if history and history[-1]["iteration"] >= steps:  # the last outer step is the end
        history.pop()
    history.append({"iteration": int(steps), "violation": float(max(m_up - m_low, 0.0)),
                    "time": time.perf_counter() - origin, "objective": objective})
    return BatchedDualSolution(
        alpha, grad, int(steps), bool(converged), m_up, m_low, objective, qa,
        stalled=status == STATUS_STALLED and not converged, kernel_evals=int(evals),
        reconstructions=int(rebuilds), history=history, outer_iterations=int(outer),
        gap_stopped=status == STATUS_GAP, interrupted=status == STATUS_INTERRUPTED,
        min_curvature=float(min_curv), tracked_objective=float(tracked),
        cache=GbarCarry(gbar, alpha.copy(), (lo.copy(), up.copy())))


__all__ = ["BatchedDualSolution", "GbarCarry", "solve_dual_batched"]
