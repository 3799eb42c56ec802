"""Prediction memory stays bounded whatever the number of rows (issue 30): a linear model
predicts from coef_ in O(p) per row, kernel expansions are evaluated in blocks of a fixed
number of kernel values, dense or sparse."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from optmodels import KLRClassifier, SVMClassifier
from solvers.kernels import Kernel
from solvers.smo.prediction import kernel_expansion


def _peak_mb(fn) -> tuple[object, float]:
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak / 2**20


def test_linear_klr_predicts_from_coef_in_o_p():
    X, y = make_classification(n_samples=4000, n_features=5, random_state=0)
    clf = KLRClassifier(kernel="linear", C=1.0).fit(X, y)
    assert clf.coef_.shape == (1, 5)
    # coef_ is the kernel expansion folded: sum_i alpha_i y_i x_i over the support
    w = clf.dual_coef_[0] @ clf.support_vectors_
    np.testing.assert_allclose(clf.coef_[0], w, rtol=1e-12, atol=1e-12 * np.abs(w).max())
    f, peak = _peak_mb(lambda: clf.decision_function(X))
    # the expansion over 4,000 training rows would form 4000 x 4000 kernel values (122 MB)
    assert peak < 2.0
    np.testing.assert_allclose(f, X @ clf.coef_[0] + clf.intercept_[0], rtol=1e-12)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], 1.0 / (1.0 + np.exp(-f)), rtol=1e-12)


@pytest.mark.parametrize("name", ["rbf", "poly"])
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_expansion_blocks_bound_memory(name, sparse):
    rng = np.random.default_rng(1)
    Xt = rng.normal(size=(300, 6))
    Xn = rng.normal(size=(5000, 6))
    Xt[np.abs(Xt) < 0.5] = 0.0
    Xn[np.abs(Xn) < 0.5] = 0.0
    coef = rng.normal(size=300)
    coef[::3] = 0.0
    k = Kernel(name, gamma=0.3, coef0=1.0, degree=2)
    expected = k(Xn, Xt) @ coef + 0.25  # the whole 5000 x 300 matrix, as reference
    A, B = (sp.csr_matrix(Xt), sp.csr_matrix(Xn)) if sparse else (Xt, Xn)
    kernel_expansion(A, coef, 0.25, k, B, block_elems=20_000)  # loads compiled code first
    f, peak = _peak_mb(lambda: kernel_expansion(A, coef, 0.25, k, B, block_elems=20_000))
    np.testing.assert_allclose(f, expected, rtol=1e-10, atol=1e-10)
    # 20,000 kernel values a block (with the dot products: well under 2 MB); the whole
    # matrix would take 5000 x 200 x 8 bytes = 7.6 MB
    assert peak < 2.0


def test_svm_dual_decision_uses_the_blocked_path():
    X, y = make_classification(n_samples=400, n_features=4, random_state=2)
    clf = SVMClassifier(kernel="rbf", C=1.0, gamma=0.5).fit(X, y)
    Xs = clf.support_vectors_
    manual = Kernel("rbf", gamma=0.5)(X, Xs) @ clf.dual_coef_[0] + clf.intercept_[0]
    np.testing.assert_allclose(clf.decision_function(X), manual, rtol=1e-10, atol=1e-10)
