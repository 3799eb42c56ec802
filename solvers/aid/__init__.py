"""AID: aggregate and iteratively disaggregate, for LAD and the weighted SVM, with a proof of
optimality: sign-pure clusters *and* a gap E - F within ``CERTIFICATE_TOL`` of the problem's
natural scale, F a valid lower bound (:mod:`solvers.aid.certificate`).

* :func:`aid_lad` (module :mod:`solvers.aid.lad`), aggregated LPs in :mod:`solvers.aid.lad_lp`;
* :func:`aid_svm` (module :mod:`solvers.aid.svm`), aggregated QPs in :mod:`solvers.aid.svm_qp`;
* initial clusterings in :mod:`solvers.aid.clustering`, cluster sums and splits in
  :mod:`solvers.aid.aggregation`, power-of-two equilibration in :mod:`solvers.aid.scaling`.
"""

from solvers.aid.aggregation import Aggregate, aggregate, mixed_clusters, split_mixed
from solvers.aid.clustering import lad_clusters, svm_clusters
from solvers.aid.lad import aid_lad, build_aggregated_lad
from solvers.aid.svm import aid_svm, build_aggregated_svm

__all__ = [
    "Aggregate",
    "aggregate",
    "aid_lad",
    "aid_svm",
    "build_aggregated_lad",
    "build_aggregated_svm",
    "lad_clusters",
    "mixed_clusters",
    "split_mixed",
    "svm_clusters",
]
