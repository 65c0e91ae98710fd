"""Tests of the weighted majority votes (crowdlearn.aggregation.weighted_vote)."""

import math

import numpy as np
import pytest

from crowdlearn.aggregation.dawid_skene import DawidSkeneParams, _Data, _flat_indices
from crowdlearn.exceptions import NotFittedError
from crowdlearn.labels import from_dense, from_triples
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.simulate import one_coin_confusion, simulate_crowd
from crowdlearn.aggregation.weighted_vote import (Wawa, WeightedMajorityVote, ZeroBasedSkill,
                                      log_odds_weights)


# -- loop implementations, straight from the definitions -----------------------------------
def loop_vote(triples, n_items, K, skills, weights):
    """Posterior of the weighted vote, item by item."""
    post = np.zeros((n_items, K))
    for i in range(n_items):
        mine = [(j, l) for (it, j, l) in triples if it == i]
        if weights == "linear":
            score = [sum(skills[j] for (j, l) in mine if l == k) for k in range(K)]
            total = sum(score)
            post[i] = [s / total for s in score] if total > 0 else [1 / K] * K
        elif all(0 < skills[j] < 1 for (j, _) in mine):
            w = {j: math.log((K - 1) * skills[j] / (1 - skills[j])) for (j, _) in mine}
            score = [sum(w[j] for (j, l) in mine if l == k) for k in range(K)]
            m = max(score)
            e = [math.exp(s - m) for s in score]
            post[i] = [v / sum(e) for v in e]
        else:  # infinite weights: the one-coin product, which the log-odds vote equals
            prob = [math.prod(skills[j] if l == k else (1 - skills[j]) / (K - 1)
                              for (j, l) in mine) for k in range(K)]
            post[i] = [v / sum(prob) for v in prob]
    return post


def first_max(row):
    """Arg-max, the lowest index on ties, written out."""
    best = 0
    for k in range(1, len(row)):
        if row[k] > row[best]:
            best = k
    return best


def loop_agreement(triples, hard, J, K):
    skills = []
    for j in range(J):
        mine = [(i, l) for (i, jj, l) in triples if jj == j]
        skills.append(sum(l == hard[i] for (i, l) in mine) / len(mine) if mine else 1 / K)
    return skills


def loop_wawa(triples, n_items, J, K, weights="linear"):
    mv = loop_vote(triples, n_items, K, [1.0] * J, "linear")
    hard = [first_max(row) for row in mv]
    skills = loop_agreement(triples, hard, J, K)
    return skills, loop_vote(triples, n_items, K, skills, weights)


def loop_zbs(triples, n_items, J, K, n_iter=100, lr_init=1.0, steps=20, factor=0.5, tol=0.0):
    """crowd-kit's ZeroBasedSkill schedule (plus the early stop at ``tol``)."""
    skills = [1 / K] * J
    lr = lr_init
    done, converged = 0, False
    for it in range(1, n_iter + 1):
        if it % steps == 0:
            lr *= factor
        hard = [first_max(row) for row in loop_vote(triples, n_items, K, skills, "linear")]
        acc = loop_agreement(triples, hard, J, K)
        new = [s + lr * (a - s) for s, a in zip(skills, acc)]
        change = max(abs(a - b) for a, b in zip(new, skills))
        skills = new
        done = it
        if change <= tol:
            converged = True
            break
    return skills, loop_vote(triples, n_items, K, skills, "linear"), done, converged


def random_crowd(seed, n_items=40, J=6, K=3, missing=0.4):
    rng = np.random.default_rng(seed)
    sim = simulate_crowd(n_items, one_coin_confusion(rng.uniform(0.3, 0.9, J), K),
                         missing=missing, random_state=seed)
    crowd = sim.labels
    triples = list(zip(crowd.item.tolist(), crowd.expert.tolist(), crowd.label.tolist()))
    return crowd, triples


TOY = np.array([[0, 1, 1],
                [0, 0, 1],
                [2, 1, -1],
                [-1, -1, -1]])  # unlabelled


# -- WeightedMajorityVote by hand --------------------------------------------------------------
def test_log_odds_vote_by_hand():
    # K = 3: w_j = log(2 p / (1 - p)): 0.9 -> log 18, 0.6 -> log 3, 0.5 -> log 2
    wmv = WeightedMajorityVote([0.9, 0.6, 0.5], n_classes=3).fit(TOY)
    np.testing.assert_allclose(wmv.weights_, np.log([18, 3, 2]))
    # item 0: class 0 scores log 18, class 1 log 3 + log 2 = log 6 -> (18, 6, 1) / 25
    # item 1: class 0 log 18 + log 3 = log 54, class 1 log 2 -> (54, 2, 1) / 57
    # item 2: class 2 log 18, class 1 log 3 -> (1, 3, 18) / 22
    np.testing.assert_allclose(wmv.posterior_, [[18 / 25, 6 / 25, 1 / 25],
                                                [54 / 57, 2 / 57, 1 / 57],
                                                [1 / 22, 3 / 22, 18 / 22],
                                                [1 / 3, 1 / 3, 1 / 3]], atol=1e-14)
    assert wmv.labels_.tolist() == [0, 0, 2, 0]
    np.testing.assert_array_equal(wmv.skills_, [0.9, 0.6, 0.5])


def test_linear_vote_by_hand():
    wmv = WeightedMajorityVote([0.9, 0.6, 0.5], n_classes=3, weights="linear").fit(TOY)
    np.testing.assert_allclose(wmv.posterior_, [[0.9 / 2, 1.1 / 2, 0],
                                                [1.5 / 2, 0.5 / 2, 0],
                                                [0, 0.6 / 1.5, 0.9 / 1.5],
                                                [1 / 3, 1 / 3, 1 / 3]], atol=1e-14)
    assert wmv.labels_.tolist() == [1, 0, 2, 0]
    np.testing.assert_array_equal(wmv.weights_, [0.9, 0.6, 0.5])


def test_ties_go_to_the_lowest_class():
    # equal weights on classes 1 and 2 (and a weight-zero worker)
    labels = np.array([[2, 1, 0]])
    for weights in ("log-odds", "linear"):
        wmv = WeightedMajorityVote([0.7, 0.7, 1 / 3 if weights == "log-odds" else 0.0],
                                   weights=weights).fit(labels)
        assert wmv.posterior_[0, 1] == pytest.approx(wmv.posterior_[0, 2])
        assert wmv.labels_.tolist() == [1]
    # all weights zero: uniform, class 0
    wmv = WeightedMajorityVote([0.0, 0.0], weights="linear").fit(np.array([[1, 1]]))
    np.testing.assert_allclose(wmv.posterior_, [[0.5, 0.5]])
    assert wmv.labels_.tolist() == [0]


def test_no_skills_is_the_plain_majority_vote():
    from crowdlearn.aggregation.majority_vote import MajorityVote
    for weights in ("log-odds", "linear"):
        wmv = WeightedMajorityVote(weights=weights).fit(TOY[:3])
        np.testing.assert_allclose(wmv.posterior_, MajorityVote().fit(TOY[:3]).posterior_)
        np.testing.assert_array_equal(wmv.weights_, 1.0)
        with pytest.raises(AttributeError, match="no skills"):
            wmv.skills_


def test_skills_at_zero_and_one():
    # a worker with skill 1 decides alone; one with skill 0 rules its label out
    wmv = WeightedMajorityVote([1.0, 0.8, 0.8]).fit(np.array([[0, 1, 1], [-1, 1, 0]]))
    np.testing.assert_allclose(wmv.posterior_[0], [1, 0])
    assert np.isfinite(wmv.posterior_).all()
    wmv = WeightedMajorityVote([0.0, 0.6, 0.6], n_classes=3).fit(np.array([[0, 0, 1]]))
    assert wmv.posterior_[0, 0] == 0 and np.isfinite(wmv.posterior_).all()
    assert wmv.labels_.tolist() == [1]
    assert np.isposinf(log_odds_weights([1.0], 2)).all()
    assert np.isneginf(log_odds_weights([0.0], 2)).all()
    assert log_odds_weights([0.25], 4) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="contradict"):
        WeightedMajorityVote([1.0, 1.0]).fit(np.array([[0, 1]]))


# -- log-odds weighted vote == one-coin posterior ------------------------------------------------
@pytest.mark.parametrize("K", [2, 3, 5])
def test_log_odds_vote_is_the_one_coin_posterior(K):
    crowd, triples = random_crowd(K, n_items=300, J=7, K=K)
    acc = np.random.default_rng(K).uniform(0.05, 0.97, crowd.n_experts)
    wmv = WeightedMajorityVote(acc).fit(crowd)
    # the one-coin model's E-step with a uniform class prior
    data = _Data(crowd, None, *_flat_indices(crowd, K))
    params = DawidSkeneParams(np.full(K, 1 / K), one_coin_confusion(acc, K), None)
    q, _ = OneCoinDawidSkene()._e_step(data, params)
    np.testing.assert_allclose(wmv.posterior_, q, atol=1e-12)
    np.testing.assert_allclose(wmv.posterior_, loop_vote(triples, crowd.n_items, K, acc,
                                                         "log-odds"), atol=1e-12)
    np.testing.assert_array_equal(wmv.labels_, np.argmax(q, axis=1))


def test_log_odds_weight_derivation_by_sympy():
    """The one-coin joint probabilities of two classes differ by the factor exp(w_j) per
    label of each class: their log-ratio is the difference of the weighted votes."""
    sp = pytest.importorskip("sympy")
    K = sp.Integer(3)
    p = sp.symbols("p0:3", positive=True)

    def one_coin(j, l, k):
        return p[j] if l == k else (1 - p[j]) / (K - 1)

    labels = [(0, 0), (1, 2), (2, 0)]  # (worker, label) of one item
    w = [sp.log((K - 1) * pj / (1 - pj)) for pj in p]
    for k, k2 in [(0, 1), (0, 2), (2, 1)]:
        joint = [sp.Mul(*[one_coin(j, l, c) for (j, l) in labels]) for c in (k, k2)]
        vote = [sum(w[j] for (j, l) in labels if l == c) for c in (k, k2)]
        diff = sp.expand_log(sp.log(joint[0]) - sp.log(joint[1]) - (vote[0] - vote[1]),
                             force=True)
        assert sp.simplify(diff) == 0


# -- Wawa and ZeroBasedSkill against loop implementations ---------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weights", ["linear", "log-odds"])
def test_wawa_equals_the_loop_implementation(seed, weights):
    crowd, triples = random_crowd(seed, K=2 + seed % 3)
    skills, post = loop_wawa(triples, crowd.n_items, crowd.n_experts, crowd.n_classes, weights)
    w = Wawa(weights=weights).fit(crowd)
    np.testing.assert_allclose(w.skills_, skills, atol=1e-14)
    np.testing.assert_allclose(w.posterior_, post, atol=1e-12)
    assert w.labels_.tolist() == [first_max(row) for row in post]


def test_wawa_by_hand():
    # majority vote: 0, 1, 0, 1 -> agreement 4/4, 3/4, 2/4
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    w = Wawa().fit(labels)
    np.testing.assert_allclose(w.skills_, [1.0, 0.75, 0.5])
    np.testing.assert_allclose(w.posterior_[3], [0.75 / 2.25, 1.5 / 2.25])
    np.testing.assert_allclose(w.majority_posterior_[3], [1 / 3, 2 / 3])
    # a worker with no label gets 1/K; repeated labels count
    # (votes: item 0 -> 1, item 1 -> 0 by 2 to 1)
    crowd = from_triples([0, 0, 1, 1, 1], [0, 1, 0, 0, 1], [1, 1, 0, 0, 1], n_experts=3,
                         n_classes=3)
    np.testing.assert_allclose(Wawa().fit(crowd).skills_, [1.0, 0.5, 1 / 3])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kwargs", [dict(tol=0.0), dict(tol=0.0, lr_init=0.3, max_iter=45),
                                    dict(lr_init=0.5, lr_steps_to_reduce=3,
                                         lr_reduce_factor=0.7, tol=1e-4)])
def test_zero_based_skill_equals_the_loop_implementation(seed, kwargs):
    crowd, triples = random_crowd(seed + 10, K=2 + seed % 3)
    z = ZeroBasedSkill(**kwargs).fit(crowd)
    skills, post, n_iter, converged = loop_zbs(triples, crowd.n_items, crowd.n_experts, crowd.n_classes,
                                    n_iter=kwargs.get("max_iter", 100),
                                    lr_init=kwargs.get("lr_init", 1.0),
                                    steps=kwargs.get("lr_steps_to_reduce", 20),
                                    factor=kwargs.get("lr_reduce_factor", 0.5),
                                    tol=kwargs["tol"])
    np.testing.assert_allclose(z.skills_, skills, atol=1e-12)
    np.testing.assert_allclose(z.posterior_, post, atol=1e-12)
    assert z.n_iter_ == n_iter and z.converged_ == converged


def test_zero_based_skill_stops_early_and_reports_it():
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    z = ZeroBasedSkill().fit(labels)
    assert z.converged_ and z.n_iter_ == 2
    np.testing.assert_allclose(z.skills_, [1.0, 0.75, 0.5])
    z = ZeroBasedSkill(tol=0.0, max_iter=7).fit(labels)
    assert z.n_iter_ == 2 and z.converged_  # no change at all also meets tol=0
    z = ZeroBasedSkill(lr_init=0.1, max_iter=5).fit(labels)
    assert not z.converged_ and z.n_iter_ == 5
    z = ZeroBasedSkill(max_iter=0).fit(labels)
    assert z.n_iter_ == 0 and not z.converged_
    np.testing.assert_allclose(z.skills_, 0.5)


def test_weighted_votes_beat_plain_majority_on_a_skewed_crowd():
    sim = simulate_crowd(2000, one_coin_confusion([0.95, 0.9, 0.4, 0.4, 0.4], 3),
                         random_state=0)
    from crowdlearn.aggregation.majority_vote import MajorityVote
    mv = (MajorityVote(tie_break="lowest").fit(sim.labels).labels_ == sim.truth).mean()
    for est in (Wawa(), ZeroBasedSkill(), Wawa(weights="log-odds")):
        assert (est.fit(sim.labels).labels_ == sim.truth).mean() > mv
    truth_acc = [0.95, 0.9, 0.4, 0.4, 0.4]
    wmv = WeightedMajorityVote(truth_acc).fit(sim.labels)
    assert (wmv.labels_ == sim.truth).mean() >= (Wawa().fit(sim.labels).labels_
                                                 == sim.truth).mean() - 0.01


# -- posterior and prediction -------------------------------------------------------------------
@pytest.mark.parametrize("est", [WeightedMajorityVote([0.8, 0.3, 0.6, 0.9, 0.5, 0.7]),
                                 WeightedMajorityVote(np.arange(6.0), weights="linear"),
                                 Wawa(), ZeroBasedSkill(), ZeroBasedSkill(weights="log-odds")])
def test_rows_sum_to_one_and_predict(est):
    crowd, _ = random_crowd(3, n_items=100, J=6, K=3, missing=0.7)
    est.fit(crowd)
    np.testing.assert_allclose(est.posterior_.sum(axis=1), 1.0, atol=1e-12)
    assert (est.posterior_ >= 0).all()
    np.testing.assert_array_equal(est.predict(), np.argmax(est.posterior_, axis=1))
    np.testing.assert_array_equal(est.fit_predict(crowd), est.labels_)
    np.testing.assert_array_equal(est.predict_proba(), est.posterior_)
    # new labels, weighted with the fitted skills
    new = np.array([[0, 1, 1, -1, -1, -1], [2, -1, -1, -1, 2, 0]])
    skills = est.skills_
    want = loop_vote([(0, 0, 0), (0, 1, 1), (0, 2, 1), (1, 0, 2), (1, 4, 2), (1, 5, 0)], 2, 3,
                     skills, est.weights)
    np.testing.assert_allclose(est.predict_proba(new), want, atol=1e-12)
    assert est.predict(new).tolist() == [first_max(row) for row in want]
    with pytest.raises(ValueError, match="out of range"):
        est.predict(np.array([[3, 0, 0, 0, 0, 0]]))


def test_new_labels_need_known_workers():
    w = Wawa().fit(np.array([[0, 1], [1, 1]]))
    with pytest.raises(ValueError, match="unknown expert"):
        w.predict((np.array([0]), np.array([4]), np.array([1])))


# -- pandas ---------------------------------------------------------------------------------
def _frame(pd, labels, names=("no", "yes", "maybe")):
    rows = [(f"t{i}", f"w{j}", names[l]) for i, row in enumerate(labels)
            for j, l in enumerate(row) if l >= 0]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def test_dataframe_in_series_out():
    pd = pytest.importorskip("pandas")
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    df = _frame(pd, labels)
    w = Wawa().fit(df)
    assert isinstance(w.labels_, pd.Series) and isinstance(w.skills_, pd.Series)
    assert w.labels_.to_dict() == {"t0": "no", "t1": "yes", "t2": "no", "t3": "yes"}
    assert w.skills_.to_dict() == {"w0": 1.0, "w1": 0.75, "w2": 0.5}
    assert list(w.probas_.columns) == ["no", "yes"]
    z = ZeroBasedSkill().fit(df)
    assert z.skills_.to_dict() == {"w0": 1.0, "w1": 0.75, "w2": 0.5}
    assert z.labels_.index.name == "task"
    # numpy in, numpy out
    assert isinstance(Wawa().fit(labels).labels_, np.ndarray)
    # predicting new labels by id, with only some of the classes and workers
    new = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["w2", "w0", "w1"],
                        "label": ["yes", "no", "yes"]})
    np.testing.assert_allclose(w.predict_proba(new), [[1 / 1.5, 0.5 / 1.5], [0, 1]])
    with pytest.raises(ValueError, match="unknown worker"):
        w.predict(pd.DataFrame({"task": ["a"], "worker": ["w7"], "label": ["yes"]}))


def test_weighted_vote_takes_skills_by_worker_id():
    pd = pytest.importorskip("pandas")
    labels = np.array([[0, 1, 1], [0, 0, 1]])
    df = _frame(pd, labels)
    by_id = pd.Series({"w2": 0.6, "w0": 0.9, "w1": 0.6, "w9": 0.1})  # any order, extras ok
    wmv = WeightedMajorityVote(by_id).fit(df)
    want = WeightedMajorityVote([0.9, 0.6, 0.6]).fit(labels)
    np.testing.assert_allclose(wmv.posterior_, want.posterior_)
    assert wmv.labels_.to_dict() == {"t0": "no", "t1": "no"}
    assert wmv.skills_.to_dict() == {"w0": 0.9, "w1": 0.6, "w2": 0.6}
    # a dict works too, and by index for numpy input
    wmv = WeightedMajorityVote({"w0": 0.9, "w1": 0.6, "w2": 0.6}).fit(df)
    np.testing.assert_allclose(wmv.posterior_, want.posterior_)
    wmv = WeightedMajorityVote({0: 0.9, 1: 0.6, 2: 0.6}).fit(labels)
    np.testing.assert_allclose(wmv.posterior_, want.posterior_)
    # new labels by id, from some of the workers: weighted with the fitted skills
    new = pd.DataFrame({"task": ["a", "a"], "worker": ["w1", "w2"], "label": ["yes", "yes"]})
    wmv = WeightedMajorityVote(by_id).fit(df)
    np.testing.assert_allclose(wmv.predict_proba(new), [[1 / 3.25, 2.25 / 3.25]])  # 1.5^2 : 1
    with pytest.raises(ValueError, match=r"no skill for worker\(s\) \['w1'\]"):
        WeightedMajorityVote(pd.Series({"w0": 0.9, "w2": 0.6})).fit(df)
    with pytest.raises(ValueError, match="duplicate worker ids"):
        WeightedMajorityVote(pd.Series([0.9, 0.6, 0.6, 0.5],
                                       index=["w0", "w1", "w2", "w0"])).fit(df)
    with pytest.raises(ValueError, match="must be a number"):
        WeightedMajorityVote({"w0": "high", "w1": 0.6, "w2": 0.6}).fit(df)


# -- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("est, labels, match", [
    (WeightedMajorityVote([0.5, 0.5], weights="cubic"), [[0, 1]], "weights must be"),
    (WeightedMajorityVote([0.5, 0.5, 0.5]), [[0, 1]], r"shape \(2,\)"),
    (WeightedMajorityVote([[0.5, 0.5]]), [[0, 1]], r"shape \(2,\)"),
    (WeightedMajorityVote([0.5, 1.5]), [[0, 1]], r"accuracies in \[0, 1\]"),
    (WeightedMajorityVote([0.5, -0.1], weights="linear"), [[0, 1]], "non-negative"),
    (WeightedMajorityVote([0.5, np.nan]), [[0, 1]], "NaN"),
    (WeightedMajorityVote("high"), [[0, 1]], "skills must be an array"),
    (WeightedMajorityVote([0.5, 0.5]), [[0, np.nan]], "NaN"),
    (WeightedMajorityVote([0.5, 0.5]), np.zeros((0, 2)), "empty"),
    (Wawa(), [[-1, -1]], "no label at all"),
    (Wawa(), None, "labels is None"),
    (Wawa(), [0, 1, 1], "2-D"),
    (Wawa(weights=None), [[0, 1]], "weights must be"),
    (ZeroBasedSkill(), [[0, 3]], "n_classes|out of range"),
    (ZeroBasedSkill(max_iter=-1), [[0, 1]], "max_iter"),
    (ZeroBasedSkill(lr_init=0.0), [[0, 1]], "lr_init"),
    (ZeroBasedSkill(lr_init=1.5), [[0, 1]], "lr_init"),
    (ZeroBasedSkill(lr_steps_to_reduce=0), [[0, 1]], "lr_steps_to_reduce"),
    (ZeroBasedSkill(lr_reduce_factor=2.0), [[0, 1]], "lr_reduce_factor"),
    (ZeroBasedSkill(tol=-1.0), [[0, 1]], "tol"),
    (ZeroBasedSkill(weights="log"), [[0, 1]], "weights must be"),
])
def test_bad_input(est, labels, match):
    if "out of range" in match:
        est = type(est)(**{**est.get_params(), "n_classes": 3})
    with pytest.raises(ValueError, match=match):
        est.fit(labels)


def test_not_fitted_and_params():
    for est in (WeightedMajorityVote(), Wawa(), ZeroBasedSkill()):
        with pytest.raises(NotFittedError):
            est.predict()
        with pytest.raises(NotFittedError):
            est.labels_
    assert ZeroBasedSkill().get_params() == dict(n_classes=None, max_iter=100, lr_init=1.0,
                                                 lr_steps_to_reduce=20, lr_reduce_factor=0.5,
                                                 tol=1e-5, weights="linear")
    assert repr(Wawa()) == "Wawa(n_classes=None, weights='linear')"
    assert WeightedMajorityVote().get_params() == dict(skills=None, n_classes=None,
                                                       weights="log-odds")
    crowd = from_dense(np.array([[0, 1], [1, 1]]))
    assert Wawa(n_classes=4).fit(crowd).posterior_.shape == (2, 4)
