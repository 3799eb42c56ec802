"""optmodels fit / predict through model files, named coefficients, and SolveResult.summary()."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from instances.io import save
from optmodels.cli import main
from optmodels.estimators import KLRClassifier, LADRegressor, SVMClassifier
from optmodels.lad import LAD
from optmodels.model_io import FORMAT_VERSION, HEADER_KEY, load_model
from solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    coefficient_table,
    format_number,
)

NAMES = ["age", "dose", "bmi"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "optmodels.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fit")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y_reg = X @ np.array([2.0, -1.0, 0.5]) + 1.0 + rng.laplace(scale=0.3, size=40)
    y_cls = np.digitize(X[:, 0] - 0.5 * X[:, 1], [-0.5, 0.5]).astype(float)  # 0, 1, 2
    save(d / "reg.csv", X, y_reg, feature_names=NAMES)
    save(d / "cls.csv", X, y_cls, feature_names=NAMES)
    X_new = rng.normal(size=(12, 3))
    with open(d / "new.csv", "w", newline="") as fh:  # features only: no target column
        csv.writer(fh).writerows([NAMES, *X_new.tolist()])
    return d, X, y_reg, y_cls, X_new


def _predictions(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], np.array(rows[1:], dtype=float)


def test_fit_predict_through_files_equals_the_estimator(files, tmp_path):
    d, X, y_reg, _, X_new = files
    model, out = tmp_path / "lad.npz", tmp_path / "pred.csv"
    proc = run("fit", "lad", "--data", str(d / "reg.csv"), "--param", "quantile=0.3",
               "--model-out", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    ref = LADRegressor(quantile=0.3).fit(X, y_reg)
    assert list(rec["coefficients"]) == NAMES
    np.testing.assert_array_equal(list(rec["coefficients"].values()), ref.coef_)
    assert rec["intercept"] == ref.intercept_ and rec["fit"][0]["certified"] is True
    proc = run("predict", "--model", str(model), "--data", str(d / "new.csv"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    columns, pred = _predictions(out)
    assert columns == ["prediction"]
    np.testing.assert_array_equal(pred[:, 0], ref.predict(X_new))


@pytest.mark.parametrize(
    "problem, params, make",
    [
        ("svm", ["kernel=rbf", "C=2", "probability=true"],
         lambda: SVMClassifier(kernel="rbf", C=2.0, probability=True)),
        ("klr", ["C=0.5", "tol=1e-5"],
         lambda: KLRClassifier(C=0.5, strategy_options={"tol": 1e-5})),
    ],
)
def test_fit_predict_proba_in_python_equals_the_estimator(files, tmp_path, problem, params, make):
    d, X, _, y_cls, X_new = files
    model, out = tmp_path / "m.npz", tmp_path / "p.csv"
    args = [a for p in params for a in ("--param", p)]
    assert main(["fit", problem, "--data", str(d / "cls.csv"), "--model-out", str(model),
                 *args]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = make().fit(X, y_cls)
    assert load_model(model).get_params() == ref.get_params()
    assert main(["predict", "--model", str(model), "--data", str(d / "new.csv"), "--proba",
                 "--out", str(out)]) == 0
    columns, proba = _predictions(out)
    assert columns == ["proba_0.0", "proba_1.0", "proba_2.0"]
    np.testing.assert_array_equal(proba, ref.predict_proba(X_new))
    assert main(["predict", "--model", str(model), "--data", str(d / "cls.csv"), "--out",
                 str(out)]) == 0
    np.testing.assert_array_equal(_predictions(out)[1][:, 0], ref.predict(X))


def test_fit_text_names_the_coefficients(files, tmp_path, capsys):
    d, X, y_reg, _, _ = files
    assert main(["fit", "lad", "--data", str(d / "reg.csv"), "--model-out",
                 str(tmp_path / "m.npz")]) == 0
    text = capsys.readouterr().out
    ref = LADRegressor().fit(X, y_reg)
    for name, value in zip([*NAMES, "intercept"], [*ref.coef_, ref.intercept_], strict=True):
        line = next(ln for ln in text.splitlines() if ln.startswith(name + " "))
        assert float(line.split()[-1]) == pytest.approx(value, rel=1e-5)


def _tampered(src, dst, version=None, bump=False):
    with np.load(src, allow_pickle=False) as z:
        header = json.loads(str(z[HEADER_KEY][()]))
        arrays = {k: z[k] for k in z.files if k != HEADER_KEY}
    if version is not None:
        header["format_version"] = version
    if bump:
        arrays["coef_"] = arrays["coef_"] * 1.0001
    np.savez(dst, **{HEADER_KEY: np.array(json.dumps(header))}, **arrays)
    return dst


def test_tampered_old_and_foreign_models_exit_2_with_one_line(files, tmp_path):
    d = files[0]
    model = tmp_path / "m.npz"
    assert main(["fit", "ridge", "--data", str(d / "reg.csv"), "--model-out", str(model)]) == 0
    cases = {
        "SHA-256": _tampered(model, tmp_path / "hash.npz", bump=True),
        f"reads version {FORMAT_VERSION}": _tampered(model, tmp_path / "old.npz", version=0),
        "not an optmodels model file": d / "reg.csv",
    }
    for needle, path in cases.items():
        proc = run("predict", "--model", str(path), "--data", str(d / "new.csv"))
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr


def test_predict_refuses_other_columns_and_proba_of_a_regressor(files, tmp_path, capsys):
    d, X, y_reg, _, _ = files
    model = tmp_path / "m.npz"
    assert main(["fit", "lad", "--data", str(d / "reg.csv"), "--model-out", str(model)]) == 0
    other = tmp_path / "other.csv"
    save(other, X, y_reg, feature_names=["a", "b", "c"])
    capsys.readouterr()
    assert main(["predict", "--model", str(model), "--data", str(other)]) == 2
    assert main(["predict", "--model", str(model), "--data", str(d / "reg.csv"), "--proba"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "differ from the model's" in err[0] and "no probabilities" in err[1]


def test_solve_json_has_named_coefficients(files, capsys):
    d, X, y_reg, y_cls, _ = files
    assert main(["solve", "lad", "--data", str(d / "reg.csv"), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    ref = LAD(X, y_reg).solve_full()
    assert list(rec["coefficients"]) == NAMES
    np.testing.assert_allclose(list(rec["coefficients"].values()), ref.x, atol=1e-7)
    assert rec["intercept"] == pytest.approx(ref.extra["intercept"], abs=1e-7)
    binary = np.where(y_cls > 0, 1.0, -1.0)
    path = d / "bin.csv"
    save(path, X, binary, feature_names=NAMES)
    assert main(["solve", "svm", "--data", str(path), "--param", "kernel=rbf", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert "coefficients" not in rec and 0 < rec["n_support_vectors"] <= X.shape[0]


def test_summary_reads_like_a_statistics_report():
    res = SolveResult(
        TerminationCondition.OPTIMAL, SolutionStatus.OPTIMAL, objective=12.3456789,
        x=np.array([1.23456789, -0.000123456789]), bound=12.3456789 - 1e-13, gap=4e-15,
        iterations=7, build_time=0.25, solve_time=2.68, wall_time=2.93, solver="highs",
        solver_version="1.7.0", scale=100.0, extra={"intercept": 0.5},
    )
    text = res.summary(["age", "dose"])
    for needle in ("Status:", "optimal", "Certified:", "yes", "Wall time:", "2.93 s",
                   "250 ms", "2.68 s", "highs 1.7.0", "12.3457", "Gap scale:"):
        assert needle in text, needle
    gap_line = next(ln for ln in text.splitlines() if ln.startswith("Relative gap:"))
    assert gap_line.split()[2] == "0"
    rows = {ln.split()[0]: ln.split()[-1] for ln in text.splitlines()
            if ln.split() and ln.split()[0] in ("age", "dose", "intercept")}
    assert rows == {"age": "1.23457", "dose": "-0.000123457", "intercept": "0.5"}
    assert str(res) == res.summary() and "age" not in str(res)
    with pytest.raises(ValueError, match="one name per entry of x"):
        res.summary(["age"])


def test_format_number_is_the_one_format():
    assert format_number(None) == "-" and format_number(True) == "yes"
    assert format_number(3) == "3" and format_number(1 / 3) == "0.333333"
    assert format_number(2.934, "seconds") == "2.93 s"
    assert format_number(0.0123, "seconds") == "12.3 ms"
    assert format_number(4321.7, "seconds") == "4322 s"
    assert format_number(-3e-13, "gap") == "0" and format_number(2.5e-7, "gap") == "2.5e-07"
    table = coefficient_table(["a", "long_name"], [1.0, -2.0 / 3.0])
    assert table.splitlines()[2].split() == ["long_name", "-0.666667"]



def test_fit_svm_default_strategy_is_chosen_at_fit_time(files, tmp_path, capsys):
    """The estimator's default strategy 'auto': the interior point for a linear kernel, SMO for
    rbf; the JSON record names the one that ran. An option both candidates have passes; one
    that only SMO has needs --strategy smo."""
    out, data = str(tmp_path / "m.npz"), str(files[0] / "cls.csv")
    for kernel, ran in (("linear", "ipm"), ("rbf", "smo")):
        assert main(["fit", "svm", "--data", data, "--param", f"kernel={kernel}",
                     "--model-out", out, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["strategy"] == ran
    assert main(["fit", "svm", "--data", data, "--param", "kernel=linear", "--param",
                 "tol=1e-4", "--model-out", out, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "ipm"
    assert main(["fit", "svm", "--data", data, "--param", "cache_mb=100",
                 "--model-out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert "--param cache_mb" in err and "Pass --strategy smo" in err and err.count("\n") == 1
    assert not (tmp_path / "x.npz").exists()
