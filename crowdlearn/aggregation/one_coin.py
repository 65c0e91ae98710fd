r"""One-coin Dawid--Skene: each expert has a single accuracy, fitted by EM."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from crowdlearn.aggregation.dawid_skene import DawidSkene, DawidSkeneParams
from crowdlearn.aggregation._common import _one_coin_matrices, _softmax_last  # noqa: F401
from crowdlearn.aggregation._ds_kernel import (align_with_vote, log_param_sum, one_coin_m_step,
                                               split_counts)

__all__ = ["OneCoinDawidSkene"]


class OneCoinDawidSkene(DawidSkene):
    r"""The one-coin Dawid--Skene model: every expert has a single accuracy, fitted by EM.

    As in :class:`~crowdlearn.DawidSkene`, item :math:`i` has a hidden true class
    :math:`y^{(i)} \in \{1, \dots, N\}` drawn from the class prior
    :math:`\phi_n = P(y = n)`, and the experts label it independently given the
    class. But expert :math:`r` is described by one number, its error rate
    :math:`\epsilon_r`: it gives the true class with probability
    :math:`1 - \epsilon_r` (its accuracy) and each of the :math:`N - 1` other
    classes with probability :math:`\epsilon_r/(N - 1)`, so its confusion matrix is

    .. math::

        M^{(r)}_{n,p} = (1 - \epsilon_r) \, 1\{p = n\} + \frac{\epsilon_r}{N - 1}\, 1\{p \ne n\}.

    That is :math:`R` parameters for the experts instead of :math:`R N (N - 1)`:
    a much smaller model, which helps when experts give few labels, and which
    cannot describe an expert who confuses two particular classes or who says
    one class too often. Labels may be missing or repeated (each repeated label
    counts as one more independent draw), and binary item features may be
    added through Naive Bayes exactly as in :class:`~crowdlearn.DawidSkene`.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes :math:`N` (>= 2). Inferred from the labels when omitted.
    alpha : float, default 0.0
        Pseudo-count (>= 0): MAP-EM under a Beta(:math:`\alpha+1, \alpha+1`)
        prior on every accuracy :math:`1 - \epsilon_r`, a symmetric
        Dirichlet(:math:`\alpha+1`) prior on the class prior (and
        Beta(:math:`\alpha+1, \alpha+1`) priors on feature probabilities).
        ``alpha=0`` is maximum likelihood. Note that the same ``alpha`` adds
        :math:`2\alpha` pseudo-labels per expert here but :math:`N\alpha` per
        row of each confusion matrix in :class:`~crowdlearn.DawidSkene`.
    n_init, max_iter, tol, random_state, callback, progress
        As in :class:`~crowdlearn.DawidSkene` (run 0 starts from the soft
        majority vote, the others from random responsibilities; the run with
        the highest final objective is kept). The callback's ``state.params`` is
        a ``DawidSkeneParams`` whose confusion matrices are one-coin.

    Attributes
    ----------
    accuracy_ : ndarray of shape (n_experts,)
        The accuracy :math:`1 - \epsilon_r = P(\text{expert } r \text{ gives the
        true class})`, the same for every true class. An expert with no label at
        all gets :math:`1/N` when ``alpha=0`` (it does not enter the likelihood)
        and :math:`1/2` otherwise (the mode of its prior).
    confusion_ : ndarray of shape (n_experts, n_classes, n_classes)
        The implied confusion matrices :math:`M^{(r)}` above, ``[r, n, p] =
        P(expert r says p | true class n)``.
    class_prior_ : ndarray of shape (n_classes,)
    posterior_ : ndarray of shape (n_items, n_classes)
        :math:`Q_i(n) = P(y^{(i)} = n \mid \mathcal{D}; \theta)` under the fitted
        parameters.
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The MAP objective :math:`J(\theta)` below after every E-step of the best
        run (the log-likelihood :math:`\ell(\theta)` when ``alpha=0``); never
        decreases.
    log_likelihood_ : float
        The plain observed-data log-likelihood :math:`\ell(\theta)` at the fitted
        parameters.
    objective_ : float
        ``log_likelihood_history_[-1]``.
    n_iter_ : int
    converged_, flat_optimum_ : bool
    feature_prob_, n_experts_, n_classes_, n_items_, n_features_in_, expert_ids_, class_ids_
        As in :class:`~crowdlearn.DawidSkene`.

    Notes
    -----
    Sums over :math:`r \in R_i` run over the labels item :math:`i` received
    (a repeated label is one more term), and sums over :math:`i \in I_r` over the
    labels expert :math:`r` gave; :math:`L_r` is the number of labels expert
    :math:`r` gave, and :math:`m` the number of items.

    **Objective.** With :math:`\theta = (\phi, \epsilon)`,

    .. math::

        \begin{aligned}
        J(\theta) = {}& \sum_{i} \log \sum_{n} \phi_n \prod_{r \in R_i}
        M^{(r)}_{n,\, y^{(i)}_r} \\
        &+ \alpha\Big(\sum_n \log \phi_n + \sum_r \big[\log (1 - \epsilon_r)
        + \log\epsilon_r\big]\Big),
        \end{aligned}

    the log-likelihood :math:`\ell(\theta)` plus the log prior density (up to a
    constant).

    **E-step.** The posterior is that of :class:`~crowdlearn.DawidSkene` with
    the one-coin matrices, computed in log space:

    .. math::

        \begin{aligned}
        \log Q_i(n) = \log\phi_n + \sum_{r \in R_i} \Big[&1\{y^{(i)}_r = n\}
        \log (1 - \epsilon_r) \\
        &+ 1\{y^{(i)}_r \ne n\}\log\frac{\epsilon_r}{N - 1}\Big] - \log Z_i .
        \end{aligned}

    **M-step.** Expert :math:`r`'s part of the expected complete-data objective is

    .. math::

        \begin{aligned}
        &\sum_{i \in I_r} \sum_n Q_i(n)\Big[1\{y^{(i)}_r = n\}\log (1 - \epsilon_r)
        + 1\{y^{(i)}_r \ne n\}\log\frac{\epsilon_r}{N - 1}\Big] \\
        &\quad + \alpha\big[\log (1 - \epsilon_r) + \log\epsilon_r\big] \\
        &= (C_r + \alpha)\log (1 - \epsilon_r) + (L_r - C_r + \alpha)\log\epsilon_r
        + \text{const},
        \end{aligned}

    with :math:`C_r = \sum_{i \in I_r} Q_i(y^{(i)}_r)`, the expected number of
    correct labels of expert :math:`r` (using :math:`\sum_n Q_i(n) = 1`). This is
    a Beta log-density in :math:`1 - \epsilon_r`, concave, maximised where its
    derivative in the accuracy,
    :math:`(C_r + \alpha)/(1 - \epsilon_r) - (L_r - C_r + \alpha)/\epsilon_r`,
    vanishes:

    .. math::

        1 - \epsilon_r = \frac{\sum_{i \in I_r} Q_i(y^{(i)}_r) + \alpha}{L_r + 2\alpha},
        \qquad
        \phi_n = \frac{\sum_i Q_i(n) + \alpha}{m + N\alpha}.

    The expected counts :math:`C_r` come from the same sparse product as the
    Dawid--Skene M-step (the trace of each expert's expected confusion counts),
    so one iteration costs what a Dawid--Skene iteration costs.

    **Relation to Dawid--Skene.** The model is Dawid--Skene with every confusion
    matrix constrained to the one-coin form, so its maximum likelihood is never
    above Dawid--Skene's. It is *not* Dawid--Skene fitted with symmetric
    matrices in general, even for :math:`N = 2`: the unconstrained M-step gives
    :math:`M^{(r)}_{1,1} \neq M^{(r)}_{2,2}` whenever the expected counts differ
    between the classes. Only when the crowd itself is symmetric under swapping
    the two classes (every item has a mirror item whose labels are all flipped)
    do the two EMs follow the same path -- with ``alpha`` here equal to twice
    Dawid--Skene's, because of the pseudo-counts noted above.

    **Relabelling.** For :math:`N = 2`, swapping the hidden classes and
    replacing every :math:`\epsilon_r` by :math:`1 - \epsilon_r` changes neither
    the likelihood nor :math:`J`; the fit picks the copy that agrees best with the
    votes, as :class:`~crowdlearn.DawidSkene` does. For :math:`N > 2`
    permuting the hidden classes moves the accuracies off the diagonal, so the
    permuted copy is not a one-coin model and EM never ends in one: nothing
    is relabelled.

    References
    ----------
    A. P. Dawid and A. M. Skene, "Maximum likelihood estimation of observer
    error-rates using the EM algorithm", Applied Statistics 28(1), 1979.

    Examples
    --------
    Five experts of accuracy 0.9 down to 0.4 (below chance for two classes, above it
    for three), three classes:

    >>> from crowdlearn.simulate import one_coin_confusion, simulate_crowd
    >>> from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
    >>> import numpy as np
    >>> sim = simulate_crowd(3000, one_coin_confusion([0.9, 0.8, 0.7, 0.6, 0.4], 3),
    ...                      random_state=0)
    >>> oc = OneCoinDawidSkene().fit(sim.labels)
    >>> np.round(oc.accuracy_, 2)
    array([0.89, 0.8 , 0.7 , 0.61, 0.42])
    >>> oc.confusion_.shape, bool((np.diff(oc.log_likelihood_history_) >= 0).all())
    ((5, 3, 3), True)
    >>> bool((oc.predict() == sim.truth).mean() > 0.9)
    True
    """

    _ONE_COIN = True  # partial_fit keeps each worker's one accuracy when adding a class


    # -- EM pieces ---------------------------------------------------------------------------
    def _log_prior_term(self, params: DawidSkeneParams, prior=None) -> float:
        """The objective's prior term; ``prior`` is ``(right, wrong)`` pseudo-counts per
        expert (a Beta(right + 1, wrong + 1) density on each accuracy, up to a constant)."""
        a = float(self.alpha)
        p = params.confusion[:, 0, 0]
        extra = 0.0
        if prior is not None:
            right, wrong = prior
            K = params.confusion.shape[1]
            with np.errstate(divide="ignore"):
                extra = float(np.where(right > 0, right * np.log(p), 0.0).sum()
                              + np.where(wrong > 0, wrong * (np.log1p(-p) - np.log(K - 1)),
                                         0.0).sum())
        if a == 0:
            return extra
        total = log_param_sum(params.class_prior, params.confusion, one_coin=True)
        if params.feature_prob is not None:
            total += np.log(params.feature_prob).sum() + np.log1p(-params.feature_prob).sum()
        return a * float(total) + extra

    def _resolve_prior(self, crowd):
        """A confusion prior under the one-coin constraint, as ``(right, wrong)``
        pseudo-counts per expert: its diagonal counts as right answers, the rest as
        wrong ones (the Dirichlet density restricted to one-coin matrices is a Beta
        density in the accuracy)."""
        prior = super()._resolve_prior(crowd)
        if prior is None:
            return None
        right = np.einsum("jkk->j", prior)
        return right, prior.sum(axis=(1, 2)) - right

    def _skills(self):
        return self.accuracy_

    @staticmethod
    def _flatten(params: DawidSkeneParams) -> np.ndarray:
        """Log class prior and the logits of the accuracies (and of the features)."""
        p = params.confusion[:, 0, 0]
        with np.errstate(divide="ignore"):
            parts = [np.log(params.class_prior), np.log(p) - np.log1p(-p)]
            if params.feature_prob is not None:
                phi = params.feature_prob.ravel()
                parts.append(np.log(phi) - np.log1p(-phi))
        return np.concatenate(parts).clip(-700.0, 700.0)

    def _unflatten(self, K: int, J: int, X):
        def unflatten(x: np.ndarray) -> DawidSkeneParams:
            phi = None if X is None else expit(x[K + J:].reshape(K, X.shape[1]))
            return DawidSkeneParams(_softmax_last(x[:K]),
                                    _one_coin_matrices(expit(x[K:K + J]), K), phi)
        return unflatten

    def _params_from_counts(self, table: np.ndarray, n_experts: int, prior=None):
        """The one-coin M-step (accuracies and class prior) from a count table."""
        counts, class_counts = split_counts(table, n_experts)
        class_prior, accuracy = one_coin_m_step(counts, class_counts, self.alpha, prior)
        K = class_counts.shape[0]
        return DawidSkeneParams(class_prior, _one_coin_matrices(accuracy, K), None)

    @staticmethod
    def _align_params(agreement: np.ndarray, params: DawidSkeneParams, q=None):
        # N = 2: swapping the classes maps the accuracy 1 - eps_r to eps_r, still one-coin;
        # N > 2: no symmetry
        if agreement.shape[0] == 2:
            return align_with_vote(agreement, params, q)
        return params, q

    def _store_fit(self, result, params, posterior, **kwargs) -> None:
        super()._store_fit(result, params, posterior, **kwargs)
        self.accuracy_ = self.confusion_[:, 0, 0].copy()

    # -- public API --------------------------------------------------------------------------
    def fit(self, labels, X=None, *, gold=None):
        """Fit the class prior and the experts' accuracies (and feature probabilities) by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, or (n_items, n_experts) matrix
            The crowd's labels; in a matrix ``-1`` marks a missing label.
        X : array-like of shape (n_items, n_features), optional
            Binary item features, as in :meth:`DawidSkene.fit`.
        gold : dict, pandas Series or array, optional
            Known true classes of some items, clamped in every E-step, as in
            :meth:`DawidSkene.fit`.

        Returns
        -------
        self
        """
        return super().fit(labels, X, gold=gold)
