"""Tests for crowdlearn.simulate: shapes, seeds and the frequencies drawn."""

import numpy as np
import pytest

from crowdlearn import CrowdLabels
from crowdlearn.simulate import (SimulatedCrowd, one_coin_confusion, random_confusion,
                                 sample_categorical, simulate_crowd, simulate_latent_class,
                                 simulate_naive_bayes)

CONF = np.array([[[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.0, 0.4, 0.6]],
                 [[0.5, 0.5, 0.0], [0.2, 0.6, 0.2], [0.3, 0.3, 0.4]]])


# -- confusion matrices --------------------------------------------------------------------
def test_one_coin_confusion_by_hand():
    conf = one_coin_confusion([0.9, 0.4], 3)
    assert conf.shape == (2, 3, 3)
    np.testing.assert_allclose(conf[0], [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05],
                                         [0.05, 0.05, 0.9]])
    np.testing.assert_allclose(conf[1], [[0.4, 0.3, 0.3], [0.3, 0.4, 0.3], [0.3, 0.3, 0.4]])
    np.testing.assert_allclose(conf.sum(axis=2), 1.0)
    assert one_coin_confusion(0.7, np.int64(2)).shape == (1, 2, 2)


def test_random_confusion_rows_and_diagonal():
    conf = random_confusion(6, 4, accuracy=(0.6, 0.8), concentration=0.3, random_state=0)
    assert conf.shape == (6, 4, 4)
    np.testing.assert_allclose(conf.sum(axis=2), 1.0)
    assert (conf >= 0).all()
    diag = conf[:, np.arange(4), np.arange(4)]
    assert ((diag >= 0.6) & (diag <= 0.8)).all()
    np.testing.assert_allclose(conf, random_confusion(6, 4, accuracy=(0.6, 0.8),
                                                      concentration=0.3, random_state=0),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("args, kwargs, match", [
    (([1.2], 2), {}, "accuracy must be a 1-D array of numbers in"),
    (([-0.1], 2), {}, "accuracy"),
    (([np.nan], 2), {}, "accuracy"),
    (([[0.5]], 2), {}, "accuracy"),
    (([0.5], 1), {}, "n_classes must be >= 2"),
    (([0.5], 2.0), {}, "n_classes must be an integer"),
])
def test_one_coin_confusion_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        one_coin_confusion(*args, **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_experts=0), "n_experts must be >= 1"),
    (dict(n_classes=1), "n_classes must be >= 2"),
    (dict(accuracy=(0.5, 1.5)), "0 <= low <= high <= 1"),
    (dict(accuracy=(0.9, 0.6)), "0 <= low <= high <= 1"),
    (dict(accuracy=0.7), r"accuracy must be a pair \(low, high\)"),
    (dict(concentration=0.0), "concentration must be > 0"),
    (dict(random_state="x"), "random_state must be"),
])
def test_random_confusion_bad_input(kwargs, match):
    args = dict(n_experts=2, n_classes=3) | kwargs
    with pytest.raises(ValueError, match=match):
        random_confusion(args.pop("n_experts"), args.pop("n_classes"), **args)


# -- sample_categorical --------------------------------------------------------------------
def test_sample_categorical_frequencies_and_zeros():
    prob = np.array([0.2, 0.0, 0.5, 0.3])
    draws = sample_categorical(np.broadcast_to(prob, (40_000, 4)), np.random.default_rng(0))
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, prob, atol=0.01)
    assert freq[1] == 0
    rows = sample_categorical(np.eye(3), np.random.default_rng(0))
    assert rows.tolist() == [0, 1, 2]


# -- simulate_crowd ------------------------------------------------------------------------
def test_simulate_crowd_shapes_and_types():
    sim = simulate_crowd(50, CONF, random_state=0)
    assert isinstance(sim, SimulatedCrowd) and isinstance(sim.labels, CrowdLabels)
    crowd = sim.labels
    assert (crowd.n_items, crowd.n_experts, crowd.n_classes, crowd.n_labels) == (50, 2, 3, 100)
    assert sim.truth.shape == (50,) and sim.truth.dtype.kind == "i"
    np.testing.assert_array_equal(sim.confusion, CONF)
    np.testing.assert_allclose(sim.class_prior, [1 / 3] * 3)
    assert crowd.to_dense().shape == (50, 2)
    assert simulate_crowd(np.int64(5), CONF, random_state=0).labels.n_items == 5


def test_simulate_crowd_is_reproducible():
    a = simulate_crowd(200, CONF, missing=0.3, random_state=7)
    b = simulate_crowd(200, CONF, missing=0.3, random_state=7)
    c = simulate_crowd(200, CONF, missing=0.3, random_state=np.random.default_rng(7))
    d = simulate_crowd(200, CONF, missing=0.3, random_state=8)
    for other in (b, c):
        np.testing.assert_array_equal(a.truth, other.truth)
        np.testing.assert_array_equal(a.labels.to_dense(), other.labels.to_dense())
    assert not np.array_equal(a.labels.to_dense(), d.labels.to_dense())


def test_simulate_crowd_empirical_confusion_and_prior():
    prior = np.array([0.5, 0.2, 0.3])
    sim = simulate_crowd(40_000, CONF, class_prior=prior, random_state=1)
    np.testing.assert_allclose(np.bincount(sim.truth, minlength=3) / 40_000, prior, atol=0.01)
    crowd = sim.labels
    for j in range(2):
        mine = crowd.expert == j
        truth = sim.truth[crowd.item[mine]]
        for k in range(3):
            said = crowd.label[mine][truth == k]
            freq = np.bincount(said, minlength=3) / said.size
            np.testing.assert_allclose(freq, CONF[j, k], atol=0.02)
    # an impossible answer is never given
    assert not ((crowd.expert == 0) & (sim.truth[crowd.item] == 2) & (crowd.label == 0)).any()


def test_simulate_crowd_missing_fraction():
    sim = simulate_crowd(5000, one_coin_confusion([0.8] * 4, 2), missing=0.25, random_state=2)
    assert sim.labels.n_labels / (5000 * 4) == pytest.approx(0.75, abs=0.01)
    assert sim.labels.to_dense().shape == (5000, 4)


def test_labels_per_item_gives_distinct_experts():
    sim = simulate_crowd(3000, one_coin_confusion([0.7] * 6, 3), labels_per_item=3,
                         random_state=3)
    crowd = sim.labels
    assert crowd.n_labels == 9000
    np.testing.assert_array_equal(crowd.labels_per_item(), 3)
    dense = crowd.to_dense()  # would raise if an expert labelled an item twice
    np.testing.assert_array_equal((dense >= 0).sum(axis=1), 3)
    # experts are chosen uniformly: each labels about half of the items
    np.testing.assert_allclose(crowd.labels_per_expert() / 3000, 0.5, atol=0.03)
    # and every one of the 6-choose-3 = 20 panels of experts occurs
    panels = {tuple(np.flatnonzero(row >= 0)) for row in dense}
    assert len(panels) == 20


@pytest.mark.parametrize("args, kwargs, match", [
    ((0, CONF), {}, "n_items must be >= 1"),
    ((2.5, CONF), {}, "n_items must be an integer"),
    ((10, CONF[0]), {}, r"confusion must have shape \(n_experts, n_classes, n_classes\)"),
    ((10, CONF[:, :2]), {}, "confusion must have shape"),
    ((10, CONF * 2), {}, "rows of confusion rows must sum to 1"),
    ((10, -CONF), {}, "negative"),
    ((10, CONF), dict(class_prior=[0.5, 0.5]), "class_prior has 2 columns, expected 3"),
    ((10, CONF), dict(class_prior=[0.5, 0.6, 0.1]), "class_prior must sum to 1"),
    ((10, CONF), dict(missing=1.0), "missing must be < 1"),
    ((10, CONF), dict(missing=-0.1), "missing must be >= 0"),
    ((10, CONF), dict(labels_per_item=3), "labels_per_item must be <= 2"),
    ((10, CONF), dict(labels_per_item=0), "labels_per_item must be >= 1"),
    ((10, CONF), dict(random_state=1.5), "random_state must be"),
])
def test_simulate_crowd_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_crowd(*args, **kwargs)


# -- simulate_naive_bayes ------------------------------------------------------------------
def test_simulate_naive_bayes_shapes_seed_and_frequencies():
    prior = [0.25, 0.75]
    phi = np.array([[0.9, 0.1, 0.5], [0.3, 0.6, 0.0]])
    X, y = simulate_naive_bayes(40_000, prior, phi, random_state=4)
    assert X.shape == (40_000, 3) and y.shape == (40_000,)
    assert set(np.unique(X).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(np.bincount(y) / y.size, prior, atol=0.01)
    for k in range(2):
        np.testing.assert_allclose(X[y == k].mean(axis=0), phi[k], atol=0.02)
    assert X[y == 1, 2].max() == 0
    X2, y2 = simulate_naive_bayes(40_000, prior, phi, random_state=4)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


@pytest.mark.parametrize("args, match", [
    ((0, [0.5, 0.5], [[0.5], [0.5]]), "n_items must be >= 1"),
    ((10, [0.5, 0.6], [[0.5], [0.5]]), "class_prior must sum to 1"),
    ((10, [0.5, 0.5], [[0.5], [0.5], [0.5]]), r"feature_prob must have shape \(2, n_features\)"),
    ((10, [0.5, 0.5], [0.5, 0.5]), "feature_prob must have shape"),
    ((10, [0.5, 0.5], [[1.5], [0.5]]), r"probabilities in \[0, 1\]"),
    ((10, [0.5, 0.5], [[np.nan], [0.5]]), r"probabilities in \[0, 1\]"),
])
def test_simulate_naive_bayes_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        simulate_naive_bayes(*args, random_state=0)


# -- simulate_latent_class -----------------------------------------------------------------
def test_simulate_latent_class_shapes_seed_and_frequencies():
    prior = [0.6, 0.4]
    tables = [np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]), np.array([[0.9, 0.1], [0.5, 0.5]])]
    X, h = simulate_latent_class(40_000, prior, tables, random_state=5)
    assert X.shape == (40_000, 2) and h.shape == (40_000,)
    assert X.dtype.kind == "i"
    np.testing.assert_allclose(np.bincount(h) / h.size, prior, atol=0.01)
    for c, table in enumerate(tables):
        for k in range(2):
            freq = np.bincount(X[h == k, c], minlength=table.shape[1]) / (h == k).sum()
            np.testing.assert_allclose(freq, table[k], atol=0.02)
    X2, h2 = simulate_latent_class(40_000, prior, tables, random_state=5)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(h, h2)


@pytest.mark.parametrize("args, match", [
    ((0, [0.5, 0.5], [np.eye(2)]), "n_items must be >= 1"),
    ((10, [0.5, 0.5], []), "cond_prob is empty"),
    ((10, [0.5, 0.5], [np.eye(3)]), r"cond_prob\[0\] has 3 rows, expected 2"),
    ((10, [0.5, 0.5], [np.eye(2), [[0.5, 0.6], [1, 0]]]), r"rows of cond_prob\[1\] must sum"),
    ((10, [0.7, 0.7], [np.eye(2)]), "class_prior must sum to 1"),
])
def test_simulate_latent_class_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        simulate_latent_class(*args, random_state=0)
