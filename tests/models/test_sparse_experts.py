"""Tests of SparseExpertsEM and its penalty path (crowdlearn.features.sparse_experts) and of the
simulators in crowdlearn.simulate.sparse."""

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit

from crowdlearn import from_triples
from crowdlearn._solvers.l1_logistic import fit_l1_logistic, kkt_violation
from crowdlearn.exceptions import ConvergenceWarning, NotFittedError
from crowdlearn.simulate.sparse import (IZBICKI_STERN, simulate_izbicki_stern,
                                        simulate_sparse_experts)
from crowdlearn.features.sparse_experts import (MajorityVoteLogistic, SparseExpertsEM,
                                       SparseExpertsParams, sparse_experts_lambda_max,
                                       sparse_experts_path)

BETA = np.r_[2.0, -1.5, 1.0, np.zeros(5)]
GAMMA = np.r_[0.0, 0.0, 0.0, 1.0, np.zeros(4)]
ALPHA = np.array([1.5, 1.0, 0.5, 2.0, -0.5])


def sparse_crowd(n=1500, missing=0.0, seed=0):
    """8 features: beta uses 0-2, gamma uses 3; five experts, one adversarial on average."""
    return simulate_sparse_experts(n, BETA, 0.3, ALPHA, GAMMA, missing=missing,
                                   random_state=seed)


def fit_quiet(model, labels, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels, X)


# -- the model written out with loops ------------------------------------------------------------
def brute_joint(X, triples, p):
    """[i][z] = log p(z, labels_i | x_i), straight from the definition."""
    out = []
    for i, x in enumerate(X):
        a = float(np.dot(p.coef, x) + p.intercept)
        row = []
        for z in (0, 1):
            total = -math.log1p(math.exp(-a)) if z == 1 else -math.log1p(math.exp(a))
            for (it, k, y) in triples:
                if it == i:
                    # P(wrong) = 1 / (1 + exp(eta)), in log space
                    eta = p.expert_intercept[k] + float(np.dot(p.reliability_coef, x))
                    total += (-math.log1p(math.exp(eta)) if y != z
                              else -math.log1p(math.exp(-eta)))
            row.append(total)
        out.append(row)
    return out


def brute_objective(X, triples, p, lam, lam_rel):
    ll = sum(math.log(math.exp(r[0]) + math.exp(r[1])) for r in brute_joint(X, triples, p))
    return ll - lam * np.abs(p.coef).sum() - lam_rel * np.abs(p.reliability_coef).sum()


def tiny_problem():
    """6 items (item 5 unlabelled), 2 features, 3 experts (expert 2 sparse)."""
    X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8], [0.0, 0.2], [-1.2, -0.4], [2.0, 1.0]])
    triples = [(0, 0, 1), (0, 1, 1), (0, 2, 0), (1, 0, 1), (1, 1, 0), (2, 0, 0), (2, 1, 0),
               (3, 0, 1), (3, 1, 1), (4, 1, 0), (4, 2, 1)]
    item, k, y = (np.array(c) for c in zip(*triples))
    return X, triples, from_triples(item, k, y, n_items=6, n_experts=3, n_classes=2)


# -- the objective never decreases, step by step -------------------------------------------------
@pytest.mark.parametrize("lam", [0.0, 2.0, 20.0])
def test_objective_never_decreases(lam):
    sim = sparse_crowd(600, missing=0.3, seed=1)
    runs = {}
    model = SparseExpertsEM(lam=lam, tol=0, max_iter=25, n_init=3, random_state=0,
                            callback=lambda s: runs.setdefault(s.restart, []).append(
                                s.objective))
    fit_quiet(model, sim.labels, sim.X)
    hist = model.log_likelihood_history_
    assert hist is model.objective_history_ and hist.shape == (model.n_iter_ + 1,)
    assert hist[-1] == model.objective_
    assert (np.diff(hist) >= -1e-10 * np.abs(hist[1:])).all(), np.diff(hist).min()
    assert sorted(runs) == [0, 1, 2]
    for objs in runs.values():
        objs = np.array(objs)
        assert (np.diff(objs) >= -1e-10 * np.abs(objs[1:])).all()
    assert hist[-1] == max(objs[-1] for objs in runs.values())
    np.testing.assert_allclose(model.all_objectives_, [runs[r][-1] for r in range(3)])
    penalty = lam * (np.abs(model.coef_).sum() + np.abs(model.reliability_coef_).sum())
    assert model.log_likelihood_ == pytest.approx(model.objective_ + penalty, rel=1e-12)


def test_objective_posterior_and_m_step_kkt_step_by_step():
    """At every E-step: the recorded objective is the penalised log-likelihood and the
    posterior Bayes' rule (both by loops); every M-step solves its two L1 logistic
    regressions (KKT conditions at the next parameters)."""
    X, triples, crowd = tiny_problem()
    lam, lam_rel = 0.3, 0.2
    states = []
    fit_quiet(SparseExpertsEM(lam=lam, lam_reliability=lam_rel, tol=0, max_iter=8,
                              m_step_tol=1e-12, callback=states.append), crowd, X)
    assert len(states) == 9
    for s, nxt in zip(states, states[1:] + [None]):
        p = s.params
        assert s.objective == pytest.approx(brute_objective(X, triples, p, lam, lam_rel),
                                            rel=1e-12)
        joint = np.array(brute_joint(X, triples, p))
        post = np.exp(joint - np.logaddexp(joint[:, :1], joint[:, 1:]))
        np.testing.assert_allclose(s.posterior, post, atol=1e-12)
        # the log-odds identity: logit mu_i = a_i + sum_k (2 y_ik - 1) eta_ik
        eta = p.expert_intercept[crowd.expert] + (X @ p.reliability_coef)[crowd.item]
        expected = X @ p.coef + p.intercept + np.bincount(
            crowd.item, weights=(2 * crowd.label - 1) * eta, minlength=6)
        log_odds = np.log(s.posterior[:, 1]) - np.log(s.posterior[:, 0])
        np.testing.assert_allclose(log_odds, expected, rtol=1e-10, atol=1e-10)
        if nxt is None:
            continue
        q = nxt.params
        mu = s.posterior[:, 1]
        # (a): soft targets mu on [1 | x], beta penalised
        va = kkt_violation(X, mu, lam=lam, coef=q.coef, intercept=q.intercept)
        # (b): target "expert right" on [one-hot expert | x], alpha unpenalised
        c = np.where(crowd.label == 1, mu[crowd.item], 1 - mu[crowd.item])
        vb = kkt_violation(X, c, lam=lam_rel, rows=crowd.item, intercept_groups=crowd.expert,
                           n_intercepts=3, coef=q.reliability_coef,
                           intercept=q.expert_intercept)
        assert va < 1e-9 and vb < 1e-9
    assert np.diff([s.objective for s in states]).min() >= -1e-12


def test_m_step_kkt_by_finite_differences_of_the_brute_force_q():
    """Independently of the solver's gradient code: at the M-step's answer the finite-
    difference derivatives of the expected complete-data log-likelihood Q (by loops)
    satisfy the KKT conditions of Q - lam |beta|_1 - lam_rel |gamma|_1."""
    X, triples, crowd = tiny_problem()
    lam, lam_rel = 0.4, 0.25
    rng = np.random.default_rng(0)
    mu = rng.uniform(0.1, 0.9, 6)
    q = np.column_stack([1 - mu, mu])
    model = SparseExpertsEM(lam=lam, lam_reliability=lam_rel, m_step_tol=1e-13)
    p, fa, fb = model.m_step(crowd, X, q)

    def Q(v):
        par = SparseExpertsParams(v[:2], v[2], v[3:6], v[6:8])
        joint = brute_joint(X, triples, par)
        return sum(q[i, z] * joint[i][z] for i in range(6) for z in (0, 1))

    v = np.r_[p.coef, p.intercept, p.expert_intercept, p.reliability_coef]
    h = 1e-6
    grad = np.array([(Q(v + h * e) - Q(v - h * e)) / (2 * h) for e in np.eye(8)])
    lams = np.r_[lam, lam, 0, 0, 0, 0, lam_rel, lam_rel]
    for j in range(8):
        if lams[j] == 0:
            assert abs(grad[j]) < 1e-6                      # beta_0 and alpha: stationary
        elif v[j] == 0:
            assert abs(grad[j]) <= lams[j] + 1e-6           # zero: inside the subgradient
        else:
            assert grad[j] == pytest.approx(lams[j] * np.sign(v[j]), abs=1e-6)
    assert (v[[0, 1, 6, 7]] == 0).any() and (v[[0, 1, 6, 7]] != 0).any()


def test_m_step_kkt_inside_em_on_simulated_data():
    sim = sparse_crowd(800, missing=0.2, seed=3)
    states = []
    model = fit_quiet(SparseExpertsEM(lam=15.0, max_iter=15, tol=0, callback=states.append),
                      sim.labels, sim.X)
    n_labels = sim.labels.n_labels
    for s, nxt in zip(states[:-1], states[1:]):
        mu = s.posterior[:, 1]
        params, fa, fb = model.m_step(sim.labels, sim.X, s.posterior, start=s.params)
        np.testing.assert_allclose(params.coef, nxt.params.coef, atol=1e-12)
        assert fa.kkt <= 1e-8 * 800 and fb.kkt <= 1e-8 * n_labels
        assert kkt_violation(sim.X, mu, lam=15.0, coef=nxt.params.coef,
                             intercept=nxt.params.intercept) <= 1e-8 * 800


# -- recovery ------------------------------------------------------------------------------------
def test_recovers_sparse_parameters_on_large_data():
    sim = sparse_crowd(4000, seed=5)
    model = SparseExpertsEM(lam=80.0).fit(sim.labels, sim.X)
    assert model.converged_
    # zeros exactly where the truth is zero, signs right elsewhere
    np.testing.assert_array_equal(model.coef_ != 0, BETA != 0)
    np.testing.assert_array_equal(np.sign(model.coef_), np.sign(BETA))
    np.testing.assert_array_equal(model.reliability_coef_ != 0, GAMMA != 0)
    assert model.reliability_coef_[3] > 0
    # shrunk towards zero, in the right order; alpha (unpenalised) and gamma close
    assert np.all(np.abs(model.coef_[:3]) < np.abs(BETA[:3]))
    assert np.abs(model.coef_[0]) > np.abs(model.coef_[1]) > np.abs(model.coef_[2]) > 0.3
    np.testing.assert_allclose(model.expert_intercept_, ALPHA, atol=0.2)
    np.testing.assert_allclose(model.reliability_coef_[3], 1.0, atol=0.1)
    assert np.mean(model.predict() == sim.truth) > 0.9
    # unpenalised EM finds (small) non-zero noise coefficients
    em = SparseExpertsEM(lam=0.0).fit(sim.labels, sim.X)
    assert np.all(em.coef_ != 0)
    np.testing.assert_allclose(em.coef_, BETA, atol=0.25)


def test_beats_majority_when_experts_vary():
    sim = sparse_crowd(1500, seed=6)
    test = sparse_crowd(4000, seed=7)
    em = SparseExpertsEM(lam=10.0).fit(sim.labels, sim.X)
    mv = MajorityVoteLogistic(lam=10.0, random_state=0).fit(sim.labels, sim.X)
    assert np.mean(em.predict(X=test.X) == test.truth) > np.mean(mv.predict(test.X) == test.truth)


# -- sign flip -----------------------------------------------------------------------------------
def test_flip_leaves_the_objective_unchanged_and_mirror_start_is_flipped_back():
    sim = sparse_crowd(1000, seed=8)
    model = SparseExpertsEM(lam=5.0).fit(sim.labels, sim.X)
    p = model.params_
    mirror = SparseExpertsEM(lam=5.0, init=p.flipped(), max_iter=0)
    fit_quiet(mirror, sim.labels, sim.X)
    assert mirror.flipped_                      # EM "converged" at -theta ...
    np.testing.assert_allclose(mirror.coef_, p.coef)   # ... and was flipped back
    assert mirror.objective(sim.labels, sim.X) == pytest.approx(
        model.objective(sim.labels, sim.X), rel=1e-12)
    # an EM run started at the mirror image of the truth stays there and is flipped back
    truth_mirror = SparseExpertsParams(-BETA, -0.3, -ALPHA, -GAMMA)
    m2 = SparseExpertsEM(lam=5.0, init=truth_mirror).fit(sim.labels, sim.X)
    assert m2.flipped_ and np.all(np.sign(m2.coef_[:3]) == np.sign(BETA[:3]))
    assert np.mean(m2.predict() == sim.truth) > 0.9
    np.testing.assert_allclose(m2.posterior_.sum(axis=1), 1.0)


# -- missing labels --------------------------------------------------------------------------------
def test_missing_labels_and_unlabelled_items():
    sim = sparse_crowd(1500, missing=0.5, seed=9)
    per_item = sim.labels.labels_per_item()
    assert (per_item == 0).any()
    model = SparseExpertsEM(lam=10.0).fit(sim.labels, sim.X)
    hist = model.log_likelihood_history_
    assert (np.diff(hist) >= -1e-10 * np.abs(hist[1:])).all()
    empty = per_item == 0
    # an unlabelled item's posterior is the classifier's prior
    np.testing.assert_allclose(model.posterior_[empty], model.predict_proba(X=sim.X[empty]),
                               atol=1e-12)
    assert np.mean(model.predict() == sim.truth) > 0.85
    # the dense matrix with -1 and the triples give the same fit: the same EM steps (a
    # fixed number, so no stopping test at rounding level decides it for one of them)
    dense = sim.labels.to_dense()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m1 = SparseExpertsEM(lam=10.0, tol=0.0, max_iter=10).fit(sim.labels, sim.X)
        m2 = SparseExpertsEM(lam=10.0, tol=0.0, max_iter=10).fit(dense, sim.X)
    assert m1.n_iter_ == m2.n_iter_ == 10
    np.testing.assert_allclose(m2.coef_, m1.coef_, atol=1e-9)


def test_expert_without_labels_keeps_its_start():
    X, triples, crowd = tiny_problem()
    item, k, y = crowd.item, crowd.expert, crowd.label
    crowd4 = from_triples(item, k, y, n_items=6, n_experts=4, n_classes=2)
    model = fit_quiet(SparseExpertsEM(lam=0.5, max_iter=20), crowd4, X)
    assert model.expert_intercept_.shape == (4,)
    assert model.expert_intercept_[3] == 0.0


# -- lambda_max and the path ----------------------------------------------------------------------
def test_lambda_max_and_path():
    sim = sparse_crowd(600, seed=10)
    lmax = sparse_experts_lambda_max(sim.labels, sim.X)
    path = sparse_experts_path(sim.labels, sim.X, n_lambdas=6, lambda_min_ratio=0.05)
    assert path.lambdas[0] == pytest.approx(lmax)
    assert np.all(np.diff(path.lambdas) < 0)
    L, d = 6, sim.X.shape[1]
    assert path.coef.shape == (L, d) and path.reliability_coef.shape == (L, d)
    assert path.expert_intercept.shape == (L, 5) and path.objective.shape == (L,)
    assert len(path.models) == L and path.seconds > 0
    # at lambda_max everything is zero (lambda_max is the boundary: a coefficient may be off
    # zero by rounding); further down the path the true features enter first
    assert np.abs(path.coef[0]).max() < 1e-10 and np.abs(path.reliability_coef[0]).max() < 1e-10
    assert np.count_nonzero(path.coef[-1]) > np.count_nonzero(path.coef[1])
    first = [np.flatnonzero(c) for c in path.coef if np.count_nonzero(c)][0]
    assert set(first) <= {0, 1, 2}
    # each model is a proper fit at its lambda
    for lam, m in zip(path.lambdas, path.models):
        assert m.lam == lam
        assert m.objective_ == pytest.approx(m.objective(sim.labels, sim.X), rel=1e-10)
    # the method gives the same path; given lambdas are sorted into decreasing order
    given = path.lambdas[::-1][:3]
    p2 = SparseExpertsEM().path(sim.labels, sim.X, given)
    np.testing.assert_allclose(p2.lambdas, np.sort(given)[::-1])


def test_progress_bar_off_by_default_and_text_when_asked(capsys):
    sim = sparse_crowd(200, seed=11)
    sparse_experts_path(sim.labels, sim.X, [5.0, 1.0])
    assert capsys.readouterr().err == ""
    pytest.importorskip("tqdm")   # the bar is tqdm's (optional; without it nothing is shown)
    sparse_experts_path(sim.labels, sim.X, [5.0, 1.0], progress=True)
    err = capsys.readouterr().err
    assert "lambda path" in err and "2/2" in err and err.endswith("\n")
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        sparse_experts_path(sim.labels, sim.X, [5.0], progress="yes")


# -- probabilities, reproducibility ---------------------------------------------------------------
def test_probabilities_and_reproducibility():
    sim = sparse_crowd(500, missing=0.3, seed=12)
    a = fit_quiet(SparseExpertsEM(lam=3.0, n_init=3, max_iter=40, random_state=1),
                  sim.labels, sim.X)
    b = fit_quiet(SparseExpertsEM(lam=3.0, n_init=3, max_iter=40, random_state=1),
                  sim.labels, sim.X)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.posterior_, b.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.posterior_.sum(axis=1), 1.0)
    P = a.predict_proba(X=sim.X[:7])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P[:, 1], expit(sim.X[:7] @ a.coef_ + a.intercept_))
    # with labels: the posterior of new items equals the training posterior on the same items
    np.testing.assert_allclose(a.predict_proba(sim.labels, X=sim.X), a.posterior_, atol=1e-12)
    R = a.reliability(sim.X[:4])
    assert R.shape == (4, 5) and np.all((R > 0) & (R < 1))
    np.testing.assert_array_equal(a.fit_predict(sim.labels, sim.X), a.predict())


def test_majority_vote_logistic_is_l1_logistic_on_the_vote():
    dense = np.array([[1, 1, 0], [0, 0, -1], [1, -1, -1], [0, 1, 0], [-1, -1, -1], [1, 1, 1]])
    X = np.array([[1.0, 0.2], [-1.0, 0.1], [0.5, -0.3], [-0.2, 0.4], [0.0, 0.0], [2.0, 1.0]])
    m = MajorityVoteLogistic(lam=0.5).fit(dense, X)
    vote = np.array([1, 0, 1, 0, 1], dtype=float)
    keep = [0, 1, 2, 3, 5]
    ref = fit_l1_logistic(X[keep], vote, lam=0.5, tol=1e-12)
    np.testing.assert_allclose(m.coef_, ref.coef, atol=1e-7)
    assert np.isnan(m.vote_[4])
    np.testing.assert_array_equal(m.predict(X), (X @ m.coef_ + m.intercept_ >= 0).astype(int))


# -- the simulators --------------------------------------------------------------------------------
def test_izbicki_stern_design_as_stated():
    sim = simulate_izbicki_stern(20000, "i", random_state=0)
    assert sim.X.shape == (20000, 55) and sim.labels.n_experts == 3
    assert sim.labels.n_labels == 60000
    np.testing.assert_allclose(sim.X[:, :5].mean(axis=0), [1, 2, 3, 4, 5], atol=0.03)
    np.testing.assert_allclose(np.cov(sim.X[:, :5].T), IZBICKI_STERN["cov"], atol=0.03)
    np.testing.assert_allclose(sim.X[:, 5:].std(axis=0), 1.0, atol=0.03)
    np.testing.assert_allclose(sim.coef, np.r_[1, 0.25, 0.24, -0.3, -0.2, np.zeros(50)])
    assert sim.intercept == -0.1
    wrong = sim.labels.label != sim.truth[sim.labels.item]
    rates = np.bincount(sim.labels.expert, weights=wrong) / 20000
    np.testing.assert_allclose(rates, [0.5, 0.15, 0.47], atol=0.01)
    np.testing.assert_allclose(expit(sim.expert_intercept), [0.5, 0.85, 0.53])
    # (ii): three experts (three alphas), errors from the model of section 3
    s2 = simulate_izbicki_stern(20000, "ii", random_state=1)
    eta = s2.expert_intercept + (s2.X @ s2.reliability_coef)[:, None]
    np.testing.assert_allclose(s2.error_prob, 1 / (1 + np.exp(eta)))
    np.testing.assert_allclose(s2.error_prob.mean(axis=0), [0.49, 0.31, 0.52], atol=0.01)
    # (iii) as stated: the squares of raw covariates make every expert worse than a coin
    s3 = simulate_izbicki_stern(20000, "iii", random_state=2)
    assert np.all(s3.error_prob.mean(axis=0) > 0.8)
    s3c = simulate_izbicki_stern(20000, "iii", squares="centered", random_state=2)
    np.testing.assert_allclose(s3c.error_prob.mean(axis=0), [0.52, 0.36, 0.55], atol=0.015)
    # seeded
    again = simulate_izbicki_stern(20000, "i", random_state=0)
    np.testing.assert_array_equal(again.labels.label, sim.labels.label)


def test_simulator_bad_inputs():
    with pytest.raises(ValueError, match="scenario must be"):
        simulate_izbicki_stern(10, "iv")
    with pytest.raises(ValueError, match="squares must be"):
        simulate_izbicki_stern(10, "iii", squares="yes")
    with pytest.raises(ValueError, match="n must be >= 1"):
        simulate_izbicki_stern(0)
    with pytest.raises(ValueError, match=r"reliability_coef must have shape \(2,\)"):
        simulate_sparse_experts(10, [1.0, 0.0], 0.0, [1.0], [1.0])
    with pytest.raises(ValueError, match="expert_intercept is empty"):
        simulate_sparse_experts(10, [1.0], 0.0, [], [1.0])


# -- bad input ------------------------------------------------------------------------------------
def test_bad_inputs():
    X, triples, crowd = tiny_problem()
    with pytest.raises(ValueError, match="X has 5 rows but the labels describe 6 items"):
        SparseExpertsEM().fit(crowd, X[:5])
    Xn = X.copy()
    Xn[1, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        SparseExpertsEM().fit(crowd, Xn)
    with pytest.raises(ValueError, match="labels must be binary"):
        SparseExpertsEM().fit([[0, 2], [1, 1]], X[:2])
    with pytest.raises(ValueError, match="labels contains NaN"):
        SparseExpertsEM().fit(np.array([[0, np.nan], [1, 1]]), X[:2])
    with pytest.raises(ValueError, match="no label at all"):
        SparseExpertsEM().fit([[-1, -1], [-1, -1]], X[:2])
    with pytest.raises(ValueError, match="is empty"):
        SparseExpertsEM().fit(np.zeros((0, 3)), X[:0])
    with pytest.raises(ValueError, match="lam must be >= 0"):
        SparseExpertsEM(lam=-1).fit(crowd, X)
    with pytest.raises(ValueError, match="n_init must be >= 1"):
        SparseExpertsEM(n_init=0).fit(crowd, X)
    with pytest.raises(ValueError, match="init must be 'vote'"):
        SparseExpertsEM(init="random").fit(crowd, X)
    with pytest.raises(ValueError, match=r"init.coef must have shape \(2,\)"):
        SparseExpertsEM(init=SparseExpertsParams(np.zeros(3), 0.0, np.zeros(3),
                                                 np.zeros(2))).fit(crowd, X)
    with pytest.raises(NotFittedError):
        SparseExpertsEM().predict_proba(X=X)
    model = fit_quiet(SparseExpertsEM(max_iter=5), crowd, X)
    with pytest.raises(ValueError, match="unknown expert 3"):
        model.predict_proba(([0], [3], [1]), X=X[:1])
    with pytest.raises(ValueError, match="has 3 features but the model was fitted with 2"):
        model.predict_proba(X=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="lambdas must be finite and non-negative"):
        sparse_experts_path(crowd, X, [1.0, -1.0])
    with pytest.raises(ValueError, match="lam is set by the path"):
        sparse_experts_path(crowd, X, [1.0], model_params={"lam": 1.0})


def test_m_step_problems_are_prepared_once_per_fit_and_solve_the_same_m_step():
    """The M-step's two problems are checked and centred at the first M-step of a fit and
    kept for the others; the point EM uses is the one the public m_step reports."""
    from crowdlearn.features import sparse_experts as module
    sim = sparse_crowd(n=400)
    prepared = []
    original = module._m_step_problems

    def spy(data, prior):
        problems = original(data, prior)
        prepared.append(problems)
        return problems

    module._m_step_problems = spy
    try:
        model = fit_quiet(SparseExpertsEM(lam=5.0, expert_prior=1.0, max_iter=6,
                                          m_step_max_iter=1), sim.labels, sim.X)
    finally:
        module._m_step_problems = original
    assert len(prepared) == model.n_iter_ + 1  # every M-step, the vote start's included
    assert all(p is prepared[0] for p in prepared)
    q = model.posterior_
    params, fit_a, fit_b = model.m_step(sim.labels, sim.X, q, start=model.params_)
    data = module._new_data(*module._read_input(sim.labels, sim.X))
    point = model._m_step(data, q, model.params_)
    for got, want in zip(point, params):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert np.isfinite(fit_a.kkt) and np.isfinite(fit_b.objective)
