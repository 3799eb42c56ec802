"""Our own top-level ``solvers`` and ``instances`` packages, imported before anything else can
take their names (run by ``optmodels/__init__.py`` first)."""

from __future__ import annotations

import importlib.machinery as machinery
import importlib.util as util
import os
import sys


def load_own(name: str, root: str) -> None:
    """Import the top-level package ``name`` from ``root`` (where this distribution installed
    it) before anything else can: a user's own ``solvers.py`` or ``instances/`` in the working
    directory, which comes first on sys.path, would otherwise be imported in its place and break
    ``import optmodels``. Nothing changes when ``name`` is already imported, when a plain import
    finds the same file (an editable install's finder maps it), or when ``root`` lacks it."""
    if name in sys.modules:
        return
    ours = machinery.PathFinder.find_spec(name, [root])
    if ours is None or ours.loader is None:
        return
    plain = util.find_spec(name)
    if plain is not None and plain.origin == ours.origin:
        return
    module = util.module_from_spec(ours)
    sys.modules[name] = module
    try:
        ours.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""Where this distribution installed its three packages."""
for name in ("solvers", "instances"):  # the other two packages of this distribution
    load_own(name, ROOT)
