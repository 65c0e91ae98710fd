"""One ``predict_proba``/``predict``/``fit_predict`` for every crowd model, with the argument
order ``(labels, X=None)`` (issue 26), and ``n_classes`` a constructor parameter of the
votes as of every other model."""

import inspect

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn._base import Predictions
from crowdlearn.simulate.annotators import simulate_logistic_annotators

CROWD_MODELS = [cl.MajorityVote, cl.WeightedMajorityVote, cl.Wawa, cl.ZeroBasedSkill,
                cl.DawidSkene, cl.OneCoinDawidSkene, cl.GLAD, cl.MACE,
                cl.MultiLabelDawidSkene, cl.LogisticAnnotators, cl.SparseExpertsEM]
BINARY = [pytest.param(cl.LogisticAnnotators, id="logistic"),
          pytest.param(cl.SparseExpertsEM, id="sparse")]
VOTES = [cl.MajorityVote, cl.WeightedMajorityVote, cl.Wawa, cl.ZeroBasedSkill]


@pytest.fixture(scope="module")
def sim():
    return simulate_logistic_annotators(
        300, coef=[2.0, -1.0], intercept=0.2,
        reliability_coef=[[1.0, 0.0], [0.0, 0.5], [0.0, 0.0]],
        reliability_intercept=[-1.5, -1.0, -0.5], missing=0.2, random_state=0)


@pytest.fixture(scope="module", params=BINARY)
def fitted(request, sim):
    return request.param().fit(sim.labels, sim.X)


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
def test_positional_labels_and_keyword_features(fitted, sim):
    by_keyword = fitted.predict_proba(labels=sim.labels, X=sim.X)
    np.testing.assert_array_equal(fitted.predict_proba(sim.labels, sim.X), by_keyword)
    np.testing.assert_array_equal(fitted.predict_proba(sim.labels, X=sim.X), by_keyword)
    np.testing.assert_allclose(by_keyword, fitted.posterior_, atol=1e-10)
    np.testing.assert_array_equal(fitted.predict(sim.labels, X=sim.X),
                                  (by_keyword[:, 1] >= 0.5).astype(int))
    # an integer label matrix with -1 for missing is labels, not features
    dense = sim.labels.to_dense()
    np.testing.assert_allclose(fitted.predict_proba(dense, X=sim.X), by_keyword, atol=1e-12)
    np.testing.assert_allclose(fitted.predict_proba(dense.astype(float), X=sim.X),
                               by_keyword, atol=1e-12)


def test_features_alone_by_keyword(fitted, sim):
    a = sim.X[:5] @ fitted.coef_ + fitted.intercept_
    np.testing.assert_allclose(fitted.predict_proba(X=sim.X[:5])[:, 1], 1 / (1 + np.exp(-a)))
    np.testing.assert_array_equal(fitted.predict(X=sim.X[:5]), (a >= 0).astype(int))
    np.testing.assert_array_equal(fitted.predict(None, X=sim.X[:5]), (a >= 0).astype(int))


@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_the_old_positional_features_are_refused(fitted, sim, method):
    answer = getattr(fitted, method)
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(sim.X[:5])                      # the old predict(X_test)
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(sim.X, sim.labels)              # the old predict_proba(X, labels)
    # whole-number features, one column per feature (2) where there are 3 labellers
    with pytest.raises(ValueError, match=r"looks like a feature matrix.*X=X_new"):
        answer(np.round(sim.X[:5]))
    # labels without their features
    with pytest.raises(ValueError, match=r"need their features X.*predict\(X=X_new\)"):
        answer(sim.labels)
    with pytest.raises(ValueError, match=r"X holds labels.*\(labels, X\)"):
        answer(np.round(sim.X[:5]).astype(int)[:, :1], X=sim.labels)


def test_fit_predict_takes_labels_then_features(sim):
    model = cl.LogisticAnnotators()
    np.testing.assert_array_equal(model.fit_predict(sim.labels, sim.X), model.predict())
    np.testing.assert_array_equal(cl.LogisticAnnotators().fit_predict(sim.labels, X=sim.X),
                                  model.predict())


def test_not_fitted_comes_first(sim):
    with pytest.raises(cl.NotFittedError):
        cl.SparseExpertsEM().predict(X=sim.X)
    with pytest.raises(cl.NotFittedError):
        cl.LogisticAnnotators().predict(sim.X)


# -- the label models -------------------------------------------------------------------------------
def test_label_models_refuse_features_given_as_labels(sim):
    ds = cl.DawidSkene(alpha=1.0, max_iter=20, tol=1e-3).fit(sim.labels.to_dense())
    with pytest.raises(ValueError, match="looks like a feature matrix"):
        ds.predict(sim.X)
    np.testing.assert_array_equal(ds.predict(sim.labels.to_dense()), ds.predict())


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
