"""The compiled AID-LAD chunk passes (solvers._core._aid) on inputs the numpy tests of
tests/test_lad_kernels.py do not cover: float32 columns, other dtypes, bad labels and shapes."""

import numpy as np
import pytest

from solvers.aid import lad_kernels


def _chunk(n=3000, p=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    y = x @ np.array([0.5, -1.0, 2.0])[:p] + rng.laplace(size=n)
    s = rng.uniform(0.5, 2.0, n)
    return x, y, s


def test_float32_inputs_round_products_of_two_float32_values_to_float32():
    x, y, s = _chunk()
    x32, y32, s32 = x.astype(np.float32), y.astype(np.float32), s.astype(np.float32)
    beta = np.array([0.4, -0.9, 1.8])
    code, rows, sides = lad_kernels.pk_band(x32, y32, s32, beta, 0.1, -0.5, 0.5)
    r = (y32.astype(float) - x32.astype(float) @ beta) - 0.1
    inside = (r >= -0.5) & (r <= 0.5)
    np.testing.assert_allclose(rows[:, 0], r[inside], rtol=0, atol=1e-13)
    # s x is the float32 product (as numba's float32 x float32), then widened
    assert np.array_equal(rows[:, 3:6], (s32[inside, None] * x32[inside]).astype(float))
    assert np.array_equal(rows[:, 6], (s32[inside] * y32[inside]).astype(float))
    q = lad_kernels.chunk_stats(x32, y32, s32)
    assert q["smin"] == float(s32.min()) and q["ymax"] == float(y32.max())
    assert q["sy"] == pytest.approx(float(np.sum((s32 * np.abs(y32)).astype(float))), rel=1e-14)
    assert sides[0, 0] + sides[1, 0] + inside.sum() == x.shape[0]


def test_integer_columns_are_taken_as_float64():
    x, y, s = _chunk()
    xi, yi = np.round(3 * x).astype(np.int32), np.round(3 * y).astype(np.int64)
    lab = np.zeros(x.shape[0], dtype=np.int32)
    beta = np.array([0.4, -0.9, 1.8])
    got = lad_kernels.evaluate(xi, yi, s, lab, beta, 0.0, 1, 1e-9, 0.5, True)
    ref = lad_kernels.evaluate(xi.astype(float), yi.astype(float), s, lab, beta, 0.0, 1, 1e-9,
                               0.5, True)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_fortran_ordered_and_strided_views_give_the_contiguous_results():
    x, y, s = _chunk(p=3)
    lab = np.arange(x.shape[0]) % 5
    beta = np.array([0.4, -0.9, 1.8])
    ref = lad_kernels.evaluate(x, y, s, lab, beta, 0.2, 5, 1e-9, 0.3, True)
    xf = np.asfortranarray(x)
    big = np.column_stack([y, x, s])[::1]
    got_f = lad_kernels.evaluate(xf, y, s, lab, beta, 0.2, 5, 1e-9, 0.3, True)
    got_v = lad_kernels.evaluate(big[:, 1:4], big[:, 0], big[:, 4], lab, beta, 0.2, 5, 1e-9,
                                 0.3, True)
    for got in (got_f, got_v):
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_a_label_outside_the_clusters_is_an_error_not_a_stray_write():
    x, y, s = _chunk(n=100)
    lab = np.zeros(100, dtype=np.int64)
    lab[50] = 7
    with pytest.raises(ValueError, match="label"):
        lad_kernels.evaluate(x, y, s, lab, np.zeros(3), 0.0, 4, 1e-9, 0.5, False)


def test_inconsistent_shapes_are_refused():
    x, y, s = _chunk(n=100)
    with pytest.raises(ValueError):
        lad_kernels.pk_band(x, y[:50], s, np.zeros(3), 0.0, -1.0, 1.0)
    with pytest.raises(ValueError):
        lad_kernels.evaluate(x, y, s, np.zeros(100, dtype=np.int64), np.zeros(2), 0.0, 1, 1e-9,
                             0.5, False)
