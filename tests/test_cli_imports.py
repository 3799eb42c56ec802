"""A command's fixed costs (issue 11): ``optmodels solve svm --strategy smo`` imports SMO's
modules and not those of the other strategies (AID, HiGHS, Clarabel, the sketches), nor the
heavy optional libraries, nor the parts of scipy that only other strategies use;
``fit svm`` / ``predict`` by SMO load no other strategy either (their scikit-learn estimator
brings scipy). The command's exit skips the garbage collector's walk over every object
(gc.freeze at exit), a call of ``main`` from Python does not."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from instances.io import save

OTHER_STRATEGIES = ["solvers.aid", "highspy", "clarabel", "solvers.highs_backend",
                    "solvers.clarabel_backend", "solvers.sketch.fd", "solvers.sketch.ridge",
                    "solvers.sketch.distributed", "solvers.sketch.ipm_svm",
                    "solvers.sketch.newton", "cvxpy", "pyomo", "matplotlib", "dask"]
"""Modules of the strategies other than SMO (and of the backends' libraries)."""

NOT_FOR_SMO = [*OTHER_STRATEGIES, "sklearn", "scipy.sparse", "scipy.special", "scipy.fft",
               "scipy.optimize", "scipy.stats"]
"""What ``solve svm --strategy smo`` must not load."""


def _last_line(code: str, timeout: float = 300) -> str:
    """The last line that ``python -c code`` prints (a fresh interpreter)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, check=True)
    return proc.stdout.strip().splitlines()[-1]


def _run_main(argvs: list[list[str]], watch: list[str]) -> tuple[list, list, list[str]]:
    """Run ``main(argv)`` for each argv in one fresh interpreter: the exit codes, the outputs,
    the modules of ``watch`` then loaded and every loaded scipy module."""
    code = ("import io, contextlib, json, sys; from optmodels.cli import main\n"
            "rcs, outs = [], []\n"
            f"for argv in {argvs!r}:\n"
            "    out = io.StringIO()\n"
            "    with contextlib.redirect_stdout(out): rcs.append(main(argv))\n"
            "    outs.append(out.getvalue())\n"
            f"print(json.dumps([rcs, outs, [m for m in {watch!r} if m in sys.modules], "
            "sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')]))")
    return json.loads(_last_line(code))


@pytest.fixture(scope="module")
def svm_file(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0.0, 1.0, (60, 3)), rng.normal(1.5, 1.0, (60, 3))])
    y = np.r_[np.ones(60), -np.ones(60)]
    path = tmp_path_factory.mktemp("imports") / "svm.csv"
    save(str(path), X, y)
    return path, X, y


def test_solve_svm_by_smo_loads_no_other_strategy_and_no_scipy_of_its_own(svm_file):
    path = svm_file[0]
    argv = ["solve", "svm", "--data", str(path), "--strategy", "smo", "--json",
            "--param", "kernel=rbf", "--param", "gamma=0.5"]
    (rc,), (out,), loaded, scipy_loaded = _run_main([argv], NOT_FOR_SMO)
    assert rc == 0 and json.loads(out)["certified"] is True
    assert loaded == []
    assert not [m for m in scipy_loaded if m.startswith(tuple(NOT_FOR_SMO))]


def test_fit_and_predict_svm_by_smo_load_no_other_strategy(svm_file, tmp_path):
    from optmodels.estimators import SVMClassifier

    path, X, y = svm_file
    model = tmp_path / "smo.npz"
    fit = ["fit", "svm", "--data", str(path), "--strategy", "smo", "--param", "kernel=rbf",
           "--param", "gamma=0.5", "--model-out", str(model)]
    predict = ["predict", "--model", str(model), "--data", str(path)]
    rcs, (_, out), loaded, _ = _run_main([fit, predict], OTHER_STRATEGIES)
    assert rcs == [0, 0] and loaded == []
    ref = SVMClassifier(kernel="rbf", gamma=0.5, strategy="smo").fit(X, y).predict(X)
    rows = out.strip().splitlines()
    assert rows[0] == "prediction"
    np.testing.assert_array_equal(np.array(rows[1:], dtype=float), ref)


def test_the_registered_routines_still_resolve():
    """The adapters name their routines lazily; each resolves to the routine that runs."""
    from optmodels.strategies import _REGISTRY, strategies_for
    from solvers.aid import aid_svm
    from solvers.smo import block_klr, smo_svm

    strategies_for("svm")
    assert _REGISTRY["svm"]["smo"].run.routine is smo_svm
    assert _REGISTRY["svm"]["aid"].run.routine is aid_svm
    assert _REGISTRY["klr"]["block"].run.routine is block_klr


def _frozen_at_exit(call: str) -> bool:
    """Whether the objects were frozen when the interpreter's last exit handler ran (handlers
    run last-in first-out, so one registered before ``main`` runs after main's)."""
    code = ("import atexit, gc, io, contextlib, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "sys.argv = ['optmodels', 'info', 'svm']\n"
            "from optmodels.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): rc = {call}\n"
            "assert rc == 0\n")
    return _last_line(code, timeout=120) == "frozen True"


def test_the_command_freezes_the_collector_at_exit_and_a_python_call_does_not():
    assert _frozen_at_exit("main()")
    assert not _frozen_at_exit("main(['info', 'svm'])")
