"""Linear-SVM AID's row operations (those of ``solvers.rows.SvmRows``) on row-chunked Dask arrays.

The rows are the scaled features x_i, the labels y_i in {-1, +1} and the weights s_i. With the
margin value m_i = 1 - y_i (x_i'w + b) every operation is a map over the row chunks and a tree
sum of small results (:mod:`solvers.dask_rows`):

* the cluster sums W_k = sum s_i, SX_k = sum s_i x_i, SY_k = sum s_i y_i (K x (p + 2) travel);
* the weighted hinge sum_i s_i max(0, m_i) and, per cluster, the counts of m_i > tol and
  m_i < -tol (the certificate's sign test), with per (cluster, sign of m) the sums of |m_i| that
  the 4-way split needs (one pass);
* the split of the mixed clusters by the sign of m (and at the mean |m| of each side): one pass
  for the pieces' sums, the labels then renumbered beside their chunks;
* the initial clustering of ``solvers.aid.clustering.svm_clusters`` ("band", "quantile"), with
  the same random draws, so the labels equal the in-memory ones.

Only (w, b) and per-cluster sums travel to the caller, where the aggregated QP is solved; the
n-vectors (labels, margins) stay beside the chunks. Checks are those of the in-memory solver,
chunk by chunk, before any solve.
"""

from __future__ import annotations

import operator
from typing import Any

import dask
import dask.array as da
import numpy as np

from solvers.dask_rows import (
    DaskLadRows,
    aligned_vector,
    as_dask_matrix,
    blocks,
    compact,
    tree_sum,
)
from solvers.errors import DataError

SCORE_SAMPLE = 100_000
"""``score_bins``'s sample size: the bin edges of a class come from this many of its rows."""


# ---------------------------------------------------------------------------- chunk functions
def _margin(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    """``m = 1 - y (x w + b)``."""
    return 1.0 - y * (x @ w + b)


def _evaluate(x, y, s, lab, w, b, K: int, tol: float) -> np.ndarray:
    """[hinge, pos (K), neg (K), sum |m| per (cluster, m > 0) (2K), count per key (2K)]."""
    m = _margin(x, y, w, b)
    key = 2 * lab + (m > 0)
    return np.concatenate([[s @ np.maximum(m, 0.0)],
                           np.bincount(lab, weights=(m > tol), minlength=K),
                           np.bincount(lab, weights=(m < -tol), minlength=K),
                           np.bincount(key, weights=np.abs(m), minlength=2 * K),
                           np.bincount(key, minlength=2 * K)])


def _split_codes(x, y, s, lab, w, b, mixed_pos, mean, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row its piece code ``mixed_pos[lab] * P + piece`` (-1 outside mixed clusters), and
    per code [rows, W, SX, SY]: the pieces of ``split_mixed`` for the score m."""
    from solvers.aid.aggregation import cluster_sums

    pos = mixed_pos[lab]
    rows = np.flatnonzero(pos >= 0)
    sc = _margin(x[rows], y[rows], w, b)
    piece = (sc > 0).astype(np.int64)
    if mean is not None:
        piece = 2 * piece + (np.abs(sc) > mean[2 * lab[rows] + piece])
    code = np.full(lab.shape[0], -1, dtype=np.int64)
    code[rows] = pos[rows] * P + piece
    n_codes = int(mixed_pos.max() + 1) * P
    W, SX, SY = cluster_sums(x[rows], y[rows], s[rows], code[rows], n_codes)
    return code, np.column_stack([np.bincount(code[rows], minlength=n_codes), W, SX, SY])


def _relabel(lab: np.ndarray, code: np.ndarray, key_id: np.ndarray) -> np.ndarray:
    out = lab.copy()
    hit = code >= 0
    out[hit] = key_id[code[hit]]
    return out


def _class_stats(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """[rows of class -1, rows of class +1, weight of class -1, weight of class +1]."""
    neg = y < 0
    return np.array([neg.sum(), (~neg).sum(), s[neg].sum(), s[~neg].sum()], dtype=np.float64)


def _labels_flags(y: np.ndarray) -> np.ndarray:
    """[has a label other than -1/+1, has -1, has +1] of one chunk."""
    return np.array([np.any((y != -1.0) & (y != 1.0)), np.any(y == -1.0), np.any(y == 1.0)])


def _pick(y: np.ndarray, cls: float, local: np.ndarray, *arrays: np.ndarray) -> list:
    """The entries ``local`` (positions among this chunk's rows of class ``cls``) of arrays."""
    rows = np.flatnonzero(y == cls)[local]
    return [a[rows] for a in arrays]


def _bin_keys(score, y, edges_neg, edges_pos, first, big: int) -> np.ndarray:
    """Per row the bin of its score among its class's edges (``None``: its position in the
    class, ``first`` the chunk's first position per class), +``big`` for class +1."""
    out = np.empty(y.shape[0], dtype=np.int64)
    for c, edges, shift in ((0, edges_neg, 0), (1, edges_pos, big)):
        rows = np.flatnonzero((y > 0) == bool(c))
        if edges is None:
            out[rows] = first[c] + np.arange(rows.shape[0]) + shift
        else:
            out[rows] = np.searchsorted(edges, score[rows], side="left") + shift
    return out


def _halve_keys(x, y, key, remap, k_neg: int, centres) -> np.ndarray:
    """``cycle_split`` per class: label l of the class (compacted) -> 2 l + (x_j > centre_j),
    j = l mod p; class +1 shifted past the 2 k_neg keys of class -1."""
    pos = y > 0
    lab = remap[key] - np.where(pos, k_neg, 0)
    j = lab % x.shape[1]
    xj = x[np.arange(x.shape[0]), j]
    centre = np.where(pos, centres[1][j], centres[0][j])
    return 2 * lab + (xj > centre) + np.where(pos, 2 * k_neg, 0)


def _class_counts(y: np.ndarray, lab: np.ndarray, size: int) -> np.ndarray:
    """Per label: [rows of class +1, rows]."""
    return np.vstack([np.bincount(lab, weights=(y > 0), minlength=size),
                      np.bincount(lab, minlength=size)])


def _count(lab: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(lab, minlength=size)


# ---------------------------------------------------------------------------- the rows
class DaskSvmRows(DaskLadRows):
    """The operations of ``solvers.rows.SvmRows`` on Dask ``X``, ``y`` (in {-1, +1}) and ``s``
    chunked alike; the cluster sums, ``take`` and the column ranges are those of
    :class:`solvers.dask_rows.DaskLadRows` (the same sums W, SX, SY)."""

    @classmethod
    def checked(cls, X: Any, y: Any, sample_weight: Any, fit_intercept: bool = True
                ) -> DaskSvmRows:
        """Check X (at least one feature), y (only -1 and +1, both classes) and the weights
        chunk by chunk with the in-memory messages; drop the rows of weight 0."""
        X = as_dask_matrix(X, "X", min_features=1)
        y = aligned_vector(y, X.chunks[0], "y", "X")
        raw = DaskLadRows.checked(X, y, sample_weight, fit_intercept=False)
        for yy in (y, raw.y) if raw.n < X.shape[0] else (y,):  # all rows, then the kept
            flags = np.array(dask.compute([dask.delayed(_labels_flags)(b)
                                           for b in blocks(yy)])[0]).reshape(-1, 3)
            if flags[:, 0].any():
                raise DataError("'y' must contain only the labels -1 and +1; map your classes "
                                "first.")
            if not (flags[:, 1].any() and flags[:, 2].any()):
                got = [-1.0] if flags[:, 1].any() else [1.0]
                raise DataError(
                    f"'y' must hold exactly 2 classes for a binary classifier; got 1 class(es) "
                    f"{got}. A binary classifier cannot be trained on one class.")
        return cls(raw.X, raw.y, raw.s)

    # -- scalars and scaling
    def weight_sum(self) -> float:
        """``sum_i s_i``."""
        return float(self.s.sum().compute())

    def weight_mean(self) -> float:
        """``sum_i s_i / n``."""
        return float(self.s.mean().compute())

    def column_factors(self) -> np.ndarray:
        """``solvers.aid.scaling.column_factors`` from the column maxima and minima (one pass)."""
        from solvers.aid.scaling import COLUMN_FREE_EXP, pow2_factor

        cmax, cmin = dask.compute(self.X.max(axis=0), self.X.min(axis=0))
        return pow2_factor(np.maximum(cmax, -cmin), COLUMN_FREE_EXP)

    def scaled(self, col: np.ndarray) -> DaskSvmRows:
        """The rows of ``(X c, y, s)`` (lazy)."""
        return DaskSvmRows(self.X if np.all(col == 1.0) else self.X * col, self.y, self.s)

    def margins(self, w: np.ndarray, b: float) -> da.Array:
        """``m = 1 - y (X w + b)`` (lazy n-vector)."""
        return self.map_rows(_margin, w, b)

    # -- the loop's operations
    def evaluate(self, w: np.ndarray, b: float, agg: Any,
                 tol: float) -> tuple[float, np.ndarray, tuple]:
        """``(sum_i s_i max(0, m_i), mixed, state)`` in one pass; ``state`` is what ``split``
        needs (w, b and the |m| sums per cluster side)."""
        K = agg.n_clusters
        parts = [dask.delayed(_evaluate)(x, y, s, lab, w, b, K, tol)
                 for (x, y, s), lab in zip(self._blocks, blocks(agg.labels), strict=True)]
        out = np.asarray(tree_sum(parts).compute())
        pos, neg = out[1:K + 1], out[K + 1:2 * K + 1]
        return float(out[0]), (pos > 0) & (neg > 0), (w, b, out[2 * K + 1:4 * K + 1],
                                                       out[4 * K + 1:])

    def split(self, agg: Any, mixed: np.ndarray, state: tuple,
              refine: bool) -> tuple[np.ndarray, np.ndarray]:
        """``split_mixed`` over the chunks by the sign of m (and its mean |m| per side)."""
        w, b, tot, cnt = state
        K, P = agg.n_clusters, (4 if refine else 2)
        mixed_ids = np.flatnonzero(mixed)
        mixed_pos = np.full(K, -1, dtype=np.int64)
        mixed_pos[mixed_ids] = np.arange(mixed_ids.shape[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = tot / cnt if refine else None
        parts = [dask.delayed(_split_codes)(x, y, s, lab, w, b, mixed_pos, mean, P)
                 for (x, y, s), lab in zip(self._blocks, blocks(agg.labels), strict=True)]
        codes = da.concatenate([
            da.from_delayed(dask.delayed(operator.getitem)(q, 0), shape=(rows,), dtype=np.int64)
            for q, rows in zip(parts, self.X.chunks[0], strict=True)])
        total = tree_sum([dask.delayed(operator.getitem)(q, 1) for q in parts])
        codes, total = dask.persist(codes, total)
        return apply_pieces(agg, np.asarray(total.compute()), codes, mixed_ids, P)

    def columns(self) -> dict[str, np.ndarray]:
        """Per column of X and for the weights: the smallest non-zero and largest |value|."""
        return {k: v for k, v in super().columns().items() if k != "y"}

    # -- the initial clustering
    def pure_labels(self, init: Any) -> da.Array:
        """User labels (one int >= 0 per row) chunked like the rows; refused when a cluster
        mixes the classes (as ``aid_svm`` in memory)."""
        lab = self.labels_from(init)
        lo, hi = (int(v) for v in dask.compute(lab.min(), lab.max()))
        if lo < 0:
            raise ValueError("'init' labels must be >= 0.")
        parts = [dask.delayed(_class_counts)(y, k, hi + 1)
                 for (_, y, _), k in zip(self._blocks, blocks(lab), strict=True)]
        pos, cnt = np.asarray(tree_sum(parts).compute())
        if np.any((pos > 0) & (pos < cnt)):
            raise ValueError(
                "'init' clusters must not mix the labels -1 and +1; cluster each class apart."
            )
        return lab

    def initial_labels(self, K: int, score: da.Array | None, method: str,
                       seed: int) -> da.Array:
        """``svm_clusters(X, y, s, K, score=score, method=method, seed=seed)`` over the chunks:
        the same subsamples (drawn from the class sizes in the same order), bin edges, halving
        and numbering."""
        from solvers.aid.clustering import DEFAULT_SAMPLE_SIZE, bin_edges, subsample

        rows = self.X.chunks[0]
        if K >= self.n:
            return da.arange(self.n, chunks=(rows,), dtype=np.int64)
        if method == "kmeans":
            raise DataError("The 'init' parameter of aid_svm must be 'auto', 'band' or "
                            "'quantile' on a Dask array ('kmeans' needs every row in memory); "
                            "got 'kmeans'.")
        stats = np.array(dask.compute([dask.delayed(_class_stats)(y, s)
                                       for _, y, s in self._blocks])[0]).reshape(-1, 4)
        first = np.vstack([np.zeros((1, 2)), np.cumsum(stats[:, :2], axis=0)])[:-1].astype(int)
        total = float(stats[:, 2:].sum())
        rng = np.random.default_rng(seed)
        plans = []
        for c in range(2):  # class -1, then +1: the order of svm_clusters's draws
            n_c = int(stats[:, c].sum())
            k = max(1, int(round(K * float(stats[:, 2 + c].sum()) / total)))
            kk = k if method == "quantile" else max(1, k // 2)
            bins = None if kk >= n_c else subsample(n_c, SCORE_SAMPLE, rng)
            centre = None if method == "quantile" else subsample(n_c, DEFAULT_SAMPLE_SIZE, rng)
            plans.append((kk, bins, centre))
        score = score.persist()
        picked = self._picked(score, first, plans)
        edges = [None if plans[c][1] is None else
                 bin_edges(picked[c][0][0], picked[c][0][1], plans[c][0], method=method)
                 for c in range(2)]
        big = int(stats[:, 0].sum()) if edges[0] is None else edges[0].shape[0] + 1
        keys = da.concatenate([
            da.from_delayed(dask.delayed(_bin_keys)(sb, y, edges[0], edges[1], f, big),
                            shape=(r,), dtype=np.int64)
            for sb, (_, y, _), f, r in zip(blocks(score), self._blocks, first, rows,
                                           strict=True)]).persist()
        if method == "quantile":
            return compact(keys).persist()
        size = int(keys.max().compute()) + 1
        counts = tree_sum([dask.delayed(_count)(k, size) for k in blocks(keys)]).compute()
        remap = np.cumsum(np.asarray(counts) > 0) - 1
        k_neg = int(remap[big - 1]) + 1 if big > 0 else 0
        centres = [picked[c][1].mean(axis=0) for c in range(2)]
        halves = da.concatenate([
            da.from_delayed(dask.delayed(_halve_keys)(x, y, k, remap, k_neg, centres),
                            shape=(r,), dtype=np.int64)
            for (x, y, _), k, r in zip(self._blocks, blocks(keys), rows, strict=True)])
        return compact(halves).persist()

    def _picked(self, score: da.Array, first: np.ndarray, plans: list) -> list:
        """Per class: ((scores, weights) of its bin sample, X rows of its centre sample), in
        the order of the class's rows (one pass); None where the plan draws none. ``first``
        is each chunk's first position among the rows of each class."""
        last = np.vstack([first[1:], np.full((1, 2), np.inf)])
        tasks = []
        for c, (_, *draws) in enumerate(plans):
            cls, per = (1.0 if c else -1.0), []
            for j, (sb, (x, y, s)) in enumerate(zip(blocks(score), self._blocks, strict=True)):
                lo, hi = first[j, c], last[j, c]
                sel = [None if v is None else (v[(v >= lo) & (v < hi)] - lo).astype(np.int64)
                       for v in draws]
                per.append((None if sel[0] is None else dask.delayed(_pick)(y, cls, sel[0], sb, s),
                            None if sel[1] is None else dask.delayed(_pick)(y, cls, sel[1], x)))
            tasks.append(per)
        (got,) = dask.compute(tasks)
        out = []
        for per in got:
            bins = (None if per[0][0] is None else
                    tuple(np.concatenate([q[0][i] for q in per]) for i in range(2)))
            centre = None if per[0][1] is None else np.concatenate([q[1][0] for q in per])
            out.append((bins, centre))
        return out


def apply_pieces(agg: Any, M: np.ndarray, codes: da.Array, mixed_ids: np.ndarray,
                 P: int) -> tuple[np.ndarray, np.ndarray]:
    """Update ``agg`` with the pieces of the split: ``M`` holds per piece code [rows, W, SX,
    SY], ``codes`` each row's code (-1 outside the mixed clusters). The first non-empty piece
    of cluster k keeps id k, the others get K, K+1, ... (the numbering of ``split_mixed``).
    Returns ``(old_ids, new_ids)``."""
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
    agg.labels = da.map_blocks(_relabel, agg.labels, codes, key_id, dtype=np.int64).persist()
    ids = key_id[keys]
    agg.W = np.concatenate([agg.W, np.zeros(n_new)])
    agg.SX = np.concatenate([agg.SX, np.zeros((n_new, agg.SX.shape[1]))])
    agg.SY = np.concatenate([agg.SY, np.zeros(n_new)])
    agg.W[ids], agg.SX[ids], agg.SY[ids] = M[keys, 1], M[keys, 2:-1], M[keys, -1]
    return old_ids, new_ids
