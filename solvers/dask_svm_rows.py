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

from typing import Any

import dask
import dask.array as da
import numpy as np

from solvers.aid.scaling import column_range
from solvers.dask_rows import (
    DaskLadRows,
    _flags,
    aligned_vector,
    as_dask_matrix,
    blocks,
    refuse_bad_chunks,
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


def _class_stats(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """[rows of class -1, rows of class +1, weight of class -1, weight of class +1]."""
    neg = y < 0
    return np.array([neg.sum(), (~neg).sum(), s[neg].sum(), s[~neg].sum()], dtype=np.float64)


def _refuse_labels(flags: np.ndarray) -> None:
    """The messages of ``check_labels(y, signs=True)`` from per-chunk [label other than -1/+1,
    has -1, has +1]."""
    if flags[:, 0].any():
        raise DataError("'y' must contain only the labels -1 and +1; map your classes first.")
    if not (flags[:, 1].any() and flags[:, 2].any()):
        _refuse_classes([-1.0] if flags[:, 1].any() else [1.0])


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


def checked_labelled(X: Any, y: Any, sample_weight: Any) -> tuple[da.Array, da.Array,
                                                                   da.Array, np.ndarray]:
    """``(X, y, s, classes)`` as float64 Dask arrays chunked alike, checked in one pass with
    the in-memory messages (NaN, infinity, ragged chunks, negative or all-zero weights, not
    exactly two classes); ``classes`` are the two values of y, sorted. Nothing is dropped."""
    X, y, s = _aligned(X, y, sample_weight)
    fx, fy, fs, neg, pos, classes = dask.compute(
        [dask.delayed(_flags)(b, X.shape[1]) for b in blocks(X)],
        [dask.delayed(_flags)(b, -1) for b in blocks(y)],
        [dask.delayed(_flags)(b, -1) for b in blocks(s)],
        (s < 0).any(), (s > 0).any(), da.unique(y))
    refuse_bad_chunks(np.array(fx).reshape(-1, 4), "X", X.shape[1])
    refuse_bad_chunks(np.array(fy).reshape(-1, 4), "y", -1)
    refuse_bad_chunks(np.array(fs).reshape(-1, 4), "sample_weight", -1)
    _refuse_weights(neg, pos)
    classes = np.asarray(classes)
    if classes.size != 2:
        _refuse_classes(classes)
    return X, y, s, classes


def _aligned(X: Any, y: Any, sample_weight: Any) -> tuple[da.Array, da.Array, da.Array]:
    X = as_dask_matrix(X, "X", min_features=1)
    rows = X.chunks[0]
    s = (da.ones(X.shape[0], chunks=(rows,)) if sample_weight is None
         else aligned_vector(sample_weight, rows, "sample_weight", "X"))
    return X, aligned_vector(y, rows, "y", "X"), s


def _refuse_weights(neg: bool, pos: bool) -> None:
    """The messages of ``check_sample_weight``."""
    if neg:
        raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
    if not pos:
        raise DataError("'sample_weight' is all zero; at least one weight must be positive.")


def _refuse_classes(classes: Any) -> None:
    """The message of ``check_labels`` for other than two classes."""
    classes = np.asarray(classes)
    raise DataError(
        f"'y' must hold exactly 2 classes for a binary classifier; got {classes.size} "
        f"class(es) {classes[:5].tolist()}. A binary classifier cannot be trained on one "
        "class.")


def _check_chunk(x: np.ndarray, y: np.ndarray, s: np.ndarray, width: int) -> dict:
    """Everything ``DaskSvmRows.checked`` needs of one chunk: the NaN / inf / width flags of
    x, y, s; which labels occur (all rows, and rows of weight > 0); negative / positive
    weights; the rows and weight kept; the column maxima and minima of the kept rows."""
    out = dict(x=_flags(x, width), y=_flags(y, -1), s=_flags(s, -1))
    keep = np.asarray(s) > 0
    y = np.asarray(y)
    out.update(labels=[np.any((y != -1.0) & (y != 1.0)), np.any(y == -1.0), np.any(y == 1.0)],
               kept_labels=[np.any(y[keep] == -1.0), np.any(y[keep] == 1.0)],
               neg=bool(np.any(np.asarray(s) < 0)), pos=bool(keep.any()),
               kept=int(keep.sum()), weight=float(np.asarray(s)[keep].sum()),
               classes=_class_stats(y[keep], np.asarray(s)[keep]))
    if out["x"][2] == 0 and keep.any():
        out["cmin"], out["cmax"] = column_range(np.asarray(x)[keep])
    return out


def _keep(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    return a[s > 0]


def _kept(a: da.Array, s: da.Array, counts: list[int]) -> da.Array:
    """The rows of ``a`` with s > 0, chunk by chunk (chunk sizes known from the check)."""
    return da.concatenate([
        da.from_delayed(dask.delayed(_keep)(ab, sb), shape=(k,) + a.shape[1:], dtype=a.dtype)
        for ab, sb, k in zip(blocks(a), blocks(s), counts, strict=True)])


def _lookup(keys: np.ndarray, table: np.ndarray) -> np.ndarray:
    return table[keys]


def _keyed_sums(x, y, s, key, size: int) -> np.ndarray:
    """Per key in [0, size): [rows, W, SX, SY]."""
    from solvers.aid.aggregation import cluster_sums

    W, SX, SY = cluster_sums(x, y, s, key, size)
    return np.column_stack([np.bincount(key, minlength=size), W, SX, SY])


# ---------------------------------------------------------------------------- the rows
class DaskSvmRows(DaskLadRows):
    """The operations of ``solvers.rows.SvmRows`` on Dask ``X``, ``y`` (in {-1, +1}) and ``s``
    chunked alike; ``take``, ``map_rows`` and the column ranges are those of
    :class:`solvers.dask_rows.DaskLadRows` (the same rows and sums W, SX, SY). ``stats`` holds
    what the check already measured (weight total, column magnitudes)."""

    def __init__(self, X: da.Array, y: da.Array, s: da.Array, stats: dict | None = None) -> None:
        super().__init__(X, y, s)
        self._stats = dict(stats or {})
        self._svm_initial: tuple[da.Array, Any] | None = None

    @classmethod
    def checked(cls, X: Any, y: Any, sample_weight: Any) -> DaskSvmRows:
        """Check X (at least one feature), y (only -1 and +1, both classes) and the weights
        chunk by chunk, in one pass, with the in-memory messages and in their order; keep the
        rows of positive weight (lazy, chunk sizes known)."""
        X, y, s = _aligned(X, y, sample_weight)
        p = X.shape[1]
        (out,) = dask.compute([dask.delayed(_check_chunk)(xb, yb, sb, p)
                               for xb, yb, sb in zip(blocks(X), blocks(y), blocks(s),
                                                     strict=True)])
        refuse_bad_chunks(np.array([o["x"] for o in out]).reshape(-1, 4), "X", p)
        refuse_bad_chunks(np.array([o["y"] for o in out]).reshape(-1, 4), "y", -1)
        _refuse_labels(np.array([o["labels"] for o in out]))
        refuse_bad_chunks(np.array([o["s"] for o in out]).reshape(-1, 4), "sample_weight", -1)
        _refuse_weights(any(o["neg"] for o in out), any(o["pos"] for o in out))
        _refuse_labels(np.array([[False] + o["kept_labels"] for o in out]))
        counts = [o["kept"] for o in out]
        if sum(counts) < X.shape[0]:
            X, y, s = (_kept(a, s, counts) for a in (X, y, s))
        with_rows = [o for o in out if "cmax" in o]
        cmax = np.max([o["cmax"] for o in with_rows], axis=0)
        cmin = np.min([o["cmin"] for o in with_rows], axis=0)
        return cls(X, y, s, dict(weight=float(sum(o["weight"] for o in out)),
                                 magnitude=np.maximum(cmax, -cmin),
                                 classes=np.array([o["classes"] for o in out])))

    # -- scalars and scaling
    def weight_sum(self) -> float:
        """``sum_i s_i``."""
        if "weight" not in self._stats:
            self._stats["weight"] = float(self.s.sum().compute())
        return self._stats["weight"]

    def weight_mean(self) -> float:
        """``sum_i s_i / n``."""
        return self.weight_sum() / self.n

    def column_factors(self) -> np.ndarray:
        """``solvers.aid.scaling.column_factors`` from the column magnitudes max_i |X_ij|."""
        from solvers.aid.scaling import COLUMN_FREE_EXP, pow2_factor

        if "magnitude" not in self._stats:
            cmax, cmin = dask.compute(self.X.max(axis=0), self.X.min(axis=0))
            self._stats["magnitude"] = np.maximum(cmax, -cmin)
        return pow2_factor(self._stats["magnitude"], COLUMN_FREE_EXP)

    def scaled(self, col: np.ndarray) -> DaskSvmRows:
        """The rows of ``(X c, y, s)`` (lazy)."""
        if np.all(col == 1.0):
            return DaskSvmRows(self.X, self.y, self.s, self._stats)
        stats = {k: v for k, v in self._stats.items() if k != "magnitude"}
        return DaskSvmRows(self.X * col, self.y, self.s, stats)

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

    split_codes = staticmethod(_split_codes)  # :meth:`DaskLadRows.split` by the sign of m
    persist_split_labels = True  # (this evaluate does not keep the labels)

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
        stats = self._class_stats()
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
        n_neg = int(stats[:, 0].sum())
        big = n_neg if edges[0] is None else edges[0].shape[0] + 1
        size = big + (self.n - n_neg if edges[1] is None else edges[1].shape[0] + 1)
        keys = da.concatenate([
            da.from_delayed(dask.delayed(_bin_keys)(sb, y, edges[0], edges[1], f, big),
                            shape=(r,), dtype=np.int64)
            for sb, (_, y, _), f, r in zip(blocks(score), self._blocks, first, rows,
                                           strict=True)])
        if method == "quantile":
            return self._initial_aggregate(keys, size)
        keys = keys.persist()
        counts = tree_sum([dask.delayed(_count)(k, size) for k in blocks(keys)]).compute()
        present = np.asarray(counts) > 0
        remap = np.cumsum(present) - 1
        k_neg = int(present[:big].sum())
        centres = [picked[c][1].mean(axis=0) for c in range(2)]
        halves = da.concatenate([
            da.from_delayed(dask.delayed(_halve_keys)(x, y, k, remap, k_neg, centres),
                            shape=(r,), dtype=np.int64)
            for (x, y, _), k, r in zip(self._blocks, blocks(keys), rows, strict=True)])
        return self._initial_aggregate(halves, 2 * int(present.sum()))

    def _class_stats(self) -> np.ndarray:
        """Per chunk [rows of class -1, of +1, weight of class -1, of +1] (from the check)."""
        if "classes" not in self._stats:
            self._stats["classes"] = np.array(dask.compute(
                [dask.delayed(_class_stats)(y, s) for _, y, s in self._blocks])[0])
        return self._stats["classes"].reshape(-1, 4)

    def _initial_aggregate(self, keys: da.Array, size: int) -> da.Array:
        """Labels = ``keys`` (in [0, size)) compacted, with their cluster sums, in one pass;
        :meth:`aggregate` of these labels returns the sums without a further pass."""
        from solvers.aid.aggregation import Aggregate

        keys = keys.persist()
        parts = [dask.delayed(_keyed_sums)(x, y, s, k, size)
                 for (x, y, s), k in zip(self._blocks, blocks(keys), strict=True)]
        M = np.asarray(tree_sum(parts).compute())
        present = M[:, 0] > 0
        labels = da.map_blocks(_lookup, keys, np.cumsum(present) - 1, dtype=np.int64).persist()
        M = M[present]
        agg = Aggregate(labels=labels, W=M[:, 1], SX=M[:, 2:-1], SY=M[:, -1])
        self._svm_initial = (labels, agg)
        return labels

    def aggregate(self, labels: da.Array) -> Any:
        """``aggregate(X, y, s, labels)`` (the sums of :meth:`initial_labels` kept from its
        last pass)."""
        if self._svm_initial is not None and labels is self._svm_initial[0]:
            return self._svm_initial[1]
        return super().aggregate(labels)

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
