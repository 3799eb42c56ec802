"""scikit-learn's sklearn/linear_model/tests/test_quantile.py with QuantileRegressor replaced by
LADRegressor (suite.py)."""

import pytest

pytest.importorskip("sklearn", minversion="1.9")

from sklearn_suite.suite import expose  # noqa: E402

expose(globals(), "quantile", strategies=("full", "aid", "auto"))
