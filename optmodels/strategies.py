"""The registry of solution strategies per problem: ``problem.solve(strategy=...)`` looks here.

Each entry adapts a problem's validated data to an array-level routine in :mod:`solvers` and
returns a :class:`~solvers.result.SolveResult` whose ``objective`` is the problem's own objective
at the returned solution, so every strategy is comparable with the ``"full"`` solve.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from solvers.result import SolveResult

Runner = Callable[..., SolveResult]
_REGISTRY: dict[str, dict[str, Runner]] = {"lad": {}, "svm": {}, "klr": {}, "ridge": {}}


def register(problem: str, name: str) -> Callable[[Runner], Runner]:
    """Decorator: make ``fn(problem, **options)`` the strategy ``name`` of ``problem``."""

    def deco(fn: Runner) -> Runner:
        _REGISTRY[problem][name] = fn
        return fn

    return deco


def strategies_for(problem: str) -> list[str]:
    """Names of the strategies registered for ``problem``."""
    _load()
    return sorted(_REGISTRY[problem])


def run_strategy(problem: Any, strategy: str, **options: Any) -> SolveResult:
    """Run ``strategy`` on ``problem``; unknown names list the choices."""
    _load()
    table = _REGISTRY[problem.NAME]
    if strategy not in table:
        raise ValueError(
            f"Unknown strategy {strategy!r} for {problem.NAME}; "
            f"choose one of {', '.join(sorted(table))}."
        )
    runner = table[strategy]
    check_options(
        problem.solve_full if runner is _full else runner,
        options,
        f"strategy {strategy!r} of {problem.NAME}",
    )
    result = runner(problem, **options)
    result.strategy = strategy
    return result


def check_options(
    fn: Callable[..., Any], options: dict[str, Any], owner: str, fixed: set[str] = frozenset()
) -> None:
    """Refuse option names that ``fn`` does not take (or that the problem fixes), listing the
    ones a user may set."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    valid = [
        n
        for n, p in params.items()
        if n not in fixed
        and (p.kind is inspect.Parameter.KEYWORD_ONLY or p.default is not inspect.Parameter.empty)
    ]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for {owner}; "
            f"valid options are {', '.join(valid)}."
        )


def _full(problem: Any, **options: Any) -> SolveResult:
    return problem.solve_full(**options)


for _name in _REGISTRY:
    register(_name, "full")(_full)

_LOADED = False


def _load() -> None:
    """Import the modules that register the decomposition and sketching strategies."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from optmodels import strategy_adapters  # noqa: F401
