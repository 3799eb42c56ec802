"""Atomic file writing: the only way the toolkit creates an output file.

:func:`atomic_write` opens a new hidden temporary file beside the target
(``.<name>.optmodels-tmp-<pid>-<random>.tmp``, ``<pid>`` the writing process), hands it to the
caller, flushes and fsyncs it, and renames it over the target with ``os.replace``. So the target
name only ever holds a complete file (the old one until the rename, the new one after it), and:

* the file gets the mode a plain ``open(path, "w")`` would give: ``0o666 & ~umask`` (the
  temporary file is created with ``os.open(..., 0o666)``, which the kernel masks with the umask;
  ``tempfile.mkstemp`` would give 0o600 whatever the umask);
* an exception while writing, and SIGINT or SIGTERM (in the main thread), remove the temporary
  file; the signal is then delivered again to the handler that was installed before, so Ctrl-C
  still raises ``KeyboardInterrupt`` and ``kill`` still terminates;
* ``kill -9`` (or a power cut) cannot be intercepted: it may leave a hidden
  ``.<name>.optmodels-tmp-<pid>-*.tmp`` file in the folder, never a partial file under the
  target name. The next :func:`atomic_write` of the same target removes such files whose
  process is no longer running (a live process's, this one's included, are left alone; so is
  any other file). The check is by process id on this machine: do not share the folder for
  simultaneous writes of the same target from several machines.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "remove_stale_temps"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Interrupted(BaseException):
    """Raised inside the write when SIGINT/SIGTERM arrives; re-delivered after clean-up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise _Interrupted(signum)


_TEMP_TAG = ".optmodels-tmp-"
_TEMP_TAIL = re.compile(r"(\d+)-[0-9a-f]+\.tmp")


def _temp_prefix(path: Path) -> str:
    """The start of every temporary file name of ``path``: ``.<name>.optmodels-tmp-``."""
    return f".{path.name}{_TEMP_TAG}"


def _pid_alive(pid: int) -> bool:
    """True unless process ``pid`` surely no longer exists (unknown counts as alive)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return bool(psutil.pid_exists(pid))
    if os.name != "posix":
        return True  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def remove_stale_temps(path: str | os.PathLike[str]) -> list[str]:
    """Delete the temporary files that :func:`atomic_write` left beside ``path`` in processes
    that have since died (``kill -9``, a power cut); return their paths.

    Only files named ``.<name>.optmodels-tmp-<pid>-<hex>.tmp`` for this very ``path`` whose
    ``<pid>`` is not running are removed: never a live writer's, never another file."""
    target = Path(path)
    prefix = _temp_prefix(target)
    removed = []
    try:
        entries = [e.name for e in os.scandir(target.parent) if e.name.startswith(prefix)]
    except OSError:
        return removed
    for name in entries:
        tail = _TEMP_TAIL.fullmatch(name[len(prefix):])
        if tail is None or _pid_alive(int(tail.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(target.parent / name)
            removed.append(str(target.parent / name))
    return removed


def _create_temp(path: Path) -> tuple[int, str]:
    """Open a new hidden file beside ``path``; mode 0o666 minus the umask, like ``open``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    prefix = f"{_temp_prefix(path)}{os.getpid()}-"
    for _ in range(100):
        tmp = str(path.parent / f"{prefix}{secrets.token_hex(6)}.tmp")
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
    The folder of ``path`` must exist (``FileNotFoundError`` otherwise, naming it). Temporary
    files of earlier writes of ``path`` whose process died are removed first
    (:func:`remove_stale_temps`).
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise FileNotFoundError(
            f"{target}: the folder {str(target.parent)!r} does not exist; create it first."
        )
    remove_stale_temps(target)
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
