"""scikit-learn's sklearn/linear_model/tests/test_ridge.py with Ridge replaced by RidgeRegressor
(suite.py)."""

import pytest

pytest.importorskip("sklearn", minversion="1.9")

from sklearn_suite.suite import expose  # noqa: E402

expose(globals(), "ridge", strategies=("full", "pcg-rfd"), slow=("pcg-rfd",))
