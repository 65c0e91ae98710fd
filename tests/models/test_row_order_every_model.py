"""Every crowd model gives the same fit whatever the order of the label rows (issue 28, item 1).

Each model is fitted on 20 small random crowds (seeded: 2 to 4 classes, some items with no
label, some labels repeated; binary labels for the models that take only those) and on the
same crowds with their label rows shuffled; features ``X`` and gold items stay aligned by
item. The results are compared **bit for bit** (``assert_array_equal``): predictions,
posteriors, and for the EM models the objective history and the number of iterations.
Every model fits on its labels put in one canonical order (by item, then worker, then
label): GLAD and MACE through ``_canonical_order`` (tests/models/test_row_order_glad_mace.py
checks them in more settings), the Dawid--Skene family through the sorted rows of its
label matrix (``_flat_indices``), the votes, the multi-label model and the binary feature
models through their readers. Without it, sums over the labels taken in another order
differed in the last bits (every model but MajorityVote, GLAD, MACE and
MajorityVoteLogistic), and that decided ties: a weighted vote's predictions and
ZeroBasedSkill(weights="log-odds")'s skills changed with the row order.

SQUAREM (``accelerate=True``) can still stop on a flat optimum, the same for every row
order but not pinned down by the data; the fit reports it (``flat_optimum_`` and a
``DegenerateFitWarning``), tested at the end.

``LatentClassModel`` and ``BernoulliNaiveBayes`` read a feature matrix (one row per item),
not label rows, so they have no row order to test here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.em import FLAT_MOVE, run_em
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning
from crowdlearn.labels import from_triples

SEEDS = range(20)


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
    "MACE": (lambda c, e: cl.MACE(n_init=2, random_state=0).fit(c), False),
    "MACE-accelerate": (lambda c, e: cl.MACE(n_init=2, random_state=0, accelerate=True).fit(c),
                        False),
    "MACE-vb": (lambda c, e: cl.MACE(method="vb", n_init=2, random_state=0).fit(c), False),
    "LogisticAnnotators": (lambda c, e: cl.LogisticAnnotators().fit(c, e["X"]), True),
    "SparseExpertsEM": (lambda c, e: cl.SparseExpertsEM(lam=0.5).fit(c, e["X"]), True),
    "SparseExpertsEM-accelerate": (lambda c, e: cl.SparseExpertsEM(
        lam=0.5, accelerate=True, expert_prior=1.0).fit(c, e["X"]), True),
    "MajorityVoteLogistic": (lambda c, e: cl.MajorityVoteLogistic(
        lam=0.1, random_state=0).fit(c, e["X"]), True),
}

EM_RECORD = ("log_likelihood_history_", "n_iter_", "converged_", "flat_optimum_")
PARAMS = ("class_prior_", "confusion_", "accuracy_", "skills_", "weights_", "ability_",
          "log_beta_", "trust_", "strategy_", "coef_", "intercept_", "reliability_coef_",
          "reliability_intercept_", "expert_intercept_", "feature_prob_")


def assert_same_fit(a, b):
    """Bit-identical predictions, posteriors, EM records and parameters."""
    np.testing.assert_array_equal(np.asarray(a.predict()), np.asarray(b.predict()))
    if hasattr(a, "posterior_"):
        np.testing.assert_array_equal(a.posterior_, b.posterior_)
    for name in EM_RECORD + PARAMS:
        if hasattr(a, name):
            np.testing.assert_array_equal(np.asarray(getattr(a, name)),
                                          np.asarray(getattr(b, name)), err_msg=name)


@pytest.mark.parametrize("name", list(MODELS))
def test_fit_does_not_depend_on_row_order(name):
    fit, binary = MODELS[name]
    for seed in SEEDS:
        (given, shuffled), extras = crowds(seed, binary)
        a = quiet(lambda: fit(given, extras))
        b = quiet(lambda: fit(shuffled, extras))
        if isinstance(a, cl.MajorityVoteLogistic):  # no posterior: a classifier of X
            np.testing.assert_array_equal(a.predict(extras["X"]), b.predict(extras["X"]))
            np.testing.assert_array_equal(a.vote_, b.vote_)
            np.testing.assert_array_equal(a.coef_, b.coef_)
        else:
            assert_same_fit(a, b)


def test_multi_label_fit_does_not_depend_on_row_order():
    from crowdlearn.aggregation.multilabel import from_quadruples

    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        (item, expert, label, n, J, K), perm, *_ = random_crowd(seed)
        target = rng.integers(2, size=item.size)
        label = np.where(target == 1, label % 2, label)  # target 1 has 2 classes
        n_classes = [K, 2]
        fits = [quiet(lambda: cl.MultiLabelDawidSkene(alpha=0.5).fit(from_quadruples(
            item[p], expert[p], target[p], label[p], n_items=n, n_experts=J, n_targets=2,
            n_classes=n_classes))) for p in (np.arange(item.size), perm)]
        assert_same_fit(*fits)
        np.testing.assert_array_equal(fits[0].confusion_, fits[1].confusion_)


@pytest.mark.parametrize("name", ["DawidSkene", "ZeroBasedSkill-log-odds", "Wawa",
                                  "OneCoinDawidSkene-accelerate"])
def test_dataframe_rows_shuffled_give_the_same_results_by_id(name):
    pd = pytest.importorskip("pandas")
    fit, _ = MODELS[name]
    (item, expert, label, *_), *_ = random_crowd(7)
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in item], "worker": [f"w{j}" for j in expert],
                       "label": label})
    a = quiet(lambda: fit(df, {}))
    for seed in (1, 2):
        b = quiet(lambda: fit(df.sample(frac=1.0, random_state=seed), {}))
        pd.testing.assert_series_equal(a.labels_, b.labels_)
        pd.testing.assert_frame_equal(a.probas_, b.probas_)


@pytest.mark.parametrize("name", ["DawidSkene", "OneCoinDawidSkene", "Wawa",
                                  "WeightedMajorityVote-log-odds", "MultiLabel"])
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
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("Model", [cl.LogisticAnnotators, cl.SparseExpertsEM])
def test_new_items_of_feature_models_scored_the_same_whatever_the_row_order(Model):
    (item, expert, label, n, J, K), perm, X, *_ = random_crowd(4, binary=True)
    model = quiet(lambda: Model().fit((item, expert, label), X))
    a = model.predict_proba((item, expert, label), X=X)
    b = model.predict_proba((item[perm], expert[perm], label[perm]), X=X)
    np.testing.assert_array_equal(a, b)


def test_label_matrix_rows_are_sorted_whatever_the_row_order():
    from crowdlearn.aggregation._common import _flat_indices

    for seed in range(3):
        (given, shuffled), _ = crowds(seed)
        va, ta = _flat_indices(given, given.n_classes)
        vb, tb = _flat_indices(shuffled, shuffled.n_classes)
        assert va.has_sorted_indices and vb.has_sorted_indices
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(va, name), getattr(vb, name))


# -- SQUAREM on a flat optimum: reported --------------------------------------------------
def one_label_per_worker(n: int = 20, K: int = 3, seed: int = 23):
    """Every worker labels one item: nothing ties the classes of different items, and the
    objective of MACE is flat over many posteriors."""
    label = np.random.default_rng(seed).integers(K, size=n)
    return from_triples(np.arange(n), np.arange(n), label, n_items=n, n_experts=n, n_classes=K)


def test_squarem_on_a_flat_optimum_reports_it(monkeypatch):
    """A SQUAREM run the engine calls flat (tested on a flat objective below) reaches the
    model: ``flat_optimum_`` and a DegenerateFitWarning that says so."""
    import crowdlearn.em

    crowd = one_label_per_worker()
    monkeypatch.setattr(crowdlearn.em, "FLAT_MOVE", -1.0)  # every SQUAREM run counts as flat
    with pytest.warns(DegenerateFitWarning, match="flat optimum"):
        fast = cl.MACE(accelerate=True, n_init=1).fit(crowd)
    assert fast.flat_optimum_ and fast.converged_


def test_mace_leaves_no_flat_direction_on_one_label_per_worker():
    """Every worker labels one item: under EM's textbook trust update SQUAREM ran far along a
    flat objective here; MACE's exact trust update (issue 43) sets every trust at once, and
    SQUAREM and plain EM end at the same objective and posterior, neither flagged."""
    crowd = one_label_per_worker()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        fast = cl.MACE(accelerate=True, n_init=1).fit(crowd)
        plain = cl.MACE(accelerate=False, n_init=1).fit(crowd)
    assert not fast.flat_optimum_ and not plain.flat_optimum_
    assert abs(plain.objective_ - fast.objective_) <= 1e-9
    assert np.abs(plain.posterior_ - fast.posterior_).max() <= 1e-6


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


def test_engine_flags_a_squarem_run_that_ends_on_a_flat_objective():
    # the objective is flat in x; each EM step moves x (and the posterior) anyway
    def e_step(x):
        return np.array([1.0 / (1.0 + np.exp(-x[0])), 0.0]), 0.0

    result = run_em(np.array([-3.0]), e_step, lambda q, x: x + 1.0, tol=1e-8, max_iter=50,
                    warm_start=True, accelerate=(lambda x: x, lambda v: v))
    assert result.converged and result.flat and result.last_move > FLAT_MOVE


def test_engine_does_not_flag_a_curved_optimum():
    def e_step(x):
        return np.array([1.0 / (1.0 + np.exp(-x[0]))]), -float((x[0] - 3.0) ** 2)

    result = run_em(np.array([-3.0]), e_step, lambda q, x: (x + 3.0) / 2.0, tol=1e-10,
                    max_iter=200, warm_start=True, accelerate=(lambda x: x, lambda v: v))
    assert result.converged and not result.flat
    assert result.last_move < 1e-3
    plain = run_em(np.array([-3.0]), e_step, lambda q, x: (x + 3.0) / 2.0, tol=1e-10,
                   max_iter=200, warm_start=True)
    assert plain.last_move == 0.0 and not plain.flat


def test_gold_majority_vote_with_no_label_on_a_gold_item():
    # found by the row-order property test: no gold item labelled (every worker gets
    # default_skill) used to fail with a UFuncTypeError (an integer array divided in place)
    crowd = from_triples([0, 1, 1], [0, 0, 1], [1, 0, 0], n_items=3, n_experts=2, n_classes=2)
    model = cl.GoldMajorityVote(default_skill=0.6).fit(crowd, np.array([-1, -1, 0]))
    np.testing.assert_array_equal(np.asarray(model.skills_), [0.6, 0.6])
    np.testing.assert_array_equal(model.predict(), [1, 0, 0])
