"""Fit Dawid--Skene models on a dask DataFrame of labels, without gathering the labels.

:func:`fit_dask` fits a :class:`~crowdlearn.DawidSkene` or
:class:`~crowdlearn.OneCoinDawidSkene` on a ``dask.dataframe.DataFrame`` with one
row per label (columns ``task``, ``worker``, ``label``), and gives the same
answer as the in-memory fit of ``ddf.compute()`` (to rounding: the sums are
taken partition by partition). ``DawidSkene().fit(ddf)`` calls it.

How it works
------------
1. One pass computes the sorted distinct worker ids and class ids (small), the
   number of missing values per column and, unless asked to shuffle, the tasks
   found in more than one partition. The indices are those of
   :func:`~crowdlearn.from_dataframe` (sorted identifiers), so the fitted
   parameters line up with the in-memory fit.
2. Every partition is encoded once into the sparse label matrix of
   :func:`crowdlearn.aggregation.dawid_skene._flat_indices` (its own tasks, the global
   worker and class indices) and kept on the cluster.
3. EM runs on the one engine, :func:`crowdlearn.em.fit_em`. Its E-step sends the
   small parameter tables to every partition, which computes its posteriors
   (kept on the cluster) and, in the same task, returns only its expected counts
   ``(n_workers * K + 1, K)`` and the sum of its log-evidences. The driver adds
   them up; the M-step is the model's own M-step from a count table
   (``_params_from_counts``, the functions of
   :mod:`crowdlearn.aggregation._ds_kernel`) applied to those sums, so the formulas
   (``alpha``, empty rows -> uniform, the one-coin accuracy) are exactly the
   in-memory ones, and the engine is run and the results stored by the estimator's
   own ``_run_engine`` and ``_store_fit``. The "posterior" the engine passes around (and a
   callback sees as ``state.posterior``) is a :class:`DistributedPosterior` handle.
4. The hidden classes are relabelled to agree with the vote as in memory
   (the agreement table is the sum of the partitions' expected counts).

This module imports the kernel, never the estimators (``DawidSkene.fit`` imports it
when given a dask DataFrame): no import cycle.

Partitioning
------------
All the labels of a task must be in one partition (the E-step is per task). By
default (``split_tasks="raise"``) a task found in two partitions raises a
``ValueError`` naming it; ``split_tasks="shuffle"`` repartitions with
``ddf.shuffle(on=task)`` first (a full shuffle of the labels). Empty partitions
are fine.

Not supported (``ValueError``): ``X`` (features), ``gold``, ``confusion_prior``,
``accelerate=True`` and random restarts (``n_init > 1``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from crowdlearn._base import warn_if_not_converged
from crowdlearn.aggregation._common import _Data, _flat_indices, _softmax_rows_inplace
from crowdlearn.aggregation._ds_kernel import (count_table, log_joint, majority_start,
                                               split_counts)
from crowdlearn.labels import _encode, _object_kind

__all__ = ["fit_dask", "DistributedPosterior"]


class _Crowd(NamedTuple):
    """What ``_flat_indices`` and the EM pieces read of a partition's labels."""

    item: np.ndarray
    expert: np.ndarray
    label: np.ndarray
    n_items: int
    n_experts: int
    n_classes: int

    @property
    def n_labels(self) -> int:
        return int(self.item.size)


class _Part(NamedTuple):
    """One encoded partition: its tasks (sorted ids) and its label matrix."""

    task_ids: np.ndarray
    data: _Data


class DistributedPosterior(NamedTuple):
    """The E-step's result as the EM engine carries it in the distributed fit.

    ``counts`` is the sum over partitions of the expected counts ``V^T q``, shape
    ``(n_workers * K + 1, K)`` (last row: the expected class counts): all the
    M-step needs. The posteriors are not kept between iterations (``parts`` is
    empty), so the cluster holds only the encoded labels; the final posterior
    is computed once, under the final parameters.
    """

    parts: list
    counts: np.ndarray


# -- functions run on the workers ---------------------------------------------------------
def _encode_part(frame, names, worker_ids, class_ids) -> _Part:
    task, worker, label = names
    J, K = worker_ids.size, class_ids.size
    if len(frame) == 0:
        empty = np.zeros(0, dtype=np.intp)
        task_ids, icode, ecode, ccode = np.zeros(0), empty, empty, empty
    else:
        task_ids, icode = _encode(frame[task], "task")
        _, ecode = _encode(frame[worker], "worker", worker_ids)
        _, ccode = _encode(frame[label], "label", class_ids)
    crowd = _Crowd(icode, ecode, ccode, int(task_ids.size), J, K)
    votes, votes_t = _flat_indices(crowd, K)
    # keep only the label matrix (12 bytes per label): the index arrays are not needed again
    empty = np.zeros(0, dtype=np.intp)
    sizes = _Crowd(empty, empty, empty, crowd.n_items, J, K)
    return _Part(task_ids, _Data(sizes, None, votes, votes_t))


def _majority_part(part: _Part, K: int) -> np.ndarray:
    data = part.data
    return count_table(data.votes_t, majority_start(data.votes, data.crowd.n_experts, K))


def _e_step_part(part: _Part, params):
    """The E-step on one partition; only the small sufficient statistics leave it (the
    posterior is not kept: the final one is recomputed once, under the final parameters)."""
    q, log_evidence = _softmax_rows_inplace(log_joint(part.data.votes, params))
    return count_table(part.data.votes_t, q), float(log_evidence.sum())


def _final_part(part: _Part, params):
    """The posterior of one partition's tasks under the final (relabelled) parameters."""
    q, _ = _softmax_rows_inplace(log_joint(part.data.votes, params))
    return part.task_ids, q


def _probas_frame(final, class_ids):
    import pandas as pd

    task_ids, q = final
    return pd.DataFrame(q, index=pd.Index(task_ids, name="task"),
                        columns=pd.Index(class_ids, name="label"))


def _labels_series(frame, class_ids):
    import pandas as pd

    hard = np.argmax(frame.to_numpy(), axis=1) if len(frame) else np.zeros(0, dtype=np.intp)
    return pd.Series(np.asarray(class_ids)[hard], index=frame.index, name="agg_label")


def _n_tasks(final) -> int:
    return int(final[0].size)


# -- a stand-in for a distributed Client: runs everything here, at once --------------------
# in-process, even when a distributed client exists (its p2p shuffle needs its workers)
_LOCAL_CONFIG = {"scheduler": "sync", "dataframe.shuffle.method": "tasks"}


class _LocalClient:
    def map(self, fn, *iterables, pure=False, **kwargs):
        return [fn(*args, **kwargs) for args in zip(*iterables)]

    def gather(self, values):
        return values

    def scatter(self, values, broadcast=False, hash=True):
        return values


def _task_range(part: _Part):
    ids = part.task_ids
    return (ids[0], ids[-1]) if ids.size else None


def _task_ids(part: _Part):
    return part.task_ids


def _check_no_split_task(client, parts, task: str) -> None:
    """Refuse a task whose labels are in two partitions.

    Each encoded partition knows its sorted task ids. When the partitions' id
    ranges do not overlap (files written in task order), no task can be split and
    only the ranges travel; otherwise the ids are gathered and checked.
    """
    ranges = sorted(r for r in client.gather(client.map(_task_range, parts, pure=False))
                    if r is not None)
    if all(b[0] > a[1] for a, b in zip(ranges, ranges[1:])):
        return
    ids = [i for i in client.gather(client.map(_task_ids, parts, pure=False)) if i.size]
    every = np.sort(np.concatenate(ids), kind="stable")
    repeated = every[1:][every[1:] == every[:-1]]
    if repeated.size:
        bad = np.unique(repeated)[:5].tolist()
        raise ValueError(f"the labels of task(s) {bad} are in more than one partition of the "
                         f"dask DataFrame; every task's labels must be in one partition. "
                         f"Repartition with ddf.shuffle(on={task!r}) or call "
                         f"fit_dask(..., split_tasks='shuffle')")


def _get_client(client):
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return _LocalClient()


def _check_model(model):
    if not getattr(type(model), "_fits_dask_frames", False):
        raise ValueError(f"fit_dask fits DawidSkene or OneCoinDawidSkene, got "
                         f"{type(model).__name__}")
    model._check_params()
    if model.n_init != 1:
        raise ValueError(f"fitting a dask DataFrame runs EM from the majority vote only: "
                         f"n_init must be 1, got {model.n_init} (random restarts are not "
                         f"supported yet)")
    if model.accelerate:
        raise ValueError("fitting a dask DataFrame does not support accelerate=True yet")
    if model.confusion_prior is not None:
        raise ValueError("fitting a dask DataFrame does not support confusion_prior yet")


def _first_pass(model, ddf, names, split_tasks, client):
    """Check the labels, find the worker and class ids, and hand out the partitions."""
    import dask

    task, worker, label = names
    ddf = ddf[list(names)]
    if split_tasks == "shuffle":
        ddf = ddf.shuffle(on=task)

    # -- pass 1: ids, missing values, tasks split across partitions ------------------------
    pieces = [ddf.isna().sum(), ddf[worker].unique(), ddf[label].unique(),
              ddf.map_partitions(len, meta=(None, "int64"))]
    if isinstance(client, _LocalClient):
        results = dask.compute(*pieces)
    else:
        results = client.gather(client.compute(pieces))
    na, workers, classes, lengths = results[:4]
    for c in names:
        if int(na[c]):
            raise ValueError(f"column {c!r} has {int(na[c])} missing value(s) (NaN/None); "
                             f"drop those rows first (a missing label is simply a row that "
                             f"is not there)")
    if int(np.sum(lengths)) == 0:
        raise ValueError("the DataFrame of labels has no rows")
    worker_ids, _ = _encode(workers, "worker")
    class_ids, _ = _encode(classes, "label")
    if class_ids.size < 2:
        raise ValueError(f"at least 2 classes are needed, got {class_ids.tolist()}")
    K = class_ids.size
    if model.n_classes is not None and model.n_classes != K:
        raise ValueError(f"n_classes={model.n_classes} was asked for but the labels have "
                         f"{K} classes {class_ids[:10].tolist()}; a dask fit takes the "
                         f"classes from the labels (leave n_classes=None)")

    # the partitions, to be encoded once and kept on the cluster
    if isinstance(client, _LocalClient):
        frames = list(dask.compute(*ddf.to_delayed()))
    else:  # read and encoded in one task each: a raw partition lives only while encoded
        frames = ddf.to_delayed()
    return ddf[task]._meta, worker_ids, class_ids, frames


def _encode_parts(client, frames, names, worker_ids, class_ids) -> list:
    """Every partition encoded once (:func:`_encode_part`), kept on the cluster: read and
    encoded in one task each, so a raw partition lives only while encoded."""
    if isinstance(client, _LocalClient):
        return client.map(_encode_part, frames, names=names, worker_ids=worker_ids,
                          class_ids=class_ids, pure=False)
    import dask

    encode = dask.delayed(_encode_part, pure=False)
    return client.compute([encode(f, names, worker_ids, class_ids) for f in frames])


def _check_input(ddf, names, split_tasks) -> None:
    """Refuse what is not a dask DataFrame of labels with the three named columns."""
    if split_tasks not in ("raise", "shuffle"):
        raise ValueError(f"split_tasks must be 'raise' or 'shuffle', got {split_tasks!r}")
    if not hasattr(ddf, "npartitions") or not hasattr(ddf, "columns"):
        raise ValueError(f"fit_dask needs a dask DataFrame, got {type(ddf).__name__}")
    if len(set(names)) != 3:
        raise ValueError(f"task, worker and label must be three different columns, got "
                         f"{list(names)}")
    missing = [c for c in names if c not in list(ddf.columns)]
    if missing:
        raise ValueError(f"a DataFrame of labels needs the columns {list(names)} (one row "
                         f"per label: task id, worker id, label); missing {missing}, got "
                         f"{list(map(str, ddf.columns))[:10]}")
    _refuse_ids_made_strings(ddf, names)


def _refuse_ids_made_strings(ddf, names) -> None:
    """``ValueError`` when a column of the pandas DataFrame a dask DataFrame was made from
    (``dd.from_pandas``, kept in its expression) mixes identifier types: dask's string
    conversion (``dataframe.convert-string``) would turn ``'1'`` and ``1`` into one string,
    where the in-memory fit of the same DataFrame refuses them."""
    walk = getattr(getattr(ddf, "expr", None), "walk", None)
    for node in walk() if callable(walk) else ():
        if type(node).__name__ != "FromPandas" or not node.pyarrow_strings_enabled:
            continue
        frame = getattr(node.frame, "_data", node.frame)  # dask wraps the pandas frame
        for name, column in zip(("task", "worker", "label"), names):
            if column not in getattr(frame, "columns", ()) or frame[column].dtype != object:
                continue
            try:
                _object_kind(frame[column].dropna().to_numpy(), name)
            except ValueError as exc:
                if "mix types" not in str(exc):
                    raise
                raise ValueError(f"{exc} (dd.from_pandas turns an object column into "
                                 f"strings, which would merge the ids that print alike)") \
                    from None


def _run_em(model, client, parts, J: int, K: int):
    """EM through the estimator's own engine path, with an E-step run partition by
    partition (only the count tables and log-evidences travel back) and the model's
    M-step from the summed count table."""

    def total(tables):
        out = np.zeros((J * K + 1, K))
        for t in tables:
            out += t
        return out

    def init(restart):
        counts = total(client.gather(client.map(_majority_part, parts, K=K, pure=False)))
        return model._params_from_counts(counts, J)

    def e_step(params):
        # the tuple as one object, under a new key each time
        shared = client.scatter([params], broadcast=True, hash=False)[0]
        small = client.gather(client.map(_e_step_part, parts, params=shared, pure=False))
        counts = total(c for c, _ in small)
        log_evidence = 0.0
        for _, s in small:
            log_evidence += s
        return DistributedPosterior([], counts), log_evidence + model._log_prior_term(params)

    def m_step(posterior: DistributedPosterior):
        return model._params_from_counts(posterior.counts, J)

    result = model._run_engine(None, init=init, e_step=e_step, m_step=m_step, n_runs=1)
    warn_if_not_converged(result, type(model).__name__, model.max_iter, model.tol)
    return result


def fit_dask(model, ddf, *, task: str = "task", worker: str = "worker", label: str = "label",
             client=None, collect: bool = True, split_tasks: str = "raise"):
    """Fit ``model`` (a DawidSkene or OneCoinDawidSkene) on a dask DataFrame of labels.

    Parameters
    ----------
    model : DawidSkene or OneCoinDawidSkene
        Its hyper-parameters are used (``alpha``, ``max_iter``, ``tol``,
        ``callback``, ``progress``; ``n_init`` must be 1) and its fitted
        attributes set.
    ddf : dask.dataframe.DataFrame
        One row per label. Every task's labels must be in one partition (see
        ``split_tasks``).
    task, worker, label : str
        Column names.
    client : distributed.Client, optional
        Where to run. Default: the current default client, or, without one,
        everything in this process (partition by partition).
    collect : bool, default True
        Also gather the posterior into ``posterior_`` (``n_tasks x K``, rows in
        sorted task order, as in memory), which makes ``labels_``,
        ``probas_``, ``errors_`` and ``predict`` work as after an in-memory fit.
        With ``collect=False`` the posteriors stay on the cluster and
        ``posterior_`` is not set: ``labels_`` and ``probas_`` are then the
        dask objects ``labels_dask_`` and ``probas_dask_`` (computed lazily),
        and ``errors_`` and ``predict_proba`` say the model is not fitted.
    split_tasks : {"raise", "shuffle"}, default "raise"
        What to do when a task's labels are in more than one partition:
        ``"raise"`` raises ``ValueError`` naming such tasks; ``"shuffle"`` first
        repartitions with ``ddf.shuffle(on=task)`` (without checking).

    Returns
    -------
    model
        Fitted: ``class_prior_``, ``confusion_`` (and ``accuracy_`` for one-coin),
        ``log_likelihood_history_``, ``log_likelihood_``, ``objective_``,
        ``n_iter_``, ``converged_``, ``n_items_``, ``n_experts_``,
        ``n_classes_``, ``n_features_in_`` (0), ``expert_ids_``, ``class_ids_``
        and, with ``collect=True``, ``posterior_`` and ``item_ids_``; with
        ``collect=False``, ``probas_dask_`` (dask DataFrame indexed by task,
        one column per class id) and ``labels_dask_`` (dask Series of class ids,
        indexed by task), whose partitions follow ``ddf``'s (tasks sorted
        within each). ``item_ids_`` is then None.
    """
    _check_model(model)
    names = (task, worker, label)
    _check_input(ddf, names, split_tasks)
    import dask

    client = _get_client(client)
    if isinstance(client, _LocalClient):  # in-process, even when a distributed client exists
        with dask.config.set(_LOCAL_CONFIG):
            task_meta, worker_ids, class_ids, frames = _first_pass(model, ddf, names,
                                                                   split_tasks, client)
    else:
        task_meta, worker_ids, class_ids, frames = _first_pass(model, ddf, names, split_tasks,
                                                               client)
    J, K = worker_ids.size, class_ids.size
    parts = _encode_parts(client, frames, names, worker_ids, class_ids)
    del frames
    if split_tasks == "raise":
        _check_no_split_task(client, parts, task)

    result = _run_em(model, client, parts, J, K)

    # -- relabel as in memory (the agreement table: the summed counts over the experts) ----
    params, handle = result.params, result.posterior
    # relabelling permutes the parameters; the posterior under the permuted parameters is
    # the permuted posterior, computed below in one more pass under the final parameters
    params, _ = model._align_params(split_counts(handle.counts, J)[0].sum(axis=0), params)
    shared = client.scatter([params], broadcast=True, hash=False)[0]
    finals = client.map(_final_part, parts, params=shared, pure=False)
    if not isinstance(client, _LocalClient):
        from distributed import wait

        wait(finals)  # the encoded partitions may go only once the posteriors exist
    del parts, handle, shared
    _store(model, result, params, client, finals, collect, task_meta, worker_ids, class_ids)
    return model


def _store(model, result, params, client, finals, collect, task_meta, worker_ids, class_ids):
    """The fitted attributes, through the estimator's own ``_store_fit``: with ``collect``
    the posterior gathered in sorted task order, otherwise the lazy dask results."""
    J, K = worker_ids.size, class_ids.size
    lazy = None
    if collect:
        gathered = [(t, q) for t, q in client.gather(finals) if t.size]
        if gathered:
            all_ids = np.concatenate([t for t, _ in gathered])
            order = np.argsort(all_ids, kind="stable")
            task_ids = all_ids[order]
            q = np.concatenate([q for _, q in gathered])[order]
        else:  # pragma: no cover - refused above (no rows)
            task_ids, q = np.zeros(0), np.zeros((0, K))
        n_items = int(q.shape[0])
    else:
        import dask
        import dask.dataframe as dd
        import pandas as pd

        q = task_ids = None
        n_items = int(sum(client.gather(client.map(_n_tasks, finals, pure=False))))
        index = pd.Index(task_meta.iloc[:0], name="task")
        meta = pd.DataFrame(np.zeros((0, K)), index=index,
                            columns=pd.Index(class_ids, name="label"))
        frames = [dask.delayed(_probas_frame)(f, class_ids) for f in finals]
        probas = dd.from_delayed(frames, meta=meta, verify_meta=False)
        labels = probas.map_partitions(
            _labels_series, class_ids, meta=pd.Series(class_ids[:0], index=index,
                                                      name="agg_label"))
        lazy = (probas, labels)
    model._store_fit(result, params, q, sizes=(n_items, J, K),
                     ids=(task_ids, worker_ids, class_ids, True), lazy=lazy)
