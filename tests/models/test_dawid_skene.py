"""Tests of the Dawid--Skene model (crowdlearn.aggregation.dawid_skene)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.datasets import load_dataset
from crowdlearn.exceptions import ConvergenceWarning, NotFittedError
from crowdlearn.labels import from_table, from_triples
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.simulate import one_coin_confusion, random_confusion, simulate_crowd


# -- brute force: the model written out with Python loops, straight from its definition ------
def brute_log_joint(triples, X, n_items, prior, conf, phi):
    """log P(y_i = k, labels_i, x_i) by explicit products (no vectorisation)."""
    K = len(prior)
    out = np.zeros((n_items, K))
    for i in range(n_items):
        for k in range(K):
            p = prior[k]
            for (it, j, l) in triples:
                if it == i:
                    p *= conf[j][k][l]
            if X is not None and phi is not None:
                for f in range(len(X[i])):
                    p *= phi[k][f] if X[i][f] == 1 else 1 - phi[k][f]
            out[i, k] = math.log(p) if p > 0 else -math.inf
    return out


def brute_posterior(triples, X, n_items, prior, conf, phi):
    """Bayes' rule: joint over its sum, item by item."""
    lj = brute_log_joint(triples, X, n_items, prior, conf, phi)
    post = np.zeros_like(lj)
    for i in range(n_items):
        joint = [math.exp(v) for v in lj[i]]
        post[i] = [v / sum(joint) for v in joint]
    return post


def brute_log_likelihood(triples, X, n_items, prior, conf, phi):
    lj = brute_log_joint(triples, X, n_items, prior, conf, phi)
    return sum(math.log(sum(math.exp(v) for v in row)) for row in lj)


def brute_log_prior(alpha, prior, conf, phi):
    total = sum(math.log(p) for p in prior) + sum(math.log(c) for c in np.ravel(conf))
    if phi is not None:
        total += sum(math.log(p) + math.log(1 - p) for p in np.ravel(phi))
    return alpha * total


def brute_m_step(triples, X, q, n_experts, alpha):
    """Equations (2)-(4) of the source, with pseudo-count alpha, by loops."""
    n, K = q.shape
    prior = [(sum(q[i, k] for i in range(n)) + alpha) / (n + K * alpha) for k in range(K)]
    conf = np.zeros((n_experts, K, K))
    for j in range(n_experts):
        for k in range(K):
            num = [alpha] * K
            for (i, jj, l) in triples:
                if jj == j:
                    num[l] += q[i, k]
            total = sum(num)
            conf[j, k] = [v / total for v in num] if total > 0 else [1.0 / K] * K
    phi = None
    if X is not None:
        F = len(X[0])
        phi = np.zeros((K, F))
        for k in range(K):
            wk = sum(q[i, k] for i in range(n))
            for f in range(F):
                phi[k, f] = (sum(q[i, k] * X[i][f] for i in range(n)) + alpha) / (wk + 2 * alpha)
    return np.array(prior), conf, phi


def tiny_problem():
    """5 items (item 4 unlabelled), 3 experts (expert 2 sparse), 3 classes, 2 features."""
    triples = [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1), (2, 0, 2),
               (2, 1, 0), (3, 1, 2), (3, 0, 2), (3, 0, 1)]     # expert 0 labels item 3 twice
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]])
    item, expert, label = (np.array(c) for c in zip(*triples))
    crowd = from_triples(item, expert, label, n_items=5, n_experts=3, n_classes=3)
    return triples, X, crowd


def small_crowd(seed=0, n_items=300, n_experts=6, K=3, missing=0.4):
    conf = random_confusion(n_experts, K, accuracy=(0.55, 0.85), random_state=seed)
    return simulate_crowd(n_items, conf, class_prior=np.arange(1, K + 1) / (K * (K + 1) / 2),
                          missing=missing, random_state=seed + 1)


def features_for(truth, phi, seed):
    rng = np.random.default_rng(seed)
    return (rng.random((truth.size, phi.shape[1])) < phi[truth]).astype(float)


# -- the objective never decreases --------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.01, 1.0, 3.0])
@pytest.mark.parametrize("with_features", [False, True])
def test_objective_never_decreases(alpha, with_features):
    sim = small_crowd(seed=3)
    X = None
    if with_features:
        phi = np.random.default_rng(0).uniform(0.2, 0.8, size=(3, 30))
        X = features_for(sim.truth, phi, 1)
    runs = {}
    ds = DawidSkene(alpha=alpha, tol=0, max_iter=30, n_init=3, random_state=0,
                    callback=lambda s: runs.setdefault(s.restart, []).append(s.objective))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds.fit(sim.labels, X)
    hist = ds.log_likelihood_history_
    assert hist.shape == (ds.n_iter_ + 1,)
    steps = np.diff(hist)
    assert (steps >= -1e-9 * np.abs(hist[1:])).all(), steps.min()
    # every run (restart 0 from the vote, the others at random) rises step by step
    assert sorted(runs) == [0, 1, 2]
    for objs in runs.values():
        objs = np.array(objs)
        assert (np.diff(objs) >= -1e-9 * np.abs(objs[1:])).all()
    assert hist[-1] == max(objs[-1] for objs in runs.values())


def test_objective_is_log_posterior_step_by_step():
    """At every E-step the recorded objective equals l(Theta) + alpha * sum(log Theta),
    computed by brute force, and the next parameters are the M-step of this posterior."""
    triples, X, crowd = tiny_problem()
    alpha = 0.5
    states = []
    ds = DawidSkene(alpha=alpha, tol=0, max_iter=8, callback=states.append)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds.fit(crowd, X)
    assert len(states) == 9
    for s, nxt in zip(states, states[1:] + [None]):
        p = s.params
        ll = brute_log_likelihood(triples, X, 5, p.class_prior, p.confusion, p.feature_prob)
        lp = brute_log_prior(alpha, p.class_prior, p.confusion, p.feature_prob)
        assert s.objective == pytest.approx(ll + lp, rel=1e-12)
        np.testing.assert_allclose(s.posterior, brute_posterior(
            triples, X, 5, p.class_prior, p.confusion, p.feature_prob), atol=1e-12)
        if nxt is not None:
            prior, conf, phi = brute_m_step(triples, X, s.posterior, 3, alpha)
            np.testing.assert_allclose(nxt.params.class_prior, prior, atol=1e-12)
            np.testing.assert_allclose(nxt.params.confusion, conf, atol=1e-12)
            np.testing.assert_allclose(nxt.params.feature_prob, phi, atol=1e-12)
    assert np.diff([s.objective for s in states]).min() >= -1e-12
    assert ds.log_likelihood_ == pytest.approx(brute_log_likelihood(
        triples, X, 5, ds.class_prior_, ds.confusion_, ds.feature_prob_), rel=1e-12)
    assert ds.objective_ == ds.log_likelihood_history_[-1]


def test_log_likelihood_equals_objective_without_smoothing():
    sim = small_crowd(seed=5)
    ds = DawidSkene(alpha=0).fit(sim.labels)
    assert ds.log_likelihood_ == ds.log_likelihood_history_[-1]
    ds1 = DawidSkene(alpha=1).fit(sim.labels)
    assert ds1.log_likelihood_ > ds1.log_likelihood_history_[-1]   # the prior term is < 0


# -- Bayes' rule, by enumeration -----------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("with_features", [False, True])
def test_posterior_equals_brute_force(alpha, with_features):
    triples, X, crowd = tiny_problem()
    X = X if with_features else None
    ds = DawidSkene(alpha=alpha, max_iter=50).fit(crowd, X)
    phi = ds.feature_prob_ if with_features else None
    expected = brute_posterior(triples, X, 5, ds.class_prior_, ds.confusion_, phi)
    np.testing.assert_allclose(ds.posterior_, expected, atol=1e-10)
    np.testing.assert_allclose(ds.predict_proba(), expected, atol=1e-10)


def test_posterior_of_new_items_equals_brute_force():
    triples, X, crowd = tiny_problem()
    ds = DawidSkene(alpha=1.0).fit(crowd, X)
    new = [(0, 2, 1), (0, 0, 1), (1, 1, 2), (2, 0, 0), (2, 0, 0)]   # item 3 has no label
    X_new = np.array([[0, 1], [1, 1], [0, 0], [1, 1]])
    item, expert, label = (np.array(c) for c in zip(*new))
    got = ds.predict_proba((item, expert, label), X_new)
    want = brute_posterior(new, X_new, 4, ds.class_prior_, ds.confusion_, ds.feature_prob_)
    np.testing.assert_allclose(got, want, atol=1e-12)
    # labels only: the features are unobserved and drop out
    got = ds.predict_proba((item, expert, label))
    want = brute_posterior(new, None, 3, ds.class_prior_, ds.confusion_, None)
    np.testing.assert_allclose(got, want, atol=1e-12)
    # features only: Naive Bayes under the fitted parameters
    got = ds.predict_proba(X=X_new)
    want = brute_posterior([], X_new, 4, ds.class_prior_, ds.confusion_, ds.feature_prob_)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_array_equal(ds.predict(X=X_new), want.argmax(axis=1))


def test_predict_on_training_labels_reproduces_posterior():
    sim = small_crowd(seed=8)
    ds = DawidSkene().fit(sim.labels)
    np.testing.assert_allclose(ds.predict_proba(sim.labels), ds.posterior_, atol=1e-12)
    np.testing.assert_array_equal(ds.fit_predict(sim.labels), ds.predict())
    dense = sim.labels.to_dense()
    np.testing.assert_allclose(ds.predict_proba(dense), ds.posterior_, atol=1e-12)


# -- parameter recovery ------------------------------------------------------------------------
def test_recovers_confusion_and_prior_on_large_simulated_crowd():
    K, J = 3, 8
    conf = random_confusion(J, K, accuracy=(0.55, 0.9), concentration=0.5, random_state=11)
    prior = np.array([0.5, 0.3, 0.2])
    sim = simulate_crowd(20_000, conf, class_prior=prior, missing=0.5, random_state=12)
    ds = DawidSkene().fit(sim.labels)
    assert ds.converged_
    np.testing.assert_allclose(ds.class_prior_, prior, atol=0.015)
    np.testing.assert_allclose(ds.confusion_, conf, atol=0.035)
    truth_conf_err = np.abs(ds.confusion_ - conf).mean()
    assert truth_conf_err < 0.01
    mv = MajorityVote(random_state=0, unlabelled="uniform").fit(sim.labels)
    labelled = sim.labels.labels_per_item() > 0
    acc_ds = (ds.predict() == sim.truth)[labelled].mean()
    acc_mv = (mv.labels_ == sim.truth)[labelled].mean()
    assert acc_ds > acc_mv


def test_recovers_feature_probabilities_with_features():
    K, F = 2, 20
    sim = simulate_crowd(20_000, one_coin_confusion([0.7, 0.65, 0.6], K),
                         class_prior=[0.35, 0.65], random_state=21)
    phi = np.random.default_rng(22).uniform(0.1, 0.9, size=(K, F))
    X = features_for(sim.truth, phi, 23)
    ds = DawidSkene().fit(sim.labels, X)
    np.testing.assert_allclose(ds.feature_prob_, phi, atol=0.03)
    np.testing.assert_allclose(ds.class_prior_, [0.35, 0.65], atol=0.015)
    np.testing.assert_allclose(ds.confusion_, sim.confusion, atol=0.03)
    # features carry information: the posterior beats labels alone
    acc_x = (ds.predict() == sim.truth).mean()
    acc = (DawidSkene(tol=1e-6).fit(sim.labels).predict() == sim.truth).mean()
    assert acc_x > acc + 0.02


# -- missing labels ---------------------------------------------------------------------------
def test_items_and_experts_without_labels():
    sim = small_crowd(seed=30, n_items=200, n_experts=5)
    keep = (sim.labels.item < 190) & (sim.labels.expert != 2)     # items 190.. unlabelled
    crowd = sim.labels.subset(keep)
    ds = DawidSkene().fit(crowd)
    assert ds.n_items_ == 200 and ds.n_experts_ == 5
    assert np.isfinite(ds.posterior_).all() and np.isfinite(ds.confusion_).all()
    np.testing.assert_allclose(ds.posterior_[190:], np.tile(ds.class_prior_, (10, 1)),
                               atol=1e-12)
    np.testing.assert_allclose(ds.confusion_[2], np.full((3, 3), 1 / 3))      # no evidence
    np.testing.assert_allclose(ds.confusion_.sum(axis=2), 1.0)
    # with alpha > 0 the silent expert also gets the prior mean, a uniform row
    ds1 = DawidSkene(alpha=2.0).fit(crowd)
    np.testing.assert_allclose(ds1.confusion_[2], np.full((3, 3), 1 / 3))


def test_unlabelled_items_with_features_use_them():
    K, F = 2, 40
    sim = simulate_crowd(600, one_coin_confusion([0.8, 0.75, 0.7], K), random_state=40)
    phi = np.random.default_rng(41).uniform(0.05, 0.95, size=(K, F))
    X = features_for(sim.truth, phi, 42)
    crowd = sim.labels.subset(sim.labels.item < 500)
    # triples with X: items beyond the largest labelled index simply have no label
    triples = (crowd.item, crowd.expert, crowd.label)
    ds = DawidSkene(alpha=1.0).fit(triples, X)
    assert ds.n_items_ == 600
    acc_unlabelled = (ds.predict()[500:] == sim.truth[500:]).mean()
    assert acc_unlabelled > 0.8
    want = brute_posterior([], X[500:505], 5, ds.class_prior_, ds.confusion_, ds.feature_prob_)
    np.testing.assert_allclose(ds.posterior_[500:505], want, atol=1e-10)


def test_repeated_labels_count_as_independent_draws():
    crowd = from_triples([0, 0, 1, 1, 2], [0, 0, 0, 1, 1], [1, 1, 0, 0, 1], n_classes=2)
    ds = DawidSkene(alpha=1.0).fit(crowd)
    triples = list(zip(crowd.item.tolist(), crowd.expert.tolist(), crowd.label.tolist()))
    want = brute_posterior(triples, None, 3, ds.class_prior_, ds.confusion_, None)
    np.testing.assert_allclose(ds.posterior_, want, atol=1e-12)


# -- numerics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_thousands_of_features_without_nan(alpha):
    K, F, n = 3, 2500, 300
    sim = small_crowd(seed=50, n_items=n, n_experts=4, K=K)
    phi = np.random.default_rng(51).uniform(0.02, 0.98, size=(K, F))
    X = features_for(sim.truth, phi, 52)
    ds = DawidSkene(alpha=alpha, max_iter=50).fit(sim.labels, X)
    assert np.isfinite(ds.posterior_).all()
    assert np.isfinite(ds.log_likelihood_history_).all()
    np.testing.assert_allclose(ds.posterior_.sum(axis=1), 1.0)
    assert (ds.predict() == sim.truth).mean() > 0.95      # thousands of features decide
    assert ds.log_likelihood_ < -1e5                     # far below exp underflow


def test_alpha_zero_with_exact_zeros():
    # expert 0 is perfect and feature 0 is 1 only in class 0: exact zeros in the MLE
    sim = simulate_crowd(400, one_coin_confusion([1.0, 0.7, 0.6], 2), random_state=60)
    X = np.zeros((400, 3))
    X[:, 0] = sim.truth == 0
    X[:, 1] = np.random.default_rng(61).random(400) < 0.5
    ds = DawidSkene(alpha=0).fit(sim.labels, X)
    # the MLE's zeros (expert 0 never wrong, feature 0 never on in class 1) are computed:
    # 0 or a few 1e-30, depending on the CPU's exp/log; feature 2 (never 1) is an exact 0
    off_diagonal = ~np.eye(2, dtype=bool)
    assert (ds.confusion_[0][off_diagonal] < 1e-12).all() and ds.feature_prob_[1, 0] < 1e-12
    for arr in (ds.posterior_, ds.confusion_, ds.feature_prob_, ds.class_prior_,
                ds.log_likelihood_history_):
        assert not np.isnan(arr).any()
    assert np.isfinite(ds.log_likelihood_)
    np.testing.assert_array_equal(ds.predict(), sim.truth)
    # feature 2 was never 1: a new item that has it is impossible under every class
    assert (ds.feature_prob_[:, 2] == 0).all()
    with pytest.raises(ValueError, match="probability 0 under every class"):
        ds.predict_proba(X=[[1, 0, 1]])
    np.testing.assert_allclose(ds.predict_proba(X=[[1, 0, 0]]), [[1.0, 0.0]], atol=1e-12)


def test_unused_class_with_alpha_zero():
    crowd = from_triples([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 1],
                         n_classes=3)
    ds = DawidSkene(alpha=0).fit(crowd)
    assert ds.class_prior_[2] == 0
    assert not np.isnan(ds.confusion_).any() and not np.isnan(ds.posterior_).any()
    np.testing.assert_allclose(ds.posterior_.sum(axis=1), 1.0)
    assert DawidSkene(n_classes=4).fit(crowd).confusion_.shape == (2, 4, 4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), K=st.integers(2, 4), alpha=st.sampled_from([0.0, 0.1, 1.0]),
       missing=st.floats(0.0, 0.8))
def test_property_rows_sum_to_one_and_objective_rises(seed, K, alpha, missing):
    conf = random_confusion(4, K, random_state=seed)
    sim = simulate_crowd(40, conf, missing=missing, random_state=seed)
    if sim.labels.n_labels == 0:
        return
    crowd = from_triples(sim.labels.item, sim.labels.expert, sim.labels.label,
                         n_items=40, n_experts=4, n_classes=K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = DawidSkene(alpha=alpha, max_iter=30, n_init=2, random_state=seed).fit(crowd)
    np.testing.assert_allclose(ds.posterior_.sum(axis=1), 1.0)
    np.testing.assert_allclose(ds.confusion_.sum(axis=2), 1.0)
    assert ds.class_prior_.sum() == pytest.approx(1.0)
    hist = ds.log_likelihood_history_
    assert (np.diff(hist) >= -1e-9 * np.abs(hist[1:])).all()
    if alpha > 0:   # with alpha=0 a new item may be impossible (a ValueError, tested above)
        new = ds.predict_proba([[0] * 4, [-1] * 4, [K - 1] * 4])
        np.testing.assert_allclose(new.sum(axis=1), 1.0)


# -- reproducibility and restarts --------------------------------------------------------------
def test_same_random_state_same_result():
    sim = small_crowd(seed=70)
    a = DawidSkene(n_init=4, random_state=123).fit(sim.labels)
    b = DawidSkene(n_init=4, random_state=123).fit(sim.labels)
    # the same fit, to rounding (a different seed differs in the first digits)
    np.testing.assert_allclose(a.posterior_, b.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.confusion_, b.confusion_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.log_likelihood_history_, b.log_likelihood_history_, rtol=1e-12)
    c = DawidSkene(n_init=4, random_state=np.random.default_rng(123)).fit(sim.labels)
    np.testing.assert_allclose(a.posterior_, c.posterior_, rtol=1e-12, atol=1e-15)


def test_restarts_keep_best_objective_and_class_meaning():
    data = load_dataset("temp")
    one = DawidSkene().fit(data.labels)
    many = DawidSkene(n_init=6, random_state=0).fit(data.labels)
    assert many.objective_ >= one.objective_ - 1e-6 * abs(one.objective_)
    # a restart may end in the label-swapped copy; classes are aligned with the vote
    np.testing.assert_array_equal(many.predict(), one.predict())


def test_callback_can_stop_and_get_params_repr():
    sim = small_crowd(seed=80)
    seen = []

    def stop_after_two(state):
        seen.append(state)
        return state.iteration >= 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = DawidSkene(callback=stop_after_two).fit(sim.labels)
    assert ds.n_iter_ == 2 and len(seen) == 3
    assert seen[0].params.confusion.shape == (6, 3, 3)
    assert "DawidSkene(" in repr(ds) and ds.get_params()["alpha"] == 0.0


# -- real data --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, reference", [("bluebirds", 0.89), ("rte", 0.925),
                                             ("temp", 0.94), ("wsd", 0.99)])
def test_accuracy_on_real_crowds(name, reference):
    data = load_dataset(name)
    for alpha in (0.0, 0.01):
        ds = DawidSkene(alpha=alpha).fit(data.labels)
        acc = data.accuracy(ds.predict())
        mv_random = data.accuracy(MajorityVote(random_state=0).fit(data.labels).labels_)
        mv_lowest = data.accuracy(MajorityVote(tie_break="lowest").fit(data.labels).labels_)
        assert acc >= max(mv_random, mv_lowest)
        assert acc >= reference


def test_table_labels_are_mapped_by_identifier():
    items = ["a", "a", "b", "b", "c", "c", "d", "d"]
    workers = ["w1", "w2", "w1", "w3", "w2", "w3", "w1", "w2"]
    labels = ["cat", "cat", "dog", "dog", "cat", "dog", "dog", "dog"]
    crowd = from_table(items, workers, labels)
    ds = DawidSkene(alpha=1.0).fit(crowd)
    # a new table sees only w3 and w2, and only "dog": its own indices differ from the fit's
    with pytest.raises(ValueError, match="unknown label"):
        ds.predict_proba(from_table(["x", "x"], ["w3", "w2"], ["dog", "zebra"]))
    new = from_table(["x", "x"], ["w3", "w2"], ["dog", "dog"], classes=["dog", "cat"])
    by_index = ds.predict_proba(([0, 0], [2, 1], [1, 1]))
    np.testing.assert_allclose(ds.predict_proba(new), by_index, atol=1e-12)
    with pytest.raises(ValueError, match="unknown expert"):
        ds.predict_proba(from_table(["x", "x"], ["w9", "w2"], ["dog", "cat"]))


# -- bad input ----------------------------------------------------------------------------------
GOOD = [[0, 1, -1], [1, 1, 0], [0, -1, 0]]


@pytest.mark.parametrize("labels, X, match", [
    (None, None, "labels is None"),
    ([[0, np.nan], [1, 0]], None, "NaN"),
    ([0, 1, 1], None, "2-D"),
    (np.zeros((0, 3)), None, "empty"),
    ([[-1, -1], [-1, -1]], None, "no label at all"),
    ([[0, -2], [1, 0]], None, "below -1"),
    ([[0, 1.5], [1, 0]], None, "whole numbers"),
    (([0, 1], [0, 1, 1], [0, 1, 1]), None, "same length"),
    (([0, 1, -1], [0, 1, 1], [0, 1, 1]), None, "item has values below 0"),
    ([], None, "empty|2-D"),
    (GOOD, [[0, 1], [1, 0]], "X has 2 rows but the labels describe 3 items"),
    (GOOD, [[0, 1], [1, 0], [2, 1]], "binary"),
    (GOOD, [[0, 1], [1, np.nan], [0, 0]], "NaN"),
    (GOOD, [0, 1, 1], "2-dimensional"),
    (GOOD, np.zeros((3, 0)), "no features"),
    ((np.array([0, 5]), np.array([0, 1]), np.array([0, 1])), np.zeros((3, 2)),
     "X has 3 rows but the labels describe 6 items"),
])
def test_bad_input_to_fit(labels, X, match):
    with pytest.raises(ValueError, match=match):
        DawidSkene().fit(labels, X)


@pytest.mark.parametrize("params, match", [
    (dict(alpha=-1.0), "alpha must be >= 0"),
    (dict(alpha=np.nan), "alpha must be finite"),
    (dict(n_init=0), "n_init must be >= 1"),
    (dict(n_init=1.5), "n_init must be an integer"),
    (dict(max_iter=-1), "max_iter must be >= 0"),
    (dict(tol=-1e-3), "tol must be >= 0"),
    (dict(n_classes=1), "n_classes must be >= 2"),
    (dict(random_state="seed"), "random_state must be"),
    (dict(callback=3), "callback must be callable"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        DawidSkene(**params).fit(GOOD)


def test_n_classes_smaller_than_labels():
    with pytest.raises(ValueError, match="out of range"):
        DawidSkene(n_classes=2).fit([[0, 2], [1, 1]])


@pytest.mark.filterwarnings("ignore::crowdlearn.DegenerateFitWarning")  # a 3-item crowd
def test_bad_input_to_predict():
    ds = DawidSkene(alpha=1.0).fit(GOOD)
    with pytest.raises(ValueError, match="unknown expert 3"):
        ds.predict_proba(([0, 0], [0, 3], [0, 1]))
    with pytest.raises(ValueError, match="unknown expert"):
        ds.predict([[0, 1, 1, 0]])
    np.testing.assert_allclose(ds.predict_proba([[0, 1, 1, -1]]),
                               ds.predict_proba(np.array([[0, 1, 1]])))  # an all-missing extra column
    with pytest.raises(ValueError, match="out of range"):
        ds.predict_proba([[0, 2, -1]])
    with pytest.raises(ValueError, match="fitted without features"):
        ds.predict_proba(X=[[0, 1]])
    with pytest.raises(ValueError, match="NaN"):
        ds.predict_proba([[0, np.nan, 1]])
    dsx = DawidSkene(alpha=1.0).fit(GOOD, X=[[0, 1], [1, 0], [1, 1]])
    with pytest.raises(ValueError, match="3 features but the model was fitted with 2"):
        dsx.predict_proba(X=[[0, 1, 1]])
    with pytest.raises(ValueError, match="binary"):
        dsx.predict_proba(X=[[0, 3]])
    with pytest.raises(ValueError, match="X has 2 rows but the labels describe 1 items"):
        dsx.predict_proba(np.array([[0, 1, 1]]), X=[[0, 1], [1, 1]])
    with pytest.raises(NotFittedError, match="not fitted"):
        DawidSkene().predict()
    with pytest.raises(ValueError, match="not fitted"):
        DawidSkene().predict_proba([[0, 1]])


def test_all_probabilities_rows_sum_to_one():
    triples, X, crowd = tiny_problem()
    ds = DawidSkene(alpha=0.1, n_init=3, random_state=1).fit(crowd, X)
    for P in (ds.posterior_, ds.predict_proba(crowd, X), ds.predict_proba(X=X),
              ds.predict_proba(([0, 1], [0, 0], [1, 2]))):
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert (P >= 0).all()
    np.testing.assert_allclose(ds.confusion_.sum(axis=2), 1.0)
    np.testing.assert_allclose(ds.class_prior_.sum(), 1.0)
    assert ((ds.feature_prob_ > 0) & (ds.feature_prob_ < 1)).all()


# -- defaults (issue 43; the bundled crowds: test_defaults_on_bundled_crowds.py) ------------
def product_like_crowd(seed):
    """A crowd like crowd-kit's product-matching one: 8,000 items, 12% in class 1, 176
    workers with heavy-tailed label counts, 3 labels per item, a tenth of them spammers."""
    rng = np.random.default_rng(seed)
    n, J = 8000, 176
    truth = (rng.random(n) < 0.12).astype(int)
    share = rng.pareto(1.0, J) + 0.05
    share /= share.sum()
    item = np.repeat(np.arange(n), 3)
    expert = np.concatenate([rng.choice(J, 3, replace=False, p=share) for _ in range(n)])
    sens, spec, spam = rng.beta(6, 2, J), rng.beta(12, 1.5, J), rng.random(J) < 0.1
    p1 = np.where(truth[item] == 1, sens[expert], 1 - spec[expert])
    p1 = np.where(spam[expert], 0.3, p1)
    label = (rng.random(item.size) < p1).astype(int)
    return from_triples(item, expert, label, n_items=n, n_experts=J, n_classes=2), truth


def test_default_fit_converges_on_a_slow_product_like_crowd():
    """Such a crowd needs 281 iterations to meet the default tol: the former max_iter=200
    warned; the default cap of 1000 lets it converge. A looser tol would not help: it stops
    where the posterior is still far from the optimum."""
    crowd, truth = product_like_crowd(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = DawidSkene().fit(crowd)
    assert ds.converged_ and 200 < ds.n_iter_ < ds.max_iter
    assert np.mean(ds.predict() == truth) > 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tight = DawidSkene(tol=1e-11, max_iter=5000).fit(crowd)
    loose = DawidSkene(tol=1e-6).fit(crowd)
    assert np.abs(loose.posterior_ - tight.posterior_).max() > \
        3 * np.abs(ds.posterior_ - tight.posterior_).max()
