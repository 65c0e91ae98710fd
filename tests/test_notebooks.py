"""Execute every chapter of the book, one test per chapter, in book/ (as the build does)."""

from pathlib import Path

import pytest

from conftest import BOOK

CHAPTERS = sorted(p for p in BOOK.rglob("*.md")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(BOOK).parts)
                  and "kernelspec:" in p.read_text(encoding="utf-8")[:500])


def test_every_chapter_is_a_notebook():
    assert len(CHAPTERS) >= 3, CHAPTERS


@pytest.mark.notebook
@pytest.mark.parametrize("path", CHAPTERS, ids=[str(p.relative_to(BOOK)) for p in CHAPTERS])
def test_chapter_executes(path: Path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
    stderr = [out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", [])
              if out.get("output_type") == "stream" and out.get("name") == "stderr"]
    assert not stderr, f"{path.name} wrote to stderr (a warning?): {stderr[:3]}"
