"""What a student needs beside the released notebooks: the package and one install command.

:func:`build_student_kit` writes into a folder (the release folder of
``python -m crowdlearn_grader release``):

* ``crowdlearn-<version>-py3-none-any.whl`` -- the package, built from this source tree, so
  students install exactly the code the assignments were written against (no repository,
  no network access to this project), and ``crowdlearn_checks-<version>-...whl``, the helpers
  the assignments' checks import (no grading code);
* ``requirements-student.txt`` -- the wheel (with the ``[book]`` extra), JupyterLab with jupyterlab-myst (which
  renders the notebooks' MyST markdown: maths, cross-references, admonitions, exercises) and
  the kernel, nothing of the instructor's tools (nbgrader, jupyter-book, the test suite): a
  student's JupyterLab shows no grading menus;
* ``constraints-student.txt`` -- the exact versions the book was built and tested with
  (from ``requirements.lock``, for the Python version named there);
* ``INSTALL.md`` -- the one command, run in that folder::

      python3 -m pip install -r requirements-student.txt

  then ``jupyter lab`` opens the notebooks.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["STUDENT_EXTRA", "STUDENT_REQUIREMENTS", "build_student_kit"]

ROOT = Path(__file__).resolve().parents[2]  # grader/crowdlearn_grader/kit.py -> the checkout

STUDENT_EXTRA = "book"
"""The wheel is installed with this extra (``crowdlearn[book]``): what the book's notebooks,
and so the assignments, import beside numpy and scipy -- sympy, matplotlib, the widgets,
pandas and the kernel."""

STUDENT_REQUIREMENTS = ("jupyterlab", "jupyterlab-myst", "ipykernel")
"""Installed next to the wheel (with its ``[book]`` extra); jupyterlab-myst renders the
notebooks' MyST markdown as the book does (installing it enables it). Instructor tools
(nbgrader, jupyter-book, pytest) are left out."""

INSTRUCTOR_ONLY = ("nbgrader", "jupyter-book", "jupyter_book", "pytest", "playwright",
                   "hypothesis", "black")
"""Never pinned into the students' constraints, so nothing pulls them in."""

INSTALL = """# Installing what the assignments need

Run this once, in this folder (a fresh virtual environment is a good idea:
`python3 -m venv .venv && . .venv/bin/activate`):

```
python3 -m pip install -r requirements-student.txt
```

It installs `crowdlearn` {version} from the wheel in this folder (the package every
assignment imports), JupyterLab with jupyterlab-myst (which renders the notebooks' maths,
cross-references and boxes as the book does) and the Python kernel, at the versions the
assignments were tested with{python_note}. Then open the notebooks with

```
jupyter lab
```

Each assignment's visible checks run as you execute its cells; the grader runs the same
checks and some hidden ones.
"""


def _lock_python(lock: Path) -> str | None:
    match = re.search(r"^# python: (\d+\.\d+)", lock.read_text(encoding="utf-8"), re.M)
    return match.group(1) if match else None


def _student_constraints(lock: Path) -> str:
    keep = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        name = re.split(r"[=<>!~ \[;]", line.strip(), maxsplit=1)[0].lower()
        if not line.strip() or line.lstrip().startswith("#"):
            keep.append(line)
        elif name.replace("_", "-") not in {n.replace("_", "-") for n in INSTRUCTOR_ONLY} \
                and name != "crowdlearn":
            keep.append(line)
    return "\n".join(keep) + "\n"


def build_student_kit(out_dir, *, source_root=None, lock=None) -> dict:
    """Write the wheel, the requirements, the constraints and ``INSTALL.md`` into ``out_dir``.

    Parameters
    ----------
    out_dir : path
        Created if needed; existing files of the same names are replaced.
    source_root : path, optional
        The source tree to build the wheel from (default: the one this module lives in).
    lock : path, optional
        The pinned versions (default ``requirements.lock`` in the source tree); without a
        lock file the requirements are unpinned.

    Returns
    -------
    dict
        ``{"wheel": Path, "requirements": Path, "constraints": Path or None,
        "install": Path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(source_root) if source_root is not None else ROOT
    if not (root / "pyproject.toml").is_file():
        raise ValueError(f"{root} holds no pyproject.toml: build the kit from a source "
                         "checkout of crowdlearn")
    wheel, checks = build_wheels(root, [".", "checks"], out)
    version = wheel.name.split("-")[1]
    lock = Path(lock) if lock is not None else root / "requirements.lock"
    constraints = None
    python_note = ""
    lines = ["# Everything a student needs for the crowdlearn assignments; run in this folder:",
             "#     python3 -m pip install -r requirements-student.txt"]
    if lock.is_file():
        constraints = out / "constraints-student.txt"
        constraints.write_text(_student_constraints(lock), encoding="utf-8")
        locked = _lock_python(lock)
        if locked:
            python_note = (f" (pinned for Python {locked}; on another Python delete the `-c` "
                           "line of requirements-student.txt first)")
        lines.append(f"-c {constraints.name}")
    lines += [f"./{wheel.name}[{STUDENT_EXTRA}]", f"./{checks.name}", *STUDENT_REQUIREMENTS]
    requirements = out / "requirements-student.txt"
    requirements.write_text("\n".join(lines) + "\n", encoding="utf-8")
    install = out / "INSTALL.md"
    install.write_text(INSTALL.format(version=version, python_note=python_note),
                       encoding="utf-8")
    return {"wheel": wheel, "wheels": [wheel, checks], "requirements": requirements,
            "constraints": constraints, "install": install}


def build_wheels(root: Path, folders, out: Path) -> list:
    """The wheels of the distributions in ``root / folder`` for each of ``folders`` (built
    from a copy, so no build/ or egg-info lands in the source tree), copied into ``out``
    (replacing older wheels of the same distributions)."""
    made = []
    with tempfile.TemporaryDirectory(prefix="crowdlearn-wheel-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(root, src, ignore=shutil.ignore_patterns(
            ".git", ".venv", "_build", "build", "*.egg-info", "__pycache__", "test-artifacts",
            "node_modules"))
        for folder in folders:
            dist = Path(tmp) / "dist" / folder.replace("/", "_")
            cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                   "--quiet", "-w", str(dist), str(src / folder)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            wheels = sorted(dist.glob("*.whl"))
            if proc.returncode != 0 or len(wheels) != 1:
                raise RuntimeError(f"building the wheel of {folder} failed:\n"
                                   f"{proc.stderr[-3000:]}")
            stem = wheels[0].name.split("-")[0]
            for old in out.glob(f"{stem}-*.whl"):
                old.unlink()
            made.append(out / wheels[0].name)
            shutil.copy2(wheels[0], made[-1])
    return made
