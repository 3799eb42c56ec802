"""One small interface over the monolithic solvers, and the verified solve built on it.

A backend is a small class (one file each: ``highs_backend``, ``clarabel_backend``,
``ecos_backend``) with

- ``NAME`` and ``SUPPORTS`` (a subset of {"lp", "qp", "exp"}: what it can solve),
- ``STATUS_MAP``: native statuses mapped to :class:`TerminationCondition`, in one place,
- ``available()`` and ``solve_qp(qp, ...)`` (and ``solve_cvxpy`` where "exp" is supported),
  returning a :class:`BackendOutput` whose row duals follow the convention of :mod:`solvers.qp`.

:func:`solve_qp` equilibrates the model (:mod:`solvers.scaling`), runs a backend, maps the
answer back and *verifies* the claim on the original model with :func:`solvers.qp.check_kkt`
before reporting OPTIMAL (HiGHS reports "optimal" on NaN input and on ill-conditioned QPs).
A training problem is always feasible and bounded; its builder says so
(``feasible_bounded=True``), and then a solver's "infeasible" / "unbounded" is treated as the
numerical failure it is: retried once with another backend, then reported as NUMERICAL_ERROR.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, ClassVar, Protocol

import numpy as np

from solvers.qp import QPData, check_kkt, farkas_ok, ray_ok
from solvers.result import (
    CERTIFICATE_TOL,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    relative_gap,
)
from solvers.scaling import equilibrate

FEAS_TOL = 1e-6
"""Default primal residual (each row relative to its own scale, see :class:`KKTReport`)."""
GAP_TOL = CERTIFICATE_TOL
"""Default relative primal-dual gap (relative to the magnitude of the objective's terms)."""

FALLBACK = {"highs": "clarabel", "clarabel": "highs", "ecos": "clarabel"}
"""The backend tried next when a solver calls an always-feasible, bounded model infeasible or
unbounded."""

_IMPOSSIBLE = (
    TerminationCondition.INFEASIBLE,
    TerminationCondition.UNBOUNDED,
    TerminationCondition.INFEASIBLE_OR_UNBOUNDED,
)


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
    scale: bool = True,
    feasible_bounded: bool = False,
    scale_floor: float = 0.0,
) -> SolveResult:
    """Solve an LP/QP with a backend and verify the answer before calling it optimal.

    The model is equilibrated first (``scale=False`` passes it as it is). The result's
    ``objective`` is f(x) computed here on the original model, ``bound`` the dual objective g(y)
    from the returned duals, and ``gap`` their relative difference. A solver's "optimal" that
    fails ``primal residual <= feas_tol`` and ``|gap| <= gap_tol`` (both relative, see
    :class:`solvers.qp.KKTReport`) becomes NUMERICAL_ERROR. With ``feasible_bounded`` (every
    training problem of the toolkit) an infeasible / unbounded verdict is retried with the
    :data:`FALLBACK` backend and, if it persists, reported as NUMERICAL_ERROR. ``scale_floor``
    (the problem's natural scale) is a least value for the gap's scale (see
    :func:`solvers.qp.check_kkt`).
    """
    qp.assert_finite()
    kind = "lp" if qp.is_lp else "qp"
    backend = get_backend(solver, kind)
    t0 = time.perf_counter()
    scaled, scaling = equilibrate(qp) if scale else (qp, None)
    out = _run(backend, scaled, scaling, time_limit, max_iter, verbose, options)
    attempts = [f"{out.solver}: {out.raw_status}"]
    if feasible_bounded and out.termination in _IMPOSSIBLE:
        other = FALLBACK.get(solver.lower())
        if (
            other is not None
            and backends()[other].available()
            and kind in backends()[other].SUPPORTS
        ):
            out = _run(
                get_backend(other, kind), scaled, scaling, time_limit, max_iter, verbose, None
            )
            attempts.append(f"{out.solver}: {out.raw_status}")
        if out.termination in _IMPOSSIBLE:
            out.raw_status += (
                f" ({qp.name} is always feasible and bounded: the verdict "
                f"'{out.termination.value}' is a numerical failure; tried {'; '.join(attempts)})"
            )
            out.termination = TerminationCondition.NUMERICAL_ERROR
    wall = time.perf_counter() - t0
    res = verify(
        qp, out, feas_tol=feas_tol, gap_tol=gap_tol, wall_time=wall, scale_floor=scale_floor
    )
    res.extra["attempts"] = attempts
    if scaling is not None and not scaling.is_identity:
        res.extra["scaling"] = {
            "sigma": scaling.sigma,
            "col_range": (float(scaling.col.min()), float(scaling.col.max())),
            "row_range": (float(scaling.row.min()), float(scaling.row.max()))
            if scaling.row.size
            else (1.0, 1.0),
        }
    return res


def _run(
    backend: Backend,
    qp: QPData,
    scaling: Any,
    time_limit: float | None,
    max_iter: int | None,
    verbose: bool,
    options: dict[str, Any] | None,
) -> BackendOutput:
    """One backend run on the (scaled) model, with its arrays mapped back to the original."""
    out = backend.solve_qp(
        qp, time_limit=time_limit, max_iter=max_iter, verbose=verbose, options=options
    )
    if scaling is not None and not scaling.is_identity:
        out.x, out.y = scaling.unscale(out.x, out.y)
    return out


def verify(
    qp: QPData,
    out: BackendOutput,
    *,
    feas_tol: float = FEAS_TOL,
    gap_tol: float = GAP_TOL,
    wall_time: float | None = None,
    scale_floor: float = 0.0,
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
    if res.termination in _IMPOSSIBLE:
        return _check_verdict(qp, out, res)
    if out.x is None or not np.all(np.isfinite(out.x)):
        res.x = None
        if res.termination is TerminationCondition.OPTIMAL:
            res.termination = TerminationCondition.NUMERICAL_ERROR
        return res
    report = check_kkt(qp, out.x, out.y, scale_floor)
    res.objective = report.primal_objective
    dual_ok = np.isfinite(report.dual_objective) and report.dual_residual <= feas_tol
    res.bound = report.dual_objective if dual_ok else None
    res.scale = report.gap_scale
    res.certificate_tol = gap_tol
    res.gap = relative_gap(report.primal_objective, res.bound, report.gap_scale)
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
                f"{report.dual_residual:.1e}, relative gap {report.relative_gap:.1e})"
            )
    return res


def _check_verdict(qp: QPData, out: BackendOutput, res: SolveResult) -> SolveResult:
    """An infeasible / unbounded claim stands only with a certificate that passes the
    toolkit's check (:func:`solvers.qp.farkas_ok`, :func:`solvers.qp.ray_ok`); no primal
    values are kept. Without a certificate from the backend the claim is kept and marked
    unchecked; a certificate that fails makes it a NUMERICAL_ERROR."""
    res.x = None
    farkas, ray = out.extra.get("farkas"), out.extra.get("ray")
    T = TerminationCondition
    proofs = {
        T.INFEASIBLE: farkas_ok(qp, farkas),
        T.UNBOUNDED: ray_ok(qp, ray),
    }
    given = {T.INFEASIBLE: farkas is not None, T.UNBOUNDED: ray is not None}
    claimed = (
        [T.INFEASIBLE, T.UNBOUNDED]
        if res.termination is T.INFEASIBLE_OR_UNBOUNDED
        else [res.termination]
    )
    proven = [t for t in claimed if proofs[t]]
    res.extra.pop("farkas", None)
    res.extra.pop("ray", None)
    if proven:
        res.termination = proven[0]
        res.extra["certificate"] = farkas if proven[0] is T.INFEASIBLE else ray
        res.raw_status += " (certificate checked)"
    elif any(given[t] for t in claimed):
        res.termination = T.NUMERICAL_ERROR
        res.raw_status += " (the solver's certificate failed the toolkit's check)"
    else:
        res.raw_status += " (no certificate from the backend to check)"
    return res
