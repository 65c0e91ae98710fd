"""Scores of aggregates, workers and posteriors: crowd-kit's consistency and accuracy on
aggregates, Raykar and Yu's spammer score, the entropy of posteriors."""

from __future__ import annotations

import numpy as np

from crowdlearn._validation import (as_float_array, check_bool, check_int_array,
                                    check_probability_matrix, check_scalar)
from crowdlearn.aggregation._ds_kernel import one_coin_matrices
from crowdlearn.labels import CrowdLabels, _is_dataframe, _reindex_onto, as_crowd_labels

__all__ = ["consistency", "accuracy_on_aggregates", "spammer_score", "posterior_entropy"]


# -- crowd-kit's metrics: consistency, accuracy on aggregates; the spammer score ---------------
def _is_model(obj) -> bool:
    return hasattr(obj, "fit") or hasattr(obj, "posterior_")


def _fitted_posterior(model) -> np.ndarray:
    check = getattr(model, "check_is_fitted", None)
    if check is not None:
        check()
    if not hasattr(model, "posterior_"):
        raise ValueError(f"{type(model).__name__} has no posterior_: fit it first")
    return np.asarray(model.posterior_, dtype=float)


def _by_id(model, values: np.ndarray, by: str, name: str):
    """``values`` per task or worker as the model hands back its results (its ``by_id``: a
    Series by id after a fit on a DataFrame), or as they are."""
    by_id = getattr(model, "by_id", None)
    return by_id(values, by, name) if callable(by_id) else values


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
        return one_coin_matrices(np.where(np.isfinite(arr), arr, 1.0 / K), K)
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
        return _by_id(model, per_item, "task", "consistency")
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
    if model is not None:
        out = _by_id(model, rate, by, "accuracy")
        return np.ma.masked_array(rate, mask=~has) if out is rate else out[has]
    ids = crowd.expert_ids if by == "worker" else crowd.item_ids
    if ids is None or not _is_dataframe(labels):
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
    return _by_id(model, score, "worker", "spam_score")


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
        :math:`0 \log 0` counts as 0. A ``Series`` indexed by task id for a model
        fitted on a DataFrame (what its ``by_id`` makes of the values).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.metrics import posterior_entropy
    >>> posterior_entropy(np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75]])).round(4)
    array([0.    , 1.    , 0.8113])
    """
    model = posterior_or_model if _is_model(posterior_or_model) else None
    posterior = posterior_or_model if model is None else _fitted_posterior(model)
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
    return h if model is None else _by_id(model, h, "task", "entropy")
