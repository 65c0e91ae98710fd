r"""MACE (Multi-Annotator Competence Estimation): who is trustworthy, and who spams."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from scipy.special import betaln, digamma, expit, gammaln

from crowdlearn._base import EMEstimator, posterior_or_refuse
from crowdlearn._validation import check_em_params, check_flag, check_scalar
from crowdlearn.aggregation._common import (_canonical_order, _flat_indices, _new_crowd,
                                            _softmax_last, _softmax_rows_inplace)
from crowdlearn.frames import ClassPrior, IdResults
from crowdlearn.labels import CrowdLabels, as_crowd_labels

__all__ = ["MACE", "MACEParams", "MACEVBParams"]


class MACEParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``)."""

    class_prior: np.ndarray  # (K,)            phi
    trust: np.ndarray        # (n_experts,)    rho_r = P(not spamming)
    strategy: np.ndarray     # (n_experts, K)  xi_r, the spamming distribution


class MACEVBParams(NamedTuple):
    """What variational Bayes iterates on (``method="vb"``): the class prior (a point
    estimate) and the parameters of the approximate posteriors
    :math:`q(\\rho_r) = \\text{Beta}(a_\\rho + \\kappa_r, b_\\rho + |I_r| - \\kappa_r)` and
    :math:`q(\\xi_r) = \\text{Dirichlet}(c_\\xi + \\nu_{r1}, \\dots, c_\\xi + \\nu_{rN})`."""

    class_prior: np.ndarray  # (K,)            phi
    knowing: np.ndarray      # (n_experts,)    a_rho + kappa_r: prior + expected known labels
    spamming: np.ndarray     # (n_experts,)    b_rho + |I_r| - kappa_r: prior + expected spams
    strategy: np.ndarray     # (n_experts, K)  c_xi + nu_rp: prior + expected spams per class


class _Data(NamedTuple):
    crowd: CrowdLabels
    votes: object          # sparse (n_items, n_experts * K + 1), see dawid_skene._flat_indices
    pair: np.ndarray       # expert * K + label, one per label
    n_pair: np.ndarray     # (n_experts, K): how often expert r gave label p
    hyper: tuple           # (a, b, c): theta_prior and strategy_prior, checked
    vb: bool               # method == "vb"


def mace_confusion(trust, strategy) -> np.ndarray:
    r"""``(n_experts, N, N)`` matrices :math:`M^{(r)}_{n,p} = \rho_r 1\{p = n\} + (1 - \rho_r)\xi_{r,p}`."""
    trust = np.asarray(trust, dtype=float)
    strategy = np.asarray(strategy, dtype=float)
    K = strategy.shape[1]
    conf = ((1.0 - trust)[:, None, None] * strategy[:, None, :]).repeat(K, axis=1)
    idx = np.arange(K)
    conf[:, idx, idx] += trust[:, None]
    return conf


def _best_trust(C, n_pair, strategy, trust, a: float, b: float) -> np.ndarray:
    r"""Every expert's trust maximising, with its strategy :math:`\xi_r` held, the expected
    complete-data log-posterior over the class alone,

    .. math::

        f(\rho_r) = \sum_p C_{rp} \log(\rho_r + (1 - \rho_r)\xi_{rp})
        + (|I_r| - \textstyle\sum_p C_{rp} + b_\rho - 1)\log(1 - \rho_r)
        + (a_\rho - 1)\log\rho_r

    (``C[r, p]``: the posterior mass that expert ``r``'s labels ``p`` are right). It is
    concave, so the maximiser is 0 where :math:`f'(0) \le 0` (:math:`a_\rho = 1`), 1 where no
    label can be wrong, 1/2 for an expert with no label under the flat prior, else the zero
    of :math:`f'`, by Newton's method from ``trust`` (:func:`_trust_root`), to a relative
    1e-13."""
    n = n_pair.sum(axis=1)
    wrong = n - C.sum(axis=1) + (b - 1.0)
    gain = C * (1.0 - strategy)
    with np.errstate(divide="ignore", invalid="ignore"):
        at0 = np.where(gain > 0, gain / strategy, 0.0).sum(axis=1) - wrong
    empty = n + a + b - 2.0 <= 0  # no label under the flat prior: f is constant
    zero = (at0 <= 0) & (a <= 1) & ~empty
    one = (wrong <= 0) & ~zero & ~empty
    solve = ~(zero | one | empty)
    out = np.full(n.shape, 0.5)
    out[zero], out[one] = 0.0, 1.0
    if solve.any():
        out[solve] = _trust_root(gain[solve], strategy[solve], wrong[solve], a,
                                 np.asarray(trust, dtype=float)[solve])
    return out


def _trust_root(gain, strategy, wrong, a: float, start) -> np.ndarray:
    """The zero of ``f'`` in ``(0, 1)`` for every row (see :func:`_best_trust`). It is the
    zero of ``h(rho) = (1 - rho) f'(rho)``, a sum of terms ``c / (xi + (1 - xi) rho)``,
    ``(a - 1) / rho`` and a constant: decreasing and convex, so Newton's method converges
    monotonically (quadratically) from the left of the zero, and a step from its right lands
    on its left; it stops at a relative change of 1e-13, or where ``h`` is down to its
    rounding error."""
    def h_and_slope(rho):  # and the size of the terms, for h's rounding error
        den = rho[:, None] + (1.0 - rho[:, None]) * strategy
        h = (gain * (1.0 - rho[:, None]) / den).sum(axis=1)
        slope = -(gain / den ** 2).sum(axis=1)
        if a > 1:
            h, slope = h + (a - 1.0) * (1.0 - rho) / rho, slope - (a - 1.0) / rho ** 2
        return h - wrong, slope, h + wrong

    rho = np.where((start > 0) & (start < 1), start, 0.5)
    for _ in range(100):
        h, slope, size = h_and_slope(rho)
        step = rho - h / slope  # slope < 0: every row has some gain or a > 1
        # from the right of the zero a step lands left of it, or at or below 0 (then halve);
        # from the left, convexity keeps every step left of the zero and converging
        step = np.where(step > 0, step, 0.5 * rho)
        # converged, or h is rounding noise (a zero at 0 up to rounding)
        done = (np.abs(step - rho) <= 1e-13 * rho) | (np.abs(h) <= 1e-14 * size)
        rho = np.where(np.abs(h) <= 1e-14 * size, rho, step)
        if done.all():
            break
    return rho


def _vb_log_weights(params: MACEVBParams):
    """``(log rho~, log (1 - rho)~, log xi~)``: the expectations of ``log rho_r``,
    ``log(1 - rho_r)`` (both ``(n_experts,)``) and ``log xi_r`` (``(n_experts, K)``)
    under the Beta and Dirichlet factors."""
    A, B, G = params.knowing, params.spamming, params.strategy
    both = digamma(A + B)
    return (digamma(A) - both, digamma(B) - both,
            digamma(G) - digamma(G.sum(axis=1))[:, None])


def _vb_log_confusion(params: MACEVBParams) -> np.ndarray:
    """``log M~[r, n, p]``: ``log(rho~ 1{p = n} + (1 - rho)~ xi~_p)``, the sub-normalised
    confusion matrices the variational E-step uses in place of ``M``."""
    log_know, log_spam, log_xi = _vb_log_weights(params)
    J, K = log_xi.shape
    out = np.repeat((log_spam[:, None] + log_xi)[:, None, :], K, axis=1)
    idx = np.arange(K)
    out[:, idx, idx] = np.logaddexp(log_know[:, None], out[:, idx, idx])
    return out


def _vb_kl(params: MACEVBParams, hyper) -> float:
    """``sum_r KL(Beta(A_r, B_r) || Beta(a, b)) + KL(Dir(G_r) || Dir(c, ..., c))``."""
    a, b, c = hyper
    A, B, G = params.knowing, params.spamming, params.strategy
    K = G.shape[1]
    kl_beta = (betaln(a, b) - betaln(A, B) + (A - a) * digamma(A) + (B - b) * digamma(B)
               - (A + B - a - b) * digamma(A + B))
    S = G.sum(axis=1)
    kl_dir = (gammaln(S) - gammaln(G).sum(axis=1) - gammaln(K * c) + K * gammaln(c)
              + ((G - c) * (digamma(G) - digamma(S)[:, None])).sum(axis=1))
    return float(kl_beta.sum() + kl_dir.sum())


def _vb_means(params: MACEVBParams) -> MACEParams:
    """The posterior means: ``rho_r = A_r / (A_r + B_r)``, ``xi_r = G_r / sum_p G_rp``."""
    A, B, G = params.knowing, params.spamming, params.strategy
    return MACEParams(params.class_prior, A / (A + B), G / G.sum(axis=1, keepdims=True))


def _vb_flat(K: int, J: int):
    """SQUAREM's view of the variational parameters: log class prior, log A, log B, log G."""
    def flatten(p: MACEVBParams) -> np.ndarray:
        with np.errstate(divide="ignore"):
            parts = (np.log(p.class_prior), np.log(p.knowing), np.log(p.spamming),
                     np.log(p.strategy).ravel())
        return np.concatenate(parts).clip(-700.0, 700.0)

    def unflatten(x: np.ndarray) -> MACEVBParams:
        # an extrapolated step stays where digamma and the KL terms are finite and precise
        # (a worse step is then refused by SQUAREM's safeguard, not turned into NaN)
        counts = np.exp(np.clip(x[K:], -20.0, 30.0))
        return MACEVBParams(_softmax_last(x[:K]), counts[:J], counts[J:2 * J],
                            counts[2 * J:].reshape(J, K))
    return flatten, unflatten


def _mace_flat(K: int, J: int):
    """SQUAREM's view of the parameters: log class prior, logit trust, log strategies
    (clipped so exact zeros and ones stay finite), and the way back."""
    def flatten(p: MACEParams) -> np.ndarray:
        with np.errstate(divide="ignore"):
            parts = (np.log(p.class_prior), np.log(p.trust) - np.log1p(-p.trust),
                     np.log(p.strategy).ravel())
        return np.concatenate(parts).clip(-700.0, 700.0)

    def unflatten(x: np.ndarray) -> MACEParams:
        return MACEParams(_softmax_last(x[:K]), expit(x[K:K + J]),
                          _softmax_last(x[K + J:].reshape(J, K)))
    return flatten, unflatten


# variational Bayes's priors: beyond these the digamma functions overflow (below) or the KL
# terms lose every digit to cancellation (above), and the bound stops being monotone
_VB_PRIOR_RANGE = (1e-8, 1e6)


def _check_prior_value(value, name: str, vb: bool = False) -> float:
    if vb:  # a proper prior, in the range where the bound is computed to full precision
        check_scalar(value, name, low=_VB_PRIOR_RANGE[0], high=_VB_PRIOR_RANGE[1])
    else:   # MAP by EM: pseudo-counts value - 1 >= 0 keep the M-step's closed form
        check_scalar(value, name, low=1.0)
    return float(value)


class MACE(ClassPrior, IdResults, EMEstimator):
    r"""MACE: Multi-Annotator Competence Estimation (Hovy et al. 2013), fitted by EM or by
    variational Bayes.

    Item :math:`i` has a hidden true class :math:`y^{(i)} \sim \phi` (uniform in
    Hovy et al.'s MACE; estimated here by default). Each time expert :math:`r`
    labels it, the expert first flips a coin: with probability :math:`\rho_r`
    (its *trust*) it *knows* (:math:`S = 0`) and gives the true class; with probability
    :math:`1 - \rho_r` it *spams* (:math:`S = 1`) and draws the label from its
    own strategy :math:`\xi_r`, a distribution over the :math:`N` classes that
    ignores the item. So

    .. math::

        M^{(r)}_{n,p} = P(y^{(i)}_r = p \mid y^{(i)} = n)
        = \rho_r\, 1\{p = n\} + (1 - \rho_r)\,\xi_{r,p},

    a Dawid--Skene confusion matrix with :math:`N` parameters per expert:
    :math:`\rho_r` says *how much* to trust expert :math:`r`, and
    :math:`\xi_r` what it says when it cannot be trusted (a spammer who always
    says "0" has :math:`\xi_r` on class 0 and tells nothing about the items).
    (Hovy et al. write ``theta_j`` for the trust and ``xi_j`` for the
    strategy of annotator ``j``, and ``T_i`` for the true class.)

    Parameters
    ----------
    n_classes : int, optional
        Number of classes :math:`N` (>= 2). Inferred from the labels when omitted.
    method : {"em", "vb"}, default "em"
        ``"em"``: maximum likelihood (or MAP with the priors below) by EM.
        ``"vb"``: mean-field variational Bayes, as MACE's own tool and crowd-kit by
        default: the trusts and strategies get Beta and Dirichlet posteriors
        (``trust_posterior_``, ``strategy_posterior_``) instead of point estimates,
        and the objective is the evidence lower bound (see Notes). On the bundled
        crowds with a truth it is as accurate as EM on ``rte``, ``temp`` and ``wsd``
        and 3.7 points less on ``bluebirds`` (0.861 against 0.898; crowd-kit's 0.722),
        where its Dirichlet(10) prior pulls every strategy towards uniform
        (``benchmarks/bench_crowdkit_accuracy.py``).
    theta_prior : (float, float), optional
        :math:`(a_\rho, b_\rho)` of a Beta(:math:`a_\rho, b_\rho`) prior on every trust
        :math:`\rho_r`.
        With ``"em"`` both >= 1 (default :math:`(1, 1)`, the flat prior: **maximum
        likelihood**); EM finds the MAP estimate, adding :math:`a_\rho - 1` pseudo-labels
        that were "known" and :math:`b_\rho - 1` that were "spammed". With ``"vb"`` both
        in :math:`[10^{-8}, 10^6]` (default :math:`(0.5, 0.5)`, MACE's).
    strategy_prior : float, optional
        Concentration :math:`c_\xi` of a symmetric Dirichlet prior on every strategy
        :math:`\xi_r`. With ``"em"`` :math:`c_\xi \ge 1` (pseudo-count :math:`c_\xi - 1`
        per class; default 1, maximum likelihood); with ``"vb"`` :math:`c_\xi \in [10^{-8},
        10^6]` (default 10, MACE's). MACE's own EM smooths every fractional count by
        :math:`0.01/N`, which is ``theta_prior=(1 + 0.01/N, 1 + 0.01/N)``,
        ``strategy_prior=1 + 0.01/N``.
    fit_class_prior : bool, default True
        ``True`` estimates :math:`\phi` in the M-step (maximum likelihood, no
        prior); ``False`` fixes it uniform, as MACE's own EM does (the default
        up to 0.2). Estimating it pays where the classes are unequal: on
        crowd-kit's imbalanced product-matching crowd (not bundled) the
        accuracy was measured at 0.839 with the uniform prior and 0.940 with
        the estimated one, above the 0.929 of MACE's variational Bayes (the
        original tool's and crowd-kit's default). On the bundled crowds with a
        truth (``bluebirds``, ``rte``, ``temp``, ``wsd``) both settings give
        the same accuracy (``benchmarks/bench_glad_mace_defaults.py``).
    n_init : int, default 10
        Number of EM runs, the run with the highest final objective being kept
        (MACE's likelihood has many local optima, and MACE itself restarts 10
        times). Run 0 starts from the soft majority vote (one M-step from it
        with :math:`\rho_r = 1/2`, :math:`\xi_r` uniform); the others from
        random parameters: :math:`\rho_r` uniform on :math:`[0, 1]`,
        :math:`\xi_r \sim` Dirichlet(1, ..., 1), :math:`\phi` uniform.
    max_iter : int, default 1000
        At most this many M-steps per run: a cap, not a stopping rule. With the M-step
        in the Notes every run on the bundled crowds meets the default ``tol`` within
        about 120 and ``tol=1e-12`` within about 310 (EM's textbook update of the trust
        needed up to 3,024 for ``tol=1e-12``).
    tol : float, default 1e-8
        A run stops when the objective rises by at most ``tol * max(1, |objective|)``.
    accelerate : bool, default False
        SQUAREM with the engine's monotonicity safeguard (see
        :class:`~crowdlearn.DawidSkene`); same fixed points, fewer iterations.
    random_state : None, int or numpy Generator
        Seed of the random restarts.
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step; its
        ``params`` is a :class:`MACEParams` (``class_prior``, ``trust``,
        ``strategy``), or with ``"vb"`` a :class:`MACEVBParams` (``class_prior``,
        ``knowing``, ``spamming``, ``strategy``). Returning ``True`` stops the run.
    progress : bool, default False
        A progress bar over restarts and iterations (see :func:`~crowdlearn.fit_em`).

    Attributes
    ----------
    trust_ : ndarray of shape (n_experts,)
        :math:`\rho_r = P(\text{expert } r \text{ knows the answer})`; what
        ``skills_`` returns. An expert with no label gets the prior mode
        :math:`(a_\rho-1)/(a_\rho+b_\rho-2)`, or 1/2 under the flat prior. With ``"vb"`` the
        posterior mean :math:`(a_\rho + \kappa_r) / (a_\rho + b_\rho + |I_r|)`.
    trust_posterior_ : ndarray of shape (n_experts, 2)
        ``"vb"`` only: the two parameters of every trust's Beta posterior :math:`q(\rho_r)`.
    strategy_posterior_ : ndarray of shape (n_experts, n_classes)
        ``"vb"`` only: the parameters of every strategy's Dirichlet posterior :math:`q(\xi_r)`
        (``strategy_`` is its mean).
    spamming_ : ndarray of shape (n_experts,)
        :math:`1 - \rho_r` (crowd-kit's name).
    strategy_ : ndarray of shape (n_experts, n_classes)
        :math:`\xi_{r,p}`, the spamming distributions (rows sum to one; uniform
        when an expert has no expected spam at all under the flat prior).
    thetas_ : ndarray of shape (n_experts, n_classes)
        A copy of ``strategy_`` under crowd-kit's name: ``thetas_[r, p]`` is the
        probability that expert ``r`` says ``p`` when it spams, rows by ``expert_ids_``,
        columns by ``class_ids_`` (the sorted class ids; crowd-kit's columns follow the
        order in which labels first appear). So ``confusion_[r, n, p] = trust_[r] * (n == p)
        + spamming_[r] * thetas_[r, p]``. With ``"vb"`` it is the posterior mean of
        :math:`\xi_r`, whose rows sum to one; crowd-kit's variational ``thetas_`` is
        :math:`\exp \mathbb{E}[\log \xi_{r,p}]`, whose rows sum to less than one.
    confusion_ : ndarray of shape (n_experts, n_classes, n_classes)
        The implied :math:`M^{(r)}_{n,p}`, ``[r, n, p]``.
    class_prior_ : ndarray of shape (n_classes,)
        :math:`\phi` (uniform unless ``fit_class_prior=True``).
    priors_ : ndarray or pandas Series
        A copy of ``class_prior_`` under crowd-kit's name: a Series named ``"prior"``
        indexed by class id when fitted on a DataFrame.
    posterior_ : ndarray of shape (n_items, n_classes)
        :math:`Q_i(n) = P(y^{(i)} = n \mid \mathcal{D}; \theta)` under the fitted
        parameters (the class prior for an item with no label). With ``"vb"`` the item
        factor :math:`q_i`, computed with the sub-normalised :math:`\tilde M`
        (see Notes), not with the means ``trust_``, ``strategy_`` (it differs from that
        by a few hundredths at most on the bundled crowds); ``predict_proba`` of new
        labels uses :math:`\tilde M` too.
    labels_, probas_, skills_
        By original id when fitted on a DataFrame (see
        :class:`~crowdlearn.frames.IdResults`); ``labels_`` is the arg-max of
        ``posterior_``, the lowest class on ties; ``skills_`` is ``trust_``.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective :math:`J(\theta)` below after every E-step of the best run
        (the log-likelihood :math:`\ell(\theta)` under the default flat priors; the
        evidence lower bound with ``"vb"``); never decreases.
    log_likelihood_ : float
        The observed-data log-likelihood :math:`\ell(\theta)` at the fitted parameters
        (with ``"vb"``, at the posterior means).
    objective_ : float
        ``log_likelihood_history_[-1]``.
    n_iter_ : int
    converged_ : bool
    flat_optimum_ : bool
        Whether the best run, with ``accelerate=True``, ended on a flat optimum: its last
        SQUAREM cycle moved a posterior probability by more than 0.05 while the objective
        rose by at most ``tol`` (a ``DegenerateFitWarning`` says so too; see
        :func:`~crowdlearn.run_em`). Always False without ``accelerate``.
    n_items_, n_experts_, n_classes_ : int

    Notes
    -----
    Sums over :math:`r \in R_i` run over the labels item :math:`i` received
    (a repeated label is one more term), and sums over :math:`i \in I_r` over the
    labels expert :math:`r` gave, :math:`|I_r|` in number; :math:`\theta` is the prior
    :math:`\phi` with every trust :math:`\rho_r` and strategy :math:`\xi_r`.

    **Objective.** With :math:`M^{(r)}_{n,p} = \rho_r 1\{p = n\} + (1 - \rho_r)\xi_{r,p}`,

    .. math::

        \begin{aligned}
        J(\theta) = {} &\sum_i \log \sum_n \phi_n \prod_{r \in R_i}
        M^{(r)}_{n,\, y^{(i)}_r} \\
        &+ \sum_r \Big[(a_\rho - 1)\log\rho_r + (b_\rho - 1)\log(1 - \rho_r)
        + (c_\xi - 1)\sum_p \log\xi_{r,p}\Big],
        \end{aligned}

    the log-posterior up to a constant (terms whose coefficient is 0 are left
    out, so a parameter at 0 or 1 never gives :math:`0 \cdot \infty`).

    **E-step.** :math:`\log Q_i(n) = \log\phi_n + \sum_{r \in R_i}\log
    M^{(r)}_{n,\, y^{(i)}_r} - \log Z_i`, in log space (row maximum subtracted;
    :math:`\log 0 = -\infty` is allowed, so :math:`\rho_r \in \{0, 1\}`
    gives zeros, never NaN). Given :math:`y^{(i)} = n`, a label
    :math:`y^{(i)}_r = p` was *known* with probability
    :math:`\chi_{rp} = \rho_r / M^{(r)}_{p,p}` if :math:`p = n`, and certainly spammed
    otherwise. So the expected number of known labels :math:`p` is

    .. math::

        \mathbb{E}[\text{known}_{r,p}] = \chi_{rp} \sum_{i \in I_r:\, y^{(i)}_r = p} Q_i(p),
        \qquad
        \chi_{rp} = \frac{\rho_r}{\rho_r + (1 - \rho_r)\xi_{r,p}},

    (the posterior that the item's class *is* the label given, times the
    responsibility :math:`\chi_{rp}` of knowledge versus a lucky spam), and
    the expected number of spammed labels :math:`p` is
    :math:`\nu_{rp} = \mathbb{E}[\text{spam}_{r,p}] = \sum_{i \in I_r:\, y^{(i)}_r = p}
    (1 - Q_i(p)\chi_{rp})`.

    **M-step.** EM over the class *and* the spam indicators (MACE's own tool, crowd-kit)
    maximises the expected complete-data log-posterior over both,

    .. math::

        \begin{aligned}
        &\sum_p \Big[\mathbb{E}[\text{known}_{r,p}]\log\rho_r
        + \mathbb{E}[\text{spam}_{r,p}]\big(\log(1 - \rho_r) + \log\xi_{r,p}\big)\Big] \\
        &\quad + (a_\rho - 1)\log\rho_r + (b_\rho - 1)\log(1 - \rho_r)
        + (c_\xi - 1)\sum_p\log\xi_{r,p}
        \end{aligned}

    per expert (plus :math:`\sum_{i,n} Q_i(n)\log\phi_n`). With
    :math:`\kappa_r = \sum_p \mathbb{E}[\text{known}_{r,p}]` and
    :math:`\sum_p \nu_{rp} = |I_r| - \kappa_r` its maximisers are (the :math:`\rho_r` part
    is concave, the :math:`\xi_r` part a Lagrangian on the simplex)

    .. math::

        \rho_r = \frac{\kappa_r + a_\rho - 1}{|I_r| + a_\rho + b_\rho - 2}, \qquad
        \xi_{r,p} = \frac{\nu_{rp} + c_\xi - 1}{|I_r| - \kappa_r + N(c_\xi - 1)}.

    That update of :math:`\rho_r` is slow for an annotator who nearly always spams: its
    labels hardly tell which of them were known, so the trust shrinks by a fraction of a
    percent per iteration (on the bundled ``rte`` crowd, EM with that update needed 3,024
    iterations to meet ``tol=1e-12``, on ``temp`` 2,024). So here the trust
    is updated on the class alone: a label :math:`p` of expert :math:`r` is right with
    probability :math:`Q_i(p)`, and then has probability :math:`M^{(r)}_{p,p} = \rho_r +
    (1 - \rho_r)\xi_{r,p}`, else :math:`(1 - \rho_r)\xi_{r,p}`; with
    :math:`C_{rp} = \sum_{i \in I_r:\, y^{(i)}_r = p} Q_i(p)` and :math:`n_{rp}` the number
    of labels :math:`p` of expert :math:`r`, the expected complete-data log-posterior over
    the class is, per expert,

    .. math::

        \begin{aligned}
        \sum_p \Big[&C_{rp}\log\big(\rho_r + (1 - \rho_r)\xi_{r,p}\big) \\
        &+ (n_{rp} - C_{rp})\log\big((1 - \rho_r)\xi_{r,p}\big)\Big] + \text{prior terms},
        \end{aligned}

    concave in :math:`\rho_r`. The M-step is two conditional maximisations (ECM, Meng and
    Rubin 1993): :math:`\rho_r` maximises this with :math:`\xi_r` held (0 when its
    derivative at 0 is :math:`\le 0` and :math:`a_\rho = 1`, otherwise the zero of the
    derivative, by Newton's method in a bracket); then :math:`\xi_r` takes the closed form
    above with :math:`\nu_{rp}` computed from the new :math:`\rho_r` and the old
    :math:`\xi_r`, which raises the same expected log-posterior again (the bound it
    maximises touches it at the old :math:`\xi_r`); :math:`\phi_n = \frac{1}{m}\sum_i
    Q_i(n)` if fitted. Each part raises :math:`J`'s minorant, so :math:`J` never decreases
    and the fixed points are EM's; on the bundled crowds the fits reach the same objective
    as EM over both (to 1e-9 relative, measured at ``tol=1e-12``) and ``tol=1e-12`` is
    met within 310 iterations (92 on ``rte``, 80 on ``temp``). A zero denominator (an expert
    with no label under flat priors, or no expected spam) gives 1/2 or a uniform strategy.
    An iteration is one pass over the labels plus a few passes over the
    ``(n_experts, N)`` counts, so it costs about what a Dawid--Skene iteration costs.

    **Variational Bayes** (``method="vb"``). The trusts and strategies are random,
    :math:`\rho_r \sim \text{Beta}(a_\rho, b_\rho)` and :math:`\xi_r \sim
    \text{Dirichlet}(c_\xi, \dots, c_\xi)`, and their posterior is approximated by
    factors :math:`q(\rho_r)` (a Beta), :math:`q(\xi_r)` (a Dirichlet) and one factor
    :math:`q_i` per item, over its class and over which of its labels were known, chosen to
    maximise the evidence lower bound. Each factor in turn is optimal given the others:
    the item factor is the E-step above with :math:`M` replaced by the sub-normalised

    .. math::

        \tilde M^{(r)}_{n,p} = e^{\mathbb{E}[\log\rho_r]}\, 1\{p = n\}
        + e^{\mathbb{E}[\log(1 - \rho_r)] + \mathbb{E}[\log\xi_{r,p}]},

    the expectations under :math:`q(\rho_r)` and :math:`q(\xi_r)`, digamma functions
    :math:`\psi` (e.g. :math:`\mathbb{E}[\log\rho_r] = \psi(a_\rho + \kappa_r)
    - \psi(a_\rho + b_\rho + |I_r|)`); and the other factors add the expected counts of the
    M-step (with these exponentials in :math:`\chi_{rp}`) to the prior:
    :math:`q(\rho_r) = \text{Beta}(a_\rho + \kappa_r, b_\rho + |I_r| - \kappa_r)` and
    :math:`q(\xi_r) = \text{Dirichlet}(c_\xi + \nu_{r1}, \dots, c_\xi + \nu_{rN})`;
    :math:`\phi` stays a point estimate (the mean
    posterior, or uniform). With every item factor optimal, the bound is

    .. math::

        \begin{aligned}
        \mathcal{L} = {} &\sum_i \log \sum_n \phi_n \prod_{r \in R_i}
        \tilde M^{(r)}_{n,\, y^{(i)}_r} \\
        &- \sum_r \mathrm{KL}\big(q(\rho_r) \,\|\,
        \text{Beta}(a_\rho, b_\rho)\big) \\
        &- \sum_r \mathrm{KL}\big(q(\xi_r) \,\|\,
        \text{Dir}(c_\xi, \dots, c_\xi)\big),
        \end{aligned}

    which never decreases: each update maximises it over one factor. (The tests check
    :math:`\mathcal{L}` against an enumeration of every class and known-or-spammed
    pattern of an item, with the expectations and KL terms integrated numerically, and
    that the updates of :math:`q(\rho_r)` and :math:`q(\xi_r)` beat random perturbations.)

    **Identifiability.** Unlike Dawid--Skene, permuting the hidden classes does
    not map a MACE model to another MACE model (the knowing part is tied to
    the diagonal), so no relabelling is needed; but "everybody spams"
    (every :math:`\rho_r = 0`, posterior = prior) is always a stationary point, and
    other poor local optima exist: hence the restarts.

    References
    ----------
    D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy, "Learning whom to
    trust with MACE", NAACL-HLT 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.mace import MACE
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.integers(0, 3, 1000)
    >>> trust = np.array([0.9, 0.8, 0.7, 0.1, 0.0])
    >>> knows = rng.random((1000, 5)) < trust
    >>> spam = np.where(np.arange(5) == 4, 0, rng.integers(0, 3, (1000, 5)))  # 4 always says 0
    >>> labels = np.where(knows, truth[:, None], spam)
    >>> m = MACE(n_init=3, random_state=0).fit(labels)
    >>> np.round(m.trust_, 1)
    array([0.9, 0.8, 0.7, 0.1, 0. ])
    >>> bool((m.labels_ == truth).mean() > 0.9)
    True
    >>> m.thetas_.shape, bool(np.allclose(m.thetas_.sum(axis=1), 1.0))
    ((5, 3), True)
    >>> np.round(m.thetas_[4], 2)  # annotator 4 spams "0" every time
    array([1., 0., 0.])
    """

    def __init__(self, *, n_classes: int | None = None, method: str = "em",
                 theta_prior=None, strategy_prior=None, fit_class_prior: bool = True,
                 n_init: int = 10, max_iter: int = 1000, tol: float = 1e-8,
                 accelerate: bool = False, random_state=None, callback=None,
                 progress: bool = False):
        self._store_params(locals())

    # -- input ---------------------------------------------------------------------------
    def _check_params(self):
        if not isinstance(self.method, str) or self.method not in ("em", "vb"):
            raise ValueError(f"method must be 'em' (maximum likelihood or MAP by EM) or 'vb' "
                             f"(variational Bayes, as MACE's own tool), got {self.method!r}")
        if self.n_classes is not None:
            check_scalar(self.n_classes, "n_classes", kind=numbers.Integral, low=2)
        self._hyper()
        check_flag(self.fit_class_prior, "fit_class_prior")
        check_em_params(self)

    def _hyper(self):
        """``(a, b, c)``: ``theta_prior`` and ``strategy_prior``, checked (``>= 1`` for EM,
        ``> 0`` for variational Bayes), or the method's defaults where they are None."""
        vb = self.method == "vb"
        prior = self.theta_prior
        if prior is None:
            prior = (0.5, 0.5) if vb else (1.0, 1.0)
        if isinstance(prior, (str, bytes)) or np.ndim(prior) != 1 or len(prior) != 2:
            bound = "in [1e-08, 1e+06]" if vb else ">= 1"
            raise ValueError(f"theta_prior must be a pair (a, b) of numbers {bound} (a Beta "
                             f"prior), got {prior!r}")
        strategy = self.strategy_prior
        if strategy is None:
            strategy = 10.0 if vb else 1.0
        a = _check_prior_value(prior[0], "theta_prior[0] (a)", vb)
        b = _check_prior_value(prior[1], "theta_prior[1] (b)", vb)
        c = _check_prior_value(strategy, "strategy_prior", vb)
        return a, b, c

    def _data(self, crowd: CrowdLabels) -> _Data:
        crowd = _canonical_order(crowd)  # the same fit whatever the order of the rows
        K, J = crowd.n_classes, crowd.n_experts
        pair = crowd.expert * K + crowd.label
        n_pair = np.bincount(pair, minlength=J * K).reshape(J, K).astype(float)
        return _Data(crowd, _flat_indices(crowd, K)[0], pair, n_pair, self._hyper(),
                     self.method == "vb")

    def _make_data(self, labels) -> _Data:
        if labels is None:
            raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) "
                             "tuple, a DataFrame or an (n_items, n_experts) matrix")
        crowd = as_crowd_labels(labels, n_classes=self.n_classes)
        if crowd.n_labels == 0:
            raise ValueError("labels holds no label at all")
        return self._data(crowd)

    # -- EM pieces -------------------------------------------------------------------------
    @staticmethod
    def _log_joint(data: _Data, params) -> np.ndarray:
        """``log P(y^(i) = n, labels of item i)``, shape ``(n_items, N)``; for
        :class:`MACEVBParams` the same with the sub-normalised ``M~`` (the variational
        E-step's ``log`` of the unnormalised posterior)."""
        if isinstance(params, MACEVBParams):
            log_conf = _vb_log_confusion(params)
        else:
            with np.errstate(divide="ignore"):
                log_conf = np.log(mace_confusion(params.trust, params.strategy))
        J, K, _ = log_conf.shape
        table = np.empty((J * K + 1, K))  # [r * K + p, n] = log M[r, n, p]; then log phi
        table[:-1].reshape(J, K, K)[...] = log_conf.transpose(0, 2, 1)
        with np.errstate(divide="ignore"):
            np.log(params.class_prior, out=table[-1])
        return data.votes @ table

    @staticmethod
    def _log_prior(params: MACEParams, hyper) -> float:
        a, b, c = hyper
        total = 0.0
        with np.errstate(divide="ignore"):
            if a > 1:
                total += (a - 1) * float(np.log(params.trust).sum())
            if b > 1:
                total += (b - 1) * float(np.log1p(-params.trust).sum())
            if c > 1:
                total += (c - 1) * float(np.log(params.strategy).sum())
        return total

    def _e_step(self, data: _Data, params):
        q, log_evidence = _softmax_rows_inplace(self._log_joint(data, params))
        if data.vb:  # the evidence lower bound
            return q, float(log_evidence.sum()) - _vb_kl(params, data.hyper)
        return q, float(log_evidence.sum()) + self._log_prior(params, data.hyper)

    @staticmethod
    def _agreement(data: _Data, q: np.ndarray) -> np.ndarray:
        """``C[r, p]``: the posterior mass, over the labels ``p`` expert ``r`` gave, that the
        item's class is ``p``, ``(n_experts, N)``."""
        crowd = data.crowd
        J, K = crowd.n_experts, crowd.n_classes
        return np.bincount(data.pair, weights=q[crowd.item, crowd.label],
                           minlength=J * K).reshape(J, K)

    def _expected_counts(self, data: _Data, q: np.ndarray, params: MACEParams):
        """``(known, spam)``, both ``(n_experts, N)``: expected known / spammed labels ``p``."""
        C = self._agreement(data, q)
        if data.vb:  # the responsibility of knowing, with the expected log-parameters
            log_know, log_spam, log_xi = _vb_log_weights(params)
            rho = expit(log_know[:, None] - log_spam[:, None] - log_xi)
        else:
            theta = params.trust[:, None]
            denom = theta + (1.0 - theta) * params.strategy
            rho = np.divide(np.broadcast_to(theta, denom.shape), denom,
                            out=np.zeros_like(denom), where=denom > 0)
        known = C * rho
        spam = np.maximum(data.n_pair - known, 0.0)
        return known, spam

    def _class_prior(self, q: np.ndarray) -> np.ndarray:
        if self.fit_class_prior:
            return q.sum(axis=0) / q.shape[0]
        return np.full(q.shape[1], 1.0 / q.shape[1])

    def _m_step(self, data: _Data, q: np.ndarray, params):
        a, b, c = data.hyper
        if data.vb:  # the Beta and Dirichlet factors: prior plus expected counts
            known, spam = self._expected_counts(data, q, params)
            return MACEVBParams(self._class_prior(q), a + known.sum(axis=1),
                                b + spam.sum(axis=1), c + spam)
        K = q.shape[1]
        C = self._agreement(data, q)
        trust = _best_trust(C, data.n_pair, params.strategy, params.trust, a, b)
        # the strategies' closed form, given the new trusts (expected spams from them)
        theta = trust[:, None]
        denom = theta + (1.0 - theta) * params.strategy
        resp = np.divide(np.broadcast_to(theta, denom.shape), denom,
                         out=np.zeros_like(denom), where=denom > 0)
        spam = np.maximum(data.n_pair - C * resp, 0.0) + (c - 1)
        s_den = spam.sum(axis=1, keepdims=True)
        strategy = np.full(spam.shape, 1.0 / K)
        ok = s_den[:, 0] > 0
        strategy[ok] = spam[ok] / s_den[ok]
        return MACEParams(self._class_prior(q), trust, strategy)

    # -- the engine's hooks (crowdlearn._base.EMEstimator) ----------------------------------
    _warm_start = True  # the M-step's expected counts use the current parameters

    def _init_params(self, data: _Data, restart: int, rng):
        crowd = data.crowd
        K, J = crowd.n_classes, crowd.n_experts
        uniform = np.full(K, 1.0 / K)
        if restart == 0:
            votes = crowd.vote_counts()
            total = votes.sum(axis=1, keepdims=True)
            q = np.where(total > 0, votes / np.where(total > 0, total, 1.0), 1.0 / K)
            if data.vb:  # rho~ = (1 - rho)~ and xi~ uniform, as rho = 1/2 below
                start = MACEVBParams(uniform, np.ones(J), np.ones(J), np.ones((J, K)))
            else:
                start = MACEParams(uniform, np.full(J, 0.5), np.full((J, K), 1.0 / K))
            return self._m_step(data, q, start)
        trust, strategy = rng.uniform(0.0, 1.0, J), rng.dirichlet(np.ones(K), J)
        if not data.vb:
            return MACEParams(uniform, trust, strategy)
        a, b, c = data.hyper  # as many pseudo-labels as the expert gave, split at random
        n_r = data.n_pair.sum(axis=1)
        return MACEVBParams(uniform, a + n_r * trust, b + n_r * (1 - trust),
                            c + (n_r * (1 - trust))[:, None] * strategy)

    def _accelerator(self, data: _Data):
        if not self.accelerate:
            return None
        flat = _vb_flat if data.vb else _mace_flat
        return flat(data.crowd.n_classes, data.crowd.n_experts)

    def _set_fitted(self, data: _Data, result) -> None:
        crowd, params = data.crowd, result.params
        self._params = params
        self._remember_ids(crowd)
        if data.vb:
            means = _vb_means(params)
            self.trust_posterior_ = np.column_stack([params.knowing, params.spamming])
            self.strategy_posterior_ = params.strategy.copy()
            self._keep_em_result(result)
            _, log_evidence = _softmax_rows_inplace(self._log_joint(data, means))
            self.log_likelihood_ = float(log_evidence.sum())
        else:
            means = params
            for name in ("trust_posterior_", "strategy_posterior_"):  # from an earlier VB fit
                vars(self).pop(name, None)
            self._keep_em_result(result, log_prior=self._log_prior(params, data.hyper))
        self.class_prior_ = means.class_prior
        self.trust_ = means.trust
        self.spamming_ = 1.0 - means.trust
        self.strategy_ = means.strategy
        self.thetas_ = means.strategy.copy()  # crowd-kit's name
        self.confusion_ = mace_confusion(means.trust, means.strategy)
        self.n_items_, self.n_experts_, self.n_classes_ = (crowd.n_items, crowd.n_experts,
                                                           crowd.n_classes)

    # -- public API --------------------------------------------------------------------------
    def fit(self, labels):
        """Fit the annotators' trust and strategies (and optionally the class prior) by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix
            or pandas DataFrame with columns ``task``, ``worker``, ``label``.
            In a matrix ``-1`` marks a missing label.

        Returns
        -------
        self
        """
        return self._fit(labels)

    def _skills(self) -> np.ndarray:
        return self.trust_.copy()

    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        """Posterior class probabilities, ``(n_items, n_classes)``.

        With no argument, the training posterior; otherwise the posterior of new
        ``labels`` (any form ``fit`` accepts; annotators and classes must be
        among those seen in ``fit``) under the fitted parameters; new labels given
        as a pandas DataFrame give a DataFrame indexed by task id with one column per
        class id.
        """
        return super().predict_proba(labels, X)

    def _proba_new(self, labels, X=None) -> np.ndarray:
        if X is not None:
            raise ValueError("MACE has no features: predict_proba takes labels only")
        crowd = _new_crowd(labels, self.expert_ids_, self.class_ids_, self.n_experts_,
                           self.n_classes_)
        return posterior_or_refuse(
            self._log_joint(self._data(crowd), self._params),
            "item(s) {rows} have probability 0 under every class (a label that had "
            "probability 0 under the fitted parameters); use theta_prior/strategy_prior > 1")
