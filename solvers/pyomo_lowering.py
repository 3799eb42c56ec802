"""QPData as a Pyomo model a user can read, extend and solve, and Pyomo solves as results.

:func:`to_pyomo` gives one indexed ``Var`` per column block (``m.beta[j]``, ``m.e_plus[i]``) and
one indexed ``Constraint`` per row block, so a user can add a constraint by name
(``m.extra = pyo.Constraint(expr=m.beta[0] >= 0)``) and call :func:`solve_pyomo`.
Building Pyomo components costs about 0.5 s per 10^4 rows: the toolkit's own solves lower
:class:`~solvers.qp.QPData` to the solver directly and use this path for modelling only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.qp import QPData
from solvers.result import SolutionStatus, SolveResult
from solvers.result import TerminationCondition as T

# Pyomo's contrib.solver TerminationCondition names -> ours, in this one place.
STATUS_MAP = {
    "convergenceCriteriaSatisfied": T.OPTIMAL,
    "maxTimeLimit": T.TIME_LIMIT,
    "iterationLimit": T.ITERATION_LIMIT,
    "objectiveLimit": T.ERROR,
    "minStepLength": T.NUMERICAL_ERROR,
    "unbounded": T.UNBOUNDED,
    "provenInfeasible": T.INFEASIBLE,
    "locallyInfeasible": T.INFEASIBLE,
    "infeasibleOrUnbounded": T.INFEASIBLE_OR_UNBOUNDED,
    "error": T.ERROR,
    "interrupted": T.ERROR,
    "licensingProblems": T.ERROR,
    "emptyModel": T.OPTIMAL,
    "unknown": T.ERROR,
}


def _bound(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def to_pyomo(qp: QPData) -> Any:
    """A ``pyomo.environ.ConcreteModel`` equal to ``qp`` (same variables, rows and objective)."""
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel(name=qp.name)
    columns: list[Any] = []
    start = 0
    for name, size in qp.col_blocks:
        lo, hi = qp.col_lo[start : start + size], qp.col_hi[start : start + size]
        var = pyo.Var(
            range(size), bounds=lambda _m, i, lo=lo, hi=hi: (_bound(lo[i]), _bound(hi[i]))
        )
        m.add_component(name, var)
        columns.extend(var[i] for i in range(size))
        start += size
    A = sp.csr_matrix(qp.A)
    row = 0
    for name, size in qp.row_blocks:

        def rule(_m: Any, i: int, base: int = row) -> Any:
            r = base + i
            lo, hi = A.indptr[r], A.indptr[r + 1]
            expr = LinearExpression(
                constant=0.0,
                linear_coefs=A.data[lo:hi].tolist(),
                linear_vars=[columns[j] for j in A.indices[lo:hi]],
            )
            return (_bound(qp.row_lo[r]), expr, _bound(qp.row_hi[r]))

        m.add_component(name, pyo.Constraint(range(size), rule=rule))
        row += size
    obj = LinearExpression(
        constant=float(qp.offset),
        linear_coefs=qp.c[qp.c != 0].tolist(),
        linear_vars=[columns[j] for j in np.flatnonzero(qp.c)],
    )
    if not qp.is_lp:
        P = sp.triu(sp.coo_matrix(qp.P))
        quad = sum(
            (0.5 if i == j else 1.0) * v * columns[i] * columns[j]
            for i, j, v in zip(P.row, P.col, P.data, strict=False)
        )
        obj = obj + quad
    m.objective = pyo.Objective(expr=obj, sense=pyo.minimize)
    return m


def solve_pyomo(
    model: Any, solver: str = "highs", *, time_limit: float | None = None, verbose: bool = False
) -> SolveResult:
    """Solve any Pyomo model with a ``pyomo.contrib.solver`` solver (default HiGHS).

    The objective is read from the model's active objective after loading the solution; no KKT
    check is possible here (use the problem's own ``solve`` for verified answers).
    """
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory

    opt = SolverFactory(solver)
    kwargs: dict[str, Any] = {
        "tee": verbose,
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
    }
    if time_limit is not None:
        kwargs["time_limit"] = time_limit
    t0 = time.perf_counter()
    res = opt.solve(model, **kwargs)
    elapsed = time.perf_counter() - t0
    raw = res.termination_condition.name
    term = STATUS_MAP.get(raw, T.ERROR)
    status = SolutionStatus.NO_SOLUTION
    objective = float("nan")
    if res.solution_status.name in ("optimal", "feasible"):
        res.solution_loader.load_vars()
        objective = float(pyo.value(next(model.component_data_objects(pyo.Objective, active=True))))
        status = SolutionStatus.OPTIMAL if term is T.OPTIMAL else SolutionStatus.FEASIBLE
    return SolveResult(
        termination=term,
        solution_status=status,
        objective=objective,
        solve_time=elapsed,
        solver=f"pyomo-{solver}",
        raw_status=raw,
    )
