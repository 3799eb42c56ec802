"""Ridge's certificate from the strategy's own last pass against the independent one.

A sketched ridge strategy returns f(x) and ||grad f(x)|| of its returned x from its own last
pass over the data; the problem layer builds the bound f - ||grad f||^2 / (2 alpha) from them
(``verify="strategy"``). ``verify="independent"`` recomputes both from x with the
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
    own = run_strategy(prob, method, verify="strategy", **opts)
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
    res = prob.solve("fd", m=10, max_iter=50, verify="strategy")
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


@pytest.mark.parametrize("scale", [1e-160, 1e-150, 1e-100, 1e100, 1e150])
@pytest.mark.parametrize("method", ["full", "pcg-rfd", "pcg-fd", "rfd", "fdrr"])
def test_extreme_scalings_are_solved_or_not_called_optimal(method, scale):
    """A, b scaled by s and alpha by s^2 is the same problem (x* unchanged). With A ~ 1e-100,
    numpy's norm of A'b (squares below 1e-308) was 0 and the sketches returned x = 0 as "the
    exact solution"; norms are now taken without underflow or overflow
    (:func:`solvers.result.stable_norm`). An optimal answer must be x*; at 1e-160 (products in
    float64's subnormal range) the answer need not be found, but is then not called optimal."""
    A, b, _ = make_ridge(n=1500, d=120, r=0.1, seed=3)
    xs = np.linalg.solve(A.T @ A + np.eye(120), A.T @ b)
    res = Ridge(A * scale, b * scale, alpha=scale**2).solve(method)
    err = np.linalg.norm(res.x - xs) / np.linalg.norm(xs)
    if res.is_optimal:
        assert err <= 1e-8
    if scale >= 1e-150:
        assert err <= 1e-8 and (res.is_optimal or method == "fdrr")
        # the float32 sketch of pcg-fd is taken of power-of-two rescaled rows: the same
        # preconditioner, so the same iterations as on the unscaled data
        assert res.iterations == Ridge(A, b, alpha=1.0).solve(method).iterations


@pytest.mark.parametrize("scale", [1e-100, 1e-30, 1e50, 1e100])
def test_float32_sketch_follows_the_scale_of_the_rows(scale):
    from solvers.sketch import FrequentDirections

    A, _, _ = make_ridge(n=700, d=60, r=0.1, seed=5)
    ref = FrequentDirections(20, robust=True, dtype="float32").fit(A, block_size=100)
    sk = FrequentDirections(20, robust=True, dtype="float32").fit(A * scale, block_size=100)
    assert np.all(np.isfinite(sk.sketch_))
    # the same quadratic form B'B up to float32 rounding (single rows of B near the shrinking
    # threshold are not stable; B'B is)
    G, G_ref = (sk.sketch_ / scale).T @ (sk.sketch_ / scale), ref.sketch_.T @ ref.sketch_
    assert np.linalg.norm(G - G_ref, 2) <= 1e-5 * np.linalg.norm(A, 2) ** 2
    # rho to float32 rounding of the scale ||A||_2^2 (as in test_sketch_fd), and FD's bound
    top = np.linalg.norm(A, 2) ** 2
    assert abs(sk.rho_ / scale**2 - ref.rho_) <= 1e-5 * top
    ev = np.linalg.eigvalsh(A.T @ A - G)
    assert ev.min() >= -1e-5 * top and ev.max() <= 2 * sk.rho_ / scale**2 + 1e-5 * top
    # a later block far larger than the first rescales the buffer instead of overflowing
    big = FrequentDirections(20, dtype="float32").partial_fit(A[:300]).partial_fit(A[300:] * 1e45)
    assert np.all(np.isfinite(big.sketch_)) and np.abs(big.sketch_).max() > 1e44


def test_stable_norm_against_exact_values():
    from solvers.result import stable_norm

    for v in (1e-200, 1e-160, 1.0, 1e160, 1e200):
        assert stable_norm(np.full(4, v)) == pytest.approx(2 * v, rel=1e-15)
        assert stable_norm(np.array([3 * v, -4 * v])) == pytest.approx(5 * v, rel=1e-15)
    assert stable_norm(np.zeros(3)) == 0.0 and stable_norm(np.zeros(0)) == 0.0
    assert stable_norm(np.array([1.0, np.inf])) == np.inf
    assert np.isnan(stable_norm(np.array([1.0, np.nan])))


def test_problem_solve_takes_verify(data):
    """``verify="independent"`` reaches ``Problem.solve`` (it was refused as an unknown strategy
    option there although the docs offer it): the same x and certificate as the strategy's
    own, recomputed; a bad value is refused naming the choices."""
    A, b, w = data
    prob = Ridge(A, b, alpha=3.0, sample_weight=w)
    own = prob.solve("pcg-rfd")
    ind = prob.solve("pcg-rfd", verify="independent")
    np.testing.assert_array_equal(own.x, ind.x)
    assert ind.certified and ind.objective == pytest.approx(own.objective, rel=1e-10)
    assert ind.bound == pytest.approx(own.bound, rel=1e-10)
    with pytest.raises(ValueError, match="verify must be one of auto, strategy, independent"):
        prob.solve("pcg-rfd", verify="yes")
