"""Linear constraints and bounds on the coefficients (issue 33): validated from scipy's types,
solved by the full solve with the toolkit's certificate, equal to CVXPY + Clarabel on the same
model (also on data rescaled by 1e-10 and 1e10), infeasible only with a checked Farkas
certificate, refused with a reason by the strategies that would drop them."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD, SVM, Ridge
from optmodels.strategies import accepted
from solvers.errors import DataError
from solvers.result import TerminationCondition


@pytest.fixture(scope="module")
def tracking():
    """An index-tracking instance: y is a noisy mix of six assets' returns."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6))
    y = X @ np.array([0.3, 0.2, 0.1, 0.25, 0.15, 0.0]) + 0.1 * rng.laplace(size=1500)
    return X, y


def _cvxpy_lad(X, y, tau, cons_fn, intercept):
    """The same weighted check-loss model in CVXPY (2x the pinball loss, as LAD's E)."""
    b = cp.Variable(X.shape[1])
    b0 = cp.Variable() if intercept else 0.0
    r = y - X @ b - b0
    obj = cp.sum(2 * tau * cp.pos(r) + 2 * (1 - tau) * cp.neg(r))
    problem = cp.Problem(cp.Minimize(obj), cons_fn(b, b0))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return problem.value, b.value


def test_index_tracking_equals_cvxpy(tracking):
    X, y = tracking
    prob = LAD(X, y, fit_intercept=False, constraints=LinearConstraint(np.ones((1, 6)), 1, 1),
               bounds=Bounds(0, np.inf))
    res = prob.solve()
    ref, b = _cvxpy_lad(X, y, 0.5, lambda b, b0: [b >= 0, cp.sum(b) == 1], False)
    assert res.termination is TerminationCondition.OPTIMAL, res.raw_status
    assert res.objective == pytest.approx(ref, rel=1e-8)
    assert res.x.sum() == pytest.approx(1.0, abs=1e-9) and res.x.min() >= -1e-9
    np.testing.assert_allclose(res.x, b, atol=1e-5)
    # the constraint binds: the unconstrained optimum is lower
    assert LAD(X, y, fit_intercept=False).solve().objective < res.objective


@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e10])
def test_quantile_with_sign_constraints_and_a_bounded_intercept(tracking, scale):
    """tau = 0.3, beta_2 <= beta_1 (monotone), beta >= 0, intercept <= -0.05 scale: on X and
    y multiplied by ``scale`` (beta unchanged, the intercept and E scale with y)."""
    X, y = tracking
    Xs, ys = X * scale, y * scale
    G = np.zeros((1, 6))
    G[0, 1], G[0, 0] = 1.0, -1.0
    prob = LAD(Xs, ys, quantile=0.3, constraints=LinearConstraint(G, -np.inf, 0.0),
               bounds=Bounds(np.r_[np.zeros(6), -np.inf], np.r_[np.full(6, np.inf),
                                                               -0.05 * scale]))
    res = prob.solve()
    ref, b = _cvxpy_lad(X, y, 0.3, lambda b, b0: [b[1] <= b[0], b >= 0, b0 <= -0.05], True)
    assert res.termination is TerminationCondition.OPTIMAL, res.raw_status
    assert res.objective / scale == pytest.approx(ref, rel=1e-7)
    assert res.extra["intercept"] / scale <= -0.05 + 1e-9
    np.testing.assert_allclose(res.x, b, atol=1e-4)


def test_infeasible_constraints_are_reported_with_a_checked_certificate(tracking):
    X, y = tracking
    prob = LAD(X, y, bounds=Bounds(0, np.inf),
               constraints=LinearConstraint(np.ones((1, 6)), -np.inf, -1.0))
    res = prob.solve()
    assert res.termination is TerminationCondition.INFEASIBLE and res.x is None
    assert "certificate checked" in res.raw_status


@pytest.mark.parametrize("tau", [0.5, 0.2])
def test_aid_certifies_the_constrained_model_at_the_full_optimum(tracking, tau):
    """AID carries the constraints into the aggregated LP: certified, at the full solve's
    optimum (and CVXPY's), with coefficients that satisfy the constraints; the aggregation was
    used (fewer clusters than rows)."""
    X, y = tracking
    X, y = np.tile(X, (4, 1)), np.tile(y, 4) + np.repeat(np.arange(4) * 0.01, 1500)
    cons = [LinearConstraint(np.ones((1, 6)), 1, 1)]
    prob = LAD(X, y, quantile=tau, constraints=cons, bounds=Bounds(0, np.inf))
    full, aid = prob.solve(), prob.solve("aid")
    ref, _ = _cvxpy_lad(X, y, tau, lambda b, b0: [b >= 0, cp.sum(b) == 1], True)
    assert aid.termination is TerminationCondition.CERTIFIED, aid.raw_status
    assert aid.extra["n_clusters_final"] < X.shape[0] / 2
    scale = prob.natural_scale()
    assert abs(aid.objective - full.objective) <= 1e-9 * scale
    assert abs(aid.objective - ref) <= 1e-7 * scale
    assert aid.bound <= full.objective + 1e-9 * scale  # F bounds the constrained optimum
    assert aid.x.min() >= -1e-12 and aid.x.sum() == pytest.approx(1.0, abs=1e-12)
    # the unconstrained AID optimum is lower: the constraints were not dropped
    assert LAD(X, y, quantile=tau).solve("aid").objective < aid.objective - 1e-6 * scale


def test_aid_stops_at_once_on_infeasible_constraints(tracking):
    X, y = tracking
    prob = LAD(X, y, bounds=Bounds(0, np.inf),
               constraints=LinearConstraint(np.ones((1, 6)), -np.inf, -1.0))
    res = prob.solve("aid")
    assert res.termination is TerminationCondition.INFEASIBLE and res.x is None
    assert res.iterations == 0 and "certificate checked" in res.raw_status


def test_every_lad_strategy_accepts_constraints(tracking):
    X, y = tracking
    assert set(accepted(LAD(X, y, bounds=Bounds(0, np.inf))).values()) == {None}


def test_pyomo_model_carries_the_constraints(tracking):
    X, y = tracking
    prob = LAD(X[:50], y[:50], constraints=LinearConstraint(np.ones((1, 6)), 1, 1))
    m = prob.pyomo_model("primal")
    assert len(m.coef_constraint) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"constraints": "beta >= 0"}, "must be a scipy.optimize.LinearConstraint"),
    ({"constraints": LinearConstraint(np.ones((1, 4)), 0, 1)}, "needs 6 \\(beta\\) or 7"),
    ({"constraints": LinearConstraint(np.ones((1, 6)), np.nan, 1)}, "contains NaN"),
    ({"constraints": LinearConstraint(np.ones((1, 6)), 2, 1)}, "exceeds"),
    ({"constraints": LinearConstraint(np.full((1, 6), np.inf), 0, 1)}, "constraints.A"),
    ({"bounds": Bounds(np.zeros(3), 1)}, "'bounds' of LAD has 3 entries"),
    ({"bounds": Bounds(1, 0)}, "exceeds"),
    ({"bounds": (0, 1)}, "must be a scipy.optimize.Bounds"),
])
def test_bad_constraints_name_the_argument(tracking, kwargs, match):
    X, y = tracking
    with pytest.raises(DataError, match=match):
        LAD(X, y, **kwargs)


def test_a_constraint_on_beta_alone_gets_a_zero_intercept_column(tracking):
    X, y = tracking
    prob = LAD(X, y, constraints=[LinearConstraint(np.ones((1, 6)), 1, 1),
                                  LinearConstraint(np.r_[np.zeros(6), 1.0][None], 0, 0)])
    cc = prob.coef_constraints
    assert cc.G.shape == (2, 7) and cc.G[0, 6] == 0.0 and cc.G[1, 6] == 1.0
    res = prob.solve()
    assert res.extra["intercept"] == pytest.approx(0.0, abs=1e-9)
    assert res.x.sum() == pytest.approx(1.0, abs=1e-9)


# ---------------------------------------------------------------------------- SVM and ridge
@pytest.fixture(scope="module")
def fair():
    """A classification instance with a 'sensitive' feature z (column 4): FairSVM's bound on
    the covariance between z and the decision values, cov(z, w'x) = c'w."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = np.where(X @ np.array([1, -1, 0.5, 0, 2]) + 0.5 * rng.normal(size=400) > 0, 1, -1)
    c = (X[:, 4] - X[:, 4].mean()) @ X / X.shape[0]
    return X, y, c


def _cvxpy_svm(X, y, loss, c, cov_bound, b_bound):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    m = cp.multiply(y, X @ w + b)
    err = cp.sum(cp.pos(1 - m)) if loss == "hinge" else cp.sum(cp.square(cp.pos(1 - m)))
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + err),
                         [cp.abs(c @ w) <= cov_bound, cp.abs(b) <= b_bound])
    return problem.solve(solver="CLARABEL")


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e10])
def test_fair_svm_equals_cvxpy(fair, loss, scale):
    """The covariance bound |c'w| <= 0.1 and |b| <= 0.2, on X multiplied by ``scale`` with
    C / scale^2 and the covariance side 0.1 / scale: the same model (w' = w / scale, P' =
    P / scale^2). Scale 1 is compared with CVXPY; every scale gives the same decision
    values."""
    X, y, c = fair
    ref = _cvxpy_svm(X, y, loss, c, 0.1, 0.2)
    prob = SVM(X * scale, y, C=1.0 / scale ** 2, loss=loss,
               constraints=LinearConstraint(c[None], -0.1 / scale, 0.1 / scale),
               bounds=Bounds(np.r_[np.full(5, -np.inf), -0.2], np.r_[np.full(5, np.inf), 0.2]))
    res = prob.solve()
    if scale == 1.0:
        assert res.termination is TerminationCondition.OPTIMAL, res.raw_status
        assert res.objective == pytest.approx(ref, rel=1e-7)
        assert abs(c @ res.x) <= 0.1 * (1 + 1e-8) and abs(res.extra["b"]) <= 0.2 * (1 + 1e-8)
        # the bound binds: the unconstrained optimum is lower
        assert SVM(X, y, C=1.0, loss=loss).solve().objective < res.objective - 1e-6 * ref
    else:  # the same model: the same decision values as at scale 1
        base = SVM(X, y, C=1.0, loss=loss, constraints=LinearConstraint(c[None], -0.1, 0.1),
                   bounds=Bounds(np.r_[np.full(5, -np.inf), -0.2],
                                 np.r_[np.full(5, np.inf), 0.2])).solve()
        assert res.termination is base.termination, res.raw_status
        f = (X * scale) @ res.x + res.extra["b"]
        np.testing.assert_allclose(f, X @ base.x + base.extra["b"], atol=1e-6)
    refused = accepted(prob)
    expected = ("smo", "block", "ipm") if loss == "hinge" else ("newton",)
    for strategy in expected:
        assert "does not take constraints" in refused[strategy], strategy


def test_svm_constraints_need_the_linear_kernel(fair):
    X, y, c = fair
    with pytest.raises(DataError, match="kernel='linear'"):
        SVM(X, y, kernel="rbf", bounds=Bounds(0, 1))


@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e10])
def test_bounded_ridge_equals_cvxpy_at_every_scale(scale):
    """Weighted ridge with an intercept, |x_j| <= 0.5 and sum x <= 1.5, on A, b multiplied by
    ``scale`` and alpha by scale^2 (the same model, x unchanged): equal to CVXPY + Clarabel on
    the unscaled data, the same x at every scale."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(300, 6)) + 2.0
    b = A @ rng.normal(size=6) + 3 + rng.normal(size=300)
    s = rng.uniform(0.5, 2, 300)
    x, c = cp.Variable(6), cp.Variable()
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum(cp.multiply(s, cp.square(b - A @ x - c)))
                                 + 2.5 * cp.sum_squares(x)),
                     [x >= -0.5, x <= 0.5, cp.sum(x) <= 1.5]).solve(solver="CLARABEL")
    prob = Ridge(A * scale, b * scale, alpha=5.0 * scale ** 2, sample_weight=s,
                 fit_intercept=True, bounds=Bounds(-0.5, 0.5),
                 constraints=LinearConstraint(np.ones((1, 6)), -np.inf, 1.5))
    res = prob.solve()
    assert res.termination is TerminationCondition.OPTIMAL, res.raw_status
    assert res.objective / scale ** 2 == pytest.approx(ref, rel=1e-7)
    np.testing.assert_allclose(res.x, x.value, atol=1e-5)
    assert res.extra["intercept"] / scale == pytest.approx(c.value, abs=1e-4)
    assert res.solution_gap <= 1e-3
    assert "does not take constraints" in accepted(prob)["pcg-rfd"]


def test_ridge_refuses_constraints_on_its_eliminated_intercept():
    rng = np.random.default_rng(2)
    A, b = rng.normal(size=(50, 3)), rng.normal(size=50)
    with pytest.raises(DataError, match="intercept is eliminated by centring"):
        Ridge(A, b, fit_intercept=True, bounds=Bounds([-1, -1, -1, 0], 1))
    res = Ridge(np.c_[A, np.ones(50)], b, fit_intercept=False,
                bounds=Bounds([-np.inf] * 3 + [0.5], np.inf)).solve()
    assert res.is_optimal and res.x[3] >= 0.5 - 1e-9


def test_estimators_take_constraints_and_clone(tracking):
    from sklearn.base import clone

    from optmodels.estimators import LADRegressor, RidgeRegressor

    X, y = tracking
    cons, bnds = LinearConstraint(np.ones((1, 6)), 1, 1), Bounds(0, np.inf)
    est = LADRegressor(fit_intercept=False, constraints=cons, bounds=bnds).fit(X, y)
    ref = LAD(X, y, fit_intercept=False, constraints=cons, bounds=bnds).solve()
    np.testing.assert_allclose(est.coef_, ref.x, atol=1e-9)
    assert est.coef_.sum() == pytest.approx(1.0, abs=1e-9)
    assert est.strategy_ == "full"  # 'auto' below 2,000 rows
    twin = clone(est)
    assert twin.get_params()["constraints"] is not cons  # a deep copy, as sklearn's clone
    np.testing.assert_allclose(twin.fit(X, y).coef_, est.coef_, atol=1e-12)
    ridge = RidgeRegressor(alpha=1.0, bounds=Bounds(0, 0.2)).fit(X, y)
    assert ridge.coef_.max() <= 0.2 + 1e-9 and ridge.coef_.min() >= -1e-9
    with pytest.raises(DataError, match="does not take constraints"):
        RidgeRegressor(strategy="pcg-rfd", bounds=Bounds(0, 0.2)).fit(X, y)


def test_constraints_added_in_pyomo_are_decomposed():
    """The issue's case: beta0 <= -5 added to LAD's Pyomo model. solve_pyomo(m, strategy="aid")
    solves the extended model (not the problem's unconstrained self), at the full solve's
    optimum; a constraint on a per-row variable is refused with its name and the reason."""
    pyo = pytest.importorskip("pyomo.environ")
    from solvers.pyomo_lowering import solve_pyomo

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = X @ np.array([1.0, -2, 0.5, 0.3]) + 2 + rng.laplace(size=3000)
    lad = LAD(X, y)
    m = lad.pyomo_model("primal")
    m.cap = pyo.Constraint(expr=m.intercept[0] <= -5)
    m.beta[0].setlb(0)
    full = solve_pyomo(m)
    aid = solve_pyomo(m, strategy="aid")
    assert aid.termination is TerminationCondition.CERTIFIED, aid.raw_status
    assert aid.objective == pytest.approx(full.objective, rel=1e-9)
    assert aid.extra["intercept"] <= -5 + 1e-9 and aid.x[0] >= -1e-12
    assert lad.solve("aid").objective < aid.objective  # the problem itself stays unconstrained
    constrained = lad.constrained_by(m)
    assert constrained.coef_constraints.describe() == \
        "1 constraint row (0 equalities), bounds on 1 coefficient"
    bad = lad.pyomo_model("primal")
    bad.touch = pyo.Constraint(expr=bad.e_plus[3] <= 0.1)
    with pytest.raises(DataError, match="'touch' involves the per-row variable 'e_plus\\[3\\]'"):
        solve_pyomo(bad, strategy="aid")
    with pytest.raises(ValueError, match="needs a model built by a problem's pyomo_model"):
        solve_pyomo(pyo.ConcreteModel(), strategy="aid")
