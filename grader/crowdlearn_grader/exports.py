r"""Gradebook exports: Canvas and Moodle CSVs from graded results and a roster
(:func:`read_roster`), and Gradescope's ``results.json`` (:func:`gradescope_results`). A grade
is never lost silently: a graded student missing from the roster is a ValueError, and what is
left empty or pending is named in warnings. Formats: README, "Teaching with the book".
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from crowdlearn_grader.reports import (_score_line, _slug, _totals, not_graded, read_results)
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
    """``folder -> RosterEntry`` from a CSV file or RosterEntry/dicts, in order. ValueError for
    a missing file or ``folder`` column, an empty or repeated folder, or a shared id."""
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
    """``assignment -> {"name", "canvas_id"}`` from a CSV (assignment,name,canvas_id) or a
    dict; ValueError for a repeated assignment or a non-numeric id."""
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
    """A folder name as a spreadsheet cell: an apostrophe before a formula's first char."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@") else value


def _num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


class _Gradebook(NamedTuple):
    columns: list     # assignments, sorted
    maxima: dict      # assignment -> points possible
    cells: dict       # folder -> assignment -> "12.5" or "" (no grade)
    warnings: list

    def row(self, entry) -> list:
        return [self.cells[entry.folder][a] for a in self.columns]


def _write_csv(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


def _gradebook(results, roster, missing: str, assignment_map) -> tuple:
    """``(roster, _Gradebook, assignment map)``: the class's points per roster entry and
    assignment, checked against the roster."""
    roster = read_roster(roster)
    results = read_results(results) if isinstance(results, (str, os.PathLike)) else results
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
    return roster, _Gradebook(columns, maxima, cells, warnings), read_assignment_map(
        assignment_map)


def write_canvas(results, roster, path, *, assignment_map=None, missing: str = "blank") -> list:
    """Write a Canvas gradebook import CSV from ``results`` (or the report's ``.json``);
    ``missing`` ("blank" or "zero") is what a roster entry without a submission gets.
    Returns the warnings (no submission, not graded, marks pending)."""
    roster, book, names = _gradebook(results, roster, missing, assignment_map)
    maps = [names.get(a, {"name": a, "canvas_id": ""}) for a in book.columns]
    headers = [f"{m['name']} ({m['canvas_id']})" if m["canvas_id"] else m["name"] for m in maps]
    warnings = list(book.warnings)
    no_id = [e.folder for e in roster.values() if not (e.id or e.sis_user_id or e.sis_login_id)]
    if no_id:
        warnings.append(f"no ID, SIS User ID or SIS Login ID for {', '.join(map(repr, no_id))}: "
                        "Canvas may not match their rows")
    maxima = ["Points Possible", "", "", "", "", *(_num(book.maxima[a]) for a in book.columns)]
    _write_csv(Path(path), [[*CANVAS_COLUMNS, *headers], maxima, *(
        [e.name or _text(e.folder), e.id, e.sis_user_id, e.sis_login_id, e.section, *book.row(e)]
        for e in roster.values())])
    return warnings


def write_moodle(results, roster, path, *, identifier: str = "email", assignment_map=None,
                 missing: str = "blank") -> list:
    """Write a Moodle grade-import CSV keyed by ``identifier`` ("email" or "idnumber");
    entries without it go to ``<stem>-unmatched.csv``. Returns the warnings."""
    if identifier not in _MOODLE_IDENTIFIERS:
        raise ValueError(f"identifier must be one of {sorted(_MOODLE_IDENTIFIERS)}, "
                         f"got {identifier!r}")
    roster, book, names = _gradebook(results, roster, missing, assignment_map)
    headers = [names.get(a, {"name": a})["name"] for a in book.columns]
    path, unmatched = Path(path), [e for e in roster.values() if not getattr(e, identifier)]
    _write_csv(path, [[_MOODLE_IDENTIFIERS[identifier], *headers], *(
        [getattr(e, identifier), *book.row(e)] for e in roster.values()
        if getattr(e, identifier))])
    side = path.with_name(f"{path.stem}-unmatched.csv")
    _write_csv(side, [["folder", "name", "section", *headers],
                      *([_text(e.folder), e.name, e.section, *book.row(e)] for e in unmatched)])
    warnings = list(book.warnings)
    if unmatched:
        warnings.append(f"no {identifier} for {', '.join(repr(e.folder) for e in unmatched)}: "
                        f"not in {path.name}, listed in {side.name} (enter them by hand)")
    return warnings


def _hidden_checks(source, names) -> tuple:
    """``({(assignment, check) with hidden tests}, {assignment: hidden lines})``."""
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
    """Gradescope's ``results.json`` for one submission's ``rows``, a test per check."""
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
