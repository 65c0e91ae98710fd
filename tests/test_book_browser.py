"""Open every page of the built book in headless Chromium, served on 127.0.0.1.

Checks, per page: no JavaScript error, no request to any other host, every
image loaded, MathJax output present where the page has math, no error or
traceback output. A screenshot of each page is saved in test-artifacts/.

Needs the built book (``python3 run.py book``) and Debian's Chromium
(``apt-get install chromium``) with the ``playwright`` Python package. Without
a browser the test is skipped, except under CI (CI=true), where it fails.
"""

from __future__ import annotations

import time
from urllib.parse import urlparse

import pytest

from conftest import CHROMIUM_ARGS, HTML, book_pages, chromium, fail_or_skip, serve

PAGES = book_pages()


@pytest.fixture(scope="module")
def server():
    if not HTML.exists():
        fail_or_skip(f"{HTML} does not exist: build the book first (python3 run.py book)")
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    exe = chromium()
    if exe is None:
        fail_or_skip("no Chromium found: install Debian's package (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        fail_or_skip("the playwright package is missing: pip install -r requirements.txt")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def test_book_was_built():
    if not PAGES:
        fail_or_skip(f"no pages under {HTML}: build the book first (python3 run.py book)")
    assert any(p.startswith("book/") for p in PAGES)


@pytest.mark.browser
@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_offline(page_path, server, browser, artifacts_dir):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, foreign, failed = [], [], []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

    def on_request(req):
        host = urlparse(req.url).hostname
        if req.url.startswith(("http://", "https://", "ws://", "wss://")) and host != "127.0.0.1":
            foreign.append(req.url)
    page.on("request", on_request)
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})"))
    inflight = set()  # requests not yet finished or failed
    page.on("request", lambda r: inflight.add(id(r)))
    page.on("requestfinished", lambda r: inflight.discard(id(r)))
    page.on("requestfailed", lambda r: inflight.discard(id(r)))
    # Anything not on this machine is refused, so a CDN dependency cannot hide.
    page.route("**/*", lambda route: route.continue_()
               if urlparse(route.request.url).hostname in ("127.0.0.1", None)
               else route.abort())

    page.goto(f"{server}/{page_path}", wait_until="load")
    source = (HTML / page_path).read_text(encoding="utf-8")
    has_math = 'class="math' in source
    if has_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=20000)
        page.evaluate("() => MathJax.startup.promise")
    # settled: no request in flight for half a second (Chromium's own "networkidle"
    # lifecycle event is sometimes never reported for a page that is long idle)
    quiet_since, deadline = None, time.monotonic() + 30
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        if inflight:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.5:
            break
    else:
        pytest.fail(f"{page_path}: requests still in flight after 30 s")
    shot = artifacts_dir / "screenshots" / (page_path.replace("/", "__") + ".png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    try:  # an artifact for a person to look at: it never fails a test (a busy machine can
        # take more than 30 s for a full-page shot of the long API page)
        page.screenshot(path=str(shot), full_page=True, timeout=15_000)
    except Exception as exc:  # noqa: BLE001
        print(f"screenshot {shot.name} skipped: {exc}")

    broken_images = page.evaluate(
        "() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src)")
    n_math_out = page.evaluate("() => document.querySelectorAll('mjx-container').length")
    raw_math = page.evaluate(
        "() => Array.from(document.querySelectorAll('.math')).filter("
        "e => !e.querySelector('mjx-container') && /\\\\[(\\[]/.test(e.textContent)).length")
    error_outputs = page.evaluate(
        "() => Array.from(document.querySelectorAll('.output.error, .output.traceback, "
        "div.output.stderr, .cell_output .stderr')).map(e => e.textContent.slice(0, 200))")
    body_text = page.inner_text("body")
    page.close()

    assert not errors, f"JavaScript errors on {page_path}: {errors}"
    assert not foreign, f"{page_path} asked other hosts for {foreign}"
    assert not failed, f"{page_path} had failed requests: {failed}"
    assert not broken_images, f"{page_path} has images that did not load: {broken_images}"
    if has_math:
        assert n_math_out > 0, f"{page_path} has math but MathJax typeset none of it"
        assert raw_math == 0, f"{page_path} has {raw_math} math blocks left untypeset"
    assert not error_outputs, f"{page_path} shows error output: {error_outputs}"
    assert "Traceback (most recent call last)" not in body_text, f"{page_path} shows a traceback"


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
