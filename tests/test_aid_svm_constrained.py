"""AID for the linear SVM with constraints and bounds on (w, b) (issue 33), against CVXPY +
Clarabel on the same constrained model: the covariance bound of FairSVM, nonnegative
coefficients, an equality fixing a coefficient, data rescaled by 1e-10 and 1e10, and an
infeasible set (INFEASIBLE at once, with a checked Farkas certificate). Every run must start
aggregated (fewer clusters than n / 5) and end CERTIFIED by sign purity and the gap."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import SVM
from optmodels.strategies import accepted
from solvers.aid import aid_svm
from solvers.constraints import CoefConstraints
from solvers.errors import DataError
from solvers.kernels import Kernel
from solvers.result import TerminationCondition

N, P = 3000, 5
TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
AID = dict(n_clusters=0.04)  # 120 clusters to start, well below n / 5


@pytest.fixture(scope="module")
def data():
    """Two overlapping classes; z a binary sensitive attribute correlated with the label (not
    a column of X), as in FairSVM."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, P))
    z = (rng.random(N) < 0.5).astype(float)
    X[:, 0] += 1.5 * z
    score = X @ np.array([1.0, -1.0, 0.5, -0.7, 0.3]) + 0.8 * rng.normal(size=N)
    y = np.where(score > 0.2, 1.0, -1.0)
    return X, y, z


def fair_row(X, z):
    """The covariance (1/n) sum_i (z_i - zbar)(w'x_i + b) as a row on (w, b)."""
    dz = z - z.mean()
    return np.r_[dz @ X, dz.sum()] / X.shape[0]


def cvxpy_svm(X, y, C, cons_fn):
    """The constrained hinge SVM by CVXPY + Clarabel; (objective evaluated by numpy, w, b)."""
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    hinge = cp.pos(1 - cp.multiply(y, X @ w + b))
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(hinge)),
               cons_fn(w, b)).solve(solver="CLARABEL", **TIGHT)
    wv, bv = np.asarray(w.value), float(b.value)
    obj = 0.5 * wv @ wv + C * np.maximum(0.0, 1.0 - y * (X @ wv + bv)).sum()
    return obj, wv, bv


def assert_matches(res, ref, n):
    """CERTIFIED, started aggregated, and equal to the reference in objective, w and b."""
    obj, w, b = ref
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert res.extra["history"][0]["clusters"] < n / 5
    assert res.extra["n_clusters_final"] < n / 2
    assert res.objective == pytest.approx(obj, rel=1e-9)
    assert res.bound <= obj * (1 + 1e-10)  # F bounds the constrained optimum
    np.testing.assert_allclose(res.x, w, atol=1e-5 * (1 + np.abs(w).max()))
    assert res.extra["b"] == pytest.approx(b, abs=1e-5)


@pytest.mark.parametrize("subsolver", ["clarabel", "highs"])
def test_fair_covariance_bound_equals_cvxpy(data, subsolver):
    X, y, z = data
    g, eps = fair_row(X, z), 0.02
    prob = SVM(X, y, C=1.0, constraints=LinearConstraint(g[None], -eps, eps))
    ref = cvxpy_svm(X, y, 1.0, lambda w, b: [cp.abs(g[:P] @ w + g[P] * b) <= eps])
    res = prob.solve("aid", subsolver=subsolver, **AID)
    assert_matches(res, ref, N)
    assert abs(g @ np.r_[res.x, res.extra["b"]]) <= eps * (1 + 1e-9)
    free = SVM(X, y, C=1.0).solve()
    assert abs(g @ np.r_[free.x, free.extra["b"]]) > 2 * eps  # the bound binds...
    assert free.objective < res.objective - 1e-3 * res.objective  # ...and costs


def test_nonnegative_coefficients_equal_cvxpy(data):
    X, y, _ = data
    prob = SVM(X, y, C=0.5, bounds=Bounds(np.r_[np.zeros(P), -np.inf], np.inf))
    ref = cvxpy_svm(X, y, 0.5, lambda w, b: [w >= 0])
    res = prob.solve("aid", **AID)
    assert_matches(res, ref, N)
    assert res.x.min() >= 0.0 and np.sum(res.x == 0.0) >= 2  # w_1, w_3 are pushed to 0


def test_equality_fixing_a_coefficient_equals_cvxpy(data):
    X, y, _ = data
    row = np.zeros((1, P + 1))
    row[0, 2] = 1.0
    prob = SVM(X, y, C=2.0, constraints=LinearConstraint(row, 1.5, 1.5),
               bounds=Bounds(np.r_[np.full(P, -np.inf), -0.1], np.r_[np.full(P, np.inf), 0.1]))
    ref = cvxpy_svm(X, y, 2.0, lambda w, b: [w[2] == 1.5, cp.abs(b) <= 0.1])
    res = prob.solve("aid", **AID)
    assert_matches(res, ref, N)
    assert res.x[2] == pytest.approx(1.5, abs=1e-9)


@pytest.mark.parametrize("scale", [1e-10, 1e10])
def test_rescaled_data_gives_the_same_model(data, scale):
    """X * scale with C / scale^2 and the covariance side eps / scale... is the same model
    (w' = w / scale, P' = P / scale^2): CERTIFIED with the decision values of the CVXPY
    reference at scale 1, and the objective times 1 / scale^2."""
    X, y, z = data
    g, eps = fair_row(X, z), 0.02
    ref = cvxpy_svm(X, y, 1.0, lambda w, b: [cp.abs(g[:P] @ w + g[P] * b) <= eps,
                                             w >= -0.6])
    Xs = X * scale
    gs = fair_row(Xs, z)  # the row on the user's rescaled data: entries times scale
    prob = SVM(Xs, y, C=1.0 / scale**2, constraints=LinearConstraint(gs[None], -eps, eps),
               bounds=Bounds(np.r_[np.full(P, -0.6 / scale), -np.inf], np.inf))
    res = prob.solve("aid", **AID)
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert res.extra["history"][0]["clusters"] < N / 5
    assert res.objective * scale**2 == pytest.approx(ref[0], rel=1e-9)
    np.testing.assert_allclose(Xs @ res.x + res.extra["b"], X @ ref[1] + ref[2], atol=1e-5)


def test_infeasible_constraints_stop_at_once_with_a_checked_certificate(data):
    X, y, _ = data
    prob = SVM(X, y, bounds=Bounds(np.r_[np.zeros(P), -np.inf], np.inf),
               constraints=LinearConstraint(np.r_[np.ones(P), 0.0][None], -np.inf, -1.0))
    res = prob.solve("aid", **AID)
    assert res.termination is TerminationCondition.INFEASIBLE, res.raw_status
    assert res.x is None and res.iterations == 0
    assert "certificate checked" in res.raw_status
    full = prob.solve()  # the full solve agrees, with the constraints' own certificate
    assert full.termination is TerminationCondition.INFEASIBLE, full.raw_status
    assert full.x is None and "certificate checked" in full.raw_status


def test_registry_accepts_constrained_hinge_and_refuses_the_rest(data):
    X, y, _ = data
    cons = LinearConstraint(np.r_[np.ones(P), 0.0][None], 0.0, 1.0)
    hinge = accepted(SVM(X, y, constraints=cons))
    assert hinge["aid"] is None and hinge["full"] is None
    for name in ("smo", "block", "ipm"):
        assert "does not take constraints" in hinge[name], name
    squared = accepted(SVM(X, y, loss="squared_hinge", constraints=cons))
    assert "solves loss='hinge'" in squared["aid"]
    assert "newton" not in squared["aid"]  # newton refuses the constraints too
    assert "'newton'" in accepted(SVM(X, y, loss="squared_hinge"))["aid"]
    with pytest.raises(DataError, match="solves loss='hinge'"):
        SVM(X, y, loss="squared_hinge", constraints=cons).solve("aid")


def test_aid_svm_checks_its_constraints_argument(data):
    X, y, _ = data
    cc = CoefConstraints(np.zeros((0, P + 1)), np.zeros(0), np.zeros(0),
                         np.full(P + 1, -np.inf), np.full(P + 1, np.inf))
    with pytest.raises(DataError, match="must be a solvers.constraints.CoefConstraints"):
        aid_svm(X, y, constraints=Bounds(0, 1))
    with pytest.raises(DataError, match="kernel=None"):
        aid_svm(X[:50], y[:50], kernel=Kernel("rbf", 1.0), constraints=cc)
    with pytest.raises(DataError, match="X has 4 columns"):
        aid_svm(X[:, :4], y, constraints=cc)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_full_solve_bound_is_a_lower_bound_on_the_constrained_optimum(data, loss):
    """The full solve's bound is the Lagrangian dual function of the constrained QP
    (lagrangian_bound): below the CVXPY optimum, and within the certificate of it."""
    X, y, z = data
    g, eps = fair_row(X, z), 0.02
    res = SVM(X, y, C=1.0, loss=loss,
              constraints=LinearConstraint(g[None], -eps, eps)).solve()
    w, b = cp.Variable(P), cp.Variable()
    m = 1 - cp.multiply(y, X @ w + b)
    err = cp.sum(cp.pos(m)) if loss == "hinge" else cp.sum(cp.square(cp.pos(m)))
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + err),
                     [cp.abs(g[:P] @ w + g[P] * b) <= eps]).solve(solver="CLARABEL", **TIGHT)
    assert res.is_optimal, res.raw_status
    assert res.bound <= ref + 1e-12 * ref
    assert res.bound >= ref - 1e-6 * res.scale
    assert res.objective == pytest.approx(ref, rel=1e-8)


def test_independent_verification_keeps_the_constrained_bound(data):
    """verify='independent' recomputes the objective; D(alpha) would bound only the
    unconstrained optimum, so the constrained bound stays: the full solve's is the problem's
    Lagrangian dual function at the backend's multipliers (labelled the toolkit's), AID's its
    own."""
    X, y, z = data
    g, eps = fair_row(X, z), 0.02
    prob = SVM(X, y, C=1.0, constraints=LinearConstraint(g[None], -eps, eps))
    for strategy, options in (("full", {}), ("aid", AID)):
        plain = prob.solve(strategy, **options)
        res = prob.solve(strategy, verify="independent", **options)
        expected = "toolkit" if strategy == "full" else "strategy"
        assert res.extra["bound_source"] == expected, strategy
        assert res.termination is plain.termination, res.raw_status
        assert res.bound == pytest.approx(plain.bound, rel=1e-12)
