"""A student's JupyterLab: a chapter opened from the file browser is a notebook that reads like
the web page, it runs, and its explorers report what the reader's browser computed.

Starts JupyterLab from the repository's environment (``run.py`` installs
``binder/overrides.json`` as its settings override, as ``binder/postBuild`` does on
Binder; ``requirements.txt`` installs jupyterlab-myst, which renders the markdown cells'
MyST) on 127.0.0.1 and, in headless Chromium:

* opens ``book/04_many_experts.md`` by double-clicking it in the file browser, asserts that
  it opens as a notebook (not as a text file) and runs one of its code cells in the kernel;
* opens ``book/03_em.md`` and reads every rendered markdown cell: no MyST role or directive
  is left as raw text, the labelled equations carry numbers, the theorem, the proof and
  the erratum boxes render, and every exercise's solution starts folded (its prose in a
  closed box, its code cells collapsed);
* runs chapter 4's and chapter 8's explorers (anywidgets), moves their sliders and checks
  that the kernel's ``last_result`` is what the browser computed and shows;
* opens chapter 3, runs it all from the Run menu, opens and closes a solution and saves it:
  the file is byte for byte what it was, equations read (3.11) as on the web page, and the
  solutions' code and output stay folded after Run All and fold with their box.

Without a browser: every chapter and assignment is what JupyterLab's jupytext writes back,
also after a session's changes (kernel metadata, outputs, view state), with the kernelspec
the kernel reports and each chapter's numbering cell (``book/_ext/lab_format.py``).

Needs Chromium (skipped without it, except under CI). The checks of the sources and of
what installs jupyterlab-myst (``requirements.txt``, ``binder/``) need no browser.
"""

from __future__ import annotations

import json
import os
import re
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

from support import ARTIFACTS, CHROMIUM_ARGS, ROOT, chromium_or_skip, fail_or_skip

OVERRIDES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
MYST_EXTENSION = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "jupyterlab-myst"
LAB_EXTENSION = ROOT / "binder" / "crowdlearn-jupyterlab"


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


def _lock_python() -> str:
    found = re.search(r"^# python: (\d+\.\d+)", (ROOT / "requirements.lock").read_text(), re.M)
    assert found, "requirements.lock names no Python version"
    return found.group(1)


def test_binder_pins_the_python_of_the_lock_and_installs_jupyterlab_myst():
    """Binder (repo2docker) builds with the lock's Python and the pinned requirements, which
    include jupyterlab-myst (a pip install enables it); so does run.py's environment."""
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{_lock_python()}"
    binder = (ROOT / "binder" / "requirements.txt").read_text().split()
    assert "../requirements.txt" in binder and "../requirements.lock" in binder
    names = [re.split(r"[=<>!~ ;\[#]", line.strip(), maxsplit=1)[0].lower()
             for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "jupyterlab-myst" in names
    assert re.search(r"^jupyterlab[-_]myst==", (ROOT / "requirements.lock").read_text(), re.M)


def test_jupyterlab_myst_is_installed_and_enabled():
    if not MYST_EXTENSION.exists():
        fail_or_skip(f"jupyterlab-myst is not installed in {sys.prefix} (run.py installs it)")
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent)) or "jupyter"
    listed = subprocess.run([jupyter, "labextension", "list"], capture_output=True, text=True,
                            env={**os.environ, "NO_COLOR": "1"})
    line = [x for x in (listed.stdout + listed.stderr).splitlines()
            if x.strip().startswith("jupyterlab-myst ")]
    assert line and "enabled" in line[0], listed.stdout + listed.stderr


CHAPTERS = sorted((ROOT / "book").glob("[01][0-9]_*.md"))
SOLUTION = re.compile(r"^```\{solution-start\}.*?^```\{solution-end\}", re.M | re.S)
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(---\n.*?\n---\n)?", re.M | re.S)


def _solution_code_cells(text: str) -> list[str]:
    """The YAML options (or '') of every code cell inside a gated solution."""
    return [m.group(1) or "" for block in SOLUTION.finditer(text)
            for m in CODE_CELL.finditer(block.group(0))]


# a display equation: ``$$`` alone on a line, the formula, ``$$`` with an optional ``(label)``
DISPLAY_MATH = re.compile(r"^[ \t]*\$\$[ \t]*\n(.*?)^[ \t]*\$\$[ \t]*(\([^)\n]*\))?[ \t]*$",
                          re.M | re.S)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_markup_is_what_jupyterlab_myst_renders(path):
    """The custom markup JupyterLab cannot know is written in a form both readers render:
    erratum boxes as admonitions of class erratum (not the extension's own ``{erratum}``,
    which jupyterlab-myst shows as an unknown directive with its raw options), and the code
    cells of a gated solution collapsed in JupyterLab (``jupyter: source_hidden``,
    ``outputs_hidden``), as the solution's prose is folded by its ``dropdown`` class."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"^[:`]{3,}\{erratum\}", text, re.M), (
        f"{path.name}: write erratum boxes as {{admonition}} with :class: warning erratum "
        "dropdown")
    for options in _solution_code_cells(text):
        assert "source_hidden: true" in options and "outputs_hidden: true" in options, (
            f"{path.name}: a code cell of a solution is not folded in JupyterLab: {options!r}")
    for block in SOLUTION.finditer(text):
        opening = block.group(0).split("\n", 2)[1]
        assert opening.strip() == ":class: dropdown", f"{path.name}: an open solution"
    # jupyterlab-myst numbers every display equation, Sphinx only the labelled ones: with a
    # label on each, equation k of chapter c is (c.k) in both (JupyterLab's enumerator is the
    # chapter's first cell, book/_ext/lab_format.py)
    unlabelled = [m.group(1).strip()[:60] for m in DISPLAY_MATH.finditer(text)
                  if not (m.group(2) or "").strip()]
    assert not unlabelled, f"{path.name}: display equations without a label: {unlabelled}"


def _screenshot(page, name: str) -> None:
    """A PNG in test-artifacts/ for a reader of the test log; never fails the test."""
    try:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / name), timeout=10_000)
    except Exception as exc:  # an artifact only: a slow or busy machine must not fail the test
        print(f"screenshot {name} skipped: {exc}")


@contextmanager
def _jupyterlab(tmp_path, root, settings: dict | None = None):
    """JupyterLab on 127.0.0.1 serving ``root``, with throwaway user config (``settings``:
    ``{plugin id: {setting: value}}`` written into it) and the repository's prebuilt extension
    (binder/crowdlearn-jupyterlab, which run.py installs); yields its base URL and token."""
    port, token = _free_port(), secrets.token_hex(16)
    shutil.copytree(LAB_EXTENSION, tmp_path / "data" / "labextensions" / LAB_EXTENSION.name)
    for plugin, values in (settings or {}).items():
        package, name = plugin.split(":")
        path = tmp_path / "user-settings" / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
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
            _screenshot(page, "jupyterlab-chapter.png")
            first_code.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            page.wait_for_function(
                """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                         .some((p) => /\\[\\d+\\]/.test(p.textContent))""", timeout=120_000)
            errors = panel.locator(".jp-OutputArea-output[data-mime-type="
                                   "'application/vnd.jupyter.stderr']").count()
            assert errors == 0
            browser.close()


# What a reader must never see in a rendered markdown cell: MyST source left as text.
RAW_MYST = re.compile(
    r"\{[a-z][\w:-]*\}`"  # a role: {cite:t}`, {doc}`, {eq}`, {numref}`, {prf:ref}`
    r"|[:`]{3,}\{[\w:-]+\}"  # a directive's fence: :::{erratum}, ```{solution-start}
    r"|\([\w-]+\)=(?:\s|$)"  # a label line: (errata-03-1)=
    r"|(?:^|\s):(?:class|label|source|where|summary|tags|nbgrader):\s"  # directive options
    r"|Unknown (?:directive|role)",  # what jupyterlab-myst shows for MyST it does not know
    re.I | re.M)
NO_NEWS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                          "checkForUpdates": False}}
RENDER_CHAPTER = "03_em.md"  # a theorem and its proof, errata, gated solutions with code
# every markdown cell rendered by jupyterlab-myst (a cell whose input is collapsed has none)
ALL_RENDERED = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return false;
  const cells = [...panel.querySelectorAll('.jp-MarkdownCell')];
  return cells.length > 0 && cells.every((c) =>
    c.querySelector('.jp-InputArea > .myst') || c.querySelector('.jp-InputPlaceholder'));
}"""
# and the whole-notebook pass done: every labelled equation has its number, (3.11) in a
# chapter (its first cell's frontmatter, book/_ext/lab_format.py), (11) elsewhere
NUMBERED = r"""(labels) => labels.every((id) => {
  const box = document.getElementById(id);
  const a = box && box.querySelector('a[title="Link to this Equation"]');
  return a && /^\((\d+\.)?\d+\)$/.test(a.textContent.trim());
})"""
READ_CELLS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const text = (node) => {  // the cell's text without the typeset maths (TeX inside)
    const copy = node.cloneNode(true);
    copy.querySelectorAll('.katex').forEach((k) => k.replaceWith('[math]'));
    return copy.textContent;
  };
  const details = [...panel.querySelectorAll('.myst details')];
  return {
    texts: [...panel.querySelectorAll('.jp-MarkdownCell .jp-InputArea > .myst')].map(text),
    numbers: [...panel.querySelectorAll('.myst a[title="Link to this Equation"]')]
      .map((a) => a.textContent.trim()),
    boxes: details.map((d) => ({
      title: d.querySelector('summary').textContent.trim(), open: d.open,
      bodyShown: [...d.children].filter((c) => c.tagName !== 'SUMMARY')
        .some((c) => c.checkVisibility()),
    })),
    collapsedCode: panel.querySelectorAll('.jp-CodeCell .jp-InputPlaceholder').length,
  };
}"""


def _labelled_equations(text: str) -> list[str]:
    return re.findall(r"^\$\$.*?^\$\$[ \t]*\(([\w-]+)\)[ \t]*$", text, re.M | re.S)


def _open_chapter(browser, base: str, token: str, labels):
    """A page with RENDER_CHAPTER opened in JupyterLab, every markdown cell rendered and its
    equations numbered as ``labels`` say."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/lab/tree/book?token={token}", wait_until="domcontentloaded")
    page.locator(".jp-DirListing-item", has_text=RENDER_CHAPTER).first.dblclick(timeout=120_000)
    page.locator(".jp-NotebookPanel .jp-MarkdownCell").first.wait_for(timeout=120_000)
    page.wait_for_function(ALL_RENDERED, timeout=300_000, polling=500)
    page.wait_for_function(NUMBERED, arg=labels, timeout=300_000, polling=500)
    return page


@pytest.mark.browser
def test_chapter_reads_like_the_web_page_in_jupyterlab(tmp_path):
    """jupyterlab-myst renders the chapter's MyST: no role or directive is left as raw text,
    labelled equations are numbered, the theorem, its proof and the erratum boxes render
    (the boxes folded, as on the web page), and every exercise's solution starts folded: its
    prose in a closed box, its code cells collapsed."""
    exe = chromium_or_skip(OVERRIDES, why=" and the environment run.py sets up")
    playwright = pytest.importorskip("playwright.sync_api")
    if not MYST_EXTENSION.exists():
        fail_or_skip(f"jupyterlab-myst is not installed in {sys.prefix} (run.py installs it)")
    source = (ROOT / "book" / RENDER_CHAPTER).read_text(encoding="utf-8")
    labels = _labelled_equations(source)
    n_errata = len(re.findall(r"^\(errata-[\w-]+\)=$", source, re.M))
    n_solutions = len(re.findall(r"^[:`]{3,}\{solution(?:-start)?\}", source, re.M))
    n_solution_code = len(_solution_code_cells(source))
    assert labels and n_errata and n_solutions and n_solution_code  # the chapter shows them all
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "book", work / "book", ignore=shutil.ignore_patterns("_build"))
    # JupyterLab 4 renders a markdown cell once it scrolls into view; without windowing it
    # renders them all, which the reading below needs (what renders is the same)
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
                **NO_NEWS}
    with _jupyterlab(tmp_path, work, settings) as (base, token):
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = _open_chapter(browser, base, token, labels)
            found = page.evaluate(READ_CELLS)
            errata = page.locator(".myst details", has_text="Erratum 1").first
            errata.scroll_into_view_if_needed(timeout=30_000)
            _screenshot(page, "jupyterlab-myst-chapter.png")
            browser.close()
    raw = [f"cell {i}: ...{text[max(0, m.start() - 60):m.end() + 60]!r}..."
           for i, text in enumerate(found["texts"]) for m in RAW_MYST.finditer(text)]
    assert not raw, "raw MyST in the rendered chapter:\n" + "\n".join(raw[:10])
    text = "\n".join(found["texts"])
    assert "Theorem 1" in text and "EM never decreases the likelihood" in text and "Proof" in text
    # numbered equations: every labelled one (waited for above), numbered as on the web page,
    # (3.1), (3.2), ... in order
    chapter = int(RENDER_CHAPTER[:2])
    assert found["numbers"] == [f"({chapter}.{k})" for k in range(1, len(found["numbers"]) + 1)]
    assert len(found["numbers"]) == len(labels)  # every display is labelled, so k = the web's
    boxes = found["boxes"]
    errata_boxes = [b for b in boxes if re.match(r"Errat(a|um)\b", b["title"])]
    solutions = [b for b in boxes if "Solution to" in b["title"]]
    assert len(errata_boxes) == n_errata and len(solutions) == n_solutions, boxes
    folded = [b for b in errata_boxes + solutions if b["open"] or b["bodyShown"]]
    assert not folded, f"boxes that do not start folded: {folded}"
    assert found["collapsedCode"] >= n_solution_code, (
        f"{found['collapsedCode']} collapsed code cells, {n_solution_code} in solutions")
    # the self-checks (tests/book/test_selfchecks.py): each choice a dropdown, closed
    from test_selfchecks import parse_questions

    questions = parse_questions(source)
    choices = [b for b in boxes if re.match(r"\([a-d]\) ", b["title"])]
    assert questions and len(choices) == sum(len(q.choices) for q in questions), choices
    assert not [b for b in choices if b["open"] or b["bodyShown"]], "a self-check starts open"
    assert all(f"Self-check {q.chapter}.{q.number}" in text for q in questions)


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
# the kernel's explorer reports the browser's fit: the package, refitted on its crowd, agrees
lr = ex.last_result
kept = (lr.computed_in == "browser" and np.array_equal(lr.labels.item, crowd.item)
        and np.abs(lr.estimated_confusion - ds.confusion_).max() < 1e-9)
print(f"RESULT experts={s['nExperts']} updates={r['updates']} agree={same} kept={kept}")
```

```{code-cell} ipython3
_runs_ex = globals().get("_runs_ex", 0) + 1
lr, r = ex.last_result, ex.live_widget().result
print(f"KERNEL run={_runs_ex} source={lr.computed_in} n_updates={ex.n_updates} "
      f"update={lr.update} browser_updates={r['updates']} "
      f"experts={lr.settings['n_experts']} seed={lr.settings['seed']} "
      f"missing={lr.settings['missing']:.2f} mv={lr.mv_accuracy:.3f} em={lr.em_accuracy:.3f} "
      f"same={lr.mv_accuracy == r['mvAccuracy'] and lr.n_iter == r['nIter']} "
      f"sliders={ex.settings['n_experts']},{ex.settings['seed']},{ex.settings['missing']:.2f}")
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
lr = la.last_result
kept = (lr.computed_in == "browser" and np.abs(lr.estimated_eta - want.estimated_eta).max() < 1e-9
        and np.abs(lr.la_posterior - want.la_posterior).max() < 1e-9)
print(f"RESULT annotators={T} updates={r['updates']} agree={same} kept={kept}")
```

```{code-cell} ipython3
_runs_la = globals().get("_runs_la", 0) + 1
lr, r = la.last_result, la.live_widget().result
print(f"KERNEL run={_runs_la} source={lr.computed_in} n_updates={la.n_updates} "
      f"update={lr.update} browser_updates={r['updates']} "
      f"annotators={lr.labels.n_experts} seed={lr.settings['seed']} "
      f"gamma={lr.settings['gamma']:+.1f} mv={lr.mv_accuracy:.3f} ds={lr.ds_accuracy:.3f} "
      f"la={lr.la_accuracy:.3f} same={lr.la_accuracy == r['laAccuracy']} "
      f"sliders={la.settings['seed']},{la.settings['gamma']:+.1f}")
```
'''

# moves of the sliders, (data-key, data-index or None, value), as a reader would make them
DS_MOVES = [("nExperts", None, 3), ("seed", None, 5), ("missing", None, 0.2), ("seed", None, 6),
            ("errorRates", 0, 0.3), ("alpha", None, 1), ("seed", None, 7)]
LA_MOVES = [("nAnnotators", None, 5), ("gamma", None, -1), ("seed", None, 3),
            ("slopes", 1, 2), ("seed", None, 4), ("missing", None, 0.1)]


def _move(view, key, index, value):
    selector = f'input[data-key="{key}"]' + ("" if index is None else f'[data-index="{index}"]')
    view.locator(selector).evaluate(
        "(i, v) => { i.value = v; i.dispatchEvent(new Event('input', {bubbles: true})); }",
        value)


def _report(text: str) -> dict:
    return dict(re.findall(r"(\w+)=(\S+)", text))


@pytest.mark.browser
def test_explorer_widget_is_live_in_jupyterlab_and_reports_to_the_kernel(tmp_path):
    '''The anywidget explorer in JupyterLab: moving a slider recomputes in the front-end, the
    crowd and posteriors it reports to the kernel agree with DawidSkene, and after several
    moves the kernel's explorer reports what the browser computed and shows: its
    ``last_result`` is the browser's (accuracies, settings, one update per redraw) and its
    sliders stand where the reader left them.'''
    exe = chromium_or_skip(OVERRIDES, why=" and the environment run.py sets up")
    playwright = pytest.importorskip("playwright.sync_api")
    work = tmp_path / "repo"
    (work / "check").mkdir(parents=True)
    (work / "check" / "explorer_check.md").write_text(CHECK_NOTEBOOK)
    with _jupyterlab(tmp_path, work, NO_NEWS) as (base, token):
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/check?token={token}", wait_until="domcontentloaded")
            page.locator(".jp-DirListing-item", has_text="explorer_check.md").first.dblclick(
                timeout=60_000)
            panel = page.locator(".jp-NotebookPanel").first
            cells = panel.locator(".jp-CodeCell")
            cells.first.wait_for(timeout=60_000)
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(
                timeout=120_000)

            def run(i: int, expect: str) -> str:
                '''Run code cell ``i`` and return its output once it shows ``expect``.'''
                cell = cells.nth(i)
                cell.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Control+Enter")
                out = cell.locator(".jp-OutputArea-output", has_text=expect).first
                out.wait_for(timeout=120_000)
                return out.inner_text()

            def kernel_report(i: int, view) -> dict:
                '''The kernel's report (cell ``i``) once the kernel has every update the view
                made (ipywidgets may hold back a burst of updates until the kernel is idle:
                run the cell again until it has them all; each run waits for its output).'''
                shown = view.evaluate("(el) => el.crowdlearn.updates")
                for attempt in range(1, 31):
                    report = _report(run(i, f"KERNEL run={attempt} "))
                    if int(report["browser_updates"]) == shown:
                        return report
                pytest.fail(f"the kernel never received the view's update {shown}: {report}")

            run(0, "")  # the explorer (no text output; its view appears)
            explorer = panel.locator(".cl-explorer").first
            explorer.locator(".cl-panel").first.wait_for(timeout=120_000)
            assert explorer.locator(".cl-expert").count() == 4
            for key, index, value in DS_MOVES:
                _move(explorer, key, index, value)
            assert explorer.locator(".cl-expert").count() == 3  # redrawn in the front-end
            bold = explorer.locator(".cl-summary b").all_inner_texts()
            report = kernel_report(2, explorer)
            text = run(1, "RESULT")
            # chapter 8's explorer: the same round trip
            run(3, "")
            la = panel.locator(".cl-annotators-explorer").first
            la.locator(".cl-curve").first.wait_for(timeout=120_000)
            assert la.locator(".cl-curve").count() == 4
            for key, index, value in LA_MOVES:
                _move(la, key, index, value)
            assert la.locator(".cl-curve").count() == 5
            la_bold = la.locator(".cl-summary b").all_inner_texts()
            la_report = kernel_report(5, la)
            la_text = run(4, "RESULT")
            _screenshot(page, "jupyterlab-explorers.png")
            browser.close()
    assert "experts=3" in text and "agree=True" in text and "kept=True" in text, text
    assert "annotators=5" in la_text and "agree=True" in la_text and "kept=True" in la_text
    # the kernel's explorer holds what the browser computed and shows, after every move
    updates = int(report["browser_updates"])
    assert updates == 1 + len(DS_MOVES)  # the first drawing, then one redraw per move
    assert report["source"] == "browser" and report["same"] == "True", report
    assert int(report["n_updates"]) == int(report["update"]) == 1 + updates, report
    assert (report["experts"], report["seed"], report["missing"]) == ("3", "7", "0.20"), report
    assert [report["mv"], report["em"]] == bold[:2], (report, bold)
    assert report["sliders"] == "3,7,0.20", report
    la_updates = int(la_report["browser_updates"])
    assert la_updates == 1 + len(LA_MOVES)
    assert la_report["source"] == "browser" and la_report["same"] == "True", la_report
    assert int(la_report["n_updates"]) == int(la_report["update"]) == 1 + la_updates
    assert (la_report["annotators"], la_report["seed"], la_report["gamma"]) == ("5", "4", "-1.0")
    assert [la_report["mv"], la_report["ds"], la_report["la"]] == la_bold[:3], (la_report,
                                                                                la_bold)
    assert la_report["sliders"] == "4,-1.0", la_report


def test_cells_the_web_page_folds_start_folded_in_jupyterlab():
    """A code cell the web page hides (``hide-input``, ``hide-cell``, ``remove-*`` tags) opens
    collapsed in JupyterLab too (``jupyter.source_hidden``/``outputs_hidden`` metadata), so the
    checks that do not teach stay out of the reader's way there as well."""
    import jupytext

    hides_source = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
    hides_output = {"hide-output", "hide-cell", "remove-output", "remove-cell"}
    chapters = sorted((ROOT / "book").glob("[01]*.md")) + [ROOT / "book" / "prerequisites.md"]
    folded = 0
    for path in chapters:
        for cell in jupytext.read(path).cells:
            if cell.cell_type != "code":
                continue
            tags = set(cell.metadata.get("tags", []))
            shown = cell.metadata.get("jupyter", {})
            if tags & hides_source:
                assert shown.get("source_hidden") is True, (path.name, cell.source[:60])
                folded += 1
            if tags & hides_output:
                assert shown.get("outputs_hidden") is True, (path.name, cell.source[:60])
    assert folded > 100


# -- a reader who only reads: opening, running and saving a chapter leaves it as it is --------
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import lab_format  # noqa: E402

NOTEBOOKS = lab_format.notebooks()


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_notebook_is_what_jupyterlab_writes_back(path):
    """Every chapter and assignment is, byte for byte, what jupytext in JupyterLab writes when
    it saves it (its header's metadata filter leaves out jupytext's version numbers), with a
    chapter's numbering cell: so opening and saving it changes nothing (rewrite with
    book/_ext/lab_format.py)."""
    text = path.read_text(encoding="utf-8")
    assert lab_format.lab_text(path, text) == text, (
        f"{_rel(path)}: JupyterLab would rewrite it; run .venv/bin/python book/_ext/lab_format.py")


def _jupyterlab_session(model) -> None:
    """What a JupyterLab session does to the notebook before it saves it: the kernel it starts
    sets the kernelspec and language_info, Run All gives every code cell an execution count,
    outputs and the timing and scroll state, and unfolds every output (then, with the
    extension, folds the folded ones again, written source_hidden first)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    nb = model["content"]
    nb.metadata["kernelspec"] = {"display_name": spec.display_name,
                                 "language": spec.language, "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2",
                                    "mimetype": "text/x-python", "file_extension": ".py"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for k, cell in enumerate(nb.cells):
        cell.metadata["trusted"] = True
        if cell.cell_type != "code":
            continue
        cell.execution_count = k + 1
        cell.outputs = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
        cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00.000Z"}
        cell.metadata["scrolled"] = False
        shown = dict(cell.metadata.get("jupyter", {}))
        if shown:  # JupyterLab writes the fold state again, source first
            cell.metadata["jupyter"] = {key: shown[key] for key in
                                        sorted(shown, key=["source_hidden",
                                                           "outputs_hidden"].index)}
            cell.metadata["collapsed"] = bool(shown.get("outputs_hidden"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_a_jupyterlab_session_writes_the_notebook_back_unchanged(path):
    """Run All and save, as JupyterLab's contents manager does it: the kernel's metadata,
    execution counts, outputs and view state are not written, and the file is byte for byte
    the same (the browser test below does it for one chapter in JupyterLab itself)."""
    text = path.read_text(encoding="utf-8")
    assert lab_format.lab_saves(path, text, _jupyterlab_session) == text


PROSE_PAGES = sorted(p for p in (ROOT / "book").rglob("*.md")
                     if "_build" not in p.parts and p not in NOTEBOOKS)


@pytest.mark.parametrize("path", PROSE_PAGES, ids=_rel)
def test_a_prose_page_opened_in_jupyterlab_is_written_back_unchanged(path):
    """The pages without code (intro.md, notation.md, ...) open as notebooks too (the markdown
    viewer is jupytext's): jupytext keeps them without a header when JupyterLab saves them,
    kernel and all, as long as no jupytext configuration file overrides its metadata filter."""
    text = path.read_text(encoding="utf-8")
    assert lab_format.lab_saves(path, text, _jupyterlab_session) == text
    configs = [ROOT / "jupytext.toml", *ROOT.glob("book/**/jupytext.toml")]
    assert not [c for c in configs if c.exists()]
    assert "[tool.jupytext]" not in (ROOT / "pyproject.toml").read_text()


def test_the_kernelspec_is_the_kernel_jupyterlab_starts():
    """The headers name the kernel as JupyterLab's kernel reports it: otherwise the kernel it
    starts renames it, and the chapter is modified as soon as it opens."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.display_name == lab_format.KERNELSPEC["display_name"]
    for path in NOTEBOOKS:
        head = path.read_text(encoding="utf-8").split("\n---\n", 1)[0]
        assert f"  display_name: {spec.display_name}\n  language: python\n  name: python3" in head


def test_chapter_equations_are_numbered_as_on_the_web_page_in_jupyterlab():
    """jupyterlab-myst reads frontmatter from the first markdown cell only: each chapter's
    first cell sets its equations' enumerator to "3.%s" (so (3.11), as Sphinx numbers it), and
    is tagged remove-cell, so the book's build drops it."""
    import jupytext
    import yaml

    chapters = [p for p in NOTEBOOKS if lab_format.equation_prefix(p)]
    assert len(chapters) == len(CHAPTERS) >= 14
    for path in chapters:
        first = jupytext.read(path).cells[0]
        assert first.cell_type == "markdown" and first.metadata.get("tags") == ["remove-cell"]
        frontmatter = yaml.safe_load(first.source.strip().strip("-"))
        k = int(path.name[:2])
        assert frontmatter == {"numbering": {"equation": {"enumerator": f"{k}.%s"}}}, path.name


def test_the_extension_is_installed_where_jupyterlab_finds_it():
    """binder/crowdlearn-jupyterlab is a prebuilt extension (a module-federation container
    written by hand, no build step): run.py and Binder's postBuild copy it into the
    environment's labextensions, where JupyterLab lists it."""
    meta = json.loads((LAB_EXTENSION / "package.json").read_text())
    assert meta["name"] == LAB_EXTENSION.name
    entry = LAB_EXTENSION / meta["jupyterlab"]["_build"]["load"]
    assert entry.is_file() and f'"{meta["name"]}"' in entry.read_text().replace("'", '"')
    assert "crowdlearn-jupyterlab" in (ROOT / "binder" / "postBuild").read_text()
    assert "crowdlearn-jupyterlab" in (ROOT / "run.py").read_text()
    node = shutil.which("node")
    if node:  # the script parses
        subprocess.run([node, "--check", str(entry)], check=True)
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / LAB_EXTENSION.name
    if not installed.exists():
        pytest.skip("run through run.py, which installs the extension into its environment")
    assert (installed / meta["jupyterlab"]["_build"]["load"]).read_bytes() == entry.read_bytes()


# the code cells of each solution: {solution-start} box, then its cells up to {solution-end}
SOLUTION_CELLS = """(click) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const state = (c) => ({input: !c.querySelector('.jp-InputPlaceholder'),
    output: !c.querySelector('.jp-OutputPlaceholder'),
    outputs: !c.classList.contains('jp-mod-noOutputs')});
  const found = [];
  cells.forEach((cell, i) => {
    // a cell may hold the end of one solution, an exercise, self-checks, the next solution
    const box = [...cell.querySelectorAll('.myst details')].filter((d) =>
      /Solution to/.test(d.querySelector(':scope > summary').textContent)).pop();
    if (!box) return;
    if (click === found.length) box.querySelector(':scope > summary').click();
    const code = [];
    for (let j = i + 1; j < cells.length && cells[j].classList.contains('jp-CodeCell'); j++)
      code.push(state(cells[j]));
    found.push({open: box.open, code});
  });
  return found;
}"""
RUN_STATE = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
    .map((p) => p.textContent.trim());
  return {waiting: prompts.filter((p) => p.includes('*')).length,
          ran: prompts.filter((p) => /\\[\\d+\\]/.test(p)).length,
          outputs: panel.querySelectorAll('.jp-OutputArea-output').length};
}"""


def _wait_until_all_ran(page, timeout: float = 900) -> None:
    """Until no cell waits ([*]), some have run and nothing changed for 6 s (a cell whose
    input is folded shows no prompt: the kernel's Idle, waited for after this, covers it)."""
    last, stable, start = None, 0, time.monotonic()
    while time.monotonic() - start < timeout:
        page.wait_for_timeout(2000)
        state = page.evaluate(RUN_STATE)
        stable = stable + 1 if state == last else 0
        last = state
        if state["waiting"] == 0 and state["ran"] > 0 and stable >= 3:
            return
    pytest.fail(f"Run All did not finish in {timeout} s: {last}")


@pytest.mark.browser
def test_chapter_run_and_saved_in_jupyterlab_is_unchanged(tmp_path):
    """A student's session: double-click chapter 3, Run All, save, and the file is byte for
    byte what it was (so ``git pull`` never conflicts). Along the way, equations read (3.11)
    as on the web page, and every solution stays folded after Run All (its code and output
    too); opening a solution's box unfolds its code and output, closing it folds them again."""
    exe = chromium_or_skip(OVERRIDES, why=" and the environment run.py sets up")
    playwright = pytest.importorskip("playwright.sync_api")
    if not MYST_EXTENSION.exists():
        fail_or_skip(f"jupyterlab-myst is not installed in {sys.prefix} (run.py installs it)")
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "book", work / "book",
                    ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    before = {p: p.read_bytes() for p in (work / "book").rglob("*") if p.is_file()}
    source = (work / "book" / RENDER_CHAPTER).read_text(encoding="utf-8")
    n_solution_code = len(_solution_code_cells(source))
    n_solutions = len(re.findall(r"^[:`]{3,}\{solution(?:-start)?\}", source, re.M))
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
                **NO_NEWS}
    with _jupyterlab(tmp_path, work, settings) as (base, token):
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = _open_chapter(browser, base, token, _labelled_equations(source))
            loaded = page.evaluate("() => !!(window._JUPYTERLAB || {})['crowdlearn-jupyterlab']")
            numbers = page.evaluate(READ_CELLS)["numbers"]
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(
                timeout=120_000)
            # Run All from the menu, as a student does, and wait until every cell has run
            page.locator(".jp-NotebookPanel .jp-Cell").first.click()
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            _wait_until_all_ran(page)
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(
                timeout=120_000)
            page.wait_for_function(ALL_RENDERED, timeout=300_000, polling=500)
            errors = page.locator(".jp-OutputArea-output[data-mime-type="
                                  "'application/vnd.jupyter.stderr']").all_inner_texts()
            after_run = page.evaluate(SOLUTION_CELLS, None)
            # open the first solution with code, then close it again
            first = next(i for i, s in enumerate(after_run) if s["code"])
            page.evaluate(SOLUTION_CELLS, first)  # a click on its summary
            page.wait_for_timeout(1000)
            opened = page.evaluate(SOLUTION_CELLS, None)[first]
            _screenshot(page, "jupyterlab-solution-open.png")
            page.evaluate(SOLUTION_CELLS, first)
            page.wait_for_timeout(1000)
            closed = page.evaluate(SOLUTION_CELLS, None)[first]
            # save (Ctrl+S) and wait until JupyterLab has written the file
            page.locator(".jp-NotebookPanel .jp-Cell").first.click()
            page.keyboard.press("Control+s")
            page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')",
                                   timeout=60_000, polling=250)
            page.wait_for_timeout(1000)
            browser.close()
    assert loaded, "binder/crowdlearn-jupyterlab did not load"
    assert "(3.11)" in numbers and "(11)" not in numbers, numbers
    assert not errors, [e[-800:] for e in errors]
    solution_code = [c for s in after_run for c in s["code"]]
    # every solution's code cell (each follows the markdown cell of its solution's box)
    assert len(solution_code) == n_solution_code and len(after_run) <= n_solutions, after_run
    assert not [s for s in after_run if s["open"]], "a solution is open after Run All"
    assert all(not c["input"] and not c["output"] for c in solution_code), after_run
    assert any(c["outputs"] for c in solution_code), "the solutions' code did not run"
    assert opened["open"] and all(c["input"] and (c["output"] or not c["outputs"])
                                  for c in opened["code"]), opened
    assert not closed["open"] and all(not c["input"] and not c["output"]
                                      for c in closed["code"]), closed
    changed = [p.relative_to(work).as_posix() for p, data in before.items()
               if p.read_bytes() != data]
    assert not changed, f"JupyterLab changed {changed} (run book/_ext/lab_format.py?)"
