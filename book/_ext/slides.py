"""Lecture slides, one offline deck per week of the course (``python3 run.py slides``).

Not a Sphinx extension: like ``pdf_book.py``, ``run.py slides`` imports it after the HTML build.
Every slide is derived, when the decks are built, from the book itself, so the decks cannot
drift from the chapters:

* ``book/course.md``'s week table says which chapters each week reads (and which primers of
  ``book/prerequisites.md``, the assignment due and what students can do afterwards: the week's
  title slide). The chapters that page calls optional (``{doc}`` references outside the table,
  chapters 13 and 14) get one more deck, ``optional.html``.
* From each chapter's MyST source: its title, its ``##`` sections (a section slide each, listing
  the ``###`` subsections and the exercises' titles) and every labelled display equation
  (``$$ ... $$ (label)``) outside the exercises' solutions, on equation slides of the section
  it belongs to, wrapped for MathJax as Sphinx wraps it.
* From the built page (``_build/html``, or any folder passed as ``html_dir``): the equations'
  numbers, the figures the build produced (each ``<img>`` of a cell's output, with its alt
  text; the alt text's first clause is the caption), the "In this chapter" box, the Summary
  bullets (rendered, so cross-references read "(3.5)" and "Theorem 3.1"), and the explorers:
  each explorer's output (its style, its element and its self-contained ES module) is copied
  onto a slide with its id made unique, so the explorer is live in the deck as in the book.
  Without a built page the deck still has the source's slides (the Summary from the source).

The tool is reveal.js 6.0.2 (MIT), from the npm registry, vendored in
``book/_ext/slides_static/vendor/reveal.js`` (its UMD build and two style sheets, no theme, no
plugin): it gives a lecturer what a small hand-written deck would have to re-implement
(keyboard and touch navigation, vertical stacks per section, the overview (Esc), a slide
number, URLs per slide, scaling the 1280x720 slide to any screen, printing with ``?print-pdf``)
and needs no build step. MathJax is the book's own copy (``book/_static/vendor/mathjax``).
Both are copied next to the decks, so a deck opens offline and contacts no other host.

Every slide is a 1280x720 box. ``slides_static/deck.js`` waits for MathJax, the fonts, the
images and the explorers, then fits each slide into its box (CSS ``zoom`` on the slide's
content, never below ``MIN_FIT``, recorded on the slide), and only then starts reveal.js; a
slide that still does not fit is listed in ``window.deckReport``, which
``tests/book/test_slides.py`` reads, besides measuring every slide itself.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

STATIC = Path(__file__).resolve().parent / "slides_static"
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
MIN_FIT = 0.6  # a slide's content is never shrunk below this (deck.js reads it)
EQUATION_BUDGET = 6.0  # rough height units per equation slide (see _equation_weight)
SUMMARY_BUDGET = 800  # characters of Summary text per slide
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\{([\w:-]+)\})?\s*(.*)$")
_CODE_DIRECTIVES = {"code-cell", "code", "code-block", "sourcecode", "raw", "glue:figure"}
# a chapter in the week table, with the units of it that the week reads: "{doc}`03_em` unit 3.1"
_READING = re.compile(r"\{doc\}`([^`<]+)`((?:\s*,?\s*(?:units?|and)\s+\d+\.\d+)*)")
_UNIT_END = re.compile(r"^(`{3,}|:{3,})\{admonition\}\s*End of unit (\d+)\.(\d+)")


# -- the sources ---------------------------------------------------------------------------
@dataclass
class Equation:
    label: str
    tex: str


@dataclass
class Section:
    title: str  # MyST inline markdown, as in the source
    unit: int  # the lecture unit (k of "unit 3.k") the heading is in
    subsections: list[str] = field(default_factory=list)
    exercises: list[str] = field(default_factory=list)
    equations: list[Equation] = field(default_factory=list)


@dataclass
class Chapter:
    doc: str  # "book/03_em"
    title: str
    sections: list[Section]
    summary_md: list[str]  # the Summary's bullets in the source (used without a built page)

    @property
    def number(self) -> str:
        match = re.match(r"(\d+)_", Path(self.doc).name)
        return str(int(match.group(1))) if match else ""

    @property
    def equations(self) -> list[Equation]:
        return [eq for section in self.sections for eq in section.equations]


def _markdown_lines(text: str):
    """``(line, in_solution)`` for each line of a MyST page outside code (front matter, code
    cells and code blocks are skipped; directives that hold markdown are read through)."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    fences: list[tuple[str, bool]] = []  # (closing marker, is code)
    in_solution = False
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fences and line.strip() == fences[-1][0]:
            fences.pop()
            continue
        if match and not any(code for _, code in fences):
            directive = match.group(3)
            if directive in ("solution-start", "solution-end"):
                in_solution = directive == "solution-start"
            fences.append((match.group(1), directive is None or directive in _CODE_DIRECTIVES))
            if directive is not None and directive not in _CODE_DIRECTIVES:
                yield line, in_solution  # a directive's title: an exercise's, a unit's end
            continue
        if any(code for _, code in fences):
            continue
        yield line, in_solution


def parse_chapter(path: Path, doc: str) -> Chapter:
    """A chapter's title, ``##`` sections, labelled equations and Summary, from its source."""
    title, sections, summary, unit = "", [], [], 1
    lines = list(_markdown_lines(path.read_text(encoding="utf-8")))
    i = 0
    while i < len(lines):
        line, in_solution = lines[i]
        i += 1
        if line.startswith("# ") and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            sections.append(Section(line[3:].strip(), unit))
        elif _UNIT_END.match(line):  # "End of unit 3.1" closes unit 1 of chapter 3
            unit = int(_UNIT_END.match(line).group(3)) + 1
        elif line.startswith("### ") and sections:
            sections[-1].subsections.append(line[4:].strip())
        elif line.startswith(("```{exercise-start}", "```{exercise}")) and sections:
            sections[-1].exercises.append(line.split("}", 1)[1].strip())
        elif line.strip().startswith("$$"):
            i = _read_equation(lines, i - 1, sections, in_solution)
        elif sections and sections[-1].title == "Summary" and re.match(r"^[-*] ", line):
            summary.append(line[2:].strip())
        elif sections and sections[-1].title == "Summary" and line.startswith("  ") and summary:
            summary[-1] += " " + line.strip()
    return Chapter(doc, title, sections, summary)


def _read_equation(lines, start: int, sections: list[Section], in_solution: bool) -> int:
    """Read the ``$$`` block at ``lines[start]``; keep it if labelled (and not in a solution).
    Returns the index of the line after it."""
    first = lines[start][0].strip()
    one_line = re.match(r"^\$\$(.+)\$\$\s*(\((\S+)\))?\s*$", first)
    if one_line:
        body, label, end = one_line.group(1), one_line.group(3), start + 1
    else:
        body_lines, end = [first[2:]], start + 1
        while end < len(lines) and not lines[end][0].strip().startswith("$$"):
            body_lines.append(lines[end][0])
            end += 1
        closing = lines[end][0].strip() if end < len(lines) else "$$"
        match = re.match(r"^\$\$\s*(\((\S+)\))?\s*$", closing)
        label = match.group(2) if match else None
        body, end = "\n".join(body_lines), end + 1
    if label and sections and not in_solution:
        sections[-1].equations.append(Equation(label, body.strip()))
    return end


def mathjax_tex(tex: str) -> str:
    """A display equation's TeX as Sphinx's MathJax writer wraps it (``sphinx.ext.mathjax``):
    blank-line separated parts are aligned, a part with ``\\\\`` goes into ``split``."""
    parts = [p for p in tex.split("\n\n") if p.strip()]
    body = []
    for i, part in enumerate(parts):
        body.append(r"\begin{split}" + part + r"\end{split}" if r"\\" in part else part)
        if i < len(parts) - 1:
            body.append(r"\\")
    text = "".join(body)
    return r"\begin{align}\begin{aligned}" + text + r"\end{aligned}\end{align}" \
        if len(parts) > 1 else text


@dataclass
class Week:
    name: str  # "1" ... "6", or "optional"
    docs: list[tuple[str, tuple[int, ...]]]  # ("book/03_em", (1,)): unit 3.1; () whole
    primers: list[str]  # labels of prerequisites.md sections
    assignment_md: str
    outcomes_md: str


def course_weeks(root: Path) -> list[Week]:
    """The weeks of ``book/course.md``'s table, then the optional chapters it names."""
    text = (root / "book" / "course.md").read_text(encoding="utf-8")
    weeks, in_table = [], set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or not cells[0].isdigit() or len(cells) < 4:
            continue
        docs = [(f"book/{doc}", _units(units)) for doc, units in _READING.findall(cells[1])]
        in_table.update(doc for doc, _ in docs)
        weeks.append(Week(cells[0], docs, re.findall(r"\{ref\}`(prereq-[^`]+)`", cells[1]),
                          cells[2], cells[3]))
    optional = []
    for doc in re.findall(r"\{doc\}`(\d\d_[^`<]+)`", text):
        if f"book/{doc}" not in in_table and (f"book/{doc}", ()) not in optional:
            optional.append((f"book/{doc}", ()))
    if optional:
        weeks.append(Week("optional", optional, [], "", ""))
    return weeks


def _units(text: str) -> tuple[int, ...]:
    """``(1, 2)`` for " units 3.1 and 3.2": the k of each "C.k"."""
    return tuple(int(unit.split(".")[1]) for unit in re.findall(r"\d+\.\d+", text))


def doc_title(root: Path, doc: str) -> str:
    """The first ``# `` heading of a page's source."""
    for line, _ in _markdown_lines((root / f"{doc}.md").read_text(encoding="utf-8")):
        if line.startswith("# "):
            return line[2:].strip()
    return doc


def label_title(root: Path, page: str, label: str) -> str:
    """The heading that follows ``(label)=`` in ``book/<page>.md``."""
    text = (root / "book" / f"{page}.md").read_text(encoding="utf-8")
    match = re.search(rf"^\({re.escape(label)}\)=\s*\n#+ (.+)$", text, re.M)
    return match.group(1).strip() if match else label


def inline(md: str, resolve: Callable[[str, str], str] = lambda role, target: target) -> str:
    """MyST inline markdown as HTML: ``$math$`` for MathJax, code, emphasis, roles (``resolve``
    gives a role's text: an equation's number, a page's title)."""
    out = []
    for i, piece in enumerate(re.split(r"(?<!\$)\$([^$]+)\$(?!\$)", md)):
        if i % 2:
            out.append(r"\(" + html.escape(piece, quote=False) + r"\)")
            continue

        def role(match):
            target = match.group(2)
            shown = re.match(r"^(.*?)\s*<([^>]+)>$", target)
            return "\0" + (shown.group(1) if shown else resolve(match.group(1), target)) + "\1"

        piece = html.escape(_ROLE.sub(role, piece), quote=False)
        piece = re.sub(r"``?([^`]+)``?", r"<code>\1</code>", piece)
        piece = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", piece)
        piece = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", piece)
        out.append(piece.replace("\0", "").replace("\1", ""))
    return "".join(out)


# -- the built page ------------------------------------------------------------------------
@dataclass
class Built:
    """What a chapter's built page adds: by ``##`` section (normalised heading) its figures
    and explorers; the equations' numbers; the chapter box and the Summary, as HTML."""
    numbers: dict[str, str] = field(default_factory=dict)
    figures: dict[str, list[dict]] = field(default_factory=dict)
    explorers: dict[str, list[str]] = field(default_factory=dict)
    objectives: str = ""
    summary: list[str] = field(default_factory=list)
    selfchecks: list[dict] = field(default_factory=list)


def _norm(heading: str) -> str:
    """A heading compared between source and page: letters and digits only."""
    heading = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", heading)
    return re.sub(r"[^0-9a-z]", "", heading.lower().replace(r"\(", "").replace(r"\)", ""))


def _section_key(element) -> str:
    sections = [s for s in element.find_parents("section") if s.find("h2", recursive=False)]
    if not sections:
        return ""
    h2 = sections[-1].find("h2", recursive=False)
    for junk in h2.select("a.headerlink, span.section-number"):
        junk.extract()
    return _norm(h2.get_text(""))


def _clean_fragment(element) -> str:
    """An element's inner HTML for a slide: links become plain text, permalinks go."""
    for junk in element.select("a.headerlink, p.admonition-title"):
        junk.decompose()
    for link in element.find_all("a"):
        link.unwrap()
    return element.decode_contents().strip()


@functools.lru_cache(maxsize=32)  # a chapter read in two weeks is read once
def read_built(html_dir: Path, doc: str, slug: str) -> Built:
    """The parts of ``html_dir/<doc>.html`` the slides use (empty without the page)."""
    from bs4 import BeautifulSoup

    page = Path(html_dir) / f"{doc}.html"
    built = Built()
    if not page.exists():
        return built
    text = page.read_text(encoding="utf-8")  # the article only: the head holds widget state
    text = text[text.find("<article"):text.rfind("</article>") + len("</article>")]
    article = BeautifulSoup(text, "html.parser").select_one("article.bd-article")
    for math in article.select("div.math[id^=equation-]"):
        eqno = math.select_one("span.eqno")
        if eqno is not None:
            built.numbers[math["id"][len("equation-"):]] = eqno.get_text("").strip("#").strip()
    for explorer in article.select(".cl-explorer[id]"):
        output = explorer.find_parent("div", class_="output") or explorer.parent
        built.explorers.setdefault(_section_key(explorer), []).append(
            _unique_ids(output, slug))
    for img in article.select("div.cell_output img, figure img"):
        if img.find_parent(class_=["solution", "cl-explorer"]) or img.find_parent("details"):
            continue
        caption = img.find_parent("figure")
        caption = caption.find("figcaption") if caption else None
        alt = img.get("alt", "")
        built.figures.setdefault(_section_key(img), []).append({
            "src": (page.parent / img["src"]).resolve(), "alt": alt,
            "caption": _clean_fragment(caption) if caption else html.escape(_first_clause(alt))})
    box = next((a for a in article.select("div.admonition")
                if a.find("p", class_="admonition-title") and "In this chapter" in
                a.find("p", class_="admonition-title").get_text()), None)
    built.objectives = _clean_fragment(box) if box else ""
    summary = article.select_one("section#summary")
    if summary is not None:
        built.summary = [_clean_fragment(li) for li in summary.select("ul > li")]
    built.selfchecks = [_selfcheck(box) for box in article.select("div.selfcheck.admonition")]
    return built


def _selfcheck(box) -> dict:
    """A self-check of the page: its title, question (HTML), choices (HTML) and the letter
    of the right one (the choice whose explanation starts "Right.")."""
    title = box.find("p", class_="admonition-title").get_text("").strip()
    choices, right = [], ""
    for details in box.select("details"):
        summary = details.select_one(".sd-summary-text") or details.find("summary")
        choices.append(_clean_fragment(summary))
        if details.find("strong", string=re.compile(r"^Right\.")):
            right = re.match(r"\((\w)\)", summary.get_text("").strip()).group(1)
        details.decompose()
    return {"title": title, "question": _clean_fragment(box), "choices": choices,
            "right": right}


def _unique_ids(output, slug: str) -> str:
    """An explorer's output with its ids prefixed by ``slug`` (two chapters of one deck both
    have a ``crowdlearn-explorer-0``), its script's ``getElementById`` calls following."""
    for element in output.find_all(id=True):
        element["id"] = f"{slug}--{element['id']}"
    for script in output.find_all("script"):
        if script.string and "getElementById" in script.string:
            script.string = re.sub(r"getElementById\((['\"])(.+?)\1\)",
                                   lambda m: f"getElementById({m.group(1)}{slug}--"
                                             f"{m.group(2)}{m.group(1)})", script.string)
    return output.decode_contents()


def _first_clause(alt: str, limit: int = 150) -> str:
    clause = re.split(r"[:;]\s", alt, maxsplit=1)[0].strip()
    if len(clause) <= limit:
        return clause
    return clause[:limit].rsplit(" ", 1)[0] + " …"


# -- slides --------------------------------------------------------------------------------
def _slide(kind: str, kicker: str, title: str, body: str, data: str = "") -> str:
    """One 1280x720 slide: a kicker line, a title, and a body that deck.js fits."""
    return (f'<section class="slide-{kind}"{data}><div class="slide">'
            f'<header><p class="kicker">{kicker}</p><h2>{title}</h2></header>'
            f'<div class="slide-body"><div class="fit">{body}</div></div></div></section>')


def _stack(slides: list[str]) -> str:
    """A column of slides (reveal.js' vertical stack), or the one slide."""
    return slides[0] if len(slides) == 1 else "<section>" + "".join(slides) + "</section>"


def _list(items: list[str], cls: str = "") -> str:
    if not items:
        return ""
    return f'<ul class="{cls}">' + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def _equation_weight(tex: str) -> float:
    """About how many lines of a slide an equation takes."""
    return 1.2 + tex.count(r"\\") + 0.3 * len(re.findall(r"\\[dt]?frac|\\sum|\\prod", tex))


def _equation_groups(equations: list[Equation]) -> list[list[Equation]]:
    """Consecutive equations, three at most per slide and within ``EQUATION_BUDGET``."""
    groups: list[list[Equation]] = []
    weight = 0.0
    for eq in equations:
        w = _equation_weight(eq.tex)
        if not groups or len(groups[-1]) == 3 or weight + w > EQUATION_BUDGET:
            groups.append([])
            weight = 0.0
        groups[-1].append(eq)
        weight += w
    return groups


def _chunks(items: list[str], budget: int) -> list[list[str]]:
    """``items`` in runs of at most ``budget`` characters of text (at least one item each)."""
    runs: list[list[str]] = [[]]
    size = 0
    for item in items:
        length = len(re.sub(r"<[^>]+>|\\\(|\\\)", "", item))
        if runs[-1] and size + length > budget:
            runs.append([])
            size = 0
        runs[-1].append(item)
        size += length
    return [run for run in runs if run]


def _figure(fig: dict, images: Path) -> str:
    """A figure of the built page, its file copied into ``images``; its caption (HTML) is the
    page's, or the first clause of its alt text."""
    src = Path(fig["src"])
    images.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, images / src.name)
    return (f'<figure><img src="assets/img/{html.escape(src.name)}" '
            f'alt="{html.escape(fig["alt"])}"><figcaption>{fig["caption"]}</figcaption></figure>')


def section_slides(chapter: Chapter, section: Section, built: Built, resolve,
                   images: Path) -> tuple[list[str], dict]:
    """A section's slides (its heading; its equations, figures and explorer) and what
    they hold (``labels``, ``figures``, ``explorers``)."""
    kicker = f"{chapter.number}. {inline(chapter.title)}"
    title = inline(section.title, resolve)
    key = _norm(section.title)
    held = {"labels": [], "figures": 0, "explorers": 0, "selfchecks": 0}
    if section.title == "Summary":
        bullets = built.summary or [inline(b, resolve) for b in chapter.summary_md]
        runs = _chunks(bullets, SUMMARY_BUDGET)
        return [_slide("summary", kicker, title + (f" ({i + 1}/{len(runs)})" if len(runs) > 1
                                                   else ""), _list(run, "summary"))
                for i, run in enumerate(runs)], held
    if section.title == "Check your understanding" and built.selfchecks:
        held["selfchecks"] = len(built.selfchecks)
        return [_slide("selfcheck", kicker, html.escape(q["title"]),
                       f'<div class="question">{q["question"]}</div>'
                       + _list(q["choices"], "choices")
                       + f'<p class="fragment answer">Answer: ({q["right"]}); the book\'s page '
                       "explains every choice.</p>")
                for q in built.selfchecks], held
    body = _list([inline(s, resolve) for s in section.subsections], "subsections") + _list(
        [inline(e, resolve) for e in section.exercises], "exercises")
    slides = [_slide("section" if body else "heading", kicker, title, body)]
    for group in _equation_groups(section.equations):
        body = "".join(f'<div class="equation" data-label="{html.escape(eq.label)}">'
                       f'<span class="eqno">{html.escape(built.numbers.get(eq.label, ""))}'
                       f"</span>\\[{html.escape(mathjax_tex(eq.tex), quote=False)}\\]</div>"
                       for eq in group)
        labels = " ".join(eq.label for eq in group)
        slides.append(_slide("equations", kicker, title, body, f' data-labels="{labels}"'))
        held["labels"] += [eq.label for eq in group]
    for fig in built.figures.get(key, []):
        slides.append(_slide("figure", kicker, title, _figure(fig, images)))
        held["figures"] += 1
    for explorer in built.explorers.get(key, []):
        slides.append(_slide("explorer", kicker, title, f'<div class="explorer">{explorer}</div>'))
        held["explorers"] += 1
    return slides, held


def chapter_stacks(chapter: Chapter, units: tuple[int, ...], built: Built, resolve,
                   images: Path) -> tuple[list[str], dict]:
    """A chapter's stacks (only its ``units``, if any are named): its title (with its
    sections) and "In this chapter", then one stack per ``##`` section; and what they hold."""
    sections = [s for s in chapter.sections if not units or s.unit in units]
    kicker = f"Chapter {chapter.number}" + "".join(
        f", unit {chapter.number}.{unit}" for unit in units)
    agenda = _list([inline(s.title, resolve) for s in sections], "agenda")
    opener = [_slide("chapter", kicker, inline(chapter.title, resolve), agenda)]
    if built.objectives and (not units or 1 in units):
        opener.append(_slide("objectives", kicker, "In this chapter", built.objectives))
    stacks = [_stack(opener)]
    held = {"labels": [], "figures": 0, "explorers": 0, "selfchecks": 0}
    placed = {_norm(s.title) for s in chapter.sections}  # figures of other units are not lost
    for section in sections:
        slides, got = section_slides(chapter, section, built, resolve, images)
        stacks.append(_stack(slides))
        for key in held:
            held[key] += got[key]
    held["unplaced"] = [k for k in [*built.figures, *built.explorers] if k not in placed]
    return stacks, held


def _resolver(root: Path, numbers: dict[str, str]):
    """A role's text on a slide: an equation's number, a page's or a labelled section's
    title, otherwise its target."""
    def resolve(role: str, target: str) -> str:
        if role == "eq":
            return numbers.get(target, f"({target})")
        if role == "doc" and (root / "book" / f"{target}.md").exists():
            return doc_title(root, f"book/{target}")
        if role == "ref" and target.startswith("prereq-"):
            return label_title(root, "prerequisites", target)
        return target
    return resolve


def week_stack(root: Path, week: Week) -> str:
    """The week's opening slides: what it reads and is due, and what students can do after."""
    resolve = _resolver(root, {})
    reading = []
    for doc, units in week.docs:
        number = Path(doc).name.split("_")[0].lstrip("0")
        reading.append(f"Chapter {number}" + "".join(f", unit {number}.{u}" for u in units)
                       + f": {inline(doc_title(root, doc), resolve)}")
    reading += [f"Primer: {inline(label_title(root, 'prerequisites', label))}"
                for label in week.primers]
    body = '<p class="lead">Reading</p>' + _list(reading, "reading")
    if week.assignment_md.strip() not in ("", "—", "-"):
        body += f'<p class="lead">Assignment due</p><p>{inline(week.assignment_md, resolve)}</p>'
    title = f"Week {week.name}" if week.name.isdigit() else "Optional chapters"
    slides = [_slide("week", "Learning from many imperfect experts", title, body)]
    if week.outcomes_md:
        outcomes = [inline(o.strip(), resolve) for o in week.outcomes_md.split(";") if o.strip()]
        slides.append(_slide("outcomes", title, "After the week, students can",
                             _list(outcomes, "outcomes")))
    return _stack(slides)


# -- decks ---------------------------------------------------------------------------------
MATHJAX = {"loader": {"load": []},
           "tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
           "options": {"enableMenu": False}}


def deck_document(title: str, stacks: list[str]) -> str:
    """A deck: reveal.js, MathJax and deck.js from ``assets/`` next to it."""
    settings = {"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT, "minFit": MIN_FIT}
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="assets/reveal/reset.css">
<link rel="stylesheet" href="assets/reveal/reveal.css">
<link rel="stylesheet" href="assets/deck.css">
<script>window.MathJax = {json.dumps(MATHJAX)}; window.DECK = {json.dumps(settings)};</script>
<script defer src="assets/mathjax/tex-mml-chtml.js"></script>
</head>
<body>
<div class="reveal measuring"><div class="slides">
{chr(10).join(stacks)}
</div></div>
<script src="assets/reveal/reveal.js"></script>
<script defer src="assets/deck.js"></script>
</body>
</html>
"""


def week_deck(root: Path, html_dir: Path, week: Week, images: Path) -> tuple[str, dict]:
    """A week's deck and what it holds (chapters, equation labels, figures, explorers)."""
    stacks = [week_stack(root, week)]
    info = {"week": week.name, "chapters": [], "labels": [], "figures": 0, "explorers": 0,
            "selfchecks": 0,
            "unplaced": []}
    for doc, units in week.docs:
        chapter = parse_chapter(root / f"{doc}.md", doc)
        built = read_built(html_dir, doc, "ch" + (chapter.number or Path(doc).name))
        resolve = _resolver(root, built.numbers)
        chapter_stack, held = chapter_stacks(chapter, units, built, resolve, images)
        stacks += chapter_stack
        info["chapters"].append([doc, list(units)])
        info["labels"] += held["labels"]
        info["figures"] += held["figures"]
        info["explorers"] += held["explorers"]
        info["selfchecks"] += held["selfchecks"]
        info["unplaced"] += [f"{doc}: {key}" for key in held["unplaced"]]
    title = f"Week {week.name}" if week.name.isdigit() else "Optional chapters"
    return deck_document(f"{title} — crowdlearn", stacks), info


def deck_name(week: Week) -> str:
    return f"week-{week.name}.html" if week.name.isdigit() else f"{week.name}.html"


def copy_assets(root: Path, out_dir: Path) -> None:
    """reveal.js, the book's MathJax and the decks' style and script, into ``out_dir/assets``."""
    assets = out_dir / "assets"
    shutil.copytree(STATIC / "vendor" / "reveal.js", assets / "reveal", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("SOURCE.txt"))
    shutil.copytree(root / "book" / "_static" / "vendor" / "mathjax", assets / "mathjax",
                    dirs_exist_ok=True)
    for name in ("deck.css", "deck.js"):
        shutil.copyfile(STATIC / name, assets / name)


def build(root: Path, html_dir: Path, out_dir: Path) -> dict:
    """Write one deck per week of ``book/course.md`` (``week-N.html``, ``optional.html``) and
    an ``index.html`` into ``out_dir``, from the sources under ``root`` and the built pages in
    ``html_dir``; returns the report also written to ``out_dir/report.json``."""
    root, html_dir, out_dir = Path(root), Path(html_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_assets(root, out_dir)
    images = out_dir / "assets" / "img"
    decks = []
    for week in course_weeks(root):
        document, info = week_deck(root, html_dir, week, images)
        path = out_dir / deck_name(week)
        path.write_text(document, encoding="utf-8")
        info.update(file=path.name, sha256=hashlib.sha256(document.encode()).hexdigest())
        decks.append(info)
    links = "".join(f'<li><a href="{d["file"]}">{html.escape(d["file"][:-5])}</a>: '
                    f'{html.escape(", ".join(doc_title(root, c) for c, _ in d["chapters"]))}</li>'
                    for d in decks)
    (out_dir / "index.html").write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Slides — '
        'crowdlearn</title></head><body><h1>Slides, one deck per week</h1>'
        f"<ul>{links}</ul></body></html>\n", encoding="utf-8")
    report = {"html_dir": str(html_dir), "decks": decks}
    (out_dir / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report
