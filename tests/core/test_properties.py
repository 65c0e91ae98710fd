"""Property tests (hypothesis): laws that hold for every input."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import logsumexp

from crowdlearn import (BernoulliNaiveBayes, ConvergenceWarning, LatentClassModel, MajorityVote,
                        from_dense, from_table, from_triples, run_em)

SETTINGS = settings(deadline=None, max_examples=40)


def assert_non_decreasing(history):
    history = np.asarray(history)
    slack = 1e-9 * np.maximum(1.0, np.abs(history[1:]))
    assert np.all(np.diff(history) >= -slack), np.diff(history).min()


# -- strategies ----------------------------------------------------------------------------
@st.composite
def dense_labels(draw, max_items=12, max_experts=5, max_classes=4):
    n = draw(st.integers(1, max_items))
    m = draw(st.integers(1, max_experts))
    K = draw(st.integers(2, max_classes))
    M = draw(arrays(np.int64, (n, m), elements=st.integers(-1, K - 1)))
    if (M == -1).all():
        M[draw(st.integers(0, n - 1)), draw(st.integers(0, m - 1))] = draw(st.integers(0, K - 1))
    return M, K


@st.composite
def latent_class_data(draw):
    n = draw(st.integers(2, 25))
    C = draw(st.integers(1, 4))
    S = draw(st.integers(2, 4))
    X = draw(arrays(np.int64, (n, C), elements=st.integers(-1, S - 1)))
    X[0] = np.abs(X[0])  # every child observed at least once ...
    empty = (X == -1).all(axis=1)
    X[empty, 0] = 0      # ... and every item has an observed child
    return X


@st.composite
def tables(draw):
    n = draw(st.integers(2, 30))
    kind = draw(st.sampled_from(["text", "int"]))
    elem = (st.text(alphabet="abcxyz", min_size=1, max_size=3) if kind == "text"
            else st.integers(-5, 50))
    items = draw(st.lists(elem, min_size=n, max_size=n))
    workers = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    labels = draw(st.lists(st.sampled_from(["pos", "neg", "unsure"]), min_size=n, max_size=n))
    if len(set(labels)) < 2:
        labels[-1] = "pos" if labels[0] != "pos" else "neg"
    return items, workers, labels


# -- EM never lets the objective fall ------------------------------------------------------
@SETTINGS
@given(X=latent_class_data(), n_classes=st.integers(1, 3), alpha=st.sampled_from([0.0, 0.5, 2.0]),
       seed=st.integers(0, 2**16))
def test_latent_class_objective_never_decreases(X, n_classes, alpha, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lcm = LatentClassModel(n_classes=n_classes, alpha=alpha, max_iter=30, tol=0.0,
                               random_state=seed).fit(X)
    assert_non_decreasing(lcm.log_likelihood_history_)
    for proba in (lcm.posterior_, lcm.predict_proba(X)):
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
        assert (proba >= 0).all()
    np.testing.assert_allclose(lcm.class_prior_.sum(), 1.0)


@SETTINGS
@given(X=arrays(np.int64, st.tuples(st.integers(2, 30), st.integers(1, 6)),
                elements=st.integers(0, 1)),
       n_classes=st.integers(2, 3), alpha=st.sampled_from([0.1, 1.0, 3.0]),
       seed=st.integers(0, 2**16))
def test_naive_bayes_mixture_em_objective_never_decreases(X, n_classes, alpha, seed):
    """EM for a mixture of Bernoulli products, with BernoulliNaiveBayes as the M-step."""
    def m_step(q):
        return BernoulliNaiveBayes(alpha=alpha).fit(X, q)

    def e_step(nb):
        jll = nb.joint_log_likelihood(X)
        log_ev = logsumexp(jll, axis=1)
        log_prior = alpha * (np.log(nb.class_prior_).sum() + np.log(nb.feature_prob_).sum()
                             + np.log1p(-nb.feature_prob_).sum())
        return np.exp(jll - log_ev[:, None]), log_ev.sum() + log_prior

    q0 = np.random.default_rng(seed).dirichlet(np.ones(n_classes), size=X.shape[0])
    res = run_em(m_step(q0), e_step, m_step, tol=0.0, max_iter=25)
    assert_non_decreasing(res.history)
    np.testing.assert_allclose(res.posterior.sum(axis=1), 1.0, atol=1e-12)


# -- probability rows sum to one -----------------------------------------------------------
@SETTINGS
@given(data=dense_labels(), tie_break=st.sampled_from(["random", "lowest"]),
       seed=st.integers(0, 100))
def test_majority_vote_rows_sum_to_one(data, tie_break, seed):
    M, K = data
    mv = MajorityVote(n_classes=K, tie_break=tie_break, unlabelled="uniform",
                      random_state=seed)
    mv.fit(M)
    np.testing.assert_allclose(mv.posterior_.sum(axis=1), 1.0, atol=1e-12)
    # the hard vote is always one of the most voted classes
    assert (mv.posterior_[np.arange(M.shape[0]), mv.labels_] == mv.posterior_.max(axis=1)).all()


@SETTINGS
@given(X=arrays(np.int64, st.tuples(st.integers(1, 20), st.integers(1, 40)),
                elements=st.integers(0, 1)),
       data=st.data(), alpha=st.floats(0.01, 5.0))
def test_naive_bayes_rows_sum_to_one(X, data, alpha):
    y = data.draw(arrays(np.int64, X.shape[0], elements=st.integers(0, 3)))
    X_new = data.draw(arrays(np.int64, (5, X.shape[1]), elements=st.integers(0, 1)))
    nb = BernoulliNaiveBayes(alpha=alpha, n_classes=4).fit(X, y)
    proba = nb.predict_proba(X_new)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_allclose(logsumexp(nb.predict_log_proba(X_new), axis=1), 0.0, atol=1e-12)


# -- conversions round-trip ----------------------------------------------------------------
@SETTINGS
@given(data=dense_labels())
def test_dense_round_trip(data):
    M, K = data
    crowd = from_dense(M, n_classes=K)
    np.testing.assert_array_equal(crowd.to_dense(), M)
    again = from_triples(crowd.item, crowd.expert, crowd.label, n_items=crowd.n_items,
                         n_experts=crowd.n_experts, n_classes=K)
    np.testing.assert_array_equal(again.to_dense(), M)
    assert crowd.n_labels == (M >= 0).sum()
    counts = crowd.vote_counts()
    np.testing.assert_array_equal(counts.sum(axis=1), (M >= 0).sum(axis=1))
    for k in range(K):
        np.testing.assert_array_equal(counts[:, k], (M == k).sum(axis=1))
    np.testing.assert_array_equal(crowd.unlabelled_items(), np.flatnonzero((M < 0).all(axis=1)))


@SETTINGS
@given(table=tables())
def test_table_round_trip(table):
    items, workers, labels = table
    crowd = from_table(items, workers, labels)
    back = crowd.to_table()
    assert [x.tolist() for x in back] == [items, workers, labels]
    assert crowd.n_items == len(set(items)) and crowd.n_experts == len(set(workers))
    # re-encoding with the known identifiers gives the same indices
    again = from_table(items, workers, labels, item_ids=crowd.item_ids,
                       expert_ids=crowd.expert_ids, classes=crowd.class_ids)
    for name in ("item", "expert", "label"):
        np.testing.assert_array_equal(getattr(again, name), getattr(crowd, name))
    # and a table written back from triples of indices gives the indices
    plain = from_triples(crowd.item, crowd.expert, crowd.label, n_items=crowd.n_items,
                         n_experts=crowd.n_experts, n_classes=crowd.n_classes)
    np.testing.assert_array_equal(plain.to_table()[0], crowd.item)
