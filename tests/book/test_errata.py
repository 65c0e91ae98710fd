"""The errata appendix lists every errata box of the chapters, by source.

* In the chapters' sources every ``(errata-...)=`` label stands in front of an erratum box
  (an ``{admonition}`` of class ``erratum``, which jupyterlab-myst renders too) that names its
  source, and the built appendix (``_build/html/book/errata.html``) links
  to every box from the table of that box's source; no table links to another source's box,
  and every source has its table of cosmetic slips. Needs the built book (skipped without it,
  except under CI).
* The extension itself (``book/_ext/errata_index.py``) on a small Sphinx project, read in
  parallel: boxes of several documents are collected into the right tables in reading order,
  and a box without metadata, an errata box written as a plain admonition, or a source
  without a table makes the build warn (an error under ``-W``).
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from support import BOOK, HTML, fail_or_skip  # noqa: E402

sys.path.insert(0, str(BOOK / "_ext"))
import errata_index  # noqa: E402

ERRATA_HTML = HTML / "book" / "errata.html"
LABEL = re.compile(r"^\((errata-[\w-]+)\)=[ \t]*$", re.M)
OPENING = re.compile(r"^(?:`{3,}|:{3,})\{(\w[\w-]*)\}")
TABLE = re.compile(r'<table class="([^"]*)"[^>]*>(.*?)</table>', re.S)


def chapter_sources() -> list[Path]:
    return sorted(
        p
        for p in BOOK.rglob("*.md")
        if "_build" not in p.parts and not any(part.startswith(".") for part in p.parts)
    )


def errata_boxes() -> dict[str, tuple[str, str | None]]:
    """label -> (page, ``:source:``) for every ``(errata-...)=`` label of the book."""
    boxes: dict[str, tuple[str, str | None]] = {}
    for path in chapter_sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            match = LABEL.match(line)
            if not match:
                continue
            rest = iter(lines[number + 1 :])
            opening = next((x for x in rest if not LABEL.match(x) and not x.startswith("(")), "")
            directive = OPENING.match(opening)
            options = {}
            if directive and directive.group(1) in ("admonition", "erratum"):
                for option in rest:
                    if not option.startswith(":") or option.startswith(":::"):
                        break
                    key, _, value = option[1:].partition(":")
                    options[key] = value.strip()
            # an erratum box: an admonition of class erratum (or the older {erratum} spelling)
            is_box = directive is not None and (
                directive.group(1) == "erratum"
                or "erratum" in options.get("class", "").split())
            page = path.relative_to(BOOK).with_suffix(".html").as_posix()
            assert match.group(1) not in boxes, f"label {match.group(1)} used twice"
            boxes[match.group(1)] = (page, options.get("source") if is_box else None)
    return boxes


BOXES = errata_boxes()


def test_chapters_have_errata_boxes():
    assert len(BOXES) >= 24
    sources = {source for _, source in BOXES.values()}
    assert set(errata_index.DEFAULT_SOURCES) <= sources


@pytest.mark.parametrize("label", sorted(BOXES))
def test_every_errata_label_is_a_box_with_a_source(label):
    page, source = BOXES[label]
    assert source, f"{label} in {page} is not an erratum box (class erratum) with a :source:"
    assert source in errata_index.DEFAULT_SOURCES, f"{label}: unknown source {source!r}"


@pytest.fixture(scope="module")
def appendix() -> str:
    if not ERRATA_HTML.exists():
        fail_or_skip(f"{ERRATA_HTML} does not exist: build the book first (python3 run.py book)")
    return ERRATA_HTML.read_text(encoding="utf-8")


def tables(html: str) -> list[tuple[list[str], str]]:
    return [(m.group(1).split(), m.group(2)) for m in TABLE.finditer(html)]


def index_tables(html: str) -> dict[str, str]:
    """bib key -> the generated table of that source's boxes."""
    by_class = {}
    for classes, body in tables(html):
        if "errata-index" in classes:
            (cls,) = [c for c in classes if c.startswith("errata-source-")]
            by_class[cls] = body
    keys = {
        "errata-source-" + re.sub(r"[^a-z0-9]+", "-", k.lower()): k
        for k in errata_index.DEFAULT_SOURCES
    }
    assert set(by_class) <= set(keys), f"tables of unknown sources: {set(by_class) - set(keys)}"
    return {keys[c]: body for c, body in by_class.items()}


def box_links(table: str) -> set[str]:
    return set(re.findall(r'href="([^"#]*#errata-[\w-]+)"', table))


@pytest.mark.parametrize("label", sorted(BOXES))
def test_appendix_links_to_every_box(appendix, label):
    page, source = BOXES[label]
    target = f"{page}#{label}"
    table = index_tables(appendix).get(source)
    assert table is not None, f"the appendix has no table for {source} ({label})"
    assert target in box_links(table), f"the {source} table does not link to {target}"
    chapter = (ERRATA_HTML.parent / page).read_text(encoding="utf-8")
    assert f'id="{label}"' in chapter, f"{page} has no anchor {label}"


def test_each_source_table_lists_only_its_own_boxes(appendix):
    owner = {f"{page}#{label}": source for label, (page, source) in BOXES.items()}
    found = index_tables(appendix)
    assert set(found) == set(errata_index.DEFAULT_SOURCES)
    for source, table in found.items():
        links = box_links(table)
        assert links, f"no boxes in the table of {source}"
        strangers = {link for link in links if owner.get(link) != source}
        assert not strangers, f"the {source} table links to other sources' boxes: {strangers}"
    linked = set().union(*(box_links(t) for t in found.values()))
    assert linked == set(owner), f"links to no box: {linked - set(owner)}"


def test_each_source_has_a_table_of_cosmetic_slips(appendix):
    sequence = tables(appendix)
    kinds = [
        "index" if "errata-index" in c else "slips" if "errata-slips" in c else "other"
        for c, _ in sequence
    ]
    assert kinds == ["index", "slips"] * len(errata_index.DEFAULT_SOURCES), kinds
    for classes, body in sequence:
        if "errata-slips" in classes:
            assert len(re.findall(r"<tr\b", body)) >= 3, "a cosmetic table with < 2 slips"


def test_appendix_states_what_it_covers():
    text = (BOOK / "errata.md").read_text(encoding="utf-8")
    assert "generated from the boxes" in text
    assert "no code checks them" in text
    # the old appendix claimed that typos are discussed in the chapters' prose
    assert "mentioned in the chapters' prose" not in text


# -- the extension on a small project --------------------------------------------------------

CONF = f"""
import sys
sys.path.insert(0, {str(BOOK / "_ext")!r})
extensions = ["myst_parser", "errata_index"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
errata_sources = {{"srcA": "A", "srcB": "B"}}
root_doc = "index"
"""


def box(label: str, title: str, source: str | None, where: str = "§1",
        spelling: str = "admonition") -> str:
    """An erratum box as the chapters write it (an admonition of class erratum), or in the
    older ``{erratum}`` spelling."""
    options = (":class: warning erratum dropdown\n" if spelling == "admonition"
               else ":class: warning\n")
    if source is not None:
        options += f":source: {source}\n:where: {where}\n:summary: read $x_{{{label[-1]}}}$\n"
    return f"({label})=\n```{{{spelling}}} Errata: {title}\n{options}\nBody.\n```\n\n"


def make_project(root: Path, chapters: dict[str, str], appendix: str) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF)
    toc = "\n".join([*chapters, "errata"])
    (src / "index.md").write_text(f"# Book\n\n```{{toctree}}\n:numbered:\n{toc}\n```\n")
    for name, body in chapters.items():
        (src / f"{name}.md").write_text(f"# {name}\n\n{body}")
    (src / "errata.md").write_text(appendix)
    return src


def build(src: Path, parallel: int = 1) -> tuple[str, str]:
    from sphinx.application import Sphinx

    warnings = io.StringIO()
    out = src.parent / "html"
    app = Sphinx(
        str(src),
        str(src),
        str(out),
        str(src.parent / "doctrees"),
        "html",
        status=None,
        warning=warnings,
        freshenv=True,
        parallel=parallel,
    )
    app.build()
    return (out / "errata.html").read_text(encoding="utf-8"), warnings.getvalue()


APPENDIX = (
    "# Errata\n\n## A\n\n```{errata-index} srcA\n```\n\n## B\n\n```{errata-index} srcB\n```\n"
)


def test_extension_collects_boxes_of_every_document(tmp_path):
    chapters = {
        f"ch{i}": box(f"errata-0{i}-1", f"box $y_{i}$", "srcA" if i % 2 else "srcB")
        for i in range(1, 8)
    }
    chapters["ch2"] += box("errata-02-2", "second box of two", "srcA", where="Appendix B")
    html, warnings = build(make_project(tmp_path, chapters, APPENDIX), parallel=2)
    assert warnings == ""
    found = {}
    for classes, body in tables(html):
        key = [c for c in classes if c.startswith("errata-source-")][0]
        found[key] = re.findall(r'href="(ch\d\.html#errata-[\w-]+)"', body)
    assert found["errata-source-srca"][::2] == [
        "ch1.html#errata-01-1",
        "ch2.html#errata-02-2",
        "ch3.html#errata-03-1",
        "ch5.html#errata-05-1",
        "ch7.html#errata-07-1",
    ]
    assert found["errata-source-srcb"][::2] == [
        "ch2.html#errata-02-1",
        "ch4.html#errata-04-1",
        "ch6.html#errata-06-1",
    ]
    assert 'Box <span class="math notranslate nohighlight">\\(y_1\\)</span>' in html
    assert "Appendix B" in html and "Chapter 7" in html


def test_extension_refuses_boxes_without_metadata(tmp_path):
    chapters = {
        "ch1": box("errata-01-1", "no source", None) + box("errata-01-2", "fine", "srcA"),
        "ch2": "(errata-02-1)=\n```{admonition} Errata: a plain admonition\nBody.\n```\n",
        "ch3": box("errata-03-1", "source without a table", "srcB"),
    }
    appendix = "# Errata\n\n```{errata-index} srcA\n```\n"
    _, warnings = build(make_project(tmp_path, chapters, appendix))
    assert "lacks :source:, :where:, :summary:" in warnings
    assert "'errata-02-1' is not in front of an erratum box" in warnings
    assert "looks like an errata box" in warnings
    assert "but no {errata-index} srcB" in warnings


def test_both_spellings_build_the_same_box(tmp_path):
    """``{admonition}`` of class erratum (what jupyterlab-myst renders too) and the older
    ``{erratum}`` give the same HTML; erratum options on an admonition without the class warn."""
    stray = "```{admonition} A note\n:class: tip\n:source: srcA\n\nBody.\n```\n"
    appendix = "# Errata\n\n```{errata-index} srcA\n```\n"
    pages = {}
    for spelling in ("admonition", "erratum"):
        root = tmp_path / spelling
        root.mkdir()
        chapters = {"ch1": box("errata-01-1", "box $y_1$", "srcA", spelling=spelling),
                    "ch2": stray}
        html, warnings = build(make_project(root, chapters, appendix))
        # (a second Sphinx application in one process re-registers Sphinx's own nodes)
        warned = [w for w in warnings.splitlines() if "is already registered" not in w]
        assert len(warned) == 1 and "has :source: but not the class erratum" in warned[0]
        chapter = (root / "html" / "ch1.html").read_text(encoding="utf-8")
        found = re.search(r'<div class="([^"]*\berratum\b[^"]*)"[^>]*>.*?</div>', chapter, re.S)
        assert found, chapter[:2000]
        assert set(found.group(1).split()) == {"admonition", "warning", "erratum", "dropdown"}
        assert 'class="erratum-teaser"' in found.group(0)
        pages[spelling] = (found.group(0), re.sub(r"\s+", " ", html.split("<table", 1)[1]))
    assert pages["admonition"] == pages["erratum"]
