"""Small, seeded experiments comparing majority vote with Dawid--Skene EM.

The book's chapters and interactive explorers (:mod:`crowdlearn.widgets`) call
these functions instead of repeating the simulate-fit-score loop in notebook
cells. Everything is computed from simulated crowds of "one-coin" experts
(:func:`~crowdlearn.simulate.one_coin_confusion`), whose only quality is an
error rate, so the truth is known and the estimates can be scored.

* :func:`compare_on_simulated_crowd` -- one crowd, both aggregators, all the
  numbers a figure needs (:class:`CrowdComparison`).
* :func:`accuracy_sweep` -- the same comparison over a grid of one setting
  (``"missing"``, ``"alpha"``, ``"n_items"``, ...), repeated over seeds
  (:class:`Sweep`).
* :func:`oracle_posterior` -- Bayes' rule with the *true* parameters, the
  ceiling any aggregator can reach.
* :func:`expert_error_rates` -- the error rate implied by confusion matrices.

Randomness comes only from ``np.random.default_rng``: the same seed gives the
same crowd, the same votes and the same fit.
"""

from __future__ import annotations

import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np

from crowdlearn._base import normalize_log
from crowdlearn._validation import as_float_array, check_scalar
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.exceptions import ConvergenceWarning
from crowdlearn.labels import CrowdLabels, as_crowd_labels
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

__all__ = [
    "CrowdComparison",
    "Sweep",
    "accuracy_sweep",
    "compare_on_simulated_crowd",
    "expert_error_rates",
    "oracle_posterior",
]


def expert_error_rates(confusion, class_prior=None) -> np.ndarray:
    r"""Probability that each expert gives a wrong label.

    .. math:: \epsilon_r = \sum_n \phi_n \big(1 - M^{(r)}_{n,n}\big)

    Parameters
    ----------
    confusion : array-like of shape (n_experts, N, N)
        ``confusion[r, n, p] = P(expert r says p | true class n)``, the
        :math:`M^{(r)}_{n,p}`.
    class_prior : array-like of shape (N,), optional
        :math:`\phi`; uniform when omitted.

    Returns
    -------
    ndarray of shape (n_experts,)

    Examples
    --------
    >>> from crowdlearn.simulate import one_coin_confusion
    >>> expert_error_rates(one_coin_confusion([0.9, 0.6], 3)).round(2).tolist()
    [0.1, 0.4]
    """
    conf = np.asarray(confusion, dtype=float)
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2]:
        raise ValueError(f"confusion must have shape (n_experts, K, K), got {conf.shape}")
    K = conf.shape[1]
    prior = np.full(K, 1.0 / K) if class_prior is None else np.asarray(class_prior, float)
    if prior.shape != (K,):
        raise ValueError(f"class_prior must have shape ({K},), got {prior.shape}")
    diag = np.diagonal(conf, axis1=1, axis2=2)  # (n_experts, K)
    return (1.0 - diag) @ prior


def oracle_posterior(labels, confusion, class_prior) -> np.ndarray:
    r"""Posterior of the true classes under the *true* Dawid--Skene parameters.

    .. math:: P(y^{(i)} = n \mid \mathcal{D}) \propto \phi_n
              \prod_{r \in R_i} M^{(r)}_{n,\, y^{(i)}_r}

    (a repeated label being one more factor).

    This is Bayes' rule with parameters an aggregator would have to learn;
    its accuracy is the ceiling for EM on the same crowd. Items nobody
    labelled get the class prior.

    Parameters
    ----------
    labels : CrowdLabels, (item, expert, label) tuple or (n_items, n_experts) matrix
    confusion : array-like of shape (n_experts, N, N)
    class_prior : array-like of shape (N,)

    Returns
    -------
    ndarray of shape (n_items, K)

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.simulate import one_coin_confusion
    >>> post = oracle_posterior(np.array([[0, 0, 1]]), one_coin_confusion([0.9, 0.9, 0.6], 2), [0.5, 0.5])
    >>> post.round(3).tolist()
    [[0.982, 0.018]]
    """
    conf = np.asarray(confusion, dtype=float)
    prior = np.asarray(class_prior, dtype=float)
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2] or prior.shape != conf.shape[1:2]:
        raise ValueError(f"confusion must have shape (n_experts, K, K) and class_prior shape "
                         f"(K,), got {conf.shape} and {prior.shape}")
    crowd = as_crowd_labels(labels, n_classes=conf.shape[1])
    if crowd.n_experts > conf.shape[0]:
        raise ValueError(f"the labels come from {crowd.n_experts} experts but confusion "
                         f"describes {conf.shape[0]}")
    n, K = crowd.n_items, conf.shape[1]
    with np.errstate(divide="ignore"):
        log_conf = np.log(conf[crowd.expert, :, crowd.label])  # (n_labels, K)
        log_joint = np.log(prior) + np.stack(
            [np.bincount(crowd.item, weights=log_conf[:, k], minlength=n) for k in range(K)],
            axis=1)
    q, log_evidence = normalize_log(log_joint)
    if not np.isfinite(log_evidence).all():
        raise ValueError("some item has probability 0 under every class with these parameters")
    return q


@dataclass
class CrowdComparison:
    """Majority vote and Dawid--Skene EM on one simulated crowd of one-coin experts.

    Attributes
    ----------
    labels : CrowdLabels
        The simulated labels.
    truth : ndarray of shape (n_items,)
        The true classes.
    mv_accuracy, em_accuracy, oracle_accuracy : float
        Fraction of all items each method gets right: majority vote (items
        nobody labelled get a uniform vote, i.e. a random guess), Dawid--Skene
        EM, and Bayes' rule with the true parameters (:func:`oracle_posterior`).
    true_confusion, estimated_confusion : ndarray of shape (n_experts, K, K)
        The matrices that generated the labels and EM's estimates.
    true_error_rates, estimated_error_rates : ndarray of shape (n_experts,)
        The experts' error rates (under the uniform true prior) and EM's
        estimate of them (under EM's class prior), see :func:`expert_error_rates`.
    confusion_mae : float
        Mean absolute difference between the estimated and true confusion entries.
    class_prior : ndarray of shape (K,)
        EM's estimate of the class prior.
    log_likelihood_history : ndarray of shape (n_iter + 1,)
        EM's objective after every E-step (``DawidSkene.log_likelihood_history_``).
    n_iter : int
    converged : bool
        Whether EM met its tolerance within ``max_iter`` (no warning is raised
        when it did not: the flag says so).
    n_labels, n_unlabelled : int
        Labels drawn, and items that received none.
    em_seconds : float
        Wall time of the EM fit alone.
    settings : dict
        What the crowd and the fit were made with: ``error_rates`` (list),
        ``n_experts``, ``n_items``, ``n_classes``, ``missing``, ``alpha``,
        ``seed`` (the ``random_state`` given), ``max_iter``, ``tol``.
    """

    labels: CrowdLabels
    truth: np.ndarray
    mv_accuracy: float
    em_accuracy: float
    oracle_accuracy: float
    true_confusion: np.ndarray
    estimated_confusion: np.ndarray
    true_error_rates: np.ndarray
    estimated_error_rates: np.ndarray
    confusion_mae: float
    class_prior: np.ndarray
    log_likelihood_history: np.ndarray
    n_iter: int
    converged: bool
    n_labels: int
    n_unlabelled: int
    em_seconds: float
    settings: dict

    @property
    def n_experts(self) -> int:
        """Number of experts in the crowd."""
        return int(self.true_confusion.shape[0])


def _check_error_rates(error_rates) -> np.ndarray:
    try:
        err = np.atleast_1d(as_float_array(error_rates, "error_rates"))
    except ValueError as exc:  # strings such as '0.1' are not read as numbers
        raise ValueError(f"error_rates must be a non-empty 1-D array of numbers in [0, 1]: "
                         f"{exc}") from None
    if err.ndim != 1 or err.size == 0 or not np.isfinite(err).all() \
            or (err < 0).any() or (err > 1).any():
        raise ValueError(f"error_rates must be a non-empty 1-D array of numbers in [0, 1], "
                         f"got {error_rates!r}")
    return err


def _timed_fit_without_warning(model, labels) -> float:
    """Fit ``model`` on ``labels`` with its ConvergenceWarning silenced (``converged_``
    reports a run that hit ``max_iter``); the seconds the fit took."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(labels)
    return time.perf_counter() - start


def compare_on_simulated_crowd(error_rates, *, n_items: int = 500, n_classes: int = 3,
                               missing: float = 0.0, alpha: float = 0.0,
                               random_state=0, max_iter: int = 200,
                               tol: float = 1e-6) -> CrowdComparison:
    """Simulate a crowd of one-coin experts, aggregate it both ways, score both.

    Parameters
    ----------
    error_rates : array-like of shape (n_experts,)
        Expert ``j`` gives a wrong label with probability ``error_rates[j]``,
        spread evenly over the other classes (``1 - (K-1)/K`` is a random guess).
    n_items : int, default 500
    n_classes : int, default 3
    missing : float in [0, 1), default 0
        Each (item, expert) label is dropped with this probability, so at high
        values some items get no label at all. Majority vote cannot decide
        those, so it is run with ``unlabelled="uniform"`` (a random guess);
        EM gives them its class prior.
    alpha : float, default 0
        Dirichlet pseudo-count of :class:`~crowdlearn.DawidSkene`.
    random_state : int or None, default 0
        Seeds one ``np.random.default_rng`` for the crowd; the vote's tie-breaks
        use the same seed.
    max_iter, tol
        Passed to :class:`~crowdlearn.DawidSkene`. A run that hits ``max_iter``
        is reported through ``converged`` instead of a warning.

    Returns
    -------
    CrowdComparison

    Examples
    --------
    >>> res = compare_on_simulated_crowd([0.1, 0.2, 0.5, 0.6, 0.6], random_state=0)
    >>> res.estimated_confusion.shape
    (5, 3, 3)
    >>> bool(res.em_accuracy > res.mv_accuracy)
    True
    >>> res.estimated_error_rates.round(1).tolist()
    [0.1, 0.2, 0.5, 0.6, 0.6]
    """
    err = _check_error_rates(error_rates)
    check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2)
    rng = np.random.default_rng(random_state)
    true_conf = one_coin_confusion(1.0 - err, n_classes)
    sim = simulate_crowd(n_items, true_conf, missing=missing, random_state=rng)
    if sim.labels.n_labels == 0:
        raise ValueError(f"the simulated crowd gave no label at all (missing={missing}, "
                         f"{err.size} experts, {n_items} items); lower missing")
    mv = MajorityVote(n_classes=n_classes, unlabelled="uniform",
                      random_state=random_state).fit(sim.labels)
    ds = DawidSkene(n_classes=n_classes, alpha=alpha, max_iter=max_iter, tol=tol)
    em_seconds = _timed_fit_without_warning(ds, sim.labels)
    oracle = oracle_posterior(sim.labels, sim.confusion, sim.class_prior)
    truth = sim.truth
    return CrowdComparison(
        labels=sim.labels,
        truth=truth,
        mv_accuracy=float(np.mean(mv.labels_ == truth)),
        em_accuracy=float(np.mean(ds.predict() == truth)),
        oracle_accuracy=float(np.mean(oracle.argmax(axis=1) == truth)),
        true_confusion=true_conf,
        estimated_confusion=ds.confusion_,
        true_error_rates=expert_error_rates(true_conf, sim.class_prior),
        estimated_error_rates=expert_error_rates(ds.confusion_, ds.class_prior_),
        confusion_mae=float(np.mean(np.abs(ds.confusion_ - true_conf))),
        class_prior=ds.class_prior_,
        log_likelihood_history=ds.log_likelihood_history_,
        n_iter=int(ds.n_iter_),
        converged=bool(ds.converged_),
        n_labels=sim.labels.n_labels,
        n_unlabelled=int(sim.labels.unlabelled_items().size),
        em_seconds=em_seconds,
        settings={"error_rates": err.tolist(), "n_experts": int(err.size),
                  "n_items": int(n_items), "n_classes": int(n_classes),
                  "missing": float(missing), "alpha": float(alpha), "seed": random_state,
                  "max_iter": max_iter, "tol": tol},
    )


@dataclass
class Sweep:
    """Majority vote against EM over a grid of one setting.

    Attributes
    ----------
    parameter : str
        The setting varied (a keyword of :func:`compare_on_simulated_crowd`).
    values : ndarray of shape (n_values,)
    mv_accuracy, em_accuracy, oracle_accuracy : ndarray of shape (n_values, n_repeats)
        Accuracy of each method, one column per repeat (seed).
    confusion_mae : ndarray of shape (n_values, n_repeats)
        Mean absolute error of EM's confusion matrices.
    n_unlabelled : ndarray of shape (n_values, n_repeats)
        Items that received no label.
    seeds : ndarray of shape (n_repeats,)
        Seed of each repeat, shared by all values (common random numbers, so
        the curves differ by the setting, not by the luck of the draw).
    """

    parameter: str
    values: np.ndarray
    mv_accuracy: np.ndarray
    em_accuracy: np.ndarray
    oracle_accuracy: np.ndarray
    confusion_mae: np.ndarray
    n_unlabelled: np.ndarray
    seeds: np.ndarray


_SWEEPABLE = ("missing", "alpha", "n_items", "n_classes")


def accuracy_sweep(parameter: str, values, error_rates, *, n_repeats: int = 3,
                   random_state=0, **settings) -> Sweep:
    """Run :func:`compare_on_simulated_crowd` over a grid of one setting.

    Parameters
    ----------
    parameter : {"missing", "alpha", "n_items", "n_classes"}
        The keyword of :func:`compare_on_simulated_crowd` to vary.
    values : array-like
        Its values.
    error_rates : array-like of shape (n_experts,)
    n_repeats : int, default 3
        Crowds drawn per value; repeat ``r`` uses the same seed for every value.
    random_state : int or None, default 0
        Seeds the generator that draws the repeats' seeds.
    **settings
        Other keywords of :func:`compare_on_simulated_crowd` (fixed).

    Returns
    -------
    Sweep

    Examples
    --------
    Majority vote loses more than EM as labels go missing:

    >>> sw = accuracy_sweep("missing", [0.0, 0.6], [0.1, 0.2, 0.5, 0.6, 0.6], n_repeats=2)
    >>> sw.em_accuracy.shape
    (2, 2)
    >>> bool((sw.em_accuracy.mean(axis=1) >= sw.mv_accuracy.mean(axis=1)).all())
    True
    """
    if parameter not in _SWEEPABLE:
        raise ValueError(f"parameter must be one of {_SWEEPABLE}, got {parameter!r}")
    if parameter in settings:
        raise ValueError(f"{parameter!r} is the parameter swept; do not also fix it")
    check_scalar(n_repeats, "n_repeats", kind=numbers.Integral, low=1)
    vals = np.asarray(values)
    if vals.ndim != 1 or vals.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {vals.shape}")
    seeds = np.random.default_rng(random_state).integers(2**31 - 1, size=n_repeats)
    shape = (vals.size, n_repeats)
    out = {name: np.empty(shape) for name in ("mv_accuracy", "em_accuracy", "oracle_accuracy",
                                               "confusion_mae", "n_unlabelled")}
    for a, value in enumerate(vals.tolist()):
        for r, seed in enumerate(seeds.tolist()):
            res = compare_on_simulated_crowd(error_rates, random_state=seed,
                                             **{parameter: value}, **settings)
            for name, arr in out.items():
                arr[a, r] = getattr(res, name)
    out["n_unlabelled"] = out["n_unlabelled"].astype(int)
    return Sweep(parameter, vals, seeds=seeds, **out)
