"""Strategy 'newton' of KLR (plain KLR, linear kernel: the logistic primal on explicit features)
against independent references: the monolithic exponential-cone solve, scikit-learn's
LogisticRegression (unpenalised intercept), the unpreconditioned Newton-CG (CG-iteration ratio
on an ill-conditioned instance); the exact logistic intercept; refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import LogisticRegression

from optmodels import KLR
from optmodels.estimators import KLRClassifier
from optmodels.strategies import run_strategy
from solvers.sketch.newton import logistic_intercept_shift, sketched_newton

PRECONDITIONERS = ["rfd", "fd", "diag", "none"]


def _data(n: int = 240, d: int = 6, seed: int = 0, shift: float = 0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + shift + 0.8 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _ill_conditioned(n: int = 400, d: int = 30, dup: int = 7, seed: int = 0):
    """Column scales log-spaced over 1e-3..1e3 (shuffled) and ``dup`` duplicated columns."""
    X, y = _data(n, d, seed, shift=0.3)
    scales = np.logspace(-3, 3, d)
    np.random.default_rng(seed + 1).shuffle(scales)
    X = X * scales
    return np.hstack([X, X[:, :dup]]), y


def _primal(X, y, c, w, b) -> float:
    """P(w, b) = 1/2 ||w||^2 + sum_i c_i log(1 + exp(-y_i (x_i'w + b))), written out."""
    return 0.5 * float(w @ w) + float(c @ np.logaddexp(0.0, -y * (X @ w + b)))


@pytest.fixture(scope="module")
def weighted():
    X, y = _data()
    s = np.random.default_rng(3).uniform(0.2, 3.0, size=y.size)
    s[:8] = 0.0  # rows of weight 0 leave the problem
    return X, y, s


@pytest.fixture(scope="module")
def full_weighted(weighted):
    X, y, s = weighted
    problem = KLR(X, y, C=2.0, kernel="linear", sample_weight=s)
    return problem, problem.solve().require_optimal()


@pytest.mark.parametrize("pre", PRECONDITIONERS)
def test_newton_equals_the_monolithic_solve_and_is_certified(full_weighted, pre):
    problem, full = full_weighted
    res = problem.solve("newton", preconditioner=pre)
    assert res.is_optimal and res.certified and res.gap <= 1e-10
    scale = problem.natural_scale()
    assert scale == pytest.approx(np.log(2.0) * problem.Ci.sum(), rel=1e-14)
    assert abs(res.objective - full.objective) <= 1e-8 * scale
    assert res.bound <= full.objective + 1e-12 * scale  # a lower bound on the dual optimum
    alpha = res.x
    assert alpha.shape == (problem.n,)
    assert np.all(alpha > 0) and np.all(alpha < problem.Ci)  # the open box of plain KLR
    assert abs(float(problem.y @ alpha)) <= 1e-12 * problem.Ci.sum()
    np.testing.assert_allclose(alpha, full.x, atol=1e-4 * problem.Ci.max())
    assert res.extra["b"] == pytest.approx(full.extra["b"], abs=1e-6)
    # strong duality: the primal of Newton's (w, b) is -min f
    w, b = res.extra["w"], res.extra["primal_intercept"]
    assert abs(_primal(problem.X, problem.y, problem.Ci, w, b) + full.objective) <= 1e-8 * scale


def test_independent_verification_recomputes_the_same_certificate(full_weighted):
    problem, _ = full_weighted
    own = run_strategy(problem, "newton")
    ind = run_strategy(problem, "newton", verify="independent")
    assert ind.extra["objective_source"] == "toolkit" and ind.certified
    assert ind.objective == pytest.approx(own.objective, rel=1e-13)
    assert ind.bound == pytest.approx(own.bound, rel=1e-13)


def test_newton_matches_logistic_regression_with_sample_weights(weighted):
    """scikit-learn minimises 1/2 ||w||^2 + C sum_i s_i log(1 + exp(-y_i (x_i'w + b))) with b
    unpenalised (lbfgs / newton-cg): the same problem with C_i = C s_i."""
    X, y, s = weighted
    C = 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=C, solver="newton-cg", tol=1e-14, max_iter=10_000).fit(
            X, y, sample_weight=s)
    res = KLR(X, y, C=C, kernel="linear", sample_weight=s).solve("newton")
    assert res.certified
    w, b = res.extra["w"], res.extra["primal_intercept"]
    np.testing.assert_allclose(w, ref.coef_.ravel(), atol=1e-6)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-6)
    keep = s > 0
    # the dual point: w(alpha) = sum_i alpha_i y_i x_i = w - grad_w P(w, b) (Newton stops at
    # ||grad||^2 / (2 scale) <= 1e-14, so w(alpha) is within ||grad|| ~ 1e-6 of w)
    w_alpha = X[keep].T @ (res.x * y[keep])
    assert np.linalg.norm(w_alpha - w) <= 1.001 * res.extra["grad_norm"] + 1e-12
    np.testing.assert_allclose(w_alpha, ref.coef_.ravel(), atol=1e-5)
    f_ref = _primal(X, y, C * s, ref.coef_.ravel(), ref.intercept_[0])
    assert _primal(X, y, C * s, w, b) <= f_ref * (1 + 1e-12)
    assert res.extra["primal_objective"] == pytest.approx(f_ref, rel=1e-10)


def test_estimator_with_strategy_newton_matches_logistic_regression(weighted):
    X, y, s = weighted
    est = KLRClassifier(C=0.7, kernel="linear", strategy="newton").fit(X, y, sample_weight=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=0.7, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=s)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    assert est.result_.certified and est.result_.strategy == "newton"


def test_explicit_feature_maps_equal_the_monolithic_solve():
    """Random Fourier features and a Nystroem map, applied by the user: plain KLR with the linear
    kernel on the features, Newton = the exponential-cone solve."""
    X, y = _data(200, 3, seed=4)
    maps = [RBFSampler(gamma=0.5, n_components=40, random_state=0),
            Nystroem(gamma=0.5, n_components=30, random_state=0)]
    for fmap in maps:
        Z = fmap.fit_transform(X)
        problem = KLR(Z, y, C=5.0, kernel="linear")
        res, full = problem.solve("newton"), problem.solve().require_optimal()
        assert res.certified
        assert abs(res.objective - full.objective) <= 1e-8 * problem.natural_scale()


@pytest.fixture(scope="module")
def ill():
    return _ill_conditioned()


@pytest.mark.parametrize("C, ratio", [(1.0, 4.0), (1e4, 10.0)])
def test_sketch_cuts_cg_iterations_on_ill_conditioned_features(ill, C, ratio):
    """Feature scales 1e-3..1e3 and duplicated columns: the RFD preconditioner needs several
    times fewer CG iterations than plain CG, and both runs are certified at the same optimum."""
    X, y = ill
    problem = KLR(X, y, C=C, kernel="linear")
    plain = problem.solve("newton", preconditioner="none", cg_max_iter=20_000, max_iter=300)
    fast = problem.solve("newton", preconditioner="rfd", m=8)
    assert plain.certified and fast.certified
    scale = problem.natural_scale()
    assert abs(fast.objective - plain.objective) <= 1e-8 * scale
    # each run's bound is below the other's dual value (a bound on min f, not just on its own)
    assert fast.bound <= plain.objective + 1e-12 * scale
    assert plain.bound <= fast.objective + 1e-12 * scale
    measured = plain.extra["total_cg"] / fast.extra["total_cg"]
    assert measured >= ratio, (plain.extra["cg_iterations"], fast.extra["cg_iterations"])
    assert fast.extra["n_sketches"] >= 1


def test_logistic_intercept_is_minimised_exactly():
    """logistic_intercept_shift against its optimality condition sum_i c_i y_i sigma(-t_i) = 0
    and a grid, including margins of 1e3 where the curvature underflows."""
    rng = np.random.default_rng(11)
    for k in range(60):
        n = int(rng.integers(2, 50))
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
        z = (3.0 if k % 3 else 1e3) * rng.normal(size=n)
        c = rng.uniform(0.1, 5.0, size=n)
        delta = logistic_intercept_shift(z, y, c)

        def phi(t, z=z, y=y, c=c):
            return float(c @ np.logaddexp(0.0, -(z + y * t)))

        grid = delta + np.linspace(-1e-4, 1e-4, 41) * max(1.0, abs(delta))
        assert phi(delta) <= min(phi(t) for t in grid) + 1e-12 * c.sum()
        if k % 3:  # moderate margins: the slope vanishes at delta
            s = 1.0 / (1.0 + np.exp(z + y * delta))
            assert abs(float(c @ (y * s))) <= 1e-10 * c.sum()


def test_sketched_newton_logistic_free_intercept_has_zero_intercept_gradient(weighted):
    X, y, s = weighted
    res = sketched_newton(X, y, 2.0, loss="logistic", sample_weight=s, penalize_intercept=False)
    assert res.is_optimal
    w, b = res.x, res.extra["intercept"]
    t = y * (X @ w + b)
    slope = float((2.0 * s) @ (y / (1.0 + np.exp(t))))  # -d/db of the loss
    assert abs(slope) <= 1e-10 * 2.0 * s.sum()
    with pytest.raises(ValueError, match="only one class has positive weight"):
        sketched_newton(X, y, loss="logistic", sample_weight=(y > 0).astype(float),
                        penalize_intercept=False)


@pytest.mark.parametrize("params, match", [
    ({"kernel": "rbf"}, r"needs kernel='linear'; this problem has kernel='rbf'\. Use strategy "
                        r"'smo', 'block' or 'full'"),
    ({"kernel": "poly"}, "RBFSampler or Nystroem"),
    ({"kernel": "linear", "lam": 0.5}, r"plain KLR \(lam=0, bound_tol=None\); this problem has "
                                       r"lam=0\.5"),
    ({"kernel": "linear", "lam": 0.5, "bound_tol": 0.01}, "Use strategy 'smo', 'block' or "
                                                          "'full' for S-KLR"),
    ({"kernel": "linear", "bound_tol": 0.01}, "bound_tol=0.01"),
])
def test_other_klr_problems_are_refused_naming_the_parameter(params, match):
    X, y = _data(40, 3)
    with pytest.raises(ValueError, match=match):
        KLR(X, y, **params).solve("newton")


def test_estimator_refuses_a_nonlinear_kernel_with_newton():
    X, y = _data(40, 3)
    with pytest.raises(ValueError, match="needs kernel='linear'"):
        KLRClassifier(strategy="newton").fit(X, y)


def test_bad_options_are_refused_by_the_table():
    X, y = _data(40, 3)
    problem = KLR(X, y, kernel="linear")
    with pytest.raises(ValueError, match="'preconditioner' option of strategy 'newton' of klr"):
        problem.solve("newton", preconditioner="cholesky")
    with pytest.raises(ValueError, match="Unknown option"):
        problem.solve("newton", loss="squared_hinge")  # the problem fixes the loss
    res = problem.solve("newton", preconditioner="none")  # the string 'none' reads as None
    assert res.certified and res.extra["total_cg"] > 0
