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
