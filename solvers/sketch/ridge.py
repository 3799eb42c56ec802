"""Ridge regression by sketching: one-shot sketched solves, iterative sketching and sketch-PCG.

Problem::

    min_x f(x) = 1/2 ||A x - b||^2 + gamma/2 ||x||^2,   H = A'A + gamma I,   x* = H^{-1} A'b
    grad f(x) = A'(A x - b) + gamma x = H (x - x*)

Methods of :func:`solve_ridge` (``method=``):

- ``"fdrr"`` / ``"rfdrr"``: one shot, ``xhat = Hhat^{-1} A'b`` with ``Hhat = B'B + (gamma+rho) I``
  from an FD / RFD sketch (rho = 0 for FD).
- ``"classical-gaussian"`` / ``"classical-sjlt"``: ``(A'S'SA + gamma I)^{-1} A'S'S b``.
- ``"hessian-gaussian"`` / ``"hessian-sjlt"``: ``(A'S'SA + gamma I)^{-1} A'b``.
- ``"fd"`` / ``"rfd"``: Algorithm 1 (iFDRR) with the correct gradient,
  ``x_{t+1} = x_t - Hhat^{-1} grad f(x_t)``; one pass ``A'(A x)`` per iteration. The step
  contracts when the sketch error is below the shift: ``||A'A - B'B||_2 < gamma`` (FD) or
  ``||A'A - B'B - rho I||_2 < gamma + rho`` (RFD). Rates: with
  ``b = ||A - A_k||_F^2 / ((m-k) gamma)``, ``b < 1/2`` gives rate b/(1-b) (FD, Theorem 5 of the
  FD ridge paper) and ``b < 1`` rate b/(2-b) (RFD, Theorem 6); it may diverge otherwise.
- ``"ihs-gaussian"`` / ``"ihs-sjlt"``: the same step with a fresh random sketch each iteration
  (Pilanci & Wainwright 2016); ``"single-gaussian"`` / ``"single-sjlt"``: one random sketch for
  all iterations, step size 1 (as in the paper's experiment).
- ``"pcg-fd"`` / ``"pcg-rfd"``: conjugate gradient on ``H x = A'b`` preconditioned by
  ``Hhat^{-1}``; one pass per iteration, converges for every gamma > 0 (Hhat is SPD), in the
  H-norm monotonically. Without ``m`` it starts as plain CG and builds the sketch only when the
  contraction of its first iterations predicts that it pays (:func:`probe_verdict`).
  By default Hhat comes from a float32 (R)FD sketch of a length-squared
  sample of ``min(n, 8 m)`` rows (``sketch_rows``; E[sample'sample] = A'A, and FD's bound holds
  against the sample): its accuracy changes the iteration count only, never the answer or its
  certificate (the true gradient is checked before OPTIMAL). For pcg-rfd the sketched rows are
  Jacobi scaled, ``A D^{-1/2}`` with ``D = diag(A'A) + gamma`` (pcg-fd's are not: see
  :func:`pcg_preconditioner`), so columns of very different norms do not spread the spectrum
  the sketch must capture: measured for pcg-rfd at n = 4e4, d = 400, m = 64 (tol 1e-12),
  column scales 1..0.05 took 15 iterations
  instead of 207, 1/j 19 instead of 86 at gamma = 0.1, log-scaled correlated columns 38
  instead of > 300; equal-norm columns (random Fourier features) the same 29-33, a correlated
  low-rank matrix 42 instead of 37. CG runs on the original problem, so rule and certificate
  are unchanged. On a Dask ``A`` the same sample
  is drawn: the squared row norms come to the caller from the pass that forms A'b (8 n bytes),
  the draw is :func:`length_squared_rows` with the same seed, and only the sampled rows are
  read and sketched in memory, so preconditioner and iterations are the in-memory ones.
- ``"cholesky"``: the exact reference, forms ``A'A + gamma I`` (d x d) and factors it.

Termination (each iterate's numbers are computed from the data, never from a recursion):

- The stopping rule is scale invariant: ``OPTIMAL`` once the relative gradient
  ``||grad f(x)|| / (||A'A x|| + gamma ||x|| + ||A'b||)`` (the gradient over the magnitudes of
  its terms) is ``<= tol``; multiplying b by any factor multiplies every iterate, gradient and
  term by it, so the same iterations and status result.
- ``ITERATION_LIMIT`` / ``FEASIBLE`` at ``max_iter`` without meeting the rule.
- ``NUMERICAL_ERROR`` / ``FEASIBLE`` when an iteration (fd, rfd, ihs-*, single-*) diverges: a
  non-finite value, or ``f(x_t) > DIVERGENCE_FACTOR * f(0)``. A step ``x - Hhat^{-1} grad f(x)``
  maps the error e = x - x* to ``(I - Hhat^{-1} H) e``, which contracts ``f - f* = e'He / 2``
  whenever the eigenvalues of ``Hhat^{-1} H`` lie in (0, 2); a run of such steps never raises f
  above f(0), so passing the factor proves a step outside that condition. The result carries
  the best finite iterate seen (lowest f among x_0 = 0, x_1, ..., x_t) and ``raw_status`` states
  the method's convergence condition and the fix (see ``_DIVERGENCE_HINTS``).
- ``ESTIMATE`` / ``FEASIBLE`` for the one-shot methods (fdrr, rfdrr, classical-*, hessian-*):
  a sketched closed form is an estimator, not an optimum; ``extra["rel_error"]`` gives its
  distance to ``x_star`` when that is passed.
- ``cholesky`` is ``OPTIMAL`` when its solution meets the rule, else ``NUMERICAL_ERROR``.
- b with ``A'b = 0`` has the exact solution x = 0, returned ``OPTIMAL`` by every method.

Accuracy of x: ``H >= gamma I``, so ``||x - x*|| = ||H^{-1} grad f(x)|| <= ||grad f(x)|| / gamma``;
``extra["x_error_bound"] = e / (||x|| - e)`` with ``e = ||grad f(x)|| / gamma`` bounds
``||x - x*|| / ||x*||`` (whenever the returned x's gradient was formed). The rule's tol bounds
the relative *gradient*; the error in x can be ``(||A'A x|| + gamma ||x|| + ||A'b||) /
(gamma ||x||)`` times larger (up to about the condition number of H): at n = 10^6, d = 2000,
column scales 1/j, gamma = 10 that factor is about 10^3 - 10^4 and tol = 1e-10 gave an error
of 2.9e-8 in x. To reach an error eps in x, lower tol until the bound is below eps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import scipy.linalg

from solvers.errors import DataError
from solvers.progress import Progress, verbose_line
from solvers.result import (
    CERTIFICATE_TOL,
    SOLUTION_TOL,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    stable_norm,
)
from solvers.rows import NumpyRows, as_rows, ridge_rows
from solvers.sketch.fd import FrequentDirections, automatic_route
from solvers.sketch.methods import DEFAULT_SKETCH_SIZE, PCG_MAX_ITER, RIDGE_METHODS, sketch_size
from solvers.sketch.precondition import JacobiSketchPreconditioner, SketchPreconditioner
from solvers.validation import (
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_vector,
)

DIVERGENCE_FACTOR = 100.0
"""An iterative run stops as diverged once ``f(x_t) > DIVERGENCE_FACTOR * f(0)`` (contracting
steps never raise f above f(0); see the module docstring)."""

PCG_SKETCH_DTYPE = "float32"
"""Precision of the FD sketch behind pcg-fd / pcg-rfd (the iteration itself is float64)."""

_FIX = "increase m or gamma, or use pcg-rfd which never diverges"
_DIVERGENCE_HINTS: dict[str, str] = {
    "fd": "iterative FD converges when the sketch error is below gamma, "
          "||A'A - B'B||_2 < gamma (FD bounds it by ||A - A_k||_F^2 / (m - k) for k < m); " + _FIX,
    "rfd": "iterative RFD converges when the sketch error is below gamma + rho, "
           "||A'A - B'B - rho I||_2 < gamma + rho (RFD bounds it by "
           "||A - A_k||_F^2 / (2 (m - k)) for k < m); " + _FIX,
    "ihs": "the iterative Hessian sketch converges when every sketched Hessian satisfies "
           "A'A + gamma I < 2 (A'S'SA + gamma I), which needs a large enough sketch m; " + _FIX,
    "single": "the single-sketch iteration (step 1) converges when "
              "A'A + gamma I < 2 (A'S'SA + gamma I), which needs a large enough sketch m; " + _FIX,
}
"""Per iterative family: the condition under which its step contracts, and what to change."""


# ---------------------------------------------------------------------------- sketches
def _rows(A):
    """``A`` behind the row operations of :mod:`solvers.rows` (an in-memory array is wrapped)."""
    return A if hasattr(A, "fd_sketch") else as_rows(A)


def fd_preconditioner(
    A, gamma: float, m: int, *, robust: bool, block_size: int = 4096, dtype: str = "float64",
    sample_rows: int | None = None, seed: int | None = 0, row_norms2: np.ndarray | None = None,
) -> tuple[SketchPreconditioner, FrequentDirections]:
    """Sketch ``A`` (an array or a :mod:`solvers.rows` object) by (R)FD in one pass and return
    ``(Hhat, sketch)`` with c = gamma + rho.

    ``dtype="float32"`` sketches an in-memory ``A`` in single precision (about half the time of
    a pass; PCG uses it, since the preconditioner's accuracy changes only the iteration count).
    ``sample_rows = s < n`` sketches a length-squared sample of s rows of a dense in-memory
    ``A`` or of a Dask ``A`` instead of all rows (:func:`length_squared_sample`, seeded by
    ``seed``; on Dask the row norms ``row_norms2`` of a pass already made, else one pass for
    them, then only the s rows are read and sketched in memory, so the sample and the sketch
    are the in-memory ones).
    """
    sk = fd_sketch_of(A, m, robust=robust, block_size=block_size, dtype=dtype,
                      sample_rows=sample_rows, seed=seed, row_norms2=row_norms2)
    return SketchPreconditioner(sk.sketch_, gamma + sk.rho_), sk


def fd_sketch_of(
    A, m: int, *, robust: bool, block_size: int = 4096, dtype: str = "float64",
    sample_rows: int | None = None, seed: int | None = 0, row_norms2: np.ndarray | None = None,
    col_scale: np.ndarray | None = None,
) -> FrequentDirections:
    """The (R)FD sketch behind :func:`fd_preconditioner` (same options), of ``A diag(col_scale)``
    when ``col_scale`` (d,) is given: the rows (or the sample's rows, drawn by A's row norms)
    are scaled block by block as they enter the sketch."""
    rows = _rows(A)
    sampled = (sample_rows is not None and sample_rows < rows.shape[0]
               and (type(rows) is NumpyRows or _is_dask_rows(rows)))
    if sampled or (dtype != "float64" and isinstance(rows, NumpyRows)):
        X = sample_of(rows, sample_rows, seed, row_norms2) if sampled else rows.A
        if sampled and col_scale is not None:
            X *= col_scale  # the sample is a fresh copy: scaled once, in place
            col_scale = None
        sk = FrequentDirections(m, robust=robust, dtype=dtype)
        step = rows.block_rows(block_size) if not sampled else block_size  # sparse: 16 MB
        for start in range(0, X.shape[0], step):
            blk = X[start:start + step]
            sk.partial_fit(blk if col_scale is None else blk * col_scale,
                           check=rows is not A and not sampled)
        return sk
    if col_scale is not None:
        rows = type(rows)(rows.A * col_scale)
    return rows.fd_sketch(m, robust, block_size)


def column_norms2(rows, block_size: int = 4096) -> np.ndarray | None:
    """``||A e_j||^2`` per column of in-memory rows (one pass; a sparse A in dense blocks of
    :meth:`block_rows` rows); None for other rows (Dask: they come from the A'b pass)."""
    if type(rows) is NumpyRows:
        return np.einsum("ij,ij->j", rows.A, rows.A)
    if not isinstance(rows, NumpyRows):
        return None
    out = np.zeros(rows.shape[1])
    step = rows.block_rows(block_size)
    for start in range(0, rows.shape[0], step):
        blk = np.asarray(rows.A[start:start + step])
        out += np.einsum("ij,ij->j", blk, blk)
    return out


def row_column_norms2(A: np.ndarray, block_bytes: int = 2**20, threads: int = 2
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_j A_ij^2 per row i, sum_i A_ij^2 per column j)`` of a dense A in one read: each of
    ``threads`` contiguous row ranges is reduced in blocks of ``block_bytes`` by its own thread
    (numpy's einsum releases the GIL), the column parts added in range order. Measured on
    2 cores: 172 ms instead of 329 ms for two einsum passes at n = 5e4, d = 4096 (71 vs 168 ms
    at n = 1e5, d = 1024)."""
    from concurrent.futures import ThreadPoolExecutor

    n, d = A.shape
    rows = np.empty(n)
    step = max(1, block_bytes // max(A.itemsize * d, 1))
    cuts = np.linspace(0, n, max(1, min(threads, n)) + 1).astype(np.int64)

    def reduce(lo: int, hi: int) -> np.ndarray:
        cols = np.zeros(d)
        for start in range(lo, hi, step):
            blk = A[start:min(start + step, hi)]
            rows[start:start + blk.shape[0]] = np.einsum("ij,ij->i", blk, blk)
            cols += np.einsum("ij,ij->j", blk, blk)
        return cols

    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        parts = list(pool.map(reduce, cuts[:-1], cuts[1:]))
    return rows, np.sum(parts, axis=0)


def pcg_preconditioner(
    A, gamma: float, m: int, *, robust: bool, block_size: int, sample_rows: int | None,
    seed: int | None, row_norms2: np.ndarray | None = None, col_norms2: np.ndarray | None = None,
) -> tuple[SketchPreconditioner | JacobiSketchPreconditioner, FrequentDirections]:
    """pcg-*'s preconditioner: the float32 (R)FD sketch ``Bs`` of the length-squared sample of
    the Jacobi-scaled rows ``A D^{-1/2}``, ``D = diag(A'A) + gamma I`` (the diagonal of H), and
    ``M = D^{1/2} (Bs'Bs + (rho + gamma D^{-1})) D^{1/2}`` (:class:`JacobiSketchPreconditioner`).

    ``D^{-1/2} H D^{-1/2} = (A D^{-1/2})'(A D^{-1/2}) + gamma D^{-1}`` has unit diagonal, so
    columns of very different norms (units) no longer spread H's spectrum; the sketch then
    captures what correlation leaves. The sample is drawn by A's row norms (any positive
    probabilities keep E[sample'sample] exact). Without column norms (rows that give none)
    this is :func:`fd_preconditioner` on A itself.

    pcg-fd (``robust=False``) is never scaled: FD has no shift for the mass its sketch misses,
    and after the scaling that mass is spread over every direction while the preconditioner
    keeps only ``gamma / D_j`` there. Measured at n = 2*10^4, d = 300, m = 256, gamma = 1
    (iterations to tol 1e-12, scaled / unscaled): pcg-fd 185 / 69 on log-scaled columns,
    481 / 248 on scales 1..0.05, 175 / 140 on correlated columns; pcg-rfd 29 / 35, 29 / 53,
    96 / 104, and at m = 64 16 / over 500 on log-scaled columns.
    """
    rows = _rows(A)
    kw = dict(robust=robust, block_size=block_size, dtype=PCG_SKETCH_DTYPE,
              sample_rows=sample_rows, seed=seed, row_norms2=row_norms2)
    if not robust:
        return fd_preconditioner(rows, gamma, m, **kw)
    if (col_norms2 is None and row_norms2 is None and type(rows) is NumpyRows
            and sample_rows is not None and sample_rows < rows.shape[0]):
        row_norms2, col_norms2 = row_column_norms2(rows.A)  # the sample's and Jacobi's, fused
    if col_norms2 is None:
        col_norms2 = column_norms2(rows, block_size)
    kw["row_norms2"] = row_norms2
    if col_norms2 is None:
        return fd_preconditioner(rows, gamma, m, **kw)
    D = np.asarray(col_norms2, dtype=float) + gamma
    sk = fd_sketch_of(rows, m, col_scale=1.0 / np.sqrt(D), **kw)
    return JacobiSketchPreconditioner(sk.sketch_, sk.rho_ + gamma / D, np.sqrt(D)), sk


def _is_dask_rows(rows: object) -> bool:
    """True for the Dask rows of ``solvers.dask_rows`` (they give row norms and take rows)."""
    return hasattr(rows, "norms_rmatvec") and hasattr(rows, "take")


def sample_of(rows, s: int, seed: int | None, row_norms2: np.ndarray | None = None
              ) -> np.ndarray:
    """The length-squared sample of :func:`length_squared_sample` from in-memory rows or Dask
    rows (same draw for the same data and seed: the rule is :func:`length_squared_rows`)."""
    if not _is_dask_rows(rows):
        return length_squared_sample(rows.A, s, seed, row_norms2)
    if row_norms2 is None:
        row_norms2 = rows.norms_rmatvec(rows.zeros())[1]
    idx, scale = length_squared_rows(row_norms2, s, seed)
    X = rows.take(idx) if idx.size else np.zeros((0, rows.shape[1]))
    X *= scale[:, None]
    return X


def length_squared_sample(A: np.ndarray, s: int, seed: int | None,
                          norms2: np.ndarray | None = None) -> np.ndarray:
    """``s`` rows of ``A`` drawn i.i.d. with probability ``p_i = ||a_i||^2 / ||A||_F^2``, each
    scaled by ``1 / sqrt(s p_i)`` (rows kept in their original order).

    Then ``E[At'At] = A'A`` and ``E ||A'A - At'At||_F^2 <= ||A||_F^4 / s`` (Drineas, Kannan &
    Mahoney 2006), and every sampled row has squared norm ``||A||_F^2 / s``, so
    ``||At||_F = ||A||_F`` exactly. Costs one read of A (the row norms, unless given as
    ``norms2``) and a copy of s rows.
    """
    if norms2 is None:
        norms2 = np.einsum("ij,ij->i", A, A)
    idx, scale = length_squared_rows(norms2, s, seed)
    X = A[idx]
    X *= scale[:, None]
    return X


def length_squared_rows(norms2: np.ndarray, s: int, seed: int | None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The draw of :func:`length_squared_sample` from the squared row norms ``norms2`` (n,):
    ``(idx, scale)``, s sorted row indices drawn i.i.d. with ``p_i = norms2_i / sum(norms2)`` by
    ``numpy.random.default_rng(seed)`` and their factors ``1 / sqrt(s p_i)``; none when
    ``A = 0``. The same norms and seed give the same rows, in memory or on Dask."""
    total = float(norms2.sum())
    if not np.isfinite(total):
        raise DataError("The 'A' argument must be finite (no NaN or inf entries) to be "
                        "sampled; clean or impute the data first.")
    if not total > 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    idx = np.sort(np.random.default_rng(seed).choice(norms2.shape[0], size=s, p=norms2 / total))
    return idx, np.sqrt(total / s / norms2[idx])


def random_preconditioner(
    A: np.ndarray, gamma: float, m: int, *, kind: str, seed: int | None, block_size: int = 4096,
    b: np.ndarray | None = None,
) -> tuple[SketchPreconditioner, np.ndarray | None]:
    """Sketch ``[A, b]`` by a random S; return ``(A'S'SA + gamma I, A'S'S b or None)``."""
    SM = _rows(A).random_sketch(kind, m, seed, block_size, b)
    if b is None:
        return SketchPreconditioner(SM, gamma), None
    SA, Sb = SM[:, :-1], SM[:, -1]
    return SketchPreconditioner(SA, gamma), SA.T @ Sb


def fdrr(
    A: np.ndarray, b: np.ndarray, gamma: float, m: int, *, robust: bool = False,
    block_size: int = 4096,
) -> np.ndarray:
    """One-shot (R)FD ridge: ``xhat = (B'B + (gamma + rho) I)^{-1} A'b`` (Algorithm 3)."""
    rows, b, gamma, m = _check_problem(A, b, gamma, m, "fdrr")
    P, _ = fd_preconditioner(rows, gamma, m, robust=robust, block_size=block_size)
    return P.solve(rows.rmatvec(b))


# ---------------------------------------------------------------------------- entry point
PCG_SAMPLE_FACTOR = 8
"""pcg-fd / pcg-rfd sketch, by default, a length-squared sample of ``min(n, 8 m)`` rows
(:func:`length_squared_sample`): a sketch cost independent of n. Measured on the RFF benchmark
(n = 1e5, d = 1024, m = 256, whole ``Ridge.solve`` calls to 1e-10, covariance route): the
sample's preconditioner took 25 / 17 / 9 iterations at gamma = 10 / 100 / 1000 against 19 / 11 /
6 for a sketch of every row, and 1.05-1.11 / 0.82-0.84 / 0.59-0.64 s against 1.68 / 1.47 /
1.32 s in all (with the Gram route, before the covariance route, the full sketch took 7 s)."""

PCG_SKETCH_BUDGET = (4.0, 0.1)
"""The automatic pcg sketch size keeps the sampled sketch's modelled cost within the larger of
4 passes ``A'(A p)`` (one PCG iteration each) and 0.1 s (below which the sketch's time does not
matter, and small problems keep m = min(256, d))."""

_PASS_COST = 5.4e-10
_SHRINK_COST = (8e-11, 1.07e-9, 2e-4)
_COVARIANCE_COST = (6e-12, 1.2e-10)
"""The cost model of :func:`pcg_sketch_size`, measured on the 2-core development machine
(float32 sketch): a pass costs ``_PASS_COST n d`` seconds (0.055 s at n = 1e5, d = 1024). The
Gram route (d > 4 m) costs ``b1 m^2 d + b2 m^3 + b0`` per shrink (products with the 2m x d
buffer, the 2m x 2m eigendecomposition, Python overhead: 23 ms at m = 256, d = 1024, one BLAS
thread); the covariance route (d <= 4 m) ``c1 s d^2 + c2 d^3`` for s rows (float32 syrk on two
threads, one float64 d x d eigendecomposition on one: 0.14 s at s = 2048, d = 1024). Only the
ratio to a pass matters to the rule."""


PROBE_ITERATIONS = 2
PROBE_REMAINING = 8
"""pcg-* with the automatic m starts by plain CG: after PROBE_ITERATIONS iterations (and after
each further one) the relative gradient's mean contraction per iteration so far predicts how
many more reach ``tol``; above PROBE_REMAINING (about twice the sketch's cost in passes,
PCG_SKETCH_BUDGET) the sketch is built and PCG restarts from the current x, else plain CG goes
on. A large gamma makes H well conditioned and the sketch a loss: at n = 5e4, d = 4096,
gamma = 1000 it took a third of the call for the same 7 iterations."""


def probe_verdict(t: int, rel_grad: float, tol: float) -> str:
    """"sketch" when plain CG, ``t`` iterations in at relative gradient ``rel_grad`` (1 at
    x = 0), is predicted to need more than PROBE_REMAINING more to reach ``tol`` at its mean
    contraction ``rel_grad^(1/t)``; "wait" before PROBE_ITERATIONS; else "plain"."""
    if t < PROBE_ITERATIONS:
        return "wait"
    if not 0 < rel_grad < 1:
        return "sketch"
    remaining = t * math.log(max(tol, 1e-300) / rel_grad) / math.log(rel_grad)
    return "sketch" if remaining > PROBE_REMAINING else "plain"


def pcg_sketch_rows(n: int, m: int) -> int:
    """Rows the pcg preconditioner sketches by default: ``min(n, PCG_SAMPLE_FACTOR m)``."""
    return min(n, PCG_SAMPLE_FACTOR * m)


def pcg_sketch_cost(n: int, d: int, m: int) -> float:
    """Modelled seconds of the default pcg sketch (row norms, sample, FD shrinks)."""
    s = pcg_sketch_rows(n, m)
    sample = 0.5 * _PASS_COST * n * d if s < n else 0.0
    if automatic_route(d, m) == "covariance":
        c1, c2 = _COVARIANCE_COST
        return c1 * s * d * d + c2 * d**3 + sample
    b1, b2, b0 = _SHRINK_COST
    shrinks = max(s - m, 0) / m
    return shrinks * (b1 * m * m * d + b2 * m**3 + b0) + sample


def pcg_sketch_size(n: int, d: int) -> int:
    """The pcg sketch size when m is not given: the largest ``m <= min(DEFAULT_SKETCH_SIZE, d)``
    whose modelled sketch cost (:func:`pcg_sketch_cost`) is within ``PCG_SKETCH_BUDGET``
    (4 passes, or 0.1 s when that is more), and at least ``min(d, 32)``.

    A large m is what makes PCG fast on data of low effective rank (m must exceed it); on
    slowly decaying spectra the iteration count hardly depends on m (RFF benchmark, gamma = 10:
    35 iterations with m = 16 or 64, 30 with 256), so the rule spends a fixed share of a solve
    on the sketch: m = 256 at n = 1e5, d = 1024 and at n = 5e4, d = 4096; 200 at n = 2e4,
    d = 4096; 210 at n = 1e4, d = 1024; min(256, d) on small problems.
    """
    passes, seconds = PCG_SKETCH_BUDGET
    budget = max(passes * _PASS_COST * n * d, seconds)
    lo, hi = 1, min(DEFAULT_SKETCH_SIZE, d)
    while lo < hi:  # the cost grows with m
        mid = (lo + hi + 1) // 2
        if pcg_sketch_cost(n, d, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return max(lo, min(d, 32))


def solve_ridge(
    A: np.ndarray,
    b: np.ndarray,
    gamma: float,
    *,
    method: str,
    m: int | None = None,
    max_iter: int | None = None,
    tol: float = 1e-10,
    x_star: np.ndarray | None = None,
    seed: int | None = 0,
    block_size: int = 4096,
    verbose: bool = False,
    sketch: FrequentDirections | None = None,
    sketch_rows: int | None = None,
) -> SolveResult:
    """Solve ``min 1/2||Ax - b||^2 + gamma/2||x||^2`` by the sketching ``method``.

    Parameters
    ----------
    A : ndarray (n, d) or a row-chunked dask.array.Array
        Data (the paper's A); finite. A Dask array stays lazy: every pass is a chunk-wise
        reduction on the active Dask scheduler (see :mod:`solvers.rows`).
    b : ndarray (n,)
        Targets (the paper's b or y).
    gamma : float
        Regularisation gamma > 0.
    method : str
        One of :data:`RIDGE_METHODS` (see the module docstring).
    m : int, optional
        Sketch size (rows of B or S), ``1 <= m <= d``; ``None`` (default) is
        :func:`sketch_size`'s ``min(DEFAULT_SKETCH_SIZE, d)``, for pcg-* the cost-model choice
        :func:`pcg_sketch_size` (n, d), built only when plain CG's first iterations predict
        that it pays (:func:`probe_verdict`; ``extra["m"]`` is 0 when it was not built);
        ignored by ``"cholesky"``.
    max_iter : int, optional
        Iterations (passes over A) for the iterative methods (the paper's t); default 10 (the
        paper's iterative experiment), 500 for pcg-* (CG reaching tol).
    tol : float
        Stop with OPTIMAL once ``||grad f(x)|| <= tol * (||A'A x|| + gamma ||x|| + ||A'b||)``
        (scale invariant; see the module docstring). It bounds the relative gradient, not the
        error in x: a faster sketch meets it in fewer iterations, at an x error up to
        ``extra["x_error_bound"]``. ``tol=0`` runs all ``max_iter`` iterations (the paper's
        fixed-iteration experiment).
    x_star : ndarray (d,), optional
        The exact solution; when given, the history records ``||x_t - x*|| / ||x*||``.
    seed : int
        Seed of the random sketches.
    block_size : int
        Rows per block when streaming A through a sketch.
    verbose : bool
        Print one line per iteration.
    sketch : FrequentDirections, optional
        A finished FD or RFD sketch of this ``A`` with ``m`` rows to reuse (FD-based methods
        only; FD and RFD share B, RFD's rho is ``sketch.delta_sum_ / 2``). Its time is not
        counted in ``sketch_time``. For pcg-* it preconditions A as it is (no Jacobi scaling).
    sketch_rows : int, optional
        pcg-* only: the preconditioner sketches a length-squared sample of this many rows
        (:func:`length_squared_sample`, drawn with ``seed``); ``None`` (default) is
        :func:`pcg_sketch_rows`'s ``min(n, 8 m)``; ``sketch_rows >= n`` sketches every row
        (FD's bound then holds against A itself). PCG's answer and certificate do not depend
        on the sample: only its iteration count does.

    Returns
    -------
    SolveResult
        ``x``, ``objective`` f(x), ``iterations``, ``termination`` (see the module docstring);
        ``extra["history"]`` (per iteration: iteration, grad_norm (the relative gradient of the
        stopping rule), objective f(x_t), rel_error when x_star is given, time since the start),
        ``extra["rel_error"]`` of the returned x (with x_star), ``extra["sketch_time"]``,
        ``extra["rho"]``, ``extra["passes"]``, ``extra["x_error_bound"]`` (certified bound on
        ``||x - x*|| / ||x*||``, see the module docstring; absent when the returned x's gradient
        was not formed); ``extra["best_iteration"]`` after a divergence;
        pcg-*: ``extra["m"]`` and ``extra["sketch_rows"]`` (rows the preconditioner sketched).
    """
    f = "solve_ridge"
    check_choice(method, "method", f, sorted(RIDGE_METHODS))
    A, b, gamma, _ = _check_problem(A, b, gamma, None, f)  # A: the rows of solvers.rows
    n, d = A.shape
    family, _, kind = method.partition("-")
    probe = m is None and family == "pcg" and sketch is None
    if method != "cholesky":
        m = pcg_sketch_size(n, d) if m is None and family == "pcg" else sketch_size(m, d, f)
    if sketch_rows is not None:
        if family != "pcg":
            raise DataError(f"The 'sketch_rows' argument is used by pcg-fd and pcg-rfd only; "
                            f"got method={method!r}. Leave it out for this method.")
        sketch_rows = check_int(sketch_rows, "sketch_rows", f, low=1)
    if max_iter is None:
        max_iter = PCG_MAX_ITER if family == "pcg" else 10
    max_iter = check_int(max_iter, "max_iter", f)
    tol = check_nonnegative(tol, "tol", f)
    block_size = check_int(block_size, "block_size", f)
    if x_star is not None:
        x_star = check_vector(x_star, d, "x_star", against="A", axis="columns")
    rows = pcg_sketch_rows(n, m) if sketch_rows is None and family == "pcg" else sketch_rows
    # pcg on Dask rows: the row norms (sample) and column norms (Jacobi) come from the A'b pass
    norms = family == "pcg" and sketch is None and _is_dask_rows(A)
    run = _Run(A, b, gamma, tol, x_star, verbose, method, norms=norms)
    if method == "cholesky":
        return run.cholesky()
    robust = family in ("rfdrr", "rfd") or kind == "rfd"

    seen: list[int] = []  # rows the FD sketch saw (a pcg sample: fewer than n)

    def fd_sketch() -> tuple[SketchPreconditioner, float]:
        if sketch is None:
            if family == "pcg":
                P, sk = pcg_preconditioner(A, gamma, m, robust=robust, block_size=block_size,
                                           sample_rows=rows, seed=seed,
                                           row_norms2=run.row_norms2, col_norms2=run.col_norms2)
            else:
                P, sk = fd_preconditioner(A, gamma, m, robust=robust, block_size=block_size)
            seen.append(sk.n_rows_seen_)
            return P, sk.rho_
        rho = 0.5 * sketch.delta_sum_ if robust else 0.0
        return SketchPreconditioner(sketch.sketch_, gamma + rho), rho

    if sketch is not None:
        if not isinstance(sketch, FrequentDirections) or family not in (
                "fdrr", "rfdrr", "fd", "rfd", "pcg"):
            raise DataError("The 'sketch' argument must be a FrequentDirections sketch and is "
                            "only used by the FD-based methods (fdrr, rfdrr, fd, rfd, pcg-*).")
        if sketch.m != m or sketch.n_rows_seen_ != n or sketch.sketch_.shape[1] != d:
            raise DataError(f"The 'sketch' argument must sketch all {n} rows of A with m={m}; "
                            f"got m={sketch.m} over {sketch.n_rows_seen_} rows.")
    if family in ("fdrr", "rfdrr"):
        P, run.rho = run.timed_sketch(fd_sketch)
        return run.one_shot(P.solve(run.c))
    if family in ("classical", "hessian"):
        P, Atsb = run.timed_sketch(lambda: random_preconditioner(
            A, gamma, m, kind=kind, seed=seed, block_size=block_size,
            b=b if family == "classical" else None))
        return run.one_shot(P.solve(Atsb if family == "classical" else run.c))
    if family in ("fd", "rfd"):
        P, run.rho = run.timed_sketch(fd_sketch)
        return run.iterate(lambda t: P, max_iter)
    if family == "single":
        P, _ = run.timed_sketch(lambda: random_preconditioner(
            A, gamma, m, kind=kind, seed=seed, block_size=block_size))
        return run.iterate(lambda t: P, max_iter)
    if family == "ihs":
        seeds = np.random.SeedSequence(seed).spawn(max_iter)

        def fresh(t: int) -> SketchPreconditioner:
            P, _ = run.timed_sketch(lambda: random_preconditioner(
                A, gamma, m, kind=kind, seed=np.random.default_rng(seeds[t - 1]).integers(2**63),
                block_size=block_size))
            return P

        return run.iterate(fresh, max_iter)
    # pcg-fd / pcg-rfd; with the automatic m plain CG first, the sketch only when it pays
    def build() -> SketchPreconditioner:
        P, run.rho = run.timed_sketch(fd_sketch)
        return P

    res = run.pcg(None, max_iter, build) if probe else run.pcg(build(), max_iter)
    if seen or sketch is not None:
        res.extra.update(m=m, sketch_rows=seen[0] if seen else n)
    else:  # the probe built no sketch
        res.extra.update(m=0, sketch_rows=0)
    return res


def _check_problem(
    A: object, b: object, gamma: object, m: object, owner: str
) -> tuple[NumpyRows, np.ndarray, float, int]:
    """Checked ``(rows, b, gamma, m)``; a Dask ``A`` stays lazy (see :mod:`solvers.rows`)."""
    A, b = ridge_rows(A, b, owner)
    gamma = check_positive(gamma, "gamma", owner)
    if m is not None:
        m = check_int(m, "m", owner, low=1, high=A.shape[1])
    return A, b, gamma, m  # type: ignore[return-value]


class _Run:
    """State of one solve: data, timing, history, and the honest termination rules."""

    def __init__(self, A, b, gamma, tol, x_star, verbose, method, norms: bool = False) -> None:
        """``norms``: form A'b by ``A.norms_rmatvec`` (Dask rows), keeping the squared row and
        column norms of the same pass (``row_norms2``, ``col_norms2``; else None)."""
        self.t0 = time.perf_counter()
        self.progress = Progress(method, start=self.t0)
        self.A, self.b, self.gamma, self.tol = A, b, gamma, tol
        self.x_star, self.verbose, self.method = x_star, verbose, method
        self.family = method.partition("-")[0]
        self.row_norms2 = self.col_norms2 = None
        if norms:
            self.c, self.row_norms2, self.col_norms2 = A.norms_rmatvec(b)
        else:
            self.c = A.rmatvec(b)
        self.c_norm = stable_norm(self.c)  # > 0 exactly when A'b has a nonzero entry
        self.f0 = 0.5 * A.dot(b, b)
        self.xs_norm = None if x_star is None else float(np.linalg.norm(x_star))
        self.history: list[dict] = []
        self.last_gradient: tuple[np.ndarray, float] | None = None  # (x, ||grad f(x)||)
        self.sketch_time = 0.0
        self.passes = 0.5  # A'b
        self.rho = 0.0

    # -- helpers
    def timed_sketch(self, build: Callable):
        t = time.perf_counter()
        out = build()
        self.sketch_time += time.perf_counter() - t
        return out

    def gradient(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        """``(grad f(x), f(x), relative gradient)`` from one pass ``A'(A x - b)``."""
        with np.errstate(over="ignore", invalid="ignore"):  # divergence is reported, not warned
            atr, rr = self.A.residual_gradient(x, self.b)
            self.passes += 1
            g = atr + self.gamma * x
            f = 0.5 * rr + 0.5 * self.gamma * float(x @ x)
            # A'A x = A'r + A'b, only needed for the scale of the rule
            return g, f, self.rel_grad(g, g - self.gamma * x + self.c, x)

    def rel_grad(self, g: np.ndarray, ata_x: np.ndarray, x: np.ndarray) -> float:
        """``||g|| / (||A'A x|| + gamma ||x|| + ||A'b||)`` (the magnitudes of the gradient's
        terms; > 0 since A'b != 0 here). NaN or inf when the iterate is not finite."""
        with np.errstate(over="ignore", invalid="ignore"):
            scale = stable_norm(ata_x) + self.gamma * stable_norm(x) + self.c_norm
            g_norm = stable_norm(g)
            self.last_gradient = (x, g_norm)
            return g_norm / scale

    def met(self, rel_grad: float) -> bool:
        """The stopping rule: ``rel_grad <= tol`` and the solution rule of the problem layer
        (:data:`solvers.result.SOLUTION_TOL`): the proven ``||x - x*|| <= ||grad f|| / gamma``
        within 0.9 SOLUTION_TOL of ``||x||``, from the last gradient formed (at tiny gamma a
        gradient that meets ``tol`` can leave x far from x*: 9 x 50 rows, gamma 1e-5). A tol
        above CERTIFICATE_TOL is the user's early stop and is not extended."""
        if not rel_grad <= self.tol:
            return False
        if self.last_gradient is None or self.tol > CERTIFICATE_TOL:
            return True
        x, g_norm = self.last_gradient
        return bool(g_norm <= 0.9 * SOLUTION_TOL * self.gamma * stable_norm(x))

    def x_error_bound(self, x: np.ndarray) -> float | None:
        """The certified bound ``e / (||x|| - e)`` on ``||x - x*|| / ||x*||`` with
        ``e = ||grad f(x)|| / gamma`` (``H >= gamma I``, so ``||x - x*|| = ||H^{-1} grad||
        <= e``; inf when ``||x|| <= e``), from the last gradient formed, when it was x's."""
        if self.last_gradient is None or self.last_gradient[0] is not x:
            return None
        e = self.last_gradient[1] / self.gamma
        with np.errstate(over="ignore", invalid="ignore"):
            room = stable_norm(x) - e
        return e / room if room > 0 else float("inf")

    def rel_error(self, x: np.ndarray) -> float | None:
        """``||x - x*|| / ||x*||`` (absolute when x* = 0), or None without ``x_star``."""
        if self.x_star is None:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            err = float(np.linalg.norm(x - self.x_star))
        return err / self.xs_norm if self.xs_norm else err

    def record(self, it: int, x: np.ndarray, rel_grad: float, f: float) -> None:
        entry = {"iteration": it, "grad_norm": rel_grad, "objective": f,
                 "time": time.perf_counter() - self.t0}
        if self.x_star is not None:
            entry["rel_error"] = self.rel_error(x)
        self.history.append(entry)
        if self.progress.due():
            self.progress.update(it, f, self.gap(x), grad_norm=rel_grad,
                                 rel_error=entry.get("rel_error"))
        if self.verbose:
            extra = f"  rel_error {entry['rel_error']:.3e}" if "rel_error" in entry else ""
            verbose_line(f"[{self.method}] iter {it:3d}  f {f:.6e}  grad {rel_grad:.3e}{extra}  "
                         f"t {entry['time']:.3f}s")

    def gap(self, x: np.ndarray) -> float | None:
        """``(f(x) - f*) / f(0) <= ||grad f(x)||^2 / (2 gamma f(0))`` from the last gradient
        formed when it was x's (None otherwise, or when f(0) = 0)."""
        if self.last_gradient is None or self.last_gradient[0] is not x or not self.f0 > 0:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            return float((self.last_gradient[1] / np.sqrt(2.0 * self.gamma)) ** 2 / self.f0)

    def result(self, x, f, rel_grad, it, cond, raw: str = "") -> SolveResult:
        """The result for ``x``; OPTIMAL only for an OPTIMAL ``cond``, else FEASIBLE."""
        status = (SolutionStatus.OPTIMAL if cond is TerminationCondition.OPTIMAL
                  else SolutionStatus.FEASIBLE)
        total = time.perf_counter() - self.t0
        self.progress.done(it, f, self.gap(x), grad_norm=rel_grad, status=cond.value)
        extra = {"history": self.history, "sketch_time": self.sketch_time,
                 "grad_norm": rel_grad, "rho": self.rho, "passes": self.passes}
        bound = 0.0 if not self.c_norm else self.x_error_bound(x)
        if bound is not None:
            extra["x_error_bound"] = bound
        if self.last_gradient is not None and self.last_gradient[0] is x:
            extra["gradient_norm"] = self.last_gradient[1]  # ||grad f(x)|| at the returned x
        elif not self.c_norm:
            extra["gradient_norm"] = 0.0  # x = 0 solves A'b = 0 exactly
        if self.x_star is not None:
            extra["rel_error"] = self.rel_error(x)
        return SolveResult(
            termination=cond, solution_status=status, objective=f, x=x, iterations=it,
            build_time=self.sketch_time, solve_time=total - self.sketch_time,
            solver="numpy", strategy=f"sketch:{self.method}",
            raw_status=raw or f"relative gradient {rel_grad:.3e} (tol {self.tol:.1e})",
            extra=extra,
        )

    def by_rule(self, x, f, rel_grad, it) -> SolveResult:
        """OPTIMAL when the scale-invariant rule holds, else ITERATION_LIMIT (with a note when
        f ended above f(0): the iteration is not contracting)."""
        if self.met(rel_grad):
            return self.result(x, f, rel_grad, it, TerminationCondition.OPTIMAL)
        raw = ""
        if f > self.f0 and self.family in _DIVERGENCE_HINTS:
            raw = (f"relative gradient {rel_grad:.3e} (tol {self.tol:.1e}); f(x_t) = {f:.3e} "
                   f"is above f(0) = {self.f0:.3e}, so the iteration is not contracting: "
                   + _DIVERGENCE_HINTS[self.family])
        return self.result(x, f, rel_grad, it, TerminationCondition.ITERATION_LIMIT, raw)

    # -- strategies
    def zero_rhs(self) -> SolveResult | None:
        if self.c_norm > 0:
            return None
        x = np.zeros(self.A.shape[1])
        return self.result(x, self.f0, 0.0, 0, TerminationCondition.OPTIMAL,
                           "A'b = 0: x = 0 is the exact solution")

    def one_shot(self, x: np.ndarray) -> SolveResult:
        """A sketched closed form: an ESTIMATE, whatever its gradient says."""
        early = self.zero_rhs()
        if early is not None:
            return early
        g, f, rg = self.gradient(x)
        self.record(1, x, rg, f)
        err = self.rel_error(x)
        shown = "" if err is None else f", relative error to x* {err:.3e}"
        return self.result(
            x, f, rg, 1, TerminationCondition.ESTIMATE,
            f"one-shot {self.method} estimate (not an optimum): relative gradient {rg:.3e}"
            + shown)

    def cholesky(self) -> SolveResult:
        early = self.zero_rhs()
        if early is not None:
            return early
        t = time.perf_counter()
        H = self.A.gram()
        H[np.diag_indices_from(H)] += self.gamma
        x = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, lower=True), self.c)
        self.passes += 1
        self.sketch_time = 0.0
        solve_t = time.perf_counter() - t
        g, f, rg = self.gradient(x)
        self.record(1, x, rg, f)
        cond = (TerminationCondition.OPTIMAL if self.met(rg)
                else TerminationCondition.NUMERICAL_ERROR)
        res = self.result(x, f, rg, 1, cond)
        res.extra["factor_time"] = solve_t
        return res

    def iterate(self, precond_at: Callable[[int], SketchPreconditioner], max_iter: int):
        """``x_{t+1} = x_t - P_t^{-1} grad f(x_t)`` from x_0 = 0 (grad f(0) = -A'b); stops as
        diverged on a non-finite value or ``f(x_t) > DIVERGENCE_FACTOR * f(0)``."""
        early = self.zero_rhs()
        if early is not None:
            return early
        x = np.zeros(self.A.shape[1])
        g, f, rg = -self.c, self.f0, 1.0
        best = (f, x, 0, rg)
        for t in range(1, max_iter + 1):
            with np.errstate(over="ignore", invalid="ignore"):
                x = x - precond_at(t).solve(g)
            g, f, rg = self.gradient(x)
            self.record(t, x, rg, f)
            finite = np.isfinite(f) and np.isfinite(rg) and bool(np.all(np.isfinite(x)))
            if finite and f < best[0]:
                best = (f, x, t, rg)
            if not finite or f > DIVERGENCE_FACTOR * self.f0:
                return self.diverged(best, t, f if finite else None)
            if self.met(rg):
                break
        return self.by_rule(x, f, rg, t)

    def diverged(self, best: tuple, t: int, f: float | None) -> SolveResult:
        """NUMERICAL_ERROR with the best finite iterate and the method's convergence hint."""
        f_best, x_best, t_best, rg_best = best
        limit = DIVERGENCE_FACTOR * self.f0
        what = ("a non-finite iterate" if f is None
                else f"f(x_t) = {f:.3e} > {DIVERGENCE_FACTOR:g} f(0) = {limit:.3e}")
        raw = (f"{self.method} diverged at iteration {t} ({what}); returning the best finite "
               f"iterate (iteration {t_best}, f = {f_best:.6e}); "
               + _DIVERGENCE_HINTS[self.family])
        res = self.result(x_best, f_best, rg_best, t, TerminationCondition.NUMERICAL_ERROR, raw)
        res.extra["best_iteration"] = t_best
        return res

    def pcg(self, P: SketchPreconditioner | None, max_iter: int,
            build: Callable[[], SketchPreconditioner] | None = None) -> SolveResult:
        """Preconditioned CG on ``H x = A'b``; keeps ``A x`` (so f(x) needs no extra pass) and
        ``H x`` (for the scale of the rule on the recursive residual).

        The recursive residual decides when to check; OPTIMAL is declared only after the true
        gradient (one more half pass, ``A'(Ax - b)``) confirms it; otherwise CG continues from
        the true residual.

        ``P = None`` with ``build``: plain CG first (the probe, see :func:`probe_verdict`);
        once the relative gradient's measured contraction predicts more than PROBE_REMAINING
        further iterations, ``build()`` makes the sketch preconditioner and PCG restarts from
        the current x and residual (nothing done is lost).
        """
        early = self.zero_rhs()
        if early is not None:
            return early
        A, gamma = self.A, self.gamma
        x = np.zeros(A.shape[1])
        Ax = A.zeros()
        Hx = np.zeros(A.shape[1])
        r = self.c.copy()
        # plain CG is PCG with P = h I, h the power of two nearest gamma: the same iterates,
        # and r'z, p'Hp stay in float64's range when the data are scaled by 1e-150 or 1e150
        h = 2.0 ** math.frexp(gamma)[1]
        z = r / h if P is None else P.solve(r)
        p = z.copy()
        rz = float(r @ z)
        rg, f = 1.0, self.f0
        for t in range(1, max_iter + 1):
            ata_p, Ap = A.normal_matvec(p)
            q = ata_p + gamma * p
            self.passes += 1
            pq = float(p @ q)
            if not pq > 0:  # p = 0 (exact solution) or breakdown
                break
            alpha = rz / pq
            x += alpha * p
            Ax = A.axpy(Ax, alpha, Ap)
            Hx += alpha * q
            r -= alpha * q
            rg = self.rel_grad(r, Hx - gamma * x, x)
            if self.met(rg):
                r, rg = self.true_residual(Ax, x)
            f = 0.5 * A.residual_sq(Ax, self.b) + 0.5 * gamma * float(x @ x)
            self.record(t, x, rg, f)
            if self.met(rg):
                break
            restart = P is None and probe_verdict(t, rg, self.tol) == "sketch"
            if restart:
                P = build()  # type: ignore[misc]
            z = r / h if P is None else P.solve(r)
            rz_new = float(r @ z)
            if not (rz_new > 0 and rz > 0):  # r'z underflowed (data in float64's subnormal
                break  # range) or is not finite: CG cannot go on; reported, never optimal
            p = z + (rz_new / rz) * p if rg > 0 and not restart else z
            rz = rz_new
        else:
            t = max_iter
        if rg > self.tol:  # otherwise rg is already the true residual's
            _, rg = self.true_residual(Ax, x)
        return self.by_rule(x, f, rg, t)

    def true_residual(self, Ax: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
        """``(A'b - H x, relative gradient)`` from the kept ``A x`` (half a pass)."""
        ata_x = self.A.rmatvec(Ax)
        self.passes += 0.5
        r = self.c - ata_x - self.gamma * x
        return r, self.rel_grad(r, ata_x, x)
