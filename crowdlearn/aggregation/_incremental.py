"""Incremental EM (Neal and Hinton 1998) for ``DawidSkene.partial_fit(..., incremental=True)``.

EM maximises the free energy :math:`F(q, \\theta) = \\sum_i \\sum_k q_{ik} \\log P(y_i = k,
\\text{labels}_i, x_i \\mid \\theta) + H(q) + \\log p(\\theta)` (with :math:`H` the entropy of the
posteriors and :math:`\\log p(\\theta)` the prior's term, 0 for maximum likelihood) by
coordinate ascent: an E-step maximises it over :math:`q`, an M-step over :math:`\\theta`.
Maximising over the posteriors of *some* items only (those a batch of new labels touches)
still raises :math:`F`, and the M-step needs only the expected counts, which change by the
touched items' part: so each step costs a pass over the touched items' labels, not over all
of them. :math:`F` never decreases and equals the objective (log-likelihood plus log-prior)
whenever every item's posterior is exact; the other items keep theirs from the last fit.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr

from crowdlearn.aggregation._common import _Data, _softmax_rows_inplace
from crowdlearn.aggregation._ds_kernel import count_table, feature_probs, log_joint, log_table

__all__ = ["IncrementalSteps"]


class IncrementalSteps:
    """The E- and M-steps of incremental EM on ``data``, for :func:`crowdlearn.em.run_em`.

    State: the posteriors ``q`` of every item (the fitted ones, the others' rows 0 until
    their first E-step), the count table ``T = votes^T q`` (:func:`count_table`), the
    feature counts ``q^T X``, and the entropy ``H(q)``. ``e_step(params)`` re-estimates the
    posteriors of the items ``rows`` only, updates the counts by the difference and returns
    ``(q, F(q, params))``; ``m_step(q)`` is the model's M-step from the counts.
    """

    def __init__(self, model, data: _Data, q: np.ndarray, rows: np.ndarray):
        self.model, self.data, self.q, self.rows = model, data, q, rows
        self.sub = data.votes[rows]  # the touched items' labels (and prior column)
        self.sub_t = self.sub.T.tocsr()
        self.counts = count_table(data.votes_t, q)
        self.X_sub = None if data.X is None else data.X[rows]
        self.feature_counts = None if data.X is None else q.T @ data.X
        self.entropy = float(entr(q).sum())
        # what the updates may leave where a count should be 0 (rounding: ~1e-16 of the
        # total): the free energy reads such a count as 0 where a probability is 0
        self._residue = 64 * np.finfo(float).eps * (1.0 + q.shape[0])
        self.clamp = None
        if data.gold is not None:  # known truths among the touched items
            full = np.zeros_like(q)
            full[data.gold[0]] = data.gold[1]
            self.clamp = full[rows]

    def e_step(self, params):
        joint = log_joint(self.sub, params, self.X_sub)
        if self.clamp is not None:
            joint += self.clamp
        new, _ = _softmax_rows_inplace(joint)
        old = self.q[self.rows]
        change = new - old
        self.counts += self.sub_t @ change
        np.maximum(self.counts, 0.0, out=self.counts)  # no -1e-17 left by the updates
        if self.feature_counts is not None:
            self.feature_counts += change.T @ self.X_sub
            np.clip(self.feature_counts, 0.0, self.counts[-1][:, None],
                    out=self.feature_counts)
        self.entropy += float(entr(new).sum() - entr(old).sum())
        self.q[self.rows] = new
        return self.q, self.free_energy(params)

    def m_step(self, _q):
        model, data = self.model, self.data
        params = model._params_from_counts(self.counts, data.crowd.n_experts, data.prior)
        if self.feature_counts is None:
            return params
        phi = feature_probs(self.feature_counts, self.counts[-1], model.alpha)
        return params._replace(feature_prob=np.clip(phi, 0.0, 1.0))

    def free_energy(self, params) -> float:
        """:math:`F(q, \\theta)` from the counts: :math:`\\sum T \\odot \\log\\theta` (a count
        0 contributes 0 even where the probability is 0), the features' part, ``H(q)`` and
        the model's log-prior term."""
        terms = [(self.counts, log_table(params))]
        if self.feature_counts is not None:  # a fit at alpha=0 may leave phi at 1 + 1e-16
            phi, ones = np.clip(params.feature_prob, 0.0, 1.0), self.feature_counts
            with np.errstate(divide="ignore"):
                terms += [(ones, np.log(phi)),
                          (np.maximum(self.counts[-1][:, None] - ones, 0.0), np.log1p(-phi))]
        total = 0.0
        for counts, logs in terms:
            possible = np.isfinite(logs)
            if (counts[~possible] > self._residue).any():
                return -np.inf  # a count where the parameters say "impossible"
            total += float((counts[possible] * logs[possible]).sum())
        return total + self.entropy + self.model._log_prior_term(params, self.data.prior)
