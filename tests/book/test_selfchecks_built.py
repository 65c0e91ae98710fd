"""The self-checks as the reader meets them (issue 41), in the built book: the rendered page
(headless Chromium, no kernel, no network) and the notebooks the build executed. Their
source format is checked by ``test_selfchecks.py``, the PDF's answers section by
``test_pdf.py``.

On each chapter page that has self-checks: every choice starts closed and no answer is
visible; Tab reaches every choice in order and Enter opens it, which shows "Right." or "Not
this one."; exactly the source's right choice says "Right."; axe-core finds no serious or
critical violation in the opened boxes, in light and in dark mode. In
``_build/jupyter_execute``: each self-check's markdown cell is kept whole, and each checking
cell (``# self-check C.k:``) ran without error or stderr.

Needs the built book (``python3 run.py book``) and Chromium; skipped without them (failed
under CI).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support import CHROMIUM_ARGS, HTML, chromium, fail_or_skip, serve
from test_book_a11y import AXE
from test_book_layout import GUARD_MS, NO_MOTION, SET_MODE, SETTLE
from test_selfchecks import CHAPTERS, checking_cells, parse_questions, selfcheck_section

EXECUTED = HTML.parent / "jupyter_execute"
WITH_CHECKS = [p for p in CHAPTERS if selfcheck_section(p.read_text(encoding="utf-8"))]
MAX_TABS = 30  # Tab presses from one choice to the next (links in an opened explanation...)


def _questions(path: Path):
    return parse_questions(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tab():
    exe = chromium()
    if exe is None:
        fail_or_skip("no Chromium found: install Debian's package (apt-get install chromium)")
    if not HTML.exists():
        fail_or_skip(f"{HTML} does not exist: build the book first (python3 run.py book)")
    from playwright.sync_api import sync_playwright

    with serve(HTML) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(GUARD_MS)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page, base, errors
        browser.close()


def _load(tab, path: Path):
    page, base, errors = tab
    errors.clear()
    built = HTML / "book" / f"{path.stem}.html"
    if not built.exists():
        fail_or_skip(f"{built} is missing: build the book first (python3 run.py book)")
    page.goto(f"{base}/book/{path.stem}.html", wait_until="load")
    if page.evaluate("() => !!document.querySelector('.math')"):
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.add_style_tag(content=NO_MOTION)
    page.evaluate(SETTLE, GUARD_MS)
    return page


STATE = r"""() => [...document.querySelectorAll('.admonition.selfcheck')].map((box, i) => {
  const choices = [...box.querySelectorAll('details')];
  choices.forEach((d, j) => d.querySelector('summary').dataset.sc = i + '-' + j);
  return {id: box.id, title: box.querySelector('.admonition-title').textContent.trim(),
          choices: choices.length, open: choices.filter((d) => d.open).length,
          summaries: choices.map((d) => d.querySelector('summary').innerText.trim()),
          shown: box.innerText,
          bodiesShown: choices.filter((d) => {
            const c = d.querySelector('.sd-summary-content');
            return c && (c.checkVisibility ? c.checkVisibility()
                                           : c.getBoundingClientRect().height > 0); }).length};
})"""


@pytest.mark.browser
@pytest.mark.parametrize("path", WITH_CHECKS, ids=[p.stem for p in WITH_CHECKS])
def test_choices_start_closed_and_hide_the_answers(tab, path):
    page = _load(tab, path)
    questions = _questions(path)
    boxes = page.evaluate(STATE)
    assert [b["title"] for b in boxes] == [f"Self-check {q.chapter}.{q.number}"
                                           for q in questions]
    for box, q in zip(boxes, questions):
        assert box["choices"] == len(q.choices), box
        assert box["open"] == 0 and box["bodiesShown"] == 0, f"{box['title']}: open at load"
        assert "Right." not in box["shown"] and "Not this one." not in box["shown"], box
        assert [s[:3] for s in box["summaries"]] == [f"({c.letter})" for c in q.choices]
    assert "Not this one." not in page.inner_text("body")
    assert not tab[2], tab[2]


@pytest.mark.browser
@pytest.mark.parametrize("path", WITH_CHECKS, ids=[p.stem for p in WITH_CHECKS])
def test_keyboard_opens_every_choice(tab, path):
    """Tab reaches each choice in reading order, Enter opens it, and it says whether it is
    right: exactly the choice the source marks right says "Right."."""
    page = _load(tab, path)
    questions = _questions(path)
    page.evaluate(STATE)  # marks each summary with data-sc="i-j"
    page.evaluate("""() => { const t = document.querySelector('.admonition.selfcheck')
                                         .querySelector('.admonition-title');
                             t.tabIndex = -1; t.focus(); }""")
    for i, q in enumerate(questions):
        said = {}
        for j, choice in enumerate(q.choices):
            for _ in range(MAX_TABS):
                page.keyboard.press("Tab")
                at = page.evaluate("() => document.activeElement.dataset.sc || ''")
                if at:
                    break
            assert at == f"{i}-{j}", f"Tab reached {at!r}, not choice {i}-{j} of {q.name}"
            page.keyboard.press("Enter")
            page.wait_for_function(
                "(k) => document.querySelector(`summary[data-sc='${k}']`).parentElement.open",
                arg=at)
            text = page.evaluate("""(k) => document.querySelector(`summary[data-sc='${k}']`)
                                         .parentElement.querySelector('.sd-summary-content')
                                         .innerText.trim()""", at)
            assert text.startswith(("Right.", "Not this one.")), text[:80]
            said[choice.letter] = text.startswith("Right.")
        assert [k for k, v in said.items() if v] == [c.letter for c in q.choices if c.right]
    assert not tab[2], tab[2]


AXE_BOXES = """async () => {
  const r = await axe.run({include: [['.admonition.selfcheck']]}, {resultTypes: ['violations']});
  return r.violations.map((v) => ({id: v.id, impact: v.impact,
                                   nodes: v.nodes.map((n) => n.target.join(' '))}));
}"""


@pytest.mark.browser
@pytest.mark.parametrize("path", WITH_CHECKS, ids=[p.stem for p in WITH_CHECKS])
def test_opened_self_checks_are_accessible(tab, path):
    """axe-core on the chapter's self-check boxes with every choice opened, in light and in
    dark mode (the page-wide runs of test_book_a11y.py see the choices closed)."""
    if not AXE.exists():
        fail_or_skip(f"axe-core is missing: {AXE}")
    page = _load(tab, path)
    page.evaluate("() => document.querySelectorAll('.admonition.selfcheck details')"
                  ".forEach((d) => { d.open = true; })")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE.read_text("utf-8"))
    bad = {}
    for mode in ("light", "dark"):
        page.evaluate(SET_MODE, [mode, GUARD_MS])
        found = [v for v in page.evaluate(AXE_BOXES) if v["impact"] in ("serious", "critical")]
        if found:
            bad[mode] = found
    assert not bad, bad


# -- the executed notebooks ----------------------------------------------------------------

@pytest.mark.parametrize("path", WITH_CHECKS, ids=[p.stem for p in WITH_CHECKS])
def test_executed_notebook_keeps_the_self_checks(path):
    import nbformat

    executed = EXECUTED / "book" / f"{path.stem}.ipynb"
    if not executed.exists():
        fail_or_skip(f"{executed} is missing: build the book first (python3 run.py book)")
    nb = nbformat.read(executed, as_version=4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    for q in _questions(path):
        head = f"::::{{admonition}} Self-check {q.chapter}.{q.number}"
        cell = next((m for m in markdown if head in m), None)
        assert cell is not None, f"{executed.name}: no markdown cell holds {head}"
        start = cell.index(head)
        whole = cell[start:cell.index("\n::::", start)]
        for c in q.choices:
            assert f":::{{dropdown}} ({c.letter}) {c.text}" in whole, (q.name, c.letter)
    text = path.read_text(encoding="utf-8")
    wanted = {(c, k) for _, c, k, _ in checking_cells(text)}
    ran = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.source.lstrip().startswith("# self-check "):
            continue
        c, k = cell.source.split(":", 1)[0].removeprefix("# self-check ").split(".")
        ran[(int(c), int(k))] = cell
    assert set(ran) == wanted, f"{executed.name}: stale? rebuild the book ({sorted(ran)})"
    for (c, k), cell in ran.items():
        assert "hide-cell" in cell.metadata.get("tags", []), (c, k)
        assert cell.get("execution_count") is not None, f"self-check {c}.{k} did not run"
        bad = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"
               or o.get("name") == "stderr"]
        assert not bad, f"self-check {c}.{k}: {bad[:1]}"
