"""An interactive explorer for annotators whose reliability depends on the item.

:class:`LogisticAnnotatorsExplorer` puts sliders on the crowd of
:func:`~crowdlearn.simulate.annotators.simulate_logistic_annotators`: how steeply
each annotator's reliability :math:`\\eta_r(x) = \\sigma(w_r^\\top x - \\gamma_r)`
rises or falls along the first feature (the slope :math:`w_{r1}`), the threshold
:math:`\\gamma_r`, the same for all annotators, the fraction of missing
labels and the seed. Every change draws a new crowd (seeded), fits
:class:`~crowdlearn.MajorityVote`, :class:`~crowdlearn.DawidSkene` and
:class:`~crowdlearn.LogisticAnnotators`, and redraws its view: the true and
estimated reliability curves of every annotator against :math:`x_1`, and the
accuracy of each method against the truth.

The explorer is an ``anywidget`` (``static/bundle_annotators.js``): displayed in Jupyter,
or as its text/html twin (:func:`live_annotators_html`) in the rendered book, it is live in
the browser, running the same ES module (``static/annotators_em.js``, the package's EM step
for step, and ``static/annotators_view.js``, an SVG view) with no kernel round trip and no
network; :func:`fit_explorer_crowd` recomputes any of its views with the package. In the
kernel, :meth:`LogisticAnnotatorsExplorer.set` changes the settings and recomputes the same
views with the package, so a chapter can assert on ``last_result``.
"""

from __future__ import annotations

import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from crowdlearn._validation import as_float_array, check_scalar
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning
from crowdlearn.labels import CrowdLabels, from_triples
from crowdlearn.features.logistic_annotators import LogisticAnnotators
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.simulate.annotators import simulate_logistic_annotators
from crowdlearn.widgets._explorer import STATIC, _clip, _Explorer, _page_html, check_sizes

__all__ = ["AnnotatorsExplorerResult", "LogisticAnnotatorsExplorer", "COLORS",
           "DEFAULT_SLOPES", "bayes_posterior", "fit_explorer_crowd", "live_annotators_html",
           "live_annotators_widget"]

#: Okabe--Ito colours of the explorer's view (distinct under common colour blindness).
COLORS = {"mv": "#E69F00", "ds": "#0072B2", "la": "#009E73", "oracle": "#7F7F7F",
          "truth": "#000000", "chance": "#555555"}

#: Slopes :math:`w_{r1}` of the explorer's annotators when none are given: one who
#: is reliable for large :math:`x_1`, its mirror image, a milder one, one whose
#: reliability does not depend on the item, and a second mild mirror image.
DEFAULT_SLOPES = (3.0, -3.0, 1.5, 0.0, -1.5, 2.0)

def bayes_posterior(X, labels: CrowdLabels, coef, intercept, reliability_coef,
                    reliability_intercept) -> np.ndarray:
    r""":math:`P(y^{(i)} = 1 \mid x^{(i)}, L_i)` under the given parameters.

    Bayes' rule in log-odds form: :math:`a_i + \sum_{r \in R_i} z_{ir} b_{ir}` with
    :math:`a_i = \beta_0 + \beta^\top x^{(i)}` (``intercept``, ``coef``),
    :math:`b_{ir} = w_r^\top x^{(i)} - \gamma_r`, :math:`z_{ir} = 2 y^{(i)}_r - 1`. With the
    true parameters this is the best any method can do (the explorer's "Bayes, true θ").

    Examples
    --------
    >>> from crowdlearn import from_triples
    >>> crowd = from_triples([0, 0], [0, 1], [1, 0], n_items=1, n_experts=2, n_classes=2)
    >>> p = bayes_posterior([[1.0]], crowd, [1.0], 0.0, [[2.0], [0.0]], [0.0, -1.0])
    >>> round(float(p[0]), 6)  # log-odds 1 + 2 - 1 = 2, sigma(2)
    0.880797
    """
    X = np.asarray(X, dtype=float)
    W = np.asarray(reliability_coef, dtype=float)
    gamma = np.asarray(reliability_intercept, dtype=float)
    a = X @ np.asarray(coef, dtype=float) + float(intercept)
    b = np.einsum("rd,rd->r", X[labels.item], W[labels.expert]) - gamma[labels.expert]
    log_odds = a + np.bincount(labels.item, weights=(2.0 * labels.label - 1.0) * b,
                               minlength=labels.n_items)
    return expit(log_odds)


@dataclass
class AnnotatorsExplorerResult:
    """Everything one update of :class:`LogisticAnnotatorsExplorer` computed.

    Attributes
    ----------
    settings : dict
        Slider values and fixed settings (``slopes``, ``gamma``, ``missing``, ``seed``,
        ``n_items``, ``coef``, ``intercept``, ``l2``).
    X : ndarray of shape (n_items, 2)
    labels : CrowdLabels
    truth : ndarray of shape (n_items,)
    grid : ndarray of shape (n_grid,)
        Values of :math:`x_1` at which the curves are drawn (:math:`x_2 = 0`).
    true_eta, estimated_eta : ndarray of shape (n_annotators, n_grid)
        :math:`\\eta_r` on the grid, true and estimated by LogisticAnnotators.
    ds_reliability : ndarray of shape (n_annotators,)
        Dawid--Skene's one number per annotator,
        :math:`\\sum_k \\pi_k M^{(t)}_{k,k}` (its probability of a correct label).
    empirical_reliability : ndarray of shape (n_annotators,)
        Fraction of each annotator's labels that are correct (NaN for an annotator
        without labels).
    mv_accuracy, ds_accuracy, la_accuracy, oracle_accuracy : float
        Accuracy against the truth on all items: majority vote, Dawid--Skene,
        LogisticAnnotators, and Bayes' rule with the true parameters (the ceiling).
    la_coef, la_intercept, la_reliability_coef, la_reliability_intercept
        LogisticAnnotators' fitted :math:`\\beta, \\beta_0, w_r, \\gamma_r`.
    la_flipped : bool
        Whether LogisticAnnotators flipped its solution (see its Notes).
    la_objective_history : ndarray
        The penalised log-likelihood at every E-step (never decreases).
    la_converged, ds_converged : bool
    n_labels, n_unlabelled : int
    fit_seconds : float
        Wall time of simulating and fitting.
    update : int
        Which update produced it (the explorer's ``n_updates`` then).
    ds_posterior, la_posterior : ndarray of shape (n_items, 2)
        The posteriors of Dawid--Skene and of LogisticAnnotators.
    la_n_iter, ds_n_iter : int
        Their numbers of EM iterations.
    mv_labels : ndarray of shape (n_items,)
        Majority vote's classes (ties and unlabelled items drawn at random).
    computed_in : {"kernel", "browser"}
        Where the crowd was simulated and fitted: by the package in the kernel, or by the
        explorer's view in the reader's browser (``annotators_em.js``, with its own random
        generator). A browser result holds the browser's crowd, fits and accuracies; its
        curves are those of the browser's fitted parameters on :attr:`grid`, its
        ``fit_seconds`` the browser's time to simulate, fit and draw.
    """

    settings: dict
    X: np.ndarray
    labels: CrowdLabels
    truth: np.ndarray
    grid: np.ndarray
    true_eta: np.ndarray
    estimated_eta: np.ndarray
    ds_reliability: np.ndarray
    empirical_reliability: np.ndarray
    mv_accuracy: float
    ds_accuracy: float
    la_accuracy: float
    oracle_accuracy: float
    la_coef: np.ndarray
    la_intercept: float
    la_reliability_coef: np.ndarray
    la_reliability_intercept: np.ndarray
    la_flipped: bool
    la_objective_history: np.ndarray
    la_converged: bool
    ds_converged: bool
    n_labels: int
    n_unlabelled: int
    fit_seconds: float = 0.0
    update: int = 0
    ds_posterior: np.ndarray | None = None
    la_posterior: np.ndarray | None = None
    la_n_iter: int = 0
    ds_n_iter: int = 0
    mv_labels: np.ndarray | None = None
    computed_in: str = "kernel"

    @property
    def accuracies(self) -> dict:
        """``{method: accuracy}`` in the order of the view's bars."""
        return {"majority vote": self.mv_accuracy, "Dawid-Skene": self.ds_accuracy,
                "LogisticAnnotators": self.la_accuracy, "Bayes, true parameters":
                self.oracle_accuracy}

    @property
    def eta_error(self) -> float:
        """Mean absolute error of LogisticAnnotators' :math:`\\eta_r` on the grid."""
        return float(np.mean(np.abs(self.estimated_eta - self.true_eta)))


def _simulate_and_fit(settings: dict, grid: np.ndarray, max_iter: int, tol: float
                      ) -> AnnotatorsExplorerResult:
    """One update's computation (no drawing)."""
    start = time.perf_counter()
    slopes = np.asarray(settings["slopes"], dtype=float)
    T = slopes.size
    W = np.column_stack([slopes, np.zeros(T)])
    gamma = np.full(T, settings["gamma"])
    coef, intercept = np.asarray(settings["coef"], dtype=float), settings["intercept"]
    sim = simulate_logistic_annotators(settings["n_items"], coef, intercept, W, gamma,
                                       missing=settings["missing"],
                                       random_state=settings["seed"])
    result = fit_explorer_crowd(settings, sim.X, sim.labels, sim.truth, grid, max_iter, tol)
    result.fit_seconds = time.perf_counter() - start
    return result


def fit_explorer_crowd(settings: dict, X, crowd: CrowdLabels, truth, grid=None,
                       max_iter: int = 200, tol: float = 1e-6) -> AnnotatorsExplorerResult:
    """Everything the explorer shows, computed by the package for a given crowd.

    The kernel explorer calls it on the crowd it simulated; the tests call it on the
    crowd the page's JavaScript simulated (``settings`` in the explorer's form:
    ``slopes``, ``gamma``, ``missing``, ``seed``, ``n_items``, ``coef``, ``intercept``,
    ``l2``) and compare with the page's numbers. Majority vote breaks ties with the
    package's generator seeded by ``settings["seed"]``.
    """
    start = time.perf_counter()
    X = np.asarray(X, dtype=float)
    truth = np.asarray(truth)
    grid = np.linspace(-3.0, 3.0, 121) if grid is None else np.asarray(grid, dtype=float)
    slopes = np.asarray(settings["slopes"], dtype=float)
    T = slopes.size
    W = np.column_stack([slopes, np.zeros(T)])
    gamma = np.full(T, settings["gamma"])
    coef, intercept = np.asarray(settings["coef"], dtype=float), settings["intercept"]
    seed = settings["seed"]
    if crowd.n_labels == 0:
        raise ValueError("no label at all was drawn: lower the missing fraction")
    mv = MajorityVote(unlabelled="uniform", random_state=seed).fit(crowd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        ds = DawidSkene(n_classes=2, max_iter=max_iter, tol=tol).fit(crowd)
        la = LogisticAnnotators(l2=settings["l2"], max_iter=max_iter, tol=tol).fit(crowd, X)
    oracle = bayes_posterior(X, crowd, coef, intercept, W, gamma) > 0.5
    G = np.column_stack([grid, np.zeros_like(grid)])
    empirical = _empirical_reliability(crowd, truth, T)
    return AnnotatorsExplorerResult(
        settings=settings, X=X, labels=crowd, truth=truth, grid=grid,
        true_eta=expit(G @ W.T - gamma).T, estimated_eta=la.reliability(G).T,
        ds_reliability=np.einsum("k,tkk->t", ds.class_prior_, ds.confusion_),
        empirical_reliability=empirical,
        mv_accuracy=float(np.mean(mv.labels_ == truth)),
        ds_accuracy=float(np.mean(ds.predict() == truth)),
        la_accuracy=float(np.mean(la.predict() == truth)),
        oracle_accuracy=float(np.mean(oracle == truth)),
        la_coef=la.coef_, la_intercept=la.intercept_,
        la_reliability_coef=la.reliability_coef_,
        la_reliability_intercept=la.reliability_intercept_, la_flipped=la.flipped_,
        la_objective_history=la.log_likelihood_history_, la_converged=la.converged_,
        ds_converged=ds.converged_, n_labels=crowd.n_labels,
        n_unlabelled=int(crowd.unlabelled_items().size),
        fit_seconds=time.perf_counter() - start, ds_posterior=ds.posterior_,
        la_posterior=la.posterior_, la_n_iter=la.n_iter_, ds_n_iter=ds.n_iter_,
        mv_labels=mv.labels_)


def _empirical_reliability(crowd: CrowdLabels, truth: np.ndarray, T: int) -> np.ndarray:
    """Fraction of each annotator's labels that are correct (NaN without labels)."""
    correct = crowd.label == truth[crowd.item]
    n_per = np.bincount(crowd.expert, minlength=T)
    with np.errstate(invalid="ignore", divide="ignore"):
        empirical = np.bincount(crowd.expert, weights=correct, minlength=T) / n_per
    empirical[n_per == 0] = np.nan
    return empirical


class LogisticAnnotatorsExplorer(_Explorer):
    """Sliders over a crowd whose reliability depends on the item; three methods refitted live.

    Items have two standard-normal features :math:`x = (x_1, x_2)` and a hidden
    truth with :math:`P(y = 1 \\mid x) = \\sigma(\\beta_0 + \\beta^\\top x)`.
    Annotator :math:`r` is right with probability
    :math:`\\eta_r(x) = \\sigma(w_{r1} x_1 - \\gamma_r)`: its reliability changes along
    :math:`x_1` with slope :math:`w_{r1}` (one slider per annotator; negative
    slopes make it reliable for small :math:`x_1`) around the base reliability
    :math:`\\sigma(-\\gamma_r)` at :math:`x_1 = 0`, with one threshold :math:`\\gamma_r`
    for all annotators (one slider, shared). On every
    change the explorer draws a new crowd from the seed
    (:func:`~crowdlearn.simulate.annotators.simulate_logistic_annotators`), fits
    :class:`~crowdlearn.MajorityVote` (items without labels get a random guess),
    :class:`~crowdlearn.DawidSkene` and :class:`~crowdlearn.LogisticAnnotators`,
    and shows the true and estimated reliability curves and each method's accuracy.

    The explorer is an ``anywidget`` whose view recomputes in the browser, in Jupyter as
    in the rendered book (``live_html()``); the page also lets the reader change the
    number of annotators. In the kernel, :meth:`set` changes the settings and recomputes
    with the package.

    Parameters
    ----------
    n_annotators : int in [2, 6], default 4
        Number of annotators (fixed for the explorer's life).
    slopes : sequence of float in [-5, 5], optional
        Starting slopes :math:`w_{r1}` (default :data:`DEFAULT_SLOPES`).
    gamma : float in [-3, 3], default -0.5
        Starting threshold :math:`\\gamma_r`, shared (base reliability :math:`\\sigma(-\\gamma_r)`).
    missing : float in [0, 0.9], default 0
        Probability that an (item, annotator) label is missing.
    seed : int in [0, 99], default 0
    n_items : int, default 600
    coef : pair of float, default (2.0, -1.0)
        The truth's :math:`\\beta`.
    intercept : float, default 0
        The truth's :math:`\\beta_0`.
    l2 : float, default 1.0
        Ridge penalty of :class:`~crowdlearn.LogisticAnnotators`.
    max_iter : int, default 200
    tol : float, default 1e-6
        Passed to both EM models.

    Attributes
    ----------
    summary : str
        The last result in words (HTML), or why the last update failed.
    last_result : AnnotatorsExplorerResult
        Everything the last successful update computed. Once the explorer is displayed in
        Jupyter, the last update is usually the browser's: every redraw of the view is
        reported back to the kernel and becomes ``last_result`` (``computed_in ==
        "browser"``; the view's own number of annotators, which the reader can change),
        and :attr:`settings` follow the browser's without a recomputation in the kernel
        (see ``crowdlearn.widgets._explorer``).
    n_updates : int
        Number of updates so far: 1 after construction, one more for every kernel-side
        recomputation and for every redraw the browser reports (a burst of slider moves
        may reach the kernel as one message that counts all its redraws).
    last_error : str or None
        Message of the last update that failed on a ``ValueError`` (``last_result``
        then keeps its previous value), ``None`` after a successful update.

    Examples
    --------
    >>> ex = LogisticAnnotatorsExplorer(n_items=300)
    >>> ex.n_updates, ex.last_result.estimated_eta.shape
    (1, (4, 121))
    >>> ex.set(slopes=[3.0, -3.0, 1.5, 2.0])
    >>> ex.n_updates, ex.last_result.settings["slopes"]
    (2, [3.0, -3.0, 1.5, 2.0])
    >>> ex.set(gamma=-1.0, missing=0.3)          # several settings, one update
    >>> ex.n_updates, ex.last_result.settings["missing"]
    (3, 0.3)
    >>> ex.close()
    """

    _esm = STATIC / "bundle_annotators.js"

    def __init__(self, *, n_annotators: int = 4, slopes=None, gamma: float = -0.5,
                 missing: float = 0.0, seed: int = 0, n_items: int = 600,
                 coef=(2.0, -1.0), intercept: float = 0.0, l2: float = 1.0,
                 max_iter: int = 200, tol: float = 1e-6):
        start, coef = _checked_settings(
            n_annotators=n_annotators, slopes=slopes, gamma=gamma, missing=missing, seed=seed,
            n_items=n_items, coef=coef, intercept=intercept, l2=l2, max_iter=max_iter,
            tol=tol)
        coef = np.asarray(coef)

        super().__init__()
        self.n_annotators = int(n_annotators)
        self.n_items = int(n_items)
        self.coef = tuple(float(c) for c in coef)
        self.intercept = float(intercept)
        self.l2 = float(l2)
        # every slope the page can show (it lets the reader add annotators); the kernel's
        # explorer uses the first n_annotators
        self._all_slopes = start
        self._gamma, self._missing, self._seed = float(gamma), float(missing), int(seed)
        self._start(max_iter, tol)
        self.last_result: AnnotatorsExplorerResult | None = None
        self.grid = np.linspace(-3.0, 3.0, 121)
        self.update()

    # -- state ------------------------------------------------------------------------------
    @property
    def slopes(self) -> np.ndarray:
        """Current slopes :math:`w_{r1}`, shape ``(n_annotators,)``."""
        return np.array(self._all_slopes[:self.n_annotators])

    @property
    def settings(self) -> dict:
        """The current settings: ``slopes``, ``gamma``, ``missing``, ``seed``, ``n_items``,
        ``coef``, ``intercept``, ``l2``."""
        return {"slopes": self.slopes.tolist(), "gamma": self._gamma,
                "missing": self._missing, "seed": self._seed, "n_items": self.n_items,
                "coef": list(self.coef), "intercept": self.intercept, "l2": self.l2}

    def set(self, *, slopes=None, gamma=None, missing=None, seed=None):
        """Change several settings at once and recompute once.

        Parameters
        ----------
        slopes : sequence of float, optional
            New values of the first ``len(slopes)`` slopes.
        gamma, missing, seed : optional
            New settings. Numbers are clipped to their slider's range (slopes to [-5, 5],
            ``gamma`` to [-3, 3], ``missing`` to [0, 0.9], ``seed`` to [0, 99]), as moving
            the slider to its end would.
        """
        if slopes is not None and len(slopes) > self.n_annotators:
            raise ValueError(f"{len(slopes)} slopes given but the explorer has "
                             f"{self.n_annotators} annotators")
        with self.hold():
            for t, w in enumerate(slopes if slopes is not None else ()):
                self._all_slopes[t] = _clip(w, f"slopes[{t}]", -5.0, 5.0)
            if gamma is not None:
                self._gamma = _clip(gamma, "gamma", -3.0, 3.0)
            if missing is not None:
                self._missing = _clip(missing, "missing", 0.0, 0.9)
            if seed is not None:
                self._seed = _clip(seed, "seed", 0, 99, numbers.Integral)

    # -- updates ----------------------------------------------------------------------------
    def _view_settings(self) -> dict:
        return _live_settings(n_annotators=self.n_annotators, slopes=self._all_slopes,
                              gamma=self._gamma, missing=self._missing, seed=self._seed,
                              n_items=self.n_items, coef=self.coef, intercept=self.intercept,
                              l2=self.l2, max_iter=self.max_iter, tol=self.tol)

    def _compute(self) -> AnnotatorsExplorerResult:
        return _simulate_and_fit(self.settings, self.grid, self.max_iter, self.tol)

    def _result_from_live(self, payload: dict) -> AnnotatorsExplorerResult:
        """An :class:`AnnotatorsExplorerResult` holding the numbers the browser reported."""
        s = payload["settings"]
        T, n = int(s["nAnnotators"]), int(s["nItems"])
        slopes = np.asarray(s["slopes"][:T], dtype=float)
        gamma = float(s["gamma"])
        crowd = from_triples(payload["item"], payload["expert"], payload["label"],
                             n_items=n, n_experts=T, n_classes=2)
        truth = np.asarray(payload["truth"], dtype=int)
        rel_coef = np.reshape(np.asarray(payload["laReliabilityCoef"], dtype=float), (T, -1))
        rel_intercept = np.asarray(payload["laReliabilityIntercept"], dtype=float)
        grid = self.grid
        return AnnotatorsExplorerResult(
            settings={"slopes": slopes.tolist(), "gamma": gamma, "missing": float(s["missing"]),
                      "seed": int(s["seed"]), "n_items": n,
                      "coef": [float(c) for c in s["coef"]], "intercept": float(s["intercept"]),
                      "l2": float(s["l2"])},
            X=np.reshape(np.asarray(payload["X"], dtype=float), (n, -1)), labels=crowd,
            truth=truth, grid=grid, true_eta=expit(np.outer(slopes, grid) - gamma),
            estimated_eta=expit(np.outer(rel_coef[:, 0], grid) - rel_intercept[:, None]),
            ds_reliability=np.asarray(payload["dsReliability"], dtype=float),
            empirical_reliability=_empirical_reliability(crowd, truth, T),
            mv_accuracy=float(payload["mvAccuracy"]), ds_accuracy=float(payload["dsAccuracy"]),
            la_accuracy=float(payload["laAccuracy"]),
            oracle_accuracy=float(payload["oracleAccuracy"]),
            la_coef=np.asarray(payload["laCoef"], dtype=float),
            la_intercept=float(payload["laIntercept"]), la_reliability_coef=rel_coef,
            la_reliability_intercept=rel_intercept, la_flipped=bool(payload["flipped"]),
            la_objective_history=np.asarray(payload["history"], dtype=float),
            la_converged=bool(payload["converged"]), ds_converged=bool(payload["dsConverged"]),
            n_labels=crowd.n_labels, n_unlabelled=int(crowd.unlabelled_items().size),
            fit_seconds=float(payload.get("ms", 0.0)) / 1000.0,
            ds_posterior=np.reshape(np.asarray(payload["dsPosterior"], dtype=float), (n, 2)),
            la_posterior=np.reshape(np.asarray(payload["posterior"], dtype=float), (n, 2)),
            la_n_iter=int(payload["nIter"]), ds_n_iter=int(payload["dsNIter"]),
            mv_labels=np.asarray(payload["mvPrediction"], dtype=int), computed_in="browser")

    def _follow_live_settings(self, s: dict):
        for t, w in enumerate(s["slopes"][:len(self._all_slopes)]):
            self._all_slopes[t] = _clip(w, "slopes", -5.0, 5.0)
        self._gamma = _clip(s["gamma"], "gamma", -3.0, 3.0)
        self._missing = _clip(s["missing"], "missing", 0.0, 0.9)
        self._seed = _clip(s["seed"], "seed", 0, 99, numbers.Integral)

    @staticmethod
    def _summary(r: AnnotatorsExplorerResult) -> str:
        unlabelled = (f"; {r.n_unlabelled} items got no label" if r.n_unlabelled else "")
        flipped = " (solution flipped to agree with the vote)" if r.la_flipped else ""
        return (f"Majority vote <b>{r.mv_accuracy:.3f}</b>, Dawid–Skene "
                f"<b>{r.ds_accuracy:.3f}</b>, logistic annotators <b>{r.la_accuracy:.3f}</b>"
                f"{flipped}, Bayes with the true parameters {r.oracle_accuracy:.3f}"
                f" &nbsp;·&nbsp; {r.n_labels} labels{unlabelled}; mean |η error| "
                f"{r.eta_error:.3f}; update {1000 * r.fit_seconds:.0f} ms")


def _checked_settings(*, n_annotators, slopes, gamma, missing, seed, n_items, coef,
                      intercept, l2, max_iter, tol, most_slopes=None) -> tuple[list, list]:
    """``ValueError`` for a setting the explorer cannot show (checked before any widget or
    page is built); every slope the page can show, and ``coef`` as two floats."""
    check_scalar(n_annotators, "n_annotators", kind=numbers.Integral, low=2,
                 high=len(DEFAULT_SLOPES))
    check_scalar(gamma, "gamma", low=-3.0, high=3.0)
    check_scalar(missing, "missing", low=0.0, high=0.9)
    check_scalar(seed, "seed", kind=numbers.Integral, low=0, high=99)
    check_scalar(intercept, "intercept", low=-10.0, high=10.0)
    check_scalar(l2, "l2", low=0.0, high=1e6)
    check_sizes(n_items, max_iter, tol)
    most = n_annotators if most_slopes is None else most_slopes
    start = list(DEFAULT_SLOPES)
    if slopes is not None:
        given = np.atleast_1d(as_float_array(slopes, "slopes"))
        if given.ndim != 1 or given.size > most:
            raise ValueError(f"slopes must hold at most {most} numbers, got {slopes!r}")
        if not np.all((given >= -5) & (given <= 5)):
            raise ValueError(f"slopes must lie in [-5, 5], got {slopes!r}")
        start[:given.size] = given.tolist()
    coef = as_float_array(coef, "coef")
    if coef.shape != (2,) or not (np.isfinite(coef) & (np.abs(coef) <= 10)).all():
        raise ValueError(f"coef must be two numbers in [-10, 10], got {coef!r}")
    return start, coef.tolist()


def _live_settings(*, n_annotators: int = 4, slopes=None, gamma: float = -0.5,
                   missing: float = 0.0, seed: int = 0, n_items: int = 600,
                   coef=(2.0, -1.0), intercept: float = 0.0, l2: float = 1.0,
                   max_iter: int = 200, tol: float = 1e-6) -> dict:
    all_slopes, coef = _checked_settings(
        n_annotators=n_annotators, slopes=slopes, gamma=gamma, missing=missing, seed=seed,
        n_items=n_items, coef=coef, intercept=intercept, l2=l2, max_iter=max_iter, tol=tol,
        most_slopes=len(DEFAULT_SLOPES))
    return {"nAnnotators": int(n_annotators), "slopes": all_slopes, "gamma": float(gamma),
            "missing": float(missing), "seed": int(seed), "nItems": int(n_items),
            "coef": [float(c) for c in coef], "intercept": float(intercept),
            "l2": float(l2), "maxIter": int(max_iter), "tol": float(tol)}


def live_annotators_html(**settings) -> str:
    """Chapter 8's explorer as HTML that recomputes in the browser, with no kernel.

    One ``<style>``, a ``<div>`` and one inline ES module, ``static/bundle_annotators.js``:
    the simulation, majority vote, Dawid--Skene and the logistic-annotator EM of
    ``static/crowd_em.js`` and ``static/annotators_em.js`` (the package's algorithms step
    for step; ``tests/js/test_js_annotators.py`` checks agreement with
    :class:`~crowdlearn.LogisticAnnotators` and :class:`~crowdlearn.DawidSkene` to 1e-9) and
    the SVG view of ``static/annotators_view.js``. Nothing is loaded from the network and
    nothing is computed in the kernel. Keyword arguments: ``n_annotators`` (2 to 6, a
    slider in the page), ``slopes`` (up to 6), ``gamma``, ``missing``, ``seed``,
    ``n_items``, ``coef``, ``intercept``, ``l2``, ``max_iter``, ``tol``.
    """
    return _page_html("annotators", _live_settings(**settings))


def live_annotators_widget(**settings) -> LogisticAnnotatorsExplorer:
    """The same explorer as an ``anywidget`` for JupyterLab, Notebook and VS Code: a
    :class:`LogisticAnnotatorsExplorer` (which is one). Its ``result`` receives every view's
    settings, crowd (``item``, ``expert``, ``label``, ``X``, ``truth``) and results (the
    fitted parameters, posteriors, objective history and accuracies), which
    :func:`fit_explorer_crowd` recomputes with the package and the explorer turns into its
    ``last_result``. Keyword arguments as for :class:`LogisticAnnotatorsExplorer`."""
    return LogisticAnnotatorsExplorer(**settings)
