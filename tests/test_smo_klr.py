"""SMO for the (sparse) KLR dual against monolithic conic solves (Clarabel, ECOS)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

from solvers.kernels import Kernel
from solvers.result import SolutionStatus, TerminationCondition
from solvers.smo import (
    block_klr,
    decision_function,
    feasible_start,
    lam_max,
    lam_path,
    predict,
    predict_proba,
    smo_klr,
    solve_dual,
)
from solvers.smo.qmatrix import PrecomputedQMatrix

RBF = Kernel("rbf", gamma=0.5)


def clouds(n: int, p: int = 2, sep: float = 2.0, seed: int = 0, n_pos: int | None = None):
    """Two Gaussian clouds (+1 / -1) whose means are ``sep`` apart."""
    rng = np.random.default_rng(seed)
    n1 = n // 2 if n_pos is None else n_pos
    X = np.vstack([rng.normal(0, 1, (n1, p)), rng.normal(sep / np.sqrt(p), 1, (n - n1, p))])
    y = np.r_[np.ones(n1), -np.ones(n - n1)]
    return X, y


def klr_dual_conic(K, y, C, lam, gamma=0.0, solver="CLARABEL", weights=None) -> float:
    """min 1/2 a'Qa + sum C_i G(a_i/C_i) - lam sum a with CVXPY's entr (docs/problems/klr.md)."""
    n = y.size
    Ci = C * (np.ones(n) if weights is None else weights)
    w, V = np.linalg.eigh(K)
    keep = w > 1e-10 * w.max()
    L = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(n)
    d = cp.multiply(a, 1.0 / Ci)
    obj = (0.5 * cp.sum_squares(L.T @ cp.multiply(y, a))
           - cp.sum(cp.multiply(Ci, cp.entr(d) + cp.entr(1 - d))) - lam * cp.sum(a))
    cons = [y @ a == 0]
    if gamma > 0:
        cons += [a >= gamma, a <= Ci - gamma]
    prob = cp.Problem(cp.Minimize(obj), cons)
    with warnings.catch_warnings():  # an inaccurate status is handled just below
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=solver)
    if prob.status != "optimal":  # Clarabel stalls near the entropy's ends: cross-check by ECOS
        prob.solve(solver="ECOS" if solver == "CLARABEL" else "CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def objective(K, y, alpha, C, lam) -> float:
    d = alpha / C
    G = d * np.log(d) + (1 - d) * np.log1p(-d)
    return float(0.5 * (alpha * y) @ K @ (alpha * y) + C * G.sum() - lam * alpha.sum())


def kkt_violation(K, y, alpha, lo, up, C, lam) -> float:
    grad = y * (K @ (alpha * y)) + np.log(alpha / (C - alpha)) - lam
    m = -y * grad
    pos = y > 0
    i_up = (pos & (alpha < up)) | (~pos & (alpha > lo))
    i_low = (~pos & (alpha < up)) | (pos & (alpha > lo))
    return float(m[i_up].max() - m[i_low].min())


@pytest.mark.parametrize(
    ("n", "lam", "solver"),
    [(300, 0.0, "CLARABEL"), (300, 2.0, "CLARABEL"), (200, 5.0, "ECOS"), (600, 1.0, "CLARABEL")],
)
def test_matches_monolithic(n, lam, solver):
    X, y = clouds(n, seed=n)
    C = 10.0
    res = smo_klr(X, y, C=C, lam=lam, kernel=RBF, tol=1e-6)
    assert res.termination is TerminationCondition.OPTIMAL
    K = RBF(X, X)
    ref = klr_dual_conic(K, y, C, lam, solver=solver)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.objective == pytest.approx(objective(K, y, res.x, C, lam), rel=1e-10)
    lo, up = res.extra["lower"], res.extra["upper"]
    assert kkt_violation(K, y, res.x, lo, up, C, lam) <= 1e-6 * (1 + 1e-3)
    # optimality in the paper's form: alpha_i / C = sigma(lam - y_i f(x_i))
    f = res.extra["decision_train"]
    np.testing.assert_allclose(res.x / C, 1 / (1 + np.exp(-(lam - y * f))), atol=1e-6)


def test_bounded_box_and_linear_kernel_match_monolithic():
    X, y = clouds(200, p=3, sep=3.0, seed=4)
    K = Kernel("linear")(X, X)
    gamma = 1e-3
    res = smo_klr(X, y, C=1.0, lam=3.0, bound_tol=gamma, kernel="linear", tol=1e-6)
    ref = klr_dual_conic(K, y, 1.0, 3.0, gamma=gamma)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.x.min() >= gamma and res.x.max() <= 1.0 - gamma


def test_lambda_sign_plus_lambda_y_reproduces_the_optimum():
    """The printed rule "- lambda y_i" amounts to p = +lambda; only p = -lambda is optimal."""
    X, y = clouds(200, seed=12)
    C, lam = 10.0, 3.0
    K = RBF(X, X)
    ref = klr_dual_conic(K, y, C, lam)
    q = PrecomputedQMatrix(K, y)
    lo, up = 1e-12 * C * np.ones(200), C * (1 - 1e-12) * np.ones(200)
    a0 = feasible_start(y, lo, up, C * np.ones(200))
    kw = {"entropy_C": np.full(200, C), "alpha0": a0, "tol": 1e-6}
    good = solve_dual(q, y, lo, up, np.full(200, -lam), **kw)
    bad = solve_dual(q, y, lo, up, np.full(200, +lam), **kw)
    assert objective(K, y, good.alpha, C, lam) == pytest.approx(ref, rel=1e-6)
    assert objective(K, y, bad.alpha, C, lam) > ref + 1e-3 * abs(ref)
    thr = 1e-3 * C
    assert np.sum(bad.alpha < thr) <= np.sum(good.alpha < thr)


def test_sparsity_grows_with_lambda_at_stable_accuracy():
    X, y = clouds(350, sep=4.0, seed=0)
    Xte, yte = clouds(1000, sep=4.0, seed=100)
    res = lam_path(X, y, [0.0, 5.0, 10.0], C=10.0, kernel=RBF, tol=1e-6)
    at_lower = [r.extra["n_at_lower"] for r in res]
    assert at_lower[0] < at_lower[1] < at_lower[2]
    assert at_lower[2] >= 20
    acc = [np.mean(predict(X, y, r.x, r.extra["b"], RBF, Xte,
                           threshold=r.extra["support_threshold"]) == yte) for r in res]
    assert all(abs(a - acc[0]) <= 0.01 for a in acc)  # stated margin: 1 point of accuracy
    # the path's warm starts reach the cold-start optimum
    cold = smo_klr(X, y, C=10.0, lam=10.0, kernel=RBF, tol=1e-6)
    assert res[2].objective == pytest.approx(cold.objective, rel=1e-9)


def test_beyond_lam_max_minority_saturates():
    X, y = clouds(90, sep=2.0, seed=13, n_pos=60)  # minority: y = -1 (30 rows)
    C, gamma = 1.0, 1e-3
    lmax = lam_max(X, y, C=C, bound_tol=gamma, kernel=RBF)
    at0 = smo_klr(X, y, C=C, lam=0.0, bound_tol=gamma, kernel=RBF, tol=1e-6)
    res = smo_klr(X, y, C=C, lam=lmax, bound_tol=gamma, kernel=RBF, tol=1e-6)
    assert res.termination is TerminationCondition.OPTIMAL
    assert np.all(res.x[y < 0] >= C - gamma - 1e-12)
    assert not np.all(at0.x[y < 0] >= C - gamma - 1e-12)
    assert res.objective == pytest.approx(
        klr_dual_conic(RBF(X, X), y, C, lmax, gamma=gamma), rel=1e-6)


def test_integer_weights_equal_repeated_rows_and_zero_weight_removal():
    X, y = clouds(40, seed=14)
    s = np.random.default_rng(3).integers(0, 4, size=40)
    s[:2] = 1
    s[-2:] = 1
    res_w = smo_klr(X, y, C=2.0, lam=1.0, kernel=RBF, sample_weight=s, tol=1e-9)
    rep = np.repeat(np.arange(40), s)
    res_r = smo_klr(X[rep], y[rep], C=2.0, lam=1.0, kernel=RBF, tol=1e-9)
    assert res_w.objective == pytest.approx(res_r.objective, rel=1e-7)
    assert np.all(res_w.x[s == 0] == 0)
    Xte = np.random.default_rng(4).normal(1, 1.5, (30, 2))
    fw = decision_function(X, y, res_w.x, res_w.extra["b"], RBF, Xte, support_only=False)
    fr = decision_function(X[rep], y[rep], res_r.x, res_r.extra["b"], RBF, Xte, support_only=False)
    np.testing.assert_allclose(fw, fr, atol=1e-6)
    ref = klr_dual_conic(RBF(X, X)[np.ix_(s > 0, s > 0)], y[s > 0], 2.0, 1.0, weights=s[s > 0])
    assert res_w.objective == pytest.approx(ref, rel=1e-6)


def test_prediction_helpers():
    X, y = clouds(200, sep=3.0, seed=15)
    labels = np.where(y > 0, "b", "a")
    res = smo_klr(X, labels, C=10.0, lam=2.0, kernel=RBF, tol=1e-6)
    Xte, _ = clouds(100, sep=3.0, seed=16)
    f_full = decision_function(X, labels, res.x, res.extra["b"], RBF, Xte, support_only=False)
    f_sup = decision_function(X, labels, res.x, res.extra["b"], RBF, Xte,
                              threshold=res.extra["support_threshold"])
    thr_mass = np.sum(res.x[~res.extra["support"]])
    assert np.max(np.abs(f_full - f_sup)) <= thr_mass + 1e-12
    p = predict_proba(X, labels, res.x, res.extra["b"], RBF, Xte)
    assert np.all((p > 0) & (p < 1))
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-f_sup)), rtol=1e-12)
    assert set(predict(X, labels, res.x, res.extra["b"], RBF, Xte)) <= {"a", "b"}
    # training decision values from the solver equal a fresh kernel expansion
    f_tr = decision_function(X, labels, res.x, res.extra["b"], RBF, X, support_only=False)
    np.testing.assert_allclose(f_tr, res.extra["decision_train"], atol=1e-8)


def test_feasible_start_rules():
    y = np.r_[np.ones(30), -np.ones(10)]
    C = np.ones(40)
    lo, up = 1e-8 * C, C - 1e-8
    a = feasible_start(y, lo, up, C)
    np.testing.assert_allclose(a, np.where(y > 0, 1 / 30, 1 / 10))
    Cs = np.full(40, 0.05)  # 1/10 > C: fall back
    a = feasible_start(y, 1e-8 * Cs, Cs - 1e-8, Cs)
    assert abs(y @ a) < 1e-12 and np.all(a >= 1e-8 * Cs) and np.all(a <= Cs - 1e-8)
    X, yy = clouds(40, seed=17, n_pos=30)
    res = smo_klr(X, yy, C=0.05, kernel=RBF, tol=1e-6)
    assert res.termination is TerminationCondition.OPTIMAL


def test_iteration_limit_is_reported():
    X, y = clouds(200, seed=18)
    res = smo_klr(X, y, C=10.0, kernel=RBF, max_iter=5)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations == 5 and not res.is_optimal


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"y": np.zeros(20)}, "'y'"),
        ({"X": np.full((20, 2), np.nan)}, "NaN"),
        ({"C": 0.0}, "'C'"),
        ({"lam": -1.0}, "'lam'"),
        ({"bound_tol": 6.0}, "bound_tol"),
        ({"sample_weight": -np.ones(20)}, "sample_weight"),
        ({"kernel": "cosine"}, "'kernel'"),
        ({"X": np.ones((20, 2, 1))}, "'X'"),
    ],
)
def test_bad_input_raises_value_error(kwargs, word):
    X, y = clouds(20, seed=19)
    args = {"X": X, "y": y, "C": 10.0, "kernel": RBF, **kwargs}
    with pytest.raises(ValueError, match=word):
        smo_klr(args.pop("X"), args.pop("y"), **args)


def test_lam_max_needs_a_bound():
    X, y = clouds(20, seed=20)
    with pytest.raises(ValueError, match="bound_tol"):
        lam_max(X, y, C=1.0, bound_tol=0.0, kernel=RBF)


def test_block_q10_agrees_with_smo():
    """Block stops OPTIMAL only with the gap certificate; its objective then lies within that
    gap (relative to the natural scale) of an independent conic optimum."""
    X, y = clouds(100, seed=21)
    res = smo_klr(X, y, C=10.0, lam=1.0, kernel=RBF, tol=1e-6)
    blk = block_klr(X, y, C=10.0, lam=1.0, kernel=RBF, q=10, tol=1e-5)
    ref = klr_dual_conic(RBF(X, X), y, 10.0, 1.0)
    assert blk.termination is TerminationCondition.OPTIMAL
    assert 0.0 <= blk.gap <= 1e-6
    assert blk.bound <= ref + 1e-9 * blk.scale  # a proven lower bound
    assert abs(blk.objective - ref) <= 1e-6 * blk.scale
    assert abs(blk.objective - res.objective) <= 1e-6 * blk.scale


def test_primal_of_the_dual_matches_an_independent_primal_minimisation():
    """-min_{w,b} P(w, b) (BFGS on the primal, linear kernel) equals min f from SMO, and
    P(w(alpha), b) + f(alpha) >= 0 at random feasible alpha and b (weak duality)."""
    from scipy.optimize import minimize

    from solvers.smo.certificate import _entropy, klr_loss, klr_primal

    rng = np.random.default_rng(0)
    n, p = 60, 3
    X = rng.normal(size=(n, p))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = X @ X.T
    for lam, gamma in ((0.0, None), (2.0, None), (6.0, 0.05)):
        res = smo_klr(X, y, C=1.0, lam=lam, bound_tol=gamma, kernel="linear", tol=1e-10)
        C, lo, up = np.ones(n), res.extra["lower"], res.extra["upper"]

        def primal(v, lam=lam, lo=lo, up=up, C=C):
            t = y * (X @ v[:p] + v[p])
            return 0.5 * v[:p] @ v[:p] + klr_loss(t, lam, C, lo, up).sum()

        best = minimize(primal, np.zeros(p + 1), method="BFGS", options={"gtol": 1e-10})
        assert res.objective == pytest.approx(-best.fun, abs=1e-9 * abs(best.fun))
        assert res.bound == pytest.approx(res.objective, abs=1e-12 * res.scale)
        for _ in range(50):
            a = rng.uniform(lo, up)
            pos = y > 0
            heavy = pos if a[pos].sum() > a[~pos].sum() else ~pos
            target = a[~heavy].sum()
            a[heavy] = lo[heavy] + (a[heavy] - lo[heavy]) * (target - lo[heavy].sum()) / (
                a[heavy].sum() - lo[heavy].sum())
            qa = y * (K @ (a * y))
            f = 0.5 * a @ qa + _entropy(a, C).sum() - lam * a.sum()
            assert klr_primal(a, qa, y, lam, C, lo, up, rng.normal()) + f >= 0.0


def test_default_tolerances_are_certified_or_converged():
    """OPTIMAL means the gap certificate holds; without refinement a loose tol is CONVERGED."""
    X, y = clouds(300, seed=23)
    res = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF)
    assert res.termination is TerminationCondition.OPTIMAL and res.gap <= 1e-6
    loose = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF, tol=1.0, refine=False)
    assert loose.gap > 1e-6  # measured ~1e-4: the loose rule does not certify
    assert loose.termination is TerminationCondition.CONVERGED
    assert loose.solution_status is SolutionStatus.FEASIBLE
    assert loose.extra["stopping_rule"]["tol"] == 1.0
    refined = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF, tol=1.0)
    assert refined.termination is TerminationCondition.OPTIMAL and refined.gap <= 1e-6
    assert refined.extra["stopping_rule"]["refinements"] >= 1
    assert refined.extra["stopping_rule"]["tol"] < 1.0


def test_kernel_cache_path_agrees_with_full_matrix():
    """Q by cached columns (float64 and float32, with shrinking) equals the in-memory Q."""
    X, y = clouds(400, seed=22)
    full = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF, tol=1e-6)
    c64 = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF, tol=1e-6, cache_mb=0.5, cache_dtype="float64")
    c32 = smo_klr(X, y, C=10.0, lam=2.0, kernel=RBF, tol=1e-6, cache_mb=0.5, cache_dtype="float32")
    assert c64.objective == pytest.approx(full.objective, rel=1e-10)
    assert c32.objective == pytest.approx(full.objective, rel=1e-6)
    assert c32.termination is TerminationCondition.OPTIMAL


@pytest.mark.parametrize("bound_tol", [None, 0.2])
def test_in_loop_gap_equals_the_certificate_functions(bound_tol):
    """The compiled loops' gap estimate (core._klr_gap) against the numpy certificate that
    decides OPTIMAL, at a feasible alpha far from optimal and several b (S-KLR's bounds make
    the clipped branch of the loss occur)."""
    from solvers.smo.certificate import klr_best_intercept, klr_objective, klr_primal
    from solvers.smo.core import _klr_b_newton, _klr_gap, entropy_terms

    n, C, lam = 80, 2.0, 1.5
    X, y = clouds(n, seed=31)
    K = RBF(X, X)
    Ci = C * np.random.default_rng(3).uniform(0.5, 2.0, n)
    g = (bound_tol or 1e-12) * Ci / C
    lo, up = g, Ci - g
    alpha = np.random.default_rng(4).uniform(lo, up)
    qa = y * (K @ (alpha * y))
    lin = np.full(n, -lam)
    grad = qa + lin + entropy_terms(alpha, Ci)[1]
    f_ref = klr_objective(alpha, qa, lam, Ci)
    for b in (-3.0, 0.0, 0.7, 25.0):
        f, gap = _klr_gap(y, alpha, Ci - alpha, grad, lin, lo, up, Ci, b)
        gap_ref = f_ref + klr_primal(alpha, qa, y, lam, Ci, lo, up, b)
        assert f == pytest.approx(f_ref, rel=1e-12)
        assert gap == pytest.approx(gap_ref, rel=1e-10, abs=1e-10 * abs(f_ref))
        assert gap > 0
    # Newton towards the best b (the loops' second try) against the certificate's bisection
    b_best = klr_best_intercept(qa, y, lam, Ci, lo, up)
    b_newton = _klr_b_newton(y, alpha, Ci - alpha, grad, lin, lo, up, Ci, 0.0, 30)
    assert b_newton == pytest.approx(b_best, abs=1e-9)
    gap_mid = _klr_gap(y, alpha, Ci - alpha, grad, lin, lo, up, Ci, 3.0)[1]
    gap_4 = _klr_gap(y, alpha, Ci - alpha, grad, lin, lo, up, Ci,
                     _klr_b_newton(y, alpha, Ci - alpha, grad, lin, lo, up, Ci, 3.0, 4))[1]
    assert gap_4 < gap_mid


@pytest.mark.parametrize(("n", "lam", "bound_tol"), [(400, 0.0, None), (3000, 1.0, 0.01)])
def test_default_tol_stops_on_the_certificate(n, lam, bound_tol):
    """tol=None (the default) stops once the gap certifies, before the violation rule's 1e-6:
    same optimum as a run to violation 1e-10 (within the certificate), fewer steps, certified;
    pairwise SMO at n = 400, the batched solver at 3000."""
    X, y = clouds(n, p=3, seed=5)
    kw = dict(C=1.0, lam=lam, bound_tol=bound_tol, kernel=RBF)
    auto = smo_klr(X, y, **kw)
    tight = smo_klr(X, y, tol=1e-10, **kw)
    by_tol = smo_klr(X, y, tol=1e-6, **kw)
    rule = auto.extra["stopping_rule"]
    assert rule["stopped_by"] == "gap" and rule["tol_requested"] is None
    assert auto.certified and auto.gap <= 0.9e-6
    assert auto.extra["max_violation"] > 1e-6  # stopped before the violation rule would
    assert auto.iterations < by_tol.iterations
    assert by_tol.extra["stopping_rule"]["stopped_by"] == "tol"
    assert by_tol.extra["max_violation"] <= 1e-6
    assert tight.certified
    assert 0 <= auto.objective - tight.objective <= 1e-6 * auto.scale


@pytest.mark.parametrize(("n", "working_set"), [(400, 2), (3000, None)])
def test_gap_stop_waits_for_the_solution_rule_in_one_run(n, working_set):
    """Where the solution rule (||w - w*|| within SOLUTION_TOL of ||w||) needs a smaller gap than
    CERTIFICATE_TOL, the loops' gap stop waits for it (core.GAP_SOLUTION) instead of stopping at
    the relative gap and running a second round: one run, certified, and w(alpha) within the
    rule of an independent run to violation 1e-10 (pairwise SMO at n = 400, batched at 3000)."""
    from solvers.result import CERTIFICATE_TOL, SOLUTION_TOL

    X, y = clouds(n, p=3, seed=7)
    K = RBF(X, X)
    auto = smo_klr(X, y, C=1.0, kernel=RBF, working_set=working_set)
    tight = smo_klr(X, y, C=1.0, kernel=RBF, tol=1e-10, working_set=working_set)
    a, a_ref = auto.x * y, tight.x * y
    w2_ref = float(a_ref @ K @ a_ref)
    allowance = 0.5 * SOLUTION_TOL**2 * max(w2_ref, 1.0)  # q_max = 1 (RBF)
    assert allowance < CERTIFICATE_TOL * auto.scale  # the solution rule binds here
    rule = auto.extra["stopping_rule"]
    assert rule["stopped_by"] == "gap" and rule["refinements"] == 0
    assert auto.certified and tight.certified
    assert auto.objective - auto.bound <= 0.5 * SOLUTION_TOL**2 * max(float(a @ K @ a), 1.0)
    d2 = float((a - a_ref) @ K @ (a - a_ref))  # ||w - w_ref||^2
    assert np.sqrt(d2) <= SOLUTION_TOL * np.sqrt(w2_ref)
