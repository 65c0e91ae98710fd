"""What grading writes: the per-check report (CSV and JSON), the per-student totals for a
gradebook, and each student's feedback files."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from crowdlearn_grader.scoring import CheckResult, GradeResults, awaiting_mark

__all__ = ["write_report", "write_totals", "write_feedback", "read_results"]


def _slug(name: str) -> str:
    """A file-system-safe folder name for a student (the CSV keeps the real one)."""
    import hashlib
    safe = re.sub(r"[^A-Za-z0-9._@+-]+", "_", name).strip("._-") or "student"
    if safe != name:
        digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        safe = f"{safe[:60]}-{digest}"
    return safe


def _totals(results, pending: bool = False) -> list:
    """Per submission: ``points``, ``max_points`` (and with ``pending``, ``to_be_marked``)."""
    totals = {}
    for r in results:
        t = totals.setdefault((r.submission, r.assignment), [0.0, 0.0, 0.0])
        t[0] += r.points
        t[1] += r.max_points
        t[2] += r.max_points if awaiting_mark(r) else 0.0
    return [{"submission": s, "assignment": a, "points": p, "max_points": m,
             **({"to_be_marked": w} if pending else {})}
            for (s, a), (p, m, w) in totals.items()]


def _score_line(points: float, max_points: float, to_be_marked: float) -> str:
    """``"8 / 14"``, or ``"8 / 10 so far, 4 points to be marked by hand"``."""
    if not to_be_marked:
        return f"{points:g} / {max_points:g}"
    return (f"{points:g} / {max_points - to_be_marked:g} so far, "
            f"{to_be_marked:g} points to be marked by hand")


def read_results(path) -> GradeResults:
    """GradeResults from a report's JSON or a ``crowdlearn-course.json`` (else ValueError)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        path = path.with_suffix(".json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["checks"] if "checks" in data else data["results"]
        results = [CheckResult(**r) for r in rows]
    except FileNotFoundError:
        raise ValueError(f"no graded results at {path} (run grade with --report first)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} holds no grading results "
                         f"({type(exc).__name__}: {exc})") from None
    return GradeResults(results, [tuple(u) for u in data.get("ungraded", [])],
                        [tuple(r) for r in data.get("review", [])])


def write_report(results, path) -> tuple:
    """Write ``results`` as CSV to ``path``, as JSON next to it, and the audit's notes as
    ``<stem>-review.csv``; returns the CSV and JSON paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CheckResult._fields)
        writer.writerows(results)
    json_path, review = path.with_suffix(".json"), getattr(results, "review", [])
    json_path.write_text(json.dumps(
        {"checks": [r._asdict() for r in results], "totals": _totals(results),
         "ungraded": [list(u) for u in getattr(results, "ungraded", [])],
         "review": [list(r) for r in review]}, indent=1) + "\n", encoding="utf-8")
    with path.with_name(f"{path.stem}-review.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "check", "reason"])
        writer.writerows(review)
    return path, json_path


def not_graded(results) -> set:
    """``(student, assignment)`` not graded: their cells are left empty, never 0."""
    found = {(s, a) for s, a, *_ in getattr(results, "ungraded", [])}
    return found | {(r.submission, r.assignment) for r in results
                    if str(r.feedback or "").startswith("not graded")}


def write_totals(results, path, known=None) -> Path:
    """A CSV row per student, a column per assignment (empty if none) and ``total``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    per, empty = {}, not_graded(results)
    for t in _totals(results):
        key = (t["submission"], t["assignment"])
        per.setdefault(key[0], {})[key[1]] = None if key in empty else t["points"]
    columns = sorted({a for row in per.values() for a in row})
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", *columns, "total"])
        for student in sorted(per):
            row = per[student]
            writer.writerow([student, *(f"{row[a]:g}" if row.get(a) is not None else ""
                                        for a in columns),
                             f"{sum(v for v in row.values() if v is not None):g}"])
    return path


def write_feedback(results, folder) -> list:
    """``folder/<student>/<assignment>.txt`` and ``.html``: each check's points and message."""
    import html
    folder = Path(folder)
    by = {}
    for r in results:
        by.setdefault((r.submission, r.assignment), []).append(r)
    written = []
    for (student, name), rows in by.items():
        out = folder / _slug(student)
        out.mkdir(parents=True, exist_ok=True)
        got, most = sum(r.points for r in rows), sum(r.max_points for r in rows)
        waiting = sum(r.max_points for r in rows if awaiting_mark(r))
        lines = [f"{name}: {got:g} / {most:g} points" + (
            f" ({waiting:g} of them to be marked by hand)" if waiting else ""), ""]
        lines += [f"{r.check}: {r.points:g} / {r.max_points:g} -- {r.feedback}" for r in rows]
        (out / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        table = "".join(f"<tr><td>{html.escape(r.check)}</td><td>{r.points:g} / "
                        f"{r.max_points:g}</td><td>{html.escape(r.feedback)}</td></tr>"
                        for r in rows)
        (out / f"{name}.html").write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(name)}"
            f"</title></head><body><h1>{html.escape(name)}: {got:g} / {most:g}</h1>"
            f"<table><tr><th>check</th><th>points</th><th>feedback</th></tr>{table}</table>"
            "</body></html>\n", encoding="utf-8")
        written.append(out / f"{name}.txt")
    return written

