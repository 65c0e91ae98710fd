"""crowdlearn: learning from many imperfect experts with the EM algorithm.

The package behind the crowdlearn book. Public API, flat:

* labels: :class:`CrowdLabels`, :func:`from_triples`, :func:`from_dense`,
  :func:`from_table`, :func:`from_dataframe`, :func:`as_crowd_labels`
* models: :class:`MajorityVote`, :class:`BernoulliNaiveBayes`, :class:`LatentClassModel`,
  :class:`DawidSkene`, :class:`OneCoinDawidSkene`, :class:`MultiLabelDawidSkene`,
  :class:`LogisticAnnotators`, :class:`SparseExpertsEM`, :class:`MajorityVoteLogistic`,
  :class:`GLAD`, :class:`MACE`, :class:`WeightedMajorityVote`, :class:`Wawa`,
  :class:`ZeroBasedSkill`, :class:`GoldMajorityVote`
* agreement and doubt: :func:`krippendorff_alpha`, :func:`consistency`,
  :func:`accuracy_on_aggregates`, :func:`spammer_score`, :func:`posterior_entropy`,
  :func:`worker_quality_intervals` (:mod:`crowdlearn.metrics`)
* results by original id (pandas): :mod:`crowdlearn.frames`
* the EM engine: :func:`run_em`, :func:`fit_em`
* size limits on what a crowd may imply: :func:`size_limits`, :func:`set_size_limits`
* simulators: :mod:`crowdlearn.simulate`, :mod:`crowdlearn.simulate.annotators`,
  :mod:`crowdlearn.simulate.sparse`
* model selection without true labels: :mod:`crowdlearn.selection`
  (:func:`heldout_label_likelihood`; calibration: :func:`calibration_curve`,
  :func:`expected_calibration_error`)
* where to spend the next label: :func:`expected_label_gains`, :func:`recommend_labels`,
  :func:`replay_policies` (:mod:`crowdlearn.active`)
* derivations: :mod:`crowdlearn.symbolic`
* real data sets: :mod:`crowdlearn.datasets`
* widgets and experiments behind the chapters: :mod:`crowdlearn.widgets`,
  :mod:`crowdlearn.widgets.annotators`,
  :mod:`crowdlearn.experiments`

Every name is imported on first use (PEP 562): ``import crowdlearn`` itself loads no model,
no SciPy and none of the optional packages (SymPy, Matplotlib, ipywidgets, pandas, Dask);
``crowdlearn.DawidSkene`` or ``from crowdlearn import DawidSkene`` imports what that name
needs. ``pip install crowdlearn`` installs NumPy and SciPy only; the extras ``[widgets]``,
``[pandas]``, ``[dask]``, ``[book]`` and ``[all]`` add the rest. The instructor's grader is a
distribution of its own (``crowdlearn-grader``, the repository's ``grader/`` folder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

__version__ = "0.2.0"

_NAMES = {
    # the labels, the EM engine, errors and size limits
    **dict.fromkeys(["CrowdLabels", "as_crowd_labels", "from_dataframe", "from_dense",
                     "from_table", "from_triples"], "crowdlearn.labels"),
    **dict.fromkeys(["EMResult", "EMState", "fit_em", "run_em"], "crowdlearn.em"),
    **dict.fromkeys(["ConvergenceWarning", "DegenerateFitWarning", "NotFittedError"],
                    "crowdlearn.exceptions"),
    **dict.fromkeys(["SizeLimits", "get_size_limits", "set_size_limits", "size_limits"],
                    "crowdlearn._limits"),
    # models of the labels alone
    "DawidSkene": "crowdlearn.aggregation.dawid_skene",
    "MajorityVote": "crowdlearn.aggregation.majority_vote",
    "GLAD": "crowdlearn.aggregation.glad",
    "MACE": "crowdlearn.aggregation.mace",
    "OneCoinDawidSkene": "crowdlearn.aggregation.one_coin",
    **dict.fromkeys(["GoldMajorityVote", "Wawa", "WeightedMajorityVote", "ZeroBasedSkill"],
                    "crowdlearn.aggregation.weighted_vote"),
    **dict.fromkeys(["MultiCrowdLabels", "MultiLabelDawidSkene", "as_multi_labels",
                     "from_dense_multi", "from_quadruples"], "crowdlearn.aggregation.multilabel"),
    # models that also read features
    "LatentClassModel": "crowdlearn.features.latent_class",
    "LogisticAnnotators": "crowdlearn.features.logistic_annotators",
    "BernoulliNaiveBayes": "crowdlearn.features.naive_bayes",
    **dict.fromkeys(["MajorityVoteLogistic", "SparseExpertsEM", "sparse_experts_path"],
                    "crowdlearn.features.sparse_experts"),
    # agreement, model selection
    **dict.fromkeys(["accuracy_on_aggregates", "consistency", "krippendorff_alpha",
                     "posterior_entropy", "spammer_score", "worker_quality_intervals"],
                    "crowdlearn.metrics"),
    **dict.fromkeys(["calibration_curve", "expected_calibration_error",
                     "expected_surrogate_risk", "heldout_label_likelihood",
                     "select_by_surrogate", "select_penalty", "surrogate_risk", "true_risk"],
                    "crowdlearn.selection"),
    # where to spend the next label
    **dict.fromkeys(["LabelGains", "ReplayResult", "expected_label_gains", "labelled_pairs",
                     "recommend_labels", "replay_policies"], "crowdlearn.active"),
    # subpackages and modules
    **{name: f"crowdlearn.{name}" for name in (
        "active", "aggregation", "datasets", "distributed", "experiments", "features",
        "metrics", "selection", "simulate", "symbolic", "widgets",
        # not in __all__, but attributes of the package as before (crowdlearn.em.fit_em)
        "em", "exceptions", "frames", "labels", "solvers")},
}
"""Public name -> the module it is imported from on first use."""

__getattr__, __dir__ = attach(__name__, _NAMES)

if TYPE_CHECKING:  # what static tools (and readers) see; nothing of it runs
    from crowdlearn import (active, aggregation, datasets, distributed, experiments,
                            features, metrics, selection, simulate, symbolic, widgets)
    from crowdlearn._limits import SizeLimits, get_size_limits, set_size_limits, size_limits
    from crowdlearn.active import (LabelGains, ReplayResult, expected_label_gains,
                                   labelled_pairs, recommend_labels, replay_policies)
    from crowdlearn.aggregation.dawid_skene import DawidSkene
    from crowdlearn.aggregation.glad import GLAD
    from crowdlearn.aggregation.mace import MACE
    from crowdlearn.aggregation.majority_vote import MajorityVote
    from crowdlearn.aggregation.multilabel import (MultiCrowdLabels, MultiLabelDawidSkene,
                                                   as_multi_labels, from_dense_multi,
                                                   from_quadruples)
    from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
    from crowdlearn.aggregation.weighted_vote import (GoldMajorityVote, Wawa,
                                                      WeightedMajorityVote, ZeroBasedSkill)
    from crowdlearn.em import EMResult, EMState, fit_em, run_em
    from crowdlearn.exceptions import (ConvergenceWarning, DegenerateFitWarning,
                                       NotFittedError)
    from crowdlearn.features.latent_class import LatentClassModel
    from crowdlearn.features.logistic_annotators import LogisticAnnotators
    from crowdlearn.features.naive_bayes import BernoulliNaiveBayes
    from crowdlearn.features.sparse_experts import (MajorityVoteLogistic, SparseExpertsEM,
                                                    sparse_experts_path)
    from crowdlearn.labels import (CrowdLabels, as_crowd_labels, from_dataframe, from_dense,
                                   from_table, from_triples)
    from crowdlearn.metrics import (accuracy_on_aggregates, consistency, krippendorff_alpha,
                                    posterior_entropy, spammer_score, worker_quality_intervals)
    from crowdlearn.selection import (calibration_curve, expected_calibration_error,
                                      expected_surrogate_risk, heldout_label_likelihood,
                                      select_by_surrogate, select_penalty, surrogate_risk,
                                      true_risk)

__all__ = [
    "GLAD",
    "metrics",
    "worker_quality_intervals",
    "posterior_entropy",
    "krippendorff_alpha",
    "consistency",
    "accuracy_on_aggregates",
    "spammer_score",
    "ZeroBasedSkill",
    "WeightedMajorityVote",
    "Wawa",
    "GoldMajorityVote",
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
    "heldout_label_likelihood",
    "calibration_curve",
    "expected_calibration_error",
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
    "distributed",
    "active",
    "LabelGains",
    "ReplayResult",
    "expected_label_gains",
    "labelled_pairs",
    "recommend_labels",
    "replay_policies",
]
