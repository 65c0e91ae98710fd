"""End to end with the real static audit (crowdlearn.classroom.policy), in its own module:
tests/classroom/test_classroom_grading.py switches the audit off for the whole of that module."""

from test_classroom_grading import (A1, SOURCE, TIMEOUT, _auto, _by, _prepend,  # noqa: F401
                                    _put, bwrap, classroom, instructor)


def test_real_audit_lists_the_package_importer_and_the_monkeypatcher_for_review(
        bwrap, tmp_path, instructor):
    """End to end, with the real crowdlearn.classroom.policy: a submission that imports the
    package's reference estimator (and cannot use it: the sandbox withholds it) and one that
    patches numpy in its kernel (the checks do not run there) are listed for the
    instructor's review, and keep the points their work earned; the honest one is not
    listed. The audit never changes a score."""
    subs = tmp_path / "subs"
    _put(subs, "honest", instructor)
    _put(subs, "caller", _prepend(instructor, "estimator",
                                  "from crowdlearn import BernoulliNaiveBayes"))
    patched = _prepend(instructor, "prior_derivation",
                       "import numpy as np\nnp.allclose = lambda *a, **k: True")
    _put(subs, "patcher", patched)
    results = classroom.grade(subs, SOURCE, timeout=TIMEOUT)
    by = _by(results)
    auto = _auto(instructor)
    for student in ("honest", "caller", "patcher"):
        assert all(by[student][c].points == auto[c] for c in auto), student
    flagged = {}
    for student, name, check, reason in results.review:
        assert name == A1 and check in auto
        flagged.setdefault(student, []).append(reason)
    assert set(flagged) == {"caller", "patcher"}, flagged
    assert all("BernoulliNaiveBayes" in why for why in flagged["caller"])
    assert not any("BernoulliNaiveBayes" in r.feedback for r in by["caller"].values())
