r"""Crowd labels: the sparse ``(item, expert, label)`` triples every model works on.

Three input forms are accepted and converted to :class:`CrowdLabels`:

* sparse triples ``(item, expert, label)`` of integer indices -- the core
  form, whose size grows with the number of labels given, not with
  items x experts;
* a dense ``(n_items, n_experts)`` matrix with ``-1`` where an expert gave no
  label (:func:`from_dense`);
* a long table of arbitrary identifiers ``(item_id, worker_id, label_id)``, as
  crowdsourcing platforms export it (:func:`from_table`); the identifiers are
  mapped to indices and kept, so results can be mapped back.

In the book's notation (indices from 0 in code, from 1 in formulas) a triple
``(i, r, p)`` is the label :math:`y^{(i)}_r = p` that expert :math:`r` gave item
:math:`i`; ``n_items``, ``n_experts``, ``n_classes`` and ``n_labels`` are
:math:`m`, :math:`R`, :math:`N` and :math:`L`, and :meth:`CrowdLabels.labels_per_item`
and :meth:`CrowdLabels.labels_per_expert` count :math:`|R_i|` and :math:`|I_r|`.
As in the models' docstrings, :math:`R_i` and :math:`I_r` are taken with
multiplicity: a repeated label is one more term of a sum over :math:`r \in R_i`.

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

import numbers
import weakref
from dataclasses import dataclass, field

import numpy as np

# _object_kind is re-exported for crowdlearn.distributed, which reads it from here
from crowdlearn._ids import (_encode, _factorize_columns, _id_array, _ids_kind,  # noqa: F401
                             _kinds_match, _object_kind)
from crowdlearn._limits import check_crowd_size
from crowdlearn._validation import as_float_array, check_int_array, read_only

__all__ = ["CrowdLabels", "from_triples", "from_dense", "from_table", "from_dataframe",
           "as_crowd_labels"]


# Index arrays a CrowdLabels made itself: read-only views of read-only copies, so
# nobody (the caller included) can change them after they were checked.
_FROZEN: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


def _freeze(arr: np.ndarray) -> np.ndarray:
    """A read-only copy of a new array we own, handed out as a view that cannot be unlocked
    (neither through its flags nor through its ``.base``)."""
    view = read_only(arr).view()
    _FROZEN[id(view)] = view
    return view


def _is_frozen(arr) -> bool:
    return (type(arr) is np.ndarray and _FROZEN.get(id(arr)) is arr
            and arr.dtype == np.intp and not arr.flags.writeable
            and isinstance(arr.base, np.ndarray) and not arr.base.flags.writeable)


def _size_arg(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        what = {0: "a non-negative integer", 1: "a positive integer"}.get(
            low, f"an integer >= {low}")
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def _label_weights(weights, n_labels: int) -> np.ndarray:
    """``weights`` of :meth:`CrowdLabels.vote_counts`: one finite number >= 0 per label."""
    w = as_float_array(weights, "weights")
    if w.shape != (n_labels,):
        raise ValueError(f"weights must hold one number per label, shape ({n_labels},), got "
                         f"shape {w.shape}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ValueError(f"weights must be finite and >= 0, got {w[r]!r} for label {r} "
                         f"({int(bad.sum())} such weight(s))")
    return w


def _own_index_arrays(obj, fields) -> tuple[int, dict]:
    """Check the index arrays of a labels dataclass; return their length and the values
    its ``__post_init__`` stores (``{attribute: value}``).

    ``fields`` lists ``(array, size attribute, smallest size)``; the size attribute may
    be a number instead (a bound checked but not stored). The sizes must be
    integers, every array becomes a read-only ``intp`` copy (kept as is when it already
    is one of ours), the arrays must have equal lengths, and every index must lie in
    ``[0, size)``. Shared by :class:`CrowdLabels` and ``MultiCrowdLabels``.
    """
    sizes, owned = {}, {}
    for name, size_attr, low in fields:
        if isinstance(size_attr, str):
            sizes[name] = owned[size_attr] = _size_arg(getattr(obj, size_attr), size_attr, low)
        else:
            sizes[name] = int(size_attr)
        arr = getattr(obj, name)
        owned[name] = arr if _is_frozen(arr) else _freeze(
            check_int_array(arr, name, allow_empty=True))
    names = [f[0] for f in fields]
    lengths = [owned[name].shape[0] for name in names]
    if len(set(lengths)) != 1:
        raise ValueError(f"{', '.join(names[:-1])} and {names[-1]} must have the same length, "
                         f"got {', '.join(map(str, lengths[:-1]))} and {lengths[-1]}")
    for name, size_attr, _ in fields:
        arr = owned[name]
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0:
                raise ValueError(f"{name} has negative values (e.g. {lo}); indices start at 0")
            if hi >= sizes[name]:
                unknown = " (unknown expert)" if name == "expert" else ""
                bound = size_attr if isinstance(size_attr, str) else "the number of classes"
                raise ValueError(f"{name} has values out of range: {hi}, but must be < "
                                 f"{bound}={sizes[name]}{unknown}")
    return lengths[0], owned


_IDS_FOR = {"item_ids": ("n_items", "item"), "expert_ids": ("n_experts", "expert"),
            "class_ids": ("n_classes", "class")}


def _own_ids(ids, attr: str) -> np.ndarray:
    """A read-only copy of a list of identifiers: one type, no NaN or None, no duplicates
    (two indices with one identifier would be merged when results are mapped back)."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "US" and ids.ndim == 1:
        pass  # the common case (from_table's own sorted ids): no element loop, and the
        # one copy is read_only's below
    else:
        try:
            ids, _ = _id_array(ids, attr)
        except ValueError as exc:
            if "1-dimensional" in str(exc):
                raise ValueError(f"{attr} must hold one identifier per entry (a 1-D "
                                 f"array), got shape {np.shape(ids)}") from None
            raise
    if ids.size > 1:
        try:
            ordered = bool((ids[1:] > ids[:-1]).all())
            duplicated = not ordered and np.unique(ids).size != ids.size
        except TypeError:
            raise ValueError(f"{attr} identifiers must be mutually comparable") from None
        if duplicated:
            raise ValueError(f"{attr} contains duplicates: each index needs its own "
                             f"identifier, or results mapped back would merge them")
    return read_only(ids)


@dataclass(frozen=True, eq=False)
class CrowdLabels:
    """Labels given by a crowd, stored as parallel integer arrays.

    Build it with :func:`from_triples`, :func:`from_dense` or :func:`from_table`.
    The constructor checks its arguments too (integer indices in range, equal
    lengths, plausible sizes: see :func:`~crowdlearn.size_limits`) and keeps its
    own read-only copies of the arrays, so a ``CrowdLabels`` that exists is
    valid and stays valid: changing the arrays it was built from changes
    nothing, and its own arrays cannot be written to.

    Attributes
    ----------
    item, expert, label : ndarray of shape (n_labels,)
        Entry ``e`` says that expert :math:`r` = ``expert[e]`` put item :math:`i` =
        ``item[e]`` in class ``label[e]``: the label :math:`y^{(i)}_r`. An expert
        may label an item more than once.
    n_items, n_experts, n_classes : int
        Sizes of the index ranges, :math:`m`, :math:`R` and :math:`N` (items or
        experts without any label allowed).
    item_ids, expert_ids, class_ids : ndarray or None
        Original identifiers for each index when built from a table.

    The private keyword ``_from_frame`` marks labels read from a pandas DataFrame:
    a model fitted on them gives its results by id as pandas objects
    (:mod:`crowdlearn.frames`).
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
    _from_frame: bool = field(default=False, repr=False, kw_only=True)

    def __post_init__(self):
        length, owned = _own_index_arrays(self, (("item", "n_items", 0),
                                                 ("expert", "n_experts", 0),
                                                 ("label", "n_classes", 2)))
        check_crowd_size(owned["n_items"], owned["n_experts"], owned["n_classes"], length)
        for attr, (size_name, what) in _IDS_FOR.items():
            ids = getattr(self, attr)
            if ids is None:
                continue
            owned[attr] = _own_ids(ids, attr)
            if owned[attr].shape[0] != owned[size_name]:
                raise ValueError(f"{attr} must hold one identifier per {what} "
                                 f"({size_name}={owned[size_name]}), got shape "
                                 f"{owned[attr].shape}")
        owned["_from_frame"] = self._from_frame is True
        for attr, value in owned.items():  # a frozen dataclass: set once, here only
            object.__setattr__(self, attr, value)

    @property
    def n_labels(self) -> int:
        """Number of labels given, :math:`L` (repeated labels counted each time)."""
        return int(self.item.shape[0])

    def vote_counts(self, weights=None) -> np.ndarray:
        r"""Votes per item and class, shape ``(n_items, n_classes)``.

        Entry ``[i, n]`` is the number of labels of item :math:`i` that say class
        :math:`n`, :math:`\sum_{r \in R_i} 1\{y^{(i)}_r = n\}`, or with ``weights``
        (one finite number >= 0 per label, shape ``(n_labels,)``) the sum of their
        weights. NaN, infinite or negative weights, or a shape other than
        ``(n_labels,)``, are a ``ValueError``.
        """
        if weights is not None:
            weights = _label_weights(weights, self.n_labels)
        flat = self.item * self.n_classes + self.label
        counts = np.bincount(flat, weights=weights, minlength=self.n_items * self.n_classes)
        return counts.reshape(self.n_items, self.n_classes).astype(float, copy=False)

    def labels_per_item(self) -> np.ndarray:
        """Number of labels each item received, :math:`|R_i|`, shape ``(n_items,)``."""
        return np.bincount(self.item, minlength=self.n_items)

    def labels_per_expert(self) -> np.ndarray:
        """Number of labels each expert gave, :math:`|I_r|`, shape ``(n_experts,)``."""
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
        if isinstance(missing, (bool, np.bool_)) or not isinstance(missing, numbers.Integral):
            raise ValueError(f"missing must be an integer marker such as -1, got {missing!r}")
        if 0 <= missing < self.n_classes:
            raise ValueError(f"missing={missing} is also a class (0..{self.n_classes - 1}): "
                             f"a missing entry would read as a label; use a negative marker "
                             f"such as -1")
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

    def to_frame(self):
        """The labels as a pandas DataFrame, one row per label, with columns ``task``,
        ``worker`` and ``label`` holding the original identifiers (:meth:`to_table`): the
        table a platform exports and every model's ``fit`` reads (needs pandas)."""
        pd = require_pandas()
        task, worker, label = self.to_table()
        return pd.DataFrame({"task": task, "worker": worker, "label": label})

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


def _infer_size(given, values, name, low=1):
    if given is None:
        return int(values.max()) + 1 if values.size else 0
    return _size_arg(given, name, low)


def _build(item, expert, label, n_items, n_experts, n_classes, *, source="labels",
           ids=(None, None, None)) -> CrowdLabels:
    """Check sizes (inferred ones first, with the reason in the message), then build."""
    inferred = [name for name, given in (("n_items", n_items), ("n_experts", n_experts),
                                         ("n_classes", n_classes)) if given is None]
    n_items = _infer_size(n_items, item, "n_items")
    n_experts = _infer_size(n_experts, expert, "n_experts")
    n_classes = _infer_size(n_classes, label, "n_classes")
    check_crowd_size(n_items, n_experts, n_classes, item.shape[0], inferred=inferred,
                     source=source)
    if n_classes < 2:
        raise ValueError(f"at least 2 classes are needed, got n_classes={n_classes}")
    return CrowdLabels(_freeze(item), _freeze(expert), _freeze(label), n_items, n_experts,
                       n_classes, *ids)


def from_triples(item, expert, label, *, n_items=None, n_experts=None,
                 n_classes=None) -> CrowdLabels:
    """Build :class:`CrowdLabels` from parallel arrays of integer indices.

    Parameters
    ----------
    item, expert, label : array-like of int, shape (n_labels,)
        Zero-based indices. They are copied: changing them afterwards does not
        change the result.
    n_items, n_experts, n_classes : int, optional
        Sizes of the index ranges; inferred as ``max + 1`` when omitted. Give
        them when some items, experts or classes have no label at all. Sizes
        beyond the limits of :func:`~crowdlearn.size_limits` are refused with a
        ``ValueError`` that says how they were inferred.

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
    return _build(item, expert, label, n_items, n_experts, n_classes)


def from_dense(matrix, *, n_classes=None, missing: int = -1) -> CrowdLabels:
    """Build :class:`CrowdLabels` from an ``(n_items, n_experts)`` matrix.

    Parameters
    ----------
    matrix : array-like of int, shape (n_items, n_experts)
        ``matrix[i, r]`` is the class :math:`y^{(i)}_r` expert ``r`` gave item ``i``,
        or ``missing``. In a numpy masked array, a masked entry is a missing label.
    n_classes : int, optional
        Number of classes; inferred as ``max + 1`` when omitted (and refused
        when implausibly large, e.g. when ``(item, expert, label)`` triples were
        passed as a matrix: use :func:`from_triples` for those).
    missing : int, default -1
        The marker for "no label". NaN is refused: use ``missing``.
    """
    if isinstance(missing, bool) or not isinstance(missing, numbers.Integral):
        raise ValueError(f"missing must be an integer marker such as -1, got {missing!r}")
    missing = int(missing)
    if np.ma.isMaskedArray(matrix):  # a masked entry is a missing label
        matrix = matrix.astype(object).filled(missing)  # the marker fits any dtype
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
    return _build(item.astype(np.intp), expert.astype(np.intp), arr[item, expert],
                  arr.shape[0], arr.shape[1], n_classes, source="dense")


def from_table(items, workers, labels, *, classes=None, item_ids=None,
               expert_ids=None) -> CrowdLabels:
    """Build :class:`CrowdLabels` from a long table of arbitrary identifiers.

    Parameters
    ----------
    items, workers, labels : array-like, shape (n_labels,)
        One row per label given; identifiers may be strings or numbers (or
        pandas columns), but each column must hold one type: ``'1'``, ``1`` and
        ``True`` are different identifiers and a column mixing them is refused.
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
    return _of_codes(_table_codes(items, workers, labels, classes, item_ids, expert_ids))


def _table_codes(items, workers, labels, classes, item_ids, expert_ids):
    """``(codes, ids)`` of the item, worker and label columns of a table (see
    :func:`from_table`), each column checked and encoded by :func:`~crowdlearn._ids._encode`."""
    shapes = []
    for name, a in zip(("items", "workers", "labels"), (items, workers, labels)):
        if a is None or isinstance(a, (str, bytes)):
            raise ValueError(f"{name} must be a sequence of identifiers, got {a!r:.40}")
        try:
            shapes.append(np.shape(a))
        except ValueError:
            raise ValueError(f"{name} must be 1-dimensional (ragged input)") from None
    for name, shape in zip(("items", "workers", "labels"), shapes):
        if len(shape) != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {shape}")
    lengths = {shape[0] for shape in shapes}
    if len(lengths) != 1:
        raise ValueError(f"items, workers and labels must have the same length, got "
                         f"{[shape[0] for shape in shapes]}")
    if lengths == {0}:
        raise ValueError("the table is empty: at least one label is needed")
    return [_encode(values, name, known)[::-1] for values, name, known in
            ((items, "item", item_ids), (workers, "worker", expert_ids),
             (labels, "label", classes))]


def _of_codes(encoded, from_frame: bool = False) -> CrowdLabels:
    """The :class:`CrowdLabels` of encoded columns ``[(codes, ids)] * 3`` (items, workers,
    labels), built once; ``from_frame`` when they were read from a DataFrame."""
    (icode, iid), (ecode, eid), (ccode, cid) = encoded
    if cid.size < 2:
        raise ValueError(f"at least 2 classes are needed, got {cid.tolist()}; if the other "
                         f"classes just do not occur in this table, list them all with "
                         f"classes=[...] (e.g. a fitted model's class_ids_)")
    return CrowdLabels(icode, ecode, ccode, iid.size, eid.size, cid.size, iid, eid, cid,
                       _from_frame=from_frame)


def _could_be_indices(rows) -> bool:
    """Whether every entry is a non-negative whole number (as in triples of indices)."""
    try:
        arr = np.asarray(rows)
        if arr.dtype.kind not in "iuf":
            return False
        with np.errstate(invalid="ignore"):
            return bool(np.isfinite(arr).all() and (arr >= 0).all()
                        and (arr == np.round(arr)).all())
    except Exception:
        return False


def _frame_onto(frame, expert_ids, class_ids) -> CrowdLabels:
    """A ``(task, worker, label)`` DataFrame of new labels read straight onto a fitted
    model's worker and class ids (so it may use only some of the classes, even one); an
    unknown worker or class is a ``ValueError``."""
    missing = [c for c in ("task", "worker", "label") if c not in frame.columns]
    if missing:
        _from_dataframe(frame)  # raises the usual message about the columns
    _refuse_duplicate_columns(frame)
    return from_table(frame["task"], frame["worker"], frame["label"], classes=class_ids,
                      expert_ids=expert_ids)


def _reindex_onto(crowd: CrowdLabels, expert_ids, class_ids) -> CrowdLabels:
    """New labels built from a table, re-indexed onto a fitted model's identifiers.

    ``expert_ids`` and ``class_ids`` are what the model saw in ``fit`` (``None``
    when it was fitted on index-coded labels). A model fitted without
    identifiers reads integer identifiers as its indices and refuses any other
    identifier: it cannot know which of its experts ``'w9'`` is. The result
    carries no identifiers; its sizes cover the largest index it uses.
    """
    expert, label = crowd.expert, crowd.label
    n_experts, n_classes = crowd.n_experts, crowd.n_classes
    for kind, new_ids, old_ids in (("expert", crowd.expert_ids, expert_ids),
                                   ("label", crowd.class_ids, class_ids)):
        if new_ids is None:
            continue
        if old_ids is None:
            if new_ids.dtype.kind not in "iu" or (new_ids.size and new_ids.min() < 0):
                raise ValueError(
                    f"these labels carry {kind} identifiers such as {new_ids[:3].tolist()} "
                    f"(they were built from a table), but the model was fitted on "
                    f"index-coded labels without identifiers, so they cannot be matched to "
                    f"its {kind}s; fit on a table too, or pass {kind} indices")
            codes = new_ids.astype(np.intp)
        else:
            new_kind, old_kind = _ids_kind(new_ids), _ids_kind(old_ids)
            if not _kinds_match(new_kind, old_kind):
                raise ValueError(f"unknown {kind}(s): {new_ids[:3].tolist()} are of type "
                                 f"{new_kind} but the model's {kind} identifiers are of type "
                                 f"{old_kind} (such as {old_ids[:3].tolist()})")
            lookup = {v: i for i, v in enumerate(old_ids.tolist())}
            codes = np.array([lookup.get(v, -1) for v in new_ids.tolist()], dtype=np.intp)
            used = np.unique(expert if kind == "expert" else label)
            unknown = used[codes[used] < 0]
            if unknown.size:
                what = "unknown expert" if kind == "expert" else "unknown label"
                raise ValueError(f"{what}(s) {new_ids[unknown][:5].tolist()}: not among the "
                                 f"{len(old_ids)} seen when fitting")
        size = max(int(codes.max()) + 1 if codes.size else 0,
                   len(old_ids) if old_ids is not None else 0)
        if kind == "expert":
            expert, n_experts = codes[expert], size
        else:
            label, n_classes = codes[label], max(size, 2)
    return CrowdLabels(crowd.item, expert, label, crowd.n_items, n_experts, n_classes)


def require_pandas():
    """Import pandas, or raise an ``ImportError`` that says how to get it."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is installed wherever a DataFrame exists
        raise ImportError("results by original id need pandas: pip install "
                          "'crowdlearn[pandas]' (or pandas)") from None
    return pd




def _is_dataframe(data) -> bool:
    return type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns")


def _refuse_dask_frame(data, what: str = "labels") -> None:
    """``TypeError`` for a dask DataFrame or Series where an in-memory one is read: dask's
    lazy objects cannot be inspected (dask's own error says nothing about crowdlearn)."""
    module = type(data).__module__
    if module.split(".")[0] == "dask" and "dataframe" in module:
        raise TypeError(f"{what} is a dask {type(data).__name__}: only DawidSkene and "
                        f"OneCoinDawidSkene fit a dask DataFrame of labels (on the "
                        f"cluster, crowdlearn.distributed); for other models and functions "
                        f"gather it first, e.g. model.fit(ddf.compute()), if it fits in "
                        f"memory")


def _refuse_duplicate_columns(df, columns=("task", "worker", "label")) -> None:
    """``ValueError`` naming every one of ``columns`` that ``df`` holds more than once:
    which of two ``label`` columns holds the labels cannot be known (pandas would hand
    out both as a DataFrame)."""
    names = list(df.columns)
    dup = [c for c in dict.fromkeys(columns) if names.count(c) > 1]
    if dup:
        shown = ", ".join(f"{c!r} ({names.count(c)} times)" for c in dup)
        raise ValueError(f"the DataFrame has more than one column named {shown}; which one "
                         f"is meant is ambiguous: drop or rename the others")


def _from_dataframe(df, columns=("task", "worker", "label"), classes=None) -> CrowdLabels:
    if getattr(df.columns, "nlevels", 1) != 1:
        raise ValueError("a DataFrame of labels must have flat column names, not a MultiIndex")
    names = list(df.columns)
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"a DataFrame of labels needs the columns {list(columns)} (one row "
                         f"per label: task id, worker id, label); missing {missing}, got "
                         f"{list(map(str, names))[:10]}. A wide (items x workers) table is "
                         f"not read as a DataFrame: pass df.to_numpy() (with -1 for missing) "
                         f"if that is what you have, or name the columns with "
                         f"from_dataframe(df, task=..., worker=..., label=...)")
    _refuse_duplicate_columns(df, columns)
    if len(set(columns)) != 3:
        raise ValueError(f"task, worker and label must be three different columns, got "
                         f"{list(columns)}")
    if len(df) == 0:
        raise ValueError("the DataFrame of labels has no rows")
    for c in columns:
        col = df[c]
        if bool(col.isna().any()):
            row = col.index[col.isna().to_numpy()][0]
            raise ValueError(f"column {c!r} has a missing value (NaN/None) in row {row!r}; "
                             f"drop those rows first (a missing label is simply a row "
                             f"that is not there)")
    encoded = None if classes is not None else _factorize_columns(df, columns)
    if encoded is None:
        encoded = _table_codes(*(df[c] for c in columns), classes, None, None)
    return _of_codes(encoded, from_frame=True)


def from_dataframe(df, *, task: str = "task", worker: str = "worker", label: str = "label",
                   classes=None) -> CrowdLabels:
    """Read a pandas DataFrame of labels, one row per label (crowd-kit's layout).

    Parameters
    ----------
    df : pandas.DataFrame
        One row per label given: which task (item), which worker (expert) and
        which label. Identifiers may be of any one type per column (strings,
        integers, ...); they are kept, and a model fitted on the result gives
        its results by these identifiers (:mod:`crowdlearn.frames`).
    task, worker, label : str
        The column names (crowd-kit's ``task``, ``worker``, ``label`` by default).
    classes : sequence, optional
        Every class identifier, in order, when some class was never used.

    Notes
    -----
    A DataFrame passed directly to a model's ``fit`` is read with the default
    column names. It is never read as a dense matrix, whatever its dtypes: a
    DataFrame without these columns is refused.

    A column must hold one type of identifier (``'1'``, ``1`` and ``True`` are
    different ids, and a column mixing them is refused), categorical columns included.
    Note that pandas merges values it finds equal when it makes a column categorical
    (``pd.Series([0.0, False]).astype("category")`` has the one category 0.0):
    that happens before this function sees the column, which is read as pandas holds
    it. A dask DataFrame is refused with a ``TypeError`` (``DawidSkene`` and
    ``OneCoinDawidSkene`` fit one on the cluster; otherwise ``.compute()`` it first).

    Examples
    --------
    >>> import pandas as pd
    >>> from crowdlearn import from_dataframe
    >>> df = pd.DataFrame({"item": ["a", "a", "b"], "who": [7, 8, 7],
    ...                    "says": ["cat", "dog", "dog"]})
    >>> crowd = from_dataframe(df, task="item", worker="who", label="says")
    >>> crowd.n_items, crowd.n_experts, crowd.class_ids.tolist()
    (2, 2, ['cat', 'dog'])
    """
    _refuse_dask_frame(df, "df")
    if not _is_dataframe(df):
        raise ValueError(f"from_dataframe needs a pandas DataFrame, got {type(df).__name__}")
    return _from_dataframe(df, (task, worker, label), classes=classes)


def as_crowd_labels(data, *, n_items=None, n_experts=None, n_classes=None) -> CrowdLabels:
    """Convert any accepted label form to :class:`CrowdLabels`.

    ``data`` may be

    * a :class:`CrowdLabels` (checked again: its arrays must be its own);
    * a tuple ``(item, expert, label)`` of index arrays (exactly three);
    * a 2-D numpy array, the dense ``(n_items, n_experts)`` matrix (``-1`` for
      missing);
    * a pandas DataFrame with columns ``task``, ``worker`` and ``label`` (one
      row per label, any identifiers), read with :func:`from_table`.

    A plain Python list of rows is accepted as a dense matrix except when it
    could equally be triples -- three rows, or rows of three, and only
    non-negative whole numbers (no ``-1`` for a missing label): that is refused
    as ambiguous; pass a numpy array (dense) or a tuple (triples) instead. Sizes given here are checked against (or imposed on) the
    result.
    """
    if isinstance(data, CrowdLabels):
        return _recheck(data, n_items=n_items, n_experts=n_experts, n_classes=n_classes)
    if data is None:
        raise ValueError("labels is None")
    _refuse_dask_frame(data)
    if _is_dataframe(data):
        crowd = _from_dataframe(data)
        if n_items is None and n_experts is None and n_classes is None:
            return crowd  # just built and checked: nothing to check it against
        return as_crowd_labels(crowd, n_items=n_items, n_experts=n_experts,
                               n_classes=n_classes)
    if isinstance(data, tuple):
        if len(data) != 3:
            raise ValueError(f"a tuple of labels must be three index arrays (item, expert, "
                             f"label), got a tuple of {len(data)}; pass a dense "
                             f"(n_items, n_experts) matrix as a numpy array")
        return from_triples(*data, n_items=n_items, n_experts=n_experts, n_classes=n_classes)
    if isinstance(data, (str, bytes, dict, set, frozenset)):
        raise ValueError(f"labels must be a CrowdLabels, an (item, expert, label) tuple, a "
                         f"DataFrame or a 2-D (n_items, n_experts) array, got "
                         f"{type(data).__name__}")
    if isinstance(data, list):
        _refuse_ragged_or_ambiguous(data)
    try:
        shape = np.shape(data)
    except ValueError:
        raise ValueError("labels could not be read as a 2-D matrix (ragged rows?)") from None
    if len(shape) != 2:
        raise ValueError(f"labels must be a CrowdLabels, an (item, expert, label) tuple, a "
                         f"DataFrame or a 2-D (n_items, n_experts) matrix, got "
                         f"{type(data).__name__} of shape {shape}")
    if 0 in shape:
        raise ValueError(f"labels is empty (shape {shape})")
    crowd = from_dense(data, n_classes=n_classes)
    if n_items is not None and crowd.n_items != n_items:
        raise ValueError(f"labels has {crowd.n_items} rows (items), expected {n_items}")
    if n_experts is not None and crowd.n_experts != n_experts:
        raise ValueError(f"labels has {crowd.n_experts} columns (experts), expected {n_experts}")
    return crowd


def _recheck(data: CrowdLabels, *, n_items, n_experts, n_classes) -> CrowdLabels:
    """A :class:`CrowdLabels` checked again (a hand-made or tampered object is copied and
    validated), with the sizes asked for checked against (or imposed on) it."""
    frame = getattr(data, "_from_frame", False) is True
    crowd = CrowdLabels(data.item, data.expert, data.label, data.n_items, data.n_experts,
                        data.n_classes, data.item_ids, data.expert_ids, data.class_ids,
                        _from_frame=frame)
    if all(getattr(crowd, a) is getattr(data, a) for a in ("item", "expert", "label")) \
            and all(getattr(data, a) is None or not getattr(data, a).flags.writeable
                    for a in ("item_ids", "expert_ids", "class_ids")):
        crowd = data  # it was valid and cannot have changed
    sizes = {k: getattr(crowd, k) for k in ("n_items", "n_experts", "n_classes")}
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
            ids_attr = {"n_items": "item_ids", "n_experts": "expert_ids",
                        "n_classes": "class_ids"}[name]
            if getattr(crowd, ids_attr) is not None:
                raise ValueError(f"{name}={given} was asked for but the labels come from a "
                                 f"table with {have} {ids_attr.replace('_', ' ')} "
                                 f"{getattr(crowd, ids_attr)[:5].tolist()}; give every "
                                 f"identifier to from_table (e.g. classes=[...])")
            sizes[name] = given
    if any(sizes[k] != getattr(crowd, k) for k in sizes):  # larger sizes asked for
        crowd = CrowdLabels(crowd.item, crowd.expert, crowd.label, **sizes,
                            item_ids=crowd.item_ids, expert_ids=crowd.expert_ids,
                            class_ids=crowd.class_ids, _from_frame=frame)
    return crowd


def _refuse_ragged_or_ambiguous(rows: list) -> None:
    """``ValueError`` for a ragged list, or one that reads as well as triples as a dense
    matrix (see :func:`as_crowd_labels`)."""
    try:
        shape = np.shape(rows)
    except ValueError:
        raise ValueError("labels is a ragged list: a dense matrix needs one entry per "
                         "expert in every row (-1 where missing)") from None
    if len(shape) == 2 and 3 in shape and _could_be_indices(rows):
        raise ValueError(f"a Python list of shape {shape} is ambiguous: it could be a "
                         f"dense (n_items, n_experts) matrix or (item, expert, label) "
                         f"triples. Pass np.array(rows) or from_dense(rows) for a dense "
                         f"matrix, a tuple (item, expert, label) or from_triples(...) for "
                         f"triples")
