"""Linear-SVM AID on row-chunked Dask arrays, on a dask.distributed LocalCluster (two worker
processes, one thread each) started and stopped here.

References: the same AID call on the in-memory arrays (the Dask passes must reproduce its
clusters and iterates) and, independently, the full primal QP of the SVM problem (Clarabel);
the refusals are compared with the in-memory messages.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import test_dask  # noqa: E402  (tests/ is on sys.path under pytest)

import solvers.aid.svm as aid_svm_module  # noqa: E402
from optmodels.svm import SVM  # noqa: E402
from solvers.aid.svm import aid_svm  # noqa: E402
from solvers.errors import DataError  # noqa: E402
from solvers.kernels import Kernel  # noqa: E402
from solvers.result import CERTIFICATE_TOL, TerminationCondition  # noqa: E402

client = test_dask.client  # the module-scoped LocalCluster fixture: 2 processes, 1 thread each


def _svm_data(n=3000, p=4, seed=0):
    """Overlapping classes (many margin violations) with weights in [0.2, 2], every 7th 0."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * np.array([1.0, 3.0, 0.5, 2.0])[:p]
    y = np.where(X @ rng.standard_normal(p) + 0.7 * rng.standard_normal(n) > 0.3, 1.0, -1.0)
    s = rng.uniform(0.2, 2.0, n)
    s[::7] = 0.0
    return X, y, s


def _chunked(X, y, rows=700):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _weights(s, rows=700):
    return da.from_array(s, chunks=rows)


@pytest.mark.parametrize("init", ["band", pytest.param("quantile", marks=pytest.mark.slow)])
def test_weighted_linear_aid_on_cluster_is_the_in_memory_certified_optimum(client, init):
    X, y, s = _svm_data(n=2000)
    kw = dict(C=0.7, n_clusters=40, init=init)
    mem = aid_svm(X, y, sample_weight=s, **kw)
    dsk = aid_svm(*_chunked(X, y, rows=600), sample_weight=_weights(s, 600), **kw)
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED
    assert dsk.iterations == mem.iterations >= 2
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective
    assert abs(dsk.bound - mem.bound) <= 1e-12 * mem.objective
    assert np.allclose(dsk.x, mem.x, rtol=1e-10, atol=1e-12)
    assert abs(dsk.extra["intercept"] - mem.extra["intercept"]) <= 1e-10
    kept = mem.extra["labels"] >= 0
    assert np.array_equal(dsk.extra["labels"].compute(), mem.extra["labels"][kept])
    full = SVM(X, y, sample_weight=s, C=0.7, kernel="linear").solve()
    assert full.termination is TerminationCondition.OPTIMAL
    assert abs(dsk.objective - full.objective) <= CERTIFICATE_TOL * dsk.scale
    assert dsk.bound <= full.objective + 1e-9 * dsk.scale  # F bounds the true optimum


def test_svm_problem_on_dask_stays_lazy_and_runs_aid(client):
    X, y, s = _svm_data(n=1500, seed=1)
    codes = np.where(y > 0, 7.0, 3.0)  # numeric classes: the larger maps to +1
    kw = dict(C=2.0, kernel="linear", class_weight={3.0: 2.0})
    mem = SVM(X, codes, sample_weight=s, **kw)
    prob = SVM(*_chunked(X, codes, rows=500), sample_weight=_weights(s, 500), **kw)
    assert prob.lazy and np.array_equal(prob.classes_, mem.classes_)
    assert abs(prob.natural_scale() - mem.natural_scale()) <= 1e-12 * mem.natural_scale()
    got, want = prob.solve("aid", n_clusters=30), mem.solve("aid", n_clusters=30)
    assert got.termination is want.termination is TerminationCondition.CERTIFIED
    assert abs(got.objective - want.objective) <= 1e-12 * want.objective
    assert got.extra["train_accuracy"] == want.extra["train_accuracy"]
    assert abs(got.objective - mem.primal_objective(got.x, got.extra["b"])) <= 1e-12 * (
        got.objective)
    for strategy in ("full", "smo"):
        with pytest.raises(ValueError, match="needs X in memory.*strategy='aid'"):
            prob.solve(strategy)
    with pytest.raises(ValueError, match="needs X in memory.*strategy='aid'"):
        prob.qp()


def test_nan_in_one_chunk_refused_like_in_memory_before_solving(client, monkeypatch):
    X, y, s = _svm_data(n=2000)
    Xn = test_dask._with_nan(X, 1500)
    with pytest.raises(DataError) as mem:
        aid_svm(Xn, y, sample_weight=s)
    want = str(mem.value).rstrip(".")

    def no_solve(*args, **kwargs):
        raise AssertionError("a QP was solved before the data were checked")

    monkeypatch.setattr(aid_svm_module, "linear_svm_primal", no_solve)
    with pytest.raises(DataError, match="row chunk 3") as dsk:
        aid_svm(*_chunked(Xn, y, rows=500), sample_weight=s)
    assert str(dsk.value).startswith(want)
    with pytest.raises(DataError, match="row chunk 3") as dsk:
        SVM(*_chunked(Xn, y, rows=500), kernel="linear")
    assert str(dsk.value).startswith(want)


def _ragged(X):
    import dask

    p = X.shape[1]
    parts = [da.from_delayed(dask.delayed(np.asarray)(X[:500]), (500, p), dtype=float),
             da.from_delayed(dask.delayed(np.ones)((500, p + 1)), (500, p), dtype=float)]
    return da.concatenate(parts)


def test_ragged_chunks_and_bad_labels_refused_like_in_memory(client):
    X, y, s = _svm_data(n=1000)
    with pytest.raises(DataError, match="chunks of different widths: chunk 1"):
        aid_svm(_ragged(X), y)
    with pytest.raises(DataError, match="chunks of different widths: chunk 1"):
        SVM(_ragged(X), y, kernel="linear")
    for bad in (np.where(y > 0, 1.0, 0.0), np.ones_like(y)):
        with pytest.raises(DataError) as mem:
            aid_svm(X, bad)
        with pytest.raises(DataError) as dsk:
            aid_svm(*_chunked(X, bad, rows=300))
        assert str(dsk.value) == str(mem.value)
    mixed = np.zeros(X.shape[0], dtype=np.int64)  # one cluster holding both classes
    with pytest.raises(ValueError, match="must not mix the labels"):
        aid_svm(X, y, init=mixed)
    with pytest.raises(ValueError, match="must not mix the labels"):
        aid_svm(*_chunked(X, y, rows=300), init=da.from_array(mixed, chunks=300))


def test_kernel_svm_with_dask_x_refused_clearly(client):
    X, y, _ = _svm_data(n=600)
    Xd, yd = _chunked(X, y, rows=200)
    with pytest.raises(DataError, match="needs kernel='linear'.*kernel='rbf'"):
        SVM(Xd, yd, kernel="rbf")
    with pytest.raises(DataError, match="kernel='rbf' needs X in memory"):
        aid_svm(Xd, yd, kernel=Kernel("rbf", 0.5))
