"""The reliability checklist, row by row (#1-#32), at the problem level.

Every test compares the toolkit with an independent reference: a closed form, numpy/scipy
(``linprog``, ``minimize``, an SVD), scikit-learn (``Ridge``, ``SVC``), statsmodels
(``QuantReg``), or the same problem rewritten (removal vs zero weight, repetition vs integer
weight, rescaled data). The equivalence rows (#11, #12, #13) run for seeds 0-4 (#32); #24 lives
in tests/conformance/test_strategies.py.
There are no scikit-learn estimators yet: the rows that only make sense for an estimator are
listed in :data:`AWAITING_ESTIMATORS` instead of being faked or skipped silently.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog, minimize
from threadpoolctl import threadpool_limits

from instances import make_classification, make_lad
from optmodels import KLR, LAD, SVM, Ridge
from optmodels.export import read, write
from solvers.backend import solve_qp
from solvers.errors import LimitReachedError, NumericalError, SolveError
from solvers.qp import QPData
from solvers.result import CERTIFICATE_TOL, TerminationCondition

SEEDS = [0, 1, 2, 3, 4]
"""#32: the seed sweep of every equivalence test (#11, #12, #13)."""

AWAITING_ESTIMATORS = {
    9: "predict before fit -> NotFittedError needs estimators with fit/predict",
    14: "'fit returns self' needs estimators; idempotence, untouched inputs/params and "
    "batch == row-wise prediction are tested at the problem level below",
    15: "pickling a *fitted estimator* needs estimators; problems and results of every "
    "model/solver combination are pickled below",
    6: "DataConversionWarning for a column y is scikit-learn's class; the toolkit warns with "
    "a UserWarning (its parent), tested below",
    7: "the predict message names the estimator ('<Est>'); the problems' decision functions "
    "are tested with the problem's class name below",
}
"""Checklist rows (or parts of rows) that wait for scikit-learn estimators, with the reason."""

QP_SOLVERS = ["highs", "clarabel", "ecos"]


# ---------------------------------------------------------------------------- instances
def lad_data(n: int = 60, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y, _, _ = make_lad(n=n, p=p, seed=seed)
    return X, y


def clf_data(n: int = 60, p: int = 3, seed: int = 0, sep: float = 2.0):
    return make_classification(n=n, p=p, separation=sep, seed=seed)


def build(name: str, X, y, w=None, **params):
    """The problem ``name`` on (X, y, w), with small-instance defaults."""
    if name == "lad":
        return LAD(X, y, sample_weight=w, **params)
    if name == "svm":
        return SVM(X, y, sample_weight=w, **{"C": 1.0, **params})
    if name == "klr":
        return KLR(X, y, sample_weight=w, **{"C": 1.0, "kernel": "linear", **params})
    return Ridge(X, y, sample_weight=w, **{"alpha": 1.0, **params})


def data_for(name: str, n: int = 60, p: int = 3, seed: int = 0):
    return lad_data(n, p, seed) if name in ("lad", "ridge") else clf_data(n, p, seed)


PROBLEMS = ["lad", "svm", "klr", "ridge"]


# ---------------------------------------------------------------------------- references
def lad_reference(X, y, w=None, fit_intercept: bool = True) -> float:
    """min sum_i w_i |y_i - x_i'b - b0| by scipy's linprog on the primal LP (e+, e- split)."""
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, float)
    D = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    k = D.shape[1]
    c = np.concatenate([np.zeros(k), w, w])
    A = np.hstack([D, np.eye(n), -np.eye(n)])
    bounds = [(None, None)] * k + [(0, None)] * (2 * n)
    out = linprog(c, A_eq=A, b_eq=y, bounds=bounds, method="highs")
    assert out.status == 0, out.message
    return float(out.fun)


def svm_reference(X, y, C: float, w=None) -> float:
    """P(w, b) of scikit-learn's SVC(kernel='linear', tol=1e-8) (per-row C_i = C w_i)."""
    from sklearn.svm import SVC

    svc = SVC(kernel="linear", C=C, tol=1e-8).fit(X, y, sample_weight=w)
    wv, b = svc.coef_.ravel(), float(svc.intercept_[0])
    ypm = np.where(y == svc.classes_[1], 1.0, -1.0)
    s = np.ones(len(y)) if w is None else np.asarray(w, float)
    return float(0.5 * wv @ wv + C * s @ np.maximum(0.0, 1.0 - ypm * (X @ wv + b)))


def logistic_primal(X, y, C: float, w=None) -> float:
    """min_{w,b} 1/2||w||^2 + sum_i C w_i log(1 + exp(-y_i (w'x_i + b))) by BFGS; the KLR
    dual optimum (linear kernel) is minus this value."""
    s = np.ones(len(y)) if w is None else np.asarray(w, float)

    def fun(theta):
        wv, b = theta[:-1], theta[-1]
        z = -y * (X @ wv + b)
        loss = np.logaddexp(0.0, z)
        sig = np.exp(z - np.logaddexp(0.0, z))
        g = -(C * s * sig * y)
        return 0.5 * wv @ wv + C * s @ loss, np.concatenate([wv + X.T @ g, [g.sum()]])

    out = minimize(fun, np.zeros(X.shape[1] + 1), jac=True, method="BFGS",
                   options={"gtol": 1e-11, "maxiter": 10_000})
    return float(out.fun)


def ridge_reference(X, y, alpha: float, w=None, fit_intercept: bool = False) -> np.ndarray:
    """scikit-learn's Ridge coefficients (same argmin: sum s_i r_i^2 + alpha ||x||^2)."""
    from sklearn.linear_model import Ridge as SkRidge

    est = SkRidge(alpha=alpha, fit_intercept=fit_intercept, solver="svd")
    return est.fit(X, y, sample_weight=w).coef_


def svm_w(problem: SVM, res) -> np.ndarray:
    """The linear w of a result in either form."""
    if res.extra.get("form") == "primal":
        return res.x
    return problem.X.T @ (res.extra["alpha"] * problem.y)


def predictions(problem, res, X_new) -> np.ndarray:
    """The fitted function of a result on X_new (LAD/ridge: the linear fit)."""
    if isinstance(problem, SVM):
        return problem.decision_function(res, X_new)
    if isinstance(problem, KLR):
        return problem.decision_function(res.x, float(res.extra["b"]), X_new)
    return X_new @ res.x + float(res.extra["intercept"])


# ================================================================ #1-#3: non-finite and empty
@pytest.mark.parametrize("name", PROBLEMS)
@pytest.mark.parametrize("where", ["X", "y", "sample_weight"])
@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "infinity"),
                                       (-np.inf, "infinity")])
def test_case01_02_non_finite_input_is_refused_before_any_build(name, where, bad, word,
                                                                monkeypatch):
    X, y = data_for(name, n=20)
    w = np.ones(len(y))
    if where == "X":
        X[3, 1] = bad
    elif where == "y":
        y[3] = bad
    else:
        w[3] = bad
    # nothing may reach a backend: a build or solve would be an error in itself
    monkeypatch.setattr("solvers.backend.solve_qp", _never)
    monkeypatch.setattr("optmodels.problem.solve_qp", _never)
    with pytest.raises(ValueError, match=word) as info:
        build(name, X, y, w)
    shown = {"X": "A", "y": "b"}.get(where, where) if name == "ridge" else where
    assert shown in str(info.value)  # the message names the argument


def _never(*args, **kwargs):
    raise AssertionError("a backend was called on invalid data")


@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_case01_02_non_finite_at_predict_and_in_a_kernel_matrix(bad, word):
    X, y = clf_data(n=30)
    svm = SVM(X, y)
    res = svm.solve()
    Xn = X[:4].copy()
    Xn[1, 0] = bad
    with pytest.raises(ValueError, match=word):
        svm.decision_function(res, Xn)
    klr = KLR(X, y, kernel="linear")
    with pytest.raises(ValueError, match=word):
        klr.decision_function(np.ones(klr.n), 0.0, Xn)
    K = X @ X.T
    K[2, 5] = bad
    with pytest.raises(ValueError, match=word):
        SVM(K, y, kernel="precomputed")


@pytest.mark.parametrize("name", PROBLEMS)
def test_case03_empty_and_zero_feature_X(name):
    X, y = data_for(name, n=10)
    with pytest.raises(ValueError, match="0 sample"):
        build(name, X[:0], y[:0])
    params = {"fit_intercept": False} if name == "lad" else {}
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(10, 0\)\) while a minimum "
                                         r"of 1 is required"):
        build(name, X[:, :0], y, **params)


def test_case03_lad_zero_features_with_intercept_is_the_weighted_median():
    _, y = lad_data(n=31)
    res = LAD(np.empty((31, 0)), y).solve().require_optimal()
    assert res.extra["intercept"] == pytest.approx(np.median(y), abs=1e-9)
    assert res.objective == pytest.approx(np.abs(y - np.median(y)).sum(), rel=1e-9)


# ================================================================ #4: one sample, one feature
def test_case04_one_sample_lad_and_ridge():
    x, y = np.array([[2.0, -1.0]]), np.array([3.0])
    lad = LAD(x, y).solve().require_optimal()
    assert lad.objective == pytest.approx(0.0, abs=1e-9)
    assert x @ lad.x + lad.extra["intercept"] == pytest.approx(y, abs=1e-8)
    ridge = Ridge(x, y, alpha=0.5).solve().require_optimal()
    # n = 1: x* = a b / (a'a + alpha)
    np.testing.assert_allclose(ridge.x, x[0] * 3.0 / (x[0] @ x[0] + 0.5), rtol=1e-12)


@pytest.mark.parametrize("name", ["svm", "klr"])
def test_case04_one_sample_classifier_is_one_class(name):
    with pytest.raises(ValueError, match="class"):
        build(name, np.array([[1.0, 2.0]]), np.array([1.0]))


def test_case04_one_feature_matches_references():
    X, y = lad_data(n=50, p=1)
    lad = LAD(X, y).solve().require_optimal()
    assert lad.objective == pytest.approx(lad_reference(X, y), rel=1e-9)
    import statsmodels.api as sm

    qr = sm.QuantReg(y, sm.add_constant(X)).fit(q=0.5, max_iter=5000, p_tol=1e-10)
    assert lad.objective == pytest.approx(np.abs(y - qr.fittedvalues).sum(), rel=1e-5)
    ridge = Ridge(X, y, alpha=2.0, fit_intercept=True).solve().require_optimal()
    np.testing.assert_allclose(ridge.x, ridge_reference(X, y, 2.0, fit_intercept=True),
                               rtol=1e-10)
    Xc, yc = clf_data(n=40, p=1)
    svm = SVM(Xc, yc, C=1.0).solve().require_optimal()
    assert svm.objective == pytest.approx(svm_reference(Xc, yc, 1.0), rel=1e-6)


# ================================================================ #5: one class
@pytest.mark.parametrize("name", ["svm", "klr"])
def test_case05_one_class_and_one_class_left_after_zero_weights(name):
    X, y = clf_data(n=20)
    with pytest.raises(ValueError, match="class"):
        build(name, X, np.ones(20))
    w = np.where(y > 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="class"):
        build(name, X, y, w)


# ================================================================ #6: 1-D X, column y
@pytest.mark.parametrize("name", PROBLEMS)
def test_case06_one_dimensional_X_and_column_y(name):
    X, y = data_for(name, n=30)
    with pytest.raises(ValueError, match="Reshape your data"):
        build(name, X[:, 0], y)
    ref = build(name, X, y).solve()
    with pytest.warns(UserWarning, match="column-vector"):
        col = build(name, X, y[:, None])
    res = col.solve()
    assert res.objective == ref.objective
    np.testing.assert_array_equal(res.x, ref.x)


def test_case06_one_dimensional_X_at_predict():
    X, y = clf_data(n=30)
    svm = SVM(X, y)
    with pytest.raises(ValueError, match="Reshape your data"):
        svm.decision_function(svm.solve(), X[0])


# ================================================================ #7: shapes
@pytest.mark.parametrize("name", PROBLEMS)
def test_case07_length_mismatches(name):
    X, y = data_for(name, n=20)
    with pytest.raises(ValueError, match="20"):
        build(name, X, np.concatenate([y, y[:1]]))
    for w in (np.ones(40), np.ones((20, 2))):
        with pytest.raises(ValueError, match="sample_weight"):
            build(name, X, y, w)


@pytest.mark.parametrize("k", [2, 4])
def test_case07_svm_primal_predict_with_wrong_feature_count(k):
    X, y = clf_data(n=30, p=3)
    svm = SVM(X, y)
    Xn = np.ones((5, k))
    with pytest.raises(ValueError, match=f"X has {k} features, but SVM is expecting 3 "
                                         "features as input"):
        svm.decision_function(svm.solve(), Xn)


@pytest.mark.parametrize("name", ["svm-rbf", "klr"])
def test_case07_kernel_predict_with_wrong_feature_count(name):
    X, y = clf_data(n=30, p=3)
    Xn = np.ones((5, 2))
    est = "SVM" if name == "svm-rbf" else "KLR"
    with pytest.raises(ValueError, match=f"X has 2 features, but {est} is expecting 3"):
        if name == "svm-rbf":
            svm = SVM(X, y, kernel="rbf")
            svm.decision_function(svm.solve(), Xn)
        else:
            klr = KLR(X, y)
            klr.decision_function(np.ones(30), 0.0, Xn)


# ================================================================ #8: dtypes, complex, sparse
@pytest.mark.parametrize("name", PROBLEMS)
@pytest.mark.parametrize("kind", ["float32", "int32", "int64", "object", "csr", "csc"])
def test_case08_dtypes_and_sparse_give_the_float64_answer(name, kind):
    X, y = data_for(name, n=40)
    X = np.round(X * 4)  # exactly representable in every dtype below
    ref_problem = build(name, X, y)
    ref = ref_problem.solve()
    if kind in ("csr", "csc"):
        Xk = sp.csr_matrix(X) if kind == "csr" else sp.csc_matrix(X)
    else:
        Xk = X.astype(kind)
    problem = build(name, Xk, y)
    res = problem.solve()
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(predictions(problem, res, X), predictions(ref_problem, ref, X),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", PROBLEMS)
def test_case08_complex_is_refused(name):
    X, y = data_for(name, n=10)
    with pytest.raises(ValueError, match="Complex data not supported"):
        build(name, X + 1j, y)


# ================================================================ #10: weights
@pytest.mark.parametrize("name", PROBLEMS)
def test_case10_all_zero_and_negative_weights(name):
    X, y = data_for(name, n=10)
    with pytest.raises(ValueError, match="weight.*zero"):
        build(name, X, y, np.zeros(10))
    w = np.ones(10)
    w[4] = -1.0
    with pytest.raises(ValueError, match="negative"):
        build(name, X, y, w)


# ================================================================ #11: zero weight / repetition
def _weights_for(y: np.ndarray, seed: int, classification: bool) -> np.ndarray:
    """randint(0, 5) weights; for a classifier, each class keeps a positive weight."""
    w = np.random.default_rng(100 + seed).integers(0, 5, size=y.size).astype(float)
    if classification:
        for cls in (-1.0, 1.0):
            if not (w[y == cls] > 0).any():
                w[np.flatnonzero(y == cls)[0]] = 1.0
    return w


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", PROBLEMS)
def test_case11_zero_weight_is_removal_and_integer_weight_is_repetition(name, seed):
    X, y = data_for(name, n=15, seed=seed)
    w = _weights_for(y, seed, name in ("svm", "klr"))
    rows = np.repeat(np.arange(15), w.astype(int))
    params = {"kernel": "rbf", "gamma": 0.5} if name == "klr" else {}
    weighted, repeated = build(name, X, y, w, **params), build(name, X[rows], y[rows], **params)
    a, b = weighted.solve().require_optimal(), repeated.solve().require_optimal()
    assert a.objective == pytest.approx(b.objective, rel=1e-7, abs=1e-9)
    if name == "svm":  # w is unique (strongly convex)
        np.testing.assert_allclose(svm_w(weighted, a), svm_w(repeated, b), atol=1e-5)
    elif name == "ridge":
        np.testing.assert_allclose(a.x, b.x, rtol=1e-5, atol=1e-9)
    elif name == "klr":  # the decision function is unique
        np.testing.assert_allclose(predictions(weighted, a, X), predictions(repeated, b, X),
                                   atol=1e-5)
    else:  # LAD: the optimum may be degenerate; its objective at the other's fit is optimal
        assert weighted.objective(b.x, b.extra["intercept"]) == pytest.approx(a.objective,
                                                                             rel=1e-7)


# ================================================================ #12: uniform weight scaling
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["svm", "klr", "ridge"])
def test_case12_uniform_weight_scaling(name, seed):
    X, y = data_for(name, n=40, seed=seed)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=40)
    k = 3.0
    if name == "ridge":  # f(x; k w, lam) = k f(x; w, lam / k)
        a = Ridge(X, y, sample_weight=k * w, alpha=1.0).solve().require_optimal()
        b = Ridge(X, y, sample_weight=w, alpha=1.0 / k).solve().require_optimal()
        np.testing.assert_allclose(a.x, b.x, rtol=1e-6)
        assert a.objective == pytest.approx(k * b.objective, rel=1e-6)
        return
    pa, pb = build(name, X, y, k * w, C=1.0), build(name, X, y, w, C=k)
    a, b = pa.solve().require_optimal(), pb.solve().require_optimal()
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    np.testing.assert_allclose(predictions(pa, a, X), predictions(pb, b, X), rtol=1e-6,
                               atol=1e-6)


# ================================================================ #13: LAD equivariance
@pytest.mark.parametrize("seed", SEEDS)
def test_case13_lad_equivariance(seed):
    X, y = lad_data(n=60, p=3, seed=seed)
    rng = np.random.default_rng(seed)
    base = LAD(X, y).solve().require_optimal()
    coef, b0 = base.x, base.extra["intercept"]
    assert base.objective == pytest.approx(lad_reference(X, y), rel=1e-9)
    a, g, A = -2.5, rng.normal(size=3), rng.normal(size=(3, 3)) + 3 * np.eye(3)
    scaled = LAD(X, a * y).solve().require_optimal()
    np.testing.assert_allclose(scaled.x, a * coef, rtol=1e-5, atol=1e-8)
    assert scaled.extra["intercept"] == pytest.approx(a * b0, rel=1e-5, abs=1e-8)
    shifted = LAD(X, y + X @ g).solve().require_optimal()
    np.testing.assert_allclose(shifted.x, coef + g, rtol=1e-5, atol=1e-8)
    mixed = LAD(X @ A, y).solve().require_optimal()
    np.testing.assert_allclose(mixed.x, np.linalg.solve(A, coef), rtol=1e-5, atol=1e-8)
    assert mixed.objective == pytest.approx(base.objective, rel=1e-7)


# ================================================================ #14: idempotence, no mutation
@pytest.mark.parametrize("name", PROBLEMS)
def test_case14_solve_is_idempotent_and_mutates_nothing(name):
    X, y = data_for(name, n=40)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=40)
    X0, y0, w0 = X.copy(), y.copy(), w.copy()
    problem = build(name, X, y, w)
    params = dict(problem.params)
    first, second = problem.solve(), problem.solve()
    tol = {"rtol": max(2 * np.finfo(float).eps, 1e-7), "atol": max(2 * np.finfo(float).eps,
                                                                    1e-9)}
    np.testing.assert_allclose(first.x, second.x, **tol)
    np.testing.assert_allclose(first.objective, second.objective, **tol)
    for given, kept in ((X, X0), (y, y0), (w, w0)):
        np.testing.assert_array_equal(given, kept)
    assert problem.params == params
    x_before, extra_before = first.x.copy(), dict(first.extra)
    batch = predictions(problem, first, X[:7])
    rows = np.concatenate([predictions(problem, first, X[i:i + 1]) for i in range(7)])
    np.testing.assert_allclose(batch, rows, **tol)
    np.testing.assert_array_equal(first.x, x_before)
    assert first.extra.keys() == extra_before.keys()


# ================================================================ #15: pickling
_SAFE_MODULES = ("builtins", "copyreg", "collections", "numpy", "scipy", "solvers", "optmodels",
                 "_codecs", "enum")


class _RecordingUnpickler(pickle.Unpickler):
    """Unpickles while recording every global it resolves (a solver handle would show here)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.globals: set[tuple[str, str]] = set()

    def find_class(self, module: str, name: str):
        self.globals.add((module, name))
        return super().find_class(module, name)


COMBINATIONS = (
    [("lad", s, {"solver": s}) for s in QP_SOLVERS]
    + [("svm", s, {"solver": s}) for s in QP_SOLVERS]
    + [("klr", s, {"solver": s}) for s in ("clarabel", "ecos")]
    + [("ridge", s, {"solver": s}) for s in ("cholesky", *QP_SOLVERS)]
    + [("lad", "aid", {}), ("svm", "aid", {}), ("svm", "smo", {}), ("klr", "smo", {}),
       ("ridge", "pcg-fd", {})]
)


@pytest.mark.parametrize("name, label, options", COMBINATIONS,
                         ids=[f"{c[0]}-{c[1]}" for c in COMBINATIONS])
def test_case15_problem_and_result_pickle_round_trip(name, label, options):
    # (tests/test_reliability.py pickles the default solves; this covers every combination)
    X, y = data_for(name, n=40)
    problem = build(name, X, y)
    strategy = "full" if "solver" in options else label
    res = problem.solve(strategy=strategy, **options)
    assert res.x is not None, res.raw_status
    blob = pickle.dumps((problem, res))
    loader = _RecordingUnpickler(blob)
    problem2, res2 = loader.load()
    foreign = {m for m, _ in loader.globals if not m.startswith(_SAFE_MODULES)}
    assert not foreign, f"solver objects stored in the pickle: {foreign}"
    np.testing.assert_array_equal(predictions(problem2, res2, X), predictions(problem, res, X))
    assert res2.termination is res.termination and res2.objective == res.objective


# ================================================================ #16-#19: solver verdicts
# Covered elsewhere, not duplicated here:
#   #16 infeasible LP on every backend: tests/conformance (lp_infeasible); Pyomo route with a
#       checked Farkas certificate: tests/test_trust.py::test_pyomo_infeasible_claim_has_...;
#       refused false certificates: test_trust.py::test_a_false_infeasible_certificate_is_refused.
#   #17 unbounded LP and the QP min x0^2 + x1 on every backend: tests/conformance
#       (lp_unbounded, qp_unbounded); Pyomo: test_trust.py::test_pyomo_unbounded_qp_is_never_...
#   #18 backend max_iter=1: tests/conformance::test_iteration_limit_is_a_status;
#       SMO cap: tests/test_smo_svm.py::test_iteration_limit_is_reported.
#   #19 a failed check becomes NUMERICAL_ERROR: tests/test_trust.py (bound above objective,
#       infeasible training problem), conformance::test_ill_conditioned_qp_is_exact_or_flagged.
# Added here: the typed errors and their fields, strategies at an iteration cap, KLR's check.
def test_case16_infeasible_raises_typed_error_without_primal_values():
    from solvers.errors import InfeasibleError

    qp = QPData(c=np.array([1.0, 1.0]), A=sp.csr_matrix(np.array([[1.0, 1.0]])),
                row_lo=np.array([3.0]), row_hi=np.array([3.0]),
                col_lo=np.zeros(2), col_hi=np.ones(2))  # box [0, 1]^2 contradicts x0 + x1 = 3
    assert linprog([1, 1], A_eq=[[1, 1]], b_eq=[3], bounds=[(0, 1)] * 2).status == 2
    for backend in QP_SOLVERS:
        res = solve_qp(qp, backend)
        assert res.termination in (TerminationCondition.INFEASIBLE,
                                   TerminationCondition.INFEASIBLE_OR_UNBOUNDED), res.raw_status
        assert res.x is None
        with pytest.raises(InfeasibleError) as info:
            res.require_optimal()
        assert info.value.raw_status == res.raw_status and info.value.raw_status
        assert not info.value.primal_available and info.value.solver == backend


def test_case17_unbounded_qp_is_never_optimal_and_raises():
    qp = QPData(c=np.array([0.0, 1.0]), A=sp.csr_matrix((0, 2)), row_lo=np.zeros(0),
                row_hi=np.zeros(0), col_lo=np.full(2, -np.inf), col_hi=np.full(2, np.inf),
                P=sp.diags([2.0, 0.0]))
    for backend in QP_SOLVERS:
        res = solve_qp(qp, backend)
        assert not res.is_optimal, (backend, res.raw_status)
        with pytest.raises(SolveError):
            res.require_optimal()


LIMITED = [("lad", "aid"), ("svm", "aid"), ("svm", "smo"), ("svm", "block"), ("klr", "smo"),
           ("klr", "block"), ("ridge", "fd"), ("ridge", "pcg-fd"), ("ridge", "ihs-gaussian")]


@pytest.mark.parametrize("name, strategy", LIMITED, ids=[f"{a}-{b}" for a, b in LIMITED])
def test_case18_strategy_at_max_iter_1_is_never_optimal(name, strategy):
    X, y = data_for(name, n=80, p=4, seed=3)
    res = build(name, X, y).solve(strategy=strategy, max_iter=1)
    if res.is_optimal:  # one step can finish only if it really is optimal
        full = build(name, X, y).solve()
        scale = build(name, X, y).natural_scale() or max(1.0, abs(full.objective))
        assert abs(res.objective - full.objective) <= CERTIFICATE_TOL * scale
        return
    assert res.termination in (TerminationCondition.ITERATION_LIMIT,
                               TerminationCondition.CONVERGED,
                               TerminationCondition.NUMERICAL_ERROR), res.raw_status
    with pytest.raises(SolveError) as info:
        res.require_optimal()
    if res.termination is TerminationCondition.ITERATION_LIMIT:
        assert isinstance(info.value, LimitReachedError)


def test_case18_full_solve_limits():
    X, y = clf_data(n=40)
    res = KLR(X, y, kernel="linear").solve(max_iter=1)
    assert res.termination is TerminationCondition.ITERATION_LIMIT, res.raw_status
    with pytest.raises(LimitReachedError):
        res.require_optimal()
    # time_limit=0 is refused up front (naming the option) rather than passed to HiGHS
    with pytest.raises(ValueError, match="time_limit"):
        LAD(*lad_data(n=20)).solve(time_limit=0.0)


def test_case19_failed_check_is_a_numerical_error_with_the_raw_status():
    X, y = clf_data(n=40)
    res = KLR(X, y, kernel="linear").solve(tol=0.0)  # no check passes at 0 in floats
    assert res.termination is TerminationCondition.NUMERICAL_ERROR
    assert res.raw_status and "0e+00" in res.raw_status or "0.0" in res.raw_status
    with pytest.raises(NumericalError) as info:
        res.require_optimal()
    assert info.value.raw_status == res.raw_status and info.value.primal_available


# ================================================================ #20: ill-conditioned ridge
def _ill_conditioned(seed: int = 0, n: int = 100, d: int = 8):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, d)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    s = np.logspace(0, -6, d)  # cond(X) = 1e6
    return U * s @ V.T, rng.standard_normal(n), U, s, V


ECOS_LOOSE = pytest.mark.xfail(strict=True, reason="ECOS at lambda=1e-8: certified optimal "
                               "(objective error 2e-12) but coefficients 2.5e-5 from the SVD "
                               "reference (> 1e-6): the objective certificate allows "
                               "||x - x*|| ~ sqrt(2 gap / lambda), so 'optimal' does not "
                               "bound the coefficient error on ill-conditioned ridge")
ROUTES_20 = [("cholesky", None), ("highs", None), ("highs", {"qp_regularization_value": 0.0}),
             ("clarabel", None), ("ecos", None), ("pcg-fd", None), ("pcg-rfd", None)]
CASES_20 = [
    pytest.param(r, o, lam, marks=[ECOS_LOOSE] if (r, lam) == ("ecos", 1e-8) else [],
                 id=f"{r}{'-reg0' if o else ''}-{lam:g}")
    for r, o in ROUTES_20 for lam in (1.0, 1e-4, 1e-8)
]


@pytest.mark.parametrize("route, options, lam", CASES_20)
def test_case20_ill_conditioned_ridge(route, options, lam):
    X, b, U, s, V = _ill_conditioned()
    x_ref = V @ ((s / (s**2 + lam)) * (U.T @ b))  # SVD closed form
    problem = Ridge(X, b, alpha=lam)
    f_ref = problem.objective(x_ref)
    if route.startswith("pcg"):
        res = problem.solve(strategy=route, max_iter=50)
    else:
        res = problem.solve(solver=route, **({"options": options} if options else {}))
    if not res.is_optimal:  # flagged is acceptable, a wrong "optimal" is not
        assert res.termination is TerminationCondition.NUMERICAL_ERROR, res.raw_status
        return
    assert abs(res.objective - f_ref) <= 1e-8 * abs(f_ref)
    assert np.linalg.norm(res.x - x_ref) <= 1e-6 * np.linalg.norm(x_ref)
    if route in ("cholesky", "pcg-fd"):
        assert res.is_optimal


# ================================================================ #21: tiny / huge coefficients
# (tests/test_trust.py::test_lad_tiny_feature_is_solved_not_dropped covers 1e-10 on LAD with
# HiGHS; tests/test_export.py::test_huge_values_are_refused_... covers >= 1e20 in files.)
@pytest.mark.parametrize("solver", QP_SOLVERS)
@pytest.mark.parametrize("factor", [1e-10, 1e16])
def test_case21_extreme_column_scale_keeps_the_lad_optimum(solver, factor):
    """X -> X diag(1, 1, factor) leaves the optimal objective unchanged (coef_3 / factor)."""
    X, y = lad_data(n=60, p=3, seed=2)
    y = y + 3.0 * X[:, 2]  # the scaled column matters
    Xs = X.copy()
    Xs[:, 2] *= factor
    ref = lad_reference(X, y)
    res = LAD(Xs, y).solve(solver=solver)
    assert res.termination is not TerminationCondition.INFEASIBLE, res.raw_status
    if res.is_optimal:
        assert res.objective == pytest.approx(ref, rel=1e-6)
    else:
        assert res.termination is TerminationCondition.NUMERICAL_ERROR, res.raw_status


@pytest.mark.parametrize("C", [1e-10, 1e20])
def test_case21_extreme_C_svm_is_exact_or_flagged(C):
    """Recorded outcomes (a change in either direction fails): at C = 1e-10 the default
    (primal) full solve fails its certificate (w ~ 1e-9) and says numerical_error, while the
    dual form is optimal at the reference; at C = 1e20 the objective is certified, equal to C
    times the hinge LP's optimum, but w is not (the solution rule): converged."""
    X, y = clf_data(n=40, sep=1.0)
    res = SVM(X, y, C=C).solve()
    if C < 1:
        assert res.termination is TerminationCondition.NUMERICAL_ERROR, res.raw_status
        dual = SVM(X, y, C=C).solve(form="dual")
        assert dual.is_optimal, dual.raw_status
        assert dual.objective == pytest.approx(svm_reference(X, y, C), rel=1e-6)
    else:
        assert res.termination is TerminationCondition.CONVERGED, res.raw_status
        assert res.gap <= 1e-6 and res.solution_gap > 1e-3
        assert res.objective == pytest.approx(C * hinge_lp_reference(X, y), rel=1e-6)


def hinge_lp_reference(X, y) -> float:
    """min_{w, b} sum_i max(0, 1 - y_i (x_i'w + b)) as an LP (scipy's linprog): at C = 1e20 the
    SVM's 1/2 ||w||^2 is below 1e-12 of C times this on overlapping classes (LIBSVM at such a
    C runs for minutes)."""
    from scipy.optimize import linprog

    n, p = X.shape
    ypm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    # variables w (p), b, xi (n) >= 0: xi_i >= 1 - y_i (x_i'w + b)
    c = np.r_[np.zeros(p + 1), np.ones(n)]
    A = np.hstack([-ypm[:, None] * X, -ypm[:, None], -np.eye(n)])
    bounds = [(None, None)] * (p + 1) + [(0, None)] * n
    out = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=bounds, method="highs")
    assert out.status == 0 and out.fun > 0, out.message  # overlapping classes
    return float(out.fun)


# ================================================================ #22: KLR duality
@pytest.mark.parametrize("C", [1e-3, 1.0, 1e3, 1e5])
@pytest.mark.parametrize("sep", [1.0, 12.0], ids=["overlapping", "separable"])
def test_case22_klr_dual_matches_the_logistic_primal(C, sep):
    X, y = clf_data(n=40, p=2, sep=sep, seed=1)
    problem = KLR(X, y, C=C, kernel="linear")
    res = problem.solve()
    assert res.x is not None and np.isfinite(problem.objective(np.clip(res.x, 0, problem.Ci)))
    primal = logistic_primal(X, y, C)
    if res.is_optimal:  # strong duality: f(alpha*) = -P*
        assert abs(res.objective + primal) <= 1e-6 * max(1.0, abs(primal))
    else:
        assert sep > 1.0 or C >= 1e3, res.raw_status  # only the hard cases may be flagged


# ================================================================ #23: degenerate SVM data
def test_case23_duplicated_conflicting_rows_and_identical_X():
    X, y = clf_data(n=30)
    Xd, yd = np.vstack([X, X[:4]]), np.concatenate([y, -y[:4]])
    for C in (1e-6, 1.0, 1e8):
        res = SVM(Xd, yd, C=C).solve()
        assert np.all(np.isfinite(res.x)), (C, res.raw_status)
        if res.is_optimal and C <= 1.0:  # LIBSVM itself crawls at C = 1e8 on conflicts
            assert res.objective == pytest.approx(svm_reference(Xd, yd, C), rel=1e-6)
    # all-identical X: w = 0, b the weighted-majority sign, P = sum of the minority C_i
    Xi, yi = np.ones((10, 2)), np.r_[np.ones(6), -np.ones(4)]
    res = SVM(Xi, yi, C=1.0).solve().require_optimal()
    np.testing.assert_allclose(res.x, 0.0, atol=1e-7)
    assert res.objective == pytest.approx(2.0 * 4, rel=1e-6)  # b = 1: hinge 2 on each minority


def test_case23_infinite_C_is_refused_naming_C():
    X, y = clf_data(n=20)
    with pytest.raises(ValueError, match="'C'.*(not finite|inf)"):
        SVM(X, y, C=np.inf).solve()


def test_case23_non_psd_kernel_gives_finite_alpha_or_a_flag():
    X, y = clf_data(n=40)
    K = X @ X.T - 0.05 * np.abs(np.linalg.eigvalsh(X @ X.T)).max() * np.eye(40)
    assert np.linalg.eigvalsh(K).min() < 0
    problem = SVM(K, y, kernel="precomputed")
    full = problem.solve()
    assert not full.is_optimal, "a non-convex dual cannot be certified by the QP backends"
    smo = problem.solve(strategy="smo")
    assert not smo.is_optimal and smo.extra["kernel_psd"] is False  # the flag (issue 31)
    assert smo.x is not None and np.all(np.isfinite(smo.x))
    assert np.all(smo.x >= -1e-12) and np.all(smo.x <= problem.box + 1e-12)
    assert abs(y @ smo.x) <= 1e-8 * problem.box.sum()


def test_case23_smo_iteration_cap_warns_with_the_count():
    """The problem-level result is flagged (ITERATION_LIMIT, count in raw_status); the
    estimator, which hands a model to the user, warns with ConvergenceWarning."""
    from sklearn.exceptions import ConvergenceWarning

    from optmodels.estimators import SVMClassifier

    X, y = clf_data(n=40)
    Xd, yd = np.vstack([X, X[:4]]), np.concatenate([y, -y[:4]])
    res = SVM(Xd, yd, C=1e8).solve(strategy="smo", max_iter=50)
    assert res.termination is TerminationCondition.ITERATION_LIMIT and "50" in res.raw_status
    assert not res.is_optimal
    est = SVMClassifier(C=1e8, kernel="linear", strategy="smo",
                        strategy_options={"max_iter": 50})
    with pytest.warns(ConvergenceWarning, match="iteration_limit after 50 iterations"):
        est.fit(Xd, yd)


# ================================================================ #24: strategies vs full
# Moved to tests/conformance/test_strategies.py (issue 31): every registered (problem, strategy)
# pair on an instance in its own regime (AID ending below n/5 clusters; each ridge sketch where
# it converges), its recorded termination asserted exactly (a pair missing from the table
# fails), compared with the full solve on objective, solution and decision values. The former
# test here accepted "not optimal" as a pass (12 of 22 pairs never compared; AID started with a
# cluster per row), so a regression to numerical_error everywhere passed it.


# ================================================================ #25-#29: export
# Covered in tests/test_export.py: #25 round trips of LAD/SVM/ridge through every route with the
# same optimum (test_round_trip_same_optimum) and QUADOBJ (test_mps_quadratic_section); #27
# explicit bounds, both MPS parsers (test_mps_bounds_are_explicit_and_both_parsers_agree,
# test_negative_upper_bound_...); #28 NaN/huge refused at export (test_nan_model_is_not_written,
# test_huge_values_are_refused_...). Added: max sense with a constant and a ranged row (#25),
# awkward names (#26), 'nan' on import (#28), the malformed corpus (#29).
def _awkward_qp(names: list[str], ranged: bool) -> QPData:
    """min 1/2 sum x_j^2 / 2 - sum j x_j + 3 over [0, 1]^k with one ranged row, awkward names."""
    k = len(names)
    return QPData(c=-np.arange(1.0, k + 1), A=sp.csr_matrix(np.ones((1, k))),
                  row_lo=np.array([-1.0]), row_hi=np.array([2.0 if ranged else np.inf]),
                  col_lo=np.zeros(k), col_hi=np.ones(k), P=sp.diags(np.full(k, 0.5)), offset=3.0,
                  col_blocks=[(nm, 1) for nm in names], row_blocks=[("st", 1)],
                  name="awkward model")


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_case26_awkward_names_round_trip(tmp_path, suffix):
    names = ["1x", "e", "st", "end", "a b", "x[0]", "y" * 300, "1x"]
    qp = _awkward_qp(names, ranged=suffix == ".mps")  # LP files have no ranged rows (refused)
    out = write(qp, tmp_path / f"m{suffix}")
    back = read(tmp_path / f"m{suffix}")
    assert back.n_cols == qp.n_cols and back.n_rows == qp.n_rows
    assert len(set(back.col_names())) == qp.n_cols  # duplicates made unique
    assert back.col_names() == list(out.col_names)  # the reader sees the written names
    a, b = solve_qp(qp, "highs"), solve_qp(back, "highs")
    assert a.is_optimal and b.is_optimal
    assert b.objective == pytest.approx(a.objective, rel=1e-9, abs=1e-9)
    write(qp, tmp_path / f"again{suffix}")
    assert (tmp_path / f"again{suffix}").read_text() == (tmp_path / f"m{suffix}").read_text()


MALFORMED = {
    "missing ENDATA": "NAME m\nROWS\n N obj\n L c1\nCOLUMNS\n x obj 1 c1 1\nRHS\n r c1 1\n",
    "bad section": "NAME m\nROWS\n N obj\n L c1\nFOO\nCOLUMNS\n x obj 1 c1 1\nENDATA\n",
    "duplicate entry": "NAME m\nROWS\n N obj\n L c1\nCOLUMNS\n x obj 1 c1 1\n x c1 2\nENDATA\n",
    "nan": "NAME m\nROWS\n N obj\n L c1\nCOLUMNS\n x obj nan c1 1\nENDATA\n",
    "asymmetric QMATRIX": "NAME m\nROWS\n N obj\nCOLUMNS\n x obj 1\n y obj 1\nQMATRIX\n"
                          " x x 2\n x y 1\n y y 2\nENDATA\n",
    "QUADOBJ and QMATRIX": "NAME m\nROWS\n N obj\nCOLUMNS\n x obj 1\nQUADOBJ\n x x 2\n"
                           "QMATRIX\n x x 2\nENDATA\n",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_case28_29_malformed_files_raise_with_a_line_number(tmp_path, case):
    path = tmp_path / "bad.mps"
    path.write_text(MALFORMED[case])
    with pytest.raises(ValueError, match=r"bad\.mps:\d+:"):
        read(path)


# ================================================================ #30-#31: reproducibility
REPRO = [("lad", "full", {}), ("lad", "aid", {}),
         ("svm", "full", {}), ("svm", "smo", {}), ("svm", "aid", {}), ("klr", "smo", {}),
         ("ridge", "full", {}), ("ridge", "ihs-gaussian", {"seed": 7}), ("ridge", "fd", {})]


@pytest.mark.parametrize("name, strategy, options", REPRO,
                         ids=[f"{a}-{b}" for a, b, _ in REPRO])
def test_case30_same_seed_is_bitwise_identical(name, strategy, options, one_blas_thread):
    runs = []
    for _ in range(2):
        X, y = data_for(name, n=80, p=4, seed=5)
        runs.append(build(name, X, y).solve(strategy=strategy, **options))
    a, b = runs
    assert a.x.tobytes() == b.x.tobytes()
    assert repr(a.objective) == repr(b.objective) and a.iterations == b.iterations


@pytest.mark.parametrize("name, strategy", [
    ("ridge", "full"), ("svm", "smo"), ("ridge", "pcg-fd"),
    ("lad", "full")])
def test_case31_blas_and_highs_thread_count_independence(name, strategy):
    X, y = data_for(name, n=150, p=6, seed=4)
    out = []
    for threads in (1, 2):
        options = {"options": {"threads": threads}} if (name, strategy) == ("lad", "full") else {}
        with threadpool_limits(limits=threads, user_api="blas"):
            out.append(build(name, X, y).solve(strategy=strategy, **options))
    a, b = out
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-12)
    assert a.objective == pytest.approx(b.objective, rel=1e-10)


def test_case31_metadata_records_versions_options_seed_threads():
    X, y = lad_data(n=30)
    res = LAD(X, y).solve(strategy="full", options={"threads": 1})
    assert res.solver_version
    run = res.extra["run"]
    assert {"options", "seed", "threads", "versions", "backend"} <= set(run)
    assert run["options"]["options"] == {"threads": 1} and run["options"]["tol"] > 0
    assert run["versions"]["highspy"] == run["backend"]["version"] == res.solver_version
    assert run["threads"]["highs_threads"] == 1


# ================================================================ #32: the seed sweep itself
def test_case32_equivalence_tests_sweep_seeds_0_to_4():
    import inspect
    import sys

    module = sys.modules[__name__]
    for fn in (test_case11_zero_weight_is_removal_and_integer_weight_is_repetition,
               test_case12_uniform_weight_scaling, test_case13_lad_equivariance):
        seeds = [m.args[1] for m in fn.pytestmark if m.name == "parametrize"
                 and m.args[0] == "seed"]
        assert seeds == [SEEDS] and SEEDS == list(range(5)), fn.__name__
        assert "seed" in inspect.signature(fn).parameters and hasattr(module, fn.__name__)
