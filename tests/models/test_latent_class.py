"""Tests for crowdlearn.LatentClassModel."""

import itertools
import warnings
from fractions import Fraction as F
from math import log

import numpy as np
import pytest

from crowdlearn import ConvergenceWarning, LatentClassModel, NotFittedError
from crowdlearn.simulate import simulate_latent_class

# 4 items, 2 binary children; the last item's second child is missing
X_TOY = np.array([[0, 1], [1, 1], [1, 0], [0, -1]])
Q_TOY = [[F(4, 5), F(1, 5)], [F(2, 5), F(3, 5)], [F(1, 2), F(1, 2)], [F(1), F(0)]]


def _fit_quiet(**params):
    """Fit with ConvergenceWarning silenced (for deliberately truncated runs)."""
    X = params.pop("X")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LatentClassModel(**params).fit(X)


def _simulated(n=600, seed=0, missing=0.0):
    tables = [np.array([[0.8, 0.1, 0.1], [0.1, 0.3, 0.6]]),
              np.array([[0.7, 0.3], [0.2, 0.8]]),
              np.array([[0.6, 0.2, 0.2], [0.2, 0.2, 0.6]]),
              np.array([[0.9, 0.1], [0.4, 0.6]])]
    X, h = simulate_latent_class(n, [0.4, 0.6], tables, random_state=seed)
    if missing:
        rng = np.random.default_rng(seed + 100)
        drop = rng.random(X.shape) < missing
        drop[np.arange(n), rng.integers(0, X.shape[1], size=n)] = False  # keep one per row
        X = np.where(drop, -1, X)
    return X, h


# -- reference implementations written with plain loops ------------------------------------
def reference_m_step(X, q, n_states, alpha=0.0):
    n, C = X.shape
    K = len(q[0])
    prior = [(sum(q[i][h] for i in range(n)) + alpha) / (n + K * alpha) for h in range(K)]
    tables = []
    for c in range(C):
        S = n_states[c]
        table = np.zeros((K, S))
        for h in range(K):
            seen = sum(q[i][h] for i in range(n) if X[i, c] >= 0)
            for s in range(S):
                hits = sum(q[i][h] for i in range(n) if X[i, c] == s)
                table[h, s] = (hits + alpha) / (seen + S * alpha)
        tables.append(table)
    return np.array(prior, dtype=float), tables


def brute_force_posterior(X, prior, tables):
    """Bayes' rule item by item: p(h | x) = p(h) prod_c p(x_c | h) / sum_h' (...)."""
    post = np.zeros((X.shape[0], len(prior)))
    evidence = np.zeros(X.shape[0])
    for i, row in enumerate(X):
        joint = []
        for h in range(len(prior)):
            p = prior[h]
            for c, s in enumerate(row):
                if s >= 0:
                    p *= tables[c][h, s]
            joint.append(p)
        evidence[i] = sum(joint)
        post[i] = np.array(joint) / evidence[i]
    return post, evidence


# -- hand-computed toy case ----------------------------------------------------------------
def test_one_m_step_and_e_step_by_hand():
    init = np.array([[float(v) for v in row] for row in Q_TOY])
    with pytest.warns(ConvergenceWarning):
        lcm = LatentClassModel(init=init, max_iter=0).fit(X_TOY)
    # M-step from the given responsibilities: column sums 27/10 and 13/10 over 4 items
    np.testing.assert_allclose(lcm.class_prior_, [27 / 40, 13 / 40], rtol=1e-14)
    # child 0: class 0 has weight 9/5 on state 0 and 9/10 on state 1 (of 27/10) ...
    np.testing.assert_allclose(lcm.cond_prob_[0], [[2 / 3, 1 / 3], [2 / 13, 11 / 13]],
                               rtol=1e-14)
    # child 1 is missing for item 3, so only 17/10 and 13/10 of weight are seen
    np.testing.assert_allclose(lcm.cond_prob_[1], [[5 / 17, 12 / 17], [5 / 13, 8 / 13]],
                               rtol=1e-14)
    # E-step at those parameters
    p0, p1 = F(27, 40), F(13, 40)
    joint = [[p0 * F(2, 3) * F(12, 17), p1 * F(2, 13) * F(8, 13)],
             [p0 * F(1, 3) * F(12, 17), p1 * F(11, 13) * F(8, 13)],
             [p0 * F(1, 3) * F(5, 17), p1 * F(11, 13) * F(5, 13)],
             [p0 * F(2, 3), p1 * F(2, 13)]]
    expected = [[float(a / (a + b)), float(b / (a + b))] for a, b in joint]
    np.testing.assert_allclose(lcm.posterior_, expected, rtol=1e-13)
    loglik = sum(log(a + b) for a, b in joint)
    assert lcm.log_likelihood_history_.tolist() == pytest.approx([loglik], rel=1e-13)
    assert lcm.n_iter_ == 0 and not lcm.converged_


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_second_step_follows_the_loop_formulas(alpha):
    init = np.array([[float(v) for v in row] for row in Q_TOY])
    first = _fit_quiet(X=X_TOY, init=init, max_iter=0, alpha=alpha)
    second = _fit_quiet(X=X_TOY, init=init, max_iter=1, alpha=alpha)
    prior0, tables0 = reference_m_step(X_TOY, init, [2, 2], alpha)
    np.testing.assert_allclose(first.class_prior_, prior0, rtol=1e-13)
    for got, want in zip(first.cond_prob_, tables0):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    q1, _ = brute_force_posterior(X_TOY, prior0, tables0)
    np.testing.assert_allclose(first.posterior_, q1, rtol=1e-13)
    prior1, tables1 = reference_m_step(X_TOY, q1, [2, 2], alpha)
    np.testing.assert_allclose(second.class_prior_, prior1, rtol=1e-12)
    for got, want in zip(second.cond_prob_, tables1):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    q2, evidence = brute_force_posterior(X_TOY, prior1, tables1)
    np.testing.assert_allclose(second.posterior_, q2, rtol=1e-12)
    log_prior = alpha * (np.log(prior1).sum() + sum(np.log(t).sum() for t in tables1))
    assert second.log_likelihood_history_[-1] == pytest.approx(np.log(evidence).sum()
                                                               + log_prior, rel=1e-12)
    assert second.log_likelihood_history_[0] == pytest.approx(first.log_likelihood_history_[0],
                                                              rel=1e-12)


# -- monotone objective, step by step ------------------------------------------------------
@pytest.mark.parametrize("alpha, missing", [(0.0, 0.0), (0.0, 0.3), (0.5, 0.0), (2.0, 0.3)])
def test_objective_never_decreases_step_by_step(alpha, missing):
    X, _ = _simulated(n=300, seed=1, missing=missing)
    start = np.random.default_rng(0).dirichlet([1, 1], size=X.shape[0])
    # one EM step per fit: max_iter=0 gives theta = M(q) and the E-step there
    q, objectives = start, []
    for _ in range(25):
        step = _fit_quiet(X=X, init=q, max_iter=0, alpha=alpha)
        objectives.append(step.log_likelihood_history_[-1])
        q = step.posterior_
    diffs = np.diff(objectives)
    assert (diffs >= -1e-9 * np.abs(objectives[1:])).all(), diffs.min()
    assert objectives[-1] > objectives[0] + 1.0  # EM really climbed
    # the same sequence as one run
    run = _fit_quiet(X=X, init=start, max_iter=24, tol=0.0, alpha=alpha)
    np.testing.assert_allclose(run.log_likelihood_history_, objectives, rtol=1e-10)


@pytest.mark.parametrize("alpha", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_history_never_decreases(alpha, seed):
    X, _ = _simulated(n=200, seed=seed, missing=0.2)
    lcm = LatentClassModel(n_classes=3, alpha=alpha, max_iter=2000, tol=1e-10,
                           random_state=seed).fit(X)
    h = lcm.log_likelihood_history_
    assert h.size >= 3
    assert (np.diff(h) >= -1e-9 * np.abs(h[1:])).all()
    assert lcm.converged_
    assert lcm.n_iter_ == h.size - 1


# -- the posterior -------------------------------------------------------------------------
@pytest.mark.parametrize("missing", [0.0, 0.4])
def test_posterior_equals_brute_force_bayes_rule(missing):
    X, _ = _simulated(n=150, seed=4, missing=missing)
    lcm = LatentClassModel(n_classes=2, random_state=0).fit(X)
    post, evidence = brute_force_posterior(X, lcm.class_prior_, lcm.cond_prob_)
    np.testing.assert_allclose(lcm.posterior_, post, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(lcm.predict_proba(X), post, rtol=1e-10, atol=1e-14)
    assert lcm.log_likelihood(X) == pytest.approx(np.log(evidence).sum(), rel=1e-12)


def test_rows_sum_to_one_and_predict_is_the_arg_max():
    X, _ = _simulated(n=300, seed=2, missing=0.3)
    lcm = LatentClassModel(n_classes=3, random_state=1).fit(X)
    for proba in (lcm.posterior_, lcm.predict_proba(X)):
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
        assert (proba >= 0).all()
    np.testing.assert_allclose(lcm.class_prior_.sum(), 1.0)
    for table in lcm.cond_prob_:
        np.testing.assert_allclose(table.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(lcm.predict(X), lcm.posterior_.argmax(axis=1))


def test_missing_children_are_left_out():
    X, _ = _simulated(n=200, seed=3, missing=0.3)
    lcm = LatentClassModel(random_state=0).fit(X)
    # an item with nothing observed has the prior as posterior and likelihood one
    np.testing.assert_allclose(lcm.predict_proba([[-1, -1, -1, -1]]), [lcm.class_prior_])
    assert lcm.log_likelihood([[-1, -1, -1, -1]]) == pytest.approx(0.0, abs=1e-12)
    # dropping a child equals marginalising it out by hand
    row = X[~(X == -1).any(axis=1)][0]
    partial = row.copy()
    partial[1] = -1
    joint = lcm.class_prior_ * np.prod([lcm.cond_prob_[c][:, s] for c, s in enumerate(row)
                                        if c != 1], axis=0)
    np.testing.assert_allclose(lcm.predict_proba([partial])[0], joint / joint.sum())


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_log_likelihood_equals_final_history_value(alpha):
    X, _ = _simulated(n=250, seed=5, missing=0.1)
    lcm = LatentClassModel(alpha=alpha, random_state=0).fit(X)
    log_prior = alpha * (np.log(lcm.class_prior_).sum()
                         + sum(np.log(t).sum() for t in lcm.cond_prob_))
    assert lcm.log_likelihood(X) + log_prior == pytest.approx(lcm.log_likelihood_history_[-1],
                                                              rel=1e-12)
    assert lcm.objective_ == lcm.log_likelihood_history_[-1]


# -- fixed point, seeds, recovery ----------------------------------------------------------
@pytest.mark.parametrize("row", [[0.5, 0.5], [0.3, 0.7], [0.2, 0.5, 0.3]])
def test_identical_responsibilities_are_a_fixed_point(row):
    X, _ = _simulated(n=200, seed=6)
    init = np.tile(row, (X.shape[0], 1))
    lcm = LatentClassModel(n_classes=len(row), init=init, max_iter=50).fit(X)
    np.testing.assert_allclose(lcm.posterior_, init, atol=1e-12)
    np.testing.assert_allclose(lcm.class_prior_, row, atol=1e-12)
    for table in lcm.cond_prob_:
        np.testing.assert_allclose(table, np.tile(table[0], (len(row), 1)), atol=1e-12)
    assert lcm.converged_ and lcm.n_iter_ == 1
    h = lcm.log_likelihood_history_
    assert h[1] == pytest.approx(h[0], rel=1e-14)
    # whereas a random start leaves it
    moved = LatentClassModel(n_classes=len(row), max_iter=5000, random_state=0).fit(X)
    assert moved.objective_ > lcm.objective_ + 1.0


def test_same_random_state_same_result():
    X, _ = _simulated(n=200, seed=7, missing=0.2)
    a = LatentClassModel(n_classes=2, n_init=3, max_iter=5000, random_state=11).fit(X)
    b = LatentClassModel(n_classes=2, n_init=3, max_iter=5000, random_state=11).fit(X)
    c = LatentClassModel(n_classes=2, n_init=3, max_iter=5000,
                         random_state=np.random.default_rng(11)).fit(X)
    for other in (b, c):
        np.testing.assert_allclose(a.posterior_, other.posterior_, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a.log_likelihood_history_, other.log_likelihood_history_,
                                   rtol=1e-12)
        np.testing.assert_allclose(a.class_prior_, other.class_prior_, rtol=1e-12, atol=1e-15)
    d = LatentClassModel(n_classes=2, max_iter=5000, random_state=12).fit(X)
    assert not np.array_equal(a.log_likelihood_history_, d.log_likelihood_history_)


def test_recovers_parameters_on_large_simulated_data():
    prior = np.array([0.3, 0.7])
    tables = [np.array([[0.8, 0.15, 0.05], [0.1, 0.3, 0.6]]),
              np.array([[0.75, 0.25], [0.2, 0.8]]),
              np.array([[0.6, 0.3, 0.1], [0.15, 0.25, 0.6]]),
              np.array([[0.9, 0.1], [0.3, 0.7]]),
              np.array([[0.2, 0.2, 0.6], [0.5, 0.3, 0.2]])]
    X, h = simulate_latent_class(20_000, prior, tables, random_state=0)
    lcm = LatentClassModel(n_classes=2, n_init=3, random_state=0, tol=1e-9).fit(X)
    # label switching: choose the permutation of the found classes that fits best
    best = min(itertools.permutations(range(2)), key=lambda p: sum(
        np.abs(lcm.cond_prob_[c][list(p)] - t).sum() for c, t in enumerate(tables)))
    perm = list(best)
    np.testing.assert_allclose(lcm.class_prior_[perm], prior, atol=0.03)
    for got, want in zip(lcm.cond_prob_, tables):
        np.testing.assert_allclose(got[perm], want, atol=0.03)
    # model class perm[k] is true class k
    true_of_found = np.argsort(perm)
    assert (true_of_found[lcm.predict(X)] == h).mean() > 0.85


def test_callback_sees_every_e_step():
    X, _ = _simulated(n=100, seed=8)
    seen = []
    lcm = LatentClassModel(random_state=0, callback=seen.append).fit(X)
    assert [s.objective for s in seen] == lcm.log_likelihood_history_.tolist()


def test_stops_at_max_iter_with_convergence_warning():
    X, _ = _simulated(n=200, seed=9)
    with pytest.warns(ConvergenceWarning, match="LatentClassModel did not converge in max_iter=2"):
        lcm = LatentClassModel(max_iter=2, tol=0.0, random_state=0).fit(X)
    assert lcm.n_iter_ == 2 and not lcm.converged_
    assert lcm.log_likelihood_history_.size == 3


def test_n_states_from_the_data():
    lcm = LatentClassModel(random_state=0).fit([[0, 3], [1, 0], [0, 2]])
    assert lcm.n_states_.tolist() == [2, 4]
    assert [t.shape for t in lcm.cond_prob_] == [(2, 2), (2, 4)]


def test_item_impossible_under_every_class_is_refused():
    X = np.array([[0, 0], [0, 1], [2, 1], [0, 0], [2, 0]])  # child 0 never in state 1
    lcm = LatentClassModel(random_state=0).fit(X)
    with pytest.raises(ValueError, match="probability 0"):
        lcm.predict_proba([[1, 0]])


def test_alpha_zero_fit_survives_a_responsibility_that_underflows_to_zero():
    X = np.array([[1, 1, 1], [-1, 0, -1], [0, -1, -1]])  # child 2 is seen for item 0 only
    lcm = LatentClassModel(n_classes=2, random_state=0).fit(X)
    assert np.isfinite(lcm.objective_)
    assert (np.diff(lcm.log_likelihood_history_) >= -1e-12).all()


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("params, X, match", [
    ({}, [[0, 1], [-1, -1], [1, 0]], r"item\(s\) \[1\] have no observed child"),
    ({}, [0, 1, 1], "X must be 2-dimensional"),
    ({}, [[0, np.nan], [1, 1]], "X contains NaN"),
    ({}, [[0, np.inf], [1, 1]], "X contains inf"),
    ({}, [[0, -2], [1, 1]], "X has values below -1"),
    ({}, [[0, 0.5], [1, 1]], "X must hold whole numbers"),
    ({}, np.zeros((0, 2)), "X is empty"),
    ({}, np.zeros((2, 0)), "X is empty|no observed children"),
    ({}, [["a", "b"]], "X must hold integers"),
    ({}, [[0, -1], [1, -1]], r"child\(ren\) \[1\] are never observed"),
    (dict(n_classes=0), [[0, 1], [1, 0]], "n_classes must be >= 1"),
    (dict(n_classes=2.0), [[0, 1], [1, 0]], "n_classes must be an integer"),
    (dict(alpha=-0.1), [[0, 1], [1, 0]], "alpha must be >= 0"),
    (dict(n_init=0), [[0, 1], [1, 0]], "n_init must be >= 1"),
    (dict(max_iter=-1), [[0, 1], [1, 0]], "max_iter must be >= 0"),
    (dict(tol=-1.0), [[0, 1], [1, 0]], "tol must be >= 0"),
    (dict(random_state="x"), [[0, 1], [1, 0]], "random_state must be"),
    (dict(init="kmeans"), [[0, 1], [1, 0]], "init must be 'random' or an array"),
    (dict(init=np.full((3, 2), 0.5)), [[0, 1], [1, 0]], "init has 3 rows, expected 2"),
    (dict(init=np.full((2, 3), 1 / 3)), [[0, 1], [1, 0]], "init has 3 columns, expected 2"),
    (dict(init=[[0.5, 0.6], [0.5, 0.5]]), [[0, 1], [1, 0]], "rows of init must sum to 1"),
    (dict(init=[[1.5, -0.5], [0.5, 0.5]]), [[0, 1], [1, 0]], "init has negative entries"),
    (dict(init=[[np.nan, 0.5], [0.5, 0.5]]), [[0, 1], [1, 0]], "init contains NaN"),
])
def test_fit_bad_input(params, X, match):
    with pytest.raises(ValueError, match=match):
        LatentClassModel(**params).fit(X)


@pytest.mark.parametrize("X, match", [
    ([[0, 2]], r"X\[:, 1\] has values out of range: 2.*child 1 has 2 states"),
    ([[5, 0]], r"X\[:, 0\] has values out of range: 5"),
    ([[0, 1, 1]], "X has 3 columns but the model was fitted with 2"),
    ([[0, -2]], "below -1"),
    ([[0, np.nan]], "NaN"),
])
def test_predict_bad_input(X, match):
    lcm = LatentClassModel(random_state=0).fit([[0, 1], [1, 1], [0, 0]])
    for method in (lcm.predict, lcm.predict_proba, lcm.log_likelihood):
        with pytest.raises(ValueError, match=match):
            method(X)


def test_not_fitted():
    for method in ("predict", "predict_proba", "log_likelihood"):
        with pytest.raises(NotFittedError, match="not fitted"):
            getattr(LatentClassModel(), method)([[0, 1]])
