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
from solvers.rows import lad_residual
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
    with np.errstate(over="ignore", invalid="ignore"):
        if blk.dtype.kind == "f" and np.isfinite(np.sum(blk)):  # as check_finite's fast path
            return np.array([0, 0, 0, blk.shape[0]], dtype=np.int64)
    return np.array([np.isnan(blk).any(), np.isinf(blk).any(), 0, blk.shape[0]], dtype=np.int64)


def _add(a: Any, b: Any) -> Any:
    return a + b


def _rmatvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    return a.T @ v


def _norms_rmatvec(a: np.ndarray, v: np.ndarray) -> tuple:
    a = np.asarray(a)
    return a.T @ v, np.einsum("ij,ij->i", a, a), np.einsum("ij,ij->j", a, a)


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


def blocks(x: da.Array, fuse: bool = True) -> list:
    """The row chunks of ``x`` as delayed values, in order; ``fuse=False`` keeps the graph
    unoptimised, so arrays sliced from the same chunks (X and y of one file) share its load."""
    return list(x.to_delayed(optimize_graph=fuse).ravel())


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
        Ap, total = dask.persist(Ap, total, optimize_graph=False)  # no task twice
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

    def norms_rmatvec(self, v: da.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(A' v, ||a_i||^2 per row, ||A e_j||^2 per column)`` in one pass; the row norms
        (an n-vector, 8 n bytes) come to the caller, for a row sample drawn there."""
        got = dask.compute([dask.delayed(_norms_rmatvec)(a, vb)
                            for a, vb in zip(self._a, blocks(v), strict=True)])[0]
        return (np.sum([g[0] for g in got], axis=0), np.concatenate([g[1] for g in got]),
                np.sum([g[2] for g in got], axis=0))

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The rows ``idx`` (sorted) in memory; each chunk gives only its rows (a memory-mapped
        chunk reads just their pages)."""
        local = _local(np.asarray(idx, dtype=np.int64), _chunk_offsets(self.A.chunks[0]))
        parts = [dask.delayed(operator.getitem)(a, i) for a, i in zip(self._a, local, strict=True)
                 if i.size]
        return np.concatenate(dask.compute(parts)[0] or [np.zeros((0, self.shape[1]))])

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
    return lad_residual(x, y, beta, b)


def _sums(x, y, s, lab, K: int) -> np.ndarray:
    from solvers.aid.aggregation import cluster_sums

    W, SX, SY = cluster_sums(x, y, s, lab, K)
    return np.column_stack([W, SX, SY])


def _evaluate_fetch(x, y, s, lab, beta, b, K: int, tol: float, quantile: float, means: bool,
                    guess: tuple | None, cap: int) -> tuple[np.ndarray, tuple | None]:
    """[E, pos (K), neg (K), count per (cluster, r > 0) (2K), with ``means`` the sums of |r|
    per (cluster, r > 0) (2K)] (:func:`solvers.aid.lad_kernels.evaluate`), and with
    ``guess = (cand, minority_pos)`` the rows of the candidate clusters on their guessed
    minority side (r > 0 when ``minority_pos``) as (positions in the chunk, [1, s, s x, s y],
    clusters): what ``split_near`` would fetch, taken in the same pass; None when there are
    none to guess or more than ``cap`` of them."""
    from solvers.aid import lad_kernels

    x, y, s, lab = np.asarray(x), np.asarray(y), np.asarray(s), np.asarray(lab)
    vec, r = lad_kernels.evaluate(x, y, s, lab, beta, b, K, tol, quantile, means)
    if guess is None:
        return vec, None
    cand, minority_pos = guess
    at = np.flatnonzero(cand[lab] & ((r > 0) == minority_pos[lab]))
    if at.shape[0] > cap:
        return vec, None
    xs, ss = x[at], s[at]
    return vec, (at, np.column_stack([np.ones(at.shape[0]), ss, xs * ss[:, None], ss * y[at]]),
                 lab[at])


def _near_apply_at(lab: np.ndarray, at: list, offsets: np.ndarray, block_info=None
                   ) -> np.ndarray:
    """A chunk's labels after ``split_near`` from prefetched rows: rows ``at[chunk]`` get
    ``offsets[chunk] + 0, 1, ...``."""
    j = block_info[0]["chunk-location"][0]
    out = np.array(lab, dtype=np.int64, copy=True)
    out[at[j]] = offsets[j] + np.arange(at[j].shape[0])
    return out


def _prefetched(pre: tuple | None, fine: np.ndarray, minority_pos: np.ndarray
                ) -> tuple[list, list] | None:
    """The rows ``split_near`` needs, from the evaluate pass's prefetch, when its guess was
    right for every cluster to split (each a candidate, its minority side as guessed):
    (per chunk the positions, per chunk ([1, s, s x, s y], clusters)); else None."""
    if pre is None:
        return None
    (cand, guess_pos), fetched = pre
    ids = np.flatnonzero(fine)
    if not (cand[ids].all() and np.array_equal(guess_pos[ids], minority_pos[ids])):
        return None
    at, rest = [], []
    for pos, rows, lab in fetched:
        keep = fine[lab]
        at.append(pos[keep])
        rest.append((rows[keep], lab[keep]))
    return at, rest


def _side_abs_sums(x, y, lab, beta, b, K: int) -> np.ndarray:
    """sum |r| per (cluster, r > 0) (2K): the means of the "refine" split."""
    r = _resid(np.asarray(x), np.asarray(y), beta, b)
    lab = np.asarray(lab)
    return np.bincount(2 * lab + (r > 0), weights=np.abs(r), minlength=2 * K)


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


def apply_pieces(agg: Any, M: np.ndarray, codes: da.Array, mixed_ids: np.ndarray, P: int,
                 persist: bool) -> tuple[np.ndarray, np.ndarray]:
    """Update ``agg`` with the pieces of a split over the chunks: ``M`` holds per piece code
    [rows, W, SX, SY], ``codes`` each row's code (-1 outside the mixed clusters). The first
    non-empty piece of cluster k keeps id k, the others get K, K+1, ... (the numbering of
    ``split_mixed``); the new labels are persisted when ``persist``, else left lazy. Returns
    ``(old_ids, new_ids)``."""
    K = agg.n_clusters
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
    labels = da.map_blocks(_relabel, agg.labels, codes, key_id, dtype=np.int64)
    agg.labels = labels.persist() if persist else labels
    ids = key_id[keys]
    agg.W = np.concatenate([agg.W, np.zeros(n_new)])
    agg.SX = np.concatenate([agg.SX, np.zeros((n_new, agg.SX.shape[1]))])
    agg.SY = np.concatenate([agg.SY, np.zeros(n_new)])
    agg.W[ids], agg.SX[ids], agg.SY[ids] = M[keys, 1], M[keys, 2:-1], M[keys, -1]
    return old_ids, new_ids


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
    """[counts, masses] of y on ``bins`` equal bins of [lo, hi] (values outside are ignored,
    as np.histogram does); the masses of weights ``w``, or the counts again when w is None."""
    c, _ = np.histogram(y, bins=bins, range=(lo, hi))
    m = c.astype(float) if w is None else np.histogram(y, bins=bins, range=(lo, hi),
                                                        weights=w)[0]
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
SAMPLE_PER_CHUNK = 4096
"""The check pass keeps this many evenly spaced (y, s) of each chunk: their quantiles bracket
the natural scale's quantile, so the first pass over y also fetches the bracket's rows."""
PREFETCH_ROWS = 2_000_000
"""The evaluate pass prefetches the guessed minority rows of the candidate clusters (for
``split_near``) only while a chunk holds at most this many over the number of chunks."""
BRACKET_ROWS = 2_000_000
"""The sample's bracket is fetched with the first pass only when it should hold at most this
many rows (else the histogram and its bracket pass, as before)."""


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


# -- AID-LAD's preparation as fused passes: each is one task per chunk returning small arrays
def _stats(x, y, s, width: int) -> dict:
    """One chunk: the flags of x, y, s; whether s has negative / zero entries; and over the
    rows of positive weight: their number, min/max/sum of s, sum s|y|, the range of y and of
    each column of x (what the check, the scaling and the selection of the quantile need), in
    one compiled pass (:func:`solvers.aid.lad_kernels.chunk_stats`), and evenly spaced
    (y, s) of those rows."""
    from solvers.aid import lad_kernels

    x, y, s = np.asarray(x), np.asarray(y), np.asarray(s)
    if x.ndim != 2 or x.shape[1] != width or y.ndim != 1 or s.ndim != 1:
        return dict(flags=np.stack([_flags(x, width), _flags(y, -1), _flags(s, -1)]))
    x, y, s = (v if v.dtype.kind == "f" else v.astype(np.float64) for v in (x, y, s))
    q = lad_kernels.chunk_stats(x, y, s)
    flags = np.column_stack([q.pop("bad"), np.zeros(3, dtype=np.int64),
                             [x.shape[0], y.shape[0], s.shape[0]]])
    if flags[:, :3].any():
        return dict(flags=flags)
    out = dict(flags=flags, neg=q.pop("neg"), zero=q.pop("zero"), kept=q.pop("kept"))
    if not out["kept"]:
        return out
    out.update(q, yabs=max(-q["ymin"], q["ymax"]))
    at = np.linspace(0, out["kept"] - 1, min(out["kept"], SAMPLE_PER_CHUNK)).astype(np.int64)
    if out["kept"] < s.shape[0]:
        at = np.flatnonzero(s > 0)[at]
    out["sample"] = np.column_stack([y[at], s[at]])  # evenly spaced rows of the chunk
    return out


def _merge_stats(parts: list[dict], p: int) -> dict:
    """The statistics of the kept rows of all chunks from the per-chunk ones of :func:`_stats`
    (minima and maxima combined, sums added in chunk order)."""
    full = [q for q in parts if "smin" in q]
    inf = np.inf
    return dict(kept=np.array([q.get("kept", 0) for q in parts], dtype=np.int64),
                neg=any(q.get("neg", False) for q in parts),
                zero=any(q.get("zero", False) for q in parts),
                smin=min((q["smin"] for q in full), default=inf),
                smax=max((q["smax"] for q in full), default=-inf),
                ssum=float(sum(q["ssum"] for q in full)), sy=float(sum(q["sy"] for q in full)),
                ymin=min((q["ymin"] for q in full), default=inf),
                ymax=max((q["ymax"] for q in full), default=-inf),
                yabs=max((q["yabs"] for q in full), default=0.0),
                cmax=np.max([q["cmax"] for q in full], axis=0) if full else np.zeros(p),
                cmin=np.min([q["cmin"] for q in full], axis=0) if full else np.zeros(p),
                sample=np.vstack([q["sample"] for q in full]) if full else np.zeros((0, 2)))


def _keep_rows(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.asarray(a)[np.asarray(s) > 0]


def _gather(x, y, s, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ``local`` (positions in this chunk) of x, y, s."""
    return np.asarray(x)[local], np.asarray(y)[local], np.asarray(s)[local]


def _hist_pass(x, y, s, local, lo: float, hi: float, bins: int, unit: bool,
               loss0: float | None, bracket: tuple | None = None) -> dict:
    """One chunk: the histogram of :func:`_hist` on [lo, hi] (None: none), the rows ``local``,
    when ``loss0`` holds the quantile ``check_loss(y, s)`` (the loss of the fit 0), and when
    ``bracket = (a, b, last)`` the :func:`_bracket` of [a, b]."""
    from solvers.aid.lad import check_loss

    y = np.asarray(y)
    out: dict = dict(rows=_gather(x, y, s, local) if local is not None else None)
    if bins:
        out["hist"] = _hist(y, None if unit else np.asarray(s), lo, hi, bins)
    if loss0 is not None:
        out["loss0"] = check_loss(y, np.asarray(s), loss0)
    if bracket is not None:
        out["bracket"] = _bracket(x, y, s, None, *bracket, unit)
    return out


def _bracket(x, y, s, local, a: float, b: float, last: bool, unit: bool) -> dict:
    """One chunk: the rows with ``a <= y < b`` (``<= b`` when ``last``) as [y, w, s] (w the
    selection weight: 1 or s), and for the rows below / above: sum s, sum s (a - y) and
    sum s (y - b) (the check loss at any m in [a, b] follows without a cancellation);
    :func:`solvers.aid.lad_kernels.bracket`."""
    from solvers.aid import lad_kernels

    return lad_kernels.bracket(np.asarray(y), np.asarray(s), a, b, last, unit)


def _initial_codes(x, y, s, beta, b: float, edges: np.ndarray, centre, halve: bool,
                   shift: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of ``lad_clusters``'s labels before compaction: the bin ``l`` of each
    residual (``searchsorted(edges, r)``), renumbered by ``shift`` (the compaction of the bins,
    when known; else the identity), then ``2 l + (x_j > centre_j)``, j = l mod p (``halve``).
    Returns (codes, presence count of each bin, [rows, W, SX, SY] per code)."""
    r = _resid(x, y, beta, b)
    lab = np.searchsorted(edges, r, side="left").astype(np.int64)
    nb = edges.shape[0] + 1
    present = np.bincount(lab, minlength=nb)
    if shift is not None:
        lab = shift[lab]
    size = nb
    if halve:
        lab = _high(x, lab, centre)
        size = 2 * nb
    return lab, present, _label_sums(x, y, s, lab, size)


def _pk_band(x, y, s, beta, b: float, a: float, z: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of the "pk" start: its local codes (0 below the bracket [a, z], 1 above,
    2 + the rank of a row inside it), [r, 1, s, s x, s y] of its rows inside the bracket (in
    row order) and [rows, W, SX, SY] of those below and above
    (:func:`solvers.aid.lad_kernels.pk_band`)."""
    from solvers.aid import lad_kernels

    return lad_kernels.pk_band(np.asarray(x), np.asarray(y), np.asarray(s), beta, b, a, z)


def _pk_final(code: np.ndarray, inside_label: np.ndarray, glob_ids: np.ndarray) -> np.ndarray:
    """A chunk's labels from its "pk" codes: below / above the bracket ``glob_ids[0|1]``, the
    k-th row inside it ``inside_label[k]``."""
    code = np.asarray(code)
    out = glob_ids[np.minimum(code, 1)]
    hit = code >= 2
    out[hit] = inside_label[code[hit] - 2]
    return out


def _near_select(x, y, lab, beta, b, fine: np.ndarray, minority_pos: np.ndarray) -> np.ndarray:
    """The rows of the clusters ``fine`` on their minority side (r > 0 when
    ``minority_pos``), as in ``split_near``."""
    r = _resid(np.asarray(x), np.asarray(y), beta, b)
    lab = np.asarray(lab)
    return fine[lab] & ((r > 0) == minority_pos[lab])


def _near_rows(x, y, s, lab, beta, b, fine, minority_pos
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk: per row its rank among the rows that leave their cluster (-1: stays),
    [1, s, s x, s y] of those rows, and their clusters."""
    sel = _near_select(x, y, lab, beta, b, fine, minority_pos)
    rank = np.full(sel.shape[0], -1, dtype=np.int64)
    rank[sel] = np.arange(int(sel.sum()))
    x, y, s = np.asarray(x)[sel], np.asarray(y)[sel], np.asarray(s)[sel]
    return (rank, np.column_stack([np.ones(x.shape[0]), s, x * s[:, None], s * y]),
            np.asarray(lab)[sel])


def _near_apply(lab: np.ndarray, rank: np.ndarray, offsets: np.ndarray,
                block_info=None) -> np.ndarray:
    """A chunk's labels after ``split_near``: leaving rows ``offsets[chunk] + rank``."""
    j = block_info[0]["chunk-location"][0]
    rank = np.asarray(rank)
    return np.where(rank >= 0, offsets[j] + rank, np.asarray(lab))


def _label_range(lab: np.ndarray) -> np.ndarray:
    lab = np.asarray(lab)
    return np.array([lab.min(), lab.max()] if lab.size else [0, -1], dtype=np.int64)


def _label_sums(x, y, s, lab, size: int) -> np.ndarray:
    """[rows, W, SX, SY] per label of one chunk (labels in [0, size))."""
    from solvers.aid.aggregation import cluster_sums

    W, SX, SY = cluster_sums(x, y, s, lab, size)
    return np.column_stack([np.bincount(lab, minlength=size), W, SX, SY])


def _chunk_offsets(rows: tuple) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)


def _local(idx: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Per chunk the positions (in the chunk) of the sorted global rows ``idx``."""
    cut = np.searchsorted(idx, offsets)
    return [idx[cut[j]:cut[j + 1]] - offsets[j] for j in range(offsets.shape[0] - 1)]


class DaskLadRows:
    """AID-LAD's row operations (those of ``solvers.rows.LadRows``) on Dask arrays, plus the
    preparation AID does on the rows (natural scale, equilibration, initial clustering, the
    first aggregation), as chunk-wise passes that give the in-memory numbers.

    Each pass is one graph, one task per chunk that returns small arrays: the check and the
    statistics of the scaling (one pass, done once per set of arrays: ``checked`` keeps the
    last few by their Dask names); the histogram of y and the subsample rows (one pass); the
    rows around the quantile and the pieces of the natural scale (one pass); the initial
    labels with their cluster sums (one pass, two when a bin is empty). Per AID iteration:
    ``evaluate`` (one pass, which also applies the previous split to the labels and keeps
    them beside the chunks) and ``split`` (one pass for the pieces and their sums).
    """

    _CACHE: dict = {}
    _CACHE_SIZE = 4

    def __init__(self, X: da.Array, y: da.Array, s: da.Array, stats: dict | None = None,
                 factors: tuple[float, float] = (1.0, 1.0)) -> None:
        self.X, self.y, self.s = X, y, s
        self.n, self.p = X.shape
        self._blocks = list(zip(blocks(X, False), blocks(y, False), blocks(s, False),
                                strict=True))
        self.stats = stats
        self._factors = factors  # (t, w): the scaling of y and s relative to ``stats``
        self._natural: dict = {}

    # -- checks
    @classmethod
    def checked(cls, X: Any, y: Any, sample_weight: Any, fit_intercept: bool) -> DaskLadRows:
        """Check X, y and the weights chunk by chunk (one pass, which also gathers the
        statistics of the preparation); drop rows of weight 0. The same arrays (by their Dask
        names) are checked once: the last few checked sets are kept."""
        X = as_dask_matrix(X, "X", min_features=0 if fit_intercept else 1)
        rows = X.chunks[0]
        y = aligned_vector(y, rows, "y", "X")
        s = (da.ones(X.shape[0], chunks=(rows,)) if sample_weight is None
             else aligned_vector(sample_weight, rows, "sample_weight", "X"))
        key = (cls, X.name, y.name, s.name, bool(fit_intercept))
        if key in cls._CACHE:
            return cls._CACHE[key]
        (parts,) = dask.compute([dask.delayed(_stats)(a, b, c, X.shape[1]) for a, b, c in
                                 zip(blocks(X, False), blocks(y, False), blocks(s, False),
                                     strict=True)], optimize_graph=False)
        flags = np.stack([q["flags"] for q in parts])
        refuse_bad_chunks(flags[:, 0], "X", X.shape[1])
        refuse_bad_chunks(flags[:, 1], "y", -1)
        refuse_bad_chunks(flags[:, 2], "sample_weight", -1)
        st = _merge_stats(parts, X.shape[1])
        if st["neg"]:
            raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
        if not st["kept"].sum():
            raise DataError("'sample_weight' is all zero; at least one weight must be positive.")
        if st["zero"]:
            X, y, s = cls._drop_zero(X, y, s, st["kept"])
        out = cls(X, y, s, stats=st)
        cls._CACHE[key] = out
        while len(cls._CACHE) > cls._CACHE_SIZE:
            cls._CACHE.pop(next(iter(cls._CACHE)))
        return out

    @staticmethod
    def _drop_zero(X: da.Array, y: da.Array, s: da.Array, kept: np.ndarray) -> tuple:
        """X, y, s without their rows of weight 0, chunk by chunk (the sizes are known)."""
        out = []
        for arr in (X, y, s):
            parts = [da.from_delayed(dask.delayed(_keep_rows)(a, w), (int(k), *arr.shape[1:]),
                                     dtype=np.float64)
                     for a, w, k in zip(blocks(arr), blocks(s), kept, strict=True) if k]
            out.append(da.concatenate(parts))
        return tuple(out)

    def _stats_or_pass(self) -> dict:
        if self.stats is None:  # rows built directly (not by ``checked``)
            (parts,) = dask.compute([dask.delayed(_stats)(x, y, s, self.p)
                                     for x, y, s in self._blocks])
            self.stats = _merge_stats(parts, self.p)
            self._factors = (1.0, 1.0)
        return self.stats

    # -- preparation (mirrors aid_lad / lad_clusters in memory)
    def prepare(self, K: int, init: Any, fit_intercept: bool, seed: int,
                quantile: float) -> tuple[DaskLadRows, Any, float, Any]:
        """``(scaled rows, first Aggregate, natural scale, LadScaling)`` as ``aid_lad`` does in
        memory: natural scale, equilibration, ``lad_clusters`` (or the labels ``init``), the
        sums. The subsample rows travel with the pass over y that finds the quantile."""
        from solvers.aid.aggregation import Aggregate

        plan = self._sample_plan(K, init, seed, fit_intercept) if isinstance(init, str) else None
        natural, rows = self._natural_and_rows(fit_intercept, quantile,
                                               plan["union"] if plan else None)
        sc = self.scaling(natural)
        data = self.scaled(sc)
        if plan is not None and plan.get("pk"):
            return data, data._pk_initial(plan, rows, sc, fit_intercept, quantile), natural, sc
        if plan is None:
            agg = data.aggregate(init, persist=False)
        elif plan["all"]:
            agg = data.aggregate(da.arange(self.n, chunks=(self.X.chunks[0],),
                                           dtype=np.int64), persist=False)
        else:
            codes, M = data._initial(plan, rows, sc, init, fit_intercept, quantile)
            keys = np.flatnonzero(M[:, 0] > 0)
            remap = np.cumsum(M[:, 0] > 0) - 1
            agg = Aggregate(labels=da.map_blocks(_remap, codes, remap, dtype=np.int64),
                            W=M[keys, 1], SX=M[keys, 2:-1], SY=M[keys, -1])
        return data, agg, natural, sc

    def _sample_plan(self, K: int, method: str, seed: int, fit_intercept: bool = True) -> dict:
        """The subsamples ``lad_clusters`` draws, in its order, from ``default_rng(seed)``."""
        from solvers.aid.clustering import DEFAULT_SAMPLE_SIZE, pk_sizes, subsample

        if method == "pk":
            m, M = pk_sizes(self.n, self.p + int(fit_intercept))
            if M >= self.n - 2 or self.p + int(fit_intercept) == 0:
                return dict(all=True, union=None)
            rng = np.random.default_rng(seed)
            fit = subsample(self.n, m, rng)
            held = subsample(self.n, m, rng)  # for the band's bounds: residuals off the fit
            return dict(all=False, pk=True, fit=fit, held=held, band=M,
                        union=np.unique(np.concatenate([fit, held])))
        if K >= self.n:
            return dict(all=True, union=None)
        if method == "kmeans":
            raise DataError("The 'init' parameter of aid_lad must be 'band' or 'quantile' on a "
                            "Dask array ('kmeans' needs every row in memory); got 'kmeans'.")
        rng = np.random.default_rng(seed)
        plan: dict = dict(all=False, fit=subsample(self.n, DEFAULT_SAMPLE_SIZE, rng))
        k = K if method == "quantile" else max(1, K // 2)
        plan["k"] = k
        plan["bins"] = subsample(self.n, 100_000, rng) if k < self.n else None
        plan["centre"] = (subsample(self.n, DEFAULT_SAMPLE_SIZE, rng)
                          if method != "quantile" and self.p else None)
        parts = [v for v in (plan["fit"], plan["bins"], plan["centre"]) if v is not None]
        plan["union"] = np.unique(np.concatenate(parts))
        return plan

    def natural_scale(self, fit_intercept: bool, quantile: float) -> float:
        """``lad_natural_scale`` over the chunks (exact weighted quantile by selection)."""
        return self._natural_and_rows(fit_intercept, quantile, None)[0]

    def _natural_and_rows(self, fit_intercept: bool, quantile: float,
                          union: np.ndarray | None) -> tuple[float, tuple | None]:
        """The natural scale (kept per (fit_intercept, quantile)) and the rows ``union`` of
        X, y, s, fetched by the first pass over y."""
        st = self._stats_or_pass()
        key = (bool(fit_intercept), float(quantile))
        known = self._natural.get(key)
        if known is not None and union is None:
            return known, None
        local = None if union is None else _local(union, _chunk_offsets(self.X.chunks[0]))
        unit = st["smin"] == st["smax"] and quantile == 0.5
        bins = 4096 if fit_intercept and known is None else 0
        targets = self._targets(st, unit, quantile)
        bracket = self._sample_bracket(st, unit, targets) if bins else None
        parts = self._run(_hist_pass, local, st["ymin"], st["ymax"], bins, unit,
                          None if fit_intercept or known is not None else quantile, bracket)
        rows = None
        if union is not None:
            rows = tuple(np.concatenate([q["rows"][i] for q in parts]) for i in range(3))
        if known is None:
            if fit_intercept:
                known = None if bracket is None else self._bracket_loss(
                    [q["bracket"] for q in parts], bracket[0], bracket[1], None, targets,
                    quantile)
                if known is None:  # the sample's bracket missed: histogram, bracket pass
                    known = self._quantile_loss(parts, st, unit, quantile, bins)
            else:
                known = float(sum(q["loss0"] for q in parts))
            self._natural[key] = known
        return known, rows

    def _targets(self, st: dict, unit: bool, quantile: float) -> list[float]:
        """The selection masses of ``weighted_quantile`` (the two middle ranks of the plain
        median of an even count, whose mean it takes)."""
        k = self.n // 2
        if unit:
            return [k + 1.0] if self.n % 2 else [float(k), k + 1.0]
        return [quantile * st["ssum"]]

    def _sample_bracket(self, st: dict, unit: bool, targets: list[float]) -> tuple | None:
        """``(a, b, True)``: the closed bracket [a, b] between the check pass's sample values
        6 standard deviations of a sample quantile below and above the targets' ranks, or
        None when it would hold more than :data:`BRACKET_ROWS` rows (or the sample is
        empty)."""
        S = st["sample"]
        if S.shape[0] < 2:
            return None
        S = S[np.argsort(S[:, 0], kind="stable")]
        w = np.ones(S.shape[0]) if unit else S[:, 1]
        total = self.n if unit else st["ssum"]
        eff = w.sum() ** 2 / (w @ w)  # Kish's effective sample size
        f = np.array([min(targets), max(targets)]) / total
        slack = 6.0 * np.sqrt(f * (1.0 - f) / eff) + 2.0 / eff
        lo_f, hi_f = max(f[0] - slack[0], 0.0), min(f[1] + slack[1], 1.0)
        if (hi_f - lo_f) * self.n > BRACKET_ROWS:
            return None
        cum = np.cumsum(w) / w.sum()
        a = float(S[min(int(np.searchsorted(cum, lo_f)), S.shape[0] - 1), 0]) if lo_f > 0 \
            else st["ymin"]
        b = float(S[min(int(np.searchsorted(cum, hi_f)), S.shape[0] - 1), 0]) if hi_f < 1 \
            else st["ymax"]
        return a, max(b, a), True  # closed: [a, b] (ties at b stay inside)

    def _run(self, func, local, *args) -> list:
        """``func(x_j, y_j, s_j, local_j, *args)`` on every chunk, one graph."""
        local = local or [None] * len(self._blocks)
        (out,) = dask.compute([dask.delayed(func)(x, y, s, loc, *args)
                               for (x, y, s), loc in zip(self._blocks, local, strict=True)])
        return out

    def _quantile_loss(self, parts: list, st: dict, unit: bool, quantile: float,
                       bins: int) -> float:
        """``check_loss(y - m, s)`` with m the weighted quantile of ``weighted_quantile``:
        the histogram of ``parts`` brackets the order statistics, one more pass fetches the
        rows of the bracket and the loss pieces around it (more histogram passes, or the
        plain selection, when the bracket is still too full)."""
        targets = self._targets(st, unit, quantile)
        lo, hi, below = st["ymin"], st["ymax"], 0.0
        h = np.sum([q["hist"] for q in parts], axis=0)
        while True:
            if lo == hi or np.nextafter(lo, np.inf) >= hi:
                return self._plain_natural(quantile, unit, targets)
            cnt, mass = h[:bins], h[bins:]
            edges = np.linspace(lo, hi, bins + 1)
            cum = below + np.cumsum(mass)
            idx = [min(int(np.searchsorted(cum, t)), bins - 1) for t in targets]
            i0, i1 = min(idx), max(idx)
            a, b = float(edges[i0]), float(edges[i1 + 1])
            below += float(mass[:i0].sum())
            if cnt[i0:i1 + 1].sum() <= SELECT_COLLECT or (a, b) == (lo, hi):
                break
            lo, hi = a, b
            h = np.sum([q["hist"] for q in
                        self._run(_hist_pass, None, lo, hi, bins, unit, None)], axis=0)
        last = i1 == bins - 1
        got = self._run(_bracket, None, a, b, last, unit)
        loss = self._bracket_loss(got, a, b, below, targets, quantile)
        return self._plain_natural(quantile, unit, targets) if loss is None else loss

    @staticmethod
    def _bracket_loss(got: list, a: float, b: float, below: float | None,
                      targets: list[float], quantile: float) -> float | None:
        """``check_loss(y - m, s)`` from the chunks' :func:`_bracket` of [a, b], m the order
        statistic(s) of ``targets`` (selection mass). ``below`` is the mass of the rows under
        a when a histogram chose the bracket (it holds the targets, barring round-off in the
        masses: the last row is taken then); None for a bracket from the sample, whose rows
        must be seen to hold the targets (else None is returned)."""
        from solvers.aid.lad import check_loss

        R = np.concatenate([q["rows"] for q in got])
        strict = below is None
        if strict:
            below = float(sum(q["Mb"] for q in got))
            if not all(below < t for t in targets):
                return None
        if R.shape[0] == 0:
            return None
        R = R[np.argsort(R[:, 0], kind="stable")]
        cum = below + np.cumsum(R[:, 1])
        at = [int(np.searchsorted(cum, t)) for t in targets]
        if strict and max(at) >= R.shape[0]:
            return None
        vals = [float(R[min(i, R.shape[0] - 1), 0]) for i in at]
        m = float(np.mean(vals)) if len(vals) == 2 else vals[0]
        pieces = {f: float(sum(q[f] for q in got)) for f in ("Wb", "Lb", "Wa", "La")}
        return (check_loss(R[:, 0] - m, R[:, 2], quantile)
                + 2 * (1 - quantile) * (pieces["Lb"] + (m - a) * pieces["Wb"])
                + 2 * quantile * (pieces["La"] + (b - m) * pieces["Wa"]))

    def _plain_natural(self, quantile: float, unit: bool, targets: list[float]) -> float:
        """The selection of :func:`select_by_mass` and one pass for the loss (ties, ranges of
        a few floats)."""
        w = da.ones_like(self.y) if unit else self.s
        vals = [select_by_mass(self.y, w, t) for t in targets]
        m = float(np.mean(vals)) if len(vals) == 2 else vals[0]
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
        return select_by_mass(self.y, self.s, quantile * total)

    def scaling(self, natural: float) -> Any:
        """``LadScaling.of`` from the column ranges and weight totals of the check pass."""
        from solvers.aid.scaling import COLUMN_FREE_EXP, LadScaling, pow2_factor

        st = self._stats_or_pass()
        total = st["ssum"]
        dev = natural / total if natural > 0 else st["yabs"]
        col = (pow2_factor(np.maximum(st["cmax"], -st["cmin"]), COLUMN_FREE_EXP)
               if self.p and self.n else np.ones(self.p))
        return LadScaling(col=col, t=float(pow2_factor(dev)[0]),
                          w=float(pow2_factor(total / self.n)[0]))

    def scaled(self, sc: Any) -> DaskLadRows:
        """The rows of ``(X c, t y, w s)`` (lazy); their sums of s|y| and max |y| follow from
        the statistics exactly (powers of two)."""
        X = self.X if np.all(sc.col == 1.0) else self.X * sc.col
        t, w = self._factors
        y = self.y if sc.t == 1.0 else self.y * sc.t  # no copy per pass for a unit factor
        s = self.s if sc.w == 1.0 else self.s * sc.w
        return DaskLadRows(X, y, s, stats=self.stats,
                           factors=(t * sc.t, w * sc.w))

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``idx`` (sorted) of X, y, s in memory (one pass)."""
        local = _local(np.asarray(idx, dtype=np.int64), _chunk_offsets(self.X.chunks[0]))
        got = self._run(_gather, local)
        return tuple(np.concatenate([q[i] for q in got]) for i in range(3))

    def labels_from(self, init: Any) -> da.Array:
        """User labels (numpy or Dask, one int per row) chunked like the rows."""
        lab = init if hasattr(init, "chunks") else da.from_array(np.asarray(init))
        if lab.shape != (self.n,) or not np.issubdtype(lab.dtype, np.integer):
            raise ValueError(
                f"'init' must be a method name or an int array of one cluster label per row "
                f"({self.n}); got {type(init).__name__} of shape {getattr(lab, 'shape', None)}.")
        return lab.astype(np.int64).rechunk((self.X.chunks[0],))

    def _initial(self, plan: dict, rows: tuple, sc: Any, method: str, fit_intercept: bool,
                 quantile: float) -> tuple[da.Array, np.ndarray]:
        """``lad_clusters`` on the (scaled) rows: the fit and the bin edges from the fetched
        subsample rows, then one pass for the codes and their sums (a second one when a bin is
        empty, since the halving feature depends on the compacted bin)."""
        from solvers.aid.clustering import bin_edges, fit_lad_subsample

        union = plan["union"]
        Xu, yu, su = sc.apply(*rows)

        def pick(idx: np.ndarray) -> tuple:
            pos = np.searchsorted(union, idx)
            return Xu[pos], yu[pos], su[pos]

        Xs, ys, ss = pick(plan["fit"])
        beta, b = fit_lad_subsample(Xs, ys, ss, fit_intercept=fit_intercept,
                                    idx=np.arange(Xs.shape[0]), quantile=quantile)
        Xb, yb, sb = pick(plan["bins"])
        edges = bin_edges(_resid(Xb, yb, beta, b), sb, plan["k"], method=method)
        centre = None if plan["centre"] is None else pick(plan["centre"])[0].mean(axis=0)
        halve = centre is not None
        shift = None
        while True:
            parts = [dask.delayed(_initial_codes, nout=3)(x, y, s, beta, b, edges, centre,
                                                          halve, shift)
                     for x, y, s in self._blocks]
            codes = da.concatenate([da.from_delayed(q[0], shape=(r,), dtype=np.int64)
                                    for q, r in zip(parts, self.X.chunks[0], strict=True)])
            codes, present, sums = dask.persist(codes, tree_sum([q[1] for q in parts]),
                                                tree_sum([q[2] for q in parts]),
                                                optimize_graph=False)
            present, M = dask.compute(present, sums)
            present = np.asarray(present) > 0
            if shift is not None or not halve or present[:int(present.sum())].all():
                return codes, np.asarray(M)
            shift = np.cumsum(present) - 1  # an empty bin below others: halve by the compacted bin

    def _pk_initial(self, plan: dict, rows: tuple, sc: Any, fit_intercept: bool,
                    quantile: float) -> Any:
        """The "pk" start of ``solvers.aid.clustering.pk_start`` over the chunks: the exact fit
        of the fetched subsample, then one pass at that fit that returns each chunk's rows
        whose residual lies in a bracket [a, z] (from the quantiles of a second, held-out
        subsample, 6 standard deviations out: it holds the band with near certainty) and the
        sums of the rows below and above it. The band's bounds are then the exact order
        statistics of rank tau n -+ band / 2, as in memory (clamped to the bracket in the rare
        case it misses one); the bracket's other rows join the globs. The labels stay lazy
        until the first evaluate."""
        from solvers.aid.aggregation import Aggregate
        from solvers.aid.clustering import pk_fit

        Xu, yu, su = sc.apply(*rows)
        fit_rows = np.searchsorted(plan["union"], plan["fit"])
        held = np.searchsorted(plan["union"], plan["held"])
        fit = pk_fit(Xu[fit_rows], yu[fit_rows], su[fit_rows], fit_intercept, quantile)
        if fit is None:  # pragma: no cover - a small, well-posed LP
            raise DataError("init='pk': the subsample fit failed; use init='band'.")
        beta, b = fit
        a, z = self._pk_bracket(_resid(Xu[held], yu[held], beta, b), quantile, plan["band"])
        parts = [dask.delayed(_pk_band, nout=3)(x, y, w, beta, b, a, z)
                 for x, y, w in self._blocks]
        code = da.concatenate([da.from_delayed(q[0], shape=(r,), dtype=np.int64)
                               for q, r in zip(parts, self.X.chunks[0], strict=True)])
        code, rest = dask.persist(code, [(q[1], q[2]) for q in parts], optimize_graph=False)
        (rest,) = dask.compute(rest)
        sides = np.sum([q[1] for q in rest], axis=0)  # [below, above] x [rows, W, SX, SY]
        inside = [q[0] for q in rest]
        lo, hi = self._pk_band_bounds(np.concatenate([q[:, 0] for q in inside]),
                                      int(sides[0, 0]), quantile, plan["band"], a, z)
        cls = [np.where(q[:, 0] < lo, 0, np.where(q[:, 0] > hi, 1, 2)) for q in inside]
        for side in (0, 1):  # the bracket's rows outside the band join the globs
            sides[side] += np.vstack([q[c == side, 1:] for q, c in zip(inside, cls,
                                                                        strict=True)]).sum(0)
        present = sides[:, 0] > 0
        glob_ids = np.cumsum(present) - 1  # the glob ids after dropping an empty one
        n_band = [int((c == 2).sum()) for c in cls]
        first = int(present.sum()) + np.concatenate([[0], np.cumsum(n_band)[:-1]])
        labels = []
        for c, f in zip(cls, first, strict=True):
            lab = np.where(c == 2, 0, glob_ids[np.minimum(c, 1)])
            lab[c == 2] = f + np.arange(int((c == 2).sum()))
            labels.append(lab)
        codes = da.concatenate([
            da.from_delayed(dask.delayed(_pk_final)(q, lab, glob_ids), shape=(r,),
                            dtype=np.int64)
            for q, lab, r in zip(code.to_delayed(optimize_graph=False).ravel(), labels,
                                 self.X.chunks[0], strict=True)])
        band = np.vstack([q[c == 2, 1:] for q, c in zip(inside, cls, strict=True)])
        M = np.vstack([sides[present], band])
        return Aggregate(labels=codes, W=M[:, 1], SX=M[:, 2:-1], SY=M[:, -1],
                         start=np.append(beta, b) if fit_intercept else beta)

    def _pk_bracket(self, r_held: np.ndarray, quantile: float, band: int
                    ) -> tuple[float, float]:
        """[a, z]: the held-out subsample's residual quantiles 6 standard deviations of a
        sample quantile beyond the ranks tau -+ band / (2 n) (those quantiles alone were off
        by a third of the band's width at 171,428 x 5, tau = 0.3, and the globs then held
        half misfits)."""
        h = band / (2.0 * self.n)
        ranks = np.array([max(quantile - h, 0.0), min(quantile + h, 1.0)])
        m = r_held.shape[0]
        slack = 6.0 * np.sqrt(ranks * (1 - ranks) / m) + 1.0 / m
        a, z = np.quantile(r_held, [max(ranks[0] - slack[0], 0.0), min(ranks[1] + slack[1], 1.0)])
        return float(a), float(max(z, a + 1e-12 * (1.0 + abs(a))))

    def _pk_band_bounds(self, r_in: np.ndarray, below: int, quantile: float, band: int,
                        a: float, z: float) -> tuple[float, float]:
        """The residuals of rank lo_k, hi_k = tau n - band / 2, lo_k + band (as ``pk_start``
        in memory) from the bracket's residuals ``r_in`` (``below`` rows lie under it); a
        rank outside the bracket gives its edge."""
        n = self.n
        lo_k = int(min(max(quantile * n - band / 2, 0), n - 1))
        hi_k = int(min(lo_k + band, n - 1))
        out = []
        for k in (lo_k, hi_k):
            j = k - below
            out.append(a if j < 0 else z if j >= r_in.shape[0] else
                       float(np.partition(r_in, j)[j]))
        return out[0], max(out[1], out[0])

    def map_rows(self, func, *args, dtype: Any = float, labels: da.Array | None = None
                 ) -> da.Array:
        """An n-vector ``func(X_j, y_j, *args)`` per chunk, or ``func(X_j, labels_j, *args)``
        (lazy)."""
        second = [y for _, y, _ in self._blocks] if labels is None else blocks(labels)
        return da.concatenate([
            da.from_delayed(dask.delayed(func)(x, v, *args), shape=(rows,), dtype=dtype)
            for (x, _, _), v, rows in zip(self._blocks, second, self.X.chunks[0], strict=True)])

    def aggregate(self, labels: da.Array, persist: bool = True) -> Any:
        """``aggregate(X, y, s, labels)`` in two passes: the range of the labels, then the sums
        per label, whose empty labels the compaction (``compact_labels``) drops. The compacted
        labels are persisted (or left lazy for the first ``evaluate`` to keep)."""
        from solvers.aid.aggregation import Aggregate

        lab = blocks(labels)
        (rng,) = dask.compute([dask.delayed(_label_range)(q) for q in lab])
        rng = np.array(rng).reshape(-1, 2)
        if rng.size and int(rng[:, 0].min()) < 0:
            raise ValueError("cluster labels must be >= 0.")
        size = int(rng[:, 1].max()) + 1 if rng.size else 0
        M = np.asarray(tree_sum([dask.delayed(_label_sums)(x, y, s, q, size)
                                 for (x, y, s), q in zip(self._blocks, lab, strict=True)]
                                ).compute())
        present = M[:, 0] > 0
        labels = da.map_blocks(_remap, labels, np.cumsum(present) - 1, dtype=np.int64)
        return Aggregate(labels=labels.persist() if persist else labels, W=M[present, 1],
                         SX=M[present, 2:-1], SY=M[present, -1])

    # -- the loop's operations
    @property
    def abs_y(self) -> float:
        """``sum_i s_i |y_i|`` (from the check pass, scaled by its powers of two)."""
        if self.stats is None:
            return float(da.dot(self.s, abs(self.y)).compute())
        t, w = self._factors
        return t * w * self.stats["sy"]

    @property
    def max_abs_y(self) -> float:
        """``max_i |y_i|``."""
        if self.stats is None:
            return float(abs(self.y).max().compute())
        return self._factors[0] * self.stats["yabs"]

    def evaluate(self, beta: np.ndarray, b: float, agg: Any, tol: float,
                 quantile: float, means: bool = True, guess: tuple | None = None
                 ) -> tuple[float, np.ndarray, tuple]:
        """``(E, mixed, state)`` in one pass (one graph), which also applies the last split to
        the labels and keeps them beside the chunks; ``state`` carries what ``split`` needs:
        the per-side counts, with ``means`` (the "refine" split) the per-side sums of |r|,
        which otherwise a split computes by a pass of its own when it needs them, and with
        ``guess = (candidate clusters, their minority side)`` the rows ``split_near`` would
        fetch if the guess holds (then it needs no pass of its own)."""
        K = agg.n_clusters
        lab = agg.labels.to_delayed(optimize_graph=False).ravel()
        cap = PREFETCH_ROWS // max(len(self._blocks), 1)
        parts = [dask.delayed(_evaluate_fetch, nout=2)(x, y, s, q, beta, b, K, tol, quantile,
                                                       means, guess, cap)
                 for (x, y, s), q in zip(self._blocks, lab, strict=True)]
        agg.labels, total, fetched = dask.persist(agg.labels, tree_sum([q[0] for q in parts]),
                                                  [q[1] for q in parts], optimize_graph=False)
        out, fetched = dask.compute(total, fetched)
        out = np.asarray(out)
        pos, neg, cnt = out[1:K + 1], out[K + 1:2 * K + 1], out[2 * K + 1:4 * K + 1]
        tot = out[4 * K + 1:] if means else None
        pre = None
        if guess is not None and all(f is not None for f in fetched):
            pre = (guess, fetched)
        return float(out[0]), (pos > 0) & (neg > 0), (beta, b, tot, cnt, pre)

    split_codes = staticmethod(_split_codes)
    """The chunk function of :meth:`split` (a subclass with another score gives its own)."""
    persist_split_labels = False
    """False: the next ``evaluate`` applies and keeps the new labels (LAD's does)."""

    def split(self, agg: Any, mixed: np.ndarray, state: tuple,
              refine: bool) -> tuple[np.ndarray, np.ndarray]:
        """``split_mixed`` over the chunks: one pass (one graph) for the pieces and their sums;
        the new labels are left lazy, to be applied and kept by the next ``evaluate``."""
        beta, b, tot, cnt = state[:4]
        K, P = agg.n_clusters, (4 if refine else 2)
        mixed_ids = np.flatnonzero(mixed)
        mixed_pos = np.full(K, -1, dtype=np.int64)
        mixed_pos[mixed_ids] = np.arange(mixed_ids.shape[0])
        if refine and tot is None:
            tot = np.asarray(tree_sum([dask.delayed(_side_abs_sums)(x, y, lab, beta, b, K)
                                       for (x, y, _), lab in zip(self._blocks,
                                                                 blocks(agg.labels),
                                                                 strict=True)]).compute())
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = tot / cnt if refine else None
        parts = [dask.delayed(self.split_codes)(x, y, s, lab, beta, b, mixed_pos, mean, P)
                 for (x, y, s), lab in zip(self._blocks, blocks(agg.labels), strict=True)]
        codes = da.concatenate([
            da.from_delayed(dask.delayed(operator.getitem)(q, 0), shape=(rows,), dtype=np.int64)
            for q, rows in zip(parts, self.X.chunks[0], strict=True)])
        total = tree_sum([dask.delayed(operator.getitem)(q, 1) for q in parts])
        codes, total = dask.persist(codes, total, optimize_graph=False)
        return apply_pieces(agg, np.asarray(total.compute()), codes, mixed_ids, P,
                            self.persist_split_labels)

    def split_near(self, agg: Any, mixed: np.ndarray, state: tuple,
                   share: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
        """``solvers.aid.aggregation.split_near`` over the chunks: the rows on a mixed
        cluster's minority side (known from the last ``evaluate``'s counts) are fetched in one
        pass and become clusters of one row; the cluster keeps its sums less theirs. Clusters
        where that would be more than ``share`` of the rows are split 4-way by :meth:`split`
        (one more pass). The new labels stay lazy until the next ``evaluate``."""
        beta, b, _, cnt = state[:4]
        npos, nneg = cnt[1::2], cnt[0::2]
        minority_pos = npos < nneg
        coarse = mixed & (np.where(minority_pos, npos, nneg) > share * (npos + nneg))
        fine = mixed & ~coarse
        old1 = new1 = np.zeros(0, dtype=np.int64)
        if coarse.any():
            old1, new1 = self.split(agg, coarse, state, True)
        if not fine.any():
            return old1, new1
        pre = _prefetched(state[4] if len(state) > 4 else None, fine, minority_pos)
        fine = np.concatenate([fine, np.zeros(agg.n_clusters - fine.shape[0], dtype=bool)])
        minority_pos = np.concatenate([minority_pos, np.zeros(fine.shape[0] -
                                                              minority_pos.shape[0], dtype=bool)])
        K1 = agg.n_clusters
        if pre is not None:  # the evaluate pass fetched them: no pass here
            at, rest = pre
            offsets = K1 + np.concatenate([[0], np.cumsum([q[1].shape[0] for q in rest])[:-1]])
            agg.labels = da.map_blocks(_near_apply_at, agg.labels, at, offsets, dtype=np.int64)
        else:
            lab = blocks(agg.labels)
            parts = [dask.delayed(_near_rows, nout=3)(x, y, w, q, beta, b, fine, minority_pos)
                     for (x, y, w), q in zip(self._blocks, lab, strict=True)]
            rank = da.concatenate([da.from_delayed(q[0], shape=(r,), dtype=np.int64)
                                   for q, r in zip(parts, self.X.chunks[0], strict=True)])
            rank, rest = dask.persist(rank, [(q[1], q[2]) for q in parts], optimize_graph=False)
            (rest,) = dask.compute(rest)
            offsets = K1 + np.concatenate([[0], np.cumsum([q[1].shape[0] for q in rest])[:-1]])
            agg.labels = da.map_blocks(_near_apply, agg.labels, rank, offsets, dtype=np.int64)
        rows = np.vstack([q[0] for q in rest])
        from_k = np.concatenate([q[1] for q in rest])
        out = np.zeros((K1, rows.shape[1]))
        np.add.at(out, from_k, rows)
        agg.W = np.concatenate([agg.W - out[:, 1], rows[:, 1]])
        agg.SX = np.concatenate([agg.SX - out[:, 2:-1], rows[:, 2:-1]])
        agg.SY = np.concatenate([agg.SY - out[:, -1], rows[:, -1]])
        old2 = np.unique(from_k)
        new2 = K1 + np.arange(rows.shape[0], dtype=np.int64)
        return np.concatenate([old1, old2]), np.concatenate([new1, new2])

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
