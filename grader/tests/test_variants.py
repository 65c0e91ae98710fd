"""Variants (grader/variants/<name>/): for every assignment at least two besides the public
one; each is a valid instructor notebook whose own solutions pass all its checks, while the
public solutions, put in its answer cells, fail a check of every coding task whose solution
differs; the book never renders them; the command line releases them."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("nbclient")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader.variants import VARIANTS, check_variants  # noqa: E402
from support import BOOK, ROOT  # noqa: E402

pytestmark = pytest.mark.notebook

PUBLIC = classroom.find_assignments(BOOK / "assignments")
NAMES = sorted(p.name for p in VARIANTS.iterdir() if p.is_dir())
PAIRS = [(v, a) for v in NAMES for a in sorted(classroom.find_assignments(VARIANTS / v))]


def test_every_assignment_has_two_variants():
    assert len(NAMES) >= 2
    for name in NAMES:
        assert set(classroom.find_assignments(VARIANTS / name)) == set(PUBLIC), name


def _code_tasks(nb) -> dict:
    """``solution grade_id -> (its source, the grade_ids of its task's checks)``."""
    out, current = {}, None
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            out[current] = (cell.source, [])
        elif meta.get("grade") and not meta.get("solution") and current is not None:
            out[current][1].append(meta["grade_id"])
    return out


_CHECKED: dict = {}


def _checked(variant: str, name: str) -> dict:
    """check_variant's result; a variant's notebooks all run in one kernel, on first use."""
    if variant not in _CHECKED:
        names = [a for v, a in PAIRS if v == variant]
        results = check_variants([(VARIANTS / variant / f"{a}.md", PUBLIC[a]) for a in names])
        _CHECKED[variant] = dict(zip(names, results))
    return _CHECKED[variant][name]


@pytest.mark.parametrize("variant, name", PAIRS, ids=[f"{v}-{a}" for v, a in PAIRS])
def test_the_variants_solution_passes_and_the_public_one_fails(variant, name):
    path = VARIANTS / variant / f"{name}.md"
    result = _checked(variant, name)
    assert result["own"] == {}, result["own"]
    public = _code_tasks(classroom.read_assignment(PUBLIC[name]))
    changed = {gid: checks for gid, (src, checks) in
               _code_tasks(classroom.read_assignment(path)).items()
               if gid in public and src.strip() != public[gid][0].strip() and checks}
    assert changed, "the variant changes no coding task"
    caught = {gid for gid, checks in changed.items() if set(checks) & set(result["public"])}
    assert caught == set(changed), {g: changed[g] for g in set(changed) - caught}


def test_the_book_does_not_render_the_variants():
    toc = (ROOT / "_toc.yml").read_text()
    assert "variants" not in toc and "grader" not in toc


def test_release_of_a_variant(tmp_path):
    assert classroom.main(["--variant", NAMES[0], "release", str(tmp_path), "--no-kit"]) == 0
    for name in PUBLIC:
        nb = json.loads((tmp_path / f"{name}.ipynb").read_text())
        text = "".join("".join(c["source"]) for c in nb["cells"])
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert classroom.main(["--variant", "nothing", "list"]) == 2
