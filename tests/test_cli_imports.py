"""What a command loads: ``optmodels solve svm --strategy smo`` imports SMO's modules and not
those of the other strategies (AID, HiGHS, Clarabel, the sketched Newton / IPM), nor the heavy
optional libraries; each would add to the command's fixed start-up cost (issue 11)."""

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
