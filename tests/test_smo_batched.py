"""Batched working-set SMO against the pairwise core, scikit-learn's SVC and a conic KLR solve."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.svm import SVC

from solvers.kernels import Kernel
from solvers.smo.batched import solve_dual_batched
from solvers.smo.core import entropy_terms, solve_dual
from solvers.smo.klr import feasible_start
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix

TOL = 1e-6


def clouds(n: int, p: int = 3, sep: float = 1.5, seed: int = 0):
    """Two Gaussian clouds (+1 / -1) whose means are ``sep`` apart."""
    rng = np.random.default_rng(seed)
    h = n // 2
    X = np.vstack([rng.normal(0, 1, (h, p)), rng.normal(sep / np.sqrt(p), 1, (n - h, p))])
    return X, np.r_[np.ones(h), -np.ones(n - h)]


def weights(n: int, unit: bool, seed: int = 1) -> np.ndarray:
    return np.ones(n) if unit else np.random.default_rng(seed).uniform(0.3, 3.0, n)


def svm_args(n: int, C: np.ndarray) -> dict:
    return dict(lower=np.zeros(n), upper=C, linear=-np.ones(n), alpha0=np.zeros(n))


def klr_args(y: np.ndarray, C: np.ndarray, gamma: np.ndarray, lam: float) -> dict:
    lo, up = gamma, C - gamma
    return dict(lower=lo, upper=up, linear=-lam * np.ones(y.size), entropy_C=C,
                alpha0=feasible_start(y, lo, up, C))


def check_solution(sol, K: np.ndarray, y: np.ndarray, args: dict) -> None:
    """Feasible (y'alpha = 0, inside the box) and grad = Q alpha + p + h'(alpha) recomputed."""
    a = sol.alpha
    assert abs(y @ a) <= 1e-10 * np.abs(a).sum()
    assert np.all(a >= args["lower"]) and np.all(a <= args["upper"])
    grad = y * (K @ (y * a)) + args["linear"]
    if args.get("entropy_C") is not None:
        grad += entropy_terms(a, args["entropy_C"])[1]
    np.testing.assert_allclose(sol.grad, grad, rtol=0, atol=1e-9 * np.abs(grad).max())


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("unit", [True, False])
def test_svm_matches_core_and_sklearn(kernel, unit):
    n = 800
    X, y = clouds(n, seed=3)
    C = weights(n, unit)
    k = Kernel(kernel, gamma=0.5) if kernel == "rbf" else Kernel("linear")
    qm = KernelQMatrix(X, y, k)
    args = svm_args(n, C)
    ref = solve_dual(qm, y, **args, tol=TOL)
    sol = solve_dual_batched(qm, y, **args, tol=TOL, working_set=64)
    assert sol.converged and sol.violation <= TOL
    assert sol.outer_iterations > 1  # n > q: several working sets were needed
    assert abs(sol.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    svc = SVC(C=1.0, kernel=kernel, gamma=0.5, tol=TOL, shrinking=False)
    svc.fit(X, y, sample_weight=C)
    dc = svc.dual_coef_[0]
    K = k(X, X)
    Ks = K[np.ix_(svc.support_, svc.support_)]
    svc_obj = 0.5 * dc @ Ks @ dc - np.abs(dc).sum()
    assert abs(sol.objective - svc_obj) <= 1e-6 * abs(svc_obj)
    check_solution(sol, K, y, args)


@pytest.mark.parametrize("q", [2, 16, 256, 5000])
def test_svm_working_set_sizes_precomputed(q):
    """q = 2 (one pair per block) up to q > n; the full-Q path (KIND_MATRIX)."""
    n = 500
    X, y = clouds(n, seed=5)
    K = Kernel("rbf", gamma=0.5)(X, X)
    qm = PrecomputedQMatrix(K, y)
    args = svm_args(n, weights(n, False))
    ref = solve_dual(qm, y, **args, tol=TOL)
    sol = solve_dual_batched(qm, y, **args, tol=TOL, working_set=q, keep=0.0)
    assert sol.converged
    assert abs(sol.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    check_solution(sol, K, y, args)


def klr_conic(K: np.ndarray, y: np.ndarray, C: np.ndarray, lam: float, gamma: np.ndarray) -> float:
    """min 1/2 a'Qa + sum C_i G(a_i / C_i) - lam sum a, y'a = 0 (and the S-KLR box) by Clarabel."""
    w, V = np.linalg.eigh(K)
    keep = w > 1e-10 * w.max()
    L = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(y.size)
    d = cp.multiply(a, 1.0 / C)
    obj = (0.5 * cp.sum_squares(L.T @ cp.multiply(y, a))
           - cp.sum(cp.multiply(C, cp.entr(d) + cp.entr(1 - d))) - lam * cp.sum(a))
    cons = [y @ a == 0, a >= gamma, a <= C - gamma]
    prob = cp.Problem(cp.Minimize(obj), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


@pytest.mark.parametrize(("lam", "gamma", "unit"),
                         [(0.0, 1e-12, True), (0.0, 1e-12, False), (2.0, 0.05, True),
                          (1.0, 0.05, False)])
def test_klr_matches_core_and_conic(lam, gamma, unit):
    """The open box (gamma = 1e-12 C_i) and an S-KLR box (gamma_i = 0.05 s_i), unit and
    non-unit weights."""
    n = 300
    X, y = clouds(n, p=2, sep=2.0, seed=7)
    s = weights(n, unit)
    C = 1.0 * s
    g = gamma * (C if gamma < 1e-6 else s)
    K = Kernel("rbf", gamma=0.5)(X, X)
    qm = PrecomputedQMatrix(K, y)
    args = klr_args(y, C, g, lam)
    ref = solve_dual(qm, y, **args, tol=TOL)
    sol = solve_dual_batched(qm, y, **args, tol=TOL, working_set=32)
    assert sol.converged and sol.outer_iterations > 1
    assert abs(sol.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    conic = klr_conic(K, y, C, lam, g)
    assert abs(sol.objective - conic) <= 1e-6 * abs(conic)
    check_solution(sol, K, y, args)


def test_klr_kernel_columns_larger_n():
    """n = 2000 with the kernel computed in the loop (RBF from X), q = 128."""
    n = 2000
    X, y = clouds(n, seed=11)
    C = weights(n, False)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = klr_args(y, C, 1e-12 * C, 0.5)
    K = Kernel("rbf", gamma=0.5)(X, X)
    qa0 = y * (K @ (y * args["alpha0"]))
    ref = solve_dual(qm, y, **args, qa0=qa0, tol=1e-5)
    sol = solve_dual_batched(qm, y, **args, qa0=qa0, tol=1e-5, working_set=128)
    assert sol.converged
    assert abs(sol.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    check_solution(sol, K, y, args)


def test_max_iter_gives_not_converged():
    n = 600
    X, y = clouds(n, seed=2)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = svm_args(n, np.ones(n))
    sol = solve_dual_batched(qm, y, **args, tol=TOL, max_iter=50, working_set=64)
    assert not sol.converged and not sol.stalled
    assert sol.iterations == 50 and sol.violation > TOL
    check_solution(sol, Kernel("rbf", gamma=0.5)(X, X), y, args)


@pytest.mark.parametrize(("name", "value"), [("working_set", 1), ("working_set", 2.5),
                                             ("keep", 1.0), ("inner_factor", -0.1),
                                             ("inner_steps", 0)])
def test_bad_parameters_raise(name, value):
    n = 20
    X, y = clouds(n)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    with pytest.raises(ValueError, match=name):
        solve_dual_batched(qm, y, **svm_args(n, np.ones(n)), **{name: value})


def test_float32_columns():
    """float32 cached columns (what "auto" picks when Q does not fit cache_mb): the objective
    within 1e-6 of the float64 run's, grad within float32 rounding of the recomputed one."""
    n = 1000
    X, y = clouds(n, seed=4)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = svm_args(n, weights(n, False))
    f64 = solve_dual_batched(qm, y, **args, tol=1e-4, working_set=64, cache_dtype="float64")
    f32 = solve_dual_batched(qm, y, **args, tol=1e-4, working_set=64, cache_dtype="float32")
    assert f32.converged
    assert abs(f32.objective - f64.objective) <= 1e-6 * abs(f64.objective)
    K = Kernel("rbf", gamma=0.5)(X, X)
    grad = y * (K @ (y * f32.alpha)) - 1.0
    np.testing.assert_allclose(f32.grad, grad, rtol=0, atol=1e-5 * np.abs(grad).max())
    assert np.max(np.abs(f32.grad - grad)) > 1e-12  # the float32 rounding is really there


def test_smo_svm_and_klr_pick_the_batched_solver_above_1024_rows_and_agree_with_pairwise():
    """The default working set (auto_working_set) of smo_svm / smo_klr: pairwise up to 4 q rows,
    batched above; both certified at the same optimum as the pairwise solve."""
    from solvers.smo import smo_klr, smo_svm
    from solvers.smo.core import BATCHED_WORKING_SET

    rng = np.random.default_rng(7)
    n = 4 * BATCHED_WORKING_SET + 200
    X = np.vstack([rng.normal(0.0, 1.0, (n // 2, 4)), rng.normal(0.8, 1.0, (n - n // 2, 4))])
    y = np.r_[np.ones(n // 2), -np.ones(n - n // 2)]
    for solve in (smo_svm, smo_klr):
        auto = solve(X, y, C=1.0, kernel="rbf", tol=1e-3)
        pair = solve(X, y, C=1.0, kernel="rbf", tol=1e-3, working_set=2)
        assert auto.extra["working_set"] == BATCHED_WORKING_SET
        assert pair.extra["working_set"] == 2
        assert auto.certified and pair.certified
        assert abs(auto.objective - pair.objective) <= 2e-6 * auto.scale
        small = solve(X[::5], y[::5], C=1.0, kernel="rbf")
        assert small.extra["working_set"] == 2
    with pytest.raises(ValueError, match="working_set"):
        smo_svm(X, y, working_set=1)


def violation_all(alpha, grad, y, lo, up) -> float:
    """max_{I_up} m - min_{I_low} m over every variable, from the given gradient."""
    m = -y * grad
    pos = y > 0
    i_up = (pos & (alpha < up)) | (~pos & (alpha > lo))
    i_low = (~pos & (alpha < up)) | (pos & (alpha > lo))
    return float(m[i_up].max() - m[i_low].min())


@pytest.mark.parametrize(("Cv", "unit"), [(1.0, True), (10.0, True), (1.0, False), (10.0, False)])
def test_svm_shrinking_same_optimum_exact_gradient(Cv, unit):
    """Overlapping clouds (many alphas at 0 and at C): with shrinking the same objective as
    without and as the pairwise solver, the returned gradient equal to Q alpha + p recomputed
    from the kernel matrix, and the violation over ALL variables (from that recomputed
    gradient) <= tol. Shrinking really happened (the shrunk rows' gradient was rebuilt); the
    cache holds 10% of Q's columns, as at large n."""
    n, tol = 3000, 1e-4
    X, y = clouds(n, sep=1.0, seed=21)
    C = Cv * weights(n, unit, seed=22)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = svm_args(n, C)
    run = dict(tol=tol, working_set=128, cache_dtype="float64", cache_mb=8.0 * n * 300 / 2**20)
    off = solve_dual_batched(qm, y, **args, **run, shrinking=False)
    on = solve_dual_batched(qm, y, **args, **run, shrinking=True)
    pair = solve_dual(qm, y, **args, tol=tol)
    at_0, at_c = np.mean(on.alpha == 0.0), np.mean(on.alpha == C)
    assert at_0 > 0.2 and at_c > 0.2  # the instance shrinks both ways
    assert on.converged and on.reconstructions >= 1 and off.reconstructions == 0
    # measured: within 1.3e-9 relative of each other at tol 1e-4
    for ref in (off, pair):
        assert abs(on.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    K = Kernel("rbf", gamma=0.5)(X, X)
    grad = y * (K @ (y * on.alpha)) - 1.0
    np.testing.assert_allclose(on.grad, grad, rtol=0, atol=1e-9 * np.abs(grad).max())
    assert violation_all(on.alpha, grad, y, args["lower"], C) <= tol
    assert abs(y @ on.alpha) <= 1e-10 * np.abs(on.alpha).sum()


def test_svm_shrinking_iteration_limit_keeps_exact_gradient():
    """Stopped by max_iter while shrunk: the gradient of every row is still rebuilt exactly."""
    n = 2500
    X, y = clouds(n, sep=1.0, seed=23)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = svm_args(n, np.ones(n))
    full = solve_dual_batched(qm, y, **args, tol=1e-5, working_set=128, cache_dtype="float64")
    cut = solve_dual_batched(qm, y, **args, tol=1e-5, working_set=128, cache_dtype="float64",
                             max_iter=full.iterations - 10)
    assert not cut.converged and cut.reconstructions >= 1
    K = Kernel("rbf", gamma=0.5)(X, X)
    grad = y * (K @ (y * cut.alpha)) - 1.0
    np.testing.assert_allclose(cut.grad, grad, rtol=0, atol=1e-9 * np.abs(grad).max())


@pytest.mark.parametrize("unit", [True, False])
def test_klr_unchanged_by_shrinking(unit):
    """KLR's variables stay strictly inside the box: nothing is shrunk and the run is the same
    bit for bit with and without the option."""
    n = 2000
    X, y = clouds(n, seed=24)
    C = weights(n, unit)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    args = klr_args(y, C, 1e-12 * C, 0.5)
    on = solve_dual_batched(qm, y, **args, tol=1e-4, working_set=128, shrinking=True)
    off = solve_dual_batched(qm, y, **args, tol=1e-4, working_set=128, shrinking=False)
    assert on.converged and on.reconstructions == 0
    assert on.iterations == off.iterations and on.kernel_evals == off.kernel_evals
    np.testing.assert_array_equal(on.alpha, off.alpha)
    np.testing.assert_array_equal(on.grad, off.grad)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fill_and_update_against_the_kernel_matrix(dtype):
    """The fused pass writes the new columns Q_:t = y y_t k(X, x_t) into their slots and adds
    sum_k d_k Q_:t_k over the new and the already cached columns to G, with the entries as
    cached (float32 slots: G takes the rounded entries). n spans several row blocks and ends
    in a partial one."""
    from solvers.smo.batched import ROW_BLOCK, _fill_and_update

    n, p = 3 * ROW_BLOCK + 77, 4
    X, y = clouds(n, p=p, seed=5)
    K = Kernel("rbf", gamma=0.3)(X, X)
    Q = (y[:, None] * y[None, :] * K).astype(dtype)
    cached = np.array([2, 900], dtype=np.int64)  # columns already in slots 0 and 1
    new = np.array([5, 1000, n - 1], dtype=np.int64)  # to slots 4, 3, 2
    Kc = np.full((5, n), np.nan, dtype=dtype)
    Kc[0], Kc[1] = Q[:, cached[0]], Q[:, cached[1]]
    new_slots = np.array([4, 3, 2], dtype=np.int64)
    moved = np.array([0, 4, 1, 2], dtype=np.int64)  # slots of the moved variables
    d = np.array([0.5, -1.25, 2.0, 0.75])
    grad0 = np.random.default_rng(6).normal(size=n)
    grad = grad0.copy()
    XT = np.ascontiguousarray(X.T)
    _fill_and_update(1, XT, (X * X).sum(1), 0.3, 0.0, 3, y, new, new_slots, 3, Kc, np.empty(n),
                     grad, moved, d, 4)
    for t, s in zip(new, new_slots, strict=True):
        np.testing.assert_allclose(Kc[s], Q[:, t], rtol=4e-7 if dtype == np.float32 else 1e-14,
                                   atol=0)
    expect = grad0 + Kc[moved].astype(float).T @ d
    np.testing.assert_allclose(grad, expect, rtol=1e-13, atol=1e-13)
    assert not np.isnan(Kc[[0, 1]]).any()


def test_ranked_against_a_sort():
    """The working set's ranking: the (at most) k largest keys above -inf, largest first, ties
    by index, as a full lexicographic sort gives them, on keys with many ties and -inf."""
    from solvers.smo.batched import _ranked

    rng = np.random.default_rng(8)
    for trial in range(300):
        n = int(rng.integers(1, 300))
        key = rng.integers(0, 4, size=n).astype(float) if trial % 2 else rng.normal(size=n)
        key[rng.random(n) < 0.3] = -np.inf
        k = int(rng.integers(0, n + 3))
        finite = np.flatnonzero(key > -np.inf)
        expect = finite[np.lexsort((finite, -key[finite]))][:k]
        np.testing.assert_array_equal(_ranked(key, k), expect)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_subproblem_block_equals_the_columns_it_anticipates(dtype):
    """Q_WW of a column not yet computed (its entries at W, computed directly) holds exactly
    what the column computed afterwards by the fill holds at W; a cached column is read."""
    from solvers.smo.batched import _block_ww, _fill_and_update

    n, p, nw = 700, 6, 24
    X, y = clouds(n, p=p, seed=9)
    XT, sqn = np.ascontiguousarray(X.T), (X * X).sum(1)
    W = np.random.default_rng(10).choice(n, nw, replace=False).astype(np.int64)
    slots = np.arange(nw, dtype=np.int64)
    Kc = np.zeros((nw, n), dtype=dtype)
    fresh = np.full(n, -1, dtype=np.int64)
    fresh[W[::2]] = 3  # new in outer step 3; the others are cached
    cached = W[1::2]
    _fill_and_update(1, XT, sqn, 0.4, 0.0, 3, y, cached, slots[1::2], cached.size, Kc,
                     np.empty(n), np.zeros(n), slots, np.zeros(nw), 0)
    Qw = np.full((nw, nw), np.nan)
    evals = _block_ww(1, XT, sqn, 0.4, 0.0, 3, y[W], W, nw, slots, fresh, 3, Kc, Qw,
                      np.empty((p, nw)), np.empty(nw), np.empty(nw, dtype=dtype), np.empty(nw))
    assert evals == nw * W[::2].size
    _fill_and_update(1, XT, sqn, 0.4, 0.0, 3, y, W[::2].copy(), slots[::2].copy(), W[::2].size,
                     Kc, np.empty(n), np.zeros(n), slots, np.zeros(nw), 0)
    np.testing.assert_array_equal(Qw, Kc[:, W].T.astype(float))
