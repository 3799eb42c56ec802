"""Files the toolkit writes or reads: a malformed-file corpus, names, umask, interrupted writes
and the CLI's --solution-out / --mps-format."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from instances.atomic import atomic_write
from instances.io import save
from optmodels.cli import main
from optmodels.export import file_names, read, read_highs, write
from optmodels.lad import LAD
from solvers.backend import solve_qp
from solvers.qp import QPData

GOOD_MPS = """\
NAME          tiny
ROWS
 N  obj
 G  c1
 L  c2
COLUMNS
    x         obj       1
    x         c1        1
    x         c2        1
    y         obj       2
    y         c1        1
RHS
    RHS       c1        1
    RHS       c2        4
BOUNDS
 UP BND       x         3
QUADOBJ
    x         x         2
ENDATA
"""


def _mps(tmp_path, text: str):
    path = tmp_path / "m.mps"
    path.write_text(text)
    return path


def test_the_corpus_base_file_is_valid(tmp_path):
    qp = read(_mps(tmp_path, GOOD_MPS))
    assert qp.name == "tiny" and (qp.n_cols, qp.n_rows) == (2, 2)
    res = solve_qp(qp, "highs")
    # min x^2 + x + 2y over x in [0, 3], y >= 0, x + y >= 1: on x + y = 1, f = x^2 - x + 2,
    # minimal at x = 1/2 with f = 7/4.
    assert res.objective == pytest.approx(1.75, abs=1e-9)
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-7)


CORPUS = [
    ("bad section", GOOD_MPS.replace("RHS\n", "RHSIDE\n", 1), 12, "unknown or unsupported section"),
    ("missing ENDATA", GOOD_MPS.replace("ENDATA\n", ""), 18, "without ENDATA"),
    ("nan", GOOD_MPS.replace("y         obj       2", "y         obj       nan"), 10, "'nan'"),
    ("inf", GOOD_MPS.replace("UP BND       x         3", "UP BND x inf"), 16, "'inf'"),
    ("2.0.0", GOOD_MPS.replace("c2        4", "c2        2.0.0"), 14, "'2.0.0'"),
    (
        "duplicate COLUMNS entry",
        GOOD_MPS.replace("    x         c2        1\n", "    x         c1        5\n"),
        9,
        "duplicate entry for column 'x' in row 'c1' (first at line 8)",
    ),
    ("undeclared row", GOOD_MPS.replace("    y         c1", "    y         c9"), 11, "'c9'"),
    ("undeclared RHS row", GOOD_MPS.replace("RHS       c2", "RHS       c7"), 14, "'c7'"),
    ("undeclared bound column", GOOD_MPS.replace("BND       x", "BND       z"), 16, "'z'"),
    (
        "QUADOBJ and QMATRIX",
        GOOD_MPS.replace("ENDATA", "QMATRIX\n    x         x         2\nENDATA"),
        19,
        "QUADOBJ and QMATRIX together",
    ),
    (
        "asymmetric QMATRIX",
        GOOD_MPS.replace("QUADOBJ\n", "QMATRIX\n").replace(
            "x         x         2\n", "x         x         2\n    x         y         1\n"
        ),
        19,
        "not symmetric",
    ),
    (
        "both triangles in QUADOBJ",
        GOOD_MPS.replace(
            "x         x         2\n",
            "x         y         2\n    y         x         2\n",
        ),
        19,
        "one triangle",
    ),
    (
        "column split in two runs",
        GOOD_MPS.replace(
            "    y         c1        1\n", "    y         c1        1\n    x         obj       1\n"
        ),
        12,
        "appears again",
    ),
    ("data before a section", "    x  obj  1\n" + GOOD_MPS, 1, "before any section"),
    ("sections out of order", GOOD_MPS.replace("ROWS", "COLUMNS", 1), 2, "before ROWS"),
]


@pytest.mark.parametrize("text, line, needle", [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_malformed_mps_is_refused_with_its_line(tmp_path, text, line, needle):
    path = _mps(tmp_path, text)
    for reader in (read, read_highs):
        with pytest.raises(ValueError) as err:
            reader(path)
        message = str(err.value)
        assert message.startswith(f"{path}:{line}: "), message
        assert needle in message, message


LP_CORPUS = [
    ("nan", "min\n obj: nan x + y\nst\n c: x + y >= 1\nend\n", 2, "nan"),
    ("inf coefficient", "min\n obj: x + y\nst\n c: inf x + y >= 1\nend\n", 4, "infinite"),
    ("2.0.0", "min\n obj: x + y\nst\n c: x + y >= 2.0.0\nend\n", 4, "'2.0.0'"),
    ("leading digit", "min\n obj: 1 1x + y\nst\n c: y >= 1\nend\n", 2, "'1x'"),
]


@pytest.mark.parametrize(
    "text, line, needle", [c[1:] for c in LP_CORPUS], ids=[c[0] for c in LP_CORPUS]
)
def test_malformed_lp_is_refused_with_its_line(tmp_path, text, line, needle):
    path = tmp_path / "m.lp"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and needle in str(err.value)


def test_lp_bounds_may_say_inf(tmp_path):
    path = tmp_path / "ok.lp"
    path.write_text(
        "min\n obj: x + y\nst\n c: x + y >= 1\nbounds\n -inf <= x <= 2\n y >= -1\nend\n"
    )
    qp = read(path)
    assert qp.col_lo.tolist() == [-np.inf, -1.0] and qp.col_hi.tolist() == [2.0, np.inf]


# ------------------------------------------------------------------------------------ names

HOSTILE_BLOCKS = [
    ("a" * 300, 2),
    ("my var", 1),
    ("x[1]", 1),
    ("1x", 1),
    ("e1", 1),
    ("x", 1),
    ("x", 1),
    ("st", 1),
    ("end", 1),
    ("free", 1),
    ("", 1),
    ("abcdefghijklmnop", 12),
]


def _hostile_model() -> QPData:
    n = sum(size for _, size in HOSTILE_BLOCKS)
    rng = np.random.default_rng(3)
    return QPData(
        c=rng.uniform(0.5, 2.0, n),
        A=sp.csr_matrix(np.vstack([np.ones(n), rng.uniform(0, 1, n)])),
        row_lo=np.array([1.0, 0.5]),
        row_hi=np.array([np.inf, np.inf]),
        col_lo=np.zeros(n),
        col_hi=np.ones(n),
        col_blocks=HOSTILE_BLOCKS,
        row_blocks=[("st", 1), ("end", 1)],
        name="hostile names model",
    )


def test_hostile_names_are_sanitised_deterministically():
    names = file_names(HOSTILE_BLOCKS, "x")
    assert names[:2] == ["a" * 240 + "_0", "a" * 240 + "_1"]
    assert names[2:11] == [
        "my_var_0",
        "x_1__0",
        "n1x_0",
        "ne1_0",
        "x_0",
        "x_2_0",
        "st_0",
        "end_0",
        "free_0",
    ]
    assert names[11] == "x_3_0"  # the empty name falls back to x, taken twice already
    assert len(set(names)) == len(names) and max(map(len, names)) <= 255
    short = file_names(HOSTILE_BLOCKS, "x", fixed=True)
    assert len(set(short)) == len(short) and max(map(len, short)) <= 8
    assert short[-12:] == [f"abcdef{i}" for i in range(12)]
    assert file_names(HOSTILE_BLOCKS, "x", fixed=True) == short


@pytest.mark.parametrize(
    "suffix, mps_format, parsers",
    [(".lp", "free", ["free"]), (".mps", "free", ["free"]), (".mps", "fixed", ["free", "fixed"])],
)
def test_hostile_names_read_back_with_the_same_names(tmp_path, suffix, mps_format, parsers):
    qp = _hostile_model()
    path = tmp_path / f"hostile{suffix}"
    written = write(qp, path, mps_format=mps_format)
    assert written.col_map["my var_0"] == written.col_names[2]
    ref = solve_qp(qp, "highs").objective
    for parser in parsers:
        h = read_highs(path, mps_parser=parser)
        assert list(h.getLp().col_names_) == written.col_names
        assert list(h.getLp().row_names_) == written.row_names
        back = read(path, mps_parser=parser)
        assert back.n_cols == qp.n_cols and back.n_rows == qp.n_rows
        assert abs(solve_qp(back, "highs").objective - ref) <= max(1e-9, 1e-9 * abs(ref))


# ----------------------------------------------------------------------- permissions, signals


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_files_follow_the_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        write(LAD(np.eye(3), np.arange(3.0)), tmp_path / "m.mps")
        write(LAD(np.eye(3), np.arange(3.0)), tmp_path / "m.lp")
        save(tmp_path / "d.csv", np.eye(3), np.arange(3.0))
    finally:
        os.umask(old)
    assert {f.name: _mode(f) for f in tmp_path.iterdir()} == dict.fromkeys(
        ["m.mps", "m.lp", "d.csv"], expected
    )


def test_exception_while_writing_keeps_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"), atomic_write(target) as fh:
        fh.write(b"partial")
        raise RuntimeError("boom")
    assert [f.name for f in tmp_path.iterdir()] == ["t.bin"] and target.read_bytes() == b"old"


def test_sigint_while_writing_removes_the_temp_and_restores_the_handler(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "t.bin") as fh:
        fh.write(b"partial")
        os.kill(os.getpid(), signal.SIGINT)
    assert not list(tmp_path.iterdir())
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_while_writing_terminates_without_leaving_a_temp(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal
        from instances.atomic import atomic_write
        with atomic_write({str(tmp_path / "t.bin")!r}) as fh:
            fh.write(b"partial")
            os.kill(os.getpid(), signal.SIGTERM)
            fh.write(b"never")
        print("survived")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGTERM and b"survived" not in proc.stdout
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------- CLI


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "optmodels.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def lad_data(tmp_path_factory):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    y = X @ [2.0, -1.0, 0.5] + 1.0 + rng.laplace(size=60)
    path = tmp_path_factory.mktemp("cli") / "lad.csv"
    save(path, X, y)
    return path, LAD(X, y).solve_full()


def test_solution_out_formats(tmp_path, lad_data):
    data, ref = lad_data
    expected = ["beta_0", "beta_1", "beta_2", "intercept"]
    values = [*ref.x, ref.extra["intercept"]]
    old = os.umask(0o022)
    try:
        for suffix in (".npy", ".csv", ".json"):
            out = tmp_path / f"sol{suffix}"
            args = ("solve", "lad", "--data", str(data), "--json", "--solution-out", str(out))
            if suffix == ".csv":  # one run as other tools call it, the others in-process
                proc = _cli(*args)
                assert proc.returncode == 0, proc.stderr
            else:
                assert main(list(args)) == 0
            assert _mode(out) == 0o644
    finally:
        os.umask(old)
    np.testing.assert_allclose(np.load(tmp_path / "sol.npy"), ref.x, atol=1e-7)
    lines = (tmp_path / "sol.csv").read_text().splitlines()
    assert lines[0] == "name,value" and [ln.split(",")[0] for ln in lines[1:]] == expected
    np.testing.assert_allclose([float(ln.split(",")[1]) for ln in lines[1:]], values, atol=1e-7)
    doc = json.loads((tmp_path / "sol.json").read_text())
    assert doc["names"] == expected
    np.testing.assert_allclose(doc["values"], values, atol=1e-7)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["sol.csv", "sol.json", "sol.npy"]


def test_solution_out_unknown_extension_exits_2_with_one_line(tmp_path, lad_data):
    out = tmp_path / "sol.txt"
    proc = _cli("solve", "lad", "--data", str(lad_data[0]), "--solution-out", str(out))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and all(s in lines[0] for s in (".npy", ".csv", ".json", "sol.txt"))
    assert not list(tmp_path.iterdir())


def test_export_fixed_mps_reads_back_in_both_parsers(tmp_path, lad_data):
    out = tmp_path / "lad.mps"
    proc = _cli(
        "export",
        "lad",
        "--data",
        str(lad_data[0]),
        "--out",
        str(out),
        "--form",
        "dual",
        "--mps-format",
        "fixed",
    )
    assert proc.returncode == 0, proc.stderr
    for parser in ("free", "fixed"):
        back = read(out, mps_parser=parser)
        assert back.n_cols == 60 and back.n_rows == 4
        # The LAD dual optimum is minus the LAD objective.
        assert solve_qp(back, "highs").objective == pytest.approx(-lad_data[1].objective, rel=1e-9)
