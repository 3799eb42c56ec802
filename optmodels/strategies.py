"""The registry of solution strategies per problem: ``problem.solve(strategy=...)`` looks here.

Each entry adapts a problem's validated data to an array-level routine in :mod:`solvers` and
returns a :class:`~solvers.result.SolveResult` whose ``objective`` is the problem's own objective
at the returned solution, so every strategy is comparable with the ``"full"`` solve.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from optmodels.verify import check_verify, verify_result
from solvers import interrupt
from solvers.errors import DataError, SubproblemError
from solvers.options import FULL, OptionTable, validate_options
from solvers.progress import Progress
from solvers.result import SolutionStatus, SolveResult, TerminationCondition

Runner = Callable[..., SolveResult]
Refusal = Callable[[Any], "str | None"]
"""``refusal(problem)``: why a strategy cannot solve this problem (a message naming the
cause and what to use instead), or None when it can."""


@dataclasses.dataclass(frozen=True)
class Strategy:
    """A registered strategy: its problem and name, the option table that validates its
    options and generates their help and docs (:mod:`solvers.options`), what it refuses and
    why (``refuses``, checked by :func:`run_strategy` before it runs), and ``run(problem,
    **options)``, which returns the result the problem layer then certifies."""

    problem: str
    name: str
    options: OptionTable
    run: Runner
    refuses: tuple[Refusal, ...] = ()

    def refusal(self, problem: Any) -> str | None:
        """The first reason this strategy cannot solve ``problem``, or None."""
        for check in self.refuses:
            why = check(problem)
            if why:
                return why
        return None


_REGISTRY: dict[str, dict[str, Strategy]] = {"lad": {}, "svm": {}, "klr": {}, "ridge": {}}


def register(problem: str, name: str, options: OptionTable,
             refuses: tuple[Refusal, ...] = ()) -> Callable[[Runner], Runner]:
    """Decorator: make ``fn(problem, **options)`` the strategy ``name`` of ``problem``, whose
    options are declared (and validated) by the table ``options`` and which refuses what the
    functions ``refuses`` name (:class:`Strategy`)."""

    def deco(fn: Runner) -> Runner:
        _REGISTRY[problem][name] = Strategy(problem, name, options, fn, tuple(refuses))
        return fn

    return deco


def get_strategy(problem: str, name: str) -> Strategy:
    """The registered :class:`Strategy` ``name`` of ``problem`` (ValueError naming the
    choices otherwise)."""
    _load()
    _check_strategy(problem, name)
    return _REGISTRY[problem][name]


def accepted(problem: Any) -> dict[str, str | None]:
    """Every strategy of ``problem``'s kind with the reason it refuses this problem (None:
    it accepts it), e.g. ``{"ipm": "... needs kernel='linear' ...", "smo": None, ...}``."""
    return {name: get_strategy(problem.NAME, name).refusal(problem)
            for name in strategies_for(problem.NAME)}


AUTO_STRATEGY = "auto"
"""An estimator's strategy chosen at fit time (SVMClassifier's default; see its docstring)."""


def strategies_for(problem: str) -> list[str]:
    """Names of the strategies registered for ``problem``."""
    _load()
    return sorted(_REGISTRY[problem])


def options_for(problem: str, strategy: str) -> OptionTable:
    """The option table of ``strategy`` of ``problem`` (see :mod:`solvers.options`)."""
    return get_strategy(problem, strategy).options


def check_strategy_options(problem: str, strategy: str, options: dict[str, Any]) -> dict:
    """``options`` converted and validated by the strategy's table (DataError otherwise)."""
    owner = f"strategy {strategy!r} of {problem}"
    return validate_options(options_for(problem, strategy), options, owner)


def _check_strategy(problem: str, strategy: str) -> None:
    table = _REGISTRY[problem]
    if strategy not in table:
        raise ValueError(
            f"Unknown strategy {strategy!r} for {problem}; "
            f"choose one of {', '.join(sorted(table))}."
        )


LOCAL_SCHEDULERS = ("threads", "processes", "synchronous")
ADDRESS_PREFIXES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")


def check_scheduler(problem: Any, scheduler: Any = None, client: Any = None) -> None:
    """Refuse a ``scheduler``/``client`` that is not one of the accepted values, both at once,
    or either for a problem whose data are not Dask arrays."""
    if scheduler is None and client is None:
        return
    if scheduler is not None and client is not None:
        raise ValueError("Pass scheduler= or client=, not both: client=Client(...) already says "
                         "where to run.")
    if scheduler is not None and not (
            scheduler in LOCAL_SCHEDULERS
            or (isinstance(scheduler, str) and scheduler.startswith(ADDRESS_PREFIXES))):
        raise ValueError(
            f"scheduler must be one of {', '.join(map(repr, LOCAL_SCHEDULERS))} or the address "
            f"of a running dask scheduler such as 'tcp://127.0.0.1:8786'; got {scheduler!r}.")
    if client is not None and not (hasattr(client, "as_current") and hasattr(client, "get")):
        raise ValueError(f"client must be a dask.distributed.Client; got "
                         f"{type(client).__name__}. Pass client=Client(...) or "
                         "scheduler='tcp://host:port'.")
    if not getattr(problem, "lazy", False):
        what = "scheduler=" if scheduler is not None else "client="
        raise ValueError(
            f"{what} chooses where Dask arrays are computed, and this {problem.NAME} problem "
            "holds its data in memory (nothing to schedule). Drop the argument, or build the "
            "problem from dask.array data.")


@contextlib.contextmanager
def dask_scheduler(scheduler: Any = None, client: Any = None) -> Iterator[None]:
    """Run the block on ``client`` (``Client.as_current``), on a local Dask scheduler
    (``dask.config.set(scheduler=...)``), or on a new client connected to the address
    ``scheduler`` (closed afterwards); with neither, on the active scheduler."""
    if client is not None:
        with client.as_current():
            yield
    elif scheduler in LOCAL_SCHEDULERS:
        import dask

        with dask.config.set(scheduler=scheduler):
            yield
    elif scheduler is not None:
        import distributed

        with distributed.Client(scheduler, set_as_default=False) as own, own.as_current():
            yield
    else:
        yield


def run_strategy(
    problem: Any, strategy: str, *, verify: str = "auto", scheduler: Any = None,
    client: Any = None, **options: Any
) -> SolveResult:
    """Run ``strategy`` on ``problem`` with its options validated by the strategy's table.

    ``verify`` says who computes the objective and bound that the certificate judges
    (:mod:`optmodels.verify`): ``"auto"`` (default) the problem, from the returned arrays,
    where that costs O(n p) or less (a kernel dual's decision values audited on a few rows);
    ``"independent"`` the problem always (O(n^2 p) for a kernel dual); ``"strategy"`` the
    strategy's own arithmetic. ``result.wall_time`` is the whole call.
    On Dask data, ``scheduler`` ("threads", "processes", "synchronous" or an address
    "tcp://host:port") or ``client`` (a ``dask.distributed.Client``) says where the chunk-wise
    passes run (default: the active Dask scheduler); see :func:`dask_scheduler`.
    A :class:`~solvers.errors.SubproblemError` (a decomposition strategy's subsolver failed on a
    subproblem) gives a NUMERICAL_ERROR result without a solution whose ``raw_status`` is the
    message; any other exception (a bug such as NotImplementedError or RecursionError, or
    another SolveError) propagates unchanged. Ctrl-C
    during the run stops the strategy at its next check with termination INTERRUPTED and the
    best point so far (:mod:`solvers.interrupt`; a second Ctrl-C raises KeyboardInterrupt)."""
    t0 = time.perf_counter()
    check_verify(verify)
    check_scheduler(problem, scheduler, client)
    entry = get_strategy(problem.NAME, strategy)
    why = entry.refusal(problem)
    if why:
        raise DataError(why)
    options = check_strategy_options(problem.NAME, strategy, options)
    with dask_scheduler(scheduler, client), interrupt.interruptible():
        try:
            result = entry.run(problem, **options)
        except SubproblemError as exc:
            result = _failed(exc)
        result.strategy = strategy
        verify_result(problem, result, verify)
        # One meaning of "optimal" for every strategy: the problem-level certificate (a full
        # solve certifies itself, with NUMERICAL_ERROR as the failure).
        problem.certify(result)
        if result.x is not None:  # the one prediction path (solvers.solution)
            result.solution = problem.typed_solution(result)
    result.wall_time = time.perf_counter() - t0
    return result


def _failed(exc: SubproblemError) -> SolveResult:
    """The NUMERICAL_ERROR result, without a solution, of a strategy whose subproblem failed;
    ``raw_status`` is the error's message, ``solver`` its subsolver."""
    return SolveResult(
        TerminationCondition.NUMERICAL_ERROR,
        SolutionStatus.NO_SOLUTION,
        solver=exc.solver,
        raw_status=f"{type(exc).__name__}: {exc}",
    )


def _full(problem: Any, **options: Any) -> SolveResult:
    """The monolithic solve; a solve that runs PROGRESS_EVERY seconds logs a line every
    PROGRESS_EVERY seconds while the backend works and an end line
    (:mod:`solvers.progress`; the backend's own log is ``verbose=True``)."""
    progress = Progress("full")
    solver = options.get("solver") or "the default backend"
    with progress.heartbeat(f"running ({solver})"):
        res = problem.solve_full(**options)
    progress.done(res.iterations, res.objective, res.gap, status=res.termination.value,
                  solver=res.solver)
    return res


for _name in _REGISTRY:
    register(_name, "full", FULL[_name])(_full)

_LOADED = False


def _load() -> None:
    """Import the modules that register the decomposition and sketching strategies."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from optmodels import strategy_adapters  # noqa: F401
