"""ECOS (interior point for second-order and exponential cones), always through CVXPY.

LP/QP models are lowered to CVXPY by :func:`solvers.cvxpy_lowering.qp_to_cvxpy`; CVXPY's status
words map through :data:`solvers.cvxpy_lowering.STATUS_MAP`. ECOS is an optional extra
(``pip install optmodels[ecos]``).

ECOS has no time limit option (only ``max_iters``), so ``time_limit`` is refused with a
ValueError rather than ignored: use ``max_iter`` to bound an ECOS run, or a backend with a time
limit (HiGHS, Clarabel).
"""

from __future__ import annotations

from typing import Any, ClassVar

from solvers.backend import BackendOutput, module_available
from solvers.qp import QPData
from solvers.result import TerminationCondition as T


class EcosBackend:
    """ECOS through CVXPY: LP, QP (as second-order cones) and exponential cones."""

    NAME: ClassVar[str] = "ecos"
    SUPPORTS: ClassVar[frozenset[str]] = frozenset({"lp", "qp", "exp"})
    CVXPY_NAME: ClassVar[str] = "ECOS"
    QP_TOLERANCES: ClassVar[dict[str, float]] = {"abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10}

    @staticmethod
    def available() -> bool:
        return module_available("ecos")

    @staticmethod
    def version() -> str:
        import ecos

        return str(getattr(ecos, "__version__", ""))

    def solve_qp(
        self,
        qp: QPData,
        *,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> BackendOutput:
        from solvers.cvxpy_lowering import solve_qp_via_cvxpy

        refuse_time_limit(time_limit)
        # ECOS's default tolerances (1e-8) leave the equality duals of a QP off by ~1e-5, which
        # the KKT check rightly rejects; these tighter ones pass it.
        # When ECOS cannot reach them it fails outright; it is then run once more at its own
        # defaults and the KKT check decides.
        out = None
        for tolerances in (self.QP_TOLERANCES, {}):
            out = solve_qp_via_cvxpy(
                qp,
                self.CVXPY_NAME,
                self.NAME,
                self.version(),
                time_limit=time_limit,
                max_iter=max_iter,
                verbose=verbose,
                options={**tolerances, **(options or {})},
            )
            if out.x is not None or options:
                break
        return out

    def solve_cvxpy(self, problem: Any, **kw: Any) -> tuple[T, str, float, int]:
        from solvers.cvxpy_lowering import run_cvxpy

        refuse_time_limit(kw.get("time_limit"))
        return run_cvxpy(problem, self.CVXPY_NAME, **kw)


def refuse_time_limit(time_limit: float | None) -> None:
    """ValueError for a ``time_limit``: ECOS has no such option and ignoring it would let a run
    go on past the limit the caller asked for."""
    if time_limit is not None:
        raise ValueError(
            f"time_limit={time_limit!r}: ECOS has no time limit option. Bound the run with "
            "max_iter instead, leave time_limit out, or use solver='clarabel' (or 'highs'), "
            "which honour time_limit."
        )
