"""Adapters from the problems to the strategies in :mod:`solvers` (registered on import).

Each adapter passes the problem's validated data to an array-level routine and then evaluates
the *problem's own* objective at the returned solution, so that ``objective`` means the same
thing for every strategy of a problem (LAD: E(beta); SVM: the primal P(w, b) with the dual D as
``bound``; KLR: f(alpha); ridge: f(x)). Each strategy's options are declared by its table in
:mod:`solvers.options`: ``routine``'s keywords minus those the problem fixes (a test keeps the
two equal) and minus ``unused`` (keywords the routine takes but this strategy ignores).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from optmodels.strategies import register
from solvers import options as opt
from solvers.aid import aid_lad, aid_svm
from solvers.result import SolveResult, relative_gap
from solvers.sketch import RIDGE_METHODS, solve_ridge
from solvers.smo import block_klr, block_svm, smo_klr, smo_svm

VERIFY_MAX_N = 20_000
"""Kernel problems up to this n re-evaluate objectives with a blocked K v (O(n^2 p) work);
above it the strategy's own decision values are used (recorded in extra['objective_source'])."""

RIDGE_REFERENCE_MAX_D = 2_000
"""Ridge strategies get the exact solution (for rel_error histories) when d is at most this."""


def adapter(
    problem: str,
    name: str,
    routine: Callable[..., Any],
    fixed: set[str],
    table: opt.OptionTable,
    unused: frozenset[str] = frozenset(),
):
    """Register ``fn(problem, **options)`` with the option ``table``, which declares
    ``routine``'s keywords minus ``fixed`` (supplied by the problem) and ``unused``."""

    def deco(fn: Callable[..., SolveResult]) -> Callable[..., SolveResult]:
        fn.routine = routine  # type: ignore[attr-defined]
        fn.fixed = fixed  # type: ignore[attr-defined]
        fn.unused = unused  # type: ignore[attr-defined]
        return register(problem, name, table)(fn)

    return deco


# ---- LAD ----------------------------------------------------------------------------------------
@adapter("lad", "aid", aid_lad, {"X", "y", "sample_weight", "fit_intercept"}, opt.AID_LAD)
def _lad_aid(problem: Any, **options: Any) -> SolveResult:
    res = aid_lad(
        problem.X,
        problem.y,
        sample_weight=problem.sample_weight,
        fit_intercept=problem.fit_intercept,
        **options,
    )
    if res.x is not None:
        res.objective = problem.objective(res.x, res.extra.get("intercept", 0.0))
        res.gap = relative_gap(res.objective, res.bound)
    return res


# ---- SVM ----------------------------------------------------------------------------------------
def _svm_weights(problem: Any) -> np.ndarray:
    """Per-row weights s_i cw_{y_i} such that C * weight = the problem's box C_i."""
    return problem.box / problem.C


@adapter("svm", "aid", aid_svm, {"X", "y", "C", "sample_weight", "kernel"}, opt.AID_SVM)
def _svm_aid(problem: Any, **options: Any) -> SolveResult:
    kernel = None if problem.kernel == "linear" else problem.kernel_
    res = aid_svm(
        problem.X,
        problem.y,
        C=problem.C,
        sample_weight=_svm_weights(problem),
        kernel=kernel,
        **options,
    )
    b = res.extra.get("intercept")
    res.extra["b"] = b
    if res.x is not None and kernel is None:
        res.objective = problem.primal_objective(res.x, b)
        res.extra["form"] = "primal"
    elif res.extra.get("alpha_rows") is not None:
        alpha = res.extra["alpha_rows"]
        res.objective = problem.kernel_primal_objective(alpha, b)
        res.extra.update(alpha=alpha, form="dual")
        res.x = alpha
    if "form" in res.extra and (kernel is None or problem.n <= VERIFY_MAX_N):
        res.extra["train_accuracy"] = problem.train_accuracy(res)
    res.gap = relative_gap(res.objective, res.bound)
    return res


def _svm_dual_result(problem: Any, res: SolveResult) -> SolveResult:
    """SMO returns alpha and the minimised dual 1/2 a'Qa - 1'a; report the primal P(alpha, b)
    as ``objective`` and the dual value D = 1'a - 1/2 a'Qa as ``bound``."""
    alpha, b = res.x, float(res.extra["b"])
    dual = -float(res.extra.get("dual_objective", res.objective))
    if problem.n <= VERIFY_MAX_N:
        res.objective = problem.kernel_primal_objective(alpha, b)
        res.extra["objective_source"] = "toolkit"
    else:  # 1/2 a'Qa = alpha.sum() - D, hinge losses from the strategy's decision values
        f = res.extra["decision_train"]
        hinge = problem.box @ np.maximum(0.0, 1.0 - problem.y * f)
        res.objective = float(alpha.sum() - dual + hinge)
        res.extra["objective_source"] = "strategy"
    res.bound = dual
    res.gap = relative_gap(res.objective, dual)
    res.extra.update(alpha=alpha, form="dual", intercept=b)
    if problem.n <= VERIFY_MAX_N:
        res.extra["train_accuracy"] = problem.train_accuracy(res)
    return res


def _svm_dual_runner(routine: Callable[..., SolveResult]) -> Callable[..., SolveResult]:
    def run(problem: Any, **options: Any) -> SolveResult:
        res = routine(
            problem.X,
            problem.y,
            C=problem.C,
            sample_weight=_svm_weights(problem),
            kernel=problem.kernel_,
            **options,
        )
        return _svm_dual_result(problem, res)

    return run


_SVM_FIXED = {"X", "y", "C", "sample_weight", "class_weight", "kernel"}
adapter("svm", "smo", smo_svm, _SVM_FIXED, opt.SMO_SVM)(_svm_dual_runner(smo_svm))
adapter("svm", "block", block_svm, _SVM_FIXED, opt.BLOCK_SVM)(_svm_dual_runner(block_svm))


# ---- KLR ----------------------------------------------------------------------------------------
def _klr_result(problem: Any, res: SolveResult) -> SolveResult:
    """Objective f(alpha), its lower bound -min_b P(w(alpha), b), sparsity and training
    accuracy evaluated by the problem (as for ``full``); above VERIFY_MAX_N the strategy's own
    f and bound (computed from its Q alpha) are kept."""
    res.extra.setdefault("intercept", res.extra.get("b"))
    if res.x is None:
        return res
    alpha = res.x if res.x.shape[0] == problem.n else res.x[problem.kept_]
    res.extra.update(problem.sparsity(alpha))
    if problem.n <= VERIFY_MAX_N:
        res.objective = problem.objective(alpha)
        res.bound = problem.lower_bound(alpha)[0]
        res.extra["objective_source"] = "toolkit"
        res.extra["train_accuracy"] = problem.train_accuracy(alpha, float(res.extra["b"]))
    else:
        res.extra["objective_source"] = "strategy"
    return res


_KLR_FIXED = {"X", "y", "C", "lam", "bound_tol", "sample_weight", "kernel"}


def _klr_runner(routine: Callable[..., SolveResult]) -> Callable[..., SolveResult]:
    def run(problem: Any, **options: Any) -> SolveResult:
        res = routine(
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


adapter("klr", "smo", smo_klr, _KLR_FIXED, opt.SMO_KLR)(_klr_runner(smo_klr))
adapter("klr", "block", block_klr, _KLR_FIXED, opt.BLOCK_KLR)(_klr_runner(block_klr))


# ---- Ridge --------------------------------------------------------------------------------------
def _ridge_runner(method: str) -> Callable[..., SolveResult]:
    def run(problem: Any, **options: Any) -> SolveResult:
        if "x_star" not in options and problem.p <= RIDGE_REFERENCE_MAX_D:
            options["x_star"] = problem.closed_form()
        res = solve_ridge(problem.Aw, problem.bw, problem.alpha, method=method, **options)
        if res.x is not None:
            res.objective, res.bound = problem.objective(res.x), problem.lower_bound(res.x)
            res.extra.update(
                intercept=problem.intercept(res.x),
                relative_gradient=problem.relative_gradient(res.x),
            )
            # extra["rel_error"] (set by solve_ridge when x_star is known) is that of the
            # returned x: after a divergence, the best iterate, not the last one.
        return res

    run.__name__ = f"_ridge_{method.replace('-', '_')}"
    return run


def _with_sketch_size(method: str, run: Callable[..., SolveResult]) -> Callable[..., SolveResult]:
    """Fill the sketch size m = min(256, d) when not given; refuse m > d (see
    :func:`solvers.options.sketch_size`)."""

    def sized(problem: Any, **options: Any) -> SolveResult:
        owner = f"strategy {method!r} of ridge"
        options["m"] = opt.sketch_size(options.get("m"), problem.Aw.shape[1], owner)
        return run(problem, **options)

    sized.__name__ = run.__name__
    return sized


for _method in RIDGE_METHODS:
    if _method != "cholesky":  # the full solve already is the Cholesky reference
        adapter(
            "ridge",
            _method,
            solve_ridge,
            {"A", "b", "gamma", "method"},
            opt.RIDGE[_method],
            opt.ridge_unused(_method),
        )(_with_sketch_size(_method, _ridge_runner(_method)))
