"""What the check cells of assignment a2 compare a student's answers with, computed by the
package's Dawid--Skene in the grader's process.

a2 asks for the Dawid--Skene steps of experts in teams that share one confusion matrix, with
repeated labels given as counts ``counts[i, r, p]`` (how often expert ``r`` gave item ``i``
the label ``p``). Its checks compare the student's functions with the package's steps on the
same labels read as triples, each label repeated as often as it was given and each team in the
place of an expert. That reading is part of what the student derives, so it lives here, not
in the notebook; like the models, it is withheld from the sandbox while a2 is graded
(:mod:`~crowdlearn.classroom.withheld`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pooled_crowd", "team_em_states", "team_e_step", "team_m_step"]


def pooled_crowd(counts, team):
    """``counts[i, r, p]`` as :class:`~crowdlearn.CrowdLabels` whose expert of each label is
    ``team[r]`` (a label given ``k`` times is ``k`` rows)."""
    from crowdlearn import from_triples

    counts, team = np.asarray(counts), np.asarray(team)
    if counts.ndim != 3 or team.shape != (counts.shape[1],):
        raise ValueError(f"counts must be (n_items, n_experts, K) and team (n_experts,), got "
                         f"{counts.shape} and {team.shape}")
    i, r, p = np.nonzero(counts)
    times = counts[i, r, p]
    return from_triples(np.repeat(i, times), np.repeat(team[r], times), np.repeat(p, times),
                        n_items=counts.shape[0], n_experts=int(team.max()) + 1,
                        n_classes=counts.shape[2])


def team_em_states(counts, team, alpha, n_states):
    """``(params, posterior)`` after each of the first ``n_states`` E-steps of
    :class:`~crowdlearn.DawidSkene` (smoothing ``alpha``) on the pooled crowd."""
    from crowdlearn.aggregation.dawid_skene import DawidSkene

    states = []
    DawidSkene(n_classes=np.shape(counts)[2], alpha=alpha,
               callback=lambda s: states.append((s.params, s.posterior.copy()))
               or len(states) >= n_states).fit(pooled_crowd(counts, team))
    return states


def team_m_step(Q, counts, team):
    """The package's M-step (no smoothing) on the pooled labels: ``(class_prior,
    confusion)``, one confusion matrix per team."""
    from crowdlearn.aggregation import dawid_skene as ds

    params = ds.m_step(*ds.expected_counts(pooled_crowd(counts, team), Q))
    return params.class_prior, params.confusion


def team_e_step(class_prior, confusion, counts, team):
    """The package's E-step on the pooled labels: the posteriors ``Q[i, n]``."""
    from crowdlearn.aggregation import dawid_skene as ds

    return ds.e_step(pooled_crowd(counts, team), (class_prior, confusion))[0]
