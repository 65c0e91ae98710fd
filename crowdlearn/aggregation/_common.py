"""What the label models of this folder share: the sparse label matrix, the in-place
softmax, one-coin matrices, the Bernoulli log-likelihood of binary features (which
:mod:`crowdlearn.features.naive_bayes` exports), reading new labels onto fitted
identifiers, and reading the workers' skills given to a vote."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from scipy import sparse

try:  # scipy's COO-to-CSR conversion without summing duplicates (private, long-standing)
    from scipy.sparse._sparsetools import coo_tocsr as _coo_tocsr
except ImportError:  # pragma: no cover - then the labels are sorted by an argsort
    _coo_tocsr = None

from crowdlearn._ids import _id_kind, _ids_kind
from crowdlearn.labels import (CrowdLabels, _frame_onto, _is_dataframe, _reindex_onto,
                               as_crowd_labels)


class _Data(NamedTuple):
    """Training or prediction data, with the label matrix the E- and M-steps reuse, and
    what else one fit needs (Dawid--Skene models): the prior pseudo-counts in the model's
    own form (``(n_experts, K, K)``, or one-coin ``(right, wrong)``) and the known
    truths ``(rows, clamp)`` (``clamp``: 0 on the known class, ``-inf`` elsewhere)."""

    crowd: CrowdLabels
    X: np.ndarray | None
    votes: sparse.csr_array    # (n_items, n_experts * K + 1): see _flat_indices
    votes_t: sparse.csc_array  # its transpose (a view), for the M-step
    prior: object = None
    gold: tuple | None = None


def _safe_log(p: np.ndarray):
    """``log p`` with the positions where ``p == 0`` returned separately (no -inf in products)."""
    zero = p <= 0
    with np.errstate(divide="ignore"):
        return np.where(zero, 0.0, np.log(np.where(zero, 1.0, p))), zero


def bernoulli_log_likelihood(X: np.ndarray, feature_prob: np.ndarray) -> np.ndarray:
    """``log P(x^(i) | y = n)`` for every row ``i`` of ``X`` and class ``n``, shape ``(m, N)``.

    Computes :math:`\\sum_j x^{(i)}_j\\log\\phi_{j|n} + (1 - x^{(i)}_j)\\log(1-\\phi_{j|n})`
    with two matrix products. Exact zeros in ``feature_prob`` (possible without
    smoothing) are handled exactly: an item whose feature has probability 0
    under class ``n`` gets ``-inf`` for ``n``, never NaN.
    """
    log_p, zero_p = _safe_log(feature_prob)
    log_q, zero_q = _safe_log(1.0 - feature_prob)
    out = X @ log_p.T + (1.0 - X) @ log_q.T
    impossible = (X @ zero_p.T + (1.0 - X) @ zero_q.T) > 0
    if impossible.any():
        out = np.where(impossible, -np.inf, out)
    return out


def _flat_indices(crowd: CrowdLabels, K: int):
    """The labels as a sparse count matrix over flat ``(expert, label)`` indices, and its transpose.

    ``votes[i, r * K + p]`` (``K`` the number of classes :math:`N`) is how often
    expert ``r`` put item ``i`` in class ``p``, and the extra last column is 1 for
    every item. Both EM steps are then one sparse product, a single pass over the
    labels that touches only small tables: the E-step's ``votes @ T``, with
    ``T[r * K + p, n] = log M[r, n, p]`` (:math:`\\log M^{(r)}_{n,p}`) and last row
    ``log phi`` (:math:`\\log\\phi_n`), sums each item's log-probabilities (and its log
    prior); the M-step's ``votes.T @ q`` gives the expected counts of every
    ``(expert, label, true class)`` and, in its last row, of every class.

    Each row's entries are sorted by column (``sort_indices``: by expert, then label,
    the prior column last), so the products add the same terms in the same order
    whatever the order of the label rows, and a fit does bit-identical arithmetic for
    every permutation of them (the canonical order of :func:`_canonical_order`, within
    each item; labels already in that order cost one check).
    """
    n, n_labels, JK = crowd.n_items, crowd.n_labels, crowd.n_experts * K
    nnz = n_labels + n
    index = np.int32 if max(nnz, JK + 1) < np.iinfo(np.int32).max else np.int64
    item, expert, label = crowd.item, crowd.expert, crowd.label
    grouped = not n_labels or bool((item[1:] >= item[:-1]).all())
    if not grouped and _coo_tocsr is None:
        # group the labels by item, and within an item put them in the canonical order:
        # one argsort of an int64 key, which costs what sorting by item alone did
        order = _triple_order(item, expert, label, n, crowd.n_experts, K)
        item, expert, label, grouped = item[order], expert[order], label[order], True
    pair = expert.astype(index)
    pair *= K
    pair += label
    # row i holds item i's labels (in their given order, sorted below), then the prior
    # column JK
    if grouped:
        indptr = np.zeros(n + 1, dtype=index)
        np.cumsum(np.bincount(item, minlength=n) + 1, out=indptr[1:])
        indices = np.full(nnz, JK, dtype=index)
        position = np.arange(n_labels, dtype=index)
        position += item  # label t goes after the t labels and item_t priors before it
        indices[position] = pair
    else:  # scipy's counting sort of the entries into rows: one pass, no argsort
        indptr, indices = _rows_by_counting(item, pair, n, JK, index)
    votes = sparse.csr_array((np.ones(nnz), indices, indptr), shape=(n, JK + 1))
    votes.sort_indices()  # each item's labels in one order (one check when they are)
    return votes, votes.T


def _rows_by_counting(item, pair, n: int, JK: int, index):
    """``(indptr, indices)`` of the rows of :func:`_flat_indices` for labels not grouped by
    item: each item's labels in their given order, then the prior column ``JK``, placed by
    scipy's COO-to-CSR counting sort (linear time; an argsort costs ``n log n``)."""
    n_labels = pair.size
    nnz = n_labels + n
    rows = np.empty(nnz, dtype=index)
    rows[:n_labels] = item
    rows[n_labels:] = np.arange(n, dtype=index)
    cols = np.empty(nnz, dtype=index)
    cols[:n_labels] = pair
    cols[n_labels:] = JK
    indptr = np.empty(n + 1, dtype=index)
    indices = np.empty(nnz, dtype=index)
    _coo_tocsr(n, JK + 1, nnz, rows, cols, np.ones(nnz), indptr, indices, np.empty(nnz))
    return indptr, indices


def _triple_order(item, expert, label, n_items: int, n_experts: int, n_classes: int, *,
                  max_key: int = 2 ** 62) -> np.ndarray:
    """The permutation that sorts the labels by item, then expert, then label: one argsort
    of the int64 key ``(item * n_experts + expert) * n_classes + label`` (about 3x faster
    than ``np.lexsort``) when every key stays below ``max_key``, ``np.lexsort`` otherwise."""
    if n_items * n_experts * n_classes < max_key:
        key = item.astype(np.int64) * n_experts
        key += expert
        key *= n_classes
        key += label
        return np.argsort(key, kind="stable")
    return np.lexsort((label, expert, item))


def _canonical_order(crowd: CrowdLabels) -> CrowdLabels:
    """The same labels sorted by item, then expert, then label.

    A model that fits on this copy does the same arithmetic, in the same order, whatever
    the order of the input rows, so any permutation of the rows gives bit-identical
    results: floating-point sums over the labels (``np.bincount``, ``sum``) depend on
    the order of their terms, and an iterative fit (an M-step stopped after a few
    optimiser iterations, a flat optimum) can amplify a last-bit difference into a
    different answer. Equal triples are interchangeable, so ties need no rule. Labels
    already in that order are returned as they are (one pass to check).
    """
    item, expert, label = crowd.item, crowd.expert, crowd.label
    if item.size < 2:
        return crowd
    d_item, d_expert = np.diff(item), np.diff(expert)
    in_order = (d_item > 0) | ((d_item == 0) & (
        (d_expert > 0) | ((d_expert == 0) & (label[1:] >= label[:-1]))))
    if in_order.all():
        return crowd
    order = _triple_order(item, expert, label, crowd.n_items, crowd.n_experts, crowd.n_classes)
    return CrowdLabels(item[order], expert[order], label[order], crowd.n_items,
                       crowd.n_experts, crowd.n_classes, crowd.item_ids, crowd.expert_ids,
                       crowd.class_ids,  # results by id when the input gives them
                       _from_frame=getattr(crowd, "_from_frame", False) is True)


def _softmax_rows_inplace(log_joint: np.ndarray, block_size: int = 1 << 17):
    """Turn rows of log joint probabilities into posteriors, in place.

    Returns ``(posterior, log_evidence)`` as :func:`normalize_log` does (row
    maximum subtracted before exponentiating; rows that are ``-inf`` everywhere
    give zeros and ``log_evidence = -inf``), but overwrites its input, works
    column by column (several times faster than reductions along short rows)
    and goes through the rows in blocks of about ``block_size`` numbers, which
    stay in cache between the passes.
    """
    n, K = log_joint.shape
    log_evidence = np.empty(n)
    rows = max(1, block_size // K)
    for start in range(0, n, rows):
        block = log_joint[start:start + rows]
        cols = [block[:, k] for k in range(K)]
        m = cols[0].copy()
        for col in cols[1:]:
            np.maximum(m, col, out=m)
        finite = np.isfinite(m).all()
        if not finite:
            m[~np.isfinite(m)] = 0.0
        block -= m[:, None]
        np.exp(block, out=block)
        s = cols[0].copy()
        for col in cols[1:]:
            s += col
        out = log_evidence[start:start + rows]
        with np.errstate(divide="ignore"):
            np.log(s, out=out)
        out += m
        if not finite:
            s[~(s > 0)] = 1.0
        block /= s[:, None]
    return log_joint, log_evidence


def _new_crowd(labels, expert_ids, class_ids, n_experts: int, n_classes: int) -> CrowdLabels:
    """New labels on a fitted model's workers and classes, as index-coded ``CrowdLabels``.

    A DataFrame is read straight onto the fitted identifiers (so it may use only
    some of the classes); other forms are read as in ``fit`` and re-indexed.
    An unknown worker or class is a ``ValueError``.
    """
    if labels is None:
        raise ValueError("labels is None")
    if _is_dataframe(labels) and class_ids is not None and expert_ids is not None:
        crowd = _frame_onto(labels, expert_ids, class_ids)
    else:
        crowd = as_crowd_labels(labels, n_classes=None if isinstance(labels, CrowdLabels)
                                else n_classes)
        crowd = _reindex_onto(crowd, expert_ids, class_ids)
    if crowd.expert.size and crowd.expert.max() >= n_experts:
        raise ValueError(f"unknown expert {int(crowd.expert.max())}: the model was fitted on "
                         f"{n_experts} workers (indices 0 to {n_experts - 1})")
    if crowd.label.size and crowd.label.max() >= n_classes:
        raise ValueError(f"label {int(crowd.label.max())} out of range: the model was fitted "
                         f"with n_classes={n_classes}")
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, crowd.n_items, n_experts,
                       n_classes)


def _softmax_last(x: np.ndarray) -> np.ndarray:
    """Softmax along the last axis (SQUAREM's way back from log-probabilities)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _one_coin_matrices(accuracy: np.ndarray, K: int) -> np.ndarray:
    """``(n_experts, K, K)`` confusion matrices with ``accuracy`` on the diagonal and the
    rest of each row spread evenly (``crowdlearn.simulate.one_coin_confusion`` without
    the input checks)."""
    J = accuracy.shape[0]
    conf = np.empty((J, K, K))
    conf[...] = ((1.0 - accuracy) / (K - 1))[:, None, None]
    idx = np.arange(K)
    conf[:, idx, idx] = accuracy[:, None]
    return conf


def _ids_or_range(ids, n):
    return list(range(n)) if ids is None else ids.tolist()


def _read_gold(gold, crowd: CrowdLabels):
    """Known true classes as an array of class indices per item (-1: unknown), or None."""
    if gold is None:
        return None
    n, K = crowd.n_items, crowd.n_classes
    out = np.full(n, -1, dtype=np.intp)
    if type(gold).__module__.split(".")[0] == "pandas" and hasattr(gold, "index") \
            and not hasattr(gold, "columns"):
        if not gold.index.is_unique:  # a dict would keep one of the classes given
            dup = gold.index[gold.index.duplicated()][:3].tolist()
            raise ValueError(f"gold names item(s) {dup} more than once; give one known "
                             f"class per item")
        gold = dict(zip(gold.index.tolist(), gold.tolist()))
    if isinstance(gold, dict):
        items = {v: i for i, v in enumerate(_ids_or_range(crowd.item_ids, n))}
        classes = {v: k for k, v in enumerate(_ids_or_range(crowd.class_ids, K))}
        item_kind, class_kind = _ids_kind(crowd.item_ids), _ids_kind(crowd.class_ids)
        for item, cls in gold.items():
            if isinstance(cls, float) and cls != cls:
                raise ValueError(f"gold has a missing class (NaN) for item {item!r}")
            for what, value, kind, where in (
                    (f"names item {item!r}", item, item_kind, "among the labelled items"),
                    (f"gives item {item!r} the class {cls!r}", cls, class_kind,
                     "a class of the labels")):
                if (_id_kind(value) == "bool") != (kind == "bool"):  # True == 1 in Python
                    raise ValueError(f"gold {what} of type {_id_kind(value)}, which is not "
                                     f"{where}: their identifiers are of type {kind} (True "
                                     f"is not 1)")
            if item not in items:
                raise ValueError(f"gold names item {item!r}, which is not among the labelled "
                                 f"items" + ("" if crowd.item_ids is not None else
                                             f" (indices 0 to {n - 1})"))
            if cls not in classes:
                raise ValueError(f"gold gives item {item!r} the class {cls!r}, which is not a "
                                 f"class of the labels ({list(classes)[:10]})")
            out[items[item]] = classes[cls]
    else:
        if isinstance(gold, (str, bytes, set, frozenset)) or np.ndim(gold) != 1:
            raise ValueError(f"gold must be a dict or Series (item -> class) or a 1-D array "
                             f"of class indices with -1 for unknown, got {type(gold).__name__}")
        from crowdlearn._validation import check_int_array

        arr = check_int_array(gold, "gold", low=-1)
        if arr.shape[0] != n:
            raise ValueError(f"gold has {arr.shape[0]} entries but the labels describe {n} "
                             f"items (use -1 where the truth is unknown)")
        if arr.size and arr.max() >= K:
            raise ValueError(f"gold has class {int(arr.max())} out of range (n_classes={K})")
        out[:] = arr
    if not (out >= 0).any():
        raise ValueError("gold gives no known class (every entry is unknown)")
    return out


# -- skills given to a vote (WeightedMajorityVote, MajorityVote.fit(labels, skills)) --------
def _check_skill_values(values: np.ndarray, weights: str, where: str, ids=None) -> np.ndarray:
    """Refuse NaN, inf and skills out of range (naming the workers: ``ids`` by index)."""
    ids = np.arange(values.shape[0]) if ids is None else np.asarray(ids)
    if not np.isfinite(values).all():
        bad = np.flatnonzero(~np.isfinite(values))
        raise ValueError(f"{where} contains NaN or inf (workers {ids[bad[:5]].tolist()})")
    out = (values < 0) | (values > 1) if weights == "log-odds" else values < 0
    if out.any():
        first = int(np.argmax(out))
        rule = ("accuracies in [0, 1] for log-odds weights" if weights == "log-odds" else
                "non-negative (a label counts with its worker's skill)")
        raise ValueError(f"{where} must be {rule}, got {float(values[first])!r} for worker "
                         f"{ids[first:first + 1].tolist()[0]!r}")
    return values


def _is_by_id(skills) -> bool:
    """A mapping from worker id to skill (a dict or a pandas Series)."""
    return isinstance(skills, Mapping) or (
        type(skills).__module__.split(".")[0] == "pandas" and hasattr(skills, "index")
        and hasattr(skills, "to_dict") and getattr(skills, "ndim", 1) == 1)


def _resolve_skills(skills, crowd: CrowdLabels, weights: str) -> np.ndarray:
    """``skills`` as one float per worker index of ``crowd``.

    An array is read by worker index (for labels built from a table, the index
    of each worker id in the sorted ids). A dict or a pandas Series is read by
    worker id (the original ids of a table or DataFrame, else the indices);
    every worker of ``crowd`` needs a skill, extra ids are ignored.
    """
    J = crowd.n_experts
    if _is_by_id(skills):
        if hasattr(skills, "to_dict"):
            if not skills.index.is_unique:
                dup = skills.index[skills.index.duplicated()][:3].tolist()
                raise ValueError(f"skills has duplicate worker ids, e.g. {dup}")
            skills = skills.to_dict()
        ids = np.arange(J) if crowd.expert_ids is None else crowd.expert_ids
        ids = ids.tolist()
        missing = [w for w in ids if w not in skills]
        if missing:
            raise ValueError(f"no skill for worker(s) {missing[:5]}"
                             f"{' and more' if len(missing) > 5 else ''}: skills must give "
                             f"one for every worker in the labels ({J} workers)")
        values = []
        for w in ids:
            v = skills[w]
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise ValueError(f"the skill of worker {w!r} must be a number, got {v!r}")
            values.append(float(v))
        values = np.array(values, dtype=float)
    else:
        if isinstance(skills, (str, bytes, set, frozenset)):
            raise ValueError(f"skills must be an array (one skill per worker index) or a "
                             f"dict/Series by worker id, got {type(skills).__name__}")
        try:
            values = np.array(skills, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("skills must be an array of numbers (one per worker index) or "
                             "a dict/Series by worker id") from None
        if values.ndim != 1 or values.shape[0] != J:
            raise ValueError(f"skills must have one entry per worker, shape ({J},), got "
                             f"shape {values.shape}")
    return _check_skill_values(values, weights, "skills", crowd.expert_ids)
