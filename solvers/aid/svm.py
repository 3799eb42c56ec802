"""AID for the weighted soft-margin SVM, linear (primal QP) and kernel (aggregated dual).

Problem (docs/problems/svm.md; paper problems (7) and (5)):

    min_{w, b, xi}  P(w, b) = 1/2 ||w||^2 + C sum_i s_i xi_i
    s.t.            y_i (w' phi(x_i) + b) >= 1 - xi_i,   xi >= 0

Iteration t on label-pure clusters C^t (paper symbols x^t_k, y^t_k, |C^t_k| -> xbar_k, y_k, W_k):

* solve the aggregated problem (:mod:`solvers.aid.svm_qp`); its optimum is a lower bound on the
  full optimum by Jensen: the hinge is convex, so for a label-pure cluster
  sum_{i in C_k} s_i max(0, 1 - y_k f(x_i)) >= W_k max(0, 1 - y_k f(xbar_k)) for every (w, b);
* F^t = the aggregated *dual* value D(alpha) = sum_k alpha_k - 1/2 ||sum_k alpha_k y_k
  phibar_k||^2 at the solver's alpha made feasible (clipped to [0, C W_k], y'alpha = 0
  restored: :func:`solvers.aid.svm_qp.feasible_alpha`). This is a valid lower bound on the
  full optimum whatever the solver's accuracy: the rows alpha_i = alpha_k s_i / W_k (i in C_k)
  are feasible for the full dual (0 <= alpha_i <= C s_i, y'alpha = 0) with the same value, and
  weak duality applies. For columns of X scaled down (magnitude above 2^10) F^t is the larger
  of that and the bound of the relaxation without their regularisation
  (:meth:`_LinearModel._relaxed_bound`). F = max_t F^t. (The equality y'alpha = 0, and those of
  the relaxation, hold to round-off, as for any dual point in floating point.)
* E^t = P at the aggregated (w, b), an upper bound; E_best = min E^t;
* a cluster with rows on both sides of {1 - y_i f(x_i) <= 0} splits by that sign.

When no cluster splits, the hinge is linear on every cluster, Jensen holds with equality and
E^t equals the aggregated primal value, which equals F^t at an exact solution: (w, b) is
optimal in exact arithmetic. The result is CERTIFIED (solution OPTIMAL) only if in addition
``(E_best - F) / scale <= CERTIFICATE_TOL`` with the natural scale ``scale = sum_i C s_i``
(P(0, 0)); a sign-pure run failing that check is a NUMERICAL_ERROR, never certified.

With ``constraints`` (linear constraints and bounds on (w, b), linear kernel, in memory) the
aggregated QP carries the same constraints and its verified dual objective is F^t; why the
bound and the certificate still hold is in :mod:`solvers.aid.svm_constrained`.

Data far from unit scale is equilibrated by powers of two first (:mod:`solvers.aid.scaling`):
the columns of X (linear kernel; the Hessian becomes diag(c_j^2)), and, when the mean box
C s_i is small, the aggregated objective multiplied by sigma >= 1, which brings it near 1 (a
large C is left alone: its box is mostly inactive, the optimal alpha is set by the kernel, and
scaling by the box was measured to stall Clarabel on the kernel dual); all undone exactly.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers import interrupt
from solvers.aid.aggregation import aggregate
from solvers.aid.certificate import pure_verdict
from solvers.aid.clustering import SVM_METHODS, subsample, svm_clusters
from solvers.aid.scaling import pow2_factor, worst_scaled
from solvers.aid.svm_constrained import ConstrainedSvmQP, scaled_svm_constraints
from solvers.aid.svm_qp import (
    SUBSOLVER_NAMES,
    SUBSOLVERS,
    QpOutcome,
    best_intercept,
    feasible_alpha,
    kernel_svm_dual,
    linear_svm_primal,
    project_equalities,
)
from solvers.constraints import CoefConstraints
from solvers.errors import DataError
from solvers.kernels import Kernel
from solvers.progress import Progress, verbose_line
from solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    certify,
    objective_scale,
)
from solvers.rows import SvmRows, any_dask
from solvers.subproblem import USER_STOPS, check_subproblem
from solvers.validation import (
    check_array,
    check_choice,
    check_int,
    check_labels,
    check_n_clusters,
    check_nonnegative,
    check_positive,
    check_sample_weight,
)

DEFAULT_SVM_CLUSTERS = 1000
SVM_SUBSAMPLE = 5000
SPLIT_RULES = ("refine", "sign")


def aid_svm(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | None = None,
    n_clusters: int | float = DEFAULT_SVM_CLUSTERS,
    init: str | np.ndarray = "auto",
    gap_tol: float = 0.0,
    max_iter: int = 100,
    time_limit: float | None = None,
    subsolver: str = "clarabel",
    split: str = "refine",
    zero_tol: float = 1e-9,
    verbose: bool = False,
    seed: int = 0,
    constraints: CoefConstraints | None = None,
) -> SolveResult:
    """Solve the weighted soft-margin SVM exactly by AID.

    Parameters
    ----------
    X : (n, p) array or a row-chunked dask.array.Array
        Features x_i (for ``Kernel("precomputed")``: the n x n kernel matrix). With a Dask X
        (or y, weights; linear SVM only) the cluster sums, the objective and the sign test are
        chunk-wise passes on the active Dask scheduler and only the aggregated QP is solved
        here, with the same iterates and certificate (see :mod:`solvers.dask_svm_rows`);
        ``extra["labels"]`` is then a Dask array over the rows of positive weight.
    y : (n,) array of -1 / +1
        Labels y_i.
    C : float
        Penalty C > 0; row i's box is C s_i.
    sample_weight : (n,) array, optional
        s_i >= 0 (default 1); rows of weight 0 are dropped (label -1 in ``extra["labels"]``).
    kernel : Kernel or None
        None: linear primal (w in R^p).  A :class:`solvers.kernels.Kernel`: the aggregated dual
        of appendix B on the full n x n kernel matrix (n up to a few thousand).
    n_clusters : int or float
        |K^0| (a float in (0, 1] is a fraction of n), split between the classes by weight.
    init : {"auto", "band", "quantile", "kmeans"} or (n,) int array
        Initial clustering (:func:`solvers.aid.clustering.svm_clusters`); "auto" is "band"
        (margin bins of a subsample fit) for the linear SVM and "kmeans" with a kernel.
        Labels you pass must not mix classes.
    gap_tol, max_iter, time_limit :
        Limits: GAP_LIMIT (once (E_best - F) / sum_i C s_i <= gap_tol) / ITERATION_LIMIT /
        TIME_LIMIT, with a FEASIBLE solution.
    subsolver : {"clarabel", "highs"}
        Aggregated linear primal by Clarabel (interior point, default) or HiGHS's QP solver.
        The kernel dual always uses Clarabel.
    split : {"refine", "sign"}
        As in :func:`solvers.aid.lad.aid_lad`: the paper's 2-way sign split, or 4-way.
    zero_tol : float
        Margin values with |1 - y_i f(x_i)| <= zero_tol count as on the margin (either side).
    verbose, seed :
        Progress lines; seed of the subsample / k-means of the initial clustering.
    constraints : solvers.constraints.CoefConstraints, optional
        Linear constraints and bounds on theta = (w, b) (linear kernel, X in memory): the
        aggregated QP keeps them and is solved and verified by :func:`solvers.backend.solve_qp`
        with ``subsolver`` as the backend; F^t is its verified dual objective
        (:mod:`solvers.aid.svm_constrained`). An empty feasible set ends the run at once with
        INFEASIBLE (a Farkas certificate the backend checked).

    Returns
    -------
    SolveResult
        ``x`` = w (linear) or alpha per cluster (kernel), ``objective`` = E_best,
        ``bound`` = F (a proven lower bound), ``gap`` = (E_best - F) / scale with ``scale``
        (also ``result.scale``) = sum_i C s_i; termination CERTIFIED only with sign-pure
        clusters and ``gap <= CERTIFICATE_TOL``. ``extra``: intercept (b), certified, E_best,
        F, gap, history (per iteration), n_clusters_final, labels, scaling (the power-of-two
        factors ``X_columns`` and ``objective``), and for kernels ``alpha_rows`` (the dual
        value of each row, alpha_k s_i / W_k, a feasible point of the full dual).
    """
    t0 = time.perf_counter()
    if kernel is not None and not isinstance(kernel, Kernel):
        raise ValueError(
            f"'kernel' must be None (linear) or a solvers.kernels.Kernel; got {kernel!r}."
        )
    f = "aid_svm"
    _check_constraints(constraints, X, y, sample_weight, init, kernel)
    rows: SvmRows | None = None
    if any_dask(X, y, sample_weight, init):
        rows = _dask_rows(X, y, sample_weight, kernel)
        n = rows.n
    else:
        X = check_array(X, "X")
        n = X.shape[0]
        if kernel is not None and kernel.name == "precomputed" and X.shape != (n, n):
            raise ValueError(
                f"With Kernel('precomputed') 'X' must be the n x n kernel matrix; got {X.shape}."
            )
        y = check_labels(y, n, signs=True)[0]
        s = check_sample_weight(sample_weight, n)
    C = check_positive(C, "C", f)
    K0 = check_n_clusters(n_clusters, n, f)
    gap_tol = check_nonnegative(gap_tol, "gap_tol", f)
    max_iter = check_int(max_iter, "max_iter", f)
    time_limit = check_positive(time_limit, "time_limit", f, none_ok=True)
    subsolver = check_choice(subsolver, "subsolver", f, SUBSOLVERS)
    split = check_choice(split, "split", f, SPLIT_RULES)
    zero_tol = check_nonnegative(zero_tol, "zero_tol", f)
    if isinstance(init, str):
        init = check_choice(init, "init", f, ("auto",) + SVM_METHODS)
        if init == "auto":
            init = "band" if kernel is None else "kmeans"
    elif rows is not None:
        init = rows.pure_labels(init)
    else:
        init = _check_init(init, y)

    empty = None if constraints is None else constraints.proven_empty()
    if empty is not None:  # proven (checked Farkas certificate): stop before any iteration
        return SolveResult(termination=TerminationCondition.INFEASIBLE,
                           solution_status=SolutionStatus.NO_SOLUTION, iterations=0,
                           solve_time=time.perf_counter() - t0, solver=subsolver,
                           raw_status=f"the constraints admit no (w, b) ({empty})",
                           strategy="aid", scale=C * float(np.sum(s)),
                           extra=dict(certified=False, history=[]))
    keep = None
    if rows is None:
        keep, X, y, s = _drop_zero_weights(X, y, s, kernel)
        rows = SvmRows(X if kernel is None else np.zeros((y.shape[0], 0)), y, s)
    sigma = float(pow2_factor(C * rows.weight_mean())[0])
    if constraints is None:  # small boxes only (a large C is left alone, see above)
        sigma = max(sigma, 1.0)
    if kernel is not None:
        model: _LinearModel | _KernelModel = _KernelModel(X, rows, kernel, sigma)
    else:
        model = _LinearModel(rows, subsolver, sigma, constraints)
    if isinstance(init, str):
        labels0 = model.initial_labels(K0, init, C, seed)
    else:
        labels0 = init if keep is None else init[keep]
    agg = model.rows.aggregate(labels0)
    scale = C * rows.weight_sum()
    st = _run(model, agg, C, gap_tol, max_iter, time_limit, split == "refine",
              zero_tol, verbose, t0, scale)
    return _result(st, agg, keep, n, kernel, subsolver, t0, scale, model)


def _check_constraints(constraints: Any, X: Any, y: Any, sample_weight: Any, init: Any,
                       kernel: Kernel | None) -> None:
    """DataError unless ``constraints`` is None or a CoefConstraints on (w, b) of a linear SVM
    held in memory."""
    if constraints is None:
        return
    if not isinstance(constraints, CoefConstraints):
        raise DataError("'constraints' of aid_svm must be a solvers.constraints.CoefConstraints "
                        "(SVM(..., constraints=..., bounds=...) builds one); got "
                        f"{type(constraints).__name__}.")
    if kernel is not None:
        raise DataError(f"'constraints' of aid_svm act on the linear SVM's (w, b); got "
                        f"kernel={kernel.name!r}. Use kernel=None (linear).")
    if any_dask(X, y, sample_weight, init):
        raise DataError("Constraints on the coefficients need the data in memory; pass "
                        "X.compute(), y.compute().")
    p = np.shape(X)[1] if np.ndim(X) == 2 else -1
    if constraints.k != p + 1:
        raise DataError(f"'constraints' of aid_svm are on {constraints.k} coefficients; X has "
                        f"{p} columns, so (w, b) has {p + 1}.")


def _dask_rows(X: Any, y: Any, sample_weight: Any, kernel: Kernel | None) -> SvmRows:
    """The checked rows of a Dask X / y / weights (linear kernel only; weight-0 rows dropped)."""
    if kernel is not None:
        raise DataError(
            f"aid_svm with kernel={kernel.name!r} needs X in memory (the aggregated kernel dual "
            "uses the n x n kernel matrix) and X is a Dask array; use kernel=None (the linear "
            "SVM, which runs chunk by chunk), or pass X.compute() if it fits in memory."
        )
    from solvers.dask_svm_rows import DaskSvmRows

    return DaskSvmRows.checked(X, y, sample_weight)


def _drop_zero_weights(X, y, s, kernel):
    """``(kept rows or None, X, y, s)`` without the rows of weight 0 (in memory)."""
    if not np.any(s == 0):
        return None, X, y, s
    keep = np.flatnonzero(s > 0)
    if kernel is not None and kernel.name == "precomputed":
        X = X[np.ix_(keep, keep)]
    else:
        X = X[keep]
    y = check_labels(y[keep], keep.shape[0], signs=True)[0]
    return keep, X, y, s[keep]


class _LinearModel:
    """Linear kernel: aggregated primal in (w', b) on the scaled columns X' = X c (w = c w')
    with the objective times sigma (Hessian sigma c^2, costs sigma C W_k). ``rows`` holds
    (X', y, s) in memory (:class:`solvers.rows.SvmRows`) or on Dask (its twin)."""

    def __init__(self, rows: SvmRows, subsolver: str, sigma: float,
                 constraints: CoefConstraints | None = None) -> None:
        self.col = rows.column_factors()
        self.rows = rows.scaled(self.col)
        self.subsolver = subsolver
        self.sigma = sigma
        self.hess = sigma * self.col**2
        self.cqp = (None if constraints is None else ConstrainedSvmQP(
            self.hess, scaled_svm_constraints(constraints, self.col), subsolver))

    def initial_labels(self, K0: int, method: str, C: float, seed: int) -> Any:
        """``svm_clusters`` of X' ("band" and "quantile" score by a subsample fit)."""
        score = None if method == "kmeans" else self.subsample_score(C, seed)
        return self.rows.initial_labels(K0, score, method, seed)

    def subsample_score(self, C: float, seed: int) -> Any:
        """The margin values 1 - y_i (x'_i w' + b) of a fit on a subsample of the rows."""
        idx = subsample(self.rows.n, SVM_SUBSAMPLE, np.random.default_rng(seed))
        Xs, ys, ss = self.rows.take(idx)
        if self.cqp is not None:  # the fit with the constraints (None if they are infeasible)
            out = self.cqp.solve(Xs, ys, self.sigma * C * ss, tight=False)
        else:
            out = linear_svm_primal(Xs, ys, ss, self.sigma * C, hess=self.hess,
                                    subsolver="clarabel", tol=1e-8)
        if out.w is None:  # only the initial clustering suffers: score every row alike (1)
            return self.rows.margins(np.zeros(self.rows.p), 0.0)
        return self.rows.margins(out.w, out.b)

    def solve(self, agg, yk, C, time_limit) -> tuple[QpOutcome, Any, float, float]:
        """The outcome, the solution ``(w, b, w')``, 1/2 ||w||^2 and the dual bound F^t."""
        Xbar = agg.SX / agg.W[:, None]
        if self.cqp is not None:  # F^t: the constrained QP's verified dual objective
            out = self.cqp.solve(Xbar, yk, self.sigma * C * agg.W, time_limit)
            if out.w is None or out.bound is None:
                return out, None, np.nan, -np.inf
            w = self.col * out.w
            return out, (w, out.b, out.w), 0.5 * float(w @ w), out.bound / self.sigma
        out = linear_svm_primal(Xbar, yk, agg.W, self.sigma * C, hess=self.hess,
                                subsolver=self.subsolver, time_limit=time_limit)
        if out.w is None or out.alpha is None:
            return out, None, np.nan, -np.inf
        w = self.col * out.w
        alpha = feasible_alpha(out.alpha / self.sigma, yk, C * agg.W)
        u = ((alpha * yk) @ Xbar) / self.col  # sum_k alpha_k y_k xbar_k in the data's units
        F = float(alpha.sum() - 0.5 * u @ u)
        if np.any(self.col < 1.0):
            F = max(F, self._relaxed_bound(out.alpha / self.sigma, yk, Xbar, C * agg.W))
        return out, (w, out.b, out.w), 0.5 * float(w @ w), F

    def _relaxed_bound(self, alpha, yk, Xbar, box) -> float:
        """The dual bound with the regularisation of the huge columns J (c_j < 1) dropped.

        1/2 ||w||^2 >= 1/2 sum_{j not in J} w_j^2, so the SVM without the terms of J has an
        optimum below the full one and its dual, D_J(alpha) = sum alpha - 1/2 sum_{j not in J}
        u_j^2 under the extra equalities u'_j = sum_k alpha_k y_k xbar'_kj = 0 (j in J, the
        scaled, O(1) columns), bounds both. On a column of magnitude 1e16 the plain bound has
        to resolve w_j ~ 1e-16 and cannot; the dropped term 1/2 w_j^2 is that small.
        """
        J = self.col < 1.0
        A = np.vstack([yk, (yk[:, None] * Xbar[:, J]).T])
        a = project_equalities(alpha, A, box)
        if a is None:
            return -np.inf
        u = ((a * yk) @ Xbar[:, ~J]) / self.col[~J]
        return float(a.sum() - 0.5 * u @ u)

    def evaluate(self, sol, agg, tol) -> tuple[float, np.ndarray, Any]:
        """``(sum_i s_i max(0, m_i), mixed, state)`` at the solution (see ``SvmRows``)."""
        _, b, w_scaled = sol
        return self.rows.evaluate(w_scaled, b, agg, tol)


class _KernelModel:
    """Any kernel: aggregated dual on Kbar = D^-1 M K M' D^-1 (M[k, i] = s_i for i in C_k),
    solved for alpha' = sigma alpha (Hessian Qbar / sigma, box sigma C W_k)."""

    subsolver = "clarabel"
    cqp = None  # constraints act on a linear SVM's (w, b) only

    def __init__(self, X: np.ndarray, rows: SvmRows, kernel: Kernel, sigma: float) -> None:
        self.X = X
        self.kernel = kernel
        self.Kmat = kernel(X, X)
        self.rows = rows  # no columns: the aggregated points live in feature space
        self.s = rows.s
        self.sigma = sigma

    def initial_labels(self, K0: int, method: str, C: float, seed: int) -> np.ndarray:
        """``svm_clusters`` of the rows of X (k-means in input space by default)."""
        y, s = self.rows.y, self.rows.s
        score = None if method == "kmeans" else self.subsample_score(y, s, C, seed)
        return svm_clusters(self.X, y, s, K0, score=score, method=method, seed=seed)

    def _dual(self, Q, yk, W, C, **kw) -> tuple[QpOutcome, np.ndarray | None]:
        """Solve the scaled dual; return the outcome and the feasible alpha of the data."""
        out = kernel_svm_dual(Q / self.sigma, yk, W, self.sigma * C, **kw)
        return out, (None if out.alpha is None else
                     feasible_alpha(out.alpha / self.sigma, yk, C * W))

    def subsample_score(self, y, s, C, seed) -> np.ndarray:
        idx = subsample(self.X.shape[0], min(SVM_SUBSAMPLE, 1000), np.random.default_rng(seed))
        Kss = self.Kmat[np.ix_(idx, idx)]
        ys = y[idx]
        _, a = self._dual(ys[:, None] * Kss * ys[None, :], ys, s[idx], C, tol=1e-8)
        if a is None:  # only the initial clustering suffers: score every row alike
            return np.ones(self.X.shape[0])
        g = self.Kmat[:, idx] @ (a * ys)
        b = best_intercept(g[idx], ys, s[idx])
        return 1.0 - y * (g + b)

    def _M(self, agg) -> sp.csr_matrix:
        n = self.X.shape[0]
        return sp.csr_matrix((self.s, (agg.labels, np.arange(n))), shape=(agg.n_clusters, n))

    def solve(self, agg, yk, C, time_limit) -> tuple[QpOutcome, Any, float, float]:
        """The outcome, the solution ``(alpha, b, alpha_rows)``, 1/2 ||w||^2 and F^t."""
        M = self._M(agg)
        G = np.asarray(M @ self.Kmat) / agg.W[:, None]  # G[k, i] = sum_j s_j K_ji / W_k
        Kbar = np.asarray(M @ G.T) / agg.W[:, None]
        Kbar = 0.5 * (Kbar + Kbar.T)
        out, alpha = self._dual(yk[:, None] * Kbar * yk[None, :], yk, agg.W, C,
                                time_limit=time_limit)
        if alpha is None:
            return out, None, np.nan, -np.inf
        ay = alpha * yk
        g = Kbar @ ay
        b = best_intercept(g, yk, agg.W)
        half_sq = 0.5 * float(ay @ g)
        self._last = (G, ay, b)
        alpha_rows = alpha[agg.labels] * self.s / agg.W[agg.labels]
        return out, (alpha, b, alpha_rows), half_sq, float(alpha.sum()) - half_sq

    def evaluate(self, sol, agg, tol) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i s_i max(0, m_i), mixed, m)`` with m_i = 1 - y_i (f(x_i) + b)."""
        G, ay, b = self._last
        return self.rows.judge(1.0 - self.rows.y * (G.T @ ay + b), agg, tol)


def _check_init(init: object, y: np.ndarray) -> np.ndarray:
    lab = np.asarray(init)
    n = y.shape[0]
    if lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(
            f"'init' must be a method name or an int array of one label per row ({n})."
        )
    lab = lab.astype(np.int64)
    if lab.min() < 0:
        raise ValueError("'init' labels must be >= 0.")
    K = int(lab.max()) + 1
    pos = np.bincount(lab, weights=(y > 0), minlength=K)
    cnt = np.bincount(lab, minlength=K)
    if np.any((pos > 0) & (pos < cnt)):
        raise ValueError(
            "'init' clusters must not mix the labels -1 and +1; cluster each class apart."
        )
    return lab


def _run(model, agg, C, gap_tol, max_iter, time_limit, refine, tol, verbose, t0, scale):
    """The AID loop; the rows (``model.rows``: in memory or on Dask) are touched only by
    ``evaluate`` (objective and sign test, one pass) and ``split``."""
    st: dict[str, Any] = dict(history=[], E_best=np.inf, F=-np.inf, best=None, raw="",
                              termination=TerminationCondition.ITERATION_LIMIT)
    progress = Progress("aid-svm", start=t0)
    for it in range(1, max_iter + 1):
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if remaining is not None and remaining <= 0:
            st["termination"] = TerminationCondition.TIME_LIMIT
            break
        if interrupt.requested():
            st["termination"] = TerminationCondition.INTERRUPTED
            break
        yk = np.sign(agg.SY)
        t_qp = time.perf_counter()
        out, sol, half_sq, F = model.solve(agg, yk, C, remaining)
        t_qp = time.perf_counter() - t_qp
        st["raw"] = out.raw
        if out.termination in USER_STOPS:  # the user's time limit or Ctrl-C: keep the best
            st["termination"] = out.termination
            st["raw"] = f"aggregated QP of iteration {it}: {out.raw}"
            break
        if out.termination is TerminationCondition.INFEASIBLE and model.cqp is not None:
            # only a constrained QP can be infeasible, and only with a Farkas certificate the
            # backend checked: it shares the user's feasible set, which is empty
            st["termination"] = TerminationCondition.INFEASIBLE
            st["raw"] = (f"the constraints admit no (w, b): the aggregated QP of iteration "
                         f"{it} is infeasible ({out.raw})")
            break
        _check_qp(out, sol, it, model, C)
        hinge, mixed, state = model.evaluate(sol, agg, tol)
        E = half_sq + C * hinge
        st["F"] = max(st["F"], F)  # every F^t is a valid bound, so is their maximum
        if E < st["E_best"]:
            st["E_best"], st["best"] = E, sol
        # the problem layer's gap scale: sum C_i s_i, or the objective when that is smaller
        gscale = objective_scale(scale, st["E_best"], st["F"])
        gap = max((st["E_best"] - st["F"]) / gscale, 0.0)
        n_mixed = int(mixed.sum())
        st["history"].append(dict(iteration=it, clusters=agg.n_clusters, F=F, E=E,
                                  E_best=st["E_best"], gap=gap, mixed=n_mixed, qp_time=t_qp,
                                  time=time.perf_counter() - t0))
        progress.update(it, st["E_best"], gap, F=st["F"], clusters=agg.n_clusters,
                        mixed=n_mixed)
        if verbose:
            verbose_line(f"AID-SVM it {it:3d}  clusters {agg.n_clusters:8d}  mixed {n_mixed:7d}  "
                         f"F {F:.10g}  E {E:.10g}  gap {gap:.3e}  qp {t_qp:.2f}s  "
                         f"t {time.perf_counter() - t0:.2f}s")
        if n_mixed == 0:
            st["termination"], msg = pure_verdict(st["E_best"], st["F"], gscale, it, "QP",
                                                  lambda: _diagnosis(model, C))
            st["raw"] = msg or st["raw"]
            break
        if gap <= gap_tol:
            st["termination"] = TerminationCondition.GAP_LIMIT
            break
        if it == max_iter:
            break
        model.rows.split(agg, mixed, state, refine)
    st["iterations"] = len(st["history"])
    last = st["history"][-1] if st["history"] else {}
    progress.done(st["iterations"], last.get("E_best"), last.get("gap"),
                  status=st["termination"].value)
    return st


def _check_qp(out: QpOutcome, sol: Any, it: int, model: Any, C: float) -> None:
    """SubproblemError unless the aggregated QP of iteration ``it`` ended optimal with a
    solution; the message names the subsolver, its status and what is badly scaled."""
    term, raw = out.termination, out.raw
    if term is TerminationCondition.OPTIMAL and sol is None:
        term, raw = TerminationCondition.NUMERICAL_ERROR, f"{raw} without a finite solution"
    if term is TerminationCondition.OPTIMAL:
        return  # the diagnosis reads every column (a pass over Dask data): only on failure
    other = [name for name in SUBSOLVERS if name != model.subsolver]
    switch = (f"try subsolver={other[0]!r}" if isinstance(model, _LinearModel)
              else "the kernel dual has no other subsolver")
    check_subproblem(term, raw, strategy="aid", subsolver=SUBSOLVER_NAMES[model.subsolver],
                     what=f"the aggregated QP of iteration {it}",
                     fix=f"{_diagnosis(model, C)}; {switch}")


def _diagnosis(model, C: float) -> str:
    """Name what is badly scaled: a rescaled column of X, C * mean(s), or a wide range."""
    parts = []
    if isinstance(model, _LinearModel) and np.any(model.col != 1.0):
        j = int(np.argmax(np.abs(np.log2(model.col))))
        parts.append(f"column {j} of X has magnitude 2^{-int(np.log2(model.col[j]))}, far "
                     "from 1 (the dual bound must resolve w_j on that scale); rescale it")
    if model.sigma != 1.0:
        parts.append(f"C * mean(sample_weight) = {C * model.rows.weight_mean():.1e} is far "
                     "from 1")
    parts.append(worst_scaled(model.rows.columns()))
    return "; ".join(part for part in parts if part) or (
        "nothing is badly scaled after equilibration; try the other subsolver or the full solve")


def _result(st, agg, keep, n, kernel, subsolver, t0, scale, model) -> SolveResult:
    solver = "clarabel" if kernel is not None else subsolver
    scaling = dict(objective=model.sigma)
    if isinstance(model, _LinearModel):
        scaling["X_columns"] = model.col
    extra: dict[str, Any] = dict(certified=False, history=st["history"], scaling=scaling)
    if st["best"] is None:
        return SolveResult(termination=st["termination"],
                           solution_status=SolutionStatus.NO_SOLUTION,
                           iterations=st["iterations"], solve_time=time.perf_counter() - t0,
                           solver=solver, raw_status=st["raw"], strategy="aid", scale=scale,
                           extra=extra)
    labels = agg.labels
    if keep is not None:
        full = np.full(n, -1, dtype=np.int64)
        full[keep] = labels
        labels = full
    x, b, rows = st["best"]
    E, F = st["E_best"], st["F"]
    certified = st["termination"] is TerminationCondition.CERTIFIED
    res = SolveResult(
        termination=st["termination"],
        solution_status=SolutionStatus.OPTIMAL if certified else SolutionStatus.FEASIBLE,
        objective=E, x=x, bound=F, iterations=st["iterations"],
        solve_time=time.perf_counter() - t0, solver=solver, raw_status=st["raw"],
        strategy="aid", extra=extra,
    )
    certify(res, objective_scale(scale, E, F), failure=TerminationCondition.NUMERICAL_ERROR)
    certified = res.termination is TerminationCondition.CERTIFIED
    extra.update(intercept=float(b), certified=certified, E_best=E, F=F, gap=res.gap,
                 n_clusters_final=agg.n_clusters, labels=labels)
    if kernel is not None and certified:
        if keep is not None:
            full = np.zeros(n)
            full[keep] = rows
            rows = full
        extra["alpha_rows"] = rows
    return res


def build_aggregated_svm(
    X: np.ndarray,
    y: np.ndarray,
    labels: np.ndarray,
    *,
    C: float = 1.0,
    sample_weight: np.ndarray | None = None,
) -> Any:
    """The aggregated linear-SVM QP of a label-pure clustering, as a HiGHS model with names.

        min 1/2 ||w||^2 + C sum_k W_k xi_k   s.t.  margin_k: y_k (w'xbar_k + b) + xi_k >= 1, xi >= 0

    (variables ``w_j``, ``b_0``, ``xi_k``). ``labels`` is one cluster id per row (e.g.
    ``result.extra["labels"]``; rows labelled -1 are left out). Run it, or write it for
    inspection with ``h.writeModel("agg.mps")`` / ``"agg.lp"``.
    """
    from solvers.highs_backend import to_highs
    from solvers.qp import QPData

    X = check_array(X, "X")
    n, p = X.shape
    y = check_labels(y, n, signs=True)[0]
    s = check_sample_weight(sample_weight, n)
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"'labels' must have one entry per row of X ({n}); got {labels.shape}.")
    rows = np.flatnonzero(labels >= 0)
    agg = aggregate(X[rows], y[rows], s[rows], labels[rows])
    yk = agg.SY / agg.W
    if not np.allclose(np.abs(yk), 1.0):
        raise ValueError("'labels' mixes the two classes in a cluster; AID clusters are "
                         "label-pure.")
    K = agg.n_clusters
    xbar = agg.SX / agg.W[:, None]
    A = sp.hstack([sp.csr_matrix(xbar * yk[:, None]), sp.csr_matrix(yk[:, None]),
                   sp.identity(K, format="csr")], format="csr")
    qp = QPData(
        c=np.concatenate([np.zeros(p + 1), C * agg.W]), A=A, row_lo=np.ones(K),
        row_hi=np.full(K, np.inf), col_lo=np.concatenate([np.full(p + 1, -np.inf), np.zeros(K)]),
        col_hi=np.full(p + 1 + K, np.inf),
        P=sp.diags(np.concatenate([np.ones(p), np.zeros(1 + K)]), format="csr"),
        col_blocks=[("w", p), ("b", 1), ("xi", K)], row_blocks=[("margin", K)],
        name="aid_svm_aggregated",
    )
    return to_highs(qp, names=True)
