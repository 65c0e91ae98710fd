r"""Gradescope autograders: one ``.zip`` per assignment that grades a submission inside
Gradescope's own container with this grader, and writes the ``results.json`` Gradescope reads.

:func:`build_autograder` (``python3 -m crowdlearn_grader gradescope a1_naive_bayes_mle
--out gradescope/``) writes ``<out>/<assignment>-gradescope.zip`` in the layout of Gradescope's
autograder specification: at the zip's root

``setup.sh``
    run once, as root, when Gradescope builds the image (the zip unpacked in
    ``/autograder/source``): installs bubblewrap with apt if the image has none, makes the
    virtual environment ``/autograder/venv`` with the zip's wheels (``crowdlearn[book]``,
    ``crowdlearn-checks``, ``crowdlearn-grader``), pinned by ``constraints.txt`` (``requirements.lock``
    without the book and test tools) when its Python is the lock's (apt installs that
    Python, e.g. ``python3.11-venv`` on Ubuntu 22.04, when the image has another and the
    distribution has it), and checks that the grader imports and whether bubblewrap runs
    (both shown in the build log);
``run_autograder``
    run once per submission (Gradescope copies it to ``/autograder/run_autograder``):
    ``python -m crowdlearn_grader.gradescope`` grades the notebook found in
    ``/autograder/submission`` and writes ``/autograder/results/results.json``; if Python
    itself fails, the script writes a score of 0 with the reason, so Gradescope always gets a
    result;
``config.json``, ``assignments/``, ``wheels/``, ``constraints.txt``
    the assignment's name, cell time limit, sandbox mode and visibility of hidden checks; the
    instructor notebook (MyST, with its checks and hidden tests) and the support files of its
    folder; the package; the pins.

**Grading a submission** (:func:`run_submission`): the notebook is
``/autograder/submission/<assignment>.ipynb``, or the only ``.ipynb`` there (in any
sub-folder). It is graded as ``python3 -m crowdlearn_grader grade`` grades a class: the
instructor's notebook runs with the student's answer cells, in the bubblewrap sandbox, each
check worth its points or none. The student is named from
``/autograder/submission_metadata.json`` (``users[].name`` and ``email``): in the result's
``output``, its ``extra_data`` and the log. ``results.json`` has one test per automatically
graded check (``name``, ``score``, ``max_score``, ``status``, ``output``, ``visibility``:
``visible``, or the build's ``--hidden-visibility`` for checks that hold hidden tests, whose
source never appears in a message), ``score`` (their sum), ``execution_time`` (seconds),
``output`` and ``stdout_visibility: hidden`` (the log is for the instructor). The written
derivations are not in it: grade them by hand in Gradescope (a manually graded question);
the ``output`` says how many points they hold. A submission without a notebook, with several,
or one that cannot be read or graded gets a score of 0 and an ``output`` that says why;
nothing is raised.

**The sandbox on Gradescope.** ``config.json``'s ``sandbox`` (``--sandbox`` when building;
the environment variable ``CROWDLEARN_GRADESCOPE_SANDBOX`` overrides it): ``auto`` (default)
runs the kernel in bubblewrap when bubblewrap can run a kernel in the container (its probe
before the student passes), and otherwise without it, with a line in the log and
``extra_data.sandbox: "none"`` in the result. Gradescope's container is already one per
submission, but without bubblewrap the student's code runs as the grader's user (root) in
it, and can, for instance, leave a process behind that edits the result after the grader
wrote it. ``required`` gives 0 with "the grading sandbox is unavailable" instead (choose it
once ``setup.sh``'s log, or a test submission, shows ``sandbox: /usr/bin/bwrap`` and a
graded result on your course's image); ``off`` never uses it. Whether Gradescope's
containers allow the user namespaces bubblewrap needs was not tried here.

**Without the network** (tests, or an image made by hand): with
``CROWDLEARN_GRADESCOPE_OFFLINE=1``, ``setup.sh`` installs nothing with apt or from an index:
it uses the interpreter ``CROWDLEARN_GRADESCOPE_PYTHON`` (default ``python3``), which must
already import the grader's dependencies, and unpacks only the zip's wheel (``pip install
--no-deps --no-index --target /autograder/source/lib``), so the package graded with is still
the one in the zip. ``grader/tests/test_gradescope.py`` runs it so, in a bubblewrap root
with its own ``/autograder``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

__all__ = ["ENV_OFFLINE", "ENV_PYTHON", "ENV_SANDBOX", "SANDBOX_MODES", "build_autograder",
           "run_submission", "validate_results"]

ENV_OFFLINE = "CROWDLEARN_GRADESCOPE_OFFLINE"
ENV_PYTHON = "CROWDLEARN_GRADESCOPE_PYTHON"
ENV_SANDBOX = "CROWDLEARN_GRADESCOPE_SANDBOX"
SANDBOX_MODES = ("auto", "required", "off")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEV_ONLY = ("jupyter-book", "jupyter_book", "pytest", "pytest-xdist", "playwright",
            "hypothesis", "black", "pypdf", "pypdfium2", "crowdlearn", "crowdlearn-checks",
            "crowdlearn-grader")
"""Left out of the zip's constraints: the book's and the tests' tools (and the package,
which comes as the wheel)."""
OUTPUT_CAP = 20_000
"""Characters kept of one check's message (Gradescope limits the size of results.json)."""

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image; the zip is
# unpacked in /autograder/source. Written by crowdlearn_grader.gradescope.
set -euo pipefail
SRC="$(cd "$(dirname "$0")" && pwd)"
cd "$SRC"
WHEEL="$(ls wheels/crowdlearn-*.whl)"
CHECKS="$(ls wheels/crowdlearn_checks-*.whl)"
GRADER="$(ls wheels/crowdlearn_grader-*.whl)"
if [ "${CROWDLEARN_GRADESCOPE_OFFLINE:-0}" = 1 ]; then
    # no apt, no package index: the interpreter already has the dependencies
    PY="${CROWDLEARN_GRADESCOPE_PYTHON:-python3}"
    "$PY" -m pip install --quiet --no-deps --no-index --target "$SRC/lib" "$WHEEL" "$CHECKS" "$GRADER"
    printf 'PY=%q\nexport PYTHONPATH=%q\n' "$PY" "$SRC/lib" > "$SRC/env.sh"
else
    export DEBIAN_FRONTEND=noninteractive
    LOCK="__LOCK_PYTHON__"   # the Python of requirements.lock
    version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
    BASE=python3
    command -v "python$LOCK" >/dev/null 2>&1 && BASE="python$LOCK"
    NEED=""
    command -v bwrap >/dev/null 2>&1 || NEED="bubblewrap"
    if [ -n "$NEED" ] || [ "$(version "$BASE")" != "$LOCK" ] \
            || ! "$BASE" -c 'import ensurepip' >/dev/null 2>&1; then
        apt-get update -q
        if [ "$(version "$BASE")" != "$LOCK" ] \
                && apt-cache show "python$LOCK-venv" >/dev/null 2>&1; then
            NEED="$NEED python$LOCK python$LOCK-venv"; BASE="python$LOCK"
        elif ! "$BASE" -c 'import ensurepip' >/dev/null 2>&1; then
            NEED="$NEED python3-venv"
        fi
        [ -z "$NEED" ] || apt-get install -y -q --no-install-recommends $NEED
    fi
    "$BASE" -m venv /autograder/venv
    PY=/autograder/venv/bin/python
    "$PY" -m pip install --quiet --upgrade pip
    PIN=""
    if [ "$(version "$PY")" = "$LOCK" ]; then PIN="-c constraints.txt"; else
        echo "Python $(version "$PY"), not $LOCK: installing without the pinned versions"; fi
    "$PY" -m pip install --quiet $PIN "crowdlearn[book] @ file://$SRC/$WHEEL" \
        "crowdlearn-checks @ file://$SRC/$CHECKS" "crowdlearn-grader @ file://$SRC/$GRADER"
    printf 'PY=%q\n' "$PY" > "$SRC/env.sh"
fi
. "$SRC/env.sh"
"$PY" -c 'import crowdlearn_grader.gradescope, nbclient, nbgrader; print("grader imports")'
"$PY" -c 'from crowdlearn_grader.sandbox import check_sandbox as c; print("sandbox:", c())' \
    || echo "sandbox: bubblewrap cannot run here (see config.json's sandbox mode)"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for every submission, from /autograder. It always leaves
# /autograder/results/results.json. Written by crowdlearn_grader.gradescope.
ROOT=/autograder
mkdir -p "$ROOT/results"
PY=python3
[ -f "$ROOT/source/env.sh" ] && . "$ROOT/source/env.sh"
"$PY" -m crowdlearn_grader.gradescope --root "$ROOT"
if [ ! -s "$ROOT/results/results.json" ]; then
    cat > "$ROOT/results/results.json" <<'EOF'
{"score": 0, "execution_time": 0, "stdout_visibility": "hidden", "tests": [],
 "output": "This submission could not be graded: the autograder itself failed to start (see the autograder's log). Please tell your instructor; resubmitting will not help until it is fixed."}
EOF
fi
exit 0
"""


def _constraints(lock: Path) -> tuple:
    """``(constraints text, the lock's Python 'X.Y' or '')``: ``requirements.lock`` without
    the book's and the tests' tools."""
    text = lock.read_text(encoding="utf-8") if lock.is_file() else ""
    found = re.search(r"^# python: (\d+\.\d+)", text, re.M)
    drop = {n.replace("_", "-") for n in DEV_ONLY}
    keep = [line for line in text.splitlines() if line.strip()
            and (line.lstrip().startswith("#") or re.split(r"[=<>!~ \[;]", line.strip(), 1)[
                0].lower().replace("_", "-") not in drop)]
    return "\n".join(keep) + "\n", found.group(1) if found else ""


def _wheel(tmp: Path) -> list:
    """The wheels of this source tree: crowdlearn, crowdlearn-checks, crowdlearn-grader."""
    from crowdlearn_grader.kit import ROOT, build_wheels

    (tmp / "wheels").mkdir(exist_ok=True)
    return build_wheels(ROOT, [".", "checks", "grader"], tmp / "wheels")


def build_autograder(assignment: str, out_dir, *, source=None, sandbox: str = "auto",
                     timeout: int = 120, hidden_visibility: str = "after_published",
                     wheel=None, lock=None, variant=None) -> Path:
    """Write ``out_dir/<assignment>[-<variant>]-gradescope.zip`` (see the module docstring);
    returns its path.

    ``source`` is the folder of instructor versions (default ``book/assignments``);
    ``sandbox`` one of :data:`SANDBOX_MODES`; ``timeout`` the seconds a cell may run;
    ``hidden_visibility`` Gradescope's visibility of checks with hidden tests; ``wheel`` the
    wheels to ship (crowdlearn, crowdlearn-checks, crowdlearn-grader; default: built from
    this source tree); ``lock`` the pins (default the tree's ``requirements.lock``);
    ``variant`` the variant's name, for the file name."""
    from crowdlearn_grader.assignments import find_assignments, read_assignment
    from crowdlearn_grader.kit import ROOT

    known = find_assignments(source)
    if assignment not in known:
        raise ValueError(f"no assignment {assignment!r}; there are {', '.join(known)}")
    if sandbox not in SANDBOX_MODES or hidden_visibility not in VISIBILITIES[:3]:
        raise ValueError(f"sandbox must be one of {SANDBOX_MODES} and hidden_visibility one "
                         f"of {VISIBILITIES[:3]}")
    read_assignment(known[assignment])  # a broken notebook stops here, not on Gradescope
    constraints, python = _constraints(Path(lock) if lock else ROOT / "requirements.lock")
    config = {"assignment": assignment, "timeout": int(timeout), "sandbox": sandbox,
              "hidden_visibility": hidden_visibility, "lock_python": python}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{assignment}{'-' + variant if variant else ''}-gradescope.zip"
    with tempfile.TemporaryDirectory(prefix="crowdlearn-gradescope-") as tmp:
        wheels = [Path(w) for w in wheel] if wheel else _wheel(Path(tmp))
        files = {"setup.sh": SETUP_SH.replace("__LOCK_PYTHON__", python or "none"),
                 "run_autograder": RUN_AUTOGRADER, "constraints.txt": constraints,
                 "config.json": json.dumps(config, indent=1) + "\n"}
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in files.items():
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100755 if name in ("setup.sh", "run_autograder")
                                      else 0o100644) << 16
                zf.writestr(info, text, zipfile.ZIP_DEFLATED)
            for w in wheels:
                zf.write(w, f"wheels/{w.name}")
            for path in sorted(known[assignment].parent.iterdir()):
                if path == known[assignment] or (path.is_file() and path.suffix != ".md"
                                                 and not path.name.startswith(".")):
                    zf.write(path, f"assignments/{path.name}")
    return target


# -- inside Gradescope's container ----------------------------------------------------------------
def _submitter(root: Path) -> tuple:
    """``(folder name, 'Name <email>' of every user)`` from ``submission_metadata.json``;
    ``("submission", [])`` when it is missing or unreadable."""
    try:
        meta = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
        users = [u for u in meta.get("users", []) if isinstance(u, dict)]
    except (OSError, ValueError, AttributeError):
        return "submission", []
    people = [" ".join(f"{u.get('name') or ''} <{u.get('email')}>".split()) if u.get("email")
              else str(u.get("name") or "") for u in users]
    people = [p for p in people if p]
    first = users[0] if users else {}
    folder = str(first.get("email") or first.get("name") or "submission")
    folder = re.sub(r"[^\w@.+-]", "_", folder).lstrip(".-") or "submission"
    return folder, people


def _find_notebook(folder: Path, assignment: str) -> tuple:
    """``(path, None)`` of the submitted notebook, or ``(None, why not)``."""
    if not folder.is_dir():
        return None, "nothing was submitted"
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
                   and "__MACOSX" not in p.parts)
    books = [p for p in files if p.suffix == ".ipynb" and ".ipynb_checkpoints" not in p.parts]
    exact = [p for p in books if p.name == f"{assignment}.ipynb"]
    if len(exact) == 1 or len(books) == 1:
        return (exact or books)[0], None
    names = ", ".join(str(p.relative_to(folder)) for p in files[:20]) or "no files"
    if not books:
        return None, (f"no Jupyter notebook (.ipynb) was submitted (got: {names}); submit "
                      f"{assignment}.ipynb")
    return None, (f"{len(books)} notebooks were submitted ({names}) and none is named "
                  f"{assignment}.ipynb: submit only that notebook")


def _graded_rows(folder: Path, source: Path, cfg: dict, mode: str, log) -> tuple:
    """``(CheckResult rows, how the kernel was isolated)`` of the one notebook in
    ``folder``; ``([], why)`` when ``mode`` is ``required`` and bubblewrap cannot run a
    kernel here. ``auto`` then grades without it (said in the log)."""
    from crowdlearn_grader.grading import grade
    from crowdlearn_grader.sandbox import SandboxUnavailable

    name, timeout = cfg["assignment"], int(cfg.get("timeout", 120))
    if mode != "off":
        try:
            rows = grade(folder, source, assignments=[name], timeout=timeout, sandbox=True)
            log("sandbox: bubblewrap")
            return rows, "bubblewrap"
        except SandboxUnavailable as err:
            if mode == "required":
                return [], f"the grading sandbox is unavailable in this container ({err})"
            log(f"sandbox: UNAVAILABLE, grading WITHOUT it ({err})")
    rows = grade(folder, source, assignments=[name], timeout=timeout, sandbox=False)
    return rows, "none"


def _zero(output: str, started: float, who=(), assignment: str = "") -> dict:
    """A result of 0 points with ``output`` (a submission that could not be graded)."""
    return {"score": 0.0, "execution_time": int(round(time.monotonic() - started)),
            "output": output, "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"assignment": assignment, "students": list(who)}}


def _results_json(rows, cfg: dict, source: Path, who, started: float) -> dict:
    """Gradescope's result of one graded submission (its CheckResult ``rows``)."""
    from crowdlearn_grader.exports import _hidden_checks, gradescope_results
    from crowdlearn_grader.reports import _score_line
    from crowdlearn_grader.scoring import awaiting_mark

    name = cfg["assignment"]
    hidden, lines = _hidden_checks(source, {name})
    auto = [r for r in rows if not awaiting_mark(r)]
    data = gradescope_results(auto, hidden_checks={c for a, c in hidden if a == name},
                              hidden_lines=lines.get(name, ()),
                              hidden_visibility=cfg.get("hidden_visibility", "after_published"))
    for test in data["tests"]:
        if len(test["output"]) > OUTPUT_CAP:
            test["output"] = test["output"][:OUTPUT_CAP] + "\n[... message cut]"
    score = sum(t["score"] for t in data["tests"])
    most = sum(t["max_score"] for t in data["tests"])
    by_hand = sum(r.max_points for r in rows if awaiting_mark(r))
    text = f"{name}: {_score_line(score, most, 0)} from the automatic checks"
    if who:
        text += f", for {', '.join(who)}"
    if by_hand:
        text += f". The written derivations ({by_hand:g} points) are graded by hand."
    failed = {r.feedback for r in rows if r.feedback.startswith("not graded")}
    if failed:
        text += "\nThis submission could not be graded: " + "; ".join(sorted(failed))
    data.update(score=score, output=text, stdout_visibility="hidden",
                execution_time=int(round(time.monotonic() - started)),
                extra_data={"assignment": name, "students": list(who)})
    return data


def _grade_submission(root: Path, cfg: dict, log, started: float) -> dict:
    """Grade ``root/submission`` (see :func:`run_submission`)."""
    name, (folder, who) = cfg["assignment"], _submitter(root)
    log(f"grading {name} for {', '.join(who) or 'an unnamed submitter'} (folder {folder!r})")
    notebook, why = _find_notebook(root / "submission", name)
    if notebook is None:
        return _zero(f"{name}: 0 points. {why}.", started, who, name)
    mode = os.environ.get(ENV_SANDBOX) or cfg.get("sandbox", "auto")
    source = root / "source" / "assignments"
    with tempfile.TemporaryDirectory(prefix="crowdlearn-gradescope-") as tmp:
        (Path(tmp) / folder).mkdir()
        shutil.copyfile(notebook, Path(tmp) / folder / f"{name}.ipynb")
        rows, how = _graded_rows(Path(tmp), source, cfg,
                                 mode if mode in SANDBOX_MODES else "required", log)
    if not rows:
        why = how if how not in ("bubblewrap", "none") else "the notebook could not be graded"
        return _zero(f"{name}: not graded: {why}. Please tell your instructor.", started,
                     who, name)
    for r in rows:
        log(f"  {r.check}: {r.points:g}/{r.max_points:g} {(r.feedback.splitlines() or [''])[0][:200]}")
    data = _results_json(rows, cfg, source, who, started)
    data["extra_data"]["sandbox"] = how
    return data


def run_submission(root="/autograder") -> dict:
    """Grade the submission in ``root/submission`` with the autograder in ``root/source``
    and write ``root/results/results.json``; returns what was written. Never raises for a
    bad submission or a failure of the grader: the result is then 0 points with the reason
    (the traceback goes to the log, stdout)."""
    import traceback

    started, root = time.monotonic(), Path(root)

    def log(text):
        print(text, flush=True)

    try:
        cfg = json.loads((root / "source" / "config.json").read_text(encoding="utf-8"))
        data = _grade_submission(root, cfg, log, started)
    except BaseException as err:  # noqa: BLE001 -- Gradescope must get a result
        traceback.print_exc(file=sys.stdout)
        data = _zero("This submission could not be graded: the autograder failed "
                     f"({type(err).__name__}). Please tell your instructor.", started)
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".json.partial")
    partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    partial.replace(out)
    log(f"{out}: score {data['score']:g}")
    return data


def validate_results(data) -> list:
    """What in ``data`` (a parsed ``results.json``) breaks Gradescope's specification, as a
    list of messages (empty: valid). Checks the keys and types Gradescope reads, the
    visibility values, and that ``score`` is the sum of the tests' scores, each within its
    ``max_score``."""
    errors = []
    if not isinstance(data, dict):
        return ["results.json is not a JSON object"]
    kinds = {"score": (int, float), "execution_time": (int,), "output": (str,),
             "stdout_visibility": (str,), "visibility": (str,), "tests": (list,),
             "extra_data": (dict,)}
    for key, types in kinds.items():
        if key in data and (not isinstance(data[key], types) or isinstance(data[key], bool)):
            errors.append(f"{key} has type {type(data[key]).__name__}")
    tests = data.get("tests", [])
    if "score" not in data and not all("score" in t for t in tests if isinstance(t, dict)):
        errors.append("no score: neither the result nor every test has one")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITIES:
            errors.append(f"{key} {data[key]!r} is not one of {VISIBILITIES}")
    for i, t in enumerate(tests if isinstance(tests, list) else []):
        errors += [f"tests[{i}]: {e}" for e in _test_errors(t)]
    scores = [t.get("score") for t in tests if isinstance(t, dict)]
    if tests and all(isinstance(s, (int, float)) for s in scores) and \
            isinstance(data.get("score"), (int, float)) and abs(sum(scores) - data["score"]) > 1e-9:
        errors.append(f"score {data['score']} is not the sum of the tests' {sum(scores)}")
    return errors


def _test_errors(test) -> list:
    """What is wrong with one entry of ``tests``."""
    if not isinstance(test, dict):
        return ["not an object"]
    errors = []
    for key, types in {"name": (str,), "score": (int, float), "max_score": (int, float),
                       "output": (str,), "visibility": (str,), "status": (str,)}.items():
        if key in test and (not isinstance(test[key], types) or isinstance(test[key], bool)):
            errors.append(f"{key} has type {type(test[key]).__name__}")
    for key in ("name", "score", "max_score", "output", "visibility"):
        if key not in test:
            errors.append(f"no {key}")
    if test.get("visibility", "visible") not in VISIBILITIES:
        errors.append(f"visibility {test['visibility']!r} is not one of {VISIBILITIES}")
    if test.get("status", "passed") not in ("passed", "failed"):
        errors.append(f"status {test['status']!r} is neither passed nor failed")
    s, m = test.get("score"), test.get("max_score")
    if isinstance(s, (int, float)) and isinstance(m, (int, float)) and not 0 <= s <= m:
        errors.append(f"score {s} is not within 0..{m}")
    return errors


# -- the command line -----------------------------------------------------------------------------
def add_arguments(sub) -> None:
    """The ``gradescope`` subcommand of ``python3 -m crowdlearn_grader``."""
    gs = sub.add_parser(
        "gradescope", help="write a Gradescope autograder .zip per assignment",
        description="Write OUT/<assignment>-gradescope.zip for each assignment (default: "
                    "all): upload it as the assignment's autograder ('Zip file upload'). "
                    "It grades the submitted notebook with this grader, in bubblewrap, "
                    "and writes Gradescope's results.json; see crowdlearn_grader.gradescope.")
    gs.add_argument("assignment", nargs="*", help="assignment names (default: all)")
    gs.add_argument("--out", default="gradescope-autograders", help="folder for the zips")
    gs.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto",
                    help="auto: bubblewrap if the container allows it, else without (logged); "
                         "required: 0 points if it does not; off (default auto)")
    gs.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    gs.add_argument("--hidden-visibility", default="after_published",
                    choices=VISIBILITIES[:3],
                    help="Gradescope visibility of checks with hidden tests")


def command(args) -> int:
    """Run the ``gradescope`` subcommand: one wheel, then one zip per assignment."""
    from crowdlearn_grader.assignments import find_assignments

    names = args.assignment or list(find_assignments(args.source))
    with tempfile.TemporaryDirectory(prefix="crowdlearn-gradescope-") as tmp:
        wheel = _wheel(Path(tmp))
        for name in names:
            print(build_autograder(name, args.out, source=args.source, sandbox=args.sandbox,
                                   timeout=args.timeout, wheel=wheel,
                                   hidden_visibility=args.hidden_visibility,
                                   variant=getattr(args, "variant", None)))
    return 0


def main(argv=None) -> int:
    """``python -m crowdlearn_grader.gradescope [--root /autograder]``: what
    ``run_autograder`` runs; always exits 0 once ``results.json`` is written."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m crowdlearn_grader.gradescope")
    parser.add_argument("--root", default="/autograder")
    run_submission(parser.parse_args(argv).root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
