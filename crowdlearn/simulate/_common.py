"""What the simulators of item-dependent experts share (:mod:`.annotators`, :mod:`.sparse`).

Both draw Gaussian features, a logistic truth, then binary labels that are wrong with an
item-dependent probability. The helpers here only check and draw; each simulator still
calls them in its own order, so its random stream (and so every seeded data set) is the
one it always drew.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit

from crowdlearn._validation import check_finite_array, check_scalar
from crowdlearn.labels import CrowdLabels


def check_logistic_truth(n, n_name: str, missing, coef, intercept):
    """Check the number of items, ``missing`` and the truth's ``coef`` and ``intercept``.

    Returns ``(coef, intercept)`` as a 1-D float array and a float.
    """
    check_scalar(n, n_name, kind=numbers.Integral, low=1)
    check_scalar(missing, "missing", low=0.0, high=1.0, high_inclusive=False)
    coef = check_finite_array(coef, "coef", ndim=1)
    return coef, float(check_finite_array(intercept, "intercept", shape=()))


def check_features(feature_mean, feature_cov, d: int):
    """The mean and covariance of the ``d`` features: zero and the identity by default."""
    mean = (np.zeros(d) if feature_mean is None
            else check_finite_array(feature_mean, "feature_mean", shape=(d,)))
    cov = (np.eye(d) if feature_cov is None
           else check_finite_array(feature_cov, "feature_cov", shape=(d, d)))
    if d and (not np.allclose(cov, cov.T) or np.linalg.eigvalsh(cov).min() < -1e-10):
        raise ValueError("feature_cov must be symmetric positive semi-definite")
    return mean, cov


def draw_items(rng, n: int, mean, cov, coef, intercept: float):
    """Draw ``X ~ N(mean, cov)`` and ``y ~ Bernoulli(sigma(beta_0 + beta'x))`` (``coef``
    is beta, ``intercept`` beta_0).

    Returns ``(X, proba, truth)``. With no features ``X`` is ``(n, 0)`` and nothing is drawn
    for it (``multivariate_normal`` rejects an empty mean).
    """
    X = rng.multivariate_normal(mean, cov, size=n) if coef.shape[0] else np.zeros((n, 0))
    proba = expit(X @ coef + intercept)
    truth = (rng.random(n) < proba).astype(np.intp)
    return X, proba, truth


def binary_labels(truth, wrong, keep) -> CrowdLabels:
    """The binary labels of the kept ``(item, expert)`` pairs, flipped where ``wrong``.

    ``wrong`` and ``keep`` are boolean arrays of shape ``(n_items, n_experts)``, drawn by
    the caller (the simulators draw them in different orders).
    """
    n, K = keep.shape
    item, expert = np.nonzero(keep)
    label = np.where(wrong[item, expert], 1 - truth[item], truth[item]).astype(np.intp)
    return CrowdLabels(item.astype(np.intp), expert.astype(np.intp), label, n, K, 2)
