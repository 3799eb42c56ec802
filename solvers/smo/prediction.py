"""Decision values of a kernel expansion f(x) = sum_i alpha_i y_i k(x_i, x) + b."""

from __future__ import annotations

import numpy as np

from solvers.kernels import Kernel

COMPILED_FROM = 10**6
"""Kernel values (rows x support vectors) from which the compiled kernel sums are used. The
threshold was set when the compiled path was numba (below it, numpy's blocks cost less than
importing numba and loading its cache); the C++ module (solvers._core._kernels) imports in about
1 ms and is faster from 10^5 values on, but the threshold is kept so that the results of small
predictions stay numpy's."""


def kernel_expansion(
    X_train: np.ndarray,
    coef: np.ndarray,
    b: float,
    kernel: Kernel,
    X_new: np.ndarray,
    block_elems: int = 2**24,
) -> np.ndarray:
    """f(x) = sum_i coef_i k(x_i, x) + b over the rows with coef_i != 0.

    Large products use :func:`solvers.smo.kernel_sums.kernel_sums` (compiled, on all cores,
    about 8x faster than numpy's blocks for RBF); small ones and linear kernels use numpy, in
    blocks of at most ``block_elems`` kernel values.

    Parameters
    ----------
    X_train : (n, p) array
        Training rows (for ``precomputed``: unused; X_new is the m x n kernel block).
    coef : (n,) array
        alpha_i y_i (zero entries are skipped).
    b : float
        Intercept.
    kernel : Kernel
        k.
    X_new : (m, p) array
        Rows to evaluate.
    """
    nz = np.flatnonzero(coef)
    if kernel.name == "precomputed":
        return np.asarray(X_new, dtype=float)[:, nz] @ coef[nz] + b
    m = X_new.shape[0]
    out = np.full(m, float(b))
    if nz.size == 0:
        return out
    Xs = X_train[nz]
    cs = coef[nz]
    if kernel.name != "linear" and m * nz.size >= COMPILED_FROM:
        from solvers.smo.kernel_sums import kernel_sums

        return out + kernel_sums(kernel, X_new, Xs, cs)
    step = max(1, block_elems // max(nz.size, 1))
    for start in range(0, m, step):
        out[start : start + step] += kernel(X_new[start : start + step], Xs) @ cs
    return out
