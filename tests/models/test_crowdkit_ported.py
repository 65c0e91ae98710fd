"""crowd-kit's own tests of the models crowdlearn shares with it, ported: crowdlearn called the
way crowd-kit is called (a DataFrame with ``task``/``worker``/``label`` columns,
``fit_predict``, ``fit_predict_proba``, ``labels_``, ``probas_``, ``skills_``, ``priors_``,
``errors_``) and compared with the results crowd-kit's fixtures expect (issue 28, deliverable 2).
crowd-kit itself is not needed: its fixtures are copied below as literal data.

Provenance: crowd-kit (https://github.com/Toloka/crowd-kit, Apache License 2.0, Copyright
Toloka), commit 35f0661 (crowd-kit 1.4.x): the data of ``tests/conftest.py`` (the toy YSDA
crowd, the "simple" crowd, their truth and gold, the bool-label crowd) and of
``tests/aggregation/data_mv.py``, ``data_wawa.py``, ``data_zbs.py``, ``data_gold_mv.py``; the
tests of ``tests/aggregation/test_classification_aggregation.py``,
``test_classification_aggregation_edge_cases.py``, ``test_majority_vote.py``,
``test_ds_aggregation.py``, ``test_glad_aggregation.py`` and ``test_mace_aggregation.py``.
Values are compared with tolerances (crowd-kit's own ``rtol=1e-5`` or ``atol=0.005``).

Where crowdlearn follows a documented convention of its own, the test asserts crowdlearn's
behaviour (with a comment) or is marked ``xfail(strict=True, reason="convention: ...")``:

1. Missing ``task``/``worker``/``label`` columns raise ``ValueError`` (crowdlearn's rule: bad
   input is a ValueError), where crowd-kit raises ``KeyError`` -- asserted.
2. Majority-vote ties: crowd-kit gives a tie to the label that comes first in its frame's
   columns (in practice the label seen first in the data); crowdlearn's ``MajorityVote``
   breaks ties at random, seeded by ``random_state=0`` (reproducible), and
   ``tie_break="lowest"`` gives them to the lowest class id. crowd-kit's expected results on
   tied items are reproduced with ``tie_break="lowest"`` (the toy and simple crowds' first
   labels happen to be the lowest ids); the default's result is asserted separately.
3. ``fit_predict_proba`` returns a new DataFrame equal to ``probas_`` (crowdlearn's getters hand
   out copies, never the model's own arrays), where crowd-kit returns ``probas_`` itself
   (``is``) -- equality asserted.
4. Known labels go by keyword, ``fit(df, gold=...)`` (``DawidSkene``, ``OneCoinDawidSkene``;
   ``GoldMajorityVote`` takes them second, positional or ``gold=``): crowd-kit's positional
   ``fit(df, true_labels)`` is refused by the models with features with "did you mean gold=...",
   and crowd-kit's keyword ``true_labels=`` is spelled ``gold=`` -- asserted.
5. An empty crowd (no label) is refused with ``ValueError`` where crowd-kit returns empty
   results -- xfail(strict).
6. ``GoldMajorityVote`` with the same task twice in the gold (two "true" labels) is refused
   with ``ValueError`` where crowd-kit counts a label once against each -- xfail(strict).
7. Where Dawid--Skene stops: both start with an M-step from the majority vote's fractions.
   crowd-kit's ``n_iter=k`` then loops k times over E-step, M-step and returns the last
   M-step's ``errors_``/``priors_`` with the *previous* posterior (``n_iter=0``: the vote
   itself); crowdlearn always ends on an E-step, so ``probas_`` is the posterior under the
   ``errors_``/``priors_`` it reports. Hence crowd-kit's ``n_iter=k`` matrices are
   crowdlearn's ``max_iter=k`` ones, and crowd-kit's ``n_iter=k`` posterior is crowdlearn's
   ``max_iter=k-1`` one (``n_iter=0``: ``MajorityVote``) -- asserted so.
8. Iteration counts: crowd-kit's ``n_iter``/``tol`` are crowdlearn's ``max_iter``/``tol``
   (``max_iter=0``: the start and one E-step).
9. ``predict(df)`` returns class indices (an array, as for every crowdlearn model), where
   crowd-kit's returns a Series of labels by task id; ``labels_`` and ``fit_predict`` are that
   Series in both (``predict_proba(df)`` is a frame by task id in both) -- asserted.

Not ported (no such option in crowdlearn, or crowd-kit internals): ``DawidSkene``'s
``initial_error``/``initial_error_strategy``; ``MajorityVote(on_missing_skill=...,
default_skill=...)`` (crowdlearn's ``WeightedMajorityVote`` needs a skill for every worker and
refuses a missing one -- crowd-kit's ``"error"`` case, ported); GLAD's ``_init``/``_e_step``/
``_gradient_Q`` internals, and the E-step at crowd-kit's fixed starting point (alpha = 1,
log(1/beta) = 1; crowdlearn starts from an M-step from the majority vote, and its own
gradient checks are in ``test_glad.py``); MACE's ``thetas_`` after
5 VB iterations from crowd-kit's own random start; MMSR, ROVER, HRRASA, segmentation and the
other models crowdlearn does not have.
"""

import warnings

import numpy as np
import pytest

import crowdlearn as cl

pd = pytest.importorskip("pandas")

# -- crowd-kit's fixtures (tests/conftest.py), as literal data --------------------------------
TOY_ROWS = [
    ["w1", "t1", "no"], ["w1", "t2", "yes"], ["w1", "t3", "yes"], ["w1", "t4", "yes"],
    ["w1", "t5", "yes"], ["w2", "t1", "yes"], ["w2", "t2", "yes"], ["w2", "t3", "no"],
    ["w2", "t4", "yes"], ["w2", "t5", "no"], ["w3", "t2", "yes"], ["w3", "t3", "no"],
    ["w3", "t4", "yes"], ["w3", "t5", "no"], ["w4", "t1", "yes"], ["w4", "t2", "no"],
    ["w4", "t3", "yes"], ["w4", "t4", "yes"], ["w4", "t5", "no"], ["w5", "t1", "no"],
    ["w5", "t2", "no"], ["w5", "t3", "no"], ["w5", "t4", "yes"], ["w5", "t5", "no"],
]
TOY_TRUTH = {"t1": "yes", "t2": "yes", "t3": "no", "t4": "yes", "t5": "no"}
TOY_GOLD = {"t1": "yes", "t2": "yes"}

_T = "1231239876--5fac0d234ffb2f3b00893"  # the simple crowd's task ids share this prefix
_W = {"good1": "bde3b214b06c1efa6cb1bc6284dc72d2", "good2": "b17c3301ad2ccbb798716fdd405d16e8",
      "good3": "a452e450f913cfa987cad58d50393718", "good4": "0f65edea0a6dc7b9acba1dea313bbb3d",
      "fraud": "0c3eb7d5fcc414db137c4180a654c06e", "careless": "e563e2fb32fce9f00123a65a1bc78c55"}
SIMPLE_ROWS = [[_W[w], _T + t, label] for w, t, label in [
    ("good1", "eec", "goose"), ("good1", "efb", "parrot"), ("good1", "f03", "goose"),
    ("good1", "f05", "goose"), ("good1", "f02", "parrot"), ("good1", "f08", "parrot"),
    ("good2", "efb", "parrot"), ("good2", "ee8", "chicken"), ("good2", "f07", "parrot"),
    ("good2", "efd", "chicken"), ("good2", "ee4", "chicken"), ("good2", "f03", "goose"),
    ("good3", "ee8", "chicken"), ("good3", "eec", "goose"), ("good3", "f05", "goose"),
    ("good3", "f02", "parrot"), ("good3", "f08", "parrot"),
    ("good4", "eec", "goose"), ("good4", "ee8", "chicken"), ("good4", "f03", "goose"),
    ("good4", "ee4", "chicken"),
    ("fraud", "eec", "parrot"), ("fraud", "efb", "parrot"), ("fraud", "f07", "parrot"),
    ("fraud", "efd", "parrot"), ("fraud", "ee4", "parrot"), ("fraud", "f05", "parrot"),
    ("careless", "efb", "parrot"), ("careless", "ee8", "goose"), ("careless", "f02", "parrot"),
    ("careless", "f08", "parrot"), ("careless", "f07", "parrot"), ("careless", "efd", "goose"),
]]
SIMPLE_TRUTH = {_T + t: c for t, c in [
    ("eec", "goose"), ("f03", "goose"), ("f05", "goose"), ("efb", "parrot"), ("f02", "parrot"),
    ("f08", "parrot"), ("f07", "parrot"), ("ee8", "chicken"), ("efd", "chicken"),
    ("ee4", "chicken")]}
SIMPLE_GOLD = {_T + "eec": "goose", _T + "efb": "parrot", _T + "ee8": "chicken"}
SIMPLE_TASKS = [_T + t for t in ("ee4", "ee8", "eec", "efb", "efd", "f02", "f03", "f05", "f07",
                                 "f08")]
BOOL_ROWS = [["w1", "t1", True], ["w1", "t2", True], ["w2", "t1", True], ["w2", "t2", True],
             ["w3", "t1", False], ["w3", "t2", False]]

# -- expected results (tests/aggregation/data_mv.py, data_wawa.py, data_zbs.py, data_gold_mv.py)
# skills by worker, probabilities by task (rows in TOY order t1..t5 / SIMPLE_TASKS order) with
# the columns named
TOY_SKILLS_VOTE = [0.6, 0.8, 1.0, 0.4, 0.8]  # mv, wawa and zbs alike
SIMPLE_SKILLS_VOTE = {"fraud": 1 / 3, "good4": 1.0, "good3": 1.0, "good2": 1.0, "good1": 1.0,
                      "careless": 2 / 3}
EXPECTED = {
    "mv": {
        "toy_labels": ["no", "yes", "no", "yes", "no"],
        "toy_skills": TOY_SKILLS_VOTE,
        "toy_probas": (["yes", "no"], [[0.5, 0.5], [0.6, 0.4], [0.4, 0.6], [1.0, 0.0],
                                       [0.2, 0.8]]),
        "simple_skills": SIMPLE_SKILLS_VOTE,
        "simple_probas": (["chicken", "goose", "parrot"], [
            [2 / 3, 0.0, 1 / 3], [3 / 4, 1 / 4, 0.0], [0.0, 3 / 4, 1 / 4], [0.0, 0.0, 1.0],
            [1 / 3, 1 / 3, 1 / 3], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 2 / 3, 1 / 3],
            [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    },
    "wawa": {
        "toy_labels": ["no", "yes", "no", "yes", "no"],
        "toy_skills": TOY_SKILLS_VOTE,
        "toy_probas": (["yes", "no"], [[0.461538, 0.538462], [0.666667, 0.333333],
                                       [0.277778, 0.722222], [1.0, 0], [0.166667, 0.833333]]),
        "simple_skills": SIMPLE_SKILLS_VOTE,
        "simple_probas": (["chicken", "goose", "parrot"], [
            [0.857143, 0, 0.142857], [0.818182, 0.181818, 0], [0.0, 0.9, 0.1], [0.0, 0.0, 1.0],
            [0.500000, 0.333333, 0.166667], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0],
            [0.0, 0.857143, 0.142857], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    },
    "zbs": {
        "toy_labels": ["no", "yes", "no", "yes", "no"],
        "toy_skills": TOY_SKILLS_VOTE,
        "toy_probas": (["no", "yes"], [[0.538462, 0.461538], [0.333333, 0.666667],
                                       [0.722222, 0.277778], [0.0, 1.0], [0.833333, 0.166667]]),
        "simple_skills": SIMPLE_SKILLS_VOTE,
        "simple_probas": (["chicken", "goose", "parrot"], [
            [0.857143, 0.0, 0.142857], [0.818182, 0.181818, 0.0], [0.0, 0.9, 0.1],
            [0.0, 0.0, 1.0], [0.5, 0.333333, 0.166667], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0],
            [0.0, 0.857143, 0.142857], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    },
    "gold": {
        "toy_labels": [TOY_TRUTH[t] for t in ("t1", "t2", "t3", "t4", "t5")],
        "toy_skills": [0.5, 1.0, 1.0, 0.5, 0.0],
        "toy_probas": (["yes", "no"], [[0.75, 0.25], [0.833333, 0.166667],
                                       [0.333333, 0.666667], [1.0, 0.0], [0.166667, 0.833333]]),
        "simple_skills": {"fraud": 0.5, "good4": 1.0, "good3": 1.0, "good2": 1.0, "good1": 1.0,
                          "careless": 0.5},
        "simple_probas": (["chicken", "goose", "parrot"], [
            [0.8, 0.0, 0.2], [0.857143, 0.142857, 0.0], [0.0, 0.857143, 0.142857],
            [0.0, 0.0, 1.0], [0.5, 0.25, 0.25], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0],
            [0.0, 0.8, 0.2], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    },
}


def frame(rows, columns=("worker", "task", "label")):
    return pd.DataFrame(rows, columns=list(columns))


def toy():
    return frame(TOY_ROWS)


def simple():
    return frame(SIMPLE_ROWS)


def series(mapping, name=None, index_name="task"):
    s = pd.Series(mapping, name=name)
    s.index.name = index_name
    return s


def truth(dataset):
    return series(TOY_TRUTH if dataset == "toy" else SIMPLE_TRUTH, "agg_label")


def gold(dataset):
    return series(TOY_GOLD if dataset == "toy" else SIMPLE_GOLD)


def expected_labels(results, dataset):
    if dataset == "simple":  # every simple_labels_result_* fixture is the ground truth
        return truth("simple")
    return series(dict(zip(["t1", "t2", "t3", "t4", "t5"], EXPECTED[results]["toy_labels"])),
                  "agg_label")


def expected_skills(results, dataset):
    skills = EXPECTED[results][f"{dataset}_skills"]
    if dataset == "toy":
        return series(dict(zip(["w1", "w2", "w3", "w4", "w5"], skills)), "skill", "worker")
    return series({_W[w]: s for w, s in skills.items()}, "skill", "worker")


def expected_probas(results, dataset):
    columns, values = EXPECTED[results][f"{dataset}_probas"]
    tasks = ["t1", "t2", "t3", "t4", "t5"] if dataset == "toy" else SIMPLE_TASKS
    df = pd.DataFrame(values, columns=pd.Index(columns, name="label"),
                      index=pd.Index(tasks, name="task"))
    return df


def assert_series(actual, expected, **kw):
    pd.testing.assert_series_equal(actual.sort_index(), expected.sort_index(), rtol=1e-5, **kw)


def assert_frame(actual, expected, **kw):
    pd.testing.assert_frame_equal(actual, expected, check_like=True, rtol=1e-5, **kw)


def accuracy(predicted, expected):
    """crowd-kit's ``evaluate(..., evaluate_equal)``: share of the tasks predicted right."""
    return float((predicted.reindex(expected.index) == expected).mean())


# -- test_classification_aggregation.py: test_fit_predict_classification_aggregations_methods --
VOTES = {"mv": lambda: cl.MajorityVote(tie_break="lowest"),  # convention 2
         "wawa": cl.Wawa, "zbs": cl.ZeroBasedSkill}


@pytest.mark.parametrize("dataset", ["toy", "simple"])
@pytest.mark.parametrize("method", ["fit_predict", "fit_predict_proba"])
@pytest.mark.parametrize("results", ["mv", "wawa", "zbs"])
def test_fit_predict_classification_aggregations_methods(results, method, dataset):
    answers = toy() if dataset == "toy" else simple()
    aggregator = VOTES[results]()
    something = getattr(aggregator, method)(answers)
    assert_series(aggregator.labels_, expected_labels(results, dataset))
    assert_series(aggregator.skills_, expected_skills(results, dataset))
    assert_frame(aggregator.probas_, expected_probas(results, dataset))
    # convention 3: an equal copy, not the attribute itself
    if "proba" in method:
        assert_frame(something, aggregator.probas_)
    else:
        assert_series(something, aggregator.labels_)
    # crowd-kit's naming convention of the result Series
    assert aggregator.labels_.name == "agg_label"
    assert aggregator.skills_.name == "skill"


@pytest.mark.parametrize("dataset", ["toy", "simple"])
@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_gold_majority_vote_fit_then_predict(method, dataset):
    answers = toy() if dataset == "toy" else simple()
    aggregator = cl.GoldMajorityVote()
    assert aggregator.fit(answers, gold(dataset)) is aggregator
    assert_series(aggregator.skills_, expected_skills("gold", dataset))
    something = getattr(aggregator, method)(answers)
    assert_series(aggregator.labels_, expected_labels("gold", dataset))
    assert_series(aggregator.skills_, expected_skills("gold", dataset))
    assert_frame(aggregator.probas_, expected_probas("gold", dataset))
    if method == "predict_proba":
        # a frame by task id (issue 28): the same as probas_
        assert_frame(something, aggregator.probas_)
    else:
        # convention 9: predict() gives class indices; read through the class ids they are
        # labels_
        classes = aggregator.probas_.columns.to_numpy()
        np.testing.assert_array_equal(classes[np.asarray(something)],
                                      aggregator.labels_.to_numpy())


def test_majority_vote_default_ties_are_seeded_and_reproducible():
    # convention 2: crowd-kit gives the tie of t1 (yes 1/2, no 1/2) to "no"; crowdlearn's
    # default breaks it at random, seeded, so two runs agree
    runs = [cl.MajorityVote().fit_predict(toy()) for _ in range(3)]
    for run in runs[1:]:
        assert_series(run, runs[0])
    assert cl.MajorityVote().fit(toy()).n_ties_ == 1
    pd.testing.assert_series_equal(runs[0].drop("t1"), expected_labels("mv", "toy").drop("t1"))


# -- test_classification_aggregation_edge_cases.py --------------------------------------------
NO_TASK = {"worker": ["w1"], "label": ["no"]}
NO_LABEL = {"worker": ["w1"], "task": ["t1"]}
NO_WORKER = {"task": ["t1"], "label": ["no"]}
GOLD_NO_TASK = {"label": ["no"]}
GOLD_NO_LABEL = {"task": ["t1"]}
MISSING = {"no task": NO_TASK, "no label": NO_LABEL, "no worker": NO_WORKER}
VOTE_MODELS = [cl.MajorityVote, cl.Wawa, cl.ZeroBasedSkill]


@pytest.mark.parametrize("answers", list(MISSING), ids=str)
@pytest.mark.parametrize("method", ["fit_predict", "fit_predict_proba"])
@pytest.mark.parametrize("Model", VOTE_MODELS, ids=lambda c: c.__name__)
def test_agg_raise_on_less_columns(Model, method, answers):
    # convention 1: ValueError where crowd-kit raises KeyError
    with pytest.raises(ValueError):
        getattr(Model(), method)(pd.DataFrame(MISSING[answers]))


@pytest.mark.parametrize("answers", [NO_TASK, NO_LABEL, NO_WORKER, GOLD_NO_TASK, GOLD_NO_LABEL],
                         ids=["no task", "no label", "no worker", "gold no task",
                              "gold no label"])
def test_gold_mv_raise_in_fit(answers):
    # convention 1
    with pytest.raises(ValueError):
        cl.GoldMajorityVote().fit(pd.DataFrame(answers), gold("toy"))


@pytest.mark.parametrize("answers", list(MISSING), ids=str)
@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_gold_mv_raise_in_predict(method, answers):
    aggregator = cl.GoldMajorityVote().fit(toy(), gold("toy"))
    with pytest.raises(ValueError):  # convention 1
        getattr(aggregator, method)(pd.DataFrame(MISSING[answers]))


def test_gold_mv_empty():
    # convention: an empty crowd is refused with a ValueError (crowd-kit returns an empty frame)
    with pytest.raises(ValueError, match="has no rows"):
        cl.GoldMajorityVote().fit_predict_proba(
            pd.DataFrame({"task": [], "worker": [], "label": []}), pd.Series(dtype=float))


@pytest.mark.parametrize("Model", [cl.ZeroBasedSkill, cl.DawidSkene, cl.GLAD],
                         ids=lambda c: c.__name__)
def test_zero_iter(Model):
    # convention 8: crowd-kit's n_iter=0 is max_iter=0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        answers = Model(max_iter=0).fit_predict(simple())
    assert len(answers.index.difference(truth("simple").index)) == 0
    assert len(truth("simple").index.difference(answers.index)) == 0


# -- test_majority_vote.py ------------------------------------------------------------------
def test_majority_vote_with_skills():
    # crowd-kit's MajorityVote().fit_predict(df, skills=s) is a linear weighted vote
    skills = expected_skills("mv", "simple")
    mv = cl.WeightedMajorityVote(skills, weights="linear")
    mv.fit_predict(simple())
    assert_series(mv.skills_, skills)


def test_majority_vote_with_missing_skills_error():
    skills = expected_skills("mv", "simple").drop(_W["fraud"])
    with pytest.raises(ValueError):
        cl.WeightedMajorityVote(skills, weights="linear").fit_predict(simple())


MULTIPLE_GT_ROWS = [["t1", "w1", "l1"], ["t2", "w1", "l1"], ["t3", "w1", "l1"],
                    ["t1", "w2", "l2"], ["t2", "w2", "l1"], ["t3", "w2", "l2"],
                    ["t1", "w3", "l3"], ["t3", "w3", "l3"]]


def test_gold_mv_multiple_gt():
    # t1 has two gold labels: an answer equal to either is right (crowd-kit's get_accuracy)
    df = frame(MULTIPLE_GT_ROWS, ("task", "worker", "label"))
    gt = pd.Series(["l1", "l2", "l2"], index=["t1", "t1", "t3"])
    gmv = cl.GoldMajorityVote()
    aggregated = gmv.fit_predict(df, gold=gt)  # convention 4: crowd-kit's true_labels=
    assert_series(gmv.skills_, series({"w1": 0.5, "w2": 1.0, "w3": 0.0}, "skill", "worker"))
    assert_series(aggregated, series({"t1": "l2", "t2": "l1", "t3": "l2"}, "agg_label"))


def test_gold_mv_keyword_gold_is_crowdkits_true_labels():
    # convention 4: fit_predict(df, true_labels=gt) is fit_predict(df, gold=gt)
    gmv = cl.GoldMajorityVote()
    labels = gmv.fit_predict(toy(), gold=gold("toy"))
    assert_series(labels, expected_labels("gold", "toy"))
    assert_series(gmv.skills_, expected_skills("gold", "toy"))


# -- test_ds_aggregation.py ---------------------------------------------------------------------
ITERATIONS = [(10, 0), (100500, 1e-5)]  # crowd-kit's (n_iter, tol)


def fit_quietly(model, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        return model.fit(*args, **kw)


@pytest.mark.parametrize("n_iter, tol", ITERATIONS)
@pytest.mark.parametrize("dataset", ["toy", "simple"])
def test_aggregate_ds(dataset, n_iter, tol):
    answers = toy() if dataset == "toy" else simple()
    ds = fit_quietly(cl.DawidSkene(max_iter=n_iter, tol=tol), answers)
    assert_series(ds.labels_, truth(dataset))


@pytest.mark.parametrize("n_iter, tol", ITERATIONS)
def test_aggregate_ds_gold_on_toy_ysda(n_iter, tol):
    # convention 4: fit(df, gold=...) where crowd-kit writes fit(df, true_labels)
    ds = fit_quietly(cl.DawidSkene(max_iter=n_iter, tol=tol), toy(), gold=gold("toy"))
    assert_series(ds.labels_, truth("toy"))


def test_ds_positional_gold_is_refused_with_a_hint():
    # convention 4: crowd-kit's positional true_labels is not silently read as features
    with pytest.raises(ValueError, match="did you mean gold="):
        cl.DawidSkene().fit(toy(), gold("toy"))


@pytest.mark.parametrize("n_iter", [0, 1, 2])
def test_ds_gold_probas_correction_with_iters(n_iter):
    ds = fit_quietly(cl.DawidSkene(max_iter=n_iter), toy(), gold=gold("toy"))
    probas = ds.probas_
    for task, label in TOY_GOLD.items():
        assert probas.loc[task, label] == pytest.approx(1.0, abs=1e-8)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, atol=1e-8)
    assert_series(ds.labels_[list(TOY_GOLD)], gold("toy"), check_names=False)


@pytest.mark.parametrize("n_iter, tol", ITERATIONS)
@pytest.mark.parametrize("dataset", ["toy", "simple"])
def test_aggregate_hds(dataset, n_iter, tol):
    answers = toy() if dataset == "toy" else simple()
    make = lambda: cl.OneCoinDawidSkene(max_iter=n_iter, tol=tol)  # noqa: E731
    assert_series(fit_quietly(make(), answers).labels_, truth(dataset))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        assert_series(make().fit_predict(answers), truth(dataset))
        probas = make().fit_predict_proba(answers)
    assert ((probas >= 0) & (probas <= 1)).all().all()


# crowd-kit's step-by-step fixtures: its crowd is the toy crowd without w3's label on t1
STEP_ROWS = [
    ["t1", "w1", "no"], ["t1", "w2", "yes"], ["t1", "w4", "yes"], ["t1", "w5", "no"],
    ["t2", "w1", "yes"], ["t2", "w2", "yes"], ["t2", "w3", "yes"], ["t2", "w4", "no"],
    ["t2", "w5", "no"], ["t3", "w1", "yes"], ["t3", "w2", "no"], ["t3", "w3", "no"],
    ["t3", "w4", "yes"], ["t3", "w5", "no"], ["t4", "w1", "yes"], ["t4", "w2", "yes"],
    ["t4", "w3", "yes"], ["t4", "w4", "yes"], ["t4", "w5", "yes"], ["t5", "w1", "yes"],
    ["t5", "w2", "no"], ["t5", "w3", "no"], ["t5", "w4", "no"], ["t5", "w5", "no"],
]
STEP = {  # n_iter -> probas (no, yes) of t1..t5, priors (no, yes), labels, errors
    0: {"probas": [[0.5, 0.5], [0.4, 0.6], [0.6, 0.4], [0.0, 1.0], [0.8, 0.2]],
        "priors": [0.46, 0.54], "labels": ["no", "yes", "no", "yes", "no"],
        # (worker, observed label) -> P(label | true no), P(label | true yes)
        "errors": [["w1", "no", 0.22, 0.19], ["w1", "yes", 0.78, 0.81],
                   ["w2", "no", 0.61, 0.22], ["w2", "yes", 0.39, 0.78],
                   ["w3", "no", 0.78, 0.27], ["w3", "yes", 0.22, 0.73],
                   ["w4", "no", 0.52, 0.30], ["w4", "yes", 0.48, 0.70],
                   ["w5", "no", 1.00, 0.63], ["w5", "yes", 0.00, 0.37]]},
    1: {"probas": [[0.35, 0.65], [0.26, 0.74], [0.87, 0.13], [0.00, 1.00], [0.95, 0.05]],
        "priors": [0.49, 0.51], "labels": ["yes", "yes", "no", "yes", "no"],
        "errors": [["w1", "no", 0.14, 0.25], ["w1", "yes", 0.86, 0.75],
                   ["w2", "no", 0.75, 0.07], ["w2", "yes", 0.25, 0.93],
                   ["w3", "no", 0.87, 0.09], ["w3", "yes", 0.13, 0.91],
                   ["w4", "no", 0.50, 0.31], ["w4", "yes", 0.50, 0.69],
                   ["w5", "no", 1.00, 0.61], ["w5", "yes", 0.00, 0.39]]},
}


def step_frames(n_iter):
    expected = STEP[n_iter]
    probas = pd.DataFrame(expected["probas"], columns=pd.Index(["no", "yes"], name="label"),
                          index=pd.Index(["t1", "t2", "t3", "t4", "t5"], name="task"))
    priors = pd.Series(expected["priors"], pd.Index(["no", "yes"], name="label"), name="prior")
    labels = series(dict(zip(["t1", "t2", "t3", "t4", "t5"], expected["labels"])), "agg_label")
    errors = pd.DataFrame(expected["errors"], columns=["worker", "label", "no", "yes"]) \
        .set_index(["worker", "label"])
    errors.columns.name = "label"
    return probas, priors, labels, errors


def fit_step(max_iter):
    return fit_quietly(cl.DawidSkene(max_iter=max_iter),
                       frame(STEP_ROWS, ("task", "worker", "label")))


def test_dawid_skene_step_by_step_start_is_the_majority_vote():
    # crowd-kit's n_iter=0 probas_ and labels_ are the majority vote's (ties to the first
    # label, convention 2)
    probas, _, labels, _ = step_frames(0)
    mv = cl.MajorityVote(tie_break="lowest")
    assert_frame(mv.fit_predict_proba(frame(STEP_ROWS, ("task", "worker", "label"))), probas,
                 atol=0.005)
    assert_series(mv.labels_, labels)


@pytest.mark.parametrize("n_iter", [0, 1])
def test_dawid_skene_step_by_step_matrices(n_iter):
    # crowd-kit's n_iter=k priors_ and errors_ (k M-steps after the one from the vote) are
    # crowdlearn's max_iter=k (convention 7)
    _, priors, _, errors = step_frames(n_iter)
    ds = fit_step(n_iter)
    assert_series(ds.priors_, priors, atol=0.005)
    assert_frame(ds.errors_, errors, atol=0.005)


def test_dawid_skene_step_by_step_posterior():
    # crowd-kit's n_iter=1 probas_ and labels_ (the E-step under its n_iter=0 matrices) are
    # crowdlearn's max_iter=0, whose posterior goes with its matrices (convention 7)
    probas, _, labels, _ = step_frames(1)
    ds = fit_step(0)
    assert_frame(ds.probas_, probas, atol=0.005)
    assert_series(ds.labels_, labels)


def test_dawid_skene_on_empty_input():
    # convention: an empty crowd is refused with a ValueError (crowd-kit returns an empty frame)
    with pytest.raises(ValueError, match="has no rows"):
        cl.DawidSkene(max_iter=10).fit(pd.DataFrame([], columns=["task", "worker", "label"]))


@pytest.mark.parametrize("overlap", [3, 300, 30000])
def test_dawid_skene_overlap(overlap):
    data = pd.DataFrame([{"task": task, "worker": worker,
                          "label": "yes" if (worker - task) % 3 else "no"}
                         for worker in range(overlap) for task in range(3)])
    ds = fit_quietly(cl.DawidSkene(max_iter=20), data)
    expected_probas = pd.DataFrame([[1 / 3, 2 / 3]] * 3, columns=pd.Index(["no", "yes"],
                                                                           name="label"),
                                   index=pd.Index(range(3), name="task"))
    assert_frame(ds.probas_, expected_probas, atol=0.005)
    assert_series(ds.labels_, series({0: "yes", 1: "yes", 2: "yes"}, "agg_label"))
    assert_series(ds.priors_, pd.Series([1 / 3, 2 / 3], pd.Index(["no", "yes"], name="label"),
                                        name="prior"), atol=0.005)


@pytest.mark.parametrize("Model", [cl.DawidSkene, cl.OneCoinDawidSkene],
                         ids=lambda c: c.__name__)
def test_ds_on_bool_labels(Model):
    model = fit_quietly(Model(max_iter=20), frame(BOOL_ROWS))
    assert_series(model.labels_, series({"t1": True, "t2": True}, "agg_label"))


# -- test_glad_aggregation.py ---------------------------------------------------------------------
@pytest.mark.parametrize("n_iter, tol", [(100, 0), (100500, 1e-5)])
@pytest.mark.parametrize("dataset", ["toy", "simple"])
def test_aggregate_glad(dataset, n_iter, tol):
    answers = toy() if dataset == "toy" else simple()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        predicted = cl.GLAD(max_iter=n_iter, tol=tol).fit_predict(answers)
    assert accuracy(predicted, truth(dataset)) == 1.0


# -- test_mace_aggregation.py ---------------------------------------------------------------------
@pytest.mark.parametrize("dataset", ["toy", "simple"])
def test_aggregate_mace(dataset):
    # crowd-kit: MACE(n_restarts=1, n_iter=5) by variational Bayes ("vb") is right on every
    # task of both crowds; by EM ("em") on the simple crowd on 9 of 10
    answers = toy() if dataset == "toy" else simple()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        predicted = cl.MACE(n_init=1, random_state=0).fit_predict(answers)
    assert accuracy(predicted, truth(dataset)) == 1.0
