r"""Classroom assignments: release student versions (nbgrader) and grade submissions, each in a
bubblewrap sandbox.

The assignments are the MyST-markdown notebooks in ``book/assignments/``, written as the
*instructor* version: solutions sit between ``### BEGIN SOLUTION`` and ``### END SOLUTION``,
tests only the grader runs between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``,
and every cell nbgrader must know about carries its metadata as a code-cell option
(``:nbgrader: {"grade": true, "grade_id": ..., "points": 2, ...}``), which jupytext turns
into the notebook's cell metadata. The book executes these instructor versions at build
time, so every check runs against its solution.

* :func:`release` -- jupytext md -> ipynb -> ``nbgrader generate_assignment`` in a temporary
  course directory: solutions replaced by ``raise NotImplementedError()``, hidden tests
  removed, visible checks kept.
* :func:`grade` -- for each submission, on the instructor's side: the notebook that runs is the
  *instructor's* (setup, checks, hidden tests), with only the student's answer cells (matched
  by ``grade_id``) and the code cells the student added put in. Whatever the student did to
  the other cells -- edited a check or its metadata, deleted it, copied a cell twice -- the
  instructor's cell runs, and a note in that student's feedback says so (a deleted check
  scores 0). Then the notebook is executed by nbclient, the kernel in a sandbox, and each
  check scores all its points iff its cell raised no error (output on stderr, a warning, is
  not a failure). Cells nbgrader grades by hand (answers, tasks) are listed with 0 points and
  "graded by hand". Last, ``crowdlearn.classroom.policy.flagged_checks(nb, assignment)``
  (if that module exists) names checks to zero -- an answer that calls the package's
  reference implementation or monkeypatches a module -- and its reason becomes the feedback.

The sandbox (:func:`sandbox_command`) is bubblewrap (``apt-get install bubblewrap``). Only the
kernel runs in it -- the notebook client that sends it cells and reads its outputs stays
outside, so a submission cannot forge its results. Each kernel gets its own pid namespace
(``--unshare-pid``: everything it starts is killed with it, at the end or at the time
limit), no network (``--unshare-net``), a fresh ``/tmp``, read-only ``/usr``, ``/etc``, the
Python installation, the virtual environment and the ``crowdlearn`` package, and one private
writable working folder holding only its own submitted file; nothing else -- not the
instructor's sources, the course directory, the report or the other submissions -- exists
in it. It talks to the client over Unix sockets in a folder bound for that purpose.
``--die-with-parent`` ends it if the grader dies. Without bwrap :func:`grade` raises
:class:`SandboxUnavailable`; ``--no-sandbox`` (``sandbox=False``) grades without isolation,
with a warning.

Command line (run from the repository root, or pass ``--source``)::

    python3 -m crowdlearn.classroom list
    python3 -m crowdlearn.classroom release OUTDIR
    python3 -m crowdlearn.classroom grade SUBMISSIONS_DIR --report grades.csv \
        [--totals totals.csv] [--feedback DIR] [--course-dir DIR] [--timeout 300] \
        [--assignment NAME] [--jobs N] [--no-sandbox]

Submissions are laid out one folder per student, ``SUBMISSIONS_DIR/<student>/<assignment>.ipynb``
(or nbgrader's own ``<student>/<assignment>/<assignment>.ipynb``; a jupytext ``.md`` works
too). Any folder name works (spaces, ``*``, a newline, a leading ``-``); symbolic links are
never followed (the submission scores 0, with the reason), a file that is not a notebook
scores 0 with the reason, other files are ignored with a warning. ``grade`` writes

* the report, one row per submission and check (``submission, assignment, check, points,
  max_points, feedback``) as CSV, and as JSON next to it (with totals);
* ``<report stem>-totals.csv`` (or ``--totals``): one row per student, one column per
  assignment and ``total``, for an LMS gradebook;
* ``feedback/<student>/<assignment>.txt`` and ``.html`` next to the report (or in
  ``--course-dir``, or ``--feedback``): each check's points and message, never a test's
  source;
* with ``--course-dir``: the results are kept there across runs (a submission graded again
  replaces its earlier result; the reports cover the whole class), and the executed
  notebooks in ``autograded/<student>/``.

Exit status 0; 1 if the grader itself failed on a submission (each is listed on stderr, and
has 0 points with "not graded (grader error)" as feedback); 2 for a usage error or a missing
sandbox.
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
           "write_totals", "write_feedback", "apply_marks", "GradeResults",
           "SandboxUnavailable", "check_sandbox", "sandbox_command", "main"]

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
    return Path(__file__).resolve().parents[2] / "book" / "assignments"


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


# -- finding the submissions ----------------------------------------------------------------------
class _Refused(NamedTuple):
    """A submission the grader will not open, and why (graded 0 with this reason)."""

    reason: str


def _find_submissions(submissions: Path, known: dict) -> dict:
    """``(student, assignment) -> notebook path`` from ``<student>/<assignment>.ipynb`` (or
    ``<student>/<assignment>/<assignment>.ipynb``, or ``.md``).

    Symbolic links are never followed: a linked notebook (or assignment folder) maps to a
    :class:`_Refused`, a linked student folder to ``(student, None) -> _Refused``. Any folder
    name is accepted (spaces, ``*``, a newline, a leading ``-``); names starting with ``.``
    (``.ipynb_checkpoints``) are skipped.
    """
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
        logging.getLogger(__name__).warning(
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


# -- putting a submission together with the instructor's cells ------------------------------------
def _released_source(cell) -> str:
    return student_source(cell.source).strip()


def _is_check(meta) -> bool:
    return bool(meta.get("grade")) and not meta.get("solution") and not meta.get("task")


def _merge(instructor, student) -> tuple:
    """The notebook to execute: the instructor's cells, hidden tests included, with the
    student's answers in the solution cells; and notes on what the student's copy did to the
    rest, ``{grade_id: [note, ...]}`` (key ``None``: the whole notebook).

    * every cell the instructor marked (locked, check, setup) is the instructor's, whatever
      the student's copy holds (edited, metadata changed, deleted, copied twice);
    * a solution cell is the student's; copies with the same ``grade_id`` (a copy-pasted cell)
      all run, in the student's order;
    * code cells the student added (no nbgrader metadata, not a copy of an instructor cell)
      run after the instructor cell they follow in the student's notebook.

    Also returns the set of check ids whose cell is not in the student's notebook at all.
    """
    import copy

    notes: dict = {}
    by_id = {}
    released = {}
    for cell in instructor.cells:
        meta = _nbgrader_meta(cell)
        if meta.get("grade_id"):
            by_id[meta["grade_id"]] = cell
            released[_released_source(cell)] = meta["grade_id"]
            released.setdefault(cell.source.strip(), meta["grade_id"])
    answers: dict = {}     # solution grade_id -> [student cell, ...]
    extra: dict = {}       # instructor grade_id (or None: before any) -> [student cell, ...]
    present, anchor = set(), None
    for cell in student.get("cells", []):
        if not isinstance(cell, dict):
            continue
        meta = _nbgrader_meta(cell) if isinstance(cell.get("metadata"), dict) else {}
        meta = meta if isinstance(meta, dict) else {}
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        gid = meta.get("grade_id")
        target = by_id.get(gid) if isinstance(gid, str) else None
        if target is None:  # no (known) metadata: is it an instructor cell with edited metadata?
            gid = released.get(source.strip())
            if gid is not None:
                target = by_id[gid]
                if meta:
                    notes.setdefault(gid, []).append(
                        "the nbgrader metadata of your copy of this cell was edited; the "
                        "instructor's cell was used")
        if target is None:
            if cell.get("cell_type") == "code" and source.strip():
                if meta:
                    notes.setdefault(anchor, []).append(
                        "a cell with unknown nbgrader metadata "
                        f"(grade_id {meta.get('grade_id')!r}) was run as your own code")
                extra.setdefault(anchor, []).append(source)
            continue
        tmeta = _nbgrader_meta(target)
        if tmeta.get("solution"):
            if cell.get("cell_type") != target.cell_type:
                notes.setdefault(gid, []).append(
                    f"your copy of answer cell {gid!r} is a {cell.get('cell_type')} cell; "
                    "it was ignored")
            else:
                if gid in answers:
                    notes.setdefault(gid, []).append(
                        f"answer cell {gid!r} appears {len(answers[gid]) + 1} times (a copied "
                        "cell?): all copies were run, in your order")
                answers.setdefault(gid, []).append(source)
        else:
            if gid in present:
                notes.setdefault(gid, []).append(
                    f"cell {gid!r} appears more than once (a copied cell?): the instructor's "
                    "cell was run once")
            elif source.strip() not in (target.source.strip(), _released_source(target)):
                notes.setdefault(gid, []).append(
                    "your copy of this cell was edited; the instructor's cell was run")
        present.add(gid)
        anchor = gid
    nb = copy.deepcopy(instructor)
    nb.metadata.pop("jupytext", None)
    cells = []

    def own_code(sources):
        import nbformat

        for src in sources:
            cells.append(nbformat.v4.new_code_cell(src, metadata={"crowdlearn": "student"}))

    own_code(extra.get(None, []))
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if meta.get("solution"):
            srcs = answers.get(gid)
            if not srcs:
                srcs = [student_source(cell.source)]
                if gid not in present:
                    notes.setdefault(gid, []).append(
                        f"answer cell {gid!r} is missing from your notebook")
            for i, src in enumerate(srcs):
                new = copy.deepcopy(cell)
                new.source = src
                if i:
                    new.metadata["nbgrader"] = dict(meta, grade_id=f"{gid}#copy{i}",
                                                    grade=False)
                cells.append(new)
        else:
            cells.append(cell)
        if gid is not None:
            own_code(extra.get(gid, []))
    nb.cells = cells
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    missing = {gid for gid, cell in by_id.items()
               if _is_check(_nbgrader_meta(cell)) and gid not in present}
    return nb, notes, missing


# -- the sandbox ----------------------------------------------------------------------------------
class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces."""


def _bwrap() -> str | None:
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap") else None


def check_sandbox() -> str:
    """Path of a working ``bwrap``, or :class:`SandboxUnavailable` with what to do."""
    import subprocess

    exe = _bwrap()
    if exe is None:
        raise SandboxUnavailable(
            "grading runs every submission in a bubblewrap sandbox, and bwrap is not "
            "installed: apt-get install bubblewrap (Debian/Ubuntu), or grade without "
            "isolation with --no-sandbox (grade(..., sandbox=False)) on a machine you do "
            "not mind the students' code running on")
    probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid",
                            "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bwrap ({exe}) cannot create a sandbox here: {probe.stderr.strip()} -- "
            "unprivileged user namespaces may be disabled (sysctl "
            "kernel.unprivileged_userns_clone=1) or restricted by AppArmor; or grade "
            "without isolation with --no-sandbox")
    return exe


def _read_only_roots() -> list:
    """What the kernel needs to see, read-only: the system, Python, the venv, the package."""
    import crowdlearn

    roots = [Path("/usr"), Path("/etc"), Path("/opt")]
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                 os.path.realpath(sys.executable) + "/../..",
                 Path(crowdlearn.__file__).resolve().parent):
        roots.append(Path(os.path.realpath(path)))
        roots.append(Path(path).absolute())
    out = []
    for root in sorted(set(roots), key=lambda p: (len(p.parts), str(p))):
        if root.exists() and not any(root.is_relative_to(o) for o in out):
            out.append(root)
    return out


def sandbox_command(bwrap: str, *, writable=(), workdir=None, home=None) -> list:
    """The bubblewrap prefix that runs a command isolated (see the module docstring)."""
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grader",
           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
           "--tmpfs", "/var/tmp"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    for root in _read_only_roots():
        cmd += ["--ro-bind", str(root), str(root)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    venv_bin = str(Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": str(home or "/tmp"), "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if home is not None:
        env["IPYTHONDIR"] = str(Path(home) / ".ipython")
        env["MPLCONFIGDIR"] = str(Path(home) / ".matplotlib")
        env["JUPYTER_RUNTIME_DIR"] = str(Path(home) / ".jupyter-runtime")
    cmd.append("--clearenv")
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    if workdir is not None:
        cmd += ["--chdir", str(workdir)]
    return cmd + ["--"]


# -- executing one submission ---------------------------------------------------------------------
def _error(ename: str, evalue: str) -> dict:
    import nbformat

    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


class _NotGraded(Exception):
    """The grader (not the student's code) failed on this submission."""


def _execute(nb, original, *, timeout: int, bwrap: str | None) -> None:
    """Run ``nb``'s code cells in a fresh kernel (in place); inside bubblewrap unless
    ``bwrap`` is None. ``original`` (the student's file, as handed in) is the only file in the
    kernel's working directory. A cell that runs longer than ``timeout`` seconds, or a kernel
    that dies, ends the run: the cells not run get an error output saying why."""
    import subprocess

    from jupyter_client import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    with tempfile.TemporaryDirectory(prefix="clg-", dir="/tmp" if os.path.isdir("/tmp")
                                     else None) as tmp:
        box = Path(tmp)
        conn, work, home, specs = box / "c", box / "w", box / "h", box / "k" / "grading"
        for d in (conn, work, home, specs):
            d.mkdir(parents=True)
        if original is not None:
            shutil.copyfile(original, work / Path(original).name, follow_symlinks=False)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        if bwrap is not None:
            argv = sandbox_command(bwrap, writable=[conn, work, home], workdir=work,
                                   home=home) + argv
        (specs / "kernel.json").write_text(json.dumps(
            {"argv": argv, "display_name": "grading", "language": "python",
             "env": {} if bwrap is not None else {"HOME": str(home),
                                                   "IPYTHONDIR": str(home / ".ipython"),
                                                   "MPLBACKEND": "Agg"}}))
        ksm = KernelSpecManager(kernel_dirs=[str(box / "k")])
        km = AsyncKernelManager(kernel_spec_manager=ksm, kernel_name="grading", transport="ipc",
                           ip=str(conn / "s"), connection_file=str(conn / "kernel.json"))
        client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=True,
                                startup_timeout=120, record_timing=False,
                                shutdown_kernel="immediate")
        log_path = box / "kernel.log"
        stop = None
        with log_path.open("w") as log:
            try:
                try:
                    cm = client.setup_kernel(cwd=str(work), stdout=log, stderr=subprocess.STDOUT)
                    cm.__enter__()
                except Exception as exc:
                    text = log_path.read_text(errors="replace").strip()[-600:]
                    raise _NotGraded(f"the kernel did not start ({type(exc).__name__}: {exc}) "
                                     f"{text}".strip()) from None
                try:
                    for index, cell in enumerate(nb.cells):
                        if cell.cell_type != "code":
                            continue
                        if stop is not None:
                            cell.outputs = [_error("NotRun", stop)]
                            continue
                        try:
                            client.execute_cell(cell, index)
                        except CellTimeoutError:
                            cell.outputs.append(_error(
                                "TimeLimit", f"this cell ran longer than the time limit "
                                             f"({timeout} s) and was stopped"))
                            stop = (f"not run: an earlier cell ran longer than the time limit "
                                    f"({timeout} s)")
                        except DeadKernelError:
                            cell.outputs.append(_error(
                                "KernelDied", "the Python process died while running this "
                                              "cell (os._exit, a crash, or out of memory?)"))
                            stop = "not run: the Python process died in an earlier cell"
                finally:
                    with contextlib.suppress(Exception):
                        cm.__exit__(None, None, None)
            finally:
                with contextlib.suppress(Exception):
                    if client.kc is not None:
                        client.kc.stop_channels()
                with contextlib.suppress(Exception):
                    run_sync(km.shutdown_kernel)(now=True)
                proc = getattr(getattr(km, "provisioner", None), "process", None)
                if proc is not None and proc.poll() is None:
                    with contextlib.suppress(Exception):
                        os.killpg(proc.pid, 9)
                    with contextlib.suppress(Exception):
                        proc.kill()


# -- scoring --------------------------------------------------------------------------------------
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
                text = "graded by hand: not scored automatically"
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


def _apply_policy(results: list, merged, name: str) -> tuple:
    """Zero the checks ``classroom_policy.flagged_checks`` flags; (results, error or None)."""
    try:
        from crowdlearn.classroom.policy import flagged_checks
    except ImportError:
        flagged_checks = None
    if flagged_checks is None:
        return results, None
    try:
        flagged = dict(flagged_checks(merged, name) or {})
    except Exception as exc:  # the policy must not keep a class from being graded
        return results, f"the cheating checks failed: {type(exc).__name__}: {exc}"
    out = []
    for r in results:
        if r.check in flagged:
            why = str(flagged[r.check])
            r = r._replace(points=0.0, feedback=f"0 points: {why}" + (
                "" if r.feedback == "ok" else f" (the check itself: {r.feedback})"))
        out.append(r)
    return out, None


# -- grading --------------------------------------------------------------------------------------
class GradeResults(list):
    """The :class:`CheckResult` list :func:`grade` returns; ``.ungraded`` lists the
    ``(student, assignment, reason)`` of submissions the grader itself failed on."""

    ungraded: list

    def __init__(self, items=(), ungraded=()):
        super().__init__(items)
        self.ungraded = list(ungraded)


HAND_GRADED = "graded by hand"


def apply_marks(results, marks) -> GradeResults:
    """Put the instructor's marks for the hand-graded cells (written derivations) into
    ``results``.

    ``marks`` is a CSV file (or a list of dicts) with columns ``student``, ``assignment``,
    ``check`` (the answer cell's grade_id), ``points`` and optionally ``comment``. Each row
    must name a hand-graded cell of a graded submission, with ``0 <= points <= max``;
    anything else is a ``ValueError`` naming the row, so that a typo never silently
    leaves a mark out. Cells without a mark keep 0 points and say they await one.
    """
    if isinstance(marks, (str, os.PathLike)):
        with open(marks, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    else:
        rows = [dict(r) for r in marks]
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
    return GradeResults(out, getattr(results, "ungraded", []))


def _slug(name: str) -> str:
    """A file-system-safe folder name for a student (the CSV keeps the real one)."""
    import hashlib

    safe = re.sub(r"[^A-Za-z0-9._@+-]+", "_", name).strip("._-") or "student"
    if safe != name:
        digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        safe = f"{safe[:60]}-{digest}"
    return safe


def grade(submissions, source=None, *, assignments=None, report=None, course_dir=None,
          timeout: int = 300, jobs: int = 1, verbose: bool = False, sandbox: bool = True,
          totals=None, feedback=None, marks=None) -> GradeResults:
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
    timeout : int, default 300
        Seconds a single cell may run; the kernel and everything it started are then killed.
    jobs : int, default 1
        Grade up to this many assignments at once, in separate processes. Not with
        ``course_dir``.
    sandbox : bool, default True
        Run each submission in a bubblewrap sandbox (:class:`SandboxUnavailable` if bwrap is
        missing). ``False`` runs the students' code with your rights, and warns.
    totals : path, optional
        Per-student totals CSV (default ``<report stem>-totals.csv`` next to the report).
    feedback : path, optional
        Folder for ``<student>/<assignment>.txt`` and ``.html`` (default ``feedback/`` next to
        the report, or in ``course_dir``).
    marks : path or list of dict, optional
        The instructor's marks for the hand-graded derivations (see :func:`apply_marks`),
        counted in the reports and totals.

    Returns
    -------
    GradeResults
        A list of CheckResult, by student, then assignment, then notebook order. A submission
        that cannot be graded gets 0 on every check with the reason as feedback; if the grader
        itself failed, it is also in ``.ungraded``.
    """
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if jobs > 1 and course_dir is not None:
        raise ValueError("course_dir keeps one course directory: use it with jobs=1")
    bwrap = None
    if sandbox:
        bwrap = check_sandbox()
    else:
        print("warning: grading WITHOUT a sandbox (--no-sandbox): the students' code runs "
              "with your rights and can read the instructor's notebooks, change files and "
              "use the network", file=sys.stderr)
    known = find_assignments(source)
    chosen = _select(known, assignments)
    subs = {}
    for (student, name), path in _find_submissions(Path(submissions), known).items():
        for a in ([name] if name is not None else sorted(chosen)):
            if a in chosen:
                subs[(student, a)] = path
    if not subs:
        raise ValueError(f"no submissions of {sorted(chosen)} in {submissions}")
    names = {a: known[a] for a in sorted({a for _, a in subs})}
    root = _open_course(Path(course_dir)) if course_dir is not None else None
    if jobs > 1 and len(names) > 1:
        results = _grade_in_parallel(Path(submissions), source, subs, names, timeout, jobs,
                                     sandbox)
    else:
        results = _grade(subs, names, timeout, bwrap,
                         keep=root / "autograded" if root is not None else None)
    if root is not None:
        results = _merge_course(root, results)
    if marks is not None:
        results = apply_marks(results, marks)
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
    return results


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
    return GradeResults(merged, getattr(results, "ungraded", []))


def _grade_in_parallel(submissions: Path, source, subs: dict, names: dict, timeout: int,
                       jobs: int, sandbox: bool) -> GradeResults:
    """Split the assignments into ``jobs`` groups of about equal work; one process each."""
    import subprocess

    load = {a: sum(1 for _, b in subs if b == a) for a in names}
    groups = [[] for _ in range(min(jobs, len(names)))]
    for a in sorted(names, key=lambda a: -load[a]):
        min(groups, key=lambda g: sum(load[b] for b in g)).append(a)
    source = Path(source) if source is not None else _default_source()
    ungraded = []
    with tempfile.TemporaryDirectory(prefix="crowdlearn-grade-") as tmp:
        procs = []
        for i, group in enumerate(groups):
            part, log = Path(tmp) / f"part{i}.csv", Path(tmp) / f"part{i}.log"
            cmd = [sys.executable, "-m", "crowdlearn.classroom", "--source", str(source),
                   "grade", str(submissions), "--report", str(part), "--timeout", str(timeout),
                   "--feedback", str(Path(tmp) / f"feedback{i}")]
            if not sandbox:
                cmd.append("--no-sandbox")
            for a in group:
                cmd += ["--assignment", a]
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
    return GradeResults([r for key in subs for r in rows.get(key, [])], ungraded)


def _grade(subs: dict, names: dict, timeout: int, bwrap, keep=None) -> GradeResults:
    """Each submission: merged with the instructor's notebook, executed (sandboxed), scored."""
    instructors = {name: read_assignment(path) for name, path in names.items()}
    hidden = {name: _hidden_lines(nb) for name, nb in instructors.items()}
    results, ungraded = [], []
    log = logging.getLogger(__name__)
    for (student, name), path in subs.items():
        instructor = instructors[name]
        checks = grade_cells(instructor)

        def zero(why):
            return [CheckResult(student, name, cid, 0.0, pts, why) for cid, pts, _ in checks]

        if isinstance(path, _Refused):
            results += zero(f"not graded: {path.reason}")
            continue
        try:
            nb = _read_submission(path)
        except Exception as exc:  # not a notebook at all: graded 0, with the reason
            first = (str(exc).strip().splitlines() or [""])[0]
            results += zero(f"not graded: the file is not a notebook "
                            f"({type(exc).__name__}: {first})")
            continue
        try:
            merged, notes, missing = _merge(instructor, nb)
            import copy

            executed = copy.deepcopy(merged)
            _execute(executed, path, timeout=timeout, bwrap=bwrap)
            scored = _score(executed, instructor, name, student, notes, missing, hidden[name])
            scored, policy_error = _apply_policy(scored, merged, name)
            if policy_error:
                ungraded.append((student, name, policy_error))
            results += scored
            if keep is not None:
                _write_ipynb(executed, keep / _slug(student) / f"{name}.ipynb")
        except Exception as exc:  # the grader failed, not the student: say so, go on
            why = f"{type(exc).__name__}: {exc}".strip()
            log.error("could not grade %r / %s: %s", student, name, why)
            ungraded.append((student, name, why))
            results += zero(f"not graded (grader error, ask your instructor): {why[:300]}")
    return GradeResults(results, ungraded)


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
    """Write ``results`` as CSV to ``path`` and as JSON (checks, totals, and the submissions
    the grader failed on) next to it. Returns the two paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CheckResult._fields)
        writer.writerows(results)
    json_path = path.with_suffix(".json")
    json_path.write_text(json.dumps({"checks": [r._asdict() for r in results],
                                     "totals": _totals(results),
                                     "ungraded": [list(u) for u in
                                                  getattr(results, "ungraded", [])]},
                                    indent=1) + "\n", encoding="utf-8")
    return path, json_path


def write_totals(results, path, known=None) -> Path:
    """One row per student, one column per assignment (points; empty if not submitted) and
    ``total`` -- the CSV an LMS gradebook imports (the maxima are in the JSON report)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    per = {}
    for t in _totals(results):
        per.setdefault(t["submission"], {})[t["assignment"]] = t["points"]
    columns = sorted({a for row in per.values() for a in row})
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", *columns, "total"])
        for student in sorted(per):
            row = per[student]
            writer.writerow([student, *(f"{row[a]:g}" if a in row else "" for a in columns),
                             f"{sum(row.values()):g}"])
    return path


def write_feedback(results, folder) -> list:
    """``folder/<student>/<assignment>.txt`` and ``.html``: each check's points and message
    (never a test's source). ``<student>`` is the folder name made file-system safe."""
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
        lines = [f"{name}: {got:g} / {most:g} points", ""]
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


# -- command line ---------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m crowdlearn.classroom",
        description="Release student versions of the book's assignments (nbgrader), and "
                    "grade submissions: each one runs in a bubblewrap sandbox with the "
                    "instructor's cells restored. Exit status: 0, 1 if some submission "
                    "could not be graded (listed on stderr), 2 on a usage error.")
    parser.add_argument("--source", help="folder of instructor versions "
                                         "(default: book/assignments)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the assignments, their checks and points")
    rel = sub.add_parser("release", help="write the student versions to OUTDIR")
    rel.add_argument("outdir")
    rel.add_argument("--assignment", action="append",
                     help="release only this one (repeatable)")
    rel.add_argument("--no-kit", action="store_true",
                     help="do not add the student kit (the crowdlearn wheel, "
                          "requirements-student.txt, INSTALL.md) to OUTDIR")
    gra = sub.add_parser(
        "grade", help="grade SUBMISSIONS/<student>/<assignment>.ipynb",
        description="Grade every SUBMISSIONS/<student>/<assignment>.ipynb: the instructor's "
                    "notebook (hidden tests included) runs with the student's answer cells, "
                    "in a bubblewrap sandbox (no network, read-only system and package, no "
                    "access to the instructor's files or other submissions, killed with its "
                    "children at the time limit). A check scores its points iff it raises no "
                    "error; stderr output is not a failure.")
    gra.add_argument("submissions")
    gra.add_argument("--report", default="grades.csv",
                     help="per-check CSV report (a .json one is written next to it); "
                          "default grades.csv")
    gra.add_argument("--totals", help="per-student totals CSV for an LMS: one row per "
                                      "student, one column per assignment, and total "
                                      "(default: <report stem>-totals.csv next to the report)")
    gra.add_argument("--feedback", help="folder for <student>/<assignment>.txt and .html "
                                        "feedback (default: feedback/ next to the report, "
                                        "or in --course-dir)")
    gra.add_argument("--marks", help="CSV of marks for the hand-graded derivations: "
                                     "student,assignment,check,points[,comment]")
    gra.add_argument("--course-dir", help="a course directory kept across runs: earlier "
                                          "results are kept and merged into the reports, "
                                          "executed notebooks are kept in autograded/")
    gra.add_argument("--timeout", type=int, default=300,
                     help="seconds per cell; then the kernel and its children are killed "
                          "(default 300)")
    gra.add_argument("--assignment", action="append", help="grade only this one (repeatable)")
    gra.add_argument("-j", "--jobs", type=int, default=1,
                     help="grade this many assignments at once, in parallel processes")
    gra.add_argument("--no-sandbox", action="store_true",
                     help="run the students' code WITHOUT bubblewrap, with your rights "
                          "(prints a warning)")
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
            if not args.no_kit:
                from crowdlearn.classroom.kit import build_student_kit

                kit = build_student_kit(args.outdir)
                for path in kit.values():
                    if path is not None:
                        print(path)
                print(f"students install with: cd {args.outdir} && "
                      "python3 -m pip install -r requirements-student.txt (see INSTALL.md)")
        else:
            results = grade(args.submissions, args.source, assignments=args.assignment,
                            report=args.report, course_dir=args.course_dir,
                            timeout=args.timeout, jobs=args.jobs, verbose=args.verbose,
                            sandbox=not args.no_sandbox, totals=args.totals,
                            feedback=args.feedback, marks=args.marks)
            for t in _totals(results):
                print(f"{t['submission']!r:<20} {t['assignment']:<28} "
                      f"{t['points']:g} / {t['max_points']:g}")
            report = Path(args.report)
            print(f"per-check report: {report} and {report.with_suffix('.json')}; totals: "
                  f"{args.totals or report.with_name(report.stem + '-totals.csv')}")
            if results.ungraded:
                for student, name, why in results.ungraded:
                    print(f"error: could not grade {student!r} / {name}: {why}",
                          file=sys.stderr)
                print(f"error: {len(results.ungraded)} submission(s) could not be graded "
                      f"(they have 0 points and 'not graded' feedback in {report})",
                      file=sys.stderr)
                return 1
    except (ValueError, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
