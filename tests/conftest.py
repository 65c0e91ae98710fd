"""Fixtures and hooks for every test (shared helpers: ``support.py``)."""

import contextlib
import os
import time
from pathlib import Path

import pytest

from support import ARTIFACTS, BOOK_READERS, ON_CI, SLOW_FIRST


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in BOOK_READERS:
            item.add_marker(pytest.mark.book)
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable otherwise


_STARTED: dict = {}
_CONTROLLER = []  # [True] in pytest-xdist's controller, which only relays the workers' reports


def pytest_configure(config):
    _CONTROLLER[:] = [bool(getattr(config.option, "numprocesses", None))
                      and not hasattr(config, "workerinput")]


def pytest_runtest_logstart(nodeid, location):
    _STARTED[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    """test-artifacts/timeline-<worker>.tsv: when each test started and ended (epoch
    seconds), to see what ran at the same time (run.py runs two workers next to the book
    build, and clears these files when it starts)."""
    if _CONTROLLER[:1] == [True]:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with contextlib.suppress(OSError):
        ARTIFACTS.mkdir(exist_ok=True)
        with (ARTIFACTS / f"timeline-{worker}.tsv").open("a", encoding="utf-8") as out:
            out.write(f"{_STARTED.pop(nodeid, 0.0):.1f}\t{time.time():.1f}\t{nodeid}\n")


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# -- the simulated crowds several model test files share, drawn once per session -----------
# Their arrays are read-only (the labels' index arrays are so already): a test that changed
# one would change it for every test after it, and fails instead.
def _read_only(*arrays) -> None:
    for arr in arrays:
        arr.flags.writeable = False


@pytest.fixture(scope="session")
def coin_crowd():
    """60 items, 4 one-coin workers (accuracies .85 to .65), 3 classes, every item labelled
    by every worker (a ``SimulatedCrowd``: ``labels``, ``truth``, ``confusion``)."""
    from crowdlearn.simulate import one_coin_confusion, simulate_crowd

    sim = simulate_crowd(60, one_coin_confusion([0.85, 0.75, 0.7, 0.65], 3), random_state=3)
    _read_only(sim.truth, sim.confusion, sim.class_prior)
    return sim


@pytest.fixture
def coin_frame(coin_crowd):
    """``coin_crowd``'s labels as crowd-kit's (task, worker, label) DataFrame: string ids
    (tasks ``t000``..., workers ``w0``..., classes ``cat``, ``dog``, ``eel``), rows shuffled.
    A new frame for each test (cheap), so none sees another's changes."""
    import numpy as np

    pd = pytest.importorskip("pandas")
    crowd = coin_crowd.labels
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in crowd.item],
                       "worker": [f"w{j}" for j in crowd.expert],
                       "label": np.array(["cat", "dog", "eel"])[crowd.label]})
    return df.sample(frac=1.0, random_state=0)


@pytest.fixture(scope="session")
def annotators():
    """400 items with 2 features, 3 binary annotators whose reliability depends on them,
    20% of the labels missing (a ``SimulatedAnnotators``: ``X``, ``labels``, ``truth``)."""
    from crowdlearn.simulate.annotators import simulate_logistic_annotators

    sim = simulate_logistic_annotators(
        400, coef=[2.0, -1.0], intercept=0.2,
        reliability_coef=[[1.0, 0.0], [0.0, 0.5], [0.0, 0.0]],
        reliability_intercept=[-1.5, -1.0, -0.5], missing=0.2, random_state=0)
    _read_only(sim.X, sim.truth, sim.eta)
    return sim


try:  # CI runs the property tests with a fixed sequence of examples: the same run every time
    from hypothesis import settings as _hsettings

    _hsettings.register_profile("ci", derandomize=True, print_blob=True)
    if ON_CI:
        _hsettings.load_profile("ci")
except ImportError:  # pragma: no cover - hypothesis is in requirements.txt
    pass
