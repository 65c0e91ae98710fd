"""What the test files share: the repository's paths, the built book's pages, Chromium,
a local web server, Node. Fixtures and pytest hooks are in ``conftest.py``; the tests
are grouped by what they test (``core``, ``models``, ``book``, ``js``, ``classroom``) and
import this module as ``support`` (``tests/`` is on pytest's ``pythonpath``)."""

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
HTML = Path(os.environ.get("CROWDLEARN_HTML") or ROOT / "_build" / "html")  # override: a copy
ARTIFACTS = ROOT / "test-artifacts"
ON_CI = os.environ.get("CI", "").lower() == "true"


# Test files that read the built book (``_build/``). ``run.py test`` runs every other test while
# the book builds, and these once it is built; ``tests/core/test_run_py.py`` checks that every test
# file that mentions the build is listed here.
BOOK_READERS = frozenset({
    "test_book_a11y.py",
    "test_book_browser.py",
    "test_book_layout.py",
    "test_book_pages.py",
    "test_built_pages.py",
    "test_em_steps_explorer.py",
    "test_errata.py",
    "test_live_explorers.py",
    "test_notebooks.py",
    "test_pdf.py",
    "test_selfchecks_built.py",
    "test_slides.py",
    "test_teaching_layer.py",
})


# The slowest test files (minutes each: a student's venv, a graded class, JupyterLab, a Dask
# cluster), collected first so that two xdist workers (``run.py test``: ``-n 2 --dist
# loadscope``: a file, or a test class, at a time) start them early and finish together instead
# of one waiting for the last. The pages of the built book (``test_book_pages.py``: a class per
# page, each under a minute) come after the slow explorer files, to even out the end.
SLOW_FIRST = ("test_student_kit.py", "test_assignments.py", "test_classroom_grading.py",
              "test_gradescope.py", "test_classroom_restart_and_jobs.py",
              "test_jupyterlab.py", "test_variants.py", "test_classroom_trusted.py",
              "test_dask_backend.py", "test_live_explorers.py", "test_em_steps_explorer.py",
              "test_notebooks.py", "test_pdf.py", "test_book_pages.py")


# -- shared by the tests that open pages in headless Chromium ---------------------------------
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def released_assignments(out: Path, tmp_path_factory) -> list:
    """``crowdlearn_grader.release(out)`` of ``book/assignments``: the released notebooks,
    made once per test run and copied into ``out`` (test_assignments.py and
    test_student_kit.py both need them; the xdist workers of one run share that one release
    through a lock file in the run's temporary folder)."""
    import fcntl
    import json
    import shutil

    import crowdlearn_grader as classroom

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "released-once"
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = shared / "released.json"
        if not done.exists():
            paths = classroom.release(shared / "notebooks", BOOK / "assignments")
            done.write_text(json.dumps([p.name for p in paths]), encoding="utf-8")
        names = json.loads(done.read_text(encoding="utf-8"))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(shared / "notebooks" / name, out / name)
    return [out / name for name in names]


def fail_or_skip(message: str):
    """Skip a test for want of a tool, except under CI, where that is a failure."""
    if ON_CI:
        pytest.fail(message)
    pytest.skip(message)


def chromium() -> str | None:
    """Debian's Chromium, if installed."""
    import shutil

    for candidate in ("/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def chromium_or_skip(*needed: Path, why: str = "") -> str:
    """Chromium's path, or skip (fail under CI) when it or one of ``needed`` is missing."""
    exe = chromium()
    missing = [str(p) for p in needed if not Path(p).exists()]
    if exe is None or missing:
        fail_or_skip(f"needs Chromium (apt-get install chromium){why}"
                     + (f"; missing {missing}" if missing else ""))
    return exe


@contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def watched_page(browser, width: int, foreign: list, errors: list, height: int = 900):
    """A new page of ``width`` px that records, in the caller's lists, every request to a host
    other than 127.0.0.1 (``foreign``) and every uncaught JavaScript error (``errors``)."""
    from urllib.parse import urlparse

    page = browser.new_page(viewport={"width": width, "height": height})
    page.on("request", lambda r: foreign.append(r.url)
            if urlparse(r.url).hostname not in ("127.0.0.1", None) else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page


def run_node_module(script: str, timeout: int = 300):
    """Run ``script`` as an ES module in Node and return what it wrote to stdout, parsed as
    JSON (skipped without Node, failed under CI)."""
    import json
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        fail_or_skip("node is needed for the JavaScript engine tests")
    proc = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def book_pages(skip_dirs=frozenset({"_static", "_sources", "_images", "reports",
                                    "_downloads"})) -> list[str]:
    """The built book's pages (relative paths), without the root redirect."""
    if not HTML.exists():
        return []
    pages = []
    for p in sorted(HTML.rglob("*.html")):
        rel = p.relative_to(HTML)
        if rel.parts[0] in skip_dirs or rel.name == "index.html" and len(rel.parts) == 1:
            continue
        pages.append(rel.as_posix())
    return pages


def ext_module(name: str):
    """A module of ``book/_ext`` (not a package), imported by path once."""
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BOOK / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bwrap():
    """The bubblewrap sandbox the grader uses (skipped without it, failed under CI); the
    classroom tests import it."""
    import crowdlearn_grader as classroom  # here: those modules skip without nbclient first

    try:
        return classroom.check_sandbox()
    except classroom.SandboxUnavailable as err:
        fail_or_skip(str(err))
