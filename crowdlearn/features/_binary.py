"""What the two binary-label feature models (:class:`~crowdlearn.LogisticAnnotators`
and :class:`~crowdlearn.SparseExpertsEM`) share: reading features and binary labels, the
soft-vote start, the sign-flip orientation, the E-step of a logistic classifier whose
labellers are right or wrong, and everything a fitted model answers (prediction, the
likelihood of new labels). Each model adds its parameters, penalty and M-step."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from crowdlearn._base import (EMFitter, Predictions, normalize_log,
                              refuse_features_as_labels, warn_if_flat, warn_if_not_converged)
from crowdlearn._validation import _describe_positions, as_float_array, check_finite_array
from crowdlearn.aggregation._common import _canonical_order
from crowdlearn.frames import features_by_task
from crowdlearn.labels import (CrowdLabels, _frame_onto, _is_dataframe, _reindex_onto,
                               as_crowd_labels)


MAX_FEATURE_MAGNITUDE = 1e8


def _check_features(X, name: str = "X", n_features: int | None = None) -> np.ndarray:
    arr = as_float_array(X, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_items, n_features), got shape "
                         f"{arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: it has no rows")
    bad = np.isnan(arr)
    if bad.any():
        raise ValueError(f"{name} contains NaN at {_describe_positions(bad)}")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} contains inf at {_describe_positions(bad)}")
    bad = np.abs(arr) > MAX_FEATURE_MAGNITUDE
    if bad.any():
        raise ValueError(f"{name} has values of magnitude up to {np.abs(arr).max():.3g} "
                         f"(at {_describe_positions(bad)}); the logistic models accept at "
                         f"most {MAX_FEATURE_MAGNITUDE:.0e}, beyond which w @ x loses "
                         f"precision or overflows and EM cannot move. Standardise the "
                         f"features (subtract each column's mean, divide by its standard "
                         f"deviation)")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features but the model was fitted "
                         f"with {n_features}")
    return arr


def _soft_vote(crowd: CrowdLabels) -> np.ndarray:
    """Fraction of 1-labels per item; 0.5 for items without labels."""
    ones = np.bincount(crowd.item, weights=crowd.label.astype(float), minlength=crowd.n_items)
    total = crowd.labels_per_item()
    return np.where(total > 0, ones / np.maximum(total, 1), 0.5)


def _orient_by_vote(crowd: CrowdLabels, params, posterior: np.ndarray):
    """Resolve the sign flip: rename y -> 1 - y if the posterior disagrees with the vote.

    ``params`` must have a ``flipped()`` method giving the same likelihood with the
    classes renamed. Returns ``(params, posterior, flipped)``.
    """
    flipped = _disagrees_with_vote(crowd, posterior[:, 1])
    if flipped:
        params, posterior = params.flipped(), posterior[:, ::-1].copy()
    return params, posterior, flipped


def _disagrees_with_vote(crowd: CrowdLabels, mu: np.ndarray) -> bool:
    """True if the posterior agrees with the soft majority vote on fewer than half the
    labelled items (in expectation)."""
    labelled = crowd.labels_per_item() > 0
    v = _soft_vote(crowd)[labelled]
    m = mu[labelled]
    agreement = np.sum(m * v + (1.0 - m) * (1.0 - v))
    return bool(agreement < 0.5 * labelled.sum())


def _as_binary_labels(labels) -> CrowdLabels:
    """Any accepted label form as binary CrowdLabels (``n_classes == 2`` even if every
    label is 0), with a clear error for other labels."""
    if labels is None:
        raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) tuple "
                         "or an (n_items, n_experts) matrix with -1 for missing")
    if isinstance(labels, CrowdLabels):
        crowd = labels
    else:
        try:
            crowd = as_crowd_labels(labels, n_classes=2)
        except ValueError as exc:
            if "label has values out of range" in str(exc):
                raise ValueError(f"labels must be binary (0 or 1); {exc}") from None
            raise
    if crowd.n_labels == 0:
        raise ValueError("labels holds no label at all")
    if crowd.label.max() > 1 or crowd.n_classes > 2:
        bad = crowd.label > 1
        if bad.any():
            raise ValueError(f"labels must be binary (0 or 1), got label "
                             f"{int(crowd.label[bad][0])} at label position(s) "
                             f"{_describe_positions(bad)}")
        raise ValueError(f"labels must be binary, got n_classes={crowd.n_classes}")
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, crowd.n_items, crowd.n_experts,
                       2, crowd.item_ids, crowd.expert_ids, crowd.class_ids)


def _read_labels(labels, X: np.ndarray, n_experts: int | None = None, ids=None,
                 who: str = "expert") -> CrowdLabels:
    """Binary CrowdLabels whose items are the rows of ``X``, with clear errors; with ``ids``
    (a fitted model's ``(expert_ids_, class_ids_)``) new table ids are mapped onto them,
    and with ``n_experts`` (a fitted model's) a labeller beyond them is refused. ``who``
    is the word for a labeller in the messages ("expert", "annotator")."""
    if ids is not None and all(i is not None for i in ids) and _is_dataframe(labels):
        # read onto the fitted ids: a new table may use one class only
        crowd = _as_binary_labels(_frame_onto(labels, *ids))
    else:
        crowd = _as_binary_labels(labels)
        if ids is not None:
            crowd = _reindex_onto(crowd, *ids)
    if n_experts is not None and crowd.expert.max() >= n_experts:
        raise ValueError(f"unknown {who} {int(crowd.expert.max())}: the model was fitted on "
                         f"{n_experts} {who}s (indices 0 to {n_experts - 1})")
    if n_experts is not None and crowd.n_experts > n_experts:
        raise ValueError(f"unknown {who}s: the labels come from {crowd.n_experts} {who}s but "
                         f"the model was fitted on {n_experts}")
    n_items = crowd.n_items
    if X.shape[0] != n_items:
        if isinstance(labels, tuple) and X.shape[0] > n_items:
            n_items = X.shape[0]  # items beyond the largest index simply have no label
        else:
            raise ValueError(f"X has {X.shape[0]} rows but the labels describe {n_items} items")
    K = crowd.n_experts if n_experts is None else n_experts
    # the labels in one canonical order (item, labeller, label): the E-step's sums and the
    # M-step's logistic fits over the labels then do the same arithmetic whatever the
    # order of the rows, so every permutation of them gives a bit-identical fit
    return _canonical_order(CrowdLabels(crowd.item, crowd.expert, crowd.label, n_items, K, 2,
                                        crowd.item_ids, crowd.expert_ids, crowd.class_ids))


def _read_input(labels, X, n_features: int | None = None, **kw):
    """Features and binary labels as ``(crowd, X)``, the rows of ``X`` being the items:
    with labels from a DataFrame, ``X`` is matched to the tasks by id (or refused when it
    cannot be, see :func:`crowdlearn.frames.features_by_task`); ``kw`` as in
    :func:`_read_labels`. Every reader of labels with features goes through here."""
    X = _check_features(features_by_task(labels, X), n_features=n_features)
    return _read_labels(labels, X, **kw), X


def _right_targets(crowd: CrowdLabels, mu: np.ndarray) -> np.ndarray:
    """``c_ir`` = P(expert r was right on item i | labels), per label: ``mu_i`` of its item
    if the label is 1, ``1 - mu_i`` if it is 0 (``mu_i`` the posterior probability of
    class 1)."""
    return np.where(crowd.label == 1, mu[crowd.item], 1.0 - mu[crowd.item])


def _binary_log_joint(crowd: CrowdLabels, a: np.ndarray, right_logit: np.ndarray) -> np.ndarray:
    """``log p(y^(i) = n, labels of item i | x^(i))`` for ``n = 0, 1``, shape
    ``(n_items, 2)``, when ``P(y^(i) = 1 | x^(i)) = sigma(a_i)`` and expert ``r`` is
    right on item ``i`` with probability ``sigma(b_ir)``, ``b_ir`` being the entry of
    ``right_logit`` for that label: given ``y^(i) = 1`` a label 1 is right, given
    ``y^(i) = 0`` a label 0 is, so with ``2 y^(i)_r - 1`` (+1 or -1) the label adds
    ``log sigma((2 y^(i)_r - 1) b_ir)`` to class 1 and ``log sigma(-(2 y^(i)_r - 1) b_ir)``
    to class 0."""
    n = crowd.n_items
    sb = (2.0 * crowd.label - 1.0) * right_logit
    out = np.empty((n, 2))
    out[:, 0] = log_expit(-a) + np.bincount(crowd.item, weights=log_expit(-sb), minlength=n)
    out[:, 1] = log_expit(a) + np.bincount(crowd.item, weights=log_expit(sb), minlength=n)
    return out


def _classifier_proba(X: np.ndarray, coef: np.ndarray, intercept: float) -> np.ndarray:
    """``[1 - sigma(a), sigma(a)]`` with ``a = X @ coef + intercept``: a logistic
    classifier's class probabilities from the features alone."""
    a = X @ coef + intercept
    return np.column_stack([expit(-a), expit(a)])


class _BinaryFeatureModel(Predictions, EMFitter):
    """The base of the binary-label feature models.

    A subclass defines ``__init__``, ``_check_params``,
    ``_make_data(crowd, X)`` (what its E- and M-steps read), ``_log_joint(data, params)``
    (shape ``(n_items, 2)``), ``_penalty(params)`` (what the objective subtracts from the
    log-likelihood), ``_m_step(data, q, start)`` and ``fit``; its parameters are a
    NamedTuple with ``coef`` and ``intercept`` (the classifier) and a ``flipped()``
    method. Here: reading the input, the start, running EM, keeping the oriented result,
    and the fitted model's answers.
    """

    _who = "expert"  # the word for a labeller in messages
    _n_labellers = "n_experts_"  # the fitted attribute holding their number
    _params_type: type = tuple  # the model's parameters (a NamedTuple class)

    # -- input ---------------------------------------------------------------------------------
    def _check_init(self, takes_params: bool = False):
        """``init`` is "vote", an array of probabilities (checked against the items in
        ``_start_mu``) or, if ``takes_params``, the model's parameters."""
        if isinstance(self.init, str) and self.init != "vote":
            also = f" or {self._params_type.__name__}" if takes_params else ""
            raise ValueError(f"init must be 'vote', an array of starting probabilities"
                             f"{also}, got {self.init!r}")

    def _read_fit_input(self, labels, X):
        """Check the parameters, read ``X`` (matched to a DataFrame's tasks by id) and the
        labels, and remember the labellers' and classes' original ids. Returns
        ``(crowd, data, mu0)``: the labels, the model's data and the starting
        ``mu_i = P(y^(i) = 1)`` of run 0 (see ``_start_mu``)."""
        self._check_params()
        crowd, X = _read_input(labels, X, who=self._who)
        self.expert_ids_, self.class_ids_ = crowd.expert_ids, crowd.class_ids
        return crowd, self._make_data(crowd, X), self._start_mu(crowd)

    def _new_data(self, labels, X):
        """The model's data for labels of new items (from labellers seen in ``fit``, ids
        mapped as in ``fit``) and their features (matched to a DataFrame's tasks by id)."""
        ids = getattr(self, "expert_ids_", None), getattr(self, "class_ids_", None)
        crowd, X = _read_input(labels, X, self.n_features_in_, ids=ids, who=self._who,
                               n_experts=getattr(self, self._n_labellers))
        return self._make_data(crowd, X)

    def _start_mu(self, crowd: CrowdLabels) -> np.ndarray:
        """``mu_i = P(y^(i) = 1)`` to start from: the soft vote unless ``init`` is an array."""
        if isinstance(self.init, (str, self._params_type)):  # "vote", or parameters
            return _soft_vote(crowd)
        mu = as_float_array(self.init, "init")
        if mu.shape != (crowd.n_items,):
            raise ValueError(f"init must have shape ({crowd.n_items},) (one starting "
                             f"probability per item), got {mu.shape}")
        if not np.isfinite(mu).all() or (mu < 0).any() or (mu > 1).any():
            raise ValueError("init must hold probabilities in [0, 1]")
        return mu

    def _param_shapes(self, d: int, n_labellers: int) -> dict:
        """The shape of each field of the model's parameters (``()`` for a number)."""
        raise NotImplementedError

    def _start_params(self, crowd: CrowdLabels, d: int):
        """The parameters given as ``init`` (checked, as new float arrays), or None."""
        if not isinstance(self.init, self._params_type):
            return None
        shapes = self._param_shapes(d, crowd.n_experts)
        out = [check_finite_array(value, f"init.{name}", shape=shapes[name])
               for name, value in zip(self._params_type._fields, self.init)]
        return self._params_type(*(float(a) if a.ndim == 0 else a for a in out))

    # -- EM --------------------------------------------------------------------------------------
    def _e_step(self, data, params):
        q, log_evidence = normalize_log(self._log_joint(data, params))
        return q, float(log_evidence.sum()) - self._penalty(params)

    _warm_start = True  # each M-step's solvers start at the current parameters

    def _run_em(self, data, init):
        """The engine (through :class:`~crowdlearn._base.EMFitter`, SQUAREM if the model's
        ``_accelerator`` says so) from ``init(restart)``; warns if the best run did not
        converge."""
        result = self._run_engine(data, init=init)
        warn_if_not_converged(result, type(self).__name__, self.max_iter, self.tol)
        warn_if_flat(result, type(self).__name__)
        return result

    def _keep_oriented(self, crowd: CrowdLabels, result):
        """Orient the best run by the vote (``flipped_``), keep its parameters and the
        attributes every EM model has; returns the oriented parameters."""
        params, posterior, self.flipped_ = _orient_by_vote(crowd, result.params,
                                                           result.posterior)
        self._params = params
        self.coef_ = params.coef
        self.intercept_ = float(params.intercept)
        self._keep_em_result(result, posterior, log_prior=-self._penalty(params))
        return params

    # -- a fitted model's answers ------------------------------------------------------------------
    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        r"""Class probabilities, shape ``(n_items, 2)``.

        Parameters
        ----------
        labels : labels of new items, optional
            Any form ``fit`` accepts, from labellers seen in ``fit``; with their features
            ``X``, the posterior :math:`P(y^{(i)} \mid x^{(i)}, \text{labels})` under the
            fitted parameters.
        X : array-like of shape (n_new_items, n_features), optional
            Features of new items (pass it by keyword). Without ``labels``, the classifier
            alone, :math:`[1 - \sigma(a_i), \sigma(a_i)]` with :math:`a_i = \beta_0 +
            \beta^\top x^{(i)}` (``X @ coef_ + intercept_``).

        Returns
        -------
        ndarray of shape (n_items, 2)
            With neither argument, the training posterior ``posterior_``.

        Raises
        ------
        ValueError
            For ``labels`` without ``X``, and for a feature matrix given as ``labels``
            (the call ``predict_proba(X_new)`` of the order ``(X, labels)`` used before
            0.2.0): pass ``X=X_new``.
        """
        return super().predict_proba(labels, X)

    def _proba_new(self, labels, X) -> np.ndarray:
        if X is None:
            refuse_features_as_labels(labels, type(self).__name__,
                                      getattr(self, self._n_labellers), self.n_features_in_)
            raise ValueError(f"{type(self).__name__}: labels of new items need their "
                             f"features X: predict(labels, X=X_new); for the classifier from "
                             f"the features alone, predict(X=X_new)")
        if isinstance(X, (CrowdLabels, tuple)):
            raise ValueError(f"{type(self).__name__}: X holds labels; the order is (labels, "
                             f"X) since crowdlearn 0.2.0: predict(labels, X=X_new)")
        if labels is None:
            X = _check_features(X, n_features=self.n_features_in_)
            return _classifier_proba(X, self.coef_, self.intercept_)
        q, _ = normalize_log(self._log_joint(self._new_data(labels, X), self._params))
        return q

    @staticmethod
    def _decide(proba: np.ndarray) -> np.ndarray:
        """Class 1 where its probability is at least 1/2 (ties go to class 1)."""
        return (proba[:, 1] >= 0.5).astype(np.intp)

    def observed_log_likelihood(self, labels, X) -> float:
        r""":math:`\ell(\hat\theta)`, the log-likelihood of ``labels`` given ``X`` at the
        fitted parameters (labels from the labellers seen in ``fit``)."""
        self._check_fitted()
        data = self._new_data(labels, X)
        _, log_evidence = normalize_log(self._log_joint(data, self._params))
        return float(log_evidence.sum())

    def objective(self, labels, X) -> float:
        r"""The penalised objective EM maximises, :math:`\ell(\hat\theta)` minus the
        penalty at the fitted parameters."""
        return self.observed_log_likelihood(labels, X) - self._penalty(self._params)
