r"""The reading load of the course's weeks, computed from the chapters when the book builds.

``book/course.md`` holds the six-week plan as a ``{course-load}`` directive whose content is
one line per week, the lecture units it reads::

    ```{course-load}
    1: 1.1 1.2 2.1 2.2
    2: 3.1 3.2 4.1
    ```

A chapter is cut into lecture units by ``unit-end`` boxes (an admonition of class
``unit-end``, titled ``End of unit C.k``): unit C.1 runs from the chapter's start to its first
box, unit C.k to its k-th, and the last unit on to the end of the chapter. The directive is
replaced, when the page is built, by a table of each week's units (linked to their chapters)
and its load, in minutes of reading, of

* **core** reading: prose and visible code outside the parts below;
* **advanced** sections (a heading ending in "(advanced)", with what is under it), errata
  (the folded erratum boxes and an errata section), exercises with their solutions and the
  self-checks, counted apart: a week does not need them.

A minute is ``WORDS_PER_MINUTE`` words of prose (mathematics counts by its space-separated
tokens) or ``CODE_LINES_PER_MINUTE`` visible lines of code (cells tagged ``hide-cell``,
``remove-cell``, ``hide-input`` or ``remove-input`` are out of the way and do not count).
``tests/book/test_course.py`` checks, with these same functions, that every unit of every
chapter is read in exactly one week, in the book's order, and that no week's core reading
exceeds ``MAX_WEEK_RATIO`` times the lightest week's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

WORDS_PER_MINUTE = 120
CODE_LINES_PER_MINUTE = 10
MAX_WEEK_RATIO = 1.3
PARTS = ("core", "advanced", "errata", "exercises", "selfcheck")
HIDDEN_TAGS = {"hide-cell", "remove-cell", "hide-input", "remove-input"}
_FENCE = re.compile(r"^(`{3,}|:{3,})\{([\w-]+)\}(.*)$")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_UNIT_END = re.compile(r"End of unit (\d+)\.(\d+)")


@dataclass
class Load:
    """Words of prose and visible lines of code, per part of the text."""

    words: dict = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    code: dict = field(default_factory=lambda: dict.fromkeys(PARTS, 0))

    def minutes(self, part: str = "core") -> float:
        return self.words[part] / WORDS_PER_MINUTE + self.code[part] / CODE_LINES_PER_MINUTE

    def add(self, other: "Load") -> None:
        for part in PARTS:
            self.words[part] += other.words[part]
            self.code[part] += other.code[part]


@dataclass
class Unit:
    chapter: int
    number: int
    docname: str
    title: str
    load: Load = field(default_factory=Load)

    @property
    def name(self) -> str:
        return f"{self.chapter}.{self.number}"


def _section_part(title: str) -> str | None:
    if title.rstrip().endswith("(advanced)"):
        return "advanced"
    if title.startswith(("Errata", "What the source gets wrong")):
        return "errata"
    if title.startswith("Exercises"):
        return "exercises"
    if title.startswith("Check your understanding"):
        return "selfcheck"
    return None


def _directive_part(name: str, options: list[str]) -> str | None:
    classes = " ".join(o.split(":", 2)[2] for o in options if o.startswith(":class:"))
    if name == "erratum" or "erratum" in classes.split():
        return "errata"
    if "selfcheck" in classes.split():
        return "selfcheck"
    if "unit-end" in classes.split():
        return "skip"
    return None


def _cell_tags(options: list[str]) -> set[str]:
    tags: set[str] = set()
    for line in options:
        found = re.match(r"^:?tags:?\s*\[(.*)\]", line.strip())
        if found:
            tags |= {t.strip().strip("'\"") for t in found.group(1).split(",")}
    return tags


def _split_cell(lines: list[str], i: int) -> tuple[list[str], list[str], int]:
    """Options and code of the code cell whose body starts at line ``i``; the line after it."""
    end = i
    while not lines[end].startswith("```"):
        end += 1
    body = lines[i:end]
    if body and body[0].strip() == "---":
        close = body.index("---", 1) if "---" in body[1:] else len(body) - 1
        return body[:close + 1], body[close + 1:], end + 1
    k = 0
    while k < len(body) and re.match(r"^:[\w-]+:", body[k]):
        k += 1
    return body[:k], body[k:], end + 1


def chapter_units(path: Path) -> list[Unit]:
    """The lecture units of one chapter, each with its load."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("---", 1) + 1 if lines and lines[0] == "---" else 0
    chapter = int(path.name[:2])
    units = [Unit(chapter, 1, path.stem, "")]
    section: tuple[str, int] | None = None  # (part, heading level)
    stack: list[tuple[str, str | None]] = []  # open directives: (fence, part)
    in_exercise = 0
    i = start
    while i < len(lines):
        line = lines[i]
        i += 1
        if stack and line.strip() == stack[-1][0]:
            stack.pop()
            continue
        heading = _HEADING.match(line)
        if heading and not stack:
            level, title = len(heading.group(1)), heading.group(2)
            if not units[-1].title and level >= 2:
                units[-1].title = title
            if section and level <= section[1]:
                section = None
            part = _section_part(title)
            section = (part, level) if part else section
        fence = _FENCE.match(line)
        if fence:
            mark, name = fence.group(1), fence.group(2)
            if name == "code-cell":
                options, code, i = _split_cell(lines, i)
                part = _current(stack, in_exercise, section)
                if part != "skip" and not (_cell_tags(options) & HIDDEN_TAGS):
                    units[-1].load.code[part] += sum(1 for c in code if c.strip())
                continue
            if name in ("exercise-start", "solution-start", "exercise-end", "solution-end"):
                in_exercise += 1 if name.endswith("start") else -1
                i = _skip_to_close(lines, i, mark)
                continue
            options = []
            while i < len(lines) and re.match(r"^:[\w-]+:", lines[i]):
                options.append(lines[i])
                i += 1
            part = _directive_part(name, options)
            stack.append((mark, part))
            unit_end = _UNIT_END.search(fence.group(3))
            if part == "skip" and unit_end:
                units.append(Unit(chapter, len(units) + 1, path.stem, ""))
            continue
        part = _current(stack, in_exercise, section)
        if part != "skip" and not re.match(r"^\([\w-]+\)=$", line.strip()):
            units[-1].load.words[part] += len((heading.group(2) if heading else line).split())
    return units


def _skip_to_close(lines: list[str], i: int, mark: str) -> int:
    while i < len(lines) and lines[i].strip() != mark:
        i += 1
    return i + 1


def _current(stack, in_exercise: int, section) -> str:
    for _, part in reversed(stack):
        if part:
            return part
    if in_exercise:
        return "exercises"
    return section[0] if section else "core"


def all_units(book: Path) -> dict[str, Unit]:
    """Every unit of every numbered chapter, by name ("3.2"), in reading order."""
    units: dict[str, Unit] = {}
    for path in sorted(book.glob("[0-9][0-9]_*.md")):
        for unit in chapter_units(path):
            units[unit.name] = unit
    return units


def course_plan(course_md: Path) -> dict[int, list[str]]:
    """The weeks of ``course.md``'s ``{course-load}`` directive: week -> unit names."""
    text = course_md.read_text(encoding="utf-8")
    found = re.search(r"^```\{course-load\}\n(.*?)^```", text, re.M | re.S)
    if not found:
        raise ValueError(f"{course_md}: no {{course-load}} directive")
    return parse_plan(found.group(1))


def parse_plan(content: str) -> dict[int, list[str]]:
    weeks: dict[int, list[str]] = {}
    for line in content.splitlines():
        if line.strip() and not line.lstrip().startswith(("#", ":")):
            week, _, names = line.partition(":")
            weeks[int(week)] = names.split()
    return weeks


def week_loads(plan: dict[int, list[str]], units: dict[str, Unit]) -> dict[int, Load]:
    loads = {}
    for week, names in plan.items():
        loads[week] = Load()
        for name in names:
            loads[week].add(units[name].load)
    return loads


def plan_problems(plan: dict[int, list[str]], units: dict[str, Unit],
                  optional: set[int] = frozenset()) -> list[str]:
    """What is wrong with a plan: units unknown, read twice, out of order, or left out
    (chapters in ``optional`` may be left out), and weeks out of balance."""
    problems = []
    read = [name for week in sorted(plan) for name in plan[week]]
    problems += [f"unit {n} does not exist" for n in read if n not in units]
    problems += [f"unit {n} is read twice" for n in set(read) if read.count(n) > 1]
    order = [n for n in units if n in read]
    if order != read:
        problems.append(f"units out of the book's order: {read}")
    problems += [f"unit {n} is in no week" for n, u in units.items()
                 if n not in read and u.chapter not in optional]
    if not problems:
        core = {w: load.minutes() for w, load in week_loads(plan, units).items()}
        if max(core.values()) > MAX_WEEK_RATIO * min(core.values()):
            problems.append(f"weeks out of balance: {core}")
    return problems


def _table(plan, units, docname) -> str:
    """The load table as MyST markdown."""
    loads = week_loads(plan, units)
    lightest = min(load.minutes() for load in loads.values())
    rows = ["| week | units | core | ÷ lightest | apart | practice |",
            "|---|---|--:|--:|--:|--:|"]
    for week, names in sorted(plan.items()):
        load = loads[week]
        links = " ".join(f"{{doc}}`{n} <{units[n].docname}>`" for n in names)
        apart = load.minutes("advanced") + load.minutes("errata")
        practice = load.minutes("exercises") + load.minutes("selfcheck")
        rows.append(f"| {week} | {links} | {load.minutes():.0f} min | "
                    f"{load.minutes() / lightest:.2f} | {apart:.0f} min | {practice:.0f} min |")
    return "\n".join(rows)



def setup(app):
    from docutils.parsers.rst import Directive

    class CourseLoad(Directive):
        has_content = True

        def run(self):
            env = self.state.document.settings.env
            book = Path(env.srcdir) / "book"
            units = all_units(book)
            for path in book.glob("[0-9][0-9]_*.md"):
                env.note_dependency(str(path))
            plan = parse_plan("\n".join(self.content))
            problems = plan_problems(plan, units, optional={13, 14})
            for problem in problems:
                self.state.document.reporter.warning(f"course-load: {problem}", line=self.lineno)
            return _parse_markdown(self, _table(plan, units, env.docname))

    app.add_directive("course-load", CourseLoad)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _parse_markdown(directive, text: str):
    from docutils import nodes
    from docutils.statemachine import StringList

    container = nodes.container(classes=["course-load"])
    directive.state.nested_parse(StringList(text.splitlines(), "course-load"),
                                 directive.content_offset, container)
    return [container]
