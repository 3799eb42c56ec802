"""Sketched ridge solvers against the closed form ``np.linalg.solve(A'A + gamma I, A'b)``,
the paper's convergence rates (Theorems 5-6), its bias / variance brackets (Theorems 2-3),
the statistical metrics against a Monte-Carlo estimate, the instance generators, and bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

from instances.ridge import make_ridge, random_fourier_features
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
@pytest.mark.parametrize("m,gamma", [(40, 10.0), (40, 400.0), (60, 1.0)])
def test_fdrr_within_derived_error_bound(hard, easy, robust, m, gamma):
    """||xhat - x*|| = ||Hhat^{-1}(H - Hhat) x*|| <= eps/(gamma + rho) ||x*||, where
    eps = alpha Delta_k (FD: 0 <= H - Hhat <= eps I) or eps = alpha Delta_k / 2 (RFD)."""
    A, b = hard if m == 40 else easy
    xs = _closed_form(A, b, gamma)
    x = fdrr(A, b, gamma, m, robust=robust)
    rho = FrequentDirections(m, robust=robust).fit(A).rho_
    eps = _best_alpha_delta(A, m) / (2 if robust else 1)
    bound = eps / (gamma + rho)
    assert _rel(x, xs) <= bound * (1 + 1e-8)
    res = solve_ridge(A, b, gamma, method="rfdrr" if robust else "fdrr", m=m, x_star=xs)
    np.testing.assert_allclose(res.x, x, rtol=1e-12)
    assert res.iterations == 1
    if bound > 1e-6:  # a one-shot answer is not claimed optimal unless its gradient says so
        assert res.termination is TerminationCondition.ITERATION_LIMIT
        assert res.solution_status is SolutionStatus.FEASIBLE


@pytest.mark.parametrize("model", ["classical", "hessian"])
@pytest.mark.parametrize("kind", ["gaussian", "sjlt"])
def test_one_shot_random_sketches_match_their_closed_form(easy, model, kind):
    """x^C = (A'S'SA + g I)^{-1} A'S'S b, x^H = (A'S'SA + g I)^{-1} A'b with S explicit."""
    A, b = easy
    gamma, m = 100.0, 120
    S = make_random_sketch(kind, m, seed=7).fit(np.eye(A.shape[0])).sketch_
    SA = S @ A
    Ht = SA.T @ SA + gamma * np.eye(A.shape[1])
    rhs = SA.T @ (S @ b) if model == "classical" else A.T @ b
    ref = np.linalg.solve(Ht, rhs)
    res = solve_ridge(A, b, gamma, method=f"{model}-{kind}", m=m, seed=7)
    np.testing.assert_allclose(res.x, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
    # stated tolerance against the exact ridge solution (statistical estimators, m < d)
    xs = _closed_form(A, b, gamma)
    assert _rel(res.x, xs) <= (6.0 if model == "classical" else 1.0)
    assert res.termination is TerminationCondition.ITERATION_LIMIT


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
    assert errs[-1] > 1e3 * errs[0]  # Algorithm 1 diverges here
    assert fd.termination is not TerminationCondition.OPTIMAL
    for method in ("pcg-fd", "pcg-rfd"):
        res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=60, x_star=xs)
        assert res.termination is TerminationCondition.OPTIMAL, method
        assert _rel(res.x, xs) <= 1e-8
        # CG decreases the H-norm of the error monotonically (checked on the iterates' f)
        assert res.iterations <= 40


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
    assert all({"iteration", "grad_norm", "rel_error", "time"} <= set(h) for h in hist)
    assert res.extra["sketch_time"] > 0
    assert res.extra["passes"] == pytest.approx(5.5)  # A'b plus one pass per iteration
    assert res.extra["rho"] > 0
    res2 = solve_ridge(A, b, 100.0, method="rfd", m=40, max_iter=5)
    assert all("rel_error" not in h for h in res2.extra["history"])


def test_divergence_is_reported_not_hidden(hard):
    A, b = hard
    res = solve_ridge(A, b, 1e-3, method="single-gaussian", m=40, max_iter=300)
    assert res.termination in (TerminationCondition.NUMERICAL_ERROR,
                               TerminationCondition.ITERATION_LIMIT)
    assert not res.is_optimal


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
    for method in ("fd", "rfd", "pcg-rfd", "rfdrr"):
        own = solve_ridge(A, b, 100.0, method=method, m=40, max_iter=4)
        reused = solve_ridge(A, b, 100.0, method=method, m=40, max_iter=4, sketch=sk)
        np.testing.assert_allclose(reused.x, own.x, rtol=1e-9, atol=1e-12)
        assert reused.extra["rho"] == pytest.approx(own.extra["rho"])
    with pytest.raises(ValueError, match="'sketch'"):
        solve_ridge(A, b, 100.0, method="ihs-sjlt", m=40, sketch=sk)
    with pytest.raises(ValueError, match="'sketch'"):
        solve_ridge(A, b, 100.0, method="fd", m=30, sketch=sk)
