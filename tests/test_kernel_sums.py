"""The compiled kernel sums K(A, B) w against numpy's kernel matrix times w."""

import numpy as np
import pytest

from solvers.kernels import Kernel
from solvers.smo import kernel_sums as ks
from solvers.smo.core import q_times
from solvers.smo.prediction import kernel_expansion
from solvers.smo.qmatrix import KernelQMatrix

KERNELS = [Kernel("rbf", gamma=0.3), Kernel("poly", gamma=0.2, degree=3, coef0=1.0),
           Kernel("linear")]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("p", [3, ks.GRAM_FROM + 8])  # column loop / BLAS dot products
def test_kernel_sums_match_the_kernel_matrix(kernel, p):
    rng = np.random.default_rng(p)
    m = 2 * ks.FILL_BLOCK + 37  # blocks of the parallel loop plus a ragged one
    A = rng.normal(size=(m, p)) / np.sqrt(p)
    B = rng.normal(size=(301, p)) / np.sqrt(p)
    w = rng.normal(size=301)
    ref = kernel(A, B) @ w
    got = ks.kernel_sums(kernel, A, B, w)
    assert np.max(np.abs(got - ref)) <= 1e-12 * np.abs(kernel(A, B)).sum(axis=1).max()


def test_kernel_sums_edge_cases():
    k = Kernel("rbf", gamma=1.0)
    A = np.arange(12.0).reshape(6, 2)
    assert np.array_equal(ks.kernel_sums(k, A, np.zeros((0, 2)), np.zeros(0)), np.zeros(6))
    assert ks.kernel_sums(k, np.zeros((0, 2)), A, np.ones(6)).shape == (0,)
    # far apart rows: exp underflows to exactly 0, no NaN
    far = ks.kernel_sums(k, np.array([[0.0, 0.0]]), np.array([[1e3, 0.0]]), np.array([1.0]))
    assert far[0] == 0.0
    with pytest.raises(ValueError, match="kernel function"):
        ks.kernel_sums(Kernel("precomputed"), A, A, np.ones(6))


def test_q_times_of_a_kernel_q_matrix_matches_the_dense_q():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(700, 4))
    y = np.where(rng.random(700) < 0.5, -1.0, 1.0)
    k = Kernel("rbf", gamma=0.5)
    v = rng.random(700)
    v[::3] = 0.0
    Q = np.outer(y, y) * k(X, X)
    got = q_times(KernelQMatrix(X, y, k), v)
    assert np.max(np.abs(got - Q @ v)) <= 1e-12 * np.abs(Q).sum(axis=1).max()


def test_kernel_expansion_paths_agree(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 5))
    Z = rng.normal(size=(900, 5))
    coef = rng.normal(size=400)
    coef[::4] = 0.0
    k = Kernel("rbf", gamma=0.2)
    numpy_path = kernel_expansion(X, coef, 0.5, k, Z)  # 900 x 300 < COMPILED_FROM
    monkeypatch.setattr("solvers.smo.prediction.COMPILED_FROM", 1)
    compiled = kernel_expansion(X, coef, 0.5, k, Z)
    assert np.max(np.abs(compiled - numpy_path)) <= 1e-12 * np.abs(coef).sum()
    assert np.allclose(numpy_path, k(Z, X) @ coef + 0.5, rtol=0, atol=1e-12)
