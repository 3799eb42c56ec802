"""The typed solution (issue 31): every strategy's result carries what it predicts with
(``solvers.solution``: coefficients and intercept, or dual coefficients, support and
intercept), one prediction path for results, problems and estimators, checked here against
decision values computed independently with scikit-learn's kernels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

import instances
from optmodels import KLR, LAD, SVM, Ridge
from optmodels.estimators import KLRClassifier, RidgeRegressor, SVMClassifier
from solvers.solution import KernelSolution, LinearSolution


@pytest.fixture(scope="module")
def cancer():
    d = instances.load_breast_cancer()
    X = (d.X - d.X.mean(axis=0)) / d.X.std(axis=0)
    return X[:200], d.y[:200], X[200:260]


@pytest.mark.parametrize("strategy", ["full", "aid"])
def test_lad_solution_is_beta_and_intercept(strategy):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 2.0 + rng.laplace(size=300)
    res = LAD(X, y).solve(strategy)
    sol = res.solution
    assert isinstance(sol, LinearSolution)
    np.testing.assert_array_equal(sol.coef, res.x)
    assert sol.intercept == res.extra["intercept"]
    np.testing.assert_allclose(sol.decision_function(X), X @ res.x + res.extra["intercept"])


@pytest.mark.parametrize("strategy", ["full", "pcg-rfd"])
def test_ridge_solution_predicts_as_the_estimator(strategy):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(400, 10)) + 3.0
    b = A @ rng.normal(size=10) + 5.0 + rng.normal(size=400)
    res = Ridge(A, b, alpha=2.0, fit_intercept=True).solve(strategy)
    est = RidgeRegressor(alpha=2.0, strategy=strategy).fit(A, b)
    sol = res.solution
    assert isinstance(sol, LinearSolution)
    # the intercept is the centred problem's bbar - abar'x
    assert sol.intercept == pytest.approx(b.mean() - A.mean(axis=0) @ res.x, rel=1e-12)
    np.testing.assert_allclose(sol.decision_function(A), est.predict(A), rtol=1e-9)


@pytest.mark.parametrize("strategy", ["smo", "full", "block"])
@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_svm_kernel_solution_against_an_independent_expansion(cancer, strategy, kernel):
    X, y, Xn = cancer
    prob = SVM(X, y, C=1.0, kernel=kernel, gamma=0.05, degree=2, coef0=1.0)
    res = prob.solve(strategy)
    sol = res.solution
    assert isinstance(sol, KernelSolution)
    alpha = res.extra["alpha"]
    kept = np.where(alpha > 1e-8 * 1.0, alpha, 0.0)  # SUPPORT_REL of max C_i = 1
    np.testing.assert_array_equal(sol.support, np.flatnonzero(kept))
    np.testing.assert_array_equal(sol.dual_coef, (kept * y)[sol.support])
    assert sol.intercept == float(res.extra["b"])
    K = (rbf_kernel(Xn, X, gamma=0.05) if kernel == "rbf"
         else polynomial_kernel(Xn, X, degree=2, gamma=0.05, coef0=1.0))
    expected = K @ (kept * y) + res.extra["b"]
    np.testing.assert_allclose(sol.decision_function(Xn), expected, rtol=1e-9, atol=1e-9)
    # the alphas left out move no decision value by more than their sum times max |k|
    dropped = np.abs(K @ ((alpha - kept) * y)).max()
    assert dropped <= np.abs(alpha - kept).sum() * np.abs(K).max() + 1e-15
    np.testing.assert_allclose(prob.decision_function(res, Xn), expected, rtol=1e-9, atol=1e-9)


def test_svm_estimator_predicts_through_the_same_solution(cancer):
    X, y, Xn = cancer
    est = SVMClassifier(kernel="rbf", gamma=0.05, strategy="smo").fit(X, y)
    res = est.result_ if not isinstance(est.result_, list) else est.result_[0]
    sign = 1.0 if est.classes_[1] == 1.0 else -1.0
    np.testing.assert_allclose(est.decision_function(Xn), sign * res.solution.decision_function(Xn),
                               rtol=1e-9, atol=1e-9)


def test_linear_svm_primal_and_dual_solutions_agree(cancer):
    X, y, Xn = cancer
    prob = SVM(X, y, C=1.0, kernel="linear")
    primal = prob.solve("aid", n_clusters=20).solution
    dual = prob.solve("smo").solution
    assert isinstance(primal, LinearSolution) and isinstance(dual, KernelSolution)
    w = dual.linear()
    np.testing.assert_allclose(w.coef, X[dual.support].T @ dual.dual_coef, rtol=1e-12)
    # both within their certificates of the optimum: decision values agree to 1e-3 of the margin
    np.testing.assert_allclose(primal.decision_function(Xn), w.decision_function(Xn), atol=1e-3)
    with pytest.raises(ValueError, match="no finite coefficient vector"):
        SVM(X, y, kernel="rbf").solve("smo").solution.linear()


def test_precomputed_kernel_solution_reads_the_support_columns(cancer):
    X, y, Xn = cancer
    K, Kn = rbf_kernel(X, X, gamma=0.05), rbf_kernel(Xn, X, gamma=0.05)
    res = SVM(K, y, C=1.0, kernel="precomputed").solve("smo")
    ref = SVM(X, y, C=1.0, kernel="rbf", gamma=0.05).solve("smo")
    sol = res.solution
    assert sol.support_vectors is None
    np.testing.assert_allclose(sol.decision_function(Kn), ref.solution.decision_function(Xn),
                               atol=1e-6)


@pytest.mark.parametrize("strategy", ["smo", "full"])
def test_klr_solution_and_estimator(cancer, strategy):
    X, y, Xn = cancer
    res = KLR(X, y, C=1.0, kernel="rbf", gamma=0.05).solve(strategy)
    sol = res.solution
    assert isinstance(sol, KernelSolution)
    expected = rbf_kernel(Xn, X, gamma=0.05) @ (res.x * y) + res.extra["b"]
    np.testing.assert_allclose(sol.decision_function(Xn), expected, rtol=1e-9, atol=1e-9)
    est = KLRClassifier(kernel="rbf", gamma=0.05, strategy=strategy).fit(X, y)
    sign = 1.0 if est.classes_[1] == 1.0 else -1.0
    np.testing.assert_allclose(est.decision_function(Xn), sign * expected, atol=1e-6)
