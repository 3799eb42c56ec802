"""One validation module: the same bad value gives the same message at every entry point.

Problems, estimators, array-level routines and instance generators all check through
``solvers.validation``; a parameter message is "The 'C' parameter of OWNER must be ... Got v
instead.", so the text after the owner's name must agree everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from instances.generators import make_classification, make_lad, make_weights
from instances.ridge import make_ridge, random_fourier_features
from optmodels.estimators import KLRClassifier, LADRegressor, RidgeRegressor, SVMClassifier
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM
from solvers.aid.lad import aid_lad
from solvers.aid.svm import aid_svm
from solvers.kernels import Kernel
from solvers.sketch.ridge import solve_ridge
from solvers.smo.block import block_klr, block_svm
from solvers.smo.klr import smo_klr
from solvers.smo.svm import smo_svm
from solvers.validation import describe_range

ROOT = Path(__file__).resolve().parents[1]
rng = np.random.default_rng(3)
X = rng.normal(size=(12, 2))
Y_CLF = np.where(X[:, 0] + 0.3 * rng.normal(size=12) > 0, 1.0, -1.0)
Y_REG = X @ np.array([1.0, -2.0]) + 0.1 * rng.normal(size=12)
LIN = Kernel("linear")

# (owner, call taking C) for every entry point with a penalty C in (0, inf)
C_ENTRY_POINTS = [
    ("SVM", lambda C: SVM(X, Y_CLF, C=C)),
    ("KLR", lambda C: KLR(X, Y_CLF, C=C)),
    ("aid_svm", lambda C: aid_svm(X, Y_CLF, C=C)),
    ("smo_svm", lambda C: smo_svm(X, Y_CLF, C=C, kernel=LIN)),
    ("smo_klr", lambda C: smo_klr(X, Y_CLF, C=C, kernel=LIN)),
    ("block_svm", lambda C: block_svm(X, Y_CLF, C=C, kernel=LIN)),
    ("block_klr", lambda C: block_klr(X, Y_CLF, C=C, kernel=LIN)),
    ("SVMClassifier", lambda C: SVMClassifier(C=C).fit(X, Y_CLF)),
    ("KLRClassifier", lambda C: KLRClassifier(C=C).fit(X, Y_CLF)),
]


def _message(call, *args) -> str:
    with pytest.raises(ValueError) as info:
        call(*args)
    return str(info.value)


@pytest.mark.parametrize("bad", [-1, 0, True, np.inf, np.nan, "abc"], ids=repr)
def test_bad_C_gives_the_template_at_every_entry_point(bad):
    expected = f" must be {describe_range('float', 0.0)}. Got {bad!r} instead."
    assert expected == " must be a float in the range (0, inf). Got " + repr(bad) + " instead."
    for owner, call in C_ENTRY_POINTS:
        msg = _message(call, bad)
        head = f"The 'C' parameter of {owner}"
        assert msg == head + expected, (owner, msg)


def test_positive_float_is_one_check_for_C_and_gamma():
    """gamma of solve_ridge and random_fourier_features: the same range, the same words."""
    tails = set()
    for owner, call in [
        ("solve_ridge", lambda g: solve_ridge(X, Y_REG, g, method="fd", m=2)),
        ("random_fourier_features", lambda g: random_fourier_features(X, gamma=g)),
    ]:
        msg = _message(call, -1)
        assert msg.startswith(f"The 'gamma' parameter of {owner} must be"), msg
        tails.add(msg.split(owner, 1)[1])
    tails.add(_message(C_ENTRY_POINTS[0][1], -1).split("SVM", 1)[1])
    assert tails == {" must be a float in the range (0, inf). Got -1 instead."}


def _with_negative_weight() -> np.ndarray:
    w = np.ones(12)
    w[4] = -0.5
    return w


WEIGHT_ENTRY_POINTS = {
    "LAD": lambda w: LAD(X, Y_REG, sample_weight=w),
    "Ridge": lambda w: Ridge(X, Y_REG, sample_weight=w),
    "SVM": lambda w: SVM(X, Y_CLF, sample_weight=w),
    "KLR": lambda w: KLR(X, Y_CLF, sample_weight=w),
    "aid_lad": lambda w: aid_lad(X, Y_REG, sample_weight=w),
    "aid_svm": lambda w: aid_svm(X, Y_CLF, sample_weight=w),
    "smo_svm": lambda w: smo_svm(X, Y_CLF, sample_weight=w, kernel=LIN),
    "smo_klr": lambda w: smo_klr(X, Y_CLF, sample_weight=w, kernel=LIN),
    "block_svm": lambda w: block_svm(X, Y_CLF, sample_weight=w, kernel=LIN),
    "block_klr": lambda w: block_klr(X, Y_CLF, sample_weight=w, kernel=LIN),
    "LADRegressor": lambda w: LADRegressor().fit(X, Y_REG, sample_weight=w),
    "RidgeRegressor": lambda w: RidgeRegressor().fit(X, Y_REG, sample_weight=w),
    "SVMClassifier": lambda w: SVMClassifier().fit(X, Y_CLF, sample_weight=w),
    "KLRClassifier": lambda w: KLRClassifier().fit(X, Y_CLF, sample_weight=w),
}


@pytest.mark.parametrize("bad, expected", [
    (_with_negative_weight(), "'sample_weight' has negative entries; weights must be >= 0."),
    (np.zeros(12), "'sample_weight' is all zero; at least one weight must be positive."),
    (np.r_[np.ones(11), np.nan], "Input 'sample_weight' contains NaN; remove or impute those "
                                 "entries first."),
    (np.ones(11), "'sample_weight' has 11 entries but X has 12 rows; they must match."),
], ids=["negative", "zero", "nan", "length"])
def test_bad_sample_weight_gives_one_message_everywhere(bad, expected):
    messages = {owner: _message(call, bad) for owner, call in WEIGHT_ENTRY_POINTS.items()}
    assert messages == dict.fromkeys(WEIGHT_ENTRY_POINTS, expected)


@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_non_finite_X_gives_one_message_everywhere(bad, word):
    Xb = X.copy()
    Xb[2, 1] = bad
    calls = {
        "LAD": lambda: LAD(Xb, Y_REG), "Ridge": lambda: Ridge(Xb, Y_REG),
        "SVM": lambda: SVM(Xb, Y_CLF), "KLR": lambda: KLR(Xb, Y_CLF),
        "aid_lad": lambda: aid_lad(Xb, Y_REG), "aid_svm": lambda: aid_svm(Xb, Y_CLF),
        "smo_svm": lambda: smo_svm(Xb, Y_CLF, kernel=LIN),
        "smo_klr": lambda: smo_klr(Xb, Y_CLF, kernel=LIN),
        "block_svm": lambda: block_svm(Xb, Y_CLF, kernel=LIN),
        "block_klr": lambda: block_klr(Xb, Y_CLF, kernel=LIN),
        "solve_ridge": lambda: solve_ridge(Xb, Y_REG, 1.0, method="fd", m=2),
        "random_fourier_features": lambda: random_fourier_features(Xb),
    }
    # the matrix is called A by the ridge routines and X elsewhere; the rest is one sentence
    tails = {owner: re.sub(r"^Input '(X|A)' ", "", _message(call)) for owner, call in
             calls.items()}
    expected = {"NaN": "contains NaN; remove or impute those entries first.",
                "infinity": "contains infinity; remove those entries or rescale."}[word]
    assert tails == dict.fromkeys(calls, expected)


@pytest.mark.parametrize("bad", [True, np.inf, np.nan, -1])
def test_generators_refuse_bools_and_non_finite_numbers_with_the_template(bad):
    for owner, call, name, accepted in [
        ("make_lad", lambda v: make_lad(noise_scale=v), "noise_scale", "[0, inf)"),
        ("make_classification", lambda v: make_classification(separation=v), "separation",
         "[0, inf)"),
        ("make_weights", lambda v: make_weights(n=5, low=v), "low", "[0, inf)"),
        ("make_ridge", lambda v: make_ridge(n=5, d=3, r=v), "r", "(0, inf)"),
    ]:
        assert _message(call, bad) == (f"The {name!r} parameter of {owner} must be a float in "
                                       f"the range {accepted}. Got {bad!r} instead.")


def test_int_parameters_refuse_bools_everywhere():
    for owner, call in [("make_weights", lambda v: make_weights(n=v)),
                        ("make_ridge", lambda v: make_ridge(n=v, d=3))]:
        assert _message(call, True) == (f"The 'n' parameter of {owner} must be an int in the "
                                        "range [1, inf). Got True instead.")
    assert _message(lambda: smo_svm(X, Y_CLF, kernel=LIN, max_iter=True)) == (
        "The 'max_iter' parameter of smo_svm must be an int in the range [1, inf). "
        "Got True instead.")


ARRAY_CHECK = re.compile(
    r"^\s*def _?(check_(sample_weight|weights|array|matrix|vector|labels|finite|target|"
    r"positive|nonnegative|max_iter|alpha0)|_finite_real|_check_real|_check_int)\b", re.M)
PENDING: set[str] = set()


def test_no_other_module_defines_array_or_weight_checks():
    found = set()
    for package in ("optmodels", "solvers", "instances"):
        for path in (ROOT / package).rglob("*.py"):
            if ARRAY_CHECK.search(path.read_text()):
                found.add(path.relative_to(ROOT).as_posix())
    assert found - PENDING == {"solvers/validation.py"}
    for gone in ("solvers/aid/validation.py", "solvers/smo/validation.py",
                 "solvers/sketch/_validation.py"):
        assert not (ROOT / gone).exists()
