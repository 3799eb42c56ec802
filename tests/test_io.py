"""Tests for instances.io: round trips, the svmlight parser against scikit-learn, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from instances import io as dio
from instances.io import Data, DataFileError, load, save

FORMATS = ["csv", "svm", "libsvm", "txt", "npz"]


def _data(n: int = 40, p: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * 10.0 ** rng.integers(-8, 8, size=(n, p))
    X[rng.random((n, p)) < 0.4] = 0.0           # sparse, as svmlight files are
    X[:, -1] = 0.0                              # an all-zero trailing column
    X[0, 0] = 1 / 3                             # a value with no short decimal
    y = rng.choice([-1.0, 1.0], size=n)
    w = rng.uniform(0.0, 3.0, size=n)
    return X, y, w


def _dense(X) -> np.ndarray:
    """Data.X as a dense array (svmlight files load as CSR matrices)."""
    return X.toarray() if sp.issparse(X) else X


def _no_temp_files(directory) -> bool:
    return not [f for f in os.listdir(directory) if f.endswith(".tmp")]


# --- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("weighted", [False, True])
def test_round_trip_is_exact(tmp_path, ext, weighted):
    X, y, w = _data()
    path = tmp_path / f"d.{ext}"
    save(path, X, y, w if weighted else None, feature_names=[f"f{j}" for j in range(5)])
    d = load(path)
    assert isinstance(d, Data)
    assert d.X.dtype == d.y.dtype == np.float64
    assert sp.issparse(d.X) == (ext in ("svm", "libsvm", "txt"))
    np.testing.assert_array_equal(_dense(d.X), X)
    np.testing.assert_array_equal(d.y, y)
    if weighted:
        np.testing.assert_array_equal(d.sample_weight, w)
    else:
        assert d.sample_weight is None
    assert d.feature_names == [f"f{j}" for j in range(5)]
    assert _no_temp_files(tmp_path)


@pytest.mark.parametrize("ext", FORMATS)
def test_default_feature_names(tmp_path, ext):
    X, y, _ = _data(n=4, p=3)
    save(tmp_path / f"d.{ext}", X, y)
    assert load(tmp_path / f"d.{ext}").feature_names == ["x1", "x2", "x3"]


def test_save_replaces_existing_file(tmp_path):
    X, y, _ = _data()
    path = tmp_path / "d.csv"
    save(path, X, y)
    save(path, X[:3], y[:3])
    assert load(path).X.shape == (3, 5)


def test_saved_file_has_normal_permissions(tmp_path):
    X, y, _ = _data(n=3)
    path = tmp_path / "d.csv"
    save(path, X, y)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


# --- svmlight against scikit-learn -------------------------------------------------------------

SVM_TEXT = """\
# a comment line before the data
+1 1:0.5 3:-2 10:1e-3
-1 qid:3 2:4.25 3:7   # trailing comment

1.5
-2 1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9 10:10
0 5:nan 7:inf
"""


def test_svmlight_parser_matches_sklearn_on_handwritten_file(tmp_path):
    skd = pytest.importorskip("sklearn.datasets")
    path = tmp_path / "h.svm"
    path.write_text(SVM_TEXT)
    d = load(path)
    X_ref, y_ref = skd.load_svmlight_file(str(path), zero_based=False)
    np.testing.assert_array_equal(d.X.toarray(), X_ref.toarray())
    np.testing.assert_array_equal(d.y, y_ref)
    assert d.X.shape == (5, 10) and d.sample_weight is None
    assert np.isnan(d.X[4, 4]) and np.isinf(d.X[4, 6])


def test_svmlight_reads_file_written_by_sklearn(tmp_path):
    skd = pytest.importorskip("sklearn.datasets")
    X, y, _ = _data(n=3000, p=25, seed=4)
    path = tmp_path / "sk.libsvm"
    skd.dump_svmlight_file(X, y, str(path), zero_based=False, comment="made by sklearn")
    d = load(path)
    X_ref, y_ref = skd.load_svmlight_file(str(path), zero_based=False)
    np.testing.assert_array_equal(d.X.toarray(), X_ref.toarray())
    np.testing.assert_array_equal(d.y, y_ref)
    # sklearn writes 16 significant digits; the trailing zero column is not in the file
    np.testing.assert_allclose(d.X.toarray(), X[:, :24], rtol=1e-15, atol=0)


def test_svmlight_written_file_is_read_by_sklearn(tmp_path):
    skd = pytest.importorskip("sklearn.datasets")
    X, y, w = _data(n=200, p=6, seed=2)
    path = tmp_path / "ours.svm"
    save(path, X, y, w)
    X_ref, y_ref = skd.load_svmlight_file(str(path), n_features=6, zero_based=False)
    np.testing.assert_array_equal(X_ref.toarray(), X)
    np.testing.assert_array_equal(y_ref, y)


# --- csv by column name ------------------------------------------------------------------------


def test_csv_target_and_weight_chosen_by_name(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a, label ,b,w\n1,2,3,4\n5,6,7,8\n")
    d = load(path, target="label", weight="w")
    np.testing.assert_array_equal(d.X, [[1, 3], [5, 7]])
    np.testing.assert_array_equal(d.y, [2, 6])
    np.testing.assert_array_equal(d.sample_weight, [4, 8])
    assert d.feature_names == ["a", "b"]
    d = load(path, target="label")                   # no weight column named: w is a feature
    assert d.feature_names == ["a", "b", "w"] and d.sample_weight is None


def test_csv_nan_and_empty_cells_read_as_nan(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text("x1,x2,y\nnan,1,2\n,NaN,3\n4,5,-inf\n")
    d = load(path)
    assert np.isnan(d.X[0, 0]) and np.isnan(d.X[1, 0]) and np.isnan(d.X[1, 1])
    assert d.y[2] == -np.inf


def test_npz_target_by_name(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.eye(2), label=np.array([1, -1]), w=np.array([1.0, 2.0]))
    d = load(path, target="label", weight="w")
    np.testing.assert_array_equal(d.y, [1.0, -1.0])
    np.testing.assert_array_equal(d.sample_weight, [1.0, 2.0])
    assert d.y.dtype == np.float64


# --- load(target=None): features only ----------------------------------------------------------


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("weighted", [False, True])
def test_load_without_target_gives_the_features(tmp_path, ext, weighted):
    X, y, w = _data(n=12, p=4)
    names = ["a", "b c", "d", "e"]
    path = tmp_path / f"d.{ext}"
    save(path, X, y, w if weighted else None, feature_names=names)
    d = load(path, target=None)
    assert d.y is None
    if ext == "csv":  # every column but the weight column is a feature: y is the last one
        np.testing.assert_array_equal(d.X, np.column_stack([X, y]))
        assert d.feature_names == [*names, "y"]
    else:  # npz: the y array is ignored; svmlight: the labels are read and dropped
        np.testing.assert_array_equal(_dense(d.X), X)
        assert d.feature_names == names
    if weighted:
        np.testing.assert_array_equal(d.sample_weight, w)
    else:
        assert d.sample_weight is None


def test_load_without_target_reads_a_csv_or_npz_that_has_none(tmp_path):
    csv_path, npz_path = tmp_path / "new.csv", tmp_path / "new.npz"
    csv_path.write_text("age,dose\n1.5,2\n-3,0.25\n")
    d = load(csv_path, target=None)
    np.testing.assert_array_equal(d.X, [[1.5, 2.0], [-3.0, 0.25]])
    assert d.y is None and d.feature_names == ["age", "dose"]
    with pytest.raises(DataFileError, match="no target column named 'y'"):
        load(csv_path)  # the default still needs the target
    np.savez(npz_path, X=np.arange(6.0).reshape(3, 2))
    d = load(npz_path, target=None)
    np.testing.assert_array_equal(d.X, np.arange(6.0).reshape(3, 2))
    assert d.y is None and d.feature_names == ["x1", "x2"]
    np.savez(npz_path, X=np.arange(6.0), y=np.zeros(6))
    with pytest.raises(DataFileError, match="X must be 2-D"):
        load(npz_path, target=None)


# --- load errors -------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv.*no such data file"):
        load(tmp_path / "nope.csv")


def test_unknown_extension_lists_supported(tmp_path):
    (tmp_path / "d.xlsx").write_text("x")
    with pytest.raises(DataFileError, match=r"d\.xlsx.*\.csv, \.svm, \.libsvm, \.txt, \.npz"):
        load(tmp_path / "d.xlsx")
    with pytest.raises(ValueError, match="Supported extensions"):
        save(tmp_path / "d.parquet", np.eye(2), np.ones(2))


def test_unreadable_file(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataFileError, match="dir.csv.*cannot read the file as csv"):
        load(tmp_path / "dir.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(DataFileError, match="bin.csv.*cannot read"):
        load(tmp_path / "bin.csv")
    (tmp_path / "nul.csv").write_bytes(b"a,y\n1,\x002\n")
    with pytest.raises(DataFileError, match=r"nul.csv: line 2, column 'y'.*not a number"):
        load(tmp_path / "nul.csv")
    (tmp_path / "bad.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataFileError, match="bad.npz.*cannot read the file as npz"):
        load(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "text, match",
    [
        ("a,b,y\n1,2,3\n4,5\n", r"ragged rows: data row 2 \(line 3\) has 2 fields"),
        ("a,b,y\n1,2,3\n4,five,6\n", r"line 3, column 'b': 'five' is not a number"),
        ("a,b,y\n\n1,2,3\n\n4,five,6\n", r"line 5, column 'b': 'five' is not a number"),
        ("a,b,y\n", "not followed by any data rows"),
        ("1,2,3\n4,5,6\n", "header row of column names is required"),
        ("", "empty"),
        ("a,b,c\n1,2,3\n", r"no target column named 'y'. Available columns: 'a', 'b', 'c'"),
    ],
)
def test_csv_errors(tmp_path, text, match):
    path = tmp_path / "e.csv"
    path.write_text(text)
    with pytest.raises(DataFileError, match=match):
        load(path)


def test_csv_missing_weight_column(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("a,y\n1,2\n")
    with pytest.raises(DataFileError, match="no weight column named 'w'.*'a', 'y'"):
        load(path, weight="w")


@pytest.mark.parametrize(
    "text, match",
    [
        ("1 0:1 2:3\n", "1-based"),
        ("1 1:1 1:3\n", "line 1: feature index 1 appears twice in data line 1"),
        ("# c\n1 1:1\n2 3:1 2:3\n", "line 3: feature index 2 follows 3; indices must increase"),
        ("1 1:1 2\n", "line 1: not svmlight"),
        ("1 1:1.5:2\n", "line 1: not svmlight"),
        ("1 1.5:2\n", r"line 1: feature index '1.5' is not a whole number >= 1"),
        ("1 1:x\n", "line 1: value 'x' is not a number"),
        ("one 1:2\n", "line 1: label 'one' is not a number"),
        ("1 1:2 # sample_weight: heavy\n", "sample_weight 'heavy' is not a number"),
        ("# only a comment\n\n", "no data lines"),
        ("1 1:2 # sample_weight: 3\n1 1:2\n", "1 of 2 lines carry"),
    ],
)
def test_svmlight_errors(tmp_path, text, match):
    path = tmp_path / "e.svm"
    path.write_text(text)
    with pytest.raises(DataFileError, match=match):
        load(path)


def test_svmlight_rejects_target_argument(tmp_path):
    path = tmp_path / "e.svm"
    path.write_text("1 1:2\n")
    with pytest.raises(DataFileError, match="'target' \\('label'\\)"):
        load(path, target="label")
    with pytest.raises(DataFileError, match="'weight' .*apply to .csv and .npz only"):
        load(path, weight="w")


def test_npz_errors(tmp_path):
    path = tmp_path / "e.npz"
    np.savez(path, X=np.eye(2))
    with pytest.raises(DataFileError, match=r"no target array 'y'; arrays present: \['X'\]"):
        load(path)
    np.savez(path, X=np.eye(2), y=np.array(["a", "b"]))
    with pytest.raises(DataFileError, match="not numeric"):
        load(path)
    np.savez(path, X=np.eye(2), y=np.ones(3))
    with pytest.raises(DataFileError, match="as many rows"):
        load(path)


# --- save errors and atomicity -----------------------------------------------------------------


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("array, bad, word", [
    ("X", np.nan, "NaN"), ("y", np.inf, "infinity"), ("sample_weight", np.nan, "NaN"),
])
def test_save_refuses_nonfinite_and_writes_nothing(tmp_path, ext, array, bad, word):
    X, y, w = _data()
    arrays = {"X": X, "y": y, "sample_weight": w}
    arrays[array] = arrays[array].copy()
    arrays[array].flat[3] = bad
    path = tmp_path / f"d.{ext}"
    with pytest.raises(ValueError, match=f"^Input {array!r} contains {word}"):
        save(path, arrays["X"], arrays["y"], arrays["sample_weight"])
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    X, y, _ = _data()
    path = tmp_path / "d.csv"
    save(path, X, y)
    before = path.read_bytes()

    def broken_writer(fh, *args):
        fh.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(dio, "_write_csv", broken_writer)
    with pytest.raises(OSError, match="disk full"):
        save(path, X[:2], y[:2])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["d.csv"]


@pytest.mark.parametrize("kwargs, match", [
    ({"X": np.ones(3), "y": np.ones(3)}, "X must be 2-D"),
    ({"X": np.ones((3, 2)), "y": np.ones(4)}, r"y must have shape \(3,\)"),
    ({"X": np.ones((3, 2)), "y": np.ones(3), "sample_weight": np.ones(2)}, "sample_weight must"),
    ({"X": np.ones((3, 2)), "y": np.ones(3), "feature_names": ["a"]}, "has 1 names"),
    ({"X": np.ones((3, 2)), "y": np.ones(3), "feature_names": ["a", "y"]}, "reserved"),
])
def test_save_bad_shapes_and_names(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        save(tmp_path / "d.npz", **kwargs)
    assert os.listdir(tmp_path) == []


def test_save_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save(tmp_path / "no" / "d.csv", np.eye(2), np.ones(2))


# --- the pandas / scikit-learn readers against independent references ------------------------


def _reference_csv(path) -> tuple[list[str], np.ndarray]:
    """Header and float64 cells by the csv module and Python's float (blank rows skipped)."""
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if any(c.strip() for c in r)]
    cells = [[float(c) if c.strip() else np.nan for c in r] for r in rows[1:]]
    return [h.strip() for h in rows[0]], np.array(cells, dtype=np.float64)


def test_csv_matches_reference_reader_on_generated_file(tmp_path):
    rng = np.random.default_rng(7)
    n, p = 500, 6
    V = rng.standard_normal((n, p + 2)) * 10.0 ** rng.integers(-300, 300, size=(n, p + 2))
    cells = [[repr(v) for v in row] for row in V.tolist()]
    for i, j, text in [(3, 0, ""), (5, 1, "nan"), (8, 2, " -inf "), (9, 3, "NaN"), (11, 4, "7"),
                       (12, 5, "1e-320"), (13, 0, "Infinity"), (14, 1, " 2.5")]:
        cells[i][j] = text
    lines = ['a,"b, quoted", c ,a2,d,e,y,sample_weight']  # repeated names are refused
    for i, row in enumerate(cells):
        lines.append(",".join(row))
        if i % 97 == 0:
            lines.append("")                          # blank lines are skipped
    path = tmp_path / "g.csv"
    path.write_text("\n".join(lines) + "\n")
    header, A = _reference_csv(path)
    d = load(path)
    np.testing.assert_array_equal(d.X, A[:, :p])
    np.testing.assert_array_equal(d.y, A[:, p])
    np.testing.assert_array_equal(d.sample_weight, A[:, p + 1])
    assert d.feature_names == header[:p] == ["a", "b, quoted", "c", "a2", "d", "e"]
    assert d.X.flags.c_contiguous and d.X.dtype == np.float64


def test_csv_cells_pandas_cannot_read_take_python_float(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("a,y\n1_000,nAn\n2,+NAN\n")
    d = load(path)
    np.testing.assert_array_equal(d.X, [[1000.0], [2.0]])
    assert np.isnan(d.y).all()
    path.write_text("a,y\n1,2\n\nTRUE,3\n")           # pandas alone would read this as 1.0
    with pytest.raises(DataFileError, match=r"line 4, column 'a': 'TRUE' is not a number"):
        load(path)


@pytest.mark.parametrize("text, match", [
    ("a,b,y\n1,2,3,4\n4,5,6,7\n", r"data row 1 \(line 2\) has 4 fields but the header has 3"),
    ("a,b,y\n1,2,3\n\n4,5,6,7\n", r"data row 2 \(line 4\) has 4 fields"),
    ("a,b,y\n1,2,\n4,5\n", r"data row 2 \(line 3\) has 2 fields"),
])
def test_csv_long_and_short_rows(tmp_path, text, match):
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(DataFileError, match=match):
        load(path)


def _sparse_svmlight(path, n: int, p: int, density: float, seed: int):
    """A random sparse data set written by scikit-learn (1-based): (X csr, y)."""
    skd = pytest.importorskip("sklearn.datasets")
    rng = np.random.default_rng(seed)
    k = max(1, round(density * p))                   # nonzeros per row
    cols = np.concatenate([np.sort(rng.choice(p, k, replace=False)) for _ in range(n)])
    X = sp.csr_matrix((rng.standard_normal(n * k), cols, np.arange(0, n * k + 1, k)),
                      shape=(n, p))
    y = np.where(X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n) >= 0, 1.0, -1.0)
    skd.dump_svmlight_file(X, y, str(path), zero_based=False)
    return X, y


def test_large_sparse_svmlight_stays_sparse(tmp_path):
    path = tmp_path / "big.svm"
    X, y = _sparse_svmlight(path, 1000, 50000, 0.001, seed=3)
    d = load(path)
    p = X.indices.max() + 1                            # sklearn writes no n_features header
    assert sp.issparse(d.X) and d.X.format == "csr" and d.X.shape == (1000, p)
    assert d.X.nnz == X.nnz == 50000
    stored = d.X.data.nbytes + d.X.indices.nbytes + d.X.indptr.nbytes
    assert stored < 0.01 * 1000 * 50000 * 8           # < 4 MB where dense X is 400 MB
    # sklearn writes 16 significant digits
    assert abs(d.X - X[:, :p]).max() <= 1e-15 * abs(X).max()
    np.testing.assert_array_equal(d.y, y)


def _cli_json(capsys, *args: str) -> dict:
    import json

    from optmodels.cli import main

    assert main(list(args)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_sparse_svmlight_solves_through_cli(tmp_path, capsys):
    from optmodels.lad import LAD
    from optmodels.svm import SVM

    path = tmp_path / "s.svm"
    X, y = _sparse_svmlight(path, 80, 300, 0.02, seed=5)
    rec = _cli_json(capsys, "solve", "svm", "--data", str(path), "--json")
    assert rec["p"] == X.indices.max() + 1 and rec["termination"] == "optimal"
    assert rec["objective"] == pytest.approx(SVM(X.toarray(), y).solve_full().objective,
                                             rel=1e-7)
    rng = np.random.default_rng(6)
    Xr = sp.random(200, 8, density=0.5, format="csr", random_state=rng)
    yr = Xr @ rng.standard_normal(8) + rng.standard_normal(200)
    save(tmp_path / "r.svm", Xr.toarray(), yr)
    rec = _cli_json(capsys, "solve", "lad", "--data", str(tmp_path / "r.svm"), "--json")
    assert rec["objective"] == pytest.approx(LAD(Xr.toarray(), yr).solve_full().objective,
                                             rel=1e-9)


@pytest.mark.slow
def test_large_sparse_svmlight_solves_through_cli(tmp_path, capsys):
    """1000 x 50000 at 0.1%: ~13 s, ~1 GB peak (the problem classes densify X)."""
    from optmodels.svm import SVM

    path = tmp_path / "big.svm"
    X, y = _sparse_svmlight(path, 1000, 50000, 0.001, seed=3)
    rec = _cli_json(capsys, "solve", "svm", "--data", str(path), "--json")
    assert rec["termination"] == "optimal" and rec["p"] == X.indices.max() + 1
    ref = SVM(load(path).X, y).solve_full().objective
    assert rec["objective"] == pytest.approx(ref, rel=1e-7)
