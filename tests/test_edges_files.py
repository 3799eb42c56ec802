"""The edges of reading and writing files (issue 30): duplicated column names, exact CSV floats
on every pandas, NUL bytes, temporary files left by ``kill -9``, absurd svmlight indices and
generated instances too large for memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from instances import atomic, generators
from instances import io as dio
from instances.atomic import atomic_write, remove_stale_temps
from instances.io import DataFileError, load, save

# ---------------------------------------------------------------- duplicated column names


def _cli(capsys, *args: str) -> tuple[int, str]:
    from optmodels.cli import main

    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "header, repeated",
    [("x1,x1,y", "'x1'"), ("a,b,a,b,y", "'a', 'b'"), ("x, y ,y", "'y'"), ("x1,x1.1,x1,y", "'x1'")],
)
def test_csv_with_repeated_column_names_is_refused(tmp_path, header, repeated):
    path = tmp_path / "dup.csv"
    path.write_text(header + "\n" + ",".join(["1"] * len(header.split(","))) + "\n")
    with pytest.raises(DataFileError, match=rf"dup\.csv: column name\(s\) {repeated} appear "
                       r"more than once in the header \(line 1\).*Rename"):
        load(path)


def test_csv_with_repeated_columns_exits_2_in_the_cli_and_solves_nothing(tmp_path, capsys):
    """The issue's case: `x1,x1,y` solved with exit 0 and one x1 coefficient in --json."""
    path = tmp_path / "dup.csv"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    rows = [f"{a!r},{b!r},{a + 2 * b!r}" for a, b in X.tolist()]
    path.write_text("x1,x1,y\n" + "\n".join(rows) + "\n")
    code, err = _cli(capsys, "solve", "lad", "--data", str(path), "--json")
    assert code == 2 and "'x1' appear more than once" in err
    assert capsys.readouterr().out == ""


def test_svmlight_and_npz_repeated_feature_names_are_refused(tmp_path):
    svm = tmp_path / "d.svm"
    svm.write_text("# n_features: 2\n# feature_names: age,age\n1 1:1 2:2\n-1 2:3\n")
    with pytest.raises(DataFileError, match=r"d\.svm: column name\(s\) 'age' .*feature_names"):
        load(svm)
    npz = tmp_path / "d.npz"
    np.savez(npz, X=np.ones((2, 3)), y=np.ones(2), feature_names=np.array(["a", "b", "a"]))
    with pytest.raises(DataFileError, match=r"d\.npz: column name\(s\) 'a' "):
        load(npz)


def test_lazy_csv_parts_and_parquet_with_repeated_columns_are_refused(tmp_path):
    pytest.importorskip("dask.dataframe")
    from instances.lazy import load_lazy

    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "p0.csv").write_text("x1,x2,y\n1,2,3\n4,5,6\n")
    (parts / "p1.csv").write_text("x1,x1,y\n1,2,3\n")
    with pytest.raises(DataFileError, match=r"p1\.csv: column name\(s\) 'x1' .*its header"):
        load_lazy(str(parts / "*.csv"))
    (parts / "p1.csv").write_text("x1,x2,y\n7,8,9\n")
    d = load_lazy(str(parts / "*.csv"))                     # the control: distinct names load
    assert d.feature_names == ["x1", "x2"]
    np.testing.assert_array_equal(d.X.compute(), [[1, 2], [4, 5], [7, 8]])

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "pq"
    folder.mkdir()
    cols = [pa.array([1.0, 2.0]), pa.array([3.0, 4.0]), pa.array([5.0, 6.0])]
    pq.write_table(pa.table(cols, names=["x1", "x1", "y"]), folder / "part.0.parquet")
    with pytest.raises(DataFileError, match=r"part\.0\.parquet: column name\(s\) 'x1' "):
        load_lazy(folder)


# ---------------------------------------------------------------- exact floats, NUL bytes


def _random_floats(n: int, seed: int) -> np.ndarray:
    """n floats of random sign, mantissa and magnitude 1e-300 .. 1e300, plus hard cases."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(1.0, 10.0, n) * 10.0 ** rng.integers(-300, 301, n)
    v *= rng.choice([-1.0, 1.0], n)
    v[:8] = [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.1, 1 / 3,
             2.0**-1074 * 3, 9007199254740993.0]
    return v


def test_csv_reads_10000_repr_written_floats_bit_exact(tmp_path):
    """pandas < 3 reads ~30 % of these one ulp off by default: load must be exact anyway."""
    v = _random_floats(10_000, seed=1).reshape(-1, 4)
    path = tmp_path / "f.csv"
    path.write_text("a,b,c,y\n" + "".join(",".join(map(repr, r)) + "\n" for r in v.tolist()))
    d = load(path)
    got = np.column_stack([d.X, d.y])
    assert got.view(np.int64).tolist() == v.view(np.int64).tolist()  # bits, so -0.0 counts
    save(tmp_path / "g.csv", d.X, d.y)                   # and our own writer round-trips them
    back = load(tmp_path / "g.csv")
    assert np.column_stack([back.X, back.y]).view(np.int64).tolist() == v.view(np.int64).tolist()


def test_exact_float_arguments_match_the_installed_pandas():
    import pandas as pd

    kwargs = dio.exact_float_kwargs()
    if int(pd.__version__.split(".")[0]) >= 3:
        assert kwargs == {}          # exact by default; the argument is deprecated there
    else:
        assert kwargs == {"float_precision": "round_trip"}


def test_lazy_csv_reads_repr_written_floats_bit_exact(tmp_path):
    pytest.importorskip("dask.dataframe")
    from instances.lazy import load_lazy

    v = _random_floats(3_000, seed=2).reshape(-1, 3)
    path = tmp_path / "part0.csv"
    path.write_text("a,b,y\n" + "".join(",".join(map(repr, r)) + "\n" for r in v.tolist()))
    d = load_lazy(str(tmp_path / "*.csv"))
    got = np.column_stack([d.X.compute(), d.y.compute()])
    assert got.view(np.int64).tolist() == v.view(np.int64).tolist()


@pytest.mark.parametrize(
    "content, where",
    [
        (b"a,y\n1,\x002\n", r"line 2, column 'y': the cell '\\x002'"),     # pandas < 3: NaN
        (b"a,y\n1,2\n3,4\x00\n", r"line 3, column 'y': the cell '4\\x00'"),  # pandas < 3: 4
        (b"a,b,y\n\n1,2,3\n\n\x007,8,9\n", r"line 5, column 'a': the cell '\\x007'"),
        (b"a,y\r\n1,2\r\n3,\x00\r\n", r"line 3, column 'y': the cell '\\x00' holds a NUL"),
        (b"a\x00,y\n1,2\n", r"line 1 holds a NUL byte \(\\x00\), which no column name"),
    ],
)
def test_nul_byte_is_refused_naming_file_line_and_column(tmp_path, content, where):
    path = tmp_path / "nul.csv"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=rf"nul\.csv: {where}.*UTF-8 text: remove the byte"):
        load(path)


# ---------------------------------------------------------------- stale temporary files


def _temps(folder) -> list[str]:
    return sorted(f for f in os.listdir(folder) if ".optmodels-tmp-" in f)


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_left_by_sigkill_is_removed_by_the_next_write_of_that_target(tmp_path):
    target = tmp_path / "out.bin"
    script = textwrap.dedent(
        f"""
        import sys, time
        from instances.atomic import atomic_write
        with atomic_write({str(target)!r}) as fh:
            fh.write(b"x" * 1_700_000)
            fh.flush()
            print("writing", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"writing\n"
    stale = _temps(tmp_path)
    assert len(stale) == 1 and stale[0].startswith(f".out.bin.optmodels-tmp-{proc.pid}-")
    proc.kill()                                          # SIGKILL: nothing can clean up
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert _temps(tmp_path) == stale and not target.exists()
    assert (tmp_path / stale[0]).stat().st_size == 1_700_000

    with atomic_write(target) as fh:
        fh.write(b"new")
    assert sorted(os.listdir(tmp_path)) == ["out.bin"] and target.read_bytes() == b"new"


def test_only_dead_writers_temps_of_the_same_target_are_removed(tmp_path):
    dead, alive = _dead_pid(), os.getpid()
    names = {
        "stale": f".t.csv.optmodels-tmp-{dead}-0a1b2c3d4e5f.tmp",
        "live": f".t.csv.optmodels-tmp-{alive}-0a1b2c3d4e5f.tmp",     # e.g. another thread
        "other target": f".u.csv.optmodels-tmp-{dead}-0a1b2c3d4e5f.tmp",
        "foreign": f".t.csv.optmodels-tmp-{dead}-notours.txt",
        "user file": "t.csv.bak",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    removed = remove_stale_temps(tmp_path / "t.csv")
    assert removed == [str(tmp_path / names["stale"])]
    left = set(os.listdir(tmp_path))
    assert left == set(names.values()) - {names["stale"]}


def test_pid_check_without_psutil(monkeypatch):
    """The os.kill fallback: a reaped child is dead, this process and pid 1 are alive."""
    monkeypatch.setitem(sys.modules, "psutil", None)     # import psutil -> ImportError
    assert not atomic._pid_alive(_dead_pid())
    assert atomic._pid_alive(os.getpid()) and atomic._pid_alive(1)


# ---------------------------------------------------------------- svmlight feature indices


def _svm_file(path, index: str, lines: int = 50) -> None:
    body = [f"{(-1) ** i} 1:{i}.5 3:2" for i in range(lines)]
    body[17] = f"1 1:1 2:0.5 {index}:2"
    path.write_text("\n".join(body) + "\n")


@pytest.mark.parametrize("index", ["2000000000", "100000000000000000000", "3000000000"])
def test_svmlight_index_far_above_the_limit_is_refused_without_allocating(tmp_path, index):
    path = tmp_path / "wide.svm"
    _svm_file(path, index)
    tracemalloc.start()
    try:
        with pytest.raises(DataFileError, match=rf"wide\.svm: line 18: feature index {index} "
                           "exceeds the limit of 10,000,000 columns") as info:
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20                              # 2e9 names were 3.5 GB
    assert "Fix the index" in str(info.value)


def test_svmlight_wide_file_exits_2_in_the_cli(tmp_path, capsys):
    path = tmp_path / "wide.svm"
    _svm_file(path, "2000000000")
    code, err = _cli(capsys, "solve", "svm", "--data", str(path))
    assert code == 2 and "feature index 2000000000" in err and "n_features=2000000000" in err


def test_svmlight_n_features_lifts_the_limit_and_bounds_the_indices(tmp_path, monkeypatch):
    monkeypatch.setattr(dio, "MAX_SVMLIGHT_FEATURES", 100)
    path = tmp_path / "d.svm"
    _svm_file(path, "150", lines=20)
    with pytest.raises(DataFileError, match="feature index 150 exceeds the limit of 100 col"):
        load(path)
    d = load(path, n_features=160)                       # the user vouches for 160 columns
    assert d.X.shape == (20, 160) and d.X[17, 149] == 2.0 and len(d.feature_names) == 160
    with pytest.raises(DataFileError, match=r"line 18: feature index 150 exceeds n_features=120"):
        load(path, n_features=120)
    (tmp_path / "h.svm").write_text("# n_features: 500\n1 1:1\n")
    with pytest.raises(DataFileError, match=r"line 1: '# n_features: 500' exceeds the limit"):
        load(tmp_path / "h.svm")
    with pytest.raises(ValueError, match="'n_features' parameter of load"):
        load(path, n_features=0)
    (tmp_path / "d.csv").write_text("a,y\n1,2\n")
    with pytest.raises(DataFileError, match="applies to svmlight files only"):
        load(tmp_path / "d.csv", n_features=3)


# ---------------------------------------------------------------- generated instances


def test_generate_too_large_is_a_value_error_before_allocating(capsys):
    from optmodels.problems import generate

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"'n' and 'p' parameters of generate\('svm'\).*"
                           r"n=100,000,000 rows and p=100,000 columns need 145\.5 TiB"):
            generate("svm", n=10**8, p=10**5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    code, err = _cli(capsys, "generate", "lad", "--n", "1000000000", "--p", "10000",
                     "--out", os.devnull + ".csv")
    assert code == 2 and "72.8 TiB" in err and "Lower n or p" in err


def test_generate_size_limit_follows_the_memory_available(monkeypatch):
    from optmodels.problems import default_instance, generate

    monkeypatch.setattr(generators, "available_memory", lambda: (1e6, "memory available"))
    X, _ = generate("lad", n=1000, p=100)                # 0.8 MB: one copy fits
    assert X.shape == (1000, 100)
    with pytest.raises(ValueError, match=r"generate\('svm'\).*1\.5 MiB.*more than the 976\.6 "
                       "KiB of memory available"):
        generate("svm", n=1000, p=100)                   # two copies do not
    with pytest.raises(ValueError, match="The 'n' and 'p' parameters of make_classification"):
        generators.make_classification(n=1000, p=100)
    with pytest.raises(ValueError, match=r"generate\('ridge'\)"):
        default_instance("ridge", {"n": 2000, "p": 100})


def test_available_memory_is_positive_and_finite_here():
    have, what = generators.available_memory()
    assert 0 < have < float("inf") and what in ("memory available", "physical memory")


def test_cli_n_features_reaches_the_svmlight_reader(tmp_path, monkeypatch, capsys):
    import json

    from optmodels.cli import main

    monkeypatch.chdir(tmp_path)
    lines = ["1 1:0.5 3:1.0", "-1 2:1.5 3:0.2", "1 1:1.0 2:0.1", "-1 1:0.05 2:0.3",
             "1 3:0.9", "-1 1:0.2 2:0.8"]
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    assert main(["solve", "svm", "--data", "d.svm", "--param", "kernel=linear",
                 "--n-features", "6", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["coefficients"]) == 6
    (tmp_path / "far.svm").write_text("1 1:0.5\n-1 2000000000:1.0\n")
    assert main(["solve", "svm", "--data", "far.svm", "--param", "kernel=linear"]) == 2
    assert "2000000000" in capsys.readouterr().err
    assert main(["solve", "svm", "--data", "d.svm", "--n-features", "2"]) == 2  # index 3 > 2
    (tmp_path / "d.csv").write_text("x1,y\n1,1\n2,-1\n")
    assert main(["solve", "svm", "--data", "d.csv", "--n-features", "3"]) == 2
    assert "svmlight" in capsys.readouterr().err
