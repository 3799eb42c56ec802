"""scikit-learn's sklearn/svm/tests/test_sparse.py with SVC replaced by SVMClassifier
(suite.py)."""

import pytest

pytest.importorskip("sklearn", minversion="1.9")

from sklearn_suite.suite import expose  # noqa: E402

expose(globals(), "sparse", strategies=("smo", "full", "auto"), slow=("full",))
