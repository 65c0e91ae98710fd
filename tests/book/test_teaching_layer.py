"""The book teaches before it proves: one notation, objectives and summaries, exercises marked by
difficulty, and chapters whose visible part is prose, equations and figures rather than code.

These read the MyST sources only (no build needed).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[01][0-9]_*.md"))
ASSIGNMENTS = sorted((BOOK / "assignments").glob("a[0-9]_*.md"))
HIDDEN_TAGS = {"hide-cell", "remove-cell", "hide-input", "remove-input"}
DIFFICULTY = ("(warm-up)", "(core)", "(challenge)")


def _name(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _cells(text: str):
    """Yield (kind, tags, lines) for the code cells and the prose lines of a MyST notebook."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        lines = lines[lines.index("---", 1) + 1:]
    i = 0
    while i < len(lines):
        match = re.match(r"^(`{3,})\{code-cell\}", lines[i])
        if not match:
            yield "prose", set(), [lines[i]]
            i += 1
            continue
        fence, tags, body = match.group(1), set(), []
        i += 1
        while i < len(lines) and lines[i].startswith(":"):
            found = re.match(r":tags:\s*\[(.*)\]", lines[i])
            if found:
                tags |= {t.strip().strip("'\"") for t in found.group(1).split(",")}
            i += 1
        if i < len(lines) and lines[i].strip() == "---":
            i += 1
            while lines[i].strip() != "---":
                found = re.match(r"tags:\s*\[(.*)\]", lines[i].strip())
                if found:
                    tags |= {t.strip().strip("'\"") for t in found.group(1).split(",")}
                i += 1
            i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        yield "code", tags, body


def visible_code_share(text: str) -> float:
    """Non-blank lines of code cells a reader sees, over those plus the non-blank prose lines."""
    code = prose = 0
    for kind, tags, lines in _cells(text):
        n = sum(1 for line in lines if line.strip())
        if kind == "prose":
            prose += n
        elif not tags & HIDDEN_TAGS:
            code += n
    return code / (code + prose)


def _prose(text: str) -> str:
    return "\n".join(line for kind, _, lines in _cells(text) if kind == "prose" for line in lines)


def test_visible_code_share_is_measured_like_the_note_says():
    text = "---\nfront: matter\n---\n# T\n\nprose\n\n```{code-cell} ipython3\nx = 1\n```\n" \
           "```{code-cell} ipython3\n:tags: [hide-cell]\n\nassert x\n```\n"
    # prose: '# T', 'prose', ; code: 'x = 1' visible, the assert hidden
    assert visible_code_share(text) == pytest.approx(1 / 3)


@pytest.mark.parametrize("path", CHAPTERS, ids=_name)
def test_chapter_opens_with_objectives_and_prerequisites(path):
    text = path.read_text("utf-8")
    box = re.search(r"[:`]{3,}\{admonition\} In this chapter\n(.*?)\n[:`]{3,}\n", text, re.S)
    assert box, f"{_name(path)}: no 'In this chapter' box (objectives and prerequisites)"
    body = box.group(1)
    assert "You will be able to" in body, f"{_name(path)}: the box states no objectives"
    assert "Prerequisites" in body, f"{_name(path)}: the box names no prerequisites"
    assert "{doc}`notation`" in body, f"{_name(path)}: the box does not link the notation page"
    # the box comes before the first derivation: within the first fifth of the chapter
    assert box.start() < len(text) / 5, f"{_name(path)}: the objectives box is not near the top"


@pytest.mark.parametrize("path", CHAPTERS, ids=_name)
def test_chapter_ends_with_a_summary(path):
    text = path.read_text("utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert "Summary" in headings, f"{_name(path)}: no '## Summary' section"
    after = headings[headings.index("Summary") + 1:]
    assert set(after) <= {"Exercises", "Try it"}, (
        f"{_name(path)}: the summary is followed by {after}, not only by the exercises")


@pytest.mark.parametrize("path", CHAPTERS + ASSIGNMENTS, ids=_name)
def test_every_exercise_is_marked_by_difficulty(path):
    text = path.read_text("utf-8")
    titles = re.findall(r"^`{3,}\{exercise(?:-start)?\}(.*)$", text, re.M)
    unmarked = [t.strip() for t in titles if not t.strip().endswith(DIFFICULTY)]
    assert not unmarked, f"{_name(path)}: exercises without (warm-up)/(core)/(challenge): {unmarked}"


@pytest.mark.parametrize("path", [p for p in CHAPTERS if int(p.name[:2]) <= 9], ids=_name)
def test_prose_not_code_is_most_of_what_a_reader_sees(path):
    share = visible_code_share(path.read_text("utf-8"))
    assert share < 0.5, f"{_name(path)}: visible code is {share:.0%} of the chapter's lines"


PRIVATE = re.compile(r"crowdlearn\._|\b_(?:Data|flat_indices|e_step|m_step|params)\b|\._[a-z]\w*\(")


@pytest.mark.parametrize("path", CHAPTERS, ids=_name)
def test_chapter_code_uses_the_public_api_only(path):
    found = [line.strip() for kind, _, lines in _cells(path.read_text("utf-8")) if kind == "code"
             for line in lines if PRIVATE.search(line) and not line.lstrip().startswith("#")]
    assert not found, f"{_name(path)}: private names in chapter code: {found[:5]}"


# ---------------------------------------------------------------- one notation

# Each pattern is a symbol the notation page gives to one thing, written so that it stands for
# another. Source letters are allowed in the one mapping table of a chapter (table rows) and in
# erratum boxes, which quote the source.
CLASHES = {
    r"\\Theta\b": "parameters are theta (lower case)",
    r"\bQ\(\\theta": "Q is the posterior; the expected log-likelihood is E(theta; q)",
    r"\bF\(\\theta\)": "F is the free energy F(q, theta); a penalised objective is J(theta)",
    r"\\sigma_\{?[a-z]": "sigma is the logistic function, not a count or a scale",
    r"\\pi_j\b|\\pi\^\{?\(": "pi_i is the classifier's prior; the class prior is phi, a confusion matrix M",
    r"\\tilde\s*\\mu": "the posterior of class 1 is mu_i",
    r"\by_\{i[tk]\}": "the label of expert r on item i is y^{(i)}_r",
    r"\\eta_\{i": "eta_r(x) is a reliability; the log-odds of being right is b_{ir}",
    r"\\phi_k\b|\b[Qq]_i\(k\)": "classes are indexed by n (k is the number of features)",
}
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
# an erratum box: an admonition of class erratum, whose title starts "Errata"/"Erratum" (the
# errata extension warns about an admonition so titled without the class), or {erratum}
ERRATUM_OPENING = re.compile(r"^([:`]{3,})\{(?:erratum\}|admonition\}\s*Errat(?:a|um)\b)", re.M)


def _notation_lines(text: str):
    """Maths of the prose outside tables and erratum boxes, with its line number."""
    inside_box, fence = False, None
    for number, line in enumerate(text.split("\n"), 1):
        opening = ERRATUM_OPENING.match(line)
        if opening:
            inside_box, fence = True, opening.group(1)
            continue
        if inside_box:
            if line.strip() == fence:
                inside_box = False
            continue
        if line.lstrip().startswith("|"):
            continue
        yield number, line


@pytest.mark.parametrize("path", CHAPTERS + ASSIGNMENTS, ids=_name)
def test_one_meaning_per_symbol(path):
    prose_text = _prose(path.read_text("utf-8"))
    lines = list(_notation_lines(prose_text))
    text = "\n".join(line for _, line in lines)
    problems = []
    for math in _MATH.findall(text):
        for pattern, meaning in CLASHES.items():
            if re.search(pattern, math):
                problems.append(f"{math.strip()[:60]!r}: {meaning}")
    assert not problems, f"{_name(path)}: symbols used against book/notation.md: {problems[:6]}"


def test_the_front_matter_pages_exist_and_the_introduction_links_them():
    toc = (ROOT / "_toc.yml").read_text("utf-8")
    intro = (BOOK / "intro.md").read_text("utf-8")
    for page in ("notation", "prerequisites", "glossary", "course"):
        assert (BOOK / f"{page}.md").exists(), page
        assert f"book/{page}" in toc, f"{page} is not in the table of contents"
        assert f"{{doc}}`{page}`" in intro, f"the introduction does not link {page}"
    prerequisites = (BOOK / "prerequisites.md").read_text("utf-8")
    for label in ("prereq-entropy-kl", "prereq-lagrange", "prereq-dirichlet",
                  "prereq-logistic-newton"):
        assert f"({label})=" in prerequisites, label


# ---------------------------------------------------------------- in the built pages

def _built(page: str) -> str:
    from support import HTML, fail_or_skip

    path = HTML / page
    if not path.exists():
        fail_or_skip(f"{path} is missing: build the book first (python3 run.py book)")
    return path.read_text("utf-8")


@pytest.mark.parametrize("path", [p for p in CHAPTERS
                                  if ERRATUM_OPENING.search(p.read_text("utf-8"))],
                         ids=_name)
def test_errata_boxes_are_folded_with_their_correction_in_view(path):
    html = _built(f"book/{path.stem}.html")
    boxes = re.findall(r'<div class="([^"]*\berratum\b[^"]*)"[^>]*>\s*<p class="admonition-title">'
                       r'(.*?)</p>', html, re.S)
    assert boxes, f"{_name(path)}: no erratum box in the page"
    for classes, title in boxes:
        assert "dropdown" in classes.split(), f"{_name(path)}: a box is not folded: {classes}"
        assert 'class="erratum-teaser"' in title and "Correction:" in title, (
            f"{_name(path)}: a folded box does not show its one-line correction: {title[:120]}")


def test_the_errata_appendix_lists_titles_without_the_teaser():
    html = _built("book/errata.html")
    assert "erratum-teaser" not in html and "Correction:" not in html


def _list_lines_in_inline_math(text: str) -> list:
    """The lines of prose that start like a list item (``+ ``, ``- ``, ``* ``) while an inline
    ``$...$`` opened on an earlier line of the same paragraph is still open."""
    bad, in_code, display, open_inline = [], False, False, False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("```"):  # a code cell or a fenced directive opens or closes
            in_code = not (in_code and stripped.strip("`") == "")
            continue
        if in_code:
            continue
        if stripped.startswith("$$"):
            one_line = stripped.endswith("$$") and len(stripped) > 4
            display = display if one_line else not display
            continue
        if display:
            continue
        if open_inline and re.match(r"^[-+*] ", stripped):
            bad.append(f"line {number}: {stripped[:60]}")
        if len(re.findall(r"(?<!\\)\$", line)) % 2:
            open_inline = not open_inline
        if not stripped:
            open_inline = False  # a blank line ends the paragraph
    return bad


def test_the_list_item_check_finds_exercise_3_5s_old_line():
    old = ("The terms are $\\sum_i Q_i(n)[h^{(i)} \\log \\phi\n"
           "+ (10 - h^{(i)}) \\log(1 - \\phi)]$. Write $H_n$ for")
    assert _list_lines_in_inline_math(old) == ["line 2: + (10 - h^{(i)}) \\log(1 - \\phi)]$. Write $H_n$ for"]
    assert _list_lines_in_inline_math(old.replace("\\phi\n+", "\\phi +\n")) == []


@pytest.mark.parametrize("path", CHAPTERS + ASSIGNMENTS + sorted(BOOK.glob("[a-z]*.md")),
                         ids=_name)
def test_no_line_of_inline_math_starts_like_a_list_item(path):
    """Markdown reads a line that starts with ``+ ``, ``- `` or ``* `` as a list item even
    inside ``$...$`` that an earlier line opened: exercise 3.5's solution showed raw TeX and
    run-together italics on the page and in the PDF."""
    bad = _list_lines_in_inline_math(path.read_text("utf-8"))
    assert not bad, bad
