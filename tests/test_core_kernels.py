"""The compiled kernel columns (optmodels/kernel.hpp through solvers._core._kernels) against numpy:
Q_si = y_s y_i k(x_s, x_i) for linear, RBF (exp by Cody-Waite + Taylor, <= 2 ulp) and polynomial
kernels, whole / partial / gathered columns, float64 and float32 outputs, serial and parallel."""

import numpy as np
import pytest

from solvers._core import _kernels
from solvers.kernels import Kernel
from solvers.smo.kernel_sums import kernel_sums, q_matrix
from solvers.smo.qmatrix import KIND_MATRIX, KernelQMatrix, PrecomputedQMatrix

KERNELS = [Kernel("linear"), Kernel("rbf", gamma=0.3), Kernel("rbf", gamma=4.0),
           Kernel("poly", gamma=0.2, degree=3, coef0=1.0)]
NO_Q = np.zeros((1, 1))
NO_IDX = np.zeros(1, np.int64)


def _data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def _fill(qmat, i, idx, cnt, contiguous, out):
    s = qmat.compiled_spec()
    _kernels.fill_column(s.kind, s.X, s.sqnorm, s.gamma, s.coef0, s.degree, qmat.y, NO_Q, i,
                         idx, cnt, contiguous, out)


def _tolerance(kernel, ref):
    # RBF: exp to 2 ulp and the squared distance's round-off; the others: the dot product's
    scale = np.abs(ref).max()
    return 8e-16 * max(scale, 1.0) if kernel.name != "rbf" else 1e-14


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"{k.name}-{k.gamma}")
@pytest.mark.parametrize("n", [300, 5000])  # serial; parallel blocks (n >= PARALLEL_FROM)
def test_whole_column_matches_numpy(kernel, n):
    X, y = _data(n, 6)
    qmat = KernelQMatrix(X, y, kernel)
    for i in (0, n // 2, n - 1):
        ref = y * y[i] * kernel(X, X[i : i + 1])[:, 0]
        out = np.full(n, np.nan)
        _fill(qmat, i, NO_IDX, n, True, out)
        assert np.max(np.abs(out - ref)) <= _tolerance(kernel, ref)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"{k.name}-{k.gamma}")
def test_gathered_and_partial_columns_equal_the_whole_one(kernel):
    n = 2 * _kernels.PARALLEL_FROM + 77
    X, y = _data(n, 5, seed=1)
    qmat = KernelQMatrix(X, y, kernel)
    whole = np.empty(n)
    _fill(qmat, 17, NO_IDX, n, True, whole)
    rng = np.random.default_rng(2)
    for m in (100, _kernels.PARALLEL_FROM + 5):  # a serial and a parallel gather
        idx = np.sort(rng.choice(n, m, replace=False)).astype(np.int64)
        out = np.full(n, -7.0)
        _fill(qmat, 17, idx, m, False, out)
        assert np.array_equal(out[idx], whole[idx])  # same arithmetic entry by entry
        rest = np.setdiff1d(np.arange(n), idx)
        assert np.all(out[rest] == -7.0)  # nothing else written
    part = np.full(n, -7.0)
    _fill(qmat, 17, NO_IDX, 3000, True, part)  # the first 3000 rows, serially
    assert np.array_equal(part[:3000], whole[:3000]) and np.all(part[3000:] == -7.0)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"{k.name}-{k.gamma}")
def test_float32_column_is_the_rounded_float64_one(kernel):  # LIBSVM-style float32 cache
    n = 3000
    X, y = _data(n, 4, seed=3)
    qmat = KernelQMatrix(X, y, kernel)
    full = np.empty(n)
    single = np.empty(n, np.float32)
    _fill(qmat, 5, NO_IDX, n, True, full)
    _fill(qmat, 5, NO_IDX, n, True, single)
    # RBF rounds y_s y_i q to float32 before the exact scaling by 2^e (as numba's loops did):
    # the same as rounding the float64 value except in float32's subnormal range
    normal = np.abs(full) >= np.finfo(np.float32).tiny
    assert np.array_equal(single[normal], full[normal].astype(np.float32))
    assert np.max(np.abs(single[~normal] - full[~normal]), initial=0.0) <= 2.0**-149


def test_rbf_underflows_to_zero_and_is_one_on_the_diagonal():
    X = np.array([[0.0, 0.0], [30.0, 0.0], [1e3, 0.0], [0.0, 0.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    qmat = KernelQMatrix(X, y, Kernel("rbf", gamma=1.0))
    out = np.empty(4)
    _fill(qmat, 0, NO_IDX, 4, True, out)
    assert out[0] == 1.0 and out[3] == -1.0
    assert out[1] == -np.exp(-900.0) and out[2] == 0.0  # 2^e stays normal; below e^-708: 0


def test_precomputed_column_is_the_row_of_q():
    rng = np.random.default_rng(4)
    K = rng.normal(size=(50, 50))
    Q = np.ascontiguousarray(K + K.T)
    out = np.full(50, np.nan)
    _kernels.fill_column(KIND_MATRIX, NO_Q, np.zeros(1), 0.0, 0.0, 1.0, np.ones(50), Q, 9,
                         NO_IDX, 50, True, out)
    assert np.array_equal(out, Q[9])


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"{k.name}-{k.gamma}")
def test_q_matrix_matches_numpy_and_is_symmetric(kernel):
    X, y = _data(700, 5, seed=5)
    Q = q_matrix(KernelQMatrix(X, y, kernel))
    ref = np.outer(y, y) * kernel(X, X)
    assert Q.shape == (700, 700) and Q.flags.c_contiguous
    assert np.max(np.abs(Q - ref)) <= _tolerance(kernel, ref)
    assert np.array_equal(Q, Q.T)  # the same products either way round


def test_q_matrix_of_a_precomputed_q_is_q():
    X, y = _data(40, 3)
    pre = PrecomputedQMatrix.from_kernel(X, y, Kernel("rbf", gamma=0.5))
    assert q_matrix(pre) is pre.Q


@pytest.mark.parametrize("p", [1, 3, 10, 64])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"{k.name}-{k.gamma}")
def test_tiled_and_single_entry_columns_agree_bitwise(kernel, p):
    # whole columns run their dot products in tiles of rows, gathered entries one by one:
    # the same additions in the same order, so the same bits (float64 and float32)
    n = 2 * _kernels.FILL_BLOCK + 45
    X, y = _data(n, p, seed=p)
    qmat = KernelQMatrix(X, y, kernel)
    rng = np.random.default_rng(p)
    idx = np.sort(rng.choice(n, 200, replace=False)).astype(np.int64)
    for dtype in (np.float64, np.float32):
        whole = np.empty(n, dtype)
        _fill(qmat, 7, NO_IDX, n, True, whole)
        for s in idx[:: 20]:
            one = np.full(n, -7.0, dtype)
            _fill(qmat, 7, np.array([s]), 1, False, one)
            assert one[s] == whole[s]
        part = np.full(n, -7.0, dtype)
        _fill(qmat, 7, idx, len(idx), False, part)
        assert np.array_equal(part[idx], whole[idx])


@pytest.mark.parametrize("p", [1, 3, 10, 32])
@pytest.mark.parametrize("kernel", [Kernel("rbf", gamma=0.3), Kernel("rbf", gamma=4.0),
                                    Kernel("poly", gamma=0.2, degree=3, coef0=1.0)],
                         ids=lambda k: f"{k.name}-{k.gamma}")
def test_kernel_sums_of_tiles_equal_row_by_row_sums(kernel, p):
    # the RBF sums run in tiles of rows kept in registers, a single row (or a tile's rest) by
    # the column loop: the same operations in the same order per row, so the same bits
    rng = np.random.default_rng(p)
    A = rng.normal(size=(_kernels.FILL_BLOCK + 70, p))
    B = rng.normal(size=(37, p))
    w = rng.normal(size=37)
    sums = kernel_sums(kernel, A, B, w)
    for s in range(0, A.shape[0], 97):
        assert kernel_sums(kernel, A[s : s + 1], B, w)[0] == sums[s]
