"""Tests against the peers at tight tolerances (issue 31, "Checks").

Every comparison asserts numbers against an independent solve (scikit-learn, scipy, numpy),
and every allowance is a proven bound, ours plus the reference's own:

* Ridge: every registered strategy against scikit-learn's ``Ridge(solver="svd")`` with an
  intercept and sample weights, on standardized diabetes (n > p) and a 40 x 120 problem
  (p > n), at alpha in (1e2, 1, 1e-3, 1e-8). The reference's error is its own proven distance
  ``||grad f(x_sk)|| / alpha`` (f is alpha-strongly convex), computed here with numpy. Every
  result, whatever its status, is within ``res.solution_bound`` plus that of scikit-learn's
  coefficients; an optimal one also within SOLUTION_TOL of ``||x||``, and its intercept and
  held-out predictions within the same distance times ``||abar||`` and ``||a - abar||``
  (Cauchy-Schwarz). Which strategies are optimal where is the table ``RIDGE_EXPECTED``,
  asserted exactly.
* SVM: ``SVC(tol=1e-8)`` against smo, full, block (and aid for the linear kernel). SVC's own
  accuracy is its duality gap G computed here from its dual coefficients and intercept
  (numpy, scikit-learn's kernels): ``||w_svc - w*|| <= sqrt(2 G)``, and every training row's
  ``w'phi(x)`` within ``sqrt(2 G) max sqrt(k(x, x))``.
* KLR: the strategies against each other and against an independent primal solve
  (scikit-learn's LogisticRegression for the linear kernel, L-BFGS for the RBF kernel), the
  reference's accuracy again its own duality gap, computed here.

The intercept is not covered by the solution certificate of the SVM or KLR (docs/index.md);
the full decision values are held to SOLUTION_TOL, the promise the issue measured.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, xlogy
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import Ridge as SkRidge
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.svm import SVC

from optmodels import KLR, SVM, Ridge
from optmodels.estimators import SVMClassifier
from optmodels.strategies import strategies_for
from solvers.errors import NumericalError
from solvers.result import SOLUTION_TOL, TerminationCondition
from solvers.solution import KernelSolution

T = TerminationCondition
OPT, EST, NUM, ITER = T.OPTIMAL, T.ESTIMATE, T.NUMERICAL_ERROR, T.ITERATION_LIMIT
OPTIMAL = (T.OPTIMAL, T.CERTIFIED)

# Floating-point evaluation of two proven bounds: the distances are sums of float64 products
# (a gradient, a prediction); 1e-12 relative to the solution / the predictions covers that
# round-off and nothing else (the bounds themselves are 1e-16 .. 1e-2 here).
ROUNDOFF = 1e-12

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def standardize(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - X.mean(axis=0)) / sd


# --------------------------------------------------------------------------------------------
# Ridge
# --------------------------------------------------------------------------------------------

ALPHAS = (1e2, 1.0, 1e-3, 1e-8)

# The iterative sketches stop at 10 passes by default (the paper's experiment); 500 lets
# them reach the tolerance where they converge at all (rfd on diabetes at alpha = 1, ihs and
# single on the wide problem at alpha = 1e2). pcg-* (tol 1e-10, 500 iterations) and the
# one-shot sketches run with their defaults (m = min(256, d) = d here: the largest allowed).
RIDGE_OPTIONS = {s: {"max_iter": 500} for s in (
    "fd", "rfd", "ihs-gaussian", "ihs-sjlt", "single-gaussian", "single-sjlt")}

_ONE_SHOT = ("classical-gaussian", "classical-sjlt", "hessian-gaussian", "hessian-sjlt",
             "fdrr", "rfdrr")


def _table(**overrides: tuple) -> dict[str, tuple]:
    """Per strategy, the termination at each alpha of ALPHAS: one-shot sketches return
    estimates, the exact and PCG solves are optimal; the rest given."""
    table = {s: (EST,) * 4 for s in _ONE_SHOT}
    table.update({s: (OPT,) * 4 for s in ("full", "pcg-fd", "pcg-rfd")})
    table.update({k.replace("_", "-"): v for k, v in overrides.items()})
    return table


# Measured: the iterative sketches diverge (numerical_error, best iterate returned) where
# their sketch of m <= d rows does not capture A'A well enough against alpha.
RIDGE_EXPECTED = {
    "diabetes": _table(
        fd=(OPT, NUM, NUM, NUM),
        rfd=(OPT, OPT, ITER, ITER),
        ihs_gaussian=(NUM,) * 4, ihs_sjlt=(NUM,) * 4,
        single_gaussian=(NUM,) * 4, single_sjlt=(NUM,) * 4,
    ),
    "wide": _table(
        fd=(OPT,) * 4, rfd=(OPT,) * 4,
        ihs_gaussian=(OPT, NUM, NUM, NUM), ihs_sjlt=(OPT, NUM, NUM, NUM),
        single_gaussian=(OPT, NUM, NUM, NUM), single_sjlt=(OPT, NUM, NUM, NUM),
    ),
}


def test_every_ridge_strategy_is_in_the_table():
    for table in RIDGE_EXPECTED.values():
        assert sorted(table) == sorted(strategies_for("ridge"))


@pytest.fixture(scope="module")
def ridge_data():
    """(train A, b, weights, held-out A): standardized diabetes (400 + 42 rows, p = 10) and a
    p > n problem (40 + 10 rows, p = 120), both with weights in [0.5, 2]."""
    X, y = load_diabetes(return_X_y=True)
    X = standardize(X)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    rng = np.random.default_rng(1)
    Xw = rng.normal(size=(50, 120))
    yw = Xw @ rng.normal(size=120) + 0.5 * rng.normal(size=50) + 3.0
    ww = rng.uniform(0.5, 2.0, 50)
    return {"diabetes": (X[:400], y[:400], w[:400], X[400:]),
            "wide": (Xw[:40], yw[:40], ww[:40], Xw[40:])}


def ridge_reference(A, b, s, alpha):
    """scikit-learn's coefficients and intercept, and their proven distance to the optimum,
    ``||grad f(x_sk)|| / alpha`` with f and its gradient computed here (weighted, centred)."""
    sk = SkRidge(alpha=alpha, solver="svd", fit_intercept=True).fit(A, b, sample_weight=s)
    mean = s @ A / s.sum()
    Aw = (A - mean) * np.sqrt(s)[:, None]
    bw = (b - s @ b / s.sum()) * np.sqrt(s)
    grad = Aw.T @ (Aw @ sk.coef_ - bw) + alpha * sk.coef_
    return sk, mean, float(np.linalg.norm(grad)) / alpha


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("data", ["diabetes", "wide"])
@pytest.mark.parametrize("strategy", strategies_for("ridge"))
def test_ridge_against_sklearn(ridge_data, data, alpha, strategy):
    A, b, s, held = ridge_data[data]
    sk, mean, ref_err = ridge_reference(A, b, s, alpha)
    res = Ridge(A, b, alpha=alpha, sample_weight=s, fit_intercept=True).solve(
        strategy, **RIDGE_OPTIONS.get(strategy, {}))
    expected = RIDGE_EXPECTED[data][strategy][ALPHAS.index(alpha)]
    assert res.termination is expected, (res.termination, res.raw_status)
    assert res.solution_unique is True
    norm = np.linalg.norm(sk.coef_)
    dist = np.linalg.norm(res.x - sk.coef_)
    allowed = res.solution_bound + ref_err + ROUNDOFF * norm
    # the proven bound holds whatever the status (an estimate's or a diverged run's too)
    assert dist <= allowed, (dist, res.solution_bound, ref_err)
    if expected is not OPT:
        assert not res.is_optimal
        return
    assert res.is_optimal and res.solution_gap <= SOLUTION_TOL
    assert dist <= SOLUTION_TOL * norm
    assert abs(res.solution.intercept - sk.intercept_) <= allowed * np.linalg.norm(mean) \
        + ROUNDOFF * (abs(sk.intercept_) + 1.0)
    pred, ref = res.solution.decision_function(held), sk.predict(held)
    reach = np.linalg.norm(held - mean, axis=1)
    assert np.all(np.abs(pred - ref) <= allowed * reach + ROUNDOFF * np.abs(ref).max())


@pytest.fixture(scope="module")
def issue_ridge_cases():
    """The issue's reproductions: the leave-one-out folds of a 9 x 50 problem (alpha 1e-5,
    each fold predicts its left-out row) and 60 x 200 at alpha 1e-3 with 10 held-out rows."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(9, 50))
    b = A @ rng.normal(size=50) + 0.1 * rng.normal(size=9)
    cases = [(f"loo{k}", A[np.arange(9) != k], b[np.arange(9) != k], A[[k]], 1e-5)
             for k in range(9)]
    rng = np.random.default_rng(1)
    A = rng.normal(size=(70, 200))
    b = A @ rng.normal(size=200) + 0.1 * rng.normal(size=70)
    return [*cases, ("60x200", A[:60], b[:60], A[60:], 1e-3)]


@pytest.mark.parametrize("strategy", ["pcg-rfd", "pcg-fd", "full"])
def test_ridge_issue_reproductions(issue_ridge_cases, strategy):
    """pcg-rfd was optimal at gap 2.1e-13 with x 8.4e-4 from scikit-learn (9 x 50) and 3.1e-6
    (60 x 200). Now every fold is optimal with its distance to scikit-learn within its proven
    bound and SOLUTION_TOL, and the held-out predictions within ``bound ||a - abar||``
    (measured: pcg-rfd up to 1.2e-3 from scikit-learn on fold 7, bound 1.8e-3, a 0.8 %
    difference on that fold's held-out prediction; full 3e-15)."""
    for name, A, b, held, alpha in issue_ridge_cases:
        s = np.ones(len(b))
        sk, mean, ref_err = ridge_reference(A, b, s, alpha)
        res = Ridge(A, b, alpha=alpha, fit_intercept=True).solve(strategy)
        assert res.termination is OPT, (name, res.raw_status)
        norm = np.linalg.norm(sk.coef_)
        dist = np.linalg.norm(res.x - sk.coef_)
        allowed = res.solution_bound + ref_err + ROUNDOFF * norm
        assert dist <= allowed, (name, dist, res.solution_bound, ref_err)
        assert dist <= SOLUTION_TOL * norm, name
        pred, ref = res.solution.decision_function(held), sk.predict(held)
        reach = np.linalg.norm(held - mean, axis=1)
        assert np.all(np.abs(pred - ref) <= allowed * reach + ROUNDOFF * np.abs(ref).max()), name


# --------------------------------------------------------------------------------------------
# SVM against SVC
# --------------------------------------------------------------------------------------------

SVM_C = 1.0
ALPHA_ZERO = 1e-8   # alphas below this fraction of C may differ in support membership
DUAL_TOL = 1e-4     # stated tolerance on dual coefficients, in units of C (not a proven bound)


def _binary(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return standardize(X), np.where(y == 1, 1.0, -1.0)
    if name == "iris":  # versicolor against virginica (not separable)
        X, y = load_iris(return_X_y=True)
        keep = y > 0
        return standardize(X[keep]), np.where(y[keep] == 2, 1.0, -1.0)
    X, y = load_digits(return_X_y=True)  # 3 against 8
    keep = (y == 3) | (y == 8)
    return standardize(X[keep]), np.where(y[keep] == 8, 1.0, -1.0)


def _kernel_args(kernel: str, p: int) -> dict:
    return {"linear": {}, "rbf": {"gamma": 1.0 / p},
            "poly": {"gamma": 1.0 / p, "degree": 3, "coef0": 1.0}}[kernel]


_SVC_CACHE: dict = {}


def svc_reference(name: str, kernel: str):
    """SVC at tol 1e-8 and its own accuracy from its duality gap (computed here):
    (X, y, kernel args, svc, v = alpha * y over all rows, K v, decision values, distance bound
    on w, bound on w'phi(x_i))."""
    key = (name, kernel)
    if key not in _SVC_CACHE:
        X, y = _binary(name)
        ka = _kernel_args(kernel, X.shape[1])
        svc = SVC(C=SVM_C, kernel=kernel, tol=1e-8, cache_size=500, **ka).fit(X, y)
        K = pairwise_kernels(X, metric=kernel, filter_params=True, **ka)
        v = np.zeros(len(y))
        v[svc.support_] = svc.dual_coef_.ravel()
        kv = K @ v
        f = kv + svc.intercept_[0]
        primal = 0.5 * v @ kv + SVM_C * np.maximum(0.0, 1.0 - y * f).sum()
        dual = np.abs(v).sum() - 0.5 * v @ kv
        assert abs(v.sum()) <= 1e-12 * np.abs(v).sum()  # SVC's alpha is feasible: y'alpha = 0
        assert np.all(np.abs(v) <= SVM_C * (1 + 1e-12))
        dist = float(np.sqrt(2.0 * max(primal - dual, 0.0)))
        _SVC_CACHE[key] = (X, y, ka, svc, v, kv, f, dist, dist * np.sqrt(np.diag(K).max()))
    return _SVC_CACHE[key]


def _dual_coef(res, y: np.ndarray) -> np.ndarray | None:
    """alpha_i y_i over every training row (None for AID's primal, which has no alphas)."""
    if isinstance(res.solution, KernelSolution):
        v = np.zeros(len(y))
        v[res.solution.support] = res.solution.dual_coef
        return v
    alpha = res.extra.get("alpha")
    return None if alpha is None else np.asarray(alpha) * y


SVM_CASES = [(d, k, s) for d in ("cancer", "iris", "digits") for k in ("linear", "rbf", "poly")
             for s in ("smo", "full", "block") + (("aid", "ipm") if k == "linear" else ())]

# Measured support-set differences (the rule: a row in one support only has alpha below
# ALPHA_ZERO C). The monolithic solve (Clarabel's interior point; HiGHS's duals for the linear
# primal) returns every row with a positive alpha, 1e-10 .. 1e-8 C off the support, and a few
# rows just outside the margin (SVC's y f = 1.002 .. 1.02, where the optimum has alpha = 0)
# with alphas up to 1e-5 C; ipm one such row; SVC, smo and block leave them at 0.
SUPPORT_XFAIL = {
    ("cancer", "linear", "full"): "row 154 (y f = 1.0023) alpha 7.2e-7 C",
    ("cancer", "rbf", "full"): "rows 90, 444 (y f = 1.0011, 1.0040) alphas 9.9e-7, 5.2e-8 C",
    ("cancer", "poly", "full"): "row 455 (y f = 1.0108) alpha 3.3e-8 C",
    ("iris", "rbf", "full"): "rows 7, 98 (y f = 1.0021, 1.0176) alphas 1.0e-6, 2.9e-8 C",
    ("digits", "rbf", "full"): "10 rows (y f = 1.0019 .. 1.0219) alphas 2.7e-8 .. 1.0e-5 C",
    ("cancer", "linear", "ipm"): "row 154 (y f = 1.0023) alpha 2.0e-7 C",
}


def _support_case(case):
    reason = SUPPORT_XFAIL.get(case)
    if reason is None:
        return case
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=(
        f"{case[2]} keeps small alphas near the margin, measured: {reason}, outside SVC's support "
        f"(SVC at tol 1e-8, smo and block have none); the rule allows {ALPHA_ZERO:.0e} C")))


_SVM_RESULTS: dict = {}


def svm_result(data: str, kernel: str, strategy: str):
    key = (data, kernel, strategy)
    if key not in _SVM_RESULTS:
        X, y, ka, *_ = svc_reference(data, kernel)
        prob = SVM(X, y, C=SVM_C, kernel=kernel, **ka)
        _SVM_RESULTS[key] = (prob, prob.solve(strategy))
    return _SVM_RESULTS[key]


@pytest.mark.parametrize("data,kernel,strategy", SVM_CASES)
def test_svm_decision_values_against_svc(data, kernel, strategy):
    """w'phi(x_i) within our decision bound plus SVC's (both proven from duality gaps); the
    decision values with the intercept within SOLUTION_TOL of SVC's (the issue measured
    1.8e-3 for full with the poly kernel on breast cancer; now 5.7e-6); for the linear kernel
    w within our solution bound plus SVC's."""
    X, y, ka, svc, v, kv_svc, f_svc, d_svc, dec_svc = svc_reference(data, kernel)
    prob, res = svm_result(data, kernel, strategy)
    assert res.termination in OPTIMAL, res.raw_status
    assert res.solution_gap <= SOLUTION_TOL
    f = prob.decision_function(res, X)
    kv = f - res.solution.intercept
    assert np.abs(kv - kv_svc).max() <= res.decision_bound + dec_svc
    assert np.abs(f - f_svc).max() <= SOLUTION_TOL
    if kernel == "linear":
        w = res.solution.coef if hasattr(res.solution, "coef") else res.solution.linear().coef
        assert np.linalg.norm(w - svc.coef_.ravel()) <= res.solution_bound + d_svc


@pytest.mark.parametrize("data,kernel,strategy",
                         [_support_case(c) for c in SVM_CASES if c[2] != "aid"])
def test_svm_support_and_dual_coefficients_against_svc(data, kernel, strategy):
    """The same support (a row in one support only has alpha below ALPHA_ZERO C: zero to the
    solver's accuracy) and dual coefficients within DUAL_TOL C of SVC's. AID returns the
    linear primal's w and b only (no alphas)."""
    X, y, ka, svc, v_svc, kv_svc, f_svc, d_svc, dec_svc = svc_reference(data, kernel)
    prob, res = svm_result(data, kernel, strategy)
    v = _dual_coef(res, y)
    assert v is not None
    ours, theirs = set(np.flatnonzero(v)), set(svc.support_)
    for i in sorted(ours ^ theirs):
        assert max(abs(v[i]), abs(v_svc[i])) <= ALPHA_ZERO * SVM_C, (i, v[i], v_svc[i])
    assert np.abs(v - v_svc).max() <= DUAL_TOL * SVM_C


@pytest.fixture(scope="module")
def digit_pairs():
    X, y = load_digits(return_X_y=True)
    return X, y


@pytest.mark.parametrize("pair,kernel,strategy", [
    ((0, 1), "linear", "smo"), ((0, 1), "linear", "full"), ((0, 1), "linear", "ipm"),
    ((3, 8), "linear", "full"), ((3, 8), "linear", "ipm"),
    ((3, 8), "rbf", "smo"), ((3, 8), "rbf", "full"), ((3, 8), "rbf", "block"),
])
def test_svm_classifier_on_raw_digits_against_svc(digit_pairs, pair, kernel, strategy):
    """The issue's digits case through the estimator (raw pixels, SVC's defaults gamma='scale',
    C = 1): full kept 4 extra support vectors (alphas up to 4.9e-4), ipm 1. Now the support
    is SVC's exactly and the decision values agree within SOLUTION_TOL (measured: 1.7e-6 for
    full on 3 against 8, linear)."""
    X, y = digit_pairs
    keep = np.isin(y, pair)
    X, y = X[keep], y[keep]
    svc = SVC(kernel=kernel, tol=1e-8).fit(X, y)
    clf = SVMClassifier(kernel=kernel, strategy=strategy).fit(X, y)
    assert clf.result_.termination in OPTIMAL
    np.testing.assert_array_equal(np.sort(clf.support_), np.sort(svc.support_))
    assert np.abs(clf.decision_function(X) - svc.decision_function(X)).max() <= SOLUTION_TOL
    order_ours, order_svc = np.argsort(clf.support_), np.argsort(svc.support_)
    assert np.abs(clf.dual_coef_.ravel()[order_ours]
                  - svc.dual_coef_.ravel()[order_svc]).max() <= DUAL_TOL * clf.C


@pytest.mark.xfail(strict=True, raises=NumericalError, reason=(
    "block with the linear kernel on raw digits (0 against 1, 360 x 64, pixels 0..16): a block "
    "QP ends with HiGHS kSolveError, a SubproblemError, so the fit raises NumericalError; smo, "
    "full and ipm certify the same pair (measured on 0/1, 3/8 and 1/8)"))
def test_svm_classifier_block_linear_on_raw_digits(digit_pairs):
    X, y = digit_pairs
    keep = np.isin(y, (0, 1))
    X, y = X[keep], y[keep]
    svc = SVC(kernel="linear", tol=1e-8).fit(X, y)
    clf = SVMClassifier(kernel="linear", strategy="block").fit(X, y)
    np.testing.assert_array_equal(np.sort(clf.support_), np.sort(svc.support_))
    assert np.abs(clf.decision_function(X) - svc.decision_function(X)).max() <= SOLUTION_TOL


# --------------------------------------------------------------------------------------------
# KLR against each other and an independent primal solve
# --------------------------------------------------------------------------------------------

KLR_C = 10.0


def klr_dual_gap(K: np.ndarray, y: np.ndarray, C: float, f: np.ndarray, half_w2: float) -> float:
    """An upper bound on P(w, b) - P*: P(w, b) + g(alpha) >= P - P* for every feasible alpha of
    the dual g(alpha) = 1/2 alpha'Q alpha + C sum G(alpha_i / C), here alpha = C sigma(-y f)
    shrunk on its larger class side to y'alpha = 0 (P* = -min g)."""
    a = C * expit(-y * f)
    excess = float(y @ a)
    side = y > 0 if excess > 0 else y < 0
    a[side] *= 1.0 - abs(excess) / a[side].sum()
    v, d = a * y, a / C
    dual = 0.5 * v @ K @ v + C * np.sum(xlogy(d, d) + xlogy(1 - d, 1 - d))
    return float(half_w2 + C * np.logaddexp(0.0, -y * f).sum() + dual)


def _klr_data(n: int | None):
    X, y = _binary("cancer")
    if n is not None:
        rows = np.random.default_rng(0).choice(len(y), n, replace=False)
        X, y = X[rows], y[rows]
    return X, y


def klr_reference(X: np.ndarray, y: np.ndarray, kernel: str):
    """(w'phi(x_i), b, w or None, distance bound on w, bound on w'phi(x_i)) of the independent
    primal solve: LogisticRegression (same C, unpenalised intercept) for the linear kernel; for
    RBF L-BFGS on u = L'beta with K = L L' (f = K beta + b = L u + b, 1/2 beta'K beta =
    1/2 ||u||^2: the same objective, conditioned by 1 instead of K's spectrum)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kernel == "linear":
            lr = LogisticRegression(C=KLR_C, tol=1e-10, max_iter=10000).fit(X, y)
            w, b = lr.coef_.ravel(), float(lr.intercept_[0])
            K, kv, half_w2 = X @ X.T, X @ w, 0.5 * w @ w
        else:
            K = pairwise_kernels(X, metric="rbf", gamma=1.0 / X.shape[1])
            lam, V = np.linalg.eigh(K)
            keep = lam > 1e-12 * lam.max()
            L = V[:, keep] * np.sqrt(lam[keep])

            def fun(z):
                f = L @ z[:-1] + z[-1]
                g = -KLR_C * y * expit(-y * f)
                obj = 0.5 * z[:-1] @ z[:-1] + KLR_C * np.logaddexp(0.0, -y * f).sum()
                return obj, np.r_[z[:-1] + L.T @ g, g.sum()]

            z = minimize(fun, np.zeros(L.shape[1] + 1), jac=True, method="L-BFGS-B",
                         options={"maxiter": 20000, "ftol": 1e-16, "gtol": 1e-12,
                                  "maxcor": 30}).x
            w, b, kv, half_w2 = None, float(z[-1]), L @ z[:-1], 0.5 * z[:-1] @ z[:-1]
    dist = np.sqrt(2.0 * max(klr_dual_gap(K, y, KLR_C, kv + b, half_w2), 0.0))
    return kv, b, w, dist, dist * np.sqrt(np.diag(K).max())


_KLR: dict = {}


def klr_results(kernel: str, strategy: str, n: int | None = 250):
    key = (kernel, strategy, n)
    if key not in _KLR:
        X, y = _klr_data(n)
        ka = {} if kernel == "linear" else {"gamma": 1.0 / X.shape[1]}
        prob = KLR(X, y, C=KLR_C, kernel=kernel, **ka)
        res = prob.solve(strategy)
        f = res.solution.decision_function(X)
        _KLR[key] = (res, f - res.solution.intercept, f)
    return _KLR[key]


_KLR_REF: dict = {}


def klr_ref(kernel: str, n: int | None = 250):
    if (kernel, n) not in _KLR_REF:
        _KLR_REF[kernel, n] = klr_reference(*_klr_data(n), kernel)
    return _KLR_REF[kernel, n]


KLR_CASES = [("linear", "smo"), ("linear", "full"), ("linear", "newton"),
             pytest.param("linear", "block", marks=pytest.mark.slow),  # 20 s on 250 rows
             ("rbf", "smo"), ("rbf", "full"), ("rbf", "block")]


def test_klr_strategies_in_the_suite():
    assert sorted(strategies_for("klr")) == ["block", "full", "newton", "smo"]


@pytest.mark.parametrize("kernel,strategy", KLR_CASES)
def test_klr_against_independent_primal(kernel, strategy):
    """w'phi(x_i) within our decision bound plus the reference's (its duality gap); the
    linear kernel's w within both distance bounds; the intercept, which no certificate covers,
    within SOLUTION_TOL logits (stated; measured up to 4.7e-4, block)."""
    kv_ref, b_ref, w_ref, d_ref, dec_ref = klr_ref(kernel)
    res, kv, f = klr_results(kernel, strategy)
    assert res.termination in OPTIMAL, res.raw_status
    assert res.solution_gap <= SOLUTION_TOL
    assert np.abs(kv - kv_ref).max() <= res.decision_bound + dec_ref
    if w_ref is not None:
        w = res.solution.linear().coef
        assert np.linalg.norm(w - w_ref) <= res.solution_bound + d_ref
    assert abs(res.solution.intercept - b_ref) <= SOLUTION_TOL


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["smo", "full", "newton", "block"])
def test_klr_issue_reproduction_all_of_breast_cancer(strategy):
    """The issue: block on standardized breast cancer (569 rows, linear kernel, C = 10) was
    certified at gap 9.9e-7 with decision values 2.2e-2 from LogisticRegression (|f| up to 94).
    Measured now: block certified at gap 1.3e-7 (120 s), 7.6e-3 from it, within its proven
    decision bound 0.17 (+ 2.4e-3, LogisticRegression's); certified because its distance
    8.3e-3 is within SOLUTION_TOL of ||w||, not because the decision values are within 1e-3
    logits. smo, full and newton: 2.9e-5 .. 3.7e-5 from it."""
    kv_ref, b_ref, w_ref, d_ref, dec_ref = klr_ref("linear", None)
    res, kv, _ = klr_results("linear", strategy, None)
    assert res.termination in OPTIMAL, res.raw_status
    assert res.solution_gap <= SOLUTION_TOL
    assert np.abs(kv - kv_ref).max() <= res.decision_bound + dec_ref
    assert np.linalg.norm(res.solution.linear().coef - w_ref) <= res.solution_bound + d_ref


@pytest.mark.parametrize("kernel,first,second", [
    ("linear", "smo", "full"), ("linear", "smo", "newton"), ("linear", "full", "newton"),
    ("rbf", "smo", "full"), ("rbf", "smo", "block"), ("rbf", "full", "block"),
])
def test_klr_strategies_against_each_other(kernel, first, second):
    """Two certified results' w'phi(x_i) differ by at most the sum of their decision bounds."""
    a, ka, _ = klr_results(kernel, first)
    b, kb, _ = klr_results(kernel, second)
    assert np.abs(ka - kb).max() <= a.decision_bound + b.decision_bound
