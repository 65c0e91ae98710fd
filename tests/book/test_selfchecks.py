"""Every chapter's self-checks follow the fixed format (issue 41): read from the MyST sources.

Each chapter ``book/NN_*.md`` has one section ``(<prefix>-selfcheck)=`` / ``## Check your
understanding`` right before its ``## Summary`` (before ``## Exercises`` when it has no
summary), with 3 to 5 questions::

    ::::{admonition} Self-check C.k           (C = chapter number, k = 1, 2, ... in order)
    :class: selfcheck
    :name: <prefix>-sc-<word>                 (unique in the book)

    The question.

    :::{dropdown} (a) A choice, on one line.  (letters a, b, c, d in order; 3 or 4 choices;
                                              no {eq}/{ref} link: it would sit in a button)
    **Not this one.** Why not, in at least eight words.
    :::
    ...                                       (exactly one choice starts with **Right.**)
    ::::

and at least one question per chapter is checked by a code cell tagged ``hide-cell``, right
after its admonition, whose code starts with ``# self-check C.k: <what is asserted>``.
<prefix> is the prefix the chapter's other labels use. The rendered pages, the executed
notebooks and the PDF are checked by ``test_selfchecks_built.py`` and ``test_pdf.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from support import BOOK

CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
TITLE = "## Check your understanding"
QUESTION = re.compile(r"^::::\{admonition\} Self-check (\d+)\.(\d+)[ \t]*$")
CHOICE = re.compile(r"^:::\{dropdown\} \(([a-z])\) (.*)$")
CHECK_COMMENT = re.compile(r"^# self-check (\d+)\.(\d+): \S")
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
ROLE = re.compile(r"\{[a-z][\w:-]*\}`")  # a MyST role: {eq}`...`, {ref}`...`, {doc}`...`
LETTERS = "abcd"
MIN_WORDS = 8


@dataclass
class Choice:
    letter: str
    text: str
    right: bool | None  # None: the body starts with neither marker
    explanation: str


@dataclass
class Question:
    chapter: int
    number: int
    name: str | None
    classes: list[str]
    text: str
    choices: list[Choice] = field(default_factory=list)
    end: int = 0  # offset in the chapter's text just after the closing ::::


def chapter_number(path: Path) -> int:
    return int(path.name[:2])


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Offsets of the code cells and other ``` fences (headings inside them do not count)."""
    spans, start = [], None
    for m in re.finditer(r"^```.*$", text, re.M):
        if start is None:
            start = m.start()
        elif m.group(0).strip() == "```":
            spans.append((start, m.end()))
            start = None
    return spans


def headings(text: str) -> list[tuple[int, str]]:
    """``(offset, line)`` of every level-1 and level-2 heading outside code fences."""
    spans = _fenced_spans(text)
    return [(m.start(), m.group(0).rstrip()) for m in re.finditer(r"^##? .*$", text, re.M)
            if not any(a <= m.start() < b for a, b in spans)]


def selfcheck_section(text: str) -> tuple[int, int] | None:
    """Offsets of the self-check section (its title to the next level-2 heading)."""
    heads = headings(text)
    at = [i for i, (_, line) in enumerate(heads) if line == TITLE]
    if len(at) != 1:
        return None
    start = heads[at[0]][0]
    end = heads[at[0] + 1][0] if at[0] + 1 < len(heads) else len(text)
    return start, end


def _parse_choices(body: str) -> list[Choice]:
    choices, current, lines = [], None, []
    for line in body.splitlines():
        m = CHOICE.match(line)
        if m:
            current, lines = m, []
        elif current is not None and line.strip() == ":::":
            explanation = " ".join(lines).strip()
            right = (True if explanation.startswith("**Right.**")
                     else False if explanation.startswith("**Not this one.**") else None)
            rest = re.sub(r"^\*\*(Right\.|Not this one\.)\*\*", "", explanation).strip()
            choices.append(Choice(current.group(1), current.group(2).strip(), right, rest))
            current = None
        elif current is not None:
            lines.append(line)
    return choices


def parse_questions(text: str) -> list[Question]:
    """The self-check admonitions of a chapter's text, in order."""
    questions = []
    for m in re.finditer(r"^::::\{admonition\} Self-check.*$", text, re.M):
        head = QUESTION.match(m.group(0))
        close = re.compile(r"^::::[ \t]*$", re.M).search(text, m.end())
        end = close.end() if close else len(text)
        body = text[m.end():close.start() if close else len(text)]
        options = dict(re.findall(r"^:(\w+): *(.*)$", body[:body.find("\n\n") + 1], re.M))
        first_choice = re.search(r"^:::\{dropdown\}", body, re.M)
        question_text = body[:first_choice.start() if first_choice else len(body)]
        question_text = re.sub(r"^:\w+:.*$", "", question_text, flags=re.M).strip()
        questions.append(Question(
            chapter=int(head.group(1)) if head else -1,
            number=int(head.group(2)) if head else -1,
            name=options.get("name"), classes=options.get("class", "").split(),
            text=question_text, choices=_parse_choices(body), end=end))
    return questions


def checking_cells(text: str) -> list[tuple[int, int, int, list[str]]]:
    """``(start offset, chapter, question, tags)`` of every code cell that starts with a
    ``# self-check C.k:`` comment."""
    found = []
    for m in CELL.finditer(text):
        body = m.group(1)
        tags: list[str] = []
        lines = body.splitlines()
        if lines and lines[0].strip() == "---":
            end = next(k for k in range(1, len(lines)) if lines[k].strip() == "---")
            meta = yaml.safe_load("\n".join(lines[1:end])) or {}
            tags = list(meta.get("tags") or [])
            code = lines[end + 1:]
        else:
            k = 0
            while k < len(lines) and re.match(r"^:[\w-]+:", lines[k]):
                if lines[k].startswith(":tags:"):
                    tags = yaml.safe_load(lines[k].split(":", 2)[2]) or []
                k += 1
            code = lines[k:]
        first = next((line for line in code if line.strip()), "")
        c = CHECK_COMMENT.match(first)
        if c:
            found.append((m.start(), int(c.group(1)), int(c.group(2)), tags))
    return found


def _label_prefixes(text: str) -> set[str]:
    """The prefixes (before the first '-') of the chapter's labels outside the self-checks."""
    names = re.findall(r"^\(([\w-]+)\)=$", text, re.M)
    names += re.findall(r"^:(?:label|name): *([\w-]+)", text, re.M)
    names += re.findall(r"^\$\$ *\(([\w-]+)\)", text, re.M)
    return {n.split("-")[0] for n in names if "-selfcheck" not in n and "-sc-" not in n}


def _section_problems(text: str, chapter: int) -> tuple[list[str], str | None]:
    """Where the section is and how it is labelled; returns (problems, the label's prefix)."""
    section = selfcheck_section(text)
    if section is None:
        return [f"no single '{TITLE}' section"], None
    problems = []
    before = text[:section[0]].rstrip().splitlines()
    label = re.fullmatch(r"\(([\w-]+)-selfcheck\)=", before[-1].strip()) if before else None
    prefix = label.group(1) if label else None
    if prefix is None:
        problems.append(f"the line before '{TITLE}' is not a '(<prefix>-selfcheck)=' label")
    elif prefix not in _label_prefixes(text):
        problems.append(f"label prefix {prefix!r} is not one the chapter's other labels use "
                        f"({sorted(_label_prefixes(text))})")
    lines = [line for _, line in headings(text)]
    after = lines[lines.index(TITLE) + 1] if lines.index(TITLE) + 1 < len(lines) else None
    wanted = "## Summary" if "## Summary" in lines else "## Exercises"
    if after != wanted:
        problems.append(f"the section is followed by {after!r}, not {wanted!r}")
    return problems, prefix


def _question_problems(q: Question, index: int, chapter: int, prefix: str | None) -> list[str]:
    where = f"Self-check {q.chapter}.{q.number}"
    problems = []
    if (q.chapter, q.number) != (chapter, index + 1):
        problems.append(f"question {index + 1} is titled {where}, not "
                        f"'Self-check {chapter}.{index + 1}'")
    if q.classes != ["selfcheck"]:
        problems.append(f"{where}: ':class: selfcheck' expected, found {q.classes}")
    if not q.name or not re.fullmatch(rf"{re.escape(prefix or '?')}-sc-[a-z0-9]+(-[a-z0-9]+)*",
                                      q.name):
        problems.append(f"{where}: ':name: {prefix}-sc-<word>' expected, found {q.name!r}")
    if len(q.text.split()) < 4:
        problems.append(f"{where}: the question has no text")
    letters = "".join(c.letter for c in q.choices)
    if not 3 <= len(q.choices) <= 4 or letters != LETTERS[:len(q.choices)]:
        problems.append(f"{where}: 3-4 choices lettered a, b, c(, d) in order, found "
                        f"{letters!r}")
    for c in q.choices:
        if c.right is None:
            problems.append(f"{where} ({c.letter}): the body must start with **Right.** or "
                            f"**Not this one.**")
        elif len(c.explanation.split()) < MIN_WORDS:
            problems.append(f"{where} ({c.letter}): the explanation has fewer than "
                            f"{MIN_WORDS} words")
        if not c.text:
            problems.append(f"{where} ({c.letter}): the choice has no text")
        if ROLE.search(c.text):
            problems.append(f"{where} ({c.letter}): a cross-reference in a choice's text is a "
                            "link inside the dropdown's button (axe-core: nested-interactive);"
                            " move it to the explanation")
    rights = [c.letter for c in q.choices if c.right]
    if len(rights) != 1:
        problems.append(f"{where}: exactly one **Right.** choice expected, found {rights}")
    return problems


def _check_cell_problems(text: str, chapter: int, questions: list[Question]) -> list[str]:
    problems = []
    cells = checking_cells(text)
    if not cells:
        problems.append("no question is checked by a '# self-check C.k:' code cell")
    ends = {(q.chapter, q.number): q.end for q in questions}
    for start, c, k, tags in cells:
        if (c, k) not in ends:
            problems.append(f"a '# self-check {c}.{k}:' cell checks no question of the chapter")
            continue
        if "hide-cell" not in tags:
            problems.append(f"the cell of self-check {c}.{k} is not tagged hide-cell ({tags})")
        if text[ends[(c, k)]:start].strip():
            problems.append(f"the cell of self-check {c}.{k} does not follow its admonition")
    return problems


def problems_of(text: str, chapter: int) -> list[str]:
    """Everything in a chapter's text that breaks the self-check format."""
    problems, prefix = _section_problems(text, chapter)
    if problems and prefix is None and "no single" in problems[0]:
        return problems
    questions = parse_questions(text)
    section = selfcheck_section(text)
    outside = [q for q in questions if not section[0] <= q.end <= section[1]]
    if outside:
        problems.append(f"{len(outside)} self-check(s) outside the '{TITLE}' section")
    if not 3 <= len(questions) <= 5:
        problems.append(f"{len(questions)} self-checks; 3 to 5 expected")
    for index, q in enumerate(questions):
        problems += _question_problems(q, index, chapter, prefix)
    names = [q.name for q in questions]
    if len(set(names)) != len(names):
        problems.append(f"the :name:s are not unique: {names}")
    rights = {next((c.letter for c in q.choices if c.right), None) for q in questions}
    if len(questions) >= 3 and len(rights) == 1:
        problems.append(f"every right answer is ({rights.pop()}): vary the letters")
    return problems + _check_cell_problems(text, chapter, questions)


# -- the checker itself, on a small example ------------------------------------------------

GOOD = """(ex-first)=
# A chapter

$$ x $$ (ex-eq)

(ex-selfcheck)=
## Check your understanding

Answer first.

::::{admonition} Self-check 7.1
:class: selfcheck
:name: ex-sc-one

What is one plus one, in the usual arithmetic?

:::{dropdown} (a) Two.
**Right.** One and one more make two in the arithmetic of the integers we use here.
:::

:::{dropdown} (b) Three.
**Not this one.** Three is one more than the sum, which counts one of the terms twice over.
:::

:::{dropdown} (c) Eleven.
**Not this one.** Eleven writes the two ones side by side as digits instead of adding them.
:::
::::

```{code-cell} ipython3
---
tags: [hide-cell]
---
# self-check 7.1: one plus one is two
assert 1 + 1 == 2
```

QUESTIONS

## Summary

- done.
"""


def _example(n_questions: int = 3) -> str:
    block = GOOD[GOOD.index("::::{admonition}"):GOOD.index("```{code-cell}")]
    more = []
    for k in range(2, n_questions + 1):
        q = block.replace("7.1", f"7.{k}").replace("ex-sc-one", f"ex-sc-q{k}")
        # move the right answer to (b)
        q = q.replace("**Right.**", "**R**").replace("**Not this one.** Three", "**Right.** Three")
        more.append(q.replace("**R**", "**Not this one.**"))
    return GOOD.replace("QUESTIONS", "\n".join(more))


def test_the_checker_accepts_the_format():
    assert problems_of(_example(3), 7) == []
    assert problems_of(_example(5), 7) == []
    assert problems_of(_example(3).replace("## Summary", "## Exercises"), 7) == []


@pytest.mark.parametrize("change, expected", [
    (lambda t: t.replace("(ex-selfcheck)=", ""), "label"),
    (lambda t: t.replace("(ex-selfcheck)=", "(zz-selfcheck)="), "prefix"),
    (lambda t: t.replace(TITLE, "## Self-checks"), "section"),
    (lambda t: t.replace("## Summary", "## More\n\ntext\n\n## Summary"), "followed by"),
    (lambda t: t.replace("Self-check 7.2", "Self-check 7.3"), "not 'Self-check 7.2'"),
    (lambda t: t.replace("Self-check 7.1", "Self-check 6.1"), "not 'Self-check 7.1'"),
    (lambda t: t.replace(":class: selfcheck", ":class: tip", 1), "class"),
    (lambda t: t.replace("ex-sc-q2", "ex-sc-one"), "not unique"),
    (lambda t: t.replace(":name: ex-sc-one", ":name: other-one"), ":name:"),
    (lambda t: t.replace("(c) Eleven", "(d) Eleven", 1), "lettered"),
    (lambda t: t.replace("**Not this one.** Three", "**Right.** Three", 1), "exactly one"),
    (lambda t: t.replace("**Not this one.** Eleven", "Eleven", 1), "must start"),
    (lambda t: t.replace("Eleven writes the two ones side by side as digits instead of adding "
                         "them.", "Digits.", 1), "fewer than"),
    (lambda t: t.replace("(c) Eleven.", "(c) Eleven, as {eq}`ex-eq` says."), "nested"),
    (lambda t: t.replace("# self-check 7.1: one", "# self-check 7.9: one"), "checks no"),
    (lambda t: t.replace("# self-check 7.1: one", "# checked: one"), "no question"),
    (lambda t: t.replace("tags: [hide-cell]", "tags: [hide-input]"), "hide-cell"),
    (lambda t: t.replace("::::\n\n```{code-cell}", "::::\n\nProse.\n\n```{code-cell}"),
     "does not follow"),
])
def test_the_checker_finds_each_break(change, expected):
    found = problems_of(change(_example(3)), 7)
    assert any(expected in p for p in found), found


def test_the_checker_wants_three_to_five_and_varied_letters():
    assert any("3 to 5" in p for p in problems_of(_example(2), 7))
    assert any("3 to 5" in p for p in problems_of(_example(6), 7))
    same = _example(3).replace("**Right.** Three", "**Not this one.** Three")
    same = same.replace("**Not this one.** One", "**Right.** One")
    assert any("vary" in p for p in problems_of(same, 7))


# -- the chapters --------------------------------------------------------------------------

def test_there_are_chapters():
    assert len(CHAPTERS) >= 14, CHAPTERS


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_chapter_self_checks_follow_the_format(path):
    found = problems_of(path.read_text(encoding="utf-8"), chapter_number(path))
    assert not found, f"{path.name}:\n  " + "\n  ".join(found)


def test_self_check_names_are_unique_in_the_book():
    names: dict[str, str] = {}
    clashes = []
    for path in CHAPTERS:
        for q in parse_questions(path.read_text(encoding="utf-8")):
            if q.name in names:
                clashes.append(f"{q.name}: {names[q.name]} and {path.name}")
            names[q.name] = path.name
    assert not clashes, clashes


# -- the PDF's treatment (book/_ext/pdf_book.py), on a small page ---------------------------

PAGE = """<article class="bd-article"><section id="s">
<div class="selfcheck admonition" id="p--ex-sc-one"><p class="admonition-title">Self-check 7.1</p>
<p>What is one plus one?</p>
<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3">
<summary class="sd-summary-title sd-card-header"><span class="sd-summary-text">(a) Two.</span>
<span class="sd-summary-state-marker"><svg></svg></span></summary>
<div class="sd-summary-content sd-card-body"><p><strong>Right.</strong> Because so.</p></div>
</details>
<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3">
<summary class="sd-summary-title sd-card-header"><span class="sd-summary-text">(b) <span
class="math">\\(3\\)</span>.</span></summary>
<div class="sd-summary-content sd-card-body"><p><strong>Not this one.</strong> No.</p></div>
</details></div></section></article>"""


def test_pdf_prints_questions_and_moves_answers_to_the_back():
    import sys

    from bs4 import BeautifulSoup

    sys.path.insert(0, str(BOOK / "_ext"))
    import pdf_book

    soup = BeautifulSoup(PAGE, "html.parser")
    answers = pdf_book.selfchecks_to_print(soup.article, soup)
    box = soup.select_one("div.selfcheck")
    assert not box.select("details") and "Right." not in box.get_text()
    assert [li.get_text(" ", strip=True) for li in box.select("ol > li")] == ["(a) Two.",
                                                                              "(b) \\(3\\) ."]
    assert box.select_one("p.pdf-selfcheck-link a")["href"] == "#pdf-answer-p--ex-sc-one"
    assert answers[0]["right"] == "(a)" and len(answers[0]["choices"]) == 2
    chapters = [{"doc": d, "id": d, "part": "P", "title": d, "number": None}
                for d in ("book/07_x", "book/glossary", "book/bibliography")]
    printed, bodies = pdf_book.with_answers_section(chapters, ["x", "g", "b"],
                                                    [("book/07_x", "7. X", answers)])
    assert [c["id"] for c in printed] == ["book/07_x", "book/glossary",
                                          pdf_book.ANSWERS_ID, "book/bibliography"]
    back = BeautifulSoup(bodies[2], "html.parser")
    entry = back.select_one("#pdf-answer-p--ex-sc-one")
    assert entry.select_one("a")["href"] == "#p--ex-sc-one"
    assert "the right choice is (a)" in entry.get_text()
    assert [dd.get_text(" ", strip=True) for dd in entry.select("dd")] == [
        "Right. Because so.", "Not this one. No."]
    assert pdf_book.with_answers_section(chapters, ["x", "g", "b"], [])[0] == chapters
