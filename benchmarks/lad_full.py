"""Full LAD solve through the toolkit vs the fastest hand-built HiGHS model, same arrays.

Goal (issue 2): the toolkit's full solve at n = 10^6, p = 10, model build and verification
included, within 1.5x of HiGHS's interior point on the LP dual built by hand from the arrays
(max y'u s.t. [X 1]'u = 0, -1 <= u <= 1). Also shown: the primal form through the toolkit, and
statsmodels' QuantReg (q = 0.5) where it finishes in reasonable time.

    python benchmarks/lad_full.py            # n = 10^5 and 10^6
    python benchmarks/lad_full.py --quick    # n = 10^4 and 10^5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from instances import make_lad
from optmodels import LAD


def hand_built(X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """HiGHS on the dual LP, built directly from the arrays with no checks. (seconds, objective)"""
    import highspy

    from solvers.highs_backend import new_highs

    t0 = time.perf_counter()
    n, p = X.shape
    D = np.hstack([X, np.ones((n, 1))])
    k = p + 1
    h = new_highs()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, k
    lp.col_cost_ = -y
    lp.col_lower_, lp.col_upper_ = -np.ones(n), np.ones(n)
    lp.row_lower_ = lp.row_upper_ = np.zeros(k)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, n * k + 1, k, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(k, dtype=np.int32), n)
    lp.a_matrix_.value_ = D.ravel()
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, k
    h.passModel(lp)
    h.setOptionValue("solver", "ipm")
    h.run()
    return time.perf_counter() - t0, -h.getInfo().objective_function_value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--primal-max-n", type=int, default=100_000,
                    help="skip the primal form above this n (186 s at 10^6 measured)")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else [100_000, 1_000_000]
    lines = [
        "| n | p | hand-built HiGHS dual (s) | optmodels full, dual (s) | ratio | "
        "optmodels primal (s) | objective rel. diff | termination | gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        X, y, _, _ = make_lad(n=n, p=args.p, seed=0)
        t_hand, obj_hand = hand_built(X, y)
        t0 = time.perf_counter()
        res = LAD(X, y).solve()
        t_ours = time.perf_counter() - t0
        t_primal = "skipped"
        if n <= args.primal_max_n:
            t0 = time.perf_counter()
            LAD(X, y).solve(form="primal")
            t_primal = f"{time.perf_counter() - t0:.2f}"
        rel = abs(res.objective - obj_hand) / abs(obj_hand)
        lines.append(f"| {n:,} | {args.p} | {t_hand:.2f} | {t_ours:.2f} | {t_ours / t_hand:.2f} | "
                     f"{t_primal} | {rel:.1e} | {res.termination.value} | {res.gap:.1e} |")
        print(lines[-1], flush=True)
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    text = "\n".join(lines)
    (out / "lad_full.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
