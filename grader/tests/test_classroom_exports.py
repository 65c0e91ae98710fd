"""Exports an LMS takes (Canvas gradebook CSV, Moodle grade import CSV, Gradescope
results.json), checked against the published column formats, and the instructor's workflow
around them: hand marks applied to stored results without grading again, a marks file checked
before grading, pending marks not shown as lost, ``--course-dir`` with ``--jobs``.

The results are built by hand (no submission runs), so the file is fast; only the command
line's export reads the real assignments (for their hidden tests)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import crowdlearn_grader as classroom
from crowdlearn_grader import (CheckResult, GradeResults, RosterEntry, read_roster,
                                  write_canvas, write_moodle)
from crowdlearn_grader.exports import CANVAS_COLUMNS, gradescope_results

SOURCE = Path(__file__).resolve().parents[2] / "book" / "assignments"
A1, A2 = "a1_naive_bayes_mle", "a2_dawid_skene_by_hand"
UNMARKED = classroom.UNMARKED


def results() -> GradeResults:
    """ann: a1 (a hand mark pending) and a2; bob: a1 only; zed's a2 failed in the grader;
    carol (in the roster) handed nothing in."""
    return GradeResults([
        CheckResult("ann", A1, "check_prior", 2.0, 2.0, "ok"),
        CheckResult("ann", A1, "derive_prior", 0.0, 2.0, UNMARKED),
        CheckResult("ann", A1, "check_estimator_soft", 0.0, 2.0,
                    "your soft M-step ignores the weights"),
        CheckResult("ann", A2, "check_majority", 1.0, 1.0, "ok"),
        CheckResult("ann", A2, "check_m_step_rows", 0.5, 1.0, "half"),
        CheckResult("bob", A1, "check_prior", 2.0, 2.0, "ok"),
        CheckResult("bob", A1, "derive_prior", 1.5, 2.0, "graded by hand: 1.5 / 2"),
        CheckResult("bob", A1, "check_estimator_soft", 2.0, 2.0, "ok"),
        CheckResult("zed", A2, "check_majority", 0.0, 1.0, "not graded (grader error)"),
        CheckResult("zed", A2, "check_m_step_rows", 0.0, 1.0, "not graded (grader error)"),
    ], ungraded=[("zed", A2, "boom")])


ROSTER = ("folder,name,id,sis_user_id,sis_login_id,section,email,idnumber\n"
          "ann,\"Lee, Ann\",101,S1,alee,Sec 1,ann@uni.edu,N1\n"
          "bob,\"Ray, Bob\",102,S2,bray,Sec 2,,N2\n"
          "carol,\"Oak, Carol\",103,S3,coak,Sec 1,carol@uni.edu,\n"
          "zed,\"Zed, Zoe\",104,S4,zzed,Sec 2,zed@uni.edu,N4\n")


@pytest.fixture
def roster(tmp_path) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    return path


def _rows(path: Path) -> list:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


# -- the roster ---------------------------------------------------------------------------
def test_the_roster_reads_canvas_and_moodle_headers(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Email address,"
                    "ID number,Folder,Notes\nLee Ann,101,S1,alee,Sec 1,a@u.edu,N1,ann,x\n",
                    encoding="utf-8")
    entry = read_roster(path)["ann"]
    assert entry == RosterEntry("ann", "Lee Ann", "101", "S1", "alee", "Sec 1", "a@u.edu", "N1")


def test_a_canvas_export_with_a_folder_column_is_a_roster(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("Student,ID,SIS User ID,SIS Login ID,Section,a1 (5),folder\n"
                    "    Points Possible,,,,,14,\n"
                    "\"Lee, Ann\",101,S1,alee,Sec 1,,ann\n"
                    "\"Ray, Bob\",102,S2,bray,Sec 2,, bob \n", encoding="utf-8")
    roster = read_roster(path)
    assert list(roster) == ["ann", " bob "]  # folder names verbatim, spaces and all
    assert roster[" bob "].name == "Ray, Bob"


@pytest.mark.parametrize("text, match", [
    ("folder,name,id\nann,A,1\nbob,B,1\n", r"id '1' of 'bob' is also the id of 'ann'"),
    ("folder,sis_user_id\nann,S1\nbob,S1\n", "duplicate ids"),
    ("folder,email\nann,A@u.edu\nbob,a@U.edu\n", "email"),
    ("folder,idnumber\nann,N1\nbob,N1\n", "idnumber"),
    ("folder,name\nann,A\nann,B\n", "listed twice"),
    ("folder,name\n,A\n", "line 2: no folder"),
    ("name,id\nA,1\n", "no 'folder' column"),
    ("folder,name\n", "lists no student"),
])
def test_a_bad_roster_is_refused_with_the_reason(tmp_path, text, match):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_roster(path)


def test_a_missing_roster_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="roster file .*nope.csv.* does not exist"):
        write_canvas(results(), tmp_path / "nope.csv", tmp_path / "canvas.csv")


def test_a_graded_student_missing_from_the_roster_is_an_error(tmp_path):
    roster = [RosterEntry("ann", "Lee, Ann", "101"), RosterEntry("zed", "Zed", "104")]
    for write in (write_canvas, write_moodle):
        with pytest.raises(ValueError, match=r"graded but not in the roster: 'bob'"):
            write(results(), roster, tmp_path / "out.csv")


# -- Canvas --------------------------------------------------------------------------------
def _canvas_reads(path: Path) -> dict:
    """What Canvas's GradebookImporter takes from the CSV, by its own rules: the header's
    first columns match Student, ID, SIS User ID, SIS Login ID and end with Section; a row
    whose first cell matches "Points Possible" gives the maxima; an assignment header
    "Title (123)" names assignment 123; every other row is a student, found by ID."""
    import re

    header, *rows = _rows(path)
    assert re.search("Student", header[0]) and re.search("ID", header[1])
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    assert re.search("Section", header[4])
    assignments = [re.fullmatch(r"(.*?)(?: \((\d+)\))?", h).groups() for h in header[5:]]
    maxima = next(r[5:] for r in rows if re.search("Points Possible", r[0]))
    students = {r[1]: r[5:] for r in rows if not re.search("Points Possible", r[0])}
    return {"assignments": assignments, "maxima": maxima, "students": students}


def test_canvas_csv_has_the_import_columns_points_possible_and_no_total(tmp_path, roster):
    out = tmp_path / "canvas.csv"
    warnings = write_canvas(results(), roster, out)
    rows = _rows(out)
    assert rows[0] == [*CANVAS_COLUMNS, A1, A2]
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert not any("total" in h.lower() for h in rows[0])
    assert rows[1] == ["Points Possible", "", "", "", "", "6", "2"]
    body = {r[0]: r for r in rows[2:]}
    assert list(body) == ["Lee, Ann", "Ray, Bob", "Oak, Carol", "Zed, Zoe"]  # roster order
    assert body["Lee, Ann"] == ["Lee, Ann", "101", "S1", "alee", "Sec 1", "2", "1.5"]
    assert body["Ray, Bob"][5:] == ["5.5", ""]        # bob handed in no a2: left empty
    assert body["Oak, Carol"][5:] == ["", ""]         # carol handed in nothing
    assert body["Zed, Zoe"][5:] == ["", ""]           # zed's a2: the grader failed
    text = "\n".join(warnings)
    assert "no submission from 'bob', 'carol'" in text and "left empty" in text
    assert "could not grade 'zed'" in text
    assert f"{A1}: hand-graded cells not marked yet for 1 student" in text


def test_canvas_headers_carry_the_canvas_assignment_id(tmp_path, roster):
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"assignment,name,canvas_id\n{A1},a1 Naive Bayes,12345\n"
                       f"{A2},a2 Dawid-Skene,\n", encoding="utf-8")
    out = tmp_path / "canvas.csv"
    write_canvas(results(), roster, out, assignment_map=mapping, missing="zero")
    rows = _rows(out)
    assert rows[0][5:] == ["a1 Naive Bayes (12345)", "a2 Dawid-Skene"]
    canvas = _canvas_reads(out)
    assert canvas["assignments"] == [("a1 Naive Bayes", "12345"), ("a2 Dawid-Skene", None)]
    assert canvas["maxima"] == ["6", "2"]
    assert canvas["students"] == {"101": ["2", "1.5"], "102": ["5.5", "0"], "103": ["0", "0"],
                                  "104": ["0", ""]}
    assert rows[4][5:] == ["0", "0"]  # carol, with missing="zero"
    with pytest.raises(ValueError, match="must be a number"):
        write_canvas(results(), roster, out, assignment_map={A1: "12a"})


# -- Moodle --------------------------------------------------------------------------------
def test_moodle_csv_matches_by_email_and_lists_the_unmatched(tmp_path, roster):
    out = tmp_path / "moodle.csv"
    warnings = write_moodle(results(), roster, out)
    rows = _rows(out)
    assert rows[0] == ["Email address", A1, A2]
    assert rows[1:] == [["ann@uni.edu", "2", "1.5"], ["carol@uni.edu", "", ""],
                        ["zed@uni.edu", "", ""]]
    unmatched = _rows(tmp_path / "moodle-unmatched.csv")
    assert unmatched == [["folder", "name", "section", A1, A2], ["bob", "Ray, Bob", "Sec 2",
                                                                  "5.5", ""]]
    assert any("no email for 'bob'" in w for w in warnings)


def test_moodle_csv_by_id_number(tmp_path, roster):
    out = tmp_path / "moodle.csv"
    write_moodle(results(), roster, out, identifier="idnumber",
                 assignment_map={A1: {"name": "A1 grade item"}})
    rows = _rows(out)
    assert rows[0] == ["ID number", "A1 grade item", A2]
    assert [r[0] for r in rows[1:]] == ["N1", "N2", "N4"]
    assert _rows(tmp_path / "moodle-unmatched.csv")[1][0] == "carol"
    with pytest.raises(ValueError, match="identifier must be one of"):
        write_moodle(results(), roster, out, identifier="username")


# -- Gradescope ----------------------------------------------------------------------------
def _one(student, name, hidden=frozenset({"check_estimator_soft"})):
    rows = [r for r in results() if r.submission == student and r.assignment == name]
    return gradescope_results(rows, hidden_checks=hidden)


def test_gradescope_results_follow_the_autograder_format():
    data = _one("ann", A1)
    assert data["score"] == sum(t["score"] for t in data["tests"]) == 2.0
    assert [t["name"] for t in data["tests"]] == ["check_prior", "derive_prior",
                                                  "check_estimator_soft"]
    assert {t["visibility"] for t in data["tests"]} <= {"visible", "hidden", "after_due_date",
                                                        "after_published"}
    vis = {t["name"]: t["visibility"] for t in data["tests"]}
    assert vis == {"check_prior": "visible", "derive_prior": "visible",
                   "check_estimator_soft": "after_published"}
    assert all({"name", "score", "max_score", "output", "visibility"} <= set(t)
               for t in data["tests"])
    pending = data["tests"][1]
    assert "status" not in pending and pending["score"] == 0.0
    assert "2 points to be marked by hand" in data["output"]
    assert data["stdout_visibility"] == "hidden"
    bob = _one("bob", A1)
    assert bob["score"] == 5.5 and all(t["status"] == "passed" for t in bob["tests"][::2])


def test_gradescope_output_never_holds_a_hidden_tests_source():
    secret = "assert np.allclose(my_m_step(W_hidden), reference(W_hidden))"
    rows = [CheckResult("ann", A1, "check_estimator_soft", 0.0, 2.0,
                        f"SyntaxError: {secret}")]
    data = gradescope_results(rows, hidden_checks={"check_estimator_soft"},
                              hidden_lines={secret}, hidden_visibility="hidden")
    assert secret not in json.dumps(data) and "[hidden test]" in data["tests"][0]["output"]
    assert data["tests"][0]["visibility"] == "hidden"
    with pytest.raises(ValueError, match="hidden_visibility"):
        gradescope_results(rows, hidden_visibility="secret")


# -- the command line ----------------------------------------------------------------------
def test_export_command_writes_the_two_exports(tmp_path, roster, capsys):
    report = tmp_path / "grades.csv"
    classroom.write_report(results(), report)
    argv = ["--source", str(SOURCE), "export", str(report), "--roster", str(roster),
            "--canvas", str(tmp_path / "canvas.csv"), "--moodle", str(tmp_path / "moodle.csv"),
            "--moodle-id", "idnumber"]
    assert classroom.main(argv) == 0
    captured = capsys.readouterr()
    assert "warning: " in captured.err and "no submission from" in captured.err
    assert _rows(tmp_path / "canvas.csv")[1][0] == "Points Possible"
    assert _rows(tmp_path / "moodle.csv")[0][0] == "ID number"


@pytest.mark.parametrize("extra, match", [
    ([], "nothing to export"),
    (["--canvas", "c.csv"], "need --roster"),
])
def test_export_command_usage_errors(tmp_path, capsys, extra, match):
    report = tmp_path / "grades.csv"
    classroom.write_report(results(), report)
    assert classroom.main(["export", str(report), *extra]) == 2
    assert match in capsys.readouterr().err


def test_export_without_graded_results_is_a_clear_error(tmp_path, roster, capsys):
    argv = ["export", str(tmp_path / "grades.csv"), "--roster", str(roster),
            "--canvas", str(tmp_path / "c.csv")]
    assert classroom.main(argv) == 2
    assert "no graded results" in capsys.readouterr().err


# -- hand marks, without grading again ------------------------------------------------------
def _no_grading(monkeypatch):
    from crowdlearn_grader import grading

    def refuse(*a, **k):
        raise AssertionError("a submission was graded again")

    monkeypatch.setattr(grading, "_grade", refuse)
    monkeypatch.setattr(grading, "_grade_in_parallel", refuse)
    monkeypatch.setattr(grading, "_execute", refuse)


def test_marks_are_applied_to_the_stored_report_without_grading(tmp_path, monkeypatch,
                                                                  capsys):
    _no_grading(monkeypatch)
    report = tmp_path / "grades.csv"
    classroom.write_report(results(), report)
    marks = tmp_path / "marks.csv"
    marks.write_text(f"student,assignment,check,points,comment\nann,{A1},derive_prior,2,"
                     "neat\n", encoding="utf-8")
    assert classroom.main(["mark", str(marks), "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "nothing graded again" in out
    data = json.loads(report.with_suffix(".json").read_text())
    got = {(c["submission"], c["assignment"], c["check"]): c for c in data["checks"]}
    assert got["ann", A1, "derive_prior"]["points"] == 2.0
    # the marks file is the complete set: bob's earlier mark is taken back
    assert got["bob", A1, "derive_prior"]["points"] == 0.0
    assert got["bob", A1, "derive_prior"]["feedback"] == UNMARKED
    totals = {r["student"]: r for r in csv.DictReader(
        (tmp_path / "grades-totals.csv").open(encoding="utf-8"))}
    assert float(totals["ann"][A1]) == 4.0
    assert (tmp_path / "feedback" / "ann" / f"{A1}.txt").is_file()
    assert data["ungraded"] == [["zed", A2, "boom"]]


def test_marks_are_applied_to_a_course_directory(tmp_path, monkeypatch):
    _no_grading(monkeypatch)
    course = tmp_path / "course"
    course.mkdir()
    unmarked = [r._replace(points=0.0, feedback=UNMARKED) if "derive" in r.check else r
                for r in results()]
    (course / "crowdlearn-course.json").write_text(
        json.dumps({"results": [r._asdict() for r in unmarked]}), encoding="utf-8")
    marks = [{"student": "bob", "assignment": A1, "check": "derive_prior", "points": "1"}]
    out = classroom.remark(marks, report=tmp_path / "grades.csv", course_dir=course)
    assert [r.points for r in out if r.check == "derive_prior"] == [0.0, 1.0]
    assert (course / "feedback" / "bob" / f"{A1}.txt").is_file()
    with pytest.raises(ValueError, match="not a crowdlearn course directory"):
        classroom.remark(marks, report=tmp_path / "g.csv", course_dir=tmp_path / "elsewhere")


def test_a_missing_marks_file_is_an_error_before_grading(tmp_path, monkeypatch, capsys):
    _no_grading(monkeypatch)
    argv = ["--source", str(SOURCE), "grade", str(tmp_path / "no-submissions"), "--marks",
            str(tmp_path / "marks.csv"), "--report", str(tmp_path / "grades.csv")]
    assert classroom.main(argv) == 2
    err = capsys.readouterr().err
    assert "marks file" in err and "does not exist" in err and "Traceback" not in err
    bad = tmp_path / "bad.csv"
    bad.write_text("student,assignment,points\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['check'\]"):
        classroom.grade(tmp_path / "no-submissions", SOURCE, marks=bad)


def test_marks_that_do_not_apply_still_leave_the_reports(tmp_path, monkeypatch):
    from crowdlearn_grader import grading

    monkeypatch.setattr(grading, "_sandbox_or_warning", lambda sandbox: None)
    monkeypatch.setattr(grading, "_submissions_to_grade",
                        lambda *a: {("ann", A1): None})
    monkeypatch.setattr(grading, "_grade", lambda *a, **k: results())
    report = tmp_path / "grades.csv"
    marks = [{"student": "eve", "assignment": A1, "check": "derive_prior", "points": "1"}]
    with pytest.raises(ValueError, match="WITHOUT the marks.*mark"):
        classroom.grade(tmp_path, SOURCE, report=report, marks=marks)
    assert report.is_file() and (tmp_path / "grades-totals.csv").is_file()


def test_scores_show_pending_hand_marks_as_pending_not_lost(capsys):
    from crowdlearn_grader.cli import _print_scores

    _print_scores(results())
    lines = {tuple(line.split()[:2]): line for line in capsys.readouterr().out.splitlines()}
    assert lines["'ann'", A1].endswith("2 / 4 so far, 2 points to be marked by hand")
    assert lines["'bob'", A1].endswith("5.5 / 6")


def test_feedback_names_the_points_to_be_marked(tmp_path):
    classroom.write_feedback(results(), tmp_path)
    head = (tmp_path / "ann" / f"{A1}.txt").read_text(encoding="utf-8").splitlines()[0]
    assert head == f"{A1}: 2 / 6 points (2 of them to be marked by hand)"


def test_course_dir_takes_jobs(tmp_path, monkeypatch):
    from crowdlearn_grader import grading

    seen = {}

    def parallel(*args, keep=None, **kwargs):
        seen["keep"] = keep
        return results()

    monkeypatch.setattr(grading, "_sandbox_or_warning", lambda sandbox: None)
    monkeypatch.setattr(grading, "_submissions_to_grade",
                        lambda *a: {("ann", A1): None, ("ann", A2): None})
    monkeypatch.setattr(grading, "_grade_in_parallel", parallel)
    course = tmp_path / "course"
    out = classroom.grade(tmp_path, SOURCE, course_dir=course, jobs=2,
                          report=tmp_path / "grades.csv")
    assert seen["keep"] == course.resolve() / "autograded"
    assert len(out) == len(results())
    assert json.loads((course / "crowdlearn-course.json").read_text())["results"]


def test_a_folder_name_never_becomes_a_spreadsheet_formula(tmp_path):
    rows = GradeResults([CheckResult("=cmd|calc", A1, "check_prior", 1.0, 2.0, "half")])
    roster = [RosterEntry("=cmd|calc")]
    write_canvas(rows, roster, tmp_path / "canvas.csv")
    write_moodle(rows, roster, tmp_path / "moodle.csv")
    assert _rows(tmp_path / "canvas.csv")[2][0] == "'=cmd|calc"
    assert _rows(tmp_path / "moodle-unmatched.csv")[1][0] == "'=cmd|calc"
