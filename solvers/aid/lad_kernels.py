"""Compiled one-loop chunk passes of AID-LAD on Dask (``solvers.dask_rows``).

On a chunk of rows (x_i, y_i, s_i) with cluster labels l_i and a fit (beta, b), every pass
needs the residual ``r_i = y_i - x_i'beta - b`` and a few per-cluster tallies of it. numpy
spends a full pass over the chunk for each tally (a ``bincount`` per count, a temporary per
comparison): about 70 ms per 10^6 x 10 chunk for the evaluation. A compiled task computes
r_i once and adds it into every tally in one more sweep over r (a sweep over x is the cost; the
scattered tally writes fused into that loop measured slower); why this is written by hand: no
library fuses a matrix-vector product with scattered per-label sums.

The results equal numpy recomputations of the same formulas (``tests/test_lad_kernels.py``) up to
the order of the floating-point sums; the objective is summed with Neumaier's compensation, so
it is at least as accurate as numpy's pairwise sum. ``nogil`` lets Dask's threads run chunks
side by side.

Losses (``docs/problems/lad.md``): rho_tau(r) = 2 tau r for r > 0 and 2 (tau - 1) r otherwise
(|r| at tau = 1/2), E = sum_i s_i rho_tau(r_i).
"""

from __future__ import annotations

import numpy as np

from solvers.numba_cache import njit_cached


@njit_cached(nogil=True)
def _residual(x, y, beta, b, i):  # pragma: no cover - compiled
    """r_i = (y_i - x_i'beta) - b, in lad_residual's order of operations."""
    d = 0.0
    for j in range(x.shape[1]):
        d += x[i, j] * beta[j]
    return (y[i] - d) - b


@njit_cached(nogil=True)
def _neumaier(total, comp, term):  # pragma: no cover - compiled
    """One step of Neumaier's compensated sum: (total + term, the running correction)."""
    t = total + term
    if abs(total) >= abs(term):
        comp += (total - t) + term
    else:
        comp += (term - t) + total
    return t, comp


@njit_cached(nogil=True)
def _evaluate_loop(x, y, s, lab, beta, b, K, tol, tau, means, r):  # pragma: no cover
    """E and the tallies per cluster k in one row of T: [pos, neg, count r <= 0, count r > 0,
    (sum |r| over r <= 0, over r > 0)]: one cache line per row touched, not one per tally."""
    n = y.shape[0]
    up, down = 2.0 * tau, 2.0 * (tau - 1.0)
    total, comp = 0.0, 0.0
    for i in range(n):  # the residuals and E (a loop of its own: the tallies' scattered
        v = _residual(x, y, beta, b, i)  # writes stall it by half when fused, measured)
        r[i] = v
        total, comp = _neumaier(total, comp, s[i] * max(up * v, down * v))
    T = np.zeros((K, 6 if means else 4))
    for i in range(n):
        v, k = r[i], lab[i]
        if v > tol:
            T[k, 0] += 1.0
        elif v < -tol:
            T[k, 1] += 1.0
        side = 1 if v > 0 else 0
        T[k, 2 + side] += 1.0
        if means:
            T[k, 4 + side] += abs(v)
    return total + comp, T


def evaluate(x: np.ndarray, y: np.ndarray, s: np.ndarray, lab: np.ndarray, beta: np.ndarray,
             b: float, K: int, tol: float, quantile: float, means: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(vec, r)``: vec = [E, pos (K), neg (K), count per (cluster, r > 0) (2K)] and with
    ``means`` the sums of |r| per (cluster, r > 0) (2K); pos_k / neg_k count the rows of
    cluster k with r > tol / r < -tol (index 2 k + [r > 0] for the per-side tallies)."""
    r = np.empty(y.shape[0])
    E, T = _evaluate_loop(x, y, s, lab.astype(np.int64, copy=False),
                          np.ascontiguousarray(beta, dtype=float), float(b), int(K),
                          float(tol), float(quantile), bool(means), r)
    return np.concatenate([[E], T[:, 0], T[:, 1], T[:, 2:4].ravel(), T[:, 4:].ravel()]), r


@njit_cached(nogil=True)
def _band_loop(x, y, s, beta, b, a, z):  # pragma: no cover - compiled
    n, p = x.shape
    r = np.empty(n)
    code = np.empty(n, dtype=np.int64)
    sides = np.zeros((2, p + 3))
    n_in = 0
    for i in range(n):
        v = _residual(x, y, beta, b, i)
        r[i] = v
        if a <= v <= z:
            code[i] = 2 + n_in
            n_in += 1
            continue
        side = 1 if v > z else 0
        code[i] = side
        w = s[i]
        sides[side, 0] += 1.0
        sides[side, 1] += w
        for j in range(p):
            sides[side, 2 + j] += w * x[i, j]
        sides[side, 2 + p] += w * y[i]
    rows = np.empty((n_in, p + 4))
    for i in range(n):
        c = code[i] - 2
        if c < 0:
            continue
        w = s[i]
        rows[c, 0] = r[i]
        rows[c, 1] = 1.0
        rows[c, 2] = w
        for j in range(p):
            rows[c, 3 + j] = w * x[i, j]
        rows[c, 3 + p] = w * y[i]
    return code, rows, sides


def pk_band(x: np.ndarray, y: np.ndarray, s: np.ndarray, beta: np.ndarray, b: float, a: float,
            z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of the "pk" start: codes (0 for r < a, 1 for r > z, 2 + the rank of a row
    with a <= r <= z), [r, 1, s, s x, s y] of the rows inside the bracket in row order, and
    [rows, W, SX, SY] of those below (row 0) and above (row 1)."""
    return _band_loop(x, y, s, np.ascontiguousarray(beta, dtype=float), float(b), float(a),
                      float(z))


@njit_cached(nogil=True)
def _flag(bad, row, v):  # pragma: no cover - compiled
    if v != v:
        bad[row, 0] = 1
    elif abs(v) == np.inf:
        bad[row, 1] = 1


@njit_cached(nogil=True)
def _stats_loop(x, y, s):  # pragma: no cover - compiled
    n, p = x.shape
    lo, hi = np.full(p, np.inf), np.full(p, -np.inf)
    bad = np.zeros((3, 2), dtype=np.int64)  # rows x, y, s; columns NaN, infinity
    # [kept, any s < 0, any s == 0, s min, s max, y min, y max, sum s, sum s |y|]
    acc = np.array([0.0, 0.0, 0.0, np.inf, -np.inf, np.inf, -np.inf])
    ss, cs, sy, cy = 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        w, v = s[i], y[i]
        _flag(bad, 1, v)
        _flag(bad, 2, w)
        keep = w > 0
        for j in range(p):
            t = x[i, j]
            _flag(bad, 0, t)
            if keep:
                lo[j] = min(lo[j], t)
                hi[j] = max(hi[j], t)
        if not keep:
            if w < 0:
                acc[1] = 1.0
            elif w == 0:
                acc[2] = 1.0
            continue
        acc[0] += 1.0
        acc[3], acc[4] = min(acc[3], w), max(acc[4], w)
        acc[5], acc[6] = min(acc[5], v), max(acc[6], v)
        ss, cs = _neumaier(ss, cs, w)
        sy, cy = _neumaier(sy, cy, w * abs(v))
    return bad, acc, ss + cs, sy + cy, lo, hi


def chunk_stats(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> dict:
    """One chunk's checks and statistics in one pass: ``bad`` (3 x 2: x, y, s holding a NaN /
    an infinity) and over the rows with s_i > 0: ``kept``, ``neg`` / ``zero`` (any s_i < 0 /
    = 0), the min / max of s and y, sum s_i, sum s_i |y_i| and the min / max of each column of
    x (``cmin`` / ``cmax``); NaN never enters a min or max (it is flagged instead)."""
    bad, acc, ssum, sy, lo, hi = _stats_loop(x, y, s)
    return dict(bad=bad, kept=int(acc[0]), neg=bool(acc[1]), zero=bool(acc[2]),
                smin=float(acc[3]), smax=float(acc[4]), ymin=float(acc[5]), ymax=float(acc[6]),
                ssum=float(ssum), sy=float(sy), cmin=lo, cmax=hi)


@njit_cached(nogil=True)
def _bracket_loop(y, s, a, b, last, unit):  # pragma: no cover - compiled
    n = y.shape[0]
    sums = np.zeros(5)  # Wb, Lb, count below, Wa, La
    inside = 0
    for i in range(n):
        v, w = y[i], s[i]
        if v < a:
            sums[0] += w
            sums[1] += w * (a - v)
            sums[2] += 1.0
        elif v > b or (v == b and not last):
            sums[3] += w
            sums[4] += w * (v - b)
        else:
            inside += 1
    rows = np.empty((inside, 3))
    k = 0
    for i in range(n):
        v = y[i]
        if a <= v and (v < b or (v == b and last)):
            rows[k, 0], rows[k, 1], rows[k, 2] = v, 1.0 if unit else s[i], s[i]
            k += 1
    return rows, sums


def bracket(y: np.ndarray, s: np.ndarray, a: float, b: float, last: bool, unit: bool) -> dict:
    """The rows with a <= y < b (<= b when ``last``) as [y, w, s] (w the selection weight: 1
    when ``unit``, else s); below them W_b = sum s, L_b = sum s (a - y) and their number
    (M_b, or W_b when not ``unit``); above them W_a = sum s and L_a = sum s (y - b)."""
    rows, q = _bracket_loop(y, s, float(a), float(b), bool(last), bool(unit))
    return dict(rows=rows, Wb=float(q[0]), Lb=float(q[1]), Mb=float(q[2]) if unit else float(q[0]),
                Wa=float(q[3]), La=float(q[4]))
