"""What the explorers share: each is one ``anywidget`` that is also its text/html twin.

An explorer's front-end is one ES module, ``static/bundle_<name>.js``: its view
(``static/*_view.js``) bundled by esbuild with what it imports (``tools/build_widgets.mjs``).
:class:`_LiveExplorer` is an :class:`anywidget.AnyWidget` whose ``_esm`` is that bundle and
whose ``_css`` is ``static/explorers.css``:

* in Jupyter the widget is displayed: the view draws itself from :attr:`view_settings`
  (and redraws whenever the kernel changes them), recomputes in the browser on every
  control change and reports what it computed in :attr:`result`;
* in the rendered book the output's ``text/html`` twin (:meth:`~_LiveExplorer.live_html`)
  is shown instead (``nb_mime_priority_overrides`` in ``_config.yml``): the same bundle
  inlined with the stylesheet, mounted on a ``<div>``; it needs no kernel, no widget manager
  and no network.

:class:`_Explorer` adds the kernel side of the explorers that the chapters assert with
(:class:`~crowdlearn.widgets.DawidSkeneExplorer`,
:class:`~crowdlearn.widgets.annotators.LogisticAnnotatorsExplorer`): their settings, a
kernel-side update on every :meth:`~_Explorer.set` (the package simulates and fits, and the
result becomes ``last_result``), and the browser's results read back. Displayed in Jupyter,
the browser recomputes on every control move and sets ``result``; the explorer adopts it
(:meth:`~_Explorer._on_live_result`): ``last_result`` becomes the browser's result (its
``computed_in`` is ``"browser"``), ``n_updates`` counts the browser's redraws (ipywidgets may
deliver a burst of them as one message, the latest), and the kernel's settings follow the
browser's without recomputing, so ``settings`` and the next kernel-side change start from
what the reader sees.
"""

from __future__ import annotations

import contextlib
import html
import itertools
import json
import numbers
from pathlib import Path

import anywidget
import traitlets

from crowdlearn._validation import check_scalar

#: The explorers' front-end files (``crowdlearn/widgets/static``).
STATIC = Path(__file__).parent / "static"

_IDS = itertools.count()

#: The name under which every bundle keeps its module (see ``static/_widget.js``).
_MODULE_NAME = "crowdlearnExplorer"


def _with_html(bundle, html_twin: str) -> dict:
    """An anywidget's mimebundle with ``html_twin`` as its text/html twin.

    Jupyter shows the anywidget (the model runs in the front-end, the sliders answer at
    once); the rendered book prefers the text/html twin (nb_mime_priority_overrides in
    _config.yml), the same module inline, which needs no widget manager.
    """
    bundle = dict((bundle[0] if isinstance(bundle, tuple) else bundle) or {})
    bundle["text/html"] = html_twin
    return bundle


def _html_twin(module: str, css: str, settings: dict) -> str:
    """A ``<style>`` holding ``css``, a ``<div>`` and one inline ES module: ``module`` (an
    explorer's bundle) mounted on the ``<div>`` with ``settings``."""
    element = f"crowdlearn-explorer-{next(_IDS)}"
    script = (f"{module}\n{_MODULE_NAME}.mount(document.getElementById("
              f"{json.dumps(element)}), {json.dumps(settings)});")
    return (f"<style>{css}</style>"
            f'<div id="{element}" class="cl-explorer">'
            f"<p>The explorer runs in your browser and needs JavaScript.</p></div>"
            f'<script type="module">{script}</script>')


def _page_html(bundle: str, settings: dict) -> str:
    """The text/html twin of the explorer whose bundle is ``static/bundle_<bundle>.js``,
    mounted with ``settings`` (no widget made)."""
    module = (STATIC / f"bundle_{bundle}.js").read_text(encoding="utf-8")
    return _html_twin(module, (STATIC / "explorers.css").read_text(encoding="utf-8"), settings)


#: The largest settings an explorer accepts: it simulates and fits in the reader's browser
#: on every slider move, and builds one slider per expert.
MAX_ITEMS = 20_000
MAX_EXPERTS = 50
MAX_CLASSES = 10
MAX_ITER = 10_000


def check_sizes(n_items, max_iter, tol) -> None:
    """``ValueError`` unless ``n_items`` and ``max_iter`` are integers in range and ``tol``
    is a finite number in [0, 1): checked in Python before any page is built."""
    check_scalar(n_items, "n_items", kind=numbers.Integral, low=1, high=MAX_ITEMS)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=1, high=MAX_ITER)
    check_scalar(tol, "tol", low=0.0, high=1.0, high_inclusive=False)


def _clip(value, name: str, low, high, kind=numbers.Real):
    """``value`` (a finite number) clipped to ``[low, high]``, as a slider would."""
    check_scalar(value, name, kind=kind)
    value = min(max(value, low), high)
    return int(value) if kind is numbers.Integral else float(value)


class _LiveExplorer(anywidget.AnyWidget):
    """An explorer's front-end: an ``anywidget`` and, through :meth:`live_html`, its
    text/html twin. A subclass names its bundle in ``_esm``."""

    _css = STATIC / "explorers.css"
    #: The settings the view starts from, in the page's names (``nExperts``, ``errorRates``,
    #: ...); setting them redraws every displayed view.
    view_settings = traitlets.Dict().tag(sync=True)
    #: What the view computed at its last redraw, sent by the front-end: the settings, the
    #: crowd and the fits, the number of redraws (``updates``), ...
    result = traitlets.Dict().tag(sync=True)

    def live_widget(self):
        """The explorer's anywidget: the explorer itself (kept for the chapters that ask)."""
        return self

    def live_html(self) -> str:
        """The explorer as a self-contained HTML block that recomputes in the browser.

        A ``<style>`` (``static/explorers.css``), a ``<div>`` and one inline ES module: the
        explorer's bundle, mounted on the ``<div>`` with the current :attr:`view_settings`.
        Nothing is loaded from the network.
        """
        return _html_twin(self._esm, self._css, self.view_settings)

    def _repr_mimebundle_(self, **kwargs):
        return _with_html(super()._repr_mimebundle_(**kwargs), self.live_html())


class _Explorer(_LiveExplorer):
    """Base of the explorers with a kernel side; see the module docstring.

    A subclass's ``__init__`` checks its arguments, calls ``super().__init__()``, sets its
    settings, calls :meth:`_start` and then :meth:`update`. It says what one update computes
    (:meth:`_compute`), how its settings read in the page (:meth:`_view_settings`), how a
    result is summarised (:meth:`_summary`) and how the browser's results are read
    (:meth:`_result_from_live`, :meth:`_follow_live_settings`).
    """

    #: The view's count of redraws in its last report (see :meth:`_on_live_result`).
    _live_redraws = 0
    #: Kernel-side updates so far, sent with the view's settings (``revision``): the view
    #: redraws on every one, even when the settings equal those it was last sent while the
    #: reader has moved its sliders since (the view's own moves do not change them).
    _revision = 0

    def _start(self, max_iter, tol):
        """The state every explorer starts from, before its first update."""
        check_sizes(1, max_iter, tol)
        self.max_iter = max_iter
        self.tol = tol
        self.n_updates = 0
        self.last_result = None
        self.last_error: str | None = None
        self._problem = ""
        self._hold_depth = 0
        self.observe(self._on_live_result, names="result")

    # -- state ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hold(self):
        """Make several changes (calls of ``set``) with a single recomputation at the end."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1
        if self._hold_depth == 0:
            self.update()

    @contextlib.contextmanager
    def _quiet(self):
        """Change settings without any recomputation (not even at the end, unlike :meth:`hold`)."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1

    @property
    def summary(self) -> str:
        """The last result in words (HTML), with its warnings; or why the last update failed."""
        if self._problem:
            return f"<span class='cl-warning'>{self._problem}</span>"
        return self._summary(self.last_result) if self.last_result is not None else ""

    # -- updates ----------------------------------------------------------------------------
    def _on_live_result(self, change):
        """The ``result`` changed (a view in the browser redrew): make it the explorer's
        :attr:`last_result`, count the view's redraws since its last report in
        :attr:`n_updates` and move the kernel's settings to the browser's without
        recomputing. A result that cannot be read leaves :attr:`last_result` as it was and
        says why in :attr:`last_error`."""
        payload = change.get("new") or {}
        if not payload.get("settings"):
            return
        try:
            result = self._result_from_live(payload)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            self.last_error = f"the browser's result could not be read: {exc!r}"
            self._problem = "Not updated: " + html.escape(self.last_error)
            return
        with self._quiet():
            self._follow_live_settings(payload["settings"])
        # ipywidgets may send a burst of redraws as one message (the latest state): count
        # them all, from the view's own counter (a new view starts again from 1)
        redraws = int(payload.get("updates") or 0)
        seen, self._live_redraws = self._live_redraws, redraws
        self.n_updates += redraws - seen if redraws > seen else max(redraws, 1)
        result.update = self.n_updates
        self.last_result = result
        self.last_error = None
        self._problem = ""

    def _result_from_live(self, payload: dict):
        """The :attr:`last_result` of what the browser reported (``payload``, the view's
        ``result``)."""
        raise NotImplementedError

    def _follow_live_settings(self, settings: dict):
        """Set the kernel's settings to the browser's ``settings`` (inside :meth:`_quiet`)."""
        raise NotImplementedError

    def _view_settings(self) -> dict:
        """The current settings in the page's names (what :attr:`view_settings` gets)."""
        raise NotImplementedError

    def _compute(self):
        """What one update computes: simulate and fit. A ``ValueError`` stops the update."""
        raise NotImplementedError

    @staticmethod
    def _summary(result) -> str:
        """``result`` in words (HTML)."""
        raise NotImplementedError

    def update(self):
        """Re-simulate and refit in the kernel with the current settings, and redraw the
        displayed views from them."""
        if self._hold_depth:
            return
        self._revision += 1
        self.view_settings = {**self._view_settings(), "revision": self._revision}
        try:
            result = self._compute()
        except ValueError as exc:  # e.g. no label at all was drawn
            self.last_error = str(exc)
            self._problem = "Cannot fit: " + html.escape(str(exc))
            return
        self.last_error = None
        self._problem = ""
        self.n_updates += 1
        result.update = self.n_updates
        self.last_result = result
