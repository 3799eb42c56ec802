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
  blocks of ROW_BLOCK rows on both cores (a block's rows of X, and then its rows of the new
  columns, stay in the CPU cache while they are used: :func:`_fill_and_update`); the slot of
  a variable that did not move goes back to the cache. Measured at n = 5*10^4 (clouds, RBF):
  the SVM's kernel values 2.96e9 -> 2.63e9, KLR's the same (its every variable moves).
* Stop when v <= tol (converged); when the pair steps taken reach ``max_iter`` (not
  converged); when a subproblem takes no step (stalled, as the core's NUMERICAL_ERROR); for
  KLR given ``gap_scale``, also when the gap, checked every GAP_EVERY outer steps by the
  core's :func:`~solvers.smo.core._klr_gap_stop`, is within the core's GAP_REL (converged,
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

Measured (two Gaussian clouds, p = 10, RBF gamma 0.1, C = 1, tol 1e-3, 2 cores, cache 200 MB):
n = 5*10^4 SVM without shrinking 12.0-13.6 s at q = 256 / 512 (solve_dual 33-35 s), KLR
41-48 s at q = 512 (solve_dual 148 s), the objectives within 1e-8 relative of solve_dual's.
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

import numba
import numpy as np

from solvers.numba_cache import njit_cached
from solvers.smo.core import (
    FASTMATH,
    GAP_REL,
    STATUS_CONVERGED,
    STATUS_GAP,
    STATUS_ITERATION_LIMIT,
    STATUS_STALLED,
    TAU,
    DualSolution,
    _column_cache,
    _entropy_update,
    _fill_contiguous,
    _hp,
    _hpp,
    _in_low,
    _in_up,
    _klr_gap_stop,
    _pair_values,
    _shrinkable,
    entropy_terms,
    index_set_extremes,
    q_times,
)
from solvers.smo.qmatrix import QMatrix
from solvers.validation import check_int, check_number, check_positive

ROW_BLOCK = 512
"""Rows per parallel task of a block fill and of the gradient update (X's p x ROW_BLOCK rows
stay in the L1 / L2 cache while every missing column is computed on them)."""
SHRINK_EVERY = 1000
"""Pair steps between shrinking checks (LIBSVM: min(n, 1000) iterations); a check runs before
the working set of the outer step that reaches them."""
GAP_EVERY = 10
"""Outer steps between gap checks of a KLR run given ``gap_scale`` (one check is O(n) exp / log
evaluations, about a tenth of an outer step's kernel work at n = 5*10^4)."""
SHRINK_MIN_FRACTION = 0.05
"""A check shrinks only when it can drop at least this fraction of the active variables (each
shrink compacts the data and the cached columns)."""


# ---------------------------------------------------------------- the n x q block
@njit_cached()
def _columns_of(XT, cols, ncols):
    """The rows x_t of the columns t in cols[:ncols], contiguous (ncols x p)."""
    p = XT.shape[0]
    XW = np.empty((ncols, p))
    for k in range(ncols):
        for r in range(p):
            XW[k, r] = XT[r, cols[k]]
    return XW


@njit_cached(fastmath=FASTMATH, parallel=True)
def _fill_and_update(kind, XT, sqn, gamma, coef0, degree, y, cols, slots, nfill, Kc, buf, grad,
                     gslots, d, nnz):
    """Kc[slots[k]] = Q_:cols[k] (all n rows) for k < nfill, and G += sum_k d[k] Kc[gslots[k]]
    for k < nnz, in one pass over X in row blocks on all cores.

    kind 0 linear, 1 rbf, 2 poly (as :func:`solvers.smo.core._fill_contiguous`); with kind 3
    (Q given in full) the cache is Q itself and nothing is ever missing. A block's rows of X
    stay in the L1 / L2 cache while every new column is computed on them, and the block's rows
    of the new columns are still there when they are added to G (read back from Kc, so G takes
    the entries exactly as cached). As two passes, every new column was written to memory and
    read back for the update (for KLR at n = 5*10^4, where every variable of W moves, 5.5 s of
    gradient updates against 11.0 s of fills); measured on 128 new float32 columns and 256
    moved variables, n = 5*10^4: 6.3 + 3.4 ms as two passes, 8.8 ms in one.
    """
    n = y.shape[0]
    p = XT.shape[0]
    XW = _columns_of(XT, cols, nfill)  # the new columns' rows of X, contiguous
    nb = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for b in numba.prange(nb):
        lo = b * ROW_BLOCK
        hi = min(n, lo + ROW_BLOCK)
        m = hi - lo
        if nfill > 0:
            tile = np.empty((p, m))  # this block's rows of X, local (measured 10-15% faster)
            for r in range(p):
                tile[r, :] = XT[r, lo:hi]
            acc = buf[lo:hi]
            for k in range(nfill):
                i = cols[k]
                _fill_contiguous(kind, tile, 0, m, sqn[lo:hi], gamma, coef0, degree, y[lo:hi],
                                 y[i], XW[k], sqn[i], Kc[slots[k]][lo:hi], acc)
        g = grad[lo:hi]
        for k in range(nnz):
            dk = d[k]
            col = Kc[gslots[k]][lo:hi]
            for t in range(m):
                g[t] += col[t] * dk


@njit_cached()
def _cache_columns(W, nw, slot_of, col_in, tick, clock, need, need_slot):
    """Slots for the columns of W[:nw] (LRU over the cache); the missing ones are returned in
    need[:count] / need_slot[:count] for :func:`_fill_and_update`. Returns count."""
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


@njit_cached(fastmath=FASTMATH)
def _block_ww(kind, XT, sqn, gamma, coef0, degree, yw, W, nw, sl, fresh, outer, Kc, Qw, XWT,
              sqw, wcol, buf):
    """Qw[:nw, :nw] = Q_WW: column r from its cache slot sl[r], or, when W[r]'s column is new
    in this outer step (fresh[W[r]] == outer) and not computed yet, its nw entries at W
    computed here, with the fill's code and flags and in the cache's precision (wcol), as the
    column will hold them. XWT / sqw receive W's rows of X (p x nw) and squared norms. Returns
    the kernel entries computed."""
    p = XT.shape[0]
    evals = 0
    gathered = False
    for r in range(nw):
        if fresh[W[r]] == outer:
            if not gathered:
                for i in range(p):
                    for k in range(nw):
                        XWT[i, k] = XT[i, W[k]]
                for k in range(nw):
                    sqw[k] = sqn[W[k]]
                gathered = True
            _fill_contiguous(kind, XWT, 0, nw, sqw[:nw], gamma, coef0, degree, yw[:nw], yw[r],
                             XWT[:, r], sqw[r], wcol[:nw], buf[:nw])
            evals += nw
            for k in range(nw):
                Qw[k, r] = wcol[k]
        else:
            col = Kc[sl[r]]
            for k in range(nw):
                Qw[k, r] = col[W[k]]
    return evals


@njit_cached()
def _keep_moved(need, need_slot, cnt, moved, slot_of, col_in, tick):
    """Keep in need[:count] / need_slot[:count] the new columns whose variable moved (only those
    are computed); a slot of one that did not move goes back to the cache, first in line for
    reuse. Returns count."""
    count = 0
    for k in range(cnt):
        t = need[k]
        if moved[t]:
            need[count] = t
            need_slot[count] = need_slot[k]
            count += 1
        else:
            slot_of[t] = -1
            col_in[need_slot[k]] = -1
            tick[need_slot[k]] = 0
    return count


# ---------------------------------------------------------------- working set
@njit_cached(inline="always")
def _worse(va, ia, vb, ib):
    """(va, ia) ranks after (vb, ib): a smaller key, or the same key at a larger index."""
    return va < vb or (va == vb and ia > ib)


@njit_cached()
def _ranked(key, k):
    """Indices of the (at most) k largest keys above -inf, largest first (ties by index).

    One pass keeps the best k seen in a binary heap whose root is the worst of them (a key
    equal to the root's comes at a larger index, so it ranks after it and is skipped); the k
    kept are then sorted. Measured at n = 5*10^4, k = 384: 0.07 ms, against 0.54 ms for a
    threshold from numba's np.partition (about 10x slower than numpy's own); the whole
    working-set selection 2.1 -> 0.67 ms per outer step.
    """
    if k <= 0:
        return np.empty(0, np.int64)
    hv = np.empty(k)
    hi = np.empty(k, np.int64)
    size = 0
    for t in range(key.shape[0]):
        v = key[t]
        if not v > -np.inf:
            continue
        if size < k:  # insert at the end, sift up past better parents
            pos = size
            size += 1
            while pos > 0:
                parent = (pos - 1) >> 1
                if not _worse(v, t, hv[parent], hi[parent]):
                    break
                hv[pos] = hv[parent]
                hi[pos] = hi[parent]
                pos = parent
        elif v > hv[0]:  # replace the root, sift down past worse children
            pos = 0
            while True:
                c = 2 * pos + 1
                if c >= size:
                    break
                if c + 1 < size and _worse(hv[c + 1], hi[c + 1], hv[c], hi[c]):
                    c += 1
                if not _worse(hv[c], hi[c], v, t):
                    break
                hv[pos] = hv[c]
                hi[pos] = hi[c]
                pos = c
        else:
            continue
        hv[pos] = v
        hi[pos] = t
    by_index = np.argsort(hi[:size])
    idx = hi[:size][by_index]
    order = np.argsort(-hv[:size][by_index], kind="mergesort")
    return idx[order]


@njit_cached()
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


@njit_cached()
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
@njit_cached()
def _pair_step(i, j, gmax, Qw, y, a, b, g, lo, up, cent, qd, hdd, ent):
    """One two-variable step of the core on the local arrays (indices into W); False when the
    pair cannot move in floating point."""
    bgap = gmax - (-y[j] * g[j])
    aq = qd[i] + qd[j] - 2.0 * y[i] * y[j] * Qw[i, j]
    ai_old, aj_old, bi_old, bj_old = a[i], a[j], b[i], b[j]
    ai_new, aj_new, bi_new, bj_new = _pair_values(i, j, bgap, aq, y, a, b, lo, up, cent, ent)
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
        _entropy_update(i, j, ai_old, aj_old, bi_old, bj_old, bi_new, bj_new, a, b, g, hdd)
    return True


@njit_cached()
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


# ---------------------------------------------------------------- shrinking
@njit_cached(fastmath=FASTMATH, parallel=True)
def _rows_times(kind, XTr, sqnr, yr, XT, sqn, y, gamma, coef0, degree, cols, coef, ncols, out):
    """out[r] += sum_{k < ncols} coef[k] Q_{s_r, cols[k]} for the rows s_r held compacted in
    XTr / sqnr / yr (``cols`` index the full XT / sqn / y). The shrunk rows' share of the
    gradient; kernel entries: ncols * len(out)."""
    m_all = yr.shape[0]
    p = XT.shape[0]
    XW = _columns_of(XT, cols, ncols)
    nb = (m_all + ROW_BLOCK - 1) // ROW_BLOCK
    for b in numba.prange(nb):
        lo = b * ROW_BLOCK
        hi = min(m_all, lo + ROW_BLOCK)
        m = hi - lo
        tile = np.empty((p, m))
        for r in range(p):
            tile[r, :] = XTr[r, lo:hi]
        acc = np.empty(m)
        col = np.empty(m)
        o = out[lo:hi]
        for k in range(ncols):
            i = cols[k]
            _fill_contiguous(kind, tile, 0, m, sqnr[lo:hi], gamma, coef0, degree, yr[lo:hi], y[i],
                             XW[k], sqn[i], col, acc)
            c = coef[k]
            for t in range(m):
                o[t] += c * col[t]


@njit_cached()
def _rows_of(XT, rows):
    """XT restricted to the columns ``rows`` (p x len(rows)), contiguous."""
    p = XT.shape[0]
    m = rows.shape[0]
    XTr = np.empty((p, m))
    for r in range(p):
        src = XT[r]
        dst = XTr[r]
        for k in range(m):
            dst[k] = src[rows[k]]
    return XTr


@njit_cached()
def _free_of(act, alpha, lo, up, slot_of, Kc, rows, out):
    """(global indices, alpha) of the free variables l < alpha < u among the active ones.
    Those whose column is cached (slot_of >= 0; none when slot_of is empty) are not returned:
    out[r] -= alpha_s Q_{rows[r], s} is taken from the cache instead (rows: active positions)."""
    cnt = 0
    for k in range(act.shape[0]):
        if lo[k] < alpha[k] < up[k]:
            cnt += 1
    idx = np.empty(cnt, np.int64)
    val = np.empty(cnt)
    cnt = 0
    for k in range(act.shape[0]):
        if lo[k] < alpha[k] < up[k]:
            s = slot_of[k] if slot_of.shape[0] > 0 else -1
            if s >= 0:
                col = Kc[s]
                for r in range(rows.shape[0]):
                    out[r] -= alpha[k] * col[rows[r]]
            else:
                idx[cnt] = act[k]
                val[cnt] = alpha[k]
                cnt += 1
    return idx[:cnt], val[:cnt]


@njit_cached()
def _shrink_mask(y, alpha, lo, up, grad, gmax, gmin, keep):
    """LIBSVM's rule: keep[k] = False for k in I_up only with m_k < gmin, in I_low only with
    m_k > gmax, or in neither. Returns the number kept."""
    cnt = 0
    for k in range(y.shape[0]):
        drop = _shrinkable(y[k], alpha[k], lo[k], up[k], -y[k] * grad[k], gmax, gmin)
        keep[k] = not drop
        cnt += 0 if drop else 1
    return cnt


@njit_cached()
def _extremes_c(y, alpha, lo, up, grad):
    """(max_{I_up} m, min_{I_low} m) over the given (compacted) variables."""
    gmax = -np.inf
    gmin = np.inf
    for k in range(y.shape[0]):
        m = -y[k] * grad[k]
        if _in_up(y[k], alpha[k], lo[k], up[k]):
            gmax = max(gmax, m)
        if _in_low(y[k], alpha[k], lo[k], up[k]):
            gmin = min(gmin, m)
    return gmax, gmin


@njit_cached(parallel=True)
def _compact_cache(Kc, col_in, slot_of, newpos, kpos, tick):
    """Keep the cached columns of the variables that stay active, on the rows that stay active,
    kpos (ascending old positions): col[k] = col[kpos[k]] in place, a forward copy since
    kpos[k] >= k; evict the others. slot_of and col_in are renumbered by ``newpos`` (-1 for a
    dropped row)."""
    n_slots = col_in.shape[0]
    m = kpos.shape[0]
    for s in numba.prange(n_slots):
        c = col_in[s]
        if c >= 0 and newpos[c] >= 0:
            col = Kc[s]
            for k in range(m):
                col[k] = col[kpos[k]]
    for k in range(slot_of.shape[0]):
        slot_of[k] = -1
    for s in range(n_slots):
        c = col_in[s]
        if c >= 0 and newpos[c] >= 0:
            col_in[s] = newpos[c]
            slot_of[newpos[c]] = s
        else:
            col_in[s] = -1
            tick[s] = 0


@njit_cached()
def _bound_part(alpha, lo, up):
    """alpha on a bound, else 0 (its share of G_bar = sum_{t at a bound} alpha_t Q_:t)."""
    return alpha if (alpha == lo or alpha == up) else 0.0


@njit_cached()
def _gather(XT, sqn, y, lo, up, cent, qd, alpha, beta, grad, rows):
    """The per-variable arrays restricted to ``rows``, compacted (new contiguous arrays)."""
    return (_rows_of(XT, rows), sqn[rows], y[rows], lo[rows], up[rows], cent[rows], qd[rows],
            alpha[rows], beta[rows], grad[rows])


@njit_cached()
def _scatter(act, aa, ba, ga, alpha, beta, grad):
    """Write the active variables' alpha, beta, grad back to the full arrays."""
    for k in range(act.shape[0]):
        t = act[k]
        alpha[t] = aa[k]
        beta[t] = ba[k]
        grad[t] = ga[k]


@njit_cached()
def _shrunk_gradient(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta, grad,
                     act, aa, la, ua, inact, XTi, sqi, yI, bI):
    """grad_t = G_bar_t + p_t [+ h'_t] + sum_{free s} alpha_s Q_ts for the shrunk rows t (the
    active alpha already written back). Returns the kernel entries computed."""
    m = inact.shape[0]
    if m == 0:
        return 0
    out = bI.copy()
    for r in range(m):
        t = inact[r]
        out[r] += lin[t] + (_hp(alpha[t], beta[t]) if ent else 0.0)
    fidx, fval = _free_of(act, aa, la, ua, np.empty(0, np.int64), np.empty((0, 1)),
                          np.empty(0, np.int64), out)  # the shrunk rows are in no column
    _rows_times(kind, XTi, sqi, yI, XT, sqn, y, gamma, coef0, degree, fidx, fval,
                fidx.shape[0], out)
    for r in range(m):
        grad[inact[r]] = out[r]
    return fidx.shape[0] * m


@njit_cached()
def _unshrink(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta, grad, act, aa, ba,
              ga, la, ua, inact, XTi, sqi, yI, bI, W, nw, slot_of, col_in, tick, gbar, gbar_at,
              stamp):
    """Every variable active again: alpha / beta / grad written back, the shrunk rows' gradient
    rebuilt, W renumbered to rows, the cache emptied (its columns lack the shrunk rows). The
    shrunk rows' G_bar is kept in gbar (valid while gbar_at == stamp, i.e. until the next
    step, for a shrink right after). Returns the kernel entries computed."""
    _scatter(act, aa, ba, ga, alpha, beta, grad)
    evals = _shrunk_gradient(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta,
                             grad, act, aa, la, ua, inact, XTi, sqi, yI, bI)
    for r in range(inact.shape[0]):
        gbar[inact[r]] = bI[r]
        gbar_at[inact[r]] = stamp
    for k in range(nw):
        W[k] = act[W[k]]
    slot_of[:] = -1
    col_in[:] = -1
    tick[:] = 0
    return evals


@njit_cached()
def _shrink(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta, grad, act, aa, ba,
            ga, la, ua, keepm, inact, bI, W, nw, Kc, slot_of, col_in, tick, gbar, gbar_at, stamp):
    """Drop the active variables with keepm False. Their G_bar is
    G_t - p_t [- h'_t] - sum_{free s} alpha_s Q_ts (kernel entries: free x dropped). Cached
    columns of the kept variables are compacted to the kept rows, W renumbered. Rows whose G_bar
    is still known (gbar_at == stamp: shrunk until the un-shrink just before) take it from gbar.
    Returns (act, inact, XTi, sqn and y of inact, bI, |W|, kernel entries)."""
    _scatter(act, aa, ba, ga, alpha, beta, grad)
    n_act = act.shape[0]
    newpos = np.empty(n_act, np.int64)
    n_keep = 0
    for k in range(n_act):
        newpos[k] = n_keep if keepm[k] else -1
        n_keep += 1 if keepm[k] else 0
    kept = np.empty(n_keep, np.int64)
    dropped = np.empty(n_act - n_keep, np.int64)
    for k in range(n_act):
        if keepm[k]:
            kept[newpos[k]] = act[k]
    m = 0
    for k in range(n_act):
        if not keepm[k]:
            dropped[m] = act[k]
            m += 1
    out = np.empty(m)
    new = np.empty(m, np.int64)  # positions in dropped whose G_bar is computed
    m_new = 0
    for r in range(m):
        t = dropped[r]
        if gbar_at[t] == stamp:
            out[r] = gbar[t]
        else:
            new[m_new] = r
            m_new += 1
    rows = dropped[new[:m_new]]
    dpos = np.empty(m_new, np.int64)  # their positions in the active set (and cached columns)
    r = 0
    for k in range(n_act):
        if r < m_new and act[k] == rows[r]:
            dpos[r] = k
            r += 1
    part = np.empty(m_new)
    for r in range(m_new):
        t = rows[r]
        part[r] = grad[t] - lin[t] - (_hp(alpha[t], beta[t]) if ent else 0.0)
    fidx, fval = _free_of(act, aa, la, ua, slot_of, Kc, dpos, part)  # cached columns done
    _rows_times(kind, _rows_of(XT, rows), sqn[rows], y[rows], XT, sqn, y, gamma, coef0, degree,
                fidx, -fval, fidx.shape[0], part)
    for r in range(m_new):
        out[new[r]] = part[r]
    kpos = np.empty(n_keep, np.int64)
    for k in range(n_act):
        if keepm[k]:
            kpos[newpos[k]] = k
    _compact_cache(Kc, col_in, slot_of, newpos, kpos, tick)
    k2 = 0
    for k in range(nw):
        if keepm[W[k]]:
            W[k2] = newpos[W[k]]
            k2 += 1
    inact = np.concatenate((inact, dropped))
    return (kept, inact, _rows_of(XT, inact), sqn[inact], y[inact], np.concatenate((bI, out)),
            k2, fidx.shape[0] * m_new)


# ---------------------------------------------------------------- the outer loop
@njit_cached()
def _batched_loop(kind, XT, sqn, gamma, coef0, degree, y, lo, up, lin, ent, cent,
                  alpha, beta, grad, qd, tol, max_iter, q, n_keep, inner_factor, inner_steps,
                  shrink_every, min_drop, Kc, trace, verbose, gap_scale, gap_rel):
    """Run the batched SMO in place on alpha / beta / grad. ``Kc``: the column cache
    (n_slots >= q rows of length n), or Q itself for kind 3 (never shrunk). ``trace[k]`` =
    (pair steps so far, violation on the active set) of outer step k while it has room.
    Shrinking (``shrink_every`` > 0, not for kind 3): a check every min(n, shrink_every) pair
    steps, which shrinks when it can drop at least ``min_drop`` times the active variables.
    ``gap_scale`` > 0 (KLR): every GAP_EVERY outer steps, with every variable active, stop
    (STATUS_GAP) once the core's gap check passes ``gap_rel`` (KLR never shrinks; the check
    needs every row's gradient, and ``lin`` is indexed by row).
    Returns (outer steps, pair steps, status, kernel entries, reconstructions).

    The loop works on compacted copies of the active variables (index k <-> row act[k]);
    cached columns hold the active rows in that order. Shrunk rows keep G_bar (bI) and
    their data (XTi), see the module docstring."""
    n = y.shape[0]
    p = XT.shape[0]
    shrinking = shrink_every > 0 and kind != 3
    n_slots = Kc.shape[0]
    slot_of = np.arange(n) if kind == 3 else -np.ones(n, np.int64)
    col_in = np.arange(n) if kind == 3 else -np.ones(n_slots, np.int64)
    tick = np.zeros(n_slots, np.int64)
    clock = np.zeros(1, np.int64)
    buf = np.empty(n)
    in_w = np.zeros(n, np.bool_)
    fresh = -np.ones(n, np.int64)  # fresh[t] == outer: t's column is new in this outer step
    moved = np.zeros(n, np.bool_)  # t's alpha changed in this outer step's subproblem
    wcol = np.empty_like(Kc[0][:q])  # a new column's entries at W, as the cache holds them
    XWT = np.empty((p, q))
    sqw = np.empty(q)
    kup = np.empty(n)
    klow = np.empty(n)
    W = np.empty(q, np.int64)
    W_prev = np.empty(q, np.int64)
    need = np.empty(q, np.int64)
    need_slot = np.empty(q, np.int64)
    sl = np.empty(q, np.int64)
    d = np.empty(q)
    tc = np.empty(q, np.int64)
    tdc = np.empty(q)
    Qw = np.empty((q, q))
    yw, aw, bw, gw = np.empty(q), np.empty(q), np.empty(q), np.empty(q)
    low, upw, cw, qdw, hw = np.empty(q), np.empty(q), np.empty(q), np.empty(q), np.zeros(q)
    act = np.arange(n)
    XTa, sa, ya, la, ua, ca, qda, aa, ba, ga = _gather(XT, sqn, y, lo, up, cent, qd, alpha,
                                                      beta, grad, act)
    inact = np.empty(0, np.int64)
    XTi = np.empty((p, 0))
    sqi = np.empty(0)
    yI = np.empty(0)
    bI = np.empty(0)  # G_bar on the shrunk rows
    gbar = np.zeros(n)
    gbar_at = -np.ones(n, np.int64)
    unshrunk = False
    rebuild = False
    last_check = 0
    n_rebuild = 0
    outer = 0
    steps = 0
    evals = 0
    evals_bar = 0
    status = STATUS_CONVERGED
    nw = 0
    while True:
        check = shrinking and steps - last_check >= min(n, shrink_every)
        if check:
            last_check = steps
            gmax, gmin = _extremes_c(ya, aa, la, ua, ga)
            if not unshrunk and gmax - gmin <= 10.0 * tol:  # LIBSVM's early un-shrink
                unshrunk = True
                rebuild = act.shape[0] < n
        if rebuild:
            rebuild = False
            e0 = evals
            evals += _unshrink(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta,
                               grad, act, aa, ba, ga, la, ua, inact, XTi, sqi, yI, bI, W, nw,
                               slot_of, col_in, tick, gbar, gbar_at, outer)
            n_rebuild += 1
            if verbose:
                print("smo: un-shrink at pair step", steps, "kernel entries", evals - e0)
            act = np.arange(n)
            XTa, sa, ya, la, ua, ca, qda, aa, ba, ga = _gather(XT, sqn, y, lo, up, cent, qd,
                                                              alpha, beta, grad, act)
            inact = np.empty(0, np.int64)
            XTi = np.empty((p, 0))
            sqi = np.empty(0)
            yI = np.empty(0)
            bI = np.empty(0)
        n_act = act.shape[0]
        if check:
            keepm = np.empty(n_act, np.bool_)
            cnt = _shrink_mask(ya, aa, la, ua, ga, gmax, gmin, keepm)
            if n_act - cnt >= max(1.0, min_drop * n_act):
                act, inact, XTi, sqi, yI, bI, nw, e = _shrink(
                    kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta, grad, act, aa,
                    ba, ga, la, ua, keepm, inact, bI, W, nw, Kc, slot_of, col_in, tick, gbar,
                    gbar_at, outer)
                evals += e
                if verbose:
                    print("smo: shrink at pair step", steps, "active", n_act, "->",
                          act.shape[0], "kernel entries", e)
                XTa, sa, ya, la, ua, ca, qda, aa, ba, ga = _gather(XT, sqn, y, lo, up, cent, qd,
                                                                  alpha, beta, grad, act)
                n_act = act.shape[0]
        keep = min(n_keep, nw) if outer > 0 else 0
        for k in range(keep):  # the newest entries of the previous W stay, in front
            W_prev[k] = W[nw - keep + k]
        for k in range(keep):
            W[k] = W_prev[k]
        nw, gmax, gmin = _select(ya, aa, la, ua, ga, W, keep, q, in_w, kup[:n_act],
                                 klow[:n_act])
        if outer < trace.shape[0]:
            trace[outer, 0] = steps
            trace[outer, 1] = gmax - gmin
        if (gap_scale > 0.0 and outer % GAP_EVERY == 0 and outer > 0 and n_act == n
                and gmax - gmin > tol):
            if _klr_gap_stop(ya, aa, ba, ga, lin, la, ua, ca, 0.5 * (gmax + gmin), gap_scale,
                             gap_rel):
                status = STATUS_GAP
                break
        if gmax - gmin <= tol:
            if n_act < n:  # the final un-shrink check: re-select on all variables
                rebuild = True
                last_check = steps
                continue
            break
        if steps >= max_iter:
            status = STATUS_ITERATION_LIMIT
            break
        outer += 1
        if verbose and outer % 200 == 0:
            print("smo: working set", q, "outer step", outer, "pair steps", steps,
                  "violation", gmax - gmin, "active", n_act)
        cnt = _cache_columns(W, nw, slot_of, col_in, tick, clock, need, need_slot)
        for k in range(cnt):
            fresh[need[k]] = outer
        for k in range(nw):
            t = W[k]
            sl[k] = slot_of[t]
            yw[k], aw[k], bw[k], gw[k] = ya[t], aa[t], ba[t], ga[t]
            low[k], upw[k], cw[k], qdw[k] = la[t], ua[t], ca[t], qda[t]
            if ent:
                hw[k] = _hpp(aa[t], ba[t])
        evals += _block_ww(kind, XTa, sa, gamma, coef0, degree, yw, W, nw, sl, fresh, outer,
                           Kc, Qw, XWT, sqw, wcol, buf)
        stop = max(tol, inner_factor * (gmax - gmin))
        cap = min(inner_steps, max_iter - steps)
        s, stalled = _inner_smo(Qw[:nw, :nw], yw[:nw], aw[:nw], bw[:nw], gw[:nw], low[:nw],
                                upw[:nw], cw[:nw], qdw[:nw], hw[:nw], ent, stop, cap)
        steps += s
        nnz = 0
        ntc = 0
        for k in range(nw):
            t = W[k]
            dk = aw[k] - aa[t]
            if dk != 0.0:
                d[nnz] = dk
                sl[nnz] = slot_of[t]
                nnz += 1
                moved[t] = True
                dc = _bound_part(aw[k], low[k], upw[k]) - _bound_part(aa[t], la[t], ua[t])
                if dc != 0.0:
                    tc[ntc] = act[t]
                    tdc[ntc] = dc
                    ntc += 1
        nfill = _keep_moved(need, need_slot, cnt, moved, slot_of, col_in, tick)
        for k in range(nw):
            moved[W[k]] = False
        if nfill > 0 or nnz > 0:  # the new columns, and G += Q_:W d, in one pass
            _fill_and_update(kind, XTa, sa, gamma, coef0, degree, ya, need, need_slot, nfill,
                             Kc, buf, ga, sl, d, nnz)
            evals += nfill * n_act
        if ntc > 0 and inact.shape[0] > 0:  # G_bar of the shrunk rows
            _rows_times(kind, XTi, sqi, yI, XT, sqn, y, gamma, coef0, degree, tc, tdc, ntc, bI)
            evals += ntc * inact.shape[0]
            evals_bar += ntc * inact.shape[0]
        for k in range(nw):
            t = W[k]
            if ent:
                ga[t] += _hp(aw[k], bw[k]) - _hp(aa[t], ba[t])
                ba[t] = bw[k]
            aa[t] = aw[k]
        if s == 0:
            status = STATUS_STALLED
            break
    if verbose and shrinking:
        print("smo: kernel entries", evals, "of which G_bar updates", evals_bar)
    _scatter(act, aa, ba, ga, alpha, beta, grad)
    if act.shape[0] < n:
        evals += _shrunk_gradient(kind, XT, sqn, y, gamma, coef0, degree, lin, ent, alpha, beta,
                                  grad, act, aa, la, ua, inact, XTi, sqi, yI, bI)
        n_rebuild += 1
    return outer, steps, status, evals, n_rebuild


# ---------------------------------------------------------------- Python entry point
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
) -> BatchedDualSolution:
    """Minimise 1/2 a'Qa + p'a + sum h_i(a_i) s.t. y'a = 0, l <= a <= u by batched SMO.

    Parameters as :func:`solvers.smo.core.solve_dual` (``shrinking``: see the module
    docstring; ``cache`` is accepted and ignored; ``verbose`` prints a line every 200 outer
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
    gap_scale : float
        As :func:`solvers.smo.core.solve_dual`'s (checked every GAP_EVERY outer steps).
    """
    del cache
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
    trace = np.full((4096, 2), -1.0)
    outer, steps, status, evals, rebuilds = _batched_loop(
        spec.kind, spec.X, spec.sqnorm, spec.gamma, spec.coef0, spec.degree, y, lo, up, lin,
        ent, cent, alpha, beta, grad, qd, float(tol), int(max_iter), q,
        int(math.floor(keep * q)), float(inner_factor), cap,
        SHRINK_EVERY if shrinking else 0, float(SHRINK_MIN_FRACTION), Kc, trace, bool(verbose),
        float(gap_scale) if ent else 0.0, GAP_REL)
    m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
    hval, hp = entropy_terms(alpha, cent, beta) if ent else (np.zeros(1), 0.0)
    qa = grad - lin - hp
    objective = float(0.5 * alpha @ qa + lin @ alpha + hval.sum())
    converged = status == STATUS_GAP or (m_up - m_low <= tol and status != STATUS_ITERATION_LIMIT)
    used = trace[trace[:, 0] >= 0]  # unused slots hold -1 (filtered in numpy, as the core's)
    history = [{"iteration": int(s), "violation": max(v, 0.0)} for s, v in used.tolist()]
    return BatchedDualSolution(
        alpha, grad, int(steps), bool(converged), m_up, m_low, objective, qa,
        stalled=status == STATUS_STALLED and not converged, kernel_evals=int(evals),
        reconstructions=int(rebuilds), history=history, outer_iterations=int(outer),
        gap_stopped=status == STATUS_GAP)


__all__ = ["BatchedDualSolution", "solve_dual_batched"]
