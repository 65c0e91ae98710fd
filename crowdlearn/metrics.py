r"""Agreement and uncertainty: how much the crowd agrees, how sure a fitted model is.

* :func:`krippendorff_alpha` -- Krippendorff's alpha with missing values, from
  the coincidence matrix: nominal, interval, ordinal, MASI, Jaccard or any
  distance.
* :func:`posterior_entropy` -- the entropy of each item's posterior under a
  fitted model.
* :func:`consistency`, :func:`accuracy_on_aggregates` -- crowd-kit's metrics:
  how probable the aggregates are under the workers' skills, and how often
  the workers agree with them.
* :func:`spammer_score` -- Raykar and Yu's distance of every worker's
  confusion matrix to a spammer's.
* :func:`worker_quality_intervals` -- confidence intervals for every worker's
  estimated accuracy and confusion matrix under a fitted
  :class:`~crowdlearn.DawidSkene` or :class:`~crowdlearn.OneCoinDawidSkene`:
  bootstrap over items, observed (Louis) information for one-coin accuracies,
  or Beta/Dirichlet intervals from the expected counts.

Everything is vectorised: no Python loop over items or labels.

The distances of :func:`krippendorff_alpha` (Krippendorff 2011; Passonneau 2006 for
MASI), :math:`\delta_{pp'}` between the values :math:`p` and :math:`p'`:

* ``"nominal"``: :math:`\delta_{pp'} = 1\{p \ne p'\}`.
* ``"interval"``: :math:`(\mathrm{val}_p - \mathrm{val}_{p'})^2`, :math:`\mathrm{val}_p`
  the numeric value of class :math:`p`: its label when the labels were numbers in a
  table, its index for index-coded labels. String labels are refused.
* ``"ordinal"``: :math:`\big(\sum_{p''=p}^{p'} \mathcal{O}_{p''}
  - \frac{\mathcal{O}_p + \mathcal{O}_{p'}}{2}\big)^2`,
  the classes ranked by value and :math:`\mathcal{O}_{p''}` the marginal counts of the
  coincidence matrix; only the order of the values matters. String labels are
  refused (their order is not known).
* ``"masi"``: :math:`1 - J(A, B)\, M(A, B)` for two sets of tags, :math:`J` the
  Jaccard index :math:`|A \cap B| / |A \cup B|` and :math:`M` 1 if
  :math:`A = B`, 2/3 if one contains the other, 1/3 if they intersect
  otherwise, 0 if they are disjoint. nltk's ``masi_distance``, which crowd-kit
  uses, rounds 2/3 and 1/3 to 0.67 and 0.33, so its alpha differs slightly
  (pass it as the callable to get crowd-kit's number).
* ``"jaccard"``: :math:`1 - J(A, B)`. Two empty sets are equal (distance 0).

The methods of :func:`worker_quality_intervals`, and what each ignores:

**Bootstrap.** Items are resampled with replacement (an item drawn twice
brings all its labels twice) and the model is refitted on each resample by
EM with the model's own E- and M-steps and ``alpha``, *warm-started from
the fitted parameters*, so that every replicate ends near the fitted
optimum rather than at a relabelled copy of it. All replicates run at once
as one block-diagonal problem (one sparse product per EM step). The hidden
classes of each replicate are then matched to the fitted ones (Dawid--Skene,
and one-coin with two classes, where swapping the classes is a symmetry):
the permutation maximising :math:`\sum_i \sum_n Q^{*}_i(n)\, Q_{\mathrm{orig}(i)}(\text{perm}(n))`,
the agreement of the replicate's posterior :math:`Q^{*}_i` with the original posterior
of the same items (:math:`\mathrm{orig}(i)` the original of the replicate's item
:math:`i`). Intervals are the percentiles
:math:`(1 \mp \text{level})/2` of the replicates. Workers with few labels
are often absent from a resample and then get an uninformative estimate in
that replicate, which widens their interval, as it should.

**Fisher (one-coin).** The parameters are the logits
:math:`\alpha_r = \log\frac{\eta_r}{1 - \eta_r}` of the accuracies
:math:`\eta_r` and the class-prior logits, the vector
:math:`\beta_0` of the :math:`\log(\phi_n/\phi_N)`, :math:`n < N`. By Louis' identity
the observed information of the incomplete-data log-likelihood
:math:`\ell` is the expected complete-data information minus the
information lost by not seeing the classes:

.. math::

    -\nabla^2 \ell(\theta) = \mathbb{E}\big[-\nabla^2 \ell_c \mid \text{labels}\big]
    - \sum_i \operatorname{Cov}_{n \sim Q_i}\big[\nabla \log p(\mathcal{D}_i, y^{(i)} = n)\big],

where :math:`\nabla \log p(\mathcal{D}_i, y^{(i)} = n)` is the gradient of item
:math:`i`'s complete-data log-likelihood when its class is :math:`n` (its expectation
over :math:`Q_i` is the score :math:`\nabla\ell`, Fisher's identity). For the
one-coin model, with :math:`L^{(i)}_{r,p}` the number of labels :math:`p` worker
:math:`r` gave item :math:`i`,

.. math::

    \frac{\partial \ell_c}{\partial \alpha_r} = L^{(i)}_{r, y^{(i)}}
    - \eta_r \sum_p L^{(i)}_{r,p}, \qquad
    \frac{\partial \ell_c}{\partial \beta_0} = \big(1\{y^{(i)} = n\} - \phi_n\big)_{n < N},

since :math:`\partial_{\alpha_r} \log \eta_r = 1 - \eta_r` and
:math:`\partial_{\alpha_r} \log\frac{1 - \eta_r}{N - 1} = -\eta_r`. The complete-data
Hessian does not depend on the classes:
:math:`-\partial^2 \ell_c/\partial\alpha_r^2 = |I_r|\, \eta_r (1 - \eta_r)` and
:math:`-\partial^2 \ell_c/\partial\beta_0\,\partial\beta_0^\top =
m\,(\operatorname{diag}\phi - \phi\phi^\top)`, no cross terms. The centred
scores (minus their mean under :math:`Q_i`) are, in :math:`\alpha_r`,
:math:`\sum_p L^{(i)}_{r,p} \big(1\{p = n\} - Q_i(p)\big)`, and
:math:`1\{n = n'\} - Q_i(n')` in the prior logit of :math:`n'`, so the
lost information is ``S.T @ diag(Q) @ S`` for a sparse
matrix ``S`` with one row per (item, class): exact, analytic, one
sparse product. With ``alpha > 0`` the curvature of the log prior,
:math:`2\alpha \eta_r(1 - \eta_r)` and :math:`\alpha N (\operatorname{diag}\phi -
\phi\phi^\top)`, is added (the information of the log-posterior, a Laplace
approximation). The interval is :math:`\hat\alpha_r` plus or minus ``z`` (the normal
quantile of ``level``) times the square root of entry :math:`(r, r)` of the inverse
information, mapped back by the logistic function, so it stays in
:math:`(0, 1)`; the inverse takes the uncertainty of the class prior and of
the other workers into account. Workers with an estimate on the boundary
(0 or 1, where the logit is infinite) fall back to the ``"counts"``
interval; workers without labels get :math:`(0, 1)`.

**Counts.** Each confusion row is given the Dirichlet distribution of the
expected counts plus the model's pseudo-counts plus one,
:math:`\text{Dir}(C^{(r)}_{n,\cdot} + \alpha + 1)`, (one-coin:
:math:`\text{Beta}(C_r + \alpha + 1, |I_r| - C_r + \alpha + 1)`), whose mode
is the fitted value, and the intervals are its marginal quantiles; the
Dawid--Skene accuracy gets the Beta matching the mean and variance of
:math:`\sum_n \phi_n M^{(r)}_{n,n}` with :math:`\phi` held fixed. This treats the
expected counts as if they were observed: it ignores the uncertainty of the
posterior (and of :math:`\phi`), so the intervals are too narrow when the
classes are uncertain. Fast, deterministic.
"""

from __future__ import annotations

import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy import sparse, stats
from scipy.special import expit
from scipy.optimize import linear_sum_assignment

from crowdlearn._limits import get_size_limits
from crowdlearn._validation import (as_float_array, check_bool, check_int_array,
                                    check_probability_matrix, check_random_state,
                                    check_scalar)
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.aggregation._common import _Data, _flat_indices, _softmax_rows_inplace
from crowdlearn.labels import (CrowdLabels, _is_dataframe, _refuse_duplicate_columns,
                               _reindex_onto, as_crowd_labels)
from crowdlearn.aggregation.multilabel import MultiCrowdLabels
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.aggregation._common import _one_coin_matrices

__all__ = ["krippendorff_alpha", "posterior_entropy", "worker_quality_intervals",
           "WorkerQualityIntervals", "consistency", "accuracy_on_aggregates", "spammer_score"]


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


# -- crowd-kit's metrics: consistency, accuracy on aggregates; the spammer score ---------------
def _is_model(obj) -> bool:
    return hasattr(obj, "fit") or hasattr(obj, "posterior_")


def _fitted_posterior(model) -> np.ndarray:
    check = getattr(model, "_check_fitted", None)
    if check is not None:
        check()
    if not hasattr(model, "posterior_"):
        raise ValueError(f"{type(model).__name__} has no posterior_: fit it first")
    return np.asarray(model.posterior_, dtype=float)


def _crowd_of_model(model, labels) -> CrowdLabels:
    """``labels``, the labels ``model`` was fitted on, indexed like the model: its items,
    workers and classes. Labels of other items are refused."""
    posterior = _fitted_posterior(model)
    if posterior.ndim != 2:
        raise ValueError(f"{type(model).__name__} has a posterior of shape {posterior.shape}: "
                         f"only models of one label per item are supported")
    n, K = posterior.shape
    J = int(getattr(model, "n_experts_", 0))
    crowd = as_crowd_labels(labels, n_classes=None if _is_dataframe(labels)
                            or isinstance(labels, CrowdLabels) else K)
    ids = getattr(model, "item_ids_", None)
    same_items = crowd.n_items == n and (
        (ids is None and crowd.item_ids is None)
        or (ids is not None and crowd.item_ids is not None
            and np.array_equal(np.asarray(ids), np.asarray(crowd.item_ids))))
    if not same_items:
        raise ValueError(f"labels must be the labels the model was fitted on: the model has "
                         f"{n} items{'' if ids is None else ' with task ids'}, these labels "
                         f"{crowd.n_items}{'' if crowd.item_ids is None else ' with task ids'}"
                         f" that differ")
    crowd = _reindex_onto(crowd, getattr(model, "expert_ids_", None),
                          getattr(model, "class_ids_", None))
    if crowd.expert.size and crowd.expert.max() >= J:
        raise ValueError(f"unknown worker {int(crowd.expert.max())}: the model was fitted on "
                         f"{J} workers")
    if crowd.label.size and crowd.label.max() >= K:
        raise ValueError(f"label {int(crowd.label.max())} out of range: the model has {K} "
                         f"classes")
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, n, J, K)


def _skill_matrices(skills, crowd: CrowdLabels, expert_ids) -> np.ndarray:
    """Workers' confusion matrices ``(J, K, K)`` from ``skills``: one accuracy per worker
    (a one-coin matrix), confusion matrices, or a pandas Series by worker id."""
    J, K = crowd.n_experts, crowd.n_classes
    if hasattr(skills, "reindex") and hasattr(skills, "index"):      # pandas, by worker id
        if expert_ids is None:
            raise ValueError("skills given as a Series by worker id need labels (or a model) "
                             "with worker ids, e.g. a DataFrame of labels")
        skills = skills.reindex(_pd_index(expert_ids)).to_numpy()
    arr = as_float_array(skills, "skills")
    used = np.unique(crowd.expert)
    if arr.ndim == 1:
        if arr.shape[0] != J:
            raise ValueError(f"skills must hold one accuracy per worker ({J}), got {arr.shape[0]}")
        p = arr[used]
        if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
            raise ValueError("skills must be probabilities in [0, 1] (a worker's chance of a "
                             "correct label), with one for every worker who gave a label; got "
                             f"{p[~((p >= 0) & (p <= 1))][:3].tolist()}")
        return _one_coin_matrices(np.where(np.isfinite(arr), arr, 1.0 / K), K)
    if arr.shape != (J, K, K):
        raise ValueError(f"skills must have shape ({J},) (accuracies) or ({J}, {K}, {K}) "
                         f"(confusion matrices), got {arr.shape}")
    check_probability_matrix(arr[used].reshape(-1, K), "skills (confusion rows)", atol=1e-6)
    return arr


def _pd_index(ids):
    """A pandas Index of ``ids``."""
    from crowdlearn.frames import require_pandas
    return require_pandas().Index(ids)


def _model_skills(model):
    """A fitted model's workers: its confusion matrices, or else its ``skills_``."""
    conf = getattr(model, "confusion_", None)
    if conf is not None and np.ndim(conf) == 3:
        return np.asarray(conf, dtype=float)
    if hasattr(model, "skills_"):
        skills = np.asarray(model.skills_, dtype=float)
        finite = skills[np.isfinite(skills)]
        if ((finite < 0) | (finite > 1)).any():
            raise ValueError(f"the skills_ of {type(model).__name__} are not probabilities "
                             f"(they range over [{finite.min():.3g}, {finite.max():.3g}]), so "
                             f"they cannot be read as accuracies: pass skills=")
        return skills
    raise ValueError(f"{type(model).__name__} has neither confusion matrices (confusion_) "
                     f"nor skills_: pass skills=")


def consistency(model_or_posterior, labels, *, skills=None, by_task: bool = False):
    r"""How probable the aggregated labels are given the workers' answers and skills
    (crowd-kit's ``consistency``).

    Item :math:`i`, with aggregated class :math:`\hat y^{(i)}` and labels
    :math:`y^{(i)}_r` from the workers :math:`r \in R_i`, scores

    .. math::

        \frac{\prod_{r \in R_i} M^{(r)}_{\hat y^{(i)}, y^{(i)}_r}}
             {\sum_{n} \prod_{r \in R_i} M^{(r)}_{n, y^{(i)}_r}},

    the posterior of :math:`\hat y^{(i)}` under a *uniform* class prior, where
    :math:`M^{(r)}` is worker :math:`r`'s confusion matrix (rows: true
    class) or, when the skills are one accuracy :math:`\eta_r` per worker, the
    one-coin matrix with :math:`\eta_r` on the diagonal and
    :math:`(1 - \eta_r)/(N - 1)` elsewhere (crowd-kit's definition). The result
    is the mean of that score over the items with at least one label.

    Parameters
    ----------
    model_or_posterior : fitted model, or array of shape (n_items, n_classes)
        A fitted crowdlearn model: the aggregated labels are its ``predict()``
        (its own tie rule). Or a posterior: the aggregated label of each item
        is its most probable class (the lowest on ties), and ``skills`` must be
        given.
    labels : labels in any form ``fit`` accepts
        The labels the model was fitted on (the same items; a DataFrame is read
        onto the model's workers and classes). With a posterior, its rows are
        these labels' items and its columns their classes.
    skills : array-like or pandas Series, optional
        One accuracy in [0, 1] per worker, shape ``(n_experts,)`` (a Series by
        worker id for labels with ids), or confusion matrices
        ``(n_experts, K, K)``. Default: the model's ``confusion_`` when it has
        them (Dawid--Skene, one-coin, MACE), else its ``skills_`` (which must be
        probabilities: GLAD's are not).
    by_task : bool, default False
        Return :math:`c_i` for every item instead of the mean.

    Returns
    -------
    float, or ndarray of shape (n_items,) / pandas Series by task id
        In [0, 1]. By task: NaN for an item without labels (crowd-kit leaves
        such items out); a Series when the model was fitted on a DataFrame.
        An item whose labels have probability 0 under every class (two
        workers of skill 1 disagreeing) gets 0, as in crowd-kit.

    Notes
    -----
    Unlike crowd-kit, the model comes fitted (crowd-kit fits its aggregator,
    a majority vote by default); :math:`K` is the model's number of classes
    (crowd-kit's: the distinct labels in the data); a model's confusion
    matrices are used when it has them (for one-coin models they are its
    accuracies'); products are sums of logarithms, which do not underflow.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import consistency
    >>> posterior = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> labels = np.array([[0, 0, 1], [1, 1, 1]])
    >>> round(consistency(posterior, labels, skills=[0.8, 0.8, 0.6]), 4)
    0.9371
    """
    model, crowd, aggregated, skills, expert_ids = _consistency_inputs(model_or_posterior,
                                                                       labels, skills)
    by_task = check_bool(by_task, "by_task")
    conf = _skill_matrices(skills, crowd, expert_ids)
    per_item = _consistency_per_item(crowd, conf, aggregated)
    if by_task:
        by_item = getattr(model, "_by_item", None)
        return by_item(per_item, "consistency") if callable(by_item) else per_item
    labelled = ~np.isnan(per_item)
    if not labelled.any():
        raise ValueError("no item has a label: consistency is undefined")
    return float(per_item[labelled].mean())


def _consistency_inputs(model_or_posterior, labels, skills):
    """``(model or None, crowd, aggregated class indices, skills, worker ids)``."""
    if _is_model(model_or_posterior):
        model = model_or_posterior
        crowd = _crowd_of_model(model, labels)
        aggregated = np.asarray(model.predict(), dtype=np.intp)
        if skills is None:
            skills = _model_skills(model)
        return model, crowd, aggregated, skills, getattr(model, "expert_ids_", None)
    if skills is None:
        raise ValueError("with a posterior, pass the workers' skills: skills=")
    q = check_probability_matrix(model_or_posterior, "posterior", atol=1e-6)
    crowd = as_crowd_labels(labels, n_classes=q.shape[1])
    if crowd.n_items != q.shape[0] or crowd.n_classes != q.shape[1]:
        raise ValueError(f"the posterior has shape {q.shape} but the labels describe "
                         f"{crowd.n_items} items and {crowd.n_classes} classes")
    return None, crowd, np.argmax(q, axis=1), skills, crowd.expert_ids


def _consistency_per_item(crowd, conf, aggregated) -> np.ndarray:
    """:math:`c_i` of every item (NaN without labels): the Dawid--Skene E-step under the
    skills and a uniform class prior, read at the aggregated class."""
    from crowdlearn.aggregation.dawid_skene import e_step

    K = crowd.n_classes
    with np.errstate(divide="ignore"):
        post, _ = e_step(crowd, (np.full(K, 1.0 / K), conf))
    c = post[np.arange(crowd.n_items), aggregated]  # 0 where every class has probability 0
    c[crowd.labels_per_item() == 0] = np.nan
    return c


def accuracy_on_aggregates(labels, aggregated, *, by=None):
    r"""The share of the workers' labels that equal the aggregated label of their item
    (crowd-kit's ``accuracy_on_aggregates``).

    Parameters
    ----------
    labels : labels in any form ``fit`` accepts
    aggregated : fitted model, array-like of shape (n_items,), or pandas Series
        The aggregated labels: a fitted model (its ``predict()``; ``labels`` must
        be the labels it was fitted on), class indices (``-1``: no aggregate for
        that item, its labels are left out), or a Series of class ids indexed by
        task id, for labels with task ids (tasks absent or NaN are left out, as
        crowd-kit's join does).
    by : {None, "worker", "task"}, default None
        ``None``: one number over all the labels scored (each label counts
        once, so workers with more labels weigh more); ``"worker"``: each
        worker's agreement; ``"task"``: each item's.

    Returns
    -------
    float, or numpy masked array / pandas Series
        In [0, 1], never NaN. Per worker or task, a worker or task with no label scored
        (no label at all, or only labels of items without an aggregate) has no
        accuracy: for labels with ids (a DataFrame) the result is a Series by worker or
        task id that leaves them out (as crowd-kit's ``groupby`` does); otherwise a
        masked array with one entry per worker or task index, masked there (its
        ``mean()`` skips them; ``.filled(np.nan)`` gives NaN there if wanted).

    Notes
    -----
    crowd-kit drops exact duplicate ``(task, worker, label)`` rows before
    counting; here every label counts, repeated ones included (as everywhere
    in crowdlearn). Its default aggregator is a majority vote fitted on the
    labels: pass ``MajorityVote().fit(labels)`` for the same.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import accuracy_on_aggregates
    >>> labels = np.array([[0, 0, 1], [1, 1, 1], [0, 1, -1]])
    >>> accuracy_on_aggregates(labels, [0, 1, 0])
    0.75
    >>> accuracy_on_aggregates(labels, [0, 1, 0], by="worker").tolist()
    [1.0, 0.6666666666666666, 0.5]
    """
    if by not in (None, "worker", "task"):
        raise ValueError(f"by must be None, 'worker' or 'task', got {by!r}")
    model = aggregated if _is_model(aggregated) else None
    if model is not None:
        crowd = _crowd_of_model(model, labels)
        agg = np.asarray(model.predict(), dtype=np.intp)
    else:
        crowd = as_crowd_labels(labels)
        agg = _read_aggregates(aggregated, crowd)
    target = agg[crowd.item]
    scored = target >= 0
    hit = (crowd.label == target) & scored
    if by is None:
        if not scored.any():
            raise ValueError("no label has an aggregated label to be compared with")
        return float(hit.sum() / scored.sum())
    index, size = (crowd.expert, crowd.n_experts) if by == "worker" else \
        (crowd.item, crowd.n_items)
    total = np.bincount(index[scored], minlength=size).astype(float)
    has = total > 0
    rate = np.bincount(index, weights=hit.astype(float), minlength=size)
    rate = np.where(has, rate / np.where(has, total, 1.0), 0.0)
    if model is None:
        ids = crowd.expert_ids if by == "worker" else crowd.item_ids
        frame = _is_dataframe(labels)
    else:
        ids = getattr(model, "expert_ids_" if by == "worker" else "item_ids_", None)
        frame = bool(getattr(model, "_frame_out", lambda: False)())
    if ids is None or not frame:
        return np.ma.masked_array(rate, mask=~has)
    from crowdlearn.frames import require_pandas
    pd = require_pandas()
    return pd.Series(rate[has], index=pd.Index(np.asarray(ids)[has], name=by),
                     name="accuracy")


def _read_aggregates(aggregated, crowd) -> np.ndarray:
    """Aggregated class indices per item (-1: none) from an array or a Series by task id."""
    n, K = crowd.n_items, crowd.n_classes
    if hasattr(aggregated, "reindex") and hasattr(aggregated, "index"):
        if crowd.item_ids is None:
            raise ValueError("aggregated given as a Series by task id needs labels with task "
                             "ids (a DataFrame); pass an array of class indices otherwise")
        if not aggregated.index.is_unique:
            raise ValueError("aggregated has a task id more than once")
        values = aggregated.reindex(_pd_index(crowd.item_ids)).tolist()
        classes = np.arange(K) if crowd.class_ids is None else crowd.class_ids
        lookup = {c: i for i, c in enumerate(classes.tolist())}
        out = np.full(n, -1, dtype=np.intp)
        for i, v in enumerate(values):
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            if v not in lookup:
                raise ValueError(f"aggregated label {v!r:.40} of task "
                                 f"{crowd.item_ids[i]!r:.40} is not a class of the labels")
            out[i] = lookup[v]
        return out
    if isinstance(aggregated, (str, bytes)):
        raise ValueError("aggregated must be class indices, a Series or a fitted model, not a "
                         "string")
    if np.ndim(aggregated) != 1 or np.shape(aggregated)[0] != n:
        raise ValueError(f"aggregated must hold one class index per item ({n}), got shape "
                         f"{np.shape(aggregated)}")
    return check_int_array(aggregated, "aggregated", low=-1, high=K, high_name=f"n_classes={K}")


def spammer_score(model_or_confusions):
    r"""Raykar and Yu's spammer score of every worker, from their confusion matrices.

    A spammer labels without looking at the item: every row of their confusion
    matrix is the same (a rank-one matrix). The score is the
    squared Frobenius distance of the matrix :math:`M` to the nearest such
    matrix, scaled to [0, 1]:

    .. math::

        \begin{aligned}
        \mathrm{score} &= \frac{1}{N (N-1)} \sum_{n < n'} \sum_{p} (M_{n,p} - M_{n',p})^2 \\
          &= \frac{N \sum_n \lVert M_{n,\cdot} \rVert^2
          - \lVert \sum_n M_{n,\cdot} \rVert^2}{N (N-1)},
        \end{aligned}

    0 for a spammer, 1 for a worker whose rows are distinct vertices (a
    perfect worker, or one who always answers a fixed permutation of the
    truth: informative all the same).

    Parameters
    ----------
    model_or_confusions : fitted model, or array of shape (n_experts, K, K) or (K, K)
        A fitted model with confusion matrices ``confusion_`` (rows: true class),
        such as :class:`~crowdlearn.DawidSkene`, :class:`~crowdlearn.OneCoinDawidSkene`
        or :class:`~crowdlearn.MACE`, or the matrices themselves (rows summing to 1).
        A 2-D ``(K, K)`` array is *one* worker's matrix (``np.eye(3)``: one perfect
        worker, score 1.0), never K workers' rows; for several workers pass the
        ``(n_experts, K, K)`` stack (``np.eye(3)[None]`` for a stack of one).

    Returns
    -------
    ndarray of shape (n_experts,), float, or pandas Series by worker id
        A float for one ``(K, K)`` matrix (so a 2-D input can never be mistaken for
        a score per row); a Series named ``"spam_score"`` when the model was fitted on
        a DataFrame.

    Notes
    -----
    V. C. Raykar and S. Yu, *Eliminating spammers and ranking annotators for
    crowdsourced labeling tasks*, JMLR 13 (2012), section 3; the normalisation
    by :math:`K(K-1)` is peerannot's (``peerannot.models.identification.Spam_score``).
    A worker without labels keeps the model's uninformative matrix and scores
    near 0. For :class:`~crowdlearn.MultiLabelDawidSkene` pass one target's
    matrices, ``model.confusion_[:, d, :K_d, :K_d]``.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import spammer_score
    >>> spammer_score(np.array([np.eye(3), np.full((3, 3), 1 / 3)])).tolist()
    [1.0, 0.0]
    """
    model = None
    if _is_model(model_or_confusions):
        model = model_or_confusions
        _fitted_posterior(model)
        conf = getattr(model, "confusion_", None)
        if conf is None or np.ndim(conf) != 3:
            raise ValueError(f"{type(model).__name__} has no confusion matrices of shape "
                             f"(n_experts, K, K) (confusion_); pass the matrices instead")
        arr = np.asarray(conf, dtype=float)
    else:
        arr = as_float_array(model_or_confusions, "confusions")
        if arr.ndim not in (2, 3):
            raise ValueError(f"confusions must have shape (n_experts, K, K) or (K, K), got "
                             f"{arr.shape}")
    K = arr.shape[-1]
    if arr.shape[-2] != K or K < 2:
        raise ValueError(f"confusion matrices must be square with K >= 2 classes, got shape "
                         f"{arr.shape}")
    check_probability_matrix(arr.reshape(-1, K), "confusions (rows)", atol=1e-6)
    square = K * (arr ** 2).sum(axis=(-2, -1)) - (arr.sum(axis=-2) ** 2).sum(axis=-1)
    score = np.clip(square / (K * (K - 1)), 0.0, 1.0)
    if arr.ndim == 2:
        return float(score)
    by_worker = getattr(model, "_by_worker", None)
    return by_worker(score, "spam_score") if callable(by_worker) else score


# -- posterior entropy -------------------------------------------------------------------------
def posterior_entropy(posterior_or_model, *, base=2, normalized: bool = False):
    r"""Entropy of each item's posterior, :math:`H_i = -\sum_k q_i(k) \log q_i(k)`.

    Parameters
    ----------
    posterior_or_model : fitted model or array of shape (n_items, n_classes)
        A fitted model (anything with ``posterior_``) or the posterior itself;
        its rows must be non-negative and sum to one.
    base : float, default 2
        Base of the logarithm (2: bits, ``numpy.e``: nats). Must be > 0 and != 1.
    normalized : bool, default False
        Divide by :math:`\log K`, the entropy of the uniform posterior, so that
        the result lies in ``[0, 1]`` whatever the base.

    Returns
    -------
    ndarray of shape (n_items,), or pandas Series
        :math:`0 \log 0` counts as 0. A ``Series`` indexed by task id when the
        model hands results back by original id (it has ``_by_item``, as models
        fitted on a DataFrame do).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import posterior_entropy
    >>> posterior_entropy(np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75]])).round(4)
    array([0.    , 1.    , 0.8113])
    """
    model = None
    if hasattr(posterior_or_model, "fit") or hasattr(posterior_or_model, "posterior_"):
        model = posterior_or_model
        check = getattr(model, "_check_fitted", None)
        if check is not None:
            check()
        if not hasattr(model, "posterior_"):
            raise ValueError(f"{type(model).__name__} has no posterior_: fit it first")
        posterior = model.posterior_
    else:
        posterior = posterior_or_model
    q = check_probability_matrix(posterior, "posterior", atol=1e-6)
    check_scalar(base, "base", low=0.0, low_inclusive=False)
    if base == 1:
        raise ValueError("base must not be 1")
    if normalized not in (True, False):
        raise ValueError(f"normalized must be True or False, got {normalized!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    h = np.maximum(-terms.sum(axis=1), 0.0)
    if normalized and q.shape[1] == 1:
        h = np.zeros_like(h)  # one class: no uncertainty at all (not 0 / log 1)
    elif normalized:
        h = np.minimum(h / np.log(q.shape[1]), 1.0)
    else:
        h = h / np.log(base)
    by_item = getattr(model, "_by_item", None) if model is not None else None
    return by_item(h, "entropy") if callable(by_item) else h


# -- worker quality intervals -----------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class WorkerQualityIntervals:
    r"""Confidence intervals for every worker's quality (see :func:`worker_quality_intervals`).

    Attributes
    ----------
    accuracy, accuracy_lower, accuracy_upper : ndarray of shape (n_experts,)
        The fitted accuracy :math:`\sum_n \phi_n M^{(r)}_{n,n}` (``accuracy_``
        for one-coin) and the interval around it.
    confusion, confusion_lower, confusion_upper : ndarray of shape (n_experts, K, K)
        The fitted confusion matrices and entry-wise intervals
        (``[j, k, l]``: P(worker j says l | true class k)).
    level : float
        Nominal coverage of every interval (each one on its own, not jointly).
    method : str
        ``"bootstrap"``, ``"fisher"`` or ``"counts"``.
    n_boot : int
        Bootstrap replicates used (0 for the other methods).
    boot_accuracy : ndarray of shape (n_boot, n_experts) or None
        The bootstrap replicates of the accuracies (aligned to the fitted classes).
    expert_ids : ndarray or None
        The workers' original identifiers when the model was fitted on a table.
    n_relabelled : int
        Bootstrap replicates whose hidden classes came back permuted and were
        matched to the fitted ones (0 for the other methods, and with
        ``match_classes=False``).
    """

    accuracy: np.ndarray
    accuracy_lower: np.ndarray
    accuracy_upper: np.ndarray
    confusion: np.ndarray
    confusion_lower: np.ndarray
    confusion_upper: np.ndarray
    level: float
    method: str
    n_boot: int = 0
    boot_accuracy: np.ndarray | None = None
    expert_ids: np.ndarray | None = None
    n_relabelled: int = 0

    def to_frame(self):
        """The accuracy intervals as a pandas DataFrame indexed by worker."""
        from crowdlearn.frames import require_pandas
        pd = require_pandas()
        ids = np.arange(self.accuracy.shape[0]) if self.expert_ids is None else self.expert_ids
        return pd.DataFrame({"accuracy": self.accuracy, "lower": self.accuracy_lower,
                             "upper": self.accuracy_upper},
                            index=pd.Index(ids, name="worker"))


def _training_crowd(model, labels) -> CrowdLabels:
    """The labels as CrowdLabels indexed like the fitted model; refuse other labels."""
    if not isinstance(model, DawidSkene):
        raise ValueError(f"model must be a fitted DawidSkene or OneCoinDawidSkene, got "
                         f"{type(model).__name__}")
    model._check_fitted()
    if getattr(model, "n_features_in_", 0):
        raise ValueError("worker_quality_intervals does not support models fitted with "
                         "features X")
    prior = getattr(model, "_fitted_prior", None)
    extras = [what for what, used in (
        ("gold", getattr(model, "gold_", None) is not None),
        ("confusion_prior", prior is not None and not isinstance(prior, tuple)),
        ("an accuracy prior", isinstance(prior, tuple))) if used]
    if extras:
        raise ValueError(f"worker_quality_intervals supports models fitted with alpha as "
                         f"their only prior; this one was fitted with {', '.join(extras)}")
    J, K, n = model.n_experts_, model.n_classes_, model.n_items_
    if labels is None:
        raise ValueError("labels is None: pass the labels the model was fitted on")
    dense = isinstance(labels, np.ndarray) or isinstance(labels, list)
    from_ids = isinstance(labels, CrowdLabels) or _is_dataframe(labels)
    crowd = as_crowd_labels(labels, n_classes=None if from_ids else K)
    if crowd.expert_ids is not None or crowd.class_ids is not None:
        crowd = model._map_ids(crowd)
    if crowd.n_experts > J or (dense and crowd.n_experts != J):
        raise ValueError(f"the labels come from {crowd.n_experts} experts but the model was "
                         f"fitted on n_experts={J}: pass the labels it was fitted on")
    if crowd.n_classes > K:
        raise ValueError(f"the labels have {crowd.n_classes} classes but the model was "
                         f"fitted with n_classes={K}")
    if crowd.n_items > n or (crowd.n_items != n and not isinstance(labels, tuple)):
        raise ValueError(f"the labels describe {crowd.n_items} items but the model was "
                         f"fitted on n_items={n}: pass the labels it was fitted on")
    crowd = CrowdLabels(crowd.item, crowd.expert, crowd.label, n, J, K)
    data = _Data(crowd, None, *_flat_indices(crowd, K))
    q, _ = _softmax_rows_inplace(model._log_joint(data, model._params))
    if not np.allclose(q, model.posterior_, atol=1e-6, rtol=0):
        raise ValueError("these labels do not match the fitted model (its posterior on them "
                         "differs from posterior_): pass the labels the model was fitted on")
    return crowd


def _accuracy(class_prior, confusion):
    """``sum_k phi_k pi[j, k, k]`` for params with any leading batch axes."""
    diag = np.diagonal(confusion, axis1=-2, axis2=-1)   # (..., J, K)
    return (diag * class_prior[..., None, :]).sum(axis=-1)


def _check_common(level, n_boot):
    check_scalar(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    check_scalar(n_boot, "n_boot", kind=numbers.Integral, low=1)


def worker_quality_intervals(model, labels, *, method: str = "bootstrap", n_boot: int = 200,
                             level: float = 0.95, random_state=None, n_jobs=None,
                             max_iter: int = 200, tol: float = 1e-5,
                             match_classes: bool = True) -> WorkerQualityIntervals:
    r"""Confidence intervals for each worker's accuracy and confusion matrix.

    Parameters
    ----------
    model : fitted DawidSkene or OneCoinDawidSkene
        Fitted without features.
    labels : labels the model was fitted on, in any form ``fit`` accepts
        Checked against the model: sizes, identifiers, and the posterior they
        give under the fitted parameters must be ``posterior_``.
    method : {"bootstrap", "fisher", "counts"}, default "bootstrap"
        ``"bootstrap"``: percentile intervals from a bootstrap over items (any
        model). ``"fisher"``: observed-information (Wald) intervals on the logit
        scale, :class:`~crowdlearn.OneCoinDawidSkene` only. ``"counts"``:
        Beta/Dirichlet intervals from the expected counts (fast; any model).
    n_boot : int, default 200
        Bootstrap replicates (``method="bootstrap"`` only; must be >= 1 always).
    level : float in (0, 1), default 0.95
        Coverage of every single interval.
    random_state : None, int or Generator
        Seed of the bootstrap; the same seed gives the same intervals, whatever
        ``n_jobs``.
    n_jobs : int, optional
        Threads running bootstrap replicates (``-1``: all CPUs; default 1).
    max_iter, tol : int, float
        EM on each bootstrap sample stops after ``max_iter`` iterations or when
        no parameter moves by more than ``tol``.
    match_classes : bool, default True
        Match each bootstrap replicate's hidden classes to the fitted ones
        before taking percentiles (see the module's notes). ``False`` skips the matching, to
        show what it does: a replicate that came back with its classes
        permuted then reports the accuracies of the permuted classes.

    Returns
    -------
    WorkerQualityIntervals
        ``accuracy*`` of shape ``(n_experts,)``, ``confusion*`` of shape
        ``(n_experts, K, K)``; the estimates are the fitted ones.

    Notes
    -----
    Accuracy of worker :math:`r` means :math:`\sum_n \phi_n M^{(r)}_{n,n}`,
    the probability that its label is right on a random item (for the one-coin
    model :math:`\eta_r`, ``accuracy_``).

    How each method works (bootstrap, Louis' observed information, Beta/Dirichlet
    counts), and what each ignores, is told in the module's notes
    (:mod:`crowdlearn.metrics`).
    """
    n_jobs = _check_interval_args(method, level, n_boot, max_iter, tol, n_jobs, match_classes)
    one_coin = isinstance(model, OneCoinDawidSkene)
    crowd = _training_crowd(model, labels)
    if method == "fisher" and not one_coin:
        raise ValueError("method='fisher' is implemented for OneCoinDawidSkene accuracies; "
                         "use method='bootstrap' or 'counts' for DawidSkene")
    est_conf = np.array(model.confusion_, dtype=float)
    est_acc = _accuracy(np.asarray(model.class_prior_, float), est_conf)
    common = dict(accuracy=est_acc, confusion=est_conf, level=float(level), method=method,
                  expert_ids=model.expert_ids_)
    if method == "bootstrap":
        return _bootstrap_intervals(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
                                    bool(match_classes), level, common)
    if method == "fisher":
        a_lo, a_hi = _fisher_one_coin(model, crowd, level)
    else:
        a_lo, a_hi, c_lo, c_hi = _counts(model, crowd, level, one_coin)
    if one_coin:
        c_lo, c_hi = _one_coin_bounds(a_lo, a_hi, model.n_classes_)
    return WorkerQualityIntervals(accuracy_lower=a_lo, accuracy_upper=a_hi,
                                  confusion_lower=c_lo, confusion_upper=c_hi, **common)


def _check_interval_args(method, level, n_boot, max_iter, tol, n_jobs, match_classes) -> int:
    """``ValueError`` for an argument :func:`worker_quality_intervals` cannot take; the
    number of threads (``n_jobs``: None is 1, -1 is every CPU)."""
    if method not in ("bootstrap", "fisher", "counts"):
        raise ValueError(f"method must be 'bootstrap', 'fisher' or 'counts', got {method!r}")
    _check_common(level, n_boot)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=1)
    check_scalar(tol, "tol", low=0.0)
    if n_jobs is None:
        n_jobs = 1
    check_scalar(n_jobs, "n_jobs", kind=numbers.Integral)
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
    if match_classes not in (True, False):
        raise ValueError(f"match_classes must be True or False, got {match_classes!r}")
    return n_jobs


def _check_boot_size(n_boot: int, crowd: CrowdLabels) -> None:
    """``ValueError`` when the bootstrap's tables -- the resampled item indices
    ``(n_boot, n_items)`` and the replicates' confusion matrices
    ``(n_boot, n_experts, K, K)`` -- exceed the size limits' ``max_cells``."""
    K = crowd.n_classes
    cells = n_boot * max(crowd.n_items, crowd.n_experts * K * K)
    limit = get_size_limits().max_cells
    if cells > limit:
        raise ValueError(f"n_boot={n_boot:,} would keep {cells:,} numbers per table "
                         f"({cells * 8 / 2 ** 30:.1f} GiB) for {crowd.n_items:,} items, "
                         f"{crowd.n_experts:,} experts and {K} classes, beyond the size "
                         f"limits' max_cells={limit:,}; use fewer replicates (a few hundred "
                         f"give percentile intervals) or raise the limit with "
                         f"crowdlearn.size_limits(max_cells=...)")


def _bootstrap_intervals(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
                         match_classes, level, common) -> WorkerQualityIntervals:
    """The percentile intervals of ``n_boot`` bootstrap refits (see :func:`_bootstrap`)."""
    _check_boot_size(int(n_boot), crowd)
    acc, conf, n_relabelled = _bootstrap(model, crowd, n_boot, random_state, n_jobs,
                                         max_iter, tol, match_classes)
    tail = (1.0 - level) / 2
    a_lo, a_hi = np.quantile(acc, [tail, 1 - tail], axis=0)
    c_lo, c_hi = np.quantile(conf, [tail, 1 - tail], axis=0)
    return WorkerQualityIntervals(accuracy_lower=a_lo, accuracy_upper=a_hi,
                                  confusion_lower=c_lo, confusion_upper=c_hi,
                                  n_boot=int(n_boot), boot_accuracy=acc,
                                  n_relabelled=n_relabelled, **common)


def _one_coin_bounds(lo, hi, K):
    """Entry-wise bounds of one-coin confusion matrices from bounds on the accuracy."""
    c_lo = _one_coin_matrices(lo, K)
    c_hi = _one_coin_matrices(hi, K)
    off = ~np.eye(K, dtype=bool)
    c_lo[:, off], c_hi[:, off] = c_hi[:, off], c_lo[:, off]  # off-diagonal decreases in p
    return c_lo, c_hi


# -- counts ------------------------------------------------------------------------------------
def _expected(model, crowd):
    K = model.n_classes_
    data = _Data(crowd, None, *_flat_indices(crowd, K))
    counts, _ = DawidSkene._expected_counts(data, model.posterior_)
    return counts  # (J, K true, K label)


def _counts(model, crowd, level, one_coin):
    tail = (1.0 - level) / 2
    a = float(model.alpha)
    counts = _expected(model, crowd)
    J, K, _ = counts.shape
    if one_coin:
        correct = np.einsum("jkk->j", counts)
        n_r = counts.sum(axis=(1, 2))
        lo, hi = _beta_bounds(correct + a + 1, n_r - correct + a + 1, tail)
        lo[n_r == 0], hi[n_r == 0] = 0.0, 1.0
        return lo, hi, None, None
    conc = counts + a + 1.0                                 # Dirichlet parameters per row
    total = conc.sum(axis=2, keepdims=True)
    c_lo, c_hi = _beta_bounds(conc, total - conc, tail)
    phi = np.asarray(model.class_prior_, float)
    d = np.einsum("jkk->jk", conc)
    tot = total[..., 0]
    mean_kk = d / tot
    var_kk = d * (tot - d) / (tot ** 2 * (tot + 1))
    mean = (phi * mean_kk).sum(axis=1)
    var = (phi ** 2 * var_kk).sum(axis=1)
    # the Beta with this mean and variance: a + b = m (1 - m) / v - 1
    s = mean * (1 - mean) / np.maximum(var, 1e-300) - 1.0
    s = np.maximum(s, 1e-6)
    lo, hi = _beta_bounds(mean * s, (1 - mean) * s, tail)
    return lo, hi, c_lo, c_hi


def _beta_bounds(a, b, tail):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    lo = np.where(a > 0, stats.beta.ppf(tail, np.maximum(a, 1e-300), np.maximum(b, 1e-300)), 0.0)
    hi = np.where(b > 0, stats.beta.ppf(1 - tail, np.maximum(a, 1e-300),
                                        np.maximum(b, 1e-300)), 1.0)
    return np.asarray(lo, float), np.asarray(hi, float)


# -- Fisher (one-coin) -------------------------------------------------------------------------
def _one_coin_information(model, crowd) -> np.ndarray:
    """Observed information (Louis) in (logits alpha_r of the accuracies, prior logits beta_0a)."""
    q = np.asarray(model.posterior_, float)
    n, K = q.shape
    J = model.n_experts_
    p = np.asarray(model.accuracy_, float)
    phi = np.asarray(model.class_prior_, float)
    a = float(model.alpha)
    P = J + K - 1
    item, expert, label = crowd.item, crowd.expert, crowd.label
    ks = np.arange(K)
    # centred scores S[(i, k), r] = sum_{t in (i, r)} (1{l_t = k} - q_i(l_t))
    rows_l = (item[:, None] * K + ks[None, :]).ravel()
    cols_l = np.repeat(expert, K)
    vals_l = ((label[:, None] == ks[None, :]) - q[item, label][:, None]).ravel()
    # S[(i, k), J + a] = 1{k = a} - q_i(a), a < K - 1
    ii, kk, aa = np.meshgrid(np.arange(n), ks, np.arange(K - 1), indexing="ij")
    rows_p = (ii * K + kk).ravel()
    cols_p = J + aa.ravel()
    vals_p = ((kk == aa).astype(float) - q[ii, aa]).ravel()
    S = sparse.csr_array((np.concatenate([vals_l, vals_p]),
                          (np.concatenate([rows_l, rows_p]), np.concatenate([cols_l, cols_p]))),
                         shape=(n * K, P))
    lost = S.T @ (S * q.reshape(-1, 1))
    lost = lost.toarray() if sparse.issparse(lost) else np.asarray(lost)
    n_r = np.bincount(expert, minlength=J).astype(float)
    info = -lost
    info[np.arange(J), np.arange(J)] += (n_r + 2 * a) * p * (1 - p)
    cov_phi = np.diag(phi) - np.outer(phi, phi)
    info[J:, J:] += (n + a * K) * cov_phi[:K - 1, :K - 1]
    return info


def _fisher_one_coin(model, crowd, level):
    z = stats.norm.ppf(0.5 + level / 2)
    J, K = model.n_experts_, model.n_classes_
    p = np.asarray(model.accuracy_, float)
    info = _one_coin_information(model, crowd)
    n_r = np.bincount(crowd.expert, minlength=J)
    eps = 1e-10
    phi = np.asarray(model.class_prior_, float)
    regular = np.concatenate([(n_r > 0) & (p > eps) & (p < 1 - eps),
                              np.full(K - 1, bool((phi > eps).all()))])
    var = np.full(J, np.inf)
    idx = np.flatnonzero(regular)
    if idx.size:
        sub = info[np.ix_(idx, idx)]
        try:
            cov = np.linalg.inv(np.linalg.cholesky(sub))
            diag = (cov ** 2).sum(axis=0)
        except np.linalg.LinAlgError:  # not positive definite: keep each worker alone
            d = np.diag(sub)
            diag = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), np.inf)
        workers = idx < J
        var[idx[workers]] = diag[workers]
    ok = np.isfinite(var) & (var > 0)
    eta = np.log(np.clip(p, eps, 1 - eps)) - np.log1p(-np.clip(p, eps, 1 - eps))
    half = z * np.sqrt(np.where(ok, var, 0.0))
    lo, hi = expit(eta - half), expit(eta + half)  # no overflow for huge half-widths
    if not ok.all():  # boundary estimates or no labels: the counts interval
        c_lo, c_hi, _, _ = _counts(model, crowd, level, True)
        lo = np.where(ok, lo, c_lo)
        hi = np.where(ok, hi, c_hi)
    return lo, hi


# -- bootstrap ---------------------------------------------------------------------------------
class _Resampler:
    """The training labels grouped by item, ready to be gathered for resamples of items."""

    def __init__(self, model, crowd, max_iter, tol, match_classes=True):
        order = np.argsort(crowd.item, kind="stable")
        self.expert, self.label = crowd.expert[order], crowd.label[order]
        self.lpi = crowd.labels_per_item()
        self.start = np.concatenate([[0], np.cumsum(self.lpi)[:-1]])
        self.J, self.K = crowd.n_experts, crowd.n_classes
        self.alpha = float(model.alpha)
        self.one_coin = isinstance(model, OneCoinDawidSkene)
        self.max_iter, self.tol = max_iter, tol
        self.match_classes = match_classes
        self.prior0 = np.asarray(model.class_prior_, float)
        self.conf0 = np.asarray(model.confusion_, float)
        self.posterior = np.asarray(model.posterior_, float)

    def votes(self, idx):
        """Block-diagonal count matrix of B resamples: rows (b, u), columns (b, j, l), then
        one prior column per replicate (the layout of ``dawid_skene._flat_indices``)."""
        B, n = idx.shape
        J, K = self.J, self.K
        cnt = self.lpi[idx].ravel()                   # labels of each new item
        total = int(cnt.sum())
        pos = np.repeat(self.start[idx].ravel(), cnt)
        pos += np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        new_item = np.repeat(np.arange(B * n), cnt)
        cols = (new_item // n * J + self.expert[pos]) * K + self.label[pos]
        rows = np.concatenate([new_item, np.arange(B * n)])
        cols = np.concatenate([cols, B * J * K + np.repeat(np.arange(B), n)])
        votes = sparse.csr_array((np.ones(rows.shape[0]), (rows, cols)),
                                 shape=(B * n, B * J * K + B))
        votes.sum_duplicates()
        return votes

    def e_step(self, votes, prior, conf):
        B, J, K, _ = conf.shape
        table = np.empty((B * J * K + B, K))
        with np.errstate(divide="ignore"):
            table[:B * J * K] = np.log(conf.transpose(0, 1, 3, 2)).reshape(B * J * K, K)
            table[B * J * K:] = np.log(prior)
        q, _ = _softmax_rows_inplace(votes @ table)
        return q

    def m_step(self, votes_t, q, B):
        J, K, a = self.J, self.K, self.alpha
        counts = votes_t @ q                                       # (B * J * K + B, K)
        class_count = counts[B * J * K:]                           # (B, K)
        c = counts[:B * J * K].reshape(B, J, K, K).transpose(0, 1, 3, 2)  # [b, j, k, l]
        prior = (class_count + a) / (class_count.sum(axis=1, keepdims=True) + K * a)
        if self.one_coin:   # the M-step of OneCoinDawidSkene
            correct = np.einsum("bjkk->bj", c)
            denom = c.sum(axis=(2, 3)) + 2 * a
            empty = denom <= 0
            acc = np.where(empty, 1.0 / K, (correct + a) / np.where(empty, 1.0, denom))
            conf = _one_coin_matrices(acc.ravel(), K).reshape(B, J, K, K)
        else:               # the M-step of DawidSkene
            c = c + a
            denom = c.sum(axis=3, keepdims=True)
            empty = denom <= 0
            conf = np.where(empty, 1.0 / K, c / np.where(empty, 1.0, denom))
        return prior, conf

    def em(self, idx, prior, conf, n_iter):
        """EM on every resample at once, from ``(prior, conf)``, at most ``n_iter`` steps.

        A replicate whose parameters moved by at most ``tol`` stops there; when half of
        them have stopped, the others go on in a smaller problem. Each replicate's path
        thus depends on its own resample only, not on the others in the block.
        """
        B = idx.shape[0]
        votes = self.votes(idx)
        votes_t = votes.T.tocsr()
        active = np.ones(B, dtype=bool)
        for it in range(n_iter):
            q = self.e_step(votes, prior, conf)
            new_prior, new_conf = self.m_step(votes_t, q, B)
            moved = np.maximum(np.abs(new_prior - prior).max(axis=1),
                               np.abs(new_conf - conf).reshape(B, -1).max(axis=1))
            prior[active] = new_prior[active]
            conf[active] = new_conf[active]
            active &= moved > self.tol
            n_active = int(active.sum())
            if n_active == 0:
                break
            if n_active <= B // 2 and it + 1 < n_iter:
                sub = np.flatnonzero(active)
                prior[sub], conf[sub] = self.em(idx[sub], prior[sub], conf[sub],
                                                n_iter - it - 1)
                break
        return prior, conf

    def run(self, idx):
        """Accuracies ``(B, J)`` and confusion matrices ``(B, J, K, K)`` of B resamples,
        with the hidden classes matched to the fitted ones."""
        acc, conf, _ = self.run_counted(idx)
        return acc, conf

    def run_counted(self, idx):
        """As :meth:`run`, and how many of the B replicates were permuted back."""
        B = idx.shape[0]
        K = self.K
        prior = np.repeat(self.prior0[None], B, axis=0)
        conf = np.repeat(self.conf0[None], B, axis=0)
        prior, conf = self.em(idx, prior, conf, self.max_iter)
        relabelled = 0
        if self.match_classes and (not self.one_coin or K == 2):
            # label switching: match to the fitted posterior
            q = self.e_step(self.votes(idx), prior, conf).reshape(B, -1, K)
            agreement = np.einsum("bnk,bnm->bkm", q, self.posterior[idx])
            for b in range(B):
                _, target = linear_sum_assignment(agreement[b], maximize=True)
                if not np.array_equal(target, np.arange(K)):
                    inv = np.argsort(target)   # new class target[k] is old class k
                    prior[b] = prior[b, inv]
                    conf[b] = conf[b][:, inv, :]
                    relabelled += 1
        return _accuracy(prior, conf), conf, relabelled


def _bootstrap(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
               match_classes=True):
    rng = check_random_state(random_state)
    n = crowd.n_items
    draws = rng.integers(0, n, size=(n_boot, n))  # the resamples, drawn before any fit
    # replicates per block: about 2 million labels at a time
    per = max(1, min(n_boot, int(2_000_000 // max(crowd.n_labels + n, 1))))
    if n_jobs > 1:
        per = max(1, min(per, -(-n_boot // n_jobs)))
    blocks = [draws[s:s + per] for s in range(0, n_boot, per)]
    resampler = _Resampler(model, crowd, max_iter, tol, match_classes)
    if n_jobs > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            results = list(pool.map(resampler.run_counted, blocks))
    else:
        results = [resampler.run_counted(b) for b in blocks]
    return (np.concatenate([r[0] for r in results]),
            np.concatenate([r[1] for r in results]), int(sum(r[2] for r in results)))
