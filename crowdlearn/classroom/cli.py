"""``python3 -m crowdlearn.classroom``: the instructor's command line (list, release, grade)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from crowdlearn.classroom.assignments import find_assignments, grade_cells, read_assignment
from crowdlearn.classroom.grading import grade, submission_status
from crowdlearn.classroom.releasing import release
from crowdlearn.classroom.reports import _totals
from crowdlearn.classroom.sandbox import Limits, SandboxUnavailable

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
    _limit_arguments(gra)


_LIMIT_HELP = {
    "memory": "address space of each process in the sandbox (default 4G)",
    "process": "processes and threads of a sandbox; enforced when grading as root "
               "(default 128)",
    "cpu": "CPU seconds of each process; the kernel is then stopped (default 600)",
    "file-size": "size of any one file the submission writes (default 256M)",
    "tmpfs": "size of each in-memory folder it may write: /tmp, /dev/shm, its working "
             "folder (default 256M)",
    "output": "output kept per cell, 8 times that per notebook; the rest is dropped "
              "with a note (default 4M)",
}


def _limit_arguments(gra) -> None:
    """--memory-limit etc.: the sandbox's :class:`~crowdlearn.classroom.sandbox.Limits`."""
    for name, text in _LIMIT_HELP.items():
        field = {"process": "processes"}.get(name, name.replace("-", "_"))
        kind = int if name in ("process", "cpu") else _size
        gra.add_argument(f"--{name}-limit", dest=f"{field}_limit", type=kind,
                         default=getattr(Limits(), field),
                         metavar="N" if kind is int else "SIZE",
                         help=text + ("" if kind is int else "; bytes, or with K, M, G"))


def _size(text: str) -> int:
    """``"4G"``, ``"256M"``, ``"512K"`` or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        if text[-1:] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (bytes, or 4G, 256M, 512K)")


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
                    feedback=args.feedback, marks=args.marks,
                    limits=Limits(*(getattr(args, f"{f}_limit") for f in Limits._fields)))
    for t in _totals(results):
        print(f"{t['submission']!r:<20} {t['assignment']:<28} "
              f"{t['points']:g} / {t['max_points']:g}")
    report = Path(args.report)
    print(f"per-check report: {report} and {report.with_suffix('.json')}; totals: "
          f"{args.totals or report.with_name(report.stem + '-totals.csv')}")
    _print_status(results)
    if results.ungraded:
        for student, name, why in results.ungraded:
            print(f"error: could not grade {student!r} / {name}: {why}", file=sys.stderr)
        print(f"error: {len(results.ungraded)} submission(s) could not be graded "
              f"(they have 0 points and 'not graded' feedback in {report})", file=sys.stderr)
        return 1
    return 0


def _print_status(results) -> None:
    """Every submission's status (graded, limit exceeded, not graded and why), then counts."""
    status = submission_status(results)
    print("status of each submission:")
    for (student, name), text in status.items():
        print(f"  {student!r:<20} {name:<28} {text[:300]}")
    kinds = {}
    for text in status.values():
        kind = text.split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    print("status: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
