"""Finding the submitted notebooks, reading them, and putting each together with the
instructor's cells (:func:`_merge`): what runs is the instructor's notebook with the student's
answers in it."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

from crowdlearn_grader.assignments import _nbgrader_meta, student_source

_LOG = logging.getLogger("crowdlearn_grader")


class _Refused(NamedTuple):
    """A submission the grader will not open, and why (graded 0 with this reason)."""
    reason: str


def _find_submissions(submissions: Path, known: dict) -> dict:
    """``(student, assignment) -> path`` of ``<student>/[<assignment>/]<assignment>.ipynb``
    (or ``.md``); a symbolic link maps to a :class:`_Refused`, dot-names are skipped."""
    if not submissions.is_dir():
        raise ValueError(f"no submissions folder at {submissions}")
    found, ignored = {}, []
    link = "is a symbolic link, which the grader does not follow"

    def offer(key, value):
        old = found.get(key)
        if old is None or isinstance(value, _Refused) or (
                not isinstance(old, _Refused) and old.suffix == ".md"):
            found[key] = value  # an .ipynb wins over an .md, a refusal over both
    for student in sorted(os.scandir(submissions), key=lambda e: e.name):
        if student.name.startswith("."):
            continue
        if student.is_symlink():
            found[(student.name, None)] = _Refused(f"the folder {student.name!r} {link}")
            continue
        if not student.is_dir(follow_symlinks=False):
            ignored.append(student.name)
            continue
        for entry in sorted(os.scandir(student.path), key=lambda e: e.name):
            stem, suffix = os.path.splitext(entry.name)
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                name = stem if suffix in (".ipynb", ".md") else entry.name
                if name in known:
                    offer((student.name, name), _Refused(f"{entry.name!r} {link}"))
                else:
                    ignored.append(f"{student.name}/{entry.name}")
                continue
            if entry.is_dir(follow_symlinks=False) and entry.name in known:
                hits = []
                for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
                    istem, isuffix = os.path.splitext(inner.name)
                    if istem != entry.name or isuffix not in (".ipynb", ".md"):
                        continue
                    if inner.is_symlink():
                        offer((student.name, entry.name),
                              _Refused(f"{entry.name}/{inner.name} {link}"))
                    elif inner.is_file(follow_symlinks=False):
                        hits.append(Path(inner.path))
                for hit in hits:
                    offer((student.name, entry.name), hit)
                continue
            if (entry.is_file(follow_symlinks=False) and suffix in (".ipynb", ".md")
                    and stem in known):
                offer((student.name, stem), Path(entry.path))
            else:
                ignored.append(f"{student.name}/{entry.name}")
    if ignored:
        _LOG.warning(
            "ignored %d file(s) that are not <student>/<assignment>.ipynb with a known "
            "assignment (%s): %s", len(ignored), ", ".join(sorted(known)),
            ", ".join(repr(i) for i in ignored[:5]))
    if not found:
        raise ValueError(f"no submissions found in {submissions}: expected "
                         f"<student>/<assignment>.ipynb with an assignment among {sorted(known)}")
    return found


def _read_submission(path: Path):
    import nbformat
    if path.suffix == ".md":
        import jupytext
        return jupytext.read(path)
    with path.open(encoding="utf-8") as fh:
        nb = nbformat.read(fh, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("no cells")
    return nb


def _released_source(cell) -> str:
    return student_source(cell.source).strip()


def _is_check(meta) -> bool:
    return bool(meta.get("grade")) and not meta.get("solution") and not meta.get("task")


def _merge(instructor, student) -> tuple:
    """``(notebook, notes, missing)``: the instructor's notebook (every marked cell the
    instructor's, whatever the student's copy holds) with the student's solution cells (all
    copies) and added code cells after the cell they follow; ``notes`` ``{grade_id: [note]}``
    (``None``: the notebook) on what the copy changed; ``missing`` the absent check ids."""
    by_id, released = _instructor_cells(instructor)
    found = _StudentCells(by_id, released)
    for cell in student.get("cells", []):
        if isinstance(cell, dict):
            found.add(cell)
    nb = _assemble(instructor, found)
    missing = {gid for gid, cell in by_id.items()
               if _is_check(_nbgrader_meta(cell)) and gid not in found.present}
    return nb, found.notes, missing


def _instructor_cells(instructor) -> tuple:
    """``grade_id -> cell`` of the instructor's nbgrader cells, and ``source -> grade_id``
    for their released and instructor sources (to recognise a cell whose metadata was
    edited)."""
    by_id, released = {}, {}
    for cell in instructor.cells:
        meta = _nbgrader_meta(cell)
        if meta.get("grade_id"):
            by_id[meta["grade_id"]] = cell
            released[_released_source(cell)] = meta["grade_id"]
            released.setdefault(cell.source.strip(), meta["grade_id"])
    return by_id, released


def _as_released(cell) -> bool:
    """Whether a student's locked cell is exactly as nbgrader released it (its source matches
    the checksum nbgrader stored in its metadata at release): an older release of a cell the
    instructor has changed since, not the student's edit. A forged checksum only hides a
    note: the instructor's cell runs either way."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(
        cell.get("metadata"), dict) else {}
    if not isinstance(meta, dict) or not isinstance(meta.get("checksum"), str):
        return False
    try:
        import nbformat
        from nbgrader.utils import compute_checksum
        return compute_checksum(nbformat.from_dict(cell)) == meta["checksum"]
    except Exception:
        return False


def _cell_meta_and_source(cell) -> tuple:
    """A student cell's nbgrader metadata (``{}`` if malformed) and its source as one string."""
    meta = _nbgrader_meta(cell) if isinstance(cell.get("metadata"), dict) else {}
    meta = meta if isinstance(meta, dict) else {}
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    return meta, source


class _StudentCells:
    """What the student's notebook holds, read cell by cell (:meth:`add`): the answers
    (``answers``: solution grade_id -> [source, ...]), the student's own code cells
    (``extra``: the instructor grade_id they follow, or None -> [source, ...]), the ids of
    the instructor cells present, and the notes for the feedback."""

    def __init__(self, by_id: dict, released: dict):
        self.by_id, self.released = by_id, released
        self.notes: dict = {}
        self.answers: dict = {}
        self.extra: dict = {}
        self.present: set = set()
        self.anchor = None
        self.older_release = False

    def note(self, gid, text: str) -> None:
        self.notes.setdefault(gid, []).append(text)

    def add(self, cell) -> None:
        meta, source = _cell_meta_and_source(cell)
        gid = meta.get("grade_id")
        target = self.by_id.get(gid) if isinstance(gid, str) else None
        if target is None:  # no (known) metadata: is it an instructor cell with edited metadata?
            gid = self.released.get(source.strip())
            if gid is not None:
                target = self.by_id[gid]
                if meta:
                    self.note(gid, "the nbgrader metadata of your copy of this cell was edited; "
                                   "the instructor's cell was used")
        if target is None:
            if cell.get("cell_type") == "code" and source.strip():
                if meta:
                    self.note(self.anchor, "a cell with unknown nbgrader metadata "
                                           f"(grade_id {meta.get('grade_id')!r}) was run as "
                                           "your own code")
                self.extra.setdefault(self.anchor, []).append(source)
            return
        if _nbgrader_meta(target).get("solution"):
            self._answer(cell, target, gid, source)
        else:
            self._locked(target, gid, source, cell)
        self.present.add(gid)
        self.anchor = gid

    def _answer(self, cell, target, gid, source: str) -> None:
        if cell.get("cell_type") != target.cell_type:
            self.note(gid, f"your copy of answer cell {gid!r} is a {cell.get('cell_type')} "
                           "cell; it was ignored")
            return
        if gid in self.answers:
            self.note(gid, f"answer cell {gid!r} appears {len(self.answers[gid]) + 1} times (a "
                           "copied cell?): all copies were run, in your order")
        self.answers.setdefault(gid, []).append(source)

    def _locked(self, target, gid, source: str, cell=None) -> None:
        if gid in self.present:
            self.note(gid, f"cell {gid!r} appears more than once (a copied cell?): the "
                           "instructor's cell was run once")
        elif source.strip() not in (target.source.strip(), _released_source(target)):
            if cell is not None and _as_released(cell):  # an older release, not an edit
                if not self.older_release:
                    self.older_release = True
                    self.note(None, "your notebook comes from an earlier release of this "
                                    "assignment: the current version of its checks was run")
            else:
                self.note(gid, "your copy of this cell was edited; the instructor's cell "
                               "was run")


def _assemble(instructor, found: _StudentCells):
    """A copy of the instructor's notebook with the answers in its solution cells and the
    student's own code after the cells it followed; outputs cleared."""
    import copy
    import nbformat
    nb = copy.deepcopy(instructor)
    nb.metadata.pop("jupytext", None)
    cells = []

    def own_code(sources):
        for src in sources:
            cells.append(nbformat.v4.new_code_cell(src, metadata={"crowdlearn": "student"}))
    own_code(found.extra.get(None, []))
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if meta.get("solution"):
            srcs = found.answers.get(gid)
            if not srcs:
                srcs = [student_source(cell.source)]
                if gid not in found.present:
                    found.note(gid, f"answer cell {gid!r} is missing from your notebook")
            for i, src in enumerate(srcs):
                new = copy.deepcopy(cell)
                new.source = src
                new.metadata["crowdlearn"] = "answer"
                if i:
                    new.metadata["nbgrader"] = dict(meta, grade_id=f"{gid}#copy{i}", grade=False)
                cells.append(new)
        else:
            if cell.cell_type == "code":
                cell.metadata["crowdlearn"] = "instructor"
            cells.append(cell)
        if gid is not None:
            own_code(found.extra.get(gid, []))
    nb.cells = cells
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb
