"""The Gradescope autograder of crowdlearn_grader.gradescope, end to end.

The zip of ``a1_naive_bayes_mle`` (the quickest assignment) is built once, then, for each
submission, unpacked into a fresh ``<tmp>/autograder`` as Gradescope does (``source/`` = the
zip, ``submission/``, ``submission_metadata.json``) and run in a bubblewrap root of its own
where that folder is ``/autograder`` and the host's system, Python and virtual environment are
read-only (the checkout is not there: the grader is the zip's wheel). ``setup.sh`` runs with
``CROWDLEARN_GRADESCOPE_OFFLINE=1`` (no apt, no package index: the venv's interpreter has the
dependencies, only the zip's wheel is unpacked), then ``/autograder/run_autograder``; the
``results.json`` it leaves is checked against Gradescope's specification
(:func:`~crowdlearn_grader.gradescope.validate_results`) and for the expected scores: an
honest notebook, a buggy one, a cheat aimed at Gradescope (it writes its own results.json and
reads the instructor's notebook), submissions that are no notebook, and an autograder whose
Python fails. The outer root binds the host's ``/proc``: a second procfs inside a bubblewrap
pid namespace stops the grader's own (nested) bubblewrap from running a kernel, which
Gradescope's container does not; one test uses exactly that to check the sandbox modes
(``required``: 0 and the reason; ``auto``: graded without it, and said so). Cells get 600 s,
so a slow machine changes no score.

Needs bubblewrap (``apt-get install bubblewrap``): skipped without it, failed under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from support import BOOK, bwrap  # noqa: F401  (a fixture)

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("nbgrader")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader import gradescope, sandbox  # noqa: E402

pytestmark = pytest.mark.notebook

A1 = "a1_naive_bayes_mle"
A1_MD = (BOOK / "assignments" / f"{A1}.md").resolve()
JANE = {"users": [{"email": "jane.doe@uni.example", "name": "Jane Doe", "id": 7}],
        "id": 1234, "submission_method": "upload"}
FAKE = "fake results from the student"


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    return gradescope.build_autograder(A1, tmp_path_factory.mktemp("zip"), timeout=600)


@pytest.fixture(scope="module")
def instructor():
    nb = classroom.read_assignment(A1_MD)
    nb.metadata.pop("jupytext", None)
    return nb


def _outer(bwrap: str, root: Path, own_proc: bool = False, env=()) -> list:
    """A bubblewrap root where ``root`` is ``/autograder``: the host's system and Python
    read-only, not the checkout's package. ``own_proc``: a pid namespace and procfs of its
    own, where the grader's nested bubblewrap cannot run a kernel."""
    package = Path(classroom.__file__).resolve().parent.parent
    proc = ["--unshare-pid", "--proc", "/proc"] if own_proc else ["--bind", "/proc", "/proc"]
    cmd = [bwrap, "--tmpfs", "/", *proc, "--dev", "/dev",
           "--tmpfs", "/tmp", "--unshare-net", "--die-with-parent"] + sandbox._system_links()
    for r in sandbox._read_only_roots():
        if not (r == package or r.is_relative_to(package)):
            cmd += ["--ro-bind", str(r), str(r)]
    cmd += ["--bind", str(root), "/autograder", "--chdir", "/autograder", "--clearenv",
            "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HOME", "/tmp", "--setenv", gradescope.ENV_OFFLINE, "1",
            "--setenv", gradescope.ENV_PYTHON, sys.executable]
    for key, value in env:
        cmd += ["--setenv", key, value]
    return cmd


def _unpack(zip_path: Path, source: Path) -> None:
    """Unpack as ``unzip`` does: with the files' modes."""
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            zf.extract(info, source)
            mode = info.external_attr >> 16
            if mode:
                os.chmod(source / info.filename, mode & 0o777)


_IMAGES: dict = {}  # (zip, outer options) -> (a root after setup.sh, its output)


def _image(bwrap, zip_path, tmp: Path, **outer) -> tuple:
    """A root where ``setup.sh`` has run, as Gradescope builds its image: once per autograder
    (and per outer option); every submission then starts from a fresh copy of it."""
    key = (str(zip_path), repr(sorted(outer.items())))
    if key not in _IMAGES:
        root = tmp.parent / f"image-{len(_IMAGES)}" / "autograder"
        (root / "submission").mkdir(parents=True)
        (root / "results").mkdir()
        _unpack(zip_path, root / "source")
        shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
        setup = subprocess.run(_outer(bwrap, root, **outer)
                               + ["bash", "/autograder/source/setup.sh"],
                               capture_output=True, text=True)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        _IMAGES[key] = (root, setup.stdout)
    return _IMAGES[key]


def _gradescope_run(bwrap, zip_path, tmp: Path, files: dict, metadata=JANE, broken=False,
                    **outer):
    """``(results.json, the log)`` of one submission (``files``: name -> nb or bytes), in a
    fresh copy of the set-up root."""
    image, setup_log = _image(bwrap, zip_path, tmp, **outer)
    root = tmp / "autograder"
    shutil.copytree(image, root, symlinks=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (root / "submission" / name).write_bytes(content)
        else:
            nbformat.write(content, str(root / "submission" / name))
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    if broken:  # the autograder's Python cannot start
        (root / "source" / "env.sh").write_text("PY=/bin/false\n")
    run = subprocess.run(_outer(bwrap, root, **outer) + ["/autograder/run_autograder"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert gradescope.validate_results(data) == [], data
    return data, setup_log + run.stdout + run.stderr


def _tests(data) -> dict:
    return {t["name"]: t for t in data["tests"]}


def _auto(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells if classroom._is_check(c.metadata.get("nbgrader", {}))}


def test_the_zip_has_gradescopes_layout(autograder):
    with zipfile.ZipFile(autograder) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        config = json.loads(zf.read("config.json"))
        setup = zf.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "config.json", "constraints.txt",
            f"assignments/{A1}.md"} <= names
    assert any(n.startswith("wheels/crowdlearn-") and n.endswith(".whl") for n in names)
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert config["assignment"] == A1 and config["sandbox"] == "auto"
    assert "apt-get install" in setup and "bubblewrap" in setup


def test_an_honest_notebook_scores_every_automatic_check(bwrap, autograder, instructor,
                                                        tmp_path):
    data, log = _gradescope_run(bwrap, autograder, tmp_path, {f"{A1}.ipynb": instructor})
    auto = _auto(instructor)
    assert {n: t["score"] for n, t in _tests(data).items()} == auto
    assert data["score"] == sum(auto.values())
    assert all(t["status"] == "passed" for t in data["tests"])
    assert "Jane Doe <jane.doe@uni.example>" in data["output"]
    assert "graded by hand" in data["output"]
    assert data["extra_data"]["students"] == ["Jane Doe <jane.doe@uni.example>"]
    assert "grading a1_naive_bayes_mle for Jane Doe" in log
    assert "sandbox: bubblewrap" in log and data["extra_data"]["sandbox"] == "bubblewrap"
    assert data["stdout_visibility"] == "hidden"
    assert {t["visibility"] for t in data["tests"]} == {"visible", "after_published"}


def test_a_buggy_notebook_loses_its_checks_with_the_message(bwrap, autograder, instructor,
                                                           tmp_path):
    buggy = classroom.replace_solution(instructor, "estimator", textwrap.dedent("""
        n_y = W.sum(axis=0)
        s = W.T @ X
        prior = n_y / n_y.sum()
        feature_prob = s / X.shape[0]
        """))
    # any notebook name is taken when it is the only one
    data, _ = _gradescope_run(bwrap, autograder, tmp_path, {"my work.ipynb": buggy})
    tests, auto = _tests(data), _auto(instructor)
    lost = {n for n, t in tests.items() if t["score"] < t["max_score"]}
    assert lost == {"check_estimator_hard", "check_estimator_soft"}
    assert "divide s_jy by the number of items m" in tests["check_estimator_hard"]["output"]
    assert tests["check_estimator_hard"]["status"] == "failed"
    assert data["score"] == sum(auto.values()) - 4


def test_a_cheat_aimed_at_gradescope_changes_nothing(bwrap, autograder, instructor, tmp_path):
    """It writes its own full-marks results.json and copies the instructor's notebook: the
    kernel sees no /autograder at all, and the grader writes the result last."""
    cheat = classroom.replace_solution(instructor, "estimator", textwrap.dedent(f"""
        import json, os
        for where in ("/autograder/results", "/autograder/source/results", "."):
            try:
                os.makedirs(where, exist_ok=True)
                with open(os.path.join(where, "results.json"), "w") as f:
                    json.dump({{"score": 1000, "output": "{FAKE}"}}, f)
            except OSError:
                pass
        try:
            answer = open("/autograder/source/assignments/{A1}.md").read()
        except OSError:
            answer = ""
        prior = np.full(W.shape[1], 1 / W.shape[1])
        feature_prob = np.full((W.shape[1], X.shape[1]), 0.5)
        """))
    data, _ = _gradescope_run(bwrap, autograder, tmp_path, {f"{A1}.ipynb": cheat})
    tests = _tests(data)
    assert FAKE not in json.dumps(data)
    assert tests["check_estimator_hard"]["score"] == 0
    assert tests["check_estimator_soft"]["score"] == 0
    assert data["score"] < sum(_auto(instructor).values())
    assert not (tmp_path / "autograder" / "source" / "results").exists()


@pytest.mark.parametrize("files, metadata, reason", [
    ({"answers.txt": b"I did it all in my head"}, JANE, "no Jupyter notebook (.ipynb)"),
    ({f"{A1}.ipynb": b"not json {"}, None, "could not be graded"),
    ({"a.ipynb": b"{}", "b.ipynb": b"{}"}, JANE, "submit only that notebook"),
])
def test_what_cannot_be_graded_scores_zero_with_the_reason(bwrap, autograder, tmp_path,
                                                          files, metadata, reason):
    data, _ = _gradescope_run(bwrap, autograder, tmp_path, files, metadata=metadata)
    assert data["score"] == 0
    assert reason in data["output"]
    assert all(t["score"] == 0 for t in data["tests"])


def test_an_autograder_that_cannot_start_still_gives_a_result(bwrap, autograder, tmp_path):
    data, _ = _gradescope_run(bwrap, autograder, tmp_path, {"x.ipynb": b"{}"}, broken=True)
    assert data["score"] == 0 and data["tests"] == []
    assert "could not be graded" in data["output"]


def test_without_a_working_sandbox_required_gives_zero_and_auto_grades_without_it(
        bwrap, autograder, instructor, tmp_path):
    files = {f"{A1}.ipynb": instructor}
    data, log = _gradescope_run(bwrap, autograder, tmp_path / "required", files,
                                own_proc=True, env=[(gradescope.ENV_SANDBOX, "required")])
    if "sandbox: bubblewrap" in log:
        pytest.skip("the nested sandbox runs here even with its own procfs")
    assert data["score"] == 0 and data["tests"] == []
    assert "the grading sandbox is unavailable" in data["output"]
    data, log = _gradescope_run(bwrap, autograder, tmp_path / "auto", files, own_proc=True)
    assert "sandbox: UNAVAILABLE, grading WITHOUT it" in log
    assert data["extra_data"]["sandbox"] == "none"
    assert data["score"] == sum(_auto(instructor).values())


def test_the_validator_finds_what_gradescope_refuses():
    good = {"score": 3.0, "execution_time": 2, "stdout_visibility": "hidden",
            "tests": [{"name": "a", "score": 1, "max_score": 1, "output": "",
                       "visibility": "visible"},
                      {"name": "b", "score": 2.0, "max_score": 3, "output": "no",
                       "visibility": "after_published", "status": "failed"}]}
    assert gradescope.validate_results(good) == []
    assert gradescope.validate_results({**good, "score": 4.0})
    assert gradescope.validate_results({**good, "stdout_visibility": "students"})
    assert gradescope.validate_results({**good, "execution_time": "2s"})
    bad_test = dict(good["tests"][1], score=5)
    assert gradescope.validate_results({**good, "tests": [good["tests"][0], bad_test],
                                        "score": 6})
    assert gradescope.validate_results({**good, "tests": [{"name": "a", "score": 1}]})


def test_the_command_line_has_the_gradescope_command():
    from crowdlearn_grader.cli import _parser

    args = _parser().parse_args(["gradescope", A1, "--out", "x", "--sandbox", "required"])
    assert args.assignment == [A1] and args.sandbox == "required" and args.out == "x"
