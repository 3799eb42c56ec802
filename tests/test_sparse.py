"""Sparse CSR/CSC input: kept sparse where the strategy can, refused clearly where it cannot.

Every check compares the sparse problem with the same problem built on ``X.toarray()`` (the
dense path is the independent reference) and looks at what the problem stores.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.errors import DataError
from solvers.sparse import CentredSparse
from solvers.validation import check_array

RIDGE_STRATEGIES = ["full", "pcg-rfd", "pcg-fd", "fdrr", "ihs-gaussian", "classical-sjlt"]


def _sparse(n: int, d: int, fmt: str = "csr", seed: int = 0) -> sp.spmatrix:
    return sp.random(n, d, density=0.15, format=fmt, random_state=seed)


def _data(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)


# ---------------------------------------------------------------------------- check_array
def test_check_array_keeps_sparse_csr_and_checks_values() -> None:
    X = _sparse(30, 8, "csc")
    out = check_array(X, "X", accept_sparse=True, keep_sparse=True)
    assert sp.issparse(out) and out.format == "csr" and out.dtype == np.float64
    np.testing.assert_array_equal(out.toarray(), X.toarray())
    bad = X.tocsr(copy=True)
    bad.data[0] = np.nan
    with pytest.raises(DataError, match="'X' contains NaN"):
        check_array(bad, "X", accept_sparse=True, keep_sparse=True)
    with pytest.raises(DataError, match="at least 31"):
        check_array(X, "X", accept_sparse=True, keep_sparse=True, min_samples=31)


def test_centred_sparse_products_equal_dense() -> None:
    X = _sparse(25, 12)
    rng = np.random.default_rng(3)
    m, w = rng.normal(size=12), rng.uniform(0.5, 2, 25)
    M = CentredSparse(X, m, w)
    D = (X.toarray() - m) * w[:, None]
    x, v = rng.normal(size=12), rng.normal(size=25)
    np.testing.assert_allclose(M @ x, D @ x, atol=1e-12)
    np.testing.assert_allclose(M.T @ v, D.T @ v, atol=1e-12)
    np.testing.assert_allclose(M.gram(), D.T @ D, atol=1e-12)
    np.testing.assert_allclose(M.outer(), D @ D.T, atol=1e-12)
    np.testing.assert_allclose(M[5:9], D[5:9], atol=1e-15)


# ---------------------------------------------------------------------------- ridge
@pytest.mark.parametrize("shape", [(80, 20), (20, 60)])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_ridge_sparse_equals_dense(shape: tuple[int, int], fit_intercept: bool) -> None:
    n, d = shape
    A = _sparse(n, d, "csc")
    b, s = _data(n)
    kw = dict(alpha=0.3, fit_intercept=fit_intercept, sample_weight=s)
    ps, pd = Ridge(A, b, **kw), Ridge(A.toarray(), b, **kw)
    assert sp.issparse(ps.A) and isinstance(ps.Aw, CentredSparse)
    assert not any(isinstance(v, np.ndarray) and v.size >= n * d for v in vars(ps).values())
    assert not any(isinstance(v, np.ndarray) and v.size >= n * d for v in vars(ps.Aw).values())
    for strategy in RIDGE_STRATEGIES:
        rs, rd = ps.solve(strategy), pd.solve(strategy)
        np.testing.assert_allclose(rs.x, rd.x, atol=1e-10, err_msg=strategy)
        assert abs(rs.objective - rd.objective) <= 1e-10 * max(1.0, abs(rd.objective))
        assert abs(rs.extra["intercept"] - rd.extra["intercept"]) <= 1e-10
    np.testing.assert_allclose(ps.qp().A.toarray(), pd.qp().A.toarray(), atol=1e-14)


def test_fd_sketch_accepts_sparse_blocks() -> None:
    from solvers.sketch.fd import FrequentDirections

    X = _sparse(60, 15)
    a = FrequentDirections(6).partial_fit(X[:30]).partial_fit(X[30:])
    b = FrequentDirections(6).partial_fit(X[:30].toarray()).partial_fit(X[30:].toarray())
    np.testing.assert_allclose(a.sketch_, b.sketch_, atol=1e-12)


# ---------------------------------------------------------------------------- LAD
@pytest.mark.parametrize("fit_intercept,quantile", [(True, 0.5), (False, 0.7)])
def test_lad_sparse_lp_equals_dense(fit_intercept: bool, quantile: float) -> None:
    X = _sparse(90, 8, "csc", seed=4)
    y, s = _data(90, seed=5)
    kw = dict(sample_weight=s, fit_intercept=fit_intercept, quantile=quantile)
    ps, pd = LAD(X, y, **kw), LAD(X.toarray(), y, **kw)
    assert sp.issparse(ps.X) and sp.issparse(ps.design)
    for form in ("dual", "primal"):
        qs, qd = ps.qp(form), pd.qp(form)
        np.testing.assert_array_equal(qs.A.toarray(), qd.A.toarray())
        ones = 90 if fit_intercept else 0  # the intercept column
        assert qs.A.nnz == X.nnz + ones + (2 * 90 if form == "primal" else 0)
        rs, rd = ps.solve("full", form=form), pd.solve("full", form=form)
        assert rs.termination.name == "OPTIMAL"
        assert abs(rs.objective - rd.objective) <= 1e-9 * rd.objective
        np.testing.assert_allclose(rs.x, rd.x, atol=1e-7)
    ra, rb = ps.solve("aid"), pd.solve("aid")  # densified: 90 x 8 fits the budget
    assert abs(ra.objective - rb.objective) <= 1e-9 * rb.objective


def test_aid_on_sparse_refused_above_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from optmodels import guards

    X = _sparse(200, 30, seed=6)
    y, _ = _data(200)
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", 200 * 30 * 8 / 2**20 / 2)
    with pytest.raises(DataError, match=r"Strategy 'aid' of lad needs X dense.*200 x 30.*"
                                        r"strategy='full', which keeps X sparse"):
        LAD(X, y).solve("aid")
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", 200 * 30 * 8 / 2**20 * 2)
    assert LAD(X, y).solve("aid").objective > 0


# ---------------------------------------------------------------------------- SVM
def _svm_data(n: int = 70, p: int = 12) -> tuple[sp.spmatrix, np.ndarray, np.ndarray]:
    X = _sparse(n, p, seed=7)
    rng = np.random.default_rng(8)
    y = np.where(X @ np.ones(p) + 0.3 * rng.normal(size=n) > 0.5, 1, -1)
    return X, y, rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("loss,strategies", [("hinge", ["full", "aid", "smo", "block"]),
                                             ("squared_hinge", ["full", "newton"])])
def test_linear_svm_sparse_equals_dense(loss: str, strategies: list[str]) -> None:
    X, y, s = _svm_data()
    kw = dict(sample_weight=s, C=2.0, loss=loss)
    ps, pd = SVM(X, y, **kw), SVM(X.toarray(), y, **kw)
    assert sp.issparse(ps.X) and ps.kernel_.gamma == pytest.approx(pd.kernel_.gamma, rel=1e-12)
    np.testing.assert_array_equal(ps.qp().A.toarray(), pd.qp().A.toarray())
    for strategy in strategies:
        rs, rd = ps.solve(strategy), pd.solve(strategy)
        assert abs(rs.objective - rd.objective) <= 1e-9 * rd.objective, strategy
        np.testing.assert_allclose(rs.x, rd.x, atol=1e-7, err_msg=strategy)
    if loss == "hinge":
        rs, rd = ps.solve("full", form="dual"), pd.solve("full", form="dual")
        assert abs(rs.objective - rd.objective) <= 1e-9 * rd.objective
        np.testing.assert_allclose(ps.decision_function(rs, X[:9]),
                                   pd.decision_function(rd, X[:9].toarray()), atol=1e-9)


def test_svm_smo_on_sparse_refused_above_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from optmodels import guards

    X, y, _ = _svm_data()
    monkeypatch.setattr(guards, "MEMORY_BUDGET_MB", 1e-4)
    for strategy in ("smo", "block", "aid"):
        with pytest.raises(DataError, match=rf"Strategy '{strategy}' of svm needs X dense.*"
                                            r"strategy='full', which keeps X sparse"):
            SVM(X, y).solve(strategy)
    assert SVM(X, y).solve("full").termination.name == "OPTIMAL"  # primal QP from sparse X


def test_svm_rbf_densifies_sparse() -> None:
    X, y, _ = _svm_data()
    ps, pd = SVM(X, y, kernel="rbf"), SVM(X.toarray(), y, kernel="rbf")
    assert isinstance(ps.X, np.ndarray)
    assert abs(ps.solve("smo").objective - pd.solve("smo").objective) <= 1e-12


# ---------------------------------------------------------------------------- estimators
def _recording(monkeypatch: pytest.MonkeyPatch, est_cls: type, seen: list) -> None:
    """Make ``est_cls`` build a problem subclass that records whether its X is sparse."""
    base = est_cls._PROBLEM

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, X, *args, **kwargs) -> None:
            super().__init__(X, *args, **kwargs)
            seen.append(sp.issparse(self.X))

    monkeypatch.setattr(est_cls, "_PROBLEM", Recording)


@pytest.mark.parametrize("name,params,classify", [
    ("RidgeRegressor", {"alpha": 0.5}, False),
    ("RidgeRegressor", {"strategy": "pcg-rfd"}, False),
    ("LADRegressor", {"quantile": 0.6}, False),
    ("SVMClassifier", {"kernel": "linear", "strategy": "full", "probability": True}, True),
    ("SVMClassifier", {"kernel": "linear"}, True),
])
def test_estimators_pass_sparse_through(monkeypatch: pytest.MonkeyPatch, name: str,
                                        params: dict, classify: bool) -> None:
    import optmodels.estimators as est

    cls = getattr(est, name)
    X = _sparse(90, 10, "csc", seed=9)
    rng = np.random.default_rng(10)
    y = rng.integers(0, 3, 90) if classify else X @ rng.normal(size=10) + 0.1 * rng.normal(
        size=90)
    dense = cls(**params).fit(X.toarray(), y)
    seen: list[bool] = []
    _recording(monkeypatch, cls, seen)
    fitted = cls(**params).fit(X, y)
    assert seen and all(seen)  # every problem built held X sparse
    out = (fitted.decision_function(X) if classify else fitted.predict(X))
    ref = (dense.decision_function(X.toarray()) if classify else dense.predict(X.toarray()))
    np.testing.assert_allclose(out, ref, atol=1e-8)


def test_svm_classifier_rbf_densifies(monkeypatch: pytest.MonkeyPatch) -> None:
    from optmodels.estimators import SVMClassifier

    X, y, _ = _svm_data()
    seen: list[bool] = []
    _recording(monkeypatch, SVMClassifier, seen)
    SVMClassifier(kernel="rbf").fit(X, y)
    assert seen == [False]


def test_sparse_rows_stream_bounded_dense_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from solvers.rows import SparseRows

    rows = SparseRows(_sparse(50, 40))
    assert rows.block_rows(10**6) == 16 * 2**20 // (8 * 40) and rows.block_rows(4096) == 4096
    monkeypatch.setattr(SparseRows, "DENSE_BLOCK_BYTES", 7 * 8 * 40)  # 7 rows per block
    assert rows.block_rows(4096) == 7 and rows.block_rows(3) == 3
    A = _sparse(120, 30, seed=11)
    b, s = _data(120)
    ps = Ridge(A, b, alpha=0.2, fit_intercept=True, sample_weight=s)
    exact = Ridge(A.toarray(), b, alpha=0.2, fit_intercept=True, sample_weight=s).closed_form()
    res = ps.solve("pcg-rfd", m=25, max_iter=200)  # 7-row FD blocks: converges all the same
    assert res.termination.name == "OPTIMAL"
    np.testing.assert_allclose(res.x, exact, atol=1e-8)
    pd = Ridge(A.toarray(), b, alpha=0.2, fit_intercept=True, sample_weight=s)
    for strategy in ("classical-sjlt", "classical-gaussian"):  # the same S as the dense run
        np.testing.assert_allclose(ps.solve(strategy, m=25).x, pd.solve(strategy, m=25).x,
                                   atol=1e-10, err_msg=strategy)
