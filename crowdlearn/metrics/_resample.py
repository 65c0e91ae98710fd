"""The bootstrap of :func:`~crowdlearn.metrics.worker_quality_intervals`: every resample
of items refitted at once, as one block-diagonal problem."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import sparse
from scipy.optimize import linear_sum_assignment

from crowdlearn._validation import check_random_state
from crowdlearn.aggregation._common import _one_coin_matrices, _softmax_rows_inplace
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene


def _accuracy(class_prior, confusion):
    """``sum_k phi_k pi[j, k, k]`` for params with any leading batch axes."""
    diag = np.diagonal(confusion, axis1=-2, axis2=-1)   # (..., J, K)
    return (diag * class_prior[..., None, :]).sum(axis=-1)


# -- bootstrap ---------------------------------------------------------------------------------
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
        self.prior0 = np.asarray(model.class_prior_, float)
        self.conf0 = np.asarray(model.confusion_, float)
        self.posterior = np.asarray(model.posterior_, float)

    def votes(self, idx):
        """Block-diagonal count matrix of B resamples: rows (b, u), columns (b, j, l), then
        one prior column per replicate (the layout of ``dawid_skene._flat_indices``)."""
        B, n = idx.shape
        J, K = self.J, self.K
        cnt = self.lpi[idx].ravel()                   # labels of each new item
        total = int(cnt.sum())
        pos = np.repeat(self.start[idx].ravel(), cnt)
        pos += np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        new_item = np.repeat(np.arange(B * n), cnt)
        cols = (new_item // n * J + self.expert[pos]) * K + self.label[pos]
        rows = np.concatenate([new_item, np.arange(B * n)])
        cols = np.concatenate([cols, B * J * K + np.repeat(np.arange(B), n)])
        votes = sparse.csr_array((np.ones(rows.shape[0]), (rows, cols)),
                                 shape=(B * n, B * J * K + B))
        votes.sum_duplicates()
        return votes

    def e_step(self, votes, prior, conf):
        B, J, K, _ = conf.shape
        table = np.empty((B * J * K + B, K))
        with np.errstate(divide="ignore"):
            table[:B * J * K] = np.log(conf.transpose(0, 1, 3, 2)).reshape(B * J * K, K)
            table[B * J * K:] = np.log(prior)
        q, _ = _softmax_rows_inplace(votes @ table)
        return q

    def m_step(self, votes_t, q, B):
        J, K, a = self.J, self.K, self.alpha
        counts = votes_t @ q                                       # (B * J * K + B, K)
        class_count = counts[B * J * K:]                           # (B, K)
        c = counts[:B * J * K].reshape(B, J, K, K).transpose(0, 1, 3, 2)  # [b, j, k, l]
        prior = (class_count + a) / (class_count.sum(axis=1, keepdims=True) + K * a)
        if self.one_coin:   # the M-step of OneCoinDawidSkene
            correct = np.einsum("bjkk->bj", c)
            denom = c.sum(axis=(2, 3)) + 2 * a
            empty = denom <= 0
            acc = np.where(empty, 1.0 / K, (correct + a) / np.where(empty, 1.0, denom))
            conf = _one_coin_matrices(acc.ravel(), K).reshape(B, J, K, K)
        else:               # the M-step of DawidSkene
            c = c + a
            denom = c.sum(axis=3, keepdims=True)
            empty = denom <= 0
            conf = np.where(empty, 1.0 / K, c / np.where(empty, 1.0, denom))
        return prior, conf

    def em(self, idx, prior, conf, n_iter):
        """EM on every resample at once, from ``(prior, conf)``, at most ``n_iter`` steps.

        A replicate whose parameters moved by at most ``tol`` stops there; when half of
        them have stopped, the others go on in a smaller problem. Each replicate's path
        thus depends on its own resample only, not on the others in the block.
        """
        B = idx.shape[0]
        votes = self.votes(idx)
        votes_t = votes.T.tocsr()
        active = np.ones(B, dtype=bool)
        for it in range(n_iter):
            q = self.e_step(votes, prior, conf)
            new_prior, new_conf = self.m_step(votes_t, q, B)
            moved = np.maximum(np.abs(new_prior - prior).max(axis=1),
                               np.abs(new_conf - conf).reshape(B, -1).max(axis=1))
            prior[active] = new_prior[active]
            conf[active] = new_conf[active]
            active &= moved > self.tol
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
            q = self.e_step(self.votes(idx), prior, conf).reshape(B, -1, K)
            agreement = np.einsum("bnk,bnm->bkm", q, self.posterior[idx])
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
