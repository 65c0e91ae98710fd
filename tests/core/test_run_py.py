"""``run.py test`` runs the tests that do not read the built book while the book builds: every
test file that reads ``_build/`` must be listed in ``conftest.BOOK_READERS`` (or it would read
a half-built book)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from support import BOOK_READERS  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
READS_BUILD = re.compile(r"\bHTML\b|_build|jupyter_execute|book_pages\(")
# test files that mention the build without reading it
NOT_READERS = {"conftest.py", "test_run_py.py", "test_jupyterlab.py", "test_sources_clean.py",
               "test_widget_bundles.py",  # "the_build_of" its bundle, not the book
               "test_package_layout.py", "test_student_kit.py"}


def test_every_test_file_that_reads_the_build_runs_after_it():
    readers = {p.name for p in TESTS.rglob("test_*.py")
               if READS_BUILD.search(p.read_text(encoding="utf-8"))} - NOT_READERS
    missing = readers - BOOK_READERS
    assert not missing, f"add to support.BOOK_READERS (tests/support.py): {sorted(missing)}"


def test_book_marker_is_applied(pytestconfig):
    import conftest

    class Item:
        def __init__(self, name):
            self.path = TESTS / "book" / name
            self.marks = []

        def add_marker(self, mark):
            self.marks.append(mark.name)

    items = [Item("test_errata.py"), Item("test_dawid_skene.py")]
    conftest.pytest_collection_modifyitems(pytestconfig, items)
    assert items[0].marks == ["book"] and items[1].marks == []
