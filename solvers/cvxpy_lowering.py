"""Running CVXPY problems (the exponential-cone KLR dual, and LP/QP lowered from QPData).

CVXPY's own status words map to :class:`TerminationCondition` here, in one place, for every
backend that goes through CVXPY (Clarabel and ECOS).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.backend import BackendOutput
from solvers.qp import QPData
from solvers.result import TerminationCondition as T

STATUS_MAP = {
    "optimal": T.OPTIMAL,
    "optimal_inaccurate": T.OPTIMAL,  # a claim only: kept if the toolkit's own check passes
    "infeasible": T.INFEASIBLE,
    "infeasible_inaccurate": T.INFEASIBLE,
    "unbounded": T.UNBOUNDED,
    "unbounded_inaccurate": T.UNBOUNDED,
    "infeasible_or_unbounded": T.INFEASIBLE_OR_UNBOUNDED,
    "user_limit": T.ITERATION_LIMIT,
    "solver_error": T.NUMERICAL_ERROR,
}

# Per-solver names of the iteration / time options in CVXPY's solve() call.
LIMIT_OPTIONS = {
    "CLARABEL": {"max_iter": "max_iter", "time_limit": "time_limit"},
    "ECOS": {"max_iter": "max_iters", "time_limit": None},
}


def run_cvxpy(
    problem: Any,
    solver: str,
    *,
    time_limit: float | None = None,
    max_iter: int | None = None,
    verbose: bool = False,
    options: dict[str, Any] | None = None,
) -> tuple[T, str, float, int]:
    """Solve a ``cvxpy.Problem``; return (termination, raw status, solve seconds, iterations)."""
    import cvxpy as cp

    kwargs: dict[str, Any] = dict(options or {})
    names = LIMIT_OPTIONS[solver]
    if max_iter is not None:
        kwargs[names["max_iter"]] = int(max_iter)
    if time_limit is not None and names["time_limit"]:
        kwargs[names["time_limit"]] = float(time_limit)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver, verbose=verbose, **kwargs)
        raw = str(problem.status)
    except cp.error.SolverError as exc:
        raw = f"solver_error: {exc}"
    elapsed = time.perf_counter() - t0
    term = STATUS_MAP.get(raw.split(":")[0], T.ERROR)
    stats = problem.solver_stats
    iters = int(stats.num_iters) if stats is not None and stats.num_iters is not None else 0
    if term is T.NUMERICAL_ERROR and max_iter is not None and iters >= max_iter:
        term = T.ITERATION_LIMIT
    return term, raw, elapsed, iters


def qp_to_cvxpy(qp: QPData) -> tuple[Any, Any, list[tuple[Any, np.ndarray, float]]]:
    """Lower ``qp`` to a CVXPY problem; return it, the variable and (constraint, rows, sign)
    triples that map each constraint's dual back to the row multipliers ``y``."""
    import cvxpy as cp

    x = cp.Variable(qp.n_cols)
    objective = qp.c @ x + qp.offset
    if not qp.is_lp:
        objective = objective + 0.5 * cp.sum_squares(psd_factor(qp.P) @ x)
    cons: list[tuple[Any, np.ndarray, float]] = []
    A_rows = sp.csr_matrix(qp.A)
    eq = np.isfinite(qp.row_lo) & (qp.row_lo == qp.row_hi)
    lo = np.isfinite(qp.row_lo) & ~eq
    hi = np.isfinite(qp.row_hi) & ~eq
    for mask, make, sign in (
        (eq, lambda A, r: A @ x == qp.row_lo[r], -1.0),
        (lo, lambda A, r: A @ x >= qp.row_lo[r], 1.0),
        (hi, lambda A, r: A @ x <= qp.row_hi[r], -1.0),
    ):
        rows = np.flatnonzero(mask)
        if rows.size:
            cons.append((make(A_rows[rows], rows), rows, sign))
    bounds = []
    if np.isfinite(qp.col_lo).any():
        idx = np.flatnonzero(np.isfinite(qp.col_lo))
        bounds.append(x[idx] >= qp.col_lo[idx])
    if np.isfinite(qp.col_hi).any():
        idx = np.flatnonzero(np.isfinite(qp.col_hi))
        bounds.append(x[idx] <= qp.col_hi[idx])
    problem = cp.Problem(cp.Minimize(objective), [c for c, _, _ in cons] + bounds)
    return problem, x, cons


def psd_factor(P: sp.spmatrix, rel_tol: float = 1e-12) -> sp.spmatrix | np.ndarray:
    """F with F'F = P (P symmetric PSD): sqrt of the diagonal when P is diagonal, else the
    eigen-factor keeping eigenvalues above ``rel_tol`` times the largest (round-off below it)."""
    P = sp.csr_matrix(P)
    off = P - sp.diags(P.diagonal())
    if off.count_nonzero() == 0:
        d = P.diagonal()
        keep = np.flatnonzero(d > 0)
        return sp.csr_matrix(
            (np.sqrt(d[keep]), (np.arange(keep.size), keep)), shape=(keep.size, P.shape[0])
        )
    vals, vecs = np.linalg.eigh(P.toarray())
    keep = vals > rel_tol * max(vals.max(), 0.0)
    return (vecs[:, keep] * np.sqrt(vals[keep])).T


def solve_qp_via_cvxpy(
    qp: QPData, solver: str, name: str, version: str, **kw: Any
) -> BackendOutput:
    """Solve ``qp`` through CVXPY with ``solver``; duals converted to :mod:`solvers.qp`'s sign."""
    problem, x, cons = qp_to_cvxpy(qp)
    term, raw, elapsed, iters = run_cvxpy(problem, solver, **kw)
    xv = None if x.value is None else np.asarray(x.value, dtype=float)
    y = None
    if xv is not None and all(c.dual_value is not None for c, _, _ in cons):
        y = np.zeros(qp.n_rows)
        for con, rows, sign in cons:
            y[rows] += sign * np.asarray(con.dual_value, dtype=float).ravel()
    return BackendOutput(term, raw, xv, y, iters, elapsed, name, version)
