"""The module paths of crowdlearn 0.1, kept working for one release.

The package's files were grouped into folders by family (``aggregation/``,
``features/``, ``simulate/``, ``widgets/``, ``classroom/``, ``distributed/``, ...).
Every public name is still importable from ``crowdlearn`` itself. The old
module paths (``crowdlearn.dawid_skene``, ``crowdlearn.model_selection``, ...)
still import, as the *same* module objects as the new paths, with a
``DeprecationWarning`` naming the new path. They go in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

OLD_TO_NEW = {
    "crowdlearn.majority_vote": "crowdlearn.aggregation.majority_vote",
    "crowdlearn.dawid_skene": "crowdlearn.aggregation.dawid_skene",
    "crowdlearn.one_coin": "crowdlearn.aggregation.one_coin",
    "crowdlearn.glad": "crowdlearn.aggregation.glad",
    "crowdlearn.mace": "crowdlearn.aggregation.mace",
    "crowdlearn.weighted_vote": "crowdlearn.aggregation.weighted_vote",
    "crowdlearn.multilabel": "crowdlearn.aggregation.multilabel",
    "crowdlearn.naive_bayes": "crowdlearn.features.naive_bayes",
    "crowdlearn.latent_class": "crowdlearn.features.latent_class",
    "crowdlearn.logistic_annotators": "crowdlearn.features.logistic_annotators",
    "crowdlearn.sparse_experts": "crowdlearn.features.sparse_experts",
    "crowdlearn.model_selection": "crowdlearn.selection",
    "crowdlearn.agreement": "crowdlearn.metrics",
    "crowdlearn._logistic": "crowdlearn._solvers.logistic",
    "crowdlearn._l1_logistic": "crowdlearn._solvers.l1_logistic",
    "crowdlearn.simulate_annotators": "crowdlearn.simulate.annotators",
    "crowdlearn.simulate_sparse": "crowdlearn.simulate.sparse",
    "crowdlearn.izbicki_stern": "crowdlearn.simulate.izbicki_stern",
    "crowdlearn.widgets_annotators": "crowdlearn.widgets.annotators",
    "crowdlearn.classroom_kit": "crowdlearn.classroom.kit",
    "crowdlearn.classroom_policy": "crowdlearn.classroom.policy",
    "crowdlearn.dask_backend": "crowdlearn.distributed.dask_backend",
}


def load(old: str, stacklevel: int = 3):
    """Import the module that ``old`` moved to, warning once per import site."""
    new = OLD_TO_NEW[old]
    warnings.warn(f"{old} moved to {new} (and every public name is in crowdlearn itself); "
                  f"the old path stops working in the next release", DeprecationWarning,
                  stacklevel=stacklevel)
    module = importlib.import_module(new)
    sys.modules[old] = module
    return module


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import crowdlearn.dawid_skene`` gives ``crowdlearn.aggregation.dawid_skene``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in OLD_TO_NEW:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return load(spec.name, stacklevel=3)  # importlib's own frames are skipped

    def exec_module(self, module):
        pass  # already executed under its new name


def install() -> None:
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())
