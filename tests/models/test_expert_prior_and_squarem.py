"""The collapse of L1 MAP-EM onto one expert, its remedy (``expert_prior``), its diagnosis
(``diverging_experts_``, ``limit_objective``) and SQUAREM acceleration (``accelerate``)."""

import math
import warnings

import numpy as np
import pytest
from scipy.special import log_expit

from crowdlearn import ConvergenceWarning, run_em
from crowdlearn.simulate.sparse import simulate_izbicki_stern, simulate_sparse_experts
from crowdlearn.features.sparse_experts import SparseExpertsEM, SparseExpertsParams

from test_em import BernoulliMixture, assert_non_decreasing, mixture_data  # noqa: F401
from test_sparse_experts import brute_objective, sparse_crowd, tiny_problem


@pytest.fixture(scope="module")
def scenario_one():
    """Scenario (i) of Izbicki and Stern: experts wrong 50%, 15% and 47% of the time."""
    return simulate_izbicki_stern(1500, "i", random_state=0)


def fit(labels, X, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SparseExpertsEM(**kw).fit(labels, X)
    return model, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


# -- the prior is part of the objective ---------------------------------------------------------
@pytest.mark.parametrize("c", [0.5, 3.0])
def test_objective_includes_the_beta_prior_and_never_decreases(c):
    X, triples, crowd = tiny_problem()
    model, _ = fit(crowd, X, lam=0.5, expert_prior=c, tol=0.0, max_iter=40)
    p = model.params_
    prior = c * float((log_expit(p.expert_intercept) + log_expit(-p.expert_intercept)).sum())
    expected = brute_objective(X, triples, p, 0.5, 0.5) + prior
    assert math.isclose(model.objective_, expected, rel_tol=1e-10)
    assert math.isclose(model.objective(crowd, X), expected, rel_tol=1e-10)
    assert math.isclose(model.log_likelihood_, expected - prior + 0.5 * (
        np.abs(p.coef).sum() + np.abs(p.reliability_coef).sum()), rel_tol=1e-10)
    assert_non_decreasing(model.objective_history_)


def test_m_step_with_prior_satisfies_its_stationarity_conditions():
    """At the M-step's alpha, d/d alpha_k of Q_b + c[log s(a) + log s(-a)] vanishes:
    sum_i (c_ik - s(eta_ik)) + c (1 - 2 s(alpha_k)) = 0."""
    sim = sparse_crowd(n=400)
    c = 2.0
    model = SparseExpertsEM(lam=3.0, expert_prior=c)
    rng = np.random.default_rng(0)
    mu = rng.uniform(size=sim.X.shape[0])
    q = np.column_stack([1 - mu, mu])
    params, _, _ = model.m_step(sim.labels, sim.X, q)
    crowd = sim.labels
    eta = params.expert_intercept[crowd.expert] + (sim.X @ params.reliability_coef)[crowd.item]
    right = np.where(crowd.label == 1, mu[crowd.item], 1 - mu[crowd.item])
    resid = np.bincount(crowd.expert, weights=right - 1 / (1 + np.exp(-eta)),
                        minlength=crowd.n_experts)
    sig = 1 / (1 + np.exp(-params.expert_intercept))
    grad = resid + c * (1 - 2 * sig)
    assert np.abs(grad).max() < 1e-5 * crowd.n_labels
    # and without the prior the same condition is violated at that point
    assert np.abs(resid).max() > 1e-3


# -- the collapse and its diagnosis ---------------------------------------------------------------
def test_strong_penalty_without_prior_runs_an_expert_off_to_infinity(scenario_one):
    sim = scenario_one
    model, caught = fit(sim.labels, sim.X, lam=12.0, max_iter=400, tol=1e-9,
                        accelerate=True)
    assert model.diverging_experts_.tolist() == [1]
    assert model.expert_intercept_[1] > 10
    assert any("expert 1" in str(w.message) and "expert_prior" in str(w.message)
               for w in caught)
    # F at the fit is no better than its (finite) limit as alpha_1 -> infinity
    limit = model.limit_objective(sim.labels, sim.X, 1)
    assert np.isfinite(limit) and limit >= model.objective_ - 1e-6 * abs(model.objective_)
    # ... and the posterior copies expert 1's labels on every item it labelled
    crowd = sim.labels
    mine = crowd.expert == 1
    assert (model.predict()[crowd.item[mine]] == crowd.label[mine]).all()
    # the other experts are not at their limits: F falls a lot there
    for k in (0, 2):
        assert model.limit_objective(sim.labels, sim.X, k) < model.objective_ - 100


def test_expert_prior_keeps_every_intercept_finite_and_converges(scenario_one):
    sim = scenario_one
    model, caught = fit(sim.labels, sim.X, lam=12.0, expert_prior=1.0, max_iter=3000,
                        accelerate=True)
    assert model.converged_ and not caught
    assert model.diverging_experts_.size == 0
    assert np.abs(model.expert_intercept_).max() < 6
    assert model.limit_objective(sim.labels, sim.X, 1) == -np.inf
    assert_non_decreasing(model.objective_history_)


def test_moderate_fits_are_not_flagged():
    sim = sparse_crowd(n=800)
    model, caught = fit(sim.labels, sim.X, lam=5.0, max_iter=500)
    assert model.diverging_experts_.size == 0 and not caught
    for k in range(model.n_experts_):
        assert model.limit_objective(sim.labels, sim.X, k) < model.objective_


def test_limit_objective_bad_expert():
    sim = sparse_crowd(n=200)
    model, _ = fit(sim.labels, sim.X, lam=5.0)
    for bad in (-1, 5, 99):
        with pytest.raises(ValueError, match="expert must be in"):
            model.limit_objective(sim.labels, sim.X, bad)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "1", None, [1.0]])
def test_bad_expert_prior(bad):
    sim = sparse_crowd(n=100)
    with pytest.raises(ValueError, match="expert_prior"):
        SparseExpertsEM(expert_prior=bad).fit(sim.labels, sim.X)


@pytest.mark.parametrize("bad", [1, "yes", None, 0.5])
def test_bad_accelerate(bad):
    sim = sparse_crowd(n=100)
    with pytest.raises(ValueError, match="accelerate"):
        SparseExpertsEM(accelerate=bad).fit(sim.labels, sim.X)


# -- SQUAREM ---------------------------------------------------------------------------------------
def test_squarem_on_a_mixture_is_monotone_and_reaches_plain_em_s_objective(mixture_data):
    model = BernoulliMixture(mixture_data, 2)
    start = model.init(0)

    def flatten(nb):
        return np.concatenate([nb.class_prior_, nb.feature_prob_.ravel()])

    def unflatten(v):
        from crowdlearn import BernoulliNaiveBayes

        nb = BernoulliNaiveBayes(alpha=model.alpha)
        K, d = start.feature_prob_.shape
        prior = np.clip(v[:K], 1e-12, None)
        nb.class_prior_ = prior / prior.sum()
        nb.class_log_prior_ = np.log(nb.class_prior_)
        nb.feature_prob_ = np.clip(v[K:].reshape(K, d), 1e-12, 1 - 1e-12)
        for name in ("feature_log_prob_", "feature_log_prob_neg_"):
            if hasattr(start, name):
                setattr(nb, name, np.log(nb.feature_prob_) if name == "feature_log_prob_"
                        else np.log1p(-nb.feature_prob_))
        for name, value in vars(start).items():
            if not hasattr(nb, name):
                setattr(nb, name, value)
        return nb

    plain = run_em(start, model.e_step, model.m_step, tol=1e-12, max_iter=5000)
    fast = run_em(start, model.e_step, model.m_step, tol=1e-12, max_iter=5000,
                  accelerate=(flatten, unflatten))
    assert plain.converged and fast.converged
    assert_non_decreasing(fast.history)
    assert fast.objective >= plain.objective - 1e-6 * abs(plain.objective)


def test_squarem_sparse_experts_monotone_same_optimum_fewer_m_steps():
    # weak experts (scenario (ii) of Izbicki and Stern): plain EM needs hundreds of steps
    sim = simulate_izbicki_stern(1000, "ii", random_state=3)
    plain, _ = fit(sim.labels, sim.X, lam=5.0, expert_prior=1.0, max_iter=5000, tol=1e-10)
    fast, _ = fit(sim.labels, sim.X, lam=5.0, expert_prior=1.0, max_iter=5000, tol=1e-10,
                  accelerate=True)
    assert plain.converged_ and fast.converged_
    assert_non_decreasing(fast.objective_history_)
    assert abs(fast.objective_ - plain.objective_) < 1e-5 * abs(plain.objective_)
    assert np.abs(fast.expert_intercept_ - plain.expert_intercept_).max() < 1e-2
    assert (np.flatnonzero(fast.coef_) == np.flatnonzero(plain.coef_)).all()
    assert plain.n_iter_ > 100
    assert fast.n_iter_ < plain.n_iter_ / 2


def test_squarem_respects_max_iter_and_seed_reproducibility():
    sim = sparse_crowd(n=600)
    a, caught = fit(sim.labels, sim.X, lam=5.0, max_iter=7, tol=0.0, accelerate=True)
    assert a.n_iter_ <= 7 and not a.converged_ and caught
    b, _ = fit(sim.labels, sim.X, lam=5.0, max_iter=7, tol=0.0, accelerate=True)
    assert np.array_equal(a.posterior_, b.posterior_)
    assert np.isfinite(a.posterior_).all()
    assert np.allclose(a.posterior_.sum(axis=1), 1.0)


def test_squarem_warm_start_from_params():
    sim = sparse_crowd(n=600)
    first, _ = fit(sim.labels, sim.X, lam=8.0, accelerate=True, max_iter=3000)
    again, _ = fit(sim.labels, sim.X, lam=8.0, accelerate=True, max_iter=3000,
                   init=first.params_)
    assert again.objective_ >= first.objective_ - 1e-7 * abs(first.objective_)
    assert isinstance(again.params_, SparseExpertsParams)
