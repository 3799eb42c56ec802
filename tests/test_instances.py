"""Tests for instances.generators and instances.datasets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.stats import norm

from instances.datasets import load_breast_cancer, load_stackloss
from instances.generators import (
    NOISE_KINDS,
    make_classification,
    make_lad,
    make_sklr_synth,
    make_weights,
)

# --- independent references: LPs solved by HiGHS through scipy -----------------------------


def lad_fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """min sum |y - X b - b0| as an LP: variables (b, b0, r+, r-), X b + b0 + r+ - r- = y."""
    n, p = X.shape
    c = np.concatenate([np.zeros(p + 1), np.ones(2 * n)])
    A = np.hstack([X, np.ones((n, 1)), np.eye(n), -np.eye(n)])
    bounds = [(None, None)] * (p + 1) + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=A, b_eq=y, bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return res.x[:p], float(res.x[p])


def linearly_separable(X: np.ndarray, y: np.ndarray) -> bool:
    """Feasibility of y_i (w.x_i + b) >= 1 (HiGHS LP); feasible iff strictly separable."""
    n, p = X.shape
    A_ub = -y[:, None] * np.hstack([X, np.ones((n, 1))])
    res = linprog(np.zeros(p + 1), A_ub=A_ub, b_ub=-np.ones(n),
                  bounds=[(None, None)] * (p + 1), method="highs")
    assert res.status in (0, 2), res.message
    return res.status == 0


GENERATORS = [
    (make_lad, {"n": 60, "p": 4}),
    (make_classification, {"n": 60, "p": 3, "label_noise": 0.1}),
    (make_sklr_synth, {"n": 60}),
    (make_weights, {"n": 60}),
    (make_weights, {"n": 60, "kind": "uniform"}),
]


def _arrays(out: object) -> list[np.ndarray]:
    seq = out if isinstance(out, tuple) else (out,)
    return [np.atleast_1d(np.asarray(a, dtype=float)) for a in seq]


# --- determinism ------------------------------------------------------------------------------


@pytest.mark.parametrize("gen, kwargs", GENERATORS)
def test_same_seed_same_arrays_other_seed_other_arrays(gen, kwargs):
    a, b, c = (_arrays(gen(**kwargs, seed=s)) for s in (3, 3, 4))
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=False))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c, strict=False))


@pytest.mark.parametrize("gen, kwargs", GENERATORS)
def test_seed_none_draws_fresh_entropy(gen, kwargs):
    a, b = (_arrays(gen(**kwargs, seed=None)) for _ in range(2))
    assert not all(np.array_equal(u, v) for u, v in zip(a, b, strict=False))


# --- make_lad ---------------------------------------------------------------------------------


def test_make_lad_shapes_and_dtypes():
    X, y, coef, b0 = make_lad(n=37, p=5)
    assert X.shape == (37, 5) and y.shape == (37,) and coef.shape == (5,)
    assert X.dtype == y.dtype == coef.dtype == np.float64 and b0 == 1.0


def test_make_lad_exact_model_without_noise_or_outliers():
    X, y, coef, b0 = make_lad(n=50, p=3, noise_scale=0.0, outlier_fraction=0.0, intercept=-2.5)
    assert b0 == -2.5
    np.testing.assert_allclose(y, X @ coef - 2.5, rtol=0, atol=1e-12)


def test_make_lad_intercept_none_is_zero():
    X, y, coef, b0 = make_lad(n=30, p=2, noise_scale=0.0, outlier_fraction=0.0, intercept=None)
    assert b0 == 0.0
    np.testing.assert_allclose(y, X @ coef, atol=1e-12)


def test_make_lad_outliers_count_and_size():
    X, y, coef, b0 = make_lad(n=400, p=3, noise_scale=0.0, outlier_fraction=0.1,
                              outlier_scale=7.0)
    r = y - X @ coef - b0
    hit = np.abs(r) > 1e-9
    assert hit.sum() == 40
    assert np.all(np.abs(r[hit]) >= 7.0)


@pytest.mark.parametrize(
    "noise, statistic, expected",
    [
        ("laplace", lambda r: np.mean(np.abs(r)), 2.0),            # E|Laplace(0, b)| = b
        ("normal", np.std, 2.0),                                   # sd = s
        ("t3", lambda r: np.quantile(np.abs(r), 0.5), 2.0 * 0.7649),  # median |t3| = 0.7649
        ("cauchy", lambda r: np.quantile(np.abs(r), 0.5), 2.0),    # median |Cauchy| = 1
    ],
)
def test_make_lad_noise_laws_have_stated_scale(noise, statistic, expected):
    X, y, coef, b0 = make_lad(n=40_000, p=2, noise=noise, noise_scale=2.0,
                              outlier_fraction=0.0, seed=11)
    r = y - X @ coef - b0
    assert abs(np.median(r)) < 0.05
    assert statistic(r) == pytest.approx(expected, rel=0.04)


@pytest.mark.parametrize("noise", NOISE_KINDS)
def test_make_lad_residual_median_zero_with_outliers(noise):
    X, y, coef, b0 = make_lad(n=20_000, p=3, noise=noise, seed=5)
    assert abs(np.median(y - X @ coef - b0)) < 0.05


def test_make_lad_ground_truth_recovered_by_lad_lp():
    X, y, coef, b0 = make_lad(n=2000, p=4, outlier_fraction=0.1, seed=2)
    coef_hat, b0_hat = lad_fit(X, y)
    np.testing.assert_allclose(coef_hat, coef, atol=0.12)  # ~5 standard errors
    assert b0_hat == pytest.approx(b0, abs=0.12)
    # least squares is pulled by the outliers much more than LAD
    ls = np.linalg.lstsq(np.hstack([X, np.ones((2000, 1))]), y, rcond=None)[0]
    assert np.abs(ls[:4] - coef).max() > 2 * np.abs(coef_hat - coef).max()


# --- make_classification -----------------------------------------------------------------------


def test_make_classification_labels_counts_and_shapes():
    X, y = make_classification(n=1000, p=3, weights=(0.3, 0.7))
    assert X.shape == (1000, 3) and y.shape == (1000,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert (y == -1).sum() == 300 and (y == 1).sum() == 700


def test_make_classification_tiny_n_keeps_both_classes():
    _, y = make_classification(n=2, weights=(0.99, 0.01))
    assert sorted(y) == [-1.0, 1.0]


def test_make_classification_separable_iff_far_apart():
    X, y = make_classification(n=500, p=3, separation=20.0, seed=1)
    assert linearly_separable(X, y)
    X, y = make_classification(n=500, p=3, separation=1.0, seed=1)
    assert not linearly_separable(X, y)


def test_make_classification_bayes_error_matches_separation():
    X, y = make_classification(n=40_000, p=4, separation=2.0, seed=3)
    u = X[y > 0].mean(axis=0) - X[y < 0].mean(axis=0)
    err = np.mean(np.sign(X @ u) != y)
    assert err == pytest.approx(norm.cdf(-1.0), abs=0.01)


def test_make_classification_label_noise_flips_exact_fraction():
    X0, y0 = make_classification(n=800, label_noise=0.0, seed=9)
    X1, y1 = make_classification(n=800, label_noise=0.125, seed=9)
    np.testing.assert_array_equal(X0, X1)
    assert (y0 != y1).sum() == 100
    np.testing.assert_array_equal(y1[y0 != y1], -y0[y0 != y1])


# --- make_sklr_synth ---------------------------------------------------------------------------


def test_sklr_synth_matches_paper_description():
    X, y = make_sklr_synth(noise=0.0)
    assert X.shape == (99, 2)
    assert (y == 1).sum() == 50 and (y == -1).sum() == 49
    X, y = make_sklr_synth()
    assert not linearly_separable(X, y)
    # "reasonable linear decision boundaries exist": the noise-free rule sign(x1 + x2)
    # misclassifies about the flipped 10 % and little more
    err = np.mean(np.sign(X.sum(axis=1)) != y)
    assert 0.05 <= err <= 0.2


# --- make_weights ------------------------------------------------------------------------------


def test_make_weights_integer_covers_inclusive_range():
    w = make_weights(n=5000, kind="integer", low=0, high=4, seed=1)
    assert w.dtype == np.float64
    assert set(np.unique(w)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    assert w.mean() == pytest.approx(2.0, abs=0.1)


def test_make_weights_uniform_range_and_mean():
    w = make_weights(n=5000, kind="uniform", low=0.5, high=1.5, seed=1)
    assert w.min() >= 0.5 and w.max() <= 1.5
    assert w.mean() == pytest.approx(1.0, abs=0.02)


# --- parameter validation: every declared parameter gets a bad value ------------------------

BAD = [
    (make_lad, "n", 0), (make_lad, "n", 2.5), (make_lad, "n", True),
    (make_lad, "p", 0), (make_lad, "noise", "gauss"), (make_lad, "noise_scale", -1.0),
    (make_lad, "noise_scale", float("nan")), (make_lad, "outlier_fraction", 1.0),
    (make_lad, "outlier_fraction", -0.1), (make_lad, "outlier_scale", -3.0),
    (make_lad, "intercept", "one"), (make_lad, "intercept", float("nan")),
    (make_lad, "seed", -1), (make_lad, "seed", "zero"),
    (make_classification, "n", 1), (make_classification, "p", 0),
    (make_classification, "separation", -1.0), (make_classification, "label_noise", 1.0),
    (make_classification, "weights", (0.5, 0.6)), (make_classification, "weights", (1.0, 0.0)),
    (make_classification, "weights", (1 / 3,) * 3), (make_classification, "weights", "ab"),
    (make_classification, "seed", 1.5),
    (make_sklr_synth, "n", 1), (make_sklr_synth, "noise", 0.5), (make_sklr_synth, "seed", -2),
    (make_weights, "kind", "poisson"), (make_weights, "low", -1.0), (make_weights, "high", 0.5),
    (make_weights, "low", 0.5), (make_weights, "seed", [1]),
]


@pytest.mark.parametrize("gen, name, value", BAD)
def test_bad_parameter_raises_naming_it(gen, name, value):
    kwargs = {"n": 10} if gen is make_weights else {}
    kwargs[name] = value
    with pytest.raises(ValueError, match=f"'{name}' parameter of {gen.__name__} must be"):
        gen(**kwargs)


def test_make_weights_n_is_validated():
    with pytest.raises(ValueError, match=r"'n' parameter of make_weights must be an int in the "
                                         r"range \[1, inf\)"):
        make_weights(n=0)


def test_unknown_noise_lists_the_choices():
    with pytest.raises(ValueError, match="'laplace', 't3', 'normal', 'cauchy'"):
        make_lad(noise="student")


def test_generators_are_keyword_only():
    with pytest.raises(TypeError):
        make_lad(100)  # type: ignore[misc]


# --- shipped datasets --------------------------------------------------------------------------


def test_stackloss_shape_and_lad_fit_matches_koenker():
    d = load_stackloss()
    assert d.X.shape == (21, 3) and d.y.shape == (21,) and d.sample_weight is None
    assert d.feature_names == ["air_flow", "water_temp", "acid_conc"]
    assert d.y[0] == 42.0 and d.X[0].tolist() == [80.0, 27.0, 89.0]
    coef, b0 = lad_fit(d.X, d.y)
    # Koenker (2005), median regression of stack loss
    np.testing.assert_allclose(coef, [0.83188, 0.57391, -0.06087], atol=2e-5)
    assert b0 == pytest.approx(-39.68986, abs=1e-4)


def test_breast_cancer_matches_sklearn_copy():
    sk = pytest.importorskip("sklearn.datasets")
    d = load_breast_cancer()
    ref = sk.load_breast_cancer()
    assert d.X.shape == (569, 30) and d.y.shape == (569,) and d.sample_weight is None
    np.testing.assert_array_equal(d.X, ref.data)
    np.testing.assert_array_equal(d.y, 2.0 * ref.target - 1.0)
    assert d.feature_names == [s.replace(" ", "_") for s in ref.feature_names]
    assert (d.y == 1).sum() == 357 and (d.y == -1).sum() == 212
