"""The CLI as other tools call it: exit codes, one JSON object, files written atomically."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from instances.io import save
from optmodels.cli import main
from optmodels.lad import LAD


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "optmodels.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def lad_csv(tmp_path):
    path = tmp_path / "lad.csv"
    assert (
        main(["generate", "lad", "--n", "300", "--p", "3", "--seed", "2", "--out", str(path)]) == 0
    )
    return path


def test_solve_json_matches_the_python_api(lad_csv, tmp_path):
    out = tmp_path / "beta.npy"
    proc = run("solve", "lad", "--data", str(lad_csv), "--json", "--solution-out", str(out))
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    from instances.io import load

    d = load(lad_csv)
    ref = LAD(d.X, d.y).solve_full()
    assert rec["objective"] == pytest.approx(ref.objective, rel=1e-9)
    assert rec["termination"] == "optimal" and rec["n"] == 300 and rec["p"] == 3
    assert rec["intercept"] == pytest.approx(ref.extra["intercept"], abs=1e-7)
    for key in ("problem", "strategy", "solver", "bound", "gap", "iterations", "time_s"):
        assert key in rec
    np.testing.assert_allclose(np.load(out), ref.x, atol=1e-7)


@pytest.mark.parametrize(
    "problem, params",
    [
        ("svm", ["--param", "C=2", "--param", "kernel=rbf", "--param", "gamma=0.5"]),
        ("klr", ["--param", "C=2"]),
        ("ridge", ["--param", "alpha=3", "--param", "fit_intercept=true"]),
    ],
)
def test_solve_each_problem(tmp_path, problem, params):
    path = tmp_path / "d.npz"
    assert main(["generate", problem, "--n", "80", "--p", "3", "--out", str(path)]) == 0
    proc = run("solve", problem, "--data", str(path), "--json", *params)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["termination"] == "optimal"


def test_bad_input_exits_2_with_one_line(tmp_path, lad_csv):
    cases = [
        ("solve", "lad", "--data", str(tmp_path / "missing.csv")),
        ("solve", "lad", "--data", str(lad_csv), "--param", "C=1"),
        ("solve", "lad", "--data", str(lad_csv), "--strategy", "magic"),
        ("solve", "svm", "--data", str(lad_csv)),
        ("solve", "lad", "--data", str(lad_csv), "--target", "nope"),
        ("export", "lad", "--data", str(lad_csv), "--out", str(tmp_path / "m.nl")),
    ]
    for args in cases:
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stdout == ""
    assert sorted(f.name for f in tmp_path.iterdir()) == ["lad.csv"]


def test_nan_in_data_is_refused(tmp_path):
    path = tmp_path / "nan.csv"
    path.write_text("a,b,y\n1,2,3\nnan,1,2\n3,4,5\n")
    proc = run("solve", "lad", "--data", str(path))
    assert proc.returncode == 2 and "NaN" in proc.stderr


def test_export_round_trip(lad_csv, tmp_path):
    out = tmp_path / "lad.mps"
    proc = run("export", "lad", "--data", str(lad_csv), "--out", str(out), "--form", "primal")
    assert proc.returncode == 0, proc.stderr
    from optmodels.export import read

    h = read(out)
    h.run()
    from instances.io import load

    d = load(lad_csv)
    assert h.getInfo().objective_function_value == pytest.approx(
        LAD(d.X, d.y).solve_full().objective, rel=1e-9
    )


def test_compare_json_and_table(lad_csv):
    proc = run(
        "compare", "lad", "--data", str(lad_csv), "--strategies", "full", "--json", "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert isinstance(rows, list) and rows[0]["strategy"] == "full"
    assert rows[0]["ref_gap"] == 0.0 and proc.stderr == ""
    proc = run("compare", "ridge", "--generate", "n=300,p=20,seed=1", "--strategies", "full")
    assert proc.returncode == 0, proc.stderr
    assert "reference = full" in proc.stdout and "[1/1]" in proc.stderr


def test_generate_is_deterministic(tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    for p in (a, b):
        assert (
            main(["generate", "ridge", "--n", "50", "--p", "8", "--seed", "5", "--out", str(p)])
            == 0
        )
    np.testing.assert_array_equal(np.load(a)["X"], np.load(b)["X"])


def test_saved_weights_are_used(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    w = rng.integers(1, 4, size=30).astype(float)
    path = tmp_path / "w.csv"
    save(path, X, y, w)
    proc = run("solve", "lad", "--data", str(path), "--json")
    assert json.loads(proc.stdout)["objective"] == pytest.approx(
        LAD(X, y, sample_weight=w).solve_full().objective, rel=1e-9
    )
