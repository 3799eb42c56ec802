"""A sparse data matrix, centred and row-scaled implicitly: ``M = diag(w) (X - 1 m')``.

Ridge with ``fit_intercept`` works on the centred, weighted rows ``sqrt(s_i) (x_i - xbar)``.
Forming them fills a sparse ``X`` in (every entry becomes ``-xbar_j`` where ``x_ij = 0``), so
:class:`CentredSparse` keeps the CSR ``X``, the shift ``m`` (d,) and the row scale ``w`` (n,)
apart and applies them in the products:

    M x  = w * (X x - (m'x) 1)
    M'v  = X'(w * v) - m (w'v)
    M'M  = Xw'Xw - (Xw'w) m' - m (Xw'w)' + (w'w) m m'      (Xw = diag(w) X; d x d dense)
    M M' = Xw Xw' - (Xw m) w' - w (Xw m)' + (m'm) w w'      (n x n dense)

``M[i:j]`` gives the rows i..j-1 of M as a dense block (the sketches stream such blocks), so
memory stays O(nnz(X) + block x d).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp


def is_scipy_sparse(obj: Any) -> bool:
    """``scipy.sparse.issparse(obj)`` without importing scipy: False while scipy.sparse is not
    in ``sys.modules``, which is exact, since no scipy sparse matrix or array can exist before
    scipy.sparse has been imported."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(obj)


def is_sparse(obj: Any) -> bool:
    """True for a scipy.sparse matrix/array or a :class:`CentredSparse`."""
    return is_scipy_sparse(obj) or isinstance(obj, CentredSparse)


class CentredSparse:
    """``M = diag(w) (X - 1 m')`` with X sparse (CSR); ``m``/``w`` None mean 0 / all ones."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, X: Any, shift: np.ndarray | None = None,
                 scale: np.ndarray | None = None) -> None:
        import scipy.sparse as sp

        self.X = sp.csr_matrix(X, dtype=np.float64)
        n, d = self.X.shape
        self.shape = (n, d)
        self.shift = None if shift is None or not np.any(shift) else np.asarray(shift, float)
        self.scale = None if scale is None or np.all(scale == 1.0) else np.asarray(scale, float)
        self.Xw = self.X if self.scale is None else sp.csr_matrix(sp.diags(self.scale) @ self.X)

    def _w(self) -> np.ndarray:
        return np.ones(self.shape[0]) if self.scale is None else self.scale

    # -- products
    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """``M x`` for a d-vector or a (d, k) array."""
        out = np.asarray(self.Xw @ x)
        if self.shift is not None:
            out = out - np.multiply.outer(self._w(), self.shift @ x)
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """``M' v`` for an n-vector or an (n, k) array."""
        out = np.asarray(self.Xw.T @ v)
        if self.shift is not None:
            out = out - np.multiply.outer(self.shift, self._w() @ v)
        return out

    @property
    def T(self) -> _Transposed:
        return _Transposed(self)

    def gram(self) -> np.ndarray:
        """``M'M`` (d x d, dense) by the formula of the module docstring."""
        H = (self.Xw.T @ self.Xw).toarray()
        if self.shift is not None:
            w, m = self._w(), self.shift
            c = np.asarray(self.Xw.T @ w)
            H -= np.outer(c, m) + np.outer(m, c)
            H += float(w @ w) * np.outer(m, m)
        return H

    def outer(self) -> np.ndarray:
        """``M M'`` (n x n, dense) by the formula of the module docstring."""
        G = (self.Xw @ self.Xw.T).toarray()
        if self.shift is not None:
            w, m = self._w(), self.shift
            c = np.asarray(self.Xw @ m)
            G -= np.outer(c, w) + np.outer(w, c)
            G += float(m @ m) * np.outer(w, w)
        return G

    def sketch_rows(self, S: Any, start: int, stop: int) -> np.ndarray:
        """``S M[start:stop]`` (m x d dense) for a dense or sparse m x k ``S``, without making
        the rows dense: ``(S diag(w_b)) X_b - (S w_b) m'``."""
        import scipy.sparse as sp

        wb = self._w()[start:stop]
        Sw = S @ sp.diags(wb) if sp.issparse(S) else S * wb
        out = Sw @ self.X[start:stop]
        out = out.toarray() if sp.issparse(out) else np.asarray(out)
        if self.shift is not None:
            out -= np.outer(np.asarray(S @ wb).ravel(), self.shift)
        return out

    # -- rows
    def __getitem__(self, rows: slice) -> np.ndarray:
        """Rows ``rows`` (a slice) of M as a dense block."""
        if not isinstance(rows, slice):
            raise TypeError("CentredSparse supports row slices M[i:j] only.")
        block = self.X[rows].toarray()
        if self.shift is not None:
            block -= self.shift
        if self.scale is not None:
            block *= self.scale[rows, None]
        return block

    def tocsr(self) -> sp.csr_matrix:
        """M as a CSR matrix: sparse without a shift, filled in (dense pattern) with one."""
        import scipy.sparse as sp

        if self.shift is None:
            return self.Xw
        return sp.csr_matrix(self.toarray())

    def toarray(self) -> np.ndarray:
        """M as a dense array (n x d floats)."""
        return self[0:self.shape[0]]


class _Transposed:
    """``M'`` for ``M.T @ v``."""

    def __init__(self, M: CentredSparse) -> None:
        self.M = M
        self.shape = M.shape[::-1]

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        return self.M.rmatvec(v)
