"""scikit-learn's sklearn/svm/tests/test_svm.py with SVC replaced by SVMClassifier (suite.py)."""

import pytest

pytest.importorskip("sklearn", minversion="1.9")

from sklearn_suite.suite import expose  # noqa: E402

expose(globals(), "svm", strategies=("smo", "full", "auto"), slow=("full",))
