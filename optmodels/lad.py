"""Least absolute deviation (LAD) and quantile regression, sample-weighted: an LP.

    min_{beta, beta0}  E = sum_i s_i rho(y_i - x_i' beta - beta0)      (docs/problems/lad.md)
    rho(u) = 2 tau u^+ + 2 (1 - tau) u^-     (tau = ``quantile`` in (0, 1), default 0.5)

rho is *twice* the check (pinball) loss tau u^+ + (1 - tau) u^-, so that at tau = 0.5 the
objective is exactly LAD's sum_i s_i |u_i|; for any tau the minimisers are those of the check
loss (statsmodels' QuantReg, scikit-learn's QuantileRegressor with alpha = 0), and E is twice
their objective (scikit-learn's also divides by sum_i s_i).

Primal LP (the declared model; readable as Pyomo):
    min  sum_i s_i (2 tau e+_i + 2 (1 - tau) e-_i)
    s.t. residual[i]:  x_i' beta + beta0 + e+_i - e-_i = y_i,   e+, e- >= 0,  beta, beta0 free.
Dual LP (what the full solve uses: p equality rows and n boxed columns, ~8x faster in HiGHS):
    max  y'u   s.t.  X'u = 0 (and 1'u = 0 with an intercept),
                     -2 (1 - tau) s_i <= u_i <= 2 tau s_i       (-s_i <= u_i <= s_i for LAD).
At the optimum beta = -(row multipliers of X'u = 0) in :mod:`solvers.qp`'s convention, and
E(beta) = y'u is the certificate: the gap E(beta) - y'u is reported as ``gap``.

Symbols: s_i = ``sample_weight`` (the AID paper's w_i), beta0 = ``intercept``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from optmodels.problem import Problem
from optmodels.validation import Param
from solvers.errors import DataError
from solvers.qp import QPData
from solvers.result import CERTIFICATE_TOL, SolutionStatus, SolveResult, TerminationCondition
from solvers.rows import any_dask, is_dask
from solvers.solution import LinearSolution
from solvers.sparse import is_scipy_sparse
from solvers.validation import (
    check_array,
    check_coef_constraints,
    check_sample_weight,
    check_target,
)

FORMS = ("primal", "dual")


class LAD(Problem):
    """Sample-weighted least absolute deviation regression (see the module docstring).

    Parameters
    ----------
    X : (n, p) array. p may be 0 with ``fit_intercept`` (the weighted median).
    y : (n,) array.
    sample_weight : (n,) non-negative weights s_i (default ones); zero weight = row removed.
    fit_intercept : add the free intercept beta0.
    quantile : tau in (0, 1), the quantile fitted (0.5: LAD, the median); see the module
        docstring for the objective, twice the check loss.
    feature_names : p strings naming the columns of X (the exported ``beta`` columns are
        ``beta_<name>``); default None (``beta_0 .. beta_{p-1}``). Not a parameter.

    A row-chunked Dask X (or y, sample_weight) stays lazy: it is checked chunk by chunk (the
    messages of the in-memory checks, naming the row chunk) and ``solve("aid")`` runs on the
    active Dask scheduler; ``objective`` and ``natural_scale`` are chunk-wise passes. The full
    solve, ``qp()``, ``pyomo_model()`` and ``write()`` need X in memory and refuse it.

    A scipy.sparse X stays sparse (CSR): the primal and dual LPs are built from its sparse
    structure (the dual's D' shares the arrays of the CSR [X, 1]). ``solve("aid")`` needs X
    dense: it is densified when n x p float64 fits the memory budget of optmodels.guards and
    refused otherwise (the full solve takes sparse X).
    """

    NAME: ClassVar[str] = "lad"
    DASK_STRATEGIES: ClassVar[tuple[str, ...]] = ("aid",)
    COEF_BLOCKS: ClassVar[tuple[str, ...]] = ("beta", "intercept")
    PARAMS: ClassVar[dict[str, Param]] = {
        "fit_intercept": Param("bool", True, "add a free intercept beta0"),
        "quantile": Param(
            "float",
            0.5,
            "tau, the quantile fitted (0.5: LAD); E = sum s (2tau u+ + 2(1-tau) u-)",
            low=0.0,
            high=1.0,
            closed="neither",
        ),
    }

    def __init__(
        self, X: Any, y: Any, *, sample_weight: Any = None, feature_names: Any = None,
        constraints: Any = None, bounds: Any = None, **params: Any,
    ) -> None:
        self._set_params(params)
        self.coef_constraints = None
        if any_dask(X, y, sample_weight):
            if constraints is not None or bounds is not None:
                raise DataError("constraints= and bounds= need X in memory (the constrained "
                                "full solve); pass X.compute(), y.compute().")
            self._set_dask_data(X, y, sample_weight)
        else:
            self._X = check_array(X, "X", min_features=0 if self.params["fit_intercept"] else 1,
                                   accept_sparse=True, keep_sparse=True)
            self.y = check_target(y, self.n)
            self.sample_weight = check_sample_weight(sample_weight, self.n)
            self._natural = None
            self.coef_constraints = check_coef_constraints(constraints, bounds, self.p,
                                                           self.fit_intercept, "LAD")
        self.feature_names = feature_names

    def _set_dask_data(self, X: Any, y: Any, sample_weight: Any) -> None:
        """X, y, s as float64 Dask arrays chunked alike (lazy), checked chunk by chunk in one
        pass by ``solvers.dask_rows.DaskLadRows.checked`` (kept for the natural scale)."""
        import dask.array as da

        from solvers.dask_rows import DaskLadRows, aligned_vector, as_dask_matrix

        X = as_dask_matrix(X if is_dask(X) else da.from_array(np.asarray(X)), "X",
                           min_features=0 if self.fit_intercept else 1)
        y = aligned_vector(y, X.chunks[0], "y", "X")
        s = (None if sample_weight is None
             else aligned_vector(sample_weight, X.chunks[0], "sample_weight", "X"))
        self._rows = DaskLadRows.checked(X, y, s, self.fit_intercept)  # rows of weight > 0
        self._natural: float | None = None
        self._X, self.y = X, y
        self.sample_weight = self._rows.s if s is None else s

    @property
    def design(self) -> Any:
        """[X, 1] with an intercept, else X (CSR when X is sparse)."""
        self.require_in_memory("The LP's design matrix [X, 1]")
        if is_scipy_sparse(self._X):
            import scipy.sparse as sp

            if self.fit_intercept:
                return sp.hstack([self._X, np.ones((self.n, 1))], format="csr")
            return self._X
        if self.fit_intercept:
            return np.hstack([self._X, np.ones((self.n, 1))])
        return self._X

    def typed_solution(self, res: SolveResult) -> LinearSolution:
        """``f(x) = x'beta + beta0`` (beta0 = 0 without an intercept)."""
        return LinearSolution(np.asarray(res.x, dtype=float),
                              float(res.extra.get("intercept", 0.0) or 0.0))

    def objective(self, coef: np.ndarray, intercept: float = 0.0) -> float:
        """E(beta) = sum_i s_i rho(y_i - x_i'beta - beta0) (sum_i s_i |.| at tau = 0.5); one
        chunk-wise pass on Dask data."""
        from solvers.aid.lad import check_loss  # AID (and HiGHS) load when a LAD is evaluated

        if self.lazy and self.p == 0:
            return check_loss(self.y - intercept, self.sample_weight, self.quantile)
        return check_loss(self.y - self._X @ coef - intercept, self.sample_weight, self.quantile)

    def dual_bound(self, u: np.ndarray) -> float:
        """A lower bound on min E from any u (weak duality of the dual LP in the module
        docstring), independent of the solver that gave u: u is projected onto D'u = 0 (D the
        design, by least squares through the (p+1) x (p+1) normal equations, one refinement
        step) and then shrunk toward 0 into the box -2 (1 - tau) s <= u <= 2 tau s (0 lies in
        the box and the subspace is a cone, so the result stays in both); y'u of it. A u that
        was optimal loses only round-off."""
        self.require_in_memory("dual_bound (a projection over every row)")
        rows = self.sample_weight > 0  # a row of weight 0 has the box [0, 0]: u_i = 0
        every = bool(rows.all())
        X = self._X if every else self._X[rows]
        u = np.asarray(u, dtype=float)[rows]
        G = self._design_gram(X, every)
        for _ in range(2):  # u -= D (G^+ D'u), D = [X, 1] applied without forming it
            r = np.asarray(X.T @ u).ravel()
            if self.fit_intercept:
                r = np.r_[r, u.sum()]
            if not np.any(r):
                break
            z = np.linalg.lstsq(G, r, rcond=None)[0]
            u = u - np.asarray(X @ z[: self.p]).ravel() - (z[-1] if self.fit_intercept else 0.0)
        hi = 2.0 * self.quantile * self.sample_weight[rows]
        lo = -2.0 * (1.0 - self.quantile) * self.sample_weight[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            over = np.where(u > 0, u / hi, np.where(u < 0, u / lo, 0.0))
        worst = float(np.max(over, initial=0.0))
        if worst > 1.0:
            u = u / worst
        return float(self.y[rows] @ u)

    def _design_gram(self, X: Any, every: bool) -> np.ndarray:
        """D'D for D = [X, 1] (or X) on the rows of positive weight; kept once computed on all
        rows (the data are fixed at construction), so a second certificate costs O(n p)."""
        cached = getattr(self, "_gram_all", None)
        if every and cached is not None:
            return cached
        XtX = X.T @ X
        G = XtX.toarray() if is_scipy_sparse(XtX) else np.asarray(XtX)
        if self.fit_intercept:
            s = np.asarray(X.sum(axis=0)).ravel()
            G = np.block([[G, s[:, None]], [s[None, :], np.array([[float(X.shape[0])]])]])
        if every:
            self._gram_all = G
        return G

    def _data_kwargs(self) -> dict[str, Any]:
        return {"X": self._X, "y": self.y, "sample_weight": self.sample_weight,
                "feature_names": self.feature_names}

    def natural_scale(self) -> float:
        """E of the best constant fit: sum_i s_i rho(y_i - m) with m the weighted tau-quantile
        of y (with an intercept), or E(0) = sum_i s_i rho(y_i) (without); 1 when that is 0 (y
        fitted exactly by a constant, where every gap is measured in absolute terms). On Dask
        data: the same number by chunk-wise passes (an exact selection of m), computed once."""
        scale = self.best_constant_loss()
        return scale if scale > 0 else 1.0

    def best_constant_loss(self) -> float:
        """E of the best constant fit (0 when a constant fits y exactly), computed once: the
        parameters and data are fixed at construction. AID takes it from here rather than
        computing it again (a selection and a pass over y: 0.2-0.3 s at n = 10^7)."""
        if self._natural is None:
            if self.lazy:
                self._natural = self._rows.natural_scale(self.fit_intercept, self.quantile)
            else:
                from solvers.aid.lad import lad_natural_scale

                self._natural = lad_natural_scale(self.y, self.sample_weight,
                                                  self.fit_intercept, self.quantile)
        return self._natural

    def _costs(self) -> tuple[np.ndarray, np.ndarray]:
        """(2 tau s, 2 (1 - tau) s): the costs of e+ and e-, the dual's upper and -lower bound
        (exactly s and s at tau = 0.5)."""
        s, tau = self.sample_weight, self.quantile
        return s * (2.0 * tau), s * (2.0 * (1.0 - tau))

    def qp(self, form: str = "primal") -> QPData:
        """The LP in matrix form: ``"primal"`` (declared) or ``"dual"`` (solved)."""
        self.require_in_memory("qp() (the declared LP, behind pyomo_model() and write())")
        if form not in FORMS:
            raise ValueError(f"Unknown LAD form {form!r}; choose one of {', '.join(FORMS)}.")
        return self._primal() if form == "primal" else self._dual()

    def _primal(self) -> QPData:
        import scipy.sparse as sp

        n, D = self.n, self.design
        k = D.shape[1]
        c_plus, c_minus = self._costs()
        eye = sp.identity(n, format="csr")
        A = sp.hstack([sp.csr_matrix(D), eye, -eye], format="csr")
        inf = np.full(k, np.inf)
        blocks = [("beta", self.p)] + ([("intercept", 1)] if self.fit_intercept else [])
        row_lo, row_hi, row_blocks = self.y, self.y, [("residual", n)]
        theta_lo, theta_hi = -inf, inf
        cc = self.coef_constraints
        if cc is not None:  # lo <= G theta <= hi as rows, lb <= theta <= ub as column bounds
            if cc.m:
                G = sp.hstack([sp.csr_matrix(cc.G), sp.csr_matrix((cc.m, 2 * n))], format="csr")
                A = sp.vstack([A, G], format="csr")
                row_lo, row_hi = np.r_[self.y, cc.lo], np.r_[self.y, cc.hi]
                row_blocks = [*row_blocks, ("coef_constraint", cc.m)]
            theta_lo, theta_hi = cc.lb, cc.ub
        return QPData(
            c=np.concatenate([np.zeros(k), c_plus, c_minus]),
            A=A,
            row_lo=row_lo,
            row_hi=row_hi,
            col_lo=np.concatenate([theta_lo, np.zeros(2 * n)]),
            col_hi=np.concatenate([theta_hi, np.full(2 * n, np.inf)]),
            col_blocks=blocks + [("e_plus", n), ("e_minus", n)],
            row_blocks=row_blocks,
            name="lad_primal",
            col_labels=self._labels("beta"),
        )

    def _dual(self) -> QPData:
        import scipy.sparse as sp

        D = self.design
        k = D.shape[1]
        c_plus, c_minus = self._costs()
        if sp.issparse(D):  # D' of a CSR D is a CSC matrix on the same three arrays
            A = sp.csc_matrix((D.data, D.indices, D.indptr), shape=(k, self.n))
        else:  # A = D' built column-wise: its CSC arrays are D's row-major entries.
            A = sp.csc_matrix(
                (
                    D.ravel(),
                    np.tile(np.arange(k, dtype=np.int32), self.n),
                    np.arange(0, self.n * k + 1, k),
                ),
                shape=(k, self.n),
            )
        return QPData(
            c=-self.y,
            A=A,
            row_lo=np.zeros(k),
            row_hi=np.zeros(k),
            col_lo=-c_minus,
            col_hi=c_plus,
            col_blocks=[("u", self.n)],
            row_blocks=[("stationarity", k)],
            name="lad_dual",
        )

    def solve_full(
        self,
        solver: str = "highs",
        *,
        form: str = "dual",
        tol: float = CERTIFICATE_TOL,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Verified monolithic solve; ``form="dual"`` (default) is the fast one.

        Optimal only when (E(beta) - bound) / natural_scale() <= ``tol``, with the bound y'u of
        a verified dual-feasible u (dual form) or the LP dual of the primal form. The beta of the
        dual form are the solver's row multipliers; where they fail the check (HiGHS returns
        unusable ones when presolve fixes u, e.g. an interpolating fit with p >= n), the primal
        LP is solved instead and ``extra['attempts']`` says so."""
        self.require_in_memory("The full solve")
        kwargs = dict(
            tol=tol, time_limit=time_limit, max_iter=max_iter, verbose=verbose, options=options
        )
        if self.coef_constraints is not None:
            return self._solve_constrained(solver, **kwargs)
        res = self._solve_form(form, solver, **kwargs)
        if form == "dual" and res.termination is TerminationCondition.NUMERICAL_ERROR:
            first = res
            res = self._solve_form("primal", solver, **kwargs)
            res.extra["attempts"] = [
                *first.extra.get("attempts", []),
                "dual form: " + first.raw_status,
                *res.extra.get("attempts", []),
            ]
        return res

    def _solve_constrained(self, solver: str, **kwargs: Any) -> SolveResult:
        """The constrained model by its primal LP (the constraints are declared on beta,
        beta0), solved on y and X divided by a power of two t near the targets' spread: the
        model is then exactly the original with E divided by t, beta the same and beta0
        divided by t (the intercept's column of G multiplied by t, its bounds divided by t), so
        the solver works on numbers near 1 whatever the data's scale (HiGHS's absolute
        tolerances wrecked a model whose data were multiplied by 1e-10), and the result maps
        back exactly: E and the verified bound times t, beta0 times t."""
        from solvers.scaling import nearest_pow2

        spread = self.best_constant_loss() / float(np.sum(self.sample_weight))
        t = nearest_pow2(spread)
        if t == 1.0:
            return self._solve_form("primal", solver, **kwargs)
        # theta = d * theta': beta unchanged, beta0 = t beta0'
        d = np.r_[np.ones(self.p), t] if self.fit_intercept else np.ones(self.p)
        rows, bounds = self.coef_constraints.substituted(d).to_scipy()
        scaled = LAD(self._X / t, self.y / t, sample_weight=self.sample_weight,
                     constraints=rows, bounds=bounds, **self.params)
        res = scaled._solve_form("primal", solver, **kwargs)
        if res.x is not None:
            intercept = float(res.extra["intercept"]) * t
            res.extra["intercept"] = intercept
            res.objective = self.objective(res.x, intercept)
            res.bound = None if res.bound is None else float(res.bound) * t
            res.extra["data_scale"] = t
            return self.certify(res, tol=kwargs["tol"],
                                failure=TerminationCondition.NUMERICAL_ERROR)
        return res

    def _solve_form(
        self,
        form: str,
        solver: str,
        *,
        tol: float,
        time_limit: float | None,
        max_iter: int | None,
        verbose: bool,
        options: dict[str, Any] | None,
    ) -> SolveResult:
        if form == "dual" and solver == "highs":
            # Presolve removes nothing from the dual LP (p equality rows, n boxed columns) and
            # costs about a third of the solve: measured 5.7-6.0 s vs 8.8-9.9 s at n = 3*10^5.
            options = {"presolve": "off", **(options or {})}
        qp, res = self._solve_declared(
            (form,),
            solver,
            time_limit=time_limit,
            max_iter=max_iter,
            verbose=verbose,
            options=options,
        )
        if res.x is None:
            return res
        if form == "dual":
            duals = res.extra.get("duals")
            if duals is None:
                res.termination = TerminationCondition.NUMERICAL_ERROR
                res.solution_status = SolutionStatus.NO_SOLUTION
                res.x = None
                return res
            theta, u = -duals, res.x
            feasible = res.solution_status.rank() >= SolutionStatus.FEASIBLE.rank()
            bound = float(self.y @ u) if feasible else None
        else:
            theta, u, bound = res.x[: self.design.shape[1]], None, res.bound
        coef, intercept = self._split(theta)
        res.x, res.objective, res.bound = coef, self.objective(coef, intercept), bound
        res.extra.update(intercept=intercept, form=form, dual_u=u)
        return self.certify(res, tol=tol, failure=TerminationCondition.NUMERICAL_ERROR)

    def _split(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        if self.fit_intercept:
            return theta[:-1].copy(), float(theta[-1])
        return theta.copy(), 0.0
