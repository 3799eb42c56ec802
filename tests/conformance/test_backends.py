"""The conformance suite: every registered backend runs every reference case."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.cases import CASES, lp_lower_row
from solvers.backend import backends, solve_qp
from solvers.errors import SolveError
from solvers.result import SolutionStatus, TerminationCondition

BACKENDS = ["highs", "clarabel", "ecos"]


def test_every_registered_backend_is_in_the_suite():
    assert sorted(backends()) == sorted(BACKENDS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_reference_case(backend, case):
    qp, expected = case()
    res = solve_qp(qp, backend)
    if "objective" in expected:
        assert res.termination is TerminationCondition.OPTIMAL, res.raw_status
        assert res.solution_status is SolutionStatus.OPTIMAL
        assert res.objective == pytest.approx(expected["objective"], rel=1e-6, abs=1e-6)
        assert res.bound == pytest.approx(expected["objective"], rel=1e-6, abs=1e-6)
        np.testing.assert_allclose(res.x, expected["x"], atol=1e-5)
        assert res.require_optimal() is res
    else:
        assert not res.is_optimal
        if "termination" in expected:
            assert res.termination in expected["termination"], res.raw_status
        with pytest.raises(SolveError) as info:
            res.require_optimal()
        assert info.value.solver == backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_is_refused_before_the_solver_sees_it(backend):
    qp, _ = lp_lower_row()
    qp.c[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        solve_qp(qp, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_iteration_limit_is_a_status(backend):
    rng = np.random.default_rng(0)
    import scipy.sparse as sp

    from solvers.qp import QPData

    n = 60
    A = sp.csr_matrix(rng.normal(size=(30, n)))
    qp = QPData(
        c=rng.normal(size=n),
        A=A,
        row_lo=np.full(30, -1.0),
        row_hi=np.full(30, 1.0),
        col_lo=np.full(n, -1.0),
        col_hi=np.full(n, 1.0),
    )
    res = solve_qp(qp, backend, max_iter=1)
    assert res.termination is TerminationCondition.ITERATION_LIMIT, res.raw_status
    assert not res.is_optimal


def test_unknown_backend_lists_the_choices():
    qp, _ = lp_lower_row()
    with pytest.raises(ValueError, match="choose one of clarabel, ecos, highs"):
        solve_qp(qp, "gurobi")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("smallest", [1e-6, 1e-9])
def test_ill_conditioned_qp_is_exact_or_flagged(backend, smallest):
    """min 1/2 x'Dx - d'x (x* = 1) with cond(D) up to 1e9 and one loose row. HiGHS says
    "optimal" at 1e-9 with x_5 = 995; the KKT check must turn that into NUMERICAL_ERROR."""
    import scipy.sparse as sp

    from solvers.qp import QPData

    d = np.logspace(0, np.log10(smallest), 6)
    qp = QPData(
        c=-d,
        A=sp.csr_matrix(np.ones((1, 6))),
        row_lo=np.array([-1e3]),
        row_hi=np.array([1e3]),
        col_lo=np.full(6, -np.inf),
        col_hi=np.full(6, np.inf),
        P=sp.diags(d),
    )
    res = solve_qp(qp, backend)
    if res.is_optimal:  # x along the 1e-9 direction is not determined; the objective is
        assert res.objective == pytest.approx(-d.sum() / 2, abs=1e-7)
    else:
        assert res.termination is TerminationCondition.NUMERICAL_ERROR
    if smallest == 1e-6 and backend != "ecos":
        assert res.is_optimal
