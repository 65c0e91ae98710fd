"""Open every page of the built book in headless Chromium, served on 127.0.0.1.

Checks, per page (``offline_problems``, run by ``test_book_pages.py``, which loads
each page once for all its checks): no JavaScript error, no request to any other
host, every image loaded, MathJax output present where the page has math (and no
MathJax error), no error or traceback output. Here: the search page's result
snippets show formulas as text, never as raw TeX; every chapter offers its
notebook. A viewport screenshot of each page is saved in
test-artifacts/screenshots/ (a screenshot never fails a test).

One browser and one tab serve the module; every wait is for an event (the load
event, MathJax's startup promise, the last request's end), with a generous guard
only as a last resort. Needs the built book (``python3 run.py book``) and
Debian's Chromium (``apt-get install chromium``) with the ``playwright`` Python
package. Without a browser the test is skipped, except under CI (CI=true), where
it fails.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from support import CHROMIUM_ARGS, HTML, book_pages, chromium, fail_or_skip, serve

PAGES = book_pages()
GUARD_S = 180  # the last guard on any wait for an event; never reached on a sound page


class Watched:
    """The module's one tab, with what it saw since the last ``reset``: errors, requests to
    other hosts, failed requests, and the requests still in flight."""

    def __init__(self, page):
        self.page = page
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.failed: list[str] = []
        self.inflight: set[int] = set()
        page.on("console", lambda m: self.errors.append(f"console: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("request", self._request)
        page.on("requestfinished", lambda r: self.inflight.discard(id(r)))
        page.on("requestfailed", self._failed)
        # Anything not on this machine is refused, so a CDN dependency cannot hide.
        page.route("**/*", lambda route: route.continue_()
                   if urlparse(route.request.url).hostname in ("127.0.0.1", None)
                   else route.abort())

    def _request(self, req):
        self.inflight.add(id(req))
        host = urlparse(req.url).hostname
        if req.url.startswith(("http://", "https://", "ws://", "wss://")) and host != "127.0.0.1":
            self.foreign.append(req.url)

    def _failed(self, req):
        self.inflight.discard(id(req))
        self.failed.append(f"{req.url} ({req.failure})")

    def reset(self):
        self.errors.clear()
        self.foreign.clear()
        self.failed.clear()

    def settle(self):
        """Wait until no request is in flight: each wait is for the next request's end
        (Chromium's own "networkidle" is sometimes never reported for a long-idle page)."""
        deadline = time.monotonic() + GUARD_S
        while self.inflight:
            if time.monotonic() > deadline:
                pytest.fail(f"requests still in flight after {GUARD_S} s")
            try:
                self.page.wait_for_event("requestfinished", timeout=1000)
            except Exception:  # noqa: BLE001 - a failed request ends one too; look again
                pass
        # whatever the page's scripts start once the requests are done has a frame to begin
        self.page.evaluate("() => new Promise((r) => requestAnimationFrame(() => r()))")

    def screenshot(self, path):
        """A viewport screenshot for a person to look at; never fails a test."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(path), timeout=10_000)
        except Exception as exc:  # noqa: BLE001 - an artifact, not a check
            print(f"screenshot {path.name} skipped: {exc}")


@pytest.fixture(scope="module")
def server():
    if not HTML.exists():
        fail_or_skip(f"{HTML} does not exist: build the book first (python3 run.py book)")
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="module")
def tab():
    exe = chromium()
    if exe is None:
        fail_or_skip("no Chromium found: install Debian's package (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        fail_or_skip("the playwright package is missing: pip install -r requirements.txt")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(GUARD_S * 1000)
        yield Watched(page)
        b.close()


def test_book_was_built():
    if not PAGES:
        fail_or_skip(f"no pages under {HTML}: build the book first (python3 run.py book)")
    assert any(p.startswith("book/") for p in PAGES)


def offline_problems(tab: Watched, page_path: str, shot: Path) -> list[str]:
    """What is wrong with ``page_path``, just loaded in ``tab`` (``reset`` before the load):
    JavaScript errors, requests to other hosts or that failed, images that did not load, math
    left untypeset or that MathJax could not typeset, error output, a traceback. Saves a
    viewport screenshot to ``shot``. The per-page test is in ``test_book_pages.py``, which
    loads each page once for all its checks."""
    page = tab.page
    source = (HTML / page_path).read_text(encoding="utf-8")
    has_math = 'class="math' in source
    if has_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("""(ms) => Promise.race([MathJax.startup.promise, new Promise((_, fail) =>
          setTimeout(() => fail(new Error('MathJax did not finish in ' + ms / 1000 + ' s')), ms))])""",
                      GUARD_S * 1000)
    tab.settle()
    tab.screenshot(shot)

    broken_images = page.evaluate(
        "() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src)")
    n_math_out = page.evaluate("() => document.querySelectorAll('mjx-container').length")
    raw_math = page.evaluate(
        "() => Array.from(document.querySelectorAll('.math')).filter("
        "e => !e.querySelector('mjx-container') && /\\\\[(\\[]/.test(e.textContent)).length")
    math_errors = page.evaluate(
        "() => Array.from(document.querySelectorAll('mjx-merror')).map(e => "
        "(e.closest('[id]') || e).id + ': ' + (e.getAttribute('data-mjx-error') || 'error'))")
    error_outputs = page.evaluate(
        "() => Array.from(document.querySelectorAll('.output.error, .output.traceback, "
        "div.output.stderr, .cell_output .stderr')).map(e => e.textContent.slice(0, 200))")
    body_text = page.inner_text("body")

    found = []
    if tab.errors:
        found.append(f"JavaScript errors on {page_path}: {tab.errors}")
    if tab.foreign:
        found.append(f"{page_path} asked other hosts for {tab.foreign}")
    if tab.failed:
        found.append(f"{page_path} had failed requests: {tab.failed}")
    if broken_images:
        found.append(f"{page_path} has images that did not load: {broken_images}")
    if has_math and n_math_out == 0:
        found.append(f"{page_path} has math but MathJax typeset none of it")
    if has_math and raw_math:
        found.append(f"{page_path} has {raw_math} math blocks left untypeset")
    if has_math and math_errors:
        found.append(f"{page_path}: MathJax could not typeset {math_errors}")
    if error_outputs:
        found.append(f"{page_path} shows error output: {error_outputs}")
    if "Traceback (most recent call last)" in body_text:
        found.append(f"{page_path} shows a traceback")
    return found


@pytest.mark.browser
@pytest.mark.parametrize("query", ["likelihood", "posterior"])
def test_search_snippets_show_no_raw_tex(query, server, tab, artifacts_dir):
    """search.html cuts each result's snippet from the page's text, where formulas are still
    TeX source; book/_static/search-snippets.js turns them into plain text first."""
    if "search.html" not in PAGES:
        fail_or_skip("the built book has no search page")
    page = tab.page
    tab.reset()
    page.goto(f"{server}/search.html?q={query}", wait_until="load")
    # Sphinx fills in one result at a time and fetches each page for its snippet: done when
    # the status line is set and every result without a description has its snippet
    page.wait_for_function("""() => {
      const status = document.querySelector('#search-results .search-summary');
      const items = [...document.querySelectorAll('#search-results ul.search > li')];
      return status && status.textContent.trim() && items.length
        && items.every((li) => li.querySelector('p.context') || li.querySelector('span'));
    }""")
    tab.settle()
    snippets = page.evaluate(
        "() => [...document.querySelectorAll('#search-results p.context')].map(p => p.textContent)")
    tab.screenshot(artifacts_dir / "screenshots" / f"search_{query}.png")
    assert snippets, f"no result snippets for {query!r}"
    raw = [s for s in snippets if any(t in s for t in ("\\(", "\\)", "\\[", "\\]", "$$"))
           or re.search(r"\\[A-Za-z]+", s)]
    assert not raw, f"{len(raw)} of {len(snippets)} snippets show TeX, e.g. {raw[0][:200]!r}"
    assert not tab.errors, tab.errors


CHAPTER_PAGES = [p for p in PAGES if p.startswith("book/") and p.split("/")[-1][:2].isdigit()]


@pytest.mark.parametrize("page_path", CHAPTER_PAGES)
def test_chapter_offers_its_notebook(page_path):
    """Every chapter's download menu has an .ipynb entry, and the file is a notebook."""
    import json
    import re

    source = (HTML / page_path).read_text(encoding="utf-8")
    links = re.findall(r'href="([^"]*_sources/[^"]*\.ipynb)"', source)
    assert links, f"{page_path} offers no .ipynb download"
    target = (HTML / page_path).parent / links[0]
    nb = json.loads(target.resolve().read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4 and any(c["cell_type"] == "code" for c in nb["cells"])
