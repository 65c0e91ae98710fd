r"""The package as a graded submission's kernel sees it: the assignment's ``grading: withheld:``
names (and the private helpers only they use, :func:`resolve`) replaced by stand-ins that raise
ImportError (:func:`package_copy`); the checks run in the grader with the whole package."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["package_copy", "resolve"]


def _references(root: Path) -> dict:
    """``(module, name) -> {(module, name or "" for top-level code)}``: who refers to each
    function or class of the package, directly or through ``from ... import`` (computed once
    per state of the package's files: every grading run of a process reuses it)."""
    files = sorted(root.rglob("*.py"))
    return _references_of(root, tuple((p, p.stat().st_mtime_ns, p.stat().st_size)
                                      for p in files))


@functools.lru_cache(maxsize=4)
def _references_of(root: Path, files: tuple) -> dict:
    refs: dict = {}
    for path, _, _ in files:
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if parts[-1] == "__init__" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local = {n.name: (module, n.name) for n in tree.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or node.level):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                   package) if node.level else node.module
                local.update({a.asname or a.name: (base, a.name) for a in node.names})
        for node in tree.body:
            who = (module, getattr(node, "name", "")) if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else (module, "")
            for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
                if name in local and local[name] != who:
                    refs.setdefault(local[name], set()).add(who)
    return refs


def _with_helpers(defs: set, refs: dict) -> set:
    """``defs`` and the private helpers only withheld definitions use, transitively."""
    out = set(defs)
    while True:
        more = {target for target, users in refs.items() if target not in out
                and (target[1].startswith("_") or "._" in f".{target[0]}")
                and users & out and all(u in out for u in users)}
        if not more:
            return out
        out |= more


def _merge(into: dict, module: str, names) -> None:
    if names is None or into.get(module, set()) is None:
        into[module] = None
    else:
        into[module] = into.get(module, set()) | set(names)


def resolve(public_names) -> dict:
    """``module -> names`` (``None``: all of it) to take out for ``public_names``, with the
    private helpers nothing else uses; ValueError for a name not in the package."""
    import crowdlearn
    out: dict = {}
    defs = set()
    for public in public_names:
        mod_name, _, attr = public.rpartition(".")
        try:
            obj = importlib.import_module(public)
        except ImportError:
            try:
                obj = getattr(importlib.import_module(mod_name), attr)
            except (ImportError, AttributeError, ValueError):
                raise ValueError(f"withheld names {public!r}, which is not in the package")
        if inspect.ismodule(obj):
            _merge(out, obj.__name__, None)
            tree = ast.parse(inspect.getsource(obj))
            defs |= {(obj.__name__, n.name) for n in tree.body if isinstance(
                n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        else:
            defs.add((obj.__module__, obj.__name__))
    for module, name in _with_helpers(defs, _references(Path(crowdlearn.__file__).parent)):
        if out.get(module, set()) is not None:
            _merge(out, module, {name})
    return out


_HELPER = '''
class _WithheldWhileGrading(ImportError):
    """Raised by what the grader took out of the package for this assignment."""


def _withheld(name, _module=__name__):
    message = (
        f"{{_module}}.{{name}} is withheld while assignment {assignment!r} is graded: it is "
        "the package's reference implementation of what this assignment asks you to write. "
        "Write your own; the grader compares it with the reference outside your notebook.")

    def refuse(*args, **kwargs):
        raise _WithheldWhileGrading(message)

    return type(name, (), {{"__new__": refuse, "__doc__": message,
                           "__init_subclass__": classmethod(lambda cls, **kw: None)}})

'''


def _strip(source: str, names, assignment: str) -> str:
    """``source`` with the top-level ``names`` (None: all) replaced by raising stand-ins."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cuts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                names is None or node.name in names):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            cuts.append((start, node.end_lineno, node.name))
    if not cuts:
        return source
    insert_at = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None),
                                                           ast.Constant)
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (is_doc or is_future):
            break
        insert_at = node.end_lineno
    for start, end, name in reversed(cuts):
        lines[start - 1:end] = [f"{name} = _withheld({name!r})\n"]
    return ("".join(lines[:insert_at]) + _HELPER.format(assignment=assignment)
            + "".join(lines[insert_at:]))


def package_copy(assignment: str, withheld=(), parent=None) -> Path:
    """The path of a readable copy of ``crowdlearn`` with ``withheld`` taken out while
    ``assignment`` is graded (the caller removes it)."""
    import crowdlearn
    here = Path(crowdlearn.__file__).resolve().parent
    top = Path(tempfile.mkdtemp(prefix="clg-pkg-", dir=parent)) / "crowdlearn"
    shutil.copytree(here, top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    for module, names in resolve(withheld).items():
        rel = Path(*module.split(".")[1:])
        path = top / rel / "__init__.py" if (top / rel).is_dir() else top / rel.with_suffix(".py")
        if not path.is_file():
            raise ValueError(f"{module} is not a module of the package")
        path.write_text(_strip(path.read_text(encoding="utf-8"), names, assignment),
                        encoding="utf-8")
    import crowdlearn_checks  # the comparisons only: the references stay with the grader
    (top.parent / "crowdlearn_checks").mkdir()
    shutil.copy(crowdlearn_checks.__file__, top.parent / "crowdlearn_checks" / "__init__.py")
    (top.parent / "crowdlearn_grader").mkdir()  # the kernel's side of the channel, no more
    (top.parent / "crowdlearn_grader" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(Path(__file__).with_name("channel.py"), top.parent / "crowdlearn_grader")
    for folder in [top.parent, *[p for p in top.parent.rglob("*") if p.is_dir()]]:
        os.chmod(folder, 0o755)
    for f in top.parent.rglob("*"):
        if f.is_file():
            os.chmod(f, 0o644)
    return top
