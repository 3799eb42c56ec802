"""Ridge's certificate from the strategy's own last pass against the independent one.

A sketched ridge strategy returns f(x) and ||grad f(x)|| of its returned x from its own last
pass over the data; the problem layer builds the bound f - ||grad f||^2 / (2 alpha) from them
(``verify="strategy"``, the default). ``verify="independent"`` recomputes both from x with the
problem's own products. The two must agree on every scaling of the data, with weights and an
intercept, and the data must be checked for finiteness once per solve, not twice.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import solvers.validation as validation
from instances.ridge import make_ridge
from optmodels.ridge import Ridge
from optmodels.strategies import run_strategy
from solvers.result import TerminationCondition

METHODS = [("pcg-rfd", {"m": 20, "tol": 1e-10, "max_iter": 300}),
           ("pcg-fd", {"m": 20, "max_iter": 300}), ("rfd", {"m": 20, "max_iter": 5}),
           ("fdrr", {"m": 20}),
           ("ihs-gaussian", {"m": 60, "max_iter": 3})]


@pytest.fixture(scope="module")
def data():
    A, b, _ = make_ridge(n=600, d=80, r=0.1, seed=11)
    w = np.random.default_rng(2).uniform(0.5, 2.0, A.shape[0])
    return A, b, w


@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
@pytest.mark.parametrize("method,opts", METHODS)
def test_strategy_certificate_equals_independent(data, method, opts, scale):
    A, b, w = data
    # alpha scales with A^2 so that the problem is the same one, rescaled (x* unchanged)
    prob = Ridge(A * scale, b * scale, alpha=3.0 * scale**2, sample_weight=w,
                 fit_intercept=True)
    own = run_strategy(prob, method, **opts)
    ind = run_strategy(prob, method, verify="independent", **opts)
    np.testing.assert_array_equal(own.x, ind.x)  # deterministic: the same run twice
    f0 = prob.natural_scale()
    assert own.objective == pytest.approx(ind.objective, rel=1e-10, abs=1e-12 * f0)
    assert own.bound == pytest.approx(ind.bound, rel=1e-10, abs=1e-12 * f0)
    assert own.gap == pytest.approx(ind.gap, rel=1e-6, abs=1e-13)
    assert own.termination is ind.termination and own.solution_status is ind.solution_status
    assert own.extra["relative_gradient"] == pytest.approx(
        prob.relative_gradient(own.x), rel=1e-6)
    # and against numpy: f and grad f of the working (weighted, centred) problem at x
    x = own.x
    sw = np.sqrt(w)
    Aw = (A * scale - np.average(A * scale, axis=0, weights=w)) * sw[:, None]
    bw = (b * scale - np.average(b * scale, weights=w)) * sw
    r = Aw @ x - bw
    f = 0.5 * r @ r + 0.5 * prob.alpha * x @ x
    g = Aw.T @ r + prob.alpha * x
    assert own.objective == pytest.approx(f, rel=1e-9)
    assert own.bound == pytest.approx(f - g @ g / (2 * prob.alpha), rel=1e-9, abs=1e-12 * f0)


def test_best_iterate_of_a_divergence_is_recomputed():
    """A diverged run returns its best iterate, whose gradient the strategy did not keep: the
    problem recomputes f and the bound at that x (no reuse of the last iterate's values)."""
    A, b, _ = make_ridge(n=200, d=30, r=0.3, seed=1)
    prob = Ridge(A, b, alpha=10.0)
    res = prob.solve("fd", m=10, max_iter=50)
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.extra["best_iteration"] < res.iterations
    assert "gradient_norm" not in res.extra
    g = prob.gradient(res.x)
    assert res.objective == pytest.approx(prob.objective(res.x), rel=1e-12)
    assert res.bound == pytest.approx(prob.objective(res.x) - g @ g / 20.0, rel=1e-12)
    assert not res.is_optimal


def test_data_checked_once_per_solve(data, monkeypatch):
    A, b, _ = data
    prob = Ridge(A, b, alpha=1.0)
    seen = []
    real = validation.check_finite

    def counting(arr, name):
        seen.append(arr.shape)
        real(arr, name)

    monkeypatch.setattr(validation, "check_finite", counting)
    res = prob.solve("pcg-rfd", m=20, tol=1e-10, max_iter=300)
    assert res.is_optimal
    assert A.shape not in seen  # checked when the problem was made, not again by the strategy


def test_pcg_default_iterations_reach_the_rule_and_the_warning_says_why():
    """pcg-*'s default max_iter lets CG reach its tol (it stopped at 10 before, with a gap of
    4e-15 reported as 'not certified'); a run stopped early with a small gap says so."""
    from sklearn.exceptions import ConvergenceWarning

    from optmodels.estimators import RidgeRegressor

    A, b, _ = make_ridge(n=3000, d=300, r=0.1, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = RidgeRegressor(alpha=1.0, strategy="pcg-rfd").fit(A, b)
    assert est.result_.is_optimal and est.result_.iterations > 10
    from sklearn.linear_model import Ridge as SkRidge

    ref = SkRidge(alpha=1.0, solver="cholesky").fit(A, b)  # intercept fitted, as here
    assert np.linalg.norm(est.coef_ - ref.coef_) <= 1e-8 * np.linalg.norm(ref.coef_)
    assert est.intercept_ == pytest.approx(ref.intercept_, rel=1e-8, abs=1e-10)
    with pytest.warns(ConvergenceWarning) as caught:
        short = RidgeRegressor(alpha=1.0, strategy="pcg-rfd",
                               strategy_options={"max_iter": 8}).fit(A, b)
    assert short.result_.gap <= 1e-6 and not short.result_.is_optimal
    text = str(caught[0].message)
    assert "within the certificate tolerance" in text and "Raise 'max_iter'" in text
