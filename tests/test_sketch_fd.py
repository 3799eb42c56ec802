"""Frequent Directions / Robust FD sketches: the covariance guarantee, merging, the Gram-route
shrink against the SVD route, the low-rank preconditioner, the Dask path and bad input.

Reference for the guarantee: all eigenvalues of ``A'A - B'B`` (every unit u at once) against
``||A - A_k||_F^2 / (m - k)`` computed from numpy's SVD of A.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.sketch import (
    FrequentDirections,
    GaussianSketch,
    RobustFD,
    SJLTSketch,
    SketchPreconditioner,
    fd_sketch_dask,
)

pytestmark = pytest.mark.usefixtures("one_blas_thread")

def _tails(A: np.ndarray) -> np.ndarray:
    """``Delta_k = ||A - A_k||_F^2`` for k = 0..rank."""
    s2 = np.linalg.svd(A, compute_uv=False) ** 2
    return np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])


def _random(n=600, d=80, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _low_rank(n=600, d=80, rank=12, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d)) + 1e-3 * \
        rng.standard_normal((n, d))


def _decaying(n=600, d=80, seed=2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * np.exp(-np.arange(d) / 10.0)


MATRICES = {"random": _random, "low_rank": _low_rank, "decaying": _decaying}


def _check_fd_bound(A, B, m, ks, rho=None):
    """0 <= u'(A'A - B'B)u <= Delta_k/(m-k) for all unit u (and RFD's two-sided bound)."""
    tails = _tails(A)
    E = A.T @ A - B.T @ B
    ev = np.linalg.eigvalsh(E)
    scale = np.linalg.norm(A, 2) ** 2
    assert ev.min() >= -1e-10 * scale
    for k in ks:
        bound = tails[k] / (m - k)
        assert ev.max() <= bound * (1 + 1e-9) + 1e-10 * scale, (k, ev.max(), bound)
        if rho is not None:
            assert np.abs(ev - rho).max() <= bound / 2 * (1 + 1e-9) + 1e-10 * scale
    # several explicit unit vectors as well
    rng = np.random.default_rng(3)
    U = rng.standard_normal((A.shape[1], 5))
    U /= np.linalg.norm(U, axis=0)
    gap = np.sum((A @ U) ** 2, axis=0) - np.sum((B @ U) ** 2, axis=0)
    assert np.all(gap >= -1e-10 * scale)
    assert np.all(gap <= min(tails[k] / (m - k) for k in ks) * (1 + 1e-9) + 1e-10 * scale)


@pytest.mark.parametrize("kind", sorted(MATRICES))
@pytest.mark.parametrize("m", [8, 20])
def test_fd_guarantee(kind, m):
    A = MATRICES[kind]()
    sk = FrequentDirections(m)
    for start in range(0, A.shape[0], 37):  # uneven blocks
        sk.partial_fit(A[start:start + 37])
    B = sk.sketch_
    assert B.shape == (m, A.shape[1])
    assert sk.rho_ == 0.0
    assert sk.n_rows_seen_ == A.shape[0]
    assert np.isclose(sk.frob2_, np.sum(A**2))
    _check_fd_bound(A, B, m, ks=[0, 1, m // 4, m // 2, m - 1])
    # the total shrinkage obeys the same bound (the proof's key step)
    tails = _tails(A)
    assert sk.delta_sum_ <= min(tails[k] / (m - k) for k in range(m)) * (1 + 1e-9)


@pytest.mark.parametrize("kind", sorted(MATRICES))
@pytest.mark.parametrize("factor", [3, 4])
def test_larger_buffer_keeps_fd_bound(kind, factor):
    """A buffer of factor*m rows shrunk by its m-th squared singular value removes at least
    m * delta per shrink, so sum(delta) <= ||A - A_k||_F^2 / (m - k) still holds (fewer shrinks)."""
    A = MATRICES[kind]()
    m = 12
    sk = RobustFD(m, buffer_rows=factor * m).fit(A, block_size=53)
    base = RobustFD(m).fit(A, block_size=53)
    assert sk.n_shrinks_ < base.n_shrinks_
    tails = _tails(A)
    assert sk.delta_sum_ <= min(tails[k] / (m - k) for k in range(m)) * (1 + 1e-9)
    _check_fd_bound(A, sk.sketch_, m, ks=[0, 1, m // 2, m - 1], rho=sk.rho_)


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_float32_sketch_keeps_bound_to_float32_rounding(kind):
    """dtype='float32': the same guarantee up to single-precision rounding of ||A||_2^2."""
    A = MATRICES[kind]()
    m = 16
    sk = RobustFD(m, dtype="float32").fit(A, block_size=64)
    ref = RobustFD(m).fit(A, block_size=64)
    B = sk.sketch_
    assert B.dtype == np.float64
    tails = _tails(A)
    scale = np.linalg.norm(A, 2) ** 2
    ev = np.linalg.eigvalsh(A.T @ A - B.T @ B)
    bound = min(tails[k] / (m - k) for k in range(m))
    assert ev.min() >= -1e-5 * scale
    assert ev.max() <= bound + 1e-5 * scale
    assert np.abs(ev - sk.rho_).max() <= bound / 2 + 1e-5 * scale
    # rho (RFD's alpha / 2) tracks float64 to rounding of the scale, not of rho itself
    assert abs(sk.rho_ - ref.rho_) <= 1e-5 * scale


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_rfd_guarantee(kind):
    A = MATRICES[kind]()
    m = 16
    rfd = RobustFD(m).fit(A, block_size=50)
    fd = FrequentDirections(m).fit(A, block_size=50)
    # RFD keeps the same B as FD; only rho differs
    np.testing.assert_allclose(rfd.sketch_, fd.sketch_, atol=1e-10)
    assert rfd.rho_ == pytest.approx(fd.delta_sum_ / 2)
    assert rfd.rho_ > 0
    _check_fd_bound(A, rfd.sketch_, m, ks=[0, 2, 8, 15], rho=rfd.rho_)


def test_rfd_is_tighter_than_fd_on_decaying_spectrum():
    A = _decaying()
    m = 16
    rfd = RobustFD(m).fit(A)
    B = rfd.sketch_
    E = A.T @ A - B.T @ B
    err_fd = np.linalg.norm(E, 2)
    err_rfd = np.linalg.norm(E - rfd.rho_ * np.eye(A.shape[1]), 2)
    assert err_rfd < err_fd


@pytest.mark.parametrize("robust", [False, True])
def test_merged_sketch_keeps_bound(robust):
    A = _decaying(n=900)
    m = 12
    parts = np.array_split(A, 4)
    sketches = [FrequentDirections(m, robust=robust).fit(p, block_size=64) for p in parts]
    merged = sketches[0]
    for other in sketches[1:]:
        merged.merge(other)
    assert merged.n_rows_seen_ == A.shape[0]
    _check_fd_bound(A, merged.sketch_, m, ks=[0, 3, 6, 11],
                    rho=merged.rho_ if robust else None)


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_gram_route_equals_svd_route(kind):
    A = MATRICES[kind]()
    m = 16
    g = RobustFD(m, shrink="gram").fit(A, block_size=100)
    s = RobustFD(m, shrink="svd").fit(A, block_size=100)
    Bg, Bs = g.sketch_, s.sketch_
    scale = np.linalg.norm(A, 2) ** 2
    np.testing.assert_allclose(Bg.T @ Bg, Bs.T @ Bs, atol=1e-9 * scale)
    np.testing.assert_allclose(np.linalg.norm(Bg, axis=1), np.linalg.norm(Bs, axis=1),
                               rtol=1e-6, atol=1e-9 * np.sqrt(scale))
    assert g.rho_ == pytest.approx(s.rho_, rel=1e-9, abs=1e-12 * scale)
    assert g.n_shrinks_ == s.n_shrinks_


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_structured_gram_over_many_shrinks_keeps_bound_and_svd_sketch(kind):
    """The Gram shrink takes the kept rows' block of B B' as diag(lam - delta) (they are
    orthogonal after a shrink) and computes only N B_old' and N N'. Over 600-750 shrinks (m = 4)
    the kept rows stay orthogonal to rounding, the bound holds and the sketch is the SVD
    route's (which forms nothing from the previous shrink)."""
    A = np.vstack([MATRICES[kind](seed=s) for s in range(5)])  # 3000 x 80
    m = 4
    g = FrequentDirections(m).fit(A, block_size=64)
    s = FrequentDirections(m, shrink="svd").fit(A, block_size=64)
    assert g.n_shrinks_ >= 500
    Bg, Bs = g.sketch_, s.sketch_
    scale = np.linalg.norm(A, 2) ** 2
    G = Bg @ Bg.T
    assert np.abs(G - np.diag(np.diag(G))).max() <= 1e-12 * scale
    _check_fd_bound(A, Bg, m, ks=[0, 1, 2, 3])
    np.testing.assert_allclose(Bg.T @ Bg, Bs.T @ Bs, atol=1e-9 * scale)
    assert g.delta_sum_ == pytest.approx(s.delta_sum_, rel=1e-9)


@pytest.mark.parametrize("kind", sorted(MATRICES))
@pytest.mark.parametrize("robust", [False, True])
def test_covariance_route_equals_gram_route(kind, robust):
    """Holding the buffer as C = B'B (d x d) gives the Gram route's sketch for the same buffer
    size: the same shrinks, the same B'B, the same total shrinkage, over uneven blocks."""
    A = np.vstack([MATRICES[kind](seed=s) for s in range(3)])  # 1800 x 80
    m, ell = 12, 40
    c = FrequentDirections(m, robust=robust, shrink="covariance", buffer_rows=ell)
    g = FrequentDirections(m, robust=robust, shrink="gram", buffer_rows=ell)
    for start in range(0, A.shape[0], 61):
        c.partial_fit(A[start:start + 61])
        g.partial_fit(A[start:start + 61])
    Bc, Bg = c.sketch_, g.sketch_
    assert c.route_ == "covariance" and g.route_ == "gram"
    assert c.n_shrinks_ == g.n_shrinks_ >= 60
    scale = np.linalg.norm(A, 2) ** 2
    np.testing.assert_allclose(Bc.T @ Bc, Bg.T @ Bg, atol=1e-9 * scale)
    assert c.delta_sum_ == pytest.approx(g.delta_sum_, rel=1e-9)
    assert c.rho_ == pytest.approx(g.rho_, rel=1e-9, abs=1e-12 * scale)
    _check_fd_bound(A, Bc, m, ks=[0, 1, m // 2, m - 1], rho=c.rho_ if robust else None)


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_covariance_route_default_buffer_keeps_bound(kind):
    """The automatic route for d <= 4 m is the covariance one, with a buffer of m + 64 d rows;
    with more rows than that it shrinks and the bound still holds."""
    A = np.vstack([MATRICES[kind](seed=s) for s in range(10)])  # 6000 x 80
    m = 20
    sk = RobustFD(m).fit(A, block_size=700)
    assert sk.route_ == "covariance"
    assert sk.n_shrinks_ == 1  # at m + 64 d = 5140 rows
    _check_fd_bound(A, sk.sketch_, m, ks=[0, 1, m // 2, m - 1], rho=sk.rho_)
    tails = _tails(A)
    assert sk.delta_sum_ <= min(tails[k] / (m - k) for k in range(m)) * (1 + 1e-9)
    # the sketch improves on the Gram route's (fewer shrinks remove less)
    g = RobustFD(m, shrink="gram").fit(A, block_size=700)
    assert sk.delta_sum_ <= g.delta_sum_


def test_covariance_route_with_few_rows_is_exact():
    """Fewer than m rows: the sketch's B'B is A'A itself (no shrink), and sketch_ twice is the
    same array."""
    A = _random(n=15, d=40)
    sk = FrequentDirections(20).fit(A, block_size=4)
    assert sk.route_ == "covariance" and sk.n_shrinks_ == 0
    B = sk.sketch_
    np.testing.assert_allclose(B.T @ B, A.T @ A, atol=1e-12 * np.linalg.norm(A, 2) ** 2)
    np.testing.assert_array_equal(sk.sketch_, B)
    assert sk.delta_sum_ == 0.0


def test_automatic_route():
    A = _random(n=50, d=40)
    assert FrequentDirections(10).partial_fit(A).route_ == "covariance"  # d = 4 m
    assert FrequentDirections(9).partial_fit(A).route_ == "gram"  # d > 4 m
    assert FrequentDirections(9, buffer_rows=41).partial_fit(A).route_ == "covariance"
    assert FrequentDirections(10, shrink="gram").partial_fit(A).route_ == "gram"


@pytest.mark.parametrize("robust", [False, True])
def test_merge_across_routes_keeps_bound(robust):
    A = _decaying(n=900)
    m = 12
    parts = np.array_split(A, 3)
    merged = FrequentDirections(m, robust=robust, shrink="covariance", buffer_rows=100)
    merged.fit(parts[0], block_size=64)
    merged.merge(FrequentDirections(m, robust=robust, shrink="gram").fit(parts[1]))
    other = FrequentDirections(m, robust=robust, shrink="covariance", buffer_rows=200)
    merged.merge(other.fit(parts[2], block_size=64))
    assert merged.n_rows_seen_ == 900
    _check_fd_bound(A, merged.sketch_, m, ks=[0, 3, 6, 11],
                    rho=merged.rho_ if robust else None)


@pytest.mark.parametrize("shrink", ["gram", "covariance"])
@pytest.mark.parametrize("factor", [1e18, 1e-30])
def test_float32_sketch_at_large_and_small_scales(shrink, factor):
    """float32 buffers rescale rows by powers of two: entries of 1e18 in 1024 columns used to
    overflow the float32 Gram (a NaN shrinkage and a wrong sketch); now the sketch of A * s is
    s times the sketch of A to float32 rounding."""
    A = np.random.default_rng(5).uniform(-1.0, 1.0, (700, 1024))
    ref = RobustFD(64, shrink=shrink, dtype="float32").fit(A, block_size=128)
    sk = RobustFD(64, shrink=shrink, dtype="float32").fit(A * factor, block_size=128)
    B, R = sk.sketch_ / factor, ref.sketch_
    assert np.all(np.isfinite(B)) and np.isfinite(sk.delta_sum_)
    scale = np.linalg.norm(A, 2) ** 2
    np.testing.assert_allclose(B.T @ B, R.T @ R, atol=1e-5 * scale)
    assert sk.rho_ / factor**2 == pytest.approx(ref.rho_, rel=1e-4)


def test_covariance_route_memory_is_order_d_squared():
    A = _random(n=400, d=30)
    sk = FrequentDirections(10).fit(A, block_size=7)
    arrays = [v for v in vars(sk).values() if isinstance(v, np.ndarray)]
    assert sk.route_ == "covariance"
    assert max(a.size for a in arrays) == 30 * 30  # C, nothing ell x d (ell = 10 + 64 * 30)


def test_memory_is_order_m_d():
    A = _random(n=400, d=60)
    sk = FrequentDirections(10).fit(A, block_size=7)
    arrays = [v for v in vars(sk).values() if isinstance(v, np.ndarray)]
    assert max(a.size for a in arrays) == 2 * 10 * 60  # the 2m x d buffer, nothing d x d


@pytest.mark.parametrize("shift", [1e-3, 1.0, 50.0])
def test_preconditioner_matches_dense_inverse(shift):
    rng = np.random.default_rng(4)
    B = rng.standard_normal((7, 30)) * np.arange(1, 31)
    P = SketchPreconditioner(B, shift)
    H = B.T @ B + shift * np.eye(30)
    v = rng.standard_normal(30)
    V = rng.standard_normal((30, 3))
    tol = 1e-13 * np.linalg.cond(H)  # both sides carry rounding of order eps * cond(H)
    for rhs in (v, V):
        ref = np.linalg.solve(H, rhs)
        assert np.linalg.norm(P.solve(rhs) - ref) <= tol * np.linalg.norm(ref)
    np.testing.assert_allclose(P.matvec(P.solve(v)), v, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(P.matvec(v), H @ v, rtol=1e-10)
    assert P.V_.shape == (30, 7)


def test_preconditioner_with_zero_rows():
    B = np.zeros((4, 6))
    B[0, 1] = 3.0
    P = SketchPreconditioner(B, 2.0)
    H = B.T @ B + 2.0 * np.eye(6)
    v = np.arange(6.0)
    np.testing.assert_allclose(P.solve(v), np.linalg.solve(H, v))


@pytest.mark.parametrize("cls", [GaussianSketch, SJLTSketch])
def test_random_sketch_streaming_equals_explicit_matrix(cls):
    A = _random(n=300, d=20)
    sk1 = cls(40, seed=5).fit(A, block_size=64)
    S = cls(40, seed=5).fit(np.eye(300), block_size=64).sketch_
    np.testing.assert_allclose(sk1.sketch_, S @ A, atol=1e-10)
    # E[S'S] = I: columns of S have unit norm for SJLT, about unit norm for Gaussian
    norms = np.sum(S**2, axis=0)
    if cls is SJLTSketch:
        np.testing.assert_allclose(norms, 1.0)
        assert np.all(np.count_nonzero(S, axis=0) <= 10)
    else:
        assert abs(norms.mean() - 1.0) < 0.05


def test_dask_merge_keeps_single_process_guarantee():
    da = pytest.importorskip("dask.array")
    A = _decaying(n=1000, d=50)
    m = 10
    x = da.from_array(A, chunks=(230, 25))  # 5 row chunks, 2 column chunks
    for robust in (False, True):
        sk = fd_sketch_dask(x, m, robust=robust, scheduler="synchronous")
        assert sk.n_rows_seen_ == 1000
        _check_fd_bound(A, sk.sketch_, m, ks=[0, 2, 5, 9], rho=sk.rho_ if robust else None)


def test_bad_input_raises_naming_argument():
    A = _random(n=50, d=10)
    with pytest.raises(ValueError, match="'m'"):
        FrequentDirections(0)
    with pytest.raises(ValueError, match="'m'"):
        FrequentDirections(11).partial_fit(A)
    with pytest.raises(ValueError, match="'shrink'"):
        FrequentDirections(3, shrink="qr")
    bad = A.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        FrequentDirections(3).partial_fit(bad)
    sk = FrequentDirections(3).partial_fit(A)
    with pytest.raises(ValueError, match="'block'"):
        sk.partial_fit(A[:, :5])
    with pytest.raises(ValueError, match="'block'"):
        sk.partial_fit(A[0])
    with pytest.raises(ValueError, match="'other'"):
        sk.merge(FrequentDirections(4))
    with pytest.raises(ValueError, match="'shift'"):
        SketchPreconditioner(A, 0.0)
    with pytest.raises(ValueError, match="no rows"):
        _ = FrequentDirections(3).sketch_
