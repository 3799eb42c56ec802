"""What every estimator shares: hyperparameter and strategy-option validation through the
problems' own tables, the data checks of scikit-learn, and statuses that reach the user.

Hyperparameters are checked in ``fit`` (never in ``__init__``, as scikit-learn requires) by
:func:`optmodels.validation.validate_params` against the problem's ``PARAMS`` entries, so a
message names the parameter exactly as a problem's would; strategy options are checked by the
strategy's table in :mod:`solvers.options` through
:func:`optmodels.strategies.check_strategy_options`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from optmodels.problem import Problem
from optmodels.strategies import (
    AUTO_STRATEGY,
    check_strategy_options,
    options_for,
    strategies_for,
)
from optmodels.validation import Param, validate_params
from solvers.errors import DataError
from solvers.result import SolveResult, TerminationCondition
from solvers.rows import any_dask, is_dask
from solvers.validation import check_sample_weight

USABLE_LIMITS = (
    TerminationCondition.CONVERGED,
    TerminationCondition.ESTIMATE,
    TerminationCondition.GAP_LIMIT,
    TerminationCondition.ITERATION_LIMIT,
    TerminationCondition.TIME_LIMIT,
    TerminationCondition.INTERRUPTED,
)
"""Non-optimal terminations that still return a usable model: ``fit`` warns with
:class:`sklearn.exceptions.ConvergenceWarning`. Every other non-optimal termination raises the
matching :class:`solvers.errors.SolveError` (``result.require_optimal()``)."""

ACCEPT_SPARSE = ("csr", "csc")
"""Sparse formats accepted; kept sparse where the estimator's problem keeps them
(:meth:`OptEstimator._keeps_sparse`), densified otherwise."""


class OptEstimator(BaseEstimator):
    """Base of the estimators: ``_PROBLEM`` is the problem class, ``_HYPER`` the table of the
    hyperparameters (entries taken from the problem's ``PARAMS`` where the problem has them)."""

    _PROBLEM: ClassVar[type[Problem]]
    _HYPER: ClassVar[dict[str, Param]] = {}
    _ACCEPTS_DASK: ClassVar[bool] = False
    """True when ``fit`` passes a Dask X / y / sample_weight to the problem as is (checked
    chunk by chunk there, never loaded); scikit-learn's validate_data would load it."""

    # ---- validation ----------------------------------------------------------------------
    def _hyperparameters(self) -> dict[str, Any]:
        """The hyperparameters of ``_HYPER`` and ``strategy`` checked (DataError naming the
        parameter, its accepted values and the value given)."""
        table = {**self._HYPER, "strategy": self._strategy_param()}
        given = {name: getattr(self, name) for name in table}
        why = self._REFUSED_STRATEGIES.get(given["strategy"])
        if why is not None:
            raise DataError(f"The 'strategy' parameter of {type(self).__name__} cannot be "
                            f"{given['strategy']!r}: {why}")
        return validate_params(type(self).__name__, table, given)

    _REFUSED_STRATEGIES: ClassVar[dict[str, str]] = {}
    """Strategies of the problem that this estimator cannot run, with the reason and the fix
    (left out of the accepted choices)."""

    def _strategy_param(self) -> Param:
        names = tuple(s for s in strategies_for(self._PROBLEM.NAME)
                      if s not in self._REFUSED_STRATEGIES)
        if not self.AUTO_STRATEGIES:
            return Param("choice", "full", "solution strategy", choices=names)
        return Param("choice", AUTO_STRATEGY, "solution strategy", choices=(AUTO_STRATEGY, *names))

    # ---- strategy='auto' -----------------------------------------------------------------
    AUTO_STRATEGIES: ClassVar[tuple[str, ...]] = ()
    """For estimators whose default is strategy='auto': ``(fast, safe)``. 'auto' runs ``fast``
    where :meth:`_auto_prefers_fast` says so (else ``safe``), and ``safe`` again for a solve
    that ``fast`` does not certify; on Dask data it runs the problem's Dask strategy."""

    def _resolve_strategy(self, hyper: dict[str, Any], X: Any) -> str:
        """The strategy this fit runs: ``strategy``, or the choice of 'auto'."""
        if hyper["strategy"] != AUTO_STRATEGY:
            return hyper["strategy"]
        if is_dask(X):
            return self._PROBLEM.DASK_STRATEGIES[0]
        fast, safe = self.AUTO_STRATEGIES
        return fast if self._auto_prefers_fast(hyper, X) else safe

    def _auto_prefers_fast(self, hyper: dict[str, Any], X: Any) -> bool:
        return True

    def _strategy_options(self, strategy: str) -> dict[str, Any]:
        """``strategy_options`` validated by the strategy's option table."""
        given = self.strategy_options
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise ValueError(
                f"The 'strategy_options' parameter of {type(self).__name__} must be None or a "
                f"dict of options of strategy {strategy!r}; got {given!r}."
            )
        return check_strategy_options(self._PROBLEM.NAME, strategy, dict(given))

    def _keeps_sparse(self) -> bool:
        """True when the problem keeps a sparse X sparse (then fit and predict pass it on)."""
        return False

    def _validate_fit(self, X: Any, y: Any, sample_weight: Any, **kw: Any) -> tuple:
        """(X float64: dense, or CSR/CSC when :meth:`_keeps_sparse`, y, sample weights) with
        n_features_in_ / feature_names_in_ set.
        Dask input (estimators with ``_ACCEPTS_DASK``) is returned as is, for the problem to
        check chunk by chunk; only n_features_in_ is set."""
        if self._ACCEPTS_DASK and any_dask(X, y, sample_weight):
            if getattr(X, "ndim", 0) == 2:
                self.n_features_in_ = int(X.shape[1])
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return X, y, sample_weight
        X, y = validate_data(self, X, y, accept_sparse=ACCEPT_SPARSE, dtype=np.float64, **kw)
        sw = check_sample_weight(sample_weight, X.shape[0])
        return self._dense_unless_kept(X), y, sw

    def _validate_predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        if self._ACCEPTS_DASK and is_dask(X):
            return self._dask_predict_input(X)
        X = validate_data(self, X, accept_sparse=ACCEPT_SPARSE, dtype=np.float64, reset=False)
        return self._dense_unless_kept(X)

    def _dense_unless_kept(self, X: Any) -> Any:
        """A sparse X as is when :meth:`_keeps_sparse`, else X as a C-contiguous array."""
        if hasattr(X, "toarray"):
            if self._keeps_sparse():
                return X
            X = X.toarray()
        return np.ascontiguousarray(X)

    def _dask_predict_input(self, X: Any) -> Any:
        """A Dask X of n_features_in_ columns as float64 (lazy; NaN is not checked here)."""
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has shape {X.shape}, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input; pass a 2-D Dask array of "
                f"{self.n_features_in_} columns.")
        return X.astype(np.float64)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ---- solving -------------------------------------------------------------------------
    def _solve(self, problem: Problem, strategy: str, options: dict[str, Any]) -> SolveResult:
        """``problem.solve(strategy, **options)`` with its status passed on (see
        :data:`USABLE_LIMITS`). With strategy='auto', an in-memory solve that the fast
        strategy does not certify (a numerical error, an iteration limit) is run again by the
        safe one, with the options it accepts (``result_.strategy`` says which ran)."""
        auto = self.strategy == AUTO_STRATEGY and self.AUTO_STRATEGIES
        if auto and strategy == self.AUTO_STRATEGIES[0] and not problem.lazy:
            res = problem.solve(strategy, **options)
            if res.is_optimal:
                return res
            if res.termination is TerminationCondition.INTERRUPTED:  # the user stopped it
                return check_status(res, type(self).__name__)
            strategy = self.AUTO_STRATEGIES[1]
            allowed = options_for(self._PROBLEM.NAME, strategy)
            options = {k: v for k, v in options.items() if k in allowed}
        return check_status(problem.solve(strategy, **options), type(self).__name__)


def check_status(result: SolveResult, owner: str) -> SolveResult:
    """Return an optimal result; warn (ConvergenceWarning) for a usable non-optimal one; raise
    the matching SolveError otherwise."""
    if result.is_optimal:
        return result
    if result.x is None or result.termination not in USABLE_LIMITS:
        result.require_optimal()
    gap = "unknown" if result.gap is None else f"{result.gap:.2e}"
    if result.extra.get("kernel_psd") is False:  # no bound exists: no 'fix' by iterating
        lam = result.extra.get("kernel_min_eigenvalue")
        how = "its smallest eigenvalue is" if result.extra.get("kernel_check") == "eigvalsh" \
            else "its smallest eigenvalue is at most"
        warnings.warn(
            f"{owner} (strategy {result.strategy!r}) stopped with termination="
            f"{result.termination.value}: the kernel matrix is not positive semidefinite ({how} "
            f"{lam:.4g}), so the dual is not concave and has no bound; the model is usable but "
            f"not a certified global optimum (a stationary point at best). Pass a positive "
            f"semidefinite kernel (e.g. the matrix with its negative eigenvalues clipped).",
            ConvergenceWarning,
            stacklevel=3,
        )
        return result
    if result.termination is TerminationCondition.INTERRUPTED:
        why = f", stopped by Ctrl-C at its best point so far (relative gap {gap})"
        fix = "Fit again and let it finish"
    elif result.gap is not None and 0.0 <= result.gap <= result.certificate_tol:
        # the gap is small but the strategy's own rule (often stricter) was not met
        why = (f": its relative gap {gap} is within the certificate tolerance "
               f"{result.certificate_tol:.0e}, but the strategy's own stopping rule was not met "
               f"({result.raw_status}), so it is not reported optimal")
        fix = "Raise 'max_iter' or loosen 'tol'"
    else:
        why = (f" but not certified optimal (relative gap {gap}, certificate tolerance "
               f"{result.certificate_tol:.0e})")
        fix = "Tighten 'tol' or raise 'max_iter'"
    warnings.warn(
        f"{owner} (strategy {result.strategy!r}) stopped with termination="
        f"{result.termination.value} after {result.iterations} iterations: the model is usable"
        f"{why}. {fix} in strategy_options, or use strategy='full'.",
        ConvergenceWarning,
        stacklevel=3,
    )
    return result
