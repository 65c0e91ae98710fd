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
  :func:`worker_quality_intervals` (:mod:`crowdlearn.agreement`)
* results by original id (pandas): :mod:`crowdlearn.frames`
* the EM engine: :func:`run_em`, :func:`fit_em`
* size limits on what a crowd may imply: :func:`size_limits`, :func:`set_size_limits`
* simulators: :mod:`crowdlearn.simulate`, :mod:`crowdlearn.simulate_annotators`,
  :mod:`crowdlearn.simulate_sparse`
* model selection without true labels: :mod:`crowdlearn.model_selection`
* derivations: :mod:`crowdlearn.symbolic`
* real data sets: :mod:`crowdlearn.datasets`
* widgets and experiments behind the chapters: :mod:`crowdlearn.widgets`,
  :mod:`crowdlearn.widgets_annotators`,
  :mod:`crowdlearn.experiments`
"""

from .dawid_skene import DawidSkene
from .em import EMResult, EMState, fit_em, run_em
from .exceptions import ConvergenceWarning, DegenerateFitWarning, NotFittedError
from ._limits import SizeLimits, get_size_limits, set_size_limits, size_limits
from .labels import (CrowdLabels, as_crowd_labels, from_dataframe, from_dense, from_table,
                     from_triples)
from .latent_class import LatentClassModel
from .logistic_annotators import LogisticAnnotators
from .majority_vote import MajorityVote
from .glad import GLAD
from .mace import MACE
from .weighted_vote import Wawa, WeightedMajorityVote, ZeroBasedSkill
from .agreement import krippendorff_alpha, posterior_entropy, worker_quality_intervals
from .multilabel import (MultiCrowdLabels, MultiLabelDawidSkene, as_multi_labels,
                         from_dense_multi, from_quadruples)
from .naive_bayes import BernoulliNaiveBayes
from .one_coin import OneCoinDawidSkene
from .sparse_experts import MajorityVoteLogistic, SparseExpertsEM, sparse_experts_path
from .model_selection import (expected_surrogate_risk, select_by_surrogate, select_penalty,
                              surrogate_risk, true_risk)
from . import (agreement, datasets, experiments, model_selection, simulate, simulate_annotators,
               simulate_sparse, symbolic)

__version__ = "0.1.0"

__all__ = [
    "GLAD",
    "agreement",
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
    "model_selection",
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
    "simulate_annotators",
    "simulate_sparse",
    "size_limits",
    "sparse_experts_path",
    "surrogate_risk",
    "symbolic",
    "true_risk",
    "widgets",
    "widgets_annotators",
]


def __getattr__(name):
    # crowdlearn.widgets pulls in ipywidgets and matplotlib: import it only when asked for
    if name in ("widgets", "widgets_annotators"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'crowdlearn' has no attribute {name!r}")
