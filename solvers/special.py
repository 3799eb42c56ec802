"""``expit`` and ``xlogy`` of :mod:`scipy.special`, imported on first use.

Importing ``scipy.special`` costs about 0.28 s (its array-API layer), a fifth of a command-line
solve of a 5,000-row SVM that never calls it; the problems, certificates and estimators that
need these two functions call them through here.
"""

from __future__ import annotations

from typing import Any


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x)) (``scipy.special.expit``)."""
    from scipy.special import expit as _expit

    return _expit(x)


def xlogy(x: Any, y: Any) -> Any:
    """x log(y), 0 where x = 0 (``scipy.special.xlogy``)."""
    from scipy.special import xlogy as _xlogy

    return _xlogy(x, y)
