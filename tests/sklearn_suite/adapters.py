"""Stand-ins with the constructor of scikit-learn's SVC, Ridge and QuantileRegressor that fit
our estimators with one fixed strategy (:func:`adapter`), for running scikit-learn's own test
modules against them (tests/sklearn_suite/conftest.py)."""

from __future__ import annotations

from typing import Any, ClassVar

from optmodels.estimators import LADRegressor, RidgeRegressor, SVMClassifier

BUILT: list[str] = []
"""Names of the adapters constructed during the running test (conftest skips a test that built
none: it tested scikit-learn's own classes only)."""


class _Adapter:
    """Maps the peer's parameters onto ours: ``strategy`` is the class's STRATEGY, and
    ``strategy_options`` comes from :meth:`_options` (the peer's tol / max_iter where the
    strategy has them). Parameters we have no counterpart for raise NotImplementedError in fit,
    naming them, so that the failure says why."""

    STRATEGY: ClassVar[str] = "auto"
    constraints = None  # the peers' constructors have no constraints= / bounds=
    bounds = None

    @property
    def strategy(self) -> str:
        return self.STRATEGY

    @property
    def strategy_options(self) -> dict | None:
        return self._options()

    def _options(self) -> dict | None:
        return None

    def _unsupported(self) -> dict[str, Any]:
        """{parameter: value} of the peer's parameters set to what we cannot do."""
        return {}

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        bad = self._unsupported()
        if bad:
            raise NotImplementedError(f"{type(self).__name__} adapter: no counterpart for {bad}")
        return super().fit(X, y, sample_weight)


class SVCAdapter(_Adapter, SVMClassifier):
    """sklearn.svm.SVC's signature over SVMClassifier (shrinking, cache_size, verbose and
    random_state have no effect on the model and are ignored)."""

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability="deprecated", tol=1e-3, cache_size=200,
                 class_weight=None,
                 verbose=False, max_iter=-1, decision_function_shape="ovr", break_ties=False,
                 random_state=None):
        BUILT.append("SVC")
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state

    warm_start = False

    def _options(self) -> dict | None:
        """SMO's tol and max_iter where the test sets them (SVC's defaults, tol 1e-3 and
        max_iter -1, leave ours: SVMClassifier's SMO_TOL)."""
        if self.STRATEGY != "smo":
            return None
        out = {} if self.tol == 1e-3 else {"tol": self.tol}
        if self.max_iter != -1:
            out["max_iter"] = self.max_iter
        return out or None

    @property
    def probability(self) -> Any:
        """False for scikit-learn 1.9's "deprecated" default."""
        return False if isinstance(self._probability, str) else self._probability

    @probability.setter
    def probability(self, value: Any) -> None:
        self._probability = value


class RidgeAdapter(_Adapter, RidgeRegressor):
    """sklearn.linear_model.Ridge's signature over RidgeRegressor (solver, tol, max_iter,
    copy_X and random_state choose how scikit-learn solves; ours is the strategy)."""

    def __init__(self, alpha=1.0, *, fit_intercept=True, copy_X=True, max_iter=None, tol=1e-4,
                 solver="auto", positive=False, random_state=None):
        BUILT.append("Ridge")
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.positive = positive
        self.random_state = random_state

    def _unsupported(self) -> dict[str, Any]:
        return {"positive": True} if self.positive else {}


class QuantileAdapter(_Adapter, LADRegressor):
    """sklearn.linear_model.QuantileRegressor's signature over LADRegressor; its L1 penalty
    ``alpha`` has no counterpart (LADRegressor is unpenalised): alpha = 0 only."""

    def __init__(self, *, quantile=0.5, alpha=1.0, fit_intercept=True, solver="highs",
                 solver_options=None):
        BUILT.append("QuantileRegressor")
        self.quantile = quantile
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.solver_options = solver_options

    def _unsupported(self) -> dict[str, Any]:
        return {"alpha": self.alpha} if self.alpha != 0 else {}


def adapter(base: type, peer_name: str, strategy: str) -> type:
    """A subclass of ``base`` named like the peer (messages then name 'SVC', as the tests
    expect) that fits with ``strategy``."""
    return type(peer_name, (base,), {"STRATEGY": strategy, "__module__": __name__})
