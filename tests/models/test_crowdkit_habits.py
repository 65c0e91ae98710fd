"""crowd-kit's habits (issue 28, deliverable 2): ``fit_predict``/``fit_predict_proba`` by task
id, ``predict_proba`` of a new DataFrame by task id, ``priors_``, crowd-kit's positional gold
refused with "did you mean gold=...", ``MajorityVote.skills_``."""

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

pd = pytest.importorskip("pandas")

ID_MODELS = [cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE, cl.MajorityVote, cl.Wawa,
             cl.ZeroBasedSkill]
PRIOR_MODELS = [cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE]
CLASSES = np.array(["cat", "dog", "eel"])


@pytest.fixture(scope="module")
def sim():
    return simulate_crowd(60, one_coin_confusion([0.85, 0.75, 0.7, 0.65], 3), random_state=3)


def frame_of(crowd):
    """The labels as crowd-kit's (task, worker, label) DataFrame, string ids, shuffled rows."""
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in crowd.item],
                       "worker": [f"w{j}" for j in crowd.expert],
                       "label": CLASSES[crowd.label]})
    return df.sample(frac=1.0, random_state=0)


def crowd_of(sim):
    return cl.as_crowd_labels(sim.labels)


# -- fit_predict / fit_predict_proba -----------------------------------------------------------
@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_fit_predict_gives_labels_by_task_id_for_a_dataframe(Model, sim):
    df = frame_of(crowd_of(sim))
    model = Model()
    labels = model.fit_predict(df)
    assert isinstance(labels, pd.Series) and labels.index.name == "task"
    assert list(labels.index) == sorted(set(df["task"]))
    pd.testing.assert_series_equal(labels, model.labels_)
    assert set(labels) <= set(CLASSES)
    # the same answer as the class indices of predict(), read through the class ids
    np.testing.assert_array_equal(labels.to_numpy(), CLASSES[model.predict()])


@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_fit_predict_proba_gives_a_frame_by_task_and_class(Model, sim):
    df = frame_of(crowd_of(sim))
    model = Model()
    proba = model.fit_predict_proba(df)
    assert isinstance(proba, pd.DataFrame)
    assert proba.index.name == "task" and list(proba.columns) == list(CLASSES)
    assert list(proba.index) == sorted(set(df["task"]))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba.to_numpy(), model.posterior_)
    proba.iloc[0, 0] = -1.0  # a copy: the model is unchanged
    assert model.posterior_.min() >= 0.0


@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_arrays_in_arrays_out(Model, sim):
    model = Model()
    hard = model.fit_predict(sim.labels)
    assert isinstance(hard, np.ndarray)
    np.testing.assert_array_equal(hard, model.predict())
    again = Model()
    proba = again.fit_predict_proba(sim.labels)
    assert isinstance(proba, np.ndarray)
    np.testing.assert_array_equal(proba, again.posterior_)


def test_fit_predict_proba_takes_features_like_fit_predict(sim):
    X = (np.random.default_rng(0).random((60, 3)) < 0.5).astype(int)
    model = cl.DawidSkene()
    proba = model.fit_predict_proba(sim.labels, X)
    np.testing.assert_allclose(proba, cl.DawidSkene().fit(sim.labels, X).posterior_)


def test_fit_predict_proba_is_on_every_crowd_model():
    for name in ("DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE", "MajorityVote", "Wawa",
                 "ZeroBasedSkill", "WeightedMajorityVote", "MultiLabelDawidSkene",
                 "LogisticAnnotators", "SparseExpertsEM"):
        assert callable(getattr(getattr(cl, name), "fit_predict_proba")), name


# -- predict_proba of new DataFrame labels --------------------------------------------------------
@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_predict_proba_of_a_new_frame_is_by_task_id(Model, sim):
    df = frame_of(crowd_of(sim))
    model = Model().fit(df)
    new = pd.DataFrame({"task": ["zz", "aa", "zz", "aa"], "worker": ["w0", "w1", "w2", "w3"],
                        "label": ["cat", "dog", "cat", "dog"]})
    proba = model.predict_proba(new)
    assert isinstance(proba, pd.DataFrame) and proba.index.name == "task"
    assert list(proba.index) == ["aa", "zz"] and list(proba.columns) == list(CLASSES)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # the rows are the items of the new table whatever its row order
    again = model.predict_proba(new.iloc[::-1])
    np.testing.assert_allclose(again.loc[proba.index].to_numpy(), proba.to_numpy(), atol=1e-12)
    # arrays are still answered with arrays
    assert isinstance(model.predict_proba(), np.ndarray)


# -- priors_ --------------------------------------------------------------------------------------
@pytest.mark.parametrize("Model", PRIOR_MODELS, ids=lambda c: c.__name__)
def test_priors_is_a_copy_of_the_class_prior(Model, sim):
    model = Model().fit(sim.labels)
    priors = model.priors_
    assert isinstance(priors, np.ndarray)
    np.testing.assert_array_equal(priors, model.class_prior_)
    priors[:] = 0.0
    assert model.class_prior_.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("Model", PRIOR_MODELS, ids=lambda c: c.__name__)
def test_priors_by_class_id_for_a_dataframe(Model, sim):
    model = Model().fit(frame_of(crowd_of(sim)))
    priors = model.priors_
    assert isinstance(priors, pd.Series) and priors.name == "prior"
    assert priors.index.name == "label" and list(priors.index) == list(CLASSES)
    np.testing.assert_array_equal(priors.to_numpy(), model.class_prior_)


def test_priors_needs_a_fit_and_a_prior():
    with pytest.raises(cl.NotFittedError):
        cl.DawidSkene().priors_
    assert not hasattr(cl.MajorityVote().fit(np.array([[0, 1], [1, 1]])), "priors_")


# -- crowd-kit's positional gold ------------------------------------------------------------------
@pytest.mark.parametrize("Model", [cl.DawidSkene, cl.OneCoinDawidSkene],
                         ids=lambda c: c.__name__)
def test_positional_gold_series_is_refused_with_a_hint(Model, sim):
    df = frame_of(crowd_of(sim))
    gold = pd.Series({"t000": "cat", "t001": "dog"})
    with pytest.raises(ValueError, match=r"did you mean gold=\.\.\.\?"):
        Model().fit(df, gold)
    with pytest.raises(ValueError, match=r"did you mean gold="):
        Model().fit_predict(df, gold)
    # the keyword works
    model = Model().fit(df, gold=gold)
    assert model.labels_["t000"] == "cat" and model.labels_["t001"] == "dog"


# -- MajorityVote.skills_ -------------------------------------------------------------------------
def test_majority_vote_skills_by_hand():
    # items: [0, 0, 1] -> 0, [1, 1, 0] -> 1, [0, -, 0] -> 0
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, -1, 0]])
    mv = cl.MajorityVote(tie_break="lowest").fit(labels)
    np.testing.assert_allclose(mv.skills_, [1.0, 1.0, 1 / 3])
    mv.skills_[:] = 0.0  # a copy
    np.testing.assert_allclose(mv.skills_, [1.0, 1.0, 1 / 3])


def test_majority_vote_skills_nan_for_a_worker_without_labels():
    labels = np.array([[0, 0, -1], [1, 1, -1]])
    skills = cl.MajorityVote(tie_break="lowest").fit(labels).skills_
    np.testing.assert_array_equal(skills[:2], [1.0, 1.0])
    assert np.isnan(skills[2])


def test_majority_vote_skills_by_worker_id(sim):
    df = frame_of(crowd_of(sim))
    mv = cl.MajorityVote().fit(df)
    skills = mv.skills_
    assert isinstance(skills, pd.Series) and skills.index.name == "worker"
    agree = df["label"].to_numpy() == mv.labels_.loc[df["task"]].to_numpy()
    expected = pd.Series(agree, index=df["worker"].to_numpy()).groupby(level=0).mean()
    np.testing.assert_allclose(skills.loc[expected.index].to_numpy(), expected.to_numpy())


# -- labels_ is built once per fit -----------------------------------------------------------------
STABLE_MODELS = ID_MODELS + [cl.GoldMajorityVote, cl.WeightedMajorityVote]


def _fit(Model, labels, gold):
    if Model is cl.GoldMajorityVote:
        return Model().fit(labels, gold)
    return Model().fit(labels)


@pytest.mark.parametrize("Model", STABLE_MODELS, ids=lambda c: c.__name__)
def test_labels_is_the_same_object_until_the_next_fit(Model, sim):
    crowd = crowd_of(sim)
    gold_array = np.where(np.arange(crowd.n_items) < 20, sim.truth, -1)
    model = _fit(Model, sim.labels, gold_array)
    first = model.labels_
    assert model.labels_ is first and isinstance(first, np.ndarray)
    with pytest.raises(ValueError):  # read-only: nobody changes what the next access sees
        first[:] = 0
    np.testing.assert_array_equal(first, model.predict())
    # a new fit (here on a DataFrame) builds them again, and that object is kept in turn
    df = frame_of(crowd)
    gold = {f"t{i:03d}": CLASSES[sim.truth[i]] for i in range(20)}
    refit = model.fit(df, gold) if Model is cl.GoldMajorityVote else model.fit(df)
    second = refit.labels_
    assert second is not first and isinstance(second, pd.Series)
    assert refit.labels_ is second
    np.testing.assert_array_equal(second.to_numpy(), CLASSES[refit.predict()])
