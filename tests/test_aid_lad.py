"""AID for LAD against a monolithic LP solve (scipy linprog / HiGHS on the primal LP)."""

from __future__ import annotations

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import instances
from optmodels.lad import LAD
from solvers.aid import aid_lad, build_aggregated_lad
from solvers.aid.lad import dual_bound, lad_natural_scale
from solvers.result import CERTIFICATE_TOL, ROUNDOFF_TOL, SolutionStatus, TerminationCondition


def lad_reference(X, y, s=None, fit_intercept=True) -> float:
    """min sum s_i |y_i - x_i'beta - b| as the primal LP of docs/problems/lad.md."""
    n = X.shape[0]
    s = np.ones(n) if s is None else s
    A = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    q = A.shape[1]
    c = np.r_[np.zeros(q), s, s]
    A_eq = sp.hstack([sp.csr_matrix(A), sp.identity(n), -sp.identity(n)]).tocsr()
    bounds = [(None, None)] * q + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=A_eq, b_eq=y, bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def make_lad(seed, n=400, p=3, kind="plain"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.5 + rng.laplace(size=n)
    s = None
    if kind == "ties":
        X = np.round(X)
        y = np.round(y)
    elif kind == "duplicates":
        X[n // 2 :] = X[: n - n // 2]
        y[n // 2 :] = y[: n - n // 2]
    elif kind == "outliers":
        out = rng.random(n) < 0.1
        y[out] += rng.normal(scale=50.0, size=out.sum())
    elif kind == "weights":
        s = rng.uniform(0.1, 3.0, size=n)
    return X, y, s


def residuals(X, y, res, fit_intercept=True):
    b = res.extra["intercept"] if fit_intercept else 0.0
    return y - (X @ res.x if X.shape[1] else 0.0) - b


def assert_sign_pure(labels, r, tol):
    rows = labels >= 0
    lab, r = labels[rows], r[rows]
    K = lab.max() + 1
    pos = np.bincount(lab, weights=r > tol, minlength=K)
    neg = np.bincount(lab, weights=r < -tol, minlength=K)
    assert not np.any((pos > 0) & (neg > 0))


def assert_monotone(res):
    hist = res.extra["history"]
    F = np.array([h["F"] for h in hist])
    gap = np.array([h["gap"] for h in hist])
    scale = max(1.0, abs(res.objective))
    assert np.all(np.diff(F) >= -1e-9 * scale)
    assert np.all(np.diff(gap) <= 1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["plain", "ties", "duplicates", "outliers", "weights"])
@pytest.mark.parametrize("init", ["pk", "band", "quantile", "kmeans"])
def test_matches_monolithic(seed, kind, init):
    X, y, s = make_lad(seed, kind=kind)
    res = aid_lad(X, y, sample_weight=s, n_clusters=12, init=init, seed=seed)
    ref = lad_reference(X, y, s)
    assert res.termination is TerminationCondition.CERTIFIED
    assert res.solution_status is SolutionStatus.OPTIMAL and res.extra["certified"]
    assert res.objective == pytest.approx(ref, rel=1e-9)
    # the toolkit's own objective at the returned point
    w = np.ones(len(y)) if s is None else s
    assert float(w @ np.abs(residuals(X, y, res))) == pytest.approx(ref, rel=1e-9)
    assert res.bound == pytest.approx(ref, rel=1e-9)
    assert_monotone(res)
    assert_sign_pure(res.extra["labels"], residuals(X, y, res), 1e-9 * (1 + np.abs(y).max()))
    assert res.extra["n_clusters_final"] == res.extra["labels"].max() + 1


@pytest.mark.parametrize("quantile", [0.5, 0.8])
@pytest.mark.parametrize("kind", ["plain", "ties", "outliers", "weights"])
def test_margin_screening_matches_monolithic(monkeypatch, kind, quantile):
    """With screening forced on (any n), iterations skip clusters proven pure, yet the run is
    certified at the LP optimum and the last pass covers every row."""
    import solvers.aid.lad as lad_mod

    monkeypatch.setattr(lad_mod, "SCREEN_MIN_ROWS", 0)
    monkeypatch.setattr(lad_mod, "FULL_FRACTION", 1.0)
    X, y, s = make_lad(3, n=6000, p=4, kind=kind)
    res = aid_lad(X, y, sample_weight=s, n_clusters=8, quantile=quantile, split="sign",
                  init="band")  # the simplex path, which screens
    w = np.ones(len(y)) if s is None else s
    r = residuals(X, y, res)
    check = float(w @ np.where(r > 0, 2 * quantile * r, 2 * (quantile - 1) * r))
    if quantile == 0.5:
        assert res.objective == pytest.approx(lad_reference(X, y, s), rel=1e-9)
    assert res.termination is TerminationCondition.CERTIFIED
    assert check == pytest.approx(res.objective, rel=1e-12)
    assert res.bound == pytest.approx(res.objective, rel=1e-9)
    rows = [h["rows_evaluated"] for h in res.extra["history"]]
    assert rows[-1] == len(y)  # the certifying pass covers every row
    if kind != "ties":  # (rounded data: many rows sit on the hyperplane, no margin to prove)
        assert min(rows) < len(y)  # screened passes
    assert_monotone(res)
    assert_sign_pure(res.extra["labels"], r, 1e-9 * (1 + np.abs(y).max()))


def test_margin_screen_bound_is_safe():
    """Clusters the screen calls pure at new coefficients are pure there, with the recorded sign
    (checked on the rows themselves)."""
    from solvers.aid.screening import MarginScreen

    rng = np.random.default_rng(4)
    n, p, K = 5000, 3, 200
    X = rng.normal(size=(n, p))
    y = X @ np.ones(p) + rng.laplace(size=n)
    c0 = np.r_[np.ones(p), 0.0]
    r0 = y - X @ c0[:p] - c0[p]
    edges = np.r_[np.quantile(r0, np.linspace(0, 1, K)[1:-1]), 0.0]  # cut at 0: pure bins
    labels = np.searchsorted(np.sort(edges), r0)
    screen = MarginScreen(np.linalg.norm(X, axis=1), labels, K, p)
    mixed = screen.record(np.arange(K), labels, r0, c0, 0.0)
    assert not mixed.any()
    n_safe = 0
    for scale in [1e-3, 1e-2, 1e-1]:
        c = c0 + scale * rng.normal(size=p + 1)
        safe = screen.safe(c, 0.0)
        r = y - X @ c[:p] - c[p]
        for k in np.flatnonzero(safe):
            assert np.all(np.sign(r[labels == k]) == screen.sign[k])
        n_safe += int(safe.sum())
    assert 0 < n_safe < 3 * K  # the bound proves some clusters, not all


@pytest.mark.parametrize("fraction", [0.1, 0.6])  # the gathered and the CSC path
def test_subset_sums_equal_gathered_sums(fraction):
    from solvers.aid.aggregation import cluster_sums, subset_sums

    rng = np.random.default_rng(5)
    X, y, s = rng.normal(size=(300, 4)), rng.normal(size=300), rng.uniform(size=300)
    rows = np.flatnonzero(rng.random(300) < fraction)
    lab = rng.integers(0, 7, size=rows.shape[0])
    got = subset_sums(X, y, s, rows, lab, 7)
    ref = cluster_sums(X[rows], y[rows], s[rows], lab, 7)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)


def test_several_iterations_and_paper_split():
    X, y, _ = make_lad(5, n=3000, p=4, kind="outliers")
    res = aid_lad(X, y, n_clusters=8, init="quantile", split="sign")
    assert res.iterations >= 3
    assert res.objective == pytest.approx(lad_reference(X, y), rel=1e-9)
    assert_monotone(res)


def test_intercept_only_is_weighted_median():
    rng = np.random.default_rng(3)
    y = rng.standard_cauchy(501)
    res = aid_lad(np.zeros((501, 0)), y, n_clusters=5, init="quantile")
    assert res.is_optimal
    assert res.x.shape == (0,)
    assert res.extra["intercept"] == pytest.approx(np.median(y), abs=1e-12)
    assert res.objective == pytest.approx(np.abs(y - np.median(y)).sum(), rel=1e-12)


def test_without_intercept():
    X, y, _ = make_lad(4, kind="plain")
    res = aid_lad(X, y, fit_intercept=False, n_clusters=10)
    assert res.is_optimal and res.extra["intercept"] == 0.0
    assert res.objective == pytest.approx(lad_reference(X, y, fit_intercept=False), rel=1e-9)


@pytest.mark.parametrize("warm_start, sift", [(True, False), (False, False)])
def test_warm_start_and_sifting_off_same_answer(warm_start, sift):
    X, y, _ = make_lad(6, n=3000, p=5, kind="outliers")
    a = aid_lad(X, y, n_clusters=10, init="quantile")
    b = aid_lad(X, y, n_clusters=10, init="quantile", warm_start=warm_start, sift=sift)
    assert a.is_optimal and b.is_optimal
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert a.extra["history"][0]["F"] == pytest.approx(b.extra["history"][0]["F"], rel=1e-9)
    assert sum(h["fixed"] for h in a.extra["history"]) > 0  # sifting did fix columns


def test_iteration_cap():
    X, y, _ = make_lad(7, n=2000, kind="outliers")
    res = aid_lad(X, y, n_clusters=4, init="quantile", split="sign", max_iter=1)
    assert res.termination is TerminationCondition.ITERATION_LIMIT
    assert res.solution_status is SolutionStatus.FEASIBLE
    assert res.extra["certified"] is False and not res.is_optimal
    ref = lad_reference(X, y)
    assert res.bound <= ref * (1 + 1e-9) and res.objective >= ref * (1 - 1e-9)
    with pytest.raises(Exception, match="iteration_limit"):
        res.require_optimal()


def test_gap_limit_and_time_limit():
    X, y, _ = make_lad(8, n=2000, kind="outliers")
    res = aid_lad(X, y, n_clusters=4, init="quantile", split="sign", gap_tol=0.5)
    assert res.termination in (TerminationCondition.GAP_LIMIT, TerminationCondition.CERTIFIED)
    assert res.gap <= 0.5
    res = aid_lad(X, y, time_limit=1e-9)
    assert res.termination is TerminationCondition.TIME_LIMIT and not res.is_optimal


def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(9)
    X, y, _ = make_lad(9, n=60, kind="plain")
    k = rng.integers(0, 5, size=60)
    k[0] = 1
    a = aid_lad(X, y, sample_weight=k.astype(float), n_clusters=6)
    b = aid_lad(np.repeat(X, k, axis=0), np.repeat(y, k), n_clusters=6)
    assert a.is_optimal and b.is_optimal
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert np.all(a.extra["labels"][k == 0] == -1)


def test_dual_sign_convention():
    """HiGHS's row duals of max y'u s.t. X'u = 0, |u| <= 1 are +beta (not -beta)."""
    X, y, _ = make_lad(10, n=200, kind="plain")
    h = build_aggregated_lad(X, y, np.arange(200))
    h.run()
    beta = np.array(h.getSolution().row_dual)
    E = np.abs(y - X @ beta[:-1] - beta[-1]).sum()
    ref = lad_reference(X, y)
    assert E == pytest.approx(ref, rel=1e-9)
    assert h.getInfo().objective_function_value == pytest.approx(ref, rel=1e-9)
    assert np.abs(y + X @ beta[:-1] + beta[-1]).sum() > 1.5 * ref


def test_export_aggregated_model_round_trip(tmp_path):
    X, y, _ = make_lad(11, n=1500, kind="outliers")
    written = []

    def cb(it, highs, labels):
        path = tmp_path / f"agg{it}.mps"
        highs.writeModel(str(path))
        written.append((path, labels.max() + 1))

    res = aid_lad(X, y, n_clusters=6, init="quantile", callback=cb)
    assert res.is_optimal and len(written) == res.iterations >= 2
    for (path, K), hist in zip(written, res.extra["history"], strict=True):
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.readModel(str(path))
        assert h.getNumCol() == K == hist["clusters"]
        h.run()
        assert h.getInfo().objective_function_value == pytest.approx(hist["F"], rel=1e-9)
    h2 = build_aggregated_lad(X, y, res.extra["labels"])
    h2.run()
    assert h2.getInfo().objective_function_value == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(X=np.array([[np.nan], [1.0]])), "X"),
        (dict(X=np.ones(3)), "X"),
        (dict(y=np.ones(5)), "y"),
        (dict(y=np.array([1.0, np.inf, 0.0])), "y"),
        (dict(sample_weight=np.array([1.0, -1.0, 1.0])), "sample_weight"),
        (dict(sample_weight=np.zeros(3)), "sample_weight"),
        (dict(n_clusters=0), "n_clusters"),
        (dict(n_clusters=1.5), "n_clusters"),
        (dict(init="bogus"), "init"),
        (dict(init=np.array([0, 1])), "init"),
        (dict(max_iter=0), "max_iter"),
        (dict(gap_tol=-1.0), "gap_tol"),
        (dict(time_limit=0.0), "time_limit"),
        (dict(split="halves"), "split"),
        (dict(fit_intercept="yes"), "fit_intercept"),
    ],
)
def test_bad_input_names_argument(kwargs, name):
    args = dict(X=np.array([[0.0], [1.0], [2.0]]), y=np.array([0.0, 1.0, 3.0]))
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(ValueError, match=name):
        aid_lad(X, y, **args)


# ---- badly scaled data, certificates and bounds --------------------------------------------
def hostile_lad(case, seed, n=500, p=4):
    """A badly scaled LAD instance and ``(factor, X0, y0, s0)``: its optimum is ``factor`` times
    the optimum of the well-scaled (X0, y0, s0) (LAD is homogeneous in (y, s) and a column
    scale is absorbed by its coefficient)."""
    X0, y0, _, _ = instances.make_lad(n=n, p=p, seed=seed)
    s0 = np.ones(n)
    X, y, s, factor = X0.copy(), y0, s0, 1.0
    if case == "tiny_feature":
        X[:, 0] *= 1e-10
    elif case == "huge_feature":
        X[:, 1] *= 1e16
    elif case == "y_small":
        y, factor = y0 * 1e-10, 1e-10
    elif case == "y_large":
        y, factor = y0 * 1e10, 1e10
    elif case == "weights_small":
        s, factor = s0 * 1e-9, 1e-9
    return X, y, s, factor, (X0, y0, s0)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    "case", ["tiny_feature", "huge_feature", "y_small", "y_large", "weights_small"]
)
def test_badly_scaled_equals_full_optimum(case, seed):
    """AID on badly scaled data equals the optimum within 1e-7 of the natural scale and is
    certified, against both the well-scaled linprog reference and the monolithic LAD solve."""
    X, y, s, factor, (X0, y0, s0) = hostile_lad(case, seed)
    ref = factor * lad_reference(X0, y0, s0)
    problem = LAD(X, y, sample_weight=s)
    scale = problem.natural_scale()
    res = aid_lad(X, y, sample_weight=s, n_clusters=20, seed=seed)
    assert res.scale == pytest.approx(scale, rel=1e-12)
    # a bound is never above the optimum, an objective never below it
    assert res.bound <= ref + ROUNDOFF_TOL * scale
    assert res.objective >= ref - ROUNDOFF_TOL * scale
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert res.is_optimal and res.extra["certified"] and res.gap <= CERTIFICATE_TOL
    assert abs(res.objective - ref) <= 1e-7 * scale
    # the objective evaluated independently at the returned coefficients
    assert abs(problem.objective(res.x, res.extra["intercept"]) - ref) <= 1e-7 * scale
    full = problem.solve()
    if full.is_optimal:
        assert abs(res.objective - full.objective) <= 1e-7 * scale
    # through the strategy registry the certificate survives the problem-level check
    via = problem.solve("aid", n_clusters=20, seed=seed)
    assert via.is_optimal and abs(via.objective - ref) <= 1e-7 * scale


@pytest.mark.parametrize("seed", range(5))
def test_certified_bound_is_below_the_optimum(seed):
    """F <= the full optimum + round-off on every certified run, and on every iteration."""
    X, y, s = make_lad(seed, kind="weights" if seed % 2 else "outliers")
    ref = lad_reference(X, y, s)
    res = aid_lad(X, y, sample_weight=s, n_clusters=8, init="quantile", split="sign")
    assert res.termination is TerminationCondition.CERTIFIED
    tol = ROUNDOFF_TOL * res.scale
    assert res.bound <= ref + tol
    assert all(h["F"] <= ref + tol for h in res.extra["history"])
    assert res.gap == pytest.approx((res.objective - res.bound) / res.scale, abs=1e-15)


def test_dual_bound_is_valid_for_any_box_point():
    """The corrected bound of an arbitrary (infeasible) v in the box is below the optimum, and
    that of a slightly perturbed optimal v is within 1e-6 of it."""
    X, y, _ = make_lad(12, n=300, kind="outliers")
    A = np.column_stack([X, np.ones(300)])
    ref = lad_reference(X, y)
    rng = np.random.default_rng(0)
    abs_y = float(np.abs(y).sum())
    for _ in range(20):
        v = rng.uniform(-1.0, 1.0, size=300)
        assert dual_bound(A, y, v, abs_y) <= ref * (1 + 1e-12)
    h = build_aggregated_lad(X, y, np.arange(300))
    h.run()
    v = np.array(h.getSolution().col_value) + rng.normal(scale=1e-9, size=300)
    F = dual_bound(A, y, v, abs_y)
    assert ref - 1e-6 * ref <= F <= ref * (1 + 1e-12)
    assert float(y @ np.clip(v, -1, 1)) > F  # the uncorrected value is not a bound


def test_pure_clusters_with_a_gap_are_a_numerical_error(monkeypatch):
    """Sign purity without a gap within CERTIFICATE_TOL (here a bound made 1% weaker) is a
    NUMERICAL_ERROR, never certified."""
    import solvers.aid.lad as lad_mod

    X, y, _ = make_lad(13, kind="plain")
    exact = lad_mod.dual_bound
    monkeypatch.setattr(lad_mod, "dual_bound", lambda *a: exact(*a) - 0.01 * abs(exact(*a)))
    res = aid_lad(X, y, n_clusters=12)
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.FEASIBLE and not res.extra["certified"]
    assert "sign-pure" in res.raw_status and res.gap > CERTIFICATE_TOL
    assert res.objective == pytest.approx(lad_reference(X, y), rel=1e-9)


def test_solver_failure_is_a_subproblem_error(monkeypatch):
    """HiGHS's status goes through the backend's map: a kSolveError of the aggregated LP
    raises SubproblemError naming the status, the iteration and a hint; through the problem
    (run_strategy) it is a NUMERICAL_ERROR result without a solution carrying that message."""
    from solvers.aid import lad_lp
    from solvers.errors import SubproblemError
    from solvers.highs_backend import STATUS_MAP

    monkeypatch.setattr(lad_lp, "read_outcome", lambda h, q: lad_lp.LpOutcome(
        STATUS_MAP["kSolveError"], "kSolveError"))
    X, y, _ = make_lad(14, kind="plain")
    with pytest.raises(SubproblemError, match="kSolveError") as info:
        aid_lad(X, y, n_clusters=12, sift=False, init="band")  # (band: the simplex path)
    assert "iteration 1" in str(info.value) and "strategy='full'" in str(info.value)
    res = LAD(X, y).solve("aid", n_clusters=12, sift=False, init="band")
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.NO_SOLUTION and res.x is None
    assert "kSolveError" in res.raw_status and "iteration 1" in res.raw_status


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_natural_scale_matches_the_problem(fit_intercept):
    X, y, s = make_lad(15, kind="weights")
    expected = LAD(X, y, sample_weight=s, fit_intercept=fit_intercept).natural_scale()
    assert lad_natural_scale(y, s, fit_intercept) == pytest.approx(expected, rel=1e-12)
    res = aid_lad(X, y, sample_weight=s, fit_intercept=fit_intercept, n_clusters=10)
    assert res.scale == pytest.approx(expected, rel=1e-12)


def test_scaling_factors_are_powers_of_two_and_skip_good_data():
    X, y, _ = make_lad(16, kind="plain")
    res = aid_lad(X, y, n_clusters=10)
    sc = res.extra["scaling"]
    assert np.all(sc["X_columns"] == 1.0) and sc["y"] == 1.0 and sc["sample_weight"] == 1.0
    X[:, 2] *= 1e-12
    res = aid_lad(X, y * 1e8, sample_weight=np.full(len(y), 1e-7), n_clusters=10)
    sc = res.extra["scaling"]
    for f in [*sc["X_columns"], sc["y"], sc["sample_weight"]]:
        assert f == 2.0 ** np.round(np.log2(f))
    assert sc["X_columns"][2] > 1e11 and sc["y"] < 1e-7 and sc["sample_weight"] > 1e6
