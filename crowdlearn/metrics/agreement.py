"""Krippendorff's alpha and its coincidence matrix (the distances are defined in the
notes of :mod:`crowdlearn.metrics`)."""

from __future__ import annotations

import numbers

import numpy as np

from crowdlearn._limits import get_size_limits
from crowdlearn.aggregation.multilabel import MultiCrowdLabels
from crowdlearn.labels import (CrowdLabels, _is_dataframe, _refuse_duplicate_columns,
                               as_crowd_labels)

__all__ = ["coincidence_matrix", "krippendorff_alpha"]


# -- Krippendorff's alpha ----------------------------------------------------------------------
def coincidence_matrix(labels, *, n_classes=None) -> np.ndarray:
    r"""Krippendorff's coincidence matrix of nominal labels, shape ``(K, K)``.

    .. math::

        \mathcal{O}_{pp'} = \sum_{i:\, |R_i| \ge 2}
        \frac{v_{ip}\, v_{ip'} - 1\{p = p'\}\, v_{ip}}{|R_i| - 1},

    with :math:`v_{ip}` the number of labels :math:`p` item :math:`i` received and
    :math:`|R_i| = \sum_p v_{ip}`: every ordered pair of two different labels of
    the same item adds :math:`1/(|R_i| - 1)`. Items with fewer than two labels are
    not pairable and add nothing. A repeated label (one worker labelling an item
    twice) counts as one more value of that item.
    """
    crowd = as_crowd_labels(labels, n_classes=n_classes)
    votes = crowd.vote_counts()                      # (n_items, K), one bincount
    m = votes.sum(axis=1)
    pairable = m >= 2
    votes, m = votes[pairable], m[pairable]
    w = 1.0 / (m - 1.0)
    weighted = votes * w[:, None]
    o = weighted.T @ votes
    o[np.diag_indices_from(o)] -= weighted.sum(axis=0)
    return o


_DISTANCES = ("nominal", "interval", "ordinal", "masi", "jaccard")


def krippendorff_alpha(labels, distance="nominal", *, n_classes=None) -> float:
    r"""Krippendorff's alpha with missing values: nominal, interval, ordinal or set-valued
    labels, or any distance.

    Parameters
    ----------
    labels : any form :func:`~crowdlearn.as_crowd_labels` accepts, or MultiCrowdLabels
        A :class:`~crowdlearn.CrowdLabels`, ``(item, expert, label)`` triples, a dense
        ``(n_items, n_experts)`` matrix with ``-1`` for missing, or a pandas DataFrame
        with ``task``, ``worker`` and ``label`` columns (set-valued labels as
        frozensets, as crowd-kit takes them). A :class:`~crowdlearn.MultiCrowdLabels`
        of binary targets is read as set-valued labels: each worker's value for an
        item is the set of targets they marked 1 (all of them answered, once).
    distance : {"nominal", "interval", "ordinal", "masi", "jaccard"} or callable
        The difference :math:`\delta_{pp'}` of two values (defined in the module's
        notes): equal or not, squared difference of the values, ordinal rank
        distance, MASI or Jaccard distance between sets. A callable
        ``distance(a, b) -> float`` (nltk's and crowd-kit's kind) is called once
        for each unordered pair of distinct values used -- the class ids, class
        indices for index-coded labels, frozensets of target indices for
        MultiCrowdLabels -- and must return a finite number >= 0. The second
        argument, by position or by keyword, as crowd-kit's
        ``alpha_krippendorff(answers, distance)``: ``krippendorff_alpha(df, "masi")``
        is ``krippendorff_alpha(df, distance="masi")``.
    n_classes : int, optional
        Number of classes of index-coded labels (classes never used change nothing);
        keyword only.

    Returns
    -------
    float
        :math:`\alpha = 1 - D_o / D_e`: 1 for perfect agreement, 0 at chance, at most 1.

    Raises
    ------
    ValueError
        When no item has two labels (nothing can be paired), or every pair of pairable
        values is at distance 0 (e.g. one class only): :math:`D_e = 0` and alpha is
        0/0, undefined (we raise rather than return NaN).
    TypeError
        When the distance does not apply to the labels (``"interval"`` or ``"ordinal"``
        on strings, whose order is unknown; ``"masi"`` on labels that are not sets).

    Notes
    -----
    K. Krippendorff, *Computing Krippendorff's Alpha-Reliability* (2011): from the
    coincidence matrix :math:`\mathcal{O}_{pp'}` (:func:`coincidence_matrix`), with
    :math:`\mathcal{O}_p = \sum_{p'} \mathcal{O}_{pp'}`, :math:`\mathcal{O} = \sum_p \mathcal{O}_p` pairable values,

    .. math::

        \alpha = 1 - \frac{D_o}{D_e} = 1 - (\mathcal{O} - 1)
            \frac{\sum_{p, p'} \mathcal{O}_{pp'}\,\delta_{pp'}}{\sum_{p, p'} \mathcal{O}_p\, \mathcal{O}_{p'}\,\delta_{pp'}}.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import krippendorff_alpha
    >>> round(krippendorff_alpha(np.array([[0, 0, -1], [1, 1, 1], [0, 1, 1]])), 4)
    0.5333
    >>> dense = np.array([[0, 1, -1], [2, 2, 2], [0, 1, 1]])
    >>> round(krippendorff_alpha(dense, distance="interval"), 4)
    0.641
    >>> round(krippendorff_alpha(dense, "interval"), 4)   # by position, as crowd-kit's
    0.641
    """
    return _alpha(labels, distance, n_classes)


def _alpha(labels, distance, n_classes) -> float:
    """:func:`krippendorff_alpha`'s computation, its arguments unchanged."""
    kind = _check_distance(distance)
    crowd, values = _alpha_input(labels, n_classes, kind)
    if kind == "nominal" and not isinstance(labels, MultiCrowdLabels):
        return _nominal_alpha(coincidence_matrix(crowd))
    o = coincidence_matrix(crowd)
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    if n == 0:
        raise ValueError(_NOT_PAIRABLE)
    used = np.flatnonzero(n_c > 0)            # values never paired play no part
    o, n_c = o[np.ix_(used, used)], n_c[used]
    delta = _distance_matrix(kind, distance, values[used], n_c)
    observed = float((o * delta).sum())
    expected = float(n_c @ delta @ n_c)
    if expected <= 0:
        raise ValueError("Krippendorff's alpha is undefined: every pair of pairable values "
                         "is at distance 0, so the expected disagreement D_e is 0 "
                         "(alpha = 0/0)")
    return float(1.0 - (n - 1.0) * observed / expected)


_NOT_PAIRABLE = ("Krippendorff's alpha needs at least one item with two labels or more (no "
                 "item is pairable)")


def _nominal_alpha(o: np.ndarray) -> float:
    """Nominal alpha from the coincidence matrix (the closed form, as before distances)."""
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    if n == 0:
        raise ValueError(_NOT_PAIRABLE)
    disagree = float(o.sum() - np.trace(o))
    expected = float(n * n - (n_c ** 2).sum())
    if expected <= 0:
        raise ValueError("Krippendorff's alpha is undefined: every pairable label is the "
                         "same class, so the expected disagreement D_e is 0 (alpha = 0/0)")
    return float(1.0 - (n - 1.0) * disagree / expected)


def _check_distance(distance) -> str:
    """The kind of ``distance``: one of the names, or ``"callable"``."""
    if isinstance(distance, str):
        if distance not in _DISTANCES:
            raise ValueError(f"distance must be one of {list(_DISTANCES)} or a callable "
                             f"distance(a, b), got {distance!r}")
        return distance
    if callable(distance):
        return "callable"
    hint = ""
    if isinstance(distance, numbers.Integral) and not isinstance(distance, bool):
        hint = f" (did you mean n_classes={distance}? it is keyword only)"
    raise TypeError(f"distance must be one of {list(_DISTANCES)} or a callable distance(a, b), "
                    f"got {type(distance).__name__}{hint}")


def _alpha_input(labels, n_classes, kind="nominal"):
    """Index-coded labels and the value of each class (an object array: the class ids, the
    class indices, or frozensets for MultiCrowdLabels). With a set distance (``kind``
    "masi" or "jaccard") a DataFrame's list, tuple or array labels are read as sets."""
    if isinstance(labels, MultiCrowdLabels):
        if n_classes is not None:
            raise ValueError("n_classes is not used with MultiCrowdLabels: the values are the "
                             "sets of targets marked 1")
        return _sets_from_multi(labels)
    sets = _sets_in_frame(labels, as_sets=kind in ("masi", "jaccard"))
    if sets is not None:
        return sets
    crowd = as_crowd_labels(labels, n_classes=n_classes)
    if crowd.class_ids is None:
        return crowd, np.arange(crowd.n_classes)
    values = np.asarray(crowd.class_ids)
    if values.dtype != object:
        return crowd, values
    # objects that do not sort (frozensets: < is "subset of") may reach us as several
    # classes for one value; alpha pairs values, so equal values become one class again
    first = {}
    canon = np.array([first.setdefault(v, len(first)) for v in values.tolist()], dtype=np.intp)
    if len(first) == values.shape[0]:
        return crowd, values
    merged = np.empty(max(len(first), 2), dtype=object)
    merged[:len(first)] = list(first)
    merged[len(first):] = [None] * (merged.shape[0] - len(first))
    return CrowdLabels(crowd.item, crowd.expert, canon[crowd.label], crowd.n_items,
                       crowd.n_experts, merged.shape[0]), merged


def _sets_in_frame(labels, as_sets: bool = False):
    """A DataFrame whose labels are sets, read with one class per distinct set (sets do
    not sort -- ``<`` means "subset of" -- so they are not left to the id encoder), and
    the sets; None for any other input. With ``as_sets`` lists, tuples and arrays of tags
    are sets too (a set distance compares them as sets)."""
    if not _is_dataframe(labels):
        return None
    _refuse_duplicate_columns(labels)
    if "label" not in labels.columns or labels["label"].dtype != object:
        return None
    values = labels["label"].tolist()
    if as_sets:
        values = [_as_tag_set(v) for v in values]
    is_set = [isinstance(v, (set, frozenset)) for v in values]
    if not any(is_set):
        return None
    if not all(is_set):
        other = values[is_set.index(False)]
        raise TypeError(f"the label column mixes sets with {type(other).__name__} values such "
                        f"as {other!r:.40}: give every label as a frozenset")
    first = {}
    codes = np.array([first.setdefault(frozenset(v), len(first)) for v in values],
                     dtype=np.intp)
    crowd = as_crowd_labels(labels.assign(label=codes))
    distinct = np.empty(len(first) + 1, dtype=object)
    distinct[:len(first)] = list(first)
    distinct[-1] = frozenset()          # the padding class of a crowd with a single set
    ids = np.asarray(crowd.class_ids, dtype=np.intp)
    ids = np.concatenate([ids, np.full(crowd.n_classes - ids.size, len(first))])
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, crowd.n_items, crowd.n_experts,
                       crowd.n_classes), distinct[ids]


def _as_tag_set(value):
    """A list, tuple or 1-D array of tags as a frozenset (other values as they are)."""
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.ndim == 1 else value
    if not isinstance(value, (list, tuple)):
        return value
    try:
        return frozenset(value)
    except TypeError:
        raise TypeError(f"a set-valued label holds tags that cannot be set members (e.g. "
                        f"lists): {value!r:.40}; give each label as a frozenset of strings "
                        f"or numbers") from None


def _sets_from_multi(crowd):
    """Set-valued labels from binary targets: each (item, worker) answer is the set of the
    targets it marked 1."""
    D, J = crowd.n_targets, crowd.n_experts
    wide = [d for d, k in enumerate(crowd.n_classes) if k != 2]
    if wide:
        raise ValueError(f"set-valued labels are read from binary targets (0: not in the set, "
                         f"1: in it); target(s) {wide[:5]} have more than two classes")
    pair = crowd.item.astype(np.int64) * J + crowd.expert
    key = pair * D + crowd.target
    if np.unique(key).size != key.size:
        raise ValueError("a worker answered the same target of an item twice: its set is "
                         "ambiguous")
    pairs, where, counts = np.unique(pair, return_inverse=True, return_counts=True)
    if (counts != D).any():
        first = int(np.flatnonzero(counts != D)[0])
        raise ValueError(f"worker {int(pairs[first] % J)} answered {int(counts[first])} of the "
                         f"{D} targets of item {int(pairs[first] // J)}: a set-valued label "
                         f"needs every target answered (0 or 1)")
    bits = np.zeros((pairs.size, D), dtype=bool)
    bits[where.ravel(), crowd.target] = crowd.label == 1
    sets, code = np.unique(bits, axis=0, return_inverse=True)
    K = max(sets.shape[0], 2)               # CrowdLabels needs two classes; padding is unused
    values = np.empty(K, dtype=object)
    values[:sets.shape[0]] = [frozenset(np.flatnonzero(row).tolist()) for row in sets]
    values[sets.shape[0]:] = [frozenset()] * (K - sets.shape[0])
    flat = CrowdLabels(pairs // J, pairs % J, code.ravel(), crowd.n_items, J, K)
    return flat, values


def _distance_matrix(kind, distance, values, n_c) -> np.ndarray:
    """:math:`\\delta_{pp'}` between the used values (``n_c``: their marginal counts)."""
    K = values.shape[0]
    if kind == "nominal":
        return 1.0 - np.eye(K)
    if kind == "interval":
        v = _numeric_values(values, kind)
        scale = float(np.max(np.abs(v), initial=0.0))
        if scale > 0:  # alpha does not change with the scale: no overflow near 1e308
            v = v / scale
        return (v[:, None] - v[None, :]) ** 2
    if kind == "ordinal":
        order = np.argsort(_numeric_values(values, kind), kind="stable")
        n = n_c[order]
        cum = np.cumsum(n)
        # between ranks a <= b: sum_{g=a..b} n_g = cum[b] - cum[a] + n[a]
        lo, hi = np.minimum.outer(np.arange(K), np.arange(K)), \
            np.maximum.outer(np.arange(K), np.arange(K))
        ranked = (cum[hi] - cum[lo] + n[lo] - (n[lo] + n[hi]) / 2.0) ** 2
        np.fill_diagonal(ranked, 0.0)
        back = np.argsort(order)
        return ranked[np.ix_(back, back)]
    if kind in ("masi", "jaccard"):
        return _set_distances(values, kind)
    return _callable_distances(distance, values)


def _numeric_values(values, kind) -> np.ndarray:
    """The classes' values as finite floats, or a TypeError (strings are not numbers)."""
    arr = np.asarray(values)
    if arr.dtype == object:
        bad = [v for v in arr.tolist()
               if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)]
        if not bad:
            arr = arr.astype(float)
    if arr.dtype.kind not in "iuf":
        example = arr.ravel()[0] if arr.size else None
        raise TypeError(f"the {kind} distance needs labels that are numbers; these labels are "
                        f"{type(example).__name__} values such as {example!r:.40}: map them to "
                        f"numbers first, or use distance='nominal'")
    arr = arr.astype(float)
    if not np.isfinite(arr).all():
        raise ValueError(f"the {kind} distance needs finite label values, got "
                         f"{arr[~np.isfinite(arr)][0]}")
    return arr


def _set_distances(values, kind) -> np.ndarray:
    """MASI (Passonneau 2006) or Jaccard distances between sets of tags."""
    bad = [v for v in values.tolist() if not isinstance(v, (set, frozenset))]
    if bad:
        raise TypeError(f"the {kind} distance needs set-valued labels (frozenset objects, "
                        f"or MultiCrowdLabels of binary targets), got "
                        f"{type(bad[0]).__name__} values such as {bad[0]!r:.40}")
    tags = {t: i for i, t in enumerate(set().union(*values.tolist()))}
    member = np.zeros((values.shape[0], max(len(tags), 1)))
    for row, v in enumerate(values.tolist()):
        member[row, [tags[t] for t in v]] = 1.0
    inter = member @ member.T
    size = member.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    equal = (inter == size[:, None]) & (inter == size[None, :])
    jac = np.where(equal, 1.0, inter / np.where(union > 0, union, 1.0))
    if kind == "jaccard":
        return 1.0 - jac
    nested = (inter == size[:, None]) | (inter == size[None, :])
    m = np.where(equal, 1.0, np.where(nested, 2 / 3, np.where(inter > 0, 1 / 3, 0.0)))
    return 1.0 - jac * m


def _callable_distances(distance, values) -> np.ndarray:
    """``distance(a, b)`` for every unordered pair of distinct values, checked."""
    K = values.shape[0]
    limit = get_size_limits().max_cells
    if K * K > limit:
        raise ValueError(f"a callable distance between {K:,} distinct values needs {K * K:,} "
                         f"numbers, beyond the size limits' max_cells={limit:,}")
    items = values.tolist()
    delta = np.zeros((K, K))
    for a in range(K):
        for b in range(a + 1, K):
            d = distance(items[a], items[b])
            if isinstance(d, (str, bytes)) or not isinstance(d, numbers.Real):
                raise TypeError(f"distance({items[a]!r:.30}, {items[b]!r:.30}) returned "
                                f"{type(d).__name__} {d!r:.30}, not a number")
            if not np.isfinite(d) or d < 0:
                raise ValueError(f"distance({items[a]!r:.30}, {items[b]!r:.30}) returned {d!r}; "
                                 f"a distance must be finite and >= 0")
            delta[a, b] = delta[b, a] = float(d)
    return delta
