"""Benchmark: sketch-preconditioned Newton-CG for the squared-hinge SVM and L2 logistic primals.

Instances (synthetic, seeded; no real data set ships with the project), C = 1e4:

- ``scales``: independent Gaussian features, column scales log-spaced over 1e-3..1e3 (shuffled),
  a quarter of the columns duplicated;
- ``correlated``: the same after a random rotation of features with a spectrum decaying over
  three decades (so no diagonal scaling diagonalises the Hessian).

For each loss: Newton steps, total CG iterations, CG per Newton step, sketches taken, time,
objective and certified gap of ``sketched_newton`` with preconditioner none / diag (Jacobi) /
fd / rfd (scalar re-weighting and re-sketching, with and without the column scaling), against
scikit-learn's LinearSVC (squared hinge, primal, LIBLINEAR -s 2) and LogisticRegression
(liblinear, -s 0) at their default tolerance and at tol = 1e-12, and ReHLine (squared hinge).
Every peer fits ``fit_intercept=False`` on the data with a ones column, which is the same
objective (the intercept regularised). "rel obj" is the peer's objective minus the best
objective, over the best; iteration counts do not depend on machine load, times do.

Usage: python benchmarks/newton_svm.py [--quick]     (writes benchmarks/out/newton_svm.md)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from solvers.sketch.newton import sketched_newton  # noqa: E402

C = 1e4
VARIANTS = [
    ("none", {"preconditioner": "none", "max_iter": 300}),
    ("diag", {"preconditioner": "diag"}),
    ("fd scalar", {"preconditioner": "fd"}),
    ("rfd scalar", {"preconditioner": "rfd"}),
    ("rfd resketch", {"preconditioner": "rfd", "reweight": "resketch"}),
    ("rfd scalar, unscaled", {"preconditioner": "rfd", "scale_columns": False}),
    ("rfd resketch, unscaled", {"preconditioner": "rfd", "reweight": "resketch",
                                "scale_columns": False}),
]


def make_instance(n: int, d: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``scales`` / ``correlated`` instances of the module docstring."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    if kind == "correlated":
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        Z = (Z * np.logspace(0, -3, d)) @ Q.T
    t = Z @ rng.standard_normal(d)
    y = np.where(t + 0.5 * np.std(t) * rng.standard_normal(n) > 0, 1, -1)
    scales = np.logspace(-3, 3, d)
    rng.shuffle(scales)
    X = Z * scales
    return np.hstack([X, X[:, : d // 4]]), y


def objective(loss: str, Xa: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """1/2 ||w||^2 + C sum loss(y_i x_i'w) on the data with the ones column."""
    z = y * (Xa @ w)
    if loss == "squared_hinge":
        return 0.5 * w @ w + C * float(np.sum(np.maximum(0.0, 1.0 - z) ** 2))
    return 0.5 * w @ w + C * float(np.sum(np.logaddexp(0.0, -z)))


def peers(loss: str, X: np.ndarray, y: np.ndarray, rehline_iter: int
          ) -> list[tuple[str, float, float]]:
    """(name, time, objective) of the scikit-learn / ReHLine fits."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    fits = []
    for tol in (1e-4, 1e-12):
        if loss == "squared_hinge":
            est = LinearSVC(C=C, dual=False, tol=tol, fit_intercept=False, max_iter=100000)
            name = f"LinearSVC (liblinear -s 2), tol={tol:g}"
        else:
            est = LogisticRegression(C=C, solver="liblinear", tol=tol, fit_intercept=False,
                                     max_iter=100000)
            name = f"LogisticRegression (liblinear -s 0), tol={tol:g}"
        fits.append((name, lambda est=est: est.fit(Xa, y).coef_.ravel()))
    if loss == "squared_hinge":
        try:
            from rehline import plqERM_Ridge

            est = plqERM_Ridge(loss={"name": "squared hinge"}, C=C, tol=1e-8,
                               max_iter=rehline_iter)
            fits.append((f"ReHLine, tol=1e-8, max_iter={rehline_iter}",
                         lambda: est.fit(Xa, y).coef_.ravel()))
        except ImportError:
            pass
    out = []
    for name, fit in fits:
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = fit()
        out.append((name, time.perf_counter() - t, objective(loss, Xa, y, w)))
    return out


def section(kind: str, loss: str, X: np.ndarray, y: np.ndarray, m: int, rehline_iter: int
            ) -> list[str]:
    rows, runs = [], []
    for name, kw in VARIANTS:
        opts = {"m": m, **kw}
        if kw["preconditioner"] == "none":
            opts["cg_max_iter"] = 20 * X.shape[1] + 1000
        res = sketched_newton(X, y, C, loss=loss, **opts)
        runs.append((name, res))
    plain = runs[0][1].extra["total_cg"]
    peer = peers(loss, X, y, rehline_iter)
    best = min([r.objective for _, r in runs] + [f for _, _, f in peer])
    rows.append(f"\n### {kind}, {loss}: n = {X.shape[0]}, d = {X.shape[1]}, m = {m}, C = {C:g}\n")
    rows.append("| method | status | Newton steps | CG total | CG / step | CG ratio vs none "
                "| sketches | time (s) | rel obj | gap |")
    rows.append("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in runs:
        cg = r.extra["total_cg"]
        rows.append(
            f"| {name} | {r.termination.value} | {r.iterations} | {cg} | "
            f"{cg / max(r.iterations, 1):.1f} | {plain / max(cg, 1):.1f} | "
            f"{r.extra['n_sketches']} | {r.time:.3f} | {(r.objective - best) / best:.1e} | "
            f"{r.gap:.1e} |")
    for name, t, f in peer:
        rows.append(f"| {name} | - | - | - | - | - | - | {t:.3f} | {(f - best) / best:.1e} | - |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small instances (seconds)")
    args = parser.parse_args()
    sizes = [(1000, 30, 8)] if args.quick else [(2000, 40, 10), (20000, 200, 50)]
    lines = ["# Sketch-preconditioned Newton-CG (benchmarks/newton_svm.py)", "",
             "Quick run (small instances)." if args.quick else "Full run."]
    for n, d, m in sizes:
        for kind in ("scales", "correlated"):
            X, y = make_instance(n, d, kind)
            for loss in ("squared_hinge", "logistic"):
                block = section(kind, loss, X, y, m, 1000 if args.quick else 100000)
                print("\n".join(block), flush=True)
                lines += block
    out = os.path.join(os.path.dirname(__file__), "out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "newton_svm.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
