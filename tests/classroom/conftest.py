"""Fixtures shared by the classroom tests."""

from __future__ import annotations

import pytest

from support import fail_or_skip


@pytest.fixture(scope="module")
def bwrap():
    """The bubblewrap sandbox the grader uses (skipped without it, failed under CI)."""
    from crowdlearn import classroom  # imported here: the test modules skip without nbclient

    try:
        return classroom.check_sandbox()
    except classroom.SandboxUnavailable as err:
        fail_or_skip(str(err))
