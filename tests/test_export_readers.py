"""Exported files read by readers other than the toolkit's: HiGHS called directly (free and fixed
MPS parsers, LP reader) and SCIP (PySCIPOpt), for every exportable problem and form, in both MPS
layouts and LP. Each reader's optimum is compared with the in-memory model's own HiGHS solve, an
answer that never went through a file.

Also the cause of issue 30's MPS misread: a free-layout file with names longer than 8 characters
is cut by a fixed-format reader (HiGHS's fixed parser drops the LAD dual's constraints), and
``read(..., mps_parser="fixed")`` refuses such a file instead.
"""

from __future__ import annotations

import highspy
import numpy as np
import pytest
import scipy.sparse as sp

from instances import make_lad
from optmodels.export import check_fixed_layout, read, write
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.backend import solve_qp
from solvers.qp import QPData

try:
    import pyscipopt
except ImportError:  # the `test` extra installs it; without it only the SCIP tests skip
    pyscipopt = None

needs_scip = pytest.mark.skipif(
    pyscipopt is None, reason="pyscipopt is not importable; pip install -e '.[test]' installs it"
)

rng = np.random.default_rng(3)
X = rng.normal(size=(40, 3))
Y = X @ [1.0, -1.0, 0.5] + rng.laplace(size=40)
YC = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
NAMES = ["age", "income (k$)", "x[2]"]


def _coverage_model() -> QPData:
    """Every MPS feature the writer uses: each bound kind (FR, MI+UP, LO, FX, UP+LO, a negative
    box), E/L/G and ranged rows, an off-diagonal Hessian (``x * y`` terms) and a constant."""
    inf = np.inf
    M = np.array([[2.0, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1]])
    A = sp.csr_matrix(
        np.array(
            [[1.0, 1, 0, 0, 1, 1], [0, 1, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0], [0, 0, 1, 0, -1, 0]]
        )
    )
    return QPData(
        c=np.array([1.0, -2, 3, 0.5, -1, 1]),
        A=A,
        row_lo=np.array([-10.0, -inf, 2.0, -1.0]),
        row_hi=np.array([4.0, 5.0, 2.0, inf]),
        col_lo=np.array([-inf, -inf, 2, 2, 0, -1]),
        col_hi=np.array([inf, -3, inf, 2, 7, -0.5]),
        P=sp.csr_matrix(M.T @ M + np.diag([1.0, 0, 0.5, 0, 0, 0])),
        offset=1.5,
        col_blocks=[("x", 6)],
        row_blocks=[("r", 4)],
        name="coverage",
    )


# (label, problem factory, form): every problem and form export.write accepts.
MODELS = [
    ("lad-primal", lambda: LAD(X, Y, feature_names=NAMES), "primal"),
    ("lad-dual", lambda: LAD(X, Y), "dual"),
    ("svm-primal", lambda: SVM(X, YC, feature_names=NAMES), "primal"),
    ("svm-dual", lambda: SVM(X, YC), "dual"),
    ("svm-dual-rbf", lambda: SVM(X, YC, kernel="rbf"), "dual"),
    ("ridge", lambda: Ridge(X, Y, alpha=0.5, feature_names=NAMES), "residual"),
    ("coverage-qp", _coverage_model, None),
]
LAYOUTS = [(".mps", "free"), (".mps", "fixed"), (".lp", "free")]


def _export(tmp_path, label, make, form, suffix, mps_format):
    """Write the model and return (ExportResult, its QPData, the in-memory HiGHS optimum)."""
    problem = make()
    qp = problem if isinstance(problem, QPData) else problem.qp(form)
    if suffix == ".lp" and label == "coverage-qp":  # LP files hold no ranged row
        qp.row_lo[0] = -np.inf
    out = write(qp, tmp_path / f"{label}-{mps_format}{suffix}", mps_format=mps_format)
    return out, qp, solve_qp(qp, "highs").objective


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def _highs_objective(path, free_parser: bool) -> tuple[float, list[str]]:
    """Read with highspy itself (no toolkit check) and solve: (objective, column names). The
    fixed parser warns "Quadratic section: under development" for every QUADOBJ it reads."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mps_parser_type_free", free_parser)
    status = h.readModel(str(path))
    assert status == highspy.HighsStatus.kOk or (
        status == highspy.HighsStatus.kWarning and not free_parser and h.getModel().hessian_.dim_
    )
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value, list(h.getLp().col_names_)


# ---------------------------------------------------------------------------------- HiGHS

HIGHS_ROUTES = [
    (".mps", "free", True),
    (".mps", "fixed", True),
    (".mps", "fixed", False),
    (".lp", "free", True),
]


@pytest.mark.parametrize(
    "suffix, mps_format, free_parser",
    HIGHS_ROUTES,
    ids=["mps-free", "mps-fixed-free-parser", "mps-fixed-fixed-parser", "lp"],
)
@pytest.mark.parametrize("label, make, form", MODELS, ids=[m[0] for m in MODELS])
def test_highs_reads_every_export_with_the_same_optimum(
    tmp_path, label, make, form, suffix, mps_format, free_parser
):
    out, qp, ref = _export(tmp_path, label, make, form, suffix, mps_format)
    value, names = _highs_objective(out.path, free_parser)
    assert names == out.col_names
    assert _rel(value, ref) <= 1e-9, (value, ref)


def test_free_mps_with_long_names_is_misread_by_a_fixed_parser_and_refused_by_read(tmp_path):
    """Issue 30: the LAD dual's rows ``stationarity_0..3`` exceed 8 characters. HiGHS's fixed
    parser cuts each to ``stationa`` and reads the value from column 25, inside the name, as 0:
    every constraint coefficient is dropped and the optimum read is that of the dual without its
    constraints, -sum|y| (u in [-1, 1] minimising -y'u), not minus the LAD objective."""
    Xl, yl, _, _ = make_lad(n=200, p=3, seed=0)
    lad = LAD(Xl, yl)
    qp = lad.qp("dual")
    ref = solve_qp(qp, "highs").objective
    assert ref == pytest.approx(-lad.solve_full().objective, rel=1e-9)
    free = write(lad, tmp_path / "dual.mps", form="dual")
    assert max(map(len, free.row_names)) > 8

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mps_parser_type_free", False)
    h.readModel(str(free.path))
    assert list(h.getLp().row_names_) == ["stationa"] * 4 and not len(h.getLp().a_matrix_.value_)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(-np.abs(yl).sum(), rel=1e-12)
    assert _rel(h.getInfo().objective_function_value, ref) > 0.3

    with pytest.raises(
        ValueError,
        match=r"dual\.mps:4: not in the fixed MPS layout.*"
        r"mps_parser='free'.*mps_format='fixed'",
    ):
        read(free.path, mps_parser="fixed")
    assert _rel(solve_qp(read(free.path), "highs").objective, ref) <= 1e-12

    fixed = write(lad, tmp_path / "dual8.mps", form="dual", mps_format="fixed")
    for parser in ("free", "fixed"):
        assert _rel(solve_qp(read(fixed.path, mps_parser=parser), "highs").objective, ref) <= 1e-9


def test_fixed_layout_check(tmp_path):
    """Our fixed files and short-named free files pass; long names, shifted fields, tabs and a
    missing value are refused with their line."""
    good = (
        "NAME          t\nROWS\n N  obj\n E  c1\nCOLUMNS\n    x         obj       1.5\n"
        "    x         c1        2\nRHS\n    RHS       c1        3\nBOUNDS\n"
        " FR BND       x\nENDATA\n"
    )
    path = tmp_path / "t.mps"
    path.write_text(good)
    check_fixed_layout(path)
    assert solve_qp(read(path, mps_parser="fixed"), "highs").objective == pytest.approx(2.25)
    for bad, line in [
        (good.replace(" E  c1\n", " E  constraint\n").replace("c1 ", "constraint"), 4),
        (good.replace("    x         c1        2", "    x  c1  2"), 7),
        (good.replace("    x         c1        2", "\tx\tc1\t2"), 7),
        (good.replace("    RHS       c1        3", "    RHS       c1"), 9),
    ]:
        path.write_text(bad)
        with pytest.raises(ValueError, match=rf"t\.mps:{line}: not in the fixed MPS layout"):
            check_fixed_layout(path)
    for _, make, form in MODELS:
        out = write(
            make() if form is None else make().qp(form), tmp_path / "f.mps", mps_format="fixed"
        )
        check_fixed_layout(out.path)


def test_lp_squares_are_written_without_spaces_around_the_caret(tmp_path):
    """SCIP 10 refuses ``x ^ 2``; ``x^2`` is read by SCIP and HiGHS alike."""
    out, _, _ = _export(tmp_path, "ridge", MODELS[5][1], "residual", ".lp", "free")
    text = out.path.read_text()
    assert "x_age^2" in text and " ^ " not in text and "] / 2" in text


# ----------------------------------------------------------------------------------- SCIP


@needs_scip
@pytest.mark.parametrize("suffix, mps_format", LAYOUTS, ids=["mps-free", "mps-fixed", "lp"])
@pytest.mark.parametrize("label, make, form", MODELS, ids=[m[0] for m in MODELS])
def test_scip_reads_every_export_with_the_same_optimum(
    tmp_path, scip_solve, label, make, form, suffix, mps_format
):
    out, qp, ref = _export(tmp_path, label, make, form, suffix, mps_format)
    m = scip_solve(out.path)
    value, names = m.getObjVal(), [v.name for v in m.getVars()]
    n = len(out.col_names)
    # A QP objective gets one more variable, SCIP's own: qmatrixvar (MPS) or quadobjvar (LP).
    assert names[:n] == out.col_names
    assert names[n:] == ([] if qp.is_lp else ["qmatrixvar" if suffix == ".mps" else "quadobjvar"])
    assert _rel(value, ref) <= 1e-7, (value, ref)
