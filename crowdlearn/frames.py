"""Results by the original identifiers: the pandas face of the fitted label models.

The numpy core never imports pandas. A model fitted on a pandas ``DataFrame``
of ``(task, worker, label)`` rows (crowd-kit's convention; other column names
through :func:`~crowdlearn.from_dataframe`) hands its results back as pandas
objects indexed by the original identifiers:

=====================  ==========================================================
attribute              fitted on a DataFrame
=====================  ==========================================================
``labels_``            ``Series`` indexed by task id, values the original class ids
``probas_``            ``DataFrame``, one row per task id, one column per class id
``skills_``            ``Series`` indexed by worker id (models with one skill each)
``errors_``            ``DataFrame`` of confusion probabilities (Dawid--Skene),
                       crowd-kit's layout: rows ``(worker, observed label)``,
                       columns the true class
=====================  ==========================================================

Fitted on anything else (a :class:`~crowdlearn.CrowdLabels`, a tuple of index
arrays, a dense matrix) the same attributes are numpy arrays indexed by the
integer positions, so code written without pandas never meets it. The numpy
attributes (``posterior_``, ``confusion_``, ...) are numpy arrays in both cases.
"""

from __future__ import annotations

import numpy as np

from crowdlearn._validation import read_only
from crowdlearn._ids import _encode
from crowdlearn.labels import (CrowdLabels, _is_dataframe, _refuse_duplicate_columns,
                               require_pandas)

__all__ = ["IdResults", "ClassPrior", "refuse_gold_as_features", "require_pandas"]


def _hard_labels(posterior: np.ndarray) -> np.ndarray:
    """Arg-max of each row, the lowest class winning a tie (deterministic)."""
    return np.argmax(posterior, axis=1)


class IdResults:
    """Mixin for label models: ``labels_``, ``probas_``, ``skills_`` by original id.

    A model calls ``_remember_ids`` in ``fit`` with the :class:`CrowdLabels`
    it fitted, and sets ``posterior_`` (items x classes). Models with one number
    per worker define ``_skills()``; Dawid--Skene models have ``confusion_``.
    """

    def _remember_ids(self, crowd) -> None:
        self._set_ids(crowd.item_ids, crowd.expert_ids, crowd.class_ids,
                      getattr(crowd, "_from_frame", False) is True)

    def _set_ids(self, item_ids, expert_ids, class_ids, as_frame: bool) -> None:
        """The original identifiers (None: indices), and whether results are pandas objects."""
        self.item_ids_ = item_ids
        self.expert_ids_ = expert_ids
        self.class_ids_ = class_ids
        self._as_frame = as_frame

    # -- building blocks ----------------------------------------------------------------
    def _ids(self, kind: str, n: int) -> np.ndarray:
        ids = getattr(self, f"{kind}_ids_", None)
        return np.arange(n) if ids is None else ids

    def _frame_out(self) -> bool:
        return getattr(self, "_as_frame", False)

    def _by_item(self, values: np.ndarray, name: str):
        """One value per item: a Series indexed by task id, or the array itself."""
        if not self._frame_out():
            return values
        pd = require_pandas()
        return pd.Series(values, index=pd.Index(self._ids("item", len(values)), name="task"),
                         name=name)

    def _by_worker(self, values: np.ndarray, name: str):
        """One value per worker: a Series indexed by worker id, or the array itself."""
        if not self._frame_out():
            return values
        pd = require_pandas()
        return pd.Series(values, index=pd.Index(self._ids("expert", len(values)),
                                                name="worker"), name=name)

    def by_id(self, values: np.ndarray, by: str = "task", name: str | None = None):
        """``values``, one per task (``by="task"``) or per worker (``by="worker"``), in the
        form of the model's own results: a pandas Series indexed by the original task or
        worker ids (index named ``"task"`` or ``"worker"``, the Series ``name``) when the
        model was fitted on a DataFrame, otherwise ``values`` itself.

        Functions that compute something per task or worker of a fitted model (e.g.
        :func:`~crowdlearn.metrics.posterior_entropy`) return it this way.
        """
        if by not in ("task", "worker"):
            raise ValueError(f"by must be 'task' or 'worker', got {by!r}")
        return self._by_item(values, name) if by == "task" else self._by_worker(values, name)

    # -- the attributes -------------------------------------------------------------------
    @property
    def labels_(self):
        """Hard labels (arg-max of ``posterior_``, lowest class on ties).

        A ``Series`` of original class ids indexed by task id when fitted on a
        DataFrame (a dask ``Series`` after a dask fit with ``collect=False``);
        otherwise a read-only array of class indices. Built once per fit: every access
        returns the same object until the next fit (which sets a new ``posterior_``).
        """
        dask_result = getattr(self, "labels_dask_", None)
        if dask_result is not None and not hasattr(self, "posterior_"):
            return dask_result  # a distributed fit that kept its posteriors on the cluster
        self._check_fitted()
        cached = self.__dict__.get("_labels_cache")
        if cached is not None and cached[0] is self.posterior_:
            return cached[1]
        hard = self._hard_label_indices()
        value = self._by_item(self._ids("class", self.posterior_.shape[1])[hard], "agg_label") \
            if self._frame_out() else hard
        # keyed on the posterior: a new fit (a new posterior_ array) builds them again
        self._labels_cache = (self.posterior_, value)
        return value

    def _hard_label_indices(self) -> np.ndarray:
        """The class index of each item behind ``labels_`` (read-only): the arg-max of
        ``posterior_``, the lowest class on ties, unless the model has its own tie rule."""
        return read_only(_hard_labels(self.posterior_))

    @property
    def probas_(self):
        """Posterior class probabilities.

        A ``DataFrame`` (rows: task ids, columns: class ids) when fitted on a
        DataFrame; otherwise a copy of ``posterior_``.
        """
        dask_result = getattr(self, "probas_dask_", None)
        if dask_result is not None and not hasattr(self, "posterior_"):
            return dask_result
        self._check_fitted()
        if not self._frame_out():
            return self.posterior_.copy()
        pd = require_pandas()
        K = self.posterior_.shape[1]
        return pd.DataFrame(self.posterior_.copy(),
                            index=pd.Index(self._ids("item", self.posterior_.shape[0]),
                                           name="task"),
                            columns=pd.Index(self._ids("class", K), name="label"))

    @property
    def skills_(self):
        """One skill per worker (what the model calls a worker's skill).

        A ``Series`` indexed by worker id when fitted on a DataFrame; otherwise
        an array over worker indices. Only models with one skill per worker.
        """
        self._check_fitted()
        skills = getattr(self, "_skills", None)
        if skills is None:
            raise AttributeError(f"{type(self).__name__} has no single skill per worker; "
                                 f"see its confusion matrices")
        # a copy: never the model's own array (GLAD's ability_, OneCoin's accuracy_)
        return self._by_worker(np.array(skills(), dtype=float), "skill")


class ClassPrior:
    """Mixin for models with a class prior ``class_prior_``: crowd-kit's name ``priors_``."""

    @property
    def priors_(self):
        """The fitted class prior under crowd-kit's name (a copy of ``class_prior_``).

        A ``Series`` named ``"prior"`` indexed by class id (index name
        ``"label"``) when fitted on a DataFrame; otherwise an array over class
        indices. Changing it does not change the model.
        """
        self._check_fitted("class_prior_")
        prior = np.array(self.class_prior_, dtype=float)
        if not self._frame_out():
            return prior
        pd = require_pandas()
        return pd.Series(prior, index=pd.Index(self._ids("class", prior.shape[0]), name="label"),
                         name="prior")


def refuse_gold_as_features(labels, X, name: str) -> None:
    """``ValueError`` for crowd-kit's positional gold, ``fit(df, true_labels)``.

    Parameters
    ----------
    labels : the labels given to ``fit``
    X : the second positional argument of ``fit`` (the features)
    name : str
        The model's name, for the message.

    Raises
    ------
    ValueError
        When ``labels`` is a pandas DataFrame and ``X`` a pandas Series: crowd-kit
        takes the known true labels there, crowdlearn takes features, and the
        Series is not silently read as either.
    """
    if not _is_dataframe(labels) or type(X).__module__.split(".")[0] != "pandas" \
            or getattr(X, "ndim", 0) != 1 or not hasattr(X, "index"):
        return
    raise ValueError(f"{name}.fit: the second argument is X, the items' features, but a "
                     f"pandas Series was given with a DataFrame of labels; did you mean "
                     f"gold=...? (crowd-kit's fit(data, true_labels) is "
                     f"fit(data, gold=true_labels) here; features go as a DataFrame "
                     f"indexed by task id)")


def _refuse_indexed_features(X) -> None:
    """``ValueError`` for a DataFrame or Series ``X`` whose index is not ``0..n-1`` in order,
    given with labels that carry no task ids (arrays, triples, hand-made crowds): its rows
    would be read by position while its index says they belong to other items."""
    if type(X).__module__.split(".")[0] != "pandas" or not hasattr(X, "index"):
        return
    index = X.index
    if getattr(index, "nlevels", 1) == 1 and index.dtype.kind in "iu" \
            and np.array_equal(index.to_numpy(), np.arange(len(index))):
        return
    raise ValueError(f"X is a {type(X).__name__} indexed by {index[:3].tolist()}..., but the "
                     f"labels are index-coded arrays without task ids, so its rows would be "
                     f"read by position, not by its index; reset the index "
                     f"(X.reset_index(drop=True)) if the rows are in item order, or give "
                     f"the labels as a DataFrame with a task column")


def features_by_task(labels, X):
    """Match the rows of ``X`` to the tasks of labels that came from a DataFrame.

    With a DataFrame of labels the items are the task ids in sorted order, so a
    numpy ``X`` is only unambiguous when the task ids are exactly ``0 .. n-1``;
    otherwise ``X`` must be a DataFrame indexed by task id, and its rows are
    put in the items' order. Any other labels pass ``X`` through unchanged.
    """
    if X is None:
        return None
    if _is_dataframe(labels):
        if "task" not in labels.columns:
            return X  # the labels' own reader says what is missing
        _refuse_duplicate_columns(labels)
        ids = _encode(labels["task"], "item")[0]  # sorted as from_dataframe sorts them
    elif isinstance(labels, CrowdLabels) and getattr(labels, "_from_frame", False) is True:
        ids = labels.item_ids
    else:
        _refuse_indexed_features(X)
        return X
    if _is_dataframe(X):
        index = X.index
        if index.has_duplicates:
            raise ValueError("X has repeated task ids in its index")
        missing = [t for t in ids.tolist() if t not in index]
        if missing:
            raise ValueError(f"X has no row for task(s) {missing[:5]} (X must be indexed by "
                             f"task id)")
        extra = len(index) - len(ids)
        if extra:
            raise ValueError(f"X has {extra} row(s) for tasks that have no label; drop them "
                             f"or fit with index triples")
        return X.loc[ids].to_numpy()
    if ids.dtype.kind in "iu" and np.array_equal(ids, np.arange(ids.size)) \
            and np.shape(X)[0] == ids.size:
        return X
    raise ValueError("X is an array but the labels are a DataFrame whose task ids are not "
                     "exactly 0..n-1 (the rows of X cannot be matched to tasks without "
                     "guessing); pass X as a DataFrame indexed by task id")
