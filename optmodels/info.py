"""``optmodels info``: the problems, their parameters and their strategies' options, printed
from the tables that validate them (``Problem.PARAMS`` and :mod:`solvers.options`), so the help
cannot disagree with what is accepted."""

from __future__ import annotations

from optmodels.problems import PROBLEMS
from optmodels.strategies import options_for, strategies_for
from solvers.options import describe_table


def describe(problem: str | None = None, strategy: str | None = None) -> str:
    """All problems (no argument), one problem's parameters and strategies, or one strategy's
    options."""
    if problem is None:
        if strategy is not None:
            raise ValueError(
                "Name the problem before the strategy: optmodels info PROBLEM STRATEGY."
            )
        return (
            "\n".join(
                f"{name}: {_first_line(cls.__doc__)}\n"
                f"  strategies: {', '.join(strategies_for(name))}"
                for name, cls in PROBLEMS.items()
            )
            + "\n\nMore: optmodels info PROBLEM [STRATEGY]"
        )
    if problem not in PROBLEMS:
        raise ValueError(f"Unknown problem {problem!r}; choose one of {', '.join(PROBLEMS)}.")
    if strategy is not None:
        table = options_for(problem, strategy)
        return f"{problem} / {strategy} options (--param KEY=VALUE):\n" + _indent(
            describe_table(table)
        )
    cls = PROBLEMS[problem]
    params = "\n".join(
        f"{name}: {p.doc} [{p.describe()}; default {p.default!r}]" for name, p in cls.PARAMS.items()
    )
    return (
        f"{problem}: {_first_line(cls.__doc__)} (the mathematics: docs/problems/{problem}.md)\n"
        "parameters (--param KEY=VALUE):\n"
        f"{_indent(params)}\nstrategies: {', '.join(strategies_for(problem))}"
        f"\n(options of one: optmodels info {problem} STRATEGY)"
    )


def _first_line(doc: str | None) -> str:
    line = (doc or "").strip().splitlines()[0] if doc else ""
    return line.replace(" (see the module docstring).", "").rstrip(".")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
