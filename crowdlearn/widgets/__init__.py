"""Interactive explorers and figures for the book's chapters.

* :class:`DawidSkeneExplorer` (built by :func:`dawid_skene_explorer`): sliders
  for each expert's error rate, the number of experts, the fraction of missing
  labels, the pseudo-count ``alpha`` and the seed; every change re-simulates the
  crowd, refits majority vote and Dawid--Skene EM, and redraws three panels.
* :class:`VoteExplorer`: chapter 1's majority vote against the Bayes rule.
* :func:`draw_comparison`: the three panels as a matplotlib figure, for one
  :class:`~crowdlearn.experiments.CrowdComparison` (usable without widgets).
* :func:`plot_sweep`: accuracy against one setting, for a
  :class:`~crowdlearn.experiments.Sweep` (the missing-labels and smoothing
  chapters).

Every explorer is one ``anywidget`` (see ``crowdlearn.widgets._explorer``): displayed in
Jupyter it recomputes in the browser, and its ``text/html`` twin does the same in the
rendered book, with no kernel. Its front-end is the ES module ``static/bundle_*.js``, built
from ``static/*_view.js`` and what they import by ``tools/build_widgets.mjs``; its style is
``static/explorers.css``. The computations live in :mod:`crowdlearn.experiments`; the
explorers' Python side keeps the settings, recomputes them with the package on every
:meth:`~DawidSkeneExplorer.set` and reads back what the browser computed.

Colours are from the Okabe--Ito palette, which stays distinct under the common
forms of colour blindness.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np

from crowdlearn._validation import as_float_array, check_scalar
from crowdlearn.experiments import CrowdComparison, Sweep, compare_on_simulated_crowd
from crowdlearn.widgets._explorer import (MAX_CLASSES, MAX_EXPERTS, MAX_ITEMS, STATIC, _clip,
                                          _Explorer, _LiveExplorer, _page_html, check_sizes)

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
#: redrawing into the same figure needs no layout engine).
_MARGINS = {"left": 0.7, "right": 0.15, "bottom": 0.62, "top": 0.6, "gap": 0.9}
_WIDTH_RATIOS = (0.9, 1.3, 1.0)


#: How close to chance (an error rate of ``1 - 1/K``) every estimated error rate must be
#: for :func:`fit_warnings` to call the fit degenerate.
DEGENERATE_MARGIN = 0.05


def fit_warnings(mv_accuracy: float, em_accuracy: float, estimated_error_rates,
                 n_classes: int, n_items: int | None = None) -> list[str]:
    """The warnings the explorer's summary shows under its numbers (the page's view
    in ``static/explorer_view.js`` shows the same ones).

    * EM's accuracy is below majority vote's. With ``n_items`` the gap is compared with
      what chance alone gives two methods of equal accuracy on that many items: a
      difference of proportions more than ``NOISE_Z`` standard errors,
      :math:`\\sqrt{(\\mathrm{acc}_{\\mathrm{MV}}(1-\\mathrm{acc}_{\\mathrm{MV}})
      + \\mathrm{acc}_{\\mathrm{EM}}(1-\\mathrm{acc}_{\\mathrm{EM}}) + 1/m) / m}` for the two
      accuracies on :math:`m` items, is EM failing; a smaller one is noise,
      and the note says so;
    * the fit is *degenerate*: EM rates every expert within ``DEGENERATE_MARGIN``
      of chance or worse (estimated error rate at least ``1 - 1/K - 0.05``), so in the
      fitted model the labels say (almost) nothing about the class.

    Examples
    --------
    >>> fit_warnings(0.9, 0.95, [0.1, 0.3], 3)
    []
    >>> [w.split(":")[0] for w in fit_warnings(1.0, 0.4, [0.66], 3, 500)]
    ['EM is below the majority vote', 'Degenerate fit']
    >>> [w.split(":")[0] for w in fit_warnings(0.986, 0.978, [0.1, 0.2], 3, 500)]
    ['EM is slightly below the majority vote']
    """
    out = []
    gap = mv_accuracy - em_accuracy
    if gap > 0:
        if n_items is not None and gap <= NOISE_Z * _se(mv_accuracy, em_accuracy, n_items):
            out.append(f"EM is slightly below the majority vote: {round(gap * n_items)} of "
                       f"{n_items} items, a gap chance alone gives two equally good methods")
        else:
            out.append("EM is below the majority vote: with few or weak experts its estimated "
                       "confusion matrices can fit noise or a degenerate solution")
    chance = 1.0 - 1.0 / n_classes
    rates = np.asarray(estimated_error_rates, dtype=float)
    if rates.size and np.all(rates >= chance - DEGENERATE_MARGIN):
        out.append("Degenerate fit: EM rates every expert at chance or worse, so its "
                   "labels say almost nothing about the class in the fitted model")
    return out


#: How many standard errors of a difference of accuracies :func:`fit_warnings` lets pass
#: as noise.
NOISE_Z = 2.0


def _se(a: float, b: float, n: int) -> float:
    """The standard error of the difference of two accuracies on ``n`` items (as if
    independent: wider than the paired one, so a gap called a failure is one)."""
    return float(np.sqrt((a * (1 - a) + b * (1 - b) + 1.0 / n) / n))


def _comparison_axes(fig):
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


def draw_comparison(result: CrowdComparison, fig=None, *, title: str | None = None):
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
    from matplotlib.figure import Figure

    if fig is None:
        fig = Figure(figsize=(9.0, 3.6))
    ax_acc, ax_err, ax_ll = _comparison_axes(fig)
    _accuracy_panel(ax_acc, result)
    _error_rate_panel(ax_err, result)
    _objective_panel(ax_ll, result)
    ax_acc.spines["left"].set_bounds(0, 1)
    ax_err.spines["left"].set_bounds(0, 1)
    for ax in (ax_acc, ax_err, ax_ll):
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelsize=8)
        ax.yaxis.label.set_size(9)
        ax.xaxis.label.set_size(9)
    if title is None:
        title = _describe(result.settings)
    fig.suptitle(title, fontsize=9.5)
    return fig


def _accuracy_panel(ax_acc, result: CrowdComparison):
    """Panel (a) of :func:`draw_comparison`: the three accuracies, chance dotted."""
    K = result.true_confusion.shape[1]
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


def _error_rate_panel(ax_err, result: CrowdComparison):
    """Panel (b) of :func:`draw_comparison`: each expert's true error rate (bars) and EM's
    estimate (diamonds)."""
    K = result.true_confusion.shape[1]
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


def _objective_panel(ax_ll, result: CrowdComparison):
    """Panel (c) of :func:`draw_comparison`: EM's objective at every iteration."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    hist = np.asarray(result.log_likelihood_history)
    ax_ll.plot(np.arange(hist.size), hist, "-", color=COLORS["em"], lw=1.5,
               marker="o" if hist.size <= 30 else None, ms=3)
    ax_ll.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    ax_ll.yaxis.set_major_formatter(fmt)
    ax_ll.yaxis.set_major_locator(MaxNLocator(nbins=5))
    ax_ll.set_xlabel("EM iteration")
    alpha = result.settings.get("alpha", 0.0)
    ax_ll.set_ylabel("log-likelihood" if alpha == 0 else f"log-posterior (α = {alpha:g})")
    state = "converged" if result.converged else "stopped at max_iter"
    ax_ll.set_title("(c) EM objective never falls", loc="left", fontsize=10)
    ax_ll.text(0.97, 0.05, f"{result.n_iter} iterations, {state}", transform=ax_ll.transAxes,
               ha="right", va="bottom", fontsize=8)


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
        from matplotlib.figure import Figure

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
    computed_in : {"kernel", "browser"}
        Where the crowd was simulated and fitted: by the package in the kernel, or by the
        explorer's view in the reader's browser (``crowdlearn/widgets/static/crowd_em.js``,
        which draws its crowd with its own random generator). A browser result holds the
        browser's numbers; ``em_seconds`` is then the browser's time to simulate, fit and
        draw.
    """

    update: int = 0
    computed_in: str = "kernel"


class DawidSkeneExplorer(_Explorer):
    """Sliders over a simulated crowd; majority vote and Dawid--Skene EM refitted live.

    The crowd is made of "one-coin" experts: expert ``j`` labels an item
    wrongly with probability ``error_rates[j]``, spreading the wrong labels
    evenly over the other classes. On every change the explorer draws a
    new crowd from ``np.random.default_rng(seed)``
    (:func:`~crowdlearn.experiments.compare_on_simulated_crowd`), fits
    :class:`~crowdlearn.MajorityVote` and :class:`~crowdlearn.DawidSkene`, and
    summarises the result.

    At a high fraction of missing labels some items receive no label at all.
    Majority vote cannot decide such an item, so it is run with
    ``unlabelled="uniform"``: the item gets a uniform vote and a random guess
    (instead of the ``ValueError`` the default ``unlabelled="error"`` raises).
    EM gives such an item its estimated class prior. Both are scored on all
    items, so their accuracies fall towards chance together.

    The explorer is an ``anywidget``: displayed, its view (``static/explorer_view.js``,
    with the simulation and EM of ``static/crowd_em.js``) shows the sliders, the numbers
    and three panels (accuracies; each expert's true and estimated error rate; EM's
    objective) and recomputes in the browser on every move, in Jupyter as in the rendered
    book (``live_html()``). In the kernel, :meth:`set` changes the settings and
    recomputes with the package.

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

    Attributes
    ----------
    all_error_rates : list of float
        The error rate of every expert slider (``max_experts`` of them).
    summary : str
        The last result in words (HTML), with the warnings of :func:`fit_warnings`, or
        why the last update failed.
    last_result : ExplorerResult
        Everything the last update computed: ``mv_accuracy``, ``em_accuracy``,
        ``oracle_accuracy``, ``estimated_confusion`` (n_experts, K, K),
        ``true_confusion``, ``estimated_error_rates``, ``true_error_rates``,
        ``log_likelihood_history``, ``n_iter``, ``converged``, ``n_unlabelled``,
        ``settings``, ``em_seconds``, ``computed_in``, ...
        Once the explorer is displayed in Jupyter, the last update is usually the
        browser's: every redraw of the view is reported back to the kernel and becomes
        ``last_result`` (``computed_in == "browser"``, the crowd the browser drew and the
        fit it made), and :attr:`settings` follow the browser's without a recomputation
        in the kernel (see ``crowdlearn.widgets._explorer``).
    n_updates : int
        Number of updates so far: 1 after construction, one more for every kernel-side
        recomputation and for every redraw the browser reports (a burst of slider moves
        may reach the kernel as one message that counts all its redraws).
    last_error : str or None
        Message of the last update that failed on a ``ValueError`` (``last_result``
        then keeps its previous value), ``None`` after a successful update.

    Examples
    --------
    >>> ex = DawidSkeneExplorer(n_items=200)
    >>> ex.n_updates, ex.last_result.estimated_confusion.shape
    (1, (5, 3, 3))
    >>> ex.set(n_experts=3)
    >>> ex.n_updates, ex.last_result.estimated_confusion.shape
    (2, (3, 3, 3))
    >>> ex.set(missing=0.5, alpha=1.0)           # several settings, one update
    >>> ex.n_updates, ex.last_result.settings["missing"]
    (3, 0.5)
    >>> ex.close()
    """

    _esm = STATIC / "bundle_dawid_skene.js"

    def __init__(self, *, n_experts: int = 5, max_experts: int | None = None,
                 error_rates=None, missing: float = 0.0, alpha: float = 0.0, seed: int = 0,
                 n_items: int = 500, n_classes: int = 3, max_iter: int = 200,
                 tol: float = 1e-6):
        given, max_experts = _checked_settings(
            n_experts=n_experts, max_experts=max_experts, error_rates=error_rates,
            missing=missing, alpha=alpha, seed=seed, n_items=n_items, n_classes=n_classes,
            max_iter=max_iter, tol=tol)
        defaults = list(DEFAULT_ERROR_RATES) * (max_experts // len(DEFAULT_ERROR_RATES) + 1)
        super().__init__()
        self.n_items = int(n_items)
        self.n_classes = int(n_classes)
        self.max_experts = int(max_experts)
        self.all_error_rates = given + defaults[len(given):max_experts]
        self._n_experts, self._missing = int(n_experts), float(missing)
        self._alpha, self._seed = float(alpha), int(seed)
        self._start(max_iter, tol)
        self.last_result: ExplorerResult | None = None
        self.update()

    # -- state ----------------------------------------------------------------------------
    @property
    def error_rates(self) -> np.ndarray:
        """Error rates of the active experts, shape ``(n_experts,)``."""
        return np.array(self.all_error_rates[:self._n_experts])

    @property
    def settings(self) -> dict:
        """The current settings: ``error_rates`` of the active experts, ``n_experts``,
        ``missing``, ``alpha``, ``seed``, ``n_items``, ``n_classes``."""
        return {"error_rates": self.error_rates.tolist(), "n_experts": self._n_experts,
                "missing": self._missing, "alpha": self._alpha, "seed": self._seed,
                "n_items": self.n_items, "n_classes": self.n_classes}

    def set(self, *, error_rates=None, n_experts=None, missing=None, alpha=None, seed=None):
        """Change several settings at once and recompute once.

        Parameters
        ----------
        error_rates : sequence of float, optional
            New values of the first ``len(error_rates)`` error rates (of
            ``max_experts``; those beyond ``n_experts`` wait until an expert joins).
        n_experts, missing, alpha, seed : optional
            New settings. Numbers are clipped to their slider's range (``n_experts`` to
            [1, max_experts], ``missing`` to [0, 0.95], ``alpha`` to [0, 5], ``seed`` to
            [0, 99], error rates to [0, 0.9]), as moving the slider to its end would.
        """
        if error_rates is not None and len(error_rates) > self.max_experts:
            raise ValueError(f"{len(error_rates)} error rates given but the explorer has "
                             f"{self.max_experts} expert sliders")
        with self.hold():
            for j, e in enumerate(error_rates if error_rates is not None else ()):
                self.all_error_rates[j] = _clip(e, f"error_rates[{j}]", 0.0, 0.9)
            if n_experts is not None:
                self._n_experts = _clip(n_experts, "n_experts", 1, self.max_experts,
                                        numbers.Integral)
            if missing is not None:
                self._missing = _clip(missing, "missing", 0.0, 0.95)
            if alpha is not None:
                self._alpha = _clip(alpha, "alpha", 0.0, 5.0)
            if seed is not None:
                self._seed = _clip(seed, "seed", 0, 99, numbers.Integral)

    # -- updates ---------------------------------------------------------------------------
    def _view_settings(self) -> dict:
        out = _live_settings(n_experts=self._n_experts, missing=self._missing,
                             alpha=self._alpha, seed=self._seed, n_items=self.n_items,
                             n_classes=self.n_classes, max_iter=self.max_iter, tol=self.tol)
        out["errorRates"] = [float(e) for e in self.all_error_rates]  # one per slider
        return out

    def _compute(self) -> ExplorerResult:
        s = self.settings
        comparison = compare_on_simulated_crowd(
            s["error_rates"], n_items=self.n_items, n_classes=self.n_classes,
            missing=s["missing"], alpha=s["alpha"], random_state=s["seed"],
            max_iter=self.max_iter, tol=self.tol)
        return ExplorerResult(**{f.name: getattr(comparison, f.name)
                                 for f in fields(CrowdComparison)})

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
                                                r.settings["n_classes"],
                                                r.settings["n_items"])))

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
        for j, value in enumerate(s["errorRates"][:self.max_experts]):
            self.all_error_rates[j] = _clip(value, "errorRates", 0.0, 0.9)
        self._n_experts = _clip(s["nExperts"], "nExperts", 1, self.max_experts,
                                numbers.Integral)
        self._missing = _clip(s["missing"], "missing", 0.0, 0.95)
        self._alpha = _clip(s["alpha"], "alpha", 0.0, 5.0)
        self._seed = _clip(s["seed"], "seed", 0, 99, numbers.Integral)


def _checked_settings(*, n_experts, max_experts, error_rates, missing, alpha, seed, n_items,
                      n_classes, max_iter, tol) -> tuple[list, int]:
    """``ValueError`` for a setting the Dawid--Skene explorer cannot show (checked before
    any widget or page is built); the given error rates as floats, and ``max_experts``."""
    check_scalar(n_experts, "n_experts", kind=numbers.Integral, low=1, high=MAX_EXPERTS)
    check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2, high=MAX_CLASSES)
    check_scalar(missing, "missing", low=0.0, high=0.95)
    check_scalar(alpha, "alpha", low=0.0, high=5.0)
    check_scalar(seed, "seed", kind=numbers.Integral, low=0, high=99)
    check_sizes(n_items, max_iter, tol)
    rates = np.zeros(0) if error_rates is None else np.atleast_1d(
        as_float_array(error_rates, "error_rates"))
    given = rates.tolist()
    if rates.ndim != 1 or not ((rates >= 0.0) & (rates <= 0.9)).all():
        raise ValueError(f"error_rates must lie in [0, 0.9], got {error_rates!r}")
    if max_experts is None:
        max_experts = max(8, n_experts, len(given))
    check_scalar(max_experts, "max_experts", kind=numbers.Integral, low=1, high=MAX_EXPERTS)
    if n_experts > max_experts or len(given) > max_experts:
        raise ValueError(f"n_experts ({n_experts}) and len(error_rates) ({len(given)}) "
                         f"must not exceed max_experts ({max_experts})")
    return given, int(max_experts)


def _live_settings(*, n_experts: int = 5, error_rates=None, missing: float = 0.0,
                   alpha: float = 0.0, seed: int = 0, n_items: int = 500, n_classes: int = 3,
                   max_iter: int = 200, tol: float = 1e-6) -> dict:
    rates, _ = _checked_settings(n_experts=n_experts, max_experts=MAX_EXPERTS,
                                 error_rates=error_rates, missing=missing, alpha=alpha,
                                 seed=seed, n_items=n_items, n_classes=n_classes,
                                 max_iter=max_iter, tol=tol)
    rates = rates + list(DEFAULT_ERROR_RATES)[len(rates):max(len(rates), n_experts, 8)]
    return {"nExperts": int(n_experts), "errorRates": [float(e) for e in rates],
            "missing": float(missing), "alpha": float(alpha), "seed": int(seed),
            "nItems": int(n_items), "nClasses": int(n_classes), "maxIter": int(max_iter),
            "tol": float(tol)}


def live_explorer_html(**settings) -> str:
    """The Dawid--Skene explorer as HTML that recomputes in the browser, with no kernel.

    The block holds a ``<style>`` (``static/explorers.css``), a ``<div>`` and one inline
    ES module, ``static/bundle_dawid_skene.js``: the simulation and EM of
    ``static/crowd_em.js`` (the package's Dawid--Skene, step for step;
    ``tests/js/test_js_engine.py`` checks it agrees with :class:`~crowdlearn.DawidSkene` to
    1e-9) and the SVG view of ``static/explorer_view.js``. Nothing is loaded from the
    network. Keyword arguments: ``n_experts``, ``error_rates``, ``missing``, ``alpha``,
    ``seed``, ``n_items``, ``n_classes``, ``max_iter``, ``tol``; nothing is computed in
    the kernel (``DawidSkeneExplorer.live_html()`` gives the same block for an explorer).
    """
    return _page_html("dawid_skene", _live_settings(**settings))


def live_explorer_widget(**settings) -> DawidSkeneExplorer:
    """The explorer as an ``anywidget`` for JupyterLab, Notebook and VS Code: a
    :class:`DawidSkeneExplorer` (which is one) with these settings.

    Its view recomputes in the front-end (sliders answer with no round trip to the kernel)
    and reports every redraw back to the kernel: ``widget.result`` holds the settings and
    the crowd the front-end simulated (``item``, ``expert``, ``label``, ``truth``), its EM
    posterior, class prior and confusion matrices, objective history, iteration count, the
    experts' true and estimated error rates and the three accuracies, so the package can
    check them (``tests/book/test_jupyterlab.py`` does); the explorer turns them into its
    ``last_result``. Keyword arguments as for :class:`DawidSkeneExplorer`.
    """
    return DawidSkeneExplorer(**settings)


class VoteExplorer(_LiveExplorer):
    """Chapter 1's explorer: three good experts (accuracy 0.9) and ``n_careless`` careless
    ones on 2,000 binary items; majority vote against the Bayes rule with the true
    accuracies and against the best single expert.

    An ``anywidget`` in Jupyter and a self-contained HTML block in the rendered book
    (``static/vote_view.js``: the simulation of ``crowd_em.js``, the vote, the Bayes rule),
    recomputing in the browser either way. Ties are broken at random, as
    :class:`~crowdlearn.MajorityVote` does by default, and scored by their expectation (a
    tie of ``t`` classes counts ``1/t`` when the truth is among them), so the accuracies are
    exact. :meth:`compare` gives the same numbers from the package for any crowd.

    Parameters
    ----------
    n_careless : int in [0, 30], default 6
    careless_accuracy : float in [0.5, 0.9], default 0.55
    seed : int in [0, 9], default 0
    n_items : int in [1, 20,000], default 2000
        Items simulated in the reader's browser on every slider move: at most
        ``MAX_ITEMS`` (20,000), the bound of every explorer
        (``crowdlearn.widgets._explorer``). A value outside a range is a ``ValueError``.
    """

    _esm = STATIC / "bundle_vote.js"

    def __init__(self, *, n_careless: int = 6, careless_accuracy: float = 0.55,
                 seed: int = 0, n_items: int = 2000):
        check_scalar(n_careless, "n_careless", kind=numbers.Integral, low=0, high=30)
        check_scalar(careless_accuracy, "careless_accuracy", low=0.5, high=0.9)
        check_scalar(seed, "seed", kind=numbers.Integral, low=0, high=9)
        check_scalar(n_items, "n_items", kind=numbers.Integral, low=1, high=MAX_ITEMS)
        super().__init__(view_settings={
            "nCareless": int(n_careless), "carelessAccuracy": float(careless_accuracy),
            "seed": int(seed), "nItems": int(n_items)})

    @property
    def settings(self) -> dict:
        """The view's settings: ``nCareless``, ``carelessAccuracy``, ``seed``, ``nItems``."""
        return self.view_settings

    @staticmethod
    def compare(crowd, truth, careless_accuracy: float) -> dict:
        """The package's majority-vote and Bayes-rule accuracies on ``crowd`` (three
        experts of accuracy 0.9, then the careless ones), ties broken at random and scored
        by their expectation: an item whose ``t`` best classes tie counts ``1/t`` if its
        true class is among them (the vote's tied counts; the Bayes rule's posteriors
        within 1e-9 of the best)."""
        from crowdlearn.aggregation.majority_vote import MajorityVote
        from crowdlearn.experiments import oracle_posterior
        from crowdlearn.simulate import one_coin_confusion

        def expected_accuracy(scores, tol):
            top = scores >= scores.max(axis=1, keepdims=True) - tol
            hit = top[np.arange(len(truth)), truth]
            return float(np.mean(np.where(hit, 1.0 / top.sum(axis=1), 0.0)))

        truth = np.asarray(truth)
        acc = [0.9] * 3 + [careless_accuracy] * (crowd.n_experts - 3)
        votes = MajorityVote(n_classes=2, random_state=0).fit(crowd).posterior_
        post = oracle_posterior(crowd, one_coin_confusion(acc, 2), [0.5, 0.5])
        return {"mvAccuracy": expected_accuracy(votes, 0.0),
                "oracleAccuracy": expected_accuracy(post, 1e-9)}

    def widget(self):
        """The ``anywidget``: the explorer itself."""
        return self


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


# chapter 3's explorer (crowdlearn/widgets/em_steps.py)
from crowdlearn.widgets.em_steps import EMStepsExplorer, live_em_steps_html  # noqa: E402

__all__ += ["EMStepsExplorer", "live_em_steps_html"]
