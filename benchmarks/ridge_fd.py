"""Benchmark: Frequent Directions preconditioners for ridge (paper section 4, Figure 3).

Data: random Fourier features (d = 1024, RBF gamma = 1.0, as scikit-learn's RBFSampler default
used by the paper) of a synthetic low-dimensional data set: X ~ N(0, I_8), targets
y = sin(x_1) + 0.5 x_2^2 + 0.1 N(0, 1). (No real data set ships with the project.)

Two feature widths: RBF gamma = 1.0 (the RBFSampler default; slow spectral decay at p = 8) and
0.05 (a smoother kernel, fast decay). The paper's guarantees depend on the sketch-error scale
min_k ||A - A_k||_F^2 / (m - k) against gamma, printed for each data set.

1. The paper's iterative experiment: m = 256, gamma in {10, 100, 1000}, 10 iterations, every
   iterative method; relative error ||x_t - x*|| / ||x*|| per iteration (x* by Cholesky).
2. Costs: one iteration vs one pass A'(A x); the FD sketch pass vs forming A'A
   (automatic, Gram and SVD shrink routes); a full solve to 1e-10 vs scikit-learn Ridge (lsqr,
   sparse_cg, sag with tol = 1e-12) and vs Cholesky, with ratios.
3. ``--scale``: n = 40,000, d = 20,000 (A is 6.4 GB in float64, built in blocks): FD-PCG vs
   Cholesky (A'A alone is 3.2 GB).

4. ``--peers``: the side-by-side ratio table (issue 11): ``Ridge(...).solve("pcg-rfd")`` to 1e-10
   (m = 256, the automatic m, and m = 256 sketching every row instead of the default row
   sample) and ``solve()`` vs numpy Cholesky and scikit-learn Ridge (cholesky, lsqr,
   sparse_cg), whole calls, at d = 1024 (n = 1e5) and d = 4096 (n = 5e4; A is 1.6 GB).

5. ``--pass``: the FD sketch pass (m = 256) against forming A'A in the same run, each route
   (covariance: the automatic one at d <= 4 m; Gram) in float64 and float32, at d = 1024
   (n = 1e5) and d = 4096 (n = 5e4); the issue-11 goal is a pass within 3x of A'A at d = 1024.

Usage: python benchmarks/ridge_fd.py [--quick] [--scale] [--no-sag] [--peers] [--pass]
Writes benchmarks/out/ridge_fd.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import _common as bc  # noqa: E402

from instances.ridge import random_fourier_features  # noqa: E402
from solvers.sketch import FrequentDirections, solve_ridge  # noqa: E402
from solvers.sketch.fd import automatic_route  # noqa: E402

ITERATIVE = ["fd", "rfd", "pcg-fd", "pcg-rfd", "ihs-gaussian", "ihs-sjlt",
             "single-gaussian", "single-sjlt"]
GOALS = {"rfd@100": 1e-10, "fd@100": 1e-6, "pcg": 1e-10}


def rff_data(n: int, d: int, *, p: int = 8, rff_gamma: float = 1.0, seed: int = 0
             ) -> tuple[np.ndarray, np.ndarray]:
    """The benchmark's data: RFF (RBF ``rff_gamma``) of X ~ N(0, I_p), y smooth + noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return random_fourier_features(X, d=d, gamma=rff_gamma, seed=seed + 1), y


def best_time(f, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def cholesky_solve(A: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    H = A.T @ A
    H[np.diag_indices_from(H)] += gamma
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, overwrite_a=True), A.T @ b)


def cholesky_solve_blocked(A: np.ndarray, b: np.ndarray, gamma: float,
                           block: int = 4000) -> np.ndarray:
    """Cholesky with A'A accumulated by BLAS syrk over row blocks (lower triangle only).

    Used for the large run: one ``A.T @ A`` call on the 40,000 x 20,000 matrix segfaulted inside
    OpenBLAS on this machine.
    """
    d = A.shape[1]
    H = np.zeros((d, d), order="F")
    for s in range(0, A.shape[0], block):
        blk = A[s:s + block]  # C-order rows = Fortran-order blk'
        H = scipy.linalg.blas.dsyrk(1.0, blk.T, beta=1.0, c=H, trans=0, lower=1,
                                    overwrite_c=1)
    H[np.diag_indices_from(H)] += gamma
    c, low = scipy.linalg.cho_factor(H, lower=True, overwrite_a=True, check_finite=False)
    return scipy.linalg.cho_solve((c, low), A.T @ b, check_finite=False)


def rel(x: np.ndarray, xs: np.ndarray) -> float:
    return float(np.linalg.norm(x - xs) / np.linalg.norm(xs))


def fmt(v: float) -> str:
    return f"{v:.1e}" if np.isfinite(v) else "inf"


def iterative_table(A, b, gammas, m, iters, xstars, sk, log) -> tuple[list[str], dict]:
    lines = ["| gamma | method | " + " | ".join(f"t={t}" for t in range(1, iters + 1)) + " |",
             "|---|---|" + "---|" * iters]
    finals = {}
    for gamma in gammas:
        for method in ITERATIVE:
            fd_based = method in ("fd", "rfd", "pcg-fd", "pcg-rfd")
            res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=iters, tol=0.0,
                              x_star=xstars[gamma], sketch=sk if fd_based else None, seed=1)
            errs = [h["rel_error"] for h in res.extra["history"]]
            errs += [float("nan")] * (iters - len(errs))
            finals[(gamma, method)] = errs[-1]
            lines.append(f"| {gamma:g} | {method} | " + " | ".join(fmt(e) for e in errs) + " |")
            log(f"  gamma={gamma:g} {method:16s} final {fmt(errs[-1])}")
    return lines, finals


def per_iteration_time(res) -> float:
    t = [h["time"] for h in res.extra["history"]]
    return float(np.median(np.diff(t))) if len(t) > 1 else float("nan")


def cost_table(A, b, gamma, m, xs, sk_time, log, *, svd_route: bool) -> list[str]:
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    t_pass = best_time(lambda: A.T @ (A @ x), 5)
    t_gram = best_time(lambda: A.T @ A, 2)
    rows = [("one pass A'(A x)", t_pass, 1.0, "")]
    sk = FrequentDirections(m).fit(A)
    for method in ("fd", "rfd", "pcg-rfd"):
        res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=10, tol=0.0, sketch=sk)
        ti = per_iteration_time(res)
        rows.append((f"one iteration of {method}", ti, ti / t_pass, "goal <= 1.5"))
    rows.append(("forming A'A", t_gram, 1.0, ""))
    rows.append((f"FD sketch pass m={m} ({sk.route_} route)", sk_time, sk_time / t_gram,
                 "goal <= 3"))
    if svd_route:
        t = time.perf_counter()
        _ = FrequentDirections(m, shrink="svd").fit(A).sketch_
        t_svd = time.perf_counter() - t
        rows.append((f"FD sketch pass m={m} (SVD shrink)", t_svd, t_svd / t_gram, ""))
    for m2, ell in ((128, 256), (256, 384)):
        t = time.perf_counter()
        _ = FrequentDirections(m2, shrink="gram", buffer_rows=ell).fit(A).sketch_
        t2 = time.perf_counter() - t
        rows.append((f"FD sketch pass m={m2}, buffer {ell} (Gram)", t2, t2 / t_gram, ""))
    log("  costs: " + ", ".join(f"{r[0]} {r[1]:.3f}s" for r in rows))
    out = ["| operation | time (s) | ratio | goal |", "|---|---|---|---|"]
    out += [f"| {r[0]} | {r[1]:.3f} | {r[2]:.2f} | {r[3]} |" for r in rows]
    return out


def full_solve_table(A, b, gamma, m, xs, log, *, sag: bool) -> list[str]:
    from sklearn.linear_model import Ridge

    rows = []
    for method in ("pcg-rfd", "pcg-fd", "rfd"):
        t = time.perf_counter()
        res = solve_ridge(A, b, gamma, method=method, m=m, max_iter=200, tol=1e-10)
        el = time.perf_counter() - t
        rows.append((f"{method} to 1e-10 (incl. sketch {res.extra['sketch_time']:.2f}s)", el,
                     rel(res.x, xs), f"{res.iterations} it, {res.termination.value}"))
    t = time.perf_counter()
    res = solve_ridge(A, b, gamma, method="cholesky")
    el = time.perf_counter() - t
    rows.append(("Cholesky (A'A + gamma I)", el, rel(res.x, xs), ""))
    solvers = ["lsqr", "sparse_cg"] + (["sag"] if sag else [])
    for solver in solvers:
        kw = {"max_iter": 100, "random_state": 0} if solver == "sag" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            est = Ridge(alpha=gamma, fit_intercept=False, solver=solver, tol=1e-12, **kw).fit(A, b)
            el = time.perf_counter() - t
        note = f"{int(np.max(est.n_iter_))} it" if est.n_iter_ is not None else ""
        if solver == "sag":
            note += " (max_iter 100 epochs)"
        rows.append((f"sklearn Ridge {solver}, tol=1e-12", el, rel(est.coef_, xs), note))
    base = rows[0][1]
    log("  full solves: " + ", ".join(f"{r[0].split(' ')[0]} {r[1]:.2f}s {fmt(r[2])}"
                                      for r in rows))
    out = ["| solver | time (s) | ratio to pcg-rfd | rel. error | note |", "|---|---|---|---|---|"]
    out += [f"| {r[0]} | {r[1]:.3f} | {r[1] / base:.2f} | {fmt(r[2])} | {r[3]} |" for r in rows]
    return out


def run_size(n, d, m, gammas, iters, log, *, sag: bool, svd_route: bool,
             rff_gamma: float = 1.0) -> list[str]:
    log(f"n={n}, d={d}, m={m}, rff_gamma={rff_gamma:g}")
    A, b = rff_data(n, d, rff_gamma=rff_gamma)
    xstars = {g: cholesky_solve(A, b, g) for g in gammas}
    t = time.perf_counter()
    sk = FrequentDirections(m).fit(A)
    _ = sk.sketch_  # the last shrink is made on first access: part of the pass
    sk_time = time.perf_counter() - t
    log(f"  FD sketch {sk_time:.2f}s, rho(RFD) {0.5 * sk.delta_sum_:.3g}")
    ks = np.arange(m)
    s2 = np.linalg.eigvalsh(A.T @ A)[::-1]
    tails = np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])
    ad = float(np.min(tails[ks] / (m - ks)))
    out = [f"## n = {n}, d = {d}, m = {m}, RFF kernel gamma = {rff_gamma:g}", "",
           f"Sketch-error scale min_k ||A - A_k||_F^2/(m-k) = {ad:.4g}: Theorem 5 (FD) needs "
           f"gamma > {2 * ad:.4g}, Theorem 6 (RFD) gamma > {ad:.4g}.", "",
           f"FD sketch (one pass, {sk.route_} route): {sk_time:.2f} s; RFD rho = "
           f"{0.5 * sk.delta_sum_:.4g}; ||A||_F^2 = {sk.frob2_:.4g}.", "",
           "### Relative error ||x_t - x*|| / ||x*|| per iteration", ""]
    lines, finals = iterative_table(A, b, gammas, m, iters, xstars, sk, log)
    out += lines + [""]
    goals = []
    if 100.0 in gammas:
        goals.append(f"RFD at gamma=100: {fmt(finals[(100.0, 'rfd')])} (goal <= 1e-10)")
        goals.append(f"FD at gamma=100: {fmt(finals[(100.0, 'fd')])} (goal <= 1e-6)")
    for g in gammas:
        goals.append(f"FD-PCG at gamma={g:g}: {fmt(finals[(g, 'pcg-fd')])}, RFD-PCG "
                     f"{fmt(finals[(g, 'pcg-rfd')])} (goal <= 1e-10)")
    out += ["Goals after 10 iterations: " + "; ".join(goals) + ".", ""]
    gamma = 100.0 if 100.0 in gammas else gammas[0]
    out += [f"### Costs (gamma = {gamma:g})", ""]
    out += cost_table(A, b, gamma, m, xstars[gamma], sk_time, log, svd_route=svd_route) + [""]
    for g in gammas:
        out += [f"### Full solve to 1e-10, gamma = {g:g}", ""]
        out += full_solve_table(A, b, g, m, xstars[g], log, sag=sag) + [""]
    return out


def m_sweep(n: int, d: int, gammas, log, *, rff_gamma: float = 1.0,
            ms=(16, 32, 64, 128, 256)) -> list[str]:
    """Full PCG-RFD solves to 1e-10 for several sketch sizes m, against Cholesky and sparse_cg."""
    from sklearn.linear_model import Ridge

    log(f"m sweep n={n}, d={d}, rff_gamma={rff_gamma:g}")
    A, b = rff_data(n, d, rff_gamma=rff_gamma)
    out = [f"## Sketch size sweep: n = {n}, d = {d}, RFF kernel gamma = {rff_gamma:g}", "",
           "PCG with the RFD preconditioner to a relative gradient of 1e-10 (time includes the "
           "sketch); the preconditioner works for any m, a smaller sketch costs less to build.",
           "", "| gamma | solver | time (s) | sketch (s) | iterations | ratio to Cholesky | "
           "rel. error |", "|---|---|---|---|---|---|---|"]
    for gamma in gammas:
        t = time.perf_counter()
        xs = cholesky_solve(A, b, gamma)
        t_chol = time.perf_counter() - t
        out.append(f"| {gamma:g} | Cholesky | {t_chol:.2f} | | | 1.00 | |")
        t = time.perf_counter()
        est = Ridge(alpha=gamma, fit_intercept=False, solver="sparse_cg", tol=1e-12).fit(A, b)
        el = time.perf_counter() - t
        out.append(f"| {gamma:g} | sklearn sparse_cg | {el:.2f} | | | {el / t_chol:.2f} | "
                   f"{fmt(rel(est.coef_, xs))} |")
        for m in ms:
            t = time.perf_counter()
            res = solve_ridge(A, b, gamma, method="pcg-rfd", m=m, max_iter=500, tol=1e-10)
            el = time.perf_counter() - t
            out.append(f"| {gamma:g} | pcg-rfd m={m} | {el:.2f} | {res.extra['sketch_time']:.2f} "
                       f"| {res.iterations} ({res.termination.value}) | {el / t_chol:.2f} | "
                       f"{fmt(rel(res.x, xs))} |")
            log(out[-1])
    return out + [""]


def run_scale(log, n=40_000, d=20_000, m=256, gamma=100.0) -> list[str]:
    """Large run: A built in row blocks (6.4 GB); FD-PCG (O(m d) beyond data) vs Cholesky."""
    log(f"scale run n={n}, d={d}")
    rng = np.random.default_rng(0)
    p = 8
    X = rng.standard_normal((n, p))
    b = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    W = np.random.default_rng(1).normal(scale=np.sqrt(2.0), size=(p, d))
    u = np.random.default_rng(2).uniform(0, 2 * np.pi, size=d)
    A = np.empty((n, d))
    t = time.perf_counter()
    for s in range(0, n, 2000):
        blk = X[s:s + 2000] @ W
        blk += u
        np.cos(blk, out=blk)
        blk *= np.sqrt(2.0 / d)
        A[s:s + 2000] = blk
    log(f"  data built in {time.perf_counter() - t:.1f}s")
    x = np.ones(d)
    t_pass = best_time(lambda: A.T @ (A @ x), 2)
    t = time.perf_counter()
    res = solve_ridge(A, b, gamma, method="pcg-rfd", m=m, max_iter=100, tol=1e-10, verbose=True)
    t_pcg = time.perf_counter() - t
    log(f"  pcg-rfd {t_pcg:.1f}s ({res.iterations} it, sketch {res.extra['sketch_time']:.1f}s)")
    t = time.perf_counter()
    xs = cholesky_solve_blocked(A, b, gamma)
    t_chol = time.perf_counter() - t
    log(f"  cholesky {t_chol:.1f}s")
    out = [f"## Scale: n = {n}, d = {d}, m = {m}, gamma = {gamma:g}", "",
           "| solver | time (s) | ratio to pcg-rfd | rel. error vs Cholesky | extra memory |",
           "|---|---|---|---|---|",
           f"| pcg-rfd to 1e-10 | {t_pcg:.1f} | 1.00 | {fmt(rel(res.x, xs))} | "
           f"O(m d) = {2 * m * d * 8 / 1e6:.0f} MB buffer |",
           f"| Cholesky | {t_chol:.1f} | {t_chol / t_pcg:.2f} | 0 | "
           f"d x d = {d * d * 8 / 1e9:.1f} GB |",
           "", f"One pass A'(A x): {t_pass:.2f} s; PCG: {res.iterations} iterations, sketch "
           f"{res.extra['sketch_time']:.1f} s.", ""]
    return out


def ridge_objective(A: np.ndarray, b: np.ndarray, gamma: float, x: np.ndarray) -> float:
    """f(x) = 1/2 ||A x - b||^2 + gamma/2 ||x||^2."""
    r = A @ x - b
    return float(0.5 * r @ r + 0.5 * gamma * x @ x)


def numpy_cholesky(A: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """x = (A'A + gamma I)^{-1} A'b by numpy's Cholesky factor L and two triangular solves."""
    H = A.T @ A
    H[np.diag_indices_from(H)] += gamma
    L = np.linalg.cholesky(H)
    z = scipy.linalg.solve_triangular(L, A.T @ b, lower=True, check_finite=False)
    return scipy.linalg.solve_triangular(L.T, z, lower=False, check_finite=False)


def peer_rows(name: str, A: np.ndarray, b: np.ndarray, gamma: float, m: int) -> list:
    """Ours (Ridge(...).solve("pcg-rfd", tol 1e-10) and solve()) vs numpy Cholesky and
    scikit-learn Ridge cholesky / lsqr / sparse_cg (tol 1e-12); whole calls."""
    from sklearn.linear_model import Ridge as SkRidge

    from optmodels import Ridge

    runs = [(f"Ridge.solve('pcg-rfd', m={m}, tol=1e-10)", False,
             lambda: Ridge(A, b, alpha=gamma).solve("pcg-rfd", m=m, tol=1e-10, max_iter=500)),
            ("Ridge.solve('pcg-rfd', tol=1e-10) (automatic m)", False,
             lambda: Ridge(A, b, alpha=gamma).solve("pcg-rfd", tol=1e-10, max_iter=500)),
            (f"Ridge.solve('pcg-rfd', m={m}, every row sketched)", False,
             lambda: Ridge(A, b, alpha=gamma).solve("pcg-rfd", m=m, tol=1e-10, max_iter=500,
                                                    sketch_rows=A.shape[0])),
            ("Ridge.solve() (full)", False, lambda: Ridge(A, b, alpha=gamma).solve()),
            ("numpy Cholesky", True, lambda: numpy_cholesky(A, b, gamma))]
    for solver in ("cholesky", "lsqr", "sparse_cg"):
        est = SkRidge(alpha=gamma, fit_intercept=False, solver=solver, tol=1e-12)
        runs.append((f"sklearn Ridge {solver}", True, lambda est=est: est.fit(A, b).coef_))
    rows, xs, its = [], {}, {}
    for label, peer, run in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, t = bc.timed(run)
        x = np.asarray(getattr(out, "x", out), float)
        status = ("certified" if out.certified else out.termination.value) if hasattr(
            out, "certified") else "ok"
        xs[label] = x
        its[label] = f"{out.iterations} it, " if hasattr(out, "certified") else ""
        rows.append(bc.Row(name, label, t, ridge_objective(A, b, gamma, x), status, peer))
    ref = xs["numpy Cholesky"]
    for r in rows:
        r.note = f"{its[r.method]}rel. error vs Cholesky {fmt(rel(xs[r.method], ref))}"
    return rows


def pass_section(sizes: list[tuple[int, int]], m: int, log) -> list[str]:
    """The FD sketch pass per route and precision against forming A'A, in one run (best of 2;
    the Gram route at d = 4096 once)."""
    out = [f"## The FD sketch pass (m = {m}) against forming A'A", "",
           "| instance | operation | seconds | ratio to A'A | shrinks |", "|---|---|---|---|---|"]
    for n, d in sizes:
        A, _ = rff_data(n, d)
        t_gram = best_time(lambda A=A: A.T @ A, 2)
        out.append(f"| n={n:,} d={d} | forming A'A (numpy, BLAS threads) | {t_gram:.3f} | 1.00 | |")
        for shrink in ("covariance", "gram"):
            for dtype in ("float64", "float32"):
                def run(shrink=shrink, dtype=dtype, A=A):
                    sk = FrequentDirections(m, shrink=shrink, dtype=dtype).fit(A)
                    _ = sk.sketch_  # the last shrink is made on first access: part of the pass
                    return sk
                sk = run()
                t = best_time(run, 1 if (shrink == "gram" and d > 2048) else 2)
                auto = " (automatic)" if automatic_route(d, m) == shrink else ""
                out.append(f"| n={n:,} d={d} | FD pass, {shrink}{auto}, {dtype} | {t:.3f} | "
                           f"{t / t_gram:.2f} | {sk.n_shrinks_} |")
                log(out[-1])
        del A
    return out + [""]


def peers_section(sizes: list[tuple[int, int]], gammas: list[float], m: int, log) -> list[str]:
    out = [f"## Side by side: PCG-RFD (m = {m}) to 1e-10 vs Cholesky, lsqr, sparse_cg", "",
           "(RFF features of N(0, I_8) data, RBF width 1.0; objective 1/2||Ax-b||^2 + "
           "gamma/2||x||^2)", "", *bc.HEADER]
    log("\n".join(out))
    for n, d in sizes:
        A, b = rff_data(n, d)
        for gamma in gammas:
            rows = peer_rows(f"RFF n={n:,} d={d} gamma={gamma:g}", A, b, gamma, m)
            bc.print_instance(rows, out)
        del A, b
    return out + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (n=2000, d=256, m=64)")
    ap.add_argument("--scale", action="store_true", help="also run n=40,000, d=20,000")
    ap.add_argument("--no-sag", action="store_true", help="skip scikit-learn's sag")
    ap.add_argument("--scale-only", action="store_true",
                    help="only the n=40,000, d=20,000 run, to out/ridge_fd_scale.md")
    ap.add_argument("--sweep", action="store_true",
                    help="only the sketch-size sweep (n=1e5), to out/ridge_fd_msweep.md")
    ap.add_argument("--peers", action="store_true",
                    help="only the side-by-side table (d = 1024, n = 1e5; d = 4096, n = 5e4) "
                         "vs numpy Cholesky and sklearn Ridge, to out/ridge_fd_peers.md")
    ap.add_argument("--pass", dest="pass_only", action="store_true",
                    help="only the FD sketch pass vs forming A'A (d = 1024, n = 1e5; d = 4096, "
                         "n = 5e4), to out/ridge_fd_pass.md")
    ap.add_argument("--sizes", type=str, default="", help="comma list of n (default 1e4,1e5)")
    ap.add_argument("--rff-gammas", type=str, default="1.0,0.05",
                    help="RBF widths of the features (1.0 = RBFSampler default; 0.05 = smoother)")
    args = ap.parse_args()

    def log(msg: str) -> None:
        print(msg, flush=True)

    gammas = [10.0, 100.0, 1000.0]
    out = ["# Frequent Directions ridge benchmark", "",
           f"Machine: {os.cpu_count()} cores; OPENBLAS_CORETYPE="
           f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}. Times are wall clock on a shared "
           "machine (other jobs were running): compare ratios within one table.", ""]
    os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "out", "ridge_fd.md")

    def save() -> None:  # after every section, so a long run leaves partial results
        with open(path, "w") as fh:
            fh.write("\n".join(out) + "\n")

    if args.scale_only:
        path = os.path.join(os.path.dirname(__file__), "out", "ridge_fd_scale.md")
        out += run_scale(log)
        save()
        print("\n".join(out))
        return
    if args.pass_only:
        path = os.path.join(os.path.dirname(__file__), "out", "ridge_fd_pass.md")
        sizes = [(2000, 256)] if args.quick else [(100_000, 1024), (50_000, 4096)]
        out += pass_section(sizes, 64 if args.quick else 256, log)
        save()
        print("\n".join(out))
        return
    if args.peers:
        path = os.path.join(os.path.dirname(__file__), "out", "ridge_fd_peers.md")
        sizes = [(2000, 256), (3000, 512)] if args.quick else [(100_000, 1024), (50_000, 4096)]
        out += peers_section(sizes, [10.0, 100.0, 1000.0], 64 if args.quick else 256, log)
        save()
        print(f"written to {path}")
        return
    if args.sweep:
        path = os.path.join(os.path.dirname(__file__), "out", "ridge_fd_msweep.md")
        n_sweep = 2000 if args.quick else 100_000
        d_sweep = 256 if args.quick else 1024
        out += m_sweep(n_sweep, d_sweep, [10.0, 100.0, 1000.0], log,
                       ms=(8, 16, 32, 64) if args.quick else (16, 32, 64, 128, 256))
        save()
        print("\n".join(out))
        return
    if args.quick:
        out += run_size(2000, 256, 64, gammas, 10, log, sag=not args.no_sag, svd_route=True)
        save()
    else:
        sizes = [int(float(s)) for s in args.sizes.split(",")] if args.sizes else [10_000, 100_000]
        for rg in [float(g) for g in args.rff_gammas.split(",")]:
            for n in sizes:
                out += run_size(n, 1024, 256, gammas, 10, log, sag=not args.no_sag,
                                svd_route=n <= 20_000 and rg == 1.0, rff_gamma=rg)
                save()
    if args.scale:
        out += run_scale(log)
        save()
    print("\n".join(out))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
