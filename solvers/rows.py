"""The one seam between the algorithms and their data: the few row-wise operations they need.

AID, the FD / random sketches and the sketched ridge solvers touch the rows of the data only
through these operations, so the same algorithm code runs on a numpy array in memory and on a
row-chunked Dask array on any Dask scheduler (threads, processes, a dask.distributed cluster):

===========================  ================================================================
operation                    formula (A: n x d rows, b / y / s: n-vectors, x: a d-vector)
===========================  ================================================================
``rmatvec(v)``               ``A' v``
``residual_gradient(x, b)``  ``(A'(A x - b), ||A x - b||^2)``: one pass
``normal_matvec(p)``         ``(A'A p, A p)``: one pass, ``A p`` kept beside the rows
``gram()``                   ``A'A`` (d x d)
``fd_sketch(m, robust)``     a (R)FD sketch of the rows (chunks merged in a tree)
``random_sketch(...)``       ``S [A, b]`` for a Gaussian or SJLT S
===========================  ================================================================

AID's operations (weighted sums per cluster label, the objective at a point, the per-cluster
sign test, the split) are in :class:`LadRows` (numpy) and ``solvers.dask_rows.DaskLadRows``, and
for the linear SVM in :class:`SvmRows` and ``solvers.dask_svm_rows.DaskSvmRows``.

:func:`is_dask` recognises a Dask collection without importing Dask; ``solvers.dask_rows`` (the
Dask implementation) is imported only when a Dask array arrives. On a Dask array only d-vectors,
per-cluster sums and sketches (m x d) travel between the workers and the caller; the n-vectors
(residuals, cluster labels, ``A p``) stay beside their chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # solvers.sketch imports this module; import its classes where used
    from solvers.sketch.fd import FrequentDirections


def is_dask(obj: Any) -> bool:
    """True for a Dask array (``dask.array.Array``), judged without importing Dask."""
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "chunks") and hasattr(
        obj, "dask")


def any_dask(*objs: Any) -> bool:
    """True when one of ``objs`` is a Dask array."""
    return any(is_dask(o) for o in objs)


class NumpyRows:
    """The ridge / sketch operations of the module docstring on an in-memory array ``A``."""

    def __init__(self, A: np.ndarray) -> None:
        self.A = A
        self.shape = A.shape

    def block_rows(self, block_size: int) -> int:
        """Rows per streamed block: ``block_size`` (the rows are already dense)."""
        return block_size

    def vector(self, v: np.ndarray) -> np.ndarray:
        """``v`` as an n-vector beside the rows (itself in memory)."""
        return v

    def dot(self, u: np.ndarray, v: np.ndarray) -> float:
        """``u'v`` of two n-vectors."""
        return float(u @ v)

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """``A' v`` (a d-vector)."""
        return self.A.T @ v

    def residual_gradient(self, x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
        """``(A'(A x - b), ||A x - b||^2)``."""
        r = self.A @ x - b
        return self.A.T @ r, float(r @ r)

    def normal_matvec(self, p: np.ndarray, block: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``(A'A p, A p)``: by default two sweeps, ``A p`` then ``A'(A p)`` (two multithreaded
        BLAS products); with ``block`` rows per block, ``A_j p`` then ``A_j'(A_j p)`` per block
        (one read of A). Measured (2 cores, medians of 9): two sweeps 110 ms at n = 5e4,
        d = 4096 and 56 ms at n = 1e5, d = 1024; 2 MB blocks 168 and 81 ms, 4 MB blocks 106
        and 53 ms (the per-block calls cost what the single read saves)."""
        A = self.A
        if block is None:
            Ap = A @ p
            return A.T @ Ap, Ap
        Ap = np.empty(A.shape[0], dtype=np.result_type(A, p))
        out = np.zeros(A.shape[1], dtype=Ap.dtype)
        for start in range(0, A.shape[0], block):
            Aj = A[start:start + block]
            np.dot(Aj, p, out=Ap[start:start + block])
            out += Aj.T @ Ap[start:start + block]
        return out, Ap

    def zeros(self) -> np.ndarray:
        """The n-vector 0."""
        return np.zeros(self.shape[0])

    def axpy(self, y: np.ndarray, alpha: float, x: np.ndarray) -> np.ndarray:
        """``y + alpha x`` (in place)."""
        y += alpha * x
        return y

    def residual_sq(self, Ax: np.ndarray, b: np.ndarray) -> float:
        """``||Ax - b||^2`` for a kept ``A x``."""
        r = Ax - b
        return float(r @ r)

    def gram(self) -> np.ndarray:
        """``A'A``."""
        return self.A.T @ self.A

    def fd_sketch(self, m: int, robust: bool, block_size: int) -> FrequentDirections:
        """(R)FD sketch of the rows, streamed in blocks of ``block_size`` rows."""
        from solvers.sketch.fd import FrequentDirections

        sk = FrequentDirections(m, robust=robust)
        for start in range(0, self.shape[0], block_size):
            sk.partial_fit(self.A[start:start + block_size])
        return sk

    def random_sketch(self, kind: str, m: int, seed: int | None, block_size: int,
                      b: np.ndarray | None = None) -> np.ndarray:
        """``S A`` (or ``S [A, b]``) for a fresh ``kind`` sketch, streamed in blocks."""
        from solvers.sketch.random import make_random_sketch

        sk = make_random_sketch(kind, m, seed=seed)
        M = self.A if b is None else np.column_stack([self.A, b])
        for start in range(0, M.shape[0], block_size):
            sk.partial_fit(M[start:start + block_size])
        return sk.sketch_


class SparseRows(NumpyRows):
    """The operations of :class:`NumpyRows` on a sparse ``A`` (a scipy.sparse matrix or a
    :class:`solvers.sparse.CentredSparse`): products through the sparse structure, the
    sketches fed dense blocks of ``block_size`` rows, one block at a time."""

    def __init__(self, A: Any) -> None:
        from solvers.sparse import CentredSparse

        super().__init__(A if isinstance(A, CentredSparse) else CentredSparse(A))

    DENSE_BLOCK_BYTES = 16 * 2**20
    """A dense block of rows holds at most this many bytes (16 MB): at most ``block_size``
    rows and at most 16 MB / (8 d) rows (at least one)."""

    def block_rows(self, block_size: int) -> int:
        """Rows per dense block: ``block_size`` capped at :attr:`DENSE_BLOCK_BYTES`."""
        return max(1, min(block_size, self.DENSE_BLOCK_BYTES // (8 * self.shape[1])))

    def fd_sketch(self, m: int, robust: bool, block_size: int) -> FrequentDirections:
        """(R)FD sketch of the rows, fed dense blocks of :meth:`block_rows` rows."""
        return super().fd_sketch(m, robust, self.block_rows(block_size))

    def normal_matvec(self, p: np.ndarray, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """``(A'A p, A p)``: two sparse products."""
        Ap = self.A @ p
        return self.A.T @ Ap, Ap

    def gram(self) -> np.ndarray:
        """``A'A`` (d x d dense) from the sparse ``A'A``."""
        return self.A.gram()

    def random_sketch(self, kind: str, m: int, seed: int | None, block_size: int,
                      b: np.ndarray | None = None) -> np.ndarray:
        """``S A`` (or ``S [A, b]``) with the rows kept sparse: per block of ``block_size`` rows
        the sketch draws its m x k block ``S_j`` (the same draws as the dense stream, so the
        same S) and ``S_j A_j`` is a sparse product."""
        from solvers.sketch.random import make_random_sketch

        sk = make_random_sketch(kind, m, seed=seed)
        n, d = self.shape
        SA = np.zeros((m, d + (b is not None)))
        for start in range(0, n, block_size):
            stop = min(start + block_size, n)
            S = sk._block_matrix(stop - start)  # what partial_fit draws for this block
            SA[:, :d] += self.A.sketch_rows(S, start, stop)
            if b is not None:
                SA[:, d] += np.asarray(S @ b[start:stop]).ravel()
        return SA


def as_rows(A: Any) -> NumpyRows:
    """An in-memory ``A`` behind the operations (:class:`SparseRows` when sparse)."""
    from solvers.sparse import is_sparse

    return SparseRows(A) if is_sparse(A) else NumpyRows(A)


def ridge_rows(A: Any, b: Any, owner: str) -> tuple[Any, Any]:
    """``(rows, b)`` for the ridge solvers: checked data behind the operations above.

    A numpy ``A`` goes through :func:`solvers.validation.check_array` and ``check_vector``; a
    Dask ``A`` (or ``b``) is checked chunk by chunk (same messages) without being loaded.
    An ``A`` that already is a :class:`NumpyRows` or :class:`SparseRows` is taken as checked:
    the problem layer wraps its checked working data so, sparing a second finiteness pass.
    """
    if any_dask(A, b):
        from solvers.dask_rows import DaskRows

        rows = DaskRows.checked(A, "A", owner)
        return rows, rows.checked_vector(b, "b", against="A")
    from solvers.sparse import CentredSparse
    from solvers.validation import check_array, check_vector

    if isinstance(A, NumpyRows):  # SparseRows too (a subclass)
        return A, check_vector(b, A.shape[0], "b", against="A")
    if not isinstance(A, CentredSparse):  # a CentredSparse was built from checked data
        A = check_array(A, "A", accept_sparse=True, keep_sparse=True)
    return as_rows(A), check_vector(b, A.shape[0], "b", against="A")


def lad_residual(X: np.ndarray, y: np.ndarray, beta: np.ndarray, b: float) -> np.ndarray:
    """``r = y - X beta - b`` in one new n-vector (the product's; numpy's ``y - X @ beta - b``
    makes three, which cost as much as the product at n = 10^7, p = 10)."""
    if not X.shape[1]:
        return y - b
    r = X @ beta
    np.subtract(y, r, out=r)
    if b:
        r -= b
    return r


class LadRows:
    """AID-LAD's row-wise operations on in-memory arrays ``X`` (n x p), ``y``, ``s`` (n,).

    ``evaluate`` gives, in one pass, the objective ``E = sum_i s_i rho(y_i - x_i'beta - b)``
    and the per-cluster sign test (clusters with residuals above ``tol`` and below ``-tol``);
    ``split`` cuts the mixed clusters and sums the new clusters again. The Dask twin is
    ``solvers.dask_rows.DaskLadRows``.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> None:
        self.X, self.y, self.s = X, y, s

    @property
    def abs_y(self) -> float:
        """``sum_i s_i |y_i|``."""
        return float(self.s @ np.abs(self.y))

    @property
    def max_abs_y(self) -> float:
        """``max_i |y_i|``."""
        return float(np.max(np.abs(self.y)))

    def residual(self, beta: np.ndarray, b: float) -> np.ndarray:
        """``r = y - X beta - b``."""
        return lad_residual(self.X, self.y, beta, b)

    def evaluate(self, beta: np.ndarray, b: float, agg: Any, tol: float,
                 quantile: float, means: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
        """``(E, mixed, r)``: the objective, the mixed clusters and the residuals (``means``
        is for the Dask twin; in memory the split reads r)."""
        from solvers.aid.aggregation import mixed_clusters
        from solvers.aid.lad import check_loss

        r = self.residual(beta, b)
        return check_loss(r, self.s, quantile), mixed_clusters(
            agg.labels, agg.n_clusters, r, tol), r

    def split(self, agg: Any, mixed: np.ndarray, r: np.ndarray,
              rule: str) -> tuple[np.ndarray, np.ndarray]:
        """Split the mixed clusters by the sign of ``r`` and ``rule`` (see
        ``solvers.aid.aggregation.split_by_rule``)."""
        from solvers.aid.aggregation import split_by_rule

        return split_by_rule(agg, self.X, self.y, self.s, mixed, r, rule)

    def columns(self) -> dict[str, np.ndarray]:
        """The named arrays, for the scaling diagnosis."""
        cols = {f"column {j} of X": self.X[:, j] for j in range(self.X.shape[1])}
        return {**cols, "y": self.y, "sample_weight": self.s}


class SvmRows:
    """Linear-SVM AID's row-wise operations on in-memory ``X`` (n x p, the scaled features; n x 0
    for a kernel, whose margins come from the kernel), ``y`` in {-1, +1} and ``s`` (n,).

    ``evaluate`` gives the margin values ``m_i = 1 - y_i (x_i'w + b)``, the weighted hinge
    ``sum_i s_i max(0, m_i)`` and the per-cluster sign test of ``m`` (clusters with rows above
    ``tol`` and below ``-tol``); ``split`` cuts the mixed clusters by the sign of ``m`` and sums
    the new clusters again. The Dask twin is ``solvers.dask_svm_rows.DaskSvmRows``.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> None:
        self.X, self.y, self.s = X, y, s
        self.n, self.p = X.shape

    def weight_sum(self) -> float:
        """``sum_i s_i``."""
        return float(self.s.sum())

    def weight_mean(self) -> float:
        """``sum_i s_i / n``."""
        return float(self.s.mean())

    def column_factors(self) -> np.ndarray:
        """The power-of-two factor of each column (``solvers.aid.scaling.column_factors``)."""
        from solvers.aid.scaling import column_factors

        return column_factors(self.X)

    def scaled(self, col: np.ndarray) -> SvmRows:
        """The rows of ``(X c, y, s)`` (X itself when every factor is 1)."""
        from solvers.aid.scaling import scale_columns

        return SvmRows(scale_columns(self.X, col), self.y, self.s)

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``idx`` of X, y, s."""
        return self.X[idx], self.y[idx], self.s[idx]

    def margins(self, w: np.ndarray, b: float) -> np.ndarray:
        """``m = 1 - y (X w + b)``."""
        return 1.0 - self.y * (self.X @ w + b)

    def initial_labels(self, K: int, score: np.ndarray | None, method: str,
                       seed: int) -> np.ndarray:
        """``solvers.aid.clustering.svm_clusters`` of the rows."""
        from solvers.aid.clustering import svm_clusters

        return svm_clusters(self.X, self.y, self.s, K, score=score, method=method, seed=seed)

    def aggregate(self, labels: np.ndarray) -> Any:
        """``solvers.aid.aggregation.aggregate`` of the rows (SY_k = sum s_i y_i)."""
        from solvers.aid.aggregation import aggregate

        return aggregate(self.X, self.y, self.s, labels)

    def evaluate(self, w: np.ndarray, b: float, agg: Any,
                 tol: float) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i s_i max(0, m_i), mixed, m)`` at ``(w, b)``."""
        return self.judge(self.margins(w, b), agg, tol)

    def judge(self, m: np.ndarray, agg: Any, tol: float) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i s_i max(0, m_i), mixed, m)`` for given margin values ``m``."""
        from solvers.aid.aggregation import mixed_clusters

        return (float(self.s @ np.maximum(m, 0.0)),
                mixed_clusters(agg.labels, agg.n_clusters, m, tol), m)

    def split(self, agg: Any, mixed: np.ndarray, m: np.ndarray,
              refine: bool) -> tuple[np.ndarray, np.ndarray]:
        """Split the mixed clusters by the sign of ``m`` (see ``split_mixed``)."""
        from solvers.aid.aggregation import split_mixed

        return split_mixed(agg, self.X, self.y, self.s, mixed, m, refine=refine)

    def columns(self) -> dict[str, np.ndarray]:
        """The named arrays, for the scaling diagnosis."""
        cols = {f"column {j} of X": self.X[:, j] for j in range(self.p)}
        return {**cols, "sample_weight": self.s}
