"""Interactive explorers and figures for the book's chapters.

* :class:`DawidSkeneExplorer` (built by :func:`dawid_skene_explorer`): sliders
  for each expert's error rate, the number of experts, the fraction of missing
  labels, the pseudo-count ``alpha`` and the seed; every change re-simulates the
  crowd, refits majority vote and Dawid--Skene EM, and redraws one figure.
* :func:`draw_comparison`: that figure, for one
  :class:`~crowdlearn.experiments.CrowdComparison` (usable without widgets).
* :func:`plot_sweep`: accuracy against one setting, for a
  :class:`~crowdlearn.experiments.Sweep` (the missing-labels and smoothing
  chapters).

The computations live in :mod:`crowdlearn.experiments`; this module only wires
them to widgets and draws. Figures are plain :class:`matplotlib.figure.Figure`
objects, not registered with ``pyplot``: the explorer keeps one figure for its
whole life and shows it as a PNG in an :class:`ipywidgets.Image`, so updates
never open new figures, the notebook's inline backend never displays a stray
copy, and the widget also works (and is testable) in plain Python, where
ipywidgets callbacks run synchronously when a slider's ``value`` is set.

Colours are from the Okabe--Ito palette, which stays distinct under the common
forms of colour blindness.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from crowdlearn._validation import check_scalar
from crowdlearn.experiments import CrowdComparison, Sweep, compare_on_simulated_crowd
from crowdlearn.widgets._explorer import _box, _Explorer, _slider_options, _with_html

__all__ = ["DawidSkeneExplorer", "ExplorerResult", "dawid_skene_explorer", "draw_comparison",
           "live_explorer_html", "live_explorer_widget", "plot_sweep", "VoteExplorer",
           "COLORS", "fit_warnings"]

#: Okabe--Ito colours used for each method in every figure of this module.
COLORS = {"mv": "#E69F00", "em": "#0072B2", "oracle": "#7F7F7F", "truth": "#C8C8C8",
          "chance": "#555555"}

#: Error rates of the explorer's experts when none are given: two good, one
#: mediocre and several near-random experts, so EM visibly beats the vote.
DEFAULT_ERROR_RATES = (0.1, 0.2, 0.5, 0.6, 0.6, 0.3, 0.45, 0.6, 0.25, 0.55)


#: Margins and gaps of :func:`draw_comparison`'s panels, in inches (fixed, so
#: redrawing needs no layout engine: constrained layout would double the cost
#: of an update).
_MARGINS = {"left": 0.7, "right": 0.15, "bottom": 0.62, "top": 0.6, "gap": 0.9}
_WIDTH_RATIOS = (0.9, 1.3, 1.0)


#: How close to chance (an error rate of ``1 - 1/K``) every estimated error rate must be
#: for :func:`fit_warnings` to call the fit degenerate.
DEGENERATE_MARGIN = 0.05


def fit_warnings(mv_accuracy: float, em_accuracy: float, estimated_error_rates,
                 n_classes: int) -> list[str]:
    """The warnings the explorer's summary shows under its numbers (the page's view
    in ``explorer_view.js`` shows the same ones).

    * EM's accuracy is below majority vote's;
    * the fit is *degenerate*: EM rates every expert within ``DEGENERATE_MARGIN``
      of chance or worse (estimated error rate at least ``1 - 1/K - 0.05``), so in the
      fitted model the labels say (almost) nothing about the class.

    Examples
    --------
    >>> fit_warnings(0.9, 0.95, [0.1, 0.3], 3)
    []
    >>> [w.split(":")[0] for w in fit_warnings(1.0, 0.4, [0.66], 3)]
    ['EM is below the majority vote', 'Degenerate fit']
    """
    out = []
    if em_accuracy < mv_accuracy:
        out.append("EM is below the majority vote: with few or weak experts its estimated "
                   "confusion matrices can fit noise or a degenerate solution")
    chance = 1.0 - 1.0 / n_classes
    rates = np.asarray(estimated_error_rates, dtype=float)
    if rates.size and np.all(rates >= chance - DEGENERATE_MARGIN):
        out.append("Degenerate fit: EM rates every expert at chance or worse, so its "
                   "labels say almost nothing about the class in the fitted model")
    return out


def _comparison_axes(fig: Figure):
    """The three panels of ``fig``, cleared; created on first use, then reused."""
    axes = getattr(fig, "_crowdlearn_comparison_axes", None)
    if axes is not None and all(ax in fig.axes for ax in axes) and len(fig.axes) == 3:
        for ax in axes:
            ax.clear()
        return axes
    fig.clear()
    fig.set_layout_engine("none")
    w, h = fig.get_size_inches()
    m = _MARGINS
    panel = (w - m["left"] - m["right"] - 2 * m["gap"]) / sum(_WIDTH_RATIOS)
    gs = fig.add_gridspec(1, 3, width_ratios=_WIDTH_RATIOS, left=m["left"] / w,
                          right=1 - m["right"] / w, bottom=m["bottom"] / h,
                          top=1 - m["top"] / h, wspace=m["gap"] / panel)
    axes = tuple(fig.add_subplot(gs[0, i]) for i in range(3))
    fig._crowdlearn_comparison_axes = axes
    return axes


def draw_comparison(result: CrowdComparison, fig: Figure | None = None, *,
                    title: str | None = None) -> Figure:
    """Draw majority vote against EM for one simulated crowd, in three panels.

    (a) accuracy of majority vote, EM and Bayes' rule with the true error
    rates (the ceiling); (b) each expert's true error rate (bars) against EM's
    estimate (diamonds); (c) EM's objective at every iteration.

    Parameters
    ----------
    result : CrowdComparison
        From :func:`~crowdlearn.experiments.compare_on_simulated_crowd`.
    fig : matplotlib Figure, optional
        Drawn into (its panels are reused when it was drawn by this function
        before, otherwise it is cleared). A new 9 x 3.6 inch figure, not
        registered with ``pyplot``, when omitted. The panel margins are fixed
        in inches, so no layout engine runs.
    title : str, optional
        Figure title; by default the settings of the crowd.

    Returns
    -------
    Figure
        ``fig``, or the new figure when it was omitted.

    Examples
    --------
    >>> from crowdlearn.experiments import compare_on_simulated_crowd
    >>> fig = draw_comparison(compare_on_simulated_crowd([0.1, 0.3, 0.6]))
    >>> [ax.get_title(loc="left")[:3] for ax in fig.axes]
    ['(a)', '(b)', '(c)']
    """
    if fig is None:
        fig = Figure(figsize=(9.0, 3.6))
    ax_acc, ax_err, ax_ll = _comparison_axes(fig)
    K = result.true_confusion.shape[1]
    settings = result.settings

    # (a) accuracy
    names = ["majority\nvote", "EM", "Bayes,\ntrue rates"]
    values = [result.mv_accuracy, result.em_accuracy, result.oracle_accuracy]
    colors = [COLORS["mv"], COLORS["em"], COLORS["oracle"]]
    bars = ax_acc.bar(range(3), values, color=colors, width=0.62)
    bars[2].set_hatch("//")
    bars[2].set_edgecolor("white")
    for x, v in enumerate(values):
        ax_acc.text(x, v + 0.015, f"{v:.3f}", ha="center", va="bottom", fontsize=8.5)
    ax_acc.axhline(1.0 / K, color=COLORS["chance"], ls=":", lw=1)
    ax_acc.set_xlim(-0.5, 2.5)
    ax_acc.set_xticks(range(3), names)
    ax_acc.set_ylim(0, 1.1)
    ax_acc.set_yticks(np.linspace(0, 1, 6))
    ax_acc.set_ylabel("accuracy (dotted: chance)")
    ax_acc.set_title("(a) Accuracy: EM vs the vote", loc="left", fontsize=10)

    # (b) error rates: truth vs EM estimate
    J = result.n_experts
    x = np.arange(1, J + 1)
    true_bars = ax_err.bar(x, result.true_error_rates, width=0.7, color=COLORS["truth"])
    (est,) = ax_err.plot(x, result.estimated_error_rates, "D", color=COLORS["em"], ms=6)
    guess = (K - 1) / K
    ax_err.axhline(guess, color=COLORS["chance"], ls=":", lw=1)
    ax_err.text(J + 0.55, guess + 0.015, "random guess", ha="right", va="bottom",
                fontsize=7.5, color=COLORS["chance"],
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.75, "pad": 1})
    ax_err.set_xlim(0.4, J + 0.6)
    ax_err.set_ylim(0, 1.2)  # the band above 1 holds the legend
    ax_err.set_yticks(np.linspace(0, 1, 6))
    ax_err.set_xticks(x)
    ax_err.set_xlabel("expert")
    ax_err.set_ylabel("P(label is wrong)")
    ax_err.legend([true_bars, est], ["true", "EM estimate"], loc="upper center", fontsize=8,
                  frameon=False, ncols=2, borderaxespad=0.1)
    ax_err.set_title("(b) Error rates: truth vs EM", loc="left", fontsize=10)

    # (c) EM objective
    hist = np.asarray(result.log_likelihood_history)
    ax_ll.plot(np.arange(hist.size), hist, "-", color=COLORS["em"], lw=1.5,
               marker="o" if hist.size <= 30 else None, ms=3)
    ax_ll.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    ax_ll.yaxis.set_major_formatter(fmt)
    ax_ll.yaxis.set_major_locator(MaxNLocator(nbins=5))
    ax_ll.set_xlabel("EM iteration")
    alpha = settings.get("alpha", 0.0)
    ax_ll.set_ylabel("log-likelihood" if alpha == 0 else f"log-posterior (α = {alpha:g})")
    state = "converged" if result.converged else "stopped at max_iter"
    ax_ll.set_title("(c) EM objective never falls", loc="left", fontsize=10)
    ax_ll.text(0.97, 0.05, f"{result.n_iter} iterations, {state}", transform=ax_ll.transAxes,
               ha="right", va="bottom", fontsize=8)
    ax_acc.spines["left"].set_bounds(0, 1)
    ax_err.spines["left"].set_bounds(0, 1)
    for ax in (ax_acc, ax_err, ax_ll):
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelsize=8)
        ax.yaxis.label.set_size(9)
        ax.xaxis.label.set_size(9)
    if title is None:
        title = _describe(settings)
    fig.suptitle(title, fontsize=9.5)
    return fig


def _describe(s: dict) -> str:
    """One line naming the settings of a crowd."""
    return (f"{s['n_experts']} experts, {s['n_items']} items, {s['n_classes']} classes, "
            f"{s['missing']:.0%} of labels missing, α = {s['alpha']:g}, seed {s['seed']}")


def plot_sweep(sweep: Sweep, ax=None, *, xlabel: str | None = None, title: str | None = None):
    """Accuracy of majority vote, EM and Bayes' rule against the swept setting.

    Lines are means over the repeats; shaded bands span their minimum to maximum.

    Parameters
    ----------
    sweep : Sweep
        From :func:`~crowdlearn.experiments.accuracy_sweep`.
    ax : matplotlib Axes, optional
        Drawn into; a new 5 x 3.2 inch figure (not registered with ``pyplot``)
        when omitted.
    xlabel, title : str, optional

    Returns
    -------
    Axes

    Examples
    --------
    >>> from crowdlearn.experiments import accuracy_sweep
    >>> ax = plot_sweep(accuracy_sweep("missing", [0.0, 0.5], [0.1, 0.3, 0.6], n_repeats=2))
    >>> [line.get_label() for line in ax.get_lines()]
    ['majority vote', 'Dawid–Skene EM', 'Bayes rule, true rates']
    """
    if ax is None:
        ax = Figure(figsize=(5.0, 3.2), layout="constrained").subplots()
    x = np.asarray(sweep.values, dtype=float)
    for attr, label, color, ls in (("mv_accuracy", "majority vote", COLORS["mv"], "-"),
                                   ("em_accuracy", "Dawid–Skene EM", COLORS["em"], "-"),
                                   ("oracle_accuracy", "Bayes rule, true rates",
                                    COLORS["oracle"], "--")):
        acc = getattr(sweep, attr)
        ax.plot(x, acc.mean(axis=1), ls, marker="o", ms=4, color=color, label=label)
        if acc.shape[1] > 1:
            ax.fill_between(x, acc.min(axis=1), acc.max(axis=1), color=color, alpha=0.2, lw=0)
    ax.set_xlabel(xlabel or sweep.parameter)
    ax.set_ylabel("accuracy against the truth")
    ax.set_title(title or f"Accuracy as {sweep.parameter} changes", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


@dataclass
class ExplorerResult(CrowdComparison):
    """A :class:`~crowdlearn.experiments.CrowdComparison` plus what the explorer adds.

    Attributes
    ----------
    update : int
        Which update produced it (equals the explorer's ``n_updates`` then).
    draw_seconds : float
        Wall time of drawing the figure and encoding it as PNG (0 for a browser result).
    computed_in : {"kernel", "browser"}
        Where the crowd was simulated and fitted: by the package in the kernel, or by the
        explorer's view in the reader's browser (``crowdlearn/widgets/static/crowd_em.js``,
        which draws its crowd with its own random generator). A browser result holds the
        browser's numbers; ``em_seconds`` is then the browser's time to simulate, fit and
        draw.
    """

    update: int = 0
    draw_seconds: float = 0.0
    computed_in: str = "kernel"


class DawidSkeneExplorer(_Explorer):
    """Sliders over a simulated crowd; majority vote and Dawid--Skene EM refitted live.

    The crowd is made of "one-coin" experts: expert ``j`` labels an item
    wrongly with probability ``error_rates[j]``, spreading the wrong labels
    evenly over the other classes. On every slider change the explorer draws a
    new crowd from ``np.random.default_rng(seed)``
    (:func:`~crowdlearn.experiments.compare_on_simulated_crowd`), fits
    :class:`~crowdlearn.MajorityVote` and :class:`~crowdlearn.DawidSkene`, and
    redraws its figure (:func:`draw_comparison`).

    At a high fraction of missing labels some items receive no label at all.
    Majority vote cannot decide such an item, so it is run with
    ``unlabelled="uniform"``: the item gets a uniform vote and a random guess
    (instead of the ``ValueError`` the default ``unlabelled="error"`` raises).
    EM gives such an item its estimated class prior. Both are scored on all
    items, so their accuracies fall towards chance together.

    Parameters
    ----------
    n_experts : int, default 5
        Number of experts at the start (slider from 1 to ``max_experts``).
    max_experts : int, optional
        Number of error-rate sliders; those beyond the current number of experts
        are hidden. Default: the larger of 8, ``n_experts`` and
        ``len(error_rates)``.
    error_rates : sequence of float in [0, 0.9], optional
        Starting error rates of the first experts; the others start from
        ``DEFAULT_ERROR_RATES``.
    missing : float in [0, 0.95], default 0
        Probability that an (item, expert) label is missing.
    alpha : float in [0, 5], default 0
        Pseudo-count of :class:`~crowdlearn.DawidSkene` (0 is maximum likelihood).
    seed : int in [0, 99], default 0
    n_items : int, default 500
    n_classes : int, default 3
    max_iter : int, default 200
    tol : float, default 1e-6
        Passed to :class:`~crowdlearn.DawidSkene`.
    figsize : (float, float), default (9.0, 3.6)
        Inches.
    dpi : int, default 100
        Resolution of the PNG shown.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The controls, a one-line summary and the figure; displaying the explorer
        displays it.
    error_sliders : list of ipywidgets.FloatSlider
        One per possible expert (``max_experts``).
    n_experts_slider : ipywidgets.IntSlider
    missing_slider, alpha_slider : ipywidgets.FloatSlider
    seed_slider : ipywidgets.IntSlider
    figure : matplotlib.figure.Figure
        The one figure, redrawn in place (never registered with ``pyplot``).
    image : ipywidgets.Image
        The figure as PNG.
    summary : ipywidgets.HTML
        Accuracies and the EM run, in words.
    last_result : ExplorerResult
        Everything the last update computed: ``mv_accuracy``, ``em_accuracy``,
        ``oracle_accuracy``, ``estimated_confusion`` (n_experts, K, K),
        ``true_confusion``, ``estimated_error_rates``, ``true_error_rates``,
        ``log_likelihood_history``, ``n_iter``, ``converged``, ``n_unlabelled``,
        ``settings``, ``em_seconds``, ``draw_seconds``, ``computed_in``, ...
        Once the explorer is displayed in Jupyter, the last update is usually the
        browser's: every redraw of the view is reported back to the kernel and becomes
        ``last_result`` (``computed_in == "browser"``, the crowd the browser drew and the
        fit it made), and the sliders of :attr:`widget` move to the browser's values
        without a recomputation in the kernel (see ``crowdlearn.widgets._explorer``).
    n_updates : int
        Number of updates so far: 1 after construction, one more for every kernel-side
        recomputation and for every redraw the browser reports (a burst of slider moves
        may reach the kernel as one message that counts all its redraws).
    last_error : str or None
        Message of the last update that failed on a ``ValueError`` (the figure
        then keeps its previous state), ``None`` after a successful update.

    Examples
    --------
    >>> ex = DawidSkeneExplorer(n_items=200)
    >>> ex.n_updates, ex.last_result.estimated_confusion.shape
    (1, (5, 3, 3))
    >>> ex.n_experts_slider.value = 3            # callbacks run at once
    >>> ex.n_updates, ex.last_result.estimated_confusion.shape
    (2, (3, 3, 3))
    >>> ex.set(missing=0.5, alpha=1.0)           # several sliders, one update
    >>> ex.n_updates, ex.last_result.settings["missing"]
    (3, 0.5)
    >>> ex.close()
    """

    def __init__(self, *, n_experts: int = 5, max_experts: int | None = None,
                 error_rates=None, missing: float = 0.0, alpha: float = 0.0, seed: int = 0,
                 n_items: int = 500, n_classes: int = 3, max_iter: int = 200,
                 tol: float = 1e-6, figsize=(9.0, 3.6), dpi: int = 100):
        check_scalar(n_experts, "n_experts", kind=numbers.Integral, low=1)
        check_scalar(n_items, "n_items", kind=numbers.Integral, low=1)
        check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2)
        check_scalar(missing, "missing", low=0.0, high=0.95)
        check_scalar(alpha, "alpha", low=0.0, high=5.0)
        check_scalar(seed, "seed", kind=numbers.Integral, low=0, high=99)
        check_scalar(dpi, "dpi", kind=numbers.Integral, low=20)
        given = [] if error_rates is None else np.atleast_1d(
            np.asarray(error_rates, dtype=float)).tolist()
        if any(not (0.0 <= e <= 0.9) for e in given):
            raise ValueError(f"error_rates must lie in [0, 0.9], got {error_rates!r}")
        if max_experts is None:
            max_experts = max(8, n_experts, len(given))
        check_scalar(max_experts, "max_experts", kind=numbers.Integral, low=1)
        if n_experts > max_experts or len(given) > max_experts:
            raise ValueError(f"n_experts ({n_experts}) and len(error_rates) ({len(given)}) "
                             f"must not exceed max_experts ({max_experts})")
        defaults = list(DEFAULT_ERROR_RATES) * (max_experts // len(DEFAULT_ERROR_RATES) + 1)
        start = given + defaults[len(given):max_experts]

        self.n_items = int(n_items)
        self.n_classes = int(n_classes)
        self._start(max_iter, tol, dpi)
        self.last_result: ExplorerResult | None = None

        common = _slider_options(120, 330)  # one layout, shared by the four sliders
        self.n_experts_slider = widgets.IntSlider(value=n_experts, min=1, max=max_experts,
                                                  description="experts", **common)
        self._missing_and_seed(missing, 0.95, seed, common)
        self.alpha_slider = widgets.FloatSlider(value=alpha, min=0.0, max=5.0, step=0.1,
                                                description="pseudo-count α",
                                                readout_format=".1f", **common)
        self.error_sliders = [
            widgets.FloatSlider(value=e, min=0.0, max=0.9, step=0.05,
                                description=f"expert {j + 1} error", readout_format=".2f",
                                **_slider_options(100, 300))
            for j, e in enumerate(start)]
        self._layout(figsize, _box("Crowd and model", [self.n_experts_slider, self.missing_slider,
                                                       self.alpha_slider, self.seed_slider]),
                     _box("Error rate of each expert", self.error_sliders))

        self.n_experts_slider.observe(self._on_n_experts, names="value")
        for s in (self.missing_slider, self.alpha_slider, self.seed_slider):
            s.observe(self._on_change, names="value")
        for j, s in enumerate(self.error_sliders):
            s.observe(lambda change, j=j: self._on_error_rate(j), names="value")
        self._show_active_sliders()
        self.update()

    # -- state ----------------------------------------------------------------------------
    @property
    def error_rates(self) -> np.ndarray:
        """Error rates of the active experts, shape ``(n_experts,)``."""
        n = self.n_experts_slider.value
        return np.array([s.value for s in self.error_sliders[:n]])

    @property
    def settings(self) -> dict:
        """The current slider values and fixed settings."""
        return {"error_rates": self.error_rates.tolist(),
                "n_experts": int(self.n_experts_slider.value),
                "missing": float(self.missing_slider.value),
                "alpha": float(self.alpha_slider.value),
                "seed": int(self.seed_slider.value),
                "n_items": self.n_items, "n_classes": self.n_classes}

    def set(self, *, error_rates=None, n_experts=None, missing=None, alpha=None, seed=None):
        """Set several sliders at once and recompute once.

        Parameters
        ----------
        error_rates : sequence of float, optional
            New values of the first ``len(error_rates)`` error sliders.
        n_experts, missing, alpha, seed : optional
            New slider values (ipywidgets clips them to the slider's range).
        """
        if error_rates is not None and len(error_rates) > len(self.error_sliders):
            raise ValueError(f"{len(error_rates)} error rates given but the explorer has "
                             f"{len(self.error_sliders)} expert sliders")
        self._set(self.error_sliders, error_rates,
                  ((self.n_experts_slider, n_experts), (self.missing_slider, missing),
                   (self.alpha_slider, alpha), (self.seed_slider, seed)))

    # -- callbacks -------------------------------------------------------------------------
    def _show_active_sliders(self):
        n = self.n_experts_slider.value
        for j, s in enumerate(self.error_sliders):
            s.layout.display = None if j < n else "none"

    def _on_n_experts(self, change):
        self._show_active_sliders()
        self.update()

    def _on_error_rate(self, j):
        if j < self.n_experts_slider.value:  # a hidden expert changes nothing
            self.update()

    def _before_update(self):
        if self._live_widget is not None:  # keep the front-end in step
            self._live_widget.settings = _live_settings(**self._live_kwargs())

    def _compute(self) -> CrowdComparison:
        settings = self.settings
        return compare_on_simulated_crowd(
            settings["error_rates"], n_items=self.n_items, n_classes=self.n_classes,
            missing=settings["missing"], alpha=settings["alpha"],
            random_state=settings["seed"], max_iter=self.max_iter, tol=self.tol)

    def _draw(self, comparison: CrowdComparison):
        draw_comparison(comparison, self.figure)

    def _result(self, comparison: CrowdComparison, draw_seconds: float) -> ExplorerResult:
        base = {f.name: getattr(comparison, f.name) for f in fields(CrowdComparison)}
        return ExplorerResult(**base, update=self.n_updates, draw_seconds=draw_seconds)

    @staticmethod
    def _summary(r: ExplorerResult) -> str:
        unlabelled = (f"; {r.n_unlabelled} items got no label (both methods guess)"
                      if r.n_unlabelled else "")
        return (f"Majority vote <b>{r.mv_accuracy:.3f}</b>, Dawid–Skene EM "
                f"<b>{r.em_accuracy:.3f}</b>, Bayes rule with the true error rates "
                f"{r.oracle_accuracy:.3f} &nbsp;·&nbsp; {r.n_labels} labels{unlabelled}; "
                f"EM: {r.n_iter} iterations in {1000 * r.em_seconds:.0f} ms"
                + "".join(f"<br><span style='color:#D55E00'>⚠ {w}</span>"
                          for w in fit_warnings(r.mv_accuracy, r.em_accuracy,
                                                r.estimated_error_rates,
                                                r.settings["n_classes"])))

    def _result_from_live(self, payload: dict) -> ExplorerResult:
        """An :class:`ExplorerResult` holding the numbers the browser reported."""
        from crowdlearn.labels import from_triples
        from crowdlearn.simulate import one_coin_confusion

        s = payload["settings"]
        J, K, n = int(s["nExperts"]), int(s["nClasses"]), int(s["nItems"])
        labels = from_triples(payload["item"], payload["expert"], payload["label"],
                              n_items=n, n_experts=J, n_classes=K)
        rates = np.asarray(s["errorRates"][:J], dtype=float)
        true_conf = one_coin_confusion(1.0 - rates, K)
        conf = np.reshape(np.asarray(payload["confusion"], dtype=float), (J, K, K))
        return ExplorerResult(
            labels=labels, truth=np.asarray(payload["truth"], dtype=int),
            mv_accuracy=float(payload["mvAccuracy"]), em_accuracy=float(payload["emAccuracy"]),
            oracle_accuracy=float(payload["oracleAccuracy"]), true_confusion=true_conf,
            estimated_confusion=conf,
            true_error_rates=np.asarray(payload["trueErrorRates"], dtype=float),
            estimated_error_rates=np.asarray(payload["estimatedErrorRates"], dtype=float),
            confusion_mae=float(np.mean(np.abs(conf - true_conf))),
            class_prior=np.asarray(payload["classPrior"], dtype=float),
            log_likelihood_history=np.asarray(payload["history"], dtype=float),
            n_iter=int(payload["nIter"]), converged=bool(payload["converged"]),
            n_labels=labels.n_labels, n_unlabelled=int(labels.unlabelled_items().size),
            em_seconds=float(payload.get("ms", 0.0)) / 1000.0,
            settings={"error_rates": rates.tolist(), "n_experts": J, "n_items": n,
                      "n_classes": K, "missing": float(s["missing"]),
                      "alpha": float(s["alpha"]), "seed": int(s["seed"]),
                      "max_iter": int(s["maxIter"]), "tol": float(s["tol"])},
            computed_in="browser")

    def _follow_live_settings(self, s: dict):
        for slider, value in zip(self.error_sliders, s["errorRates"]):
            slider.value = float(value)
        self.n_experts_slider.value = int(s["nExperts"])
        self.missing_slider.value = float(s["missing"])
        self.alpha_slider.value = float(s["alpha"])
        self.seed_slider.value = int(s["seed"])

    # -- display ---------------------------------------------------------------------------
    def _live_kwargs(self) -> dict:
        s = self.settings
        return dict(n_experts=s["n_experts"], error_rates=[w.value for w in self.error_sliders],
                    missing=s["missing"], alpha=s["alpha"], seed=s["seed"],
                    n_items=s["n_items"], n_classes=s["n_classes"], max_iter=self.max_iter,
                    tol=self.tol)

    def live_html(self) -> str:
        """The explorer as a self-contained HTML block that recomputes in the browser.

        See :func:`live_explorer_html`; it starts from this explorer's current settings.
        """
        return live_explorer_html(**self._live_kwargs())

    def live_widget(self):
        """The explorer as an ``anywidget`` (see :func:`live_explorer_widget`), starting
        from this explorer's current settings; made once, then reused."""
        return self._live_once(live_explorer_widget)


_STATIC = __import__("pathlib").Path(__file__).parent / "static"  # crowdlearn/widgets/static
_LIVE_IDS = __import__("itertools").count()

_LIVE_CSS = """
.cl-explorer { font-size: 0.9rem; max-width: 100%; }
.cl-explorer .cl-controls { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; }
.cl-explorer fieldset { border: 1px solid #ddd; border-radius: 4px; padding: 0.3rem 0.6rem;
  margin: 0; min-width: 0; flex: 1 1 260px; }
.cl-explorer legend { font-weight: 600; font-size: 0.85rem; padding: 0 0.3rem; }
.cl-explorer .cl-row { display: flex; align-items: center; gap: 0.4rem; margin: 0.15rem 0; }
.cl-explorer .cl-row[hidden] { display: none; }
.cl-explorer .cl-label { flex: 0 0 8.5em; }
.cl-explorer input[type=range] { flex: 1 1 auto; min-width: 6rem; }
.cl-explorer output { flex: 0 0 2.6em; text-align: right; font-variant-numeric: tabular-nums; }
.cl-explorer .cl-summary { margin: 0.5rem 0; }
.cl-explorer .cl-warning { color: #D55E00; }
.cl-explorer .cl-panels { display: flex; flex-wrap: wrap; gap: 0.5rem; }
.cl-explorer .cl-panel { flex: 1 1 190px; max-width: min(100%, 380px); height: auto;
  font-family: system-ui, sans-serif; font-size: 14px; }
.cl-explorer .cl-panel .cl-title { font-size: 15px; font-weight: 600; }
.cl-explorer .cl-panel .cl-small { font-size: 12.5px; }
.cl-explorer .cl-panel .cl-tick { font-size: 10.5px; }
.cl-explorer .cl-axis { stroke: #555; }
.cl-explorer .cl-grid { stroke: #e4e4e4; }
.cl-explorer .cl-chance { stroke: #555; stroke-dasharray: 4 3; }
.cl-explorer .cl-panel.cl-wide { flex: 1 1 300px; max-width: min(100%, 560px); }
.cl-explorer .cl-legend { margin: 0.2rem 0; font-size: 0.85rem; }
.cl-explorer .cl-legend svg { vertical-align: middle; margin: 0 0.15rem 0 0.6rem; }
.cl-explorer .cl-curves { display: grid; gap: 0.4rem; margin-bottom: 0.5rem;
  grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); }
.cl-explorer .cl-curve { width: 100%; height: auto; font-family: system-ui, sans-serif;
  font-size: 12.5px; }
.cl-explorer .cl-curve .cl-title { font-size: 11.5px; font-weight: 600; }
.cl-explorer .cl-curve .cl-small { font-size: 12px; }
"""


def _live_settings(*, n_experts: int = 5, error_rates=None, missing: float = 0.0,
                   alpha: float = 0.0, seed: int = 0, n_items: int = 500, n_classes: int = 3,
                   max_iter: int = 200, tol: float = 1e-6) -> dict:
    rates = list(error_rates) if error_rates is not None else []
    rates = rates + list(DEFAULT_ERROR_RATES)[len(rates):max(len(rates), n_experts, 8)]
    return {"nExperts": int(n_experts), "errorRates": [float(e) for e in rates],
            "missing": float(missing), "alpha": float(alpha), "seed": int(seed),
            "nItems": int(n_items), "nClasses": int(n_classes), "maxIter": int(max_iter),
            "tol": float(tol)}


# what each view needs besides crowd_em.js, in order (_common.js, the views' shared drawing
# and wiring, is not a module of its own: it goes into the same module, before the view)
_VIEW_NEEDS = {"explorer_view.js": ("_common.js",),
               "annotators_view.js": ("annotators_em.js", "_common.js")}


def _live_module(view: str = "explorer_view.js") -> str:
    """crowd_em.js, what the view needs, and the view as a single ES module (no imports,
    nothing fetched)."""
    files = ("crowd_em.js", *_VIEW_NEEDS.get(view, ()), view)
    return "\n".join((_STATIC / f).read_text(encoding="utf-8") for f in files) + "\n"


def _live_html(view: str, mount: str, init: dict) -> str:
    import json

    element = f"crowdlearn-explorer-{next(_LIVE_IDS)}"
    script = (f"{_live_module(view)}{mount}(document.getElementById({json.dumps(element)}), "
              f"{json.dumps(init)});")
    return (f'<style>{_LIVE_CSS}</style><div id="{element}" class="cl-explorer">'
            f"<p>The explorer runs in your browser and needs JavaScript.</p></div>"
            f'<script type="module">{script}</script>')


_WIDGET_CLASSES: dict = {}


def _live_widget(view: str, mount: str, init: dict):
    """An ``anywidget`` running ``view`` in the front-end; ``result`` gets every view's data."""
    import json

    if view not in _WIDGET_CLASSES:
        import anywidget
        import traitlets

        esm = _live_module(view) + """
export default {
  render({ model, el }) {
    const style = document.createElement("style");
    style.textContent = %s;
    const root = document.createElement("div");
    el.append(style, root);
    const send = (payload) => { model.set("result", payload); model.save_changes(); };
    const draw = () => %s(root, model.get("settings"), send);
    model.on("change:settings", draw);
    draw();
  },
};
""" % (json.dumps(_LIVE_CSS), mount)
        name = "Live" + mount.removeprefix("mount")
        _WIDGET_CLASSES[view] = type(name, (anywidget.AnyWidget,), {
            "_esm": esm, "settings": traitlets.Dict().tag(sync=True),
            "result": traitlets.Dict().tag(sync=True),
            "__module__": __name__,
            "__doc__": f"The front-end explorer of ``crowdlearn/static/{view}``."})
    return _WIDGET_CLASSES[view](settings=init)


def live_explorer_html(**settings) -> str:
    """The Dawid--Skene explorer as HTML that recomputes in the browser, with no kernel.

    The block holds its controls, a ``<style>`` and one inline ES module: the
    simulation and EM of ``crowdlearn/static/crowd_em.js`` (the package's Dawid--Skene,
    step for step; ``tests/test_js_engine.py`` checks it agrees with
    :class:`~crowdlearn.DawidSkene` to 1e-9) and the SVG view of
    ``crowdlearn/static/explorer_view.js``. Nothing is loaded from the network.
    Keyword arguments: ``n_experts``, ``error_rates``, ``missing``, ``alpha``, ``seed``,
    ``n_items``, ``n_classes``, ``max_iter``, ``tol``.
    """
    return _live_html("explorer_view.js", "mountDawidSkeneExplorer", _live_settings(**settings))


def live_explorer_widget(**settings):
    """The same explorer as an ``anywidget`` widget, for JupyterLab, Notebook and VS Code.

    It runs the same ES module in the front-end (sliders recompute there, with no round
    trip to the kernel) and reports every view back to the kernel: ``widget.result``
    holds the settings and the crowd the front-end simulated (``item``, ``expert``,
    ``label``, ``truth``), its EM posterior, class prior and confusion matrices,
    objective history, iteration count, the experts' true and estimated error rates and
    the three accuracies, so the package can check them (``tests/test_jupyterlab.py``
    does). A :class:`DawidSkeneExplorer` turns them into its ``last_result``.
    Keyword arguments as for :func:`live_explorer_html`.
    """
    return _live_widget("explorer_view.js", "mountDawidSkeneExplorer",
                        _live_settings(**settings))


class VoteExplorer:
    """Chapter 1's explorer: three good experts (accuracy 0.9) and ``n_careless`` careless
    ones on 2,000 binary items; majority vote against the Bayes rule with the true
    accuracies and against the best single expert.

    Displayed, it is an ``anywidget`` in Jupyter and a self-contained HTML block in the
    rendered book (``crowdlearn/static/vote_view.js``: the simulation of
    ``crowd_em.js``, the vote, the Bayes rule), recomputing in the browser either way.
    Ties are broken at random, as :class:`~crowdlearn.MajorityVote` does by default, and
    scored by their expectation (a tie of ``t`` classes counts ``1/t`` when the truth is
    among them), so the accuracies are exact. :meth:`compare` gives the same numbers from
    the package for any crowd.
    """

    def __init__(self, *, n_careless: int = 6, careless_accuracy: float = 0.55,
                 seed: int = 0, n_items: int = 2000):
        check_scalar(n_careless, "n_careless", kind=numbers.Integral, low=0, high=30)
        check_scalar(careless_accuracy, "careless_accuracy", low=0.5, high=0.9)
        check_scalar(seed, "seed", kind=numbers.Integral, low=0, high=9)
        check_scalar(n_items, "n_items", kind=numbers.Integral, low=1)
        self.settings = {"nCareless": int(n_careless),
                         "carelessAccuracy": float(careless_accuracy), "seed": int(seed),
                         "nItems": int(n_items)}
        self._widget = None

    @staticmethod
    def compare(crowd, truth, careless_accuracy: float) -> dict:
        """The package's majority-vote and Bayes-rule accuracies on ``crowd`` (three
        experts of accuracy 0.9, then the careless ones), ties broken at random and scored
        by their expectation: an item whose ``t`` best classes tie counts ``1/t`` if its
        true class is among them (the vote's tied counts; the Bayes rule's posteriors
        within 1e-9 of the best)."""
        from crowdlearn import MajorityVote
        from crowdlearn.experiments import oracle_posterior
        from crowdlearn.simulate import one_coin_confusion

        def expected_accuracy(scores, tol):
            top = scores >= scores.max(axis=1, keepdims=True) - tol
            hit = top[np.arange(len(truth)), truth]
            return float(np.mean(np.where(hit, 1.0 / top.sum(axis=1), 0.0)))

        truth = np.asarray(truth)
        acc = [0.9] * 3 + [careless_accuracy] * (crowd.n_experts - 3)
        votes = MajorityVote(random_state=0).fit(crowd, n_classes=2).posterior_
        post = oracle_posterior(crowd, one_coin_confusion(acc, 2), [0.5, 0.5])
        return {"mvAccuracy": expected_accuracy(votes, 0.0),
                "oracleAccuracy": expected_accuracy(post, 1e-9)}

    def widget(self):
        """The ``anywidget`` (made once)."""
        if self._widget is None:
            self._widget = _live_widget("vote_view.js", "mountVoteExplorer", self.settings)
        return self._widget

    def _repr_mimebundle_(self, **kwargs):
        return _with_html(self.widget()._repr_mimebundle_(**kwargs),
                          _live_html("vote_view.js", "mountVoteExplorer", self.settings))


def dawid_skene_explorer(**kwargs) -> DawidSkeneExplorer:
    """Build a :class:`DawidSkeneExplorer`; display the result to get the widget.

    All keyword arguments go to :class:`DawidSkeneExplorer`.

    Examples
    --------
    >>> ex = dawid_skene_explorer(n_items=200, n_experts=3, missing=0.3)
    >>> sorted(ex.settings)
    ['alpha', 'error_rates', 'missing', 'n_classes', 'n_experts', 'n_items', 'seed']
    >>> ex.close()
    """
    return DawidSkeneExplorer(**kwargs)


# chapter 3's explorer (crowdlearn/widgets/em_steps.py): its engine and _common.js
_VIEW_NEEDS["em_steps_view.js"] = ("em_steps_engine.js", "_common.js")
from crowdlearn.widgets.em_steps import EMStepsExplorer, live_em_steps_html  # noqa: E402

__all__ += ["EMStepsExplorer", "live_em_steps_html"]
