"""Checklist #14, #15, #30: pickling, reproducibility, inputs left unchanged."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from instances import make_classification, make_lad
from optmodels import KLR, LAD, SVM, Ridge

X, Y, _, _ = make_lad(n=120, p=3, seed=0)
XC, YC = make_classification(n=80, p=2, seed=0)
CASES = [
    ("lad", lambda: LAD(X, Y)),
    ("svm", lambda: SVM(XC, YC, kernel="rbf", gamma=0.5)),
    ("klr", lambda: KLR(XC, YC, C=2.0, gamma=0.5)),
    ("ridge", lambda: Ridge(X, Y, alpha=1.0)),
]
DATA = {"lad": (X, Y), "svm": (XC, YC), "klr": (XC, YC), "ridge": (X, Y)}


@pytest.mark.parametrize("name, make", CASES, ids=[c[0] for c in CASES])
def test_problem_and_result_pickle_round_trip(name, make):
    problem = make()
    res = problem.solve()
    p2, r2 = pickle.loads(pickle.dumps((problem, res)))
    np.testing.assert_array_equal(r2.x, res.x)
    assert r2.termination is res.termination
    assert p2.solve().objective == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize("name, make", CASES, ids=[c[0] for c in CASES])
def test_same_input_same_answer_and_inputs_untouched(name, make):
    data, target = DATA[name]
    Xc, Yc = data.copy(), target.copy()
    a, b = make().solve(), make().solve()
    assert a.is_optimal, a.raw_status
    np.testing.assert_array_equal(a.x, b.x)
    assert a.objective == b.objective and a.iterations == b.iterations
    np.testing.assert_array_equal(data, Xc)
    np.testing.assert_array_equal(target, Yc)
