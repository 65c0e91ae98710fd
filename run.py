#!/usr/bin/env python3
"""The two commands of the README.

    python3 run.py book   build the book (installing what it needs); prints where to open it
    python3 run.py test   run the whole test suite, book build included

Both work on a fresh machine with only Python 3.11: unless already inside a
virtual environment, they create ``.venv`` next to this file, install
``requirements.txt`` and the ``crowdlearn`` package (editable) into it, and
re-run themselves there. Installs are skipped when nothing they depend on
changed since the last run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BUILD_CMD = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _in_venv() -> bool:
    return sys.prefix != sys.base_prefix


def _ensure_environment() -> None:
    """Create .venv if needed and re-exec inside it; install what is missing."""
    if not _in_venv():
        if not _venv_python().exists():
            print(f"[run.py] creating virtual environment {VENV}", flush=True)
            venv.EnvBuilder(with_pip=True).create(VENV)
        os.execv(str(_venv_python()), [str(_venv_python()), *sys.argv])
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    stamp = Path(sys.prefix) / ".crowdlearn-install-stamp"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    print("[run.py] installing requirements.txt and crowdlearn (editable)", flush=True)
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["-r", str(ROOT / "requirements.txt")], check=True)
    subprocess.run(pip + ["-e", str(ROOT)], check=True)
    stamp.write_text(digest.hexdigest())


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def build_book() -> int:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    # a clean build, so every chapter is executed every time
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    cmd = [_bin(BUILD_CMD[0]), *BUILD_CMD[1:]]
    print("[run.py] " + " ".join(BUILD_CMD), flush=True)
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    took = time.perf_counter() - start
    if code == 0:
        print(f"[run.py] book built in {took:.0f} s; open {ROOT / '_build/html/index.html'}")
    else:
        print(f"[run.py] book build FAILED after {took:.0f} s (tracebacks in "
              f"{ROOT / '_build/html/reports'})")
    return code


def run_tests(extra: list[str]) -> int:
    code = build_book()
    if code != 0:
        return code
    start = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "pytest", *extra], cwd=ROOT).returncode
    print(f"[run.py] tests took {time.perf_counter() - start:.0f} s")
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("book", "test"):
        print(__doc__)
        return 2
    _ensure_environment()
    if argv[0] == "book":
        return build_book()
    return run_tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
