"""Every chapter and assignment of the book executes without error and without stderr.

The book build (``python3 run.py book``, and the first half of ``python3 run.py test``)
executes every notebook in book/ and writes it, with its outputs, to
``_build/jupyter_execute/<path>.ipynb``. When that executed notebook is fresh -- newer than
its source ``.md`` and than every file of the ``crowdlearn`` package, and holding the same
code as the source -- the test checks the build's outputs instead of executing the chapter a
second time. Otherwise (pytest run alone, a chapter or the package edited since the build)
it executes the chapter itself with jupytext + nbclient in book/, as the build does.
Set ``CROWDLEARN_EXECUTE_NOTEBOOKS=1`` to always execute.
"""

import os
from pathlib import Path

import pytest

from support import BOOK, ROOT

# the book build's cell time limit (_config.yml): a guard against a hang, set so that a machine
# many times slower than the one the book is written on still runs every cell
CELL_TIMEOUT = int(next(line.split(":")[1].split("#")[0] for line in
                        (ROOT / "_config.yml").read_text().splitlines()
                        if line.strip().startswith("timeout:")))

EXECUTED = ROOT / "_build" / "jupyter_execute"
PACKAGE = ROOT / "crowdlearn"

CHAPTERS = sorted(p for p in BOOK.rglob("*.md")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(BOOK).parts)
                  and "kernelspec:" in p.read_text(encoding="utf-8")[:500])


def test_every_chapter_is_a_notebook():
    assert len(CHAPTERS) >= 3, CHAPTERS


def _code(nb) -> list[str]:
    return [cell.source.strip() for cell in nb.cells
            if cell.cell_type == "code" and cell.source.strip()]


def _package_mtime() -> float:
    return max((p.stat().st_mtime for p in PACKAGE.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts), default=0.0)


def _build_output(path: Path, source_nb):
    """The build's executed notebook of ``path`` if it is fresh, else None."""
    if os.environ.get("CROWDLEARN_EXECUTE_NOTEBOOKS", "") not in ("", "0"):
        return None
    executed = EXECUTED / path.relative_to(ROOT).with_suffix(".ipynb")
    if not executed.exists():
        return None
    built = executed.stat().st_mtime
    if built < path.stat().st_mtime or built < _package_mtime():
        return None
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    return nb if _code(nb) == _code(source_nb) else None


@pytest.mark.notebook
@pytest.mark.parametrize("path", CHAPTERS, ids=[str(p.relative_to(BOOK)) for p in CHAPTERS])
def test_chapter_executes(path: Path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    source = jupytext.read(path)
    nb = _build_output(path, source)
    where = "the book build's executed notebook"
    if nb is None:
        where = "this test's execution"
        nb = source
        client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                                         resources={"metadata": {"path": str(path.parent)}})
        client.execute()
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    # every (non-empty) code cell ran: a run that stopped early leaves cells without a count
    not_run = [cell.source[:60] for cell in code_cells
               if cell.source.strip() and cell.get("execution_count") is None]
    assert not not_run, f"{path.name} ({where}): cells not executed: {not_run[:3]}"
    errors = [out for cell in code_cells
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{path.name} ({where}): {[e.get('ename') for e in errors]}"
    stderr = [out.get("text", "") for cell in code_cells
              for out in cell.get("outputs", [])
              if out.get("output_type") == "stream" and out.get("name") == "stderr"]
    assert not stderr, f"{path.name} ({where}) wrote to stderr (a warning?): {stderr[:3]}"
