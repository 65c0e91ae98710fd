"""End to end with the real cheating policy (crowdlearn.classroom.policy), in its own module:
tests/classroom/test_classroom_grading.py switches the policy off for the whole of that module."""

from test_classroom_grading import (A1, SOURCE, TIMEOUT, _auto, _by, _prepend,  # noqa: F401
                                    _put, bwrap, classroom, instructor)


def test_real_policy_zeroes_the_package_caller_and_the_monkeypatcher(bwrap, tmp_path,
                                                                      instructor):
    """End to end, with the real crowdlearn.classroom.policy: a submission that imports the
    package's reference estimator loses that task's checks only; one that patches numpy
    loses every check after the patch; the honest one keeps everything."""
    subs = tmp_path / "subs"
    _put(subs, "honest", instructor)
    _put(subs, "caller", _prepend(instructor, "estimator",
                                  "from crowdlearn import BernoulliNaiveBayes"))
    patched = _prepend(instructor, "prior_derivation",
                       "import numpy as np\nnp.allclose = lambda *a, **k: True")
    _put(subs, "patcher", patched)
    by = _by(classroom.grade(subs, SOURCE, timeout=TIMEOUT))
    auto = _auto(instructor)
    assert all(by["honest"][c].points == auto[c] for c in auto)
    order = [c.metadata["nbgrader"]["grade_id"] for c in instructor.cells
             if c.metadata.get("nbgrader", {}).get("grade_id") in auto]
    first_est = min(order.index(c) for c in auto if c.startswith("check_estimator"))
    lost = {c for c in auto if by["caller"][c].points == 0}
    assert lost and all(order.index(c) >= first_est for c in lost), lost
    assert all("BernoulliNaiveBayes" in by["caller"][c].feedback for c in lost)
    kept = [c for c in auto if order.index(c) < first_est]
    assert kept and all(by["caller"][c].points == auto[c] for c in kept)
    assert all(by["patcher"][c].points == 0 for c in auto)
    assert all("0 points" in by["patcher"][c].feedback for c in auto)
