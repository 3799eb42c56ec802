"""The AID certificate shared by LAD and the SVM: sign purity *and* a gap within tolerance.

Sign-pure clusters prove, in exact arithmetic, that the aggregated solution is optimal for the
full problem (E^t equals the aggregated optimum, see :mod:`solvers.aid.lad` and
:mod:`solvers.aid.svm`; for LAD at every quantile tau, since the check loss is linear on each
sign of the residual). In floating point the proof is only as good as the aggregated solve,
so the run is CERTIFIED only when, in addition, ``(E_best - F) / scale`` lies within
:data:`solvers.result.CERTIFICATE_TOL` (F a proven lower bound, ``scale`` the problem's natural
scale); a pure run with a larger gap was solved inaccurately and is a NUMERICAL_ERROR.
"""

from __future__ import annotations

from collections.abc import Callable

from solvers.result import (
    CERTIFICATE_TOL,
    TerminationCondition,
    gap_within,
    relative_gap,
    roundoff_tol,
)


def pure_verdict(
    E_best: float, F: float, scale: float, it: int, what: str, diagnosis: Callable[[], str]
) -> tuple[TerminationCondition, str | None]:
    """CERTIFIED (and no message) when the gap confirms sign purity, else NUMERICAL_ERROR with
    a message naming the gap and ``diagnosis()`` (what is badly scaled)."""
    gap = relative_gap(E_best, F, scale)
    if gap_within(gap, CERTIFICATE_TOL, roundoff_tol(E_best, F, scale)):
        return TerminationCondition.CERTIFIED, None
    shown = "unknown" if gap is None else f"{gap:.1e}"
    return TerminationCondition.NUMERICAL_ERROR, (
        f"sign-pure clusters at iteration {it}, but the relative gap (E - F) / scale = {shown} "
        f"exceeds {CERTIFICATE_TOL:.0e}: the aggregated {what} was solved inaccurately; "
        f"{diagnosis()}"
    )

