"""The code cells of every chapter and assignment are black-formatted, at most 88 characters a
line, and the figure-drawing scaffolding is folded (``hide-input``) while the code that teaches
stays visible.

Reformat with ``.venv/bin/python book/_ext/code_cells.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
import code_cells  # noqa: E402

NOTEBOOKS = code_cells.notebooks()


def _name(p: Path) -> str:
    return p.relative_to(code_cells.ROOT).as_posix()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_code_cells_are_formatted(path):
    text = path.read_text("utf-8")
    assert code_cells.format_text(text) == text, (
        f"{_name(path)} is not black-formatted: run .venv/bin/python book/_ext/code_cells.py")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_no_code_line_longer_than_88_characters(path):
    long = [line for code in code_cells.code_of(path.read_text("utf-8"))
            for line in code.splitlines() if len(line) > code_cells.LINE_LENGTH]
    assert not long, f"{_name(path)}: {len(long)} line(s) over 88 characters: {long[:3]}"


FIGURE_CALL = re.compile(r"plt\.(subplots|figure)\(")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "assignments" not in p.parts],
                         ids=_name)
def test_plotting_cells_are_folded_and_figures_have_alt_text(path):
    """A cell that draws a figure folds its code (``hide-input``, or ``remove-input``) and
    gives the figure alt text (``mystnb: image: alt:``, or ``figure`` metadata)."""
    text = path.read_text("utf-8")
    for m in code_cells.CELL.finditer(text):
        options, code = code_cells.split_options(m.group(2))
        if not FIGURE_CALL.search(code):
            continue
        first = code.strip().splitlines()[0][:60]
        assert re.search(r"(hide|remove)-(input|cell)", options), (
            f"{_name(path)}: the plotting cell starting {first!r} is not folded (hide-input)")
        assert re.search(r"\balt:", options), (
            f"{_name(path)}: the figure of the cell starting {first!r} has no alt text")


CLOCK = re.compile(r"\b(time\.(perf_counter|process_time|monotonic|time)(_ns)?\(|timeit\b|"
                   r"datetime\.(now|today|utcnow)\()")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_no_cell_reads_the_clock(path):
    """A chapter's result must not depend on the machine's speed (a chapter that asserted
    it ran in under a minute failed the build on a busy machine): speed is measured in
    ``benchmarks/``, never in a chapter or assignment."""
    reads = [line.strip() for code in code_cells.code_of(path.read_text("utf-8"))
             for line in code.splitlines() if CLOCK.search(line)]
    assert not reads, f"{_name(path)} reads the clock: {reads[:3]}"
