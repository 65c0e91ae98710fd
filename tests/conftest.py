import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
HTML = ROOT / "_build" / "html"
ARTIFACTS = ROOT / "test-artifacts"
ON_CI = os.environ.get("CI", "").lower() == "true"


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
