"""Majority vote: the baseline every crowd model is compared with."""

from __future__ import annotations

import numpy as np

from crowdlearn._base import BaseEstimator, Predictions, break_ties
from crowdlearn._validation import read_only
from crowdlearn.frames import IdResults
from crowdlearn.labels import _is_dataframe, as_crowd_labels, from_dataframe

__all__ = ["MajorityVote"]


def _agreement_with(crowd, hard: np.ndarray) -> np.ndarray:
    """Fraction of each worker's labels equal to ``hard`` of their item (NaN: no label)."""
    n_j = np.bincount(crowd.expert, minlength=crowd.n_experts).astype(float)
    agree = np.bincount(crowd.expert, weights=(crowd.label == hard[crowd.item]).astype(float),
                        minlength=crowd.n_experts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_j > 0, agree / np.maximum(n_j, 1.0), np.nan)


class MajorityVote(IdResults, Predictions, BaseEstimator):
    """Hard and soft majority vote over crowd labels.

    The soft vote of item :math:`i` is the fraction of its labels in each class,

    .. math:: \\hat q_i(n) = \\frac{1}{|R_i|} \\sum_{r \\in R_i} 1\\{y_r^{(i)} = n\\},

    where :math:`R_i` is the set of experts who labelled item :math:`i` (the sum
    runs over the labels it received, a repeated label counting once per copy,
    and :math:`|R_i|` counts them); the hard vote is its arg-max.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes, if some class was never used (until 0.2.0 a keyword of
        ``fit``).
    tie_break : {"random", "lowest"}, default "random"
        How a tie between the most-voted classes is broken: uniformly at random
        among the tied classes, by a coin keyed on ``random_state`` and on the item's
        id (its index for labels without ids), so that neither the order of the rows
        nor the other items change an item's tie, and identical items split evenly; or
        in favour of the lowest class index (deterministic, but biased towards class 0).
    unlabelled : {"error", "uniform"}, default "error"
        What to do with items that received no label: raise a ``ValueError``
        naming them, or give them a uniform soft vote (and a tie-broken hard vote).
    random_state : None, int or Generator, default 0
        Seed for random tie-breaking. The default, 0, makes the ties (and so the
        hard votes) the same on every run; ``None`` draws fresh ties each time.
        (Before 0.2.0 the default was ``None``.)

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        Soft votes (rows sum to one).
    labels_ : ndarray of shape (n_items,), or pandas Series
        Hard votes, ties broken by the ``tie_break`` rule (with ``"random"`` this
        may differ from the other models' rule, the lowest tied class). Fitted on a
        pandas DataFrame of ``(task, worker, label)`` rows it is a ``Series`` of
        the original class ids indexed by task id; otherwise a read-only array of
        class indices.
    probas_ : ndarray or pandas DataFrame
        ``posterior_``, as a DataFrame by task id and class id when fitted on a
        DataFrame (see :class:`~crowdlearn.frames.IdResults`).
    n_ties_ : int
        Number of items whose hard vote needed the tie rule.
    skills_ : ndarray of shape (n_experts,), or pandas Series
        Each worker's agreement with the majority, as crowd-kit computes it: the
        fraction of the worker's labels equal to the hard vote (``labels_``) of
        their item; NaN for a worker with no label. A ``Series`` named
        ``"skill"`` indexed by worker id when fitted on a DataFrame.
    n_items_, n_experts_, n_classes_ : int

    Examples
    --------
    >>> from crowdlearn import MajorityVote
    >>> mv = MajorityVote(tie_break="lowest").fit([[0, 0, 1], [1, 0, -1]])
    >>> mv.labels_.tolist(), mv.posterior_.tolist()
    ([0, 0], [[0.6666666666666666, 0.3333333333333333], [0.5, 0.5]])
    >>> mv.n_ties_
    1
    """

    def __init__(self, *, n_classes: int | None = None, tie_break: str = "random",
                 unlabelled: str = "error", random_state=0):
        self._store_params(locals())

    def fit(self, labels):
        """Compute the votes for the given labels.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``

        Returns
        -------
        self
        """
        if self.tie_break not in ("random", "lowest"):
            raise ValueError(f"tie_break must be 'random' or 'lowest', got {self.tie_break!r}")
        if self.unlabelled not in ("error", "uniform"):
            raise ValueError(f"unlabelled must be 'error' or 'uniform', got {self.unlabelled!r}")
        crowd = as_crowd_labels(labels, n_classes=self.n_classes)
        self._remember_ids(crowd)
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
        if self.tie_break == "random":  # a coin per tied item, keyed on its id
            labels = break_ties(counts, crowd.item_ids, self.random_state)
        else:
            labels = np.argmax(top, axis=1)
        self._labels = read_only(labels)  # labels_ hands it out: nobody may change it
        self._agreement = _agreement_with(crowd, labels)
        self.n_classes_ = crowd.n_classes
        self.n_items_ = crowd.n_items
        self.n_experts_ = crowd.n_experts
        return self

    def _skills(self) -> np.ndarray:
        """Each worker's agreement with the hard vote (``skills_``)."""
        return self._agreement.copy()

    @property
    def labels_(self):
        """Hard votes, broken by the ``tie_break`` rule.

        A ``Series`` of original class ids indexed by task id when fitted on a
        DataFrame; otherwise an array of class indices (the same read-only array on
        every access: ``labels_[:] = 7`` raises instead of changing ``predict()``).
        """
        self._check_fitted("_labels")
        if not self._frame_out():
            return self._labels
        return self._by_item(self._ids("class", self.posterior_.shape[1])[self._labels],
                             "agg_label")

    def _vote_new(self, labels, X=None) -> "MajorityVote":
        """The vote of new labels (on the fitted classes, if fitted); a new DataFrame is read
        onto the fitted classes (it may use only some of them)."""
        if X is not None:
            raise ValueError("MajorityVote has no features: predict takes labels only")
        class_ids = getattr(self, "class_ids_", None)
        if _is_dataframe(labels) and class_ids is not None:
            labels = from_dataframe(labels, classes=class_ids)
        params = self.get_params()
        params["n_classes"] = getattr(self, "n_classes_", self.n_classes)
        return MajorityVote(**params).fit(labels)

    # the answers (predict_proba, predict, fit_predict: crowdlearn._base.Predictions)
    _new_needs_fit = False  # new labels are simply voted on

    def _proba_new(self, labels, X) -> np.ndarray:
        """Soft votes of new labels."""
        return self._vote_new(labels, X).posterior_

    def _labels_new(self, labels, X) -> np.ndarray:
        """Hard votes of new labels, broken by the ``tie_break`` rule."""
        return self._vote_new(labels, X)._labels

    def _fitted_labels(self) -> np.ndarray:
        """Hard votes of the fitted labels, broken by the ``tie_break`` rule."""
        return self._labels.copy()
