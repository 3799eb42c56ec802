"""Run scikit-learn's own test modules against our estimators (imported at run time from the
installed scikit-learn, never copied; the test bodies run unchanged).

The rule: in each module, the peer class (SVC, Ridge, QuantileRegressor) is replaced by an
adapter (tests/sklearn_suite/adapters.py) with the peer's constructor that fits our estimator
with one strategy, per test parametrised over the module's strategies. The replacement is made
where the tests read the class: the module's global (``svm`` gets a copy of sklearn.svm whose
``SVC`` is the adapter; ``Ridge`` / ``QuantileRegressor`` directly) and the test's parameters
(the class, or an instance rebuilt with its parameters: conftest's pytest_pyfunc_call). Every
other class (NuSVC, SVR, LinearSVC, RidgeCV, ...) stays scikit-learn's own. A test is collected
when its source (decorators included) names the peer; a collected case that builds no adapter
(e.g. the NuSVC case of a test parametrised over (SVC, NuSVC)) tested scikit-learn only and is
reported skipped. Expected failures: tests/sklearn_suite/expected.py. The default run (22 s
measured; 3 minutes with -m slow) leaves out the strategies given as slow and
conftest.SLOW_CASES."""

from __future__ import annotations

import importlib
import inspect
import re
import types
from typing import Any

import pytest

from sklearn_suite import adapters

SUITES = {
    # our module -> (scikit-learn's test module, peer, where the tests read it, adapter base)
    "svm": ("sklearn.svm.tests.test_svm", "SVC", ("svm", "sklearn.svm"), adapters.SVCAdapter),
    "sparse": ("sklearn.svm.tests.test_sparse", "SVC", ("svm", "sklearn.svm"),
               adapters.SVCAdapter),
    "ridge": ("sklearn.linear_model.tests.test_ridge", "Ridge", ("Ridge", None),
              adapters.RidgeAdapter),
    "quantile": ("sklearn.linear_model.tests.test_quantile", "QuantileRegressor",
                 ("QuantileRegressor", None), adapters.QuantileAdapter),
}


def expose(namespace: dict[str, Any], suite: str, strategies: tuple, slow: tuple = ()) -> None:
    """Put the selected test functions and the fixtures of the suite's scikit-learn module into
    ``namespace`` (a test module's globals), with an autouse fixture that parametrises them
    over ``strategies`` (those in ``slow`` marked slow) and swaps in the adapter."""
    module_name, peer, (attr, package), base = SUITES[suite]
    module = importlib.import_module(module_name)
    peer_cls = getattr(importlib.import_module(package), peer) if package else getattr(
        module, attr)
    token = re.compile(rf"(?<![\w.]){peer}\b|\bsvm\.{peer}\b" if package else rf"\b{peer}\b")
    for name, obj in vars(module).items():
        if _is_fixture(obj):
            namespace[name] = obj
        elif name.startswith("test_") and inspect.isfunction(obj) and token.search(
                inspect.getsource(obj)):
            namespace[name] = obj

    params = [pytest.param(s, marks=pytest.mark.slow) if s in slow else s for s in strategies]

    @pytest.fixture(params=params, autouse=True)
    def suite_strategy(request: Any, monkeypatch: Any) -> Any:
        cls = adapters.adapter(base, peer, request.param)
        if package:
            proxy = types.ModuleType(package)
            proxy.__dict__.update(vars(importlib.import_module(package)))
            proxy.SVC = cls
            monkeypatch.setattr(module, attr, proxy)
        else:
            monkeypatch.setattr(module, attr, cls)
        request.node.suite_swap = (peer_cls, cls)
        adapters.BUILT.clear()
        return request.param

    namespace["suite_strategy"] = suite_strategy


def _is_fixture(obj: Any) -> bool:
    return type(obj).__name__ == "FixtureFunctionDefinition" or hasattr(
        obj, "_pytestfixturefunction")
