"""The grader of crowdlearn_grader against hostile, tampered and odd submissions.

Every submission is made from the instructor's notebook of ``a1_naive_bayes_mle`` (the quickest
to run) with ``classroom.replace_solution``, then spoiled:

* escapes (each must fail inside the bubblewrap sandbox): reading the instructor's source,
  opening the course's gradebook/results, writing into another student's folder or into the
  package, opening a network socket, leaving processes behind, running past the time limit;
* tampering and odd layouts (each graded on its own merits, never affecting another student):
  a copy-pasted cell, folder names with a newline / ``*`` / spaces / a leading ``-``, symbolic
  links, a file that is no notebook, a check cell edited / with edited metadata / deleted (restored and run);
* what an instructor needs: per-student totals, feedback files without hidden tests, a course
  directory kept across runs, stderr noise that does not fail a check, the cheating policy's
  flags applied.

The sandbox tests need bubblewrap (``apt-get install bubblewrap``): skipped without it, failed
under CI.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import select
import socket
import sys
import types
from pathlib import Path

import pytest

from support import BOOK, bwrap  # noqa: F401  (a fixture)

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader import grading, sandbox  # noqa: E402

pytestmark = pytest.mark.notebook

SOURCE = BOOK / "assignments"
A1 = "a1_naive_bayes_mle"
A1_MD = (SOURCE / f"{A1}.md").resolve()
PACKAGE = Path(classroom.__file__).resolve().parent
TIMEOUT = 30  # a cell time limit: a1's cells take well under a second on a quiet machine


@pytest.fixture(scope="module")
def no_policy():
    """The static audit (crowdlearn_grader.review.flagged_checks, tested on its own)
    switched off: these tests see the grader's own scores and no notes for review (the
    audit never changes a score; its integration is tested with a fake one)."""
    from crowdlearn_grader import review as policy

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(policy, "flagged_checks", lambda nb, name, **kw: {})
        yield


@pytest.fixture(scope="module")
def instructor():
    nb = classroom.read_assignment(A1_MD)
    nb.metadata.pop("jupytext", None)
    return nb


def _auto(nb) -> dict:
    """grade_id -> points of the automatically scored checks."""
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells
            if classroom._is_check(c.metadata.get("nbgrader", {}))}


def _prepend(nb, grade_id: str, code: str):
    """``nb`` with ``code`` run at the start of solution region ``grade_id``."""
    original = classroom.solution_regions(nb)[grade_id][0]
    import textwrap

    return classroom.replace_solution(nb, grade_id, textwrap.dedent(code).strip("\n") + "\n"
                                      + textwrap.dedent(original))


def _put(folder: Path, student: str, nb, name: str = A1) -> Path:
    (folder / student).mkdir(parents=True, exist_ok=True)
    path = folder / student / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _by(results) -> dict:
    out = {}
    for r in results:
        out.setdefault(r.submission, {})[r.check] = r
    return out


# the hostile students' background processes sleep for a time unique to this test run, so
# that another run on the same machine (its own hostile class) is never mistaken for ours
RUN_TAG = f"{os.getpid() % 100_000:05d}"
SLEEPS = tuple(f"{seconds}.{RUN_TAG}" for seconds in (4321, 4322, 4323))


def _processes_with(marker: str) -> list:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmd and "pytest" not in cmd:
            found.append((pid, cmd))
    return found


# -- the hostile class -----------------------------------------------------------------------------
FEATURE_BY_M = """
    n_y = W.sum(axis=0)
    s = W.T @ X
    prior = n_y / n_y.sum()
    feature_prob = s / X.shape[0]
    """
PRIOR_BY_M = """
    n_y = W.sum(axis=0)
    s = W.T @ X
    prior = n_y / X.shape[0]
    feature_prob = s / n_y[:, None]
    """


@pytest.fixture(scope="module")
def hostile(bwrap, no_policy, instructor, tmp_path_factory):
    """Two runs in one course directory: an honest student first, then the hostile class."""
    base = tmp_path_factory.mktemp("hostile")
    course, subs = base / "course", base / "submissions"
    first = base / "first"
    _put(first, "first", instructor)
    classroom.grade(first, SOURCE, course_dir=course, timeout=TIMEOUT)
    gradebook = course / "gradebook.db"   # a gradebook the instructor keeps there
    gradebook.write_bytes(b"SQLite format 3\0 the instructor's grades")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    honest_path = _put(subs, "z_honest", instructor)
    escapes = {
        "a_read_source": f"print(open({str(A1_MD)!r}).read()[:50])",
        "a_list_book": f"import os; print(os.listdir({str(BOOK)!r}))",
        "b_gradebook": f"open({str(gradebook)!r}, 'r+b').write(b'zeroed')",
        "b_results": f"open({str(course / 'crowdlearn-course.json')!r}, 'w').write('{{}}')",
        "c_write_other": f"open({str(honest_path)!r}, 'w').write('{{}}')",
        "c_plant_file": f"open({str(subs / 'z_honest' / 'planted.txt')!r}, 'w').write('x')",
        "c_write_package": f"open({str(PACKAGE / 'planted.py')!r}, 'w').write('x')",
        "d_network": f"import socket; socket.create_connection(('127.0.0.1', {port}), "
                     "timeout=5)",
    }
    for student, code in escapes.items():
        _put(subs, student, _prepend(instructor, "prior_derivation", code))
    _put(subs, "e_background", _prepend(instructor, "prior_derivation", f"""
        import os, subprocess
        subprocess.Popen(["sleep", "{SLEEPS[0]}"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "{SLEEPS[1]}"])
        """))
    _put(subs, "f_timeout", _prepend(instructor, "prior_derivation", f"""
        import subprocess, time
        subprocess.Popen(["sleep", "{SLEEPS[2]}"])
        time.sleep(1000)
        """))
    _put(subs, "w_warns", _prepend(instructor, "estimator", """
        import sys, warnings
        warnings.warn("a harmless RuntimeWarning", RuntimeWarning)
        print("some noise on stderr", file=sys.stderr)
        """))
    _put(subs, "m_prior_by_m", classroom.replace_solution(instructor, "estimator", PRIOR_BY_M))
    report = base / "grades.csv"
    try:
        results = classroom.grade(subs, SOURCE, course_dir=course, report=report,
                                  timeout=TIMEOUT)
        pending = select.select([server], [], [], 0)[0]
    finally:
        server.close()
    return {"results": results, "by": _by(results), "course": course, "subs": subs,
            "gradebook": gradebook, "report": report, "pending": pending, "base": base,
            "escapes": escapes, "honest_path": honest_path}


ESCAPE_ERRORS = {
    "a_read_source": "FileNotFoundError", "a_list_book": "FileNotFoundError",
    "b_gradebook": "FileNotFoundError", "b_results": "FileNotFoundError",
    "c_write_other": "FileNotFoundError", "c_plant_file": "FileNotFoundError",
    "c_write_package": "OSError",  # [Errno 30] Read-only file system
    "d_network": "ConnectionRefusedError",
}


@pytest.mark.parametrize("student", sorted(ESCAPE_ERRORS))
def test_each_escape_fails_in_the_sandbox(hostile, instructor, student):
    checks = hostile["by"][student]
    auto = _auto(instructor)
    lost = {cid for cid, r in checks.items() if cid in auto and r.points < r.max_points}
    assert lost == {"check_lagrangian", "check_prior"}, {c: checks[c].feedback for c in lost}
    assert ESCAPE_ERRORS[student] in checks["check_lagrangian"].feedback
    assert "prior_derivation" in checks["check_lagrangian"].feedback


def test_escapes_left_no_trace_on_the_host(hostile, instructor):
    assert hostile["gradebook"].read_bytes().startswith(b"SQLite format 3\0 the instructor")
    assert nbformat.read(str(hostile["honest_path"]), as_version=4).cells
    assert not (hostile["subs"] / "z_honest" / "planted.txt").exists()
    assert not (PACKAGE / "planted.py").exists()
    assert not hostile["pending"], "a submission reached a socket on the host"
    # and the students graded after the hostile ones are unaffected
    honest = hostile["by"]["z_honest"]
    auto = _auto(instructor)
    assert all(honest[c].points == auto[c] and honest[c].feedback == "ok" for c in auto)


def test_no_process_outlives_its_submission(hostile, instructor):
    for seconds in SLEEPS:
        assert not _processes_with(f"sleep {seconds}"), seconds
    auto = _auto(instructor)
    background = hostile["by"]["e_background"]
    assert all(background[c].points == auto[c] for c in auto)  # no harm done, no penalty


def test_a_cell_past_the_time_limit_is_killed(hostile, instructor):
    """It costs only the checks of its answer: the kernel is restarted and grading goes on
    (more in test_classroom_restart_and_jobs.py)."""
    checks = hostile["by"]["f_timeout"]
    auto = _auto(instructor)
    assert checks["check_lagrangian"].points == 0 and checks["check_prior"].points == 0
    assert "time limit" in checks["check_lagrangian"].feedback
    assert checks["check_estimator_hard"].points == auto["check_estimator_hard"]
    executed = nbformat.read(str(hostile["course"] / "autograded" / "f_timeout" / f"{A1}.ipynb"),
                             as_version=4)
    enames = [o.get("ename") for c in executed.cells for o in c.get("outputs", [])]
    assert "TimeLimit" in enames and "NotRun" not in enames


def test_stderr_from_correct_code_is_not_a_failure(hostile, instructor):
    checks = hostile["by"]["w_warns"]
    auto = _auto(instructor)
    assert all(checks[c].points == auto[c] and checks[c].feedback == "ok" for c in auto)
    executed = nbformat.read(str(hostile["course"] / "autograded" / "w_warns" / f"{A1}.ipynb"),
                             as_version=4)
    check = next(c for c in executed.cells
                 if c.metadata.get("nbgrader", {}).get("grade_id") == "check_estimator_shapes")
    assert any(o.get("name") == "stderr" for o in check.outputs), check.outputs


def test_the_course_directory_keeps_earlier_runs(hostile, instructor):
    by = hostile["by"]
    assert "first" in by and "z_honest" in by   # the first run's student is still there
    with (hostile["course"] / "crowdlearn-course.json").open() as fh:
        kept = {r["submission"] for r in json.load(fh)["results"]}
    assert kept == set(by)
    with hostile["report"].open(newline="", encoding="utf-8") as fh:
        assert {r["submission"] for r in csv.DictReader(fh)} == set(by)


def test_totals_have_one_row_per_student(hostile, instructor):
    path = hostile["report"].with_name("grades-totals.csv")
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["student", A1, "total"]
    assert sorted(r["student"] for r in rows) == sorted(hostile["by"])
    honest = next(r for r in rows if r["student"] == "z_honest")
    assert float(honest[A1]) == float(honest["total"]) == sum(_auto(instructor).values())


def test_feedback_files_hold_no_hidden_test(hostile, instructor):
    hidden = classroom._hidden_lines(instructor)
    assert hidden
    folder = hostile["course"] / "feedback"
    files = sorted(folder.rglob("*.txt")) + sorted(folder.rglob("*.html"))
    assert len(files) == 2 * len(hostile["by"])
    text = "\n".join(p.read_text(encoding="utf-8") for p in files)
    assert "BEGIN HIDDEN TESTS" not in text
    assert not [line for line in hidden if line in text]
    # the mistake only a hidden test catches is named in the student's feedback
    mine = (folder / "m_prior_by_m" / f"{A1}.txt").read_text(encoding="utf-8")
    assert "divide by the total weight" in mine


# -- odd and tampered submissions ------------------------------------------------------------------
def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


# the cases of the odd class, in folders with names a shell or a CSV file trips on
DUP, EDITED_CHECK, EDITED_META, DELETED = "star* dup", "new\nline", "-dash", "with spaces"


@pytest.fixture(scope="module")
def odd(bwrap, no_policy, instructor, tmp_path_factory):
    base = tmp_path_factory.mktemp("odd")
    subs = base / "submissions"
    _put(subs, "zz_last", instructor)
    # a copied answer cell: the mistaken first copy is fixed by the second; a copied check
    dup = classroom.replace_solution(instructor, "estimator", FEATURE_BY_M)
    cells = list(dup.cells)
    i = cells.index(_cell(dup, "estimator"))
    cells.insert(i + 1, copy.deepcopy(_cell(instructor, "estimator")))
    j = cells.index(_cell(dup, "check_prior"))
    cells.insert(j + 1, copy.deepcopy(cells[j]))
    dup.cells = cells
    _put(subs, DUP, dup)
    # check cells edited: source, metadata, deleted
    edited = classroom.replace_solution(instructor, "estimator", FEATURE_BY_M)
    _cell(edited, "check_estimator_hard").source = "pass  # all good"
    _put(subs, EDITED_CHECK, edited)
    meta = classroom.replace_solution(instructor, "estimator", FEATURE_BY_M)
    cell = _cell(meta, "check_estimator_hard")
    cell.metadata["nbgrader"] = dict(cell.metadata["nbgrader"], grade_id="mine", points=100)
    _put(subs, EDITED_META, meta)
    deleted = copy.deepcopy(instructor)
    deleted.cells = [c for c in deleted.cells if c is not None
                     and c.metadata.get("nbgrader", {}).get("grade_id") != "check_prior"]
    _put(subs, DELETED, deleted)
    # symbolic links: to the instructor's source, and a whole folder
    (subs / "link_file").mkdir()
    (subs / "link_file" / f"{A1}.md").symlink_to(A1_MD)
    (subs / "link_dir").symlink_to(subs / "zz_last")
    # no notebook
    (subs / "not_nb").mkdir()
    (subs / "not_nb" / f"{A1}.ipynb").write_text("my answers: 42\n")
    (subs / "not_nb" / "notes.pdf").write_bytes(b"%PDF-1.4")
    report = base / "grades.csv"
    code = classroom.main(["--source", str(SOURCE), "grade", str(subs), "--report", str(report),
                           "--timeout", str(TIMEOUT), "--assignment", A1])
    with report.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by = {}
    for r in rows:
        by.setdefault(r["submission"], {})[r["check"]] = (float(r["points"]),
                                                          float(r["max_points"]), r["feedback"])
    return {"code": code, "by": by, "base": base}


def test_odd_folder_names_are_graded_normally(odd, instructor):
    assert odd["code"] == 1  # 1: the symbolic links and the file that is no notebook
    auto = _auto(instructor)
    for name in (DUP, EDITED_CHECK, EDITED_META, DELETED, "zz_last"):  # all graded
        assert set(odd["by"][name]) == {c for c, _, _ in classroom.grade_cells(instructor)}
        assert not any(fb.startswith("not graded") for _, _, fb in odd["by"][name].values())
    checks = odd["by"]["zz_last"]
    assert all(checks[c][0] == auto[c] and checks[c][2] == "ok" for c in auto)
    assert len(list((odd["base"] / "feedback").iterdir())) == len(odd["by"])


def test_a_copied_cell_runs_in_order_and_is_named(odd, instructor):
    checks = odd["by"][DUP]
    auto = _auto(instructor)
    assert all(checks[c][0] == auto[c] for c in auto), checks
    text = " ".join(fb for _, _, fb in checks.values())
    assert "'estimator' appears 2 times" in text and "'check_prior' appears more than once" in text


@pytest.mark.parametrize("student", [EDITED_CHECK, EDITED_META])
def test_an_edited_check_is_restored(odd, instructor, student):
    checks = odd["by"][student]
    auto = _auto(instructor)
    lost = {c for c in auto if checks[c][0] < auto[c]}
    assert lost == {"check_estimator_hard", "check_estimator_soft"}
    assert "divide s_jy by the number of items m" in checks["check_estimator_hard"][2]
    assert "edited" in checks["check_estimator_hard"][2]
    assert "mine" not in checks and checks["check_estimator_hard"][1] == 2.0


def test_a_deleted_check_is_restored_and_graded_on_its_merits(odd, instructor):
    checks = odd["by"][DELETED]
    auto = _auto(instructor)
    # the answers are the instructor's, so the restored check passes; the note says why
    assert checks["check_prior"][0] == auto["check_prior"]
    assert "missing" in checks["check_prior"][2]
    assert all(checks[c][0] == auto[c] for c in auto)


def test_symlinks_are_refused(odd):
    for student in ("link_file", "link_dir"):
        checks = odd["by"][student]
        assert checks and all(pts == 0 for pts, _, _ in checks.values())
        assert all("symbolic link" in fb for _, _, fb in checks.values())


def test_a_file_that_is_no_notebook_scores_zero(odd):
    checks = odd["by"]["not_nb"]
    assert all(pts == 0 and "not a notebook" in fb for pts, _, fb in checks.values())
    totals = {r["student"]: r for r in csv.DictReader(
        (odd["base"] / "grades-totals.csv").open(newline="", encoding="utf-8"))}
    assert totals["not_nb"][A1] == "" and totals["link_dir"][A1] == ""  # not graded: empty


def test_a_submission_the_grader_fails_on_gives_a_nonzero_exit(bwrap, no_policy, instructor,
                                                                tmp_path, monkeypatch, capsys):
    subs = tmp_path / "subs"
    _put(subs, "alice", instructor)
    _put(subs, "broken", instructor)
    real = grading._execute

    def execute(nb, original, **kw):
        if Path(original).parent.name == "broken":
            raise RuntimeError("the kernel could not start")
        return real(nb, original, **kw)

    monkeypatch.setattr(grading, "_execute", execute)
    report = tmp_path / "grades.csv"
    assert classroom.main(["--source", str(SOURCE), "grade", str(subs), "--report",
                           str(report), "--assignment", A1]) == 1
    err = capsys.readouterr().err
    assert "1 submission(s) could not be graded" in err and "'broken'" in err
    by = _by(classroom.CheckResult(r["submission"], r["assignment"], r["check"],
                                   float(r["points"]), float(r["max_points"]), r["feedback"])
             for r in csv.DictReader(report.open(newline="", encoding="utf-8")))
    auto = _auto(instructor)
    assert all(by["alice"][c].points == auto[c] for c in auto)
    assert all(r.points == 0 and "grader error" in r.feedback for r in by["broken"].values())


# -- the sandbox switch, and the cheating policy ---------------------------------------------------
def test_a_missing_bwrap_is_a_clear_error(tmp_path, instructor, monkeypatch, capsys):
    _put(tmp_path / "subs", "alice", instructor)
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    with pytest.raises(classroom.SandboxUnavailable, match="apt-get install bubblewrap"):
        classroom.grade(tmp_path / "subs", SOURCE)
    assert classroom.main(["--source", str(SOURCE), "grade", str(tmp_path / "subs")]) == 2
    assert "--no-sandbox" in capsys.readouterr().err


def test_no_sandbox_grades_with_a_warning(no_policy, tmp_path, instructor, monkeypatch, capsys):
    _put(tmp_path / "subs", "alice", instructor)
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    results = classroom.grade(tmp_path / "subs", SOURCE, sandbox=False, timeout=TIMEOUT)
    assert "WITHOUT a sandbox" in capsys.readouterr().err
    auto = _auto(instructor)
    assert {r.check: r.points for r in results if r.check in auto} == auto


def test_flagged_checks_are_listed_for_review_and_keep_their_points(bwrap, tmp_path,
                                                                    instructor, monkeypatch):
    subs = tmp_path / "subs"
    _put(subs, "honest", instructor)
    _put(subs, "caller", _prepend(instructor, "prior_derivation", "# CALLS-THE-PACKAGE"))
    seen = []

    def flagged_checks(nb, assignment_name, **kw):
        seen.append(assignment_name)
        if any("CALLS-THE-PACKAGE" in c.source for c in nb.cells):
            return {"check_prior": "your answer calls crowdlearn.symbolic"}
        return {}

    from crowdlearn_grader import review as policy

    monkeypatch.setattr(policy, "flagged_checks", flagged_checks)
    report = tmp_path / "grades.csv"
    results = classroom.grade(subs, SOURCE, timeout=TIMEOUT, report=report)
    by = _by(results)
    assert seen == [A1, A1]
    auto = _auto(instructor)
    for student in ("honest", "caller"):  # a note for review changes no score
        assert all(by[student][c].points == auto[c] for c in auto)
    assert "symbolic" not in by["caller"]["check_prior"].feedback
    assert results.review == [("caller", A1, "check_prior",
                               "your answer calls crowdlearn.symbolic")]
    rows = list(csv.DictReader((tmp_path / "grades-review.csv").open(encoding="utf-8")))
    assert rows == [{"student": "caller", "assignment": A1, "check": "check_prior",
                     "reason": "your answer calls crowdlearn.symbolic"}]
    assert classroom.read_results(report).review == results.review


def test_the_sandbox_command_binds_nothing_of_the_course(bwrap, tmp_path):
    cmd = classroom.sandbox_command(bwrap, writable=[tmp_path / "box"], workdir=tmp_path / "box")
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv"} <= set(cmd)
    bound = [cmd[i + 1] for i, a in enumerate(cmd) if a in ("--bind", "--ro-bind")]
    assert str(BOOK) not in bound and not any(b.startswith(str(BOOK)) for b in bound)
    writable = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--bind"]
    assert writable == [str(tmp_path / "box")]



def test_progress_line_per_submission_and_a_short_default_timeout(tmp_path, caplog):
    """Grading says how far it is, one line per submission (the command line shows them on
    stderr); a hanging cell costs two minutes by default, not five."""
    import inspect
    import logging

    bad = tmp_path / "bob" / f"{A1}.ipynb"
    bad.parent.mkdir()
    bad.write_text("not a notebook\n")
    subs = {("alice", A1): grading._Refused("a symbolic link"), ("bob", A1): bad}
    with caplog.at_level(logging.INFO, logger="crowdlearn_grader.progress"):
        results = grading._grade(subs, {A1: A1_MD}, timeout=5, bwrap=None)
    lines = [r.getMessage() for r in caplog.records if r.name == "crowdlearn_grader.progress"]
    assert len(lines) == 2 and lines[0].startswith("[1/2] 'alice' ") and "[2/2] 'bob'" in lines[1]
    assert all(" 0 / " in line and "points" in line for line in lines), lines
    assert all(r.points == 0 for r in results)
    assert inspect.signature(classroom.grade).parameters["timeout"].default == 120
