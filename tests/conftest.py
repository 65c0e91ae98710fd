"""Fixtures and hooks for every test (shared helpers: ``support.py``)."""

from pathlib import Path

import pytest

from support import ARTIFACTS, BOOK_READERS, ON_CI, SLOW_FIRST


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in BOOK_READERS:
            item.add_marker(pytest.mark.book)
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable otherwise


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
