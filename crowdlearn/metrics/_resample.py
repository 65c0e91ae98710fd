"""The bootstrap of :func:`~crowdlearn.metrics.worker_quality_intervals`: every resample
of items refitted at once, as one block-diagonal problem.

The E- and M-steps are the Dawid--Skene kernel's (:mod:`crowdlearn.aggregation._ds_kernel`)
on its batch axis, one problem per replicate, and every replicate stops by the EM
engine's rule (:func:`crowdlearn.em.objective_converged`) on its own objective, the
model's: the log-likelihood of the resample plus the ``alpha`` prior term.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import sparse
from scipy.optimize import linear_sum_assignment

from crowdlearn._validation import check_random_state
from crowdlearn.aggregation._ds_kernel import (confusion_m_step, log_joint, log_param_sum,
                                               one_coin_m_step, one_coin_matrices,
                                               softmax_rows, split_counts)
from crowdlearn.aggregation.dawid_skene import DawidSkeneParams
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.em import objective_converged


def _accuracy(class_prior, confusion):
    """``sum_k phi_k pi[j, k, k]`` for params with any leading batch axes."""
    diag = np.diagonal(confusion, axis1=-2, axis2=-1)   # (..., J, K)
    return (diag * class_prior[..., None, :]).sum(axis=-1)


class _Resampler:
    """The training labels grouped by item, ready to be gathered for resamples of items."""

    def __init__(self, model, crowd, max_iter, tol, match_classes=True):
        order = np.argsort(crowd.item, kind="stable")
        self.expert, self.label = crowd.expert[order], crowd.label[order]
        self.lpi = crowd.labels_per_item()
        self.start = np.concatenate([[0], np.cumsum(self.lpi)[:-1]])
        self.J, self.K = crowd.n_experts, crowd.n_classes
        self.alpha = float(model.alpha)
        self.one_coin = isinstance(model, OneCoinDawidSkene)
        self.max_iter, self.tol = max_iter, tol
        self.match_classes = match_classes
        fitted = model.params_
        self.prior0, self.conf0 = fitted.class_prior, fitted.confusion
        self.posterior = np.asarray(model.posterior_, float)

    def votes(self, idx):
        """Block-diagonal label matrix of B resamples: rows (b, u), and for replicate b the
        columns ``b * (J * K + 1) + j * K + l`` and its prior column
        ``b * (J * K + 1) + J * K`` (the kernel's layout with a batch axis)."""
        B, n = idx.shape
        J, K = self.J, self.K
        width = J * K + 1
        cnt = self.lpi[idx].ravel()                   # labels of each new item
        total = int(cnt.sum())
        pos = np.repeat(self.start[idx].ravel(), cnt)
        pos += np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        new_item = np.repeat(np.arange(B * n), cnt)
        cols = new_item // n * width + self.expert[pos] * K + self.label[pos]
        rows = np.concatenate([new_item, np.arange(B * n)])
        cols = np.concatenate([cols, np.repeat(np.arange(B), n) * width + J * K])
        votes = sparse.csr_array((np.ones(rows.shape[0]), (rows, cols)),
                                 shape=(B * n, B * width))
        votes.sum_duplicates()
        return votes

    def e_step(self, votes, params: DawidSkeneParams):
        """The posteriors ``(B * n, K)`` and every replicate's objective ``(B,)``."""
        B = params.class_prior.shape[0]
        q, log_evidence = softmax_rows(log_joint(votes, params))
        objective = log_evidence.reshape(B, -1).sum(axis=1)
        if self.alpha > 0:
            objective += self.alpha * log_param_sum(params.class_prior, params.confusion,
                                                    self.one_coin)
        return q, objective

    def m_step(self, votes_t, q, B) -> DawidSkeneParams:
        """The model's M-step (the kernel's) for every replicate."""
        counts, class_counts = split_counts((votes_t @ q).reshape(B, -1, self.K), self.J)
        if self.one_coin:
            prior, accuracy = one_coin_m_step(counts, class_counts, self.alpha)
            conf = one_coin_matrices(accuracy.ravel(), self.K).reshape(B, self.J, self.K,
                                                                       self.K)
        else:
            prior, conf = confusion_m_step(counts, class_counts, self.alpha)
        return DawidSkeneParams(prior, conf, None)

    def em(self, idx, prior, conf, n_iter):
        """EM on every resample at once, from ``(prior, conf)``, at most ``n_iter`` steps.

        A replicate stops by the engine's rule (:func:`crowdlearn.em.objective_converged`)
        on its own objective, at the parameters of its last E-step; when half of them
        have stopped, the others go on in a smaller problem. Each replicate's path thus
        depends on its own resample only, not on the others in the block.
        """
        B = idx.shape[0]
        votes = self.votes(idx)
        votes_t = votes.T.tocsr()
        active = np.ones(B, dtype=bool)
        q, objective = self.e_step(votes, DawidSkeneParams(prior, conf, None))
        for it in range(n_iter):
            new = self.m_step(votes_t, q, B)
            q, new_objective = self.e_step(votes, new)
            prior[active] = new.class_prior[active]
            conf[active] = new.confusion[active]
            active &= ~objective_converged(objective, new_objective, self.tol)
            objective = new_objective
            n_active = int(active.sum())
            if n_active == 0:
                break
            if n_active <= B // 2 and it + 1 < n_iter:
                sub = np.flatnonzero(active)
                prior[sub], conf[sub] = self.em(idx[sub], prior[sub], conf[sub],
                                                n_iter - it - 1)
                break
        return prior, conf

    def run(self, idx):
        """Accuracies ``(B, J)`` and confusion matrices ``(B, J, K, K)`` of B resamples,
        with the hidden classes matched to the fitted ones."""
        acc, conf, _ = self.run_counted(idx)
        return acc, conf

    def run_counted(self, idx):
        """As :meth:`run`, and how many of the B replicates were permuted back."""
        B = idx.shape[0]
        K = self.K
        prior = np.repeat(self.prior0[None], B, axis=0)
        conf = np.repeat(self.conf0[None], B, axis=0)
        prior, conf = self.em(idx, prior, conf, self.max_iter)
        relabelled = 0
        if self.match_classes and (not self.one_coin or K == 2):
            # label switching: match to the fitted posterior
            q, _ = self.e_step(self.votes(idx), DawidSkeneParams(prior, conf, None))
            agreement = np.einsum("bnk,bnm->bkm", q.reshape(B, -1, K), self.posterior[idx])
            for b in range(B):
                _, target = linear_sum_assignment(agreement[b], maximize=True)
                if not np.array_equal(target, np.arange(K)):
                    inv = np.argsort(target)   # new class target[k] is old class k
                    prior[b] = prior[b, inv]
                    conf[b] = conf[b][:, inv, :]
                    relabelled += 1
        return _accuracy(prior, conf), conf, relabelled


def _bootstrap(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
               match_classes=True):
    rng = check_random_state(random_state)
    n = crowd.n_items
    draws = rng.integers(0, n, size=(n_boot, n))  # the resamples, drawn before any fit
    # replicates per block: about 2 million labels at a time
    per = max(1, min(n_boot, int(2_000_000 // max(crowd.n_labels + n, 1))))
    if n_jobs > 1:
        per = max(1, min(per, -(-n_boot // n_jobs)))
    blocks = [draws[s:s + per] for s in range(0, n_boot, per)]
    resampler = _Resampler(model, crowd, max_iter, tol, match_classes)
    if n_jobs > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            results = list(pool.map(resampler.run_counted, blocks))
    else:
        results = [resampler.run_counted(b) for b in blocks]
    return (np.concatenate([r[0] for r in results]),
            np.concatenate([r[1] for r in results]), int(sum(r[2] for r in results)))
