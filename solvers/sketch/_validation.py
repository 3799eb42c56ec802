"""Shared argument checks for the sketch subpackage: one message template, naming the argument."""

from __future__ import annotations

import numbers

import numpy as np

from solvers.errors import DataError


def check_matrix(A: object, name: str = "A", *, min_rows: int = 1) -> np.ndarray:
    """Return ``A`` as a finite 2-D float64 array, or raise DataError naming ``name``."""
    arr = np.asarray(A)
    if arr.ndim != 2:
        raise DataError(
            f"The '{name}' argument must be a 2-D array (rows x features); got shape "
            f"{arr.shape}. Reshape your data, e.g. {name}.reshape(-1, 1) for one feature."
        )
    if arr.shape[1] < 1:
        raise DataError(
            f"The '{name}' argument has 0 feature(s) (shape={arr.shape}) while a minimum of 1 "
            "is required."
        )
    if arr.shape[0] < min_rows:
        raise DataError(
            f"The '{name}' argument has {arr.shape[0]} row(s) (shape={arr.shape}); at least "
            f"{min_rows} is required."
        )
    return _finite_real(arr, name)


def _finite_real(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` as float64 if it is real, numeric and finite, else a DataError naming ``name``."""
    if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise DataError(f"The '{name}' argument must be real numeric; got dtype {arr.dtype}.")
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise DataError(
            f"The '{name}' argument contains NaN or inf; remove or impute those entries first."
        )
    return arr


def check_vector(b: object, n: int, name: str = "b") -> np.ndarray:
    """Return ``b`` as a finite 1-D float64 array of length ``n``, or raise DataError."""
    arr = np.asarray(b)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n:
        raise DataError(
            f"The '{name}' argument must be a vector of length {n} (one entry per row of A); "
            f"got shape {arr.shape}."
        )
    return _finite_real(arr, name)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float > 0 (>= 0 with ``allow_zero``), or raise DataError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DataError(f"The '{name}' parameter must be a real number; got {value!r}.")
    v = float(value)
    ok = np.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        rng = "[0, inf)" if allow_zero else "(0, inf)"
        raise DataError(
            f"The '{name}' parameter must be a float in the range {rng}; got {value!r}."
        )
    return v


def check_int(value: object, name: str, *, low: int = 1, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]``, or raise DataError naming the fix."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DataError(f"The '{name}' parameter must be an integer; got {value!r}.")
    v = int(value)
    if v < low or (high is not None and v > high):
        hi = "inf" if high is None else str(high)
        raise DataError(
            f"The '{name}' parameter must be an integer in the range [{low}, {hi}]; got {v}."
        )
    return v
