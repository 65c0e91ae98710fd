"""Crowd labels: the sparse ``(item, expert, label)`` triples every model works on.

Three input forms are accepted and converted to :class:`CrowdLabels`:

* sparse triples ``(item, expert, label)`` of integer indices -- the core
  form, whose size grows with the number of labels given, not with
  items x experts;
* a dense ``(n_items, n_experts)`` matrix with ``-1`` where an expert gave no
  label (:func:`from_dense`);
* a long table of arbitrary identifiers ``(item_id, worker_id, label_id)``, as
  crowdsourcing platforms export it (:func:`from_table`); the identifiers are
  mapped to indices and kept, so results can be mapped back.

Examples
--------
>>> import numpy as np
>>> from crowdlearn import from_dense
>>> crowd = from_dense([[0, 1, -1], [1, 1, 1]], n_classes=2)
>>> crowd.n_items, crowd.n_experts, crowd.n_labels
(2, 3, 5)
>>> crowd.vote_counts()
array([[1., 1.],
       [0., 3.]])
>>> crowd.to_dense()
array([[ 0,  1, -1],
       [ 1,  1,  1]])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validation import check_int_array

__all__ = ["CrowdLabels", "from_triples", "from_dense", "from_table", "as_crowd_labels"]


@dataclass(frozen=True, eq=False)
class CrowdLabels:
    """Labels given by a crowd, stored as parallel integer arrays.

    Build it with :func:`from_triples`, :func:`from_dense` or :func:`from_table`,
    which validate their input; the constructor itself trusts its arguments.

    Attributes
    ----------
    item, expert, label : ndarray of shape (n_labels,)
        Label ``t`` says that expert ``expert[t]`` put item ``item[t]`` in class
        ``label[t]``. An expert may label an item more than once.
    n_items, n_experts, n_classes : int
        Sizes of the index ranges (items or experts without any label allowed).
    item_ids, expert_ids, class_ids : ndarray or None
        Original identifiers for each index when built from a table.
    """

    item: np.ndarray
    expert: np.ndarray
    label: np.ndarray
    n_items: int
    n_experts: int
    n_classes: int
    item_ids: np.ndarray | None = field(default=None, repr=False)
    expert_ids: np.ndarray | None = field(default=None, repr=False)
    class_ids: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_labels(self) -> int:
        """Number of labels given."""
        return int(self.item.shape[0])

    def vote_counts(self, weights=None) -> np.ndarray:
        """Votes per item and class, shape ``(n_items, n_classes)``."""
        flat = self.item * self.n_classes + self.label
        counts = np.bincount(flat, weights=weights, minlength=self.n_items * self.n_classes)
        return counts.reshape(self.n_items, self.n_classes).astype(float, copy=False)

    def labels_per_item(self) -> np.ndarray:
        """Number of labels each item received, shape ``(n_items,)``."""
        return np.bincount(self.item, minlength=self.n_items)

    def labels_per_expert(self) -> np.ndarray:
        """Number of labels each expert gave, shape ``(n_experts,)``."""
        return np.bincount(self.expert, minlength=self.n_experts)

    def unlabelled_items(self) -> np.ndarray:
        """Indices of items that received no label."""
        return np.flatnonzero(self.labels_per_item() == 0)

    def to_dense(self, missing: int = -1) -> np.ndarray:
        """Return the ``(n_items, n_experts)`` matrix with ``missing`` where no label was given.

        Raises
        ------
        ValueError
            If some expert labelled the same item more than once (a dense matrix
            cannot hold repeated labels).
        """
        pair = self.item * self.n_experts + self.expert
        if np.unique(pair).size != pair.size:
            raise ValueError("some expert labelled the same item more than once; a dense "
                             "matrix cannot hold repeated labels (keep the triples)")
        dense = np.full((self.n_items, self.n_experts), missing, dtype=np.intp)
        dense[self.item, self.expert] = self.label
        return dense

    def to_table(self):
        """Return ``(item_ids, expert_ids, class_ids)`` arrays, one entry per label.

        Uses the original identifiers where the labels came from a table, the
        indices otherwise.
        """
        def back(ids, idx):
            return idx.copy() if ids is None else ids[idx]
        return (back(self.item_ids, self.item), back(self.expert_ids, self.expert),
                back(self.class_ids, self.label))

    def subset(self, mask) -> "CrowdLabels":
        """Keep only the labels where ``mask`` is true (sizes and id maps unchanged)."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != self.item.shape:
            raise ValueError(f"mask must have shape ({self.n_labels},), got {mask.shape}")
        return CrowdLabels(self.item[mask], self.expert[mask], self.label[mask], self.n_items,
                           self.n_experts, self.n_classes, self.item_ids, self.expert_ids,
                           self.class_ids)

    def __repr__(self) -> str:
        return (f"CrowdLabels(n_items={self.n_items}, n_experts={self.n_experts}, "
                f"n_classes={self.n_classes}, n_labels={self.n_labels})")


def _infer_size(given, values, name):
    if given is None:
        return int(values.max()) + 1 if values.size else 0
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or given < 1:
        raise ValueError(f"{name} must be a positive integer, got {given!r}")
    return int(given)


def from_triples(item, expert, label, *, n_items=None, n_experts=None,
                 n_classes=None) -> CrowdLabels:
    """Build :class:`CrowdLabels` from parallel arrays of integer indices.

    Parameters
    ----------
    item, expert, label : array-like of int, shape (n_labels,)
        Zero-based indices.
    n_items, n_experts, n_classes : int, optional
        Sizes of the index ranges; inferred as ``max + 1`` when omitted. Give
        them when some items, experts or classes have no label at all.

    Examples
    --------
    >>> from crowdlearn import from_triples
    >>> from_triples([0, 0, 1], [0, 1, 1], [2, 2, 0], n_items=3)
    CrowdLabels(n_items=3, n_experts=2, n_classes=3, n_labels=3)
    """
    item = check_int_array(item, "item", low=0)
    expert = check_int_array(expert, "expert", low=0)
    label = check_int_array(label, "label", low=0)
    if not (item.shape == expert.shape == label.shape):
        raise ValueError(f"item, expert and label must have the same length, got "
                         f"{item.shape[0]}, {expert.shape[0]} and {label.shape[0]}")
    n_items = _infer_size(n_items, item, "n_items")
    n_experts = _infer_size(n_experts, expert, "n_experts")
    n_classes = _infer_size(n_classes, label, "n_classes")
    check_int_array(item, "item", high=n_items, high_name=f"n_items={n_items}")
    check_int_array(expert, "expert", high=n_experts,
                    high_name=f"unknown expert: n_experts={n_experts}")
    check_int_array(label, "label", high=n_classes, high_name=f"n_classes={n_classes}")
    if n_classes < 2:
        raise ValueError(f"at least 2 classes are needed, got n_classes={n_classes}")
    return CrowdLabels(item, expert, label, n_items, n_experts, n_classes)


def from_dense(matrix, *, n_classes=None, missing: int = -1) -> CrowdLabels:
    """Build :class:`CrowdLabels` from an ``(n_items, n_experts)`` matrix.

    Parameters
    ----------
    matrix : array-like of int, shape (n_items, n_experts)
        ``matrix[i, j]`` is the class expert ``j`` gave item ``i``, or ``missing``.
    n_classes : int, optional
        Number of classes; inferred as ``max + 1`` when omitted.
    missing : int, default -1
        The marker for "no label". NaN is refused: use ``missing``.
    """
    arr = check_int_array(matrix, "labels", ndim=2, low=min(missing, 0))
    if arr.shape[1] == 0:
        raise ValueError(f"labels has no experts (shape {arr.shape})")
    observed = arr != missing
    bad = observed & (arr < 0)
    if bad.any():
        raise ValueError(f"labels has negative values other than the missing marker {missing}")
    if not observed.any():
        raise ValueError("labels holds no label at all: every entry is the missing marker")
    item, expert = np.nonzero(observed)
    return from_triples(item, expert, arr[item, expert], n_items=arr.shape[0],
                        n_experts=arr.shape[1], n_classes=n_classes)


def _encode(values, name, known=None):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at position {int(np.flatnonzero(np.isnan(arr))[0])}")
    if arr.dtype == object and any(v is None for v in arr):
        raise ValueError(f"{name} contains None")
    mixed = (f"{name} identifiers must be mutually comparable (e.g. all strings or all "
             f"numbers)")
    if known is None:
        try:
            ids, codes = np.unique(arr, return_inverse=True)
        except TypeError:
            raise ValueError(mixed) from None
        return ids, codes.astype(np.intp)
    known = np.asarray(known)
    if known.ndim != 1 or known.size == 0:
        raise ValueError(f"the known {name} identifiers must be a non-empty 1-D array, got "
                         f"shape {known.shape}")
    try:
        order = np.argsort(known, kind="stable")
        if (known[order][1:] == known[order][:-1]).any():
            raise ValueError(f"the known {name} identifiers contain duplicates")
        pos = np.searchsorted(known, arr, sorter=order)
    except TypeError:
        raise ValueError(mixed) from None
    pos = np.clip(pos, 0, known.size - 1)
    codes = order[pos]
    unknown = known[codes] != arr
    if unknown.any():
        raise ValueError(f"unknown {name}: {arr[unknown][:5].tolist()} not among the "
                         f"{known.size} known {name} identifiers")
    return known, codes.astype(np.intp)


def from_table(items, workers, labels, *, classes=None, item_ids=None,
               expert_ids=None) -> CrowdLabels:
    """Build :class:`CrowdLabels` from a long table of arbitrary identifiers.

    Parameters
    ----------
    items, workers, labels : array-like, shape (n_labels,)
        One row per label given; identifiers may be strings or numbers.
    classes : array-like, optional
        All class identifiers in index order (default: the sorted distinct labels).
        Give it when some class was never used.
    item_ids, expert_ids : array-like, optional
        Known identifiers to map onto (e.g. a fitted model's); an identifier
        not among them raises ``ValueError``. By default the sorted distinct ones.

    Examples
    --------
    >>> from crowdlearn import from_table
    >>> crowd = from_table(["a", "a", "b"], ["w1", "w2", "w2"], ["cat", "dog", "dog"])
    >>> crowd.item.tolist(), crowd.expert.tolist(), crowd.label.tolist()
    ([0, 0, 1], [0, 1, 1], [0, 1, 1])
    >>> [x.tolist() for x in crowd.to_table()]
    [['a', 'a', 'b'], ['w1', 'w2', 'w2'], ['cat', 'dog', 'dog']]
    """
    shapes = [np.shape(a) for a in (items, workers, labels)]
    for name, shape in zip(("items", "workers", "labels"), shapes):
        if len(shape) != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {shape}")
    lengths = {shape[0] for shape in shapes}
    if len(lengths) != 1:
        raise ValueError(f"items, workers and labels must have the same length, got "
                         f"{[shape[0] for shape in shapes]}")
    if lengths == {0}:
        raise ValueError("the table is empty: at least one label is needed")
    iid, icode = _encode(items, "item", item_ids)
    eid, ecode = _encode(workers, "worker", expert_ids)
    cid, ccode = _encode(labels, "label", classes)
    if cid.size < 2:
        raise ValueError(f"at least 2 classes are needed, got {cid.tolist()}")
    return CrowdLabels(icode, ecode, ccode, iid.size, eid.size, cid.size, iid, eid, cid)


def as_crowd_labels(data, *, n_items=None, n_experts=None, n_classes=None) -> CrowdLabels:
    """Convert any accepted label form to :class:`CrowdLabels`.

    ``data`` may be a :class:`CrowdLabels`, a dense 2-D matrix (``-1`` for missing),
    or a tuple ``(item, expert, label)`` of index arrays. Sizes given here are
    checked against (or imposed on) the result.
    """
    if isinstance(data, CrowdLabels):
        crowd = data
        for name, given in (("n_items", n_items), ("n_experts", n_experts),
                            ("n_classes", n_classes)):
            have = getattr(crowd, name)
            if given is not None and given != have:
                if name == "n_experts" and have > given:
                    raise ValueError(f"unknown expert: the labels come from {have} experts but "
                                     f"the model knows {given}")
                if name == "n_classes" and have > given:
                    raise ValueError(f"label out of range: the labels have {have} classes but "
                                     f"the model has {given}")
                if have > given:
                    raise ValueError(f"{name} mismatch: labels have {have}, expected {given}")
                crowd = CrowdLabels(crowd.item, crowd.expert, crowd.label,
                                    **{**{k: getattr(crowd, k) for k in
                                          ("n_items", "n_experts", "n_classes")}, name: given},
                                    item_ids=crowd.item_ids, expert_ids=crowd.expert_ids,
                                    class_ids=crowd.class_ids)
        return crowd
    if isinstance(data, tuple) and len(data) == 3:
        return from_triples(*data, n_items=n_items, n_experts=n_experts, n_classes=n_classes)
    if data is None:
        raise ValueError("labels is None")
    arr = np.asarray(data) if not isinstance(data, np.ndarray) else data
    if arr.ndim != 2:
        raise ValueError(f"labels must be a CrowdLabels, a (item, expert, label) tuple or a "
                         f"2-D (n_items, n_experts) matrix, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"labels is empty (shape {arr.shape})")
    crowd = from_dense(arr, n_classes=n_classes)
    if n_items is not None and crowd.n_items != n_items:
        raise ValueError(f"labels has {crowd.n_items} rows (items), expected {n_items}")
    if n_experts is not None and crowd.n_experts != n_experts:
        raise ValueError(f"labels has {crowd.n_experts} columns (experts), expected {n_experts}")
    return crowd
