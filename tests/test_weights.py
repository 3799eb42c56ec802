"""Sample-weight semantics (checklist #11-12): integer weight = repeated row, zero = removed."""

from __future__ import annotations

import numpy as np
import pytest

from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM

SEEDS = [0, 1, 2]


def _data(seed, classification):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(15, 2))
    y = (
        np.where(X[:, 0] + 0.5 * rng.normal(size=15) > 0, 1.0, -1.0)
        if classification
        else X @ [1.0, -2.0] + rng.laplace(size=15)
    )
    w = rng.integers(0, 5, size=15).astype(float)
    w[:2] = [1.0, 2.0]
    if classification:  # keep both classes present
        w[np.argmax(y > 0)] = max(w[np.argmax(y > 0)], 1)
        w[np.argmax(y < 0)] = max(w[np.argmax(y < 0)], 1)
    return X, y, w


def _repeat(X, y, w):
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    return X[idx], y[idx]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "make, classification",
    [
        (lambda X, y, w: LAD(X, y, sample_weight=w), False),
        (lambda X, y, w: SVM(X, y, sample_weight=w, C=1.3), True),
        (lambda X, y, w: SVM(X, y, sample_weight=w, C=1.3, kernel="rbf", gamma=0.7), True),
        (lambda X, y, w: KLR(X, y, sample_weight=w, C=2.0, gamma=0.7), True),
        (lambda X, y, w: Ridge(X, y, sample_weight=w, alpha=0.5), False),
    ],
    ids=["lad", "svm-linear", "svm-rbf", "klr", "ridge"],
)
def test_integer_weights_equal_repeated_rows(seed, make, classification):
    """Weights drawn from 0..4: zero-weight rows vanish from the repeated data (= removal)."""
    X, y, w = _data(seed, classification)
    weighted = make(X, y, w).solve_full()
    Xr, yr = _repeat(X, y, w)
    repeated = make(Xr, yr, None).solve_full()
    assert weighted.is_optimal and repeated.is_optimal
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-7)


def test_ridge_weights_give_the_same_coefficients():
    X, y, w = _data(0, False)
    a = Ridge(X, y, sample_weight=w, alpha=0.5).solve_full()
    b = Ridge(*_repeat(X, y, w), alpha=0.5).solve_full()
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10)


def test_uniform_weight_scaling_equals_scaling_C():
    X, y, _ = _data(1, True)
    a = SVM(X, y, sample_weight=np.full(15, 3.0), C=0.5).solve_full()
    b = SVM(X, y, C=1.5).solve_full()
    np.testing.assert_allclose(a.x, b.x, rtol=1e-6, atol=1e-7)


def test_lad_equivariance():
    """Koenker 2.2.3: y -> a y scales beta; y -> y + X g shifts it."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    y = X @ [1.0, 2.0, -1.0] + rng.laplace(size=40)
    base = LAD(X, y, fit_intercept=False).solve_full()
    scaled = LAD(X, 3.0 * y, fit_intercept=False).solve_full()
    shifted = LAD(X, y + X @ [1.0, 0.0, 2.0], fit_intercept=False).solve_full()
    np.testing.assert_allclose(scaled.x, 3.0 * base.x, rtol=1e-6)
    np.testing.assert_allclose(shifted.x, base.x + [1.0, 0.0, 2.0], rtol=1e-6)
