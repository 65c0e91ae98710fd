r"""Multi-label crowds: several independent multi-class labels per item, one confusion
matrix per expert and per label (the MCMLI model of Zhang and Wu).

Each item carries :math:`D` labels ("targets", the book's questions), target :math:`d`
taking one of :math:`N_d` classes. Labels arrive as sparse quadruples ``(item, expert,
target, label)``: expert ``expert`` put target ``target`` of item ``item`` in
class ``label``. Experts may answer any subset of items and, for each item,
any subset of its targets.

Examples
--------
>>> from crowdlearn.aggregation.multilabel import from_quadruples
>>> crowd = from_quadruples([0, 0, 1], [0, 1, 1], [0, 1, 1], [2, 0, 1], n_classes=[3, 2])
>>> crowd
MultiCrowdLabels(n_items=2, n_experts=2, n_targets=2, n_classes=(3, 2), n_labels=3)
>>> crowd.for_target(1)
CrowdLabels(n_items=2, n_experts=2, n_classes=2, n_labels=2)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from crowdlearn._base import EMEstimator, normalize_log
from crowdlearn._validation import check_int_array, check_em_params, check_scalar
from crowdlearn._limits import check_crowd_size, fit_memory, get_size_limits
from crowdlearn.labels import CrowdLabels, _own_index_arrays, _size_arg

__all__ = ["MultiCrowdLabels", "MultiLabelDawidSkene", "MultiLabelParams", "as_multi_labels",
           "from_quadruples", "from_dense_multi"]


# -- the data ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MultiCrowdLabels:
    """Multi-label crowd labels, stored as parallel integer arrays.

    Build it with :func:`from_quadruples`, :func:`from_dense_multi` or
    :func:`as_multi_labels`, which validate their input.

    Attributes
    ----------
    item, expert, target, label : ndarray of shape (n_labels,)
        Label ``r`` says that expert ``expert[r]`` put target ``target[r]`` of
        item ``item[r]`` in class ``label[r]``.
    n_items, n_experts, n_targets : int
    n_classes : tuple of int, length n_targets
        Number of classes :math:`N_d` of each target.
    """

    item: np.ndarray
    expert: np.ndarray
    target: np.ndarray
    label: np.ndarray
    n_items: int
    n_experts: int
    n_targets: int
    n_classes: tuple

    def __post_init__(self):
        # the same guarantees as CrowdLabels: own read-only arrays, indices in range
        n_targets = _size_arg(self.n_targets, "n_targets", 1)
        classes = self.n_classes
        if isinstance(classes, (str, bytes)) or np.ndim(classes) != 1 \
                or len(classes) != n_targets:
            raise ValueError(f"n_classes must hold one number of classes per target "
                             f"(n_targets={n_targets}), got {classes!r:.60}")
        _check_multi_size(_size_arg(self.n_items, "n_items", 0),
                          _size_arg(self.n_experts, "n_experts", 0), n_targets, 2,
                          np.shape(self.item)[0] if np.ndim(self.item) == 1 else 0)
        classes = tuple(_size_arg(k, "n_classes", 2) for k in classes)
        length, owned = _own_index_arrays(self, (("item", "n_items", 0),
                                                 ("expert", "n_experts", 0),
                                                 ("target", "n_targets", 1),
                                                 ("label", max(classes), 2)))
        for attr, value in {**owned, "n_classes": classes}.items():  # frozen: set here only
            object.__setattr__(self, attr, value)
        _check_multi_size(self.n_items, self.n_experts, n_targets, max(classes), length)
        if self.label.size:
            bound = np.asarray(classes, dtype=np.intp)[self.target]
            bad = (self.label < 0) | (self.label >= bound)
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise ValueError(f"label out of range: class {int(self.label[r])} given for "
                                 f"target {int(self.target[r])}, which has "
                                 f"{classes[int(self.target[r])]} classes")

    @property
    def n_labels(self) -> int:
        """Number of labels given."""
        return int(self.item.shape[0])

    def for_target(self, m: int) -> CrowdLabels:
        """The labels of target ``m`` alone, as single-label :class:`~crowdlearn.CrowdLabels`."""
        check_scalar(m, "m", kind=numbers.Integral, low=0, high=self.n_targets - 1)
        keep = self.target == m
        return CrowdLabels(self.item[keep], self.expert[keep], self.label[keep], self.n_items,
                           self.n_experts, int(self.n_classes[m]))

    def to_dense(self, missing: int = -1) -> np.ndarray:
        """The ``(n_items, n_experts, n_targets)`` array, ``missing`` where no label was given."""
        key = (self.item * self.n_experts + self.expert) * self.n_targets + self.target
        if np.unique(key).size != key.size:
            raise ValueError("some expert labelled the same target of an item more than once; "
                             "a dense array cannot hold repeated labels")
        dense = np.full((self.n_items, self.n_experts, self.n_targets), missing, dtype=np.intp)
        dense[self.item, self.expert, self.target] = self.label
        return dense

    def __repr__(self) -> str:
        return (f"MultiCrowdLabels(n_items={self.n_items}, n_experts={self.n_experts}, "
                f"n_targets={self.n_targets}, n_classes={self.n_classes}, "
                f"n_labels={self.n_labels})")


def _check_multi_size(n_items: int, n_experts: int, n_targets: int, n_classes: int,
                      n_labels: int, inferred=()) -> None:
    """The size limits (:mod:`crowdlearn._limits`) of a multi-label crowd, checked before
    anything of its size is made: those of one target's crowd, then a target range
    inferred from the largest target index, and the posterior ``(n_items, n_targets, K)``,
    the confusion matrices ``(n_experts, n_targets, K, K)`` and the fit's memory over
    every target."""
    check_crowd_size(n_items, n_experts, n_classes, n_labels,
                     inferred=[name for name in inferred if name != "n_targets"])
    lim = get_size_limits()
    cap = max(lim.min_inferred, lim.max_unused_ratio * n_labels)
    if "n_targets" in inferred and n_targets > cap:
        raise ValueError(f"the target indices imply {n_targets:,} targets (inferred from the "
                         f"largest target index, {n_targets - 1:,}) but only {n_labels:,} "
                         f"labels were given, so almost every target would have no label: "
                         f"target indices must run over 0..M-1; if the targets without labels "
                         f"are meant, pass n_targets= explicitly")
    cells = {"posterior (n_items x n_targets x n_classes)": n_items * n_targets * n_classes,
             "confusion matrices (n_experts x n_targets x n_classes x n_classes)":
                 n_experts * n_targets * n_classes * n_classes}
    for what, count in cells.items():
        if count > lim.max_cells:
            raise ValueError(f"the {what} would hold {count:,} numbers ({count * 8 / 2**30:.1f} "
                             f"GiB) for n_items={n_items:,}, n_experts={n_experts:,}, "
                             f"n_targets={n_targets:,}, n_classes={n_classes:,}; at most "
                             f"{lim.max_cells:,} are accepted. Check that the indices run "
                             f"over 0..n-1 (to go past the limit on purpose, use `with "
                             f"crowdlearn.size_limits(max_cells=...):`)")
    need = fit_memory(n_items * n_targets, n_experts * n_targets, n_classes)
    if need > lim.max_memory:
        raise ValueError(f"fitting a multi-label crowd of n_items={n_items:,}, n_experts="
                         f"{n_experts:,}, n_targets={n_targets:,} and n_classes={n_classes:,} "
                         f"may need {need / 2**30:.1f} GiB of working memory, more than the "
                         f"limit of {lim.max_memory / 2**30:.1f} GiB (to go past it on "
                         f"purpose, use `with crowdlearn.size_limits(max_memory=...):`)")


def _size(given, values, name, low=1):
    if given is None:
        return int(values.max()) + 1 if values.size else 0
    if isinstance(given, bool) or not isinstance(given, (numbers.Integral,)) or given < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {given!r}")
    return int(given)


def _largest_class(label: np.ndarray, n_classes) -> int:
    """The number of classes the size limits see: the largest label plus one, or the
    largest number of classes given (at least 2)."""
    if n_classes is None:
        return max(int(label.max(initial=0)) + 1, 2)
    if isinstance(n_classes, numbers.Integral) and not isinstance(n_classes, bool):
        return max(int(n_classes), 2)
    given = check_int_array(n_classes, "n_classes")
    return max(int(given.max(initial=0)), 2)


def from_quadruples(item, expert, target, label, *, n_items=None, n_experts=None,
                    n_targets=None, n_classes=None) -> MultiCrowdLabels:
    """Build :class:`MultiCrowdLabels` from parallel arrays of zero-based indices.

    Parameters
    ----------
    item, expert, target, label : array-like of int, shape (n_labels,)
    n_items, n_experts, n_targets : int, optional
        Sizes of the index ranges; inferred as ``max + 1`` when omitted.
    n_classes : int or sequence of int, optional
        A common number of classes for every target, or one per target. When
        omitted, each target gets the largest class seen for it plus one (at
        least 2).

    Raises
    ------
    ValueError
        On empty or mismatched arrays, negative indices, a label out of range for
        its target, or fewer than 2 classes.
    """
    arrays = [check_int_array(a, name, low=0) for a, name in
              ((item, "item"), (expert, "expert"), (target, "target"), (label, "label"))]
    lengths = [a.shape[0] for a in arrays]
    if len(set(lengths)) != 1:
        raise ValueError(f"item, expert, target and label must have the same length, got "
                         f"{lengths}")
    item, expert, target, label = arrays
    inferred = [name for name, given in (("n_items", n_items), ("n_experts", n_experts),
                                         ("n_targets", n_targets)) if given is None]
    n_items = _size(n_items, item, "n_items")
    n_experts = _size(n_experts, expert, "n_experts")
    n_targets = _size(n_targets, target, "n_targets")
    _check_multi_size(n_items, n_experts, n_targets, _largest_class(label, n_classes),
                      item.shape[0], inferred=inferred + (["n_classes"] if n_classes is None
                                                          else []))
    check_int_array(item, "item", high=n_items, high_name=f"n_items={n_items}")
    check_int_array(expert, "expert", high=n_experts,
                    high_name=f"unknown expert: n_experts={n_experts}")
    check_int_array(target, "target", high=n_targets, high_name=f"n_targets={n_targets}")
    if n_classes is None:
        seen = np.zeros(n_targets, dtype=np.intp)
        np.maximum.at(seen, target, label)
        classes = np.maximum(seen + 1, 2)
    else:
        if isinstance(n_classes, numbers.Integral) and not isinstance(n_classes, bool):
            classes = np.full(n_targets, int(n_classes))
        else:
            classes = check_int_array(n_classes, "n_classes")
            if classes.shape != (n_targets,):
                raise ValueError(f"n_classes must be an int or have one entry per target "
                                 f"({n_targets}), got {classes.shape[0]} entries")
        if (classes < 2).any():
            raise ValueError(f"every target needs at least 2 classes, got n_classes="
                             f"{classes.tolist()}")
        bad = label >= classes[target]
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            m = int(target[r])
            raise ValueError(f"label out of range: class {int(label[r])} given for target {m}, "
                             f"which has {int(classes[m])} classes (0 to {int(classes[m]) - 1}); "
                             f"{int(bad.sum())} such label(s)")
    return MultiCrowdLabels(item, expert, target, label, n_items, n_experts, n_targets,
                            tuple(int(k) for k in classes))


def from_dense_multi(array, *, n_classes=None, missing: int = -1) -> MultiCrowdLabels:
    """Build :class:`MultiCrowdLabels` from an ``(n_items, n_experts, n_targets)`` array.

    ``array[i, r, d]`` is the class expert ``r`` gave question (target) ``d`` of item
    ``i``, or ``missing`` (the book's letters: items ``i``, experts ``r``, questions ``d``).
    """
    arr = check_int_array(array, "labels", ndim=3, low=min(missing, 0))
    if 0 in arr.shape:
        raise ValueError(f"labels is empty (shape {arr.shape})")
    observed = arr != missing
    if (observed & (arr < 0)).any():
        raise ValueError(f"labels has negative values other than the missing marker {missing}")
    if not observed.any():
        raise ValueError("labels holds no label at all: every entry is the missing marker")
    i, j, m = np.nonzero(observed)
    return from_quadruples(i, j, m, arr[i, j, m], n_items=arr.shape[0], n_experts=arr.shape[1],
                           n_targets=arr.shape[2], n_classes=n_classes)


def as_multi_labels(data, *, n_classes=None) -> MultiCrowdLabels:
    """Convert any accepted multi-label form to :class:`MultiCrowdLabels`.

    ``data`` may be a :class:`MultiCrowdLabels`, a tuple ``(item, expert, target,
    label)`` of index arrays, or an ``(n_items, n_experts, n_targets)`` array with
    ``-1`` for missing.
    """
    if isinstance(data, MultiCrowdLabels):
        # checked again (a hand-made or tampered object is copied and validated)
        data = MultiCrowdLabels(data.item, data.expert, data.target, data.label, data.n_items,
                                data.n_experts, data.n_targets, data.n_classes)
        if n_classes is not None:
            return from_quadruples(data.item, data.expert, data.target, data.label,
                                   n_items=data.n_items, n_experts=data.n_experts,
                                   n_targets=data.n_targets, n_classes=n_classes)
        return data
    if data is None:
        raise ValueError("labels is None: pass a MultiCrowdLabels, an (item, expert, target, "
                         "label) tuple or an (n_items, n_experts, n_targets) array with -1 "
                         "for missing")
    if type(data).__module__.split(".")[0] == "pandas":
        raise ValueError("a pandas object is not read as multi-label labels (it would be "
                         "guessed at); pass from_quadruples(item, expert, target, label) with "
                         "index arrays, e.g. from the DataFrame's factorised columns")
    if isinstance(data, tuple):
        if len(data) != 4:
            raise ValueError(f"a tuple of labels must be (item, expert, target, label), got "
                             f"{len(data)} arrays")
        return from_quadruples(*data, n_classes=n_classes)
    try:
        arr = np.asarray(data)
    except ValueError:
        raise ValueError("labels could not be read as an (n_items, n_experts, n_targets) "
                         "array (ragged rows?)") from None
    if arr.ndim != 3:
        raise ValueError(f"labels must be a MultiCrowdLabels, an (item, expert, target, label) "
                         f"tuple or a 3-D (n_items, n_experts, n_targets) array, got shape "
                         f"{arr.shape}")
    return from_dense_multi(arr, n_classes=n_classes)


# -- the model -------------------------------------------------------------------------------
class MultiLabelParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``)."""

    class_prior: np.ndarray  # (M, K)
    confusion: np.ndarray    # (n_experts, M, K, K)


class _Data(NamedTuple):
    crowd: MultiCrowdLabels
    K: int                  # max_m K_m
    valid: np.ndarray       # (M, K): class k exists for target m
    item_class: np.ndarray  # (n_labels * K,): (item * M + target) * K + k
    conf_index: np.ndarray  # (n_labels * K,): flat index of [expert, target, k, label]


def _canonical_quadruples(crowd: MultiCrowdLabels) -> MultiCrowdLabels:
    """The same labels sorted by item, target, expert and label (returned as they are when
    already so): the fit's sums over the labels (``np.bincount`` with weights) then add
    the same terms in the same order whatever the order of the rows, so every permutation
    of them gives a bit-identical fit (as :func:`~crowdlearn.aggregation._common.
    _canonical_order` does for single-label crowds)."""
    if crowd.n_labels < 2:
        return crowd
    order = np.lexsort((crowd.label, crowd.expert, crowd.target, crowd.item))
    if (order[1:] > order[:-1]).all():
        return crowd
    return MultiCrowdLabels(crowd.item[order], crowd.expert[order], crowd.target[order],
                            crowd.label[order], crowd.n_items, crowd.n_experts,
                            crowd.n_targets, crowd.n_classes)


def _make_data(crowd: MultiCrowdLabels) -> _Data:
    crowd = _canonical_quadruples(crowd)  # the same fit whatever the order of the rows
    K = max(crowd.n_classes)
    M = crowd.n_targets
    valid = np.arange(K)[None, :] < np.asarray(crowd.n_classes)[:, None]
    ks = np.arange(K)
    item_class = ((crowd.item * M + crowd.target)[:, None] * K + ks).ravel()
    conf_index = ((((crowd.expert * M + crowd.target) * K)[:, None] + ks) * K
                  + crowd.label[:, None]).ravel()
    return _Data(crowd, K, valid, item_class, conf_index)


class MultiLabelDawidSkene(EMEstimator):
    r"""Dawid--Skene for multi-label crowds: per-expert, per-target confusion matrices.

    Each item :math:`i` has :math:`D` hidden true labels :math:`y^{(i,d)}` (targets
    :math:`d = 1, \dots, D`), independent, :math:`y^{(i,d)} = n` with probability
    :math:`\phi^{(d)}_n`. Expert :math:`r` reports class :math:`p` for target :math:`d`
    with probability :math:`M^{(r,d)}_{n,p} = P(y^{(i,d)}_r = p \mid y^{(i,d)} = n)`,
    independently across experts, targets and items given the truth. Target :math:`d`
    has :math:`N_d` classes (a common :math:`N` or one per target).

    Parameters
    ----------
    n_classes : int or sequence of int, optional
        Common number of classes, or one per target; by default taken from the
        labels (for each target, the largest class seen plus one).
    alpha : float, default 0.0
        Dirichlet pseudo-count added to every expected count, as in
        :class:`~crowdlearn.DawidSkene` (``alpha=0`` is maximum likelihood; in
        general MAP-EM under symmetric Dirichlet(:math:`\alpha + 1`) priors).
    n_init : int, default 1
        Number of EM runs; run 0 starts from the per-target soft majority vote,
        the others from random responsibilities.
    max_iter : int, default 200
    tol : float, default 1e-8
        A run stops when the objective (summed over targets) rises by at most
        ``tol * max(1, |objective|)``.
    random_state : None, int or numpy Generator
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step
        (``params`` is a :class:`MultiLabelParams`); returning ``True`` stops.

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_targets, K)
        ``class_prior_[d, n]`` :math:`= \phi^{(d)}_n`; ``K = max(n_classes_)``, and
        entries ``n >= n_classes_[d]`` are 0. ``priors_`` (crowd-kit's name) is a copy.
    confusion_ : ndarray of shape (n_experts, n_targets, K, K)
        ``confusion_[r, d, n, p]`` :math:`= M^{(r,d)}_{n,p} = P(` expert ``r`` says ``p``
        for target ``d`` :math:`\mid` its true class is ``n`` :math:`)`. Rows
        ``n < n_classes_[d]`` sum to one (uniform where there is no expected count);
        entries outside the ``n_classes_[d] x n_classes_[d]`` block are 0.
    posterior_ : ndarray of shape (n_items, n_targets, K)
        :math:`Q_i^{(d)}(n) = P(y^{(i,d)} = n \mid \text{labels})`; zero for classes the
        target lacks.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective after every E-step: the log-likelihood plus
        :math:`\alpha` times the sum of the logs of all parameters. Never decreases.
    log_likelihood_ : float
        The observed-data log-likelihood (without the prior term).
    objective_ : float
    n_iter_ : int
    converged_ : bool
    n_items_, n_experts_, n_targets_ : int
    n_classes_ : tuple of int

    Notes
    -----
    **Factorisation.** The likelihood of the labels :math:`L_i` of item :math:`i`
    is a sum over the :math:`\prod_d N_d` joint truths, but the prior and the
    label probabilities are products over targets, so the sum factorises:

    .. math::

        P(L_i) = \sum_{n^{(1)}} \cdots \sum_{n^{(D)}} \prod_d \phi^{(d)}_{n^{(d)}}
        \prod_{r \in R_i^{(d)}} M^{(r,d)}_{n^{(d)},\, y^{(i,d)}_r}
        = \prod_d \sum_n \phi^{(d)}_n \prod_{r \in R_i^{(d)}} M^{(r,d)}_{n,\, y^{(i,d)}_r},

    where :math:`R_i^{(d)}` are the experts who labelled target :math:`d` of item
    :math:`i`. Hence :math:`\ell = \sum_d \ell_d`, the joint posterior is the
    product of the per-target posteriors, the joint MAP labelling is the
    per-target arg-max, and EM is :math:`D` Dawid--Skene EMs run side by side:
    no joint configuration is ever enumerated.

    **E-step** (log space, one ``np.bincount`` over all labels):

    .. math::

        \log Q_i^{(d)}(n) = \log\phi^{(d)}_n + \sum_{r \in R_i^{(d)}}
        \log M^{(r,d)}_{n,\, y^{(i,d)}_r} - \log Z_i^{(d)}, \qquad
        \ell = \sum_{i, d} \log Z_i^{(d)}.

    **M-step** (Lagrange multipliers, one per distribution; one ``np.bincount`` on
    the flattened ``(expert, target, true class, label)`` index), over the
    :math:`m` items:

    .. math::

        \phi^{(d)}_n = \frac{\sum_i Q_i^{(d)}(n) + \alpha}{m + N_d\alpha}, \qquad
        M^{(r,d)}_{n,p} = \frac{\sum_{i:\, y^{(i,d)}_r = p} Q_i^{(d)}(n)
        + \alpha}{\sum_{i:\, r \in R_i^{(d)}} Q_i^{(d)}(n) + N_d\alpha}

    (a sum over labels: an expert who labelled an item twice counts twice).
    The denominator of :math:`M` sums over the labels expert :math:`r` actually
    gave for target :math:`d`; the source's equation (10) sums over all items,
    which is only right when every expert labels every target of every item.

    **Start and relabelling** are those of :class:`~crowdlearn.DawidSkene`, target
    by target: the soft majority vote of each target (items without a label for
    it start at its Laplace-smoothed vote frequencies), and after the best run
    each target's classes are permuted to agree best with its votes.

    References
    ----------
    J. Zhang and X. Wu, "Multi-class multi-label independent model for
    crowdsourcing", 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.multilabel import MultiLabelDawidSkene, from_quadruples
    >>> from crowdlearn.simulate import one_coin_confusion, simulate_crowd
    >>> sims = [simulate_crowd(500, one_coin_confusion([0.9, 0.7, 0.6], K), random_state=m)
    ...         for m, K in enumerate([2, 3])]
    >>> quads = [np.concatenate(parts) for parts in zip(*[
    ...     (s.labels.item, s.labels.expert, np.full(s.labels.n_labels, m), s.labels.label)
    ...     for m, s in enumerate(sims)])]
    >>> model = MultiLabelDawidSkene(alpha=1.0).fit(from_quadruples(*quads))
    >>> model.posterior_.shape, model.predict().shape, model.n_classes_
    ((500, 2, 3), (500, 2), (2, 3))
    >>> # target 1: mean diagonal of each expert's confusion matrix (truth 0.9, 0.7, 0.6)
    >>> np.round(np.diagonal(model.confusion_[:, 1], axis1=1, axis2=2).mean(axis=1), 1)
    array([0.9, 0.7, 0.6])
    >>> model.confusion_[0, 0].round(3)   # target 0 has 2 classes: the rest is padding
    array([[0.796, 0.204, 0.   ],
           [0.135, 0.865, 0.   ],
           [0.   , 0.   , 0.   ]])
    >>> [float(np.mean(model.predict()[:, m] == s.truth)) > 0.85 for m, s in enumerate(sims)]
    [True, True]
    """

    def __init__(self, *, n_classes=None, alpha: float = 0.0, n_init: int = 1,
                 max_iter: int = 200, tol: float = 1e-8, random_state=None, callback=None):
        self._store_params(locals())

    def _check_params(self):
        check_scalar(self.alpha, "alpha", low=0.0)
        check_em_params(self)

    # -- EM pieces -----------------------------------------------------------------------------
    @staticmethod
    def _log_joint(data: _Data, params: MultiLabelParams) -> np.ndarray:
        """``log P(y^(i,d) = n, labels of target d of item i)``, shape ``(n_items, D, K)``."""
        crowd, K = data.crowd, data.K
        n, M = crowd.n_items, crowd.n_targets
        with np.errstate(divide="ignore"):
            out = np.broadcast_to(np.log(params.class_prior), (n, M, K)).copy()
            if crowd.n_labels:
                log_conf = np.log(params.confusion).ravel()
                out += np.bincount(data.item_class, weights=log_conf[data.conf_index],
                                   minlength=n * M * K).reshape(n, M, K)
        return out

    def _log_prior_term(self, data: _Data, params: MultiLabelParams) -> float:
        a = float(self.alpha)
        if a == 0:
            return 0.0
        valid = data.valid
        pair = valid[:, :, None] & valid[:, None, :]
        total = (np.log(params.class_prior[valid]).sum()
                 + np.log(params.confusion[:, pair]).sum())
        return a * float(total)

    def _e_step(self, data: _Data, params: MultiLabelParams):
        n, M, K = data.crowd.n_items, data.crowd.n_targets, data.K
        q, log_evidence = normalize_log(self._log_joint(data, params).reshape(n * M, K))
        return q.reshape(n, M, K), float(log_evidence.sum()) + self._log_prior_term(data, params)

    def _m_step(self, data: _Data, q: np.ndarray) -> MultiLabelParams:
        crowd, K, valid = data.crowd, data.K, data.valid
        J, M = crowd.n_experts, crowd.n_targets
        a = float(self.alpha)
        n_cls = np.asarray(crowd.n_classes, dtype=float)
        class_count = q.sum(axis=0)                                    # (M, K)
        class_prior = np.where(valid, (class_count + a)
                               / (class_count.sum(axis=1, keepdims=True) + n_cls[:, None] * a),
                               0.0)
        pair = valid[:, :, None] & valid[:, None, :]                   # (M, K, K)
        counts = np.bincount(data.conf_index, weights=q[crowd.item, crowd.target].ravel(),
                             minlength=J * M * K * K).reshape(J, M, K, K) + a * pair
        denom = counts.sum(axis=3, keepdims=True)
        empty = denom <= 0
        uniform = np.broadcast_to((valid / n_cls[:, None])[None, :, None, :], counts.shape)
        confusion = np.where(empty, uniform, counts / np.where(empty, 1.0, denom))
        confusion = confusion * valid[None, :, :, None]                # rows k >= K_m: zero
        return MultiLabelParams(class_prior, confusion)

    @staticmethod
    def _majority_start(data: _Data) -> np.ndarray:
        """Per-target soft vote; like DawidSkene, items without a label for a target start
        at that target's Laplace-smoothed vote frequencies."""
        crowd, K, valid = data.crowd, data.K, data.valid
        n, M = crowd.n_items, crowd.n_targets
        counts = np.bincount((crowd.item * M + crowd.target) * K + crowd.label,
                             minlength=n * M * K).reshape(n, M, K).astype(float)
        total = counts.sum(axis=2)                                     # (n, M)
        voted = total > 0
        q = counts / np.where(voted, total, 1.0)[:, :, None]
        n_voted = voted.sum(axis=0)                                    # (M,)
        prior0 = (q.sum(axis=0) + valid) / (n_voted + np.asarray(crowd.n_classes))[:, None]
        return np.where(voted[:, :, None], q, prior0[None])

    def _random_start(self, data: _Data, rng) -> np.ndarray:
        n, M, K = data.crowd.n_items, data.crowd.n_targets, data.K
        g = rng.gamma(1.0, size=(n, M, K)) * data.valid   # flat Dirichlet on each target's classes
        return g / g.sum(axis=2, keepdims=True)

    @staticmethod
    def _align_with_vote(data: _Data, params: MultiLabelParams, q: np.ndarray):
        """Permute each target's hidden classes to agree best with its votes (see DawidSkene)."""
        crowd = data.crowd
        prior, conf, q = params.class_prior.copy(), params.confusion.copy(), q.copy()
        for m, Km in enumerate(crowd.n_classes):
            sel = crowd.target == m
            if not sel.any():
                continue
            labels, items = crowd.label[sel], crowd.item[sel]
            agreement = np.stack([np.bincount(labels, weights=q[items, m, k], minlength=Km)
                                  for k in range(Km)])
            _, target = linear_sum_assignment(agreement, maximize=True)
            if np.array_equal(target, np.arange(Km)):
                continue
            inv = np.argsort(target)
            prior[m, :Km] = prior[m, inv]
            conf[:, m, :Km, :] = conf[:, m, inv, :]
            q[:, m, :Km] = q[:, m, inv]
        return MultiLabelParams(prior, conf), q

    # -- the engine's hooks (crowdlearn._base.EMEstimator) ----------------------------------
    def _make_data(self, labels) -> _Data:
        crowd = as_multi_labels(labels, n_classes=self.n_classes)
        if crowd.n_labels == 0:
            raise ValueError("labels holds no label at all")
        return _make_data(crowd)

    def _init_params(self, data: _Data, restart: int, rng) -> MultiLabelParams:
        q = self._majority_start(data) if restart == 0 else self._random_start(data, rng)
        return self._m_step(data, q)

    def _set_fitted(self, data: _Data, result) -> None:
        crowd = data.crowd
        params, posterior = self._align_with_vote(data, result.params, result.posterior)
        self._params = params
        self.class_prior_ = params.class_prior
        self.confusion_ = params.confusion
        self._keep_em_result(result, posterior, log_prior=self._log_prior_term(data, params))
        self.n_items_ = crowd.n_items
        self.n_experts_ = crowd.n_experts
        self.n_targets_ = crowd.n_targets
        self.n_classes_ = crowd.n_classes

    # -- public API -----------------------------------------------------------------------------
    def fit(self, labels):
        """Fit the class priors and confusion matrices of every target by EM.

        Parameters
        ----------
        labels : MultiCrowdLabels, (item, expert, target, label) tuple, or 3-D array
            In an ``(n_items, n_experts, n_targets)`` array ``-1`` marks a missing label.

        Returns
        -------
        self
        """
        return self._fit(labels)

    @property
    def priors_(self) -> np.ndarray:
        """The fitted class priors under crowd-kit's name: a copy of ``class_prior_``,
        shape ``(n_targets, K)``, one row per target (entries past a target's
        ``n_classes_`` are 0). Changing it does not change the model."""
        self._check_fitted("class_prior_")
        return np.array(self.class_prior_, dtype=float)

    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        """Posterior of each target's class, shape ``(n_items, n_targets, K)``.

        With no argument, ``posterior_``; otherwise the posterior of NEW items
        given their labels (any form ``fit`` accepts, from experts and targets
        seen in ``fit``) under the fitted parameters.
        """
        return super().predict_proba(labels, X)

    def _proba_new(self, labels, X=None) -> np.ndarray:
        if X is not None:
            raise ValueError("MultiLabelDawidSkene has no features: predict_proba takes "
                             "labels only")
        crowd = as_multi_labels(labels)
        if crowd.n_targets > self.n_targets_:
            raise ValueError(f"target {crowd.n_targets - 1} out of range: the model was fitted "
                             f"with n_targets={self.n_targets_}")
        if crowd.expert.size and crowd.expert.max() >= self.n_experts_:
            raise ValueError(f"unknown expert {int(crowd.expert.max())}: the model was fitted "
                             f"on {self.n_experts_} experts (indices 0 to "
                             f"{self.n_experts_ - 1})")
        crowd = from_quadruples(crowd.item, crowd.expert, crowd.target, crowd.label,
                                n_items=crowd.n_items, n_experts=self.n_experts_,
                                n_targets=self.n_targets_, n_classes=list(self.n_classes_))
        data = _make_data(crowd)
        n, M, K = crowd.n_items, crowd.n_targets, data.K
        log_joint = self._log_joint(data, self._params).reshape(n * M, K)
        dead = ~np.isfinite(log_joint).any(axis=1)
        if dead.any():
            i, m = divmod(int(np.flatnonzero(dead)[0]), M)
            raise ValueError(f"item {i}, target {m} has probability 0 under every class (a "
                             f"label that had zero probability when fitting with alpha=0); "
                             f"use alpha > 0")
        q, _ = normalize_log(log_joint)
        return q.reshape(n, M, K)

    def predict(self, labels=None, X=None) -> np.ndarray:
        """Most probable class of every target, shape ``(n_items, n_targets)``.

        Because the targets are independent given the labels, this is also the
        most probable joint labelling (the source's equation (11)).
        """
        return super().predict(labels, X)  # the arg-max over the last axis, the classes
