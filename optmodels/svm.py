"""Weighted soft-margin SVM: linear primal QP and kernel dual QP (docs/problems/svm.md).

Primal (linear kernel):
    min_{w,b,xi}  1/2 ||w||^2 + C sum_i s_i xi_i
    s.t.          margin[i]: y_i (w'x_i + b) + xi_i >= 1,  xi >= 0
Dual (any kernel; per-sample box C_i = C s_i cw_{y_i}):
    min_alpha  1/2 alpha'Q alpha - 1'alpha   s.t.  balance: y'alpha = 0,  0 <= alpha_i <= C_i,
    Q_ij = y_i y_j k(x_i, x_j);  f(x) = sum_i alpha_i y_i k(x_i, x) + b.
Certificate: the duality gap P(w, b) - D(alpha) >= 0, both evaluated here from the arrays.

Squared hinge (``loss="squared_hinge"``, linear kernel only):
    min_{w,b,xi}  1/2 ||w||^2 + sum_i C_i xi_i^2
    s.t.          margin[i]: y_i (w'x_i + b) + xi_i >= 1   (xi and b free, b unregularised)
Dual: max_alpha  1'alpha - 1/2 ||sum_i alpha_i y_i x_i||^2 - sum_i alpha_i^2 / (4 C_i)
      s.t. y'alpha = 0, alpha >= 0 (alpha_i = 0 where C_i = 0); from any (w, b) the dual point
      alpha_i = 2 C_i max(0, 1 - y_i f_i), made to satisfy y'alpha = 0, gives the bound.

Symbols: C = ``C`` (the papers' C), s_i = ``sample_weight``, cw = ``class_weight``; kernel
parameters as scikit-learn (``gamma`` is the RBF width).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from optmodels.problem import USER_LIMITS, Problem, closer
from optmodels.validation import Param, resolve_gamma
from solvers.errors import DataError
from solvers.kernels import KERNELS, Kernel
from solvers.qp import QPData
from solvers.result import (
    CERTIFICATE_TOL,
    SolutionCertificate,
    SolveResult,
    TerminationCondition,
    objective_scale,
    stable_norm,
    strong_convexity_distance,
)
from solvers.rows import any_dask, is_dask
from solvers.solution import KernelSolution, LinearSolution
from solvers.sparse import is_scipy_sparse
from solvers.validation import (
    check_array,
    check_class_weight,
    check_coef_constraints,
    check_labels,
    check_sample_weight,
    class_weight_vector,
)

LOSSES = ("hinge", "squared_hinge")

KERNEL_PARAMS: dict[str, Param] = {
    "kernel": Param("choice", "linear", "kernel k(x, z)", choices=KERNELS),
    "gamma": Param(
        "float_or_choice", "scale", "RBF / poly width", low=0.0, choices=("scale", "auto")
    ),
    "degree": Param("int", 3, "poly degree", low=1, closed="both"),
    "coef0": Param("float", 0.0, "poly offset"),
}


def build_kernel(params: dict[str, Any], X: np.ndarray) -> Kernel:
    """The :class:`Kernel` a problem's parameters describe (``gamma='scale'`` resolved on X by
    :func:`~optmodels.validation.resolve_gamma`; the linear and precomputed kernels have no
    width, and theirs is never computed)."""
    if params["kernel"] != "precomputed":
        check_kernel_range(X)
    no_width = params["kernel"] in ("precomputed", "linear")
    return Kernel(
        params["kernel"],
        1.0 if no_width else resolve_gamma(params["gamma"], X),
        params["degree"],
        params["coef0"],
    )


def check_kernel_range(X: Any) -> None:
    """Kernel values x'z sum p products of entries of X: entries above sqrt(max float / p)
    overflow them (a column scaled by 1e300 gave inf kernel values, then a message about
    gamma). DataError naming X and the fix (dense or scipy sparse X; Dask X: not checked)."""
    if any_dask(X):
        return
    data = X.data if is_scipy_sparse(X) else np.asarray(X)
    top = float(np.abs(data).max()) if data.size else 0.0
    limit = float(np.sqrt(np.finfo(float).max / max(X.shape[1], 1)))
    if top > limit:
        raise DataError(
            f"X has entries up to {top:.3g}: kernel values x'z over its {X.shape[1]} features "
            f"overflow float64 above {limit:.3g}. Rescale the features (e.g. StandardScaler).")


SUPPORT_REL = 1e-8
"""A dual's alpha_i at or below SUPPORT_REL * max_i C_i is zero in its typed solution (the
estimators' rule for their support vectors)."""


def max_kernel_diag(kernel: Kernel, X: Any) -> float:
    """max_i k(x_i, x_i) (0 when negative: an indefinite precomputed kernel), the factor
    between a distance in feature space and a decision value (Cauchy-Schwarz)."""
    if kernel.name == "precomputed" and is_scipy_sparse(X):
        diag = np.asarray(X.diagonal(), dtype=float)
    else:
        diag = kernel.diag(X)
    return max(float(np.max(diag, initial=0.0)), 0.0)


def check_n_features(X: np.ndarray, expected: int, owner: str) -> None:
    """Refuse new rows whose width differs from the training data's (scikit-learn's message)."""
    if X.shape[1] != expected:
        raise DataError(
            f"X has {X.shape[1]} features, but {owner} is expecting {expected} features as input."
        )


FULL_FALLBACK = ("clarabel", "highs")
"""The backends the SVM's full solve tries, in this order after the one asked for, until one
certifies."""


FALLBACK_QP_ITERATIONS = 10_000
"""HiGHS's active-set QP as a fallback stops after this many iterations: it can cycle on the
nearly singular duals that made Clarabel fail (class weights spanning 1e7 ran for the full
time limit)."""


def _fallback_options(backend: str, options: dict[str, Any] | None, tried: list[str],
                      max_iter: int | None) -> dict[str, Any] | None:
    """The user's options go to the backend asked for (they are that backend's); a fallback
    runs with its defaults, HiGHS with an iteration cap on its QP solver (``max_iter``, when
    given, caps it instead)."""
    if not tried:
        return options
    cap = backend == "highs" and max_iter is None
    return {"qp_iteration_limit": FALLBACK_QP_ITERATIONS} if cap else None


class SVM(Problem):
    """Weighted soft-margin SVM (see the module docstring).

    Parameters
    ----------
    X : (n, p) array (for ``kernel="precomputed"``, the n x n kernel matrix).
    y : (n,) two classes (any two values; the larger maps to +1).
    sample_weight : s_i >= 0; class_weight : None, 'balanced' or a dict {label: w} with w > 0
    finite, keyed by the labels of y or by -1/+1 (a class left out weighs 1).
    C, kernel, gamma, degree, coef0 : as scikit-learn's SVC.
    loss : "hinge" (default) or "squared_hinge" (the L2-loss SVM of LinearSVC, with an
        unregularised b; linear kernel only, primal form).
    feature_names : p strings naming the columns of X (the exported primal ``w`` columns are
        ``w_<name>``); default None (``w_0 .. w_{p-1}``). Not a parameter.

    With kernel='linear', X (and y, sample_weight) may be row-chunked Dask arrays: they are
    checked chunk by chunk and stay lazy, and ``solve(strategy="aid")`` runs on them (the
    other strategies, ``qp()`` and ``write()`` need X in memory and say so).
    """

    NAME: ClassVar[str] = "svm"
    DASK_STRATEGIES: ClassVar[tuple[str, ...]] = ("aid",)
    COEF_BLOCKS: ClassVar[tuple[str, ...]] = ("w", "b")
    PARAMS: ClassVar[dict[str, Param]] = {
        "C": Param("float", 1.0, "penalty C of the hinge losses", low=0.0),
        "loss": Param("choice", "hinge", "hinge max(0, 1 - z) or squared_hinge max(0, 1 - z)^2 "
                      "(linear kernel only)", choices=LOSSES),
        **KERNEL_PARAMS,
    }

    def __init__(
        self,
        X: Any,
        y: Any,
        *,
        sample_weight: Any = None,
        class_weight: Any = None,
        feature_names: Any = None,
        constraints: Any = None,
        bounds: Any = None,
        **params: Any,
    ) -> None:
        self._set_params(params)
        self.coef_constraints = None
        if any_dask(X, y, sample_weight):
            if constraints is not None or bounds is not None:
                raise DataError("constraints= and bounds= need X in memory (the constrained "
                                "full solve); pass X.compute(), y.compute().")
            self._set_dask_data(X, y, sample_weight, class_weight)
            self.feature_names = feature_names
            return
        # A sparse X stays sparse with the linear kernel (products X w, X'v); other kernels
        # densify it (their kernel rows need dense X).
        self._X = check_array(X, "X", accept_sparse=True,
                              keep_sparse=self.params["kernel"] == "linear")
        self.feature_names = feature_names
        self.y, self.classes_ = check_labels(y, self.n, warn_column=True)
        self.sample_weight = check_sample_weight(sample_weight, self.n)
        if self.params["kernel"] == "precomputed" and self._X.shape != (self.n, self.n):
            raise DataError(
                f"With kernel='precomputed' X must be the n x n kernel; got {self._X.shape}."
            )
        if self.params["loss"] == "squared_hinge" and self.params["kernel"] != "linear":
            raise DataError(
                f"loss='squared_hinge' needs kernel='linear' (its model is the linear primal "
                f"QP); got kernel={self.params['kernel']!r}. Use kernel='linear', or "
                "loss='hinge' for kernels."
            )
        if (constraints is not None or bounds is not None) and self.params["kernel"] != "linear":
            raise DataError(
                f"constraints= and bounds= act on the linear SVM's coefficients (w, b); this "
                f"problem has kernel={self.params['kernel']!r}, whose w lives in feature space. "
                "Use kernel='linear' (on explicit features).")
        self.coef_constraints = check_coef_constraints(constraints, bounds, self.p, True, "SVM")
        self.kernel_ = build_kernel(self.params, self._X)
        self._set_box(class_weight)
        if not (self.box[self.y > 0] > 0).any() or not (self.box[self.y < 0] > 0).any():
            raise DataError("Only one class has positive weight; a binary SVM needs both classes.")

    def _set_box(self, class_weight: Any) -> None:
        """The checked class weights and the box C_i = C s_i cw_{y_i} (lazy on Dask)."""
        self.class_weight = check_class_weight(class_weight, self.classes_)
        self.box = self.C * self.sample_weight * class_weight_vector(self.class_weight, self.y)

    def _set_dask_data(self, X: Any, y: Any, sample_weight: Any, class_weight: Any) -> None:
        """X, y (mapped to -1/+1), s and the box as float64 Dask arrays chunked alike (lazy),
        checked chunk by chunk in one pass with the in-memory messages; linear kernel only."""
        import dask
        import dask.array as da

        from solvers.dask_svm_rows import checked_labelled

        if self.params["kernel"] != "linear":
            raise DataError(
                f"A Dask X needs kernel='linear' (linear-SVM AID runs chunk by chunk; the "
                f"kernel={self.params['kernel']!r} dual needs the n x n kernel matrix, every "
                "row in memory); build the SVM with kernel='linear', or pass X.compute() and "
                "y.compute() if they fit in memory."
            )
        X = X if is_dask(X) else da.from_array(np.asarray(X))
        self._X, y, self.sample_weight, self.classes_ = checked_labelled(X, y, sample_weight)
        self.y = da.where(y == self.classes_[1], 1.0, -1.0)
        self.kernel_ = Kernel("linear", 1.0, self.params["degree"], self.params["coef0"])
        self._set_box(class_weight)
        pos, neg = dask.compute(((self.box > 0) & (self.y > 0)).any(),
                                ((self.box > 0) & (self.y < 0)).any())
        if not (pos and neg):
            raise DataError("Only one class has positive weight; a binary SVM needs both classes.")

    def gram(self, rows: np.ndarray | None = None) -> np.ndarray:
        """K[rows, :] (all rows by default)."""
        self.require_in_memory("The kernel matrix")
        Xr = self._X if rows is None else self._X[rows]
        if is_scipy_sparse(self._X):  # linear kernel: the sparse product, made dense
            return (Xr @ self._X.T).toarray()
        return self.kernel_(Xr, self._X)

    def kernel_matvec(self, v: np.ndarray, block_rows: int = 2048) -> np.ndarray:
        """K v; for a sparse X (linear kernel) X (X'v), two sparse products."""
        if is_scipy_sparse(self._X):
            return np.asarray(self._X @ (self._X.T @ v))
        return super().kernel_matvec(v, block_rows)

    def kernel_rows(self) -> tuple[Kernel, Any, np.ndarray, None]:
        """The rows the dual is solved on (C_i > 0) for :meth:`Problem.kernel_check`."""
        return self.kernel_, self._X, np.flatnonzero(self.box > 0), None

    def _data_kwargs(self) -> dict[str, Any]:
        return {"X": self._X, "y": self.y, "sample_weight": self.box / self.C,
                "feature_names": self.feature_names}

    def natural_scale(self) -> float:
        """P(0, 0) = sum_i C_i, an upper bound on the optimum that scales with C and the
        weights (the "C n" of the SVM): gaps are measured against it."""
        return float(self.box.sum())

    def certificate_scale(self, res: SolveResult) -> float:
        """:func:`solvers.result.objective_scale` of the natural scale and the result's
        objective and bound: on separable data the optimum stays bounded as C grows, so 1e-6
        of P(0, 0) alone would let an answer far from it pass."""
        return objective_scale(self.natural_scale(), res.objective, res.bound)

    def solution_certificate(self, res: SolveResult) -> SolutionCertificate | None:
        """P(w, b) is 1-strongly convex in w and D(alpha) 1-strongly concave in
        w(alpha) = sum_i alpha_i y_i phi(x_i) (both losses), so with the absolute gap
        G = objective - bound ``||w - w*|| <= sqrt(2 G)`` for the w the result predicts with
        (its primal w, or w(alpha)), and every training row's ``w'phi(x_i)`` is within
        ``sqrt(2 G) sqrt(k(x_i, x_i))`` of the optimum's, in units of the margin 1. The
        intercept is not covered: at a degenerate optimum it is not unique."""
        distance = strong_convexity_distance(res.objective - float(res.bound), 1.0)
        norm = self._w_norm(res)
        diag = None if self.lazy else max_kernel_diag(self.kernel_, self._X)
        decisions = None if diag is None else distance * np.sqrt(diag)
        return SolutionCertificate(distance, decisions, norm, 1.0)

    def typed_solution(self, res: SolveResult) -> LinearSolution | KernelSolution | None:
        """The primal form's (w, b), or the dual's alpha_i y_i on the support and b (None for
        a dual on Dask rows, which predicts through the problem's blocked passes)."""
        b = res.extra.get("b")
        if b is None:
            return None
        if res.extra.get("form") == "primal":
            return LinearSolution(np.asarray(res.x, dtype=float), float(b))
        if self.lazy:
            return None
        alpha = np.asarray(res.extra.get("alpha", res.x), dtype=float)
        # an interior point leaves alphas of 1e-10 C on rows off the margin: zero them, as the
        # estimators do, so the solution's support is the support (a change of the decision
        # values of at most n * SUPPORT_REL * max C_i * max k(x, x'))
        alpha = np.where(alpha > SUPPORT_REL * float(np.max(self.box, initial=0.0)), alpha, 0.0)
        return KernelSolution.from_dual(self._X, alpha, self.y, float(b), self.kernel_)

    def _w_norm(self, res: SolveResult) -> float:
        """||w|| of a result: its primal w, or ``sqrt(v'K v)`` with v = alpha * y, from the
        decision values the strategy returned (``f - b = K v``) where it did, else one kernel
        product (as the objective's own evaluation)."""
        if res.extra.get("form") != "dual":
            return stable_norm(np.asarray(res.x, dtype=float))
        alpha = res.extra.get("alpha")
        v = (res.x if alpha is None else alpha) * self.y
        if self.kernel == "linear":
            return stable_norm(np.asarray(self._X.T @ v).ravel())
        f, b = res.extra.get("decision_train"), res.extra.get("b")
        kv = np.asarray(f) - float(b) if f is not None and b is not None else \
            self.kernel_matvec(v)
        return float(np.sqrt(max(float(v @ kv), 0.0)))

    def feasible_alpha(self, alpha: np.ndarray, target: float = 0.0) -> np.ndarray:
        """alpha clipped to [0, C_i] (squared hinge: to [0, inf), and 0 where C_i = 0) and then
        made to satisfy y'alpha = ``target`` (0: the dual's balance row; a constrained model's
        ``-G_b'mu``) by shrinking the side in excess proportionally, so that D(alpha) is a
        valid lower bound. Where that side is too small to absorb the excess it is zeroed and
        the balance fails (the caller's bound then says so)."""
        upper = self.box if self.loss == "hinge" else np.where(self.box > 0, np.inf, 0.0)
        a = np.clip(alpha, 0.0, upper)
        excess = float(self.y @ a) - target
        side = self.y > 0 if excess > 0 else self.y < 0
        total = float(a[side].sum())
        if excess != 0.0 and total > 0.0:
            a[side] *= max(0.0, 1.0 - abs(excess) / total)
        return a

    # objectives -----------------------------------------------------------------------------
    def primal_objective(self, w: np.ndarray, b: float) -> float:
        """P(w, b) = 1/2||w||^2 + sum_i C_i h_i, h_i = max(0, 1 - y_i (w'x_i + b)) (linear
        kernel; h_i^2 for the squared hinge)."""
        h = np.maximum(0.0, 1.0 - self.y * (self._X @ w + b))
        return float(0.5 * w @ w + self.box @ (h if self.loss == "hinge" else h * h))

    def dual_objective(self, alpha: np.ndarray) -> float:
        """D(alpha) = 1'alpha - 1/2 alpha'Q alpha (to be maximised; the QP minimises -D); for
        the squared hinge also - sum_i alpha_i^2 / (4 C_i) (alpha_i = 0 where C_i = 0). With the
        linear kernel alpha'Q alpha is ||X'(alpha * y)||^2."""
        v = alpha * self.y
        if self.kernel == "linear":  # ||X'v||^2: no cancellation across the n x n kernel
            wv = self._X.T @ v
            value = float(alpha.sum() - 0.5 * wv @ wv)
        else:
            value = float(alpha.sum() - 0.5 * v @ self.kernel_matvec(v))
        if self.loss == "squared_hinge":
            pos = self.box > 0
            value -= float(alpha[pos] @ (alpha[pos] / (4.0 * self.box[pos])))
        return value

    def squared_hinge_alpha(self, w: np.ndarray, b: float) -> np.ndarray:
        """The dual point of (w, b) for the squared hinge: alpha_i = 2 C_i max(0, 1 - y_i f_i),
        made feasible (:meth:`feasible_alpha`); exact at the optimum, where y'alpha = 0."""
        h = np.maximum(0.0, 1.0 - self.y * (self._X @ w + b))
        return self.feasible_alpha(2.0 * self.box * h)

    def kernel_primal_objective(self, alpha: np.ndarray, b: float,
                                kv: np.ndarray | None = None) -> float:
        """P at w = sum alpha_i y_i phi(x_i): 1/2 alpha'Q alpha + sum C_i max(0, 1 - y_i f(x_i)),
        f = K v + b with v = alpha * y (``kv`` = K v when already known)."""
        v = alpha * self.y
        Kv = self.kernel_matvec(v) if kv is None else kv
        return float(0.5 * v @ Kv + self.box @ np.maximum(0.0, 1.0 - self.y * (Kv + b)))

    def dual_bound_from(self, alpha: np.ndarray, kv: np.ndarray) -> float:
        """A proven lower bound on the optimum from alpha and ``kv`` = K (alpha * y), without
        another kernel product: D(a') at a' = :meth:`feasible_alpha` (alpha), where
        ``||v'||_K <= ||v||_K + ||v' - v||_1 sqrt(max_i k_ii)`` (triangle inequality, and
        ||phi(x_j)|| = sqrt(k_jj)) gives

            D(a') = 1'a' - 1/2 ||v'||_K^2 >= 1'a' - 1/2 (sqrt(v'K v) + ||v' - v||_1 sqrt(k_max))^2,

        exact when alpha is feasible (SMO's and block's alphas are, up to rounding). The linear
        kernel takes D(a') itself (O(n p))."""
        a = self.feasible_alpha(alpha)
        if self.kernel == "linear":
            return self.dual_objective(a)
        v = alpha * self.y
        moved = float(np.abs((a - alpha) * self.y).sum())
        root = np.sqrt(max(float(v @ kv), 0.0))
        if moved > 0.0:
            root += moved * np.sqrt(max_kernel_diag(self.kernel_, self._X))
        return float(a.sum() - 0.5 * root * root)

    def accuracy_of(self, f: np.ndarray) -> float:
        """Share of training rows on the right side of the decision values ``f``."""
        return float(np.mean(np.where(f >= 0, 1.0, -1.0) == self.y))

    def intercept_from_alpha(self, alpha: np.ndarray, Kv: np.ndarray | None = None) -> float:
        """The b that minimises the primal objective for this alpha:

            b* = argmin_b sum_i C_i max(0, 1 - y_i (g_i + b)),   g = K (alpha * y),

        a convex piecewise-linear function of b with breakpoints y_i - g_i; its slope
        -sum_{y=+1, bp > b} C_i + sum_{y=-1, bp <= b} C_i first turns >= 0 at b*. This agrees
        with LIBSVM's average over free alphas at an exact optimum and stays sound at
        interior-point accuracy, where "free" is ill-defined.
        """
        g = self.kernel_matvec(alpha * self.y) if Kv is None else Kv
        bp = self.y - g
        order = np.argsort(bp, kind="stable")
        pos = np.where(self.y[order] > 0, self.box[order], 0.0)
        neg = np.where(self.y[order] < 0, self.box[order], 0.0)
        slope = -(pos.sum() - np.cumsum(pos)) + np.cumsum(neg)
        k = (
            int(np.searchsorted(slope, 0.0, side="left"))
            if np.all(np.diff(slope) >= 0)
            else int(np.argmax(slope >= 0))
        )
        return float(bp[order[min(k, bp.size - 1)]])

    # models ---------------------------------------------------------------------------------
    def qp(self, form: str = "auto") -> QPData:
        """``"primal"`` (linear kernel only) or ``"dual"``; ``"auto"`` picks primal for linear."""
        self.require_in_memory("qp() (the QP with one margin row per sample)")
        form = self._form(form)
        return self._primal() if form == "primal" else self._dual()

    def _form(self, form: str) -> str:
        if form == "auto":
            return "primal" if self.kernel == "linear" else "dual"
        if form not in ("primal", "dual"):
            raise DataError(f"Unknown SVM form {form!r}; choose one of auto, primal, dual.")
        if form == "primal" and self.kernel != "linear":
            raise DataError("The primal SVM needs kernel='linear'; use form='dual' for kernels.")
        if form == "dual" and getattr(self, "coef_constraints", None) is not None:
            raise DataError("The constraints are declared on (w, b) of the primal QP; use "
                            "form='primal' or form='auto'.")
        if form == "dual" and self.loss == "squared_hinge":
            raise DataError("loss='squared_hinge' is declared in primal form only; use "
                            "form='primal' or form='auto'.")
        return form

    def _primal(self) -> QPData:
        """The linear primal; the squared hinge puts 2 C_i on the xi diagonal of P (so that
        1/2 x'Px has C_i xi_i^2), no linear term, and leaves xi free."""
        import scipy.sparse as sp

        n, p = self.n, self.p
        squared = self.loss == "squared_hinge"
        A = sp.hstack(
            [
                sp.diags(self.y) @ sp.csr_matrix(self._X),
                sp.csr_matrix(self.y[:, None]),
                sp.identity(n, format="csr"),
            ],
            format="csr",
        )
        xi_diag = 2.0 * self.box if squared else np.zeros(n)
        P = sp.diags(np.concatenate([np.ones(p), np.zeros(1), xi_diag]), format="csr")
        row_lo, row_hi, row_blocks = np.ones(n), np.full(n, np.inf), [("margin", n)]
        theta_lo, theta_hi = np.full(p + 1, -np.inf), np.full(p + 1, np.inf)
        cc = self.coef_constraints
        if cc is not None:  # lo <= G (w, b) <= hi as rows, lb <= (w, b) <= ub as bounds
            if cc.m:
                A = sp.vstack([A, sp.hstack([sp.csr_matrix(cc.G), sp.csr_matrix((cc.m, n))])],
                              format="csr")
                row_lo, row_hi = np.r_[row_lo, cc.lo], np.r_[row_hi, cc.hi]
                row_blocks = [*row_blocks, ("coef_constraint", cc.m)]
            theta_lo, theta_hi = cc.lb, cc.ub
        return QPData(
            c=np.concatenate([np.zeros(p + 1), np.zeros(n) if squared else self.box]),
            A=A,
            row_lo=row_lo,
            row_hi=row_hi,
            col_lo=np.concatenate([theta_lo, np.full(n, -np.inf if squared else 0.0)]),
            col_hi=np.concatenate([theta_hi, np.full(n, np.inf)]),
            P=P,
            col_blocks=[("w", p), ("b", 1), ("xi", n)],
            row_blocks=row_blocks,
            name="svm_sqhinge_primal" if squared else "svm_primal",
            col_labels=self._labels("w"),
        )

    def _dual(self) -> QPData:
        import scipy.sparse as sp

        Q = self.gram() * np.outer(self.y, self.y)
        return QPData(
            c=-np.ones(self.n),
            A=sp.csr_matrix(self.y[None, :]),
            row_lo=np.zeros(1),
            row_hi=np.zeros(1),
            col_lo=np.zeros(self.n),
            col_hi=self.box.copy(),
            P=sp.csr_matrix(Q),
            col_blocks=[("alpha", self.n)],
            row_blocks=[("balance", 1)],
            name="svm_dual",
        )

    # solve ----------------------------------------------------------------------------------
    def solve_full(
        self,
        solver: str = "clarabel",
        *,
        form: str = "auto",
        tol: float = CERTIFICATE_TOL,
        time_limit: float | None = None,
        max_iter: int | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Verified monolithic solve. Clarabel by default: it is exact and the fastest measured
        here (HiGHS's QP solver returned a wrong objective at n = 10^4).

        Optimal only when (P(w, b) - D(alpha)) / natural_scale() <= ``tol``, with alpha made
        dual feasible first (:meth:`feasible_alpha`). The reference solve does not give up
        after one backend: an answer that misses the certificate is solved again by the other
        backends (:data:`FULL_FALLBACK`) before NUMERICAL_ERROR is reported (Clarabel stopped at
        a relative gap of 1.5e-6 on iris with a poly kernel, where HiGHS certifies);
        ``extra["backends_tried"]`` lists them, ``extra["solver"]`` names the one that answered."""
        if self.coef_constraints is not None and not getattr(self, "_scaled_copy", False):
            return self._solve_constrained(solver, form=form, tol=tol, time_limit=time_limit,
                                           max_iter=max_iter, verbose=verbose, options=options)
        start = time.perf_counter()
        tried: list[str] = []
        best: SolveResult | None = None
        for backend, backend_options in self._full_attempts(solver, options, max_iter):
            if tried and time_limit is not None:
                left = time_limit - (time.perf_counter() - start)
                if left <= 0:
                    break
            else:
                left = time_limit
            res = self._solve_full_with(
                backend, form=form, tol=tol, time_limit=left, max_iter=max_iter,
                verbose=verbose, options=backend_options)
            tried.append(backend)
            if best is None or closer(res, best):
                best = res
            if res.is_optimal or res.termination in USER_LIMITS:  # the user's limit stands
                break
        assert best is not None
        best.extra.update(backends_tried=tried, solver=tried[-1] if best.is_optimal else
                          best.extra.get("solver", tried[0]))
        return best

    def _full_attempts(self, solver: str, options: dict[str, Any] | None,
                       max_iter: int | None) -> list[tuple[str, dict[str, Any] | None]]:
        """(backend, options) in the order :meth:`solve_full` tries them: ``solver`` with the
        user's options, then :data:`FULL_FALLBACK` with theirs (:func:`_fallback_options`). A
        constrained model expands each Clarabel attempt into
        :func:`solvers.clarabel_backend.constrained_option_sets` (tolerances 1e-12 first)."""
        from solvers.clarabel_backend import constrained_option_sets

        order = [solver, *(b for b in FULL_FALLBACK if b != solver)]
        plan: list[tuple[str, dict[str, Any] | None]] = []
        for k, backend in enumerate(order):
            opts = _fallback_options(backend, options, order[:k], max_iter)
            sets = [opts] if self.coef_constraints is None else \
                constrained_option_sets(backend, opts)
            plan += [(backend, o) for o in sets]
        return plan

    def _solve_constrained(self, solver: str, **kwargs: Any) -> SolveResult:
        """The constrained primal on X / a (a power of two near the root mean square of X's
        entries) with C a^2: the same model with w' = w a and P' = P a^2 (its constraints'
        w-columns divided by a, w's bounds times a), so the backend works on numbers near 1
        whatever the data's scale (Clarabel failed at X * 1e-10 with C = 1e20); the result
        maps back exactly and is certified again on the original model."""
        from solvers.scaling import entries_rms_pow2

        X = self._X
        a = entries_rms_pow2(X)
        # theta = d * theta': w = w' / a, b unchanged
        rows, bounds = self.coef_constraints.substituted(np.r_[np.full(self.p, 1.0 / a),
                                                               1.0]).to_scipy()
        scaled = SVM(X / a, self.y, C=self.C * a * a, sample_weight=self.box / self.C,
                     constraints=rows, bounds=bounds,
                     **{k: v for k, v in self.params.items() if k != "C"})
        scaled._scaled_copy = True
        res = scaled.solve_full(solver, **kwargs)
        if res.x is None:
            return self._infeasible_or(res)
        b = self._feasible_coefficients(res, res.x / a, float(res.extra["b"]))
        res.objective = self.primal_objective(res.x, b)
        res.bound = None if res.bound is None else float(res.bound) / (a * a)
        if res.extra.get("alpha") is not None:
            res.extra["alpha"] = np.asarray(res.extra["alpha"]) / (a * a)
        res.extra["data_scale"] = a
        res.extra["train_accuracy"] = self.train_accuracy(res)
        return self.certify(res, tol=kwargs["tol"], failure=TerminationCondition.NUMERICAL_ERROR)

    def _feasible_coefficients(self, res: SolveResult, w: np.ndarray, b: float) -> float:
        """Put (w, b) onto the user's constraints (:meth:`CoefConstraints.feasible_point`):
        P(w, b) is an upper bound on the constrained optimum only at a feasible point, and an
        interior point's lies within its tolerance of the set, not on it. The moved point is
        kept when it violates no more than the returned one; ``res.x`` and the intercept are
        set, ``extra["repaired_violation"]`` records the returned one's relative violation,
        and b is returned."""
        cc = self.coef_constraints
        theta = np.r_[w, b]
        moved = cc.feasible_point(theta)
        before = cc.max_violation(theta)
        if before > 0 and cc.max_violation(moved) <= before:
            res.extra["repaired_violation"] = before
            theta = moved
        res.x, b = theta[:-1], float(theta[-1])
        res.extra.update(b=b, intercept=b)
        return b

    def constrained_dual_bound(self, qp: QPData, duals: np.ndarray | None
                               ) -> tuple[float | None, np.ndarray | None]:
        """A proven lower bound on the constrained primal's optimum from the backend's row
        multipliers (alpha on the margin rows, mu on the constraint rows), and the alpha it
        used: the QP's Lagrangian dual function (:func:`solvers.qp.separable_dual_bound`;
        P is diagonal), after alpha is clipped into [0, C_i] (so the xi columns take no
        -inf) and, where b is free in the direction its reduced cost
        ``-(y'alpha + G_b'mu)`` points, balanced to ``y'alpha = -G_b'mu``
        (:meth:`feasible_alpha`). With w free it equals

            1'alpha + sum_k mu_k side_k - 1/2 ||X'(alpha * y) + G_w'mu||^2,

        D(alpha) plus the constraints' terms. The KKT check's dual objective leaves out the
        multipliers' dual residual instead: on the FairSVM of notebook 5 (20,000 rows)
        Clarabel's alpha exceeded C by 3e-9 and ``w - X'(alpha y) - G_w'mu`` was 1.7e-5, and
        that "bound" lay 2.2e-9 (relative) above the objective. None without multipliers or
        when no balancing exists."""
        from solvers.qp import separable_dual_bound, sign_feasible

        if duals is None:
            return None, None
        n, p, cc = self.n, self.p, self.coef_constraints
        y = sign_feasible(qp, duals)  # mu_k on an infinite side: 0, before G_b'mu is formed
        upper = self.box if self.loss == "hinge" else np.where(self.box > 0, np.inf, 0.0)
        y[:n] = np.clip(y[:n], 0.0, upper)
        mu_b = float(cc.G[:, p] @ y[n:]) if cc.m else 0.0
        q_b = -(float(self.y @ y[:n]) + mu_b)
        if (q_b > 0 and not np.isfinite(cc.lb[p])) or (q_b < 0 and not np.isfinite(cc.ub[p])):
            y[:n] = self.feasible_alpha(y[:n], target=-mu_b)
        bound = separable_dual_bound(qp, y)
        return (bound if np.isfinite(bound) else None), y[:n]

    def _infeasible_or(self, res: SolveResult) -> SolveResult:
        """A constrained solve without a solution: INFEASIBLE when the constraints' own
        feasibility LP has a checked Farkas certificate
        (:meth:`solvers.constraints.CoefConstraints.proven_empty`; the whole QP's certificate
        from Clarabel carries multipliers of 1e-8 on the margin rows, which the check rejects),
        else ``res`` as it is."""
        if res.termination is TerminationCondition.INFEASIBLE or res.termination in USER_LIMITS:
            return res
        why = self.coef_constraints.proven_empty()
        if why is not None:
            res.termination = TerminationCondition.INFEASIBLE
            res.raw_status += f"; the constraints admit no (w, b) ({why})"
        return res

    def _solve_full_with(self, solver: str, *, form: str, tol: float, time_limit: float | None,
                         max_iter: int | None, verbose: bool,
                         options: dict[str, Any] | None) -> SolveResult:
        """One backend's verified solve (:meth:`solve_full`)."""
        form = self._form(form)
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
        if form == "primal":
            w, b = qp.block(res.x, "w").copy(), float(qp.block(res.x, "b")[0])
            alpha = (
                self.feasible_alpha(res.extra["duals"][: self.n])
                if res.extra.get("duals") is not None and self.coef_constraints is None
                else None
            )
            if self.loss == "squared_hinge" and self.coef_constraints is None:
                alpha = self._better_alpha(alpha, self.squared_hinge_alpha(w, b))
            dual = self.dual_objective(alpha) if alpha is not None else None
            if self.coef_constraints is not None:
                # D(alpha) bounds the unconstrained optimum only; the constrained QP's bound
                # is its Lagrangian dual at all its multipliers, made dual feasible, and the
                # objective is an upper bound at a feasible (w, b) only
                dual, alpha = self.constrained_dual_bound(qp, res.extra.get("duals"))
                b = self._feasible_coefficients(res, w, b)
                w = res.x
            obj = self.primal_objective(w, b)
            res.x = w
            res.extra.update(b=b, intercept=b, alpha=alpha, form=form)
        else:
            alpha = self.feasible_alpha(res.x)
            b = self.intercept_from_alpha(alpha)
            obj = self.kernel_primal_objective(alpha, b)
            dual = self.dual_objective(alpha)
            res.x = alpha
            res.extra.update(
                b=b,
                intercept=b,
                alpha=alpha,
                form=form,
                w=self._X.T @ (alpha * self.y) if self.kernel == "linear" else None,
            )
        res.objective, res.bound = obj, dual
        res.extra["train_accuracy"] = self.train_accuracy(res)
        res.extra["solver"] = solver
        return self.certify(res, tol=tol, failure=TerminationCondition.NUMERICAL_ERROR)

    def _better_alpha(self, a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
        """Of two dual feasible points, the one with the larger D (both give valid bounds)."""
        return b if a is None or self.dual_objective(b) >= self.dual_objective(a) else a

    def decision_function(self, result: SolveResult, X_new: Any) -> np.ndarray:
        """f(x) for new rows from a result of this problem (primal or dual form); with
        ``kernel="precomputed"`` X_new holds k(x_new, x_i) for the n training rows."""
        Xn = check_array(X_new, "X_new", accept_sparse=True,
                         keep_sparse=self.kernel == "linear")
        if result.x is None or "b" not in result.extra or result.extra["b"] is None:
            raise DataError(
                f"The result has no solution (termination {result.termination.value}); "
                "solve the problem first and use a result with a solution."
            )
        if self.kernel == "precomputed" and result.extra.get("form") != "primal":
            check_n_features(Xn, self.n, "SVM (precomputed kernel: one column per training row)")
        else:
            check_n_features(Xn, self.p, "SVM")
        solution = result.solution or self.typed_solution(result)
        return solution.decision_function(Xn)

    def train_accuracy(self, result: SolveResult) -> float:
        """Share of training rows on the right side of the decision function."""
        if result.extra.get("form") == "primal":
            f = self._X @ result.x + float(result.extra["b"])
        else:
            f = self.kernel_matvec(result.extra["alpha"] * self.y) + float(result.extra["b"])
        return self.accuracy_of(np.asarray(f).ravel())

    def predict(self, result: SolveResult, X_new: Any) -> np.ndarray:
        """Labels in the original classes."""
        return np.where(
            self.decision_function(result, X_new) >= 0, self.classes_[1], self.classes_[0]
        )
