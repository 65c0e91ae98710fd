"""Majority vote: the baseline every crowd model is compared with."""

from __future__ import annotations

import numpy as np

from ._base import BaseEstimator
from ._validation import check_random_state
from .labels import as_crowd_labels

__all__ = ["MajorityVote"]


class MajorityVote(BaseEstimator):
    """Hard and soft majority vote over crowd labels.

    The soft vote of item :math:`i` is the fraction of its labels in each class,

    .. math:: \\hat q_i(k) = \\frac{1}{|R_i|} \\sum_{r \\in R_i} 1\\{y_r^{(i)} = k\\},

    where :math:`R_i` is the set of labels item :math:`i` received; the hard
    vote is its arg-max.

    Parameters
    ----------
    tie_break : {"random", "lowest"}, default "random"
        How a tie between the most-voted classes is broken: uniformly at random
        among the tied classes (drawn from ``random_state``), or in favour of the
        lowest class index (deterministic, but biased towards class 0).
    unlabelled : {"error", "uniform"}, default "error"
        What to do with items that received no label: raise a ``ValueError``
        naming them, or give them a uniform soft vote (and a tie-broken hard vote).
    random_state : None, int or Generator
        Seed for random tie-breaking.

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        Soft votes (rows sum to one).
    labels_ : ndarray of shape (n_items,)
        Hard votes.
    n_ties_ : int
        Number of items whose hard vote needed the tie rule.

    Examples
    --------
    >>> from crowdlearn import MajorityVote
    >>> mv = MajorityVote(tie_break="lowest").fit([[0, 0, 1], [1, 0, -1]])
    >>> mv.labels_.tolist(), mv.posterior_.tolist()
    ([0, 0], [[0.6666666666666666, 0.3333333333333333], [0.5, 0.5]])
    >>> mv.n_ties_
    1
    """

    _param_names = ("tie_break", "unlabelled", "random_state")

    def __init__(self, *, tie_break: str = "random", unlabelled: str = "error",
                 random_state=None):
        self.tie_break = tie_break
        self.unlabelled = unlabelled
        self.random_state = random_state

    def fit(self, labels, *, n_classes: int | None = None):
        """Compute the votes for the given labels.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, or (n_items, n_experts) matrix
        n_classes : int, optional
            Number of classes, if some class was never used.
        """
        if self.tie_break not in ("random", "lowest"):
            raise ValueError(f"tie_break must be 'random' or 'lowest', got {self.tie_break!r}")
        if self.unlabelled not in ("error", "uniform"):
            raise ValueError(f"unlabelled must be 'error' or 'uniform', got {self.unlabelled!r}")
        crowd = as_crowd_labels(labels, n_classes=n_classes)
        counts = crowd.vote_counts()
        totals = counts.sum(axis=1)
        empty = totals == 0
        if empty.any():
            if self.unlabelled == "error":
                idx = np.flatnonzero(empty)
                raise ValueError(f"{idx.size} item(s) received no label, e.g. items "
                                 f"{idx[:5].tolist()}; majority vote cannot decide them "
                                 f"(pass unlabelled='uniform' to give them a uniform vote)")
            counts[empty] = 1.0
            totals = counts.sum(axis=1)
        self.posterior_ = counts / totals[:, None]
        top = counts == counts.max(axis=1, keepdims=True)
        self.n_ties_ = int((top.sum(axis=1) > 1).sum())
        if self.tie_break == "random":
            rng = check_random_state(self.random_state)
            self.labels_ = np.argmax(top * (1.0 + rng.random(top.shape)), axis=1)
        else:
            self.labels_ = np.argmax(top, axis=1)
        self.n_classes_ = crowd.n_classes
        return self

    def fit_predict(self, labels, **kwargs) -> np.ndarray:
        """Fit and return the hard votes."""
        return self.fit(labels, **kwargs).labels_

    def predict(self, labels=None) -> np.ndarray:
        """Hard votes for ``labels`` (default: those fitted)."""
        if labels is not None:
            return MajorityVote(**self.get_params()).fit(labels, n_classes=getattr(
                self, "n_classes_", None)).labels_
        self._check_fitted()
        return self.labels_.copy()

    def predict_proba(self, labels=None) -> np.ndarray:
        """Soft votes for ``labels`` (default: those fitted)."""
        if labels is not None:
            return MajorityVote(**self.get_params()).fit(labels, n_classes=getattr(
                self, "n_classes_", None)).posterior_
        self._check_fitted()
        return self.posterior_.copy()
