"""``python3 -m crowdlearn.classroom``: the instructor's command line (list, release, grade)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from crowdlearn.classroom.assignments import find_assignments, grade_cells, read_assignment
from crowdlearn.classroom.grading import grade
from crowdlearn.classroom.releasing import release
from crowdlearn.classroom.reports import _totals
from crowdlearn.classroom.sandbox import SandboxUnavailable

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the command line (``argv``: its arguments, default ``sys.argv[1:]``); returns the
    exit status: 0, 1 if some submission could not be graded, 2 on a usage error or a
    missing sandbox."""
    args = _parser().parse_args(argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.WARNING)
    commands = {"list": _list, "release": _release, "grade": _grade}
    try:
        return commands[args.command](args)
    except (ValueError, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
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
    _grade_arguments(sub)
    return parser


def _grade_arguments(sub) -> None:
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


def _list(args) -> int:
    for name, path in find_assignments(args.source).items():
        checks = grade_cells(read_assignment(path))
        total = sum(p for _, p, _ in checks)
        print(f"{name}  ({total:g} points, {len(checks)} checks)  {path}")
        for cid, pts, hidden in checks:
            print(f"    {cid:<28} {pts:>4g}{'  (has hidden tests)' if hidden else ''}")
    return 0


def _release(args) -> int:
    for path in release(args.outdir, args.source, args.assignment, verbose=args.verbose):
        print(path)
    if not args.no_kit:
        from crowdlearn.classroom.kit import build_student_kit

        kit = build_student_kit(args.outdir)
        for path in kit.values():
            if path is not None:
                print(path)
        print(f"students install with: cd {args.outdir} && "
              "python3 -m pip install -r requirements-student.txt (see INSTALL.md)")
    return 0


def _grade(args) -> int:
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
            print(f"error: could not grade {student!r} / {name}: {why}", file=sys.stderr)
        print(f"error: {len(results.ungraded)} submission(s) could not be graded "
              f"(they have 0 points and 'not graded' feedback in {report})", file=sys.stderr)
        return 1
    return 0
