"""Convergence plots of a comparison: one panel per quantity, one line per strategy.

Strategies record ``extra["history"]`` as a list of per-iteration dicts. The panels drawn, when
some strategy records their quantity, are:

- ``gap``: the strategy's relative optimality gap (AID: (E_best - F) / scale);
- ``bounds``: AID's lower bound F and upper bound E_best as relative distances to the reference
  optimum f*: |f* - F| / scale and |E_best - f*| / scale (scale: the problem's natural scale);
- ``rel_error``: ||x_t - x*|| / ||x*|| of the sketched ridge solvers;
- ``grad_norm``: their relative gradient norm;
- ``violation``: SMO's KKT violation, max over I_up minus min over I_low of y_i grad_i;
- ``objective``: |f(x_t) - f*| / scale per iteration;
- ``wall-clock``: every strategy of the comparison against seconds: the relative objective
  difference to f* along its history where the history has times, and its final result
  (|ref_gap| at the whole call's wall-clock time) as a large marker.

All these quantities are nonnegative relative distances that shrink by decades, so every y axis
is logarithmic; values at or below 1e-16 (exact zeros included) are drawn at 1e-16. The seconds
axis is logarithmic when its values span more than two decades. Axes never use offset notation.
Each strategy keeps one colour, marker and line style in every panel.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

FLOOR = 1e-16
"""Relative distances at or below FLOOR are drawn at FLOOR (a log axis cannot show 0)."""

QUANTITIES = ("gap", "F", "E_best", "rel_error", "grad_norm", "violation", "objective")
"""The history keys :func:`series` collects."""

PANELS: list[tuple[str, str, str]] = [
    ("gap", "relative optimality gap of the strategy", "(upper - lower bound) / scale"),
    ("bounds", "bounds relative to the reference optimum f*", "|bound - f*| / natural scale"),
    ("rel_error", "relative error to the exact solution", "||x_t - x*|| / ||x*||"),
    ("grad_norm", "relative gradient norm", "relative ||grad f(x_t)||"),
    ("violation", "SMO KKT violation (stops at tol, or for KLR on the gap)",
     "KKT violation\n(max over I_up − min over I_low)"),
    ("objective", "objective relative to the reference optimum", "|f(x_t) - f*| / natural scale"),
    ("wall-clock", "relative objective difference against time", "|f - f*| / natural scale"),
]
"""(panel key, title, y label) in drawing order."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d")
"""13 markers against 10 colours: (colour, marker) differs for any two of the first 130
strategy names."""
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))


def require_matplotlib(feature: str = "plotting") -> None:
    """Raise ModuleNotFoundError with the install command unless matplotlib is importable."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ModuleNotFoundError(
            f"{feature} needs matplotlib, which is optional: install it with "
            'pip install "optmodels[plot]"',
            name="matplotlib",
        )


def series(comparison: Any) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """{history key: {strategy: (iterations, values)}} for every history in the comparison
    (keys of :data:`QUANTITIES`, values as recorded, non-finite entries dropped)."""
    out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for name, history in histories(comparison).items():
        for key in QUANTITIES:
            pts = [
                (h.get("iteration", i), h[key])
                for i, h in enumerate(history)
                if h.get(key) is not None and np.isfinite(h[key])
            ]
            if pts:
                it, val = map(np.asarray, zip(*pts, strict=True))
                out.setdefault(key, {})[name] = (it, val)
    return out


def histories(comparison: Any) -> dict[str, list[dict[str, Any]]]:
    """Each strategy's history: the comparison's (a loaded result file has only those), else
    its results' ``extra["history"]``."""
    if getattr(comparison, "histories", None):
        return comparison.histories
    return {name: res.extra.get("history") or [] for name, res in comparison.results.items()}


def strategy_order() -> list[str]:
    """Every registered strategy name of every problem, ``full`` first then sorted: the index
    of a name here is its style, the same in every figure of every comparison."""
    from optmodels.strategies import strategies_for

    names = sorted({s for p in ("lad", "svm", "klr", "ridge") for s in strategies_for(p)})
    return ["full", *[n for n in names if n != "full"]]


def styles(comparison: Any) -> dict[str, dict[str, Any]]:
    """One (colour, marker, line style) per strategy, fixed by its name
    (:func:`strategy_order`), so a strategy looks the same in every figure."""
    order = strategy_order()
    out = {}
    for name in histories(comparison) or [r["strategy"] for r in comparison.records]:
        i = order.index(name) if name in order else len(order) + len(out)
        out[name] = {"color": f"C{i % 10}", "marker": MARKERS[i % len(MARKERS)],
                     "linestyle": LINESTYLES[i % len(LINESTYLES)]}
    return out


Line = tuple[str, np.ndarray, np.ndarray, dict[str, Any]]
"""(label, x, y, matplotlib keyword arguments) of one drawn series."""


def panel_lines(comparison: Any) -> dict[str, list[Line]]:
    """{panel key: its lines} for the panels that have data (see the module docstring)."""
    data, sty = series(comparison), styles(comparison)
    f_ref = next(r["objective"] for r in comparison.records
                 if r["strategy"] == comparison.reference)
    f_ref = np.nan if f_ref is None else float(f_ref)
    scale = getattr(comparison, "scale", None) or (
        abs(f_ref) if np.isfinite(f_ref) and f_ref != 0 else 1.0
    )
    out: dict[str, list[Line]] = {}
    for key in ("gap", "rel_error", "grad_norm", "violation"):
        for name, (it, val) in data.get(key, {}).items():
            out.setdefault(key, []).append((name, it, val, sty[name]))
    for name, (it, val) in data.get("E_best", {}).items():
        out.setdefault("bounds", []).append(
            (f"{name}: E_best (upper)", it, np.abs(val - f_ref) / scale, sty[name])
        )
    for name, (it, val) in data.get("F", {}).items():
        hollow = {**sty[name], "linestyle": ":", "markerfacecolor": "none"}
        lower = (f"{name}: F (lower)", it, np.abs(f_ref - val) / scale, hollow)
        out.setdefault("bounds", []).append(lower)
    for name, (it, val) in data.get("objective", {}).items():
        out.setdefault("objective", []).append((name, it, np.abs(val - f_ref) / scale, sty[name]))
    out["wall-clock"] = _wall_clock_lines(comparison, sty, f_ref, scale)
    return out


def _wall_clock_lines(comparison: Any, sty: dict[str, dict[str, Any]], f_ref: float,
                      scale: float) -> list[Line]:
    """Per strategy: its history's |f_t - f*| / scale against the history's own seconds (AID's
    E_best, the sketches' and KLR SMO's objective, SVM SMO's dual bound), and its final
    |ref_gap| as a large hollow marker where its curve ends (the history's last time; the
    table's median call time for a strategy without a timed history). The call's time
    includes the problem layer's certificate after the last iteration, so the marker at the
    curve's end is where the strategy stopped, not where the call returned."""
    lines: list[Line] = []
    rec = {r["strategy"]: r for r in comparison.records}
    for name, history in histories(comparison).items():
        pts = [(h["time"], _value(h)) for h in history
               if h.get("time") is not None and _value(h) is not None]
        if pts:
            t, f = map(np.asarray, zip(*pts, strict=True))
            lines.append((name, t, np.abs(f - f_ref) / scale, sty[name]))
        final = rec.get(name, {}).get("ref_gap")
        at = float(t[-1]) if pts else rec.get(name, {}).get("time_s")
        if final is not None and at is not None and at > 0:
            end = {**sty[name], "linestyle": "none", "markersize": 10, "markerfacecolor": "none",
                   "markeredgewidth": 1.6}
            label = f"{name}: final" if pts else name
            lines.append((label, np.array([at]), np.array([abs(final)]), end))
    return lines


def _value(h: dict[str, Any]) -> float | None:
    """The history entry's value for the wall-clock panel: its objective, else AID's E_best,
    else the dual bound D of SVM's SMO (its f(alpha) is -D; D tends to f* from below)."""
    for key in ("objective", "E_best", "bound"):
        if h.get(key) is not None:
            return h[key]
    return None


def plot_comparison(comparison: Any, path: str) -> str:
    """Write the convergence figure to ``path`` (PNG/PDF/SVG by suffix); returns the path.

    Raises ModuleNotFoundError (with the install command) without matplotlib, ValueError when
    no strategy recorded a history.
    """
    require_matplotlib("Comparison.plot")
    convergence_figure(comparison).savefig(path, dpi=100)
    return str(path)


def convergence_figure(comparison: Any, panels: list[str] | None = None) -> Any:
    """The matplotlib Figure of :func:`plot_comparison`: one row per panel with data (only
    those named in ``panels``, keys of :data:`PANELS`, when given), the legend of each panel
    outside it on the right."""
    require_matplotlib("convergence_figure")
    from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone

    if not series(comparison):
        raise ValueError(
            "No strategy in this comparison recorded a per-iteration history; "
            "add an iterative strategy (e.g. aid, smo, pcg-rfd) to plot convergence."
        )
    known = [k for k, _, _ in PANELS]
    if panels is not None and set(panels) - set(known):
        raise ValueError(f"panels must be among {', '.join(known)}; got {panels!r}.")
    lines = panel_lines(comparison)
    keys = [k for k in known if lines.get(k) and (panels is None or k in panels)]
    fig = Figure(figsize=(9.0, 2.9 * len(keys)), layout="constrained")
    axes = fig.subplots(len(keys), 1, squeeze=False)
    fig.suptitle(_instance_title(comparison), fontsize=11)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        _draw_panel(ax, comparison.problem, key, lines[key])
    return fig


def _instance_title(comparison: Any) -> str:
    """``lad (n = 3,000, p = 4, quantile=0.5)``: the problem and the instance's size and
    parameters, ``constrained lad (...)`` with the user's constraints (the source and the
    constraints' counts are in the result file and the table)."""
    inst = getattr(comparison, "instance", None) or {}
    if not inst:
        return comparison.problem
    from optmodels.compare import short_value

    params = [f"{k}={short_value(v)}" for k, v in inst.items()
              if k not in ("problem", "n", "p", "density", "source", "constraints")
              and v is not None]
    size = f"n = {inst['n']:,}, p = {inst['p']:,}"
    what = "constrained " if inst.get("constraints") else ""
    return f"{what}{comparison.problem} ({', '.join([size, *params[:4]])})"


def _draw_panel(ax: Any, problem: str, key: str, lines: list[Line]) -> None:
    from matplotlib.ticker import MaxNLocator

    title, ylabel = next((t, y) for k, t, y in PANELS if k == key)
    floored = False
    for label, x, y, kw in lines:
        shown = np.maximum(y, FLOOR)
        floored = floored or bool((y <= FLOOR).any())
        ax.plot(x, shown, label=label, **{"markersize": 4, **kw})
    ax.set_yscale("log")
    xs = np.concatenate([x for _, x, _, _ in lines])
    if key == "wall-clock":
        ax.set_xlabel("wall-clock seconds")
        if xs.min() > 0 and xs.max() / xs.min() > 100:
            ax.set_xscale("log")
    else:
        ax.set_xlabel("iteration")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if xs.min() == xs.max():  # one iteration: an integer tick either side
            ax.set_xlim(xs.min() - 1, xs.max() + 1)
    for axis in (ax.xaxis, ax.yaxis):
        fmt = axis.get_major_formatter()
        if hasattr(fmt, "set_useOffset"):
            fmt.set_useOffset(False)
    note = f" (values ≤ {FLOOR:.0e} drawn at {FLOOR:.0e})" if floored else ""
    ax.set_title(f"{problem}: {title}{note}", fontsize=10)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
