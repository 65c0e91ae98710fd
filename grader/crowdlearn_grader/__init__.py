r"""crowdlearn-grader: release the book's assignments and grade a class, trusting nothing a
student's notebook computes.

The assignments are the MyST notebooks in ``book/assignments/``, written as the instructor's
version (nbgrader's ``### BEGIN SOLUTION`` / ``### BEGIN HIDDEN TESTS`` regions, cell metadata
as jupytext code-cell options; each front matter's ``grading: withheld:`` names, in the
package's public names, what the sandbox takes out while it is graded).

* :func:`release` writes the student versions (nbgrader ``generate_assignment``).
* :func:`grade` runs, per submission, the instructor's notebook with the student's answer
  cells put in: the student's cells in a kernel inside a bubblewrap sandbox
  (:mod:`~crowdlearn_grader.sandbox`: no network, own pid namespace, read-only system, limits,
  no rights), every check in the grader's own process (:mod:`~crowdlearn_grader.trusted`) on
  data the kernel hands over a data-only channel (:mod:`~crowdlearn_grader.channel`). A check
  scores its points iff it raised nothing there. A cell that times out or kills the kernel
  costs only the checks that need it (the kernel restarts, earlier cells replay).
  :mod:`~crowdlearn_grader.review` lists code that imitates work for the instructor to read.
* :mod:`~crowdlearn_grader.exports` writes Canvas, Moodle and Gradescope files;
  :mod:`~crowdlearn_grader.gradescope` builds Gradescope autograder zips.

The command line is ``crowdlearn-grader`` (or ``python -m crowdlearn_grader``): ``list``,
``release``, ``grade``, ``mark``, ``export``, ``gradescope``; the README's "Teaching with the
book" documents each.
"""

import importlib

_NAMES = {
    **dict.fromkeys(["BEGIN_HIDDEN", "BEGIN_SOLUTION", "END_HIDDEN", "END_SOLUTION",
                     "STUDENT_STUB", "find_assignments", "grade_cells", "read_assignment",
                     "replace_solution", "solution_regions", "student_source",
                     "withheld_names"], "assignments"),
    "_is_check": "submissions",
    "_hidden_lines": "scoring",
    "release": "releasing",
    **dict.fromkeys(["Limits", "SandboxUnavailable", "check_sandbox", "probe_sandbox",
                     "sandbox_command"], "sandbox"),
    **dict.fromkeys(["CheckResult", "GradeResults", "HAND_GRADED", "UNMARKED", "apply_marks",
                     "awaiting_mark", "read_marks"], "scoring"),
    **dict.fromkeys(["grade", "remark", "submission_status"], "grading"),
    **dict.fromkeys(["write_feedback", "write_report", "write_totals", "read_results"],
                    "reports"),
    **dict.fromkeys(["RosterEntry", "read_roster", "read_assignment_map", "write_canvas",
                     "write_moodle", "gradescope_results"], "exports"),
    "main": "cli",
}
"""Name -> the module it comes from, imported on first use (``import crowdlearn_grader.X``
loads module X only; the book's extensions read :mod:`~crowdlearn_grader.assignments`)."""

__all__ = sorted(n for n in _NAMES if not n.startswith("_"))


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
