"""Data and parameter validation, in one place (after scikit-learn's ``_param_validation``).

Every problem declares a ``PARAMS`` table of :class:`Param` entries; :func:`validate_params`
checks values against it with one message template:

    The 'C' parameter of SVM must be a float in the range (0, inf). Got -1 instead.

Arrays are checked before any model is built: HiGHS would accept NaN and report "optimal".
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.options import refuse_unknown


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
            return f"one of {{{', '.join(map(repr, self.choices))}}}"
        if self.kind == "bool":
            return "a bool"
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        kind = "an int" if self.kind == "int" else "a float"
        text = f"{kind} in the range {left}{lo}, {hi}{right}"
        if self.kind == "float_or_choice":
            text += f" or one of {{{', '.join(map(repr, self.choices))}}}"
        return text + (" or None" if self.none_ok else "")

    def check(self, value: Any) -> Any:
        """Return the value coerced to its kind, or raise ValueError (the caller words it).

        Numbers must be finite (inf and nan are refused whatever the range says); a bool is a
        real bool, or one of the strings true/false/1/0 (any case) from the command line."""
        if value is None and self.none_ok:
            return None
        if self.kind == "bool":
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            text = value.strip().lower() if isinstance(value, str) else None
            if text in ("true", "false", "1", "0"):
                return text in ("true", "1")
            raise ValueError
        if self.kind in ("choice", "float_or_choice") and isinstance(value, str):
            if value in self.choices:
                return value
            if self.kind == "choice":
                raise ValueError
        if self.kind == "choice":
            raise ValueError
        if isinstance(value, str):
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError
        if self.kind == "int":
            if float(value) != int(value):
                raise ValueError
            value = int(value)
        else:
            value = float(value)
        if not np.isfinite(value):
            raise ValueError
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed not in ("left", "both")):
                raise ValueError
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed not in ("right", "both")):
                raise ValueError
        return value


def validate_params(owner: str, table: Mapping[str, Param], given: Mapping[str, Any]) -> dict:
    """Check ``given`` against ``table``; return all parameters with defaults filled in."""
    refuse_unknown(table, given, owner, "parameter")
    out = {}
    for name, spec in table.items():
        value = given.get(name, spec.default)
        try:
            out[name] = spec.check(value)
        except (ValueError, TypeError):
            raise DataError(
                f"The {name!r} parameter of {owner} must be {spec.describe()}. "
                f"Got {value!r} instead."
            ) from None
    return out


CLASS_WEIGHT_FORMS = (
    "None, 'balanced', or a dict mapping a class label (one of the two labels of y, or -1/+1) "
    "to a positive finite float (a class left out weighs 1)"
)


def check_class_weight(class_weight: Any, classes: np.ndarray) -> Any:
    """``class_weight`` as None, 'balanced' or a dict {-1: w, +1: w} of positive finite floats.

    Dict keys are the original labels ``classes`` (``classes[1]`` maps to +1) when every key is
    one of them, else -1/+1; a class left out weighs 1. Anything else is a DataError listing the
    accepted forms."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return class_weight
    if not isinstance(class_weight, Mapping) or not class_weight:
        raise DataError(f"class_weight must be {CLASS_WEIGHT_FORMS}; got {class_weight!r}.")
    original = [float(c) for c in classes]
    keys = list(class_weight)
    numeric = all(isinstance(k, numbers.Real) and not isinstance(k, (bool, np.bool_)) for k in keys)
    if numeric and all(float(k) in original for k in keys):
        sign = {original[0]: -1, original[1]: 1}
    elif numeric and all(float(k) in (-1.0, 1.0) for k in keys):
        sign = {-1.0: -1, 1.0: 1}
    else:
        raise DataError(
            f"class_weight keys {keys!r} are not the classes of y {original!r} (nor -1/+1); "
            f"class_weight must be {CLASS_WEIGHT_FORMS}."
        )
    out = {}
    for key, value in class_weight.items():
        ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        if not ok or not np.isfinite(float(value)) or float(value) <= 0:
            raise DataError(
                f"class_weight[{key!r}] must be a positive finite float; got {value!r}. "
                f"class_weight must be {CLASS_WEIGHT_FORMS}."
            )
        out[sign[float(key)]] = float(value)
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


def check_array(X: Any, name: str = "X", *, ndim: int = 2, min_features: int = 1) -> np.ndarray:
    """A finite float64 array of the given rank, or a ValueError that says what to do."""
    if hasattr(X, "toarray"):
        X = X.toarray()
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise DataError(f"Complex data not supported in {name}; pass real values.")
    try:
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be numeric; got dtype {arr.dtype}.") from None
    if ndim == 2 and arr.ndim == 1:
        raise DataError(
            f"Expected a 2-D array for {name}, got a 1-D array of shape {arr.shape}. Reshape your "
            "data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample."
        )
    if arr.ndim != ndim:
        raise DataError(f"{name} must be {ndim}-D; got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise DataError(f"{name} has 0 sample(s) (shape={arr.shape}); at least 1 is required.")
    if ndim == 2 and arr.shape[1] < min_features:
        raise DataError(
            f"Found array with {arr.shape[1]} feature(s) (shape={arr.shape}) while a minimum of "
            f"{min_features} is required."
        )
    _check_finite(arr, name)
    return np.ascontiguousarray(arr)


def _check_finite(arr: np.ndarray, name: str) -> None:
    if np.isnan(arr).any():
        raise DataError(f"Input {name} contains NaN; remove or impute those entries first.")
    if np.isinf(arr).any():
        raise DataError(f"Input {name} contains infinity; remove those entries or rescale.")


def check_target(y: Any, n: int, name: str = "y") -> np.ndarray:
    """A finite 1-D float target of length n (a column vector is flattened with a warning)."""
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            f"A column-vector {name} was passed when a 1-D array was expected; it is "
            "flattened with y.ravel().",
            UserWarning,
            stacklevel=3,
        )
        arr = arr.ravel()
    arr = check_array(arr, name, ndim=1)
    if arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but X has {n} rows; they must match.")
    return arr


def check_labels(y: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Binary labels mapped to -1/+1; returns (y_pm, classes) with classes[1] -> +1."""
    arr = check_target(y, n)
    classes = np.unique(arr)
    if classes.size != 2:
        raise DataError(
            f"The target needs exactly 2 classes; got {classes.size} class(es) {classes[:5]}. "
            "A binary classifier cannot be trained on one class."
        )
    return np.where(arr == classes[1], 1.0, -1.0), classes


def check_sample_weight(w: Any, n: int) -> np.ndarray:
    """Non-negative finite weights of shape (n,), not all zero (default: ones)."""
    if w is None:
        return np.ones(n)
    arr = np.asarray(w)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise DataError(f"sample_weight must have shape ({n},); got {arr.shape}.")
    arr = check_array(arr, "sample_weight", ndim=1)
    if (arr < 0).any():
        raise DataError("sample_weight has negative entries; weights must be >= 0.")
    if not (arr > 0).any():
        raise DataError("sample_weight is all zero; at least one weight must be positive.")
    return arr


def resolve_gamma(gamma: Any, X: np.ndarray) -> float:
    """scikit-learn's RBF width: 'scale' = 1 / (p var(X)), 'auto' = 1 / p, or the float given."""
    if gamma == "scale":
        var = float(X.var())
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    if gamma == "auto":
        return 1.0 / X.shape[1]
    return float(gamma)


ParamTable = Mapping[str, Param]
Checker = Callable[[Any], Any]
