"""Majority vote: the baseline every crowd model is compared with."""

from __future__ import annotations

import numpy as np

from crowdlearn._base import BaseEstimator, Predictions, break_ties
from crowdlearn._validation import read_only
from crowdlearn.frames import IdResults
from crowdlearn.labels import _is_dataframe, as_crowd_labels, from_dataframe
from crowdlearn.aggregation._common import _resolve_skills
from crowdlearn.aggregation.weighted_vote import weighted_posterior

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

    With skills given to ``fit`` (crowd-kit's ``MajorityVote().fit(df, skills)``),
    every label counts with its worker's skill :math:`\\omega_r \\ge 0` instead of 1:

    .. math::

        \\hat q_i(n) = \\frac{\\sum_{r \\in R_i} \\omega_r\\, 1\\{y_r^{(i)} = n\\}}
                            {\\sum_{r \\in R_i} \\omega_r},

    uniform for an item whose labels all weigh 0. (For the Bayes-optimal log-odds
    weights of given accuracies, see :class:`~crowdlearn.WeightedMajorityVote`.)

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
        ``"skill"`` indexed by worker id when fitted on a DataFrame. (Not the skills
        given to ``fit``: those are in ``given_skills_``.)
    given_skills_ : ndarray of shape (n_experts,) or None
        The skills given to ``fit``, by worker index; None for the plain vote.
    n_items_, n_experts_, n_classes_ : int

    Examples
    --------
    >>> from crowdlearn import MajorityVote
    >>> mv = MajorityVote(tie_break="lowest").fit([[0, 0, 1], [1, 0, -1]])
    >>> mv.labels_.tolist(), mv.posterior_.tolist()
    ([0, 0], [[0.6666666666666666, 0.3333333333333333], [0.5, 0.5]])
    >>> mv.n_ties_
    1

    Votes weighted by skills known beforehand, by worker id (a dict or a pandas
    ``Series``) or by worker index (an array):

    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t2"],
    ...                    "worker": ["p1", "p2", "p3", "p1", "p2", "p3"],
    ...                    "label": [0, 0, 1, 1, 0, 1]})
    >>> skills = pd.Series({"p1": 0.5, "p2": 0.7, "p3": 0.4})
    >>> MajorityVote().fit_predict(df, skills).to_dict()
    {'t1': 0, 't2': 1}
    >>> MajorityVote().fit(df, skills={"p1": 0.1, "p2": 0.1, "p3": 0.9}).labels_.to_dict()
    {'t1': 1, 't2': 1}
    """

    def __init__(self, *, n_classes: int | None = None, tie_break: str = "random",
                 unlabelled: str = "error", random_state=0):
        self._store_params(locals())

    def fit(self, labels, skills=None):
        """Compute the votes for the given labels, weighted by ``skills`` if given.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``
        skills : dict, pandas Series or array-like of shape (n_experts,), optional
            Each worker's weight, a finite number >= 0 (crowd-kit's ``skills``; may be
            passed positionally, as there). A dict or ``Series`` is read by worker id
            (the original ids of a DataFrame or table, the indices otherwise): every
            worker of the labels needs one, extra ids are ignored. An array is read by
            worker index (for a DataFrame, the position of the id among the sorted
            ids) and needs one entry per worker. A missing worker, a wrong length, a
            duplicate id, or a negative, NaN or infinite skill is a ``ValueError``.
            ``None`` (default): the plain vote, every label counting 1. ``fit_predict``
            and ``fit_predict_proba`` pass their second argument on to ``fit``: give
            the skills there by position, as in crowd-kit's ``fit_predict(df, skills)``.

        Returns
        -------
        self
        """
        if self.tie_break not in ("random", "lowest"):
            raise ValueError(f"tie_break must be 'random' or 'lowest', got {self.tie_break!r}")
        if self.unlabelled not in ("error", "uniform"):
            raise ValueError(f"unlabelled must be 'error' or 'uniform', got {self.unlabelled!r}")
        crowd = as_crowd_labels(labels, n_classes=self.n_classes)
        weights = None if skills is None else _resolve_skills(skills, crowd, "linear")
        self._remember_ids(crowd)
        counts = self._vote_counts(crowd, weights)
        self.posterior_ = counts / counts.sum(axis=1, keepdims=True)
        top = counts == counts.max(axis=1, keepdims=True)
        self.n_ties_ = int((top.sum(axis=1) > 1).sum())
        if self.tie_break == "random":  # a coin per tied item, keyed on its id
            labels = break_ties(counts, crowd.item_ids, self.random_state)
        else:
            labels = np.argmax(top, axis=1)
        self._labels = read_only(labels)  # labels_ hands it out: nobody may change it
        self._agreement = _agreement_with(crowd, labels)
        self.given_skills_ = weights
        self.n_classes_ = crowd.n_classes
        self.n_items_ = crowd.n_items
        self.n_experts_ = crowd.n_experts
        return self

    def _vote_counts(self, crowd, weights) -> np.ndarray:
        """Votes per item and class (each label 1), or with skills their normalised sums
        (an item whose labels all weigh 0: uniform); an item without a label is refused
        or, with ``unlabelled="uniform"``, given one vote per class."""
        counts = crowd.vote_counts()
        empty = counts.sum(axis=1) == 0
        if empty.any() and self.unlabelled == "error":
            idx = np.flatnonzero(empty)
            raise ValueError(f"{idx.size} item(s) received no label, e.g. items "
                             f"{idx[:5].tolist()}; majority vote cannot decide them "
                             f"(pass unlabelled='uniform' to give them a uniform vote)")
        if weights is not None:  # sums in an order set by the values: ties stay ties
            return weighted_posterior(crowd, weights, "linear")  # uniform at weight 0
        counts[empty] = 1.0
        return counts

    def _skills(self) -> np.ndarray:
        """Each worker's agreement with the hard vote (``skills_``)."""
        return self._agreement.copy()

    def _hard_label_indices(self) -> np.ndarray:
        """The hard votes behind ``labels_``, broken by the ``tie_break`` rule (the same
        read-only array on every access: ``labels_[:] = 7`` raises instead of changing
        ``predict()``)."""
        self._check_fitted("_labels")
        return self._labels

    def _vote_new(self, labels, X=None) -> "MajorityVote":
        """The vote of new labels (on the fitted classes, if fitted); a new DataFrame is read
        onto the fitted classes (it may use only some of them). After a fit with skills the
        new labels are weighted by the same skills, by worker id (their workers must have
        been given one)."""
        if X is not None:
            raise ValueError("MajorityVote has no features: predict takes labels only")
        class_ids = getattr(self, "class_ids_", None)
        if _is_dataframe(labels) and class_ids is not None:
            labels = from_dataframe(labels, classes=class_ids)
        params = self.get_params()
        params["n_classes"] = getattr(self, "n_classes_", self.n_classes)
        given = getattr(self, "given_skills_", None)
        skills = None if given is None else \
            dict(zip(self._ids("expert", given.shape[0]).tolist(), given.tolist()))
        return MajorityVote(**params).fit(labels, skills)

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
