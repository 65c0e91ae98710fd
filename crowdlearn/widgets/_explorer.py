"""The scaffolding the kernel explorers share (:mod:`crowdlearn.widgets` and its
:mod:`~crowdlearn.widgets.annotators`).

An explorer is sliders, a one-line summary and one matplotlib figure shown as a PNG in
an :class:`ipywidgets.Image`. :class:`_Explorer` holds what does not depend on the
model: the widget tree and its closing, :meth:`~_Explorer.hold` and the update cycle
(compute, draw, encode, summarise, or show why the computation failed), and the
anywidget twin that Jupyter displays. A subclass builds its sliders and says what one
update computes (:meth:`~_Explorer._compute`), how it is drawn and summarised, and which
live widget is its twin.

The twin reports back. Displayed in Jupyter, an explorer is its anywidget: the reader's
browser simulates and fits on every slider move and sets the widget's ``result`` trait.
The explorer observes that trait and adopts what the browser computed
(:meth:`~_Explorer._on_live_result`): ``last_result`` becomes the browser's result (its
``computed_in`` is ``"browser"``), ``n_updates`` counts the browser's redraws (ipywidgets
may deliver a burst of them as one message, the latest), and the kernel's own sliders
move to the browser's values without recomputing, so ``settings`` and the next kernel-side
change start from what the reader sees. The kernel's figure and summary (shown only when
``widget`` itself is displayed) are redrawn by kernel-side updates only.
"""

from __future__ import annotations

import contextlib
import io
import time

import ipywidgets as widgets
from matplotlib.figure import Figure


def _slider_options(label_px: int, width_px: int) -> dict:
    """Keyword arguments of a slider: its label and width; it reports on release only."""
    return dict(style={"description_width": f"{label_px}px"},
                layout=widgets.Layout(width=f"{width_px}px"), continuous_update=False)


def _box(title: str, sliders) -> widgets.VBox:
    """A column of sliders under a bold title."""
    return widgets.VBox([widgets.HTML(f"<b>{title}</b>"), *sliders])


def _with_html(bundle, html: str) -> dict:
    """An anywidget's mimebundle with ``html`` as its text/html twin.

    Jupyter shows the anywidget (the model runs in the front-end, the sliders answer at
    once); the rendered book prefers the text/html twin (nb_mime_priority_overrides in
    _config.yml), the same module inline, which needs no widget manager.
    """
    bundle = dict((bundle[0] if isinstance(bundle, tuple) else bundle) or {})
    bundle["text/html"] = html
    return bundle


class _Explorer:
    """Base of the kernel explorers; see the module docstring.

    A subclass's ``__init__`` checks its arguments, calls :meth:`_start` and then
    :meth:`_layout` with its boxes of sliders, observes the sliders and calls
    :meth:`update`.
    """

    #: The anywidget twin, made on the first :meth:`_live_once`.
    _live_widget = None
    #: The view's count of redraws in its last report (see :meth:`_on_live_result`).
    _live_redraws = 0

    def _start(self, max_iter, tol, dpi):
        """The state every explorer starts from, before its first update."""
        self.max_iter = max_iter
        self.tol = tol
        self.dpi = int(dpi)
        self.n_updates = 0
        self.last_result = None
        self.last_error: str | None = None
        self._hold_depth = 0

    def _missing_and_seed(self, missing, high: float, seed, options: dict):
        """The sliders of every explorer: :attr:`missing_slider`, the fraction of missing
        labels from 0 to ``high``, and :attr:`seed_slider`, from 0 to 99."""
        self.missing_slider = widgets.FloatSlider(value=missing, min=0.0, max=high, step=0.05,
                                                  description="missing fraction",
                                                  readout_format=".2f", **options)
        self.seed_slider = widgets.IntSlider(value=seed, min=0, max=99, description="seed",
                                             **options)

    def _layout(self, figsize, left: widgets.Widget, right: widgets.Widget):
        """The figure, its image and the summary; the two boxes of controls side by side
        above them make :attr:`widget`."""
        self.figure = Figure(figsize=tuple(figsize))
        width_px = int(round(figsize[0] * self.dpi))
        self.image = widgets.Image(format="png",
                                   layout=widgets.Layout(width="100%", max_width=f"{width_px}px"))
        self.summary = widgets.HTML()
        self.widget = widgets.VBox([widgets.HBox([left, right]), self.summary, self.image])

    # -- state ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hold(self):
        """Change several sliders with a single recomputation at the end."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1
        if self._hold_depth == 0:
            self.update()

    def _set(self, sliders, values, pairs):
        """Set the first ``len(values)`` of ``sliders`` (``values`` may be None) and each
        slider of ``(slider, value)`` ``pairs`` whose value is not None; recompute once."""
        with self.hold():
            if values is not None:
                for s, v in zip(sliders, values):
                    s.value = float(v)
            for slider, value in pairs:
                if value is not None:
                    slider.value = value

    @contextlib.contextmanager
    def _quiet(self):
        """Move sliders without any recomputation (not even at the end, unlike :meth:`hold`)."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1

    # -- callbacks --------------------------------------------------------------------------
    def _on_change(self, change):
        self.update()

    def _on_live_result(self, change):
        """The anywidget's ``result`` changed (a view in the browser redrew): make it the
        explorer's :attr:`last_result`, count the view's redraws since its last report in
        :attr:`n_updates` and move the kernel's sliders to the browser's settings without
        recomputing. A result that cannot be read leaves :attr:`last_result` as it was and
        says why in :attr:`last_error`."""
        payload = change.get("new") or {}
        if not payload.get("settings"):
            return
        try:
            result = self._result_from_live(payload)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            self.last_error = f"the browser's result could not be read: {exc!r}"
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

    def _result_from_live(self, payload: dict):
        """The :attr:`last_result` of what the browser reported (``payload``, the view's
        ``result``)."""
        raise NotImplementedError

    def _follow_live_settings(self, settings: dict):
        """Set the kernel's sliders to the browser's ``settings`` (inside :meth:`_quiet`)."""
        raise NotImplementedError

    def _before_update(self):
        """Run at the start of every update that is not held (nothing by default)."""

    def _compute(self):
        """What one update draws: simulate and fit. A ``ValueError`` stops the update."""
        raise NotImplementedError

    def _draw(self, computed):
        """Draw ``computed`` into :attr:`figure`."""
        raise NotImplementedError

    def _result(self, computed, draw_seconds: float):
        """The :attr:`last_result` of this update (its number is :attr:`n_updates`)."""
        raise NotImplementedError

    def update(self):
        """Re-simulate, refit and redraw with the current slider values."""
        if self._hold_depth:
            return
        self._before_update()
        try:
            computed = self._compute()
        except ValueError as exc:  # e.g. no label at all was drawn
            self.last_error = str(exc)
            self.summary.value = f"<span style='color:#D55E00'>Cannot fit: {exc}</span>"
            return
        self.last_error = None
        self.n_updates += 1
        start = time.perf_counter()
        self._draw(computed)
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.dpi)
        self.image.value = buf.getvalue()
        self.last_result = self._result(computed, time.perf_counter() - start)
        self.summary.value = self._summary(self.last_result)

    # -- display ----------------------------------------------------------------------------
    def _live_once(self, make):
        """The anywidget twin, made by ``make(**self._live_kwargs())`` once, then reused;
        what its views compute in the browser comes back through :meth:`_on_live_result`."""
        if self._live_widget is None:
            self._live_widget = make(**self._live_kwargs())
            self._live_widget.observe(self._on_live_result, names="result")
        return self._live_widget

    def _repr_mimebundle_(self, **kwargs):
        return _with_html(self.live_widget()._repr_mimebundle_(**kwargs), self.live_html())

    def close(self):
        """Close every widget of the explorer (with their layouts and styles) and clear
        its figure."""
        seen, stack = set(), [self.widget]
        while stack:
            w = stack.pop()
            if id(w) in seen or not isinstance(w, widgets.Widget):
                continue
            seen.add(id(w))
            stack.extend(getattr(w, "children", ()))
            stack.extend(getattr(w, name, None) for name in ("layout", "style"))
            w.close()
        if self._live_widget is not None:
            self._live_widget.close()
            self._live_widget = None
        self.figure.clear()
