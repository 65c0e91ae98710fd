r"""Where to spend the next label: expected gains of asking a worker to label an item.

A fitted Dawid--Skene-type model (anything with a posterior ``posterior_`` of shape
``(n_items, K)`` and confusion matrices ``confusion_`` of shape ``(n_experts, K, K)``:
:class:`~crowdlearn.DawidSkene`, :class:`~crowdlearn.OneCoinDawidSkene`) says, for every
item :math:`i` and every worker :math:`r` who has not labelled it yet, what a label from
:math:`r` would be worth. Under the fitted model the label :math:`y` that worker :math:`r`
would give item :math:`i` has the predictive distribution

.. math::

    P_{ir}(y) = \sum_n Q_i(n)\, M^{(r)}_{n y},

and after it the item's posterior would be :math:`Q'_i(n) \propto Q_i(n) M^{(r)}_{n y}`
(Bayes' rule, the model's parameters held fixed). The *expected gain* is the expected drop of
a criterion of the posterior, before minus after:

* ``criterion="error"``: the probability that the arg-max of the posterior is wrong,
  :math:`1 - \max_n Q_i(n)`. Since :math:`P_{ir}(y)\max_n Q'_i(n) = \max_n Q_i(n) M^{(r)}_{ny}`,

  .. math::

      G^{\text{err}}_{ir} = \sum_y \max_n Q_i(n) M^{(r)}_{n y} - \max_n Q_i(n) \;\ge 0 .

* ``criterion="entropy"``: the posterior entropy in nats, the book's unit
  (:func:`~crowdlearn.metrics.posterior_entropy` with ``base=np.e``; divide by
  :math:`\log 2` for bits); its expected drop is the mutual
  information between the true class and the label,

  .. math::

      G^{\text{ent}}_{ir} = \mathcal{H}[P_{ir}]
      - \sum_n Q_i(n)\, \mathcal{H}[M^{(r)}_{n,\cdot}] \;\ge 0 .

Both are myopic (one label at a time, parameters fixed): :func:`recommend_labels` ranks the
pairs by gain per unit cost and keeps the best ``budget`` of them.
"""

from __future__ import annotations

import numbers
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from crowdlearn._validation import check_flag, check_scalar
from crowdlearn.exceptions import NotFittedError
from crowdlearn.labels import as_crowd_labels, require_pandas

__all__ = ["LabelGains", "ReplayResult", "expected_label_gains", "labelled_pairs",
           "recommend_labels", "replay_policies"]

CRITERIA = ("error", "entropy")
MAX_REPLAYS = 10_000
"""Most replays :func:`replay_policies` runs (each one fits a model every round for every
policy)."""
# floats per block of the (items, workers, K, K) array of the error criterion
_BLOCK = 2 ** 22


@dataclass(frozen=True, eq=False)
class LabelGains:
    """Candidate ``(item, worker)`` labels and their expected gains, best first.

    Attributes
    ----------
    item, worker : ndarray of int, shape (n_pairs,)
        Indices of the item and of the worker (rows of the model's ``posterior_`` and
        ``confusion_``).
    gain : ndarray of float, shape (n_pairs,)
        Expected reduction of the criterion if that worker labelled that item.
    score : ndarray of float, shape (n_pairs,)
        ``gain`` divided by the cost of the label (``gain`` itself without a cost); the
        pairs are sorted by it, descending (ties: lower item, then lower worker first).
    criterion : str
        ``"error"`` or ``"entropy"``.
    item_ids, worker_ids : ndarray or None
        The model's original identifiers (``item_ids_``, ``expert_ids_``) when it was
        fitted on a table; used by ``to_frame()``.
    """

    item: np.ndarray
    worker: np.ndarray
    gain: np.ndarray
    score: np.ndarray
    criterion: str
    item_ids: np.ndarray | None = field(default=None, repr=False)
    worker_ids: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return int(self.item.shape[0])

    def to_frame(self):
        """The pairs as a pandas ``DataFrame`` with columns ``task``, ``worker``, ``gain``
        and ``score``, by original id where the model has them (indices otherwise)."""
        pd = require_pandas()
        task = self.item if self.item_ids is None else self.item_ids[self.item]
        worker = self.worker if self.worker_ids is None else self.worker_ids[self.worker]
        return pd.DataFrame({"task": task, "worker": worker, "gain": self.gain,
                             "score": self.score})


def _fitted_arrays(model) -> tuple[np.ndarray, np.ndarray]:
    """The model's posterior ``(n_items, K)`` and confusion ``(n_experts, K, K)``, checked."""
    if not hasattr(model, "posterior_"):
        raise NotFittedError(f"this {type(model).__name__} is not fitted yet (it has no "
                             f"posterior_): call fit first")
    if not hasattr(model, "confusion_"):
        raise ValueError(f"{type(model).__name__} has no confusion_: the expected gains "
                         f"need a Dawid-Skene-type model with one confusion matrix per "
                         f"worker (DawidSkene, OneCoinDawidSkene)")
    Q = np.asarray(model.posterior_, dtype=float)
    M = np.asarray(model.confusion_, dtype=float)
    if Q.ndim != 2 or Q.shape[0] == 0 or Q.shape[1] < 2:
        raise ValueError(f"posterior_ must have shape (n_items, n_classes) with n_classes "
                         f">= 2, got {Q.shape}")
    K = Q.shape[1]
    if M.ndim != 3 or M.shape[1:] != (K, K) or M.shape[0] == 0:
        raise ValueError(f"confusion_ must have shape (n_experts, {K}, {K}) to match "
                         f"posterior_ {Q.shape}, got {M.shape}")
    for name, arr in (("posterior_", Q), ("confusion_", M)):
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError(f"{name} must hold finite non-negative probabilities")
        if not np.allclose(arr.sum(axis=-1), 1.0, atol=1e-6):
            raise ValueError(f"the rows of {name} must sum to one")
    return Q, M


def _onto(codes, new_ids, old_ids, n_old: int, what: str) -> np.ndarray:
    """Indices of the labels' items (or workers) in the model's order."""
    if new_ids is not None and old_ids is not None:
        lookup = {v: i for i, v in enumerate(old_ids.tolist())}
        mapped = np.array([lookup.get(v, -1) for v in new_ids.tolist()], dtype=np.intp)
        used = np.unique(codes)
        unknown = used[mapped[used] < 0]
        if unknown.size:
            raise ValueError(f"the labels name {what}(s) {new_ids[unknown][:5].tolist()} "
                             f"that the model was not fitted on")
        return mapped[codes]
    if new_ids is not None:  # a table given to a model fitted on indices
        if new_ids.dtype.kind not in "iu":
            raise ValueError(f"the labels carry {what} identifiers such as "
                             f"{new_ids[:3].tolist()} but the model was fitted on index-coded "
                             f"labels; pass the labels it was fitted on")
        codes = new_ids.astype(np.intp)[codes]
    if codes.size and (codes.min() < 0 or codes.max() >= n_old):
        raise ValueError(f"the labels use {what} index {int(codes.max())} but the model "
                         f"has {n_old} {what}s; pass the labels it was fitted on")
    return codes


def labelled_pairs(model, labels) -> np.ndarray:
    """Which ``(item, worker)`` pairs of a fitted model already have a label.

    Parameters
    ----------
    model : fitted Dawid--Skene-type model
        Anything with ``posterior_`` and ``confusion_``.
    labels : CrowdLabels, (item, expert, label) tuple, dense matrix or DataFrame
        The labels (those the model was fitted on, or any of the same items and
        workers), matched to the model by original id when both have them.

    Returns
    -------
    ndarray of bool, shape (n_items, n_experts)
    """
    Q, M = _fitted_arrays(model)
    crowd = as_crowd_labels(labels)
    item = _onto(crowd.item, crowd.item_ids, getattr(model, "item_ids_", None), Q.shape[0],
                 "item")
    worker = _onto(crowd.expert, crowd.expert_ids, getattr(model, "expert_ids_", None),
                   M.shape[0], "worker")
    done = np.zeros((Q.shape[0], M.shape[0]), dtype=bool)
    done[item, worker] = True
    return done


def _candidate_workers(model, workers, n_experts: int) -> np.ndarray:
    """Indices of the workers who may be asked (all when ``workers`` is None)."""
    if workers is None:
        return np.arange(n_experts)
    if isinstance(workers, (str, bytes)) or np.ndim(workers) != 1:
        raise ValueError(f"workers must be a 1-D list of worker ids, got {workers!r}")
    ids = getattr(model, "expert_ids_", None)
    values = list(workers)
    if not values:
        raise ValueError("workers is empty: name at least one worker")
    if ids is None:
        bad = [w for w in values if isinstance(w, (bool, np.bool_))
               or not isinstance(w, numbers.Integral) or not 0 <= w < n_experts]
        if bad:
            raise ValueError(f"workers must be worker indices 0..{n_experts - 1} (the model "
                             f"was fitted without worker ids), got {bad[:5]}")
        out = np.array(values, dtype=np.intp)
    else:
        lookup = {v: i for i, v in enumerate(ids.tolist())}
        unknown = [w for w in values if w not in lookup]
        if unknown:
            raise ValueError(f"unknown worker(s) {unknown[:5]}: not among the {len(ids)} "
                             f"workers the model was fitted on")
        out = np.array([lookup[w] for w in values], dtype=np.intp)
    if np.unique(out).size != out.size:
        raise ValueError("workers names some worker more than once")
    return out


def _read_cost(cost, model, candidates: np.ndarray, workers) -> np.ndarray:
    """One positive cost per candidate worker (ones when ``cost`` is None)."""
    if cost is None:
        return np.ones(candidates.size)
    if hasattr(cost, "keys"):  # a dict or a pandas Series by worker id
        ids = getattr(model, "expert_ids_", None)
        names = candidates if ids is None else ids[candidates]
        missing = [w for w in names.tolist() if w not in cost.keys()]
        if missing:
            raise ValueError(f"cost has no entry for worker(s) {missing[:5]}")
        cost = [cost[w] for w in names.tolist()]
    if isinstance(cost, (bool, np.bool_, str, bytes)):
        raise ValueError(f"cost must be a positive number or one per worker, got {cost!r}")
    try:
        arr = np.asarray(cost, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"cost must be a positive number or one per worker, got "
                         f"{cost!r}") from None
    if arr.ndim == 0:
        arr = np.full(candidates.size, float(arr))
    elif arr.shape != (candidates.size,):
        whom = "in workers" if workers is not None else "of the model"
        raise ValueError(f"cost must be a number or hold one cost per worker {whom} "
                         f"({candidates.size}), got shape {arr.shape}")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError("cost must be finite and > 0 (a label costs something)")
    return arr


def _gains(Q: np.ndarray, M: np.ndarray, criterion: str) -> np.ndarray:
    """Expected gains ``(n_items, n_workers)`` of one label from each worker of ``M``."""
    from scipy.special import entr

    n, K = Q.shape
    W = M.shape[0]
    out = np.empty((n, W))
    step = max(1, _BLOCK // max(1, W * K * K))
    if criterion == "entropy":
        row_entropy = entr(M).sum(axis=2)                          # (W, K), nats
    for start in range(0, n, step):
        q = Q[start:start + step]
        if criterion == "error":
            joint = q[:, None, :, None] * M[None]                  # [i, r, n, y]
            out[start:start + step] = joint.max(axis=2).sum(axis=2) - q.max(axis=1)[:, None]
        else:
            predictive = np.einsum("in,rny->iry", q, M)            # P_ir(y)
            out[start:start + step] = entr(predictive).sum(axis=2) - q @ row_entropy.T
    return out


def expected_label_gains(model, labels, *, criterion: str = "error", workers=None,
                         cost=None) -> LabelGains:
    r"""Expected gain of one more label for every unlabelled ``(item, worker)`` pair.

    Parameters
    ----------
    model : fitted Dawid--Skene-type model
        Anything with ``posterior_`` (n_items, K) and ``confusion_`` (n_experts, K, K):
        :class:`~crowdlearn.DawidSkene`, :class:`~crowdlearn.OneCoinDawidSkene`.
    labels : CrowdLabels, (item, expert, label) tuple, dense matrix, DataFrame or None
        The labels given so far (those the model was fitted on): pairs that already have a
        label are left out. Matched to the model by original id when both have them.
        ``None``: no pair is labelled yet, every pair is a candidate.
    criterion : {"error", "entropy"}, default "error"
        ``"error"``: expected drop of the probability that the item's arg-max label is
        wrong, :math:`1 - \max_n Q_i(n)`. ``"entropy"``: expected drop of the posterior
        entropy in nats (the mutual information of the true class and the label).
    workers : sequence, optional
        The workers who may be asked (worker ids when the model was fitted on a table,
        worker indices otherwise); all the model's workers when omitted.
    cost : float, array-like or mapping, optional
        Cost of one label: one number, one per worker (in the order of ``workers``, or of
        the model's workers), or a dict/Series by worker id. Every cost must be > 0. The
        pairs are ranked by ``gain / cost``.

    Returns
    -------
    LabelGains
        Every pair ``(item, worker)`` without a label, with its ``gain`` and ``score``,
        sorted by ``score`` descending.

    Raises
    ------
    ValueError
        For a model that is not fitted (``NotFittedError``, a ``ValueError``) or has no
        confusion matrices, labels that do not match the model, an
        unknown criterion or worker, or a cost that is not positive.

    Notes
    -----
    With :math:`Q_i` the item's posterior and :math:`M^{(r)}` the worker's confusion
    matrix, :math:`G^{\text{err}}_{ir} = \sum_y \max_n Q_i(n) M^{(r)}_{ny} - \max_n Q_i(n)`
    and :math:`G^{\text{ent}}_{ir} = \mathcal{H}[\sum_n Q_i(n) M^{(r)}_{n,\cdot}]
    - \sum_n Q_i(n) \mathcal{H}[M^{(r)}_{n,\cdot}]`; both are :math:`\ge 0` (see :mod:`crowdlearn.active`). A perfect
    worker on an item gains all of its error; a worker whose confusion rows are all equal
    gains nothing.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    Q, M = _fitted_arrays(model)
    if labels is None:
        done = np.zeros((Q.shape[0], M.shape[0]), dtype=bool)
    else:
        done = labelled_pairs(model, labels)
    candidates = _candidate_workers(model, workers, M.shape[0])
    costs = _read_cost(cost, model, candidates, workers)
    gain = _gains(Q, M[candidates], criterion)
    item, col = np.nonzero(~done[:, candidates])
    gain = gain[item, col]
    score = gain / costs[col]
    worker = candidates[col]
    order = np.lexsort((worker, item, -score))
    return LabelGains(item[order], worker[order], gain[order], score[order], criterion,
                      getattr(model, "item_ids_", None), getattr(model, "expert_ids_", None))


def recommend_labels(model, labels, *, budget: int = 1, criterion: str = "error",
                     workers=None, cost=None, one_per_item: bool = True) -> LabelGains:
    """The ``budget`` labels worth buying next: the pairs of highest expected gain per cost.

    Parameters
    ----------
    model, labels, criterion, workers, cost
        As in :func:`expected_label_gains`.
    budget : int, default 1
        How many ``(item, worker)`` pairs to recommend (>= 1); fewer when fewer pairs are
        left.
    one_per_item : bool, default True
        At most one new label per item. The gains are those of one label on its own, so
        two labels for one item would be valued as if each came alone.

    Returns
    -------
    LabelGains
        The recommended pairs, best first.

    Raises
    ------
    ValueError
        For a ``budget`` that is not an integer >= 1, and as :func:`expected_label_gains`.
    """
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Integral) \
            or budget < 1:
        raise ValueError(f"budget must be an integer >= 1, got {budget!r}")
    check_flag(one_per_item, "one_per_item")
    gains = expected_label_gains(model, labels, criterion=criterion, workers=workers,
                                 cost=cost)
    keep = np.arange(len(gains))
    if one_per_item:
        keep = np.sort(np.unique(gains.item, return_index=True)[1])
    keep = keep[:int(budget)]
    return LabelGains(gains.item[keep], gains.worker[keep], gains.gain[keep],
                      gains.score[keep], gains.criterion, gains.item_ids, gains.worker_ids)


# ------------------------------------------------------------------ replaying a real crowd

POLICIES = ("random", "round-robin", "uncertainty", "model")


@dataclass(frozen=True, eq=False)
class ReplayResult:
    """Accuracy against budget when labels of a real crowd are bought by several policies.

    Attributes
    ----------
    policies : tuple of str
        The policies replayed, in the order given.
    labels_per_item : ndarray, shape (n_rounds + 1,)
        Labels bought so far per item, after 0, 1, ..., ``n_rounds`` rounds (1 at the
        start: every replay starts with one label per item).
    accuracy : dict of str to ndarray, shape (n_replays, n_rounds + 1)
        For each policy, the accuracy of the refitted model against the truth after each
        round of each replay. Replay ``j`` starts from the same shuffled crowd for every
        policy, so the policies are compared on paired replays.
    whole_crowd : float
        Accuracy of the same model fitted on every label of the crowd.
    n_iter : dict of str to int
        Total EM iterations the fits of each policy took (over all replays and rounds; a
        round that bought nothing, with ``fit="partial"`` or ``"incremental"``, fits nothing
        and adds none).
    fit_seconds : dict of str to float
        CPU time (this process's, ``time.process_time``) the fits after the rounds of each
        policy took, over all replays (the start's fit and the policy's own choosing not
        counted): what ``fit="partial"`` saves against ``"refit"``.
    n_capped : dict of str to int
        Fits after the rounds of each policy that stopped at ``max_iter`` (not converged).
    """

    policies: tuple
    labels_per_item: np.ndarray
    accuracy: dict
    whole_crowd: float
    n_iter: dict
    fit_seconds: dict = field(default_factory=dict)
    n_capped: dict = field(default_factory=dict)

    def summary(self, level: float = 0.95):
        """Mean accuracy per policy and round with a ``level`` interval over the replays.

        The interval is Student's t interval for the mean over the replays (its width is
        0 with a single replay). Returns a pandas ``DataFrame`` indexed by
        ``(policy, labels_per_item)`` with columns ``mean``, ``low``, ``high``.
        """
        from scipy import stats

        if isinstance(level, (bool, np.bool_, str, bytes)) or not 0 < float(level) < 1:
            raise ValueError(f"level must be a number in (0, 1), got {level!r}")
        pd = require_pandas()
        rows = []
        for policy in self.policies:
            acc = self.accuracy[policy]
            n = acc.shape[0]
            mean = acc.mean(axis=0)
            half = np.zeros_like(mean)
            if n > 1:
                sem = acc.std(axis=0, ddof=1) / np.sqrt(n)
                half = stats.t.ppf(0.5 + float(level) / 2, n - 1) * sem
            for k, per_item in enumerate(self.labels_per_item):
                rows.append((policy, per_item, mean[k], mean[k] - half[k], mean[k] + half[k]))
        frame = pd.DataFrame(rows, columns=["policy", "labels_per_item", "mean", "low",
                                            "high"])
        return frame.set_index(["policy", "labels_per_item"])


def _read_policies(policies) -> tuple:
    """``policies`` (any iterable: a tuple, a list, a generator...) as a tuple of distinct
    names among ``POLICIES``."""
    wrong = ValueError(f"policies must be distinct names among {POLICIES}, got "
                       f"{policies!r:.80}")
    if isinstance(policies, (str, bytes)):
        raise wrong
    try:
        names = tuple(policies)
    except TypeError:
        raise wrong from None
    if not names or any(not isinstance(p, str) or p not in POLICIES for p in names) \
            or len(set(names)) < len(names):
        raise ValueError(f"policies must be distinct names among {POLICIES}, got {names!r:.80}")
    return names


def _check_replay(policies, n_replays, n_rounds, crowd, criterion, per_round, random_state,
                  model, fit, callback=None) -> tuple[tuple, int, int]:
    """The settings of :func:`replay_policies` checked: ``(policies, n_replays, n_rounds)``."""
    policies = _read_policies(policies)
    if callback is not None and not callable(callback):
        raise ValueError("callback must be callable as callback(policy, replay, round, "
                         "model, labels)")
    if fit not in ("refit", "partial", "incremental"):
        raise ValueError(f"fit must be 'refit', 'partial' or 'incremental', got {fit!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    check_scalar(per_round, "per_round", low=0, low_inclusive=False, high=1)
    check_scalar(random_state, "random_state", kind=numbers.Integral, low=0)
    if model is not None and not callable(model):
        raise ValueError("model must be a callable that returns a new unfitted model")
    return (policies, *_check_replay_sizes(n_replays, n_rounds, crowd))


def _replay_truth(truth, n_items: int, n_classes: int) -> np.ndarray:
    if isinstance(truth, (str, bytes)) or np.ndim(truth) != 1:
        raise ValueError("truth must be a 1-D array of true classes, one per item "
                         "(negative for an item whose truth is unknown)")
    arr = np.asarray(truth)
    if arr.dtype.kind not in "iu" or arr.shape[0] != n_items:
        raise ValueError(f"truth must hold {n_items} integer classes (one per item of the "
                         f"crowd, negative where unknown), got dtype {arr.dtype} and "
                         f"shape {arr.shape}")
    if (arr >= n_classes).any():
        raise ValueError(f"truth has a class >= n_classes = {n_classes}")
    if not (arr >= 0).any():
        raise ValueError("truth knows no item's class: nothing to measure accuracy on")
    return arr.astype(np.intp)


class _Pool:
    """One replay's crowd: every (item, worker) pair once, in a shuffled order."""

    def __init__(self, crowd, rng):
        order = rng.permutation(crowd.n_labels)
        item, worker, label = crowd.item[order], crowd.expert[order], crowd.label[order]
        keep = np.sort(np.unique(item * crowd.n_experts + worker, return_index=True)[1])
        self.item, self.worker, self.label = item[keep], worker[keep], label[keep]
        self.shape = (crowd.n_items, crowd.n_experts, crowd.n_classes)
        self.row = np.full(self.shape[:2], -1, dtype=np.intp)
        self.row[self.item, self.worker] = np.arange(keep.size)
        self.bought = np.zeros(keep.size, dtype=bool)
        self.bought[np.unique(self.item, return_index=True)[1]] = True  # one per item

    def crowd(self):
        from crowdlearn.labels import from_triples

        b = self.bought
        return from_triples(self.item[b], self.worker[b], self.label[b],
                            n_items=self.shape[0], n_experts=self.shape[1],
                            n_classes=self.shape[2])

    def batch(self, rows: np.ndarray):
        """The labels of ``rows`` of the pool, as a crowd of the same shape."""
        from crowdlearn.labels import from_triples

        return from_triples(self.item[rows], self.worker[rows], self.label[rows],
                            n_items=self.shape[0], n_experts=self.shape[1],
                            n_classes=self.shape[2])

    def first_per_item(self, rows: np.ndarray, n: int) -> np.ndarray:
        """The first ``n`` of ``rows`` (in their order) whose items have not come before."""
        first = np.sort(np.unique(self.item[rows], return_index=True)[1])
        return rows[first][:n]


def _choose(policy, rng, pool: _Pool, model, crowd, n: int, criterion: str) -> np.ndarray:
    """Rows of the pool the policy buys this round (at most ``n``, one per item)."""
    from crowdlearn.metrics import posterior_entropy

    free = np.flatnonzero(~pool.bought)
    if free.size == 0:
        return free
    if policy == "random":
        return pool.first_per_item(rng.permutation(free), n)
    if policy == "model":
        gains = expected_label_gains(model, crowd, criterion=criterion)
        rows = pool.row[gains.item, gains.worker]
        return pool.first_per_item(rows[rows >= 0], n)
    shuffled = rng.permutation(free)  # a random worker per item, random ties
    if policy == "round-robin":
        key = np.bincount(pool.item[pool.bought], minlength=pool.shape[0])[pool.item[shuffled]]
    else:
        key = -posterior_entropy(model)[pool.item[shuffled]]
    return pool.first_per_item(shuffled[np.argsort(key, kind="stable")], n)


def _replay_one(crowd, truth, policy, seed, rounds, step, make_model, criterion, fit,
                callback=None, index: int = 0):
    """One replay of one policy: its accuracy after every round and what its fits cost
    (``{"n_iter", "seconds", "capped"}``, the rounds' fits only for the last two)."""
    import time

    known = truth >= 0
    state = [int(x) for x in seed.generate_state(2)]  # the same for every policy
    pool = _Pool(crowd, np.random.default_rng([*state, len(POLICIES)]))
    rng = np.random.default_rng([*state, POLICIES.index(policy)])
    accuracy, cost, model, labels = [], {"n_iter": 0, "seconds": 0.0, "capped": 0}, None, None
    for k in range(rounds + 1):
        rows = None
        if k:
            rows = _choose(policy, rng, pool, model, labels, step, criterion)
            pool.bought[rows] = True
        labels = pool.crowd()
        started, fitted = time.process_time(), True
        if rows is not None and fit != "refit":
            fitted = rows.size > 0   # nothing bought (the pool is spent): nothing to fit
            if fitted:
                model = model.partial_fit(pool.batch(rows), incremental=fit == "incremental")
        else:
            model = make_model().fit(labels)
        if k:
            cost["seconds"] += time.process_time() - started
            cost["capped"] += fitted and not getattr(model, "converged_", True)
        cost["n_iter"] += int(getattr(model, "n_iter_", 0)) if fitted else 0
        accuracy.append(float((model.predict()[known] == truth[known]).mean()))
        if callback is not None:
            callback(policy, index, k, model, labels)
    return accuracy, cost


def _check_replay_sizes(n_replays, n_rounds, crowd) -> tuple[int, int]:
    """``n_replays`` at most ``MAX_REPLAYS``; ``n_rounds`` at most the labels the pool
    holds (every round buys one at least while any is left, so later rounds buy nothing)."""
    n_replays = int(check_scalar(n_replays, "n_replays", kind=numbers.Integral, low=1))
    n_rounds = int(check_scalar(n_rounds, "n_rounds", kind=numbers.Integral, low=0))
    if n_replays > MAX_REPLAYS:
        raise ValueError(f"n_replays={n_replays:,} replays asked for; at most {MAX_REPLAYS:,} "
                         f"are run (each fits a model every round for every policy)")
    pairs = np.unique(crowd.item.astype(np.int64) * crowd.n_experts + crowd.expert).size
    buyable = pairs - np.unique(crowd.item).size  # one label of each item is the start
    if n_rounds > buyable:
        raise ValueError(f"n_rounds={n_rounds:,} rounds asked for, but the crowd holds only "
                         f"{buyable:,} label(s) to buy beyond each item's first (every round "
                         f"buys at least one): n_rounds can be at most {buyable:,}")
    return n_replays, n_rounds


def _model_maker(model, fit: str, K: int):
    """What makes a new unfitted model for every fit: ``model``, or ``DawidSkene``."""
    from crowdlearn.aggregation.dawid_skene import DawidSkene

    make_model = model if model is not None else (lambda: DawidSkene(n_classes=K))
    if fit != "refit" and not hasattr(make_model(), "partial_fit"):
        raise ValueError(f"fit={fit!r} needs a model with partial_fit (DawidSkene, "
                         f"OneCoinDawidSkene)")
    return make_model


@contextmanager
def _quiet_small_fits():
    """Silence the ConvergenceWarning and DegenerateFitWarning of fits on tiny crowds."""
    import warnings

    from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        yield


def replay_policies(labels, truth, *, policies=POLICIES, n_replays: int = 10,
                    n_rounds: int = 10, per_round: float = 0.1, criterion: str = "error",
                    model=None, fit: str = "refit", random_state=0,
                    callback=None) -> ReplayResult:
    """Replay a real crowd label by label and compare policies for buying labels.

    Each replay shuffles the crowd's labels (seeded) and starts with the first label of
    every item in that order; the crowd's other labels form the pool that may be bought.
    A bought label is the one the worker really gave, so only pairs the real crowd holds
    can be bought. In each round a policy buys ``per_round * n_items`` labels, at most
    one per item, the model is refitted on the labels bought so far and its accuracy on
    the items of known truth is recorded. ``"random"`` draws pairs uniformly from the
    pool; ``"round-robin"`` takes the items with the fewest labels so far,
    ``"uncertainty"`` those of highest posterior entropy, each with a random worker;
    ``"model"`` the pairs of highest expected gain
    (:func:`expected_label_gains` with ``criterion``), at most one per item.

    Parameters
    ----------
    labels : CrowdLabels, (item, expert, label) tuple, dense matrix or DataFrame
        The whole crowd (the pool and the starting labels).
    truth : array-like of int, shape (n_items,)
        True class of every item in the crowd's item order, negative where unknown.
    policies : iterable of str, default all four
        Distinct names among ``POLICIES`` (any iterable, read once into a tuple).
    n_replays : int, default 10
        Replays, each on its own shuffle of the crowd (the same shuffle for every policy);
        at most ``MAX_REPLAYS`` (10,000).
    n_rounds : int, default 10
        Rounds of buying after the start; at most the labels there are to buy (distinct
        (item, worker) pairs less one per labelled item: each round buys one at least
        while any is left). Beyond a limit, a ``ValueError`` says so.
    per_round : float, default 0.1
        Labels bought per round as a fraction of the items (at least one label).
    criterion : {"error", "entropy"}, default "error"
        The ``"model"`` policy's criterion.
    model : callable, optional
        Returns a new unfitted Dawid--Skene-type model (one with ``posterior_`` and
        ``confusion_`` after ``fit``); ``DawidSkene(n_classes=K)`` by default.
    fit : {"refit", "partial", "incremental"}, default "refit"
        After each round, ``"refit"`` fits a new model on all the labels bought so far;
        ``"partial"`` adds the round's labels with the model's ``partial_fit`` and
        continues EM from the fitted parameters (on crowds of one or two labels per item
        often a higher likelihood but a lower accuracy: ``bench_next_label.py``);
        ``"incremental"`` does so with ``partial_fit(..., incremental=True)``, whose
        E-steps visit only the items the round's labels touch.
    random_state : int, default 0
        Seed of the shuffles and of the policies' random choices.
    callback : callable, optional
        Called after every fit as ``callback(policy, replay, round, model, labels)``
        (``round`` 0 is the start; ``labels`` the ``CrowdLabels`` bought so far), e.g. to
        compare a ``partial_fit`` model's ``objective_`` with a fit from scratch on the same
        labels (``benchmarks/bench_next_label.py``). Its time is not counted in
        ``fit_seconds``.

    Returns
    -------
    ReplayResult

    Notes
    -----
    The fits of a replay are on small crowds: their ``ConvergenceWarning`` and
    ``DegenerateFitWarning`` are silenced while it runs.
    """
    crowd = as_crowd_labels(labels)
    truth = _replay_truth(truth, crowd.n_items, crowd.n_classes)
    policies, n_replays, n_rounds = _check_replay(policies, n_replays, n_rounds, crowd,
                                                  criterion, per_round, random_state, model,
                                                  fit, callback)
    make_model = _model_maker(model, fit, crowd.n_classes)
    step = max(1, int(round(per_round * crowd.n_items)))
    seeds = np.random.SeedSequence(int(random_state)).spawn(n_replays)
    with _quiet_small_fits():
        runs = {policy: [_replay_one(crowd, truth, policy, s, n_rounds, step, make_model,
                                     criterion, fit, callback, j)
                         for j, s in enumerate(seeds)] for policy in policies}
        whole = make_model().fit(crowd)
    return _replay_result(policies, runs, whole, truth,
                          1 + np.arange(n_rounds + 1) * step / crowd.n_items)


def _replay_result(policies, runs, whole, truth, labels_per_item) -> ReplayResult:
    """The replays' accuracies and fit costs by policy, and the whole crowd's accuracy."""
    known = truth >= 0
    return ReplayResult(tuple(policies), labels_per_item,
                        {p: np.array([r[0] for r in runs[p]]) for p in policies},
                        float((whole.predict()[known] == truth[known]).mean()),
                        *({p: sum(r[1][what] for r in runs[p]) for p in policies}
                          for what in ("n_iter", "seconds", "capped")))
