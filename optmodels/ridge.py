"""Ridge regression: a QP with a closed form (docs/problems/ridge.md).

    min_x f(x) = 1/2 sum_i s_i (a_i'x + x0 - b_i)^2 + alpha/2 ||x||^2
    H = A'SA + alpha I,  x* = H^{-1} A'S b,   grad f(x) = A'S(A x - b) + alpha x = H (x - x*).

``alpha`` is scikit-learn's name for the FD paper's gamma. With ``fit_intercept`` the data are
centred (weighted) first and x0 = bbar - abar'x (the intercept is not penalised).
Declared QP (residual form, so no d x d matrix is formed in the model):
    min 1/2 r'r + alpha/2 x'x   s.t.  fit[i]: sqrt(s_i) (a_i'x - b_i) - r_i = 0.
The exact reference is the Cholesky solve of H (or of the n x n kernel form when n < d).
Certificate: H >= alpha I makes f strongly convex, so f(x) - f* <= ||grad f(x)||^2 / (2 alpha)
and ``bound = f(x) - ||grad f(x)||^2 / (2 alpha)`` is a proven lower bound; the gap is measured
against the natural scale f(0) = 1/2 ||S^(1/2) b||^2. The relative gradient
||grad f|| / (||A'S A x|| + alpha ||x|| + ||A'S b||) (the magnitudes of its terms) is reported
beside it.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from optmodels.problem import USER_LIMITS, Problem, closer
from optmodels.validation import Param
from solvers.errors import DataError
from solvers.qp import QPData
from solvers.result import (
    CERTIFICATE_TOL,
    SolutionCertificate,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    stable_norm,
    strong_convexity_distance,
)
from solvers.rows import any_dask, is_dask
from solvers.sketch import RIDGE_METHODS
from solvers.solution import LinearSolution
from solvers.sparse import CentredSparse, is_scipy_sparse
from solvers.validation import (
    check_array,
    check_coef_constraints,
    check_sample_weight,
    check_target,
)


class Ridge(Problem):
    """Sample-weighted ridge regression (see the module docstring).

    Parameters
    ----------
    A : (n, d) data (the paper's A; X elsewhere).  b : (n,) targets.
    alpha : the paper's gamma > 0.  sample_weight : s_i >= 0.  fit_intercept : centre first.
    feature_names : d strings naming the columns of A (the exported ``x`` columns are
        ``x_<name>``); default None (``x_0 .. x_{d-1}``). Not a parameter.

    A row-chunked Dask A (or b, sample_weight) stays lazy: it is checked chunk by chunk (the
    in-memory messages, naming the row chunk), the weighted means of the centring are one pass
    (two small vectors in memory) and ``Aw = (A - abar) sqrt(s)``, ``bw`` are lazy Dask
    expressions, so every sketch strategy (``solve("pcg-rfd")``, ...) runs on the active Dask
    scheduler. ``objective``, ``gradient``, ``lower_bound`` and ``relative_gradient`` share one
    chunk-wise pass per x; ``closed_form`` sums A'A over the chunks (d x d, needs d <= n). The
    full solve, ``qp()``, ``pyomo_model()`` and ``write()`` need A in memory and refuse it.

    A scipy.sparse A stays sparse (``self.A`` is CSR): ``Aw`` is then a
    :class:`solvers.sparse.CentredSparse`, which applies the centring and the weights inside
    its products, so ``fit_intercept=True`` does not fill A in. The Cholesky reference forms
    A'A (d x d) or, when n < d, AA' (n x n) from the sparse products; the sketch strategies
    stream dense blocks of rows. Only ``qp()`` with ``fit_intercept`` holds the centred A as a
    filled-in sparse block (the centring has no sparse form there).
    """

    NAME: ClassVar[str] = "ridge"
    COEF_BLOCKS: ClassVar[tuple[str, ...]] = ("x",)
    PRIMAL_FORM: ClassVar[str] = "residual"
    PARAMS: ClassVar[dict[str, Param]] = {
        "alpha": Param("float", 1.0, "ridge penalty (the FD paper's gamma)", low=0.0),
        "fit_intercept": Param("bool", False, "fit an unpenalised intercept by centring"),
    }
    DASK_STRATEGIES: ClassVar[tuple[str, ...]] = ("pcg-rfd", *(
        m for m in RIDGE_METHODS if m not in ("cholesky", "pcg-rfd")))

    def __init__(
        self, A: Any, b: Any, *, sample_weight: Any = None, feature_names: Any = None,
        constraints: Any = None, bounds: Any = None, **params: Any,
    ) -> None:
        self._set_params(params)
        self.coef_constraints = None
        if any_dask(A, b, sample_weight):
            if constraints is not None or bounds is not None:
                raise DataError("constraints= and bounds= need A in memory (the constrained "
                                "full solve); pass A.compute(), b.compute().")
            self._set_dask_data(A, b, sample_weight)
            self.feature_names = feature_names
            return
        self._X = check_array(A, "A", accept_sparse=True, keep_sparse=True)
        self.feature_names = feature_names
        self.b = check_target(b, self.n, "b")
        self.sample_weight = check_sample_weight(sample_weight, self.n)
        sw = np.sqrt(self.sample_weight)
        if self.fit_intercept:
            total = self.sample_weight.sum()
            self.a_mean = np.asarray(self._X.T @ self.sample_weight) / total
            self.b_mean = float(self.sample_weight @ self.b / total)
        else:
            self.a_mean, self.b_mean = np.zeros(self.p), 0.0
        # The working (centred, weighted) data: f(x) = 1/2||Aw x - bw||^2 + alpha/2||x||^2.
        # A sparse A stays sparse: Aw is then the CentredSparse operator (centring implicit).
        if is_scipy_sparse(self._X):
            self.Aw = CentredSparse(self._X, self.a_mean, sw)
        else:
            self.Aw = _centred_weighted(self._X, self.a_mean, sw, self.fit_intercept)
        self.bw = (self.b - self.b_mean) * sw
        self._terms_cache: dict = {}
        self.coef_constraints = check_coef_constraints(constraints, bounds, self.p,
                                                       self.fit_intercept, "Ridge")
        self._check_no_intercept_constraint()

    def _check_no_intercept_constraint(self) -> None:
        """Ridge eliminates its intercept by centring (beta0 = bbar - abar'x is optimal for
        every x), which holds only while the intercept is free: refuse constraints on it."""
        cc = self.coef_constraints
        if cc is None or not self.fit_intercept:
            return
        p = self.p
        if np.any(cc.G[:, p] != 0) or np.isfinite(cc.lb[p]) or np.isfinite(cc.ub[p]):
            raise DataError(
                "Ridge's constraints= and bounds= may act on the coefficients x only: the "
                "intercept is eliminated by centring, which holds only while it is free. Give "
                "A with p columns and bounds with p entries, or use fit_intercept=False with a "
                "column of ones in A to constrain an intercept.")

    def _set_dask_data(self, A: Any, b: Any, sample_weight: Any) -> None:
        """A, b, s as Dask arrays checked chunk by chunk; a_mean, b_mean in one pass; Aw, bw
        lazy (the multiplications by sqrt(s) and the centring are left out when trivial)."""
        import dask
        import dask.array as da

        from solvers.dask_rows import DaskRows

        rows = DaskRows.checked(A if is_dask(A) else da.from_array(np.asarray(A)), "A", "Ridge")
        self._X, self._terms_cache = rows.A, {}
        self.b = rows.checked_vector(b, "b", against="A")
        s = None
        if sample_weight is not None:
            s = rows.checked_vector(sample_weight, "sample_weight", against="A")
            # [min s, max s] fails check_sample_weight exactly when s does (same messages).
            check_sample_weight(np.array(dask.compute(s.min(), s.max())), 2)
        self.sample_weight = da.ones_like(self.b) if s is None else s
        X, bb = self._X, self.b
        if self.fit_intercept:
            sw_x, sw_b, total = (dask.compute(X.sum(axis=0), bb.sum(), self.n) if s is None
                                 else dask.compute(s @ X, s @ bb, s.sum()))
            self.a_mean, self.b_mean = np.asarray(sw_x) / total, float(sw_b / total)
            X, bb = X - self.a_mean, bb - self.b_mean
        else:
            self.a_mean, self.b_mean = np.zeros(self.p), 0.0
        if s is not None:
            sw = da.sqrt(s)
            X, bb = X * sw[:, None], bb * sw
        self.Aw, self.bw = X, bb

    def _terms(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Aw'Aw x, Aw'bw, ||Aw x - bw||^2)``: one pass over the data per x, shared by the
        objective, gradient, bound and relative gradient (the last x and Aw'bw are kept; on
        Dask data the pass is one chunk-wise compute)."""
        cache = self._terms_cache
        if cache.get("x") != x.tobytes():
            Ax = self.Aw @ x
            r = Ax - self.bw
            if self.lazy:
                import dask

                ata_x, rr = dask.compute(self.Aw.T @ Ax, r @ r)
            else:
                ata_x, rr = self.Aw.T @ Ax, r @ r
            cache.update(x=x.tobytes(), ata_x=np.asarray(ata_x), rr=float(rr))
        return cache["ata_x"], self._atb(), cache["rr"]

    def _atb(self) -> np.ndarray:
        """``Aw'bw`` (one pass, kept)."""
        if "atb" not in self._terms_cache:
            atb = self.Aw.T @ self.bw
            self._terms_cache["atb"] = np.asarray(atb.compute() if self.lazy else atb)
        return self._terms_cache["atb"]

    @property
    def A(self) -> np.ndarray:
        return self._X

    def objective(self, x: np.ndarray) -> float:
        return float(0.5 * self._terms(x)[2] + 0.5 * self.alpha * x @ x)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        ata_x, atb, _ = self._terms(x)
        return ata_x - atb + self.alpha * x

    def relative_gradient(self, x: np.ndarray) -> float:
        """||grad f(x)|| over the sum of the norms of its terms A'SAx, alpha x and A'S b."""
        ata_x, atb, _ = self._terms(x)
        grad = ata_x - atb + self.alpha * x
        scale = stable_norm(ata_x) + self.alpha * stable_norm(x) + stable_norm(atb)
        return stable_norm(grad) / scale if scale > 0 else 0.0

    def _data_kwargs(self) -> dict[str, Any]:
        return {"A": self._X, "b": self.b, "sample_weight": self.sample_weight,
                "feature_names": self.feature_names}

    def natural_scale(self) -> float:
        """f(0) = 1/2 ||S^(1/2) b||^2 (1 when b is fitted exactly by 0); computed once on Dask
        data."""
        if self.lazy:
            if "natural" not in self._terms_cache:
                self._terms_cache["natural"] = 0.5 * float((self.bw @ self.bw).compute())
            scale = self._terms_cache["natural"]
            return scale if scale > 0 else 1.0
        scale = 0.5 * float(self.bw @ self.bw)
        return scale if scale > 0 else 1.0

    def solution_certificate(self, res: SolveResult) -> SolutionCertificate:
        """f is alpha-strongly convex (H >= alpha I), so with the absolute gap G = f(x) - bound
        ``||x - x*|| <= d = sqrt(2 G / alpha)`` (= ||grad f(x)|| / alpha for the gradient
        bound). A prediction at a row a moves by ``|(a - abar)'(x - x*)| <= d ||a - abar||``
        (the intercept bbar - abar'x follows x), so over rows no farther from the weighted mean
        than the training rows the predictions are within ``d max_i ||a_i - abar||``; their
        unit is the targets' weighted root mean square about the intercept,
        ``sqrt(2 f(0) / sum_i s_i)``. (The training rows alone would allow a far tighter
        bound, ``sqrt(2 G / s_i)`` from H >= s_i c_i c_i', which says nothing of x's component
        off their span: at p > n that is what a new row's prediction sees.)"""
        g = None if self.coef_constraints is not None else res.extra.get("gradient_norm")
        # the same number when the bound is f - ||g||^2 / (2 alpha); from ||g|| directly it
        # survives where f - bound rounds to 0
        distance = (float(g) / self.alpha if g is not None and np.isfinite(g) else
                    strong_convexity_distance(res.objective - float(res.bound), self.alpha))
        reach = None if self.lazy else self._max_centred_row_norm()
        decisions = None if reach is None else distance * reach
        unit = None if reach is None else float(
            np.sqrt(2.0 * self.natural_scale() / float(np.sum(self.sample_weight))))
        return SolutionCertificate(distance, decisions,
                                   stable_norm(np.asarray(res.x, dtype=float)), unit)

    def _max_centred_row_norm(self) -> float:
        """max_i ||a_i - abar|| over the rows of positive weight (computed once)."""
        if "reach" not in self._terms_cache:
            X, m = self._X, self.a_mean
            if is_scipy_sparse(X):  # ||a - m||^2 = ||a||^2 - 2 a'm + ||m||^2, no densifying
                sq = (np.asarray(X.multiply(X).sum(axis=1)).ravel()
                      - 2.0 * np.asarray(X @ m).ravel() + float(m @ m))
            else:
                sq = np.einsum("ij,ij->i", X - m, X - m)
            sq = sq[self.sample_weight > 0]
            self._terms_cache["reach"] = float(np.sqrt(max(np.max(sq, initial=0.0), 0.0)))
        return self._terms_cache["reach"]

    def _solve_constrained(self, solver: str, **kwargs: Any) -> SolveResult:
        """The constrained QP on A / a and b / t (powers of two near the data's root mean
        squares): the same model with x' = x a / t, alpha' = alpha / a^2, f' = f / t^2 and the
        constraints' sides times a / t, so the backend works on numbers near 1 whatever the
        data's scale (Clarabel called the model infeasible at scales 1e-10 and 1e10); the
        result maps back exactly and is certified again on the original model."""
        from solvers.scaling import entries_rms_pow2, nearest_pow2

        X = self._X
        a = entries_rms_pow2(X)
        t = nearest_pow2(np.sqrt(2.0 * self.natural_scale() / float(np.sum(self.sample_weight))))
        d = np.full(self.coef_constraints.k, t / a)  # x = (t / a) x' (the intercept: free)
        rows, bounds = self.coef_constraints.substituted(d).to_scipy()
        scaled = Ridge(X / a, self.b / t, sample_weight=self.sample_weight,
                       constraints=rows, bounds=bounds,
                       **{**self.params, "alpha": self.alpha / a ** 2})
        scaled._scaled_copy = True
        res = scaled.solve_full(solver, **kwargs)
        if res.x is None:
            return res
        self._feasible_coefficients(res, res.x * (t / a))
        res.objective = self.objective(res.x)
        res.bound = None if res.bound is None else float(res.bound) * t * t
        res.extra.update(intercept=self.intercept(res.x),
                         relative_gradient=self.relative_gradient(res.x), data_scale=(a, t))
        return self.certify(res, tol=kwargs["tol"], failure=TerminationCondition.NUMERICAL_ERROR)

    def _feasible_coefficients(self, res: SolveResult, x: np.ndarray) -> None:
        """Put x onto the user's constraints (:meth:`CoefConstraints.feasible_point`; the
        intercept, free, is not moved): f(x) bounds the constrained optimum from above only at
        a feasible x, and an interior point's lies within its tolerance of the set. The moved
        x is kept when it violates no more than the returned one (``extra["repaired_violation"]``
        records the returned one's relative violation); ``res.x`` is set."""
        cc = self.coef_constraints
        theta = np.r_[x, self.intercept(x)] if cc.k > self.p else np.asarray(x, dtype=float)
        moved = cc.feasible_point(theta)
        before = cc.max_violation(theta)
        if before > 0 and cc.max_violation(moved) <= before:
            res.extra["repaired_violation"] = before
            theta = moved
        res.x = theta[: self.p].copy()

    def constrained_bound(self, qp: QPData, duals: np.ndarray | None) -> float | None:
        """A proven lower bound on the constrained optimum from the backend's multipliers y
        (``fit`` rows, then the constraint rows mu): the residual-form QP's Lagrangian dual
        function, exact for every y (:func:`solvers.qp.separable_dual_bound`; P is diagonal),

            y_fit'bw - 1/2 ||y_fit||^2 + sum_k mu_k side_k
                + sum_j min_{lb_j <= x_j <= ub_j} (alpha/2 x_j^2 - v_j x_j),
            v = Aw'y_fit + G'mu,

        where the KKT check's dual objective leaves the multipliers' dual residual out.
        None without multipliers."""
        from solvers.qp import separable_dual_bound

        if duals is None:
            return None
        bound = separable_dual_bound(qp, duals)
        return bound if np.isfinite(bound) else None

    def lower_bound(self, x: np.ndarray) -> float:
        """f(x) - ||grad f(x)||^2 / (2 alpha) <= f* (strong convexity with modulus alpha)."""
        return self.bound_from(self.objective(x), stable_norm(self.gradient(x)))

    def bound_from(self, objective: float, grad_norm: float) -> float:
        """``f(x) - ||grad f(x)||^2 / (2 alpha)`` from f(x) and ||grad f(x)||, squared after
        the division (||grad f||^2 alone overflows on data scaled by 1e100)."""
        return objective - (grad_norm / np.sqrt(2.0 * self.alpha)) ** 2

    def typed_solution(self, res: SolveResult) -> LinearSolution:
        """``f(a) = a'x + (bbar - abar'x)``."""
        x = np.asarray(res.x, dtype=float)
        return LinearSolution(x, self.intercept(x))

    def intercept(self, x: np.ndarray) -> float:
        return float(self.b_mean - self.a_mean @ x)

    def closed_form(self) -> np.ndarray:
        """x* by Cholesky of A'A + alpha I (d <= n) or A'(AA' + alpha I)^{-1} b (n < d)."""

        A, b, lam = self.Aw, self.bw, self.alpha
        if self.lazy:
            return self._dask_closed_form()
        sparse = isinstance(A, CentredSparse)
        if self.p <= self.n:
            H = A.gram() if sparse else A.T @ A
            return shifted_spd_solve(H, lam, A.T @ b)
        G = A.outer() if sparse else A @ A.T
        return A.T @ shifted_spd_solve(G, lam, b)

    def _dask_closed_form(self) -> np.ndarray:
        """x* = (Aw'Aw + alpha I)^{-1} Aw'bw with Aw'Aw summed over the chunks (d <= n)."""

        from solvers.dask_rows import DaskRows

        if self.p > self.n:
            self.require_in_memory(f"The closed form with d > n ({self.p} > {self.n})")
        H = DaskRows(self.Aw).gram()
        return shifted_spd_solve(H, self.alpha, self._atb())

    def qp(self, form: str = "residual") -> QPData:
        """The residual-form QP of the module docstring (variables x then r)."""
        self.require_in_memory("qp() (the declared QP, behind pyomo_model() and write())")
        if form != "residual":
            raise ValueError(f"Unknown ridge form {form!r}; the only form is 'residual'.")
        import scipy.sparse as sp

        n, d = self.n, self.p
        Aw = self.Aw.tocsr() if isinstance(self.Aw, CentredSparse) else sp.csr_matrix(self.Aw)
        A = sp.hstack([Aw, -sp.identity(n, format="csr")], format="csr")
        P = sp.diags(np.concatenate([np.full(d, self.alpha), np.ones(n)]), format="csr")
        row_lo, row_hi, row_blocks = self.bw.copy(), self.bw.copy(), [("fit", n)]
        x_lo, x_hi = np.full(d, -np.inf), np.full(d, np.inf)
        cc = self.coef_constraints
        if cc is not None:  # on x only (_check_no_intercept_constraint)
            x_lo, x_hi = cc.lb[:d], cc.ub[:d]
            if cc.m:
                G = sp.csr_matrix(cc.G[:, :d])
                A = sp.vstack([A, sp.hstack([G, sp.csr_matrix((cc.m, n))])], format="csr")
                row_lo, row_hi = np.r_[row_lo, cc.lo], np.r_[row_hi, cc.hi]
                row_blocks = [*row_blocks, ("coef_constraint", cc.m)]
        return QPData(
            c=np.zeros(d + n),
            A=A,
            row_lo=row_lo,
            row_hi=row_hi,
            col_lo=np.r_[x_lo, np.full(n, -np.inf)],
            col_hi=np.r_[x_hi, np.full(n, np.inf)],
            P=P,
            col_blocks=[("x", d), ("r", n)],
            row_blocks=row_blocks,
            name="ridge",
            col_labels=self._labels("x"),
        )

    def solve_full(
        self,
        solver: str = "cholesky",
        *,
        tol: float = CERTIFICATE_TOL,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """``solver="cholesky"`` (the exact reference) or a QP backend (highs, clarabel, ecos),
        accepted as optimal only if (f(x) - lower_bound(x)) / natural_scale() <= ``tol``."""
        self.require_in_memory("The full solve")
        constrained = self.coef_constraints is not None
        if constrained and solver == "cholesky":
            solver = "clarabel"  # the closed form has no constraints: the QP by a backend
        if constrained and not getattr(self, "_scaled_copy", False):
            return self._solve_constrained(solver, tol=tol, time_limit=time_limit,
                                           max_iter=max_iter, verbose=verbose, options=options)
        if solver == "cholesky":
            t0 = time.perf_counter()
            x = self.closed_form()
            res = SolveResult(
                TerminationCondition.OPTIMAL,
                SolutionStatus.OPTIMAL,
                x=x,
                solve_time=time.perf_counter() - t0,
                solver="cholesky",
                solver_version=np.__version__,
                raw_status="closed form",
            )
        elif constrained:
            return self._solve_constrained_qp(solver, tol=tol, time_limit=time_limit,
                                              max_iter=max_iter, verbose=verbose,
                                              options=options)
        else:
            qp, res = self._solve_declared(
                (),
                solver,
                time_limit=time_limit,
                max_iter=max_iter,
                verbose=verbose,
                options=options,
            )
            if res.x is None:
                return res
            res.x = qp.block(res.x, "x").copy()
        return self._certified(res, self.lower_bound(res.x), tol)

    def _certified(self, res: SolveResult, bound: float | None, tol: float) -> SolveResult:
        """res with f(x), the bound and the certificate (:meth:`Problem.certify`)."""
        constrained = self.coef_constraints is not None
        res.objective, res.bound = self.objective(res.x), bound
        if not constrained:  # ||grad f|| / alpha bounds ||x - x*|| (solution_certificate)
            res.extra["gradient_norm"] = stable_norm(self.gradient(res.x))
        grad = self.relative_gradient(res.x)
        res.extra.update(intercept=self.intercept(res.x), relative_gradient=grad)
        return self.certify(res, tol=tol, failure=TerminationCondition.NUMERICAL_ERROR)

    def _solve_constrained_qp(self, solver: str, *, tol: float, time_limit: float | None,
                              **kwargs: Any) -> SolveResult:
        """The constrained QP by ``solver``, once per option set of
        :func:`solvers.clarabel_backend.constrained_option_sets` until one certifies (or
        stops at the user's limit), each answer put onto the constraints
        (:meth:`_feasible_coefficients`) and bounded by :meth:`constrained_bound`; the best
        one comes back (:func:`optmodels.problem.closer`)."""
        from solvers.clarabel_backend import constrained_option_sets

        start, best = time.perf_counter(), None
        for options in constrained_option_sets(solver, kwargs.pop("options")):
            left = None if time_limit is None else time_limit - (time.perf_counter() - start)
            if left is not None and left <= 0 and best is not None:
                break
            qp, res = self._solve_declared((), solver, time_limit=left, options=options,
                                           **kwargs)
            if res.x is not None:
                self._feasible_coefficients(res, qp.block(res.x, "x"))
                res = self._certified(res, self.constrained_bound(qp, res.extra.get("duals")),
                                      tol)
            if best is None or closer(res, best):
                best = res
            if res.is_optimal or res.termination in USER_LIMITS:
                break
        return best


def shifted_spd_solve(M: np.ndarray, shift: float, rhs: np.ndarray) -> np.ndarray:
    """(M + shift I)^{-1} rhs for a symmetric positive semidefinite Gram matrix M (changed in
    place), by Cholesky; when the factorisation fails (a shift near round-off of a singular M:
    centred rows with alpha = 1e-16), by the eigendecomposition M = V diag(w) V' with w clipped
    at 0, i.e. V diag(1 / (w + shift)) V' rhs (the exact solution of the same system, no
    LinAlgError; its certificate then says how accurate it is)."""
    import scipy.linalg as sla

    M[np.diag_indices_from(M)] += shift
    try:
        return sla.cho_solve(sla.cho_factor(M, lower=True), rhs)
    except np.linalg.LinAlgError:
        M[np.diag_indices_from(M)] -= shift
        w, V = np.linalg.eigh(M)
        return V @ ((V.T @ rhs) / (np.maximum(w, 0.0) + shift))


def _centred_weighted(
    X: np.ndarray, mean: np.ndarray, sw: np.ndarray, centre: bool
) -> np.ndarray:
    """(X - mean) * sw row-wise, with no copy when there is nothing to do (no intercept, unit
    weights: the checked X itself) and one allocation otherwise (two temporaries of an
    800 MB X took 6 s, five times the Cholesky solve)."""
    unit = bool(np.all(sw == 1.0))
    if not centre and unit:
        return X
    out = np.subtract(X, mean) if centre else np.array(X, dtype=float, copy=True)
    if not unit:
        out *= sw[:, None]
    return out
