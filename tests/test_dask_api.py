"""Dask arrays through the public API: the LAD and Ridge problems, the linear estimators and
the CLI (lazy .npy chunks / Parquet, --workers, --scheduler), on a two-process LocalCluster.

References are the same calls on the in-memory arrays and, independently, the full LP (HiGHS)
for LAD and the dense normal-equation solve for ridge.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import test_dask  # noqa: E402  (tests/ is on sys.path under pytest)

from optmodels.cli import main  # noqa: E402
from optmodels.estimators import LADRegressor, RidgeRegressor  # noqa: E402
from optmodels.lad import LAD  # noqa: E402
from optmodels.ridge import Ridge  # noqa: E402
from solvers.errors import DataError  # noqa: E402
from solvers.result import TerminationCondition  # noqa: E402

client = test_dask.client  # the module-scoped LocalCluster fixture: 2 processes, 1 thread each
_with_nan = test_dask._with_nan


def _lad_data(n=3000, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X @ rng.standard_normal(p) + rng.laplace(size=n)


def _ridge_data(n=3000, d=30, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) * np.linspace(2.0, 0.2, d) + 0.5
    return A, A @ rng.standard_normal(d) + 3.0 + rng.standard_normal(n), rng.uniform(0.2, 2, n)


def _chunked(X, y, rows=750):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def test_lad_aid_on_dask_is_the_in_memory_certified_optimum(client):
    X, y = _lad_data()
    mem = LAD(X, y).solve("aid", n_clusters=80, init="band")
    dsk = LAD(*_chunked(X, y)).solve("aid", n_clusters=80, init="band")
    full = LAD(X, y).solve("full")
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective
    assert np.allclose(dsk.x, mem.x, rtol=1e-12, atol=1e-12)
    assert abs(dsk.objective - full.objective) <= 1e-7 * full.objective
    assert LAD(*_chunked(X, y)).natural_scale() == pytest.approx(
        LAD(X, y).natural_scale(), rel=1e-13)


def test_weighted_quantile_lad_on_dask_with_zero_weights(client):
    X, y = _lad_data(seed=2)
    s = np.random.default_rng(3).uniform(0, 2, X.shape[0])
    s[::7] = 0.0
    kw = dict(sample_weight=s, quantile=0.7)
    mem = LAD(X, y, **kw).solve("aid", n_clusters=60, init="quantile")
    Xd, yd = _chunked(X, y)
    dsk = LAD(Xd, yd, sample_weight=da.from_array(s, chunks=750), quantile=0.7).solve(
        "aid", n_clusters=60, init="quantile")
    assert dsk.is_optimal and mem.is_optimal
    assert abs(dsk.objective - mem.objective) <= 1e-12 * mem.objective


@pytest.mark.parametrize("weighted", [False, True])
def test_ridge_pcg_rfd_on_dask_equals_in_memory(client, weighted):
    A, b, s = _ridge_data()
    sw = s if weighted else None
    kw = dict(alpha=20.0, fit_intercept=True)
    opts = dict(m=25, tol=1e-12, max_iter=80)
    mem = Ridge(A, b, sample_weight=sw, **kw).solve("pcg-rfd", **opts)
    Ad, bd = _chunked(A, b, rows=1500)
    dsk = Ridge(Ad, bd, sample_weight=None if sw is None else da.from_array(sw, chunks=500),
                **kw).solve("pcg-rfd", **opts)
    w = np.ones_like(b) if sw is None else sw  # the dense reference: centred normal equations
    Ac, bc = A - w @ A / w.sum(), b - w @ b / w.sum()
    x_ref = np.linalg.solve(Ac.T @ (w[:, None] * Ac) + 20.0 * np.eye(A.shape[1]), Ac.T @ (w * bc))
    assert dsk.termination is mem.termination is TerminationCondition.OPTIMAL
    assert np.linalg.norm(dsk.x - mem.x) <= 1e-10 * np.linalg.norm(mem.x)
    assert np.linalg.norm(dsk.x - x_ref) <= 1e-10 * np.linalg.norm(x_ref)
    assert abs(dsk.extra["intercept"] - mem.extra["intercept"]) <= 1e-10 * abs(
        mem.extra["intercept"])
    assert abs(dsk.objective - mem.objective) <= 1e-10 * mem.objective


def test_in_memory_only_methods_refused_on_dask_with_the_size(client, tmp_path):
    X, y = _lad_data(n=1000)
    lad = LAD(*_chunked(X, y, rows=250))
    with pytest.raises(ValueError, match=r"The full solve needs X in memory \(n x p = 1000 x 3,"
                                         r" 0.0 MB.*strategy='aid'.*X.compute\(\)"):
        lad.solve()
    for call, what in ((lad.qp, "qp()"), (lad.pyomo_model, "pyomo_model()"),
                       (lambda: lad.write(str(tmp_path / "m.lp")), "write()"),
                       (lad.solve_full, "The full solve")):
        with pytest.raises(ValueError, match=rf"^{what.replace('(', '[(]').replace(')', '[)]')}"):
            call()
    assert not (tmp_path / "m.lp").exists()
    A, b, _ = _ridge_data(n=500)
    with pytest.raises(ValueError, match="needs X in memory.*strategy='pcg-rfd' or"):
        Ridge(*_chunked(A, b, rows=250)).solve("full")


def test_nan_in_one_chunk_refused_at_construction_like_in_memory(client):
    X, y = _lad_data(n=2000)
    Xn = _with_nan(X, 1300)
    for cls, name in ((LAD, "X"), (Ridge, "A")):
        with pytest.raises(DataError) as mem:
            cls(Xn, y)
        with pytest.raises(DataError, match="row chunk 2") as dsk:
            cls(*_chunked(Xn, y, rows=500))
        assert str(mem.value).startswith(f"Input {name!r} contains NaN")
        assert str(dsk.value).startswith(str(mem.value).rstrip("."))
    yn = y.copy()
    yn[10] = np.inf
    with pytest.raises(DataError, match="'y' contains infinity.*row chunk 0"):
        LAD(*_chunked(X, yn, rows=500))
    with pytest.raises(DataError, match="'sample_weight' has negative entries"):
        Ridge(*_chunked(X, y, rows=500), sample_weight=da.full(2000, -1.0, chunks=500))


def test_estimators_fit_on_dask_equal_in_memory(client):
    X, y = _lad_data()
    Xd, yd = _chunked(X, y)
    for est, opts in ((LADRegressor(strategy="aid"), {"n_clusters": 80, "init": "band"}),
                      (RidgeRegressor(alpha=5.0, strategy="pcg-rfd"),
                       {"m": 3, "tol": 1e-12, "max_iter": 50})):
        mem = est.set_params(strategy_options=opts).fit(X, y)
        coef, icpt, pred = mem.coef_.copy(), mem.intercept_, mem.predict(X)
        dsk = est.fit(Xd, yd)
        assert dsk.result_.is_optimal and dsk.n_features_in_ == 3
        assert np.allclose(dsk.coef_, coef, rtol=1e-10, atol=1e-12)
        assert abs(dsk.intercept_ - icpt) <= 1e-10 * max(1.0, abs(icpt))
        lazy = dsk.predict(Xd)
        assert type(lazy).__module__.startswith("dask")
        assert np.allclose(lazy.compute(), pred, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="needs X in memory"):
        LADRegressor(strategy="full").fit(Xd, yd)
    auto = LADRegressor().fit(Xd, yd)  # the default 'auto' is AID on Dask data
    ref = LADRegressor(strategy="full").fit(X, y)
    assert auto.strategy_ == "aid" and auto.result_.certified
    assert abs(auto.result_.objective - ref.result_.objective) <= 1e-6 * ref.result_.objective


def _cli_json(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def _same_fit(a, b, rel):
    assert a["certified"] and b["certified"]
    assert abs(a["objective"] - b["objective"]) <= rel * abs(b["objective"])
    for k, v in b["coefficients"].items():
        assert abs(a["coefficients"][k] - v) <= rel * max(1.0, abs(v))


def _npy_chunks(tmp_path):
    """2400 rows as all.npz and as three .npy chunks [X | y]; (npz path, glob)."""
    from instances.io import save

    X, y = _lad_data(n=2400)
    save(tmp_path / "all.npz", X, y)
    (tmp_path / "chunks").mkdir()
    for i in range(3):
        np.save(tmp_path / "chunks" / f"part-{i}.npy",
                np.column_stack([X[800 * i:800 * (i + 1)], y[800 * i:800 * (i + 1)]]))
    return str(tmp_path / "all.npz"), str(tmp_path / "chunks" / "*.npy")


CLI_AID = ["solve", "lad", "--strategy", "aid", "--param", "init=band", "--json"]


def test_cli_npy_chunks_on_a_scheduler_equal_in_memory(client, tmp_path, capsys):
    npz, glob = _npy_chunks(tmp_path)
    mem = _cli_json([*CLI_AID, "--data", npz], capsys)
    lazy = _cli_json([*CLI_AID, "--data", glob, "--scheduler", client.scheduler.address],
                     capsys)
    assert lazy["n"] == 2400 and lazy["p"] == 3
    _same_fit(lazy, mem, 1e-12)


@pytest.mark.slow
def test_cli_workers_starts_and_stops_a_local_cluster(client, tmp_path, capsys):
    npz, glob = _npy_chunks(tmp_path)
    mem = _cli_json([*CLI_AID, "--data", npz], capsys)
    _same_fit(_cli_json([*CLI_AID, "--data", glob, "--workers", "2"], capsys), mem, 1e-12)
    assert distributed.default_client() is client  # the command's own client is gone


def test_cli_parquet_directory_and_refusals(client, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from instances.io import save

    A, b, _ = _ridge_data(n=1200, d=4)
    save(tmp_path / "all.csv", A, b, feature_names=["a", "b", "c", "d"])
    (tmp_path / "pq").mkdir()
    for i in range(2):
        part = pd.DataFrame(A[600 * i:600 * (i + 1)], columns=["a", "b", "c", "d"])
        part["target"] = b[600 * i:600 * (i + 1)]
        part.to_parquet(tmp_path / "pq" / f"part-{i}.parquet")
    base = ["solve", "ridge", "--strategy", "pcg-rfd", "--param", "m=2", "--param", "tol=1e-12",
            "--param", "fit_intercept=true", "--json"]
    mem = _cli_json([*base, "--data", str(tmp_path / "all.csv")], capsys)
    lazy = _cli_json([*base, "--data", str(tmp_path / "pq"), "--target", "target"], capsys)
    _same_fit(lazy, mem, 1e-10)
    assert list(lazy["coefficients"]) == ["a", "b", "c", "d"]
    for argv, msg in (
        (["solve", "ridge", "--strategy", "pcg-rfd", "--data", str(tmp_path / "pq")],
         "no target column 'y'"),
        (["solve", "klr", "--data", str(tmp_path / "pq")], "supported for lad, ridge and svm"),
        (["solve", "lad", "--strategy", "aid", "--data", str(tmp_path / "none*.npy")],
         "no file matches"),
        (["solve", "lad", "--data", str(tmp_path / "all.csv"), "--workers", "0"],
         "--workers must be a positive"),
    ):
        assert main(argv) == 2
        assert msg in capsys.readouterr().err


def test_cli_csv_glob_is_read_lazily_and_equals_the_in_memory_file(client, tmp_path, capsys):
    """A glob of CSV files (dask.dataframe.read_csv): weighted LAD by AID on the cluster, the
    in-memory optimum of the same rows in one file; a missing target and a broken row are
    refused with the file and the fix, exit 2."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2400, 3))
    frame = pd.DataFrame(X, columns=["u", "v", "w"])
    frame["delay"] = X @ [1.0, -2.0, 0.5] + rng.laplace(size=2400)
    frame["sample_weight"] = rng.uniform(0.5, 2.0, 2400)
    frame.to_csv(tmp_path / "all.csv", index=False)
    (tmp_path / "parts").mkdir()
    for i in range(3):
        frame.iloc[800 * i:800 * (i + 1)].to_csv(tmp_path / "parts" / f"p{i}.csv", index=False)
    base = [*CLI_AID, "--target", "delay"]
    mem = _cli_json([*base, "--data", str(tmp_path / "all.csv")], capsys)
    lazy = _cli_json([*base, "--data", str(tmp_path / "parts" / "*.csv"), "--scheduler",
                      client.scheduler.address], capsys)
    assert lazy["n"] == 2400 and list(lazy["coefficients"])[:3] == ["u", "v", "w"]
    _same_fit(lazy, mem, 1e-12)
    assert main(["solve", "lad", "--strategy", "aid", "--data",
                 str(tmp_path / "parts" / "*.csv")]) == 2
    assert "no target column 'y'" in capsys.readouterr().err
    with open(tmp_path / "parts" / "p1.csv", "a") as fh:
        fh.write("1.0,oops,2.0,3.0,1.0\n")
    assert main([*base, "--data", str(tmp_path / "parts" / "*.csv")]) == 2
    err = capsys.readouterr().err
    assert "parts" in err and err.count("\n") == 1
