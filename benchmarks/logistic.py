"""L2 logistic regression: the toolkit's KLR 'newton' strategy against scikit-learn, in one run.

Problem: min_{w,b} P(w, b) = 1/2 ||w||^2 + C sum_i log(1 + exp(-y_i (x_i'w + b))), b
unpenalised, C = 1 (plain KLR with the linear kernel on explicit features).
Ours: ``KLR(X, y, C=C, kernel="linear").solve("newton", preconditioner=...)`` with the
preconditioners rfd (sketch, default), diag (Jacobi) and none (plain CG), whole calls (problem
construction, the Newton-CG solve, the dual map and the certificate). The note gives Newton
steps and total CG iterations. Peers: scikit-learn's ``LogisticRegression`` with
solver newton-cg, lbfgs (both leave b unpenalised: the same problem) at tol 1e-4 (default) and
1e-10, and liblinear (trust-region Newton, LIBLINEAR -s 0), which penalises b as a feature of
value intercept_scaling = 1: a slightly different problem, so its row is our P at its (w, b).
Every objective is P(w, b) evaluated by one function here; "rel. diff to best" is the gap to
the lowest P found on the instance.
Instances (synthetic, seeded): ``dense``, Gaussian features and labels drawn from a logistic
model; ``ill``, the same with column scales log-spaced over 1e-3..1e3 (shuffled) and a quarter
of the columns duplicates of others (the Hessian has a huge condition number and a null
direction that only the regulariser fills).

    python benchmarks/logistic.py --quick     # n = 10^4, p = 50
    python benchmarks/logistic.py             # n = 10^5, p = 100
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import Row, failed, instance_size, parse_caps, preamble, run_tables, timed

DISTS = ["optmodels", "scikit-learn", "numpy", "scipy"]
C = 1.0
PRECONDITIONERS = ("rfd", "diag", "none")


def primal(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> float:
    """P(w, b) = 1/2 ||w||^2 + C sum_i log(1 + exp(-y_i (x_i'w + b)))."""
    return float(0.5 * w @ w + C * np.logaddexp(0.0, -y * (X @ w + b)).sum())


def make_instance(n: int, p: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``dense`` / ``ill`` instances of the module docstring (p columns in both)."""
    rng = np.random.default_rng(seed)
    base = p - p // 4 if kind == "ill" else p
    Z = rng.standard_normal((n, base))
    t = Z @ (rng.standard_normal(base) * 2.0 / np.sqrt(base)) + 0.3
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-t)), 1.0, -1.0)
    if kind == "dense":
        return Z, y
    scales = np.logspace(-3, 3, base)
    rng.shuffle(scales)
    X = Z * scales
    return np.ascontiguousarray(np.hstack([X, X[:, : p - base]])), y


def ours(X: np.ndarray, y: np.ndarray, pre: str, max_iter: int) -> tuple[np.ndarray, float,
                                                                       float, str, str]:
    from optmodels import KLR

    opts = {"preconditioner": pre}
    if pre == "none":
        opts.update(max_iter=max(300, max_iter), cg_max_iter=20 * X.shape[1] + 1000)

    def call():
        return KLR(X, y, C=C, kernel="linear").solve("newton", **opts)

    r, t = timed(call)
    status = "certified" if r.certified else r.termination.value
    note = (f"{r.iterations} Newton steps, {r.extra['total_cg']} CG, "
            f"{r.extra['n_sketches']} sketches, gap {r.gap:.0e}")
    return np.asarray(r.extra["w"]), float(r.extra["primal_intercept"]), t, status, note


def sklearn_fit(X: np.ndarray, y: np.ndarray, solver: str, tol: float, max_iter: int
                ) -> tuple[np.ndarray, float, float, str, str]:
    from sklearn.linear_model import LogisticRegression

    est = LogisticRegression(C=C, solver=solver, tol=tol, max_iter=max_iter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = timed(est.fit, X, y)
    conv = not any("converge" in str(c.message).lower() for c in caught)
    note = f"{int(np.max(m.n_iter_))} iterations"
    if solver == "liblinear":
        note += "; intercept penalised (b^2 / 2)"
    return m.coef_.ravel(), float(m.intercept_[0]), t, "converged" if conv else \
        "not converged", note


def methods(caps: dict[str, int]) -> list:
    """(label, peer, runner(X, y), same problem)."""
    it = caps["max-iter"]
    out = [(f"newton ({pre})", False, lambda X, y, pre=pre: ours(X, y, pre, it), True)
           for pre in PRECONDITIONERS]
    for solver in ("newton-cg", "lbfgs"):
        for tol in (1e-4, 1e-10):
            out.append((f"LogisticRegression {solver}, tol={tol:g}", True,
                        lambda X, y, s=solver, tol=tol: sklearn_fit(X, y, s, tol, it), True))
    out.append(("LogisticRegression liblinear, tol=1e-10", True,
                lambda X, y: sklearn_fit(X, y, "liblinear", 1e-10, it), False))
    return out


def run_instance(name: str, X: np.ndarray, y: np.ndarray, caps: dict[str, int]) -> list[Row]:
    rows = []
    for label, peer, run, same_problem in methods(caps):
        try:
            w, b, t, status, note = run(X, y)
        except Exception as exc:  # reported in the table, the run goes on
            rows.append(failed(name, label, exc, peer=peer))
            continue
        rows.append(Row(name, label, t, primal(X, y, w, b), status, peer, note, same_problem))
    return rows


def instances(quick: bool, size: str | None = None, kinds: tuple[str, ...] = ("dense", "ill")):
    n, p = instance_size(size, (10_000, 50) if quick else (100_000, 100))
    for kind in kinds:
        X, y = make_instance(n, p, kind)
        yield f"{kind} n={n:.0e} p={p}", X, y
        del X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--cap", action="append", default=[], metavar="KEY=N",
                    help="max-iter=N: the peers' max_iter and our Newton steps for "
                         "preconditioner none (default 1000)")
    ap.add_argument("--size", default=None, metavar="N,P",
                    help="rows and columns of both instances (default 100000,100; --quick "
                         "10000,50)")
    ap.add_argument("--kinds", default="dense,ill", help="instances to run (dense, ill)")
    args = ap.parse_args()
    caps = parse_caps(args.cap, {"max-iter": 1000})
    kinds = tuple(k for k in args.kinds.split(",") if k in ("dense", "ill"))
    lines = preamble("L2 logistic regression: KLR newton vs scikit-learn", DISTS, args.quick)
    Xw, yw = make_instance(300, 6, "dense", seed=1)
    run_tables(lines, run_instance, ("warm-up", Xw, yw),
               instances(args.quick, args.size, kinds), caps, "logistic", args.quick)


if __name__ == "__main__":
    main()
