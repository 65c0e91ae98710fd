"""The two binary-label feature models share one base (issue 17): the same reading of
labels and features, the same start, the same answers once fitted, the same errors in
their own words ("annotator" / "expert"). Each test runs on both models."""

import numpy as np
import pytest

from crowdlearn import ConvergenceWarning, CrowdLabels, LogisticAnnotators, SparseExpertsEM
from crowdlearn.features._binary import _BinaryFeatureModel, _binary_log_joint
from crowdlearn.features.logistic_annotators import LogisticAnnotatorsParams
from crowdlearn.features.sparse_experts import SparseExpertsParams

SHARED = ("predict_proba", "predict", "fit_predict", "observed_log_likelihood", "objective",
          "_read_fit_input", "_new_data", "_start_mu", "_e_step", "_run_em",
          "_keep_oriented", "_check_init", "_start_params")
MODELS = [pytest.param(LogisticAnnotators, "annotator", "n_annotators_", id="logistic"),
          pytest.param(SparseExpertsEM, "expert", "n_experts_", id="sparse")]


def _fit(cls, annotators):
    kw = {"lam": 1.0} if cls is SparseExpertsEM else {}
    return cls(**kw).fit(annotators.labels, annotators.X)


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_one_base_and_nothing_shared_is_redefined(cls, who, count):
    assert issubclass(cls, _BinaryFeatureModel)
    redefined = [name for name in SHARED if name in vars(cls)]
    assert not redefined, redefined
    assert cls._who == who and cls._n_labellers == count


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_fitted_answers_are_consistent(cls, who, count, annotators):
    model = _fit(cls, annotators)
    assert getattr(model, count) == 3
    np.testing.assert_array_equal(model.predict_proba(), model.posterior_)
    assert np.allclose(model.posterior_.sum(axis=1), 1.0)
    assert np.mean(model.predict() == annotators.truth) > 0.8
    # the same labels and features, re-read as new items, give the training posterior
    np.testing.assert_allclose(model.predict_proba(annotators.labels, X=annotators.X),
                               model.posterior_, atol=1e-10)
    # the likelihood of the training labels is the fitted one, and the objective subtracts
    # the penalty from it
    assert model.observed_log_likelihood(annotators.labels, annotators.X) == pytest.approx(
        model.log_likelihood_, rel=1e-10)
    assert model.objective(annotators.labels, annotators.X) == pytest.approx(model.objective_,
                                                                             rel=1e-10)
    assert model.objective_ <= model.log_likelihood_
    # features alone: the classifier
    a = annotators.X[:5] @ model.coef_ + model.intercept_
    np.testing.assert_allclose(model.predict_proba(X=annotators.X[:5])[:, 1], 1 / (1 + np.exp(-a)))


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_ties_go_to_class_one(cls, who, count, annotators):
    model = _fit(cls, annotators)
    # a classifier with all-zero weights gives exactly 1/2 for every item
    model.coef_, model.intercept_ = np.zeros_like(model.coef_), 0.0
    assert model.predict(X=annotators.X[:3]).tolist() == [1, 1, 1]


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_the_same_errors_in_each_models_words(cls, who, count, annotators):
    model = _fit(cls, annotators)
    X1 = annotators.X[:1]
    with pytest.raises(ValueError, match=f"unknown {who} 3: the model was fitted on 3 {who}s"):
        model.predict_proba(([0], [3], [1]), X=X1)
    with pytest.raises(ValueError, match=f"unknown {who}s: the labels come from 5 {who}s"):
        model.predict_proba(np.array([[0, -1, -1, -1, -1]]), X=X1)
    with pytest.raises(ValueError, match="need their features"):
        model.predict_proba(([0], [0], [1]))
    with pytest.raises(ValueError, match="has 3 features but the model was fitted with 2"):
        model.observed_log_likelihood(([0], [0], [1]), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="X has 2 rows but the labels describe 1 items"):
        model.objective(np.array([[0, 1, 1]]), annotators.X[:2])
    # a CrowdLabels that declares three classes is not binary, even if only 0/1 occur
    three = CrowdLabels(np.array([0, 1]), np.array([0, 1]), np.array([0, 1]), 2, 2, 3)
    with pytest.raises(ValueError, match="labels must be binary, got n_classes=3"):
        cls().fit(three, annotators.X[:2])
    with pytest.raises(ValueError, match=r"labels must be binary \(0 or 1\)"):
        cls().fit(np.array([[0, 2], [1, 1]]), annotators.X[:2])
    with pytest.raises(ValueError, match="init must be 'vote', an array of starting"):
        cls(init="random").fit(annotators.labels, annotators.X)
    with pytest.raises(ValueError, match=r"init must have shape \(400,\)"):
        cls(init=[0.5, 0.5]).fit(annotators.labels, annotators.X)
    with pytest.raises(ValueError, match=r"init must hold probabilities in \[0, 1\]"):
        cls(init=np.full(400, 1.5)).fit(annotators.labels, annotators.X)


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_a_tuple_of_probabilities_is_a_start_not_parameters(cls, who, count, annotators):
    # a plain tuple is read as P(z_i = 1) per item, never mistaken for the model's
    # parameters (a NamedTuple)
    mu = tuple(float(v) for v in (annotators.truth * 0.8 + 0.1))
    model = cls(init=mu).fit(annotators.labels, annotators.X)
    assert np.mean(model.predict() == annotators.truth) > 0.8


def _public_params(model):
    """The fitted parameters as the model's NamedTuple, built from public attributes."""
    if isinstance(model, SparseExpertsEM):
        return SparseExpertsParams(model.coef_, model.intercept_, model.expert_intercept_,
                                   model.reliability_coef_)
    return LogisticAnnotatorsParams(model.coef_, model.intercept_, model.reliability_coef_,
                                    model.reliability_intercept_)


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_fitted_parameters_are_a_warm_start(cls, who, count, annotators):
    """Both models take their parameters as ``init`` (LogisticAnnotators once put them
    aside silently and started from the vote): from a converged fit, EM stops at once
    where it is; from a bad start, the first E-step reads that start."""
    kw = {"lam": 1.0} if cls is SparseExpertsEM else {}
    cold = cls(**kw).fit(annotators.labels, annotators.X)
    warm = cls(init=_public_params(cold), **kw).fit(annotators.labels, annotators.X)
    assert cold.n_iter_ > 5 and warm.n_iter_ <= 2
    assert warm.objective_ >= cold.objective_ - 1e-6 * abs(cold.objective_)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-2)
    # a start far from the vote's: the first objective is the one of that start
    bad = _public_params(cold)._replace(coef=np.array([-3.0, 3.0]), intercept=2.0)
    seen, vote = [], []
    with pytest.warns(ConvergenceWarning):  # one iteration is not enough, as meant
        cls(init=bad, max_iter=1, callback=lambda s: seen.append(s.objective),
            **kw).fit(annotators.labels, annotators.X)
    with pytest.warns(ConvergenceWarning):
        cls(max_iter=1, callback=lambda s: vote.append(s.objective),
            **kw).fit(annotators.labels, annotators.X)
    assert seen[0] < vote[0] - 1.0


@pytest.mark.parametrize("field", [0, 1, 2, 3])
@pytest.mark.parametrize("bad", ["wrong shape", "complex", "string", "None", "NaN"])
@pytest.mark.parametrize("cls, who, count", MODELS)
def test_hostile_starting_parameters_are_refused_by_name(cls, who, count, annotators, field, bad):
    kw = {"lam": 1.0} if cls is SparseExpertsEM else {}
    good = _public_params(_fit(cls, annotators))
    value = np.asarray(good[field], dtype=float)
    value = {"wrong shape": np.append(value, 1.0), "complex": value + 1j,
             "string": value.astype(str), "None": None,
             "NaN": np.where(np.ones_like(value, bool), np.nan, value)}[bad]
    name = type(good)._fields[field]
    with pytest.raises(ValueError, match=rf"init\.{name}"):
        cls(init=good._replace(**{name: value}), **kw).fit(annotators.labels, annotators.X)


def test_binary_log_joint_by_brute_force():
    rng = np.random.default_rng(1)
    item, expert = np.array([0, 0, 1, 2, 2, 2]), np.array([0, 1, 1, 0, 1, 2])
    label = rng.integers(0, 2, item.size)
    crowd = CrowdLabels(item, expert, label, 4, 3, 2)
    a, b = rng.normal(size=4), rng.normal(size=item.size)
    out = _binary_log_joint(crowd, a, b)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for i in range(4):
        for z in (0, 1):
            p = sig(a[i]) if z == 1 else 1 - sig(a[i])
            for r in np.flatnonzero(item == i):  # right with probability sig(b_r)
                p *= sig(b[r]) if label[r] == z else 1 - sig(b[r])
            assert out[i, z] == pytest.approx(np.log(p), rel=1e-12)


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_convergence_warning_points_at_the_callers_line(cls, who, count, annotators):
    with pytest.warns(Warning) as caught:
        cls(max_iter=1, tol=0.0).fit(annotators.labels, annotators.X)
    assert caught[0].filename == __file__, caught[0].filename


@pytest.mark.parametrize("cls, who, count", MODELS)
def test_new_dataframe_labels_are_matched_to_features_by_task_id(cls, who, count, annotators):
    pd = pytest.importorskip("pandas")
    c = annotators.labels
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item],
                       "worker": [("w", int(e)) for e in c.expert], "label": c.label})
    tasks = sorted(set(df["task"]))
    X = pd.DataFrame(annotators.X[[int(t[1:]) for t in tasks]], index=tasks)
    model = cls().fit(df, X.iloc[::-1])  # rows in any order: matched by id
    new = pd.DataFrame({"task": ["b", "a", "b"], "worker": [("w", 0), ("w", 1), ("w", 2)],
                        "label": [1, 0, 1]})
    Xn = pd.DataFrame([[1.0, 0.0], [-1.0, 2.0]], index=["a", "b"])
    p = model.predict_proba(new, X=Xn)
    np.testing.assert_array_equal(p, model.predict_proba(new, X=Xn.iloc[::-1]))
    # item "a" alone, through the index-coded path, gives the same posterior
    labels_a = ([0], [1], [0])
    if model.expert_ids_ is not None:
        assert model.expert_ids_[1] == ("w", 1)
    np.testing.assert_allclose(p[0], model.predict_proba(labels_a,
                                                         X=Xn.loc[["a"]].to_numpy())[0], atol=1e-12)
    # a new table that uses one class only is read onto the fitted classes
    np.testing.assert_allclose(model.predict_proba(new.iloc[[1]], X=Xn.loc[["a"]]), p[:1])
    with pytest.raises(ValueError, match="cannot be matched to tasks without guessing"):
        model.predict_proba(new, X=Xn.to_numpy())
    with pytest.raises(ValueError, match=r"unknown worker: \[\('zz', 9\)\]"):
        model.predict_proba(pd.DataFrame({"task": ["a"], "worker": [("zz", 9)], "label": [1]}),
                            X=Xn.loc[["a"]])


def test_every_reader_of_labels_with_features_matches_a_dataframe_by_task_id():
    """The path, lambda_max, the majority-vote competitor, the module-level likelihood
    and penalty selection read features like ``fit``: by task id, whatever the row
    order of ``X`` (they once read them by position)."""
    pd = pytest.importorskip("pandas")
    import warnings

    from crowdlearn import MajorityVoteLogistic, select_penalty, sparse_experts_path
    from crowdlearn.features.logistic_annotators import observed_log_likelihood
    from crowdlearn.features.sparse_experts import sparse_experts_lambda_max
    from crowdlearn.simulate.sparse import simulate_sparse_experts

    sim = simulate_sparse_experts(300, np.r_[2.0, -1.5, 0, 0], 0.3, [1.5, 1.0, 0.5],
                                  np.r_[0, 0, 1.0, 0], random_state=0)
    c = sim.labels
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item], "worker": c.expert,
                       "label": c.label})
    tasks = sorted(set(df["task"]))
    X = pd.DataFrame(sim.X[[int(t[1:]) for t in tasks]], index=tasks)
    readers = {
        "path": lambda Z: sparse_experts_path(df, Z, [5.0]).coef[0],
        "lambda_max": lambda Z: sparse_experts_lambda_max(df, Z),
        "majority": lambda Z: MajorityVoteLogistic(random_state=0).fit(df, Z).coef_,
        "likelihood": lambda Z: observed_log_likelihood(Z, df, [1.0, 0, 0, 0], 0.0,
                                                        np.ones((3, 4)), np.zeros(3)),
        "select_penalty": lambda Z: select_penalty(df, Z, [20.0, 5.0], random_state=0).scores,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, read in readers.items():
            right = np.asarray(read(X), dtype=float)
            shuffled = np.asarray(read(X.iloc[::-1]), dtype=float)
            # what a reader by position would see: the reversed rows under the right ids
            misread = np.asarray(read(X.iloc[::-1].set_axis(X.index)), dtype=float)
            # EM stops at a tolerance, so the last bits of the arithmetic (which differ
            # between CPUs and memory layouts) may move its answer a little; a misread
            # moves it a lot. The bound is relative to what a misread does.
            wrong_by = np.max(np.abs(misread - right))
            assert wrong_by > 1e-2 * (1 + np.max(np.abs(right))), name
            assert np.max(np.abs(shuffled - right)) < 0.25 * wrong_by, name
            with pytest.raises(ValueError, match="matched to tasks without guessing"):
                read(X.to_numpy())
