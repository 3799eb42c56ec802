"""``optmodels info`` prints exactly what validation accepts (both come from the same tables)."""

from __future__ import annotations

import re

import pytest

from optmodels.info import describe
from optmodels.problems import PROBLEMS
from optmodels.strategies import options_for, strategies_for


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_problem_page_lists_every_parameter_and_strategy(problem):
    text = describe(problem)
    listed = re.findall(r"^  (\w+): ", text, flags=re.M)
    assert listed == list(PROBLEMS[problem].PARAMS)
    assert text.splitlines()[-2].endswith(", ".join(strategies_for(problem)))


@pytest.mark.parametrize(
    "problem, strategy",
    [(p, s) for p in sorted(PROBLEMS) for s in strategies_for(p)],
)
def test_strategy_page_lists_exactly_the_validated_options(problem, strategy):
    text = describe(problem, strategy)
    listed = re.findall(r"^  (\w+)(?: \([^)]*\))?: ", text, flags=re.M)
    assert listed == list(options_for(problem, strategy))


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="choose one of"):
        describe("svm", "nope")
    with pytest.raises(ValueError, match="Unknown problem"):
        describe("nope")


def test_the_docs_reference_page_is_generated_from_the_tables():
    """docs/reference/options.md is what the tables say (regenerate:
    ``python -m optmodels.info > docs/reference/options.md``)."""
    from pathlib import Path

    from optmodels.info import markdown_reference

    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "options.md"
    assert page.read_text() == markdown_reference()


def test_cli_help_lists_the_validated_options():
    """``optmodels solve --help`` (and compare, fit) names every strategy's options, from the
    same tables."""
    from optmodels.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    for command in ("solve", "compare", "fit"):
        text = sub.choices[command].format_help()
        for problem in sorted(PROBLEMS):
            for strategy in strategies_for(problem):
                line = f"  {problem} {strategy}: {', '.join(options_for(problem, strategy))}"
                assert line in text, (command, line)
