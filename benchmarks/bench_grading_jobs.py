"""Benchmark: grading a class with ``--jobs 1`` and ``--jobs 2``, side by side in one run.

Run from the repository root (needs bubblewrap, as grading does)::

    .venv/bin/python benchmarks/bench_grading_jobs.py [--students 30] [--assignment a1_naive_bayes_mle]

Makes a class of ``--students`` submissions of one assignment (the instructor's notebook, as
the tests' honest students, so every check runs to the end), grades it with ``jobs=1`` and
then ``jobs=2`` into separate reports, checks that both give the same points, and prints the
wall time of each, the machine's load average around it, and their ratio. ``--jobs N`` keeps N
worker processes busy, each grading one submission at a time, whatever its assignment, so a
class of one assignment is split too. Not a test: nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import nbformat

import crowdlearn_grader as classroom

SOURCE = Path(__file__).resolve().parents[1] / "book" / "assignments"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--assignment", default="a1_naive_bayes_mle")
    args = parser.parse_args()
    nb = classroom.read_assignment(SOURCE / f"{args.assignment}.md")
    nb.metadata.pop("jupytext", None)
    print(f"{args.students} submissions of {args.assignment}, {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "subs"
        for i in range(args.students):
            (subs / f"s{i:02d}").mkdir(parents=True)
            nbformat.write(nb, str(subs / f"s{i:02d}" / f"{args.assignment}.ipynb"))
        times, points = {}, {}
        for jobs in (1, 2):
            start = time.perf_counter()
            results = classroom.grade(subs, SOURCE, jobs=jobs, report=Path(tmp) / f"j{jobs}.csv")
            times[jobs] = time.perf_counter() - start
            points[jobs] = sorted((r.submission, r.check, r.points) for r in results)
            print(f"  jobs={jobs}: {times[jobs]:6.1f} s  ({times[jobs] / args.students:.1f} s "
                  f"per submission; load average {os.getloadavg()[1]:.1f} over the last 5 min)")
        assert points[1] == points[2], "the two runs disagree"
        print(f"  jobs=2 / jobs=1 time: {times[2] / times[1]:.2f} "
              f"(speed-up {times[1] / times[2]:.2f}x)")


if __name__ == "__main__":
    main()
