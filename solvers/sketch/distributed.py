"""Frequent Directions over a Dask array: sketch each row chunk, merge by a tree reduction.

FD sketches are mergeable: ``merge(FD(A1), FD(A2))`` satisfies the FD bound for the stacked
``[A1; A2]``; a binary tree of merges therefore keeps the single-process guarantee
``0 <= ||A u||^2 - ||B u||^2 <= ||A - A_k||_F^2 / (m - k)``. Each task holds O(m d) memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from solvers.errors import DataError
from solvers.sketch.fd import FrequentDirections

if TYPE_CHECKING:
    import dask.array


def _sketch_chunk(block: np.ndarray, m: int, robust: bool) -> FrequentDirections:
    return FrequentDirections(m, robust=robust).partial_fit(np.asarray(block))


def _merge(a: FrequentDirections, b: FrequentDirections) -> FrequentDirections:
    return a.merge(b)


def fd_sketch_dask(x: dask.array.Array, m: int, *, robust: bool = False,
                   scheduler: str | None = None) -> FrequentDirections:
    """(R)FD sketch of the rows of a 2-D dask array, chunk by chunk, merged pairwise.

    Parameters
    ----------
    x : dask.array.Array (n, d)
        Data; column chunks are joined so each task sees whole rows.
    m : int
        Sketch size (the paper's m).
    robust : bool
        Robust FD (accumulates rho).
    scheduler : str, optional
        Passed to ``dask.compute`` (e.g. "threads", "synchronous").

    Returns
    -------
    FrequentDirections
        The merged sketch (``sketch_``, ``rho_``, ``n_rows_seen_``).
    """
    import dask
    import dask.array as da

    if not isinstance(x, da.Array) or x.ndim != 2:
        raise DataError("The 'x' argument must be a 2-D dask.array.Array; use da.from_array(A).")
    x = x.rechunk({1: -1})
    parts = [dask.delayed(_sketch_chunk)(blk, m, robust) for blk in x.to_delayed().ravel()]
    while len(parts) > 1:
        nxt = [dask.delayed(_merge)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    (sk,) = dask.compute(parts[0], scheduler=scheduler)
    return sk
