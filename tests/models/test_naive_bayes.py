"""Tests for crowdlearn.BernoulliNaiveBayes."""

from fractions import Fraction as F
from math import log

import numpy as np
import pytest
import sympy as sp
from scipy.special import logsumexp

from crowdlearn import BernoulliNaiveBayes, NotFittedError, symbolic
from crowdlearn.simulate import simulate_naive_bayes

# class 0: items 0, 1; class 1: items 2, 3, 4
X_TOY = np.array([[1, 0, 1],
                  [1, 1, 0],
                  [0, 1, 1],
                  [0, 0, 1],
                  [1, 0, 0]])
Y_TOY = np.array([0, 0, 1, 1, 1])


def floats(rows):
    return np.array([[float(v) for v in row] for row in rows])


# -- hand-computed toy cases ---------------------------------------------------------------
def test_alpha_zero_toy_by_hand():
    nb = BernoulliNaiveBayes(alpha=0).fit(X_TOY, Y_TOY)
    # 2 of 5 items in class 0; class 0 has x1 = 1 twice, x2 = 1 once, x3 = 1 once
    np.testing.assert_allclose(nb.class_prior_, [2 / 5, 3 / 5], rtol=1e-15)
    np.testing.assert_allclose(nb.feature_prob_, floats([[F(2, 2), F(1, 2), F(1, 2)],
                                                         [F(1, 3), F(1, 3), F(2, 3)]]),
                               rtol=1e-15)
    np.testing.assert_array_equal(nb.class_count_, [2, 3])
    np.testing.assert_array_equal(nb.feature_count_, [[2, 1, 1], [1, 1, 2]])
    assert nb.n_features_in_ == 3


def test_alpha_one_toy_by_hand():
    nb = BernoulliNaiveBayes(alpha=1).fit(X_TOY, Y_TOY)
    # Laplace: (count + 1) / (total + K) and (ones + 1) / (n_k + 2)
    np.testing.assert_allclose(nb.class_prior_, [3 / 7, 4 / 7], rtol=1e-15)
    np.testing.assert_allclose(nb.feature_prob_, floats([[F(3, 4), F(2, 4), F(2, 4)],
                                                         [F(2, 5), F(2, 5), F(3, 5)]]),
                               rtol=1e-15)


def test_alpha_one_posterior_by_hand():
    nb = BernoulliNaiveBayes(alpha=1).fit(X_TOY, Y_TOY)
    # x = (0, 1, 0): P(x, y=0) = 3/7 * 1/4 * 2/4 * 2/4,  P(x, y=1) = 4/7 * 3/5 * 2/5 * 2/5
    p0 = F(3, 7) * F(1, 4) * F(2, 4) * F(2, 4)
    p1 = F(4, 7) * F(3, 5) * F(2, 5) * F(2, 5)
    assert p0 == F(3, 112) and p1 == F(48, 875)
    proba = nb.predict_proba([[0, 1, 0]])
    np.testing.assert_allclose(proba, [[float(p0 / (p0 + p1)), float(p1 / (p0 + p1))]],
                               rtol=1e-13)
    np.testing.assert_allclose(nb.joint_log_likelihood([[0, 1, 0]]),
                               [[log(p0), log(p1)]], rtol=1e-13)
    assert nb.predict([[0, 1, 0]]).tolist() == [1]


def test_alpha_zero_posterior_and_log_likelihood_by_hand():
    nb = BernoulliNaiveBayes(alpha=0).fit(X_TOY, Y_TOY)
    # x = (1, 0, 1): P(x, 0) = 2/5 * 1 * 1/2 * 1/2 = 1/10, P(x, 1) = 3/5 * 1/3 * 2/3 * 2/3 = 4/45
    np.testing.assert_allclose(nb.predict_proba([[1, 0, 1]]), [[9 / 17, 8 / 17]], rtol=1e-13)
    # joint likelihood of the training data: 1/10, 1/10, 4/45, 8/45, 2/45
    expected = log(F(1, 10) * F(1, 10) * F(4, 45) * F(8, 45) * F(2, 45))
    assert nb.log_likelihood(X_TOY, Y_TOY) == pytest.approx(expected, rel=1e-13)


def test_alpha_zero_impossible_class_gets_exactly_zero():
    nb = BernoulliNaiveBayes(alpha=0).fit(X_TOY, Y_TOY)
    # class 0 always has x1 = 1, so x1 = 0 rules it out
    proba = nb.predict_proba([[0, 1, 1], [0, 0, 0]])
    assert proba[:, 0].tolist() == [0.0, 0.0]          # exp(log 0): exact by structure
    np.testing.assert_allclose(proba[:, 1], 1.0, rtol=0, atol=1e-15)
    log_proba = nb.predict_log_proba([[0, 1, 1]])
    assert log_proba[0, 0] == -np.inf and abs(log_proba[0, 1]) <= 1e-15
    assert not np.isnan(nb.joint_log_likelihood([[0, 1, 1]])).any()
    assert nb.predict([[0, 1, 1]]).tolist() == [1]


def test_alpha_zero_item_impossible_under_every_class_raises():
    # feature 1 is always 1 in training, so x2 = 0 is impossible under both classes
    nb = BernoulliNaiveBayes(alpha=0).fit([[1, 1], [0, 1], [1, 1]], [0, 1, 1])
    assert (nb.joint_log_likelihood([[1, 0]]) == -np.inf).all()
    for method in (nb.predict_proba, nb.predict_log_proba, nb.predict):
        with pytest.raises(ValueError, match=r"item\(s\) \[1\] have probability 0 under every"):
            method([[1, 1], [1, 0]])
    # with smoothing the same item is fine
    smooth = BernoulliNaiveBayes(alpha=1).fit([[1, 1], [0, 1], [1, 1]], [0, 1, 1])
    np.testing.assert_allclose(smooth.predict_proba([[1, 0]]).sum(), 1.0)


# -- soft targets --------------------------------------------------------------------------
ATTRS = ("class_prior_", "feature_prob_", "class_count_", "feature_count_")


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_one_hot_soft_targets_equal_hard_targets(alpha):
    hard = BernoulliNaiveBayes(alpha=alpha).fit(X_TOY, Y_TOY)
    for onehot in (np.eye(2)[Y_TOY], np.eye(2, dtype=int)[Y_TOY]):
        soft = BernoulliNaiveBayes(alpha=alpha).fit(X_TOY, onehot)
        for name in ATTRS:
            np.testing.assert_allclose(getattr(soft, name), getattr(hard, name), rtol=1e-13,
                                       atol=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_soft_targets_follow_the_weighted_formula(alpha):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 4))
    W = rng.random((30, 3))  # weights need not sum to one per row
    nb = BernoulliNaiveBayes(alpha=alpha).fit(X, W)
    n, d = X.shape
    K = W.shape[1]
    total = sum(W[i, k] for i in range(n) for k in range(K))
    for k in range(K):
        w_k = sum(W[i, k] for i in range(n))
        assert nb.class_prior_[k] == pytest.approx((w_k + alpha) / (total + K * alpha))
        for j in range(d):
            ones = sum(W[i, k] * X[i, j] for i in range(n))
            assert nb.feature_prob_[k, j] == pytest.approx((ones + alpha) / (w_k + 2 * alpha))


def test_sample_weight_equals_repeating_rows():
    weights = np.array([1, 3, 2, 1, 2])
    weighted = BernoulliNaiveBayes(alpha=0.5).fit(X_TOY, Y_TOY, sample_weight=weights)
    repeated = BernoulliNaiveBayes(alpha=0.5).fit(np.repeat(X_TOY, weights, axis=0),
                                                  np.repeat(Y_TOY, weights))
    for name in ATTRS:
        np.testing.assert_allclose(getattr(weighted, name), getattr(repeated, name))


def test_n_classes_keeps_an_unused_class_with_smoothing():
    nb = BernoulliNaiveBayes(alpha=1, n_classes=3).fit(X_TOY, Y_TOY)
    np.testing.assert_allclose(nb.class_prior_, [3 / 8, 4 / 8, 1 / 8])
    np.testing.assert_allclose(nb.feature_prob_[2], [0.5, 0.5, 0.5])


# -- probabilities -------------------------------------------------------------------------
def test_predict_proba_rows_sum_to_one_and_agree_with_predict():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, size=(200, 6))
    y = rng.integers(0, 4, size=200)
    nb = BernoulliNaiveBayes(alpha=0.7).fit(X, y)
    proba = nb.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_array_equal(nb.predict(X), proba.argmax(axis=1))
    np.testing.assert_allclose(np.exp(nb.predict_log_proba(X)), proba)


def test_many_features_stay_in_log_space():
    rng = np.random.default_rng(2)
    phi = rng.uniform(0.05, 0.95, size=(3, 3000))
    X, y = simulate_naive_bayes(400, [0.3, 0.3, 0.4], phi, random_state=3)
    nb = BernoulliNaiveBayes(alpha=1).fit(X[:300], y[:300])
    X_new = X[300:]
    # the direct product of 3000 probabilities underflows to exactly zero ...
    with np.errstate(under="ignore"):
        direct = np.prod(np.where(X_new[:, None, :] == 1, nb.feature_prob_,
                                  1 - nb.feature_prob_), axis=2)
    assert (direct == 0).all()
    # ... but the log-space posterior is finite and normalised
    log_proba = nb.predict_log_proba(X_new)
    assert np.isfinite(log_proba).all()
    np.testing.assert_allclose(logsumexp(log_proba, axis=1), 0.0, atol=1e-10)
    proba = nb.predict_proba(X_new)
    assert not np.isnan(proba).any()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert (nb.predict(X_new) == y[300:]).mean() > 0.95


# -- against the SymPy derivations ---------------------------------------------------------
def _data_with_counts(n, s, rng):
    """A hard-labelled data set with n[y] items of class y, s[y] of them with x_0 = 1."""
    X, y = [], []
    for k, (n_k, s_k) in enumerate(zip(n, s)):
        col = np.zeros(n_k)
        col[rng.choice(n_k, size=s_k, replace=False)] = 1
        X.append(np.column_stack([col, rng.integers(0, 2, size=n_k)]))
        y.append(np.full(n_k, k))
    return np.vstack(X), np.concatenate(y)


@pytest.fixture(scope="module")
def nb_derivation():
    return symbolic.naive_bayes_mle(n_classes=3)


@pytest.mark.parametrize("seed", range(4))
def test_alpha_zero_matches_the_sympy_naive_bayes_mle(nb_derivation, seed):
    d = nb_derivation
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 40, size=3)
    s = np.array([rng.integers(1, n_k) for n_k in n])
    X, y = _data_with_counts(n, s, rng)
    nb = BernoulliNaiveBayes(alpha=0).fit(X, y)
    args = list(d.symbols["n"]) + list(d.symbols["s"])
    values = list(n) + list(s)
    for k in range(3):
        prior = sp.lambdify(args, d.solution[d.symbols["phi"][k]])(*values)
        phij = sp.lambdify(args, d.solution[d.symbols["phi_j"][k]])(*values)
        assert nb.class_prior_[k] == pytest.approx(prior, rel=1e-12)
        assert nb.feature_prob_[k, 0] == pytest.approx(phij, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 2.0])
def test_soft_targets_match_sympy_bernoulli_and_lagrange(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    X = rng.integers(0, 2, size=(25, 3))
    W = rng.dirichlet(np.ones(3), size=25)
    nb = BernoulliNaiveBayes(alpha=alpha).fit(X, W)
    bern = symbolic.bernoulli_mle(pseudo_count=True)
    phi = bern.symbols["phi"]
    for k in range(3):
        for j in range(3):
            A = float(W[:, k] @ X[:, j])
            B = float(W[:, k] @ (1 - X[:, j]))
            assert nb.feature_prob_[k, j] == pytest.approx(bern.numeric(phi, A=A, B=B, a=alpha),
                                                           rel=1e-12)
    lag = symbolic.lagrange_categorical(3, pseudo_count=True)
    theta = lag.symbols["theta"]
    f = sp.lambdify(list(lag.symbols["c"]) + [lag.symbols["a"]], [lag.solution[t] for t in theta])
    np.testing.assert_allclose(nb.class_prior_, f(*W.sum(axis=0), alpha), rtol=1e-12)


# -- recovery ------------------------------------------------------------------------------
def test_recovers_parameters_on_large_simulated_data():
    prior = np.array([0.2, 0.3, 0.5])
    phi = np.array([[0.9, 0.1, 0.5, 0.7, 0.3, 0.05],
                    [0.2, 0.8, 0.5, 0.4, 0.6, 0.5],
                    [0.5, 0.5, 0.1, 0.9, 0.2, 0.95]])
    X, y = simulate_naive_bayes(50_000, prior, phi, random_state=0)
    nb = BernoulliNaiveBayes(alpha=1).fit(X, y)
    np.testing.assert_allclose(nb.class_prior_, prior, atol=0.01)
    np.testing.assert_allclose(nb.feature_prob_, phi, atol=0.02)


# -- API -----------------------------------------------------------------------------------
def test_not_fitted():
    for method in ("predict", "predict_proba", "predict_log_proba", "joint_log_likelihood"):
        with pytest.raises(NotFittedError, match="not fitted"):
            getattr(BernoulliNaiveBayes(), method)(X_TOY)


def test_params_and_repr():
    nb = BernoulliNaiveBayes(alpha=0.5)
    assert nb.get_params() == {"alpha": 0.5, "n_classes": None}
    assert repr(nb) == "BernoulliNaiveBayes(alpha=0.5, n_classes=None)"


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("params, X, y, match", [
    (dict(alpha=-1), X_TOY, Y_TOY, "alpha must be >= 0"),
    (dict(alpha=float("nan")), X_TOY, Y_TOY, "alpha must be finite"),
    (dict(alpha="1"), X_TOY, Y_TOY, "alpha must be a number"),
    (dict(n_classes=1), X_TOY, Y_TOY, "n_classes must be >= 2"),
    (dict(n_classes=2.0), X_TOY, Y_TOY, "n_classes must be an integer"),
    ({}, [[0, 2], [1, 0]], [0, 1], r"X must be binary \(0/1\), got .*2.* at \(0, 1\)"),
    ({}, [[0, 0.5], [1, 0]], [0, 1], "X must be binary"),
    ({}, [[0, np.nan], [1, 0]], [0, 1], r"X contains NaN at \(0, 1\)"),
    ({}, [[0, np.inf], [1, 0]], [0, 1], "X must be binary"),
    ({}, [0, 1, 1], [0, 1, 1], "X must be 2-dimensional"),
    ({}, np.zeros((0, 3)), [], "X is empty"),
    ({}, np.zeros((3, 0)), [0, 1, 1], "X has no features"),
    ({}, [["a", "b"]], [0], "X must hold real numbers|X must be a numeric"),
    ({}, X_TOY, [0, 1], "y has 2 entries but X has 5 rows"),
    (dict(n_classes=2), X_TOY, [0, 1, 2, 1, 0], r"y has values out of range: 2.*n_classes=2"),
    ({}, X_TOY, [0, -1, 1, 1, 0], "y has values below 0"),
    ({}, X_TOY, [0, np.nan, 1, 1, 0], "y contains NaN"),
    ({}, X_TOY, [0, 0.5, 1, 1, 0], "y must hold whole numbers"),
    ({}, X_TOY, -np.eye(2)[Y_TOY], "non-negative"),
    ({}, X_TOY, np.full((5, 2), np.nan), "NaN or inf"),
    ({}, X_TOY, np.eye(2)[[0, 1]], "y has 2 rows but X has 5"),
    (dict(n_classes=3), X_TOY, np.eye(2)[Y_TOY], "y has 2 columns but n_classes=3"),
    ({}, X_TOY, np.ones((5, 1)), "at least 2 classes"),
    ({}, X_TOY, np.full((5, 2), "a"), "numeric weights"),
    ({}, [[0, 0], [0, 0]], [[0, 1], [1]], r"y could not be read as an array \(ragged"),
    (dict(alpha=0, n_classes=3), X_TOY, Y_TOY, r"class\(es\) \[2\] have no training weight"),
    (dict(alpha=0), X_TOY, np.column_stack([np.ones(5), np.zeros(5)]), r"class\(es\) \[1\]"),
])
def test_fit_bad_input(params, X, y, match):
    with pytest.raises(ValueError, match=match):
        BernoulliNaiveBayes(**params).fit(X, y)


@pytest.mark.parametrize("sample_weight", [[1, 1], [1, -1, 1, 1, 1], [1, np.nan, 1, 1, 1]])
def test_bad_sample_weight(sample_weight):
    with pytest.raises(ValueError, match="sample_weight must be 5 non-negative finite numbers"):
        BernoulliNaiveBayes().fit(X_TOY, Y_TOY, sample_weight=sample_weight)


def test_no_weight_at_all():
    with pytest.raises(ValueError, match="the targets carry no weight at all"):
        BernoulliNaiveBayes(alpha=0).fit(X_TOY, Y_TOY, sample_weight=np.zeros(5))


@pytest.mark.parametrize("X, match", [
    ([[0, 1]], "X has 2 features but the model was fitted with 3"),
    ([[0, 1, 1, 0]], "X has 4 features but the model was fitted with 3"),
    ([[0, 1, 3]], "X must be binary"),
    ([0, 1, 1], "X must be 2-dimensional"),
])
def test_predict_bad_input(X, match):
    nb = BernoulliNaiveBayes().fit(X_TOY, Y_TOY)
    for method in (nb.predict, nb.predict_proba, nb.predict_log_proba):
        with pytest.raises(ValueError, match=match):
            method(X)


def test_log_likelihood_bad_y():
    nb = BernoulliNaiveBayes().fit(X_TOY, Y_TOY)
    with pytest.raises(ValueError, match="out of range"):
        nb.log_likelihood(X_TOY, [0, 1, 2, 0, 0])
    with pytest.raises(ValueError, match="y has 2 entries but X has 5 rows"):
        nb.log_likelihood(X_TOY, [0, 1])
