"""AID against the fastest full solves, side by side in one run.

LAD (X normal, y = X beta + 1 + Laplace noise, 5% outliers with 20x noise):
    AID (solvers.aid.aid_lad, default settings) to its certificate, against the full LAD LP in
    dual form (max y'u s.t. [X 1]'u = 0, -1 <= u <= 1) built from arrays and solved by HiGHS's
    interior point (with crossover), the fastest full LAD solve measured (docs/problems/lad.md).
Linear SVM (two Gaussian clouds, p = 20, C = 1):
    AID (solvers.aid.aid_svm, Clarabel subsolver) against the full primal QP by Clarabel
    (direct API, same builder), HiGHS's QP solver (where its projected time is under the
    limit), and scikit-learn's LinearSVC: dual=True with the hinge loss (our problem, but
    liblinear also penalises the intercept; intercept_scaling=100 makes that small; tol=1e-6,
    max_iter=20,000) and
    dual=False (the *squared* hinge: a different problem, time only).

Each solve runs in a forked child; time is wall clock inside the child (data generation
excluded); memory is the child's peak RSS minus its RSS at the fork (VmHWM - VmRSS from
/proc/self/status), i.e. what the solve added on top of the data.  A full solve whose time
projected from a smaller measured size exceeds --limit seconds is skipped and listed as such.

    python benchmarks/aid.py            # n = 1e5 and 1e6
    python benchmarks/aid.py --quick    # n = 2e4 and 1e5 (LAD p = 10 only)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from solvers.aid import aid_lad, aid_svm  # noqa: E402
from solvers.aid.lad_lp import lad_dual_lp, new_highs  # noqa: E402
from solvers.aid.svm_qp import linear_svm_primal  # noqa: E402


# ----------------------------------------------------------------------------- data
def lad_data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    e = rng.laplace(size=n)
    out = rng.random(n) < 0.05
    e[out] *= 20.0
    return X, X @ rng.normal(size=p) + 1.0 + e


def svm_data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    mu = rng.normal(size=p)
    mu *= 1.5 / np.linalg.norm(mu)
    return rng.normal(size=(n, p)) + y[:, None] * mu[None, :], y


# ----------------------------------------------------------------------------- solves
def lad_objective(X, y, beta, b):
    return float(np.abs(y - X @ beta - b).sum())


def svm_objective(X, y, C, w, b):
    return float(0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum())


def run_aid_lad(X, y):
    r = aid_lad(X, y)
    return dict(obj=r.objective, iters=r.iterations, clusters=r.extra["n_clusters_final"],
                ok=r.extra["certified"], note=r.termination.value)


def run_full_lad(X, y):
    n = X.shape[0]
    h = new_highs()
    h.setOptionValue("solver", "ipm")
    h.passModel(lad_dual_lp(np.column_stack([X, np.ones(n)]), y))
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    coef = np.array(h.getSolution().row_dual)
    return dict(obj=lad_objective(X, y, coef[:-1], coef[-1]), ok=status == "Optimal", note=status)


def run_aid_svm(X, y, C):
    r = aid_svm(X, y, C=C)
    return dict(obj=r.objective, iters=r.iterations, clusters=r.extra["n_clusters_final"],
                ok=r.extra["certified"], note=r.termination.value)


def run_full_svm(X, y, C, subsolver):
    out = linear_svm_primal(X, y, np.ones(len(y)), C, subsolver=subsolver, tol=1e-8)
    ok = out.termination.value == "optimal" and out.w is not None
    obj = svm_objective(X, y, C, out.w, out.b) if out.w is not None else float("nan")
    return dict(obj=obj, ok=ok, note=out.raw)


def run_linearsvc(X, y, C, dual):
    from sklearn.svm import LinearSVC

    kw = dict(loss="hinge", dual=True) if dual else dict(loss="squared_hinge", dual=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = LinearSVC(C=C, tol=1e-6, max_iter=20_000, intercept_scaling=100.0, **kw).fit(X, y)
    conv = not any("converge" in str(c.message) for c in caught)
    obj = svm_objective(X, y, C, m.coef_.ravel(), float(m.intercept_[0]))
    note = "hinge" if dual else "squared hinge: another problem"
    note += "" if conv else ", not converged"
    return dict(obj=obj if dual else float("nan"), ok=conv, note=note)


# ----------------------------------------------------------------------------- harness
def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def _child(conn, fn, args):
    try:
        base = _rss("VmRSS:")
        t = time.perf_counter()
        out = fn(*args)
        out["time"] = time.perf_counter() - t
        out["mem"] = max(_rss("VmHWM:") - base, 0)
        conn.send(out)
    except Exception:  # pragma: no cover - reported in the table
        conn.send(dict(error=traceback.format_exc(limit=2)))
    conn.close()


def measure(fn, *args, timeout: float = 900.0) -> dict:
    ctx = mp.get_context("fork")
    a, b = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(b, fn, args))
    proc.start()
    out = a.recv() if a.poll(timeout) else dict(error=f"timeout {timeout:.0f}s")
    proc.join(5)
    if proc.is_alive():
        proc.terminate()
    return out


def projected(known: dict, name: str, n: int, exponent: float) -> float | None:
    """Time at n projected from the largest smaller n measured for ``name``."""
    sizes = [m for (nm, m) in known if nm == name and m < n]
    if not sizes:
        return None
    m = max(sizes)
    return known[(name, m)] * (n / m) ** exponent


def fmt_row(cells):
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (2e4, 1e5)")
    ap.add_argument("--limit", type=float, default=300.0, help="skip full solves projected above")
    ap.add_argument("--only", choices=["lad", "svm"], default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "aid.md"))
    args = ap.parse_args()
    sizes = [20_000, 100_000] if args.quick else [100_000, 1_000_000]
    lad_ps = [10] if args.quick else [10, 50]
    header = ["problem", "n", "p", "method", "time s", "peak mem MB", "iterations",
              "final clusters", "objective", "rel diff vs best", "speed vs AID", "note"]
    lines = [fmt_row(header), fmt_row(["---"] * len(header))]
    known: dict = {}

    def table(problem, n, p, rows):
        objs = [r["obj"] for _, r in rows if "obj" in r and np.isfinite(r["obj"])]
        best = min(objs) if objs else float("nan")
        t_aid = rows[0][1].get("time", float("nan"))
        for name, r in rows:
            if "error" in r or "skipped" in r:
                msg = r.get("skipped") or r["error"].strip().splitlines()[-1][:80]
                lines.append(fmt_row([problem, f"{n:.0e}", str(p), name] + ["-"] * 7 + [msg]))
                continue
            rel = (r["obj"] - best) / abs(best) if np.isfinite(r["obj"]) else float("nan")
            lines.append(fmt_row([
                problem, f"{n:.0e}", str(p), name, f"{r['time']:.2f}", f"{r['mem'] / 2**20:.0f}",
                str(r.get("iters", "")), str(r.get("clusters", "")),
                f"{r['obj']:.10g}" if np.isfinite(r["obj"]) else "n/a",
                f"{rel:.1e}" if np.isfinite(rel) else "n/a",
                f"{r['time'] / t_aid:.1f}x" if name != "AID" else "1.0x",
                r.get("note", "")]))
        print("\n".join(lines[-len(rows):]), flush=True)

    if args.only in (None, "lad"):
        for p in lad_ps:
            for n in sizes:
                X, y = lad_data(n, p)
                rows = [("AID", measure(run_aid_lad, X, y))]
                proj = projected(known, f"lad-ipm-{p}", n, 1.2)
                if proj is not None and proj > args.limit:
                    skip = dict(skipped=f"skipped: projected {proj:.0f}s")
                    rows.append(("HiGHS IPM, LP dual", skip))
                else:
                    r = measure(run_full_lad, X, y)
                    rows.append(("HiGHS IPM, LP dual", r))
                    if "time" in r:
                        known[(f"lad-ipm-{p}", n)] = r["time"]
                table("LAD", n, p, rows)
                del X, y
    if args.only in (None, "svm"):
        C, p = 1.0, 20
        Xs, ys = svm_data(5_000, p)
        r = measure(run_full_svm, Xs, ys, C, "highs")
        if "time" in r:
            known[("svm-highs", 5_000)] = r["time"]
        for n in sizes:
            X, y = svm_data(n, p)
            rows = [("AID", measure(run_aid_svm, X, y, C))]
            for name, key, fn, fargs, expo in [
                ("Clarabel QP", "svm-clarabel", run_full_svm, (X, y, C, "clarabel"), 1.1),
                ("HiGHS QP", "svm-highs", run_full_svm, (X, y, C, "highs"), 1.94),
                ("LinearSVC dual=True", "svc-dual", run_linearsvc, (X, y, C, True), 1.3),
                ("LinearSVC dual=False", "svc-primal", run_linearsvc, (X, y, C, False), 1.1),
            ]:
                proj = projected(known, key, n, expo)
                if proj is not None and proj > args.limit:
                    rows.append((name, dict(skipped=f"skipped: projected {proj:.0f}s")))
                    continue
                r = measure(fn, *fargs)
                if "time" in r:
                    known[(key, n)] = r["time"]
                rows.append((name, r))
            table("SVM", n, p, rows)
            del X, y
    text = "# AID benchmark\n\n" + "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
