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
* Drop the ``anywidget`` models from the page's embedded widget state. The
  explorers' outputs carry an anywidget (for Jupyter) and a ``text/html`` twin
  that the page shows instead (``nb_mime_priority_overrides``); the widget
  manager would otherwise try to fetch the ``anywidget`` front-end from a CDN.
"""

from __future__ import annotations

import json
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


def _offer_notebook(app, pagename, templatename, context, doctree):
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


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
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_notebook, priority=90)
    app.connect("html-page-context", _dedupe_and_check, priority=100)
    # after myst-nb has added the page's widget state (default priority 500)
    app.connect("html-page-context", _drop_browser_only_models, priority=900)
    # before the widget manager (myst-nb adds it at the default priority 500)
    app.add_js_file("widgets-mathjax3.js", priority=300)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
