"""Primal-dual interior point for the weighted linear hinge-loss SVM, with CG inner solves
preconditioned by an FD / RFD sketch.

The QP (``z_i = y_i x_i``, the rows of ``Z = diag(y) X``; C_i = C s_i cw_{y_i} > 0)::

    min_{w, b, xi}  1/2 ||w||^2 + sum_i C_i xi_i
    s.t.            Z w + y b + xi - s = 1,   xi >= 0,  s >= 0

with multipliers alpha >= 0 (margins) and nu >= 0 (xi >= 0). KKT conditions, as residuals::

    r_w = w - Z'alpha          r_b = y'alpha          r_c = C - alpha - nu
    r_p = Z w + y b + xi - s - 1                      s alpha = mu,  xi nu = mu  (mu -> 0)

Newton's step on them, with ``r_sa = s alpha - sigma mu``, ``r_xn = xi nu - sigma mu``, after
eliminating ds, dxi, dnu and dalpha (all diagonal)::

    Omega = diag(s / alpha + xi / nu),   D = Omega^{-1}
    g = -r_p + (r_xn + xi r_c) / nu - r_sa / alpha
    [ I + X'DX   X'D 1 ] [dw]   [ -r_w + Z'D g ]
    [ 1'DX       1'D 1 ] [db] = [ y'D g + r_b  ]
    dalpha = D (g - Z dw - y db),   ds = -(r_sa + s dalpha) / alpha,
    dnu = r_c - dalpha,             dxi = -(r_xn + xi dnu) / nu

(``Z'DZ = X'DX`` and ``Z'D y = X'D 1`` because y_i^2 = 1.) The intercept is a Schur complement:
with ``H = I + X'DX`` and ``u = X'D 1``, CG solves ``H v1 = rhs_w`` and ``H v2 = u`` (both in
one block CG, sharing the passes over X), then ``db = (rhs_b - u'v1) / (1'D1 - u'v2)`` and
``dw = v1 - db v2``. Whatever CG's accuracy, every equation but the first holds exactly (dxi,
ds, dnu, dalpha are computed from dw, db, and db from the Schur formula keeps y'dalpha =
-r_b), so an inexact solve only leaves a CG residual in r_w. Starting from w = 0, b = 0,
xi = 2, s = 1, alpha = nu = C/2 keeps r_p = 0 and r_c = 0 (0 < alpha < C) throughout.

Mehrotra predictor-corrector: the affine step (sigma = 0) gives its step length t_a and
``mu_a``; ``sigma = (mu_a / mu)^3``; the corrector adds ``ds_a dalpha_a`` and ``dxi_a dnu_a`` to
the complementarity residuals and reuses H, its preconditioner and v2 (one more CG, warm
started from the predictor's v1). One step length for all variables, ``0.995`` of the distance
to the boundary. CG stops once ``||H v - rhs|| <= eta_k ||rhs||`` with
``eta_k = max(cg_tol * min(1, mu_k / mu_0), 1e-14)``: tied to the IPM's progress, so the r_w
residual left by CG shrinks with mu.

Preconditioners of H (``preconditioner=``), all ``M = Sigma (E + B'B) Sigma`` applied by the
Woodbury formula in O(m p) per vector (``Sigma = diag(sqrt(diag H))``, the Jacobi scaling):

- ``"none"``: M = I;  ``"diag"``: M = diag(H) (Jacobi);
- ``"fd"`` / ``"rfd"``: B an FD / RFD sketch (m rows) of weighted scaled rows, chosen by
  ``reweight=``:

  * ``"active"`` (default): the rows sorted by their share ``D_i ||Sigma^{-1} x_i||^2`` of the
    trace of ``Sigma^{-1} X'DX Sigma^{-1}``; the top rows that hold all but ``active_tol`` of it
    form L. B = ``sqrt(D_L) X_L Sigma^{-1}`` itself when |L| <= m (exact), else its (R)FD
    sketch; the other rows enter through their diagonal only:
    ``E = diag(1 + sum_{i not in L} D_i x_ij^2) / sigma_j^2 (+ rho for RFD)``. Near the end
    D spans many decades and L is the few free support vectors, so M is almost H.
  * ``"resketch"``: L = all rows (one (R)FD pass over n rows per step).
  * ``"scalar"``: one sketch B0 of ``sqrt(C) X Sigma_0^{-1}`` taken once; per step
    ``M = Sigma_0 ((1/sigma_0^2 + tau rho) + tau B0'B0) Sigma_0`` with the scalar
    ``tau = sum D_i r_i / sum C_i r_i``, r_i = ||Sigma_0^{-1} x_i||^2 (no pass; a single
    scalar cannot follow D's spread, measured in the benchmark).

Certificate: at the end alpha is made dual feasible (clipped to [0, C_i], then y'alpha = 0 by
:func:`solvers.aid.svm_qp.feasible_alpha`) and ``bound = D(alpha) = 1'alpha - 1/2
||Z'alpha||^2``; ``objective = P(w, b) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i (x_i'w + b))``
at the better of (w, b) and (Z'alpha, b). Gaps are relative to the natural scale sum_i C_i and
go through :func:`solvers.result.certify`. OPTIMAL once ``(P - D) / sum C_i <= tol`` (checked
when the complementarity ``(s'alpha + xi'nu) / sum C_i`` is below tol); ITERATION_LIMIT after
``max_iter`` steps and NUMERICAL_ERROR on a non-finite value or a step length below 1e-10 (both
with solution status FEASIBLE and the certified gap they reached).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
import scipy.linalg

from solvers.aid.svm_qp import feasible_alpha
from solvers.result import SolutionStatus, SolveResult, TerminationCondition, certify
from solvers.sketch.fd import FrequentDirections
from solvers.validation import (
    check_array,
    check_choice,
    check_class_weight,
    check_int,
    check_labels,
    check_number,
    check_positive,
    check_sample_weight,
    class_weight_vector,
    invalid,
)

OWNER = "ipm_svm"
PRECONDITIONERS: dict[str, str] = {
    "none": "unpreconditioned CG",
    "diag": "Jacobi: diag(I + X'DX)",
    "fd": "Frequent Directions sketch: Sigma (E + B'B) Sigma",
    "rfd": "Robust FD sketch: Sigma (E + rho I + B'B) Sigma",
}
REWEIGHTS = ("active", "resketch", "scalar")
BOUNDARY = 0.995
MIN_STEP = 1e-10


# ---------------------------------------------------------------------------- entry point
def ipm_svm(
    X: Any,
    y: Any,
    C: float = 1.0,
    *,
    sample_weight: Any = None,
    class_weight: Any = None,
    preconditioner: str = "rfd",
    reweight: str = "active",
    m: int | None = None,
    active_tol: float = 0.01,
    tol: float = 1e-9,
    max_iter: int = 100,
    cg_tol: float = 0.1,
    cg_max_iter: int | None = None,
    block_size: int = 4096,
) -> SolveResult:
    """Solve the weighted linear hinge-loss SVM QP by a Mehrotra interior point with
    sketch-preconditioned CG inner solves (see the module docstring for the formulas).

    ``m`` is the sketch size (default ``min(p, 64)``); ``tol`` the relative duality gap
    ``(P - D) / sum_i C_i`` at which the run is OPTIMAL; ``cg_max_iter`` caps CG per system
    (default ``max(100, 2 p)``). Returns a :class:`SolveResult` with ``x = w``,
    ``extra["b"]``, ``extra["alpha"]`` (feasible, one per row) and the CG counts per step.
    """
    t0 = time.perf_counter()
    prob = _Problem.build(X, y, C, sample_weight, class_weight)
    opts = _Options.build(prob, preconditioner, reweight, m, active_tol, tol, max_iter, cg_tol,
                          cg_max_iter, block_size)
    res = _IPM(prob, opts).run()
    res.wall_time = res.solve_time = time.perf_counter() - t0
    return res


@dataclasses.dataclass
class _Problem:
    """The checked data on the rows of positive weight: X, labels, weights C_i."""

    X: np.ndarray
    y: np.ndarray
    c: np.ndarray
    keep: np.ndarray  # rows of positive weight (the others have alpha = 0 and no effect)

    @classmethod
    def build(cls, X, y, C, sample_weight, class_weight) -> _Problem:
        X = check_array(X, "X")
        n = X.shape[0]
        y, classes = check_labels(y, n, numeric=False)
        C = check_positive(C, "C", OWNER)
        s = check_sample_weight(sample_weight, n)
        cw = class_weight_vector(check_class_weight(class_weight, classes), y)
        c = C * s * cw
        keep = c > 0.0
        if not ((keep & (y > 0)).any() and (keep & (y < 0)).any()):
            raise invalid("sample_weight", OWNER, "positive for some rows of each class "
                          "(a binary SVM needs both classes)", "weights of one class all 0")
        return cls(np.ascontiguousarray(X[keep]), y[keep], c[keep], keep)


@dataclasses.dataclass
class _Options:
    preconditioner: str
    reweight: str
    m: int
    active_tol: float
    tol: float
    max_iter: int
    cg_tol: float
    cg_max_iter: int
    block_size: int

    @classmethod
    def build(cls, prob: _Problem, preconditioner, reweight, m, active_tol, tol, max_iter,
              cg_tol, cg_max_iter, block_size) -> _Options:
        p = prob.X.shape[1]
        check_choice(preconditioner, "preconditioner", OWNER, tuple(PRECONDITIONERS))
        check_choice(reweight, "reweight", OWNER, REWEIGHTS)
        return cls(
            preconditioner, reweight,
            check_int(min(p, 64) if m is None else m, "m", OWNER, low=1, high=p),
            check_number(active_tol, "active_tol", OWNER, low=0.0, high=1.0, closed="left"),
            check_positive(tol, "tol", OWNER),
            check_int(max_iter, "max_iter", OWNER),
            check_number(cg_tol, "cg_tol", OWNER, low=0.0, high=1.0),
            check_int(max(100, 2 * p) if cg_max_iter is None else cg_max_iter,
                      "cg_max_iter", OWNER),
            check_int(block_size, "block_size", OWNER),
        )


# ---------------------------------------------------------------------------- preconditioner
class LowRankPlusDiagonal:
    """``M = Sigma (diag(e) + B'B) Sigma`` with ``M^{-1}`` by the Woodbury formula::

        (E + B'B)^{-1} = E^{-1} - E^{-1} B' (I + B E^{-1} B')^{-1} B E^{-1}

    (B: k x p, e > 0); O(k^2 p + k^3) to set up, O(k p) per vector."""

    def __init__(self, sigma: np.ndarray, e: np.ndarray, B: np.ndarray) -> None:
        self.sigma, self.e_inv = sigma, 1.0 / e
        self.BE = B * self.e_inv  # B E^{-1}
        K = np.eye(B.shape[0]) + self.BE @ B.T
        self.chol = scipy.linalg.cho_factor(K, check_finite=False) if B.shape[0] else None

    def solve(self, V: np.ndarray) -> np.ndarray:
        """``M^{-1} V`` for V of shape (p, k)."""
        U = V / self.sigma[:, None]
        out = U * self.e_inv[:, None]
        if self.chol is not None:
            out -= self.BE.T @ scipy.linalg.cho_solve(self.chol, self.BE @ U, check_finite=False)
        return out / self.sigma[:, None]


def _sketch_rows(rows: np.ndarray, m: int, robust: bool, block_size: int
                 ) -> tuple[np.ndarray, float]:
    """``(B, rho)``: the rows themselves when there are at most m, else their (R)FD sketch."""
    if rows.shape[0] <= m:
        return rows, 0.0
    sk = FrequentDirections(m, robust=robust)
    for start in range(0, rows.shape[0], block_size):
        sk.partial_fit(rows[start:start + block_size], check=False)
    return sk.sketch_, sk.rho_


# ---------------------------------------------------------------------------- the method
@dataclasses.dataclass
class _State:
    w: np.ndarray
    b: float
    xi: np.ndarray
    s: np.ndarray
    alpha: np.ndarray
    nu: np.ndarray
    Xw: np.ndarray


@dataclasses.dataclass
class _Step:
    dw: np.ndarray
    db: float
    Xdw: np.ndarray
    dxi: np.ndarray
    ds: np.ndarray
    dalpha: np.ndarray
    dnu: np.ndarray
    v1: np.ndarray  # H^{-1} rhs_w (approximately), for a warm start
    Xv1: np.ndarray
    res1: np.ndarray  # its CG residual rhs_w - H v1
    rhs_w: np.ndarray


class _IPM:
    """The interior-point iterations and the per-step linear algebra."""

    def __init__(self, prob: _Problem, opts: _Options) -> None:
        self.prob, self.opts = prob, opts
        self.scale = float(prob.c.sum())
        self.cg_counts: list[int] = []
        self.history: list[dict[str, float]] = []
        self.n_sketches = 0
        self.sketch_rows = 0
        self.sketch_time = 0.0
        needs_sq = opts.preconditioner != "none"
        self.X2 = prob.X * prob.X if needs_sq else None
        self._scalar: tuple[Any, ...] | None = None

    # -- the loop
    def run(self) -> SolveResult:
        X, c = self.prob.X, self.prob.c
        n, p = X.shape
        st = _State(np.zeros(p), 0.0, np.full(n, 2.0), np.ones(n), 0.5 * c, 0.5 * c,
                    np.zeros(n))
        mu0 = self.mu(st)
        it = 0
        for it in range(1, self.opts.max_iter + 1):
            mu = self.mu(st)
            comp = 2 * n * mu / self.scale
            if not np.isfinite(comp):
                return self.result(st, it - 1, TerminationCondition.NUMERICAL_ERROR,
                                   "a non-finite iterate")
            if comp <= self.opts.tol:
                res = self.result(st, it - 1, TerminationCondition.OPTIMAL, "tol met")
                if res.gap is not None and res.gap <= self.opts.tol:
                    return res
            t = self.iterate(st, mu, max(self.opts.cg_tol * min(1.0, mu / mu0), 1e-14))
            if not t > MIN_STEP:
                return self.result(st, it, TerminationCondition.NUMERICAL_ERROR,
                                   f"step length {t:.1e} at step {it}: the interior point "
                                   "stalled; raise cg_max_iter or rescale the features")
        return self.result(st, it, TerminationCondition.ITERATION_LIMIT,
                           f"max_iter={self.opts.max_iter} interior-point steps")

    @staticmethod
    def mu(st: _State) -> float:
        return float(st.s @ st.alpha + st.xi @ st.nu) / (2 * st.s.size)

    def iterate(self, st: _State, mu: float, eta: float) -> float:
        """One predictor-corrector step (in place); returns its step length."""
        X, y, c = self.prob.X, self.prob.y, self.prob.c
        D = 1.0 / (st.s / st.alpha + st.xi / st.nu)
        r_p = y * (st.Xw + st.b) + st.xi - st.s - 1.0
        r_c = c - st.alpha - st.nu
        base = X.T @ np.column_stack([y * st.alpha, D])  # Z'alpha and u = X'D 1 in one pass
        r_w, u = st.w - base[:, 0], base[:, 1]
        r_b = float(y @ st.alpha)
        solve = self.preconditioner(D)
        # v2 = H^{-1} u with the predictor, in one block CG
        g_a = self._g(st, r_p, r_c, st.s * st.alpha, st.xi * st.nu)
        rhs_a = -r_w + X.T @ (y * D * g_a)
        V, XV, R, k = self.cg(D, np.column_stack([rhs_a, u]), solve, eta)
        v2, Xv2 = V[:, 1], XV[:, 1]
        schur = float(D.sum() - u @ v2)
        aff = self._assemble(st, D, g_a, y @ (D * g_a) + r_b, u, schur, v2, Xv2,
                             (V[:, 0], XV[:, 0], R[:, 0], rhs_a),
                             st.s * st.alpha, st.xi * st.nu, r_c)
        t_a = self.step_length(st, aff)
        mu_a = float((st.s + t_a * aff.ds) @ (st.alpha + t_a * aff.dalpha)
                     + (st.xi + t_a * aff.dxi) @ (st.nu + t_a * aff.dnu)) / (2 * st.s.size)
        sigma = (mu_a / mu) ** 3
        r_sa = st.s * st.alpha + aff.ds * aff.dalpha - sigma * mu
        r_xn = st.xi * st.nu + aff.dxi * aff.dnu - sigma * mu
        g = self._g(st, r_p, r_c, r_sa, r_xn)
        rhs = -r_w + X.T @ (y * D * g)
        # warm start from the predictor's v1: residual rhs - H v1 = (rhs - rhs_a) + res_a
        V1, XV1, _, k2 = self.cg(D, (rhs - rhs_a + aff.res1)[:, None], solve, eta,
                                 scale=np.array([np.linalg.norm(rhs)]))
        step = self._assemble(st, D, g, y @ (D * g) + r_b, u, schur, v2, Xv2,
                              (aff.v1 + V1[:, 0], aff.Xv1 + XV1[:, 0], None, rhs),
                              r_sa, r_xn, r_c)
        t = self.step_length(st, step)
        self.cg_counts.append(k + k2)
        self.history.append({"mu": mu, "sigma": sigma, "step": t, "cg": k + k2,
                             "r_w": float(np.linalg.norm(r_w)), "r_b": r_b})
        self.apply(st, step, t)
        return t

    def _g(self, st: _State, r_p, r_c, r_sa, r_xn) -> np.ndarray:
        """``g = -r_p + (r_xn + xi r_c) / nu - r_sa / alpha``."""
        return -r_p + (r_xn + st.xi * r_c) / st.nu - r_sa / st.alpha

    def _assemble(self, st: _State, D, g, rhs_b, u, schur, v2, Xv2, first, r_sa, r_xn, r_c
                  ) -> _Step:
        """The full step from v1 = H^{-1} rhs_w (with X v1) and v2 = H^{-1} u."""
        v1, Xv1, res1, rhs_w = first
        y = self.prob.y
        db = (rhs_b - float(u @ v1)) / schur
        dw, Xdw = v1 - db * v2, Xv1 - db * Xv2
        dalpha = D * (g - y * (Xdw + db))
        ds = -(r_sa + st.s * dalpha) / st.alpha
        dnu = r_c - dalpha
        dxi = -(r_xn + st.xi * dnu) / st.nu
        return _Step(dw, db, Xdw, dxi, ds, dalpha, dnu, v1, Xv1,
                     res1 if res1 is not None else np.zeros_like(v1), rhs_w)

    @staticmethod
    def step_length(st: _State, d: _Step) -> float:
        """``BOUNDARY`` times the largest t <= 1/BOUNDARY keeping s, alpha, xi, nu positive."""
        t = 1.0 / BOUNDARY
        for v, dv in ((st.s, d.ds), (st.alpha, d.dalpha), (st.xi, d.dxi), (st.nu, d.dnu)):
            neg = dv < 0
            if neg.any():
                t = min(t, float(np.min(-v[neg] / dv[neg])))
        return min(1.0, BOUNDARY * t)

    @staticmethod
    def apply(st: _State, d: _Step, t: float) -> None:
        st.w += t * d.dw
        st.b += t * d.db
        st.Xw += t * d.Xdw
        st.xi += t * d.dxi
        st.s += t * d.ds
        st.alpha += t * d.dalpha
        st.nu += t * d.dnu

    # -- block conjugate gradient
    def cg(self, D: np.ndarray, R: np.ndarray, solve, eta: float,
           scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Independent preconditioned CG runs on ``H V = R`` (columns of R), sharing the passes
        over X; each stops once ``||residual|| <= eta * scale`` (default ``||R||``). Returns
        (V, X V, residuals, iterations)."""
        X = self.prob.X
        R = R.copy()
        target = eta * (np.linalg.norm(R, axis=0) if scale is None else scale)
        V = np.zeros_like(R)
        XV = np.zeros((X.shape[0], R.shape[1]))
        Zc = solve(R)
        P = Zc.copy()
        rz = np.einsum("ij,ij->j", R, Zc)
        active = np.linalg.norm(R, axis=0) > target
        k = 0
        while active.any() and k < self.opts.cg_max_iter:
            XP = X @ P[:, active]
            Q = P[:, active] + X.T @ (D[:, None] * XP)
            k += 1
            pq = np.einsum("ij,ij->j", P[:, active], Q)
            a = np.where(pq > 0, rz[active] / np.where(pq > 0, pq, 1.0), 0.0)
            V[:, active] += a * P[:, active]
            XV[:, active] += a * XP
            R[:, active] -= a * Q
            Zc[:, active] = solve(R[:, active])
            rz_new = np.einsum("ij,ij->j", R[:, active], Zc[:, active])
            P[:, active] = Zc[:, active] + (rz_new / np.where(rz[active] > 0, rz[active], 1.0)
                                            ) * P[:, active]
            rz[active] = rz_new
            idx = np.flatnonzero(active)
            active[idx[(np.linalg.norm(R[:, idx], axis=0) <= target[idx]) | ~(pq > 0)]] = False
        return V, XV, R, k

    # -- preconditioners
    def preconditioner(self, D: np.ndarray):
        """``V -> M^{-1} V`` for this step's H (see the module docstring)."""
        kind = self.opts.preconditioner
        if kind == "none":
            return lambda V: V
        assert self.X2 is not None
        dsum = self.X2.T @ D  # diag(X'DX)
        if kind == "diag":
            diag = 1.0 + dsum
            return lambda V: V / diag[:, None]
        if self.opts.reweight == "scalar":
            return self._scalar_preconditioner(D).solve
        return self._row_preconditioner(D, dsum).solve

    def _row_preconditioner(self, D: np.ndarray, dsum: np.ndarray) -> LowRankPlusDiagonal:
        """M from the rows carrying all but ``active_tol`` of the scaled trace (all rows with
        ``reweight="resketch"``): B sketches them, E is the others' diagonal."""
        t0 = time.perf_counter()
        X, X2 = self.prob.X, self.X2
        sigma2 = 1.0 + dsum
        sigma = np.sqrt(sigma2)
        share = D * (X2 @ (1.0 / sigma2))  # D_i ||Sigma^{-1} x_i||^2
        if self.opts.reweight == "resketch":
            rows = np.arange(D.size)
        else:
            order = np.argsort(share)[::-1]
            cum = np.cumsum(share[order])
            k = int(np.searchsorted(cum, (1.0 - self.opts.active_tol) * cum[-1])) + 1
            rows = np.sort(order[:k])
        Bs, rho = _sketch_rows(np.sqrt(D[rows])[:, None] * X[rows] / sigma, self.opts.m,
                               self.opts.preconditioner == "rfd", self.opts.block_size)
        rest = dsum - X2[rows].T @ D[rows]
        e = (1.0 + np.maximum(rest, 0.0)) / sigma2 + rho
        self.n_sketches += 1
        self.sketch_rows += rows.size
        self.sketch_time += time.perf_counter() - t0
        return LowRankPlusDiagonal(sigma, e, Bs)

    def _scalar_preconditioner(self, D: np.ndarray) -> LowRankPlusDiagonal:
        """One sketch of sqrt(C) X Sigma_0^{-1}, scaled per step by tau (no pass over X)."""
        if self._scalar is None:
            t0 = time.perf_counter()
            X, c = self.prob.X, self.prob.c
            assert self.X2 is not None
            sigma2 = 1.0 + self.X2.T @ c
            B, rho = _sketch_rows(np.sqrt(c)[:, None] * X / np.sqrt(sigma2), self.opts.m,
                                  self.opts.preconditioner == "rfd", self.opts.block_size)
            r = self.X2 @ (1.0 / sigma2)
            self._scalar = (np.sqrt(sigma2), B, rho, r, float(c @ r))
            self.n_sketches += 1
            self.sketch_rows += X.shape[0]
            self.sketch_time += time.perf_counter() - t0
        sigma, B, rho, r, cr = self._scalar
        tau = float(D @ r) / cr
        return LowRankPlusDiagonal(sigma, 1.0 / sigma**2 + tau * rho, math.sqrt(tau) * B)

    # -- certificate and result
    def certificate(self, st: _State) -> tuple[np.ndarray, float, float, np.ndarray, float]:
        """``(w, b, P(w, b), alpha, D(alpha))`` with alpha made dual feasible and (w, b) the
        better of the iterate and (Z'alpha, b)."""
        X, y, c = self.prob.X, self.prob.y, self.prob.c
        alpha = feasible_alpha(st.alpha, y, c)
        wa = X.T @ (y * alpha)
        dual = float(alpha.sum() - 0.5 * wa @ wa)
        best = (st.w, self.primal(st.w, st.b, st.Xw))
        pa = self.primal(wa, st.b, X @ wa)
        if pa < best[1]:
            best = (wa, pa)
        return best[0].copy(), st.b, best[1], alpha, dual

    def primal(self, w: np.ndarray, b: float, Xw: np.ndarray) -> float:
        """``P(w, b) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i (x_i'w + b))``."""
        h = np.maximum(0.0, 1.0 - self.prob.y * (Xw + b))
        return float(0.5 * w @ w + self.prob.c @ h)

    def result(self, st: _State, it: int, cond: TerminationCondition, raw: str) -> SolveResult:
        finite = all(np.all(np.isfinite(v)) for v in (st.w, st.alpha, st.Xw)) and math.isfinite(
            st.b)
        extra: dict[str, Any] = {
            "cg_iterations": list(self.cg_counts), "total_cg": int(sum(self.cg_counts)),
            "n_sketches": self.n_sketches, "sketch_rows": self.sketch_rows,
            "sketch_time": self.sketch_time, "history": self.history,
        }
        if not finite:
            return SolveResult(TerminationCondition.NUMERICAL_ERROR, SolutionStatus.NO_SOLUTION,
                               iterations=it, solver=OWNER, raw_status=raw, extra=extra,
                               strategy=f"ipm-{self.opts.preconditioner}")
        w, b, obj, alpha, dual = self.certificate(st)
        full = np.zeros(self.prob.keep.size)
        full[self.prob.keep] = alpha
        extra.update(b=b, intercept=b, alpha=full)
        status = (SolutionStatus.OPTIMAL if cond is TerminationCondition.OPTIMAL
                  else SolutionStatus.FEASIBLE)
        res = SolveResult(cond, status, objective=obj, x=w, bound=dual, iterations=it,
                          solver=OWNER, raw_status=raw, extra=extra,
                          strategy=f"ipm-{self.opts.preconditioner}")
        return certify(res, self.scale, tol=max(self.opts.tol, 1e-6),
                       failure=TerminationCondition.NUMERICAL_ERROR)
