"""Tests of the one-coin Dawid--Skene model (crowdlearn.aggregation.one_coin)."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.datasets import load_dataset
from crowdlearn.exceptions import ConvergenceWarning, NotFittedError
from crowdlearn.labels import from_triples
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.simulate import one_coin_confusion, random_confusion, simulate_crowd


# -- brute force: the model written out with loops, straight from its definition -------------
def one_coin(p, K):
    """Confusion matrix of a one-coin expert, entry by entry."""
    return [[p if l == k else (1 - p) / (K - 1) for l in range(K)] for k in range(K)]


def brute_log_joint(triples, n_items, prior, accuracy):
    K = len(prior)
    out = np.zeros((n_items, K))
    for i in range(n_items):
        for k in range(K):
            prob = prior[k]
            for (it, r, l) in triples:
                if it == i:
                    prob *= accuracy[r] if l == k else (1 - accuracy[r]) / (K - 1)
            out[i, k] = math.log(prob) if prob > 0 else -math.inf
    return out


def brute_posterior(triples, n_items, prior, accuracy):
    lj = brute_log_joint(triples, n_items, prior, accuracy)
    post = np.zeros_like(lj)
    for i in range(n_items):
        joint = [math.exp(v) for v in lj[i]]
        post[i] = [v / sum(joint) for v in joint]
    return post


def brute_log_likelihood(triples, n_items, prior, accuracy):
    lj = brute_log_joint(triples, n_items, prior, accuracy)
    return sum(math.log(sum(math.exp(v) for v in row)) for row in lj)


def brute_log_prior(alpha, prior, accuracy):
    return alpha * (sum(math.log(v) for v in prior)
                    + sum(math.log(p) + math.log(1 - p) for p in accuracy))


def closed_form_m_step(triples, q, n_experts, alpha):
    """eta_r = (C_r + alpha) / (|I_r| + 2 alpha), C_r the sum of Q_i(label) over the |I_r| labels
    of expert r (the book's one-coin accuracy); the class prior as in DS."""
    n, K = q.shape
    prior = [(sum(q[i, k] for i in range(n)) + alpha) / (n + K * alpha) for k in range(K)]
    accuracy = []
    for r in range(n_experts):
        right = sum(q[i, l] for (i, rr, l) in triples if rr == r)
        n_r = sum(1 for (_, rr, _) in triples if rr == r)
        accuracy.append((right + alpha) / (n_r + 2 * alpha) if n_r + 2 * alpha > 0 else 1 / K)
    return np.array(prior), np.array(accuracy)


def tiny_problem():
    """5 items (item 4 unlabelled), 3 experts, 3 classes; expert 0 labels item 3 twice."""
    triples = [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1), (2, 0, 2),
               (2, 1, 0), (3, 1, 2), (3, 0, 2), (3, 0, 1), (1, 2, 1)]
    item, expert, label = (np.array(c) for c in zip(*triples))
    crowd = from_triples(item, expert, label, n_items=5, n_experts=3, n_classes=3)
    return triples, crowd


def one_coin_crowd(seed=0, n_items=400, accuracy=(0.85, 0.75, 0.65, 0.55, 0.45, 0.7), K=3,
                   missing=0.3):
    return simulate_crowd(n_items, one_coin_confusion(accuracy, K),
                          class_prior=np.arange(1, K + 1) / (K * (K + 1) / 2),
                          missing=missing, random_state=seed)


def quiet_fit(model, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(*args)


# -- the objective never decreases ------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.01, 1.0, 3.0])
@pytest.mark.parametrize("K", [2, 4])
def test_objective_never_decreases(alpha, K):
    sim = one_coin_crowd(seed=3, K=K)
    runs = {}
    oc = quiet_fit(OneCoinDawidSkene(alpha=alpha, tol=0, max_iter=40, n_init=3, random_state=0,
                                     callback=lambda s: runs.setdefault(s.restart, [])
                                     .append(s.objective)), sim.labels)
    hist = oc.log_likelihood_history_
    assert hist.shape == (oc.n_iter_ + 1,)
    assert hist[-1] > hist[0]
    assert (np.diff(hist) >= -1e-9 * np.abs(hist[1:])).all(), np.diff(hist).min()
    assert sorted(runs) == [0, 1, 2]
    for objs in runs.values():
        objs = np.array(objs)
        assert (np.diff(objs) >= -1e-9 * np.abs(objs[1:])).all()
    assert hist[-1] == pytest.approx(max(objs[-1] for objs in runs.values()), rel=1e-12)


def test_objective_posterior_and_m_step_step_by_step():
    """At every E-step: the objective is l + alpha * log prior (brute force), the posterior is
    Bayes' rule by enumeration, and the next parameters are the closed-form M-step."""
    triples, crowd = tiny_problem()
    alpha = 0.5
    states = []
    quiet_fit(OneCoinDawidSkene(alpha=alpha, tol=0, max_iter=8, callback=states.append), crowd)
    assert len(states) == 9
    for s, nxt in zip(states, states[1:] + [None]):
        prior, conf = s.params.class_prior, s.params.confusion
        acc = conf[:, 0, 0]
        np.testing.assert_allclose(conf, one_coin_confusion(acc, 3), atol=1e-15)
        ll = brute_log_likelihood(triples, 5, prior, acc)
        assert s.objective == pytest.approx(ll + brute_log_prior(alpha, prior, acc), rel=1e-12)
        np.testing.assert_allclose(s.posterior, brute_posterior(triples, 5, prior, acc),
                                   atol=1e-12)
        if nxt is not None:
            want_prior, want_acc = closed_form_m_step(triples, s.posterior, 3, alpha)
            np.testing.assert_allclose(nxt.params.class_prior, want_prior, atol=1e-12)
            np.testing.assert_allclose(nxt.params.confusion[:, 0, 0], want_acc, atol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_posterior_equals_brute_force_on_tiny_case(alpha):
    triples, crowd = tiny_problem()
    oc = OneCoinDawidSkene(alpha=alpha, max_iter=100).fit(crowd)
    want = brute_posterior(triples, 5, oc.class_prior_, oc.accuracy_)
    np.testing.assert_allclose(oc.posterior_, want, atol=1e-10)
    np.testing.assert_allclose(oc.predict_proba(), want, atol=1e-10)
    np.testing.assert_allclose(oc.posterior_[4], oc.class_prior_, atol=1e-12)  # unlabelled
    assert oc.log_likelihood_ == pytest.approx(
        brute_log_likelihood(triples, 5, oc.class_prior_, oc.accuracy_), rel=1e-12)
    # new items, scored under the fitted parameters
    new = [(0, 2, 1), (0, 0, 1), (1, 1, 2), (2, 0, 0), (2, 0, 0)]
    item, expert, label = (np.array(c) for c in zip(*new))
    got = oc.predict_proba((item, expert, label))
    np.testing.assert_allclose(got, brute_posterior(new, 3, oc.class_prior_, oc.accuracy_),
                               atol=1e-12)


def test_m_step_maximises_expected_complete_objective():
    """The closed form is the maximiser: no other eta_r does better, found numerically."""
    sim = one_coin_crowd(seed=8, n_items=200)
    alpha = 0.7
    states = []
    quiet_fit(OneCoinDawidSkene(alpha=alpha, tol=0, max_iter=1, callback=states.append),
              sim.labels)
    q, p_next = states[0].posterior, states[1].params.confusion[:, 0, 0]
    crowd, K = sim.labels, 3
    right = q[crowd.item, crowd.label]
    for r in range(crowd.n_experts):
        mine = crowd.expert == r

        def neg_expected(p):
            # sum_t sum_k Q(k) log M_{k l_t} + alpha (log p + log(1 - p))
            return -(np.sum(right[mine] * np.log(p)
                            + (1 - right[mine]) * np.log((1 - p) / (K - 1)))
                     + alpha * (np.log(p) + np.log1p(-p)))

        best = minimize_scalar(neg_expected, bounds=(1e-9, 1 - 1e-9), method="bounded",
                               options={"xatol": 1e-12})
        assert p_next[r] == pytest.approx(best.x, abs=1e-6)
        assert neg_expected(p_next[r]) <= best.fun + 1e-9


# -- recovery -------------------------------------------------------------------------------------
@pytest.mark.parametrize("K", [2, 3, 5])
def test_recovers_accuracies_and_prior_on_large_simulated_crowd(K):
    acc = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.75, 0.65, 0.85])
    prior = np.arange(1, K + 1) / (K * (K + 1) / 2)
    sim = simulate_crowd(20000, one_coin_confusion(acc, K), class_prior=prior, missing=0.4,
                         random_state=K)
    oc = OneCoinDawidSkene().fit(sim.labels)
    assert oc.converged_
    np.testing.assert_allclose(oc.accuracy_, acc, atol=0.015)
    np.testing.assert_allclose(oc.class_prior_, prior, atol=0.015)
    np.testing.assert_allclose(oc.confusion_, one_coin_confusion(oc.accuracy_, K), atol=1e-15)
    assert oc.accuracy_.shape == (8,) and oc.confusion_.shape == (8, K, K)
    # the fitted posterior decides (almost) every item as Bayes' rule with the true parameters
    crowd = sim.labels
    log_joint = np.tile(np.log(prior), (crowd.n_items, 1))
    right = np.log(acc)[crowd.expert]
    wrong = np.log((1 - acc) / (K - 1))[crowd.expert]
    for k in range(K):
        log_joint[:, k] += np.bincount(crowd.item, np.where(crowd.label == k, right, wrong),
                                       minlength=crowd.n_items)
    assert np.mean(oc.predict() == log_joint.argmax(axis=1)) > 0.99
    assert np.mean(oc.predict() == sim.truth) > 0.85


def test_recovers_an_adversarial_expert_when_most_are_good():
    acc = [0.8, 0.75, 0.7, 0.2, 0.1]   # two experts worse than chance (K=3: chance is 1/3)
    sim = simulate_crowd(10000, one_coin_confusion(acc, 3), random_state=4)
    oc = OneCoinDawidSkene().fit(sim.labels)
    np.testing.assert_allclose(oc.accuracy_, acc, atol=0.02)


# -- relation to Dawid--Skene ------------------------------------------------------------------
def mirrored(crowd):
    """The crowd plus a mirror copy of every item with all its (binary) labels flipped."""
    n = crowd.n_items
    return from_triples(np.concatenate([crowd.item, crowd.item + n]),
                        np.concatenate([crowd.expert, crowd.expert]),
                        np.concatenate([crowd.label, 1 - crowd.label]),
                        n_items=2 * n, n_experts=crowd.n_experts, n_classes=2)


@pytest.mark.parametrize("alpha", [0.0, 2.0])
def test_equals_dawid_skene_on_a_class_symmetric_binary_crowd(alpha):
    """K=2 and a crowd symmetric under swapping the classes: DS's expected counts are then
    symmetric, its M-step gives symmetric matrices, and both EMs take the same path (DS with
    half the pseudo-count, since DS adds 2a per row and one-coin 2a per expert)."""
    sim = simulate_crowd(300, random_confusion(7, 2, accuracy=(0.55, 0.9), random_state=2),
                         missing=0.3, random_state=3)
    crowd = mirrored(sim.labels)
    # the same path: the same number of steps of each EM (tol=0 and a fixed budget, so no
    # stopping test decides, at rounding level, that one of them takes a step more)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        oc = OneCoinDawidSkene(alpha=alpha, tol=0.0, max_iter=40).fit(crowd)
        ds = DawidSkene(alpha=alpha / 2, tol=0.0, max_iter=40).fit(crowd)
    assert ds.n_iter_ == oc.n_iter_ == 40
    np.testing.assert_allclose(ds.confusion_[:, 0, 0], ds.confusion_[:, 1, 1], atol=1e-12)
    np.testing.assert_allclose(ds.confusion_, oc.confusion_, atol=1e-10)
    np.testing.assert_allclose(ds.class_prior_, [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(ds.posterior_, oc.posterior_, atol=1e-10)
    assert ds.log_likelihood_ == pytest.approx(oc.log_likelihood_, rel=1e-12)
    # the objectives differ by the priors' normalising constants, their steps not at all
    np.testing.assert_allclose(np.diff(ds.log_likelihood_history_),
                               np.diff(oc.log_likelihood_history_), atol=1e-8)


def test_differs_from_dawid_skene_in_general_even_with_symmetric_true_matrices():
    """Symmetric (one-coin) true matrices do not make DS's estimates symmetric: the two fits
    differ, and DS, the larger model, reaches the higher likelihood."""
    sim = simulate_crowd(500, one_coin_confusion([0.9, 0.8, 0.7, 0.6, 0.65], 2),
                         class_prior=[0.3, 0.7], random_state=5)
    oc = OneCoinDawidSkene().fit(sim.labels)
    ds = DawidSkene().fit(sim.labels)
    assert np.abs(ds.confusion_[:, 0, 0] - ds.confusion_[:, 1, 1]).max() > 0.02
    assert np.abs(ds.posterior_ - oc.posterior_).max() > 1e-3
    assert ds.log_likelihood_ > oc.log_likelihood_


# -- special cases --------------------------------------------------------------------------------
def test_expert_without_labels_and_repeated_labels():
    triples = [(0, 0, 0), (0, 1, 0), (1, 0, 1), (1, 1, 1), (2, 0, 0), (2, 1, 1), (2, 1, 1)]
    item, expert, label = (np.array(c) for c in zip(*triples))
    crowd = from_triples(item, expert, label, n_items=3, n_experts=3, n_classes=2)
    oc0 = OneCoinDawidSkene().fit(crowd)
    assert oc0.accuracy_[2] == 0.5   # 1/K: not in the likelihood
    oc1 = OneCoinDawidSkene(alpha=1.0).fit(crowd)
    assert oc1.accuracy_[2] == 0.5   # the mode of Beta(2, 2)
    crowd3 = from_triples(item, expert, label, n_items=3, n_experts=3, n_classes=3)
    assert OneCoinDawidSkene().fit(crowd3).accuracy_[2] == pytest.approx(1 / 3)
    # expert 1's repeated label on item 2 counts twice in n_r (3 labels -> 4)
    states = []
    quiet_fit(OneCoinDawidSkene(max_iter=1, callback=states.append), crowd)
    _, want = closed_form_m_step(triples, states[0].posterior, 3, 0.0)
    np.testing.assert_allclose(states[1].params.confusion[:2, 0, 0], want[:2], atol=1e-12)


def test_perfect_experts_with_alpha_zero_give_no_nan():
    Y = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 0, -1]])
    oc = OneCoinDawidSkene().fit(Y)
    np.testing.assert_allclose(oc.accuracy_, 1.0)
    assert np.isfinite(oc.log_likelihood_) and np.isfinite(oc.posterior_).all()
    np.testing.assert_array_equal(oc.predict(), [0, 1, 2, 0])


def test_binary_restarts_keep_best_and_class_meaning():
    sim = one_coin_crowd(seed=11, K=2, n_items=500)
    one = OneCoinDawidSkene().fit(sim.labels)
    many = OneCoinDawidSkene(n_init=8, random_state=0).fit(sim.labels)
    assert many.objective_ >= one.objective_ - 1e-9 * abs(one.objective_)
    np.testing.assert_allclose(many.accuracy_, one.accuracy_, atol=1e-3)   # not 1 - p
    assert np.mean(many.predict() == one.predict()) > 0.99


def test_same_random_state_same_result_and_rows_sum_to_one():
    sim = one_coin_crowd(seed=12)
    a = OneCoinDawidSkene(n_init=4, random_state=7, alpha=0.1).fit(sim.labels)
    b = OneCoinDawidSkene(n_init=4, random_state=7, alpha=0.1).fit(sim.labels)
    np.testing.assert_allclose(a.posterior_, b.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.accuracy_, b.accuracy_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.posterior_.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(a.confusion_.sum(axis=2), 1.0, atol=1e-12)
    assert a.class_prior_.sum() == pytest.approx(1.0)


def test_features_are_used_as_in_dawid_skene():
    sim = one_coin_crowd(seed=13, n_items=600, K=2)
    rng = np.random.default_rng(0)
    phi = np.array([[0.8, 0.2, 0.6], [0.3, 0.7, 0.5]])
    X = (rng.random((600, 3)) < phi[sim.truth]).astype(float)
    oc = OneCoinDawidSkene(alpha=1.0).fit(sim.labels, X)
    assert oc.feature_prob_.shape == (2, 3) and oc.n_features_in_ == 3
    np.testing.assert_allclose(oc.feature_prob_, phi, atol=0.1)
    assert (np.diff(oc.log_likelihood_history_) >= -1e-9).all()


# -- real data ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, reference", [("rte", 0.92), ("temp", 0.935), ("wsd", 0.99)])
def test_accuracy_on_real_crowds(name, reference):
    data = load_dataset(name)
    oc = OneCoinDawidSkene().fit(data.labels)
    assert data.accuracy(oc.predict()) >= reference
    assert data.accuracy(oc.predict()) >= data.accuracy(
        MajorityVote(tie_break="lowest").fit_predict(data.labels)) - 0.005


def test_bluebirds_one_coin_explains_biased_workers_by_a_skewed_prior():
    """On bluebirds the workers are biased towards one class or the other; one coin per
    worker cannot say so, and the likelihood prefers 'nearly every bird is class 0'."""
    data = load_dataset("bluebirds")
    oc = OneCoinDawidSkene().fit(data.labels)
    assert oc.class_prior_[0] > 0.9
    assert data.accuracy(oc.predict()) < 0.65 < 0.89 < data.accuracy(
        DawidSkene().fit(data.labels).predict())


# -- bad input -----------------------------------------------------------------------------------
GOOD = [[0, 1, -1], [1, 1, 0], [0, -1, 0]]


@pytest.mark.parametrize("labels, match", [
    (None, "labels is None"),
    ([[0, np.nan], [1, 0]], "NaN"),
    ([0, 1, 1], "2-D"),
    ([[-1, -1], [-1, -1]], "no label at all"),
    ([[0, -2], [1, 0]], "below -1"),
    ([[0, 1.5], [1, 0]], "whole numbers"),
    (([0, 1], [0, 1, 1], [0, 1, 1]), "same length"),
])
def test_bad_labels(labels, match):
    with pytest.raises(ValueError, match=match):
        OneCoinDawidSkene().fit(labels)


@pytest.mark.parametrize("params, match", [
    (dict(alpha=-1.0), "alpha must be >= 0"),
    (dict(alpha=np.nan), "alpha must be finite"),
    (dict(n_init=0), "n_init must be >= 1"),
    (dict(max_iter=-1), "max_iter must be >= 0"),
    (dict(tol=-1e-3), "tol must be >= 0"),
    (dict(n_classes=1), "n_classes must be >= 2"),
    (dict(callback=3), "callback must be callable"),
    (dict(progress="yes"), "progress must be None, True or False"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        OneCoinDawidSkene(**params).fit(GOOD)


def test_bad_input_to_predict_and_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted"):
        OneCoinDawidSkene().predict()
    oc = OneCoinDawidSkene(alpha=1.0).fit(GOOD)
    with pytest.raises(ValueError, match="unknown expert 3"):
        oc.predict_proba(([0, 0], [0, 3], [0, 1]))
    with pytest.raises(ValueError, match="out of range"):
        oc.predict_proba([[0, 2, -1]])
    with pytest.raises(ValueError, match="out of range"):
        OneCoinDawidSkene(n_classes=2).fit([[0, 2], [1, 1]])


def test_params_and_repr():
    oc = OneCoinDawidSkene(alpha=0.5)
    assert oc.get_params()["alpha"] == 0.5 and oc.get_params()["progress"] is False
    assert repr(oc).startswith("OneCoinDawidSkene(n_classes=None, alpha=0.5")


def test_relabelling_flips_binary_copies_and_leaves_k_above_two_alone():
    from crowdlearn.aggregation.dawid_skene import DawidSkeneParams, _Data, _flat_indices

    sim = one_coin_crowd(seed=14, K=2, n_items=300)
    oc = OneCoinDawidSkene().fit(sim.labels)
    data = _Data(sim.labels, None, *_flat_indices(sim.labels, 2))
    flipped = DawidSkeneParams(oc.class_prior_[::-1], one_coin_confusion(1 - oc.accuracy_, 2),
                               None)
    # the flipped copy is the same model: same objective
    assert oc._e_step(data, flipped)[1] == pytest.approx(oc.objective_, rel=1e-12)
    params, q = oc._align_with_vote(data, flipped, oc.posterior_[:, ::-1])
    np.testing.assert_allclose(params.confusion[:, 0, 0], oc.accuracy_, atol=1e-15)
    np.testing.assert_allclose(q, oc.posterior_, atol=1e-15)
    # K = 3: a permuted copy is no longer one-coin (not a point of this model); nothing changes
    sim3 = one_coin_crowd(seed=15, K=3, n_items=300)
    oc3 = OneCoinDawidSkene().fit(sim3.labels)
    data3 = _Data(sim3.labels, None, *_flat_indices(sim3.labels, 3))
    perm = [1, 2, 0]
    permuted = DawidSkeneParams(oc3.class_prior_[perm], oc3.confusion_[:, perm, :], None)
    closest = one_coin_confusion(permuted.confusion[:, 0, 0], 3)
    assert np.abs(permuted.confusion - closest).max() > 0.1
    params, q = oc3._align_with_vote(data3, oc3._params, oc3.posterior_[:, perm])
    assert params is oc3._params and np.array_equal(q, oc3.posterior_[:, perm])
