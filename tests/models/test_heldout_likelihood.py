"""The held-out likelihood of labels (Paun et al. 2018) and the calibration of posteriors
(crowdlearn.selection): the criterion finds the model that generated a crowd, and its
properties; reliability curves and the expected calibration error."""

import numpy as np
import pytest

from crowdlearn import (CrowdLabels, DawidSkene, GLAD, MajorityVote, OneCoinDawidSkene,
                        calibration_curve, expected_calibration_error,
                        heldout_label_likelihood)
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

MODELS = {"DS": DawidSkene(), "one-coin": OneCoinDawidSkene(), "MV": MajorityVote()}


def _ds_crowd(seed=0, n_items=400):
    """Binary workers who are good on one class and poor on the other: not one coin."""
    rng = np.random.default_rng(seed)
    sens = rng.uniform(0.9, 0.98, 8)
    spec = rng.uniform(0.55, 0.7, 8)
    conf = np.stack([[[s, 1 - s], [1 - p, p]] for s, p in zip(sens, spec)])
    return simulate_crowd(n_items, conf, missing=0.2, random_state=seed).labels


def _one_coin_crowd(seed=1, n_items=300):
    acc = np.random.default_rng(seed).uniform(0.55, 0.9, 8)
    return simulate_crowd(n_items, one_coin_confusion(acc, 3), missing=0.3,
                          random_state=seed).labels


def test_dawid_skene_data_picks_dawid_skene():
    res = heldout_label_likelihood(MODELS, _ds_crowd(), random_state=0)
    assert res.best_ == "DS"
    assert res.scores["DS"] - res.scores["one-coin"] > 2 * res.se["one-coin"]


def test_one_coin_data_one_coin_as_good_as_dawid_skene():
    res = heldout_label_likelihood(MODELS, _one_coin_crowd(), random_state=0)
    assert res.scores["one-coin"] >= res.scores["DS"] - res.se["DS"]
    assert res.best_ in ("one-coin", "DS")


def test_glad_and_factories_score_finite_values():
    models = {"GLAD": GLAD(), "DS0": lambda: DawidSkene(alpha=0.0)}
    res = heldout_label_likelihood(models, _one_coin_crowd(n_items=120), n_folds=3,
                                   random_state=2)
    for name in models:
        assert np.isfinite(res.scores[name]) and res.scores[name] < 0
        assert res.fold_scores[name].shape == (3,) and np.isfinite(res.se[name])


def test_properties_folds_reproducible_row_order():
    crowd = _ds_crowd(n_items=150)
    a = heldout_label_likelihood(MODELS, crowd, n_folds=4, random_state=7)
    b = heldout_label_likelihood(MODELS, crowd, n_folds=4, random_state=7)
    assert a.n_heldout.shape == (4,) and a.n_heldout.sum() == crowd.n_labels
    for name in MODELS:
        assert np.isfinite(a.fold_scores[name]).all()
        assert a.scores[name] == b.scores[name]
        # the pooled mean is the fold means weighted by the fold sizes
        pooled = np.sum(a.fold_scores[name] * a.n_heldout) / a.n_heldout.sum()
        assert a.scores[name] == pytest.approx(pooled)
    perm = np.random.default_rng(3).permutation(crowd.n_labels)
    shuffled = CrowdLabels(crowd.item[perm], crowd.expert[perm], crowd.label[perm],
                           crowd.n_items, crowd.n_experts, crowd.n_classes)
    c = heldout_label_likelihood(MODELS, shuffled, n_folds=4, random_state=7)
    for name in MODELS:
        assert c.scores[name] == pytest.approx(a.scores[name], abs=1e-9)
    assert c.best_ == a.best_


def test_single_labels_are_never_held_out_and_items_keep_a_label():
    # items 0-2 have two labels, item 3 only one: with 2 folds, each fold holds out one
    # label of each of items 0-2 and never item 3's
    crowd = CrowdLabels([0, 0, 1, 1, 2, 2, 3], [0, 1, 0, 1, 0, 1, 0], [0, 0, 1, 1, 0, 1, 1],
                        4, 2, 2)
    res = heldout_label_likelihood({"MV": MajorityVote()}, crowd, n_folds=2, smoothing=0,
                                   random_state=0)
    assert res.n_heldout.tolist() == [3, 3]
    # a majority vote with one training label per item (4 of them, each agreeing with its
    # own vote): shared accuracy (4 + 1)/(4 + 2); the held-out labels of items 0 and 1
    # agree with the other one, both of item 2's disagree
    a = 5 / 6
    expected = (4 * np.log(a) + 2 * np.log(1 - a)) / 6
    assert res.scores["MV"] == pytest.approx(expected)


def test_smoothing_zero_can_give_minus_infinity():
    # worker 1 always agrees with worker 0 in training but not on the held-out label
    crowd = CrowdLabels([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 1, 0], 3, 2, 2)
    models = {"DS": DawidSkene()}
    raw = heldout_label_likelihood(models, crowd, n_folds=2, smoothing=0, random_state=0)
    smooth = heldout_label_likelihood(models, crowd, n_folds=2, random_state=0)
    assert np.isfinite(smooth.scores["DS"])
    assert raw.scores["DS"] <= smooth.scores["DS"] or np.isneginf(raw.scores["DS"])


class _NoPosterior:
    def get_params(self):
        return {}

    def fit(self, labels):
        return self


@pytest.mark.parametrize("kwargs, match", [
    ({"models": {}}, "non-empty dict"),
    ({"models": [DawidSkene()]}, "non-empty dict"),
    ({"n_folds": 1}, "n_folds"),
    ({"n_folds": True}, "n_folds"),
    ({"n_folds": 2.0}, "n_folds"),
    ({"smoothing": -1.0}, "smoothing"),
    ({"models": {"x": 3}}, "candidate"),
    ({"models": {"x": _NoPosterior()}}, "posterior_"),
    ({"n_folds": 50}, "leaves a fold without labels"),
])
def test_heldout_likelihood_refuses_bad_input(kwargs, match):
    crowd = CrowdLabels([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 1, 0], 3, 2, 2)
    args = {"models": {"MV": MajorityVote()}, "labels": crowd, "n_folds": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        heldout_label_likelihood(**args)


def test_no_item_with_two_labels_is_refused():
    crowd = CrowdLabels([0, 1, 2], [0, 1, 0], [0, 1, 1], 3, 2, 2)
    with pytest.raises(ValueError, match="two labels or more"):
        heldout_label_likelihood({"MV": MajorityVote()}, crowd, n_folds=2)


# -- calibration ---------------------------------------------------------------------------------
def test_calibration_curve_by_hand():
    post = np.array([[0.95, 0.05], [0.05, 0.95], [0.6, 0.4], [0.35, 0.65], [0.5, 0.5]])
    truth = np.array([0, 0, 0, 0, -1])  # the last item's truth is unknown
    curve = calibration_curve(post, truth, n_bins=2)
    assert curve.edges.tolist() == [0.0, 0.5, 1.0]
    assert curve.count.tolist() == [0, 4]
    assert np.isnan(curve.confidence[0]) and np.isnan(curve.accuracy[0])
    assert curve.confidence[1] == pytest.approx((0.95 + 0.95 + 0.6 + 0.65) / 4)
    assert curve.accuracy[1] == pytest.approx(2 / 4)
    ece = expected_calibration_error(post, truth, n_bins=2)
    assert ece == pytest.approx(abs(0.5 - 3.15 / 4))


def test_calibrated_posterior_has_small_ece_and_overconfident_a_large_one():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 40_000)
    post = np.column_stack([conf, 1 - conf])
    truth = (rng.random(conf.size) >= conf).astype(int)  # class 0 with probability conf
    assert expected_calibration_error(post, truth) < 0.02
    over = np.column_stack([np.sqrt(conf), 1 - np.sqrt(conf)])  # sure beyond its accuracy
    ece = expected_calibration_error(over, truth)
    assert ece > 0.1
    curve = calibration_curve(over, truth)
    full = curve.count > 0
    assert (curve.confidence[full] >= curve.accuracy[full] - 0.03).all()


@pytest.mark.parametrize("post, truth, kwargs, match", [
    ([[0.5, 0.5]], [0], {"n_bins": 0}, "n_bins"),
    ([0.5, 0.5], [0], {}, "shape"),
    ([[1.0]], [0], {}, "n_classes >= 2"),
    ([[0.7, 0.7]], [0], {}, "summing to 1"),
    ([[np.nan, 1.0]], [0], {}, "finite"),
    ([[0.5, 0.5]], [0.0], {}, "integer"),
    ([[0.5, 0.5]], [0, 1], {}, "shape"),
    ([[0.5, 0.5]], [2], {}, "n_classes"),
    ([[0.5, 0.5]], [-1], {}, "unknown"),
])
def test_calibration_refuses_bad_input(post, truth, kwargs, match):
    for fn in (calibration_curve, expected_calibration_error):
        with pytest.raises(ValueError, match=match):
            fn(post, truth, **kwargs)
