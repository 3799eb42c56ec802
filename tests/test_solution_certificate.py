"""The certificate on the solution (issue 31): where the optimum is unique, "optimal" also
proves how far the returned solution and its decision values can be from the optimum's
(solvers.result.SOLUTION_TOL), and the proof is checked here against independent solves: the
distance measured to a reference is never above the proven bound, and an optimal result is
within SOLUTION_TOL. Where the objective gap holds and the solution's does not, the result
says CONVERGED with both numbers."""

from __future__ import annotations

import numpy as np
import pytest

import instances
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.result import SOLUTION_TOL, SolutionStatus, SolveResult, TerminationCondition

OPTIMAL = (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED)


def ridge_reference(A: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """x* of the centred ridge problem by least squares on [A_c; sqrt(alpha) I] (QR in
    LAPACK's lstsq: the augmented matrix's condition number is the square root of the normal
    equations'), independent of the toolkit's solves."""
    Ac, bc = A - A.mean(axis=0), b - b.mean()
    M = np.vstack([Ac, np.sqrt(alpha) * np.eye(A.shape[1])])
    return np.linalg.lstsq(M, np.r_[bc, np.zeros(A.shape[1])], rcond=None)[0]


@pytest.fixture(scope="module")
def loo_folds():
    """The leave-one-out folds of a 9 x 50 problem (p > n), as in the issue."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(9, 50))
    b = A @ rng.normal(size=50) + 0.1 * rng.normal(size=9)
    return [(A[np.arange(9) != k], b[np.arange(9) != k]) for k in range(9)]


@pytest.mark.parametrize("strategy", ["full", "pcg-rfd", "pcg-fd"])
def test_ridge_tiny_alpha_solution_within_its_proven_bound(loo_folds, strategy):
    """alpha = 1e-5 on 8 x 50 folds: before the solution rule pcg-rfd stopped at gap 2e-13
    with x 1.3e-3 from x* (6e-4 of ||x||); now every fold is optimal with the proven distance
    within SOLUTION_TOL of ||x||, and the distance to the reference within the proof."""
    for A, b in loo_folds:
        prob = Ridge(A, b, alpha=1e-5, fit_intercept=True)
        res = prob.solve(strategy)
        ref = ridge_reference(A, b, 1e-5)
        dist = np.linalg.norm(res.x - ref)
        assert res.termination in OPTIMAL, res.raw_status
        assert res.solution_unique is True
        assert res.solution_gap <= SOLUTION_TOL
        # the reference's own error: cond(augmented) ~ 1e3 -> about 1e-12 relative
        assert dist <= res.solution_bound + 1e-9 * np.linalg.norm(ref)
        assert dist <= SOLUTION_TOL * np.linalg.norm(res.x) + 1e-9 * np.linalg.norm(ref)
        # predictions of rows no farther from the mean than the training rows: within the
        # decision bound (the test rows are the training rows and a held-out-like row)
        new = np.vstack([A, A.mean(axis=0) + (A[0] - A.mean(axis=0))[::-1]])
        moved = np.abs((new - A.mean(axis=0)) @ (res.x - ref))
        assert moved.max() <= res.decision_bound + 1e-9 * np.abs(new @ ref).max()


def test_ridge_gap_certified_but_solution_far_is_converged(loo_folds):
    """x* moved along a direction of curvature alpha: f rises by t^2 alpha / 2, a relative gap
    of 1e-11, while x is 0.1 from x*. The objective certificate alone would call it optimal;
    the solution rule does not, and says both numbers."""
    A, b = loo_folds[0]
    prob = Ridge(A, b, alpha=1e-5, fit_intercept=True)
    ref = ridge_reference(A, b, 1e-5)
    Ac = A - A.mean(axis=0)
    null = np.linalg.svd(Ac)[2][-1]  # a right singular vector of singular value ~0
    x = ref + 0.1 * null
    res = SolveResult(termination=TerminationCondition.OPTIMAL,
                      solution_status=SolutionStatus.OPTIMAL, objective=prob.objective(x),
                      bound=prob.lower_bound(x), x=x, strategy="test")
    out = prob.certify(res)
    assert out.gap <= 1e-9  # the objective gap is certified
    assert out.termination is TerminationCondition.CONVERGED
    assert out.solution_status is SolutionStatus.FEASIBLE
    assert out.solution_bound >= 0.1 * (1 - 1e-6)  # the proof covers the true distance
    assert out.solution_gap > SOLUTION_TOL
    assert "solution is proven only within" in out.raw_status
    # the same x at its optimum is certified
    exact = prob.certify(SolveResult(termination=TerminationCondition.OPTIMAL,
                                     solution_status=SolutionStatus.OPTIMAL,
                                     objective=prob.objective(ref), bound=prob.lower_bound(ref),
                                     x=ref, strategy="test"))
    assert exact.termination is TerminationCondition.OPTIMAL and exact.solution_certified


def test_ridge_solution_rule_is_scale_free(loo_folds):
    """A -> s A, b -> t b, alpha -> s^2 alpha (powers of two: every product is exact) gives
    x -> (t / s) x with the same relative solution gap."""
    A, b = loo_folds[3]
    base = Ridge(A, b, alpha=1e-5).solve("pcg-rfd", seed=1)
    s, t = 2.0 ** -33, 2.0 ** 33
    scaled = Ridge(A * s, b * t, alpha=1e-5 * s * s).solve("pcg-rfd", seed=1)
    assert scaled.termination is base.termination
    np.testing.assert_allclose(scaled.x, base.x * t / s, rtol=1e-9)
    assert scaled.solution_gap == pytest.approx(base.solution_gap, rel=1e-6)


@pytest.fixture(scope="module")
def cancer():
    d = instances.load_breast_cancer()
    X = (d.X - d.X.mean(axis=0)) / d.X.std(axis=0)
    return X, d.y


def _kv(prob, res) -> np.ndarray:
    """w'phi(x_i) over the training rows (the decision values less the intercept)."""
    return prob.decision_function(res, prob._X) - float(res.extra["b"])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_svm_strategies_within_each_others_proven_bounds(cancer, kernel):
    """SMO and the monolithic solve on standardized breast cancer: both optimal with the
    solution rule, and their decision values (less the intercept) differ by no more than the
    sum of their proven decision bounds; for the linear kernel their w's by no more than the
    sum of their proven distances."""
    X, y = cancer
    prob = SVM(X, y, C=1.0, kernel=kernel, gamma=0.05)
    smo, full = prob.solve("smo"), prob.solve("full")
    for res in (smo, full):
        assert res.termination in OPTIMAL, res.raw_status
        assert res.solution_gap <= SOLUTION_TOL and res.solution_unique is True
    diff = np.abs(_kv(prob, smo) - _kv(prob, full)).max()
    assert diff <= smo.decision_bound + full.decision_bound
    assert smo.decision_bound <= 1.0  # and not vacuous: within the margin
    if kernel == "linear":
        w = [X.T @ (r.extra["alpha"] * y) if r.extra.get("form") == "dual" else r.x
             for r in (smo, full)]
        assert np.linalg.norm(w[0] - w[1]) <= smo.solution_bound + full.solution_bound


def test_svm_tiny_c_is_certified_by_its_decision_values(cancer):
    """C = 1e-10: w is about 1e-8, so a distance certified relative to ||w|| would need a gap
    at round-off; the decision values are within SOLUTION_TOL of the margin, which is what the
    rule accepts (the intercept decides the predictions there)."""
    X, y = cancer
    prob = SVM(X, y, C=1e-10, kernel="rbf", gamma=0.05)
    res = prob.solve("smo")
    assert res.termination in OPTIMAL, res.raw_status
    norm = np.sqrt(max(float(res.extra["alpha"] * y @ _kv(prob, res)), 0.0))
    assert res.solution_bound > SOLUTION_TOL * norm  # the norm branch would not hold
    assert res.decision_bound <= SOLUTION_TOL  # the decision branch does


@pytest.mark.parametrize("strategy", ["smo", "full"])
def test_klr_decision_values_within_proven_bound_of_a_tight_reference(cancer, strategy):
    """KLR (linear kernel) against SMO run to a KKT tolerance of 1e-10: the decision values
    (less the intercept) differ by no more than the two proven bounds."""
    X, y = cancer
    X = X[:300]
    y = y[:300]
    prob = KLR(X, y, C=1.0, kernel="linear")
    res = prob.solve(strategy)
    ref = prob.solve("smo", tol=1e-10)
    assert res.termination in OPTIMAL, res.raw_status
    assert res.solution_gap <= SOLUTION_TOL and res.solution_unique is True

    def kv(r):
        return prob.decision_function(r.x, 0.0, X)

    assert np.abs(kv(res) - kv(ref)).max() <= res.decision_bound + ref.decision_bound


def test_lad_certifies_only_the_objective():
    """A linear program's optimum may be a face: LAD results carry no solution bound."""
    d = instances.load_stackloss()
    res = LAD(d.X, d.y).solve()
    assert res.termination in OPTIMAL
    assert res.solution_unique is None and res.solution_gap is None
    assert res.solution_certified is None
