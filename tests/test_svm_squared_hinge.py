"""The squared-hinge SVM (SVM(loss="squared_hinge")): its QP against scikit-learn's LinearSVC, the
dual bound, the Newton-CG strategy against the full solve, export round trips and refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from optmodels.export import read, write
from optmodels.strategies import run_strategy
from optmodels.svm import SVM
from solvers import options
from solvers.backend import solve_qp
from solvers.sketch import newton
from solvers.sketch.newton import intercept_shift, sketched_newton

LINEARSVC_SCALING = 1e4  # LinearSVC's b penalty b^2 / (2 B^2): below 1e-8 of the scale here


def _data(n: int = 300, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.4 + 0.7 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _sq_objective(X, y, c, w, b) -> float:
    """1/2 ||w||^2 + sum_i c_i max(0, 1 - y_i (x_i'w + b))^2, written out independently."""
    return 0.5 * w @ w + float(c @ np.maximum(0.0, 1.0 - y * (X @ w + b)) ** 2)


def _linear_svc(X, y, C, s=None) -> LinearSVC:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at tol=1e-12 on some versions
        return LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, max_iter=100_000,
                         intercept_scaling=LINEARSVC_SCALING).fit(X, y, sample_weight=s)


@pytest.fixture(scope="module")
def weighted():
    X, y = _data()
    s = np.random.default_rng(5).uniform(0.2, 3.0, size=y.size)
    s[:10] = 0.0  # rows of weight 0 leave the problem
    return X, y, s


@pytest.mark.parametrize("solver", ["clarabel", "highs"])
def test_full_solve_matches_linear_svc(weighted, solver):
    X, y, s = weighted
    C = 2.0
    problem = SVM(X, y, C=C, loss="squared_hinge", sample_weight=s)
    res = problem.solve(solver=solver)
    assert res.is_optimal and res.certified
    ref = _linear_svc(X, y, C, s)
    f_ref = _sq_objective(X, y, C * s, ref.coef_.ravel(), ref.intercept_[0])
    f_res = _sq_objective(X, y, C * s, res.x, res.extra["b"])
    assert abs(f_res - f_ref) / f_ref < 1e-7
    assert abs(res.objective - f_res) <= 1e-12 * f_res  # the problem's P is the same function
    assert problem.natural_scale() == pytest.approx(C * s.sum(), rel=1e-14)
    np.testing.assert_allclose(res.x, ref.coef_.ravel(), rtol=1e-4, atol=1e-5)


def test_dual_bound_is_below_every_primal_value_and_tight_at_the_optimum(weighted):
    """Weak duality checked numerically: D(alpha(w, b)) <= P(w', b') for random points, and the
    dual of the optimum equals it (the sign of the alpha^2 / (4 C) term matters for both)."""
    X, y, s = weighted
    problem = SVM(X, y, C=0.5, loss="squared_hinge", sample_weight=s)
    opt = problem.solve()
    rng = np.random.default_rng(7)
    for _ in range(20):
        w, b = rng.normal(size=X.shape[1]), float(rng.normal())
        alpha = problem.squared_hinge_alpha(w, b)
        assert abs(float(problem.y @ alpha)) <= 1e-9 * alpha.sum()
        assert np.all(alpha >= 0) and np.all(alpha[s == 0] == 0)
        assert problem.dual_objective(alpha) <= opt.objective * (1 + 1e-12)
    alpha_opt = problem.squared_hinge_alpha(opt.x, opt.extra["b"])
    assert (opt.objective - problem.dual_objective(alpha_opt)) / problem.natural_scale() < 1e-8
    flipped = problem.dual_objective(alpha_opt) + 2 * float(
        alpha_opt[s > 0] ** 2 @ (1 / (4 * problem.box[s > 0])))
    assert flipped > opt.objective + 1e-3  # the other sign would not be a lower bound


@pytest.mark.parametrize("pre", ["rfd", "diag", "none"])
def test_newton_equals_the_full_solve_and_is_certified(weighted, pre):
    X, y, s = weighted
    problem = SVM(X, y, C=2.0, loss="squared_hinge", sample_weight=s)
    full = problem.solve()
    res = problem.solve("newton", preconditioner=pre)
    assert res.is_optimal and res.certified and res.strategy == "newton"
    assert abs(res.objective - full.objective) / problem.natural_scale() < 1e-8
    assert res.bound <= full.objective + 1e-9 * problem.natural_scale()
    again = run_strategy(problem, "newton", verify="independent", preconditioner=pre)
    assert again.certified and abs(again.objective - res.objective) <= 1e-12 * res.objective
    np.testing.assert_allclose(problem.predict(res, X), problem.predict(full, X))


def test_class_weight_equals_the_sample_weight_it_implies():
    X, y = _data(200, 5, seed=3)
    by_class = SVM(X, y, loss="squared_hinge", class_weight={1: 3.0, -1: 0.5}).solve("newton")
    s = np.where(y > 0, 3.0, 0.5)
    by_row = SVM(X, y, loss="squared_hinge", sample_weight=s).solve()
    assert by_class.certified
    assert abs(by_class.objective - by_row.objective) / by_row.objective < 1e-8


def test_ill_conditioned_instance_is_certified_by_newton():
    """Column scales 10^u, u uniform on [-3, 3] (both ends present), 5 columns repeated."""
    X, y = _data(1000, 30, seed=1)
    exponents = np.random.default_rng(2).uniform(-3.0, 3.0, size=30)
    exponents[:2] = (-3.0, 3.0)
    X = np.column_stack([X * 10.0**exponents, X[:, 25:] * 10.0**exponents[25:]])
    problem = SVM(X, y, C=1e4, loss="squared_hinge")
    res = problem.solve("newton")
    assert res.is_optimal and res.certified
    full = problem.solve(solver="highs")
    assert full.certified
    assert abs(res.objective - full.objective) / problem.natural_scale() < 1e-8


def test_unregularised_intercept_is_minimised_exactly():
    """intercept_shift against a fine grid and the optimality condition y'alpha = 0."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
        z, c = 3.0 * rng.normal(size=n), rng.uniform(0.1, 5.0, size=n)
        delta = intercept_shift(z, y, c)
        h = np.maximum(0.0, 1.0 - z - y * delta)
        assert abs(float(c @ (y * h))) <= 1e-10 * c.sum()
        grid = delta + np.linspace(-1e-3, 1e-3, 41)
        phi = [float(c @ np.maximum(0.0, 1.0 - z - y * t) ** 2) for t in grid]
        assert float(c @ h**2) <= min(phi) + 1e-12


def test_sketched_newton_free_intercept_refusals():
    X, y = _data(50, 3)
    for loss in ("squared_hinge", "logistic"):
        with pytest.raises(ValueError, match="only one class has positive weight"):
            sketched_newton(X, y, loss=loss, sample_weight=(y > 0).astype(float),
                            penalize_intercept=False)


def test_hinge_default_is_unchanged(weighted):
    X, y, s = weighted
    default, hinge = SVM(X, y, sample_weight=s), SVM(X, y, sample_weight=s, loss="hinge")
    assert default.loss == "hinge" and default.qp().P.diagonal()[X.shape[1] + 1:].sum() == 0
    a, b = default.solve(), hinge.solve()
    assert a.certified and a.objective == pytest.approx(b.objective, rel=1e-12)
    w, b0 = a.x, a.extra["b"]
    hinge_value = 0.5 * w @ w + float(default.box @ np.maximum(0, 1 - y * (X @ w + b0)))
    assert a.objective == pytest.approx(hinge_value, rel=1e-12)
    smo = default.solve("smo")
    assert smo.certified and abs(smo.objective - a.objective) / default.natural_scale() < 1e-6


def test_refusals_name_the_fix():
    X, y = _data(40, 3)
    with pytest.raises(ValueError, match="loss='squared_hinge' needs kernel='linear'"):
        SVM(X, y, kernel="rbf", loss="squared_hinge")
    with pytest.raises(ValueError, match="The 'loss' parameter of SVM must be one of"):
        SVM(X, y, loss="hinge2")
    problem = SVM(X, y, loss="squared_hinge")
    with pytest.raises(ValueError, match="primal form only"):
        problem.qp("dual")
    for strategy in ("aid", "smo", "block"):
        with pytest.raises(ValueError, match=f"Strategy '{strategy}' of svm solves loss='hinge'"):
            problem.solve(strategy)
    with pytest.raises(ValueError, match="Strategy 'newton' of svm solves loss='squared_hinge'"):
        SVM(X, y).solve("newton")


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_export_round_trip(tmp_path, suffix, weighted):
    X, y, s = weighted
    problem = SVM(X[:60], y[:60], C=3.0, loss="squared_hinge", sample_weight=s[:60])
    qp = problem.qp()
    path = tmp_path / f"sq{suffix}"
    write(problem, path)
    back = read(path)
    assert (back.n_cols, back.n_rows) == (qp.n_cols, qp.n_rows)
    assert abs(back.P - qp.P).max() <= 1e-15 * abs(qp.P).max()
    ref = problem.solve().objective
    assert abs(solve_qp(back, "highs").objective - ref) <= 1e-8 * problem.natural_scale()


def test_inlined_newton_constants_equal_the_newton_module():
    assert options.NEWTON_PRECONDITIONERS == tuple(newton.PRECONDITIONERS)
    assert options.NEWTON_REWEIGHTS == newton.REWEIGHTS
