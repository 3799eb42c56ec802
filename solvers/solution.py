"""The solution a result predicts with, typed by its form (issue 31): the one prediction path.

A primal model predicts with its coefficients, a dual model with its dual coefficients on the
support; both carry their intercept under one name:

    LinearSolution:  f(x) = x'coef + intercept
    KernelSolution:  f(x) = sum_s dual_coef_s k(sv_s, x) + intercept,
                     dual_coef_s = alpha_s y_s over the support s (training rows with alpha > 0)

``SolveResult.solution`` holds one of them (set by the problem layer for every strategy), and
the estimators build the same objects from their learned attributes, so a fitted estimator, a
problem's ``decision_function`` and a result all predict through
:meth:`LinearSolution.decision_function` / :meth:`KernelSolution.decision_function`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from solvers.kernels import Kernel
from solvers.smo.prediction import kernel_expansion
from solvers.sparse import is_scipy_sparse


@dataclasses.dataclass(frozen=True)
class LinearSolution:
    """``f(x) = x'coef + intercept`` (LAD / quantile beta, ridge x, a primal SVM's w)."""

    coef: np.ndarray
    intercept: float

    def decision_function(self, X: Any) -> np.ndarray:
        """f over the rows of X (dense or scipy sparse), O(p) per row."""
        return np.asarray(X @ self.coef, dtype=float).ravel() + self.intercept


@dataclasses.dataclass(frozen=True)
class KernelSolution:
    """``f(x) = sum_s dual_coef_s k(sv_s, x) + intercept`` (an SVM or KLR dual).

    ``rows``: the rows the support indexes into, held by reference (the training rows of a
    result, an estimator's ``support_vectors_``; None for a precomputed kernel, whose new rows
    are given as kernel values against those rows, of which the columns ``support`` are read);
    ``support``: the support's positions among them; ``dual_coef``: alpha_s y_s."""

    dual_coef: np.ndarray
    support: np.ndarray
    rows: Any
    kernel: Kernel
    intercept: float

    @classmethod
    def from_dual(cls, X_train: Any, alpha: np.ndarray, y: np.ndarray, intercept: float,
                  kernel: Kernel) -> KernelSolution:
        """The solution of a dual alpha over the training rows X_train with labels y (+-1): the
        support is where alpha_i y_i != 0 (X_train is referenced, not copied)."""
        coef = np.asarray(alpha, dtype=float) * np.asarray(y, dtype=float)
        support = np.flatnonzero(coef)
        rows = None if kernel.name == "precomputed" else X_train
        return cls(coef[support], support, rows, kernel, float(intercept))

    @property
    def support_vectors(self) -> Any:
        """The support's rows (a copy; None for a precomputed kernel)."""
        return None if self.rows is None else self.rows[self.support]

    def decision_function(self, X: Any) -> np.ndarray:
        """f over the rows of X, in blocks of bounded memory
        (:func:`solvers.smo.prediction.kernel_expansion`, which reads the support's rows
        itself); a linear kernel as x'w."""
        if self.rows is None:
            Kn = X[:, self.support] if is_scipy_sparse(X) else np.asarray(X, float)[:, self.support]
            return np.asarray(Kn @ self.dual_coef, dtype=float).ravel() + self.intercept
        coef = np.zeros(self.rows.shape[0])
        coef[self.support] = self.dual_coef
        return kernel_expansion(self.rows, coef, self.intercept, self.kernel, X)

    def linear(self) -> LinearSolution:
        """The linear kernel's primal: w = sum_s dual_coef_s sv_s."""
        if self.kernel.name != "linear":
            raise ValueError(f"a {self.kernel.name} kernel's solution has no finite "
                             "coefficient vector; use decision_function.")
        w = np.asarray(self.support_vectors.T @ self.dual_coef, dtype=float).ravel()
        return LinearSolution(w, self.intercept)


Solution = LinearSolution | KernelSolution
"""Either form."""
