"""Variants of the assignments: the same tasks with other formulas, for a class whose answers
the book does not print.

A variant is a complete instructor notebook, in the format of ``book/assignments/`` (solutions,
checks, hidden tests, hand-grading notes), at ``grader/variants/<name>/<assignment>.md``, with
the public notebook's ``grade_id`` for each task it changes. ``crowdlearn-grader release OUT
--variant NAME`` (and ``grade``, ``gradescope``) read that folder instead of
``book/assignments/``. The book renders the public notebooks only.

:func:`check_variant` proves a variant different: its own solutions pass its checks, and the
public notebook's solutions, put in its answer cells, fail some of them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["VARIANTS", "variant_source", "check_variant", "failing_checks"]

VARIANTS = Path(__file__).resolve().parents[1] / "variants"
"""Where the variants live: one folder per variant name."""


def variant_source(name: str, root=None) -> Path:
    """The folder of variant ``name`` (a ValueError listing the variants if there is none)."""
    root = Path(root) if root is not None else VARIANTS
    folder = root / name
    if not name or "/" in name or name.startswith(".") or not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise ValueError(f"no variant {name!r}; the variants are {known}")
    return folder


def failing_checks(nb, cwd, timeout=600) -> dict:
    """Execute the instructor notebook ``nb`` (a kernel, no sandbox: the instructor's own
    content) and return ``{grade_id: error}`` of the checks that raised."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.from_dict(nb)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if meta.get("grade") and not meta.get("solution") and errors:
            out[meta["grade_id"]] = f"{errors[0]['ename']}: {errors[0]['evalue']}"[:300]
    return out


def check_variant(variant_path, public_path, timeout=600) -> dict:
    """``{"own": {check: error}, "public": {check: error}}``: the checks the variant's own
    solutions fail (should be none) and those the public solutions fail in the variant (should
    be some for every changed task)."""
    from crowdlearn_grader.assignments import read_assignment, solution_regions

    variant, public = read_assignment(variant_path), read_assignment(public_path)
    theirs = {gid: [c.source for c in public.cells
                    if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid]
              for gid in solution_regions(public)}
    swapped = variant.copy()
    swapped.cells = [c.copy() for c in variant.cells]
    for cell in swapped.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and theirs.get(gid):
            cell.source = theirs[gid][0]
    cwd = Path(variant_path).parent
    return {"own": failing_checks(variant, cwd, timeout),
            "public": failing_checks(swapped, cwd, timeout)}
