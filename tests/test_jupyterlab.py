"""A student's JupyterLab: a chapter opened from the file browser is a notebook, and it runs.

Starts JupyterLab from the repository's environment (``run.py`` installs
``binder/overrides.json`` as its settings override, as ``binder/postBuild`` does on
Binder) on 127.0.0.1, opens ``book/04_many_experts.md`` by double-clicking it in the file
browser in headless Chromium, and asserts that it opens as a notebook (not as a text
file), then runs one of its code cells in the kernel and reads the result. Needs Chromium
(skipped without it, except under CI).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import CHROMIUM_ARGS, ROOT, chromium_or_skip

OVERRIDES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_repository_configures_jupytext_as_default_viewer():
    wanted = json.loads((ROOT / "binder" / "overrides.json").read_text())
    viewers = wanted["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert "overrides.json" in post_build and os.access(ROOT / "binder" / "postBuild", os.X_OK)
    if not OVERRIDES.exists():
        pytest.skip("run through run.py, which installs the override into its environment")
    assert json.loads(OVERRIDES.read_text()) == wanted


@contextmanager
def _jupyterlab(tmp_path, root):
    """JupyterLab on 127.0.0.1 serving ``root``, with throwaway user config; yields the
    URL of its file browser (token included)."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent)) or "jupyter"
    server = subprocess.Popen(
        [jupyter, "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"jupyter lab exited: {server.stderr.read()[-2000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, 9)
                server.wait(timeout=15)


@pytest.mark.browser
def test_chapter_opens_as_a_notebook_and_runs_in_jupyterlab(tmp_path):
    exe = chromium_or_skip(OVERRIDES, why=" and the environment run.py sets up")
    playwright = pytest.importorskip("playwright.sync_api")
    # a copy of the chapters: JupyterLab saves what it opens (jupytext rewrites the header)
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "book", work / "book", ignore=shutil.ignore_patterns("_build"))
    with _jupyterlab(tmp_path, work) as (base, token):
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/lab/tree/book?token={token}", wait_until="domcontentloaded")
            item = page.locator(".jp-DirListing-item", has_text="04_many_experts.md")
            item.first.dblclick(timeout=60_000)
            panel = page.locator(".jp-NotebookPanel").first
            panel.wait_for(timeout=60_000)
            # a notebook panel (not a text editor) holding the chapter's cells
            panel.locator(".jp-MarkdownCell").first.wait_for(timeout=60_000)
            first_code = panel.locator(".jp-CodeCell").first
            first_code.wait_for(timeout=60_000)
            assert page.locator(".jp-FileEditor").count() == 0
            # once the kernel is idle, run the first code cell (the imports)
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(
                timeout=120_000)
            (ROOT / "test-artifacts").mkdir(exist_ok=True)
            page.screenshot(path=str(ROOT / "test-artifacts" / "jupyterlab-chapter.png"))
            first_code.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            page.wait_for_function(
                """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                         .some((p) => /\\[\\d+\\]/.test(p.textContent))""", timeout=120_000)
            errors = panel.locator(".jp-OutputArea-output[data-mime-type="
                                   "'application/vnd.jupyter.stderr']").count()
            assert errors == 0
            browser.close()


CHECK_NOTEBOOK = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

```{code-cell} ipython3
from crowdlearn.widgets import DawidSkeneExplorer
ex = DawidSkeneExplorer(n_experts=4, error_rates=[0.1, 0.3, 0.5, 0.6], seed=0)
ex
```

```{code-cell} ipython3
import numpy as np, warnings
import crowdlearn as cl
r = ex.live_widget().result
s = r["settings"]
crowd = cl.from_triples(r["item"], r["expert"], r["label"], n_items=s["nItems"],
                        n_experts=s["nExperts"], n_classes=s["nClasses"])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ds = cl.DawidSkene(n_classes=s["nClasses"], alpha=s["alpha"], max_iter=s["maxIter"],
                       tol=s["tol"]).fit(crowd)
diff = np.abs(np.reshape(r["posterior"], ds.posterior_.shape) - ds.posterior_).max()
same = diff < 1e-9 and r["nIter"] == ds.n_iter_
print(f"RESULT experts={s['nExperts']} updates={r['updates']} agree={same}")
```

```{code-cell} ipython3
from crowdlearn.widgets.annotators import LogisticAnnotatorsExplorer
la = LogisticAnnotatorsExplorer(n_annotators=4, seed=0)
la
```

```{code-cell} ipython3
from crowdlearn.widgets.annotators import fit_explorer_crowd
r = la.live_widget().result
s = r["settings"]
T = s["nAnnotators"]
crowd = cl.from_triples(r["item"], r["expert"], r["label"], n_items=s["nItems"],
                        n_experts=T, n_classes=2)
want = fit_explorer_crowd(dict(s, slopes=s["slopes"][:T], n_items=s["nItems"]),
                          np.reshape(r["X"], (-1, 2)), crowd, r["truth"],
                          max_iter=s["maxIter"], tol=s["tol"])
diff = np.abs(np.reshape(r["posterior"], (-1, 2)) - want.la_posterior).max()
same = diff < 1e-9 and r["nIter"] == want.la_n_iter and r["laAccuracy"] == want.la_accuracy
print(f"RESULT annotators={T} updates={r['updates']} agree={same}")
```
'''


@pytest.mark.browser
def test_explorer_widget_is_live_in_jupyterlab_and_reports_to_the_kernel(tmp_path):
    """The anywidget explorer in JupyterLab: moving a slider recomputes in the front-end,
    and the crowd and posteriors it reports to the kernel agree with DawidSkene."""
    exe = chromium_or_skip(OVERRIDES, why=" and the environment run.py sets up")
    playwright = pytest.importorskip("playwright.sync_api")
    work = tmp_path / "repo"
    (work / "check").mkdir(parents=True)
    (work / "check" / "explorer_check.md").write_text(CHECK_NOTEBOOK)
    with _jupyterlab(tmp_path, work) as (base, token):
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/check?token={token}", wait_until="domcontentloaded")
            page.locator(".jp-DirListing-item", has_text="explorer_check.md").first.dblclick(
                timeout=60_000)
            panel = page.locator(".jp-NotebookPanel").first
            panel.locator(".jp-CodeCell").first.wait_for(timeout=60_000)
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(
                timeout=120_000)
            panel.locator(".jp-CodeCell").first.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")  # the explorer
            explorer = panel.locator(".cl-explorer").first
            explorer.locator(".cl-panel").first.wait_for(timeout=120_000)
            assert explorer.locator(".cl-expert").count() == 4
            explorer.locator('input[data-key="nExperts"]').evaluate(
                "(i) => { i.value = 3; i.dispatchEvent(new Event('input', {bubbles: true})); }")
            assert explorer.locator(".cl-expert").count() == 3  # redrawn in the front-end
            page.wait_for_timeout(1500)  # let the result reach the kernel
            page.keyboard.press("Shift+Enter")  # the check cell (now selected)
            out = panel.locator(".jp-OutputArea-output", has_text="RESULT").first
            out.wait_for(timeout=120_000)
            text = out.inner_text()
            # chapter 8's explorer: the same round trip
            page.keyboard.press("Shift+Enter")  # the annotators explorer (now selected)
            la = panel.locator(".cl-annotators-explorer").first
            la.locator(".cl-curve").first.wait_for(timeout=120_000)
            assert la.locator(".cl-curve").count() == 4
            la.locator('input[data-key="nAnnotators"]').evaluate(
                "(i) => { i.value = 5; i.dispatchEvent(new Event('input', {bubbles: true})); }")
            assert la.locator(".cl-curve").count() == 5
            page.wait_for_timeout(1500)
            page.keyboard.press("Shift+Enter")  # its check cell
            out = panel.locator(".jp-OutputArea-output", has_text="annotators=").first
            out.wait_for(timeout=120_000)
            la_text = out.inner_text()
            browser.close()
    assert "experts=3" in text and "agree=True" in text, text
    assert "annotators=5" in la_text and "agree=True" in la_text, la_text
