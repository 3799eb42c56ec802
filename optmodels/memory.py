"""Peak resident memory of a block of code, sampled from outside the work.

``tracemalloc`` (the obvious tool) slows Python code severalfold and misses the solvers' C/C++
allocations, so a comparison measured under it reports wrong speed-ups and partial memory.
:class:`PeakRSS` instead samples the process's resident set size from a daemon thread (every
``interval`` seconds, reading ``/proc/self/statm``, which costs microseconds), so the timed code
runs at full speed and the solvers' own memory is seen. The result is the peak above the level
at entry, in MiB; where ``/proc`` is missing (not Linux) it is ``None``.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = "/proc/self/statm"


def rss_bytes() -> int | None:
    """The current resident set size in bytes, or None where /proc is not available."""
    try:
        with open(_STATM) as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class PeakRSS:
    """``with PeakRSS() as m: ...`` then ``m.peak_mb``: the peak RSS above entry, in MiB."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.peak_mb: float | None = None
        self._start = self._peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            now = rss_bytes() or 0
            self._peak = max(self._peak, now)

    def __enter__(self) -> PeakRSS:
        start = rss_bytes()
        if start is not None:
            self._start = self._peak = start
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, rss_bytes() or 0)
        self.peak_mb = (self._peak - self._start) / 2**20


_CHILD = """
import json, pickle, sys
from optmodels.memory import PeakRSS
from optmodels.strategies import get_strategy
with open(sys.argv[1], "rb") as fh:
    problem, strategy, options = pickle.load(fh)
entry = get_strategy(problem.NAME, strategy)
getattr(entry.run, "routine", None)  # import the strategy's modules before measuring
with PeakRSS() as meter:
    problem.solve(strategy=strategy, **options)
print(json.dumps(meter.peak_mb))
"""


def peak_in_fresh_process(problem: object, strategy: str, options: dict,
                          timeout: float = 3600.0) -> float | None:
    """The peak resident memory (MiB, above the level once the data are loaded and the
    strategy's modules imported) of one solve in a fresh Python process, so that no strategy
    reuses memory another one freed (in one process the allocator keeps it, and the second
    strategy's peak reads near 0). The problem goes to the child pickled through a private
    temporary file; None where the problem cannot be pickled (Dask data) or /proc is missing.
    """
    import json
    import pickle
    import subprocess
    import sys
    import tempfile

    if getattr(problem, "lazy", False):
        return None
    with tempfile.TemporaryDirectory(prefix="optmodels-mem-") as tmp:
        path = os.path.join(tmp, "job.pkl")
        with open(path, "wb") as fh:
            pickle.dump((problem, strategy, dict(options)), fh)
        proc = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True,
                              text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"measuring the memory of strategy {strategy!r} in a fresh process "
                           f"failed: {proc.stderr.strip().splitlines()[-1:]}")
    value = json.loads(proc.stdout.strip().splitlines()[-1])
    return None if value is None else float(value)
