"""Checks an MPS or LP file before HiGHS reads it, so a bad file is refused, never misread.

HiGHS reads ``nan`` as a coefficient and solves to "optimal" with objective nan, sums or drops
duplicate entries, and silently makes up a model from a row name that ROWS never declared. No
maintained Python MPS validator exists, so this is a small hand-written pre-parser for the parts
of the format that :func:`optmodels.export.read` supports. Each problem raises ``ValueError`` as
``FILE:LINE: reason; fix``.

MPS (free or fixed layout, tokens separated by blanks, so names must not contain spaces):
sections NAME, OBJSENSE, OBJNAME, ROWS, COLUMNS, RHS, RANGES, BOUNDS, QUADOBJ or QMATRIX,
ENDATA, in that order, each at most once; ENDATA required. Every number must be a finite decimal
(``nan``, ``inf``, ``2.0.0``, ``1e999`` refused; write ``1e30`` or an MI/PL/FR bound for an
infinite bound). Every row named in COLUMNS/RHS/RANGES is declared in ROWS and every column named
in BOUNDS/QUADOBJ/QMATRIX in COLUMNS. A (column, row) pair appears once in COLUMNS, a column's
entries are contiguous, a row gets one RHS and one RANGES value, a column one lower and one upper
bound, QUADOBJ lists each pair once (one triangle), QMATRIX is symmetric.

LP: ``nan`` is refused everywhere, ``inf``/``infinity`` outside the bounds section (except as
the right-hand side of a constraint), and any token
that starts like a number but is not one (``2.0.0``, ``1x``); HiGHS's reader parses the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

MPS_SECTIONS = (
    "NAME",
    "OBJSENSE",
    "OBJNAME",
    "ROWS",
    "COLUMNS",
    "RHS",
    "RANGES",
    "BOUNDS",
    "QUADOBJ",
    "QMATRIX",
    "ENDATA",
)
_QUAD = ("QUADOBJ", "QMATRIX")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# Bound types -> (sets the lower bound, sets the upper bound, takes a value).
_BOUND_TYPES = {
    "UP": (False, True, True),
    "LO": (True, False, True),
    "FX": (True, True, True),
    "FR": (True, True, False),
    "MI": (True, False, False),
    "PL": (False, True, False),
    "BV": (True, True, False),
    "LI": (True, False, True),
    "UI": (False, True, True),
}


class _Fail(Exception):
    """A problem on the current line (the caller adds file and line number)."""


def parse_number(token: str) -> float:
    """``float(token)`` for a finite decimal literal; ``_Fail`` otherwise."""
    if not _NUMBER.fullmatch(token):
        raise _Fail(
            f"{token!r} is not a number (finite decimals only: no nan, inf, 2.0.0; "
            "use 1e30 or an MI/PL/FR bound for an infinite bound)"
        )
    value = float(token)
    if not math.isfinite(value):
        raise _Fail(f"{token!r} overflows to infinity")
    return value


class _MpsState:
    def __init__(self) -> None:
        self.name = ""
        self.objective: str | None = None
        self.objname: str | None = None
        self.rows: dict[str, str] = {}
        self.cols: dict[str, int] = {}
        self.current_col: str | None = None
        self.entries: dict[tuple[str, str], int] = {}
        self.sets: dict[str, str] = {}
        self.seen: dict[tuple[str, str], int] = {}
        self.quad: dict[tuple[str, str], tuple[float, int]] = {}
        self.section: str | None = None
        self.passed: set[str] = set()
        self.quad_section = ""


def check_mps(path: str | Path) -> str:
    """Validate an MPS file (see the module docstring); return the name on its NAME line."""
    st = _MpsState()
    ended = 0
    last = 0
    for lineno, line in _lines(path):
        last = lineno
        try:
            if ended:
                raise _Fail(f"text after ENDATA (line {ended}); remove it")
            if not line[0].isspace():
                _mps_header(st, line, lineno)
                if st.section == "ENDATA":
                    ended = lineno
                continue
            _mps_data(st, line.split(), lineno)
        except _Fail as err:
            raise ValueError(f"{path}:{lineno}: {err}.") from None
    if not ended:
        raise ValueError(
            f"{path}:{last}: the file ends without ENDATA; it is truncated or not an MPS file."
        )
    _check_symmetric(st, path)
    return st.name


def _lines(path: str | Path) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip("\r\n")
            if line.strip() and not line.startswith("*"):
                yield lineno, line


def _mps_header(st: _MpsState, line: str, lineno: int) -> None:
    tokens = line.split()
    key = tokens[0].upper()
    if key not in MPS_SECTIONS:
        raise _Fail(
            f"unknown or unsupported section {tokens[0]!r}; known: {', '.join(MPS_SECTIONS)} "
            "(data lines must start with a blank)"
        )
    if key in _QUAD and st.quad_section:
        raise _Fail(f"QUADOBJ and QMATRIX together ({st.quad_section} above); keep one of them")
    if st.section and MPS_SECTIONS.index(key) <= MPS_SECTIONS.index(st.section):
        raise _Fail(f"section {key} after {st.section}; the order is {', '.join(MPS_SECTIONS)}")
    if key in MPS_SECTIONS[4:-1] and "ROWS" not in st.passed:
        raise _Fail(f"section {key} before ROWS")
    st.section = key
    st.passed.add(key)
    if key in _QUAD:
        st.quad_section = key
    if key == "NAME":
        st.name = line[4:].strip()
    elif key == "OBJSENSE" and len(tokens) > 1:
        _sense(tokens[1])
    elif key == "OBJNAME" and len(tokens) > 1:
        st.objname = tokens[1]


def _sense(token: str) -> None:
    if token.upper() not in ("MIN", "MAX", "MINIMIZE", "MAXIMIZE", "MINIMISE", "MAXIMISE"):
        raise _Fail(f"objective sense {token!r}; use MIN or MAX")


def _mps_data(st: _MpsState, tokens: list[str], lineno: int) -> None:
    section = st.section
    if section is None or section == "NAME":
        raise _Fail("a data line before any section header (ROWS, COLUMNS, ...)")
    if section == "OBJSENSE":
        _sense(tokens[0])
    elif section == "OBJNAME":
        st.objname = tokens[0]
    elif section == "ROWS":
        _mps_row(st, tokens)
    elif section == "COLUMNS":
        _mps_column(st, tokens, lineno)
    elif section in ("RHS", "RANGES"):
        _mps_rhs(st, tokens, lineno, section)
    elif section == "BOUNDS":
        _mps_bound(st, tokens, lineno)
    else:
        _mps_quad(st, tokens, lineno, section)


def _mps_row(st: _MpsState, tokens: list[str]) -> None:
    if len(tokens) != 2 or tokens[0].upper() not in ("N", "E", "L", "G"):
        raise _Fail("a ROWS line is 'TYPE NAME' with TYPE one of N, E, L, G")
    kind, name = tokens[0].upper(), tokens[1]
    if name in st.rows:
        raise _Fail(f"row {name!r} is declared twice")
    st.rows[name] = kind
    if kind == "N" and st.objective is None and st.objname in (None, name):
        st.objective = name


def _declared_row(st: _MpsState, name: str, where: str) -> str:
    if name not in st.rows:
        raise _Fail(f"{where} names the row {name!r}, which ROWS does not declare")
    return name


def _mps_column(st: _MpsState, tokens: list[str], lineno: int) -> None:
    if len(tokens) >= 2 and tokens[1].strip("'\"").upper() == "MARKER":
        return  # integer markers: accepted here, refused by read() through the integrality
    if len(tokens) not in (3, 5):
        raise _Fail("a COLUMNS line is 'COLUMN ROW VALUE [ROW VALUE]'")
    col = tokens[0]
    if col != st.current_col:
        if col in st.cols:
            raise _Fail(
                f"column {col!r} appears again after other columns (first at line "
                f"{st.cols[col]}); keep a column's entries together"
            )
        st.cols[col] = lineno
        st.current_col = col
    for row, value in zip(tokens[1::2], tokens[2::2], strict=True):
        _declared_row(st, row, "COLUMNS")
        parse_number(value)
        key = (col, row)
        if key in st.entries:
            raise _Fail(
                f"duplicate entry for column {col!r} in row {row!r} (first at line "
                f"{st.entries[key]}); give each pair once"
            )
        st.entries[key] = lineno


def _set_and_pairs(st: _MpsState, tokens: list[str], section: str) -> list[str]:
    if len(tokens) not in (2, 3, 4, 5):
        raise _Fail(f"a {section} line is '[SET] ROW VALUE [ROW VALUE]'")
    if len(tokens) % 2:
        first = st.sets.setdefault(section, tokens[0])
        if tokens[0] != first:
            raise _Fail(f"a second {section} vector {tokens[0]!r} (the first is {first!r})")
        return tokens[1:]
    return tokens


def _mps_rhs(st: _MpsState, tokens: list[str], lineno: int, section: str) -> None:
    pairs = _set_and_pairs(st, tokens, section)
    for row, value in zip(pairs[0::2], pairs[1::2], strict=True):
        _declared_row(st, row, section)
        if section == "RANGES" and st.rows[row] == "N":
            raise _Fail(f"a range on the objective/free row {row!r}")
        parse_number(value)
        key = (section, row)
        if key in st.seen:
            raise _Fail(f"a second {section} value for row {row!r} (first at line {st.seen[key]})")
        st.seen[key] = lineno


def _mps_bound(st: _MpsState, tokens: list[str], lineno: int) -> None:
    kind = tokens[0].upper()
    if kind not in _BOUND_TYPES:
        raise _Fail(f"bound type {tokens[0]!r}; use one of {', '.join(_BOUND_TYPES)}")
    sets_lo, sets_hi, valued = _BOUND_TYPES[kind]
    rest = tokens[1:]
    if valued:
        if len(rest) not in (2, 3):
            raise _Fail(f"a {kind} bound is '{kind} [SET] COLUMN VALUE'")
        parse_number(rest[-1])
        col, bset = rest[-2], rest[0] if len(rest) == 3 else None
    else:
        if len(rest) not in (1, 2, 3):
            raise _Fail(f"a {kind} bound is '{kind} [SET] COLUMN'")
        if len(rest) == 3 or (len(rest) == 2 and rest[1] not in st.cols):
            parse_number(rest[-1])  # a value after a value-less type is tolerated if numeric
            rest = rest[:-1]
        col, bset = rest[-1], rest[0] if len(rest) == 2 else None
    if bset is not None:
        first = st.sets.setdefault("BOUNDS", bset)
        if bset != first:
            raise _Fail(f"a second bound set {bset!r} (the first is {first!r})")
    if col not in st.cols:
        raise _Fail(f"BOUNDS names the column {col!r}, which COLUMNS does not declare")
    for side, applies in (("lower", sets_lo), ("upper", sets_hi)):
        key = (side, col)
        if applies and key in st.seen:
            raise _Fail(f"a second {side} bound for column {col!r} (first at line {st.seen[key]})")
        if applies:
            st.seen[key] = lineno


def _mps_quad(st: _MpsState, tokens: list[str], lineno: int, section: str) -> None:
    if len(tokens) != 3:
        raise _Fail(f"a {section} line is 'COLUMN COLUMN VALUE'")
    a, b = tokens[0], tokens[1]
    for col in (a, b):
        if col not in st.cols:
            raise _Fail(f"{section} names the column {col!r}, which COLUMNS does not declare")
    value = parse_number(tokens[2])
    if (a, b) in st.quad:
        raise _Fail(f"duplicate {section} entry ({a}, {b}) (first at line {st.quad[(a, b)][1]})")
    if section == "QUADOBJ" and a != b and (b, a) in st.quad:
        raise _Fail(
            f"QUADOBJ lists both ({b}, {a}) (line {st.quad[(b, a)][1]}) and ({a}, {b}); "
            "it holds one triangle"
        )
    st.quad[(a, b)] = (value, lineno)


def _check_symmetric(st: _MpsState, path: str | Path) -> None:
    if st.quad_section != "QMATRIX":
        return
    for (a, b), (value, lineno) in st.quad.items():
        mirror = st.quad.get((b, a))
        if mirror is None or mirror[0] != value:
            raise ValueError(
                f"{path}:{lineno}: QMATRIX is not symmetric: ({a}, {b}) = {value} but "
                f"({b}, {a}) = {None if mirror is None else mirror[0]}; QMATRIX lists both "
                "triangles with equal values."
            )


# ---------------------------------------------------------------------------------------- LP

_LP_SECTION = re.compile(
    r"\s*(minimi[sz]e|minimum|min|maximi[sz]e|maximum|max|subject\s+to|such\s+that|s\.t\.|st"
    r"|bounds?|generals?|gen|integers?|binar(?:y|ies)|bin|semi-continuous|semis?|sos|end)"
    r"(?![A-Za-z0-9_.])",
    re.IGNORECASE,
)
_LP_TOKEN = re.compile(
    r"(?P<num>[0-9.][0-9.]*(?:[eE][+-]?[0-9]+)?[A-Za-z0-9_.]*)"
    r"|(?P<word>[^\s0-9.+\-<>=:\[\]*^/][^\s+\-<>=:\[\]*^/]*)"
)


def check_lp(path: str | Path) -> None:
    """Refuse ``nan`` tokens, ``inf`` outside the bounds section and malformed numbers."""
    section = ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.split("\\", 1)[0]
            head = _LP_SECTION.match(line)
            if head:
                section = head.group(1).lower()
                line = line[head.end() :]
            for match in _LP_TOKEN.finditer(line):
                try:
                    _lp_token(match, section, line[: match.start()])
                except _Fail as err:
                    raise ValueError(f"{path}:{lineno}: {err}.") from None


def _lp_token(match: re.Match[str], section: str, before: str) -> None:
    if match.group("num"):
        token = match.group("num")
        if not _NUMBER.fullmatch(token):
            raise _Fail(
                f"{token!r} is neither a number nor a name (names must not start with a digit "
                "or '.'; put a blank between a coefficient and its variable)"
            )
        if not math.isfinite(float(token)):
            raise _Fail(f"{token!r} overflows to infinity")
        return
    word = match.group("word").lower()
    if word == "nan":
        raise _Fail("a 'nan' value; clean the model that produced the file")
    after_relation = before.rstrip().rstrip("+-").rstrip().endswith(("<", ">", "="))
    if word in ("inf", "infinity") and not section.startswith("bound") and not after_relation:
        raise _Fail(f"an infinite value ({match.group('word')!r}) outside the bounds section")
