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

import sys

import numpy as np

from optmodels.estimators.kernel import KLRClassifier, SVMClassifier
from optmodels.estimators.linear import LADRegressor, RidgeRegressor
from optmodels.problem import library_versions
from solvers import threads


def _prepare_first_fit() -> None:
    """Pay at import, once, what a process's first fit paid on top of the next ones (issue 29):
    import what the default strategies run on (smo, aid; 15-20 ms, against about 1 s for
    scikit-learn itself), find the thread pools once scikit-learn brought its OpenMP (10-15
    ms), read the library versions a run record names (2 ms) and let narwhals scan its
    plugins (7 ms). The command line imports what its command's strategy needs and no other
    (``optmodels fit svm --strategy smo`` loads neither AID nor HiGHS), so from the CLI the
    strategies' modules are left to the fit."""
    import optmodels.guards  # noqa: F401
    import optmodels.strategy_adapters  # noqa: F401

    if "optmodels.cli" not in sys.modules:
        import solvers.aid  # noqa: F401
        import solvers.smo  # noqa: F401

    threads.controller()
    library_versions()
    if "narwhals" in sys.modules:  # scikit-learn's input check asks narwhals whether X is a
        # data frame; its first answer scans the installed packages' entry points (7 ms)
        from narwhals.stable.v2.dependencies import is_into_dataframe

        is_into_dataframe(np.zeros((1, 1)))


_prepare_first_fit()

__all__ = ["KLRClassifier", "LADRegressor", "RidgeRegressor", "SVMClassifier"]
