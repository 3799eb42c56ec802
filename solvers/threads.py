"""The process's BLAS and OpenMP thread pools, found once and shared.

threadpoolctl finds the pools by resolving the path of every shared object in the process:
10-15 ms on a fresh process and 2-3 ms after, more than a small SMO or AID fit, and
``threadpool_limits(...)`` pays it again on every call. :func:`controller` keeps one
``ThreadpoolController`` and makes it again only when a compiled extension module was imported
since (the way a new BLAS or OpenMP library enters the process); its ``info()`` and
``limit()`` read and set the current thread counts cheaply. threadpoolctl ships with
scikit-learn and is optional here: without it the limits are no-ops and no pools are listed.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

_NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")
_STATE: list[Any] = []  # [(len(sys.modules) when last checked, ThreadpoolController | None)]


def _native_module_since(count: int) -> bool:
    """Whether a module imported after the first ``count`` of ``sys.modules`` is compiled."""
    for mod in list(sys.modules.values())[count:]:
        if str(getattr(mod, "__file__", None) or "").endswith(_NATIVE_SUFFIXES):
            return True
    return False


def controller() -> Any:
    """The shared ``threadpoolctl.ThreadpoolController``, or None without threadpoolctl."""
    if not _STATE or (_STATE[0][1] is not None and _native_module_since(_STATE[0][0])):
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            ctl = None
        else:
            ctl = ThreadpoolController()
        _STATE[:] = [(len(sys.modules), ctl)]
    else:
        _STATE[0] = (len(sys.modules), _STATE[0][1])
    return _STATE[0][1]


def pools() -> list[dict[str, Any]] | None:
    """The loaded pools (``user_api``, ``internal_api``, ``num_threads``, ``version``) with
    their current thread counts; None without threadpoolctl."""
    ctl = controller()
    if ctl is None:
        return None
    return [{k: pool.get(k) for k in ("user_api", "internal_api", "num_threads", "version")}
            for pool in ctl.info()]


def blas_limit(threads: int | None) -> contextlib.AbstractContextManager[Any]:
    """A context limiting BLAS to ``threads`` while it is open (None: leave it as it is)."""
    ctl = None if threads is None else controller()
    if ctl is None:
        return contextlib.nullcontext()
    return ctl.limit(limits=threads, user_api="blas")
