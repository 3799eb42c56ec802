"""The binary linear SVM on lazily read (Dask) data through the CLI (``solve svm`` / ``fit svm``
with ``--strategy aid`` on .npy chunks and Parquet) and SVMClassifier on Dask arrays.

References: the same command / fit on the in-memory file or arrays (AID's Dask passes reproduce
its in-memory iterates), and, independently, the full primal QP of the SVM problem (Clarabel).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import test_dask  # noqa: E402  (tests/ is on sys.path under pytest)

from instances.io import save  # noqa: E402
from optmodels.cli import main  # noqa: E402
from optmodels.estimators import SVMClassifier  # noqa: E402
from optmodels.svm import SVM  # noqa: E402
from solvers.result import CERTIFICATE_TOL  # noqa: E402

client = test_dask.client  # the module-scoped LocalCluster fixture: 2 processes, 1 thread each


def _svm_data(n=2400, p=3, seed=0):
    """Overlapping classes (many margin violations) and weights in [0.2, 2], every 7th 0."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * np.array([1.0, 3.0, 0.5])[:p]
    y = np.where(X @ rng.standard_normal(p) + 0.7 * rng.standard_normal(n) > 0.3, 1.0, -1.0)
    s = rng.uniform(0.2, 2.0, n)
    s[::7] = 0.0
    return X, y, s


@pytest.fixture
def npy(tmp_path):
    """The data as all.npz and as three .npy chunks [X | y]; (npz path, glob, X, y)."""
    X, y, _ = _svm_data()
    save(tmp_path / "all.npz", X, y)
    (tmp_path / "chunks").mkdir()
    for i in range(3):
        rows = slice(800 * i, 800 * (i + 1))
        np.save(tmp_path / "chunks" / f"part-{i}.npy", np.column_stack([X[rows], y[rows]]))
    return str(tmp_path / "all.npz"), str(tmp_path / "chunks" / "*.npy"), X, y


def _cli_json(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def _same_fit(a, b, rel=1e-12):
    assert a["certified"] and b["certified"]
    assert abs(a["objective"] - b["objective"]) <= rel * b["objective"]
    assert abs(a["intercept"] - b["intercept"]) <= rel * max(1.0, abs(b["intercept"]))
    assert list(a["coefficients"]) == list(b["coefficients"])
    for k, v in b["coefficients"].items():
        assert abs(a["coefficients"][k] - v) <= rel * max(1.0, abs(v))


SOLVE = ["solve", "svm", "--strategy", "aid", "--param", "C=0.7", "--param", "n_clusters=40",
         "--json"]


def test_cli_solve_on_npy_chunks_threads_equals_in_memory(npy, capsys):
    npz, glob, X, y = npy
    mem = _cli_json([*SOLVE, "--data", npz], capsys)
    lazy = _cli_json([*SOLVE, "--data", glob], capsys)  # Dask's threads in this process
    assert lazy["n"] == 2400 and lazy["p"] == 3 and lazy["strategy"] == "aid"
    _same_fit(lazy, mem)
    full = SVM(X, y, C=0.7, kernel="linear").solve("full")  # independent: the primal QP
    assert abs(lazy["objective"] - full.objective) <= CERTIFICATE_TOL * 0.7 * X.shape[0]


def test_cli_weighted_parquet_equals_in_memory_csv(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, y, s = _svm_data(n=1800, seed=3)
    names = ["a", "b", "c"]
    save(tmp_path / "all.csv", X, np.where(y > 0, 5, 2), s, feature_names=names)
    (tmp_path / "pq").mkdir()
    for i in range(3):
        rows = slice(600 * i, 600 * (i + 1))
        part = pd.DataFrame(X[rows], columns=names)
        part["label"], part["w"] = np.where(y[rows] > 0, 5, 2), s[rows]
        part.to_parquet(tmp_path / "pq" / f"part-{i}.parquet")
    mem = _cli_json([*SOLVE, "--data", str(tmp_path / "all.csv"), "--weight", "sample_weight"],
                    capsys)
    lazy = _cli_json([*SOLVE, "--data", str(tmp_path / "pq"), "--target", "label",
                      "--weight", "w"], capsys)
    _same_fit(lazy, mem)
    full = SVM(X, y, sample_weight=s, C=0.7, kernel="linear").solve("full")
    assert abs(lazy["objective"] - full.objective) <= CERTIFICATE_TOL * 0.7 * s.sum()


FIT = ["fit", "svm", "--strategy", "aid", "--param", "kernel=linear", "--param", "C=0.7",
       "--param", "class_weight=balanced", "--json"]


def test_cli_fit_on_npy_chunks_equals_in_memory_and_predicts_alike(npy, tmp_path, capsys):
    npz, glob, _, _ = npy
    mem = _cli_json([*FIT, "--data", npz, "--model-out", str(tmp_path / "mem.npz")], capsys)
    lazy = _cli_json([*FIT, "--data", glob, "--model-out", str(tmp_path / "lazy.npz")], capsys)
    assert mem["n_support_vectors"] > 0 and "n_support_vectors" not in lazy
    assert lazy["fit"][0]["certified"]
    assert abs(lazy["fit"][0]["objective"] - mem["fit"][0]["objective"]) <= 1e-12 * (
        mem["fit"][0]["objective"])
    assert abs(lazy["intercept"] - mem["intercept"]) <= 1e-10
    for k, v in mem["coefficients"].items():
        assert abs(lazy["coefficients"][k] - v) <= 1e-10 * max(1.0, abs(v))
    for model in ("mem", "lazy"):
        assert main(["predict", "--model", str(tmp_path / f"{model}.npz"), "--data", npz,
                     "--out", str(tmp_path / f"{model}.csv")]) == 0
    capsys.readouterr()
    assert (tmp_path / "lazy.csv").read_text() == (tmp_path / "mem.csv").read_text()
    # the default strategy ('auto') is AID on chunked data
    auto = _cli_json(["fit", "svm", "--param", "kernel=linear", "--json", "--data", glob,
                      "--model-out", str(tmp_path / "t.npz")], capsys)
    assert auto["strategy"] == "aid" and auto["fit"][0]["certified"]
    assert main(["fit", "svm", "--strategy", "aid", "--param", "kernel=linear", "--data", glob,
                 "--model-out", str(tmp_path / "t.npz")]) == 0
    assert "Support vectors: not collected" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["solve", "svm"], "svm runs with --strategy aid; got --strategy full"),
    (["solve", "svm", "--strategy", "smo"], "Pass --strategy aid"),
    (["solve", "svm", "--strategy", "aid", "--param", "kernel=rbf"],
     "needs --param kernel=linear"),
    (["fit", "svm", "--strategy", "aid", "--model-out", "m.npz"],  # the estimator's rbf
     "needs --param kernel=linear"),
    (["fit", "svm", "--strategy", "smo", "--param", "kernel=linear", "--model-out", "m.npz"],
     "--strategy aid; got --strategy smo"),
    (["solve", "klr", "--strategy", "smo"], "supported for lad, ridge and svm, not klr"),
    (["solve", "lad"], "lad runs with --strategy aid; got --strategy full"),
])
def test_cli_refusals_before_reading_data(tmp_path, capsys, argv, message):
    glob = str(tmp_path / "missing-*.npy")  # nothing matches: a refusal must come first
    assert main([*argv, "--data", glob]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "no file matches" not in err


def _chunked(X, y, s, rows=500):
    return (da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows),
            da.from_array(s, chunks=rows))


@pytest.mark.parametrize("class_weight", [None, "balanced", {"yes": 2.5}])
def test_svm_classifier_on_dask_equals_in_memory(class_weight):
    X, y, s = _svm_data(n=2000, seed=1)
    labels = np.where(y > 0, "yes", "no")
    est = SVMClassifier(C=0.7, kernel="linear", class_weight=class_weight, strategy="aid",
                        strategy_options={"n_clusters": 40})
    mem = est.fit(X, labels, sample_weight=s)
    coef, icpt, pred, dec = (mem.coef_.copy(), mem.intercept_.copy(), mem.predict(X),
                             mem.decision_function(X))
    Xd, yd, sd = _chunked(X, labels, s)
    dsk = est.fit(Xd, yd, sample_weight=sd)
    assert dsk.result_.is_optimal and dsk.n_features_in_ == 3
    assert list(dsk.classes_) == ["no", "yes"]
    assert np.allclose(dsk.coef_, coef, rtol=1e-10, atol=1e-12)
    assert np.allclose(dsk.intercept_, icpt, rtol=1e-10, atol=1e-12)
    assert dsk.support_.size == 0 and dsk.dual_coef_.shape == (1, 0)
    lazy_pred, lazy_dec = dsk.predict(Xd), dsk.decision_function(Xd)
    assert type(lazy_pred).__module__.startswith("dask")
    assert np.array_equal(lazy_pred.compute(), pred)
    assert np.allclose(lazy_dec.compute(), dec, rtol=1e-9, atol=1e-10)
    assert np.array_equal(dsk.predict(X), pred)  # in-memory X: numpy, as before


def test_svm_classifier_dask_refusals():
    X, y, s = _svm_data(n=900, seed=2)
    Xd, yd, _ = _chunked(X, y, s, rows=300)
    base = dict(C=1.0, kernel="linear", strategy="aid")
    for change, fix in (({"probability": True}, "probability=True"),
                        ({"kernel": "rbf"}, "kernel='rbf'"),
                        ({"strategy": "smo"}, "strategy='smo'")):
        with pytest.raises(ValueError, match=rf"on Dask data fits the binary.*got {fix}"):
            SVMClassifier(**{**base, **change}).fit(Xd, yd)
    three = da.from_array(np.arange(900) % 3, chunks=300)
    with pytest.raises(ValueError, match=r"on Dask data is binary; y has 3 classes \[0, 1, 2\]"):
        SVMClassifier(**base).fit(Xd, three)
    rbf = SVMClassifier(kernel="rbf", probability=True).fit(X[:300], y[:300])
    with pytest.raises(ValueError, match="binary linear.*kernel='rbf' and 2 classes"):
        rbf.predict(Xd)
    with pytest.raises(ValueError, match="pass X.compute.. for probabilities"):
        rbf.predict_proba(Xd)


# On the module's LocalCluster (last: once started it is the default scheduler).
def test_cli_solve_on_a_scheduler_equals_in_memory(client, npy, capsys):
    npz, glob, _, _ = npy
    mem = _cli_json([*SOLVE, "--data", npz], capsys)
    lazy = _cli_json([*SOLVE, "--data", glob, "--scheduler", client.scheduler.address], capsys)
    _same_fit(lazy, mem)


@pytest.mark.slow
def test_cli_solve_with_workers_equals_in_memory(client, npy, capsys):
    npz, glob, _, _ = npy
    mem = _cli_json([*SOLVE, "--data", npz], capsys)
    _same_fit(_cli_json([*SOLVE, "--data", glob, "--workers", "2"], capsys), mem)
    assert distributed.default_client() is client  # the command's own cluster is gone
