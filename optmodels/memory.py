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
