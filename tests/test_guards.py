"""Clean failure: strict parameters, frozen problems, size guards, limits and the run record."""

from __future__ import annotations

import pickle
import platform

import numpy as np
import pytest

from optmodels import guards
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.result import TerminationCondition as T


def _classification(n: int = 60, labels: tuple[float, float] = (-1.0, 1.0), seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, labels[1], labels[0])
    return X, y


def _regression(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + rng.standard_t(3, size=n)


def _problems() -> dict[str, object]:
    Xc, yc = _classification()
    Xr, yr = _regression()
    return {
        "lad": (LAD(Xr, yr), "fit_intercept", False),
        "svm": (SVM(Xc, yc), "C", 10),
        "klr": (KLR(Xc[:30], yc[:30]), "C", 10),
        "ridge": (Ridge(Xr, yr), "alpha", 10),
    }


# ------------------------------------------------------------------ strict parameter values
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, "inf", "nan", -1.0, 0.0, "abc", True])
def test_svm_C_must_be_finite_positive(bad):
    X, y = _classification()
    with pytest.raises(
        ValueError,
        match=r"The 'C' parameter of SVM must be a float in the range "
        r"\(0, inf\)\. Got .* instead\.",
    ):
        SVM(X, y, C=bad)


@pytest.mark.parametrize(
    ("cls", "name"), [(Ridge, "alpha"), (KLR, "lam"), (KLR, "C"), (KLR, "bound_tol")]
)
def test_other_float_parameters_refuse_inf_and_nan(cls, name):
    X, y = _classification() if cls is KLR else _regression()
    for bad in (np.inf, np.nan):
        with pytest.raises(ValueError, match=rf"The '{name}' parameter of {cls.__name__} must be"):
            cls(X, y, **{name: bad})


@pytest.mark.parametrize(
    "bad",
    [
        {-1: -1.0},
        {1: 0.0},
        {1: np.nan},
        {1: np.inf},
        {1: True},
        {1: "2"},
        {5: 2.0},
        {"1": 2.0},
        {},
        "balance",
        [1.0, 2.0],
        2.0,
    ],
)
def test_class_weight_refused_with_the_accepted_forms(bad):
    X, y = _classification()
    with pytest.raises(ValueError, match=r"class_weight.*None, 'balanced', or a dict"):
        SVM(X, y, class_weight=bad)


@pytest.mark.parametrize(
    ("labels", "weights", "neg_weight", "pos_weight"),
    [
        ((0.0, 1.0), {0: 3.0}, 3.0, 1.0),  # original labels
        ((3.0, 7.0), {-1: 3.0, 1: 0.5}, 3.0, 0.5),  # -1/+1 keys
        ((3.0, 7.0), {7: 0.5}, 1.0, 0.5),
        ((1.0, 2.0), {1: 3.0}, 3.0, 1.0),  # 1 is an original label here: the -1 class
    ],
)
def test_class_weight_equals_the_matching_sample_weight(labels, weights, neg_weight, pos_weight):
    """A class weight is a per-row weight: the box and the optimum equal those of the
    sample_weight vector with that weight on each row of the class."""
    X, y = _classification(labels=labels)
    weighted = SVM(X, y, C=2.0, class_weight=weights)
    s = np.where(y == labels[1], pos_weight, neg_weight)
    reference = SVM(X, y, C=2.0, sample_weight=s)
    np.testing.assert_allclose(weighted.box, 2.0 * s)
    a, b = weighted.solve().require_optimal(), reference.solve().require_optimal()
    assert a.objective == pytest.approx(b.objective, rel=1e-6)


@pytest.mark.parametrize("bad", ["abc", "yes", "", 1, 0, 2.0, None])
def test_bool_parameters_are_strict(bad):
    X, y = _regression()
    with pytest.raises(ValueError, match=r"The 'fit_intercept' parameter of LAD must be a bool"):
        LAD(X, y, fit_intercept=bad)


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("False", False), ("1", True), (" 0 ", False), (np.bool_(True), True)],
)
def test_bool_parameters_accept_true_false_1_0_strings(text, value):
    X, y = _regression()
    assert LAD(X, y, fit_intercept=text).fit_intercept is value


def test_verbose_option_is_strict():
    X, y = _regression()
    with pytest.raises(ValueError, match=r"'verbose' option .* must be a bool"):
        LAD(X, y).solve(verbose="abc")


# ------------------------------------------------------------------ frozen after construction
@pytest.mark.parametrize("name", ["lad", "svm", "klr", "ridge"])
def test_parameters_cannot_be_assigned_after_construction(name):
    problem, param, value = _problems()[name]
    before = problem.params[param]
    cls = type(problem).__name__
    with pytest.raises(AttributeError, match=rf"create a new {cls}\(\.\.\.\) with {param}={value}"):
        setattr(problem, param, value)
    with pytest.raises(TypeError):
        problem.params[param] = value
    with pytest.raises(AttributeError, match="fixed at construction"):
        problem.params = {}
    assert getattr(problem, param) == before and problem.params[param] == before
    problem.note = "other attributes stay assignable"
    copy = pickle.loads(pickle.dumps(problem))  # frozen parameters still pickle
    assert copy.params == problem.params
    with pytest.raises(AttributeError, match="create a new"):
        setattr(copy, param, value)


def test_svm_box_is_what_C_says():
    X, y = _classification()
    svm = SVM(X, y, C=3.0)
    with pytest.raises(AttributeError):
        svm.C = 10.0
    np.testing.assert_allclose(svm.box, 3.0 * np.ones(svm.n))


# ------------------------------------------------------------------ size guard
def test_footprint_counts_dense_matrices_only():
    Xc, yc = _classification(n=40)
    Xr, yr = _regression(n=40)
    rbf = guards.footprint(SVM(Xc, yc, kernel="rbf"), {})
    assert rbf is not None and rbf.bytes >= 8 * 40**2 and rbf.scalable == 'strategy="smo"'
    rbf80 = guards.footprint(SVM(*_classification(n=80), kernel="rbf"), {})
    assert rbf80.bytes == pytest.approx(4 * rbf.bytes) and rbf80.seconds == pytest.approx(
        8 * rbf.seconds
    )
    assert guards.footprint(SVM(Xc, yc), {}) is None  # linear primal: sparse
    assert guards.footprint(SVM(Xc, yc), {"form": "dual"}).scalable == 'strategy="aid"'
    assert guards.footprint(KLR(Xc, yc), {}).scalable == 'strategy="smo"'
    assert guards.footprint(LAD(Xr, yr), {}) is None
    assert guards.footprint(Ridge(Xr, yr), {"solver": "highs"}) is None


@pytest.mark.parametrize(
    ("make", "options", "strategy"),
    [
        (lambda: SVM(*_classification(), kernel="rbf"), {}, 'strategy="smo"'),
        (lambda: SVM(*_classification()), {"form": "dual"}, 'strategy="aid"'),
        (lambda: KLR(*_classification(n=30)), {}, 'strategy="smo"'),
    ],
)
def test_guard_refuses_above_budget_and_says_how_to_lift_it(monkeypatch, make, options, strategy):
    problem = make()
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", 0.001)
    with pytest.raises(ValueError) as info:
        problem.solve(**options)
    text = str(info.value)
    for part in (strategy, "allow_large=True", "OPTMODELS_MEMORY_BUDGET_MB", "MB"):
        assert part in text
    res = problem.solve(allow_large=True, **options)
    assert res.is_optimal
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", None)
    monkeypatch.setenv("OPTMODELS_MEMORY_BUDGET_MB", "0.001")
    with pytest.raises(ValueError, match="above the memory budget"):
        problem.solve(**options)
    monkeypatch.setenv("OPTMODELS_MEMORY_BUDGET_MB", "100")
    assert problem.solve(**options).objective == pytest.approx(res.objective, rel=1e-6)


def test_bad_budget_environment_is_refused(monkeypatch):
    monkeypatch.setenv("OPTMODELS_MEMORY_BUDGET_MB", "lots")
    with pytest.raises(ValueError, match="OPTMODELS_MEMORY_BUDGET_MB='lots' must be a positive"):
        guards.memory_budget_bytes()
    monkeypatch.delenv("OPTMODELS_MEMORY_BUDGET_MB")
    assert 0 < guards.memory_budget_bytes() <= guards.DEFAULT_BUDGET_MB * 2**20


def test_sparse_full_solves_are_not_guarded(monkeypatch):
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", 0.001)
    assert LAD(*_regression()).solve().is_optimal
    assert SVM(*_classification()).solve().is_optimal


# ------------------------------------------------------------------ progress line
@pytest.mark.parametrize("name", ["lad", "svm", "klr", "ridge"])
def test_small_full_solves_print_nothing(capsys, name):
    problem = _problems()[name][0]
    problem.solve()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_long_full_solve_prints_one_line_unless_verbose_false(capsys, monkeypatch):
    svm = SVM(*_classification(), kernel="rbf")
    monkeypatch.setattr(guards, "PROGRESS_SECONDS", 0.0)
    svm.solve()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "optmodels: full solve of SVM (n = 60" in err
    assert 'strategy="smo"' in err and "verbose=False" in err
    svm.solve(verbose=False)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ time and iteration limits
def test_full_solve_gets_the_default_time_limit_and_inf_lifts_it():
    lad = LAD(*_regression())
    run = lad.solve().extra["run"]
    assert run["options"]["time_limit"] == guards.DEFAULT_TIME_LIMIT == 600.0
    assert lad.solve(time_limit=np.inf).extra["run"]["options"]["time_limit"] is None
    assert lad.solve(time_limit=5).extra["run"]["options"]["time_limit"] == 5.0


def test_ecos_refuses_time_limit_and_gets_no_default():
    lad = LAD(*_regression())
    with pytest.raises(ValueError, match="ECOS has no time limit option"):
        lad.solve(solver="ecos", time_limit=5)
    klr = KLR(*_classification(n=30))
    with pytest.raises(ValueError, match="ECOS has no time limit option.*max_iter"):
        klr.solve(solver="ecos", time_limit=5)
    res = lad.solve(solver="ecos")
    assert res.extra["run"]["options"]["time_limit"] is None
    assert res.objective == pytest.approx(lad.solve().objective, rel=1e-6)


@pytest.mark.parametrize(
    ("make", "solver"),
    [
        (lambda: LAD(*_regression()), "highs"),
        (lambda: LAD(*_regression()), "clarabel"),
        (lambda: SVM(*_classification()), "clarabel"),
        (lambda: SVM(*_classification(), kernel="rbf"), "clarabel"),
        # (Clarabel solves the equality-constrained ridge QP at its starting point: 0 iterations)
        (lambda: Ridge(*_regression()), "highs"),
        (lambda: Ridge(*_regression()), "ecos"),
    ],
)
def test_max_iter_reaches_the_full_solve(make, solver):
    problem = make()
    capped = problem.solve(solver=solver, max_iter=1)
    assert capped.termination is T.ITERATION_LIMIT and not capped.is_optimal
    assert capped.extra["run"]["options"]["max_iter"] == 1
    free = problem.solve(solver=solver, max_iter=1000).require_optimal()
    assert free.objective == pytest.approx(problem.solve(solver=solver).objective, rel=1e-7)


# ------------------------------------------------------------------ run record
RUN_KEYS = {"strategy", "options", "seed", "threads", "backend", "versions", "python"}


@pytest.mark.parametrize("name", ["lad", "svm", "klr", "ridge"])
def test_every_result_records_its_run(name):
    problem = _problems()[name][0]
    res = problem.solve()
    run = res.extra["run"]
    assert set(run) == RUN_KEYS
    assert run["strategy"] == "full" and run["seed"] is None
    assert run["backend"] == {"name": res.solver, "version": res.solver_version}
    assert run["python"] == platform.python_version()
    assert set(run["versions"]) >= {"numpy", "scipy", "highspy", "clarabel", "cvxpy", "optmodels"}
    assert run["versions"]["numpy"] == np.__version__
    from solvers.options import FULL

    assert set(run["options"]) == set(FULL[name])  # every option, defaults resolved
    assert run["options"]["solver"] == FULL[name]["solver"].default
    assert set(run["threads"]) == {"pools", "highs_threads"}


def test_run_record_versions_are_those_loaded(monkeypatch):
    """A loaded library's version is its module's (highspy, without __version__, from its
    package metadata); one this process has not imported took no part and reads None."""
    import sys
    from importlib import metadata

    import highspy

    from optmodels.problem import library_versions

    monkeypatch.delitem(sys.modules, "ecos", raising=False)
    versions = library_versions()
    assert versions["ecos"] is None
    assert versions["numpy"] == np.__version__
    assert versions["highspy"] == metadata.version("highspy")
    assert not hasattr(highspy, "__version__") or versions["highspy"] == highspy.__version__


def test_run_record_keeps_the_seed_and_backend_threads():
    lad = LAD(*_regression())
    res = lad.solve(options={"threads": 1})
    assert res.extra["run"]["threads"]["highs_threads"] == 1
    aid = lad.solve(strategy="aid", seed=7, n_clusters=10)
    assert aid.extra["run"]["seed"] == 7 and aid.extra["run"]["strategy"] == "aid"
    assert aid.extra["run"]["options"]["n_clusters"] == 10


def test_run_record_threads_follow_threadpool_limits():
    """The kept threadpoolctl controller still reads the current thread counts, and they agree
    with a fresh scan of the process (threadpoolctl.threadpool_info)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    lad = LAD(*_regression())
    fresh = [p["num_threads"] for p in threadpool_info()]
    assert [p["num_threads"] for p in lad.solve().extra["run"]["threads"]["pools"]] == fresh
    with threadpool_limits(1):
        pools = lad.solve().extra["run"]["threads"]["pools"]
        assert [p["num_threads"] for p in pools] == [1] * len(pools)
    after = lad.solve().extra["run"]["threads"]["pools"]
    assert [p["num_threads"] for p in after] == fresh
