"""Fixtures and hooks for running scikit-learn's test modules against our estimators
(tests/sklearn_suite/suite.py says how): scikit-learn's own conftest fixtures that the tests
use, the swap of the peer class in a test's parameters, and EXPECTED_FAILURES as strict xfail."""

from __future__ import annotations

import fnmatch
import os
from typing import Any

import numpy as np
import pytest

from sklearn_suite import adapters
from sklearn_suite.expected import EXPECTED_FAILURES

SLOW_CASES = ("sparse::test_svc[*-X_train2-y_train2-X_test2]",)
"""Cases marked slow besides the slow strategies (test_sk_*.py): test_svc on 10-class blobs
(45 pairs with Platt scaling, 3-7 s each); the default run stays under ~2 minutes."""


@pytest.fixture
def global_random_seed() -> int:
    """scikit-learn's default seed (its conftest's, without the environment variable)."""
    return 42


@pytest.fixture
def global_dtype() -> Any:
    return np.float64


def pytest_configure(config: Any) -> None:
    for mark in ("thread_unsafe", "network", "array_api"):
        config.addinivalue_line("markers", f"{mark}: a scikit-learn test mark")


def _swap(value: Any, peer: type, ours: type) -> Any:
    if value is peer:
        return ours
    if type(value) is peer:  # an instance made at import: the same parameters, ours
        return ours(**value.get_params())
    if isinstance(value, tuple):
        return tuple(_swap(v, peer, ours) for v in value)
    if isinstance(value, list):
        return [_swap(v, peer, ours) for v in value]
    return value


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    swap = getattr(pyfuncitem, "suite_swap", None)
    if swap is None:
        return (yield)
    args = pyfuncitem.funcargs
    for name in list(args):
        args[name] = _swap(args[name], *swap)
    result = yield
    if not adapters.BUILT:
        pytest.skip("builds none of our estimators: it tests scikit-learn's own classes")
    return result


def suite_key(item: Any) -> str | None:
    """'<suite>::<test name>[<parameters>]' of an item of this directory, else None."""
    base = os.path.basename(str(item.fspath))
    if not (base.startswith("test_sk_") and base.endswith(".py")):
        return None
    return f"{base[len('test_sk_'):-3]}::{item.name}"


def matching(key: str, table: Any = EXPECTED_FAILURES) -> list[str]:
    """The entries of ``table`` matching an item key: an entry without brackets matches every
    parametrisation of the test, one with brackets is an fnmatch pattern of the key."""
    out = []
    for entry in table:
        if "[" in entry:
            if fnmatch.fnmatchcase(key, entry.replace("[", "[[]", 1)):
                out.append(entry)
        elif key.split("[", 1)[0] == entry:
            out.append(entry)
    return out


IGNORED_PARAMETERS = {"ridge": "solver", "quantile": "solver"}
"""Test parameters naming how scikit-learn solves (ignored by the adapters: the strategy is
ours): a test parametrised over them runs once per other parameters, with the first value."""


def _drop_repeats(config: Any, items: list) -> None:
    kept, dropped, seen = [], [], set()
    for item in items:
        key = suite_key(item)
        ignored = IGNORED_PARAMETERS.get(key.split("::")[0]) if key else None
        params = getattr(getattr(item, "callspec", None), "params", {})
        if ignored and ignored in params:
            rest = tuple(sorted((k, repr(v)) for k, v in params.items() if k != ignored))
            if (item.originalname, rest) in seen:
                dropped.append(item)
                continue
            seen.add((item.originalname, rest))
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: Any, items: list) -> None:
    _drop_repeats(config, items)
    seen: dict[str, set] = {}
    for item in items:
        key = suite_key(item)
        if key is None:
            continue
        seen.setdefault(key.split("::")[0], set())
        hits = matching(key)
        for entry in hits:
            seen[key.split("::")[0]].add(entry)
        if hits:
            item.add_marker(pytest.mark.xfail(strict=True, reason=EXPECTED_FAILURES[hits[0]]))
        if matching(key, SLOW_CASES):
            item.add_marker(pytest.mark.slow)
    stale = [e for e in EXPECTED_FAILURES if e.split("::")[0] in seen
             and e not in seen[e.split("::")[0]]]
    if stale:
        raise pytest.UsageError(f"EXPECTED_FAILURES entries that match no collected test: {stale}")
