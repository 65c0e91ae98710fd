"""Seeded simulators of crowds and of the generative models in the book.

Every function takes ``random_state`` (``None``, an int or a
``np.random.Generator``) and draws only from ``np.random.default_rng``, so the
same seed gives the same data.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from crowdlearn._validation import (as_float_array, check_probability_matrix,
                                    check_random_state, check_scalar)
from crowdlearn._limits import check_crowd_size, get_size_limits
from crowdlearn.labels import CrowdLabels

__all__ = [
    "SimulatedCrowd",
    "one_coin_confusion",
    "random_confusion",
    "sample_categorical",
    "simulate_crowd",
    "simulate_naive_bayes",
    "simulate_latent_class",
]


def sample_categorical(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one class per row of ``prob`` (rows summing to one), vectorised."""
    cum = np.cumsum(prob, axis=-1)
    u = rng.random(prob.shape[:-1] + (1,))
    out = (u >= cum).sum(axis=-1)
    return np.minimum(out, prob.shape[-1] - 1)


def one_coin_confusion(accuracy, n_classes: int) -> np.ndarray:
    """Confusion matrices of "one-coin" experts.

    Expert ``r`` gives the true class with probability ``accuracy[r]``, its accuracy
    :math:`1 - \\epsilon_r`, and any other class with probability
    ``(1 - accuracy[r]) / (n_classes - 1)``, that is :math:`\\epsilon_r / (N - 1)`.

    Returns
    -------
    ndarray of shape (n_experts, n_classes, n_classes)

    Examples
    --------
    >>> one_coin_confusion([0.9], 3)[0]
    array([[0.9 , 0.05, 0.05],
           [0.05, 0.9 , 0.05],
           [0.05, 0.05, 0.9 ]])
    """
    acc = np.atleast_1d(as_float_array(accuracy, "accuracy"))
    if acc.ndim != 1 or np.isnan(acc).any() or (acc < 0).any() or (acc > 1).any():
        raise ValueError(f"accuracy must be a 1-D array of numbers in [0, 1], got {accuracy!r}")
    check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2)
    off = (1.0 - acc) / (n_classes - 1)
    conf = np.repeat(off[:, None, None], n_classes, axis=1).repeat(n_classes, axis=2)
    idx = np.arange(n_classes)
    conf[:, idx, idx] = acc[:, None]
    return conf


def random_confusion(n_experts: int, n_classes: int, *, accuracy=(0.6, 0.9),
                     concentration: float = 1.0, random_state=None) -> np.ndarray:
    """Random confusion matrices with diagonal entries drawn uniformly from ``accuracy``.

    The off-diagonal mass of each row is split by a symmetric Dirichlet with the
    given ``concentration`` (small values make experts confuse specific classes).
    """
    rng = check_random_state(random_state)
    check_scalar(n_experts, "n_experts", kind=numbers.Integral, low=1)
    check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2)
    check_scalar(concentration, "concentration", low=0.0, low_inclusive=False)
    try:
        lo, hi = (float(v) for v in accuracy)
    except (TypeError, ValueError):
        raise ValueError(f"accuracy must be a pair (low, high), got {accuracy!r}") from None
    if not (0.0 <= lo <= hi <= 1.0):
        raise ValueError(f"accuracy must be a pair (low, high) with 0 <= low <= high <= 1, "
                         f"got {accuracy!r}")
    diag = rng.uniform(lo, hi, size=(n_experts, n_classes))
    off = rng.dirichlet(np.full(n_classes - 1, concentration), size=(n_experts, n_classes))
    conf = np.empty((n_experts, n_classes, n_classes))
    for k in range(n_classes):
        others = [c for c in range(n_classes) if c != k]
        conf[:, k, k] = diag[:, k]
        conf[:, k, others] = (1 - diag[:, k, None]) * off[:, k, :]
    return conf


@dataclass
class SimulatedCrowd:
    """A simulated crowd: the labels, and the truth that generated them."""

    labels: CrowdLabels
    truth: np.ndarray
    confusion: np.ndarray
    class_prior: np.ndarray


def _check_simulation_size(n_items: int, n_experts: int, K: int) -> None:
    """The size limits of the crowd :func:`simulate_crowd` would draw, checked before
    anything is allocated: as a crowd a model reads, and its (n_items, n_experts) draws."""
    try:
        check_crowd_size(n_items, n_experts, K, n_items * n_experts)
    except ValueError as exc:  # (its hint about ids does not apply to a simulation)
        why = str(exc).replace("Check that the ids are indices 0..n-1 (use from_table for "
                               "arbitrary identifiers). ", "")
        raise ValueError(f"simulate_crowd(n_items={n_items:,}) with {n_experts:,} experts and "
                         f"{K} classes is beyond the size limits: {why}") from None
    need, limit = 8 * n_items * n_experts, get_size_limits().max_memory
    if need > limit:
        raise ValueError(f"simulate_crowd(n_items={n_items:,}) with {n_experts:,} experts "
                         f"would draw {n_items * n_experts:,} numbers ({need / 2**30:.1f} GiB) "
                         f"for who labels what, more than the size limits' max_memory "
                         f"({limit / 2**30:.1f} GiB; to go past it on purpose, use `with "
                         f"crowdlearn.size_limits(max_memory=...):`)")


def simulate_crowd(n_items: int, confusion, *, class_prior=None, missing: float = 0.0,
                   labels_per_item: int | None = None, random_state=None) -> SimulatedCrowd:
    """Draw true classes and expert labels from the Dawid--Skene model.

    Parameters
    ----------
    n_items : int
        Number of items.
    confusion : array-like of shape (n_experts, N, N)
        ``confusion[r, n, p] = P(expert r says p | true class n)``, the matrices
        :math:`M^{(r)}_{n,p}`.
    class_prior : array-like of shape (N,), optional
        Class probabilities (uniform by default).
    missing : float in [0, 1), default 0
        Each (item, expert) label is dropped independently with this probability.
    labels_per_item : int, optional
        Instead of ``missing``: each item is labelled by this many distinct experts
        chosen uniformly at random (the design of large crowdsourcing platforms).
    random_state : None, int or Generator

    Returns
    -------
    SimulatedCrowd

    Raises
    ------
    ValueError
        Before anything is drawn, when the crowd would be beyond the size limits
        (:func:`crowdlearn.size_limits`): its posterior, confusion matrices or fit
        beyond ``max_cells`` or ``max_memory`` (as a crowd a model reads), or the
        ``(n_items, n_experts)`` draws of who labels what beyond ``max_memory`` bytes.

    Examples
    --------
    >>> sim = simulate_crowd(1000, one_coin_confusion([0.8] * 5, 2), random_state=0)
    >>> sim.labels
    CrowdLabels(n_items=1000, n_experts=5, n_classes=2, n_labels=5000)
    """
    rng = check_random_state(random_state)
    check_scalar(n_items, "n_items", kind=numbers.Integral, low=1)
    conf = as_float_array(confusion, "confusion")
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2]:
        raise ValueError(f"confusion must have shape (n_experts, n_classes, n_classes): "
                         f"one square matrix per expert, rows the true class, got {conf.shape}")
    n_experts, K, _ = conf.shape
    _check_simulation_size(int(n_items), n_experts, K)
    check_probability_matrix(conf.reshape(-1, K), "confusion rows")
    prior = np.full(K, 1.0 / K) if class_prior is None else np.asarray(class_prior, float)
    check_probability_matrix(prior[None, :], "class_prior", n_cols=K)
    truth = sample_categorical(np.broadcast_to(prior, (n_items, K)), rng)
    if labels_per_item is not None:
        check_scalar(labels_per_item, "labels_per_item", kind=numbers.Integral, low=1,
                     high=n_experts)
        # distinct experts per item: the first labels_per_item of a random permutation
        keys = rng.random((n_items, n_experts))
        expert = np.argpartition(keys, labels_per_item - 1, axis=1)[:, :labels_per_item]
        expert = np.sort(expert, axis=1).ravel()
        item = np.repeat(np.arange(n_items), labels_per_item)
    else:
        check_scalar(missing, "missing", low=0.0, high=1.0, high_inclusive=False)
        keep = rng.random((n_items, n_experts)) >= missing
        item, expert = np.nonzero(keep)
    label = sample_categorical(conf[expert, truth[item]], rng)
    labels = CrowdLabels(item.astype(np.intp), expert.astype(np.intp), label.astype(np.intp),
                         n_items, n_experts, K)
    return SimulatedCrowd(labels, truth, conf, prior)


def simulate_naive_bayes(n_items: int, class_prior, feature_prob, *, random_state=None):
    """Draw ``(X, y)`` from a Bernoulli Naive Bayes model.

    Parameters
    ----------
    class_prior : array-like of shape (N,)
    feature_prob : array-like of shape (N, n_features)
        ``feature_prob[n, j] = P(x_j = 1 | y = n)``.

    Returns
    -------
    X : ndarray of shape (n_items, n_features), 0/1 floats
    y : ndarray of shape (n_items,), int
    """
    rng = check_random_state(random_state)
    check_scalar(n_items, "n_items", kind=numbers.Integral, low=1)
    prior = check_probability_matrix(np.atleast_2d(class_prior), "class_prior")[0]
    phi = as_float_array(feature_prob, "feature_prob")
    if phi.ndim != 2 or phi.shape[0] != prior.size or phi.shape[1] == 0:
        raise ValueError(f"feature_prob must have shape ({prior.size}, n_features), got {phi.shape}")
    if np.isnan(phi).any() or (phi < 0).any() or (phi > 1).any():
        raise ValueError("feature_prob must hold probabilities in [0, 1]")
    y = sample_categorical(np.broadcast_to(prior, (n_items, prior.size)), rng)
    X = (rng.random((n_items, phi.shape[1])) < phi[y]).astype(float)
    return X, y


def simulate_latent_class(n_items: int, class_prior, cond_prob, *, random_state=None):
    """Draw observations from a latent-class network: hidden class y, categorical children.

    Parameters
    ----------
    class_prior : array-like of shape (N,)
        ``P(y = n)``.
    cond_prob : list of arrays of shape (N, S_j)
        ``cond_prob[j][n, v] = P(child x_j = v | y = n)``.

    Returns
    -------
    X : ndarray of shape (n_items, n_children), int
    h : ndarray of shape (n_items,), int -- the hidden classes
    """
    rng = check_random_state(random_state)
    check_scalar(n_items, "n_items", kind=numbers.Integral, low=1)
    if len(cond_prob) == 0:
        raise ValueError("cond_prob is empty: at least one child is needed")
    prior = check_probability_matrix(np.atleast_2d(class_prior), "class_prior")[0]
    h = sample_categorical(np.broadcast_to(prior, (n_items, prior.size)), rng)
    cols = []
    for c, table in enumerate(cond_prob):
        table = check_probability_matrix(table, f"cond_prob[{c}]", n_rows=prior.size)
        cols.append(sample_categorical(table[h], rng))
    return np.stack(cols, axis=1), h
