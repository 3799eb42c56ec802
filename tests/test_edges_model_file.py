"""Model files edited by hand, with both hashes recomputed, are refused on load (issue 30).

The SHA-256 entries catch accidents, not edits: these tests change a saved file's header or
arrays and recompute ``arrays_sha256`` and ``header_sha256``, so only the value checks of
:mod:`optmodels.model_io` stand between the edit and a model that predicts nonsense.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from optmodels.estimators import KLRClassifier, LADRegressor, RidgeRegressor, SVMClassifier
from optmodels.model_io import (
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
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    y_reg = X @ np.array([1.0, -2.0, 0.5]) + 0.3 + rng.normal(scale=0.3, size=40)
    y_three = np.digitize(X[:, 0] + 0.3 * rng.normal(size=40), [-0.4, 0.4])
    return X, y_reg, y_three


MAKERS = {
    "ridge": (lambda: RidgeRegressor(alpha=1.0), "reg"),
    "lad": (lambda: LADRegressor(), "reg"),
    "svm_rbf": (lambda: SVMClassifier(C=2.0, probability=True), "cls"),
    "svm_linear": (lambda: SVMClassifier(kernel="linear", strategy="full"), "cls"),
    "klr": (lambda: KLRClassifier(C=1.0), "cls"),
    "svm_sparse": (lambda: SVMClassifier(C=2.0), "sparse"),  # CSR support vectors
    "svm_pre": (lambda: SVMClassifier(kernel="precomputed"), "gram"),
}


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    """One saved model file per estimator kind (fitted once for the module)."""
    X, y_reg, y_cls = data
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for name, (make, kind) in MAKERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Xk = {"sparse": sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)),
                  "gram": X @ X.T}.get(kind, X)
            est = make().fit(Xk, y_reg if kind == "reg" else y_cls)
        save_model(est, folder / f"{name}.npz")
        out[name] = (folder / f"{name}.npz", est)
    return out


def _edit(src, dst, header=None, arrays=None, nan_ok=False):
    """Copy a model file with the header / arrays changed and both hashes recomputed."""
    with np.load(src, allow_pickle=False) as z:
        h = json.loads(str(z[HEADER_KEY][()]))
        a = {k: z[k].copy() for k in z.files if k != HEADER_KEY}
    if arrays:
        arrays(a)
    if header:
        header(h)
    h["arrays_sha256"] = arrays_sha256(a)
    h["header_sha256"] = header_sha256(h)
    text = json.dumps(h, allow_nan=nan_ok)
    np.savez(dst, **{HEADER_KEY: np.array(text)}, **a)
    return dst


def _put(a, key, index, value):
    a[key][index] = value


def _hyper(h, key, value):
    h["hyperparameters"][key] = value


def _swap_first_columns(a):
    """Reverse the first two column indices of the first row with two entries (unsorted)."""
    indptr, indices = a["support_vectors_indptr"], a["support_vectors_indices"]
    row = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    i = int(indptr[row])
    indices[i], indices[i + 1] = indices[i + 1], indices[i]


EDITS = [
    ("svm_sparse", "CSR row pointer not starting at 0",
     dict(arrays=lambda a: _put(a, "support_vectors_indptr", 0, 1)),
     "'support_vectors_indptr' is not a CSR row pointer"),
    ("svm_sparse", "CSR column beyond the features",
     dict(arrays=lambda a: _put(a, "support_vectors_indices", 0, 3)),
     "'support_vectors_indices' holds column 3, beyond the 3 features"),
    ("svm_sparse", "CSR columns of a row unsorted", dict(arrays=_swap_first_columns),
     "repeats or unsorts the columns of a row"),
    ("svm_sparse", "CSR part missing",
     dict(arrays=lambda a: a.pop("support_vectors_indices")),
     r"missing arrays \['support_vectors_', 'support_vectors_indices'\]"),
    ("svm_sparse", "dense and CSR support vectors both",
     dict(arrays=lambda a: a.update(support_vectors_=np.zeros(
         (int(a["n_support_"].sum()), 3)))), r"unexpected arrays \['support_vectors_data'"),
    ("svm_pre", "support vectors stored for a precomputed kernel",
     dict(arrays=lambda a: a.update(support_vectors_=np.zeros((int(a["n_support_"].sum()),
                                                               40)))),
     r"'support_vectors_' has shape \(\d+, 40\), expected \(0, 0\)"),
    # (model, what the edit does, edit kwargs, words the refusal must hold)
    ("ridge", "NaN coefficient", dict(arrays=lambda a: _put(a, "coef_", 0, np.nan)),
     r"'coef_' holds nan at \(0,\): not a finite number"),
    ("lad", "infinite intercept", dict(arrays=lambda a: a.update(intercept_=np.array(np.inf))),
     "'intercept_' holds inf"),
    ("svm_rbf", "NaN support vector",
     dict(arrays=lambda a: _put(a, "support_vectors_", (1, 2), np.nan)),
     r"'support_vectors_' holds nan at \(1, 2\)"),
    ("svm_rbf", "NaN dual coefficient",
     dict(arrays=lambda a: _put(a, "dual_coef_", (0, 0), np.nan)),
     "'dual_coef_' holds nan"),
    ("svm_rbf", "infinite Platt slope", dict(arrays=lambda a: _put(a, "probA_", 0, -np.inf)),
     "'probA_' holds -inf"),
    ("svm_rbf", "negative support index", dict(arrays=lambda a: _put(a, "support_", 0, -3)),
     r"'support_' holds a negative index or count \(-3\)"),
    ("svm_rbf", "Platt arrays dropped",
     dict(arrays=lambda a: [a.pop("probA_"), a.pop("probB_")]),
     "'probA_' is missing but the model has probability=True"),
    ("svm_rbf", "primal coefficients added to an RBF model",
     dict(arrays=lambda a: a.update(coef_=np.zeros((3, 3)))),
     "'coef_' is present with kernel 'rbf'"),
    ("svm_rbf", "NaN in the JSON header", dict(header=lambda h: _hyper(h, "C", float("nan")),
                                               nan_ok=True),
     "not valid JSON of finite numbers.*NaN"),
    ("svm_rbf", "C out of its range", dict(header=lambda h: _hyper(h, "C", -1.0)),
     r"The 'C' parameter of SVMClassifier must be a float in the range \(0, inf\). Got -1"),
    ("svm_rbf", "unknown hyperparameter", dict(header=lambda h: _hyper(h, "evil", 1)),
     r"unexpected names \['evil'\]"),
    ("svm_rbf", "kernel width zero",
     dict(header=lambda h: h["kernel"].update(gamma=0.0)), "kernel parameter 'gamma'"),
    ("svm_rbf", "kernel not the hyperparameters'",
     dict(header=lambda h: h["kernel"].update(coef0=1.0)),
     "kernel's coef0 differ from the hyperparameters"),
    ("svm_rbf", "kernel with an extra entry",
     dict(header=lambda h: h["kernel"].update(cmd="rm")), "is not {name, gamma, degree, coef0}"),
    ("svm_rbf", "repeated class labels", dict(header=lambda h: h.update(classes=[0, 0, 2])),
     "classes are not distinct"),
    ("svm_rbf", "strategy not of the problem", dict(header=lambda h: h.update(strategy="rm")),
     "strategy 'rm' that ran is not a strategy of svm"),
    ("svm_rbf", "unknown strategy option",
     dict(header=lambda h: [h.update(strategy_options={"bogus": 1}),
                            _hyper(h, "strategy_options", {"bogus": 1})]),
     "bogus"),
    ("svm_rbf", "class weight of a label that is not a class",
     dict(header=lambda h: _hyper(h, "class_weight", {"9": 2.0})), "class_weight"),
    ("svm_rbf", "fit record with an unknown key",
     dict(header=lambda h: h["fit"][0].update(run="x")), "a fit record is not"),
    ("svm_rbf", "one fit record too few", dict(header=lambda h: h["fit"].pop()),
     r"one record per solve \(3\)"),
    ("ridge", "feature count a bool", dict(header=lambda h: h.update(n_features_in=True)),
     "n_features_in is True"),
    ("ridge", "feature names of another count",
     dict(header=lambda h: h.update(feature_names=["a", "b"])), "not a list of 3 strings"),
    ("ridge", "repeated feature name",
     dict(header=lambda h: h.update(feature_names=["a", "a", "b"])), "repeats a name"),
    ("ridge", "kernel added to a regressor",
     dict(header=lambda h: h.update(kernel={"name": "rbf", "gamma": 1.0, "degree": 3,
                                            "coef0": 0.0})), "regressor's header has classes or"),
    ("ridge", "negative iteration count", dict(header=lambda h: h.update(n_iter=-1)),
     "n_iter is -1"),
    ("ridge", "alpha not a number", dict(header=lambda h: _hyper(h, "alpha", "big")),
     "'alpha' parameter of RidgeRegressor"),
    ("lad", "quantile out of (0, 1)", dict(header=lambda h: _hyper(h, "quantile", 1.5)),
     "'quantile' parameter of LADRegressor"),
    ("klr", "Platt arrays on a KLR model",
     dict(arrays=lambda a: a.update(probA_=np.zeros(3), probB_=np.zeros(3))),
     "'probA_' is present but the model has probability=False"),
    ("klr", "feature count edited with the arrays left",
     dict(header=lambda h: h.update(n_features_in=4, feature_names=["a", "b", "c", "d"])),
     r"'support_vectors_' has shape \(\d+, 3\), expected \(\d+, 4\)"),
]


@pytest.mark.parametrize("model, what, edit, words", EDITS, ids=[e[1] for e in EDITS])
def test_edited_model_file_with_recomputed_hashes_is_refused(model, what, edit, words, saved,
                                                             tmp_path):
    src, _ = saved[model]
    bad = _edit(src, tmp_path / "edited.npz", **edit)
    with pytest.raises(ModelFileError, match=words) as info:
        load_model(bad)
    message = str(info.value)
    assert message.startswith(f"{bad}: ") and "\n" not in message
    assert "Refit" in message or "refit" in message


def test_unedited_rewrite_loads_and_predicts_the_same(saved, data, tmp_path):
    """The control for the tests above: the rewrite itself (hashes recomputed) is accepted."""
    X = data[0]
    for name, (src, est) in saved.items():
        back = load_model(_edit(src, tmp_path / f"{name}.npz"))
        Xk = X @ X.T if name == "svm_pre" else X  # the precomputed model reads k(x, x_i)
        np.testing.assert_array_equal(back.predict(Xk), est.predict(Xk))


def test_header_level_edits_are_refused_by_read_header_too(saved, tmp_path):
    src, _ = saved["ridge"]
    bad = _edit(src, tmp_path / "e.npz", header=lambda h: h.update(n_features_in=0))
    with pytest.raises(ModelFileError, match="n_features_in is 0, not a count >= 1"):
        read_header(bad)


def test_nan_dual_coef_of_a_linear_kernel_model_is_accepted(saved, data, tmp_path):
    """The one NaN a model may hold: the linear primal (AID) gives no alphas, so dual_coef_
    is NaN there and prediction runs through coef_ (a refusal would reject real models)."""
    src, est = saved["svm_linear"]
    path = _edit(src, tmp_path / "nan_dual.npz",
                 arrays=lambda a: a["dual_coef_"].fill(np.nan))
    back = load_model(path)
    assert np.isnan(back.dual_coef_).all()
    np.testing.assert_array_equal(back.predict(data[0]), est.predict(data[0]))
    path = _edit(src, tmp_path / "inf_dual.npz",
                 arrays=lambda a: _put(a, "dual_coef_", (0, 0), np.inf))
    with pytest.raises(ModelFileError, match="'dual_coef_' holds inf"):
        load_model(path)


def test_saving_refuses_repeated_feature_names(saved, tmp_path):
    _, est = saved["ridge"]
    with pytest.raises(ModelFileError, match=r"repeats \['x1'\]"):
        save_model(est, tmp_path / "m.npz", feature_names=["x1", "x1", "y2"])
    assert not (tmp_path / "m.npz").exists()
