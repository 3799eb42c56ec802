"""Power-of-two equilibration of AID's data, undone exactly on the way back.

AID builds its own HiGHS / Clarabel models from cluster sums, so the equilibration of
:mod:`solvers.scaling` never sees them. HiGHS drops matrix entries below 1e-9, rejects entries
above 1e15 and tests reduced costs against the absolute tolerance 1e-7, so data on a scale far
from 1 (a feature of size 1e-10, weights of 1e-9, targets of 1e10) would be solved to a wrong
answer. AID therefore works on rescaled arrays:

* LAD: ``X'_ij = X_ij c_j``, ``y' = t y``, ``s' = w s``. Then for ``beta'_j = t beta_j / c_j``,
  ``b' = t b`` the residuals are ``r' = t r`` and the objective is ``E' = w t E``: the same
  argmin, the objective times ``unit = w t``. ``c_j`` brings max_i |X_ij| into [1/2, 1), ``t``
  the mean absolute deviation of y (the natural scale per unit weight, which is the size of a
  residual) and ``w`` the mean weight.
* SVM: ``x'_j = c_j x_j`` with ``w_j = c_j w'_j`` (so ``1/2 ||w||^2 = 1/2 sum_j c_j^2 w'_j^2``,
  a diagonal Hessian), and the aggregated objective multiplied by ``sigma``, which brings a
  small mean box ``C s_i`` into [1/2, 1) (the dual variables become ``sigma alpha``).

Columns of X are rescaled only when their magnitude lies outside [2^-10, 2^10], the scalars
outside [2^-3, 2^3] (see :data:`COLUMN_FREE_EXP`): well-scaled data runs exactly as before.

Every factor is a power of two, so multiplying and dividing by it is exact in floating point
(no rounding, barring overflow or underflow of a scaled entry; the factors themselves are
clamped to [2^-1000, 2^1000]).
"""

from __future__ import annotations

import dataclasses

import numpy as np

MAX_EXP = 1000
"""Factors are clamped to [2^-MAX_EXP, 2^MAX_EXP] (float64 reaches about 2^1023)."""

COLUMN_FREE_EXP = 10
"""Columns of X whose magnitude is within [2^-10, 2^10] are left alone (factor 1): HiGHS and
Clarabel are accurate on data within a few orders of magnitude of 1, and X is then not copied.
The scalars (y's scale, the weights, C) are rescaled once outside [2^-3, 2^3] (``SCALAR_FREE_EXP``):
that is free, and the objective's absolute tolerances care about them most."""

SCALAR_FREE_EXP = 3


def pow2_factor(magnitude: np.ndarray | float, free_exp: int = SCALAR_FREE_EXP) -> np.ndarray:
    """``2^-e`` where ``magnitude = f 2^e`` with ``f`` in [1/2, 1): ``magnitude * factor`` is
    ``f``, exactly. Zero and non-finite magnitudes, and those with ``|e| <= free_exp``, get the
    factor 1."""
    m = np.atleast_1d(np.asarray(magnitude, dtype=np.float64))
    out = np.ones_like(m)
    ok = np.isfinite(m) & (m > 0)
    _, e = np.frexp(m[ok])
    e = np.where(np.abs(e) <= free_exp, 0, e)
    out[ok] = np.ldexp(1.0, np.clip(-e, -MAX_EXP, MAX_EXP))
    return out


def column_factors(X: np.ndarray) -> np.ndarray:
    """One factor per column: ``c_j = pow2_factor(max_i |X_ij|)`` (1 for an all-zero column
    and for magnitudes within [2^-10, 2^10])."""
    if X.shape[1] == 0 or X.shape[0] == 0:
        return np.ones(X.shape[1])
    return pow2_factor(column_magnitudes(X), COLUMN_FREE_EXP)


def column_magnitudes(X: np.ndarray) -> np.ndarray:
    """``max_i |X_ij|`` per column (see :func:`column_range`)."""
    lo, hi = column_range(X)
    return np.maximum(hi, -lo)


def column_range(X: np.ndarray, width: int = 2048, block: int = 8192
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(min_i X_ij, max_i X_ij)`` per column, NaN where a column holds a NaN.

    numpy's ``X.max(axis=0)`` on a C-ordered X with few columns runs its inner loop over
    the p entries of one row, which costs 4x a whole-array max (10^6 x 10); viewing blocks of
    k = width / p consecutive rows as one row of k p entries gives the loop that length, and
    the k partial extremes per column are reduced after. A strided X (e.g. columns sliced
    from a wider array) is copied ``block`` rows at a time to get that layout."""
    n, p = X.shape
    if n == 0:
        return np.full(p, np.inf), np.full(p, -np.inf)
    if not X.flags.c_contiguous:
        parts = [column_range(np.ascontiguousarray(X[i:i + block]), width, block)
                 for i in range(0, n, block)]
        return (np.min([q[0] for q in parts], axis=0), np.max([q[1] for q in parts], axis=0))
    k = max(1, width // max(p, 1))
    m = n // k
    lo, hi = np.full(p, np.inf), np.full(p, -np.inf)
    if m:
        H = X[: m * k].reshape(m, k * p)
        lo = H.min(axis=0).reshape(k, p).min(axis=0)
        hi = H.max(axis=0).reshape(k, p).max(axis=0)
    if m * k < n:
        lo = np.minimum(lo, X[m * k:].min(axis=0))
        hi = np.maximum(hi, X[m * k:].max(axis=0))
    return lo, hi


def scale_columns(X: np.ndarray, col: np.ndarray) -> np.ndarray:
    """``X * col`` (a new array), or ``X`` itself when every factor is 1."""
    return X if np.all(col == 1.0) else X * col


@dataclasses.dataclass(frozen=True)
class LadScaling:
    """The LAD factors of the module docstring: ``X' = X c``, ``y' = t y``, ``s' = w s``."""

    col: np.ndarray
    t: float
    w: float

    @classmethod
    def of(cls, X: np.ndarray, y: np.ndarray, s: np.ndarray, natural_scale: float) -> LadScaling:
        """Factors for data ``(X, y, s)`` whose natural scale (best constant fit) is given."""
        total = float(s.sum())
        dev = natural_scale / total if natural_scale > 0 else float(np.max(np.abs(y)))
        return cls(col=column_factors(X), t=float(pow2_factor(dev)[0]),
                   w=float(pow2_factor(total / s.shape[0])[0]))

    @property
    def unit(self) -> float:
        """The objective factor: ``E' = unit * E``."""
        return self.w * self.t

    def apply(
        self, X: np.ndarray, y: np.ndarray, s: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scaled arrays ``(X', y', s')``."""
        return scale_columns(X, self.col), y * self.t, s * self.w

    def coef(self, beta_s: np.ndarray, b_s: float) -> tuple[np.ndarray, float]:
        """``(beta, b)`` of the data from ``(beta', b')`` of the scaled problem."""
        return beta_s * self.col / self.t, float(b_s) / self.t


def dynamic_range(v: np.ndarray) -> float:
    """max |v| / min |v| over the non-zero entries (1 when there are none)."""
    a = np.abs(v[v != 0])
    return float(a.max() / a.min()) if a.size else 1.0


def worst_scaled(columns: dict[str, np.ndarray], limit: float = 1e8) -> str:
    """A sentence naming the array with the widest dynamic range of its non-zero entries, when
    that range exceeds ``limit`` (power-of-two scaling cannot shrink a range within a column);
    "" when none does."""
    ranges = {name: dynamic_range(v) for name, v in columns.items()}
    name = max(ranges, key=ranges.get) if ranges else None
    if name is None or ranges[name] <= limit:
        return ""
    return (f"{name} spans a dynamic range of {ranges[name]:.1e} (non-zero |values|) that "
            "scaling cannot reduce; rescale or drop it")
