"""A fatal cell costs only the checks that need it; ``--jobs`` grades submissions in parallel.

* A cell that loops forever, forks until the process limit, or kills its own kernel, put in
  the middle of an otherwise honest ``a1_naive_bayes_mle`` (at the start of the
  ``feature_derivation`` answer): that answer's two checks lose their points, saying the name
  they need was not defined because its cell failed; every later, independent check keeps its
  points (the kernel is restarted, the earlier cells run again, grading goes on).
* ``jobs=2`` over several notebooks of one assignment gives exactly the grades of ``jobs=1``.
* A file that is no notebook: the command exits with status 1, and the totals, Canvas and
  Moodle exports leave its cell empty (not 0).

No timing is asserted: the cell time limit (30 s) only guards against a hang.
"""

from __future__ import annotations

import csv
import os
import textwrap

import pytest

from support import BOOK, bwrap  # noqa: F401  (a fixture)

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader import exports  # noqa: E402

pytestmark = pytest.mark.notebook

SOURCE = BOOK / "assignments"
A1 = "a1_naive_bayes_mle"
TIMEOUT = 30  # a guard: a1's cells take well under a second on a quiet machine
FATAL_IN = "feature_derivation"          # its answer defines what these checks need:
LOST = {"check_bernoulli", "check_curvature"}

FATAL = {
    # never returns (asleep, so the run spends the time limit, not a core, on it)
    "loop": ("import time\nwhile True:\n    time.sleep(1)", "time limit"),
    "kill": ("import os\nos.kill(os.getpid(), 9)", "ended the kernel"),
    "fork": ("import os, time\n"
             "while True:\n"
             "    if os.fork() == 0:\n"
             "        time.sleep(60)\n"
             "        os._exit(0)", "process limit"),
}


@pytest.fixture(scope="module")
def instructor():
    nb = classroom.read_assignment(SOURCE / f"{A1}.md")
    nb.metadata.pop("jupytext", None)
    return nb


def _auto(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells if classroom._is_check(c.metadata.get("nbgrader", {}))}


def _put(folder, student, nb, name=A1):
    (folder / student).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / student / f"{name}.ipynb"))


def _with_fatal(nb, code: str):
    original = classroom.solution_regions(nb)[FATAL_IN][0]
    return classroom.replace_solution(nb, FATAL_IN, code + "\n" + textwrap.dedent(original))


def _by(results) -> dict:
    out = {}
    for r in results:
        out.setdefault(r.submission, {})[r.check] = r
    return out


@pytest.fixture(scope="module")
def fatal(bwrap, instructor, tmp_path_factory):
    """An honest student and one per fatal cell; the fork bomb only when the grader is root
    (the process limit is enforced only then)."""
    subs = tmp_path_factory.mktemp("fatal") / "subs"
    _put(subs, "honest", instructor)
    kinds = [k for k in FATAL if k != "fork" or os.geteuid() == 0]
    for kind in kinds:
        _put(subs, kind, _with_fatal(instructor, FATAL[kind][0]))
    return kinds, _by(classroom.grade(subs, SOURCE, timeout=TIMEOUT))


@pytest.mark.parametrize("kind", sorted(FATAL))
def test_a_fatal_cell_costs_only_the_checks_that_need_it(fatal, instructor, kind):
    kinds, by = fatal
    if kind not in kinds:
        pytest.skip("the process limit (and so a fork bomb) needs a root grader")
    auto = _auto(instructor)
    assert all(by["honest"][c].points == auto[c] for c in auto)
    checks = by[kind]
    for cid in LOST:
        assert checks[cid].points == 0, checks[cid]
        text = checks[cid].feedback
        assert "is not defined" in text and FATAL[kind][1] in text, text
    kept = {cid: checks[cid].points for cid in auto if cid not in LOST}
    assert kept == {cid: auto[cid] for cid in kept}  # the later ones among them included
    order = list(auto)
    assert any(order.index(cid) > order.index(max(LOST, key=order.index)) for cid in kept)


def test_jobs_2_gives_the_grades_of_jobs_1(bwrap, instructor, tmp_path):
    subs = tmp_path / "subs"
    buggy = classroom.replace_solution(instructor, "estimator", """
    n_y = W.sum(axis=0)
    s = W.T @ X
    prior = n_y / X.shape[0]
    feature_prob = s / n_y[:, None]
    """)
    for student, nb in (("ann", instructor), ("bob", buggy)):  # two at once with jobs=2
        _put(subs, student, nb)
    graded = {}
    for jobs in (1, 2):
        results = classroom.grade(subs, SOURCE, timeout=TIMEOUT, jobs=jobs,
                                  report=tmp_path / f"jobs{jobs}.csv")
        graded[jobs] = [(r.submission, r.check, r.points, r.feedback) for r in results]
    assert graded[1] == graded[2]
    points = {s: sum(p for t, _, p, _ in graded[2] if t == s) for s in ("ann", "bob")}
    assert points["ann"] > points["bob"]  # the bug is seen in parallel too


def test_a_file_that_is_no_notebook_fails_the_run_and_stays_empty(bwrap, instructor, tmp_path,
                                                                  capsys, caplog):
    subs = tmp_path / "subs"
    _put(subs, "ann", instructor)
    (subs / "zed").mkdir()
    (subs / "zed" / f"{A1}.ipynb").write_text("my answers: 42\n")
    report = tmp_path / "grades.csv"
    assert classroom.main(["--source", str(SOURCE), "grade", str(subs), "--report",
                           str(report), "--jobs", "2", "--timeout", str(TIMEOUT)]) == 1
    err = capsys.readouterr().err
    assert "could not grade 'zed'" in err and "not a notebook" in err
    progress = [r.getMessage() for r in caplog.records
                if r.name == "crowdlearn_grader.progress"]  # stderr is no terminal here
    assert len(progress) == 2 and "left" in progress[0] and "[2/2]" in progress[-1]
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,name,id,email\nann,Ann,1,ann@x.org\nzed,Zed,3,zed@x.org\n",
                      encoding="utf-8")
    canvas, moodle = tmp_path / "canvas.csv", tmp_path / "moodle.csv"
    warnings = exports.write_canvas(report, roster, canvas)
    exports.write_moodle(report, roster, moodle)
    assert any("'zed'" in w and "left empty" in w for w in warnings), warnings
    rows = list(csv.reader(canvas.open(newline="", encoding="utf-8")))
    column = rows[0].index(A1)
    cells = {r[1]: r[column] for r in rows[2:]}  # by Canvas ID
    assert cells["3"] == "" and float(cells["1"]) > 0, cells
    rows = list(csv.reader(moodle.open(newline="", encoding="utf-8")))
    cells = {r[0]: r[rows[0].index(A1)] for r in rows[1:]}  # by e-mail
    assert cells["zed@x.org"] == "" and float(cells["ann@x.org"]) > 0, cells
    totals = {r["student"]: r for r in csv.DictReader(
        (tmp_path / "grades-totals.csv").open(newline="", encoding="utf-8"))}
    assert totals["zed"][A1] == "" and float(totals["ann"][A1]) > 0


def test_progress_is_a_bar_with_the_time_left_on_a_terminal(monkeypatch, caplog):
    """On a terminal, a tqdm bar (with the time left) instead of the per-submission lines."""
    import io
    import logging

    from crowdlearn_grader import grading

    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    row = classroom.CheckResult("ann", A1, "check_prior", 2.0, 2.0, "ok")
    with caplog.at_level(logging.INFO, logger="crowdlearn_grader.progress"):
        shown = grading._Progress(2, bar=True)
        shown.step("ann", A1, [row], 1.0)
        shown.step("bob", A1, [row], 1.0)
        shown.close()
    text = screen.getvalue()
    assert "2/2" in text and "submission" in text and "<" in text  # elapsed<left
    assert not [r for r in caplog.records if r.name == "crowdlearn_grader.progress"]
