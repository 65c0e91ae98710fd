r"""Many experts with a shared, sparse reliability model: L1-penalised MAP-EM.

The model of Izbicki and Stern (2013, section 3): a logistic classifier for the
hidden truth, and experts who err with a probability that depends on the item
through an expert-specific intercept :math:`\alpha_r` and a slope :math:`w`
shared by all experts (the paper's ``gamma``). An L1 penalty on
:math:`\beta` and :math:`w` makes the fit sparse; EM's M-step is then two weighted
L1-penalised logistic regressions (``crowdlearn.solvers``). Notation as in the
book's notation page: items :math:`i`, experts :math:`r = 1, \dots, R`, features
:math:`j = 1, \dots, k`.

* :class:`SparseExpertsEM` -- the estimator.
* :func:`sparse_experts_path` (or :meth:`SparseExpertsEM.path`) -- a decreasing
  sequence of penalties with warm starts.
* :func:`sparse_experts_lambda_max` -- the smallest penalty giving
  :math:`\beta = w = 0`.
* :class:`MajorityVoteLogistic` -- the paper's "Majority" competitor: an
  L1-penalised logistic regression on the majority-vote labels.
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from crowdlearn._base import BaseEstimator, break_ties, normalize_log, reissue_warnings
from crowdlearn._solvers.l1_logistic import (_PreparedProblem, fit_l1_logistic,
                                             l1_logistic_lambda_max)
from crowdlearn._progress import ProgressBar
from crowdlearn._validation import (as_float_array, check_em_params, check_random_state,
                                    check_bool, check_flag, check_scalar)
from crowdlearn.exceptions import ConvergenceWarning
from crowdlearn.labels import CrowdLabels
from crowdlearn.features._binary import (_BinaryFeatureModel, _binary_log_joint,
                                         _check_features, _classifier_proba, _read_input,
                                         _right_targets, _soft_vote)

__all__ = ["SparseExpertsEM", "SparseExpertsParams", "SparseExpertsPath",
           "sparse_experts_path", "sparse_experts_lambda_max", "MajorityVoteLogistic"]


class SparseExpertsParams(NamedTuple):
    r"""The parameters EM iterates on (what a callback sees as ``state.params``).

    :math:`P(y = 1 \mid x) = \sigma(\beta_0 + \beta^\top x)` and expert :math:`r` is
    right with probability :math:`\sigma(\alpha_r + w^\top x)`.
    """

    coef: np.ndarray              # beta, (k,)
    intercept: float              # beta_0
    expert_intercept: np.ndarray  # alpha, (R,)
    reliability_coef: np.ndarray  # w, (k,)

    def flipped(self) -> "SparseExpertsParams":
        r"""The mirror-image parameters :math:`-\theta`: the hidden class renamed
        :math:`y \to 1 - y`, every expert right exactly where it was wrong. Same
        likelihood, same penalty."""
        return SparseExpertsParams(-self.coef, -self.intercept, -self.expert_intercept,
                                   -self.reliability_coef)

    def penalty(self, lam: float, lam_reliability: float, expert_prior: float = 0.0) -> float:
        r""":math:`\lambda\lVert\beta\rVert_1 + \lambda_w\lVert w\rVert_1`,
        minus :math:`c\sum_r[\log\sigma(\alpha_r) + \log\sigma(-\alpha_r)]` (the log of a
        Beta(c, c) prior on each expert's accuracy :math:`\sigma(\alpha_r)`, up to a
        constant) when ``expert_prior`` :math:`c > 0`."""
        out = float(lam * np.abs(self.coef).sum()
                    + lam_reliability * np.abs(self.reliability_coef).sum())
        if expert_prior:
            alpha = np.asarray(self.expert_intercept, dtype=float)
            out -= float(expert_prior * (log_expit(alpha) + log_expit(-alpha)).sum())
        return out


class _Data(NamedTuple):
    crowd: CrowdLabels
    X: np.ndarray  # (n_items, k): row i is x^(i)
    m_step_problems: dict | None = None  # expert prior -> _m_step_problems(...), filled in


def _new_data(crowd: CrowdLabels, X: np.ndarray) -> _Data:
    """The data of one fit, with room for its M-step problems (prepared at the first)."""
    return _Data(crowd, X, {})


def _m_step_problems(data: _Data, prior: float):
    """The fixed parts of the two problems of every M-step, (a) and (b) of
    :class:`SparseExpertsEM`'s Notes, as :class:`~crowdlearn._solvers.l1_logistic._PreparedProblem`:
    the features, the rows and intercept groups of the labels and the weights do not change
    from one M-step to the next, only the targets and the starts. Kept in ``data`` (one
    pair per expert prior) when it has room for them."""
    cache = data.m_step_problems
    if cache is not None and prior in cache:
        return cache[prior]
    crowd, X = data.crowd, data.X
    K = crowd.n_experts
    X_rel, rows, groups, weight = X, crowd.item, crowd.expert, None
    if prior > 0:
        # the Beta(c, c) prior as pseudo-labels: per expert, weight 2c on a featureless
        # item (an extra all-zero row of X) with target 1/2, i.e. c right and c wrong
        X_rel = np.vstack([X, np.zeros((1, X.shape[1]))])
        rows = np.concatenate([crowd.item, np.full(K, crowd.n_items)])
        groups = np.concatenate([crowd.expert, np.arange(K)])
        weight = np.concatenate([np.ones(crowd.n_labels), np.full(K, 2.0 * prior)])
    problems = (_PreparedProblem(X),
                _PreparedProblem(X_rel, weight, rows=rows, intercept_groups=groups,
                                 n_intercepts=K))
    if cache is not None:
        cache[prior] = problems
    return problems


def _log_joint(data: _Data, p: SparseExpertsParams) -> np.ndarray:
    """``log p(y_i = n, labels_i | x_i)`` for ``n = 0, 1``, shape ``(n_items, 2)``."""
    crowd = data.crowd
    # expert r is right on item i with probability sigma(b_ir), b_ir = alpha_r + w'x^(i) (eta)
    eta = p.expert_intercept[crowd.expert] + (data.X @ p.reliability_coef)[crowd.item]
    return _binary_log_joint(crowd, data.X @ p.coef + p.intercept, eta)


def _flat_params(d: int, K: int):
    """``(flatten, unflatten)`` of SparseExpertsParams as one vector, for SQUAREM."""

    def flatten(p: SparseExpertsParams) -> np.ndarray:
        return np.concatenate([p.coef, [p.intercept], p.expert_intercept, p.reliability_coef])

    def unflatten(v: np.ndarray) -> SparseExpertsParams:
        return SparseExpertsParams(v[:d].copy(), float(v[d]), v[d + 1:d + 1 + K].copy(),
                                   v[d + 1 + K:].copy())

    return flatten, unflatten


def _limit_objective(model, data: _Data, params: SparseExpertsParams, k: int) -> float:
    """J with expert k's intercept sent to +inf (or -inf if it is negative), all else held;
    -inf with an expert prior."""
    lam, lam_rel, prior = model._lams
    if prior > 0:
        return float("-inf")
    alpha = params.expert_intercept.copy()
    alpha[k] = np.inf if alpha[k] >= 0 else -np.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        _, log_ev = normalize_log(_log_joint(data, params._replace(expert_intercept=alpha)))
    return float(log_ev.sum()) - params.penalty(lam, lam_rel)


def _diverging_experts(model, data: _Data, params: SparseExpertsParams, objective: float,
                       slack: float) -> np.ndarray:
    """Experts along whose intercept J rises (or stays level) all the way to infinity."""
    return np.asarray([k for k in range(params.expert_intercept.shape[0])
                       if _limit_objective(model, data, params, k) >= objective - slack],
                      dtype=np.intp)


class SparseExpertsEM(_BinaryFeatureModel):
    r"""A sparse logistic classifier learnt from experts whose reliability depends on the item.

    Each item :math:`i` has features :math:`x^{(i)} \in \mathbb{R}^k` and a hidden
    truth :math:`y^{(i)} \in \{0, 1\}`; expert :math:`r` labels it :math:`y^{(i)}_r`:

    .. math::

        \begin{aligned}
        \pi_i = P(y^{(i)} = 1 \mid x^{(i)}) &= \sigma(a_i), \quad
        a_i = \beta_0 + \beta^\top x^{(i)}, \\
        P(y^{(i)}_r \ne y^{(i)} \mid y^{(i)}, x^{(i)}) &= \frac{1}{1 + e^{b_{ir}}}
        = \sigma(-b_{ir}), \\
        b_{ir} &= \alpha_r + w^\top x^{(i)},
        \end{aligned}

    labels independent given :math:`(y^{(i)}, x^{(i)})`. The intercept :math:`\alpha_r`
    is the expert's own (higher is better); the shared slope :math:`w` (the paper's
    ``gamma``) says how each feature makes items easier or harder for *all*
    experts. Each item may be labelled by any subset :math:`R_i` of the experts (or
    none). The fit maximises the penalised log-likelihood (a MAP estimate under
    Laplace priors)

    .. math::

        J(\theta) = \ell(\theta) - \lambda\lVert\beta\rVert_1
        - \lambda_w\lVert w\rVert_1,

    with :math:`\lambda_w = \lambda` unless ``lam_reliability`` is given;
    :math:`\beta_0` and :math:`\alpha` are not penalised.

    Parameters
    ----------
    lam : float, default 1.0
        :math:`\lambda \ge 0`, the L1 penalty on :math:`\beta` (and on :math:`w`
        unless ``lam_reliability`` is set). It acts on the summed log-likelihood,
        so its scale grows with the number of items; it depends on the scale of
        the features: standardise them. ``lam=0`` is plain maximum likelihood.
    lam_reliability : float, optional
        A separate penalty :math:`\lambda_w` on :math:`w` (the paper uses
        one penalty for both and suggests two as an improvement).
    expert_prior : float, default 0.0
        :math:`c \ge 0`: a Beta(c, c) prior on each expert's baseline accuracy
        :math:`\sigma(\alpha_r)`, which adds :math:`c[\log\sigma(\alpha_r) +
        \log\sigma(-\alpha_r)]` to :math:`J` (the density of :math:`\alpha_r` when
        :math:`\sigma(\alpha_r) \sim \mathrm{Beta}(c, c)`): as if every expert had
        also labelled :math:`c` featureless items right and :math:`c` wrong. With
        ``c = 0`` (the paper's model) a strong penalty can make :math:`J` rise without
        bound as one expert's :math:`\alpha_r \to \infty` (that expert is then taken
        as infallible and the posterior copies its labels); any ``c > 0`` keeps every
        :math:`\alpha_r` finite. ``c = 1`` is the uniform prior on the accuracy.
    init : "vote", array-like of shape (n_items,) or SparseExpertsParams, default "vote"
        Start of run 0: an M-step on the soft majority vote :math:`P(y^{(i)} = 1)`
        (items without labels at 0.5), on given starting probabilities, or the
        given parameters (a warm start, as used along a penalty path; run 1, if
        any, then starts from the majority vote).
    n_init : int, default 1
        Number of EM runs. The other runs start as in the paper (section 4):
        :math:`\beta_0, \beta` Gaussian around the vote start (the L1 logistic
        regression on the soft vote), :math:`\alpha, w` Gaussian around zero,
        all with standard deviation ``init_scale``. The best penalised objective wins.
    init_scale : float, default 1.0
        Standard deviation of the random starts.
    max_iter : int, default 200
        At most this many M-steps per run.
    tol : float, default 1e-7
        A run stops when :math:`J` rises by at most ``tol * max(1, |J|)``.
    m_step_tol : float, default 1e-9
        KKT tolerance of each M-step's L1 logistic regression (relative to its
        total weight, see :func:`crowdlearn.solvers.fit_l1_logistic`).
    m_step_max_iter : int, default 50
        Proximal Newton iterations per M-step problem.
    accelerate : bool, default False
        Run SQUAREM (see :func:`crowdlearn.run_em`) instead of plain EM: the same
        fixed points and the same never-decreasing objective, reached in several times
        fewer M-steps when EM is slow (weak experts, strong penalties). The history then
        holds one entry per SQUAREM cycle.
    random_state : None, int or numpy Generator
        Seed for the random restarts.
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step; its
        ``params`` is a :class:`SparseExpertsParams`. Returning ``True`` stops the run.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        :math:`\beta`.
    intercept_ : float
        :math:`\beta_0`.
    expert_intercept_ : ndarray of shape (n_experts,)
        :math:`\alpha`.
    reliability_coef_ : ndarray of shape (n_features,)
        :math:`w`, the shared slope.
    posterior_ : ndarray of shape (n_items, 2)
        :math:`Q_i(n) = P(y^{(i)} = n \mid x^{(i)}, \text{labels}_i)` for the training
        items; column 1 is :math:`\mu_i`.
    objective_history_ : ndarray of shape (``n_iter_`` + 1,)
        The *penalised* objective :math:`J` after every E-step of the best run
        (never decreases).
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The same array as ``objective_history_`` (the name the other models use;
        here it holds the penalised log-likelihood :math:`J`, not :math:`\ell`).
    objective_ : float
        :math:`J` at the fitted parameters (the last entry of the history).
    log_likelihood_ : float
        :math:`\ell`, the observed-data log-likelihood without the penalty.
    all_objectives_ : ndarray of shape (n_init,)
        Final :math:`J` of every run.
    n_iter_ : int
    flat_optimum_ : bool
        Whether the best run, with ``accelerate=True``, ended on a flat optimum: its last
        SQUAREM cycle moved a posterior probability by more than 0.05 while the objective
        rose by at most ``tol`` (a ``DegenerateFitWarning`` says so too; see
        :func:`~crowdlearn.run_em`). Always False without ``accelerate``.
    converged_ : bool
        Whether the stopping rule was met. Check ``diverging_experts_`` too: a run
        whose :math:`J` creeps towards a supremum at infinity also stops, once its
        gains fall below ``tol``.
    diverging_experts_ : ndarray of int
        The experts :math:`r` (0-based) for which :math:`J` at the fit is no higher (within
        ``tol``) than its limit as :math:`\alpha_r \to \pm\infty` (sign of :math:`\alpha_r`)
        with every other parameter held: the fit is heading to the boundary where that
        expert is infallible (or always wrong) and :math:`J` has no maximum there -- the
        run stopped only because its gains became small. The limit is finite (the
        posterior then copies the expert's labels), so it is computed exactly. Never
        flagged with ``expert_prior > 0``, whose limit is :math:`-\infty`. Non-empty
        also raises a :class:`~crowdlearn.ConvergenceWarning` that suggests
        ``expert_prior``.
    flipped_ : bool
        Whether the best run ended in the mirror image and was flipped (see Notes).
    params_ : SparseExpertsParams
        All fitted parameters at once (e.g. to warm-start another fit).
    n_items_, n_experts_, n_features_in_ : int

    Notes
    -----
    With :math:`a_i` and :math:`b_{ir}` as above: given :math:`y^{(i)} = 1` the expert is
    right iff :math:`y^{(i)}_r = 1`, so :math:`P(y^{(i)}_r \mid y^{(i)} = 1, x^{(i)})
    = \sigma((2y^{(i)}_r - 1)b_{ir})`; given :math:`y^{(i)} = 0`,
    :math:`\sigma(-(2y^{(i)}_r - 1)b_{ir})`.

    **Objective.**

    .. math::

        \ell(\theta) = \sum_i \log\Big[\pi_i\prod_{r \in R_i}\sigma((2y^{(i)}_r - 1)b_{ir})
        + (1 - \pi_i)\prod_{r \in R_i}\sigma(-(2y^{(i)}_r - 1)b_{ir})\Big].

    **E-step**, in log space. Since :math:`\log\sigma(v) - \log\sigma(-v) = v`, the
    posterior :math:`\mu_i = Q_i(1) = P(y^{(i)} = 1 \mid x^{(i)}, \text{labels}_i)` has
    log-odds

    .. math:: \operatorname{logit}\mu_i = a_i + \sum_{r \in R_i} (2y^{(i)}_r - 1)\,b_{ir}.

    **M-step.** With :math:`u_{ir} = 1\{y^{(i)}_r = y^{(i)}\} = 1 - y^{(i)} - y^{(i)}_r
    + 2 y^{(i)} y^{(i)}_r` (linear in :math:`y^{(i)}`), the complete-data log-likelihood is
    :math:`\sum_i [y^{(i)}\log\sigma(a_i) + (1 - y^{(i)})\log\sigma(-a_i)] +
    \sum_i\sum_{r\in R_i} [u_{ir}\log\sigma(b_{ir}) + (1 - u_{ir})\log\sigma(-b_{ir})]`.
    Its expectation :math:`E(\theta; Q)` replaces :math:`y^{(i)}` by :math:`\mu_i` and
    :math:`u_{ir}` by :math:`c_{ir} = E[u_{ir}] = \mu_i` if :math:`y^{(i)}_r = 1`,
    :math:`1 - \mu_i` if :math:`y^{(i)}_r = 0` (the posterior probability that the expert
    was right). Minus the penalty it separates into two concave problems:

    (a) :math:`\max_{\beta_0, \beta} \sum_i [\mu_i \log\sigma(a_i) + (1 - \mu_i)
        \log\sigma(-a_i)] - \lambda\lVert\beta\rVert_1`: an L1 logistic regression with
        soft targets :math:`\mu_i` (equivalently, each item twice, with response 1
        and weight :math:`\mu_i` and response 0 and weight :math:`1-\mu_i`);

    (b) :math:`\max_{\alpha, w} \sum_i\sum_{r \in R_i} [c_{ir}\log\sigma(b_{ir}) +
        (1 - c_{ir})\log\sigma(-b_{ir})] - \lambda_w\lVert w\rVert_1`: one L1
        logistic regression over all labels, with soft target "expert right"
        :math:`c_{ir}` and design row :math:`[\mathbf{e}_r^\top \mid x^{(i)\top}]` (a
        one-hot indicator of the expert, whose coefficients :math:`\alpha` are not
        penalised, next to the item's features, whose coefficients :math:`w` are).

    Both are solved by :func:`crowdlearn.solvers.fit_l1_logistic` from the
    current parameters, accepting only steps that raise them, so
    :math:`E(\theta; Q) - \text{penalty}` never falls and therefore neither does
    :math:`J` (generalised EM). At convergence each satisfies its KKT conditions, e.g.
    for (a) :math:`|\sum_i(\mu_i - \sigma(a_i))x^{(i)}_j| \le \lambda` where
    :math:`\beta_j = 0` and :math:`= \lambda\operatorname{sign}\beta_j` elsewhere.

    **Sign flip.** :math:`\theta` and :math:`-\theta` give the same :math:`J`.
    After the best run, if its posterior agrees with the soft majority vote on
    fewer than half of the labelled items (in expectation), the solution is
    flipped -- the paper's rule of keeping the mirror image that agrees more
    with the majority vote, which assumes the experts are right more often than
    not on average.

    References
    ----------
    R. Izbicki and R. B. Stern, "Learning with many experts: model selection and
    sparsity", Statistical Analysis and Data Mining 6(6), 565-577, 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.features.sparse_experts import SparseExpertsEM
    >>> from crowdlearn.simulate.sparse import simulate_sparse_experts
    >>> beta = np.r_[2.0, -1.5, 1.0, np.zeros(7)]        # 3 of 10 features matter
    >>> w = np.r_[0.0, 0.0, 0.0, 1.0, np.zeros(6)]   # feature 4 (index 3): easier items
    >>> sim = simulate_sparse_experts(1000, beta, 0.3, [1.5, 1.0, 0.5, 2.0, -0.5], w,
    ...                               random_state=0)
    >>> model = SparseExpertsEM(lam=40.0).fit(sim.labels, sim.X)
    >>> np.flatnonzero(model.coef_).tolist(), np.flatnonzero(model.reliability_coef_).tolist()
    ([0, 1, 2], [3])
    >>> bool(np.abs(model.expert_intercept_ - [1.5, 1.0, 0.5, 2.0, -0.5]).max() < 0.3)
    True
    >>> bool((np.diff(model.log_likelihood_history_) >= 0).all())
    True
    >>> model.predict_proba(X=sim.X[:2]).shape   # from the features alone
    (2, 2)
    """

    def __init__(self, *, lam: float = 1.0, lam_reliability: float | None = None,
                 expert_prior: float = 0.0, init="vote", n_init: int = 1,
                 init_scale: float = 1.0, max_iter: int = 200, tol: float = 1e-7,
                 m_step_tol: float = 1e-9, m_step_max_iter: int = 50,
                 accelerate: bool = False, random_state=None, callback=None):
        self._store_params(locals())

    # -- input ---------------------------------------------------------------------------------
    def _check_params(self):
        check_scalar(self.lam, "lam", low=0.0)
        if self.lam_reliability is not None:
            check_scalar(self.lam_reliability, "lam_reliability", low=0.0)
        check_scalar(self.expert_prior, "expert_prior", low=0.0)
        check_em_params(self)
        check_scalar(self.init_scale, "init_scale", low=0.0)
        check_scalar(self.m_step_tol, "m_step_tol", low=0.0)
        check_scalar(self.m_step_max_iter, "m_step_max_iter", kind=numbers.Integral, low=1)
        self._check_init(takes_params=True)

    @property
    def _lams(self):
        lam = float(self.lam)
        return (lam, (lam if self.lam_reliability is None else float(self.lam_reliability)),
                float(self.expert_prior))

    def _param_shapes(self, d: int, n_labellers: int) -> dict:
        return {"coef": (d,), "intercept": (), "expert_intercept": (n_labellers,),
                "reliability_coef": (d,)}

    # -- EM pieces -----------------------------------------------------------------------------
    _params_type = SparseExpertsParams
    _make_data = staticmethod(_new_data)
    _log_joint = staticmethod(_log_joint)

    def _penalty(self, params: SparseExpertsParams) -> float:
        return params.penalty(*self._lams)

    def _m_step(self, data: _Data, q: np.ndarray, start: SparseExpertsParams,
                return_fits: bool = False):
        crowd = data.crowd
        lam, lam_rel, prior = self._lams
        mu = q[:, 1]
        problem_a, problem_b = _m_step_problems(data, prior)
        solve = "fit" if return_fits else "point"  # a point is all that EM needs
        clf = getattr(problem_a, solve)(mu, lam=lam, coef_init=start.coef,
                                        intercept_init=start.intercept, tol=self.m_step_tol,
                                        max_iter=self.m_step_max_iter)
        target = _right_targets(crowd, mu)
        if prior > 0:  # the prior's pseudo-labels: right with probability 1/2
            target = np.concatenate([target, np.full(crowd.n_experts, 0.5)])
        rel = getattr(problem_b, solve)(target, lam=lam_rel, coef_init=start.reliability_coef,
                                        intercept_init=start.expert_intercept,
                                        tol=self.m_step_tol, max_iter=self.m_step_max_iter)
        (coef, intercept), (rel_coef, rel_intercept) = clf[:2], rel[:2]
        params = SparseExpertsParams(coef, float(intercept),
                                     np.atleast_1d(np.asarray(rel_intercept, dtype=float)),
                                     rel_coef)
        return (params, clf, rel) if return_fits else params

    # -- public API ----------------------------------------------------------------------------
    def fit(self, labels, X):
        """Fit the classifier and the experts' reliabilities by L1-penalised MAP-EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, or (n_items, n_experts) matrix
            Binary labels (0/1); in a matrix ``-1`` marks a missing label. With
            triples, ``X`` may have more rows than the largest item index: the
            extra items have no label.
        X : array-like of shape (n_items, n_features)
            Real-valued features (no NaN or inf).

        Returns
        -------
        self
        """
        crowd, data, mu0 = self._read_fit_input(labels, X)
        n, d, K = crowd.n_items, data.X.shape[1], crowd.n_experts
        warm = self._start_params(crowd, d)
        rng = check_random_state(self.random_state)
        zero = SparseExpertsParams(np.zeros(d), 0.0, np.zeros(K), np.zeros(d))
        vote_start = {}

        def init(restart):
            if restart == 0 and warm is not None:
                return warm
            if "params" not in vote_start:
                vote_start["params"] = self._m_step(data, np.column_stack([1.0 - mu0, mu0]),
                                                    zero)
            base = vote_start["params"]
            if restart == (0 if warm is None else 1):
                return base
            s = float(self.init_scale)
            return SparseExpertsParams(base.coef + s * rng.normal(size=d),
                                       base.intercept + s * float(rng.normal()),
                                       s * rng.normal(size=K), s * rng.normal(size=d))

        result = self._run_em(data, init)
        params = self._keep_oriented(crowd, result)
        self.expert_intercept_ = params.expert_intercept
        self.reliability_coef_ = params.reliability_coef
        self.objective_history_ = result.history
        alpha = params.expert_intercept
        self.diverging_experts_ = _diverging_experts(
            self, data, params, result.objective, self.tol * max(1.0, abs(result.objective)))
        if self.diverging_experts_.size:
            k = int(self.diverging_experts_[0])
            warnings.warn(
                f"{type(self).__name__}: the intercept of expert {k} ran off to "
                f"alpha={alpha[k]:.3g} (accuracy {expit(alpha[k]):.6f} at x = 0): the fit "
                f"treats it as {'infallible' if alpha[k] > 0 else 'always wrong'} and the "
                "penalised likelihood has no maximum in that direction (a supremum at "
                "infinity). Unless that expert really never errs, pass expert_prior=1.0 "
                "(a uniform prior on each expert's accuracy) or a smaller lam.",
                ConvergenceWarning, stacklevel=2)
        self.all_objectives_ = result.all_objectives
        self.n_items_, self.n_experts_, self.n_features_in_ = n, K, d
        return self

    def _accelerator(self, data):
        return _flat_params(data.X.shape[1], data.crowd.n_experts) if self.accelerate else None

    @property
    def params_(self) -> SparseExpertsParams:
        """The fitted parameters as a :class:`SparseExpertsParams` (e.g. for a warm start)."""
        self._check_fitted()
        return self._params

    def reliability(self, X) -> np.ndarray:
        r"""Probability that each expert labels each item correctly, :math:`\sigma(b_{ir})`.

        Returns
        -------
        ndarray of shape (n_items, n_experts)
        """
        self._check_fitted()
        X = _check_features(X, n_features=self.n_features_in_)
        return expit((X @ self.reliability_coef_)[:, None] + self.expert_intercept_[None, :])

    def limit_objective(self, labels, X, expert: int) -> float:
        r""":math:`J` in the limit :math:`\alpha_r \to \pm\infty` (the sign of the fitted
        :math:`\alpha_r`) for ``expert`` :math:`r` (0-based), every other parameter as fitted.

        The limit is finite: the expert becomes infallible (or always wrong) and the
        posterior of every item it labelled copies its label. If it is at least
        ``objective(labels, X)``, the fit is not a maximum in that direction (see
        ``diverging_experts_``). With ``expert_prior > 0`` it is :math:`-\infty`.
        """
        self._check_fitted()
        data = self._new_data(labels, X)
        k = int(expert)
        if not 0 <= k < self.n_experts_:
            raise ValueError(f"expert must be in [0, {self.n_experts_}), got {expert!r}")
        return _limit_objective(self, data, self._params, k)

    def m_step(self, labels, X, posterior, start: SparseExpertsParams | None = None):
        """One M-step from ``posterior`` (shape ``(n_items, 2)``), for teaching and tests.

        Returns ``(params, fit_a, fit_b)``: the new :class:`SparseExpertsParams` and the
        two :class:`~crowdlearn._solvers.l1_logistic.L1LogisticFit` results (problems (a) and (b)
        of the Notes), whose ``kkt`` fields are the KKT violations.
        """
        self._check_params()
        crowd, X = _read_input(labels, X)
        q = as_float_array(posterior, "posterior")
        if q.shape != (crowd.n_items, 2):
            raise ValueError(f"posterior must have shape ({crowd.n_items}, 2), got {q.shape}")
        d, K = X.shape[1], crowd.n_experts
        if start is None:
            start = SparseExpertsParams(np.zeros(d), 0.0, np.zeros(K), np.zeros(d))
        return self._m_step(_Data(crowd, X), q, start, return_fits=True)

    def path(self, labels, X, lambdas=None, **kwargs) -> "SparseExpertsPath":
        """:func:`sparse_experts_path` with this estimator's other parameters."""
        params = {k: v for k, v in self.get_params().items() if k not in ("lam", "init")}
        params.update(kwargs.pop("model_params", {}))
        return sparse_experts_path(labels, X, lambdas, model_params=params, **kwargs)


# -- the penalty path ----------------------------------------------------------------------------
class SparseExpertsPath(NamedTuple):
    """Fits along a decreasing sequence of penalties (:func:`sparse_experts_path`).

    Row ``t`` of every array belongs to ``lambdas[t]``.
    """

    lambdas: np.ndarray           # (L,), decreasing
    coef: np.ndarray              # (L, k): beta
    intercept: np.ndarray         # (L,): beta_0
    expert_intercept: np.ndarray  # (L, R): alpha
    reliability_coef: np.ndarray  # (L, k): w, the shared slope
    objective: np.ndarray         # (L,): penalised objective J
    log_likelihood: np.ndarray    # (L,): l, without penalty
    n_iter: np.ndarray            # (L,)
    converged: np.ndarray         # (L,) bool
    models: list                  # the fitted SparseExpertsEM, one per lambda
    seconds: float                # wall time of the whole path


def _lambda_max_fit(crowd: CrowdLabels, X: np.ndarray, model_params: dict):
    params = {k: v for k, v in model_params.items()
              if k not in ("lam", "lam_reliability", "init", "callback")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        base = SparseExpertsEM(lam=0.0, **params).fit(crowd, X[:, :0])
    mu = base.posterior_[:, 1]
    g_beta = X.T @ (mu - expit(base.intercept_))
    resid = _right_targets(crowd, mu) - expit(base.expert_intercept_[crowd.expert])
    g_gamma = X.T @ np.bincount(crowd.item, weights=resid, minlength=crowd.n_items)
    d = X.shape[1]
    start = SparseExpertsParams(np.zeros(d), base.intercept_, base.expert_intercept_.copy(),
                                np.zeros(d))
    return (float(np.abs(g_beta).max(initial=0.0)), float(np.abs(g_gamma).max(initial=0.0)),
            start)


def sparse_experts_lambda_max(labels, X, **model_params) -> float:
    r"""The smallest :math:`\lambda` at which :math:`\beta = w = 0` is a fixed point of EM.

    Fits the model without features (the one-coin model with a class prior,
    :math:`\beta_0, \alpha` only; further keyword arguments such as ``max_iter``
    or ``n_init`` go to :class:`SparseExpertsEM`), then returns the largest entry
    of the gradient of :math:`\ell` with respect to :math:`\beta` and :math:`w`
    there. By Fisher's identity :math:`\nabla\ell(\theta) = \nabla_{\theta'} E(\theta'; Q)`
    at :math:`\theta' = \theta`, with :math:`Q` the posterior at :math:`\theta`:

    .. math::

        \frac{\partial\ell}{\partial\beta_j} = \sum_i (\mu_i - \sigma(\beta_0))x^{(i)}_j,
        \qquad
        \frac{\partial\ell}{\partial w_j} = \sum_i\sum_{r \in R_i}(c_{ir} -
        \sigma(\alpha_r))x^{(i)}_j,

    and for :math:`\lambda` at least their largest absolute value the zero
    coefficients satisfy the KKT conditions of :math:`J` at that point (EM started
    there stays there). EM is only a local method: from another start, a larger
    :math:`\lambda` may still give non-zero coefficients.
    """
    crowd, X = _read_input(labels, X)
    g_beta, g_gamma, _ = _lambda_max_fit(crowd, X, model_params)
    return max(g_beta, g_gamma)


def sparse_experts_path(labels, X, lambdas=None, *, n_lambdas: int = 20,
                        lambda_min_ratio: float = 1e-2, restart_from_vote: bool = True,
                        progress=None, model_params: dict | None = None) -> SparseExpertsPath:
    r"""Fit :class:`SparseExpertsEM` along a decreasing sequence of penalties, with warm starts.

    Parameters
    ----------
    labels, X
        As in :meth:`SparseExpertsEM.fit`.
    lambdas : array-like, optional
        The penalties; sorted into decreasing order. Default: ``n_lambdas``
        values log-spaced from :math:`\lambda_{\max}` down to ``lambda_min_ratio``
        times it, where :math:`\lambda_{\max}` is the larger of
        :func:`sparse_experts_lambda_max` and the penalty at which the first M-step
        from the majority vote is all zero (the two starts can lead to different
        branches of fixed points); the first fit then starts from the all-zero fixed
        point (and the vote). Given ``lambdas``, the first fit starts from the vote.
    n_lambdas : int, default 20
    lambda_min_ratio : float, default 0.01
    restart_from_vote : bool, default True
        (``True`` or ``False``, numpy's included; a string or a number is a
        ``ValueError``.) Besides the warm start from the previous penalty, also run EM from the
        majority-vote start at every penalty and keep the better penalised objective
        (i.e. ``n_init`` is at least 2). The objective is not concave: a warm start
        can stay on a branch of local maxima that the vote start avoids (in scenario
        (i) of Izbicki and Stern the branch that trusts the wrong expert).
    progress : None, True or False
        ``True`` shows a progress bar (a widget in a notebook, one text line on
        stderr elsewhere); ``None``/``False`` (default) shows nothing.
    model_params : dict, optional
        Other parameters of :class:`SparseExpertsEM` (``n_init``, ``max_iter``,
        ``tol``, ``random_state``, ...). The fit at each penalty starts from the
        previous fit (run 0), then from the vote (run 1), plus random starts up to
        ``n_init``. A ``lam_reliability`` given here stays fixed along the path.

    Returns
    -------
    SparseExpertsPath
    """
    check_flag(restart_from_vote, "restart_from_vote")  # 'no' or 1 is not a flag
    model_params = dict(model_params or {})
    for bad in ("lam", "init"):
        if bad in model_params:
            raise ValueError(f"{bad} is set by the path; do not pass it in model_params")
    start = time.perf_counter()
    crowd, X = _read_input(labels, X)
    lambdas, first_init = _path_lambdas(crowd, X, lambdas, n_lambdas, lambda_min_ratio,
                                        model_params)
    bar = ProgressBar(len(lambdas), "lambda path", enabled=progress)
    models = []
    init = first_init
    if restart_from_vote:
        model_params["n_init"] = max(int(model_params.get("n_init", 1)), 2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for lam in lambdas:
                model = SparseExpertsEM(lam=float(lam), init=init, **model_params).fit(crowd,
                                                                                       X)
                models.append(model)
                init = model.params_
                bar.update(info=f"lambda={lam:.3g}")
    finally:
        bar.close()
    reissue_warnings(caught, f"the penalty path ({len(lambdas)} penalties; see "
                             f"path.converged and each model)")
    seconds = time.perf_counter() - start
    return SparseExpertsPath(
        lambdas=lambdas,
        coef=np.array([m.coef_ for m in models]),
        intercept=np.array([m.intercept_ for m in models]),
        expert_intercept=np.array([m.expert_intercept_ for m in models]),
        reliability_coef=np.array([m.reliability_coef_ for m in models]),
        objective=np.array([m.objective_ for m in models]),
        log_likelihood=np.array([m.log_likelihood_ for m in models]),
        n_iter=np.array([m.n_iter_ for m in models]),
        converged=np.array([m.converged_ for m in models]),
        models=models, seconds=seconds)


def _path_lambdas(crowd, X, lambdas, n_lambdas, lambda_min_ratio, model_params):
    """``(lambdas, first_init)`` of :func:`sparse_experts_path`: the given penalties in
    decreasing order (the first fit starts from the vote), or the default log-spaced grid
    from lambda_max (the first fit starts from the all-zero fixed point)."""
    if lambdas is None:
        check_scalar(n_lambdas, "n_lambdas", kind=numbers.Integral, low=1)
        check_scalar(lambda_min_ratio, "lambda_min_ratio", low=0.0, high=1.0,
                     low_inclusive=False)
        g_beta, g_gamma, first_init = _lambda_max_fit(crowd, X, model_params)
        # the vote start can lead to another branch of fixed points: make sure the grid
        # also starts where the first M-step from the vote is all zero
        v = _soft_vote(crowd)
        lam_a = l1_logistic_lambda_max(X, v)
        lam_b = l1_logistic_lambda_max(X, _right_targets(crowd, v), rows=crowd.item,
                                       intercept_groups=crowd.expert,
                                       n_intercepts=crowd.n_experts)
        lmax = max(g_beta, g_gamma, lam_a, lam_b)
        lambdas = lmax * np.geomspace(1.0, lambda_min_ratio, n_lambdas)
    else:
        lambdas = as_float_array(lambdas, "lambdas")
        if lambdas.ndim != 1 or lambdas.size == 0:
            raise ValueError(f"lambdas must be a non-empty 1-D array, got shape {lambdas.shape}")
        if not np.isfinite(lambdas).all() or (lambdas < 0).any():
            raise ValueError("lambdas must be finite and non-negative")
        lambdas = np.sort(lambdas)[::-1]
        first_init = "vote"
    return lambdas, first_init


# -- the majority-vote competitor ----------------------------------------------------------------
class MajorityVoteLogistic(BaseEstimator):
    r"""L1-penalised logistic regression on majority-vote labels ("Majority" in the paper).

    Each labelled item gets its majority label, a tie broken by a coin keyed on
    ``random_state`` and on the item's id (its index without ids), as ``MajorityVote``
    breaks them: neither the order of the rows nor other items change an item's tie. Then
    :math:`\max_{\beta_0,\beta}\sum_i [v_i\log\sigma(a_i) + (1 - v_i)\log\sigma(-a_i)]
    - \lambda\lVert\beta\rVert_1` over the labelled items.
    With ``soft=True`` the targets are the vote fractions instead.

    Parameters
    ----------
    lam : float, default 1.0
    soft : bool, default False
    random_state : None, int or Generator
        Seed of the tie rule (None: a fresh seed at every fit).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    vote_ : ndarray of shape (n_items,)
        The targets used (NaN for unlabelled items).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> m = MajorityVoteLogistic(lam=0.1).fit(np.array([[0, 0, 1], [0, 1, 0], [1, 1, 0], [1, 1, 1]]), X)
    >>> m.predict(X).tolist()
    [0, 0, 1, 1]
    """

    def __init__(self, *, lam: float = 1.0, soft: bool = False, random_state=None):
        self._store_params(locals())

    def fit(self, labels, X):
        """Majority vote, then the L1 logistic regression on the labelled items."""
        check_scalar(self.lam, "lam", low=0.0)
        soft = check_bool(self.soft, "soft")
        crowd, X = _read_input(labels, X)
        v = _soft_vote(crowd)
        labelled = crowd.labels_per_item() > 0
        if not soft:  # a tie: a coin keyed on the item (break_ties)
            votes = crowd.vote_counts()
            v = break_ties(votes, crowd.item_ids, self.random_state).astype(float)
        fit = fit_l1_logistic(X[labelled], v[labelled], lam=float(self.lam), tol=1e-9)
        self.coef_ = fit.coef
        self.intercept_ = float(fit.intercept)
        self.vote_ = np.where(labelled, v, np.nan)
        self.n_features_in_ = X.shape[1]
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``[1 - sigma(a), sigma(a)]`` from the features alone."""
        self._check_fitted("coef_")
        X = _check_features(X, n_features=self.n_features_in_)
        return _classifier_proba(X, self.coef_, self.intercept_)

    def predict(self, X) -> np.ndarray:
        """Most probable class; ties go to class 1."""
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(np.intp)
