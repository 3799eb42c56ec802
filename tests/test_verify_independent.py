"""``verify="independent"`` re-derives the bound from the returned certificate arrays with the
problem's own arithmetic (issue 31): LAD from the dual vector u (projected onto X'u = 0 and
shrunk into the box), the primal SVM from its alpha (made feasible, D(alpha)); AID's bound is
its aggregated LP's and is labelled so. ``verify="auto"`` (the default) does the same where it
is cheap, and for a kernel dual audits the returned decision values on a few rows instead of
a full kernel product."""

from __future__ import annotations

import numpy as np
import pytest

from optmodels import LAD, SVM
from optmodels.strategies import run_strategy


@pytest.fixture(scope="module")
def lad_data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 5))
    y = X @ rng.normal(size=5) + 1.0 + rng.laplace(size=500)
    return X, y, rng.uniform(0.5, 2.0, 500)


@pytest.mark.parametrize("quantile", [0.5, 0.2])
def test_lad_full_bound_rederived_from_u(lad_data, quantile):
    X, y, s = lad_data
    prob = LAD(X, y, sample_weight=s, quantile=quantile)
    own = run_strategy(prob, "full", verify="strategy")
    ind = run_strategy(prob, "full", verify="independent")
    assert ind.extra["bound_source"] == "toolkit"
    scale = prob.natural_scale()
    # an optimal u loses only round-off in the repair, and the bound stays below E*
    assert ind.bound == pytest.approx(own.bound, abs=1e-9 * scale)
    assert ind.bound <= own.objective + 1e-9 * scale
    assert ind.is_optimal


def test_lad_dual_bound_is_valid_for_any_u(lad_data):
    """A u off the subspace and outside the box (the solver's u perturbed and inflated): the
    naive y'u exceeds the optimum, the repaired one never does."""
    X, y, s = lad_data
    prob = LAD(X, y, sample_weight=s)
    full = prob.solve()
    u = full.extra["dual_u"]
    rng = np.random.default_rng(0)
    for _ in range(5):
        bad = 1.5 * u + 0.3 * rng.normal(size=u.size)
        assert float(y @ bad) > full.objective  # not a bound as it stands
        assert prob.dual_bound(bad) <= full.objective * (1 + 1e-12)
    assert prob.dual_bound(u) == pytest.approx(full.objective, rel=1e-8)


@pytest.mark.parametrize("lp", ["simplex", "ipm"])
@pytest.mark.parametrize("quantile", [0.5, 0.2])
def test_aid_lad_bound_rederived_from_its_disaggregated_dual(lad_data, lp, quantile):
    """AID returns u_i = s_i v_k(i) from its last aggregated LP's cluster duals; the problem's
    own repair of it gives the same bound (rows of weight 0 get u_i = 0 and are left out)."""
    X, y, s = lad_data
    s = s.copy()
    s[:7] = 0.0
    prob = LAD(X, y, sample_weight=s, quantile=quantile)
    own = run_strategy(prob, "aid", lp=lp, verify="strategy")
    ind = run_strategy(prob, "aid", lp=lp, verify="independent")
    assert ind.extra["bound_source"] == "toolkit" and ind.is_optimal
    u = ind.extra["dual_u"]
    assert np.all(u[:7] == 0.0) and u.shape == y.shape
    scale = prob.natural_scale()
    assert ind.bound == pytest.approx(own.bound, abs=1e-9 * scale)
    assert ind.bound <= prob.solve().objective + 1e-9 * scale


def test_constrained_aid_bound_is_labelled_as_the_strategy_s(lad_data):
    from scipy.optimize import Bounds

    X, y, s = lad_data
    res = run_strategy(LAD(X, y, sample_weight=s, bounds=Bounds(-10, 10)), "aid",
                       verify="independent")
    assert res.extra["bound_source"] == "strategy" and res.is_optimal


@pytest.mark.parametrize("strategy", ["full", "ipm"])
def test_primal_svm_bound_from_its_alpha(strategy):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.5 * rng.normal(size=300) > 0, 1, -1)
    prob = SVM(X, y, C=1.0, kernel="linear")
    own = run_strategy(prob, strategy, verify="strategy")
    ind = run_strategy(prob, strategy, verify="independent")
    alpha = ind.extra["alpha"]
    assert ind.extra["bound_source"] == "toolkit"
    expected = prob.dual_objective(prob.feasible_alpha(alpha))  # D of the repaired alpha
    assert ind.bound == pytest.approx(expected, rel=1e-12)
    assert ind.bound <= own.objective + 1e-9 * prob.natural_scale()
    assert ind.is_optimal and abs(ind.objective - own.objective) <= 1e-9 * prob.natural_scale()


# ---- verify="auto" -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rbf_svm():
    from instances import make_classification

    X, y = make_classification(n=1500, p=6, seed=3)
    return SVM(X, y, C=1.0, kernel="rbf", gamma=0.2)


def test_auto_is_the_default_and_recomputes_the_cheap_ones(lad_data):
    X, y, s = lad_data
    res = LAD(X, y, sample_weight=s).solve()
    assert res.extra["verified"] == "independent" and res.extra["bound_source"] == "toolkit"
    own = run_strategy(LAD(X, y, sample_weight=s), "full", verify="strategy")
    assert own.extra["verified"] == "strategy"


def test_auto_audits_smo_and_agrees_with_the_full_recomputation(rbf_svm):
    auto = run_strategy(rbf_svm, "smo")
    ind = run_strategy(rbf_svm, "smo", verify="independent")
    assert auto.extra["verified"] == "audited" and ind.extra["verified"] == "independent"
    assert auto.extra["audit_error"] < 1e-10
    scale = rbf_svm.natural_scale()
    assert auto.objective == pytest.approx(ind.objective, abs=1e-10 * scale)
    assert auto.bound == pytest.approx(ind.bound, abs=1e-10 * scale)
    assert auto.is_optimal and ind.is_optimal


def test_auto_falls_back_when_the_decision_values_are_wrong(rbf_svm):
    """Decision values off by 1e-4 (a drifted gradient) fail the audit: the problem then
    recomputes K v itself, and the objective is the true one, not the one f implied."""
    from optmodels.verify import verify_result

    res = run_strategy(rbf_svm, "smo", verify="strategy")
    res.extra["decision_train"] = res.extra["decision_train"] + 1e-4
    verify_result(rbf_svm, res, "auto")
    assert res.extra["verified"] == "independent" and res.extra["audit_error"] > 1e-6
    alpha, b = res.extra["alpha"], float(res.extra["b"])
    assert res.objective == pytest.approx(rbf_svm.kernel_primal_objective(alpha, b), rel=1e-12)


def test_dual_bound_from_is_a_bound_for_an_infeasible_alpha(rbf_svm):
    """alpha off y'alpha = 0 and above C on some rows: the bound from (alpha, K v) is at most
    D of the repaired alpha (exact) and below the optimum; tight for a move of rounding size."""
    res = run_strategy(rbf_svm, "smo")
    alpha = res.extra["alpha"].copy()
    rng = np.random.default_rng(1)
    bad = alpha * rng.uniform(0.9, 1.2, alpha.size)
    kv = rbf_svm.kernel_matvec(bad * rbf_svm.y)
    bound = rbf_svm.dual_bound_from(bad, kv)
    exact = rbf_svm.dual_objective(rbf_svm.feasible_alpha(bad))
    assert bound <= exact + 1e-9 * abs(exact) and bound <= res.objective
    # a move of rounding size (y'alpha off by 1e-12 of sum alpha) costs a bound of that size
    tiny = alpha * (1.0 + 1e-12 * rng.uniform(-1, 1, alpha.size))
    kv = rbf_svm.kernel_matvec(tiny * rbf_svm.y)
    exact = rbf_svm.dual_objective(rbf_svm.feasible_alpha(tiny))
    assert rbf_svm.dual_bound_from(tiny, kv) == pytest.approx(exact, rel=1e-9)


def test_auto_audits_klr_smo():
    from instances import make_classification
    from optmodels import KLR

    X, y = make_classification(n=600, p=5, seed=8)
    prob = KLR(X, y, C=1.0, kernel="rbf", gamma=0.3)
    auto = run_strategy(prob, "smo")
    ind = run_strategy(prob, "smo", verify="independent")
    assert auto.extra["verified"] == "audited"
    scale = prob.natural_scale()
    assert auto.objective == pytest.approx(ind.objective, abs=1e-10 * scale)
    assert auto.bound == pytest.approx(ind.bound, abs=1e-10 * scale)
    assert auto.is_optimal
