"""optmodels: training problems of machine learning as algebraic models, solved exactly and by
decomposition or sketching strategies, side by side."""

from optmodels import _packages  # noqa: F401 - first: our solvers/instances, not the cwd's
from optmodels.compare import compare
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM

ESTIMATORS = ("KLRClassifier", "LADRegressor", "RidgeRegressor", "SVMClassifier")
__all__ = ["KLR", "LAD", "SVM", "Ridge", "compare", *ESTIMATORS]


def __getattr__(name: str) -> object:
    """The scikit-learn estimators, imported on first use (scikit-learn >= 1.6 is optional)."""
    if name in ESTIMATORS:
        from optmodels import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module 'optmodels' has no attribute {name!r}")
__version__ = "0.1.0"
