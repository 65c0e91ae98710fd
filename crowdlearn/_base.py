"""What the estimators share: scikit-learn style parameters, and one ``fit`` for EM models.

:class:`BaseEstimator` stores the constructor arguments (their names come from the
signature of ``__init__``), and gives ``get_params``/``set_params`` and a readable repr.

:class:`EMEstimator` is the base of every model fitted by the EM engine, in the way of
scikit-learn's ``BaseMixture``: its :meth:`~EMEstimator.fit` runs

1. ``_check_params()``: the hyper-parameters (``ValueError`` in the package's words);
2. ``_make_data(*args, **kwargs)``: the input read into the model's data object, which
   carries everything a fit needs besides the parameters (the label matrix, the
   features, the known truths, the prior pseudo-counts): nothing of one fit is kept
   on ``self`` to be read back by the EM steps;
3. the engine, :func:`crowdlearn.em.fit_em`, on the model's ``_init_params(data,
   restart, rng)``, ``_e_step(data, params)`` and ``_m_step(data, q)`` (or ``_m_step(data,
   q, params)`` when ``_warm_start``), with the user's ``callback`` and, when asked for,
   a progress bar (:class:`crowdlearn._progress.EMProgress`, passed as a callback: the
   engine knows nothing of it);
4. ``_set_fitted(data, result)``: the fitted attributes, and the
   :class:`~crowdlearn.ConvergenceWarning` when the best run hit ``max_iter``.

:class:`Predictions` holds ``predict_proba``/``predict``/``fit_predict`` with the one
argument order ``(labels, X=None)`` for every crowd model (the EM models, the binary
feature models and the votes): a model defines ``_proba_new(labels, X)`` for new items.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import warnings

import numpy as np

from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning, NotFittedError


class BaseEstimator:
    """scikit-learn style: ``__init__`` only stores, ``get_params``, a readable repr."""

    @classmethod
    def _param_names(cls) -> tuple:
        """The names of the constructor's parameters, in the order of its signature."""
        params = inspect.signature(cls.__init__).parameters.values()
        return tuple(p.name for p in params if p.name != "self"
                     and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def _store_params(self, values: dict) -> None:
        """Store the constructor arguments as they are (``__init__`` passes its
        ``locals()``), one attribute per parameter of the signature: no checks here, so
        ``set_params`` and ``clone`` behave as in scikit-learn; ``fit`` validates."""
        for name in self._param_names():
            setattr(self, name, values[name])

    def _keep_em_result(self, result, posterior=None, log_prior=None) -> None:
        """The attributes every EM estimator sets from its best run (an
        :class:`~crowdlearn.em.EMResult`): ``posterior_`` (``result.posterior`` unless
        another, e.g. re-oriented, posterior is given), ``log_likelihood_history_``,
        ``objective_``, ``n_iter_``, ``converged_``, ``flat_optimum_`` (whether a SQUAREM
        run ended on a flat optimum, see :func:`crowdlearn.em.run_em`; always False
        without ``accelerate``) and, given the log-prior (or minus the penalty) that the
        objective includes, ``log_likelihood_``."""
        self.posterior_ = result.posterior if posterior is None else posterior
        self.log_likelihood_history_ = result.history
        self.objective_ = result.objective
        if log_prior is not None:
            self.log_likelihood_ = result.objective - float(log_prior)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.flat_optimum_ = bool(getattr(result, "flat", False))

    def get_params(self) -> dict:
        """The constructor arguments, as stored."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Change constructor arguments; returns self."""
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; "
                                 f"valid ones are {list(names)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attr: str = "posterior_"):
        if not hasattr(self, attr):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")

    def check_is_fitted(self) -> None:
        """Raise :class:`~crowdlearn.NotFittedError` unless the model is fitted (has
        ``posterior_``): scikit-learn's ``check_is_fitted(model)`` as a method, for code that
        reads a fitted model's attributes (e.g. :mod:`crowdlearn.metrics`)."""
        self._check_fitted()


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` (called by the caller of this function) that
    points at the first frame outside the crowdlearn package: the user's line that
    called the estimator, however many of the package's functions lie in between."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def reissue_warnings(caught, what: str) -> None:
    """Warn once per category for the warnings ``caught`` (recorded by
    ``warnings.catch_warnings(record=True)``) from many fits: the message itself when there
    was one, else how many there were and the first (``select_penalty`` gave 111 warnings,
    one per fit along its path); pointing at the user's line."""
    by_category: dict = {}
    for w in caught:
        by_category.setdefault(w.category, []).append(str(w.message))
    for category, messages in by_category.items():
        text = messages[0] if len(messages) == 1 else (
            f"{len(messages)} warnings from the fits of {what}; the first: {messages[0]}")
        warnings.warn(text, category, stacklevel=user_stacklevel())


def warn_if_not_converged(result, name: str, max_iter: int, tol: float) -> None:
    """The :class:`~crowdlearn.ConvergenceWarning` of an EM fit whose best run reached
    ``max_iter`` without converging (not when a callback stopped it); it points at the
    user's line."""
    if not result.converged and not result.stopped:
        warnings.warn(f"{name} did not converge in max_iter={max_iter} iterations "
                      f"(tol={tol}); increase max_iter or tol", ConvergenceWarning,
                      stacklevel=user_stacklevel())


def warn_if_flat(result, name: str) -> None:
    """The :class:`~crowdlearn.DegenerateFitWarning` of a fit whose best run was a SQUAREM
    run that ended on a flat optimum (``result.flat``, see :func:`crowdlearn.em.run_em`);
    it points at the user's line."""
    if getattr(result, "flat", False):
        warnings.warn(f"{name}: SQUAREM (accelerate=True) stopped on a flat optimum: its last "
                      f"cycle moved a posterior probability by {result.last_move:.2g} while "
                      f"the objective rose by at most tol, so the data do not pin the "
                      f"posterior down there and another start could end elsewhere with the "
                      f"same objective (flat_optimum_ is True). Compare with n_init > 1 or "
                      f"accelerate=False, or add smoothing (a prior).", DegenerateFitWarning,
                      stacklevel=user_stacklevel())


class EMFitter(BaseEstimator):
    """The base of the models fitted by EM (see the module notes): one ``fit``.

    A subclass defines ``__init__`` (with ``n_init``, ``max_iter``, ``tol``,
    ``random_state`` and ``callback``; ``progress`` where offered), ``_check_params``,
    ``_make_data``, ``_init_params``, ``_e_step``, ``_m_step`` and ``_set_fitted``;
    optionally ``_n_runs`` (default ``n_init``),
    ``_accelerator`` (SQUAREM's flatten/unflatten pair, default None) and
    ``_warm_start``.
    """

    _warm_start = False  # the M-step also receives the parameters the posterior came from

    # -- the steps a model defines ---------------------------------------------------------
    def _check_params(self) -> None:
        raise NotImplementedError

    def _make_data(self, *args, **kwargs):
        raise NotImplementedError

    def _init_params(self, data, restart: int, rng: np.random.Generator):
        raise NotImplementedError

    def _e_step(self, data, params):
        raise NotImplementedError

    def _m_step(self, data, q, *params):
        raise NotImplementedError

    def _set_fitted(self, data, result) -> None:
        raise NotImplementedError

    def _n_runs(self, data) -> int:
        return self.n_init

    def _accelerator(self, data):
        return None

    # -- fit -------------------------------------------------------------------------------
    def _fit(self, *args, **kwargs):
        """Check, build the data, run the engine, set the fitted attributes; ``self``."""
        self._check_params()
        return self._fit_data(self._make_data(*args, **kwargs))

    def _fit_data(self, data):
        """The fit of ``data`` (built by ``_make_data``) from the default starts; ``self``."""
        result = self._run_engine(data)
        warn_if_not_converged(result, type(self).__name__, self.max_iter, self.tol)
        warn_if_flat(result, type(self).__name__)
        self._set_fitted(data, result)
        return self

    def _run_engine(self, data, init=None, e_step=None, m_step=None, n_runs=None,
                    accelerate=True):
        """:func:`~crowdlearn.em.fit_em` on the model's steps (or the ones given, e.g. a
        distributed E-step), with the callback and, if asked for, the progress bar;
        ``accelerate=False`` runs plain EM even for a model with ``accelerate=True``."""
        from crowdlearn._progress import EMProgress
        from crowdlearn._validation import check_random_state
        from crowdlearn.em import fit_em

        if init is None:
            rng = check_random_state(self.random_state)
            init = lambda restart: self._init_params(data, restart, rng)  # noqa: E731
        e_step = e_step or (lambda params: self._e_step(data, params))
        if m_step is None:
            m_step = (lambda q, params: self._m_step(data, q, params)) if self._warm_start \
                else (lambda q: self._m_step(data, q))
        n_runs = self._n_runs(data) if n_runs is None else n_runs
        with EMProgress(getattr(self, "progress", False), n_runs, self.max_iter,
                        type(self).__name__, self.callback) as callback:
            return fit_em(init, e_step, m_step, n_init=n_runs, tol=self.tol,
                          max_iter=self.max_iter, callback=callback,
                          warm_start=self._warm_start,
                          accelerate=self._accelerator(data) if accelerate else None,
                          _model=type(self).__name__)


class Predictions:
    """``predict_proba``, ``predict`` and ``fit_predict`` of every crowd model, with the one
    argument order ``(labels, X=None)``: the labels of new items first, then, for models
    with features, their features as ``X`` (a keyword is clearest: ``X=X_new``).

    Without arguments they answer for the training items (``posterior_``). A model
    defines ``_proba_new(labels, X)``, the posterior of new items; it may redefine
    ``_decide(proba)`` (the hard label from the posterior, default the arg-max over the
    last axis, the lowest class on ties), ``_fitted_labels()`` and ``_labels_new(labels,
    X)`` (when its hard labels are not ``_decide`` of its posterior, e.g. a vote broken by
    a random draw), and set ``_new_needs_fit = False`` if new items can be answered
    unfitted.
    """

    _new_needs_fit = True  # answering new items needs the fitted parameters

    def _proba_new(self, labels, X) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def _decide(proba: np.ndarray) -> np.ndarray:
        return np.argmax(proba, axis=-1)

    def _fitted_labels(self) -> np.ndarray:
        return self._decide(self.posterior_)

    def _labels_new(self, labels, X) -> np.ndarray:
        return self._decide(self._proba_new(labels, X))

    def _check_new(self, labels, X) -> bool:
        """True if new items are asked for (``labels`` or ``X`` given); checks that the
        model is fitted when it needs to be, and refuses features given as labels."""
        new = labels is not None or X is not None
        if not new or self._new_needs_fit:
            self._check_fitted()
        if labels is not None:
            refuse_features_as_labels(labels, type(self).__name__)
        return new

    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        """Posterior class probabilities, shape ``(n_items, n_classes)``.

        Parameters
        ----------
        labels : labels of new items, optional
            Any form ``fit`` accepts, from labellers seen in ``fit``.
        X : array-like of shape (n_new_items, n_features), optional
            The new items' features, for models with features (pass it by keyword).

        Returns
        -------
        ndarray or pandas DataFrame
            Without arguments, a copy of the training posterior ``posterior_``;
            otherwise the posterior of the new items under the fitted model. For a
            model with results by id, when the new labels are a pandas DataFrame of ``(task, worker, label)`` rows, a
            DataFrame indexed by task id (index name ``"task"``) with one column per
            class id (columns name ``"label"``), as crowd-kit returns it.
        """
        if self._check_new(labels, X):
            return self._proba_by_task(labels, self._proba_new(labels, X))
        return self.posterior_.copy()

    def predict(self, labels=None, X=None) -> np.ndarray:
        """Most probable class of each item (training items without arguments, new ones
        given as in :meth:`predict_proba`).

        Returns
        -------
        ndarray of shape (n_items,)
            Class indices (the model's tie rule: the lowest class unless it says otherwise).
        """
        if self._check_new(labels, X):
            return self._labels_new(labels, X)
        return self._fitted_labels()

    def fit_predict(self, labels, X=None):
        """Fit on ``labels`` (and the features ``X``, for models with features), then
        return the most probable class of each training item, as :meth:`predict`.

        Parameters
        ----------
        labels : labels in any form ``fit`` accepts
        X : array-like of shape (n_items, n_features), optional
            The items' features, for models with features.

        Returns
        -------
        ndarray or pandas Series
            Class indices, as :meth:`predict`; for a model that gives results by
            original id (fitted on a DataFrame), crowd-kit's form: a ``Series`` of
            class ids indexed by task id (index name ``"task"``), as ``labels_``.
        """
        fitted = self.fit(labels) if X is None else self.fit(labels, X)
        hard = fitted.predict()
        if not fitted._results_by_id():
            return hard
        return fitted._by_item(fitted._ids("class", fitted.n_classes_)[hard], "agg_label")

    def fit_predict_proba(self, labels, X=None):
        """Fit on ``labels`` (and the features ``X``, for models with features), then
        return the posterior class probabilities of the training items.

        Parameters
        ----------
        labels : labels in any form ``fit`` accepts
        X : array-like of shape (n_items, n_features), optional
            The items' features, for models with features.

        Returns
        -------
        ndarray or pandas DataFrame
            A copy of ``posterior_``, as :meth:`predict_proba` without arguments; for
            a model that gives results by original id (fitted on a DataFrame),
            crowd-kit's form: a ``DataFrame`` indexed by task id (index name
            ``"task"``) with one column per class id, as ``probas_``.
        """
        fitted = self.fit(labels) if X is None else self.fit(labels, X)
        if fitted._results_by_id():
            return fitted.probas_
        return fitted.predict_proba()

    def _results_by_id(self) -> bool:
        """True if the fitted model hands results back by original id (see
        :class:`~crowdlearn.frames.IdResults`)."""
        frame_out = getattr(self, "_frame_out", None)
        return frame_out is not None and frame_out() and self.posterior_.ndim == 2

    def _proba_by_task(self, labels, proba):
        """``proba`` of new items as a DataFrame by task id when ``labels`` is a pandas
        DataFrame with a task column (its items are its sorted task ids) and the model
        gives results by id (:class:`~crowdlearn.frames.IdResults`); else as is."""
        if not hasattr(self, "_frame_out") or np.ndim(proba) != 2 \
                or type(labels).__module__.split(".")[0] != "pandas" \
                or "task" not in getattr(labels, "columns", ()):
            return proba
        from crowdlearn._ids import _encode
        from crowdlearn.labels import require_pandas
        pd = require_pandas()
        tasks = _encode(labels["task"], "item")[0]  # the order the readers give the items
        if len(tasks) != proba.shape[0]:
            return proba
        classes = getattr(self, "class_ids_", None)
        if classes is None or len(classes) != proba.shape[1]:
            classes = np.arange(proba.shape[1])
        return pd.DataFrame(proba, index=pd.Index(tasks, name="task"),
                            columns=pd.Index(classes, name="label"))


def _looks_like_features(labels, n_experts=None, n_features=None) -> bool:
    """True if ``labels`` cannot be labels but looks like a feature matrix: a 2-D array of
    numbers (not CrowdLabels, an ``(item, expert, label)`` tuple or a DataFrame) with a
    non-integer value, or with one column per feature (``n_features``) where the model
    has another number of labellers (``n_experts``)."""
    if isinstance(labels, tuple) or type(labels).__module__.split(".")[0] in (
            "crowdlearn", "pandas"):
        return False
    try:
        arr = np.asarray(labels)
    except (TypeError, ValueError):
        return False
    if arr.ndim != 2 or arr.dtype.kind not in "fiu" or arr.size == 0:
        return False
    if arr.dtype.kind == "f":
        finite = arr[np.isfinite(arr)]
        if (finite != np.round(finite)).any():
            return True
    return (n_features is not None and n_experts is not None and n_features != n_experts
            and arr.shape[1] == n_features)


FEATURES_AS_LABELS = (
    "{name}: the first argument of predict/predict_proba is the labels of new items, but "
    "this looks like a feature matrix (numbers that are not labels); pass features by "
    "keyword: predict(X=X_new) for the prediction from the features alone, "
    "predict(labels, X=X_new) with the new items' labels (since crowdlearn 0.2.0 the "
    "order is (labels, X))")


def refuse_features_as_labels(labels, name: str, n_experts=None, n_features=None) -> None:
    """The ``ValueError`` of a feature matrix given where labels are expected, e.g. the
    call ``model.predict(X_new)`` of the order ``(X, labels)`` used before 0.2.0 (see
    :func:`_looks_like_features` for what is recognised)."""
    if _looks_like_features(labels, n_experts, n_features):
        raise ValueError(FEATURES_AS_LABELS.format(name=name))


class EMEstimator(Predictions, EMFitter):
    """An EM model of crowd labels: :class:`EMFitter`'s ``fit``, and the answers of a fitted
    model (:class:`Predictions`) with the one argument order ``(labels, X=None)``; a
    subclass also defines ``_proba_new(labels, X)``, the posterior of new items."""


def normalize_log(log_joint: np.ndarray):
    """Normalise rows of log joint probabilities.

    Returns ``(posterior, log_evidence)``: the row-wise softmax and the row-wise
    log-sum-exp, computed with the row maximum subtracted so nothing underflows.
    Rows that are ``-inf`` everywhere are refused with a ``ValueError`` by the
    callers; here they give ``log_evidence = -inf``.
    """
    two = log_joint.ndim == 2 and log_joint.shape[1] == 2
    # two classes: the same numbers without NumPy's slow reductions along rows of two
    m = np.maximum(log_joint[:, :1], log_joint[:, 1:]) if two \
        else np.max(log_joint, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(log_joint - m)
    s = p[:, :1] + p[:, 1:] if two else p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_evidence = (np.log(s) + m)[:, 0]
    safe = np.where(s > 0, s, 1.0)
    return p / safe, log_evidence


def posterior_or_refuse(log_joint: np.ndarray, message: str) -> np.ndarray:
    """The normalised rows of ``log_joint``, refusing rows that are ``-inf`` under every
    class (no posterior exists there) or hold a NaN or ``+inf`` with a ``ValueError``:
    ``message`` names the cause, and its ``{rows}`` is replaced by the first five such
    row indices."""
    dead = ~np.isfinite(np.max(log_joint, axis=1))  # all -inf, or a NaN or +inf in the row
    if dead.any():
        raise ValueError(message.format(rows=np.flatnonzero(dead)[:5].tolist()))
    q, _ = normalize_log(log_joint)
    return q


# -- ties: the same coin for an item wherever it sits ----------------------------------------
# A draw per item in the items' order (the rule until 0.2.x) gave an item another coin when
# the rows came in another order, when other items were added before it or when the ids
# sorted differently. Each tied item gets a coin keyed on a seed and on the item's
# identifier (its id when the labels came from a table, its index otherwise): the order of
# the rows, the other items and the ids' order change nothing, and identical items still
# split evenly between their tied classes, as independent coins do. (Renaming an item is
# another item: it may get another coin.)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX[0]
    z = (z ^ (z >> np.uint64(27))) * _MIX[1]
    return z ^ (z >> np.uint64(31))


def _id_codes(ids: np.ndarray) -> np.ndarray:
    """A uint64 per identifier that depends on its value alone (not on Python's salted
    ``hash``): integers as they are, anything else through BLAKE2b of its ``repr``."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64).view(np.uint64) if ids.dtype.kind == "i" \
            else ids.astype(np.uint64)
    out = np.empty(ids.size, dtype=np.uint64)
    for n, value in enumerate(ids.tolist()):  # only the tied items: few
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            out[n] = np.uint64(int(value) % 2 ** 64)
        else:
            digest = hashlib.blake2b(repr(value).encode(), digest_size=8).digest()
            out[n] = np.frombuffer(digest, dtype=np.uint64)[0]
    return out


def break_ties(counts: np.ndarray, item_ids, random_state) -> np.ndarray:
    """The most-voted class of every row of ``counts`` (votes per item and class), a tie
    broken at random by a coin keyed on the seed and on the item: with ``item_ids`` (one
    per row, from a table) on the id, through ``hash(seed, id, class)`` (SplitMix64); for
    index-coded labels (``item_ids`` None) on the index, row ``i`` of the seed's stream of
    uniforms (which does not depend on how many items follow). Uniform over the tied
    classes, independent between items; a Generator as ``random_state`` is advanced.
    """
    from crowdlearn._validation import check_random_state

    rng = check_random_state(random_state)
    top = counts == counts.max(axis=1, keepdims=True)
    if item_ids is None:
        return np.argmax(top * (1.0 + rng.random(top.shape)), axis=1)
    seed = int(rng.integers(2 ** 63))
    labels = np.argmax(top, axis=1)
    tied = np.flatnonzero(top.sum(axis=1) > 1)
    if tied.size == 0:
        return labels
    with np.errstate(over="ignore"):
        h = _mix(_id_codes(np.asarray(item_ids)[tied]) ^ _mix(np.array([seed], np.uint64)))
        keys = np.stack([_mix(h + _GOLDEN * np.uint64(k + 1))
                         for k in range(counts.shape[1])], axis=1)
    labels[tied] = np.argmax(np.where(top[tied], keys | np.uint64(1), np.uint64(0)), axis=1)
    return labels
