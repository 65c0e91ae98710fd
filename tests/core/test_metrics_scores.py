"""Tests of the scores of aggregates, workers and posteriors (``crowdlearn.metrics.scores``):
crowd-kit's consistency and accuracy on aggregates, Raykar and Yu's spammer score, the
entropy of posteriors.

Every number is checked against a hand computation, a brute-force loop written from the
definition, or crowd-kit's own test values (crowd-kit's tests/metrics/test_metrics.py and
its toy crowd in tests/conftest.py)."""

import math

import numpy as np
import pandas as pd
import pytest

from crowdlearn import (GLAD, MACE, DawidSkene, MajorityVote, MultiLabelDawidSkene,
                        OneCoinDawidSkene, accuracy_on_aggregates, consistency,
                        posterior_entropy, spammer_score)
from crowdlearn.aggregation.multilabel import from_quadruples
from crowdlearn.exceptions import NotFittedError
from crowdlearn.labels import from_triples
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

from metrics_crowds import quiet_fit, random_crowd


# -- consistency -------------------------------------------------------------------------------
def toy_answers():
    """crowd-kit's toy_answers_df (tests/conftest.py)."""
    rows = [["w1", "t1", "no"], ["w1", "t2", "yes"], ["w1", "t3", "yes"], ["w1", "t4", "yes"],
            ["w1", "t5", "yes"], ["w2", "t1", "yes"], ["w2", "t2", "yes"], ["w2", "t3", "no"],
            ["w2", "t4", "yes"], ["w2", "t5", "no"], ["w3", "t2", "yes"], ["w3", "t3", "no"],
            ["w3", "t4", "yes"], ["w3", "t5", "no"], ["w4", "t1", "yes"], ["w4", "t2", "no"],
            ["w4", "t3", "yes"], ["w4", "t4", "yes"], ["w4", "t5", "no"], ["w5", "t1", "no"],
            ["w5", "t2", "no"], ["w5", "t3", "no"], ["w5", "t4", "yes"], ["w5", "t5", "no"]]
    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def test_consistency_gives_crowd_kits_number():
    df = toy_answers()
    # crowd-kit's MajorityVote breaks the tie on t1 for the first label ('no'), as "lowest"
    mv = MajorityVote(tie_break="lowest").fit(df)
    assert consistency(mv, df) == pytest.approx(0.9384615384615385, abs=1e-12)
    by_task = consistency(mv, df, by_task=True)
    assert list(by_task.index) == ["t1", "t2", "t3", "t4", "t5"]
    assert by_task.mean() == pytest.approx(consistency(mv, df), abs=1e-15)
    # t1: labels no (w1, 0.6), yes (w2, 0.8), yes (w4, 0.4), no (w5, 0.8); aggregate 'no'
    no, yes = 0.6 * 0.2 * 0.6 * 0.8, 0.4 * 0.8 * 0.4 * 0.2
    assert by_task["t1"] == pytest.approx(no / (no + yes), abs=1e-12)


def brute_consistency(crowd, conf, aggregated):
    out = []
    for i in range(crowd.n_items):
        mine = np.flatnonzero(crowd.item == i)
        if mine.size == 0:
            out.append(np.nan)
            continue
        like = [np.prod([conf[crowd.expert[t], k, crowd.label[t]] for t in mine])
                for k in range(crowd.n_classes)]
        out.append(like[aggregated[i]] / sum(like) if sum(like) > 0 else 0.0)
    return np.array(out)


@pytest.mark.parametrize("seed", range(4))
def test_consistency_matches_brute_force(seed):
    crowd, _ = random_crowd(seed)
    rng = np.random.default_rng(seed)
    J, K, n = crowd.n_experts, crowd.n_classes, crowd.n_items
    conf = rng.dirichlet(np.ones(K), size=(J, K))
    posterior = rng.dirichlet(np.ones(K), size=n)
    aggregated = posterior.argmax(axis=1)
    expected = brute_consistency(crowd, conf, aggregated)
    got = consistency(posterior, crowd, skills=conf, by_task=True)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert consistency(posterior, crowd, skills=conf) == pytest.approx(
        np.nanmean(expected), abs=1e-12)
    # one accuracy per worker: the one-coin matrices
    acc = rng.uniform(0.3, 1.0, J)
    got = consistency(posterior, crowd, skills=acc, by_task=True)
    np.testing.assert_allclose(got, brute_consistency(crowd, one_coin_confusion(acc, K),
                                                      aggregated), atol=1e-12)
    finite = got[~np.isnan(got)]
    assert ((finite >= 0) & (finite <= 1)).all()


def test_consistency_of_fitted_models_and_invariance():
    sim = simulate_crowd(120, one_coin_confusion([0.9, 0.8, 0.7, 0.55], 3), missing=0.3,
                         random_state=5)
    crowd = sim.labels
    oc = quiet_fit(OneCoinDawidSkene(), crowd)
    # a one-coin model: its confusion matrices are its accuracies'
    assert consistency(oc, crowd) == pytest.approx(
        consistency(oc.posterior_, crowd, skills=oc.accuracy_), abs=1e-12)
    ds = quiet_fit(DawidSkene(), crowd)
    value = consistency(ds, crowd)
    assert 0.0 <= value <= 1.0
    # the same model on a DataFrame of the same labels with string ids
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in crowd.item],
                       "worker": [f"w{j}" for j in crowd.expert], "label": crowd.label})
    ds_df = quiet_fit(DawidSkene(), df)
    assert consistency(ds_df, df) == pytest.approx(
        consistency(ds_df.posterior_, df, skills=ds_df.confusion_), abs=1e-12)
    assert consistency(ds_df, df) == pytest.approx(value, abs=1e-5)   # EM's tolerance
    # workers relabelled, their skills with them: nothing changes
    perm = np.array([2, 0, 3, 1])
    moved = from_triples(crowd.item, perm[crowd.expert], crowd.label, n_items=120,
                         n_experts=4, n_classes=3)
    skills = np.empty(4)
    skills[perm] = oc.accuracy_
    assert consistency(oc.posterior_, moved, skills=skills) == pytest.approx(
        consistency(oc.posterior_, crowd, skills=oc.accuracy_), abs=1e-12)
    # skills as a Series by worker id
    series = pd.Series(oc.accuracy_, index=[f"w{j}" for j in range(4)])[::-1]
    assert consistency(ds_df.posterior_, df, skills=series) == pytest.approx(
        consistency(ds_df.posterior_, df, skills=oc.accuracy_), abs=1e-12)


def test_consistency_edge_cases():
    # two workers of skill 1 who disagree: probability 0 under every class -> 0
    dense = np.array([[0, 1], [1, 1], [-1, -1]])
    post = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    by_task = consistency(post, dense, skills=[1.0, 1.0], by_task=True)
    assert by_task[0] == 0.0 and by_task[1] == 1.0 and np.isnan(by_task[2])
    assert consistency(post, dense, skills=[1.0, 1.0]) == 0.5   # the unlabelled item left out
    # skill 1/2 with two classes: no information, 1/2 everywhere
    np.testing.assert_allclose(consistency(post, dense, skills=[0.5, 0.5], by_task=True)[:2],
                               0.5)


def test_consistency_bad_input():
    df = toy_answers()
    mv = MajorityVote(tie_break="lowest").fit(df)
    post = np.array([[0.9, 0.1], [0.2, 0.8]])
    dense = np.array([[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="skills="):
        consistency(post, dense)
    with pytest.raises(ValueError, match="real numbers|numeric|strings"):
        consistency(post, dense, skills=["0.9", "0.8"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        consistency(post, dense, skills=[1.2, 0.8])
    with pytest.raises(ValueError, match="one accuracy per worker"):
        consistency(post, dense, skills=[0.9, 0.8, 0.7])
    with pytest.raises(ValueError, match="shape"):
        consistency(post, dense, skills=np.ones((2, 3, 3)) / 3)
    with pytest.raises(ValueError, match="sum to 1"):
        consistency(post, dense, skills=np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="by_task"):
        consistency(post, dense, skills=[0.9, 0.8], by_task="yes")
    with pytest.raises(ValueError, match="fitted on"):
        consistency(mv, df[df.task != "t3"])
    with pytest.raises(ValueError, match="posterior has shape"):
        consistency(post, np.array([[0, 0], [1, 1], [0, 1]]), skills=[0.9, 0.8])
    with pytest.raises(ValueError, match="Series by worker id"):
        consistency(post, dense, skills=pd.Series([0.9, 0.8]))
    glad = quiet_fit(GLAD(), df)
    with pytest.raises(ValueError, match="GLAD"):
        consistency(glad, df)
    with pytest.raises(NotFittedError):
        consistency(DawidSkene(), df)
    multi = from_quadruples([0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [1, 1, 0, 1],
                            n_classes=[2])
    with pytest.raises(ValueError, match="one label per item"):
        consistency(quiet_fit(MultiLabelDawidSkene(), multi), multi)


# -- accuracy on aggregates --------------------------------------------------------------------
def test_accuracy_on_aggregates_gives_crowd_kits_numbers():
    df = toy_answers()
    mv = MajorityVote(tie_break="lowest").fit(df)
    expected = pd.Series([0.6, 0.8, 1.0, 0.4, 0.8],
                         index=pd.Index(["w1", "w2", "w3", "w4", "w5"], name="worker"))
    for aggregated in (mv, mv.labels_):
        assert accuracy_on_aggregates(df, aggregated) == pytest.approx(0.7083333333333334,
                                                                       abs=1e-12)
        got = accuracy_on_aggregates(df, aggregated, by="worker")
        pd.testing.assert_series_equal(got, expected, check_names=False)
    # crowd-kit's get_accuracy against the gold of t1 and t2: 5/9 (by worker .5 1 1 .5 0)
    gold = pd.Series({"t1": "yes", "t2": "yes"})
    assert accuracy_on_aggregates(df, gold) == pytest.approx(5 / 9, abs=1e-12)
    np.testing.assert_allclose(accuracy_on_aggregates(df, gold, by="worker").to_numpy(),
                               [0.5, 1.0, 1.0, 0.5, 0.0])


@pytest.mark.parametrize("seed", range(4))
def test_accuracy_on_aggregates_matches_brute_force(seed):
    crowd, _ = random_crowd(seed)
    rng = np.random.default_rng(seed)
    agg = rng.integers(-1, crowd.n_classes, crowd.n_items)
    agg[0] = 0
    scored = [(e, i, l == agg[i]) for i, e, l in zip(crowd.item, crowd.expert, crowd.label)
              if agg[i] >= 0]
    if not scored:
        return
    overall = sum(h for _, _, h in scored) / len(scored)
    assert accuracy_on_aggregates(crowd, agg) == pytest.approx(overall, abs=1e-12)
    per_worker = accuracy_on_aggregates(crowd, agg, by="worker")
    per_item = accuracy_on_aggregates(crowd, agg, by="task")
    for j in range(crowd.n_experts):
        mine = [h for e, _, h in scored if e == j]
        assert (per_worker.mask[j] if not mine   # no label scored: masked, never NaN
                else per_worker[j] == pytest.approx(np.mean(mine), abs=1e-12))
    for i in range(crowd.n_items):
        mine = [h for _, u, h in scored if u == i]
        assert (per_item.mask[i] if not mine
                else per_item[i] == pytest.approx(np.mean(mine), abs=1e-12))
    assert not np.isnan(per_worker.data).any() and not np.isnan(per_item.data).any()
    # relabelling the workers permutes their scores
    perm = rng.permutation(crowd.n_experts)
    moved = from_triples(crowd.item, perm[crowd.expert], crowd.label, n_items=crowd.n_items,
                         n_experts=crowd.n_experts, n_classes=crowd.n_classes)
    np.testing.assert_array_equal(accuracy_on_aggregates(moved, agg, by="worker")[perm],
                                  per_worker)


def test_accuracy_on_aggregates_bad_input():
    df = toy_answers()
    dense = np.array([[0, 0], [1, 0]])
    with pytest.raises(ValueError, match="by must be"):
        accuracy_on_aggregates(dense, [0, 1], by="label")
    with pytest.raises(ValueError, match="string"):
        accuracy_on_aggregates(dense, "01")
    with pytest.raises(ValueError, match="one class index per item"):
        accuracy_on_aggregates(dense, [0, 1, 1])
    with pytest.raises(ValueError):
        accuracy_on_aggregates(dense, ["0", "1"])
    with pytest.raises(ValueError, match="out of range|n_classes"):
        accuracy_on_aggregates(dense, [0, 2])
    with pytest.raises(ValueError, match="no label"):
        accuracy_on_aggregates(dense, [-1, -1])
    with pytest.raises(ValueError, match="not a class"):
        accuracy_on_aggregates(df, pd.Series({"t1": "maybe"}))
    with pytest.raises(ValueError, match="task ids"):
        accuracy_on_aggregates(dense, pd.Series([0, 1]))


# -- spammer score -----------------------------------------------------------------------------
def brute_spam(A):
    K = A.shape[0]
    return sum(((A[c] - A[d]) ** 2).sum() for c in range(K) for d in range(c + 1, K)) \
        / (K * (K - 1))


def test_spammer_score_bounds_and_hand_values():
    spammer = np.tile([0.7, 0.2, 0.1], (3, 1))
    assert spammer_score(spammer) == pytest.approx(0.0, abs=1e-15)
    assert spammer_score(np.eye(3)) == 1.0
    assert spammer_score(np.eye(3)[[2, 0, 1]]) == 1.0     # a permutation: informative
    # binary one-coin p: rows (p, 1-p), (1-p, p): 2 (2p - 1)^2 / 2
    for p in (0.5, 0.6, 0.9):
        A = np.array([[p, 1 - p], [1 - p, p]])
        assert spammer_score(A) == pytest.approx((2 * p - 1) ** 2, abs=1e-12)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_spammer_score_matches_brute_force_and_ignores_order(K):
    rng = np.random.default_rng(K)
    conf = rng.dirichlet(np.ones(K) * 0.7, size=(6, K))
    scores = spammer_score(conf)
    np.testing.assert_allclose(scores, [brute_spam(A) for A in conf], atol=1e-12)
    assert ((scores >= 0) & (scores <= 1)).all()
    rows, cols = rng.permutation(K), rng.permutation(K)
    np.testing.assert_allclose(spammer_score(conf[:, rows]), scores, atol=1e-12)
    np.testing.assert_allclose(spammer_score(conf[:, rows][:, :, cols]), scores, atol=1e-12)
    order = rng.permutation(6)
    np.testing.assert_allclose(spammer_score(conf[order]), scores[order], atol=1e-12)


def test_spammer_score_of_fitted_models():
    conf = one_coin_confusion([0.9, 0.85, 0.8, 0.75], 3)
    conf = np.concatenate([conf, np.tile([0.6, 0.3, 0.1], (1, 3, 1))])  # worker 4 spams
    sim = simulate_crowd(400, conf, random_state=2)
    ds = quiet_fit(DawidSkene(), sim.labels)
    scores = spammer_score(ds)
    np.testing.assert_allclose(scores, [brute_spam(A) for A in ds.confusion_], atol=1e-12)
    assert scores.argmin() == 4 and scores[4] < 0.05 and scores[:4].min() > 0.3
    df = pd.DataFrame({"task": sim.labels.item, "worker": [f"w{j}" for j in sim.labels.expert],
                       "label": sim.labels.label})
    by_worker = spammer_score(quiet_fit(DawidSkene(), df))
    assert list(by_worker.index) == [f"w{j}" for j in range(5)]
    assert by_worker.name == "spam_score"
    assert spammer_score(quiet_fit(MACE(), sim.labels)).shape == (5,)


def test_spammer_score_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        spammer_score(np.ones((2, 2)))
    with pytest.raises(ValueError, match="real numbers|strings|numeric"):
        spammer_score(np.array([["1", "0"], ["0", "1"]]))
    with pytest.raises(ValueError, match="shape"):
        spammer_score(np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="square"):
        spammer_score(np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="negative"):
        spammer_score(np.array([[1.5, -0.5], [0, 1]]))
    with pytest.raises(ValueError, match="confusion_"):
        spammer_score(quiet_fit(GLAD(), np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0]])))
    with pytest.raises(NotFittedError):
        spammer_score(DawidSkene())


# -- posterior entropy -------------------------------------------------------------------------
def test_posterior_entropy_hand_values():
    q = np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75], [0.9, 0.1]])
    h = posterior_entropy(q)
    expected = [0.0, 1.0, -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)),
                -(0.9 * math.log2(0.9) + 0.1 * math.log2(0.1))]
    np.testing.assert_allclose(h, expected, atol=1e-12)
    assert h[2] == pytest.approx(0.811278124459, abs=1e-10)
    np.testing.assert_allclose(posterior_entropy(q, base=math.e), np.array(expected) * math.log(2),
                               atol=1e-12)
    q4 = np.array([[0.25] * 4, [1, 0, 0, 0], [0.5, 0.5, 0, 0]])
    np.testing.assert_allclose(posterior_entropy(q4), [2.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(posterior_entropy(q4, normalized=True), [1.0, 0.0, 0.5],
                               atol=1e-12)
    np.testing.assert_allclose(posterior_entropy(q4, base=10, normalized=True), [1.0, 0.0, 0.5],
                               atol=1e-12)


def test_posterior_entropy_of_models_and_frames():
    sim = simulate_crowd(60, one_coin_confusion([0.8, 0.7, 0.6], 3), random_state=0)
    # a fixed number of EM steps, so the array and DataFrame fits below compare the same
    # computation whatever order the labels are summed in
    ds = quiet_fit(DawidSkene(tol=0.0, max_iter=20), sim.labels)
    assert ds.n_iter_ == 20
    h = posterior_entropy(ds)
    assert isinstance(h, np.ndarray) and h.shape == (60,)
    np.testing.assert_allclose(h, posterior_entropy(ds.posterior_))
    assert ((h >= 0) & (h <= math.log2(3) + 1e-12)).all()
    # fitted on a DataFrame: a Series indexed by task id
    item, worker, label = sim.labels.to_table()
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in item], "worker": worker,
                       "label": np.array(["a", "b", "c"])[label]})
    ds_df = quiet_fit(DawidSkene(tol=0.0, max_iter=20), df)
    assert ds_df.n_iter_ == 20
    hs = posterior_entropy(ds_df)
    assert isinstance(hs, pd.Series) and hs.index.name == "task"
    assert hs.index[0] == "t000" and len(hs) == 60
    np.testing.assert_allclose(hs.to_numpy(), h, atol=1e-8)


def test_posterior_entropy_validation():
    with pytest.raises(ValueError, match="sum to 1"):
        posterior_entropy(np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match="negative"):
        posterior_entropy(np.array([[1.5, -0.5]]))
    with pytest.raises(ValueError, match="2-dimensional"):
        posterior_entropy(np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="base"):
        posterior_entropy(np.array([[0.5, 0.5]]), base=1)
    with pytest.raises(ValueError, match="base"):
        posterior_entropy(np.array([[0.5, 0.5]]), base=-2)
    with pytest.raises(NotFittedError):
        posterior_entropy(DawidSkene())
