"""The Nystroem-preconditioned interior point of the SVM block subproblem against HiGHS, and
the block strategy with it against SMO and the monolithic solve."""

from __future__ import annotations

import numpy as np
import pytest

from instances.generators import make_classification
from optmodels.svm import SVM
from solvers.kernels import Kernel
from solvers.options import BLOCK_SVM_SOLVERS
from solvers.result import CERTIFICATE_TOL, TerminationCondition
from solvers.sketch.ipm_svm import block_pcg
from solvers.sketch.kernel_block import QPInfo, ipm_block_qp, nystroem_factor
from solvers.smo.block import SVM_SUBSOLVERS, _qp_highs, block_svm


def _block_qp(q: int, seed: int, fixed: int = 0):
    """A random SVM-like block QP: Q = diag(y) K diag(y) (RBF), box [lo, up] with some
    nonzero lower bounds and ``fixed`` variables with lo = up, and a reachable rhs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(q, 4))
    y = np.where(rng.random(q) < 0.5, -1.0, 1.0)
    Q = np.outer(y, y) * Kernel("rbf", gamma=0.5)(X, X)
    lo = np.where(rng.random(q) < 0.2, 0.1, 0.0)
    up = lo + rng.uniform(0.5, 2.0, q)
    up[:fixed] = lo[:fixed]
    c = -1.0 + 0.3 * rng.normal(size=q)
    rhs = float(y @ (lo + (up - lo) * rng.random(q)))
    return Q, c, y, rhs, lo, up


def _f(Q, c, a) -> float:
    return float(0.5 * a @ Q @ a + c @ a)


@pytest.mark.parametrize(("q", "seed", "fixed"), [(50, 0, 0), (120, 1, 5), (250, 2, 0),
                                                  (400, 3, 10)])
def test_ipm_matches_highs_on_random_block_qps(q, seed, fixed):
    Q, c, y, rhs, lo, up = _block_qp(q, seed, fixed)
    ref = _qp_highs(Q, c, y, rhs, lo, up)
    info = QPInfo()
    a = ipm_block_qp(Q, c, y, rhs, lo, up, info=info)
    f_ref, f_ipm = _f(Q, c, ref), _f(Q, c, a)
    assert info.converged and info.steps < 40
    assert abs(f_ipm - f_ref) <= 1e-9 * abs(f_ref)
    assert np.all(a >= lo) and np.all(a <= up)
    assert np.array_equal(a[:fixed], lo[:fixed])
    assert abs(y @ a - rhs) <= 1e-12 * np.abs(y * a).sum()
    # the gap certificate bounds the distance to the optimum HiGHS found
    assert f_ipm - f_ref <= info.gap + 1e-12 * abs(f_ref)


def test_ipm_converges_when_the_optimum_is_the_lower_corner():
    """c > 0 and lo = 0, rhs = 0: a* = 0 and f* = 0, so a gap relative to f alone could never
    be met; the box floor of the scale makes it reachable."""
    Q, c, y, _, _, up = _block_qp(60, 6)
    lo = np.zeros(60)
    c = np.abs(c) + 0.1
    info = QPInfo()
    a = ipm_block_qp(Q, c, y, 0.0, lo, up, info=info)
    ref = _qp_highs(Q, c, y, 0.0, lo, up)
    assert info.converged and _f(Q, c, ref) == 0.0
    assert 0.0 <= _f(Q, c, a) <= 1e-12 * (np.abs(c) @ up)


@pytest.mark.parametrize(("preconditioner", "linear_solver"),
                         [("diag", "cg"), ("none", "cholesky")])
def test_other_linear_algebra_reaches_the_same_optimum(preconditioner, linear_solver):
    Q, c, y, rhs, lo, up = _block_qp(80, 4)
    f_ref = _f(Q, c, _qp_highs(Q, c, y, rhs, lo, up))
    a = ipm_block_qp(Q, c, y, rhs, lo, up, preconditioner=preconditioner,
                     linear_solver=linear_solver)
    assert abs(_f(Q, c, a) - f_ref) <= 1e-9 * abs(f_ref)


def test_nystroem_factor_is_exact_at_the_rank_and_its_residual_diagonal():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    Q = X @ X.T  # rank 5
    F, e = nystroem_factor(Q, rank=20)
    assert F.shape == (60, 5)
    np.testing.assert_allclose(F @ F.T, Q, atol=1e-10 * np.abs(Q).max())
    K = Kernel("rbf", gamma=0.5)(X, X)
    F, e = nystroem_factor(K, rank=10)
    np.testing.assert_allclose(e, np.diag(K - F @ F.T), atol=1e-12)
    assert np.all(e >= 0) and e.sum() < np.trace(K)


def test_the_nystroem_preconditioner_cuts_cg_iterations():
    """On Q + D with a spread D (as late in the interior point), against unpreconditioned CG:
    both solve to the same residual, the preconditioned one in far fewer iterations."""
    Q, *_ = _block_qp(200, 5)
    D = np.logspace(-6, 4, 200)[np.random.default_rng(1).permutation(200)]
    F, e = nystroem_factor(Q, rank=60)
    from solvers.sketch.ipm_svm import LowRankPlusDiagonal

    M = LowRankPlusDiagonal(np.ones(200), D + e, F.T)
    R = np.random.default_rng(2).normal(size=(200, 1))

    def H(P):
        return Q @ P + D[:, None] * P

    V1, _, _, k1 = block_pcg(lambda P: (H(P), None), R, M.solve, 1e-8, 5000)
    V0, _, _, k0 = block_pcg(lambda P: (H(P), None), R, lambda V: V, 1e-8, 5000)
    for V in (V0, V1):
        assert np.linalg.norm(H(V) - R) <= 1.01e-8 * np.linalg.norm(R)
    assert 3 * k1 < k0


def test_block_with_ipm_subproblems_is_certified_at_the_smo_and_full_objective():
    X, y = make_classification(n=1000, p=5, seed=3)
    problem = SVM(X, y, C=1.0, kernel="rbf", gamma=0.5)
    blk = problem.solve("block", q=100, solver="ipm-nystroem")
    assert blk.solver == "ipm-nystroem"
    for ref in (problem.solve("smo"), problem.solve("full")):
        assert ref.termination is TerminationCondition.OPTIMAL, ref.raw_status
        assert blk.termination is TerminationCondition.OPTIMAL, blk.raw_status
        assert blk.gap <= CERTIFICATE_TOL
        assert abs(blk.objective - ref.objective) <= (blk.gap + ref.gap + 1e-12) * blk.scale


def test_block_with_dense_cholesky_ipm_subproblems_matches_smo():
    X, y = make_classification(n=300, p=3, seed=8)
    problem = SVM(X, y, C=10.0, kernel="rbf", gamma=1.0)
    blk = problem.solve("block", q=60, solver="ipm-cholesky")
    smo = problem.solve("smo")
    assert blk.termination is TerminationCondition.OPTIMAL, blk.raw_status
    assert smo.termination is TerminationCondition.OPTIMAL, smo.raw_status
    assert abs(blk.objective - smo.objective) <= (blk.gap + smo.gap + 1e-12) * blk.scale


def test_bad_solver_values_are_refused_naming_the_option_and_choices():
    X, y = make_classification(n=40, p=2, seed=0)
    assert BLOCK_SVM_SOLVERS == SVM_SUBSOLVERS
    with pytest.raises(ValueError, match=r"'solver'.*'highs', 'ipm-nystroem', 'ipm-cholesky'"):
        SVM(X, y, kernel="rbf").solve("block", solver="cholesky")
    with pytest.raises(ValueError, match=r"solver.*'highs', 'ipm-nystroem', 'ipm-cholesky'"):
        block_svm(X, y, solver="HiGHS-ipm")
    Q, c, yb, rhs, lo, up = _block_qp(10, 0)
    with pytest.raises(ValueError, match=r"preconditioner.*'nystroem', 'diag', 'none'"):
        ipm_block_qp(Q, c, yb, rhs, lo, up, preconditioner="fd")
    with pytest.raises(ValueError, match=r"linear_solver.*'cg', 'cholesky'"):
        ipm_block_qp(Q, c, yb, rhs, lo, up, linear_solver="lu")
