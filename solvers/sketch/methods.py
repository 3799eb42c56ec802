"""The names of the ridge sketching methods and the default sketch size, without the solvers.

:mod:`solvers.options` builds its option tables from these; it imports this module rather
than :mod:`solvers.sketch.ridge`, which loads the sketches and scipy.linalg.
"""

from __future__ import annotations

import numpy as np

from solvers.errors import DataError
from solvers.validation import check_int

RIDGE_METHODS: dict[str, str] = {
    "fdrr": "one-shot FD ridge (Hhat^{-1} A'b)",
    "rfdrr": "one-shot robust FD ridge",
    "classical-gaussian": "one-shot classical sketch, Gaussian S",
    "classical-sjlt": "one-shot classical sketch, SJLT S",
    "hessian-gaussian": "one-shot Hessian sketch, Gaussian S",
    "hessian-sjlt": "one-shot Hessian sketch, SJLT S",
    "fd": "iterative FD ridge (Algorithm 1)",
    "rfd": "iterative robust FD ridge (Algorithm 1 with RFD)",
    "ihs-gaussian": "iterative Hessian sketch, fresh Gaussian S per iteration",
    "ihs-sjlt": "iterative Hessian sketch, fresh SJLT S per iteration",
    "single-gaussian": "iteration with one Gaussian sketch, step 1",
    "single-sjlt": "iteration with one SJLT sketch, step 1",
    "pcg-fd": "conjugate gradient preconditioned by the FD sketch",
    "pcg-rfd": "conjugate gradient preconditioned by the RFD sketch",
    "cholesky": "exact: factor A'A + gamma I (forms d x d)",
}

DEFAULT_SKETCH_SIZE = 256
"""The sketch size m when not given is min(DEFAULT_SKETCH_SIZE, d) (pcg-*: at most that, see
:func:`solvers.sketch.ridge.pcg_sketch_size`). Measured for PCG-RFD: on
data whose effective rank is about 0.1 d, m must exceed it (m = 256 took 6 iterations at
d = 1024, m = 128 took 246); on slowly decaying spectra a smaller m costs few iterations."""

PCG_MAX_ITER = 500
"""pcg-*'s default iteration limit (the other iterative methods: 10, the paper's experiment).
CG needs at most d iterations in exact arithmetic; the benchmarks' runs to tol 1e-10 took 7-35."""


def sketch_size(m: int | None, d: int, owner: str) -> int:
    """The sketch size ``m``: min(DEFAULT_SKETCH_SIZE, d) when None; a given m must be an int
    in [1, d]."""
    if m is None:
        return min(DEFAULT_SKETCH_SIZE, d)
    if not isinstance(m, bool) and isinstance(m, (int, np.integer)) and m > d >= 1:
        raise DataError(
            f"The 'm' option of {owner} (sketch size) must be at most d = {d}, the number of "
            f"features; got {m}. Give m <= {d} or leave it out to use min("
            f"{DEFAULT_SKETCH_SIZE}, d) = {min(DEFAULT_SKETCH_SIZE, d)}."
        )
    return check_int(m, "m", owner, low=1, high=d)
