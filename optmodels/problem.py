"""What every problem shares: a parameter table, validated data, strategies and export.

A problem is a plain object holding validated data and hyperparameters. It *declares* its
algebraic model (``qp()`` for the LP/QP ones, ``cvxpy_problem()`` for the conic KLR dual) and
never solves on construction. ``solve(strategy=...)`` looks the strategy up in
:mod:`optmodels.strategies`; ``"full"`` is the verified monolithic solve.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from optmodels.validation import Param, validate_params
from solvers.backend import solve_qp
from solvers.qp import QPData
from solvers.result import CERTIFICATE_TOL, SolveResult, TerminationCondition, certify


class Problem:
    """Base class; subclasses set ``NAME``, ``PARAMS`` and the model methods."""

    NAME: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, Param]] = {}

    def _set_params(self, given: dict[str, Any]) -> None:
        self.params = validate_params(type(self).__name__, self.PARAMS, given)
        for key, value in self.params.items():
            setattr(self, key, value)

    @property
    def X(self) -> np.ndarray:
        """The validated data matrix (read-only by convention)."""
        return self._X

    @property
    def n(self) -> int:
        return int(self._X.shape[0])

    @property
    def p(self) -> int:
        return int(self._X.shape[1])

    def kernel_matvec(self, v: np.ndarray, block_rows: int = 2048) -> np.ndarray:
        """K v in row blocks of ``block_rows``: never forms the n x n kernel matrix."""
        out = np.empty(self.n)
        for start in range(0, self.n, block_rows):
            stop = min(start + block_rows, self.n)
            out[start:stop] = self.kernel_(self._X[start:stop], self._X) @ v
        return out

    def pyomo_model(self, *form: str) -> Any:
        """The declared LP/QP (``self.qp(*form)``) as a Pyomo ConcreteModel with named blocks
        (e.g. ``m.beta[j]``, ``m.residual[i]``) that a user can extend and solve."""
        from solvers.pyomo_lowering import to_pyomo

        return to_pyomo(self.qp(*form))

    def natural_scale(self) -> float | None:
        """The positive number the problem's gaps are measured against (it scales with the data,
        so that certificates are invariant to rescaling); ``None`` where the problem has none."""
        return None

    def certify(
        self,
        res: SolveResult,
        *,
        tol: float = CERTIFICATE_TOL,
        failure: TerminationCondition = TerminationCondition.CONVERGED,
    ) -> SolveResult:
        """Apply :func:`solvers.result.certify` with this problem's natural scale."""
        scale = self.natural_scale()
        if scale is None:
            return res
        return certify(res, scale, tol=tol, failure=failure)

    def _solve_declared(
        self, form: tuple[str, ...], solver: str, **kwargs: Any
    ) -> tuple[QPData, SolveResult]:
        """Build ``self.qp(*form)``, timed as the build, and run the verified QP solve on it."""
        t0 = time.perf_counter()
        qp = self.qp(*form)
        build = time.perf_counter() - t0
        res = solve_qp(qp, solver, feasible_bounded=True, **kwargs)
        res.build_time = build
        return qp, res

    def solve(self, strategy: str = "full", **options: Any) -> SolveResult:
        """Solve with a strategy (``"full"`` = monolithic; see ``strategies()`` for the rest)."""
        from optmodels.strategies import run_strategy

        return run_strategy(self, strategy, **options)

    @classmethod
    def strategies(cls) -> list[str]:
        from optmodels.strategies import strategies_for

        return strategies_for(cls.NAME)

    def write(self, path: str, **kwargs: Any) -> None:
        """Write the model to ``path`` (``.mps`` or ``.lp``); see :func:`optmodels.export.write`."""
        from optmodels.export import write

        write(self, path, **kwargs)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(n={self.n}, p={self.p}, {shown})"
