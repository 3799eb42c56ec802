"""Progress of long solves, through :mod:`logging`.

Every iterative strategy makes a :class:`Progress` at its start and calls
:meth:`Progress.update` from its loop (SMO's compiled loops call it back a few times a second).
Once the solve has run :data:`PROGRESS_EVERY` seconds, and then at most every PROGRESS_EVERY
seconds, one INFO record goes to the logger ``solvers.progress``::

    smo: 6.0 s  iteration 1,234,567  objective -4.181e+03  violation 2.1e-02  active 41,871

with the strategy, the elapsed seconds, the iteration, the objective and the gap (or the
strategy's own stopping measure) also as the record's ``progress`` attribute (a dict). A solve
that logged a line logs an end line too (:meth:`Progress.done`). Short solves log nothing.

The toolkit adds only a ``NullHandler`` to the ``solvers`` logger, the standard for a library:
nothing is shown until the program configures logging (``logging.basicConfig(level="INFO")``
shows the lines; ``logging.getLogger("solvers.progress").setLevel("WARNING")`` silences them).
The command line shows them on stderr (``--quiet`` silences them).

``verbose=True`` (a strategy option) writes the strategy's detailed lines through
:func:`verbose_line`: as records of the level :data:`VERBOSE` (15, between DEBUG and INFO) when
the logger is enabled for that level, else printed on stdout as before.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

LOGGER_NAME = "solvers.progress"
logger = logging.getLogger(LOGGER_NAME)
logging.getLogger("solvers").addHandler(logging.NullHandler())

VERBOSE = 15
"""The level of the ``verbose=True`` lines (between DEBUG and INFO)."""
logging.addLevelName(VERBOSE, "VERBOSE")

PROGRESS_EVERY = 3.0
"""Seconds before the first progress line and between two lines of one solve."""
POLL = 0.25
"""Seconds between the compiled loops' calls of :meth:`Progress.callback`'s function (each takes
the GIL once; :meth:`Progress.update` then decides whether a line is due)."""


def verbose_line(text: str) -> None:
    """One ``verbose=True`` line: a VERBOSE record of ``solvers.progress`` when that level is
    enabled (the CLI's ``--verbose``), else printed on stdout (a library call's default)."""
    if logger.isEnabledFor(VERBOSE):
        logger.log(VERBOSE, text)
    else:
        print(text, flush=True)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.3e}" if value != 0 else "0"


class Progress:
    """The progress lines of one solve (see the module docstring).

    Parameters
    ----------
    name : str
        The strategy ("smo", "aid-lad", "pcg-fd", "full", ...), each line's prefix.
    start : float, optional
        ``time.perf_counter()`` at the solve's start (default: now).
    every : float, optional
        Seconds between lines (default :data:`PROGRESS_EVERY`, read when the object is made).
    """

    def __init__(self, name: str, *, start: float | None = None,
                 every: float | None = None) -> None:
        self.name = name
        self.start = time.perf_counter() if start is None else float(start)
        self.every = PROGRESS_EVERY if every is None else float(every)
        self.enabled = logger.isEnabledFor(logging.INFO)
        self.lines = 0
        self._next = self.start + self.every
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self.start

    def due(self) -> bool:
        """Whether :meth:`update` would log now (a time check only)."""
        return self.enabled and time.perf_counter() >= self._next

    def update(self, iteration: int, objective: float | None = None, gap: float | None = None,
               **extra: Any) -> None:
        """Log a line when one is due: ``every`` seconds after the start or the last line.
        Cheap when called often (a clock read); keyword arguments are added to the line in
        order (``violation=...``, ``clusters=...``)."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now < self._next:
            return
        self._emit(now, "", iteration, objective, gap, extra)

    def done(self, iteration: int, objective: float | None = None, gap: float | None = None,
             **extra: Any) -> None:
        """The end line, logged when the solve logged a line or ran ``every`` seconds."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.lines == 0 and now - self.start < self.every:
            return
        self._emit(now, "done ", iteration, objective, gap, extra)

    def _emit(self, now: float, what: str, iteration: int | None, objective: float | None,
              gap: float | None, extra: dict[str, Any]) -> None:
        with self._lock:
            self._next = now + self.every
            self.lines += 1
        elapsed = now - self.start
        parts = [f"{self.name}: {what}{elapsed:.1f} s"]
        if iteration is not None:
            parts.append(f"iteration {int(iteration):,}")
        if objective is not None:
            parts.append(f"objective {objective:.10g}")
        if gap is not None:
            parts.append(f"gap {_number(float(gap))}")
        parts += [f"{k.replace('_', ' ')} {_number(v)}" for k, v in extra.items() if v is not None]
        record = {"strategy": self.name, "elapsed": elapsed, "iteration": iteration,
                  "objective": objective, "gap": gap, "done": bool(what), **extra}
        logger.info("  ".join(parts), extra={"progress": record})

    def callback(self, offset: int = 0, **fixed: Any) -> Callable[..., None] | None:
        """The function a compiled SMO loop calls about every :data:`POLL` seconds with
        (iteration, objective, violation, active); iterations count on from ``offset``.
        None when progress is off (the loop then never takes the GIL for it)."""
        if not self.enabled:
            return None

        def report(it: int, objective: float, violation: float, active: int) -> None:
            self.update(offset + int(it), objective, violation=violation, active=int(active),
                        **fixed)

        return report

    @property
    def poll(self) -> float:
        """Seconds between a compiled loop's calls of :meth:`callback`'s function."""
        return min(POLL, self.every)

    @contextlib.contextmanager
    def heartbeat(self, what: str = "running") -> Iterator[None]:
        """Around one blocking call (a backend's solve): a thread logs ``what`` with the
        elapsed time every ``every`` seconds until the call returns (a backend that holds the
        GIL delays the lines until it returns)."""
        if not self.enabled:
            yield
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(max(self._next - time.perf_counter(), 0.05)):
                if time.perf_counter() >= self._next:
                    self._emit(time.perf_counter(), "", None, None, None, {"status": what})

        thread = threading.Thread(target=beat, name=f"{self.name}-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


__all__ = ["LOGGER_NAME", "POLL", "PROGRESS_EVERY", "Progress", "VERBOSE", "logger",
           "verbose_line"]
