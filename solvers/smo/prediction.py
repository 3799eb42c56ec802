"""Decision values of a kernel expansion f(x) = sum_i alpha_i y_i k(x_i, x) + b.

The one prediction path of the kernel models (SVM dual, KLR): the problems, the estimators and
the certificates call :func:`kernel_expansion`. Its memory is bounded whatever the number of
rows: a linear kernel folds the expansion into w = sum_i coef_i x_i first (O(p) per row), a
precomputed kernel reads the given block, and rbf / poly evaluate k on blocks of at most
``block_elems`` kernel values (numpy) or through the compiled kernel sums, which hold one block
of rows at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.kernels import Kernel
from solvers.sparse import is_scipy_sparse

COMPILED_FROM = 10**6
"""Kernel values (rows x support vectors) from which the compiled kernel sums
(solvers._core._kernels) are used; the C++ path is faster from about 10^5 values, and the
threshold is kept at 10^6 so that small predictions stay numpy's, as before."""
BLOCK_ELEMS = 2**22
"""Kernel values of one numpy block (32 MB of float64)."""


def kernel_expansion(
    X_train: Any,
    coef: np.ndarray,
    b: float,
    kernel: Kernel,
    X_new: Any,
    block_elems: int = BLOCK_ELEMS,
) -> np.ndarray:
    """f(x) = sum_i coef_i k(x_i, x) + b over the rows with coef_i != 0.

    Parameters
    ----------
    X_train : (n, p) array or scipy sparse matrix
        Training rows (for ``precomputed``: unused; X_new is the m x n kernel block).
    coef : (n,) array
        alpha_i y_i (zero entries are skipped).
    b : float
        Intercept.
    kernel : Kernel
        k.
    X_new : (m, p) array or scipy sparse matrix
        Rows to evaluate.
    block_elems : int
        Kernel values formed at once by the numpy path (memory: 8 bytes each, plus the rows'
        dot products of the same size).
    """
    coef = np.asarray(coef, dtype=float)
    nz = np.flatnonzero(coef)
    if kernel.name == "precomputed":
        Kn = X_new[:, nz] if is_scipy_sparse(X_new) else np.asarray(X_new, dtype=float)[:, nz]
        return np.asarray(Kn @ coef[nz], dtype=float).ravel() + b
    m = X_new.shape[0]
    out = np.full(m, float(b))
    if nz.size == 0:
        return out
    Xs, cs = X_train[nz], coef[nz]
    if kernel.name == "linear":  # sum_i c_i x_i'x = x'w: one pass over the rows, O(p) each
        w = np.asarray(Xs.T @ cs, dtype=float).ravel()
        return out + np.asarray(X_new @ w, dtype=float).ravel()
    dense = not (is_scipy_sparse(Xs) or is_scipy_sparse(X_new))
    if dense and m * nz.size >= COMPILED_FROM:
        from solvers.smo.kernel_sums import kernel_sums

        return out + kernel_sums(kernel, np.asarray(X_new, float), np.asarray(Xs, float), cs)
    step = max(1, block_elems // nz.size)
    for start in range(0, m, step):
        out[start : start + step] += kernel(X_new[start : start + step], Xs) @ cs
    return out
