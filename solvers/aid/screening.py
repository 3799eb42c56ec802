"""Margin screening for AID-LAD: skip the rows of clusters whose sign provably did not change.

A cluster C_k found sign-pure at coefficients c_ref = (beta_ref, b_ref), with every residual
at least ``m_k`` away from zero (``m_k = min_{i in C_k} |r_i|``, all r_i of sign sigma_k), stays
pure with the same sign at any other c = (beta, b): the residual moves by

    |r_i(c) - r_i(c_ref)| = |x_i'(beta_ref - beta) + (b_ref - b)|
                          <= N_k ||beta - beta_ref||_2 + |b - b_ref|,
    N_k = max_{i in C_k} ||x_i||_2

(Cauchy-Schwarz), so if ``m_k > N_k ||beta - beta_ref|| + |b - b_ref| + tol`` every r_i(c) keeps
the sign sigma_k and |r_i(c)| > tol. Such a cluster is not mixed and its part of the objective
is exact from its sums, sum_{i in C_k} s_i rho(r_i) = rho_sigma (SY_k - SX~_k' c) (rho linear
on each half-line), so an AID iteration needs only the rows of the other clusters.

The certificate never rests on this bound: AID's final, certifying check evaluates every row
(:func:`solvers.aid.lad._run`).
"""

from __future__ import annotations

import numpy as np

SLACK = 1e-9
"""Relative slack on the bound, so rounding in the residuals can never flip a verdict."""


class MarginScreen:
    """Per cluster: the margin ``m`` and sign ``sign`` (0: unknown or mixed) at the coefficients
    ``refs[ref[k]]``, and ``N`` = the largest row norm (``norms`` holds ||x_i||_2 per row)."""

    def __init__(self, norms: np.ndarray, labels: np.ndarray, K: int, p: int) -> None:
        self.norms, self.p = norms, p
        self.N = np.zeros(K)
        np.maximum.at(self.N, labels, norms)
        self.m = np.zeros(K)
        self.sign = np.zeros(K, dtype=np.int8)
        self.ref = np.zeros(K, dtype=np.int64)
        self.refs: list[np.ndarray] = []

    def safe(self, coef: np.ndarray, tol: float) -> np.ndarray:
        """Clusters proven pure (same sign, |r| > tol) at ``coef`` by the module's bound."""
        if not self.refs:
            return np.zeros(self.m.shape[0], dtype=bool)
        R = np.asarray(self.refs) - coef
        step = np.linalg.norm(R[:, : self.p], axis=1)
        shift = np.abs(R[:, self.p]) if R.shape[1] > self.p else np.zeros(R.shape[0])
        bound = self.N * step[self.ref] + shift[self.ref]
        return (self.sign != 0) & (self.m > bound * (1.0 + SLACK) + tol * (1.0 + SLACK))

    def record(self, ids: np.ndarray, labels: np.ndarray, r: np.ndarray, coef: np.ndarray,
               tol: float) -> np.ndarray:
        """Set margin and sign of clusters ``ids`` from the residuals ``r`` of their rows
        (``labels`` their clusters) at ``coef``; returns the mixed clusters (K,) among them
        (a row above ``tol`` and one below ``-tol``, as ``mixed_clusters``)."""
        K = self.m.shape[0]
        a = np.abs(r)
        m = np.full(K, np.inf)
        np.minimum.at(m, labels, a)
        pos = np.bincount(labels, weights=r > tol, minlength=K) > 0
        neg = np.bincount(labels, weights=r < -tol, minlength=K) > 0
        sign = np.where(pos & ~neg, 1, np.where(neg & ~pos, -1, 0)).astype(np.int8)
        sign[m <= tol] = 0  # a row on the hyperplane: no margin
        self.refs.append(np.array(coef, dtype=np.float64))
        self.m[ids], self.sign[ids] = m[ids], sign[ids]
        self.ref[ids] = len(self.refs) - 1
        return pos & neg

    def grow(self, n_new: int, changed: np.ndarray, labels: np.ndarray, rows: np.ndarray) -> None:
        """Make room for ``n_new`` new clusters; ``changed`` (split and new) get their row-norm
        maxima from ``rows`` (the rows of the split clusters, ``labels`` their new clusters)."""
        self.N = np.concatenate([self.N, np.zeros(n_new)])
        self.m = np.concatenate([self.m, np.zeros(n_new)])
        self.sign = np.concatenate([self.sign, np.zeros(n_new, dtype=np.int8)])
        self.ref = np.concatenate([self.ref, np.zeros(n_new, dtype=np.int64)])
        self.N[changed] = 0.0
        np.maximum.at(self.N, labels, self.norms[rows])
        self.sign[changed] = 0


def pure_part(sign: np.ndarray, SY: np.ndarray, SXa: np.ndarray, coef: np.ndarray,
              box: tuple[float, float]) -> float:
    """sum over clusters of rho_sigma (SY_k - SX~_k' c): the objective of sign-pure clusters
    with signs ``sign`` (+1: rho = hi r, -1: rho = lo r, (lo, hi) = ``box``), from their sums."""
    d = SY - SXa @ coef if SXa.shape[1] else SY.copy()
    return float(np.where(sign > 0, box[1] * d, box[0] * d).sum())
