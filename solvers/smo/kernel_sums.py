r"""Kernel sums ``f_s = sum_t w_t k(a_s, b_t)`` without forming the kernel matrix, compiled.

Two callers need the whole product ``K(A, B) w`` for m x n_b pairs at once:

* SMO's start ``Q alpha0`` (:func:`solvers.smo.core.q_times`): KLR starts with every alpha
  strictly inside the box, so this is the full n x n product (2.5*10^9 kernel values at
  n = 5*10^4);
* prediction and the independent re-evaluation, ``f(x) = sum_i alpha_i y_i k(x_i, x) + b``
  (:func:`solvers.smo.prediction.kernel_expansion`).

numpy builds each block of K in five passes over memory (the product X Z', the two norms, the
maximum, the exp) and its exp runs on one core: about 21 ns per kernel value for RBF at p = 10
on this machine. Here (compiled: ``solvers/_core/src/_kernels.cpp``) the rows of A are cut into
blocks of ``FILL_BLOCK`` (one OpenMP task each); in a block the values k(a_s, b_t), s in the
block, are computed for one b_t at a time by the SMO cache's own column loop
(``optmodels/kernel.hpp``: dot products along the contiguous rows of A', the vectorized exp of
``exp_parts``, <= 2 ulp) and added with weight w_t into the block's sums while they are in
cache.

With many features the p multiply-adds per value dominate, and BLAS does them faster: above
``GRAM_FROM`` features the dot products of a block of rows come from one BLAS product A_blk B'
and only the kernel map and the weighted sum are compiled (measured at 2*10^4 x 2*10^4, RBF:
p = 10: 2.9 ns per value by columns, p = 100: 12.2 ns by columns; numpy 20-27 ns either way).
Linear kernels need neither: ``K(A, B) w = A (B' w)`` is two BLAS products.
"""

from __future__ import annotations

import numpy as np

from solvers._core import _kernels
from solvers.kernels import Kernel
from solvers.smo.qmatrix import KIND_MATRIX, KIND_POLY, KIND_RBF, QMatrix

_KINDS = {"rbf": KIND_RBF, "poly": KIND_POLY}
FILL_BLOCK: int = _kernels.FILL_BLOCK
"""Rows of A per task of the column loop (the SMO cache's block of a column)."""
GRAM_FROM = 32
"""Features from which the dot products come from BLAS (``_kernels.sums_from_gram``)."""
GRAM_BLOCK_ELEMS = 2**22
"""Entries of one block A_blk B' of dot products (32 MB)."""


def kernel_sums(kernel: Kernel, A: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
    """K(A, B) w, i.e. ``[sum_t w_t k(a_s, b_t)]_s`` (length m), for a linear / rbf / poly kernel.

    Parameters
    ----------
    kernel : Kernel
        k (not ``precomputed``).
    A : (m, p) array
        The rows a_s the sums are wanted at.
    B : (n_b, p) array
        The rows b_t of the expansion.
    w : (n_b,) array
        The weights w_t (e.g. alpha_t y_t).
    """
    A = np.asarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    w = np.ascontiguousarray(w, dtype=float)
    if kernel.name == "linear":
        return A @ (B.T @ w)
    if kernel.name not in _KINDS:
        raise ValueError(f"kernel_sums needs a kernel function; got {kernel.name!r}.")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1] or w.shape != (B.shape[0],):
        raise ValueError(
            f"kernel_sums needs A (m x p), B (n_b x p) and w (n_b,); got {A.shape}, {B.shape}, "
            f"{w.shape}."
        )
    out = np.zeros(A.shape[0])
    if B.shape[0] == 0 or A.shape[0] == 0:
        return out
    kind, sqa, sqb = _KINDS[kernel.name], np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
    par = (float(kernel.gamma), float(kernel.coef0), float(kernel.degree))
    if A.shape[1] <= GRAM_FROM:
        _kernels.kernel_sums(kind, np.ascontiguousarray(A.T), sqa, B, sqb, w, *par, out)
        return out
    step = max(1, GRAM_BLOCK_ELEMS // B.shape[0])
    for lo in range(0, A.shape[0], step):
        _kernels.sums_from_gram(kind, A[lo : lo + step] @ B.T, sqa[lo : lo + step], sqb, w,
                                *par, out[lo : lo + step])
    return out


def q_matrix(qmat: QMatrix) -> np.ndarray:
    """Q in full, Q_si = y_s y_i k(x_s, x_i), for a kernel Q matrix, by the SMO cache's column
    loop (compiled; rows on all cores; about 5x faster than the numpy kernel).

    Parameters
    ----------
    qmat : QMatrix
        A kernel Q matrix (a precomputed one returns its Q).
    """
    spec = qmat.compiled_spec()
    if spec.kind == KIND_MATRIX:
        return spec.Q
    y = np.ascontiguousarray(qmat.y, dtype=float)  # type: ignore[attr-defined]
    return _kernels.q_matrix(spec.kind, spec.X, spec.sqnorm, spec.gamma, spec.coef0,
                             spec.degree, y)


__all__ = ["kernel_sums", "q_matrix"]
