r"""Gradescope autograders: :func:`build_autograder` writes one ``.zip`` per assignment
(``setup.sh``, ``run_autograder``, the notebook, the wheels); in Gradescope's container
:func:`run_submission` grades the submission with this grader and always writes a
``results.json`` (0 with the reason when it cannot grade). The ``sandbox`` mode (``auto``,
``required``, ``off``) and the layout are in the README's "Teaching with the book".
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
            "crowdlearn-grader")  # not pinned in the zip: book/test tools, our own wheels
OUTPUT_CAP = 20_000  # characters kept of one check's message (results.json has a size limit)


def _constraints(lock: Path) -> tuple:
    """``(requirements.lock without DEV_ONLY, the lock's Python 'X.Y' or '')``."""
    from crowdlearn_grader.kit import _lock_python, _pins
    text = lock.read_text(encoding="utf-8") if lock.is_file() else ""
    return _pins(text, DEV_ONLY), _lock_python(text) or ""


def _wheel(tmp: Path) -> list:
    """The wheels of this source tree: crowdlearn, crowdlearn-checks, crowdlearn-grader."""
    from crowdlearn_grader.kit import ROOT, build_wheels
    (tmp / "wheels").mkdir(exist_ok=True)
    return build_wheels(ROOT, [".", "checks", "grader"], tmp / "wheels")


def build_autograder(assignment: str, out_dir, *, source=None, sandbox: str = "auto",
                     timeout: int = 120, hidden_visibility: str = "after_published",
                     wheel=None, lock=None, variant=None) -> Path:
    """Write ``out_dir/<assignment>[-<variant>]-gradescope.zip`` and return its path;
    ``wheel`` and ``lock`` default to wheels built from this tree and its requirements.lock."""
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
        here = Path(__file__).parent  # the two scripts, beside this module
        setup = (here / "gradescope_setup.sh").read_text(encoding="utf-8")
        files = {"setup.sh": setup.replace("__LOCK_PYTHON__", python or "none"),
                 "run_autograder": (here / "gradescope_run_autograder.sh").read_text(
                     encoding="utf-8"), "constraints.txt": constraints,
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
    """``(folder name, ['Name <email>', ...])`` from ``submission_metadata.json``."""
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
    """``(CheckResult rows, "bubblewrap" or "none")``, or ``([], why)`` if ``required``."""
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
        first = (r.feedback.splitlines() or [""])[0][:200]
        log(f"  {r.check}: {r.points:g}/{r.max_points:g} {first}")
    data = _results_json(rows, cfg, source, who, started)
    data["extra_data"]["sandbox"] = how
    return data


def run_submission(root="/autograder") -> dict:
    """Grade ``root/submission``; write and return ``root/results/results.json``, never raise."""
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
    """What in a parsed ``results.json`` breaks Gradescope's specification (empty: valid)."""
    if not isinstance(data, dict):
        return ["results.json is not a JSON object"]
    errors = _type_errors(data, {"score": (int, float), "execution_time": (int,), "output": str,
                                 "stdout_visibility": str, "visibility": str, "tests": list,
                                 "extra_data": dict})
    tests = data.get("tests", [])
    if "score" not in data and not all("score" in t for t in tests if isinstance(t, dict)):
        errors.append("no score: neither the result nor every test has one")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITIES:
            errors.append(f"{key} {data[key]!r} is not one of {VISIBILITIES}")
    for i, t in enumerate(tests if isinstance(tests, list) else []):
        errors += [f"tests[{i}]: {e}" for e in _test_errors(t)]
    scores = [t.get("score") for t in tests if isinstance(t, dict)]
    if tests and all(isinstance(s, (int, float)) for s in [*scores, data.get("score")]) and \
            abs(sum(scores) - data["score"]) > 1e-9:
        errors.append(f"score {data['score']} is not the sum of the tests' {sum(scores)}")
    return errors


def _test_errors(test) -> list:
    """What is wrong with one entry of ``tests``."""
    if not isinstance(test, dict):
        return ["not an object"]
    errors = _type_errors(test, {"name": str, "score": (int, float), "max_score": (int, float),
                                 "output": str, "visibility": str, "status": str})
    errors += [f"no {key}" for key in ("name", "score", "max_score", "output", "visibility")
               if key not in test]
    if test.get("visibility", "visible") not in VISIBILITIES:
        errors.append(f"visibility {test['visibility']!r} is not one of {VISIBILITIES}")
    if test.get("status", "passed") not in ("passed", "failed"):
        errors.append(f"status {test['status']!r} is neither passed nor failed")
    s, m = test.get("score"), test.get("max_score")
    if isinstance(s, (int, float)) and isinstance(m, (int, float)) and not 0 <= s <= m:
        errors.append(f"score {s} is not within 0..{m}")
    return errors


def _type_errors(data: dict, kinds: dict) -> list:
    return [f"{key} has type {type(data[key]).__name__}" for key, types in kinds.items()
            if key in data and (not isinstance(data[key], types) or isinstance(data[key], bool))]


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
    """``python -m crowdlearn_grader.gradescope [--root /autograder]``; always exits 0."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m crowdlearn_grader.gradescope")
    parser.add_argument("--root", default="/autograder")
    run_submission(parser.parse_args(argv).root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
