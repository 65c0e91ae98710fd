"""GoldMajorityVote: workers' accuracies on the gold items, then the weighted vote with them
(crowd-kit's GoldMajorityVote, linear weights by default)."""

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.aggregation.weighted_vote import GoldMajorityVote
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

# items x workers, -1 missing; gold: item 0 is class 0, item 1 is class 1
TOY = np.array([[0, 0, 1],
                [1, 0, 1],
                [0, 1, 1],
                [1, 1, 0]])
GOLD = np.array([0, 1, -1, -1])


def test_exported():
    assert cl.GoldMajorityVote is GoldMajorityVote
    assert "GoldMajorityVote" in cl.__all__


def test_hand_computed_toy_case():
    g = GoldMajorityVote().fit(TOY, GOLD)
    # worker 0: right on both gold items; worker 1: right on item 0 only; worker 2: item 1 only
    np.testing.assert_allclose(g.skills_, [1.0, 0.5, 0.5])
    np.testing.assert_array_equal(g.n_gold_labels_, [2, 2, 2])
    np.testing.assert_array_equal(g.gold_, GOLD)
    # item 2 [0, 1, 1]: class 0 weighs 1.0, class 1 weighs 0.5 + 0.5 = 1.0 -> (1/2, 1/2)
    # item 3 [1, 1, 0]: class 1 weighs 1.5, class 0 weighs 0.5 -> (1/4, 3/4)
    np.testing.assert_allclose(g.posterior_, [[0.75, 0.25], [0.25, 0.75],
                                              [0.5, 0.5], [0.25, 0.75]])
    np.testing.assert_array_equal(g.labels_, [0, 1, 0, 1])
    np.testing.assert_array_equal(GoldMajorityVote().fit_predict(TOY, GOLD), [0, 1, 0, 1])


def test_log_odds_weights():
    g = GoldMajorityVote(weights="log-odds", default_skill=0.5).fit(
        np.array([[0, 0, 1], [1, 1, 0], [0, 0, 1]]), {0: 0, 1: 1})
    # worker 2 was wrong on both gold items: skill 0, an infinite vote against its label
    np.testing.assert_allclose(g.skills_, [1.0, 1.0, 0.0])
    np.testing.assert_allclose(g.posterior_, [[1, 0], [0, 1], [1, 0]])


def sim_crowd(seed=0):
    return simulate_crowd(200, one_coin_confusion([0.9, 0.7, 0.6, 0.55], 3), random_state=seed)


def test_rows_sum_to_one_and_gold_helps():
    sim = sim_crowd()
    crowd = sim.labels
    gold = np.where(np.arange(crowd.n_items) < 60, sim.truth, -1)
    g = GoldMajorityVote().fit(crowd, gold)
    np.testing.assert_allclose(g.posterior_.sum(axis=1), 1.0)
    assert ((g.posterior_ >= 0) & (g.posterior_ <= 1)).all()
    # the skills are the workers' accuracies on the gold items, computed directly
    on = gold[crowd.item] >= 0
    for j in range(crowd.n_experts):
        mine = on & (crowd.expert == j)
        assert g.skills_[j] == pytest.approx(np.mean(crowd.label[mine] == gold[crowd.item[mine]]))
    mv = cl.MajorityVote(tie_break="lowest").fit(crowd)
    assert np.mean(g.labels_ == sim.truth) >= np.mean(mv.labels_ == sim.truth) - 0.02


def test_same_answer_whatever_the_row_order():
    pd = pytest.importorskip("pandas")
    sim = sim_crowd(1)
    c = sim.labels
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item], "worker": [f"w{j}" for j in c.expert],
                       "label": np.array(["a", "b", "c"])[c.label]})
    gold = pd.Series({f"t{i:03d}": "abc"[sim.truth[i]] for i in range(0, 200, 4)})
    a = GoldMajorityVote().fit(df, gold)
    for seed in range(3):
        shuffled = df.sample(frac=1.0, random_state=seed)
        b = GoldMajorityVote().fit(shuffled, gold.sample(frac=1.0, random_state=seed))
        pd.testing.assert_frame_equal(a.probas_, b.probas_)
        pd.testing.assert_series_equal(a.skills_, b.skills_)
    assert a.labels_.index.name == "task" and a.skills_.index.name == "worker"
    proba = GoldMajorityVote().fit_predict_proba(df, gold)
    pd.testing.assert_frame_equal(proba, a.probas_)
    # new labels are voted on with the fitted skills, by task id
    new = pd.DataFrame({"task": ["x", "x", "y"], "worker": ["w0", "w1", "w2"],
                        "label": ["a", "b", "c"]})
    p = a.predict_proba(new)
    assert list(p.index) == ["x", "y"]
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_predict_new_labels_with_the_fitted_skills():
    g = GoldMajorityVote().fit(TOY, GOLD)
    np.testing.assert_allclose(g.predict_proba(np.array([[0, 1, 1]])), [[0.5, 0.5]])
    np.testing.assert_allclose(g.predict_proba(np.array([[1, 0, -1]])), [[1 / 3, 2 / 3]])


@pytest.mark.parametrize("gold, match", [
    (None, "needs the known true classes"),
    (np.array([-1, -1, -1, -1]), "no known class"),
    (np.array([0, 1]), "4 items"),
    (np.array([0, 5, -1, -1]), "out of range"),
    ({9: 0}, "not among the labelled"),
    ("01", "dict or Series"),
])
def test_bad_gold_is_a_value_error(gold, match):
    with pytest.raises(ValueError, match=match):
        GoldMajorityVote().fit(TOY, gold)


def test_worker_without_gold_is_a_value_error_unless_default_skill():
    labels = np.array([[0, 0, -1], [1, 1, -1], [0, -1, 1]])
    gold = np.array([0, 1, -1])
    with pytest.raises(ValueError, match=r"labelled no gold item, e\.g\. \[2\]"):
        GoldMajorityVote().fit(labels, gold)
    g = GoldMajorityVote(default_skill=0.25).fit(labels, gold)
    np.testing.assert_allclose(g.skills_, [1.0, 1.0, 0.25])
    # a worker with no label at all needs no skill
    g = GoldMajorityVote().fit(np.array([[0, 0, -1], [1, 0, -1]]), gold[:2])
    np.testing.assert_allclose(g.skills_, [1.0, 0.5, 0.0])


@pytest.mark.parametrize("kw, match", [
    ({"weights": "square"}, "weights must be"),
    ({"default_skill": "0.5"}, "default_skill must be a number"),
    ({"default_skill": True}, "default_skill must be a number"),
    ({"default_skill": float("nan")}, r"accuracy in \[0, 1\] .*got nan"),
    ({"default_skill": -0.5}, r"accuracy in \[0, 1\]"),
    ({"default_skill": 1.5, "weights": "log-odds"}, r"\[0, 1\]"),
    ({"default_skill": 1.5, "weights": "linear"}, r"\[0, 1\]"),  # a skill, not a weight
])
def test_bad_parameters_are_value_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        GoldMajorityVote(**kw).fit(TOY, GOLD)


def test_fit_predict_takes_gold_by_keyword():
    # crowd-kit's fit_predict(data, true_labels=...) is fit_predict(data, gold=...) here
    np.testing.assert_array_equal(GoldMajorityVote().fit_predict(TOY, gold=GOLD), [0, 1, 0, 1])
    np.testing.assert_allclose(GoldMajorityVote().fit_predict_proba(TOY, gold=GOLD),
                               GoldMajorityVote().fit(TOY, GOLD).posterior_)
    with pytest.raises(ValueError, match="needs the known true classes"):
        GoldMajorityVote().fit_predict(TOY)


@pytest.mark.parametrize("Model", [cl.DawidSkene, cl.OneCoinDawidSkene],
                         ids=lambda c: c.__name__)
def test_gold_series_naming_an_item_twice_is_a_value_error(Model):
    # crowd-kit's multiple_gt fixture: t1 given two true classes; it used to keep the last.
    # The EM models fix an item's class in the E-step: one class per item (GoldMajorityVote
    # takes several, below)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["t1", "t1", "t3", "t3"], "worker": ["w1", "w2", "w1", "w2"],
                       "label": ["l1", "l2", "l1", "l2"]})
    gold = pd.Series(["l1", "l2", "l2"], index=["t1", "t1", "t3"])
    with pytest.raises(ValueError, match=r"gold names item\(s\) \['t1'\] more than once"):
        Model().fit(df, gold=gold)


# -- several gold labels for one item ------------------------------------------------------------
def test_several_gold_labels_any_one_is_right():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t2", "t3", "t3", "t3"],
                       "worker": ["a", "b", "c"] * 3,
                       "label": ["x", "y", "z", "y", "y", "z", "x", "z", "z"]})
    # t1 accepts x and y; t2 is y; t3 has no gold
    series = pd.Series(["x", "y", "y"], index=["t1", "t1", "t2"])
    as_dict = {"t1": ["y", "x"], "t2": "y"}
    as_set = {"t1": {"x", "y"}, "t2": ("y",)}
    for gold in (series, as_dict, as_set):
        g = GoldMajorityVote().fit(df, gold)
        # a: x on t1 (right), y on t2 (right); b: y, y (right, right); c: z, z (wrong twice)
        assert g.skills_.to_dict() == {"a": 1.0, "b": 1.0, "c": 0.0}
        np.testing.assert_array_equal(g.n_gold_labels_, [2, 2, 2])
        np.testing.assert_array_equal(g.gold_classes_, [[True, True, False],
                                                        [False, True, False],
                                                        [False, False, False]])
        np.testing.assert_array_equal(g.gold_, [0, 1, -1])  # the lowest accepted class
        # c weighs nothing: on t3 a's x ties with b's z (the lowest class wins), where the
        # plain majority would say z
        assert g.labels_.to_dict() == {"t1": "x", "t2": "y", "t3": "x"}


def test_a_right_answer_counts_once_with_several_golds():
    # the same class given twice as gold for an item is still one right answer
    labels = np.array([[0, 1], [1, 1]])
    g = GoldMajorityVote().fit(labels, {0: [0, 0], 1: [1]})
    np.testing.assert_allclose(g.skills_, [1.0, 0.5])


def test_several_gold_labels_are_checked_like_one():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["t1", "t1"], "worker": ["a", "b"], "label": ["x", "y"]})
    with pytest.raises(ValueError, match="not a class of the labels"):
        GoldMajorityVote().fit(df, pd.Series(["x", "w"], index=["t1", "t1"]))
    with pytest.raises(ValueError, match="not among the labelled items"):
        GoldMajorityVote().fit(df, {"t1": ["x"], "t9": ["y", "x"]})
    with pytest.raises(ValueError, match="empty collection of classes"):
        GoldMajorityVote().fit(df, {"t1": [], "t2": ["x"]})
    with pytest.raises(ValueError, match="missing class"):
        GoldMajorityVote().fit(df, pd.Series(["x", np.nan], index=["t1", "t1"]))


def test_gold_majority_vote_with_no_label_on_a_gold_item():
    # found by the row-order property test: no gold item labelled (every worker gets
    # default_skill) used to fail with a UFuncTypeError (an integer array divided in place)
    crowd = cl.from_triples([0, 1, 1], [0, 0, 1], [1, 0, 0], n_items=3, n_experts=2, n_classes=2)
    model = GoldMajorityVote(default_skill=0.6).fit(crowd, np.array([-1, -1, 0]))
    np.testing.assert_array_equal(np.asarray(model.skills_), [0.6, 0.6])
    np.testing.assert_array_equal(model.predict(), [1, 0, 0])
