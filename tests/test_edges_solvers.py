"""Solves that gave up or hung on small problems the peers fit (issue 30)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from optmodels import SVM, SVMClassifier

# A 16-row pair (two columns) of a poly-kernel multi-class fit on which `block` hung after its
# first step: HiGHS's active-set QP cycled on the nearly singular Q_BB.
HANG_X = np.array([
    [0.8024721613829517, 1.6751540157698468], [0.4413696738749264, 0.6849233797239681],
    [0.3489973308078653, 2.8484390551697265], [1.1598009602392023, 1.2845661577971987],
    [1.5456153396812244, 0.45958935832675046], [8.100131804906427, -0.3875484378351528],
    [9.005251839069206, -1.5287132276880504], [1.6679407040249257, 0.5953609093626013],
    [8.412029524965885, -0.4211046703854118], [2.027085293094223, 1.3259955304683544],
    [9.400167302724206, -1.9291802600397439], [11.196197236500971, -0.8506548320500211],
    [8.85963622926084, -3.078624434925203], [9.283755230741408, -0.5452991295786103],
    [1.0067145563657853, -0.5223542772410383], [1.5444623838640048, -0.28296852418447527]])
HANG_Y = np.array([-1, -1, -1, -1, -1, 1, 1, -1, 1, -1, 1, 1, 1, 1, -1, -1], dtype=float)


def test_block_does_not_hang_on_a_singular_poly_block():
    smo = SVM(HANG_X, HANG_Y, kernel="poly", gamma=1.0).solve("smo")
    block = SVM(HANG_X, HANG_Y, kernel="poly", gamma=1.0).solve("block")
    assert smo.is_optimal and block.is_optimal
    assert block.objective == pytest.approx(smo.objective, rel=1e-6)
    assert block.iterations < 50


def test_full_svm_tries_its_other_backends_before_giving_up():
    X, y = load_iris(return_X_y=True)
    full = SVMClassifier(kernel="poly", gamma=1.0, strategy="full").fit(X, y)
    smo = SVMClassifier(kernel="poly", gamma=1.0, strategy="smo",
                        strategy_options={"tol": 1e-8}).fit(X, y)
    assert all(r.is_optimal for r in full.result_)
    # Clarabel alone stops at a relative gap of 1.5e-6 on one of the pairs
    assert any(r.extra["backends_tried"] != ["clarabel"] for r in full.result_)
    for r, s in zip(full.result_, smo.result_, strict=True):
        assert r.objective == pytest.approx(s.objective, rel=1e-6)
    np.testing.assert_array_equal(full.predict(X), smo.predict(X))


@pytest.mark.parametrize("alpha", [1e-16, 1e-8, 1e-3])
def test_ridge_full_on_sparse_wide_centred_data_matches_svd(alpha):
    import scipy.sparse as sp
    from sklearn.linear_model import Ridge

    from optmodels import RidgeRegressor

    X = sp.random(20, 100, density=0.1, random_state=0, format="csr")
    y = np.random.default_rng(0).normal(size=20)
    # X X' of the 20 centred rows has rank 19: Cholesky of it + 1e-16 I raised LinAlgError
    ours = RidgeRegressor(alpha=alpha, strategy="full").fit(X, y)
    ref = Ridge(alpha=alpha, solver="svd").fit(X.toarray(), y)
    if alpha == 1e-16:
        # the objective is certified; the solution is not provable: strong convexity 1e-16
        # turns a gap of 1e-30 into a distance of 1e-7 (docs/index.md), so converged
        res = ours.result_
        assert res.termination.value == "converged" and res.gap <= 1e-6, res.raw_status
        assert res.solution_gap > 1e-3
    else:
        assert ours.result_.is_optimal
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X.toarray()), rtol=0, atol=1e-10)


def test_svm_classifier_refuses_newton_with_the_reason():
    from solvers.errors import DataError

    X, y = load_iris(return_X_y=True)
    with pytest.raises(DataError, match="squared-hinge.*loss='squared_hinge'"):
        SVMClassifier(strategy="newton").fit(X, y)


def test_klr_class_weight_beyond_the_open_box_is_a_data_error():
    from sklearn.datasets import make_classification

    from optmodels import KLRClassifier
    from solvers.errors import DataError

    X, y = make_classification(100, 5, random_state=0)
    # within the open box's range it fits and certifies
    assert KLRClassifier(class_weight={1: 1e8}).fit(X, y).result_.is_optimal
    for weight in (1e20, 1e300):  # was "'alpha0' must lie inside the box"
        with pytest.raises(DataError, match="class weights.*ratio of about 1e11"):
            KLRClassifier(class_weight={1: weight}).fit(X, y)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_svm_on_overflowing_features_names_x_and_the_fix(kernel):
    from sklearn.datasets import make_classification

    from solvers.errors import DataError

    X, y = make_classification(100, 5, random_state=0)
    X[:, 0] *= 1e300  # was a message about gamma, which was never set
    with pytest.raises(DataError, match="(?s)X.*StandardScaler"):
        SVMClassifier(kernel=kernel).fit(X, y)
    with pytest.raises(DataError, match="X has entries up to"):
        SVM(X, np.where(y > 0, 1.0, -1.0), kernel=kernel, gamma=1.0)
