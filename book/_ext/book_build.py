"""Settings that hold while the book is built, and pages without dead weight.

* **The full studies run at build time.** Chapters with a long study (chapter 10's
  32-replication study) run a quick version by default, so that a reader's *Run All* in
  Jupyter stays short, and the full one when ``CROWDLEARN_FULL_STUDY=1``. This extension sets
  that variable when Sphinx loads it, before any notebook is executed, so the kernels the
  build starts inherit it and the rendered book always shows (and checks) the full study,
  whichever command built it. The kernels also get one BLAS thread each (the chapters'
  matrix products are small; see ``crowdlearn._blas``).
* **Only the widget state a page uses.** A notebook saves the state of every widget alive in
  its kernel, including explorers a hidden cell built to check them; the rendered page needs
  only the models its widget views reach. Unreachable models are dropped, and so is the
  state script when no view is left.
"""

from __future__ import annotations

import json
import os
import re

FULL_STUDY_VARIABLE = "CROWDLEARN_FULL_STUDY"

_VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>',
                   re.S)
_MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]+)")


def used_models(models: dict, body: str) -> dict:
    """The models reachable from the widget views in ``body`` (through ``IPY_MODEL_`` links)."""
    roots = []
    for view in _VIEW.findall(body):
        try:
            roots.append(json.loads(view)["model_id"])
        except (ValueError, KeyError, TypeError):
            continue
    kept, stack = {}, roots
    while stack:
        key = stack.pop()
        if key in kept or key not in models:
            continue
        kept[key] = models[key]
        stack.extend(_MODEL_REF.findall(json.dumps(models[key])))
    return kept


def _prune_widget_state(app, pagename, templatename, context, doctree):
    files = context.get("script_files") or []
    body = context.get("body") or ""
    for index, f in enumerate(list(files)):
        attributes = getattr(f, "attributes", None) or {}
        if attributes.get("type") != "application/vnd.jupyter.widget-state+json":
            continue
        state = json.loads(attributes["body"])
        models = state.get("state", {})
        kept = used_models(models, body)
        if len(kept) == len(models):
            continue
        if not kept:
            files.remove(f)
            continue
        state["state"] = kept
        new_body = json.dumps(state).replace("</", "<\\/")
        files[files.index(f)] = type(f)(f.filename, priority=f.priority,
                                        **{**attributes, "body": new_body})


def setup(app):
    os.environ[FULL_STUDY_VARIABLE] = "1"
    # the kernels' BLAS on one thread: the chapters' products are small, and threads that
    # wait for each other on two shared cores cost up to ten times the time (crowdlearn._blas)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    # after myst-nb added the state (500) and offline_book dropped browser-only models (900)
    app.connect("html-page-context", _prune_widget_state, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
