"""Sphinx hooks that keep the rendered book self-contained and its console clean.

* sphinx-thebe registers its inline configuration script once per read of the
  environment; Sphinx 7.4 keeps both copies, and the second one throws
  ``THEBE_JS_URL has already been declared`` in the browser. Drop duplicates.
* Load ``widgets-mathjax3.js``, which gives the widget manager the one MathJax 2
  call it makes (``MathJax.Hub.Queue``) on top of the bundled MathJax 3.
* Offer every chapter as a notebook: copy the notebook MyST-NB executed for the
  page into ``_sources/`` and tell sphinx-book-theme about it (``ipynb_source``),
  so its download menu gets an ``.ipynb`` entry next to the ``.md`` source.
* Refuse any script or stylesheet that would be fetched from another host, so
  a CDN dependency fails the build instead of silently breaking offline reading.
* Assignment pages show the student's view (solutions replaced by nbgrader's stub,
  their outputs and the hidden tests removed), in the page and in the downloadable
  ``.md`` and ``.ipynb``; the book still executes the instructor's version.
* Drop the ``anywidget`` models from the page's embedded widget state. The
  explorers' outputs carry an anywidget (for Jupyter) and a ``text/html`` twin
  that the page shows instead (``nb_mime_priority_overrides``); the widget
  manager would otherwise try to fetch the ``anywidget`` front-end from a CDN.
* Pages that pass axe-core (``tests/book/test_book_layout.py``): once the pages are written, a few
  theme and extension defaults are fixed in their markup (:func:`accessible_markup`); the
  scripts and styles in ``book/_static`` do the rest (scroll boxes, contrast, sticky title,
  search snippets without raw TeX).
* Figures legible on a phone: the scale below which a figure is not shown on a narrow screen
  (tick labels of 9 CSS px) is computed from ``book/matplotlibrc`` and given to
  ``scroll-boxes.js`` (:func:`figure_min_scale`).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError


def _dedupe_and_check(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        files = context.get(key)
        if not files:
            continue
        seen, kept = set(), []
        for f in files:
            filename = getattr(f, "filename", f)
            body = getattr(f, "attributes", {}).get("body") if hasattr(f, "attributes") else None
            ident = (filename or None, body)  # inline scripts come as None or ""
            if ident in seen:
                continue
            seen.add(ident)
            if isinstance(filename, str) and filename.startswith(("http://", "https://", "//")):
                if "unpkg.com/thebe" in filename:
                    continue  # only loaded when a reader presses a live-code button
                raise ExtensionError(f"page {pagename} would load {filename} from another "
                                     f"host; bundle it under book/_static instead")
            kept.append(f)
        files[:] = kept


def _is_assignment(pagename: str) -> bool:
    return pagename.startswith("book/assignments/a")


def _offer_notebook(app, pagename, templatename, context, doctree):
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(executed, target)  # an assignment's is rewritten at build-finished
    context["ipynb_source"] = f"{pagename}.ipynb"


def _student_view(app, doctree):
    """Assignment pages show the student's view: the book executes the instructor's
    version (so a broken check fails the build), but a solution cell's code is shown as
    nbgrader releases it (``# YOUR CODE HERE``), without its output, and hidden tests
    are not shown at all."""
    from docutils import nodes
    from crowdlearn_grader.assignments import BEGIN_HIDDEN, BEGIN_SOLUTION, student_source

    if not _is_assignment(app.env.docname):
        return
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code":
            continue
        meta = (cell.get("cell_metadata") or {}).get("nbgrader") or {}
        for part in list(cell.children):
            element = part.get("nb_element")
            if element == "cell_code_source":
                for block in list(part.findall(nodes.literal_block)):
                    text = block.astext()
                    if BEGIN_SOLUTION in text or BEGIN_HIDDEN in text:
                        new = student_source(text).rstrip("\n")
                        block.parent.replace(block, nodes.literal_block(
                            new, new, language=block.get("language", "ipython3"),
                            classes=block.get("classes", [])))
            elif element == "cell_code_output" and meta.get("solution"):
                cell.remove(part)


_ANSWER_PLACEHOLDER = "YOUR ANSWER HERE"


def _is_written_answer(meta: dict) -> bool:
    """A markdown cell nbgrader grades by hand: its text is the model answer."""
    nbg = (meta or {}).get("nbgrader") or {}
    return bool(nbg.get("solution")) and bool(nbg.get("grade"))


def blank_written_answers(md: str) -> str:
    """MyST-notebook text with every hand-graded markdown answer cell (``+++ {"nbgrader":
    {... "solution": true ...}}``) replaced by nbgrader's placeholder, as ``nbgrader
    generate_assignment`` releases it. The cell runs to the next ``+++`` or code cell."""
    out, blanking = [], False
    for line in md.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("+++") or stripped.startswith("```{code-cell}"):
            blanking = False
            if stripped.startswith("+++ "):
                try:
                    meta = json.loads(stripped[4:])
                except ValueError:
                    meta = {}
                if isinstance(meta, dict) and _is_written_answer(meta):
                    out.append(line)
                    out.append("\n" + _ANSWER_PLACEHOLDER + "\n\n")
                    blanking = True
                    continue
        if not blanking:
            out.append(line)
    return "".join(out)


def _blank_answers_on_read(app, docname, source):
    """The assignment pages show hand-graded answer cells blank, as released."""
    if _is_assignment(docname):
        source[0] = blank_written_answers(source[0])


def _student_sources(app, exception):
    """The downloadable ``.md`` and ``.ipynb`` of an assignment are the student's version
    too (solutions stubbed, hidden tests removed; the notebook without outputs)."""
    if exception is not None or app.builder.format != "html":
        return
    import nbformat
    from crowdlearn_grader.assignments import student_source

    folder = Path(app.outdir) / "_sources" / "book" / "assignments"
    for path in folder.glob("a*.md"):
        text = student_source(path.read_text("utf-8"))
        path.write_text(blank_written_answers(text), "utf-8")
    for path in folder.glob("a*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = student_source(cell.source)
                cell.outputs, cell.execution_count = [], None
            elif cell.cell_type == "markdown" and _is_written_answer(cell.metadata):
                cell.source = _ANSWER_PLACEHOLDER
        nbformat.write(nb, path)


# -- accessibility fixes in the written pages (axe-core, tests/book/test_book_layout.py) -----------
_MARKUP_FIXES = [
    # myst-nb's folded cells: the summary's name is its visible text ("Show code cell source"),
    # not a different label (label-content-name-mismatch)
    (re.compile(r'<summary aria-label="Toggle hidden content">'), "<summary>"),
    # docutils' citation list: doc-biblioentry is deprecated and not allowed on a div, which
    # leaves the list with children it does not allow (aria-required-children, critical)
    (re.compile(r'role="doc-biblioentry"'), 'role="listitem"'),
    # the colour-mode button is named "Color mode"; its icons are decoration, not text
    (re.compile(r'(<i class="theme-switch [^"]*"[^>]*?)\s+title="[^"]*"'),
     r'\1 aria-hidden="true"'),
    # the search field button shows "Search Ctrl+K": its name is that visible text
    (re.compile(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="Search"'),
     r"\1"),
]


def accessible_markup(html: str) -> str:
    """``html`` with the theme's and extensions' markup that axe-core reports fixed."""
    for pattern, replacement in _MARKUP_FIXES:
        html = pattern.sub(replacement, html)
    return html


def _accessible_pages(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text("utf-8")
        fixed = accessible_markup(text)
        if fixed != text:
            path.write_text(fixed, "utf-8")


# -- figures on a phone -----------------------------------------------------------------------
MIN_TICK_PX = 9.0  # the smallest tick label, in CSS px, a figure is ever shown with


def figure_min_scale(rc_file: Path) -> float:
    """The smallest shown/natural width ratio at which tick labels drawn with ``rc_file``'s
    settings stay ``MIN_TICK_PX`` CSS px high (a PNG pixel is a CSS pixel at natural width)."""
    from matplotlib import font_manager, rc_params_from_file

    rc = rc_params_from_file(str(rc_file), use_default_template=True)
    dpi = float(rc["savefig.dpi"] if rc["savefig.dpi"] != "figure" else rc["figure.dpi"])
    sizes = []
    for key in ("xtick.labelsize", "ytick.labelsize"):
        size = rc[key]
        if isinstance(size, str):
            size = font_manager.font_scalings[size] * float(rc["font.size"])
        sizes.append(float(size))
    tick_px = min(sizes) * dpi / 72.0
    return min(1.0, MIN_TICK_PX / tick_px)


def _figure_scale_script(app, config):
    rc_file = Path(app.srcdir) / "book" / "matplotlibrc"
    if rc_file.is_file():  # rounded up: never below the scale
        scale = math.ceil(figure_min_scale(rc_file) * 1e4) / 1e4
        app.add_js_file(None, body=f"window.clFigureMinScale = {scale:.4f};", priority=200)


_BROWSER_ONLY_MODULES = {"anywidget"}


def _drop_browser_only_models(app, pagename, templatename, context, doctree):
    files = context.get("script_files") or []
    for index, f in enumerate(files):
        attributes = getattr(f, "attributes", None) or {}
        if attributes.get("type") != "application/vnd.jupyter.widget-state+json":
            continue
        state = json.loads(attributes["body"])
        models = state.get("state", {})
        kept = {k: m for k, m in models.items()
                if m.get("model_module") not in _BROWSER_ONLY_MODULES}
        if len(kept) == len(models):
            continue
        state["state"] = kept
        body = json.dumps(state).replace("</", "<\\/")
        files[index] = type(f)(f.filename, priority=f.priority, **{**attributes, "body": body})


def setup(app):
    app.connect("source-read", _blank_answers_on_read)
    app.connect("doctree-read", _student_view)
    app.connect("build-finished", _student_sources)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_notebook, priority=90)
    app.connect("html-page-context", _dedupe_and_check, priority=100)
    # after myst-nb has added the page's widget state (default priority 500)
    app.connect("html-page-context", _drop_browser_only_models, priority=900)
    # before the widget manager (myst-nb adds it at the default priority 500)
    app.add_js_file("widgets-mathjax3.js", priority=300)
    app.add_js_file("figure-zoom.js")
    app.add_js_file("scroll-boxes.js")
    app.add_js_file("search-snippets.js")
    app.add_css_file("crowdlearn.css")
    app.connect("config-inited", _figure_scale_script)
    app.connect("build-finished", _accessible_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
