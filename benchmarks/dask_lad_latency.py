"""Per-iteration cost of AID-LAD on Dask: graph submissions, tasks and wall-clock.

The data are written as ``.npy`` chunks [X | y] (chunk by chunk) and read back lazily with
:func:`instances.lazy.load_lazy`, as the CLI does. Each configuration is run ``--repeat`` times
and the median wall-clock is printed (the machine may be shared: the spread is printed too).
Graph submissions (``compute``/``persist`` calls) and their task counts are counted on the
threaded scheduler through a counting scheduler function; the per-iteration figures are the
counts between two consecutive AID iterations (the ``callback`` of ``aid_lad``).

    python benchmarks/dask_lad_latency.py --n 1000000 --p 10 --chunks 10 --repeat 3
    python benchmarks/dask_lad_latency.py --n 6000 --p 3 --chunks 4      # the tests' size
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import dask
import dask.threaded
import numpy as np

from instances.lazy import load_lazy
from solvers.aid.lad import aid_lad


class Counter:
    """A scheduler ``get`` that counts submissions and tasks, then runs the threaded one."""

    def __init__(self) -> None:
        self.calls = 0
        self.tasks = 0

    def __call__(self, dsk, keys, **kwargs):
        self.calls += 1
        graph = dsk.__dask_graph__() if hasattr(dsk, "__dask_graph__") else dsk
        self.tasks += len(graph)
        return dask.threaded.get(dsk, keys, **kwargs)


def write_data(folder: str, n: int, p: int, chunks: int, seed: int = 0) -> str:
    """``chunks`` files ``part-i.npy`` of [X | y], y = X beta + Laplace noise; the glob."""
    beta = np.random.default_rng(seed).standard_normal(p)
    rows = -(-n // chunks)
    for i, start in enumerate(range(0, n, rows)):
        rng = np.random.default_rng([seed, i])
        X = rng.standard_normal((min(rows, n - start), p))
        np.save(os.path.join(folder, f"part-{i:05d}.npy"),
                np.column_stack([X, X @ beta + rng.laplace(size=X.shape[0])]))
    return os.path.join(folder, "part-*.npy")


def _timed(fn, repeat: int) -> tuple[float, list[float], object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, out


def counted_run(X, y, kw: dict) -> dict:
    """Submissions and tasks in total and per iteration (threaded scheduler)."""
    c = Counter()
    marks: list[tuple[int, int]] = []
    with dask.config.set(scheduler=c):
        res = aid_lad(X, y, callback=lambda it, h, lab: marks.append((c.calls, c.tasks)), **kw)
    per = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(marks, marks[1:], strict=False)]
    return dict(result=res, calls=c.calls, tasks=c.tasks, setup=marks[0] if marks else None,
                per_iteration=per)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--split", default="refine", choices=("refine", "sign"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster processes (0: skip)")
    args = ap.parse_args()
    kw = dict(n_clusters=args.clusters, split=args.split)
    with tempfile.TemporaryDirectory() as folder:
        data = load_lazy(write_data(folder, args.n, args.p, args.chunks))
        X, y = data.X, data.y
        Xm, ym = dask.compute(X, y, scheduler="threads")
        med, times, mem = _timed(lambda: aid_lad(Xm, ym, **kw), args.repeat)
        print(f"n={args.n} p={args.p} chunks={args.chunks} split={args.split}: "
              f"{mem.iterations} iterations, E={mem.objective:.12g}")
        print(f"in memory        median {med:7.2f} s  runs {[round(t, 2) for t in times]}")
        cnt = counted_run(X, y, kw)
        res = cnt["result"]
        print(f"graph submissions: total {cnt['calls']} ({cnt['tasks']} tasks); before the "
              f"first iteration {cnt['setup']}; per iteration (calls, tasks) "
              f"{cnt['per_iteration']}")
        print(f"  same answer as in memory: relative |dE| "
              f"{abs(res.objective - mem.objective) / mem.objective:.1e}, "
              f"iterations {res.iterations}")
        with dask.config.set(scheduler="threads"):
            med, times, _ = _timed(lambda: aid_lad(X, y, **kw), args.repeat)
        print(f"dask threads     median {med:7.2f} s  runs {[round(t, 2) for t in times]}")
        if args.workers:
            import distributed

            with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                          dashboard_address=None, silence_logs=40) as cluster, \
                    distributed.Client(cluster):
                med, times, _ = _timed(lambda: aid_lad(X, y, **kw), args.repeat)
            print(f"LocalCluster({args.workers}) median {med:7.2f} s  runs "
                  f"{[round(t, 2) for t in times]}")


if __name__ == "__main__":
    main()
