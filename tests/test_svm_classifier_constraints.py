"""SVMClassifier's constraints= / bounds= (issue 33): the binary linear SVM with constraints on
(coef_, intercept_), checked against an independent CVXPY + Clarabel model of the same problem
(FairSVM's covariance bound), with clear refusals where the constraints have no meaning."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint

from optmodels import SVMClassifier

cp = pytest.importorskip("cvxpy")


@pytest.fixture(scope="module")
def fair():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    labels = np.where(X @ np.array([1.0, -1.0, 0.5, 2.0]) + 0.5 * rng.normal(size=300) > 0,
                      "yes", "no")
    z = X[:, 3] - X[:, 3].mean()  # the sensitive feature
    return X, labels, z @ X / X.shape[0]


def _cvxpy_fair(X, y_pm, c, C, cov):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y_pm, X @ w + b)))
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * hinge), [cp.abs(c @ w) <= cov])
    prob.solve(solver="CLARABEL")
    return prob.value, w.value, float(b.value)


def test_fair_svm_classifier_equals_cvxpy(fair):
    X, labels, c = fair
    clf = SVMClassifier(kernel="linear", C=0.5,
                        constraints=LinearConstraint(c[None], -0.05, 0.05)).fit(X, labels)
    assert clf.strategy_ == "full" and clf.result_.is_optimal
    y_pm = np.where(labels == clf.classes_[1], 1.0, -1.0)  # SVC: positive for classes_[1]
    ref, w, b = _cvxpy_fair(X, y_pm, c, 0.5, 0.05)
    assert clf.result_.objective == pytest.approx(ref, rel=1e-6)
    np.testing.assert_allclose(clf.coef_[0], w, atol=1e-4 * np.linalg.norm(w))
    assert clf.intercept_[0] == pytest.approx(b, abs=1e-4)
    assert abs(c @ clf.coef_[0]) <= 0.05 * (1 + 1e-8)
    # the bound binds: unconstrained, the covariance is larger
    free = SVMClassifier(kernel="linear", C=0.5).fit(X, labels)
    assert abs(c @ free.coef_[0]) > 0.1
    np.testing.assert_allclose(clf.decision_function(X), X @ clf.coef_[0] + clf.intercept_[0],
                               atol=1e-12)
    assert set(clf.predict(X)) <= set(clf.classes_)


def test_bounds_on_the_intercept_and_nonnegative_coefficients(fair):
    X, labels, _ = fair
    lb = np.r_[np.zeros(X.shape[1]), -0.1]
    ub = np.r_[np.full(X.shape[1], np.inf), 0.1]
    clf = SVMClassifier(kernel="linear", bounds=Bounds(lb, ub)).fit(X, labels)
    assert clf.result_.is_optimal
    assert clf.coef_.min() >= -1e-9 and abs(clf.intercept_[0]) <= 0.1 + 1e-9


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"kernel": "rbf"}, "kernel='linear'"),
    ({"kernel": "poly"}, "kernel='linear'"),
])
def test_constraints_need_the_linear_kernel(fair, kwargs, needle):
    X, labels, c = fair
    clf = SVMClassifier(constraints=LinearConstraint(c[None], -1, 1), **kwargs)
    with pytest.raises(ValueError, match="'constraints' parameter of SVMClassifier") as info:
        clf.fit(X, labels)
    assert needle in str(info.value)


def test_constraints_need_two_classes(fair):
    X, _, c = fair
    y3 = np.arange(X.shape[0]) % 3
    clf = SVMClassifier(kernel="linear", bounds=Bounds(-1, 1))
    with pytest.raises(ValueError, match="'bounds' parameter .* binary SVM; y has 3 classes"):
        clf.fit(X, y3)


def test_strategies_that_drop_constraints_refuse_them(fair):
    X, labels, c = fair
    for strategy in ("ipm", "smo"):
        clf = SVMClassifier(kernel="linear", strategy=strategy,
                            constraints=LinearConstraint(c[None], -0.05, 0.05))
        with pytest.raises(ValueError, match="does not take constraints"):
            clf.fit(X, labels)


def test_get_params_and_clone_keep_the_constraints(fair):
    from sklearn.base import clone

    _, _, c = fair
    con = LinearConstraint(c[None], -0.05, 0.05)
    clf = SVMClassifier(kernel="linear", constraints=con)
    copied = clone(clf).get_params()["constraints"]  # clone deep-copies it
    np.testing.assert_array_equal(copied.A, con.A)
    assert (copied.lb, copied.ub) == (con.lb, con.ub)
    assert clf.get_params()["constraints"] is con
