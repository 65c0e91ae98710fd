"""No control characters in the book's and the package's sources: a backslash sequence such
as ``\\frac`` or ``\\top`` written through a non-raw Python string becomes a form feed or a
tab, which shifts docutils' line numbers and silently breaks the maths."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*ROOT.glob("book/**/*.md"), *ROOT.glob("crowdlearn/**/*.py"),
                *ROOT.glob("book/_ext/*.py"), *ROOT.glob("tests/**/*.py"),
                *ROOT.glob("benchmarks/*.py"), ROOT / "README.md", ROOT / "_config.yml",
                ROOT / "_toc.yml"])
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_control_characters(path):
    text = path.read_text(encoding="utf-8")
    bad = [(n, repr(line)) for n, line in enumerate(text.splitlines(), 1)
           if CONTROL.search(line)]
    assert not bad, f"{path.name}: control characters at {bad[:3]}"
