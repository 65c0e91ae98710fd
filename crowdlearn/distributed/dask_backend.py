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
   :func:`crowdlearn.aggregation._ds_kernel.label_matrix` (its own tasks, the global
   worker and class indices) and kept on the cluster.
3. The model fits itself from count tables, through its public
   :meth:`~crowdlearn.DawidSkene.fit_from_counts`, with this module's ``_DaskCounts`` as
   the source of the tables: EM runs on the one engine, :func:`crowdlearn.em.fit_em`,
   with the model's own M-step, objective, stopping rule, callback and progress bar. Its
   E-step sends the small parameter tables to every partition, which computes its
   posteriors and, in the same task, returns only its expected counts
   ``(n_workers * K + 1, K)`` and the sum of its log-evidences. The driver adds them
   up; the M-step reads those sums (the functions of
   :mod:`crowdlearn.aggregation._ds_kernel`), so the formulas (``alpha``, empty rows ->
   uniform, the one-coin accuracy) are exactly the in-memory ones. The "posterior" the
   engine passes around (and a callback sees as ``state.posterior``) is a
   :class:`DistributedPosterior` handle.
4. The model relabels the hidden classes to agree with the vote as in memory (the
   agreement table is the sum of the partitions' expected counts); the posterior under
   the final parameters is computed in one more pass, gathered or left on the cluster.

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

from crowdlearn.aggregation._ds_kernel import (count_table, label_matrix, log_joint,
                                               majority_start, softmax_rows)
from crowdlearn.labels import _encode, _object_kind

__all__ = ["fit_dask", "DistributedPosterior"]


class _Crowd(NamedTuple):
    """What ``label_matrix`` reads of a partition's labels."""

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
    """One encoded partition: its tasks (sorted ids), its label matrix and the transpose
    (:func:`~crowdlearn.aggregation._ds_kernel.label_matrix`), and the number of workers."""

    task_ids: np.ndarray
    votes: object
    votes_t: object
    n_experts: int


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
    votes, votes_t = label_matrix(crowd, K)
    # keep only the label matrix (12 bytes per label): the index arrays are not needed again
    return _Part(task_ids, votes, votes_t, J)


def _majority_part(part: _Part, K: int) -> np.ndarray:
    return count_table(part.votes_t, majority_start(part.votes, part.n_experts, K))


def _e_step_part(part: _Part, params):
    """The E-step on one partition; only the small sufficient statistics leave it (the
    posterior is not kept: the final one is recomputed once, under the final parameters)."""
    q, log_evidence = softmax_rows(log_joint(part.votes, params))
    return count_table(part.votes_t, q), float(log_evidence.sum())


def _final_part(part: _Part, params):
    """The posterior of one partition's tasks under the final (relabelled) parameters."""
    q, _ = softmax_rows(log_joint(part.votes, params))
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
    """Refuse a model that cannot be fitted from count tables, or settings the dask fit
    does not support (after the model has checked its hyper-parameters)."""
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


class _DaskCounts:
    """The labels of a dask DataFrame as the count source of
    :meth:`DawidSkene.fit_from_counts <crowdlearn.DawidSkene.fit_from_counts>`: encoded once
    and kept on the cluster, each E-step run partition by partition (only the count tables
    and log-evidences travel back)."""

    def __init__(self, model, ddf, names, client, collect: bool, split_tasks: str):
        self.model, self.ddf, self.names = model, ddf, names
        self.client, self.collect, self.split_tasks = client, collect, split_tasks

    def start(self) -> np.ndarray:
        """Check the settings and the labels, encode the partitions (kept on the cluster)
        and return the count table of the soft majority vote."""
        import dask

        _check_model(self.model)
        _check_input(self.ddf, self.names, self.split_tasks)
        client = self.client = _get_client(self.client)
        if isinstance(client, _LocalClient):  # in-process, even with a distributed client
            with dask.config.set(_LOCAL_CONFIG):
                first = _first_pass(self.model, self.ddf, self.names, self.split_tasks, client)
        else:
            first = _first_pass(self.model, self.ddf, self.names, self.split_tasks, client)
        self.task_meta, self.worker_ids, self.class_ids, frames = first
        self.parts = _encode_parts(client, frames, self.names, self.worker_ids,
                                   self.class_ids)
        del frames
        if self.split_tasks == "raise":
            _check_no_split_task(client, self.parts, self.names[0])
        K = self.class_ids.size
        return self._total(client.gather(client.map(_majority_part, self.parts, K=K,
                                                    pure=False)))

    def _total(self, tables) -> np.ndarray:
        """The sum of the partitions' count tables."""
        J, K = self.worker_ids.size, self.class_ids.size
        out = np.zeros((J * K + 1, K))
        for t in tables:
            out += t
        return out

    def e_step(self, params):
        # the tuple as one object, under a new key each time
        shared = self.client.scatter([params], broadcast=True, hash=False)[0]
        small = self.client.gather(self.client.map(_e_step_part, self.parts, params=shared,
                                                   pure=False))
        counts = self._total(c for c, _ in small)
        log_evidence = 0.0
        for _, s in small:
            log_evidence += s
        return DistributedPosterior([], counts), log_evidence

    def finish(self, params) -> dict:
        """The posterior under the final (relabelled) parameters, gathered or left lazy."""
        client = self.client
        shared = client.scatter([params], broadcast=True, hash=False)[0]
        finals = client.map(_final_part, self.parts, params=shared, pure=False)
        if not isinstance(client, _LocalClient):
            from distributed import wait

            wait(finals)  # the encoded partitions may go only once the posteriors exist
        self.parts = None
        return _results(client, finals, self.collect, self.task_meta, self.worker_ids,
                        self.class_ids)


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
    if not callable(getattr(model, "fit_from_counts", None)):
        raise ValueError(f"fit_dask fits DawidSkene or OneCoinDawidSkene, got "
                         f"{type(model).__name__}")
    source = _DaskCounts(model, ddf, (task, worker, label), client, collect, split_tasks)
    return model.fit_from_counts(source)


def _results(client, finals, collect, task_meta, worker_ids, class_ids) -> dict:
    """What the model stores (see ``fit_from_counts``): with ``collect`` the posterior
    gathered in sorted task order, otherwise the lazy dask results."""
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
    return dict(posterior=q, sizes=(n_items, J, K), ids=(task_ids, worker_ids, class_ids, True),
                lazy=lazy)
