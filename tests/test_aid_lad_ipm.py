"""The Frisch-Newton interior point of AID-LAD (solvers/aid/fn_lp.py), the "near" split and the
Portnoy-Koenker start, each against an independent reference (HiGHS on the same LP, linprog on
the full LAD, the in-memory sums)."""

from __future__ import annotations

import highspy
import numpy as np
import pytest
from test_aid_lad import assert_sign_pure, lad_reference, make_lad, residuals

from solvers.aid import aid_lad
from solvers.aid.aggregation import aggregate, mixed_clusters, split_near
from solvers.aid.clustering import pk_start
from solvers.aid.fn_lp import IpmLadLP, frisch_newton
from solvers.aid.lad import dual_bound
from solvers.aid.lad_lp import lad_dual_lp, new_highs, quantile_box
from solvers.result import SolutionStatus, TerminationCondition


def highs_lp(SXa, SY, box):
    """(objective, beta) of max SY'v s.t. SXa'v = 0, v in box, by HiGHS's simplex."""
    h = new_highs()
    h.passModel(lad_dual_lp(SXa, SY, box))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value, np.array(h.getSolution().row_dual)


def random_aggregate(seed, n=3000, p=4, K=300, weights=False):
    X, y, s = make_lad(seed, n=n, p=p, kind="weights" if weights else "plain")
    s = np.ones(n) if s is None else s
    labels = np.random.default_rng(seed).integers(0, K, size=n)
    agg = aggregate(X, y, s, labels)
    return np.column_stack([agg.SX, agg.W]), agg.SY, X, y, s


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("quantile", [0.5, 0.2, 0.9])
def test_interior_point_matches_highs_on_the_aggregated_lp(seed, quantile):
    SXa, SY, _, y, s = random_aggregate(seed, weights=seed % 2 == 1)
    box = quantile_box(quantile)
    ref, beta_ref = highs_lp(SXa, SY, box)
    out = IpmLadLP(SXa, SY, box=box).solve()
    assert out.termination is TerminationCondition.OPTIMAL
    lo, hi = box
    assert np.all((out.v >= lo) & (out.v <= hi))
    assert float(SY @ out.v) == pytest.approx(ref, rel=1e-9)
    # beta: the primal value sum_k rho(SY_k - SXa_k beta) equals the optimum
    r = SY - SXa @ out.coef
    primal = float(np.sum(np.where(r > 0, hi * r, lo * r)))
    assert primal == pytest.approx(ref, rel=1e-9)
    # the proven bound of AID from this v is below the optimum and close to it
    F = dual_bound(SXa, SY, out.v, float(s @ np.abs(y)), box)
    assert F <= ref * (1 + 1e-12) and F == pytest.approx(ref, rel=1e-8)


def test_interior_point_reports_no_convergence():
    SXa, SY, *_ = random_aggregate(7)
    x, y, its, ok = frisch_newton(SXa, -SY, 0.5 * SXa.sum(axis=0), 0.5, max_iter=3)
    assert not ok and its == 3
    out = IpmLadLP(SXa, SY, max_iter=3, fallback=False).solve()
    assert out.termination is TerminationCondition.NUMERICAL_ERROR and out.coef is None
    assert "Frisch-Newton" in out.raw
    lp = IpmLadLP(SXa, SY, max_iter=3)  # with the simplex fallback: the exact optimum
    out = lp.solve()
    ref, _ = highs_lp(SXa, SY, (-1.0, 1.0))
    assert out.termination is TerminationCondition.OPTIMAL and lp.fallbacks == 1
    assert float(SY @ out.v) == pytest.approx(ref, rel=1e-12)
    assert "HiGHS simplex" in out.raw


def test_sifted_resolve_equals_a_cold_solve():
    """After a split, the columns far from the last hyperplane are fixed at their bounds; the
    answer must still be the optimum of the whole aggregated LP (HiGHS, cold)."""
    X, y, s = make_lad(3, n=5000, p=3)
    s = np.ones(len(y)) if s is None else s
    labels = np.arange(len(y)) % 400
    agg = aggregate(X, y, s, labels)
    lp = IpmLadLP(np.column_stack([agg.SX, agg.W]), agg.SY)
    first = lp.solve()
    r = y - X @ first.coef[:3] - first.coef[3]
    mixed = mixed_clusters(agg.labels, agg.n_clusters, r, 1e-9)
    assert mixed.any()
    old, new = split_near(agg, X, y, s, mixed, r)
    SXa = np.column_stack([agg.SX, agg.W])
    lp.split(old, new, SXa, agg.SY, first.coef)
    out = lp.solve()
    ref, _ = highs_lp(SXa, agg.SY, (-1.0, 1.0))
    assert out.termination is TerminationCondition.OPTIMAL
    assert float(agg.SY @ out.v) == pytest.approx(ref, rel=1e-9)
    assert np.abs(SXa.T @ out.v).max() <= 1e-7 * np.abs(SXa).sum(axis=0).max()


def test_sifting_frees_a_wrongly_fixed_column():
    """A fixed column whose reduced cost turns wrong at the new beta is freed and re-solved."""
    SXa, SY, *_ = random_aggregate(5, K=200)
    lp = IpmLadLP(SXa, SY, free_share=0.05)
    lp.solve()
    lp.beta = lp.beta + 0.5  # a poor previous beta: many fixed bounds are wrong
    out = lp.solve()
    ref, _ = highs_lp(SXa, SY, (-1.0, 1.0))
    assert lp.sift_rounds >= 1
    assert float(SY @ out.v) == pytest.approx(ref, rel=1e-9)


def test_split_near_makes_misfits_singletons_and_keeps_the_sums():
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 2))
    y = rng.normal(size=n)
    s = rng.uniform(0.5, 2.0, size=n)
    labels = np.zeros(n, dtype=np.int64)
    labels[n // 2:] = 1
    agg = aggregate(X, y, s, labels)
    r = np.where(np.arange(n) < n // 2, 1.0, -1.0) * rng.uniform(0.1, 1.0, size=n)
    r[:5] = -rng.uniform(0.01, 0.05, size=5)  # five misfits in cluster 0
    mixed = mixed_clusters(agg.labels, agg.n_clusters, r, 1e-12)
    assert mixed.tolist() == [True, False]
    old, new = split_near(agg, X, y, s, mixed, r)
    assert old.tolist() == [0] and new.shape[0] == 5
    sizes = np.bincount(agg.labels)
    assert np.all(sizes[new] == 1)
    assert not mixed_clusters(agg.labels, agg.n_clusters, r, 1e-12).any()  # all pure now
    ref = aggregate(X, y, s, agg.labels)
    np.testing.assert_allclose(agg.SX, ref.SX, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(agg.SY, ref.SY, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(agg.W, ref.W, rtol=1e-12)


def test_split_near_falls_back_to_the_four_way_split():
    """When most of a cluster would become singletons it is split 4-way instead."""
    rng = np.random.default_rng(1)
    n = 400
    X, y, s = rng.normal(size=(n, 2)), rng.normal(size=n), np.ones(n)
    agg = aggregate(X, y, s, np.zeros(n, dtype=np.int64))
    r = rng.normal(size=n)  # half of each sign
    mixed = mixed_clusters(agg.labels, 1, r, 1e-12)
    split_near(agg, X, y, s, mixed, r)
    assert agg.n_clusters == 4 and not mixed_clusters(agg.labels, 4, r, 1e-12).any()


@pytest.mark.parametrize("quantile", [0.5, 0.75])
def test_pk_start_has_a_band_of_singletons_and_two_globs(quantile):
    X, y, s = make_lad(2, n=20000, p=3)
    s = np.ones(len(y))
    lab = pk_start(X, y, s, True, quantile, np.random.default_rng(0))[0]
    sizes = np.bincount(lab)
    m = int(np.sqrt(4) * 20000 ** (2 / 3))
    assert (sizes > 1).sum() == 2 and sizes.max() < 20000 - 0.5 * m
    assert abs((sizes == 1).sum() - 0.8 * m) <= 2
    # the globs lie below and above the band (by the subsample fit's ranking)


@pytest.mark.parametrize("kind", ["plain", "outliers", "weights", "ties"])
@pytest.mark.parametrize("quantile", [0.5, 0.3])
def test_default_path_certified_at_the_simplex_optimum(kind, quantile):
    """The default (pk start, interior point, near split) at a size where pk's band is a
    small part of the rows, against the simplex path of AID (tested against linprog in
    tests/test_aid_lad.py) and the objective recomputed from the coefficients."""
    X, y, s = make_lad(11, n=30000, p=5, kind=kind)
    res = aid_lad(X, y, sample_weight=s, quantile=quantile)
    simplex = aid_lad(X, y, sample_weight=s, quantile=quantile, init="band")
    assert res.termination is TerminationCondition.CERTIFIED, res.raw_status
    assert res.solution_status is SolutionStatus.OPTIMAL
    assert simplex.termination is TerminationCondition.CERTIFIED
    assert res.objective == pytest.approx(simplex.objective, rel=1e-9)
    w = np.ones(len(y)) if s is None else s
    r = residuals(X, y, res)
    check = float(w @ np.where(r > 0, 2 * quantile * r, 2 * (quantile - 1) * r))
    assert check == pytest.approx(res.objective, rel=1e-12)
    assert res.bound <= res.objective and res.gap <= 1e-6


@pytest.mark.parametrize("kind", ["outliers", "weights"])
def test_default_path_equals_the_primal_lp(kind):
    X, y, s = make_lad(12, n=5000, p=4, kind=kind)
    res = aid_lad(X, y, sample_weight=s)
    assert res.extra["history"][0]["clusters"] < 1500  # pk: a band of singletons and globs
    assert res.termination is TerminationCondition.CERTIFIED
    assert res.objective == pytest.approx(lad_reference(X, y, s), rel=1e-9)


def test_interior_point_failure_falls_back_or_is_a_subproblem_error(monkeypatch):
    """A stalled interior point hands its LP to the simplex (same certified optimum); when
    that fails too, AID raises SubproblemError, and the problem's solve ends NUMERICAL_ERROR
    with no solution and both reasons."""
    import solvers.aid.fn_lp as fn_lp
    from optmodels.lad import LAD
    from solvers.errors import SubproblemError

    X, y, _ = make_lad(4, n=3000)
    monkeypatch.setattr(fn_lp, "frisch_newton",
                        lambda A, c, b, x0, tol, max_iter: (np.zeros(len(c)), np.zeros(
                            A.shape[1]), max_iter, False))
    res = aid_lad(X, y)
    assert res.termination is TerminationCondition.CERTIFIED
    assert res.objective == pytest.approx(lad_reference(X, y), rel=1e-9)
    monkeypatch.setattr(fn_lp, "read_outcome", lambda h, q: fn_lp.LpOutcome(
        TerminationCondition.NUMERICAL_ERROR, "kSolveError"))
    with pytest.raises(SubproblemError, match="Frisch-Newton.*kSolveError"):
        aid_lad(X, y)
    res = LAD(X, y).solve("aid")
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.solution_status is SolutionStatus.NO_SOLUTION and res.x is None
    assert "Frisch-Newton" in res.raw_status and "kSolveError" in res.raw_status


@pytest.mark.parametrize("quantile", [0.5, 0.3])
def test_pk_on_dask_is_the_in_memory_optimum(quantile):
    """The default on Dask (pk, the band from a bracket's exact order statistics, the near split
    over the chunks) is certified at the in-memory optimum, with weights and zero-weight rows."""
    da = pytest.importorskip("dask.array")
    X, y, s = make_lad(1, n=40000, p=4, kind="weights")
    s[::7] = 0.0
    mem = aid_lad(X, y, sample_weight=s, quantile=quantile)
    dsk = aid_lad(da.from_array(X, chunks=(10000, 4)), da.from_array(y, chunks=10000),
                  sample_weight=da.from_array(s, chunks=10000), quantile=quantile)
    assert dsk.termination is mem.termination is TerminationCondition.CERTIFIED
    assert abs(dsk.objective - mem.objective) <= 1e-10 * mem.scale
    assert dsk.iterations <= mem.iterations + 2  # the same start, bounds to a histogram bin
    lab = dsk.extra["labels"].compute()
    assert lab.shape == (int((s > 0).sum()),) and lab.max() + 1 == dsk.extra["n_clusters_final"]
    r = residuals(X[s > 0], y[s > 0], dsk)
    assert_sign_pure(lab, r, 1e-9 * (1 + np.abs(y).max()))


def test_a_fresh_process_prints_nothing_on_stdout():
    """The interior-point path may create no HiGHS model before the result's version query;
    HiGHS's banner must still stay off stdout (it would corrupt ``optmodels ... --json``)."""
    import subprocess
    import sys

    code = ("import numpy as np; from solvers.aid import aid_lad; "
            "rng = np.random.default_rng(0); X = rng.normal(size=(3000, 3)); "
            "y = X @ [1.0, 2.0, 3.0] + rng.laplace(size=3000); r = aid_lad(X, y); "
            "assert r.termination.value == 'certified'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout == ""


@pytest.mark.parametrize("shape", [(10_007, 3), (5, 4), (4097, 1), (3000, 700)])
def test_column_magnitudes_equal_the_plain_reduction(shape):
    from solvers.aid.scaling import column_magnitudes

    X = np.random.default_rng(0).standard_normal(shape) * np.logspace(-5, 5, shape[1])
    X[-1, 0] = -1e9  # the largest entry in the tail rows, negative
    want = np.abs(X).max(axis=0)
    assert np.array_equal(column_magnitudes(X), want)
    assert np.array_equal(column_magnitudes(np.asfortranarray(X)), want)
    assert np.array_equal(column_magnitudes(X[::2]), np.abs(X[::2]).max(axis=0))


def test_max_steps_equal_the_masked_ratio_test():
    from solvers.aid.fn_lp import _max_steps

    rng = np.random.default_rng(1)
    for _ in range(20):
        x, z, w = rng.random(50) + 1e-3, rng.random(50), rng.random(50)
        s = 1.0 - x + 1e-3
        dx, dz, dw = rng.standard_normal((3, 50)) * (rng.random((3, 50)) < 0.7)
        neg, pos = dx < 0, dx > 0
        ap = min(np.min(-x[neg] / dx[neg], initial=np.inf), np.min(s[pos] / dx[pos],
                                                                    initial=np.inf))
        ad = min(np.min(-z[dz < 0] / dz[dz < 0], initial=np.inf),
                 np.min(-w[dw < 0] / dw[dw < 0], initial=np.inf))
        got = _max_steps(x, s, z, w, dx, dz, dw)
        np.testing.assert_allclose(got, (ap, ad), rtol=1e-14)
    zero = np.zeros(50)
    assert _max_steps(x, s, z, w, zero, zero, zero) == (np.inf, np.inf)


def test_lad_residual_is_the_plain_expression_bit_for_bit():
    from solvers.rows import lad_residual

    X, y, _ = make_lad(3, n=2000, p=5, kind="plain")
    beta = np.random.default_rng(3).standard_normal(5)
    assert np.array_equal(lad_residual(X, y, beta, 0.75), y - X @ beta - 0.75)
    assert np.array_equal(lad_residual(X, y, beta, 0.0), y - X @ beta)
    assert np.array_equal(lad_residual(X[:, :0], y, beta[:0], 2.0), y - 2.0)



def glob_aggregate(seed, n=20_000, p=4, band=1500):
    """The pk shape: the ``band`` rows nearest an exact subsample fit as singletons, the rest
    in two globs by the sign of their residual; returns (SXa, SY, W, the fit)."""
    X, y, _ = make_lad(seed, n=n, p=p, kind="outliers")
    A = np.column_stack([X, np.ones(n)])
    idx = np.random.default_rng(seed).choice(n, 3000, replace=False)
    coef = IpmLadLP(A[idx], y[idx]).solve().coef
    r = y - A @ coef
    labels = np.where(r < 0, 0, 1)
    labels[np.argsort(np.abs(r))[:band]] = 2 + np.arange(band)
    agg = aggregate(X, y, np.ones(n), labels)
    return np.column_stack([agg.SX, agg.W]), agg.SY, agg.W, coef


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("wrong_start", [False, True])
def test_heavy_columns_fixed_first_still_give_the_optimum(seed, wrong_start):
    """The globs start fixed at the bound of their reduced cost at ``start``; from a start that
    puts them on the wrong side, sifting frees them: the optimum is HiGHS's either way."""
    SXa, SY, W, coef = glob_aggregate(seed)
    start = coef.copy()
    if wrong_start:  # an intercept far below every row: both globs start at the upper bound
        start[-1] -= 1e6
    lp = IpmLadLP(SXa, SY, weights=W, start=start)
    assert lp._heavy().sum() == 2
    out = lp.solve()
    ref, _ = highs_lp(SXa, SY, (-1.0, 1.0))
    assert out.termination is TerminationCondition.OPTIMAL
    assert float(SY @ out.v) == pytest.approx(ref, rel=1e-9)
    plain = IpmLadLP(SXa, SY)
    plain.solve()
    if wrong_start:
        assert lp.sift_rounds >= 1
    else:  # 11-12 interior-point iterations instead of 18-23 with the globs free
        assert lp.sift_rounds == 0 and lp.iterations < plain.iterations


def test_globs_that_cannot_be_fixed_are_freed():
    """A start whose globs are badly mixed: with them fixed the first LP is infeasible; the
    interior point fails there, every column is freed (no simplex detour) and heavy clusters
    are not fixed again. The run certifies the optimum HiGHS's full LP gives."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((60_000, 3))
    y = X @ rng.standard_normal(3) + rng.laplace(size=60_000)
    res = aid_lad(X, y)
    assert res.termination is TerminationCondition.CERTIFIED
    assert res.extra["history"][0]["sift_rounds"] >= 1
    ref = aid_lad(X, y, lp="simplex", init="band")
    assert res.objective == pytest.approx(ref.objective, rel=1e-12)


@pytest.mark.parametrize("kind", ["plain", "weights"])
@pytest.mark.parametrize("quantile", [0.5, 0.3])
def test_large_pk_subsample_fitted_by_aid_is_the_interior_points_optimum(
        monkeypatch, kind, quantile):
    """Above PK_AID_ROWS the subsample fit is AID's (itself pk-started): the same optimum as the
    interior point on every subsample row, and the fallback to it when AID does not certify."""
    from solvers.aid import clustering

    X, y, s = make_lad(5, n=6000, p=3, kind=kind)
    s = np.ones(len(y)) if s is None else s

    def loss(fit):
        r = y - X @ fit[0] - fit[1]
        return float(s @ np.where(r > 0, 2 * quantile * r, 2 * (quantile - 1) * r))

    import solvers.aid.lad as lad_module

    real, calls = lad_module.aid_lad, []

    def spy(*a, **k):
        calls.append(a[0].shape[0])
        return real(*a, **k)

    monkeypatch.setattr(lad_module, "aid_lad", spy)
    ipm = clustering.pk_fit(X, y, s, True, quantile)  # 6000 rows: the interior point
    assert calls == []
    monkeypatch.setattr(clustering, "PK_AID_ROWS", 1000)
    by_aid = clustering.pk_fit(X, y, s, True, quantile)
    assert calls[0] == 6000
    assert loss(by_aid) == pytest.approx(loss(ipm), rel=1e-9)
    monkeypatch.setattr("solvers.aid.lad.aid_lad", lambda *a, **k: type(
        "R", (), dict(termination=TerminationCondition.ITERATION_LIMIT))())
    fallback = clustering.pk_fit(X, y, s, True, quantile)
    np.testing.assert_array_equal(fallback[0], ipm[0])
