"""What the README and the assignments index say about the assignments matches the sources:
every assignment is listed, with its points (autograded + written) as the notebooks count them."""

from __future__ import annotations

import re
from pathlib import Path

from crowdlearn_grader import find_assignments, grade_cells, read_assignment

ROOT = Path(__file__).resolve().parents[2]


def _points() -> dict:
    """assignment -> (autograded points, written points), from the cells' nbgrader metadata."""
    out = {}
    for name, path in find_assignments(ROOT / "book" / "assignments").items():
        nb = read_assignment(path)
        auto = written = 0.0
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if not meta.get("grade"):
                continue
            if cell.cell_type == "markdown" or meta.get("task"):
                written += meta.get("points", 0)
            else:
                auto += meta.get("points", 0)
        assert auto + written == sum(p for _, p, _ in grade_cells(nb))
        out[name] = (auto, written)
    return out


def _table(text: str) -> dict:
    rows = {}
    for name, a, b in re.findall(r"\|\s*(?:`|\{doc\}`)(a\d_\w+)`[^|]*\|[^|]*\|\s*(\d+) \+ (\d+)\s*\|",
                                 text):
        rows[name] = (float(a), float(b))
    return rows


def test_readme_lists_every_assignment_with_its_points():
    points = _points()
    assert len(points) == 6
    assert _table((ROOT / "README.md").read_text(encoding="utf-8")) == points


def test_assignments_index_lists_every_assignment_with_its_points():
    text = (ROOT / "book" / "assignments" / "index.md").read_text(encoding="utf-8")
    table = {}
    for name, a, b in re.findall(r"\{doc\}`(a\d_\w+)`.*?\|\s*(\d+) \+ (\d+)\s*\|", text):
        table[name] = (float(a), float(b))
    assert table == _points()
    assert "are the **student versions**" in text.split("| Assignment")[0]
