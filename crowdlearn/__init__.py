"""crowdlearn: learning from many imperfect experts with the EM algorithm.

The package behind the crowdlearn book. Public API, flat:

* labels: :class:`CrowdLabels`, :func:`from_triples`, :func:`from_dense`,
  :func:`from_table`, :func:`as_crowd_labels`
* models: :class:`MajorityVote`, :class:`BernoulliNaiveBayes`, :class:`LatentClassModel`,
  :class:`DawidSkene`, :class:`OneCoinDawidSkene`, :class:`MultiLabelDawidSkene`,
  :class:`LogisticAnnotators`
* the EM engine: :func:`run_em`, :func:`fit_em`
* simulators: :mod:`crowdlearn.simulate`, :mod:`crowdlearn.simulate_annotators`
* derivations: :mod:`crowdlearn.symbolic`
* real data sets: :mod:`crowdlearn.datasets`
* widgets and experiments behind the chapters: :mod:`crowdlearn.widgets`,
  :mod:`crowdlearn.widgets_annotators`,
  :mod:`crowdlearn.experiments`
"""

from .dawid_skene import DawidSkene
from .em import EMResult, EMState, fit_em, run_em
from .exceptions import ConvergenceWarning, NotFittedError
from .labels import CrowdLabels, as_crowd_labels, from_dense, from_table, from_triples
from .latent_class import LatentClassModel
from .logistic_annotators import LogisticAnnotators
from .majority_vote import MajorityVote
from .multilabel import (MultiCrowdLabels, MultiLabelDawidSkene, as_multi_labels,
                         from_dense_multi, from_quadruples)
from .naive_bayes import BernoulliNaiveBayes
from .one_coin import OneCoinDawidSkene
from . import datasets, experiments, simulate, simulate_annotators, symbolic

__version__ = "0.1.0"

__all__ = [
    "BernoulliNaiveBayes",
    "ConvergenceWarning",
    "CrowdLabels",
    "DawidSkene",
    "EMResult",
    "EMState",
    "LatentClassModel",
    "LogisticAnnotators",
    "MajorityVote",
    "MultiCrowdLabels",
    "MultiLabelDawidSkene",
    "NotFittedError",
    "OneCoinDawidSkene",
    "as_crowd_labels",
    "as_multi_labels",
    "datasets",
    "experiments",
    "fit_em",
    "from_dense",
    "from_dense_multi",
    "from_quadruples",
    "from_table",
    "from_triples",
    "run_em",
    "simulate",
    "simulate_annotators",
    "symbolic",
    "widgets",
    "widgets_annotators",
]


def __getattr__(name):
    # crowdlearn.widgets pulls in ipywidgets and matplotlib: import it only when asked for
    if name in ("widgets", "widgets_annotators"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'crowdlearn' has no attribute {name!r}")
