"""SMO for the weighted SVM dual against a monolithic Clarabel solve and scikit-learn's SVC."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.svm import SVC

from solvers.errors import LimitReachedError
from solvers.kernels import Kernel
from solvers.result import SolutionStatus, TerminationCondition
from solvers.smo import block_svm, smo_svm, svm_decision_function

RBF = Kernel("rbf", gamma=0.5)


def clouds(n: int, p: int = 2, sep: float = 2.0, seed: int = 0):
    """Two Gaussian clouds (labels +1 / -1) whose means are ``sep`` apart."""
    rng = np.random.default_rng(seed)
    n1 = n // 2
    X = np.vstack([rng.normal(0, 1, (n1, p)), rng.normal(sep / np.sqrt(p), 1, (n - n1, p))])
    y = np.r_[np.ones(n1), -np.ones(n - n1)]
    return X, y


def svm_dual_clarabel(K: np.ndarray, y: np.ndarray, upper: np.ndarray) -> float:
    """min 1/2 a'Qa - sum a, y'a = 0, 0 <= a <= C_i, with Q = (yy')K through K's eigen-factor."""
    w, V = np.linalg.eigh(K)
    keep = w > 1e-12 * w.max()
    L = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(y.size)
    prob = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(L.T @ cp.multiply(y, a)) - cp.sum(a)),
        [y @ a == 0, a >= 0, a <= upper],
    )
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def kkt_violation(K, y, alpha, lo, up) -> float:
    """max_{I_up} m - min_{I_low} m with the gradient recomputed from the full K."""
    grad = y * (K @ (alpha * y)) - 1.0
    m = -y * grad
    pos = y > 0
    i_up = (pos & (alpha < up)) | (~pos & (alpha > lo))
    i_low = (~pos & (alpha < up)) | (pos & (alpha > lo))
    return float(m[i_up].max() - m[i_low].min())


def svc_dual_objective(svc: SVC, kernel: Kernel) -> float:
    dc = svc.dual_coef_[0]
    sv = svc.support_vectors_
    return float(0.5 * dc @ kernel(sv, sv) @ dc - np.abs(dc).sum())


@pytest.mark.parametrize(
    ("n", "kernel", "C"),
    [
        (300, RBF, 1.0),
        (1000, Kernel("rbf", gamma=0.2), 10.0),
        (200, Kernel("linear"), 0.5),
        (200, Kernel("poly", gamma=0.5, degree=2, coef0=1.0), 1.0),
    ],
)
def test_matches_monolithic_clarabel(n, kernel, C):
    X, y = clouds(n, p=3, seed=n)
    res = smo_svm(X, y, C=C, kernel=kernel, tol=1e-6)
    assert res.termination is TerminationCondition.OPTIMAL
    K = kernel(X, X)
    ref = svm_dual_clarabel(K, y, np.full(n, C))
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert kkt_violation(K, y, res.x, 0 * y, np.full(n, C)) <= 1e-6 * (1 + 1e-6)
    assert abs(y @ res.x) < 1e-9 * C * n
    assert np.all(res.x >= 0) and np.all(res.x <= C)


def test_against_sklearn_svc():
    X, y = clouds(1600, p=10, sep=1.5, seed=3)
    Xtr, ytr, Xte = X[::2], y[::2], X[1::2]
    res = smo_svm(Xtr, ytr, C=2.0, kernel=Kernel("rbf", gamma=0.1), tol=1e-3)
    svc = SVC(C=2.0, kernel="rbf", gamma=0.1, tol=1e-3).fit(Xtr, ytr)
    ref = svc_dual_objective(svc, Kernel("rbf", gamma=0.1))
    assert res.objective == pytest.approx(ref, rel=1e-3)
    f = svm_decision_function(Xtr, ytr, res.x, res.extra["b"], Kernel("rbf", gamma=0.1), Xte)
    ours = np.where(f > 0, 1.0, -1.0)
    assert np.mean(ours == svc.predict(Xte)) >= 0.995


def test_integer_weights_equal_repeated_rows():
    X, y = clouds(60, seed=5)
    s = np.random.default_rng(1).integers(1, 4, size=60)
    res_w = smo_svm(X, y, C=1.0, kernel=RBF, sample_weight=s, tol=1e-8)
    rep = np.repeat(np.arange(60), s)
    res_r = smo_svm(X[rep], y[rep], C=1.0, kernel=RBF, tol=1e-8)
    assert res_w.objective == pytest.approx(res_r.objective, rel=1e-7)
    Xte = np.random.default_rng(2).normal(1, 1.5, (50, 2))
    fw = svm_decision_function(X, y, res_w.x, res_w.extra["b"], RBF, Xte)
    fr = svm_decision_function(X[rep], y[rep], res_r.x, res_r.extra["b"], RBF, Xte)
    np.testing.assert_allclose(fw, fr, atol=1e-5)


def test_zero_weight_equals_removal():
    X, y = clouds(80, seed=6)
    s = np.ones(80)
    s[[3, 10, 50, 71]] = 0.0
    res_w = smo_svm(X, y, C=1.0, kernel=RBF, sample_weight=s, tol=1e-8)
    res_r = smo_svm(X[s > 0], y[s > 0], C=1.0, kernel=RBF, tol=1e-8)
    assert res_w.objective == pytest.approx(res_r.objective, rel=1e-9)
    assert np.all(res_w.x[s == 0] == 0)


def test_class_weight_matches_svc_and_sample_weight():
    X, y = clouds(400, p=4, sep=1.0, seed=7)
    labels = np.where(y > 0, 7, 3)  # arbitrary labels: 7 -> +1
    cw = {7: 3.0, 3: 0.5}
    res = smo_svm(X, labels, C=1.0, kernel=RBF, class_weight=cw, tol=1e-6)
    res_s = smo_svm(X, labels, C=1.0, kernel=RBF, sample_weight=np.where(y > 0, 3.0, 0.5), tol=1e-6)
    assert res.objective == pytest.approx(res_s.objective, rel=1e-9)
    svc = SVC(C=1.0, gamma=0.5, class_weight=cw, tol=1e-6).fit(X, labels)
    assert res.objective == pytest.approx(svc_dual_objective(svc, RBF), rel=1e-4)
    assert np.max(res.x[y > 0]) <= 3.0 and np.max(res.x[y < 0]) <= 0.5


def test_precomputed_shrinking_and_warm_start_agree():
    X, y = clouds(300, seed=8)
    base = smo_svm(X, y, C=1.0, kernel=RBF, tol=1e-6)
    pre = smo_svm(RBF(X, X), y, C=1.0, kernel="precomputed", tol=1e-6)
    nosh = smo_svm(X, y, C=1.0, kernel=RBF, tol=1e-6, shrinking=False)
    tiny = smo_svm(X, y, C=1.0, kernel=RBF, tol=1e-6, cache_mb=0.01)  # 2 cached columns
    for r in (pre, nosh, tiny):
        assert r.objective == pytest.approx(base.objective, rel=1e-8)
    warm = smo_svm(X, y, C=1.0, kernel=RBF, tol=1e-6, alpha0=base.x)
    assert warm.iterations < base.iterations // 4
    assert warm.objective == pytest.approx(base.objective, rel=1e-10)


def test_iteration_limit_is_reported():
    X, y = clouds(200, seed=9)
    res = smo_svm(X, y, C=1.0, kernel=RBF, max_iter=5)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations == 5 and res.extra["max_violation"] > 1e-3
    with pytest.raises(LimitReachedError):
        res.require_optimal()


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"y": np.ones(20)}, "'y'"),
        ({"X": np.full((20, 2), np.nan)}, "NaN"),
        ({"C": 0.0}, "'C'"),
        ({"C": -1.0}, "'C'"),
        ({"sample_weight": -np.ones(20)}, "sample_weight"),
        ({"kernel": "sigmoid"}, "'kernel'"),
        ({"tol": 0.0}, "'tol'"),
        ({"max_iter": 0}, "'max_iter'"),
        ({"class_weight": {5: 1.0}}, "class_weight"),
    ],
)
def test_bad_input_raises_value_error(kwargs, word):
    X, y = clouds(20, seed=10)
    args = {"X": X, "y": y, "C": 1.0, "kernel": RBF, **kwargs}
    with pytest.raises(ValueError, match=word):
        smo_svm(args.pop("X"), args.pop("y"), **args)


def test_block_q10_agrees_with_smo():
    X, y = clouds(200, seed=11)
    res = smo_svm(X, y, C=1.0, kernel=RBF, tol=1e-6)
    blk = block_svm(X, y, C=1.0, kernel=RBF, q=10, tol=1e-6)
    assert blk.termination is TerminationCondition.OPTIMAL
    assert 0.0 <= blk.gap <= 1e-6
    assert abs(blk.objective - res.objective) <= 1e-6 * blk.scale
    rule = blk.extra["stopping_rule"]
    assert rule["max_violation"] <= 1e-6 or rule["gap"] <= 1e-6


def test_default_tol_is_refined_until_certified():
    """LIBSVM's tol = 1e-3 leaves relative gaps of ~1e-5: refine=False reports CONVERGED with
    the rule it met; the default continues (tol / 10 rounds) until the gap is certified, and
    the gap matches one computed independently from the full kernel matrix."""
    X, y = clouds(400, p=3, seed=24)
    C = 10.0
    loose = smo_svm(X, y, C=C, kernel=RBF, refine=False)
    assert loose.gap > 1e-6
    assert loose.termination is TerminationCondition.CONVERGED and not loose.is_optimal
    assert loose.extra["stopping_rule"]["tol"] == 1e-3
    res = smo_svm(X, y, C=C, kernel=RBF)
    assert res.termination is TerminationCondition.OPTIMAL and res.gap <= 1e-6
    assert res.extra["stopping_rule"]["refinements"] >= 1
    K = RBF(X, X)
    v = res.x * y
    f = K @ v + res.extra["b"]
    primal = 0.5 * v @ K @ v + C * np.maximum(0.0, 1.0 - y * f).sum()
    dual = res.x.sum() - 0.5 * v @ K @ v
    # the gap's scale: sum C_i, or the objective when that is smaller (objective_scale)
    scale = min(C * y.size, max(abs(primal), abs(dual)))
    assert (primal - dual) / scale == pytest.approx(res.gap, abs=1e-12)
    ref = svm_dual_clarabel(K, y, np.full(y.size, C))
    assert abs(res.objective - ref) <= 1e-6 * C * y.size
