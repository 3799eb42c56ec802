"""AID for LAD against a monolithic LP solve (scipy linprog / HiGHS on the primal LP)."""

from __future__ import annotations

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from solvers.aid import aid_lad, build_aggregated_lad
from solvers.result import SolutionStatus, TerminationCondition


def lad_reference(X, y, s=None, fit_intercept=True) -> float:
    """min sum s_i |y_i - x_i'beta - b| as the primal LP of formulations.md section 1."""
    n = X.shape[0]
    s = np.ones(n) if s is None else s
    A = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    q = A.shape[1]
    c = np.r_[np.zeros(q), s, s]
    A_eq = sp.hstack([sp.csr_matrix(A), sp.identity(n), -sp.identity(n)]).tocsr()
    bounds = [(None, None)] * q + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=A_eq, b_eq=y, bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def make_lad(seed, n=400, p=3, kind="plain"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.5 + rng.laplace(size=n)
    s = None
    if kind == "ties":
        X = np.round(X)
        y = np.round(y)
    elif kind == "duplicates":
        X[n // 2 :] = X[: n - n // 2]
        y[n // 2 :] = y[: n - n // 2]
    elif kind == "outliers":
        out = rng.random(n) < 0.1
        y[out] += rng.normal(scale=50.0, size=out.sum())
    elif kind == "weights":
        s = rng.uniform(0.1, 3.0, size=n)
    return X, y, s


def residuals(X, y, res, fit_intercept=True):
    b = res.extra["intercept"] if fit_intercept else 0.0
    return y - (X @ res.x if X.shape[1] else 0.0) - b


def assert_sign_pure(labels, r, tol):
    rows = labels >= 0
    lab, r = labels[rows], r[rows]
    K = lab.max() + 1
    pos = np.bincount(lab, weights=r > tol, minlength=K)
    neg = np.bincount(lab, weights=r < -tol, minlength=K)
    assert not np.any((pos > 0) & (neg > 0))


def assert_monotone(res):
    hist = res.extra["history"]
    F = np.array([h["F"] for h in hist])
    gap = np.array([h["gap"] for h in hist])
    scale = max(1.0, abs(res.objective))
    assert np.all(np.diff(F) >= -1e-9 * scale)
    assert np.all(np.diff(gap) <= 1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["plain", "ties", "duplicates", "outliers", "weights"])
@pytest.mark.parametrize("init", ["band", "quantile", "kmeans"])
def test_matches_monolithic(seed, kind, init):
    X, y, s = make_lad(seed, kind=kind)
    res = aid_lad(X, y, sample_weight=s, n_clusters=12, init=init, seed=seed)
    ref = lad_reference(X, y, s)
    assert res.termination is TerminationCondition.CERTIFIED
    assert res.solution_status is SolutionStatus.OPTIMAL and res.extra["certified"]
    assert res.objective == pytest.approx(ref, rel=1e-9)
    # the toolkit's own objective at the returned point
    w = np.ones(len(y)) if s is None else s
    assert float(w @ np.abs(residuals(X, y, res))) == pytest.approx(ref, rel=1e-9)
    assert res.bound == pytest.approx(ref, rel=1e-9)
    assert_monotone(res)
    assert_sign_pure(res.extra["labels"], residuals(X, y, res), 1e-9 * (1 + np.abs(y).max()))
    assert res.extra["n_clusters_final"] == res.extra["labels"].max() + 1


def test_several_iterations_and_paper_split():
    X, y, _ = make_lad(5, n=3000, p=4, kind="outliers")
    res = aid_lad(X, y, n_clusters=8, init="quantile", split="sign")
    assert res.iterations >= 3
    assert res.objective == pytest.approx(lad_reference(X, y), rel=1e-9)
    assert_monotone(res)


def test_intercept_only_is_weighted_median():
    rng = np.random.default_rng(3)
    y = rng.standard_cauchy(501)
    res = aid_lad(np.zeros((501, 0)), y, n_clusters=5, init="quantile")
    assert res.is_optimal
    assert res.x.shape == (0,)
    assert res.extra["intercept"] == pytest.approx(np.median(y), abs=1e-12)
    assert res.objective == pytest.approx(np.abs(y - np.median(y)).sum(), rel=1e-12)


def test_without_intercept():
    X, y, _ = make_lad(4, kind="plain")
    res = aid_lad(X, y, fit_intercept=False, n_clusters=10)
    assert res.is_optimal and res.extra["intercept"] == 0.0
    assert res.objective == pytest.approx(lad_reference(X, y, fit_intercept=False), rel=1e-9)


@pytest.mark.parametrize("warm_start, sift", [(True, False), (False, False)])
def test_warm_start_and_sifting_off_same_answer(warm_start, sift):
    X, y, _ = make_lad(6, n=3000, p=5, kind="outliers")
    a = aid_lad(X, y, n_clusters=10, init="quantile")
    b = aid_lad(X, y, n_clusters=10, init="quantile", warm_start=warm_start, sift=sift)
    assert a.is_optimal and b.is_optimal
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert a.extra["history"][0]["F"] == pytest.approx(b.extra["history"][0]["F"], rel=1e-9)
    assert sum(h["fixed"] for h in a.extra["history"]) > 0  # sifting did fix columns


def test_iteration_cap():
    X, y, _ = make_lad(7, n=2000, kind="outliers")
    res = aid_lad(X, y, n_clusters=4, init="quantile", split="sign", max_iter=1)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.extra["certified"] is False and not res.is_optimal
    ref = lad_reference(X, y)
    assert res.bound <= ref * (1 + 1e-9) and res.objective >= ref * (1 - 1e-9)
    with pytest.raises(Exception, match="iteration_limit"):
        res.require_optimal()


def test_gap_limit_and_time_limit():
    X, y, _ = make_lad(8, n=2000, kind="outliers")
    res = aid_lad(X, y, n_clusters=4, init="quantile", split="sign", gap_tol=0.5)
    assert res.termination in (TerminationCondition.GAP_LIMIT, TerminationCondition.CERTIFIED)
    assert res.gap <= 0.5
    res = aid_lad(X, y, time_limit=1e-9)
    assert res.termination is TerminationCondition.TIME_LIMIT and not res.is_optimal


def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(9)
    X, y, _ = make_lad(9, n=60, kind="plain")
    k = rng.integers(0, 5, size=60)
    k[0] = 1
    a = aid_lad(X, y, sample_weight=k.astype(float), n_clusters=6)
    b = aid_lad(np.repeat(X, k, axis=0), np.repeat(y, k), n_clusters=6)
    assert a.is_optimal and b.is_optimal
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert np.all(a.extra["labels"][k == 0] == -1)


def test_dual_sign_convention():
    """HiGHS's row duals of max y'u s.t. X'u = 0, |u| <= 1 are +beta (not -beta)."""
    X, y, _ = make_lad(10, n=200, kind="plain")
    h = build_aggregated_lad(X, y, np.arange(200))
    h.run()
    beta = np.array(h.getSolution().row_dual)
    E = np.abs(y - X @ beta[:-1] - beta[-1]).sum()
    ref = lad_reference(X, y)
    assert E == pytest.approx(ref, rel=1e-9)
    assert h.getInfo().objective_function_value == pytest.approx(ref, rel=1e-9)
    assert np.abs(y + X @ beta[:-1] + beta[-1]).sum() > 1.5 * ref


def test_export_aggregated_model_round_trip(tmp_path):
    X, y, _ = make_lad(11, n=1500, kind="outliers")
    written = []

    def cb(it, highs, labels):
        path = tmp_path / f"agg{it}.mps"
        highs.writeModel(str(path))
        written.append((path, labels.max() + 1))

    res = aid_lad(X, y, n_clusters=6, init="quantile", callback=cb)
    assert res.is_optimal and len(written) == res.iterations >= 2
    for (path, K), hist in zip(written, res.extra["history"], strict=True):
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.readModel(str(path))
        assert h.getNumCol() == K == hist["clusters"]
        h.run()
        assert h.getInfo().objective_function_value == pytest.approx(hist["F"], rel=1e-9)
    h2 = build_aggregated_lad(X, y, res.extra["labels"])
    h2.run()
    assert h2.getInfo().objective_function_value == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(X=np.array([[np.nan], [1.0]])), "X"),
        (dict(X=np.ones(3)), "X"),
        (dict(y=np.ones(5)), "y"),
        (dict(y=np.array([1.0, np.inf, 0.0])), "y"),
        (dict(sample_weight=np.array([1.0, -1.0, 1.0])), "sample_weight"),
        (dict(sample_weight=np.zeros(3)), "sample_weight"),
        (dict(n_clusters=0), "n_clusters"),
        (dict(n_clusters=1.5), "n_clusters"),
        (dict(init="bogus"), "init"),
        (dict(init=np.array([0, 1])), "init"),
        (dict(max_iter=0), "max_iter"),
        (dict(gap_tol=-1.0), "gap_tol"),
        (dict(time_limit=0.0), "time_limit"),
        (dict(split="halves"), "split"),
        (dict(fit_intercept="yes"), "fit_intercept"),
    ],
)
def test_bad_input_names_argument(kwargs, name):
    args = dict(X=np.array([[0.0], [1.0], [2.0]]), y=np.array([0.0, 1.0, 3.0]))
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(ValueError, match=name):
        aid_lad(X, y, **args)
