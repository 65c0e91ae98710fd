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

Every name is imported on first use (``lazy_loader``, PEP 562; the names are listed once, in
``__init__.pyi``, which type checkers read too): ``import crowdlearn`` itself loads no model,
no SciPy and none of the optional packages (SymPy, Matplotlib, ipywidgets, pandas, Dask);
``crowdlearn.DawidSkene`` or ``from crowdlearn import DawidSkene`` imports what that name
needs. ``pip install crowdlearn`` installs NumPy, SciPy and lazy_loader only; the extras ``[widgets]``,
``[pandas]``, ``[dask]``, ``[book]`` and ``[all]`` add the rest. The instructor's grader is a
distribution of its own (``crowdlearn-grader``, the repository's ``grader/`` folder).
"""

import lazy_loader

__version__ = "0.2.0"

__getattr__, _lazy_dir, __all__ = lazy_loader.attach_stub(__name__, __file__)
# modules the package has as attributes (``crowdlearn.em.fit_em``) that are not its API's names
__all__ = [name for name in __all__
           if name not in {"em", "exceptions", "frames", "labels", "solvers"}]


def __dir__():  # the module's own names too (``__version__``), as dir() of a module shows
    return sorted(set(globals()) | set(_lazy_dir()))
