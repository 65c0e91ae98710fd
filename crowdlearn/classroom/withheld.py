r"""The package as a graded submission's kernel sees it: without the reference implementations
of what the assignment asks the student to write.

For each assignment, :data:`WITHHELD` names what is taken out: a whole module (every function
and class it defines) or some of a module's top-level definitions. :func:`package_copy` writes a
copy of the package with each of them replaced by a stand-in of the same name, which raises
:class:`ImportError` with a clear message when it is called or instantiated ("... is withheld
while assignment a2 is graded: ..."), so the rest of the package -- the simulators, the data
sets, the label containers, and whatever the assignment lets the student use -- imports and
works as before. The sandbox binds this copy where the package is, read-only.

The checks, which compare the student's answers with the reference, run in the grader's
process with the whole package (:mod:`crowdlearn.classroom.trusted`)."""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["WITHHELD", "package_copy", "withheld_names"]

_DAWID_SKENE = [
    "crowdlearn.aggregation._ds_kernel", "crowdlearn.aggregation.dawid_skene",
    "crowdlearn.aggregation.majority_vote", "crowdlearn.aggregation.one_coin",
    "crowdlearn.aggregation.weighted_vote", "crowdlearn.aggregation.glad",
    "crowdlearn.aggregation.mace", "crowdlearn.features.latent_class",
    "crowdlearn.aggregation.multilabel:MultiLabelDawidSkene,_make_data",
    "crowdlearn.distributed.dask_backend", "crowdlearn.widgets.em_steps",
    "crowdlearn.classroom.references",
]

WITHHELD = {
    "a1_naive_bayes_mle": ["crowdlearn.features.naive_bayes", "crowdlearn.features.latent_class",
                           "crowdlearn.symbolic"],
    "a2_dawid_skene_by_hand": _DAWID_SKENE,
    "a3_smoothing_map": [*_DAWID_SKENE, "crowdlearn.symbolic"],
    "a4_logistic_gradients": [
        "crowdlearn.features.logistic_annotators:LogisticAnnotators,observed_log_likelihood,"
        "_log_joint,_make_data",
        "crowdlearn._solvers.logistic", "crowdlearn._solvers.l1_logistic", "crowdlearn.solvers",
        "crowdlearn.features.sparse_experts:MajorityVoteLogistic",
        "crowdlearn.classroom.references"],
    "a5_choosing_penalty": ["crowdlearn.selection",
                            "crowdlearn.features.sparse_experts:sparse_experts_path",
                            "crowdlearn.classroom.references"],
    "a6_multilabel_em": _DAWID_SKENE,
}
"""Assignment -> what its sandbox does not have: ``"module"`` (all its functions and classes)
or ``"module:name,name"``."""


def withheld_names(assignment: str) -> dict:
    """``module -> set of names`` withheld for ``assignment`` (``None``: all of the module)."""
    out: dict = {}
    for entry in WITHHELD.get(assignment, []):
        module, _, names = entry.partition(":")
        if not names:
            out[module] = None
        elif out.get(module, set()) is not None:
            out[module] = out.get(module, set()) | set(names.split(","))
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
    """``source`` with the top-level functions and classes in ``names`` (None: all) replaced
    by stand-ins that raise when used."""
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


def package_copy(assignment: str, parent=None) -> Path:
    """A copy of the ``crowdlearn`` package folder (sources and data, no caches) with what
    :data:`WITHHELD` names for ``assignment`` taken out; its path (the caller removes it).
    Folders 0755 and files 0644, so the sandbox's user can read it."""
    import crowdlearn

    here = Path(crowdlearn.__file__).resolve().parent
    top = Path(tempfile.mkdtemp(prefix="clg-pkg-", dir=parent)) / "crowdlearn"
    shutil.copytree(here, top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc",
                                                             "*.egg-info"))
    for module, names in withheld_names(assignment).items():
        rel = Path(*module.split(".")[1:])
        path = top / rel / "__init__.py" if (top / rel).is_dir() else top / rel.with_suffix(".py")
        if not path.is_file():
            raise ValueError(f"WITHHELD names {module}, which is not in the package")
        path.write_text(_strip(path.read_text(encoding="utf-8"), names, assignment),
                        encoding="utf-8")
    for folder in [top.parent, *[p for p in top.rglob("*") if p.is_dir()], top]:
        os.chmod(folder, 0o755)
    for f in top.rglob("*"):
        if f.is_file():
            os.chmod(f, 0o644)
    return top
