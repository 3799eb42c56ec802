"""HiGHS (LP by simplex or interior point, convex QP by active set) through highspy.

Capabilities: LP and QP. HiGHS's row duals already follow :mod:`solvers.qp`'s convention for a
minimisation (``c + P x - A' y`` are its column duals). Its QP regularization (1e-7 by default)
changes the answer of ill-conditioned QPs, so it is switched off here.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.backend import BackendOutput, module_available
from solvers.qp import QPData
from solvers.result import TerminationCondition as T

# Native model statuses (highspy.HighsModelStatus) -> termination, in this one place.
STATUS_MAP = {
    "kOptimal": T.OPTIMAL,
    "kInfeasible": T.INFEASIBLE,
    "kUnboundedOrInfeasible": T.INFEASIBLE_OR_UNBOUNDED,
    "kUnbounded": T.UNBOUNDED,
    "kTimeLimit": T.TIME_LIMIT,
    "kIterationLimit": T.ITERATION_LIMIT,
    "kObjectiveBound": T.ERROR,
    "kObjectiveTarget": T.ERROR,
    "kSolutionLimit": T.ITERATION_LIMIT,
    "kInterrupt": T.INTERRUPTED,
    "kMemoryLimit": T.ERROR,
    "kSolveError": T.NUMERICAL_ERROR,
    "kPostsolveError": T.NUMERICAL_ERROR,
    "kPresolveError": T.ERROR,
    "kLoadError": T.ERROR,
    "kModelError": T.ERROR,
    "kModelEmpty": T.OPTIMAL,
    "kNotset": T.ERROR,
    "kUnknown": T.NUMERICAL_ERROR,
}


def highs_termination(h: Any) -> tuple[T, str]:
    """``(termination, raw status name)`` of the last run of the ``highspy.Highs`` ``h``,
    through :data:`STATUS_MAP` (an unlisted status is ERROR): the one map of HiGHS's model
    status, for the monolithic solve and every subproblem solve."""
    status = h.getModelStatus()
    raw = status.name if hasattr(status, "name") else str(status)
    return STATUS_MAP.get(raw, T.ERROR), raw


_BANNER_SILENCED = False


def new_highs(verbose: bool = False) -> Any:
    """A ``highspy.Highs`` with logging off unless ``verbose``.

    HiGHS prints a copyright banner on standard output when the first instance of a process is
    made; that would corrupt ``optmodels ... --json``, so the first construction runs with file
    descriptor 1 pointed at /dev/null.
    """
    import highspy

    global _BANNER_SILENCED
    if _BANNER_SILENCED or verbose:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _BANNER_SILENCED = True
    h.setOptionValue("output_flag", bool(verbose))
    return h


def to_highs(qp: QPData, *, names: bool = False, verbose: bool = False) -> Any:
    """Build a ``highspy.Highs`` object holding ``qp`` (names optional: costly for large n)."""
    import highspy

    h = new_highs(verbose)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_ = qp.n_cols
    lp.num_row_ = qp.n_rows
    lp.col_cost_ = qp.c
    lp.col_lower_ = np.where(np.isfinite(qp.col_lo), qp.col_lo, -inf)
    lp.col_upper_ = np.where(np.isfinite(qp.col_hi), qp.col_hi, inf)
    lp.row_lower_ = np.where(np.isfinite(qp.row_lo), qp.row_lo, -inf)
    lp.row_upper_ = np.where(np.isfinite(qp.row_hi), qp.row_hi, inf)
    lp.offset_ = qp.offset
    A = qp.A.tocsc()  # free when the model was built column-wise
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    lp.a_matrix_.num_col_ = qp.n_cols
    lp.a_matrix_.num_row_ = qp.n_rows
    if names:
        lp.col_names_ = qp.col_names()
        lp.row_names_ = qp.row_names()
    h.passModel(lp)
    if not qp.is_lp:
        lower = sp.csc_matrix(sp.tril(qp.P))
        hess = highspy.HighsHessian()
        hess.dim_ = qp.n_cols
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = lower.indptr
        hess.index_ = lower.indices
        hess.value_ = lower.data
        h.passHessian(hess)
    return h


class HighsBackend:
    """HiGHS through highspy: LP (interior point by default) and convex QP."""

    NAME: ClassVar[str] = "highs"
    SUPPORTS: ClassVar[frozenset[str]] = frozenset({"lp", "qp"})

    @staticmethod
    def available() -> bool:
        return module_available("highspy")

    @staticmethod
    def version() -> str:
        h = new_highs()
        return f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"

    def solve_qp(
        self,
        qp: QPData,
        *,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> BackendOutput:
        h = to_highs(qp, verbose=verbose)
        opts: dict[str, Any] = {"qp_regularization_value": 0.0}
        if qp.is_lp:
            opts["solver"] = "ipm"
        if time_limit is not None:
            opts["time_limit"] = float(time_limit)
        if max_iter is not None:
            opts.update(
                ipm_iteration_limit=int(max_iter),
                simplex_iteration_limit=int(max_iter),
                qp_iteration_limit=int(max_iter),
            )
        opts.update(options or {})
        for key, value in opts.items():
            _set_option(h, key, value)
        _match_scheduler(int(opts.get("threads", 0)))
        t0 = time.perf_counter()
        _run(h)
        elapsed = time.perf_counter() - t0
        term, raw = highs_termination(h)
        sol = h.getSolution()
        info = h.getInfo()
        x = np.array(sol.col_value) if sol.value_valid and len(sol.col_value) == qp.n_cols else None
        y = np.array(sol.row_dual) if sol.dual_valid and len(sol.row_dual) == qp.n_rows else None
        if x is None and term is T.OPTIMAL and qp.n_cols == 0:
            x = np.zeros(0)
        iters = int(
            max(info.ipm_iteration_count, 0)
            + max(info.simplex_iteration_count, 0)
            + max(info.qp_iteration_count, 0)
        )
        return BackendOutput(
            term, raw, x, y, iters, elapsed, self.NAME, self.version(), _certificates(h, term)
        )


_SCHEDULER_THREADS: int | None = None


def _match_scheduler(threads: int) -> None:
    """HiGHS starts one global thread scheduler per process, with the first run's ``threads``;
    a later run asking for another count fails (status kNotset). Restart it when the count
    changes, so ``threads`` can differ between solves in one process."""
    import highspy

    global _SCHEDULER_THREADS
    if _SCHEDULER_THREADS is not None and threads != _SCHEDULER_THREADS:
        highspy.Highs.resetGlobalScheduler(True)
    _SCHEDULER_THREADS = threads


def _certificates(h: Any, term: T) -> dict[str, np.ndarray]:
    """HiGHS's dual ray (a Farkas certificate) or primal ray, where it has one."""
    out: dict[str, np.ndarray] = {}
    if term in (T.INFEASIBLE, T.INFEASIBLE_OR_UNBOUNDED):
        _, has, ray = h.getDualRay()
        if has:
            out["farkas"] = np.asarray(ray, dtype=float)
    if term in (T.UNBOUNDED, T.INFEASIBLE_OR_UNBOUNDED):
        _, has, ray = h.getPrimalRay()
        if has:
            out["ray"] = np.asarray(ray, dtype=float)
    return out


def _set_option(h: Any, key: str, value: Any) -> None:
    import highspy

    if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
        raise ValueError(f"HiGHS rejected the option {key}={value!r}; see the HiGHS option list.")


def _run(h: Any) -> None:
    """``h.run()``; inside :func:`solvers.interrupt.interruptible` the solve runs on HiGHS's
    own thread (highspy's startSolve) and a Ctrl-C cancels it through HiGHS's user-interrupt
    callback, which ends it with kInterrupt and the best point it has (HiGHS checks the
    callback at every iteration, so it is enabled only here)."""
    from solvers import interrupt

    if not interrupt.active():
        h.run()
        return
    h.HandleUserInterrupt = True
    h.startSolve()
    while not h.wait(0.1)[0]:
        if interrupt.requested():
            h.cancelSolve()
