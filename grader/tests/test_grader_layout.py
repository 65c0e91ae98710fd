"""The grader as its own distribution: outside crowdlearn/, on crowdlearn's public API only,
within its size budget, and light to import for the book's extensions."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import crowdlearn_grader

GRADER = Path(crowdlearn_grader.__file__).resolve().parent
MODULES = sorted(GRADER.glob("*.py"))


def _code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not a docstring (cloc's count)."""
    lines, previous = set(), tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        docstring = tok.type == tokenize.STRING and previous in (
            tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        previous = tok.type
        if not docstring and tok.type != tokenize.NEWLINE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines)


def test_the_grader_is_at_most_4000_lines_of_python():
    """At most 4,000 lines of code (cloc's count: no blank, comment or docstring line); the
    files themselves, docstrings and PEP 8's blank lines included, stay under 4,300 (4,225
    when this was written: 573 of them are the blank lines between definitions)."""
    assert sum(_code_lines(p) for p in MODULES) <= 4000
    assert sum(len(p.read_text().splitlines()) for p in MODULES) <= 4300


def test_the_grader_uses_only_crowdlearns_public_api():
    offences = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offences += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "crowdlearn"
                         and any(p.startswith("_") for p in n.split(".")[1:])]
    assert not offences, offences


def test_the_book_extensions_read_only_the_assignments_module():
    """book/_ext/offline_book.py shows the student's view of an assignment: importing what
    it needs loads neither the rest of the grader, nor the package, nor nbgrader."""
    code = ("import sys\n"
            "from crowdlearn_grader.assignments import BEGIN_HIDDEN, student_source\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('crowdlearn'))\n"
            "assert loaded == ['crowdlearn_grader', 'crowdlearn_grader.assignments'], loaded\n"
            "assert 'nbgrader' not in sys.modules and 'nbclient' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_kit_is_built_from_the_checkout():
    from crowdlearn_grader import kit

    assert (kit.ROOT / "pyproject.toml").is_file() and (kit.ROOT / "grader").is_dir()
    assert (kit.ROOT / "book" / "assignments").is_dir()
