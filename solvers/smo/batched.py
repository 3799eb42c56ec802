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
* Block: the columns Q_:w, w in W, that are not in the column cache are computed in one pass
  over X in row blocks of ROW_BLOCK rows (both cores; each block's rows of X stay in cache
  while all missing columns are computed on them). The cache keeps the most recently used
  columns (at least q) within ``cache_mb``, in float32 (as the core's) when Q does not fit
  the budget in float64 (``cache_dtype="auto"``): the gradient updates then carry Q's
  entries rounded to ~6e-8 relative. With a precomputed Q the cache is Q itself.
* Subproblem: min over alpha_W with alpha_N fixed, i.e. the same dual restricted to W with
  the local gradient g_W = G_W, solved by the core's pairwise SMO: i = argmax_{I_up cap W} m,
  j by the second-order gain -(m_i - m_t)^2 / a_it, a_it = Q_ii + Q_tt - 2 y_i y_t Q_it
  [+ h_i'' + h_t''], the two-variable step along (+y_i, -y_j) (closed form for the SVM,
  safeguarded Newton for KLR, snapping onto the bound that limits the step) and
  g_W += dalpha_i Q_Wi + dalpha_j Q_Wj [+ the change of h' at i, j]. It stops when the local
  violation is <= max(tol, ``inner_factor`` v) or after ``inner_steps`` steps.
* Gradient: G += Q_:W (alpha_W^new - alpha_W^old) over all n rows (the nonzero changes only),
  plus h'(alpha_w^new) - h'(alpha_w^old) at w in W for KLR.
* Stop when v <= tol (converged); when the pair steps taken reach ``max_iter`` (not
  converged); when a subproblem takes no step (stalled, as the core's NUMERICAL_ERROR).

Kernel entries per outer step: n times the columns missing from the cache (the core computes
at most two columns of length n per pair step, one at a time, re-reading all of X for each).
No shrinking: the block is always computed on all rows.

Measured (two Gaussian clouds, p = 10, RBF gamma 0.1, C = 1, tol 1e-3, 2 cores, cache 200 MB):
n = 5*10^4 SVM 12.0-13.6 s at q = 256 / 512 (solve_dual 33-35 s), KLR 41-48 s at q = 512
(solve_dual 148 s), the objectives within 1e-8 relative of solve_dual's. About 70% of the
time is the block fill (~3 ns per entry on 2 cores), the rest selection and gradient updates.
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np

from solvers.smo.core import (
    FASTMATH,
    DualSolution,
    _column_cache,
    _fill_contiguous,
    _hp,
    _hpp,
    _in_low,
    _in_up,
    _step_entropy,
    _step_quadratic,
    entropy_terms,
    index_set_extremes,
    q_times,
)
from solvers.smo.qmatrix import QMatrix

TAU = 1e-12
"""LIBSVM's tau' (the core's): the curvature used when a_it <= 0."""
ROW_BLOCK = 512
"""Rows per parallel task of a block fill and of the gradient update (X's p x ROW_BLOCK rows
stay in the L1 / L2 cache while every missing column is computed on them)."""
STATUS_CONVERGED, STATUS_ITERATION_LIMIT, STATUS_STALLED = 0, 1, 2


# ---------------------------------------------------------------- the n x q block
@numba.njit(cache=True, fastmath=FASTMATH, parallel=True)
def _fill_block(kind, XT, sqn, gamma, coef0, degree, y, cols, slots, nfill, Kc, buf):
    """Kc[slots[k]] = Q_:cols[k] for k < nfill, all n rows, in one pass over X.

    kind 0 linear, 1 rbf, 2 poly (as :func:`solvers.smo.core._fill_contiguous`); with
    kind 3 (Q given in full) the cache is Q itself and nothing is ever missing.
    """
    n = y.shape[0]
    p = XT.shape[0]
    XW = np.empty((nfill, p))  # the new columns' rows of X, contiguous
    for k in range(nfill):
        for r in range(p):
            XW[k, r] = XT[r, cols[k]]
    nb = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for b in numba.prange(nb):
        lo = b * ROW_BLOCK
        hi = min(n, lo + ROW_BLOCK)
        m = hi - lo
        tile = np.empty((p, m))  # this block's rows of X, local (measured 10-15% faster)
        for r in range(p):
            tile[r, :] = XT[r, lo:hi]
        acc = buf[lo:hi]
        for k in range(nfill):
            i = cols[k]
            _fill_contiguous(kind, tile, 0, m, sqn[lo:hi], gamma, coef0, degree, y[lo:hi], y[i],
                             XW[k], sqn[i], Kc[slots[k]][lo:hi], acc)


@numba.njit(cache=True, fastmath=FASTMATH, parallel=True)
def _grad_block(grad, Kc, slots, d, nnz):
    """grad += sum_k d[k] Kc[slots[k]] for k < nnz, in row blocks on all cores."""
    n = grad.shape[0]
    nb = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for b in numba.prange(nb):
        lo = b * ROW_BLOCK
        hi = min(n, lo + ROW_BLOCK)
        g = grad[lo:hi]
        for k in range(nnz):
            dk = d[k]
            col = Kc[slots[k]][lo:hi]
            for t in range(hi - lo):
                g[t] += col[t] * dk


@numba.njit(cache=True)
def _cache_columns(W, nw, slot_of, col_in, tick, clock, need, need_slot):
    """Slots for the columns of W[:nw] (LRU over the cache); the missing ones are returned in
    need[:count] / need_slot[:count] for :func:`_fill_block`. Returns count."""
    clock[0] += 1
    now = clock[0]
    for k in range(nw):  # W's cached columns are protected from eviction
        s = slot_of[W[k]]
        if s >= 0:
            tick[s] = now
    count = 0
    n_slots = col_in.shape[0]
    for k in range(nw):
        t = W[k]
        if slot_of[t] >= 0:
            continue
        s = 0
        best = tick[0]
        for r in range(1, n_slots):
            if tick[r] < best:
                best = tick[r]
                s = r
        old = col_in[s]
        if old >= 0:
            slot_of[old] = -1
        col_in[s] = t
        slot_of[t] = s
        tick[s] = now
        need[count] = t
        need_slot[count] = s
        count += 1
    return count


# ---------------------------------------------------------------- working set
@numba.njit(cache=True)
def _ranked(key, k):
    """Indices of the (at most) k largest keys above -inf, largest first (ties by index)."""
    n = key.shape[0]
    cnt = 0
    for t in range(n):
        if key[t] > -np.inf:
            cnt += 1
    k = min(k, cnt)
    if k == 0:
        return np.empty(0, np.int64)
    thr = np.partition(key, n - k)[n - k]
    m = 0
    for t in range(n):
        if key[t] >= thr and key[t] > -np.inf:
            m += 1
    idx = np.empty(m, np.int64)
    m = 0
    for t in range(n):
        if key[t] >= thr and key[t] > -np.inf:
            idx[m] = t
            m += 1
    order = np.argsort(-key[idx], kind="mergesort")
    return idx[order[:k]]


@numba.njit(cache=True)
def _take_next(ranked, pos, W, nw, in_w):
    """Append to W the next entry of ``ranked`` from ``pos`` on that is not in W yet;
    returns (position after it, |W|)."""
    while pos < ranked.shape[0] and in_w[ranked[pos]]:
        pos += 1
    if pos < ranked.shape[0]:
        W[nw] = ranked[pos]
        in_w[ranked[pos]] = True
        return pos + 1, nw + 1
    return pos, nw


@numba.njit(cache=True)
def _select(y, alpha, lo, up, grad, W, n_keep, q, in_w, kup, klow):
    """Refill W[n_keep:q] from the ranked violators (W[:n_keep] stay); returns
    (|W|, max_{I_up} m, min_{I_low} m)."""
    n = y.shape[0]
    gmax = -np.inf
    gmin = np.inf
    for t in range(n):
        m = -y[t] * grad[t]
        kup[t] = -np.inf
        klow[t] = -np.inf
        if _in_up(y[t], alpha[t], lo[t], up[t]):
            kup[t] = m
            gmax = max(gmax, m)
        if _in_low(y[t], alpha[t], lo[t], up[t]):
            klow[t] = -m
            gmin = min(gmin, m)
    need = q - n_keep
    for k in range(n_keep):
        in_w[W[k]] = True
    up_list = _ranked(kup, 2 * need + n_keep)
    low_list = _ranked(klow, 2 * need + n_keep)
    nw = n_keep
    pu = 0
    pl = 0
    while nw < q and (pu < up_list.shape[0] or pl < low_list.shape[0]):
        pu, nw = _take_next(up_list, pu, W, nw, in_w)
        if nw < q:
            pl, nw = _take_next(low_list, pl, W, nw, in_w)
    for k in range(nw):
        in_w[W[k]] = False
    return nw, gmax, gmin


# ---------------------------------------------------------------- the subproblem
@numba.njit(cache=True)
def _pair_step(i, j, gmax, Qw, y, a, b, g, lo, up, cent, qd, hdd, ent):
    """One two-variable step of the core on the local arrays (indices into W); False when the
    pair cannot move in floating point."""
    yi = y[i]
    yj = y[j]
    bgap = gmax - (-yj * g[j])
    if ent:  # room to the upper bound from beta = C - alpha (exact near C)
        si = b[i] - (cent[i] - up[i]) if yi > 0.0 else a[i] - lo[i]
        sj = a[j] - lo[j] if yj > 0.0 else b[j] - (cent[j] - up[j])
    else:
        si = up[i] - a[i] if yi > 0.0 else a[i] - lo[i]
        sj = a[j] - lo[j] if yj > 0.0 else up[j] - a[j]
    smax = si if si < sj else sj
    aq = qd[i] + qd[j] - 2.0 * yi * yj * Qw[i, j]
    if ent:
        s = _step_entropy(a[i], a[j], b[i], b[j], yi, yj, bgap, aq, smax)
    else:
        s = _step_quadratic(bgap, aq, smax)
    ai_old, aj_old, bi_old, bj_old = a[i], a[j], b[i], b[j]
    ai_new = ai_old + s * yi
    aj_new = aj_old - s * yj
    bi_new = bi_old - s * yi
    bj_new = bj_old + s * yj
    if s >= smax:  # snap the variable(s) that define s_max exactly onto the bound
        if si <= sj:
            ai_new = up[i] if yi > 0.0 else lo[i]
            bi_new = cent[i] - ai_new if yi < 0.0 else cent[i] - up[i]
        if sj <= si:
            aj_new = lo[j] if yj > 0.0 else up[j]
            bj_new = cent[j] - aj_new if yj > 0.0 else cent[j] - up[j]
    ai_new = min(max(ai_new, lo[i]), up[i])
    aj_new = min(max(aj_new, lo[j]), up[j])
    dai = ai_new - ai_old
    daj = aj_new - aj_old
    if dai == 0.0 and daj == 0.0 and (not ent or (bi_new == bi_old and bj_new == bj_old)):
        return False
    a[i] = ai_new
    a[j] = aj_new
    qi = Qw[i]
    qj = Qw[j]
    for t in range(g.shape[0]):
        g[t] += qi[t] * dai + qj[t] * daj
    if ent:
        b[i] = bi_new
        b[j] = bj_new
        g[i] += _hp(ai_new, bi_new) - _hp(ai_old, bi_old)
        g[j] += _hp(aj_new, bj_new) - _hp(aj_old, bj_old)
        hdd[i] = _hpp(ai_new, bi_new)
        hdd[j] = _hpp(aj_new, bj_new)
    return True


@numba.njit(cache=True)
def _inner_smo(Qw, y, a, b, g, lo, up, cent, qd, hdd, ent, stop, cap):
    """Pairwise second-order SMO on the subproblem until its violation <= ``stop`` or ``cap``
    steps. Returns (steps, stalled)."""
    q = y.shape[0]
    steps = 0
    while steps < cap:
        gmax = -np.inf
        i = -1
        for t in range(q):
            if _in_up(y[t], a[t], lo[t], up[t]):
                m = -y[t] * g[t]
                if m >= gmax:
                    gmax = m
                    i = t
        if i < 0:
            break
        gmin = np.inf
        j = -1
        base = qd[i] + hdd[i]
        qi = Qw[i]
        best = np.inf
        for t in range(q):
            if _in_low(y[t], a[t], lo[t], up[t]):
                m = -y[t] * g[t]
                if m < gmin:
                    gmin = m
                bgap = gmax - m
                if bgap > 0.0:
                    c = base + qd[t] + hdd[t] - 2.0 * y[i] * y[t] * qi[t]
                    if c <= 0.0:
                        c = TAU
                    gain = -bgap * bgap / c
                    if gain <= best:
                        best = gain
                        j = t
        if gmax - gmin <= stop or j < 0:
            break
        if not _pair_step(i, j, gmax, Qw, y, a, b, g, lo, up, cent, qd, hdd, ent):
            return steps, True
        steps += 1
    return steps, False


# ---------------------------------------------------------------- the outer loop
@numba.njit(cache=True)
def _batched_loop(kind, XT, sqn, gamma, coef0, degree, y, lo, up, ent, cent,
                  alpha, beta, grad, qd, tol, max_iter, q, n_keep, inner_factor, inner_steps,
                  Kc, trace, verbose):
    """Run the batched SMO in place on alpha / beta / grad. ``Kc``: the column cache
    (n_slots >= q rows of length n), or Q itself for kind 3. ``trace[k]`` = (pair steps so
    far, violation) of outer step k while it has room. Returns (outer steps, pair steps,
    status, kernel entries)."""
    n = y.shape[0]
    n_slots = Kc.shape[0]
    slot_of = np.arange(n) if kind == 3 else -np.ones(n, np.int64)
    col_in = np.arange(n) if kind == 3 else -np.ones(n_slots, np.int64)
    tick = np.zeros(n_slots, np.int64)
    clock = np.zeros(1, np.int64)
    buf = np.empty(n)
    in_w = np.zeros(n, np.bool_)
    kup = np.empty(n)
    klow = np.empty(n)
    W = np.empty(q, np.int64)
    W_prev = np.empty(q, np.int64)
    need = np.empty(q, np.int64)
    need_slot = np.empty(q, np.int64)
    sl = np.empty(q, np.int64)
    d = np.empty(q)
    Qw = np.empty((q, q))
    yw, aw, bw, gw = np.empty(q), np.empty(q), np.empty(q), np.empty(q)
    low, upw, cw, qdw, hw = np.empty(q), np.empty(q), np.empty(q), np.empty(q), np.zeros(q)
    outer = 0
    steps = 0
    evals = 0
    status = STATUS_CONVERGED
    nw = 0
    while True:
        keep = min(n_keep, nw) if outer > 0 else 0
        for k in range(keep):  # the newest entries of the previous W stay, in front
            W_prev[k] = W[nw - keep + k]
        for k in range(keep):
            W[k] = W_prev[k]
        nw, gmax, gmin = _select(y, alpha, lo, up, grad, W, keep, q, in_w, kup, klow)
        if outer < trace.shape[0]:
            trace[outer, 0] = steps
            trace[outer, 1] = gmax - gmin
        if gmax - gmin <= tol:
            break
        if steps >= max_iter:
            status = STATUS_ITERATION_LIMIT
            break
        outer += 1
        if verbose and outer % 200 == 0:
            print("smo: working set", q, "outer step", outer, "pair steps", steps,
                  "violation", gmax - gmin)
        cnt = _cache_columns(W, nw, slot_of, col_in, tick, clock, need, need_slot)
        if cnt > 0:
            _fill_block(kind, XT, sqn, gamma, coef0, degree, y, need, need_slot, cnt, Kc, buf)
            evals += cnt * n
        for k in range(nw):
            t = W[k]
            sl[k] = slot_of[t]
            yw[k], aw[k], bw[k], gw[k] = y[t], alpha[t], beta[t], grad[t]
            low[k], upw[k], cw[k], qdw[k] = lo[t], up[t], cent[t], qd[t]
            if ent:
                hw[k] = _hpp(alpha[t], beta[t])
        for r in range(nw):
            col = Kc[sl[r]]
            for k in range(nw):
                Qw[k, r] = col[W[k]]
        stop = max(tol, inner_factor * (gmax - gmin))
        cap = min(inner_steps, max_iter - steps)
        s, stalled = _inner_smo(Qw[:nw, :nw], yw[:nw], aw[:nw], bw[:nw], gw[:nw], low[:nw],
                                upw[:nw], cw[:nw], qdw[:nw], hw[:nw], ent, stop, cap)
        steps += s
        nnz = 0
        for k in range(nw):
            t = W[k]
            dk = aw[k] - alpha[t]
            if dk != 0.0:
                d[nnz] = dk
                sl[nnz] = slot_of[t]
                nnz += 1
        if nnz > 0:
            _grad_block(grad, Kc, sl, d, nnz)
        for k in range(nw):
            t = W[k]
            if ent:
                grad[t] += _hp(aw[k], bw[k]) - _hp(alpha[t], beta[t])
                beta[t] = bw[k]
            alpha[t] = aw[k]
        if s == 0:
            status = STATUS_STALLED
            break
    return outer, steps, status, evals


# ---------------------------------------------------------------- Python entry point
@dataclasses.dataclass
class BatchedDualSolution(DualSolution):
    """:class:`~solvers.smo.core.DualSolution` plus the outer steps of the batched solver
    (``iterations`` counts the pair steps of all subproblems)."""

    outer_iterations: int = 0


def _check_int(value: object, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"'{name}' must be an integer >= {least}; got {value!r}.")
    return int(value)


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
) -> BatchedDualSolution:
    """Minimise 1/2 a'Qa + p'a + sum h_i(a_i) s.t. y'a = 0, l <= a <= u by batched SMO.

    Parameters as :func:`solvers.smo.core.solve_dual` (``shrinking`` and ``cache`` are
    accepted and ignored: no shrinking; ``verbose`` prints a line every 200 outer steps;
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
    """
    del shrinking, cache
    y = np.ascontiguousarray(y, dtype=float)
    n = y.size
    q = min(_check_int(working_set, "working_set", 2), n)
    if not 0.0 <= keep < 1.0:
        raise ValueError(f"'keep' must be a fraction in [0, 1); got {keep!r}.")
    if not 0.0 <= inner_factor <= 1.0:
        raise ValueError(f"'inner_factor' must be in [0, 1]; got {inner_factor!r}.")
    cap = 10 * q if inner_steps is None else _check_int(inner_steps, "inner_steps", 1)
    if not (np.isfinite(cache_mb) and cache_mb > 0):
        raise ValueError(f"'cache_mb' must be a positive number of megabytes; got {cache_mb!r}.")
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
    trace = np.full((4096, 2), -1.0)
    outer, steps, status, evals = _batched_loop(
        spec.kind, spec.X, spec.sqnorm, spec.gamma, spec.coef0, spec.degree, y, lo, up,
        ent, cent, alpha, beta, grad, qd, float(tol), int(max_iter), q,
        int(math.floor(keep * q)), float(inner_factor), cap, Kc, trace, bool(verbose))
    m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
    hval, hp = entropy_terms(alpha, cent, beta) if ent else (np.zeros(1), 0.0)
    qa = grad - lin - hp
    objective = float(0.5 * alpha @ qa + lin @ alpha + hval.sum())
    converged = m_up - m_low <= tol and status != STATUS_ITERATION_LIMIT
    history = [{"iteration": int(s), "violation": float(max(v, 0.0))}
               for s, v in trace if s >= 0]
    return BatchedDualSolution(
        alpha, grad, int(steps), bool(converged), m_up, m_low, objective, qa,
        stalled=status == STATUS_STALLED and not converged, kernel_evals=int(evals),
        history=history, outer_iterations=int(outer))


__all__ = ["BatchedDualSolution", "solve_dual_batched"]
