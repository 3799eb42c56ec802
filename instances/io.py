"""Read and write data sets as ``.csv``, svmlight/LIBSVM text or ``.npz``.

:func:`load` and :func:`save` pick the format from the file extension:

========================  ======================================================================
``.csv``                  header row of column names, one numeric row per data point; the target
                          and (optional) weight columns are chosen by name, every other column
                          is a feature. Empty cells and ``nan`` read as NaN. Parsed by pandas'
                          C parser (cells read as Python's ``float`` would read them, on every
                          pandas). Repeated column names and NUL bytes are refused.
``.svm .libsvm .txt``     svmlight/LIBSVM: ``label idx:value idx:value ...`` per line, indices
                          1-based and increasing, zeros omitted, a ``qid:`` after the label
                          ignored, ``#`` starts a comment. Parsed by scikit-learn's
                          ``load_svmlight_file``; ``X`` comes back as a ``scipy.sparse`` CSR
                          matrix (the problem classes densify it). At most
                          :data:`MAX_SVMLIGHT_FEATURES` (10^7) columns unless ``n_features``.
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
import itertools
import os
import re
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import numpy as np

from instances.atomic import atomic_write
from solvers.validation import check_finite, check_int

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Data", "DataFileError", "default_names", "load", "save", "SUPPORTED_EXTENSIONS"]

_SVM_EXTS = (".svm", ".libsvm", ".txt")
SUPPORTED_EXTENSIONS = (".csv", *_SVM_EXTS, ".npz")
_WEIGHT_COLUMN = "sample_weight"

MAX_SVMLIGHT_FEATURES = 10**7
"""The most columns an svmlight file may give without ``load(..., n_features=N)``: an index is a
column number, so one stray index of 2*10^9 would make 2*10^9 columns (and as many feature
names, about 3.5 GB); the problem classes densify X (8 bytes per row and column)."""
_INDEX_MAX = 2**31 - 1  # scikit-learn's parser stores indices as C ints


class Data(NamedTuple):
    """A data set: features, targets, optional sample weights and feature names."""

    X: np.ndarray | sp.csr_matrix
    """Features, ``float64`` of shape (n, p): a dense array, or a CSR matrix from svmlight
    files (the problem classes densify it in ``check_array``)."""
    y: np.ndarray | None
    """Targets (or labels), ``float64`` of shape (n,); ``None`` from ``load(path, target=None)``."""
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


def load(
    path: str | os.PathLike[str],
    *,
    target: str | None = "y",
    weight: str | None = None,
    n_features: int | None = None,
) -> Data:
    """Read a data set, choosing the format from the extension.

    Parameters
    ----------
    path : str or path-like
        File ending in ``.csv``, ``.svm``, ``.libsvm``, ``.txt`` or ``.npz``.
    target : str or None, default="y"
        Name of the target column (``.csv``) or array (``.npz``). svmlight files hold the
        target as the first token of each line; any other value than ``"y"`` or ``None`` is an
        error there. ``None`` reads features only (new data to predict on) and gives
        ``y=None``: in ``.csv`` every column but the weight column is a feature, in ``.npz``
        only ``X`` is required (a ``y`` array is ignored), and svmlight labels, which every
        line must still start with, are read and dropped.
    weight : str or None, default=None
        Name of the sample-weight column (``.csv``) or array (``.npz``). ``None`` uses a
        column/array named ``"sample_weight"`` if there is one (what :func:`save` writes) and
        gives ``sample_weight=None`` otherwise. svmlight weights come from ``# sample_weight:``
        comments.
    n_features : int or None, default=None
        svmlight only: the number of columns, at least the largest feature index in the file
        (zero columns are added up to it). ``None`` takes the largest index (or the file's
        ``# n_features:`` comment) and refuses one above :data:`MAX_SVMLIGHT_FEATURES`.

    Returns
    -------
    Data
        ``X`` float64 (n, p) (a CSR matrix for svmlight files, a dense array otherwise),
        ``y`` float64 (n,) (None when ``target=None``), ``sample_weight`` (n,) or None, names.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    DataFileError
        (a ``ValueError``) unknown extension, unreadable file, ragged rows, non-numeric
        values, a NUL byte, duplicated column names, missing target/weight column, an svmlight
        feature index above the column limit; the message names the path and what to do.
    """
    path = Path(path)
    fmt = _format_of(path)
    n_features = check_int(n_features, "n_features", "load", high=_INDEX_MAX, none_ok=True)
    if n_features is not None and fmt != "svmlight":
        raise DataFileError(
            f"{path}: n_features={n_features} applies to svmlight files only (their column "
            f"count comes from the largest index); a {fmt} file has its own. Drop it."
        )
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no such data file (working directory {Path.cwd()}). Check the path."
        )
    if fmt == "svmlight" and (target not in ("y", None) or weight is not None):
        raise DataFileError(
            f"{path}: svmlight files hold the target as the first token of each line and "
            f"weights in '# sample_weight:' comments; the 'target' ({target!r}) and 'weight' "
            f"({weight!r}) arguments apply to .csv and .npz only. Drop them."
        )
    reader: dict[str, Callable[..., Data]] = {
        "csv": _load_csv, "svmlight": _load_svmlight, "npz": _load_npz
    }
    kwargs: dict[str, Any] = {"n_features": n_features} if fmt == "svmlight" else {}
    try:
        return reader[fmt](path, target=target, weight=weight, **kwargs)
    except (OSError, UnicodeDecodeError, csv.Error, zipfile.BadZipFile, _NotNpz) as exc:
        raise DataFileError(
            f"{path}: cannot read the file as {fmt} ({type(exc).__name__}: {exc}). Check that "
            f"it is a readable {fmt} file and that its extension matches its content."
        ) from exc


def default_names(p: int) -> list[str]:
    """The feature names of a file without names: ``x1 .. xp``."""
    return [f"x{j + 1}" for j in range(p)]


# --- csv -------------------------------------------------------------------------------------

# Cells read as NaN without the slow path (any other spelling Python's float() accepts, such
# as "nAn" or "1_000", still reads through the strict path, as before).
_NAN_CELLS = ["", "nan", "NaN", "NAN", "-nan", "+nan", "-NaN", "+NaN"]
# pandas' C parser reads true/false cells (any case) as 1/0. No number Python's float() reads
# has an r or an l, so files with one take the strict path, which reports such cells.
_BOOL_LETTERS = (b"r", b"R", b"l", b"L")


def _csv_header(path: Path, raw: bytes) -> tuple[list[str], int, int]:
    """The header (first line with a non-blank cell): its names, line number and end offset.

    Refuses a NUL byte in the lines read and duplicated column names."""
    start, lineno = 0, 0
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end + 1
        lineno += 1
        line = raw[start:end].decode("utf-8-sig")
        if "\x00" in line:
            _refuse_nul(path, line, lineno, None)
        cells = next(csv.reader([line]), [])
        if any(c.strip() for c in cells):
            header = [h.strip() for h in cells]
            if all(_is_number(h) for h in header):
                raise DataFileError(
                    f"{path}: the first row {cells[:5]} looks numeric, but a header row of "
                    "column names is required (e.g. x1,...,y). Add one."
                )
            check_distinct_names(path, header, f"the header (line {lineno})")
            return header, lineno, end
        start = end
    raise DataFileError(f"{path}: the file is empty; a header row and data rows are needed.")


def check_distinct_names(source: Any, names: Sequence[str], where: str) -> None:
    """Raise :class:`DataFileError` when a column name appears more than once in ``names``.

    A reader that keeps one of two equal names (or renames the second, as pandas does to
    ``x1.1``) would silently fit a model on other columns than the user named; ``where`` says
    where the names come from (e.g. ``"the header (line 1)"``) and ``source`` is the file."""
    counts = Counter(names)
    repeated = [n for n in counts if counts[n] > 1]
    if repeated:
        raise DataFileError(
            f"{source}: column name(s) {', '.join(repr(n) for n in repeated)} appear more than "
            f"once in {where}; every column needs its own name. Rename the duplicated columns "
            f"(e.g. {repeated[0]}_2) and load the file again."
        )


def _refuse_nul(path: Path, line: str, lineno: int, header: list[str] | None) -> NoReturn:
    """Raise for a NUL byte on line ``lineno`` (text ``line``), naming its column if known.

    pandas' C parser ends a cell at a NUL byte (before pandas 3 it reads the cells ``1`` and
    ``<NUL>2`` as 1 and NaN, and ``2<NUL>`` as 2), so NULs are found in the bytes instead."""
    where, what = "", "which no column name may hold"
    if header is not None:
        what = "so it is not a number"
        cells = next(csv.reader([line.replace("\x00", "\ufffd")]), [])
        j = next((j for j, c in enumerate(cells) if "\ufffd" in c), None)
        if j is not None and j < len(header):
            where = f", column {header[j]!r}: the cell {cells[j].replace(chr(0xFFFD), chr(0))!r}"
    raise DataFileError(
        f"{path}: line {lineno}{where} holds a NUL byte (\\x00), {what}. A CSV file is UTF-8 "
        "text: remove the byte, or re-save the file as UTF-8 CSV (NUL bytes come from binary "
        "or UTF-16 files)."
    )


def _check_no_nul(path: Path, header: list[str], raw: bytes, end: int, first_line: int) -> None:
    """Refuse a NUL byte in the data rows ``raw[end:]`` (one ``bytes.find``: cheap)."""
    at = raw.find(b"\x00", end)
    if at < 0:
        return
    start = raw.rfind(b"\n", 0, at) + 1
    stop = raw.find(b"\n", at)
    line = raw[start:len(raw) if stop < 0 else stop].decode("utf-8", errors="replace")
    _refuse_nul(path, line, first_line + raw.count(b"\n", end, at) + 1, header)


def _csv_records(body: bytes, first_line: int) -> list[tuple[int, list[str]]]:
    """(line number, cells) of the data rows pandas reads: blank lines skipped (slow path)."""
    reader = csv.reader(io.StringIO(body.decode("utf-8"), newline=""))
    return [(reader.line_num + first_line, r) for r in reader
            if r and not (len(r) == 1 and not r[0].strip())]


def _check_ragged(path: Path, header: list[str], body: bytes, first_line: int) -> None:
    """Raise for the first data row whose field count differs from the header's."""
    for i, (line, r) in enumerate(_csv_records(body, first_line)):
        if len(r) != len(header):
            raise DataFileError(
                f"{path}: ragged rows: data row {i + 1} (line {line}) has {len(r)} fields but "
                f"the header has {len(header)}. Fix the row or the header."
            )


def exact_float_kwargs() -> dict[str, str]:
    """``read_csv`` arguments that make pandas' C parser read every decimal as Python's
    ``float`` does (correctly rounded).

    Before pandas 3 the C parser's default (``float_precision="high"``) reads about a third of
    shortest-repr floats one ulp off; ``"round_trip"`` is exact there. pandas 3 reads exactly
    by default and deprecates the argument, so it is passed to older versions only."""
    import pandas as pd

    major = int(pd.__version__.split(".", 1)[0])
    return {} if major >= 3 else {"float_precision": "round_trip"}


def _read_table(path: Path, first_line: int, k: int, dtype: type) -> Any:
    """pandas' C parser on the rows after line ``first_line``: k unnamed columns."""
    import pandas as pd

    exact = exact_float_kwargs() if dtype is np.float64 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)  # rows longer than the header
        return pd.read_csv(
            path, engine="c", header=None, names=list(range(k)), skiprows=first_line,
            index_col=False, dtype=dtype, keep_default_na=False, na_values=_NAN_CELLS,
            encoding="utf-8", **exact,
        )


def _strict_floats(path: Path, header: list[str], body: bytes, first_line: int) -> np.ndarray:
    """Python's float() on every cell (the slow path); names the first non-numeric cell."""
    cells = _read_table(path, first_line, len(header), str).to_numpy(dtype=object)
    cells[cells != cells] = "nan"  # the NaN pandas puts in empty cells
    try:
        return cells.astype(np.float64)
    except ValueError:
        pass
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if not _is_number(cell):
                line = _csv_records(body, first_line)[i][0]
                raise DataFileError(
                    f"{path}: line {line}, column {header[j]!r}: {cell!r} is not a number. "
                    "All columns must be numeric; encode categories as numbers first."
                ) from None
    raise AssertionError("unreachable: astype failed but every cell is a number")


def _csv_matrix(path: Path, header: list[str], raw: bytes, end: int, first_line: int) -> np.ndarray:
    """The data rows (``raw[end:]``) as float64 (n, k); empty cells NaN; ragged rows and bad
    cells named by line and column (the slow paths scan ``raw[end:]`` only on trouble)."""
    import pandas as pd

    _check_no_nul(path, header, raw, end, first_line)
    try:
        if any(raw.find(c, end) >= 0 for c in _BOOL_LETTERS):
            raise ValueError("a cell with letters other than nan/inf")
        A = _read_table(path, first_line, len(header), np.float64).to_numpy(dtype=np.float64)
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        _check_ragged(path, header, raw[end:], first_line)
        raise DataFileError(f"{path}: malformed csv ({_one_line(exc)}); fix the file.") from exc
    except ValueError:  # a cell the C parser cannot read as a float
        _check_ragged(path, header, raw[end:], first_line)
        return _strict_floats(path, header, raw[end:], first_line)
    if np.isnan(A[:, -1]).any():  # pandas pads short rows with NaN: check they are not short
        _check_ragged(path, header, raw[end:], first_line)
    return A


def _pick_column(
    path: Path, header: list[str], name: str, role: str, arg: str
) -> int:
    if name not in header:
        raise DataFileError(
            f"{path}: no {role} column named {name!r}. Available columns: "
            f"{', '.join(repr(h) for h in header)}. Pass {arg}=<one of these>."
        )
    return header.index(name)


def _load_csv(path: Path, *, target: str | None, weight: str | None) -> Data:
    """Header by the csv module, data rows by pandas' C parser (the slow paths name errors)."""
    raw = path.read_bytes()
    header, first_line, end = _csv_header(path, raw)
    A = _csv_matrix(path, header, raw, end, first_line)
    if A.shape[0] == 0:
        raise DataFileError(f"{path}: the header is not followed by any data rows; add some.")
    t = None if target is None else _pick_column(path, header, target, "target", "target")
    if weight is None and _WEIGHT_COLUMN in header and target != _WEIGHT_COLUMN:
        weight = _WEIGHT_COLUMN
    w = None if weight is None else _pick_column(path, header, weight, "weight", "weight")
    if w is not None and w == t:
        raise DataFileError(f"{path}: target and weight both name column {target!r}.")
    feats = [j for j in range(len(header)) if j not in (t, w)]
    sw = None if w is None else np.ascontiguousarray(A[:, w])
    y = None if t is None else np.ascontiguousarray(A[:, t])
    return Data(np.ascontiguousarray(A[:, feats]), y, sw, [header[j] for j in feats])


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


# --- svmlight --------------------------------------------------------------------------------

# A '# sample_weight: w' comment: (what precedes it on the line, w); it counts after data only.
_SVM_WEIGHT = re.compile(rb"^([^#\n]*)#[ \t]*" + _WEIGHT_COLUMN.encode() + rb":([^\n]*)", re.M)


def _svm_header(raw: bytes) -> tuple[int, int, list[str] | None]:
    """``# n_features: p`` (p and its line number, 0 and 0 without one) and
    ``# feature_names: a,b`` from the comments before the data."""
    n_features, n_line, names, start, lineno = 0, 0, None, 0, 0
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end + 1
        lineno += 1
        data, _, comment = raw[start:end].decode("utf-8").partition("#")
        if data.strip():
            break
        key, _, value = comment.partition(":")
        if key.strip() == "n_features" and re.fullmatch(r"[0-9]+", value.strip()):
            n_features, n_line = int(value), lineno
        elif key.strip() == "feature_names":
            names = [s.strip() for s in value.split(",")]
        start = end
    return n_features, n_line, names


def _load_svmlight(
    path: Path, *, target: str | None, weight: str | None, n_features: int | None
) -> Data:
    """Parse by scikit-learn's ``load_svmlight_file`` (1-based); ``X`` is a CSR matrix.

    The column count (the largest index, or ``n_features``) is checked against its limit
    before anything per column is built; an index too large for scikit-learn's C parser is
    found by the slow path, which names its line."""
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    raw = path.read_bytes()
    declared, declared_line, names = _svm_header(raw)
    limit = MAX_SVMLIGHT_FEATURES if n_features is None else n_features
    if declared > limit:
        raise DataFileError(
            f"{path}: line {declared_line}: '# n_features: {declared}' exceeds "
            f"{_limit_words(n_features)}. {_index_fix(n_features, declared, 'comment')}"
        )
    try:
        X, y = load_svmlight_file(io.BytesIO(raw), zero_based=False, dtype=np.float64)
    except (ValueError, OverflowError) as exc:
        _diagnose_svmlight(path, raw, limit, n_features)
        raise DataFileError(
            f"{path}: not a valid svmlight file ({_one_line(exc)}). Lines are "
            "'label idx:value ...' with increasing 1-based indices."
        ) from exc
    if X.shape[1] > limit:
        _diagnose_svmlight(path, raw, limit, n_features)
        raise DataFileError(f"{path}: the largest feature index, {X.shape[1]}, exceeds "
                            f"{_limit_words(n_features)}. {_index_fix(n_features, X.shape[1])}")
    if X.shape[0] == 0:
        raise DataFileError(f"{path}: no data lines found; the file is empty or all comments.")
    p = n_features if n_features is not None else max(declared, X.shape[1] if X.nnz else 0)
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], p))
    X.eliminate_zeros()
    weights = [w.strip().decode("utf-8") for data, w in _SVM_WEIGHT.findall(raw) if data.strip()]
    sw = None
    if weights:
        if len(weights) != X.shape[0]:
            raise DataFileError(
                f"{path}: {len(weights)} of {X.shape[0]} lines carry a '# sample_weight:' "
                "comment; give every line one or none."
            )
        sw = _floats(path, weights, "sample_weight")
    if names is None or len(names) != p:
        names = default_names(p)
    check_distinct_names(path, names, "the '# feature_names:' comment")
    return Data(X, None if target is None else y, sw, names)


def _limit_words(n_features: int | None) -> str:
    if n_features is None:
        return f"the limit of {MAX_SVMLIGHT_FEATURES:,} columns (MAX_SVMLIGHT_FEATURES)"
    return f"n_features={n_features}"


def _index_fix(n_features: int | None, index: int, what: str = "index") -> str:
    """What to do about a column index (or a declared column count) above the limit."""
    if index > _INDEX_MAX:
        return (f"Fix the {what}: svmlight indices go up to {_INDEX_MAX} (scikit-learn's "
                "parser), and an index is a column number.")
    if n_features is not None:
        return f"Fix the {what}, or pass n_features >= {index}."
    return (f"An svmlight index is a column number, so it would make {index:,} columns "
            f"({8 * index / 2**30:,.1f} GiB per dense row). Fix the {what}, or, if the data "
            f"really have that many columns, pass n_features={index}.")


def _diagnose_svmlight(path: Path, raw: bytes, limit: int = _INDEX_MAX,
                       n_features: int | None = None) -> None:
    """Raise for the first bad line scikit-learn refused (or whose index exceeds ``limit``),
    naming it (the slow path)."""
    n_data = 0
    for lineno, line in enumerate(raw.decode("utf-8").split("\n"), start=1):
        tokens = line.partition("#")[0].split()
        if not tokens:
            continue
        n_data += 1
        problem = _svm_line_problem(tokens, n_data)
        if problem is None:
            big = _svm_line_max_index(tokens)
            if big > limit:
                problem = (f"feature index {big} exceeds {_limit_words(n_features)}. "
                           f"{_index_fix(n_features, big)}")
        if problem:
            raise DataFileError(f"{path}: line {lineno}: {problem}")


def _svm_line_max_index(tokens: list[str]) -> int:
    """The largest feature index of a well-formed line's tokens (0 without features)."""
    feats = tokens[2:] if len(tokens) > 1 and tokens[1].startswith("qid:") else tokens[1:]
    return max((int(t.partition(":")[0]) for t in feats), default=0)


def _svm_line_problem(tokens: list[str], n_data: int) -> str | None:
    """What is wrong with one svmlight line's tokens, or None."""
    feats = tokens[2:] if len(tokens) > 1 and tokens[1].startswith("qid:") else tokens[1:]
    if ":" in tokens[0] or any(t.count(":") != 1 for t in feats):
        return (f"not svmlight ('label idx:value ...'): {' '.join(tokens)[:80]!r}. Check the "
                "format or the file extension.")
    pairs = [t.split(":") for t in feats]
    for what, text in [("label", tokens[0])] + [("value", v) for _, v in pairs]:
        if not _is_number(text):
            return (f"{what} {text!r} is not a number. svmlight lines are 'label idx:value ...' "
                    "with numeric label, integer idx and numeric value.")
    idx = [_whole(i) for i, _ in pairs]
    if any(i < 1 for i in idx):
        bad = next(i for (i, _), j in zip(pairs, idx, strict=True) if j < 1)
        return (f"feature index {bad!r} is not a whole number >= 1 (svmlight is 1-based). "
                "Shift zero-based indices by 1.")
    for a, b in itertools.pairwise(idx):
        if a >= b:
            return (f"feature index {b} appears twice in data line {n_data}; each index may "
                    "appear once per line. Merge the duplicates." if a == b else
                    f"feature index {b} follows {a}; indices must increase along a line. "
                    "Sort them.")
    return None


def _whole(text: str) -> int:
    """``int(text)``, or -1 when it is not a whole number."""
    try:
        return int(text)
    except ValueError:
        return -1


def _floats(path: Path, tokens: Sequence[str], what: str) -> np.ndarray:
    try:
        return np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next(t for t in tokens if not _is_number(t))
        raise DataFileError(
            f"{path}: {what} {bad!r} is not a number; write '# {_WEIGHT_COLUMN}: <number>'."
        ) from None


# --- npz -------------------------------------------------------------------------------------


class _NotNpz(Exception):
    """Raised inside :func:`load` when numpy does not see a zip archive."""


def _load_npz(path: Path, *, target: str | None, weight: str | None) -> Data:
    if not zipfile.is_zipfile(path):
        raise _NotNpz("not a zip archive")
    with np.load(path, allow_pickle=False) as z:
        keys = list(z.files)
        for name, role in (("X", "features"), (target, "target")):
            if name is not None and name not in keys:
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
            y = None if target is None else _numeric(path, z[target], target)
            sw = None if weight is None else _numeric(path, z[weight], weight)
            names = [str(s) for s in z["feature_names"]] if "feature_names" in keys else None
        except ValueError as exc:  # object arrays need pickle, which load never enables
            if isinstance(exc, DataFileError):
                raise
            raise DataFileError(
                f"{path}: an array holds Python objects ({exc}); save plain numeric arrays."
            ) from exc
    rows = (X.shape[0],) if X.ndim == 2 else None
    if rows is None or (y is not None and y.shape != rows):
        shown = "" if y is None else f", y{y.shape}"
        raise DataFileError(
            f"{path}: X must be 2-D and y 1-D with as many rows; got X{X.shape}{shown}."
        )
    if sw is not None and sw.shape != rows:
        raise DataFileError(f"{path}: sample_weight has shape {sw.shape}, expected {rows}.")
    if names is None or len(names) != X.shape[1]:
        names = default_names(X.shape[1])
    check_distinct_names(path, names, "the 'feature_names' array")
    return Data(X, y, sw, names)


def _numeric(path: Path, a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype.kind not in "biuf":
        raise DataFileError(
            f"{path}: array {name!r} has dtype {a.dtype}, not numeric; store real numbers."
        )
    return np.asarray(a, dtype=np.float64)


# --- save ------------------------------------------------------------------------------------


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
            check_finite(a, name)
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
        return default_names(p)
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
