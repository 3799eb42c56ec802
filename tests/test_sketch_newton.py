"""Sketch-preconditioned Newton-CG (solvers/sketch/newton.py) against independent references:
scikit-learn's LinearSVC / LogisticRegression, the squared-hinge QP solved by Clarabel, and the
unpreconditioned Newton-CG (CG-iteration ratio on an ill-conditioned instance)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from solvers.backend import solve_qp
from solvers.errors import DataError, LimitReachedError
from solvers.qp import QPData
from solvers.result import SolutionStatus, TerminationCondition
from solvers.sketch.newton import loss_change, loss_value, sketched_newton
from solvers.sketch.precondition import SketchPreconditioner

C_BIG = 1e4


def _classification(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.7 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _ill_conditioned(n: int = 1000, d: int = 30, dup: int = 7, seed: int = 0):
    """Feature scales log-spaced over 1e-3..1e3 and ``dup`` duplicated columns."""
    X, y = _classification(n, d, seed)
    scales = np.logspace(-3, 3, d)
    np.random.default_rng(seed + 1).shuffle(scales)
    X = X * scales
    return np.hstack([X, X[:, :dup]]), y


def _objective(loss: str, Xa: np.ndarray, y: np.ndarray, c: np.ndarray, w: np.ndarray) -> float:
    """f(w) = 1/2 ||w||^2 + sum_i c_i loss(y_i x_i'w), written out independently."""
    z = y * (Xa @ w)
    if loss == "squared_hinge":
        return 0.5 * w @ w + float(c @ np.maximum(0.0, 1.0 - z) ** 2)
    return 0.5 * w @ w + float(c @ np.log1p(np.exp(-z)))


def _ones(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def weighted_data():
    X, y = _classification(300, 8, seed=3)
    s = np.random.default_rng(4).uniform(0.2, 3.0, size=y.size)
    return X, y, s


@pytest.mark.parametrize("pre", ["rfd", "fd", "none", "diag"])
def test_squared_hinge_matches_linear_svc(weighted_data, pre):
    X, y, s = weighted_data
    C = 2.0
    ref = LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, fit_intercept=False,
                    max_iter=100000).fit(_ones(X), y, sample_weight=s)
    f_ref = _objective("squared_hinge", _ones(X), y, C * s, ref.coef_.ravel())
    res = sketched_newton(X, y, C, sample_weight=s, preconditioner=pre, m=4)
    assert res.is_optimal and res.certified
    w = np.append(res.x, res.extra["intercept"])
    assert _rel(_objective("squared_hinge", _ones(X), y, C * s, w), f_ref) < 1e-8
    assert _rel(res.objective, f_ref) < 1e-8
    assert res.bound <= f_ref * (1 + 1e-12)  # the certificate's bound is below the optimum
    np.testing.assert_allclose(w, ref.coef_.ravel(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reweight", ["scalar", "resketch"])
def test_logistic_matches_logistic_regression(weighted_data, reweight):
    X, y, s = weighted_data
    C = 5.0
    ref = LogisticRegression(C=C, solver="newton-cg", tol=1e-14, fit_intercept=False,
                             max_iter=100000).fit(_ones(X), y, sample_weight=s)
    f_ref = _objective("logistic", _ones(X), y, C * s, ref.coef_.ravel())
    res = sketched_newton(X, y, C, loss="logistic", sample_weight=s, reweight=reweight, m=4)
    assert res.is_optimal
    assert _rel(res.objective, f_ref) < 1e-8
    assert res.bound <= f_ref * (1 + 1e-12)
    assert res.scale == pytest.approx(np.log(2.0) * C * s.sum())


def _squared_hinge_qp(Xa: np.ndarray, y: np.ndarray, c: np.ndarray) -> float:
    """min 1/2 ||w||^2 + sum c_i xi_i^2  s.t.  y_i a_i'w + xi_i >= 1, solved by Clarabel."""
    n, p = Xa.shape
    P = sp.diags(np.concatenate([np.ones(p), 2.0 * c]))
    A = sp.hstack([sp.csr_matrix(y[:, None] * Xa), sp.eye(n)]).tocsr()
    qp = QPData(c=np.zeros(p + n), A=A, row_lo=np.ones(n), row_hi=np.full(n, np.inf),
                col_lo=np.full(p + n, -np.inf), col_hi=np.full(p + n, np.inf), P=P)
    res = solve_qp(qp, "clarabel").require_optimal()
    return res.objective


@pytest.fixture(scope="module")
def ill():
    return _ill_conditioned()


def test_ill_conditioned_squared_hinge_matches_the_monolithic_qp(ill):
    X, y = ill
    f_qp = _squared_hinge_qp(_ones(X), y, np.full(y.size, C_BIG))
    res = sketched_newton(X, y, C_BIG, preconditioner="rfd", m=8)
    assert res.is_optimal
    # the interior-point optimum is itself accurate to about 1e-8; Newton's is certified tighter
    assert _rel(res.objective, f_qp) < 1e-7
    assert res.bound <= f_qp * (1 + 1e-9)


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
@pytest.mark.parametrize("reweight", ["scalar", "resketch"])
def test_sketch_cuts_cg_iterations_five_fold(ill, loss, reweight):
    X, y = ill
    plain = sketched_newton(X, y, C_BIG, loss=loss, preconditioner="none", cg_max_iter=20000,
                            max_iter=300)
    fast = sketched_newton(X, y, C_BIG, loss=loss, preconditioner="rfd", m=8, reweight=reweight)
    assert plain.is_optimal and fast.is_optimal
    assert _rel(fast.objective, plain.objective) < 1e-8
    ratio = plain.extra["total_cg"] / fast.extra["total_cg"]
    assert ratio >= 5.0, (plain.extra["cg_iterations"], fast.extra["cg_iterations"])
    assert fast.extra["n_sketches"] >= 1
    assert len(fast.extra["cg_iterations"]) == fast.iterations


def test_class_weight_equals_sample_weight(weighted_data):
    X, y, _ = weighted_data
    a = sketched_newton(X, y, 1.0, loss="logistic", class_weight={1: 3.0, -1: 0.5})
    b = sketched_newton(X, y, 1.0, loss="logistic", sample_weight=np.where(y > 0, 3.0, 0.5))
    assert a.is_optimal and b.is_optimal
    assert _rel(a.objective, b.objective) < 1e-12
    np.testing.assert_allclose(a.x, b.x, rtol=1e-9, atol=1e-12)


def test_zero_weight_rows_drop_out(weighted_data):
    X, y, s = weighted_data
    s = s.copy()
    s[:50] = 0.0
    a = sketched_newton(X, y, 1.0, sample_weight=s)
    b = sketched_newton(X[50:], y[50:], 1.0, sample_weight=s[50:])
    assert _rel(a.objective, b.objective) < 1e-12


def test_no_intercept_and_intercept_scaling(weighted_data):
    X, y, _ = weighted_data
    res = sketched_newton(X, y, 1.0, fit_intercept=False)
    ref = LinearSVC(C=1.0, dual=False, tol=1e-12, fit_intercept=False).fit(X, y)
    assert res.extra["intercept"] == 0.0 and res.x.shape == (X.shape[1],)
    f_ref = _objective("squared_hinge", X, y, np.ones(y.size), ref.coef_.ravel())
    assert _rel(res.objective, f_ref) < 1e-8
    scaled = sketched_newton(X, y, 1.0, intercept_scaling=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LinearSVC(C=1.0, dual=False, tol=1e-12, intercept_scaling=10.0).fit(X, y)
    np.testing.assert_allclose(scaled.extra["intercept"], ref.intercept_[0], rtol=1e-5)


def test_iteration_limit_is_a_status(weighted_data):
    X, y, _ = weighted_data
    res = sketched_newton(X, y, 10.0, max_iter=1)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.gap > 1e-6
    with pytest.raises(LimitReachedError):
        res.require_optimal()


def test_loss_change_equals_the_difference():
    rng = np.random.default_rng(0)
    z, dz, c = rng.normal(size=50), rng.normal(size=50), rng.uniform(0.5, 2, 50)
    for loss in ("squared_hinge", "logistic"):
        diff = loss_value(loss, z + dz, c) - loss_value(loss, z, c)
        assert loss_change(loss, z, dz, c) == pytest.approx(diff, rel=1e-10)


def test_reweighted_preconditioner_equals_a_fresh_one():
    rng = np.random.default_rng(1)
    B, v = rng.normal(size=(5, 12)), rng.normal(size=12)
    P = SketchPreconditioner(B, 1.0).reweighted(3.0, 0.7)
    Q = SketchPreconditioner(np.sqrt(3.0) * B, 0.7)
    np.testing.assert_allclose(P.solve(v), Q.solve(v), rtol=1e-12)
    np.testing.assert_allclose(P.matvec(v), 3.0 * B.T @ (B @ v) + 0.7 * v, rtol=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"C": -1.0}, "The 'C' parameter of sketched_newton must be a float in the range (0, inf). "
                  "Got -1.0 instead."),
    ({"loss": "hinge"}, "The 'loss' parameter of sketched_newton must be one of "
                        "{'squared_hinge', 'logistic'}. Got 'hinge' instead."),
    ({"preconditioner": "ilu"}, "'preconditioner' parameter of sketched_newton must be one of"),
    ({"reweight": "always"}, "'reweight' parameter of sketched_newton must be one of"),
    ({"m": 0}, "The 'm' parameter of sketched_newton must be an int in the range [1, 9]."),
    ({"m": 10}, "Got 10 instead."),
    ({"fit_intercept": "yes"}, "The 'fit_intercept' parameter of sketched_newton must be a bool"),
    ({"tol": 0.0}, "The 'tol' parameter of sketched_newton must be a float in the range (0, inf)"),
    ({"max_iter": True}, "The 'max_iter' parameter of sketched_newton must be an int"),
    ({"sample_weight": -np.ones(40)}, "'sample_weight' has negative entries"),
])
def test_bad_input_is_refused_with_the_template(kwargs, message):
    X, y = _classification(40, 8, seed=0)
    with pytest.raises(DataError) as err:
        sketched_newton(X, y, **{"C": 1.0, **kwargs})
    assert message in str(err.value)


def test_bad_data_is_refused():
    X, y = _classification(40, 3, seed=0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(DataError, match="contains NaN"):
        sketched_newton(bad, y)
    with pytest.raises(DataError, match="exactly 2 classes"):
        sketched_newton(X, np.ones(40))
    with pytest.raises(DataError, match="has 39 entries"):
        sketched_newton(X, y[:-1])
