"""Tests for crowdlearn.MajorityVote."""

import numpy as np
import pytest

from crowdlearn import MajorityVote, NotFittedError, from_dense, from_table, from_triples
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

TOY = np.array([[0, 0, 1, -1],    # 2 votes for 0, 1 for 1            -> 0
                [2, 1, 2, 2],     # 3 votes for 2, 1 for 1            -> 2
                [1, -1, -1, -1],  # a single vote                     -> 1
                [0, 2, 2, 0]])    # tie between 0 and 2 (never 1)


def test_soft_and_hard_votes_by_hand():
    mv = MajorityVote(tie_break="lowest").fit(TOY)
    expected = [[2 / 3, 1 / 3, 0],
                [0, 1 / 4, 3 / 4],
                [0, 1, 0],
                [1 / 2, 0, 1 / 2]]
    np.testing.assert_allclose(mv.posterior_, expected, rtol=0, atol=1e-15)
    assert mv.labels_.tolist() == [0, 2, 1, 0]
    assert mv.n_ties_ == 1
    assert mv.n_classes_ == 3


def test_same_votes_from_every_input_form():
    crowd = from_dense(TOY)
    table = from_table(*[np.asarray(x).astype(str) for x in (crowd.item, crowd.expert,
                                                               crowd.label)])
    for labels in (TOY, TOY.tolist(), crowd, (crowd.item, crowd.expert, crowd.label), table):
        mv = MajorityVote(tie_break="lowest").fit(labels)
        np.testing.assert_allclose(mv.posterior_, MajorityVote(tie_break="lowest")
                                   .fit(TOY).posterior_)


def test_repeated_labels_count_as_votes():
    crowd = from_triples([0, 0, 0], [0, 0, 1], [1, 1, 0])
    mv = MajorityVote().fit(crowd)
    np.testing.assert_allclose(mv.posterior_, [[1 / 3, 2 / 3]])
    assert mv.labels_.tolist() == [1]


def test_n_classes_adds_unused_classes():
    mv = MajorityVote(n_classes=4).fit(np.array([[0, 1, 1]]))
    np.testing.assert_allclose(mv.posterior_, [[1 / 3, 2 / 3, 0, 0]])


# -- ties ----------------------------------------------------------------------------------
def test_tie_lowest_picks_the_lowest_tied_index():
    # ties between 1 and 2 (not 0!), and between 0 and 1
    mv = MajorityVote(n_classes=3, tie_break="lowest").fit([[1, 2, 0], [0, 1, -1]])
    # item 0 is a three-way tie; item 1 a two-way tie
    assert mv.labels_.tolist() == [0, 0]
    mv = MajorityVote(n_classes=3, tie_break="lowest").fit([[1, 2, 2, 1]])
    assert mv.labels_.tolist() == [1]


def _tied_crowd(n_items, tied, n_classes):
    """Every item gets exactly one vote for each class in ``tied``."""
    row = list(tied)
    return np.array([row] * n_items), n_classes


def test_tie_random_only_picks_tied_classes_and_each_of_them():
    labels, K = _tied_crowd(3000, (1, 3), 4)
    mv = MajorityVote(n_classes=K, tie_break="random", random_state=0).fit(labels)
    assert set(mv.labels_.tolist()) == {1, 3}
    freq = np.bincount(mv.labels_, minlength=K) / labels.shape[0]
    np.testing.assert_allclose(freq, [0, 0.5, 0, 0.5], atol=0.03)
    assert mv.n_ties_ == 3000


def test_tie_random_three_way_is_uniform():
    labels, K = _tied_crowd(3000, (0, 1, 2), 3)
    mv = MajorityVote(n_classes=K, random_state=1).fit(labels)
    freq = np.bincount(mv.labels_, minlength=K) / labels.shape[0]
    np.testing.assert_allclose(freq, [1 / 3] * 3, atol=0.03)


def test_tie_random_is_reproducible_and_depends_on_the_seed():
    labels, K = _tied_crowd(200, (0, 1), 2)
    a = MajorityVote(random_state=42).fit(labels).labels_
    b = MajorityVote(random_state=42).fit(labels).labels_
    c = MajorityVote(random_state=43).fit(labels).labels_
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    g = MajorityVote(random_state=np.random.default_rng(42)).fit(labels).labels_
    np.testing.assert_array_equal(a, g)


def test_tie_random_is_reproducible_by_default():
    """Issue 28: six default runs used to give [1, 1, 0, 0, 0, 0]; now the default seed
    (random_state=0) gives the same ties every run, and None still draws fresh ones."""
    labels, K = _tied_crowd(200, (0, 1), 2)
    assert MajorityVote().random_state == 0
    runs = [MajorityVote().fit(labels).labels_ for _ in range(6)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])
    np.testing.assert_array_equal(runs[0], MajorityVote(random_state=0).fit(labels).labels_)
    assert 0 < runs[0].mean() < 1  # still random among the tied classes
    fresh = [MajorityVote(random_state=None).fit(labels).labels_ for _ in range(3)]
    assert any((f != fresh[0]).any() for f in fresh[1:])


def test_labels_are_read_only_and_cannot_change_predict():
    mv = MajorityVote().fit(np.array([[0, 0, 1], [1, 1, 0], [0, 1, -1]]))
    before = mv.predict().copy()
    with pytest.raises(ValueError):
        mv.labels_[:] = 7
    with pytest.raises(ValueError):
        mv.labels_.flags.writeable = True
    with pytest.raises(ValueError):
        mv.labels_.base.flags.writeable = True
    np.testing.assert_array_equal(mv.predict(), before)
    mv.predict()[:] = 7  # predict() hands out a copy
    np.testing.assert_array_equal(mv.predict(), before)


def test_tie_random_leaves_clear_winners_alone():
    mv = MajorityVote(random_state=0).fit(np.tile([[2, 2, 0]], (500, 1)))
    assert (mv.labels_ == 2).all()
    assert mv.n_ties_ == 0


# -- soft votes and unlabelled items -------------------------------------------------------
def test_soft_vote_rows_sum_to_one_on_a_simulated_crowd():
    sim = simulate_crowd(500, one_coin_confusion([0.7, 0.6, 0.8, 0.55], 3), missing=0.4,
                         random_state=0)
    keep = sim.labels.labels_per_item() > 0
    mv = MajorityVote(unlabelled="uniform", random_state=0).fit(sim.labels)
    np.testing.assert_allclose(mv.posterior_.sum(axis=1), 1.0, atol=1e-12)
    assert (mv.posterior_ >= 0).all()
    # and the hard vote is a mode of the soft vote
    top = mv.posterior_[np.arange(500), mv.labels_]
    np.testing.assert_array_equal(top, mv.posterior_.max(axis=1))
    assert (mv.labels_[keep] == sim.truth[keep]).mean() > 0.6  # better than chance (1/3)


def test_unlabelled_error_names_the_items():
    crowd = from_triples([0, 2], [0, 1], [1, 0], n_items=5)
    with pytest.raises(ValueError, match=r"3 item\(s\) received no label, e.g. items \[1, 3, 4\]"):
        MajorityVote().fit(crowd)
    with pytest.raises(ValueError, match="received no label"):
        MajorityVote().fit([[0, 1], [-1, -1]])


def test_unlabelled_uniform_gives_uniform_soft_vote():
    crowd = from_triples([0, 2], [0, 1], [1, 0], n_items=3, n_classes=3)
    mv = MajorityVote(unlabelled="uniform", tie_break="lowest").fit(crowd)
    np.testing.assert_allclose(mv.posterior_, [[0, 1, 0], [1 / 3, 1 / 3, 1 / 3], [1, 0, 0]])
    assert mv.labels_.tolist() == [1, 0, 0]
    assert mv.n_ties_ == 1


# -- API -----------------------------------------------------------------------------------
def test_fit_predict_equals_fit_then_labels_and_predict_proba():
    mv = MajorityVote(random_state=3)
    labels = mv.fit_predict(TOY)
    np.testing.assert_array_equal(labels, MajorityVote(random_state=3).fit(TOY).labels_)
    np.testing.assert_array_equal(mv.predict(), labels)
    np.testing.assert_array_equal(mv.predict_proba(), mv.posterior_)


def test_predict_on_new_labels_keeps_the_fitted_classes():
    mv = MajorityVote(tie_break="lowest").fit(TOY)
    np.testing.assert_allclose(mv.predict_proba(np.array([[1, 1, 0]])), [[1 / 3, 2 / 3, 0]])
    assert mv.predict(np.array([[1, 1, 0]])).tolist() == [1]
    with pytest.raises(ValueError, match="out of range"):
        mv.predict([[3, 0]])


def test_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted"):
        MajorityVote().predict()
    with pytest.raises(NotFittedError):
        MajorityVote().predict_proba()


def test_get_and_set_params():
    mv = MajorityVote(tie_break="lowest", random_state=5)
    assert mv.get_params() == {"n_classes": None, "tie_break": "lowest", "unlabelled": "error",
                              "random_state": 5}
    assert mv.set_params(tie_break="random") is mv and mv.tie_break == "random"
    assert repr(mv) == ("MajorityVote(n_classes=None, tie_break='random', unlabelled='error', "
                        "random_state=5)")
    with pytest.raises(ValueError, match="has no parameter 'alpha'"):
        mv.set_params(alpha=1)


def test_init_only_stores():
    mv = MajorityVote(tie_break="x", unlabelled="y", random_state="z")
    assert mv.tie_break == "x" and not hasattr(mv, "posterior_")


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("params, labels, kwargs, match", [
    (dict(tie_break="x"), TOY, {}, "tie_break must be 'random' or 'lowest', got 'x'"),
    (dict(unlabelled="drop"), TOY, {}, "unlabelled must be 'error' or 'uniform'"),
    (dict(random_state="seed"), [[0, 1]], {}, "random_state must be None, an int"),
    ({}, [[0, np.nan]], {}, "NaN.*mark a missing label with -1"),
    ({}, [[0, np.inf]], {}, "inf"),
    ({}, [[0, 0.5]], {}, "whole numbers"),
    ({}, [0, 1, 1], {}, "2-D"),
    ({}, np.zeros((0, 2)), {}, "empty"),
    ({}, [[0, 3]], dict(n_classes=3), r"out of range: 3.*n_classes=3"),
    ({}, [[0, -2]], {}, "below -1"),
    ({}, ([0, 1], [0], [1, 0]), {}, "same length"),
    ({}, [[-1, -1]], {}, "no label at all"),
])
def test_bad_input(params, labels, kwargs, match):
    with pytest.raises(ValueError, match=match):
        MajorityVote(**params, **kwargs).fit(labels)


# -- results by id ---------------------------------------------------------------------------
def test_dataframe_in_series_out():
    pd = pytest.importorskip("pandas")
    names = np.array(["cat", "dog", "owl"])
    rows = [(f"t{i}", f"w{j}", names[l]) for i, row in enumerate(TOY)
            for j, l in enumerate(row) if l >= 0]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    mv = MajorityVote(tie_break="lowest").fit(df)
    assert isinstance(mv.labels_, pd.Series) and mv.labels_.index.name == "task"
    assert mv.labels_.to_dict() == {"t0": "cat", "t1": "owl", "t2": "dog", "t3": "cat"}
    probas = mv.probas_
    assert isinstance(probas, pd.DataFrame) and list(probas.columns) == ["cat", "dog", "owl"]
    np.testing.assert_allclose(probas.loc["t1"], [0, 1 / 4, 3 / 4])
    # the numpy views are unchanged: class indices, as for numpy input
    np.testing.assert_array_equal(mv.predict(), [0, 2, 1, 0])
    # fit_predict gives crowd-kit's form since 0.2.0: class ids by task id, as labels_
    by_task = mv.fit_predict(df)
    assert by_task.index.name == "task"
    assert by_task.to_dict() == {"t0": "cat", "t1": "owl", "t2": "dog", "t3": "cat"}
    np.testing.assert_allclose(mv.posterior_, MajorityVote().fit(TOY).posterior_)
    # random tie-breaking shows in the Series too
    labels = MajorityVote(random_state=0).fit(df).labels_
    assert labels["t3"] in ("cat", "owl")
    # since 0.2.0 MajorityVote has skills_: each worker's agreement with the vote, by id
    skills = mv.skills_
    assert skills.index.name == "worker" and skills.name == "skill"
    agree = df["label"].to_numpy() == mv.labels_.loc[df["task"]].to_numpy()
    expected = pd.Series(agree, index=df["worker"]).groupby(level=0).mean()
    assert skills.to_dict() == pytest.approx(expected.to_dict())


def test_numpy_input_keeps_numpy_labels():
    mv = MajorityVote(tie_break="lowest").fit(TOY)
    assert isinstance(mv.labels_, np.ndarray) and mv.labels_ is mv.labels_
    assert isinstance(mv.probas_, np.ndarray)
    assert not hasattr(MajorityVote(), "labels_")


# -- votes weighted by given skills (crowd-kit's MajorityVote().fit(df, skills)) ---------------
def _frame():
    pd = pytest.importorskip("pandas")
    # crowd-kit's docstring example: p1 and p2 agree on t1, p1 and p3 on t2
    return pd, pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t2"],
                             "worker": ["p1", "p2", "p3", "p1", "p2", "p3"],
                             "label": [0, 0, 1, 1, 0, 1]})


def test_skills_weigh_the_votes_by_worker_id():
    pd, df = _frame()
    skills = pd.Series({"p1": 0.5, "p2": 0.7, "p3": 0.4})
    mv = MajorityVote().fit(df, skills)
    # t1: 0 weighs 0.5 + 0.7, 1 weighs 0.4; t2: 1 weighs 0.5 + 0.4, 0 weighs 0.7
    np.testing.assert_allclose(mv.probas_.loc["t1"].to_numpy(), [1.2 / 1.6, 0.4 / 1.6])
    np.testing.assert_allclose(mv.probas_.loc["t2"].to_numpy(), [0.7 / 1.6, 0.9 / 1.6])
    assert mv.labels_.to_dict() == {"t1": 0, "t2": 1}
    # a skilled lone worker outweighs two poor ones; a dict works as the Series
    heavy = {"p1": 0.1, "p2": 0.1, "p3": 0.9, "p9": 5.0}  # extra ids are ignored
    assert MajorityVote().fit_predict(df, heavy).to_dict() == {"t1": 1, "t2": 1}
    proba = MajorityVote().fit_predict_proba(df, heavy)
    np.testing.assert_allclose(proba.loc["t1"].to_numpy(), [0.2 / 1.1, 0.9 / 1.1])
    # skills_ is still the agreement with the (weighted) vote, as in crowd-kit
    fitted = MajorityVote().fit(df, heavy)
    assert fitted.skills_.to_dict() == pytest.approx({"p1": 0.5, "p2": 0.0, "p3": 1.0})
    np.testing.assert_allclose(fitted.given_skills_, [0.1, 0.1, 0.9])


def test_skills_by_position_and_equal_skills_are_the_plain_vote():
    weighted = MajorityVote(tie_break="lowest").fit(TOY, np.array([1.0, 5.0, 1.0, 1.0]))
    # worker 1 weighs 5: item 1's lone 1 (5) beats three 2s (3); item 3: 2 weighs 5 + 1
    # against 0's 1 + 1
    assert weighted.labels_.tolist() == [0, 1, 1, 2]
    assert weighted.n_ties_ == 0
    for equal in ([1, 1, 1, 1], [0.3] * 4):
        same = MajorityVote(tie_break="lowest").fit(TOY, equal)
        np.testing.assert_allclose(same.posterior_, MajorityVote().fit(TOY).posterior_)
        assert same.n_ties_ == 1


def test_items_whose_labels_all_weigh_zero_get_a_uniform_vote():
    mv = MajorityVote(tie_break="lowest").fit(np.array([[0, 1], [-1, 1]]), [1.0, 0.0])
    np.testing.assert_allclose(mv.posterior_, [[1, 0], [0.5, 0.5]])
    assert mv.n_ties_ == 1


def test_new_labels_are_weighted_by_the_fitted_skills():
    pd, df = _frame()
    mv = MajorityVote().fit(df, {"p1": 0.1, "p2": 0.1, "p3": 0.9})
    new = pd.DataFrame({"task": ["n1", "n1", "n1"], "worker": ["p1", "p2", "p3"],
                        "label": [0, 0, 1]})
    np.testing.assert_array_equal(mv.predict(new), [1])  # p3 outweighs p1 and p2
    stranger = new.assign(worker=["p1", "p2", "zz"])
    with pytest.raises(ValueError, match=r"no skill for worker\(s\) \['zz'\]"):
        mv.predict(stranger)


@pytest.mark.parametrize("skills, message", [
    ({"p1": 0.5, "p2": 0.5}, r"no skill for worker\(s\) \['p3'\]"),
    ([0.5, 0.5], r"one entry per worker, shape \(3,\), got shape \(2,\)"),
    ([0.5, 0.5, 0.5, 0.5], r"one entry per worker"),
    ({"p1": -0.1, "p2": 1.0, "p3": 1.0}, r"non-negative.*-0\.1 for worker 'p1'"),
    ({"p1": 1.0, "p2": float("nan"), "p3": 1.0}, r"NaN or inf \(workers \['p2'\]\)"),
    ([1.0, np.inf, 1.0], r"NaN or inf"),
    ({"p1": "high", "p2": 1.0, "p3": 1.0}, r"skill of worker 'p1' must be a number"),
    ("p1", r"must be an array .* or a dict/Series by worker id"),
])
def test_bad_skills_are_a_value_error(skills, message):
    _, df = _frame()
    with pytest.raises(ValueError, match=message):
        MajorityVote().fit(df, skills)


def test_duplicate_worker_ids_in_a_skills_series_are_refused():
    pd, df = _frame()
    with pytest.raises(ValueError, match="duplicate worker ids"):
        MajorityVote().fit(df, pd.Series([0.5, 0.6, 0.7, 0.8], index=["p1", "p2", "p3", "p1"]))


# -- skills_: each worker's agreement with the vote -----------------------------------------------
def test_majority_vote_skills_by_hand():
    # items: [0, 0, 1] -> 0, [1, 1, 0] -> 1, [0, -, 0] -> 0
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, -1, 0]])
    mv = MajorityVote(tie_break="lowest").fit(labels)
    np.testing.assert_allclose(mv.skills_, [1.0, 1.0, 1 / 3])
    mv.skills_[:] = 0.0  # a copy
    np.testing.assert_allclose(mv.skills_, [1.0, 1.0, 1 / 3])


def test_majority_vote_skills_nan_for_a_worker_without_labels():
    labels = np.array([[0, 0, -1], [1, 1, -1]])
    skills = MajorityVote(tie_break="lowest").fit(labels).skills_
    np.testing.assert_array_equal(skills[:2], [1.0, 1.0])
    assert np.isnan(skills[2])


def test_majority_vote_skills_by_worker_id(coin_frame):
    pd = pytest.importorskip("pandas")
    df = coin_frame
    mv = MajorityVote().fit(df)
    skills = mv.skills_
    assert isinstance(skills, pd.Series) and skills.index.name == "worker"
    agree = df["label"].to_numpy() == mv.labels_.loc[df["task"]].to_numpy()
    expected = pd.Series(agree, index=df["worker"].to_numpy()).groupby(level=0).mean()
    np.testing.assert_allclose(skills.loc[expected.index].to_numpy(), expected.to_numpy())
