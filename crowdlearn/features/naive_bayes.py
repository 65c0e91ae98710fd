"""Bernoulli Naive Bayes with N classes, binary features and hard or soft targets."""

from __future__ import annotations

import numbers

import numpy as np

from crowdlearn._base import BaseEstimator, normalize_log
from crowdlearn._limits import check_crowd_size
from crowdlearn._validation import (as_float_array, check_binary_matrix, check_int_array,
                                    check_scalar)
# defined with the kernel's other shared pieces, so that aggregation never imports features
from crowdlearn.aggregation._common import bernoulli_log_likelihood

__all__ = ["BernoulliNaiveBayes", "bernoulli_log_likelihood"]


class BernoulliNaiveBayes(BaseEstimator):
    """Naive Bayes for binary features with N classes, fitted by (smoothed) maximum likelihood.

    The model: :math:`P(y = n) = \\phi_n` and, given the class, the features are
    independent with :math:`P(x_j = 1 \\mid y = n) = \\phi_{j|n}`. With target
    weights :math:`q_i(n)` (one-hot for hard labels, a posterior for soft ones)
    and pseudo-count :math:`\\alpha` the estimates are

    .. math::

        \\phi_n = \\frac{\\sum_i q_i(n) + \\alpha}{\\sum_i \\sum_{n'} q_i(n') + N\\alpha},
        \\qquad
        \\phi_{j|n} = \\frac{\\sum_i q_i(n)\\, x^{(i)}_j + \\alpha}{\\sum_i q_i(n) + 2\\alpha}.

    With :math:`\\alpha = 0` these are the maximum-likelihood estimates derived
    in the book by Lagrange multipliers; with :math:`\\alpha = 1` they are Laplace
    smoothing, the MAP estimates under uniform Beta/Dirichlet(2) priors.

    Parameters
    ----------
    alpha : float, default 1.0
        Pseudo-count (>= 0). 0 gives the plain MLE, whose exact zero
        probabilities are handled (an impossible item gets ``-inf``, not NaN).
    n_classes : int, optional
        Number of classes when hard targets omit some class.

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_classes,)
    feature_prob_ : ndarray of shape (n_classes, n_features)
        ``feature_prob_[n, j] = P(x_j = 1 | y = n)``.
    class_count_ : ndarray of shape (n_classes,)
        Total target weight per class.
    feature_count_ : ndarray of shape (n_classes, n_features)
        Total weight of ``x_j = 1`` per class.
    n_features_in_ : int

    Examples
    --------
    >>> from crowdlearn import BernoulliNaiveBayes
    >>> X = [[1, 0], [1, 1], [0, 1], [0, 0]]
    >>> nb = BernoulliNaiveBayes(alpha=0).fit(X, [0, 0, 1, 1])
    >>> nb.class_prior_.tolist(), nb.feature_prob_.tolist()
    ([0.5, 0.5], [[1.0, 0.5], [0.0, 0.5]])
    >>> nb.predict([[1, 0], [0, 1]]).tolist()
    [0, 1]
    """

    def __init__(self, *, alpha: float = 1.0, n_classes: int | None = None):
        self._store_params(locals())

    @classmethod
    def from_params(cls, class_prior, feature_prob) -> "BernoulliNaiveBayes":
        """A model with the given parameters, as if fitted (for evaluating other parameters).

        Parameters
        ----------
        class_prior : array-like of shape (n_classes,)
            Non-negative, summing to one.
        feature_prob : array-like of shape (n_classes, n_features)
            ``P(x_j = 1 | y = n)``, each in [0, 1].

        Examples
        --------
        >>> nb = BernoulliNaiveBayes.from_params([0.5, 0.5], [[0.9, 0.2], [0.1, 0.6]])
        >>> bool(np.isclose(nb.log_likelihood([[1, 0]], [0]), np.log(0.5 * 0.9 * 0.8)))
        True
        """
        from crowdlearn._validation import check_probability_matrix
        prior = check_probability_matrix(
            np.atleast_2d(as_float_array(class_prior, "class_prior")), "class_prior")[0]
        phi = as_float_array(feature_prob, "feature_prob")
        if phi.ndim != 2 or phi.shape[0] != prior.size:
            raise ValueError(f"feature_prob must have shape ({prior.size}, n_features), "
                             f"got {phi.shape}")
        if not np.isfinite(phi).all() or (phi < 0).any() or (phi > 1).any():
            raise ValueError("feature_prob must hold probabilities in [0, 1]")
        model = cls(alpha=0.0, n_classes=prior.size)
        model.class_prior_ = prior
        model.feature_prob_ = phi
        model.n_features_in_ = phi.shape[1]
        return model

    def _targets(self, y, n_items):
        try:
            y_arr = np.asarray(y)
        except (TypeError, ValueError):
            raise ValueError("y could not be read as an array (ragged rows or mixed "
                             "contents?)") from None
        if y_arr.ndim == 2:
            if y_arr.dtype.kind not in "biuf":
                raise ValueError(f"soft targets y must be numeric weights, got dtype {y_arr.dtype}")
            W = np.asarray(y_arr, dtype=float)
            if W.shape[0] != n_items:
                raise ValueError(f"y has {W.shape[0]} rows but X has {n_items}")
            if not np.isfinite(W).all():
                raise ValueError("soft targets y contain NaN or inf")
            if (W < 0).any():
                raise ValueError("soft targets y must be non-negative weights")
            if W.shape[1] < 2:
                raise ValueError(f"soft targets need at least 2 classes, got shape {W.shape}")
            if self.n_classes is not None and W.shape[1] != self.n_classes:
                raise ValueError(f"y has {W.shape[1]} columns but n_classes={self.n_classes}")
            return W
        y_arr = check_int_array(y, "y", low=0)
        if y_arr.shape[0] != n_items:
            raise ValueError(f"y has {y_arr.shape[0]} entries but X has {n_items} rows")
        K = self.n_classes if self.n_classes is not None else max(int(y_arr.max()) + 1, 2)
        check_crowd_size(n_items, 1, K, n_items,
                         inferred=["n_classes"] if self.n_classes is None else [])
        check_int_array(y_arr, "y", high=K, high_name=f"n_classes={K}")
        W = np.zeros((n_items, K))
        W[np.arange(n_items), y_arr] = 1.0
        return W

    def fit(self, X, y, sample_weight=None):
        """Estimate the class prior and feature probabilities.

        Parameters
        ----------
        X : array-like of shape (n_items, n_features), binary
        y : array-like of shape (n_items,) with class indices, or (n_items, n_classes)
            non-negative weights (soft targets, e.g. an EM posterior or a one-hot
            matrix; any 2-D ``y`` is read as weights).
        sample_weight : array-like of shape (n_items,), optional
            Multiplies each item's target weights.
        """
        check_scalar(self.alpha, "alpha", low=0.0)
        if self.n_classes is not None:
            check_scalar(self.n_classes, "n_classes", kind=numbers.Integral, low=2)
        X = check_binary_matrix(X)
        W = self._targets(y, X.shape[0])
        if sample_weight is not None:
            sw = as_float_array(sample_weight, "sample_weight")
            if sw.shape != (X.shape[0],) or not np.isfinite(sw).all() or (sw < 0).any():
                raise ValueError(f"sample_weight must be {X.shape[0]} non-negative finite numbers")
            W = W * sw[:, None]
        self._fit_counts(W.sum(axis=0), W.T @ X)
        self.n_features_in_ = X.shape[1]
        return self

    def _fit_counts(self, class_count, feature_count):
        a = float(self.alpha)
        K = class_count.shape[0]
        total = class_count.sum()
        if total + K * a <= 0:
            raise ValueError("the targets carry no weight at all")
        empty = class_count + 2 * a <= 0
        if empty.any():
            raise ValueError(f"class(es) {np.flatnonzero(empty).tolist()} have no training "
                             f"weight, so their feature probabilities are 0/0 with alpha=0; "
                             f"use alpha > 0 or drop the class")
        self.class_count_ = class_count
        self.feature_count_ = feature_count
        self.class_prior_ = (class_count + a) / (total + K * a)
        self.feature_prob_ = (feature_count + a) / (class_count[:, None] + 2 * a)

    def joint_log_likelihood(self, X) -> np.ndarray:
        """``log P(x^(i), y = n)`` for each item and class, shape ``(n_items, n_classes)``."""
        self._check_fitted("feature_prob_")
        X = check_binary_matrix(X, n_cols=self.n_features_in_)
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        return bernoulli_log_likelihood(X, self.feature_prob_) + log_prior

    def _possible_jll(self, X) -> np.ndarray:
        """:meth:`joint_log_likelihood`, refusing items impossible under every class."""
        jll = self.joint_log_likelihood(X)
        dead = ~np.isfinite(jll).any(axis=1)
        if dead.any():
            raise ValueError(f"item(s) {np.flatnonzero(dead)[:5].tolist()} have probability 0 "
                             f"under every class (a feature value never seen in training with "
                             f"alpha=0); use alpha > 0")
        return jll

    def predict_log_proba(self, X) -> np.ndarray:
        """Log posterior ``log P(y = n | x^(i))``, computed in log space.

        Raises ``ValueError`` for an item that has probability 0 under every class.
        """
        jll = self._possible_jll(X)
        _, log_ev = normalize_log(jll)
        return jll - log_ev[:, None]

    def predict_proba(self, X) -> np.ndarray:
        """Posterior ``P(y = n | x^(i))``, shape ``(n_items, n_classes)``."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """Most probable class of each item.

        Raises ``ValueError`` for an item that has probability 0 under every class
        (rather than silently answering class 0).
        """
        return np.argmax(self._possible_jll(X), axis=1)

    def log_likelihood(self, X, y) -> float:
        """Joint log-likelihood ``sum_i log P(x_i, y_i)`` of hard-labelled data."""
        jll = self.joint_log_likelihood(X)
        y = check_int_array(y, "y", low=0, high=jll.shape[1])
        if y.shape[0] != jll.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {jll.shape[0]} rows")
        return float(jll[np.arange(y.size), y].sum())
