r"""GLAD (Whitehill et al. 2009): worker abilities and item difficulties, fitted by EM."""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize

from crowdlearn._base import EMEstimator
from crowdlearn._validation import as_float_array, check_em_params, check_flag, check_scalar
from crowdlearn.aggregation._common import (_canonical_order, _new_crowd,
                                            _softmax_rows_inplace)
from crowdlearn.frames import ClassPrior, IdResults
from crowdlearn.labels import CrowdLabels, as_crowd_labels

__all__ = ["GLAD", "GLADParams", "glad_q_and_grad"]

_ALPHA_BOUND = 1e3
"""Box constraint ``|alpha_r| <= _ALPHA_BOUND`` of the M-step (a safeguard for maximum
likelihood, where a perfect expert's ability would run off to infinity)."""
_B_BOUND = 25.0
"""Box constraint ``|b_i| <= _B_BOUND`` on ``b_i = log(tau_i)``, the log inverse difficulty
(the source's ``log(beta_i)``; same reason)."""
_MIN_CURVATURE = 1e-2
"""Floor on the diagonal curvature used to scale the M-step's variables."""


class _GLADData(NamedTuple):
    """What one fit reads: the labels and which items have any."""

    crowd: CrowdLabels
    labelled: np.ndarray  # (n_items,) bool


class GLADParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``)."""

    class_prior: np.ndarray  # (N,)
    alpha: np.ndarray        # (n_experts,) abilities
    b: np.ndarray            # (n_items,) log tau_i: log of the inverse difficulties


def _log_sigmoids(x: np.ndarray):
    r""":math:`\log\sigma(x)`, :math:`\log\sigma(-x)` and :math:`\sigma(x)`.

    :math:`\log\sigma(\pm x) = \min(\pm x, 0) - \log(1 + e^{-|x|})`: the same values as
    ``-np.logaddexp(0, -x)`` and ``-np.logaddexp(0, x)`` at the cost of one of them.
    :math:`e^{-|x|}` never overflows (it may underflow to 0, harmlessly), so all three
    are finite and NaN-free for every finite ``x``, and both logs are computed without
    cancellation even for huge :math:`|x|`.
    """
    e = np.exp(-np.abs(x))
    log1p_e = np.log1p(e)
    log_sig = np.minimum(x, 0.0) - log1p_e
    log_sig_neg = np.minimum(-x, 0.0) - log1p_e
    sig = np.where(x >= 0, 1.0, e) / (1.0 + e)
    return log_sig, log_sig_neg, sig


def _q_and_grad(alpha, b, item, expert, correct, log_km1, n_items, n_experts):
    """:func:`glad_q_and_grad` with ``correct = q[item, label]`` precomputed."""
    beta_t = np.exp(b)[item]
    x = alpha[expert] * beta_t
    log_sig, log_sig_neg, sig = _log_sigmoids(x)
    wrong = 1.0 - correct
    # every term <= 0: no cancellation (no BLAS either: see _m_step)
    Q = float((correct * log_sig).sum() + (wrong * log_sig_neg).sum() - log_km1 * wrong.sum())
    resid = correct - sig  # d/dx of the labels' term, x = b_ir: c_ir - sigma(b_ir)
    d_alpha = np.bincount(expert, weights=resid * beta_t, minlength=n_experts)
    d_b = np.bincount(item, weights=resid * x, minlength=n_items)
    return Q, d_alpha, d_b


def glad_q_and_grad(alpha, b, item, expert, label, q, n_classes):
    r"""The labels' part of GLAD's expected complete-data log-likelihood and its gradient.

    With :math:`\tau_i = e^{b_i}` (``b`` holds :math:`\log\tau_i`),
    :math:`b_{ir} = \alpha_r \tau_i` the log-odds that expert :math:`r` is right on
    item :math:`i`, and :math:`c_{ir} = q_i(y^{(i)}_r)` the probability under
    ``q`` that it is right, the value returned is

    .. math::

        \begin{aligned}
        E(\alpha, \tau; q) &= \sum_i \sum_{r \in R_i} \sum_n q_i(n)
        \log P(y^{(i)}_r \mid y^{(i)} = n) \\
        &= \sum_i \sum_{r \in R_i} \Big[c_{ir}\log\sigma(b_{ir})
        + (1 - c_{ir})\log\sigma(-b_{ir}) \\
        &\hphantom{{}= \sum_i \sum_{r \in R_i} \Big[} - (1 - c_{ir})\log(N - 1)\Big],
        \end{aligned}

    (a sum over the labels, a repeated label being one more term; using
    :math:`1 - \sigma(x) = \sigma(-x)` and rows of ``q`` summing to one), and

    .. math::

        \frac{\partial E}{\partial \alpha_r} = \sum_{i \in I_r}
        \big(c_{ir} - \sigma(b_{ir})\big)\, \tau_i, \qquad
        \frac{\partial E}{\partial \log\tau_i} = \sum_{r \in R_i}
        \big(c_{ir} - \sigma(b_{ir})\big)\, b_{ir} .

    Parameters
    ----------
    alpha : ndarray of shape (n_experts,)
        Abilities :math:`\alpha_r`.
    b : ndarray of shape (n_items,)
        :math:`\log\tau_i` (the source's :math:`\log\beta_i`).
    item, expert, label : ndarray of shape (n_labels,)
        The labels as integer index arrays (as in :class:`~crowdlearn.CrowdLabels`).
    q : ndarray of shape (n_items, n_classes)
        A distribution :math:`q_i(n)` over each item's true class (rows sum to one).
    n_classes : int
        :math:`N \ge 2`.

    Returns
    -------
    Q : float
        :math:`E(\alpha, \tau; q)`.
    dQ_dalpha : ndarray of shape (n_experts,)
    dQ_db : ndarray of shape (n_items,)
        The gradient in :math:`\log\tau_i`.
    """
    alpha = as_float_array(alpha, "alpha")
    b = as_float_array(b, "b")
    item, expert, label = (np.asarray(a, dtype=np.intp) for a in (item, expert, label))
    q = as_float_array(q, "q")
    correct = q[item, label]
    return _q_and_grad(alpha, b, item, expert, correct, math.log(n_classes - 1),
                       b.shape[0], alpha.shape[0])


def _gauss_log_prior(values: np.ndarray, prior) -> tuple[float, np.ndarray]:
    """Log density of independent N(mean, sd^2) priors and its gradient (0 for ``None``)."""
    if prior is None:
        return 0.0, np.zeros_like(values)
    mean, sd = float(prior[0]), float(prior[1])
    z = (values - mean) / sd
    log_norm = math.log(sd) + 0.5 * math.log(2 * math.pi)
    value = -0.5 * float((z * z).sum()) - values.shape[0] * log_norm
    return value, -z / sd


class GLAD(ClassPrior, IdResults, EMEstimator):
    r"""GLAD: each expert has an ability, each item a difficulty; fitted by EM.

    The model of Whitehill et al. (2009), "Whose vote should count more", in
    its multi-class form (as in crowd-kit). Item :math:`i` has a hidden true
    class :math:`y^{(i)} \in \{1, \dots, N\}` drawn from the class prior
    :math:`\phi_n`. Expert :math:`r` has an ability :math:`\alpha_r \in
    \mathbb{R}` and item :math:`i` an inverse difficulty :math:`\tau_i > 0`
    (the source's :math:`\beta_i`, the attribute ``beta_``; the fit works with
    :math:`\log\tau_i`, ``log_beta_``).
    Expert :math:`r` gives item :math:`i` its true class with probability
    :math:`\sigma(b_{ir})`, where :math:`b_{ir} = \alpha_r \tau_i` is the
    log-odds that it is right and :math:`\sigma(x) = 1/(1 + e^{-x})`, and each
    of the :math:`N - 1` wrong classes with probability
    :math:`(1 - \sigma(b_{ir}))/(N - 1)`:

    .. math::

        P(y^{(i)}_r = p \mid y^{(i)} = n) = \sigma(\alpha_r\tau_i)^{1\{p = n\}}
        \Big(\frac{1 - \sigma(\alpha_r\tau_i)}{N - 1}\Big)^{1\{p \ne n\}} .

    :math:`\alpha_r > 0` is better than chance (:math:`\alpha_r = 0`: a coin,
    :math:`\alpha_r < 0`: adversarial); a large :math:`\tau_i` (easy item)
    sharpens every expert's answer, a small one (hard item) makes everyone
    guess, so :math:`1/\tau_i` is the item's *difficulty*.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes :math:`N` (>= 2). Inferred from the labels when omitted.
    alpha_prior : (mean, sd) or None, default (1.0, 1.0)
        Independent Gaussian priors
        :math:`\alpha_r \sim \mathcal{N}(\text{mean}, \text{sd}^2)`
        (MAP-EM); ``None`` is maximum likelihood for the abilities. The
        default is Whitehill et al.'s.
    beta_prior : (mean, sd) or None, default (1.0, 1.0)
        Independent Gaussian priors on :math:`\log\tau_i \sim
        \mathcal{N}(\text{mean}, \text{sd}^2)` (a log-normal prior on
        :math:`\tau_i`); ``None`` is maximum likelihood for the difficulties.
    fit_class_prior : bool, default False
        ``False`` keeps :math:`\phi` uniform, as crowd-kit's GLAD does; ``True``
        estimates it in the M-step (maximum likelihood; the default up to
        0.2). The estimate can run off towards one class: on the bundled
        bluebirds crowd it ends at (0.94, 0.06) against true frequencies
        (0.56, 0.44), and the accuracy falls from 0.72 (uniform) to 0.57. On
        the other bundled crowds the uniform prior is as accurate or better
        (temp 0.942 against 0.939), even on wsd, whose classes are very
        unequal (0.73, 0.01, 0.26); see
        ``benchmarks/bench_glad_mace_defaults.py``. Estimate it only where
        the classes are known to be unequal and the items well labelled.
    n_init : int, default 1
        Number of EM runs; the run with the highest final objective is kept.
        Run 0 starts from the soft majority vote, the others from random
        posteriors drawn from a flat Dirichlet; each start is turned into
        parameters by one M-step from :math:`\alpha_r, \log\tau_i` at their
        prior means (1 and 0 without a prior).
    max_iter : int, default 200
        At most this many M-steps per run.
    tol : float, default 1e-8
        A run stops when the objective rises by at most ``tol * max(1, |objective|)``.
    m_step_max_iter : int, default 10
        At most this many L-BFGS-B iterations in each M-step.
    random_state : None, int or numpy Generator
        Seed for the random restarts.
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step; its
        ``params`` is a :class:`GLADParams` ``(class_prior, alpha, b)``, ``b``
        holding :math:`\log\tau_i`. Returning ``True`` stops the run.
    progress : bool, default False
        Show a progress bar (see :func:`~crowdlearn.fit_em`).

    Attributes
    ----------
    posterior_ : ndarray of shape (n_items, n_classes)
        :math:`Q_i(n) = P(y^{(i)} = n \mid \mathcal{D}; \theta)` under the fitted
        parameters. Items nobody labelled get the class prior.
    ability_ : ndarray of shape (n_experts,)
        :math:`\alpha_r`, larger is better (also ``skills_``). An expert with
        no label keeps the prior mean (1 without a prior).
    beta_ : ndarray of shape (n_items,)
        :math:`\tau_i` (the source's :math:`\beta_i`), the *inverse* difficulty:
        larger is easier. An item nobody labelled keeps :math:`\log\tau_i` at its
        prior mean (0, i.e. :math:`\tau_i = 1`, without a prior).
    log_beta_ : ndarray of shape (n_items,)
        :math:`\log\tau_i`.
    difficulty_ : ndarray of shape (n_items,)
        :math:`1/\tau_i`, larger is harder.
    class_prior_ : ndarray of shape (n_classes,)
        :math:`\phi_n` (uniform when ``fit_class_prior=False``).
    priors_ : ndarray or pandas Series
        A copy of ``class_prior_`` under crowd-kit's name: a Series named ``"prior"``
        indexed by class id when fitted on a DataFrame.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective :math:`J(\theta)` below after every E-step of the best run;
        never decreases.
    log_likelihood_ : float
        The observed-data log-likelihood :math:`\ell(\theta)` at the fitted parameters.
    objective_ : float
        ``log_likelihood_history_[-1]``.
    n_iter_ : int
    converged_ : bool
    n_items_, n_experts_, n_classes_ : int
    labels_, probas_, skills_
        Hard labels, posteriors and abilities; pandas objects indexed by the
        original task / worker ids when fitted on a DataFrame (see
        :mod:`crowdlearn.frames`).

    Notes
    -----
    Sums over :math:`r \in R_i` run over the labels item :math:`i` received
    (a repeated label is one more term), and sums over :math:`i \in I_r` over the
    labels expert :math:`r` gave; :math:`b_{ir} = \alpha_r\tau_i`, and
    :math:`\theta = (\phi, \alpha_r, \tau_i)` holds the prior, every ability and every
    inverse difficulty; :math:`\mathrm{mean}_\alpha, \mathrm{sd}_\alpha` and
    :math:`\mathrm{mean}_\tau, \mathrm{sd}_\tau` are ``alpha_prior`` and ``beta_prior``.

    **Objective** (the log-posterior, with normalised Gaussian log-densities
    :math:`\log \mathcal{N}`; a prior given as ``None`` drops its term):

    .. math::

        \begin{aligned}
        J(\theta) &= \ell(\theta)
        + \sum_r \log \mathcal{N}(\alpha_r; \mathrm{mean}_\alpha, \mathrm{sd}_\alpha^2)
        + \sum_i \log \mathcal{N}(\log\tau_i; \mathrm{mean}_\tau, \mathrm{sd}_\tau^2), \\
        \ell(\theta) &= \sum_i \log \sum_n \phi_n \prod_{r \in R_i}
        P(y^{(i)}_r \mid y^{(i)} = n).
        \end{aligned}

    **E-step**, in log space (:math:`1 - \sigma(x) = \sigma(-x)`):

    .. math::

        \begin{aligned}
        \log Q_i(n) &= \log\phi_n + \sum_{r \in R_i} \Big[1\{y^{(i)}_r = n\}\log\sigma(b_{ir}) \\
        &\quad + 1\{y^{(i)}_r \ne n\}\big(\log\sigma(-b_{ir}) - \log(N - 1)\big)\Big] - \log Z_i:
        \end{aligned}

    the two sums over item :math:`i`'s labels in each class :math:`p` are two
    weighted ``np.bincount`` over the labels, then running sums over the
    classes give every :math:`n`. :math:`\log\sigma(\pm x) = \min(\pm x, 0) - \log(1 + e^{-|x|})`
    (the value of ``-np.logaddexp(0, \mp x)``) is finite for every finite
    :math:`x`, and every term summed is :math:`\le 0`, so nothing cancels even
    when :math:`|b_{ir}|` is huge; :math:`\ell(\theta) = \sum_i \log Z_i`, the
    row-wise log-sum-exp taken with the row maximum subtracted.

    **M-step.** The expected complete-data objective splits into a class-prior
    part, maximised in closed form by the mean of :math:`Q_i(n)` over the items
    with :math:`R_i \ne \emptyset` (the labelled items; items nobody
    labelled do not enter :math:`\ell`) when ``fit_class_prior=True`` (and
    otherwise kept uniform), and

    .. math::

        \begin{aligned}
        E(\alpha, \tau; Q) = \sum_i \sum_{r \in R_i} \Big[&c_{ir}\log\sigma(b_{ir})
        + (1 - c_{ir})\log\sigma(-b_{ir}) \\
        &- (1 - c_{ir})\log(N - 1)\Big], \qquad c_{ir} = Q_i(y^{(i)}_r),
        \end{aligned}

    whose gradient is (:func:`~crowdlearn.aggregation.glad.glad_q_and_grad`)

    .. math::

        \frac{\partial E}{\partial \alpha_r} = \sum_{i \in I_r}
        \big(c_{ir} - \sigma(b_{ir})\big)\tau_i, \qquad
        \frac{\partial E}{\partial \log\tau_i} = \sum_{r \in R_i}
        \big(c_{ir} - \sigma(b_{ir})\big)\,b_{ir},

    plus the prior terms :math:`-(\alpha_r - \mathrm{mean}_\alpha)/\mathrm{sd}_\alpha^2` and
    :math:`-(\log\tau_i - \mathrm{mean}_\tau)/\mathrm{sd}_\tau^2`. :math:`E` + log prior has no
    closed-form maximiser: it is increased by at most ``m_step_max_iter``
    iterations of L-BFGS-B (``scipy.optimize.minimize``) started from the current
    :math:`\alpha_r` and :math:`\log\tau_i`, in variables scaled by the square root of the
    diagonal Fisher curvature :math:`\sum_{i \in I_r} \sigma(b_{ir})\sigma(-b_{ir})
    \tau_i^2` (resp. :math:`\sum_{r \in R_i} \sigma(b_{ir})\sigma(-b_{ir}) b_{ir}^2`)
    plus the prior's :math:`1/\mathrm{sd}_\alpha^2` (resp. :math:`1/\mathrm{sd}_\tau^2`), so that an
    ability seen in a thousand labels and a difficulty seen in five take
    comparable steps. The parameters live in the box :math:`|\alpha_r| \le 10^3`,
    :math:`|\log\tau_i| \le 25` (the labels' term is evaluated at the clipped
    values; the box only binds in maximum likelihood, where a perfect expert's
    :math:`\alpha_r` or a unanimous item's :math:`\log\tau_i` grows without
    limit). The result is kept only if it does not lower :math:`E` + log prior
    (generalised EM), so :math:`J` never decreases. One evaluation of :math:`E`
    and its gradient is a few passes over the labels (gathers and two
    ``np.bincount``), with no Python loop.

    **Relabelling.** For :math:`N = 2`, swapping the two classes and negating
    every :math:`\alpha_r` leaves :math:`\ell` unchanged. When that also
    leaves :math:`J` unchanged (``alpha_prior`` is ``None`` or has mean 0),
    the fit picks the copy whose posterior agrees best with the votes; with
    the default prior (mean 1) the prior itself prefers positive abilities
    and nothing is relabelled. For :math:`N > 2` there is no such symmetry.

    **Maximum likelihood** (``alpha_prior=None, beta_prior=None``) is
    ill-posed: with one free :math:`\tau_i` per item and a few labels per item,
    the likelihood grows without limit along directions where abilities and
    difficulties run to the box, and EM may end in such a degenerate fit. The
    default priors (Whitehill et al.'s) keep every parameter finite.

    References
    ----------
    J. Whitehill, P. Ruvolo, T. Wu, J. Bergsma and J. Movellan, "Whose vote
    should count more: optimal integration of labels from labelers of unknown
    expertise", NIPS 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.glad import GLAD
    >>> rng = np.random.default_rng(0)
    >>> n, J, K = 1000, 10, 3
    >>> truth = rng.integers(K, size=n)
    >>> alpha = np.linspace(-0.5, 3.0, J)
    >>> item, expert = np.repeat(np.arange(n), J), np.tile(np.arange(J), n)
    >>> right = rng.random(n * J) < 1 / (1 + np.exp(-alpha[expert]))
    >>> label = np.where(right, truth[item], (truth[item] + rng.integers(1, K, n * J)) % K)
    >>> glad = GLAD().fit((item, expert, label))
    >>> bool(np.corrcoef(glad.ability_, alpha)[0, 1] > 0.95), bool(glad.ability_[0] < 0)
    (True, True)
    >>> bool((np.diff(glad.log_likelihood_history_) >= 0).all())
    True
    >>> bool((glad.predict() == truth).mean() > 0.9), glad.posterior_.shape
    (True, (1000, 3))
    """

    def __init__(self, *, n_classes: int | None = None, alpha_prior=(1.0, 1.0),
                 beta_prior=(1.0, 1.0), fit_class_prior: bool = False, n_init: int = 1,
                 max_iter: int = 200, tol: float = 1e-8, m_step_max_iter: int = 10,
                 random_state=None, callback=None, progress: bool = False):
        self._store_params(locals())

    # -- input ---------------------------------------------------------------------------
    @staticmethod
    def _check_prior(prior, name: str):
        if prior is None:
            return None
        if isinstance(prior, (str, bytes)) or not hasattr(prior, "__len__") or len(prior) != 2:
            raise ValueError(f"{name} must be None or a pair (mean, sd), got {prior!r}")
        mean, sd = prior
        check_scalar(mean, f"{name} mean")
        check_scalar(sd, f"{name} sd", low=0.0, low_inclusive=False)
        return float(mean), float(sd)

    def _check_params(self):
        if self.n_classes is not None:
            check_scalar(self.n_classes, "n_classes", kind=numbers.Integral, low=2)
        self._priors()
        check_flag(self.fit_class_prior, "fit_class_prior")
        check_em_params(self)
        check_scalar(self.m_step_max_iter, "m_step_max_iter", kind=numbers.Integral, low=1)

    def _priors(self):
        """``(alpha_prior, beta_prior)`` checked, as ``(mean, sd)`` float pairs or None."""
        return (self._check_prior(self.alpha_prior, "alpha_prior"),
                self._check_prior(self.beta_prior, "beta_prior"))

    def _start_values(self, n_items: int, n_experts: int):
        alpha_prior, b_prior = self._priors()
        a0 = 1.0 if alpha_prior is None else alpha_prior[0]
        b0 = 0.0 if b_prior is None else b_prior[0]
        a0 = float(np.clip(a0, -_ALPHA_BOUND, _ALPHA_BOUND))
        b0 = float(np.clip(b0, -_B_BOUND, _B_BOUND))
        return np.full(n_experts, a0), np.full(n_items, b0)

    # -- EM pieces -----------------------------------------------------------------------
    @staticmethod
    def _log_joint(crowd: CrowdLabels, params: GLADParams) -> np.ndarray:
        """``log P(y^(i) = n, labels of item i)``, shape ``(n_items, N)``."""
        n, K = crowd.n_items, params.class_prior.shape[0]
        x = params.alpha[crowd.expert] * np.exp(params.b)[crowd.item]
        log_sig, log_sig_neg, _ = _log_sigmoids(x)
        cell = crowd.item * K + crowd.label
        # right[i, l]: sum of log sigma(x_t) over item i's labels l; wrong[i, l]: of
        # log sigma(-x_t) - log(K - 1). Then log_joint[i, k] = right[i, k] + sum over
        # l != k of wrong[i, l] -- sums of terms <= 0 only, exact even for huge x
        right = np.bincount(cell, weights=log_sig, minlength=n * K).reshape(n, K)
        wrong = np.bincount(cell, weights=log_sig_neg - math.log(K - 1),
                            minlength=n * K).reshape(n, K)
        out = right
        before = np.zeros(n)
        for k in range(K):  # sum over l < k, running
            out[:, k] += before
            before += wrong[:, k]
        after = np.zeros(n)
        for k in range(K - 1, -1, -1):  # sum over l > k
            out[:, k] += after
            after += wrong[:, k]
        with np.errstate(divide="ignore"):
            out += np.log(params.class_prior)
        return out

    def _log_prior(self, params: GLADParams) -> float:
        alpha_prior, b_prior = self._priors()
        return (_gauss_log_prior(params.alpha, alpha_prior)[0]
                + _gauss_log_prior(params.b, b_prior)[0])

    def _e_step(self, data: _GLADData, params: GLADParams):
        q, log_evidence = _softmax_rows_inplace(self._log_joint(data.crowd, params))
        return q, float(log_evidence.sum()) + self._log_prior(params)

    def _m_step(self, data: _GLADData, q: np.ndarray, params: GLADParams) -> GLADParams:
        crowd, labelled = data.crowd, data.labelled
        n, J, K = crowd.n_items, crowd.n_experts, q.shape[1]
        if self.fit_class_prior:
            class_prior = q[labelled].mean(axis=0)
        else:
            class_prior = np.full(K, 1.0 / K)
        item, expert = crowd.item, crowd.expert
        correct = q[item, crowd.label]
        log_km1 = math.log(K - 1)
        a_prior, b_prior = self._priors()
        low = np.concatenate([np.full(J, -_ALPHA_BOUND), np.full(n, -_B_BOUND)])
        high = -low

        def value_and_grad(z):
            """-(Q + log prior) and its gradient, Q taken at z clipped to the box."""
            zc = np.clip(z, low, high)
            Q, ga, gb = _q_and_grad(zc[:J], zc[J:], item, expert, correct, log_km1, n, J)
            grad_q = np.concatenate([ga, gb])
            grad_q[zc != z] = 0.0  # Q is flat outside the box
            pa, dpa = _gauss_log_prior(z[:J], a_prior)
            pb, dpb = _gauss_log_prior(z[J:], b_prior)
            return -(Q + pa + pb), -(grad_q + np.concatenate([dpa, dpb]))

        z0 = np.concatenate([params.alpha, params.b])
        f0, _ = value_and_grad(z0)
        # diagonal preconditioner: the Fisher curvature of Q (plus the priors') at z0
        beta_t = np.exp(np.clip(params.b, -_B_BOUND, _B_BOUND))[item]
        x = np.clip(params.alpha, -_ALPHA_BOUND, _ALPHA_BOUND)[expert] * beta_t
        sig = _log_sigmoids(x)[2]
        w = sig * (1.0 - sig)
        curv = np.concatenate([np.bincount(expert, weights=w * beta_t * beta_t, minlength=J),
                               np.bincount(item, weights=w * x * x, minlength=n)])
        if a_prior is not None:
            curv[:J] += 1.0 / a_prior[1] ** 2
        if b_prior is not None:
            curv[J:] += 1.0 / b_prior[1] ** 2
        scale = 1.0 / np.sqrt(np.maximum(curv, _MIN_CURVATURE))

        def scaled(u):
            f, g = value_and_grad(z0 + scale * u)
            return f, g * scale

        res = minimize(scaled, np.zeros_like(z0), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(self.m_step_max_iter), "ftol": 1e-15,
                                "gtol": 1e-10})
        z = np.clip(z0 + scale * res.x, low, high)
        f = value_and_grad(z)[0] if np.isfinite(z).all() else np.inf
        if not f <= f0:
            z = z0  # generalised EM: never accept a step that lowers Q + log prior
        return GLADParams(class_prior, z[:J].copy(), z[J:].copy())

    @staticmethod
    def _soft_vote(crowd: CrowdLabels) -> np.ndarray:
        counts = crowd.vote_counts()
        total = counts.sum(axis=1, keepdims=True)
        K = crowd.n_classes
        return np.where(total > 0, counts / np.where(total > 0, total, 1.0), 1.0 / K)

    def _align_with_vote(self, crowd: CrowdLabels, params: GLADParams, q: np.ndarray):
        """K = 2 and a sign-symmetric ability prior: pick the sign agreeing with the votes."""
        alpha_prior = self._priors()[0]
        if q.shape[1] != 2 or not (alpha_prior is None or alpha_prior[0] == 0):
            return params, q
        agree = q[crowd.item, crowd.label].sum()
        if agree >= crowd.n_labels - agree:
            return params, q
        return (GLADParams(params.class_prior[::-1].copy(), -params.alpha, params.b),
                q[:, ::-1].copy())

    # -- the engine's hooks (crowdlearn._base.EMEstimator) ----------------------------------
    _warm_start = True  # the M-step's optimiser starts at the current parameters

    def _make_data(self, labels) -> _GLADData:
        if labels is None:
            raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) "
                             "tuple, a DataFrame or an (n_items, n_experts) matrix with -1 "
                             "for missing")
        crowd = as_crowd_labels(labels, n_classes=self.n_classes)
        if crowd.n_labels == 0:
            raise ValueError("labels holds no label at all")
        crowd = _canonical_order(crowd)  # the same fit whatever the order of the rows
        return _GLADData(crowd, crowd.labels_per_item() > 0)

    def _init_params(self, data: _GLADData, restart: int, rng) -> GLADParams:
        crowd = data.crowd
        n, K = crowd.n_items, crowd.n_classes
        alpha0, b0 = self._start_values(n, crowd.n_experts)
        start = GLADParams(np.full(K, 1.0 / K), alpha0, b0)
        q = self._soft_vote(crowd) if restart == 0 else rng.dirichlet(np.ones(K), size=n)
        return self._m_step(data, q, start)

    def _set_fitted(self, data: _GLADData, result) -> None:
        crowd = data.crowd
        params, posterior = self._align_with_vote(crowd, result.params, result.posterior)
        self._params = params
        self.class_prior_ = params.class_prior
        self.ability_ = params.alpha
        self.log_beta_ = params.b
        self.beta_ = np.exp(params.b)
        self.difficulty_ = np.exp(-params.b)
        self._keep_em_result(result, posterior, log_prior=self._log_prior(params))
        self.n_items_, self.n_experts_, self.n_classes_ = (crowd.n_items, crowd.n_experts,
                                                           crowd.n_classes)
        self._remember_ids(crowd)

    # -- public API ----------------------------------------------------------------------
    def fit(self, labels):
        """Fit the class prior, the abilities and the difficulties by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``
            The crowd's labels; in a matrix ``-1`` marks a missing label.

        Returns
        -------
        self
        """
        return self._fit(labels)

    def _skills(self) -> np.ndarray:
        return self.ability_

    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        r"""Posterior class probabilities, shape ``(n_items, n_classes)``.

        Parameters
        ----------
        labels : labels of NEW items, optional
            Any form ``fit`` accepts, from experts seen in ``fit`` (an unknown
            expert raises ``ValueError``). The new items' :math:`\log\tau_i` are
            not estimated: they are set to its prior mean (0, i.e.
            :math:`\tau_i = 1`, without a prior), and the fitted abilities and
            class prior are used.

        Returns
        -------
        ndarray or pandas DataFrame
            With no argument, a copy of ``posterior_``; otherwise the posterior
            of the new items (the class prior for an item with no label); new
            labels given as a pandas DataFrame give a DataFrame indexed by task id
            with one column per class id.
        """
        return super().predict_proba(labels, X)

    def _proba_new(self, labels, X=None) -> np.ndarray:
        if X is not None:
            raise ValueError("GLAD has no features: predict_proba takes labels only")
        J = self.n_experts_
        crowd = _canonical_order(_new_crowd(labels, self.expert_ids_, self.class_ids_, J,
                                            self.n_classes_))
        _, b0 = self._start_values(crowd.n_items, J)
        params = GLADParams(self.class_prior_, self.ability_, b0)
        q, _ = _softmax_rows_inplace(self._log_joint(crowd, params))
        return q
