"""Scoring an executed notebook: one :class:`CheckResult` per check, the check's own words
as feedback (never a hidden test's source), the cheating policy, and the instructor's marks
for the hand-graded cells."""

from __future__ import annotations

import csv
import os
from typing import NamedTuple

from crowdlearn_grader.assignments import _HIDDEN_REGION, _nbgrader_meta
from crowdlearn_grader.submissions import _is_check

__all__ = ["CheckResult", "GradeResults", "HAND_GRADED", "UNMARKED", "apply_marks",
           "awaiting_mark", "read_marks"]


class CheckResult(NamedTuple):
    """The grade of one check (an nbgrader grade cell) of one submission."""

    submission: str   # the student folder
    assignment: str   # the notebook's name, e.g. "a2_dawid_skene_by_hand"
    check: str        # the grade cell's grade_id
    points: float     # points earned
    max_points: float
    feedback: str     # "ok", or what went wrong (the check's message)



def _last_error(cells) -> tuple:
    """``(grade_id, exception name)`` of the last cell before a check that raised, other
    checks aside (the student's code the check depends on, most likely)."""
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
    """The check's own words: its assertion message, or what kept it from running.

    Only errors count: what a cell writes to stderr (a warning, say) is not a failure."""
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
    results = []
    position = {}
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
                text = UNMARKED
                results.append(CheckResult(student, name, gid, 0.0, float(meta["points"]),
                                           _with_notes(text, pending)))
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
    notes = list(dict.fromkeys(notes))
    return text + "".join(f" (note: {n})" for n in notes)


def _review(results: list, merged, name: str, instructor=None) -> tuple:
    """What the static audit (``crowdlearn_grader.review.flagged_checks``) says about this
    submission, for the instructor to review: ``([(student, assignment, check, reason)],
    error or None)``. It never changes a score: the checks run in the grader's process
    (:mod:`~crowdlearn_grader.trusted`), so what the student's code does in its kernel
    cannot fake a result, and a false alarm must not cost an honest student points."""
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
    """The :class:`CheckResult` list :func:`grade` returns; ``.ungraded`` lists the
    ``(student, assignment, reason)`` of submissions the grader itself failed on, ``.review``
    the ``(student, assignment, check, reason)`` the static audit flagged for the instructor
    to look at (they change no score)."""

    ungraded: list
    review: list

    def __init__(self, items=(), ungraded=(), review=()):
        super().__init__(items)
        self.ungraded = list(ungraded)
        self.review = list(review)


HAND_GRADED = "graded by hand"
UNMARKED = f"{HAND_GRADED}: not scored automatically"
_MARK_COLUMNS = ("student", "assignment", "check", "points")


def awaiting_mark(result) -> bool:
    """True if ``result`` is a hand-graded cell the instructor has not marked yet (its 0
    points are not a loss, only pending)."""
    return result.feedback.startswith(UNMARKED)


def read_marks(marks) -> list:
    """The rows of a marks CSV file (a list of dicts), checked before any grading: a
    ``ValueError`` if the file does not exist, cannot be read, or lacks one of the columns
    ``student``, ``assignment``, ``check``, ``points``. A list of dicts is returned as is."""
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
    """``results`` with every earlier mark taken back (a marks file is the complete set of
    marks: applied again, it replaces the old ones)."""
    out = [r._replace(points=0.0, feedback=UNMARKED)
           if r.feedback.startswith(f"{HAND_GRADED}: ") and not awaiting_mark(r) else r
           for r in results]
    return GradeResults(out, getattr(results, "ungraded", []), getattr(results, "review", []))


def apply_marks(results, marks) -> GradeResults:
    """Put the instructor's marks for the hand-graded cells (written derivations) into
    ``results``.

    ``marks`` is a CSV file (or a list of dicts) with columns ``student``, ``assignment``,
    ``check`` (the answer cell's grade_id), ``points`` and optionally ``comment``. Each row
    must name a hand-graded cell of a graded submission, with ``0 <= points <= max``;
    anything else is a ``ValueError`` naming the row, so that a typo never silently
    leaves a mark out. Cells without a mark keep 0 points and say they await one.
    """
    rows = read_marks(marks)
    index = {(r.submission, r.assignment, r.check): i for i, r in enumerate(results)}
    out = list(results)
    seen = set()
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
