"""The compiled SMO core's kernel columns: the parallel blocks equal the serial loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers._core import _smo
from solvers.smo import core


def _fill(kind, XT, sqn, gamma, coef0, degree, y, i, idx, cnt, contiguous, out, parallel=True):
    """out[s] = y_s y_i k(x_s, x_i) for s in idx[:cnt] by the C++ core's column fill
    (``parallel``: in blocks on all threads from PARALLEL_FROM entries on, else serially)."""
    _smo.fill_column(kind, XT, sqn, gamma, coef0, degree, y, i,
                     np.ascontiguousarray(idx[:cnt], dtype=np.int64), contiguous, parallel, out)


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
    par, ser = np.zeros(n), np.zeros(n)
    _fill(kind, XT, sqn, 0.3, 0.5, 3.0, y, 11, idx, cnt, contiguous, par)
    _fill(kind, XT, sqn, 0.3, 0.5, 3.0, y, 11, idx, cnt, contiguous, ser, parallel=False)
    np.testing.assert_array_equal(par, ser)
    # and against numpy: Q_si = y_s y_i k(x_s, x_i)
    d = X[idx] @ X[11]
    k = d if kind == 0 else (np.exp(-0.3 * np.maximum(sqn[idx] + sqn[11] - 2 * d, 0))
                             if kind == 1 else (0.3 * d + 0.5) ** 3)
    np.testing.assert_allclose(par[idx], y[idx] * y[11] * k, rtol=1e-12, atol=1e-12)



def _exp_grid(v):
    """q(r) 2^e of the column loop's exp (kernel.hpp's exp_parts) on each v."""
    out = np.empty_like(v)
    _smo.exp_parts(np.ascontiguousarray(v), out)
    return out


def test_vectorized_exp_within_two_ulp_of_libm():
    """q(r) 2^e against math.exp on [-720, 0]: within 2 ulp; below -708 exactly 0."""
    v = np.r_[-np.geomspace(1e-300, 720.0, 200_001), 0.0, -708.0, -np.log(2.0) * 0.5]
    got = _exp_grid(v)
    ref = np.array([math.exp(t) for t in v])
    ok = v >= -708.0
    ulp = np.spacing(ref[ok])
    assert np.max(np.abs(got[ok] - ref[ok]) / ulp) <= 2.0
    assert np.all(got[~ok] == 0.0)


@pytest.mark.parametrize("contiguous", [True, False])
def test_rbf_column_exp_is_accurate_over_the_whole_range(contiguous):
    """RBF columns with exponents from 0 down past the underflow cut (-708: returned as 0)
    against numpy; the tolerance is that of the distance ||x_s||^2 + ||x_i||^2 - 2 x_s'x_i
    (a few ulp of the squared norms, times gamma), plus 2 ulp for the exp."""
    rng = np.random.default_rng(7)
    n, p = core.PARALLEL_FROM + 300, 3
    X = rng.standard_normal((n, p)) * np.linspace(0.0, 12.0, n)[:, None]
    X[0] = 0.5
    y = np.where(rng.random(n) > 0.5, 1.0, -1.0)
    XT, sqn = np.ascontiguousarray(X.T), np.einsum("ij,ij->i", X, X)
    idx = np.arange(n) if contiguous else np.sort(rng.choice(n, n - 3, replace=False))
    for gamma in (1e-3, 0.1, 2.0, 7.0):
        out = np.zeros(n)
        _fill(1, XT, sqn, gamma, 0.0, 3.0, y, 0, idx, idx.size, contiguous, out)
        v = -gamma * np.maximum(sqn[idx] + sqn[0] - 2 * (X[idx] @ X[0]), 0.0)
        ref = y[idx] * y[0] * np.exp(v)
        ok = v >= -708.0 + 1e-6 * abs(v)
        rtol = 8 * np.finfo(float).eps * (1.0 + gamma * (sqn[idx] + sqn[0]))
        assert np.all(np.abs(out[idx] - ref)[ok] <= rtol[ok] * np.abs(ref[ok]))
        assert np.all(out[idx][v < -708.0 - 1e-6 * abs(v)] == 0.0)
        assert (v < -710.0).any() == (gamma >= 2.0)  # the larger gammas reach past the cut
