"""A writable place for numba's on-disk cache, so ``@njit(cache=True)`` never fails on import.

numba caches compiled code next to the source (``__pycache__``) or, when that folder is
read-only, in the user-wide cache (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``). When
neither can be written (a read-only install and a read-only HOME, as in some containers),
numba raises RuntimeError while *decorating* the function. :func:`ensure_writable_cache`, called
before the first decorator runs, then points ``NUMBA_CACHE_DIR`` at a private folder in the
system temp directory; a ``NUMBA_CACHE_DIR`` the user set is always left alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


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
