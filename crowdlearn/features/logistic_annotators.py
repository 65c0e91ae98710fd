r"""Annotators whose reliability depends on the item: a logistic classifier learnt from a crowd.

The model of Yan et al. (2010) for binary labels, fitted by EM whose M-step is a
set of weighted logistic regressions with soft targets (solved by Newton's
method in :mod:`crowdlearn._solvers.logistic`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit

from crowdlearn._base import normalize_log
from crowdlearn._solvers.logistic import fit_weighted_logistic
from crowdlearn._validation import (as_float_array, check_em_params, check_finite_array,
                                    check_random_state, check_scalar)
from crowdlearn.labels import CrowdLabels
from crowdlearn.features._binary import (_BinaryFeatureModel, _binary_log_joint,
                                         _check_features, _read_input, _right_targets)

__all__ = ["LogisticAnnotators", "LogisticAnnotatorsParams", "observed_log_likelihood"]


class LogisticAnnotatorsParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``).

    ``coef`` is :math:`\\beta`, ``intercept`` :math:`\\beta_0`, ``reliability_coef`` row
    :math:`r` is :math:`w_r`, and ``reliability_intercept`` is :math:`\\gamma_r`, entering with
    a minus sign: :math:`\\eta_r(x) = \\sigma(w_r^\\top x - \\gamma_r)`.
    """

    coef: np.ndarray                   # beta, (k,)
    intercept: float                   # beta_0
    reliability_coef: np.ndarray       # w_r, (n_annotators, k)
    reliability_intercept: np.ndarray  # gamma_r, (n_annotators,)

    def flipped(self) -> "LogisticAnnotatorsParams":
        """The same model with the hidden class renamed, :math:`y \\to 1 - y`.

        :math:`P(y = 1 \\mid x)` becomes :math:`\\sigma(-\\beta_0 - \\beta^\\top x)` and
        :math:`P(y_r = 1 - y \\mid x)` becomes :math:`1 - \\eta_r(x) =
        \\sigma(-w_r^\\top x + \\gamma_r)`: every parameter changes sign, and the
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


def _make_data(crowd: CrowdLabels, X: np.ndarray) -> _Data:
    return _Data(crowd, X, X[crowd.item])


def _log_joint(data: _Data, params: LogisticAnnotatorsParams) -> np.ndarray:
    """``log P(y^(i) = y, labels of i | x^(i))`` for ``y = 0, 1``, shape ``(n_items, 2)``."""
    crowd = data.crowd
    # b_ir = w_r' x^(i) - gamma_r for each label (annotator r on item i): annotator r is
    # right with probability sigma(b_ir)
    b = (np.einsum("rd,rd->r", data.X_label, params.reliability_coef[crowd.expert])
         - params.reliability_intercept[crowd.expert])
    return _binary_log_joint(crowd, data.X @ params.coef + params.intercept, b)


def observed_log_likelihood(X, labels, coef, intercept, reliability_coef,
                            reliability_intercept) -> float:
    r"""The observed-data log-likelihood :math:`\ell(\theta)` of the labels given the features.

    .. math::

        \ell(\theta) = \sum_i \log \sum_{y \in \{0, 1\}} P(y \mid x^{(i)})
        \prod_{r \in R_i} \eta_r(x^{(i)})^{1\{y^{(i)}_r = y\}}
        (1 - \eta_r(x^{(i)}))^{1\{y^{(i)}_r \ne y\}}

    Parameters
    ----------
    X : array-like of shape (n_items, k)
    labels : CrowdLabels, (item, annotator, label) tuple or (n_items, n_annotators) matrix
    coef, intercept, reliability_coef, reliability_intercept
        The parameters, with the conventions of :class:`LogisticAnnotators`.
    """
    W = np.atleast_2d(as_float_array(reliability_coef, "reliability_coef"))
    gamma = np.atleast_1d(as_float_array(reliability_intercept, "reliability_intercept"))
    crowd, X = _read_input(labels, X, n_experts=W.shape[0], who="annotator")
    d, K = X.shape[1], W.shape[0]
    params = LogisticAnnotatorsParams(
        check_finite_array(coef, "coef", shape=(d,)),
        float(check_finite_array(intercept, "intercept", shape=())),
        check_finite_array(W, "reliability_coef", shape=(K, d)),
        check_finite_array(gamma, "reliability_intercept", shape=(K,)))
    _, log_evidence = normalize_log(_log_joint(_make_data(crowd, X), params))
    return float(log_evidence.sum())


class LogisticAnnotators(_BinaryFeatureModel):
    r"""A logistic classifier learnt from annotators whose reliability depends on the item.

    Each item :math:`i` has real features :math:`x^{(i)} \in \mathbb{R}^k` and a hidden
    binary truth :math:`y^{(i)} \in \{0, 1\}` with

    .. math:: P(y^{(i)} = 1 \mid x^{(i)}) = \sigma(\beta_0 + \beta^\top x^{(i)}).

    Annotator :math:`r` labels it correctly with a probability that depends on
    the item,

    .. math::

        \begin{aligned}
        P(y^{(i)}_r = y^{(i)} \mid x^{(i)}, y^{(i)}) &= \eta_r(x^{(i)})
        = \sigma(w_r^\top x^{(i)} - \gamma_r),
        \\
        P(y^{(i)}_r = 1 - y^{(i)} \mid x^{(i)}, y^{(i)}) &= 1 - \eta_r(x^{(i)}),
        \end{aligned}

    independently of the other annotators given :math:`y^{(i)}`. Each item may be
    labelled by any subset :math:`R_i` of the annotators, including none (an
    annotator labelling an item twice counts as two independent draws). The
    features themselves are not modelled: the likelihood is that of the labels
    given the features.

    Parameters
    ----------
    l2 : float, default 1.0
        Ridge penalty :math:`\lambda \ge 0` on *every* parameter (coefficients and
        intercepts of the classifier and of each annotator): the fit maximises
        :math:`J(\theta) = \ell(\theta) - \frac{\lambda}{2}\lVert\theta\rVert^2`,
        i.e. MAP-EM under independent :math:`N(0, 1/\lambda)` priors. The default
        (the strength of scikit-learn's default ``C=1``) changes the estimates
        little once annotators have hundreds of labels, but keeps every M-step
        strictly concave (annotators with few or no labels, collinear features)
        and the parameters finite: with 30 items and ``l2=0`` some
        :math:`\gamma_r` run off to the thousands. Penalising the intercepts too
        keeps :math:`J` invariant under the sign flip below. ``l2=0`` is plain
        maximum likelihood. The penalty depends on the scale of the features:
        standardise them.
    init : "vote", array-like of shape (n_items,) or LogisticAnnotatorsParams, default "vote"
        Start of run 0: an M-step on the soft majority vote :math:`P(y^{(i)} = 1)`
        (items without labels at 0.5) or on the given starting probabilities
        :math:`P(y^{(i)} = 1)`; or the given parameters (a warm start, e.g. from
        ``LogisticAnnotatorsParams(m.coef_, m.intercept_, m.reliability_coef_,
        m.reliability_intercept_)`` of a fitted model ``m``; run 1, if any, then
        starts from the vote).
    n_init : int, default 1
        Number of EM runs; runs after the first (and after the vote's, when ``init``
        is parameters) start from :math:`P(y^{(i)} = 1)` drawn uniformly on :math:`(0, 1)`.
        The run with the highest objective is kept.
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
        :math:`\beta`, the classifier's weights.
    intercept_ : float
        :math:`\beta_0`.
    reliability_coef_ : ndarray of shape (n_annotators, n_features)
        :math:`w_r`, row ``r``.
    reliability_intercept_ : ndarray of shape (n_annotators,)
        :math:`\gamma_r`, with the sign convention
        ``eta_r(x) = expit(reliability_coef_[r] @ x - reliability_intercept_[r])``.
    posterior_ : ndarray of shape (n_items, 2)
        :math:`Q_i(y) = P(y^{(i)} = y \mid x^{(i)}, \text{labels of } i)` for the training
        items; :math:`\mu_i = Q_i(1)` is ``posterior_[i, 1]``.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective :math:`J` after every E-step of the best run. Never decreases.
    objective_ : float
        ``log_likelihood_history_[-1]``, the penalised log-likelihood :math:`J`.
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
    Write :math:`\sigma` for the logistic function, :math:`a_i = \beta_0 + \beta^\top x^{(i)}`,
    :math:`b_{ir} = w_r^\top x^{(i)} - \gamma_r` (so :math:`\eta_r(x^{(i)}) = \sigma(b_{ir})`),
    and :math:`s_{ir} = 2y^{(i)}_r - 1 \in \{-1, +1\}`. Then
    :math:`\log P(y^{(i)}_r \mid x^{(i)}, y^{(i)} = 1) = \log\sigma(s_{ir} b_{ir})` and
    :math:`\log P(y^{(i)}_r \mid x^{(i)}, y^{(i)} = 0) = \log\sigma(-s_{ir} b_{ir})`.

    **Objective.** The labels of an item are independent *given* :math:`y^{(i)}`, so
    the prior :math:`P(y^{(i)} \mid x^{(i)})` enters once per item and the sum over
    :math:`y^{(i)}` stays outside the product over annotators:

    .. math::

        \begin{aligned}
        J(\theta) = {}& \sum_i \log \sum_{y \in \{0,1\}} P(y \mid x^{(i)})
        \prod_{r \in R_i} P(y^{(i)}_r \mid x^{(i)}, y)
        \\
        & - \frac{\lambda}{2}\Big(\beta_0^2 + \lVert\beta\rVert^2
        + \sum_r \big(\lVert w_r\rVert^2 + \gamma_r^2\big)\Big).
        \end{aligned}

    **E-step**, in log space:

    .. math::

        \begin{aligned}
        \log Q_i(1) &= \log\sigma(a_i) + \sum_{r \in R_i} \log\sigma(s_{ir} b_{ir})
        - \log Z_i, \\
        \log Q_i(0) &= \log\sigma(-a_i) + \sum_{r \in R_i} \log\sigma(-s_{ir} b_{ir})
        - \log Z_i,
        \end{aligned}

    with :math:`\log Z_i` the log-sum-exp of the two (and
    :math:`\ell = \sum_i \log Z_i`); write :math:`\mu_i = Q_i(1)`. Since
    :math:`\log\sigma(v) - \log\sigma(-v) = v`, the posterior log-odds are simply
    :math:`\operatorname{logit}\mu_i = a_i + \sum_{r \in R_i} s_{ir} b_{ir}`.

    **M-step.** The expected complete-data log-likelihood separates:

    .. math::

        \begin{aligned}
        E(\theta; Q) &= \underbrace{\sum_i \big[\mu_i \log\sigma(a_i)
        + (1 - \mu_i)\log\sigma(-a_i)\big]}_{\text{classifier}} \\
        &\quad + \sum_r \underbrace{\sum_{i \in I_r} \big[c_{ir} \log\sigma(b_{ir})
        + (1 - c_{ir})\log\sigma(-b_{ir})\big]}_{\text{annotator } r},
        \end{aligned}

    where :math:`I_r` are the items annotator :math:`r` labelled and
    :math:`c_{ir} = Q_i(y^{(i)}_r)`, i.e. :math:`\mu_i` if
    :math:`y^{(i)}_r = 1` and :math:`1 - \mu_i` if :math:`y^{(i)}_r = 0` -- the
    posterior probability that the annotator was right. So the classifier is a
    logistic regression of the soft targets :math:`\mu_i` on :math:`x^{(i)}`, and
    annotator :math:`r` is a logistic regression of the soft targets
    :math:`c_{ir}` on :math:`x^{(i)}` (with intercept :math:`-\gamma_r`), with gradients

    .. math::

        \begin{aligned}
        \nabla_\beta E &= \sum_i (\mu_i - \sigma(a_i))\, x^{(i)}, &
        \frac{\partial E}{\partial\beta_0} &= \sum_i (\mu_i - \sigma(a_i)), \\
        \nabla_{w_r} E &= \sum_{i \in I_r} (c_{ir} - \eta_r(x^{(i)}))\, x^{(i)}, &
        \frac{\partial E}{\partial\gamma_r} &= -\sum_{i \in I_r} (c_{ir} - \eta_r(x^{(i)})),
        \end{aligned}

    minus :math:`\lambda` times the parameter for the penalty. Each penalised
    problem is concave and is solved by Newton's method from the current
    parameters (all annotators at once), accepting only steps that raise it,
    so :math:`E - \text{penalty}` never falls and neither does :math:`J`
    (generalised EM).

    **Start.** Run 0 feeds the soft majority vote (or ``init``) to the M-step,
    from all-zero parameters.

    **Sign flip.** Renaming :math:`y \to 1 - y` and negating every parameter
    (``LogisticAnnotatorsParams.flipped``) gives the same :math:`J`: a
    classifier of the opposite class and annotators who are "right" exactly
    when they were wrong. EM can end in either mirror image. After the best
    run, if its posterior agrees with the soft majority vote on fewer than half
    of the labelled items -- :math:`\sum_{i:\,R_i \ne \emptyset}
    [\mu_i v_{i1} + (1 - \mu_i) v_{i0}] / |R_i| < \frac12 |\{i: R_i \ne \emptyset\}|`,
    with :math:`v_{i1}` and :math:`v_{i0}` the item's 1-votes and 0-votes -- the solution
    is flipped.

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
    >>> model.predict_proba(X=np.array([[1.0, 0.0]])).round(2)  # the classifier alone
    array([[0.13, 0.87]])
    >>> bool((np.diff(model.log_likelihood_history_) >= 0).all())
    True
    """

    def __init__(self, *, l2: float = 1.0, init="vote", n_init: int = 1, max_iter: int = 200,
                 tol: float = 1e-8, random_state=None, callback=None):
        self._store_params(locals())

    _who, _n_labellers, _params_type = "annotator", "n_annotators_", LogisticAnnotatorsParams

    # -- input -------------------------------------------------------------------------------
    def _check_params(self):
        check_scalar(self.l2, "l2", low=0.0)
        check_em_params(self)
        self._check_init(takes_params=True)

    # -- EM pieces -----------------------------------------------------------------------------
    _make_data = staticmethod(_make_data)
    _log_joint = staticmethod(_log_joint)

    def _penalty(self, params: LogisticAnnotatorsParams) -> float:
        return params.penalty(self.l2)

    def _m_step(self, data: _Data, q: np.ndarray,
                start: LogisticAnnotatorsParams) -> LogisticAnnotatorsParams:
        crowd, l2 = data.crowd, float(self.l2)
        mu = q[:, 1]
        clf = fit_weighted_logistic(data.X, mu, l2=l2, coef_init=start.coef,
                                    intercept_init=start.intercept)
        # soft target "annotator t was right"
        ann = fit_weighted_logistic(data.X_label, _right_targets(crowd, mu), l2=l2,
                                    groups=crowd.expert, n_groups=crowd.n_experts,
                                    coef_init=start.reliability_coef,
                                    intercept_init=-start.reliability_intercept)
        return LogisticAnnotatorsParams(clf.coef, clf.intercept, ann.coef, -ann.intercept)

    # -- public API ------------------------------------------------------------------------------
    def fit(self, labels, X):
        """Fit the classifier and the annotators' reliabilities by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, annotator, label) tuple, (n_items, n_annotators) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``.
            Binary labels (0/1); in a matrix ``-1`` marks a missing label. With
            triples, ``X`` may have more rows than the largest item index: the
            extra items have no label.
        X : array-like of shape (n_items, n_features)
            Real-valued features of the items (no NaN or inf); with a DataFrame of
            labels, a DataFrame indexed by task id.

        Returns
        -------
        self
        """
        crowd, data, mu0 = self._read_fit_input(labels, X)
        n, d, T = crowd.n_items, data.X.shape[1], crowd.n_experts
        rng = check_random_state(self.random_state)
        zero = LogisticAnnotatorsParams(np.zeros(d), 0.0, np.zeros((T, d)), np.zeros(T))
        warm = self._start_params(crowd, d)

        def init(restart):
            if warm is not None:
                if restart == 0:
                    return warm
                restart -= 1  # then the vote, then random starts
            mu = mu0 if restart == 0 else rng.random(n)
            return self._m_step(data, np.column_stack([1.0 - mu, mu]), zero)

        params = self._keep_oriented(crowd, self._run_em(data, init))
        self.reliability_coef_ = params.reliability_coef
        self.reliability_intercept_ = params.reliability_intercept
        self.n_items_, self.n_annotators_, self.n_features_in_ = n, T, d
        return self

    def _param_shapes(self, d: int, n_labellers: int) -> dict:
        return {"coef": (d,), "intercept": (), "reliability_coef": (n_labellers, d),
                "reliability_intercept": (n_labellers,)}

    def reliability(self, X) -> np.ndarray:
        r"""Probability that each annotator labels each item correctly, :math:`\eta_r(x^{(i)})`.

        Returns
        -------
        ndarray of shape (n_items, n_annotators)
        """
        self._check_fitted()
        X = _check_features(X, n_features=self.n_features_in_)
        return expit(X @ self.reliability_coef_.T - self.reliability_intercept_)
