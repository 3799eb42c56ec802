"""AID-LAD, the FD / RFD sketches and the sketched ridge solvers on Dask arrays, run on a
dask.distributed LocalCluster (two worker processes, one thread each) started and stopped here.

References are independent of the Dask code: the in-memory solvers, scipy's dense solve and
linprog (HiGHS), and the eigenvalues of A'A - B'B for the FD bound.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import scipy.optimize

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from solvers.aid.lad import aid_lad  # noqa: E402
from solvers.errors import DataError  # noqa: E402
from solvers.result import TerminationCondition  # noqa: E402
from solvers.sketch import solve_ridge  # noqa: E402
from solvers.sketch.ridge import fd_preconditioner  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _lad_data(n=6000, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + rng.laplace(size=n)
    return X, y


def _lad_lp(X, y, quantile):
    """min sum 2 tau e+ + 2 (1 - tau) e-  s.t.  X beta + b + e+ - e- = y (scipy's HiGHS)."""
    n, p = X.shape
    c = np.concatenate([np.zeros(p + 1), np.full(n, 2 * quantile), np.full(n, 2 - 2 * quantile)])
    A = np.hstack([X, np.ones((n, 1)), np.eye(n), -np.eye(n)])
    bounds = [(None, None)] * (p + 1) + [(0, None)] * (2 * n)
    return scipy.optimize.linprog(c, A_eq=A, b_eq=y, bounds=bounds, method="highs").fun


@pytest.mark.parametrize("robust", [False, True])
def test_merged_fd_sketch_meets_the_bound(client, robust):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3000, 30)) * np.linspace(3, 0.1, 30)
    m = 8
    P, sk = fd_preconditioner(_rows(da.from_array(A, chunks=(500, 30))), 1.0, m, robust=robust)
    assert sk.n_rows_seen_ == 3000
    assert abs(sk.frob2_ - float((A * A).sum())) <= 1e-9 * sk.frob2_
    B = sk.sketch_
    err = np.linalg.eigvalsh(A.T @ A - B.T @ B)
    tail = np.cumsum(np.linalg.svd(A, compute_uv=False)[::-1] ** 2)[::-1]  # ||A - A_k||_F^2
    for k in range(m):
        bound = tail[k] / (m - k)
        if robust:
            assert np.max(np.abs(err - sk.rho_)) <= bound / 2 * (1 + 1e-9)
        else:
            assert err.min() >= -1e-9 * tail[0] and err.max() <= bound * (1 + 1e-9)


def _rows(A):
    from solvers.dask_rows import DaskRows

    return DaskRows(A)


@pytest.mark.parametrize("method", ["pcg-rfd", "rfd", "cholesky"])
def test_ridge_on_cluster_equals_in_memory(client, method):
    """Columns of decaying scale, so that iterative RFD's convergence condition (Theorem 6:
    b = ||A - A_k||_F^2 / ((m - k) gamma) < 1 for some k < m) holds: on a flat spectrum
    (i.i.d. columns, b ~ 160 here) RFD's rate depends on how the shrinks fell, which differs
    between one in-memory pass and merged chunk sketches."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((4000, 40)) * 0.7 ** np.arange(40)
    b = A @ rng.standard_normal(40) + rng.standard_normal(4000)
    gamma = 50.0
    tails = np.cumsum((np.linalg.svd(A, compute_uv=False) ** 2)[::-1])[::-1]
    assert min(tails[k] / ((20 - k) * gamma) for k in range(20)) < 0.05
    x_ref = np.linalg.solve(A.T @ A + gamma * np.eye(40), A.T @ b)
    kw = dict(method=method, m=20, max_iter=60, tol=1e-12)
    mem = solve_ridge(A, b, gamma, **kw)
    dsk = solve_ridge(da.from_array(A, chunks=(1000, 40)), da.from_array(b, chunks=1000),
                      gamma, **kw)
    assert dsk.termination is mem.termination is TerminationCondition.OPTIMAL
    assert np.linalg.norm(dsk.x - mem.x) <= 1e-10 * np.linalg.norm(mem.x)
    assert np.linalg.norm(dsk.x - x_ref) <= 1e-10 * np.linalg.norm(x_ref)
    assert abs(dsk.objective - mem.objective) <= 1e-10 * mem.objective


@pytest.mark.parametrize("quantile", [0.5, pytest.param(0.8, marks=pytest.mark.slow)])
def test_aid_lad_on_cluster_is_the_certified_in_memory_optimum(client, quantile):
    X, y = _lad_data()
    mem = aid_lad(X, y, quantile=quantile, n_clusters=100, init="band")
    dsk = aid_lad(da.from_array(X, chunks=(1500, 3)), da.from_array(y, chunks=2000),
                  quantile=quantile, n_clusters=100, init="band")
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective
    assert np.allclose(dsk.x, mem.x, rtol=1e-12, atol=1e-12)
    assert np.array_equal(dsk.extra["labels"].compute(), mem.extra["labels"])


@pytest.mark.slow
def test_aid_lad_on_cluster_matches_the_full_lp(client):
    X, y = _lad_data(n=1500)
    for quantile in (0.5, 0.8):
        sub = aid_lad(da.from_array(X, chunks=(400, 3)), y, quantile=quantile, n_clusters=50)
        assert sub.termination is TerminationCondition.CERTIFIED
        assert abs(sub.objective - _lad_lp(X, y, quantile)) <= 1e-7 * sub.objective


@pytest.mark.slow
def test_aid_lad_weights_and_zero_rows_on_cluster(client):
    X, y = _lad_data(seed=3)
    s = np.random.default_rng(4).uniform(0, 2, X.shape[0])
    s[::5] = 0.0
    mem = aid_lad(X, y, sample_weight=s, n_clusters=80, init="quantile")
    dsk = aid_lad(da.from_array(X, chunks=(2000, 3)), y, sample_weight=da.from_array(s),
                  n_clusters=80, init="quantile")
    assert dsk.termination is TerminationCondition.CERTIFIED
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective


def _with_nan(X, row):
    Xn = X.copy()
    Xn[row, 1] = np.nan
    return Xn


def _in_memory_message(fn, *args):
    with pytest.raises(DataError) as e:
        fn(*args)
    return str(e.value).rstrip(".")


def test_nan_in_one_chunk_refused_like_in_memory(client):
    X, y = _lad_data(n=2000)
    Xn = _with_nan(X, 1700)
    want = _in_memory_message(aid_lad, Xn, y)
    with pytest.raises(DataError, match="row chunk 3") as e:
        aid_lad(da.from_array(Xn, chunks=(500, 3)), y)
    assert str(e.value).startswith(want.split(";")[0])
    want = _in_memory_message(lambda A: solve_ridge(A, y, 1.0, method="pcg-fd", m=2), Xn)
    with pytest.raises(DataError) as e:
        solve_ridge(da.from_array(Xn, chunks=(500, 3)), y, 1.0, method="pcg-fd", m=2)
    assert str(e.value).startswith(want.split(";")[0].replace("'X'", "'A'"))


def _ragged(X):
    import dask

    parts = [da.from_delayed(dask.delayed(np.asarray)(X[:500]), (500, 3), dtype=float),
             da.from_delayed(dask.delayed(np.ones)((500, 4)), (500, 3), dtype=float)]
    return da.concatenate(parts)


def test_ragged_chunks_and_unreadable_files_refused_before_solving(client, tmp_path):
    import dask

    X, y = _lad_data(n=1000)
    for call in (lambda A: aid_lad(A, y), lambda A: solve_ridge(A, y, 1.0, method="fd", m=2)):
        with pytest.raises(DataError, match="chunks of different widths: chunk 1"):
            call(_ragged(X))
    np.save(tmp_path / "part0.npy", X[:500])
    lazy = [da.from_delayed(dask.delayed(np.load)(str(tmp_path / f"part{i}.npy")), (500, 3),
                            dtype=float) for i in range(2)]
    with pytest.raises(FileNotFoundError, match="part1.npy"):
        aid_lad(da.concatenate(lazy), y)


@pytest.mark.slow
def test_a_worker_killed_mid_run_changes_nothing(client):
    X, y = _lad_data(n=8000, seed=5)
    mem = aid_lad(X, y, n_clusters=60, init="quantile")
    pids = client.run(os.getpid)
    killed = []

    def kill_one(it, highs, labels):
        if it == 1:  # labels and data chunks held by this worker are lost; Dask recomputes
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            killed.append(it)

    dsk = aid_lad(da.from_array(X, chunks=(1000, 3)), da.from_array(y, chunks=1000),
                  n_clusters=60, init="quantile", callback=kill_one)
    assert killed and dsk.termination is TerminationCondition.CERTIFIED
    assert dsk.iterations == mem.iterations >= 2
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective


@pytest.mark.parametrize("quantile", [0.5, 0.7])
def test_aid_lad_pk_default_on_cluster_is_the_in_memory_optimum(client, quantile):
    """The default on Dask (the pk start, the interior point, the near split over the chunks)
    on two worker processes: certified at the in-memory optimum, with weights and zero rows."""
    X, y = _lad_data(n=12000, seed=7)
    s = np.random.default_rng(8).uniform(0.5, 2.0, X.shape[0])
    s[::9] = 0.0
    mem = aid_lad(X, y, sample_weight=s, quantile=quantile)
    dsk = aid_lad(da.from_array(X, chunks=(3000, 3)), da.from_array(y, chunks=3000),
                  sample_weight=da.from_array(s, chunks=3000), quantile=quantile)
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED
    assert abs(dsk.objective - mem.objective) <= 1e-10 * mem.scale
    assert dsk.extra["labels"].compute().max() + 1 == dsk.extra["n_clusters_final"]
