"""Sketched ridge solvers against the closed form ``np.linalg.solve(A'A + gamma I, A'b)``,
the paper's convergence rates (Theorems 5-6), its bias / variance brackets (Theorems 2-3),
the statistical metrics against a Monte-Carlo estimate, the instance generators, and bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

from instances.ridge import make_ridge, random_fourier_features
from optmodels.ridge import Ridge
from solvers.result import SolutionStatus, TerminationCondition
from solvers.sketch import (
    RIDGE_METHODS,
    FrequentDirections,
    SketchPreconditioner,
    fdrr,
    make_random_sketch,
    ridge_metrics,
    solve_ridge,
)
from solvers.sketch.metrics import estimator_metrics, fd_operator, random_operator
from solvers.sketch.ridge import (
    DIVERGENCE_FACTOR,
    PCG_SKETCH_BUDGET,
    PCG_SKETCH_DTYPE,
    PROBE_REMAINING,
    length_squared_sample,
    pcg_sketch_cost,
    pcg_sketch_size,
    probe_verdict,
)

pytestmark = pytest.mark.usefixtures("one_blas_thread")

def _closed_form(A, b, gamma):
    return np.linalg.solve(A.T @ A + gamma * np.eye(A.shape[1]), A.T @ b)


def _tails(A):
    s2 = np.linalg.svd(A, compute_uv=False) ** 2
    return np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])


def _best_alpha_delta(A, m):
    """``min_k ||A - A_k||_F^2 / (m - k)`` over 0 <= k < m (the sharpest FD bound)."""
    tails = _tails(A)
    ks = np.arange(m)
    return float(np.min(tails[ks] / (m - ks)))


@pytest.fixture(scope="module")
def hard():
    """d = 300, effective rank 30, slow tail: with m = 40 the sketch error is ~115."""
    A, b, _ = make_ridge(n=1500, d=300, r=0.1, seed=3)
    return A, b


@pytest.fixture(scope="module")
def easy():
    A, b, _ = make_ridge(n=1500, d=200, r=0.1, seed=3)
    return A, b


def _rel(x, xs):
    return np.linalg.norm(x - xs) / np.linalg.norm(xs)


# ------------------------------------------------------------------ every solver vs closed form
ITERATIVE_CASES = [  # (method, m, gamma): conditions under which each should converge
    ("fd", 60, 1.0), ("rfd", 60, 1.0), ("pcg-fd", 60, 1.0), ("pcg-rfd", 60, 1.0),
    ("ihs-gaussian", 100, 1000.0), ("ihs-sjlt", 100, 1000.0),
    ("single-gaussian", 100, 1000.0), ("single-sjlt", 100, 1000.0),
    ("cholesky", 1, 1.0),
]


@pytest.mark.parametrize("method,m,gamma", ITERATIVE_CASES)
def test_iterative_solvers_match_closed_form(easy, method, m, gamma):
    A, b = easy
    xs = _closed_form(A, b, gamma)
    res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=60, tol=1e-10, x_star=xs)
    assert res.termination is TerminationCondition.OPTIMAL
    assert res.solution_status is SolutionStatus.OPTIMAL
    assert _rel(res.x, xs) <= 1e-8
    f_star = 0.5 * np.sum((A @ xs - b) ** 2) + 0.5 * gamma * xs @ xs
    assert res.objective == pytest.approx(f_star, rel=1e-12)
    hist = res.extra["history"]
    assert len(hist) == res.iterations
    assert hist[-1]["grad_norm"] <= 1e-10
    assert hist[-1]["rel_error"] == pytest.approx(_rel(res.x, xs))


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("m,gamma", [(40, 400.0), (40, 1000.0), (60, 1.0)])
def test_fdrr_within_derived_error_bound(hard, easy, robust, m, gamma):
    """||xhat - x*|| = ||Hhat^{-1}(H - Hhat) x*|| <= eps/(gamma + rho) ||x*||, where
    eps = alpha Delta_k (FD: 0 <= H - Hhat <= eps I) or eps = alpha Delta_k / 2 (RFD).
    The cases are chosen with bound < 1, so that x = 0 (relative error 1) fails it."""
    A, b = hard if m == 40 else easy
    xs = _closed_form(A, b, gamma)
    x = fdrr(A, b, gamma, m, robust=robust)
    rho = FrequentDirections(m, robust=robust).fit(A).rho_
    eps = _best_alpha_delta(A, m) / (2 if robust else 1)
    bound = eps / (gamma + rho)
    assert bound < 1.0
    assert _rel(x, xs) <= bound * (1 + 1e-8)
    res = solve_ridge(A, b, gamma, method="rfdrr" if robust else "fdrr", m=m, x_star=xs)
    np.testing.assert_allclose(res.x, x, rtol=1e-12)
    assert res.iterations == 1
    # a one-shot estimator is an estimate, however small its gradient
    assert res.termination is TerminationCondition.ESTIMATE
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert not res.is_optimal
    assert res.extra["rel_error"] == pytest.approx(_rel(x, xs), rel=1e-12)
    assert "estimate" in res.raw_status


@pytest.mark.parametrize("model", ["classical", "hessian"])
@pytest.mark.parametrize("kind", ["gaussian", "sjlt"])
def test_one_shot_random_sketches_match_their_closed_form(easy, model, kind):
    """x^C = (A'S'SA + g I)^{-1} A'S'S b, x^H = (A'S'SA + g I)^{-1} A'b with S explicit, and
    their distance to x* inside the bracket derived from the explicit S.

    With Ht = A'S'SA + g I and H = A'A + g I: x^H - x* = Ht^{-1}(H - Ht) x*, so
    ||x^H - x*|| <= e_H ||x*||, e_H = ||Ht^{-1}(H - Ht)||_2; and
    x^C - x* = Ht^{-1}(A'S'Sb - A'b) + (x^H - x*), so ||x^C - x*|| / ||x*|| lies within e_H of
    e_C = ||Ht^{-1}(A'S'Sb - A'b)|| / ||x*||. On this data e_H < 1 and e_C - e_H > 1: the
    Hessian sketch is better than x = 0, the classical sketch provably worse (m < d)."""
    A, b = easy
    gamma, m = 1000.0, 120
    S = make_random_sketch(kind, m, seed=7).fit(np.eye(A.shape[0])).sketch_
    SA = S @ A
    Ht = SA.T @ SA + gamma * np.eye(A.shape[1])
    rhs = SA.T @ (S @ b) if model == "classical" else A.T @ b
    ref = np.linalg.solve(Ht, rhs)
    xs = _closed_form(A, b, gamma)
    res = solve_ridge(A, b, gamma, method=f"{model}-{kind}", m=m, seed=7, x_star=xs)
    np.testing.assert_allclose(res.x, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
    H = A.T @ A + gamma * np.eye(A.shape[1])
    e_h = np.linalg.norm(np.linalg.solve(Ht, H - Ht), 2)
    err = _rel(res.x, xs)
    if model == "hessian":
        assert e_h < 1.0
        assert err <= e_h * (1 + 1e-9)
    else:
        e_c = np.linalg.norm(np.linalg.solve(Ht, SA.T @ (S @ b) - A.T @ b)) / np.linalg.norm(xs)
        assert e_c - e_h > 1.0
        assert e_c - e_h <= err * (1 + 1e-9) and err <= (e_c + e_h) * (1 + 1e-9)
    assert res.termination is TerminationCondition.ESTIMATE
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.extra["rel_error"] == pytest.approx(err, rel=1e-12)


# ------------------------------------------------------------------ Theorems 5 and 6
@pytest.mark.parametrize("gamma", [400.0, 1000.0])
def test_iterative_fd_rate_theorem5(hard, gamma):
    A, b = hard
    m = 40
    bq = _best_alpha_delta(A, m) / gamma
    assert bq < 0.5  # the theorem's condition holds
    beta = bq / (1 - bq)
    xs = _closed_form(A, b, gamma)
    res = solve_ridge(A, b, gamma, method="fd", m=m, max_iter=12, tol=0.0, x_star=xs)
    errs = np.array([h["rel_error"] for h in res.extra["history"]])
    t = np.arange(1, len(errs) + 1)
    assert np.all(errs <= beta**t + 1e-12)
    assert errs[-1] < 1e-6


@pytest.mark.parametrize("gamma", [150.0, 400.0])
def test_iterative_rfd_rate_theorem6(hard, gamma):
    A, b = hard
    m = 40
    bq = _best_alpha_delta(A, m) / gamma
    assert bq < 1.0
    beta = bq / (2 - bq)
    xs = _closed_form(A, b, gamma)
    res = solve_ridge(A, b, gamma, method="rfd", m=m, max_iter=12, tol=0.0, x_star=xs)
    errs = np.array([h["rel_error"] for h in res.extra["history"]])
    t = np.arange(1, len(errs) + 1)
    assert np.all(errs <= beta**t + 1e-12)


def test_pcg_converges_where_iterative_fd_diverges(hard):
    A, b = hard
    gamma, m = 10.0, 40
    xs = _closed_form(A, b, gamma)
    fd = solve_ridge(A, b, gamma, method="fd", m=m, max_iter=10, x_star=xs)
    errs = [h["rel_error"] for h in fd.extra["history"]]
    assert errs[-1] > 10 * errs[0]  # Algorithm 1 diverges here ...
    assert fd.termination is TerminationCondition.NUMERICAL_ERROR  # ... and says so
    assert fd.iterations < 10
    f_star = 0.5 * np.sum((A @ xs - b) ** 2) + 0.5 * gamma * xs @ xs
    for method in ("pcg-fd", "pcg-rfd"):
        res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=60, x_star=xs)
        assert res.termination is TerminationCondition.OPTIMAL, method
        assert _rel(res.x, xs) <= 1e-8
        assert res.iterations <= 40
        # CG decreases the H-norm of the error, f(x_t) - f* = ||x_t - x*||_H^2 / 2,
        # monotonically: the recorded f(x_t) never increase (beyond round-off) and end at f*
        f = np.array([h["objective"] for h in res.extra["history"]])
        assert np.all(np.diff(f) <= 1e-13 * f[0]), method
        assert f[0] > f_star * (1 + 1e-6)  # the first iterate is not yet optimal
        assert f[-1] == pytest.approx(f_star, rel=1e-12)
        f_last = 0.5 * np.sum((A @ res.x - b) ** 2) + 0.5 * gamma * res.x @ res.x
        assert f[-1] == pytest.approx(f_last, rel=1e-12)


def test_pcg_on_ill_conditioned_data():
    """Checklist row 20: cond(X) = 1e6; PCG with the FD preconditioner vs an SVD reference."""
    rng = np.random.default_rng(11)
    n, d = 400, 60
    U, _ = np.linalg.qr(rng.standard_normal((n, d)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    s = np.logspace(0, -6, d)
    A = (U * s) @ V.T
    b = rng.standard_normal(n)
    for gamma in (1.0, 1e-4, 1e-8):
        ub = U.T @ b
        xs = V @ (s / (s**2 + gamma) * ub)  # SVD closed form
        f = 0.5 * np.sum((A @ xs - b) ** 2) + 0.5 * gamma * xs @ xs
        res = solve_ridge(A, b, gamma, method="pcg-rfd", m=30, max_iter=200, tol=1e-12,
                          x_star=xs)
        assert abs(res.objective - f) <= 1e-8 * abs(f), gamma
        assert _rel(res.x, xs) <= 1e-6, gamma


def test_pcg_with_default_sketch_size_reaches_1e10_on_ill_conditioned_data():
    """The default m (solvers.options.sketch_size) on cond(A) = 1e5 with d < 256 (m = d) and
    d > 256 (m = 256 < d, a spectrum decaying past m): OPTIMAL at tol 1e-10 within a few
    dozen passes, against the SVD closed form."""
    from solvers.options import sketch_size

    rng = np.random.default_rng(12)
    for n, d in ((300, 80), (900, 320)):
        U, _ = np.linalg.qr(rng.standard_normal((n, d)))
        V, _ = np.linalg.qr(rng.standard_normal((d, d)))
        s = np.logspace(0, -5, d)
        A = (U * s) @ V.T
        b = rng.standard_normal(n)
        gamma = 1e-6
        xs = V @ (s / (s**2 + gamma) * (U.T @ b))
        m = sketch_size(None, d, "test")
        res = solve_ridge(A, b, gamma, method="pcg-rfd", m=m, max_iter=60, tol=1e-10)
        assert res.termination is TerminationCondition.OPTIMAL, (d, res.raw_status)
        assert res.iterations <= 60
        assert _rel(res.x, xs) <= 1e-4, d


# ------------------------------------------------------------------ Theorems 2-3 and metrics
@pytest.mark.parametrize("gamma", [1.0, 4.0, 16.0, 64.0])
def test_fdrr_bias_variance_within_theorem_2_3_brackets(gamma):
    """With gamma' = gamma - alpha Delta_k > 0 and 1 - theta = (gamma'/gamma)^2 (the condition
    m = Delta_k / ((1 - sqrt(1 - theta)) gamma) + k solved for theta), bias^2, trace var and MSE
    of FDRR lie in [(1 - theta), 1/(1 - theta)] times the optimal ones."""
    A, _, x0 = make_ridge(n=512, d=256, r=0.25, seed=0)
    m = 128
    ad = _best_alpha_delta(A, m)
    assert ad < gamma
    one_minus_theta = (1 - ad / gamma) ** 2
    out = ridge_metrics(A, x0, gamma, sigma=2.0, m=m, methods=("fdrr", "rfdrr"))
    opt = out["optimal"]
    for name in ("fdrr", "rfdrr"):
        for key in ("bias2", "var_trace", "mse"):
            ratio = out[name][key] / opt[key]
            assert one_minus_theta <= ratio <= 1 / one_minus_theta, (name, key, ratio)
            assert out[name][f"rel_{key}"] <= 1 / one_minus_theta - 1


def test_metrics_match_monte_carlo():
    """Analytic bias / trace var of FDRR and of the classical sketch vs 4000 noise draws."""
    rng = np.random.default_rng(2)
    A, _, x0 = make_ridge(n=120, d=40, r=0.2, seed=4)
    sigma, gamma = 2.0, 0.5
    for M in (fd_operator(A, gamma, 10, robust=False),
              random_operator(A, gamma, 20, kind="sjlt", model="classical", seed=1)):
        met = estimator_metrics(M, A, x0, sigma)
        Y = (A @ x0)[:, None] + sigma * rng.standard_normal((120, 4000))
        X = M @ Y
        mean = X.mean(axis=1)
        emp_var = np.sum(X.var(axis=1))
        emp_bias = mean - x0
        assert emp_var == pytest.approx(met["var_trace"], rel=0.06)
        se = np.sqrt(met["var_trace"] / 4000)
        assert abs(np.linalg.norm(emp_bias) - np.sqrt(met["bias2"])) <= 4 * se
    # optimal: bias = -gamma H^{-1} x0 (Lemma 1)
    out = ridge_metrics(A, x0, gamma, m=10, methods=())
    H = A.T @ A + gamma * np.eye(40)
    assert out["optimal"]["bias2"] == pytest.approx(
        np.sum((gamma * np.linalg.solve(H, x0)) ** 2), rel=1e-10)


def test_preconditioner_inverse_equals_dense_on_fd_sketch(easy):
    A, _ = easy
    sk = FrequentDirections(30, robust=True).fit(A)
    P = SketchPreconditioner(sk.sketch_, 2.0 + sk.rho_)
    B = sk.sketch_
    H = B.T @ B + (2.0 + sk.rho_) * np.eye(A.shape[1])
    v = np.random.default_rng(0).standard_normal(A.shape[1])
    np.testing.assert_allclose(P.solve(v), np.linalg.solve(H, v), rtol=1e-8)


# ------------------------------------------------------------------ results, history, status
def test_history_and_result_fields(hard):
    A, b = hard
    xs = _closed_form(A, b, 100.0)
    res = solve_ridge(A, b, 100.0, method="rfd", m=40, max_iter=5, tol=1e-30, x_star=xs)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations == 5
    hist = res.extra["history"]
    assert [h["iteration"] for h in hist] == [1, 2, 3, 4, 5]
    assert all({"iteration", "grad_norm", "objective", "rel_error", "time"} <= set(h)
               for h in hist)
    assert res.extra["sketch_time"] > 0
    assert res.extra["passes"] == pytest.approx(5.5)  # A'b plus one pass per iteration
    assert res.extra["rho"] > 0
    res2 = solve_ridge(A, b, 100.0, method="rfd", m=40, max_iter=5)
    assert all("rel_error" not in h for h in res2.extra["history"])


def test_divergence_is_reported_not_hidden(hard):
    """gamma = 1e-3 far below sigma_41(A)^2: every m = 40 sketch leaves a direction where the
    step overshoots by (||A v||^2 + gamma) / gamma, so the single-sketch iteration diverges."""
    A, b = hard
    gamma = 1e-3
    assert np.linalg.svd(A, compute_uv=False)[40] ** 2 > gamma
    res = solve_ridge(A, b, gamma, method="single-gaussian", m=40, max_iter=300)
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations < 300
    assert "increase m or gamma, or use pcg-rfd" in res.raw_status
    assert not res.is_optimal


@pytest.fixture(scope="module")
def small():
    """n = 200, d = 30: sigma_k(A)^2 = 205, 188, ..., 22.7 (k = 10), 15.5 (k = 11)."""
    A, b, _ = make_ridge(n=200, d=30, r=0.3, seed=1)
    return A, b


def _f(A, b, gamma, x):
    return 0.5 * float(np.sum((A @ x - b) ** 2)) + 0.5 * gamma * float(x @ x)


def test_diverging_iterative_fd_stops_with_numerical_error(small):
    """m = 10, gamma = 10: ||A'A - B'B||_2 > gamma and lambda_max(Hhat^{-1} H) > 2, so
    Algorithm 1 diverges. Reference: the same iteration run densely here; the solver must stop
    at the first t with f(x_t) > DIVERGENCE_FACTOR f(0) and return the best iterate."""
    A, b = small
    gamma, m, d = 10.0, 10, A.shape[1]
    B = FrequentDirections(m).fit(A).sketch_
    H = A.T @ A + gamma * np.eye(d)
    Hh = B.T @ B + gamma * np.eye(d)
    assert np.linalg.norm(A.T @ A - B.T @ B, 2) > gamma  # the hint's condition fails
    assert np.max(np.linalg.eigvals(np.linalg.solve(Hh, H)).real) > 2.0  # so it diverges
    f0 = 0.5 * float(b @ b)
    xs_dense, fs = [np.zeros(d)], [f0]
    while fs[-1] <= DIVERGENCE_FACTOR * f0:
        x = xs_dense[-1]
        xs_dense.append(x - np.linalg.solve(Hh, H @ x - A.T @ b))
        fs.append(_f(A, b, gamma, xs_dense[-1]))
    t_stop = len(fs) - 1
    best = int(np.argmin(fs))
    assert 2 <= t_stop <= 20 and best >= 1  # a non-trivial case: x_best != 0
    res = solve_ridge(A, b, gamma, method="fd", m=m, max_iter=50)
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations == t_stop
    assert res.extra["best_iteration"] == best
    np.testing.assert_allclose(res.x, xs_dense[best], rtol=1e-8)
    assert res.objective == pytest.approx(fs[best], rel=1e-10)
    assert "||A'A - B'B||_2 < gamma" in res.raw_status
    assert "increase m or gamma, or use pcg-rfd which never diverges" in res.raw_status
    # stopped by max_iter before the factor, with f above f(0): a limit plus the same hint
    t_cap = next(t for t in range(1, t_stop) if fs[t] > f0 and t > best)
    capped = solve_ridge(A, b, gamma, method="fd", m=m, max_iter=t_cap)
    assert capped.termination is TerminationCondition.ITERATION_LIMIT
    assert capped.objective == pytest.approx(fs[t_cap], rel=1e-10)
    assert "not contracting" in capped.raw_status and "pcg-rfd" in capped.raw_status
    # the advice works: PCG with the same sketch reaches the optimum
    pcg = solve_ridge(A, b, gamma, method="pcg-rfd", m=m, max_iter=100)
    assert pcg.is_optimal
    assert _rel(pcg.x, _closed_form(A, b, gamma)) <= 1e-8


@pytest.mark.parametrize("robust", [False, True])
def test_hint_condition_suffices_beyond_the_theorems(small, robust):
    """The hint's condition ||A'A - B'B - rho I||_2 < gamma + rho (rho = 0 for FD) makes every
    eigenvalue of Hhat^{-1} H lie in (0, 2), so the step contracts even where Theorems 5 / 6
    (b = min_k ||A - A_k||_F^2 / ((m - k) gamma) < 1/2 resp. < 1) do not apply."""
    A, b = small
    m, d = 10, A.shape[1]
    sk = FrequentDirections(m, robust=robust).fit(A)
    B, rho = sk.sketch_, sk.rho_
    err = np.linalg.norm(A.T @ A - B.T @ B - rho * np.eye(d), 2)
    gamma = 1.05 * err if not robust else 10.0
    assert err < gamma + rho
    assert _best_alpha_delta(A, m) / gamma > 1.0  # outside both theorems
    H = A.T @ A + gamma * np.eye(d)
    Hh = B.T @ B + (gamma + rho) * np.eye(d)
    contraction = np.max(np.abs(1 - np.linalg.eigvals(np.linalg.solve(Hh, H)).real))
    assert contraction < 1.0
    # the error shrinks by `contraction` per step in the H-norm: enough steps for 1e-13
    steps = int(np.ceil(np.log(1e-13) / np.log(contraction))) + 20
    res = solve_ridge(A, b, gamma, method="rfd" if robust else "fd", m=m, max_iter=steps)
    assert res.termination is TerminationCondition.OPTIMAL
    assert _rel(res.x, _closed_form(A, b, gamma)) <= 1e-8


@pytest.mark.parametrize("kind", ["gaussian", "sjlt"])
def test_diverging_ihs_stops_with_numerical_error(small, kind):
    """m = 10, gamma = 10 < sigma_11(A)^2 = 15.5: for EVERY sketch S with m = 10 rows there is
    a unit v with S A v = 0 and ||A v||^2 >= sigma_11^2 (Courant-Fischer), so
    v'Hv / v'Hhat v >= 1 + sigma_11^2 / gamma > 2 and no step contracts; IHS diverges."""
    A, b = small
    gamma, m = 10.0, 10
    assert np.linalg.svd(A, compute_uv=False)[m] ** 2 > gamma
    res = solve_ridge(A, b, gamma, method=f"ihs-{kind}", m=m, max_iter=50)
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.iterations < 50
    hist = res.extra["history"]
    f0 = 0.5 * float(b @ b)
    assert hist[-1]["objective"] > DIVERGENCE_FACTOR * f0
    assert all(h["objective"] <= DIVERGENCE_FACTOR * f0 for h in hist[:-1])
    # the returned x is the best of x_0 = 0 and the recorded iterates, its f recomputed here
    assert _f(A, b, gamma, res.x) == pytest.approx(
        min([f0] + [h["objective"] for h in hist]), rel=1e-10)
    assert "A'A + gamma I < 2 (A'S'SA + gamma I)" in res.raw_status
    assert "increase m or gamma, or use pcg-rfd which never diverges" in res.raw_status
    # a large enough gamma makes the same sketch size converge
    ok = solve_ridge(A, b, 300.0, method=f"ihs-{kind}", m=m, max_iter=60)
    assert ok.termination is TerminationCondition.OPTIMAL


SCALE_CASES = [  # (method, m, gamma, max_iter): converging, limited and diverging runs
    # pcg-rfd with m = 15: with m = 10 its sampled preconditioner needs 22 iterations and CG's
    # rounding (of b * 1e-12) grows ~10x per iteration past the 12th, so the histories part
    ("fd", 10, 100.0, 60), ("rfd", 10, 30.0, 60), ("pcg-rfd", 15, 1.0, 100),
    ("ihs-sjlt", 15, 100.0, 60), ("single-gaussian", 20, 300.0, 60),
    ("fd", 10, 30.0, 20), ("fd", 10, 10.0, 50), ("ihs-gaussian", 10, 10.0, 50),
    ("cholesky", 1, 1.0, 1),
]


@pytest.mark.parametrize("method,m,gamma,max_iter", SCALE_CASES)
def test_status_and_iterations_invariant_to_scaling_b(small, method, m, gamma, max_iter):
    """b -> s b scales every iterate, gradient and term of the rule by s: the same
    termination, iteration count and relative-gradient history for s = 1e-12, 1, 1e12 (a
    rule relative to max(1, ||A'b||) would stop b * 1e-12 at once)."""
    A, b = small
    runs = [solve_ridge(A, s * b, gamma, method=method, m=m, max_iter=max_iter, tol=1e-10)
            for s in (1e-12, 1.0, 1e12)]
    ref = runs[1]
    for s, res in zip((1e-12, 1e12), (runs[0], runs[2]), strict=True):
        assert res.termination is ref.termination, s
        assert res.iterations == ref.iterations, s
        np.testing.assert_allclose([h["grad_norm"] for h in res.extra["history"]],
                                   [h["grad_norm"] for h in ref.extra["history"]],
                                   rtol=1e-4, atol=1e-13)  # rounding of r = A'b - H x
        np.testing.assert_allclose(res.x, s * ref.x, rtol=1e-6, atol=1e-9 * s * np.abs(ref.x).max())
    assert {r.termination for r in runs} <= {TerminationCondition.OPTIMAL,
                                             TerminationCondition.ITERATION_LIMIT,
                                             TerminationCondition.NUMERICAL_ERROR}


def test_certificate_bound_brackets_the_exact_optimum(small):
    """For nonzero sketched answers (a one-shot estimate, a run stopped at max_iter and a
    diverged run's best iterate): lower_bound(x) = f(x) - ||grad f(x)||^2 / (2 gamma) <= f* <=
    f(x), f* from the closed form; run_strategy keeps their statuses and reports
    gap = (f(x) - lower_bound(x)) / f(0) >= (f(x) - f*) / f(0) > 0."""
    A, b = small
    gamma = 10.0
    prob = Ridge(A, b, alpha=gamma)
    xs = _closed_form(A, b, gamma)
    f_star = _f(A, b, gamma, xs)
    f0 = 0.5 * float(b @ b)
    cases = {"fdrr": ({"m": 10}, TerminationCondition.ESTIMATE),
             "rfd": ({"m": 10, "max_iter": 3}, TerminationCondition.ITERATION_LIMIT),
             "fd": ({"m": 10, "max_iter": 50}, TerminationCondition.NUMERICAL_ERROR)}
    for method, (opts, expected) in cases.items():
        res = prob.solve(method, **opts)
        x = res.x
        assert np.linalg.norm(x) > 0.1 * np.linalg.norm(xs), method
        g = A.T @ (A @ x - b) + gamma * x
        lower = _f(A, b, gamma, x) - float(g @ g) / (2 * gamma)
        assert lower <= f_star <= _f(A, b, gamma, x), method
        assert _f(A, b, gamma, x) > f_star * (1 + 1e-9), method  # not the optimum
        assert res.bound == pytest.approx(lower, rel=1e-9)
        assert res.gap == pytest.approx((_f(A, b, gamma, x) - lower) / f0, rel=1e-9)
        assert res.gap >= (_f(A, b, gamma, x) - f_star) / f0
        assert not res.is_optimal
        assert res.termination is expected, method
        assert res.extra["rel_error"] == pytest.approx(_rel(x, xs), rel=1e-9)


@pytest.mark.parametrize("method", ["pcg-rfd", "rfd"])
def test_own_rule_then_certificate(small, method):
    """OPTIMAL from the solver's rule survives run_strategy only with gap <= 1e-6: a tight tol
    stays OPTIMAL; a loose tol (1e-2) meets the rule but its gap, recomputed here as
    ||grad f||^2 / (2 gamma f(0)), is above 1e-6, so it becomes CONVERGED."""
    A, b = small
    gamma = 30.0
    prob = Ridge(A, b, alpha=gamma)
    f0 = 0.5 * float(b @ b)
    tight = prob.solve(method, m=10, tol=1e-10, max_iter=300)
    loose = prob.solve(method, m=10, tol=1e-2, max_iter=300)
    for res in (tight, loose):
        g = A.T @ (A @ res.x - b) + gamma * res.x
        assert res.gap == pytest.approx(float(g @ g) / (2 * gamma * f0), rel=1e-6, abs=1e-15)
    assert tight.is_optimal and tight.gap <= 1e-6
    assert loose.extra["grad_norm"] <= 1e-2  # its own rule was met ...
    assert loose.gap > 1e-6  # ... but the certificate is not
    assert loose.termination is TerminationCondition.CONVERGED
    assert loose.solution_status is SolutionStatus.FEASIBLE


def test_zero_rhs_gives_zero():
    A = np.random.default_rng(0).standard_normal((20, 5))
    res = solve_ridge(A, np.zeros(20), 1.0, method="pcg-fd", m=3)
    assert res.is_optimal and np.all(res.x == 0)


def test_verbose_prints(capsys, easy):
    A, b = easy
    solve_ridge(A, b, 1.0, method="fd", m=60, max_iter=2, verbose=True)
    assert "iter" in capsys.readouterr().out


# ------------------------------------------------------------------ bad input
def test_bad_input_raises_naming_argument():
    A = np.random.default_rng(0).standard_normal((30, 8))
    b = np.ones(30)
    cases = [
        (dict(A=np.where(np.eye(30, 8) > 0, np.nan, A)), "'A'"),
        (dict(b=np.r_[np.nan, b[1:]]), "'b'"),
        (dict(A=A[:, 0]), "'A'"),
        (dict(b=np.ones(29)), "'b'"),
        (dict(gamma=0.0), "'gamma'"),
        (dict(gamma=-1.0), "'gamma'"),
        (dict(gamma=np.nan), "'gamma'"),
        (dict(m=9), "'m'"),
        (dict(m=0), "'m'"),
        (dict(m=2.5), "'m'"),
        (dict(max_iter=0), "'max_iter'"),
        (dict(tol=-1.0), "'tol'"),
        (dict(x_star=np.ones(7)), "'x_star'"),
        (dict(block_size=0), "'block_size'"),
    ]
    for kw, name in cases:
        args = dict(A=A, b=b, gamma=1.0, m=4)
        args.update(kw)
        with pytest.raises(ValueError, match=name):
            solve_ridge(args.pop("A"), args.pop("b"), args.pop("gamma"), method="fd", **args)
    with pytest.raises(ValueError, match="'method'.*pcg-rfd"):
        solve_ridge(A, b, 1.0, method="newton")
    assert "pcg-fd" in RIDGE_METHODS and "cholesky" in RIDGE_METHODS


# ------------------------------------------------------------------ instances
def test_make_ridge_structure():
    A, b, x0 = make_ridge(n=400, d=100, r=0.1, sigma=2.0, seed=5)
    A2, b2, x02 = make_ridge(n=400, d=100, r=0.1, sigma=2.0, seed=5)
    assert A.shape == (400, 100) and b.shape == (400,) and x0.shape == (100,)
    np.testing.assert_array_equal(A, A2)
    np.testing.assert_array_equal(b, b2)
    R = 10
    assert np.linalg.norm(x0) == pytest.approx(1.0)
    assert np.count_nonzero(x0) == R and np.all(x0[R:] == 0)
    # the DCT is a rotation: undoing it recovers column scales exp(-(j-1)^2 / R^2)
    import scipy.fft
    G = scipy.fft.idct(A, type=2, norm="ortho", axis=1)
    col_sd = G.std(axis=0)
    expected = np.exp(-np.arange(100) ** 2 / R**2)
    np.testing.assert_allclose(col_sd[:15], expected[:15], rtol=0.15)
    noise = b - A @ x0
    assert noise.std() == pytest.approx(2.0, rel=0.1)
    with pytest.raises(ValueError, match="'r'"):
        make_ridge(n=10, d=5, r=0.0)


def test_random_fourier_features_approximate_rbf_kernel():
    from sklearn.metrics.pairwise import rbf_kernel

    X = np.random.default_rng(0).standard_normal((40, 3))
    Z = random_fourier_features(X, d=8192, gamma=0.3, seed=1)
    assert Z.shape == (40, 8192)
    err = np.abs(Z @ Z.T - rbf_kernel(X, gamma=0.3))
    assert err.max() < 0.06
    with pytest.raises(ValueError, match="'X'"):
        random_fourier_features(np.r_[np.nan, 1.0][:, None])


def test_reused_sketch_gives_same_answer(hard):
    A, b = hard
    sk = FrequentDirections(40).fit(A)
    sk_pcg = FrequentDirections(40, dtype=PCG_SKETCH_DTYPE).fit(A)  # PCG's own precision
    for method in ("fd", "rfd", "rfdrr"):
        own = solve_ridge(A, b, 100.0, method=method, m=40, max_iter=4)
        reused = solve_ridge(A, b, 100.0, method=method, m=40, max_iter=4, sketch=sk)
        np.testing.assert_allclose(reused.x, own.x, rtol=1e-9, atol=1e-12)
        assert reused.extra["rho"] == pytest.approx(own.extra["rho"])
    # pcg's own sketch is of the Jacobi-scaled rows, a given one preconditions A itself: the
    # iterations differ, the certified answer does not
    kw = dict(method="pcg-rfd", m=40, max_iter=300, tol=1e-13)
    own = solve_ridge(A, b, 100.0, sketch_rows=A.shape[0], **kw)
    reused = solve_ridge(A, b, 100.0, sketch=sk_pcg, **kw)
    assert own.is_optimal and reused.is_optimal
    np.testing.assert_allclose(reused.x, own.x, rtol=1e-9, atol=1e-12)
    assert reused.extra["rho"] == pytest.approx(0.5 * sk_pcg.delta_sum_)  # used as RFD
    with pytest.raises(ValueError, match="'sketch'"):
        solve_ridge(A, b, 100.0, method="ihs-sjlt", m=40, sketch=sk)
    with pytest.raises(ValueError, match="'sketch'"):
        solve_ridge(A, b, 100.0, method="fd", m=30, sketch=sk)


# ------------------------------------------------------------------ PCG's sampled sketch
def test_length_squared_sample_is_unbiased_with_equal_row_norms():
    """Every sampled row is a row of A scaled to ||A||_F^2 / s; over 300 seeds the mean of
    At'At is A'A within the Drineas-Kannan-Mahoney scale ||A||_F^2 / sqrt(s * seeds)."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((400, 12)) * np.r_[np.full(40, 10.0), np.ones(360)][:, None]
    s, seeds = 50, 300
    frob2 = float(np.sum(A**2))
    X = length_squared_sample(A, s, seed=1)
    np.testing.assert_allclose(np.sum(X**2, axis=1), frob2 / s, rtol=1e-12)
    unit = A / np.linalg.norm(A, axis=1)[:, None]  # each sampled row is +- a scaled row of A
    cos = np.abs(X / np.linalg.norm(X, axis=1)[:, None] @ unit.T).max(axis=1)
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)
    mean = sum(length_squared_sample(A, s, seed=k).T @ length_squared_sample(A, s, seed=k)
               for k in range(seeds)) / seeds
    assert np.linalg.norm(mean - A.T @ A) <= 3 * frob2 / np.sqrt(s * seeds)
    assert np.linalg.norm(X.T @ X - A.T @ A) > 0.2 * frob2 / np.sqrt(s)  # one draw is not A'A


def test_pcg_with_sampled_sketch_reaches_1e10_against_closed_form(hard):
    """n = 1500 > 8 m: the default pcg sketch sees min(n, 8 m) = 320 sampled rows; the solve is
    still OPTIMAL at 1e-10 (the true gradient is checked) and equals the closed form; the
    full-sketch run (sketch_rows = n) reaches the same x."""
    A, b = hard
    xs = _closed_form(A, b, 10.0)
    sampled = solve_ridge(A, b, 10.0, method="pcg-rfd", m=40, max_iter=200, tol=1e-10)
    full = solve_ridge(A, b, 10.0, method="pcg-rfd", m=40, max_iter=200, tol=1e-10,
                       sketch_rows=A.shape[0])
    assert sampled.extra["sketch_rows"] == 320 and full.extra["sketch_rows"] == A.shape[0]
    for res in (sampled, full):
        assert res.termination is TerminationCondition.OPTIMAL
        assert _rel(res.x, xs) <= 1e-8
    assert sampled.iterations <= 2 * full.iterations


def test_pcg_sketch_size_rule():
    """The automatic pcg m is the largest m <= min(256, d) whose modelled sketch cost is within
    the budget (4 passes or 0.1 s), never below min(d, 32); it grows with n."""
    from solvers.sketch.ridge import _PASS_COST

    passes, seconds = PCG_SKETCH_BUDGET
    for n, d in ((100_000, 1024), (50_000, 4096), (20_000, 4096), (900, 320), (10_000, 1024),
                 (5_000, 4096), (10**6, 100), (50, 20)):
        m = pcg_sketch_size(n, d)
        budget = max(passes * _PASS_COST * n * d, seconds)
        assert min(d, 32) <= m <= min(256, d), (n, d, m)
        assert pcg_sketch_cost(n, d, m) <= budget or m == min(d, 32), (n, d)
        if m < min(256, d):
            assert pcg_sketch_cost(n, d, m + 1) > budget, (n, d)
    assert pcg_sketch_size(100_000, 1024) == 256 and pcg_sketch_size(20_000, 4096) < 256
    assert pcg_sketch_size(2_000, 4096) <= pcg_sketch_size(20_000, 4096)
    res = solve_ridge(*_small_problem(), 1.0, method="pcg-rfd", max_iter=50)
    assert res.extra["m"] == pcg_sketch_size(300, 40) == 40


def test_probe_verdict_predicts_from_the_mean_contraction():
    """Plain CG at relative gradient g after t iterations contracts by g^(1/t) per iteration;
    it goes on while that reaches tol within PROBE_REMAINING more, else the sketch is built."""
    assert probe_verdict(1, 1e-3, 1e-10) == "wait"
    assert probe_verdict(2, 1e-3, 1e-10) == "plain"  # 1e-3 per 2: 4.67 more
    assert probe_verdict(2, 0.1, 1e-10) == "sketch"  # 0.32 per iteration: 18 more
    rate = 1e-10 ** (1 / (PROBE_REMAINING + 2.5))  # a contraction just too slow
    assert probe_verdict(2, rate**2, 1e-10) == "sketch"
    assert probe_verdict(2, 1.0, 1e-10) == "sketch" and probe_verdict(3, np.nan, 1e-10) == "sketch"


def test_pcg_probe_skips_the_sketch_only_where_plain_cg_is_fast(hard):
    """With the automatic m, pcg-* builds no sketch at a large gamma (H well conditioned:
    plain CG reaches 1e-10 in a few passes) and builds it at a small one; both reach the closed
    form, certified. A given m always sketches, and the same certified x results."""
    A, b = hard
    for gamma, sketched in ((1e4, False), (1.0, True)):
        xs = _closed_form(A, b, gamma)
        auto = Ridge(A, b, alpha=gamma).solve("pcg-rfd")
        given = Ridge(A, b, alpha=gamma).solve("pcg-rfd", m=40)
        assert auto.certified and given.certified
        assert _rel(auto.x, xs) <= 1e-8 and _rel(given.x, xs) <= 1e-8
        assert (auto.extra["m"] > 0) is sketched and (auto.extra["sketch_time"] > 0) is sketched
        assert given.extra["m"] == 40 and given.extra["sketch_time"] > 0
        if not sketched:  # no sketch, and no more passes than with one
            assert auto.iterations <= given.iterations + 1
        else:  # the probe's plain iterations cost little
            assert auto.iterations <= given.iterations + 4


def _small_problem():
    A, b, _ = make_ridge(n=300, d=40, r=0.3, seed=2)
    return A, b


def test_sketch_rows_bad_input():
    A, b = _small_problem()
    with pytest.raises(ValueError, match="'sketch_rows'.*pcg-fd and pcg-rfd"):
        solve_ridge(A, b, 1.0, method="fd", m=5, sketch_rows=100)
    with pytest.raises(ValueError, match="sketch_rows"):
        solve_ridge(A, b, 1.0, method="pcg-rfd", m=5, sketch_rows=0)
    with pytest.raises(ValueError, match="sketch_rows"):
        Ridge(A, b, alpha=1.0).solve("rfd", sketch_rows=100)
    res = Ridge(A, b, alpha=1.0).solve("pcg-rfd", m=10, sketch_rows=100, max_iter=100)
    assert res.certified and res.extra["sketch_rows"] == 100


# ------------------------------------------------------------------ issue 30: iterative RFD
def _breast_cancer_rff():
    """The paper's iterative experiment in small: random Fourier features (d = 256, RBF
    gamma 0.1) of the shipped breast cancer set (569 rows, 30 standardized features), ridge
    gamma 10, m = 64: d <= 4 m, so the automatic route holds the buffer as A'A and shrinks once."""
    from instances.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = (data.X - data.X.mean(axis=0)) / data.X.std(axis=0)
    A = random_fourier_features(X, d=256, gamma=0.1, seed=1)
    return A, data.y, 10.0, 64


def test_iterative_rfd_ten_iterations_single_shrink_beats_buffered_shrinks():
    """Ten iterations of RFD (tol = 0, the paper's setup): the one-shrink sketch of the
    covariance route (rho = lambda_m(A'A) / 2, the smallest shift any rank-(m-1) sketch
    allows) reaches 1.1e-11 in x; the sketch shrunk every m rows (the 2m-row Gram buffer, the
    only route when the sketches landed) has twice the rho and reaches 2.9e-10. Both against
    an independent dense solve."""
    A, b, gamma, m = _breast_cancer_rff()
    xs = np.linalg.solve(A.T @ A + gamma * np.eye(A.shape[1]), A.T @ b)
    auto = solve_ridge(A, b, gamma, method="rfd", m=m, max_iter=10, tol=0.0)
    assert auto.iterations == 10
    assert _rel(auto.x, xs) < 5e-11
    buffered = FrequentDirections(m, robust=True, shrink="gram").fit(A)
    assert buffered.n_shrinks_ > 1 and buffered.rho_ > 1.5 * auto.extra["rho"]
    old = solve_ridge(A, b, gamma, method="rfd", m=m, max_iter=10, tol=0.0, sketch=buffered)
    assert _rel(old.x, xs) > 1e-10


def test_iterative_rfd_default_tol_stops_on_the_gradient_rule_not_the_x_error():
    """With the default tol = 1e-10 the run stops once the relative gradient meets it: the
    faster single-shrink sketch gets there at iteration 9 with x 1.2e-10 from x* (the
    tol = 0 run's ninth iterate, exactly), while ten iterations reach 1.1e-11. The x error
    stays within the certified bound; it is not what tol bounds (module docstring)."""
    A, b, gamma, m = _breast_cancer_rff()
    xs = np.linalg.solve(A.T @ A + gamma * np.eye(A.shape[1]), A.T @ b)
    stop = solve_ridge(A, b, gamma, method="rfd", m=m, max_iter=10)
    full = solve_ridge(A, b, gamma, method="rfd", m=m, max_iter=10, tol=0.0, x_star=xs)
    assert stop.termination is TerminationCondition.OPTIMAL and stop.iterations < 10
    assert stop.extra["grad_norm"] <= 1e-10
    err = _rel(stop.x, xs)
    assert err <= stop.extra["x_error_bound"]
    assert err == pytest.approx(full.extra["history"][stop.iterations - 1]["rel_error"],
                                rel=1e-6)
    assert _rel(full.x, xs) < err / 5
