"""The C++ pairwise SMO core (solvers/_core/src/_smo.cpp) against numpy references."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

import numpy as np
import pytest

from solvers._core import _smo
from solvers.kernels import Kernel
from solvers.result import TerminationCondition
from solvers.smo import core
from solvers.smo.core import ColumnCache, entropy_terms, solve_dual, termination_of
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix

RBF = Kernel("rbf", gamma=0.5)


def _data(n: int, p: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def test_constants_agree_with_python():
    """The compiled constants are the ones core.py documents (one value each)."""
    assert _smo.TAU == core.TAU
    assert _smo.PARALLEL_FROM == core.PARALLEL_FROM
    assert _smo.FILL_BLOCK == core.FILL_BLOCK
    assert _smo.GATHER_COST == core.GATHER_COST
    assert _smo.GAP_EVERY_PAIRS == core.GAP_EVERY_PAIRS
    assert _smo.GAP_NEWTON_WITHIN == core.GAP_NEWTON_WITHIN
    assert _smo.GAP_NEWTON_STEPS == core.GAP_NEWTON_STEPS
    for name in ("CONVERGED", "ITERATION_LIMIT", "STALLED", "GAP", "INTERRUPTED", "TIME_LIMIT"):
        assert getattr(_smo, "STATUS_" + name) == getattr(core, "STATUS_" + name)


@pytest.mark.parametrize("kernel", [Kernel("linear"), RBF,
                                    Kernel("poly", gamma=0.3, coef0=1.0, degree=3)])
@pytest.mark.parametrize("f32", [False, True])
def test_kernel_columns_equal_numpy_through_evictions(kernel, f32):
    """KernelColumns with 3 slots for 40 columns: every column read back (in an order that
    evicts) equals y_s y_i k(x_s, x_i) from numpy, to float32 rounding when stored so."""
    X, y = _data(40)
    q = KernelQMatrix(X, y, kernel)
    spec = q.compiled_spec()
    cols = _smo.KernelColumns(40, 3, f32)
    cols.set_kernel(spec.kind, spec.X, spec.sqnorm, spec.gamma, spec.coef0, spec.degree, y)
    Q = kernel(X, X) * np.outer(y, y)
    rtol = 1e-7 if f32 else 1e-13
    for i in [0, 5, 0, 39, 7, 5, 12, 0]:
        np.testing.assert_allclose(cols.column(i), Q[:, i], rtol=rtol, atol=rtol)
    assert cols.kernel_evals == 40 * 7  # one hit (0 read again at once), 7 misses (LRU)


def _smo_numpy(Q, y, C, tol, max_iter=100_000):
    """A plain numpy SMO (no shrinking, Q in full) with the same selection and step as the core."""
    n = y.size
    alpha, grad = np.zeros(n), -np.ones(n)
    qd = np.diag(Q).copy()
    lo, up = np.zeros(n), np.full(n, C)
    it = 0
    while True:
        m = -y * grad
        iu = np.where(y > 0, alpha < up, alpha > lo)
        il = np.where(y > 0, alpha > lo, alpha < up)
        cand = np.flatnonzero(iu)
        i = cand[np.flatnonzero(m[cand] == m[cand].max())[-1]]  # the last maximiser, as >=
        gmax = m[i]
        low = np.flatnonzero(il)
        gmin = m[low].min()
        viol = low[gmax - m[low] > 0.0]
        if gmax - gmin <= tol or viol.size == 0 or it >= max_iter:
            return alpha, grad, it
        a = qd[i] + qd[viol] - 2.0 * y[i] * y[viol] * Q[viol, i]
        a[a <= 0.0] = core.TAU
        g = -(gmax - m[viol]) ** 2 / a
        j = viol[np.flatnonzero(g == g.min())[-1]]
        it += 1
        bgap = gmax - m[j]
        aq = qd[i] + qd[j] - 2.0 * y[i] * y[j] * Q[j, i]
        si = up[i] - alpha[i] if y[i] > 0 else alpha[i] - lo[i]
        sj = alpha[j] - lo[j] if y[j] > 0 else up[j] - alpha[j]
        smax = min(si, sj)
        s = min(bgap / (aq if aq > 0 else core.TAU), smax)
        ai, aj = alpha[i] + s * y[i], alpha[j] - s * y[j]
        if s >= smax:
            if si <= sj:
                ai = up[i] if y[i] > 0 else lo[i]
            if sj <= si:
                aj = lo[j] if y[j] > 0 else up[j]
        ai, aj = min(max(ai, lo[i]), up[i]), min(max(aj, lo[j]), up[j])
        dai, daj = ai - alpha[i], aj - alpha[j]
        alpha[i], alpha[j] = ai, aj
        grad += Q[:, i] * dai + Q[:, j] * daj


def test_svm_steps_equal_a_numpy_smo():
    """Without shrinking and with Q held in full, the C++ loop takes the numpy SMO's steps:
    the same iteration count and iterate."""
    X, y = _data(150, seed=2)
    Q = RBF(X, X) * np.outer(y, y)
    n, C = y.size, 2.0
    ref_alpha, ref_grad, ref_it = _smo_numpy(Q, y, C, 1e-4)
    sol = solve_dual(PrecomputedQMatrix.from_q(Q), y, np.zeros(n), np.full(n, C), -np.ones(n),
                     alpha0=np.zeros(n), tol=1e-4, shrinking=False)
    assert sol.iterations == ref_it > 50
    np.testing.assert_allclose(sol.alpha, ref_alpha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sol.grad, ref_grad, rtol=0, atol=1e-10)


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize(("cache_mb", "cache_dtype"),
                         [(200.0, "float64"), (0.05, "float64"), (0.05, "float32")])
def test_svm_gradient_and_objective_against_numpy(shrinking, cache_mb, cache_dtype):
    """Any cache size / storage and shrinking: grad = Q alpha - 1 and the objective from numpy's
    Q, the box and y'alpha = 0 hold, and the violation is within tol (n = 1200: the loop
    shrinks, reconstructs and evicts)."""
    X, y = _data(1200, seed=5)
    n, C = y.size, 10.0
    q = KernelQMatrix(X, y, RBF, cache_mb=cache_mb)
    sol = solve_dual(q, y, np.zeros(n), np.full(n, C), -np.ones(n), alpha0=np.zeros(n),
                     tol=1e-3, shrinking=shrinking, cache_dtype=cache_dtype)
    Q = RBF(X, X) * np.outer(y, y)
    atol = 1e-9 if cache_dtype == "float64" else 1e-4
    np.testing.assert_allclose(sol.grad, Q @ sol.alpha - 1.0, rtol=0, atol=atol)
    assert sol.objective == pytest.approx(0.5 * sol.alpha @ Q @ sol.alpha - sol.alpha.sum(),
                                          rel=1e-9 if cache_dtype == "float64" else 1e-6)
    assert sol.converged and sol.violation <= 1e-3 and sol.iterations > 1000
    assert np.all(sol.alpha >= 0.0) and np.all(sol.alpha <= C)
    assert abs(y @ sol.alpha) <= 1e-9 * n
    if shrinking:
        assert sol.reconstructions >= 1


def test_klr_gradient_includes_the_entropy_terms():
    """KLR: grad = Q alpha + p + h'(alpha) with h' from numpy at the returned alpha."""
    X, y = _data(300, seed=8)
    n, C, lam = y.size, 1.0, 0.5
    Ci = np.full(n, C)
    lo, up = 1e-12 * Ci, Ci - 1e-12 * Ci
    a0 = np.full(n, 0.5 * C)
    pos = y > 0
    a0[pos] *= min(1.0, (~pos).sum() / pos.sum())
    a0[~pos] *= min(1.0, pos.sum() / (~pos).sum())
    q = KernelQMatrix(X, y, RBF, cache_mb=0.2)
    sol = solve_dual(q, y, lo, up, np.full(n, -lam), entropy_C=Ci, alpha0=a0, tol=1e-6)
    Q = RBF(X, X) * np.outer(y, y)
    h, hp = entropy_terms(sol.alpha, Ci)
    # G is updated incrementally (h' changes by log differences at each step): round-off
    # accumulates over the 10^4 steps, as in the numba loop
    np.testing.assert_allclose(sol.grad, Q @ sol.alpha - lam + hp, rtol=0, atol=1e-6)
    assert sol.objective == pytest.approx(
        0.5 * sol.alpha @ Q @ sol.alpha - lam * sol.alpha.sum() + h.sum(), rel=1e-8)
    assert sol.converged


def _klr_gap_numpy(y, alpha, beta, grad, lin, lo, up, cent, b):
    """The KLR gap of core._klr_gap's docstring, in numpy: qa = G - p - h'(alpha), t = qa + y b,
    z = -p - t, f = sum 1/2 alpha qa + h(alpha) + p alpha, gap = sum alpha qa + h(alpha) +
    p alpha + loss(t), loss = C log(1 + e^z) where a* = C sigma(z) is inside [l, u], else
    a* z - h(a*) at the clipped a*."""
    def h(a):
        c = cent - a
        return a * np.log(a / cent) + c * np.log(c / cent)

    qa = grad - lin - (np.log(alpha) - np.log(beta))
    t = qa + y * b
    z = -lin - t
    f = float(np.sum(0.5 * alpha * qa + h(alpha) + lin * alpha))
    a_star = cent / (1.0 + np.exp(-z))
    inside = (a_star >= lo) & (a_star <= up)
    clipped = np.clip(a_star, lo, up)
    loss = np.where(inside, cent * np.logaddexp(0.0, z), clipped * z - h(clipped))
    gap = float(np.sum(alpha * qa + h(alpha) + lin * alpha + loss))
    return f, gap


def _klr_b_newton_numpy(y, alpha, beta, grad, lin, lo, up, cent, b, steps):
    """Newton on g(b) = sum_i y_i a*_i(t_i(b)), g'(b) = -sum_{a* inside} C s (1 - s)."""
    qa = grad - lin - (np.log(alpha) - np.log(beta))
    for _ in range(steps):
        s = 1.0 / (1.0 + np.exp(qa + y * b + lin))
        a_star = cent * s
        inside = (a_star > lo) & (a_star < up)
        g = float(y @ np.clip(a_star, lo, up))
        dg = -float(np.sum((cent * s * (1.0 - s))[inside]))
        if dg == 0.0:
            break
        b -= g / dg
    return b


def test_klr_gap_bindings_match_numpy():
    """core._klr_gap / _klr_b_newton (C++, the loops' own gap stop) equal their formulas in
    numpy."""
    X, y = _data(200, seed=9)
    n = y.size
    Ci = np.full(n, 2.0)
    lo, up = 0.01 * Ci, 0.99 * Ci
    alpha = np.random.default_rng(1).uniform(lo, up)
    grad = np.random.default_rng(2).standard_normal(n)
    lin = np.full(n, -0.3)
    args = (y, alpha, Ci - alpha, grad, lin, lo, up, Ci)
    for b in (-1.0, 0.0, 2.5):
        f, gap = core._klr_gap(*args, b)
        f_np, gap_np = _klr_gap_numpy(*args, b)
        assert f == pytest.approx(f_np, rel=1e-12) and gap == pytest.approx(gap_np, rel=1e-12)
        assert core._klr_b_newton(*args, b, 3) == pytest.approx(
            _klr_b_newton_numpy(*args, b, 3), rel=1e-10, abs=1e-10)


def test_continued_cache_keeps_columns():
    """ColumnCache carries KernelColumns and G_bar: a continuation from the same alpha computes
    fewer kernel entries than a fresh one and reaches the same objective."""
    X, y = _data(900, seed=11)
    n = y.size
    q = KernelQMatrix(X, y, RBF, cache_mb=1.0)
    box = (np.zeros(n), np.full(n, 1.0), -np.ones(n))
    first = solve_dual(q, y, *box, alpha0=np.zeros(n), tol=1e-2, cache_dtype="float64")
    assert isinstance(first.cache, ColumnCache)
    kw = dict(alpha0=first.alpha, qa0=first.qa, tol=1e-6, cache_dtype="float64")
    cont = solve_dual(q, y, *box, cache=first.cache, **kw)
    fresh = solve_dual(q, y, *box, **kw)
    assert cont.kernel_evals < fresh.kernel_evals
    assert cont.objective == pytest.approx(fresh.objective, rel=1e-10)


def _slow_problem(n=3000):
    X, y = _data(n, p=10, seed=13)
    q = KernelQMatrix(X, y, Kernel("rbf", gamma=2.0), cache_mb=1.0)  # few slots: slow steps
    return q, y, (np.zeros(n), np.full(n, 100.0), -np.ones(n)), np.zeros(n)


def test_time_limit_stops_the_loop():
    q, y, box, a0 = _slow_problem()
    t0 = time.perf_counter()
    sol = solve_dual(q, y, *box, alpha0=a0, tol=1e-12, time_limit=0.05, shrinking=False)
    assert time.perf_counter() - t0 < 5.0
    assert sol.time_limited and not sol.converged and sol.iterations > 0
    assert termination_of(sol)[0] is TerminationCondition.TIME_LIMIT


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
@pytest.mark.parametrize("in_solve", [False, True])
def test_ctrl_c_interrupts_the_loop(in_solve):
    """SIGINT during the (GIL-free) loop: the loop notices within 1000 pair steps and returns
    its current point, marked interrupted - with Python's own handler (the KeyboardInterrupt is
    taken by the loop) and inside solvers.interrupt's block (run_strategy's)."""
    from solvers import interrupt

    q, y, box, a0 = _slow_problem()
    main = threading.get_ident()
    timer = threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT))
    block = interrupt.interruptible() if in_solve else contextlib.nullcontext()
    t0 = time.perf_counter()
    with block:
        timer.start()
        try:
            sol = solve_dual(q, y, *box, alpha0=a0, tol=1e-12, max_iter=10**9,
                             shrinking=False)
        finally:
            timer.cancel()
    assert time.perf_counter() - t0 < 30.0
    assert sol.interrupted and not sol.converged and sol.iterations > 0
    assert termination_of(sol)[0] is TerminationCondition.INTERRUPTED
    # the point is the loop's: alpha feasible, its gradient consistent with it
    Q = q.kernel(q.X, q.X) * np.outer(y, y) if hasattr(q, "kernel") else None
    assert np.all(sol.alpha >= box[0]) and np.all(sol.alpha <= box[1])
    assert abs(float(y @ sol.alpha)) < 1e-8 * box[1].sum()
    if Q is not None:
        np.testing.assert_allclose(sol.grad, Q @ sol.alpha + box[2], atol=1e-6)  # float32 slots


def test_precomputed_q_with_shrinking_over_several_generations():
    """Q held in full (KIND_MATRIX) with shrinking over several reconstructions: the same
    optimum as numpy's (grad = Q alpha - 1), the bookkeeping of shrunk rows reset each time."""
    X, y = _data(500, seed=5)
    n = y.size
    C = np.random.default_rng(1).uniform(0.3, 30.0, n)
    Q = RBF(X, X) * np.outer(y, y)
    sols = [solve_dual(PrecomputedQMatrix.from_q(Q), y, np.zeros(n), C, -np.ones(n),
                       alpha0=np.zeros(n), tol=tol) for tol in (1e-3, 1e-8)]
    for sol in sols:
        assert sol.converged and sol.reconstructions >= 2
        np.testing.assert_allclose(sol.grad, Q @ sol.alpha - 1.0, rtol=0, atol=1e-9)
    assert sols[1].iterations > 2 * n
