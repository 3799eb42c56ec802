"""A command's fixed costs (issue 11): ``optmodels solve svm --strategy smo`` imports SMO's
modules and not those of the other strategies (AID, HiGHS, Clarabel, the sketched Newton / IPM),
nor the heavy optional libraries; the command's exit skips the garbage collector's walk over
every object (gc.freeze at exit), a call of ``main`` from Python does not."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from instances.io import save

NOT_FOR_SMO = ["solvers.aid", "highspy", "clarabel", "solvers.highs_backend",
               "solvers.clarabel_backend", "solvers.sketch.ipm_svm", "solvers.sketch.newton",
               "cvxpy", "pyomo", "sklearn", "matplotlib", "dask", "scipy.special"]


def test_solve_svm_by_smo_loads_no_other_strategy(tmp_path):
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0.0, 1.0, (60, 3)), rng.normal(1.5, 1.0, (60, 3))])
    y = np.r_[np.ones(60), -np.ones(60)]
    path = tmp_path / "svm.csv"
    save(str(path), X, y)
    argv = ["solve", "svm", "--data", str(path), "--strategy", "smo", "--json",
            "--param", "kernel=rbf", "--param", "gamma=0.5"]
    code = ("import io, contextlib, json, sys; from optmodels.cli import main\n"
            "out = io.StringIO()\n"
            f"with contextlib.redirect_stdout(out): rc = main({argv!r})\n"
            f"print(json.dumps([rc, out.getvalue(), [m for m in {NOT_FOR_SMO!r} "
            "if m in sys.modules]]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    rc, out, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rc == 0 and json.loads(out)["certified"] is True
    assert loaded == []


def test_the_registered_routines_still_resolve():
    """The adapters name their routines lazily; each resolves to the routine that runs."""
    from optmodels.strategies import _REGISTRY, strategies_for
    from solvers.aid import aid_svm
    from solvers.smo import block_klr, smo_svm

    strategies_for("svm")
    assert _REGISTRY["svm"]["smo"].routine is smo_svm
    assert _REGISTRY["svm"]["aid"].routine is aid_svm
    assert _REGISTRY["klr"]["block"].routine is block_klr


def _frozen_at_exit(call: str) -> bool:
    """Whether the objects were frozen when the interpreter's last exit handler ran (handlers
    run last-in first-out, so one registered before ``main`` runs after main's)."""
    code = ("import atexit, gc, io, contextlib, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "sys.argv = ['optmodels', 'info', 'svm']\n"
            "from optmodels.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): rc = {call}\n"
            "assert rc == 0\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return proc.stdout.strip().splitlines()[-1] == "frozen True"


def test_the_command_freezes_the_collector_at_exit_and_a_python_call_does_not():
    assert _frozen_at_exit("main()")
    assert not _frozen_at_exit("main(['info', 'svm'])")
