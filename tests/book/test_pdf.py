"""The book's PDF (``python3 run.py pdf``; ``run.py test`` prints it after the book build).

Checks the PDF that build wrote (``_build/pdf/crowdlearn.pdf`` next to the HTML build, or
``CROWDLEARN_PDF``) and its ``report.json``; builds nothing. Without a PDF the tests skip
(fail under CI). Two pages are rendered to PNG under ``test-artifacts/pdf/`` as artifacts.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

import pytest
import yaml

from support import HTML, ROOT, fail_or_skip

PDF = Path(os.environ.get("CROWDLEARN_PDF") or HTML.parent / "pdf" / "crowdlearn.pdf")
MM = 72 / 25.4  # PDF points per millimetre
SIDE_MARGIN_MM = 18  # book/_ext/pdf_book.py PAGE


def _norm(text: str) -> str:
    """Text as compared: NFKC, one kind of dash and quote, single spaces."""
    text = unicodedata.normalize("NFKC", text)
    # pdfium returns U+FFFE for a hyphen it takes for a line-end one
    text = re.sub(r"[\u2010-\u2015\u2212\ufffe\u00ad]", "-", text).replace("\u2019", "'")
    text = re.sub(r"(?<=\w)-\s+(?=\w)", "-", text)  # a hyphenated word across two lines
    return re.sub(r"\s+", " ", text).strip()


def toc_documents() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    docs = [toc["root"]]
    for part in toc.get("parts", []):
        docs += [c["file"] for c in part.get("chapters", [])]
    return docs


def source_title(doc: str) -> str:
    """The first ``# `` heading of a page's MyST source (front matter and code skipped)."""
    text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    fenced = False
    for line in text.splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{doc}.md has no '# ' title")


@pytest.fixture(scope="module")
def pdf() -> Path:
    if not PDF.exists():
        fail_or_skip(f"no PDF at {PDF}: `python3 run.py pdf` prints it from the built book")
    return PDF


@pytest.fixture(scope="module")
def report(pdf) -> dict:
    return json.loads((pdf.parent / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reader(pdf):
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # Chromium's trailer /Size note
    return PdfReader(str(pdf))


@pytest.fixture(scope="module")
def pages_text(pdf) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf))
    try:
        return [_norm(doc[i].get_textpage().get_text_range()) for i in range(len(doc))]
    finally:
        doc.close()


def test_page_count_is_a_books(reader, report):
    pages = len(reader.pages)
    assert pages == report["pages"]
    # the book printed from its web pages is some 500 A4 pages; far fewer means pages are
    # missing, far more that the layout broke (a page per code line, say)
    assert 250 <= pages <= 1200, pages
    box = reader.pages[0].mediabox
    assert abs(float(box.width) - 210 * MM) < 2 and abs(float(box.height) - 297 * MM) < 2


def test_every_page_of_the_toc_is_in_the_pdf_in_order(pages_text, report):
    """Every title of ``_toc.yml`` (the H1 of each page's source) is on the page the report
    and the table of contents give, in the order of ``_toc.yml``."""
    docs = toc_documents()
    by_doc = {c["doc"]: c for c in report["chapters"]}
    assert [c["doc"] for c in report["chapters"]] == docs
    previous = 0
    for doc in docs:
        title = _norm(source_title(doc))
        page = by_doc[doc]["page"]
        assert page is not None, f"{doc}: no page"
        assert page > previous, f"{doc} starts on page {page}, before the previous page"
        previous = page
        assert title in pages_text[page - 1], f"{title!r} not on page {page}"
        # the table of contents (page 2 on) lists it with that page number
        listed = _norm(by_doc[doc]["title"]) + f" {page}"
        assert any(listed in text for text in pages_text[1:4]), listed


def test_outline_has_every_part_and_chapter(reader, report):
    def titles(items):
        for item in items:
            if isinstance(item, list):
                yield from titles(item)
            else:
                yield _norm(item.title)

    outline = set(titles(reader.outline))
    for chapter in report["chapters"]:
        assert _norm(chapter["title"]) in outline
    for part in {c["part"] for c in report["chapters"] if c["part"]}:
        assert _norm(part) in outline


def test_internal_links_land_on_named_destinations(reader):
    """Cross-references (equations, sections, errata boxes, citations, the table of contents)
    are links inside the PDF, and each names a destination the PDF has."""
    from pypdf.generic import NameObject

    names = {str(n).lstrip("/") for n in reader.named_destinations}
    internal, external, dangling = 0, 0, []
    for number, page in enumerate(reader.pages, 1):
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            dest = annot.get("/Dest")
            if dest is None and "/A" in annot and annot["/A"].get("/S") == "/GoTo":
                dest = annot["/A"].get("/D")
            if dest is None:
                external += 1
                continue
            internal += 1
            if isinstance(dest, (str, NameObject)) and str(dest).lstrip("/") not in names:
                dangling.append((number, str(dest)))
    assert internal >= 500, internal
    assert not dangling, dangling[:10]
    assert any("--equation-" in n for n in names), "no link to a numbered equation"
    assert any("--errata-" in n for n in names), "no link to an errata box"


def test_numbered_equations_figures_and_errata_appendix(pages_text, reader, report):
    text = "\n".join(pages_text)
    numbers = set(re.findall(r"\((\d{1,2})\.(\d{1,2})\)", text))
    chapters_with_numbers = {int(c) for c, _ in numbers}
    # the equation numbers of the web pages, chapter by chapter: (4.1), (4.2), ...
    assert len(numbers) >= 60, sorted(numbers)[:20]
    assert {2, 3, 4, 5, 6, 8} <= chapters_with_numbers, chapters_with_numbers
    docs = [c["doc"] for c in report["chapters"]]
    at = docs.index("book/errata")
    first, after = report["chapters"][at]["page"], report["chapters"][at + 1]["page"]
    appendix = " ".join(pages_text[first - 1:after - 1])
    assert appendix.startswith("Errata of the sources")
    # its tables: where in the source, the correction, and the chapter that shows it
    assert len(re.findall(r"Chapter \d+", appendix)) >= 10
    # figures: the chapters' plots are images in the PDF
    with_images = 0
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        xobjects = resources.get("/XObject") or {}
        if any(x.get_object().get("/Subtype") == "/Image" for x in xobjects.values()):
            with_images += 1
    assert with_images >= 25, with_images


def test_explorers_printed_as_drawn_with_a_note(pages_text, report):
    """Every explorer of the web pages was drawn before printing and has the note that it is
    live in the web version."""
    explorers = sum(len(re.findall(r'class="cl-explorer"', p.read_text(encoding="utf-8")))
                    for p in HTML.rglob("*.html") if "_static" not in p.parts)
    assert report["explorers"] == explorers and explorers >= 5
    assert report["explorers_not_drawn"] == []
    note = "In the web version of this book this explorer is live"
    assert sum(t.count(note) for t in pages_text) == explorers
    assert report["page_errors"] == []


def test_nothing_wider_than_the_text_column(pdf, report):
    """Display equations that did not fit were scaled to the column before printing (the
    report lists them; each must then fit), nothing else was wider than it, and no
    character of any page lies outside the side margins."""
    import pypdfium2 as pdfium

    assert [e for e in report["scaled_equations"] if not e["fits"]] == []
    assert all(e["factor"] >= 0.6 for e in report["scaled_equations"]), \
        report["scaled_equations"]
    assert report["overflowing"] == []
    # inline formulas: none runs past the right margin (one that did moved to a line of its
    # own, or was scaled to the column, as printed)
    assert report["formulas_past_the_margin"] == []
    assert all(e["fits"] and e["factor"] >= 0.6 for e in report["scaled_formulas"]), \
        report["scaled_formulas"]
    doc = pdfium.PdfDocument(str(pdf))
    outside = []
    try:
        width = doc[0].get_width()
        left, right = SIDE_MARGIN_MM * MM - 1.5, width - SIDE_MARGIN_MM * MM + 1.5
        for i in range(len(doc)):
            textpage = doc[i].get_textpage()
            for k in range(textpage.count_chars()):
                x0, _, x1, _ = textpage.get_charbox(k)
                # pdfium gives a few invisible characters a box of the whole line: not glyphs
                if x1 <= x0 or x1 - x0 > 40:
                    continue
                if x0 < left or x1 > right:
                    outside.append((i + 1, textpage.get_text_range(k, 1), round(x0), round(x1)))
    finally:
        doc.close()
    assert not outside, outside[:20]


def test_two_pages_as_png(pdf, report, artifacts_dir):
    """The table of contents and the first page of chapter 4's explorer render as images (kept
    in test-artifacts/pdf/ to look at): both pages are found and give non-blank PNGs."""
    pdfium = pytest.importorskip("pypdfium2")
    out = artifacts_dir / "pdf"
    out.mkdir(exist_ok=True)
    for old in out.glob("page-*.png"):
        old.unlink()
    doc = pdfium.PdfDocument(str(pdf))
    try:
        text = [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
        chapter4 = next(c["page"] for c in report["chapters"]
                        if c["doc"] == "book/04_many_experts")
        explorer = next((i + 1 for i in range(chapter4 - 1, len(doc))
                         if "this explorer is live" in text[i]), None)
        assert explorer is not None, "chapter 4's explorer note is not in the PDF"
        for name, number in {"contents": 2, "explorer": explorer}.items():
            image = doc[number - 1].render(scale=100 / 72).to_pil()
            image.save(out / f"page-{number:03d}-{name}.png")
            extrema = image.convert("L").getextrema()
            assert extrema[0] < extrema[1], f"page {number} ({name}) renders blank"
    finally:
        doc.close()
    assert len(list(out.glob("page-*.png"))) == 2


def test_self_check_answers_are_at_the_back(pdf, report, pages_text):
    """The assembled document (``book.html``, what was printed): each self-check in its chapter
    is its question and lettered choices with no answer, and a link to its entry in the
    "Answers to the self-checks" section, which sits before the bibliography and holds one
    entry per self-check: the right letter, every choice's explanation, a link back."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((pdf.parent / "book.html").read_text(encoding="utf-8"), "html.parser")
    built = sum(p.read_text(encoding="utf-8").count('class="selfcheck admonition"')
                + p.read_text(encoding="utf-8").count('class="admonition selfcheck"')
                for p in (HTML / "book").glob("[0-9][0-9]_*.html"))
    boxes = soup.select("section.pdf-doc:not(.pdf-answers) div.admonition.selfcheck")
    assert len(boxes) == built == report["selfchecks"], (len(boxes), built)
    if not boxes:
        pytest.skip("no chapter has self-checks")
    answers = soup.select_one("section.pdf-answers#pdf-selfcheck-answers")
    assert answers is not None and _norm(answers.h1.get_text()) == "Answers to the self-checks"
    entries = answers.select("div.pdf-answer")
    assert len(entries) == len(boxes)
    for box in boxes:
        text = box.get_text(" ", strip=True)
        assert not box.select("details") and "Right." not in text and "Not this one." not in text
        choices = box.select("ol.pdf-selfcheck-choices > li")
        labels = [li.get_text(" ", strip=True) for li in choices]
        assert 3 <= len(labels) <= 4, text[:200]
        assert all(re.match(r"\([a-d]\) \S", label) for label in labels), labels
        link = box.select_one("p.pdf-selfcheck-link a")["href"].lstrip("#")
        entry = answers.find(id=link)
        assert entry is not None, link
        assert entry.select_one("p.pdf-answer-title a")["href"] == f"#{box['id']}"
        explanations = [dd.get_text(" ", strip=True) for dd in entry.select("dd")]
        assert len(explanations) == len(choices)
        assert sum(e.startswith("Right.") for e in explanations) == 1, explanations
        assert all(e.startswith(("Right.", "Not this one.")) for e in explanations)
    sections = [s.get("data-doc") or s.get("id") for s in soup.select("section.pdf-doc")]
    assert sections.index("pdf-selfcheck-answers") == sections.index("book/bibliography") - 1
    # printed on a page of its own, listed in the contents
    page = report["selfcheck_answers_page"]
    assert page and pages_text[page - 1].startswith("Answers to the self-checks")
    assert any(f"Answers to the self-checks {page}" in t for t in pages_text[1:4])
