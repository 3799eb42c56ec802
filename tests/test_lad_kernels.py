"""The compiled chunk passes of AID-LAD on Dask against numpy recomputations of their formulas."""

import numpy as np
import pytest

from solvers.aid import lad_kernels


def _chunk(seed: int, n: int = 5000, p: int = 4, K: int = 300):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p + 1))  # x is a strided view, as a column slice of a chunk
    x, y = Z[:, :p], Z[:, p]
    s = rng.uniform(0.0, 3.0, n)
    s[:50] = 0.0
    beta = rng.standard_normal(p) * 0.3
    lab = rng.integers(0, K, n)
    y[::7] = x[::7] @ beta + 0.25  # rows exactly on the fit (r = 0 up to rounding)
    return x, y, s, lab, beta, 0.25, K


@pytest.mark.parametrize("quantile", [0.5, 0.2, 0.9])
@pytest.mark.parametrize("means", [False, True])
def test_evaluate_is_the_numpy_tallies(quantile, means):
    x, y, s, lab, beta, b, K = _chunk(1)
    tol = 1e-9
    vec, r = lad_kernels.evaluate(x, y, s, lab, beta, b, K, tol, quantile, means)
    r_ref = y - x @ beta - b
    np.testing.assert_allclose(r, r_ref, rtol=0, atol=1e-13)
    rho = np.where(r_ref > 0, 2 * quantile * r_ref, 2 * (quantile - 1) * r_ref)
    assert vec[0] == pytest.approx(float(np.sum(s * rho)), rel=1e-13)
    pos = np.bincount(lab, weights=(r > tol), minlength=K)
    neg = np.bincount(lab, weights=(r < -tol), minlength=K)
    key = 2 * lab + (r > 0)
    parts = [pos, neg, np.bincount(key, minlength=2 * K)]
    if means:
        parts.append(np.bincount(key, weights=np.abs(r), minlength=2 * K))
    ref = np.concatenate(parts)
    assert vec.shape == (1 + ref.shape[0],)
    np.testing.assert_allclose(vec[1:], ref, rtol=1e-12, atol=1e-12)
    assert pos.sum() > 0 and neg.sum() > 0 and np.count_nonzero(np.abs(r) <= tol) > 100


def test_pk_band_is_the_numpy_band():
    x, y, s, lab, beta, b, K = _chunk(2)
    a, z = -0.3, 0.4
    code, rows, sides = lad_kernels.pk_band(x, y, s, beta, b, a, z)
    r = y - x @ beta - b
    below, above = r < a, r > z
    inside = ~(below | above)
    assert 0 < inside.sum() < r.shape[0]
    np.testing.assert_array_equal(code[below], 0)
    np.testing.assert_array_equal(code[above], 1)
    np.testing.assert_array_equal(code[inside], 2 + np.arange(int(inside.sum())))
    si = s[inside]
    ref_rows = np.column_stack([r[inside], np.ones(int(inside.sum())), si,
                                x[inside] * si[:, None], si * y[inside]])
    np.testing.assert_allclose(rows, ref_rows, rtol=1e-12, atol=1e-13)
    for k, side in enumerate((below, above)):
        ref = np.concatenate([[side.sum(), s[side].sum()], s[side] @ x[side],
                              [s[side] @ y[side]]])
        np.testing.assert_allclose(sides[k], ref, rtol=1e-12)


def test_empty_chunk_gives_zero_tallies():
    x, y, s = np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    vec, r = lad_kernels.evaluate(x, y, s, np.zeros(0, dtype=np.int64), np.ones(3), 0.0, 4,
                                  1e-9, 0.5, True)
    assert r.shape == (0,) and vec.shape == (25,) and not vec.any()
    code, rows, sides = lad_kernels.pk_band(x, y, s, np.ones(3), 0.0, -1.0, 1.0)
    assert code.shape == (0,) and rows.shape == (0, 7) and not sides.any()


def test_chunk_stats_are_the_numpy_statistics_of_the_kept_rows():
    x, y, s, *_ = _chunk(3)
    s[60:70] = -1.0
    q = lad_kernels.chunk_stats(x, y, s)
    keep = s > 0
    assert not q["bad"].any() and q["kept"] == keep.sum() and q["neg"] and q["zero"]
    assert (q["smin"], q["smax"]) == (s[keep].min(), s[keep].max())
    assert (q["ymin"], q["ymax"]) == (y[keep].min(), y[keep].max())
    assert q["ssum"] == pytest.approx(s[keep].sum(), rel=1e-14)
    assert q["sy"] == pytest.approx(s[keep] @ np.abs(y[keep]), rel=1e-14)
    np.testing.assert_array_equal(q["cmin"], x[keep].min(axis=0))
    np.testing.assert_array_equal(q["cmax"], x[keep].max(axis=0))


@pytest.mark.parametrize("where", ["x", "y", "s"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_chunk_stats_flag_nan_and_infinity(where, value):
    x, y, s, *_ = _chunk(4)
    x, y, s = x.copy(), y.copy(), s.copy()
    {"x": lambda: x.__setitem__((17, 2), value), "y": lambda: y.__setitem__(17, value),
     "s": lambda: s.__setitem__(17, value)}[where]()
    bad = lad_kernels.chunk_stats(x, y, s)["bad"]
    expect = np.zeros((3, 2), dtype=np.int64)
    expect["xys".index(where), 0 if np.isnan(value) else 1] = 1
    np.testing.assert_array_equal(bad, expect)


@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_bracket_is_the_numpy_bracket(last, unit):
    x, y, s, *_ = _chunk(5)
    y = np.round(y, 1)  # ties at the bracket's ends
    a, b = -0.2, 0.3
    q = lad_kernels.bracket(y, s, a, b, last, unit)
    low, high = y < a, (y > b) if last else (y >= b)
    inb = ~(low | high)
    assert 0 < inb.sum() and np.any(y == b)
    ref = np.column_stack([y[inb], np.ones(int(inb.sum())) if unit else s[inb], s[inb]])
    np.testing.assert_array_equal(q["rows"], ref)
    assert q["Wb"] == pytest.approx(s[low].sum(), rel=1e-13)
    assert q["Lb"] == pytest.approx(s[low] @ (a - y[low]), rel=1e-13)
    assert q["Mb"] == pytest.approx(low.sum() if unit else s[low].sum(), rel=1e-13)
    assert q["Wa"] == pytest.approx(s[high].sum(), rel=1e-13)
    assert q["La"] == pytest.approx(s[high] @ (y[high] - b), rel=1e-13)
