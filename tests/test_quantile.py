"""Quantile regression as LAD's ``quantile`` parameter: full solve, AID, export, references.

The objective is E = sum_i s_i (2 tau u+ + 2 (1 - tau) u-), twice the check loss, so that
tau = 0.5 is LAD. The references are independent: scipy's linprog on the primal LP written
here, statsmodels' QuantReg and scikit-learn's QuantileRegressor.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import instances
from optmodels.export import read, write
from optmodels.lad import LAD
from solvers.aid import aid_lad, build_aggregated_lad
from solvers.aid.lad import dual_bound
from solvers.backend import solve_qp
from solvers.errors import DataError
from solvers.result import CERTIFICATE_TOL, SolutionStatus, TerminationCondition

TAUS = [0.1, 0.25, 0.5, 0.75, 0.9]


def pinball2(r: np.ndarray, tau: float, s: np.ndarray | None = None) -> float:
    """sum_i s_i (2 tau r+ + 2 (1 - tau) r-), written independently of the toolkit."""
    s = np.ones(r.shape[0]) if s is None else s
    return float(np.sum(s * (2 * tau * np.maximum(r, 0) + 2 * (1 - tau) * np.maximum(-r, 0))))


def linprog_reference(X, y, tau, s=None, fit_intercept=True) -> float:
    """min sum s_i (2 tau e+_i + 2 (1 - tau) e-_i) s.t. A theta + e+ - e- = y, by scipy."""
    n = X.shape[0]
    s = np.ones(n) if s is None else s
    A = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    q = A.shape[1]
    c = np.r_[np.zeros(q), 2 * tau * s, 2 * (1 - tau) * s]
    A_eq = sp.hstack([sp.csr_matrix(A), sp.identity(n), -sp.identity(n)]).tocsr()
    res = linprog(c, A_eq=A_eq, b_eq=y, bounds=[(None, None)] * q + [(0, None)] * (2 * n),
                  method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def data(seed=0, n=1500, p=4):
    X, y, _, _ = instances.make_lad(n=n, p=p, seed=seed)
    return X, y


def _rel(problem: LAD, a: float, b: float) -> float:
    return abs(a - b) / problem.natural_scale()


@pytest.mark.parametrize("tau", TAUS)
def test_full_and_aid_certified_and_equal(tau):
    X, y = data(seed=1)
    problem = LAD(X, y, quantile=tau)
    full = problem.solve("full")
    aid = problem.solve("aid", n_clusters=100)
    assert full.termination is TerminationCondition.OPTIMAL
    assert aid.termination is TerminationCondition.CERTIFIED
    assert aid.solution_status is SolutionStatus.OPTIMAL
    assert _rel(problem, full.objective, aid.objective) <= 1e-7
    assert _rel(problem, full.objective, linprog_reference(X, y, tau)) <= 1e-7
    # the objective is the toolkit-independent doubled check loss at the returned fit
    r = y - X @ aid.x - aid.extra["intercept"]
    assert aid.objective == pytest.approx(pinball2(r, tau), rel=1e-12)
    assert aid.bound <= aid.objective + 1e-9 * problem.natural_scale()


@pytest.mark.parametrize("tau", [0.1, 0.9])
def test_dual_signs_kkt(tau):
    """u_i = 2 tau s_i where the residual is positive, -2 (1 - tau) s_i where it is negative."""
    X, y = data(seed=2, n=300, p=3)
    s = np.random.default_rng(2).uniform(0.5, 2.0, size=300)
    problem = LAD(X, y, sample_weight=s, quantile=tau)
    res = problem.solve_full(form="dual")
    assert res.termination is TerminationCondition.OPTIMAL
    u = res.extra["dual_u"]
    r = y - X @ res.x - res.extra["intercept"]
    big = 1e-6 * np.abs(r).max()
    np.testing.assert_allclose(u[r > big], 2 * tau * s[r > big], rtol=1e-7)
    np.testing.assert_allclose(u[r < -big], -2 * (1 - tau) * s[r < -big], rtol=1e-7)
    assert res.bound == pytest.approx(float(y @ u))
    assert abs(u.sum()) <= 1e-8 * np.abs(u).sum()


@pytest.mark.parametrize("tau", [0.25, 0.75])
@pytest.mark.parametrize("form", ["primal", "dual"])
def test_full_forms_against_linprog_with_weights(tau, form):
    X, y = data(seed=3, n=400, p=3)
    s = np.random.default_rng(3).exponential(size=400)
    problem = LAD(X, y, sample_weight=s, quantile=tau)
    res = problem.solve_full(form=form)
    assert res.termination is TerminationCondition.OPTIMAL
    assert _rel(problem, res.objective, linprog_reference(X, y, tau, s)) <= 1e-7


@pytest.mark.parametrize("tau", TAUS)
def test_against_statsmodels_quantreg(tau):
    sm = pytest.importorskip("statsmodels.api")
    X, y = data(seed=4, n=600, p=3)
    fit = sm.QuantReg(y, np.column_stack([X, np.ones(600)])).fit(q=tau, max_iter=5000,
                                                                 p_tol=1e-10)
    theirs = pinball2(y - np.column_stack([X, np.ones(600)]) @ fit.params, tau)
    problem = LAD(X, y, quantile=tau)
    ours = problem.solve("full")
    assert ours.objective <= theirs + 1e-9 * problem.natural_scale()
    assert theirs - ours.objective <= 1e-5 * problem.natural_scale()  # IRLS is approximate
    np.testing.assert_allclose(np.r_[ours.x, ours.extra["intercept"]], fit.params, atol=1e-3)


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("weighted", [False, True])
def test_against_sklearn_quantile_regressor(tau, weighted):
    linear = pytest.importorskip("sklearn.linear_model")
    X, y = data(seed=5, n=500, p=3)
    s = np.random.default_rng(5).uniform(0.1, 3.0, size=500) if weighted else None
    est = linear.QuantileRegressor(quantile=tau, alpha=0.0, solver="highs")
    est.fit(X, y, sample_weight=s)
    problem = LAD(X, y, sample_weight=s, quantile=tau)
    theirs = problem.objective(est.coef_, est.intercept_)
    assert theirs == pytest.approx(pinball2(y - X @ est.coef_ - est.intercept_, tau, s))
    for strategy in ("full", "aid"):
        res = problem.solve(strategy)
        assert res.solution_status is SolutionStatus.OPTIMAL
        assert _rel(problem, res.objective, theirs) <= 1e-7


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "x"])
def test_quantile_out_of_range_is_refused(bad):
    X, y = data(n=20, p=2)
    with pytest.raises(ValueError, match="'quantile'") as info:
        LAD(X, y, quantile=bad)
    assert "(0, 1)" in str(info.value)
    with pytest.raises(DataError, match="'quantile' must be a float strictly between 0 and 1"):
        aid_lad(X, y, quantile=bad)


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize("form", ["primal", "dual"])
def test_export_round_trip(tmp_path, suffix, form):
    X, y = data(seed=6, n=60, p=3)
    problem = LAD(X, y, quantile=0.25)
    qp = problem.qp(form)
    path = tmp_path / f"q25{suffix}"
    write(problem, path, form=form)
    back = read(path)
    for field in ("c", "col_lo", "col_hi", "row_lo", "row_hi"):
        np.testing.assert_array_equal(getattr(back, field), getattr(qp, field))
    assert abs(back.A - qp.A).max() == 0
    ref = linprog_reference(X, y, 0.25)
    got = solve_qp(back, "highs").objective
    assert abs(abs(got) - ref) <= 1e-9 * problem.natural_scale()  # the dual is a max as min -y'u


@pytest.mark.parametrize("strategy", ["full", "aid"])
def test_zero_weight_is_a_removed_row(strategy):
    X, y = data(seed=7, n=400, p=3)
    s = np.random.default_rng(7).uniform(0.5, 1.5, size=400)
    s[::7] = 0.0
    keep = s > 0
    a = LAD(X, y, sample_weight=s, quantile=0.3).solve(strategy)
    b = LAD(X[keep], y[keep], sample_weight=s[keep], quantile=0.3).solve(strategy)
    assert a.solution_status is SolutionStatus.OPTIMAL
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(a.x, b.x, atol=1e-7)


@pytest.mark.parametrize("tau", [0.1, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_natural_scale_is_the_best_constant_fit(tau, fit_intercept):
    rng = np.random.default_rng(8)
    y = rng.standard_t(3, size=201)
    s = rng.uniform(0.2, 2.0, size=201)
    X = rng.normal(size=(201, 2))
    got = LAD(X, y, sample_weight=s, quantile=tau, fit_intercept=fit_intercept).natural_scale()
    if fit_intercept:  # a constant fit's optimum sits at a data point: brute force over them
        want = min(pinball2(y - m, tau, s) for m in y)
    else:
        want = pinball2(y, tau, s)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("tau", [0.1, 0.75])
def test_intercept_only_is_the_weighted_quantile(tau):
    rng = np.random.default_rng(9)
    y = rng.normal(size=301)
    s = rng.uniform(0.5, 2.0, size=301)
    X = np.zeros((301, 0))
    problem = LAD(X, y, sample_weight=s, quantile=tau)
    for strategy in ("full", "aid"):
        res = problem.solve(strategy)
        assert res.solution_status is SolutionStatus.OPTIMAL
        assert res.objective == pytest.approx(min(pinball2(y - m, tau, s) for m in y), rel=1e-9)


@pytest.mark.parametrize("tau", [0.1, 0.3, 0.9])
def test_dual_bound_is_valid_for_any_box_point(tau):
    """F = dual_bound(...) <= the optimum for random v in the tau box, not only feasible ones."""
    X, y = data(seed=10, n=200, p=3)
    A = np.column_stack([X, np.ones(200)])
    ref = linprog_reference(X, y, tau)
    box = (-2 * (1 - tau), 2 * tau)
    rng = np.random.default_rng(10)
    abs_y = float(np.abs(y).sum())
    for _ in range(20):
        v = rng.uniform(box[0] - 0.5, box[1] + 0.5, size=200)
        assert dual_bound(A, y, v, abs_y, box) <= ref * (1 + 1e-12)


@pytest.mark.parametrize("tau", [0.2, 0.85])
@pytest.mark.parametrize(
    "opts",
    [dict(warm_start=False), dict(sift=False, split="sign"), dict(init="kmeans"),
     dict(init="quantile", n_clusters=0.05)],
)
def test_aid_variants_certify(tau, opts):
    X, y = data(seed=11, n=800, p=3)
    problem = LAD(X, y, quantile=tau)
    res = aid_lad(X, y, quantile=tau, **{"n_clusters": 50, **opts})
    assert res.termination is TerminationCondition.CERTIFIED
    assert _rel(problem, res.objective, linprog_reference(X, y, tau)) <= 1e-7
    assert res.gap <= CERTIFICATE_TOL


def test_aggregated_model_uses_the_tau_box():
    """With each row its own cluster, the aggregated LP is the full dual: same optimum."""
    X, y = data(seed=12, n=80, p=2)
    h = build_aggregated_lad(X, y, np.arange(80), quantile=0.2)
    lp = h.getLp()
    np.testing.assert_array_equal(lp.col_lower_, np.full(80, -1.6))
    np.testing.assert_array_equal(lp.col_upper_, np.full(80, 0.4))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(
        linprog_reference(X, y, 0.2), rel=1e-9
    )


def test_default_is_lad():
    X, y = data(seed=13, n=200, p=2)
    a, b = LAD(X, y), LAD(X, y, quantile=0.5)
    assert a.quantile == 0.5
    r = y - X @ np.ones(2)
    assert a.objective(np.ones(2)) == b.objective(np.ones(2))
    assert a.objective(np.ones(2)) == pytest.approx(float(np.abs(r).sum()), rel=1e-14)
    np.testing.assert_array_equal(a.qp("dual").col_hi, np.ones(200))
    np.testing.assert_array_equal(a.qp("dual").col_lo, -np.ones(200))
