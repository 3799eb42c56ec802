"""The one rule for a decomposition strategy's subproblem status (AID, block SMO).

A subproblem solve goes through a backend's status map (:func:`solvers.highs_backend.
highs_termination`, :func:`solvers.clarabel_backend.clarabel_termination`); its termination
is then one of three things:

* OPTIMAL: the strategy continues;
* the user's own stop (TIME_LIMIT from the time the strategy passed down, or INTERRUPTED by
  Ctrl-C): the strategy ends with that termination and its best point so far;
* anything else: :class:`solvers.errors.SubproblemError`, naming the strategy, the
  subsolver, its status and the fix.
"""

from __future__ import annotations

from solvers.errors import SubproblemError
from solvers.result import TerminationCondition

USER_STOPS = frozenset({TerminationCondition.TIME_LIMIT, TerminationCondition.INTERRUPTED})
"""Terminations of a subproblem that are the user's limit, not a failure of the subsolver."""

GENERIC_FIX = "solve with strategy='full', or choose another subsolver"


def subproblem_error(
    termination: TerminationCondition,
    raw_status: str,
    *,
    strategy: str,
    subsolver: str,
    what: str = "a subproblem",
    fix: str = "",
) -> SubproblemError:
    """The SubproblemError of ``subsolver`` ending ``what`` (e.g. "the aggregated LP of
    iteration 3") of ``strategy`` with ``raw_status`` (mapped to ``termination``); ``fix``
    is a strategy-specific hint put before :data:`GENERIC_FIX`."""
    hint = f"{fix}; or {GENERIC_FIX}" if fix else GENERIC_FIX
    message = (
        f"strategy {strategy!r}: {subsolver} ended {what} with status {raw_status} "
        f"({termination.value}), not optimal, so the strategy cannot continue; {hint}."
    )
    return SubproblemError(message, strategy=strategy, solver=subsolver, raw_status=raw_status,
                           termination=termination.value)


def check_subproblem(
    termination: TerminationCondition,
    raw_status: str,
    *,
    allow: frozenset[TerminationCondition] = frozenset(),
    **context: str,
) -> None:
    """Return when ``termination`` is OPTIMAL or in ``allow`` (e.g. :data:`USER_STOPS`), else
    raise the :func:`subproblem_error` of the status and ``context`` (its keyword arguments:
    ``strategy``, ``subsolver``, ``what``, ``fix``)."""
    if termination is TerminationCondition.OPTIMAL or termination in allow:
        return
    raise subproblem_error(termination, raw_status, **context)
