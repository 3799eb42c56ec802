"""Kernel functions k(x, z), vectorized, with the scikit-learn parameter names.

    linear:       k(x, z) = x'z
    rbf:          k(x, z) = exp(-gamma ||x - z||^2)
    poly:         k(x, z) = (gamma x'z + coef0)^degree
    precomputed:  K is given; rows of "X" are indices into it (see :class:`Kernel`)

``gamma`` here is the RBF width of scikit-learn, not the S-KLR bound tolerance.
"""

from __future__ import annotations

import dataclasses

import numpy as np

KERNELS = ("linear", "rbf", "poly", "precomputed")


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A kernel with its parameters; ``K = kernel(X, Z)`` gives the n_X x n_Z matrix."""

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in KERNELS:
            raise ValueError(f"Unknown kernel {self.name!r}; choose one of {', '.join(KERNELS)}.")
        if self.name in ("rbf", "poly") and not (np.isfinite(self.gamma) and self.gamma > 0):
            raise ValueError(f"The kernel parameter 'gamma' must be > 0; got {self.gamma!r}.")

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Return the matrix [k(x_i, z_j)] (for ``precomputed``, X is the kernel row block)."""
        if self.name == "precomputed":
            return np.asarray(X, dtype=float)
        G = X @ Z.T
        if self.name == "linear":
            return np.asarray(G, dtype=float)
        if self.name == "poly":
            return (self.gamma * G + self.coef0) ** self.degree
        sq_x = np.einsum("ij,ij->i", X, X)
        sq_z = np.einsum("ij,ij->i", Z, Z)
        D = sq_x[:, None] + sq_z[None, :] - 2.0 * G
        np.maximum(D, 0.0, out=D)
        return np.exp(-self.gamma * D)

    def diag(self, X: np.ndarray) -> np.ndarray:
        """Return [k(x_i, x_i)] without forming the matrix."""
        if self.name == "precomputed":
            return np.diag(np.asarray(X, dtype=float)).copy()
        sq = np.einsum("ij,ij->i", X, X)
        if self.name == "linear":
            return sq
        if self.name == "poly":
            return (self.gamma * sq + self.coef0) ** self.degree
        return np.ones(X.shape[0])
