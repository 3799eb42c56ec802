"""The comparison's numbers and plots (issue 6 checks)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from instances import make_lad
from optmodels import LAD, Ridge, compare
from optmodels.compare import relative_difference, solution_distance
from optmodels.memory import PeakRSS
from optmodels.plots import series


def test_relative_difference_and_distance_known_values():
    assert relative_difference(105.0, 100.0) == pytest.approx(0.05)
    assert relative_difference(0.5, 0.25) == pytest.approx(1.0)  # relative to |ref| below 1 too
    assert relative_difference(0.5e-10, 0.25e-10) == pytest.approx(1.0)  # scale invariant
    assert relative_difference(105.0, 100.0, scale=1000.0) == pytest.approx(0.005)
    assert relative_difference(float("nan"), 1.0) is None
    assert solution_distance(np.array([3.0, 4.0]), np.array([0.0, 0.0])) == pytest.approx(5.0)
    assert solution_distance(np.array([1.0, 1.0]), np.array([2.0, 0.0])) == pytest.approx(
        np.sqrt(2) / 2
    )
    assert solution_distance(np.ones(2), np.ones(3)) is None


def test_ridge_comparison_numbers_match_a_direct_computation():
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(400, 30)), rng.normal(size=400)
    p = Ridge(A, b, alpha=5.0)
    table = compare(p, ["full", "fdrr"], options={"fdrr": {"m": 8}}, progress=False)
    x_star = p.closed_form()
    x_hat = table.results["fdrr"].x
    rec = {r["strategy"]: r for r in table.records}
    assert rec["full"]["ref_gap"] == 0.0 and rec["full"]["distance"] == 0.0
    assert rec["fdrr"]["distance"] == pytest.approx(
        np.linalg.norm(x_hat - x_star) / np.linalg.norm(x_star), rel=1e-12
    )
    f_star, f_hat = p.objective(x_star), p.objective(x_hat)
    scale = 0.5 * float(b @ b)  # the natural scale f(0) of ridge without intercept
    assert rec["fdrr"]["ref_gap"] == pytest.approx((f_hat - f_star) / scale, rel=1e-9)
    assert rec["fdrr"]["ref_gap"] > 0  # a sketched one-shot solution is not optimal here
    # the speed-up divides the median call times (one warm-up call, then one timed run)
    assert rec["fdrr"]["speedup"] == pytest.approx(rec["full"]["time_s"] / rec["fdrr"]["time_s"])
    assert rec["fdrr"]["runs"] == 1 and rec["fdrr"]["first_s"] > 0
    frame = table.to_frame()
    assert list(frame.index) == ["full", "fdrr"]


def test_lad_aid_row_is_certified_and_equal():
    X, y, _, _ = make_lad(n=3000, p=4, seed=5)
    table = compare(LAD(X, y), ["full", "aid"], progress=False)
    aid = table.records[1]
    assert aid["certified"] and aid["termination"] == "certified"
    assert abs(aid["ref_gap"]) <= 1e-9 and aid["n_clusters_final"] >= 1


def test_progress_lines_can_be_silenced(capsys):
    X, y, _, _ = make_lad(n=200, p=2, seed=0)
    compare(LAD(X, y), ["full"], progress=True)
    err = capsys.readouterr().err
    assert "lad: full (warm-up) ..." in err and "lad: full (run 1/1) ..." in err
    compare(LAD(X, y), ["full"], progress=False)
    assert capsys.readouterr().err == ""


def test_plot_file_and_series(tmp_path):
    rng = np.random.default_rng(1)
    A, b = rng.normal(size=(300, 20)), rng.normal(size=300)
    strategies = ["full", "rfd", "pcg-rfd", "fdrr"]
    table = compare(
        Ridge(A, b, alpha=10.0),
        strategies,
        options={s: {"m": 8} for s in strategies[1:]},
        progress=False,
    )
    data = series(table)
    # iterative strategies record a history per iteration, a one-shot solve a single point,
    # the full solve none
    assert set(data["rel_error"]) == {"rfd", "pcg-rfd", "fdrr"}
    assert len(data["rel_error"]["fdrr"][0]) == 1
    assert all(len(data["rel_error"][s][0]) > 1 for s in ("rfd", "pcg-rfd"))
    path = table.plot(str(tmp_path / "conv.png"))
    png = (tmp_path / "conv.png").read_bytes()
    assert path.endswith("conv.png") and png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_plot_without_histories_says_what_to_do(tmp_path):
    X, y, _, _ = make_lad(n=100, p=2, seed=0)
    table = compare(LAD(X, y), ["full"], progress=False)
    with pytest.raises(ValueError, match="add an iterative strategy"):
        table.plot(str(tmp_path / "x.png"))
    assert not list(tmp_path.iterdir())


def test_cli_plot(tmp_path):
    from optmodels.cli import main

    out = tmp_path / "aid.png"
    assert (
        main(["compare", "lad", "--generate", "n=2000,p=3,seed=0", "--plot", str(out), "--quiet"])
        == 0
    )
    assert out.stat().st_size > 10_000


def test_smo_violation_history_is_plotted(tmp_path):
    from instances import make_classification
    from optmodels import SVM

    X, y = make_classification(n=300, p=2, separation=2.0, seed=0)
    table = compare(
        SVM(X, y, kernel="rbf", gamma=0.5),
        ["full", "smo"],
        options={"smo": {"tol": 1e-6}},
        progress=False,
    )
    its, viol = series(table)["violation"]["smo"]
    assert np.all(np.diff(its) > 0) and its[-1] == table.results["smo"].iterations
    assert viol[-1] <= 1e-6 < viol[0]
    assert table.plot(str(tmp_path / "smo.png"))


def test_klr_rows_report_sparsity_and_accuracy_alike():
    from instances import make_classification
    from optmodels import KLR

    X, y = make_classification(n=150, p=2, separation=3.0, seed=2)
    w = np.ones(150)
    w[:5] = 0.0  # zero-weight rows are dropped by the problem; SMO must be mapped onto the rest
    p = KLR(X, y, sample_weight=w, C=5.0, gamma=0.5, lam=10.0, bound_tol=1e-7)
    table = compare(p, ["full", "smo"], progress=False)
    full, smo = table.records
    assert full["n_active"] == smo["n_active"] and 0 < full["active_share"] <= 1
    assert (
        full["train_accuracy"] == pytest.approx(smo["train_accuracy"])
        and smo["train_accuracy"] > 0.8
    )
    assert abs(smo["ref_gap"]) < 1e-6


def test_peak_rss_sees_a_large_allocation():
    with PeakRSS() as m:
        a = np.ones(50 * 2**20 // 8)  # 50 MiB, touched
        a.sum()
        time.sleep(20 * m.interval)  # held for 20 samples: on a busy machine the sampling
        del a  # thread may not run while the allocation lives for a few milliseconds only
    assert m.peak_mb is not None and 40 <= m.peak_mb <= 200


def _table_of(records):
    from optmodels.compare import Comparison

    return Comparison("svm", "full", records, {})


def test_table_cells_have_units_and_sensible_precision():
    aid = {
        "strategy": "aid", "solver": "highs", "termination": "certified", "certified": True,
        "objective": 58444.123456, "gap": -1.24494e-16, "ref_gap": 3.2e-7, "distance": None,
        "iterations": 3, "time_s": 2.934, "speedup": 5.614, "peak_mb": 12.345, "n_sv": 2394.0,
    }
    full = {**aid, "strategy": "full", "termination": "optimal", "certified": False,
            "time_s": 0.398913, "speedup": 1.0, "ref_gap": 0.0, "iterations": 12}
    del full["n_sv"]
    frame = _table_of([full, aid]).to_frame(formatted=True)
    row = frame.loc["aid"]
    assert row["time"] == "2.93 s" and frame.loc["full", "time"] == "399 ms"
    assert row["speedup"] == "5.6x" and row["n_sv"] == "2394" and frame.loc["full", "n_sv"] == "-"
    assert row["gap"] == "0" and row["ref_gap"] == "3.2e-07" and row["distance"] == "-"
    assert row["certified"] == "yes" and frame.loc["full", "certified"] == "no"
    assert row["objective"] == "58444.1" and row["peak_mem"] == "12.3 MB"
    assert row["iterations"] == "3"
    text = _table_of([full, aid]).to_text().splitlines()
    assert text[0] == "svm: reference = full"
    assert text[1].split() == ["strategy", *frame.columns]
    assert text[3].split() == ["aid", "highs", "certified", "yes", "58444.1", "0", "3.2e-07",
                               "-", "3", "2.93", "s", "5.6x", "-", "12.3", "MB", "2394"]
    assert len({len(line) for line in text[1:]}) == 1  # fixed width: numbers right-aligned


def test_numeric_frame_keeps_the_numbers():
    rec = {"strategy": "full", "time_s": 0.398913, "speedup": 1.0, "gap": -1.2e-16}
    frame = _table_of([rec]).to_frame()
    assert frame.loc["full", "time_s"] == 0.398913 and frame.loc["full", "gap"] == -1.2e-16
