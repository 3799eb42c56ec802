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


def markdown_reference() -> str:
    """The docs page ``docs/reference/options.md``: every problem parameter and strategy option,
    generated from the same tables (``python -m optmodels.info > docs/reference/options.md``
    regenerates it; a test keeps the committed page equal to this)."""
    out = [
        "# Parameters and options",
        "",
        "Generated from the tables that validate them (`python -m optmodels.info >",
        "docs/reference/options.md`); `optmodels info PROBLEM [STRATEGY]` prints the same.",
        "Problem parameters are `--param KEY=VALUE` on the command line and keyword arguments in",
        "Python; strategy options likewise (`--param STRATEGY.KEY=VALUE` in `compare`).",
    ]
    for name, cls in PROBLEMS.items():
        out += [
            "",
            f"## {name}",
            "",
            _first_line(cls.__doc__) + ".",
            "",
            "| parameter | accepted | default | meaning |",
            "| --- | --- | --- | --- |",
        ]
        out += [
            f"| `{key}` | {_cell(p.describe())} | `{p.default!r}` | {_cell(p.doc)} |"
            for key, p in cls.PARAMS.items()
        ]
        for strategy in strategies_for(name):
            out += [
                "",
                f"### {name} / {strategy}",
                "",
                "| option | symbol | accepted | default | meaning |",
                "| --- | --- | --- | --- | --- |",
            ]
            out += [
                f"| `{o.name}` | {_cell(o.symbol)} | {_cell(o.describe())} | `{o.default!r}` "
                f"| {_cell(o.meaning)} |"
                for o in options_for(name, strategy).values()
            ]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    print(markdown_reference(), end="")
