"""Subproblem solves go through the backends' status maps, and a failure is a SubproblemError.

Each direct subproblem solve (AID-LAD's aggregated LP, AID-SVM's aggregated QP by Clarabel or
HiGHS, block SMO's HiGHS QP, interior point and CVXPY subproblems) is made to report a
failure; the strategy function raises SubproblemError naming the strategy, the subsolver, the
status and the fix, and run_strategy turns it (and only it) into a numerical_error result.
"""

from __future__ import annotations

import dataclasses
import types

import clarabel
import highspy
import numpy as np
import pytest

import solvers.highs_backend as highs_backend
from optmodels import strategies
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.svm import SVM
from solvers.aid import aid_lad, aid_svm, lad_lp, svm_qp
from solvers.clarabel_backend import clarabel_termination
from solvers.errors import SolveError, SubproblemError
from solvers.highs_backend import highs_termination
from solvers.kernels import Kernel
from solvers.result import SolutionStatus
from solvers.result import TerminationCondition as T
from solvers.smo.block import block_klr, block_svm
from solvers.subproblem import check_subproblem

FAILED = (T.NUMERICAL_ERROR, "kSolveError")


def lad_data(n: int = 300, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + rng.standard_t(2, size=n)


def svm_data(n: int = 120, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, p)) + 0.8 * y[:, None]
    return X, y


def assert_names_everything(err: SubproblemError, strategy: str, subsolver: str, raw: str):
    """The error names the strategy, the subsolver, its status and the fix."""
    text = str(err)
    assert err.strategy == strategy and f"strategy {strategy!r}" in text
    assert subsolver in err.solver and subsolver in text
    assert err.raw_status.startswith(raw) and raw in text
    assert "strategy='full'" in text and "another subsolver" in text
    assert isinstance(err, SolveError) and err.termination != T.OPTIMAL.value


def assert_numerical_error_result(res, *words: str) -> None:
    assert res.termination is T.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.NO_SOLUTION and res.x is None
    assert res.raw_status.startswith("SubproblemError: ")
    for word in words:
        assert word in res.raw_status


# ------------------------------------------------------------------------------ status maps
class _FakeHighs:
    def __init__(self, status: object) -> None:
        self.status = status

    def getModelStatus(self) -> object:  # noqa: N802 - highspy's name
        return self.status


@pytest.mark.parametrize(("status", "term"), [
    (highspy.HighsModelStatus.kOptimal, T.OPTIMAL),
    (highspy.HighsModelStatus.kInfeasible, T.INFEASIBLE),
    (highspy.HighsModelStatus.kUnbounded, T.UNBOUNDED),
    (highspy.HighsModelStatus.kUnboundedOrInfeasible, T.INFEASIBLE_OR_UNBOUNDED),
    (highspy.HighsModelStatus.kTimeLimit, T.TIME_LIMIT),
    (highspy.HighsModelStatus.kIterationLimit, T.ITERATION_LIMIT),
    (highspy.HighsModelStatus.kInterrupt, T.INTERRUPTED),
    (highspy.HighsModelStatus.kSolveError, T.NUMERICAL_ERROR),
    (highspy.HighsModelStatus.kUnknown, T.NUMERICAL_ERROR),
    (highspy.HighsModelStatus.kNotset, T.ERROR),
])
def test_highs_termination_maps_each_status(status, term):
    assert highs_termination(_FakeHighs(status)) == (term, status.name)


def test_highs_termination_unlisted_status_is_error():
    assert highs_termination(_FakeHighs(types.SimpleNamespace(name="kSomethingNew"))) == (
        T.ERROR, "kSomethingNew")


def test_highs_termination_of_real_runs():
    """An optimal and an infeasible LP, solved by HiGHS, read through the map."""
    h = highs_backend.new_highs()
    h.addVars(1, np.array([0.0]), np.array([1.0]))
    h.changeColsCost(1, np.array([0], dtype=np.int32), np.array([1.0]))
    h.run()
    assert highs_termination(h) == (T.OPTIMAL, "kOptimal")
    h.addRow(2.0, highspy.kHighsInf, 1, np.array([0], dtype=np.int32), np.array([1.0]))
    h.run()
    assert highs_termination(h)[0] is T.INFEASIBLE


@pytest.mark.parametrize(("name", "term"), [
    ("Solved", T.OPTIMAL),
    ("PrimalInfeasible", T.INFEASIBLE),
    ("DualInfeasible", T.UNBOUNDED),
    ("MaxTime", T.TIME_LIMIT),
    ("MaxIterations", T.ITERATION_LIMIT),
    ("AlmostSolved", T.NUMERICAL_ERROR),
    ("NumericalError", T.NUMERICAL_ERROR),
    ("InsufficientProgress", T.NUMERICAL_ERROR),
    ("Unsolved", T.ERROR),
])
def test_clarabel_termination_maps_each_status(name, term):
    sol = types.SimpleNamespace(status=getattr(clarabel.SolverStatus, name))
    assert clarabel_termination(sol) == (term, name)


def test_clarabel_termination_unlisted_status_is_error():
    sol = types.SimpleNamespace(status="SolverStatus.SomethingNew")
    assert clarabel_termination(sol) == (T.ERROR, "SomethingNew")


@pytest.mark.parametrize(("module", "word"), [
    ("solvers.highs_backend", "kOptimal"), ("solvers.clarabel_backend", "Solved")])
def test_monolithic_solve_reads_the_same_map(monkeypatch, module, word):
    """The backend's own solve reads its status through the one map the subproblems use."""
    import importlib

    from solvers.qp import QPData

    mod = importlib.import_module(module)
    qp = QPData(c=np.array([1.0]), A=np.ones((1, 1)), row_lo=np.array([-5.0]),
                row_hi=np.array([5.0]), col_lo=np.array([0.0]), col_hi=np.array([1.0]))
    backend = mod.HighsBackend() if "highs" in module else mod.ClarabelBackend()
    assert backend.solve_qp(qp).termination is T.OPTIMAL
    monkeypatch.setitem(mod.STATUS_MAP, word, T.NUMERICAL_ERROR)
    assert backend.solve_qp(qp).termination is T.NUMERICAL_ERROR


def test_check_subproblem_passes_optimal_and_allowed_only():
    check_subproblem(T.OPTIMAL, "Solved", strategy="aid", subsolver="Clarabel")
    check_subproblem(T.TIME_LIMIT, "MaxTime", strategy="aid", subsolver="Clarabel",
                     allow=frozenset({T.TIME_LIMIT}))
    with pytest.raises(SubproblemError) as info:
        check_subproblem(T.TIME_LIMIT, "MaxTime", strategy="aid", subsolver="Clarabel")
    assert_names_everything(info.value, "aid", "Clarabel", "MaxTime")


# ---------------------------------------------------------------------------------- AID-LAD
@pytest.mark.parametrize("lp", ["simplex", "ipm"])
def test_aid_lad_lp_failure_raises(monkeypatch, lp):
    X, y = lad_data()
    if lp == "ipm":  # the interior point stalls and hands its LP to the (failing) simplex
        import solvers.aid.fn_lp as fn_lp

        monkeypatch.setattr(fn_lp, "frisch_newton", lambda A, c, b, x0, tol, max_iter: (
            np.zeros(len(c)), np.zeros(A.shape[1]), max_iter, False))
    monkeypatch.setattr(lad_lp, "highs_termination", lambda h: FAILED)
    with pytest.raises(SubproblemError) as info:
        aid_lad(X, y, n_clusters=20, lp=lp)
    name = "Frisch-Newton" if lp == "ipm" else "HiGHS"
    assert_names_everything(info.value, "aid", name, "Frisch-Newton" if lp == "ipm"
                            else "kSolveError")
    assert "kSolveError" in str(info.value) and "iteration 1" in str(info.value)
    res = LAD(X, y).solve("aid", n_clusters=20, lp=lp)
    assert_numerical_error_result(res, "kSolveError", name, "strategy='full'")
    assert res.strategy == "aid"


def test_aid_lad_user_time_limit_is_not_a_failure(monkeypatch):
    """HiGHS stopping at the time the strategy passed down is the user's limit: a TIME_LIMIT
    result, no exception."""
    X, y = lad_data()
    monkeypatch.setattr(lad_lp, "highs_termination", lambda h: (T.TIME_LIMIT, "kTimeLimit"))
    res = aid_lad(X, y, n_clusters=20, lp="simplex", time_limit=100.0)
    assert res.termination is T.TIME_LIMIT and "kTimeLimit" in res.raw_status


# ---------------------------------------------------------------------------------- AID-SVM
@pytest.mark.parametrize(("subsolver", "patched", "raw", "name"), [
    ("clarabel", "clarabel_termination", "AlmostSolved", "Clarabel"),
    ("highs", "highs_termination", "kSolveError", "HiGHS"),
])
def test_aid_svm_linear_qp_failure_raises(monkeypatch, subsolver, patched, raw, name):
    X, y = svm_data()
    monkeypatch.setattr(svm_qp, patched, lambda _: (T.NUMERICAL_ERROR, raw))
    with pytest.raises(SubproblemError) as info:
        aid_svm(X, y, C=1.0, n_clusters=8, subsolver=subsolver)
    assert_names_everything(info.value, "aid", name, raw)
    other = "highs" if subsolver == "clarabel" else "clarabel"
    assert f"subsolver={other!r}" in str(info.value)
    res = SVM(X, y, C=1.0).solve("aid", n_clusters=8, subsolver=subsolver)
    assert_numerical_error_result(res, raw, name)


def test_aid_svm_kernel_dual_failure_raises(monkeypatch):
    X, y = svm_data()
    monkeypatch.setattr(svm_qp, "clarabel_termination", lambda _: (T.ITERATION_LIMIT,
                                                                   "MaxIterations"))
    with pytest.raises(SubproblemError) as info:
        aid_svm(X, y, C=1.0, n_clusters=8, kernel=Kernel("rbf", gamma=0.5))
    assert_names_everything(info.value, "aid", "Clarabel", "MaxIterations")


def test_aid_svm_user_time_limit_is_not_a_failure(monkeypatch):
    X, y = svm_data()
    monkeypatch.setattr(svm_qp, "clarabel_termination", lambda _: (T.TIME_LIMIT, "MaxTime"))
    res = aid_svm(X, y, C=1.0, n_clusters=8, time_limit=100.0)
    assert res.termination is T.TIME_LIMIT


# ------------------------------------------------------------------------------- block SMO
def test_block_highs_failure_raises(monkeypatch):
    X, y = svm_data()
    monkeypatch.setattr(highs_backend, "highs_termination", lambda h: FAILED)
    with pytest.raises(SubproblemError) as info:
        block_svm(X, y, C=1.0, kernel="rbf", q=6)
    assert_names_everything(info.value, "block", "HiGHS", "kSolveError")
    assert "solver='ipm-cholesky'" in str(info.value)
    res = SVM(X, y, C=1.0, kernel="rbf").solve("block", q=6)
    assert_numerical_error_result(res, "kSolveError", "HiGHS")
    assert res.strategy == "block" and "HiGHS" in res.solver


def test_block_highs_iteration_cap_keeps_the_block_point(monkeypatch):
    """HiGHS at its own iteration cap is the documented fallback: the block's point is kept
    and the SMO polish solves the subproblem, so the run still ends certified."""
    X, y = svm_data()
    monkeypatch.setattr(highs_backend, "highs_termination",
                        lambda h: (T.ITERATION_LIMIT, "kIterationLimit"))
    res = block_svm(X, y, C=1.0, kernel="rbf", q=6)
    assert res.termination is T.OPTIMAL


def test_block_ipm_failure_raises(monkeypatch):
    import solvers.sketch.kernel_block as kernel_block

    monkeypatch.setattr(kernel_block, "ipm_block_qp",
                        lambda Q, c, *args, **kw: np.full(c.shape[0], np.nan))
    X, y = svm_data()
    with pytest.raises(SubproblemError) as info:
        block_svm(X, y, C=1.0, kernel="rbf", q=6, solver="ipm-cholesky")
    assert_names_everything(info.value, "block", "interior point", "non-finite")
    res = SVM(X, y, C=1.0, kernel="rbf").solve("block", q=6, solver="ipm-nystroem")
    assert_numerical_error_result(res, "non-finite", "interior point")


def test_strict_block_ipm_at_its_step_limit_raises():
    from solvers.sketch.kernel_block import ipm_block_qp

    rng = np.random.default_rng(0)
    F = rng.normal(size=(8, 8))
    y = np.where(rng.random(8) < 0.5, 1.0, -1.0)
    with pytest.raises(SubproblemError) as info:
        ipm_block_qp(F @ F.T, rng.normal(size=8), y, 0.0, np.zeros(8), np.ones(8),
                     linear_solver="cholesky", max_iter=1)
    assert info.value.termination == T.ITERATION_LIMIT.value
    assert "after 1 steps" in info.value.raw_status


def test_block_klr_cvxpy_failure_raises(monkeypatch):
    import solvers.cvxpy_lowering as cvxpy_lowering

    for word in ("optimal", "optimal_inaccurate"):
        monkeypatch.setitem(cvxpy_lowering.STATUS_MAP, word, T.NUMERICAL_ERROR)
    X, y = svm_data(n=40)
    with pytest.raises(SubproblemError) as info:
        block_klr(X, y, C=1.0, kernel="linear", q=4)
    assert_names_everything(info.value, "block", "CLARABEL", "optimal")
    assert "solver='ECOS'" in str(info.value)
    res = KLR(X, y, C=1.0, kernel="linear").solve("block", q=4)
    assert_numerical_error_result(res, "CLARABEL")


# ------------------------------------------------------------------------------ run_strategy
@pytest.mark.parametrize("exc", [NotImplementedError("not yet"), RecursionError("deep"),
                                 RuntimeError("plain"), ValueError("bad")])
def test_other_exceptions_propagate_from_run_strategy(monkeypatch, exc):
    strategies._load()

    def failing(problem, **options):
        raise exc

    monkeypatch.setitem(strategies._REGISTRY["svm"], "block",
                        dataclasses.replace(strategies.get_strategy("svm", "block"), run=failing))
    X, y = svm_data(n=20)
    with pytest.raises(type(exc)) as info:
        SVM(X, y).solve("block")
    assert info.value is exc


def test_run_strategy_turns_only_subproblem_error_into_numerical_error(monkeypatch):
    strategies._load()
    err = SubproblemError("strategy 'block': HiGHS ended a block QP with status kSolveError",
                          strategy="block", solver="HiGHS", raw_status="kSolveError")

    def failing(problem, **options):
        raise err

    monkeypatch.setitem(strategies._REGISTRY["svm"], "block",
                        dataclasses.replace(strategies.get_strategy("svm", "block"), run=failing))
    X, y = svm_data(n=20)
    res = SVM(X, y).solve("block")
    assert_numerical_error_result(res, str(err))
    assert res.solver == "HiGHS" and res.strategy == "block"
