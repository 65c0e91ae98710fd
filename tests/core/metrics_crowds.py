"""Crowds and a quiet fit shared by the tests of ``crowdlearn.metrics``
(``test_metrics_agreement.py``, ``test_metrics_scores.py``, ``test_metrics_intervals.py``)."""

import warnings

import numpy as np

from crowdlearn.labels import from_triples


def quiet_fit(model, *args, **kwargs):
    """``model.fit(*args, **kwargs)`` with its warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args, **kwargs)


def random_crowd(seed):
    """A small random crowd (repeated labels, lone labels and unused classes included) and
    the labels of each unit, for brute-force checks."""
    rng = np.random.default_rng(seed)
    n_items, n_experts, K = int(rng.integers(3, 15)), int(rng.integers(2, 5)), \
        int(rng.integers(2, 6))
    n_labels = int(rng.integers(n_items, 3 * n_items))
    item = rng.integers(0, n_items, n_labels)
    expert = rng.integers(0, n_experts, n_labels)
    truth = rng.integers(0, K, n_items)
    label = np.where(rng.random(n_labels) < 0.6, truth[item], rng.integers(0, K, n_labels))
    crowd = from_triples(item, expert, label, n_items=n_items, n_experts=n_experts, n_classes=K)
    units = [label[item == u].tolist() for u in range(n_items)]
    return crowd, units
