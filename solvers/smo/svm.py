r"""Weighted soft-margin SVM trained by SMO (docs/strategies/smo.md).

Dual (per-sample box C_i = C s_i w_{y_i}, s: sample weight, w: class weight)::

    min_alpha  1/2 alpha' Q alpha - sum_i alpha_i   s.t.  y' alpha = 0,  0 <= alpha_i <= C_i
    f(x) = sum_i alpha_i y_i k(x_i, x) + b

The core (:mod:`solvers.smo.core`) sees h = 0, p = -1, l = 0, u = C_i. b is the one that
minimises the primal P(w(alpha), b) at the final alpha (a weighted median of m_t = -y_t grad_t,
:func:`solvers.smo.certificate.svm_best_intercept`); LIBSVM's average of m_t over the free
variables is kept as ``extra['b_free_average']``.

"Optimal" means certified: SMO first stops at its own rule (violation <= ``tol``); if the
certificate (the relative duality gap (P(w(alpha), b) - D(alpha)) / scale within
:data:`solvers.result.CERTIFICATE_TOL`, and the solution rule) does not hold then, it continues
warm-started (``refine=True``, at most :data:`~solvers.smo.certificate.REFINE_ROUNDS` times)
with the tolerance predicted to make it hold: the gap falls in proportion to the violation, so
the round asks for half the violation at which the measured gap / violation ratio meets the
allowance, at least ``tol / 10`` (:meth:`~solvers.smo.certificate.Certificate.next_tol`; one
round sufficed on every run measured). A round resumes the previous one: its column cache and
G_bar (pairwise), its known G_bar (batched), and its shrinking from the first step. The result
is OPTIMAL only when the certificate holds, else CONVERGED; ``extra['stopping_rule']`` records
the violation, the tolerance finally met, the refinements and the gap.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from solvers.kernels import Kernel
from solvers.progress import Progress
from solvers.result import SolveResult
from solvers.smo.certificate import (
    Certificate,
    certified_status,
    refine_loop,
    stopping_rule,
    svm_best_intercept,
    svm_gap,
)
from solvers.smo.core import (
    DualSolution,
    auto_working_set,
    joined_history,
    solve_dual,
    termination_of,
)
from solvers.smo.prediction import kernel_expansion
from solvers.smo.qmatrix import KernelQMatrix, PrecomputedQMatrix, QMatrix
from solvers.validation import (
    check_array,
    check_class_weight,
    check_int,
    check_kernel,
    check_labels,
    check_positive,
    check_sample_weight,
    check_vector,
    class_weight_vector,
)


def make_qmatrix(X: np.ndarray, y_pm: np.ndarray, kernel: Kernel, cache_mb: float) -> QMatrix:
    """PrecomputedQMatrix for a ``precomputed`` kernel (X is then K), else KernelQMatrix."""
    if kernel.name == "precomputed":
        return PrecomputedQMatrix(X, y_pm)
    return KernelQMatrix(X, y_pm, kernel, cache_mb)


def free_average_b(alpha, grad, y, lo, up, m_up, m_low) -> float:
    """b = mean of m_t over free variables, else (max_{I_up} m + min_{I_low} m) / 2."""
    free = (alpha > lo) & (alpha < up)
    if free.any():
        return float(np.mean(-y[free] * grad[free]))
    return 0.5 * (m_up + m_low)


def smo_svm(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    sample_weight: np.ndarray | None = None,
    class_weight: dict | str | None = None,
    kernel: Kernel | str = "rbf",
    tol: float = 1e-3,
    cache_mb: float = 200.0,
    shrinking: bool = True,
    max_iter: int = 10_000_000,
    alpha0: np.ndarray | None = None,
    cache_dtype: str = "auto",
    refine: bool = True,
    verbose: bool = False,
    working_set: int | None = None,
) -> SolveResult:
    """Train the weighted SVM dual by second-order SMO.

    Parameters
    ----------
    X : (n, p) array
        Rows x_i (for ``kernel='precomputed'``: the n x n kernel matrix).
    y : (n,) array
        Two class labels; ``classes[1]`` (the larger label) is y = +1.
    C : float
        Box scale; C_i = C * sample_weight_i * class_weight[y_i].
    sample_weight : (n,) array, optional
        s_i >= 0; zero-weight rows get alpha_i = 0.
    class_weight : dict, 'balanced' or None
        Factor per class label (as in scikit-learn).
    kernel : Kernel or str
        k(x, z).
    tol : float
        tau: stop when max_{I_up} m - min_{I_low} m <= tau (LIBSVM's eps).
    cache_mb : float
        Budget of the kernel column cache in MB.
    shrinking : bool
        LIBSVM shrinking.
    max_iter : int
        Iteration cap; reaching it gives ``TerminationCondition.ITERATION_LIMIT``.
    alpha0 : (n,) array, optional
        Warm start; clipped to the box and made to satisfy y'alpha = 0 first.
    cache_dtype : {"auto", "float64", "float32"}
        Storage of cached columns (see :func:`solvers.smo.core.solve_dual`); "auto" uses
        float32 (as LIBSVM does) only when Q does not fit ``cache_mb`` in float64.
    refine : bool
        After meeting ``tol``, continue with tighter tolerances until the relative duality gap
        is within CERTIFICATE_TOL (see the module docstring); False stops at ``tol`` (the result
        is then CONVERGED unless the gap happens to be within CERTIFICATE_TOL).
    verbose : bool
        Detailed lines from the loop (:func:`solvers.smo.core.solve_dual`). Progress lines
        (elapsed time, iterations, dual objective, violation, the gap after each round) go to
        the ``solvers.progress`` logger whatever ``verbose`` (:mod:`solvers.progress`).
    working_set : int or None
        q, the variables per step: 2 is LIBSVM's pairwise SMO; q > 2 takes
        the q most violating variables, computes their q columns of Q in one pass over the
        data and solves that subproblem by pairwise SMO (:mod:`solvers.smo.batched`; both
        use ``shrinking``). None: :func:`solvers.smo.core.auto_working_set` (pairwise for
        n <= 1024, else q = 256).

    Returns
    -------
    SolveResult
        ``x`` = alpha; ``objective`` = the dual objective 1/2 a'Qa - sum a (minimised);
        ``bound`` = -P(w(alpha), b) <= its minimum, ``gap`` = (objective - bound) / ``scale``,
        ``scale`` = sum_i C_i. ``extra`` holds ``b``, ``b_free_average``, ``n_sv``,
        ``max_violation``, ``dual_objective``, ``stopping_rule``, ``classes``, ``y`` (+-1),
        ``upper`` (C_i), ``decision_train`` (f on the training rows).
    """
    t0 = time.perf_counter()
    progress = Progress("smo", start=t0)
    f = "smo_svm"
    kernel = check_kernel(kernel, f)
    X = check_array(X, "X")
    n = X.shape[0]
    y_pm, classes = check_labels(y, n, numeric=False)
    C = check_positive(C, "C", f)
    tol = check_positive(tol, "tol", f)
    check_positive(cache_mb, "cache_mb", f)
    max_iter = check_int(max_iter, "max_iter", f)
    working_set = check_int(working_set, "working_set", f, low=2, none_ok=True)
    s = check_sample_weight(sample_weight, n)
    cw = class_weight_vector(check_class_weight(class_weight, classes), y_pm)
    a0 = None if alpha0 is None else check_vector(alpha0, n, "alpha0")
    upper_all = C * s * cw
    keep = upper_all > 0
    if np.unique(y_pm[keep]).size < 2:
        raise ValueError(
            "Only one class is left after removing zero-weight rows ('sample_weight')."
        )
    idx = np.flatnonzero(keep)
    Xk = X[np.ix_(idx, idx)] if kernel.name == "precomputed" else X[idx]
    yk = y_pm[idx]
    up = upper_all[idx]
    lo = np.zeros_like(up)
    start = np.zeros_like(up) if a0 is None else _feasible_warm_start(a0[idx], yk, up)
    qmat = make_qmatrix(Xk, yk, kernel, cache_mb)
    q = auto_working_set(qmat) if working_set is None else working_set
    build = time.perf_counter() - t0

    lin = -np.ones_like(up)
    q_max = float(np.max(qmat.diag(), initial=0.0))

    rounds_run: list[DualSolution] = []

    def run(prev: DualSolution | None, tol_: float, budget: int) -> DualSolution:
        a0, qa0 = (start, None) if prev is None else (prev.alpha, prev.qa)
        rounds_run.append(solve_dual(qmat, yk, lo, up, lin, alpha0=a0, qa0=qa0, tol=tol_,
                                     max_iter=budget, shrinking=shrinking,
                                     cache_dtype=cache_dtype, verbose=verbose,
                                     cache=None if prev is None else prev.cache,
                                     working_set=q, progress=progress,
                                     offset=sum(r.iterations for r in rounds_run),
                                     resume=prev is not None))
        return rounds_run[-1]

    def certificate(s: DualSolution) -> Certificate:
        b_ = svm_best_intercept(s.grad, yk, up)
        cert = Certificate.of(s.objective, s.objective - svm_gap(s.alpha, s.grad, yk, up, b_),
                              float(up.sum()), b_, float(s.alpha @ s.qa), q_max)
        progress.update(sum(r.iterations for r in rounds_run), s.objective, cert.gap,
                        violation=s.violation)
        return cert
    first = run(None, tol, max_iter)
    sol, cert, tol_met, rounds, iters = refine_loop(run, certificate, first, tol, max_iter, refine,
                                                    predict=True)
    progress.done(iters, sol.objective, cert.gap, violation=sol.violation)
    b = cert.b
    alpha = np.zeros(n)
    alpha[idx] = sol.alpha
    f_train = np.zeros(n)
    f_train[idx] = yk * sol.qa + b
    if (~keep).any():
        f_train[~keep] = _decision(X, y_pm, alpha, b, kernel, np.flatnonzero(~keep))
    term, status, note = certified_status(*termination_of(sol), cert)
    extra: dict[str, Any] = {
        "b": b,
        "b_free_average": free_average_b(sol.alpha, sol.grad, yk, lo, up, sol.m_up, sol.m_low),
        "stopping_rule": stopping_rule(sol.violation, tol_met, tol, rounds, cert),
        "n_sv": int(np.count_nonzero(alpha)),
        "max_violation": sol.violation,
        "dual_objective": sol.objective,
        "classes": classes,
        "y": y_pm,
        "upper": upper_all,
        "decision_train": f_train,
        "kernel_evals": sum(r.kernel_evals for r in rounds_run),
        "working_set": q,
        "history": joined_history(rounds_run),
        "min_curvature": min(r.min_curvature for r in rounds_run),
    }
    return SolveResult(
        termination=term,
        solution_status=status,
        objective=sol.objective,
        x=alpha,
        bound=cert.bound,
        gap=cert.gap,
        scale=cert.scale,
        iterations=iters,
        build_time=build,
        solve_time=time.perf_counter() - t0 - build,
        solver="smo",
        raw_status=f"violation {sol.violation:.3e} (tol {tol_met:.0e}) after {iters} "
        f"iterations, relative gap {cert.gap:.1e}{note}",
        strategy="smo",
        extra=extra,
    )


def _feasible_warm_start(a0: np.ndarray, y: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Clip to [0, C_i], then shrink the heavier class until y'alpha = 0."""
    a = np.clip(a0, 0.0, up)
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
    if pos > neg and pos > 0:
        a[y > 0] *= neg / pos
    elif neg > pos and neg > 0:
        a[y < 0] *= pos / neg
    return a


def _decision(X, y_pm, alpha, b, kernel, rows) -> np.ndarray:
    if kernel.name == "precomputed":
        return X[rows] @ (alpha * y_pm) + b
    return kernel_expansion(X, alpha * y_pm, b, kernel, X[rows])


def svm_decision_function(
    X_train: np.ndarray, y: np.ndarray, alpha: np.ndarray, b: float, kernel: Kernel | str,
    X_new: np.ndarray,
) -> np.ndarray:
    """f(x) = sum_{alpha_i > 0} alpha_i y_i k(x_i, x) + b (y in +-1 or the two labels)."""
    kernel = check_kernel(kernel, "svm_decision_function")
    X_new = check_array(X_new, "X_new")
    y_pm = y if set(np.unique(y)) <= {-1.0, 1.0} else check_labels(y, len(y), numeric=False)[0]
    return kernel_expansion(np.asarray(X_train, float), np.asarray(alpha) * y_pm, b, kernel, X_new)
