"""Kernel logistic regression dual with entropy terms, and sparse KLR (docs/problems/klr.md).

    min_alpha  f(alpha) = 1/2 alpha'Q alpha + sum_i C_i G(alpha_i / C_i) - lam sum_i alpha_i
    s.t.       y'alpha = 0,   l_i <= alpha_i <= u_i,
    G(d) = d log d + (1 - d) log(1 - d),   Q_ij = y_i y_j k(x_i, x_j),   C_i = C s_i.

Plain KLR: lam = 0 and no bound tolerance (0 < alpha_i < C_i, the entropy keeps alpha inside).
S-KLR (the paper's problem (22)): lam > 0 (the paper's lambda) and bounds
gamma_i <= alpha_i <= C_i - gamma_i with gamma_i = ``bound_tol`` s_i (the paper's gamma for a
unit-weight row, so that an integer weight equals repeated rows; *not* the RBF width, which is
``gamma`` as in scikit-learn).

Primal and certificate (derived by Fenchel duality; checked against an independent primal
minimisation in the tests): with t_i = y_i (w'phi(x_i) + b),

    P(w, b) = 1/2 ||w||^2 + sum_i loss_i(t_i),
    loss_i(t) = max_{l_i <= a <= u_i} [a (lam - t) - C_i G(a / C_i)],

the shifted logistic loss C_i log(1 + e^{lam - t}) for the open box, logistic in the middle with
linear tails (slopes -u_i, -l_i) with S-KLR's bounds. For every feasible alpha and every (w, b),
P(w, b) + f(alpha) >= 1/2 ||w - w(alpha)||^2 >= 0, w(alpha) = sum_i alpha_i y_i phi(x_i), with
equality at the optimum; so ``lower_bound(alpha) = -min_b P(w(alpha), b) <= min f``. Gaps are
relative to ``natural_scale() = P(0, 0) = sum_i loss_i(0)`` (log(1 + e^lam) sum_i C_i for the
open box), an upper bound on -min f that scales with C and the weights.

The monolithic model is a CVXPY problem with the exponential cone (``entr``): d log d = -entr(d).
The quadratic is written 1/2 ||F'(y * alpha)||^2 with K ~ F F' (eigen-factor keeping
eigenvalues above ``factor_tol`` times the largest), so the model stays small.
"Optimal" for every strategy means the gap certificate: (f(alpha) - lower_bound(alpha)) /
natural_scale() <= CERTIFICATE_TOL. The maximal KKT violation max_{I_up} m - min_{I_low} m,
m = -y * grad f, is reported in ``extra['max_violation']`` but decides nothing: near the open
box's ends the entropy's derivative log(a / (C - a)) makes it large for alphas of 1e-15 that
change f by 1e-14. The intercept b minimises P(w(alpha), b). Probabilities sigma(f(x)).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from optmodels.problem import Problem
from optmodels.svm import KERNEL_PARAMS, build_kernel, check_n_features, max_kernel_diag
from optmodels.validation import Param
from solvers.backend import get_backend
from solvers.errors import DataError, ExportError
from solvers.kernels import Kernel
from solvers.result import (
    CERTIFICATE_TOL,
    SolutionCertificate,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    objective_scale,
    strong_convexity_distance,
)
from solvers.smo.certificate import klr_best_intercept, klr_loss, klr_primal, klr_scale
from solvers.solution import KernelSolution
from solvers.special import expit, xlogy
from solvers.validation import check_array, check_labels, check_sample_weight


class KLR(Problem):
    """The (sparse) kernel logistic regression dual (see the module docstring).

    Parameters
    ----------
    X, y : data and two-class labels.  sample_weight : s_i >= 0 (zero-weight rows are dropped).
    C : penalty; lam : the paper's lambda >= 0; bound_tol : the paper's gamma (None = plain KLR).
    kernel, gamma, degree, coef0 : as scikit-learn (``kernel='rbf'`` by default).
    """

    NAME: ClassVar[str] = "klr"
    PARAMS: ClassVar[dict[str, Param]] = {
        "C": Param("float", 1.0, "penalty C", low=0.0),
        "lam": Param("float", 0.0, "S-KLR lambda (margin shift)", low=0.0, closed="left"),
        "bound_tol": Param(
            "float",
            None,
            "S-KLR gamma: bounds gamma <= alpha <= C - gamma",
            low=0.0,
            closed="left",
            none_ok=True,
        ),
        **{
            **KERNEL_PARAMS,
            "kernel": Param("choice", "rbf", "kernel", choices=KERNEL_PARAMS["kernel"].choices),
        },
    }

    def __init__(self, X: Any, y: Any, *, sample_weight: Any = None, **params: Any) -> None:
        self._set_params(params)
        X = check_array(X, "X", accept_sparse=True)
        y_pm, self.classes_ = check_labels(y, X.shape[0], warn_column=True)
        w = check_sample_weight(sample_weight, X.shape[0])
        keep = w > 0
        self.kept_ = keep  # rows with positive weight; the model is declared on these
        self._X, self.y, self.sample_weight = X[keep], y_pm[keep], w[keep]
        if np.unique(self.y).size != 2:
            raise DataError(
                "Only one class is left after dropping zero-weight rows; KLR needs two."
            )
        self.kernel_ = build_kernel(self.params, self._X)
        self.Ci = self.C * self.sample_weight
        tol = 0.0 if self.bound_tol is None else self.bound_tol
        if 2 * tol >= self.C:
            raise DataError(
                f"bound_tol={tol} leaves no room: it must be below C / 2 = {self.C / 2} "
                "(the bounds are bound_tol * s_i <= alpha_i <= (C - bound_tol) * s_i)."
            )
        self.lower = tol * self.sample_weight
        self.upper = self.Ci - self.lower

    def gram(self) -> np.ndarray:
        return self.kernel_(self._X, self._X)

    def kernel_rows(self) -> tuple[Kernel, Any, np.ndarray, np.ndarray]:
        """For :meth:`Problem.kernel_check`: X holds the kept rows (for 'precomputed', the kept
        rows of the kernel matrix, their columns ``kept_``)."""
        rows = np.arange(self.n)
        cols = np.flatnonzero(self.kept_) if self.kernel == "precomputed" else rows
        return self.kernel_, self._X, rows, cols

    def kernel_matvec(self, v: np.ndarray, block_rows: int = 2048) -> np.ndarray:
        """K v; for the linear kernel X (X'v), O(n p) (dense or sparse X), else in row blocks."""
        if self.kernel == "linear":
            return np.asarray(self._X @ (self._X.T @ v)).ravel()
        return super().kernel_matvec(v, block_rows)

    def objective(self, alpha: np.ndarray, kv: np.ndarray | None = None) -> float:
        """f(alpha) of the module docstring (G(0) = G(1) = 0 by continuity); ``kv`` = K v
        (v = alpha * y) when already known."""
        v = alpha * self.y
        d = np.clip(alpha / self.Ci, 0.0, 1.0)
        G = xlogy(d, d) + xlogy(1 - d, 1 - d)
        Kv = self.kernel_matvec(v) if kv is None else kv
        return float(0.5 * v @ Kv + self.Ci @ G - self.lam * alpha.sum())

    def gradient(self, alpha: np.ndarray) -> np.ndarray:
        """grad f_i = y_i (K (alpha * y))_i + log(d_i / (1 - d_i)) - lam,  d = alpha / C_i."""
        d = np.clip(alpha / self.Ci, 1e-300, 1 - 1e-16)
        return self.y * self.kernel_matvec(alpha * self.y) + np.log(d) - np.log1p(-d) - self.lam

    def kkt(self, alpha: np.ndarray, tol: float = 1e-12) -> tuple[float, float]:
        """(max violation max_{I_up} m - min_{I_low} m, intercept b) with m = -y * grad f."""
        m = -self.y * self.gradient(alpha)
        scale = tol * self.Ci
        below = alpha < self.upper - scale
        above = alpha > self.lower + scale
        up = (below & (self.y > 0)) | (above & (self.y < 0))
        low = (below & (self.y < 0)) | (above & (self.y > 0))
        m_up, m_low = m[up].max(initial=-np.inf), m[low].min(initial=np.inf)
        return float(max(m_up - m_low, 0.0)), float((m_up + m_low) / 2)

    def natural_scale(self) -> float:
        """P(0, 0) = sum_i loss_i(0) (module docstring): gaps are relative to it."""
        return klr_scale(self.lam, self.Ci, self.lower, self.upper)

    def solution_certificate(self, res: SolveResult) -> SolutionCertificate | None:
        """f(alpha) = 1/2 ||w(alpha)||^2 + (convex terms) is 1-strongly convex in
        w(alpha) = sum_i alpha_i y_i phi(x_i), so ``f(alpha) - f* >= 1/2 ||w(alpha) - w*||^2``
        and, with the absolute gap G = objective - bound >= f(alpha) - f*,
        ``||w - w*|| <= sqrt(2 G)``; every training row's ``w'phi(x_i)`` is within
        ``sqrt(2 G) sqrt(k(x_i, x_i))`` of the optimum's, in logits (the intercept is not
        covered).
        ``||w||^2 = 2 (f(alpha) - sum_i h_i(alpha_i) + lam sum_i alpha_i)``, O(n)."""
        alpha = res.x if res.x.shape[0] == self.n else res.x[self.kept_]
        d = np.clip(alpha / self.Ci, 0.0, 1.0)
        entropy = float(self.Ci @ (xlogy(d, d) + xlogy(1 - d, 1 - d)))
        half_w2 = res.objective - entropy + self.lam * float(alpha.sum())
        distance = strong_convexity_distance(res.objective - float(res.bound), 1.0)
        decisions = distance * np.sqrt(max_kernel_diag(self.kernel_, self._X))
        return SolutionCertificate(distance, decisions, float(np.sqrt(max(2.0 * half_w2, 0.0))),
                                   1.0)

    def typed_solution(self, res: SolveResult) -> KernelSolution | None:
        """alpha_i y_i over the kept rows' support and b."""
        if res.extra.get("b") is None:
            return None
        alpha = res.x if res.x.shape[0] == self.n else res.x[self.kept_]
        return KernelSolution.from_dual(self._X, alpha, self.y, float(res.extra["b"]),
                                        self.kernel_)

    def certificate_scale(self, res: SolveResult) -> float:
        """:func:`solvers.result.objective_scale` of the natural scale and the result's
        objective and bound: on separable data the optimum stays bounded as C grows, so 1e-6
        of P(0, 0) alone would let an answer far from it pass."""
        return objective_scale(self.natural_scale(), res.objective, res.bound)

    def primal_objective(self, alpha: np.ndarray, b: float) -> float:
        """P(w(alpha), b) = 1/2 alpha'Q alpha + sum_i loss_i((Q alpha)_i + y_i b)."""
        qa = self.y * self.kernel_matvec(alpha * self.y)
        return klr_primal(alpha, qa, self.y, self.lam, self.Ci, self.lower, self.upper, b)

    def linear_primal_objective(self, w: np.ndarray, b: float) -> float:
        """P(w, b) of the module docstring for the linear kernel (phi(x) = x, w explicit). By
        weak duality -P(w, b) <= min f for every (w, b): a lower bound that needs no alpha."""
        if self.kernel != "linear":
            raise ValueError(
                f"linear_primal_objective needs kernel='linear' (w in the space of X's "
                f"columns); this problem has kernel={self.kernel!r}. Use primal_objective("
                "alpha, b), which takes w = w(alpha)."
            )
        t = self.y * np.asarray(self._X @ w + b).ravel()
        loss = klr_loss(t, self.lam, self.Ci, self.lower, self.upper)
        return float(0.5 * w @ w + loss.sum())

    def lower_bound(self, alpha: np.ndarray,
                    kv: np.ndarray | None = None) -> tuple[float, float]:
        """(-min_b P(w(alpha), b), the minimising b): a proven lower bound on min f for any
        alpha, tight at the optimum (module docstring); ``kv`` = K (alpha * y) when known."""
        qa = self.y * (self.kernel_matvec(alpha * self.y) if kv is None else kv)
        args = (self.y, self.lam, self.Ci, self.lower, self.upper)
        b = klr_best_intercept(qa, *args)
        return -klr_primal(alpha, qa, *args, b), b

    def cvxpy_problem(self, factor_tol: float = 1e-10) -> tuple[Any, Any]:
        """The dual as a CVXPY problem (exponential cone); returns (problem, alpha variable)."""
        import cvxpy as cp

        vals, vecs = np.linalg.eigh(self.gram())
        keep = vals > factor_tol * vals.max()
        F = vecs[:, keep] * np.sqrt(vals[keep])
        alpha = cp.Variable(self.n, name="alpha")
        d = cp.multiply(alpha, 1.0 / self.Ci)
        entropy = -cp.sum(cp.multiply(self.Ci, cp.entr(d) + cp.entr(1 - d)))
        obj = (
            0.5 * cp.sum_squares(F.T @ cp.multiply(self.y, alpha))
            + entropy
            - self.lam * cp.sum(alpha)
        )
        cons = [self.y @ alpha == 0, alpha >= self.lower, alpha <= self.upper]
        return cp.Problem(cp.Minimize(obj), cons), alpha

    def qp(self, form: str = "dual") -> Any:
        raise ExportError(
            "The KLR dual has entropy (exponential-cone) terms that MPS/LP files cannot express. "
            "Solve it with --solver clarabel or ecos, or export the SVM dual "
            "(optmodels export svm)."
        )

    # Interior-point defaults leave KKT violations ~1e-4 in m; these reach ~1e-8 (measured).
    SOLVER_OPTIONS: ClassVar[dict[str, dict[str, float]]] = {
        "clarabel": {
            "tol_gap_abs": 1e-10,
            "tol_gap_rel": 1e-10,
            "tol_feas": 1e-10,
            "tol_ktratio": 1e-8,
        },
        "ecos": {"abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10},
    }

    def solve_full(
        self,
        solver: str = "clarabel",
        *,
        tol: float = CERTIFICATE_TOL,
        factor_tol: float = 1e-10,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Monolithic conic solve, accepted as optimal only if the relative gap
        (f(alpha) - lower_bound(alpha)) / natural_scale() <= ``tol`` (else NUMERICAL_ERROR)."""
        backend = get_backend(solver, "exp")
        t0 = time.perf_counter()
        problem, alpha_var = self.cvxpy_problem(factor_tol)
        build = time.perf_counter() - t0
        opts = {**self.SOLVER_OPTIONS.get(backend.NAME, {}), **(options or {})}
        term, raw, elapsed, iters = backend.solve_cvxpy(
            problem, time_limit=time_limit, max_iter=max_iter, verbose=verbose, options=opts
        )
        res = SolveResult(
            termination=term,
            solution_status=SolutionStatus.NO_SOLUTION,
            iterations=iters,
            build_time=build,
            solve_time=elapsed,
            solver=backend.NAME,
            solver_version=backend.version(),
            raw_status=raw,
        )
        if alpha_var.value is None:
            return res
        alpha = self.feasible_alpha(np.asarray(alpha_var.value, dtype=float))
        res.x, res.objective = alpha, self.objective(alpha)
        res.bound, b = self.lower_bound(alpha)
        res.extra.update(
            b=b,
            intercept=b,
            max_violation=self.kkt(alpha)[0],
            **self.sparsity(alpha),
            train_accuracy=self.train_accuracy(alpha, b),
        )
        res.solution_status = SolutionStatus.FEASIBLE
        return self.certify(res, tol=tol, failure=TerminationCondition.NUMERICAL_ERROR)

    def feasible_alpha(self, alpha: np.ndarray) -> np.ndarray:
        """alpha clipped to [l_i, u_i], then y'alpha = 0 restored by moving the heavier class
        towards its lower bounds proportionally, so that f(alpha) is a feasible value."""
        a = np.clip(alpha, self.lower, self.upper)
        excess = float(self.y @ a)
        side = self.y > 0 if excess > 0 else self.y < 0
        room = a[side] - self.lower[side]
        if excess != 0.0 and room.sum() > 0.0:
            a[side] -= room * min(1.0, abs(excess) / room.sum())
        return a

    def sparsity(self, alpha: np.ndarray, rel: float = 1e-3) -> dict[str, float]:
        """Rows whose alpha_i exceeds lower + rel * C_i: the points the model keeps."""
        active = alpha > self.lower + rel * self.Ci
        return {"n_active": int(active.sum()), "active_share": float(active.mean())}

    def train_accuracy(self, alpha: np.ndarray, b: float) -> float:
        """Share of training rows with sign(f(x_i)) = y_i (f by a blocked K v)."""
        return self.accuracy_of(self.kernel_matvec(alpha * self.y) + b)

    def accuracy_of(self, f: np.ndarray) -> float:
        """Share of training rows on the right side of the decision values ``f``."""
        return float(np.mean(np.where(f >= 0, 1.0, -1.0) == self.y))

    def decision_function(self, alpha: np.ndarray, b: float, X_new: Any) -> np.ndarray:
        """f(x) = sum_i alpha_i y_i k(x_i, x) + b (in blocks of bounded memory; a linear
        kernel as x'w with w = sum_i alpha_i y_i x_i)."""
        Xn = check_array(X_new, "X_new", accept_sparse=True)
        if self.kernel == "precomputed":
            check_n_features(Xn, self.n, "KLR (precomputed kernel: one column per training row)")
        else:
            check_n_features(Xn, self.p, "KLR")
        solution = KernelSolution.from_dual(self._X, alpha, self.y, b, self.kernel_)
        return solution.decision_function(Xn)

    def predict_proba(self, alpha: np.ndarray, b: float, X_new: Any) -> np.ndarray:
        """P(y = classes_[1] | x) = sigma(f(x))."""
        return expit(self.decision_function(alpha, b, X_new))
