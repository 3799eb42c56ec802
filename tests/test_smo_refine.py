"""SMO's refinement rounds for the SVM (issue 29): the tolerance predicted from the gap, and a
round that resumes the previous one (shrinking from its first step, the batched loop's G_bar
carried) instead of starting over."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from solvers.kernels import Kernel
from solvers.result import CERTIFICATE_TOL, SOLUTION_TOL
from solvers.smo import smo_svm
from solvers.smo.batched import GbarCarry
from solvers.smo.certificate import (
    REFINE_FACTOR,
    REFINE_REACH,
    TOL_FLOOR,
    Certificate,
)
from solvers.smo.core import solve_dual
from solvers.smo.qmatrix import KernelQMatrix

RBF = Kernel("rbf", gamma=1.0)


def _banana_like(n: int, seed: int):
    """Two interleaved noisy arcs in 2-D (labels +1 / -1): overlapping classes, many free
    support vectors, as KEEL's banana."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, np.pi, n)
    lab = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = np.c_[np.cos(t) + (lab < 0), np.sin(t) * lab - 0.3 * (lab < 0)]
    return X + 0.35 * rng.standard_normal((n, 2)), lab


def _gradient(X, y, alpha):
    """grad = Q alpha - 1 from numpy's kernel (independent of the compiled columns)."""
    return y * (RBF(X, X) @ (alpha * y)) - 1.0


def test_next_tol_aims_at_the_allowance_within_its_clamps():
    """next_tol = 0.5 v A / G, never looser than tol / REFINE_FACTOR, never tighter than
    tol / REFINE_REACH or TOL_FLOOR; the fixed step when the gap gives nothing to scale."""
    # gap rule allowance CERTIFICATE_TOL * scale = 1e-2; solution rule 0.5e-6 * 400 = 2e-4
    cert = Certificate(objective=-1e4 + 1.0, bound=-1e4 - 0.0, scale=1e4, b=0.0,
                       w_norm2=400.0, q_max=1.0)
    allowance = min(CERTIFICATE_TOL * 1e4, 0.5 * SOLUTION_TOL ** 2 * 400.0)
    assert cert.solution_allowance == pytest.approx(2e-4)
    assert cert.next_tol(1e-3, 8e-4) == pytest.approx(0.5 * 8e-4 * allowance / 1.0)
    # a gap barely above the allowance still tightens by REFINE_FACTOR at least
    near = Certificate(-1e4 + 3e-4, -1e4, 1e4, 0.0, 400.0, 1.0)
    assert near.next_tol(1e-3, 9e-4) == pytest.approx(1e-3 / REFINE_FACTOR)
    # a huge gap: at most REFINE_REACH per round, and never below TOL_FLOOR
    far = Certificate(-1e4 + 1e6, -1e4, 1e4, 0.0, 400.0, 1.0)
    assert far.next_tol(1e-3, 1e-3) == pytest.approx(1e-3 / REFINE_REACH)
    assert far.next_tol(1e-9, 1e-9) == TOL_FLOOR
    # no measurable gap or violation: the fixed schedule
    flat = Certificate(-1e4, -1e4, 1e4, 0.0, 400.0, 1.0)
    assert flat.next_tol(1e-3, 1e-3) == pytest.approx(1e-3 / REFINE_FACTOR)
    assert cert.next_tol(1e-3, 0.0) == pytest.approx(1e-3 / REFINE_FACTOR)


@pytest.mark.parametrize("working_set", [2, 64])
def test_predicted_round_certifies_and_matches_libsvm_at_a_tight_tol(working_set):
    """The default solve certifies after one predicted round (where the tol / 10 schedule took
    three), and its dual objective is LIBSVM's at tol 1e-9 (scikit-learn SVC) within the
    certified gap; the gap itself is recomputed from numpy's kernel."""
    X, y = _banana_like(900, seed=4)
    C = 10.0
    res = smo_svm(X, y, C=C, kernel=RBF, tol=1e-3, working_set=working_set)
    rule = res.extra["stopping_rule"]
    assert res.is_optimal and 0.0 <= res.gap <= CERTIFICATE_TOL
    assert rule["refinements"] == 1 and rule["tol"] <= 1e-3 / REFINE_FACTOR
    svc = SVC(C=C, gamma=1.0, tol=1e-9).fit(X, y)
    dc, sv = svc.dual_coef_[0], svc.support_vectors_
    ref = float(0.5 * dc @ RBF(sv, sv) @ dc - np.abs(dc).sum())
    assert abs(res.objective - ref) <= 2.0 * res.gap * res.scale + 1e-9 * abs(ref)
    grad = _gradient(X, y, res.x)
    b = res.extra["b"]
    gap = res.x @ grad + C * np.maximum(0.0, -grad - y * b).sum()
    assert gap == pytest.approx(res.gap * res.scale, rel=1e-6, abs=1e-9)


def test_resumed_pairwise_round_takes_the_same_steps_with_fewer_active_rows():
    """resume=True (shrink before the first step, no early un-shrink) leaves the steps as a
    plain continuation takes them (shrinking only leaves out variables the selection would not
    pick): same iterations and alpha to round-off, the gradient exact against numpy."""
    X, y = _banana_like(700, seed=2)
    n = y.size
    q = KernelQMatrix(X, y, RBF, cache_mb=50.0)
    lo, up, lin = np.zeros(n), np.full(n, 10.0), -np.ones(n)
    first = solve_dual(q, y, lo, up, lin, alpha0=np.zeros(n), tol=1e-3, cache_dtype="float64")
    kw = dict(alpha0=first.alpha, qa0=first.qa, tol=1e-6, cache_dtype="float64")
    plain = solve_dual(q, y, lo, up, lin, **kw)
    resumed = solve_dual(q, y, lo, up, lin, cache=first.cache, resume=True, **kw)
    assert plain.converged and resumed.converged and resumed.violation <= 1e-6
    assert abs(resumed.iterations - plain.iterations) <= 0.02 * plain.iterations
    np.testing.assert_allclose(resumed.alpha, plain.alpha, rtol=0, atol=1e-6)
    np.testing.assert_allclose(resumed.grad, _gradient(X, y, resumed.alpha), rtol=0, atol=1e-9)


def test_batched_round_takes_the_carried_gbar():
    """A batched round resumed with the previous run's GbarCarry computes fewer kernel entries
    than one that derives G_bar again, and ends at the same point (objective to 1e-10, the
    gradient exact against numpy)."""
    X, y = _banana_like(1500, seed=7)  # C = 100: enough pair steps to shrink (1,000 a check)
    n = y.size
    q = KernelQMatrix(X, y, RBF, cache_mb=50.0)
    lo, up, lin = np.zeros(n), np.full(n, 100.0), -np.ones(n)
    opts = dict(cache_dtype="float64", working_set=64)
    first = solve_dual(q, y, lo, up, lin, alpha0=np.zeros(n), tol=1e-3, **opts)
    assert isinstance(first.cache, GbarCarry)
    known = np.isfinite(first.cache.gbar)
    assert known.sum() > n // 2  # the rows shrunk at the end (most are at a bound)
    at_bound = (first.alpha == lo) | (first.alpha == up)
    gbar_ref = RBF(X, X * 1.0)[:, at_bound] @ (first.alpha * y)[at_bound] * y
    np.testing.assert_allclose(first.cache.gbar[known], gbar_ref[known], rtol=0, atol=1e-9)
    kw = dict(alpha0=first.alpha, qa0=first.qa, tol=1e-6, resume=True, **opts)
    carried = solve_dual(q, y, lo, up, lin, cache=first.cache, **kw)
    derived = solve_dual(q, y, lo, up, lin, **kw)
    assert carried.converged and derived.converged
    assert carried.kernel_evals < derived.kernel_evals
    assert abs(carried.objective - derived.objective) <= 1e-10 * abs(derived.objective)
    np.testing.assert_allclose(carried.grad, _gradient(X, y, carried.alpha), rtol=0, atol=1e-9)
    # a carry for another alpha is not used
    other = first.cache.start(np.zeros(n), lo, up)
    assert np.isnan(other).all()
