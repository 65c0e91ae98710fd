"""Scoring an executed notebook: a :class:`CheckResult` per check with the check's own words
(never a hidden test's source), and the instructor's marks for the hand-graded cells."""

from __future__ import annotations

import csv
import os
from typing import NamedTuple

from crowdlearn_grader.assignments import _HIDDEN_REGION, _nbgrader_meta
from crowdlearn_grader.submissions import _is_check

__all__ = ["CheckResult", "GradeResults", "HAND_GRADED", "UNMARKED", "apply_marks",
           "awaiting_mark", "read_marks"]
HAND_GRADED = "graded by hand"
UNMARKED = f"{HAND_GRADED}: not scored automatically"
_MARK_COLUMNS = ("student", "assignment", "check", "points")


class CheckResult(NamedTuple):
    """The grade of one check (an nbgrader grade cell) of one submission."""
    submission: str   # the student folder
    assignment: str   # the notebook's name, e.g. "a2_dawid_skene_by_hand"
    check: str        # the grade cell's grade_id
    points: float     # points earned
    max_points: float
    feedback: str     # "ok", or what went wrong (the check's message)


def _last_error(cells) -> tuple:
    """``(grade_id, exception name)`` of the last non-check cell before a check that raised."""
    for cell in reversed(cells):
        if _is_check(_nbgrader_meta(cell)):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                gid = _nbgrader_meta(cell).get("grade_id", "")
                return gid.split("#")[0], out.get("ename", "")
    return None, None


def _limit_error(cells) -> str:
    """The message of the last sandbox limit an earlier cell hit (``LimitExceeded``)."""
    for cell in reversed(cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") == "LimitExceeded":
                return out.get("evalue", "").split(": ")[0]
    return "exceeded a limit"


def _feedback(cell, earlier, points: float, max_points: float) -> str:
    """The check's own words: its assertion message, or the error that kept it from running."""
    outputs = cell.get("outputs", [])
    for out in outputs:
        if out.get("output_type") != "error":
            continue
        ename, evalue = out.get("ename", ""), out.get("evalue", "").strip()
        if ename == "AssertionError":
            return evalue or "a check failed (an assertion without a message)"
        if ename == "NotImplementedError":
            return "not done yet: the code still raises NotImplementedError"
        if ename in ("TimeLimit", "KernelDied", "NotRun"):
            return evalue
        message = f"{ename}: {evalue}" if evalue else ename
        where, what = _last_error(earlier)
        if what == "LimitExceeded":
            return f"{_limit_error(earlier)} in cell {where or 'your own code'!r} ({message})"
        if where is not None and what == "NotImplementedError":
            return f"not done yet: cell {where!r} still raises NotImplementedError ({message})"
        if where is not None:
            return f"{message} (an earlier cell, {where or 'your own code'!r}, raised {what})"
        return message
    if points < max_points:
        return "the check did not pass"
    return "ok"


def _hidden_lines(nb) -> set:
    lines = set()
    for cell in nb.cells:
        for m in _HIDDEN_REGION.finditer(cell.source):
            lines.update(s.strip() for s in m.group(0).splitlines()
                         if len(s.strip()) >= 12 and not s.strip().startswith("###"))
    return lines


def _redact(text: str, hidden: set) -> str:
    """``text`` with any line of a hidden test's source cut out (a SyntaxError echoes code)."""
    for line in hidden:
        if line in text:
            text = text.replace(line, "[hidden test]")
    return text


def _score(executed, instructor, name: str, student: str, notes: dict, missing: set,
           hidden: set) -> list:
    results, position = [], {}
    for i, cell in enumerate(executed.cells):
        position.setdefault(_nbgrader_meta(cell).get("grade_id"), i)
    pending = list(notes.get(None, []))
    for cell in instructor.cells:
        meta = _nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if gid is None:
            continue
        if not _is_check(meta):
            pending += notes.get(gid, [])
            if meta.get("grade"):   # graded by hand (an answer cell or a task)
                results.append(CheckResult(student, name, gid, 0.0, float(meta["points"]),
                                           _with_notes(UNMARKED, pending)))
                pending = []
            continue
        pts = float(meta["points"])
        own = notes.get(gid, [])
        if gid in missing:  # graded on its merits: the instructor's cell was run
            own = [*own, "this check cell was missing from your notebook (deleted?): the "
                   "instructor's cell was run in its place"]
        i = position[gid]
        ran = executed.cells[i]
        failed = any(o.get("output_type") == "error" for o in ran.get("outputs", []))
        score = 0.0 if failed else pts
        text = _redact(_feedback(ran, executed.cells[:i], score, pts), hidden)
        results.append(CheckResult(student, name, gid, score, pts,
                                   _with_notes(text, pending + own)))
        pending = []
    return results


def _with_notes(text: str, notes) -> str:
    return text + "".join(f" (note: {n})" for n in dict.fromkeys(notes))


def _review(results: list, merged, name: str, instructor=None) -> tuple:
    """``([(student, assignment, check, reason)], error)`` of the audit; no score changes."""
    try:
        from crowdlearn_grader.review import flagged_checks
    except ImportError:
        return [], None
    try:
        flagged = dict(flagged_checks(merged, name, instructor=instructor) or {})
    except Exception as exc:  # the audit must not keep a class from being graded
        return [], f"the audit failed: {type(exc).__name__}: {exc}"
    if not results:
        return [], None
    student = results[0].submission
    return [(student, name, check, str(why)) for check, why in flagged.items()], None


class GradeResults(list):
    """CheckResults, with ``.ungraded`` (grader failures) and ``.review`` (audit notes)."""
    ungraded: list
    review: list

    def __init__(self, items=(), ungraded=(), review=()):
        super().__init__(items)
        self.ungraded = list(ungraded)
        self.review = list(review)


def awaiting_mark(result) -> bool:
    """True if ``result`` is a hand-graded cell not marked yet (its 0 is pending)."""
    return result.feedback.startswith(UNMARKED)


def read_marks(marks) -> list:
    """The rows (dicts) of a marks CSV; ValueError if it is missing, unreadable or lacks a
    column of student, assignment, check, points. A list of dicts is returned as is."""
    if not isinstance(marks, (str, os.PathLike)):
        return [dict(r) for r in marks]
    if not os.path.isfile(marks):
        raise ValueError(f"marks file {os.fspath(marks)!r} does not exist (expected a CSV "
                         "with columns student,assignment,check,points[,comment])")
    try:
        with open(marks, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            header = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"cannot read the marks file {os.fspath(marks)!r}: {exc}") from None
    lacking = [c for c in _MARK_COLUMNS if c not in header]
    if lacking:
        raise ValueError(f"marks file {os.fspath(marks)!r} lacks the column(s) {lacking}; "
                         f"its header is {header}")
    return rows


def _unmark(results) -> GradeResults:
    """``results`` with every earlier mark taken back (a marks file is the complete set)."""
    out = [r._replace(points=0.0, feedback=UNMARKED)
           if r.feedback.startswith(f"{HAND_GRADED}: ") and not awaiting_mark(r) else r
           for r in results]
    return GradeResults(out, getattr(results, "ungraded", []), getattr(results, "review", []))


def apply_marks(results, marks) -> GradeResults:
    """``results`` with the instructor's marks (CSV or dicts: student, assignment, check,
    points[, comment]) for the hand-graded cells; a row that names no such cell, or points
    outside ``0..max``, is a ValueError. Cells without a mark keep 0, awaiting one."""
    rows, out, seen = read_marks(marks), list(results), set()
    index = {(r.submission, r.assignment, r.check): i for i, r in enumerate(results)}
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            key = (row["student"], row["assignment"], row["check"])
            raw = row["points"]
        except (KeyError, TypeError):
            raise ValueError(f"marks line {n}: needs the columns student, assignment, check, "
                             f"points; got {row!r}") from None
        if key not in index:
            raise ValueError(f"marks line {n}: no graded submission has {key!r}")
        if key in seen:
            raise ValueError(f"marks line {n}: {key!r} is marked twice")
        seen.add(key)
        r = out[index[key]]
        if not r.feedback.startswith(HAND_GRADED):
            raise ValueError(f"marks line {n}: {r.check!r} of {r.assignment} is an automatic "
                             "check, not a hand-graded answer")
        try:
            points = float(raw)
        except (TypeError, ValueError):
            points = float("nan")
        if not 0 <= points <= r.max_points:
            raise ValueError(f"marks line {n}: points must be between 0 and {r.max_points:g}, "
                             f"got {raw!r}")
        comment = (row.get("comment") or "").strip()
        out[index[key]] = r._replace(
            points=points,
            feedback=f"{HAND_GRADED}: {points:g} / {r.max_points:g}"
                     + (f". {comment}" if comment else ""))
    return GradeResults(out, getattr(results, "ungraded", []), getattr(results, "review", []))
