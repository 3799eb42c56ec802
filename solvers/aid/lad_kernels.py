"""Compiled one-loop chunk passes of AID-LAD on Dask (``solvers.dask_rows``; C++ in
``solvers/_core/src/_aid.cpp``, module ``solvers._core._aid``).

On a chunk of rows (x_i, y_i, s_i) with cluster labels l_i and a fit (beta, b), every pass
needs the residual ``r_i = y_i - x_i'beta - b`` and a few per-cluster tallies of it. numpy
spends a full pass over the chunk for each tally (a ``bincount`` per count, a temporary per
comparison): about 70 ms per 10^6 x 10 chunk for the evaluation. A compiled task computes
r_i once and adds it into every tally in one more sweep over r (a sweep over x is the cost; the
scattered tally writes fused into that loop measured slower); why this is written by hand: no
library fuses a matrix-vector product with scattered per-label sums.

The results equal numpy recomputations of the same formulas (``tests/test_lad_kernels.py``) up to
the order of the floating-point sums; the objective is summed with Neumaier's compensation, so
it is at least as accurate as numpy's pairwise sum. The passes release the GIL, so Dask's threads
run chunks side by side. x, y and s may be strided views (column slices of a chunk), float64 or
float32 (other dtypes are converted to float64).

Losses (``docs/problems/lad.md``): rho_tau(r) = 2 tau r for r > 0 and 2 (tau - 1) r otherwise
(|r| at tau = 1/2), E = sum_i s_i rho_tau(r_i).
"""

from __future__ import annotations

import numpy as np

from solvers._core import _aid


def _floats(a: np.ndarray) -> np.ndarray:
    """a as float64, or as it is when float32 / float64 (strides kept: no copy)."""
    a = np.asarray(a)
    return a if a.dtype in (np.float64, np.float32) and a.dtype.isnative else a.astype(np.float64)


def _beta(beta: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(beta, dtype=np.float64)


def evaluate(x: np.ndarray, y: np.ndarray, s: np.ndarray, lab: np.ndarray, beta: np.ndarray,
             b: float, K: int, tol: float, quantile: float, means: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(vec, r)``: r_i = y_i - x_i'beta - b, vec = [E, pos (K), neg (K), count per (cluster,
    r > 0) (2K)] and with ``means`` the sums of |r| per (cluster, r > 0) (2K), where
    E = sum_i s_i rho_tau(r_i) (tau = ``quantile``); pos_k / neg_k count the rows of cluster k
    with r > tol / r < -tol (index 2 k + [r > 0] for the per-side tallies)."""
    y = _floats(y)
    r = np.empty(y.shape[0])
    T = np.zeros((int(K), 6 if means else 4))
    E = _aid.evaluate_loop(_floats(x), y, _floats(s), np.ascontiguousarray(lab, dtype=np.int64),
                           _beta(beta), float(b), float(tol), float(quantile), r, T)
    return np.concatenate([[E], T[:, 0], T[:, 1], T[:, 2:4].ravel(), T[:, 4:].ravel()]), r


def pk_band(x: np.ndarray, y: np.ndarray, s: np.ndarray, beta: np.ndarray, b: float, a: float,
            z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of the "pk" start, with r_i = y_i - x_i'beta - b: codes (0 for r < a, 1 for
    r > z, 2 + the rank of a row with a <= r <= z), [r, 1, s, s x, s y] of the rows inside the
    bracket in row order, and [rows, W, SX, SY] of those below (row 0) and above (row 1)."""
    x, y, s = _floats(x), _floats(y), _floats(s)
    n, p = x.shape
    r = np.empty(n)
    code = np.empty(n, dtype=np.int64)
    sides = np.zeros((2, p + 3))
    n_in = _aid.band_codes(x, y, s, _beta(beta), float(b), float(a), float(z), r, code, sides)
    rows = np.empty((n_in, p + 4))
    _aid.band_rows(x, y, s, r, code, rows)
    return code, rows, sides


def chunk_stats(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> dict:
    """One chunk's checks and statistics in one pass: ``bad`` (3 x 2: x, y, s holding a NaN /
    an infinity) and over the rows with s_i > 0: ``kept``, ``neg`` / ``zero`` (any s_i < 0 /
    = 0), the min / max of s and y, sum s_i, sum s_i |y_i| and the min / max of each column of
    x (``cmin`` / ``cmax``); NaN never enters a min or max (it is flagged instead)."""
    x, y, s = _floats(x), _floats(y), _floats(s)
    p = x.shape[1]
    lo, hi = np.full(p, np.inf), np.full(p, -np.inf)
    bad = np.zeros((3, 2), dtype=np.int64)  # rows x, y, s; columns NaN, infinity
    # [kept, any s < 0, any s == 0, s min, s max, y min, y max]
    acc = np.array([0.0, 0.0, 0.0, np.inf, -np.inf, np.inf, -np.inf])
    ssum, sy = _aid.stats_loop(x, y, s, bad, acc, lo, hi)
    return dict(bad=bad, kept=int(acc[0]), neg=bool(acc[1]), zero=bool(acc[2]),
                smin=float(acc[3]), smax=float(acc[4]), ymin=float(acc[5]), ymax=float(acc[6]),
                ssum=float(ssum), sy=float(sy), cmin=lo, cmax=hi)


def bracket(y: np.ndarray, s: np.ndarray, a: float, b: float, last: bool, unit: bool) -> dict:
    """The rows with a <= y < b (<= b when ``last``) as [y, w, s] (w the selection weight: 1
    when ``unit``, else s); below them W_b = sum s, L_b = sum s (a - y) and their number
    (M_b, or W_b when not ``unit``); above them W_a = sum s and L_a = sum s (y - b)."""
    y, s = _floats(y), _floats(s)
    q = np.zeros(5)  # Wb, Lb, count below, Wa, La
    inside = _aid.bracket_sums(y, s, float(a), float(b), bool(last), q)
    rows = np.empty((inside, 3))
    _aid.bracket_rows(y, s, float(a), float(b), bool(last), bool(unit), rows)
    return dict(rows=rows, Wb=float(q[0]), Lb=float(q[1]), Mb=float(q[2]) if unit else float(q[0]),
                Wa=float(q[3]), La=float(q[4]))
