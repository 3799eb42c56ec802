"""SMO runs continued with the previous run's column cache and G_bar (refinement rounds)."""

from __future__ import annotations

import numpy as np

from solvers.kernels import Kernel
from solvers.smo.core import solve_dual
from solvers.smo.qmatrix import KernelQMatrix

RBF = Kernel("rbf", gamma=0.5)


def _data(n=700, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = np.where(X[:, 0] + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _check_gradient(X, y, sol, lin):
    """grad = Q alpha + p, with Q from numpy's kernel (independent of the compiled columns)."""
    Q = RBF(X, X) * np.outer(y, y)
    np.testing.assert_allclose(sol.grad, Q @ sol.alpha + lin, rtol=0, atol=1e-9)


def test_continued_run_reuses_cache_and_matches_a_fresh_continuation():
    X, y = _data()
    n = y.size
    q = KernelQMatrix(X, y, RBF, cache_mb=0.5)  # 0.5 MB < Q's 3.9 MB: columns are evicted
    lo, up, lin = np.zeros(n), np.full(n, 1.0), -np.ones(n)
    first = solve_dual(q, y, lo, up, lin, alpha0=np.zeros(n), tol=1e-2, cache_dtype="float64")
    kw = dict(alpha0=first.alpha, qa0=first.qa, tol=1e-6, cache_dtype="float64")
    fresh = solve_dual(q, y, lo, up, lin, **kw)
    cont = solve_dual(q, y, lo, up, lin, cache=first.cache, **kw)
    assert fresh.converged and cont.converged
    assert cont.violation <= 1e-6
    assert cont.kernel_evals < fresh.kernel_evals  # G_bar and columns were not recomputed
    assert abs(cont.objective - fresh.objective) <= 1e-10 * abs(fresh.objective)
    _check_gradient(X, y, cont, lin)


def test_cache_with_another_box_rebuilds_gbar():
    """G_bar belongs to the box: continuing in a wider box must not reuse it."""
    X, y = _data(seed=5)
    n = y.size
    q = KernelQMatrix(X, y, RBF, cache_mb=0.5)
    lo, up, lin = np.zeros(n), np.full(n, 0.2), -np.ones(n)
    first = solve_dual(q, y, lo, up, lin, alpha0=np.zeros(n), tol=1e-3, cache_dtype="float64")
    assert np.any(first.alpha == 0.2)  # some variables at the upper bound
    wide = np.full(n, 1.0)
    cont = solve_dual(q, y, lo, wide, lin, alpha0=first.alpha, qa0=first.qa, tol=1e-6,
                      cache_dtype="float64", cache=first.cache)
    fresh = solve_dual(q, y, lo, wide, lin, alpha0=first.alpha, qa0=first.qa, tol=1e-6,
                       cache_dtype="float64")
    assert cont.converged and cont.violation <= 1e-6
    assert abs(cont.objective - fresh.objective) <= 1e-10 * abs(fresh.objective)
    _check_gradient(X, y, cont, lin)
