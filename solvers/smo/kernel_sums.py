r"""Kernel sums ``f_s = sum_t w_t k(a_s, b_t)`` without forming the kernel matrix, compiled.

Two callers need the whole product ``K(A, B) w`` for m x n_b pairs at once:

* SMO's start ``Q alpha0`` (:func:`solvers.smo.core.q_times`): KLR starts with every alpha
  strictly inside the box, so this is the full n x n product (2.5*10^9 kernel values at
  n = 5*10^4);
* prediction and the independent re-evaluation, ``f(x) = sum_i alpha_i y_i k(x_i, x) + b``
  (:func:`solvers.smo.prediction.kernel_expansion`).

numpy builds each block of K in five passes over memory (the product X Z', the two norms, the
maximum, the exp) and its exp runs on one core: about 21 ns per kernel value for RBF at p = 10
on this machine. Here the rows of A are cut into blocks of ``FILL_BLOCK`` (one task each, on
all of numba's threads); in a block the values k(a_s, b_t), s in the block, are computed for one
b_t at a time by the SMO core's own column loop (:func:`solvers.smo.core._fill_contiguous`: dot
products along the contiguous rows of A', the vectorized exp of ``_exp_parts``, <= 2 ulp) and
added with weight w_t into the block's sums while they are in cache.

With many features the p multiply-adds per value dominate, and BLAS does them faster: above
``GRAM_FROM`` features the dot products of a block of rows come from one BLAS product A_blk B'
and only the kernel map and the weighted sum are compiled (measured at 2*10^4 x 2*10^4, RBF:
p = 10: 2.9 ns per value by columns, p = 100: 12.2 ns by columns; numpy 20-27 ns either way).
Linear kernels need neither: ``K(A, B) w = A (B' w)`` is two BLAS products.
"""

from __future__ import annotations

import numba
import numpy as np

from solvers.kernels import Kernel
from solvers.numba_cache import njit_cached
from solvers.smo.core import FASTMATH, FILL_BLOCK, _exp_parts, _fill_contiguous
from solvers.smo.qmatrix import KIND_POLY, KIND_RBF

_KINDS = {"rbf": KIND_RBF, "poly": KIND_POLY}
GRAM_FROM = 32
"""Features from which the dot products come from BLAS (:func:`_sums_from_gram`)."""
GRAM_BLOCK_ELEMS = 2**22
"""Entries of one block A_blk B' of dot products (32 MB)."""


@njit_cached(fastmath=FASTMATH, parallel=True)
def _kernel_sums(kind, AT, sqa, B, sqb, w, gamma, coef0, degree, out):
    """out[s] += sum_t w[t] k(a_s, b_t); AT is A transposed (p x m, C order), B is n_b x p."""
    m = AT.shape[1]
    ones = np.ones(m)
    nb = (m + FILL_BLOCK - 1) // FILL_BLOCK
    for blk in numba.prange(nb):
        lo = blk * FILL_BLOCK
        hi = min(m, lo + FILL_BLOCK)
        col = np.empty(hi - lo)
        buf = np.empty(hi - lo)
        acc = np.zeros(hi - lo)
        for t in range(B.shape[0]):
            _fill_contiguous(kind, AT, lo, hi, sqa[lo:hi], gamma, coef0, degree, ones[lo:hi],
                             1.0, B[t], sqb[t], col, buf)
            wt = w[t]
            for k in range(hi - lo):
                acc[k] += wt * col[k]
        for k in range(hi - lo):
            out[lo + k] += acc[k]


@njit_cached(fastmath=True, inline="always")
def _sum(v):
    """sum(v), vectorized (reassociated: the order of a BLAS sum, not left to right)."""
    acc = 0.0
    for t in range(v.shape[0]):
        acc += v[t]
    return acc


@njit_cached(fastmath=FASTMATH, parallel=True)
def _sums_from_gram(kind, G, sqa, sqb, w, gamma, coef0, degree, out):
    """out[s] += sum_t w[t] k(a_s, b_t) from the dot products G[s, t] = a_s'b_t."""
    nt = G.shape[1]
    nb = (G.shape[0] + 63) // 64
    for blk in numba.prange(nb):
        val = np.empty(nt)
        bits = np.empty(nt, np.int64)
        two_e = bits.view(np.float64)
        for s in range(blk * 64, min(G.shape[0], (blk + 1) * 64)):
            g = G[s]
            if kind == 1:
                for t in range(nt):
                    q, e = _exp_parts(-gamma * max(sqa[s] + sqb[t] - 2.0 * g[t], 0.0))
                    val[t] = w[t] * q
                    bits[t] = e
                for t in range(nt):
                    val[t] *= two_e[t]
            else:
                for t in range(nt):
                    val[t] = w[t] * (gamma * g[t] + coef0) ** degree
            out[s] += _sum(val)


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
    out = np.zeros(A.shape[0])
    if B.shape[0] == 0 or A.shape[0] == 0:
        return out
    kind, sqa, sqb = _KINDS[kernel.name], np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
    par = (float(kernel.gamma), float(kernel.coef0), float(kernel.degree))
    if A.shape[1] <= GRAM_FROM:
        _kernel_sums(kind, np.ascontiguousarray(A.T), sqa, B, sqb, w, *par, out)
        return out
    step = max(1, GRAM_BLOCK_ELEMS // B.shape[0])
    for lo in range(0, A.shape[0], step):
        _sums_from_gram(kind, A[lo : lo + step] @ B.T, sqa[lo : lo + step], sqb, w, *par,
                        out[lo : lo + step])
    return out


__all__ = ["kernel_sums"]
