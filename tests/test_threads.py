"""solvers.threads: one thread-pool search per process, made again only when a compiled module
arrives, and the BLAS limit it gives (issue 29: the search cost a first fit 10-15 ms)."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("threadpoolctl")

CODE = textwrap.dedent("""
    import sys
    from solvers import threads
    first = threads.controller()
    assert threads.controller() is first           # nothing new imported: kept
    import colorsys                                 # pure Python
    assert threads.controller() is first
    name = next(n for n in ("_lzma", "_bz2", "_ctypes", "_decimal") if n not in sys.modules)
    __import__(name)                                # a compiled module: searched again
    assert getattr(sys.modules[name], "__file__", "").endswith(".so"), name
    second = threads.controller()
    assert second is not first
    assert threads.controller() is second
    print("ok")
""")


def test_the_search_is_kept_until_a_compiled_module_is_imported():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_blas_limit_sets_and_restores_the_blas_pools():
    import numpy as np  # noqa: F401 - its BLAS is the pool limited

    from solvers import threads

    before = [p["num_threads"] for p in threads.pools() if p["user_api"] == "blas"]
    assert before, "numpy's BLAS should be listed"
    with threads.blas_limit(1):
        assert [p["num_threads"] for p in threads.pools() if p["user_api"] == "blas"] == \
            [1] * len(before)
    assert [p["num_threads"] for p in threads.pools() if p["user_api"] == "blas"] == before
    with threads.blas_limit(None):  # None leaves the pools alone
        assert [p["num_threads"] for p in threads.pools() if p["user_api"] == "blas"] == before
