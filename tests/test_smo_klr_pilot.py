"""KLR's pilot start (a fit on a subsample mapped to every row) against Keerthi's start and a
conic solve of the same dual."""

from __future__ import annotations

import numpy as np
import pytest
from test_smo_batched import clouds, klr_conic, weights

import solvers.smo.klr as klr
from solvers.errors import DataError
from solvers.kernels import Kernel


@pytest.fixture
def small_pilot(monkeypatch):
    """A pilot of 60 rows (the default floor of 2000 would take every row of these sets)."""
    monkeypatch.setattr(klr, "PILOT_MIN_ROWS", 60)
    monkeypatch.setattr(klr, "PILOT_SHARE", 0.2)


@pytest.mark.parametrize(("lam", "bound_tol", "unit"),
                         [(0.0, None, True), (0.0, None, False), (1.0, 0.05, False)])
def test_pilot_start_same_optimum_as_keerthi_and_conic(small_pilot, lam, bound_tol, unit):
    n = 300
    X, y = clouds(n, p=2, sep=2.0, seed=7)
    s = weights(n, unit)
    kern = Kernel("rbf", gamma=0.5)
    kw = dict(C=1.0, lam=lam, bound_tol=bound_tol, sample_weight=s, kernel=kern, tol=1e-6)
    pilot = klr.smo_klr(X, y, start="pilot", **kw)
    keerthi = klr.smo_klr(X, y, start="keerthi", **kw)
    assert pilot.extra["start"] == "pilot" and keerthi.extra["start"] == "keerthi"
    assert pilot.certified and keerthi.certified
    assert abs(pilot.objective - keerthi.objective) <= 1e-8 * abs(keerthi.objective)
    g = 1e-12 * s if bound_tol is None else bound_tol * s
    conic = klr_conic(kern(X, X), y, s, lam, g)
    assert abs(pilot.objective - conic) <= 1e-6 * abs(conic)


def test_pilot_start_is_feasible_and_nearer_the_optimum(small_pilot):
    """Kernel columns computed in the loop (Q over budget); alpha0 inside the box, y'alpha0 = 0,
    and at most half as far from alpha* as Keerthi's point."""
    n = 1500
    X, y = clouds(n, p=4, seed=11)
    s = weights(n, False)
    prob = klr.prepare_klr(X, y, C=2.0, sample_weight=s, kernel=Kernel("rbf", gamma=0.3),
                           cache_mb=1.0)
    assert isinstance(prob.qmat, klr.KernelQMatrix)
    a0 = klr.pilot_start(prob, 0.0)
    assert np.all(a0 >= prob.lower) and np.all(a0 <= prob.upper)
    assert abs(prob.yk @ a0) <= 1e-12 * a0.sum()
    star = klr.solve_klr_problem(prob, 0.0, tol=1e-6, start="keerthi").x
    keerthi = klr.feasible_start(prob.yk, prob.lower, prob.upper, prob.C)
    err_pilot = np.linalg.norm(a0 - star)
    assert err_pilot < 0.5 * np.linalg.norm(keerthi - star)  # measured 0.36


def test_auto_start_takes_the_pilot_from_pilot_from_rows(small_pilot, monkeypatch):
    n = 1200
    X, y = clouds(n, p=3, seed=2)
    kw = dict(C=1.0, kernel=Kernel("rbf", gamma=0.5), tol=1e-5, cache_mb=1.0)
    small = klr.smo_klr(X, y, **kw)
    assert small.extra["start"] == "keerthi"  # n < PILOT_FROM
    monkeypatch.setattr(klr, "PILOT_FROM", 1000)
    auto = klr.smo_klr(X, y, **kw)
    assert auto.extra["start"] == "pilot" and auto.extra["pilot_s"] > 0
    assert abs(auto.objective - small.objective) <= 1e-8 * abs(small.objective)
    in_full = klr.smo_klr(X, y, **{**kw, "cache_mb": 200.0})  # Q held in full: Keerthi
    assert in_full.extra["start"] == "keerthi"
    warm = klr.smo_klr(X, y, alpha0=auto.x, **kw)
    assert warm.extra["start"] == "warm"


def test_lam_path_passes_start(small_pilot):
    X, y = clouds(300, p=2, seed=4)
    path = klr.lam_path(X, y, [0.0, 0.5], kernel=Kernel("rbf", gamma=0.5), tol=1e-5,
                        start="pilot")
    assert [r.extra["start"] for r in path] == ["pilot", "warm"]


def test_bad_start_names_the_option():
    X, y = clouds(100, p=2, seed=1)
    with pytest.raises(DataError, match="'start'"):
        klr.smo_klr(X, y, start="random")


def _true_gap(X, y, kern, prob, lam, res) -> float:
    """The relative gap recomputed from alpha with the kernel matrix formed in float64."""
    a = res.x[prob.keep]
    yk = prob.yk
    qa = yk * (kern(X, X) @ (yk * a))
    hval, _ = klr.entropy_terms(a, prob.C)
    f = 0.5 * a @ qa + hval.sum() - lam * a.sum()
    return klr.klr_certificate_at(prob, lam, a, qa, f).gap


@pytest.mark.parametrize(("cache_dtype", "start", "lam", "bound_tol"),
                         [("auto", "pilot", 0.0, None), ("float32", "pilot", 0.0, None),
                          ("float32", "keerthi", 0.0, None), ("auto", "pilot", 1.0, 0.05)])
def test_certificate_holds_with_kernel_columns_at_large_weights(small_pilot, cache_dtype, start,
                                                                lam, bound_tol):
    """Weights x 1e10 (C_i ~ 1e10) with the columns computed in the loop: "auto" keeps them in
    float64, "float32" is certified from Q alpha recomputed in float64. A certified result's
    gap recomputed from alpha with K formed in float64 is within CERTIFICATE_TOL (with float32
    columns and the maintained Q alpha it was 0.24 and worse while 3e-17 was reported). The
    open box is certified; S-KLR's box at these weights makes 1/2 ||w||^2 ~ 1e7 times the
    natural scale, beyond what float64 resolves at 1e-6 of it, so it may only converge."""
    from solvers.result import CERTIFICATE_TOL, TerminationCondition

    n = 2000
    X, y = clouds(n, p=10, seed=5)
    s = np.random.default_rng(0).uniform(0.5, 2.0, n) * 1e10
    kern = Kernel("rbf", gamma=1.0)
    kw = dict(C=1.0, bound_tol=bound_tol, sample_weight=s, kernel=kern)
    res = klr.smo_klr(X, y, lam=lam, tol=1e-3, cache_mb=1.0, cache_dtype=cache_dtype,
                      start=start, **kw)
    prob = klr.prepare_klr(X, y, cache_mb=1.0, **kw)
    assert isinstance(prob.qmat, klr.KernelQMatrix)
    if bound_tol is None:
        assert res.certified
    else:
        assert res.certified or res.termination is TerminationCondition.CONVERGED
    if res.certified:
        assert abs(_true_gap(X, y, kern, prob, lam, res)) <= CERTIFICATE_TOL
