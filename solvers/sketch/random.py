"""Randomized row sketches ``S A`` (S: m x n), applied in streaming blocks of rows.

- Gaussian: ``S = R / sqrt(m)``, R_ij ~ N(0, 1). Cost O(m n d).
- SJLT (Nelson & Nguyen 2013): ``s`` stacked CountSketch blocks with m/s rows each (sizes
  differ by at most one when s does not divide m); in each block every column of S (each row of
  A) gets one +-1 in a uniformly random row; the whole is scaled by ``1/sqrt(s)`` so that
  E[S'S] = I. Cost O(s nnz(A)).

Both are streaming: ``partial_fit(block)`` draws the columns of S that belong to the block's rows
from one ``numpy.random.Generator``, so the sketch depends only on the seed and on the sequence
of block lengths.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.errors import DataError
from solvers.validation import check_array, check_int


class _RowSketch:
    """Common streaming state: the accumulated ``S A`` (m x d)."""

    def __init__(self, m: int, *, seed: int | None = 0) -> None:
        self.m = check_int(m, "m", type(self).__name__, low=1)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._SA: np.ndarray | None = None
        self.n_rows_seen_ = 0

    def partial_fit(self, block: np.ndarray) -> _RowSketch:
        """Add ``S[:, rows] @ block`` for the next block of rows; returns ``self``."""
        X = check_array(block, "block", min_samples=0)
        if self._SA is None:
            self._SA = np.zeros((self.m, X.shape[1]))
        elif X.shape[1] != self._SA.shape[1]:
            raise DataError(
                f"The 'block' argument has {X.shape[1]} features; this sketch expects "
                f"{self._SA.shape[1]}."
            )
        if X.shape[0]:
            self._SA += self._block_matrix(X.shape[0]) @ X
        self.n_rows_seen_ += X.shape[0]
        return self

    def fit(self, A: np.ndarray, *, block_size: int = 4096) -> _RowSketch:
        """Reset (same seed) and sketch all rows of ``A`` in blocks of ``block_size``."""
        A = check_array(A, "A")
        block_size = check_int(block_size, "block_size", type(self).__name__)
        self._rng = np.random.default_rng(self.seed)
        self._SA = None
        self.n_rows_seen_ = 0
        for start in range(0, A.shape[0], block_size):
            self.partial_fit(A[start:start + block_size])
        return self

    @property
    def sketch_(self) -> np.ndarray:
        """The m x d sketch ``S A``."""
        if self._SA is None:
            raise DataError("This sketch has seen no rows; call partial_fit(block) first.")
        return self._SA.copy()

    def _block_matrix(self, nb: int):  # pragma: no cover - abstract
        raise NotImplementedError


class GaussianSketch(_RowSketch):
    """Gaussian projection ``S = R / sqrt(m)`` applied block by block (see module docstring)."""

    def _block_matrix(self, nb: int) -> np.ndarray:
        return self._rng.standard_normal((self.m, nb)) / np.sqrt(self.m)


class SJLTSketch(_RowSketch):
    """Sparse JL transform: ``s`` stacked CountSketches of about m/s rows, scaled 1/sqrt(s).

    Parameters
    ----------
    m : int
        Total rows of S; must be >= s.
    s : int, default 10
        Number of CountSketch blocks (nonzeros per column of S), the paper's s = 10.
    seed : int
        Seed of the generator.
    """

    def __init__(self, m: int, *, s: int = 10, seed: int | None = 0) -> None:
        super().__init__(m, seed=seed)
        self.s = check_int(s, "s", type(self).__name__, low=1, high=self.m)
        sizes = np.full(self.s, self.m // self.s)
        sizes[: self.m % self.s] += 1
        self._offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        self._sizes = sizes

    def _block_matrix(self, nb: int) -> sp.csr_matrix:
        rng = self._rng
        rows = self._offsets[:, None] + (rng.random((self.s, nb)) * self._sizes[:, None]).astype(
            np.int64
        )
        signs = rng.integers(0, 2, size=(self.s, nb)) * 2.0 - 1.0
        cols = np.broadcast_to(np.arange(nb), (self.s, nb))
        vals = signs / np.sqrt(self.s)
        return sp.csr_matrix((vals.ravel(), (rows.ravel(), cols.ravel())), shape=(self.m, nb))


def make_random_sketch(kind: str, m: int, *, seed: int | None = 0) -> _RowSketch:
    """A fresh streaming sketch: ``kind`` in {"gaussian", "sjlt"}."""
    if kind == "gaussian":
        return GaussianSketch(m, seed=seed)
    if kind == "sjlt":
        return SJLTSketch(m, s=min(10, int(m)), seed=seed)
    raise DataError(f"The 'kind' parameter must be 'gaussian' or 'sjlt'; got {kind!r}.")
