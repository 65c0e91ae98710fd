"""The rendered book's layout and accessibility, measured in headless Chromium at 1280 px and
at 390 px, on every page of the built book (served on 127.0.0.1), after MathJax has typeset:

* **display equations**: at 1280 px none is wider than its box; at 390 px every
  equation wider than its box scrolls sideways in that box, which can be
  reached with the keyboard (``tabindex=0``, a role and a name), shows a focus outline and a
  cue (a shadow on the side with more to show); the same for code blocks and inline formulas;
* **code blocks**: at 1280 px none needs sideways scrolling; at 390 px code wraps with a hanging
  indent (``book/_static/scroll-boxes.js``), so only a cell's output may scroll;
* **figures**: at 1280 px none is shown below 80 % of its natural width; at 390 px none is
  shown below the scale at which its tick labels (drawn with ``book/matplotlibrc``) stay 9 CSS
  px high (a wider one scrolls in a focusable box); every figure has alt text;
* **accessibility**: ``tests/book/test_book_a11y.py`` (axe-core, same pages, same tab);
* **assignments**: no solution (nbgrader's solution markers, or the instructor's code) in an
  assignment page;
* **tables** fit the column or scroll in their own box; no page (``genindex.html`` and
  ``search.html`` included) scrolls sideways; the book's title stays in view in the sidebar.

The per-page test is in ``test_book_pages.py``: one browser tab per pytest-xdist worker, each
page loaded once, then checked offline, measured at both widths and checked by axe-core in
both colour modes (one test class per page, so that the two workers share the pages). Every wait is for an event (the load
event, MathJax's startup promise, fonts, images, the end of CSS transitions), bounded by a
generous guard only. Viewport screenshots (1280 and 390 px) are saved in
``test-artifacts/layout/``; they never fail a test. Run alone for a report:
``python tests/book/test_book_layout.py``. Needs the built book and Chromium (skipped without them,
except under CI).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # support.py, run as a script
from support import (ARTIFACTS, BOOK, CHROMIUM_ARGS, HTML, ROOT, book_pages,  # noqa: E402
                      chromium, fail_or_skip, serve)

SKIP_DIRS = frozenset({"_static", "_sources", "_images", "reports", "_downloads",
                       "_modules"})
WIDTHS = (1280, 390)
GUARD_MS = 180_000  # the last guard on any wait for an event; never reached on a sound page
MIN_TICK_PX = 9.0

# Every wait in the page is for an event; ``within`` turns one that never comes into an error
# (after GUARD_MS) instead of a test that hangs.
WITHIN = r"""const within = (promise, what, ms) => Promise.race([promise, new Promise((_, fail) =>
  setTimeout(() => fail(new Error(what + ' did not happen in ' + ms / 1000 + ' s')), ms))]);"""

# Resolves once the page has settled: MathJax has typeset, fonts and images are loaded, the
# scroll boxes (book/_static/scroll-boxes.js) are marked for the current width.
SETTLE = r"""async (ms) => {
  %s
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await within(MathJax.startup.promise, 'MathJax typesetting', ms);
  }
  await within(document.fonts.ready, 'loading the fonts', ms);
  await within(Promise.all([...document.images].map((i) => i.complete ? null
                                                    : i.decode().catch(() => null))),
               'loading the images', ms);
  await within(new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))),
               'two animation frames', ms);
  if (window.clScrollBoxes) clScrollBoxes.refresh();
}""" % WITHIN

NO_MOTION = """*, *::before, *::after { transition: none !important;
  animation-duration: 0s !important; animation-iteration-count: 1 !important; }"""

# Colour mode as pydata-sphinx-theme sets it; resolves when the colours' transitions are over.
SET_MODE = r"""async ([mode, ms]) => {
  %s
  const html = document.documentElement;
  if (html.dataset.theme !== mode || html.dataset.mode !== mode) {
    html.dataset.theme = mode;
    html.dataset.mode = mode;
    await within(new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))),
                 'two animation frames', ms);
  }
  await within(Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition)
                           .map((a) => a.finished.catch(() => null))),
               'the colour transitions', ms);
}""" % WITHIN

MEASURE = r"""(tickPx) => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const outer = article.getBoundingClientRect();  // the article with its padding
  const pad = getComputedStyle(article);
  const column = { left: outer.left + parseFloat(pad.paddingLeft),
                   right: outer.right - parseFloat(pad.paddingRight) };
  column.width = column.right - column.left;      // the text column
  const describe = (el) => {
    const sec = el.closest('section[id]');
    return (sec ? '#' + sec.id + ': ' : '') + (el.textContent || el.getAttribute('alt') || '')
      .replace(/\s+/g, ' ').trim().slice(0, 70);
  };
  // the box that scrolls ``el`` sideways, if any (inside the article: a figure may use the
  // article's padding on a phone)
  const scrollBox = (el) => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      const s = getComputedStyle(a);
      if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && a.scrollWidth > a.clientWidth)
        return a.getBoundingClientRect().right <= outer.right + 1 ? a : null;
    }
    return null;
  };
  // what a keyboard user gets from a box that scrolls: focus, a role and name, a cue
  // the first ancestor that clips ``el`` (overflow hidden) where it is wider, if it does not
  // sit in a scroll box first; the article's edge clips too (the window's, on a phone)
  const clippedBy = (el) => {
    const r = el.getBoundingClientRect();
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') return null;
      const ar = a.getBoundingClientRect();
      if ((s.overflowX === 'hidden' || s.overflowX === 'clip') && r.right > ar.right + 1) return a;
    }
    return r.right > outer.right + 1 ? article : null;
  };
  const reach = (box) => {
    if (!box) return { scrolls: false };
    const named = box.matches('pre') || (!!box.getAttribute('role')
                                         && !!box.getAttribute('aria-label'));
    return { scrolls: true, focusable: box.tabIndex === 0, named,
             cue: getComputedStyle(box).boxShadow !== 'none' && !!box.dataset.clMore };
  };
  const visible = (el) => el.getBoundingClientRect().width > 0;
  const equations = [];
  for (const c of article.querySelectorAll('mjx-container[display="true"]')) {
    const math = c.querySelector('mjx-math');
    if (!math || !visible(math)) continue;
    // the equation's own box: Sphinx's div.math holds the formula and its number
    const box = c.closest('div.math');
    const w = box ? box.scrollWidth : math.getBoundingClientRect().width;
    const room = box ? box.clientWidth : c.parentElement.clientWidth;
    if (w > room + 1) {
      equations.push({ text: describe(c.closest('.math') || c), width: Math.round(w),
                       column: room, ...reach(scrollBox(math)) });
    }
  }
  const inline = [];
  for (const c of article.querySelectorAll('mjx-container:not([display="true"])')) {
    const math = c.querySelector('mjx-math');
    if (!math || !visible(math)) continue;
    const box = scrollBox(math);  // the formula's own, or a table's that holds it
    const own = !!box && (box === c || box === c.parentElement);
    if (own || (!box && clippedBy(math)))
      inline.push({ text: describe(c.closest('p') || c), ...reach(own ? box : null) });
  }
  const code = [];
  for (const pre of article.querySelectorAll('div.highlight pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1 && visible(pre)) {
      const lines = pre.textContent.split('\n');
      code.push({ text: describe(pre), longest: Math.max(...lines.map((l) => l.length)),
                  output: !!pre.closest('.cell_output'), ...reach(pre) });
    }
  }
  const images = [];
  for (const img of article.querySelectorAll('img')) {
    if (!img.naturalWidth || img.closest('.cl-explorer') || !visible(img)) continue;
    const shown = img.getBoundingClientRect().width;
    const drawn = !!img.closest('.cell_output');  // a matplotlib figure of a cell
    const ratio = shown / img.naturalWidth;
    const box = scrollBox(img);
    const right = img.getBoundingClientRect().right;
    images.push({ src: img.getAttribute('src').split('/').pop(), natural: img.naturalWidth,
                  shown: Math.round(shown), ratio, drawn, tick: ratio * tickPx,
                  wide: !!box || right > outer.right + 1, ...reach(box),
                  alt: img.getAttribute('alt') || '',
                  where: describe(img.closest('.cell') || img) });
  }
  const tables = [];
  for (const t of article.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    if (r.right > column.right + 1 && visible(t))
      tables.push({ text: describe(t), ...reach(scrollBox(t)) });
  }
  // the focus outline of the first box that scrolls (keyboard users see where they are)
  let outline = null;
  for (const box of article.querySelectorAll('[data-cl-more][tabindex="0"]')) {
    box.focus({ preventScroll: true });
    if (document.activeElement !== box) continue;  // e.g. in a folded box
    const s = getComputedStyle(box);
    outline = { where: describe(box), style: s.outlineStyle, width: parseFloat(s.outlineWidth) || 0 };
    box.blur();
    break;
  }
  const text = article.innerText;
  return { equations, inline, code, images, tables, outline,
           pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
           minScale: window.clFigureMinScale || null,
           solutionMarkers: /BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS/.test(text),
           favicon: !!document.querySelector('link[rel~="icon"]'),
           tocCitations: [...document.querySelectorAll(
               'nav a .cite, .bd-sidebar a .cite, .bd-toc a .cite')]
             .map((c) => c.closest('a').textContent.trim()) };
}"""



def pages() -> list[str]:
    """Every page of the built book, ``genindex.html`` and ``search.html`` included."""
    return book_pages(SKIP_DIRS)


def figure_rc() -> dict:
    """The settings ``book/matplotlibrc`` fixes for every figure of the book."""
    from matplotlib import rc_params_from_file

    rc = rc_params_from_file(str(BOOK / "matplotlibrc"), use_default_template=True)
    return {key: rc[key] for key in ("figure.dpi", "savefig.dpi", "font.size",
                                     "xtick.labelsize", "ytick.labelsize", "axes.labelsize",
                                     "axes.titlesize", "legend.fontsize")}


def tick_px() -> float:
    """Height of a tick label in the PNG, in pixels (= CSS px at the figure's natural width)."""
    rc = figure_rc()
    dpi = rc["figure.dpi"] if rc["savefig.dpi"] == "figure" else float(rc["savefig.dpi"])
    return min(float(rc["xtick.labelsize"]), float(rc["ytick.labelsize"])) * dpi / 72.0


class Tab:
    """The module's one browser tab: loads a page once, resizes it, switches its colour mode."""

    def __init__(self, page, base: str):
        self.page, self.base, self.path = page, base, None
        self.errors: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def show(self, path: str, width: int, mode: str = "light"):
        page = self.page
        if path != self.path:
            self.path = None
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{self.base}/{path}", wait_until="load")
            if page.evaluate("() => !!document.querySelector('.math')"):  # typesetting begun
                page.wait_for_function(
                    "() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            # no CSS transitions or animations: a colour-mode switch is then final at the next
            # frame (a transition that keeps restarting, as some did on a busy machine, can
            # otherwise hold the wait for its end until the guard)
            page.add_style_tag(content=NO_MOTION)
            page.evaluate(SETTLE, GUARD_MS)
            self.path = path
        elif page.viewport_size["width"] != width:
            page.set_viewport_size({"width": width, "height": 900})
            page.evaluate(SETTLE, GUARD_MS)
        page.evaluate(SET_MODE, [mode, GUARD_MS])
        return page

    def screenshot(self, path: str, width: int):
        """A viewport screenshot for a person to look at; never fails a test."""
        shots = ARTIFACTS / "layout"
        try:
            shots.mkdir(parents=True, exist_ok=True)
            name = path.replace("/", "_").removesuffix(".html")
            self.page.screenshot(path=str(shots / f"{name}_{width}.png"), timeout=10_000)
        except Exception as exc:  # noqa: BLE001 - an artifact, not a check
            print(f"screenshot of {path} at {width} px skipped: {exc}")


@contextlib.contextmanager
def open_tab():
    """A ``Tab`` on the built book, served on 127.0.0.1, in a browser of its own (skipped, or
    failed under CI, without Chromium or the build); also the tab of test_book_pages.py."""
    exe = chromium()
    if exe is None or not HTML.exists():
        fail_or_skip("needs Chromium and the built book (python3 run.py book)")
    playwright = pytest.importorskip("playwright.sync_api")
    with serve(HTML) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTHS[0], "height": 900})
        page.set_default_timeout(GUARD_MS)
        yield Tab(page, base)
        browser.close()


@pytest.fixture(scope="module")
def tab():
    with open_tab() as opened:
        yield opened


def measure(tab: Tab, page_path: str, width: int) -> dict:
    page = tab.show(page_path, width)
    result = page.evaluate(MEASURE, tick_px())
    tab.screenshot(page_path, width)
    return result


def problems(page_path: str, width: int, r: dict) -> list[str]:
    out = []
    cut = "does not scroll in its own box"
    if width >= 1280:
        out += [f"equation {e['width']} px wide (with its number) in a {e['column']} px box: "
                f"{e['text']}"
                for e in r["equations"]]
        out += [f"code block needs sideways scrolling (longest line {c['longest']} "
                f"characters): {c['text']}" for c in r["code"]]
        out += [f"figure {i['src']} shown at {i['ratio']:.0%} of its width ({i['shown']} of "
                f"{i['natural']} px): {i['where']}" for i in r["images"] if i["ratio"] < 0.8]
    for kind, items in (("equation", r["equations"]), ("formula", r["inline"]),
                        ("code block", r["code"]), ("table", r["tables"]),
                        ("figure", [i for i in r["images"] if i["wide"]])):
        for e in items:
            what = e.get("text") or e.get("where")
            if not e["scrolls"]:
                out.append(f"{kind} cut off ({cut}): {what}")
            elif not e["focusable"]:
                out.append(f"{kind} scrolls in a box the keyboard cannot reach: {what}")
            elif not e["named"]:
                out.append(f"{kind} scrolls in a box without a role and name: {what}")
            elif not e["cue"]:
                out.append(f"{kind} scrolls with no visible cue: {what}")
    if r["outline"] and not (r["outline"]["style"] != "none" and r["outline"]["width"] >= 2):
        out.append(f"a focused scroll box shows no outline: {r['outline']}")
    if width < 1280:  # code wraps on a phone (scroll-boxes.js); only an output may scroll
        out += [f"code block scrolls sideways at {width} px (longest line {c['longest']} "
                f"characters): {c['text']}" for c in r["code"] if not c["output"]]
        out += [f"figure {i['src']} shown at {i['ratio']:.0%} of its width: tick labels "
                f"{i['tick']:.1f} px (< {MIN_TICK_PX:g}): {i['where']}"
                for i in r["images"] if i["drawn"] and i["tick"] < MIN_TICK_PX - 0.05]
    out += [f"figure {i['src']} has no alt text (only its file name): {i['where']}"
            for i in r["images"]
            if not i["alt"].strip() or "_images/" in i["alt"] or i["alt"].endswith(".png")]
    if r["pageWidth"] > r["viewport"] + 1:
        out.append(f"the page scrolls sideways ({r['pageWidth']} px at {r['viewport']} px)")
    if "assignments/" in page_path and r["solutionMarkers"]:
        out.append("solution markers in an assignment page")
    if not r["favicon"]:
        out.append("no favicon")
    out += [f"raw bibliography key in a table of contents: {t!r}" for t in r["tocCitations"]]
    return out


def check_layout(tab: Tab, page_path: str, width: int) -> None:
    """The per-page layout test (run by ``test_book_pages.py`` for every page and width)."""
    found = problems(page_path, width, measure(tab, page_path, width))
    assert not found, f"{page_path} at {width} px:\n  " + "\n  ".join(found)


@pytest.mark.browser
def test_sidebar_keeps_the_book_title_in_view(tab):
    """The left sidebar scrolls its chapter list under the book's title, which stays visible."""
    page = tab.show("book/10_model_selection.html", 1280)
    found = page.evaluate(r"""() => {
      const bar = document.querySelector('#pst-primary-sidebar');
      const title = bar.querySelector('.navbar-brand');
      const before = bar.scrollTop;
      bar.scrollTop = bar.scrollHeight;
      const scrolled = bar.scrollTop - before;
      const r = title.getBoundingClientRect(), b = bar.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      bar.scrollTop = before;
      return { scrolled, inside: r.top >= b.top - 1 && r.bottom <= b.bottom + 1,
               onTop: !!hit && title.contains(hit) };
    }""")
    assert found["scrolled"] > 0, "the sidebar does not scroll at 1280x900: nothing to check"
    assert found["inside"] and found["onTop"], f"the book title scrolls out of view: {found}"


def test_figures_drawn_with_the_book_matplotlibrc():
    """``book/matplotlibrc`` fixes the figures' resolution and font sizes book-wide; matplotlib
    finds it from the kernel's working directory (``book/``, ``book/assignments/``); no chapter
    overrides those settings; and the pages never shrink a figure below 9-px tick labels."""
    import re
    import subprocess

    rc = figure_rc()
    assert rc["figure.dpi"] == 100 and rc["savefig.dpi"] == "figure", rc
    assert rc["font.size"] == 11 and rc["xtick.labelsize"] == rc["ytick.labelsize"] == 11, rc
    assert rc["axes.labelsize"] == 11 and rc["legend.fontsize"] == 10, rc
    assert abs(tick_px() - 11 * 100 / 72) < 1e-9
    for folder in (BOOK, BOOK / "assignments"):
        found = subprocess.run(
            [sys.executable, "-c", "import matplotlib; print(matplotlib.matplotlib_fname())"],
            cwd=folder, capture_output=True, text=True, check=True).stdout.strip()
        assert (folder / found).resolve() == (BOOK / "matplotlibrc").resolve(), (folder, found)
    overriding = re.compile(r'"(figure\.dpi|savefig\.dpi|font\.size|[a-z]+\.(label|title)?'
                            r'size|legend\.fontsize)"')
    for chapter in sorted(BOOK.rglob("*.md")):
        text = chapter.read_text("utf-8")
        for call in re.findall(r"rcParams\.update\(\s*\{[^}]*\}", text):
            assert not overriding.search(call), f"{chapter.name} overrides the book's rc: {call}"
    sys.path.insert(0, str(BOOK / "_ext"))
    from offline_book import figure_min_scale

    assert abs(figure_min_scale(BOOK / "matplotlibrc") * tick_px() - MIN_TICK_PX) < 1e-9


def _page_text(path: Path) -> str:
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text("utf-8")))


def _secret_lines(source: str) -> set:
    """Lines of the solutions and hidden tests of an instructor's notebook that appear
    nowhere else in it (so finding one in a page means a secret leaked)."""
    import re

    regions = re.findall(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", source, re.S)
    outside = re.sub(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n.*?### END \1", "", source,
                     flags=re.S)
    lines = {line.strip() for _, body in regions for line in body.splitlines()}
    return {line for line in lines if len(line) >= 16 and not line.startswith("#")
            and line not in outside}


def test_assignment_pages_hide_solutions_and_hidden_tests():
    """The rendered assignment pages and their downloadable .md and .ipynb show the
    student's cells (``# YOUR CODE HERE``) and the visible checks, and none of the
    instructor's solution code or hidden tests (which the build still executes)."""
    if not HTML.exists():
        fail_or_skip("the built book is missing (python3 run.py book)")
    root = ROOT
    for source in sorted((root / "book" / "assignments").glob("a*.md")):
        secrets = _secret_lines(source.read_text("utf-8"))
        assert secrets, f"{source.name}: no solution found to look for"
        page = HTML / "book" / "assignments" / f"{source.stem}.html"
        downloads = [HTML / "_sources" / "book" / "assignments" / f"{source.stem}{ext}"
                     for ext in (".md", ".ipynb")]
        for shown in [page, *downloads]:
            if shown.suffix == ".html":
                text = _page_text(shown)
            elif shown.suffix == ".ipynb":
                cells = json.loads(shown.read_text("utf-8"))["cells"]
                text = "\n".join("".join(c["source"]) + json.dumps(c.get("outputs", []))
                                  for c in cells)
            else:
                text = shown.read_text("utf-8")
            assert "YOUR CODE HERE" in text, f"{shown.name}: no cell for the student to fill"
            leaked = sorted(s for s in secrets if s in text)
            assert not leaked, f"{shown.name} shows the instructor's code: {leaked[:3]}"
            assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text, shown.name
            answers = _written_answer_lines(source.read_text("utf-8"))
            shown_answers = sorted(a for a in answers if a in text)
            assert not shown_answers, f"{shown.name} shows a model answer: {shown_answers[:2]}"
            if answers:
                assert "YOUR ANSWER HERE" in text, f"{shown.name}: no blank written answer"


def _written_answer_lines(md: str) -> list[str]:
    """Distinctive lines of the model answers in hand-graded markdown cells."""
    lines, inside = [], False
    for line in md.splitlines():
        stripped = line.strip()
        if stripped.startswith("+++") or stripped.startswith("```{code-cell}"):
            inside = stripped.startswith("+++ ") and '"solution": true' in stripped \
                and '"grade": true' in stripped
            continue
        if inside and len(stripped) > 40 and "$" not in stripped:
            lines.append(stripped)
    return lines


if __name__ == "__main__":  # a report for every page
    from playwright.sync_api import sync_playwright

    with serve(HTML) as base, sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        report = Tab(b.new_page(), base)
        total = 0
        for path in pages():
            for width in WIDTHS:  # (axe-core: python tests/book/test_book_a11y.py)
                found = problems(path, width, measure(report, path, width))
                total += len(found)
                for f in found:
                    print(f"{path} @{width}: {f}")
        b.close()
    print(json.dumps({"problems": total}))
