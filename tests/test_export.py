"""MPS / LP export: round trips through HiGHS's readers, names, atomic writes, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from optmodels.export import read, write
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.backend import solve_qp
from solvers.errors import ExportError

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
Y = X @ [1.0, -1.0, 0.5] + rng.laplace(size=40)
YC = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
MODELS = [
    ("lad-primal", lambda: LAD(X, Y), "primal"),
    ("lad-dual", lambda: LAD(X, Y), "dual"),
    ("svm-primal", lambda: SVM(X, YC), "primal"),
    ("svm-dual-rbf", lambda: SVM(X, YC, kernel="rbf"), "dual"),
    ("ridge", lambda: Ridge(X, Y, alpha=2.0), "residual"),
]


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize("label, make, form", MODELS, ids=[m[0] for m in MODELS])
def test_round_trip_same_optimum(tmp_path, suffix, label, make, form):
    problem = make()
    qp = problem.qp(form)
    path = tmp_path / f"{label}{suffix}"
    write(problem, path, form=form)
    h = read(path)
    h.setOptionValue("qp_regularization_value", 0.0)
    h.run()
    ref = solve_qp(qp, "highs")
    assert h.getNumCol() == qp.n_cols and h.getNumRow() == qp.n_rows
    assert h.getInfo().objective_function_value == pytest.approx(ref.objective, rel=1e-9, abs=1e-9)
    names = set(h.getLp().col_names_)
    assert set(qp.col_names()) == names
    assert [f.name for f in tmp_path.iterdir()] == [path.name]


def test_names_are_readable():
    qp = LAD(X, Y).qp("primal")
    names = qp.col_names()
    assert names[:4] == ["beta_0", "beta_1", "beta_2", "intercept_0"]
    assert names[4] == "e_plus_0" and qp.row_names()[0] == "residual_0"


def test_mps_quadratic_section(tmp_path):
    write(Ridge(X, Y, alpha=2.0), tmp_path / "r.mps")
    text = (tmp_path / "r.mps").read_text()
    assert "QUADOBJ" in text or "QMATRIX" in text


def test_nan_model_is_not_written(tmp_path):
    qp = LAD(X, Y).qp("primal")
    qp.c[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        write(qp, tmp_path / "bad.mps")
    assert not list(tmp_path.iterdir())


def test_unknown_suffix_and_missing_folder(tmp_path):
    with pytest.raises(ExportError, match=r"\.mps or \.lp"):
        write(LAD(X, Y), tmp_path / "model.nl")
    with pytest.raises(ExportError, match="does not exist"):
        write(LAD(X, Y), tmp_path / "nope" / "model.mps")
    assert not list(tmp_path.iterdir())


def test_read_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="No model file"):
        read(tmp_path / "absent.mps")
