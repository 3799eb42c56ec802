"""numba's disk cache under several processes (solvers.numba_cache.ProcessSafeCache).

numba's IndexDataCacheFile.save takes the first data-file number its loaded index does not use;
two processes compiling different signatures of one function at once can take the same number,
leaving an index entry whose data file holds the other signature's machine code (a TypeError or
a segmentation fault at the next call). The toolkit's compiled functions save and load under a
file lock and reject an entry whose stored signature is not the one asked for.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from solvers.numba_cache import ProcessSafeCache

ROOT = Path(__file__).resolve().parents[1]

_MODULE = '''
import numba
from solvers.numba_cache import njit_cached


@{decorator}
def f(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * k + i
    return s
'''

_CALL = '''
import sys, numpy as np, {module} as m
arrays = {{"f64": np.arange(5.0), "i64": np.arange(5), "f32": np.arange(5, dtype=np.float32),
          "i32": np.arange(5, dtype=np.int32)}}
start = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
import time
while time.time() < start:
    pass
for name in sys.argv[1].split(","):
    x = arrays[name]
    got, want = m.f(x, 2), float(sum(x[i] * 2 + i for i in range(5)))
    assert abs(got - want) < 1e-9, (name, got, want)
print(sum(m.f.stats.cache_hits.values()))
'''


def _write(tmp_path: Path, name: str, decorator: str) -> None:
    (tmp_path / f"{name}.py").write_text(_MODULE.format(decorator=decorator))
    (tmp_path / f"call_{name}.py").write_text(_CALL.format(module=name))


def _run(tmp_path: Path, name: str, kinds: str, start: float | None = None
         ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    args = [sys.executable, str(tmp_path / f"call_{name}.py"), kinds]
    if start is not None:
        args.append(repr(start))
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)


def _swap_data_files(tmp_path: Path, name: str) -> None:
    """Give the first signature's index entry the second signature's data: the state a race
    between two processes leaves behind."""
    cache = tmp_path / "__pycache__"
    (index,) = cache.glob(f"{name}.f-*.nbi")
    with open(index, "rb") as fh:
        pickle.load(fh)
        _, overloads = pickle.loads(fh.read())
    first, second = sorted(overloads.values())
    (cache / first).write_bytes((cache / second).read_bytes())


def test_entry_holding_another_signatures_code_is_compiled_again(tmp_path):
    for name, decorator in (("plain", "numba.njit(cache=True)"), ("safe", "njit_cached()")):
        _write(tmp_path, name, decorator)
        first = _run(tmp_path, name, "i64,f64")
        assert first.returncode == 0, first.stderr
        _swap_data_files(tmp_path, name)
    # the control: numba's own cache runs the float64 code on an int64 array and fails
    plain = _run(tmp_path, "plain", "i64,f64")
    assert plain.returncode != 0
    # ours: the entry is rejected, compiled again and rewritten; the next process loads both
    safe = _run(tmp_path, "safe", "i64,f64")
    assert safe.returncode == 0, safe.stderr
    again = _run(tmp_path, "safe", "i64,f64")
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == "2"  # both signatures came from the cache


_LEAN_MODULE = '''
import numpy as np
from solvers.numba_cache import njit_cached


@njit_cached()
def total(x):
    out = np.empty_like(x)  # an allocation: runs through numba's runtime (NRT_*)
    for i in range(x.shape[0]):
        out[i] = np.sqrt(x[i]) + np.exp(-x[i])  # C math functions
    return out.sum()


@njit_cached()
def distinct(words):
    seen = {}  # string keys: links against the hash secret's symbols
    for w in words:
        seen[w] = 1
    return len(seen)
'''

_LEAN_CALL = '''
import math, sys, numpy as np, lean
if sys.argv[1] == "total":
    x = np.arange(1.0, 6.0)
    got, want = lean.total(x), sum(math.sqrt(v) + math.exp(-v) for v in x)
else:
    got, want = lean.distinct(("a", "b", "a", "c")), 3
assert abs(got - want) < 1e-12, (got, want)
hits = sum(getattr(lean, sys.argv[1]).stats.cache_hits.values())
print(hits, "numba.np.polynomial.polynomial_functions" in sys.modules)
'''


@pytest.mark.parametrize("which, refreshed", [("total", False), ("distinct", True)])
def test_loading_from_the_cache_skips_numbas_full_refresh(tmp_path, which, refreshed):
    """A process that loads a cached function does not import numba's lowering registries
    (numba.np.polynomial is one), and the loaded code runs: through the runtime and the C math
    functions. An entry that hashes strings gets the full refresh, where numba adds the hash
    secret's symbols (a safeguard: here, loading its environment already imports them)."""
    (tmp_path / "lean.py").write_text(_LEAN_MODULE)
    (tmp_path / "call_lean.py").write_text(_LEAN_CALL)
    first = _run(tmp_path, "lean", which)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["0", "True"]  # compiled: numba refreshed the target
    loaded = _run(tmp_path, "lean", which)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["1", str(refreshed)]


@pytest.mark.slow
def test_processes_compiling_at_once_leave_a_consistent_cache(tmp_path):
    """Four processes start at one instant, each compiling another signature into an empty
    cache; a fifth then calls every signature (numba's own cache failed 2 of 8 such trials)."""
    _write(tmp_path, "safe", "njit_cached()")
    for _ in range(4):
        for path in (tmp_path / "__pycache__").glob("*"):
            path.unlink()
        start = time.time() + 3.0
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
        procs = [subprocess.Popen([sys.executable, str(tmp_path / "call_safe.py"), kind,
                                   repr(start)], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for kind in ("f64", "i64", "f32", "i32")]
        for proc in procs:
            proc.communicate(timeout=300)
            assert proc.returncode == 0
        check = _run(tmp_path, "safe", "f64,i64,f32,i32")
        assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("module", ["solvers.smo.core", "solvers.smo.batched",
                                    "solvers.smo.kernel_sums", "solvers.aid.lad_kernels"])
def test_every_compiled_function_uses_the_process_safe_cache(module):
    mod = importlib.import_module(module)
    dispatchers = [v for v in vars(mod).values()
                   if isinstance(v, numba.core.registry.CPUDispatcher)
                   and v.py_func.__module__ == module]
    assert dispatchers
    for d in dispatchers:
        assert isinstance(d._cache, ProcessSafeCache), d.py_func.__name__


_PARALLEL_MODULE = '''
import os
import numba
import numpy as np
from solvers.numba_cache import njit_cached

if os.environ.get("SAFE_CACHE"):
    deco = njit_cached
else:
    def deco(**options):
        return numba.njit(cache=True, **options)


@deco(parallel=True)
def inner(x, out):
    for i in numba.prange(x.shape[0]):
        out[i] = 2.0 * x[i]


@deco()
def outer(x):
    out = np.empty_like(x)
    inner(x, out)
    return out.sum()
'''

_PARALLEL_CALL = '''
import sys, numpy as np, par
x = np.arange(10_000.0)
if sys.argv[1] == "inner":
    out = np.empty_like(x)
    par.inner(x, out)
    print(out.sum())
else:
    print(par.outer(x))
'''


def _run_par(tmp_path: Path, which: str, safe: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "SAFE_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    if safe:
        env["SAFE_CACHE"] = "1"
    return subprocess.run([sys.executable, str(tmp_path / "call_par.py"), which],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_a_cached_caller_of_parallel_code_starts_the_thread_pool(tmp_path):
    """A caller compiled in a process that loaded its parallel callee from the cache was saved
    without numba's thread-pool start; the next process that loaded it crashed (SIGSEGV; SMO's
    q_matrix did). numba's own cache is the control. Ours starts the pool for such an entry
    already on disk, and saves new callers with the start."""
    (tmp_path / "par.py").write_text(_PARALLEL_MODULE)
    (tmp_path / "call_par.py").write_text(_PARALLEL_CALL)
    want = str(float(sum(2.0 * i for i in range(10_000))))
    for step in ("inner", "outer"):  # the callee cached, then the caller compiled on it
        done = _run_par(tmp_path, step, safe=False)
        assert done.returncode == 0 and done.stdout.split()[-1] == want, done.stderr
    assert _run_par(tmp_path, "outer", safe=False).returncode != 0  # numba's cache: crash
    healed = _run_par(tmp_path, "outer", safe=True)  # the same entry, loaded by ours
    assert healed.returncode == 0 and healed.stdout.split()[-1] == want, healed.stderr
    for path in (tmp_path / "__pycache__").glob("*"):
        path.unlink()
    for step in ("inner", "outer", "outer"):  # ours from an empty cache: no crash
        done = _run_par(tmp_path, step, safe=True)
        assert done.returncode == 0 and done.stdout.split()[-1] == want, done.stderr
