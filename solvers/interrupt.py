"""Ctrl-C during a solve: stop at the next check and return the best point so far.

As HiGHS and Gurobi do, an interrupted solve is not an exception: the strategy stops at its
next check and returns what it has, with termination INTERRUPTED (and its certificate, which
may still prove the point optimal). :func:`interruptible` replaces Python's SIGINT handler for
the duration of a solve (main thread only; nested uses share one handler): the first Ctrl-C
sets a flag that the loops poll (:func:`requested`: Python loops between iterations, the
compiled loops every few thousand steps through :func:`flag`); a second Ctrl-C raises
KeyboardInterrupt at once, for a loop that does not poll.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

_FLAG = np.zeros(1, dtype=np.int8)
"""1 once Ctrl-C was pressed during the current solve (read by the compiled loops)."""
_DEPTH = 0


def requested() -> bool:
    """True once Ctrl-C was pressed during the current :func:`interruptible` block."""
    return bool(_FLAG[0])


def active() -> bool:
    """True inside an :func:`interruptible` block whose handler is installed."""
    return _DEPTH > 0


def flag() -> np.ndarray:
    """The flag as a one-element int8 array, for compiled loops to read without the GIL."""
    return _FLAG


def _handler(signum: int, frame: Any) -> None:
    if _FLAG[0]:
        raise KeyboardInterrupt
    _FLAG[0] = 1


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C requests a stop instead of raising (see the module docstring).
    Outside the main thread, or when the program installed its own SIGINT handler, nothing
    changes."""
    global _DEPTH
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    install = main and (_DEPTH > 0 or previous is signal.default_int_handler)
    if not install:
        yield
        return
    if _DEPTH == 0:
        _FLAG[0] = 0
        signal.signal(signal.SIGINT, _handler)
    _DEPTH += 1
    try:
        yield
    finally:
        _DEPTH -= 1
        if _DEPTH == 0:
            signal.signal(signal.SIGINT, previous)
            _FLAG[0] = 0
