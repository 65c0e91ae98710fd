r"""Weighted majority votes: fixed skills, Wawa and Zero-Based Skill.

Three aggregators in which every worker's vote counts with a weight that
depends on the worker's *skill*, for worker (expert) :math:`r` an accuracy
:math:`1 - \epsilon_r \in [0, 1]` (:math:`\epsilon_r` its error rate):

* :class:`WeightedMajorityVote` -- the skills are given;
* :class:`Wawa` -- "worker agreement with aggregate": the skills are the
  workers' agreement with the plain majority vote;
* :class:`ZeroBasedSkill` -- the skills and the weighted vote are refined in
  turn, by small steps, starting from equal skills.

All three share one voting rule (``weights="log-odds"`` or ``"linear"``, see
:class:`WeightedMajorityVote`) and one tie rule: the hard label ``labels_`` is
the arg-max of ``posterior_``, the **lowest class index** winning a tie (the
rule of :class:`~crowdlearn.frames.IdResults`). crowd-kit breaks ties by
pandas' ``idxmax`` over columns in the order ``value_counts`` left them, which
is not always the lowest class, so on tied items the two may differ.
Items that received no label, or whose labels all carry weight zero, get a
uniform posterior (so, by the tie rule, class 0). The weighted sums add each item's
terms in an order set by their class and skill alone, never by the workers' numbers:
renumbering the items, the workers (with their skills) or the rows gives every item
the same vote, ties included.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from crowdlearn._base import BaseEstimator, Predictions, posterior_or_refuse
from crowdlearn._validation import as_float_array, check_scalar
from crowdlearn.frames import IdResults
from crowdlearn.labels import CrowdLabels, as_crowd_labels
from crowdlearn.aggregation._common import (_canonical_order, _new_crowd, _read_gold,
                                            _resolve_skills)

__all__ = ["GoldMajorityVote", "WeightedMajorityVote", "Wawa", "ZeroBasedSkill"]

_WEIGHTS = ("log-odds", "linear")


# -- shared pieces -----------------------------------------------------------------------------
def _check_weights(weights) -> str:
    if not isinstance(weights, str) or weights not in _WEIGHTS:
        raise ValueError(f"weights must be 'log-odds' or 'linear', got {weights!r}")
    return weights


def log_odds_weights(skills, n_classes: int) -> np.ndarray:
    r"""Bayes-optimal vote weights :math:`\omega_r = \log\frac{(N-1)(1-\epsilon_r)}{\epsilon_r}`.

    ``skills`` are the accuracies :math:`1 - \epsilon_r`. ``+inf`` for a skill of
    1, ``-inf`` for a skill of 0, and 0 for a worker at chance, a skill of
    :math:`1/N`.
    """
    p = as_float_array(skills, "skills")
    with np.errstate(divide="ignore"):
        return np.log(n_classes - 1) + np.log(p) - np.log1p(-p)


def _value_order(crowd: CrowdLabels, skills: np.ndarray) -> np.ndarray:
    """The labels ordered by item, class and the skill of the worker who gave them: every
    sum over an item's labels then adds its terms in an order set by their values alone,
    not by the workers' numbers, so equal votes by equally skilled workers tie exactly
    whatever the workers are called (floating-point sums depend on their order)."""
    _, rank = np.unique(skills, return_inverse=True)
    key = (crowd.item.astype(np.int64) * crowd.n_classes + crowd.label) \
        * (int(rank.max(initial=0)) + 1) + rank.reshape(-1)[crowd.expert]
    return np.argsort(key, kind="stable")


def _weighted_scores(crowd: CrowdLabels, skills: np.ndarray, weights: str) -> np.ndarray:
    """Per item and class: the weighted vote (linear) or the one-coin log-likelihood
    (log-odds), each sum taken in the order of :func:`_value_order`."""
    n, K = crowd.n_items, crowd.n_classes
    order = _value_order(crowd, skills)
    item, label, skill = crowd.item[order], crowd.label[order], skills[crowd.expert[order]]
    if weights == "linear":
        return np.bincount(item * K + label, weights=skill, minlength=n * K).reshape(n, K)
    with np.errstate(divide="ignore"):
        right = np.log(skill)
        wrong = np.log1p(-skill) - np.log(K - 1)
    scores = np.empty((n, K))
    for k in range(K):
        scores[:, k] = np.bincount(item, weights=np.where(label == k, right, wrong),
                                   minlength=n)
    return scores


def weighted_posterior(crowd: CrowdLabels, skills: np.ndarray, weights: str) -> np.ndarray:
    r"""The posterior of a weighted vote, shape ``(n_items, n_classes)``.

    ``"linear"``: :math:`\sum_{r \in R_i} (1 - \epsilon_r)\, 1\{y^{(i)}_r = n\}`
    (the skills :math:`1 - \epsilon_r` as weights) normalised over the classes
    :math:`n` (uniform when the weights sum to 0). ``"log-odds"``: the softmax of
    :math:`\sum_{r \in R_i} \omega_r 1\{y^{(i)}_r = n\}`, computed as the one-coin posterior
    (see :class:`WeightedMajorityVote`) so that skills of exactly 0 or 1 give
    zero probabilities, never NaN.
    """
    scores = _weighted_scores(crowd, skills, weights)
    K = crowd.n_classes
    if weights == "linear":
        total = scores.sum(axis=1, keepdims=True)
        zero = total[:, 0] <= 0
        total[zero] = 1.0
        post = scores / total
        post[zero] = 1.0 / K
        return post
    return posterior_or_refuse(
        scores, "item(s) {rows} have probability 0 under every class: workers with skill "
        "exactly 0 or 1 contradict each other there (log-odds weights are infinite at those "
        "skills)")


def _agreement(crowd: CrowdLabels, hard: np.ndarray) -> np.ndarray:
    """Fraction of each worker's labels equal to ``hard`` of their item (1/N with no label)."""
    n_j = np.bincount(crowd.expert, minlength=crowd.n_experts).astype(float)
    agree = np.bincount(crowd.expert, weights=(crowd.label == hard[crowd.item]).astype(float),
                        minlength=crowd.n_experts)
    out = np.full(crowd.n_experts, 1.0 / crowd.n_classes)
    has = n_j > 0
    out[has] = agree[has] / n_j[has]
    return out


_SEVERAL = (list, tuple, set, frozenset)  # several known classes of one item, in a dict


def _gold_layers(gold) -> list | None:
    """Several known classes per item as layers of ``{item: class}`` (layer ``k`` holds the
    ``k``-th class given for each item), or None when ``gold`` gives one class per item.
    Several classes come as a pandas Series whose index repeats an item (crowd-kit's
    form) or as a dict mapping an item to a list, tuple or set of classes."""
    if type(gold).__module__.split(".")[0] == "pandas" and hasattr(gold, "index") \
            and not hasattr(gold, "columns"):
        if gold.index.is_unique:
            return None
        pairs = zip(gold.index.tolist(), gold.tolist())
    elif isinstance(gold, Mapping) and any(isinstance(v, _SEVERAL) for v in gold.values()):
        pairs = []
        for item, value in gold.items():
            classes = list(value) if isinstance(value, _SEVERAL) else [value]
            if not classes:
                raise ValueError(f"gold gives item {item!r} an empty collection of classes "
                                 f"(leave the item out if its class is unknown)")
            pairs.extend((item, c) for c in classes)
    else:
        return None
    layers: list = []
    seen: dict = {}
    for item, cls in pairs:
        k = seen.get(item, 0)
        seen[item] = k + 1
        if k == len(layers):
            layers.append({})
        layers[k][item] = cls
    return layers


def _read_gold_classes(gold, crowd: CrowdLabels) -> np.ndarray:
    """The known classes of the items as a boolean matrix ``(n_items, n_classes)``: True
    for every class given as a gold label of the item (none for an item without gold)."""
    layers = _gold_layers(gold)
    accepted = np.zeros((crowd.n_items, crowd.n_classes), dtype=bool)
    for layer in ([gold] if layers is None else layers):
        truth = _read_gold(layer, crowd)
        known = np.flatnonzero(truth >= 0)
        accepted[known, truth[known]] = True
    return accepted


def _read(labels, n_classes) -> CrowdLabels:
    if labels is None:
        raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) tuple, "
                         "a DataFrame or an (n_items, n_experts) matrix with -1 for missing")
    if n_classes is not None:
        check_scalar(n_classes, "n_classes", kind=numbers.Integral, low=2)
    crowd = as_crowd_labels(labels, n_classes=n_classes)
    if crowd.n_labels == 0:
        raise ValueError("labels holds no label at all")
    # sums of weights over the labels in one order: the same votes (and ties) whatever
    # the order of the rows
    return _canonical_order(crowd)


class _VoteBase(IdResults, Predictions, BaseEstimator):
    """What the skill-weighted votes share: reading the labels, the weighted vote under
    the skills each one finds (``_fit_skills``), the fitted state and prediction."""

    def _check_params(self):
        _check_weights(self.weights)

    def _fit_skills(self, crowd: CrowdLabels):
        """``(skills, weighting)``: each worker's skill and how it weighs its labels
        ("log-odds" or "linear"); may set the vote's own fitted attributes."""
        raise NotImplementedError

    def fit(self, labels):
        """Find the workers' skills (if the vote has any to find) and compute the
        weighted vote of ``labels``.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``

        Returns
        -------
        self
        """
        self._check_params()
        crowd = _read(labels, self.n_classes)
        skills, weighting = self._fit_skills(crowd)
        self._remember_ids(crowd)
        self._skill_values, self._weighting = skills, weighting
        self.posterior_ = weighted_posterior(crowd, skills, weighting)
        self.n_items_ = crowd.n_items
        self.n_experts_ = crowd.n_experts
        self.n_classes_ = crowd.n_classes
        self.weights_ = (log_odds_weights(skills, crowd.n_classes) if weighting == "log-odds"
                         else skills.copy())
        return self

    def _skills(self) -> np.ndarray:
        return self._skill_values.copy()

    def _new_crowd(self, labels) -> CrowdLabels:
        """New labels on the fitted workers and classes (unknown ones refused)."""
        return _canonical_order(_new_crowd(labels, self.expert_ids_, self.class_ids_,
                                           self.n_experts_, self.n_classes_))

    def _proba_new(self, labels, X) -> np.ndarray:
        """The weighted vote of new ``labels`` (any form ``fit`` accepts; their workers
        must have been seen in ``fit``) with the fitted skills (see
        :class:`~crowdlearn._base.Predictions` for ``predict_proba``, ``predict`` and
        ``fit_predict``)."""
        if X is not None:
            raise ValueError(f"{type(self).__name__} has no features: predict takes labels "
                             f"only")
        return weighted_posterior(self._new_crowd(labels), self._skill_values, self._weighting)


# -- the estimators ----------------------------------------------------------------------------
class WeightedMajorityVote(_VoteBase):
    r"""Majority vote in which each worker's vote counts with a weight given by its skill.

    Worker (expert) :math:`r` has a skill, an accuracy :math:`1 - \epsilon_r`,
    which gives it a vote weight :math:`\omega_r`, and item :math:`i` gets the
    score :math:`v_{in} = \sum_{r \in R_i} \omega_r 1\{y^{(i)}_r = n\}` for every
    class :math:`n`, the sum running over the labels :math:`y^{(i)}_r` the item
    received (a repeated label is one more term). The hard label is the arg-max
    of the score (lowest class on ties).

    Parameters
    ----------
    skills : None, array-like of shape (n_experts,), dict or pandas Series
        The workers' skills :math:`1 - \epsilon_r`. An array is read by worker index (for
        labels from a table or DataFrame: the position of the worker id among
        the sorted ids). A dict or a ``Series`` is read by worker id (the
        original ids when fitting a table or DataFrame, the indices otherwise):
        every worker in the labels needs one (a missing one is a
        ``ValueError``), extra ids are ignored. ``None``: every worker counts
        the same, and the posterior is the plain soft majority vote (the vote
        fractions) whatever ``weights`` says.
    n_classes : int, optional
        Number of classes, if some class was never used (until 0.2.0 a keyword of
        ``fit``).
    weights : {"log-odds", "linear"}, default "log-odds"
        ``"log-odds"``: :math:`\omega_r = \log\frac{(N-1)(1-\epsilon_r)}{\epsilon_r}`,
        the Bayes-optimal weight (below); skills must lie in :math:`[0, 1]`, and the
        posterior is :math:`\operatorname{softmax}_n v_{in}`. ``"linear"``:
        :math:`\omega_r = 1 - \epsilon_r`, the skill itself (crowd-kit's
        convention); skills must be non-negative, and the posterior is
        :math:`v_{in} / \sum_{n'} v_{in'}`.

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        Rows sum to one; uniform for items with no label (or zero total weight).
    labels_ : ndarray or pandas Series
        Arg-max of ``posterior_``, lowest class on ties; a Series of class ids
        by task id when fitted on a DataFrame.
    skills_ : ndarray or pandas Series
        The skills used, by worker (not available with ``skills=None``).
    weights_ : ndarray of shape (n_experts,)
        The weights :math:`\omega_r` (``+inf``/``-inf`` for log-odds skills of 1/0;
        all ones with ``skills=None``).
    n_items_, n_experts_, n_classes_ : int

    Notes
    -----
    **Why log-odds.** Under the one-coin model (each worker gives the true class
    with probability :math:`1 - \epsilon_r` and each other class with probability
    :math:`\epsilon_r/(N - 1)`, independently given the true class) with a
    uniform class prior, the posterior of item :math:`i` is

    .. math::

        \begin{aligned}
        \log P(y^{(i)} = n \mid \mathcal{D}) = \sum_{r \in R_i}
        \Big[&1\{y^{(i)}_r = n\}\log (1 - \epsilon_r) \\
        &+ 1\{y^{(i)}_r \ne n\}\log\frac{\epsilon_r}{N - 1}\Big] - \log Z_i .
        \end{aligned}

    Writing :math:`1\{y^{(i)}_r \ne n\} = 1 - 1\{y^{(i)}_r = n\}`,

    .. math::

        \begin{aligned}
        \log P(y^{(i)} = n \mid \mathcal{D}) = {}& \sum_{r \in R_i} 1\{y^{(i)}_r = n\}
        \log\frac{(N - 1)(1 - \epsilon_r)}{\epsilon_r} \\
        &+ \underbrace{\sum_{r \in R_i} \log\frac{\epsilon_r}{N - 1}
        - \log Z_i}_{\text{the same for every } n},
        \end{aligned}

    so :math:`P(y^{(i)} = n \mid \mathcal{D}) = \operatorname{softmax}_n v_{in}`
    with :math:`\omega_r = \log\frac{(N-1)(1-\epsilon_r)}{\epsilon_r}`: the log-odds
    weighted vote *is* the one-coin posterior, and its arg-max the Bayes-optimal
    decision. A worker at chance (:math:`1 - \epsilon_r = 1/N`) gets weight 0, a
    worker below chance a negative weight. It is computed as the one-coin
    posterior (sums of :math:`\log(1 - \epsilon_r)` and
    :math:`\log\frac{\epsilon_r}{N-1}`), so that skills of
    exactly 0 or 1 give zero probabilities instead of NaN; items where such
    certain workers contradict each other are a ``ValueError``.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.weighted_vote import WeightedMajorityVote
    >>> labels = np.array([[0, 1, 1], [0, 0, 1]])
    >>> wmv = WeightedMajorityVote(skills=[0.9, 0.6, 0.6]).fit(labels)
    >>> wmv.labels_.tolist()   # the 0.9 worker outweighs two 0.6 ones (N = 2)
    [0, 0]
    >>> WeightedMajorityVote(skills=[0.9, 0.6, 0.6], weights="linear").fit(labels).labels_.tolist()
    [1, 0]
    """

    def __init__(self, skills=None, *, n_classes: int | None = None,
                 weights: str = "log-odds"):
        self._store_params(locals())

    def _fit_skills(self, crowd: CrowdLabels):
        if self.skills is None:  # every worker counts the same
            return np.ones(crowd.n_experts), "linear"
        return _resolve_skills(self.skills, crowd, self.weights), self.weights

    def _skills(self) -> np.ndarray:
        if self.skills is None:
            raise AttributeError("WeightedMajorityVote was fitted with skills=None: every "
                                 "worker counts the same and there are no skills")
        return super()._skills()


class Wawa(_VoteBase):
    r"""Worker Agreement With Aggregate: weighted majority vote with agreement-based skills.

    1. Take the plain majority vote :math:`\hat y^{(i)}` of every item (ties to
       the lowest class).
    2. Give worker :math:`r` the skill :math:`1 - \epsilon_r = \frac{1}{L_r}
       \sum_{i \in I_r} 1\{y^{(i)}_r = \hat y^{(i)}\}`, the fraction of its
       :math:`L_r` labels that agree with the vote (the sum runs over the
       labels, a repeated one counting once per copy; a worker with no label
       gets :math:`1/N`).
    3. Return the weighted majority vote with these skills (see
       :class:`WeightedMajorityVote` for ``weights``).

    This is crowd-kit's ``Wawa`` (with ``weights="linear"``, the default),
    except that a worker who gave the same label to the same item several times
    counts every copy (crowd-kit keeps one of each), and that ties in step 1
    go to the lowest class (see the module notes).

    Parameters
    ----------
    n_classes : int, optional
        Number of classes, if some class was never used (until 0.2.0 a keyword of
        ``fit``).
    weights : {"linear", "log-odds"}, default "linear"
        How skills become weights, as in :class:`WeightedMajorityVote`.

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        The weighted vote (step 3).
    labels_, probas_ : arg-max of ``posterior_`` (lowest class on ties), and
        ``posterior_``; by task id when fitted on a DataFrame.
    skills_ : ndarray of shape (n_experts,) or pandas Series by worker id
        The agreement skills of step 2.
    majority_posterior_ : ndarray of shape (n_items, n_classes)
        The plain soft majority vote of step 1.
    weights_ : ndarray of shape (n_experts,)
    n_items_, n_experts_, n_classes_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.weighted_vote import Wawa
    >>> w = Wawa().fit(np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]]))
    >>> w.skills_.tolist()
    [1.0, 0.75, 0.5]
    >>> w.labels_.tolist()
    [0, 1, 0, 1]
    """

    def __init__(self, *, n_classes: int | None = None, weights: str = "linear"):
        self._store_params(locals())

    def _fit_skills(self, crowd: CrowdLabels):
        """The agreement of each worker with the majority vote."""
        mv = weighted_posterior(crowd, np.ones(crowd.n_experts), "linear")
        self.majority_posterior_ = mv
        return _agreement(crowd, np.argmax(mv, axis=1)), self.weights


class ZeroBasedSkill(_VoteBase):
    r"""Zero-Based Skill: skills and weighted vote refined in turn by small steps.

    The skill of worker :math:`r` after :math:`t` steps is an accuracy
    :math:`1 - \epsilon^{t}_r`. All skills start equal, at
    :math:`1 - \epsilon^{0}_r = 1/N` (crowd-kit starts at :math:`1/N + 10^{-5}`;
    equal skills make the first vote the plain majority vote). Then, for
    :math:`t = 1, 2, \dots, \texttt{max\_iter}`:

    1. if :math:`t` is a multiple of ``lr_steps_to_reduce``, the learning rate
       :math:`\nu` (initially ``lr_init``) is multiplied by ``lr_reduce_factor``;
    2. :math:`\hat y^{(i),t}` is the weighted majority vote of item :math:`i`
       with the skills :math:`1 - \epsilon^{t-1}_r` (lowest class on ties);
    3. every skill moves towards the worker's accuracy on that aggregate,
       :math:`1 - \hat\epsilon^{t}_r`, where :math:`\hat\epsilon^{t}_r = \frac{1}{|I_r|}
       \sum_{i \in I_r} 1\{y^{(i)}_r \ne \hat y^{(i),t}\}` is the fraction of
       its :math:`|I_r|` labels that disagree with it (:math:`1 - \hat\epsilon^{t}_r = 1/N`
       for a worker with no label):

       .. math:: \epsilon^{t}_r = \epsilon^{t-1}_r + \nu\,\big(\hat\epsilon^{t}_r - \epsilon^{t-1}_r\big),

       a gradient step on :math:`\frac12 \sum_r (\hat\epsilon^{t}_r - \epsilon_r)^2`;
    4. stop early (``converged_``) when :math:`\max_r |\epsilon^{t}_r -
       \epsilon^{t-1}_r| \le` ``tol``.

    The result is the weighted vote with the final skills. With ``tol=0`` this
    is crowd-kit's ``ZeroBasedSkill`` schedule (which always runs ``n_iter``
    steps); as in :class:`Wawa`, repeated identical labels all count. With
    the default ``lr_init=1`` the first step sets the skills to the accuracies
    on the plain majority vote, whatever they started at.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes, if some class was never used (until 0.2.0 a keyword of
        ``fit``).
    max_iter : int, default 100
        At most this many steps (crowd-kit's ``n_iter``).
    lr_init : float, default 1.0
        Initial learning rate :math:`\nu`, in :math:`(0, 1]`.
    lr_steps_to_reduce : int, default 20
    lr_reduce_factor : float, default 0.5
        In :math:`(0, 1]`.
    tol : float, default 1e-5
        Early-stopping threshold on the largest skill change (0: never stop early).
    weights : {"linear", "log-odds"}, default "linear"
        As in :class:`WeightedMajorityVote` (crowd-kit: linear).

    Attributes
    ----------
    posterior_, labels_, probas_, skills_, weights_, n_items_, n_experts_, n_classes_
        As in :class:`Wawa`, with the final skills.
    n_iter_ : int
        Steps taken.
    converged_ : bool
        Whether the largest skill change fell to ``tol`` before ``max_iter``.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.weighted_vote import ZeroBasedSkill
    >>> z = ZeroBasedSkill().fit(np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]]))
    >>> z.skills_.tolist(), z.n_iter_, z.converged_
    ([1.0, 0.75, 0.5], 2, True)
    """

    def __init__(self, *, n_classes: int | None = None, max_iter: int = 100, lr_init: float = 1.0,
                 lr_steps_to_reduce: int = 20, lr_reduce_factor: float = 0.5, tol: float = 1e-5,
                 weights: str = "linear"):
        self._store_params(locals())

    def _check_params(self):
        super()._check_params()
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, low=0)
        check_scalar(self.lr_init, "lr_init", low=0.0, high=1.0, low_inclusive=False)
        check_scalar(self.lr_steps_to_reduce, "lr_steps_to_reduce", kind=numbers.Integral, low=1)
        check_scalar(self.lr_reduce_factor, "lr_reduce_factor", low=0.0, high=1.0,
                     low_inclusive=False)
        check_scalar(self.tol, "tol", low=0.0)

    def _fit_skills(self, crowd: CrowdLabels):
        """The Zero-Based Skill iteration (sets ``n_iter_`` and ``converged_``)."""
        skills = np.full(crowd.n_experts, 1.0 / crowd.n_classes)
        lr = float(self.lr_init)
        converged = False
        n_iter = 0
        for step in range(1, self.max_iter + 1):
            if step % self.lr_steps_to_reduce == 0:
                lr *= self.lr_reduce_factor
            hard = np.argmax(weighted_posterior(crowd, skills, self.weights), axis=1)
            new = skills + lr * (_agreement(crowd, hard) - skills)
            change = float(np.max(np.abs(new - skills))) if new.size else 0.0
            skills = new
            n_iter = step
            if change <= self.tol:
                converged = True
                break
        self.n_iter_ = n_iter
        self.converged_ = converged
        return skills, self.weights


class GoldMajorityVote(_VoteBase):
    r"""Majority vote weighted by each worker's accuracy on the gold (known) items.

    1. Worker :math:`r` gets the skill :math:`1 - \epsilon_r = \frac{1}{|I_r \cap G|}
       \sum_{i \in I_r \cap G} 1\{y^{(i)}_r \in g_i\}`, the fraction of
       its :math:`|I_r \cap G|` labels on gold items :math:`G` (items with a
       known set :math:`g_i` of true classes, most often one) that are right (a
       repeated label counts once per copy). An item may have several gold labels
       (several answers accepted as right, or experts who disagree): a label is
       right when it equals any of them, and counts once, as crowd-kit's
       ``get_accuracy`` counts it (it matches each answer against every gold label
       of its task and keeps the best match).
    2. Every item, gold or not, gets the weighted majority vote with these skills
       (see :class:`WeightedMajorityVote` for ``weights``); a gold item's known
       class is not imposed on its vote.

    This is crowd-kit's ``GoldMajorityVote`` (``weights="linear"``, the default:
    each label counts with its worker's skill), called as there: ``fit(labels,
    gold)`` or ``fit_predict(labels, gold)``, and ``predict(new_labels)`` with the
    fitted skills. crowd-kit requires every worker to have labelled a gold item;
    so does this class unless ``default_skill`` is given.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes, if some class was never used.
    weights : {"linear", "log-odds"}, default "linear"
        How skills become weights, as in :class:`WeightedMajorityVote`.
    default_skill : float in [0, 1], optional
        The skill (an accuracy, as the gold skills are) of a worker who labelled no gold
        item; outside [0, 1] it is a ``ValueError`` in ``fit``. ``None`` (default, as
        crowd-kit): such a worker is a ``ValueError`` naming them. A worker with
        no label at all gets this skill too, or 0 when it is ``None`` (they cast
        no vote).

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        The weighted vote (step 2); rows sum to one (uniform where the weights
        sum to 0).
    labels_, probas_ : arg-max of ``posterior_`` (lowest class on ties), and
        ``posterior_``; by task id when fitted on a DataFrame.
    skills_ : ndarray of shape (n_experts,) or pandas Series by worker id
        The gold accuracies of step 1.
    gold_ : ndarray of shape (n_items,)
        The known class index of each item, -1 where unknown (for an item with
        several gold labels, the lowest of their class indices).
    gold_classes_ : ndarray of bool, shape (n_items, n_classes)
        Every known class of each item: True where a gold label gives that class.
    n_gold_labels_ : ndarray of shape (n_experts,)
        :math:`|I_r \cap G|`, each worker's number of labels on gold items.
    weights_ : ndarray of shape (n_experts,)
    n_items_, n_experts_, n_classes_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.weighted_vote import GoldMajorityVote
    >>> labels = np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1]])
    >>> g = GoldMajorityVote().fit(labels, np.array([0, 1, -1]))
    >>> g.skills_.tolist()
    [1.0, 0.5, 0.5]
    >>> g.labels_.tolist()
    [0, 1, 0]

    Several gold labels for one task, as crowd-kit takes them (a ``Series`` whose
    index repeats the task) or as a dict of lists: an answer equal to either is right.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["t1", "t1", "t2", "t2"], "worker": ["a", "b", "a", "b"],
    ...                    "label": ["cat", "dog", "dog", "cat"]})
    >>> gold = pd.Series(["cat", "dog", "dog"], index=["t1", "t1", "t2"])
    >>> GoldMajorityVote().fit(df, gold).skills_.to_dict()
    {'a': 1.0, 'b': 0.5}
    >>> GoldMajorityVote().fit(df, {"t1": ["cat", "dog"], "t2": "dog"}).skills_.to_dict()
    {'a': 1.0, 'b': 0.5}
    """

    def __init__(self, *, n_classes: int | None = None, weights: str = "linear",
                 default_skill: float | None = None):
        self._store_params(locals())

    def _check_params(self):
        super()._check_params()
        d = self.default_skill
        if d is not None:
            if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Real):
                raise ValueError(f"default_skill must be a number or None, got {d!r}")
            if not 0.0 <= float(d) <= 1.0:  # NaN too
                raise ValueError(f"default_skill must be an accuracy in [0, 1] (the share of "
                                 f"gold labels a worker would get right), got {d!r}")

    def fit(self, labels, gold=None):
        """Find each worker's accuracy on the gold items and compute the weighted vote.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``
        gold : dict, pandas Series or array
            The known true classes of some items (crowd-kit's ``true_labels``): a dict
            or Series maps item to class, by original identifiers when the labels
            came with them; an array of length ``n_items`` holds a class index per
            item and ``-1`` where the truth is unknown (as ``gold`` of
            :meth:`DawidSkene.fit`). Several gold labels for an item: a Series whose
            index repeats the item, or a dict mapping it to a list, tuple or set of
            classes; a label equal to any of them is right.

        Returns
        -------
        self
        """
        if gold is None:
            raise ValueError("GoldMajorityVote needs the known true classes of some items: "
                             "fit(labels, gold) with gold a dict/Series (item -> class) or "
                             "an array of class indices with -1 for unknown")
        self._gold_input = gold
        try:
            return super().fit(labels)
        finally:
            del self._gold_input

    def fit_predict(self, labels, gold=None):
        """Fit on ``labels`` with the known classes ``gold`` (as :meth:`fit`), then return
        the most probable class of each item: class indices, or, fitted on a DataFrame, a
        ``Series`` of class ids by task id (crowd-kit's ``fit_predict(data, true_labels)``).
        """
        return super().fit_predict(labels, gold)

    def fit_predict_proba(self, labels, gold=None):
        """Fit on ``labels`` with the known classes ``gold`` (as :meth:`fit`), then return
        the posterior class probabilities: a copy of ``posterior_``, or, fitted on a
        DataFrame, a ``DataFrame`` by task id and class id."""
        return super().fit_predict_proba(labels, gold)

    def _fit_skills(self, crowd: CrowdLabels):
        """Each worker's accuracy on the gold items (step 1)."""
        accepted = _read_gold_classes(self._gold_input, crowd)
        is_gold = accepted.any(axis=1)
        on_gold = is_gold[crowd.item]
        experts = crowd.expert[on_gold]
        right = accepted[crowd.item[on_gold], crowd.label[on_gold]]
        J = crowd.n_experts
        n_gold = np.bincount(experts, minlength=J)
        n_all = np.bincount(crowd.expert, minlength=J)
        skills = np.bincount(experts, weights=right.astype(float), minlength=J).astype(float)
        has = n_gold > 0
        skills[has] /= n_gold[has]
        lacking = np.flatnonzero(~has & (n_all > 0))
        if lacking.size and self.default_skill is None:
            ids = np.arange(J) if crowd.expert_ids is None else crowd.expert_ids
            raise ValueError(f"{lacking.size} worker(s) labelled no gold item, e.g. "
                             f"{ids[lacking[:5]].tolist()}: their skill is unknown (pass "
                             f"default_skill=..., or give gold for an item they labelled)")
        skills[~has] = 0.0 if self.default_skill is None else float(self.default_skill)
        self.gold_ = np.where(is_gold, np.argmax(accepted, axis=1), -1)
        self.gold_classes_ = accepted
        self.n_gold_labels_ = n_gold
        return skills, self.weights
