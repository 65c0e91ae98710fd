"""The lecture decks (``python3 run.py slides``, ``book/_ext/slides.py``) in Chromium.

The decks are built here, into a temporary folder, from the sources and the built book
(``_build/html``, or ``CROWDLEARN_HTML``). Each deck is opened at 1280x720 from a server on
127.0.0.1 and every slide is visited with reveal.js' own navigation and measured: the slide
fills the window exactly, nothing lies outside it, its body scrolls neither way, every
equation is typeset by MathJax (no raw TeX, no MathJax error), every image has loaded, every
explorer has drawn, and no content was shrunk below ``slides.MIN_FIT`` to fit. No request
leaves 127.0.0.1 and no script fails; the explorers answer their controls. A few slides of
each deck are saved under ``test-artifacts/slides/`` (never failing the test).
"""

from __future__ import annotations

import pytest

from support import ARTIFACTS, HTML, ROOT, chromium_or_skip, ext_module, serve, watched_page

pytestmark = pytest.mark.browser


slides = ext_module("slides")
DECKS = [slides.deck_name(week) for week in slides.course_weeks(ROOT)]

# every slide, visited through reveal.js; what each holds and how it sits in the window
MEASURE = r"""
() => {
  const results = [];
  const inside = (e, r) => e.left >= r.left - 1 && e.top >= r.top - 1 &&
                           e.right <= r.right + 1 && e.bottom <= r.bottom + 1;
  for (const {h, v} of Reveal.getSlides().map(s => Reveal.getIndices(s))) {
    Reveal.slide(h, v);
    const slide = Reveal.getCurrentSlide();
    const box = slide.querySelector('.slide'), body = slide.querySelector('.slide-body');
    const r = box.getBoundingClientRect();
    const outside = [];
    for (const el of slide.querySelectorAll('*')) {
      // MathJax clips its stretchy glyphs' extenders itself: its containers are measured
      const math = el.closest('mjx-container');
      if (math && !['MJX-CONTAINER', 'MJX-MATH'].includes(el.tagName)) continue;
      if (['SCRIPT', 'STYLE'].includes(el.tagName)) continue;
      const e = el.getBoundingClientRect();
      if ((e.width || e.height) && !inside(e, r)) outside.push(el.tagName + '.' + el.className);
    }
    const wideMath = [...slide.querySelectorAll('mjx-container[display="true"]')]
      .filter(m => m.scrollWidth > m.clientWidth + 1).length;
    const text = [...slide.querySelectorAll('.slide *')]
      .filter(e => !e.closest('script, style, mjx-container'))
      .map(e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join(''))
      .join(' ');
    results.push({
      h, v, kind: slide.className.split(' ')[0], title: slide.querySelector('h2').textContent,
      fit: Number(box.dataset.fit || 1), rect: [r.left, r.top, r.width, r.height],
      window: [innerWidth, innerHeight],
      body: [body.scrollWidth, body.clientWidth, body.scrollHeight, body.clientHeight],
      box: [box.scrollWidth, box.clientWidth, box.scrollHeight, box.clientHeight],
      outside: outside.slice(0, 5), wideMath, rawTex: /\\\(|\\\[|\$\$/.test(text),
      mathErrors: slide.querySelectorAll('mjx-merror').length,
      equations: [...slide.querySelectorAll('.equation')].map(e => e.dataset.label),
      typeset: slide.querySelectorAll('.equation mjx-container').length,
      images: [...slide.querySelectorAll('img')].map(i => i.complete && i.naturalWidth > 0),
      explorers: slide.querySelectorAll('.cl-explorer').length,
      drawn: [...slide.querySelectorAll('.cl-explorer')].filter(e => e.querySelector('svg')).length,
    });
  }
  return results;
}
"""

# moves the first slider of every explorer: what the explorer shows must change
MOVE_SLIDERS = r"""
() => [...document.querySelectorAll('.cl-explorer')].map(el => {
  const input = el.querySelector('input[type=range]');
  const before = el.textContent;
  input.value = input.value === input.max ? input.min : input.max;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
  return {id: el.id, changed: el.textContent !== before};
})
"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    chromium = chromium_or_skip(HTML / "book" / "01_introduction.html",
                                why=" and the built book (python3 run.py book)")
    out = tmp_path_factory.mktemp("slides")
    report = slides.build(ROOT, HTML, out)
    return chromium, out, report


@pytest.fixture(scope="module")
def browser(decks):
    from playwright.sync_api import sync_playwright

    from support import CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=decks[0], args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _problems(slide: dict) -> list[str]:
    """What is wrong with one measured slide."""
    found = []
    if slide["rect"] != [0, 0, slides.SLIDE_WIDTH, slides.SLIDE_HEIGHT] or \
            slide["window"] != [slides.SLIDE_WIDTH, slides.SLIDE_HEIGHT]:
        found.append(f"slide at {slide['rect']} in a window of {slide['window']}")
    sw, cw, sh, ch = slide["body"]
    if sw > cw + 1 or sh > ch + 1:
        found.append(f"body scrolls: {slide['body']}")
    bw, bcw, bh, bch = slide["box"]
    if bw > bcw + 1 or bh > bch + 1:
        found.append(f"slide scrolls: {slide['box']}")
    if slide["outside"]:
        found.append(f"outside the slide: {slide['outside']}")
    if slide["wideMath"]:
        found.append(f"{slide['wideMath']} equation(s) wider than their box")
    if slide["rawTex"] or slide["mathErrors"] or slide["typeset"] != len(slide["equations"]):
        found.append("math not typeset")
    if not all(slide["images"]):
        found.append("an image did not load")
    if slide["drawn"] != slide["explorers"]:
        found.append("an explorer did not draw")
    if slide["fit"] < slides.MIN_FIT - 1e-3:
        found.append(f"shrunk to {slide['fit']}")
    return found


@pytest.mark.parametrize("name", DECKS)
def test_every_slide_fits_1280x720_offline(decks, browser, name):
    _, out, report = decks
    deck = next(d for d in report["decks"] if d["file"] == name)
    assert not deck["unplaced"], f"figures or explorers on no slide: {deck['unplaced']}"
    foreign, errors = [], []
    page = watched_page(browser, slides.SLIDE_WIDTH, foreign, errors, height=slides.SLIDE_HEIGHT)
    page.set_default_timeout(600_000)  # a guard only: the waits end on events
    with serve(out) as url:
        page.goto(f"{url}/{name}", wait_until="load")
        page.wait_for_function("() => window.deckReport")
        started = page.evaluate("() => window.deckReport")
        measured = page.evaluate(MEASURE)
        _screenshots(page, name, measured)
        moved = page.evaluate(MOVE_SLIDERS)
    page.close()
    assert not foreign, f"requests to other hosts: {foreign[:5]}"
    assert not errors and not started["errors"], errors + started["errors"]
    assert started["slides"] == len(measured) and not started["overflowing"]
    bad = {f"{s['h']}/{s['v']} {s['kind']} '{s['title']}'": _problems(s) for s in measured}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, bad
    shown = [label for s in measured for label in s["equations"]]
    assert shown == deck["labels"], "an equation of the deck is on no slide"
    assert sum(len(s["images"]) for s in measured) == deck["figures"]
    assert sum(s["explorers"] for s in measured) == deck["explorers"]
    assert all(m["changed"] for m in moved), f"explorers that ignore their sliders: {moved}"
    assert sum(s["kind"] == "slide-selfcheck" for s in measured) == deck["selfchecks"]


def test_every_self_check_is_on_one_slide_with_its_answer_as_a_fragment(decks):
    """Each chapter's self-checks reach the deck of the week that reads its last unit, one
    slide each, the choices shown and the right letter held back as a reveal.js fragment."""
    _, out, report = decks
    in_sources = sum(p.read_text(encoding="utf-8").count(":class: selfcheck")
                     for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")))
    assert sum(d["selfchecks"] for d in report["decks"]) == in_sources > 0
    for deck in report["decks"]:
        text = (out / deck["file"]).read_text(encoding="utf-8")
        assert text.count('class="slide-selfcheck"') == deck["selfchecks"]
        assert text.count('class="fragment answer"') == deck["selfchecks"]


def _screenshots(page, name: str, measured: list[dict]) -> None:
    """The first slide and the first of each kind, under test-artifacts/slides/."""
    folder = ARTIFACTS / "slides"
    folder.mkdir(parents=True, exist_ok=True)
    seen = set()
    for s in measured:
        if s["kind"] in seen:
            continue
        seen.add(s["kind"])
        try:
            page.evaluate(f"Reveal.slide({s['h']}, {s['v'] or 0})")
            page.screenshot(path=str(folder / f"{name[:-5]}-{s['kind']}.png"), timeout=30_000)
        except Exception as error:  # noqa: BLE001 - an artifact only
            print(f"screenshot of {name}, {s['kind']} skipped: {error}")
