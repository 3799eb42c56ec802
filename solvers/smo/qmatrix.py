"""Q matrices for the SMO duals: Q_ij = y_i y_j k(x_i, x_j), column by column.

The decomposition solvers only ever touch Q through two calls, as LIBSVM's ``QMatrix`` does:

    column(i) -> Q[:, i] = y_i * y * K[:, i]     (n values)
    diag()    -> [Q_ii] = [k(x_i, x_i)]           (y_i^2 = 1)

Two implementations:

* :class:`KernelQMatrix` computes a column on demand from :class:`solvers.kernels.Kernel`
  (one vectorized kernel call of n x 1) and keeps recent columns in an LRU cache bounded by
  ``cache_mb`` megabytes (LIBSVM's ``cache_size``).
* :class:`PrecomputedQMatrix` holds the whole n x n matrix (small n, or a user kernel matrix).

Both also hand their raw data to the compiled SMO core through :meth:`compiled_spec`; the
core then computes the same columns itself (see :mod:`solvers.smo.core`) with its own slot
cache of the same budget, because a Python call per column would cost more than the column.
"""

from __future__ import annotations

import collections
from typing import NamedTuple, Protocol

import numpy as np

from solvers.kernels import Kernel

KIND_LINEAR, KIND_RBF, KIND_POLY, KIND_MATRIX = 0, 1, 2, 3
"""Kernel codes understood by the compiled core (``KIND_MATRIX``: Q is given in full)."""

_KIND_OF = {"linear": KIND_LINEAR, "rbf": KIND_RBF, "poly": KIND_POLY}


class CompiledSpec(NamedTuple):
    """What the compiled core needs to compute Q columns itself."""

    kind: int  # KIND_* code
    X: np.ndarray  # the data transposed, p x n C-contiguous float64 (1 x 1 dummy for KIND_MATRIX)
    sqnorm: np.ndarray  # ||x_i||^2, used by the RBF kernel
    gamma: float
    coef0: float
    degree: float
    Q: np.ndarray  # n x n for KIND_MATRIX, else a 1 x 1 dummy
    n_slots: int  # columns the core may cache (cache_mb / (8 n)), at least 2


class QMatrix(Protocol):
    """The protocol the SMO solvers use: columns and the diagonal of Q."""

    n: int

    def column(self, i: int) -> np.ndarray:
        """Return Q[:, i] (length n); do not modify the returned array."""
        ...

    def diag(self) -> np.ndarray:
        """Return the diagonal [Q_ii]."""
        ...

    def compiled_spec(self) -> CompiledSpec:
        """Return the raw arrays for the compiled core."""
        ...


def cache_slots(n: int, cache_mb: float, itemsize: int = 8) -> int:
    """Number of length-n columns of ``itemsize``-byte floats in ``cache_mb`` MB (>= 2, <= n)."""
    if not (np.isfinite(cache_mb) and cache_mb > 0):
        raise ValueError(f"'cache_mb' must be a positive number of megabytes; got {cache_mb!r}.")
    slots = int(cache_mb * 2**20 // (itemsize * max(n, 1)))
    return int(min(max(slots, 2), max(n, 2)))


class KernelQMatrix:
    """Q computed on demand from a kernel, with an LRU cache of columns.

    Parameters
    ----------
    X : (n, p) array
        Training rows x_i.
    y : (n,) array of +-1
        Labels y_i.
    kernel : Kernel
        k(x, z); ``precomputed`` is not accepted here (use :class:`PrecomputedQMatrix`).
    cache_mb : float
        Memory budget of the column cache in megabytes (LIBSVM's ``cache_size``).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, kernel: Kernel, cache_mb: float = 200.0):
        if kernel.name not in _KIND_OF:
            raise ValueError(
                f"KernelQMatrix needs a kernel function; got 'kernel'={kernel.name!r}. "
                "Use PrecomputedQMatrix for a precomputed kernel matrix."
            )
        self.X = np.ascontiguousarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.kernel = kernel
        self.n = self.X.shape[0]
        self.cache_mb = float(cache_mb)
        self._max_cols = cache_slots(self.n, self.cache_mb)
        self._cache: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()
        self._diag = kernel.diag(self.X)
        self.hits = 0
        self.misses = 0

    def column(self, i: int) -> np.ndarray:
        """Q[:, i] = y_i y K(X, x_i), from the cache or one vectorized kernel call."""
        col = self._cache.get(i)
        if col is not None:
            self._cache.move_to_end(i)
            self.hits += 1
            return col
        self.misses += 1
        col = self.kernel(self.X, self.X[i : i + 1])[:, 0] * (self.y * self.y[i])
        col.setflags(write=False)
        self._cache[i] = col
        if len(self._cache) > self._max_cols:
            self._cache.popitem(last=False)
        return col

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """Q[:, idx] as an n x len(idx) array (one kernel call; not cached)."""
        idx = np.asarray(idx, dtype=np.int64)
        return self.kernel(self.X, self.X[idx]) * np.outer(self.y, self.y[idx])

    def diag(self) -> np.ndarray:
        """[Q_ii] = [k(x_i, x_i)]."""
        return self._diag

    def compiled_spec(self) -> CompiledSpec:
        """The kernel's data for the compiled core."""
        k = self.kernel
        return CompiledSpec(
            kind=_KIND_OF[k.name],
            X=np.ascontiguousarray(self.X.T),
            sqnorm=np.einsum("ij,ij->i", self.X, self.X),
            gamma=float(k.gamma),
            coef0=float(k.coef0),
            degree=float(k.degree),
            Q=np.zeros((1, 1)),
            n_slots=self._max_cols,
        )


class PrecomputedQMatrix:
    """The whole Q = (y y') * K in memory (small n, or a precomputed kernel matrix).

    Parameters
    ----------
    K : (n, n) array
        Kernel matrix K_ij = k(x_i, x_j) (symmetric positive semidefinite).
    y : (n,) array of +-1
        Labels.
    """

    def __init__(self, K: np.ndarray, y: np.ndarray):
        K = np.asarray(K, dtype=float)
        if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] != len(y):
            raise ValueError(
                f"The kernel matrix must be n x n with n = len(y) = {len(y)}; got {K.shape}."
            )
        if not np.all(np.isfinite(K)):
            raise ValueError("The kernel matrix contains NaN or infinity; check the kernel.")
        y = np.asarray(y, dtype=float)
        self.Q = np.ascontiguousarray(K * np.outer(y, y))
        self.n = K.shape[0]

    @classmethod
    def from_kernel(cls, X: np.ndarray, y: np.ndarray, kernel: Kernel) -> PrecomputedQMatrix:
        """Form K = kernel(X, X) once and keep Q."""
        return cls(kernel(X, X), y)

    @classmethod
    def from_q(cls, Q: np.ndarray) -> PrecomputedQMatrix:
        """Wrap an already formed Q = (y y') * K (C-contiguous float64, not copied)."""
        obj = cls.__new__(cls)
        obj.Q = np.ascontiguousarray(Q, dtype=float)
        obj.n = obj.Q.shape[0]
        return obj

    def column(self, i: int) -> np.ndarray:
        """Q[:, i] (a row of the symmetric matrix, no copy)."""
        return self.Q[i]

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """Q[:, idx]."""
        return self.Q[:, np.asarray(idx, dtype=np.int64)]

    def diag(self) -> np.ndarray:
        """[Q_ii]."""
        return np.diag(self.Q).copy()

    def compiled_spec(self) -> CompiledSpec:
        """The full matrix for the compiled core."""
        return CompiledSpec(
            kind=KIND_MATRIX,
            X=np.zeros((1, 1)),
            sqnorm=np.zeros(1),
            gamma=0.0,
            coef0=0.0,
            degree=1.0,
            Q=self.Q,
            n_slots=0,
        )
