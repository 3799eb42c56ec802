"""scikit-learn estimators over every problem and strategy of the toolkit.

    LADRegressor    LAD / quantile regression       strategies: full, aid
    RidgeRegressor  ridge regression                 strategies: full and the sketches
    SVMClassifier   weighted SVM (one-vs-one)        strategies: smo, full, block, aid
    KLRClassifier   kernel logistic regression       strategies: smo, full, block

Each ``fit`` builds the problem (``optmodels.LAD``, ``Ridge``, ``SVM``, ``KLR``), solves it with
``strategy`` and ``strategy_options`` (checked by the strategy's option table), and keeps only
arrays and the kernel spec, so a fitted estimator pickles. A result that is not optimal raises
its :class:`solvers.errors.SolveError`, or warns with
:class:`sklearn.exceptions.ConvergenceWarning` when the model is usable (a limit, CONVERGED or
ESTIMATE); ``result_`` is the :class:`~solvers.result.SolveResult`.
"""

from optmodels.estimators.kernel import KLRClassifier, SVMClassifier
from optmodels.estimators.linear import LADRegressor, RidgeRegressor

__all__ = ["KLRClassifier", "LADRegressor", "RidgeRegressor", "SVMClassifier"]
