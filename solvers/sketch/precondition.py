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

from solvers.threads import blas_limit
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


class JacobiSketchPreconditioner:
    """``M = D^{1/2} (Bs'Bs + diag(e)) D^{1/2}`` with ``Bs`` a sketch (m x d) of ``A D^{-1/2}``.

    For ridge with Jacobi scaling, ``D = diag(H) = diag(A'A) + gamma`` (so ``D^{-1/2} H D^{-1/2}``
    has unit diagonal) and ``e = rho + gamma / D`` (RFD's rho of the scaled sketch; 0 for FD):
    M is the sketch's ``Hhat`` of the column-equilibrated problem, mapped back. Its inverse by
    the Woodbury identity with the m x m matrix ``K = I + Bs E^{-1} Bs'`` (SPD, eigenvalues
    >= 1, factored once)::

        M^{-1} v = D^{-1/2} (u - E^{-1} Bs' K^{-1} Bs u),   u = E^{-1} D^{-1/2} v

    Each application costs O(m d); nothing d x d is formed.

    Parameters
    ----------
    Bs : ndarray (m, d)
        The sketch of the column-scaled rows.
    e : ndarray (d,)
        The diagonal ``E``; every entry > 0.
    scale : ndarray (d,)
        ``D^{1/2}``; every entry > 0.
    """

    def __init__(self, Bs: np.ndarray, e: np.ndarray, scale: np.ndarray) -> None:
        Bs = check_array(Bs, "Bs")
        e, scale = np.asarray(e, dtype=float), np.asarray(scale, dtype=float)
        d = Bs.shape[1]
        if e.shape != (d,) or scale.shape != (d,) or not (np.all(e > 0) and np.all(scale > 0)):
            raise ValueError(f"The 'e' and 'scale' arguments of JacobiSketchPreconditioner must "
                             f"be positive vectors of length d = {d}; got shapes "
                             f"{e.shape}, {scale.shape}.")
        self.B_ = np.asarray(Bs, dtype=float)
        self.e_, self.scale_ = e, scale
        self._EB = self.B_ / e  # Bs E^{-1} (m x d)
        with blas_limit(1):
            K = np.eye(self.B_.shape[0]) + self._EB @ self.B_.T
            self._K = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
        self.d = d

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``M^{-1} v`` for a vector (d,) or a matrix (d, k)."""
        col = (lambda w: w) if np.ndim(v) == 1 else (lambda w: w[:, None])
        u = v / col(self.e_ * self.scale_)
        w = u - self._EB.T @ scipy.linalg.cho_solve(self._K, self.B_ @ u, check_finite=False)
        return w / col(self.scale_)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``M v`` for a vector (d,) or a matrix (d, k)."""
        col = (lambda w: w) if np.ndim(v) == 1 else (lambda w: w[:, None])
        u = v * col(self.scale_)
        return (col(self.e_) * u + self.B_.T @ (self.B_ @ u)) * col(self.scale_)

    __call__ = solve
