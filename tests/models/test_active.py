"""Tests of where to spend the next label (crowdlearn.active): the expected gains checked by
hand, against a brute-force loop over the possible labels, and their laws."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from crowdlearn import active
from crowdlearn.active import expected_label_gains, labelled_pairs, recommend_labels
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.aggregation.majority_vote import MajorityVote
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.labels import from_triples
from crowdlearn.simulate import random_confusion, simulate_crowd


def fake_model(posterior, confusion):
    """A 'fitted model' that is only its posterior and its confusion matrices."""
    return SimpleNamespace(posterior_=np.asarray(posterior, dtype=float),
                           confusion_=np.asarray(confusion, dtype=float))


def one_label(n_items, n_experts, item=0, expert=0, n_classes=2):
    """Labels in which only ``expert`` labelled ``item``."""
    return from_triples([item], [expert], [0], n_items=n_items, n_experts=n_experts,
                        n_classes=n_classes)


def gains_table(gains, n_items, n_workers):
    """The gains as an (n_items, n_workers) table, NaN where the pair is not a candidate."""
    table = np.full((n_items, n_workers), np.nan)
    table[gains.item, gains.worker] = gains.gain
    return table


def entropy_nats(p):  # the book's unit (issue 41: the gains were in bits)
    return -sum(x * math.log(x) for x in p if x > 0)


# -- (a) a case computed by hand -------------------------------------------------------------
def test_toy_case_by_hand():
    M = [[0.8, 0.2], [0.3, 0.7]]       # worker 0; worker 1 has the label
    model = fake_model([[0.5, 0.5]], [M, np.eye(2)])
    labels = one_label(1, 2, expert=1)
    # before: error 1 - 0.5; label 0 with prob .5*.8 + .5*.3 = .55, posterior (.4, .15)/.55;
    # label 1 with prob .45, posterior (.1, .35)/.45; after: error .55*(.15/.55) + .45*(.1/.45)
    before, after = 0.5, 0.15 + 0.10
    err = expected_label_gains(model, labels, criterion="error")
    assert err.item.tolist() == [0] and err.worker.tolist() == [0]
    assert err.gain[0] == pytest.approx(before - after, abs=1e-14)
    ent_after = 0.55 * entropy_nats([0.4 / 0.55, 0.15 / 0.55]) \
        + 0.45 * entropy_nats([0.1 / 0.45, 0.35 / 0.45])
    ent = expected_label_gains(model, labels, criterion="entropy")
    assert ent.gain[0] == pytest.approx(math.log(2) - ent_after, abs=1e-14)  # H(.5, .5)
    assert 0 < ent.gain[0] < math.log(2)


# -- (b) against a loop over the K possible labels -------------------------------------------
def brute_force(Q, M, criterion):
    """Gain of every (item, worker) pair: each label y written out, Bayes' rule by hand."""
    def crit(q):
        return 1 - max(q) if criterion == "error" else entropy_nats(q)

    n, K = Q.shape
    out = np.zeros((n, M.shape[0]))
    for i in range(n):
        for r in range(M.shape[0]):
            expected_after = 0.0
            for y in range(K):
                p_y = sum(Q[i, c] * M[r, c, y] for c in range(K))
                if p_y == 0:
                    continue
                new = [Q[i, c] * M[r, c, y] / p_y for c in range(K)]
                expected_after += p_y * crit(new)
            out[i, r] = crit(Q[i]) - expected_after
    return out


def random_model(rng, n_items, n_workers, K):
    Q = rng.dirichlet(np.full(K, 0.7), size=n_items)
    M = rng.dirichlet(np.ones(K), size=(n_workers, K))
    return fake_model(Q, M)


@pytest.mark.parametrize("criterion", ["error", "entropy"])
@pytest.mark.parametrize("seed, K", [(0, 2), (1, 3), (2, 4), (3, 5)])
def test_vectorised_gains_equal_the_brute_force(seed, K, criterion):
    rng = np.random.default_rng(seed)
    model = random_model(rng, 7, 4, K)
    labels = one_label(7, 4, item=3, expert=2, n_classes=K)
    table = gains_table(expected_label_gains(model, labels, criterion=criterion), 7, 4)
    expected = brute_force(model.posterior_, model.confusion_, criterion)
    expected[3, 2] = np.nan  # labelled already: not a candidate
    np.testing.assert_allclose(table, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("criterion", ["error", "entropy"])
def test_blocks_of_items_give_the_same_gains(monkeypatch, criterion):
    rng = np.random.default_rng(5)
    model = random_model(rng, 30, 6, 3)
    labels = one_label(30, 6, n_classes=3)
    whole = expected_label_gains(model, labels, criterion=criterion)
    monkeypatch.setattr(active, "_BLOCK", 20)  # one item (6 x 3 x 3 > 20) per block
    blocks = expected_label_gains(model, labels, criterion=criterion)
    np.testing.assert_allclose(blocks.gain, whole.gain, rtol=1e-12, atol=1e-15)
    assert blocks.item.tolist() == whole.item.tolist()


def test_a_fitted_dawid_skene_against_the_brute_force():
    sim = simulate_crowd(60, random_confusion(5, 3, random_state=0), missing=0.5,
                         random_state=1)
    model = DawidSkene().fit(sim.labels)
    done = labelled_pairs(model, sim.labels)
    assert done.sum() == np.unique(sim.labels.item * 5 + sim.labels.expert).size
    for criterion in ("error", "entropy"):
        table = gains_table(expected_label_gains(model, sim.labels, criterion=criterion),
                            60, 5)
        expected = brute_force(model.posterior_, model.confusion_, criterion)
        expected[done] = np.nan
        np.testing.assert_allclose(table, expected, rtol=1e-9, atol=1e-12)


# -- (c) information never hurts in expectation ----------------------------------------------
@pytest.mark.parametrize("criterion", ["error", "entropy"])
def test_gains_are_never_negative(criterion):
    rng = np.random.default_rng(11)
    for K in (2, 3, 6):
        model = random_model(rng, 200, 8, K)
        gains = expected_label_gains(model, one_label(200, 8, n_classes=K),
                                     criterion=criterion)
        assert len(gains) == 200 * 8 - 1
        assert gains.gain.min() >= -1e-12
        assert np.all(np.diff(gains.score) <= 0)  # best first


# -- (d) labelled pairs are never recommended ------------------------------------------------
def test_pairs_already_labelled_are_never_recommended():
    sim = simulate_crowd(80, random_confusion(6, 2, random_state=2), missing=0.6,
                         random_state=3)
    model = DawidSkene().fit(sim.labels)
    given = set(zip(sim.labels.item.tolist(), sim.labels.expert.tolist()))
    everything = recommend_labels(model, sim.labels, budget=10 ** 6, one_per_item=False)
    assert len(everything) == 80 * 6 - len(given)
    assert not given & set(zip(everything.item.tolist(), everything.worker.tolist()))
    best = recommend_labels(model, sim.labels, budget=30)
    assert len(best) == 30 and np.unique(best.item).size == 30  # one per item
    assert not given & set(zip(best.item.tolist(), best.worker.tolist()))


def test_a_dataframe_is_matched_by_id_and_the_frame_has_the_ids():
    pd = pytest.importorskip("pandas")
    sim = simulate_crowd(40, random_confusion(4, 2, random_state=4), missing=0.5,
                         random_state=5)
    df = pd.DataFrame({"task": [f"t{i}" for i in sim.labels.item],
                       "worker": [f"w{j}" for j in sim.labels.expert],
                       "label": np.array(["no", "yes"])[sim.labels.label]})
    model = DawidSkene().fit(df)
    frame = recommend_labels(model, df, budget=10 ** 6, one_per_item=False).to_frame()
    assert list(frame.columns) == ["task", "worker", "gain", "score"]
    given = set(zip(df["task"], df["worker"]))
    assert len(frame) == len(model.item_ids_) * 4 - len(given)  # items with a label
    assert not given & set(zip(frame["task"], frame["worker"]))
    only = expected_label_gains(model, df, workers=["w1", "w3"])
    assert set(model.expert_ids_[only.worker].tolist()) <= {"w1", "w3"}
    with pytest.raises(ValueError, match="unknown worker"):
        expected_label_gains(model, df, workers=["w9"])


# -- (e) a perfect worker and an uninformative one -------------------------------------------
def test_a_perfect_worker_removes_all_the_doubt_and_a_coin_none():
    Q = [[0.3, 0.7], [0.25, 0.75]]
    model = fake_model(Q, [np.eye(2), [[0.6, 0.4], [0.6, 0.4]], np.eye(2)])
    labels = one_label(2, 3, item=0, expert=2)
    table = gains_table(expected_label_gains(model, labels), 2, 3)
    assert table[0, 0] == pytest.approx(0.3, abs=1e-15)  # the whole error, 1 - 0.7
    assert table[1, 0] == pytest.approx(0.25, abs=1e-15)
    assert table[0, 1] == pytest.approx(0.0, abs=1e-15)
    assert table[1, 1] == pytest.approx(0.0, abs=1e-15)
    ent = gains_table(expected_label_gains(model, labels, criterion="entropy"), 2, 3)
    assert ent[0, 0] == pytest.approx(entropy_nats([0.3, 0.7]), abs=1e-14)
    assert ent[0, 1] == pytest.approx(0.0, abs=1e-15)
    best = recommend_labels(model, labels, budget=2)
    assert best.item.tolist() == [0, 1] and best.worker.tolist() == [0, 0]


def test_cost_divides_the_gain_and_ranks_by_gain_per_cost():
    model = fake_model([[0.5, 0.5]], [np.eye(2), [[0.9, 0.1], [0.1, 0.9]], np.eye(2)])
    labels = one_label(1, 3, expert=2)
    plain = recommend_labels(model, labels)
    assert plain.worker.tolist() == [0]  # the perfect worker
    cheap = recommend_labels(model, labels, cost=[10.0, 1.0, 1.0])
    assert cheap.worker.tolist() == [1]
    assert cheap.gain[0] == pytest.approx(0.4) and cheap.score[0] == pytest.approx(0.4)
    both = expected_label_gains(model, labels, cost={0: 10.0, 1: 1.0, 2: 1.0})
    np.testing.assert_allclose(both.score, [0.4, 0.05])
    halved = expected_label_gains(model, labels, cost=2)
    np.testing.assert_allclose(halved.score, halved.gain / 2)
    only = expected_label_gains(model, labels, workers=[1, 0], cost=[1.0, 10.0])
    np.testing.assert_allclose(only.score, [0.4, 0.05])
    with pytest.raises(ValueError, match="no entry for worker"):
        expected_label_gains(model, labels, cost={0: 1.0})


def test_one_coin_and_restricted_workers():
    sim = simulate_crowd(50, random_confusion(5, 2, random_state=6), missing=0.5,
                         random_state=7)
    model = OneCoinDawidSkene().fit(sim.labels)
    gains = expected_label_gains(model, sim.labels, workers=[1, 4], cost=[1.0, 2.0])
    assert set(gains.worker.tolist()) <= {1, 4}
    np.testing.assert_allclose(gains.score[gains.worker == 4], gains.gain[gains.worker == 4] / 2)


# -- (f) bad input ----------------------------------------------------------------------------
def test_bad_input_is_refused():
    sim = simulate_crowd(20, random_confusion(3, 2, random_state=8), random_state=9)
    fitted = DawidSkene().fit(sim.labels)
    with pytest.raises(ValueError, match="not fitted"):
        expected_label_gains(DawidSkene(), sim.labels)
    with pytest.raises(ValueError, match="no confusion_"):
        expected_label_gains(MajorityVote().fit(sim.labels), sim.labels)
    with pytest.raises(ValueError, match="confusion_ must have shape"):
        expected_label_gains(fake_model([[0.5, 0.5]], np.ones((2, 3, 3)) / 3), sim.labels)
    with pytest.raises(ValueError, match="posterior_ must have shape"):
        expected_label_gains(fake_model([0.5, 0.5], np.ones((2, 2, 2)) / 2), sim.labels)
    with pytest.raises(ValueError, match="sum to one"):
        expected_label_gains(fake_model([[0.5, 0.6]], np.ones((2, 2, 2)) / 2), sim.labels)
    with pytest.raises(ValueError, match="the model has 1 items"):
        expected_label_gains(fake_model([[0.5, 0.5]], np.ones((3, 2, 2)) / 2), sim.labels)
    for cost in (-1.0, 0, [1.0, -2.0, 1.0], [1.0, 1.0], np.nan, "1", True):
        with pytest.raises(ValueError, match="cost"):
            expected_label_gains(fitted, sim.labels, cost=cost)
    for budget in (0, -3, 1.5, True, "2"):
        with pytest.raises(ValueError, match="budget"):
            recommend_labels(fitted, sim.labels, budget=budget)
    with pytest.raises(ValueError, match="criterion"):
        expected_label_gains(fitted, sim.labels, criterion="variance")
    with pytest.raises(ValueError, match="worker indices"):
        expected_label_gains(fitted, sim.labels, workers=[0, 3])
    with pytest.raises(ValueError, match="more than once"):
        expected_label_gains(fitted, sim.labels, workers=[0, 0])
    with pytest.raises(ValueError, match="one_per_item"):
        recommend_labels(fitted, sim.labels, one_per_item="no")


def test_the_names_are_public():
    import crowdlearn

    for name in ("expected_label_gains", "recommend_labels", "labelled_pairs", "LabelGains"):
        assert getattr(crowdlearn, name) is getattr(active, name)
        assert name in crowdlearn.__all__


# -- (e) no label yet, and replaying a crowd policy against policy ---------------------------
def test_labels_none_makes_every_pair_a_candidate():
    model = fake_model([[0.6, 0.4], [0.5, 0.5]], [np.eye(2), [[0.7, 0.3], [0.3, 0.7]]])
    gains = expected_label_gains(model, None)
    assert len(gains) == 4
    table = gains_table(gains, 2, 2)
    assert table[0, 0] == pytest.approx(0.4, abs=1e-14)   # a perfect worker: all the error
    assert table[1, 1] == pytest.approx(0.2, abs=1e-14)   # .35 + .35 - .5
    # item 1 (0.5, 0.5) with the perfect worker gains 0.5, item 0 with it 0.4
    assert recommend_labels(model, None, budget=2).item.tolist() == [1, 0]


@pytest.fixture(scope="module")
def replay_crowd():
    rng = np.random.default_rng(3)
    sim = simulate_crowd(120, random_confusion(12, 2, random_state=rng), labels_per_item=4,
                         random_state=rng)
    return sim.labels, sim.truth


def test_replay_shapes_pairing_and_reproducibility(replay_crowd):
    labels, truth = replay_crowd
    first = active.replay_policies(labels, truth, n_replays=3, n_rounds=4, per_round=0.25,
                                   random_state=5)
    again = active.replay_policies(labels, truth, n_replays=3, n_rounds=4, per_round=0.25,
                                   random_state=5)
    assert first.policies == active.POLICIES
    np.testing.assert_allclose(first.labels_per_item, [1, 1.25, 1.5, 1.75, 2.0])
    for policy in first.policies:
        acc = first.accuracy[policy]
        assert acc.shape == (3, 5) and ((0 <= acc) & (acc <= 1)).all()
        np.testing.assert_array_equal(acc, again.accuracy[policy])   # same seed, same result
        # every policy starts from the same shuffled crowd in each replay
        np.testing.assert_array_equal(acc[:, 0], first.accuracy["random"][:, 0])
    assert 0.5 < first.whole_crowd <= 1
    summary = first.summary(level=0.9)
    assert list(summary.columns) == ["mean", "low", "high"]
    assert (summary["low"] <= summary["mean"] + 1e-12).all()
    assert (summary["mean"] <= summary["high"] + 1e-12).all()
    assert len(summary) == 4 * 5


def test_replay_buys_only_what_the_crowd_gave(replay_crowd):
    """With every label bought, each policy ends on the whole crowd's fit."""
    labels, truth = replay_crowd
    result = active.replay_policies(labels, truth, n_replays=2, n_rounds=3, per_round=1.0,
                                    random_state=1)
    # three rounds of one label per item buy the 3 labels left of each item's 4
    np.testing.assert_allclose(result.labels_per_item[-1], 4.0)
    for policy in result.policies:
        assert np.allclose(result.accuracy[policy][:, -1], result.whole_crowd)


def test_replay_unknown_truth_is_not_scored(replay_crowd):
    labels, truth = replay_crowd
    partial = truth.copy()
    partial[::2] = -1
    result = active.replay_policies(labels, partial, policies=("random",), n_replays=1,
                                    n_rounds=1, per_round=0.5)
    acc = result.accuracy["random"]
    assert acc.shape == (1, 2)
    # an accuracy over the 60 scored items is a multiple of 1/60
    assert np.allclose(acc * 60, np.round(acc * 60))


@pytest.mark.parametrize("kwargs, message", [
    ({"policies": ("random", "oracle")}, "policies"),
    ({"policies": "random"}, "policies"),
    ({"policies": ("random", "random")}, "policies"),
    ({"n_replays": 0}, "n_replays"),
    ({"n_replays": True}, "n_replays"),
    ({"n_rounds": -1}, "n_rounds"),
    ({"per_round": 0}, "per_round"),
    ({"per_round": "0.1"}, "per_round"),
    ({"per_round": 1.5}, "per_round"),
    ({"criterion": "gini"}, "criterion"),
    ({"random_state": -1}, "random_state"),
    ({"model": 3}, "model"),
    ({"fit": "warm"}, "fit"),
    ({"callback": "print"}, "callback"),
    ({"fit": "partial", "model": lambda: SimpleNamespace(fit=None)}, "partial_fit"),
])
def test_replay_bad_settings(replay_crowd, kwargs, message):
    labels, truth = replay_crowd
    with pytest.raises(ValueError, match=message):
        active.replay_policies(labels, truth, **kwargs)


@pytest.mark.parametrize("truth, message", [
    ("abc", "truth"),
    (np.zeros(5, dtype=int), "120"),
    (np.full(120, -1), "no item"),
    (np.full(120, 0.5), "integer"),
    (np.full(120, 2), "n_classes"),
])
def test_replay_bad_truth(replay_crowd, truth, message):
    labels, _ = replay_crowd
    with pytest.raises(ValueError, match=message):
        active.replay_policies(labels, truth, n_replays=1, n_rounds=1)


def test_summary_bad_level(replay_crowd):
    labels, truth = replay_crowd
    result = active.replay_policies(labels, truth, policies=("random",), n_replays=2,
                                    n_rounds=1)
    for level in (0, 1, "0.9", True):
        with pytest.raises(ValueError, match="level"):
            result.summary(level=level)


@pytest.mark.parametrize("fit", ["partial", "incremental"])
def test_replay_with_partial_fit(replay_crowd, fit):
    """fit='partial' (or 'incremental') continues EM round by round: same start, valid
    accuracies, repeatable; the incremental run's history never decreases."""
    labels, truth = replay_crowd
    kw = dict(n_replays=2, n_rounds=3, per_round=0.25, random_state=2)
    histories = []
    partial = active.replay_policies(labels, truth, fit=fit, **kw, callback=lambda *a: (
        histories.append(a[3].log_likelihood_history_) if a[2] else None))
    refit = active.replay_policies(labels, truth, **kw)
    again = active.replay_policies(labels, truth, fit=fit, **kw)
    for policy in partial.policies:
        acc = partial.accuracy[policy]
        assert acc.shape == (2, 4) and ((0 <= acc) & (acc <= 1)).all()
        np.testing.assert_array_equal(acc, again.accuracy[policy])
        # round 0 is a fit from scratch either way
        np.testing.assert_array_equal(acc[:, 0], refit.accuracy[policy][:, 0])
        assert partial.n_iter[policy] > 0
    assert len(histories) == 4 * 2 * 3
    assert all((np.diff(h) >= -1e-9 * np.abs(h[1:])).all() for h in histories)
    with pytest.raises(ValueError, match="'refit', 'partial' or 'incremental'"):
        active.replay_policies(labels, truth, fit="online", **kw)


def test_replay_reports_cost_and_calls_back(replay_crowd):
    """fit_seconds and n_capped per policy; the callback sees every fit, round by round,
    on the labels bought so far (one more label per item and round here)."""
    labels, truth = replay_crowd
    seen = []

    def watch(policy, replay, round_, model, bought):
        seen.append((policy, replay, round_, bought.n_labels, model.n_items_))

    kw = dict(policies=("random", "model"), n_replays=2, n_rounds=3, per_round=1.0,
              random_state=4)
    result = active.replay_policies(labels, truth, callback=watch, **kw)
    assert [s[:3] for s in seen] == [(p, j, k) for p in ("random", "model")
                                     for j in range(2) for k in range(4)]
    for policy, replay, round_, n_labels, n_items in seen:
        assert n_labels == 120 * (1 + round_) and n_items == 120
    for policy in result.policies:
        assert result.fit_seconds[policy] >= 0.0
        assert 0 <= result.n_capped[policy] <= 2 * 3
        assert isinstance(result.n_capped[policy], int)
    # the callback only watches: the same replay without it gives the same accuracies
    quiet = active.replay_policies(labels, truth, **kw)
    for policy in result.policies:
        np.testing.assert_array_equal(result.accuracy[policy], quiet.accuracy[policy])


def test_replay_counts_only_the_fits_it_makes():
    """With fit='partial', a round that buys nothing (the pool is spent) fits nothing: it adds
    no iterations and no capped fit (the model of the round before is not counted again)."""
    from crowdlearn.simulate import one_coin_confusion

    sim = simulate_crowd(30, one_coin_confusion([0.9, 0.6, 0.55], 2), labels_per_item=3,
                         random_state=0)
    seen = []

    def watch(policy, replay, round_, model, bought):
        seen.append((round_, bought.n_labels, model.n_iter_, model.converged_))

    result = active.replay_policies(
        sim.labels, sim.truth, policies=("random",), n_replays=1, n_rounds=6, per_round=0.5,
        fit="partial", model=lambda: DawidSkene(n_classes=2, max_iter=3), callback=watch)
    grew = [k == 0 or n > seen[k - 1][1] for k, (_, n, _, _) in enumerate(seen)]
    assert not all(grew)                      # the pool runs out before the last round
    assert result.n_iter["random"] == sum(it for (_, _, it, _), g in zip(seen, grew) if g)
    assert result.n_capped["random"] == sum(
        not conv for (k, _, _, conv), g in zip(seen, grew) if g and k > 0)
