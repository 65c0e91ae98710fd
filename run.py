#!/usr/bin/env python3
"""The README's commands (book, test; pdf for a printable book) and the one that refreshes
the pinned versions.

    python3 run.py book   build the book (installing what it needs); prints where to open it
    python3 run.py test   run the whole test suite, book build included
    python3 run.py pdf    the book as one PDF (_build/pdf/crowdlearn.pdf), printed by Chromium
                          from the built web pages (builds the book first if there is none)
    python3 run.py slides one offline slide deck (reveal.js) per week of book/course.md
                          (_build/slides/week-N.html), from the chapters' sources and the
                          built web pages (builds the book first if there is none)
    python3 run.py lock   re-resolve requirements.txt in a fresh temporary venv and
                          rewrite requirements.lock (maintainers; commit the result)

``book`` and ``test`` work on a fresh machine with only Python 3.11: unless already
inside a virtual environment, they create ``.venv`` next to this file, install
``requirements.txt`` constrained by ``requirements.lock`` (the exact versions of
everything, for Python 3.11 on Linux x86_64) into it -- ``requirements.txt`` installs the
``crowdlearn`` package editable with all its extras (``-e .[all]``) -- and re-run themselves
there. Installs are skipped when nothing they depend on
(requirements.txt, requirements.lock, the pyproject.toml files) changed since the last run. On a
Python other than the lock's, the lock is not applied (a note says so).

``test`` builds the book, which executes every chapter and assignment once; the notebook
tests then check the executed notebooks the build wrote to ``_build/jupyter_execute``
instead of executing them again (run alone, without a fresh build, they execute).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements.txt"
LOCK = ROOT / "requirements.lock"
# never pinned: they come with the venv (ensurepip) or only build packages
UNPINNED = {"pip", "setuptools", "wheel", "distribute"}
BUILD_CMD = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _in_venv() -> bool:
    return sys.prefix != sys.base_prefix


def _lock_python(lock: Path = LOCK) -> str | None:
    """The Python version (``3.11``) the lock file was resolved for, from its header."""
    match = re.search(r"^# python: (\d+\.\d+)", lock.read_text(encoding="utf-8"), re.M)
    return match.group(1) if match else None


def _ensure_environment() -> None:
    """Create .venv if needed and re-exec inside it; install what is missing."""
    if not _in_venv():
        if not _venv_python().exists():
            print(f"[run.py] creating virtual environment {VENV}", flush=True)
            venv.EnvBuilder(with_pip=True).create(VENV)
        os.execv(str(_venv_python()), [str(_venv_python()), *sys.argv])
    constraints: list[str] = []
    if LOCK.exists():
        here = "%d.%d" % sys.version_info[:2]
        locked = _lock_python()
        if locked in (None, here):
            constraints = ["-c", str(LOCK)]
        else:
            print(f"[run.py] note: {LOCK.name} pins versions for Python {locked}, this is "
                  f"Python {here}: installing requirements.txt without it", flush=True)
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, LOCK, *ROOT.glob("*/pyproject.toml"), ROOT / "pyproject.toml"):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"(missing)")
    digest.update(" ".join(constraints).encode())
    stamp = Path(sys.prefix) / ".crowdlearn-install-stamp"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    what = "requirements.txt" + (f" (pinned by {LOCK.name})" if constraints else "")
    print(f"[run.py] installing {what}, crowdlearn (editable) included", flush=True)
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    # requirements.txt installs the package as `-e .[all]`: run from the repository root
    subprocess.run(pip + ["-r", str(REQUIREMENTS), *constraints], check=True, cwd=ROOT)
    stamp.write_text(digest.hexdigest())


def _configure_jupyterlab() -> None:
    """Make JupyterLab in .venv open the chapters (MyST .md) as notebooks on double-click:
    binder/overrides.json (jupytext's default viewer) as the app-level settings override;
    and install binder/crowdlearn-jupyterlab, the prebuilt extension that keeps a folded
    cell folded when it runs and folds a solution's code with its box."""
    share = Path(sys.prefix) / "share" / "jupyter"
    copies = [(ROOT / "binder" / "overrides.json", share / "lab" / "settings" / "overrides.json")]
    extension = ROOT / "binder" / "crowdlearn-jupyterlab"
    copies += [(p, share / "labextensions" / extension.name / p.relative_to(extension))
               for p in sorted(extension.rglob("*")) if p.is_file()]
    for source, target in copies:
        if not target.exists() or target.read_bytes() != source.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())


def _freeze_lines(freeze: str) -> list[str]:
    """``pip freeze`` output without what must not be pinned: pip and the build tools,
    editable installs, and anything installed from a local path or URL."""
    keep = []
    for line in freeze.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-e ", "--")) or " @ " in line:
            continue
        if _canonical(line) in UNPINNED:
            continue
        keep.append(line)
    return sorted(keep, key=_canonical)


def _canonical(requirement: str) -> str:
    """The normalised project name of a requirement line (PEP 503)."""
    name = re.split(r"[=<>!~ ;\[]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def write_lock() -> int:
    """Resolve requirements.txt in a fresh temporary venv and write requirements.lock."""
    start = time.perf_counter()
    here = "%d.%d" % sys.version_info[:2]
    if here != "3.11":
        print(f"[run.py] note: the lock is meant for Python 3.11; this is Python {here}")
    with tempfile.TemporaryDirectory(prefix="crowdlearn-lock-") as tmp:
        env_dir = Path(tmp) / "venv"
        print(f"[run.py] resolving {REQUIREMENTS.name} in a fresh venv ({env_dir})", flush=True)
        venv.EnvBuilder(with_pip=True).create(env_dir)
        py = str(env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
        pip = [py, "-m", "pip", "--disable-pip-version-check"]
        # requirements.txt, which installs the package with all its extras (`-e .[all]`,
        # relative to the repository root) as `run.py` does; the package itself is not pinned
        subprocess.run(pip + ["install", "-q", "-r", str(REQUIREMENTS)], check=True, cwd=ROOT)
        freeze = subprocess.run(pip + ["freeze", "--exclude-editable"],
                                check=True, capture_output=True, text=True).stdout
    lines = _freeze_lines(freeze)
    header = [
        "# Exact versions of everything requirements.txt (and crowdlearn) installs, used by",
        "# run.py as pip constraints: pip install -r requirements.txt -c requirements.lock",
        "# Regenerate with `python3 run.py lock` (a fresh temporary venv, requirements.txt",
        "# installed unconstrained, then pip freeze); pip and setuptools are not pinned.",
        f"# python: {here}",
        f"# resolved on: {platform.system()} {platform.machine()}, "
        f"{time.strftime('%Y-%m-%d')}",
    ]
    LOCK.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print(f"[run.py] wrote {LOCK} ({len(lines)} packages) in "
          f"{time.perf_counter() - start:.0f} s")
    return 0


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


# small matrix products everywhere: one BLAS thread per process (crowdlearn._blas)
ONE_BLAS_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                          "MKL_NUM_THREADS")}


def _build_command() -> tuple[list[str], dict]:
    env = {**ONE_BLAS_THREAD, **os.environ, "PYTHONHASHSEED": "0"}
    return [_bin(BUILD_CMD[0]), *BUILD_CMD[1:]], env


def build_book() -> int:
    start = time.perf_counter()
    # a clean build, so every chapter is executed every time
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    cmd, env = _build_command()
    print("[run.py] " + " ".join(BUILD_CMD), flush=True)
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    _report_build(code, time.perf_counter() - start)
    return code


def _report_build(code: int, took: float, log: Path | None = None) -> None:
    if code == 0:
        print(f"[run.py] book built in {took:.0f} s; open {ROOT / '_build/html/index.html'}",
              flush=True)
        return
    if log is not None and log.exists():  # the build's own messages, which were not shown
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        important = [line for line in lines if re.search(r"WARNING|ERROR|Error|Traceback", line)]
        print("\n".join(["[run.py] the book build said:", *important[-60:], *lines[-20:]]))
    print(f"[run.py] book build FAILED after {took:.0f} s (tracebacks in "
          f"{ROOT / '_build/html/reports'}" + (f"; full log {log}" if log else "") + ")",
          flush=True)


def _parallel() -> list[str]:
    """pytest-xdist's options for two workers, one test file (or test class) per worker at a
    time: a file's module fixtures, such as a graded class, are set up once, and the pages of
    the built book (a class each in tests/book/test_book_pages.py) are shared out."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", "2", "--dist", "loadscope"]


# the slowest tests of each phase are listed at its end (where the time goes, run after run)
DURATIONS = ["--durations=25", "--durations-min=5"]


def _junit(phase: str) -> list[str]:
    """Every test's time, for a reader who wants to know where a run's time went."""
    return [f"--junitxml={ROOT / 'test-artifacts' / f'junit-{phase}.xml'}"]


def run_tests(extra: list[str]) -> int:
    """Build the book and, at the same time, run the tests that do not read it (the two
    cores are both busy: the build mostly waits on one notebook kernel at a time); then run
    the tests that read the built book (marked ``book``, see tests/support.py: BOOK_READERS)."""
    start = time.perf_counter()
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    log = ROOT / "test-artifacts" / "book-build.log"
    log.parent.mkdir(exist_ok=True)
    for old in log.parent.glob("timeline-*.tsv"):  # tests/conftest.py appends to them
        old.unlink()
    cmd, env = _build_command()
    print("[run.py] " + " ".join(BUILD_CMD) + f"  (in the background; log in {log})", flush=True)
    with open(log, "w", encoding="utf-8") as out:
        build = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            print("[run.py] tests that do not read the built book, while it builds", flush=True)
            first = subprocess.run([sys.executable, "-m", "pytest", "-m", "not book",
                                    *_parallel(), *DURATIONS, *_junit("tests-while-building"),
                                    *extra],
                                   cwd=ROOT, env={**ONE_BLAS_THREAD, **os.environ}).returncode
        except BaseException:
            build.kill()
            raise
        print("[run.py] waiting for the book build", flush=True)
        built = build.wait()
    _report_build(built, time.perf_counter() - start, log)
    if built != 0:
        return built
    # the PDF is printed from the built pages while the tests that read them run, and its own
    # test (tests/book/test_pdf.py) runs as soon as it is printed (its report is shown after
    # the other tests')
    import threading

    chosen = [a for a in extra if not a.startswith("-")]  # `run.py test tests/test_x.py`
    pdf_run: dict = {}
    pdf = threading.Thread(target=_pdf_and_its_tests, name="pdf", daemon=True,
                           args=(extra, chosen, pdf_run))
    pdf.start()
    print("[run.py] tests that read the built book (the PDF is printed meanwhile)", flush=True)
    second = subprocess.run([sys.executable, "-m", "pytest", "-m", "book", "--deselect",
                             "tests/book/test_pdf.py", *_parallel(), *DURATIONS,
                             *_junit("tests-of-the-built-book"), *extra],
                            cwd=ROOT, env={**ONE_BLAS_THREAD, **os.environ}).returncode
    pdf.join()
    if "output" in pdf_run:
        print(pdf_run["output"], end="", flush=True)
        if pdf_run["code"] not in (0, 5):
            second = second or pdf_run["code"]
    print(f"[run.py] book and tests took {time.perf_counter() - start:.0f} s")
    # pytest's 5 is "no tests collected" (e.g. `run.py test tests/test_x.py` selects one group)
    codes = [c for c in (first, second) if c not in (0, 5)]
    if first == second == 5:
        return 5
    return codes[0] if codes else 0


def _pdf_and_its_tests(extra: list[str], chosen: list[str], result: dict) -> None:
    """Print the PDF, then (unless ``chosen`` names other tests) run tests/book/test_pdf.py
    on it; its exit code and report go into ``result`` (``"code"``, ``"output"``)."""
    try:
        build_pdf()
    except Exception:  # noqa: BLE001 - reported with the tests' output, and they then fail
        import traceback

        result.update(code=1, output="[run.py] printing the PDF failed:\n"
                      + traceback.format_exc())
    if chosen and not any("test_pdf" in a for a in chosen):
        return
    selection = extra if chosen else ["tests/book/test_pdf.py", *extra]
    run = subprocess.run([sys.executable, "-m", "pytest", "-m", "book", *selection], cwd=ROOT,
                         env={**ONE_BLAS_THREAD, **os.environ}, capture_output=True, text=True)
    result.update(code=result.get("code") or run.returncode,
                  output=result.get("output", "") + run.stdout + run.stderr)


def _chromium() -> str | None:
    """Debian's Chromium (the browser tests' too); under CI, as root, installed if missing."""
    def find():
        for candidate in ("/usr/bin/chromium", shutil.which("chromium"),
                          shutil.which("chromium-browser")):
            if candidate and Path(candidate).exists():
                return candidate
        return None

    found = find()
    if (found is None and os.environ.get("CI", "").lower() == "true"
            and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")):
        print("[run.py] installing chromium (apt-get), as .ci/run does", flush=True)
        apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=apt_env, check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=apt_env, check=False)
        found = find()
    return found


def _built_book(what: str) -> int:
    """Build the book unless ``_build/html`` holds one (then say if pages changed since)."""
    index = ROOT / "_build" / "html" / "index.html"
    if not index.exists():
        print("[run.py] no built book in _build/html: building it first", flush=True)
        return build_book()
    built = index.stat().st_mtime
    newer = [p for p in (ROOT / "book").rglob("*.md") if p.stat().st_mtime > built]
    if newer:
        print(f"[run.py] note: {len(newer)} page(s) changed since the book was built "
              f"(e.g. {newer[0].relative_to(ROOT)}); {what} shows the built book. "
              "Run `python3 run.py book` first for a fresh one.", flush=True)
    return 0


def build_slides() -> int:
    """One lecture deck per week of ``book/course.md``, from the chapters' sources and the
    pages of the HTML build (built here first if missing; nothing is executed again). See
    book/_ext/slides.py. Writes ``_build/slides/week-N.html`` (and ``optional.html``,
    ``index.html``, ``assets/``) and prints their paths."""
    import importlib.util

    start = time.perf_counter()
    code = _built_book("the slides")
    if code != 0:
        return code
    spec = importlib.util.spec_from_file_location("slides", ROOT / "book/_ext/slides.py")
    slides = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = slides  # its dataclasses look their module up
    spec.loader.exec_module(slides)
    out = ROOT / "_build" / "slides"
    report = slides.build(ROOT, ROOT / "_build" / "html", out)
    for deck in report["decks"]:
        print(f"[run.py] {out / deck['file']}", flush=True)
        for problem in deck["unplaced"]:
            print(f"[run.py] warning: a figure or explorer of {problem} is on no slide")
    print(f"[run.py] {len(report['decks'])} decks written in "
          f"{time.perf_counter() - start:.0f} s; open {out / 'index.html'}", flush=True)
    return 0


def build_pdf() -> int:
    """The book as one PDF: Chromium prints the pages of the HTML build (``_build/html``, what
    ``book`` or ``test`` built; built here first if missing) as one document, so nothing is
    executed again. See book/_ext/pdf_book.py. Writes ``_build/pdf/crowdlearn.pdf``."""
    import importlib.util

    start = time.perf_counter()
    code = _built_book("the PDF")
    if code != 0:
        return code
    chromium = _chromium()
    if chromium is None:
        print("[run.py] the PDF is printed by Chromium, which is not installed. On Debian or "
              "Ubuntu: sudo apt-get install chromium  (then run `python3 run.py pdf` again)")
        return 1
    spec = importlib.util.spec_from_file_location("pdf_book", ROOT / "book/_ext/pdf_book.py")
    pdf_book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pdf_book)
    print(f"[run.py] printing the book to PDF with {chromium}", flush=True)
    try:
        pdf = pdf_book.build(ROOT, ROOT / "_build", chromium)
    except Exception:  # the traceback, then a failure: `run.py test` goes on to the tests
        import traceback

        traceback.print_exc()
        print(f"[run.py] PDF FAILED after {time.perf_counter() - start:.0f} s", flush=True)
        return 1
    report = pdf_book.read_report(pdf)
    print(f"[run.py] PDF of {report['pages']} pages written in "
          f"{time.perf_counter() - start:.0f} s: {pdf}", flush=True)
    for problem in pdf_book.problems(report):
        print(f"[run.py] warning: {problem}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("book", "test", "lock", "pdf", "slides"):
        print(__doc__)
        return 2
    if argv[0] == "lock":
        return write_lock()
    _ensure_environment()
    _configure_jupyterlab()
    if argv[0] == "book":
        return build_book()
    if argv[0] == "pdf":
        return build_pdf()
    if argv[0] == "slides":
        return build_slides()
    return run_tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
