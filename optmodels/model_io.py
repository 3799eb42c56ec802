"""Fitted estimators in a safe file: one ``.npz`` of plain arrays plus a JSON header.

    save_model(estimator, "model.npz", feature_names=["age", "dose"])
    estimator = load_model("model.npz")        # predictions equal the saved estimator's
    header = read_header("model.npz")          # what was fitted, how, and how well

The file is a NumPy ``.npz`` archive written with :func:`numpy.savez` (through
:func:`instances.atomic.atomic_write`). It holds the learned arrays of the estimator and one
extra entry, ``__header__``: a 0-d unicode array with the JSON header. Loading uses
``np.load(..., allow_pickle=False)`` and builds the estimator from a fixed table of the four
estimator classes, so a model file can never run code: no pickle, no import by name.

The header records the format and its version (:data:`FORMAT_VERSION`), the toolkit version, the
problem, the estimator class, its hyperparameters (strategy and strategy options among them),
each solve's termination / certificate / gap, the feature names, the classes (labels of JSON
types: str, int, float, bool; labels that do not survive the JSON round trip are refused on
saving), the kernel, ``arrays_sha256``: SHA-256 over the arrays (sorted by name; each
contributes its name, dtype, shape and C-order bytes), and ``header_sha256`` over the rest of
the header (canonical JSON).

:func:`load_model` refuses, with a one-line :class:`ModelFileError` (a ``ValueError``), a file
that is not such an archive, another format or format version, a header with missing or
unexpected keys, a header or arrays whose hash differs, an unexpected or missing array, an
array of the wrong dtype or shape, or an object array. The hash catches accidents, not edits
(anyone can recompute it), so the values are checked as well, against what the estimator needs:
finite numbers in the header (no NaN / Infinity) and in the arrays, shapes consistent with each
other and with the header's features and classes, non-negative indices and counts, header
entries of the right types (p distinct feature names, distinct labels, one fit record per solve),
the hyperparameters by the estimator's own table (as ``fit`` validates them), the strategy that
ran and its options by the strategy's table, and the kernel equal to the hyperparameters'. A
refused file must be refitted and saved again.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

FORMAT = "optmodels-model"
FORMAT_VERSION = 2
"""Version of the file layout; a file of another version is refused (refit and save again).
Version 2: the classifiers' ``break_ties`` hyperparameter, CSR support vectors after a sparse
fit, and kernel='precomputed' (empty support vectors)."""
HEADER_KEY = "__header__"

PROBLEM_OF = {
    "LADRegressor": "lad",
    "RidgeRegressor": "ridge",
    "SVMClassifier": "svm",
    "KLRClassifier": "klr",
}
"""Estimator class name -> problem name; the only classes a model file can name."""

_HEADER_KEYS = (
    "format", "format_version", "toolkit_version", "problem", "estimator", "hyperparameters",
    "strategy", "strategy_options", "fit", "n_features_in", "feature_names", "feature_names_in",
    "classes", "classes_dtype", "kernel", "n_iter", "arrays_sha256", "header_sha256",
)

# Array schemas: name -> (dtype, shape in symbols: p features, k classes, m = k(k-1)/2 pairs,
# s support vectors), and whether the array is required.
_LINEAR = {"coef_": ("<f8", ("p",), True), "intercept_": ("<f8", (), True)}
_PAIRS = {
    "support_": ("<i4", ("s",), True),
    # dense support vectors, or (after a sparse fit) their CSR arrays: exactly one of the two
    "support_vectors_": ("<f8", ("s", "p"), False),
    "support_vectors_data": ("<f8", ("nnz",), False),
    "support_vectors_indices": ("<i8", ("nnz",), False),
    "support_vectors_indptr": ("<i8", ("s+1",), False),
    "n_support_": ("<i4", ("k",), True),
    "dual_coef_": ("<f8", ("k-1", "s"), True),
    "intercept_": ("<f8", ("m",), True),
    "n_iter_": ("<i8", ("m",), True),
    "coef_": ("<f8", ("m", "p"), False),
    "probA_": ("<f8", ("m",), False),
    "probB_": ("<f8", ("m",), False),
}
_SCHEMA = {"LADRegressor": _LINEAR, "RidgeRegressor": _LINEAR, "SVMClassifier": _PAIRS,
           "KLRClassifier": _PAIRS}
_CSR = ("support_vectors_data", "support_vectors_indices", "support_vectors_indptr")
"""The CSR arrays (data, indices, indptr) of a sparse ``support_vectors_``."""
_LABEL_KINDS = "biufU"


class ModelFileError(ValueError):
    """A model file cannot be written or read; the message (one line) names the path and why."""


def estimator_classes() -> dict[str, type]:
    """The estimator classes a model file may name (needs scikit-learn)."""
    from optmodels.estimators import KLRClassifier, LADRegressor, RidgeRegressor, SVMClassifier

    classes = (LADRegressor, RidgeRegressor, SVMClassifier, KLRClassifier)
    return {c.__name__: c for c in classes}


# ---- saving ------------------------------------------------------------------------------------
def save_model(
    estimator: Any, path: str | os.PathLike[str], *, feature_names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Write the fitted ``estimator`` to ``path`` (atomically); returns the header written.

    ``feature_names`` (p names, e.g. a data file's header) label the coefficients; by default
    the estimator's ``feature_names_in_`` (DataFrame input) or ``x1 .. xp``."""
    from instances.atomic import atomic_write

    arrays = _learned_arrays(estimator, path)
    header = _header(estimator, path, arrays, feature_names)
    text = json.dumps(header, allow_nan=False, sort_keys=True)
    with atomic_write(path) as fh:
        np.savez(fh, **{HEADER_KEY: np.array(text)}, **arrays)
    return header


def _learned_arrays(est: Any, path: Any) -> dict[str, np.ndarray]:
    name = type(est).__name__
    if name not in _SCHEMA:
        raise ModelFileError(
            f"{path}: cannot save a {name}; model files hold one of {', '.join(_SCHEMA)}."
        )
    if not hasattr(est, "n_features_in_"):
        raise ModelFileError(f"{path}: the {name} is not fitted; call fit(X, y) before saving.")
    if callable(getattr(est, "kernel", None)):
        fn = getattr(est.kernel, "__name__", "a function")
        raise ModelFileError(
            f"{path}: the {name} has a callable kernel ({fn}), and a model file never runs "
            "code when it is loaded, so it cannot "
            "hold one. Fit with kernel='precomputed' (fit on K = k(X, X), predict on "
            "k(X_new, X)) or a named kernel, and save that model.")
    out = {}
    for key, (dtype, _, required) in _SCHEMA[name].items():
        if key in _CSR:
            continue
        value = getattr(est, key, None)
        if key == "support_vectors_" and sp.issparse(value):
            csr = sp.csr_matrix(value)
            csr.sort_indices()
            for part, arr in zip(_CSR, (csr.data, csr.indices, csr.indptr), strict=True):
                out[part] = np.array(arr, dtype=_SCHEMA[name][part][0], order="C")
        elif required or value is not None:  # dual_coef_ of a sparse fit: densified
            value = value.toarray() if sp.issparse(value) else value
            out[key] = np.array(value, dtype=dtype, order="C")
    return out


def _header(est: Any, path: Any, arrays: dict[str, np.ndarray], names: Any) -> dict[str, Any]:
    from optmodels import __version__

    name = type(est).__name__
    params = est.get_params(deep=False)
    p = int(est.n_features_in_)
    own = getattr(est, "feature_names_in_", None)
    names = list(own) if names is None and own is not None else names
    names = [f"x{j + 1}" for j in range(p)] if names is None else [str(s) for s in names]
    if len(names) != p:
        raise ModelFileError(
            f"{path}: feature_names has {len(names)} names but the model has {p} features; "
            "pass one name per column of X."
        )
    if len(set(names)) != p:
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ModelFileError(
            f"{path}: feature_names repeats {twice}; each coefficient needs its own name. "
            "Rename the repeated columns."
        )
    classes, dtype = _encode_classes(getattr(est, "classes_", None), path)
    kernel = getattr(est, "kernel_", None)
    results = est.result_ if isinstance(est.result_, list) else [est.result_]
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "toolkit_version": __version__,
        "problem": PROBLEM_OF[name],
        "estimator": name,
        "hyperparameters": _to_json(params, "hyperparameters", path),
        "strategy": getattr(est, "strategy_", params["strategy"]),  # what ran ('auto' resolved)
        "strategy_options": _to_json(params["strategy_options"], "strategy_options", path),
        "fit": [fit_record(r) for r in results],
        "n_features_in": p,
        "feature_names": names,
        "feature_names_in": own is not None,
        "classes": classes,
        "classes_dtype": dtype,
        "kernel": None if kernel is None else {
            "name": kernel.name, "gamma": float(kernel.gamma), "degree": int(kernel.degree),
            "coef0": float(kernel.coef0)},
        "n_iter": int(est.n_iter_) if np.ndim(est.n_iter_) == 0 else None,
        "arrays_sha256": arrays_sha256(arrays),
    }
    header["header_sha256"] = header_sha256(header)
    return header


def header_sha256(header: Mapping[str, Any]) -> str:
    """SHA-256 of the header's other entries (canonical JSON, sorted keys), so that a changed
    hyperparameter, kernel width or label is detected as well as a changed array."""
    rest = {k: v for k, v in header.items() if k != "header_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def fit_record(res: Any) -> dict[str, Any]:
    """A solve's outcome in JSON terms: strategy, solver, termination, certified, gap, ..."""
    return {
        "strategy": res.strategy,
        "solver": res.solver,
        "termination": res.termination.value,
        "certified": bool(res.certified and res.is_optimal),
        "gap": _finite(res.gap),
        "certificate_tol": float(res.certificate_tol),
        "objective": _finite(res.objective),
        "bound": _finite(res.bound),
        "iterations": int(res.iterations),
    }


def _finite(v: Any) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def arrays_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over the arrays sorted by name: name, dtype, shape and C-order bytes of each."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.array(arrays[key], order="C", copy=True)
        h.update(f"{key}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


_PAIRS_TAG = "__pairs__"


def _to_json(value: Any, where: str, path: Any) -> Any:
    """``value`` as JSON data (numpy scalars unwrapped; a dict with non-str keys, such as a
    class_weight of int labels, as {"__pairs__": [[key, value], ...]}); refuses the rest."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            raise ModelFileError(f"{path}: {where} is {value!r}; model files keep finite numbers.")
        return value
    if isinstance(value, Mapping):
        items = [(_to_json(k, f"a key of {where}", path), _to_json(v, f"{where}[{k!r}]", path))
                 for k, v in value.items()]
        if all(isinstance(k, str) and k != _PAIRS_TAG for k, _ in items):
            return dict(items)
        return {_PAIRS_TAG: [list(kv) for kv in items]}
    if isinstance(value, (list, tuple)):
        return [_to_json(v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    raise ModelFileError(
        f"{path}: {where} holds a {type(value).__name__}; model files keep JSON values only "
        "(None, bool, numbers, str, lists, dicts). Drop it or pass plain values."
    )


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_PAIRS_TAG}:
            return {_hashable(k): _from_json(v) for k, v in value[_PAIRS_TAG]}
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _hashable(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


def _encode_classes(classes: Any, path: Any) -> tuple[list | None, str | None]:
    """(labels as a JSON list, dtype string or "object"); refuses labels that do not round
    trip (other Python objects, NaN, numpy types JSON cannot hold)."""
    if classes is None:
        return None, None
    arr = np.asarray(classes)
    dtype = "object" if arr.dtype.kind == "O" else arr.dtype.str
    if arr.dtype.kind not in _LABEL_KINDS + "O":
        dtype = "?"
    labels = arr.tolist()
    try:
        text = json.dumps(labels, allow_nan=False)
        back = _decode_classes(json.loads(text), dtype)
        same = back.dtype == arr.dtype and all(
            type(a) is type(b) and a == b for a, b in zip(back.tolist(), labels, strict=True))
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ModelFileError(
            f"{path}: the class labels {labels[:5]!r} (dtype {arr.dtype}) do not survive a JSON "
            "round trip; model files keep labels of type str, int, float (finite) or bool. "
            "Encode the labels as such (e.g. with LabelEncoder) and refit."
        )
    return labels, dtype


def _decode_classes(labels: list, dtype: str) -> np.ndarray:
    if dtype == "object":
        if not all(isinstance(v, (str, int, float, bool)) for v in labels):
            raise ValueError("labels of JSON scalar types expected")
        out = np.empty(len(labels), dtype=object)
        out[:] = labels
        return out
    dt = np.dtype(dtype)
    if dt.kind not in _LABEL_KINDS:
        raise ValueError(f"label dtype {dtype!r} is not one of bool, int, float, str")
    return np.array(labels, dtype=dt)


# ---- loading -----------------------------------------------------------------------------------
def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked JSON header of a model file (see the module docstring for what is refused)."""
    with _open(path) as z:
        return _check_header(z, path)


def load_model(path: str | os.PathLike[str]) -> Any:
    """The fitted estimator saved in ``path``, rebuilt from its arrays and header (no code runs
    from the file); raises :class:`ModelFileError` for anything but an intact model file."""
    return read_model(path)[0]


def read_model(path: str | os.PathLike[str]) -> tuple[Any, dict[str, Any]]:
    """(estimator, header) of a model file, as :func:`load_model` and :func:`read_header`."""
    with _open(path) as z:
        header = _check_header(z, path)
        arrays = _read_arrays(z, header, path)
    return _rebuild(header, arrays, path), header


def _refuse(path: Any, why: str) -> ModelFileError:
    return ModelFileError(f"{path}: {why}")


def _open(path: Any) -> Any:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such model file; check the path (--model).")
    not_model = "not an optmodels model file (expected the .npz that 'optmodels fit' writes)"
    if not zipfile.is_zipfile(path):
        raise _refuse(path, not_model)
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise _refuse(path, f"{not_model}: {exc}") from None
    if HEADER_KEY not in z.files:
        z.close()
        raise _refuse(path, f"{not_model}: it has no {HEADER_KEY} entry")
    return z


def _check_header(z: Any, path: Any) -> dict[str, Any]:
    try:
        raw = z[HEADER_KEY]
        text = str(raw[()]) if raw.dtype.kind == "U" and raw.ndim == 0 else None
    except (ValueError, zipfile.BadZipFile, OSError) as exc:
        raise _refuse(path, f"the header cannot be read ({exc}); the file is damaged") from None
    try:
        header = None if text is None else json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise _refuse(path, f"the header is not valid JSON of finite numbers ({exc}); the file "
                      "was altered or damaged. Refit and save again.") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _refuse(path, f"not an optmodels model file (no {FORMAT!r} header)")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise _refuse(
            path, f"model format version {version!r} (toolkit {header.get('toolkit_version')}); "
            f"this toolkit reads version {FORMAT_VERSION} only. Refit with 'optmodels fit' and "
            "save again.")
    keys = set(header)
    if keys != set(_HEADER_KEYS):
        extra, missing = sorted(keys - set(_HEADER_KEYS)), sorted(set(_HEADER_KEYS) - keys)
        raise _refuse(path, f"the header has unexpected keys {extra} / lacks {missing}; the "
                      "file was altered. Refit and save again.")
    if header["header_sha256"] != header_sha256(header):
        raise _refuse(path, "the header does not match its SHA-256; the file was altered or "
                      "damaged. Refit and save again.")
    if header["estimator"] not in _SCHEMA or header["problem"] != PROBLEM_OF[header["estimator"]]:
        raise _refuse(path, f"unknown estimator {header['estimator']!r} for problem "
                      f"{header['problem']!r}; model files hold {', '.join(_SCHEMA)}.")
    classifier = _SCHEMA[header["estimator"]] is _PAIRS
    classes, kernel = header["classes"], header["kernel"]
    labelled = isinstance(classes, list) and len(classes) >= 2 and isinstance(kernel, dict)
    if labelled != classifier or not isinstance(header["n_features_in"], int):
        raise _refuse(path, "the header's classes, kernel or n_features_in do not fit a "
                      f"{header['estimator']}; the file was altered. Refit and save again.")
    why = _header_problem(header, classifier)
    if why:
        raise _refuse(path, f"{why}; the file was altered. Refit and save again.")
    return header


def _no_constant(name: str) -> Any:
    """``json.loads``' hook for NaN / Infinity / -Infinity: model files hold finite numbers."""
    raise ValueError(f"{name} is not a finite number")


_KERNEL_KEYS = {"name": str, "gamma": (int, float), "degree": int, "coef0": (int, float)}
_FIT_KEYS = {"strategy": str, "solver": str, "termination": str, "certified": bool,
             "gap": (int, float, type(None)), "certificate_tol": (int, float),
             "objective": (int, float, type(None)), "bound": (int, float, type(None)),
             "iterations": int}


def _is(value: Any, types: Any) -> bool:
    """``isinstance`` where a bool is not an int (JSON true is no count of features)."""
    if isinstance(value, bool):
        return types is bool or (isinstance(types, tuple) and bool in types)
    return isinstance(value, types)


def _header_problem(header: dict[str, Any], classifier: bool) -> str | None:
    """What is wrong with the header's values (types, counts, ranges), or None.

    Checked against what the estimator needs: p >= 1 features with p distinct string names,
    distinct labels, a kernel of the four known entries, one fit record per solve of the
    known keys, the per-fit iteration count of a regressor; :func:`_rebuild` checks the
    hyperparameters and strategy by the estimator's own tables."""
    p, names = header["n_features_in"], header["feature_names"]
    if _is(p, bool) or p < 1:
        return f"n_features_in is {p!r}, not a count >= 1"
    if not (isinstance(names, list) and len(names) == p and all(_is(n, str) for n in names)):
        return f"feature_names is not a list of {p} strings (n_features_in)"
    if len(set(names)) != p:
        return "feature_names repeats a name"
    for key, types in (("toolkit_version", str), ("strategy", str), ("feature_names_in", bool),
                       ("hyperparameters", dict), ("strategy_options", (dict, type(None))),
                       ("arrays_sha256", str), ("classes_dtype", (str, type(None)))):
        if not _is(header[key], types):
            return f"{key} has the wrong type ({type(header[key]).__name__})"
    k = len(header["classes"] or [])
    if classifier:
        classes = header["classes"]
        if any(not _is(c, (str, int, float, bool)) for c in classes) or len(
                {(type(c), c) for c in classes}) != k:
            return "the classes are not distinct labels of type str, int, float or bool"
        kernel = header["kernel"]
        if set(kernel) != set(_KERNEL_KEYS) or not all(
                _is(kernel[key], t) for key, t in _KERNEL_KEYS.items()):
            return f"the kernel {kernel!r} is not {{name, gamma, degree, coef0}}"
        if header["n_iter"] is not None:
            return "n_iter is set for a classifier (its iterations are per pair, n_iter_)"
    elif any(header[key] is not None for key in ("classes", "classes_dtype", "kernel")):
        return "a regressor's header has classes or a kernel"
    elif not (_is(header["n_iter"], int) and header["n_iter"] >= 0):
        return f"n_iter is {header['n_iter']!r}, not a count >= 0"
    fits, solves = header["fit"], k * (k - 1) // 2 if classifier else 1
    if not (isinstance(fits, list) and len(fits) == solves):
        return f"fit does not hold one record per solve ({solves})"
    for record in fits:
        if not (isinstance(record, dict) and set(record) == set(_FIT_KEYS) and all(
                _is(record[key], t) for key, t in _FIT_KEYS.items())):
            return f"a fit record is not {{{', '.join(_FIT_KEYS)}}} of the right types"
        if record["iterations"] < 0:
            return "a fit record has a negative iteration count"
    return None


def _read_arrays(z: Any, header: dict[str, Any], path: Any) -> dict[str, np.ndarray]:
    schema = _SCHEMA[header["estimator"]]
    names = [f for f in z.files if f != HEADER_KEY]
    unexpected = sorted(set(names) - set(schema))
    missing = sorted(k for k, (_, _, req) in schema.items() if req and k not in names)
    if schema is _PAIRS:  # the dense support vectors or all three CSR arrays, not both
        csr = [k for k in _CSR if k in names]
        if "support_vectors_" in names:
            unexpected += csr
        elif len(csr) != len(_CSR):
            missing += [k for k in ("support_vectors_", *_CSR) if k not in names]
    if unexpected or missing:
        raise _refuse(path, f"unexpected arrays {unexpected} / missing arrays {missing} for a "
                      f"{header['estimator']}; the file was altered. Refit and save again.")
    arrays = {}
    for key in names:
        try:
            arrays[key] = z[key]
        except ValueError:  # an object array needs pickle, which is never enabled
            raise _refuse(path, f"array {key!r} holds Python objects (pickle); model files "
                          "hold plain numeric arrays only. The file is refused.") from None
    _check_shapes(arrays, schema, header, path)
    if arrays_sha256(arrays) != header["arrays_sha256"]:
        raise _refuse(path, "the arrays do not match the header's SHA-256; the file was altered "
                      "or damaged. Refit and save again.")
    why = _array_problem(arrays, header)
    if why:
        raise _refuse(path, f"{why}; the file was altered. Refit and save again.")
    return arrays


def _array_problem(arrays: dict[str, np.ndarray], header: dict[str, Any]) -> str | None:
    """What is wrong with the arrays' values, or None: NaN or infinity (the one exception:
    ``dual_coef_`` of a linear-kernel classifier, NaN where the primal solve gave no alphas,
    unused since prediction goes through ``coef_``), negative indices or counts, ``coef_``
    without the linear kernel (or missing with it), Platt's ``probA_`` / ``probB_`` without
    ``probability=True`` (or missing with it)."""
    linear_kernel = (header["kernel"] or {}).get("name") == "linear"
    for key, a in arrays.items():
        if a.dtype.kind == "f":
            bad = np.isinf(a) if key == "dual_coef_" and linear_kernel else ~np.isfinite(a)
            if bad.any():
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                return f"array {key!r} holds {float(a[at])!r} at {at}: not a finite number"
        elif (a < 0).any():
            return f"array {key!r} holds a negative index or count ({int(a.min())})"
    if _SCHEMA[header["estimator"]] is _PAIRS:
        why = _csr_problem(arrays, header)
        if why:
            return why
        if ("coef_" in arrays) != linear_kernel:
            return (f"array 'coef_' is {'present' if 'coef_' in arrays else 'missing'} with "
                    f"kernel {header['kernel']['name']!r} (a classifier has coef_ exactly when "
                    "its kernel is linear)")
        probability = header["estimator"] == "SVMClassifier" and bool(
            header["hyperparameters"].get("probability"))
        for key in ("probA_", "probB_"):
            if (key in arrays) != probability:
                return (f"array {key!r} is {'present' if key in arrays else 'missing'} but "
                        f"the model has probability={probability}")
    return None


def _csr_problem(arrays: dict[str, np.ndarray], header: dict[str, Any]) -> str | None:
    """What is wrong with the CSR arrays of sparse support vectors, or None: indptr must start
    at 0, never decrease and end at nnz; the column indices of a row must increase strictly and
    stay below p; a precomputed kernel has no support vectors to store sparse."""
    if "support_vectors_data" not in arrays:
        return None
    if header["kernel"]["name"] == "precomputed":
        return "support vectors are stored sparse for kernel 'precomputed' (it keeps none)"
    indptr, indices = arrays["support_vectors_indptr"], arrays["support_vectors_indices"]
    if indptr[0] != 0 or indptr[-1] != indices.size or (np.diff(indptr) < 0).any():
        return (f"array 'support_vectors_indptr' is not a CSR row pointer (0, non-decreasing, "
                f"ending at {indices.size} entries)")
    if indices.size and indices.max() >= header["n_features_in"]:
        return (f"array 'support_vectors_indices' holds column {int(indices.max())}, beyond "
                f"the {header['n_features_in']} features")
    starts = np.zeros(indices.size, dtype=bool)
    starts[indptr[:-1][indptr[:-1] < indices.size]] = True
    if (np.diff(indices)[~starts[1:]] <= 0).any():
        return "array 'support_vectors_indices' repeats or unsorts the columns of a row"
    return None


def _check_shapes(arrays: dict, schema: dict, header: dict, path: Any) -> None:
    """Each array's dtype exactly as the schema, and its shape from the header's p and k."""
    for key, a in arrays.items():
        if a.dtype.str != schema[key][0]:
            raise _refuse(path, f"array {key!r} has dtype {a.dtype.str}, expected "
                          f"{schema[key][0]}; the file was altered. Refit and save again.")
    p = header["n_features_in"]
    k = len(header["classes"] or [])
    dims = {"p": p, "k": k, "k-1": k - 1, "m": k * (k - 1) // 2}
    if "n_support_" in arrays:
        dims["s"] = int(arrays["n_support_"].sum())
        dims["s+1"] = dims["s"] + 1
    if "support_vectors_data" in arrays:
        dims["nnz"] = arrays["support_vectors_data"].shape[0] if arrays[
            "support_vectors_data"].ndim == 1 else -1
    precomputed = (header["kernel"] or {}).get("name") == "precomputed"
    for key, a in arrays.items():
        want = tuple(dims.get(d, -1) for d in schema[key][1])
        if key == "support_vectors_" and precomputed:
            want = (0, 0)  # as SVC: the support rows are columns of the kernel matrix
        if a.shape != want:
            raise _refuse(path, f"array {key!r} has shape {a.shape}, expected {want} (from the "
                          "header's features and classes); the file was altered. Refit and save "
                          "again.")


def _rebuild(header: dict[str, Any], arrays: dict[str, np.ndarray], path: Any) -> Any:
    """A new estimator of the header's class with its hyperparameters and learned attributes."""
    cls = estimator_classes()[header["estimator"]]
    params = _from_json(header["hyperparameters"])
    expected = set(cls().get_params(deep=False))
    if set(params) != expected:
        extra, missing = sorted(set(params) - expected), sorted(expected - set(params))
        raise _refuse(path, f"the hyperparameters have unexpected names {extra} / lack "
                      f"{missing} for {cls.__name__}; the file was altered. Refit and save again.")
    est = cls(**params)
    hyper = _checked_hyperparameters(est, header, path)
    p = int(header["n_features_in"])
    est.n_features_in_ = p
    if header["feature_names_in"]:
        est.feature_names_in_ = np.array(header["feature_names"], dtype=object)
    for key, a in arrays.items():
        if key not in _CSR:
            setattr(est, key, a)
    if "support_vectors_data" in arrays:  # a sparse fit: CSR as the fitted estimator's
        est.support_vectors_ = sp.csr_matrix(
            tuple(arrays[k] for k in _CSR), shape=(int(arrays["n_support_"].sum()), p))
        est.dual_coef_ = sp.csr_matrix(est.dual_coef_)
    est.strategy_ = str(header["strategy"])  # the strategy the fit ran ('auto' resolved)
    if _SCHEMA[header["estimator"]] is _LINEAR:
        est.intercept_ = float(arrays["intercept_"])
        est.n_iter_ = int(header["n_iter"] or 0)
        return est
    try:
        est.classes_ = _decode_classes(header["classes"], header["classes_dtype"])
        from solvers.kernels import Kernel

        est.kernel_ = Kernel(**header["kernel"])
        est._class_weights(np.ones(len(est.classes_)))  # class_weight's keys are labels
    except (TypeError, ValueError) as exc:
        raise _refuse(path, f"the header's classes, kernel or class_weight are invalid ({exc}); "
                      "the file was altered. Refit and save again.") from None
    _check_kernel(header["kernel"], hyper, path)
    return est


def _checked_hyperparameters(est: Any, header: dict[str, Any], path: Any) -> dict[str, Any]:
    """The hyperparameters validated by the estimator's own table (as ``fit`` does), the
    strategy the fit ran among the problem's, its options by that strategy's table."""
    from optmodels.strategies import strategies_for

    try:
        hyper = est._hyperparameters()
        ran = header["strategy"]
        if ran not in strategies_for(header["problem"]):
            raise ValueError(f"the strategy {ran!r} that ran is not a strategy of "
                             f"{header['problem']}")
        if header["strategy_options"] != header["hyperparameters"]["strategy_options"]:
            raise ValueError("strategy_options differs from hyperparameters['strategy_options']")
        est._strategy_options(ran)
    except (TypeError, ValueError) as exc:
        raise _refuse(path, f"the header's hyperparameters are invalid: {_one_line(exc)} The "
                      "file was altered. Refit and save again.") from None
    return hyper


def _check_kernel(kernel: dict[str, Any], hyper: dict[str, Any], path: Any) -> None:
    """The header's kernel is the one its hyperparameters give (gamma: the number given, or
    the one 'scale' / 'auto' resolved to at fit time)."""
    given = {"name": hyper["kernel"], "degree": hyper["degree"], "coef0": hyper["coef0"]}
    if not isinstance(hyper["gamma"], str):
        given["gamma"] = hyper["gamma"]
    differ = [key for key, v in given.items() if kernel[key] != v]
    if differ:
        raise _refuse(path, f"the kernel's {', '.join(differ)} differ from the hyperparameters "
                      f"({kernel} against {given}); the file was altered. Refit and save again.")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
