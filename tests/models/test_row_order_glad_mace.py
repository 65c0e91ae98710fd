"""GLAD and MACE give the same fit whatever the order of the label rows (issue 28, item 1).

Both fit on the labels put in one canonical order (by item, expert, label), so the
arithmetic is the same for every permutation of the rows and the results are compared
exactly: without it, sums over the labels taken in another order differ in the last
bits and the fit can amplify that (GLAD's truncated L-BFGS-B M-step, MACE's flat optima).
"""

import warnings

import numpy as np
import pytest

from crowdlearn.aggregation._common import _canonical_order, _triple_order
from crowdlearn.aggregation.glad import GLAD
from crowdlearn.aggregation.mace import MACE
from crowdlearn.exceptions import ConvergenceWarning
from crowdlearn.labels import from_triples

SEEDS = range(6)


def random_triples(seed: int):
    """A random crowd: 2 to 4 classes, some items unlabelled, some labels repeated."""
    rng = np.random.default_rng(seed)
    n, J, K = int(rng.integers(15, 50)), int(rng.integers(3, 8)), int(rng.integers(2, 5))
    truth = rng.integers(K, size=n)
    accuracy = rng.uniform(0.3, 0.95, J)
    item = rng.integers(n - 2, size=3 * n)  # the last two items get no label
    expert = rng.integers(J, size=item.size)
    right = rng.random(item.size) < accuracy[expert]
    label = np.where(right, truth[item], rng.integers(K, size=item.size))
    item, expert, label = (np.concatenate([a, a[:5]]) for a in (item, expert, label))  # repeats
    return item, expert, label, n, J, K


def crowd_and_shuffles(seed: int, n_shuffles: int = 2):
    item, expert, label, n, J, K = random_triples(seed)
    rng = np.random.default_rng(1000 + seed)
    orders = [np.arange(item.size)] + [rng.permutation(item.size) for _ in range(n_shuffles)]
    return [from_triples(item[p], expert[p], label[p], n_items=n, n_experts=J, n_classes=K)
            for p in orders]


def fit(model, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels)


def assert_same_fit(a, b, params):
    np.testing.assert_array_equal(a.posterior_, b.posterior_)
    np.testing.assert_array_equal(a.predict(), b.predict())
    np.testing.assert_array_equal(a.log_likelihood_history_, b.log_likelihood_history_)
    assert a.n_iter_ == b.n_iter_
    for name in params:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


GLAD_SETTINGS = [{}, {"fit_class_prior": True}, {"alpha_prior": None, "beta_prior": None},
                 {"n_init": 3, "random_state": 0}]
MACE_SETTINGS = [{"n_init": 3, "random_state": 0},
                 {"n_init": 3, "random_state": 0, "fit_class_prior": False},
                 {"n_init": 3, "random_state": 0, "accelerate": True},
                 {"n_init": 2, "random_state": 1, "theta_prior": (2.0, 2.0),
                  "strategy_prior": 1.5},
                 {"n_init": 2, "random_state": 0, "method": "vb"}]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kw", GLAD_SETTINGS)
def test_glad_fit_does_not_depend_on_row_order(seed, kw):
    fits = [fit(GLAD(**kw), crowd) for crowd in crowd_and_shuffles(seed)]
    for other in fits[1:]:
        assert_same_fit(fits[0], other, ("ability_", "log_beta_", "class_prior_"))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kw", MACE_SETTINGS)
def test_mace_fit_does_not_depend_on_row_order(seed, kw):
    fits = [fit(MACE(**kw), crowd) for crowd in crowd_and_shuffles(seed)]
    for other in fits[1:]:
        assert_same_fit(fits[0], other, ("trust_", "strategy_", "class_prior_"))


@pytest.mark.parametrize("Model", [GLAD, lambda: MACE(n_init=2, random_state=0)])
def test_dataframe_rows_shuffled_give_the_same_results_by_id(Model):
    pd = pytest.importorskip("pandas")
    item, expert, label, n, J, K = random_triples(7)
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in item], "worker": [f"w{j}" for j in expert],
                       "label": label})
    a = fit(Model(), df)
    for seed in (1, 2):
        b = fit(Model(), df.sample(frac=1.0, random_state=seed))
        pd.testing.assert_series_equal(a.labels_, b.labels_)
        pd.testing.assert_frame_equal(a.probas_, b.probas_)
        pd.testing.assert_series_equal(a.skills_, b.skills_)


@pytest.mark.parametrize("Model", [GLAD, lambda: MACE(n_init=2, random_state=0)])
def test_new_items_scored_the_same_whatever_the_row_order(Model):
    model = fit(Model(), crowd_and_shuffles(3)[0])
    new = crowd_and_shuffles(4)[0]
    keep = (new.expert < model.n_experts_) & (new.label < model.n_classes_)
    item, expert, label = new.item[keep], new.expert[keep], new.label[keep]
    perm = np.random.default_rng(0).permutation(item.size)
    a = model.predict_proba((item, expert, label))
    b = model.predict_proba((item[perm], expert[perm], label[perm]))
    np.testing.assert_array_equal(a, b)


def test_canonical_order_sorts_by_item_expert_label_and_keeps_everything():
    for crowd in crowd_and_shuffles(5, n_shuffles=3):
        out = _canonical_order(crowd)
        key = np.stack([out.item, out.expert, out.label])
        order = np.lexsort(key[::-1])
        np.testing.assert_array_equal(order, np.arange(out.n_labels))  # already sorted
        assert sorted(zip(crowd.item, crowd.expert, crowd.label)) == \
            list(zip(out.item, out.expert, out.label))
        assert (out.n_items, out.n_experts, out.n_classes) == \
            (crowd.n_items, crowd.n_experts, crowd.n_classes)
        assert _canonical_order(out) is out  # sorted input is returned as it is


def test_canonical_order_keeps_the_ids():
    pd = pytest.importorskip("pandas")
    from crowdlearn.labels import as_crowd_labels

    df = pd.DataFrame({"task": ["b", "a", "b", "c"], "worker": ["y", "x", "x", "y"],
                       "label": ["no", "yes", "yes", "no"]})
    crowd = as_crowd_labels(df)
    out = _canonical_order(crowd)
    assert out is not crowd and getattr(out, "_from_frame", False) is True  # results by id
    for name in ("item_ids", "expert_ids", "class_ids"):
        np.testing.assert_array_equal(getattr(out, name), getattr(crowd, name))
    assert sorted(zip(*crowd.to_table())) == list(zip(*out.to_table()))


def test_the_int64_key_and_lexsort_give_the_same_order():
    for crowd in crowd_and_shuffles(6, n_shuffles=2):
        args = (crowd.item, crowd.expert, crowd.label, crowd.n_items, crowd.n_experts,
                crowd.n_classes)
        by_key = _triple_order(*args)
        by_lexsort = _triple_order(*args, max_key=0)
        np.testing.assert_array_equal(by_key, by_lexsort)  # both stable: the same permutation
