"""Guards around monolithic ("full") solves: memory budget, default time limit, progress line.

A full solve of the kernel SVM dual or of the KLR dual forms the dense n x n kernel matrix
(8 n^2 bytes) and several working copies of it (Q = K * yy', its CSR copy, the solver's
factor; the KLR model's eigen-factor and CVXPY's canonical copies), and an interior point
method factors it in O(n^3) time. :func:`check_full_solve`, called by ``Problem.solve`` before a
``strategy="full"`` run, estimates

    bytes   = copies * 8 n^2        (copies measured per model, see ``COPIES``)
    seconds = rate * n^3            (rate measured on this toolkit's reference machine)

and refuses a solve whose ``bytes`` exceed the memory budget with a ValueError that names the
strategy that scales and how to lift the guard. The budget is, in order:
``guards.MEMORY_BUDGET_MB`` (set it in Python), the environment variable
``OPTMODELS_MEMORY_BUDGET_MB``, else ``min(2048 MB, half the machine's RAM)``;
``problem.solve(..., allow_large=True)`` skips the check for one call.

A full solve whose ``time_limit`` is not given runs with ``DEFAULT_TIME_LIMIT`` (600 s) where the
backend has a time limit (HiGHS, Clarabel; ECOS has none, see :mod:`solvers.ecos_backend`);
``time_limit=float("inf")`` lifts it. A full solve expected to take more than
``PROGRESS_SECONDS`` (10 s) prints one line on stderr first, unless ``verbose=False`` is
passed explicitly. Small problems never print.

Calling ``problem.solve_full(...)`` directly is the unguarded low-level call.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

MEMORY_BUDGET_MB: float | None = None
"""Set to a number of MB to override the environment and the default budget."""
ENV_BUDGET = "OPTMODELS_MEMORY_BUDGET_MB"
DEFAULT_BUDGET_MB = 2048.0
DEFAULT_TIME_LIMIT = 600.0
"""Seconds a full solve may run when the caller gives no ``time_limit``."""
PROGRESS_SECONDS = 10.0
"""Full solves estimated to take longer print one progress line on stderr."""

COPIES = {"svm_dual": 8.0, "klr": 24.0, "ridge_cholesky": 2.0}
"""Dense n x n (or m x m) matrices held at the peak of each model's full solve."""
RATE = {"svm_dual": 1e-9, "klr": 2.2e-8, "ridge_cholesky": 1.2e-11}
"""Seconds per n^3 (ridge: per n p m). Measured on 2 cores: the RBF SVM dual 3.6 s at n = 1,500
(peak +177 MB) and 108 s at n = 5,000 with Clarabel; the KLR dual 2.5 s at n = 600 and over
600 s (1.8 GB) at n = 3,000; ridge by Cholesky (whole ``solve()``) 1.1-1.2 s at n = 10^5,
p = 1024 and 7.1-9.2 s at n = 5*10^4, p = 4096 (0.85-1.1e-11 s per n p m; 2e-10 before
predicted 21 and 168 s)."""
NO_TIME_LIMIT = frozenset({"ecos", "cholesky"})
"""Solvers without a time limit option (the closed form finishes in its estimated time)."""


@dataclasses.dataclass(frozen=True)
class Footprint:
    """The dense part of a full solve: what it is, its size, estimated bytes and seconds."""

    what: str
    size: int
    bytes: float
    seconds: float
    scalable: str


def memory_budget_bytes() -> float:
    """The budget in bytes (module setting, then environment, then the default)."""
    if MEMORY_BUDGET_MB is not None:
        return float(MEMORY_BUDGET_MB) * 2**20
    text = os.environ.get(ENV_BUDGET)
    if text:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            raise ValueError(
                f"{ENV_BUDGET}={text!r} must be a positive number of megabytes, e.g. "
                f"{ENV_BUDGET}=8000; unset it for the default."
            )
        return value * 2**20
    return min(DEFAULT_BUDGET_MB * 2**20, 0.5 * _ram_bytes())


def _ram_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def footprint(problem: Any, options: dict[str, Any]) -> Footprint | None:
    """The dense-matrix footprint of ``problem.solve_full(**options)``, or None when the full
    solve builds no dense n x n matrix (LAD, the linear SVM primal, ridge through a QP)."""
    n = problem.n
    if problem.NAME == "svm":
        form = options.get("form", "auto")
        if form == "primal" or (form == "auto" and problem.kernel == "linear"):
            return None
        scalable = 'strategy="smo"' if problem.kernel != "linear" else 'strategy="aid"'
        return _dense("the SVM dual (dense n x n kernel matrix)", n, "svm_dual", scalable)
    if problem.NAME == "klr":
        return _dense("the KLR dual (dense n x n kernel matrix)", n, "klr", 'strategy="smo"')
    if problem.NAME == "ridge" and options.get("solver", "cholesky") == "cholesky":
        m = min(n, problem.p)
        return Footprint(
            "the ridge Cholesky factor (dense min(n, d)^2)",
            m,
            COPIES["ridge_cholesky"] * 8.0 * m * m,
            RATE["ridge_cholesky"] * n * problem.p * m,
            'strategy="pcg-rfd"',
        )
    return None


def _dense(what: str, n: int, key: str, scalable: str) -> Footprint:
    return Footprint(what, n, COPIES[key] * 8.0 * n * n, RATE[key] * float(n) ** 3, scalable)


def check_full_solve(problem: Any, options: dict[str, Any], *, allow_large: bool = False) -> dict:
    """Refuse a full solve above the memory budget, print the progress line, and return the
    options with the default time limit filled in (``inf`` becomes None: no limit)."""
    out = dict(options)
    fp = footprint(problem, out)
    name = type(problem).__name__
    if fp is not None and not allow_large:
        budget = memory_budget_bytes()
        if fp.bytes > budget:
            raise ValueError(
                f"The full solve of {name} (n = {problem.n}) builds {fp.what} and needs about "
                f"{fp.bytes / 2**20:,.1f} MB, above the memory budget of "
                f"{budget / 2**20:,.1f} MB. Use {fp.scalable} (--strategy on the command line), "
                "which scales, or lift the guard with solve(..., allow_large=True) "
                f"(--allow-large), {ENV_BUDGET}=<MB> or optmodels.guards.MEMORY_BUDGET_MB = <MB>."
            )
    solver = str(out.get("solver", _default_solver(problem))).lower()
    limit = out.get("time_limit")
    if limit is None and solver not in NO_TIME_LIMIT:
        out["time_limit"] = DEFAULT_TIME_LIMIT
    elif limit is not None and limit == float("inf"):
        out["time_limit"] = None
    if fp is not None and fp.seconds > PROGRESS_SECONDS and out.get("verbose", None) is not False:
        print(
            f"optmodels: full solve of {name} (n = {problem.n}, {fp.what}) with {solver}: "
            f"expected about {fp.seconds:,.0f} s and {fp.bytes / 2**20:,.0f} MB "
            f"(time limit {out.get('time_limit')} s; {fp.scalable} scales; verbose=False "
            "silences this line)",
            file=sys.stderr,
            flush=True,
        )
    return out


def _default_solver(problem: Any) -> str:
    from solvers.options import FULL

    return str(FULL[problem.NAME]["solver"].default)
