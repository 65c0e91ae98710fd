r"""Classroom assignments: release student versions and autograde submissions, with nbgrader.

The assignments are the MyST-markdown notebooks in ``book/assignments/``, written as the
*instructor* version: solutions sit between ``### BEGIN SOLUTION`` and ``### END SOLUTION``,
tests only the grader runs between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``,
and every cell nbgrader must know about carries its metadata as a code-cell option
(``:nbgrader: {"grade": true, "grade_id": ..., "points": 2, ...}``), which jupytext turns
into the notebook's cell metadata. The book executes these instructor versions at build
time, so every check runs against its solution.

This module drives nbgrader in a temporary course directory (``source/``, ``release/``,
``submitted/``, ``autograded/`` and its own ``gradebook.db``), so nothing is installed or
configured globally and nothing needs Docker:

* :func:`release` -- jupytext md -> ipynb -> ``nbgrader generate_assignment``: solutions
  replaced by ``raise NotImplementedError()``, hidden tests removed, visible checks kept.
* :func:`grade` -- the same generation (it fills the gradebook with the instructor's checks,
  hidden ones included), then ``nbgrader autograde`` of every submitted notebook, then one
  :class:`CheckResult` per check: points earned, points possible and the check's own
  message (an ``assert`` message that names the mistake).

Command line (run from the repository root, or pass ``--source``)::

    python3 -m crowdlearn.classroom list
    python3 -m crowdlearn.classroom release OUTDIR
    python3 -m crowdlearn.classroom grade SUBMISSIONS_DIR --report grades.csv

Submissions are laid out one folder per student, ``SUBMISSIONS_DIR/<student>/<assignment>.ipynb``
(or nbgrader's own ``<student>/<assignment>/<assignment>.ipynb``; a jupytext ``.md`` works
too). ``grade`` writes the report as CSV and, next to it, as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import NamedTuple

__all__ = ["CheckResult", "find_assignments", "read_assignment", "grade_cells", "release",
           "grade", "replace_solution", "solution_regions", "student_source", "write_report",
           "main"]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[ \t]*\n(.*?)^[ \t]*### END SOLUTION[ \t]*$",
                     re.MULTILINE | re.DOTALL)


class CheckResult(NamedTuple):
    """The grade of one check (an nbgrader grade cell) of one submission."""

    submission: str   # the student folder
    assignment: str   # the notebook's name, e.g. "a2_dawid_skene_by_hand"
    check: str        # the grade cell's grade_id
    points: float     # points earned
    max_points: float
    feedback: str     # "ok", or what went wrong (the check's message)


# -- reading the instructor versions --------------------------------------------------------------
def _default_source() -> Path:
    here = Path.cwd() / "book" / "assignments"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "book" / "assignments"


def find_assignments(source=None) -> dict:
    """The assignments in ``source`` (default ``book/assignments``): name -> path of the ``.md``.

    An assignment is a MyST notebook (jupytext header with a ``kernelspec``) with at least one
    nbgrader cell; other files (an index page, say) are skipped.
    """
    source = Path(source) if source is not None else _default_source()
    if not source.is_dir():
        raise ValueError(f"no assignments folder at {source}: pass --source")
    found = {}
    for path in sorted(source.glob("*.md")):
        if path.name.startswith(("_", ".")):
            continue
        text = path.read_text(encoding="utf-8")
        if "kernelspec:" in text[:600] and ":nbgrader:" in text:
            found[path.stem] = path
    if not found:
        raise ValueError(f"no assignment notebooks (MyST with nbgrader cells) in {source}")
    return found


def _nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def read_assignment(path):
    """The instructor notebook of a MyST assignment, checked for what nbgrader needs.

    Raises ``ValueError`` if a grade cell has no points, a ``grade_id`` repeats, a solution
    region sits in a cell not marked ``solution``, or solution / hidden-test markers are
    unbalanced.
    """
    import jupytext

    path = Path(path)
    nb = jupytext.read(path)
    seen = set()
    for index, cell in enumerate(nb.cells):
        meta = _nbgrader_meta(cell)
        src = cell.source
        where = f"{path.name}, cell {index}"
        if src.count(BEGIN_SOLUTION) != src.count(END_SOLUTION):
            raise ValueError(f"{where}: unbalanced solution markers")
        if src.count(BEGIN_HIDDEN) != src.count(END_HIDDEN):
            raise ValueError(f"{where}: unbalanced hidden-test markers")
        if not meta:
            if BEGIN_SOLUTION in src or BEGIN_HIDDEN in src:
                raise ValueError(f"{where}: markers in a cell without nbgrader metadata")
            continue
        grade_id = meta.get("grade_id")
        if not grade_id:
            raise ValueError(f"{where}: nbgrader cell without a grade_id")
        if grade_id in seen:
            raise ValueError(f"{where}: grade_id {grade_id!r} is used twice")
        seen.add(grade_id)
        if BEGIN_SOLUTION in src and not meta.get("solution"):
            raise ValueError(f"{where} ({grade_id}): a solution region in a cell not marked "
                             f"solution")
        if BEGIN_HIDDEN in src and not meta.get("grade"):
            raise ValueError(f"{where} ({grade_id}): hidden tests in a cell that is not a check")
        if meta.get("grade") and not meta.get("points", 0) > 0:
            raise ValueError(f"{where} ({grade_id}): a check needs positive points")
    if not any(_nbgrader_meta(c).get("grade") for c in nb.cells):
        raise ValueError(f"{path.name} has no graded check")
    return nb


def grade_cells(nb) -> list:
    """``(grade_id, points, has_hidden_tests)`` of every check, in notebook order."""
    return [(m["grade_id"], float(m["points"]), BEGIN_HIDDEN in c.source)
            for c in nb.cells for m in [_nbgrader_meta(c)] if m.get("grade")]


def solution_regions(nb) -> dict:
    """``grade_id -> [solution code, ...]`` for every solution cell (the code between markers)."""
    out = {}
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
        if meta.get("solution"):
            out[meta["grade_id"]] = [m.group(2) for m in _REGION.finditer(cell.source)]
    return out


_HIDDEN_REGION = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n.*?^[ \t]*### END HIDDEN TESTS"
                            r"[ \t]*(\n|\Z)", re.MULTILINE | re.DOTALL)
STUDENT_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


def student_source(source: str) -> str:
    r"""The student's view of a cell's code, as nbgrader releases it: every solution region
    replaced by ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` (indented like its
    markers) and every hidden-test region removed.

    Examples
    --------
    >>> print(student_source("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
    ...                      "    ### END SOLUTION\n"))
    def f(x):
        # YOUR CODE HERE
        raise NotImplementedError()
    <BLANKLINE>
    >>> student_source("assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(2) == 4\n"
    ...                "### END HIDDEN TESTS\n")
    'assert f(1) == 2\n'
    """
    import textwrap

    def stub(m):
        return textwrap.indent(STUDENT_STUB, m.group(1))

    return _HIDDEN_REGION.sub("", _REGION.sub(stub, source))


def replace_solution(nb, grade_id: str, code: str, *, region: int = 0):
    """A copy of ``nb`` with one solution region of cell ``grade_id`` replaced by ``code``.

    ``code`` is dedented and indented like the markers; the markers themselves are removed,
    as in a student's notebook. Used to make mistaken submissions that test the checks
    (does the check catch this mistake, and does its message name it?).

    Examples
    --------
    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell(
    ...     "def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION\\n",
    ...     metadata={"nbgrader": {"grade_id": "double", "solution": True}})
    >>> nb = nbformat.v4.new_notebook(cells=[cell])
    >>> solution_regions(nb)
    {'double': ['    return 2 * x\\n']}
    >>> print(replace_solution(nb, "double", "return x + 2").cells[0].source)
    def f(x):
        return x + 2
    <BLANKLINE>
    """
    import copy
    import textwrap

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if _nbgrader_meta(cell).get("grade_id") != grade_id:
            continue
        matches = list(_REGION.finditer(cell.source))
        if region >= len(matches):
            raise ValueError(f"cell {grade_id!r} has {len(matches)} solution region(s)")
        m = matches[region]
        body = textwrap.indent(textwrap.dedent(code).strip("\n"), m.group(1)) + "\n"
        cell.source = cell.source[:m.start()] + body + cell.source[m.end() + 1:]
        return nb
    raise ValueError(f"no solution cell with grade_id {grade_id!r}")


# -- driving nbgrader -----------------------------------------------------------------------------
class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@contextlib.contextmanager
def _nbgrader_session(verbose: bool = False):
    """nbgrader's apps, quietly: its ``alembic`` on PATH, its log captured, its warnings muted."""
    old_path = os.environ.get("PATH", "")
    bindir = str(Path(sys.executable).parent)  # nbgrader runs the `alembic` script it installed
    os.environ["PATH"] = bindir + os.pathsep + old_path
    logger = logging.getLogger("traitlets")
    handler = _Records()
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = verbose
    try:
        with warnings.catch_warnings():
            # SQLAlchemy's SAWarning (a RuntimeWarning) and deprecations inside nbgrader
            warnings.simplefilter("ignore")
            yield handler
    finally:
        os.environ["PATH"] = old_path
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def _config(root: Path, timeout: int):
    from traitlets.config import Config

    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    cfg.Execute.timeout = int(timeout)
    cfg.Execute.kernel_name = "python3"
    return cfg


def _write_ipynb(nb, path: Path) -> None:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.from_dict(nb)
    nb.metadata.pop("jupytext", None)
    nbformat.write(nb, str(path))


def _generate(root: Path, names: dict, cfg) -> None:
    """``nbgrader generate_assignment`` for every assignment (instructor md -> release/)."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory

    for name, path in names.items():
        _write_ipynb(read_assignment(path), root / "source" / name / f"{name}.ipynb")
        coursedir = CourseDirectory(config=cfg)
        coursedir.assignment_id = name
        app = GenerateAssignment(coursedir=coursedir, config=cfg)
        app.force = True
        app.create_assignment = True
        app.start()


def release(out_dir, source=None, assignments=None, *, verbose: bool = False) -> list:
    """Write the student version of each assignment to ``out_dir/<name>.ipynb``.

    Parameters
    ----------
    out_dir : path
        Created if needed; existing notebooks of the same name are overwritten.
    source : path, optional
        The folder of instructor versions (default ``book/assignments``).
    assignments : list of str, optional
        Names to release (default: all).

    Returns
    -------
    list of Path
        The released notebooks.
    """
    found = find_assignments(source)
    names = _select(found, assignments)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="crowdlearn-course-") as tmp, \
            _nbgrader_session(verbose):
        root = Path(tmp)
        _generate(root, names, _config(root, 60))
        for name in names:
            target = out_dir / f"{name}.ipynb"
            shutil.copyfile(root / "release" / name / f"{name}.ipynb", target)
            written.append(target)
    return written


def _select(found: dict, assignments) -> dict:
    if assignments is None:
        return dict(found)
    unknown = [a for a in assignments if a not in found]
    if unknown:
        raise ValueError(f"unknown assignment(s) {unknown}; the assignments are {sorted(found)}")
    return {a: found[a] for a in assignments}


def _find_submissions(submissions: Path, known: dict) -> dict:
    """``(student, assignment) -> notebook path`` from ``<student>/<assignment>.ipynb`` (or
    ``<student>/<assignment>/<assignment>.ipynb``, or ``.md``)."""
    if not submissions.is_dir():
        raise ValueError(f"no submissions folder at {submissions}")
    found, ignored = {}, []
    for path in sorted(submissions.rglob("*")):
        if path.suffix not in (".ipynb", ".md") or not path.is_file():
            continue
        rel = path.relative_to(submissions)
        if any(part.startswith(".") for part in rel.parts):
            continue  # .ipynb_checkpoints and the like
        parts = rel.parts
        ok = path.stem in known and (
            len(parts) == 2 or (len(parts) == 3 and parts[1] == path.stem))
        if not ok:
            ignored.append(str(rel))
            continue
        key = (parts[0], path.stem)
        if key in found and found[key].suffix == ".ipynb":
            continue  # an .ipynb wins over an .md of the same assignment
        found[key] = path
    if ignored:
        logging.getLogger(__name__).warning(
            "ignored %d file(s) that are not <student>/<assignment>.ipynb with a known "
            "assignment (%s): %s", len(ignored), ", ".join(sorted(known)), ", ".join(ignored[:5]))
    if not found:
        raise ValueError(f"no submissions found in {submissions}: expected "
                         f"<student>/<assignment>.ipynb with an assignment among {sorted(known)}")
    return found


def _read_submission(path: Path):
    import nbformat

    if path.suffix == ".md":
        import jupytext

        return jupytext.read(path)
    return nbformat.read(str(path), as_version=4)


def _last_error(cells) -> tuple:
    """``(grade_id, exception name)`` of the last cell before a check that raised, other
    checks aside (the student's code the check depends on, most likely)."""
    for cell in reversed(cells):
        if _nbgrader_meta(cell).get("grade"):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return _nbgrader_meta(cell).get("grade_id", ""), out.get("ename", "")
    return None, None


def _feedback(cell, earlier, points: float, max_points: float) -> str:
    """The check's own words: its assertion message, or what kept it from running."""
    outputs = cell.get("outputs", [])
    for out in outputs:
        if out.get("output_type") != "error":
            continue
        ename, evalue = out.get("ename", ""), out.get("evalue", "").strip()
        if ename == "AssertionError":
            return evalue or "a check failed (an assertion without a message)"
        if ename == "NotImplementedError":
            return "not done yet: the code still raises NotImplementedError"
        message = f"{ename}: {evalue}" if evalue else ename
        where, what = _last_error(earlier)
        if where is not None and what == "NotImplementedError":
            return f"not done yet: cell {where!r} still raises NotImplementedError ({message})"
        if where is not None:
            return f"{message} (an earlier cell, {where or 'unnamed'!r}, raised {what})"
        return message
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            first = out.get("text", "").strip().splitlines()[:1]
            return "the check wrote to stderr (a warning?): " + (first[0] if first else "")
    if points < max_points:
        return "the check did not pass"
    return "ok"


def grade(submissions, source=None, *, assignments=None, report=None, course_dir=None,
          timeout: int = 300, jobs: int = 1, verbose: bool = False) -> list:
    """Autograde every submitted notebook in ``submissions``; one :class:`CheckResult` per check.

    Parameters
    ----------
    submissions : path
        ``<student>/<assignment>.ipynb`` files (see the module docstring).
    source : path, optional
        The instructor versions (default ``book/assignments``). The gradebook is filled from
        them, so the checks that run are the instructor's -- hidden tests included -- whatever
        a student did to the check cells.
    assignments : list of str, optional
        Grade only the submissions of these assignments (default: all).
    report : path, optional
        Write the results there as CSV, and as JSON next to it (same name, ``.json``).
    course_dir : path, optional
        Run nbgrader there (must be empty or absent) and keep it, e.g. to read the
        autograded notebooks; by default a temporary directory is used and removed.
    timeout : int, default 300
        Seconds a single cell may run.
    jobs : int, default 1
        Grade up to this many assignments at once, each in its own process and course
        directory (notebooks run one at a time within an assignment). Not with ``course_dir``.

    Returns
    -------
    list of CheckResult
        In submission order, then notebook order. A submission nbgrader could not grade at
        all gets 0 points on every check, with nbgrader's error as feedback.
    """
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if jobs > 1 and course_dir is not None:
        raise ValueError("course_dir keeps one course directory: use it with jobs=1")
    known = find_assignments(source)
    chosen = _select(known, assignments)
    subs = {key: path for key, path in _find_submissions(Path(submissions), known).items()
            if key[1] in chosen}
    if not subs:
        raise ValueError(f"no submissions of {sorted(chosen)} in {submissions}")
    names = {a: known[a] for a in sorted({a for _, a in subs})}
    if jobs > 1 and len(names) > 1:
        results = _grade_in_parallel(Path(submissions), source, subs, names, timeout, jobs)
    else:
        results = _grade(subs, names, known, course_dir, timeout, verbose)
    if report is not None:
        write_report(results, report)
    return results


def _grade_in_parallel(submissions: Path, source, subs: dict, names: dict, timeout: int,
                       jobs: int) -> list:
    """Split the assignments into ``jobs`` groups of about equal work; one process each."""
    import subprocess

    load = {a: sum(1 for _, b in subs if b == a) for a in names}
    groups = [[] for _ in range(min(jobs, len(names)))]
    for a in sorted(names, key=lambda a: -load[a]):
        min(groups, key=lambda g: sum(load[b] for b in g)).append(a)
    source = Path(source) if source is not None else _default_source()
    with tempfile.TemporaryDirectory(prefix="crowdlearn-grade-") as tmp:
        procs = []
        for i, group in enumerate(groups):
            part, log = Path(tmp) / f"part{i}.csv", Path(tmp) / f"part{i}.log"
            cmd = [sys.executable, "-m", "crowdlearn.classroom", "--source", str(source),
                   "grade", str(submissions), "--report", str(part), "--timeout", str(timeout)]
            for a in group:
                cmd += ["--assignment", a]
            with log.open("w") as err:
                procs.append((part, log, subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                          stderr=err)))
        rows = {}
        for part, log, proc in procs:
            if proc.wait() != 0:
                text = log.read_text(errors="replace").strip()[-2000:]
                raise RuntimeError(f"grading failed (exit {proc.returncode}): {text}")
            with part.open(newline="", encoding="utf-8") as fh:
                for r in csv.DictReader(fh):
                    rows.setdefault((r["submission"], r["assignment"]), []).append(CheckResult(
                        r["submission"], r["assignment"], r["check"], float(r["points"]),
                        float(r["max_points"]), r["feedback"]))
    return [r for key in subs for r in rows.get(key, [])]


def _grade(subs: dict, names: dict, known: dict, course_dir, timeout: int,
           verbose: bool) -> list:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    import nbformat

    with contextlib.ExitStack() as stack:
        if course_dir is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="crowdlearn-course-")))
        else:
            root = Path(course_dir).resolve()
            if root.exists() and any(root.iterdir()):
                raise ValueError(f"course_dir {root} is not empty")
            root.mkdir(parents=True, exist_ok=True)
        log = stack.enter_context(_nbgrader_session(verbose))
        cfg = _config(root, timeout)
        _generate(root, names, cfg)
        unreadable = {}
        for (student, name), path in subs.items():
            try:
                nb = _read_submission(path)
            except Exception as exc:  # not a notebook at all: graded 0, with the reason
                first = (str(exc).strip().splitlines() or [""])[0]
                unreadable[(student, name)] = f"{type(exc).__name__}: {first}"
                continue
            _write_ipynb(nb, root / "submitted" / student / name / f"{name}.ipynb")
        errors = {}
        for name in names:
            coursedir = CourseDirectory(config=cfg)
            coursedir.assignment_id = name
            coursedir.student_id = "*"
            app = Autograde(coursedir=coursedir, config=cfg)
            app.force = True
            app.create_student = True
            start = len(log.records)
            try:
                app.start()
            except Exception as exc:  # nbgrader raises once, after trying every student
                text = "\n".join(r.getMessage() for r in log.records[start:]
                                 if r.levelno >= logging.ERROR) or repr(exc)
                errors[name] = text
        results = []
        with Gradebook(cfg.CourseDirectory.db_url) as gb:
            for (student, name) in subs:
                checks = grade_cells(read_assignment(known[name]))
                graded = root / "autograded" / student / name / f"{name}.ipynb"
                try:
                    sub = gb.find_submission_notebook(name, name, student)
                    scores = {g.name: (g.score, g.max_score) for g in sub.grades}
                except MissingEntry:
                    scores = None
                if (student, name) in unreadable:
                    results += [CheckResult(student, name, cid, 0.0, pts, "not graded: the file "
                                            f"is not a notebook ({unreadable[student, name]})")
                                for cid, pts, _ in checks]
                    continue
                if scores is None or not graded.exists():
                    why = errors.get(name, "nbgrader could not grade this notebook")
                    why = why.strip().splitlines()[-1] if why.strip() else why
                    results += [CheckResult(student, name, cid, 0.0, pts,
                                            f"not graded: {why}") for cid, pts, _ in checks]
                    continue
                nb = nbformat.read(str(graded), as_version=4)
                cells = {_nbgrader_meta(c).get("grade_id"): (i, c) for i, c in enumerate(nb.cells)}
                for cid, pts, _ in checks:
                    score, max_score = scores.get(cid, (0.0, pts))
                    score = float(score or 0.0)
                    if cid not in cells:
                        results.append(CheckResult(student, name, cid, 0.0, float(max_score),
                                                   "the check cell is missing"))
                        continue
                    i, cell = cells[cid]
                    results.append(CheckResult(student, name, cid, score, float(max_score),
                                               _feedback(cell, nb.cells[:i], score,
                                                         float(max_score))))
    return results


# -- the report -----------------------------------------------------------------------------------
def _totals(results) -> list:
    totals = {}
    for r in results:
        t = totals.setdefault((r.submission, r.assignment), [0.0, 0.0])
        t[0] += r.points
        t[1] += r.max_points
    return [{"submission": s, "assignment": a, "points": p, "max_points": m}
            for (s, a), (p, m) in totals.items()]


def write_report(results, path) -> tuple:
    """Write ``results`` as CSV to ``path`` and as JSON (checks and totals) next to it.

    Returns the two paths.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CheckResult._fields)
        writer.writerows(results)
    json_path = path.with_suffix(".json")
    json_path.write_text(json.dumps({"checks": [r._asdict() for r in results],
                                     "totals": _totals(results)}, indent=1) + "\n",
                         encoding="utf-8")
    return path, json_path


# -- command line ---------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m crowdlearn.classroom",
        description="Release student versions of the book's assignments and autograde "
                    "submissions (nbgrader, in a temporary course directory).")
    parser.add_argument("--source", help="folder of instructor versions "
                                         "(default: book/assignments)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the assignments, their checks and points")
    rel = sub.add_parser("release", help="write the student versions to OUTDIR")
    rel.add_argument("outdir")
    rel.add_argument("--assignment", action="append",
                     help="release only this one (repeatable)")
    gra = sub.add_parser("grade", help="autograde SUBMISSIONS/<student>/<assignment>.ipynb")
    gra.add_argument("submissions")
    gra.add_argument("--report", default="grades.csv",
                     help="CSV report (a .json one is written next to it); default grades.csv")
    gra.add_argument("--course-dir", help="keep nbgrader's course directory here")
    gra.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    gra.add_argument("--assignment", action="append", help="grade only this one (repeatable)")
    gra.add_argument("-j", "--jobs", type=int, default=1,
                     help="grade this many assignments at once, in parallel processes")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.WARNING)
    try:
        if args.command == "list":
            for name, path in find_assignments(args.source).items():
                checks = grade_cells(read_assignment(path))
                total = sum(p for _, p, _ in checks)
                print(f"{name}  ({total:g} points, {len(checks)} checks)  {path}")
                for cid, pts, hidden in checks:
                    print(f"    {cid:<28} {pts:>4g}{'  (has hidden tests)' if hidden else ''}")
        elif args.command == "release":
            for path in release(args.outdir, args.source, args.assignment,
                                verbose=args.verbose):
                print(path)
        else:
            results = grade(args.submissions, args.source, assignments=args.assignment,
                            report=args.report, course_dir=args.course_dir,
                            timeout=args.timeout, jobs=args.jobs, verbose=args.verbose)
            for t in _totals(results):
                print(f"{t['submission']:<20} {t['assignment']:<28} "
                      f"{t['points']:g} / {t['max_points']:g}")
            csv_path, json_path = Path(args.report), Path(args.report).with_suffix(".json")
            print(f"per-check report: {csv_path} and {json_path}")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
