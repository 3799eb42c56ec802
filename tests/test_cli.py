"""The CLI as other tools call it: exit codes, one JSON object, files written atomically."""

from __future__ import annotations

import dataclasses
import json
import os
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
    from optmodels.export import read_highs

    h = read_highs(out)
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
    assert "reference: full" in proc.stdout and "seed=1" in proc.stdout
    assert "ridge: full (run 3/3) ..." in proc.stderr


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


# ---------------------------------------------------------------------------- options and errors
@pytest.fixture
def data_files(tmp_path):
    """Small instances: ridge (d = 10 < 256), SVM, KLR, LAD."""
    out = {}
    for problem, n, p in (("ridge", 120, 10), ("svm", 60, 3), ("klr", 40, 2), ("lad", 80, 3)):
        out[problem] = tmp_path / f"{problem}.npz"
        assert main(["generate", problem, "--n", str(n), "--p", str(p), "--out",
                     str(out[problem])]) == 0
    return out


def _one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and proc.stdout == "", proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "problem, args, needles",
    [
        ("ridge", ["--strategy", "rfd", "--param", "sketch_size=8"], ["'sketch_size'", "m,"]),
        ("ridge", ["--strategy", "pcg-fd", "--param", "m=64"], ["'m'", "at most d = 10"]),
        ("lad", ["--param", "tol=abc"], ["'tol'", "'abc'"]),
        ("svm", ["--param", "tol=abc"], ["'tol'"]),
        ("klr", ["--param", "tol=abc"], ["'tol'"]),
        ("ridge", ["--param", "tol=abc"], ["'tol'"]),
        ("lad", ["--param", "verbose=abc"], ["'verbose'", "true/false/1/0"]),
        ("lad", ["--strategy", "aid", "--param", "n_clusters=0"], ["'n_clusters'"]),
        ("svm", ["--strategy", "smo", "--param", "alpha0=1"], ["'alpha0'", "from Python"]),
    ],
)
def test_bad_strategy_options_exit_2_naming_them(data_files, problem, args, needles):
    _one_line_error(run("solve", problem, "--data", str(data_files[problem]), *args), *needles)


def test_ridge_sketches_run_with_d_below_256(data_files):
    """The default m is min(256, d) = 10; PCG then matches the Cholesky objective."""
    ref = json.loads(run("solve", "ridge", "--data", str(data_files["ridge"]), "--json").stdout)
    proc = run("solve", "ridge", "--data", str(data_files["ridge"]), "--strategy", "pcg-fd",
               "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["objective"] == pytest.approx(ref["objective"], rel=1e-9)


def test_compare_takes_per_strategy_and_shared_options(data_files):
    args = ("compare", "ridge", "--data", str(data_files["ridge"]), "--json", "--quiet",
            "--strategies", "rfd,pcg-fd")
    proc = run(*args, "--param", "max_iter=3", "--param", "rfd.m=4")
    assert proc.returncode == 0, proc.stderr
    rows = {r["strategy"]: r for r in json.loads(proc.stdout)}
    assert rows["rfd"]["iterations"] <= 3 and rows["pcg-fd"]["iterations"] <= 3
    from instances.io import load
    from optmodels.ridge import Ridge

    d = load(data_files["ridge"])
    expect = Ridge(d.X, d.y).solve("rfd", m=4, max_iter=3).objective
    assert rows["rfd"]["objective"] == pytest.approx(expect, rel=1e-12)
    _one_line_error(run(*args, "--param", "foo=1"), "'foo'", "max_iter")
    _one_line_error(run(*args, "--param", "aid.n_clusters=5"), "'aid' is not among")
    _one_line_error(run(*args, "--param", "rfd.m=abc"), "'m' option of strategy 'rfd'")


def test_compare_python_options_are_checked_before_running():
    from optmodels.compare import compare

    rng = np.random.default_rng(0)
    prob = __import__("optmodels.ridge", fromlist=["Ridge"]).Ridge(
        rng.normal(size=(50, 6)), rng.normal(size=50)
    )
    table = compare(prob, ["full", "rfd"], options={"rfd": {"m": 3}}, progress=False)
    assert table.results["rfd"].extra["history"]  # ran with its own option
    with pytest.raises(ValueError, match="'m' option of strategy 'rfd'"):
        compare(prob, ["rfd"], options={"rfd": {"m": 0}}, progress=False)
    with pytest.raises(ValueError, match="not compared"):
        compare(prob, ["rfd"], options={"fdrr": {"m": 3}}, progress=False)


def test_plot_without_matplotlib_fails_first_with_the_install_hint():
    code = (
        "import sys; sys.modules['matplotlib'] = None; from optmodels.cli import main; "
        "sys.exit(main(['compare', 'lad', '--generate', 'n=200000,p=50', '--plot', 'x.png']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    _one_line_error(proc, "--plot needs matplotlib", 'pip install "optmodels[plot]"')


def test_internal_error_is_one_line_and_a_log_file():
    code = (
        "import sys, optmodels.cli as c\n"
        "def boom(args): raise KeyError('bug')\n"
        "c._generate = boom\n"
        "sys.exit(c.main(['generate', 'lad', '--n', '5', '--p', '1', '--out', 'x.csv']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("optmodels generate: internal error: 'bug' (details in ")
    log = line.rsplit("details in ", 1)[1].rstrip(")")
    text = open(log).read()
    assert "Traceback" in text and "KeyError" in text
    os.unlink(log)


def test_strategy_subproblem_error_is_a_numerical_error_result(monkeypatch):
    from optmodels import strategies
    from optmodels.svm import SVM
    from solvers.errors import SubproblemError
    from solvers.result import TerminationCondition

    strategies._load()

    def failing(problem, **options):
        raise SubproblemError("HiGHS QP subproblem ended with kSolveError", strategy="block")

    block = strategies.get_strategy("svm", "block")
    monkeypatch.setitem(strategies._REGISTRY["svm"], "block",
                        dataclasses.replace(block, run=failing))
    rng = np.random.default_rng(0)
    res = SVM(rng.normal(size=(20, 2)), np.repeat([0, 1], 10)).solve("block")
    assert res.termination is TerminationCondition.NUMERICAL_ERROR and res.x is None
    assert "kSolveError" in res.raw_status and res.strategy == "block"


def test_python_dash_m_optmodels_and_help_on_every_flag():
    proc = subprocess.run([sys.executable, "-m", "optmodels", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "solve" in proc.stdout
    from optmodels.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        for action in parser._actions:
            assert action.help, (name, action.dest)


def test_the_command_line_imports_no_heavy_module_it_does_not_need():
    """CVXPY, Pyomo, scipy.special, matplotlib, Dask and pandas load only when a command uses
    them (each costs 0.1-2 s of a command's wall clock)."""
    heavy = ["cvxpy", "pyomo", "scipy.special", "matplotlib", "dask", "pandas", "sklearn"]
    code = ("import sys, optmodels, optmodels.cli; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
