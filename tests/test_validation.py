"""Bad input raises before any model is built, with a message that names the argument."""

from __future__ import annotations

import numpy as np
import pytest

from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.problems import PROBLEMS
from optmodels.ridge import Ridge
from optmodels.svm import SVM

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 3))
Y_REG = rng.normal(size=20)
Y_CLF = np.where(X[:, 0] > 0, 1.0, -1.0)
DATA = {"lad": Y_REG, "ridge": Y_REG, "svm": Y_CLF, "klr": Y_CLF}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("bad, match", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_non_finite_X_y_and_weights(name, bad, match):
    cls, y = PROBLEMS[name], DATA[name]
    Xb = X.copy()
    Xb[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        cls(Xb, y)
    if name in ("lad", "ridge"):
        yb = y.copy()
        yb[0] = bad
        with pytest.raises(ValueError, match=match):
            cls(X, yb)
    w = np.ones(20)
    w[2] = bad
    with pytest.raises(ValueError, match=match):
        cls(X, y, sample_weight=w)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_shapes(name):
    cls, y = PROBLEMS[name], DATA[name]
    with pytest.raises(ValueError, match="Reshape your data"):
        cls(X[:, 0], y)
    with pytest.raises(ValueError, match="19 entries but X has 20 rows"):
        cls(X, y[:-1])
    with pytest.raises(ValueError, match="0 sample"):
        cls(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match=r"'sample_weight' must have shape \(20,\)"):
        cls(X, y, sample_weight=np.ones((20, 2)))
    with pytest.raises(ValueError, match="Complex data not supported"):
        cls(X + 1j, y)


def test_zero_features_message():
    with pytest.raises(
        ValueError, match=r"0 feature\(s\) \(shape=\(20, 0\)\) while a minimum of 1"
    ):
        SVM(np.zeros((20, 0)), Y_CLF)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_weights_negative_and_all_zero(name):
    cls, y = PROBLEMS[name], DATA[name]
    with pytest.raises(ValueError, match="negative"):
        cls(X, y, sample_weight=-np.ones(20))
    with pytest.raises(ValueError, match="weight.*zero"):
        cls(X, y, sample_weight=np.zeros(20))


@pytest.mark.parametrize("cls", [SVM, KLR])
def test_one_class(cls):
    with pytest.raises(ValueError, match="class"):
        cls(X, np.ones(20))
    w = (Y_CLF > 0).astype(float)
    with pytest.raises(ValueError, match="class"):
        cls(X, Y_CLF, sample_weight=w)


def test_column_vector_y_warns_and_gives_same_result():
    with pytest.warns(UserWarning, match="column-vector"):
        a = LAD(X, Y_REG[:, None])
    assert a.solve_full().objective == pytest.approx(LAD(X, Y_REG).solve_full().objective)


BAD_VALUES = {
    "float": [-1.0, "abc", np.nan],
    "bool": ["maybe", 3],
    "choice": ["nope", 1.5],
    "int": [0.5, -3],
    "float_or_choice": [-1.0, "wide"],
}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_declared_parameter_is_validated(name):
    """sklearn's check_param_validation: a bad value for each parameter names it."""
    cls, y = PROBLEMS[name], DATA[name]
    for pname, spec in cls.PARAMS.items():
        for value in BAD_VALUES[spec.kind]:
            if spec.kind == "float" and spec.low is None and value == -1.0:
                continue
            with pytest.raises(
                ValueError, match=f"The '{pname}' parameter of {cls.__name__} must be"
            ):
                cls(X, y, **{pname: value})
    with pytest.raises(ValueError, match="Unknown parameter.*valid parameters are"):
        cls(X, y, bogus=1)


def test_C_must_be_positive_message():
    with pytest.raises(
        ValueError,
        match=r"The 'C' parameter of SVM must be a float in the range \(0, inf\)\. "
        r"Got -1 instead\.",
    ):
        SVM(X, Y_CLF, C=-1)


def test_unknown_kernel_lists_choices():
    with pytest.raises(ValueError, match="linear.*rbf.*poly.*precomputed"):
        SVM(X, Y_CLF, kernel="sigmoid")


def test_unknown_strategy_and_option_list_choices():
    p = Ridge(X, Y_REG)
    with pytest.raises(ValueError, match="Unknown strategy 'magic' for ridge; choose one of"):
        p.solve(strategy="magic")
    with pytest.raises(ValueError, match="Unknown option.*'gamma'.*valid options are"):
        p.solve(gamma=3)
