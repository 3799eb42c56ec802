"""QPData as a Pyomo model a user can read, extend and solve, and Pyomo solves as results.

:func:`to_pyomo` gives one indexed ``Var`` per column block (``m.beta[j]``, ``m.e_plus[i]``) and
one indexed ``Constraint`` per row block, so a user can add a constraint by name
(``m.extra = pyo.Constraint(expr=m.beta[0] >= 0)``) and call :func:`solve_pyomo`.
:func:`from_pyomo` lowers any Pyomo LP/QP back to :class:`~solvers.qp.QPData`, so
:func:`solve_pyomo` solves through the same verified backends as everything else.
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


def from_pyomo(model: Any) -> tuple[QPData, list[Any], list[Any]]:
    """The LP/QP a Pyomo model states, in :class:`QPData` form, with its variables and
    constraints in column / row order.

    Every active constraint and the one active objective must be linear or quadratic in the
    objective (Pyomo's standard representation says which); a maximisation is negated.
    Fixed variables keep their bounds (lo = hi). Raises ValueError for anything else.
    """
    import pyomo.environ as pyo
    from pyomo.repn import generate_standard_repn

    variables = list(model.component_data_objects(pyo.Var, descend_into=True))
    index = {id(v): j for j, v in enumerate(variables)}
    objectives = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objectives) != 1:
        raise ValueError(
            f"The model has {len(objectives)} active objectives; activate exactly one."
        )
    obj = objectives[0]
    repn = generate_standard_repn(obj.expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise ValueError("The objective is not linear or quadratic; solve_pyomo handles LP/QP.")
    sign = -1.0 if obj.sense == pyo.maximize else 1.0
    n = len(variables)
    c = np.zeros(n)
    for v, a in zip(repn.linear_vars, repn.linear_coefs, strict=True):
        c[index[id(v)]] += sign * a
    pi, pj, pv = [], [], []
    for (u, w), a in zip(repn.quadratic_vars, repn.quadratic_coefs, strict=True):
        i, j = index[id(u)], index[id(w)]
        # a u w  = 1/2 x'Px with P_ij = P_ji = a (i != j) or P_ii = 2a.
        pi += [i, j]
        pj += [j, i]
        pv += [sign * a, sign * a]
    P = sp.csr_matrix((pv, (pi, pj)), shape=(n, n)) if pv else None
    rows, cols, vals, lo, hi, cons = [], [], [], [], [], []
    for con in model.component_data_objects(pyo.Constraint, active=True):
        r = generate_standard_repn(con.body, compute_values=True)
        if not r.is_linear():
            raise ValueError(f"Constraint {con.name!r} is not linear; solve_pyomo handles LP/QP.")
        k = len(cons)
        for v, a in zip(r.linear_vars, r.linear_coefs, strict=True):
            rows.append(k)
            cols.append(index[id(v)])
            vals.append(a)
        const = float(r.constant)
        lo.append(-np.inf if con.lower is None else float(pyo.value(con.lower)) - const)
        hi.append(np.inf if con.upper is None else float(pyo.value(con.upper)) - const)
        cons.append(con)
    A = sp.csr_matrix((vals, (rows, cols)), shape=(len(cons), n))
    col_lo = np.array([-np.inf if v.lb is None else v.lb for v in variables], dtype=float)
    col_hi = np.array([np.inf if v.ub is None else v.ub for v in variables], dtype=float)
    fixed = np.array([v.fixed for v in variables], dtype=bool)
    if fixed.any():
        values = np.array([v.value if v.fixed else 0.0 for v in variables], dtype=float)
        col_lo[fixed] = col_hi[fixed] = values[fixed]
    qp = QPData(
        c=c,
        A=A,
        row_lo=np.array(lo),
        row_hi=np.array(hi),
        col_lo=col_lo,
        col_hi=col_hi,
        P=P,
        offset=sign * float(repn.constant),
        name=str(model.name),
    )
    return qp, variables, cons


def solve_pyomo(
    model: Any,
    solver: str = "highs",
    *,
    strategy: str = "full",
    time_limit: float | None = None,
    verbose: bool = False,
    options: dict[str, Any] | None = None,
) -> SolveResult:
    """Solve a (user-extended) Pyomo LP/QP through the toolkit's verified backends.

    ``strategy`` other than "full" (e.g. "aid") runs a decomposition on a model built by a
    problem's ``pyomo_model()`` and extended with constraints on its coefficients: the
    problem's ``constrained_by(model)`` turns them into ``constraints=`` / ``bounds=`` (a
    constraint on a per-row variable is refused with the reason), and the result is that
    problem's ``solve(strategy, **(options or {}))``.

    The model is lowered to :class:`QPData` (:func:`from_pyomo`) and solved by
    :func:`solvers.backend.solve_qp` (equilibrated, KKT-checked, infeasible / unbounded claims
    checked against the backend's certificate), so the Pyomo route means what every other route
    means. The primal values are loaded into the model's variables; the result carries ``x``
    (column order of ``extra['variables']``), the objective in the model's own sense, and
    ``extra['duals']``: the row multipliers by constraint name (convention of
    :mod:`solvers.qp`, for a minimisation).
    """
    import pyomo.environ as pyo

    from solvers.backend import solve_qp

    if strategy != "full":
        origin = getattr(model, "_optmodels_origin", None)
        if origin is None:
            raise ValueError(f"strategy={strategy!r} needs a model built by a problem's "
                             "pyomo_model() (it knows the data and the coefficients); solve "
                             "this model with strategy='full'.")
        return origin[0].constrained_by(model).solve(strategy, **(options or {}))
    t0 = time.perf_counter()
    qp, variables, cons = from_pyomo(model)
    build = time.perf_counter() - t0
    res = solve_qp(qp, solver, time_limit=time_limit, verbose=verbose, options=options)
    res.build_time = build
    names = [v.name for v in variables]
    res.extra["variables"] = names
    y = res.extra.get("duals")
    res.extra["duals"] = (
        None if y is None else {c.name: float(v) for c, v in zip(cons, y, strict=True)}
    )
    obj = next(model.component_data_objects(pyo.Objective, active=True))
    if obj.sense == pyo.maximize:
        res.objective = -res.objective
        res.bound = None if res.bound is None else -res.bound
        res.extra["sense"] = "maximize"
    if res.x is not None and res.solution_status.rank() >= SolutionStatus.FEASIBLE.rank():
        for v, value in zip(variables, res.x, strict=True):
            if not v.fixed:
                v.set_value(float(value), skip_validation=True)
    return res
