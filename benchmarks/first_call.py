"""What a fresh process pays (issue 29): ``import optmodels``, the first fit against the warm
fit of the same process, and the CLI against the same load + fit in a running process.

Every number is the median of ``--reps`` fresh processes (``python -c``), each timing inside
itself with ``time.perf_counter``; the CLI row times the whole ``optmodels solve`` command from
outside. Goals: import <= 0.3 s; first fit <= 2x the warm one; CLI <= 2x the in-process load +
fit, or <= 0.35 s more than it.

Run:  python benchmarks/first_call.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

IMPORT = "import time; t = time.perf_counter(); import optmodels; print(time.perf_counter() - t)"

FIRST_WARM = """import json, sys, time
import numpy as np
case = sys.argv[1]
from instances import load_breast_cancer
from instances.generators import make_lad
def clouds(n, seed):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return rng.normal(size=(n, 10)) + 0.75 * y[:, None], y
if case.startswith("bc"):
    d = load_breast_cancer()
    X = np.asarray(d.X, float); X = (X - X.mean(0)) / X.std(0); y = np.asarray(d.y, float)
elif case.startswith("clouds"):
    X, y = clouds(5000, 1)
else:
    X, y = make_lad(n=20000, p=10, seed=0)[:2]
if case.endswith("svm"):
    from optmodels import SVMClassifier
    make = lambda: SVMClassifier(kernel="rbf", gamma=0.1, strategy="smo")
elif case.endswith("klr"):
    from optmodels import KLRClassifier
    make = lambda: KLRClassifier(kernel="rbf", gamma=0.1, strategy="smo")
else:
    from optmodels import LADRegressor
    make = lambda: LADRegressor(strategy="aid")
out = []
for _ in range(3):
    est = make()
    t = time.perf_counter(); est.fit(X, y); out.append(time.perf_counter() - t)
print(json.dumps(out))
"""

IN_PROCESS = """import json, sys, time
t = time.perf_counter()
from instances.io import load
from optmodels import SVM
d = load(sys.argv[1])
r = SVM(d.X, d.y, kernel="rbf", gamma=0.1).solve("smo")
print(json.dumps(time.perf_counter() - t))
"""


def _last(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    reps = ap.parse_args().reps
    py = sys.executable
    imports = [float(_last([py, "-c", IMPORT])) for _ in range(reps)]
    print(f"import optmodels: median {statistics.median(imports):.3f} s "
          f"(min {min(imports):.3f}, max {max(imports):.3f}; {reps} fresh processes)\n")
    print("| case | first fit s | warm fit s (2nd, 3rd) | first / warm |")
    print("|---|---|---|---|")
    for case in ("bc-svm", "bc-klr", "clouds-svm", "clouds-klr", "lad-aid"):
        runs = [json.loads(_last([py, "-c", FIRST_WARM, case])) for _ in range(reps)]
        first = statistics.median(r[0] for r in runs)
        warm = statistics.median(min(r[1:]) for r in runs)
        print(f"| {case} | {first:.4f} | {warm:.4f} | {first / warm:.2f} |", flush=True)
    rng = np.random.default_rng(2)
    y = np.where(rng.random(5000) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(5000, 10)) + 0.75 * y[:, None]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clouds.csv")
        np.savetxt(path, np.column_stack([X, y]), delimiter=",", comments="",
                   header=",".join([f"x{j}" for j in range(10)] + ["y"]))
        cli, inproc = [], []
        for _ in range(reps):
            t = time.perf_counter()
            subprocess.run([os.path.join(os.path.dirname(py), "optmodels"), "solve", "svm",
                            "--data", path, "--strategy", "smo", "--param", "kernel=rbf",
                            "--param", "gamma=0.1"], capture_output=True, check=True)
            cli.append(time.perf_counter() - t)
            inproc.append(float(_last([py, "-c", IN_PROCESS, path])))
        c, i = statistics.median(cli), statistics.median(inproc)
        print(f"\nCLI solve svm --strategy smo, 5,000 x 10 CSV: {c:.3f} s; load + fit inside a "
              f"process {i:.3f} s; ratio {c / i:.2f}, difference {c - i:.3f} s ({reps} runs)")


if __name__ == "__main__":
    main()
