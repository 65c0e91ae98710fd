r"""crowdlearn-grader: release the book's assignments and grade a class, trusting nothing a
student's notebook computes: the student's code runs in a bubblewrap sandbox
(:mod:`~crowdlearn_grader.sandbox`), every check in the grader's process
(:mod:`~crowdlearn_grader.trusted`) on data from a data-only :mod:`~crowdlearn_grader.channel`.
The command line is ``crowdlearn-grader``; the README's "Teaching with the book" documents it.
"""

import importlib

# name -> its module, imported on first use (the book's extensions load ``assignments`` only)
_NAMES = {name: module for module, names in {
    "assignments": "BEGIN_HIDDEN BEGIN_SOLUTION END_HIDDEN END_SOLUTION STUDENT_STUB "
                   "find_assignments grade_cells read_assignment replace_solution "
                   "solution_regions student_source withheld_names",
    "submissions": "_is_check", "releasing": "release",
    "grading": "grade remark submission_status",
    "sandbox": "Limits SandboxUnavailable check_sandbox probe_sandbox sandbox_command",
    "scoring": "_hidden_lines CheckResult GradeResults HAND_GRADED UNMARKED apply_marks "
               "awaiting_mark read_marks",
    "reports": "write_feedback write_report write_totals read_results",
    "exports": "RosterEntry read_roster read_assignment_map write_canvas write_moodle "
               "gradescope_results", "cli": "main"}.items() for name in names.split()}

__all__ = sorted(n for n in _NAMES if not n.startswith("_"))


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
