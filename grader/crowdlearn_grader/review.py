r"""A short list for the instructor to read (no score depends on it): student cells that
take derivatives numerically, subclass the package's classes, use what is withheld or private,
or reach into the grader or the interpreter (read with :mod:`ast`).

>>> import nbformat
>>> cell = nbformat.v4.new_code_cell
>>> nb = nbformat.v4.new_notebook(cells=[
...     cell("g = (f(x + h) - f(x - h)) / (2 * h)",
...          metadata={"nbgrader": {"grade_id": "gradient", "solution": True}}),
...     cell("assert g", metadata={"nbgrader": {"grade_id": "check_g", "grade": True}})])
>>> flagged_checks(nb, "a4_logistic_gradients")
{'check_g': "cell 'gradient' takes a derivative by finite differences, not by derivation"}
"""

from __future__ import annotations

import ast
import re

__all__ = ["flagged_checks", "findings"]

_NUMERICAL = re.compile(r"(approx_fprime|check_grad|central_differences?|numdifftools|"
                        r"(^|_)fd($|_)|finite_diff)", re.I)
_PATCHED_MODULES = {"numpy", "sympy", "scipy", "math", "builtins", "crowdlearn",
                    "crowdlearn_checks", "IPython"}
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "breakpoint"}
_DYNAMIC_MODULES = {"importlib", "ctypes", "gc", "inspect", "marshal", "pickle", "builtins",
                    "runpy", "crowdlearn_grader"}
_FRAME_ATTRS = {"__globals__", "__code__", "__closure__", "__builtins__", "f_back", "f_globals",
                "f_locals", "tb_frame", "gi_frame", "modules", "input_transformers_post",
                "input_transformers_cleanup", "ast_transformers", "showtraceback",
                "_showtraceback", "set_custom_exc", "__subclasses__"}
_GRADER_TEXT = re.compile(r"results\.json|/autograder|_checks\b|__import__|\b(exec|eval)\(")


def _imports(tree) -> dict:
    """Local name -> the dotted module or object it was imported as."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node, names) -> str:
    """``np.testing.x`` -> ``numpy.testing.x`` (imports resolved), or ``""``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([names.get(node.id, node.id), *reversed(parts)])


def _quotient(node) -> bool:
    """``(f(a) - f(b)) / d``: a difference of two calls of one function, divided."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return False
    top = node.left
    return (isinstance(top, ast.BinOp) and isinstance(top.op, ast.Sub)
            and isinstance(top.left, ast.Call) and isinstance(top.right, ast.Call)
            and ast.dump(top.left.func) == ast.dump(top.right.func))


def _private(dotted: str, withheld) -> bool:
    parts = dotted.split(".")
    if parts[0] != "crowdlearn" and parts[0] != "crowdlearn_checks":
        return False
    return any(p.startswith("_") and not p.startswith("__") for p in parts[1:]) or any(
        dotted == w or dotted.startswith(w + ".") for w in withheld)


def _reason(tree, withheld, imported) -> str | None:
    """Why this cell is listed (its first finding), or None."""
    names = {**imported, **_imports(tree)}
    for node in ast.walk(tree):
        dotted = _dotted(node.func, names) if isinstance(node, ast.Call) else ""
        if _quotient(node) or (dotted and _NUMERICAL.search(dotted.rsplit(".", 1)[-1])):
            return "takes a derivative by finite differences, not by derivation"
        if isinstance(node, ast.ClassDef) and any(
                _dotted(b, names).startswith("crowdlearn.") for b in node.bases):
            return "derives a class from the package's; its methods can answer for it"
    for dotted in _imports(tree).values():
        if _private(dotted, withheld):
            return f"imports {dotted}, which this assignment withholds or keeps private"
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = _dotted(node, names)
            if _private(dotted, withheld):
                return f"uses {dotted}, which this assignment withholds or keeps private"
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in getattr(node, "targets", None) or [node.target]:
                root = _dotted(t, names).split(".")[0] if isinstance(t, ast.Attribute) else ""
                if root in _PATCHED_MODULES:
                    return f"assigns {_dotted(t, names)}, which can change how checks compare"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _DYNAMIC_CALLS) or (
                isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS) or (
                isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    n.split(".")[0] in _DYNAMIC_MODULES for n in names.values())) or (
                isinstance(node, ast.Constant) and isinstance(node.value, str)
                and _GRADER_TEXT.search(node.value)) or (
                isinstance(node, ast.Name) and node.id == "_checks"
                and isinstance(node.ctx, ast.Store)):
            return "reaches into the interpreter or the grader (code the checks cannot trust)"
    return None


def _parse(source: str):
    lines = [("pass" if line.lstrip().startswith(("%", "!")) else line)
             for line in source.splitlines()]  # IPython magics and shell escapes
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return None  # it fails when it runs, and so do the checks that need it


def _student(cell) -> bool:
    """A code cell the student wrote (an answer, or one added), by the merge's metadata."""
    meta = cell.get("metadata", {})
    nbgrader = meta.get("nbgrader", {})
    if cell.get("cell_type") != "code" or meta.get("crowdlearn") == "instructor":
        return False
    return bool(nbgrader.get("solution")) or not (nbgrader.get("grade") or nbgrader.get("locked"))


def findings(nb, withheld=()) -> list:
    """``[(cell index, label, reason)]`` of the student's cells of ``nb`` that are listed."""
    out, imported = [], {}
    for cell in nb.get("cells", []):
        tree = _parse(cell.get("source", "")) if cell.get("cell_type") == "code" else None
        imported.update(_imports(tree) if tree is not None else {})
    for i, cell in enumerate(nb.get("cells", [])):
        tree = _parse(cell.get("source", "")) if _student(cell) else None
        reason = _reason(tree, tuple(withheld), imported) if tree is not None else None
        if reason:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            out.append((i, repr(gid.split("#copy")[0]) if gid else f"#{i + 1}", reason))
    return out


def flagged_checks(nb, assignment: str, withheld=None, instructor=None) -> dict:
    """``{check grade_id: "cell ... reason"}`` for the grader's merged ``nb``: each listed
    cell names the first check after it. What the ``instructor``'s own solution does is not
    listed; ``withheld`` defaults to the front matter's list."""
    if withheld is None:
        withheld = nb.get("metadata", {}).get("grading", {}).get("withheld", [])
    cells = nb.get("cells", [])
    checks = [(i, c["metadata"]["nbgrader"]["grade_id"]) for i, c in enumerate(cells)
              if c.get("metadata", {}).get("nbgrader", {}).get("grade")
              and not c["metadata"]["nbgrader"].get("solution")
              and c["metadata"]["nbgrader"].get("grade_id")]
    expected = {(label, reason) for _, label, reason in findings(instructor or {}, withheld)}
    out = {}
    for index, label, reason in findings(nb, withheld):
        if (label, reason) in expected:
            continue
        after = [gid for i, gid in checks if i > index and gid not in out]
        if after:
            out[after[0]] = f"cell {label} {reason}"
    return out
