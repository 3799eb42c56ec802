r"""Interior point for the SVM block subproblem, with Nystroem-preconditioned CG Newton solves.

The subproblem of :mod:`solvers.smo.block` (Q = Q_BB, q x q, positive semidefinite)::

    min_a  f(a) = 1/2 a'Q a + c'a    s.t.  y'a = rhs,   l <= a <= u

with multiplier lam of the equality and z_l, z_u >= 0 of the bounds. KKT residuals, for a
strictly inside the box (s_l = a - l > 0, s_u = u - a > 0)::

    r_d = Q a + c - lam y - z_l + z_u        r_p = y'a - rhs
    s_l z_l = mu,   s_u z_u = mu   (mu -> 0)

Newton's step, with r_l = sigma mu - s_l z_l - corr_l and r_u = sigma mu - s_u z_u - corr_u
(corr = 0 in the predictor, the products da_aff dz_aff in Mehrotra's corrector), after
eliminating the bound multipliers (dz_l = (r_l - z_l da) / s_l, dz_u = (r_u + z_u da) / s_u)::

    D = diag(z_l / s_l + z_u / s_u),   H = Q + D
    g = -r_d + r_l / s_l - r_u / s_u
    H da - y dlam = g,    y'da = -r_p

The equality is a Schur complement, as the intercept of :mod:`solvers.sketch.ipm_svm`: solve
``H v1 = g`` and ``H v2 = y`` (one block CG in the predictor; the corrector reuses v2), then
``dlam = (-r_p - y'v1) / (y'v2)`` and ``da = v1 + dlam v2``. Whatever CG's accuracy, y'da =
-r_p holds exactly, so an inexact solve only leaves a CG residual in r_d, which the next step
sees (r_d is recomputed from a each step). CG stops once ``||H v - rhs|| <= eta_k ||rhs||``
with ``eta_k = max(cg_tol min(1, mu_k / mu_0), 1e-14)``.

Preconditioner of H (``preconditioner="nystroem"``), set up once per block::

    Q ~ F F'            (pivoted partial Cholesky: Nystroem with r landmarks of the block)
    e = diag(Q - F F')  (what the landmarks leave on the diagonal, >= 0)
    M = F F' + diag(D + e),   M^{-1} by Woodbury (LowRankPlusDiagonal): O(q r) per vector

The landmarks are chosen greedily, the column of largest remaining diagonal each time, so F is
the Nystroem approximation ``Q_{:,S} Q_{SS}^{-1} Q_{S,:}`` on the chosen set S; r stops early
once trace(Q - F F') <= 1e-12 trace(Q). Nystroem rather than an FD sketch of an explicit
feature map: the block solver holds Q_BB and nothing else (the kernel may be precomputed, or
have no finite feature map such as RBF without random features), and Nystroem uses entries of
Q_BB already in hand, O(q r^2) with no kernel evaluation and exact on the landmarks. Only D
changes between Newton steps, so each step refactors the r x r Woodbury core, O(q r^2).
``"diag"`` is M = diag(H) (Jacobi) and ``"none"`` M = I, for comparison;
``linear_solver="cholesky"`` factors the dense H instead (q^3 / 3 per step, no CG).

Where it pays (measured, one BLAS thread; the numbers are on the SMO / block docs page): the
Nystroem-preconditioned CG beats HiGHS's active set only when the spectrum of Q_BB decays fast
(RBF gamma = 0.05 on 5 features: 3-8 CG iterations, 2-4x faster than HiGHS from q = 1000 on);
at gamma = 0.5 rank 100 leaves 20-90 CG iterations per solve and it is slower than HiGHS at
every q from 200 to 2000, while the dense Cholesky variant is faster than HiGHS there.

Mehrotra predictor-corrector with one step length, 0.995 of the distance to the boundary.
Start: a = (l + u) / 2, lam = 0, z from the gradient there (z_l - z_u = Q a + c, both >= a
margin). Stop when a's equality residual is at round-off (|y'a - rhs| <= 1e-13 (|rhs| + |y|'|a|
+ 1e-4 |y|'max(|l|, |u|))) and the gap certificate holds::

    g = Q a + c - lam y,  gap = sum_i s_l,i max(g_i, 0) + s_u,i max(-g_i, 0)  (>= f(a) - f*)

(z_l = max(g, 0), z_u = max(-g, 0) are feasible for the Wolfe dual at this a and lam), with
``gap <= tol (|1/2 a'Qa| + |c'a| + 1e-4 s_box)``, s_box = |c|'w + 1/2 sum_i Q_ii w_i^2 with
w = u - l (the floor keeps the test reachable when the optimum has f near 0, e.g. a* = l =
0). Fixed variables (l_i = u_i) are taken out first.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg

from solvers.result import TerminationCondition
from solvers.sketch.ipm_svm import LowRankPlusDiagonal, block_pcg
from solvers.subproblem import subproblem_error
from solvers.validation import check_choice, check_int, check_positive

OWNER = "ipm_block_qp"
PRECONDITIONERS = ("nystroem", "diag", "none")
LINEAR_SOLVERS = ("cg", "cholesky")
DEFAULT_RANK = 100
"""Landmarks r of the Nystroem preconditioner (fewer when q is smaller or Q has lower rank)."""
STEP_FRACTION = 0.995


def nystroem_factor(Q: np.ndarray, rank: int, rtol: float = 1e-12
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(F, e)``: Q ~ F F' by pivoted partial Cholesky (greedy Nystroem, at most ``rank``
    landmarks) and the residual diagonal e = diag(Q - F F') >= 0. O(q rank^2)."""
    q = Q.shape[0]
    d = np.array(Q.diagonal(), dtype=float)
    stop = rtol * max(float(d.sum()), 0.0)
    F = np.zeros((q, min(rank, q)))
    k = 0
    while k < F.shape[1]:
        j = int(np.argmax(d))
        if d[j] <= 0.0 or d.sum() <= stop:
            break
        col = Q[:, j] - F[:, :k] @ F[j, :k]
        F[:, k] = col / np.sqrt(d[j])
        d -= F[:, k] ** 2
        d[j] = 0.0
        np.maximum(d, 0.0, out=d)
        k += 1
    return F[:, :k], d


@dataclasses.dataclass
class QPInfo:
    """What :func:`ipm_block_qp` did: Newton steps, CG iterations per linear solve, final gap."""

    steps: int = 0
    cg_iterations: list[int] = dataclasses.field(default_factory=list)
    gap: float = float("inf")
    converged: bool = False


class _Newton:
    """Solves ``(Q + diag(D)) V = R`` for one Newton step: dense Cholesky or PCG."""

    def __init__(self, Q, F, e, D, how: str, precond: str, eta: float, max_iter: int,
                 info: QPInfo) -> None:
        self.Q, self.D, self.eta, self.max_iter, self.info = Q, D, eta, max_iter, info
        self.chol = None
        if how == "cholesky":
            self.chol = _cholesky(Q, D)
        elif precond == "nystroem":
            lr = LowRankPlusDiagonal(np.ones(D.size), D + e, F.T)
            self.prec = lr.solve
        elif precond == "diag":
            hd = Q.diagonal() + D
            self.prec = lambda V: V / hd[:, None]
        else:
            self.prec = lambda V: V

    def solve(self, R: np.ndarray, V0: np.ndarray | None = None) -> np.ndarray:
        """V with (Q + D) V ~ R (R of shape (q, k))."""
        if self.chol is not None:
            return scipy.linalg.cho_solve(self.chol, R, check_finite=False)
        V, _, _, k = block_pcg(lambda P: (self.Q @ P + self.D[:, None] * P, None), R,
                               self.prec, self.eta, self.max_iter, V0=V0)
        self.info.cg_iterations.append(k)
        return V


def _cholesky(Q: np.ndarray, D: np.ndarray):
    """Cholesky factor of Q + diag(D); if round-off makes it indefinite (Q numerically
    rank-deficient, D of free variables -> 0), of Q + diag(D) + eps trace(Q) / q I (the
    Newton step is then inexact; r_d is recomputed at the next step)."""
    H = Q + np.diag(D)
    try:
        return scipy.linalg.cho_factor(H, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        H[np.diag_indices_from(H)] += 1e-14 * max(float(np.trace(Q)), 1e-300) / Q.shape[0]
        return scipy.linalg.cho_factor(H, lower=True, check_finite=False)


def _max_step(s: np.ndarray, ds: np.ndarray) -> float:
    """Largest t with s + t ds >= 0 (s > 0; inf when ds >= 0)."""
    neg = ds < 0
    return float(np.min(-s[neg] / ds[neg])) if neg.any() else np.inf


def _gap(a, Qa, c, y, lam, sl, su, floor: float) -> tuple[float, float]:
    """(gap certificate, scale) at a = l + s_l = u - s_u with multiplier lam (see the module
    docstring)."""
    g = Qa + c - lam * y
    gap = float(sl @ np.maximum(g, 0.0) + su @ np.maximum(-g, 0.0))
    scale = abs(0.5 * float(a @ Qa)) + abs(float(c @ a)) + floor
    return gap, scale


def ipm_block_qp(Q: np.ndarray, c: np.ndarray, y: np.ndarray, rhs: float, lo: np.ndarray,
                 up: np.ndarray, *, rank: int = DEFAULT_RANK, preconditioner: str = "nystroem",
                 linear_solver: str = "cg", tol: float = 1e-12, cg_tol: float = 1e-2,
                 cg_max_iter: int | None = None, max_iter: int = 100, strict: bool = True,
                 info: QPInfo | None = None) -> np.ndarray:
    """argmin 1/2 a'Qa + c'a s.t. y'a = rhs, lo <= a <= up by the interior point above.

    Returns a inside [lo, up] (strictly for the free variables); ``info`` (a QPInfo) collects
    the Newton steps, CG iterations and the final gap. When ``max_iter`` steps do not reach
    the gap ``tol``: SubproblemError if ``strict``, else the last iterate (``info.converged`` is
    False).
    """
    preconditioner = check_choice(preconditioner, "preconditioner", OWNER, PRECONDITIONERS)
    linear_solver = check_choice(linear_solver, "linear_solver", OWNER, LINEAR_SOLVERS)
    rank = check_int(rank, "rank", OWNER, low=1)
    tol = check_positive(tol, "tol", OWNER)
    info = QPInfo() if info is None else info
    lo, up, c, y = (np.asarray(v, dtype=float) for v in (lo, up, c, y))
    out = lo.copy()
    free = up - lo > 1e-14 * np.maximum(1.0, np.abs(up))
    if not free.any():
        info.converged, info.gap = True, 0.0
        return out
    fixed = ~free
    Qf = np.ascontiguousarray(Q[np.ix_(free, free)])
    cf = c[free] + Q[np.ix_(free, fixed)] @ lo[fixed]
    rhs_f = float(rhs - y[fixed] @ lo[fixed])
    max_cg = check_int(max(50, Qf.shape[0]) if cg_max_iter is None else cg_max_iter,
                       "cg_max_iter", OWNER)
    F, e = (nystroem_factor(Qf, rank) if preconditioner == "nystroem" and linear_solver == "cg"
            else (None, None))
    out[free] = _mehrotra(Qf, cf, y[free], rhs_f, lo[free], up[free], F, e, linear_solver,
                          preconditioner, tol, cg_tol, max_cg, max_iter, info)
    if strict and not info.converged:
        raise subproblem_error(
            TerminationCondition.ITERATION_LIMIT,
            f"gap {info.gap:.1e} after {max_iter} steps (asked {tol:.0e})",
            strategy="block", subsolver="the block interior point", what="a block QP",
            fix="raise max_iter or loosen tol, or try solver='highs'")
    return out


def _mehrotra(Q, c, y, rhs, lo, up, F, e, how, precond, tol, cg_tol, max_cg, max_iter,
              info: QPInfo) -> np.ndarray:
    """The predictor-corrector iterations on the free variables (box widths > 0)."""
    a = 0.5 * (lo + up)
    sl, su = a - lo, up - a  # kept as iterates: u - a loses the digits of a small s_u
    Qa = Q @ a
    g0 = Qa + c
    margin = max(1.0, float(np.abs(g0).max()))
    zl, zu = np.maximum(g0, 0.0) + margin, np.maximum(-g0, 0.0) + margin
    lam = 0.0
    mu0 = None
    w = up - lo
    floor = 1e-4 * (float(np.abs(c) @ w) + 0.5 * float(Q.diagonal() @ (w * w))) + 1e-300
    y_floor = 1e-4 * float(np.abs(y) @ np.maximum(np.abs(lo), np.abs(up))) + 1e-300
    for _ in range(max_iter):
        mu = float(sl @ zl + su @ zu) / (2 * a.size)
        mu0 = mu if mu0 is None else mu0
        rd = Qa + c - lam * y - zl + zu
        rp = float(y @ a) - rhs
        info.gap, scale = _gap(a, Qa, c, y, lam, sl, su, floor)
        feas = abs(rp) <= 1e-13 * (abs(rhs) + float(np.abs(y) @ np.abs(a)) + y_floor)
        if feas and info.gap <= tol * scale:
            info.converged = True
            break
        D = zl / sl + zu / su
        eta = max(cg_tol * min(1.0, mu / mu0), 1e-14)
        lin = _Newton(Q, F, e, D, how, precond, eta, max_cg, info)
        # predictor (sigma = 0), both Schur columns in one block solve
        rl, ru = -sl * zl, -su * zu
        V = lin.solve(np.column_stack([-rd + rl / sl - ru / su, y]))
        v2, ytv2 = V[:, 1], float(y @ V[:, 1])
        da, dzl, dzu = _step(V[:, 0], v2, ytv2, y, rp, rl, ru, sl, su, zl, zu)
        t = _step_length(sl, su, zl, zu, da, dzl, dzu, fraction=1.0)
        mu_aff = float((sl + t * da) @ (zl + t * dzl) + (su - t * da) @ (zu + t * dzu)
                       ) / (2 * a.size)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        # corrector: second-order terms of the predictor, same H and v2
        rl = sigma * mu - sl * zl - da * dzl
        ru = sigma * mu - su * zu + da * dzu
        v1 = lin.solve((-rd + rl / sl - ru / su)[:, None], V[:, :1])[:, 0]
        da, dzl, dzu = _step(v1, v2, ytv2, y, rp, rl, ru, sl, su, zl, zu)
        t = _step_length(sl, su, zl, zu, da, dzl, dzu, fraction=STEP_FRACTION)
        if not (np.isfinite(t) and t > 1e-12 and np.isfinite(da).all()):
            break  # no usable step: the last iterate is returned (info.converged False)
        dlam = (-rp - float(y @ v1)) / ytv2
        sl, su, zl, zu, lam = sl + t * da, su - t * da, zl + t * dzl, zu + t * dzu, lam + t * dlam
        a = np.where(sl <= su, lo + sl, up - su)
        Qa = Q @ a
        info.steps += 1
    return a


def _step(v1, v2, ytv2, y, rp, rl, ru, sl, su, zl, zu):
    """(da, dz_l, dz_u) from the two Schur columns (see the module docstring)."""
    dlam = (-rp - float(y @ v1)) / ytv2
    da = v1 + dlam * v2
    return da, (rl - zl * da) / sl, (ru + zu * da) / su


def _step_length(sl, su, zl, zu, da, dzl, dzu, fraction: float) -> float:
    """``fraction`` of the largest t <= 1 keeping s_l, s_u, z_l, z_u >= 0."""
    t = min(_max_step(sl, da), _max_step(su, -da), _max_step(zl, dzl), _max_step(zu, dzu))
    return min(1.0, fraction * t)
