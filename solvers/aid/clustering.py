"""Initial clusterings C^0 for AID (the paper leaves the choice open; any partition is valid).

All methods start from a cheap *score* per row, computed from a fit on a random subsample of
``sample_size`` rows: the LAD residual r_i = y_i - x_i'beta - b, or the SVM margin value
m_i = 1 - y_i f(x_i).  AID ends when every cluster is sign-pure in the score of the optimum, so
the clusters that matter are the ones near score 0.

``"band"`` (default)
    Bins of the score, cut at 0 (each bin is sign-pure for the subsample fit), with sizes that
    grow with the distance from 0: the bins have equal "mass" sum_i s_i / (|score_i| + eps), so
    the rows near the hyperplane sit in small clusters and the far rows, whose sign the optimum
    will not change, in a few large ones.  eps is the ``band`` quantile of |score|.  For LAD
    each bin is then halved along one coordinate (see :func:`cycle_split`).
``"quantile"``
    Equal-weight quantile bins of the score (the minimal AID of formulations.md section 7).
``"kmeans"``
    k-means (Lloyd, a few rounds) on a sample of the standardised rows [x, score], then every
    row to its nearest centre; O(n K p) time, for moderate n.

For the SVM the rows of each class are clustered separately (clusters never mix labels).
"""

from __future__ import annotations

import numpy as np

from solvers.aid.lad_lp import AggregatedLadLP

LAD_METHODS = ("band", "quantile", "kmeans")
SVM_METHODS = ("band", "quantile", "kmeans")
DEFAULT_SAMPLE_SIZE = 20_000
DEFAULT_BAND = 0.05


def subsample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``min(n, size)`` rows drawn without replacement."""
    if n <= size:
        return np.arange(n)
    return np.sort(rng.choice(n, size=size, replace=False))


def fit_lad_subsample(
    X: np.ndarray, y: np.ndarray, s: np.ndarray, *, fit_intercept: bool, idx: np.ndarray
) -> tuple[np.ndarray, float]:
    """Exact weighted LAD fit (beta, b) on the rows ``idx`` (LP dual by HiGHS simplex)."""
    Xs, ys, ss = X[idx], y[idx], s[idx]
    SX = Xs * ss[:, None]
    SXa = np.column_stack([SX, ss]) if fit_intercept else SX
    lp = AggregatedLadLP(SXa, ss * ys)
    status, _, coef, _ = lp.solve()
    if status != "Optimal":  # pragma: no cover - a tiny LP; fall back to a zero fit
        coef = np.zeros(SXa.shape[1])
    p = X.shape[1]
    return coef[:p], float(coef[p]) if fit_intercept else 0.0


def score_bins(
    score: np.ndarray, s: np.ndarray, K: int, *, method: str, band: float = DEFAULT_BAND
) -> np.ndarray:
    """Cut rows into about K bins of ``score``, split at 0, by equal weight or equal mass.

    Returns labels in 0..K'-1 (K' <= K + 1 since the cut at 0 may add a bin).
    """
    n = score.shape[0]
    if K >= n:
        return np.arange(n, dtype=np.int64)
    order = np.argsort(score, kind="stable")
    ss = score[order]
    if method == "band":
        a = np.abs(ss)
        eps = max(float(np.quantile(a, band)), 1e-12 * (1.0 + float(a.max())))
        mass = s[order] / (a + eps)
    else:
        mass = s[order]
    cum = np.cumsum(mass)
    bins = np.minimum((cum - 0.5 * mass) / cum[-1] * K, K - 1).astype(np.int64)
    bins = 2 * bins + (ss > 0)  # cut every bin at score 0: sign-pure for the subsample fit
    labels = np.empty(n, dtype=np.int64)
    labels[order] = bins
    return labels


def kmeans_labels(
    Z: np.ndarray, K: int, rng: np.random.Generator, *, sample_size: int, rounds: int = 10
) -> np.ndarray:
    """Lloyd's k-means on a sample of the rows of Z, then nearest-centre labels for all rows."""
    n = Z.shape[0]
    if K >= n:
        return np.arange(n, dtype=np.int64)
    mu, sd = Z.mean(axis=0), Z.std(axis=0)
    sd[sd == 0] = 1.0
    Zs = (Z - mu) / sd
    S = Zs[subsample(n, max(sample_size, 3 * K), rng)]
    C = S[rng.choice(S.shape[0], size=K, replace=False)]
    for _ in range(rounds):
        lab = _nearest(S, C)
        cnt = np.bincount(lab, minlength=K)
        sums = np.zeros_like(C)
        np.add.at(sums, lab, S)
        nz = cnt > 0
        C[nz] = sums[nz] / cnt[nz, None]
    return _nearest(Zs, C)


def _nearest(Z: np.ndarray, C: np.ndarray, chunk: int = 20_000) -> np.ndarray:
    out = np.empty(Z.shape[0], dtype=np.int64)
    cc = np.einsum("ij,ij->i", C, C)
    for a in range(0, Z.shape[0], chunk):
        B = Z[a : a + chunk]
        out[a : a + chunk] = np.argmin(cc[None, :] - 2.0 * B @ C.T, axis=1)
    return out


def lad_clusters(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    n_clusters: int,
    *,
    method: str = "band",
    fit_intercept: bool = True,
    seed: int = 0,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
) -> np.ndarray:
    """Initial LAD clustering of about ``n_clusters`` clusters (see the module docstring)."""
    n = X.shape[0]
    if n_clusters >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    beta, b = fit_lad_subsample(X, y, s, fit_intercept=fit_intercept,
                                idx=subsample(n, sample_size, rng))
    r = y - X @ beta - b if X.shape[1] else y - b
    if method == "kmeans":
        return kmeans_labels(np.column_stack([X, r]), n_clusters, rng, sample_size=sample_size)
    if method == "quantile":
        return score_bins(r, s, n_clusters, method=method)
    labels = score_bins(r, s, max(1, n_clusters // 2), method=method)
    return cycle_split(labels, X, rng)


def cycle_split(labels: np.ndarray, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Halve bin k by feature j = k mod p at its (subsample) mean.

    Score bins alone have means xbar_k close to the mean of X, so the aggregated problem barely
    sees the slopes and its first solution is poor (gap ~0.9 at n = 10^6).  Offsetting the
    means along each coordinate in turn gives the aggregated problem curvature in every
    direction at the cost of doubling the clusters (first gap ~0.03 in the same test).
    """
    n, p = X.shape
    if p == 0:
        return labels
    centre = X[subsample(n, DEFAULT_SAMPLE_SIZE, rng)].mean(axis=0)
    j = labels % p
    high = X[np.arange(n), j] > centre[j]
    return np.unique(2 * labels + high, return_inverse=True)[1].astype(np.int64)
