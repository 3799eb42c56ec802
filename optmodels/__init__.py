"""optmodels: training problems of machine learning as algebraic models, solved exactly and by
decomposition or sketching strategies, side by side."""

from optmodels.compare import compare
from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.ridge import Ridge
from optmodels.svm import SVM

__all__ = ["KLR", "LAD", "SVM", "Ridge", "compare"]
__version__ = "0.1.0"
