"""Continuing a fitted Dawid--Skene model on more labels (``partial_fit``, ``warm_start``).

Two pieces, both pure functions of a fitted model's arrays:

* :func:`merge_crowds` -- the labels a model was fitted on plus a batch of new label rows,
  as one :class:`~crowdlearn.CrowdLabels` (by identifier when the model was fitted on a
  table, by index otherwise; a new class where a fit would put it), refusing labels that
  cannot be matched;
* :func:`start_on` -- the fitted parameters carried over onto another crowd's workers:
  a worker seen in the fit keeps their confusion matrix, a new worker starts from the
  label-weighted mean of the fitted ones (so their first labels count as those of an
  average worker), and the class prior is kept (:func:`add_classes` makes room for a new
  class). New items need no start: EM's first E-step gives their posterior under these
  parameters.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.labels import CrowdLabels, _from_dataframe, _is_dataframe, _of_codes, \
    _table_codes, as_crowd_labels

__all__ = ["merge_crowds", "start_on", "add_classes", "class_positions", "gold_on",
           "features_on", "item_positions"]

NO_IDS = ("the model was fitted on labels without identifiers (indices, a matrix or "
          "triples) but the new labels come with identifiers (a DataFrame or from_table); "
          "give them as indices too, or fit on identifiers from the start")
NEED_IDS = ("the model was fitted on labels with identifiers (a DataFrame or from_table) "
            "but the new labels have none; give them as a DataFrame with columns task, "
            "worker, label (or through from_table), so that tasks and workers are matched "
            "by identifier")


def _has_ids(crowd: CrowdLabels) -> bool:
    return any(getattr(crowd, a) is not None for a in ("item_ids", "expert_ids", "class_ids"))


def _read_indexed(batch, K: int) -> CrowdLabels:
    """A batch of index-coded labels, with the model's ``K`` classes or more (a label ``K``
    or above is a new class, see :func:`add_classes`)."""
    if isinstance(batch, CrowdLabels):
        return as_crowd_labels(batch)
    try:
        return as_crowd_labels(batch, n_classes=K)
    except ValueError as exc:
        try:  # read without the model's K: a label K or above is a new class
            alone = as_crowd_labels(batch)
        except ValueError as other:  # e.g. too many classes: that, not "< n_classes"
            raise (other if "n_classes" in str(exc) else exc) from None
        if alone.n_classes > K:
            return alone
        raise


def _with_new_classes(classes: np.ndarray, values) -> np.ndarray | None:
    """The fitted ``classes`` with the values not among them: in sorted order when the
    fitted ones are sorted (as ``fit`` orders them), else after them; None when there is no
    new value. ``ValueError`` for a new value of another type (``'1'`` is never the class
    ``1``, nor ``2.0`` a new class among integers)."""
    from crowdlearn._ids import _ids_kind

    known = set(classes.tolist())
    try:
        extra = sorted({v for v in np.asarray(values, dtype=object).tolist()} - known)
    except TypeError:  # values that cannot be ordered together: the reader refuses them
        return None
    if not extra:
        return None
    kind, fitted = _ids_kind(np.asarray(extra, dtype=object)), _ids_kind(classes)
    if kind != fitted:
        raise ValueError(f"the new labels bring the class(es) {extra[:5]} of type {kind}, but "
                         f"the fitted classes {classes.tolist()[:5]} are of type {fitted}; "
                         f"give the labels in the fitted type")
    union = classes.tolist() + extra
    if classes.tolist() == sorted(classes.tolist()):
        union = sorted(union)
    return np.asarray(union, dtype=object)


def class_positions(model, crowd: CrowdLabels) -> np.ndarray:
    """For each class the model was fitted with, its index among ``crowd``'s classes (a
    merged crowd keeps them all; a new class may come between them, see
    :func:`_with_new_classes`)."""
    return _positions(crowd.class_ids, model.class_ids_, crowd.n_classes, model.n_classes_)


def _frame_onto(batch, classes: np.ndarray):
    """A DataFrame batch read onto the fitted classes, or onto them followed by the new
    ones its ``label`` column brings; ``(crowd, classes)``."""
    try:
        return _from_dataframe(batch, classes=classes), classes
    except ValueError:
        if "label" not in list(batch.columns) or batch["label"].isna().any():
            raise
        union = _with_new_classes(classes, batch["label"].unique())
        if union is None:
            raise
        return _from_dataframe(batch, classes=union), union


def _sorted_union(old: np.ndarray, new: np.ndarray):
    """``(union, where_old, where_new)`` of two sorted arrays of distinct ids: the new ids
    are inserted where they sort (no full sort of the fitted ones, usually many more)."""
    at = np.minimum(np.searchsorted(old, new), old.size - 1)
    extra = new[old[at] != new]
    wide = old.astype(np.result_type(old.dtype, new.dtype), copy=False)  # 'U5' + 'U9': 'U9'
    union = np.insert(wide, np.searchsorted(old, extra), extra)
    where_old = np.arange(old.size) + np.searchsorted(extra, old)
    return union, where_old, np.searchsorted(union, new)


def _merge_codes(fitted: CrowdLabels, new: CrowdLabels, classes,
                 from_frame: bool) -> CrowdLabels | None:
    """What :func:`from_table` gives on the two tables concatenated, from their codes:
    the sorted union of each kind of id, the codes moved onto it (no id is read again);
    None unless both crowds' task and worker ids are plain arrays of one kind."""
    from crowdlearn._ids import _id_array

    parts = []
    for old_ids, new_ids in ((fitted.item_ids, new.item_ids),
                             (fitted.expert_ids, new.expert_ids)):
        if old_ids is None or new_ids is None or object in (old_ids.dtype, new_ids.dtype) \
                or old_ids.dtype.kind != new_ids.dtype.kind or old_ids.dtype.kind not in "iUb":
            return None
        parts.append(_sorted_union(old_ids, new_ids))
    if fitted.class_ids is None or new.class_ids is None:
        return None
    classes, _ = _id_array(np.asarray(classes, dtype=object), "classes")
    where = {v: k for k, v in enumerate(classes.tolist())}
    try:
        to_class = [np.array([where[v] for v in ids.tolist()], dtype=np.intp)
                    for ids in (fitted.class_ids, new.class_ids)]
    except KeyError:  # a label that is not a class: from_table refuses it with its reason
        return None
    (items, old_i, new_i), (experts, old_e, new_e) = parts
    return CrowdLabels(np.concatenate([old_i[fitted.item], new_i[new.item]]),
                       np.concatenate([old_e[fitted.expert], new_e[new.expert]]),
                       np.concatenate([to_class[0][fitted.label], to_class[1][new.label]]),
                       items.size, experts.size, classes.size, items, experts, classes,
                       _from_frame=from_frame)


def _merge_by_ids(fitted: CrowdLabels, batch) -> CrowdLabels:
    """Fitted labels with identifiers plus a batch, re-encoded by identifier (sorted, as
    ``fit`` would encode the union); the fitted classes keep their indices and a new
    class comes after them."""
    classes = fitted.class_ids
    new = as_crowd_labels(batch) if not _is_dataframe(batch) else None
    if new is not None and not _has_ids(new):
        raise ValueError(NEED_IDS)
    try:
        if new is None:
            new, classes = _frame_onto(batch, classes)
        elif new.class_ids is not None:
            union = _with_new_classes(classes, new.class_ids)
            classes = classes if union is None else union
        from_frame = getattr(fitted, "_from_frame", False) is True
        merged = _merge_codes(fitted, new, classes, from_frame)
        if merged is None:  # ids of other types: re-read as one table, which decides
            old_t, new_t = fitted.to_table(), new.to_table()
            merged = _of_codes(_table_codes(*(np.concatenate([np.asarray(a, dtype=object),
                                                              np.asarray(b, dtype=object)])
                                              for a, b in zip(old_t, new_t)),
                                            classes, None, None), from_frame)
    except ValueError as exc:
        raise ValueError(f"the new labels do not match the fitted model's identifiers: "
                         f"{exc}") from None
    return merged


def merge_crowds(fitted: CrowdLabels, batch) -> CrowdLabels:
    """The labels ``fitted`` (a model's training labels) followed by the rows of ``batch``.

    Index-coded labels keep their indices (items, workers and classes beyond the fitted
    ranges are new); labels with identifiers are matched by identifier and the union
    re-encoded in sorted order (a new class among sorted fitted ones too, after them when
    the fit was given another order: :func:`class_positions`). A batch that cannot be
    matched (identifiers on one side only, identifiers of another type) is a
    ``ValueError``.
    """
    if batch is None:
        raise ValueError("labels is None: pass the new labels (a DataFrame, CrowdLabels, "
                         "an (item, expert, label) tuple or a matrix)")
    if _has_ids(fitted):
        merged = _merge_by_ids(fitted, batch)
    else:
        if _is_dataframe(batch):
            raise ValueError(NO_IDS)
        new = _read_indexed(batch, fitted.n_classes)
        if _has_ids(new):
            raise ValueError(NO_IDS)
        merged = CrowdLabels(np.concatenate([fitted.item, new.item]),
                             np.concatenate([fitted.expert, new.expert]),
                             np.concatenate([fitted.label, new.label]),
                             max(fitted.n_items, new.n_items),
                             max(fitted.n_experts, new.n_experts),
                             max(fitted.n_classes, new.n_classes))
        if new.n_labels == 0:
            raise ValueError("the new labels hold no label at all")
    return merged


def _positions(old_ids, new_ids, n_old: int, n_new: int) -> np.ndarray:
    """For every index of the new crowd, the fitted index with the same identifier (by
    index when neither side has identifiers), -1 for one not fitted: one ``searchsorted``
    when both are sorted identifiers of one plain type (as fitted and merged crowds' ids
    are), else a lookup per identifier."""
    if (old_ids is None) != (new_ids is None):
        raise ValueError(NEED_IDS if new_ids is None else NO_IDS)
    if old_ids is None:
        src = np.arange(n_new)
        src[src >= n_old] = -1
        return src
    if old_ids.dtype != object and old_ids.dtype.kind == new_ids.dtype.kind and \
            old_ids.size and (old_ids[1:] > old_ids[:-1]).all() and \
            (new_ids[1:] > new_ids[:-1]).all():
        at = np.minimum(np.searchsorted(old_ids, new_ids), old_ids.size - 1)
        return np.where(old_ids[at] == new_ids, at, -1).astype(np.intp)
    where = {v: k for k, v in enumerate(old_ids.tolist())}
    return np.array([where.get(v, -1) for v in new_ids.tolist()], dtype=np.intp)


def item_positions(model, crowd: CrowdLabels) -> np.ndarray:
    """:func:`_positions` of ``crowd``'s items among the fitted model's (-1 for a new one)."""
    return _positions(model.item_ids_, crowd.item_ids, model.n_items_, crowd.n_items)


def check_same_classes(model, crowd: CrowdLabels) -> None:
    """``ValueError`` unless ``crowd`` has the fitted model's classes."""
    K = model.n_classes_
    if crowd.n_classes != K:
        raise ValueError(f"the labels have {crowd.n_classes} classes but the model was "
                         f"fitted with n_classes={K}; a warm start keeps the classes (set "
                         f"warm_start=False to fit from scratch)")
    old, new = model.class_ids_, crowd.class_ids
    if (old is None) != (new is None) or (old is not None and old.tolist() != new.tolist()):
        raise ValueError(f"the labels' classes {None if new is None else new.tolist()[:5]} "
                         f"are not the fitted model's {None if old is None else old.tolist()[:5]}"
                         f"; a warm start keeps the classes (set warm_start=False to fit "
                         f"from scratch)")


def start_on(model, crowd: CrowdLabels, params):
    """The fitted ``params`` (a ``DawidSkeneParams``) carried onto ``crowd``'s workers.

    A worker of the fit keeps their confusion matrix; a new one starts from the mean of
    the fitted workers' matrices weighted by their numbers of labels (mixed with 0.1%
    of the uniform matrix when it has exact zeros, so that a new worker's label is never
    impossible at the start). The class prior and the feature probabilities are kept.
    """
    src = _positions(model.expert_ids_, crowd.expert_ids, model.n_experts_,
                     crowd.n_experts)
    old = params.confusion
    K = old.shape[1]
    fitted_crowd = getattr(model, "_train_crowd", None)
    weights = None if fitted_crowd is None else \
        fitted_crowd.labels_per_expert().astype(float)
    if weights is None or weights.shape[0] != old.shape[0] or weights.sum() <= 0:
        weights = np.ones(old.shape[0])
    mean = np.tensordot(weights / weights.sum(), old, axes=1)
    if (mean <= 0).any():
        mean = 0.999 * mean + 0.001 / K
    confusion = np.where((src >= 0)[:, None, None], old[np.maximum(src, 0)], mean)
    params = params._replace(class_prior=np.array(params.class_prior, dtype=float),
                             confusion=confusion)
    if crowd.n_classes > K:
        params = add_classes(params, crowd, class_positions(model, crowd),
                             one_coin=getattr(model, "_ONE_COIN", False))
    return params


def add_classes(params, crowd: CrowdLabels, positions: np.ndarray, *, one_coin: bool = False):
    """``params`` (``K`` classes) extended to ``crowd``'s ``K' > K`` classes, the fitted
    class ``k`` becoming class ``positions[k]``: each new class takes its (Laplace-smoothed)
    share of the labels from the class prior (the others scaled down); a worker's row for
    a new true class gives the right label with the worker's expected accuracy under the
    fitted prior and spreads the rest; the fitted rows give the new labels 0.1% between
    them; a new class's feature probabilities are the prior-weighted mean of the fitted
    ones. With ``one_coin`` every worker keeps their accuracy, spread over ``K' - 1``
    wrong labels."""
    from crowdlearn.aggregation._common import _one_coin_matrices

    prior, conf = params.class_prior, params.confusion
    J, K, _ = conf.shape
    K2 = crowd.n_classes
    new = np.setdiff1d(np.arange(K2), positions)  # the new classes' indices in crowd
    src = np.empty(K2, dtype=np.intp)  # crowd's class j is class src[j] of the extension
    src[positions], src[new] = np.arange(K), K + np.arange(new.size)
    share = (np.bincount(crowd.label, minlength=K2)[new] + 1.0) / (crowd.n_labels + K2)
    class_prior = np.concatenate([prior * (1.0 - share.sum()), share])
    accuracy = np.einsum("n,rnn->r", prior, conf)
    if one_coin:
        confusion = _one_coin_matrices(conf[:, 0, 0], K2)
    else:
        eps = 1e-3
        confusion = np.empty((J, K2, K2))
        confusion[:, :K, :K] = (1.0 - eps) * conf
        confusion[:, :K, K:] = eps / (K2 - K)
        confusion[:, K:, :] = ((1.0 - accuracy) / (K2 - 1))[:, None, None]
        idx = np.arange(K, K2)
        confusion[:, idx, idx] = accuracy[:, None]
    phi = params.feature_prob
    if phi is not None:
        phi = np.vstack([phi, np.repeat((prior @ phi)[None], K2 - K, axis=0)])[src]
    return params._replace(class_prior=class_prior[src],
                           confusion=confusion[:, src][:, :, src], feature_prob=phi)


def gold_on(model, crowd: CrowdLabels):
    """The fitted model's known truths (``gold_``, a class index per fitted item, -1
    where unknown) carried onto ``crowd``'s items, or None without any."""
    gold = getattr(model, "gold_", None)
    if gold is None:
        return None
    src = item_positions(model, crowd)
    out = np.full(crowd.n_items, -1, dtype=np.intp)
    known = src >= 0
    fitted = np.asarray(gold)[src[known]]  # fitted class indices, moved where a new class
    out[known] = np.where(fitted >= 0, class_positions(model, crowd)[np.maximum(fitted, 0)],
                          -1)                                         # came before them
    return out if (out >= 0).any() else None


def _new_rows_by_id(model, X, ids, n_features: int, old_ids, old_X) -> np.ndarray:
    """The rows of a DataFrame ``X`` indexed by task id for the new tasks ``ids``; a row
    for a fitted task must repeat that task's fitted features; the columns are matched by
    name when the model was fitted on a DataFrame of features (by position otherwise)."""
    from crowdlearn._validation import check_binary_matrix

    if not _is_dataframe(X):
        raise ValueError("the model was fitted on labels with identifiers: give the new "
                         "tasks' features as a DataFrame indexed by task id")
    if X.index.has_duplicates:
        raise ValueError("X has repeated task ids in its index")
    missing = [t for t in ids.tolist() if t not in X.index]
    if missing:
        raise ValueError(f"X has no row for the new task(s) {missing[:5]} (X must be "
                         f"indexed by task id)")
    fitted = {v: k for k, v in enumerate(old_ids.tolist())}
    new = set(ids.tolist())
    other = [t for t in X.index.tolist() if t not in new and t not in fitted]
    if other:
        raise ValueError(f"X has rows for task(s) {other[:5]} that have no label")
    columns = getattr(model, "_x_columns", None)
    if columns is not None:  # fitted on a DataFrame of features: match them by name
        if X.columns.has_duplicates or set(X.columns) != set(columns):
            raise ValueError(f"X's columns {list(X.columns)[:5]} are not the features the "
                             f"model was fitted with {columns[:5]}")
        X = X[columns]
    given = check_binary_matrix(X.to_numpy(), "X")
    if given.shape[1] != n_features:
        raise ValueError(f"X has {given.shape[1]} features but the model was fitted with "
                         f"{n_features}")
    for row, task in zip(given, X.index.tolist()):
        if task in fitted and not np.array_equal(row, old_X[fitted[task]]):
            raise ValueError(f"X gives task {task!r} other features than it was fitted "
                             f"with; a task's features cannot change in partial_fit")
    rows = X.index.get_indexer(ids)
    if (rows < 0).any():  # cannot happen after the checks above; never read row -1
        raise ValueError("X's index does not match the new task ids")
    return given[rows]


def features_on(model, crowd: CrowdLabels, X) -> np.ndarray:
    """The features of ``crowd``'s items: the fitted items keep theirs (the model's
    ``_train_X``), the new ones take theirs from ``X`` -- a DataFrame indexed by task id
    when the model has identifiers, else an array with one row per new item, for items
    ``n_items_``, ``n_items_ + 1``, ... in order. ``ValueError`` when a new item has no row."""
    from crowdlearn._validation import check_binary_matrix

    old_X = model._train_X
    n_features = old_X.shape[1]
    src = item_positions(model, crowd)
    out = np.empty((crowd.n_items, n_features), dtype=old_X.dtype)
    out[src >= 0] = old_X[src[src >= 0]]
    new = np.flatnonzero(src < 0)
    if X is None:
        if new.size:
            which = new if crowd.item_ids is None else crowd.item_ids[new]
            raise ValueError(f"the new labels bring {new.size} new item(s) ({which.tolist()[:5]}"
                             f"); the model has features, so partial_fit needs theirs: pass "
                             f"X with a row for each")
        return out
    if crowd.item_ids is not None:
        out[new] = _new_rows_by_id(model, X, crowd.item_ids[new], n_features, model.item_ids_,
                                   old_X)
        return out
    if _is_dataframe(X):
        raise ValueError("the model was fitted on index-coded labels: give the new items' "
                         "features as an array, one row per new item")
    given = check_binary_matrix(X, "X")
    if given.shape != (new.size, n_features):
        raise ValueError(f"X must hold the features of the {new.size} new item(s) (items "
                         f"{model.n_items_} to {crowd.n_items - 1}, in order), shape "
                         f"({new.size}, {n_features}); got {given.shape}")
    out[new] = given
    return out
