"""MPS / LP export: round trips through HiGHS's readers, bounds, names, refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint

from optmodels.export import read, read_highs, write
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.backend import solve_qp
from solvers.errors import ExportError
from solvers.qp import QPData

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
Y = X @ [1.0, -1.0, 0.5] + rng.laplace(size=40)
YC = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
MODELS = [
    ("lad-primal", lambda: LAD(X, Y), "primal"),
    ("lad-dual", lambda: LAD(X, Y), "dual"),
    ("lad-constrained", lambda: LAD(X, Y, constraints=LinearConstraint([[1.0, 1.0, 1.0]],
                                                                       -np.inf, 0.5),
                                    bounds=Bounds([-2.0, 0.0, -2.0, -1.0], 2.0)), "primal"),
    ("svm-primal", lambda: SVM(X, YC), "primal"),
    ("svm-dual-rbf", lambda: SVM(X, YC, kernel="rbf"), "dual"),
    ("ridge", lambda: Ridge(X, Y, alpha=2.0), "residual"),
]
# (suffix, mps_format, HiGHS MPS parser used to read it back)
ROUTES = [
    (".mps", "free", "free"),
    (".mps", "fixed", "free"),
    (".mps", "fixed", "fixed"),
    (".lp", "free", "free"),
]


def _same_optimum(a: float, b: float) -> bool:
    return abs(a - b) <= max(1e-9, 1e-9 * abs(b))


@pytest.mark.parametrize("suffix, mps_format, parser", ROUTES, ids=["-".join(r) for r in ROUTES])
@pytest.mark.parametrize("label, make, form", MODELS, ids=[m[0] for m in MODELS])
def test_round_trip_same_optimum(tmp_path, suffix, mps_format, parser, label, make, form):
    problem = make()
    qp = problem.qp(form)
    path = tmp_path / f"{label}{suffix}"
    written = write(problem, path, form=form, mps_format=mps_format)
    back = read(path, mps_parser=parser)
    assert (back.n_cols, back.n_rows) == (qp.n_cols, qp.n_rows)
    ref = solve_qp(qp, "highs").objective
    assert _same_optimum(solve_qp(back, "highs").objective, ref)
    h = read_highs(path, mps_parser=parser)
    assert list(h.getLp().col_names_) == written.col_names
    assert [f.name for f in tmp_path.iterdir()] == [path.name]
    if mps_format == "free":  # shortest round-trip decimals: the very same model
        assert back.col_names() == qp.col_names() and back.row_names() == qp.row_names()
        for field in ("c", "col_lo", "col_hi", "row_lo", "row_hi"):
            np.testing.assert_array_equal(getattr(back, field), getattr(qp, field))
        assert abs(back.A - qp.A).max() == 0
        assert qp.P is None or abs(back.P - qp.P).max() == 0
    else:  # fixed MPS: values of at most 15 characters, names of at most 8
        assert max(map(len, written.col_names + written.row_names)) <= 8
        np.testing.assert_allclose(back.c, qp.c, rtol=1e-11, atol=0)
        np.testing.assert_allclose(back.col_hi, qp.col_hi, rtol=1e-11, atol=0)


def _bounds_model() -> QPData:
    """Every bound kind: free, (-inf, -3], [2, inf), fixed, [0, 7], [-1, -0.5] and a constant."""
    inf = np.inf
    A = sp.csr_matrix(np.array([[1.0, 1, 0, 0, 1, 1], [0, 1, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0]]))
    return QPData(
        c=np.array([1.0, -2, 3, 0.5, -1, 1]),
        A=A,
        row_lo=np.array([-10.0, -inf, 2.0]),
        row_hi=np.array([4.0, 5.0, 2.0]),
        col_lo=np.array([-inf, -inf, 2, 2, 0, -1]),
        col_hi=np.array([inf, -3, inf, 2, 7, -0.5]),
        P=sp.diags([1.0, 2, 0, 1, 0, 0]).tocsr(),
        offset=1.5,
        col_blocks=[("x", 6)],
        row_blocks=[("r", 3)],
        name="bounds",
    )


@pytest.mark.parametrize("mps_format", ["free", "fixed"])
def test_mps_bounds_are_explicit_and_both_parsers_agree(tmp_path, mps_format):
    qp = _bounds_model()
    path = tmp_path / "b.mps"
    write(qp, path, mps_format=mps_format)
    text = path.read_text()
    assert text.splitlines()[0].split() == ["NAME", "bounds"]
    for kind in (" FR ", " MI ", " UP ", " LO ", " FX ", "RANGES"):
        assert kind in text
    reads = [read(path, mps_parser=p) for p in ("free", "fixed")]
    for back in reads:
        for field in ("col_lo", "col_hi", "row_lo", "row_hi", "c"):
            np.testing.assert_array_equal(getattr(back, field), getattr(qp, field), err_msg=field)
        assert back.offset == 1.5 and back.n_rows == 3
    ref = solve_qp(qp, "highs").objective
    assert all(_same_optimum(solve_qp(b, "highs").objective, ref) for b in reads)


def test_negative_upper_bound_with_zero_lower_is_not_read_as_minus_inf(tmp_path):
    qp = QPData(
        c=np.array([1.0]),
        A=sp.csr_matrix(np.ones((1, 1))),
        row_lo=np.array([-10.0]),
        row_hi=np.array([10.0]),
        col_lo=np.array([0.0]),
        col_hi=np.array([-3.0]),
    )
    write(qp, tmp_path / "neg.mps")
    for parser in ("free", "fixed"):
        back = read(tmp_path / "neg.mps", mps_parser=parser)
        assert (back.col_lo[0], back.col_hi[0]) == (0.0, -3.0)


def test_lp_refuses_ranged_rows_and_mps_free_rows(tmp_path):
    qp = _bounds_model()
    with pytest.raises(ExportError, match=r"r_0.*ranged.*\.mps"):
        write(qp, tmp_path / "b.lp")
    qp.row_lo[0], qp.row_hi[0] = -np.inf, np.inf
    with pytest.raises(ExportError, match=r"r_0.*no finite bound.*\.lp"):
        write(qp, tmp_path / "b.mps")
    assert not list(tmp_path.iterdir())
    write(qp, tmp_path / "b.lp")  # LP keeps a free row: '>= -inf'
    back = read(tmp_path / "b.lp")
    assert back.n_rows == 3 and back.row_lo[0] == -np.inf and back.row_hi[0] == np.inf
    assert _same_optimum(solve_qp(back, "highs").objective, solve_qp(qp, "highs").objective)


def test_names_are_readable():
    qp = LAD(X, Y).qp("primal")
    names = qp.col_names()
    assert names[:4] == ["beta_0", "beta_1", "beta_2", "intercept_0"]
    assert names[4] == "e_plus_0" and qp.row_names()[0] == "residual_0"


def test_mps_quadratic_section(tmp_path):
    write(Ridge(X, Y, alpha=2.0), tmp_path / "r.mps")
    text = (tmp_path / "r.mps").read_text()
    assert "QUADOBJ" in text and "QMATRIX" not in text


def test_nan_model_is_not_written(tmp_path):
    qp = LAD(X, Y).qp("primal")
    qp.c[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        write(qp, tmp_path / "bad.mps")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda q: q.col_hi.__setitem__(0, 1e25), r"upper bound 1e\+25 of column 'u_0'"),
        (lambda q: q.col_lo.__setitem__(3, -1e20), r"lower bound -1e\+20 of column 'u_3'"),
        (lambda q: q.row_lo.__setitem__(1, 3e21), r"row 'stationarity_1'"),
        (lambda q: q.c.__setitem__(2, 1e22), r"objective coefficient 1e\+22 of column 'u_2'"),
    ],
)
def test_huge_values_are_refused_not_written_as_infinite(tmp_path, change, needle):
    qp = LAD(X, Y).qp("dual")
    change(qp)
    for suffix in (".mps", ".lp"):
        with pytest.raises(ExportError, match=needle) as err:
            write(qp, tmp_path / f"big{suffix}")
        assert "1e20" in str(err.value) and "infinite" in str(err.value)
    assert not list(tmp_path.iterdir())


def test_unknown_suffix_format_and_missing_folder(tmp_path):
    with pytest.raises(ExportError, match=r"\.mps or \.lp"):
        write(LAD(X, Y), tmp_path / "model.nl")
    with pytest.raises(ExportError, match="free, fixed"):
        write(LAD(X, Y), tmp_path / "model.mps", mps_format="wide")
    with pytest.raises(ExportError, match="does not exist"):
        write(LAD(X, Y), tmp_path / "nope" / "model.mps")
    with pytest.raises(ValueError, match="residual"):
        write(Ridge(X, Y), tmp_path / "model.mps", form="dual")
    assert not list(tmp_path.iterdir())


def test_read_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(FileNotFoundError, match="No model file"):
        read(tmp_path / "absent.mps")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ValueError, match=r"\.mps or \.lp"):
        read(tmp_path / "m.txt")
