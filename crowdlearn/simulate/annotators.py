"""Seeded simulators of annotators whose reliability depends on the item.

Like :mod:`crowdlearn.simulate`, every function takes ``random_state``
(``None``, an int or a ``np.random.Generator``) and draws only from
``np.random.default_rng``, so the same seed gives the same data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit

from crowdlearn._validation import check_finite_array, check_random_state
from crowdlearn.labels import CrowdLabels
from crowdlearn.simulate._common import (binary_labels, check_features, check_logistic_truth,
                                         draw_items)

__all__ = ["SimulatedAnnotators", "simulate_logistic_annotators"]


class SimulatedAnnotators(NamedTuple):
    """Features, labels, truth and reliabilities drawn by :func:`simulate_logistic_annotators`."""

    X: np.ndarray         # (n_items, d)
    labels: CrowdLabels   # binary labels, n_experts = n_annotators
    truth: np.ndarray     # (n_items,) in {0, 1}
    eta: np.ndarray       # (n_items, n_annotators): P(annotator t labels item i correctly)


def simulate_logistic_annotators(n_items: int, coef, intercept, reliability_coef,
                                 reliability_intercept, *, missing: float = 0.0,
                                 feature_mean=None, feature_cov=None,
                                 random_state=None) -> SimulatedAnnotators:
    r"""Draw items, truths and labels from the model of :class:`~crowdlearn.LogisticAnnotators`.

    :math:`x^{(i)} \sim \mathcal{N}(\text{feature\_mean}, \text{feature\_cov})`,
    :math:`y^{(i)} \sim \text{Bernoulli}(\sigma(\beta_0 + \beta^\top x^{(i)}))`, and
    expert (annotator) :math:`r` reports :math:`y^{(i)}_r = y^{(i)}` with probability
    :math:`\eta_r(x^{(i)}) = \sigma(w_r^\top x^{(i)} - \gamma_r)`, :math:`1 - y^{(i)}`
    otherwise.

    Parameters
    ----------
    n_items : int
    coef : array-like of shape (n_features,)
        :math:`\beta`.
    intercept : float
        :math:`\beta_0`.
    reliability_coef : array-like of shape (n_annotators, n_features)
        :math:`w_r`, row ``r``.
    reliability_intercept : array-like of shape (n_annotators,)
        :math:`\gamma_r` (entering with a minus sign).
    missing : float in [0, 1), default 0
        Each (item, annotator) label is dropped independently with this probability.
    feature_mean : array-like of shape (n_features,), optional
        Mean of the features (default zero).
    feature_cov : array-like of shape (n_features, n_features), optional
        Covariance of the features (default the identity).
    random_state : None, int or Generator

    Returns
    -------
    SimulatedAnnotators
        ``(X, labels, truth, eta)``; ``eta[i, r]`` is :math:`\eta_r(x^{(i)})`, given for
        every pair, labelled or not.

    Examples
    --------
    >>> sim = simulate_logistic_annotators(500, [1.0, 0.0], 0.0, [[2.0, 0.0], [0.0, 0.0]],
    ...                                    [0.0, -2.0], missing=0.2, random_state=0)
    >>> sim.X.shape, sim.eta.shape, sim.labels.n_experts
    ((500, 2), (500, 2), 2)
    >>> round(float(sim.eta[:, 1].mean()), 3)   # annotator 1: sigma(2) everywhere
    0.881
    """
    rng = check_random_state(random_state)
    alpha, beta = check_logistic_truth(n_items, "n_items", missing, coef, intercept)
    d = alpha.shape[0]
    W = check_finite_array(reliability_coef, "reliability_coef", ndim=2)
    if W.shape[1] != d:
        raise ValueError(f"reliability_coef must have shape (n_annotators, {d}), got {W.shape}")
    T = W.shape[0]
    if T == 0:
        raise ValueError("reliability_coef has no rows: at least one annotator is needed")
    gamma = check_finite_array(reliability_intercept, "reliability_intercept", shape=(T,))
    mean, cov = check_features(feature_mean, feature_cov, d)
    X, _, truth = draw_items(rng, n_items, mean, cov, alpha, beta)
    eta = expit(X @ W.T - gamma)
    # which labels are kept is drawn before which are right (the reverse of .sparse)
    keep = rng.random((n_items, T)) >= missing
    correct = rng.random((n_items, T)) < eta
    return SimulatedAnnotators(X, binary_labels(truth, ~correct, keep), truth, eta)
