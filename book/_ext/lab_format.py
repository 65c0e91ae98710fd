"""Write the book's MyST notebooks exactly as JupyterLab saves them, so that a reader who opens a
chapter in JupyterLab, runs it and saves it (or lets autosave do it) leaves it byte for byte.

    .venv/bin/python book/_ext/lab_format.py            # rewrite what JupyterLab would rewrite
    .venv/bin/python book/_ext/lab_format.py --check    # list the notebooks it would change

JupyterLab saves a MyST notebook through jupytext's contents manager. What it writes back, and
so what the sources must already be:

* in the header, jupytext's ``notebook_metadata_filter`` that leaves out the jupytext and format
  version numbers (jupytext writes them by default; a filter in each notebook's own header
  rather than a ``jupytext.toml``, which would also apply to the prose pages, ``intro.md`` and
  the like, and make JupyterLab give them a header); the ``kernelspec`` as the kernel
  JupyterLab starts reports it (``display_name: Python 3 (ipykernel)``);
* a blank line after the header; cell options (``:tags:``, ``:nbgrader:``, a ``---`` YAML
  block) as jupytext writes them: options holding a mapping, as ``nbgrader``, become a YAML
  block, long strings (the figures' ``alt`` texts) are wrapped at 80 characters in quotes;
* a folded cell's ``jupyter`` metadata in JupyterLab's order, ``source_hidden`` first;
* a chapter's equation numbers: jupyterlab-myst reads page frontmatter from the notebook's first
  markdown cell only, so each chapter ``NN_*.md`` starts with a cell holding
  ``numbering: equation: enumerator: N.%s`` (its equations then read (N.k), as on the web
  page), tagged ``remove-cell`` so that the book's build drops it.

Nothing else changes: the prose, the code and every option keep their meaning (jupyter-book
reads the YAML block and the ``:key:`` lines alike). ``tests/book/test_jupyterlab.py`` checks
every notebook with :func:`lab_text` (and that a JupyterLab session's changes, the kernel's
metadata, execution counts, outputs and the unfolding of run cells, are not written), and
saves a chapter from JupyterLab in Chromium.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
# jupytext's default notebook metadata, less the version numbers it would write
METADATA_FILTER = ("-jupytext.text_representation.jupytext_version,"
                   "-jupytext.text_representation.format_version")
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
CHAPTER = re.compile(r"^(\d\d)_[\w-]+\.md$")
HEADER = re.compile(r"\A---\n.*?\n---\n\n?", re.S)
FRONTMATTER = ('+++ {{"tags": ["remove-cell"]}}\n\n---\nnumbering:\n  equation:\n'
               "    enumerator: {k}.%s\n---\n\n+++\n\n")


def notebooks() -> list[Path]:
    """Every MyST notebook of the book (chapters, prerequisites and assignments)."""
    return sorted(p for p in BOOK.rglob("*.md")
                  if "_build" not in p.parts and not any(x.startswith(".") for x in p.parts)
                  and p.read_text("utf-8").startswith("---\n")
                  and "{code-cell}" in p.read_text("utf-8"))


def equation_prefix(path: Path) -> str | None:
    """``"3."`` for ``03_em.md``: the web page numbers its equations (3.1), (3.2), ..."""
    m = CHAPTER.match(path.name)
    return f"{int(m.group(1))}." if m else None


def prepare(path: Path, text: str) -> str:
    """What jupytext alone would not write: the metadata filter, the kernel's name, the
    numbering cell, the order of the fold state."""
    if text.startswith("---\njupytext:\n") and "notebook_metadata_filter:" not in text[:800]:
        text = text.replace("---\njupytext:\n",
                            f"---\njupytext:\n  notebook_metadata_filter: {METADATA_FILTER}\n", 1)
    text = text.replace("  display_name: Python 3\n",
                        f"  display_name: {KERNELSPEC['display_name']}\n", 1)
    prefix = equation_prefix(path)
    header = HEADER.match(text)
    if prefix and header and "\nnumbering:\n" not in text[:header.end() + 200]:
        cell = FRONTMATTER.format(k=prefix[:-1])
        text = text[:header.end()].rstrip("\n") + "\n\n" + cell + text[header.end():]
    return text.replace("jupyter:\n  outputs_hidden: true\n  source_hidden: true\n",
                        "jupyter:\n  source_hidden: true\n  outputs_hidden: true\n")


def lab_saves(path: Path, text: str, session=None) -> str:
    """The text JupyterLab's contents manager (jupytext) writes when it saves the notebook
    ``text`` of ``path``; ``session(model)`` may first change the notebook model as a
    JupyterLab session would. (A ``jupytext.toml`` in the book would apply too: none is.)"""
    from jupytext.sync_contentsmanager import TextFileContentsManager

    with tempfile.TemporaryDirectory() as tmp:
        rel = path.resolve().relative_to(ROOT)
        (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
        for config in ROOT.glob("book/**/jupytext.toml"):
            (Path(tmp) / config.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(config, Path(tmp) / config.relative_to(ROOT))
        (Path(tmp) / rel).write_text(text, encoding="utf-8")
        manager = TextFileContentsManager(root_dir=tmp)
        model = manager.get(rel.as_posix())
        if session is not None:
            session(model)
        manager.save(model, rel.as_posix())
        return (Path(tmp) / rel).read_text(encoding="utf-8")


def lab_text(path: Path, text: str | None = None) -> str:
    """The notebook as it must be: what JupyterLab writes back, numbering cell included."""
    text = path.read_text(encoding="utf-8") if text is None else text
    return lab_saves(path, prepare(path, text))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed = []
    for path in notebooks():
        text = path.read_text(encoding="utf-8")  # read, rewrite and write at once
        new = lab_text(path, text)
        if new != text:
            changed.append(path.relative_to(ROOT).as_posix())
            if not check:
                path.write_text(new, encoding="utf-8")
    for name in changed:
        print(("would rewrite " if check else "rewrote ") + name)
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
