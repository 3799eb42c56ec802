"""The strategy conformance suite (issue 31), in the style of MathOptInterface's Test.jl and of
``test_backends.py`` beside it: every registered (problem, strategy) pair runs on an instance in
its own regime and is compared with the full solve of the same problem; the outcome of every
pair is recorded in :data:`EXPECTED` and asserted exactly, so a new strategy fails the suite until
it is added there, and a change of outcome in either direction fails too.

Comparisons (stated once, used throughout):

* objective: ``|f - f_full| <= OBJ_TOL * scale`` with ``scale`` the problem's certificate scale
  (the natural scale; for the SVM and KLR ``min(natural, |objective|)``). Both results are
  certified within 1e-6 of the optimum, and both objectives lie above it, so they are within
  1e-6 of each other.
* solution, where the optimum is unique (ridge x; the SVM's and KLR's w, linear kernel):
  ``||x - x_full|| <= solution_bound + solution_bound_full`` (each a proven distance to x*), plus
  a round-off floor of ``ROUNDOFF * ||x_full||``. LAD's optimum is a vertex, unique on these
  continuous random data (not in general): there
  ``||beta - beta_full|| <= LAD_X_TOL ||beta_full||``.
* decision values over the training rows: within ``DECISION_TOL`` (SOLUTION_TOL, the solution
  rule's 1e-3) of the decision values' unit (the margin 1 of the SVM, one logit of KLR, the
  targets' root mean square for ridge, max |y| for LAD at LAD_X_TOL).

A strategy that only estimates (ridge's one-shot sketches: ``estimate``) or stops short is not
compared as if optimal: its own proven solution bound must still hold against the full solve, and
``require_optimal`` must raise.
"""

from __future__ import annotations

import numpy as np
import pytest

from instances import make_classification, make_lad
from instances.ridge import make_ridge
from optmodels import KLR, LAD, SVM, Ridge
from optmodels.strategies import strategies_for
from solvers.errors import SolveError
from solvers.result import SOLUTION_TOL

PROBLEMS = ("lad", "svm", "klr", "ridge")
OBJ_TOL = 1e-6
ROUNDOFF = 1e-9
LAD_X_TOL = 1e-6
DECISION_TOL = SOLUTION_TOL
OPTIMAL = {"optimal", "certified"}

# ----------------------------------------------------------------------------- the regime table
EXPECTED: dict[tuple[str, str], str] = {
    ("lad", "full"): "optimal",
    ("lad", "aid"): "certified",
    ("svm", "full"): "optimal",
    ("svm", "aid"): "certified",
    ("svm", "block"): "optimal",
    ("svm", "ipm"): "optimal",
    ("svm", "smo"): "optimal",
    ("svm", "newton"): "optimal",  # on the squared hinge (the loss it solves)
    ("klr", "full"): "optimal",
    ("klr", "block"): "optimal",
    ("klr", "newton"): "optimal",
    ("klr", "smo"): "optimal",
    ("ridge", "full"): "optimal",
    ("ridge", "fd"): "optimal",
    ("ridge", "rfd"): "optimal",
    ("ridge", "pcg-fd"): "optimal",
    ("ridge", "pcg-rfd"): "optimal",
    ("ridge", "ihs-gaussian"): "optimal",
    ("ridge", "ihs-sjlt"): "optimal",
    ("ridge", "single-gaussian"): "optimal",
    ("ridge", "single-sjlt"): "optimal",
    ("ridge", "fdrr"): "estimate",  # one-shot sketched closed forms: estimates by design
    ("ridge", "rfdrr"): "estimate",
    ("ridge", "classical-gaussian"): "estimate",
    ("ridge", "classical-sjlt"): "estimate",
    ("ridge", "hessian-gaussian"): "estimate",
    ("ridge", "hessian-sjlt"): "estimate",
}
"""(problem, strategy) -> the termination it reaches on its regime instance (:func:`regime`)."""

RIDGE_ITERATIVE = {"fd", "rfd", "ihs-gaussian", "ihs-sjlt", "single-gaussian", "single-sjlt",
                   "pcg-fd", "pcg-rfd"}
SLOW_PAIRS: set[tuple[str, str]] = set()  # none: klr-block, the slowest, takes ~2 s


def registry_pairs() -> list[tuple[str, str]]:
    return [(p, s) for p in PROBLEMS for s in strategies_for(p)]


def test_every_registered_pair_has_a_recorded_outcome():
    """A strategy added to the registry fails here until its outcome is recorded."""
    missing = sorted(set(registry_pairs()) - set(EXPECTED))
    stale = sorted(set(EXPECTED) - set(registry_pairs()))
    assert not missing, f"add these (problem, strategy) pairs to EXPECTED: {missing}"
    assert not stale, f"EXPECTED names pairs the registry no longer has: {stale}"


# ----------------------------------------------------------------------------- instances
_CACHE: dict = {}


def regime(problem: str, strategy: str):
    """(problem instance, training rows, strategy options) in the strategy's own regime.

    LAD: 400 x 4, AID from 20 band clusters (it ends below n/5 = 80 clusters). SVM: 400 x 3,
    C = 1, linear hinge (newton: the squared hinge it solves); AID from 10 clusters. KLR:
    100 x 3, C = 1, linear kernel (block's CVXPY subproblems are slow). Ridge: 2000 x 60 of
    effective rank 6 (make_ridge r = 0.1), alpha = 500 above the sketches' error, sketch size
    m = 40 (single-sjlt: m = 60, its one sparse sketch at m = 40 contracts too slowly),
    max_iter = 100 for the iterative sketches."""
    key = (problem, strategy if (problem, strategy) == ("svm", "newton") else "")
    if key not in _CACHE:
        if problem == "lad":
            X, y, _, _ = make_lad(n=400, p=4, seed=0)
            _CACHE[key] = (LAD(X, y), X)
        elif problem == "svm":
            X, y = make_classification(n=400, p=3, seed=0)[:2]
            loss = "squared_hinge" if strategy == "newton" else "hinge"
            _CACHE[key] = (SVM(X, y, C=1.0, loss=loss), X)
        elif problem == "klr":
            X, y = make_classification(n=100, p=3, seed=0)[:2]
            _CACHE[key] = (KLR(X, y, C=1.0, kernel="linear"), X)
        else:
            A, b, _ = make_ridge(n=2000, d=60, r=0.1, seed=0)
            _CACHE[key] = (Ridge(A, b, alpha=500.0), A)
    prob, X = _CACHE[key]
    options: dict = {}
    if strategy == "aid":
        options = {"n_clusters": 20, "init": "band"} if problem == "lad" else {"n_clusters": 10}
    if problem == "ridge" and strategy != "full":
        options["m"] = 60 if strategy == "single-sjlt" else 40
        if strategy in RIDGE_ITERATIVE:
            options["max_iter"] = 100
    return prob, X, options


def full_of(prob):
    key = ("full", id(prob))
    if key not in _CACHE:
        _CACHE[key] = prob.solve()
    return _CACHE[key]


# ----------------------------------------------------------------------------- comparisons
def coef(res) -> np.ndarray | None:
    """The unique part of the solution: ridge x, LAD beta, the SVM's / KLR's w (linear)."""
    sol = res.solution
    if sol is None:
        return None
    return sol.coef if hasattr(sol, "coef") else sol.linear().coef


def decision_unit(prob) -> float:
    if isinstance(prob, Ridge):
        return float(np.sqrt(np.mean(np.asarray(prob.b, float) ** 2)))
    if isinstance(prob, LAD):
        return float(np.max(np.abs(prob.y)))
    return 1.0


def scale_of(prob, res) -> float:
    return float(prob.certificate_scale(res))


def assert_matches(prob, X, res, ref, *, decisions: bool = True, solution: bool = True):
    """``res`` (claimed optimal) agrees with ``ref`` on objective, solution and decisions."""
    scale = min(scale_of(prob, res), scale_of(prob, ref))
    assert abs(res.objective - ref.objective) <= OBJ_TOL * scale, (
        f"{res.strategy}: objective {res.objective!r} vs {ref.objective!r} (scale {scale:.3g})")
    x, xr = coef(res), coef(ref)
    if solution:
        dist = np.linalg.norm(x - xr)
        if isinstance(prob, LAD):
            assert dist <= LAD_X_TOL * np.linalg.norm(xr), dist
        else:
            bound = res.solution_bound + ref.solution_bound + ROUNDOFF * np.linalg.norm(xr)
            assert dist <= bound, f"||x - x_ref|| = {dist:.3g} above the proven {bound:.3g}"
    if decisions:
        f, fr = res.solution.decision_function(X), ref.solution.decision_function(X)
        tol = (LAD_X_TOL if isinstance(prob, LAD) else DECISION_TOL) * decision_unit(prob)
        assert np.max(np.abs(f - fr)) <= tol, np.max(np.abs(f - fr))


def assert_not_optimal_but_honest(prob, res, ref):
    """A result that does not claim optimality: require_optimal raises, and where it returns a
    point its proven solution bound still holds against the reference optimum."""
    assert not res.is_optimal
    with pytest.raises(SolveError):
        res.require_optimal()
    if res.x is not None and res.solution_bound is not None and ref.solution_bound is not None:
        dist = np.linalg.norm(coef(res) - coef(ref))
        assert dist <= res.solution_bound + ref.solution_bound + ROUNDOFF * np.linalg.norm(
            coef(ref)), (dist, res.solution_bound)
        scale = scale_of(prob, ref)
        assert res.objective >= ref.objective - OBJ_TOL * scale  # a point, never below f*


def _pair_params():
    out = []
    for pair in registry_pairs():
        marks = [pytest.mark.slow] if pair in SLOW_PAIRS else []
        out.append(pytest.param(*pair, marks=marks, id="-".join(pair)))
    return out


@pytest.mark.parametrize("problem, strategy", _pair_params())
def test_strategy_in_its_regime_matches_the_full_solve(problem, strategy):
    assert (problem, strategy) in EXPECTED, f"record the outcome of {(problem, strategy)}"
    prob, X, options = regime(problem, strategy)
    full = full_of(prob)
    assert full.termination.value == "optimal", full.raw_status
    res = prob.solve(strategy, **options)
    assert res.termination.value == EXPECTED[problem, strategy], res.raw_status
    if strategy == "aid":  # AID in its regime: the aggregation was used
        assert res.extra["n_clusters_final"] < prob.n / 5, res.extra["n_clusters_final"]
    if EXPECTED[problem, strategy] in OPTIMAL:
        assert res.is_optimal and res.require_optimal() is res
        assert res.solution_unique is (None if problem == "lad" else True)
        assert_matches(prob, X, res, full)
    else:
        assert_not_optimal_but_honest(prob, res, full)
