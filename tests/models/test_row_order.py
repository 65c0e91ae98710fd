"""Every crowd model gives the same fit whatever the order of the label rows: a sample.

Row order is made irrelevant where the labels are read and put in one canonical order
(``tests/core/test_row_order_readers.py`` checks that on many random crowds, without a fit);
here every model and setting is fitted on one small random crowd (seeded: 2 to 4 classes,
some items with no label, some labels repeated; binary labels for the models that take
only those) and on the same crowd with its rows shuffled, features ``X`` and gold items
aligned by item, plus a hypothesis sample of crowds and models. The answers agree: the same
predictions and number of iterations, posteriors, objective histories and parameters equal
to 1e-12 (the arithmetic is in fact the same, so they are bit-identical; before the
canonical order, sums over the labels taken in another order differed in the last bits,
which decided ties -- a weighted vote's predictions -- and, amplified by GLAD's truncated
M-step or MACE's flat optima, changed answers).

SQUAREM (``accelerate=True``) can still stop on a flat optimum, the same for every row
order but not pinned down by the data; the fit reports it (``flat_optimum_`` and a
``DegenerateFitWarning``: tests/models/test_mace.py), and on these crowds it does not happen
(the last section).

``LatentClassModel`` and ``BernoulliNaiveBayes`` read a feature matrix (one row per item),
not label rows, so they have no row order to test here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crowdlearn as cl
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning
from crowdlearn.labels import from_dense, from_triples

TIGHT = dict(rtol=1e-12, atol=1e-12)


def random_crowd(seed: int, binary: bool = False):
    """Triples of a random crowd and their sizes, a shuffle of its rows, features and gold."""
    rng = np.random.default_rng(seed)
    n, J = int(rng.integers(15, 40)), int(rng.integers(3, 8))
    K = 2 if binary else int(rng.integers(2, 5))
    truth = rng.integers(K, size=n)
    accuracy = rng.uniform(0.3, 0.95, J)
    item = rng.integers(n - 2, size=3 * n)  # the last two items get no label
    expert = rng.integers(J, size=item.size)
    right = rng.random(item.size) < accuracy[expert]
    label = np.where(right, truth[item], rng.integers(K, size=item.size))
    item, expert, label = (np.concatenate([a, a[:5]]) for a in (item, expert, label))  # repeats
    gold = np.full(n, -1)
    known = rng.choice(n, 4, replace=False)
    gold[known] = truth[known]
    X = rng.normal(size=(n, 3))
    X_binary = (rng.random((n, 4)) < 0.5).astype(float)
    perm = np.random.default_rng(1000 + seed).permutation(item.size)
    return (item, expert, label, n, J, K), perm, X, X_binary, gold


def crowds(seed: int, binary: bool = False):
    """The crowd as given and with its rows shuffled (``CrowdLabels``), and the extras."""
    (item, expert, label, n, J, K), perm, X, X_binary, gold = random_crowd(seed, binary)
    pair = [from_triples(item[p], expert[p], label[p], n_items=n, n_experts=J, n_classes=K)
            for p in (np.arange(item.size), perm)]
    return pair, {"X": X, "X_binary": X_binary, "gold": gold}


def quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        return fit()


# name -> (fit(labels, extras) -> fitted model, binary labels only)
MODELS = {
    "MajorityVote": (lambda c, e: cl.MajorityVote(unlabelled="uniform").fit(c), False),
    "MajorityVote-lowest": (lambda c, e: cl.MajorityVote(tie_break="lowest",
                                                         unlabelled="uniform").fit(c), False),
    "WeightedMajorityVote": (lambda c, e: cl.WeightedMajorityVote(
        np.linspace(0.4, 0.9, c.n_experts)).fit(c), False),
    "WeightedMajorityVote-log-odds": (lambda c, e: cl.WeightedMajorityVote(
        np.linspace(0.4, 0.9, c.n_experts), weights="log-odds").fit(c), False),
    "Wawa": (lambda c, e: cl.Wawa().fit(c), False),
    "ZeroBasedSkill": (lambda c, e: cl.ZeroBasedSkill().fit(c), False),
    "ZeroBasedSkill-log-odds": (lambda c, e: cl.ZeroBasedSkill(weights="log-odds").fit(c),
                                False),
    "GoldMajorityVote": (lambda c, e: cl.GoldMajorityVote(default_skill=0.5).fit(c, e["gold"]),
                         False),
    "DawidSkene": (lambda c, e: cl.DawidSkene().fit(c), False),
    "DawidSkene-accelerate": (lambda c, e: cl.DawidSkene(accelerate=True).fit(c), False),
    "DawidSkene-alpha": (lambda c, e: cl.DawidSkene(alpha=1.0).fit(c), False),
    "DawidSkene-gold": (lambda c, e: cl.DawidSkene().fit(c, gold=e["gold"]), False),
    "DawidSkene-restarts": (lambda c, e: cl.DawidSkene(n_init=3, random_state=0).fit(c), False),
    "DawidSkene-features": (lambda c, e: cl.DawidSkene(alpha=1.0).fit(c, e["X_binary"]), False),
    "DawidSkene-prior": (lambda c, e: cl.DawidSkene(
        confusion_prior=4 * np.eye(c.n_classes) + 1).fit(c), False),
    "OneCoinDawidSkene": (lambda c, e: cl.OneCoinDawidSkene().fit(c), False),
    "OneCoinDawidSkene-accelerate": (lambda c, e: cl.OneCoinDawidSkene(
        accelerate=True, alpha=1.0).fit(c), False),
    "GLAD": (lambda c, e: cl.GLAD().fit(c), False),
    "GLAD-class-prior": (lambda c, e: cl.GLAD(fit_class_prior=True).fit(c), False),
    "GLAD-no-priors": (lambda c, e: cl.GLAD(alpha_prior=None, beta_prior=None).fit(c), False),
    "GLAD-restarts": (lambda c, e: cl.GLAD(n_init=3, random_state=0).fit(c), False),
    "MACE": (lambda c, e: cl.MACE(n_init=2, random_state=0).fit(c), False),
    "MACE-uniform-prior": (lambda c, e: cl.MACE(n_init=3, random_state=0,
                                                fit_class_prior=False).fit(c), False),
    "MACE-accelerate": (lambda c, e: cl.MACE(n_init=2, random_state=0, accelerate=True).fit(c),
                        False),
    "MACE-priors": (lambda c, e: cl.MACE(n_init=2, random_state=1, theta_prior=(2.0, 2.0),
                                         strategy_prior=1.5).fit(c), False),
    "MACE-vb": (lambda c, e: cl.MACE(method="vb", n_init=2, random_state=0).fit(c), False),
    "LogisticAnnotators": (lambda c, e: cl.LogisticAnnotators().fit(c, e["X"]), True),
    "SparseExpertsEM": (lambda c, e: cl.SparseExpertsEM(lam=0.5).fit(c, e["X"]), True),
    "SparseExpertsEM-accelerate": (lambda c, e: cl.SparseExpertsEM(
        lam=0.5, accelerate=True, expert_prior=1.0).fit(c, e["X"]), True),
    "MajorityVoteLogistic": (lambda c, e: cl.MajorityVoteLogistic(
        lam=0.1, random_state=0).fit(c, e["X"]), True),
}

EM_RECORD = ("n_iter_", "converged_", "flat_optimum_")
PARAMS = ("log_likelihood_history_", "class_prior_", "confusion_", "accuracy_", "skills_",
          "weights_", "ability_", "log_beta_", "trust_", "strategy_", "coef_", "intercept_",
          "reliability_coef_", "reliability_intercept_", "expert_intercept_", "feature_prob_")


def assert_same_fit(a, b):
    """The same predictions and EM record; posteriors and parameters equal to 1e-12."""
    np.testing.assert_array_equal(np.asarray(a.predict()), np.asarray(b.predict()))
    if hasattr(a, "posterior_"):
        np.testing.assert_allclose(a.posterior_, b.posterior_, **TIGHT)
    for name in EM_RECORD:
        if hasattr(a, name):
            assert getattr(a, name) == getattr(b, name), name
    for name in PARAMS:
        if hasattr(a, name):
            np.testing.assert_allclose(np.asarray(getattr(a, name), dtype=float),
                                       np.asarray(getattr(b, name), dtype=float),
                                       err_msg=name, **TIGHT)


@pytest.mark.parametrize("name", list(MODELS))
def test_fit_does_not_depend_on_row_order(name):
    fit, binary = MODELS[name]
    (given_, shuffled), extras = crowds(0, binary)
    a = quiet(lambda: fit(given_, extras))
    b = quiet(lambda: fit(shuffled, extras))
    if isinstance(a, cl.MajorityVoteLogistic):  # no posterior: a classifier of X
        np.testing.assert_array_equal(a.predict(extras["X"]), b.predict(extras["X"]))
        np.testing.assert_array_equal(a.vote_, b.vote_)
        np.testing.assert_allclose(a.coef_, b.coef_, **TIGHT)
    else:
        assert_same_fit(a, b)


def test_multi_label_fit_does_not_depend_on_row_order():
    from crowdlearn.aggregation.multilabel import from_quadruples

    rng = np.random.default_rng(0)
    (item, expert, label, n, J, K), perm, *_ = random_crowd(0)
    target = rng.integers(2, size=item.size)
    label = np.where(target == 1, label % 2, label)  # target 1 has 2 classes
    fits = [quiet(lambda: cl.MultiLabelDawidSkene(alpha=0.5).fit(from_quadruples(
        item[p], expert[p], target[p], label[p], n_items=n, n_experts=J, n_targets=2,
        n_classes=[K, 2]))) for p in (np.arange(item.size), perm)]
    assert_same_fit(*fits)
    np.testing.assert_allclose(fits[0].confusion_, fits[1].confusion_, **TIGHT)


@pytest.mark.parametrize("name", ["DawidSkene", "ZeroBasedSkill-log-odds", "Wawa",
                                  "OneCoinDawidSkene-accelerate", "GLAD", "MACE"])
def test_dataframe_rows_shuffled_give_the_same_results_by_id(name):
    pd = pytest.importorskip("pandas")
    fit, _ = MODELS[name]
    (item, expert, label, *_), *_ = random_crowd(7)
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in item], "worker": [f"w{j}" for j in expert],
                       "label": label})
    a = quiet(lambda: fit(df, {}))
    b = quiet(lambda: fit(df.sample(frac=1.0, random_state=1), {}))
    pd.testing.assert_series_equal(a.labels_, b.labels_)
    pd.testing.assert_frame_equal(a.probas_, b.probas_, **TIGHT)
    if hasattr(a, "skills_"):  # one skill per worker (not Dawid--Skene's matrices)
        pd.testing.assert_series_equal(a.skills_, b.skills_, **TIGHT)


@pytest.mark.parametrize("name", ["DawidSkene", "OneCoinDawidSkene", "Wawa",
                                  "WeightedMajorityVote-log-odds", "GLAD", "MACE", "MultiLabel"])
def test_new_items_scored_the_same_whatever_the_row_order(name):
    (item, expert, label, n, J, K), perm, *_ = random_crowd(3)
    if name == "MultiLabel":
        from crowdlearn.aggregation.multilabel import from_quadruples

        target = np.arange(item.size) % 2
        label = np.where(target == 1, label % 2, label)
        model = quiet(lambda: cl.MultiLabelDawidSkene(alpha=0.5).fit(from_quadruples(
            item, expert, target, label, n_items=n, n_experts=J, n_targets=2,
            n_classes=[K, 2])))
        a = model.predict_proba((item, expert, target, label))
        b = model.predict_proba((item[perm], expert[perm], target[perm], label[perm]))
    else:
        model = quiet(lambda: MODELS[name][0](from_triples(item, expert, label, n_items=n,
                                                           n_experts=J, n_classes=K), {}))
        a = model.predict_proba((item, expert, label))
        b = model.predict_proba((item[perm], expert[perm], label[perm]))
    np.testing.assert_allclose(a, b, **TIGHT)


@pytest.mark.parametrize("Model", [cl.LogisticAnnotators, cl.SparseExpertsEM])
def test_new_items_of_feature_models_scored_the_same_whatever_the_row_order(Model):
    (item, expert, label, n, J, K), perm, X, *_ = random_crowd(4, binary=True)
    model = quiet(lambda: Model().fit((item, expert, label), X))
    a = model.predict_proba((item, expert, label), X=X)
    b = model.predict_proba((item[perm], expert[perm], label[perm]), X=X)
    np.testing.assert_allclose(a, b, **TIGHT)


# -- a hypothesis sample: any crowd, any model, any row order --------------------------------
@st.composite
def dense_labels(draw, max_items=12, max_experts=5, max_classes=4):
    n = draw(st.integers(1, max_items))
    m = draw(st.integers(1, max_experts))
    K = draw(st.integers(2, max_classes))
    M = np.asarray(draw(st.lists(st.integers(-1, K - 1), min_size=n * m, max_size=n * m)),
                   dtype=np.int64).reshape(n, m)
    if (M == -1).all():
        M[draw(st.integers(0, n - 1)), draw(st.integers(0, m - 1))] = draw(st.integers(0, K - 1))
    return M, K


def _fit_or_error(fit, crowd, extras):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fit(crowd, extras)
        except ValueError as exc:
            return exc


@settings(deadline=None, max_examples=25)
@given(data=dense_labels(), name=st.sampled_from(sorted(MODELS)), extra=st.data())
def test_any_crowd_and_model_fit_does_not_depend_on_row_order(data, name, extra):
    """Any crowd (a label repeated or not), its rows in any order: the same answers (or the
    same error)."""
    M, K = data
    fit, binary = MODELS[name]
    crowd = from_dense(np.where(M >= 0, M % 2, M) if binary else M, n_classes=2 if binary else K)
    repeat = extra.draw(st.lists(st.integers(0, crowd.n_labels - 1), max_size=3))
    item, expert, label = (np.concatenate([a, a[repeat]])
                           for a in (crowd.item, crowd.expert, crowd.label))
    perm = np.asarray(extra.draw(st.permutations(range(item.size))), dtype=np.intp)
    rng = np.random.default_rng(M.size)
    extras = {"X": rng.normal(size=(crowd.n_items, 2)),
              "X_binary": (rng.random((crowd.n_items, 2)) < 0.5).astype(float),
              "gold": np.where(np.arange(crowd.n_items) % 3 == 0,
                               np.arange(crowd.n_items) % crowd.n_classes, -1)}
    a, b = (_fit_or_error(fit, from_triples(item[p], expert[p], label[p],
                                            n_items=crowd.n_items, n_experts=crowd.n_experts,
                                            n_classes=crowd.n_classes), extras)
            for p in (np.arange(item.size), perm))
    if isinstance(a, ValueError):
        assert isinstance(b, ValueError) and str(a) == str(b)
    elif isinstance(a, cl.MajorityVoteLogistic):
        np.testing.assert_allclose(a.coef_, b.coef_, **TIGHT)
        np.testing.assert_array_equal(a.predict(extras["X"]), b.predict(extras["X"]))
    else:
        assert_same_fit(a, b)


# -- SQUAREM's flat-optimum flag on the same crowds ----------------------------------------
@pytest.mark.parametrize("name", [name for name in MODELS if name.endswith("accelerate")])
def test_squarem_on_random_crowds_is_not_flagged(name):
    fit, binary = MODELS[name]
    for seed in range(8):
        (given, _), extras = crowds(seed, binary)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("error", DegenerateFitWarning)
            model = fit(given, extras)
        assert model.flat_optimum_ is False


def test_every_em_model_has_the_flag_false_without_squarem():
    (given, _), extras = crowds(0)
    for name in ("DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE"):
        assert quiet(lambda: MODELS[name][0](given, extras)).flat_optimum_ is False
