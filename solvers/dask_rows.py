"""The row-wise operations of :mod:`solvers.rows` on a row-chunked Dask array.

Every operation is a map over the row chunks followed by a pairwise (tree) sum of small
results, so it runs on whatever Dask scheduler is active (threads by default, a
``dask.distributed.Client`` once one exists, or ``dask.config.set(scheduler=...)``). What
travels: d-vectors, d x d (``gram`` only), m x d sketches, per-cluster sums; the n-vectors
(``A p``, AID's labels and residuals) are persisted beside their chunks. A lost chunk is
recomputed by Dask from its inputs, so a worker that dies mid-run changes nothing.

Data are checked chunk by chunk before any solve, with the messages of
:mod:`solvers.validation` (NaN, infinity, shapes) plus one for chunks whose width differs from
the declared number of columns.
"""

from __future__ import annotations

import operator
from typing import Any

import dask
import dask.array as da
import numpy as np

from solvers.errors import DataError
from solvers.sketch.distributed import fd_sketch_dask
from solvers.sketch.fd import FrequentDirections
from solvers.sketch.random import make_random_sketch


# ---------------------------------------------------------------------------- chunk functions
def _flags(block: np.ndarray, width: int) -> np.ndarray:
    """[has NaN, has inf, wrong width, rows] of one chunk (``width`` -1 for a vector)."""
    blk = np.asarray(block)
    bad_width = blk.ndim != (1 if width < 0 else 2) or (width >= 0 and blk.shape[1] != width)
    if bad_width:
        return np.array([0, 0, 1, blk.shape[0]], dtype=np.int64)
    return np.array([np.isnan(blk).any(), np.isinf(blk).any(), 0, blk.shape[0]], dtype=np.int64)


def _add(a: Any, b: Any) -> Any:
    return a + b


def _rmatvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    return a.T @ v


def _residual_gradient(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    r = a @ x - b
    return np.append(a.T @ r, r @ r)


def _normal(a: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ap = a @ p
    return ap, a.T @ ap


def _gram(a: np.ndarray) -> np.ndarray:
    return a.T @ a


def _random_chunk(a: np.ndarray, b: np.ndarray | None, kind: str, m: int, seed: int) -> np.ndarray:
    M = a if b is None else np.column_stack([a, b])
    return make_random_sketch(kind, m, seed=seed).partial_fit(M).sketch_


def tree_sum(parts: list) -> Any:
    """The pairwise sum of a list of delayed values (depth log2 of the list)."""
    if not parts:
        raise DataError("The data have no row chunks; pass an array with at least one row.")
    while len(parts) > 1:
        nxt = [dask.delayed(_add)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


def blocks(x: da.Array) -> list:
    """The row chunks of ``x`` as delayed values, in order."""
    return list(x.to_delayed().ravel())


def chunk_flags(x: da.Array, width: int) -> np.ndarray:
    """Per chunk: [NaN, inf, wrong width, rows] (one pass)."""
    parts = [dask.delayed(_flags)(blk, width) for blk in blocks(x)]
    (out,) = dask.compute(parts)
    return np.array(out).reshape(-1, 4)


def refuse_bad_chunks(flags: np.ndarray, name: str, width: int) -> None:
    """The messages of :func:`solvers.validation.check_finite` (and one for ragged chunks)."""
    bad = np.flatnonzero(flags[:, 2])
    if bad.size:
        what = f"{width} columns" if width >= 0 else "1-D vector chunks"
        raise DataError(
            f"The {name!r} argument has chunks of different widths: chunk {int(bad[0])} does not "
            f"have the declared {what}. Every row chunk must have the same columns (rebuild "
            "the array from files of one width).")
    if flags[:, 0].any():
        raise DataError(f"Input {name!r} contains NaN; remove or impute those entries first "
                        f"(row chunk {int(np.flatnonzero(flags[:, 0])[0])}).")
    if flags[:, 1].any():
        raise DataError(f"Input {name!r} contains infinity; remove those entries or rescale "
                        f"(row chunk {int(np.flatnonzero(flags[:, 1])[0])}).")


def as_dask_matrix(A: Any, name: str, min_samples: int = 1, min_features: int = 1) -> da.Array:
    """A 2-D float64 Dask array with known row chunks and one column chunk (lazy)."""
    if not hasattr(A, "chunks"):
        raise DataError(f"{name!r} must be a dask.array.Array here; got {type(A).__name__}.")
    if A.ndim != 2:
        raise DataError(
            f"Expected a 2-D array for {name!r}, got a {A.ndim}-D array of shape {A.shape}. "
            f"Reshape your data with {name}.reshape(-1, 1) for one feature.")
    if np.issubdtype(A.dtype, np.complexfloating):
        raise DataError(f"Complex data not supported in {name!r}; pass real numbers.")
    if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
        raise DataError(f"{name!r} must be numeric; got dtype {A.dtype}.")
    if any(np.isnan(c) for c in A.chunks[0]):
        A = A.compute_chunk_sizes()
    A = A.astype(np.float64).rechunk({1: -1})
    if A.shape[0] < min_samples:
        raise DataError(f"{name!r} has {A.shape[0]} sample(s) (shape={A.shape}); at least "
                        f"{min_samples} is required.")
    if A.shape[1] < min_features:
        raise DataError(f"{name!r} has {A.shape[1]} feature(s) (shape={A.shape}) while a minimum "
                        f"of {min_features} is required.")
    return A


def aligned_vector(v: Any, rows: tuple, name: str, against: str) -> da.Array:
    """``v`` (numpy or Dask) as a float64 Dask vector chunked like ``rows`` (lazy)."""
    n = int(sum(rows))
    if not hasattr(v, "chunks"):
        arr = np.asarray(v, dtype=np.float64)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        v = da.from_array(arr, chunks=(rows,) if arr.ndim == 1 else -1)
    elif v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise DataError(f"{name!r} must have shape ({n},) (one entry per row of {against}); got "
                        f"shape {v.shape}.")
    if any(np.isnan(c) for c in v.chunks[0]):
        v = v.compute_chunk_sizes()
    if v.shape[0] != n:
        raise DataError(f"{name!r} has {v.shape[0]} entries but {against} has {n} rows; "
                        "they must match.")
    return v.astype(np.float64).rechunk((rows,))


# ---------------------------------------------------------------------------- ridge / sketches
class DaskRows:
    """The ridge / sketch operations of :mod:`solvers.rows` on a Dask array ``A``."""

    def __init__(self, A: da.Array) -> None:
        self.A = A
        self.shape = A.shape
        self._a = blocks(A)

    @classmethod
    def checked(cls, A: Any, name: str, owner: str, min_features: int = 1) -> DaskRows:
        """Check ``A`` chunk by chunk (one pass) and wrap it."""
        A = as_dask_matrix(A, name, min_features=min_features)
        refuse_bad_chunks(chunk_flags(A, A.shape[1]), name, A.shape[1])
        return cls(A)

    def checked_vector(self, v: Any, name: str, against: str = "A") -> da.Array:
        """An n-vector beside the rows, checked (one pass over the vector)."""
        v = aligned_vector(v, self.A.chunks[0], name, against)
        refuse_bad_chunks(chunk_flags(v, -1), name, -1)
        return v

    def vector(self, v: Any) -> da.Array:
        """``v`` as an n-vector chunked like the rows (unchecked)."""
        return aligned_vector(v, self.A.chunks[0], "v", "A")

    def dot(self, u: da.Array, v: da.Array) -> float:
        """``u'v`` of two n-vectors."""
        return float(da.dot(u, v).compute())

    def rmatvec(self, v: da.Array) -> np.ndarray:
        """``A' v``: per chunk ``A_j' v_j``, summed in a tree."""
        parts = [dask.delayed(_rmatvec)(a, vb) for a, vb in zip(self._a, blocks(v), strict=True)]
        return np.asarray(tree_sum(parts).compute())

    def residual_gradient(self, x: np.ndarray, b: da.Array) -> tuple[np.ndarray, float]:
        """``(A'(A x - b), ||A x - b||^2)`` in one pass; only x and (d+1)-vectors travel."""
        parts = [dask.delayed(_residual_gradient)(a, bb, x)
                 for a, bb in zip(self._a, blocks(b), strict=True)]
        out = np.asarray(tree_sum(parts).compute())
        return out[:-1], float(out[-1])

    def normal_matvec(self, p: np.ndarray) -> tuple[np.ndarray, da.Array]:
        """``(A'A p, A p)`` in one pass; ``A p`` stays persisted beside the chunks."""
        parts = [dask.delayed(_normal)(a, p) for a in self._a]
        Ap = da.concatenate([
            da.from_delayed(dask.delayed(operator.getitem)(q, 0), shape=(rows,), dtype=float)
            for q, rows in zip(parts, self.A.chunks[0], strict=True)])
        total = tree_sum([dask.delayed(operator.getitem)(q, 1) for q in parts])
        Ap, total = dask.persist(Ap, total)
        return np.asarray(total.compute()), Ap

    def zeros(self) -> da.Array:
        """The n-vector 0, chunked like the rows."""
        return da.zeros(self.shape[0], chunks=(self.A.chunks[0],))

    def axpy(self, y: da.Array, alpha: float, x: da.Array) -> da.Array:
        """``y + alpha x``, persisted (the graph does not grow with the iterations)."""
        return (y + alpha * x).persist()

    def residual_sq(self, Ax: da.Array, b: da.Array) -> float:
        """``||Ax - b||^2`` for a kept ``A x``."""
        r = Ax - b
        return float(da.dot(r, r).compute())

    def gram(self) -> np.ndarray:
        """``A'A``, summed over chunks (d x d travels)."""
        return np.asarray(tree_sum([dask.delayed(_gram)(a) for a in self._a]).compute())

    def fd_sketch(self, m: int, robust: bool, block_size: int) -> FrequentDirections:
        """(R)FD: each chunk sketched where it lives, merged in a tree (the FD bound holds for
        the merged sketch); ``block_size`` is unused (a chunk streams through its sketch)."""
        return fd_sketch_dask(self.A, m, robust=robust)

    def random_sketch(self, kind: str, m: int, seed: int | None, block_size: int,
                      b: da.Array | None = None) -> np.ndarray:
        """``S [A, b]`` with S = [S_1 ... S_J], chunk j's block S_j drawn from its own child of
        ``SeedSequence(seed)``; the columns of S are independent, so S has the distribution of
        the in-memory sketch (not its values)."""
        kids = np.random.SeedSequence(seed).spawn(len(self._a))
        seeds = [int(np.random.default_rng(k).integers(2**63)) for k in kids]
        bb = [None] * len(self._a) if b is None else blocks(b)
        parts = [dask.delayed(_random_chunk)(a, v, kind, m, sd)
                 for a, v, sd in zip(self._a, bb, seeds, strict=True)]
        return np.asarray(tree_sum(parts).compute())


# ---------------------------------------------------------------------------- AID-LAD
def _resid(x: np.ndarray, y: np.ndarray, beta: np.ndarray, b: float) -> np.ndarray:
    return y - x @ beta - b if x.shape[1] else y - b


def _sums(x, y, s, lab, K: int) -> np.ndarray:
    from solvers.aid.aggregation import cluster_sums

    W, SX, SY = cluster_sums(x, y, s, lab, K)
    return np.column_stack([W, SX, SY])


def _evaluate(x, y, s, lab, beta, b, K: int, tol: float, quantile: float) -> np.ndarray:
    """[E, pos (K), neg (K), sum |r| per (cluster, r > 0) (2K), count per key (2K)]."""
    from solvers.aid.lad import check_loss

    r = _resid(x, y, beta, b)
    key = 2 * lab + (r > 0)
    return np.concatenate([[check_loss(r, s, quantile)],
                           np.bincount(lab, weights=(r > tol), minlength=K),
                           np.bincount(lab, weights=(r < -tol), minlength=K),
                           np.bincount(key, weights=np.abs(r), minlength=2 * K),
                           np.bincount(key, minlength=2 * K)])


def _split_codes(x, y, s, lab, beta, b, mixed_pos, mean, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: its piece code ``mixed_pos[lab] * P + piece`` (-1 outside mixed clusters), and
    per code [rows, W, SX, SY]; the pieces of ``split_mixed``."""
    from solvers.aid.aggregation import cluster_sums

    r = _resid(x, y, beta, b)
    pos = mixed_pos[lab]
    rows = np.flatnonzero(pos >= 0)
    sc = r[rows]
    piece = (sc > 0).astype(np.int64)
    if mean is not None:
        piece = 2 * piece + (np.abs(sc) > mean[2 * lab[rows] + piece])
    code = np.full(lab.shape[0], -1, dtype=np.int64)
    code[rows] = pos[rows] * P + piece
    n_codes = int(mixed_pos.max() + 1) * P
    W, SX, SY = cluster_sums(x[rows], y[rows], s[rows], code[rows], n_codes)
    cnt = np.bincount(code[rows], minlength=n_codes)
    return code, np.column_stack([cnt, W, SX, SY])


def _relabel(lab: np.ndarray, code: np.ndarray, key_id: np.ndarray) -> np.ndarray:
    out = lab.copy()
    hit = code >= 0
    out[hit] = key_id[code[hit]]
    return out


def _searchsorted(r: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.searchsorted(edges, r, side="left").astype(np.int64)


def _high(x: np.ndarray, lab: np.ndarray, centre: np.ndarray) -> np.ndarray:
    j = lab % x.shape[1]
    return 2 * lab + (x[np.arange(x.shape[0]), j] > centre[j])


def _remap(lab: np.ndarray, remap: np.ndarray) -> np.ndarray:
    return remap[lab]


def _count_labels(lab: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(lab, minlength=size)


def _hist(y, w, lo: float, hi: float, bins: int) -> np.ndarray:
    inb = (y >= lo) & (y <= hi)
    c, _ = np.histogram(y[inb], bins=bins, range=(lo, hi))
    m, _ = np.histogram(y[inb], bins=bins, range=(lo, hi), weights=w[inb])
    return np.concatenate([c, m])


def _below(y, w, lo: float) -> float:
    return float(w[y < lo].sum())


def _within(y, w, lo: float, hi: float, last: bool) -> np.ndarray:
    inb = (y >= lo) & ((y <= hi) if last else (y < hi))
    return np.column_stack([y[inb], w[inb]])


def _minmax_nonzero(v: np.ndarray) -> np.ndarray:
    a = np.abs(v if v.ndim == 2 else v[:, None])
    nz = np.where(a > 0, a, np.inf)
    return np.vstack([nz.min(axis=0), a.max(axis=0)])


def _combine_minmax(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.vstack([np.minimum(u[0], v[0]), np.maximum(u[1], v[1])])


def _concat(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts)


SELECT_COLLECT = 200_000
"""Exact selection fetches the rows of the current histogram bin once at most this many."""


def select_by_mass(y: da.Array, w: da.Array, target: float, bins: int = 4096) -> float:
    """The smallest y_k with ``sum_{y_i <= y_k} w_i >= target`` (the order statistic of
    ``weighted_quantile``), exactly: histogram passes narrow a bracket by ``bins`` per pass
    until its bin holds at most :data:`SELECT_COLLECT` rows, which are fetched and sorted."""
    lo, hi = (float(v) for v in dask.compute(y.min(), y.max()))
    below = 0.0
    while True:
        if lo == hi or np.nextafter(lo, np.inf) >= hi:
            eq = float(w[y == lo].sum().compute())
            return lo if below + eq >= target or lo == hi else hi
        parts = [dask.delayed(_hist)(a, b, lo, hi, bins) for a, b in
                 zip(blocks(y), blocks(w), strict=True)]
        h = np.asarray(tree_sum(parts).compute())
        cnt, mass = h[:bins], h[bins:]
        edges = np.linspace(lo, hi, bins + 1)
        i = min(int(np.searchsorted(below + np.cumsum(mass), target)), bins - 1)
        below += float(mass[:i].sum())
        last = i == bins - 1
        if cnt[i] <= SELECT_COLLECT or (edges[i], edges[i + 1]) == (lo, hi):
            parts = [dask.delayed(_within)(a, b, edges[i], edges[i + 1], last)
                     for a, b in zip(blocks(y), blocks(w), strict=True)]
            got = np.concatenate(dask.compute(parts)[0])
            if got.shape[0] == 0:
                return float(edges[i])
            got = got[np.argsort(got[:, 0], kind="stable")]
            cum = below + np.cumsum(got[:, 1])
            return float(got[min(int(np.searchsorted(cum, target)), got.shape[0] - 1), 0])
        lo, hi = float(edges[i]), float(edges[i + 1])


class DaskLadRows:
    """AID-LAD's row operations (those of ``solvers.rows.LadRows``) on Dask arrays, plus the
    preparation AID does on the rows (natural scale, equilibration, initial clustering, the
    first aggregation), each as chunk-wise passes mirroring the in-memory code."""

    def __init__(self, X: da.Array, y: da.Array, s: da.Array) -> None:
        self.X, self.y, self.s = X, y, s
        self.n, self.p = X.shape
        self._blocks = list(zip(blocks(X), blocks(y), blocks(s), strict=True))

    # -- checks
    @classmethod
    def checked(cls, X: Any, y: Any, sample_weight: Any, fit_intercept: bool) -> DaskLadRows:
        """Check X, y and the weights chunk by chunk (one pass); drop rows of weight 0."""
        X = as_dask_matrix(X, "X", min_features=0 if fit_intercept else 1)
        rows = X.chunks[0]
        y = aligned_vector(y, rows, "y", "X")
        s = (da.ones(X.shape[0], chunks=(rows,)) if sample_weight is None
             else aligned_vector(sample_weight, rows, "sample_weight", "X"))
        fx, fy, fs, neg, pos, zero = dask.compute(
            [dask.delayed(_flags)(b, X.shape[1]) for b in blocks(X)],
            [dask.delayed(_flags)(b, -1) for b in blocks(y)],
            [dask.delayed(_flags)(b, -1) for b in blocks(s)],
            (s < 0).any(), (s > 0).any(), (s == 0).any())
        refuse_bad_chunks(np.array(fx).reshape(-1, 4), "X", X.shape[1])
        refuse_bad_chunks(np.array(fy).reshape(-1, 4), "y", -1)
        refuse_bad_chunks(np.array(fs).reshape(-1, 4), "sample_weight", -1)
        if neg:
            raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
        if not pos:
            raise DataError("'sample_weight' is all zero; at least one weight must be positive.")
        if zero:
            keep = s > 0
            X, y, s = X[keep], y[keep], s[keep]
            X, y, s = X.compute_chunk_sizes(), y.compute_chunk_sizes(), s.compute_chunk_sizes()
        return cls(X, y, s)

    # -- preparation (mirrors aid_lad / lad_clusters in memory)
    def natural_scale(self, fit_intercept: bool, quantile: float) -> float:
        """``lad_natural_scale`` over the chunks (exact weighted quantile by selection)."""
        m = self.weighted_quantile(quantile) if fit_intercept else 0.0
        parts = [dask.delayed(_loss_at)(y, s, m, quantile) for _, y, s in self._blocks]
        return float(tree_sum(parts).compute())

    def weighted_quantile(self, quantile: float) -> float:
        """``weighted_quantile(y, s, quantile)`` of :mod:`solvers.aid.lad`, exactly."""
        smin, smax, total = (float(v) for v in dask.compute(self.s.min(), self.s.max(),
                                                             self.s.sum()))
        if smin == smax and quantile == 0.5:  # np.median: the middle one or two order stats
            ones = da.ones_like(self.y)
            k = self.n // 2
            hi = select_by_mass(self.y, ones, k + 1.0)
            return hi if self.n % 2 else float(np.mean([select_by_mass(self.y, ones, k), hi]))
        w = self.s
        # in memory: cum = cumsum(s sorted); the first index with cum >= quantile * cum[-1]
        return select_by_mass(self.y, w, quantile * total)

    def scaling(self, natural: float) -> Any:
        """``LadScaling.of`` from column maxima/minima and weight totals (one pass)."""
        from solvers.aid.scaling import COLUMN_FREE_EXP, LadScaling, pow2_factor

        total, ymax, cmax, cmin = dask.compute(self.s.sum(), abs(self.y).max(),
                                               self.X.max(axis=0), self.X.min(axis=0))
        total = float(total)
        dev = natural / total if natural > 0 else float(ymax)
        col = (pow2_factor(np.maximum(cmax, -cmin), COLUMN_FREE_EXP) if self.p and self.n
               else np.ones(self.p))
        return LadScaling(col=col, t=float(pow2_factor(dev)[0]),
                          w=float(pow2_factor(total / self.n)[0]))

    def scaled(self, sc: Any) -> DaskLadRows:
        """The rows of ``(X c, t y, w s)`` (lazy)."""
        X = self.X if np.all(sc.col == 1.0) else self.X * sc.col
        return DaskLadRows(X, self.y * sc.t, self.s * sc.w)

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``idx`` (sorted) of X, y, s in memory."""
        return dask.compute(self.X[idx], self.y[idx], self.s[idx])

    def labels_from(self, init: Any) -> da.Array:
        """User labels (numpy or Dask, one int per row) chunked like the rows."""
        lab = init if hasattr(init, "chunks") else da.from_array(np.asarray(init))
        if lab.shape != (self.n,) or not np.issubdtype(lab.dtype, np.integer):
            raise ValueError(
                f"'init' must be a method name or an int array of one cluster label per row "
                f"({self.n}); got {type(init).__name__} of shape {getattr(lab, 'shape', None)}.")
        return lab.astype(np.int64).rechunk((self.X.chunks[0],))

    def initial_labels(self, K: int, method: str, fit_intercept: bool, seed: int,
                       quantile: float) -> da.Array:
        """``lad_clusters`` over the chunks: the same subsample, fit, bins and halving."""
        from solvers.aid.clustering import (
            DEFAULT_SAMPLE_SIZE,
            bin_edges,
            fit_lad_subsample,
            subsample,
        )

        if K >= self.n:
            return da.arange(self.n, chunks=(self.X.chunks[0],), dtype=np.int64)
        if method == "kmeans":
            raise DataError("The 'init' parameter of aid_lad must be 'band' or 'quantile' on a "
                            "Dask array ('kmeans' needs every row in memory); got 'kmeans'.")
        rng = np.random.default_rng(seed)
        idx = subsample(self.n, DEFAULT_SAMPLE_SIZE, rng)
        Xs, ys, ss = self.take(idx)
        beta, b = fit_lad_subsample(Xs, ys, ss, fit_intercept=fit_intercept,
                                    idx=np.arange(idx.shape[0]), quantile=quantile)
        r = self.map_rows(_resid, beta, b)
        k = K if method == "quantile" else max(1, K // 2)
        if k >= self.n:
            labels = da.arange(self.n, chunks=(self.X.chunks[0],), dtype=np.int64)
        else:
            idx = subsample(self.n, 100_000, rng)
            rs, ws = dask.compute(r[idx], self.s[idx])
            edges = bin_edges(rs, ws, k, method=method)
            labels = compact(da.map_blocks(_searchsorted, r, edges, dtype=np.int64))
        if method == "quantile" or self.p == 0:
            return labels.persist()
        centre = self.take(subsample(self.n, DEFAULT_SAMPLE_SIZE, rng))[0].mean(axis=0)
        return compact(self.map_rows(_high, centre, dtype=np.int64, labels=labels)).persist()

    def map_rows(self, func, *args, dtype: Any = float, labels: da.Array | None = None
                 ) -> da.Array:
        """An n-vector ``func(X_j, y_j, *args)`` per chunk, or ``func(X_j, labels_j, *args)``
        (lazy)."""
        second = [y for _, y, _ in self._blocks] if labels is None else blocks(labels)
        return da.concatenate([
            da.from_delayed(dask.delayed(func)(x, v, *args), shape=(rows,), dtype=dtype)
            for (x, _, _), v, rows in zip(self._blocks, second, self.X.chunks[0], strict=True)])

    def aggregate(self, labels: da.Array) -> Any:
        """``aggregate(X, y, s, labels)``: labels compacted, sums per cluster in a tree."""
        from solvers.aid.aggregation import Aggregate

        labels = compact(labels).persist()
        K = int(labels.max().compute()) + 1
        parts = [dask.delayed(_sums)(x, y, s, lab, K)
                 for (x, y, s), lab in zip(self._blocks, blocks(labels), strict=True)]
        M = np.asarray(tree_sum(parts).compute())
        return Aggregate(labels=labels, W=M[:, 0], SX=M[:, 1:-1], SY=M[:, -1])

    # -- the loop's operations
    @property
    def abs_y(self) -> float:
        """``sum_i s_i |y_i|``."""
        return float(da.dot(self.s, abs(self.y)).compute())

    @property
    def max_abs_y(self) -> float:
        """``max_i |y_i|``."""
        return float(abs(self.y).max().compute())

    def evaluate(self, beta: np.ndarray, b: float, agg: Any, tol: float,
                 quantile: float) -> tuple[float, np.ndarray, tuple]:
        """``(E, mixed, state)`` in one pass; ``state`` carries what ``split`` needs."""
        K = agg.n_clusters
        parts = [dask.delayed(_evaluate)(x, y, s, lab, beta, b, K, tol, quantile)
                 for (x, y, s), lab in zip(self._blocks, blocks(agg.labels), strict=True)]
        out = np.asarray(tree_sum(parts).compute())
        pos, neg = out[1:K + 1], out[K + 1:2 * K + 1]
        tot, cnt = out[2 * K + 1:4 * K + 1], out[4 * K + 1:]
        return float(out[0]), (pos > 0) & (neg > 0), (beta, b, tot, cnt)

    def split(self, agg: Any, mixed: np.ndarray, state: tuple,
              refine: bool) -> tuple[np.ndarray, np.ndarray]:
        """``split_mixed`` over the chunks: one pass for the pieces and their sums, then the
        labels are renumbered beside the chunks (no pass over X)."""
        beta, b, tot, cnt = state
        K, P = agg.n_clusters, (4 if refine else 2)
        mixed_ids = np.flatnonzero(mixed)
        mixed_pos = np.full(K, -1, dtype=np.int64)
        mixed_pos[mixed_ids] = np.arange(mixed_ids.shape[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = tot / cnt if refine else None
        parts = [dask.delayed(_split_codes)(x, y, s, lab, beta, b, mixed_pos, mean, P)
                 for (x, y, s), lab in zip(self._blocks, blocks(agg.labels), strict=True)]
        codes = da.concatenate([
            da.from_delayed(dask.delayed(operator.getitem)(q, 0), shape=(rows,), dtype=np.int64)
            for q, rows in zip(parts, self.X.chunks[0], strict=True)])
        total = tree_sum([dask.delayed(operator.getitem)(q, 1) for q in parts])
        codes, total = dask.persist(codes, total)
        M = np.asarray(total.compute())
        keys = np.flatnonzero(M[:, 0] > 0)  # the pieces present, in the order of np.unique
        key_cluster = mixed_ids[keys // P]
        first = np.ones(keys.shape[0], dtype=bool)
        first[1:] = key_cluster[1:] != key_cluster[:-1]
        old_ids = key_cluster[first]
        n_new = int((~first).sum())
        new_ids = K + np.arange(n_new, dtype=np.int64)
        key_id = np.full(M.shape[0], -1, dtype=np.int64)
        key_id[keys[first]] = old_ids
        key_id[keys[~first]] = new_ids
        agg.labels = da.map_blocks(_relabel, agg.labels, codes, key_id,
                                   dtype=np.int64).persist()
        ids = key_id[keys]
        agg.W = np.concatenate([agg.W, np.zeros(n_new)])
        agg.SX = np.concatenate([agg.SX, np.zeros((n_new, agg.SX.shape[1]))])
        agg.SY = np.concatenate([agg.SY, np.zeros(n_new)])
        agg.W[ids], agg.SX[ids], agg.SY[ids] = M[keys, 1], M[keys, 2:-1], M[keys, -1]
        return old_ids, new_ids

    def columns(self) -> dict[str, np.ndarray]:
        """Per named array its smallest non-zero and largest |value| (same dynamic range)."""
        parts = [dask.delayed(_minmax_nonzero)(dask.delayed(np.column_stack)([x, y, s]))
                 for x, y, s in self._blocks]
        while len(parts) > 1:
            nxt = [dask.delayed(_combine_minmax)(parts[i], parts[i + 1])
                   for i in range(0, len(parts) - 1, 2)]
            parts = nxt + ([parts[-1]] if len(parts) % 2 else [])
        mm = np.asarray(parts[0].compute())
        mm = np.where(np.isinf(mm), 0.0, mm)
        names = [f"column {j} of X" for j in range(self.p)] + ["y", "sample_weight"]
        return {nm: mm[:, j] for j, nm in enumerate(names)}


def _loss_at(y: np.ndarray, s: np.ndarray, m: float, quantile: float) -> float:
    from solvers.aid.lad import check_loss

    return check_loss(y - m, s, quantile)


def compact(labels: da.Array) -> da.Array:
    """``compact_labels`` over the chunks: a global count of the labels, then a remap."""
    size = int(labels.max().compute()) + 1
    if labels.size and int(labels.min().compute()) < 0:
        raise ValueError("cluster labels must be >= 0.")
    parts = [dask.delayed(_count_labels)(lab, size) for lab in blocks(labels)]
    remap = np.cumsum(np.asarray(tree_sum(parts).compute()) > 0) - 1
    return da.map_blocks(_remap, labels, remap, dtype=np.int64)
