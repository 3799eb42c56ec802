"""The convergence figure: panels, series, styles and scales (matplotlib Figure objects)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from optmodels.compare import Comparison
from optmodels.plots import FLOOR, convergence_figure, panel_lines
from solvers.result import SolutionStatus, SolveResult, TerminationCondition

pytest.importorskip("matplotlib")

F_STAR = 58_444.1  # a LAD-sized optimum: raw bounds would need offset notation


def _res(strategy: str, history: list[dict], objective: float, time: float) -> SolveResult:
    return SolveResult(
        TerminationCondition.OPTIMAL,
        SolutionStatus.OPTIMAL,
        objective=objective,
        strategy=strategy,
        wall_time=time,
        extra={"history": history},
    )


def _comparison(strategies: dict[str, SolveResult]) -> Comparison:
    ref = strategies["full"].objective
    records = [
        {"strategy": s, "ref_gap": (r.objective - ref) / max(1.0, abs(ref)),
         "objective": r.objective, "time_s": r.time}
        for s, r in strategies.items()
    ]
    return Comparison("lad", "full", records, strategies)


def _aid_like() -> Comparison:
    e_best = [F_STAR * (1 + 1e-3), F_STAR * (1 + 1e-7), F_STAR]
    f_low = [F_STAR * (1 - 1e-2), F_STAR * (1 - 1e-6), F_STAR]
    hist = [
        {"iteration": i + 1, "F": f, "E_best": e, "gap": (e - f) / F_STAR, "time": 0.1 * (i + 1)}
        for i, (f, e) in enumerate(zip(f_low, e_best, strict=True))
    ]
    smo = [{"iteration": 10 * i, "violation": 10.0 ** -i} for i in range(5)]
    return _comparison(
        {
            "full": _res("full", [], F_STAR, 0.5),
            "aid": _res("aid", hist, F_STAR, 0.35),
            "smo": _res("smo", smo, F_STAR * (1 + 2e-9), 0.2),
        }
    )


def test_panels_and_lines_of_an_aid_and_smo_comparison():
    fig = convergence_figure(_aid_like())
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 4  # gap, bounds, violation, wall-clock
    assert "optimality gap" in titles[0] and "bounds relative" in titles[1]
    assert "SMO" in titles[2] and "against time" in titles[3]
    assert [len(ax.get_lines()) for ax in fig.axes] == [1, 2, 1, 4]  # wall-clock: aid curve +
    # final markers of full, aid, smo
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    assert "KKT violation" in fig.axes[2].get_ylabel() and "m over" not in fig.axes[2].get_ylabel()
    assert fig.axes[3].get_xlabel() == "wall-clock seconds"


def test_bounds_are_relative_gaps_to_the_reference_optimum():
    lines = {label: y for label, _, y, _ in panel_lines(_aid_like())["bounds"]}
    np.testing.assert_allclose(lines["aid: E_best (upper)"], [1e-3, 1e-7, 0.0], rtol=1e-6, atol=0)
    np.testing.assert_allclose(lines["aid: F (lower)"], [1e-2, 1e-6, 0.0], rtol=1e-6, atol=0)
    fig = convergence_figure(_aid_like())
    drawn = fig.axes[1].get_lines()[0].get_ydata()
    assert drawn[-1] == FLOOR  # an exact zero is drawn at the floor of the log axis
    for ax in fig.axes:
        fig.canvas.draw()
        assert ax.yaxis.get_offset_text().get_text() == ""
        assert ax.xaxis.get_offset_text().get_text() == ""


def test_wall_clock_panel_uses_history_times_and_final_ref_gaps():
    lines = {label: (x, y) for label, x, y, _ in panel_lines(_aid_like())["wall-clock"]}
    assert set(lines) == {"full", "aid", "aid: final", "smo"}
    np.testing.assert_allclose(lines["aid"][0], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(lines["aid"][1], [1e-3, 1e-7, 0.0], rtol=1e-6, atol=0)
    assert lines["smo"][0][0] == 0.2 and lines["smo"][1][0] == pytest.approx(2e-9, rel=1e-6)


def test_every_strategy_has_its_own_marker_and_line_style():
    names = ["full", "fd", "rfd", "pcg-fd", "pcg-rfd", "ihs-gaussian", "ihs-sjlt"]
    res = {"full": _res("full", [], 1.0, 0.1)}
    for k, s in enumerate(names[1:]):
        hist = [{"iteration": i, "rel_error": 10.0 ** -(i + k % 2)} for i in range(1, 5)]
        res[s] = _res(s, hist, 1.0, 0.2)
    fig = convergence_figure(_comparison(res))
    ax = fig.axes[0]
    assert "relative error" in ax.get_title() and len(ax.get_lines()) == 6
    styles = {(ln.get_marker(), str(ln.get_linestyle())) for ln in ax.get_lines()}
    markers = {ln.get_marker() for ln in ax.get_lines()}
    assert len(styles) == 6 and len(markers) == 6  # pcg-fd / pcg-rfd, ihs-* no longer coincide
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == names[1:]


def test_one_iteration_gets_integer_ticks_either_side():
    hist = [{"iteration": 1, "gap": 4e-14}]
    fig = convergence_figure(_comparison({"full": _res("full", [], 1.0, 0.1),
                                          "aid": _res("aid", hist, 1.0, 0.1)}))
    assert fig.axes[0].get_xlim() == (0.0, 2.0)


def test_plot_without_matplotlib_names_the_install_command(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    with pytest.raises(ModuleNotFoundError, match=r'pip install "optmodels\[plot\]"'):
        _aid_like().plot(str(tmp_path / "f.png"))
    assert not list(tmp_path.iterdir())


def test_panels_can_be_selected_and_unknown_ones_are_named():
    fig = convergence_figure(_aid_like(), panels=["wall-clock"])
    assert len(fig.axes) == 1 and "against time" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="panels must be among gap, bounds"):
        convergence_figure(_aid_like(), panels=["bogus"])
