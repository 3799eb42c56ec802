"""Data and parameter checks for the whole toolkit, with one message template.

A bad parameter value is refused with::

    The 'C' parameter of SVM must be a float in the range (0, inf). Got -1 instead.

where ``SVM`` is the owner (a problem, an estimator, a routine such as ``smo_svm`` or a
generator) and the accepted values come from :func:`describe_range`. Numbers must be finite
and a bool is never a number (``C=True`` is refused). Arrays are refused when they hold NaN or
infinity, have the wrong shape, or (weights) are negative or all zero; every message names the
argument and says what to do. Problem parameter tables (``optmodels.validation.Param``) and
strategy option tables (``solvers.options.Option``) both check numbers with :func:`to_number`.

This module imports only numpy, :mod:`solvers.errors` and :mod:`solvers.kernels`, so
``instances`` may use it.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.kernels import KERNELS, Kernel

CLOSED = ("neither", "left", "right", "both")


# ---------------------------------------------------------------------------- the template
def invalid(name: str, owner: str, accepted: str, value: Any, noun: str = "parameter") -> DataError:
    """The one message: "The 'name' noun of owner must be accepted. Got value instead."."""
    return DataError(f"The {name!r} {noun} of {owner} must be {accepted}. Got {value!r} instead.")


# ---------------------------------------------------------------------------- numbers
def describe_range(kind: str, low: float | None = None, high: float | None = None,
                   closed: str = "neither", *, inf_ok: bool = False) -> str:
    """The accepted numbers in words, e.g. "a float in the range (0, inf)".

    ``closed`` says which finite ends belong to the range; an infinite end is open unless
    ``inf_ok`` (then the range is written "..., inf]")."""
    left = "[" if low is not None and closed in ("left", "both") else "("
    right = "]" if (high is not None and closed in ("right", "both")) or (
        high is None and inf_ok) else ")"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    article = "an int" if kind == "int" else "a float"
    return f"{article} in the range {left}{lo}, {hi}{right}"


def to_number(value: Any, kind: str = "float", low: float | None = None,
              high: float | None = None, closed: str = "neither", *,
              inf_ok: bool = False) -> float | int:
    """``value`` as a float (or an int for ``kind="int"``) inside the range, else ValueError.

    Strings are parsed (the command line gives strings); bools are not numbers; NaN is never
    accepted and +inf only with ``inf_ok`` and no upper bound. An int must be whole."""
    if isinstance(value, str):
        text = value.strip()
        value = int(text) if text.lstrip("+-").isdigit() else float(text)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError("not a real number")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError("too large") from None
    if math.isnan(v) or (math.isinf(v) and not (inf_ok and high is None and v > 0)):
        raise ValueError("not finite")
    if kind == "int":
        if math.isinf(v) or not v.is_integer():
            raise ValueError("not whole")
        v = int(value) if isinstance(value, numbers.Integral) else int(v)
    if not _in_range(v, low, high, closed):
        raise ValueError("out of range")
    return v


def _in_range(v: float, low: float | None, high: float | None, closed: str) -> bool:
    low_ok = low is None or v > low or (v == low and closed in ("left", "both"))
    high_ok = high is None or v < high or (v == high and closed in ("right", "both"))
    return low_ok and high_ok


def to_bool(value: Any) -> bool:
    """Strict bool: a bool, or one of the strings true/false/1/0 (any case); else ValueError."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError("not a bool")


def check_number(value: Any, name: str, owner: str, *, kind: str = "float",
                 low: float | None = None, high: float | None = None, closed: str = "neither",
                 none_ok: bool = False) -> Any:
    """``value`` checked by :func:`to_number`, or the template's DataError."""
    if value is None and none_ok:
        return None
    try:
        return to_number(value, kind, low, high, closed)
    except (ValueError, TypeError):
        accepted = describe_range(kind, low, high, closed) + (" or None" if none_ok else "")
        raise invalid(name, owner, accepted, value) from None


def check_positive(value: Any, name: str, owner: str, *, none_ok: bool = False) -> Any:
    """A finite float > 0 (or None when ``none_ok``)."""
    return check_number(value, name, owner, low=0.0, none_ok=none_ok)


def check_nonnegative(value: Any, name: str, owner: str) -> float:
    """A finite float >= 0."""
    return check_number(value, name, owner, low=0.0, closed="left")


def check_int(value: Any, name: str, owner: str, *, low: int = 1, high: int | None = None,
              none_ok: bool = False) -> Any:
    """An int in [low, high] (no upper bound when ``high`` is None)."""
    return check_number(value, name, owner, kind="int", low=low, high=high, closed="both",
                        none_ok=none_ok)


def check_choice(value: Any, name: str, owner: str, choices: Sequence[str]) -> str:
    """One of ``choices`` (exact match); the message lists them."""
    if not isinstance(value, str) or value not in choices:
        raise invalid(name, owner, one_of(choices), value)
    return value


def one_of(choices: Sequence[str]) -> str:
    """"one of {'a', 'b'}"."""
    return f"one of {{{', '.join(map(repr, choices))}}}"


def check_n_clusters(n_clusters: Any, n: int, owner: str) -> int:
    """An int >= 1 (capped at n), or a float in (0, 1]: that share of n (at least 1)."""
    accepted = describe_range("int", 1, None, "both") + " or a fraction in (0, 1] of n"
    if isinstance(n_clusters, (bool, np.bool_)):
        pass
    elif isinstance(n_clusters, numbers.Integral):
        if n_clusters >= 1:
            return int(min(n_clusters, n))
    elif isinstance(n_clusters, numbers.Real):
        if 0.0 < float(n_clusters) <= 1.0:
            return max(1, int(round(float(n_clusters) * n)))
    raise invalid("n_clusters", owner, accepted, n_clusters)


def check_kernel(kernel: Any, owner: str) -> Kernel:
    """A :class:`Kernel`, or a kernel name turned into one with default parameters."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str) and kernel in KERNELS:
        return Kernel(kernel)
    raise invalid("kernel", owner, f"a solvers.kernels.Kernel or {one_of(KERNELS)}", kernel)


# ---------------------------------------------------------------------------- arrays
def check_array(X: Any, name: str = "X", *, min_samples: int = 1, min_features: int = 1,
                accept_sparse: bool = False, keep_sparse: bool = False) -> Any:
    """A finite, C-contiguous 2-D float64 array with enough rows and columns.

    Sparse input is densified with ``accept_sparse`` and refused otherwise; with
    ``keep_sparse`` too it is kept sparse: a scipy.sparse CSR/CSC matrix comes back as a float64
    CSR matrix (same checks on its stored values and shape), never densified."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        if not accept_sparse:
            raise DataError(f"{name!r} is sparse; pass a dense numpy array ({name}.toarray()).")
        if keep_sparse:
            return _check_sparse(X, name, min_samples, min_features)
        X = X.toarray()
    arr = _as_float(X, name)
    if arr.ndim != 2:
        raise DataError(
            f"Expected a 2-D array for {name!r}, got a {arr.ndim}-D array of shape {arr.shape}. "
            f"Reshape your data with {name}.reshape(-1, 1) for one feature or "
            f"{name}.reshape(1, -1) for one sample."
        )
    if arr.shape[0] < min_samples:
        raise DataError(f"{name!r} has {arr.shape[0]} sample(s) (shape={arr.shape}); at least "
                        f"{min_samples} is required.")
    if arr.shape[1] < min_features:
        raise DataError(
            f"{name!r} has {arr.shape[1]} feature(s) (shape={arr.shape}) while a minimum of "
            f"{min_features} is required."
        )
    check_finite(arr, name)
    return np.ascontiguousarray(arr)


def _check_sparse(X: Any, name: str, min_samples: int, min_features: int) -> Any:
    """A scipy.sparse matrix as a checked float64 CSR matrix (explicit zeros kept)."""
    import scipy.sparse as sp

    if not sp.issparse(X):
        raise DataError(f"{name!r} has a toarray() but is not a scipy.sparse matrix "
                        f"({type(X).__name__}); pass a scipy.sparse CSR/CSC matrix or a numpy "
                        "array.")
    if np.iscomplexobj(X.data):
        raise DataError(f"Complex data not supported in {name!r}; pass real numbers.")
    csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
    n, p = csr.shape
    if n < min_samples:
        raise DataError(f"{name!r} has {n} sample(s) (shape={csr.shape}); at least "
                        f"{min_samples} is required.")
    if p < min_features:
        raise DataError(f"{name!r} has {p} feature(s) (shape={csr.shape}) while a minimum of "
                        f"{min_features} is required.")
    check_finite(csr.data, name)
    csr.sort_indices()
    return csr


def _as_float(X: Any, name: str) -> np.ndarray:
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise DataError(f"Complex data not supported in {name!r}; pass real numbers.")
    try:
        return arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise DataError(f"{name!r} must be numeric; got dtype {arr.dtype}.") from None


def check_finite(arr: np.ndarray, name: str) -> None:
    """DataError when ``arr`` holds NaN or infinity (the message says which).

    Fast path: a NaN or an infinity makes the sum non-finite, so a finite sum proves every entry
    finite in one pass with no temporary (0.09 s against 0.16 s for the masks at 10^7 x 10);
    only a non-finite sum (which finite entries near 1e308 can also give) runs the exact
    checks."""
    if arr.dtype.kind == "f" and arr.size:
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.sum(arr)):
                return
    if np.isnan(arr).any():
        raise DataError(f"Input {name!r} contains NaN; remove or impute those entries first.")
    if np.isinf(arr).any():
        raise DataError(f"Input {name!r} contains infinity; remove those entries or rescale.")


def check_vector(v: Any, n: int, name: str, *, against: str = "X", axis: str = "rows",
                 warn_column: bool = False) -> np.ndarray:
    """A finite float64 vector of length ``n`` (one entry per ``axis`` of ``against``).

    A column (n, 1) is flattened, with a UserWarning when ``warn_column``."""
    arr = _as_float(v, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        if warn_column:
            warnings.warn(
                f"A column-vector {name} was passed when a 1-D array was expected; it is "
                f"flattened with {name}.ravel().", UserWarning, stacklevel=3,
            )
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(f"{name!r} must have shape ({n},) (one entry per {axis[:-1]} of "
                        f"{against}); got shape {arr.shape}.")
    if arr.shape[0] != n:
        raise DataError(f"{name!r} has {arr.shape[0]} entries but {against} has {n} {axis}; "
                        "they must match.")
    check_finite(arr, name)
    return np.ascontiguousarray(arr)


def check_target(y: Any, n: int, name: str = "y") -> np.ndarray:
    """A regression target: a finite vector of length n (a column warns and is flattened)."""
    return check_vector(y, n, name, warn_column=True)


def check_labels(y: Any, n: int, *, numeric: bool = True, signs: bool = False,
                 warn_column: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Binary labels -> (y in {-1, +1}, classes) with classes[1] mapped to +1.

    Exactly two classes are required; ``signs`` requires them to be -1 and +1; labels need not
    be numbers when ``numeric`` is False (they must be finite when they are)."""
    arr = np.asarray(y)
    if numeric or arr.dtype.kind in "biufc":
        arr = check_vector(arr, n, "y", warn_column=warn_column)
    else:
        arr = arr[:, 0] if arr.ndim == 2 and arr.shape[1] == 1 else arr
        if arr.ndim != 1 or arr.shape[0] != n:
            raise DataError(f"'y' must have shape ({n},) (one entry per row of X); got shape "
                            f"{arr.shape}.")
    classes = np.unique(arr)
    if signs and not set(classes.tolist()) <= {-1.0, 1.0}:
        raise DataError("'y' must contain only the labels -1 and +1; map your classes first.")
    if classes.size != 2:
        raise DataError(
            f"'y' must hold exactly 2 classes for a binary classifier; got {classes.size} "
            f"class(es) {classes[:5].tolist()}. A binary classifier cannot be trained on one "
            "class."
        )
    return np.where(arr == classes[1], 1.0, -1.0), classes


def check_sample_weight(sample_weight: Any, n: int) -> np.ndarray:
    """Weights s_i >= 0, finite, of shape (n,), not all zero; None gives ones."""
    if sample_weight is None:
        return np.ones(n)
    s = check_vector(sample_weight, n, "sample_weight")
    if (s < 0).any():
        raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
    if not (s > 0).any():
        raise DataError("'sample_weight' is all zero; at least one weight must be positive.")
    return s


# ---------------------------------------------------------------------------- class weights
CLASS_WEIGHT_FORMS = (
    "None, 'balanced', or a dict mapping a class label (one of the two labels of y, or -1/+1) "
    "to a positive finite float (a class left out weighs 1)"
)


def check_class_weight(class_weight: Any, classes: np.ndarray) -> Any:
    """``class_weight`` as None, 'balanced' or a dict {-1: w, +1: w} of positive finite floats.

    Dict keys are the original labels ``classes`` (``classes[1]`` maps to +1) when every key is
    one of them, else -1/+1; a class left out weighs 1."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return class_weight
    if not isinstance(class_weight, Mapping) or not class_weight:
        raise DataError(f"class_weight must be {CLASS_WEIGHT_FORMS}; got {class_weight!r}.")
    sign = _class_signs(list(class_weight), classes)
    out = {}
    for key, value in class_weight.items():
        try:
            if isinstance(value, str):
                raise ValueError("a string is not a weight")
            out[sign[key]] = to_number(value, low=0.0)
        except (ValueError, TypeError):
            raise DataError(
                f"class_weight[{key!r}] must be a positive finite float; got {value!r}. "
                f"class_weight must be {CLASS_WEIGHT_FORMS}."
            ) from None
    return out


def _class_signs(keys: list, classes: np.ndarray) -> dict:
    """Map each dict key to -1/+1: by the labels of y when all keys are labels, else as -1/+1."""
    labels = classes.tolist()
    if all(_same_label(k, labels) is not None for k in keys):
        return {k: 1 if _same_label(k, labels) == 1 else -1 for k in keys}
    if all(_same_label(k, [-1.0, 1.0]) is not None for k in keys):
        return {k: 1 if _same_label(k, [-1.0, 1.0]) == 1 else -1 for k in keys}
    raise DataError(
        f"class_weight keys {keys!r} are not the classes of y {labels!r} (nor -1/+1); "
        f"class_weight must be {CLASS_WEIGHT_FORMS}."
    )


def _same_label(key: Any, labels: list) -> int | None:
    """Index of ``key`` among ``labels`` (bools never match numbers), or None."""
    if isinstance(key, (bool, np.bool_)):
        return None
    for i, label in enumerate(labels):
        try:
            if key == label:
                return i
        except (TypeError, ValueError):
            continue
    return None


def class_weight_vector(class_weight: Any, y: np.ndarray) -> np.ndarray:
    """cw_{y_i} per row: 1 for None; n / (2 n_c) for 'balanced' (n_c rows in the class of row
    i); w_{y_i} for a dict {-1: w, +1: w} as :func:`check_class_weight`
    returns it (a class left out weighs 1)."""
    if class_weight is None:
        return np.ones_like(y)
    if isinstance(class_weight, str) and class_weight == "balanced":
        n_pos = float((y > 0).sum())
        return np.where(y > 0, y.size / (2 * n_pos), y.size / (2 * (y.size - n_pos)))
    if isinstance(class_weight, dict) and set(class_weight) <= {-1, 1}:
        return np.where(y > 0, float(class_weight.get(1, 1.0)), float(class_weight.get(-1, 1.0)))
    raise DataError(f"class_weight must be {CLASS_WEIGHT_FORMS}; got {class_weight!r}.")


def check_coef_constraints(constraints: Any, bounds: Any, p: int, fit_intercept: bool,
                           owner: str) -> Any:
    """The constraints and bounds on the coefficients theta = (beta, beta0) as one
    :class:`solvers.constraints.CoefConstraints`, or None when both are None.

    ``constraints``: a :class:`scipy.optimize.LinearConstraint` or a list of them, each with
    A of p columns (on beta; the intercept gets a zero column) or p + 1 (beta, then the
    intercept; only with ``fit_intercept``); ``bounds``: a :class:`scipy.optimize.Bounds` with
    p or p + 1 entries (a scalar applies to every entry of beta; without the intercept's
    entry, the intercept is free). A must be finite, lb / ub not NaN, and lb <= ub on every
    row and bound.
    """
    if constraints is None and bounds is None:
        return None
    from scipy.optimize import Bounds, LinearConstraint  # only when there are constraints

    from solvers.constraints import CoefConstraints
    k = p + int(fit_intercept)
    widths = f"{p} (beta)" + (f" or {k} (beta, then the intercept)" if fit_intercept else "")
    items = [] if constraints is None else (
        list(constraints) if isinstance(constraints, (list, tuple)) else [constraints])
    rows, los, his = [], [], []
    for j, c in enumerate(items):
        name = "constraints" if len(items) == 1 else f"constraints[{j}]"
        if not isinstance(c, LinearConstraint):
            raise DataError(f"{name!r} of {owner} must be a scipy.optimize.LinearConstraint(A, "
                            f"lb, ub) or a list of them; got {type(c).__name__}.")
        A = np.atleast_2d(np.asarray(c.A.toarray() if hasattr(c.A, "toarray") else c.A,
                                     dtype=float))
        if A.ndim != 2 or A.shape[1] not in (p, k):
            raise DataError(f"{name!r} of {owner}: A has shape {A.shape}; it needs {widths} "
                            "columns, one per coefficient.")
        check_finite(A, f"{name}.A")
        if A.shape[1] == p and k > p:
            A = np.column_stack([A, np.zeros(A.shape[0])])
        lo, hi = (np.broadcast_to(np.asarray(v, dtype=float), (A.shape[0],)).copy()
                  for v in (c.lb, c.ub))
        _check_sides(lo, hi, f"{name}.lb", f"{name}.ub", owner)
        rows.append(A), los.append(lo), his.append(hi)
    lb, ub = np.full(k, -np.inf), np.full(k, np.inf)
    if bounds is not None:
        if not isinstance(bounds, Bounds):
            raise DataError(f"'bounds' of {owner} must be a scipy.optimize.Bounds(lb, ub); got "
                            f"{type(bounds).__name__}.")
        blo, bhi = (np.asarray(v, dtype=float) for v in (bounds.lb, bounds.ub))
        size = max(blo.size, bhi.size)
        if size not in (1, p, k):
            raise DataError(f"'bounds' of {owner} has {size} entries; it needs {widths}, one "
                            "per coefficient (or a scalar for every entry of beta).")
        width = p if size == 1 else size  # a scalar bounds beta; the intercept stays free
        lb[:width] = np.broadcast_to(blo, (width,))
        ub[:width] = np.broadcast_to(bhi, (width,))
        _check_sides(lb, ub, "bounds.lb", "bounds.ub", owner)
    G = np.vstack(rows) if rows else np.zeros((0, k))
    lo = np.concatenate(los) if los else np.zeros(0)
    hi = np.concatenate(his) if his else np.zeros(0)
    return CoefConstraints(G, lo, hi, lb, ub)


def _check_sides(lo: np.ndarray, hi: np.ndarray, lo_name: str, hi_name: str,
                 owner: str) -> None:
    """No NaN, and lo <= hi entry by entry (a side may be -inf / +inf)."""
    for v, name in ((lo, lo_name), (hi, hi_name)):
        if np.isnan(v).any():
            raise DataError(f"{name!r} of {owner} contains NaN; use -np.inf / np.inf for a free "
                            "side.")
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{lo_name!r} exceeds {hi_name!r} at entry {i} ({lo[i]:g} > {hi[i]:g}) "
                        f"in {owner}: no coefficient can satisfy it. Swap or fix the sides.")
