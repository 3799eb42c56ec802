"""Export of models with the user's constraints on the coefficients (issue 33): the rows
``coef_constraint_<j>`` and the coefficients' bounds go into MPS and LP files under readable
names, and the files read back by HiGHS (the toolkit's reader and highspy) and by SCIP
(PySCIPOpt) give the optimum of the toolkit's own certified full solve, which never went
through a file. Small instances: SCIP solves the QPs by spatial branch and bound."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels.export import read, read_highs, write
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.backend import solve_qp
from solvers.errors import ExportError

try:
    import pyscipopt
except ImportError:  # the `test` extra installs it; without it only the SCIP tests skip
    pyscipopt = None

rng = np.random.default_rng(3)
X = rng.normal(size=(40, 3))
Y = X @ [1.0, -1.0, 0.5] + rng.laplace(size=40)
YC = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
ASSETS = ["asset_a", "asset_b", "asset_c"]
COV = (X[:, 2] - X[:, 2].mean()) @ X / 40  # cov(z, w'x) = COV'w, z the third column
FREE_B = ([-np.inf] * 3 + [-0.2], [np.inf] * 3 + [0.2])


def _tracking():
    """Index tracking: weights >= 0 summing to one, no intercept, columns named."""
    return LAD(X, Y, fit_intercept=False, feature_names=ASSETS, bounds=Bounds(0, np.inf),
               constraints=LinearConstraint(np.ones((1, 3)), 1, 1))


def _monotone_quantile():
    """tau = 0.9 with beta_0 >= beta_1 >= beta_2."""
    return LAD(X, Y, quantile=0.9,
               constraints=LinearConstraint([[1.0, -1, 0], [0, 1.0, -1]], 0, np.inf))


def _fair_svm(two_sided: bool = True):
    """|cov(z, w'x)| <= 0.05 (one ranged row, or two one-sided rows) and |b| <= 0.2."""
    rows = (LinearConstraint(COV[None], -0.05, 0.05) if two_sided else
            [LinearConstraint(COV[None], -np.inf, 0.05), LinearConstraint(COV[None], -0.05,
                                                                          np.inf)])
    return SVM(X, YC, constraints=rows, bounds=Bounds(*FREE_B))


def _bounded_ridge():
    return Ridge(X, Y, alpha=0.5, bounds=Bounds(-0.5, 0.5),
                 constraints=LinearConstraint(np.ones((1, 3)), -np.inf, 0.2))


# (label, factory, form, suffixes the model can be written to: an LP file has no ranged row)
MODELS = [
    ("index-tracking", _tracking, "primal", (".mps", ".lp")),
    ("monotone-quantile", _monotone_quantile, "primal", (".mps", ".lp")),
    ("fair-svm", _fair_svm, "primal", (".mps",)),
    ("fair-svm-one-sided", lambda: _fair_svm(False), "primal", (".mps", ".lp")),
    ("bounded-ridge", _bounded_ridge, "residual", (".mps", ".lp")),
]
ROUTES = [(label, make, form, suffix, layout) for label, make, form, suffixes in MODELS
          for suffix in suffixes for layout in (("free", "fixed") if suffix == ".mps"
                                                else ("free",))]
IDS = [f"{r[0]}-{r[4]}{r[3]}" for r in ROUTES]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def full_optima():
    """The toolkit's certified full solve of every model (the reference of the round trips)."""
    out = {}
    for label, make, _, _ in MODELS:
        res = make().solve()
        assert res.is_optimal, (label, res.raw_status)
        out[label] = res.objective
    return out


@pytest.mark.parametrize("label, make, form, suffix, layout", ROUTES, ids=IDS)
def test_round_trip_through_highs_gives_the_full_solve_optimum(
    tmp_path, full_optima, label, make, form, suffix, layout
):
    problem = make()
    qp = problem.qp(form)
    out = write(problem, tmp_path / f"{label}{suffix}", form=form, mps_format=layout)
    back = read(out.path)
    assert (back.n_cols, back.n_rows) == (qp.n_cols, qp.n_rows)
    m = problem.coef_constraints.m
    assert out.row_names[-m:] == ([f"coef_constraint_{j}" for j in range(m)] if layout == "free"
                                  else [f"coefcon{j}" for j in range(m)])
    assert list(read_highs(out.path).getLp().row_names_) == out.row_names
    if layout == "free":  # the very same rows and bounds, under the same row names
        assert back.row_names() == qp.row_names()
        for field in ("row_lo", "row_hi", "col_lo", "col_hi"):
            np.testing.assert_array_equal(getattr(back, field), getattr(qp, field))
    assert _rel(solve_qp(back, "highs").objective, full_optima[label]) <= 1e-8


def test_the_files_say_the_constraints_in_words(tmp_path):
    """What a reader of the files sees: the sum-to-one row over the named weights (their
    lower bound 0 is the files' default), the ordered quantile coefficients, the ridge's boxes,
    and the ranged covariance row of the FairSVM in the RANGES section."""
    lp = write(_tracking(), tmp_path / "track.lp", form="primal").path.read_text()
    assert " coef_constraint_0: +1.0 beta_asset_a +1.0 beta_asset_b +1.0 beta_asset_c = 1.0" \
        in lp
    assert lp.endswith("bounds\nend\n") and "intercept" not in lp
    mps = write(_tracking(), tmp_path / "track.mps", form="primal").path.read_text()
    assert " E  coef_constraint_0\n" in mps and "    RHS       coef_constraint_0  1.0\n" in mps
    q = write(_monotone_quantile(), tmp_path / "q.lp", form="primal").path.read_text()
    assert " coef_constraint_1: +1.0 beta_1 -1.0 beta_2 >= 0.0\n" in q
    assert " beta_0 free\n" in q and " intercept_0 free\n" in q
    ridge = write(_bounded_ridge(), tmp_path / "r.lp", form="residual").path.read_text()
    assert " coef_constraint_0: +1.0 x_0 +1.0 x_1 +1.0 x_2 <= 0.2\n" in ridge
    assert " -0.5 <= x_2 <= 0.5\n" in ridge
    fair = write(_fair_svm(), tmp_path / "fair.mps", form="primal").path.read_text()
    ranges = fair[fair.index("RANGES"):fair.index("BOUNDS")]
    assert "coef_constraint_0" in ranges and "0.1" in ranges  # [-0.05, 0.05]: range 0.1
    bounds = fair[fair.index("BOUNDS"):]
    assert " UP BND       b_0       0.2\n" in bounds and " LO BND       b_0       -0.2\n" in bounds


def test_a_ranged_constraint_needs_mps_or_two_rows(tmp_path):
    """LP files hold no ranged row (neither HiGHS's nor SCIP's LP reader takes one): the
    FairSVM's two-sided bound is refused in .lp with the fix, and nothing is written; the same
    bound as two one-sided rows writes and reads back at the same optimum."""
    with pytest.raises(ExportError, match="'coef_constraint_0' is ranged.*Write an .mps file"):
        write(_fair_svm(), tmp_path / "fair.lp", form="primal")
    assert not list(tmp_path.iterdir())
    two = write(_fair_svm(False), tmp_path / "fair2.lp", form="primal")
    assert two.row_names[-2:] == ["coef_constraint_0", "coef_constraint_1"]
    one = _fair_svm().solve().objective
    assert _rel(solve_qp(read(two.path), "highs").objective, one) <= 1e-8


@pytest.mark.skipif(pyscipopt is None, reason="pyscipopt is not importable; pip install -e "
                                              "'.[test]' installs it")
@pytest.mark.parametrize("label, make, form, suffix, layout", ROUTES, ids=IDS)
def test_scip_reads_the_constrained_model_at_the_full_solve_optimum(
    tmp_path, scip_solve, full_optima, label, make, form, suffix, layout
):
    problem = make()
    out = write(problem, tmp_path / f"{label}{suffix}", form=form, mps_format=layout)
    def has_the_rows(model):
        names = {c.name for c in model.getConss()}
        assert {n for n in out.row_names if n.startswith("coef")} <= names

    m = scip_solve(out.path, on_read=has_the_rows)
    assert _rel(m.getObjVal(), full_optima[label]) <= 1e-7, (m.getObjVal(), full_optima[label])
