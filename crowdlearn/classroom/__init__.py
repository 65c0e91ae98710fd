r"""Classroom assignments: release student versions (nbgrader) and grade submissions, each in a
bubblewrap sandbox.

The assignments are the MyST-markdown notebooks in ``book/assignments/``, written as the
*instructor* version: solutions sit between ``### BEGIN SOLUTION`` and ``### END SOLUTION``,
tests only the grader runs between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``,
and every cell nbgrader must know about carries its metadata as a code-cell option (a
``---`` YAML block ``nbgrader: {grade: true, grade_id: ..., points: 2, ...}``, as jupytext
writes it back), which jupytext turns into the notebook's cell metadata. The book executes these instructor versions at build
time, so every check runs against its solution.

* :func:`release` -- jupytext md -> ipynb -> ``nbgrader generate_assignment`` in a temporary
  course directory: solutions replaced by ``raise NotImplementedError()``, hidden tests
  removed, visible checks kept.
* :func:`grade` -- for each submission, on the instructor's side: the notebook that runs is the
  *instructor's* (setup, checks, hidden tests), with only the student's answer cells (matched
  by ``grade_id``) and the code cells the student added put in. Whatever the student did to
  the other cells -- edited a check or its metadata, deleted it, copied a cell twice -- the
  instructor's cell runs, and a note in that student's feedback says so. **Nothing the student
  runs decides a score**: the student's cells (and the instructor's setup cells) run in a
  kernel in a sandbox; every check cell and hidden test runs in the grader's own process
  (:mod:`~crowdlearn.classroom.trusted`), which calls the student's functions and reads the
  student's variables over a data-only channel (:mod:`~crowdlearn.classroom.channel`: numbers,
  strings, arrays, SymPy expressions as text rebuilt from an allowlist, handles for objects
  that stay in the kernel; no pickle, bounded sizes). A check scores all its points iff it
  raised no error there. The sandbox's copy of the package has the reference implementations
  the assignment asks for withheld (:mod:`~crowdlearn.classroom.withheld`). Cells nbgrader
  grades by hand (answers, tasks) are listed with 0 points and "graded by hand". Last,
  ``crowdlearn.classroom.policy.flagged_checks(nb, assignment)`` (a static audit) names
  checks for the instructor to review (``GradeResults.review``, ``<report>-review.csv``); it
  changes no score.

The sandbox (:func:`sandbox_command`) is bubblewrap (``apt-get install bubblewrap``). Only the
kernel runs in it -- the notebook client that sends it cells and reads its outputs stays
outside, so a submission cannot forge its results. Each kernel gets its own pid namespace
(``--unshare-pid``: everything it starts is killed with it, at the end or at the time
limit), no network (``--unshare-net``), a fresh ``/tmp``, read-only ``/usr``, ``/etc``, the
Python installation, the virtual environment and the ``crowdlearn`` package, and one private
writable working folder holding only its own submitted file; nothing else -- not the
instructor's sources, the course directory, the report or the other submissions -- exists
in it. It talks to the client over Unix sockets in a folder bound for that purpose.
``--die-with-parent`` ends it if the grader dies. Nobody inside has rights: uid 65534 in a
user namespace, no capabilities, ``no_new_privs``, and when the grader is root an unused host
uid of its own (see :mod:`~crowdlearn.classroom.sandbox`); every process in it, pid 1
included, has a minimal environment. :class:`Limits` bounds each submission's memory,
processes, CPU time, file size, in-memory folders and the output kept per cell; a submission
that hits one gets "exceeded the ... limit" and the others are graded; every process of the
sandbox is killed at the end. Before the first student the sandbox is started once
(:func:`probe_sandbox`) and must import the kernel, the package and the modules the
assignments import: if it cannot -- or bwrap is missing -- :func:`grade` raises
:class:`SandboxUnavailable` before grading anyone; ``--no-sandbox`` (``sandbox=False``)
grades without isolation, with a warning.

Command line (run from the repository root, or pass ``--source``)::

    python3 -m crowdlearn.classroom list
    python3 -m crowdlearn.classroom release OUTDIR
    python3 -m crowdlearn.classroom grade SUBMISSIONS_DIR --report grades.csv \
        [--totals totals.csv] [--feedback DIR] [--course-dir DIR] [--timeout 120] \
        [--assignment NAME] [--jobs N] [--marks marks.csv] [--no-sandbox] [--memory-limit 4G] \
        [--process-limit 128] [--cpu-limit 600] [--file-size-limit 256M] \
        [--tmpfs-limit 256M] [--output-limit 4M]
    python3 -m crowdlearn.classroom mark marks.csv --report grades.csv [--course-dir DIR]
    python3 -m crowdlearn.classroom export grades.csv --roster roster.csv \
        [--canvas canvas.csv] [--moodle moodle.csv] [--gradescope DIR]

Submissions are laid out one folder per student, ``SUBMISSIONS_DIR/<student>/<assignment>.ipynb``
(or nbgrader's own ``<student>/<assignment>/<assignment>.ipynb``; a jupytext ``.md`` works
too). Any folder name works (spaces, ``*``, a newline, a leading ``-``); symbolic links are
never followed (the submission scores 0, with the reason), a file that is not a notebook
scores 0 with the reason, other files are ignored with a warning. ``grade`` writes

* the report, one row per submission and check (``submission, assignment, check, points,
  max_points, feedback``) as CSV, and as JSON next to it (with totals);
* ``<report stem>-totals.csv`` (or ``--totals``): one row per student, one column per
  assignment and ``total``, for a spreadsheet (an LMS takes what ``export`` writes);
* ``feedback/<student>/<assignment>.txt`` and ``.html`` next to the report (or in
  ``--course-dir``, or ``--feedback``): each check's points and message, never a test's
  source;
* with ``--course-dir``: the results are kept there across runs (a submission graded again
  replaces its earlier result; the reports cover the whole class), and the executed
  notebooks in ``autograded/<student>/``.

``mark`` puts the instructor's marks for the hand-graded cells into the stored results
(:func:`remark`; nothing is graded again); ``export`` writes the Canvas, Moodle and
Gradescope imports (:mod:`~crowdlearn.classroom.exports`).

Every run ends with a status line per submission on stdout (graded, limit exceeded, kernel
died, time limit, or not graded and why; :func:`~crowdlearn.classroom.grading.submission_status`).
Exit status 0; 1 if the grader itself failed on a submission (each is listed on stderr, and
has 0 points with "not graded (grader error)" as feedback); 2 for a usage error or a sandbox
that is missing or cannot run a kernel.

The stages live in modules of their own (every public name is importable from here):
:mod:`~crowdlearn.classroom.assignments` (reading the instructor versions, the student's view
of a cell), :mod:`~crowdlearn.classroom.releasing`, :mod:`~crowdlearn.classroom.submissions`
(finding, reading and merging them with the instructor's cells),
:mod:`~crowdlearn.classroom.sandbox` (bubblewrap and the kernel),
:mod:`~crowdlearn.classroom.scoring`, :mod:`~crowdlearn.classroom.grading` (the whole
class), :mod:`~crowdlearn.classroom.reports`, :mod:`~crowdlearn.classroom.exports` (LMS
imports) and :mod:`~crowdlearn.classroom.cli`; the policy
audit and the student kit are :mod:`~crowdlearn.classroom.policy` and
:mod:`~crowdlearn.classroom.kit`. Their dependencies (nbgrader, nbclient, nbformat, jupytext)
are the ``crowdlearn[classroom]`` extra, imported only where used.
"""

from crowdlearn._lazy import attach

_NAMES = {
    **dict.fromkeys(["BEGIN_HIDDEN", "BEGIN_SOLUTION", "END_HIDDEN", "END_SOLUTION",
                     "STUDENT_STUB", "find_assignments", "grade_cells", "read_assignment",
                     "replace_solution", "solution_regions", "student_source"],
                    "crowdlearn.classroom.assignments"),
    "release": "crowdlearn.classroom.releasing",
    "WITHHELD": "crowdlearn.classroom.withheld",
    "_is_check": "crowdlearn.classroom.submissions",
    **dict.fromkeys(["Limits", "SandboxUnavailable", "check_sandbox", "probe_sandbox",
                     "sandbox_command"], "crowdlearn.classroom.sandbox"),
    **dict.fromkeys(["CheckResult", "GradeResults", "HAND_GRADED", "UNMARKED", "apply_marks",
                     "awaiting_mark", "read_marks", "_hidden_lines"],
                    "crowdlearn.classroom.scoring"),
    **dict.fromkeys(["grade", "remark", "submission_status"], "crowdlearn.classroom.grading"),
    **dict.fromkeys(["write_feedback", "write_report", "write_totals", "read_results"],
                    "crowdlearn.classroom.reports"),
    **dict.fromkeys(["RosterEntry", "read_roster", "read_assignment_map", "write_canvas",
                     "write_moodle", "write_gradescope", "gradescope_results"],
                    "crowdlearn.classroom.exports"),
    "main": "crowdlearn.classroom.cli",
    **{name: f"crowdlearn.classroom.{name}" for name in (
        "assignments", "channel", "cli", "exports", "grading", "kit", "policy", "releasing",
        "reports", "sandbox", "scoring", "submissions", "trusted", "withheld")},
}
"""Name -> the module it is imported from on first use: ``import crowdlearn.classroom.X``
loads module X only (the book's extensions read :mod:`~crowdlearn.classroom.assignments`)."""

__getattr__, __dir__ = attach(__name__, _NAMES)

__all__ = ["CheckResult", "find_assignments", "read_assignment", "grade_cells", "release",
           "grade", "replace_solution", "solution_regions", "student_source", "write_report",
           "write_totals", "write_feedback", "apply_marks", "GradeResults", "remark",
           "read_results", "read_marks", "read_roster", "read_assignment_map", "write_canvas",
           "write_moodle", "write_gradescope", "RosterEntry",
           "SandboxUnavailable", "check_sandbox", "sandbox_command", "main", "Limits",
           "probe_sandbox", "submission_status"]
