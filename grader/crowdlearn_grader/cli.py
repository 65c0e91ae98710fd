"""``python3 -m crowdlearn_grader``: the instructor's command line (list, release, grade,
mark, export)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from crowdlearn_grader.assignments import find_assignments, grade_cells, read_assignment
from crowdlearn_grader.grading import grade, remark, submission_status
from crowdlearn_grader.releasing import release
from crowdlearn_grader.reports import _score_line, _totals
from crowdlearn_grader.sandbox import Limits, SandboxUnavailable
from crowdlearn_grader.submissions import _is_check
from crowdlearn_grader import gradescope as _gradescope  # the gradescope command

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the command line (``argv``: its arguments, default ``sys.argv[1:]``); returns the
    exit status: 0, 1 if some submission could not be graded, 2 on a usage error or a
    missing sandbox."""
    args = _parser().parse_args(argv)
    if args.variant is not None:  # the variant's instructor notebooks instead of the book's
        from crowdlearn_grader.variants import variant_source
        if args.source is not None:
            print("error: give --source or --variant, not both", file=sys.stderr)
            return 2
        try:
            args.source = str(variant_source(args.variant))
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.WARNING)
    # progress on stderr as it goes: a bar on a terminal, else one line per submission
    logging.getLogger("crowdlearn_grader.progress").setLevel(logging.INFO)
    commands = {"list": _list, "release": _release, "grade": _grade, "mark": _mark,
                "export": _export, "gradescope": _gradescope.command}
    try:
        return commands[args.command](args)
    except (ValueError, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crowdlearn-grader",
        description="Release student versions of the book's assignments (nbgrader), and "
                    "grade submissions: each one runs in a bubblewrap sandbox with the "
                    "instructor's cells restored. Exit status: 0, 1 if some submission "
                    "could not be graded (listed on stderr), 2 on a usage error.")
    parser.add_argument("--source", help="folder of instructor versions (default: "
                                         "book/assignments)")
    parser.add_argument("--variant", help="the assignments' variant NAME (grader/variants/NAME: "
                        "the same tasks with other formulas, answers the book does not print) "
                        "for every command")
    parser.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the assignments, their checks and points")
    rel = sub.add_parser("release", help="write the student versions to OUTDIR")
    rel.add_argument("outdir")
    rel.add_argument("--assignment", action="append", help="release only this one (repeatable)")
    rel.add_argument("--no-kit", action="store_true", help="do not add the student kit (the "
                     "crowdlearn wheel, requirements-student.txt, INSTALL.md) to OUTDIR")
    _grade_arguments(sub)
    _mark_arguments(sub)
    _export_arguments(sub)
    _gradescope.add_arguments(sub)  # gradescope: one autograder .zip per assignment
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
    gra.add_argument("--report", default="grades.csv", help="per-check CSV report (a .json one "
                     "is written next to it); default grades.csv")
    gra.add_argument("--totals", help="per-student totals CSV for a spreadsheet (for an LMS, see "
                     "export): one row per student, one column per assignment, and total "
                     "(default: <report stem>-totals.csv next to the report)")
    gra.add_argument("--feedback", help="folder for <student>/<assignment>.txt and .html "
                     "feedback (default: feedback/ next to the report, or in --course-dir)")
    gra.add_argument("--marks", help="CSV of marks for the hand-graded derivations: "
                     "student,assignment,check,points[,comment] (checked before grading; to "
                     "apply marks later without grading again, use the mark command)")
    gra.add_argument("--course-dir", help="a course directory kept across runs: earlier "
                     "results are kept and merged into the reports, executed notebooks are "
                     "kept in autograded/")
    gra.add_argument("--timeout", type=int, default=120, help="seconds per cell; then the "
                     "kernel and its children are killed, and a fresh kernel runs the earlier "
                     "cells again and goes on (default 120; the slowest cell of an instructor "
                     "version takes a few seconds)")
    gra.add_argument("--assignment", action="append", help="grade only this one (repeatable)")
    gra.add_argument("-j", "--jobs", type=int, default=1, help="grade this many submissions at "
                     "once, whatever their assignment, each in a worker process of its own "
                     "(also with --course-dir)")
    gra.add_argument("--no-sandbox", action="store_true", help="run the students' code WITHOUT "
                     "bubblewrap, with your rights (prints a warning)")
    _limit_arguments(gra)


_LIMIT_HELP = {
    "memory": "address space of each process in the sandbox (default 4G)",
    "process": "processes and threads of a sandbox; enforced when grading as root (default 128)",
    "cpu": "CPU seconds of each process; the kernel is then stopped (default 600)",
    "file-size": "size of any one file the submission writes (default 256M)",
    "tmpfs": "size of each in-memory folder it may write: /tmp, /dev/shm, its working folder "
             "(default 256M)",
    "output": "output kept per cell, 8 times that per notebook; the rest is dropped with a note "
              "(default 4M)"}


def _limit_arguments(gra) -> None:
    """--memory-limit etc.: the sandbox's :class:`~crowdlearn_grader.sandbox.Limits`."""
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


def _mark_arguments(sub) -> None:
    mar = sub.add_parser(
        "mark", help="apply hand marks to graded results, without grading again",
        description="Put the marks for the hand-graded derivations into results graded "
                    "earlier (the report's .json, or --course-dir) and write the report, "
                    "totals and feedback anew. No submission runs again. The marks file is "
                    "the complete set: it replaces marks applied before.")
    mar.add_argument("marks", help="CSV: student,assignment,check,points[,comment]")
    mar.add_argument("--report", default="grades.csv", help="the report grade wrote (its .json "
                     "is read), written anew; default grades.csv")
    mar.add_argument("--course-dir", help="read the whole class's results from this course "
                     "directory instead of the report")
    mar.add_argument("--totals", help="totals CSV (default: <report stem>-totals.csv)")
    mar.add_argument("--feedback", help="feedback folder (default: feedback/ next to the "
                     "report, or in --course-dir)")


def _export_arguments(sub) -> None:
    exp = sub.add_parser(
        "export", help="gradebook files for Canvas and Moodle",
        description="Write LMS imports from graded results (the report's .json): a Canvas "
                    "gradebook CSV and a Moodle grade-import CSV (Gradescope takes grades "
                    "from its autograder: the gradescope command). The roster CSV (columns folder, name, id, "
                    "sis_user_id, sis_login_id, section, email, idnumber) ties each "
                    "submission folder to the student's LMS identity.")
    exp.add_argument("report", nargs="?", default="grades.csv",
                     help="the report grade wrote (default grades.csv; its .json is read)")
    exp.add_argument("--roster", help="roster CSV (needed for --canvas and --moodle)")
    exp.add_argument("--canvas", help="write the Canvas gradebook import CSV here")
    exp.add_argument("--moodle", help="write the Moodle grade import CSV here (and the students "
                     "without an identifier to <stem>-unmatched.csv)")
    exp.add_argument("--moodle-id", choices=["email", "idnumber"], default="email",
                     help="the roster column Moodle matches users by (default email)")
    exp.add_argument("--assignment-map", help="CSV assignment,name,canvas_id: the LMS's name "
                     "(and Canvas id) of each assignment")
    exp.add_argument("--missing", choices=["blank", "zero"], default="blank", help="what a "
                     "roster student without a submission gets (default blank: the LMS keeps "
                     "its grade)")


def _list(args) -> int:
    for name, path in find_assignments(args.source).items():
        nb = read_assignment(path)
        checks = grade_cells(nb)
        by_hand = {c.metadata["nbgrader"]["grade_id"] for c in nb.cells
                   if c.get("metadata", {}).get("nbgrader", {}).get("grade")
                   and not _is_check(c.metadata["nbgrader"])}
        total = sum(p for _, p, _ in checks)
        hand = sum(p for cid, p, _ in checks if cid in by_hand)
        print(f"{name}  ({total:g} points: {total - hand:g} autograded + {hand:g} by hand, "
              f"{len(checks)} cells)  {path}")
        for cid, pts, hidden in checks:
            note = ("  (graded by hand)" if cid in by_hand
                    else "  (has hidden tests)" if hidden else "")
            print(f"    {cid:<28} {pts:>4g}{note}")
    return 0


def _release(args) -> int:
    for path in release(args.outdir, args.source, args.assignment, verbose=args.verbose):
        print(path)
    if not args.no_kit:
        from crowdlearn_grader.kit import build_student_kit
        kit = build_student_kit(args.outdir)
        for path in kit.values():
            if path is not None:
                print(path)
        print(f"students install with: cd {args.outdir} && "
              "python3 -m pip install -r requirements-student.txt (see INSTALL.md)")
    return 0


def _grade(args) -> int:
    results = grade(args.submissions, args.source, assignments=args.assignment,
                    report=args.report, course_dir=args.course_dir, timeout=args.timeout,
                    jobs=args.jobs, verbose=args.verbose, sandbox=not args.no_sandbox,
                    totals=args.totals, feedback=args.feedback, marks=args.marks, progress=True,
                    limits=Limits(*(getattr(args, f"{f}_limit") for f in Limits._fields)))
    _print_scores(results)
    report = Path(args.report)
    print(f"per-check report: {report} and {report.with_suffix('.json')}; totals: "
          f"{args.totals or report.with_name(report.stem + '-totals.csv')}")
    _print_status(results)
    if results.ungraded:
        for student, name, why in results.ungraded:
            print(f"error: could not grade {student!r} / {name}: {why}", file=sys.stderr)
        print(f"error: {len(results.ungraded)} submission(s) could not be graded "
              f"(0 points and 'not graded' feedback in {report}; their cells are left empty "
              "in the totals and the exports)", file=sys.stderr)
        return 1
    return 0


def _print_scores(results) -> None:
    """One line per submission; points awaiting a hand mark are shown as such, not lost."""
    for t in _totals(results, pending=True):
        print(f"{t['submission']!r:<20} {t['assignment']:<28} "
              f"{_score_line(t['points'], t['max_points'], t['to_be_marked'])}")


def _mark(args) -> int:
    results = remark(args.marks, report=args.report, course_dir=args.course_dir,
                     totals=args.totals, feedback=args.feedback)
    _print_scores(results)
    report = Path(args.report)
    print(f"marks applied (nothing graded again); per-check report: {report} and "
          f"{report.with_suffix('.json')}; totals: "
          f"{args.totals or report.with_name(report.stem + '-totals.csv')}")
    return 0


def _export(args) -> int:
    from crowdlearn_grader import exports
    from crowdlearn_grader.reports import read_results
    if not (args.canvas or args.moodle):
        raise ValueError("nothing to export: give --canvas and/or --moodle (Gradescope takes "
                         "grades from its autograder: the gradescope command)")
    if not args.roster:
        raise ValueError("--canvas and --moodle need --roster (folder,name,id,...)")
    results = read_results(args.report)
    warnings, written = [], []
    if args.canvas:
        warnings += exports.write_canvas(results, args.roster, args.canvas,
                                         assignment_map=args.assignment_map,
                                         missing=args.missing)
        written.append(args.canvas)
    if args.moodle:
        warnings += exports.write_moodle(results, args.roster, args.moodle,
                                         identifier=args.moodle_id,
                                         assignment_map=args.assignment_map,
                                         missing=args.missing)
        written.append(args.moodle)
    for w in dict.fromkeys(warnings):
        print(f"warning: {w}", file=sys.stderr)
    for w in written:
        print(w)
    return 0


def _print_status(results) -> None:
    """Every submission's status (graded, limit exceeded, not graded and why), then counts."""
    status = submission_status(results)
    review = getattr(results, "review", [])
    if review:
        print(f"for review (the audit's notes; no score changed): {len(review)} checks of "
              f"{len({(s, a) for s, a, _, _ in review})} submissions, listed in the report's "
              "-review.csv")
    print("status of each submission:")
    for (student, name), text in status.items():
        print(f"  {student!r:<20} {name:<28} {text[:300]}")
    kinds = {}
    for text in status.values():
        kind = text.split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    print("status: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
