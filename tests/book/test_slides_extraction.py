"""The lecture decks' content comes from the chapters' sources (``book/_ext/slides.py``).

Fast: the decks are built from the sources alone (no built pages, so no figures, explorers or
equation numbers; ``test_slides.py`` checks those, in Chromium, from the built book). Every
labelled display equation of a chapter, outside its exercises' solutions, reaches the deck of
the week that reads it, found here by a regular expression of the test's own; and editing an
equation in a chapter changes that week's deck and no other.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from support import BOOK, ROOT, ext_module


slides = ext_module("slides")


def labelled_equations(text: str) -> dict[str, str]:
    """``{label: TeX}`` of the ``$$ ... $$ (label)`` blocks outside code cells and solutions."""
    text = re.sub(r"^(`{3,})\{code-cell\}.*?^\1\s*$", "", text, flags=re.S | re.M)
    text = re.sub(r"^```\{solution-start\}.*?^```\{solution-end\}", "", text, flags=re.S | re.M)
    found = {}
    for body, label in re.findall(r"^\$\$(.*?)^\$\$ *\((\S+)\) *$", text, flags=re.S | re.M):
        found[label] = body.strip()
    return found


def deck_labels(deck: Path) -> list[str]:
    return re.findall(r'<div class="equation" data-label="([^"]+)"', deck.read_text("utf-8"))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("decks")
    return out, slides.build(ROOT, out / "no-built-pages", out)


def test_one_deck_per_week_and_one_for_the_optional_chapters(built):
    out, report = built
    names = [deck["file"] for deck in report["decks"]]
    assert names == [f"week-{n}.html" for n in range(1, 7)] + ["optional.html"]
    chapters = [doc for deck in report["decks"] for doc, _ in deck["chapters"]]
    numbered = sorted(f"book/{p.stem}" for p in BOOK.glob("[0-9][0-9]_*.md"))
    assert sorted(set(chapters)) == numbered, "a chapter is in no deck"
    for deck in report["decks"]:
        text = (out / deck["file"]).read_text("utf-8")
        assert 'src="assets/reveal/reveal.js"' in text and "assets/mathjax/" in text
        assert not re.search(r'(src|href)="(https?:)?//', text), "a deck loads from another host"


def test_every_labelled_equation_reaches_its_weeks_deck(built):
    out, report = built
    by_chapter: dict[str, list[str]] = {}
    for deck in report["decks"]:
        labels = deck_labels(out / deck["file"])
        assert labels == deck["labels"]
        for doc, _ in deck["chapters"]:
            source = labelled_equations((ROOT / f"{doc}.md").read_text("utf-8"))
            by_chapter.setdefault(doc, []).extend(label for label in labels if label in source)
    for doc, labels in by_chapter.items():
        source = labelled_equations((ROOT / f"{doc}.md").read_text("utf-8"))
        assert sorted(labels) == sorted(source), f"{doc}: equations missing or shown twice"
        assert source, f"{doc} has no labelled equation: the test's pattern is stale"


def test_a_week_that_reads_one_unit_gets_only_that_units_sections(built):
    _, report = built
    split = {}
    for deck in report["decks"]:
        for doc, units in deck["chapters"]:
            if units:
                split.setdefault(doc, []).append((deck["week"], units))
    for doc, weeks in split.items():
        chapter = slides.parse_chapter(ROOT / f"{doc}.md", doc)
        for week, units in weeks:
            deck = next(d for d in report["decks"] if d["week"] == week)
            expected = [eq.label for s in chapter.sections if s.unit in units
                        for eq in s.equations]
            assert [label for label in deck["labels"] if label in
                    {eq.label for eq in chapter.equations}] == expected


def test_decks_change_when_a_chapters_equation_changes(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(BOOK, root / "book", ignore=shutil.ignore_patterns("assignments", "_ext"))
    before = slides.build(root, tmp_path / "none", tmp_path / "before")
    chapter = root / "book" / "04_many_experts.md"
    text = chapter.read_text("utf-8")
    label, tex = next(iter(labelled_equations(text).items()))
    changed = tex + r" + \epsilon_{\mathrm{changed}}"
    chapter.write_text(text.replace(tex, changed, 1), "utf-8")
    after = slides.build(root, tmp_path / "none", tmp_path / "after")
    differ = [a["file"] for a, b in zip(before["decks"], after["decks"])
              if a["sha256"] != b["sha256"]]
    reading = [d["file"] for d in after["decks"]
               if any(doc == "book/04_many_experts" for doc, _ in d["chapters"])]
    assert differ == reading and reading, (differ, reading)
    deck = (tmp_path / "after" / reading[0]).read_text("utf-8")
    assert r"\epsilon_{\mathrm{changed}}" in deck


def test_display_math_is_wrapped_as_sphinx_wraps_it():
    assert slides.mathjax_tex("a = b") == "a = b"
    assert slides.mathjax_tex(r"a &= b \\ c &= d") == r"\begin{split}a &= b \\ c &= d\end{split}"
    assert (slides.mathjax_tex("a\n\nb")
            == r"\begin{align}\begin{aligned}a\\b\end{aligned}\end{align}")


def test_inline_markdown_and_roles():
    html = slides.inline(r"**EM** maximises $F(q, \theta)$, {eq}`em-loglik`, `code`, *soft*",
                         lambda role, target: "(3.3)" if role == "eq" else target)
    assert html == (r"<strong>EM</strong> maximises \(F(q, \theta)\), (3.3), <code>code</code>, "
                    "<em>soft</em>")
    assert slides.inline("a < b & {ref}`the text <some-label>`") == "a &lt; b &amp; the text"
