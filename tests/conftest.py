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


try:  # CI runs the property tests with a fixed sequence of examples: the same run every time
    from hypothesis import settings as _hsettings

    _hsettings.register_profile("ci", derandomize=True, print_blob=True)
    if ON_CI:
        _hsettings.load_profile("ci")
except ImportError:  # pragma: no cover - hypothesis is in requirements.txt
    pass
