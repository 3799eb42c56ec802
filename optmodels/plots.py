"""Convergence plots of a comparison: one panel per quantity, one line per strategy.

Strategies record ``extra["history"]`` as a list of per-iteration dicts. The quantities drawn,
when present, are (key: panel title, axis label):

- ``gap``: relative optimality gap (AID: (E_best - F) / E_best);
- ``F`` and ``E_best``: AID's lower and upper bounds, in one panel with the reference optimum;
- ``rel_error``: ||x_t - x*|| / ||x*|| of the sketched ridge solvers;
- ``grad_norm``: gradient norm;
- ``violation``: SMO's maximal KKT violation;
- ``objective``: the objective per iteration.

Axes use a log scale where the plotted values are positive and span more than two decades.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PANELS: list[tuple[str, str, str]] = [
    ("gap", "Relative optimality gap (0 = certified, drawn at 1e-16)", "gap (relative)"),
    ("F", "Bounds: F (lower, aggregated optimum) and E_best (upper, full objective)", "objective"),
    ("E_best", "", ""),
    ("rel_error", "Relative error to the exact solution", "||x_t - x*|| / ||x*||"),
    ("grad_norm", "Gradient norm", "||grad f(x_t)||"),
    ("violation", "Maximal KKT violation", "max m over I_up - min m over I_low"),
    ("objective", "Objective", "objective"),
]


def series(comparison: Any) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """{panel key: {strategy: (iterations, values)}} for every history in the comparison."""
    out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for name, res in comparison.results.items():
        history = res.extra.get("history") or []
        for key, _, _ in PANELS:
            pts = [
                (h.get("iteration", i), h[key])
                for i, h in enumerate(history)
                if h.get(key) is not None and np.isfinite(h[key])
            ]
            if pts:
                it, val = map(np.asarray, zip(*pts, strict=False))
                out.setdefault(key, {})[name] = (it, val)
    return out


def plot_comparison(comparison: Any, path: str) -> str:
    """Write the convergence figure to ``path`` (PNG/PDF/SVG by suffix); returns the path.

    Strategies without a history (one-shot or full solves) appear as a horizontal reference
    line in the objective panel when there is one. Raises ValueError when nothing has a history.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    data = series(comparison)
    if not data:
        raise ValueError(
            "No strategy in this comparison recorded a per-iteration history; "
            "add an iterative strategy (e.g. aid, smo, pcg) to plot convergence."
        )
    keys = [k for k, _, _ in PANELS if k in data and k != "E_best"]
    fig, axes = plt.subplots(len(keys), 1, figsize=(7.5, 3.3 * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        title, ylabel = next((t, y) for k, t, y in PANELS if k == key)
        lines = {f"{name}: F" if key == "F" else name: pts for name, pts in data[key].items()}
        if key == "F":
            lines.update({f"{name}: E_best": pts for name, pts in data.get("E_best", {}).items()})
            ref = comparison.results[comparison.reference].objective
            ax.axhline(ref, color="k", ls=":", label=f"{comparison.reference} optimum")
        floor = 1e-16 if key == "gap" else None
        values = []
        for label, (it, val) in lines.items():
            val = np.maximum(val, floor) if floor else val
            ax.plot(it, val, marker="o", markersize=3, label=label)
            values.append(val)
        allv = np.concatenate(values)
        if (allv > 0).all() and allv.max() / allv.min() > 100:
            ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{comparison.problem}: {title}", fontsize=10)
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
