"""The sketched Hessian ``Hhat = B'B + c I`` (c = gamma + rho) applied through its low-rank form.

With the thin SVD ``B = U diag(s) V'`` (V: d x r, r <= m), ``B'B = V diag(s^2) V'`` and::

    Hhat v      = c v + V diag(s^2) V' v
    Hhat^{-1} v = (v - V diag(s^2 / (s^2 + c)) V' v) / c

Each application costs O(m d) (two products with V); nothing d x d is formed. The same class
serves the randomized sketches (B = S A gives ``A'S'SA + gamma I``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from solvers.sketch.fd import blas_limit
from solvers.validation import check_array, check_positive


class SketchPreconditioner:
    """``Hhat = B'B + shift I`` with its inverse applied in O(m d).

    Parameters
    ----------
    B : ndarray (m, d)
        A sketch of A (FD / RFD ``sketch_`` or a random projection ``S A``).
    shift : float
        ``c = gamma + rho`` (the paper's gamma for FD, gamma + rho for RFD); must be > 0.

    Attributes
    ----------
    V_ : ndarray (d, r)
        Orthonormal right singular vectors of B with nonzero singular values.
    s2_ : ndarray (r,)
        Their squared singular values (eigenvalues of B'B).
    shift_ : float
        The shift c.
    """

    def __init__(self, B: np.ndarray, shift: float) -> None:
        B = check_array(B, "B")
        self.shift_ = check_positive(shift, "shift", "SketchPreconditioner")
        with blas_limit(1):  # m x d: two BLAS threads made it 4-40x slower under load
            _, s, Vt = scipy.linalg.svd(B, full_matrices=False, check_finite=False)
        keep = s > s[0] * 1e-14 if s.size and s[0] > 0 else np.zeros(s.shape, bool)
        self.s2_ = s[keep] ** 2
        self.V_ = np.ascontiguousarray(Vt[keep].T)
        self._w = self.s2_ / (self.s2_ + self.shift_)
        self.d = B.shape[1]

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``Hhat^{-1} v`` for a vector (d,) or a matrix (d, k)."""
        V = self.V_
        Vv = V.T @ v
        w = self._w if np.ndim(v) == 1 else self._w[:, None]
        return (v - V @ (w * Vv)) / self.shift_

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``Hhat v`` for a vector (d,) or a matrix (d, k)."""
        V = self.V_
        s2 = self.s2_ if np.ndim(v) == 1 else self.s2_[:, None]
        return self.shift_ * v + V @ (s2 * (V.T @ v))

    def reweighted(self, weight: float, shift: float) -> SketchPreconditioner:
        """``weight B'B + shift I`` from the same factors (no new SVD; O(r) work): the sketch of
        ``sqrt(weight) A`` for a scalar ``weight > 0``. V_ is shared, not copied."""
        weight = check_positive(weight, "weight", "SketchPreconditioner.reweighted")
        out = object.__new__(SketchPreconditioner)
        out.shift_ = check_positive(shift, "shift", "SketchPreconditioner.reweighted")
        out.s2_ = weight * self.s2_
        out.V_ = self.V_
        out._w = out.s2_ / (out.s2_ + out.shift_)
        out.d = self.d
        return out

    __call__ = solve
