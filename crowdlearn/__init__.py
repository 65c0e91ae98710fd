"""crowdlearn: learning from many imperfect experts with the EM algorithm.

The package behind the crowdlearn book. Public API, flat:

* labels: :class:`CrowdLabels`, :func:`from_triples`, :func:`from_dense`,
  :func:`from_table`, :func:`from_dataframe`, :func:`as_crowd_labels`
* models: :class:`MajorityVote`, :class:`BernoulliNaiveBayes`, :class:`LatentClassModel`,
  :class:`DawidSkene`, :class:`OneCoinDawidSkene`, :class:`MultiLabelDawidSkene`,
  :class:`LogisticAnnotators`, :class:`SparseExpertsEM`, :class:`MajorityVoteLogistic`,
  :class:`GLAD`, :class:`MACE`, :class:`WeightedMajorityVote`, :class:`Wawa`,
  :class:`ZeroBasedSkill`
* agreement and doubt: :func:`krippendorff_alpha`, :func:`posterior_entropy`,
  :func:`worker_quality_intervals` (:mod:`crowdlearn.metrics`)
* results by original id (pandas): :mod:`crowdlearn.frames`
* the EM engine: :func:`run_em`, :func:`fit_em`
* size limits on what a crowd may imply: :func:`size_limits`, :func:`set_size_limits`
* simulators: :mod:`crowdlearn.simulate`, :mod:`crowdlearn.simulate.annotators`,
  :mod:`crowdlearn.simulate.sparse`
* model selection without true labels: :mod:`crowdlearn.selection`
* derivations: :mod:`crowdlearn.symbolic`
* real data sets: :mod:`crowdlearn.datasets`
* widgets and experiments behind the chapters: :mod:`crowdlearn.widgets`,
  :mod:`crowdlearn.widgets.annotators`,
  :mod:`crowdlearn.experiments`
"""

from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.em import EMResult, EMState, fit_em, run_em
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning, NotFittedError
from crowdlearn._limits import SizeLimits, get_size_limits, set_size_limits, size_limits
from crowdlearn.labels import (CrowdLabels, as_crowd_labels, from_dataframe, from_dense,
                               from_table, from_triples)
from crowdlearn.features.latent_class import LatentClassModel
from crowdlearn.features.logistic_annotators import LogisticAnnotators
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.aggregation.glad import GLAD
from crowdlearn.aggregation.mace import MACE
from crowdlearn.aggregation.weighted_vote import Wawa, WeightedMajorityVote, ZeroBasedSkill
from crowdlearn.metrics import krippendorff_alpha, posterior_entropy, worker_quality_intervals
from crowdlearn.aggregation.multilabel import (MultiCrowdLabels, MultiLabelDawidSkene,
                                               as_multi_labels, from_dense_multi, from_quadruples)
from crowdlearn.features.naive_bayes import BernoulliNaiveBayes
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.features.sparse_experts import (MajorityVoteLogistic, SparseExpertsEM,
                                                sparse_experts_path)
from crowdlearn.selection import (expected_surrogate_risk, select_by_surrogate, select_penalty,
                                  surrogate_risk, true_risk)
from crowdlearn import (aggregation, datasets, experiments, features, metrics, selection,
                        simulate, symbolic)
from crowdlearn import _moved

_moved.install()  # the module paths of 0.1 (crowdlearn.dawid_skene, ...) for one more release

__version__ = "0.1.0"

__all__ = [
    "GLAD",
    "metrics",
    "worker_quality_intervals",
    "posterior_entropy",
    "krippendorff_alpha",
    "ZeroBasedSkill",
    "WeightedMajorityVote",
    "Wawa",
    "MACE",
    "BernoulliNaiveBayes",
    "ConvergenceWarning",
    "CrowdLabels",
    "DegenerateFitWarning",
    "DawidSkene",
    "EMResult",
    "EMState",
    "LatentClassModel",
    "LogisticAnnotators",
    "MajorityVote",
    "MajorityVoteLogistic",
    "MultiCrowdLabels",
    "MultiLabelDawidSkene",
    "NotFittedError",
    "OneCoinDawidSkene",
    "SizeLimits",
    "SparseExpertsEM",
    "as_crowd_labels",
    "as_multi_labels",
    "datasets",
    "expected_surrogate_risk",
    "experiments",
    "fit_em",
    "selection",
    "from_dataframe",
    "from_dense",
    "from_dense_multi",
    "from_quadruples",
    "from_table",
    "from_triples",
    "get_size_limits",
    "run_em",
    "select_by_surrogate",
    "select_penalty",
    "set_size_limits",
    "simulate",
    "size_limits",
    "sparse_experts_path",
    "surrogate_risk",
    "symbolic",
    "true_risk",
    "widgets",
    "aggregation",
    "features",
    "classroom",
    "distributed",
]


def __getattr__(name):
    # crowdlearn.widgets pulls in ipywidgets and matplotlib: import it only when asked for
    if name in ("widgets", "classroom", "distributed"):
        import importlib

        return importlib.import_module(f"crowdlearn.{name}")
    if f"crowdlearn.{name}" in _moved.OLD_TO_NEW:  # an old module path, e.g. crowdlearn.agreement
        return _moved.load(f"crowdlearn.{name}")
    raise AttributeError(f"module 'crowdlearn' has no attribute {name!r}")
