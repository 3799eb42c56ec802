"""Decomposition and sketching strategies beside the full solve, on one instance.

    table = compare(problem, strategies=["full", "aid"], reference="full")
    table.to_frame()        # pandas DataFrame, one row per strategy
    table.plot("out.png")   # convergence histories, where strategies record them

Each row carries: time (build / solve / the whole call's wall-clock), peak resident memory
above the run's start (sampled, so the solvers' C/C++ memory counts and the run is not slowed),
iterations, objective, bound, gap,
the relative objective difference to the reference strategy (``ref_gap``), the relative
solution distance (``distance``), the certificate, and problem-specific columns.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import numpy as np

from optmodels.memory import PeakRSS
from solvers.result import SolveResult, format_number

COLUMNS: list[tuple[str, str, str]] = [
    ("solver", "solver", "text"),
    ("termination", "termination", "text"),
    ("certified", "certified", "value"),
    ("objective", "objective", "value"),
    ("gap", "gap", "gap"),
    ("ref_gap", "ref_gap", "gap"),
    ("distance", "distance", "gap"),
    ("iterations", "iterations", "count"),
    ("time_s", "time", "seconds"),
    ("speedup", "speedup", "ratio"),
    ("peak_mb", "peak_mem", "megabytes"),
]
"""The table's columns: (record key, header, kind of :func:`solvers.result.format_number`;
"count" is an integer, "text" a string as it is)."""

EXTRA_COLUMNS: list[tuple[str, str, str]] = [
    ("n_clusters_final", "clusters", "count"),
    ("n_active", "n_active", "count"),
    ("n_sv", "n_sv", "count"),
    ("train_accuracy", "train_acc", "value"),
    ("rel_error", "rel_error", "gap"),
]
"""Problem-specific columns, shown when some row has them."""


@dataclasses.dataclass
class Comparison:
    """The rows of a comparison and the results behind them."""

    problem: str
    reference: str
    records: list[dict[str, Any]]
    results: dict[str, SolveResult]
    scale: float | None = None
    """The problem's natural scale: ref_gap and the plots' relative differences divide by it."""

    def to_frame(self, formatted: bool = False) -> Any:
        """A pandas DataFrame of the records, one row per strategy (index ``strategy``).

        ``formatted=False``: every record field as a number (for analysis). ``formatted=True``:
        the table's columns (:data:`COLUMNS`, then the :data:`EXTRA_COLUMNS` some row has) as
        strings by :func:`solvers.result.format_number`: seconds with a unit ("2.93 s"),
        speed-ups as "4.1x", counts as integers, |gaps| below 1e-12 as "0", certified yes/no,
        missing values "-".
        """
        import pandas as pd

        if not formatted:
            return pd.DataFrame(self.records).set_index("strategy")
        cols = self._columns()
        data = {head: [_cell(r.get(key), kind) for r in self.records] for key, head, kind in cols}
        index = pd.Index([r["strategy"] for r in self.records], name="strategy")
        return pd.DataFrame(data, index=index)

    def _columns(self) -> list[tuple[str, str, str]]:
        extra = [c for c in EXTRA_COLUMNS if any(c[0] in r for r in self.records)]
        return COLUMNS + extra

    def to_text(self) -> str:
        """The formatted frame (``to_frame(formatted=True)``) as a fixed-width table: text
        columns left-aligned, numbers right-aligned."""
        frame = self.to_frame(formatted=True)
        kinds = {"strategy": "text", **{head: kind for _, head, kind in self._columns()}}
        cells = [["strategy", *frame.columns]]
        cells += [[str(idx), *row] for idx, row in zip(frame.index, frame.values, strict=True)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]

        def line(row: list[str]) -> str:
            out = [
                v.ljust(w) if kinds[h] == "text" else v.rjust(w)
                for v, w, h in zip(row, widths, cells[0], strict=True)
            ]
            return "  ".join(out).rstrip()

        return "\n".join([f"{self.problem}: reference = {self.reference}", *map(line, cells)])

    def plot(self, path: str) -> str:
        """Write the convergence figure (see :mod:`optmodels.plots`); needs matplotlib
        (``pip install "optmodels[plot]"``), checked before anything is drawn."""
        from optmodels.plots import plot_comparison, require_matplotlib

        require_matplotlib("Comparison.plot")
        return plot_comparison(self, path)


def _cell(v: Any, kind: str) -> str:
    """One table cell: ``v`` through :func:`format_number` (counts cast to int first)."""
    if v is None or kind == "text":
        return format_number(v) if v is None else str(v)
    if kind == "count" and float(v).is_integer():
        return format_number(int(v))
    return format_number(v, "value" if kind == "count" else kind)


def record(problem: Any, res: SolveResult, peak_mb: float | None = None) -> dict[str, Any]:
    """The JSON-ready summary of one result (the CLI's ``--json`` object)."""
    out: dict[str, Any] = {
        "problem": problem.NAME,
        "strategy": res.strategy,
        "solver": res.solver,
        "termination": res.termination.value,
        "solution_status": res.solution_status.value,
        "objective": _num(res.objective),
        "bound": _num(res.bound),
        "gap": _num(res.gap),
        "certified": bool(res.certified and res.is_optimal),
        "certificate_tol": float(res.certificate_tol),
        "iterations": int(res.iterations),
        "build_s": float(res.build_time),
        "solve_s": float(res.solve_time),
        "time_s": float(res.time),
        "n": problem.n,
        "p": problem.p,
    }
    if "intercept" in res.extra:
        out["intercept"] = _num(res.extra["intercept"])
    for key in (
        "n_clusters_final",
        "n_active",
        "active_share",
        "train_accuracy",
        "max_violation",
        "relative_gradient",
        "rel_error",
        "n_sv",
    ):
        if key in res.extra:
            out[key] = _num(res.extra[key])
    if peak_mb is not None:
        out["peak_mb"] = peak_mb
    return out


def _num(v: Any) -> Any:
    if v is None:
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def compare(
    problem: Any,
    strategies: list[str] | tuple[str, ...] = ("full",),
    *,
    reference: str = "full",
    options: dict[str, dict[str, Any]] | None = None,
    memory: bool = True,
    progress: bool = True,
) -> Comparison:
    """Run each strategy on ``problem`` and tabulate it against ``reference``.

    ``options`` maps a strategy name to its keyword options (e.g. ``{"rfd": {"m": 64}}``),
    each checked by the strategy's table before any strategy runs. ``progress`` prints one line per
    strategy to stderr; ``memory`` samples the peak resident memory above the start of each run
    from a background thread (:class:`optmodels.memory.PeakRSS`: the solvers' C memory included,
    the timed code not slowed; memory already held by the process is not counted again).
    """
    names = list(dict.fromkeys([reference, *strategies]))
    known = problem.strategies()
    bad = [s for s in names if s not in known]
    if bad:
        raise ValueError(
            f"Unknown strategy {bad[0]!r} for {problem.NAME}; choose from {', '.join(known)}."
        )
    options = _checked_options(problem, names, options or {})
    results: dict[str, SolveResult] = {}
    records = []
    for i, name in enumerate(names, 1):
        if progress:
            print(f"[{i}/{len(names)}] {problem.NAME}: {name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        meter = PeakRSS() if memory else None
        if meter is not None:
            with meter:
                res = problem.solve(strategy=name, **options.get(name, {}))
        else:
            res = problem.solve(strategy=name, **options.get(name, {}))
        peak = None if meter is None else meter.peak_mb
        if progress:
            print(
                f"      {res.termination.value} in {time.perf_counter() - t0:.2f} s",
                file=sys.stderr,
                flush=True,
            )
        results[name] = res
        records.append(record(problem, res, peak))
    scale = problem.natural_scale()
    _relate(records, results, reference, scale)
    return Comparison(
        problem.NAME,
        reference,
        [r for r in records if r["strategy"] in strategies or r["strategy"] == reference],
        results,
        scale,
    )


def _checked_options(
    problem: Any, names: list[str], options: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each strategy's options validated by its table before anything runs."""
    from optmodels.strategies import check_strategy_options

    stray = sorted(set(options) - set(names))
    if stray:
        raise ValueError(
            f"Options given for strategy {stray[0]!r}, which is not compared; "
            f"the compared strategies are {', '.join(names)}."
        )
    return {s: check_strategy_options(problem.NAME, s, options.get(s, {})) for s in names}


def _relate(
    records: list[dict[str, Any]],
    results: dict[str, SolveResult],
    reference: str,
    scale: float | None = None,
) -> None:
    """Fill ref_gap (relative to the problem's natural scale), distance and speedup relative to
    the reference row."""
    ref = results[reference]
    for rec in records:
        res = results[rec["strategy"]]
        rec["ref_gap"] = relative_difference(res.objective, ref.objective, scale)
        rec["distance"] = solution_distance(res.x, ref.x)
        rec["speedup"] = ref.time / res.time if res.time > 0 else None


def relative_difference(
    value: float, reference: float, scale: float | None = None
) -> float | None:
    """(value - reference) / scale, or None when either is missing; ``scale`` is the problem's
    natural scale (the same one its certificate uses), ``max(|reference|, tiny)`` without one,
    so the column reads the same on data rescaled by any factor."""
    if not (np.isfinite(value) and np.isfinite(reference)):
        return None
    if not scale or not np.isfinite(scale) or scale <= 0:
        scale = max(abs(reference), np.finfo(float).tiny)
    return float((value - reference) / scale)


def solution_distance(x: np.ndarray | None, x_ref: np.ndarray | None) -> float | None:
    """||x - x_ref|| / ||x_ref|| (absolute when x_ref = 0) when both exist with the same shape."""
    if x is None or x_ref is None or np.shape(x) != np.shape(x_ref):
        return None
    norm = float(np.linalg.norm(x_ref))
    return float(np.linalg.norm(x - x_ref) / (norm if norm > 0 else 1.0))
