"""AID-LAD and sketched ridge on data kept on disk in chunked .npy files, read lazily by Dask.

Full run (long; not a test): LAD with 5*10^7 rows (p = 10) in chunks of 10^6 rows, ridge with
n = 10^6, d = 2000 by pcg-rfd (m = 256), the weighted linear SVM by AID with 10^7 rows (p = 10)
in chunks of 10^6. ``--quick`` runs the same pipeline on small data
(a few seconds) and checks the answers against the in-memory solvers.

    python benchmarks/dask_scale.py --quick [--workers 2 | --scheduler tcp://host:8786]

The full run (about 4.4 GB of LAD chunks and 16 GB of ridge chunks on disk; run it on a quiet
machine, it takes minutes):

    python benchmarks/dask_scale.py --workers 2 --memory-limit 4GB --dir /big/disk/chunks

The data are written chunk by chunk (never whole in memory) to ``--dir`` (a temporary
directory by default) and read back with ``np.load(..., mmap_mode="r")`` inside the tasks;
with ``--workers N`` each worker of the LocalCluster is bounded by ``--memory-limit`` (Dask
spills to disk, then pauses the worker, before exceeding it). Only ``--quick`` loads the data
in memory, for its checks against the in-memory solvers.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import dask
import dask.array as da
import numpy as np

from solvers.aid.lad import aid_lad
from solvers.aid.svm import aid_svm
from solvers.sketch import solve_ridge


def write_chunks(folder: str, name: str, n: int, chunk: int, make) -> list[str]:
    """Write ``make(i, rows)`` (a 2-D array) for each chunk i to ``folder/name-i.npy``."""
    paths = []
    for i, start in enumerate(range(0, n, chunk)):
        path = os.path.join(folder, f"{name}-{i:05d}.npy")
        np.save(path, make(i, min(chunk, n - start)))
        paths.append(path)
    return paths


def _load(path: str) -> np.ndarray:
    return np.asarray(np.load(path, mmap_mode="r"))


def lazy_rows(paths: list[str], rows: list[int], width: int) -> da.Array:
    """The stacked chunks as one Dask array (nothing read yet)."""
    return da.concatenate([da.from_delayed(dask.delayed(_load)(p), (r, width), dtype=float)
                           for p, r in zip(paths, rows, strict=True)])


def lad_chunk(p: int, seed: int):
    beta = np.random.default_rng(seed).standard_normal(p)

    def make(i: int, rows: int) -> np.ndarray:
        rng = np.random.default_rng([seed, i])
        X = rng.standard_normal((rows, p))
        return np.column_stack([X, X @ beta + rng.laplace(size=rows)])
    return make


def ridge_chunk(d: int, seed: int, spectrum: str = "power"):
    """Rows of A with column scales ``decay`` ("power": 1 / j, the fast spectral decay FD
    sketches capture; "linear": 1 .. 0.05, a nearly flat spectrum where they do not) and
    b = A x0 + noise."""
    x0 = np.random.default_rng(seed).standard_normal(d)
    decay = (1.0 / np.arange(1, d + 1) if spectrum == "power"
             else np.linspace(1.0, 0.05, d))

    def make(i: int, rows: int) -> np.ndarray:
        rng = np.random.default_rng([seed, i])
        A = rng.standard_normal((rows, d)) * decay
        return np.column_stack([A, A @ x0 + rng.standard_normal(rows)])
    return make


def svm_chunk(p: int, seed: int):
    """Columns: X (p), a label in {-1, +1} (noisy linear rule), a weight in [0.5, 1.5]."""
    w0 = np.random.default_rng(seed).standard_normal(p)

    def make(i: int, rows: int) -> np.ndarray:
        rng = np.random.default_rng([seed, i])
        X = rng.standard_normal((rows, p))
        y = np.where(X @ w0 + 0.5 * rng.standard_normal(rows) > 0, 1.0, -1.0)
        return np.column_stack([X, y, rng.uniform(0.5, 1.5, rows)])
    return make


def run_svm(args: argparse.Namespace, folder: str) -> None:
    """Weighted linear-SVM AID on the lazy chunks (and, with --quick, in memory)."""
    n, p, chunk = (40_000, 5, 10_000) if args.quick else (10_000_000, 10, 1_000_000)
    paths = write_chunks(folder, "svm", n, chunk, svm_chunk(p, 2))
    rows = [min(chunk, n - s) for s in range(0, n, chunk)]
    Z = lazy_rows(paths, rows, p + 2)
    t = time.perf_counter()
    res = aid_svm(Z[:, :p], Z[:, p], sample_weight=Z[:, p + 1], n_clusters=400)
    print(f"AID-SVM (linear, weighted) n={n} p={p} chunks={len(rows)}: {res.termination.name} "
          f"P={res.objective:.10g} iterations={res.iterations} {time.perf_counter() - t:.1f}s")
    if args.quick:
        full = np.vstack([_load(q) for q in paths])
        t = time.perf_counter()
        mem = aid_svm(full[:, :p], full[:, p], sample_weight=full[:, p + 1], n_clusters=400)
        print(f"  in memory: {mem.termination.name} P={mem.objective:.10g} "
              f"{time.perf_counter() - t:.1f}s  relative difference "
              f"{abs(mem.objective - res.objective) / mem.objective:.1e}")


def run(args: argparse.Namespace, folder: str) -> None:
    if "lad" in args.only:
        run_lad(args, folder)
    if "ridge" in args.only:
        run_ridge(args, folder)
    if "svm" in args.only:
        run_svm(args, folder)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB; Linux reports KB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_lad(args: argparse.Namespace, folder: str) -> None:
    """AID-LAD on the lazy chunks (and, with --quick, in memory)."""
    n_lad, p, c_lad = (60_000, 5, 10_000) if args.quick else (args.lad_rows, 10, 1_000_000)
    t = time.perf_counter()
    paths = write_chunks(folder, "lad", n_lad, c_lad, lad_chunk(p, 0))
    print(f"wrote {len(paths)} LAD chunks in {time.perf_counter() - t:.1f}s")
    rows = [min(c_lad, n_lad - s) for s in range(0, n_lad, c_lad)]
    Z = lazy_rows(paths, rows, p + 1)
    t = time.perf_counter()
    res = aid_lad(Z[:, :p], Z[:, p], n_clusters=1000)
    print(f"AID-LAD n={n_lad} p={p} chunks={len(rows)}: {res.termination.name} "
          f"E={res.objective:.10g} iterations={res.iterations} {time.perf_counter() - t:.1f}s "
          f"(peak RSS of this process {peak_rss_mb():.0f} MB)")
    if args.quick:
        full = np.vstack([_load(q) for q in paths])
        mem = aid_lad(full[:, :p], full[:, p], n_clusters=1000)
        print(f"  in memory: {mem.termination.name} E={mem.objective:.10g}  relative "
              f"difference {abs(mem.objective - res.objective) / mem.objective:.1e}")


RIDGE_TOL = 1e-12
"""The ridge runs' tol on the relative gradient. tol = 1e-10 left a relative error of 2.9e-8 in
x at n = 10^6, d = 2000 (column scales 1/j, gamma = 10): the error in x can be
``(||A'A x|| + gamma ||x|| + ||A'b||) / (gamma ||x||)`` (about 10^4 here) times the relative
gradient; 1e-12 brings the certified bound ``extra["x_error_bound"]`` below the 1e-8 asked
(measured 2026-12-01: bound 3.5e-9 / error 1.2e-10 for 1/j, 1.3e-8 / 9.0e-13 for 1..0.05)."""


def run_ridge(args: argparse.Namespace, folder: str) -> None:
    """Ridge by pcg-rfd and by method="cholesky" (one A'A pass) on the same lazy chunks; the
    relative error of pcg-rfd's x against the Cholesky solution and its certified bound."""
    n_r, d, c_r = (20_000, 50, 5_000) if args.quick else (1_000_000, 2000, 50_000)
    gamma = 10.0
    t = time.perf_counter()
    paths = write_chunks(folder, "ridge", n_r, c_r, ridge_chunk(d, 1, args.ridge_spectrum))
    print(f"ridge data: column scales {args.ridge_spectrum}, written in "
          f"{time.perf_counter() - t:.1f}s")
    rows = [min(c_r, n_r - s) for s in range(0, n_r, c_r)]
    Z = lazy_rows(paths, rows, d + 1)
    m = 32 if args.quick else 256
    t = time.perf_counter()
    exact = solve_ridge(Z[:, :d], Z[:, d], gamma, method="cholesky", tol=RIDGE_TOL)
    t_exact = time.perf_counter() - t
    print(f"ridge cholesky n={n_r} d={d}: {exact.termination.name} {t_exact:.1f}s "
          f"(relative gradient {exact.extra['grad_norm']:.1e})")
    t = time.perf_counter()
    res = solve_ridge(Z[:, :d], Z[:, d], gamma, method="pcg-rfd", m=m, max_iter=100,
                      tol=RIDGE_TOL, x_star=exact.x)
    t_pcg = time.perf_counter() - t
    print(f"ridge pcg-rfd n={n_r} d={d} m={m} tol={RIDGE_TOL:g}: {res.termination.name} "
          f"iterations={res.iterations} passes={res.extra['passes']} {t_pcg:.1f}s (sketch of "
          f"{res.extra['sketch_rows']} rows {res.extra['sketch_time']:.1f}s; peak RSS of this "
          f"process {peak_rss_mb():.0f} MB)")
    print(f"  relative error of x vs cholesky {res.extra['rel_error']:.1e} (certified bound "
          f"{res.extra.get('x_error_bound', float('nan')):.1e}); time ratio pcg-rfd / cholesky "
          f"{t_pcg / t_exact:.2f}")
    for it in res.extra["history"][:: max(1, len(res.extra["history"]) // 8)]:
        print(f"    iteration {it['iteration']:3d}: relative gradient {it['grad_norm']:.1e}, "
              f"x error {it['rel_error']:.1e}, {it['time']:.1f}s")
    n_mem = n_r if args.quick else args.ridge_memory_rows
    if n_mem:
        full = np.vstack([_load(q) for q in paths[: -(-n_mem // c_r)]])[:n_mem]
        for method, kw in (("cholesky", {}), ("pcg-rfd", dict(m=m, max_iter=100))):
            t = time.perf_counter()
            mem = solve_ridge(full[:, :d], full[:, d], gamma, method=method, tol=RIDGE_TOL, **kw)
            print(f"  in memory, n={n_mem}: {method} {mem.termination.name} "
                  f"{time.perf_counter() - t:.1f}s (peak RSS {peak_rss_mb():.0f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small data (seconds), with checks")
    ap.add_argument("--workers", type=int, default=0, help="start a LocalCluster of N processes")
    ap.add_argument("--scheduler", default=None, help="address of a running dask scheduler")
    ap.add_argument("--dir", default=None, help="where the .npy chunks go (default: a temp dir)")
    ap.add_argument("--memory-limit", default="4GB",
                    help="per-worker memory bound of the --workers LocalCluster (default 4GB)")
    ap.add_argument("--only", nargs="+", default=["lad", "ridge", "svm"],
                    choices=["lad", "ridge", "svm"], help="parts to run (default: all)")
    ap.add_argument("--ridge-spectrum", choices=["power", "linear"], default="power",
                    help="column scales of the ridge data: 1/j (default) or 1..0.05")
    ap.add_argument("--ridge-memory-rows", type=int, default=250_000,
                    help="also solve the first N ridge rows in memory (0: skip)")
    ap.add_argument("--lad-rows", type=int, default=50_000_000,
                    help="rows of the full LAD run (default 5*10^7)")
    args = ap.parse_args()
    client = None
    if args.scheduler or args.workers:
        import distributed

        client = (distributed.Client(args.scheduler) if args.scheduler else distributed.Client(
            n_workers=args.workers, threads_per_worker=1, dashboard_address=None,
            memory_limit=args.memory_limit))
    try:
        if args.dir:
            run(args, args.dir)
        else:
            with tempfile.TemporaryDirectory() as folder:
                run(args, folder)
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    main()
