"""Writing LP/QP models to MPS or LP files, and reading such files back as :class:`QPData`.

The files are written here, not by HiGHS's writer: HiGHS 1.16 writes a blank NAME line, pads
names for the fixed layout but writes longer ones anyway (its fixed-format reader then merges
columns), relies on a negative UP bound to mean "lower bound -inf" (the fixed reader applies that
rule, the free one does not), writes a free row as an extra N row (both readers drop it) and
splits a ranged row into two rows in LP files. Every file written here reads back as the same
model (same columns and rows in the same order, same bounds, same optimum) through HiGHS's LP
reader or free MPS parser (``mps_parser_type_free=True``) and through SCIP's LP and MPS readers;
``mps_format="fixed"`` files also through HiGHS's fixed MPS parser (``mps_parser_type_free=False``).

Free or fixed MPS: both layouts pad names to the fixed columns (5-12, 15-22; values from column
25), a longer name pushing the rest of its line right, and only ``mps_format="fixed"`` keeps every
name within 8 characters. A fixed-format reader takes exactly 8 characters per name field and
the value from column 25, so the longer names of a free file (``stationarity_0``, ``residual_0``,
labelled columns) are cut (``stationarity_0`` .. ``stationarity_3`` all become ``stationa``)
and the value is read from inside the name (``ity_0  0.12...`` reads as 0): HiGHS's fixed
parser then drops every coefficient of those rows, without an error, and the LAD dual loses its
constraints (optimum -sum|y| instead of minus the LAD objective). A free file whose names all
fit 8 characters (``x_0``, ``r_0``) is also a valid fixed file. :func:`read` and
:func:`read_highs` refuse, naming the line, a file not in the fixed layout when asked for
``mps_parser="fixed"``. Fixed values take at most 15 characters (columns 25-39, 12 or more
significant digits), which HiGHS's and SCIP's readers take whole; the punched-card layout ends
the value field at column 36, so a reader that cuts there would misread values longer than 12
characters.

LP files write a square as ``x^2`` inside ``[ ... ] / 2``: SCIP 10 refuses ``x ^ 2`` (spaces
around the caret), which HiGHS reads; both read ``x^2``, the form of the CPLEX LP examples.

Names (deterministic; the map is returned in :class:`ExportResult`):

* an entry is ``<block>_<index>`` with the blocks of ``QPData.col_blocks``/``row_blocks``
  (``beta_3``, ``e_plus_17``, ``residual_0``); the objective row is ``obj``;
* a block name keeps letters, digits and ``_``; every other character becomes ``_``
  (``"my var[2]"`` -> ``my_var_2_``); an empty name becomes ``x`` (columns) or ``r`` (rows);
  a name not starting with a letter, or starting with ``e``/``E`` and a digit (read as an
  exponent in LP files), gets the prefix ``n`` (``1x`` -> ``n1x``, ``e1`` -> ``ne1``); names
  are cut to 240 characters, so an entry has at most 255;
* a block name already taken gets ``_2``, ``_3``, ... (``x``, ``x`` -> ``x``, ``x_2``). Since
  every entry ends in ``_<index>``, no entry is an LP keyword (``st``, ``end``, ``free``, ...)
  and two blocks never produce the same entry;
* a block with labels (``QPData.col_labels``: a problem's ``feature_names`` label the LAD
  ``beta``, SVM primal ``w`` and ridge ``x`` blocks) names its entries ``<block>_<label>``
  instead, the label's characters made safe as above (``beta`` and ``"my var[2]"`` ->
  ``beta_my_var_2_``; an empty label gives the index), cut to 255 characters; a name already
  given, or equal to a generated ``<block>_<index>`` entry, gets ``_2``, ``_3``, ... The prefix
  keeps such names clear of LP keywords and exponents (``1x`` -> ``beta_1x``). The original
  names (``beta_my var[2]``, as ``QPData.col_names()`` gives them) map to these in ``col_map``;
* ``mps_format="fixed"`` needs names of at most 8 characters: an entry is then
  ``<prefix><index>``, the prefix being the block name without underscores, cut to what the
  block's largest index leaves of 8 characters and ending in a letter (``e_plus`` with 100 rows
  -> ``eplus0 .. eplus99``); a prefix already taken ends in ``a``, ``b``, ... instead. Labels
  are not used there (``beta0 .. beta9``); ``col_map`` still maps each labelled name to them.

Bounds in MPS are explicit: ``FR`` (free), ``MI`` + ``UP`` (below u), ``LO`` (from l, omitted
for 0), ``FX`` (fixed), ``UP`` then ``LO`` (a box: LO after UP, so the fixed reader's
negative-UP rule cannot replace the lower bound). HiGHS treats any value with magnitude at least
1e20 as infinite, so such finite bounds or coefficients are refused (:class:`ExportError`
naming the entry), as are NaN/inf data (``ValueError``), before anything touches the disk.
An MPS file cannot hold a free row (readers drop it) and an LP file read by HiGHS cannot hold a
ranged row: both are refused, naming the row and the format that can.

Files are written through :func:`instances.atomic.atomic_write`: complete or absent under the
target name, mode ``0o666 & ~umask``; ``kill -9`` may leave a hidden ``.<name>.*.tmp`` file.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import scipy.sparse as sp

from instances.atomic import atomic_write
from optmodels.file_checks import check_lp, check_mps
from solvers.errors import ExportError
from solvers.highs_backend import new_highs
from solvers.qp import Block, QPData

FORMATS = (".mps", ".lp")
MPS_FORMATS = ("free", "fixed")
HIGHS_INFINITY = 1e20  # HiGHS's infinite_bound: |value| >= this is read as infinite
MAX_BLOCK_NAME = 240
MAX_ENTRY_NAME = 255
FIXED_WIDTH = 8
OBJECTIVE = "obj"


@dataclasses.dataclass(frozen=True)
class ExportResult:
    """What :func:`write` wrote: the file, its format and the names it used.

    ``col_names``/``row_names`` are the names in the file, in model order; ``col_map``/``row_map``
    map each original name (``QPData.col_names()``) that was changed to its name in the file.
    The object is path-like (``open(result)`` opens the file).
    """

    path: Path
    format: str
    col_names: list[str]
    row_names: list[str]
    col_map: dict[str, str]
    row_map: dict[str, str]

    def __fspath__(self) -> str:
        return str(self.path)


# ----------------------------------------------------------------------------------- names


def _safe_chars(name: str) -> str:
    """Letters, digits and ``_`` kept; every other character becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def sanitize(name: str, fallback: str) -> str:
    """A block name made safe for MPS and LP files (the rules of the module docstring)."""
    s = _safe_chars(name)[:MAX_BLOCK_NAME] or fallback
    if not s[0].isalpha() or re.match(r"[eE][0-9]", s):
        s = ("n" + s)[:MAX_BLOCK_NAME]
    return s


def _unique(candidates: Sequence[str]) -> list[str]:
    taken: set[str] = set()
    out = []
    for base in candidates:
        name, k = base, 2
        while name in taken:
            name, k = f"{base[: MAX_BLOCK_NAME - len(str(k)) - 1]}_{k}", k + 1
        taken.add(name)
        out.append(name)
    return out


def _short_prefixes(prefixes: Sequence[str], sizes: Sequence[int], fallback: str) -> list[str]:
    """Prefixes ending in a letter so that prefix + largest index fits in 8 characters."""
    taken: set[str] = set()
    out = []
    for prefix, size in zip(prefixes, sizes, strict=True):
        budget = FIXED_WIDTH - len(str(max(size - 1, 0)))
        if budget < 1:
            raise ExportError(
                f"The block {prefix!r} has {size} entries, too many for 8-character names in "
                "fixed MPS; use mps_format='free' (--mps-format free)."
            )
        base = re.sub(r"[^A-Za-z0-9]", "", prefix)[:budget].rstrip(string.digits) or fallback
        out.append(_free_prefix(base, budget, taken, prefix))
        taken.add(out[-1])
    return out


def _free_prefix(base: str, budget: int, taken: set[str], block: str) -> str:
    if base not in taken:
        return base
    for length in range(1, budget + 1):
        for letters in itertools.product(string.ascii_letters, repeat=length):
            candidate = base[: budget - length] + "".join(letters)
            if candidate not in taken:
                return candidate
    raise ExportError(f"No free 8-character name for the block {block!r}; use mps_format='free'.")


def file_names(
    blocks: Sequence[Block],
    fallback: str,
    *,
    fixed: bool = False,
    labels: dict[str, list[str]] | None = None,
) -> list[str]:
    """The names :func:`write` gives the entries of ``blocks`` (see the module docstring);
    ``labels`` (``QPData.col_labels``) name the entries of their blocks, except in fixed MPS."""
    prefixes = _unique([sanitize(name, fallback) for name, _ in blocks])
    sizes = [size for _, size in blocks]
    sep = "_"
    if fixed:
        prefixes, sep, labels = _short_prefixes(prefixes, sizes, fallback), "", None
    labelled = [name in (labels or {}) for name, _ in blocks]
    generated = {pre: size for pre, size, lab in zip(prefixes, sizes, labelled, strict=True)
                 if not lab}
    taken: set[str] = set()
    names: list[str] = []
    for (block, size), prefix in zip(blocks, prefixes, strict=True):
        if block in (labels or {}):
            names.extend(_labelled(prefix, labels[block], generated, taken))  # type: ignore[index]
        else:
            names.extend(f"{prefix}{sep}{i}" for i in range(size))
    return names


def _labelled(
    prefix: str, tags: Sequence[str], generated: dict[str, int], taken: set[str]
) -> list[str]:
    """``<prefix>_<label>`` (``_<index>`` for an empty label), cut to 255 characters and made
    distinct, with ``_2``, ``_3``, ..., from ``taken`` and from the generated ``<P>_<i>``."""
    out = []
    for i, tag in enumerate(tags):
        base = f"{prefix}_{_safe_chars(tag) or i}"[:MAX_ENTRY_NAME]
        name, k = base, 2
        while name in taken or _is_generated(name, generated):
            name, k = f"{base[: MAX_ENTRY_NAME - len(str(k)) - 1]}_{k}", k + 1
        taken.add(name)
        out.append(name)
    return out


def _is_generated(name: str, generated: dict[str, int]) -> bool:
    """Whether ``name`` is ``<P>_<i>`` for a generated block ``P`` with more than ``i`` entries
    (checked from the name: no set of the large blocks' names is built)."""
    base, _, index = name.rpartition("_")
    return index.isdigit() and str(int(index)) == index and int(index) < generated.get(base, 0)


# ------------------------------------------------------------------------------- refusals


def _check_writable(qp: QPData, cols: list[str], rows: list[str], suffix: str) -> None:
    """Refuse values HiGHS would read as infinite and rows the target format cannot hold."""
    qp.assert_finite()
    big = HIGHS_INFINITY
    fix = "rescale the data, or use an infinite bound (inf) where no bound is meant"
    for label, lo, hi, names in (
        ("column", qp.col_lo, qp.col_hi, cols),
        ("row", qp.row_lo, qp.row_hi, rows),
    ):
        for side, arr in (("lower", lo), ("upper", hi)):
            bad = np.flatnonzero(np.isfinite(arr) & (np.abs(arr) >= big))
            if bad.size:
                i = int(bad[0])
                raise ExportError(
                    f"The {side} bound {arr[i]:g} of {label} {names[i]!r} has magnitude >= 1e20, "
                    f"which HiGHS reads as infinite; {fix}."
                )
        wrong = np.flatnonzero((lo == np.inf) | (hi == -np.inf))
        if wrong.size:
            raise ExportError(
                f"The {label} {names[int(wrong[0])]!r} has a lower bound +inf or an upper "
                "bound -inf; no point satisfies it."
            )
    _check_coefficients(qp, cols, rows, fix)
    both = np.isfinite(qp.row_lo) & np.isfinite(qp.row_hi)
    free = np.flatnonzero(~np.isfinite(qp.row_lo) & ~np.isfinite(qp.row_hi))
    ranged = np.flatnonzero(both & (qp.row_lo < qp.row_hi))
    if suffix == ".mps" and free.size:
        raise ExportError(
            f"The row {rows[int(free[0])]!r} has no finite bound; MPS readers drop such rows. "
            "Remove it, or write an .lp file."
        )
    if suffix == ".lp" and ranged.size:
        raise ExportError(
            f"The row {rows[int(ranged[0])]!r} is ranged (finite lower < upper); HiGHS's LP reader "
            "has no ranged rows. Write an .mps file (RANGES section)."
        )


def _check_coefficients(qp: QPData, cols: list[str], rows: list[str], fix: str) -> None:
    big = HIGHS_INFINITY
    if abs(qp.offset) >= big:
        raise ExportError(f"The objective constant {qp.offset:g} has magnitude >= 1e20; {fix}.")
    bad = np.flatnonzero(np.abs(qp.c) >= big)
    if bad.size:
        j = int(bad[0])
        raise ExportError(
            f"The objective coefficient {qp.c[j]:g} of column {cols[j]!r} has magnitude >= 1e20, "
            f"which HiGHS reads as infinite; {fix}."
        )
    for label, M in (("constraint", qp.A), ("quadratic", qp.P)):
        if M is None:
            continue
        coo = M.tocoo()
        bad = np.flatnonzero(np.abs(coo.data) >= big)
        if bad.size:
            k = int(bad[0])
            where = rows[coo.row[k]] if label == "constraint" else cols[coo.row[k]]
            raise ExportError(
                f"The {label} coefficient {coo.data[k]:g} of column {cols[coo.col[k]]!r} in "
                f"{where!r} has magnitude >= 1e20; {fix}."
            )


# -------------------------------------------------------------------------------- writing


def write(
    model: Any,
    path: str | os.PathLike[str],
    *,
    form: str | None = None,
    mps_format: str = "free",
) -> ExportResult:
    """Write a problem (or a :class:`QPData`) to ``path``; the suffix picks MPS or LP.

    ``mps_format`` is ``"free"`` (names as in the module docstring) or ``"fixed"`` (names of
    at most 8 characters). Raises :class:`ExportError` for other suffixes or formats, models that
    cannot be written (KLR) or values HiGHS would read as infinite, and ``ValueError`` for
    NaN/inf data, before anything touches the disk.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ExportError(f"Cannot write {target.name!r}: use a .mps or .lp file name.")
    if mps_format not in MPS_FORMATS:
        raise ExportError(f"mps_format={mps_format!r}; choose one of {', '.join(MPS_FORMATS)}.")
    qp = model if isinstance(model, QPData) else (model.qp(form) if form else model.qp())
    fixed = suffix == ".mps" and mps_format == "fixed"
    cols = file_names(qp.col_blocks, "x", fixed=fixed, labels=qp.col_labels)
    rows = file_names(qp.row_blocks, "r", fixed=fixed)
    if len(cols) != qp.n_cols or len(rows) != qp.n_rows:
        raise ExportError(
            f"The blocks of {qp.name!r} name {len(cols)} columns and {len(rows)} rows but the "
            f"model has {qp.n_cols} and {qp.n_rows}; fix col_blocks/row_blocks."
        )
    _check_writable(qp, qp.col_names(), qp.row_names(), suffix)
    if not target.parent.is_dir():
        raise ExportError(f"The folder {str(target.parent)!r} does not exist; create it first.")
    name = sanitize(qp.name, "model")[: FIXED_WIDTH if fixed else None]
    with atomic_write(target, text=True) as fh:
        if suffix == ".mps":
            _write_mps(fh, qp, cols, rows, name, fixed)
        else:
            _write_lp(fh, qp, cols, rows, name)
    fmt = "lp" if suffix == ".lp" else f"mps-{mps_format}"
    return ExportResult(
        target, fmt, cols, rows, _changed(qp.col_names(), cols), _changed(qp.row_names(), rows)
    )


def _changed(original: list[str], written: list[str]) -> dict[str, str]:
    return {a: b for a, b in zip(original, written, strict=True) if a != b}


def _num(v: float) -> str:
    """Shortest decimal that reads back as the same double."""
    return repr(float(v))


FIXED_VALUE_WIDTH = 15  # HiGHS's fixed reader takes a value in columns 25-39


def _num_fixed(v: float) -> str:
    """The closest decimal of at most 15 characters (12 or more significant digits)."""
    text = repr(float(v))
    for digits in range(17, 0, -1):
        if len(text) <= FIXED_VALUE_WIDTH:
            return text
        text = re.sub(
            r"e([+-])0*(\d)",
            lambda m: "e" + m.group(1).strip("+") + m.group(2),
            f"{float(v):.{digits}g}",
        )
    return text


def _csc(M: sp.spmatrix) -> sp.csc_matrix:
    M = sp.csc_matrix(M, dtype=float, copy=True)
    M.sum_duplicates()
    M.eliminate_zeros()
    M.sort_indices()
    return M


def _hessian_lower(qp: QPData) -> sp.csc_matrix | None:
    """The lower triangle of (P + P')/2 (equal to P when P is symmetric), or None for an LP."""
    if qp.is_lp:
        return None
    return _csc(sp.tril((qp.P + qp.P.T) * 0.5))


def _write_mps(
    fh: IO[str], qp: QPData, cols: list[str], rows: list[str], name: str, fixed: bool
) -> None:
    line = "    {:<8}  {:<8}  {}\n".format
    num = _num_fixed if fixed else _num
    fh.write(f"NAME          {name}\nROWS\n N  {OBJECTIVE}\n")
    lo, hi = qp.row_lo, qp.row_hi
    kinds = np.where(lo == hi, "E", np.where(np.isfinite(lo), "G", "L"))
    fh.writelines(f" {k}  {r}\n" for k, r in zip(kinds.tolist(), rows, strict=True))
    fh.write("COLUMNS\n")
    A = _csc(qp.A)
    for j, col in enumerate(cols):
        start, end = A.indptr[j], A.indptr[j + 1]
        if qp.c[j] != 0 or start == end:  # a column must appear once to exist
            fh.write(line(col, OBJECTIVE, num(qp.c[j])))
        for i, v in zip(A.indices[start:end].tolist(), A.data[start:end].tolist(), strict=True):
            fh.write(line(col, rows[i], num(v)))
    fh.write("RHS\n")
    if qp.offset != 0:
        fh.write(line("RHS", OBJECTIVE, num(-qp.offset)))  # HiGHS: objective RHS = -offset
    rhs = np.where(kinds == "L", hi, lo)
    for i in np.flatnonzero(rhs != 0).tolist():
        fh.write(line("RHS", rows[i], num(rhs[i])))
    ranged = np.flatnonzero((kinds == "G") & np.isfinite(hi)).tolist()
    if ranged:  # a G row with range R holds [rhs, rhs + |R|] in every reader
        fh.write("RANGES\n")
        fh.writelines(line("RNG", rows[i], num(hi[i] - lo[i])) for i in ranged)
    fh.write("BOUNDS\n")
    for j, col in enumerate(cols):
        fh.writelines(_mps_bounds(col, float(qp.col_lo[j]), float(qp.col_hi[j]), num))
    H = _hessian_lower(qp)
    if H is not None and H.nnz:
        fh.write("QUADOBJ\n")
        for j, col in enumerate(cols):
            span = slice(H.indptr[j], H.indptr[j + 1])
            for i, v in zip(H.indices[span].tolist(), H.data[span].tolist(), strict=True):
                fh.write(line(col, cols[i], num(v)))
    fh.write("ENDATA\n")


def _mps_bounds(col: str, lo: float, hi: float, num: Any) -> list[str]:
    entry = " {} BND       {:<8}  {}\n".format
    if lo == hi:
        return [entry("FX", col, num(lo))]
    if lo == -np.inf:
        if hi == np.inf:
            return [entry("FR", col, "")]
        return [entry("MI", col, ""), entry("UP", col, num(hi))]
    if hi == np.inf:
        return [] if lo == 0 else [entry("LO", col, num(lo))]
    return [entry("UP", col, num(hi)), entry("LO", col, num(lo))]


def _terms(pairs: list[tuple[float, str]]) -> list[str]:
    return [("+" if v >= 0 else "") + f"{_num(v)} {name}" for v, name in pairs]


def _wrapped(fh: IO[str], head: str, terms: list[str], tail: str) -> None:
    """``head`` then the terms, at most ~100 characters a line (continuations indented)."""
    out, width = [head], len(head)
    for t in terms:
        if width + len(t) > 100 and width > len(head):
            out.append("\n   ")
            width = 3
        out.append(" " + t)
        width += len(t) + 1
    fh.write("".join(out) + tail + "\n")


def _write_lp(fh: IO[str], qp: QPData, cols: list[str], rows: list[str], name: str) -> None:
    fh.write(f"\\ Model {name}, written by optmodels.export\nminimize\n")
    # Every column is listed in the objective (0 if unused), so the reader keeps their order.
    terms = _terms(list(zip(qp.c.tolist(), cols, strict=True)))
    H = _hessian_lower(qp)
    if H is not None and H.nnz:
        quad = []
        for j in range(qp.n_cols):
            span = slice(H.indptr[j], H.indptr[j + 1])
            for i, v in zip(H.indices[span].tolist(), H.data[span].tolist(), strict=True):
                # [ ... ] / 2 holds x'Px: P_jj x_j^2 and 2 P_ij x_i x_j for i > j.
                quad.append(f"{cols[j]}^2" if i == j else f"{cols[i]} * {cols[j]}")
                quad[-1] = ("+" if v >= 0 else "") + f"{_num(v if i == j else 2 * v)} {quad[-1]}"
        terms += ["+ ["] + quad + ["] / 2"]
    if qp.offset != 0:
        terms.append(("+" if qp.offset >= 0 else "") + _num(qp.offset))
    _wrapped(fh, f" {OBJECTIVE}:", terms, "")
    fh.write("subject to\n")
    A = sp.csr_matrix(_csc(qp.A))
    for i, row in enumerate(rows):
        span = slice(A.indptr[i], A.indptr[i + 1])
        pairs = list(zip(A.data[span].tolist(), [cols[j] for j in A.indices[span]], strict=True))
        lo, hi = float(qp.row_lo[i]), float(qp.row_hi[i])
        sense = "=" if lo == hi else (">=" if np.isfinite(lo) or not np.isfinite(hi) else "<=")
        rhs = _num(hi if sense == "<=" else lo) if np.isfinite(lo) or np.isfinite(hi) else "-inf"
        _wrapped(fh, f" {row}:", _terms(pairs) or ["0 " + cols[0]], f" {sense} {rhs}")
    fh.write("bounds\n")
    for j, col in enumerate(cols):
        lo, hi = float(qp.col_lo[j]), float(qp.col_hi[j])
        if lo == hi:
            fh.write(f" {col} = {_num(lo)}\n")
        elif lo == -np.inf and hi == np.inf:
            fh.write(f" {col} free\n")
        elif hi == np.inf:
            if lo != 0:
                fh.write(f" {col} >= {_num(lo)}\n")
        else:
            fh.write(f" {'-inf' if lo == -np.inf else _num(lo)} <= {col} <= {_num(hi)}\n")
    fh.write("end\n")


# -------------------------------------------------------------------------------- reading


def read_highs(
    path: str | os.PathLike[str], *, mps_parser: str = "free", verbose: bool = False
) -> Any:
    """Validate an MPS/LP file (:mod:`optmodels.file_checks`) and read it into ``highspy.Highs``.

    ``mps_parser`` picks HiGHS's ``"free"`` or ``"fixed"`` MPS reader; a file that is not in the
    fixed layout is refused for ``"fixed"`` (:func:`check_fixed_layout`) rather than misread. Raises
    ``FileNotFoundError``, ``ValueError`` with ``FILE:LINE: reason`` for a malformed file, and
    :class:`ExportError` if HiGHS still refuses it (``verbose=True`` shows HiGHS's message).
    """
    return _read(Path(path), mps_parser, verbose)[0]


def _read(p: Path, mps_parser: str, verbose: bool) -> tuple[Any, str]:
    import highspy

    if not p.is_file():
        raise FileNotFoundError(f"No model file at {str(p)!r}.")
    if mps_parser not in MPS_FORMATS:
        raise ValueError(f"mps_parser={mps_parser!r}; choose one of {', '.join(MPS_FORMATS)}.")
    suffix = p.suffix.lower()
    if suffix == ".mps":
        name = check_mps(p) or p.stem
    elif suffix == ".lp":
        check_lp(p)
        name = p.stem
    else:
        raise ValueError(f"Cannot read {p.name!r}: use a .mps or .lp file.")
    if suffix == ".mps" and mps_parser == "fixed":
        check_fixed_layout(p)
    h = new_highs(verbose)
    h.setOptionValue("mps_parser_type_free", mps_parser == "free")
    if h.readModel(str(p)) not in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning):
        raise ExportError(
            f"HiGHS could not read {str(p)!r} (it passed the toolkit's checks); "
            "read_highs(path, verbose=True) shows HiGHS's message."
        )
    return h, name


_FIXED_SECTIONS = ("ROWS", "COLUMNS", "RHS", "RANGES", "BOUNDS", "QUADOBJ", "QMATRIX", "QSECTION")
_NAME_GAPS = (0, 3, 12, 13, 22, 23)  # 0-based columns a fixed data line leaves blank
_VALUE_START = 24  # 0-based: a fixed reader takes the first value from column 25


def check_fixed_layout(path: str | os.PathLike[str]) -> None:
    """Refuse an MPS file that a fixed-format reader would misread, naming the first bad line.

    A fixed reader takes names from columns 5-12 and 15-22 and the value from column 25 on,
    whatever the spaces say, so a longer name or a shifted field gives a different model with
    no error (see the module docstring). A data line of ROWS, COLUMNS, RHS, RANGES, BOUNDS,
    QUADOBJ, QMATRIX or QSECTION must therefore be blank in columns 1, 4, 13-14 and 23-24, hold
    no tab, and (ROWS) end by column 12 or (other than BOUNDS) carry a value from column 25.
    Integer ``'MARKER'`` lines are not checked. Raises ``ValueError`` ``FILE:LINE: reason``.
    """
    section = ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip()
            if not line or line.startswith("*"):
                continue
            if not line[0].isspace():
                section = line.split()[0].upper()
                continue
            if section not in _FIXED_SECTIONS or "'MARKER'" in line:
                continue
            gaps = _NAME_GAPS[:2] if section == "ROWS" else _NAME_GAPS
            bad = (
                "\t" in line
                or any(k < len(line) and line[k] != " " for k in gaps)
                or (section == "ROWS" and len(line) > 12)
                or (section not in ("ROWS", "BOUNDS") and len(line) <= _VALUE_START)
            )
            if bad:
                raise ValueError(
                    f"{path}:{lineno}: not in the fixed MPS layout (names of at most 8 characters "
                    "in columns 5-12 and 15-22, the value from column 25), so a fixed-format "
                    "reader would misread it; read it with mps_parser='free', or write it with "
                    "mps_format='fixed'."
                )


def read(path: str | os.PathLike[str], *, mps_parser: str = "free") -> QPData:
    """Read an MPS/LP file, validated as in :func:`read_highs`, as a minimisation :class:`QPData`.

    A maximisation is negated (c, P and the constant). Blocks are rebuilt when the names are
    runs ``B_0, B_1, ...`` (every file :func:`write` makes in free MPS or LP), else the default
    blocks ``x``/``r`` are used. Integer variables are refused (``ValueError``).
    """
    h, name = _read(Path(path), mps_parser, False)
    return _to_qpdata(h, name)


def _to_qpdata(h: Any, name: str) -> QPData:
    import highspy

    lp = h.getLp()
    n, m = int(lp.num_col_), int(lp.num_row_)
    if len(lp.integrality_) and any(v != highspy.HighsVarType.kContinuous for v in lp.integrality_):
        raise ValueError(f"The model {name!r} has integer variables; QPData holds LP/QP only.")
    mat = lp.a_matrix_
    triple = (np.array(mat.value_, float), np.array(mat.index_), np.array(mat.start_))
    if mat.format_ == highspy.MatrixFormat.kRowwise:
        A = sp.csr_matrix(triple, shape=(m, n))
    else:
        A = sp.csc_matrix(triple, shape=(m, n))
    sign = -1.0 if lp.sense_ == highspy.ObjSense.kMaximize else 1.0
    return QPData(
        c=sign * np.array(lp.col_cost_, float),
        A=A,
        row_lo=_inf(lp.row_lower_),
        row_hi=_inf(lp.row_upper_),
        col_lo=_inf(lp.col_lower_),
        col_hi=_inf(lp.col_upper_),
        P=None if (P := _hessian(h, n)) is None else sign * P,
        offset=sign * float(lp.offset_),
        col_blocks=blocks_from_names(list(lp.col_names_), n, "x"),
        row_blocks=blocks_from_names(list(lp.row_names_), m, "r"),
        name=name,
    )


def _inf(values: Any) -> np.ndarray:
    a = np.array(values, float)
    return np.where(np.abs(a) >= HIGHS_INFINITY, np.copysign(np.inf, a), a)


def _hessian(h: Any, n: int) -> sp.csr_matrix | None:
    import highspy

    hess = h.getModel().hessian_
    if hess.dim_ == 0 or not len(hess.value_):
        return None
    M = sp.csc_matrix(
        (np.array(hess.value_, float), np.array(hess.index_), np.array(hess.start_)), shape=(n, n)
    )
    if hess.format_ == highspy.HessianFormat.kSquare:
        return sp.csr_matrix(M)
    # Triangular: the lower triangle of the symmetric P.
    return sp.csr_matrix(M + M.T - sp.diags(M.diagonal()))


def blocks_from_names(names: list[str], size: int, fallback: str) -> list[Block]:
    """Blocks ``(B, k)`` if ``names`` are runs ``B_0 .. B_{k-1}``, else ``[(fallback, size)]``."""
    blocks: list[Block] = []
    for nm in names:
        base, _, index = nm.rpartition("_")
        if not index.isdigit() or not base or str(int(index)) != index:
            return [(fallback, size)]
        if blocks and blocks[-1][0] == base and int(index) == blocks[-1][1]:
            blocks[-1] = (base, blocks[-1][1] + 1)
        elif index == "0":
            blocks.append((base, 1))
        else:
            return [(fallback, size)]
    if len(names) != size:
        return [(fallback, size)]
    return blocks
