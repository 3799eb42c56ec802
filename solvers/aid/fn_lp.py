"""A Frisch-Newton interior point for the aggregated LAD / quantile LP (docs/strategies/aid.md).

The aggregated LP of :mod:`solvers.aid.lad_lp`,

    max_v  SY'v   s.t.  SXa'v = 0,   lo <= v_k <= hi,

has K columns (clusters) and only q = p (+ 1) rows.  With v = lo + (hi - lo) x it becomes the
bounded LP solved here,

    (P)  min_x  c'x   s.t.  A'x = b,  0 <= x <= 1,    c = -SY,  A = SXa,  b = (1 - tau) A'1,

(-lo / (hi - lo) = 1 - tau), whose dual is

    (D)  max_{y, z, w}  b'y - 1'w   s.t.  A y + z - w = c,  z, w >= 0.

x = 1 - tau (v = 0) is feasible, which is Koenker and d'Orey's starting point; beta = -y (the
reduced cost SY - SXa beta = w - z is positive exactly where v sits at hi).

Each iteration is Mehrotra's predictor-corrector step on the perturbed KKT conditions
x z = mu, s w = mu (s = 1 - x): with Theta = (z / x + w / s)^-1 the Newton direction needs one
q x q solve with A' Theta A, O(K q^2) work, which is why this is the method of choice for LPs
with many columns and few rows (R quantreg's ``rq.fit.fnb``; Portnoy and Koenker 1997).  The
dual simplex of HiGHS, started cold on the same LP with 10^4 columns, was measured 10-30x
slower here; warm-started on small changes it is fast, so AID keeps both (``lp=`` option).

Nothing here needs to be exact for AID's certificate: the lower bound F comes from
:func:`solvers.aid.lad.dual_bound`, valid for any v in the box, and the upper bound E from the
residuals of the returned beta.  The iteration stops once the duality gap and the residuals are
below ``tol`` relative to the problem's size, or reports that it did not get there.
"""

from __future__ import annotations

import contextlib

import numpy as np
import scipy.linalg

from solvers.aid.lad_lp import LpOutcome, lad_dual_lp, new_highs, read_outcome
from solvers.result import TerminationCondition

STEP = 0.99995
"""Fraction of the distance to the boundary taken by each step (Koenker and d'Orey's value)."""
TOL = 1e-10
"""Default stopping level of the merit max(relative gap, relative primal and dual residuals)."""
THREADS_FROM = 2e7
"""K q^2 from which the q x q products of an iteration may use several BLAS threads."""
ACCEPT = 1e-8
"""The best iterate is still returned as converged at this merit when round-off stops the
iteration before :data:`TOL` (the certificate of AID does not rest on it)."""
HEAVY = 16.0
"""A cluster whose weight W_k exceeds HEAVY times the median cluster weight is *heavy* (the
globs of the "pk" start and what remains of them after a split). Heavy columns start each
solve fixed at the bound of their reduced cost: they are far from the hyperplane, and left
free their large sums made the interior point take twice the iterations (25 -> 16 on the
first LP at 10^6 x 10, 28 -> 13 on the 327,346 flights; 21-25 -> 12-13 after the split)."""


def heavy_clusters(W: np.ndarray) -> np.ndarray:
    """The clusters whose weight W_k exceeds :data:`HEAVY` times the median cluster weight."""
    return W > HEAVY * np.median(W) if W.shape[0] else np.zeros(0, dtype=bool)


def frisch_newton(A: np.ndarray, c: np.ndarray, b: np.ndarray, x0: float,
                  tol: float = TOL, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, int,
                                                                    bool]:
    """Solve (P) from the interior point x = ``x0`` (in (0, 1)); returns ``(x, y, iterations,
    converged)``: the best iterate by the merit max(relative duality gap, relative primal and
    dual residuals), converged when that merit is <= ``tol`` (or <= :data:`ACCEPT` when
    round-off ends the iteration first).

    The loop works on ``At = A'`` (q x K, contiguous): its products A'Theta A (a rank-K
    syrk of ``At sqrt(theta)``) and A v, A'u run about 1.5-2x faster than on the K x q layout
    at K = 3*10^4, q = 11 (measured, one BLAS thread)."""
    K, q = A.shape
    At = np.ascontiguousarray(A.T)
    x = np.full(K, x0)
    s = 1.0 - x
    y = _least_squares(A, c)
    r = c - At.T @ y
    scale = 1.0 + np.abs(c).max(initial=0.0)
    floor = 1e-3 * scale
    z = np.maximum(r, 0.0) + floor  # A y + z - w = c holds exactly
    w = np.maximum(-r, 0.0) + floor
    bnorm = 1.0 + np.abs(b).max(initial=0.0)
    best = (np.inf, x, y)
    for it in range(1, max_iter + 1):
        rp = b - At @ x
        rd = c - At.T @ y - z + w
        primal, dual = c @ x, b @ y - w.sum()
        merit = max(abs(primal - dual) / (1.0 + abs(primal)), np.abs(rp).max(initial=0.0) / bnorm,
                    np.abs(rd).max(initial=0.0) / scale)
        if merit < best[0]:
            best = (merit, x, y)
        if merit <= tol:
            return x, y, it - 1, True
        if merit > 1e6 * best[0]:  # round-off has taken over (the gap stalls near 1e-12)
            break
        with np.errstate(over="ignore", divide="ignore"):  # x or s -> 0: theta -> 0
            theta = 1.0 / (z / x + w / s)
        L = _factor(At, theta)
        # predictor (affine scaling): sigma = 0
        dx, dy, dz, dw = _direction(At, theta, L, rp, rd, x, s, z, w, -x * z, -s * w, False)
        ap, ad = _steps(x, s, z, w, dx, dz, dw)
        mu = (x @ z + s @ w) / (2 * K)
        mu_aff = ((x + ap * dx) @ (z + ad * dz) + (s - ap * dx) @ (w + ad * dw)) / (2 * K)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        # corrector: centring sigma mu and the second-order terms of the predictor
        rxz = sigma * mu - x * z - dx * dz
        rsw = sigma * mu - s * w + dx * dw
        dx, dy, dz, dw = _direction(At, theta, L, rp, rd, x, s, z, w, rxz, rsw, True)
        ap, ad = _steps(x, s, z, w, dx, dz, dw)
        x = x + ap * dx
        s = s - ap * dx  # kept apart from 1 - x, which cancels near the upper bound
        y, z, w = y + ad * dy, z + ad * dz, w + ad * dw
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            break
    return best[1], best[2], it, best[0] <= ACCEPT


def _least_squares(A: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(A, c, rcond=None)[0] if A.shape[1] else np.zeros(0)


def _factor(At: np.ndarray, theta: np.ndarray) -> np.ndarray | None:
    """Cholesky factor of A' Theta A = B B' with B = At sqrt(theta) (None when it is not
    positive definite)."""
    B = At * np.sqrt(theta)
    M = B @ B.T
    M[np.diag_indices_from(M)] += 1e-14 * (np.trace(M) / max(M.shape[0], 1) + 1e-300)
    try:
        return np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return None


def _solve(L: np.ndarray | None, At: np.ndarray, theta: np.ndarray, rhs: np.ndarray
           ) -> np.ndarray:
    if L is None:
        return np.linalg.lstsq((At * theta) @ At.T, rhs, rcond=None)[0]
    return scipy.linalg.cho_solve((L, True), rhs, check_finite=False)


def _direction(At, theta, L, rp, rd, x, s, z, w, rxz, rsw, refine):
    """The Newton direction for  A'dx = rp,  A dy + dz - dw = rd,  z dx + x dz = rxz,
    -w dx + s dw = rsw  (ds = -dx), eliminated to (A' Theta A) dy = rp + A' Theta t.
    ``refine``: one step of iterative refinement (for the step taken, not the predictor):
    A' Theta A is ill-conditioned near the end, and A'dx = rp must hold or the primal
    residual drifts."""
    t = rd - rxz / x + rsw / s
    dy = _solve(L, At, theta, rp + At @ (theta * t))
    dx = theta * (At.T @ dy - t)
    if refine:
        ddy = _solve(L, At, theta, rp - At @ dx)
        dy += ddy
        dx += theta * (At.T @ ddy)
    dz = (rxz - z * dx) / x
    dw = (rsw + w * dx) / s
    return dx, dy, dz, dw


def _steps(x, s, z, w, dx, dz, dw) -> tuple[float, float]:
    """Primal and dual step lengths keeping x, s = 1 - x, z, w positive."""
    ap, ad = _max_steps(x, s, z, w, dx, dz, dw)
    return STEP * min(1.0, ap), STEP * min(1.0, ad)


def _max_steps(x, s, z, w, dx, dz, dw) -> tuple[float, float]:
    """The largest steps keeping x, s, z, w >= 0: x + a dx >= 0 and s - a dx >= 0 for all
    a <= 1 / max(-dx / x, dx / s) (inf when no component decreases), likewise for z, w.
    (Computed from the ratios dx / x, with no masks, 3x faster than a masked min of -x / dx.)"""
    rate_p = max(-np.min(dx / x, initial=0.0), np.max(dx / s, initial=0.0))
    rate_d = max(-np.min(dz / z, initial=0.0), -np.min(dw / w, initial=0.0))
    return (1.0 / rate_p if rate_p > 0 else np.inf), (1.0 / rate_d if rate_d > 0 else np.inf)


class IpmLadLP:
    """The aggregated LP of one AID run solved by :func:`frisch_newton` (the interface of
    :class:`solvers.aid.lad_lp.AggregatedLadLP`), with sifting after the first solve.

    After a split, the clusters whose reduced cost d_k = SY_k - SXa_k'beta at the last beta is
    large (|d_k| / ||SXa_k|| beyond the ``free_share`` smallest) are fixed at the bound the
    sign of d_k makes optimal (v_k = hi for d_k > 0, lo otherwise) and moved to the right-hand
    side; the interior point runs on the rest and the split pieces.  Heavy clusters (see
    :data:`HEAVY`; ``weights`` = W_k) are fixed likewise in every solve, the first one too
    when ``start`` (the coefficients the clustering was built from) gives a beta.  A fixed
    cluster whose reduced cost at the new beta has the wrong sign is freed and the LP re-run,
    so the answer is optimal for the whole aggregated LP (the KKT conditions hold for every
    column). A restricted LP the interior point cannot solve (fixing made it infeasible) is
    solved again with every column free, and from then on no heavy cluster is fixed.
    When the interior point does not converge, the same LP goes to HiGHS's simplex
    (``fallback``; counted in ``fallbacks``) and AID goes on.
    """

    def __init__(self, SXa: np.ndarray, SY: np.ndarray, *, box: tuple[float, float] = (-1.0, 1.0),
                 tol: float = TOL, max_iter: int = 100, free_share: float = 0.125,
                 fallback: bool = True, weights: np.ndarray | None = None,
                 start: np.ndarray | None = None) -> None:
        self.SXa, self.SY, self.box = SXa, SY, box
        self.weights, self.start = weights, start
        self.fix_heavy = True
        self.tol, self.max_iter, self.free_share = tol, max_iter, free_share
        self.fallback = fallback
        self.iterations = 0
        self.fallbacks = 0
        self.sift_rounds = 0
        self.beta: np.ndarray | None = None
        self.changed: np.ndarray | None = None

    def solve(self, time_limit: float | None = None) -> LpOutcome:
        """Run the interior point; ``coef`` = beta (and the intercept), ``v`` in the box."""
        from solvers.aid.clustering import one_blas_thread  # (clustering imports lad_lp)

        free = self._free_set()
        self.iterations = self.sift_rounds = 0
        K, q = self.SXa.shape
        # small products: BLAS threads only cost (see one_blas_thread); large ones use them
        with one_blas_thread() if K * q * q < THREADS_FROM else contextlib.nullcontext():
            while True:
                out, sigma = self._restricted(free)
                if free.all():
                    break
                if out.coef is None or out.termination is not TerminationCondition.OPTIMAL:
                    free[:] = True  # fixing made the restricted LP infeasible: free all,
                    self.fix_heavy = False  # and fix no heavy cluster again in this run
                    self.sift_rounds += 1
                    continue
                d = self.SY - self.SXa @ out.coef
                bad = ~free & (d * sigma < -1e-9 * (1.0 + np.abs(self.SY)))
                if not bad.any():
                    break
                free |= bad
                self.sift_rounds += 1
        self.beta, self.changed = out.coef, None
        return out

    def _free_set(self) -> np.ndarray:
        K = self.SXa.shape[0]
        heavy = self._heavy() if K > 8 * self.SXa.shape[1] else None
        if self.beta is None and self.start is not None and heavy is not None:
            self.beta, self.start = self.start, None
            return ~heavy
        if self.beta is None or K <= 8 * self.SXa.shape[1]:
            return np.ones(K, dtype=bool)
        d = np.abs(self.SY - self.SXa @ self.beta) / np.maximum(
            np.sqrt(np.einsum("ij,ij->i", self.SXa, self.SXa)), 1e-300)
        keep = min(K - 1, max(int(self.free_share * K), 20 * self.SXa.shape[1]))
        free = d <= np.partition(d, keep)[keep]
        if self.changed is not None:
            free[self.changed] = True
        if heavy is not None:
            free[heavy] = False
        return free

    def _heavy(self) -> np.ndarray | None:
        """The heavy clusters (:data:`HEAVY`), or None when there are none or more than half."""
        W = self.weights
        if not self.fix_heavy or W is None or W.shape[0] != self.SXa.shape[0]:
            return None
        heavy = heavy_clusters(W)
        count = int(np.count_nonzero(heavy))
        return heavy if 0 < count <= W.shape[0] // 2 else None

    def _restricted(self, free: np.ndarray) -> tuple[LpOutcome, np.ndarray]:
        """The LP on the ``free`` columns, the others at the bound of their reduced cost at
        the last beta: (P) with A = SXa_free and b from the fixed columns."""
        lo, hi = self.box
        sigma = np.zeros(free.shape[0])
        A = self.SXa[free]
        rhs = -lo * A.sum(axis=0)
        if not free.all():
            d = self.SY[~free] - self.SXa[~free] @ self.beta
            sigma[~free] = np.where(d > 0, hi, lo)
            rhs -= sigma[~free] @ self.SXa[~free]
        x, y, its, ok = frisch_newton(A, -self.SY[free], rhs / (hi - lo), -lo / (hi - lo),
                                      self.tol, self.max_iter)
        self.iterations += its
        v = sigma.copy()
        if ok:
            v[free] = np.clip(lo + (hi - lo) * x, lo, hi)
            return LpOutcome(TerminationCondition.OPTIMAL, "Optimal", coef=-y, v=v), sigma
        if not self.fallback or not free.all():  # a restricted LP: the caller frees all
            return LpOutcome(TerminationCondition.NUMERICAL_ERROR,
                             f"Frisch-Newton: no convergence in {its} iterations"), sigma
        out = _simplex(A, self.SY[free], rhs + lo * A.sum(axis=0), self.box)
        self.fallbacks += 1
        if out.v is not None:
            v[free] = out.v
            out.v = v
        out.raw = f"Frisch-Newton: no convergence in {its} iterations; HiGHS simplex {out.raw}"
        return out, sigma

    def split(self, old_ids: np.ndarray, new_ids: np.ndarray, SXa: np.ndarray, SY: np.ndarray,
              beta: np.ndarray) -> None:
        """Take the new cluster sums; the split clusters and their pieces will be free."""
        self.SXa, self.SY = SXa, SY
        self.changed = np.concatenate([old_ids, new_ids])

    def rebuild(self, SXa: np.ndarray, SY: np.ndarray) -> None:
        """Take the new cluster sums (no sifting on the next solve)."""
        self.SXa, self.SY = SXa, SY
        self.beta = self.changed = self.start = None

    def simplex_iterations(self) -> int:
        """Interior-point iterations of the last solve (all sifting rounds)."""
        return self.iterations


def _simplex(A: np.ndarray, SY: np.ndarray, rhs: np.ndarray, box: tuple[float, float]
             ) -> LpOutcome:
    """max SY'v s.t. A'v = rhs, v in ``box`` by HiGHS's dual simplex (the fallback when the
    interior point stalls on a degenerate LP; one such case: 80 rows of a nearly exact fit)."""
    lp = lad_dual_lp(A, SY, box)
    lp.row_lower_ = rhs
    lp.row_upper_ = rhs
    h = new_highs()
    h.passModel(lp)
    h.run()
    return read_outcome(h, A.shape[1])
