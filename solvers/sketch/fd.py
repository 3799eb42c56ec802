"""Frequent Directions (FD) and Robust FD (RFD): streaming sketches of A'A.

One pass over the rows of ``A`` (n x d), in blocks, keeps a buffer ``B`` of ``ell`` rows
(``buffer_rows``; the paper's 2m). When the buffer is full it is *shrunk*::

    B = U diag(S) V'  (conceptually);  delta = S[m-1]^2  (the m-th largest squared value)
    B <- diag(sqrt(max(S^2 - delta, 0))) V'             (at most m-1 nonzero rows remain)
    RFD only: rho <- rho + delta / 2

Guarantee (Ghashami et al. 2016; Huang 2018 for RFD), for every unit u and 0 <= k < m::

    0 <= ||A u||^2 - ||B u||^2 <= ||A - A_k||_F^2 / (m - k)                   (FD and RFD)
    | ||A u||^2 - ||B u||^2 - rho | <= ||A - A_k||_F^2 / (2 (m - k))          (RFD)

It holds for every ``ell > m``: a shrink removes at least ``m delta`` of ``||B||_F^2``. A shrink
needs only ``B'B``'s eigenpairs (``V``, ``S^2``), so the buffer can be held in two ways, which
give the same sketch up to rounding (tested):

- ``shrink="gram"``: the ``ell x d`` rows, shrunk through the eigendecomposition of the
  ``ell x ell`` Gram ``G = B B' = U diag(S^2) U'``: the new rows are
  ``diag(sqrt((S^2 - delta) / S^2)) U' B`` (V is never formed, and a row whose S^2 is tiny is
  only multiplied by a factor <= 1). After a shrink the kept rows are mutually orthogonal with
  squared norms ``S^2 - delta``, so only ``N B_old'`` and ``N N'`` of the new rows N are
  computed. Memory O(ell d); ``ell = 2m`` by default. ``shrink="svd"`` runs
  ``numpy.linalg.svd(B)`` instead (4-5x slower; a reference).
- ``shrink="covariance"``: ``C = B'B`` itself (d x d): a block of rows N enters as
  ``C += N'N`` (one BLAS syrk), and a shrink is ``C = V diag(lam) V'``, the kept rows
  ``diag(sqrt(lam_i - delta)) V_i'`` for ``lam_i > delta``, and ``C`` rebuilt from them. The
  buffer may then hold many rows: ``ell = m + 64 d`` by default, so a pass costs about one
  syrk per row (forming A'A) plus one d x d eigendecomposition per 64 d rows. Memory O(d^2).
- ``shrink="auto"`` (the default): ``"covariance"`` when ``d <= 4 m`` (its d x d matrix is then
  at most twice the Gram route's 2m x d buffer), or when ``buffer_rows > d`` is asked for;
  ``"gram"`` otherwise.

Why two routes (measured on the 2-core development machine, d = 1024, m = 256, n = 10^5): the
Gram route's cost is the 2m x 2m eigendecomposition of every shrink, one per m rows (30 ms
each in float64, one BLAS thread; LAPACK's top-m drivers were slower than the full
divide-and-conquer at 2m = 512, and a larger Gram buffer costs like ell^3 per shrink), which
made a pass 7-18x forming A'A. The covariance route pays a d x d eigendecomposition (0.1 s at
d = 1024) once per 64 d = 65,536 rows and otherwise streams the rows through syrk at BLAS
speed; see ``benchmarks/RESULTS.md`` for the pass against forming A'A. Where d is large
against m (d > 4 m: the eigendecomposition grows like d^3 and the matrix like d^2), the Gram
route stays the default, and is the only one whose memory is O(m d).

``dtype="float32"`` halves the memory of the Gram buffer and about halves the products of
either route; the covariance matrix itself is accumulated in float64 from float32 block
products, and its eigendecomposition is float64.

Sketches merge (``merge``): stacking two sketches and shrinking again keeps the same bound with
``A`` the stacked data (mergeable summaries), which is what makes FD distributable.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from solvers.errors import DataError
from solvers.threads import blas_limit
from solvers.validation import check_array, check_choice, check_int

_SHRINKS = ("auto", "gram", "svd", "covariance")
_DTYPES = ("float64", "float32")

COVARIANCE_MAX_RATIO = 4
"""``shrink="auto"`` holds the buffer as its d x d covariance when ``d <= 4 m``."""

COVARIANCE_BUFFER_FACTOR = 64
"""The covariance route's default buffer: ``m + 64 d`` rows between shrinks (one d x d
eigendecomposition costs about as much as 6,000-8,000 rows of syrk at d = 1024)."""

def automatic_route(d: int, m: int, buffer_rows: int | None = None) -> str:
    """The route ``shrink="auto"`` takes for rows of d features: ``"covariance"`` when
    ``d <= COVARIANCE_MAX_RATIO m`` or a buffer of more than d rows is asked for, else
    ``"gram"``."""
    wide = buffer_rows is not None and buffer_rows > d
    return "covariance" if wide or d <= COVARIANCE_MAX_RATIO * m else "gram"


_FLOAT32_RANGE = 2.0**32
"""float32 buffers keep their rows' largest magnitude within [2^-32, 2^32] (powers of two,
exact): the Gram or covariance entries then stay far inside float32's range for any
realistic n and d (2^64 * 2^40 < 2^127)."""


class FrequentDirections:
    """Streaming Frequent Directions sketch ``B`` (m x d) of the rows of ``A``.

    Parameters
    ----------
    m : int
        Sketch size (the paper's m, the number of rows kept); ``1 <= m <= d``.
    robust : bool, default False
        Robust FD (Huang 2018): also accumulate ``rho = sum(delta) / 2`` so that
        ``B'B + rho I`` approximates ``A'A`` twice as accurately.
    shrink : {"auto", "gram", "svd", "covariance"}, default "auto"
        How the buffer is held and shrunk (see the module docstring): ``"auto"`` takes
        ``"covariance"`` when ``d <= 4 m`` (or ``buffer_rows > d``), else ``"gram"``.
    buffer_rows : int, optional
        Rows in the buffer (the paper's 2m; must exceed m). A larger buffer shrinks less often.
        Default ``2 m`` (Gram and SVD routes) or ``m + 64 d`` (covariance route).
    blas_threads : int or None, default 1
        BLAS threads during a shrink (needs threadpoolctl; None leaves the library setting).
        The covariance route's accumulation ``C += N'N`` is not a shrink and uses the
        library's threads.
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
    route_ : str
        The route in use, ``"gram"``, ``"svd"`` or ``"covariance"`` (set by the first block).
    """

    def __init__(
        self,
        m: int,
        *,
        robust: bool = False,
        shrink: str = "auto",
        buffer_rows: int | None = None,
        blas_threads: int | None = 1,
        dtype: str = "float64",
    ) -> None:
        owner = type(self).__name__
        self.m = check_int(m, "m", owner, low=1)
        self.dtype = check_choice(dtype, "dtype", owner, _DTYPES)
        self.blas_threads = None if blas_threads is None else check_int(
            blas_threads, "blas_threads", owner, low=1)
        check_choice(shrink, "shrink", owner, _SHRINKS)
        self.robust = bool(robust)
        self.shrink = shrink
        self.buffer_rows = None if buffer_rows is None else check_int(
            buffer_rows, "buffer_rows", owner, low=self.m + 1)
        self.route_: str | None = None
        self._ell = 0  # the buffer's rows, set with the route by the first block
        self._buf: np.ndarray | None = None  # gram / svd: the ell x d rows
        self._cov: np.ndarray | None = None  # covariance: B'B (d x d, lower triangle)
        self._rows: np.ndarray | None = None  # covariance: B's rows, when they match _cov
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
        if self.route_ is None:
            self._start(X.shape[1])
        elif X.shape[1] != self._d:
            raise DataError(
                f"The 'block' argument has {X.shape[1]} features but this sketch expects "
                f"{self._d}."
            )
        self.frob2_ += float(np.einsum("ij,ij->", X, X))
        self.n_rows_seen_ += X.shape[0]
        self._insert(self._scaled(X))
        return self

    def _start(self, d: int) -> None:
        """Choose the route and the buffer size for rows of d features; allocate the buffer."""
        if self.m > d:
            raise DataError(
                f"The 'm' parameter (sketch size {self.m}) must be <= d = {d} features; "
                "with m >= d use A'A directly."
            )
        route = self.shrink
        if route == "auto":
            route = automatic_route(d, self.m, self.buffer_rows)
        self.route_ = route
        if self.buffer_rows is not None:
            self._ell = self.buffer_rows
        elif route == "covariance":
            self._ell = self.m + COVARIANCE_BUFFER_FACTOR * d
        else:
            self._ell = 2 * self.m
        if route == "covariance":
            self._cov = np.zeros((d, d), order="F")
            self._rows = np.zeros((0, d))
        else:
            self._buf = np.zeros((self._ell, d), dtype=self.dtype)

    @property
    def _d(self) -> int:
        return (self._cov if self._buf is None else self._buf).shape[1]

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
        if other.route_ is None:
            return self
        rows = other._content()
        if self.route_ is None:
            self._start(rows.shape[1])
        elif rows.shape[1] != self._d:
            raise DataError(
                f"The 'other' sketch has {rows.shape[1]} features; this one {self._d}."
            )
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
        if self.route_ is None:
            raise DataError("This sketch has seen no rows; call partial_fit(block) first.")
        rows = self._content()
        B = np.zeros((self.m, rows.shape[1]))
        B[: min(self.m, rows.shape[0])] = rows[: self.m]
        return B / self._scale

    @property
    def rho_(self) -> float:
        """RFD's shift ``sum(delta) / 2`` (0.0 for plain FD)."""
        if self._nfill > self.m:
            with blas_limit(self.blas_threads):
                self._shrink()
        return 0.5 * self.delta_sum_ if self.robust else 0.0

    @property
    def delta_sum_(self) -> float:
        """Total shrinkage ``sum(delta)``; FD's guarantee says it is <= ||A - A_k||_F^2/(m-k)."""
        return self._delta_sum / self._scale**2

    # ------------------------------------------------------------------ internals
    def _content(self) -> np.ndarray:
        """Rows (in the buffer's units) whose ``B'B`` is the sketch's: the buffer shrunk first
        when it holds more than m rows; the covariance route factors ``C`` if it must."""
        with blas_limit(self.blas_threads):
            if self._nfill > self.m:
                self._shrink()
            elif self.route_ == "covariance" and self._rows is None:
                self._factor()
        if self.route_ == "covariance":
            return self._rows
        return self._buf[: self._nfill]

    def _scaled(self, X: np.ndarray) -> np.ndarray:
        """X times the buffer's power-of-two scale. A float32 buffer keeps its rows' largest
        magnitude within [2^-32, 2^32] (``_FLOAT32_RANGE``): entries beyond that would overflow
        the Gram or covariance entries (a 1024-column block of 1e18 entries gave inf) or lose
        their digits in the cast. The scale is set by the first block outside the range and
        the buffer is rescaled, exactly, when a later block would exceed it; float64 keeps 1."""
        if self.dtype != "float32" or not X.size:
            return X
        mag = max(abs(float(np.max(X))), abs(float(np.min(X)))) * self._scale
        empty = self._nfill == 0  # counts the covariance route's kept rows too
        if np.isfinite(mag) and (mag > _FLOAT32_RANGE or (empty and 0 < mag < 1 / _FLOAT32_RANGE)):
            self._rescale(float(2.0 ** -np.ceil(np.log2(mag))))
        return X if self._scale == 1.0 else X * self._scale

    def _rescale(self, factor: float) -> None:
        """Multiply the buffer (and what is kept in its units) by a power of two."""
        if self._buf is not None and self._nfill:
            self._buf[: self._nfill] *= np.float32(factor)
        if self._cov is not None:
            self._cov *= factor * factor
        if self._rows is not None:
            self._rows = self._rows * factor
        if self._kept2 is not None:
            self._kept2 = self._kept2 * (factor * factor)
        self._delta_sum *= factor * factor
        self._scale *= factor

    def _insert(self, X: np.ndarray) -> None:
        """Add the rows of X to the buffer, shrinking each time it holds ``ell`` rows."""
        ell = self._ell
        pos = 0
        while pos < X.shape[0]:
            take = min(ell - self._nfill, X.shape[0] - pos)
            if self.route_ == "covariance":
                self._accumulate(X[pos:pos + take])
            else:
                self._buf[self._nfill:self._nfill + take] = X[pos:pos + take]
            self._nfill += take
            pos += take
            if self._nfill == ell:
                with blas_limit(self.blas_threads):
                    self._shrink()

    def _accumulate(self, N: np.ndarray) -> None:
        """``C += N'N`` (lower triangle) by one BLAS syrk on ``N'`` (Fortran order: no copy);
        float32 blocks are multiplied in float32 and added to the float64 C."""
        Nt = np.asarray(N, dtype=self.dtype).T
        if not Nt.flags.f_contiguous:
            Nt = np.asfortranarray(Nt)
        if self.dtype == "float32":
            self._cov += scipy.linalg.blas.ssyrk(1.0, Nt, trans=0, lower=1)
        else:
            self._cov = scipy.linalg.blas.dsyrk(1.0, Nt, c=self._cov, beta=1.0, trans=0,
                                                lower=1, overwrite_c=1)
        self._rows = None  # C no longer matches the kept rows

    def _shrink(self) -> None:
        """Shrink the filled part of the buffer by its m-th largest squared singular value."""
        if self.route_ == "covariance":
            self._shrink_covariance()
            self.n_shrinks_ += 1
            return
        buf = self._buf
        assert buf is not None
        Bf = buf[: self._nfill]
        if self.route_ == "gram":
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

    def _shrink_covariance(self) -> None:
        """The shrink on ``C = V diag(lam) V'``: keep ``diag(sqrt(lam_i - delta)) V_i'`` for
        ``lam_i > delta = lam_m``, and rebuild C from those rows (``C = B'B`` again)."""
        lam, V = _eigh_descending(self._cov)
        delta = float(lam[self.m - 1])
        k = int(np.count_nonzero(lam > delta))
        self._set_rows(V[:, :k], lam[:k] - delta)
        self._delta_sum += delta

    def _factor(self) -> None:
        """Rows for a buffer of at most m rows, without shrinking: ``C``'s top ``nfill``
        eigenpairs (its rank is at most nfill; the rest is rounding)."""
        lam, V = _eigh_descending(self._cov)
        k = min(self._nfill, int(np.count_nonzero(lam > 0.0)))
        self._set_rows(V[:, :k], lam[:k])

    def _set_rows(self, V: np.ndarray, sq: np.ndarray) -> None:
        """Make ``diag(sqrt(sq)) V'`` the buffer's rows and ``C`` their Gram ``V diag(sq) V'``."""
        rows = np.ascontiguousarray((V * np.sqrt(sq)).T)
        d = V.shape[0]
        self._cov = (scipy.linalg.blas.dsyrk(1.0, rows.T, trans=0, lower=1) if rows.shape[0]
                     else np.zeros((d, d), order="F"))
        self._rows = rows
        self._kept2 = sq
        self._nfill = rows.shape[0]


class RobustFD(FrequentDirections):
    """Robust Frequent Directions (Huang 2018): FD plus the shift ``rho_``; see the base class."""

    def __init__(self, m: int, *, shrink: str = "auto", buffer_rows: int | None = None,
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


def _eigh_descending(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (clipped at 0) and eigenvectors of the symmetric C given by its lower
    triangle, largest first (C is overwritten)."""
    lam, V = scipy.linalg.eigh(C, lower=True, driver="evd", overwrite_a=True, check_finite=False)
    return np.maximum(lam[::-1], 0.0), V[:, ::-1]


def _shrink_svd(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD shrink through ``svd(B)``; returns (new nonzero rows, delta, their squared norms)."""
    _, S, Vt = np.linalg.svd(B, full_matrices=False)
    lam = S * S
    delta = float(lam[m - 1]) if lam.shape[0] >= m else 0.0
    keep = lam > delta
    k = int(np.count_nonzero(keep))
    return np.sqrt(lam[:k] - delta)[:, None] * Vt[:k], delta, (lam[:k] - delta).astype(B.dtype)
