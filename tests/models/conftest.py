"""The simulated crowds several model test files share, drawn once per session.

Their arrays are read-only (the labels' index arrays are so already): a test that changed
one would change it for every test after it, and fails instead."""

import numpy as np
import pytest

from crowdlearn.simulate import one_coin_confusion, simulate_crowd
from crowdlearn.simulate.annotators import simulate_logistic_annotators


def _read_only(*arrays: np.ndarray) -> None:
    for arr in arrays:
        arr.flags.writeable = False


@pytest.fixture(scope="session")
def coin_crowd():
    """60 items, 4 one-coin workers (accuracies .85 to .65), 3 classes, every item labelled
    by every worker (a ``SimulatedCrowd``: ``labels``, ``truth``, ``confusion``)."""
    sim = simulate_crowd(60, one_coin_confusion([0.85, 0.75, 0.7, 0.65], 3), random_state=3)
    _read_only(sim.truth, sim.confusion, sim.class_prior)
    return sim


@pytest.fixture(scope="session")
def annotators():
    """400 items with 2 features, 3 binary annotators whose reliability depends on them,
    20% of the labels missing (a ``SimulatedAnnotators``: ``X``, ``labels``, ``truth``)."""
    sim = simulate_logistic_annotators(
        400, coef=[2.0, -1.0], intercept=0.2,
        reliability_coef=[[1.0, 0.0], [0.0, 0.5], [0.0, 0.0]],
        reliability_intercept=[-1.5, -1.0, -0.5], missing=0.2, random_state=0)
    _read_only(sim.X, sim.truth, sim.eta)
    return sim


@pytest.fixture
def coin_frame(coin_crowd):
    """``coin_crowd``'s labels as crowd-kit's (task, worker, label) DataFrame: string ids
    (tasks ``t000``..., workers ``w0``..., classes ``cat``, ``dog``, ``eel``), rows shuffled.
    A new frame for each test (cheap), so none sees another's changes."""
    pd = pytest.importorskip("pandas")
    crowd = coin_crowd.labels
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in crowd.item],
                       "worker": [f"w{j}" for j in crowd.expert],
                       "label": np.array(["cat", "dog", "eel"])[crowd.label]})
    return df.sample(frac=1.0, random_state=0)
