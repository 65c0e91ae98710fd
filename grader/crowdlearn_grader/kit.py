"""What a student needs beside the released notebooks (:func:`build_student_kit`): the package
wheels built from this tree, ``requirements-student.txt``, pinned constraints and INSTALL.md.
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

STUDENT_EXTRA = "book"  # crowdlearn[book]: what the notebooks import beside numpy and scipy
STUDENT_REQUIREMENTS = ("jupyterlab", "jupyterlab-myst", "ipykernel")  # beside the wheel
INSTRUCTOR_ONLY = ("nbgrader", "jupyter-book", "jupyter_book", "pytest", "playwright",
                   "hypothesis", "black")  # never pinned into the students' constraints


def _lock_python(text: str) -> str | None:
    match = re.search(r"^# python: (\d+\.\d+)", text, re.M)
    return match.group(1) if match else None


def _pins(text: str, drop) -> str:
    """``requirements.lock``'s ``text`` without the distributions named in ``drop``."""
    drop, keep = {n.replace("_", "-") for n in drop}, []
    for line in text.splitlines():
        name = re.split(r"[=<>!~ \[;]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
        if not line.strip() or line.lstrip().startswith("#") or name not in drop:
            keep.append(line)
    return "\n".join(keep) + "\n"


def build_student_kit(out_dir, *, source_root=None, lock=None) -> dict:
    """Write the wheels, the requirements, the constraints and ``INSTALL.md`` into ``out_dir``
    (from ``source_root``, default this checkout; unpinned without a ``lock``). Returns
    ``{"wheel", "requirements", "constraints" (or None), "install"}`` paths."""
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
        text = lock.read_text(encoding="utf-8")
        constraints.write_text(_pins(text, (*INSTRUCTOR_ONLY, "crowdlearn")), encoding="utf-8")
        locked = _lock_python(text)
        if locked:
            python_note = (f" (pinned for Python {locked}; on another Python delete the `-c` "
                           "line of requirements-student.txt first)")
        lines.append(f"-c {constraints.name}")
    lines += [f"./{wheel.name}[{STUDENT_EXTRA}]", f"./{checks.name}", *STUDENT_REQUIREMENTS]
    requirements = out / "requirements-student.txt"
    requirements.write_text("\n".join(lines) + "\n", encoding="utf-8")
    install = out / "INSTALL.md"
    text = (Path(__file__).parent / "student_install.md").read_text(encoding="utf-8")
    install.write_text(text.format(version=version, python_note=python_note), encoding="utf-8")
    return {"wheel": wheel, "wheels": [wheel, checks], "requirements": requirements,
            "constraints": constraints, "install": install}


def build_wheels(root: Path, folders, out: Path) -> list:
    """The wheels of each ``root / folder``, built from a copy, into ``out``."""
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
