r"""Exports an LMS takes: a Canvas gradebook CSV and a Moodle grade-import CSV, made from graded
results and a roster (and Gradescope's ``results.json``, for its autograder).

The **roster** (:func:`read_roster`) is a CSV file, one row per student, that ties a
submission folder to the student's identity in the LMS. Its header names the columns (case,
spaces and underscores do not matter; other columns are ignored, so a gradebook exported from
the LMS with a ``folder`` column added works; its ``Points Possible`` row is skipped):

``folder`` (required)
    the student's folder in the submissions (``SUBMISSIONS/<folder>/<assignment>.ipynb``),
    taken verbatim (spaces included);
``name`` (or ``Student``)
    the display name, e.g. ``Doe, Jane``;
``id`` (Canvas's ``ID``), ``sis_user_id``, ``sis_login_id``, ``section``
    the Canvas identifiers (one of the three ids is enough for Canvas to match the row);
``email`` (or ``Email address``), ``idnumber`` (or ``ID number``)
    the Moodle identifiers.

It is checked when read: a missing file, a missing ``folder`` column, an empty or repeated
folder, or an id, SIS id, e-mail or ID number given to two students is a ``ValueError``
naming the rows. When exporting, a student who was graded but is not in the roster is a
``ValueError`` (the export would lose the grade). A roster entry without a submission of an
assignment gets an empty cell (the LMS keeps what it has; ``missing="zero"`` writes 0
instead); each such entry is named in a warning, as are submissions that could not be graded
(not a notebook, a symbolic link, the grader failed: :func:`not_graded`; also left empty) and hand-graded cells not marked yet (counted as 0). Where a folder name
is written (a student without a name; the unmatched list), one that starts like a formula
(``=``, ``+``, ``-``, ``@``) gets a leading apostrophe, so a spreadsheet never runs it.

Formats, as published:

* **Canvas** (:func:`write_canvas`): the gradebook import CSV has the columns ``Student``,
  ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per assignment,
  headed by the assignment's name, or ``Name (id)`` when its Canvas id is known, which Canvas
  matches exactly; a second row ``Points Possible`` gives each column's maximum. There is no
  total column: an unknown column header becomes a new assignment in Canvas. (Canvas guides:
  "How do I import grades in the Gradebook?", community.canvaslms.com; the OSU summary
  https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades
  lists Student / ID / SIS User ID, SIS Login ID, Section and the assignment columns, and
  warns that new assignment columns create new assignments. Canvas's own importer,
  ``GradebookImporter`` in canvas-lms, takes a header whose first columns match ``Student``,
  ``ID``, ``SIS User ID``, ``SIS Login ID`` and ends them with ``Section``; skips a row whose
  first cell matches ``Points Possible`` and reads the maxima from it; splits ``Name (id)``
  with ``Assignment.title_and_id``; and finds the student by ``ID``, then by SIS User ID,
  then SIS Login ID, then by name.)
* **Moodle** (:func:`write_moodle`): *Grades > Import > CSV file* maps one column to users
  ("Map from" ``Email address`` to ``useremail``, or ``ID number`` to ``useridnumber``; e-mail
  addresses match case-sensitively) and each other column to a grade item
  (https://docs.moodle.org/311/en/Grade_import). A row whose user Moodle cannot find stops the
  import, so students without the chosen identifier are left out of the CSV and listed in
  ``<stem>-unmatched.csv`` next to it, to enter by hand.
* **Gradescope** takes grades only from its own autograder (``crowdlearn-grader gradescope``,
  :mod:`~crowdlearn_grader.gradescope`), whose ``run_autograder`` writes, with
  :func:`gradescope_results`, the ``results.json`` of the autograder format (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
  ``{"score", "output", "stdout_visibility", "tests": [{"name", "score", "max_score",
  "status", "output", "visibility"}]}``. A check that holds hidden tests gets
  ``visibility`` ``"after_published"`` (or ``"hidden"``); its output is the check's own
  message, never a hidden test's source (lines of it are cut out, as in the feedback files).

Command line (after ``grade``; the report's ``.json`` holds the results)::

    python3 -m crowdlearn_grader export grades.csv --roster roster.csv \
        --canvas canvas.csv [--assignment-map lms-assignments.csv] \
        --moodle moodle.csv [--moodle-id email|idnumber]
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from crowdlearn_grader.reports import (_score_line, _slug, _totals, not_graded,
                                         read_results)
from crowdlearn_grader.scoring import awaiting_mark

__all__ = ["RosterEntry", "read_roster", "read_assignment_map", "write_canvas",
           "write_moodle", "gradescope_results", "CANVAS_COLUMNS"]

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
"""The identity columns of a Canvas gradebook CSV, before the assignment columns."""

_MOODLE_IDENTIFIERS = {"email": "Email address", "idnumber": "ID number"}
_VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


class RosterEntry(NamedTuple):
    """One student of the roster: the submission folder and the LMS identities."""

    folder: str
    name: str = ""
    id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    idnumber: str = ""


_ALIASES = {"student": "name", "email_address": "email", "id_number": "idnumber"}
_UNIQUE = ("id", "sis_user_id", "sis_login_id", "email", "idnumber")


def _key(header: str) -> str:
    key = re.sub(r"[\s_-]+", "_", (header or "").strip().lower())
    return _ALIASES.get(key, key)


def _read_csv(path, what: str) -> tuple:
    """``(header, rows)`` of a CSV file (rows as lists); ValueError if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} file {str(path)!r} does not exist")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.reader(fh) if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"cannot read the {what} file {str(path)!r}: {exc}") from None
    if not rows:
        raise ValueError(f"the {what} file {str(path)!r} is empty")
    return [_key(h) for h in rows[0]], rows[1:]


def read_roster(roster) -> dict:
    """The roster: ``folder -> RosterEntry``, in the file's order.

    ``roster`` is a CSV file (see the module docstring) or an iterable of
    :class:`RosterEntry` or dicts with its fields. Raises ``ValueError`` for a missing file,
    a missing ``folder`` column, an empty or repeated folder, and an id (Canvas ID, SIS User
    ID, SIS Login ID, e-mail -- compared without case -- or ID number) given to two students.
    """
    if isinstance(roster, dict) and all(isinstance(v, RosterEntry) for v in roster.values()):
        roster = list(roster.values())
    if isinstance(roster, (str, os.PathLike)):
        header, rows = _read_csv(roster, "roster")
        if "folder" not in header:
            raise ValueError(f"roster {str(roster)!r} has no 'folder' column (the student's "
                             f"submission folder); its columns are {header}")
        where = [f"roster line {n}" for n in range(2, len(rows) + 2)]
        entries = [{k: (row[i] if i < len(row) else "")
                    for i, k in enumerate(header) if k in RosterEntry._fields}
                   for row in rows]
        skip = [re.match(r"\s*Points Possible", e.get("name", "")) is not None
                for e in entries]  # the maxima row of a Canvas export
        where = [w for w, maxima in zip(where, skip) if not maxima]
        entries = [e for e, maxima in zip(entries, skip) if not maxima]
    else:
        entries = [r._asdict() if isinstance(r, RosterEntry) else dict(r) for r in roster]
        where = [f"roster entry {n}" for n in range(1, len(entries) + 1)]
    out, seen = {}, {}
    for place, fields in zip(where, entries):
        entry = RosterEntry(**{k: str(fields.get(k) or "") if k == "folder"  # verbatim
                               else str(fields.get(k) or "").strip()
                               for k in RosterEntry._fields})
        if not entry.folder.strip():
            raise ValueError(f"{place}: no folder (the student's submission folder)")
        if entry.folder in out:
            raise ValueError(f"{place}: folder {entry.folder!r} is listed twice")
        for field in _UNIQUE:
            value = getattr(entry, field)
            value = value.casefold() if field == "email" else value
            if value and (field, value) in seen:
                raise ValueError(f"{place}: {field} {getattr(entry, field)!r} of "
                                 f"{entry.folder!r} is also the {field} of "
                                 f"{seen[field, value]!r}: duplicate ids")
            seen[field, value] = entry.folder
        out[entry.folder] = entry
    if not out:
        raise ValueError("the roster lists no student")
    return out


def read_assignment_map(mapping) -> dict:
    """``assignment -> {"name": ..., "canvas_id": ...}`` from a CSV file with columns
    ``assignment``, ``name`` (the LMS's name for it) and ``canvas_id`` (digits), or from a
    dict (``assignment -> canvas id`` or ``-> {"name", "canvas_id"}``). Names default to the
    assignment's own; ``ValueError`` for a repeated assignment or an id that is not a number.
    """
    if isinstance(mapping, (str, os.PathLike)):
        header, rows = _read_csv(mapping, "assignment map")
        if "assignment" not in header:
            raise ValueError(f"assignment map {str(mapping)!r} has no 'assignment' column; "
                             f"its columns are {header}")
        items = []
        for row in rows:
            cells = dict(zip(header, (c.strip() for c in row)))
            if cells.get("assignment", "") in {a for a, _ in items}:
                raise ValueError(f"assignment map: {cells['assignment']!r} is listed twice")
            items.append((cells.get("assignment", ""), cells))
    else:
        items = [(a, v if isinstance(v, dict) else {"canvas_id": v})
                 for a, v in dict(mapping or {}).items()]
    out = {}
    for assignment, cells in items:
        cid = str(cells.get("canvas_id") or "").strip()
        if cid and not cid.isdigit():
            raise ValueError(f"assignment map: the Canvas id of {assignment!r} must be a "
                             f"number (from the assignment's URL), got {cid!r}")
        out[assignment] = {"name": str(cells.get("name") or "").strip() or assignment,
                           "canvas_id": cid}
    return out


def _text(value: str) -> str:
    """A folder name as a spreadsheet cell: one that starts like a formula (``=``, ``+``,
    ``-``, ``@``) gets a leading apostrophe, so opening the CSV never runs it."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@") else value


def _num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


class _Gradebook(NamedTuple):
    columns: list     # assignments, sorted
    maxima: dict      # assignment -> points possible
    cells: dict       # folder -> assignment -> "12.5" or "" (no grade)
    warnings: list


def _gradebook(results, roster: dict, missing: str) -> _Gradebook:
    """The class's points per roster entry and assignment, checked against the roster."""
    if missing not in ("blank", "zero"):
        raise ValueError(f"missing must be 'blank' or 'zero', got {missing!r}")
    totals = _totals(results, pending=True)
    unknown = sorted({t["submission"] for t in totals} - set(roster))
    if unknown:
        raise ValueError(f"graded but not in the roster: {', '.join(map(repr, unknown))}; "
                         "add a row (folder,name,ids) for each, or the LMS would never get "
                         "their grades")
    columns = sorted({t["assignment"] for t in totals})
    maxima, warnings = {}, []
    for a in columns:
        seen = sorted({t["max_points"] for t in totals if t["assignment"] == a})
        maxima[a] = seen[-1]
        if len(seen) > 1:
            warnings.append(f"{a}: submissions were graded out of different maxima "
                            f"({', '.join(map(_num, seen))}); Points Possible is {_num(seen[-1])}")
    ungraded = not_graded(results)
    got = {(t["submission"], t["assignment"]): t for t in totals}
    cells = {f: {a: "" if missing == "blank" else "0" for a in columns} for f in roster}
    for (folder, a), t in got.items():
        cells[folder][a] = "" if (folder, a) in ungraded else _num(t["points"])
    for a in columns:
        absent = [f for f in roster if (f, a) not in got]
        if absent:
            warnings.append(f"{a}: no submission from {', '.join(map(repr, absent))} "
                            f"({'left empty' if missing == 'blank' else 'given 0'})")
        failed = sorted(f for f, b in ungraded if b == a)
        if failed:
            warnings.append(f"{a}: could not grade {', '.join(map(repr, failed))} "
                            "(left empty; see the report's feedback, grade them again)")
        pending = sorted(f for (f, b), t in got.items() if b == a and t["to_be_marked"])
        if pending:
            warnings.append(f"{a}: hand-graded cells not marked yet for {len(pending)} "
                            "student(s) (counted as 0; apply marks with `mark`)")
    return _Gradebook(columns, maxima, cells, warnings)


def _results(results):
    return read_results(results) if isinstance(results, (str, os.PathLike)) else results


def write_canvas(results, roster, path, *, assignment_map=None,
                 missing: str = "blank") -> list:
    """Write a Canvas gradebook import CSV (see the module docstring for the format).

    Parameters
    ----------
    results : GradeResults or path
        The graded results, or the report (its ``.json``) :func:`grade` wrote.
    roster : path or iterable
        See :func:`read_roster`; every graded student must be in it.
    path : path
        The CSV to write.
    assignment_map : path or dict, optional
        See :func:`read_assignment_map`: the Canvas name and id of each assignment; the
        column is then headed ``Name (id)``.
    missing : {"blank", "zero"}
        What a roster entry without a submission gets.

    Returns
    -------
    list of str
        Warnings: entries without a submission, submissions not graded, marks pending.
    """
    roster = read_roster(roster)
    book = _gradebook(_results(results), roster, missing)
    names = read_assignment_map(assignment_map)
    headers = []
    for a in book.columns:
        m = names.get(a, {"name": a, "canvas_id": ""})
        headers.append(f"{m['name']} ({m['canvas_id']})" if m["canvas_id"] else m["name"])
    warnings = list(book.warnings)
    no_id = [e.folder for e in roster.values()
             if not (e.id or e.sis_user_id or e.sis_login_id)]
    if no_id:
        warnings.append(f"no ID, SIS User ID or SIS Login ID for {', '.join(map(repr, no_id))}: "
                        "Canvas may not match their rows")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*CANVAS_COLUMNS, *headers])
        writer.writerow(["Points Possible", "", "", "", "",
                         *(_num(book.maxima[a]) for a in book.columns)])
        for e in roster.values():
            writer.writerow([e.name or _text(e.folder), e.id, e.sis_user_id, e.sis_login_id,
                             e.section, *(book.cells[e.folder][a] for a in book.columns)])
    return warnings


def write_moodle(results, roster, path, *, identifier: str = "email", assignment_map=None,
                 missing: str = "blank") -> list:
    """Write a Moodle grade-import CSV: the ``identifier`` column (``"email"``: header
    ``Email address``; ``"idnumber"``: ``ID number``), then one column per assignment (its
    name from ``assignment_map``). Roster entries without that identifier are not in it (an
    unknown user stops Moodle's import): they are listed, with their points, in
    ``<stem>-unmatched.csv`` next to ``path`` (always written, maybe with a header only).

    Returns the warnings, as :func:`write_canvas` does, plus one naming the unmatched.
    """
    if identifier not in _MOODLE_IDENTIFIERS:
        raise ValueError(f"identifier must be one of {sorted(_MOODLE_IDENTIFIERS)}, "
                         f"got {identifier!r}")
    roster = read_roster(roster)
    book = _gradebook(_results(results), roster, missing)
    names = read_assignment_map(assignment_map)
    headers = [names.get(a, {"name": a})["name"] for a in book.columns]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    unmatched = [e for e in roster.values() if not getattr(e, identifier)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([_MOODLE_IDENTIFIERS[identifier], *headers])
        for e in roster.values():
            if getattr(e, identifier):
                writer.writerow([getattr(e, identifier),
                                 *(book.cells[e.folder][a] for a in book.columns)])
    side = path.with_name(f"{path.stem}-unmatched.csv")
    with side.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["folder", "name", "section", *headers])
        for e in unmatched:
            writer.writerow([_text(e.folder), e.name, e.section,
                             *(book.cells[e.folder][a] for a in book.columns)])
    warnings = list(book.warnings)
    if unmatched:
        warnings.append(f"no {identifier} for {', '.join(repr(e.folder) for e in unmatched)}: "
                        f"not in {path.name}, listed in {side.name} (enter them by hand)")
    return warnings


def _hidden_checks(source, names) -> tuple:
    """``({(assignment, check) with hidden tests}, {assignment: hidden source lines})`` of
    the assignments ``names`` in ``source``."""
    from crowdlearn_grader.assignments import find_assignments, grade_cells, read_assignment
    from crowdlearn_grader.scoring import _hidden_lines

    checks, lines = set(), {}
    for name, p in find_assignments(source).items():
        if name not in names:
            continue
        nb = read_assignment(p)
        checks |= {(name, cid) for cid, _, hidden in grade_cells(nb) if hidden}
        lines[name] = _hidden_lines(nb)
    return checks, lines


def gradescope_results(rows, *, hidden_checks=(), hidden_lines=(),
                       hidden_visibility: str = "after_published") -> dict:
    """The Gradescope ``results.json`` content of one submission (its CheckResult ``rows``):
    one test per check, in order; ``hidden_checks`` are the check ids that hold hidden
    tests (given ``hidden_visibility``), ``hidden_lines`` the hidden tests' source lines,
    cut out of every message."""
    from crowdlearn_grader.scoring import _redact

    if hidden_visibility not in _VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {_VISIBILITIES}, "
                         f"got {hidden_visibility!r}")
    tests = []
    for r in rows:
        test = {"name": r.check, "score": r.points, "max_score": r.max_points,
                "output": _redact(r.feedback, set(hidden_lines)),
                "visibility": hidden_visibility if r.check in hidden_checks else "visible"}
        if not awaiting_mark(r):
            test["status"] = "passed" if r.points >= r.max_points else "failed"
        tests.append(test)
    score = sum(r.points for r in rows)
    most = sum(r.max_points for r in rows)
    waiting = sum(r.max_points for r in rows if awaiting_mark(r))
    name = rows[0].assignment if rows else ""
    return {"score": score, "output": f"{name}: {_score_line(score, most, waiting)}",
            "stdout_visibility": "hidden", "tests": tests}
