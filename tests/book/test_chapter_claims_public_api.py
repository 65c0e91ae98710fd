"""The public pieces chapters 12 and 13 use instead of private names: the Dawid--Skene E-step,
expected counts and M-step as pure functions, a model's ``params_``, and the bootstrap's
``match_classes`` / ``n_relabelled`` (worker_quality_intervals)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from crowdlearn import DawidSkene, OneCoinDawidSkene, worker_quality_intervals
from crowdlearn.aggregation.dawid_skene import (DawidSkeneParams, e_step, expected_counts,
                                                m_step)
from crowdlearn.datasets import load_dataset
from crowdlearn.simulate import one_coin_confusion, random_confusion, simulate_crowd


@pytest.fixture(scope="module")
def rte():
    return load_dataset("rte").labels


@pytest.mark.parametrize("Model", [DawidSkene, OneCoinDawidSkene])
def test_e_step_gives_back_the_fitted_posterior_and_log_likelihood(rte, Model):
    model = Model().fit(rte)
    q, ll = e_step(rte, model.params_)
    np.testing.assert_allclose(q, model.posterior_, atol=1e-12)
    assert ll == pytest.approx(model.log_likelihood_, rel=1e-13)
    # the same from the triples, and from a plain (class_prior, confusion) pair
    q2, ll2 = e_step((rte.item, rte.expert, rte.label), (model.class_prior_, model.confusion_))
    np.testing.assert_allclose(q2, q, atol=1e-14)
    assert ll2 == pytest.approx(ll, rel=1e-14)


def test_e_step_with_features():
    rng = np.random.default_rng(3)
    sim = simulate_crowd(300, random_confusion(4, 2, random_state=rng), random_state=rng)
    X = (rng.random((300, 5)) < np.where(sim.truth[:, None] == 1, 0.7, 0.3)).astype(int)
    model = DawidSkene().fit(sim.labels, X)
    q, ll = e_step(sim.labels, model.params_, X=X)
    np.testing.assert_allclose(q, model.posterior_, atol=1e-12)
    assert ll == pytest.approx(model.log_likelihood_, rel=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"alpha": 1.0}, {"confusion_prior": 4 * np.eye(2) + 1},
                                    {"alpha": 0.5, "confusion_prior": 2 * np.eye(2)}])
def test_m_step_of_expected_counts_is_the_models_own_m_step(rte, kwargs):
    model = DawidSkene(**kwargs).fit(rte)
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(2), size=rte.n_items)  # any posterior
    data = model._make_data(rte)  # the fit's data, with the prior pseudo-counts
    expected = model._m_step(data, q)
    counts, class_counts = expected_counts(rte, q)
    got = m_step(counts, class_counts, **kwargs)
    assert isinstance(got, DawidSkeneParams) and got.feature_prob is None
    np.testing.assert_allclose(got.class_prior, expected.class_prior, rtol=1e-14)
    np.testing.assert_allclose(got.confusion, expected.confusion, rtol=1e-13)


def test_one_em_step_from_the_public_functions_is_fits_step(rte):
    """Two steps by hand from the vote start equal a fit stopped after two steps."""
    votes = rte.vote_counts()
    q = votes / votes.sum(axis=1, keepdims=True)
    params = m_step(*expected_counts(rte, q))
    history = []
    for _ in range(2):
        q, ll = e_step(rte, params)
        history.append(ll)
        params = m_step(*expected_counts(rte, q))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = DawidSkene(max_iter=2).fit(rte)
    np.testing.assert_allclose(history, fit.log_likelihood_history_[:2], rtol=1e-13)


def test_counts_of_disjoint_blocks_add_up(rte):
    model = DawidSkene().fit(rte)
    owner = np.random.default_rng(1).integers(0, 3, rte.n_items)
    total = np.zeros((rte.n_experts, 2, 2))
    for b in range(3):
        items = np.flatnonzero(owner == b)
        keep = np.isin(rte.item, items)
        local = np.searchsorted(items, rte.item[keep])  # the block's own item indices
        block = (local, rte.expert[keep], rte.label[keep])
        total += expected_counts(block, model.posterior_[items])[0]
    np.testing.assert_allclose(total, expected_counts(rte, model.posterior_)[0], rtol=1e-12)


def test_params_is_a_copy_and_needs_a_fit(rte):
    with pytest.raises(Exception, match="not fitted"):
        DawidSkene().params_
    model = DawidSkene().fit(rte)
    p = model.params_
    assert p.class_prior.shape == (2,) and p.confusion.shape == (rte.n_experts, 2, 2)
    assert p.feature_prob is None
    p.confusion[:] = 0.5
    assert not np.allclose(model.confusion_, 0.5)


def test_bad_inputs_are_refused(rte):
    model = DawidSkene().fit(rte)
    with pytest.raises(ValueError, match="params must be"):
        e_step(rte, "nope")
    with pytest.raises(ValueError, match="rows"):
        expected_counts(rte, np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="shape"):
        m_step(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="confusion_prior"):
        m_step(*expected_counts(rte, model.posterior_), confusion_prior=np.ones(3))


def _weak_crowd():
    sim = simulate_crowd(60, one_coin_confusion([0.6, 0.65, 0.7], 2), random_state=4)
    return sim, DawidSkene(max_iter=5000).fit(sim.labels)


def test_bootstrap_class_matching_acts_on_a_weak_crowd():
    sim, model = _weak_crowd()
    assert model.converged_
    matched = worker_quality_intervals(model, sim.labels, n_boot=200, random_state=0)
    raw = worker_quality_intervals(model, sim.labels, n_boot=200, random_state=0,
                                   match_classes=False)
    assert matched.n_relabelled >= 5 and raw.n_relabelled == 0
    gap = max(np.abs(matched.accuracy_lower - raw.accuracy_lower).max(),
              np.abs(matched.accuracy_upper - raw.accuracy_upper).max())
    assert gap > 0.05
    # the replicates that were permuted back: without matching they report the mirror image
    differ = np.any(np.abs(matched.boot_accuracy - raw.boot_accuracy) > 1e-12, axis=1)
    assert differ.sum() == matched.n_relabelled


def test_match_classes_changes_nothing_where_no_replicate_is_permuted(rte):
    model = OneCoinDawidSkene().fit(rte)
    a = worker_quality_intervals(model, rte, n_boot=20, random_state=0)
    b = worker_quality_intervals(model, rte, n_boot=20, random_state=0, match_classes=False)
    assert a.n_relabelled == 0
    np.testing.assert_array_equal(a.boot_accuracy, b.boot_accuracy)
    assert worker_quality_intervals(model, rte, method="fisher").n_relabelled == 0
    with pytest.raises(ValueError, match="match_classes"):
        worker_quality_intervals(model, rte, match_classes="yes")
