"""The Dawid--Skene kernel: pure functions that both :class:`~crowdlearn.DawidSkene` (and
:class:`~crowdlearn.OneCoinDawidSkene`) and the Dask backend
(:mod:`crowdlearn.distributed.dask_backend`) call.

Everything works on the sparse label matrix of :func:`label_matrix`
(:func:`crowdlearn.aggregation._common._flat_indices`): ``votes`` of shape ``(n_items,
n_experts * K + 1)`` (``votes[i, j * K + l]`` = how often expert ``j`` put item ``i`` in
class ``l``; last column 1 for every item) and its transpose ``votes_t``. Sums over
items -- the expected counts -- are *tables* of shape ``(n_experts * K + 1, K)``
(``votes_t @ q``), which add up over blocks of items; the M-steps read such a table, so
an in-memory fit and a fit partition by partition run the same formulas.

**Batch axis.** :func:`log_table`, :func:`split_counts`, :func:`confusion_m_step`,
:func:`one_coin_m_step` and :func:`log_param_sum` also take parameters and counts
with a leading batch axis ``B`` (``class_prior (B, K)``, ``confusion (B, J, K, K)``,
tables ``(B, J * K + 1, K)``): B independent problems at once, e.g. the bootstrap
replicates of :func:`crowdlearn.metrics.worker_quality_intervals`. Their label matrix is
block-diagonal, replicate ``b``'s columns ``b * (J * K + 1) + c`` for the column ``c`` of
one problem, so ``votes @ table.reshape(-1, K)`` is every replicate's E-step
(:func:`log_joint` accepts such a table) and ``(votes_t @ q).reshape(B, -1, K)`` their
count tables.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from crowdlearn._base import normalize_log
from crowdlearn.aggregation._common import _flat_indices as label_matrix
from crowdlearn.aggregation._common import _one_coin_matrices as one_coin_matrices
from crowdlearn.aggregation._common import _softmax_rows_inplace as softmax_rows
from crowdlearn.aggregation._common import bernoulli_log_likelihood

__all__ = ["log_joint", "log_table", "count_table", "split_counts", "confusion_m_step",
           "one_coin_m_step", "feature_m_step", "feature_probs", "majority_start",
           "align_with_vote", "log_prior_density", "log_param_sum",
           "label_matrix", "one_coin_matrices", "softmax_rows"]


def log_joint(votes, params, X=None) -> np.ndarray:
    """``log P(y_i = k, labels_i, x_i)``, shape ``(n_items, K)`` (a new array), for
    ``params`` with fields ``class_prior``, ``confusion`` and ``feature_prob``: one sparse
    product ``votes @ T`` with ``T[j * K + l, k] = log confusion[j, k, l]`` and last row
    ``log class_prior``, plus the Naive Bayes term of the features ``X`` if any.

    With a batch axis in ``params`` (see the module's notes; no features), ``votes`` is
    the block-diagonal label matrix of the B problems and the result has one row per
    (problem, item)."""
    # one pass over the labels: each item's log prior plus its labels' log-probabilities
    table = log_table(params)
    out = votes @ table.reshape(-1, table.shape[-1])
    if X is not None and params.feature_prob is not None:
        phi = params.feature_prob
        if ((phi > 0) & (phi < 1)).all():
            log_p, log_q = np.log(phi), np.log1p(-phi)
            out += X @ (log_p - log_q).T + log_q.sum(axis=1)
        else:  # exact zeros or ones (alpha=0): handled without NaN
            out += bernoulli_log_likelihood(X, phi)
    return out


def log_table(params) -> np.ndarray:
    """``T[j * K + l, k] = log confusion[j, k, l]`` and last row ``log class_prior``, shape
    ``(n_experts * K + 1, K)``: the E-step's ``votes @ T`` (:func:`log_joint`), laid out as
    the count table of :func:`count_table`; ``(B, n_experts * K + 1, K)`` with a batch
    axis."""
    *batch, J, K, _ = params.confusion.shape
    table = np.empty((*batch, J * K + 1, K))
    with np.errstate(divide="ignore"):
        np.log(np.swapaxes(params.confusion, -1, -2),
               out=table[..., :-1, :].reshape(*batch, J, K, K))
        np.log(params.class_prior, out=table[..., -1, :])
    return table


def count_table(votes_t, q: np.ndarray) -> np.ndarray:
    """The expected counts of a block of items as one table ``votes_t @ q``, shape
    ``(n_experts * K + 1, K)``: ``[j * K + l, k]``, then the class counts."""
    return votes_t @ q


def split_counts(table: np.ndarray, n_experts: int):
    """A count table as ``(counts, class_counts)``: ``counts[j, k, l]`` (a view, true class
    ``k``, label ``l``) of shape ``(n_experts, K, K)`` and the class counts ``(K,)`` (with
    a leading batch axis when ``table`` has one)."""
    *batch, _, K = table.shape
    counts = table[..., :-1, :].reshape(*batch, n_experts, K, K)
    return np.swapaxes(counts, -1, -2), table[..., -1, :]


def confusion_m_step(counts: np.ndarray, class_counts: np.ndarray, alpha: float,
                     prior=None):
    """Dawid--Skene's M-step from expected counts: ``(class_prior, confusion)``.

    ``class_prior = (class_counts + alpha) / (n + K alpha)`` and every confusion row the
    normalised ``counts + alpha (+ prior)``; a row with no count at all is uniform.
    ``prior`` (pseudo-counts ``(n_experts, K, K)``) may be None. A leading batch axis of
    ``counts`` and ``class_counts`` is kept.
    """
    K = class_counts.shape[-1]
    a = float(alpha)
    class_prior = (class_counts + a) / (class_counts.sum(axis=-1, keepdims=True) + K * a)
    counts = counts + a
    if prior is not None:
        counts += prior
    denom = counts.sum(axis=-1, keepdims=True)
    empty = denom <= 0
    confusion = np.where(empty, 1.0 / K, counts / np.where(empty, 1.0, denom))
    return class_prior, confusion


def one_coin_m_step(counts: np.ndarray, class_counts: np.ndarray, alpha: float,
                    prior_coin=None):
    """The one-coin M-step from expected counts: ``(class_prior, accuracy)``.

    ``accuracy_j = (C_j + alpha) / (L_j + 2 alpha)`` with ``C_j`` the expected right
    labels (the trace of ``counts[j]``) and ``L_j`` all of expert ``j``'s labels;
    ``prior_coin = (right, wrong)`` pseudo-counts per expert are added to both. A leading
    batch axis of ``counts`` and ``class_counts`` is kept.
    """
    K = class_counts.shape[-1]
    a = float(alpha)
    correct = np.einsum("...jkk->...j", counts)   # C_r
    n_r = counts.sum(axis=(-2, -1))               # = L_r, as rows of q sum to 1
    if prior_coin is not None:
        correct = correct + prior_coin[0]
        n_r = n_r + prior_coin[0] + prior_coin[1]
    denom = n_r + 2 * a
    empty = denom <= 0
    accuracy = np.where(empty, 1.0 / K, (correct + a) / np.where(empty, 1.0, denom))
    # the trace and the total are summed in different orders: where every label is right
    # the quotient can come out 1 + 1e-16, and 1 - accuracy a negative "probability"
    np.clip(accuracy, 0.0, 1.0, out=accuracy)
    class_prior = (class_counts + a) / (class_counts.sum(axis=-1, keepdims=True) + K * a)
    return class_prior, accuracy


def feature_m_step(q: np.ndarray, X: np.ndarray, class_counts: np.ndarray,
                   alpha: float) -> np.ndarray:
    """The feature probabilities ``(q^T X + alpha) / (class_counts + 2 alpha)`` (0.5 for a
    class with no count)."""
    return feature_probs(q.T @ X, class_counts, alpha)


def feature_probs(feature_counts: np.ndarray, class_counts: np.ndarray,
                  alpha: float) -> np.ndarray:
    """:func:`feature_m_step` from the expected feature counts ``q^T X``, shape ``(K, f)``
    (incremental EM keeps them up to date instead of recomputing ``q^T X``)."""
    a = float(alpha)
    fdenom = (class_counts + 2 * a)[:, None]
    fempty = fdenom <= 0
    return np.where(fempty, 0.5, (feature_counts + a) / np.where(fempty, 1.0, fdenom))


def majority_start(votes, n_experts: int, K: int, X=None) -> np.ndarray:
    """The soft majority vote of every item, shape ``(n_items, K)``.

    Items nobody labelled get the (Laplace-smoothed) vote frequencies, or, with features
    ``X``, a Naive Bayes posterior fitted on the voted items.
    """
    n = votes.shape[0]
    # the votes per item and class: one pass, summing over the experts
    says = np.vstack([np.tile(np.eye(K), (n_experts, 1)), np.zeros((1, K))])
    counts = votes @ says  # says[j * K + l, k] = 1{l = k}; the prior column counts 0
    total = counts[:, 0].copy()
    for k in range(1, K):
        total += counts[:, k]
    voted = total > 0
    if voted.all():
        counts /= total[:, None]
        return counts
    q = np.empty((n, K))
    q[voted] = counts[voted] / total[voted, None]
    w = q[voted]
    prior0 = (w.sum(axis=0) + 1.0) / (w.shape[0] + K)
    if X is None:
        q[~voted] = prior0
    else:
        phi0 = (w.T @ X[voted] + 1.0) / (w.sum(axis=0)[:, None] + 2.0)
        q[~voted], _ = normalize_log(np.log(prior0) + bernoulli_log_likelihood(X[~voted], phi0))
    return q


def align_with_vote(agreement: np.ndarray, params, q=None):
    """Relabel the hidden classes to agree best with the votes.

    ``agreement[k, l]`` is the expected number of votes for ``l`` of items in hidden class
    ``k`` (the expected counts summed over the experts). Permuting the hidden classes
    (the prior, the confusion rows, the feature rows and the posterior columns together)
    leaves the likelihood and the symmetric-Dirichlet objective unchanged; this picks the
    permutation maximising the expected agreement (usually the identity). Returns the
    parameters and the posterior ``q`` (None if not given), permuted.
    """
    _, target = linear_sum_assignment(agreement, maximize=True)
    if np.array_equal(target, np.arange(agreement.shape[0])):
        return params, q
    inv = np.argsort(target)  # new class target[k] is old class k
    phi = None if params.feature_prob is None else params.feature_prob[inv]
    return (params._replace(class_prior=params.class_prior[inv],
                            confusion=params.confusion[:, inv, :], feature_prob=phi),
            None if q is None else q[:, inv])


def log_prior_density(prior, confusion: np.ndarray) -> float:
    """``sum A[j,k,l] log pi[j,k,l]`` over the entries with pseudo-counts (0 without any)."""
    if prior is None:
        return 0.0
    mask = prior > 0
    with np.errstate(divide="ignore"):
        return float((prior[mask] * np.log(confusion[mask])).sum())


def log_param_sum(class_prior: np.ndarray, confusion: np.ndarray, one_coin: bool = False):
    """``sum log class_prior + sum log confusion``, what the symmetric Dirichlet prior of
    ``alpha`` pseudo-counts adds to the objective divided by ``alpha``; with ``one_coin``
    the confusion term is ``sum log p + log(1 - p)`` over the accuracies
    ``p = confusion[..., 0, 0]``. A float, or one per problem with a leading batch axis."""
    batch = class_prior.shape[:-1]
    if one_coin:
        p = confusion[..., 0, 0]
        return np.log(class_prior).sum(axis=-1) + np.log(p).sum(axis=-1) \
            + np.log1p(-p).sum(axis=-1)
    return np.log(class_prior).sum(axis=-1) + np.log(confusion).reshape(*batch, -1).sum(axis=-1)
