"""Slider-to-redrawn-view latency of the live (in-browser) Dawid-Skene explorer, in Chromium.

    .venv/bin/python benchmarks/bench_live_explorer.py [--repeats 60]

Loads the explorer HTML that the book embeds (``crowdlearn.widgets.live_explorer_html``,
chapter 4's settings and the defaults: 500 items, 3 classes, up to 9 experts) in headless
Chromium (Debian's ``/usr/bin/chromium``) and moves sliders: for each move it measures, in the
page, the time from the input event to the end of the next animation frame (recompute and
redraw, then paint). Prints the median and 90th percentile per slider kind, next to the
issue's target (< 30 ms median), and, side by side in the same run, the kernel widget's
update time (``DawidSkeneExplorer.update``: simulate, fit, draw the matplotlib PNG) and the
ratio between them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from crowdlearn.widgets import DawidSkeneExplorer, live_explorer_html

TARGET_MS = 30.0
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    explorer = DawidSkeneExplorer(n_experts=9, max_experts=9,
                                  error_rates=[0.1, 0.2, 0.5, 0.6, 0.6, 0.3, 0.45, 0.6, 0.25])
    html = ("<!doctype html><html><body style='max-width:760px;margin:auto'>"
            + explorer.live_html() + "</body></html>")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "explorer.html"
        page_path.write_text(html, encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_selector(".cl-panel")
            n = args.repeats
            cases = {
                "seed": ('input[data-key="seed"]', [i % 100 for i in range(1, n + 1)]),
                "expert 1 error": ('input[data-key="errorRates"][data-index="0"]',
                                   [0.05 * (i % 18) for i in range(1, n + 1)]),
                "experts": ('input[data-key="nExperts"]', [1 + i % 9 for i in range(n)]),
                "missing": ('input[data-key="missing"]', [0.05 * (i % 19) for i in range(n)]),
            }
            page.evaluate(MEASURE, list(cases["seed"]))  # warm up the JIT
            print(f"live explorer in Chromium: 500 items, 3 classes, up to 9 experts, "
                  f"{n} moves per slider")
            print(f"{'slider':<16}{'median':>10}{'p90':>10}   target")
            medians = []
            for name, (selector, values) in cases.items():
                times = sorted(page.evaluate(MEASURE, [selector, values]))
                med = statistics.median(times)
                medians.append(med)
                verdict = "PASS" if med < TARGET_MS else "FAIL"
                print(f"{name:<16}{med:>8.1f} ms{times[int(0.9 * len(times))]:>8.1f} ms"
                      f"   < {TARGET_MS:g} ms  {verdict}")
            browser.close()
    kernel = []
    for seed in range(1, 11):
        t0 = time.perf_counter()
        explorer.set(seed=seed)
        kernel.append(1000 * (time.perf_counter() - t0))
    k = statistics.median(kernel)
    page_med = statistics.median(medians)
    print(f"kernel widget update (simulate, fit, draw PNG), same settings: median {k:.1f} ms")
    print(f"ratio kernel / page: {k / page_med:.1f}x")
    explorer.close()


if __name__ == "__main__":
    main()
