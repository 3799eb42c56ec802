"""A writable place for numba's on-disk cache, so ``@njit(cache=True)`` never fails on import.

numba caches compiled code next to the source (``__pycache__``) or, when that folder is
read-only, in the user-wide cache (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``). When
neither can be written (a read-only install and a read-only HOME, as in some containers),
numba raises RuntimeError while *decorating* the function. :func:`ensure_writable_cache`, called
before the first decorator runs, then points ``NUMBA_CACHE_DIR`` at a private folder in the
system temp directory; a ``NUMBA_CACHE_DIR`` the user set is always left alone.

:func:`njit_cached` is the toolkit's ``numba.njit(cache=True)``: it also makes the cache safe
when several processes compile at once (:class:`ProcessSafeCache`, below).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numba
from numba.core import sigutils
from numba.core.caching import CompileResultCacheImpl, FunctionCache


def _writable(folder: Path) -> bool:
    """True when files can be created in ``folder`` (created if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "numba"


def ensure_writable_cache(source_dir: str | os.PathLike[str]) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` to a temp folder when numba's default places are read-only.

    ``source_dir`` is the folder of the module whose functions are cached. Returns the folder
    set, or None when nothing had to change.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    if _writable(Path(source_dir) / "__pycache__") or _writable(_user_cache_dir()):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    folder = Path(tempfile.gettempdir()) / f"optmodels-numba-cache-{uid}"
    if not _writable(folder):
        folder = Path(tempfile.mkdtemp(prefix="optmodels-numba-cache-"))
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba.core.config" in sys.modules:  # numba read its settings at import: re-read them
        sys.modules["numba.core.config"].reload_config()
    return str(folder)


# ---------------------------------------------------------------------------- several processes
# numba's on-disk cache is not safe when several processes compile one function at once:
# IndexDataCacheFile.save reads the index, takes the first data-file number that index does not
# use, writes the index, then the data. Two processes compiling different signatures can both
# take number N; the index then maps signature A to a file holding B's machine code, and the next
# call with A runs B's code (a TypeError at best, a segmentation fault in the SMO kernels).
# Measured here: four processes each compiling one signature of one function into a fresh
# cache left a wrong entry in 2 of 8 trials. Dask worker processes, joblib's n_jobs and parallel
# test runs all do this. numba offers no hook for it, so the toolkit's compiled functions use
# :class:`ProcessSafeCache` through :func:`njit_cached`.


@contextlib.contextmanager
def _file_lock(path: str, exclusive: bool) -> Iterator[None]:
    """Hold a POSIX advisory lock on ``path`` (created if missing). Without fcntl (not POSIX)
    or a writable folder, nothing is locked: numba's own behaviour, and a read-only cache
    folder is not written to either."""
    fd = None
    try:
        import fcntl

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except (ImportError, OSError):
        if fd is not None:
            os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the lock


# ---------------------------------------------------------------------------- parallel callees
# A compiled function that runs a parfor (``parallel=True``, prange) must start numba's thread
# pool before it runs; numba records that as the entry's ``reload_init`` (``_reload_parfors``),
# run when the entry is loaded from the cache, and a caller compiled in the same process
# inherits it from its callee's code library. A callee *loaded* from the cache does not pass it
# on (numba restores the entry's reload_init, not its library's), so a caller compiled in a
# process that loaded its parallel callee is saved without it; a later process that loads that
# caller and calls it before anything else started the pool crashes (SIGSEGV). Found here as
# SMO's q_matrix (calling the parallel column fill) crashing every process after a test run;
# reproduced with two three-line functions (tests/test_numba_cache.py); numba issue 8578 is
# the same crash. ProcessSafeCache passes the loaded reload_init on, and gives an entry whose
# machine code holds a parfor but whose reload_init is empty (saved before this fix) the
# thread-pool start it lacks.
_PARFOR_MARK = b"__numba_parfor_gufunc"


def _mentions(libdata: Any, mark: bytes) -> bool:
    """True when a cached library's object code or bitcode contains ``mark``."""
    try:
        _, _, parts = libdata
        return any(isinstance(b, bytes | bytearray) and mark in b for b in parts)
    except (TypeError, ValueError):
        return False


def _holds_parfor(libdata: Any) -> bool:
    """True when a cached library's object code or bitcode contains a parfor kernel."""
    return _mentions(libdata, _PARFOR_MARK)


# ---------------------------------------------------------------------------- loading lean
# numba's Cache.load_overload first refreshes the whole CPU target: it imports and registers
# every lowering implementation numba has (arraymath, linalg, random, typed containers, ...),
# about 0.3 s of a fresh process, although loading machine code needs none of them (compiling
# does, and numba's compiler refreshes the target itself before it compiles). What loaded code
# does need is every symbol it links against: numba's C helpers and exception objects (added
# when the target context is created), the C math functions (likewise), the runtime's NRT_*
# functions (rtsys.initialize), the thread pool's (the entry's reload_init, above) and the
# hash secret (added when numba.cpython.hashing is imported, during the refresh). Those are all
# of numba's ll.add_symbol calls (read in numba 0.68). ProcessSafeCache loads with the first four
# and refreshes fully for an entry whose code mentions the hash secret (a safeguard: loading
# such an entry's environment imports numba.cpython.hashing in the cases tried). Measured: the
# CLI's SMO fit of a 5,000-row CSV in a fresh process, 0.83 -> 0.68 s (medians of 9).
_HASH_MARK = b"_numba_hashsecret_"


def _ready_to_load(target_context: Any) -> None:
    """What machine code loaded from the cache links against, short of a full refresh."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)


class _ParforSafeImpl(CompileResultCacheImpl):
    """numba's CompileResult (un)serialisation, with the parfor fix described above."""

    def rebuild(self, target_context, payload):  # noqa: ANN001 (numba's types)
        payload = tuple(payload)
        if _mentions(payload[0], _HASH_MARK):
            target_context.refresh()  # numba's full refresh adds the hash secret's symbols
        if not payload[7] and _holds_parfor(payload[0]):  # reload_init lost (see above)
            from numba.core.typed_passes import _reload_parfors  # what numba records

            payload = (*payload[:7], [_reload_parfors], *payload[8:])
        cres = super().rebuild(target_context, payload)
        cres.library._reload_init.update(cres.reload_init)  # callers compiled later inherit it
        return cres


class ProcessSafeCache(FunctionCache):
    """numba's per-function disk cache with the index and data read and written under one file
    lock per function (shared to load, exclusive to save), so that choosing a data file, writing
    the index and writing the data happen together. A loaded entry whose stored signature is
    not the one asked for (written by a race before this cache, or by another tool) is treated
    as missing: numba compiles again and overwrites it. Loading skips numba's full refresh of
    the CPU target (see "loading lean" above). Entries that run parallel code start
    numba's thread pool when loaded, also when numba saved them without that step (see
    :class:`_ParforSafeImpl`)."""

    _impl_class = _ParforSafeImpl

    def _lock_path(self) -> str:
        return self._cache_file._index_path + ".lock"

    def load_overload(self, sig, target_context):  # noqa: ANN001 (numba's types)
        if not os.path.isdir(self._cache_path):
            return None  # nothing cached yet (and no folder for a lock)
        _ready_to_load(target_context)  # in place of numba's full refresh (see above)
        with _file_lock(self._lock_path(), exclusive=False):
            with self._guard_against_spurious_io_errors():
                cres = self._load_overload(sig, target_context)
        if cres is not None:
            args, _ = sigutils.normalize_signature(sig)
            if tuple(cres.signature.args) != tuple(args):
                return None
        return cres

    def save_overload(self, sig, data):  # noqa: ANN001 (numba's types)
        self._impl.locator.ensure_cache_path()
        with _file_lock(self._lock_path(), exclusive=True):
            super().save_overload(sig, data)


_CHECKED_DIRS: set[str] = set()


def njit_cached(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)`` with :class:`ProcessSafeCache` as its disk cache.

    The cache folder is made writable first (:func:`ensure_writable_cache`, once per source
    folder). Replaces numba's own FunctionCache on the dispatcher (its ``_cache`` attribute,
    set by ``enable_caching``; tested in tests/test_numba_cache.py)."""

    def decorate(func: Callable[..., Any]) -> Any:
        folder = os.path.dirname(os.path.abspath(inspect.getfile(func)))
        if folder not in _CHECKED_DIRS:
            ensure_writable_cache(folder)
            _CHECKED_DIRS.add(folder)
        dispatcher = numba.njit(**options)(func)
        dispatcher._cache = ProcessSafeCache(dispatcher.py_func)
        return dispatcher

    return decorate
