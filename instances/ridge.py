"""Ridge regression instances: the papers' synthetic low-effective-rank data, and random
Fourier features to expand low-dimensional data (Rahimi & Recht 2008).

Synthetic data (Shi & Phillips 2020; Dickens et al., Appendix E)::

    R = floor(r d + 0.5)                      (effective rank)
    G_ij ~ N(0, 1);  column j (1-based) scaled by exp(-(j-1)^2 / R^2)
    A = DCT(G) along the feature axis         (orthonormal DCT-II, a rotation)
    x0: first R entries N(0, 1), the rest 0, normalised to unit length
    b = A x0 + eps,  eps_i ~ N(0, sigma^2)
"""

from __future__ import annotations

import numpy as np
import scipy.fft

from solvers.validation import (
    check_array,
    check_int,
    check_nonnegative,
    check_positive,
)


def make_ridge(
    *, n: int, d: int, r: float = 0.1, sigma: float = 2.0, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic ridge data of effective rank ``R = floor(r d + 0.5)``.

    Parameters
    ----------
    n, d : int
        Rows and features.
    r : float in (0, 1]
        Effective-rank fraction (the papers use 0.1, 0.15, 0.25).
    sigma : float
        Noise standard deviation (the papers use 2).
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    A : ndarray (n, d)
    b : ndarray (n,)
        ``A x0 + eps``.
    x0 : ndarray (d,)
        The unit-norm ground truth.
    """
    f = "make_ridge"
    n = check_int(n, "n", f)
    d = check_int(d, "d", f)
    r = check_positive(r, "r", f)
    sigma = check_nonnegative(sigma, "sigma", f)
    rng = np.random.default_rng(seed)
    R = max(1, int(np.floor(r * d + 0.5)))
    j = np.arange(d)
    A = rng.standard_normal((n, d)) * np.exp(-(j**2) / R**2)
    A = scipy.fft.dct(A, type=2, norm="ortho", axis=1)
    x0 = np.zeros(d)
    x0[:R] = rng.standard_normal(min(R, d))
    x0 /= np.linalg.norm(x0)
    b = A @ x0 + sigma * rng.standard_normal(n)
    return A, b, x0


def random_fourier_features(
    X: np.ndarray, *, d: int = 1024, gamma: float = 1.0, seed: int | None = 0
) -> np.ndarray:
    """Random Fourier features of the RBF kernel ``exp(-gamma ||x - x'||^2)``.

    ``Z = sqrt(2/d) cos(X W + u)`` with ``W_ij ~ N(0, 2 gamma)`` (p x d) and
    ``u_j ~ U[0, 2 pi)``, so ``Z Z'`` approximates the kernel matrix (as scikit-learn's
    RBFSampler, whose defaults the paper used with d = 1024).
    """
    f = "random_fourier_features"
    X = check_array(X, "X", min_samples=0)
    d = check_int(d, "d", f)
    gamma = check_positive(gamma, "gamma", f)
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=np.sqrt(2.0 * gamma), size=(X.shape[1], d))
    u = rng.uniform(0.0, 2.0 * np.pi, size=d)
    Z = X @ W
    Z += u
    np.cos(Z, out=Z)
    Z *= np.sqrt(2.0 / d)
    return Z
