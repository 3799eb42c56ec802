"""Read and write data sets as ``.csv``, svmlight/LIBSVM text or ``.npz``.

:func:`load` and :func:`save` pick the format from the file extension:

========================  ======================================================================
``.csv``                  header row of column names, one numeric row per data point; the target
                          and (optional) weight columns are chosen by name, every other column
                          is a feature. Empty cells and ``nan`` read as NaN.
``.svm .libsvm .txt``     svmlight/LIBSVM: ``label idx:value idx:value ...`` per line, indices
                          1-based, zeros omitted, ``qid:`` tokens ignored, ``#`` starts a comment.
``.npz``                  NumPy archive with arrays ``X``, ``y`` and optionally ``sample_weight``
                          and ``feature_names``.
========================  ======================================================================

svmlight has no place for weights or names, so :func:`save` keeps them in comments that other
readers (LIBSVM, scikit-learn) ignore: a header line ``# n_features: p`` (so all-zero trailing
columns survive a round trip), ``# feature_names: a,b,c`` when names are given, and a trailing
``# sample_weight: w`` on every data line when weights are given. :func:`load` reads them back.

Invariants: :func:`load` never validates finiteness (the problem classes do; NaN cells come
back as NaN); :func:`save` refuses NaN/inf and writes atomically (a temporary file in the
target directory, then ``os.replace``, see :mod:`instances.atomic`), so a failed save leaves any
existing file untouched and never leaves a partial one; files get the mode ``0o666 & ~umask``.
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from instances.atomic import atomic_write

__all__ = ["Data", "DataFileError", "load", "save", "SUPPORTED_EXTENSIONS"]

_SVM_EXTS = (".svm", ".libsvm", ".txt")
SUPPORTED_EXTENSIONS = (".csv", *_SVM_EXTS, ".npz")
_WEIGHT_COLUMN = "sample_weight"


class Data(NamedTuple):
    """A data set: features, targets, optional sample weights and feature names."""

    X: np.ndarray
    """Features, ``float64`` of shape (n, p)."""
    y: np.ndarray
    """Targets (or labels), ``float64`` of shape (n,)."""
    sample_weight: np.ndarray | None
    """Weights of shape (n,), or ``None``."""
    feature_names: list[str]
    """``p`` column names (``x1 .. xp`` when the file has none)."""


class DataFileError(ValueError):
    """A data file cannot be read or written; the message names the path and the fix."""


# --- dispatch --------------------------------------------------------------------------------


def _format_of(path: Path) -> str:
    ext = path.suffix.lower()
    if ext == ".csv":
        return "csv"
    if ext in _SVM_EXTS:
        return "svmlight"
    if ext == ".npz":
        return "npz"
    raise DataFileError(
        f"{path}: unknown file extension {ext or '(none)'!r}. Supported extensions: "
        f"{', '.join(SUPPORTED_EXTENSIONS)}; rename the file or convert it to one of these."
    )


def load(path: str | os.PathLike[str], *, target: str = "y", weight: str | None = None) -> Data:
    """Read a data set, choosing the format from the extension.

    Parameters
    ----------
    path : str or path-like
        File ending in ``.csv``, ``.svm``, ``.libsvm``, ``.txt`` or ``.npz``.
    target : str, default="y"
        Name of the target column (``.csv``) or array (``.npz``). svmlight files hold the
        target as the first token of each line; any other value than ``"y"`` is an error there.
    weight : str or None, default=None
        Name of the sample-weight column (``.csv``) or array (``.npz``). ``None`` uses a
        column/array named ``"sample_weight"`` if there is one (what :func:`save` writes) and
        gives ``sample_weight=None`` otherwise. svmlight weights come from ``# sample_weight:``
        comments.

    Returns
    -------
    Data
        ``X`` float64 (n, p), ``y`` float64 (n,), ``sample_weight`` (n,) or None, names.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    DataFileError
        (a ``ValueError``) unknown extension, unreadable file, ragged rows, non-numeric
        values, missing target/weight column; the message names the path and what to do.
    """
    path = Path(path)
    fmt = _format_of(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no such data file (working directory {Path.cwd()}). Check the path."
        )
    if fmt == "svmlight" and (target != "y" or weight is not None):
        raise DataFileError(
            f"{path}: svmlight files hold the target as the first token of each line and "
            f"weights in '# sample_weight:' comments; the 'target' ({target!r}) and 'weight' "
            f"({weight!r}) arguments apply to .csv and .npz only. Drop them."
        )
    reader: dict[str, Callable[..., Data]] = {
        "csv": _load_csv, "svmlight": _load_svmlight, "npz": _load_npz
    }
    try:
        return reader[fmt](path, target=target, weight=weight)
    except (OSError, UnicodeDecodeError, csv.Error, zipfile.BadZipFile, _NotNpz) as exc:
        raise DataFileError(
            f"{path}: cannot read the file as {fmt} ({type(exc).__name__}: {exc}). Check that "
            f"it is a readable {fmt} file and that its extension matches its content."
        ) from exc


def _default_names(p: int) -> list[str]:
    return [f"x{j + 1}" for j in range(p)]


# --- csv -------------------------------------------------------------------------------------


def _to_float_matrix(
    path: Path, rows: list[list[str]], header: list[str], lines: list[int]
) -> np.ndarray:
    """Convert string cells to float64; empty cells become NaN; name the first bad cell."""
    try:
        A = np.array(rows, dtype=np.float64)
    except ValueError:
        A = None
    if A is not None:
        return A.reshape(len(rows), len(header))
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if cell.strip() == "":
                row[j] = "nan"
                continue
            try:
                float(cell)
            except ValueError:
                raise DataFileError(
                    f"{path}: line {lines[i]}, column {header[j]!r}: {cell!r} is not a number. "
                    "All columns must be numeric; encode categories as numbers first."
                ) from None
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(header))


def _pick_column(
    path: Path, header: list[str], name: str, role: str, arg: str
) -> int:
    if name not in header:
        raise DataFileError(
            f"{path}: no {role} column named {name!r}. Available columns: "
            f"{', '.join(repr(h) for h in header)}. Pass {arg}=<one of these>."
        )
    if header.count(name) > 1:
        raise DataFileError(f"{path}: column name {name!r} appears more than once; rename it.")
    return header.index(name)


def _load_csv(path: Path, *, target: str, weight: str | None) -> Data:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        rows: list[list[str]] = []
        lines: list[int] = []
        for r in reader:
            if r and any(c.strip() for c in r):
                rows.append(r)
                lines.append(reader.line_num)
    if not rows:
        raise DataFileError(f"{path}: the file is empty; a header row and data rows are needed.")
    header = [h.strip() for h in rows[0]]
    if all(_is_number(h) for h in header):
        raise DataFileError(
            f"{path}: the first row {rows[0][:5]} looks numeric, but a header row of column "
            f"names is required (e.g. x1,...,y). Add one."
        )
    body, lines = rows[1:], lines[1:]
    if not body:
        raise DataFileError(f"{path}: the header is not followed by any data rows; add some.")
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise DataFileError(
                f"{path}: ragged rows: data row {i + 1} (line {lines[i]}) has {len(r)} fields but "
                f"the header has {len(header)}. Fix the row or the header."
            )
    A = _to_float_matrix(path, body, header, lines)
    t = _pick_column(path, header, target, "target", "target")
    if weight is None and _WEIGHT_COLUMN in header and target != _WEIGHT_COLUMN:
        weight = _WEIGHT_COLUMN
    w = None if weight is None else _pick_column(path, header, weight, "weight", "weight")
    if w == t:
        raise DataFileError(f"{path}: target and weight both name column {target!r}.")
    feats = [j for j in range(len(header)) if j not in (t, w)]
    sw = None if w is None else np.ascontiguousarray(A[:, w])
    return Data(np.ascontiguousarray(A[:, feats]), np.ascontiguousarray(A[:, t]), sw,
                [header[j] for j in feats])


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# --- svmlight --------------------------------------------------------------------------------


def _svm_header(
    comment: str, n_features: int, names: list[str] | None
) -> tuple[int, list[str] | None]:
    """Read a ``# n_features: p`` or ``# feature_names: a,b`` header comment (others pass)."""
    key, _, value = comment.partition(":")
    key = key.strip()
    if key == "n_features" and value.strip().isdigit():
        n_features = int(value)
    elif key == "feature_names":
        names = [s.strip() for s in value.split(",")]
    return n_features, names


def _load_svmlight(path: Path, *, target: str, weight: str | None) -> Data:
    """Parse svmlight text: a Python pass splits lines, one numpy pass converts all pairs."""
    labels: list[str] = []
    counts: list[int] = []
    pairs: list[str] = []
    weights: list[str] = []
    n_features, names = 0, None
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            data, _, comment = line.partition("#")
            tokens = data.split()
            if not tokens:
                if not labels:  # header comments come before the first data line
                    n_features, names = _svm_header(comment, n_features, names)
                continue
            c = comment.strip()
            if c.startswith(_WEIGHT_COLUMN + ":"):
                weights.append(c[len(_WEIGHT_COLUMN) + 1:].strip())
            feats = [t for t in tokens[1:] if not t.startswith("qid:")]
            if any(t.count(":") != 1 for t in feats) or ":" in tokens[0]:
                raise DataFileError(
                    f"{path}: line {lineno} is not svmlight ('label idx:value ...'): "
                    f"{data.strip()[:80]!r}. Check the format or the file extension."
                )
            labels.append(tokens[0])
            counts.append(len(feats))
            pairs.extend(feats)
    if not labels:
        raise DataFileError(f"{path}: no data lines found; the file is empty or all comments.")
    y = _floats(path, labels, "label")
    flat = " ".join(pairs).replace(":", " ").split()
    iv = _floats(path, flat, "index:value pair").reshape(-1, 2)
    idx, val = iv[:, 0], iv[:, 1]
    if idx.size and (np.any(idx < 1) or np.any(idx != np.floor(idx))):
        raise DataFileError(
            f"{path}: feature indices must be whole numbers >= 1 (svmlight is 1-based); "
            f"found {idx[(idx < 1) | (idx != np.floor(idx))][0]!r}. Shift zero-based indices by 1."
        )
    rows = np.repeat(np.arange(len(labels)), counts)
    cols = idx.astype(np.int64) - 1
    p = max(n_features, int(cols.max()) + 1 if cols.size else 0)
    X = np.zeros((len(labels), p))
    flat_pos = rows * p + cols
    uniq, first, times = np.unique(flat_pos, return_index=True, return_counts=True)
    if uniq.size != flat_pos.size:
        k = int(first[np.argmax(times > 1)])
        raise DataFileError(
            f"{path}: feature index {int(cols[k]) + 1} appears twice in data line "
            f"{int(rows[k]) + 1}; each index may appear once per line. Merge the duplicates."
        )
    X.ravel()[flat_pos] = val
    sw = None
    if weights:
        if len(weights) != len(labels):
            raise DataFileError(
                f"{path}: {len(weights)} of {len(labels)} lines carry a '# sample_weight:' "
                "comment; give every line one or none."
            )
        sw = _floats(path, weights, "sample_weight")
    if names is None or len(names) != p:
        names = _default_names(p)
    return Data(X, y, sw, names)


def _floats(path: Path, tokens: Sequence[str], what: str) -> np.ndarray:
    try:
        return np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next(t for t in tokens if not _is_number(t))
        raise DataFileError(
            f"{path}: {what} {bad!r} is not a number. svmlight lines are "
            "'label idx:value ...' with numeric label, integer idx and numeric value."
        ) from None


# --- npz -------------------------------------------------------------------------------------


class _NotNpz(Exception):
    """Raised inside :func:`load` when numpy does not see a zip archive."""


def _load_npz(path: Path, *, target: str, weight: str | None) -> Data:
    if not zipfile.is_zipfile(path):
        raise _NotNpz("not a zip archive")
    with np.load(path, allow_pickle=False) as z:
        keys = list(z.files)
        for name, role in (("X", "features"), (target, "target")):
            if name not in keys:
                raise DataFileError(
                    f"{path}: no {role} array {name!r}; arrays present: {keys}. Save with "
                    "instances.io.save or pass target=<one of these>."
                )
        if weight is None and _WEIGHT_COLUMN in keys:
            weight = _WEIGHT_COLUMN
        if weight is not None and weight not in keys:
            raise DataFileError(
                f"{path}: no weight array {weight!r}; arrays present: {keys}. Pass weight=None "
                "or one of these."
            )
        try:
            X = _numeric(path, z["X"], "X")
            y = _numeric(path, z[target], target)
            sw = None if weight is None else _numeric(path, z[weight], weight)
            names = [str(s) for s in z["feature_names"]] if "feature_names" in keys else None
        except ValueError as exc:  # object arrays need pickle, which load never enables
            if isinstance(exc, DataFileError):
                raise
            raise DataFileError(
                f"{path}: an array holds Python objects ({exc}); save plain numeric arrays."
            ) from exc
    if X.ndim != 2 or y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise DataFileError(
            f"{path}: X must be 2-D and y 1-D with as many rows; got X{X.shape}, y{y.shape}."
        )
    if sw is not None and sw.shape != y.shape:
        raise DataFileError(f"{path}: sample_weight has shape {sw.shape}, expected {y.shape}.")
    if names is None or len(names) != X.shape[1]:
        names = _default_names(X.shape[1])
    return Data(X, y, sw, names)


def _numeric(path: Path, a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype.kind not in "biuf":
        raise DataFileError(
            f"{path}: array {name!r} has dtype {a.dtype}, not numeric; store real numbers."
        )
    return np.asarray(a, dtype=np.float64)


# --- save ------------------------------------------------------------------------------------


def _check_finite(name: str, a: np.ndarray) -> None:
    if np.isnan(a).any():
        raise ValueError(
            f"{name} contains NaN (first at flat index {int(np.flatnonzero(np.isnan(a))[0])}); "
            "remove or impute missing values before saving."
        )
    if np.isinf(a).any():
        raise ValueError(
            f"{name} contains infinity (first at flat index "
            f"{int(np.flatnonzero(np.isinf(a))[0])}); replace infinite values before saving."
        )


def _as_arrays(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, p); got shape {X.shape}. Reshape your data.")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got {y.shape}.")
    sw = None
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64)
        if sw.shape != y.shape:
            raise ValueError(f"sample_weight must have shape {y.shape}; got {sw.shape}.")
    for name, a in (("X", X), ("y", y), ("sample_weight", sw)):
        if a is not None:
            _check_finite(name, a)
    return X, y, sw


def save(
    path: str | os.PathLike[str],
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    *,
    feature_names: Sequence[str] | None = None,
) -> None:
    """Write a data set atomically, choosing the format from the extension.

    Values are written as shortest round-trip decimals (binary in ``.npz``), so
    :func:`load` returns the same float64 values. In ``.csv`` the columns are the feature
    names, then ``y``, then ``sample_weight`` if given.

    Parameters
    ----------
    path : str or path-like
        Destination ending in ``.csv``, ``.svm``, ``.libsvm``, ``.txt`` or ``.npz``; its
        directory must exist. An existing file is replaced only once the new one is complete.
    X : array-like of shape (n, p)
    y : array-like of shape (n,)
    sample_weight : array-like of shape (n,), optional
    feature_names : sequence of p str, optional
        Defaults to ``x1 .. xp``. Must not include ``y`` or ``sample_weight`` (csv columns).

    Raises
    ------
    ValueError
        Bad shapes, NaN or infinity in ``X``, ``y`` or ``sample_weight`` (the message names
        the array), bad feature names, or an unknown extension. Nothing is written.
    """
    path = Path(path)
    fmt = _format_of(path)
    X, y, sw = _as_arrays(X, y, sample_weight)
    names = _check_names(feature_names, X.shape[1])
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path}: directory {path.parent} does not exist; create it.")
    writer = {"csv": _write_csv, "svmlight": _write_svmlight, "npz": _write_npz}[fmt]
    with atomic_write(path) as fh:
        writer(fh, X, y, sw, names)


def _check_names(feature_names: Sequence[str] | None, p: int) -> list[str]:
    if feature_names is None:
        return _default_names(p)
    names = [str(s) for s in feature_names]
    if len(names) != p:
        raise ValueError(f"feature_names has {len(names)} names but X has {p} columns.")
    reserved = {"y", _WEIGHT_COLUMN} & set(names)
    if reserved or len(set(names)) != p:
        raise ValueError(
            "feature_names must be distinct and must not use the reserved names 'y' and "
            f"'sample_weight'; got {names}."
        )
    return names


def _fmt(a: np.ndarray) -> list[str]:
    """Shortest decimal strings that read back as the same float64 (Python's float repr)."""
    return [repr(v) for v in a.tolist()]


def _write_csv(fh: io.BufferedWriter, X: np.ndarray, y: np.ndarray,
               sw: np.ndarray | None, names: list[str]) -> None:
    cols = [X, y[:, None]] + ([] if sw is None else [sw[:, None]])
    A = np.hstack(cols)
    header = names + ["y"] + ([] if sw is None else [_WEIGHT_COLUMN])
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerow(header)
    text.writelines(",".join(map(repr, row)) + "\n" for row in A.tolist())
    fh.write(text.getvalue().encode("utf-8"))


def _write_svmlight(fh: io.BufferedWriter, X: np.ndarray, y: np.ndarray,
                    sw: np.ndarray | None, names: list[str]) -> None:
    head = [f"# n_features: {X.shape[1]}"]
    if not any("," in s or "\n" in s for s in names):
        head.append("# feature_names: " + ",".join(names))
    lines = head
    ys = _fmt(y)
    wt = None if sw is None else _fmt(sw)
    for i in range(X.shape[0]):
        nz = np.flatnonzero(X[i])
        vals = X[i, nz].tolist()
        pairs = " ".join(f"{j + 1}:{v!r}" for j, v in zip(nz.tolist(), vals, strict=True))
        line = f"{ys[i]} {pairs}".rstrip()
        if wt is not None:
            line += f" # {_WEIGHT_COLUMN}: {wt[i]}"
        lines.append(line)
    fh.write(("\n".join(lines) + "\n").encode("utf-8"))


def _write_npz(fh: io.BufferedWriter, X: np.ndarray, y: np.ndarray,
               sw: np.ndarray | None, names: list[str]) -> None:
    arrays = {"X": X, "y": y, "feature_names": np.array(names, dtype=str)}
    if sw is not None:
        arrays[_WEIGHT_COLUMN] = sw
    np.savez(fh, **arrays)
