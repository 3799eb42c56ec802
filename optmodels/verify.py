"""How a result's objective and bound are checked before the certificate is applied
(``problem.solve(..., verify=...)``; issue 31).

A strategy reports an objective and a lower bound computed with its own arithmetic (SMO from the
gradient it updates, AID from its last aggregated LP). Before :func:`solvers.result.certify`
judges them, ``verify`` says who recomputes them:

- ``"independent"``: the problem recomputes both from the returned certificate arrays alone
  (:func:`reevaluate`): LAD's objective and the bound of its dual vector u, ridge's objective and
  gradient, the SVM's P(w, b) and D(alpha), KLR's f(alpha) and its primal bound. For the kernel
  duals this is a product with the n x n kernel, O(n^2 p).
- ``"auto"`` (the default): the same, except for a kernel dual that returned its decision values
  f on the training rows (SMO, block). There the products K v (v = alpha * y) are taken from
  f - b after an *audit*: on AUDIT_ROWS rows spread over the data, (K v)_i is recomputed from
  the kernel and must match f_i - b within AUDIT_TOL of the sum of |k_ij v_j| it adds up;
  then objective and bound are recomputed from (alpha, K v) by the problem's own formulas,
  O(AUDIT_ROWS n p). An audit that fails falls back to the full recomputation.
  On Dask data ``"auto"`` keeps the strategy's own evaluation (a recomputation is one more pass
  over the chunks); ``"independent"`` still recomputes.
- ``"strategy"``: the strategy's own numbers as they are.

``extra["verified"]`` records what was done ("independent", "audited", "strategy").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.result import SolveResult, stable_norm
from solvers.sparse import is_scipy_sparse

VERIFY_MODES = ("auto", "strategy", "independent")
AUDIT_ROWS = 64
"""Rows on which a kernel dual's decision values are recomputed by ``verify="auto"``."""
AUDIT_TOL = 1e-7
"""Largest accepted |f_i - b - (K v)_i| relative to 1 + sum_j |k_ij v_j| (the rounding of a
gradient updated over 10^6 steps stays near 1e-10 of that sum; a gap of 1e-6 of the objective
allows errors near 1e-6 in the margin)."""


def check_verify(verify: Any) -> None:
    """ValueError unless ``verify`` is one of VERIFY_MODES."""
    if not isinstance(verify, str) or verify not in VERIFY_MODES:
        raise ValueError(
            f"verify must be one of {', '.join(VERIFY_MODES)}; got {verify!r}. Use 'auto' (the "
            "default), 'independent' to recompute the certificate from the returned arrays, or "
            "'strategy' to keep the strategy's own numbers."
        )


def verify_result(problem: Any, res: SolveResult, mode: str) -> None:
    """Recompute ``res.objective`` and ``res.bound`` as ``mode`` says (module docstring)."""
    if problem.NAME == "klr" and res.x is not None:  # KLR's x is its alpha: name it so
        res.extra.setdefault("alpha", res.x)
    if res.x is None or mode == "strategy" or (mode == "auto" and problem.lazy):
        res.extra["verified"] = "strategy"
        return
    if mode == "auto":
        kv = audited_kernel_products(problem, res)
        if kv is not None:
            _from_kernel_products(problem, res, kv)
            res.extra["verified"] = "audited"
            return
    reevaluate(problem, res)
    res.extra["verified"] = "independent"


def _kernel_dual(problem: Any, res: SolveResult) -> tuple[np.ndarray, float, np.ndarray] | None:
    """(alpha, b, f) of a kernel dual that returned its decision values on every row."""
    if problem.NAME == "svm" and res.extra.get("form") != "dual":
        return None
    if problem.NAME not in ("svm", "klr") or problem.kernel == "linear":
        return None
    f, b = res.extra.get("decision_train"), res.extra.get("b")
    if f is None or b is None:
        return None
    alpha = _alpha_rows(problem, res)
    f = np.asarray(f, dtype=float)
    if f.shape != alpha.shape or not np.all(np.isfinite(f)):
        return None
    return alpha, float(b), f


def _alpha_rows(problem: Any, res: SolveResult) -> np.ndarray:
    """alpha on the problem's rows (KLR's results may hold every row given, ``kept_`` of it)."""
    alpha = np.asarray(res.extra.get("alpha", res.x), dtype=float)
    if problem.NAME == "klr" and alpha.shape[0] != problem.n:
        alpha = alpha[problem.kept_]
    return alpha


def audit_rows(n: int, m: int = AUDIT_ROWS) -> np.ndarray:
    """``m`` row indices spread evenly over ``0..n-1`` (all rows when n <= m): deterministic."""
    return np.unique(np.linspace(0, n - 1, min(m, n)).round().astype(int))


def audited_kernel_products(problem: Any, res: SolveResult) -> np.ndarray | None:
    """K v (v = alpha * y) taken from the returned decision values, f - b, after they matched
    the kernel's on :func:`audit_rows` (``extra["audit_error"]`` records the largest relative
    mismatch); None when the result has no decision values or the audit fails."""
    found = _kernel_dual(problem, res)
    if found is None:
        return None
    alpha, b, f = found
    v = alpha * problem.y
    rows = audit_rows(problem.n)
    K = problem.kernel_(problem._X[rows], problem._X)  # as kernel_matvec: any kernel kind
    K = K.toarray() if is_scipy_sparse(K) else np.asarray(K)
    exact = K @ v
    scale = 1.0 + np.abs(K) @ np.abs(v)
    error = float(np.max(np.abs(f[rows] - b - exact) / scale, initial=0.0))
    res.extra["audit_error"] = error
    return f - b if error <= AUDIT_TOL else None


def _from_kernel_products(problem: Any, res: SolveResult, kv: np.ndarray) -> None:
    """Objective and bound from alpha and K v, by the problem's formulas."""
    alpha, b = _alpha_rows(problem, res), float(res.extra["b"])
    if problem.NAME == "svm":
        res.objective = problem.kernel_primal_objective(alpha, b, kv)
        res.bound = problem.dual_bound_from(alpha, kv)
        res.extra["train_accuracy"] = problem.accuracy_of(kv + b)
    else:
        res.objective = problem.objective(alpha, kv)
        res.bound = problem.lower_bound(alpha, kv)[0]
        res.extra["train_accuracy"] = problem.accuracy_of(kv + b)
    res.extra["objective_source"] = "toolkit"
    res.extra["bound_source"] = "toolkit"


def reevaluate(problem: Any, res: SolveResult) -> SolveResult:
    """Objective and bound recomputed by the problem from the returned arrays alone (O(n^2 p)
    kernel products for the kernel problems, one of them): ``verify="independent"``."""
    if res.x is None:
        return res
    name = problem.NAME
    if name in ("svm", "klr") and (name == "klr" or res.extra.get("form") == "dual"):
        alpha = _alpha_rows(problem, res)
        _from_kernel_products(problem, res, problem.kernel_matvec(alpha * problem.y))
        if name == "klr" and res.extra.get("primal_intercept") is not None:
            # newton's (w, b): -P(w, b) bounds min f too (weak duality)
            w, b_primal = res.extra["w"], float(res.extra["primal_intercept"])
            res.bound = max(res.bound, -problem.linear_primal_objective(w, b_primal))
        return res
    constrained = getattr(problem, "coef_constraints", None) is not None
    # with constraints, D(alpha) and f - ||grad f||^2 / (2 alpha) bound only the unconstrained
    # optimum: the constrained QP's bound stays, which the full solve has the problem compute
    # (its Lagrangian dual function at the backend's multipliers), and a strategy computes itself
    kept = "toolkit" if res.strategy == "full" else "strategy"
    if name == "svm":
        res.objective = problem.primal_objective(res.x, float(res.extra["b"]))
        if constrained:
            res.extra["bound_source"] = kept
        elif res.extra.get("alpha") is not None:  # the dual vector the strategy returned
            res.bound = problem.dual_objective(problem.feasible_alpha(res.extra["alpha"]))
        else:
            res.extra["bound_source"] = "strategy"
    elif name == "lad":
        res.objective = problem.objective(res.x, res.extra.get("intercept", 0.0))
        if res.extra.get("dual_u") is not None and not problem.lazy and not constrained:
            # the full solve's u, or AID's disaggregated cluster duals (s_i v_k(i))
            res.bound = problem.dual_bound(res.extra["dual_u"])
        else:  # Dask data or constraints: the strategy's own bound
            res.extra["bound_source"] = "strategy"
    elif name == "ridge" and constrained:
        res.objective = problem.objective(res.x)
        res.extra["bound_source"] = kept
    elif name == "ridge":
        g = stable_norm(problem.gradient(res.x))
        res.objective = problem.objective(res.x)
        res.bound = problem.bound_from(res.objective, g)
        res.extra["gradient_norm"] = g  # the solution certificate's ||grad f(x)|| / alpha
    res.extra["objective_source"] = "toolkit"
    res.extra.setdefault("bound_source", "toolkit")
    return res
