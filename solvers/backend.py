"""One small interface over the monolithic solvers, and the verified solve built on it.

A backend is a small class (one file each: ``highs_backend``, ``clarabel_backend``,
``ecos_backend``) with

- ``NAME`` and ``SUPPORTS`` (a subset of {"lp", "qp", "exp"}: what it can solve),
- ``STATUS_MAP``: native statuses mapped to :class:`TerminationCondition`, in one place,
- ``available()`` and ``solve_qp(qp, ...)`` (and ``solve_cvxpy`` where "exp" is supported),
  returning a :class:`BackendOutput` whose row duals follow the convention of :mod:`solvers.qp`.

:func:`solve_qp` runs a backend and *verifies* its claim with :func:`solvers.qp.check_kkt`
before reporting OPTIMAL (HiGHS reports "optimal" on NaN input and on ill-conditioned QPs).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, ClassVar, Protocol

import numpy as np

from solvers.qp import QPData, check_kkt
from solvers.result import SolutionStatus, SolveResult, TerminationCondition, relative_gap

FEAS_TOL = 1e-6
"""Default primal residual (relative to 1 + |bound|) accepted as feasible."""
GAP_TOL = 1e-6
"""Default relative primal-dual gap accepted as optimal."""


@dataclasses.dataclass
class BackendOutput:
    """What a backend returns before verification."""

    termination: TerminationCondition
    raw_status: str
    x: np.ndarray | None = None
    y: np.ndarray | None = None
    iterations: int = 0
    solve_time: float = 0.0
    solver: str = ""
    version: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


class Backend(Protocol):
    NAME: ClassVar[str]
    SUPPORTS: ClassVar[frozenset[str]]

    @staticmethod
    def available() -> bool: ...

    def solve_qp(
        self,
        qp: QPData,
        *,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> BackendOutput: ...


def module_available(name: str) -> bool:
    """True when the solver's Python package ``name`` can be imported."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


def backends() -> dict[str, type]:
    """The registry of backends, by name (the conformance suite runs every one)."""
    from solvers.clarabel_backend import ClarabelBackend
    from solvers.ecos_backend import EcosBackend
    from solvers.highs_backend import HighsBackend

    return {b.NAME: b for b in (HighsBackend, ClarabelBackend, EcosBackend)}


def get_backend(name: str, kind: str = "qp") -> Backend:
    """Instantiate the backend ``name``; explain the choices if it is unknown or unfit."""
    registry = backends()
    key = name.lower()
    if key not in registry:
        raise ValueError(f"Unknown solver {name!r}; choose one of {', '.join(sorted(registry))}.")
    cls = registry[key]
    if kind not in cls.SUPPORTS:
        fit = [n for n, b in registry.items() if kind in b.SUPPORTS]
        raise ValueError(
            f"Solver {name!r} cannot solve {kind} models; use one of {', '.join(fit)}."
        )
    if not cls.available():
        raise ValueError(
            f"Solver {name!r} is not installed; `pip install optmodels[{key}]` or pick another."
        )
    return cls()


def solve_qp(
    qp: QPData,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    max_iter: int | None = None,
    feas_tol: float = FEAS_TOL,
    gap_tol: float = GAP_TOL,
    verbose: bool = False,
    options: dict[str, Any] | None = None,
) -> SolveResult:
    """Solve an LP/QP with a backend and verify the answer before calling it optimal.

    The result's ``objective`` is f(x) computed here, ``bound`` the dual objective g(y) from the
    returned duals, and ``gap`` their relative difference. A solver's "optimal" that fails
    ``primal residual <= feas_tol`` and ``gap <= gap_tol * max(1, |f|)`` becomes NUMERICAL_ERROR.
    """
    qp.assert_finite()
    backend = get_backend(solver, "lp" if qp.is_lp else "qp")
    t0 = time.perf_counter()
    out = backend.solve_qp(
        qp, time_limit=time_limit, max_iter=max_iter, verbose=verbose, options=options
    )
    wall = time.perf_counter() - t0
    return verify(qp, out, feas_tol=feas_tol, gap_tol=gap_tol, wall_time=wall)


def verify(
    qp: QPData,
    out: BackendOutput,
    *,
    feas_tol: float = FEAS_TOL,
    gap_tol: float = GAP_TOL,
    wall_time: float | None = None,
) -> SolveResult:
    """Turn a backend's claim into a :class:`SolveResult`, checked by :func:`check_kkt`."""
    res = SolveResult(
        termination=out.termination,
        solution_status=SolutionStatus.NO_SOLUTION,
        x=out.x,
        iterations=out.iterations,
        solve_time=out.solve_time if wall_time is None else wall_time,
        solver=out.solver,
        solver_version=out.version,
        raw_status=out.raw_status,
        extra=dict(out.extra),
    )
    if out.x is None or not np.all(np.isfinite(out.x)):
        res.x = None
        if res.termination is TerminationCondition.OPTIMAL:
            res.termination = TerminationCondition.NUMERICAL_ERROR
        return res
    report = check_kkt(qp, out.x, out.y)
    res.objective = report.primal_objective
    dual_ok = np.isfinite(report.dual_objective) and report.dual_residual <= feas_tol
    res.bound = report.dual_objective if dual_ok else None
    res.gap = relative_gap(report.primal_objective, res.bound)
    res.extra.update(
        primal_residual=report.primal_residual, dual_residual=report.dual_residual, duals=out.y
    )
    feasible = report.primal_residual <= feas_tol
    res.solution_status = SolutionStatus.FEASIBLE if feasible else SolutionStatus.INFEASIBLE
    if res.termination is TerminationCondition.OPTIMAL:
        if report.ok(feas_tol, gap_tol):
            res.solution_status = SolutionStatus.OPTIMAL
        else:
            res.termination = TerminationCondition.NUMERICAL_ERROR
            res.raw_status += (
                f" (rejected by the KKT check: primal residual "
                f"{report.primal_residual:.1e}, dual residual "
                f"{report.dual_residual:.1e}, gap {report.gap:.1e})"
            )
    return res
