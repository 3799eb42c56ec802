"""Power-of-two equilibration of an LP/QP before it reaches a solver, undone exactly after.

Solvers work with absolute tolerances and drop tiny coefficients (HiGHS ignores matrix entries
below 1e-9), so a model whose rows, columns or objective live on very different scales can be
solved to a wrong answer that the solver calls optimal. :func:`equilibrate` rewrites

    min 1/2 x'Px + c'x   s.t.  lo <= A x <= hi,  l <= x <= u

in the variables ``x = D x'`` with the rows multiplied by ``R`` and the objective by ``sigma``:

    min sigma (1/2 x'(DPD)x' + (Dc)'x')   s.t.  R lo <= (R A D) x' <= R hi,  l/D <= x' <= u/D.

``D``, ``R`` and ``sigma`` are powers of two, so scaling and unscaling are exact in floating
point. They come from

1. Ruiz equilibration of the KKT matrix [[P, A'], [A, 0]]: each row and column divided by the
   square root of its largest entry, repeated until nothing changes (at most ``max_iter`` passes);
2. a common variable scale ``t``: ``D <- t D``, ``R <- R / t``, which leaves ``R A D``
   unchanged and brings the bounds near 1. ``t`` is the typical box of the bounded variables
   when that is small (``|x_j|`` cannot exceed its box, so the box is its natural unit; a large
   box says nothing about a variable far from it; in an LP, also when the boxes are moderate
   and only Ruiz's factors made them large), else, without boxes, the typical row
   right-hand side (the size of ``A x``);
3. ``sigma`` making the largest objective coefficient (``Dc`` or ``DPD``) about 1.

The solution maps back by ``x = D x'``, row multipliers ``y = R y' / sigma`` (the stationarity
of the scaled problem is ``sigma D (P x + c) - D A' R y'' = ...``), and the toolkit's own check
(:func:`solvers.qp.check_kkt`) then runs on the *original* model.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.qp import QPData

if TYPE_CHECKING:
    import scipy.sparse as sp

COMMON_SCALE_MIN = 2.0**10
"""The common scale ``t`` is applied only when it is this far from 1: solvers are accurate on
models within a few orders of magnitude of 1, and each rescaling shifts their tolerances."""


@dataclasses.dataclass
class Scaling:
    """The factors of the module docstring: ``x = col * x'``, ``y = row * y' / sigma``."""

    col: np.ndarray
    row: np.ndarray
    sigma: float = 1.0

    @property
    def is_identity(self) -> bool:
        return self.sigma == 1.0 and bool(np.all(self.col == 1.0)) and bool(np.all(self.row == 1.0))

    def unscale(
        self, x: np.ndarray | None, y: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Primal and row-dual arrays of the original model from those of the scaled one."""
        x0 = None if x is None else np.asarray(x, dtype=float) * self.col
        y0 = None if y is None else np.asarray(y, dtype=float) * self.row / self.sigma
        return x0, y0


def pow2(v: np.ndarray) -> np.ndarray:
    """The power of two nearest (in log scale) to each positive entry; 1 for zeros/non-finite."""
    out = np.ones_like(v, dtype=float)
    ok = np.isfinite(v) & (v > 0)
    out[ok] = np.exp2(np.round(np.log2(v[ok])))
    return out


def nearest_pow2(v: float) -> float:
    """:func:`pow2` of one number."""
    return float(pow2(np.array([v], dtype=float))[0])


def entries_rms_pow2(X: Any) -> float:
    """The power of two nearest the root mean square of X's entries (dense or scipy sparse):
    a divisor that brings the data near 1, exactly."""
    from solvers.sparse import is_scipy_sparse

    sq = float(X.multiply(X).mean()) if is_scipy_sparse(X) else float(np.mean(np.square(X)))
    return nearest_pow2(np.sqrt(sq))


def _abs_max(M: sp.spmatrix, axis: int, size: int) -> np.ndarray:
    if M.nnz == 0:
        return np.zeros(size)
    return np.asarray(abs(M).max(axis=axis).todense()).ravel()


def _ruiz(A: sp.spmatrix, P: sp.spmatrix | None, max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    import scipy.sparse as sp

    m, n = A.shape
    d, r = np.ones(n), np.ones(m)
    for _ in range(max_iter):
        As = sp.diags(r) @ A @ sp.diags(d)
        col = _abs_max(As, 0, n)
        if P is not None:
            col = np.maximum(col, _abs_max(sp.diags(d) @ P @ sp.diags(d), 0, n))
        row = _abs_max(As, 1, m)
        with np.errstate(divide="ignore"):
            dc, rc = pow2(1.0 / np.sqrt(col)), pow2(1.0 / np.sqrt(row))
        if np.all(dc == 1.0) and np.all(rc == 1.0):
            break
        d *= dc
        r *= rc
    return d, r


def _magnitude(v: np.ndarray) -> float | None:
    """The power of two nearest the median of the finite non-zero |v|, or None."""
    v = np.abs(v[np.isfinite(v)])
    v = v[v > 0]
    return float(pow2(np.array([np.median(v)]))[0]) if v.size else None


def _common_scale(qp: QPData, d: np.ndarray, r: np.ndarray) -> float:
    """The common variable scale t of step 2.

    With bounded variables (boxes), t is their typical box size when that is below 1 (large
    boxes say nothing), or, in an LP, when Ruiz alone made moderate boxes large. Without
    boxes, the right-hand sides of the rows are the size of A x and give t in both directions
    (a ridge target b * 1e-12 makes x tiny too).
    """
    boxed = np.isfinite(qp.col_lo) & np.isfinite(qp.col_hi)
    if boxed.any():
        own = np.maximum(np.abs(qp.col_lo[boxed]), np.abs(qp.col_hi[boxed]))
        t = _magnitude(own / d[boxed])
        if t is None:
            return 1.0
        if t <= 1.0 / COMMON_SCALE_MIN:
            return t
        # An LP's large scaled box whose own box is moderate was made large by Ruiz (d tiny:
        # the dual of a LAD on X * 1e45 has u in [-1, 1] but Ruiz units of 2^75, and HiGHS ran
        # to its iteration limit): back to the box's own unit (t cancels in R A D; a QP's
        # D P D would take t^2, so QPs keep the Ruiz units).
        own_t = _magnitude(own)
        moderate = own_t is not None and 1.0 / COMMON_SCALE_MIN < own_t < COMMON_SCALE_MIN
        return t if qp.is_lp and moderate and t >= COMMON_SCALE_MIN else 1.0
    t = _magnitude(np.concatenate([r * qp.row_lo, r * qp.row_hi]))
    return t if t is not None and not 1.0 / COMMON_SCALE_MIN < t < COMMON_SCALE_MIN else 1.0


def equilibrate(qp: QPData, *, max_iter: int = 10) -> tuple[QPData, Scaling]:
    """The scaled model and its :class:`Scaling` (the model itself when no scaling is needed)."""
    import scipy.sparse as sp

    P = qp.P if not qp.is_lp else None
    d, r = _ruiz(qp.A, P, max_iter)
    t = _common_scale(qp, d, r)
    d, r = d * t, r / t
    obj = float(np.max(np.abs(qp.c * d), initial=0.0))
    if P is not None:
        obj = max(obj, float(np.max(np.abs((sp.diags(d) @ P @ sp.diags(d)).data), initial=0.0)))
    sigma = float(pow2(np.array([1.0 / obj]))[0]) if obj > 0 else 1.0
    scaling = Scaling(col=d, row=r, sigma=sigma)
    if scaling.is_identity:
        return qp, scaling
    Dm, Rm = sp.diags(d), sp.diags(r)
    A = Rm @ qp.A @ Dm
    A = A.tocsc() if qp.A.format == "csc" else A.tocsr()
    return (
        QPData(
            c=sigma * d * qp.c,
            A=A,
            row_lo=r * qp.row_lo,
            row_hi=r * qp.row_hi,
            col_lo=qp.col_lo / d,
            col_hi=qp.col_hi / d,
            P=None if P is None else sigma * (Dm @ P @ Dm),
            offset=sigma * qp.offset,
            col_blocks=list(qp.col_blocks),
            row_blocks=list(qp.row_blocks),
            name=qp.name,
        ),
        scaling,
    )
