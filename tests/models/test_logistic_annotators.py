"""Tests of LogisticAnnotators (crowdlearn.features.logistic_annotators) and its simulator
(crowdlearn.simulate.annotators)."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit

from crowdlearn import DawidSkene, MajorityVote, from_dense, from_triples
from crowdlearn._solvers.logistic import fit_weighted_logistic, weighted_logistic_objective
from crowdlearn.exceptions import ConvergenceWarning, NotFittedError
from crowdlearn.features.logistic_annotators import (LogisticAnnotators, LogisticAnnotatorsParams,
                                            observed_log_likelihood)
from crowdlearn.simulate.annotators import simulate_logistic_annotators


# -- the model written out with loops, straight from its definition -----------------------------
def sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def log_sig(v):
    """log sigma(v) without cancellation: log(1 - sigma(a)) = log_sig(-a) stays accurate
    when sigma(a) is within rounding of 1 (computing 1 - sig(a) first loses digits)."""
    return -math.log1p(math.exp(-v)) if v >= 0 else v - math.log1p(math.exp(v))


def brute_terms(X, triples, p):
    """[i][z] = (log p(z | x_i), [log P(y | x_i, z) for each label of item i])."""
    out = []
    for i, x in enumerate(X):
        a = float(np.dot(p.coef, x) + p.intercept)
        row = []
        for z in (0, 1):
            prior = log_sig(a) if z == 1 else log_sig(-a)
            labs = []
            for (it, t, y) in triples:
                if it == i:
                    b = float(np.dot(p.reliability_coef[t], x) - p.reliability_intercept[t])
                    labs.append(log_sig(b) if y == z else log_sig(-b))
            row.append((prior, labs))
        out.append(row)
    return out


def brute_posterior(X, triples, p):
    post = np.zeros((len(X), 2))
    for i, row in enumerate(brute_terms(X, triples, p)):
        joint = [math.exp(prior + sum(labs)) for prior, labs in row]
        post[i] = [v / sum(joint) for v in joint]
    return post


def brute_log_likelihood(X, triples, p):
    return sum(math.log(sum(math.exp(prior + sum(labs)) for prior, labs in row))
               for row in brute_terms(X, triples, p))


def enumerate_joint(X, triples, p):
    """Posterior marginals and log-likelihood by summing over all 2^n truth vectors z,
    with no assumption about how the joint factorises over items."""
    n = len(X)
    terms = brute_terms(X, triples, p)
    marg = np.zeros(n)
    total = 0.0
    for zs in itertools.product((0, 1), repeat=n):
        joint = math.exp(sum(terms[i][z][0] + sum(terms[i][z][1]) for i, z in enumerate(zs)))
        total += joint
        marg += joint * np.array(zs)
    return marg / total, math.log(total)


def alger_posterior(X, triples, p):
    """The source's E-step: p(z | ...) proportional to prod_t p(z, y_t | x) -- the prior
    once per label instead of once per item."""
    post = np.zeros((len(X), 2))
    for i, row in enumerate(brute_terms(X, triples, p)):
        joint = [math.exp(len(labs) * prior + sum(labs)) for prior, labs in row]
        post[i] = [v / sum(joint) for v in joint]
    return post


def alger_log_likelihood(X, triples, p):
    """The source's objective: sum_i sum_t log sum_z p(y_t, z | x_i), labels treated as
    independent marginally."""
    total = 0.0
    for row in brute_terms(X, triples, p):
        for t in range(len(row[0][1])):
            total += math.log(sum(math.exp(prior + labs[t]) for prior, labs in row))
    return total


def brute_q(X, triples, p, q):
    """Expected complete-data log-likelihood, sum_i sum_z q_i(z) log p(z, labels_i | x_i)."""
    return sum(q[i, z] * (prior + sum(labs))
               for i, row in enumerate(brute_terms(X, triples, p))
               for z, (prior, labs) in enumerate(row))


def flat(p):
    return np.concatenate([p.coef, [p.intercept], p.reliability_coef.ravel(),
                           p.reliability_intercept])


def unflat(v, d, T):
    return LogisticAnnotatorsParams(v[:d], float(v[d]), v[d + 1:d + 1 + T * d].reshape(T, d),
                                    v[d + 1 + T * d:])


def tiny_problem():
    """6 items (item 5 unlabelled), 2 features, 3 annotators (annotator 2 sparse,
    annotator 0 labels item 3 twice)."""
    X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8], [0.0, 0.0], [-1.2, -0.4], [2.0, 1.0]])
    triples = [(0, 0, 1), (0, 1, 1), (0, 2, 0), (1, 0, 1), (1, 1, 0), (2, 0, 0), (2, 1, 0),
               (3, 0, 1), (3, 0, 0), (3, 1, 1), (4, 1, 0), (4, 2, 1)]
    item, ann, lab = (np.array(c) for c in zip(*triples))
    crowd = from_triples(item, ann, lab, n_items=6, n_experts=3, n_classes=2)
    return X, triples, crowd


def random_params(seed, d=2, T=3, scale=1.0):
    rng = np.random.default_rng(seed)
    return LogisticAnnotatorsParams(rng.normal(size=d) * scale, float(rng.normal() * scale),
                                    rng.normal(size=(T, d)) * scale, rng.normal(size=T) * scale)


def varying_crowd(n_items=2000, missing=0.0, seed=0):
    """Five annotators whose reliability depends strongly on x_1."""
    return simulate_logistic_annotators(
        n_items, coef=[2.0, -1.0], intercept=0.5,
        reliability_coef=[[3.0, 0.0], [-3.0, 0.0], [0.0, 2.0], [1.5, 1.5], [0.0, 0.0]],
        reliability_intercept=[-1.0, -1.0, -0.5, -0.5, -1.5], missing=missing,
        random_state=seed)


def fit_quiet(model, labels, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels, X)


# -- the objective never decreases --------------------------------------------------------------
@pytest.mark.parametrize("l2", [0.0, 1e-3, 1.0, 10.0])
def test_objective_never_decreases(l2):
    sim = varying_crowd(400, missing=0.3, seed=1)
    runs = {}
    model = LogisticAnnotators(l2=l2, tol=0, max_iter=25, n_init=3, random_state=0,
                               callback=lambda s: runs.setdefault(s.restart, []).append(
                                   s.objective))
    fit_quiet(model, sim.labels, sim.X)
    hist = model.log_likelihood_history_
    assert hist.shape == (model.n_iter_ + 1,)
    assert (np.diff(hist) >= -1e-10 * np.abs(hist[1:])).all(), np.diff(hist).min()
    assert sorted(runs) == [0, 1, 2]
    for objs in runs.values():
        objs = np.array(objs)
        assert (np.diff(objs) >= -1e-10 * np.abs(objs[1:])).all()
    assert hist[-1] == max(objs[-1] for objs in runs.values())


def test_objective_and_posterior_step_by_step_equal_brute_force():
    """At every E-step the recorded objective is l(theta) - l2/2 |theta|^2 and the posterior
    is Bayes' rule, both computed by loops; the next parameters maximise the penalised Q."""
    X, triples, crowd = tiny_problem()
    l2 = 0.5
    states = []
    fit_quiet(LogisticAnnotators(l2=l2, tol=0, max_iter=6, callback=states.append), crowd, X)
    assert len(states) == 7
    for s, nxt in zip(states, states[1:] + [None]):
        p = s.params
        ll = brute_log_likelihood(X, triples, p)
        assert s.objective == pytest.approx(ll - 0.5 * l2 * flat(p) @ flat(p), rel=1e-12)
        np.testing.assert_allclose(s.posterior, brute_posterior(X, triples, p), atol=1e-12)
        if nxt is not None:
            # M-step optimality: the gradient of Q - penalty (finite differences of the
            # brute-force Q) vanishes at the next parameters
            v = flat(nxt.params)
            h = 1e-6
            grad = np.array([(brute_q(X, triples, unflat(v + h * e, 2, 3), s.posterior)
                              - brute_q(X, triples, unflat(v - h * e, 2, 3), s.posterior))
                             / (2 * h) for e in np.eye(v.size)]) - l2 * v
            assert np.abs(grad).max() < 1e-6
    assert np.diff([s.objective for s in states]).min() >= -1e-12


def test_log_odds_identity():
    """log P(z=1|...)/P(z=0|...) = a_i + sum_t (2 y_it - 1) b_it, since
    log sigma(v) - log sigma(-v) = v: the E-step in one line."""
    X, triples, crowd = tiny_problem()
    states = []
    fit_quiet(LogisticAnnotators(max_iter=3, tol=0, callback=states.append), crowd, X)
    for s in states:
        p = s.params
        a = X @ p.coef + p.intercept
        b = np.einsum("rd,rd->r", X[crowd.item], p.reliability_coef[crowd.expert]) \
            - p.reliability_intercept[crowd.expert]
        expected = a + np.bincount(crowd.item, weights=(2 * crowd.label - 1) * b, minlength=6)
        np.testing.assert_allclose(logit(s.posterior[:, 1]), expected, atol=1e-10)


def test_hand_computed_toy():
    """One item x = 1, classifier sigma(x), annotator 0 (eta = sigma(2x)) says 1,
    annotator 1 (eta = sigma(0x + 1)) says 0. Log-odds 1 + 2 - 1 = 2, and the
    evidence is sigma(1) sigma(-1) (sigma(2) + sigma(-2)) = sigma(1) sigma(-1)."""
    X = np.array([[1.0]])
    labels = ([0, 0], [0, 1], [1, 0])
    params = dict(coef=[1.0], intercept=0.0, reliability_coef=[[2.0], [0.0]],
                  reliability_intercept=[0.0, -1.0])
    ll = observed_log_likelihood(X, labels, **params)
    assert ll == pytest.approx(math.log(sig(1) * sig(-1)), rel=1e-14)
    p = LogisticAnnotatorsParams(np.array([1.0]), 0.0, np.array([[2.0], [0.0]]),
                                 np.array([0.0, -1.0]))
    assert brute_posterior(X, [(0, 0, 1), (0, 1, 0)], p)[0, 1] == pytest.approx(sig(2))


# -- Bayes' rule by enumeration, and the source's E-step ----------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_posterior_and_likelihood_equal_enumeration(seed):
    X, triples, crowd = tiny_problem()
    model = LogisticAnnotators(l2=0.1, n_init=2, random_state=seed).fit(crowd, X)
    marg, ll = enumerate_joint(X, triples, model._params)
    np.testing.assert_allclose(model.posterior_[:, 1], marg, atol=1e-12)
    assert model.log_likelihood_ == pytest.approx(ll, rel=1e-10)
    assert model.observed_log_likelihood(crowd, X) == pytest.approx(ll, rel=1e-12)
    # and at arbitrary parameters, through the public function
    p = random_params(seed)
    marg, ll = enumerate_joint(X, triples, p)
    assert observed_log_likelihood(X, crowd, *p) == pytest.approx(ll, rel=1e-12)


def test_source_e_step_and_likelihood_are_wrong():
    """Errata (Alger 2016, section 2): writing p(z, y_1..y_T | x) = prod_t p(z, y_t | x)
    counts the prior p(z | x) once per label. Enumeration disagrees with it, and agrees
    with the prior counted once. Likewise the objective sum_t log sum_z p(y_t, z | x)
    is not the log-likelihood of the labels."""
    X, triples, _ = tiny_problem()
    p = random_params(3, scale=1.5)
    marg, ll = enumerate_joint(X, triples, p)
    np.testing.assert_allclose(brute_posterior(X, triples, p)[:, 1], marg, atol=1e-12)
    wrong = alger_posterior(X, triples, p)[:, 1]
    assert np.abs(wrong - marg).max() > 0.05
    # items with exactly one label are the only ones the error spares
    one_label = [i for i in range(6) if sum(1 for t in triples if t[0] == i) == 1]
    np.testing.assert_allclose(wrong[one_label], marg[one_label], atol=1e-12)
    assert abs(alger_log_likelihood(X, triples, p) - ll) > 0.1


# -- gradients of the M-step objective ----------------------------------------------------------
def test_m_step_gradients_match_finite_differences():
    """The gradients the M-step uses (logistic regressions with soft targets mu_i for the
    classifier and c_it = P(z_i = y_it) for annotator t, intercept -gamma_t) equal central
    differences of the expected complete-data log-likelihood written from its definition;
    the source's gradient for alpha does not."""
    X, triples, crowd = tiny_problem()
    p = random_params(4)
    q = brute_posterior(X, triples, random_params(5))      # any posterior will do
    v = flat(p)
    h = 1e-6
    fd = np.array([(brute_q(X, triples, unflat(v + h * e, 2, 3), q)
                    - brute_q(X, triples, unflat(v - h * e, 2, 3), q)) / (2 * h)
                   for e in np.eye(v.size)])
    mu = q[:, 1]
    _, g_alpha, g_beta = weighted_logistic_objective(p.coef, p.intercept, X, mu)
    right = np.where(crowd.label == 1, mu[crowd.item], 1 - mu[crowd.item])
    _, g_w, g_b = weighted_logistic_objective(p.reliability_coef, -p.reliability_intercept,
                                              X[crowd.item], right, groups=crowd.expert,
                                              n_groups=3)
    analytic = np.concatenate([g_alpha, [g_beta], g_w.ravel(), -g_b])
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-7)
    # written out: grad_alpha = sum_i (mu_i - sigma(a_i)) x_i, d/dgamma_t = -sum (c - eta)
    a = X @ p.coef + p.intercept
    np.testing.assert_allclose(X.T @ (mu - expit(a)), fd[:2], atol=1e-7)
    eta = expit(np.einsum("rd,rd->r", X[crowd.item], p.reliability_coef[crowd.expert])
                - p.reliability_intercept[crowd.expert])
    dgamma = -np.bincount(crowd.expert, weights=right - eta, minlength=3)
    np.testing.assert_allclose(dgamma, fd[-3:], atol=1e-7)
    # the source (section 3.1): T sum_i (p(z=1) - p(z=0)) (1 - sigma(a_i)) x_i
    T = 3
    alger = T * X.T @ ((q[:, 1] - q[:, 0]) * (1 - expit(a)))
    assert np.abs(alger - fd[:2]).max() > 0.1
    # not even a rescaling of the right gradient: the angle between them is far from 0
    cos = alger @ fd[:2] / np.linalg.norm(alger) / np.linalg.norm(fd[:2])
    assert cos < 0.99


def test_source_gradient_does_not_vanish_at_the_m_step_solution():
    """At the maximiser of the classifier's part of Q (found by Newton) the correct
    gradient is 0 but the source's is not, so its stationary point is elsewhere."""
    X, triples, _ = tiny_problem()
    q = brute_posterior(X, triples, random_params(6))
    fit = fit_weighted_logistic(X, q[:, 1])
    a = X @ fit.coef + fit.intercept
    assert np.abs(X.T @ (q[:, 1] - expit(a))).max() < 1e-9
    alger = X.T @ ((q[:, 1] - q[:, 0]) * (1 - expit(a)))
    assert np.abs(alger).max() > 0.1


# -- recovery on large simulated data -----------------------------------------------------------
def test_recovers_classifier_and_reliabilities():
    sim = simulate_logistic_annotators(
        20_000, coef=[2.0, -1.0], intercept=0.5,
        reliability_coef=[[3.0, 0.0], [-3.0, 0.0], [0.0, 2.0], [1.5, 1.5], [0.0, 0.0]],
        reliability_intercept=[-1.0, -1.0, -0.5, -0.5, -1.5], missing=0.2, random_state=1)
    model = LogisticAnnotators().fit(sim.labels, sim.X)
    assert model.converged_ and not model.flipped_
    np.testing.assert_allclose(model.coef_, [2.0, -1.0], atol=0.15)
    assert model.intercept_ == pytest.approx(0.5, abs=0.1)
    np.testing.assert_allclose(model.reliability_coef_,
                               [[3.0, 0.0], [-3.0, 0.0], [0.0, 2.0], [1.5, 1.5], [0.0, 0.0]],
                               atol=0.2)
    np.testing.assert_allclose(model.reliability_intercept_, [-1.0, -1.0, -0.5, -0.5, -1.5],
                               atol=0.15)
    np.testing.assert_allclose(model.reliability(sim.X), sim.eta, atol=0.05)
    assert np.mean(model.predict() == sim.truth) > 0.95
    assert np.mean(model.predict(X=sim.X) == sim.truth) > 0.75   # the classifier alone


def test_beats_dawid_skene_when_reliability_varies():
    sim = varying_crowd(2000, seed=2)
    acc_la = np.mean(LogisticAnnotators().fit(sim.labels, sim.X).predict() == sim.truth)
    acc_ds = np.mean(DawidSkene().fit(sim.labels).predict() == sim.truth)
    acc_mv = np.mean(MajorityVote(random_state=0).fit_predict(sim.labels) == sim.truth)
    assert acc_la > acc_ds + 0.02 and acc_la > acc_mv + 0.02


# -- the sign flip ------------------------------------------------------------------------------
def test_flip_leaves_the_objective_unchanged():
    X, triples, crowd = tiny_problem()
    p = random_params(7, scale=2.0)
    f = p.flipped()
    np.testing.assert_array_equal(flat(f), -flat(p))
    assert observed_log_likelihood(X, crowd, *f) == pytest.approx(
        observed_log_likelihood(X, crowd, *p), rel=1e-13)
    assert f.penalty(0.7) == p.penalty(0.7)
    np.testing.assert_allclose(brute_posterior(X, triples, f),
                               brute_posterior(X, triples, p)[:, ::-1], atol=1e-13)
    # P(y_t = 1 - z) under p is P(y_t = z) under the flip: 1 - eta becomes eta
    x = X[0]
    eta = expit(p.reliability_coef @ x - p.reliability_intercept)
    eta_f = expit(f.reliability_coef @ x - f.reliability_intercept)
    np.testing.assert_allclose(eta_f, 1 - eta, atol=1e-15)


def test_mirror_image_start_is_flipped_back():
    """Started from the opposite of the vote, EM ends in the mirror image (a classifier of
    the other class and annotators who are mostly "wrong"); fit flips it back."""
    sim = varying_crowd(1000, seed=3)
    vote = LogisticAnnotators()._start_mu(sim.labels)
    seen = []
    mirror = LogisticAnnotators(init=1 - vote, callback=seen.append).fit(sim.labels, sim.X)
    normal = LogisticAnnotators().fit(sim.labels, sim.X)
    assert mirror.flipped_ and not normal.flipped_
    last = seen[-1]
    assert np.mean((last.posterior[:, 1] > 0.5) == (vote > 0.5)) < 0.5   # EM ended mirrored
    assert last.params.coef[0] < 0 < normal.coef_[0]
    np.testing.assert_allclose(mirror.coef_, normal.coef_, atol=1e-3)
    np.testing.assert_allclose(mirror.reliability_coef_, normal.reliability_coef_, atol=1e-3)
    np.testing.assert_allclose(mirror.reliability_intercept_, normal.reliability_intercept_,
                               atol=1e-3)
    np.testing.assert_allclose(mirror.posterior_, normal.posterior_, atol=1e-3)
    assert mirror.objective_ == pytest.approx(normal.objective_, rel=1e-8)
    assert np.mean(mirror.predict() == sim.truth) > 0.9


# -- missing labels, input forms, new items -----------------------------------------------------
def test_missing_labels_and_unlabelled_items():
    sim = varying_crowd(1500, missing=0.6, seed=4)
    assert sim.labels.unlabelled_items().size > 0
    model = LogisticAnnotators().fit(sim.labels, sim.X)
    np.testing.assert_allclose(model.posterior_.sum(axis=1), 1.0)
    # an item nobody labelled gets the classifier's prediction
    free = sim.labels.unlabelled_items()
    np.testing.assert_allclose(model.posterior_[free], model.predict_proba(X=sim.X[free]),
                               atol=1e-14)
    assert np.mean(model.predict() == sim.truth) > 0.85


def test_input_forms_agree():
    sim = varying_crowd(300, missing=0.3, seed=5)
    crowd = sim.labels
    dense = crowd.to_dense()
    # the same EM steps, to rounding (the labels may be summed in another order); a fixed
    # budget, so no stopping test at rounding level decides that one fit takes a step more
    fixed = dict(tol=0.0, max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = LogisticAnnotators(**fixed).fit(crowd, sim.X)
        b = LogisticAnnotators(**fixed).fit(dense, sim.X)
        c = LogisticAnnotators(**fixed).fit((crowd.item, crowd.expert, crowd.label), sim.X)
    for other in (b, c):
        assert other.n_iter_ == a.n_iter_ == 15
        np.testing.assert_allclose(a.posterior_, other.posterior_, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(a.reliability_coef_, other.reliability_coef_, rtol=1e-8,
                                   atol=1e-10)
    # triples may leave trailing items unlabelled: X decides n_items
    keep = crowd.item < 290
    d = LogisticAnnotators().fit((crowd.item[keep], crowd.expert[keep], crowd.label[keep]), sim.X)
    assert d.posterior_.shape == (300, 2)


def test_predict_proba_of_new_items():
    X, triples, crowd = tiny_problem()
    model = LogisticAnnotators(l2=0.3).fit(crowd, X)
    X_new = np.array([[0.2, 0.1], [-1.0, 2.0], [3.0, -1.0]])
    new = [(0, 1, 1), (0, 2, 1), (2, 0, 0)]                   # item 1 has no label
    item, ann, lab = (np.array(c) for c in zip(*new))
    got = model.predict_proba((item, ann, lab), X=X_new)
    np.testing.assert_allclose(got, brute_posterior(X_new, new, model._params), atol=1e-13)
    a = X_new @ model.coef_ + model.intercept_
    np.testing.assert_allclose(model.predict_proba(X=X_new), np.c_[expit(-a), expit(a)],
                               atol=1e-15)
    np.testing.assert_allclose(got[1], model.predict_proba(X=X_new)[1], atol=1e-15)
    np.testing.assert_array_equal(model.predict((item, ann, lab), X=X_new),
                                  got.argmax(axis=1))
    np.testing.assert_array_equal(model.predict_proba(), model.posterior_)


def test_reliability_sign_convention():
    X, _, crowd = tiny_problem()
    model = LogisticAnnotators().fit(crowd, X)
    eta = model.reliability(X)
    assert eta.shape == (6, 3)
    for t in range(3):
        np.testing.assert_allclose(
            eta[:, t], expit(X @ model.reliability_coef_[t] - model.reliability_intercept_[t]))


def test_no_features_gives_class_prior_as_mean_posterior():
    """With X of shape (n, 0) the classifier is an intercept; at a fixed point of EM with
    l2 = 0 its first-order condition says sigma(beta) = mean posterior."""
    sim = varying_crowd(500, seed=6)
    model = LogisticAnnotators(l2=0.0, tol=1e-12, max_iter=500).fit(sim.labels,
                                                                    np.zeros((500, 0)))
    assert model.coef_.shape == (0,) and model.reliability_coef_.shape == (5, 0)
    assert expit(model.intercept_) == pytest.approx(model.posterior_[:, 1].mean(), abs=1e-6)


def test_same_seed_same_result_and_probabilities():
    sim = varying_crowd(300, missing=0.2, seed=7)
    a = LogisticAnnotators(n_init=3, random_state=11).fit(sim.labels, sim.X)
    b = LogisticAnnotators(n_init=3, random_state=11).fit(sim.labels, sim.X)
    np.testing.assert_allclose(a.posterior_, b.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.log_likelihood_history_, b.log_likelihood_history_, rtol=1e-12)
    np.testing.assert_allclose(a.posterior_.sum(axis=1), 1.0)
    assert ((a.posterior_ >= 0) & (a.posterior_ <= 1)).all()
    assert a.log_likelihood_ == pytest.approx(a.objective_ + a._params.penalty(a.l2))
    assert a.objective(sim.labels, sim.X) == pytest.approx(a.objective_, rel=1e-12)


def test_extreme_features_do_not_overflow():
    """Features in the thousands push a_i and b_it far beyond exp's range; the log-space
    E-step and the solver stay finite (RuntimeWarnings are errors here)."""
    sim = varying_crowd(300, seed=8)
    model = fit_quiet(LogisticAnnotators(l2=1e-3, max_iter=30), sim.labels, sim.X * 1000)
    assert np.isfinite(model.log_likelihood_history_).all()
    assert np.isfinite(model.posterior_).all()


def test_not_fitted():
    with pytest.raises(NotFittedError):
        LogisticAnnotators().predict_proba(X=np.zeros((1, 2)))


# -- bad inputs ---------------------------------------------------------------------------------
def test_bad_inputs():
    X, _, crowd = tiny_problem()
    model = LogisticAnnotators()
    bad_X = X.copy()
    bad_X[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN at \(2, 1\)"):
        model.fit(crowd, bad_X)
    bad_X[2, 1] = np.inf
    with pytest.raises(ValueError, match="X contains inf"):
        model.fit(crowd, bad_X)
    with pytest.raises(ValueError, match="2-dimensional"):
        model.fit(crowd, X[:, 0])
    with pytest.raises(ValueError, match="X has 5 rows but the labels describe 6 items"):
        model.fit(crowd, X[:5])
    with pytest.raises(ValueError, match="X is empty"):
        model.fit(crowd, np.zeros((0, 2)))
    with pytest.raises(ValueError, match="out of range"):
        model.fit([[0, 2], [1, 1]], X[:2])
    with pytest.raises(ValueError, match=r"binary \(0 or 1\)"):
        model.fit(from_dense([[0, 2], [1, 1]]), X[:2])
    with pytest.raises(ValueError, match="no label at all"):
        model.fit([[-1, -1], [-1, -1]], X[:2])
    with pytest.raises(ValueError, match="is empty"):
        model.fit(([], [], []), X)
    with pytest.raises(ValueError, match="labels is None"):
        model.fit(None, X)
    with pytest.raises(ValueError, match="l2 must be >= 0"):
        LogisticAnnotators(l2=-1).fit(crowd, X)
    with pytest.raises(ValueError, match=r"init must have shape \(6,\)"):
        LogisticAnnotators(init=[0.5, 0.5]).fit(crowd, X)
    with pytest.raises(ValueError, match="init must be 'vote'"):
        LogisticAnnotators(init="random").fit(crowd, X)
    model.fit(crowd, X)
    with pytest.raises(ValueError, match="unknown annotator 3"):
        model.predict_proba(([0], [3], [1]), X=X[:1])
    with pytest.raises(ValueError, match="has 3 features but the model was fitted with 2"):
        model.predict_proba(X=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="need their features"):
        model.predict_proba(([0], [0], [1]))


# -- the simulator ------------------------------------------------------------------------------
def test_simulator_is_seeded_and_follows_the_model():
    kw = dict(coef=[1.0, -2.0], intercept=0.3, reliability_coef=[[2.0, 0.0], [0.0, 0.0]],
              reliability_intercept=[0.0, -1.0], missing=0.25, random_state=3)
    a = simulate_logistic_annotators(40_000, **kw)
    b = simulate_logistic_annotators(40_000, **kw)
    np.testing.assert_allclose(a.X, b.X, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(a.labels.label, b.labels.label)
    assert a.labels.n_items == 40_000 and a.labels.n_experts == 2 and a.labels.n_classes == 2
    np.testing.assert_allclose(a.eta, expit(a.X @ np.array([[2.0, 0.0], [0.0, 0.0]]).T
                                            - np.array([0.0, -1.0])))
    assert a.labels.n_labels / 80_000 == pytest.approx(0.75, abs=0.01)
    assert np.mean(a.truth) == pytest.approx(np.mean(expit(a.X @ [1.0, -2.0] + 0.3)), abs=0.01)
    crowd = a.labels
    right = crowd.label == a.truth[crowd.item]
    for t in range(2):
        sel = crowd.expert == t
        assert right[sel].mean() == pytest.approx(a.eta[crowd.item[sel], t].mean(), abs=0.01)


def test_simulator_feature_distribution_and_bad_inputs():
    sim = simulate_logistic_annotators(20_000, [0.0, 0.0], 0.0, [[0.0, 0.0]], [0.0],
                                       feature_mean=[1.0, -1.0],
                                       feature_cov=[[1.0, 0.5], [0.5, 2.0]], random_state=0)
    np.testing.assert_allclose(sim.X.mean(axis=0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(sim.X.T), [[1.0, 0.5], [0.5, 2.0]], atol=0.06)
    with pytest.raises(ValueError, match=r"reliability_coef must have shape \(n_annotators, 2\)"):
        simulate_logistic_annotators(10, [1.0, 0.0], 0.0, [[1.0]], [0.0])
    with pytest.raises(ValueError, match=r"reliability_intercept must have shape \(1,\)"):
        simulate_logistic_annotators(10, [1.0], 0.0, [[1.0]], [0.0, 1.0])
    with pytest.raises(ValueError, match="coef contains NaN"):
        simulate_logistic_annotators(10, [np.nan], 0.0, [[1.0]], [0.0])
    with pytest.raises(ValueError, match="missing must be < 1"):
        simulate_logistic_annotators(10, [1.0], 0.0, [[1.0]], [0.0], missing=1.0)
    with pytest.raises(ValueError, match="positive semi-definite"):
        simulate_logistic_annotators(10, [1.0], 0.0, [[1.0]], [0.0], feature_cov=[[-1.0]])


# -- properties for all inputs ------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), n=st.integers(1, 5), T=st.integers(1, 3),
       scale=st.sampled_from([0.1, 1.0, 3.0]))
def test_likelihood_is_enumeration_and_flip_invariant(seed, n, T, scale):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    pairs = [(i, t) for i in range(n) for t in range(T) if rng.random() < 0.7] or [(0, 0)]
    triples = [(i, t, int(rng.integers(2))) for i, t in pairs]
    item, ann, lab = (np.array(c) for c in zip(*triples))
    labels = (item, ann, lab)
    p = random_params(seed, T=T, scale=scale)
    marg, ll = enumerate_joint(X, triples, p)
    assert observed_log_likelihood(X, labels, *p) == pytest.approx(ll, rel=1e-10, abs=1e-12)
    assert observed_log_likelihood(X, labels, *p.flipped()) == pytest.approx(ll, rel=1e-10,
                                                                             abs=1e-12)
    np.testing.assert_allclose(brute_posterior(X, triples, p)[:, 1], marg, atol=1e-10)
