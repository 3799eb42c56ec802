"""Linear constraints and bounds on the coefficients (issue 33): validated from scipy's types,
solved by the full solve with the toolkit's certificate, equal to CVXPY + Clarabel on the same
model (also on data rescaled by 1e-10 and 1e10), infeasible only with a checked Farkas
certificate, refused with a reason by the strategies that would drop them."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD
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
