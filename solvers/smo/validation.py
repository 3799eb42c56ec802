"""Input checks shared by the SMO front ends; every message names the argument and the fix."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.kernels import KERNELS, Kernel


def check_matrix(X: Any, name: str = "X") -> np.ndarray:
    """A finite 2-D float array with at least one row and one column."""
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise DataError(f"Complex data not supported in '{name}'; pass real numbers.")
    if arr.ndim != 2:
        raise DataError(
            f"'{name}' must be 2-D (n_samples, n_features); got shape {arr.shape}. "
            "Reshape your data with X.reshape(-1, 1) for one feature."
        )
    arr = np.ascontiguousarray(arr, dtype=float)
    if arr.shape[0] < 1:
        raise DataError(f"'{name}' has 0 samples; at least 1 is required.")
    if arr.shape[1] < 1:
        raise DataError(
            f"'{name}' has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if np.isnan(arr).any():
        raise DataError(f"'{name}' contains NaN; remove or impute the missing values.")
    if np.isinf(arr).any():
        raise DataError(f"'{name}' contains infinity; remove or clip those entries.")
    return arr


def check_labels(y: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two-class labels -> (y in {-1, +1}, classes); classes[1] maps to +1."""
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n:
        raise DataError(f"'y' must be 1-D with len(y) = n = {n}; got shape {np.shape(y)}.")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise DataError("'y' contains NaN or infinity; give every row a class label.")
    classes = np.unique(arr)
    if classes.size != 2:
        raise DataError(
            f"'y' must hold exactly 2 classes for a binary classifier; found {classes.size} "
            f"class(es): {classes[:5].tolist()}."
        )
    return np.where(arr == classes[1], 1.0, -1.0), classes


def check_positive(value: Any, name: str) -> float:
    """A finite float > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(f"'{name}' must be a float in the range (0, inf); got {value!r}.") from None
    if not (np.isfinite(v) and v > 0):
        raise DataError(f"'{name}' must be a float in the range (0, inf); got {value!r}.")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    """A finite float >= 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(f"'{name}' must be a float in the range [0, inf); got {value!r}.") from None
    if not (np.isfinite(v) and v >= 0):
        raise DataError(f"'{name}' must be a float in the range [0, inf); got {value!r}.")
    return v


def check_sample_weight(sample_weight: Any, n: int) -> np.ndarray:
    """Weights s_i >= 0, finite, not all zero; ``None`` -> ones."""
    if sample_weight is None:
        return np.ones(n)
    s = np.asarray(sample_weight, dtype=float)
    if s.ndim != 1 or s.shape[0] != n:
        raise DataError(
            f"'sample_weight' must be 1-D of length n = {n}; got shape {s.shape}."
        )
    if np.isnan(s).any():
        raise DataError("'sample_weight' contains NaN; give every row a finite weight.")
    if np.isinf(s).any():
        raise DataError("'sample_weight' contains infinity; give every row a finite weight.")
    if (s < 0).any():
        raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
    if not (s > 0).any():
        raise DataError("'sample_weight' is all zero; at least one row needs a positive weight.")
    return s


def check_class_weight(class_weight: Any, classes: np.ndarray, y_pm: np.ndarray,
                       s: np.ndarray) -> np.ndarray:
    """Per-row class factor: None -> 1; 'balanced' -> n / (2 n_class); dict label -> w > 0."""
    n = y_pm.shape[0]
    if class_weight is None:
        return np.ones(n)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise DataError(
                f"'class_weight' must be None, 'balanced' or a dict {{label: weight}}; "
                f"got {class_weight!r}."
            )
        counts = {c: np.sum(y_pm == c) for c in (-1.0, 1.0)}
        return np.array([n / (2.0 * counts[v]) for v in y_pm])
    if not isinstance(class_weight, dict):
        raise DataError(
            f"'class_weight' must be None, 'balanced' or a dict {{label: weight}}; "
            f"got {type(class_weight).__name__}."
        )
    factor = {-1.0: 1.0, 1.0: 1.0}
    for label, w in class_weight.items():
        if label not in classes.tolist():
            raise DataError(
                f"'class_weight' names label {label!r}, which is not in y (classes "
                f"{classes.tolist()})."
            )
        factor[1.0 if label == classes[1] else -1.0] = check_positive(w, "class_weight")
    return np.array([factor[v] for v in y_pm])


def check_kernel(kernel: Any) -> Kernel:
    """A :class:`Kernel`, or a kernel name turned into one with default parameters."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        if kernel not in KERNELS:
            raise DataError(f"Unknown 'kernel' {kernel!r}; choose one of {', '.join(KERNELS)}.")
        return Kernel(kernel)
    raise DataError(
        f"'kernel' must be a solvers.kernels.Kernel or one of {', '.join(KERNELS)}; "
        f"got {type(kernel).__name__}."
    )


def check_max_iter(max_iter: Any) -> int:
    """An integer >= 1."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise DataError(f"'max_iter' must be an integer >= 1; got {max_iter!r}.")
    return int(max_iter)


def check_alpha0(alpha0: Any, n: int) -> np.ndarray | None:
    """A finite 1-D warm start of length n, or None."""
    if alpha0 is None:
        return None
    a = np.asarray(alpha0, dtype=float)
    if a.ndim != 1 or a.shape[0] != n:
        raise DataError(f"'alpha0' must be 1-D of length n = {n}; got shape {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise DataError("'alpha0' contains NaN or infinity; pass a finite warm start.")
    return a
