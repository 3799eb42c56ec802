"""Is the kernel positive semidefinite? (issue 31: "Kernels are checked")

The SVM and KLR duals are concave, and their dual values lower bounds on the optimum, only when
the kernel matrix K of the training rows is positive semidefinite (PSD). An indefinite K makes
the dual nonconvex: SMO still stops (LIBSVM replaces a pair's curvature
``K_ii + K_jj - 2 K_ij <= 0`` by a tiny positive tau and carries on), at a stationary point
with a "gap" of 1e-8 that proves nothing. So where K can be indefinite the result must not be
a certified global optimum, and must say why.

Which kernels are checked (:func:`may_be_indefinite`): ``precomputed`` (a callable kernel of
the estimators reaches the problems as its matrix, ``precomputed``) and ``poly`` with a negative
``coef0``. ``linear``, ``rbf`` and ``poly`` with ``coef0 >= 0`` are PSD by construction (Gram
matrices, their Schur products and nonnegative combinations, Gaussians) and cost nothing.

How (:func:`psd_of_matrix`, :func:`psd_of_curvature`):

* n <= :data:`PSD_CHECK_MAX_ROWS` kept rows: a Cholesky factorisation of ``K + tol I`` (n^3 / 3
  flops, 0.2 s at n = 2000) accepts a PSD K; when it fails, ``scipy.linalg.eigvalsh(K,
  subset_by_index=[0, 0])`` gives the smallest eigenvalue (~4x the cost; paid only then), and
  K is indefinite when it lies below ``-tol``.
* above: the curvature the SMO/block loops met (``extra["min_curvature"]``, the most negative
  ``K_ii + K_jj - 2 K_ij`` over the pairs they scanned) and the diagonal: a pair with
  ``c = K_ii + K_jj - 2 K_ij < 0`` proves ``lambda_min <= c / 2`` (the Rayleigh quotient of
  ``e_i - e_j``), a diagonal entry ``K_ii < 0`` proves ``lambda_min <= K_ii``. Nothing found
  is no proof of PSD: ``kernel_psd`` is then None (not checked).

The tolerance (:func:`psd_tolerance`) is ``PSD_REL_TOL * n * max|K_ij|``. A PSD kernel computed
in float64 carries entry errors of about ``p u max|K_ij|`` (p products summed, u = 1.1e-16),
so its computed eigenvalues can lie down to ``-n p u max|K_ij|`` (the 2-norm of an n x n error
matrix is at most n times its largest entry), and eigvalsh adds a backward error of about
``n u ||K||_2 <= n^2 u max|K_ij|``. 1e-8 covers both for p up to ~10^7 features and n up to
2000 (n^2 u = 4.4e-10 there) while an indefinite kernel that matters (lambda_min of -11.4
against entries of ~10) lies 10^3-10^5 times below it. Being relative to ``max|K_ij|`` (which
is ``max K_ii`` for a PSD K), the check is invariant to rescaling K.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.linalg

from solvers.kernels import Kernel
from solvers.sparse import is_scipy_sparse

PSD_CHECK_MAX_ROWS = 2000
"""Up to this many kept rows the kernel matrix is checked directly (Cholesky, then eigvalsh);
above, only the curvature the SMO/block loops met and the diagonal."""

PSD_REL_TOL = 1e-8
"""The tolerance on the smallest eigenvalue, relative to ``n max|K_ij|`` (module docstring)."""


def may_be_indefinite(kernel: Kernel) -> bool:
    """True for the kernels whose matrix can be indefinite: ``precomputed`` (and so a callable
    kernel) and ``poly`` with ``coef0 < 0``; False for those PSD by construction."""
    return kernel.name == "precomputed" or (kernel.name == "poly" and kernel.coef0 < 0)


def psd_tolerance(n: int, scale: float) -> float:
    """``PSD_REL_TOL * n * scale`` (``scale`` = max|K_ij|, or max|K_ii| where only the diagonal
    is read); the module docstring justifies it."""
    return PSD_REL_TOL * max(n, 1) * float(scale)


@dataclasses.dataclass(frozen=True)
class KernelCheck:
    """What the check found.

    psd : True (checked: lambda_min >= -tol), False (proven indefinite), None (not checked:
        too many rows, and the loops met no negative curvature).
    min_eigenvalue : the smallest eigenvalue (method "eigvalsh"), an upper bound on it
        ("smo curvature": c / 2; "diagonal": min K_ii), or None (not computed).
    method : "cholesky", "eigvalsh", "smo curvature", "diagonal" or "none".
    tol : the tolerance applied.
    n : the kept rows.
    """

    psd: bool | None
    min_eigenvalue: float | None
    method: str
    tol: float
    n: int

    def record(self, extra: dict[str, Any]) -> None:
        """Set ``extra["kernel_psd"]``, ``["kernel_min_eigenvalue"]`` and ``["kernel_check"]``."""
        extra["kernel_psd"] = self.psd
        extra["kernel_min_eigenvalue"] = self.min_eigenvalue
        extra["kernel_check"] = self.method

    def cause(self) -> str:
        """The reason an indefinite kernel's result is not certified, for ``raw_status``."""
        lam = self.min_eigenvalue
        if self.method == "eigvalsh":
            found = (f"its smallest eigenvalue is {lam:.4g} (scipy eigvalsh on the {self.n} "
                     f"kept rows; tolerance {-self.tol:.1e})")
        elif self.method == "smo curvature":
            found = (f"the solver met a pair with K_ii + K_jj - 2 K_ij = {2 * lam:.4g} < 0, so "
                     f"its smallest eigenvalue is at most {lam:.4g}")
        else:
            found = (f"a diagonal entry K_ii = {lam:.4g} < 0, so its smallest eigenvalue is at "
                     f"most that")
        return (f" (not a certified global optimum: the kernel matrix is not positive "
                f"semidefinite: {found}; the dual is then not concave and its value no bound, "
                f"so this is a stationary point at best. Use a positive semidefinite kernel, "
                f"e.g. with the negative eigenvalues clipped)")


def psd_of_matrix(K: Any) -> KernelCheck:
    """The direct check of a (kept rows') kernel matrix: Cholesky of ``K + tol I`` accepts,
    otherwise eigvalsh's smallest eigenvalue decides. Only the symmetric part enters the duals'
    quadratic forms, so that is what is checked."""
    K = K.toarray() if is_scipy_sparse(K) else np.asarray(K, dtype=float)
    n = K.shape[0]
    scale = float(np.max(np.abs(K), initial=0.0))
    tol = psd_tolerance(n, scale)
    if scale == 0.0:
        return KernelCheck(True, 0.0, "eigvalsh", 0.0, n)
    S = 0.5 * (K + K.T)
    S[np.diag_indices(n)] += tol
    _, info = scipy.linalg.lapack.dpotrf(S, lower=1, clean=0, overwrite_a=1)
    if info == 0:
        return KernelCheck(True, None, "cholesky", tol, n)
    lam = float(scipy.linalg.eigvalsh(0.5 * (K + K.T), subset_by_index=[0, 0],
                                      check_finite=False)[0])
    return KernelCheck(lam >= -tol, lam, "eigvalsh", tol, n)


def psd_of_curvature(diag: np.ndarray, min_curvature: float | None) -> KernelCheck:
    """The check above :data:`PSD_CHECK_MAX_ROWS` rows, from the diagonal of K and the most
    negative pair curvature a solver met (None: the strategy reports none)."""
    diag = np.asarray(diag, dtype=float)
    n = diag.size
    tol = psd_tolerance(n, float(np.max(np.abs(diag), initial=0.0)))
    d_min = float(np.min(diag, initial=np.inf))
    c_half = np.inf if min_curvature is None else 0.5 * float(min_curvature)
    if d_min < -tol and d_min <= c_half:
        return KernelCheck(False, d_min, "diagonal", tol, n)
    if c_half < -tol:
        return KernelCheck(False, c_half, "smo curvature", tol, n)
    return KernelCheck(None, None, "none", tol, n)


def kernel_check(kernel: Kernel, X: Any, rows: np.ndarray, cols: np.ndarray | None = None,
                 min_curvature: float | None = None) -> KernelCheck | None:
    """The check of ``kernel`` on the kept rows, or None where it is PSD by construction.

    ``rows``: the kept rows of ``X``. For ``precomputed``, ``X`` is the kernel matrix and
    ``cols`` (default ``rows``) the columns of the same rows (KLR keeps only the kept rows of
    X, all its columns). ``min_curvature``: the solver's, for more rows than
    :data:`PSD_CHECK_MAX_ROWS`."""
    if not may_be_indefinite(kernel):
        return None
    rows = np.asarray(rows)
    n = rows.size
    if kernel.name == "precomputed":
        cols = rows if cols is None else np.asarray(cols)
        if n > PSD_CHECK_MAX_ROWS:  # the diagonal K_{r_k, c_k} only
            return psd_of_curvature(np.asarray(X[rows, cols], dtype=float).ravel(),
                                   min_curvature)
        whole = X.shape == (n, n) and np.array_equal(rows, cols) \
            and np.array_equal(rows, np.arange(n))
        K = X if whole else (X[rows][:, cols] if is_scipy_sparse(X) else X[np.ix_(rows, cols)])
        return psd_of_matrix(K)
    Xk = X[rows]
    if n <= PSD_CHECK_MAX_ROWS:
        return psd_of_matrix(kernel(Xk, Xk))
    return psd_of_curvature(kernel.diag(Xk), min_curvature)


__all__ = ["PSD_CHECK_MAX_ROWS", "PSD_REL_TOL", "KernelCheck", "psd_of_curvature", "psd_of_matrix",
           "kernel_check", "may_be_indefinite", "psd_tolerance"]
