"""Large-instance equivalence checks (``python -m pytest -m slow``; CI runs them as a step of
their own). Each strategy is held to the full solve on the same instance, at sizes where the
decomposition is the point, and on the same instance rescaled by 1e-10 and 1e10."""

from __future__ import annotations

import numpy as np
import pytest

from instances import make_classification, make_lad
from optmodels import LAD, SVM, Ridge

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("factor", [1.0, 1e-10, 1e10])
def test_aid_lad_large_matches_full_on_every_scale(factor):
    X, y, _, _ = make_lad(n=100_000, p=10, seed=0)
    problem = LAD(X, y * factor)
    full, aid = problem.solve(), problem.solve("aid")
    assert full.is_optimal, full.raw_status
    if aid.certified:
        assert aid.objective == pytest.approx(full.objective, rel=1e-7)
        assert aid.bound <= full.objective * (1 + 1e-9)
    else:
        assert not aid.is_optimal


def test_aid_svm_linear_large_matches_full():
    X, y = make_classification(n=20_000, p=10, seed=0)[:2]
    problem = SVM(X, y, C=1.0)
    full, aid = problem.solve(), problem.solve("aid")
    assert full.is_optimal, full.raw_status
    assert (aid.objective - full.objective) / problem.natural_scale() <= 1e-6 or not aid.certified


def test_smo_rbf_large_matches_full():
    X, y = make_classification(n=3_000, p=5, seed=0)[:2]
    problem = SVM(X, y, C=1.0, kernel="rbf", gamma=0.5)
    full, smo = problem.solve(), problem.solve("smo")
    assert full.is_optimal, full.raw_status
    diff = abs(smo.objective - full.objective) / problem.natural_scale()
    assert diff <= 1e-6 if smo.is_optimal else diff < 1e-2


def test_pcg_ridge_large_matches_cholesky():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(20_000, 400)) * np.logspace(-2, 1, 400)
    b = A @ rng.normal(size=400) + rng.normal(size=20_000)
    problem = Ridge(A, b, alpha=1.0)
    full, pcg = problem.solve(), problem.solve("pcg-rfd", max_iter=200)
    assert full.is_optimal
    assert pcg.is_optimal, pcg.raw_status
    assert (pcg.objective - full.objective) / problem.natural_scale() <= 1e-6
    assert np.linalg.norm(pcg.x - full.x) <= 1e-3 * np.linalg.norm(full.x)
