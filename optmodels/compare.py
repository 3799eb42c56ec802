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

from optmodels.memory import peak_in_fresh_process
from solvers.result import SolveResult, format_number
from solvers.solution import LinearSolution

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
    ("first_s", "first_call", "seconds"),
]
"""The table's columns: (record key, header, kind of :func:`solvers.result.format_number`;
"count" is an integer, "text" a string as it is)."""

EXTRA_COLUMNS: list[tuple[str, str, str]] = [
    ("peak_mb", "peak_mem", "megabytes"),
    ("n_clusters_final", "clusters", "count"),
    ("n_active", "n_active", "count"),
    ("n_sv", "n_sv", "count"),
    ("train_accuracy", "train_acc", "value"),
    ("rel_error", "rel_error", "gap"),
    ("time_min_s", "time_min", "seconds"),
    ("time_max_s", "time_max", "seconds"),
    ("constraint_violation", "violation", "gap"),
]
"""Problem-specific columns, shown when some row has them (``violation``: the largest
relative violation of the user's constraints at the row's coefficients,
:meth:`solvers.constraints.CoefConstraints.max_violation`)."""

REFUSED = "refused"
"""The termination shown for a strategy that refuses the problem (its reason in the notes)."""


RESULT_FORMAT = "optmodels-comparison/1"
"""The ``format`` field of a comparison's result file (:meth:`Comparison.save`)."""
STUDY_FORMAT = "optmodels-study/1"
"""The ``format`` field of a result file of several instances (:func:`save_study`)."""


def _json_default(v: Any) -> Any:
    """numpy scalars as Python numbers (non-finite as None) in the result file."""
    if isinstance(v, (np.floating, np.integer)):
        return _num(v)
    if isinstance(v, np.bool_):
        return bool(v)
    raise TypeError(f"not JSON-serialisable: {type(v).__name__}")


@dataclasses.dataclass
class Comparison:
    """The rows of a comparison and the results behind them."""

    problem: str
    reference: str
    records: list[dict[str, Any]]
    results: dict[str, SolveResult]
    scale: float | None = None
    """The problem's natural scale: ref_gap and the plots' relative differences divide by it."""
    instance: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The instance (:func:`describe`): problem, n, p, density, parameters, source."""
    timing: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the times were measured (:func:`timing_line`)."""
    histories: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """Each strategy's per-iteration history (JSON numbers), what the figures draw."""

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
        repeated = any(r.get("runs", 1) > 1 for r in self.records)
        extra = [c for c in EXTRA_COLUMNS if any(c[0] in r for r in self.records)
                 and (repeated or c[0] not in ("time_min_s", "time_max_s"))]
        return COLUMNS + extra

    def _notes(self) -> list[tuple[str, str]]:
        """(note, the strategies it applies to, or "every row") for the rows' notes."""
        groups: dict[str, list[str]] = {}
        for r in self.records:
            whole = r.get("termination") == REFUSED  # a refusal's reason is one note
            for note in filter(None, [r.get("note")] if whole else
                               (r.get("note") or "").split("; ")):
                groups.setdefault(note, []).append(r["strategy"])
        return [(note, "every row" if len(who) == len(self.records) > 1 else ", ".join(who))
                for note, who in groups.items()]

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

        head = [f"{self.problem}: reference = {self.reference}"]
        if self.instance:
            head = [f"instance: {instance_line(self.instance)}",
                    f"reference: {self.reference}"]
        if self.timing:
            head.append(f"timing: {timing_line(self.timing)}")
        notes = [f"  {who}: {note}" for note, who in self._notes()]
        return "\n".join([*head, *map(line, cells), *(["notes:", *notes] if notes else [])])

    def to_markdown(self) -> str:
        """The formatted table as Markdown, the instance and timing lines above it."""
        frame = self.to_frame(formatted=True)
        head = ["strategy", *frame.columns]
        rows = [[str(i), *map(str, row)] for i, row in zip(frame.index, frame.values,
                                                           strict=True)]
        lines = [f"**Instance:** {instance_line(self.instance)}  ", f"**Reference:** "
                 f"{self.reference}  ", f"**Timing:** {timing_line(self.timing)}", "",
                 "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        notes = [f"- {who}: {note}" for note, who in self._notes()]
        return "\n".join(lines + ([""] + notes if notes else []))

    def to_latex(self) -> str:
        """The formatted table as a LaTeX ``tabular`` (booktabs rules) in a ``table`` with the
        instance and the timing as its caption. Written here, not by pandas' Styler, which
        needs jinja2 for a table this small."""
        frame = self.to_frame(formatted=True)

        def tex(v: str) -> str:
            return (str(v).replace("\\", "\\textbackslash{}").replace("_", "\\_")
                    .replace("%", "\\%").replace("&", "\\&").replace("#", "\\#"))

        cols = "l" + "r" * len(frame.columns)
        lines = ["\\begin{table}", "\\centering", f"\\begin{{tabular}}{{{cols}}}",
                 "\\toprule", " & ".join(map(tex, ["strategy", *frame.columns])) + " \\\\",
                 "\\midrule"]
        lines += [" & ".join(map(tex, [i, *row])) + " \\\\"
                  for i, row in zip(frame.index, frame.values, strict=True)]
        caption = (f"{instance_line(self.instance)}. Reference: {self.reference}. "
                   f"Timing: {timing_line(self.timing)}.")
        lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{tex(caption)}}}",
                  "\\end{table}"]
        return "\n".join(lines)

    def to_csv(self) -> str:
        """The records as CSV, every number unformatted (one row per strategy)."""
        return self.to_frame().to_csv()

    def save(self, path: str) -> str:
        """Write the comparison to a JSON result file that :meth:`load` (or ``optmodels plot``
        / ``optmodels table``) reads back to re-tabulate and re-plot without re-running:
        the instance, the timing method, the records and every strategy's history. Written
        to a temporary file in the same directory and renamed, so no half file is left."""

        return _write_json(path, self.to_document())

    def to_document(self) -> dict[str, Any]:
        """The result file's JSON document (:meth:`save`)."""
        return {"format": RESULT_FORMAT, "problem": self.problem, "reference": self.reference,
                "scale": _num(self.scale), "instance": self.instance, "timing": self.timing,
                "records": self.records, "histories": self.histories}

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Comparison:
        """The comparison of a document written by :meth:`to_document`."""
        return cls(doc["problem"], doc["reference"], doc["records"], {}, doc.get("scale"),
                   doc.get("instance", {}), doc.get("timing", {}), doc.get("histories", {}))

    @classmethod
    def load(cls, path: str) -> Comparison:
        """The comparison of a result file written by :meth:`save` (its ``results`` empty:
        the tables and figures need only the records and histories)."""

        comparisons = load_results(path)
        if len(comparisons) != 1:
            raise ValueError(f"{path} holds {len(comparisons)} comparisons (a study of several "
                             "instances); read it with optmodels.compare.load_results(path).")
        return comparisons[0]

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
        "solution_bound": _num(res.solution_bound),
        "decision_bound": _num(res.decision_bound),
        "solution_gap": _num(res.solution_gap),
        "solution_tol": float(res.solution_tol),
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
    violation = constraint_violation(problem, res)
    if violation is not None:
        out["constraint_violation"] = violation
    if peak_mb is not None:
        out["peak_mb"] = peak_mb
    return out


def constraint_violation(problem: Any, res: SolveResult) -> float | None:
    """The largest relative violation of the user's constraints at the result's coefficients
    (:meth:`~solvers.constraints.CoefConstraints.max_violation`: 0 when feasible), None for a
    problem without constraints or a result without a linear solution."""
    cc = getattr(problem, "coef_constraints", None)
    sol = res.solution
    if cc is None or not isinstance(sol, LinearSolution):
        return None
    theta = np.r_[sol.coef, sol.intercept] if cc.k == sol.coef.size + 1 else sol.coef
    return float(cc.max_violation(theta)) if theta.size == cc.k else None


def _num(v: Any) -> Any:
    if v is None:
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def describe(problem: Any, source: str | None = None) -> dict[str, Any]:
    """The instance in a few fields, for the table's header, the result file and the figures'
    titles: the problem, n, p, the share of nonzero entries of X, the model's parameters
    (kernel with its resolved gamma, C / alpha / tau, ...) and ``source`` (a file, or the
    generator with its seed; ``problem.source`` when set)."""
    out: dict[str, Any] = {"problem": problem.NAME, "n": int(problem.n), "p": int(problem.p)}
    X = getattr(problem, "_X", None)
    if X is not None and not getattr(problem, "lazy", False) and X.shape[0] * X.shape[1]:
        nnz = X.nnz if hasattr(X, "nnz") else int(np.count_nonzero(X))
        out["density"] = float(nnz / (X.shape[0] * X.shape[1]))
    for key, value in getattr(problem, "params", {}).items():
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
    kernel = getattr(problem, "kernel_", None)
    if kernel is not None and getattr(kernel, "name", None) in ("rbf", "poly"):
        out["gamma"] = float(kernel.gamma)  # 'scale' / 'auto' resolved on the data
    summary = constraint_summary(problem)
    if summary:
        out["constraints"] = summary
    out["source"] = source or getattr(problem, "source", None) or "given arrays"
    return out


def constraint_summary(problem: Any) -> str | None:
    """The user's constraints on the coefficients (``constraints=`` / ``bounds=``) by count
    and kind, e.g. ``1 row (1 equality); bounds on 6 of 6 coefficients (6 lower only)``;
    None for a problem without them. Rows ``lo <= g'theta <= hi`` are equalities (lo = hi),
    ``<=`` or ``>=`` rows (one side finite) or two-sided; a bound is fixed, a box, lower
    only or upper only."""
    cc = getattr(problem, "coef_constraints", None)
    if cc is None:
        return None
    lo_f, hi_f = np.isfinite(cc.lo), np.isfinite(cc.hi)
    eq = cc.lo == cc.hi
    rows = _kinds([("equality", eq), ("<=", hi_f & ~lo_f), (">=", lo_f & ~hi_f),
                   ("two-sided", lo_f & hi_f & ~eq)])
    lb_f, ub_f = np.isfinite(cc.lb), np.isfinite(cc.ub)
    fixed = cc.lb == cc.ub
    bounds = _kinds([("fixed", fixed), ("box", lb_f & ub_f & ~fixed), ("lower only", lb_f & ~ub_f),
                     ("upper only", ub_f & ~lb_f)])
    parts = [f"{cc.m} row{'s' if cc.m != 1 else ''} ({rows})"] if cc.m else []
    n_bounded = int(np.count_nonzero(lb_f | ub_f))
    if n_bounded:
        parts.append(f"bounds on {n_bounded} of {cc.k} coefficients ({bounds})")
    return "; ".join(parts) or "none (every coefficient free)"


def _kinds(masks: list[tuple[str, np.ndarray]]) -> str:
    """``1 equality, 2 <=``: the count of each kind that occurs."""
    return ", ".join(f"{int(np.count_nonzero(m))} {name}" for name, m in masks if m.any())


def instance_line(instance: dict[str, Any]) -> str:
    """``lad, n = 21, p = 3, density 1, quantile=0.5, ...; constraints: ...; source: ...``
    (one line; the constraints where the problem has some, :func:`constraint_summary`)."""
    fixed = ("problem", "n", "p", "density", "source", "constraints")
    parts = [f"{instance['problem']}, n = {instance['n']:,}, p = {instance['p']:,}"]
    if "density" in instance:
        parts.append(f"density {format_number(instance['density'])}")
    parts += [f"{k}={short_value(v)}" for k, v in instance.items() if k not in fixed]
    line = ", ".join(parts)
    if instance.get("constraints"):
        line += f"; constraints: {instance['constraints']}"
    return line + f"; source: {instance.get('source', '-')}"


def short_value(v: Any) -> str:
    """A parameter as shown: floats to 4 significant digits (a resolved gamma = 0.1688...)."""
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def timing_line(timing: dict[str, Any]) -> str:
    """How the times were measured, in one line (the table says it under the header)."""
    first = ("a warm-up call per strategy first (its time is first_s, never the solve time), "
             if timing.get("warmup") else "no warm-up (the first call's costs are in the "
             "time), ")
    runs = timing["repeat"]
    what = (f"then the median of {runs} runs (spread in time_min_s / time_max_s)" if runs > 1
            else "then one run")
    memory = {"process": "peak RSS of each strategy in a fresh process",
              None: "memory not measured"}[timing.get("memory")]
    return (f"wall-clock of the whole solve call; {first}{what}, strategies in a "
            f"rotated order each round; {memory}")


def compare(
    problem: Any,
    strategies: list[str] | tuple[str, ...] = ("full",),
    *,
    reference: str = "full",
    options: dict[str, dict[str, Any]] | None = None,
    repeat: int = 1,
    warmup: bool = True,
    memory: bool = False,
    progress: bool = True,
    source: str | None = None,
) -> Comparison:
    """Run each strategy on ``problem`` and tabulate it against ``reference``.

    ``options`` maps a strategy name to its keyword options (e.g. ``{"rfd": {"m": 64}}``),
    each checked by the strategy's table before any strategy runs.

    Timing (docs/guide/compare.md, "How we time"): with ``warmup`` every strategy is first
    called once, so that imports, thread pools and caches a process builds on its first call
    are paid there (reported as ``first_s``, never as solve time); then ``repeat`` rounds run
    every strategy once, the order rotated by one each round so that no strategy always runs
    first or after the same one; ``time_s`` is the median of a strategy's rounds, with
    ``time_min_s`` / ``time_max_s``. Every time is the wall-clock of the whole solve call.
    ``memory`` measures each strategy's peak resident memory above its start in a fresh
    process (:func:`optmodels.memory.peak_in_fresh_process`): one strategy cannot inherit
    another's freed memory, at the cost of one more solve per strategy. ``progress`` prints
    one line per call to stderr. ``source`` names the data (a file, a generator and seed) for
    the instance description (:func:`describe`).
    """
    names = list(dict.fromkeys([reference, *strategies]))
    known = problem.strategies()
    bad = [s for s in names if s not in known]
    if bad:
        raise ValueError(
            f"Unknown strategy {bad[0]!r} for {problem.NAME}; choose from {', '.join(known)}."
        )
    if not isinstance(repeat, (int, np.integer)) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat must be a positive integer (runs per strategy); got "
                         f"{repeat!r}.")
    options = _checked_options(problem, names, options or {})
    refusals = _refusals(problem, names, reference)
    runs = [name for name in names if name not in refusals]
    first: dict[str, float] = {}
    if warmup:
        for name in runs:
            first[name] = _timed(problem, name, options, progress, "warm-up")[1]
    times: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, SolveResult] = {}
    for r in range(repeat):
        k = r % len(runs)
        for name in runs[k:] + runs[:k]:
            results[name], t = _timed(problem, name, options, progress, f"run {r + 1}/{repeat}")
            times[name].append(t)
    peaks = ({name: peak_in_fresh_process(problem, name, options.get(name, {}))
              for name in runs} if memory else {})
    records = []
    for name in names:
        if name in refusals:
            records.append(refused_record(problem, name, refusals[name]))
            continue
        rec = record(problem, results[name], peaks.get(name))
        rec.update(time_s=float(np.median(times[name])), time_min_s=min(times[name]),
                   time_max_s=max(times[name]), runs=repeat)
        if warmup:
            rec["first_s"] = first[name]
        rec.update(_row_notes(problem, results[name]))
        records.append(rec)
    scale = problem.natural_scale()
    _relate(records, results, reference, scale, problem)
    timing = {"warmup": bool(warmup), "repeat": int(repeat), "order": "rotated",
              "memory": "process" if memory else None}
    kept = [r for r in records if r["strategy"] in strategies or r["strategy"] == reference]
    histories = {name: _json_history(results[name]) for name in runs}
    return Comparison(problem.NAME, reference, kept, results, scale,
                      describe(problem, source), timing, histories)


def _refusals(problem: Any, names: list[str], reference: str) -> dict[str, str]:
    """{strategy: why it refuses ``problem``} for the compared strategies that do
    (:func:`optmodels.strategies.accepted`: a decomposition that cannot carry the user's
    constraints, a loss or kernel it does not solve); they are not run and get a row saying
    so. A refused reference is an error: nothing could be measured against it."""
    from optmodels.strategies import get_strategy

    why = {name: get_strategy(problem.NAME, name).refusal(problem) for name in names}
    if why[reference]:
        ok = [name for name, reason in why.items() if not reason]
        raise ValueError(f"The reference strategy {reference!r} refuses this problem: "
                         f"{why[reference]} Choose reference= among the compared strategies "
                         f"that accept it: {', '.join(ok) or 'none'}.")
    return {name: reason for name, reason in why.items() if reason}


def refused_record(problem: Any, strategy: str, reason: str) -> dict[str, Any]:
    """The row of a strategy that refused the problem: termination ``refused``, no numbers,
    the reason as its note (without the leading "Strategy 'x' of lad", so that strategies
    refused for one reason share one note)."""
    prefix = f"Strategy {strategy!r} of {problem.NAME} "
    short = reason[len(prefix):] if reason.startswith(prefix) else reason
    return {"problem": problem.NAME, "strategy": strategy, "solver": None,
            "termination": REFUSED, "certified": False, "n": problem.n, "p": problem.p,
            "refusal": reason, "note": f"refused: {short}"}


def _timed(problem: Any, name: str, options: dict[str, dict[str, Any]], progress: bool,
           what: str) -> tuple[SolveResult, float]:
    """One solve call of strategy ``name`` and its wall-clock seconds."""
    if progress:
        print(f"{problem.NAME}: {name} ({what}) ...", file=sys.stderr, end="", flush=True)
    t0 = time.perf_counter()
    res = problem.solve(strategy=name, **options.get(name, {}))
    seconds = time.perf_counter() - t0
    if progress:
        print(f" {res.termination.value} in {seconds:.3g} s", file=sys.stderr, flush=True)
    return res, seconds


def _row_notes(problem: Any, res: SolveResult) -> dict[str, Any]:
    """What the row must say beside its numbers: that AID never aggregated (as many clusters
    as rows: the run was a full solve in pieces, not a decomposition), and whether the optimum
    is unique (where it need not be, ``distance`` between two optimal results can be large)."""
    notes = []
    clusters = res.extra.get("n_clusters_final")
    if clusters is not None and clusters >= _weighted_rows(problem):
        notes.append("no aggregation (clusters = rows)")
    if res.solution_unique is not True and res.x is not None:
        notes.append("optimum may not be unique: distance compares one optimum with another")
    out: dict[str, Any] = {"unique": res.solution_unique}
    if notes:
        out["note"] = "; ".join(notes)
    return out


def _weighted_rows(problem: Any) -> int:
    """The rows of positive weight (AID clusters those only); n on Dask data."""
    s = getattr(problem, "sample_weight", None)
    if s is None or getattr(problem, "lazy", False):
        return problem.n
    return int(np.count_nonzero(np.asarray(s) > 0))


def _json_history(res: SolveResult) -> list[dict[str, Any]]:
    """The result's per-iteration history with only JSON numbers (for the result file)."""
    out = []
    for h in res.extra.get("history") or []:
        row = {k: _num(v) if isinstance(v, (int, float, np.floating, np.integer))
               and not isinstance(v, bool) else v
               for k, v in h.items() if isinstance(v, (int, float, str, bool, np.floating,
                                                       np.integer)) or v is None}
        out.append(row)
    return out


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
    problem: Any = None,
) -> None:
    """Fill ref_gap (relative to the problem's natural scale), distance (:func:`
    result_distance`) and speedup (the reference's median time over the row's) relative to
    the reference row."""
    ref = results[reference]
    ref_time = next(r for r in records if r["strategy"] == reference).get("time_s", ref.time)
    for rec in records:
        if rec["strategy"] not in results:  # a refused strategy: nothing to relate
            continue
        res = results[rec["strategy"]]
        rec["ref_gap"] = relative_difference(res.objective, ref.objective, scale)
        rec["distance"] = result_distance(res, ref, problem)
        t = rec.get("time_s", res.time)
        rec["speedup"] = ref_time / t if t and t > 0 else None


def result_distance(res: SolveResult, ref: SolveResult, problem: Any = None) -> float | None:
    """How far a result's solution is from the reference's, relative to the reference's:
    ``||(coef, intercept) - (coef*, intercept*)|| / ||(coef*, intercept*)||`` when both are
    linear solutions, else (a dual, whose alphas need not be unique even where the decision
    function is) ``||f - f*|| / ||f*||`` over the training rows' decision values; the raw
    ``x`` vectors (:func:`solution_distance`) without typed solutions."""
    a, b = res.solution, ref.solution
    if a is None or b is None:
        return solution_distance(res.x, ref.x)
    if isinstance(a, LinearSolution) and isinstance(b, LinearSolution):
        if a.coef.shape != b.coef.shape:
            return None
        return solution_distance(np.r_[a.coef, a.intercept], np.r_[b.coef, b.intercept])
    X = getattr(problem, "_X", None)
    if X is None or getattr(problem, "lazy", False):
        return None
    return solution_distance(a.decision_function(X), b.decision_function(X))


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


def _write_json(path: str, doc: dict[str, Any]) -> str:
    """Write ``doc`` to ``path`` through a temporary file in the same directory, renamed into
    place, so no half-written result file is ever left."""
    import json
    import os
    import tempfile

    text = json.dumps(doc, indent=1, default=_json_default)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".optmodels-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return str(path)


def load_results(path: str) -> list[Comparison]:
    """The comparisons of a result file: one (:meth:`Comparison.save`) or a study's several
    (:func:`save_study`)."""
    import json

    with open(path) as fh:
        try:
            doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not a JSON result file ({exc.msg} at line "
                             f"{exc.lineno}); write one with optmodels compare --out "
                             "FILE.json.") from None
    if isinstance(doc, dict) and doc.get("format") == RESULT_FORMAT:
        return [Comparison.from_document(doc)]
    if isinstance(doc, dict) and doc.get("format") == STUDY_FORMAT:
        return [Comparison.from_document(d) for d in doc["comparisons"]]
    raise ValueError(f"{path} is not an optmodels comparison result file (format "
                     f"{RESULT_FORMAT!r} or {STUDY_FORMAT!r}); write one with "
                     "compare(...).save(path) or optmodels compare --out FILE.json.")


def compare_instances(
    problems: list[Any],
    strategies: list[str] | tuple[str, ...] = ("full",),
    **kwargs: Any,
) -> list[Comparison]:
    """:func:`compare` on each problem of ``problems`` (each names its data in
    ``problem.source``: a file, a built-in dataset, or a generator with its seed), with the
    same strategies and keyword arguments; :func:`study_frame` tabulates them together and
    :func:`save_study` writes them to one result file."""
    return [compare(p, strategies, **kwargs) for p in problems]


def save_study(path: str, comparisons: list[Comparison]) -> str:
    """One result file for several comparisons (:func:`load_results` reads it back)."""
    return _write_json(path, {"format": STUDY_FORMAT,
                              "comparisons": [c.to_document() for c in comparisons]})


STUDY_COLUMNS = ("n", "p", "termination", "certified", "time_s", "speedup", "first_s",
                 "ref_gap", "distance", "iterations")
"""The columns of the table across instances, one row per (instance, strategy)."""


def study_frame(comparisons: list[Comparison]) -> Any:
    """A pandas DataFrame across instances: one row per (instance, strategy), indexed by the
    instance's source and the strategy, with :data:`STUDY_COLUMNS`."""
    import pandas as pd

    rows = []
    for c in comparisons:
        name = c.instance.get("source") or c.problem
        for r in c.records:
            rows.append({"instance": name, "strategy": r["strategy"],
                         "n": c.instance.get("n"), "p": c.instance.get("p"),
                         **{k: r.get(k) for k in STUDY_COLUMNS if k not in ("n", "p")}})
    return pd.DataFrame(rows).set_index(["instance", "strategy"])


def study_text(comparisons: list[Comparison], fmt: str = "text") -> str:
    """Every comparison's table in ``fmt`` ("text", "md", "latex"; "csv" gives the table
    across instances, :func:`study_frame`, as CSV), then for text and Markdown the table
    across instances."""
    if fmt == "csv":
        return study_frame(comparisons).to_csv()
    render = {"text": Comparison.to_text, "md": Comparison.to_markdown,
              "latex": Comparison.to_latex}[fmt]
    parts = [render(c) for c in comparisons]
    if len(comparisons) > 1 and fmt in ("text", "md"):
        frame = study_frame(comparisons)
        cells = frame.reset_index()
        for col, kind in (("time_s", "seconds"), ("first_s", "seconds"), ("speedup", "ratio"),
                          ("ref_gap", "gap"), ("distance", "gap")):
            cells[col] = [_cell(v, kind) for v in cells[col]]
        cells["certified"] = ["yes" if v else "no" for v in cells["certified"]]
        table = cells.to_string(index=False) if fmt == "text" else _markdown_table(cells)
        parts.append(("across instances:\n" if fmt == "text" else "**Across instances**\n\n")
                     + table)
    return "\n\n".join(parts)


def _markdown_table(frame: Any) -> str:
    """A DataFrame as a Markdown table (pandas' to_markdown needs the tabulate package)."""
    head = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.values]
    return "\n".join(lines)
