"""The instructor's assignments (the MyST notebooks in ``book/assignments/``): reading them,
their checks and solution regions, the student's view of a cell. Light on purpose (jupytext
only when a notebook is read): the book's Sphinx extensions import from here."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

__all__ = ["BEGIN_SOLUTION", "END_SOLUTION", "BEGIN_HIDDEN", "END_HIDDEN", "STUDENT_STUB",
           "find_assignments", "read_assignment", "grade_cells", "solution_regions",
           "student_source", "replace_solution"]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[ \t]*\n(.*?)^[ \t]*### END SOLUTION[ \t]*$",
                     re.MULTILINE | re.DOTALL)


# -- reading the instructor versions --------------------------------------------------------------
def _default_source() -> Path:
    here = Path.cwd() / "book" / "assignments"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "book" / "assignments"


def find_assignments(source=None) -> dict:
    """``name -> path`` of the MyST notebooks with nbgrader cells in ``source``."""
    source = Path(source) if source is not None else _default_source()
    if not source.is_dir():
        raise ValueError(f"no assignments folder at {source}: pass --source")
    found = {}
    for path in sorted(source.glob("*.md")):
        if path.name.startswith(("_", ".")):
            continue
        text = path.read_text(encoding="utf-8")
        # nbgrader metadata: a YAML block (what jupytext writes) or a ``:nbgrader:`` line
        header = text.split("\n---\n", 1)[0] if text.startswith("---\n") else ""
        if "kernelspec:" in header and re.search(r"^:?nbgrader:", text, re.M):
            found[path.stem] = path
    if not found:
        raise ValueError(f"no assignment notebooks (MyST with nbgrader cells) in {source}")
    return found


def _nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def read_assignment(path):
    """The instructor notebook of a MyST assignment; ValueError if it breaks what nbgrader
    needs (points, unique ``grade_id``, markers balanced and in the right cells). A copy of
    its own each call; the file is parsed once per state (jupytext takes about 0.5 s)."""
    path = Path(path)
    stat = path.stat()
    return copy.deepcopy(_read_assignment(path.resolve(), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=32)
def _read_assignment(path: Path, *_state):
    import jupytext
    nb = jupytext.read(path)
    seen = set()
    for index, cell in enumerate(nb.cells):
        meta = _nbgrader_meta(cell)
        src = cell.source
        where = f"{path.name}, cell {index}"
        if src.count(BEGIN_SOLUTION) != src.count(END_SOLUTION):
            raise ValueError(f"{where}: unbalanced solution markers")
        if src.count(BEGIN_HIDDEN) != src.count(END_HIDDEN):
            raise ValueError(f"{where}: unbalanced hidden-test markers")
        if not meta:
            if BEGIN_SOLUTION in src or BEGIN_HIDDEN in src:
                raise ValueError(f"{where}: markers in a cell without nbgrader metadata")
            continue
        grade_id = meta.get("grade_id")
        if not grade_id:
            raise ValueError(f"{where}: nbgrader cell without a grade_id")
        if grade_id in seen:
            raise ValueError(f"{where}: grade_id {grade_id!r} is used twice")
        seen.add(grade_id)
        if BEGIN_SOLUTION in src and not meta.get("solution"):
            raise ValueError(f"{where} ({grade_id}): a solution region in a cell not marked "
                             f"solution")
        if BEGIN_HIDDEN in src and not meta.get("grade"):
            raise ValueError(f"{where} ({grade_id}): hidden tests in a cell that is not a check")
        if meta.get("grade") and not meta.get("points", 0) > 0:
            raise ValueError(f"{where} ({grade_id}): a check needs positive points")
    if not any(_nbgrader_meta(c).get("grade") for c in nb.cells):
        raise ValueError(f"{path.name} has no graded check")
    withheld_names(nb, path.name)
    return nb


def withheld_names(nb, where="the assignment") -> list:
    """The front matter's ``grading: withheld:`` (public names of crowdlearn, else ValueError)."""
    names = nb.metadata.get("grading", {}).get("withheld", [])
    if not isinstance(names, list) or not all(
            isinstance(n, str) and n.split(".")[0] == "crowdlearn" for n in names):
        raise ValueError(f"{where}: grading: withheld: must list names in crowdlearn")
    if any(part.startswith("_") for n in names for part in n.split(".")):
        raise ValueError(f"{where}: grading: withheld: lists a private name")
    return list(names)


def grade_cells(nb) -> list:
    """``(grade_id, points, has_hidden_tests)`` of every check, in notebook order."""
    return [(m["grade_id"], float(m["points"]), BEGIN_HIDDEN in c.source)
            for c in nb.cells for m in [_nbgrader_meta(c)] if m.get("grade")]


def solution_regions(nb) -> dict:
    """``grade_id -> [solution code, ...]`` for every solution cell (the code between markers)."""
    out = {}
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
        if meta.get("solution"):
            out[meta["grade_id"]] = [m.group(2) for m in _REGION.finditer(cell.source)]
    return out


_HIDDEN_REGION = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n.*?^[ \t]*### END HIDDEN TESTS"
                            r"[ \t]*(\n|\Z)", re.MULTILINE | re.DOTALL)
STUDENT_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


def student_source(source: str) -> str:
    r"""The student's view of a cell, as nbgrader releases it: solution regions become
    :data:`STUDENT_STUB` (indented like the markers), hidden-test regions go.

    >>> print(student_source("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
    ...                      "    ### END SOLUTION\n"))
    def f(x):
        # YOUR CODE HERE
        raise NotImplementedError()
    <BLANKLINE>
    >>> student_source("assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(2) == 4\n"
    ...                "### END HIDDEN TESTS\n")
    'assert f(1) == 2\n'
    """
    import textwrap

    def stub(m):
        return textwrap.indent(STUDENT_STUB, m.group(1))
    return _HIDDEN_REGION.sub("", _REGION.sub(stub, source))


def replace_solution(nb, grade_id: str, code: str, *, region: int = 0):
    """A copy of ``nb`` with solution region ``region`` of cell ``grade_id`` replaced by
    ``code`` (indented like the markers, which go): mistaken submissions that test the checks.

    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell(
    ...     "def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION\\n",
    ...     metadata={"nbgrader": {"grade_id": "double", "solution": True}})
    >>> nb = nbformat.v4.new_notebook(cells=[cell])
    >>> solution_regions(nb)
    {'double': ['    return 2 * x\\n']}
    >>> print(replace_solution(nb, "double", "return x + 2").cells[0].source)
    def f(x):
        return x + 2
    <BLANKLINE>
    """
    import copy
    import textwrap
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if _nbgrader_meta(cell).get("grade_id") != grade_id:
            continue
        matches = list(_REGION.finditer(cell.source))
        if region >= len(matches):
            raise ValueError(f"cell {grade_id!r} has {len(matches)} solution region(s)")
        m = matches[region]
        body = textwrap.indent(textwrap.dedent(code).strip("\n"), m.group(1)) + "\n"
        cell.source = cell.source[:m.start()] + body + cell.source[m.end() + 1:]
        return nb
    raise ValueError(f"no solution cell with grade_id {grade_id!r}")


def _select(found: dict, assignments) -> dict:
    if assignments is None:
        return dict(found)
    unknown = [a for a in assignments if a not in found]
    if unknown:
        raise ValueError(f"unknown assignment(s) {unknown}; the assignments are {sorted(found)}")
    return {a: found[a] for a in assignments}

