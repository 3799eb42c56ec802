"""The compiled SMO core's kernel columns: the parallel blocks equal the serial loop."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.smo import core


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("contiguous", [True, False])
def test_parallel_column_equals_serial(kind, contiguous):
    rng = np.random.default_rng(kind)
    n, p = 3 * core.PARALLEL_FROM + 17, 6
    X = rng.standard_normal((n, p))
    y = np.where(rng.random(n) > 0.4, 1.0, -1.0)
    XT, sqn = np.ascontiguousarray(X.T), np.einsum("ij,ij->i", X, X)
    idx = np.sort(rng.choice(n, size=n - 5, replace=False)) if not contiguous else np.arange(n)
    cnt = idx.shape[0]
    assert cnt >= core.PARALLEL_FROM  # the parallel path
    par, ser, buf = np.zeros(n), np.zeros(n), np.zeros(n)
    core._fill(kind, XT, sqn, 0.3, 0.5, 3.0, y, 11, idx, cnt, contiguous, par, buf)
    core._fill_range(kind, XT, sqn, 0.3, 0.5, 3.0, y, 11, idx, 0, cnt, contiguous, ser, buf)
    np.testing.assert_array_equal(par, ser)
    # and against numpy: Q_si = y_s y_i k(x_s, x_i)
    d = X[idx] @ X[11]
    k = d if kind == 0 else (np.exp(-0.3 * np.maximum(sqn[idx] + sqn[11] - 2 * d, 0))
                             if kind == 1 else (0.3 * d + 0.5) ** 3)
    np.testing.assert_allclose(par[idx], y[idx] * y[11] * k, rtol=1e-12, atol=1e-12)
