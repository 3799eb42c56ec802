"""Input checks shared by the AID strategies; every message names the argument and the fix."""

from __future__ import annotations

import numbers

import numpy as np

from solvers.errors import DataError


def check_matrix(X: object, name: str = "X", *, allow_no_columns: bool = False) -> np.ndarray:
    """Return ``X`` as a 2-D finite float64 array (no copy when it already is one)."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise DataError(f"'{name}' is sparse; pass a dense numpy array (X.toarray()).")
    A = np.asarray(X)
    if np.iscomplexobj(A):
        raise DataError(f"Complex data not supported in '{name}'; pass real numbers.")
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise DataError(
            f"'{name}' must be 2-D (n_samples, n_features); got shape {A.shape}. "
            "Reshape your data with X.reshape(-1, 1) for a single feature."
        )
    if A.shape[0] == 0:
        raise DataError(f"'{name}' has 0 samples (shape={A.shape}); at least 1 is required.")
    if A.shape[1] == 0 and not allow_no_columns:
        raise DataError(
            f"'{name}' has 0 feature(s) (shape={A.shape}) while a minimum of 1 is required."
        )
    _check_finite(A, name)
    return A


def check_vector(v: object, n: int, name: str) -> np.ndarray:
    """Return ``v`` as a finite float64 vector of length ``n``."""
    a = np.asarray(v)
    if np.iscomplexobj(a):
        raise DataError(f"Complex data not supported in '{name}'; pass real numbers.")
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1 or a.shape[0] != n:
        raise DataError(
            f"'{name}' must be a vector of length {n} (one per row of X); got shape {a.shape}."
        )
    _check_finite(a, name)
    return a


def check_weights(sample_weight: object, n: int) -> np.ndarray:
    """Return weights s_i >= 0 (default ones); all-zero or negative weights raise."""
    if sample_weight is None:
        return np.ones(n)
    s = check_vector(sample_weight, n, "sample_weight")
    if np.any(s < 0):
        raise DataError("'sample_weight' has negative entries; weights must be >= 0.")
    if not np.any(s > 0):
        raise DataError("'sample_weight' is all zero; at least one weight must be > 0.")
    return s


def check_labels(y: object, n: int) -> np.ndarray:
    """Return SVM labels as a float vector of -1 / +1 (both classes present)."""
    a = check_vector(y, n, "y")
    if not np.all((a == 1) | (a == -1)):
        raise DataError("'y' must contain only the labels -1 and +1; map your classes first.")
    if np.all(a == 1) or np.all(a == -1):
        raise DataError("'y' has a single class; the SVM needs both -1 and +1 labels.")
    return a


_N_CLUSTERS_MSG = "'n_clusters' must be an int >= 1 or a fraction in (0, 1]; got {!r}."


def check_n_clusters(n_clusters: object, n: int) -> int:
    """An int in [1, n], or a fraction in (0, 1] of n (at least 1)."""
    if isinstance(n_clusters, (bool, np.bool_)):
        raise DataError(_N_CLUSTERS_MSG.format(n_clusters))
    if isinstance(n_clusters, numbers.Integral):
        if n_clusters < 1:
            raise DataError(f"'n_clusters' must be >= 1; got {n_clusters}.")
        return int(min(n_clusters, n))
    if isinstance(n_clusters, numbers.Real):
        if not (0.0 < float(n_clusters) <= 1.0):
            raise DataError(
                "'n_clusters' as a float is a fraction of n and must be in (0, 1]; "
                f"got {n_clusters!r}."
            )
        return max(1, int(round(float(n_clusters) * n)))
    raise DataError(_N_CLUSTERS_MSG.format(n_clusters))


def check_positive(value: object, name: str, *, allow_none: bool = False) -> float | None:
    """A finite real > 0 (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise DataError(f"'{name}' must be a positive number; got {value!r}.")
    if not (np.isfinite(value) and value > 0):
        raise DataError(f"'{name}' must be a finite number > 0; got {value!r}.")
    return float(value)


def check_nonnegative(value: object, name: str) -> float:
    """A finite real >= 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise DataError(f"'{name}' must be a number >= 0; got {value!r}.")
    if not (np.isfinite(value) and value >= 0):
        raise DataError(f"'{name}' must be a finite number >= 0; got {value!r}.")
    return float(value)


def check_max_iter(max_iter: object) -> int:
    """An int >= 1."""
    if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, numbers.Integral):
        raise DataError(f"'max_iter' must be an int >= 1; got {max_iter!r}.")
    if max_iter < 1:
        raise DataError(f"'max_iter' must be >= 1; got {max_iter}.")
    return int(max_iter)


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``; the message lists them."""
    if value not in choices:
        raise DataError(f"Unknown {name}={value!r}; choose one of {', '.join(map(repr, choices))}.")
    return str(value)


def _check_finite(a: np.ndarray, name: str) -> None:
    if a.size and not np.isfinite(a).all():
        what = "NaN" if np.isnan(a).any() else "infinity"
        raise DataError(f"'{name}' contains {what}; remove or impute those entries first.")
