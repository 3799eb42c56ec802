"""Primal-dual interior point for the weighted linear hinge-loss SVM; its Newton systems are
factored (small p) or solved by CG preconditioned by an FD / RFD sketch (large p).

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

(``Z'DZ = X'DX`` and ``Z'D y = X'D 1`` because y_i^2 = 1.) ``linear_solver=`` chooses how:

- ``"cholesky"``: form the bordered matrix ``K = [X 1]'D[X 1] + diag(1, ..., 1, 0)`` (n p^2
  flops by a symmetric rank-k update in row blocks), equilibrate it to a unit diagonal
  (``S K S``, S = diag(K)^{-1/2}: D spans ~20 decades near the end and the columns of X their
  own scales) and factor it (an eigendecomposition with floored eigenvalues if Cholesky finds
  it numerically indefinite); one step of iterative refinement per solve (K applied through X,
  two passes). The predictor and the corrector share the factor. Exact up to round-off, so
  r_w falls with the steps to its round-off floor.
- ``"cg"``: the Schur complement of the intercept, below.
- ``"auto"`` (default): cholesky when ``p <= AUTO_CHOLESKY_MAX_P`` (1000), else cg. Forming
  X'DX costs about 7 two-column CG passes over X at p = 100..300 and 15 at p = 1000 (n = 10^4,
  one thread), while CG takes 20 to several hundred passes per step, more on ill-conditioned
  data (dense 5000 x 500, one thread: cholesky 3.2 s certified in 24 steps, rfd-CG not done
  after 190 s), so the factorization is the cheaper and the more accurate up to p = 1000 at least;
  its n p^2 + p^3 / 3 per step grows faster in p than CG's passes (the threshold is not
  measured beyond p = 1000).

CG path. The intercept is a Schur complement:
with ``H = I + X'DX`` and ``u = X'D 1``, CG solves ``H v1 = rhs_w`` and ``H v2 = u`` (both in
one block CG, sharing the passes over X), then ``db = (rhs_b - u'v1) / (1'D1 - u'v2)`` and
``dw = v1 - db v2``. Whatever CG's accuracy, every equation but the first holds exactly (dxi,
ds, dnu, dalpha are computed from dw, db, and db from the Schur formula keeps y'dalpha =
-r_b), so an inexact solve only leaves a CG residual in r_w. Starting from w = 0, b = 0,
xi = 2, s = 1, alpha = START_ALPHA C, nu = C - alpha keeps r_p = 0 and r_c = 0 (0 < alpha < C)
throughout.

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
with solution status FEASIBLE and the certified gap they reached). Once the complementarity is
below tol, a gap that does not halve in ``STALL_STEPS`` steps ends the run at the best iterate
seen: the dual's accuracy is then bounded by what is left in ``r_w`` (CG's residual once CG
hits ``cg_max_iter``, or the round-off ``eps sum_i C_i |x_ij|`` of Z'alpha on badly scaled
features), and further steps only drive mu towards 0 until the step lengths collapse (what
happened before this rule). That result is OPTIMAL if its gap passes the certificate
tolerance, else NUMERICAL_ERROR; the message names the cause.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
import scipy.linalg

from solvers.aid.svm_qp import feasible_alpha
from solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    certify,
    objective_scale,
)
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
LINEAR_SOLVERS: dict[str, str] = {
    "auto": "cholesky when p <= AUTO_CHOLESKY_MAX_P, else cg",
    "cholesky": "form the (p+1) x (p+1) Newton matrix and factor it (n p^2 + p^3 / 3 per step)",
    "cg": "block CG preconditioned by `preconditioner` (a few passes over X per iteration)",
}
AUTO_CHOLESKY_MAX_P = 1000
BOUNDARY = 0.995
START_ALPHA = 0.2
"""The start's alpha as a share of C_i (nu = C_i - alpha). At an SVM's optimum most alphas are 0
(points beyond the margin); starting below C/2 took fewer steps on five of six instances and
one more on the sixth: 182 -> 159 steps in all (flights 327,346 x 7: 50 -> 45; dense
10^5 x 100: 47 -> 36; ill-conditioned 2*10^4 x 55: 18 -> 16; make_classification 10^5 x 20:
18 -> 19; breast cancer: 16 -> 13; dense 2*10^4 x 300: 33 -> 30). 0.1 C and 0.05 C were better
on some and worse on others."""
MIN_STEP = 1e-10
STALL_STEPS = 3  # steps with mu below tol that do not halve the gap: round-off floor reached


# ---------------------------------------------------------------------------- entry point
def ipm_svm(
    X: Any,
    y: Any,
    C: float = 1.0,
    *,
    sample_weight: Any = None,
    class_weight: Any = None,
    linear_solver: str = "auto",
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

    ``linear_solver`` is "cholesky" (factor the Newton matrix), "cg" (sketch-preconditioned
    block CG) or "auto" (cholesky for p <= AUTO_CHOLESKY_MAX_P); ``m`` is the sketch size
    (default ``min(p, 64)``); ``tol`` the relative duality gap
    ``(P - D) / sum_i C_i`` at which the run is OPTIMAL; ``cg_max_iter`` caps CG per system
    (default ``max(100, 2 p)``). Returns a :class:`SolveResult` with ``x = w``,
    ``extra["b"]``, ``extra["alpha"]`` (feasible, one per row) and the CG counts per step.
    """
    t0 = time.perf_counter()
    prob = _Problem.build(X, y, C, sample_weight, class_weight)
    opts = _Options.build(prob, linear_solver, preconditioner, reweight, m, active_tol, tol,
                          max_iter, cg_tol, cg_max_iter, block_size)
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
    linear_solver: str  # resolved: "cholesky" or "cg"
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
    def build(cls, prob: _Problem, linear_solver, preconditioner, reweight, m, active_tol, tol,
              max_iter, cg_tol, cg_max_iter, block_size) -> _Options:
        p = prob.X.shape[1]
        check_choice(linear_solver, "linear_solver", OWNER, tuple(LINEAR_SOLVERS))
        check_choice(preconditioner, "preconditioner", OWNER, tuple(PRECONDITIONERS))
        check_choice(reweight, "reweight", OWNER, REWEIGHTS)
        if linear_solver == "auto":
            linear_solver = "cholesky" if p <= AUTO_CHOLESKY_MAX_P else "cg"
        return cls(
            linear_solver, preconditioner, reweight,
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


# ---------------------------------------------------------------------------- iterates
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


# ---------------------------------------------------------------------------- inner systems
def weighted_gram(X: np.ndarray, D: np.ndarray, block_size: int) -> np.ndarray:
    """``X'DX`` (D >= 0) as ``sum_b R_b'R_b`` over blocks of rows ``R_b = D_b^{1/2} X_b`` (numpy
    runs ``R'R`` as a symmetric rank-k update: half the flops of a general product; a
    block_size x p temporary).

    numpy's BLAS, not scipy's: the two packages ship separate OpenBLAS builds whose thread
    pools compete for the cores when one is called right after the other (OpenBLAS threads
    spin for a while after a call). Measured at n = 10^5, p = 100 on 2 cores, right after the
    interior point's numpy products: scipy's dsyrk 50 ms, numpy 20 ms (25 ms each alone)."""
    p = X.shape[1]
    G = np.zeros((p, p))
    for start in range(0, X.shape[0], block_size):
        rows = np.sqrt(D[start:start + block_size])[:, None] * X[start:start + block_size]
        G += rows.T @ rows
    return G


class CholeskySystem:
    """The bordered Newton matrix ``K = [X 1]'D[X 1] + diag(1, ..., 1, 0)`` formed and factored
    once per step, equilibrated first: ``K = S^{-1} Ks S^{-1}`` with ``S = diag(K)^{-1/2}``, so
    Ks has a unit diagonal (D spans many decades near the end, the column scales of X others).
    Ks = L L' (Cholesky); if round-off leaves Ks not numerically positive definite, its
    eigendecomposition with eigenvalues floored at ``p eps max(lambda)``. Each solve takes one
    step of iterative refinement with K applied through X (:meth:`apply`). K is positive
    definite for D > 0 (v'Kv = ||a||^2 + ||D^{1/2}(X a + beta 1)||^2 for v = (a, beta))."""

    def __init__(self, X: np.ndarray, D: np.ndarray, u: np.ndarray, block_size: int) -> None:
        p = X.shape[1]
        self.X, self.D = X, D
        K = np.empty((p + 1, p + 1))
        K[:p, :p] = weighted_gram(X, D, block_size)
        K[:p, :p][np.diag_indices(p)] += 1.0
        K[:p, p] = K[p, :p] = u
        K[p, p] = D.sum()
        self.K, self.scale = K, 1.0 / np.sqrt(np.diag(K))
        Ks = K * self.scale[:, None] * self.scale[None, :]
        self.iterations = 0
        try:
            self.chol: Any = scipy.linalg.cho_factor(Ks, lower=True, check_finite=False)
            self.eig = None
        except np.linalg.LinAlgError:
            lam, Q = np.linalg.eigh(Ks)
            self.chol, self.eig = None, (np.maximum(lam, (p + 1) * 2.2e-16 * lam[-1]), Q)

    def _solve_scaled(self, r: np.ndarray) -> np.ndarray:
        if self.chol is not None:
            return scipy.linalg.cho_solve(self.chol, r, check_finite=False)
        lam, Q = self.eig
        return Q @ ((Q.T @ r) / lam)

    def solve(self, rhs_w: np.ndarray, rhs_b: float) -> tuple[np.ndarray, float, np.ndarray]:
        """``(dw, db, X dw)`` with ``K [dw; db] = [rhs_w; rhs_b]``."""
        r = np.append(rhs_w, rhs_b)
        z = self.scale * self._solve_scaled(self.scale * r)
        z += self.scale * self._solve_scaled(self.scale * (r - self.apply(z)))
        dw = z[:-1]
        return dw, float(z[-1]), self.X @ dw

    def apply(self, z: np.ndarray) -> np.ndarray:
        """``K z`` through X (two passes), not the formed K: the refinement then also corrects
        the round-off of forming X'DX (measured on columns scaled 1e3..1e9 with C = 1e4: the
        gap reached 1.4e-7 instead of 1.8e-6 with the formed K)."""
        DXz = self.D * (self.X @ z[:-1] + z[-1])
        return np.append(z[:-1] + self.X.T @ DXz, DXz.sum())


class CGSystem:
    """The same system through the Schur complement of b: block CG gives ``v1 = H^{-1} rhs_w``
    and ``v2 = H^{-1} u`` (H = I + X'DX, u = X'D1) in the same passes over X; then
    ``db = (rhs_b - u'v1) / (1'D1 - u'v2)``, ``dw = v1 - db v2``. A second solve (the
    corrector) reuses v2 and warm-starts from the first one's v1 and CG residual."""

    def __init__(self, X: np.ndarray, D: np.ndarray, u: np.ndarray, precond, eta: float,
                 max_iter: int) -> None:
        self.X, self.D, self.u, self.precond = X, D, u, precond
        self.eta, self.max_iter = eta, max_iter
        self.iterations = 0
        self.capped = False  # a solve of this step stopped at max_iter, not at its tolerance
        self.last: tuple[np.ndarray, ...] | None = None  # v1, X v1, residual, rhs_w

    def solve(self, rhs_w: np.ndarray, rhs_b: float) -> tuple[np.ndarray, float, np.ndarray]:
        """``(dw, db, X dw)``; only the first block row carries CG's residual."""
        X, D, u = self.X, self.D, self.u
        if self.last is None:
            V, XV, R, k = block_cg(X, D, np.column_stack([rhs_w, u]), self.precond, self.eta,
                                   self.max_iter)
            self.v2, self.Xv2 = V[:, 1], XV[:, 1]
            self.schur = float(D.sum() - u @ self.v2)
            v1, Xv1, res = V[:, 0], XV[:, 0], R[:, 0]
        else:
            v0, Xv0, res0, rhs0 = self.last
            V, XV, R, k = block_cg(X, D, (rhs_w - rhs0 + res0)[:, None], self.precond, self.eta,
                                   self.max_iter, scale=np.array([np.linalg.norm(rhs_w)]))
            v1, Xv1, res = v0 + V[:, 0], Xv0 + XV[:, 0], R[:, 0]
        self.last = (v1, Xv1, res, rhs_w)
        self.iterations += k
        self.capped |= k >= self.max_iter
        db = (rhs_b - float(u @ v1)) / self.schur
        return v1 - db * self.v2, db, Xv1 - db * self.Xv2


def block_pcg(matmul, R: np.ndarray, solve, eta: float, max_iter: int, *,
              V0: np.ndarray | None = None, scale: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, int]:
    """Independent preconditioned CG runs on ``H V = R`` (the columns of R) sharing the products
    ``matmul(P) = (H P, A P)``, where ``A P`` is an auxiliary linear image (None if not wanted)
    accumulated alongside, so that ``A V`` comes without another pass; ``solve`` applies the
    preconditioner. Each run stops once its residual is <= ``eta * scale`` (default the norm of
    its column of R) or after ``max_iter`` iterations. Returns (V, A V, residuals,
    iterations)."""
    target = eta * (np.linalg.norm(R, axis=0) if scale is None else scale)
    if V0 is None:
        V, AV, Res = np.zeros_like(R), None, R.copy()
    else:
        HV, AV = matmul(V0)
        V, Res = V0.copy(), R - HV
    Z = solve(Res)
    P = Z.copy()
    rz = np.einsum("ij,ij->j", Res, Z)
    active = np.linalg.norm(Res, axis=0) > target
    k = 0
    while active.any() and k < max_iter:
        HP, AP = matmul(P[:, active])
        k += 1
        pq = np.einsum("ij,ij->j", P[:, active], HP)
        a = np.where(pq > 0, rz[active] / np.where(pq > 0, pq, 1.0), 0.0)
        V[:, active] += a * P[:, active]
        if AP is not None:
            if AV is None:
                AV = np.zeros((AP.shape[0], R.shape[1]))
            AV[:, active] += a * AP
        Res[:, active] -= a * HP
        Z[:, active] = solve(Res[:, active])
        rz_new = np.einsum("ij,ij->j", Res[:, active], Z[:, active])
        P[:, active] = Z[:, active] + (rz_new / np.where(rz[active] > 0, rz[active], 1.0)
                                       ) * P[:, active]
        rz[active] = rz_new
        idx = np.flatnonzero(active)
        active[idx[(np.linalg.norm(Res[:, idx], axis=0) <= target[idx]) | ~(pq > 0)]] = False
    return V, AV, Res, k


def block_cg(X: np.ndarray, D: np.ndarray, R: np.ndarray, solve, eta: float, max_iter: int,
             scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`block_pcg` on ``(I + X'DX) V = R``, keeping X V (one pass over X per iteration
    gives both). Returns (V, X V, residuals, iterations)."""
    def matmul(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        XP = X @ P
        return P + X.T @ (D[:, None] * XP), XP

    V, XV, Res, k = block_pcg(matmul, R, solve, eta, max_iter, scale=scale)
    if XV is None:  # no iteration ran: V = 0
        XV = np.zeros((X.shape[0], R.shape[1]))
    return V, XV, Res, k


# ---------------------------------------------------------------------------- the method
class _IPM:
    """The interior-point iterations and the per-step linear algebra."""

    def __init__(self, prob: _Problem, opts: _Options) -> None:
        self.prob, self.opts = prob, opts
        self.scale = float(prob.c.sum())
        self.cg_counts: list[int] = []
        self.capped_steps = 0  # steps whose CG solves stopped at cg_max_iter
        self.history: list[dict[str, float]] = []
        self.started = time.perf_counter()  # the history's clock
        self.n_sketches = 0
        self.sketch_rows = 0
        self.sketch_time = 0.0
        needs_sq = opts.linear_solver == "cg" and opts.preconditioner != "none"
        self.X2 = prob.X * prob.X if needs_sq else None
        self._scalar: tuple[Any, ...] | None = None

    # -- the loop
    def run(self) -> SolveResult:
        X, c = self.prob.X, self.prob.c
        n, p = X.shape
        st = _State(np.zeros(p), 0.0, np.full(n, 2.0), np.ones(n), START_ALPHA * c,
                    (1.0 - START_ALPHA) * c, np.zeros(n))
        mu0 = self.mu(st)
        it = 0
        best: SolveResult | None = None  # the smallest gap once the complementarity is below tol
        stalled = 0
        for it in range(1, self.opts.max_iter + 1):
            mu = self.mu(st)
            comp = 2 * n * mu / self.scale
            if not np.isfinite(comp):
                return self.result(st, it - 1, TerminationCondition.NUMERICAL_ERROR,
                                   "a non-finite iterate")
            if comp <= self.opts.tol:
                res = self.result(st, it - 1, TerminationCondition.OPTIMAL, "tol met")
                gap = math.inf if res.gap is None else res.gap
                if gap <= self.opts.tol:
                    return res
                if best is None or gap < 0.5 * best.gap:
                    best, stalled = res, 0
                else:
                    stalled += 1
                if stalled >= STALL_STEPS:
                    return self.stalled(best)
            t = self.iterate(st, mu, max(self.opts.cg_tol * min(1.0, mu / mu0), 1e-14))
            if not t > MIN_STEP:
                return self.result(st, it, TerminationCondition.NUMERICAL_ERROR,
                                   f"step length {t:.1e} at step {it}: the interior point "
                                   f"stalled ({self.cause()})")
        return self.result(st, it, TerminationCondition.ITERATION_LIMIT,
                           f"max_iter={self.opts.max_iter} interior-point steps")

    @staticmethod
    def mu(st: _State) -> float:
        return float(st.s @ st.alpha + st.xi @ st.nu) / (2 * st.s.size)

    def system(self, D: np.ndarray, u: np.ndarray, eta: float) -> CholeskySystem | CGSystem:
        """This step's Newton system, factored or with its CG preconditioner."""
        if self.opts.linear_solver == "cholesky":
            return CholeskySystem(self.prob.X, D, u, self.opts.block_size)
        return CGSystem(self.prob.X, D, u, self.preconditioner(D), eta, self.opts.cg_max_iter)

    def iterate(self, st: _State, mu: float, eta: float) -> float:
        """One predictor-corrector step (in place); returns its step length."""
        X, y, c = self.prob.X, self.prob.y, self.prob.c
        D = 1.0 / (st.s / st.alpha + st.xi / st.nu)
        r_p = y * (st.Xw + st.b) + st.xi - st.s - 1.0
        r_c = c - st.alpha - st.nu
        base = X.T @ np.column_stack([y * st.alpha, D])  # Z'alpha and u = X'D 1 in one pass
        r_w, u = st.w - base[:, 0], base[:, 1]
        r_b = float(y @ st.alpha)
        system = self.system(D, u, eta)

        def newton(g: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
            return system.solve(-r_w + X.T @ (y * D * g), float(y @ (D * g)) + r_b)

        g_a = self._g(st, r_p, r_c, st.s * st.alpha, st.xi * st.nu)
        aff = self._assemble(st, D, g_a, newton(g_a), st.s * st.alpha, st.xi * st.nu, r_c)
        t_a = self.step_length(st, aff)
        mu_a = float((st.s + t_a * aff.ds) @ (st.alpha + t_a * aff.dalpha)
                     + (st.xi + t_a * aff.dxi) @ (st.nu + t_a * aff.dnu)) / (2 * st.s.size)
        sigma = (mu_a / mu) ** 3
        r_sa = st.s * st.alpha + aff.ds * aff.dalpha - sigma * mu
        r_xn = st.xi * st.nu + aff.dxi * aff.dnu - sigma * mu
        g = self._g(st, r_p, r_c, r_sa, r_xn)
        step = self._assemble(st, D, g, newton(g), r_sa, r_xn, r_c)
        t = self.step_length(st, step)
        self.cg_counts.append(system.iterations)
        self.capped_steps += bool(getattr(system, "capped", False))
        self.history.append({"mu": mu, "sigma": sigma, "step": t, "cg": system.iterations,
                             "r_w": float(np.linalg.norm(r_w)), "r_b": r_b,
                             "r_p": float(np.linalg.norm(r_p)),
                             "iteration": len(self.history) + 1,
                             "time": time.perf_counter() - self.started})
        self.apply(st, step, t)
        st.Xw = X @ st.w  # afresh: no drift of the running X w into r_p and the certificate
        return t

    def _g(self, st: _State, r_p, r_c, r_sa, r_xn) -> np.ndarray:
        """``g = -r_p + (r_xn + xi r_c) / nu - r_sa / alpha``."""
        return -r_p + (r_xn + st.xi * r_c) / st.nu - r_sa / st.alpha

    def _assemble(self, st: _State, D, g, newton: tuple[np.ndarray, float, np.ndarray], r_sa,
                  r_xn, r_c) -> _Step:
        """The full step from (dw, db, X dw) of the Newton system."""
        dw, db, Xdw = newton
        dalpha = D * (g - self.prob.y * (Xdw + db))
        ds = -(r_sa + st.s * dalpha) / st.alpha
        dnu = r_c - dalpha
        dxi = -(r_xn + st.xi * dnu) / st.nu
        return _Step(dw, db, Xdw, dxi, ds, dalpha, dnu)

    @staticmethod
    def step_length(st: _State, d: _Step) -> float:
        """``BOUNDARY`` times the largest t <= 1/BOUNDARY keeping s, alpha, xi, nu positive.

        Inside the interior every v > 0, so v + t dv > 0 for all entries exactly when
        ``t < 1 / max_i(-dv_i / v_i)``: one division and one reduction per vector (a masked
        ratio test took 6.8 ms per call at n = 327,346, a third of the interior point's time)."""
        worst = BOUNDARY  # caps t at 1 / BOUNDARY
        for v, dv in ((st.s, d.ds), (st.alpha, d.dalpha), (st.xi, d.dxi), (st.nu, d.dnu)):
            worst = max(worst, -float(np.min(dv / v)))
        return min(1.0, BOUNDARY / worst)

    @staticmethod
    def apply(st: _State, d: _Step, t: float) -> None:
        st.w += t * d.dw
        st.b += t * d.db
        st.Xw += t * d.Xdw
        st.xi += t * d.dxi
        st.s += t * d.ds
        st.alpha += t * d.dalpha
        st.nu += t * d.dnu

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

    def cause(self) -> str:
        """Why a run stalls, for both of its symptoms (a vanishing step, a gap that stops
        shrinking): with CG, its residual left in w - Z'alpha (and how many steps' solves
        stopped at cg_max_iter); with the factored system, round-off. Once CG is capped the
        iterates follow its residual, so which symptom shows first depends on the last bits
        of the BLAS kernels (measured on one instance: SkylakeX's kernels end at a vanishing
        step, Haswell's at a stalled gap); the cause named is the same."""
        if self.opts.linear_solver == "cg":
            return (f"CG's residual left in w - Z'alpha, CG at cg_max_iter="
                    f"{self.opts.cg_max_iter} in {self.capped_steps} steps: raise cg_max_iter, "
                    "use a stronger preconditioner or linear_solver='cholesky'")
        return "round-off in w - Z'alpha: rescale the features"

    def stalled(self, best: SolveResult) -> SolveResult:
        """The best iterate once mu is below tol but the gap stopped shrinking: what is left
        in r_w = w - Z'alpha (CG's residual, or round-off of about eps sum_i C_i |x_ij| with
        the factored system) bounds the dual objective's accuracy. OPTIMAL only if that gap
        still passes the certificate tolerance."""
        rest = best.raw_status.removeprefix("tol met")  # keeps what certify added
        best.raw_status = (f"the duality gap stalled at {best.gap:.1e} above tol="
                           f"{self.opts.tol:.0e} ({self.cause()}){rest}")
        return best

    def label(self) -> str:
        """"ipm-cholesky", or "ipm-" and the preconditioner of CG."""
        if self.opts.linear_solver == "cholesky":
            return "ipm-cholesky"
        return f"ipm-{self.opts.preconditioner}"

    def result(self, st: _State, it: int, cond: TerminationCondition, raw: str) -> SolveResult:
        finite = all(np.all(np.isfinite(v)) for v in (st.w, st.alpha, st.Xw)) and math.isfinite(
            st.b)
        extra: dict[str, Any] = {
            "cg_iterations": list(self.cg_counts), "total_cg": int(sum(self.cg_counts)),
            "cg_capped_steps": self.capped_steps,
            "n_sketches": self.n_sketches, "sketch_rows": self.sketch_rows,
            "sketch_time": self.sketch_time, "history": self.history,
            "linear_solver": self.opts.linear_solver,
        }
        if not finite:
            return SolveResult(TerminationCondition.NUMERICAL_ERROR, SolutionStatus.NO_SOLUTION,
                               iterations=it, solver=OWNER, raw_status=raw, extra=extra,
                               strategy=self.label())
        w, b, obj, alpha, dual = self.certificate(st)
        full = np.zeros(self.prob.keep.size)
        full[self.prob.keep] = alpha
        extra.update(b=b, intercept=b, alpha=full)
        status = (SolutionStatus.OPTIMAL if cond is TerminationCondition.OPTIMAL
                  else SolutionStatus.FEASIBLE)
        res = SolveResult(cond, status, objective=obj, x=w, bound=dual, iterations=it,
                          solver=OWNER, raw_status=raw, extra=extra,
                          strategy=self.label())
        # the problem layer's gap scale (sum C_i, or the objective when smaller), so that the
        # loop's "gap <= tol" is the gap the user is shown
        return certify(res, objective_scale(self.scale, obj, dual), tol=max(self.opts.tol, 1e-6),
                       failure=TerminationCondition.NUMERICAL_ERROR)
