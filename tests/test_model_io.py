"""Model files: a round trip gives the same predictions; anything altered or foreign is refused."""

from __future__ import annotations

import json
import warnings
import zipfile

import numpy as np
import pytest

pytest.importorskip("sklearn")

from optmodels.estimators import KLRClassifier, LADRegressor, RidgeRegressor, SVMClassifier
from optmodels.model_io import (
    FORMAT_VERSION,
    HEADER_KEY,
    ModelFileError,
    arrays_sha256,
    header_sha256,
    load_model,
    read_header,
    save_model,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(36, 3))
    y_reg = X @ np.array([1.5, -2.0, 0.5]) + 0.3 + rng.normal(scale=0.5, size=36)
    y_bin = np.where(X[:, 0] - X[:, 1] + 0.4 * rng.normal(size=36) > 0, "yes", "no")
    y_three = np.digitize(X[:, 0] + 0.3 * rng.normal(size=36), [-0.4, 0.4])  # ints 0, 1, 2
    X_new = rng.normal(size=(15, 3))
    return X, y_reg, y_bin, y_three, X_new


CASES = [
    ("lad", lambda: LADRegressor(quantile=0.3), "reg"),
    ("ridge", lambda: RidgeRegressor(alpha=2.0), "reg"),
    ("svm-rbf-binary", lambda: SVMClassifier(C=2.0, probability=True), "bin"),
    ("svm-linear-three", lambda: SVMClassifier(kernel="linear", strategy="full"), "three"),
    ("svm-linear-binary-cw", lambda: SVMClassifier(kernel="linear", class_weight={"yes": 2.0}),
     "bin"),
    ("klr-rbf-three", lambda: KLRClassifier(C=1.0), "three"),
    ("klr-poly-binary", lambda: KLRClassifier(kernel="poly", degree=2, gamma=0.5), "bin"),
]


def _fit(make, kind, data):
    X, y_reg, y_bin, y_three, _ = data
    y = {"reg": y_reg, "bin": y_bin, "three": y_three}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X, y)


@pytest.mark.parametrize("name, make, kind", CASES, ids=[c[0] for c in CASES])
def test_round_trip_predicts_exactly_as_the_fitted_estimator(name, make, kind, data, tmp_path):
    est = _fit(make, kind, data)
    path = tmp_path / "m.npz"
    save_model(est, path)
    back = load_model(path)
    X_new = data[-1]
    assert type(back) is type(est) and back.get_params() == est.get_params()
    assert back.strategy_ == est.strategy_  # 'auto' resolved at fit time, kept in the file
    np.testing.assert_array_equal(back.predict(X_new), est.predict(X_new))
    for method in ("decision_function", "predict_proba"):
        if hasattr(est, method):
            np.testing.assert_array_equal(getattr(back, method)(X_new),
                                          getattr(est, method)(X_new))
    if kind != "reg":
        assert back.classes_.dtype == est.classes_.dtype
        np.testing.assert_array_equal(back.classes_, est.classes_)


def test_header_records_the_fit(data, tmp_path):
    est = _fit(lambda: SVMClassifier(kernel="linear", strategy="full"), "three", data)
    path = tmp_path / "m.npz"
    save_model(est, path, feature_names=["age", "dose", "bmi"])
    h = read_header(path)
    assert h["format_version"] == FORMAT_VERSION and h["estimator"] == "SVMClassifier"
    assert h["problem"] == "svm" and h["strategy"] == "full"
    assert h["feature_names"] == ["age", "dose", "bmi"] and h["classes"] == [0, 1, 2]
    assert [f["termination"] for f in h["fit"]] == [r.termination.value for r in est.result_]
    assert [f["gap"] for f in h["fit"]] == [r.gap for r in est.result_]
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != HEADER_KEY}
    assert h["arrays_sha256"] == arrays_sha256(arrays)
    assert set(arrays) == {"support_", "support_vectors_", "n_support_", "dual_coef_",
                           "intercept_", "n_iter_", "coef_"}


def test_labels_that_cannot_round_trip_are_refused(data, tmp_path):
    fitted = _fit(lambda: SVMClassifier(), "bin", data)
    fitted.classes_ = np.array([frozenset({1}), frozenset({2})], dtype=object)
    with pytest.raises(ModelFileError, match="round trip"):
        save_model(fitted, tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def _rewrite(path, out, header=None, arrays=None, rehash=True):
    """Write a copy of a model file with the header / arrays changed (a tampered file); with
    ``rehash`` the header hash is recomputed, so the other checks are the ones tested."""
    with np.load(path, allow_pickle=False) as z:
        h = json.loads(str(z[HEADER_KEY][()]))
        a = {k: z[k] for k in z.files if k != HEADER_KEY}
    h = header(h) if header else h
    if rehash:
        h["header_sha256"] = header_sha256(h)
    a = arrays(a) if arrays else a
    np.savez(out, **{HEADER_KEY: np.array(json.dumps(h))}, **a)
    return out


@pytest.fixture
def saved(data, tmp_path):
    est = _fit(lambda: SVMClassifier(kernel="linear"), "bin", data)
    path = tmp_path / "m.npz"
    save_model(est, path)
    return path


def _set(d, key, value):
    d[key] = value
    return d


TAMPER = [
    ("old version", dict(header=lambda h: _set(h, "format_version", 0)), "format version 0"),
    ("extra key", dict(header=lambda h: _set(h, "run", "os.system")), "unexpected keys"),
    ("hash", dict(arrays=lambda a: _set(a, "intercept_", a["intercept_"] + 1.0)), "SHA-256"),
    ("dtype", dict(arrays=lambda a: _set(a, "support_", a["support_"].astype(np.int64))),
     "dtype"),
    ("shape", dict(arrays=lambda a: _set(a, "coef_", a["coef_"][:, :2])), "shape"),
    ("extra array", dict(arrays=lambda a: _set(a, "evil", np.zeros(2))), "unexpected arrays"),
    ("object array", dict(arrays=lambda a: _set(a, "coef_", np.array([{}], dtype=object))),
     "objects"),
    ("estimator", dict(header=lambda h: _set(h, "estimator", "os.system")), "unknown estimator"),
    ("kernel width", dict(header=lambda h: _set(h, "kernel", {**h["kernel"], "gamma": 9.0}),
                          rehash=False), "header does not match"),
]


@pytest.mark.parametrize("name, change, needle", TAMPER, ids=[t[0] for t in TAMPER])
def test_altered_files_are_refused(name, change, needle, saved, tmp_path):
    bad = _rewrite(saved, tmp_path / "bad.npz", **change)
    with pytest.raises(ModelFileError, match=needle) as info:
        load_model(bad)
    assert "\n" not in str(info.value)


def test_foreign_files_are_refused(tmp_path):
    csv_file = tmp_path / "d.csv"
    csv_file.write_text("a,y\n1,2\n")
    data_npz = tmp_path / "d.npz"
    np.savez(data_npz, X=np.ones((2, 2)), y=np.ones(2))
    zip_file = tmp_path / "z.npz"
    with zipfile.ZipFile(zip_file, "w") as z:
        z.writestr("model.json", "{}")
    for path in (csv_file, data_npz, zip_file):
        with pytest.raises(ModelFileError, match="not an optmodels model file"):
            load_model(path)


@pytest.mark.parametrize("make", [lambda: SVMClassifier(C=2.0, break_ties=True),
                                  lambda: SVMClassifier(kernel="linear", strategy="smo"),
                                  lambda: KLRClassifier()], ids=["svm-rbf", "svm-linear", "klr"])
def test_sparse_fit_round_trip_keeps_csr_support_vectors(make, data, tmp_path):
    """A sparse fit's support vectors are saved as CSR arrays (data, indices, indptr) and come
    back as CSR (dual_coef_ too), predicting exactly as the fitted estimator."""
    import scipy.sparse as sp

    X, _, _, y_three, X_new = data
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.6, 0.0, X))
    est = _fit(make, "three", (Xs, None, None, y_three, None))
    path = tmp_path / "m.npz"
    save_model(est, path)
    with np.load(path, allow_pickle=False) as z:
        names = set(z.files)
    assert {"support_vectors_data", "support_vectors_indices", "support_vectors_indptr"} <= names
    assert "support_vectors_" not in names
    back = load_model(path)
    assert sp.issparse(back.support_vectors_) and sp.issparse(back.dual_coef_)
    assert (back.support_vectors_ != est.support_vectors_).nnz == 0
    for Xp in (X_new, sp.csr_matrix(X_new)):
        np.testing.assert_array_equal(back.decision_function(Xp), est.decision_function(Xp))
        np.testing.assert_array_equal(back.predict(Xp), est.predict(Xp))


@pytest.mark.parametrize("cls", [SVMClassifier, KLRClassifier])
def test_precomputed_kernel_model_round_trip(cls, data, tmp_path):
    X, _, _, y_three, X_new = data
    est = _fit(lambda: cls(kernel="precomputed"), "three", (X @ X.T, None, None, y_three, None))
    save_model(est, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.support_vectors_.shape == (0, 0) and back.n_features_in_ == X.shape[0]
    K_new = X_new @ X.T
    np.testing.assert_array_equal(back.decision_function(K_new), est.decision_function(K_new))
    assert read_header(tmp_path / "m.npz")["kernel"]["name"] == "precomputed"


def test_callable_kernel_cannot_be_saved(data, tmp_path):
    X, _, _, y_three, _ = data

    def my_kernel(A, B):
        return A @ B.T

    est = _fit(lambda: SVMClassifier(kernel=my_kernel), "three", data)
    with pytest.raises(ModelFileError, match="callable kernel \\(my_kernel\\).*never runs code"
                       ".*kernel='precomputed'"):
        save_model(est, tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
