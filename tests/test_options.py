"""The strategy option tables: equal to the routines' keywords, and every option validated."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.problems import PROBLEMS
from optmodels.ridge import Ridge
from optmodels.strategies import _REGISTRY, options_for, strategies_for
from optmodels.svm import SVM
from solvers.errors import DataError
from solvers.options import FULL, Option, validate_options

STRATEGIES = [(p, s) for p in PROBLEMS for s in strategies_for(p)]


def _keywords(fn) -> dict[str, object]:
    """Keyword parameters of ``fn`` (those with a default or keyword-only) and their defaults."""
    return {
        n: p.default
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY or p.default is not inspect.Parameter.empty
    }


def _routine_keywords(problem: str, strategy: str) -> dict[str, object]:
    if strategy == "full":
        return _keywords(PROBLEMS[problem].solve_full)
    runner = _REGISTRY[problem][strategy].run
    kw = _keywords(runner.routine)
    return {n: d for n, d in kw.items() if n not in runner.fixed | runner.unused}


@pytest.mark.parametrize("problem, strategy", STRATEGIES)
def test_table_names_and_defaults_equal_the_routine_keywords(problem, strategy):
    table = options_for(problem, strategy)
    kw = _routine_keywords(problem, strategy)
    assert set(table) == set(kw)
    for name, option in table.items():
        assert option.default == kw[name], name


def _bad_values(option: Option) -> list[object]:
    """A wrong type and, for numbers, a value just outside the range."""
    if option.kind == "bool":
        return ["abc", 2, "yes"]
    if option.kind == "choice":
        return ["no-such-choice", 3.5]
    if option.kind in ("array", "callable", "mapping", "object"):
        return ["text"]
    bad: list[object] = ["abc", [1]]
    if option.low is not None:
        bad.append(option.low if option.closed in ("right", "neither") else option.low - 1)
    if option.kind == "int":
        bad.append(2.5)
    if not option.none_ok:
        bad.append(None)
    return bad


def _tiny(problem: str):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=12) > 0, 1.0, -1.0)
    return {"lad": LAD, "svm": SVM, "klr": KLR, "ridge": Ridge}[problem](X, y)


CASES = [
    (p, s, name, value)
    for p, s in STRATEGIES
    for name, option in options_for(p, s).items()
    for value in _bad_values(option)
]


@pytest.mark.parametrize("problem, strategy, name, value", CASES)
def test_every_option_refuses_a_bad_value_naming_it(problem, strategy, name, value):
    """In the spirit of scikit-learn's check_param_validation, through problem.solve."""
    with pytest.raises(ValueError, match=f"The '{name}' option of strategy '{strategy}'"):
        _tiny(problem).solve(strategy, **{name: value})


@pytest.mark.parametrize("problem, strategy", STRATEGIES)
def test_unknown_option_lists_the_valid_names(problem, strategy):
    with pytest.raises(DataError) as err:
        _tiny(problem).solve(strategy, sketch_sizee=8)
    message = str(err.value)
    assert "'sketch_sizee'" in message
    for name in options_for(problem, strategy):
        assert name in message


def test_inlined_aid_constants_equal_the_aid_modules():
    from solvers import options
    from solvers.aid.clustering import LAD_METHODS, SVM_METHODS
    from solvers.aid.lad import DEFAULT_LAD_CLUSTERS, LP_SOLVERS
    from solvers.aid.lad import SPLIT_RULES as LAD_SPLIT_RULES
    from solvers.aid.svm import DEFAULT_SVM_CLUSTERS, SPLIT_RULES
    from solvers.aid.svm_qp import SUBSOLVERS

    assert (options.LAD_METHODS, options.SVM_METHODS) == (LAD_METHODS, SVM_METHODS)
    assert (options.SPLIT_RULES, options.SUBSOLVERS) == (SPLIT_RULES, SUBSOLVERS)
    assert (options.LAD_SPLIT_RULES, options.LAD_LP_SOLVERS) == (LAD_SPLIT_RULES, LP_SOLVERS)
    assert options.DEFAULT_LAD_CLUSTERS == DEFAULT_LAD_CLUSTERS
    assert options.DEFAULT_SVM_CLUSTERS == DEFAULT_SVM_CLUSTERS


def test_strings_convert_by_kind_and_bools_are_strict():
    table = {**FULL["klr"]}
    out = validate_options(
        table, {"tol": "1e-4", "max_iter": "1e3", "verbose": "TRUE", "solver": "ECOS"}, "x"
    )
    assert out == {"tol": 1e-4, "max_iter": 1000, "verbose": True, "solver": "ecos"}
    assert isinstance(out["max_iter"], int)
    assert validate_options(table, {"verbose": "0", "max_iter": "none"}, "x") == {
        "verbose": False,
        "max_iter": None,
    }
    for bad in ("abc", "yes", 1, 0):
        with pytest.raises(DataError, match="true/false/1/0"):
            validate_options(table, {"verbose": bad}, "x")


def test_n_clusters_is_a_count_or_a_share():
    table = options_for("lad", "aid")
    assert validate_options(table, {"n_clusters": "500"}, "x") == {"n_clusters": 500}
    assert validate_options(table, {"n_clusters": "1"}, "x") == {"n_clusters": 1}
    assert validate_options(table, {"n_clusters": "0.25"}, "x") == {"n_clusters": 0.25}
    with pytest.raises(DataError, match="fraction in"):
        validate_options(table, {"n_clusters": "1.5"}, "x")


def _ridge(n: int, d: int) -> Ridge:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    return Ridge(X, X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), alpha=2.0)


@pytest.mark.parametrize("method", ["pcg-fd", "rfd", "fdrr", "ihs-gaussian"])
def test_ridge_sketch_size_defaults_below_d(method):
    """d = 7 < 256: the default m = min(256, d) = 7 runs; PCG reaches the optimum (from
    numpy's solve of the normal equations), the others a point no better than it."""
    prob = _ridge(60, 7)
    res = prob.solve(method, max_iter=30) if method != "fdrr" else prob.solve(method)
    A, b = prob.Aw, prob.bw
    best = prob.objective(np.linalg.solve(A.T @ A + 2.0 * np.eye(7), A.T @ b))
    assert res.x is not None and res.x.shape == (7,)
    if method == "pcg-fd":
        assert res.objective == pytest.approx(best, rel=1e-9)
    assert best - 1e-12 <= res.objective < np.inf
    if method in ("pcg-fd", "rfd"):  # one-shot FD and IHS with m = d are rough estimates
        assert res.objective <= 1.01 * best


def test_ridge_sketch_size_above_d_is_an_error_naming_the_fix():
    with pytest.raises(DataError, match=r"'m' option .* at most d = 7.*min\(256, d\) = 7"):
        _ridge(60, 7).solve("rfd", m=8)
