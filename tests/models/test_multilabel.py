"""Tests of the multi-label Dawid--Skene model (crowdlearn.aggregation.multilabel)."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn import DawidSkene
from crowdlearn.exceptions import ConvergenceWarning, NotFittedError
from crowdlearn.aggregation.multilabel import (MultiCrowdLabels, MultiLabelDawidSkene, as_multi_labels,
                                   from_dense_multi, from_quadruples)
from crowdlearn.simulate import random_confusion, simulate_crowd


# -- the model written out from the source's equations (2)-(5), by loops ------------------------
def brute_joint_table(quads, n_items, Ks, prior, conf):
    """P(y_i = (k_1..k_M), L_i) for every joint truth, enumerating all prod K_m of them
    (equations (2)-(4) of the source, no factorisation used)."""
    tables = []
    for i in range(n_items):
        table = {}
        for ks in itertools.product(*[range(K) for K in Ks]):
            p = 1.0
            for m, k in enumerate(ks):
                p *= prior[m][k]
            for (it, j, m, l) in quads:
                if it == i:
                    p *= conf[j][m][ks[m]][l]
            table[ks] = p
        tables.append(table)
    return tables


def brute_marginals(quads, n_items, Ks, prior, conf):
    """Per-target posteriors (the source's equation (8)) and the log-likelihood (5)."""
    tables = brute_joint_table(quads, n_items, Ks, prior, conf)
    post = np.zeros((n_items, len(Ks), max(Ks)))
    ll = 0.0
    for i, table in enumerate(tables):
        total = sum(table.values())
        ll += math.log(total)
        for ks, p in table.items():
            for m, k in enumerate(ks):
                post[i, m, k] += p / total
    return post, ll, tables


def brute_m_step(quads, q, n_experts, Ks, alpha):
    """Lagrange-multiplier M-step, one multiplier per distribution, by loops; the
    denominator of pi sums over the labels actually given."""
    n, M = q.shape[0], len(Ks)
    K = max(Ks)
    prior = np.zeros((M, K))
    conf = np.zeros((n_experts, M, K, K))
    for m, Km in enumerate(Ks):
        for k in range(Km):
            prior[m, k] = (sum(q[i, m, k] for i in range(n)) + alpha) / (n + Km * alpha)
        for j in range(n_experts):
            for k in range(Km):
                num = [alpha] * Km
                for (i, jj, mm, l) in quads:
                    if jj == j and mm == m:
                        num[l] += q[i, m, k]
                total = sum(num)
                conf[j, m, k, :Km] = [v / total for v in num] if total > 0 else [1 / Km] * Km
    return prior, conf


def tiny_problem():
    """4 items, 3 experts, 2 targets with 2 and 3 classes; item 3 has no label for
    target 1, expert 2 answers only target 0, expert 0 labels (0, target 1) twice."""
    quads = [(0, 0, 0, 1), (0, 1, 0, 1), (0, 2, 0, 0), (0, 0, 1, 2), (0, 0, 1, 2), (0, 1, 1, 1),
             (1, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0), (1, 1, 1, 0), (2, 2, 0, 1), (2, 1, 1, 1),
             (2, 0, 1, 2), (3, 0, 0, 1), (3, 1, 0, 0)]
    crowd = from_quadruples(*(np.array(c) for c in zip(*quads)), n_items=4, n_experts=3,
                            n_classes=[2, 3])
    return quads, crowd


def simulated(n_items=400, n_experts=6, Ks=(2, 3, 4), missing=0.5, seed=0):
    sims = [simulate_crowd(n_items, random_confusion(n_experts, K, accuracy=(0.5, 0.85),
                                                     random_state=seed + m),
                           missing=missing, random_state=seed + 10 + m)
            for m, K in enumerate(Ks)]
    parts = [(s.labels.item, s.labels.expert, np.full(s.labels.n_labels, m), s.labels.label)
             for m, s in enumerate(sims)]
    quads = [np.concatenate(c) for c in zip(*parts)]
    crowd = from_quadruples(*quads, n_items=n_items, n_experts=n_experts, n_classes=list(Ks))
    return crowd, sims


def fit_quiet(model, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels)


# -- the objective never decreases --------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.5, 2.0])
def test_objective_never_decreases(alpha):
    crowd, _ = simulated(seed=1)
    runs = {}
    model = MultiLabelDawidSkene(alpha=alpha, tol=0, max_iter=30, n_init=3, random_state=0,
                                 callback=lambda s: runs.setdefault(s.restart, []).append(
                                     s.objective))
    fit_quiet(model, crowd)
    hist = model.log_likelihood_history_
    assert hist.shape == (model.n_iter_ + 1,)
    assert (np.diff(hist) >= -1e-9 * np.abs(hist[1:])).all()
    assert sorted(runs) == [0, 1, 2]
    for objs in runs.values():
        assert (np.diff(objs) >= -1e-9 * np.abs(np.array(objs[1:]))).all()
    assert hist[-1] == max(objs[-1] for objs in runs.values())


def test_step_by_step_equals_brute_force():
    """At every E-step: objective = log-likelihood (5) + alpha * sum(log params), posterior =
    marginals of the enumerated joint; next parameters = Lagrange M-step by loops."""
    quads, crowd = tiny_problem()
    alpha, Ks = 0.5, [2, 3]
    states = []
    fit_quiet(MultiLabelDawidSkene(alpha=alpha, tol=0, max_iter=6, callback=states.append), crowd)
    assert len(states) == 7
    for s, nxt in zip(states, states[1:] + [None]):
        p = s.params
        post, ll, _ = brute_marginals(quads, 4, Ks, p.class_prior, p.confusion)
        log_prior = sum(math.log(p.class_prior[m, k]) for m, Km in enumerate(Ks)
                        for k in range(Km))
        log_prior += sum(math.log(p.confusion[j, m, k, l]) for j in range(3)
                         for m, Km in enumerate(Ks) for k in range(Km) for l in range(Km))
        assert s.objective == pytest.approx(ll + alpha * log_prior, rel=1e-12)
        np.testing.assert_allclose(s.posterior, post, atol=1e-12)
        if nxt is not None:
            prior, conf = brute_m_step(quads, s.posterior, 3, Ks, alpha)
            np.testing.assert_allclose(nxt.params.class_prior, prior, atol=1e-12)
            np.testing.assert_allclose(nxt.params.confusion, conf, atol=1e-12)


# -- factorisation: brute force over joint configurations ---------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_posterior_equals_enumeration_of_joint_truths(alpha):
    quads, crowd = tiny_problem()
    model = MultiLabelDawidSkene(alpha=alpha, max_iter=100).fit(crowd)
    post, ll, tables = brute_marginals(quads, 4, [2, 3], model.class_prior_, model.confusion_)
    np.testing.assert_allclose(model.posterior_, post, atol=1e-12)
    assert model.log_likelihood_ == pytest.approx(ll, rel=1e-12)
    for i, table in enumerate(tables):
        total = sum(table.values())
        # the joint posterior is the product of the per-target posteriors (the source's (7))
        for ks, p in table.items():
            assert p / total == pytest.approx(np.prod([post[i, m, k] for m, k in enumerate(ks)]),
                                              rel=1e-10)
        # and its arg-max (the source's (11)) is the per-target arg-max
        assert max(table, key=table.get) == tuple(model.predict()[i])


def test_equals_independent_dawid_skene_fits():
    """EM on M targets is M Dawid--Skene EMs side by side: same start, same iterates."""
    crowd, _ = simulated(n_items=300, Ks=(2, 3, 4), missing=0.5, seed=2)
    for alpha in (0.0, 1.0):
        kw = dict(alpha=alpha, tol=0, max_iter=25)
        ml = fit_quiet(MultiLabelDawidSkene(**kw), crowd)
        total = 0.0
        for m, K in enumerate((2, 3, 4)):
            ds = fit_quiet(DawidSkene(**kw), crowd.for_target(m))
            assert ds.n_iter_ == ml.n_iter_ == 25
            np.testing.assert_allclose(ml.posterior_[:, m, :K], ds.posterior_, atol=1e-8, rtol=0)
            np.testing.assert_allclose(ml.confusion_[:, m, :K, :K], ds.confusion_, atol=1e-8,
                                       rtol=0)
            np.testing.assert_allclose(ml.class_prior_[m, :K], ds.class_prior_, atol=1e-8, rtol=0)
            total += ds.objective_
        assert ml.objective_ == pytest.approx(total, rel=1e-10)


def test_equals_dawid_skene_at_convergence():
    """With the default stopping rule the runs stop at different iterations (the tolerance
    applies to the summed objective), so they agree to the accuracy of convergence."""
    crowd, _ = simulated(n_items=300, Ks=(3, 3), missing=0.3, seed=3)
    ml = MultiLabelDawidSkene(n_classes=3, alpha=1.0, tol=1e-12, max_iter=2000).fit(crowd)
    for m in range(2):
        ds = DawidSkene(alpha=1.0, tol=1e-12, max_iter=2000).fit(crowd.for_target(m))
        np.testing.assert_allclose(ml.posterior_[:, m], ds.posterior_, atol=1e-4)
        np.testing.assert_allclose(ml.confusion_[:, m], ds.confusion_, atol=1e-4)


# -- recovery and sanity ------------------------------------------------------------------------
def test_recovers_confusions_on_large_data():
    crowd, sims = simulated(n_items=6000, n_experts=8, Ks=(2, 3, 5), missing=0.3, seed=4)
    model = MultiLabelDawidSkene(alpha=0.1).fit(crowd)
    assert model.converged_
    for m, (K, sim) in enumerate(zip((2, 3, 5), sims)):
        np.testing.assert_allclose(model.confusion_[:, m, :K, :K], sim.confusion, atol=0.06)
        np.testing.assert_allclose(model.class_prior_[m, :K], sim.class_prior, atol=0.03)
        # as accurate as Bayes' rule with the true parameters (written out here with add.at)
        log_post = np.tile(np.log(sim.class_prior), (6000, 1))
        sel = crowd.target == m
        np.add.at(log_post, crowd.item[sel],
                  np.log(sim.confusion[crowd.expert[sel], :, crowd.label[sel]]))
        oracle = np.mean(log_post.argmax(axis=1) == sim.truth)
        assert np.mean(model.predict()[:, m] == sim.truth) > oracle - 0.01


def test_probabilities_and_padding():
    crowd, _ = simulated(n_items=200, Ks=(2, 4), seed=5)
    model = MultiLabelDawidSkene(alpha=1.0).fit(crowd)
    assert model.posterior_.shape == (200, 2, 4)
    assert model.confusion_.shape == (6, 2, 4, 4)
    np.testing.assert_allclose(model.posterior_.sum(axis=2), 1.0)
    np.testing.assert_allclose(model.class_prior_.sum(axis=1), 1.0)
    np.testing.assert_allclose(model.confusion_[:, 0, :2].sum(axis=2), 1.0)
    np.testing.assert_allclose(model.confusion_[:, 1].sum(axis=2), 1.0)
    # target 0 has 2 classes: classes 2 and 3 are padding, with probability 0
    assert (model.posterior_[:, 0, 2:] == 0).all() and (model.class_prior_[0, 2:] == 0).all()
    assert (model.confusion_[:, 0, 2:] == 0).all() and (model.confusion_[:, 0, :, 2:] == 0).all()
    assert model.n_classes_ == (2, 4)


def test_priors_is_a_copy_of_the_class_priors():
    """crowd-kit's name for the class prior: one row per target, padding kept at 0, and a
    copy (changing it leaves the model alone); before fit, NotFittedError."""
    with pytest.raises(NotFittedError):
        MultiLabelDawidSkene().priors_
    crowd, _ = simulated(n_items=120, Ks=(2, 3), seed=6)
    model = MultiLabelDawidSkene(alpha=1.0).fit(crowd)
    priors = model.priors_
    np.testing.assert_array_equal(priors, model.class_prior_)
    assert priors.shape == (2, 3) and priors[0, 2] == 0
    priors[:] = 7.0
    assert (model.class_prior_ <= 1).all()
    np.testing.assert_allclose(model.priors_.sum(axis=1), 1.0)


def test_m_step_is_stationary_on_the_simplex():
    """Finite differences of the expected complete-data log-posterior along directions that
    keep every distribution summing to one vanish at the M-step's answer."""
    quads, crowd = tiny_problem()
    alpha, Ks = 0.7, [2, 3]
    states = []
    fit_quiet(MultiLabelDawidSkene(alpha=alpha, tol=0, max_iter=1, callback=states.append), crowd)
    q, nxt = states[0].posterior, states[1].params

    def objective(prior, conf):
        total = 0.0
        for m, Km in enumerate(Ks):
            total += sum((q[:, m, k].sum() + alpha) * math.log(prior[m, k]) for k in range(Km))
            for j in range(3):
                for k in range(Km):
                    counts = [alpha] * Km
                    for (i, jj, mm, l) in quads:
                        if jj == j and mm == m:
                            counts[l] += q[i, m, k]
                    total += sum(c * math.log(conf[j, m, k, l]) for l, c in enumerate(counts))
        return total

    h = 1e-6
    for m, Km in enumerate(Ks):
        for a, b in itertools.combinations(range(Km), 2):
            d = np.zeros_like(nxt.class_prior)
            d[m, a], d[m, b] = h, -h
            fd = (objective(nxt.class_prior + d, nxt.confusion)
                  - objective(nxt.class_prior - d, nxt.confusion)) / (2 * h)
            assert abs(fd) < 1e-5
            for j in range(3):
                for k in range(Km):
                    d = np.zeros_like(nxt.confusion)
                    d[j, m, k, a], d[j, m, k, b] = h, -h
                    fd = (objective(nxt.class_prior, nxt.confusion + d)
                          - objective(nxt.class_prior, nxt.confusion - d)) / (2 * h)
                    assert abs(fd) < 1e-5


def test_source_confusion_denominator_is_wrong_with_missing_labels():
    """Errata (Zhang and Wu, equation (10)): dividing by sum_i E[1{y_i^(m) = k}] over ALL
    items gives rows that do not sum to one when an expert skips items; the denominator
    must run over the items the expert labelled for that target."""
    quads, crowd = tiny_problem()
    model = fit_quiet(MultiLabelDawidSkene(max_iter=20), crowd)
    q = model.posterior_
    j, m = 2, 0                                   # expert 2 answered target 0 of items 0, 2
    num = np.zeros((2, 2))
    for (i, jj, mm, l) in quads:
        if jj == j and mm == m:
            num[:, l] += q[i, m, :2]
    source = num / q[:, m, :2].sum(axis=0)[:, None]
    assert np.abs(source.sum(axis=1) - 1).max() > 0.1
    prior, conf = brute_m_step(quads, q, 3, [2, 3], 0.0)
    np.testing.assert_allclose(conf[j, m, :2, :2].sum(axis=1), 1.0)


# -- input forms --------------------------------------------------------------------------------
def test_input_forms_agree():
    crowd, _ = simulated(n_items=100, Ks=(2, 3), seed=6)
    dense = crowd.to_dense()
    assert dense.shape == (100, 6, 2)
    again = from_dense_multi(dense, n_classes=[2, 3])
    np.testing.assert_array_equal(again.to_dense(), dense)
    # the same fixed number of EM steps on each form (no stopping test at rounding level
    # decides that one of them takes a step more if the labels are summed in another order)
    fixed = dict(n_classes=[2, 3], alpha=1.0, tol=0.0, max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = MultiLabelDawidSkene(**fixed).fit(crowd)
        b = MultiLabelDawidSkene(**fixed).fit(dense)
        c = MultiLabelDawidSkene(**fixed).fit(
            (crowd.item, crowd.expert, crowd.target, crowd.label))
    for other in (b, c):
        assert other.n_iter_ == a.n_iter_ == 15
        np.testing.assert_allclose(a.posterior_, other.posterior_, atol=1e-10)
    sub = crowd.for_target(1)
    assert sub.n_classes == 3 and sub.n_labels == int((crowd.target == 1).sum())


def test_common_or_inferred_number_of_classes():
    crowd = from_quadruples([0, 1, 1], [0, 0, 1], [0, 1, 1], [1, 3, 0])
    assert crowd.n_classes == (2, 4)                     # inferred per target, at least 2
    assert from_quadruples([0, 1], [0, 0], [0, 1], [1, 0], n_classes=5).n_classes == (5, 5)
    model = MultiLabelDawidSkene(n_classes=4).fit(crowd)
    assert model.posterior_.shape == (2, 2, 4)


def test_predict_proba_of_new_items():
    quads, crowd = tiny_problem()
    model = MultiLabelDawidSkene(alpha=1.0).fit(crowd)
    new = [(0, 1, 1, 2), (0, 2, 0, 1), (1, 0, 0, 0), (2, 1, 1, 0), (2, 1, 1, 0)]
    got = model.predict_proba(tuple(np.array(c) for c in zip(*new)))
    want, _, _ = brute_marginals(new, 3, [2, 3], model.class_prior_, model.confusion_)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_array_equal(model.predict(tuple(np.array(c) for c in zip(*new))),
                                  want.argmax(axis=2))
    np.testing.assert_array_equal(model.predict_proba(), model.posterior_)
    np.testing.assert_array_equal(model.fit_predict(crowd), model.posterior_.argmax(axis=2))


def test_same_seed_same_result():
    crowd, _ = simulated(n_items=150, seed=7)
    a = MultiLabelDawidSkene(n_init=3, random_state=5).fit(crowd)
    b = MultiLabelDawidSkene(n_init=3, random_state=5).fit(crowd)
    np.testing.assert_allclose(a.posterior_, b.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.log_likelihood_history_, b.log_likelihood_history_, rtol=1e-12)


def test_relabelling_keeps_classes_meaning_their_labels():
    """Random restarts may end in a permuted copy; after fitting, each target's hidden
    classes agree with its votes (confusion diagonals dominate for good experts)."""
    crowd, sims = simulated(n_items=500, Ks=(3, 3), missing=0.2, seed=8)
    model = MultiLabelDawidSkene(n_init=5, random_state=1).fit(crowd)
    for m, sim in enumerate(sims):
        assert np.mean(model.predict()[:, m] == sim.truth) > 0.8


def test_not_fitted():
    with pytest.raises(NotFittedError):
        MultiLabelDawidSkene().predict()


# -- bad inputs ---------------------------------------------------------------------------------
def test_bad_inputs():
    quads, crowd = tiny_problem()
    item, expert, target, label = (np.array(c) for c in zip(*quads))
    with pytest.raises(ValueError, match="label out of range: class 2 given for target 0, which "
                                         "has 2 classes"):
        from_quadruples(item, expert, target, np.where(target == 0, 2, label),
                        n_classes=[2, 3])
    with pytest.raises(ValueError, match="same length"):
        from_quadruples(item, expert, target, label[:-1])
    with pytest.raises(ValueError, match="item is empty"):
        MultiLabelDawidSkene().fit(([], [], [], []))
    with pytest.raises(ValueError, match="contains NaN"):
        from_quadruples(item.astype(float) + np.r_[np.nan, np.zeros(item.size - 1)], expert,
                        target, label)
    with pytest.raises(ValueError, match="below 0"):
        from_quadruples(item, expert - 1, target, label)
    with pytest.raises(ValueError, match="one entry per target"):
        from_quadruples(item, expert, target, label, n_classes=[2, 3, 4])
    with pytest.raises(ValueError, match="at least 2 classes"):
        from_quadruples(item, expert, target, label, n_classes=[1, 3])
    with pytest.raises(ValueError, match=r"\(item, expert, target, label\), got 3 arrays"):
        MultiLabelDawidSkene().fit((item, expert, label))
    with pytest.raises(ValueError, match="3-D"):
        MultiLabelDawidSkene().fit(np.zeros((3, 2), dtype=int))
    with pytest.raises(ValueError, match="no label at all"):
        MultiLabelDawidSkene().fit(-np.ones((2, 2, 2), dtype=int))
    with pytest.raises(ValueError, match="labels is None"):
        MultiLabelDawidSkene().fit(None)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        MultiLabelDawidSkene(alpha=-1).fit(crowd)
    model = MultiLabelDawidSkene().fit(crowd)
    with pytest.raises(ValueError, match="unknown expert 5"):
        model.predict_proba(([0], [5], [0], [1]))
    with pytest.raises(ValueError, match="target 2 out of range"):
        model.predict_proba(([0], [0], [2], [1]))
    with pytest.raises(ValueError, match="label out of range: class 2 given for target 0"):
        model.predict_proba(([0], [0], [0], [2]))
    assert isinstance(as_multi_labels(crowd), MultiCrowdLabels)


# -- properties for all inputs ------------------------------------------------------------------
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), n=st.integers(1, 4), J=st.integers(1, 3),
       Ks=st.lists(st.integers(2, 3), min_size=1, max_size=3),
       alpha=st.sampled_from([0.0, 0.5]))
def test_every_e_step_is_the_enumerated_marginal(seed, n, J, Ks, alpha):
    rng = np.random.default_rng(seed)
    quads = [(i, j, m, int(rng.integers(K))) for i in range(n) for j in range(J)
             for m, K in enumerate(Ks) if rng.random() < 0.6] or [(0, 0, 0, 1)]
    crowd = from_quadruples(*(np.array(c) for c in zip(*quads)), n_items=n, n_experts=J,
                            n_targets=len(Ks), n_classes=Ks)
    states = []
    fit_quiet(MultiLabelDawidSkene(alpha=alpha, tol=0, max_iter=2, callback=states.append), crowd)
    for s in states:
        post, ll, _ = brute_marginals(quads, n, Ks, s.params.class_prior, s.params.confusion)
        np.testing.assert_allclose(s.posterior, post, atol=1e-10)
        np.testing.assert_allclose(s.posterior.sum(axis=2), 1.0)
        if alpha == 0:
            assert s.objective == pytest.approx(ll, rel=1e-10, abs=1e-10)


def test_ragged_labels_are_refused_in_our_words():
    from crowdlearn import MultiLabelDawidSkene

    with pytest.raises(ValueError, match="ragged"):
        MultiLabelDawidSkene().fit([[[0, 1]], [[0, 1], [1, 0]]])
