"""The instructor's marks for the hand-graded derivations reach the reports and totals."""

import csv

import pytest

from crowdlearn_grader import CheckResult, GradeResults, apply_marks, write_totals

A = "a1_naive_bayes_mle"


def results():
    return GradeResults([
        CheckResult("ann", A, "check_prior", 2.0, 2.0, "ok"),
        CheckResult("ann", A, "derive_prior", 0.0, 2.0, "graded by hand: not scored automatically"),
        CheckResult("bob", A, "derive_prior", 0.0, 2.0, "graded by hand: not scored automatically"),
    ], ungraded=[("zed", A, "boom")])


def test_marks_replace_the_hand_graded_zeros_and_reach_the_totals(tmp_path):
    marks = tmp_path / "marks.csv"
    marks.write_text("student,assignment,check,points,comment\n"
                     f"ann,{A},derive_prior,1.5,missed the n_y = 0 case\n")
    out = apply_marks(results(), marks)
    assert out[1].points == 1.5 and "missed the n_y = 0 case" in out[1].feedback
    assert out[2].points == 0.0 and "not scored" in out[2].feedback  # bob: no mark yet
    assert out.ungraded == [("zed", A, "boom")]
    totals = tmp_path / "totals.csv"
    write_totals(out, totals, {A: None})
    rows = {r["student"]: r for r in csv.DictReader(totals.open())}
    assert float(rows["ann"]["total"]) == 3.5


@pytest.mark.parametrize("row, match", [
    ({"student": "ann", "assignment": A, "check": "check_prior", "points": "2"}, "automatic"),
    ({"student": "ann", "assignment": A, "check": "derive_prior", "points": "3"}, "between"),
    ({"student": "ann", "assignment": A, "check": "derive_prior", "points": "-1"}, "between"),
    ({"student": "ann", "assignment": A, "check": "derive_prior", "points": "nan"}, "between"),
    ({"student": "ann", "assignment": A, "check": "derive_prior", "points": "two"}, "between"),
    ({"student": "eve", "assignment": A, "check": "derive_prior", "points": "1"}, "no graded"),
    ({"student": "ann", "assignment": A, "check": "derive_priors", "points": "1"}, "no graded"),
    ({"student": "ann", "assignment": A, "points": "1"}, "columns"),
])
def test_bad_marks_are_refused_with_the_line(row, match):
    with pytest.raises(ValueError, match=match):
        apply_marks(results(), [row])


def test_a_mark_given_twice_is_refused():
    row = {"student": "ann", "assignment": A, "check": "derive_prior", "points": "1"}
    with pytest.raises(ValueError, match="twice"):
        apply_marks(results(), [row, row])
