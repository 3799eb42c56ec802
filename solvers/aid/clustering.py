"""Initial clusterings C^0 for AID (the paper leaves the choice open; any partition is valid).

All methods start from a cheap *score* per row, computed from a fit on a random subsample of
``sample_size`` rows: the LAD residual r_i = y_i - x_i'beta - b, or the SVM margin value
m_i = 1 - y_i f(x_i).  AID ends when every cluster is sign-pure in the score of the optimum, so
the clusters that matter are the ones near score 0.

``"band"`` (default)
    Bins of the score, cut at 0 (each bin is sign-pure for the subsample fit), with sizes that
    grow with the distance from 0: the bins have equal "mass" sum_i s_i / (|score_i| + eps), so
    the rows near the hyperplane sit in small clusters and the far rows, whose sign the optimum
    will not change, in a few large ones.  eps is the ``band`` quantile of |score|.  Each bin
    is then halved along one coordinate (see :func:`cycle_split`).
``"quantile"``
    Equal-weight quantile bins of the score (the simplest choice; docs/strategies/aid.md).
``"kmeans"``
    k-means (Lloyd, a few rounds) on a sample of the standardised rows [x, score], then every
    row to its nearest centre; O(n K p) time, for moderate n.

For the SVM the rows of each class are clustered separately (clusters never mix labels).

Why "band" is the default (LAD, n = 10^6, p = 10, 1,000 initial clusters, 4-way split; a busy
2-core machine, so times are indicative):

    init        first gap   iterations   final clusters   time
    quantile    0.81-0.87   9-13         12,500-25,400    1.8-4.6 s
    band        0.02        7-8          ~12,400          1.1-1.9 s

Plain score bins have means xbar_k near the mean of X, so the first aggregated LP cannot see
the slopes (gap ~0.9 at n = 10^6; docs/strategies/aid.md); :func:`cycle_split` fixes
that, and the band-shaped bin sizes put the rows that will split into small clusters.
"kmeans" needs O(n K p) for the assignment (too slow at 10^6 rows with K = 1,000) and took
more iterations on the small test problems.  The subsample fit is approximate (IRLS, see
:func:`fit_lad_subsample`): the exact LP on 20,000 rows cost 0.2-1.6 s (p = 10-50), more than
the iterations it could save.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.aid.aggregation import compact_labels
from solvers.aid.lad_lp import AggregatedLadLP, quantile_box
from solvers.result import TerminationCondition
from solvers.rows import lad_residual
from solvers.threads import blas_limit

LAD_METHODS = ("pk", "band", "quantile", "kmeans")
PK_BAND = 0.8
"""The band of the "pk" start holds PK_BAND times its subsample size, sqrt(q) n^(2/3) rows."""
SVM_METHODS = ("band", "quantile", "kmeans")
DEFAULT_SAMPLE_SIZE = 20_000
DEFAULT_BAND = 0.05


def subsample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``min(n, size)`` rows drawn without replacement."""
    if n <= size:
        return np.arange(n)
    return np.sort(rng.choice(n, size=size, replace=False))


def fit_lad_subsample(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    *,
    fit_intercept: bool,
    idx: np.ndarray,
    exact: bool = False,
    irls_iter: int = 30,
    quantile: float = 0.5,
) -> tuple[np.ndarray, float]:
    """Weighted LAD (quantile tau) fit (beta, b) on the rows ``idx``, for the initial clustering
    only.

    Default: iteratively reweighted least squares, weights s_i c_i / max(|r_i|, delta) (delta a
    small quantile of |r|; c_i = tau for r_i > 0, 1 - tau otherwise, so that c_i |r_i| is the
    check loss), ``irls_iter`` rounds of an O(m p^2) solve: an approximate LAD fit
    in milliseconds where the exact LP on 20,000 rows takes 0.2-1.6 s (p = 10-50).  The
    clustering only needs a fit close to the optimum; AID's certificate does not depend on it.
    ``exact=True`` solves the LP dual by HiGHS instead.
    """
    Xs, ys, ss = X[idx], y[idx], s[idx]
    A = np.column_stack([Xs, np.ones(Xs.shape[0])]) if fit_intercept else Xs
    p = X.shape[1]
    if A.shape[1] == 0:
        return np.zeros(0), 0.0
    if exact:
        box = quantile_box(quantile)
        out = AggregatedLadLP(A * ss[:, None], ss * ys, box=box).solve()
        coef = out.coef
        if out.termination is not TerminationCondition.OPTIMAL or coef is None:
            coef = _irls(A, ys, ss, irls_iter, quantile)  # pragma: no cover - a small LP
    else:
        coef = _irls(A, ys, ss, irls_iter, quantile)
    return coef[:p], float(coef[p]) if fit_intercept else 0.0


def one_blas_thread():
    """A context limiting BLAS to one thread when threadpoolctl is installed.

    The IRLS products are small (m x p with p <= ~100); on a busy 2-core machine a
    2-thread OpenBLAS gemm of this size was measured at 0.2-0.4 s instead of 5 ms.
    """
    return blas_limit(1)


def _irls(
    A: np.ndarray, y: np.ndarray, s: np.ndarray, iters: int, quantile: float = 0.5
) -> np.ndarray:
    """min sum s_i rho(y_i - a_i'c) (rho the check loss of ``quantile``; |.| at 1/2) by
    reweighted least squares (a few ridge-stabilised solves)."""
    with one_blas_thread():
        return _irls_loop(A, y, s, iters, quantile)


def _irls_loop(
    A: np.ndarray, y: np.ndarray, s: np.ndarray, iters: int, quantile: float
) -> np.ndarray:
    q = A.shape[1]
    w = s.copy()
    coef = np.zeros(q)
    for _ in range(iters):
        B = A * np.sqrt(w)[:, None]
        G = B.T @ B
        G[np.diag_indices(q)] += 1e-10 * (np.trace(G) / q + 1.0)
        new = np.linalg.solve(G, (A * w[:, None]).T @ y)
        done = np.max(np.abs(new - coef)) <= 1e-6 * (1.0 + np.max(np.abs(new)))
        coef = new
        if done:
            break
        r = y - A @ coef
        a = np.abs(r)
        delta = max(float(np.quantile(a, 0.01)), 1e-12 * (1.0 + float(a.max())))
        w = s / np.maximum(a, delta)
        if quantile != 0.5:
            w *= np.where(r > 0, quantile, 1.0 - quantile)
    return coef


def score_bins(
    score: np.ndarray,
    s: np.ndarray,
    K: int,
    *,
    method: str,
    band: float = DEFAULT_BAND,
    rng: np.random.Generator | None = None,
    sample_size: int = 100_000,
) -> np.ndarray:
    """Cut rows into about K bins of ``score``, split at 0, by equal weight or equal mass.

    The bin edges come from a sample of ``sample_size`` rows (all rows when n is smaller);
    every row then finds its bin by binary search, O(n log K) instead of a full sort.
    Returns labels in 0..K'-1 (K' <= K + 1 since the cut at 0 may add a bin).
    """
    n = score.shape[0]
    if K >= n:
        return np.arange(n, dtype=np.int64)
    rng = rng if rng is not None else np.random.default_rng(0)
    idx = subsample(n, sample_size, rng)
    edges = bin_edges(score[idx], s[idx], K, method=method, band=band)
    labels = np.searchsorted(edges, score, side="left").astype(np.int64)
    return compact_labels(labels)


def bin_edges(sc: np.ndarray, w: np.ndarray, K: int, *, method: str,
              band: float = DEFAULT_BAND) -> np.ndarray:
    """The sorted bin edges of :func:`score_bins` from a sample of scores ``sc`` (weights
    ``w``): K equal-weight ("quantile") or equal-mass ("band") bins, plus an edge at 0."""
    order = np.argsort(sc, kind="stable")
    sc, w = sc[order], w[order]
    if method == "band":
        a = np.abs(sc)
        eps = max(float(np.quantile(a, band)), 1e-12 * (1.0 + float(a.max())))
        w = w / (a + eps)
    cum = np.cumsum(w)
    targets = cum[-1] * np.arange(1, K) / K
    edges = sc[np.minimum(np.searchsorted(cum, targets), sc.shape[0] - 1)]
    return np.unique(np.concatenate([edges, [0.0]]))


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
    quantile: float = 0.5,
    fit: Callable[[np.ndarray], tuple[np.ndarray, float] | None] | None = None,
) -> np.ndarray:
    """Initial LAD clustering of about ``n_clusters`` clusters (see the module docstring), about
    the fit of the quantile tau (``quantile``; 0.5 for LAD) on a subsample: ``fit(idx)`` when
    given and not None (constrained AID's exact fit under the constraints), else
    :func:`fit_lad_subsample`."""
    n = X.shape[0]
    if n_clusters >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    if method == "pk":  # sizes itself by n and p (``n_clusters`` is not used)
        return pk_start(X, y, s, fit_intercept, quantile, rng)[0]
    idx = subsample(n, sample_size, rng)
    given = None if fit is None else fit(idx)
    beta, b = given if given is not None else fit_lad_subsample(
        X, y, s, fit_intercept=fit_intercept, idx=idx, quantile=quantile)
    r = y - X @ beta - b if X.shape[1] else y - b
    if method == "kmeans":
        return kmeans_labels(np.column_stack([X, r]), n_clusters, rng, sample_size=sample_size)
    if method == "quantile":
        return score_bins(r, s, n_clusters, method=method, rng=rng)
    labels = score_bins(r, s, max(1, n_clusters // 2), method=method, rng=rng)
    return cycle_split(labels, X, rng)


def pk_start(X: np.ndarray, y: np.ndarray, s: np.ndarray, fit_intercept: bool, quantile: float,
             rng: np.random.Generator, band: float = PK_BAND
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Portnoy and Koenker's start: fit the subsample of m = sqrt(q) n^(2/3) rows exactly (q
    coefficients; by the interior point of :mod:`solvers.aid.fn_lp`) and make the ``band`` m
    rows whose residuals rank nearest the tau-quantile clusters of one row, the rows below and
    above the band two large clusters ("globs"). Returns ``(labels, coef)``, ``coef`` the
    subsample fit (beta, then the intercept if fitted), None when no fit was made.
    (Portnoy and Koenker rank r_i / ||L^-1 a_i||, the residual over its prediction's
    leverage; that left fewer misfits in the globs, 3 instead of 115 at 327,346 x 7, but its
    n x q^2 pass cost more than the misfits' re-solve: 0.65-0.92 s against 0.53-0.55 s at
    10^6 x 10.)

    At the optimum only the rows on the hyperplane are fractional; with a good subsample fit
    they lie in the band, the globs are sign-pure and the first aggregated LP is already the
    exact problem.  Otherwise the globs are mixed and AID splits them (``split="near"`` sheds
    their misfits as singletons, as Portnoy and Koenker's fix-up adds them to the band).
    """
    n, p = X.shape
    m, M = pk_sizes(n, p + int(fit_intercept), band)
    if M >= n - 2 or p + int(fit_intercept) == 0:
        return np.arange(n, dtype=np.int64), None
    idx = subsample(n, m, rng)
    fit = pk_fit(X[idx], y[idx], s[idx], fit_intercept, quantile)
    if fit is None:  # pragma: no cover - a small, well-posed LP
        return score_bins(y, s, 2, method="quantile", rng=rng), None
    r = lad_residual(X, y, fit[0], fit[1])
    lo_k = int(min(max(quantile * n - M / 2, 0), n - 1))
    hi_k = int(min(lo_k + M, n - 1))
    lo, hi = np.partition(r, (lo_k, hi_k))[[lo_k, hi_k]]
    above = r > hi
    near = r >= lo
    near &= ~above
    labels = above.astype(np.int64)  # 0 below the band, 1 above, 2, 3, ... the band's rows
    n_near = int(np.count_nonzero(near))
    labels[near] = np.arange(2, 2 + n_near)
    n_above = int(np.count_nonzero(above))
    if n_above == 0 or n_above + n_near == n:  # a glob is empty: renumber 0..K-1
        labels = compact_labels(labels)
    coef = np.append(fit[0], fit[1]) if fit_intercept else fit[0]
    return labels, coef


def pk_sizes(n: int, q: int, band: float = PK_BAND) -> tuple[int, int]:
    """``(m, M)``: the subsample sqrt(q) n^(2/3) of the "pk" start and its band, ``band`` m."""
    m = int(np.sqrt(max(q, 1)) * n ** (2.0 / 3.0))
    return m, int(band * m)


PK_AID_ROWS = 100_000
"""A "pk" subsample above this many rows is fitted by AID itself (its own pk start then
samples about 3 n^(2/3) sqrt(p + 1) of these rows): at 4.5*10^5 x 11 (the subsample of
5*10^7 rows) AID certifies in 0.15 s where the interior point on every row takes 1.3 s."""


def pk_fit(Xs: np.ndarray, ys: np.ndarray, ss: np.ndarray, fit_intercept: bool,
           quantile: float) -> tuple[np.ndarray, float] | None:
    """The exact weighted quantile fit (beta, b) of a subsample: by the interior point of
    :mod:`solvers.aid.fn_lp`, or above :data:`PK_AID_ROWS` rows by AID (the interior point
    when AID does not certify); None if both fail."""
    from solvers.aid.fn_lp import IpmLadLP

    p = Xs.shape[1]
    if Xs.shape[0] > PK_AID_ROWS:
        from solvers.aid.lad import aid_lad
        from solvers.errors import SubproblemError

        try:
            res = aid_lad(Xs, ys, sample_weight=ss, fit_intercept=fit_intercept,
                          quantile=quantile)
        except SubproblemError:  # its aggregated LP failed: the interior point below decides
            res = None
        if res is not None and res.termination is TerminationCondition.CERTIFIED:
            return np.asarray(res.x, dtype=float), float(res.extra["intercept"])
    A = np.column_stack([Xs, np.ones(Xs.shape[0])]) if fit_intercept else Xs
    out = IpmLadLP(A * ss[:, None], ss * ys, box=quantile_box(quantile)).solve()
    if out.coef is None:
        return None
    return out.coef[:p], (float(out.coef[p]) if fit_intercept else 0.0)


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
    return compact_labels(2 * labels + high)


def svm_clusters(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    n_clusters: int,
    *,
    score: np.ndarray | None,
    method: str = "band",
    seed: int = 0,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
) -> np.ndarray:
    """Initial SVM clustering: each class clustered on its own, about ``n_clusters`` in all.

    ``score`` is the margin value 1 - y_i f(x_i) of a subsample fit (needed by "band" and
    "quantile"); "kmeans" clusters the rows of each class in feature space.  Each class gets
    clusters in proportion to its weight (at least one).
    """
    n = X.shape[0]
    if n_clusters >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    total = float(s.sum())
    for cls in (-1.0, 1.0):
        rows = np.flatnonzero(y == cls)
        k = max(1, int(round(n_clusters * float(s[rows].sum()) / total)))
        if method == "kmeans":
            lab = kmeans_labels(X[rows], min(k, rows.shape[0]), rng, sample_size=sample_size)
        elif method == "quantile":
            lab = score_bins(score[rows], s[rows], k, method=method, rng=rng)
        else:
            lab = score_bins(score[rows], s[rows], max(1, k // 2), method=method, rng=rng)
            lab = cycle_split(lab, X[rows], rng)
        lab = compact_labels(lab)
        labels[rows] = lab + offset
        offset += int(lab.max()) + 1
    return labels
