"""AID: aggregate and iteratively disaggregate, for LAD and weighted SVM, with a proof of
optimality (sign-pure clusters).  See :mod:`solvers.aid.lad` and :mod:`solvers.aid.svm`."""

from solvers.aid.clustering import lad_clusters
from solvers.aid.lad import aid_lad, build_aggregated_lad

__all__ = ["aid_lad", "build_aggregated_lad", "lad_clusters"]
