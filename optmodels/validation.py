"""Problem parameter tables (after scikit-learn's ``_param_validation``).

Every problem declares a ``PARAMS`` table of :class:`Param` entries; :func:`validate_params`
checks values against it with the toolkit's one message template (:mod:`solvers.validation`,
which also holds the array, label and weight checks the problems run before any model is
built):

    The 'C' parameter of SVM must be a float in the range (0, inf). Got -1 instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.options import refuse_unknown
from solvers.validation import describe_range, invalid, one_of, to_bool, to_number


@dataclasses.dataclass(frozen=True)
class Param:
    """One hyperparameter: its kind, allowed range or choices, default and meaning."""

    kind: str  # "float", "int", "bool", "choice", "float_or_choice"
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    closed: str = "neither"  # which ends of [low, high] are allowed: neither, left, right, both
    choices: tuple[str, ...] = ()
    none_ok: bool = False

    def describe(self) -> str:
        if self.kind == "choice":
            return one_of(self.choices)
        if self.kind == "bool":
            return "a bool"
        text = describe_range(self.kind, self.low, self.high, self.closed)
        if self.kind == "float_or_choice":
            text += f" or {one_of(self.choices)}"
        return text + (" or None" if self.none_ok else "")

    def check(self, value: Any) -> Any:
        """Return the value coerced to its kind, or raise ValueError (the caller words it).

        Numbers go through :func:`solvers.validation.to_number` (finite, not a bool, inside the
        range); a bool is a real bool, or one of the strings true/false/1/0 from the CLI."""
        if value is None and self.none_ok:
            return None
        if self.kind == "bool":
            return to_bool(value)
        if self.kind in ("choice", "float_or_choice") and isinstance(value, str):
            if value in self.choices:
                return value
            if self.kind == "choice":
                raise ValueError
        if self.kind == "choice":
            raise ValueError
        return to_number(value, "int" if self.kind == "int" else "float", self.low, self.high,
                         self.closed)


def validate_params(owner: str, table: Mapping[str, Param], given: Mapping[str, Any]) -> dict:
    """Check ``given`` against ``table``; return all parameters with defaults filled in."""
    refuse_unknown(table, given, owner, "parameter")
    out = {}
    for name, spec in table.items():
        value = given.get(name, spec.default)
        try:
            out[name] = spec.check(value)
        except (ValueError, TypeError):
            raise invalid(name, owner, spec.describe(), value) from None
    return out


def parse_param_strings(pairs: list[str]) -> dict[str, str]:
    """Turn CLI ``KEY=VALUE`` strings into a dict (values stay strings; the table coerces)."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise DataError(f"Parameter {pair!r} is not KEY=VALUE; write e.g. --param C=10.")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def resolve_gamma(gamma: Any, X: Any, weights: np.ndarray | None = None) -> float:
    """scikit-learn's RBF width: 'scale' = 1 / (p var_w(X)), 'auto' = 1 / p, or the float given.

    var_w is the variance of all entries of X with row weights w (SVC's var(X) for equal
    weights; with it an integer weight equals repeated rows), computed without densifying a
    sparse X; 'scale' is 1 when that variance is 0. A variance that overflows float64 (or a
    width that underflows to 0) is a DataError naming X and the fix."""
    if gamma == "auto":
        return 1.0 / X.shape[1]
    if gamma != "scale":
        return float(gamma)
    var = _weighted_variance(X, weights)
    width = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    if not (np.isfinite(var) and np.isfinite(width) and width > 0):
        raise DataError(
            f"gamma='scale' is 1 / (n_features * var(X)), and the variance of X ({var:.3g}) "
            "is out of float64's range for it; rescale the features (e.g. StandardScaler) or "
            "pass a numeric gamma.")
    return width


def _weighted_variance(X: Any, weights: np.ndarray | None) -> float:
    """The variance of all entries of X, rows weighted by ``weights`` (None: equal)."""
    import scipy.sparse as sp

    with np.errstate(over="ignore", invalid="ignore"):
        if weights is None and not sp.issparse(X):
            return float(np.asarray(X).var())
        w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        total = float(w.sum()) * X.shape[1]
        mean = float((w @ X).sum()) / total
        if sp.issparse(X):  # sum w (x - mean)^2 = sum w x^2 - total mean^2
            return float((w @ X.multiply(X)).sum()) / total - mean * mean
        return float((w @ (X - mean) ** 2).sum()) / total


ParamTable = Mapping[str, Param]
Checker = Callable[[Any], Any]
