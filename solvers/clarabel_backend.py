"""Clarabel (interior point for LP, QP and cones): LP/QP through its own API, conic through CVXPY.

Clarabel solves  min 1/2 x'Px + q'x  s.t.  A x + s = b,  s in K, with duals z in K*, and the
stationarity  P x + q + A' z = 0.  Rows ``a'x <= hi`` become (a, hi) in the nonnegative cone
(y = -z), rows ``a'x >= lo`` become (-a, -lo) (y = +z), equalities the zero cone (y = -z).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.backend import BackendOutput, module_available
from solvers.qp import QPData
from solvers.result import TerminationCondition as T

# Native statuses (clarabel.SolverStatus names) -> termination, in this one place.
STATUS_MAP = {
    "Solved": T.OPTIMAL,
    "AlmostSolved": T.NUMERICAL_ERROR,
    "PrimalInfeasible": T.INFEASIBLE,
    "AlmostPrimalInfeasible": T.INFEASIBLE,
    "DualInfeasible": T.UNBOUNDED,
    "AlmostDualInfeasible": T.UNBOUNDED,
    "MaxIterations": T.ITERATION_LIMIT,
    "MaxTime": T.TIME_LIMIT,
    "NumericalError": T.NUMERICAL_ERROR,
    "InsufficientProgress": T.NUMERICAL_ERROR,
    "CallbackTerminated": T.ERROR,
    "Unsolved": T.ERROR,
}


CONSTRAINED_SETTINGS = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
"""Clarabel's stopping tolerances for the constrained full solves (SVM, ridge), tighter than
its defaults (1e-8). Where the optimum is unique the certificate needs the *solution* within
1e-3 of its norm, i.e. an absolute gap ``G <= 1/2 mu (1e-3 ||x||)^2``: 1.6e-11 of the
objective on the FairSVM of notebook 5 (20,000 rows). At its defaults Clarabel stopped there
with a gap of 1.1e-9 (the covariance row 1.4e-9 past its side), the solution proven within
5.6e-3; at these it took 16 iterations instead of 14 and reached a gap of 1.2e-13, the
solution within 6.1e-5. A bounded ridge with two bounds and a row active (tests/
test_constraints_full.py) was likewise proven only within 1.2e-3 at the defaults. The gap is
the toolkit's, computed from the returned arrays; these settings only decide when Clarabel
stops."""


def constrained_option_sets(solver: str, options: dict[str, Any] | None
                            ) -> list[dict[str, Any] | None]:
    """The option sets a constrained full solve tries with ``solver``, in order. For Clarabel:
    :data:`CONSTRAINED_SETTINGS` under the user's ``options`` (a tolerance the user set wins),
    then the user's options alone (None: Clarabel's defaults), the run before them (an answer
    Clarabel calls AlmostSolved at the tight tolerances is not trusted); only the first when
    they coincide. Any other backend: the user's options."""
    if solver.lower() != "clarabel":
        return [options]
    given = dict(options or {})
    tight = {**CONSTRAINED_SETTINGS, **given}
    return [tight] if tight == given else [tight, options]


def clarabel_termination(solution: Any) -> tuple[T, str]:
    """``(termination, raw status name)`` of a ``clarabel.DefaultSolution``, through
    :data:`STATUS_MAP` (an unlisted status is ERROR): the one map of Clarabel's status, for
    the monolithic solve and every subproblem solve."""
    raw = str(solution.status).split(".")[-1]
    return STATUS_MAP.get(raw, T.ERROR), raw


class ClarabelBackend:
    """Clarabel: LP and QP natively, exponential-cone models through CVXPY."""

    NAME: ClassVar[str] = "clarabel"
    SUPPORTS: ClassVar[frozenset[str]] = frozenset({"lp", "qp", "exp"})
    CVXPY_NAME: ClassVar[str] = "CLARABEL"

    @staticmethod
    def available() -> bool:
        return module_available("clarabel")

    @staticmethod
    def version() -> str:
        import clarabel

        return str(getattr(clarabel, "__version__", "") or clarabel.buildinfo().get("version", ""))

    def solve_qp(
        self,
        qp: QPData,
        *,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> BackendOutput:
        import clarabel

        A, b, sign, n_eq, row_of = _stack(qp)
        P = sp.csc_matrix(sp.triu(qp.P)) if not qp.is_lp else sp.csc_matrix((qp.n_cols, qp.n_cols))
        cones = []
        if n_eq:
            cones.append(clarabel.ZeroConeT(n_eq))
        if A.shape[0] - n_eq:
            cones.append(clarabel.NonnegativeConeT(A.shape[0] - n_eq))
        settings = clarabel.DefaultSettings()
        settings.verbose = bool(verbose)
        if max_iter is not None:
            settings.max_iter = int(max_iter)
        if time_limit is not None:
            settings.time_limit = float(time_limit)
        for key, value in (options or {}).items():
            if not hasattr(settings, key):
                raise ValueError(
                    f"Clarabel has no setting {key!r}; see clarabel.DefaultSettings()."
                )
            setattr(settings, key, value)
        t0 = time.perf_counter()
        sol = clarabel.DefaultSolver(P, qp.c, sp.csc_matrix(A), b, cones, settings).solve()
        elapsed = time.perf_counter() - t0
        term, raw = clarabel_termination(sol)
        x = np.asarray(sol.x, dtype=float)
        z = np.asarray(sol.z, dtype=float)
        y = np.zeros(qp.n_rows)
        keep = row_of >= 0
        np.add.at(y, row_of[keep], sign[keep] * z[keep])
        extra: dict[str, Any] = {}
        if term is T.INFEASIBLE:
            extra["farkas"] = y  # z is Clarabel's infeasibility certificate
        elif term is T.UNBOUNDED:
            extra["ray"] = x  # and x its unboundedness direction
        return BackendOutput(
            term, raw, x, y, int(sol.iterations), elapsed, self.NAME, self.version(), extra
        )

    def solve_cvxpy(self, problem: Any, **kw: Any) -> tuple[T, str, float, int]:
        from solvers.cvxpy_lowering import run_cvxpy

        return run_cvxpy(problem, self.CVXPY_NAME, **kw)


def _stack(qp: QPData) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, int, np.ndarray]:
    """Rows of ``A x + s = b`` (equalities first), the sign mapping z to y, and each row's origin
    (-1 for a bound)."""
    n = qp.n_cols
    A_rows = sp.csr_matrix(qp.A)
    eye = sp.identity(n, format="csr")
    eq = np.isfinite(qp.row_lo) & (qp.row_lo == qp.row_hi)
    parts = [
        (A_rows[eq], qp.row_lo[eq], -1.0, np.flatnonzero(eq)),
        (
            A_rows[~eq & np.isfinite(qp.row_hi)],
            qp.row_hi[~eq & np.isfinite(qp.row_hi)],
            -1.0,
            np.flatnonzero(~eq & np.isfinite(qp.row_hi)),
        ),
        (
            -A_rows[~eq & np.isfinite(qp.row_lo)],
            -qp.row_lo[~eq & np.isfinite(qp.row_lo)],
            1.0,
            np.flatnonzero(~eq & np.isfinite(qp.row_lo)),
        ),
        (
            eye[np.isfinite(qp.col_hi)],
            qp.col_hi[np.isfinite(qp.col_hi)],
            0.0,
            np.full(int(np.isfinite(qp.col_hi).sum()), -1),
        ),
        (
            -eye[np.isfinite(qp.col_lo)],
            -qp.col_lo[np.isfinite(qp.col_lo)],
            0.0,
            np.full(int(np.isfinite(qp.col_lo).sum()), -1),
        ),
    ]
    A = sp.vstack([p[0] for p in parts], format="csr")
    b = np.concatenate([p[1] for p in parts])
    sign = np.concatenate([np.full(p[1].shape[0], p[2]) for p in parts])
    row_of = np.concatenate([p[3] for p in parts]).astype(int)
    return A, b, sign, int(eq.sum()), row_of
