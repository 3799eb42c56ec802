"""Data too large for memory, read lazily as row-chunked Dask arrays (nothing is read here).

:func:`load_lazy` takes one of

==============================  =================================================================
``'chunks/*.npy'`` (a glob)     one 2-D float array per file, ``[X | y]``: the features, then the
                                target as the **last** column; one Dask row chunk per file, in
                                sorted file-name order (zero-pad the numbers: ``part-00010``).
                                Each file is opened with ``np.load(mmap_mode="r")`` inside its
                                task, so only its path travels to the workers.
a directory of Parquet files    columns = features + the target column (``target``, default
                                ``y``) + optionally a weight column (``weight``, or a column
                                named ``sample_weight``); one row chunk per Parquet partition.
``'parts/*.csv'`` (a glob)      CSV files with a header row, the columns as for Parquet, read by
                                ``dask.dataframe.read_csv`` (one row chunk per block of a file,
                                64 MB by default). Every pass parses the text again, and the
                                row counts cost one parse here: for repeated solves write Parquet.
==============================  =================================================================

It returns :class:`instances.io.Data` whose ``X``, ``y`` (and ``sample_weight``) are Dask arrays;
the problems that accept them (LAD, ridge) check them chunk by chunk. Only the file headers
(shapes, dtypes) and, for Parquet and CSV, the partition lengths are read here. Dask is
imported when a lazy source is loaded (``pip install "optmodels[dask]"``).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

import numpy as np

from instances.io import (
    _WEIGHT_COLUMN,
    Data,
    DataFileError,
    check_distinct_names,
    default_names,
    exact_float_kwargs,
)

__all__ = ["is_lazy_source", "load_lazy"]

_GLOB_CHARS = ("*", "?", "[")


def is_lazy_source(source: str | os.PathLike[str]) -> bool:
    """True for a glob pattern, a ``.npy`` file or a directory: what :func:`load_lazy` reads."""
    text = str(source)
    return (any(c in text for c in _GLOB_CHARS) or text.lower().endswith(".npy")
            or Path(text).is_dir())


def load_lazy(source: str | os.PathLike[str], *, target: str | None = "y",
              weight: str | None = None) -> Data:
    """``Data`` with Dask ``X`` (n, p), ``y`` (n,) and ``sample_weight`` (or None) over the
    ``.npy`` chunk files or CSV files matching ``source``, or the Parquet files in the directory
    ``source`` (see the module docstring). DataFileError (a ValueError) names the file and the
    fix."""
    text = str(source)
    if Path(text).is_dir():
        return _load_frame(_read_parquet(Path(text)), text, target=target, weight=weight)
    paths = sorted(glob.glob(text))
    if paths and all(p.lower().endswith(".csv") for p in paths):
        return _load_frame(_read_csv(paths, text), text, target=target, weight=weight)
    if target not in ("y", None) or weight is not None:
        raise DataFileError(
            f"{text}: .npy chunk files hold [X | y] with the target as the last column and no "
            f"weights; the target ({target!r}) and weight ({weight!r}) names apply to a Parquet "
            "directory or CSV files only. Drop them, or write the chunks as Parquet with named "
            "columns.")
    if not paths:
        raise FileNotFoundError(
            f"{text}: no file matches (working directory {Path.cwd()}). Check the pattern, "
            "e.g. 'chunks/*.npy'.")
    return _load_npy(paths, with_target=target is not None)


def _npy_shape(path: str) -> tuple[int, int]:
    """(rows, columns) of one .npy chunk from its header (the data are not read)."""
    if not path.lower().endswith(".npy"):
        raise DataFileError(f"{path}: matched the pattern but is not a .npy file; narrow the "
                            "pattern to the chunk files (e.g. 'chunks/*.npy').")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: cannot read it as a .npy array ({exc}); check that it "
                            "was written by numpy.save.") from exc
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise DataFileError(f"{path}: a chunk must be a 2-D numeric array [X | y]; got shape "
                            f"{arr.shape} and dtype {arr.dtype}.")
    return int(arr.shape[0]), int(arr.shape[1])


def _read_chunk(path: str) -> np.ndarray:
    """One chunk as float64 (read on the worker that needs it)."""
    return np.asarray(np.load(path, mmap_mode="r"), dtype=np.float64)


def _load_npy(paths: list[str], with_target: bool) -> Data:
    import dask
    import dask.array as da

    shapes = [_npy_shape(p) for p in paths]
    width = shapes[0][1]
    odd = next((i for i, s in enumerate(shapes) if s[1] != width), None)
    if odd is not None:
        raise DataFileError(f"{paths[odd]}: has {shapes[odd][1]} columns but {paths[0]} has "
                            f"{width}; every chunk must hold the same columns [X | y].")
    if with_target and width < 2:
        raise DataFileError(f"{paths[0]}: one column only; a chunk holds the features and then "
                            "the target as the last column.")
    Z = da.concatenate([da.from_delayed(dask.delayed(_read_chunk)(p), shape=s, dtype=np.float64)
                        for p, s in zip(paths, shapes, strict=True)])
    if not with_target:
        return Data(Z, None, None, default_names(width))
    return Data(Z[:, :-1], Z[:, -1], None, default_names(width - 1))


def _read_parquet(folder: Path) -> Any:
    """The Parquet files of ``folder`` as a Dask DataFrame; a file whose schema repeats a
    column name is named (pyarrow refuses it with a message that does not say which)."""
    import dask.dataframe as dd

    try:
        return dd.read_parquet(str(folder))
    except (OSError, ValueError) as exc:
        _check_parquet_names(folder)
        raise DataFileError(f"{folder}: cannot read the directory as Parquet files ({exc}); "
                            "pass a directory of .parquet files or a glob of .npy chunks.") from exc


def _check_parquet_names(folder: Path) -> None:
    """Refuse the first Parquet file of ``folder`` whose schema repeats a column name (only
    the footers are read)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return
    for file in sorted(folder.rglob("*.parquet")):
        try:
            names = pq.read_schema(file).names
        except (OSError, ValueError):
            continue
        check_distinct_names(file, names, "its Parquet schema")


def _read_csv(paths: list[str], text: str) -> Any:
    """The CSV files as a Dask DataFrame, after checking each header for repeated names
    (pandas would rename the second ``x1`` to ``x1.1`` and fit on it silently)."""
    import dask.dataframe as dd

    for path in paths:
        check_distinct_names(path, _csv_header_names(path), "its header")
    try:
        return dd.read_csv(paths, **exact_float_kwargs())
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{text}: cannot read the files as CSV with a header row ({exc}); "
                            "check the files, or write them as Parquet.") from exc


def _csv_header_names(path: str) -> list[str]:
    """The column names of a CSV file's first line (as pandas reads them: header row 0)."""
    import csv

    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return [name.strip() for name in next(csv.reader(fh), [])]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataFileError(f"{path}: cannot read its header row ({exc}); check that it is a "
                            "UTF-8 CSV file with a header row.") from exc


def _load_frame(df: Any, folder: str, *, target: str | None, weight: str | None) -> Data:
    """``Data`` over the columns of a Dask DataFrame (``folder``: the source, for messages)."""
    columns = [str(c) for c in df.columns]
    check_distinct_names(folder, columns, "its columns")
    if target is not None and target not in columns:
        raise DataFileError(f"{folder}: no target column {target!r}; columns present: "
                            f"{columns}. Pass --target <one of these>.")
    if weight is None and _WEIGHT_COLUMN in columns:
        weight = _WEIGHT_COLUMN
    if weight is not None and weight not in columns:
        raise DataFileError(f"{folder}: no weight column {weight!r}; columns present: "
                            f"{columns}. Pass one of these, or no weight.")
    features = [c for c in columns if c not in (target, weight)]
    bad = [c for c in features if df[c].dtype.kind not in "biuf"]
    if bad:
        raise DataFileError(f"{folder}: feature column(s) {bad} are not numeric; store real "
                            "numbers (or drop those columns).")
    try:
        lengths = [int(k) for k in df.map_partitions(len).compute()]
    except (OSError, ValueError) as exc:  # a CSV row that does not parse shows up here
        raise DataFileError(f"{folder}: cannot read every row ({_reason(exc)}); fix the file "
                            "(one number per column in every row) and try again.") from exc
    parts = df.to_delayed()
    return Data(_column_array(parts, lengths, features),
                None if target is None else _column_array(parts, lengths, target),
                None if weight is None else _column_array(parts, lengths, weight),
                features)


def _reason(exc: Exception) -> str:
    """The line of a reader's error that names the bad value (Dask's dtype-mismatch message
    holds a table, then pandas' own reason)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "could not convert" in line or "tokenizing" in line:
            return line.lstrip("- ")
    return lines[0] if lines else type(exc).__name__


def _values(frame: Any, columns: list[str] | str) -> np.ndarray:
    """The ``columns`` of one partition (a pandas DataFrame) as float64."""
    return frame[columns].to_numpy(dtype=np.float64)


def _column_array(parts: list, lengths: list[int], columns: list[str] | str) -> Any:
    """A float64 Dask array of ``columns`` (a list: 2-D; a name: 1-D), one row chunk per
    partition (of known ``lengths``)."""
    import dask
    import dask.array as da

    width = (len(columns),) if isinstance(columns, list) else ()
    return da.concatenate([
        da.from_delayed(dask.delayed(_values)(part, columns), shape=(rows, *width),
                        dtype=np.float64)
        for part, rows in zip(parts, lengths, strict=True)])
