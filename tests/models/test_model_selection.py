"""Tests of the surrogate risk S-hat and model selection without true labels
(crowdlearn.selection)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import from_dense, from_triples
from crowdlearn.exceptions import ConvergenceWarning
from crowdlearn.selection import (expected_surrogate_risk, select_by_surrogate,
                                        select_penalty, surrogate_bias_bound,
                                        surrogate_decomposition, surrogate_risk, true_risk)
from crowdlearn.simulate.sparse import simulate_sparse_experts
from crowdlearn.features.sparse_experts import MajorityVoteLogistic, SparseExpertsEM


# -- S-hat and R-hat by hand ---------------------------------------------------------------------
def test_surrogate_risk_hand_computed():
    # complete labels: (1/n') sum_i (1/d) sum_j 1{z_i != Y_ij}
    labels = np.array([[0, 0, 1],
                       [1, 0, 1],
                       [1, 1, 1],
                       [0, 1, 1]])
    pred = [0, 1, 0, 1]
    # disagreements per item: 1/3, 1/3, 3/3, 1/3 -> mean 1/2
    assert surrogate_risk(pred, labels) == pytest.approx(0.5)
    assert surrogate_risk(pred, labels, weighting="label") == pytest.approx(6 / 12)
    # missing labels: item 0 has 1 label, item 1 has 2, item 2 none (left out), item 3 has 3
    labels = [[1, -1, -1],
              [1, 0, -1],
              [-1, -1, -1],
              [0, 0, 1]]
    pred = [1, 1, 0, 0]
    # per item: 0/1, 1/2, -, 1/3 -> (0 + 1/2 + 1/3) / 3
    assert surrogate_risk(pred, labels) == pytest.approx((0 + 0.5 + 1 / 3) / 3)
    # per label: 2 of 6 disagree
    assert surrogate_risk(pred, labels, weighting="label") == pytest.approx(2 / 6)
    # triples give the same; an expert labelling an item twice counts twice
    crowd = from_dense(labels, n_classes=2)
    assert surrogate_risk(pred, crowd) == surrogate_risk(pred, labels)
    twice = from_triples([0, 0, 1], [0, 0, 1], [1, 0, 1], n_items=2)
    assert surrogate_risk([1, 1], twice) == pytest.approx((1 / 2 + 0) / 2)
    assert true_risk([0, 1, 1, 0], [0, 1, 0, 0]) == 0.25


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), d=st.integers(1, 6),
       missing=st.floats(0.0, 0.8), weighting=st.sampled_from(["item", "label"]))
def test_lemma_1_decomposition_is_exact(seed, n, d, missing, weighting):
    """S-hat = sum_i w_i (1 - 2 e_i) W_i + sum_i w_i e_i for every sample (Lemma 1)."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 2, (n, d))
    dense[rng.random((n, d)) < missing] = -1
    dense[0, 0] = rng.integers(0, 2)          # at least one label
    truth, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    dec = surrogate_decomposition(pred, dense, truth, weighting=weighting)
    assert dec.surrogate == pytest.approx(surrogate_risk(pred, dense, weighting=weighting),
                                          abs=1e-15)
    assert dec.weighted_risk + dec.expert_error == pytest.approx(dec.surrogate, abs=1e-12)
    # by loops, straight from the definitions (item weighting, complete-case items)
    if weighting == "item":
        s = r = e = 0.0
        items = [i for i in range(n) if (dense[i] >= 0).any()]
        for i in items:
            ys = [y for y in dense[i] if y >= 0]
            s += np.mean([pred[i] != y for y in ys]) / len(items)
            e += np.mean([truth[i] != y for y in ys]) / len(items)
            r += (pred[i] != truth[i]) / len(items)
        assert dec.surrogate == pytest.approx(s, abs=1e-12)
        assert dec.expert_error == pytest.approx(e, abs=1e-12)
        assert dec.risk == pytest.approx(r, abs=1e-12)


# -- the expectation identity, by simulation ------------------------------------------------------
def test_expectation_identity_by_simulation():
    """E[S-hat] = (1 - 2 eps_bar) R + eps_bar when the experts' errors are independent of
    everything else (Assumption 3): a fixed classifier, many crowds."""
    rng = np.random.default_rng(0)
    n, reps = 400, 3000
    eps = np.array([0.5, 0.15, 0.47])                 # scenario (i) of section 4.1
    truth = rng.integers(0, 2, n)
    pred = truth.copy()
    pred[:120] = 1 - pred[:120]                       # R-hat = 0.3 exactly
    R = true_risk(pred, truth)
    wrong = rng.random((reps, n, 3)) < eps
    labels = np.where(wrong, 1 - truth[None, :, None], truth[None, :, None])
    # S-hat of every crowd at once (complete labels: mean over experts and items)
    s_hat = (labels != pred[None, :, None]).mean(axis=(1, 2))
    expected = expected_surrogate_risk(R, eps)
    assert expected == pytest.approx((1 - 2 * eps.mean()) * 0.3 + eps.mean())
    se = s_hat.std() / np.sqrt(reps)
    assert abs(s_hat.mean() - expected) < 4 * se
    # one crowd through the public function agrees with the vectorised S-hat
    assert surrogate_risk(pred, labels[0]) == pytest.approx(s_hat[0])
    # missing labels: eps_bar is the mean over items of the mean error of their experts
    mask = rng.random((n, 3)) < 0.6
    mask[:, 1] |= ~mask.any(axis=1)
    s_miss = [surrogate_risk(pred, np.where(mask, labels[r], -1)) for r in range(400)]
    expected_miss = expected_surrogate_risk(R, eps, mask=mask)
    assert abs(np.mean(s_miss) - expected_miss) < 4 * np.std(s_miss) / np.sqrt(400)
    per_item = (mask * eps).sum(axis=1) / mask.sum(axis=1)
    assert expected_miss == pytest.approx((1 - 2 * per_item.mean()) * R + per_item.mean())


def test_lemma_2_bound_corrected_and_the_papers_constant_is_violated():
    """With d = 1 and a classifier that errs exactly when the expert does, the gap
    |E[S-hat] - (1 - 2 eps) R - eps| is 2 eps (1 - eps): above the paper's 1/(4 sqrt d)
    and at most 1/(2 sqrt d), the corrected bound (Assumption 4 holds trivially)."""
    rng = np.random.default_rng(1)
    eps, n = 0.35, 200_000
    truth = rng.integers(0, 2, n)
    expert = np.where(rng.random(n) < eps, 1 - truth, truth)
    pred = expert.copy()                             # W = 1{expert wrong}
    R = true_risk(pred, truth)
    gap = abs(surrogate_risk(pred, expert[:, None]) - (1 - 2 * eps) * R - eps)
    assert gap == pytest.approx(2 * eps * (1 - eps), abs=0.01)   # 0.455
    assert gap > 1 / (4 * np.sqrt(1))                             # the paper's Theorem 2
    bound = surrogate_bias_bound(R, [eps])
    assert gap <= bound + 0.01 and bound <= 1 / (2 * np.sqrt(1))
    # d experts: the bound is at most 1/(2 sqrt d) and attained at R = eps_j = 1/2
    for d in (1, 4, 9):
        assert surrogate_bias_bound(0.5, [0.5] * d) == pytest.approx(1 / (2 * np.sqrt(d)))
        assert surrogate_bias_bound(0.2, [0.1] * d) < 1 / (2 * np.sqrt(d))


# -- selection -----------------------------------------------------------------------------------
BETA = np.r_[1.5, -1.0, 0.8, np.zeros(27)]          # 3 of 30 features matter


def noisy_crowd(n, seed, missing=0.0):
    return simulate_sparse_experts(n, BETA, 0.0, [1.2, 0.8, 0.5, 1.0, 0.2], np.zeros(30),
                                   missing=missing, random_state=seed)


def fit_quiet(model, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(*args)


def test_select_by_surrogate_picks_the_lowest_true_risk():
    train, test = noisy_crowd(300, 0), noisy_crowd(5000, 1)
    candidates = {
        "EM": SparseExpertsEM(lam=0.0, max_iter=60),
        "EM-Sparse": SparseExpertsEM(lam=8.0, max_iter=60),
        "constant": MajorityVoteLogistic(lam=1e6),           # predicts one class
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = select_by_surrogate(candidates, train.labels, train.X, cv=3, random_state=0)
        risks = {name: true_risk(fit_quiet(type(c)(**c.get_params()), train.labels,
                                           train.X).predict(X=test.X), test.truth)
                 for name, c in candidates.items()}
    assert set(res.scores) == set(candidates) and res.fold_scores["EM"].shape == (3,)
    assert res.best == min(risks, key=risks.get) == "EM-Sparse"
    assert risks["constant"] > 0.4 > risks["EM-Sparse"]
    assert res.scores["constant"] > res.scores["EM"] > res.scores["EM-Sparse"]
    assert isinstance(res.model, SparseExpertsEM) and res.model.lam == 8.0
    # factories work too; one hold-out split; labels held out instead of items
    res2 = select_by_surrogate({"a": lambda: MajorityVoteLogistic(lam=5.0),
                                "b": lambda: MajorityVoteLogistic(lam=1e6)},
                               train.labels, train.X, holdout=0.4, split="labels",
                               refit=False, random_state=1)
    assert res2.best == "a" and res2.model is None and res2.fold_scores["a"].shape == (1,)


def test_select_penalty_tracks_the_true_risk():
    train, test = noisy_crowd(400, 2, missing=0.2), noisy_crowd(5000, 3)
    lambdas = [60.0, 20.0, 6.0, 2.0, 0.5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sel = select_penalty(train.labels, train.X, lambdas, holdout=0.5, random_state=0,
                             model_params={"max_iter": 60})
        risks = []
        for lam in sel.lambdas:
            m = fit_quiet(SparseExpertsEM(lam=lam * 400 / 200, max_iter=60), train.labels,
                          train.X)
            risks.append(true_risk(m.predict(X=test.X), test.truth))
    np.testing.assert_allclose(sel.lambdas, sorted(lambdas, reverse=True))
    assert sel.scores.shape == (5,) and sel.fold_scores.shape == (1, 5)
    assert sel.best_lambda == sel.lambdas[sel.best_index]
    # the chosen penalty is (nearly) as good as the best one, and much better than the worst
    assert risks[sel.best_index] <= min(risks) + 0.02
    assert risks[sel.best_index] < max(risks) - 0.03
    n_lab = int((train.labels.labels_per_item() > 0).sum())
    assert sel.refit_lambda == pytest.approx(sel.best_lambda * n_lab / (n_lab - round(
        0.5 * n_lab)))
    assert isinstance(sel.model, SparseExpertsEM) and sel.model.lam == sel.refit_lambda


def test_select_penalty_cross_validation_shapes():
    train = noisy_crowd(200, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sel = select_penalty(train.labels, train.X, [10.0, 1.0], cv=2, refit=False,
                             random_state=0, model_params={"max_iter": 20})
    assert sel.fold_scores.shape == (2, 2) and sel.model is None
    np.testing.assert_allclose(sel.scores, sel.fold_scores.mean(axis=0))


# -- bad input -----------------------------------------------------------------------------------
def test_bad_inputs():
    with pytest.raises(ValueError, match="predictions must hold 0/1 labels"):
        surrogate_risk([0, 2], [[0], [1]])
    with pytest.raises(ValueError, match="predictions contains NaN"):
        surrogate_risk([0, np.nan], [[0], [1]])
    with pytest.raises(ValueError, match="labels describe 2 items but there are 3"):
        surrogate_risk([0, 1, 1], [[0], [1]])
    with pytest.raises(ValueError, match="labels must be binary"):
        surrogate_risk([0, 1], [[0], [2]])
    with pytest.raises(ValueError, match="weighting must be 'item' or 'label'"):
        surrogate_risk([0, 1], [[0], [1]], weighting="expert")
    with pytest.raises(ValueError, match="no label at all"):
        surrogate_risk([0, 1], [[-1], [-1]])
    with pytest.raises(ValueError, match="truth has 3 entries, expected 2"):
        true_risk([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="predictions is empty"):
        true_risk([], [])
    with pytest.raises(ValueError, match=r"error_rates must hold probabilities"):
        expected_surrogate_risk(0.2, [0.1, 1.5])
    with pytest.raises(ValueError, match="risk must be <= 1"):
        expected_surrogate_risk(1.2, [0.1])
    with pytest.raises(ValueError, match=r"mask must have shape \(n_items, 2\)"):
        expected_surrogate_risk(0.2, [0.1, 0.2], mask=np.ones((3, 3), bool))
    train = noisy_crowd(60, 5)
    with pytest.raises(ValueError, match="candidates must be a non-empty dict"):
        select_by_surrogate({}, train.labels, train.X)
    with pytest.raises(ValueError, match="holdout must be < 1"):
        select_by_surrogate({"a": MajorityVoteLogistic()}, train.labels, train.X, holdout=1.0)
    with pytest.raises(ValueError, match="cv must be >= 2"):
        select_by_surrogate({"a": MajorityVoteLogistic()}, train.labels, train.X, cv=1)
    with pytest.raises(ValueError, match="split must be 'items' or 'labels'"):
        select_by_surrogate({"a": MajorityVoteLogistic()}, train.labels, train.X,
                            split="experts")
    with pytest.raises(ValueError, match="a candidate must be an estimator"):
        select_by_surrogate({"a": 3}, train.labels, train.X)
    with pytest.raises(ValueError, match="X has 59 rows"):
        select_penalty(train.labels, train.X[:59], [1.0])


# -- select_penalty: one warning per kind, not one per fit -----------------------------------
def test_select_penalty_warns_once_per_kind():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    truth = (X[:, 0] > 0).astype(int)
    labels = np.where(rng.random((40, 3)) < 0.55, truth[:, None], 1 - truth[:, None])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        select_penalty(labels, X, refit=False, random_state=0, n_lambdas=5)
    assert len(caught) == 1, [str(w.message)[:80] for w in caught]
    assert caught[0].category is ConvergenceWarning
    assert "warnings from the fits of the penalty path" in str(caught[0].message)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ConvergenceWarning)  # the user's filter holds
        select_penalty(labels, X, refit=False, random_state=0, n_lambdas=5)
