"""One Strategy interface (issue 31): every registered strategy declares its option table and
what it refuses with the reason; run_strategy checks the refusal before the strategy runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pytest

from optmodels import KLR, SVM
from optmodels import strategies as reg
from solvers.errors import DataError


def _xy(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] + 0.2 * rng.normal(size=n) > 0, 1, -1)


@pytest.mark.parametrize("problem", ["lad", "svm", "klr", "ridge"])
def test_every_registered_strategy_is_a_strategy_with_its_table(problem):
    for name in reg.strategies_for(problem):
        entry = reg.get_strategy(problem, name)
        assert isinstance(entry, reg.Strategy)
        assert (entry.problem, entry.name) == (problem, name)
        assert isinstance(entry.options, Mapping) and entry.options  # an OptionTable
        assert reg.options_for(problem, name) is entry.options
        assert callable(entry.run)


def test_accepted_names_each_refusal_with_its_reason():
    X, y = _xy()
    rbf = reg.accepted(SVM(X, y, kernel="rbf"))
    assert rbf["smo"] is None and rbf["full"] is None and rbf["aid"] is None
    assert "needs kernel='linear'" in rbf["ipm"]
    assert "loss='squared_hinge'" in rbf["newton"]
    sq = reg.accepted(SVM(X, y, kernel="linear", loss="squared_hinge"))
    assert sq["newton"] is None and sq["full"] is None
    for name in ("smo", "block", "aid", "ipm"):
        assert "solves loss='hinge'" in sq[name], name
    sklr = reg.accepted(KLR(X, y, kernel="linear", lam=1.0, bound_tol=0.01))
    assert "plain KLR" in sklr["newton"] and sklr["smo"] is None


def test_a_refused_strategy_never_runs(monkeypatch):
    X, y = _xy()
    entry = reg.get_strategy("svm", "ipm")

    def must_not_run(problem, **options):
        raise AssertionError("the refused strategy ran")

    monkeypatch.setitem(reg._REGISTRY["svm"], "ipm", dataclasses.replace(entry, run=must_not_run))
    with pytest.raises(DataError, match="needs kernel='linear'.*Use strategy 'smo'"):
        SVM(X, y, kernel="rbf").solve("ipm")


def test_unknown_strategy_names_the_choices():
    X, y = _xy()
    with pytest.raises(ValueError, match="Unknown strategy 'simplex' for svm; choose one of"):
        reg.get_strategy("svm", "simplex")
