"""Constrained AID-LAD's two ways to solve the aggregated LP (solvers/aid/constrained.py): the
dual form kept in one HiGHS model between iterations (the default) and the primal form solved
cold (``warm_start=False``). Both certify the optimum of CVXPY + Clarabel on the same model,
also on data rescaled by 1e-10 and 1e10; the dual form's bound is the one the primal form's
check verifies, and a dual-form answer that fails the check is re-solved in primal form."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD
from solvers.aid import aid_lad
from solvers.aid.constrained import (
    ConstrainedDualLP,
    ConstrainedLadLP,
    multiplier_columns,
)
from solvers.aid.lad import constrained_subsample_fit
from solvers.constraints import CoefConstraints
from solvers.result import TerminationCondition

TAU = 0.3


@pytest.fixture(scope="module")
def data():
    """4,000 rows, 5 features; the constraints below bind at the optimum."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 5))
    y = X @ np.array([0.8, -0.4, 0.3, 0.5, -0.2]) + 1.0 + rng.laplace(size=4000)
    return X, y


def _constraints(scale: float) -> tuple[list[LinearConstraint], Bounds]:
    """Every kind of side: a monotone row (upper side only), a two-sided row, an equality
    row, lower and upper bounds, and an upper bound on the intercept (which scales with y)."""
    G = np.array([[-1.0, 1.0, 0.0, 0.0, 0.0, 0.0],   # beta_1 <= beta_0
                  [0.0, 0.0, 1.0, 1.0, 0.0, 0.0],    # 0.2 <= beta_2 + beta_3 <= 0.6
                  [0.0, 0.0, 0.0, 1.0, -1.0, 0.0]])  # beta_3 - beta_4 = 0.5
    rows = [LinearConstraint(G[:1], -np.inf, 0.0), LinearConstraint(G[1:2], 0.2, 0.6),
            LinearConstraint(G[2:], 0.5, 0.5)]
    bounds = Bounds([-np.inf, -0.1, 0.0, -np.inf, -np.inf, -np.inf],
                    [np.inf, np.inf, np.inf, 0.45, np.inf, 0.9 * scale])
    return rows, bounds


def _cvxpy(X, y):
    """CVXPY + Clarabel's optimum of the model on rows X, y: (value, beta, intercept)."""
    b, b0 = cp.Variable(5), cp.Variable()
    r = y - X @ b - b0
    cons = [b[1] <= b[0], b[2] + b[3] >= 0.2, b[2] + b[3] <= 0.6, b[3] - b[4] == 0.5,
            b[1] >= -0.1, b[2] >= 0, b[3] <= 0.45, b0 <= 0.9]
    prob = cp.Problem(cp.Minimize(cp.sum(2 * TAU * cp.pos(r) + 2 * (1 - TAU) * cp.neg(r))),
                      cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value, b.value, b0.value


def _cvxpy_value(X, y):
    return _cvxpy(X, y)[0]


@pytest.fixture(scope="module")
def reference(data):
    """CVXPY + Clarabel's optimum of the same model on the unscaled data."""
    return _cvxpy(*data)


def _aggregated(data):
    """The dual form of one aggregated LP (400 clusters of 10 consecutive rows), unsolved."""
    X, y = data
    rows, bounds = _constraints(1.0)
    cc = LAD(X, y, quantile=TAU, constraints=rows, bounds=bounds).coef_constraints
    SXa = np.column_stack([X, np.ones(4000)]).reshape(400, 10, 6).sum(axis=1)
    SY = y.reshape(400, 10).sum(axis=1)
    return ConstrainedDualLP(SXa, SY, (-2 * (1 - TAU), 2 * TAU), cc), SXa, SY, cc


@pytest.mark.parametrize("warm_start", [True, False])
@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e10])
def test_both_forms_certify_the_cvxpy_optimum(data, reference, warm_start, scale):
    X, y = data
    rows, bounds = _constraints(scale)
    prob = LAD(X * scale, y * scale, quantile=TAU, constraints=rows, bounds=bounds)
    res = prob.solve("aid", warm_start=warm_start)
    ref, b, b0 = reference
    nat = prob.natural_scale()
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert abs(res.objective - ref * scale) <= 1e-7 * nat
    assert res.bound <= ref * scale + 1e-9 * nat  # F bounds the constrained optimum
    assert res.extra["constraint_violation"] <= 1e-9
    np.testing.assert_allclose(res.x, b, atol=1e-4)
    assert res.extra["intercept"] / scale == pytest.approx(b0, abs=1e-4)
    assert res.extra["n_clusters_final"] < X.shape[0] / 2  # aggregation was used
    if warm_start:
        assert res.extra["lp_fallbacks"] == 0  # every bound came from the dual form
    # the constraints bind: the unconstrained optimum is lower
    assert LAD(X * scale, y * scale, quantile=TAU).solve().objective < res.objective - 1e-6 * nat


def test_the_dual_form_has_the_primal_forms_optimum(data):
    """One aggregated LP (first iteration) by both forms: the same verified bound F and the
    same objective at the returned coefficients."""
    X, y = data
    rows, bounds = _constraints(1.0)
    cc = LAD(X, y, quantile=TAU, constraints=rows, bounds=bounds).coef_constraints
    runs = [aid_lad(X, y, quantile=TAU, constraints=cc, max_iter=1, warm_start=w)
            for w in (True, False)]
    (dual, primal) = runs
    assert dual.bound == pytest.approx(primal.bound, rel=1e-9)
    assert dual.objective == pytest.approx(primal.objective, rel=1e-6)
    assert dual.extra["lp_fallbacks"] == 0 and "lp_fallbacks" not in primal.extra


def test_multiplier_columns_price_each_finite_side():
    """The dual form's columns: one per finite side, a free one per equality; their costs are
    -hi (upper side) and lo (lower side), their entries -G_j and +G_j."""
    cc = CoefConstraints(G=np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 1.0]]),
                         lo=np.array([-np.inf, -1.0, 3.0]), hi=np.array([4.0, 2.0, 3.0]),
                         lb=np.array([0.0, -np.inf]), ub=np.array([np.inf, np.inf]))
    A, cost, lower, row, sign = multiplier_columns(cc)
    sides = sorted(zip(row.tolist(), sign.tolist(), cost.tolist(), lower.tolist(),
                       strict=True))
    assert sides == [(0, -1.0, -4.0, 0.0), (1, -1.0, -2.0, 0.0), (1, 1.0, -1.0, 0.0),
                     (2, -1.0, -3.0, -np.inf), (3, 1.0, 0.0, 0.0)]
    rows = np.vstack([cc.G, np.eye(2)])
    np.testing.assert_array_equal(A, (rows[row] * sign[:, None]).T)


def test_a_dual_answer_that_fails_the_check_is_solved_again_in_primal_form(data, reference,
                                                                          monkeypatch):
    """With the check failing every time, each iteration falls back to the cold primal form,
    and the result is the same certified optimum."""
    monkeypatch.setattr(ConstrainedDualLP, "_verified", lambda self, *a: None)
    X, y = data
    rows, bounds = _constraints(1.0)
    res = LAD(X, y, quantile=TAU, constraints=rows, bounds=bounds).solve("aid")
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert res.extra["lp_fallbacks"] == res.iterations
    assert res.objective == pytest.approx(reference[0], rel=1e-8)


def test_the_check_rejects_a_dual_point_that_is_not_dual_feasible(data):
    """The verification is real: a multiplier pushed off its optimum (the equality row's, by
    10 %) leaves a reduced cost on a free coefficient, and the answer is refused."""
    lp, SXa, SY, cc = _aggregated(data)
    good = lp.solve()
    assert good.bound == pytest.approx(
        ConstrainedLadLP(SXa, SY, (-2 * (1 - TAU), 2 * TAU), cc).solve().bound, rel=1e-9)
    sol = lp.highs.getSolution()
    values, theta = np.array(sol.col_value), np.array(sol.row_dual)
    eq = lp.mult_col[(lp.mult_row == 2)]
    assert eq.shape == (1,) and abs(values[eq[0]]) > 1e-3  # the equality binds
    values[eq[0]] *= 1.1
    assert lp._verified(values, theta, "perturbed") is None


def test_a_theta_off_the_constraints_is_refused(data):
    """HiGHS's row duals satisfy the constraints only within its dual tolerance: a theta off the
    equality row by 1e-8 (well inside the KKT check's 1e-6) is refused, so that no iterate
    that E_best might keep violates the constraints."""
    lp = _aggregated(data)[0]
    assert lp.solve().bound is not None
    sol = lp.highs.getSolution()
    values, theta = np.array(sol.col_value), np.array(sol.row_dual)
    assert lp._verified(values, theta, "as solved") is not None
    theta[4] -= 1e-8  # beta_3 - beta_4 = 0.5 now off by 1e-8
    assert lp._verified(values, theta, "moved") is None


def test_the_start_is_the_subsamples_constrained_fit(data):
    """Constrained AID's band is centred on the exact constrained fit of a subsample (by AID;
    CVXPY + Clarabel's on the same rows); infeasible constraints give no fit (the first
    aggregated LP reports them)."""
    X, y = data
    rows, bounds = _constraints(1.0)
    cc = LAD(X, y, quantile=TAU, constraints=rows, bounds=bounds).coef_constraints
    idx = np.arange(0, 4000, 3)
    beta, b0 = constrained_subsample_fit(X, y, np.ones(4000), True, TAU, cc, 0, idx)
    ref = LAD(X[idx], y[idx], quantile=TAU, constraints=rows, bounds=bounds)
    E = float(np.sum(np.where((r := y[idx] - X[idx] @ beta - b0) > 0, 2 * TAU * r,
                              2 * (TAU - 1) * r)))
    assert E == pytest.approx(_cvxpy_value(X[idx], y[idx]), rel=1e-8)
    assert ref.coef_constraints.max_violation(np.r_[beta, b0]) <= 1e-9
    bad = CoefConstraints(G=np.ones((1, 6)), lo=np.array([-np.inf]), hi=np.array([-1.0]),
                          lb=np.zeros(6), ub=np.full(6, np.inf))
    assert constrained_subsample_fit(X, y, np.ones(4000), True, TAU, bad, 0, idx) is None
