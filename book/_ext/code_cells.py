"""Format the code cells of the book's MyST notebooks with black (88 characters a line).

    .venv/bin/python book/_ext/code_cells.py            # rewrite every chapter's code cells
    .venv/bin/python book/_ext/code_cells.py --check    # list what is not formatted

Only the code of ```` ```{code-cell} ```` blocks is touched: its option lines (``:tags:``,
``:nbgrader:``, a ``---`` YAML block) and the prose around it are left byte for byte.
Cells with IPython magics or shell escapes are left alone. ``tests/book/test_code_cells.py``
runs the check, and also asserts that no line of code is longer than 88 characters (black
does not split long strings or comments).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINE_LENGTH = 88
CELL = re.compile(r"^(```\{code-cell\}[^\n]*\n)(.*?)^(```)[ \t]*$", re.M | re.S)


def notebooks() -> list[Path]:
    """Every MyST notebook of the book (chapters and assignments)."""
    return sorted(p for p in (ROOT / "book").rglob("*.md")
                  if "_build" not in p.parts and not any(x.startswith(".") for x in p.parts)
                  and p.read_text("utf-8").lstrip().startswith("---")
                  and "{code-cell}" in p.read_text("utf-8"))


def split_options(body: str) -> tuple[str, str]:
    """``(options, code)`` of a code-cell body: leading ``:key: value`` lines or a ``---``
    YAML block."""
    lines = body.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        for k in range(1, len(lines)):
            if lines[k].strip() == "---":
                return "".join(lines[:k + 1]), "".join(lines[k + 1:])
        return body, ""
    k = 0
    while k < len(lines) and re.match(r"^:[\w-]+:", lines[k]):
        k += 1
    return "".join(lines[:k]), "".join(lines[k:])


def _has_magic(code: str) -> bool:
    return any(line.lstrip().startswith(("%", "!")) for line in code.splitlines())


def format_code(code: str) -> str:
    import black

    if not code.strip() or _has_magic(code):
        return code
    mode = black.Mode(line_length=LINE_LENGTH)
    out = black.format_str(code, mode=mode)
    return out


def format_text(text: str) -> str:
    def repl(m):
        options, code = split_options(m.group(2))
        return m.group(1) + options + format_code(code) + m.group(3)

    return CELL.sub(repl, text)


def code_of(text: str) -> list[str]:
    """The code of every code cell (options removed)."""
    return [split_options(m.group(2))[1] for m in CELL.finditer(text)]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = 0
    for path in notebooks():
        text = path.read_text("utf-8")
        new = format_text(text)
        if new != text:
            bad += 1
            if check:
                print(f"not formatted: {path.relative_to(ROOT)}")
            else:
                path.write_text(new, "utf-8")
                print(f"formatted: {path.relative_to(ROOT)}")
    return 1 if check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
