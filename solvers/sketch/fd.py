"""Frequent Directions (FD) and Robust Frequent Directions (RFD): streaming sketches of A'A.

One pass over the rows of ``A`` (n x d), in blocks, keeps a buffer ``B`` of ``ell = 2m`` rows
(memory O(m d); nothing d x d is ever formed). When the buffer is full it is *shrunk*::

    B = U diag(S) V'  (conceptually);  delta = S[m-1]^2  (the m-th largest squared value)
    B <- diag(sqrt(max(S^2 - delta, 0))) V'             (at most m-1 nonzero rows remain)
    RFD only: rho <- rho + delta / 2

Guarantee (Ghashami et al. 2016; Huang 2018 for RFD), for every unit u and 0 <= k < m::

    0 <= ||A u||^2 - ||B u||^2 <= ||A - A_k||_F^2 / (m - k)                   (FD and RFD)
    | ||A u||^2 - ||B u||^2 - rho | <= ||A - A_k||_F^2 / (2 (m - k))          (RFD)

The shrink is computed through the eigendecomposition of the ell x ell Gram matrix
``G = B B' = U diag(S^2) U'`` (``shrink="gram"``, the default): the new rows are
``diag(sqrt((S^2 - delta) / S^2)) U' B``, so V is never formed and a row whose S^2 is tiny is
only multiplied by a factor <= 1 (no division by a small singular value). ``shrink="svd"``
uses ``numpy.linalg.svd(B)`` instead; both give the same sketch up to rounding (tested), the
Gram route is about 4-5x faster at m = 256, d = 1024 on this machine.

Costs (measured at d = 1024, m = 256, n = 2.5e4, one BLAS thread, as ratios to forming A'A in
the same run): the ell x ell eigendecomposition is about 85% of a pass. A larger buffer
(``buffer_rows = c m``) shrinks every (c - 1) m rows at a cost growing like c^3 m^3, so per row
like c^3 / (c - 1): c = 1.5 / 2 / 3 measured 8.0 / 7.9 / 15.3x A'A in float64 and
6.3 / 4.3 / 5.6x in float32, hence the default c = 2 (the bound above holds for every
buffer_rows > m: each shrink removes at least m * delta of ||B||_F^2). LAPACK's top-m drivers
(``eigh(subset_by_index=...)``, evr / evx) were slower than the full divide-and-conquer (evd)
at ell = 512, since the tridiagonal reduction dominates either way. ``dtype="float32"`` is
the largest single saving.

The Gram is built from its structure: after a shrink the kept rows ``diag(sqrt((S^2 - delta) /
S^2)) U_k' B`` are mutually orthogonal with squared norms ``S^2 - delta`` (their block of B B'
is ``diag(S^2 - delta)`` up to rounding), so only ``N B_old'`` and ``N N'`` of the new rows N
are computed; the eigenproblem is the same, so the sketch is the SVD route's up to rounding and
the guarantee is unchanged (tested over 600+ shrinks: the kept rows stay orthogonal to 1e-12
relative, no drift). Measured (2026-12, one BLAS thread, m = 256, d = 1024, per shrink of 256
new rows): Gram 4.8 ms (float32 2.7), eigh 29.5 ms (17.9; its eigenvalues alone, i.e. the
tridiagonal reduction, 14.3 / 12.6), ``U' B`` 4.1 ms (2.7); forming A'A at n = 1e5 took
1.86 s, so the eigendecompositions alone are ~6x A'A in float64 (~3.8x in float32) and the
structured Gram moves a whole pass only from 7.0x to 6.8x A'A in one run and 8.2x to 7.4x in
another (float32: 4.6x -> 4.6x, 4.2x -> 4.0x; n = 2.5e4, interleaved, busy machine).
Reaching 3x needs an eigensolver several times cheaper than evd at 2m = 512, e.g. subspace
iteration warm-started from the last basis with a certified bound on the neglected block (not
done: the FD bound needs ``C'C - B_new'B_new`` to be PSD with norm <= the delta used, which an
approximate basis must prove). Not pursued: a QR
of the new rows against the sketch's row space leaves a 2m x 2m core whose SVD costs the same
as the Gram's eigh. PCG therefore sketches a row sample instead (``solvers.sketch.ridge``).

Sketches merge (``merge``): stacking two sketches and shrinking again keeps the same bound with
``A`` the stacked data (mergeable summaries), which is what makes FD distributable.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from solvers.errors import DataError
from solvers.validation import check_array, check_choice, check_int

_SHRINKS = ("gram", "svd")
_DTYPES = ("float64", "float32")


class FrequentDirections:
    """Streaming Frequent Directions sketch ``B`` (m x d) of the rows of ``A``.

    Parameters
    ----------
    m : int
        Sketch size (the paper's m, the number of rows kept); ``1 <= m <= d``.
    robust : bool, default False
        Robust FD (Huang 2018): also accumulate ``rho = sum(delta) / 2`` so that
        ``B'B + rho I`` approximates ``A'A`` twice as accurately.
    shrink : {"gram", "svd"}, default "gram"
        How the shrink's singular values are computed (see the module docstring).
    buffer_rows : int, optional
        Rows in the buffer (the paper's 2m; must exceed m). A larger buffer shrinks less often.
    blas_threads : int or None, default 1
        BLAS threads during a shrink (needs threadpoolctl; None leaves the library setting).
    dtype : {"float64", "float32"}, default "float64"
        Precision of the buffer and the shrink. ``"float32"`` halves the memory and about halves
        the time of a pass; the guarantee then holds up to float32 rounding
        (about ``1e-6 ||A||_F^2``), ample for a preconditioner. ``sketch_`` is float64 either way.

    Attributes
    ----------
    sketch_ : ndarray (m, d)
        The sketch B (rows sorted by decreasing norm; trailing rows may be zero).
    rho_ : float
        RFD's shift (0.0 for plain FD).
    n_rows_seen_ : int
        Rows processed so far (the paper's n).
    frob2_ : float
        ``||A||_F^2`` of the rows seen, for the bounds of Remark 2 (k = 0).
    n_shrinks_ : int
        Number of shrink steps performed.
    """

    def __init__(
        self,
        m: int,
        *,
        robust: bool = False,
        shrink: str = "gram",
        buffer_rows: int | None = None,
        blas_threads: int | None = 1,
        dtype: str = "float64",
    ) -> None:
        self.m = check_int(m, "m", type(self).__name__, low=1)
        self.dtype = check_choice(dtype, "dtype", type(self).__name__, _DTYPES)
        self.blas_threads = None if blas_threads is None else check_int(
            blas_threads, "blas_threads", type(self).__name__, low=1)
        check_choice(shrink, "shrink", type(self).__name__, _SHRINKS)
        self.robust = bool(robust)
        self.shrink = shrink
        ell = 2 * self.m if buffer_rows is None else buffer_rows
        self.buffer_rows = check_int(ell, "buffer_rows", type(self).__name__, low=self.m + 1)
        self._buf: np.ndarray | None = None
        self._nfill = 0
        self._kept2: np.ndarray | None = None  # squared norms of the orthogonal leading rows
        self._delta_sum = 0.0  # in the buffer's units (times _scale^2)
        self._scale = 1.0  # float32 buffers hold the rows times this power of two
        self.n_rows_seen_ = 0
        self.frob2_ = 0.0
        self.n_shrinks_ = 0

    # ------------------------------------------------------------------ streaming
    def partial_fit(self, block: np.ndarray, *, check: bool = True) -> FrequentDirections:
        """Process a block of rows (k x d, dense or scipy.sparse) once; returns ``self``.

        ``check=False`` skips the finiteness check, for rows already checked by the caller (a
        full check costs about a fifth of a pass at small m).
        """
        if hasattr(block, "toarray") and not isinstance(block, np.ndarray):
            block = block.toarray()  # a sparse block: dense for this block only
        X = check_array(block, "block", min_samples=0) if check else block
        if self._buf is None:
            d = X.shape[1]
            if self.m > d:
                raise DataError(
                    f"The 'm' parameter (sketch size {self.m}) must be <= d = {d} features; "
                    "with m >= d use A'A directly."
                )
            self._buf = np.zeros((self.buffer_rows, d), dtype=self.dtype)
        elif X.shape[1] != self._buf.shape[1]:
            raise DataError(
                f"The 'block' argument has {X.shape[1]} features but this sketch expects "
                f"{self._buf.shape[1]}."
            )
        self.frob2_ += float(np.einsum("ij,ij->", X, X))
        self.n_rows_seen_ += X.shape[0]
        with blas_limit(self.blas_threads):
            self._insert(self._scaled(X))
        return self

    def fit(self, A: np.ndarray, *, block_size: int = 4096) -> FrequentDirections:
        """Reset and sketch all rows of ``A`` in blocks of ``block_size`` rows."""
        A = check_array(A, "A")
        block_size = check_int(block_size, "block_size", type(self).__name__)
        FrequentDirections.__init__(self, self.m, robust=self.robust, shrink=self.shrink,
                                    buffer_rows=self.buffer_rows, blas_threads=self.blas_threads,
                                    dtype=self.dtype)
        for start in range(0, A.shape[0], block_size):
            self.partial_fit(A[start:start + block_size], check=False)
        return self

    def merge(self, other: FrequentDirections) -> FrequentDirections:
        """Fold another sketch of other rows into this one (stack, shrink); returns ``self``."""
        if not isinstance(other, FrequentDirections):
            raise DataError(
                f"The 'other' argument must be a FrequentDirections; got {type(other)}."
            )
        if other.m != self.m or other.robust != self.robust:
            raise DataError(
                "The 'other' argument must have the same m and robust flag as this sketch; got "
                f"m={other.m}, robust={other.robust} against m={self.m}, robust={self.robust}."
            )
        if other._buf is None:
            return self
        rows = other._buf[: other._nfill]
        if self._buf is None:
            self._buf = np.zeros((self.buffer_rows, other._buf.shape[1]), dtype=self.dtype)
        elif rows.shape[1] != self._buf.shape[1]:
            raise DataError(
                f"The 'other' sketch has {rows.shape[1]} features; this one {self._buf.shape[1]}."
            )
        with blas_limit(self.blas_threads):
            self._insert(self._scaled(rows / other._scale if other._scale != 1.0 else rows))
        self._delta_sum += other._delta_sum * (self._scale / other._scale) ** 2
        self.n_rows_seen_ += other.n_rows_seen_
        self.frob2_ += other.frob2_
        self.n_shrinks_ += other.n_shrinks_
        return self

    # ------------------------------------------------------------------ results
    @property
    def sketch_(self) -> np.ndarray:
        """The m x d sketch B (shrinks the buffer first if it holds more than m rows)."""
        if self._buf is None:
            raise DataError("This sketch has seen no rows; call partial_fit(block) first.")
        if self._nfill > self.m:
            self._shrink()
        return self._buf[: self.m].astype(np.float64) / self._scale

    @property
    def rho_(self) -> float:
        """RFD's shift ``sum(delta) / 2`` (0.0 for plain FD)."""
        if self._nfill > self.m:
            self._shrink()
        return 0.5 * self.delta_sum_ if self.robust else 0.0

    @property
    def delta_sum_(self) -> float:
        """Total shrinkage ``sum(delta)``; FD's guarantee says it is <= ||A - A_k||_F^2/(m-k)."""
        return self._delta_sum / self._scale**2

    # ------------------------------------------------------------------ internals
    def _scaled(self, X: np.ndarray) -> np.ndarray:
        """X times the buffer's power-of-two scale. A float32 buffer keeps its rows' largest
        magnitude near 1: entries beyond float32's range (3.4e38, or below 1e-38) would
        overflow or lose their digits in the cast (a ridge problem scaled by 1e100 gave a NaN
        sketch). The scale is set by the first block outside [2^-60, 2^60] and the buffer is
        rescaled, exactly, when a later block would exceed 2^60; float64 buffers keep 1."""
        if self.dtype != "float32" or not X.size:
            return X
        mag = max(abs(float(np.max(X))), abs(float(np.min(X)))) * self._scale
        if np.isfinite(mag) and (mag > 2.0**60 or (self._nfill == 0 and 0 < mag < 2.0**-60)):
            self._rescale(float(2.0 ** -np.ceil(np.log2(mag))))
        return X if self._scale == 1.0 else X * self._scale

    def _rescale(self, factor: float) -> None:
        """Multiply the buffer (and what is kept in its units) by a power of two."""
        if self._buf is not None and self._nfill:
            self._buf[: self._nfill] *= np.float32(factor)
        if self._kept2 is not None:
            self._kept2 = self._kept2 * np.float32(factor * factor)
        self._delta_sum *= factor * factor
        self._scale *= factor

    def _insert(self, X: np.ndarray) -> None:
        buf = self._buf
        assert buf is not None
        ell = self.buffer_rows
        pos = 0
        while pos < X.shape[0]:
            take = min(ell - self._nfill, X.shape[0] - pos)
            buf[self._nfill:self._nfill + take] = X[pos:pos + take]
            self._nfill += take
            pos += take
            if self._nfill == ell:
                self._shrink()

    def _shrink(self) -> None:
        """Shrink the filled part of the buffer by its m-th largest squared singular value."""
        buf = self._buf
        assert buf is not None
        Bf = buf[: self._nfill]
        if self.shrink == "gram":
            new, delta, kept2 = _shrink_gram(Bf, self.m, self._kept2)
        else:
            new, delta, kept2 = _shrink_svd(Bf, self.m)
        k = new.shape[0]
        buf[:k] = new
        buf[k: self._nfill] = 0.0
        self._nfill = k
        self._kept2 = kept2
        self._delta_sum += delta
        self.n_shrinks_ += 1


class RobustFD(FrequentDirections):
    """Robust Frequent Directions (Huang 2018): FD plus the shift ``rho_``; see the base class."""

    def __init__(self, m: int, *, shrink: str = "gram", buffer_rows: int | None = None,
                 blas_threads: int | None = 1, dtype: str = "float64") -> None:
        super().__init__(m, robust=True, shrink=shrink, buffer_rows=buffer_rows,
                         blas_threads=blas_threads, dtype=dtype)

    def fit(self, A: np.ndarray, *, block_size: int = 4096) -> RobustFD:
        """Reset and sketch all rows of ``A`` in blocks of ``block_size`` rows."""
        A = check_array(A, "A")
        block_size = check_int(block_size, "block_size", type(self).__name__)
        RobustFD.__init__(self, self.m, shrink=self.shrink, buffer_rows=self.buffer_rows,
                          blas_threads=self.blas_threads, dtype=self.dtype)
        for start in range(0, A.shape[0], block_size):
            self.partial_fit(A[start:start + block_size], check=False)
        return self


_CONTROLLER: list = []


def blas_limit(threads: int | None):
    """A context limiting BLAS to ``threads`` (via threadpoolctl if installed), else a no-op.

    A shrink is a few small dense products and a 2m x 2m eigendecomposition (dominated by the
    memory-bound tridiagonal reduction); on this 2-core machine one BLAS thread made the whole
    sketch 2-4x faster than two when other jobs were running.
    """
    import contextlib

    if threads is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except ImportError:  # optional dependency (ships with scikit-learn)
            _CONTROLLER.append(None)
    ctl = _CONTROLLER[0]
    if ctl is None:
        return contextlib.nullcontext()
    return ctl.limit(limits=threads, user_api="blas")


def _gram(B: np.ndarray, kept2: np.ndarray | None) -> np.ndarray:
    """The lower triangle of ``G = B B'`` (ell x ell); the upper triangle is left unset.

    When the first ``k = len(kept2)`` rows of B are a previous shrink's output they are mutually
    orthogonal with squared norms ``kept2`` (``U_k' G U_k = diag(lam - delta)``), so only the new
    rows' products ``N B_old'`` and ``N N'`` are computed: about half the work of ``B B'``.
    """
    k = 0 if kept2 is None else kept2.shape[0]
    if k == 0:
        return B @ B.T
    N = B[k:]
    G = np.empty((B.shape[0], B.shape[0]), dtype=B.dtype)
    G[:k, :k] = np.diag(kept2)
    np.matmul(N, B[:k].T, out=G[k:, :k])
    np.matmul(N, N.T, out=G[k:, k:])
    return G


def _shrink_gram(B: np.ndarray, m: int, kept2: np.ndarray | None = None
                 ) -> tuple[np.ndarray, float, np.ndarray]:
    """FD shrink through ``eigh(B B')``; returns (new nonzero rows, delta, their squared
    norms ``lam - delta``)."""
    G = _gram(B, kept2)
    lam, U = scipy.linalg.eigh(G, lower=True, driver="evd", overwrite_a=True,
                               check_finite=False)
    lam = lam[::-1]
    U = U[:, ::-1]
    lam = np.maximum(lam, 0.0)
    delta = float(lam[m - 1]) if lam.shape[0] >= m else 0.0
    keep = lam > delta
    k = int(np.count_nonzero(keep))
    if k == 0:
        return np.zeros((0, B.shape[1]), dtype=B.dtype), delta, np.zeros(0, dtype=B.dtype)
    scale = np.sqrt((lam[:k] - delta) / lam[:k])
    return (U[:, :k] * scale).T @ B, delta, (lam[:k] - delta).astype(B.dtype)


def _shrink_svd(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD shrink through ``svd(B)``; returns (new nonzero rows, delta, their squared norms)."""
    _, S, Vt = np.linalg.svd(B, full_matrices=False)
    lam = S * S
    delta = float(lam[m - 1]) if lam.shape[0] >= m else 0.0
    keep = lam > delta
    k = int(np.count_nonzero(keep))
    return np.sqrt(lam[:k] - delta)[:, None] * Vt[:k], delta, (lam[:k] - delta).astype(B.dtype)
