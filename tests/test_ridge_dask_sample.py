"""pcg-fd / pcg-rfd on row-chunked Dask arrays (threads scheduler) sketch the same length-squared
row sample as in memory: same rows, same preconditioner, same iterations, same answer.

References: the in-memory solver and numpy's dense solve of ``(A'A + gamma I) x = A'b``.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from solvers.dask_rows import DaskRows  # noqa: E402
from solvers.result import TerminationCondition  # noqa: E402
from solvers.sketch import solve_ridge  # noqa: E402
from solvers.sketch.ridge import length_squared_sample, sample_of  # noqa: E402


def _data(n=6000, d=40, seed=0, scales=None):
    rng = np.random.default_rng(seed)
    scales = 1.0 / np.arange(1, d + 1) if scales is None else scales
    A = rng.standard_normal((n, d)) * scales
    b = A @ rng.standard_normal(d) + rng.standard_normal(n)
    return A, b


def _dense(A, b, gamma):
    return np.linalg.solve(A.T @ A + gamma * np.eye(A.shape[1]), A.T @ b)


def _chunked(A, b, rows):
    return da.from_array(A, chunks=(rows, A.shape[1])), da.from_array(b, chunks=rows)


@pytest.mark.parametrize("rows", [1000, 1700])
def test_dask_row_sample_is_the_in_memory_sample(rows):
    A, _ = _data()
    Ad = da.from_array(A, chunks=(rows, A.shape[1]))
    for s, seed in ((128, 0), (300, 7)):
        want = length_squared_sample(A, s, seed)
        got = sample_of(DaskRows(Ad), s, seed)
        assert got.shape == want.shape == (s, A.shape[1])
        assert np.allclose(got, want, rtol=1e-14, atol=0)
    # the pass's norms and sums against numpy's
    v = np.random.default_rng(1).standard_normal(A.shape[0])
    atv, rn, cn = DaskRows(Ad).norms_rmatvec(da.from_array(v, chunks=rows))
    assert np.allclose(atv, A.T @ v, rtol=1e-12, atol=1e-12)
    assert np.allclose(rn, (A * A).sum(axis=1), rtol=1e-14)
    assert np.allclose(cn, (A * A).sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("method", ["pcg-fd", "pcg-rfd"])
def test_dask_pcg_equals_in_memory_pcg(method):
    A, b = _data()
    gamma = 5.0
    x_ref = _dense(A, b, gamma)
    kw = dict(method=method, m=16, max_iter=200, tol=1e-12)
    mem = solve_ridge(A, b, gamma, **kw)
    dsk = solve_ridge(*_chunked(A, b, 1700), gamma, **kw)
    assert dsk.termination is mem.termination is TerminationCondition.OPTIMAL
    assert dsk.extra["sketch_rows"] == mem.extra["sketch_rows"] == 128
    # the column norms are summed in another order (chunks vs the fused threaded pass): at
    # tol 1e-12 that rounding may move the stop by one iteration
    assert abs(dsk.iterations - mem.iterations) <= 1
    assert np.linalg.norm(dsk.x - mem.x) <= 1e-10 * np.linalg.norm(mem.x)
    assert np.linalg.norm(dsk.x - x_ref) <= 1e-9 * np.linalg.norm(x_ref)
    # the early relative gradients agree to rounding (the same preconditioner; CG amplifies
    # the rounding of the chunked products later on)
    g_mem = [h["grad_norm"] for h in mem.extra["history"]]
    g_dsk = [h["grad_norm"] for h in dsk.extra["history"]]
    assert np.allclose(g_dsk[:8], g_mem[:8], rtol=1e-9)


def test_dask_pcg_sample_with_seed_and_sketch_rows():
    A, b = _data(n=5000, d=30, seed=3)
    kw = dict(method="pcg-rfd", m=8, max_iter=200, tol=1e-10, seed=11, sketch_rows=400)
    mem = solve_ridge(A, b, 2.0, **kw)
    dsk = solve_ridge(*_chunked(A, b, 1250), 2.0, **kw)
    assert dsk.extra["sketch_rows"] == mem.extra["sketch_rows"] == 400
    assert dsk.extra["rho"] == pytest.approx(mem.extra["rho"], rel=1e-12)
    # 25 iterations: CG amplifies the rounding of the products (chunked vs whole) late on,
    # so the runs agree while the gradient is large and may end one iteration apart
    g_mem, g_dsk = ([h["grad_norm"] for h in r.extra["history"]] for r in (mem, dsk))
    assert np.allclose(g_dsk[:12], g_mem[:12], rtol=1e-9)
    assert abs(dsk.iterations - mem.iterations) <= 1
    other = solve_ridge(A, b, 2.0, **{**kw, "seed": 12})  # another seed: another sample
    assert other.extra["rho"] != pytest.approx(mem.extra["rho"], rel=1e-6)
    x_ref = _dense(A, b, 2.0)
    for res in (mem, dsk):  # relative gradient 1e-10, x error ~1e-8: within the certified bound
        err = np.linalg.norm(res.x - x_ref) / np.linalg.norm(x_ref)
        assert err <= res.extra["x_error_bound"] <= 1e-5


def test_jacobi_preconditioner_is_the_dense_matrix_and_its_inverse():
    from solvers.sketch.precondition import JacobiSketchPreconditioner

    rng = np.random.default_rng(5)
    d = 12
    Bs = rng.standard_normal((4, d))
    e, scale = rng.uniform(0.1, 2.0, d), rng.uniform(0.5, 3.0, d)
    P = JacobiSketchPreconditioner(Bs, e, scale)
    M = np.diag(scale) @ (Bs.T @ Bs + np.diag(e)) @ np.diag(scale)
    V = rng.standard_normal((d, 3))
    assert np.allclose(P.matvec(V), M @ V, rtol=1e-12)
    assert np.allclose(P.solve(V), np.linalg.solve(M, V), rtol=1e-10)
    assert np.allclose(P.solve(V[:, 0]), np.linalg.solve(M, V[:, 0]), rtol=1e-10)
    with pytest.raises(ValueError, match="'e' and 'scale'.*positive vectors of length d = 12"):
        JacobiSketchPreconditioner(Bs, -e, scale)


@pytest.mark.parametrize("scales", [np.linspace(1.0, 0.05, 60), np.logspace(0, -4, 60)],
                         ids=["linear", "log"])
def test_jacobi_scaling_converges_on_a_flat_column_scaled_spectrum(scales, monkeypatch):
    """The benchmark's flat generator (independent columns, scales 1..0.05) and a wider one:
    the m = 8 sketch cannot precondition them, Jacobi scaling does."""
    import solvers.sketch.ridge as ridge

    A, b = _data(n=8000, d=60, seed=4, scales=scales)
    A[:, 7] = 0.0  # a zero column: D_j = gamma
    gamma = 1.0
    x_ref = _dense(A, b, gamma)
    kw = dict(method="pcg-rfd", m=8, max_iter=400, tol=1e-12)
    dsk = solve_ridge(*_chunked(A, b, 2000), gamma, **kw)
    mem = solve_ridge(A, b, gamma, **kw)
    assert dsk.is_optimal and mem.is_optimal and dsk.iterations <= 25
    assert abs(dsk.iterations - mem.iterations) <= 1
    err = np.linalg.norm(dsk.x - x_ref) / np.linalg.norm(x_ref)
    assert err <= dsk.extra["x_error_bound"] <= 1e-8
    # in memory, no scaling: no column norms from the fused pass nor from the separate one
    monkeypatch.setattr(ridge, "row_column_norms2", lambda X: (np.einsum("ij,ij->i", X, X), None))
    monkeypatch.setattr(ridge, "column_norms2", lambda *a: None)
    plain = solve_ridge(A, b, gamma, **kw)
    assert plain.iterations >= 3 * mem.iterations


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fused_row_and_column_norms_match_numpy(threads):
    """One threaded read gives numpy's row and column sums of squares (odd block sizes, a row
    count not divisible by the threads)."""
    from solvers.sketch.ridge import row_column_norms2

    A = np.random.default_rng(3).standard_normal((1001, 37))
    rows, cols = row_column_norms2(A, block_bytes=8 * 37 * 7, threads=threads)
    np.testing.assert_allclose(rows, (A ** 2).sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(cols, (A ** 2).sum(axis=0), rtol=1e-13)


def test_pcg_fd_sketches_the_unscaled_rows(monkeypatch):
    """pcg-fd keeps the plain FD preconditioner (the column scaling is pcg-rfd's): the same
    iterates with the column norms withheld, and no Jacobi preconditioner built."""
    import solvers.sketch.ridge as ridge

    A, b = _data(n=6000, d=40, seed=2, scales=np.logspace(0, -3, 40))
    kw = dict(method="pcg-fd", m=8, max_iter=400, tol=1e-12)
    built = []
    real = ridge.JacobiSketchPreconditioner
    monkeypatch.setattr(ridge, "JacobiSketchPreconditioner",
                        lambda *a: built.append(1) or real(*a))
    res = solve_ridge(A, b, 1.0, **kw)
    dsk = solve_ridge(*_chunked(A, b, 2000), 1.0, **kw)
    assert built == [] and res.is_optimal and dsk.is_optimal
    solve_ridge(A, b, 1.0, **{**kw, "method": "pcg-rfd"})
    assert built == [1]
    x_ref = _dense(A, b, 1.0)
    assert np.linalg.norm(res.x - x_ref) <= 1e-8 * np.linalg.norm(x_ref)
