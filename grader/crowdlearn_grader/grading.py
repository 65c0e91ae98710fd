"""Grading a class (:func:`grade`): every submission merged, executed in the sandbox and
scored, ``jobs`` at once in worker processes; :func:`remark` applies hand marks later."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import sys
import time
from pathlib import Path

from crowdlearn_grader.assignments import (_select, find_assignments, grade_cells, read_assignment)
from crowdlearn_grader.releasing import _write_ipynb
from crowdlearn_grader.reports import (_slug, read_results, write_feedback, write_report,
                                         write_totals)
from crowdlearn_grader.sandbox import Limits, _execute, check_sandbox, probe_sandbox
from crowdlearn_grader.scoring import (CheckResult, GradeResults, _review,
                                          _hidden_lines, _score, _unmark, apply_marks,
                                          read_marks)
from crowdlearn_grader.submissions import (_Refused, _find_submissions, _merge, _read_submission)

__all__ = ["grade", "remark", "submission_status"]

_LOG = logging.getLogger("crowdlearn_grader")
_PROGRESS = logging.getLogger("crowdlearn_grader.progress")  # a line per submission
_INSTRUCTORS: dict = {}  # a worker's instructor notebooks, read once


def grade(submissions, source=None, *, assignments=None, report=None, course_dir=None,
          timeout: int = 120, jobs: int = 1, verbose: bool = False, sandbox: bool = True,
          totals=None, feedback=None, marks=None, limits=None, only=None,
          progress: bool = False) -> GradeResults:
    """Execute and grade every ``<student>/<assignment>.ipynb`` in ``submissions``: the
    instructor's notebook from ``source`` (default ``book/assignments``) with the student's
    answer cells, each in the sandbox within ``limits`` (``sandbox=False`` runs it with your
    rights, and warns); ``timeout`` seconds per cell; ``jobs`` worker processes. Writes
    ``report`` (CSV and JSON), ``totals`` and ``feedback``; ``course_dir`` keeps results
    across runs; ``marks`` are checked before grading. Returns one CheckResult per check; a
    submission that cannot be graded scores 0 and is in ``.ungraded``."""
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if marks is not None:  # a missing or malformed marks file stops us before grading
        marks = read_marks(marks)
    limits = (limits or Limits()).checked()
    bwrap = _sandbox_or_warning(sandbox)
    known = find_assignments(source)
    subs = _submissions_to_grade(Path(submissions), known, assignments, only)
    names = {a: known[a] for a in sorted({a for _, a in subs})}
    root = _open_course(Path(course_dir)) if course_dir is not None else None
    results = _run(subs, names, timeout, jobs, bwrap, limits,
                   root / "autograded" if root is not None else None, progress)
    if root is not None:
        results = _merge_course(root, results)
    return _mark_and_write(results, marks, known, report=report, totals=totals,
                           feedback=feedback, root=root)


def _run(subs, names, timeout, jobs, bwrap, limits, keep, progress) -> GradeResults:
    """``subs`` graded here or, with ``jobs > 1``, in worker processes; progress shown."""
    shown = _Progress(len(subs), bar=progress)
    try:
        if jobs > 1 and len(subs) > 1:
            return _grade_in_parallel(subs, names, timeout, jobs, bwrap, limits, keep=keep,
                                      shown=shown)
        with _probed_packages(names, bwrap, limits) as packages:
            return _grade(subs, names, timeout, bwrap, keep=keep, limits=limits,
                          packages=packages, shown=shown)
    finally:
        shown.close()


def _mark_and_write(results, marks, known, *, report, totals, feedback, root) -> GradeResults:
    """``results`` with ``marks`` applied, written (without the marks if one does not apply)."""
    try:
        marked = apply_marks(results, marks) if marks is not None else results
    except ValueError as err:  # keep the grading: write the reports without the marks
        _write_outputs(results, known, report=report, totals=totals, feedback=feedback, root=root)
        raise ValueError(f"{err}. The reports were written WITHOUT the marks; fix the marks "
                         "file and apply it with `python3 -m crowdlearn_grader mark` "
                         "(no grading again)") from None
    _write_outputs(marked, known, report=report, totals=totals, feedback=feedback, root=root)
    return marked


def remark(marks, *, report, course_dir=None, totals=None, feedback=None) -> GradeResults:
    """Apply ``marks`` (the complete set) to results graded earlier (``report``'s ``.json``,
    or ``course_dir``), without running any submission again; write the outputs anew."""
    rows, report = read_marks(marks), Path(report)
    root = Path(course_dir).resolve() if course_dir is not None else None
    stored = root / "crowdlearn-course.json" if root else report.with_suffix(".json")
    if not stored.is_file():
        raise ValueError(f"{root} is not a crowdlearn course directory (no {stored.name})"
                         if root else f"no graded results at {stored}: run `grade` with "
                         f"--report {report} first")
    marked = apply_marks(_unmark(read_results(stored)), rows)
    _write_outputs(marked, None, report=report, totals=totals, feedback=feedback, root=root)
    return marked


@contextlib.contextmanager
def _probed_packages(names: dict, bwrap, limits):
    """``assignment -> its probed sandbox package copy``, removed at the end (or empty)."""
    import shutil
    from crowdlearn_grader.assignments import withheld_names
    from crowdlearn_grader.withheld import package_copy
    made = {}
    try:
        if bwrap is not None:
            for name in names:
                made[name] = package_copy(name, withheld_names(read_assignment(names[name])))
            for name, package in made.items():
                probe_sandbox(bwrap, limits, _package_modules({name: names[name]}), package)
        yield made
    finally:
        for top in made.values():
            shutil.rmtree(top.parent, ignore_errors=True)


def _sandbox_or_warning(sandbox: bool) -> str | None:
    """The ``bwrap`` to use, or None with a warning when grading without a sandbox."""
    if sandbox:
        return check_sandbox()
    print("warning: grading WITHOUT a sandbox (--no-sandbox): the students' code runs "
          "with your rights and can read the instructor's notebooks, change files and "
          "use the network", file=sys.stderr)
    return None


def _package_modules(names: dict) -> list:
    """The ``crowdlearn*`` modules the notebooks import (not ``crowdlearn_checks.*``)."""
    found = set()
    for path in names.values():
        for cell in read_assignment(path).cells:
            if cell.cell_type == "code":
                found.update(re.findall(r"^\s*(?:from|import)\s+(crowdlearn[\w.]*)",
                                        cell.source, flags=re.M))
    return sorted(m for m in found if not m.startswith("crowdlearn_checks."))


def submission_status(results) -> dict:
    """``(student, assignment) -> "graded"``, or "limit exceeded: ...", "kernel died: ...",
    "time limit: ..." or "not graded: ..." with the first message that says so."""
    why = {(s, a): w for s, a, w in getattr(results, "ungraded", [])}
    status = {}
    for r in results:
        key = (r.submission, r.assignment)
        text = r.feedback or ""
        if key in why:
            found = f"not graded: {why[key]}"
        elif text.startswith("not graded"):
            found = text
        elif "LimitExceeded" in text or "exceeded the" in text:
            found = f"limit exceeded: {text}"
        elif "the kernel died" in text or "KernelDied" in text:
            found = f"kernel died: {text}"
        elif "time limit" in text:
            found = f"time limit: {text}"
        else:
            found = "graded"
        if status.get(key, "graded") == "graded":
            status[key] = found
    return status


def _submissions_to_grade(submissions: Path, known: dict, assignments, only=None) -> dict:
    """``(student, assignment) -> path`` (or :class:`_Refused`) to grade."""
    chosen = _select(known, assignments)
    subs = {}
    for (student, name), path in _find_submissions(submissions, known).items():
        for a in ([name] if name is not None else sorted(chosen)):
            if a in chosen:
                subs[(student, a)] = path
    if only is not None:
        wanted = {tuple(pair) for pair in only}
        subs = {key: path for key, path in subs.items() if key in wanted}
    if not subs:
        raise ValueError(f"no submissions of {sorted(chosen)} in {submissions}"
                         + (" among those to grade (--only)" if only is not None else ""))
    return subs


def _write_outputs(results, known: dict, *, report, totals, feedback, root) -> None:
    """The report, the totals and the feedback files :func:`grade` was asked for."""
    if report is not None:
        report = Path(report)
        write_report(results, report)
        write_totals(results, totals or report.with_name(f"{report.stem}-totals.csv"), known)
        feedback = feedback or (root / "feedback" if root is not None
                                else report.with_name("feedback"))
    elif totals is not None:
        write_totals(results, totals, known)
    if feedback is not None:
        write_feedback(results, feedback)


def _open_course(root: Path) -> Path:
    root = root.resolve()
    marker = root / "crowdlearn-course.json"
    if root.exists() and any(root.iterdir()) and not marker.exists():
        raise ValueError(f"course_dir {root} is not empty and is not a crowdlearn course "
                         f"directory (no {marker.name})")
    root.mkdir(parents=True, exist_ok=True)
    if not marker.exists():
        marker.write_text(json.dumps({"results": []}) + "\n", encoding="utf-8")
    return root


def _merge_course(root: Path, results) -> GradeResults:
    """The course's earlier results with this run's replacing theirs, saved back, sorted."""
    marker = root / "crowdlearn-course.json"
    old = [CheckResult(**r) for r in json.loads(marker.read_text(encoding="utf-8"))["results"]]
    fresh = {(r.submission, r.assignment) for r in results}
    merged = [r for r in old if (r.submission, r.assignment) not in fresh] + list(results)
    merged.sort(key=lambda r: (r.submission, r.assignment))
    marker.write_text(json.dumps({"results": [r._asdict() for r in merged]}, indent=1) + "\n",
                      encoding="utf-8")
    return GradeResults(merged, getattr(results, "ungraded", []), getattr(results, "review", []))


def _grade_in_parallel(subs: dict, names: dict, timeout: int, jobs: int, bwrap, limits,
                       keep=None, shown=None) -> GradeResults:
    """Grade ``subs`` in ``jobs`` spawned workers (each its own sandbox uid), in order."""
    import concurrent.futures as cf
    import multiprocessing
    shown = shown or _Progress(len(subs))
    done, ungraded, review = {}, [], []
    with _probed_packages(names, bwrap, limits) as packages, cf.ProcessPoolExecutor(
            min(jobs, len(subs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_grade_task, student, name, path, names[name], timeout, bwrap,
                               keep, limits, packages.get(name)): (student, name)
                   for (student, name), path in subs.items()}
        for future in cf.as_completed(futures):
            student, name = futures[future]
            try:
                rows, failed, notes, seconds = future.result()
            except Exception as exc:  # the worker itself died: say so, go on
                why = f"the grading process failed ({type(exc).__name__}: {exc})"[:300]
                checks = grade_cells(read_assignment(names[name]))
                rows, failed, notes, seconds = (
                    [CheckResult(student, name, cid, 0.0, pts,
                                 f"not graded (grader error, ask your instructor): {why}")
                     for cid, pts, _ in checks], [(student, name, why)], [], 0.0)
            done[(student, name)], ungraded, review = rows, ungraded + failed, review + notes
            shown.step(student, name, rows, seconds)
    return GradeResults([r for key in subs for r in done[key]], ungraded, review)


def _grade_task(student, name, path, instructor_path, timeout, bwrap, keep, limits, package):
    """One submission, in a worker process: ``(results, ungraded, review, seconds)``."""
    if instructor_path not in _INSTRUCTORS:
        nb = read_assignment(instructor_path)
        _INSTRUCTORS[instructor_path] = nb, _hidden_lines(nb)
    instructor, hidden = _INSTRUCTORS[instructor_path]
    start = time.perf_counter()
    results, ungraded, review = [], [], []
    _grade_one(student, name, path, instructor, hidden, timeout, bwrap, keep, limits,
               results, ungraded, package, review)
    return results, ungraded, review, time.perf_counter() - start


class _Progress:
    """A tqdm bar on a terminal (``bar``), else a line per submission to the progress log."""

    def __init__(self, total: int, bar: bool = False):
        self.total, self.count, self.start = total, 0, time.perf_counter()
        self.bar = None
        if bar and sys.stderr.isatty():
            with contextlib.suppress(ImportError):
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="submission", file=sys.stderr,
                                dynamic_ncols=True)

    def step(self, student, name, rows, seconds: float) -> None:
        self.count += 1
        points, most = sum(r.points for r in rows), sum(r.max_points for r in rows)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{student} {name}: {points:g}/{most:g}", refresh=False)
            self.bar.update(1)
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.count * (self.total - self.count)
        _PROGRESS.info("[%d/%d] %r %s: %g / %g points (%.0f s); %s", self.count, self.total,
                       student, name, points, most, seconds,
                       f"about {_duration(left)} left" if self.count < self.total
                       else f"all done in {_duration(elapsed)}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _grade(subs: dict, names: dict, timeout: int, bwrap, keep=None,
           limits=None, packages=None, shown=None) -> GradeResults:
    """Each submission: merged with the instructor's notebook, executed (sandboxed), scored."""
    instructors = {name: read_assignment(path) for name, path in names.items()}
    hidden = {name: _hidden_lines(nb) for name, nb in instructors.items()}
    shown = shown or _Progress(len(subs))
    results, ungraded, review = [], [], []
    for (student, name), path in subs.items():
        start, before = time.perf_counter(), len(results)
        _grade_one(student, name, path, instructors[name], hidden[name], timeout, bwrap, keep,
                   limits, results, ungraded, (packages or {}).get(name), review)
        shown.step(student, name, results[before:], time.perf_counter() - start)
    return GradeResults(results, ungraded, review)


def _grade_one(student, name, path, instructor, hidden, timeout, bwrap, keep, limits,
               results: list, ungraded: list, package=None, review=None) -> None:
    """One submission's CheckResults appended to ``results`` (``ungraded`` if it failed)."""
    checks = grade_cells(instructor)
    review = [] if review is None else review

    def zero(why):
        return [CheckResult(student, name, cid, 0.0, pts, why) for cid, pts, _ in checks]
    if isinstance(path, _Refused):
        ungraded.append((student, name, path.reason))
        results += zero(f"not graded: {path.reason}")
        return
    try:
        nb = _read_submission(path)
    except Exception as exc:  # not a notebook at all: 0 here, an empty cell in the exports
        first = (str(exc).strip().splitlines() or [""])[0]
        why = f"the file is not a notebook ({type(exc).__name__}: {first})"
        ungraded.append((student, name, why))
        results += zero(f"not graded: {why}")
        return
    try:
        merged, notes, missing = _merge(instructor, nb)
        executed = copy.deepcopy(merged)
        _execute(executed, path, timeout=timeout, bwrap=bwrap, limits=limits, package=package)
        scored = _score(executed, instructor, name, student, notes, missing, hidden)
        notes, audit_error = _review(scored, merged, name, instructor)
        if audit_error:
            _LOG.warning("%r / %s: %s", student, name, audit_error)
        review.extend(notes)
        results += scored
        if keep is not None:
            _write_ipynb(executed, keep / _slug(student) / f"{name}.ipynb")
    except Exception as exc:  # the grader failed, not the student: say so, go on
        why = f"{type(exc).__name__}: {exc}".strip()
        _LOG.error("could not grade %r / %s: %s", student, name, why)
        ungraded.append((student, name, why))
        results += zero(f"not graded (grader error, ask your instructor): {why[:300]}")

