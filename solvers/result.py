"""Solve results: why a solver stopped, what it returned, and the numbers around it.

Two enums, as in Pyomo's ``contrib.solver`` and MathOptInterface: :class:`TerminationCondition`
says *why* the run stopped, :class:`SolutionStatus` says *what* came back. They are separate
because a run can stop at a time limit and still return a feasible point.

The toolkit never passes a solver's word on; a backend sets ``OPTIMAL`` only after its own check
(a duality gap or KKT residual computed from the returned arrays, see each backend).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import numpy as np

from solvers.errors import (
    InfeasibleError,
    LimitReachedError,
    NumericalError,
    SolveError,
    UnboundedError,
)


class TerminationCondition(str, enum.Enum):
    """Why the solver (or strategy) stopped."""

    OPTIMAL = "optimal"
    """Converged, and the toolkit's own check (gap / KKT residual) confirmed it."""
    CERTIFIED = "certified"
    """A decomposition strategy stopped with a proof of optimality (e.g. AID's sign-purity)."""
    GAP_LIMIT = "gap_limit"
    """Stopped at the user's gap tolerance; the solution is within ``gap`` of optimal."""
    ITERATION_LIMIT = "iteration_limit"
    """Hit the iteration cap; raise ``max_iter`` or loosen ``tol`` to finish."""
    TIME_LIMIT = "time_limit"
    """Hit the time limit; raise ``time_limit`` to finish."""
    INFEASIBLE = "infeasible"
    """The model has no feasible point; check bounds and constraints."""
    UNBOUNDED = "unbounded"
    """The objective is unbounded below; add regularization or bounds."""
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    """The solver could not tell which; solve the feasibility problem to find out."""
    NUMERICAL_ERROR = "numerical_error"
    """The solver reported success but the toolkit's check failed, or the solver gave up on
    numerics; rescale the data or try another solver (``--solver``)."""
    ERROR = "error"
    """The solver failed for another reason; see ``raw_status``."""


class SolutionStatus(str, enum.Enum):
    """What came back, ordered from worst to best (compare with :meth:`rank`)."""

    NO_SOLUTION = "no_solution"
    """No primal values were loaded."""
    INFEASIBLE = "infeasible"
    """Values were returned but violate the constraints beyond tolerance."""
    FEASIBLE = "feasible"
    """A feasible point, not proven optimal (a limit was hit); use it as a warm start only."""
    OPTIMAL = "optimal"
    """Feasible and verified optimal to the stated tolerance."""

    def rank(self) -> int:
        """Position in the order NO_SOLUTION < INFEASIBLE < FEASIBLE < OPTIMAL."""
        return list(SolutionStatus).index(self)


_ERROR_FOR = {
    TerminationCondition.INFEASIBLE: InfeasibleError,
    TerminationCondition.UNBOUNDED: UnboundedError,
    TerminationCondition.INFEASIBLE_OR_UNBOUNDED: InfeasibleError,
    TerminationCondition.ITERATION_LIMIT: LimitReachedError,
    TerminationCondition.TIME_LIMIT: LimitReachedError,
    TerminationCondition.GAP_LIMIT: LimitReachedError,
    TerminationCondition.NUMERICAL_ERROR: NumericalError,
    TerminationCondition.ERROR: SolveError,
}


@dataclasses.dataclass
class SolveResult:
    """The outcome of one solve, by a backend or a strategy.

    Attributes
    ----------
    termination, solution_status:
        See the enums. ``is_optimal`` is true only for OPTIMAL / CERTIFIED with an OPTIMAL solution.
    objective:
        The objective of ``design/formulations.md`` evaluated *by the toolkit* at ``x``.
    bound:
        A proven bound on the optimum (a dual objective, AID's F), or ``None``.
    gap:
        Relative gap ``(objective - bound) / max(1, |objective|)`` where a bound is known.
    x:
        The main solution vector (LAD beta, SVM w or alpha, KLR alpha, ridge x).
    extra:
        Other named arrays or values (``b`` / intercept, duals, ``history``, ...).
    """

    termination: TerminationCondition
    solution_status: SolutionStatus
    objective: float = float("nan")
    x: np.ndarray | None = None
    bound: float | None = None
    gap: float | None = None
    iterations: int = 0
    build_time: float = 0.0
    solve_time: float = 0.0
    solver: str = ""
    solver_version: str = ""
    raw_status: str = ""
    strategy: str = "full"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def is_optimal(self) -> bool:
        """True when the run ended optimal (or certified) with a verified solution."""
        return (
            self.termination in (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED)
            and self.solution_status is SolutionStatus.OPTIMAL
        )

    @property
    def time(self) -> float:
        """Build plus solve time in seconds."""
        return self.build_time + self.solve_time

    def require_optimal(self) -> SolveResult:
        """Return ``self`` if optimal, else raise the matching :class:`SolveError` subclass."""
        if self.is_optimal:
            return self
        cls = _ERROR_FOR.get(self.termination, SolveError)
        raise cls(
            f"{self.solver or self.strategy} stopped with termination={self.termination.value} "
            f"(raw status {self.raw_status!r}); the solution is not optimal.",
            solver=self.solver,
            raw_status=self.raw_status,
            termination=self.termination.value,
            primal_available=self.x is not None,
        )


def relative_gap(objective: float, bound: float | None) -> float | None:
    """``(objective - bound) / max(1, |objective|)``, or ``None`` without a bound.

    Round-off can make a valid gap slightly negative; values in (-1e-12, 0) read as 0. A
    larger negative gap is returned as it is: it means the bound is not a bound.
    """
    if bound is None or not np.isfinite(bound) or not np.isfinite(objective):
        return None
    gap = float((objective - bound) / max(1.0, abs(objective)))
    return 0.0 if -1e-12 < gap < 0.0 else gap
