"""The rendered book's layout, measured in headless Chromium at 1280 px and at 390 px.

For every page of the built book (served on 127.0.0.1), after MathJax has typeset:

* **display equations**: at 1280 px none is wider than the text column; at 390 px every
  equation wider than the column sits in a box of its own that scrolls sideways (never cut);
* **code blocks**: at 1280 px none needs sideways scrolling;
* **figures**: no image with text in it (every figure the book draws) is shown below 80 % of
  its natural width at 1280 px, and every figure has alt text;
* **assignments**: no solution (nbgrader's solution markers, or the instructor's code) in an
  assignment page;
* **tables** fit the column or scroll in their own box; the page never scrolls sideways.

A screenshot of every page at both widths is saved in ``test-artifacts/layout/``. Run alone
for a report: ``python tests/test_book_layout.py``. Needs the built book and Chromium
(skipped without them, except under CI).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import (ARTIFACTS, CHROMIUM_ARGS, HTML, book_pages, chromium,  # noqa: E402
                      fail_or_skip, serve)

SKIP_DIRS = frozenset({"_static", "_sources", "_images", "reports", "_downloads",
                       "_modules"})

MEASURE = r"""async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await new Promise((r) => setTimeout(r, 100));
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const column = article.getBoundingClientRect();
  const describe = (el) => {
    const sec = el.closest('section[id]');
    return (sec ? '#' + sec.id + ': ' : '') + (el.textContent || el.getAttribute('alt') || '')
      .replace(/\s+/g, ' ').trim().slice(0, 70);
  };
  const scrollsItself = (el) => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      const s = getComputedStyle(a);
      if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && a.scrollWidth > a.clientWidth)
        return a.getBoundingClientRect().right <= column.right + 1;
    }
    return false;
  };
  const equations = [];
  for (const c of article.querySelectorAll('mjx-container[display="true"]')) {
    const math = c.querySelector('mjx-math');
    if (!math) continue;
    const w = math.getBoundingClientRect().width;
    if (w > column.width + 1) {
      const label = c.closest('.math') ? (c.closest('.math').id || '') : '';
      equations.push({ text: describe(c.closest('.math') || c), width: Math.round(w),
                       column: Math.round(column.width), scrolls: scrollsItself(math),
                       label });
    }
  }
  const code = [];
  for (const pre of article.querySelectorAll('div.highlight pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const lines = pre.textContent.split('\n');
      code.push({ text: describe(pre), longest: Math.max(...lines.map((l) => l.length)) });
    }
  }
  const images = [];
  for (const img of article.querySelectorAll('img')) {
    if (!img.naturalWidth || img.closest('.cl-explorer')) continue;
    const shown = img.getBoundingClientRect().width;
    images.push({ src: img.getAttribute('src').split('/').pop(), natural: img.naturalWidth,
                  shown: Math.round(shown), ratio: shown / img.naturalWidth,
                  alt: img.getAttribute('alt') || '', where: describe(img.closest('.cell') || img) });
  }
  const tables = [];
  for (const t of article.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    if (r.right > column.right + 1 && !scrollsItself(t)) tables.push(describe(t));
  }
  const text = article.innerText;
  return { equations, code, images, tables, pageWidth: document.documentElement.scrollWidth,
           viewport: window.innerWidth,
           solutionMarkers: /BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS/.test(text),
           favicon: !!document.querySelector('link[rel~="icon"]'),
           tocCitations: [...document.querySelectorAll('nav a .cite, .bd-sidebar a .cite, .bd-toc a .cite')]
             .map((c) => c.closest('a').textContent.trim()) };
}"""


def pages() -> list[str]:
    return [p for p in book_pages(SKIP_DIRS)
            if not p.endswith(("genindex.html", "search.html"))]


def measure(browser, base: str, page_path: str, width: int, shots: Path | None = None) -> dict:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{base}/{page_path}", wait_until="load")
    result = page.evaluate(MEASURE)
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        name = page_path.replace("/", "_").removesuffix(".html")
        try:  # an artifact: never fails a test, however slow the machine
            page.screenshot(path=str(shots / f"{name}_{width}.png"), full_page=True,
                            timeout=15_000)
        except Exception as exc:  # noqa: BLE001
            print(f"screenshot {name}_{width} skipped: {exc}")
    page.close()
    return result


def problems(page_path: str, width: int, r: dict) -> list[str]:
    out = []
    if width >= 1280:
        out += [f"equation {e['width']} px wide in a {e['column']} px column: {e['text']}"
                for e in r["equations"]]
        out += [f"code block needs sideways scrolling (longest line {c['longest']} "
                f"characters): {c['text']}" for c in r["code"]]
        out += [f"figure {i['src']} shown at {i['ratio']:.0%} of its width ({i['shown']} of "
                f"{i['natural']} px): {i['where']}" for i in r["images"] if i["ratio"] < 0.8]
    else:
        out += [f"equation cut off (does not scroll in its own box): {e['text']}"
                for e in r["equations"] if not e["scrolls"]]
    out += [f"figure {i['src']} has no alt text (only its file name): {i['where']}"
            for i in r["images"]
            if not i["alt"].strip() or "_images/" in i["alt"] or i["alt"].endswith(".png")]
    out += [f"table wider than the column and not scrollable: {t}" for t in r["tables"]]
    if r["pageWidth"] > r["viewport"] + 1:
        out.append(f"the page scrolls sideways ({r['pageWidth']} px at {r['viewport']} px)")
    if "assignments/" in page_path and r["solutionMarkers"]:
        out.append("solution markers in an assignment page")
    if not r["favicon"]:
        out.append("no favicon")
    out += [f"raw bibliography key in a table of contents: {t!r}" for t in r["tocCitations"]]
    return out


@pytest.fixture(scope="module")
def layout_browser():
    exe = chromium()
    if exe is None or not HTML.exists():
        fail_or_skip("needs Chromium and the built book (python3 run.py book)")
    playwright = pytest.importorskip("playwright.sync_api")
    with serve(HTML) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield browser, base
        browser.close()


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("page_path", pages() or ["book/intro.html"])
def test_page_layout(layout_browser, page_path, width):
    browser, base = layout_browser
    r = measure(browser, base, page_path, width, ARTIFACTS / "layout")
    found = problems(page_path, width, r)
    assert not found, f"{page_path} at {width} px:\n  " + "\n  ".join(found)


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
    root = HTML.parent.parent
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
        total = 0
        for path in pages():
            for width in (1280, 390):
                found = problems(path, width, measure(b, base, path, width))
                total += len(found)
                for f in found:
                    print(f"{path} @{width}: {f}")
        b.close()
    print(json.dumps({"problems": total}))
