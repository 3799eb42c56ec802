"""AID for weighted LAD regression: aggregate, solve, disaggregate, with a proof of optimality.

Problem (formulations.md section 1; paper "An Aggregate and Iterative Disaggregate Algorithm
with Proven Optimality in Machine Learning", problem (2)):

    min_{beta, b}  sum_i s_i |y_i - x_i' beta - b|

Iteration t on clusters C^t (paper symbols: x^t_k, y^t_k -> xbar_k, ybar_k; |C^t_k| -> W_k):

* F^t = min sum_k W_k |ybar_k - xbar_k' beta - b|, solved as the LP dual of
  :mod:`solvers.aid.lad_lp`; a lower bound on the optimum (Jensen / triangle inequality).
* E^t = sum_i s_i |r_i| at the aggregated solution, an upper bound; E_best = min_t E^t.
* gap = (E_best - F^t) / E_best, non-increasing.
* A cluster with residuals of both signs splits into {r > 0} and {r <= 0}.  When no cluster
  splits, F^t = E^t and (beta, b) is optimal: termination CERTIFIED.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import highspy
import numpy as np

from solvers.aid.aggregation import Aggregate, aggregate, mixed_clusters, split_mixed
from solvers.aid.clustering import LAD_METHODS, lad_clusters
from solvers.aid.lad_lp import AggregatedLadLP, SiftedLadLP, lad_dual_lp, new_highs
from solvers.aid.validation import (
    check_choice,
    check_matrix,
    check_max_iter,
    check_n_clusters,
    check_nonnegative,
    check_positive,
    check_vector,
    check_weights,
)
from solvers.result import SolutionStatus, SolveResult, TerminationCondition, relative_gap

DEFAULT_LAD_CLUSTERS = 1000
SPLIT_RULES = ("refine", "sign")


def aid_lad(
    X: np.ndarray,
    y: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    fit_intercept: bool = True,
    n_clusters: int | float = DEFAULT_LAD_CLUSTERS,
    init: str | np.ndarray = "band",
    gap_tol: float = 0.0,
    max_iter: int = 100,
    time_limit: float | None = None,
    warm_start: bool = True,
    split: str = "refine",
    sift: bool = True,
    zero_tol: float = 1e-9,
    callback: Callable[[int, highspy.Highs, np.ndarray], None] | None = None,
    verbose: bool = False,
    seed: int = 0,
) -> SolveResult:
    """Solve weighted LAD regression exactly by AID.

    Parameters
    ----------
    X : (n, p) array
        Features x_i (p may be 0 with ``fit_intercept=True``: the weighted median).
    y : (n,) array
        Targets y_i.
    sample_weight : (n,) array, optional
        s_i >= 0 (default 1); rows of weight 0 are dropped (their label is -1).
    fit_intercept : bool
        Add the intercept b (a column of ones).
    n_clusters : int or float
        |K^0|, the initial number of clusters (a float in (0, 1] is a fraction of n).
    init : {"band", "quantile", "kmeans"} or (n,) int array
        Initial clustering, see :func:`solvers.aid.clustering.lad_clusters`, or the labels of
        your own clustering (one int per row).
    gap_tol : float
        Stop with GAP_LIMIT once (E_best - F) / E_best <= gap_tol (0: run to the certificate).
    max_iter, time_limit : int, float or None
        Limits; hitting one gives ITERATION_LIMIT / TIME_LIMIT and a FEASIBLE solution.
    warm_start : bool
        Keep the HiGHS model and basis between iterations (append split clusters as columns).
    split : {"refine", "sign"}
        "sign": a mixed cluster splits into {r > 0} and {r <= 0} (the paper's rule);
        "refine": each of the two halves is halved again at its mean |r|, which isolates the
        rows near the hyperplane in fewer iterations (any refinement keeps AID exact).
    sift : bool
        With ``warm_start``: fix the columns of pure clusters that sit at a bound, so the
        simplex prices only the clusters near the hyperplane; a fixed column whose reduced
        cost turns wrong is freed and the LP re-run, so each F^t is still the exact optimum.
    zero_tol : float
        Residuals with |r_i| <= zero_tol * (1 + max|y|) count as zero (fit either sign), so
        rows on the hyperplane do not split forever on rounding noise.  The certificate is then
        exact up to 2 * zero_tol * (1 + max|y|) * sum(s).
    callback : callable, optional
        ``callback(iteration, highs, labels)`` after each aggregated solve; ``highs`` is a fresh,
        unsolved HiGHS model of that iteration's whole aggregated LP (the solver itself may
        hold a sifted restriction of it), e.g. to write it with ``highs.writeModel("agg.mps")``
        or ``"agg.lp"``.
    verbose : bool
        Print iteration, clusters, F, E, gap.
    seed : int
        Seed of the subsample used by the initial clustering.

    Returns
    -------
    SolveResult
        ``x`` = beta, ``objective`` = E_best, ``bound`` = F, ``gap`` = the toolkit's
        (E - F) / max(1, |E|); ``extra``: intercept, certified, E_best, F, gap (AID's
        (E_best - F) / E_best), history (per iteration: iteration, clusters, F, E, E_best, gap,
        mixed, lp_time, lp_iterations, sift_rounds, fixed, time), n_clusters_final, labels
        (the final cluster of each row, -1 for rows of weight 0), lp_time.
    """
    t0 = time.perf_counter()
    X = check_matrix(X, "X", allow_no_columns=fit_intercept)
    n, p = X.shape
    y = check_vector(y, n, "y")
    s = check_weights(sample_weight, n)
    K0 = check_n_clusters(n_clusters, n)
    if not isinstance(init, str):
        init = _check_init_labels(init, n)
    else:
        init = check_choice(init, "init", LAD_METHODS)
    gap_tol = check_nonnegative(gap_tol, "gap_tol")
    max_iter = check_max_iter(max_iter)
    time_limit = check_positive(time_limit, "time_limit", allow_none=True)
    zero_tol = check_nonnegative(zero_tol, "zero_tol")
    split = check_choice(split, "split", SPLIT_RULES)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise ValueError(f"'fit_intercept' must be True or False; got {fit_intercept!r}.")

    keep = None
    if np.any(s == 0):
        keep = np.flatnonzero(s > 0)
        X, y, s = X[keep], y[keep], s[keep]
    if isinstance(init, str):
        labels0 = lad_clusters(X, y, s, K0, method=init, fit_intercept=fit_intercept, seed=seed)
    else:
        labels0 = init if keep is None else init[keep]
    agg = aggregate(X, y, s, labels0)
    tol = zero_tol * (1.0 + float(np.max(np.abs(y))))
    state = _run(X, y, s, agg, fit_intercept, gap_tol, max_iter, time_limit, warm_start, tol,
                 callback, verbose, t0, split == "refine", sift)
    return _result(state, agg, keep, n, p, fit_intercept, t0)


def build_aggregated_lad(
    X: np.ndarray,
    y: np.ndarray,
    labels: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    fit_intercept: bool = True,
) -> highspy.Highs:
    """The aggregated LAD LP (dual form) of a clustering as a HiGHS model, ready to run or write.

    ``labels`` is one cluster id per row (e.g. ``result.extra["labels"]``; rows labelled -1 are
    left out).  Write it with ``h.writeModel("agg.mps")`` or ``"agg.lp"``.
    """
    X = check_matrix(X, "X", allow_no_columns=fit_intercept)
    n = X.shape[0]
    y = check_vector(y, n, "y")
    s = check_weights(sample_weight, n)
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"'labels' must have one entry per row of X ({n}); got {labels.shape}.")
    rows = np.flatnonzero(labels >= 0)
    agg = aggregate(X[rows], y[rows], s[rows], labels[rows])
    h = new_highs()
    h.passModel(lad_dual_lp(_with_intercept(agg, fit_intercept), agg.SY))
    return h


def _check_init_labels(init: object, n: int) -> np.ndarray:
    lab = np.asarray(init)
    if lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(
            f"'init' must be a method name or an int array of one cluster label per row ({n}); "
            f"got {type(init).__name__} of shape {getattr(lab, 'shape', None)}."
        )
    return lab.astype(np.int64)


def _with_intercept(agg: Aggregate, fit_intercept: bool) -> np.ndarray:
    return np.column_stack([agg.SX, agg.W]) if fit_intercept else agg.SX


def _fix_settled(lp: SiftedLadLP, mixed: np.ndarray, v: np.ndarray, coef: np.ndarray) -> None:
    """Fix the pure clusters sitting at a bound (|v_k| = 1) with a strict reduced cost.

    They are the rows far from the hyperplane; the next LP prices only the rest (sifting).
    """
    K = mixed.shape[0]
    cand = np.flatnonzero(~mixed & ~lp.fixed[:K] & (np.abs(v[:K]) == 1.0))
    if lp.status is not None:
        cand = cand[lp.status[cand] != 1]
    if cand.shape[0] == 0:
        return
    d = lp.SY[cand] - lp.SXa[cand] @ coef
    sigma = v[cand]
    ok = d * sigma > 1e-9 * (1.0 + np.abs(lp.SY[cand]))
    lp.fix(cand[ok], sigma[ok])


def _run(X, y, s, agg, fit_intercept, gap_tol, max_iter, time_limit, warm_start, tol,
         callback, verbose, t0, refine, sift) -> dict[str, Any]:
    p = X.shape[1]
    if warm_start and sift:
        lp = SiftedLadLP(_with_intercept(agg, fit_intercept), agg.SY)
    else:
        lp = AggregatedLadLP(_with_intercept(agg, fit_intercept), agg.SY)
    st: dict[str, Any] = dict(history=[], E_best=np.inf, F=-np.inf, best=None, lp_time=0.0,
                              termination=TerminationCondition.ITERATION_LIMIT, raw="")
    for it in range(1, max_iter + 1):
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if remaining is not None and remaining <= 0:
            st["termination"] = TerminationCondition.TIME_LIMIT
            break
        t_lp = time.perf_counter()
        status, F, coef, v = lp.solve(remaining)
        t_lp = time.perf_counter() - t_lp
        st["lp_time"] += t_lp
        st["raw"] = status
        if status != "Optimal":
            st["termination"] = (TerminationCondition.TIME_LIMIT if status == "Time limit reached"
                                 else TerminationCondition.NUMERICAL_ERROR)
            break
        if callback is not None:
            model = new_highs()
            model.passModel(lad_dual_lp(_with_intercept(agg, fit_intercept), agg.SY))
            callback(it, model, agg.labels)
        beta, b = coef[:p], (coef[p] if fit_intercept else 0.0)
        r = y - X @ beta - b if p else y - b
        E = float(s @ np.abs(r))
        st["F"] = max(st["F"], F)  # F^t is non-decreasing in exact arithmetic
        if E < st["E_best"]:
            st["E_best"], st["best"] = E, (beta.copy(), b)
        gap = (st["E_best"] - st["F"]) / st["E_best"] if st["E_best"] > 0 else 0.0
        gap = max(gap, 0.0)
        mixed = mixed_clusters(agg.labels, agg.n_clusters, r, tol)
        n_mixed = int(mixed.sum())
        st["history"].append(dict(iteration=it, clusters=agg.n_clusters, F=F, E=E,
                                  E_best=st["E_best"], gap=gap, mixed=n_mixed, lp_time=t_lp,
                                  lp_iterations=lp.simplex_iterations(),
                                  sift_rounds=getattr(lp, "sift_rounds", 0),
                                  fixed=int(getattr(lp, "fixed", np.zeros(0)).sum()),
                                  time=time.perf_counter() - t0))
        if verbose:
            print(f"AID-LAD it {it:3d}  clusters {agg.n_clusters:8d}  mixed {n_mixed:7d}  "
                  f"F {F:.10g}  E {E:.10g}  gap {gap:.3e}  lp {t_lp:.2f}s  "
                  f"t {time.perf_counter() - t0:.2f}s")
        if n_mixed == 0:
            st["termination"] = TerminationCondition.CERTIFIED
            st["best"] = (beta.copy(), b)  # the certified point itself
            st["E_best"] = E
            break
        if gap <= gap_tol:
            st["termination"] = TerminationCondition.GAP_LIMIT
            break
        if it == max_iter:
            break
        old_ids, new_ids = split_mixed(agg, X, y, s, mixed, r, refine=refine)
        if warm_start:
            if sift:
                _fix_settled(lp, mixed, v, coef)
            lp.split(old_ids, new_ids, _with_intercept(agg, fit_intercept), agg.SY, coef)

        else:
            lp.rebuild(_with_intercept(agg, fit_intercept), agg.SY)
    st["iterations"] = len(st["history"])
    return st


def _result(st, agg, keep, n, p, fit_intercept, t0) -> SolveResult:
    certified = st["termination"] is TerminationCondition.CERTIFIED
    best = st["best"]
    if best is None:
        return SolveResult(termination=st["termination"],
                           solution_status=SolutionStatus.NO_SOLUTION,
                           iterations=st["iterations"], solve_time=time.perf_counter() - t0,
                           solver="highs", solver_version=_highs_version(), raw_status=st["raw"],
                           strategy="aid", extra=dict(certified=False, history=st["history"]))
    labels = agg.labels
    if keep is not None:
        full = np.full(n, -1, dtype=np.int64)
        full[keep] = labels
        labels = full
    E, F = st["E_best"], st["F"]
    gap = max((E - F) / E, 0.0) if E > 0 else 0.0
    return SolveResult(
        termination=st["termination"],
        solution_status=SolutionStatus.OPTIMAL if certified else SolutionStatus.FEASIBLE,
        objective=E,
        x=best[0],
        bound=F,
        gap=relative_gap(E, F, None),
        iterations=st["iterations"],
        solve_time=time.perf_counter() - t0,
        solver="highs",
        solver_version=_highs_version(),
        raw_status=st["raw"],
        strategy="aid",
        extra=dict(intercept=float(best[1]) if fit_intercept else 0.0, certified=certified,
                   E_best=E, F=F, gap=gap, history=st["history"],
                   n_clusters_final=agg.n_clusters, labels=labels, lp_time=st["lp_time"]),
    )


def _highs_version() -> str:
    h = highspy.Highs
    try:
        return f"{h().versionMajor()}.{h().versionMinor()}.{h().versionPatch()}"
    except Exception:  # pragma: no cover - version query is cosmetic
        return ""
