"""What every crowd model answers, called the way scikit-learn's and crowd-kit's users call
it: one ``predict_proba``/``predict``/``fit_predict`` with the argument order
``(labels, X=None)``; ``fit_predict``/``fit_predict_proba`` and ``predict_proba`` of a new
DataFrame by task id; ``priors_``; ``labels_`` built once per fit; crowd-kit's positional gold
refused with "did you mean gold=..."; ``n_classes`` a constructor parameter of the votes as
of every other model."""

import inspect

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn._base import Predictions

try:
    import pandas as pd
except ImportError:  # pragma: no cover - pandas is optional
    pd = None

CROWD_MODELS = [cl.MajorityVote, cl.WeightedMajorityVote, cl.Wawa, cl.ZeroBasedSkill,
                cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE,
                cl.MultiLabelDawidSkene, cl.LogisticAnnotators, cl.SparseExpertsEM]
BINARY = [pytest.param(cl.LogisticAnnotators, id="logistic"),
          pytest.param(cl.SparseExpertsEM, id="sparse")]
VOTES = [cl.MajorityVote, cl.WeightedMajorityVote, cl.Wawa, cl.ZeroBasedSkill]


@pytest.fixture(scope="module", params=BINARY)
def fitted(request, annotators):
    return request.param().fit(annotators.labels, annotators.X)


# -- one implementation, one order --------------------------------------------------------------
@pytest.mark.parametrize("cls", CROWD_MODELS, ids=lambda c: c.__name__)
def test_one_implementation_and_one_argument_order(cls):
    assert issubclass(cls, Predictions)
    assert cls.fit_predict is Predictions.fit_predict
    if cls is not cl.MultiLabelDawidSkene:  # which only documents its shape
        assert cls.predict is Predictions.predict
    for name in ("predict_proba", "predict", "fit_predict"):
        params = list(inspect.signature(getattr(cls, name)).parameters)
        assert params == ["self", "labels", "X"], (name, params)


# -- the binary feature models ----------------------------------------------------------------------
def test_positional_labels_and_keyword_features(fitted, annotators):
    by_keyword = fitted.predict_proba(labels=annotators.labels, X=annotators.X)
    np.testing.assert_array_equal(fitted.predict_proba(annotators.labels, annotators.X), by_keyword)
    np.testing.assert_array_equal(fitted.predict_proba(annotators.labels, X=annotators.X),
                                  by_keyword)
    np.testing.assert_allclose(by_keyword, fitted.posterior_, atol=1e-10)
    np.testing.assert_array_equal(fitted.predict(annotators.labels, X=annotators.X),
                                  (by_keyword[:, 1] >= 0.5).astype(int))
    # an integer label matrix with -1 for missing is labels, not features
    dense = annotators.labels.to_dense()
    np.testing.assert_allclose(fitted.predict_proba(dense, X=annotators.X), by_keyword, atol=1e-12)
    np.testing.assert_allclose(fitted.predict_proba(dense.astype(float), X=annotators.X),
                               by_keyword, atol=1e-12)


def test_features_alone_by_keyword(fitted, annotators):
    a = annotators.X[:5] @ fitted.coef_ + fitted.intercept_
    np.testing.assert_allclose(fitted.predict_proba(X=annotators.X[:5])[:, 1], 1 / (1 + np.exp(-a)))
    np.testing.assert_array_equal(fitted.predict(X=annotators.X[:5]), (a >= 0).astype(int))
    np.testing.assert_array_equal(fitted.predict(None, X=annotators.X[:5]), (a >= 0).astype(int))


@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_the_old_positional_features_are_refused(fitted, annotators, method):
    answer = getattr(fitted, method)
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(annotators.X[:5])                      # the old predict(X_test)
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(annotators.X, annotators.labels)              # the old predict_proba(X, labels)
    # whole-number features, one column per feature (2) where there are 3 labellers
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(np.round(annotators.X[:5]))
    # labels without their features
    with pytest.raises(ValueError, match=r"need their features X.*predict\(X=X_new\)"):
        answer(annotators.labels)
    with pytest.raises(ValueError, match=r"X holds labels.*\(labels, X\)"):
        answer(np.round(annotators.X[:5]).astype(int)[:, :1], X=annotators.labels)


def test_fit_predict_takes_labels_then_features(annotators):
    model = cl.LogisticAnnotators()
    np.testing.assert_array_equal(model.fit_predict(annotators.labels, annotators.X),
                                  model.predict())
    np.testing.assert_array_equal(
        cl.LogisticAnnotators().fit_predict(annotators.labels, X=annotators.X), model.predict())


def test_not_fitted_comes_first(annotators):
    with pytest.raises(cl.NotFittedError):
        cl.SparseExpertsEM().predict(X=annotators.X)
    with pytest.raises(cl.NotFittedError):
        cl.LogisticAnnotators().predict(annotators.X)


# -- the label models -------------------------------------------------------------------------------
def test_label_models_refuse_features_given_as_labels(annotators):
    ds = cl.DawidSkene(alpha=1.0, max_iter=20, tol=1e-3).fit(annotators.labels.to_dense())
    with pytest.raises(ValueError, match="looks like a feature matrix"):
        ds.predict(annotators.X)
    np.testing.assert_array_equal(ds.predict(annotators.labels.to_dense()), ds.predict())


@pytest.mark.parametrize("cls", VOTES, ids=lambda c: c.__name__)
def test_votes_answer_new_labels_and_refuse_features(cls):
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, -1, 0], [1, 0, 1]])
    vote = cls().fit(labels)
    np.testing.assert_array_equal(vote.predict_proba(labels), vote.posterior_)
    np.testing.assert_array_equal(vote.fit_predict(labels), vote.predict())
    with pytest.raises(ValueError, match="has no features"):
        vote.predict(labels, X=np.zeros((4, 2)))


def test_majority_vote_of_new_labels_needs_no_fit():
    assert cl.MajorityVote(tie_break="lowest").predict(np.array([[1, 1, 0]])).tolist() == [1]
    assert cl.MajorityVote(n_classes=3).predict_proba(np.array([[1, 1, 0]])).shape == (1, 3)


# -- n_classes in the constructor ---------------------------------------------------------------------
@pytest.mark.parametrize("cls", VOTES, ids=lambda c: c.__name__)
def test_n_classes_is_a_constructor_parameter(cls):
    labels = np.array([[0, 1, 1], [1, 1, 0]])
    vote = cls(n_classes=4)
    assert vote.get_params()["n_classes"] == 4
    assert cls().get_params()["n_classes"] is None
    fitted = vote.fit(labels)
    assert fitted.posterior_.shape == (2, 4) and fitted.n_classes_ == 4
    clone = cls(**vote.get_params()).fit(labels)
    np.testing.assert_array_equal(clone.posterior_, fitted.posterior_)
    assert fitted.predict_proba(np.array([[0, 1, 1]])).shape == (1, 4)  # new labels on the fitted classes
    assert cls().set_params(n_classes=3).fit(labels).n_classes_ == 3
    with pytest.raises(TypeError):
        cls().fit(labels, n_classes=4)  # the fit keyword of 0.1 is gone


@pytest.mark.parametrize("cls", VOTES, ids=lambda c: c.__name__)
def test_bad_n_classes(cls):
    with pytest.raises(ValueError, match="n_classes"):
        cls(n_classes=1).fit([[0, 1]])
    with pytest.raises(ValueError, match="out of range"):
        cls(n_classes=2).fit([[0, 2]])


# -- crowd-kit's habits: results by task id ------------------------------------------------------
ID_MODELS = [cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE, cl.MajorityVote, cl.Wawa,
             cl.ZeroBasedSkill]
PRIOR_MODELS = [cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE]
CLASSES = np.array(["cat", "dog", "eel"])


# -- fit_predict / fit_predict_proba -----------------------------------------------------------
@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_fit_predict_gives_labels_by_task_id_for_a_dataframe(Model, coin_frame):
    df = coin_frame
    model = Model()
    labels = model.fit_predict(df)
    assert isinstance(labels, pd.Series) and labels.index.name == "task"
    assert list(labels.index) == sorted(set(df["task"]))
    pd.testing.assert_series_equal(labels, model.labels_)
    assert set(labels) <= set(CLASSES)
    # the same answer as the class indices of predict(), read through the class ids
    np.testing.assert_array_equal(labels.to_numpy(), CLASSES[model.predict()])


@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_fit_predict_proba_gives_a_frame_by_task_and_class(Model, coin_frame):
    df = coin_frame
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
def test_arrays_in_arrays_out(Model, coin_crowd):
    model = Model()
    hard = model.fit_predict(coin_crowd.labels)
    assert isinstance(hard, np.ndarray)
    np.testing.assert_array_equal(hard, model.predict())
    again = Model()
    proba = again.fit_predict_proba(coin_crowd.labels)
    assert isinstance(proba, np.ndarray)
    np.testing.assert_array_equal(proba, again.posterior_)


def test_fit_predict_proba_takes_features_like_fit_predict(coin_crowd):
    X = (np.random.default_rng(0).random((60, 3)) < 0.5).astype(int)
    model = cl.DawidSkene()
    proba = model.fit_predict_proba(coin_crowd.labels, X)
    np.testing.assert_allclose(proba, cl.DawidSkene().fit(coin_crowd.labels, X).posterior_)


def test_fit_predict_proba_is_on_every_crowd_model():
    for name in ("DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE", "MajorityVote", "Wawa",
                 "ZeroBasedSkill", "WeightedMajorityVote", "MultiLabelDawidSkene",
                 "LogisticAnnotators", "SparseExpertsEM"):
        assert callable(getattr(getattr(cl, name), "fit_predict_proba")), name


# -- predict_proba of new DataFrame labels --------------------------------------------------------
@pytest.mark.parametrize("Model", ID_MODELS, ids=lambda c: c.__name__)
def test_predict_proba_of_a_new_frame_is_by_task_id(Model, coin_frame):
    df = coin_frame
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
def test_priors_is_a_copy_of_the_class_prior(Model, coin_crowd):
    model = Model().fit(coin_crowd.labels)
    priors = model.priors_
    assert isinstance(priors, np.ndarray)
    np.testing.assert_array_equal(priors, model.class_prior_)
    priors[:] = 0.0
    assert model.class_prior_.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("Model", PRIOR_MODELS, ids=lambda c: c.__name__)
def test_priors_by_class_id_for_a_dataframe(Model, coin_frame):
    model = Model().fit(coin_frame)
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
def test_positional_gold_series_is_refused_with_a_hint(Model, coin_frame):
    df = coin_frame
    gold = pd.Series({"t000": "cat", "t001": "dog"})
    with pytest.raises(ValueError, match=r"did you mean gold=\.\.\.\?"):
        Model().fit(df, gold)
    with pytest.raises(ValueError, match=r"did you mean gold="):
        Model().fit_predict(df, gold)
    # the keyword works
    model = Model().fit(df, gold=gold)
    assert model.labels_["t000"] == "cat" and model.labels_["t001"] == "dog"


# -- labels_ is built once per fit -----------------------------------------------------------------
STABLE_MODELS = ID_MODELS + [cl.GoldMajorityVote, cl.WeightedMajorityVote]


def _fit(Model, labels, gold):
    if Model is cl.GoldMajorityVote:
        return Model().fit(labels, gold)
    return Model().fit(labels)


@pytest.mark.parametrize("Model", STABLE_MODELS, ids=lambda c: c.__name__)
def test_labels_is_the_same_object_until_the_next_fit(Model, coin_crowd, coin_frame):
    crowd = coin_crowd.labels
    gold_array = np.where(np.arange(crowd.n_items) < 20, coin_crowd.truth, -1)
    model = _fit(Model, coin_crowd.labels, gold_array)
    first = model.labels_
    assert model.labels_ is first and isinstance(first, np.ndarray)
    with pytest.raises(ValueError):  # read-only: nobody changes what the next access sees
        first[:] = 0
    np.testing.assert_array_equal(first, model.predict())
    # a new fit (here on a DataFrame) builds them again, and that object is kept in turn
    df = coin_frame
    gold = {f"t{i:03d}": CLASSES[coin_crowd.truth[i]] for i in range(20)}
    refit = model.fit(df, gold) if Model is cl.GoldMajorityVote else model.fit(df)
    second = refit.labels_
    assert second is not first and isinstance(second, pd.Series)
    assert refit.labels_ is second
    np.testing.assert_array_equal(second.to_numpy(), CLASSES[refit.predict()])
