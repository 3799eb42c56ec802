"""AID-LAD on Dask: where it runs (``solve(..., scheduler=/client=)``), how many graphs it
submits (the fused passes), and Parquet data whose chunk sizes Dask does not know.

References: the same solve on the in-memory arrays (the Dask passes must give the same
numbers), and the number of graphs counted by a scheduler function that runs them.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import test_dask  # noqa: E402  (tests/ is on sys.path under pytest)

from optmodels.lad import LAD  # noqa: E402
from solvers.aid.lad import aid_lad  # noqa: E402
from solvers.result import TerminationCondition  # noqa: E402

client = test_dask.client  # the module-scoped LocalCluster fixture: 2 processes, 1 thread each


def _data(n=3000, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X @ rng.standard_normal(p) + rng.laplace(size=n)


def _chunked(X, y, rows=750):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _same(a, b):
    assert a.termination is b.termination is TerminationCondition.CERTIFIED
    assert abs(a.objective - b.objective) <= 1e-12 * b.objective
    assert np.allclose(a.x, b.x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("where", ["synchronous", "threads", "address", "client"])
def test_solve_runs_where_asked_with_the_in_memory_answer(client, where):
    X, y = _data()
    mem = LAD(X, y).solve("aid", n_clusters=60, init="band")
    kw = ({"client": client} if where == "client" else
          {"scheduler": client.scheduler.address if where == "address" else where})
    dsk = LAD(*_chunked(X, y)).solve("aid", n_clusters=60, init="band", **kw)
    _same(dsk, mem)
    assert dsk.extra["run"]["scheduler"] == (kw.get("scheduler") or "client")


def test_scheduler_choice_runs_there(client):
    """The synchronous choice runs every task in this thread, a client's on its workers."""
    import threading

    X, y = _data(n=1200)
    where = []
    Xd = da.from_array(X, chunks=(400, 3)).map_blocks(
        lambda b: where.append(threading.get_ident()) or b, dtype=float)
    LAD(Xd, y).solve("aid", n_clusters=30, scheduler="synchronous")
    assert where and set(where) == {threading.get_ident()}


def test_scheduler_and_client_refused_with_the_accepted_values(client):
    X, y = _data(n=600)
    lazy = LAD(*_chunked(X, y, rows=300))
    with pytest.raises(ValueError, match=r"scheduler must be one of 'threads', 'processes', "
                                         r"'synchronous' or the address.*got 'gpu'"):
        lazy.solve("aid", scheduler="gpu")
    with pytest.raises(ValueError, match="client must be a dask.distributed.Client; got str"):
        lazy.solve("aid", client="tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match="not both"):
        lazy.solve("aid", scheduler="threads", client=client)
    with pytest.raises(ValueError, match="holds its data in memory"):
        LAD(X, y).solve("aid", scheduler="threads")


class _Counter:
    """A scheduler function: counts the graphs and runs them on the synchronous scheduler."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, dsk, keys, **kwargs):
        self.graphs += 1
        return dask.get(dsk, keys, **kwargs)


def test_passes_per_iteration_and_before_the_first(client):
    """Before the first LP: check (with a sample of y), histogram + subsamples + the sample's
    quantile bracket, initial codes (each one graph; the codes' sums are fetched by a fourth,
    which runs nothing). Per iteration: evaluate and split, each one graph plus the fetch of
    its small result."""
    X, y = _data(n=4000)
    mem = aid_lad(X, y, n_clusters=80, init="band")
    c = _Counter()
    marks = []
    with dask.config.set(scheduler=c):
        dsk = aid_lad(*_chunked(X, y, rows=1000), n_clusters=80, init="band",
                      callback=lambda it, h, lab: marks.append(c.graphs))
    _same(dsk, mem)
    assert dsk.iterations >= 3
    assert marks[0] <= 4
    assert np.all(np.diff(marks) == 4)


def test_parquet_with_unknown_chunk_sizes_and_the_cli(client, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    from test_dask_api import _cli_json

    from instances.io import save

    X, y = _data(n=2400)
    s = np.random.default_rng(3).uniform(0.5, 2.0, X.shape[0])
    (tmp_path / "pq").mkdir()
    for i in range(4):
        rows = slice(600 * i, 600 * (i + 1))
        part = pd.DataFrame(X[rows], columns=["a", "b", "c"])
        part["y"], part["sample_weight"] = y[rows], s[rows]
        part.to_parquet(tmp_path / "pq" / f"part-{i}.parquet")
    df = dd.read_parquet(str(tmp_path / "pq"))
    Xd, yd = df[["a", "b", "c"]].to_dask_array(), df["y"].to_dask_array()
    assert np.isnan(Xd.chunks[0][0]) and np.isnan(yd.chunks[0][0])  # sizes unknown to Dask
    mem = LAD(X, y, sample_weight=s).solve("aid", n_clusters=60, init="band")
    lazy = LAD(Xd, yd, sample_weight=df["sample_weight"].to_dask_array()).solve(
        "aid", n_clusters=60, init="band")
    _same(lazy, mem)
    save(tmp_path / "all.npz", X, y, s)
    cmd = ["solve", "lad", "--strategy", "aid", "--param", "n_clusters=60", "--param",
           "init=band", "--json"]
    want = _cli_json([*cmd, "--data", str(tmp_path / "all.npz")], capsys)
    got = _cli_json([*cmd, "--data", str(tmp_path / "pq"), "--scheduler",
                     client.scheduler.address], capsys)
    assert got["certified"] and want["certified"] and list(got["coefficients"]) == ["a", "b", "c"]
    assert np.allclose(list(got["coefficients"].values()), list(want["coefficients"].values()),
                       rtol=1e-12, atol=1e-12)
    assert got["objective"] == pytest.approx(mem.objective, rel=1e-12)
    assert want["objective"] == pytest.approx(mem.objective, rel=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, None])
def test_chunk_statistics_flag_like_the_masks_and_give_the_column_ranges(bad):
    """The check pass reads X once: its NaN / inf flags come from the column ranges."""
    from solvers.dask_rows import _flags, _stats

    Z = np.random.default_rng(3).standard_normal((5000, 5)) * [1, 1e-8, 1e8, 1, 1]
    x, y, s = Z[:, :4], Z[:, 4], np.ones(5000)  # x strided, as a column slice of a chunk
    if bad is not None:
        x[1234, 2] = bad
    st = _stats(x, y, s, 4)
    assert np.array_equal(st["flags"][0], _flags(np.ascontiguousarray(x), 4))
    assert st["flags"][0][:2].tolist() == [int(bad is not None and np.isnan(bad)),
                                           int(bad is not None and np.isinf(bad))]
    if bad is None:
        assert np.array_equal(st["cmin"], x.min(axis=0))
        assert np.array_equal(st["cmax"], x.max(axis=0))
        assert st["yabs"] == np.abs(y).max() and st["sy"] == pytest.approx(np.abs(y).sum())


def test_near_split_of_an_evenly_mixed_cluster_on_dask_equals_in_memory(client):
    """One cluster holding every row is half misfits: "near" splits it 4-way (the coarse
    path), whose per-side means the Dask run gets from a pass of its own."""
    X, y = _data(n=4000)
    labels = np.zeros(4000, dtype=np.int64)
    opts = dict(init=labels, split="near", lp="ipm")
    mem = aid_lad(X, y, **opts)
    dsk = aid_lad(*_chunked(X, y), init=da.from_array(labels, chunks=750), split="near",
                  lp="ipm")
    _same(dsk, mem)
    assert dsk.iterations == mem.iterations >= 2
    assert dsk.extra["history"][1]["clusters"] == mem.extra["history"][1]["clusters"] == 4


def _natural_cases():
    rng = np.random.default_rng(11)
    y = rng.laplace(size=5001) * 3 + 100.0
    yield "odd, unit weights", y, None, 0.5
    yield "even, unit weights", y[:5000], None, 0.5
    yield "weights, tau 0.1", y, rng.uniform(0.1, 5.0, 5001), 0.1
    yield "weights, tau 0.9", y, rng.uniform(0.1, 5.0, 5001), 0.9
    yield "ties", np.round(y), None, 0.5
    yield "sorted rows", np.sort(y), rng.uniform(0.5, 2.0, 5001), 0.3


@pytest.mark.parametrize("case", list(_natural_cases()), ids=lambda c: c[0])
def test_natural_scale_from_the_sample_bracket_is_exact_in_one_pass(client, case):
    """The check pass's evenly spaced sample brackets the quantile; the next pass fetches the
    bracket with the histogram: the natural scale equals the in-memory one, no extra pass."""
    from solvers.aid.lad import lad_natural_scale
    from solvers.dask_rows import DaskLadRows

    _, y, s, tau = case
    X = np.random.default_rng(1).standard_normal((y.shape[0], 2))
    sd = None if s is None else da.from_array(s, chunks=1000)
    rows = DaskLadRows.checked(da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000),
                               sd, True)
    c = _Counter()
    with dask.config.set(scheduler=c):
        got = rows.natural_scale(True, tau)
    want = lad_natural_scale(y, np.ones_like(y) if s is None else s, True, tau)
    assert got == pytest.approx(want, rel=1e-13)
    assert c.graphs == 1


def test_natural_scale_when_the_sample_bracket_misses(client, monkeypatch):
    """A bracket too narrow to hold the quantile is detected; the histogram path answers."""
    import solvers.dask_rows as dr
    from solvers.aid.lad import lad_natural_scale

    y = np.random.default_rng(5).standard_normal(4000)
    rows = dr.DaskLadRows.checked(da.from_array(np.ones((4000, 1)), chunks=(1000, 1)),
                                  da.from_array(y, chunks=1000), None, True)
    med = float(np.median(y))
    monkeypatch.setattr(dr.DaskLadRows, "_sample_bracket",
                        lambda self, st, unit, targets: (med + 0.5, med + 1.0, False))
    c = _Counter()
    with dask.config.set(scheduler=c):
        got = rows.natural_scale(True, 0.5)
    assert got == pytest.approx(lad_natural_scale(y, np.ones(4000), True), rel=1e-13)
    assert c.graphs >= 2


def test_near_split_prefetched_by_the_evaluate_pass(client, monkeypatch):
    """The pk default: the globs' misfits are fetched by the evaluate pass (no split pass),
    with the answer and the clusters of the run that fetches them in a pass of its own."""
    import solvers.aid.lad as lad

    rng = np.random.default_rng(4)
    X = rng.standard_normal((40_000, 3))
    y = X @ rng.standard_normal(3) + rng.laplace(size=40_000)
    s = rng.uniform(0.5, 2.0, 40_000)

    def run():
        c, marks = _Counter(), []
        with dask.config.set(scheduler=c):
            res = aid_lad(*_chunked(X, y, rows=10_000),
                          sample_weight=da.from_array(s, chunks=10_000), quantile=0.3,
                          callback=lambda it, h, lab: marks.append(c.graphs))
        return res, marks

    fused, marks = run()
    monkeypatch.setattr(lad, "near_guess", lambda agg, v: None)
    plain, marks_plain = run()
    assert fused.termination is plain.termination is TerminationCondition.CERTIFIED
    assert fused.objective == plain.objective and np.array_equal(fused.x, plain.x)
    assert [h["clusters"] for h in fused.extra["history"]] == \
        [h["clusters"] for h in plain.extra["history"]]
    assert fused.iterations >= 2
    assert np.diff(marks).tolist() == [2] * (len(marks) - 1)  # evaluate only
    assert np.diff(marks_plain).tolist() == [4] * (len(marks_plain) - 1)  # evaluate, split
    assert np.array_equal(fused.extra["labels"].compute(), plain.extra["labels"].compute())


@pytest.mark.parametrize("quantile", [0.5, 0.3])
def test_pk_band_on_dask_is_the_in_memory_band_in_one_pass(client, quantile):
    """The band's bounds are exact order statistics of the residuals in the fetched bracket,
    so the pk start on Dask has the in-memory clusters; check, histogram, band: three passes
    (and a fetch) before the first LP."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((60_000, 3))
    y = X @ rng.standard_normal(3) + rng.laplace(size=60_000)
    mem = aid_lad(X, y, quantile=quantile)
    c, marks = _Counter(), []
    with dask.config.set(scheduler=c):
        dsk = aid_lad(*_chunked(X, y, rows=10_000), quantile=quantile,
                      callback=lambda it, h, lab: marks.append(c.graphs))
    assert [h["clusters"] for h in dsk.extra["history"]] == \
        [h["clusters"] for h in mem.extra["history"]]
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED, (
        dsk.raw_status, mem.raw_status)
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective
    assert marks[0] <= 4  # before: also the band-bounds histogram and the quantile bracket


def test_pk_bracket_that_misses_the_band_still_certifies(client, monkeypatch):
    """A bracket narrower than the band clamps the band to it (any partition is valid)."""
    from solvers.dask_rows import DaskLadRows

    rng = np.random.default_rng(10)
    X = rng.standard_normal((30_000, 3))
    y = X @ rng.standard_normal(3) + rng.laplace(size=30_000)
    mem = aid_lad(X, y)
    monkeypatch.setattr(DaskLadRows, "_pk_bracket", lambda self, r, q, band: (-0.01, 0.02))
    dsk = aid_lad(*_chunked(X, y, rows=10_000))
    assert dsk.termination is TerminationCondition.CERTIFIED, dsk.raw_status
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective
    assert dsk.extra["history"][0]["clusters"] < mem.extra["history"][0]["clusters"]


_LOADS: list[tuple[int, int]] = []
_COUNTER = _Counter()


def _load_chunk(Z: np.ndarray, i: int) -> np.ndarray:
    _LOADS.append((_COUNTER.graphs, i))  # (the graph running, the block)
    return Z


def test_x_and_y_sliced_from_one_chunk_share_its_load_in_every_pass():
    """X = Z[:, :p] and y = Z[:, p] of one lazily loaded block: a graph (a pass) loads each
    block once, not once for X and once for y; the answer is the in-memory one."""
    X, y = _data(n=4000)
    Z = np.column_stack([X, y])
    parts = [da.from_delayed(dask.delayed(_load_chunk, pure=False)(Z[i:i + 1000], i),
                             (1000, Z.shape[1]), dtype=float) for i in range(0, 4000, 1000)]
    lazy = da.concatenate(parts)
    _LOADS.clear()
    with dask.config.set(scheduler=_COUNTER):
        res = aid_lad(lazy[:, :3], lazy[:, 3])
        _same(res, aid_lad(X, y))
        assert len(_LOADS) >= 5 * 4 and len(set(_LOADS)) == len(_LOADS)
        _LOADS.clear()  # the reference: X's and y's blocks computed apart load a block twice
        dask.compute([d for pair in zip(lazy[:, :3].to_delayed().ravel(),
                                        lazy[:, 3].to_delayed().ravel(), strict=True)
                      for d in pair])
    assert len(_LOADS) == 8 and len(set(_LOADS)) == 4
