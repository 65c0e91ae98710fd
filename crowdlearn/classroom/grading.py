"""Grading a class: every submission merged, executed in the sandbox and scored
(:func:`grade`), in parallel processes or kept in a course directory across runs."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import sys
import tempfile
import time
from pathlib import Path

from crowdlearn.classroom.assignments import (_default_source, _select, find_assignments,
                                             grade_cells, read_assignment)
from crowdlearn.classroom.releasing import _write_ipynb
from crowdlearn.classroom.reports import (_slug, read_results, write_feedback, write_report,
                                         write_totals)
from crowdlearn.classroom.sandbox import Limits, _execute, check_sandbox, probe_sandbox
from crowdlearn.classroom.scoring import (CheckResult, GradeResults, _review,
                                          _hidden_lines, _score, _unmark, apply_marks,
                                          read_marks)
from crowdlearn.classroom.submissions import (_Refused, _find_submissions, _merge,
                                             _read_submission)

__all__ = ["grade", "remark", "submission_status"]

_LOG = logging.getLogger("crowdlearn.classroom")
_PROGRESS = logging.getLogger("crowdlearn.classroom.progress")
"""One line per submission as it is graded (the command line shows them on stderr)."""


def grade(submissions, source=None, *, assignments=None, report=None, course_dir=None,
          timeout: int = 120, jobs: int = 1, verbose: bool = False, sandbox: bool = True,
          totals=None, feedback=None, marks=None, limits=None, only=None) -> GradeResults:
    """Execute and grade every submitted notebook in ``submissions``; one
    :class:`CheckResult` per check.

    Parameters
    ----------
    submissions : path
        ``<student>/<assignment>.ipynb`` files (see the module docstring).
    source : path, optional
        The instructor versions (default ``book/assignments``). What runs is the instructor's
        notebook -- setup, checks and hidden tests -- with the student's answer cells in it,
        whatever the student did to the other cells.
    assignments : list of str, optional
        Grade only the submissions of these assignments (default: all).
    report : path, optional
        Write the results there as CSV (one row per check) and as JSON next to it; and the
        per-student totals (``totals``) and feedback files (``feedback``).
    course_dir : path, optional
        A course directory kept across runs: the results of earlier runs are kept (a
        submission graded again replaces its earlier result), the executed notebooks are in
        ``autograded/``, and the report, totals and feedback cover the whole class.
    timeout : int, default 120
        Seconds a single cell may run; the kernel and everything it started are then killed.
    jobs : int, default 1
        Grade up to this many submissions at once, in separate processes, each given about
        the same number of submissions (with ``course_dir`` too: their executed notebooks are
        moved into its ``autograded/``).
    sandbox : bool, default True
        Run each submission in a bubblewrap sandbox. Before the first student the sandbox is
        started once and must import the kernel, the package and every ``crowdlearn``
        module the assignments import, and read the package's data files:
        :class:`SandboxUnavailable` (exit status 2 on the command line) if bwrap is missing
        or any of that fails. ``False`` runs the students' code with your rights, and warns.
    totals : path, optional
        Per-student totals CSV (default ``<report stem>-totals.csv`` next to the report).
    feedback : path, optional
        Folder for ``<student>/<assignment>.txt`` and ``.html`` (default ``feedback/`` next to
        the report, or in ``course_dir``).
    marks : path or list of dict, optional
        The instructor's marks for the hand-graded derivations (see :func:`apply_marks`),
        counted in the reports and totals. A missing or malformed file is a ``ValueError``
        before any submission is graded. To apply marks to results already graded, without
        running the submissions again, use :func:`remark`.
    limits : Limits, optional
        What each submission's sandbox may use (memory, processes, CPU time, file size,
        in-memory folders, output kept per cell); default ``Limits()``. A submission that
        hits one gets "exceeded the ... limit" in its feedback; the others are graded.
    only : list of (student, assignment), optional
        Grade only these submissions (how ``jobs`` splits the class among its processes).

    Returns
    -------
    GradeResults
        A list of CheckResult, by student, then assignment, then notebook order. A submission
        that cannot be graded gets 0 on every check with the reason as feedback; if the grader
        itself failed, it is also in ``.ungraded``.
    """
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
    if jobs > 1 and len(subs) > 1:
        results = _grade_in_parallel(Path(submissions), source, subs, names, timeout, jobs,
                                     sandbox, limits,
                                     keep=root / "autograded" if root else None)
    else:
        results = _grade_here(subs, names, timeout, bwrap, limits,
                              keep=root / "autograded" if root is not None else None)
    if root is not None:
        results = _merge_course(root, results)
    return _mark_and_write(results, marks, known, report=report, totals=totals,
                           feedback=feedback, root=root)


def _mark_and_write(results, marks, known, *, report, totals, feedback, root) -> GradeResults:
    """``results`` with the hand ``marks`` applied, written to the reports; if a mark does
    not apply, the reports are written without the marks and the error says what to do."""
    try:
        marked = apply_marks(results, marks) if marks is not None else results
    except ValueError as err:  # keep the grading: write the reports without the marks
        _write_outputs(results, known, report=report, totals=totals, feedback=feedback,
                       root=root)
        raise ValueError(f"{err}. The reports were written WITHOUT the marks; fix the marks "
                         "file and apply it with `python3 -m crowdlearn.classroom mark` "
                         "(no grading again)") from None
    _write_outputs(marked, known, report=report, totals=totals, feedback=feedback, root=root)
    return marked


def remark(marks, *, report, course_dir=None, totals=None, feedback=None) -> GradeResults:
    """Apply the instructor's ``marks`` to results graded earlier, without running any
    submission again, and write the report, totals and feedback anew.

    Parameters
    ----------
    marks : path or list of dict
        The marks (see :func:`apply_marks`): the complete set, replacing earlier marks.
    report : path
        The per-check report :func:`grade` wrote (its ``.json`` holds the results), written
        anew with the marks.
    course_dir : path, optional
        A course directory :func:`grade` kept: its results (the whole class, unmarked) are
        used instead of the report's.
    totals, feedback : path, optional
        As in :func:`grade` (defaults next to the report, or in ``course_dir``).

    Returns
    -------
    GradeResults
        The results with the marks in them.
    """
    rows = read_marks(marks)
    report = Path(report)
    root = None
    if course_dir is not None:
        root = Path(course_dir).resolve()
        stored = root / "crowdlearn-course.json"
        if not stored.is_file():
            raise ValueError(f"{root} is not a crowdlearn course directory (no {stored.name})")
    else:
        stored = report.with_suffix(".json")
        if not stored.is_file():
            raise ValueError(f"no graded results at {stored}: run `grade` with "
                             f"--report {report} first")
    results = _unmark(read_results(stored))
    marked = apply_marks(results, rows)
    _write_outputs(marked, None, report=report, totals=totals, feedback=feedback, root=root)
    return marked


def _grade_here(subs: dict, names: dict, timeout: int, bwrap, limits, keep) -> GradeResults:
    """Grade ``subs`` in this process, each assignment's sandbox with its own copy of the
    package (probed before the first student)."""
    with _packages(names, bwrap) as packages:
        for name, package in packages.items():
            probe_sandbox(bwrap, limits, _package_modules({name: names[name]}), package)
        return _grade(subs, names, timeout, bwrap, keep=keep, limits=limits,
                      packages=packages)


@contextlib.contextmanager
def _packages(names: dict, bwrap):
    """``assignment -> the package its sandbox sees`` (what the assignment asks the student to
    write withheld: :mod:`~crowdlearn.classroom.withheld`), removed at the end; empty without
    a sandbox."""
    import shutil

    from crowdlearn.classroom.withheld import package_copy

    made = {}
    try:
        if bwrap is not None:
            for name in names:
                made[name] = package_copy(name)
        yield made
    finally:
        for top in made.values():
            shutil.rmtree(top.parent, ignore_errors=True)


def _sandbox_or_warning(sandbox: bool) -> str | None:
    """The ``bwrap`` to run kernels in (:class:`SandboxUnavailable` if it does not work), or
    None with a warning on stderr when grading without a sandbox."""
    if sandbox:
        return check_sandbox()
    print("warning: grading WITHOUT a sandbox (--no-sandbox): the students' code runs "
          "with your rights and can read the instructor's notebooks, change files and "
          "use the network", file=sys.stderr)
    return None


def _package_modules(names: dict) -> list:
    """The ``crowdlearn`` modules the instructor notebooks of ``names`` import."""
    found = set()
    for path in names.values():
        for cell in read_assignment(path).cells:
            if cell.cell_type == "code":
                found.update(re.findall(r"^\s*(?:from|import)\s+(crowdlearn[\w.]*)",
                                        cell.source, flags=re.M))
    return sorted(found)


def submission_status(results) -> dict:
    """``(student, assignment) -> status`` of a run: ``"graded"``, ``"limit exceeded: ..."``,
    ``"kernel died: ..."``, ``"time limit: ..."`` or ``"not graded: ..."`` (with the first
    message that says so)."""
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
    """``(student, assignment) -> path`` (or :class:`_Refused`) of the chosen assignments
    (and only the ``only`` pairs, if given)."""
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
    """Earlier results of the course, with this run's replacing those of the same
    submissions; saved back. By student, then assignment."""
    marker = root / "crowdlearn-course.json"
    old = [CheckResult(**r) for r in json.loads(marker.read_text(encoding="utf-8"))["results"]]
    fresh = {(r.submission, r.assignment) for r in results}
    merged = [r for r in old if (r.submission, r.assignment) not in fresh] + list(results)
    merged.sort(key=lambda r: (r.submission, r.assignment))
    marker.write_text(json.dumps({"results": [r._asdict() for r in merged]}, indent=1) + "\n",
                      encoding="utf-8")
    return GradeResults(merged, getattr(results, "ungraded", []),
                        getattr(results, "review", []))


def _grade_in_parallel(submissions: Path, source, subs: dict, names: dict, timeout: int,
                       jobs: int, sandbox: bool, limits=None, keep=None) -> GradeResults:
    """Deal the submissions into ``jobs`` groups of about equal size, in order of assignment
    (each process then probes the sandbox of few assignments: a group holds whole
    assignments except where one group ends and the next begins); one process each, given
    its group with ``--only``. With ``keep`` (a course's ``autograded/``), each process
    keeps its executed notebooks in a course directory of its own, moved into ``keep`` at
    the end."""
    import subprocess

    order = sorted(subs, key=lambda key: (key[1], key[0]))
    n = min(jobs, len(order))
    groups = [order[len(order) * i // n:len(order) * (i + 1) // n] for i in range(n)]
    source = Path(source) if source is not None else _default_source()
    ungraded, review = [], []
    with tempfile.TemporaryDirectory(prefix="crowdlearn-grade-") as tmp:
        procs = []
        for i, group in enumerate(groups):
            part, log = Path(tmp) / f"part{i}.csv", Path(tmp) / f"part{i}.log"
            cmd = [sys.executable, "-m", "crowdlearn.classroom", "--source", str(source),
                   "grade", str(submissions), "--report", str(part), "--timeout", str(timeout),
                   "--feedback", str(Path(tmp) / f"feedback{i}")]
            if keep is not None:
                cmd += ["--course-dir", str(Path(tmp) / f"course{i}")]
            if not sandbox:
                cmd.append("--no-sandbox")
            for name, value in (limits or Limits())._asdict().items():
                flag = {"processes": "process", "file_size": "file-size"}.get(name, name)
                cmd.append(f"--{flag}-limit={value}")
            only = Path(tmp) / f"only{i}.json"
            only.write_text(json.dumps([list(key) for key in group]), encoding="utf-8")
            cmd += ["--only", str(only)]
            with log.open("w") as err:
                procs.append((part, log, subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                          stderr=err)))
        rows = {}
        for part, log, proc in procs:
            if proc.wait() not in (0, 1) or not part.exists():
                text = log.read_text(errors="replace").strip()[-2000:]
                raise RuntimeError(f"grading failed (exit {proc.returncode}): {text}")
            with part.with_suffix(".json").open(encoding="utf-8") as fh:
                data = json.load(fh)
            for r in data["checks"]:
                rows.setdefault((r["submission"], r["assignment"]), []).append(CheckResult(**r))
            ungraded += [tuple(u) for u in data.get("ungraded", [])]
            review += [tuple(r) for r in data.get("review", [])]
        if keep is not None:
            _move_notebooks([Path(tmp) / f"course{i}" / "autograded"
                             for i in range(len(groups))], keep)
    return GradeResults([r for key in subs for r in rows.get(key, [])], ungraded, review)


def _move_notebooks(parts, keep: Path) -> None:
    """Move ``<part>/<student>/<assignment>.ipynb`` into ``keep``, replacing older ones."""
    import shutil

    for part in parts:
        for nb in sorted(part.glob("*/*.ipynb")) if part.is_dir() else []:
            target = keep / nb.parent.name / nb.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(nb), str(target))


def _grade(subs: dict, names: dict, timeout: int, bwrap, keep=None,
           limits=None, packages=None) -> GradeResults:
    """Each submission: merged with the instructor's notebook, executed (sandboxed), scored."""
    instructors = {name: read_assignment(path) for name, path in names.items()}
    hidden = {name: _hidden_lines(nb) for name, nb in instructors.items()}
    results, ungraded, review = [], [], []
    for done, ((student, name), path) in enumerate(subs.items(), start=1):
        start, before = time.perf_counter(), len(results)
        _grade_one(student, name, path, instructors[name], hidden[name], timeout, bwrap, keep,
                   limits, results, ungraded, (packages or {}).get(name), review)
        mine = results[before:]
        _PROGRESS.info("[%d/%d] %r %s: %g / %g points (%.0f s)", done, len(subs), student,
                       name, sum(r.points for r in mine), sum(r.max_points for r in mine),
                       time.perf_counter() - start)
    return GradeResults(results, ungraded, review)


def _grade_one(student, name, path, instructor, hidden, timeout, bwrap, keep, limits,
               results: list, ungraded: list, package=None, review=None) -> None:
    """One submission: its CheckResults appended to ``results`` (and to ``ungraded`` if the
    grader failed on it)."""
    checks = grade_cells(instructor)
    review = [] if review is None else review

    def zero(why):
        return [CheckResult(student, name, cid, 0.0, pts, why) for cid, pts, _ in checks]

    if isinstance(path, _Refused):
        results += zero(f"not graded: {path.reason}")
        return
    try:
        nb = _read_submission(path)
    except Exception as exc:  # not a notebook at all: graded 0, with the reason
        first = (str(exc).strip().splitlines() or [""])[0]
        results += zero(f"not graded: the file is not a notebook "
                        f"({type(exc).__name__}: {first})")
        return
    try:
        merged, notes, missing = _merge(instructor, nb)
        executed = copy.deepcopy(merged)
        _execute(executed, path, timeout=timeout, bwrap=bwrap, limits=limits,
                 package=package)
        scored = _score(executed, instructor, name, student, notes, missing, hidden)
        notes, audit_error = _review(scored, merged, name)
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

