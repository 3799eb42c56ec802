"""The compiled batched SMO (solvers/_core/src/_batched.cpp) against numpy references: the fused
column fill + gradient update and the Q_WW block for every kernel kind, the ranking, the
boundary's dtype checks, and whole runs (KKT from a recomputed gradient, independence of the
thread count, the verbose lines, a read-only precomputed Q)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from solvers.kernels import Kernel
from solvers.smo.batched import ROW_BLOCK, _block_ww, _fill_and_update, _ranked, solve_dual_batched
from solvers.smo.core import entropy_terms, index_set_extremes
from solvers.smo.klr import feasible_start
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix

KERNELS = [("linear", 0, Kernel("linear")), ("rbf", 1, Kernel("rbf", gamma=0.3)),
           ("poly", 2, Kernel("poly", gamma=0.2, coef0=1.0, degree=2))]


def clouds(n: int, p: int = 4, sep: float = 1.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    h = n // 2
    X = np.vstack([rng.normal(0, 1, (h, p)), rng.normal(sep / np.sqrt(p), 1, (n - h, p))])
    return X, np.r_[np.ones(h), -np.ones(n - h)]


def spec_args(k: Kernel, X: np.ndarray):
    """(XT, sqn, gamma, coef0, degree) as KernelQMatrix.compiled_spec gives them."""
    s = KernelQMatrix(X, np.ones(len(X)), k).compiled_spec()
    return s.X, s.sqnorm, s.gamma, s.coef0, s.degree


@pytest.mark.parametrize(("name", "kind", "kernel"), KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fill_and_update_every_kernel(name, kind, kernel, dtype):
    """New columns equal y y_t k(X, x_t) (rounded to the cache's dtype) over several row blocks
    and a partial one; G gains sum_k d_k of the cached entries."""
    n = 2 * ROW_BLOCK + 33
    X, y = clouds(n, seed=1)
    Q = y[:, None] * y[None, :] * kernel(X, X)
    XT, sqn, g, c0, deg = spec_args(kernel, X)
    new, slots = np.array([0, 700, n - 1]), np.array([2, 0, 1])
    Kc = np.full((4, n), np.nan, dtype=dtype)
    Kc[3] = Q[:, 5]
    d = np.array([1.5, -0.25, 3.0])
    gslots = np.array([3, 0, 2])
    grad0 = np.linspace(-1.0, 1.0, n)
    grad = grad0.copy()
    _fill_and_update(kind, XT, sqn, g, c0, deg, y, new, slots, 3, Kc, None, grad, gslots, d, 3)
    rtol = 3e-7 if dtype == np.float32 else 1e-13
    for t, s in zip(new, slots, strict=True):
        np.testing.assert_allclose(Kc[s], Q[:, t], rtol=rtol, atol=rtol * np.abs(Q).max())
    np.testing.assert_allclose(grad, grad0 + Kc[gslots].astype(float).T @ d, rtol=1e-13,
                               atol=1e-12)


@pytest.mark.parametrize(("name", "kind", "kernel"), KERNELS)
def test_block_ww_every_kernel(name, kind, kernel):
    """Q_WW with every column new (computed at W) equals Q[W][:, W]; read from the cache when
    nothing is new (stride of Qw larger than nw)."""
    n, nw = 300, 17
    X, y = clouds(n, seed=2)
    Q = y[:, None] * y[None, :] * kernel(X, X)
    XT, sqn, g, c0, deg = spec_args(kernel, X)
    W = np.random.default_rng(3).choice(n, nw, replace=False)
    fresh = np.full(n, -1, dtype=np.int64)
    fresh[W] = 1
    Qw = np.full((nw, nw), np.nan)
    evals = _block_ww(kind, XT, sqn, g, c0, deg, y[W], W, nw, np.zeros(nw, np.int64), fresh, 1,
                      np.zeros((1, n)), Qw, np.empty((XT.shape[0], nw)), np.empty(nw),
                      np.empty(nw))
    assert evals == nw * nw
    np.testing.assert_allclose(Qw, Q[np.ix_(W, W)], rtol=1e-13, atol=1e-13 * np.abs(Q).max())
    Kc = np.ascontiguousarray(Q[W])  # slot r holds column W[r]
    Qbig = np.full((nw, nw + 5), np.nan)
    assert _block_ww(kind, XT, sqn, g, c0, deg, y[W], W, nw, np.arange(nw), fresh, 2, Kc, Qbig,
                     np.empty((XT.shape[0], nw)), np.empty(nw), np.empty(nw)) == 0
    np.testing.assert_array_equal(Qbig[:, :nw], Q[np.ix_(W, W)])
    assert np.isnan(Qbig[:, nw:]).all()


def test_ranked_edge_cases():
    """Signed zeros tie (then by index), NaN and -inf are skipped, +inf ranks first, k > n."""
    key = np.array([0.0, -0.0, np.nan, -np.inf, np.inf, 2.0, 0.0, -1.0])
    np.testing.assert_array_equal(_ranked(key, 100), [4, 5, 0, 1, 6, 7])
    np.testing.assert_array_equal(_ranked(key, 3), [4, 5, 0])
    assert _ranked(key, 0).size == 0 and _ranked(np.full(4, -np.inf), 2).size == 0
    assert _ranked(key, 2).dtype == np.int64


def test_in_place_arrays_are_not_converted():
    """An in-place argument of the wrong dtype raises instead of filling a temporary copy."""
    n = 10
    X, y = clouds(n)
    XT, sqn, g, c0, deg = spec_args(Kernel("rbf", gamma=0.3), X)
    one = np.array([0])
    with pytest.raises(TypeError):
        _fill_and_update(1, XT, sqn, g, c0, deg, y, one, one, 1, np.zeros((1, n)), None,
                         np.zeros(n, dtype=np.float32), one, np.ones(1), 1)
    with pytest.raises(TypeError):
        _fill_and_update(1, XT, sqn, g, c0, deg, y, one, one, 1, np.zeros((1, n), dtype=int),
                         None, np.zeros(n), one, np.ones(1), 1)


def kkt_violation(alpha, grad, y, lo, up) -> float:
    """max_{I_up} m - min_{I_low} m over every variable, from the given gradient."""
    m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
    return m_up - m_low


@pytest.mark.parametrize(("name", "kind", "kernel"), KERNELS)
def test_svm_run_every_kernel_kkt(name, kind, kernel):
    """Shrinking runs (float32 and float64 columns, a cache smaller than Q): the returned gradient
    equals Q alpha - 1 recomputed in numpy, the violation over all variables <= tol, feasible."""
    n, tol = 1500, 1e-4
    X, y = clouds(n, seed=4)
    C = np.random.default_rng(5).uniform(0.5, 2.0, n)
    K = kernel(X, X)
    qm = KernelQMatrix(X, y, kernel)
    for dtype in ("float64", "float32"):
        sol = solve_dual_batched(qm, y, lower=np.zeros(n), upper=C, linear=-np.ones(n),
                                 alpha0=np.zeros(n), tol=tol, working_set=64, cache_dtype=dtype,
                                 cache_mb=8.0 * n * 200 / 2**20)
        assert sol.converged
        grad = y * (K @ (y * sol.alpha)) - 1.0
        atol = (1e-9 if dtype == "float64" else 1e-5) * np.abs(grad).max()
        np.testing.assert_allclose(sol.grad, grad, rtol=0, atol=atol)
        assert kkt_violation(sol.alpha, grad, y, np.zeros(n), C) <= tol + 2 * atol
        assert abs(y @ sol.alpha) <= 1e-10 * np.abs(sol.alpha).sum()
        assert np.all(sol.alpha >= 0) and np.all(sol.alpha <= C)


def test_klr_gap_stop():
    """A KLR run given gap_scale stops on the gap (before tol) with the gradient exact."""
    n = 1200
    X, y = clouds(n, seed=6)
    C = np.ones(n)
    lo, up = 1e-12 * C, C - 1e-12 * C
    kernel = Kernel("rbf", gamma=0.5)
    qm = KernelQMatrix(X, y, kernel)
    a0 = feasible_start(y, lo, up, C)
    sol = solve_dual_batched(qm, y, lower=lo, upper=up, linear=np.zeros(n), entropy_C=C,
                             alpha0=a0, tol=1e-9, working_set=64, gap_scale=n * np.log(2.0))
    assert sol.gap_stopped and sol.converged and sol.violation > 1e-9
    grad = y * (kernel(X, X) @ (y * sol.alpha)) + entropy_terms(sol.alpha, C)[1]
    np.testing.assert_allclose(sol.grad, grad, rtol=0, atol=1e-9 * np.abs(grad).max())


RUN = """
import numpy as np, sys
sys.path.insert(0, {root!r})
from solvers.kernels import Kernel
from solvers.smo.batched import solve_dual_batched
from solvers.smo.qmatrix import KernelQMatrix
rng = np.random.default_rng(9)
n = 3000
X = np.vstack([rng.normal(0, 1, (n // 2, 5)), rng.normal(0.4, 1, (n // 2, 5))])
y = np.r_[np.ones(n // 2), -np.ones(n // 2)]
sol = solve_dual_batched(KernelQMatrix(X, y, Kernel("rbf", gamma=0.5)), y, lower=np.zeros(n),
                         upper=np.ones(n), linear=-np.ones(n), alpha0=np.zeros(n), tol=1e-4,
                         working_set=128, cache_mb=8.0 * n * 400 / 2**20)
sys.stdout.write(sol.alpha.tobytes().hex() + " " + sol.grad.tobytes().hex() + " "
                 + str(sol.iterations) + " " + str(sol.reconstructions))
"""


def test_same_result_on_one_and_two_threads():
    """The OpenMP row blocks are independent: one thread and two give the same bits (a run with
    shrinking and rebuilds, several row blocks)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = []
    for threads in ("1", "2"):
        env = {**os.environ, "OMP_NUM_THREADS": threads}
        res = subprocess.run([sys.executable, "-c", RUN.format(root=root)], env=env,
                             capture_output=True, text=True, check=True)
        outs.append(res.stdout.split())
    assert int(outs[0][3]) >= 1  # shrinking happened
    assert outs[0] == outs[1]


def test_verbose_lines(capsys):
    """verbose prints through Python's print from the loop (the GIL taken back for it)."""
    n = 2000
    X, y = clouds(n, sep=0.5, seed=7)
    qm = KernelQMatrix(X, y, Kernel("rbf", gamma=0.5))
    sol = solve_dual_batched(qm, y, lower=np.zeros(n), upper=np.ones(n), linear=-np.ones(n),
                             alpha0=np.zeros(n), tol=1e-4, working_set=16, verbose=True)
    out = capsys.readouterr().out
    assert sol.outer_iterations >= 200 and "smo: working set 16 outer step 200" in out
    assert "smo: kernel entries" in out


def test_read_only_precomputed_q():
    """A read-only full Q (PrecomputedQMatrix.from_q of a frozen array) is accepted and left
    unchanged."""
    n = 400
    X, y = clouds(n, seed=8)
    Q = y[:, None] * y[None, :] * Kernel("rbf", gamma=0.5)(X, X)
    Q.flags.writeable = False
    before = Q.copy()
    sol = solve_dual_batched(PrecomputedQMatrix.from_q(Q), y, lower=np.zeros(n),
                             upper=np.ones(n), linear=-np.ones(n), alpha0=np.zeros(n), tol=1e-6,
                             working_set=32)
    assert sol.converged
    np.testing.assert_array_equal(Q, before)
    np.testing.assert_allclose(sol.grad, Q @ sol.alpha - 1.0, rtol=0, atol=1e-10)

