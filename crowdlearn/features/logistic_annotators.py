r"""Annotators whose reliability depends on the item: a logistic classifier learnt from a crowd.

The model of Yan et al. (2010) for binary labels, fitted by EM whose M-step is a
set of weighted logistic regressions with soft targets (solved by Newton's
method in :mod:`crowdlearn._solvers.logistic`).
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from crowdlearn._base import BaseEstimator, normalize_log
from crowdlearn._solvers.logistic import fit_weighted_logistic
from crowdlearn._validation import (_describe_positions, as_float_array, check_em_params,
                                    check_random_state, check_scalar)
from crowdlearn.em import fit_em
from crowdlearn.frames import features_by_task
from crowdlearn.labels import CrowdLabels, _reindex_onto, as_crowd_labels
from crowdlearn.features._binary import (MAX_FEATURE_MAGNITUDE, _check_features,
                                         _disagrees_with_vote, _orient_by_vote, _soft_vote)  # noqa: F401

__all__ = ["LogisticAnnotators", "LogisticAnnotatorsParams", "observed_log_likelihood"]


class LogisticAnnotatorsParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``).

    ``reliability_intercept`` is :math:`\\gamma_t`, entering with a minus sign:
    :math:`\\eta_t(x) = \\sigma(w_t^\\top x - \\gamma_t)`.
    """

    coef: np.ndarray                   # alpha, (d,)
    intercept: float                   # beta
    reliability_coef: np.ndarray       # w_t, (n_annotators, d)
    reliability_intercept: np.ndarray  # gamma_t, (n_annotators,)

    def flipped(self) -> "LogisticAnnotatorsParams":
        """The same model with the hidden class renamed, :math:`z \\to 1 - z`.

        :math:`P(z = 1 \\mid x)` becomes :math:`\\sigma(-\\alpha^\\top x - \\beta)` and
        :math:`P(y_t = 1 - z \\mid x)` becomes :math:`1 - \\eta_t(x) =
        \\sigma(-w_t^\\top x + \\gamma_t)`: every parameter changes sign, and the
        likelihood of the labels does not change.
        """
        return LogisticAnnotatorsParams(-self.coef, -self.intercept, -self.reliability_coef,
                                        -self.reliability_intercept)

    def penalty(self, l2: float) -> float:
        """:math:`\\frac{\\lambda}{2}` times the squared norm of all parameters."""
        if l2 == 0:
            return 0.0
        sq = (self.coef @ self.coef + self.intercept ** 2 + np.sum(self.reliability_coef ** 2)
              + self.reliability_intercept @ self.reliability_intercept)
        return 0.5 * float(l2) * float(sq)


class _Data(NamedTuple):
    crowd: CrowdLabels
    X: np.ndarray        # (n_items, d)
    X_label: np.ndarray  # (n_labels, d): features of the item of each label
    sign: np.ndarray     # (n_labels,): +1 for label 1, -1 for label 0


def _make_data(crowd: CrowdLabels, X: np.ndarray) -> _Data:
    return _Data(crowd, X, X[crowd.item], 2.0 * crowd.label - 1.0)


def _log_joint(data: _Data, params: LogisticAnnotatorsParams) -> np.ndarray:
    """``log p(z_i = k, labels_i | x_i)`` for ``k = 0, 1``, shape ``(n_items, 2)``."""
    crowd = data.crowd
    n = crowd.n_items
    a = data.X @ params.coef + params.intercept
    # b_r = w_t' x_i - gamma_t for label r of annotator t on item i
    b = (np.einsum("rd,rd->r", data.X_label, params.reliability_coef[crowd.expert])
         - params.reliability_intercept[crowd.expert])
    # log P(y_r | z = 1) = log eta if y_r = 1 else log(1 - eta) = log sigma(sign_r * b_r)
    sb = data.sign * b
    out = np.empty((n, 2))
    out[:, 0] = log_expit(-a) + np.bincount(crowd.item, weights=log_expit(-sb), minlength=n)
    out[:, 1] = log_expit(a) + np.bincount(crowd.item, weights=log_expit(sb), minlength=n)
    return out


"""Largest feature value (in absolute value) the logistic models accept: beyond it,
scores ``w @ x`` overflow or lose all precision for any non-negligible weight, and
EM would not move. Standardise such features first."""


def _read_binary_labels(labels, X: np.ndarray, n_annotators: int | None = None,
                        ids=None) -> CrowdLabels:
    """Labels as binary CrowdLabels whose items are the rows of ``X``; with ``ids``
    (a fitted model's ``(expert_ids_, class_ids_)``) new table ids are mapped onto them."""
    if labels is None:
        raise ValueError("labels is None: pass a CrowdLabels, an (item, annotator, label) "
                         "tuple or an (n_items, n_annotators) matrix with -1 for missing")
    crowd = as_crowd_labels(labels, n_classes=None if isinstance(labels, CrowdLabels) else 2)
    if ids is not None:
        crowd = _reindex_onto(crowd, *ids)
    if crowd.n_labels == 0:
        raise ValueError("labels holds no label at all")
    if crowd.label.max() > 1:
        bad = crowd.label > 1
        raise ValueError(f"labels must be binary (0 or 1), got label {int(crowd.label[bad][0])} "
                         f"at position(s) {_describe_positions(bad)}")
    if n_annotators is not None and crowd.expert.max() >= n_annotators:
        bad = int(crowd.expert.max())
        raise ValueError(f"unknown annotator {bad}: the model was fitted on {n_annotators} "
                         f"annotators (indices 0 to {n_annotators - 1})")
    n_items = crowd.n_items
    if X.shape[0] != n_items:
        if isinstance(labels, tuple) and X.shape[0] > n_items:
            n_items = X.shape[0]  # items beyond the largest index simply have no label
        else:
            raise ValueError(f"X has {X.shape[0]} rows but the labels describe {n_items} items")
    n_experts = crowd.n_experts if n_annotators is None else n_annotators
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, n_items, n_experts, 2,
                       crowd.item_ids, crowd.expert_ids, crowd.class_ids)


def observed_log_likelihood(X, labels, coef, intercept, reliability_coef,
                            reliability_intercept) -> float:
    r"""The observed-data log-likelihood :math:`\ell(\theta)` of the labels given the features.

    .. math::

        \ell(\theta) = \sum_i \log \sum_{z \in \{0, 1\}} p(z \mid x_i)
        \prod_{t \in R_i} \eta_t(x_i)^{1\{y_{it} = z\}} (1 - \eta_t(x_i))^{1\{y_{it} \ne z\}}

    Parameters
    ----------
    X : array-like of shape (n_items, d)
    labels : CrowdLabels, (item, annotator, label) tuple or (n_items, n_annotators) matrix
    coef, intercept, reliability_coef, reliability_intercept
        The parameters, with the conventions of :class:`LogisticAnnotators`.
    """
    X = _check_features(X)
    W = np.atleast_2d(np.asarray(reliability_coef, dtype=float))
    gamma = np.atleast_1d(np.asarray(reliability_intercept, dtype=float))
    crowd = _read_binary_labels(labels, X, n_annotators=W.shape[0])
    params = LogisticAnnotatorsParams(np.asarray(coef, dtype=float), float(intercept), W, gamma)
    _, log_evidence = normalize_log(_log_joint(_make_data(crowd, X), params))
    return float(log_evidence.sum())


class LogisticAnnotators(BaseEstimator):
    r"""A logistic classifier learnt from annotators whose reliability depends on the item.

    Each item :math:`i` has real features :math:`x_i \in \mathbb{R}^d` and a hidden
    binary truth :math:`z_i \in \{0, 1\}` with

    .. math:: p(z_i = 1 \mid x_i) = \sigma(\alpha^\top x_i + \beta).

    Annotator :math:`t` labels it correctly with a probability that depends on
    the item,

    .. math::

        P(y_{it} = z_i \mid x_i, z_i) = \eta_t(x_i) = \sigma(w_t^\top x_i - \gamma_t),
        \qquad P(y_{it} = 1 - z_i \mid x_i, z_i) = 1 - \eta_t(x_i),

    independently of the other annotators given :math:`z_i`. Each item may be
    labelled by any subset :math:`R_i` of the annotators, including none (an
    annotator labelling an item twice counts as two independent draws). The
    features themselves are not modelled: the likelihood is that of the labels
    given the features.

    Parameters
    ----------
    l2 : float, default 1.0
        Ridge penalty :math:`\lambda \ge 0` on *every* parameter (coefficients and
        intercepts of the classifier and of each annotator): the fit maximises
        :math:`F(\theta) = \ell(\theta) - \frac{\lambda}{2}\lVert\theta\rVert^2`,
        i.e. MAP-EM under independent :math:`N(0, 1/\lambda)` priors. The default
        (the strength of scikit-learn's default ``C=1``) changes the estimates
        little once annotators have hundreds of labels, but keeps every M-step
        strictly concave (annotators with few or no labels, collinear features)
        and the parameters finite: with 30 items and ``l2=0`` some
        :math:`\gamma_t` run off to the thousands. Penalising the intercepts too
        keeps :math:`F` invariant under the sign flip below. ``l2=0`` is plain
        maximum likelihood. The penalty depends on the scale of the features:
        standardise them.
    init : "vote" or array-like of shape (n_items,), default "vote"
        Start of run 0: the soft majority vote :math:`P(z_i = 1)` (items without
        labels at 0.5), or the given starting probabilities :math:`P(z_i = 1)`.
    n_init : int, default 1
        Number of EM runs; runs after the first start from :math:`P(z_i = 1)`
        drawn uniformly on :math:`(0, 1)`. The run with the highest objective is kept.
    max_iter : int, default 200
        At most this many M-steps per run.
    tol : float, default 1e-8
        A run stops when the objective rises by at most ``tol * max(1, |objective|)``.
    random_state : None, int or numpy Generator
        Seed for the random restarts.
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step; its
        ``params`` is a :class:`LogisticAnnotatorsParams`. Returning ``True`` stops
        the run.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        :math:`\alpha`, the classifier's weights.
    intercept_ : float
        :math:`\beta`.
    reliability_coef_ : ndarray of shape (n_annotators, n_features)
        :math:`w_t`, row ``t``.
    reliability_intercept_ : ndarray of shape (n_annotators,)
        :math:`\gamma_t`, with the sign convention
        ``eta_t(x) = expit(reliability_coef_[t] @ x - reliability_intercept_[t])``.
    posterior_ : ndarray of shape (n_items, 2)
        :math:`P(z_i = k \mid x_i, \text{labels}_i)` for the training items.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective :math:`F` after every E-step of the best run. Never decreases.
    objective_ : float
        ``log_likelihood_history_[-1]``, the penalised log-likelihood :math:`F`.
    log_likelihood_ : float
        The observed-data log-likelihood :math:`\ell` (without the penalty).
    n_iter_ : int
        M-steps taken by the best run.
    converged_ : bool
    flipped_ : bool
        Whether the best run ended in the mirror-image solution and was flipped
        (see Notes).
    n_items_, n_annotators_, n_features_in_ : int

    Notes
    -----
    Write :math:`\sigma` for the logistic function, :math:`a_i = \alpha^\top x_i + \beta`,
    :math:`b_{it} = w_t^\top x_i - \gamma_t` (so :math:`\eta_t(x_i) = \sigma(b_{it})`),
    and :math:`s_{it} = 2y_{it} - 1 \in \{-1, +1\}`. Then
    :math:`\log P(y_{it} \mid x_i, z_i = 1) = \log\sigma(s_{it} b_{it})` and
    :math:`\log P(y_{it} \mid x_i, z_i = 0) = \log\sigma(-s_{it} b_{it})`.

    **Objective.** The labels of an item are independent *given* :math:`z_i`, so
    the prior :math:`p(z_i \mid x_i)` enters once per item and the sum over
    :math:`z_i` stays outside the product over annotators:

    .. math::

        F(\theta) = \sum_i \log \sum_{z \in \{0,1\}} p(z \mid x_i)
        \prod_{t \in R_i} P(y_{it} \mid x_i, z)
        \;-\; \frac{\lambda}{2}\Big(\lVert\alpha\rVert^2 + \beta^2
        + \sum_t \big(\lVert w_t\rVert^2 + \gamma_t^2\big)\Big).

    **E-step**, in log space:

    .. math::

        \begin{aligned}
        \log \tilde p_i(1) &= \log\sigma(a_i) + \sum_{t \in R_i} \log\sigma(s_{it} b_{it})
        - \log A_i, \\
        \log \tilde p_i(0) &= \log\sigma(-a_i) + \sum_{t \in R_i} \log\sigma(-s_{it} b_{it})
        - \log A_i,
        \end{aligned}

    with :math:`\log A_i` the log-sum-exp of the two (and
    :math:`\ell = \sum_i \log A_i`); write :math:`\mu_i = \tilde p_i(1)`. Since
    :math:`\log\sigma(v) - \log\sigma(-v) = v`, the posterior log-odds are simply
    :math:`\operatorname{logit}\mu_i = a_i + \sum_{t \in R_i} s_{it} b_{it}`.

    **M-step.** The expected complete-data log-likelihood separates:

    .. math::

        \begin{aligned}
        Q(\theta) &= \underbrace{\sum_i \big[\mu_i \log\sigma(a_i)
        + (1 - \mu_i)\log\sigma(-a_i)\big]}_{\text{classifier}} \\
        &\quad + \sum_t \underbrace{\sum_{i \in I_t} \big[c_{it} \log\sigma(b_{it})
        + (1 - c_{it})\log\sigma(-b_{it})\big]}_{\text{annotator } t},
        \end{aligned}

    where :math:`I_t` are the items annotator :math:`t` labelled and
    :math:`c_{it} = \tilde p_i(z_i = y_{it})`, i.e. :math:`\mu_i` if
    :math:`y_{it} = 1` and :math:`1 - \mu_i` if :math:`y_{it} = 0` -- the
    posterior probability that the annotator was right. So the classifier is a
    logistic regression of the soft targets :math:`\mu_i` on :math:`x_i`, and
    annotator :math:`t` is a logistic regression of the soft targets
    :math:`c_{it}` on :math:`x_i` (with intercept :math:`-\gamma_t`), with gradients

    .. math::

        \begin{aligned}
        \nabla_\alpha Q &= \sum_i (\mu_i - \sigma(a_i))\, x_i, &
        \frac{\partial Q}{\partial\beta} &= \sum_i (\mu_i - \sigma(a_i)), \\
        \nabla_{w_t} Q &= \sum_{i \in I_t} (c_{it} - \eta_t(x_i))\, x_i, &
        \frac{\partial Q}{\partial\gamma_t} &= -\sum_{i \in I_t} (c_{it} - \eta_t(x_i)),
        \end{aligned}

    minus :math:`\lambda` times the parameter for the penalty. Each penalised
    problem is concave and is solved by Newton's method from the current
    parameters (all annotators at once), accepting only steps that raise it,
    so :math:`Q - \text{penalty}` never falls and neither does :math:`F`
    (generalised EM).

    **Start.** Run 0 feeds the soft majority vote (or ``init``) to the M-step,
    from all-zero parameters.

    **Sign flip.** Renaming :math:`z \to 1 - z` and negating every parameter
    (``LogisticAnnotatorsParams.flipped``) gives the same :math:`F`: a
    classifier of the opposite class and annotators who are "right" exactly
    when they were wrong. EM can end in either mirror image. After the best
    run, if its posterior agrees with the soft majority vote on fewer than half
    of the labelled items -- :math:`\sum_{i:\,R_i \ne \emptyset}
    [\mu_i v_i + (1 - \mu_i)(1 - v_i)] < \frac12 |\{i: R_i \ne \emptyset\}|`,
    :math:`v_i` the fraction of 1-votes -- the solution is flipped.

    With zero features (``X`` of shape ``(n_items, 0)``) the model is the
    symmetric ("one-coin") Dawid--Skene model with a class prior.

    References
    ----------
    Y. Yan, R. Rosales, G. Fung, M. W. Schmidt, G. H. Valadez, L. Bogoni, L. Moy and
    J. G. Dy, "Modeling annotator expertise: learning when everybody knows a bit of
    something", AISTATS 2010, pp. 932-939.

    M. Alger, "Crowd labelling EM derivation", 2016 (whose E-step and gradients
    are corrected here).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.features.logistic_annotators import LogisticAnnotators
    >>> from crowdlearn.simulate.annotators import simulate_logistic_annotators
    >>> sim = simulate_logistic_annotators(
    ...     3000, coef=[2.0, -1.0], intercept=0.0,
    ...     reliability_coef=[[3.0, 0.0], [-3.0, 0.0], [0.0, 0.0]],
    ...     reliability_intercept=[-1.0, -1.0, -1.0], random_state=0)
    >>> model = LogisticAnnotators().fit(sim.labels, sim.X)
    >>> np.round(model.coef_, 1), model.reliability_coef_.shape
    (array([ 2. , -1.1]), (3, 2))
    >>> float(np.mean(model.predict() == sim.truth)) > 0.9
    True
    >>> model.predict_proba(np.array([[1.0, 0.0]])).round(2)  # the classifier alone
    array([[0.13, 0.87]])
    >>> bool((np.diff(model.log_likelihood_history_) >= 0).all())
    True
    """

    _param_names = ("l2", "init", "n_init", "max_iter", "tol", "random_state", "callback")

    def __init__(self, *, l2: float = 1.0, init="vote", n_init: int = 1, max_iter: int = 200,
                 tol: float = 1e-8, random_state=None, callback=None):
        self.l2 = l2
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.callback = callback

    # -- input -------------------------------------------------------------------------------
    def _check_params(self):
        check_scalar(self.l2, "l2", low=0.0)
        check_em_params(self)
        if isinstance(self.init, str) and self.init != "vote":
            raise ValueError(f"init must be 'vote' or an array of starting probabilities, "
                             f"got {self.init!r}")

    def _start(self, crowd: CrowdLabels) -> np.ndarray:
        if isinstance(self.init, str):
            return _soft_vote(crowd)
        mu = np.asarray(self.init, dtype=float)
        if mu.shape != (crowd.n_items,):
            raise ValueError(f"init must have shape ({crowd.n_items},) (one starting "
                             f"probability per item), got {mu.shape}")
        if not np.isfinite(mu).all() or (mu < 0).any() or (mu > 1).any():
            raise ValueError("init must hold probabilities in [0, 1]")
        return mu

    # -- EM pieces -----------------------------------------------------------------------------
    def _e_step(self, data: _Data, params: LogisticAnnotatorsParams):
        q, log_evidence = normalize_log(_log_joint(data, params))
        return q, float(log_evidence.sum()) - params.penalty(self.l2)

    def _m_step(self, data: _Data, q: np.ndarray,
                start: LogisticAnnotatorsParams) -> LogisticAnnotatorsParams:
        crowd, l2 = data.crowd, float(self.l2)
        mu = q[:, 1]
        clf = fit_weighted_logistic(data.X, mu, l2=l2, coef_init=start.coef,
                                    intercept_init=start.intercept)
        # "annotator t was right": c = mu if the label is 1, 1 - mu if it is 0
        right = np.where(crowd.label == 1, mu[crowd.item], 1.0 - mu[crowd.item])
        ann = fit_weighted_logistic(data.X_label, right, l2=l2, groups=crowd.expert,
                                    n_groups=crowd.n_experts,
                                    coef_init=start.reliability_coef,
                                    intercept_init=-start.reliability_intercept)
        return LogisticAnnotatorsParams(clf.coef, clf.intercept, ann.coef, -ann.intercept)

    # -- public API ------------------------------------------------------------------------------
    def fit(self, labels, X):
        """Fit the classifier and the annotators' reliabilities by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, annotator, label) tuple, or (n_items, n_annotators) matrix
            Binary labels (0/1); in a matrix ``-1`` marks a missing label. With
            triples, ``X`` may have more rows than the largest item index: the
            extra items have no label.
        X : array-like of shape (n_items, n_features)
            Real-valued features of the items (no NaN or inf).

        Returns
        -------
        self
        """
        self._check_params()
        X = _check_features(features_by_task(labels, X))
        crowd = _read_binary_labels(labels, X)
        self.expert_ids_, self.class_ids_ = crowd.expert_ids, crowd.class_ids
        data = _make_data(crowd, X)
        n, d, T = crowd.n_items, X.shape[1], crowd.n_experts
        mu0 = self._start(crowd)
        rng = check_random_state(self.random_state)
        zero = LogisticAnnotatorsParams(np.zeros(d), 0.0, np.zeros((T, d)), np.zeros(T))
        def init(restart):
            mu = mu0 if restart == 0 else rng.random(n)
            return self._m_step(data, np.column_stack([1.0 - mu, mu]), zero)

        # warm_start: each M-step's Newton iterations start at the current parameters
        result = fit_em(init, lambda params: self._e_step(data, params),
                        lambda q, params: self._m_step(data, q, params),
                        n_init=self.n_init, tol=self.tol, max_iter=self.max_iter,
                        callback=self.callback, estimator_name=type(self).__name__,
                        warm_start=True)
        params, posterior, self.flipped_ = _orient_by_vote(crowd, result.params,
                                                           result.posterior)
        self._params = params
        self.coef_ = params.coef
        self.intercept_ = float(params.intercept)
        self.reliability_coef_ = params.reliability_coef
        self.reliability_intercept_ = params.reliability_intercept
        self.posterior_ = posterior
        self.log_likelihood_history_ = result.history
        self.objective_ = result.objective
        self.log_likelihood_ = result.objective + params.penalty(self.l2)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.n_items_, self.n_annotators_, self.n_features_in_ = n, T, d
        return self

    def reliability(self, X) -> np.ndarray:
        r"""Probability that each annotator labels each item correctly, :math:`\eta_t(x_i)`.

        Returns
        -------
        ndarray of shape (n_items, n_annotators)
        """
        self._check_fitted()
        X = _check_features(X, n_features=self.n_features_in_)
        return expit(X @ self.reliability_coef_.T - self.reliability_intercept_)

    def predict_proba(self, X=None, labels=None) -> np.ndarray:
        """Class probabilities, shape ``(n_items, 2)``.

        Parameters
        ----------
        X : array-like of shape (n_new_items, n_features), optional
            Features of new items. Without ``labels``, the classifier alone:
            :math:`[1 - \\sigma(\\alpha^\\top x + \\beta), \\sigma(\\alpha^\\top x + \\beta)]`.
            With neither argument, the training posterior ``posterior_``.
        labels : labels of the new items, optional
            Any form ``fit`` accepts, from annotators seen in ``fit``; then the
            posterior :math:`P(z \\mid x, \\text{labels})` under the fitted parameters.
        """
        self._check_fitted()
        if X is None:
            if labels is not None:
                raise ValueError("labels of new items need their features X")
            return self.posterior_.copy()
        X = _check_features(X, n_features=self.n_features_in_)
        if labels is None:
            a = X @ self.coef_ + self.intercept_
            return np.column_stack([expit(-a), expit(a)])
        crowd = _read_binary_labels(labels, X, n_annotators=self.n_annotators_,
                                    ids=self._fitted_ids())
        q, _ = normalize_log(_log_joint(_make_data(crowd, X), self._params))
        return q

    def _fitted_ids(self):
        return getattr(self, "expert_ids_", None), getattr(self, "class_ids_", None)

    def predict(self, X=None, labels=None) -> np.ndarray:
        """Most probable class (as in :meth:`predict_proba`)."""
        return np.argmax(self.predict_proba(X, labels), axis=1)

    def observed_log_likelihood(self, labels, X) -> float:
        r""":math:`\ell(\hat\theta)`, the log-likelihood of ``labels`` given ``X`` at the fitted
        parameters (labels from the annotators seen in ``fit``)."""
        self._check_fitted()
        X = _check_features(X, n_features=self.n_features_in_)
        crowd = _read_binary_labels(labels, X, n_annotators=self.n_annotators_,
                                    ids=self._fitted_ids())
        _, log_evidence = normalize_log(_log_joint(_make_data(crowd, X), self._params))
        return float(log_evidence.sum())

    def objective(self, labels, X) -> float:
        r""":math:`F(\hat\theta) = \ell(\hat\theta) - \frac{\lambda}{2}\lVert\hat\theta\rVert^2`,
        the penalised objective EM maximises."""
        return self.observed_log_likelihood(labels, X) - self._params.penalty(self.l2)

    def fit_predict(self, labels, X) -> np.ndarray:
        """Fit, then return the most probable class of each training item."""
        return self.fit(labels, X).predict()


