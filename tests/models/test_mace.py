"""Tests of MACE (crowdlearn.aggregation.mace): brute force, the M-step, EM's monotonicity, recovery."""

import math
import warnings

import numpy as np
import pytest

from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning, NotFittedError
from crowdlearn.labels import from_triples
from crowdlearn.aggregation.mace import MACE, MACEParams, mace_confusion
from crowdlearn.aggregation.majority_vote import MajorityVote


# -- the model written out with loops, straight from its definition ---------------------------
def p_label(theta, xi, l, k):
    """P(annotator says l | true class k) = theta 1{l = k} + (1 - theta) xi_l."""
    return theta * (1.0 if l == k else 0.0) + (1.0 - theta) * xi[l]


def brute_log_joint(triples, n_items, prior, trust, strategy):
    K = len(prior)
    out = np.zeros((n_items, K))
    for i in range(n_items):
        for k in range(K):
            prob = prior[k]
            for (it, j, l) in triples:
                if it == i:
                    prob *= p_label(trust[j], strategy[j], l, k)
            out[i, k] = math.log(prob) if prob > 0 else -math.inf
    return out


def brute_posterior(triples, n_items, prior, trust, strategy):
    lj = brute_log_joint(triples, n_items, prior, trust, strategy)
    post = np.zeros_like(lj)
    for i in range(n_items):
        joint = [math.exp(v) for v in lj[i]]
        post[i] = [v / sum(joint) for v in joint]
    return post


def brute_log_likelihood(triples, n_items, prior, trust, strategy):
    lj = brute_log_joint(triples, n_items, prior, trust, strategy)
    return sum(math.log(sum(math.exp(v) for v in row)) for row in lj)


def brute_log_prior(a, b, c, trust, strategy):
    total = 0.0
    for j in range(len(trust)):
        total += (a - 1) * math.log(trust[j]) if a > 1 else 0.0
        total += (b - 1) * math.log(1 - trust[j]) if b > 1 else 0.0
        total += sum((c - 1) * math.log(x) for x in strategy[j]) if c > 1 else 0.0
    return total


def brute_expected_counts(triples, q, trust, strategy):
    """Expected known and spammed labels per (annotator, label), by enumerating T and S."""
    J, K = strategy.shape
    known, spam = np.zeros((J, K)), np.zeros((J, K))
    for (i, j, l) in triples:
        for k in range(K):
            p_know = trust[j] * (1.0 if l == k else 0.0)
            p_spam = (1 - trust[j]) * strategy[j][l]
            total = p_know + p_spam
            if total == 0:
                continue
            known[j, l] += q[i, k] * p_know / total
            spam[j, l] += q[i, k] * p_spam / total
    return known, spam


def brute_q_function(triples, q, old, new, a, b, c, fit_prior):
    """Expected complete-data log-posterior at ``new``, the expectation taken under ``old``."""
    prior, trust, strategy = new
    known, spam = brute_expected_counts(triples, q, old[1], old[2])
    total = 0.0
    J, K = strategy.shape
    for j in range(J):
        for l in range(K):
            if known[j, l] > 0:
                total += known[j, l] * math.log(trust[j])
            if spam[j, l] > 0:
                total += spam[j, l] * (math.log(1 - trust[j]) + math.log(strategy[j][l]))
    if fit_prior:
        total += sum(q[i, k] * math.log(prior[k]) for i in range(q.shape[0]) for k in range(K))
    return total + brute_log_prior(a, b, c, trust, strategy)


def brute_class_q(triples, q, trust, strategy, a, b, c):
    """Per annotator, the expected complete-data log-posterior over the class alone:
    ``sum over labels and classes of Q_i(k) log P(label | k)`` plus the log prior."""
    J = len(trust)
    out = np.zeros(J)
    for (i, j, l) in triples:
        for k in range(q.shape[1]):
            if q[i, k] > 0:
                out[j] += q[i, k] * math.log(p_label(trust[j], strategy[j], l, k))
    for j in range(J):
        out[j] += brute_log_prior(a, b, c, [trust[j]], [strategy[j]])
    return out


def brute_best_trust(triples, q, trust, strategy, a, b, c):
    """The trusts maximising ``brute_class_q`` with the strategies held: the zero of its
    derivative (by finite differences of the loops), found by bisection on [0, 1]."""
    from scipy.optimize import brentq

    J = len(trust)
    best = np.zeros(J)
    for j in range(J):
        def f(t, j=j):
            tr = np.array(trust, dtype=float)
            tr[j] = t
            return brute_class_q(triples, q, tr, strategy, a, b, c)[j]

        def slope(t, h=1e-7):
            return (f(t + h) - f(t - h)) / (2 * h)

        lo, hi = 1e-6, 1 - 1e-6
        if slope(lo) <= 0:
            best[j] = 0.0
        elif slope(hi) >= 0:
            best[j] = 1.0
        else:
            best[j] = brentq(slope, lo, hi, xtol=1e-14)
    return best


def brute_m_step(triples, q, old, a, b, c, fit_prior):
    """The ECM step: the trusts maximise the class-only Q function with the old strategies
    held; the strategies are EM's closed form with the counts from (new trust, old strategy)."""
    J, K = old[2].shape
    trust = brute_best_trust(triples, q, old[1], old[2], a, b, c)
    known, spam = brute_expected_counts(triples, q, trust, old[2])
    strategy = np.zeros((J, K))
    for j in range(J):
        s = sum(spam[j]) + K * (c - 1)
        for l in range(K):
            strategy[j, l] = (spam[j, l] + c - 1) / s
    prior = q.mean(axis=0) if fit_prior else np.full(K, 1 / K)
    return prior, trust, strategy


def tiny_problem():
    """5 items (item 4 unlabelled), 3 annotators, 3 classes; annotator 0 labels item 3 twice."""
    triples = [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1), (2, 0, 2),
               (2, 1, 0), (3, 1, 2), (3, 0, 2), (3, 0, 1), (1, 2, 1), (2, 2, 2)]
    item, expert, label = (np.array(c) for c in zip(*triples))
    crowd = from_triples(item, expert, label, n_items=5, n_experts=3, n_classes=3)
    return triples, crowd


def simulate_mace(n_items, trust, strategy, K, *, missing=0.0, seed=0):
    """Labels drawn from the MACE model itself (dense, -1 missing), and the truth."""
    rng = np.random.default_rng(seed)
    trust = np.asarray(trust)
    J = len(trust)
    truth = rng.integers(0, K, n_items)
    knows = rng.random((n_items, J)) < trust
    spam = np.column_stack([rng.choice(K, n_items, p=strategy[j]) for j in range(J)])
    labels = np.where(knows, truth[:, None], spam)
    labels[rng.random((n_items, J)) < missing] = -1
    return labels, truth


def quiet_fit(model, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels)


# -- brute force ------------------------------------------------------------------------------
def test_confusion_matrices_by_hand():
    conf = mace_confusion([0.7, 0.0, 1.0], [[0.5, 0.3, 0.2], [1, 0, 0], [0.2, 0.2, 0.6]])
    for j, (theta, xi) in enumerate([(0.7, [0.5, 0.3, 0.2]), (0.0, [1, 0, 0]),
                                     (1.0, [0.2, 0.2, 0.6])]):
        for k in range(3):
            for l in range(3):
                assert conf[j, k, l] == pytest.approx(p_label(theta, xi, l, k), abs=1e-15)
    np.testing.assert_allclose(conf.sum(axis=2), 1.0)


@pytest.mark.parametrize("priors, fit_prior", [((1.0, 1.0, 1.0), False),
                                               ((2.0, 1.5, 1.3), False),
                                               ((1.0, 3.0, 2.0), True)])
def test_objective_posterior_and_m_step_step_by_step(priors, fit_prior):
    """At every E-step: the objective is the brute-force log-likelihood plus log prior, the
    posterior is Bayes' rule by enumeration, and the next parameters are the M-step computed
    with loops over the labels and the hidden (T, S)."""
    a, b, c = priors
    triples, crowd = tiny_problem()
    states = []
    quiet_fit(MACE(theta_prior=(a, b), strategy_prior=c, fit_class_prior=fit_prior, tol=0,
                   max_iter=8, n_init=2, random_state=1, callback=states.append), crowd)
    for r in (0, 1):  # 9 E-steps per run, fewer only where EM reached a fixed point exactly
        objectives = [st.objective for st in states if st.restart == r]
        assert len(objectives) == 9 or objectives[-1] - objectives[-2] <= 0
    for s, nxt in zip(states, states[1:] + [None]):
        p = s.params
        assert isinstance(p, MACEParams)
        ll = brute_log_likelihood(triples, 5, p.class_prior, p.trust, p.strategy)
        want = ll + brute_log_prior(a, b, c, p.trust, p.strategy)
        assert s.objective == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(s.posterior, brute_posterior(triples, 5, p.class_prior,
                                                                p.trust, p.strategy),
                                   atol=1e-12)
        if nxt is not None and nxt.restart == s.restart:
            prior, trust, strategy = brute_m_step(triples, s.posterior, p, a, b, c, fit_prior)
            np.testing.assert_allclose(nxt.params.class_prior, prior, atol=1e-12)
            # the brute-force trust is a root of a finite-difference slope
            np.testing.assert_allclose(nxt.params.trust, trust, atol=1e-6)
            np.testing.assert_allclose(nxt.params.strategy, strategy, atol=1e-5)


def test_fitted_posterior_and_likelihood_equal_brute_force():
    triples, crowd = tiny_problem()
    m = MACE(n_init=3, random_state=0, theta_prior=(2, 2), strategy_prior=2).fit(crowd)
    want = brute_posterior(triples, 5, m.class_prior_, m.trust_, m.strategy_)
    np.testing.assert_allclose(m.posterior_, want, atol=1e-10)
    np.testing.assert_allclose(m.predict_proba(), want, atol=1e-10)
    np.testing.assert_allclose(m.posterior_[4], m.class_prior_, atol=1e-12)  # unlabelled
    assert m.log_likelihood_ == pytest.approx(
        brute_log_likelihood(triples, 5, m.class_prior_, m.trust_, m.strategy_), rel=1e-12)
    assert m.objective_ == pytest.approx(
        m.log_likelihood_ + brute_log_prior(2, 2, 2, m.trust_, m.strategy_), rel=1e-12)
    # new items, scored under the fitted parameters
    new = [(0, 2, 1), (0, 0, 1), (1, 1, 2), (2, 0, 0), (2, 0, 0)]
    item, expert, label = (np.array(c) for c in zip(*new))
    np.testing.assert_allclose(m.predict_proba((item, expert, label)),
                               brute_posterior(new, 3, m.class_prior_, m.trust_, m.strategy_),
                               atol=1e-12)
    assert m.predict((item, expert, label)).tolist() == \
        np.argmax(brute_posterior(new, 3, m.class_prior_, m.trust_, m.strategy_), 1).tolist()


# -- the M-step -------------------------------------------------------------------------------
@pytest.mark.parametrize("priors, fit_prior", [((1.0, 1.0, 1.0), False),
                                               ((1.5, 2.0, 1.2), True)])
def test_m_step_maximises_the_q_function(priors, fit_prior):
    """The M-step (ECM): no perturbation of the new trusts increases the brute-force
    class-only expected complete-data log-posterior with the old strategies held; no
    perturbation of the new strategies (or class prior) increases EM's expected
    complete-data log-posterior over (class, spam) whose expectations are taken at (new
    trusts, old strategies); and the step raises the class-only one (a generalised EM)."""
    a, b, c = priors
    triples, crowd = tiny_problem()
    rng = np.random.default_rng(0)
    m = MACE(theta_prior=(a, b), strategy_prior=c, fit_class_prior=fit_prior)
    data = m._data(crowd)
    for _ in range(5):
        old = MACEParams(np.full(3, 1 / 3), rng.uniform(0.05, 0.95, 3), rng.dirichlet(np.ones(3), 3))
        q = rng.dirichlet(np.ones(3), 5)
        new = m._m_step(data, q, old)
        best_trust = brute_class_q(triples, q, new.trust, old.strategy, a, b, c)
        assert brute_class_q(triples, q, new.trust, new.strategy, a, b, c).sum() >= \
            brute_class_q(triples, q, old.trust, old.strategy, a, b, c).sum() - 1e-12
        mid = (old.class_prior, new.trust, old.strategy)
        best = brute_q_function(triples, q, mid, new, a, b, c, fit_prior)
        for _ in range(200):
            eps = 10 ** rng.uniform(-6, -1)
            trust = np.clip(new.trust + eps * rng.normal(size=3), 1e-9, 1 - 1e-9)
            got = brute_class_q(triples, q, trust, old.strategy, a, b, c)
            assert (got <= best_trust + 1e-10 * np.abs(best_trust)).all()
            strategy = np.clip(new.strategy + eps * rng.normal(size=(3, 3)), 1e-12, None)
            strategy /= strategy.sum(axis=1, keepdims=True)
            prior = new.class_prior
            if fit_prior:
                prior = np.clip(prior + eps * rng.normal(size=3), 1e-12, None)
                prior = prior / prior.sum()
            got = brute_q_function(triples, q, mid, (prior, new.trust, strategy), a, b, c,
                                   fit_prior)
            assert got <= best + 1e-10 * abs(best)


def test_m_step_closed_forms_by_sympy():
    """The theta update zeroes the derivative of its part of the Q function, and the strategy
    update is the stationary point of its Lagrangian on the simplex."""
    sp = pytest.importorskip("sympy")
    theta, kappa, sigma, a, b = sp.symbols("theta kappa sigma a b", positive=True)
    q_theta = (kappa + a - 1) * sp.log(theta) + (sigma + b - 1) * sp.log(1 - theta)
    sol = sp.solve(sp.diff(q_theta, theta), theta)
    assert len(sol) == 1
    assert sp.simplify(sol[0] - (kappa + a - 1) / (kappa + sigma + a + b - 2)) == 0
    assert sp.simplify(sp.diff(q_theta, theta, 2).subs(theta, sol[0])
                       .subs({kappa: 3, sigma: 2, a: 2, b: 1})) < 0  # a maximum
    K = 3
    xi = sp.symbols("xi0:3", positive=True)
    s = sp.symbols("s0:3", positive=True)
    c, lam = sp.symbols("c lambda", positive=True)
    lagrangian = sum((s[l] + c - 1) * sp.log(xi[l]) for l in range(K)) - lam * (sum(xi) - 1)
    eqs = [sp.diff(lagrangian, x) for x in xi] + [sum(xi) - 1]
    (solution,) = sp.solve(eqs, list(xi) + [lam], dict=True)
    for l in range(K):
        assert sp.simplify(solution[xi[l]] - (s[l] + c - 1) / (sum(s) + K * (c - 1))) == 0


# -- EM ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("priors, fit_prior", [((1.0, 1.0, 1.0), False),
                                               ((1.0 + 0.01 / 3, 1.0 + 0.01 / 3, 1.0 + 0.01 / 3),
                                                False),
                                               ((2.0, 5.0, 3.0), True)])
def test_objective_never_decreases(priors, fit_prior):
    a, b, c = priors
    labels, _ = simulate_mace(300, [0.9, 0.7, 0.5, 0.2, 0.0],
                              [np.ones(3) / 3, [0.6, 0.2, 0.2], [1, 0, 0], [0.1, 0.1, 0.8],
                               [0.3, 0.3, 0.4]], 3, missing=0.3, seed=2)
    runs = {}
    m = quiet_fit(MACE(theta_prior=(a, b), strategy_prior=c, fit_class_prior=fit_prior, tol=0,
                       max_iter=60, n_init=4, random_state=0,
                       callback=lambda s: runs.setdefault(s.restart, []).append(s.objective)),
                  labels)
    hist = m.log_likelihood_history_
    assert hist.shape == (m.n_iter_ + 1,)
    assert np.isfinite(hist).all()
    assert (np.diff(hist) >= -1e-9 * np.abs(hist[1:])).all(), np.diff(hist).min()
    assert sorted(runs) == [0, 1, 2, 3]
    for objs in runs.values():
        objs = np.array(objs)
        assert (np.diff(objs) >= -1e-9 * np.abs(objs[1:])).all()
    assert hist[-1] == pytest.approx(max(o[-1] for o in runs.values()), rel=1e-12)
    assert m.objective_ == hist[-1]


def test_recovers_spammers_on_simulated_mace_data():
    K = 4
    trust = [0.9, 0.8, 0.8, 0.85, 0.95, 0.15, 0.05, 0.0, 0.1]
    strategy = [np.ones(K) / K] * 5 + [[1, 0, 0, 0], np.ones(K) / K, [0.1, 0.1, 0.1, 0.7],
                                       [0.4, 0.4, 0.1, 0.1]]
    labels, truth = simulate_mace(3000, trust, strategy, K, missing=0.3, seed=5)
    m = MACE(n_init=5, random_state=0).fit(labels)
    assert m.converged_
    good, spammers = np.arange(5), np.arange(5, 9)
    assert (m.trust_[spammers] < 0.3).all(), m.trust_
    assert (m.trust_[good] > 0.7).all(), m.trust_
    np.testing.assert_allclose(m.trust_, trust, atol=0.05)
    np.testing.assert_allclose(m.spamming_, 1 - m.trust_)
    assert np.abs(m.strategy_[5] - [1, 0, 0, 0]).max() < 0.05  # the "always 0" spammer
    assert np.abs(m.strategy_[7] - [0.1, 0.1, 0.1, 0.7]).max() < 0.05
    acc = (m.labels_ == truth).mean()
    mv_acc = (MajorityVote(tie_break="lowest", unlabelled="uniform").fit(labels).labels_
              == truth).mean()
    assert acc > 0.95 and acc > mv_acc
    np.testing.assert_array_equal(m.skills_, m.trust_)


def test_rows_sum_to_one_and_shapes():
    labels, _ = simulate_mace(200, [0.8, 0.6, 0.3], [np.ones(3) / 3] * 3, 3, missing=0.5,
                              seed=1)
    m = quiet_fit(MACE(n_init=2, random_state=0, max_iter=50), labels)
    np.testing.assert_allclose(m.posterior_.sum(axis=1), 1.0, atol=1e-12)
    assert (m.posterior_ >= 0).all()
    np.testing.assert_allclose(m.strategy_.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.confusion_.sum(axis=2), 1.0, atol=1e-12)
    assert m.class_prior_.sum() == pytest.approx(1.0)  # estimated by default
    fixed = quiet_fit(MACE(n_init=2, random_state=0, max_iter=50, fit_class_prior=False), labels)
    np.testing.assert_allclose(fixed.class_prior_, 1 / 3)  # uniform when not estimated
    assert m.posterior_.shape == (200, 3) and m.strategy_.shape == (3, 3)
    assert (m.n_items_, m.n_experts_, m.n_classes_) == (200, 3, 3)
    assert m.labels_.tolist() == np.argmax(m.posterior_, axis=1).tolist()


def test_same_seed_same_result():
    labels, _ = simulate_mace(300, [0.8, 0.5, 0.2, 0.6], [np.ones(2) / 2] * 4, 2, seed=3)
    fits = [MACE(n_init=4, random_state=s).fit(labels) for s in (7, 7)]
    np.testing.assert_array_equal(fits[0].posterior_, fits[1].posterior_)
    np.testing.assert_array_equal(fits[0].trust_, fits[1].trust_)
    np.testing.assert_array_equal(fits[0].log_likelihood_history_,
                                  fits[1].log_likelihood_history_)
    g = MACE(n_init=4, random_state=np.random.default_rng(7)).fit(labels)
    np.testing.assert_array_equal(g.trust_, fits[0].trust_)


def test_no_nan_at_the_boundaries():
    # an annotator always right and one who always says 0: MLE drives theta to 1 and 0
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 200)
    noisy = [np.where(rng.random(200) < 0.8, truth, rng.integers(0, 3, 200)) for _ in range(3)]
    labels = np.column_stack([truth, np.zeros(200, int)] + noisy)
    m = MACE(n_init=3, random_state=0).fit(labels)
    for attr in ("posterior_", "trust_", "strategy_", "log_likelihood_history_"):
        assert np.isfinite(getattr(m, attr)).all(), attr
    assert m.trust_[0] > 0.999 and m.trust_[1] < 0.01
    np.testing.assert_allclose(m.strategy_[1], [1, 0, 0], atol=1e-6)
    assert (m.labels_ == truth).all()
    # the E-step at parameters exactly on the boundary
    triples, crowd = tiny_problem()
    m = MACE()
    params = MACEParams(np.full(3, 1 / 3), np.array([0.0, 1.0, 0.5]),
                        np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
    data = m._data(from_triples([0, 1, 1, 2], [0, 1, 2, 1], [1, 0, 0, 2], n_classes=3))
    q, obj = m._e_step(data, params)
    assert np.isfinite(q).all() and np.isfinite(obj)
    np.testing.assert_allclose(q, brute_posterior([(0, 0, 1), (1, 1, 0), (1, 2, 0), (2, 1, 2)],
                                                  3, params.class_prior, params.trust,
                                                  params.strategy), atol=1e-12)
    new = m._m_step(data, q, params)
    assert all(np.isfinite(x).all() for x in new)
    # priors > 1 keep everything strictly inside
    m = MACE(theta_prior=(2, 2), strategy_prior=2, n_init=2, random_state=0).fit(labels)
    assert ((m.trust_ > 0) & (m.trust_ < 1)).all() and (m.strategy_ > 0).all()


def test_new_labels_with_zero_probability_are_refused():
    m = quiet_fit(MACE(n_init=1), np.array([[0, 0], [1, 1], [0, 0], [1, 1]]))
    assert m.trust_.min() > 0.999
    m._params = m._params._replace(trust=np.ones(2))  # two annotators who are never wrong
    with pytest.raises(ValueError, match="probability 0 under every class"):
        m.predict_proba(np.array([[0, 1]]))


def test_dataframe_gives_results_by_id():
    pd = pytest.importorskip("pandas")
    trust = [0.9, 0.8, 0.1, 0.85, 0.75]
    labels, truth = simulate_mace(300, trust, [np.ones(2) / 2, np.ones(2) / 2, [1.0, 0.0],
                                               np.ones(2) / 2, np.ones(2) / 2], 2, seed=4)
    names = np.array(["cat", "dog"])
    rows = [(f"task{i}", f"w{j}", names[labels[i, j]]) for i in range(300) for j in range(5)
            if (i + j) % 4]  # some labels missing
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    m = MACE(n_init=2, random_state=0).fit(df)
    assert isinstance(m.labels_, pd.Series) and isinstance(m.skills_, pd.Series)
    assert m.skills_.index.name == "worker"
    assert m.skills_["w2"] == m.trust_[list(m.expert_ids_).index("w2")] and m.skills_["w2"] < 0.3
    np.testing.assert_allclose(m.skills_.loc[[f"w{j}" for j in range(5)]], trust, atol=0.1)
    want = pd.Series(names[truth], index=[f"task{i}" for i in range(300)])
    assert (m.labels_.loc[want.index] == want).mean() > 0.9
    assert set(m.labels_.unique()) <= {"cat", "dog"}
    probas = m.probas_
    assert isinstance(probas, pd.DataFrame) and list(probas.columns) == ["cat", "dog"]
    np.testing.assert_allclose(probas.sum(axis=1), 1.0)
    # new labels by id are mapped onto the fitted annotators
    new = pd.DataFrame({"task": ["x", "x"], "worker": ["w1", "w0"], "label": ["dog", "dog"]})
    assert m.predict(new).tolist() == [1]
    with pytest.raises(ValueError, match="unknown worker"):
        m.predict_proba(pd.DataFrame({"task": ["x"], "worker": ["w9"], "label": ["dog"]}))
    with pytest.raises(ValueError, match="unknown label"):
        m.predict_proba(pd.DataFrame({"task": ["x"], "worker": ["w1"], "label": ["cow"]}))


def test_numpy_input_gives_numpy_results():
    labels, _ = simulate_mace(50, [0.9, 0.8, 0.1], [np.ones(2) / 2] * 3, 2, seed=4)
    m = quiet_fit(MACE(n_init=1), labels)
    assert isinstance(m.labels_, np.ndarray) and isinstance(m.skills_, np.ndarray)
    assert isinstance(m.probas_, np.ndarray)


def test_api():
    m = MACE(n_init=2, random_state=5)
    assert m.get_params()["theta_prior"] is None   # the method's default: (1, 1) for EM
    assert m.get_params()["method"] == "em"
    assert m.get_params()["fit_class_prior"] is True  # estimated by default (issue 28)
    assert repr(m).startswith("MACE(n_classes=None, method='em', theta_prior=None")
    with pytest.raises(NotFittedError):
        m.predict()
    with pytest.raises(NotFittedError):
        m.labels_
    triples, crowd = tiny_problem()
    np.testing.assert_array_equal(m.fit_predict(crowd), m.predict())
    assert m.fit(crowd, ) is m
    assert MACE(n_classes=5, n_init=1).fit(crowd).posterior_.shape == (5, 5)


@pytest.mark.parametrize("params, labels, match", [
    ({}, [[0, np.nan]], "NaN"),
    ({}, [0, 1, 1], "2-D"),
    ({}, np.zeros((0, 2)), "empty"),
    ({}, [[-1, -1]], "no label at all"),
    (dict(n_classes=2), [[0, 2]], "out of range"),
    ({}, ([0, 1], [0], [1, 0]), "same length"),
    ({}, None, "labels is None"),
    (dict(theta_prior=(0.5, 1.0)), [[0, 1]], r"theta_prior\[0\] \(a\) must be >= 1"),
    (dict(theta_prior=(1.0, -2)), [[0, 1]], r"theta_prior\[1\] \(b\) must be >= 1"),
    (dict(theta_prior=(1.0,)), [[0, 1]], "pair"),
    (dict(theta_prior="flat"), [[0, 1]], "pair"),
    (dict(theta_prior=(1.0, np.nan)), [[0, 1]], "finite"),
    (dict(method="bayes"), [[0, 1]], "method must be 'em'"),
    (dict(method=None), [[0, 1]], "method must be 'em'"),
    (dict(method="vb", theta_prior=(0.0, 1.0)), [[0, 1]], r"theta_prior\[0\] \(a\) must be >= 1e-08"),
    (dict(method="vb", theta_prior=(1.0,)), [[0, 1]], r"numbers in \[1e-08, 1e\+06\]"),
    (dict(method="vb", strategy_prior=-1.0), [[0, 1]], "strategy_prior must be >= 1e-08"),
    (dict(method="vb", strategy_prior=np.inf), [[0, 1]], "finite"),
    (dict(method="vb", strategy_prior=1e-310), [[0, 1]], "strategy_prior must be >= 1e-08"),
    (dict(method="vb", theta_prior=(0.5, 1e300)), [[0, 1]], r"theta_prior\[1\] \(b\) must be <= 1000000"),
    (dict(strategy_prior=0.5), [[0, 1]], "strategy_prior must be >= 1"),
    (dict(strategy_prior="x"), [[0, 1]], "strategy_prior must be a number"),
    (dict(fit_class_prior="yes"), [[0, 1]], "fit_class_prior must be True or False"),
    (dict(n_init=0), [[0, 1]], "n_init"),
    (dict(max_iter=-1), [[0, 1]], "max_iter"),
    (dict(tol=-1.0), [[0, 1]], "tol"),
    (dict(n_classes=1), [[0, 1]], "n_classes"),
    (dict(callback=3), [[0, 1]], "callback"),
    (dict(random_state="seed"), [[0, 1]], "random_state"),
])
def test_bad_input(params, labels, match):
    with pytest.raises(ValueError, match=match):
        MACE(**params).fit(labels)


def test_bad_new_labels():
    m = quiet_fit(MACE(n_init=1), np.array([[0, 1, 1], [1, 1, 0]]))
    with pytest.raises(ValueError, match="unknown expert|n_experts"):
        m.predict((np.array([0]), np.array([5]), np.array([0])))
    with pytest.raises(ValueError, match="out of range"):
        m.predict(np.array([[0, 2, 1]]))


# -- variational Bayes (method="vb"), checked against its definition ------------------------
def vb_params(rng, J, K):
    from crowdlearn.aggregation.mace import MACEVBParams

    return MACEVBParams(rng.dirichlet(np.ones(K)), rng.uniform(0.3, 5.0, J),
                        rng.uniform(0.3, 5.0, J), rng.uniform(0.3, 5.0, (J, K)))


def e_log(params):
    """E[log rho], E[log(1 - rho)], E[log xi] under Beta(A, B) and Dirichlet(G), by
    numerical integration and Monte Carlo (not by the digamma formulas under test)."""
    from scipy import integrate, stats

    A, B, G = params.knowing, params.spamming, params.strategy
    know = np.array([integrate.quad(lambda t: math.log(t) * stats.beta.pdf(t, a, b), 0, 1)[0]
                     for a, b in zip(A, B)])
    spam = np.array([integrate.quad(lambda t: math.log1p(-t) * stats.beta.pdf(t, a, b), 0, 1)[0]
                     for a, b in zip(A, B)])
    # each xi_p is Beta(G_p, sum G - G_p) distributed: one integral per entry
    xi = np.array([[integrate.quad(lambda t: math.log(t) * stats.beta.pdf(t, g, row.sum() - g),
                                   0, 1)[0] for g in row] for row in G])
    return know, spam, xi


def brute_elbo(triples, n_items, params, hyper):
    """The evidence lower bound by enumeration: every item's true class and every label's
    knowing/spamming indicator, q(T, S) proportional to exp E[log p(T, S, labels)], plus
    the entropy of q, minus the KL of the Beta and Dirichlet factors from their priors (by
    numerical integration). Also returns q's marginal over T."""
    from scipy import integrate, stats

    a, b, c = hyper
    know, spam, xi = e_log(params)
    K = params.class_prior.size
    total, marginal = 0.0, np.zeros((n_items, K))
    for i in range(n_items):
        mine = [(j, l) for (it, j, l) in triples if it == i]
        logs = {}
        for k in range(K):
            for S in np.ndindex(*(2,) * len(mine)):   # 0: knew, 1: spammed
                if any(s == 0 and l != k for s, (j, l) in zip(S, mine)):
                    continue                          # knowing gives the true class only
                logs[k, S] = math.log(params.class_prior[k]) + sum(
                    know[j] if s == 0 else spam[j] + xi[j, l] for s, (j, l) in zip(S, mine))
        top = max(logs.values())
        Z = sum(math.exp(v - top) for v in logs.values())
        for (k, S), v in logs.items():
            qv = math.exp(v - top) / Z
            marginal[i, k] += qv
            total += qv * v - (qv * math.log(qv) if qv > 0 else 0.0)
    A, B, G = params.knowing, params.spamming, params.strategy
    for r in range(A.size):
        p, q = stats.beta(a, b), stats.beta(A[r], B[r])
        total -= integrate.quad(lambda t: q.pdf(t) * (q.logpdf(t) - p.logpdf(t)), 0, 1,
                                limit=200)[0]
        dq, dp = stats.dirichlet(G[r]), stats.dirichlet(np.full(K, c))
        # KL(q || p) = -H(q) - E_q[log p], with E_q[log xi_p] from the integrals above
        e_log_p = (math.lgamma(K * c) - K * math.lgamma(c) + (c - 1) * xi[r].sum())
        total -= -dq.entropy() - e_log_p
    return total, marginal


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vb_elbo_and_posterior_equal_enumeration(seed):
    """The variational E-step's posterior and objective (sum of log normalisers minus the
    KL terms, with digamma expectations) equal the ELBO written out by enumeration."""
    rng = np.random.default_rng(seed)
    K, J, n = 3, 3, 4
    triples = [(i, j, int(rng.integers(K))) for i in range(n) for j in range(J)
               if rng.random() < 0.8] + [(0, 1, 2)]     # a repeated label too
    crowd = from_triples(*map(np.array, zip(*triples)), n_items=n, n_experts=J, n_classes=K)
    params = vb_params(rng, J, K)
    hyper = (0.5, 0.7, 2.0)
    m = MACE(method="vb", theta_prior=hyper[:2], strategy_prior=hyper[2])
    data = m._data(crowd)
    q, elbo = m._e_step(data, params)
    want, marginal = brute_elbo(triples, n, params, hyper)
    assert elbo == pytest.approx(want, abs=1e-6)
    np.testing.assert_allclose(q, marginal, atol=1e-8)


def test_vb_m_step_maximises_the_elbo_over_the_factors():
    """Given the local factor q(T, S) of an E-step, the variational M-step's Beta and
    Dirichlet factors (prior plus expected counts) beat any other: the ELBO with q(T, S)
    held fixed is lower at random perturbations of them."""
    from crowdlearn.aggregation.mace import MACEVBParams, _vb_kl, _vb_log_weights

    rng = np.random.default_rng(4)
    K, J, n = 2, 4, 30
    triples = [(i, j, int(rng.integers(K))) for i in range(n) for j in range(J)]
    crowd = from_triples(*map(np.array, zip(*triples)), n_items=n, n_experts=J, n_classes=K)
    hyper = (0.5, 0.5, 3.0)
    m = MACE(method="vb", theta_prior=hyper[:2], strategy_prior=hyper[2])
    data = m._data(crowd)
    old = vb_params(rng, J, K)
    q, _ = m._e_step(data, old)
    # the expected counts of q(T, S) under the old factors, by enumeration of (T, S) per label
    # with the expected logarithms integrated numerically (not the code's digamma formulas)
    know_t, spam_t, xi_t = (np.exp(v) for v in e_log(old))
    known, spam = np.zeros((J, K)), np.zeros((J, K))
    for (i, j, l) in triples:
        for k in range(K):
            p_know = know_t[j] * (l == k)
            p_spam = spam_t[j] * xi_t[j, l]
            known[j, l] += q[i, k] * p_know / (p_know + p_spam)
            spam[j, l] += q[i, k] * p_spam / (p_know + p_spam)

    def bound(p: MACEVBParams) -> float:
        """The ELBO's terms that depend on the global factors, q(T, S) fixed."""
        log_know, log_spam, log_xi = _vb_log_weights(p)
        return float((known.sum(axis=1) * log_know).sum() + (spam.sum(axis=1) * log_spam).sum()
                     + (spam * log_xi).sum() + (q.sum(axis=0) * np.log(p.class_prior)).sum()
                     - _vb_kl(p, hyper))

    new = m._m_step(data, q, old)
    np.testing.assert_allclose(new.knowing, hyper[0] + known.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(new.spamming, hyper[1] + spam.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(new.strategy, hyper[2] + spam, rtol=1e-6)
    best = bound(new)
    for _ in range(50):
        scale = np.exp(rng.normal(0, 0.2, 2 * J + J * K))
        other = MACEVBParams(new.class_prior, new.knowing * scale[:J],
                             new.spamming * scale[J:2 * J], new.strategy * scale[2 * J:]
                             .reshape(J, K))
        assert bound(other) <= best + 1e-9


def test_vb_objective_never_decreases_and_recovers_spammers():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 2000)
    trust = np.array([0.9, 0.8, 0.7, 0.3, 0.0])
    knows = rng.random((2000, 5)) < trust
    spam = np.where(np.arange(5) == 4, 0, rng.integers(0, 3, (2000, 5)))
    labels = np.where(knows, truth[:, None], spam)
    m = quiet_fit(MACE(method="vb", n_init=2, random_state=0, tol=0, max_iter=300), labels)
    steps = np.diff(m.log_likelihood_history_)
    assert (steps >= -1e-9 * np.abs(m.log_likelihood_history_[1:])).all()
    np.testing.assert_allclose(m.trust_, trust, atol=0.04)
    assert m.strategy_[4, 0] > 0.95                      # the spammer who always says 0
    assert (m.labels_ == truth).mean() > 0.9
    # posterior means of the Beta and Dirichlet factors, which the attributes also give
    A, B = m.trust_posterior_.T
    np.testing.assert_allclose(m.trust_, A / (A + B))
    np.testing.assert_allclose(m.strategy_, m.strategy_posterior_
                               / m.strategy_posterior_.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(m.posterior_.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(m.log_likelihood_)


def test_vb_defaults_are_maces_and_repeat():
    """method='vb' uses MACE's own Beta(0.5, 0.5) and Dirichlet(10) priors; the same seed
    gives the same fit, and SQUAREM reaches an ELBO at least as high to within tol."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, (60, 5))
    m = MACE(method="vb", n_init=2, random_state=3)
    assert m._hyper() == (0.5, 0.5, 10.0)
    a, b = quiet_fit(m, labels), quiet_fit(MACE(method="vb", n_init=2, random_state=3), labels)
    np.testing.assert_array_equal(a.posterior_, b.posterior_)
    fast = quiet_fit(MACE(method="vb", n_init=2, random_state=3, accelerate=True), labels)
    assert np.isfinite(fast.objective_) and fast.posterior_.shape == a.posterior_.shape
    assert fast.objective_ >= a.objective_ - 1e-6 * abs(a.objective_)
    assert (np.diff(fast.log_likelihood_history_)
            >= -1e-9 * np.abs(fast.log_likelihood_history_[1:])).all()
    new = a.predict_proba(labels[:5])
    np.testing.assert_allclose(new, a.posterior_[:5], atol=1e-12)
    # an EM fit after a VB fit drops the VB-only attributes
    em = quiet_fit(a.set_params(method="em"), labels[:, :3])
    assert not hasattr(em, "trust_posterior_") and not hasattr(em, "strategy_posterior_")


@pytest.mark.parametrize("prior", [1e-8, 1e6])
def test_vb_priors_at_the_ends_of_their_range_stay_monotone(prior):
    """At the smallest and largest priors allowed, with and without SQUAREM, the bound is
    finite and never decreases (beyond them digamma overflows or the KL terms cancel)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, (300, 5))
    for accelerate in (False, True):
        m = quiet_fit(MACE(method="vb", theta_prior=(prior, prior), strategy_prior=prior,
                           n_init=2, random_state=3, accelerate=accelerate), labels)
        h = m.log_likelihood_history_
        assert np.isfinite(h).all() and np.isfinite(m.posterior_).all()
        assert (np.diff(h) >= -1e-9 * np.abs(h[1:])).all()


# -- defaults on the bundled crowds (issue 43) -----------------------------------------------
# crowd-kit 1.4.2's MACE() at its defaults on the bundled crowds with a truth
# (benchmarks/bench_crowdkit_accuracy.py): crowdlearn's default must be at least as accurate
CROWDKIT_MACE = {"bluebirds": 78 / 108, "rte": 740 / 800, "temp": 435 / 462, "wsd": 176 / 177,
                 "anaesthetists": None}


@pytest.mark.parametrize("name", list(CROWDKIT_MACE))
def test_default_and_tight_fits_converge_on_bundled_crowds(name):
    """A default fit converges without any warning and is at least as accurate as
    crowd-kit's; ``tol=1e-12`` is met well before ``max_iter`` (the ECM trust update), with
    an objective at least the default fit's."""
    from crowdlearn.datasets import load_dataset

    data = load_dataset(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        default = MACE(random_state=0).fit(data.labels)
        tight = MACE(tol=1e-12, random_state=0).fit(data.labels)
    assert default.converged_ and tight.converged_
    assert tight.n_iter_ < tight.max_iter // 2
    assert tight.objective_ >= default.objective_ - 1e-9 * abs(default.objective_)
    if CROWDKIT_MACE[name] is not None:
        assert data.accuracy(default.predict()) >= CROWDKIT_MACE[name] - 1e-9


def test_spammer_trust_is_exactly_zero_and_fixed():
    """An annotator whose labels ignore the items gets trust 0 exactly (the ECM step finds
    the boundary maximum), where EM's textbook update would only creep towards it."""
    labels, truth = simulate_mace(400, [0.9, 0.8, 0.85, 0.0], [np.ones(2) / 2, np.ones(2) / 2,
                                                               np.ones(2) / 2, [0.3, 0.7]],
                                  2, seed=3)
    m = MACE(n_init=1, tol=1e-12, random_state=0).fit(labels)
    assert m.converged_ and m.n_iter_ < 200
    assert m.trust_[3] == 0.0
    np.testing.assert_allclose(m.thetas_[3], np.bincount(labels[:, 3], minlength=2) / 400)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_thetas_is_crowdkits_strategy(method):
    """``thetas_`` (crowd-kit's name): one row per worker, one column per class id, rows
    summing to one; the confusion matrices are trust on the diagonal plus spamming times
    thetas_ in every row; on a DataFrame rows follow ``expert_ids_`` and columns
    ``class_ids_``."""
    pd = pytest.importorskip("pandas")
    labels, _ = simulate_mace(300, [0.9, 0.6, 0.1], [np.ones(3) / 3, [0.6, 0.2, 0.2],
                                                     [0.1, 0.1, 0.8]], 3, seed=4)
    m = MACE(method=method, n_init=2, random_state=0).fit(labels)
    assert m.thetas_.shape == (3, 3)
    np.testing.assert_allclose(m.thetas_.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(m.thetas_, m.strategy_)
    assert m.thetas_ is not m.strategy_
    eye = np.eye(3)[None]
    np.testing.assert_allclose(m.confusion_, m.trust_[:, None, None] * eye
                               + m.spamming_[:, None, None] * m.thetas_[:, None, :],
                               atol=1e-12)
    item, expert = np.nonzero(labels >= 0)
    df = pd.DataFrame({"task": [f"t{i}" for i in item], "worker": [f"w{2 - e}" for e in expert],
                       "label": np.array(["a", "b", "c"])[labels[item, expert]]})
    f = MACE(method=method, n_init=2, random_state=0).fit(df)
    assert isinstance(f.thetas_, np.ndarray) and f.thetas_.shape == (3, 3)
    assert list(f.class_ids_) == ["a", "b", "c"] and list(f.expert_ids_) == ["w0", "w1", "w2"]
    # worker w0 is column 2 of the matrix: the one who mostly spams "c"
    assert f.thetas_[0].argmax() == 2 and f.trust_[0] < 0.3


# -- SQUAREM on a flat optimum: reported -----------------------------------------------------
def one_label_per_worker(n: int = 20, K: int = 3, seed: int = 23):
    """Every worker labels one item: nothing ties the classes of different items, and the
    objective of MACE is flat over many posteriors."""
    label = np.random.default_rng(seed).integers(K, size=n)
    return from_triples(np.arange(n), np.arange(n), label, n_items=n, n_experts=n, n_classes=K)


def test_squarem_on_a_flat_optimum_reports_it(monkeypatch):
    """A SQUAREM run the engine calls flat (tested on a flat objective below) reaches the
    model: ``flat_optimum_`` and a DegenerateFitWarning that says so."""
    import crowdlearn.em

    crowd = one_label_per_worker()
    monkeypatch.setattr(crowdlearn.em, "FLAT_MOVE", -1.0)  # every SQUAREM run counts as flat
    with pytest.warns(DegenerateFitWarning, match="flat optimum"):
        fast = MACE(accelerate=True, n_init=1).fit(crowd)
    assert fast.flat_optimum_ and fast.converged_


def test_mace_leaves_no_flat_direction_on_one_label_per_worker():
    """Every worker labels one item: under EM's textbook trust update SQUAREM ran far along a
    flat objective here; MACE's exact trust update (issue 43) sets every trust at once, and
    SQUAREM and plain EM end at the same objective and posterior, neither flagged."""
    crowd = one_label_per_worker()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        fast = MACE(accelerate=True, n_init=1).fit(crowd)
        plain = MACE(accelerate=False, n_init=1).fit(crowd)
    assert not fast.flat_optimum_ and not plain.flat_optimum_
    assert abs(plain.objective_ - fast.objective_) <= 1e-9
    assert np.abs(plain.posterior_ - fast.posterior_).max() <= 1e-6
