"""Adapters from the problems to the strategies in :mod:`solvers` (registered on import)."""

from __future__ import annotations
