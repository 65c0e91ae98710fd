"""Tests for the EM engine crowdlearn.em (run_em / fit_em)."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from crowdlearn import (BernoulliNaiveBayes, ConvergenceWarning, EMResult, EMState,
                        LatentClassModel, fit_em, run_em)
from crowdlearn._base import warn_if_not_converged
from crowdlearn.em import FLAT_MOVE
from crowdlearn.simulate import simulate_latent_class, simulate_naive_bayes


# -- a real model: a Bernoulli mixture whose M-step is BernoulliNaiveBayes on soft targets --
class BernoulliMixture:
    """EM pieces for a mixture of product-Bernoulli distributions (MAP with pseudo-count a)."""

    def __init__(self, X, n_classes, alpha=1.0, seed=0):
        self.X, self.K, self.alpha = X, n_classes, alpha
        self.rng = np.random.default_rng(seed)

    def init(self, restart):
        q = self.rng.dirichlet(np.ones(self.K), size=self.X.shape[0])
        return self.m_step(q)

    def m_step(self, q):
        return BernoulliNaiveBayes(alpha=self.alpha).fit(self.X, q)

    def e_step(self, nb):
        jll = nb.joint_log_likelihood(self.X)
        log_ev = logsumexp(jll, axis=1)
        q = np.exp(jll - log_ev[:, None])
        a = self.alpha
        # log Dirichlet(a + 1) / Beta(a + 1, a + 1) prior density, up to a constant
        log_prior = a * (np.log(nb.class_prior_).sum() + np.log(nb.feature_prob_).sum()
                         + np.log1p(-nb.feature_prob_).sum())
        return q, log_ev.sum() + log_prior


@pytest.fixture(scope="module")
def mixture_data():
    phi = np.array([[0.9, 0.8, 0.2, 0.1, 0.7], [0.2, 0.3, 0.8, 0.9, 0.4]])
    X, _ = simulate_naive_bayes(400, [0.4, 0.6], phi, random_state=1)
    return X


def assert_non_decreasing(history, rtol=1e-10):
    history = np.asarray(history)
    slack = rtol * np.maximum(1.0, np.abs(history[1:]))
    assert np.all(np.diff(history) >= -slack), np.diff(history).min()


# -- monotone objective on real models -----------------------------------------------------
def test_history_never_decreases_on_bernoulli_mixture(mixture_data):
    model = BernoulliMixture(mixture_data, 2)
    res = run_em(model.init(0), model.e_step, model.m_step, tol=1e-10, max_iter=300)
    assert res.history.size > 5  # EM really moved
    assert res.history[-1] > res.history[0]
    assert_non_decreasing(res.history)
    assert res.converged


def test_history_never_decreases_on_latent_class_model():
    tables = [np.array([[0.8, 0.1, 0.1], [0.2, 0.3, 0.5]])] * 4
    X, _ = simulate_latent_class(500, [0.5, 0.5], tables, random_state=3)
    lcm = LatentClassModel(n_classes=2, tol=1e-10, max_iter=500, random_state=0).fit(X)
    assert lcm.log_likelihood_history_.size > 5
    assert_non_decreasing(lcm.log_likelihood_history_)


# -- stopping rules ------------------------------------------------------------------------
def test_stops_at_max_iter_with_convergence_warning():
    calls = []

    def e_step(t):
        calls.append(t)
        return np.array([[1.0]]), float(t)

    def m_step(q):
        return calls[-1] + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the engine itself warns of nothing
        res = fit_em(lambda r: 0, e_step, m_step, max_iter=5)
    # the estimators issue the warning from the result (crowdlearn._base.EMFitter)
    with pytest.warns(ConvergenceWarning, match=r"Toy did not converge in max_iter=5"):
        warn_if_not_converged(res, "Toy", 5, 1e-6)
    assert res.n_iter == 5
    assert not res.converged
    assert res.history.tolist() == [0, 1, 2, 3, 4, 5]
    assert res.params == 5


def test_max_iter_zero_is_one_e_step():
    res = run_em(7, lambda t: (np.array([[1.0]]), t), lambda q: pytest.fail("no M-step"),
                 max_iter=0)
    assert res.n_iter == 0 and res.history.tolist() == [7.0] and res.params == 7
    assert not res.converged


def test_converged_flag_and_iteration_count_when_tol_is_reached():
    state = {"t": 0}

    def e_step(t):
        return np.array([[1.0]]), 1.0 - 2.0 ** -t

    def m_step(q):
        state["t"] += 1
        return state["t"]

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = fit_em(lambda r: 0, e_step, m_step, tol=1e-3, max_iter=100)
    assert res.converged
    assert res.n_iter == 10  # 2**-10 < 1e-3 < 2**-9
    assert res.history.size == 11
    assert res.objective == res.history[-1] == 1.0 - 2.0 ** -10


def test_tol_is_relative_to_the_objective_size():
    # objective -1000 * (1 + 2**-t) rises by 1000 * 2**-t at step t
    state = {"t": 0}

    def m_step(q):
        state["t"] += 1
        return state["t"]

    res = run_em(0, lambda t: (np.array([[1.0]]), -1000.0 * (1 + 2.0 ** -t)), m_step,
                 tol=1e-3, max_iter=100)
    # change at step t is 1000 * 2**-t; it must fall below 1e-3 * |f| ~ 1 -> t = 10
    assert res.converged and res.n_iter == 10


# -- restarts ------------------------------------------------------------------------------
def test_restarts_keep_the_best_final_objective():
    starts = {0: 3.0, 1: 7.0, 2: 5.0, 3: 7.0}
    res = fit_em(lambda r: starts[r], lambda p: (np.array([[p]]), p), lambda q: float(q[0, 0]),
                 n_init=4)
    assert res.all_objectives.tolist() == [3.0, 7.0, 5.0, 7.0]
    assert res.objective == res.all_objectives.max() == 7.0
    assert res.restart == 1  # the first of the tied best runs
    assert res.params == 7.0 and res.posterior[0, 0] == 7.0


def test_restarts_on_latent_class_model_keep_the_best(recwarn):
    tables = [np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])] * 3
    X, _ = simulate_latent_class(150, [0.3, 0.3, 0.4], tables, random_state=5)
    finals = {}

    def callback(state):
        finals[state.restart] = state.objective

    lcm = LatentClassModel(n_classes=3, n_init=5, max_iter=1000, random_state=2,
                           callback=callback).fit(X)
    assert sorted(finals) == [0, 1, 2, 3, 4]
    assert lcm.objective_ == max(finals.values())
    assert len(set(np.round(list(finals.values()), 6))) > 1  # the restarts really differ


def test_fit_em_calls_init_once_per_restart():
    seen = []

    def init(r):
        seen.append(r)
        return 0.0

    fit_em(init, lambda p: (np.array([[1.0]]), 0.0), lambda q: 0.0, n_init=3)
    assert seen == [0, 1, 2]


# -- callback ------------------------------------------------------------------------------
def test_callback_is_called_after_every_e_step(mixture_data):
    model = BernoulliMixture(mixture_data, 2)
    states = []
    res = fit_em(model.init, model.e_step, model.m_step, n_init=2, max_iter=300,
                 callback=lambda s: states.append(s))
    for r in (0, 1):
        mine = [s for s in states if s.restart == r]
        assert [s.iteration for s in mine] == list(range(len(mine)))
        assert all(isinstance(s, EMState) for s in mine)
    best = [s for s in states if s.restart == res.restart]
    assert [s.objective for s in best] == res.history.tolist()
    assert best[-1].params is res.params
    assert best[-1].posterior is res.posterior
    assert len(states) == sum(len([s for s in states if s.restart == r]) for r in (0, 1))


def test_callback_returning_true_stops_early_without_warning(mixture_data):
    model = BernoulliMixture(mixture_data, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = fit_em(model.init, model.e_step, model.m_step, max_iter=300, tol=1e-12,
                     callback=lambda s: s.iteration == 2)
    assert res.n_iter == 2
    assert res.history.size == 3
    assert res.stopped and not res.converged


def test_callback_returning_falsy_values_does_not_stop():
    state = {"t": 0}

    def m_step(q):
        state["t"] += 1
        return state["t"]

    res = run_em(0, lambda t: (np.array([[1.0]]), float(t)), m_step, max_iter=4,
                 callback=lambda s: None)
    assert res.n_iter == 4 and not res.stopped


# -- the posterior belongs to the returned parameters ---------------------------------------
@pytest.mark.parametrize("max_iter", [3, 300])
def test_posterior_belongs_to_returned_params(mixture_data, max_iter):
    model = BernoulliMixture(mixture_data, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fit_em(model.init, model.e_step, model.m_step, n_init=2, max_iter=max_iter)
    q, objective = model.e_step(res.params)
    np.testing.assert_allclose(res.posterior, q, rtol=0, atol=1e-12)
    assert objective == pytest.approx(res.history[-1], rel=1e-12)
    assert isinstance(res, EMResult)


def test_latent_class_posterior_belongs_to_returned_params():
    tables = [np.array([[0.9, 0.1], [0.3, 0.7]])] * 3
    X, _ = simulate_latent_class(300, [0.5, 0.5], tables, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lcm = LatentClassModel(max_iter=2, random_state=0).fit(X)
    np.testing.assert_allclose(lcm.predict_proba(X), lcm.posterior_, atol=1e-12)
    assert lcm.log_likelihood(X) == pytest.approx(lcm.log_likelihood_history_[-1], rel=1e-12)


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    (dict(n_init=0), "n_init must be >= 1"),
    (dict(n_init=1.5), "n_init must be an integer"),
    (dict(max_iter=-1), "max_iter must be >= 0"),
    (dict(tol=-1e-3), "tol must be >= 0"),
    (dict(tol=float("nan")), "tol must be finite"),
])
def test_fit_em_bad_hyper_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_em(lambda r: 0.0, lambda p: (np.array([[1.0]]), 0.0), lambda q: 0.0, **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_iter=-1), "max_iter must be >= 0"),
    (dict(max_iter=2.0), "max_iter must be an integer"),
    (dict(tol=-1.0), "tol must be >= 0"),
])
def test_run_em_bad_hyper_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_em(0.0, lambda p: (np.array([[1.0]]), 0.0), lambda q: 0.0, **kwargs)


def test_nan_objective_is_an_error_not_a_silent_result():
    # the caller's own e_step returned it: their ValueError, with the iteration
    with pytest.raises(ValueError, match="objective returned by e_step is NaN at iteration 0"):
        run_em(0.0, lambda p: (np.array([[1.0]]), float("nan")), lambda q: 0.0)
    # inside a crowdlearn model it would be the package's bug
    with pytest.raises(FloatingPointError, match="DawidSkene: .*NaN.*this is a bug"):
        run_em(0.0, lambda p: (np.array([[1.0]]), float("nan")), lambda q: 0.0,
               _model="DawidSkene")


def test_warm_start_passes_the_parameters_the_posterior_came_from():
    """With warm_start=True the M-step sees (posterior, params) from the same E-step."""
    from crowdlearn import run_em

    seen = []

    def e_step(params):
        return np.array([[params]]), -1.0 / (1.0 + params)   # objective rises with params

    def m_step(posterior, params):
        seen.append((float(posterior[0, 0]), params))
        return params + 1.0

    result = run_em(0.0, e_step, m_step, tol=0.0, max_iter=4, warm_start=True)
    assert seen == [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]
    assert result.params == 4.0 and result.n_iter == 4
    assert np.all(np.diff(result.history) > 0)


def test_one_blas_thread_keeps_its_controller_until_a_module_is_imported(monkeypatch):
    """Finding the thread pools walks every loaded library (milliseconds, more than a small
    fit): the controller is kept, and built again once a module has been imported."""
    pytest.importorskip("threadpoolctl")
    import sys
    import types

    from crowdlearn import _blas

    first = _blas._blas_controller()
    assert _blas._blas_controller() is first
    monkeypatch.setitem(sys.modules, "_crowdlearn_test_new_module", types.ModuleType("x"))
    second = _blas._blas_controller()
    assert second is not first and _blas._blas_controller() is second


def test_em_runs_on_one_blas_thread_and_lifts_the_limit_after():
    """fit_em limits BLAS to one thread while it runs (crowdlearn._blas: these products are
    small; on a busy two-core machine threads cost ten times the time), then restores it."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info()
                if p["user_api"] == "blas"]

    before = blas_threads()
    if not before:
        pytest.skip("numpy reports no BLAS library")
    seen = []

    def e_step(t):
        seen.append(blas_threads())
        return np.array([[1.0]]), float(min(t, 3))

    fit_em(lambda r: 0, e_step, lambda q: len(seen), max_iter=5)
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before


# -- SQUAREM on a flat optimum: flagged -----------------------------------------------------
def test_engine_flags_a_squarem_run_that_ends_on_a_flat_objective():
    # the objective is flat in x; each EM step moves x (and the posterior) anyway
    def e_step(x):
        return np.array([1.0 / (1.0 + np.exp(-x[0])), 0.0]), 0.0

    result = run_em(np.array([-3.0]), e_step, lambda q, x: x + 1.0, tol=1e-8, max_iter=50,
                    warm_start=True, accelerate=(lambda x: x, lambda v: v))
    assert result.converged and result.flat and result.last_move > FLAT_MOVE


def test_engine_does_not_flag_a_curved_optimum():
    def e_step(x):
        return np.array([1.0 / (1.0 + np.exp(-x[0]))]), -float((x[0] - 3.0) ** 2)

    result = run_em(np.array([-3.0]), e_step, lambda q, x: (x + 3.0) / 2.0, tol=1e-10,
                    max_iter=200, warm_start=True, accelerate=(lambda x: x, lambda v: v))
    assert result.converged and not result.flat
    assert result.last_move < 1e-3
    plain = run_em(np.array([-3.0]), e_step, lambda q, x: (x + 3.0) / 2.0, tol=1e-10,
                   max_iter=200, warm_start=True)
    assert plain.last_move == 0.0 and not plain.flat
