"""Variants: the same tasks with other formulas, complete instructor notebooks at
``grader/variants/<name>/<assignment>.md`` (``--variant NAME`` reads them). :func:`check_variant`
proves one different: its solutions pass its checks, the public ones fail some."""

from __future__ import annotations

from pathlib import Path

__all__ = ["VARIANTS", "variant_source", "check_variant", "check_variants", "failing_checks"]

VARIANTS = Path(__file__).resolve().parents[1] / "variants"  # a folder per variant


def variant_source(name: str, root=None) -> Path:
    """The folder of variant ``name`` (a ValueError listing the variants if there is none)."""
    root = Path(root) if root is not None else VARIANTS
    folder = root / name
    if not name or "/" in name or name.startswith(".") or not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise ValueError(f"no variant {name!r}; the variants are {known}")
    return folder


def failing_checks(nb, cwd, timeout=600, *more) -> dict:
    """``{grade_id: error}`` of the checks that raise when ``nb`` runs (no sandbox); with
    ``more`` notebooks, a list of such dicts, one per notebook, all run in one kernel whose
    namespace is reset between them (its imported modules are kept: one start, one import)."""
    import nbformat
    from nbclient import NotebookClient
    nbs = [nbformat.from_dict(n) for n in (nb, *more)]
    client = NotebookClient(nbs[0], timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(cwd)}})
    reset = nbformat.v4.new_code_cell("get_ipython().run_line_magic('reset', '-f')")
    with client.setup_kernel():
        for k, one in enumerate(nbs):
            client.nb = one  # outputs are stored by index into the client's notebook
            if k:
                client.execute_cell(reset, 0)
            for index, cell in enumerate(one.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)
    found = [_failed(one) for one in nbs]
    return found if more else found[0]


def _failed(nb) -> dict:
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if meta.get("grade") and not meta.get("solution") and errors:
            out[meta["grade_id"]] = f"{errors[0]['ename']}: {errors[0]['evalue']}"[:300]
    return out


def check_variant(variant_path, public_path, timeout=600) -> dict:
    """``{"own": {check: error}, "public": {check: error}}``: the checks the variant's
    solutions fail (none, ideally) and those the public solutions fail (some)."""
    return check_variants([(variant_path, public_path)], timeout)[0]


def check_variants(pairs, timeout=600) -> list:
    """:func:`check_variant` of each ``(variant, public)`` pair of one variant's folder, all
    in one kernel (its namespace reset before each notebook)."""
    from crowdlearn_grader.assignments import read_assignment, solution_regions
    runs = []
    for variant_path, public_path in pairs:
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
        runs += [variant, swapped]
    folders = {Path(v).parent for v, _ in pairs}
    if len(folders) != 1:
        raise ValueError(f"the variants must share one folder, got {sorted(map(str, folders))}")
    found = failing_checks(runs[0], folders.pop(), timeout, *runs[1:])
    return [{"own": found[2 * k], "public": found[2 * k + 1]} for k in range(len(pairs))]
