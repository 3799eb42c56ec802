"""The toolkit's exception family (after ``cvxpy/error.py`` and Pyomo's NoOptimalSolutionError).

Bad input raises :class:`ValueError` (or :class:`DataError`, a subclass) before any model is
built; a solver that does not reach a verified optimum yields a result whose
``require_optimal()`` raises one of the :class:`SolveError` subclasses below.
"""

from __future__ import annotations


class DataError(ValueError):
    """Input data or parameters are invalid; the message names the argument and the fix."""


class SolveError(RuntimeError):
    """A solve did not end at a verified optimum.

    Carries ``solver``, ``raw_status`` (the solver's own words), ``termination`` and whether
    primal values were available.
    """

    def __init__(
        self,
        message: str,
        *,
        solver: str = "",
        raw_status: str = "",
        termination: str = "",
        primal_available: bool = False,
        dual_available: bool = False,
    ) -> None:
        super().__init__(message)
        self.solver = solver
        self.raw_status = raw_status
        self.termination = termination
        self.primal_available = primal_available
        self.dual_available = dual_available


class InfeasibleError(SolveError):
    """The model has no feasible point."""


class UnboundedError(SolveError):
    """The objective is unbounded."""


class LimitReachedError(SolveError):
    """An iteration, time or gap limit stopped the run before optimality."""


class NumericalError(SolveError):
    """The solver failed numerically, or its 'optimal' did not pass the toolkit's check."""


class SubproblemError(SolveError):
    """A subproblem solve inside a decomposition strategy (AID, block SMO) failed.

    The subsolver (HiGHS, Clarabel, the block interior point) ended a subproblem with a status
    other than optimal, so the strategy cannot continue from a point it trusts. Carries
    ``strategy``, ``subsolver`` (as ``solver``), ``raw_status`` (the subsolver's own words) and
    ``termination``. What to do: solve the problem with ``strategy='full'``, or choose another
    subsolver (``subsolver=`` of AID-SVM, ``solver=`` of block SMO); rescaling the data nearer
    1 often helps too. :func:`optmodels.strategies.run_strategy` turns it into a
    ``numerical_error`` result whose ``raw_status`` is this message.
    """

    def __init__(self, message: str, *, strategy: str = "", **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.strategy = strategy


class ExportError(ValueError):
    """A model cannot be written in the requested format; the message says which format can."""
