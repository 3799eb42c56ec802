"""Cluster bookkeeping for AID: weighted cluster sums, the sign-purity test and the split.

A clustering is an int label per row, ``labels[i] = k`` for ``i in C_k``, with ``K`` clusters
numbered ``0..K-1``.  For rows with weights ``s_i`` the aggregated data are kept as *sums*

    W_k = sum_{i in C_k} s_i,   SX_k = sum_{i in C_k} s_i x_i,   SY_k = sum_{i in C_k} s_i y_i,

so the weighted means are ``xbar_k = SX_k / W_k`` and ``ybar_k = SY_k / W_k`` (paper: x^t_k, y^t_k
with the cardinality |C_k| replaced by W_k).  Clusters only split, so after a split only the rows
of the split clusters are summed again.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp


@dataclasses.dataclass
class Aggregate:
    """Per-cluster sums of a clustering (see the module docstring for the formulas)."""

    labels: np.ndarray  # (n,) int64, cluster of each row
    W: np.ndarray  # (K,) total weight of each cluster
    SX: np.ndarray  # (K, p) weighted feature sums
    SY: np.ndarray  # (K,) weighted target (or label) sums

    @property
    def n_clusters(self) -> int:
        """K, the number of clusters."""
        return int(self.W.shape[0])


def cluster_sums(
    X: np.ndarray, y: np.ndarray, s: np.ndarray, labels: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(W, SX, SY)`` for rows grouped by ``labels`` into ``K`` clusters.

    One sparse indicator product ``M @ X`` with ``M[k, i] = s_i`` for ``i in C_k``: no copy of X.
    """
    n = labels.shape[0]
    M = sp.csr_matrix((s, (labels, np.arange(n))), shape=(K, n))
    W = np.bincount(labels, weights=s, minlength=K)
    SX = np.asarray(M @ X) if X.shape[1] else np.zeros((K, 0))
    SY = np.bincount(labels, weights=s * y, minlength=K)
    return W, SX, SY


def aggregate(X: np.ndarray, y: np.ndarray, s: np.ndarray, labels: np.ndarray) -> Aggregate:
    """Aggregate the rows of a fresh clustering (labels renumbered to 0..K-1 if needed)."""
    labels = np.asarray(labels, dtype=np.int64)
    uniq, labels = np.unique(labels, return_inverse=True)
    W, SX, SY = cluster_sums(X, y, s, labels, uniq.shape[0])
    return Aggregate(labels=labels, W=W, SX=SX, SY=SY)


def mixed_clusters(labels: np.ndarray, K: int, score: np.ndarray, tol: float) -> np.ndarray:
    """Clusters holding a row with ``score > tol`` and a row with ``score < -tol``.

    ``score`` is the LAD residual r_i or the SVM margin value 1 - y_i f(x_i).  Rows with
    ``|score| <= tol`` fit either side (for LAD, r_i = 0 is in both {r >= 0} and {r <= 0}).
    A clustering with no mixed cluster is sign-pure: the AID optimality certificate.
    """
    pos = np.bincount(labels, weights=(score > tol), minlength=K)
    neg = np.bincount(labels, weights=(score < -tol), minlength=K)
    return (pos > 0) & (neg > 0)


def split_mixed(
    agg: Aggregate,
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    mixed: np.ndarray,
    score: np.ndarray,
) -> np.ndarray:
    """Split every mixed cluster into {score > 0} (a new cluster) and {score <= 0} (keeps its id).

    Updates ``agg`` in place (labels and sums; new clusters get ids K, K+1, ...) and returns the
    ids of all clusters whose sums changed (the old ids, then the new ones).
    """
    K = agg.n_clusters
    old_ids = np.flatnonzero(mixed)
    new_id = np.full(K, -1, dtype=np.int64)
    new_id[old_ids] = K + np.arange(old_ids.shape[0])
    rows = np.flatnonzero(mixed[agg.labels])
    move = rows[score[rows] > 0]
    agg.labels[move] = new_id[agg.labels[move]]
    K_new = K + old_ids.shape[0]
    sub_labels = agg.labels[rows]
    W, SX, SY = cluster_sums(X[rows], y[rows], s[rows], sub_labels, K_new)
    changed = np.concatenate([old_ids, new_id[old_ids]])
    agg.W = np.concatenate([agg.W, np.zeros(old_ids.shape[0])])
    agg.SX = np.concatenate([agg.SX, np.zeros((old_ids.shape[0], agg.SX.shape[1]))])
    agg.SY = np.concatenate([agg.SY, np.zeros(old_ids.shape[0])])
    agg.W[changed] = W[changed]
    agg.SX[changed] = SX[changed]
    agg.SY[changed] = SY[changed]
    return changed
