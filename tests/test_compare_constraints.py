"""compare on problems with the user's constraints (issue 33): every strategy that accepts them
runs and is measured against the full solve, the strategies that refuse them get a row saying
so (never a silent unconstrained solve, never an error that loses the other rows), and the
instance description counts the constraints by kind."""

from __future__ import annotations

import json

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import LAD, SVM, Ridge, compare
from optmodels.compare import REFUSED, Comparison, constraint_summary
from optmodels.strategies import accepted


@pytest.fixture(scope="module")
def tracking():
    """Index tracking: y a noisy mix of six assets' returns; weights >= 0 summing to one."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 6))
    y = X @ np.array([0.3, 0.2, 0.1, 0.25, 0.15, 0.0]) + 0.1 * rng.laplace(size=2000)
    lad = LAD(X, y, fit_intercept=False, constraints=LinearConstraint(np.ones((1, 6)), 1, 1),
              bounds=Bounds(0, np.inf))
    return X, y, lad


def test_constrained_lad_every_accepting_strategy_equals_cvxpy(tracking):
    X, y, lad = tracking
    runs = [s for s, why in accepted(lad).items() if why is None]
    assert {"full", "aid"} <= set(runs)
    table = compare(lad, runs, progress=False)
    b = cp.Variable(6)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.abs(y - X @ b))), [b >= 0, cp.sum(b) == 1]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    for rec in table.records:
        assert rec["certified"], rec
        assert rec["objective"] == pytest.approx(ref, rel=1e-8)
        assert abs(rec["ref_gap"]) <= 1e-9
        assert 0.0 <= rec["constraint_violation"] <= 1e-9
    aid = table.results["aid"]
    assert aid.x.sum() == pytest.approx(1.0, abs=1e-9) and aid.x.min() >= -1e-12
    # AID decomposed: fewer clusters than rows
    assert {r["strategy"]: r for r in table.records}["aid"]["n_clusters_final"] < lad.n


def test_the_instance_counts_the_constraints_by_kind(tracking):
    _, _, lad = tracking
    table = compare(lad, ["full"], progress=False)
    summary = "1 row (1 equality); bounds on 6 of 6 coefficients (6 lower only)"
    assert table.instance["constraints"] == summary
    assert f"; constraints: {summary}; source: given arrays" in table.to_text()
    assert summary in table.to_markdown()
    assert "constraints" not in compare(LAD(*tracking[:2]), ["full"], progress=False).instance


def test_constraint_summary_names_every_kind():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    G = np.eye(4)
    lad = LAD(X, y, constraints=LinearConstraint(G, [0, -np.inf, 1, -1], [0, 2, np.inf, 1]),
              bounds=Bounds([0, -np.inf, -1, 2], [np.inf, 3, 1, 2]))
    assert constraint_summary(lad) == ("4 rows (1 equality, 1 <=, 1 >=, 1 two-sided); bounds "
                                       "on 4 of 4 coefficients (1 fixed, 1 box, 1 lower only, "
                                       "1 upper only)")
    assert constraint_summary(LAD(X, y)) is None


def test_strategies_that_refuse_the_constraints_get_a_row_not_a_run():
    """Bounded ridge: the sketches cannot carry constraints (issue 33); they are listed as
    refused with the registry's reason, the full solve runs and equals CVXPY + Clarabel."""
    rng = np.random.default_rng(1)
    A, b = rng.normal(size=(300, 5)), rng.normal(size=300)
    ridge = Ridge(A, b, alpha=2.0, bounds=Bounds(0, 0.05))
    reasons = accepted(ridge)
    table = compare(ridge, ["full", "pcg-rfd", "fdrr"], progress=False)
    rows = {r["strategy"]: r for r in table.records}
    assert list(rows) == ["full", "pcg-rfd", "fdrr"]
    assert set(table.results) == {"full"}
    for name in ("pcg-rfd", "fdrr"):
        assert rows[name]["termination"] == REFUSED and not rows[name]["certified"]
        assert rows[name]["refusal"] == reasons[name]
        assert rows[name].get("objective") is None and rows[name].get("ref_gap") is None
    x = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(b - A @ x) + cp.sum_squares(x)),
                     [x >= 0, x <= 0.05]).solve(solver="CLARABEL")
    assert rows["full"]["certified"] and rows["full"]["objective"] == pytest.approx(ref, rel=1e-7)
    text = table.to_text()
    assert "pcg-rfd, fdrr: refused: does not take constraints on the coefficients" in text
    assert text.count("refused: ") == 1  # one reason, one note for both rows


def test_svm_rows_follow_the_registry(tracking):
    """A FairSVM (|cov(z, w'x)| <= 0.01): a strategy runs exactly when ``accepted`` says it
    accepts the constraints, and every run is certified at the full solve's optimum."""
    X, y, _ = tracking
    labels = np.where(y > np.median(y), 1.0, -1.0)[:600]
    Xs = X[:600]
    c = (Xs[:, 5] - Xs[:, 5].mean()) @ Xs / 600
    svm = SVM(Xs, labels, constraints=LinearConstraint(c[None], -0.01, 0.01))
    reasons = accepted(svm)
    table = compare(svm, ["full", "aid", "smo", "ipm"], progress=False)
    for rec in table.records:
        if reasons[rec["strategy"]]:
            assert rec["termination"] == REFUSED and rec["strategy"] not in table.results
        else:
            assert rec["certified"] and abs(rec["ref_gap"]) <= 1e-6, rec
            assert rec["constraint_violation"] <= 1e-9
            assert abs(c @ table.results[rec["strategy"]].x) <= 0.01 * (1 + 1e-8)
    unconstrained = SVM(Xs, labels).solve()
    assert abs(c @ unconstrained.x) > 0.01  # the covariance bound binds


def test_a_refused_reference_is_an_error_naming_the_alternatives():
    rng = np.random.default_rng(2)
    ridge = Ridge(rng.normal(size=(50, 3)), rng.normal(size=50), bounds=Bounds(0, 1))
    with pytest.raises(ValueError, match="reference strategy 'fdrr' refuses this problem.*"
                                         "that accept it: full"):
        compare(ridge, ["full"], reference="fdrr", progress=False)


def test_refused_rows_survive_the_result_file_and_every_format(tmp_path):
    rng = np.random.default_rng(4)
    ridge = Ridge(rng.normal(size=(80, 3)), rng.normal(size=80), bounds=Bounds(-0.1, 0.1))
    table = compare(ridge, ["full", "rfd"], progress=False)
    back = Comparison.load(table.save(str(tmp_path / "r.json")))
    assert back.to_text() == table.to_text()
    assert [r["termination"] for r in back.records] == [table.records[0]["termination"],
                                                        REFUSED]
    assert "| rfd | - | refused |" in back.to_markdown()
    assert "refused" in back.to_latex() and "refused" in back.to_csv()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["instance"]["constraints"] == "bounds on 3 of 3 coefficients (3 box)"


def test_cli_compare_lists_a_refusal_as_a_row(capsys):
    """The command line has no constraints, but the same rule holds for any refusal: the
    squared-hinge SVM with AID (hinge only) gives a refused row and exit 0, with --json too."""
    from optmodels.cli import main

    argv = ["compare", "svm", "--generate", "n=200,p=3,seed=0", "--param", "loss=squared_hinge",
            "--strategies", "aid", "--repeat", "1", "--quiet"]
    assert main(argv) == 0
    assert "aid       -         refused" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    rows = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["aid"]["termination"] == REFUSED and "loss='hinge'" in rows["aid"]["refusal"]
    assert rows["full"]["certified"] and "coefficients" in rows["full"]


def test_constraints_added_in_pyomo_reach_the_comparison():
    """A Pyomo model extended on beta: ``constrained_by`` gives the problem compare runs, with
    the added rows and bounds counted."""
    pyo = pytest.importorskip("pyomo.environ")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2500, 3))
    y = X @ np.array([1.0, 0.5, -0.5]) + rng.laplace(size=2500)
    lad = LAD(X, y)
    m = lad.pyomo_model("primal")
    m.ordered = pyo.Constraint(expr=m.beta[1] <= m.beta[2])
    m.beta[0].setub(0.8)
    table = compare(lad.constrained_by(m), ["full", "aid"], progress=False)
    assert table.instance["constraints"] == \
        "1 row (1 <=); bounds on 1 of 4 coefficients (1 upper only)"
    full, aid = (table.results[s] for s in ("full", "aid"))
    assert aid.is_optimal and aid.objective == pytest.approx(full.objective, rel=1e-9)
    assert aid.x[1] <= aid.x[2] + 1e-9 and aid.x[0] <= 0.8 + 1e-9
    assert lad.solve().objective < full.objective - 1e-6 * full.objective  # both bind
