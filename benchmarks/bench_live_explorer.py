"""Slider-to-redrawn-view latency of the live (in-browser) explorers, in Chromium.

    .venv/bin/python benchmarks/bench_live_explorer.py [--repeats 60]

Loads the explorer HTML that the book embeds in headless Chromium (Debian's
``/usr/bin/chromium``) and moves sliders: for each move it measures, in the page, the time
from the input event to the end of the next animation frame (recompute and redraw, then
paint). Two explorers:

* chapter 4's Dawid--Skene explorer (``crowdlearn.widgets.live_explorer_html``: 500 items,
  3 classes, 9 experts), target < 30 ms median;
* chapter 8's logistic-annotators explorer (``crowdlearn.widgets.annotators.
  live_annotators_html``: 600 items, up to 6 annotators, majority vote, Dawid--Skene and the
  logistic-annotator EM with Newton M-steps refitted on every move), target < 100 ms median.

For each it prints the median and 90th percentile per slider, next to the target, and, side
by side in the same run, the kernel explorer's update time (simulate and fit with the
package; the kernel draws nothing) and the ratio between them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from crowdlearn.widgets import DawidSkeneExplorer
from crowdlearn.widgets.annotators import LogisticAnnotatorsExplorer

MEASURE = """async ([selector, values]) => {
  const el = document.querySelector('.cl-explorer');
  const input = el.querySelector(selector);
  const out = [];
  for (const v of values) {
    const t0 = performance.now();
    input.value = String(v);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    out.push(performance.now() - t0);
  }
  return out;
}"""


def _measure(browser, html: str, cases: dict, target: float, title: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "explorer.html"
        page_path.write_text("<!doctype html><html><body style='max-width:760px;margin:auto'>"
                             + html + "</body></html>", encoding="utf-8")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(page_path.as_uri())
        page.wait_for_selector(".cl-panel")
        first = next(iter(cases.values()))
        page.evaluate(MEASURE, list(first))  # warm up the JIT
        print(title)
        print(f"{'slider':<18}{'median':>10}{'p90':>10}   target")
        medians = []
        for name, (selector, values) in cases.items():
            times = sorted(page.evaluate(MEASURE, [selector, values]))
            med = statistics.median(times)
            medians.append(med)
            verdict = "PASS" if med < target else "FAIL"
            print(f"{name:<18}{med:>8.1f} ms{times[int(0.9 * len(times))]:>8.1f} ms"
                  f"   < {target:g} ms  {verdict}")
        page.close()
    return statistics.median(medians)


def _kernel_median(explorer, seeds=range(1, 11)) -> float:
    times = []
    for seed in seeds:
        t0 = time.perf_counter()
        explorer.set(seed=seed)
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    n = args.repeats
    ds = DawidSkeneExplorer(n_experts=9, max_experts=9,
                            error_rates=[0.1, 0.2, 0.5, 0.6, 0.6, 0.3, 0.45, 0.6, 0.25])
    la = LogisticAnnotatorsExplorer(n_annotators=6)
    ds_cases = {
        "seed": ('input[data-key="seed"]', [i % 100 for i in range(1, n + 1)]),
        "expert 1 error": ('input[data-key="errorRates"][data-index="0"]',
                           [0.05 * (i % 18) for i in range(1, n + 1)]),
        "experts": ('input[data-key="nExperts"]', [1 + i % 9 for i in range(n)]),
        "missing": ('input[data-key="missing"]', [0.05 * (i % 19) for i in range(n)]),
    }
    la_cases = {
        "seed": ('input[data-key="seed"]', [i % 100 for i in range(1, n + 1)]),
        "annotator 1 slope": ('input[data-key="slopes"][data-index="0"]',
                              [-5 + 0.25 * (i % 41) for i in range(1, n + 1)]),
        "annotators": ('input[data-key="nAnnotators"]', [2 + i % 5 for i in range(n)]),
        "gamma": ('input[data-key="gamma"]', [round(-3 + 0.1 * (i % 61), 1) for i in range(n)]),
        "missing": ('input[data-key="missing"]', [0.05 * (i % 19) for i in range(n)]),
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        ds_page = _measure(browser, ds.live_html(), ds_cases, 30.0,
                           f"chapter 4 explorer in Chromium: 500 items, 3 classes, up to 9 "
                           f"experts, {n} moves per slider")
        ds_kernel = _kernel_median(ds)
        print(f"kernel explorer update (simulate, fit), same settings: median "
              f"{ds_kernel:.1f} ms; ratio kernel / page: {ds_kernel / ds_page:.1f}x\n")
        la_page = _measure(browser, la.live_html(), la_cases, 100.0,
                           f"chapter 8 explorer in Chromium: 600 items, up to 6 annotators, "
                           f"{n} moves per slider")
        la_kernel = _kernel_median(la)
        print(f"kernel explorer update (simulate, fit), same settings: median "
              f"{la_kernel:.1f} ms; ratio kernel / page: {la_kernel / la_page:.1f}x")
        browser.close()
    ds.close()
    la.close()


if __name__ == "__main__":
    main()
