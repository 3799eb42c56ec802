"""Kernel functions k(x, z), vectorized, with the scikit-learn parameter names.

    linear:       k(x, z) = x'z
    rbf:          k(x, z) = exp(-gamma ||x - z||^2)
    poly:         k(x, z) = (gamma x'z + coef0)^degree
    precomputed:  K is given; rows of "X" are indices into it (see :class:`Kernel`)

``gamma`` here is the RBF width of scikit-learn, not the S-KLR bound tolerance.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from solvers.sparse import is_scipy_sparse

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
        """Return the matrix [k(x_i, z_j)] (for ``precomputed``, X is the kernel row block).

        X and Z may be scipy sparse: they stay sparse up to the dense m x n_z result."""
        if self.name == "precomputed":
            return X.toarray() if is_scipy_sparse(X) else np.asarray(X, dtype=float)
        G = X @ Z.T
        G = G.toarray() if is_scipy_sparse(G) else np.asarray(G, dtype=float)
        if self.name == "linear":
            return G
        if self.name == "poly":
            return (self.gamma * G + self.coef0) ** self.degree
        D = row_norms(X)[:, None] + row_norms(Z)[None, :] - 2.0 * G
        np.maximum(D, 0.0, out=D)
        return np.exp(-self.gamma * D)

    def diag(self, X: np.ndarray) -> np.ndarray:
        """Return [k(x_i, x_i)] without forming the matrix."""
        if self.name == "precomputed":
            return np.diag(np.asarray(X, dtype=float)).copy()
        sq = row_norms(X)
        if self.name == "linear":
            return sq
        if self.name == "poly":
            return (self.gamma * sq + self.coef0) ** self.degree
        return np.ones(X.shape[0])


def row_norms(X: Any) -> np.ndarray:
    """[||x_i||^2] per row of a dense array or a scipy sparse matrix."""
    if is_scipy_sparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)
