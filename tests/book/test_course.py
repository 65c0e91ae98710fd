"""The course of ``book/course.md``: lecture units, balanced weeks, the computed load table.

The load is computed by ``book/_ext/course_load.py``, the extension that writes the table into
the page when the book builds (and fails the build on a plan these tests would reject).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

import course_load  # noqa: E402

OPTIONAL = {13, 14}
ONE_SITTING_MINUTES = 45
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))


@pytest.fixture(scope="module")
def units():
    return course_load.all_units(BOOK)


@pytest.fixture(scope="module")
def plan():
    return course_load.course_plan(BOOK / "course.md")


def test_the_plan_reads_every_unit_once_in_order_and_the_weeks_are_balanced(plan, units):
    assert sorted(plan) == [1, 2, 3, 4, 5, 6]
    assert course_load.plan_problems(plan, units, optional=OPTIONAL) == []
    core = [load.minutes() for load in course_load.week_loads(plan, units).values()]
    assert max(core) <= course_load.MAX_WEEK_RATIO * min(core)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_unit_fits_one_sitting(path):
    found = course_load.chapter_units(path)
    for unit in found:
        assert 0 < unit.load.minutes() <= ONE_SITTING_MINUTES, (unit.name, unit.load.minutes())
    total = sum(unit.load.minutes() for unit in found)
    if total > ONE_SITTING_MINUTES:
        assert len(found) >= 2


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_unit_boxes_are_numbered_in_order_and_precede_the_summary(path):
    text = path.read_text(encoding="utf-8")
    chapter = int(path.name[:2])
    boxes = re.findall(r"^```\{admonition\} End of unit (\d+)\.(\d+): a place to stop\n"
                       r":class: unit-end\n", text, re.M)
    assert [(int(c), int(k)) for c, k in boxes] == [(chapter, k + 1) for k in range(len(boxes))]
    assert text.count(":class: unit-end") == len(boxes)
    summary = text.find("\n## Summary")
    for c, k in boxes:
        assert text.index(f"End of unit {c}.{k}") < summary


def _plan(text):
    return course_load.parse_plan(text)


def test_a_plan_that_drops_repeats_or_reorders_a_unit_is_refused(plan, units):
    lines = [f"{w}: {' '.join(names)}" for w, names in sorted(plan.items())]
    dropped = "\n".join(lines).replace(" 2.2", "", 1)
    assert any("2.2 is in no week" in p for p in
               course_load.plan_problems(_plan(dropped), units, optional=OPTIONAL))
    twice = "\n".join(lines) + " 2.2"
    assert any("read twice" in p for p in
               course_load.plan_problems(_plan(twice), units, optional=OPTIONAL))
    swapped = "\n".join(lines).replace("2.1 2.2", "2.2 2.1", 1)
    assert any("order" in p for p in
               course_load.plan_problems(_plan(swapped), units, optional=OPTIONAL))
    assert any("does not exist" in p for p in
               course_load.plan_problems(_plan("1: 99.1"), units, optional=OPTIONAL))


def test_an_unbalanced_plan_is_refused(plan, units):
    weeks = [names for _, names in sorted(plan.items())]
    # all of week 2 moved into week 1: week 1 doubles
    heavy = {1: weeks[0] + weeks[1], 2: weeks[2], 3: weeks[3], 4: weeks[4], 5: weeks[5]}
    problems = course_load.plan_problems(heavy, units, optional=OPTIONAL)
    assert any("out of balance" in p for p in problems)


def test_advanced_errata_exercises_and_selfchecks_are_counted_apart(tmp_path):
    chapter = tmp_path / "03_x.md"
    chapter.write_text(
        "---\njupytext: {}\n---\n# T\n\n## Core\n\none two three four\n\n"
        "```{code-cell} ipython3\nx = 1\ny = 2\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-cell]\nz = 3\n```\n\n"
        "## Deep (advanced)\n\nfive six seven\n\n### Inside\n\neight\n\n"
        "```{admonition} End of unit 3.1: a place to stop\n:class: unit-end\nskip me\n```\n\n"
        "## Back\n\nnine ten\n\n"
        "````{admonition} Errata: x\n:class: warning erratum dropdown\n\nbad bad\n````\n\n"
        "```{exercise-start} E (core)\n:label: e\n```\n\nex ex ex\n\n```{exercise-end}\n```\n\n"
        "## Check your understanding\n\nq q\n",
        encoding="utf-8",
    )
    first, second = course_load.chapter_units(chapter)
    assert (first.name, second.name) == ("3.1", "3.2")
    assert first.load.words["core"] == 1 + 1 + 4  # the headings "T" and "Core", four words
    assert first.load.code["core"] == 2  # the hidden cell does not count
    assert first.load.words["advanced"] == 2 + 3 + 1 + 1  # heading, prose, "Inside", eight
    assert second.load.words["core"] == 1 + 2
    assert second.load.words["errata"] == 2
    assert second.load.words["exercises"] == 3
    assert second.load.words["selfcheck"] == 3 + 2
