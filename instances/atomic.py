"""Atomic file writing: the only way the toolkit creates an output file.

:func:`atomic_write` opens a new hidden temporary file beside the target
(``.<name>.<random>.tmp``), hands it to the caller, flushes and fsyncs it, and renames it over the
target with ``os.replace``. So the target name only ever holds a complete file (the old one until
the rename, the new one after it), and:

* the file gets the mode a plain ``open(path, "w")`` would give: ``0o666 & ~umask`` (the
  temporary file is created with ``os.open(..., 0o666)``, which the kernel masks with the umask;
  ``tempfile.mkstemp`` would give 0o600 whatever the umask);
* an exception while writing, and SIGINT or SIGTERM (in the main thread), remove the temporary
  file; the signal is then delivered again to the handler that was installed before, so Ctrl-C
  still raises ``KeyboardInterrupt`` and ``kill`` still terminates;
* ``kill -9`` (or a power cut) cannot be intercepted: it may leave a hidden ``.<name>.*.tmp``
  file in the folder, never a partial file under the target name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Interrupted(BaseException):
    """Raised inside the write when SIGINT/SIGTERM arrives; re-delivered after clean-up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise _Interrupted(signum)


def _create_temp(path: Path) -> tuple[int, str]:
    """Open a new hidden file beside ``path``; mode 0o666 minus the umask, like ``open``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: could not create a temporary file in {path.parent}.")


@contextlib.contextmanager
def _cleanup_on_signals() -> Iterator[None]:
    """SIGINT/SIGTERM raise :class:`_Interrupted` inside the block; old handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = {s: signal.signal(s, _raise_interrupted) for s in _SIGNALS}
    try:
        yield
    except _Interrupted as stop:
        for s, handler in previous.items():
            signal.signal(s, handler)
        previous = {}
        signal.raise_signal(stop.signum)  # the original behaviour, now the temp file is gone
        raise KeyboardInterrupt from None  # only reached if the old handler returned
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], *, text: bool = False) -> Iterator[IO[Any]]:
    """Yield a file object whose content replaces ``path`` only once the block completes.

    ``text=True`` gives a UTF-8 text stream with ``\\n`` line ends, otherwise a binary stream.
    The folder of ``path`` must exist (``FileNotFoundError`` otherwise, naming it).
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise FileNotFoundError(
            f"{target}: the folder {str(target.parent)!r} does not exist; create it first."
        )
    with _cleanup_on_signals():
        fd, tmp = _create_temp(target)
        try:
            mode = "w" if text else "wb"
            kwargs: dict[str, Any] = {"encoding": "utf-8", "newline": "\n"} if text else {}
            with os.fdopen(fd, mode, **kwargs) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
