"""Adapters from the problems to the strategies in :mod:`solvers` (registered on import).

Each adapter passes the problem's validated data to an array-level routine and then evaluates
the *problem's own* objective at the returned solution, so that ``objective`` means the same
thing for every strategy of a problem (LAD: E(beta); SVM: the primal P(w, b) with the dual D as
``bound``; KLR: f(alpha); ridge: f(x)). Each strategy's options are declared by its table in
:mod:`solvers.options`: ``routine``'s keywords minus those the problem fixes (a test keeps the
two equal) and minus ``unused`` (keywords the routine takes but this strategy ignores).

The routines are named here as ``"module:function"`` and imported when a strategy first runs
(or its ``routine`` is read), so a command running one strategy loads that strategy's modules
only (SMO does not load AID, HiGHS or the sketches).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from optmodels.strategies import register
from solvers import options as opt
from solvers.errors import DataError
from solvers.result import SolveResult, TerminationCondition
from solvers.sparse import is_scipy_sparse
from solvers.special import expit

KERNEL_ACCURACY_MAX_N = 20_000
"""Kernel AID results get a training accuracy (a blocked K v, O(n^2 p)) up to this n."""

RIDGE_REFERENCE_MAX_D = 2_000
"""Ridge strategies get the exact solution (for rel_error histories) when d is at most this..."""
RIDGE_REFERENCE_MAX_FLOPS = 1e10
"""... and n d^2 (the cost of the reference's A'A) at most this: at n = 1e5, d = 1024 the
reference alone cost as much as numpy's Cholesky solve, more than a PCG-RFD solve itself."""


def routine_at(path: str) -> Callable[..., Any]:
    """The array-level routine at ``path`` = ``"module:function"``, imported now."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class Adapter:
    """A registered strategy: calls ``fn(problem, **options)``. ``routine`` is the array-level
    routine whose keywords (minus ``fixed`` and ``unused``) the option table declares; it is
    imported when first read."""

    def __init__(self, fn: Callable[..., SolveResult], routine: str, fixed: set[str],
                 unused: frozenset[str]) -> None:
        functools.update_wrapper(self, fn)
        self._fn, self._routine = fn, routine
        self.fixed, self.unused = fixed, unused

    def __call__(self, problem: Any, **options: Any) -> SolveResult:
        return self._fn(problem, **options)

    @property
    def routine(self) -> Callable[..., Any]:
        return routine_at(self._routine)


def adapter(
    problem: str,
    name: str,
    routine: str,
    fixed: set[str],
    table: opt.OptionTable,
    unused: frozenset[str] = frozenset(),
    refuses: tuple[Callable[[Any], str | None], ...] = (),
):
    """Register ``fn(problem, **options)`` with the option ``table``, which declares the
    keywords of ``routine`` (``"module:function"``) minus ``fixed`` (supplied by the problem)
    and ``unused``, and the refusals ``refuses`` (:class:`optmodels.strategies.Strategy`)."""

    def deco(fn: Callable[..., SolveResult]) -> Adapter:
        return register(problem, name, table, refuses)(Adapter(fn, routine, fixed, unused))

    return deco


def dense_X(problem: Any, strategy: str) -> Any:
    """The problem's X for a strategy that needs it dense: X itself unless it is sparse; a
    sparse X made dense when the n x p float64 array fits the memory budget of
    :mod:`optmodels.guards`, else a DataError naming the strategy that keeps X sparse."""
    X = problem.X
    if not is_scipy_sparse(X):
        return X
    from optmodels import guards

    need, budget = problem.n * problem.p * 8.0, guards.memory_budget_bytes()
    if need > budget:
        raise DataError(
            f"Strategy {strategy!r} of {problem.NAME} needs X dense and this sparse X "
            f"(n x p = {problem.n} x {problem.p}, {X.nnz} stored entries) takes "
            f"{need / 2**20:,.2f} MB dense, above the memory budget of {budget / 2**20:,.2f} "
            f"MB. Use strategy='full', which keeps X sparse, or raise the budget "
            f"({guards.ENV_BUDGET} or optmodels.guards.MEMORY_BUDGET_MB)."
        )
    return X.toarray()


def takes_no_constraints(strategy: str, problem_name: str) -> Callable[[Any], str | None]:
    """The refusal of a strategy that cannot carry the user's constraints on the
    coefficients (``constraints=`` / ``bounds=``): it would solve the unconstrained model."""

    def refusal(problem: Any) -> str | None:
        cc = getattr(problem, "coef_constraints", None)
        if cc is None:
            return None
        takers = constraint_takers(problem) or ["full"]
        names = " or ".join(repr(n) for n in takers)
        verb = "carries" if len(takers) == 1 else "carry"
        return (f"Strategy {strategy!r} of {problem_name} does not take constraints on the "
                f"coefficients (this problem has {cc.describe()}): it would solve the model "
                f"without them. Use strategy {names}, which {verb} them.")

    refusal.drops_constraints = True  # type: ignore[attr-defined]
    return refusal


def constraint_takers(problem: Any) -> list[str]:
    """The strategies of ``problem``'s kind that carry its constraints and accept it (no
    refusal of theirs drops constraints, and none refuses this problem otherwise)."""
    from optmodels.strategies import get_strategy, strategies_for

    out = []
    for name in strategies_for(problem.NAME):
        entry = get_strategy(problem.NAME, name)
        if not any(getattr(r, "drops_constraints", False) for r in entry.refuses) \
                and entry.refusal(problem) is None:
            out.append(name)
    return out


# ---- LAD ----------------------------------------------------------------------------------------
_LAD_FIXED = {"X", "y", "sample_weight", "fit_intercept", "quantile", "natural_scale",
              "constraints"}
CONSTRAINT_TOL = 1e-9
"""Largest relative violation of the user's constraints a returned theta may have."""


def check_constraints(problem: Any, res: SolveResult, intercept: bool) -> None:
    """The returned theta = (coefficients, intercept) checked against the user's constraints
    in the user's units: ``extra["constraint_violation"]``, and NUMERICAL_ERROR (with the
    violation in ``raw_status``) above :data:`CONSTRAINT_TOL`."""
    cc = problem.coef_constraints
    if cc is None or res.x is None:
        return
    theta = np.r_[res.x, res.extra["intercept"]] if intercept else np.asarray(res.x)
    violation = cc.max_violation(theta)
    res.extra["constraint_violation"] = violation
    if violation > CONSTRAINT_TOL:
        res.termination = TerminationCondition.NUMERICAL_ERROR
        res.raw_status += (f"; the coefficients violate the constraints by {violation:.1e} "
                           f"(relative), above {CONSTRAINT_TOL:.0e}")


@adapter("lad", "aid", "solvers.aid:aid_lad", _LAD_FIXED, opt.AID_LAD)
def _lad_aid(problem: Any, **options: Any) -> SolveResult:
    from solvers.aid import aid_lad

    res = aid_lad(
        dense_X(problem, "aid"),
        problem.y,
        sample_weight=problem.sample_weight,
        fit_intercept=problem.fit_intercept,
        quantile=problem.quantile,
        natural_scale=problem.best_constant_loss(),
        constraints=problem.coef_constraints,
        **options,
    )
    if res.x is not None:
        check_constraints(problem, res, problem.fit_intercept)
    # res.objective is AID's E_best, the objective of the returned beta evaluated on every row
    # (on power-of-two rescaled data, undone exactly); verify (auto) recomputes it
    return res


# ---- SVM ----------------------------------------------------------------------------------------
def _svm_weights(problem: Any) -> np.ndarray:
    """Per-row weights s_i cw_{y_i} such that C * weight = the problem's box C_i."""
    return problem.box / problem.C


def needs_loss(strategy: str, loss: str) -> Callable[[Any], str | None]:
    """The refusal of an SVM strategy that solves only ``loss``."""

    def refusal(problem: Any) -> str | None:
        if problem.loss == loss:
            return None
        return (f"Strategy {strategy!r} of svm solves loss={loss!r}; this problem has "
                f"loss={problem.loss!r}. Use strategy 'full'"
                + (" or 'newton'" if problem.loss == "squared_hinge"
                   and getattr(problem, "coef_constraints", None) is None else "")
                + ", or build "
                f"the SVM with loss={loss!r}.")

    return refusal


def needs_linear_kernel(strategy: str, problem_name: str, why: str,
                        instead: str) -> Callable[[Any], str | None]:
    """The refusal of a strategy that works on explicit features only."""

    def refusal(problem: Any) -> str | None:
        if problem.kernel == "linear":
            return None
        return (f"Strategy {strategy!r} of {problem_name} {why}, so it needs kernel='linear'; "
                f"this problem has kernel={problem.kernel!r}. {instead}")

    return refusal


@adapter("svm", "aid", "solvers.aid:aid_svm",
         {"X", "y", "C", "sample_weight", "kernel", "constraints"},
         opt.AID_SVM, refuses=(needs_loss("aid", "hinge"),))
def _svm_aid(problem: Any, **options: Any) -> SolveResult:
    from solvers.aid import aid_svm

    kernel = None if problem.kernel == "linear" else problem.kernel_
    res = aid_svm(
        dense_X(problem, "aid"),
        problem.y,
        C=problem.C,
        sample_weight=_svm_weights(problem),
        kernel=kernel,
        constraints=problem.coef_constraints,
        **options,
    )
    b = res.extra.get("intercept")
    res.extra["b"] = b
    if res.x is not None and kernel is None:
        res.objective = problem.primal_objective(res.x, b)
        res.extra["form"] = "primal"
        check_constraints(problem, res, True)
    elif res.extra.get("alpha_rows") is not None:
        alpha = res.extra["alpha_rows"]
        res.objective = problem.kernel_primal_objective(alpha, b)
        res.extra.update(alpha=alpha, form="dual")
        res.x = alpha
    if "form" in res.extra and (kernel is None or problem.n <= KERNEL_ACCURACY_MAX_N):
        res.extra["train_accuracy"] = problem.train_accuracy(res)
    return res


def _svm_dual_result(problem: Any, res: SolveResult) -> SolveResult:
    """SMO / block return alpha, the minimised dual 1/2 a'Qa - 1'a and their decision values f
    on the training rows (from the gradient they hold). Report the primal
    P = 1/2 a'Qa + sum_i C_i max(0, 1 - y_i f_i) (with 1/2 a'Qa = 1'a - D) as ``objective`` and
    D = 1'a - 1/2 a'Qa as ``bound``: no kernel product is recomputed here (the default
    ``verify="auto"`` re-evaluates both from the arrays after auditing f; see
    :mod:`optmodels.verify`)."""
    alpha, b = res.x, float(res.extra["b"])
    dual = -float(res.extra["dual_objective"])
    f = res.extra["decision_train"]
    hinge = problem.box @ np.maximum(0.0, 1.0 - problem.y * f)
    res.objective, res.bound = float(alpha.sum() - dual + hinge), dual
    for h in res.extra.get("history") or []:  # SMO's f(alpha) is minus the problem's dual D
        if "objective" in h:
            h["bound"] = -h.pop("objective")
    res.extra.update(
        alpha=alpha,
        form="dual",
        intercept=b,
        objective_source="strategy",
        train_accuracy=float(np.mean(np.where(f >= 0, 1.0, -1.0) == problem.y)),
    )
    return res


def _svm_dual_runner(path: str) -> Callable[..., SolveResult]:
    """The runner of the SVM dual routine at ``path`` (smo_svm, block_svm)."""
    name = path.rpartition(":")[2].partition("_")[0]

    def run(problem: Any, **options: Any) -> SolveResult:
        res = routine_at(path)(
            dense_X(problem, name),
            problem.y,
            C=problem.C,
            sample_weight=_svm_weights(problem),
            kernel=problem.kernel_,
            **options,
        )
        return _svm_dual_result(problem, res)

    return run


_SVM_FIXED = {"X", "y", "C", "sample_weight", "class_weight", "kernel"}
for _name, _table in (("smo", opt.SMO_SVM), ("block", opt.BLOCK_SVM)):
    _path = f"solvers.smo:{_name}_svm"
    adapter("svm", _name, _path, _SVM_FIXED, _table,
            refuses=(needs_loss(_name, "hinge"),
                     takes_no_constraints(_name, "svm")))(_svm_dual_runner(_path))


_NEWTON_FIXED = {"X", "y", "C", "loss", "sample_weight", "class_weight", "fit_intercept",
                 "intercept_scaling", "penalize_intercept"}


@adapter("svm", "newton", "solvers.sketch.newton:sketched_newton", _NEWTON_FIXED,
         opt.NEWTON_SVM, refuses=(needs_loss("newton", "squared_hinge"),
                                  takes_no_constraints("newton", "svm")))
def _svm_newton(problem: Any, **options: Any) -> SolveResult:
    """Sketch-preconditioned Newton-CG on the squared-hinge primal with the problem's
    unregularised b (exact 1-D minimisation per step). ``objective`` = P(w, b) and ``bound`` =
    D(alpha) at alpha_i = 2 C_i max(0, 1 - y_i f_i) made feasible (problem.squared_hinge_alpha),
    so the problem's certificate decides OPTIMAL."""
    from solvers.sketch.newton import sketched_newton

    if "preconditioner" in options and options["preconditioner"] is None:
        options["preconditioner"] = "none"  # the table reads the string 'none' as None
    res = sketched_newton(
        dense_X(problem, "newton"),
        problem.y,
        C=problem.C,
        loss="squared_hinge",
        sample_weight=_svm_weights(problem),
        fit_intercept=True,
        penalize_intercept=False,
        **options,
    )
    if res.x is not None:
        b = float(res.extra["intercept"])
        alpha = problem.squared_hinge_alpha(res.x, b)
        res.objective = problem.primal_objective(res.x, b)
        res.bound = problem.dual_objective(alpha)
        res.extra.update(b=b, alpha=alpha, form="primal")
        res.extra["train_accuracy"] = problem.train_accuracy(res)
    return res


@adapter("svm", "ipm", "solvers.sketch.ipm_svm:ipm_svm",
         {"X", "y", "C", "sample_weight", "class_weight"}, opt.IPM_SVM,
         refuses=(needs_linear_kernel("ipm", "svm", "solves the linear primal QP",
                                      "Use strategy 'smo', 'block', 'aid' or 'full' for that "
                                      "kernel."),
                  needs_loss("ipm", "hinge"), takes_no_constraints("ipm", "svm")))
def _svm_ipm(problem: Any, **options: Any) -> SolveResult:
    """Interior point on the linear hinge-loss primal QP with sketch-preconditioned CG.
    ``objective`` = P(w, b) and ``bound`` = D(alpha) at the IPM's multipliers made feasible
    (problem.feasible_alpha), evaluated by the problem, so its certificate decides OPTIMAL."""
    from solvers.sketch.ipm_svm import ipm_svm

    if "preconditioner" in options and options["preconditioner"] is None:
        options["preconditioner"] = "none"  # the table reads the string 'none' as None
    res = ipm_svm(dense_X(problem, "ipm"), problem.y, C=problem.C,
                  sample_weight=_svm_weights(problem), **options)
    if res.x is not None:
        b = float(res.extra["b"])
        res.objective = problem.primal_objective(res.x, b)
        res.bound = problem.dual_objective(problem.feasible_alpha(res.extra["alpha"]))
        res.extra["form"] = "primal"
        res.extra["train_accuracy"] = problem.train_accuracy(res)
    return res


# ---- KLR ----------------------------------------------------------------------------------------
def _klr_result(problem: Any, res: SolveResult) -> SolveResult:
    """Sparsity and training accuracy for the problem; the objective f(alpha) and its lower
    bound are the strategy's own (computed from its Q alpha; ``verify``
    re-evaluates them)."""
    res.extra.setdefault("intercept", res.extra.get("b"))
    if res.x is None:
        return res
    alpha = res.x if res.x.shape[0] == problem.n else res.x[problem.kept_]
    res.extra.update(problem.sparsity(alpha), objective_source="strategy")
    f = res.extra.get("decision_train")
    if f is not None and len(f) == problem.n:
        res.extra["train_accuracy"] = float(np.mean(np.where(f >= 0, 1.0, -1.0) == problem.y))
    return res


_KLR_FIXED = {"X", "y", "C", "lam", "bound_tol", "sample_weight", "kernel"}


def _klr_runner(path: str) -> Callable[..., SolveResult]:
    """The runner of the KLR dual routine at ``path`` (smo_klr, block_klr)."""

    def run(problem: Any, **options: Any) -> SolveResult:
        res = routine_at(path)(
            problem.X,
            problem.y,
            C=problem.C,
            lam=problem.lam,
            bound_tol=problem.bound_tol,
            sample_weight=problem.sample_weight,
            kernel=problem.kernel_,
            **options,
        )
        return _klr_result(problem, res)

    return run


for _name, _table in (("smo", opt.SMO_KLR), ("block", opt.BLOCK_KLR)):
    _path = f"solvers.smo:{_name}_klr"
    adapter("klr", _name, _path, _KLR_FIXED, _table)(_klr_runner(_path))


def _plain_klr_only(problem: Any) -> str | None:
    """Strategy 'newton' of klr solves plain KLR's primal (lam=0, no bound tolerance)."""
    for name, plain in (("lam", 0.0), ("bound_tol", None)):
        value = getattr(problem, name)
        if value != plain:
            return (f"Strategy 'newton' of klr solves plain KLR (lam=0, bound_tol=None); this "
                    f"problem has {name}={value!r} (sparse KLR, whose loss has a margin shift "
                    "and linear tails). Use strategy 'smo', 'block' or 'full' for S-KLR, or "
                    f"build the KLR with {name}={plain!r}.")
    return None


_KLR_NEWTON_REFUSES = (
    needs_linear_kernel(
        "newton", "klr", "solves the primal in (w, b) on explicit features",
        "Use strategy 'smo', 'block' or 'full' for that kernel, or map X to explicit features "
        "first (e.g. sklearn.kernel_approximation.RBFSampler or Nystroem) and build "
        "KLR(features, y, kernel='linear')."),
    _plain_klr_only)


@adapter("klr", "newton", "solvers.sketch.newton:sketched_newton", _NEWTON_FIXED,
         opt.NEWTON_KLR, refuses=_KLR_NEWTON_REFUSES)
def _klr_newton(problem: Any, **options: Any) -> SolveResult:
    """Sketch-preconditioned Newton-CG on plain KLR's primal with the linear kernel,
    P(w, b) = 1/2 ||w||^2 + sum_i C_i log(1 + exp(-t_i)), t_i = y_i (x_i'w + b), b free (exact
    1-D minimisation per step). The dual point is the best response of the entropy term,
    alpha_i = C_i sigma(-t_i) (the maximiser in loss_i(t) = max_a [-a t - C_i G(a / C_i)]),
    made feasible (problem.feasible_alpha); ``x`` = alpha and ``objective`` = f(alpha).
    ``bound`` is the larger of two proven lower bounds on min f from the problem's duality
    inequality P(w, b) + f(alpha) >= 0: problem.lower_bound(alpha) = -min_b P(w(alpha), b)
    (the bound of every KLR strategy) and -P(w, b) at Newton's own point
    (problem.linear_primal_objective). The second is the tight one on ill-conditioned data:
    f(alpha) + P(w, b) = 1/2 ||grad_w P||^2 when y'alpha = 0, while P(w(alpha), .) is off by
    about 1/2 g'Hg (H the primal Hessian). The problem's certificate then decides OPTIMAL.
    ``extra``: ``w``, ``primal_intercept`` (Newton's b), ``primal_objective`` P(w, b),
    ``bound_source``; ``b`` is the certificate's minimiser for w(alpha), as for smo/block."""
    from solvers.sketch.newton import sketched_newton

    if "preconditioner" in options and options["preconditioner"] is None:
        options["preconditioner"] = "none"  # the table reads the string 'none' as None
    X = dense_X(problem, "newton")
    res = sketched_newton(
        X,
        problem.y,
        C=problem.C,
        loss="logistic",
        sample_weight=problem.sample_weight,
        fit_intercept=True,
        penalize_intercept=False,
        **options,
    )
    if res.x is None:
        return res
    w, b_newton = res.x, float(res.extra["intercept"])
    decision = X @ w + b_newton
    alpha = problem.feasible_alpha(problem.Ci * expit(-problem.y * decision))
    res.x, res.objective = alpha, problem.objective(alpha)
    dual_bound, b = problem.lower_bound(alpha)
    primal = problem.linear_primal_objective(w, b_newton)
    res.bound = max(dual_bound, -primal)
    res.extra.update(b=b, intercept=b, primal_intercept=b_newton, w=w, primal_objective=primal,
                     bound_source="lower_bound(alpha)" if dual_bound >= -primal else "-P(w, b)",
                     form="dual", decision_train=decision)
    _klr_result(problem, res)
    res.extra["objective_source"] = "toolkit"  # f and its bound from the problem, not Newton
    return res


# ---- Ridge --------------------------------------------------------------------------------------
def _ridge_runner(method: str) -> Callable[..., SolveResult]:
    def run(problem: Any, **options: Any) -> SolveResult:
        if ("x_star" not in options and problem.p <= RIDGE_REFERENCE_MAX_D and not problem.lazy
                and problem.n * problem.p**2 <= RIDGE_REFERENCE_MAX_FLOPS):
            options["x_star"] = problem.closed_form()
        from solvers.rows import as_rows
        from solvers.sketch import solve_ridge

        # The working data were checked when the problem was made: as rows, not re-checked.
        A = as_rows(problem.Aw) if isinstance(problem.Aw, np.ndarray) else problem.Aw
        res = solve_ridge(A, problem.bw, problem.alpha, method=method, **options)
        if res.x is None:
            return res
        g = res.extra.get("gradient_norm")
        if g is None:  # the strategy's last gradient is not x's (the best iterate of a
            # divergence): f, its bound and the relative gradient from a fresh pass
            res.objective, res.bound = problem.objective(res.x), problem.lower_bound(res.x)
            res.extra["relative_gradient"] = problem.relative_gradient(res.x)
        else:  # f(x) and ||grad f(x)|| from the strategy's own last pass over the data (the
            # same working data Aw, bw); verify (auto) recomputes them
            res.bound = problem.bound_from(res.objective, g)
            res.extra["relative_gradient"] = res.extra["grad_norm"]
        res.extra["intercept"] = problem.intercept(res.x)
        # extra["rel_error"] (set by solve_ridge when x_star is known) is that of the
        # returned x: after a divergence, the best iterate, not the last one.
        return res

    run.__name__ = f"_ridge_{method.replace('-', '_')}"
    return run


def _with_sketch_size(method: str, run: Callable[..., SolveResult]) -> Callable[..., SolveResult]:
    """Fill the sketch size m = min(256, d) when not given (pcg-* leave it to
    :func:`solvers.sketch.solve_ridge`'s cost model and probe); refuse m > d (see
    :func:`solvers.options.sketch_size`)."""

    def sized(problem: Any, **options: Any) -> SolveResult:
        owner = f"strategy {method!r} of ridge"
        if options.get("m") is not None or not method.startswith("pcg-"):
            options["m"] = opt.sketch_size(options.get("m"), problem.Aw.shape[1], owner)
        return run(problem, **options)

    sized.__name__ = run.__name__
    return sized


for _method in opt.RIDGE_METHODS:
    if _method != "cholesky":  # the full solve already is the Cholesky reference
        adapter(
            "ridge",
            _method,
            "solvers.sketch:solve_ridge",
            {"A", "b", "gamma", "method"},
            opt.RIDGE[_method],
            opt.ridge_unused(_method),
            refuses=(takes_no_constraints(_method, "ridge"),),
        )(_with_sketch_size(_method, _ridge_runner(_method)))
