"""The rendered book's accessibility: axe-core (bundled offline in ``tests/vendor/axe-core``,
from the npm registry) finds no serious or critical violation on any page of the built book,
in light and in dark mode, at 1280 and 390 px. Every view's violations (moderate and minor
ones too) are written to ``test-artifacts/axe/``.

The per-page test is in ``test_book_pages.py``, which loads each page once for every check
(offline rendering, layout, axe-core) in one browser tab; the waits (every one for an event,
bounded by a guard only) are those of ``tests/book/test_book_layout.py``. Run alone for a
report: ``python tests/book/test_book_a11y.py``. Needs the built book and Chromium.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # support.py, run as a script
from support import ARTIFACTS, CHROMIUM_ARGS, HTML, chromium, fail_or_skip, serve  # noqa: E402
from test_book_layout import GUARD_MS, WITHIN, Tab, pages  # noqa: E402

AXE = Path(__file__).resolve().parents[1] / "vendor" / "axe-core" / "axe.min.js"
AXE_REPORTS = ARTIFACTS / "axe"

# axe-core's checks for one view of a page. Each run of axe costs a walk over the whole page
# (some 20,000 elements on a chapter: MathJax's and the code cells' markup) and colour contrast
# is its slowest rule, while only colours change with the colour mode: so three runs per page,
# the full rule set at 1280 px in light mode, colour contrast over the whole page in dark mode,
# and at 390 px every rule, colour contrast limited to the page's frame (header, sidebars,
# footer: what the width rearranges).
AXE_VIEWS = {
    (1280, "light"): {"rules": None, "frame_contrast": False},
    (1280, "dark"): {"rules": ["color-contrast", "link-in-text-block"], "frame_contrast": False},
    (390, "light"): {"rules": None, "frame_contrast": True},
}
FRAME = ["#pst-header", ".bd-header-article", "#pst-primary-sidebar", "#pst-secondary-sidebar",
         ".bd-footer-article", ".prev-next-area", ".bd-footer"]

AXE_RUN = r"""async ({ rules, frameContrast, frame, ms }) => {
  %s
  axe.reset();
  if (frameContrast) {
    axe.configure({ rules: [{ id: 'color-contrast',
                              selector: frame.map((f) => f + ', ' + f + ' *').join(', ') }] });
  }
  const options = { resultTypes: ['violations'] };
  if (rules) options.runOnly = { type: 'rule', values: rules };
  const r = await within(axe.run(document, options), 'axe-core', ms);
  axe.reset();
  return r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(' '), html: n.html.slice(0, 300),
                                 summary: (n.failureSummary || '').slice(0, 400) })) }));
}""" % WITHIN


def axe_violations(tab: Tab, page_path: str, width: int, mode: str) -> list[dict]:
    page = tab.show(page_path, width, mode)
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE.read_text("utf-8"))
    view = AXE_VIEWS[(width, mode)]
    return page.evaluate(AXE_RUN, {"rules": view["rules"], "frame": FRAME, "ms": GUARD_MS,
                                   "frameContrast": view["frame_contrast"]})


def check_accessible(tab: Tab, page_path: str, width: int, mode: str) -> None:
    """axe-core finds no serious or critical violation in this view of the page (moderate and
    minor ones are in the report, test-artifacts/axe/<page>-<width>-<mode>.json). Run by
    ``test_book_pages.py`` for every page and view."""
    if not AXE.exists():
        fail_or_skip(f"axe-core is missing: {AXE}")
    violations = axe_violations(tab, page_path, width, mode)
    AXE_REPORTS.mkdir(parents=True, exist_ok=True)
    report = AXE_REPORTS / f"{page_path.replace('/', '__')}-{width}-{mode}.json"
    report.write_text(json.dumps(violations, indent=1, sort_keys=True), "utf-8")
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not bad, f"{page_path} at {width} px, {mode} mode:\n  " + "\n  ".join(
        f"{v['impact']} {v['id']} ({v['help']}) x{len(v['nodes'])}: "
        + "; ".join(n["target"] for n in v["nodes"][:4]) for v in bad)


if __name__ == "__main__":  # a report for every page
    from playwright.sync_api import sync_playwright

    with serve(HTML) as base, sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        report = Tab(b.new_page(), base)
        total = 0
        for path in pages():
            for width, mode in AXE_VIEWS:
                found = [f"axe {v['impact']} {v['id']} x{len(v['nodes'])}"
                         for v in axe_violations(report, path, width, mode)
                         if v["impact"] in ("serious", "critical")]
                total += len(found)
                for f in found:
                    print(f"{path} @{width} {mode}: {f}")
        b.close()
    print(json.dumps({"problems": total}))
