"""Linear hinge SVM by the interior point (strategy 'ipm': factored Newton systems, or CG
preconditioned by a sketch) against LinearSVC, ReHLine, AID and the full QP, in one run.

Problem: min_{w,b} 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (x_i'w + b)), b unpenalized, C = 1.
Ours (whole calls ``SVM(X, y, C=1, kernel="linear").solve(...)``, certified): ``ipm`` at its
defaults (linear_solver='auto': cholesky for p <= 1000), ``ipm`` with linear_solver='cg' and
preconditioner rfd (reweight='active'), diag (Jacobi) and none, ``aid`` and the full Clarabel
QP. Peers: scikit-learn's LinearSVC at its default tol (1e-4) with the hinge loss
(dual=True) and with dual=False (which LIBLINEAR only offers for the *squared* hinge: another
problem, time only), and ReHLine (``plq_Ridge_Classifier``, tol 1e-4). The peers penalize the
intercept (a constant column): their objective is ours at their (w, b). The note of an ipm row
gives its IPM steps and linear solver (CG iterations per step).
Instances (seeded Gaussian, labels from a noisy linear rule): "dense" (n x p standard normal)
and "ill" (the same with column scales log-spaced over 1e-3..1e3, shuffled, and p/10 columns
duplicated).

    python benchmarks/svm_ipm.py --quick    # n = 3000, p = 30
    python benchmarks/svm_ipm.py            # n = 10^5, p = 100
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import Row, failed, instance_size, parse_caps, run_tables, skipped, timed
from _common import preamble as _preamble
from linear_svm import C, rehline_fit, svm_objective

DISTS = ["optmodels", "clarabel", "rehline", "scikit-learn", "numpy"]


def ours(X: np.ndarray, y: np.ndarray, strategy: str, **options):
    from optmodels import SVM

    r, t = timed(SVM(X, y, C=C, kernel="linear").solve, strategy, **options)
    status = "certified" if r.certified and r.is_optimal else r.termination.value
    note = ""
    if strategy == "ipm":
        cg = r.extra["total_cg"]
        note = (f"{r.iterations} steps, cholesky" if r.extra["linear_solver"] == "cholesky"
                else f"{r.iterations} steps, {cg / max(r.iterations, 1):.1f} CG / step")
    b = r.extra.get("b", r.extra.get("intercept"))
    return np.asarray(r.x, float), float(b), t, status, note


def linearsvc_fit(X: np.ndarray, y: np.ndarray, dual: bool):
    from sklearn.svm import LinearSVC

    kw = dict(loss="hinge", dual=True) if dual else dict(loss="squared_hinge", dual=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = timed(LinearSVC(C=C, max_iter=20_000, **kw).fit, X, y)
    conv = not any("converge" in str(c.message) for c in caught)
    return m.coef_.ravel(), float(m.intercept_[0]), t, "converged" if conv else "not converged", ""


def _peer(fit):
    def run(X, y):
        w, b, t, status = fit(X, y)
        return w, b, t, status, ""

    return run


METHODS = [  # (label, cap key, peer, runner, solves our problem)
    ("ipm auto (solve('ipm'))", "ipm", False, lambda X, y: ours(X, y, "ipm"), True),
    ("ipm cg rfd", "ipm-cg", False, lambda X, y: ours(X, y, "ipm", linear_solver="cg"), True),
    ("ipm cg diag", "ipm-cg", False,
     lambda X, y: ours(X, y, "ipm", linear_solver="cg", preconditioner="diag"), True),
    ("ipm cg none", "ipm-none", False,
     lambda X, y: ours(X, y, "ipm", linear_solver="cg", preconditioner="none"), True),
    ("AID (solve('aid'))", "aid", False, lambda X, y: ours(X, y, "aid"), True),
    ("full QP (solve())", "full", False, lambda X, y: ours(X, y, "full"), True),
    ("ReHLine tol 1e-4", "rehline", True, _peer(lambda X, y: rehline_fit(X, y, 1e-4)), True),
    ("LinearSVC hinge, dual=True", "linearsvc", True, lambda X, y: linearsvc_fit(X, y, True),
     True),
    ("LinearSVC squared hinge, dual=False", "linearsvc", True,
     lambda X, y: linearsvc_fit(X, y, False), False),
]


def run_instance(name: str, X: np.ndarray, y: np.ndarray, caps: dict[str, int]) -> list[Row]:
    rows = []
    for label, key, peer, run, same_problem in METHODS:
        if X.shape[0] > caps.get(key, 10**12):
            rows.append(skipped(name, label, f"skipped: n > {caps[key]:,} (--cap)", peer=peer))
            continue
        try:
            w, b, t, status, note = run(X, y)
        except Exception as exc:  # reported in the table, the run goes on
            rows.append(failed(name, label, exc, peer=peer))
            continue
        obj = svm_objective(X, y, w, b) if same_problem else float("nan")
        if not same_problem:
            note = "squared hinge: another problem, time only"
        elif peer:
            note = "intercept penalized"
        rows.append(Row(name, label, t, obj, status, peer, note, same_problem))
    return rows


def make_instance(n: int, p: int, ill: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The dense / ill-conditioned instances of the module docstring."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X @ rng.standard_normal(p) + 0.7 * rng.standard_normal(n) > 0, 1.0, -1.0)
    if ill:
        scales = np.logspace(-3, 3, p)
        rng.shuffle(scales)
        X = X * scales
        X = np.hstack([X, X[:, : max(1, p // 10)]])
    return np.ascontiguousarray(X), y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--cap", action="append", default=[], metavar="KEY=N",
                    help="skip a method above n = N; keys ipm (auto), ipm-cg (rfd, diag), "
                         "ipm-none, aid, full, rehline, linearsvc (no caps by default)")
    ap.add_argument("--size", default=None, metavar="N,P",
                    help="rows and columns of both instances (default 100000,100; --quick "
                         "3000,30)")
    ap.add_argument("--kinds", default="dense,ill", help="instances to run (dense, ill)")
    args = ap.parse_args()
    caps = parse_caps(args.cap, {})
    kinds = [k for k in args.kinds.split(",") if k in ("dense", "ill")]
    n, p = instance_size(args.size, (3000, 30) if args.quick else (100_000, 100))
    lines = _preamble("Linear hinge SVM: interior point with sketched CG vs peers", DISTS,
                      args.quick)
    instances = ((f"{kind} n={n:,} p={p}", *make_instance(n, p, kind == "ill"))
                 for kind in kinds)
    run_tables(lines, run_instance, ("warm-up", *make_instance(300, 5, False)), instances,
               caps, "svm_ipm", args.quick)


if __name__ == "__main__":
    main()
