"""Exported variables named after the data's features (problems' ``feature_names``,
``QPData.col_labels``), read back through HiGHS's LP reader and both MPS parsers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from instances.io import save
from optmodels.cli import main
from optmodels.export import file_names, read_highs, write
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.qp import QPData

LONG_A = "a" * 300
LONG_B = "a" * 299 + "b"  # the same first 250 characters as LONG_A: cut to the same name
AWKWARD = ["my var", "x[2]", "my_var", "1x", "free", "e1", "", LONG_A, LONG_B]
# The names the module docstring's rules give (beta_ + the label's safe characters, an empty
# label -> its index, cut to 255 characters, repeats -> _2).
EXPECTED = [
    "beta_my_var",
    "beta_x_2_",
    "beta_my_var_2",
    "beta_1x",
    "beta_free",
    "beta_e1",
    "beta_6",
    "beta_" + "a" * 250,
    "beta_" + "a" * 248 + "_2",
]


@pytest.fixture(scope="module")
def lad():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, len(AWKWARD)))
    y = X @ rng.normal(size=len(AWKWARD)) + rng.laplace(size=25)
    return LAD(X, y, feature_names=AWKWARD)


def _optimum(path, parser: str = "free") -> tuple[list[str], float]:
    h = read_highs(path, mps_parser=parser)
    h.run()
    return list(h.getLp().col_names_), float(h.getInfo().objective_function_value)


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_awkward_feature_names_name_the_beta_columns(tmp_path, lad, suffix):
    out = write(lad, tmp_path / f"lad{suffix}")
    assert out.col_names[: len(AWKWARD)] == EXPECTED
    assert out.col_names[len(AWKWARD) : len(AWKWARD) + 2] == ["intercept_0", "e_plus_0"]
    assert len(set(out.col_names)) == len(out.col_names)
    assert max(map(len, out.col_names)) == 255
    # the map: original name (block_label) -> file name, for the names that changed
    assert out.col_map["beta_my var"] == "beta_my_var"
    assert out.col_map["beta_my_var"] == "beta_my_var_2"
    assert out.col_map["beta_" + LONG_B] == EXPECTED[-1]
    assert "beta_1x" not in out.col_map and "e_plus_0" not in out.col_map
    names, value = _optimum(out.path)
    assert names == out.col_names
    # independent reference: the LAD objective at the dual-form solve's coefficients
    ref = lad.solve_full().objective
    assert value == pytest.approx(ref, rel=1e-7)
    again = write(lad, tmp_path / f"again{suffix}")
    assert again.path.read_text() == out.path.read_text()  # deterministic


def test_fixed_mps_keeps_short_names_and_maps_the_labels(tmp_path, lad):
    out = write(lad, tmp_path / "lad.mps", mps_format="fixed")
    p = len(AWKWARD)
    assert out.col_names[:p] == [f"beta{j}" for j in range(p)]
    assert max(map(len, out.col_names)) <= 8
    assert out.col_map["beta_my var"] == "beta0" and out.col_map["beta_" + LONG_A] == "beta7"
    ref = lad.solve_full().objective
    for parser in ("free", "fixed"):
        names, value = _optimum(out.path, parser)
        assert names == out.col_names
        assert value == pytest.approx(ref, rel=1e-7)


def test_default_names_without_feature_names(tmp_path, lad):
    plain = LAD(lad.X, lad.y)
    qp = plain.qp()
    assert plain.feature_names is None and qp.col_labels == {}
    assert qp.col_names()[:2] == ["beta_0", "beta_1"]
    out = write(plain, tmp_path / "plain.lp")
    assert out.col_names[:2] == ["beta_0", "beta_1"] and out.col_map == {}


def test_a_label_equal_to_a_generated_name_is_disambiguated():
    blocks = [("w", 2), ("w_a", 3)]
    labels = {"w": ["a_1", "a_9"]}  # w_a_1 is also the generated entry 1 of block w_a
    names = file_names(blocks, "x", labels=labels)
    assert names == ["w_a_1_2", "w_a_9", "w_a_0", "w_a_1", "w_a_2"]
    assert file_names(blocks, "x", fixed=True, labels=labels)[:2] == ["w0", "w1"]


def test_svm_and_ridge_columns_named_after_features(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    names = ["age", "dose mg", "age"]
    svm = SVM(X, y, C=2.0, feature_names=names)
    out = write(svm, tmp_path / "svm.lp")
    assert out.col_names[:5] == ["w_age", "w_dose_mg", "w_age_2", "b_0", "xi_0"]
    got, value = _optimum(out.path)
    assert got == out.col_names
    assert value == pytest.approx(svm.solve_full().objective, rel=1e-6)
    ridge = Ridge(X, X @ [1.0, 2.0, 3.0], alpha=0.5, feature_names=names)
    out = write(ridge, tmp_path / "ridge.mps")
    assert out.col_names[:4] == ["x_age", "x_dose_mg", "x_age_2", "r_0"]
    got, value = _optimum(out.path)
    assert got == out.col_names
    assert value == pytest.approx(ridge.objective(ridge.closed_form()), rel=1e-6)


@pytest.mark.parametrize(
    "bad, needle",
    [(["a", "b"], "got 2 names"), (["a", "b", 3], "non-string 3"), ("abc", "got str")],
)
def test_bad_feature_names_are_refused(bad, needle):
    X, y = np.eye(3), np.arange(3.0)
    with pytest.raises(ValueError, match="feature_names") as info:
        LAD(X, y, feature_names=bad)
    assert needle in str(info.value)


def test_feature_names_are_an_attribute_not_a_parameter(lad):
    assert lad.feature_names == tuple(AWKWARD)
    assert "feature_names" not in lad.params
    with pytest.raises(AttributeError, match="fixed at construction"):
        lad.quantile = 0.3
    back = pickle.loads(pickle.dumps(lad))
    assert back.feature_names == lad.feature_names and back.params == lad.params
    with pytest.raises(AttributeError, match="fixed at construction"):
        back.fit_intercept = False
    with pytest.raises(ValueError, match="feature_names"):
        back.feature_names = ["too", "few"]


def test_qpdata_refuses_labels_that_do_not_fit_a_block():
    base = dict(c=np.zeros(2), A=sp.csr_matrix((0, 2)), row_lo=np.zeros(0), row_hi=np.zeros(0),
                col_lo=np.zeros(2), col_hi=np.ones(2), col_blocks=[("x", 2)])
    assert QPData(**base, col_labels={"x": ["p", "q"]}).col_names() == ["x_p", "x_q"]
    for labels in ({"x": ["p"]}, {"y": ["p", "q"]}):
        with pytest.raises(ValueError, match="col_labels"):
            QPData(**base, col_labels=labels)


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_cli_export_names_variables_after_the_csv_columns(tmp_path, capsys, suffix):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.laplace(scale=0.2, size=40)
    data = tmp_path / "f.csv"
    save(data, X, y, feature_names=["age", "dose [mg]", "3rd"])
    out = tmp_path / f"f{suffix}"
    assert main(["export", "lad", "--data", str(data), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    names, value = _optimum(out)
    assert names[:4] == ["beta_age", "beta_dose__mg_", "beta_3rd", "intercept_0"]
    assert value == pytest.approx(LAD(X, y).solve_full().objective, rel=1e-7)
