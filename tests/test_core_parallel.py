"""The OpenMP regions above kernel.hpp's PARALLEL_WORK threshold (the only ones that still go
parallel): one thread and two give the same bits, equal to numpy's kernel matrix to round-off
and to the same entries computed serially in pieces below the threshold."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from solvers._core import _batched, _kernels, _smo
from solvers.kernels import Kernel
from solvers.smo.batched import ROW_BLOCK, _fill_and_update
from solvers.smo.qmatrix import KernelQMatrix

NO_Q = np.zeros((1, 1))
NO_IDX = np.zeros(1, np.int64)
ENTRY_WORK, GATHER_FACTOR = 8, 4  # kernel.hpp's units: an entry costs p + 8, gathered 4x that


def test_one_threshold_for_every_module():
    assert _smo.PARALLEL_WORK == _batched.PARALLEL_WORK == _kernels.PARALLEL_WORK


def _column(qmat, i, idx, cnt, contiguous, out):
    s = qmat.compiled_spec()
    _kernels.fill_column(s.kind, s.X, s.sqnorm, s.gamma, s.coef0, s.degree, qmat.y, NO_Q, i,
                         idx, cnt, contiguous, out)


def test_a_column_above_the_threshold_is_the_same_on_one_and_two_threads():
    n, p = 2 * _kernels.PARALLEL_FROM + 77, 1016
    assert n * (p + ENTRY_WORK) >= _kernels.PARALLEL_WORK  # the parallel path
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, p)) / np.sqrt(p)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    kernel = Kernel("rbf", gamma=0.7)
    qmat = KernelQMatrix(X, y, kernel)
    cols = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            cols[threads] = np.full(n, np.nan)
            _column(qmat, 9, NO_IDX, n, True, cols[threads])
    assert np.array_equal(cols[1], cols[2])
    ref = y * y[9] * kernel(X, X[9:10])[:, 0]
    assert np.max(np.abs(cols[2] - ref)) <= 1e-14
    pieces = np.full(n, np.nan)  # gathered 500 entries at a time: serial (below the threshold)
    assert 500 * (p + ENTRY_WORK) * GATHER_FACTOR < _kernels.PARALLEL_WORK
    for lo in range(0, n, 500):
        idx = np.arange(lo, min(n, lo + 500), dtype=np.int64)
        _column(qmat, 9, idx, idx.size, False, pieces)
    assert np.array_equal(pieces, cols[2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fill_and_update_above_the_threshold_is_the_same_on_one_and_two_threads(dtype):
    """The batched loop's fused pass with enough new columns to go parallel: the same bits on
    one thread and two, and the columns and gradient of numpy's kernel matrix."""
    n, p, nfill = 3 * ROW_BLOCK + 77, 32, 140
    assert n * nfill * (p + ENTRY_WORK) >= _batched.PARALLEL_WORK  # the parallel path
    rng = np.random.default_rng(8)
    X = rng.normal(size=(n, p))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    kernel = Kernel("rbf", gamma=0.3)
    Q = y[:, None] * y[None, :] * kernel(X, X)
    cols = np.sort(rng.choice(n, nfill, replace=False)).astype(np.int64)
    slots = np.arange(nfill, dtype=np.int64)
    d = rng.normal(size=nfill)
    grad0 = rng.normal(size=n)
    XT, sqn = np.ascontiguousarray(X.T), (X * X).sum(1)
    out = {}
    for threads in (1, 2):
        Kc, grad = np.full((nfill, n), np.nan, dtype=dtype), grad0.copy()
        with threadpool_limits(limits=threads, user_api="openmp"):
            _fill_and_update(1, XT, sqn, 0.3, 0.0, 3, y, cols, slots, nfill, Kc, np.empty(n),
                             grad, slots, d, nfill)
        out[threads] = (Kc, grad)
    assert np.array_equal(out[1][0], out[2][0]) and np.array_equal(out[1][1], out[2][1])
    Kc, grad = out[2]
    # entries in (0, 1]: exp to 2 ulp and the squared distance's round-off (as the column test)
    np.testing.assert_allclose(Kc, Q[:, cols].T, rtol=4e-7 if dtype == np.float32 else 1e-14,
                               atol=1e-14)
    np.testing.assert_allclose(grad, grad0 + Kc.astype(float).T @ d, rtol=1e-13, atol=1e-13)
