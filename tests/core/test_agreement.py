"""Tests of crowdlearn.metrics: Krippendorff's alpha, posterior entropy, and
confidence intervals for the workers' quality."""

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from crowdlearn.metrics import (WorkerQualityIntervals, coincidence_matrix, krippendorff_alpha,
                                posterior_entropy, worker_quality_intervals)
from crowdlearn.metrics.intervals import _one_coin_information, _training_crowd
from crowdlearn.aggregation.dawid_skene import DawidSkene, DawidSkeneParams, _Data, _flat_indices
from crowdlearn.exceptions import NotFittedError
from crowdlearn.labels import from_triples
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene, _one_coin_matrices
from crowdlearn.simulate import one_coin_confusion, simulate_crowd


def quiet_fit(model, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args)


# -- Krippendorff's alpha ---------------------------------------------------------------------
# K. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# observers, twelve units, values 1..5, "." where an observer gave no value.
KRIPPENDORFF_2011 = """
A  1 2 3 3 2 1 4 1 2 . . .
B  1 2 3 3 2 2 4 1 2 5 . 3
C  . 3 3 3 2 3 4 2 2 5 1 .
D  1 2 3 3 2 4 4 1 2 5 1 .
"""


def krippendorff_table():
    rows = [line.split() for line in KRIPPENDORFF_2011.strip().splitlines()]
    return {r[0]: r[1:] for r in rows}


def test_krippendorff_worked_example_nominal():
    table = krippendorff_table()
    dense = np.array([[-1 if v == "." else int(v) - 1 for v in vals]
                      for vals in table.values()]).T          # units x observers
    assert dense.shape == (12, 4)
    assert round(krippendorff_alpha(dense), 3) == 0.743
    # the paper's coincidence matrix (values 1..5), its row sums n_c and n = 40
    o = coincidence_matrix(dense)
    expected = np.array([[7, 4 / 3, 1 / 3, 1 / 3, 0],
                         [4 / 3, 10, 4 / 3, 1 / 3, 0],
                         [1 / 3, 4 / 3, 8, 1 / 3, 0],
                         [1 / 3, 1 / 3, 1 / 3, 4, 0],
                         [0, 0, 0, 0, 3]])
    np.testing.assert_allclose(o, expected, atol=1e-12)
    np.testing.assert_allclose(o.sum(axis=1), [9, 13, 10, 5, 3], atol=1e-12)
    assert o.sum() == pytest.approx(40)
    # the same data as a DataFrame of (task, worker, label) with arbitrary identifiers
    rows = [(f"unit{u:02d}", obs, f"v{v}") for obs, vals in table.items()
            for u, v in enumerate(vals) if v != "."]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    assert krippendorff_alpha(df) == pytest.approx(krippendorff_alpha(dense), abs=1e-14)
    # and as triples
    item, expert = np.nonzero(dense >= 0)
    crowd = from_triples(item, expert, dense[item, expert])
    assert krippendorff_alpha(crowd) == pytest.approx(0.743421052631579, abs=1e-12)
    assert krippendorff_alpha((item, expert, dense[item, expert])) == \
        pytest.approx(krippendorff_alpha(crowd))


def brute_alpha(triples, n_items, K):
    """Alpha from its definition: a loop over the ordered pairs of each unit's values."""
    values = [[l for (i, _, l) in triples if i == u] for u in range(n_items)]
    o = [[0.0] * K for _ in range(K)]
    for vals in values:
        m = len(vals)
        if m < 2:
            continue
        for a, b in itertools.permutations(range(m), 2):
            o[vals[a]][vals[b]] += 1.0 / (m - 1)
    n_c = [sum(row) for row in o]
    n = sum(n_c)
    d_o = sum(o[c][k] for c in range(K) for k in range(K) if c != k) / n
    d_e = sum(n_c[c] * n_c[k] for c in range(K) for k in range(K) if c != k) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("seed", range(8))
def test_krippendorff_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_items, n_experts, K = rng.integers(3, 25), rng.integers(2, 6), rng.integers(2, 5)
    n_labels = rng.integers(n_items, 4 * n_items)
    # repeated labels (an expert labelling an item twice) and lone labels included
    item = rng.integers(0, n_items, n_labels)
    expert = rng.integers(0, n_experts, n_labels)
    truth = rng.integers(0, K, n_items)
    label = np.where(rng.random(n_labels) < 0.6, truth[item], rng.integers(0, K, n_labels))
    crowd = from_triples(item, expert, label, n_items=n_items, n_experts=n_experts,
                         n_classes=K)
    triples = list(zip(item.tolist(), expert.tolist(), label.tolist()))
    assert krippendorff_alpha(crowd) == pytest.approx(brute_alpha(triples, n_items, K),
                                                      abs=1e-12)


def test_krippendorff_invariant_to_relabelling_and_worker_order():
    sim = simulate_crowd(200, one_coin_confusion([0.9, 0.7, 0.6, 0.5], 4), missing=0.4,
                         random_state=3)
    crowd = sim.labels
    alpha = krippendorff_alpha(crowd)
    rng = np.random.default_rng(0)
    for _ in range(3):
        perm_c, perm_w, perm_i = rng.permutation(4), rng.permutation(4), rng.permutation(200)
        moved = from_triples(perm_i[crowd.item], perm_w[crowd.expert], perm_c[crowd.label],
                             n_items=200, n_experts=4, n_classes=4)
        assert krippendorff_alpha(moved) == pytest.approx(alpha, abs=1e-12)
    # unused classes change nothing
    assert krippendorff_alpha(crowd, n_classes=7) == pytest.approx(alpha, abs=1e-12)
    # dense form
    assert krippendorff_alpha(crowd.to_dense()) == pytest.approx(alpha, abs=1e-12)


def test_krippendorff_perfect_agreement_and_chance():
    dense = np.array([[0, 0, -1], [1, 1, 1], [2, -1, 2], [1, -1, -1], [0, 0, 0]])
    assert krippendorff_alpha(dense) == 1.0
    # random labels: alpha near 0
    rng = np.random.default_rng(1)
    noise = rng.integers(0, 3, size=(3000, 3))
    assert abs(krippendorff_alpha(noise)) < 0.03


def test_krippendorff_undefined_cases_raise():
    with pytest.raises(ValueError, match="pairable"):
        krippendorff_alpha(np.array([[0, -1], [-1, 1], [1, -1]]))
    with pytest.raises(ValueError, match="D_e"):
        krippendorff_alpha(np.array([[1, 1], [1, 1], [0, -1]]))  # only class 1 is pairable
    with pytest.raises(ValueError):
        krippendorff_alpha(None)


# -- posterior entropy -------------------------------------------------------------------------
def test_posterior_entropy_hand_values():
    q = np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75], [0.9, 0.1]])
    h = posterior_entropy(q)
    expected = [0.0, 1.0, -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)),
                -(0.9 * math.log2(0.9) + 0.1 * math.log2(0.1))]
    np.testing.assert_allclose(h, expected, atol=1e-12)
    assert h[2] == pytest.approx(0.811278124459, abs=1e-10)
    np.testing.assert_allclose(posterior_entropy(q, base=math.e), np.array(expected) * math.log(2),
                               atol=1e-12)
    q4 = np.array([[0.25] * 4, [1, 0, 0, 0], [0.5, 0.5, 0, 0]])
    np.testing.assert_allclose(posterior_entropy(q4), [2.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(posterior_entropy(q4, normalized=True), [1.0, 0.0, 0.5],
                               atol=1e-12)
    np.testing.assert_allclose(posterior_entropy(q4, base=10, normalized=True), [1.0, 0.0, 0.5],
                               atol=1e-12)


def test_posterior_entropy_of_models_and_frames():
    sim = simulate_crowd(60, one_coin_confusion([0.8, 0.7, 0.6], 3), random_state=0)
    # a fixed number of EM steps, so the array and DataFrame fits below compare the same
    # computation whatever order the labels are summed in
    ds = quiet_fit(DawidSkene(tol=0.0, max_iter=20), sim.labels)
    assert ds.n_iter_ == 20
    h = posterior_entropy(ds)
    assert isinstance(h, np.ndarray) and h.shape == (60,)
    np.testing.assert_allclose(h, posterior_entropy(ds.posterior_))
    assert ((h >= 0) & (h <= math.log2(3) + 1e-12)).all()
    # fitted on a DataFrame: a Series indexed by task id
    item, worker, label = sim.labels.to_table()
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in item], "worker": worker,
                       "label": np.array(["a", "b", "c"])[label]})
    ds_df = quiet_fit(DawidSkene(tol=0.0, max_iter=20), df)
    assert ds_df.n_iter_ == 20
    hs = posterior_entropy(ds_df)
    assert isinstance(hs, pd.Series) and hs.index.name == "task"
    assert hs.index[0] == "t000" and len(hs) == 60
    np.testing.assert_allclose(hs.to_numpy(), h, atol=1e-8)


def test_posterior_entropy_validation():
    with pytest.raises(ValueError, match="sum to 1"):
        posterior_entropy(np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match="negative"):
        posterior_entropy(np.array([[1.5, -0.5]]))
    with pytest.raises(ValueError, match="2-dimensional"):
        posterior_entropy(np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="base"):
        posterior_entropy(np.array([[0.5, 0.5]]), base=1)
    with pytest.raises(ValueError, match="base"):
        posterior_entropy(np.array([[0.5, 0.5]]), base=-2)
    with pytest.raises(NotFittedError):
        posterior_entropy(DawidSkene())


# -- worker quality intervals: helpers --------------------------------------------------------
ACC = np.array([0.85, 0.75, 0.65, 0.7, 0.8, 0.6])


def one_coin_sim(seed, n_items=300, K=3, acc=ACC, missing=0.2):
    return simulate_crowd(n_items, one_coin_confusion(acc, K), missing=missing,
                          random_state=seed)


def covers(r, truth):
    return (r.accuracy_lower <= truth) & (truth <= r.accuracy_upper)


def width(r):
    return r.accuracy_upper - r.accuracy_lower


# -- Fisher: the analytic observed information is the Hessian of the log-likelihood -----------
@pytest.mark.parametrize("K,alpha", [(2, 0.0), (3, 0.0), (3, 1.0)])
def test_fisher_information_matches_numerical_hessian(K, alpha):
    sim = simulate_crowd(120, one_coin_confusion([0.85, 0.8, 0.7, 0.65, 0.6], K), missing=0.3,
                         random_state=2)
    oc = quiet_fit(OneCoinDawidSkene(alpha=alpha, tol=1e-14, max_iter=5000), sim.labels)
    crowd = _training_crowd(oc, sim.labels)
    J = oc.n_experts_
    data = _Data(crowd, None, *_flat_indices(crowd, K))

    def objective(theta):  # log-likelihood (+ log prior) in (logit p, prior logits)
        p = 1 / (1 + np.exp(-theta[:J]))
        g = np.r_[theta[J:], 0.0]
        phi = np.exp(g - logsumexp(g))
        lj = oc._log_joint(data, DawidSkeneParams(phi, _one_coin_matrices(p, K), None))
        return logsumexp(lj, axis=1).sum() + alpha * (np.log(phi).sum() + np.log(p).sum()
                                                      + np.log1p(-p).sum())

    p, phi = oc.accuracy_, oc.class_prior_
    theta = np.r_[np.log(p / (1 - p)), np.log(phi[:-1] / phi[-1])]
    P, h = theta.size, 1e-4
    hess = np.zeros((P, P))
    for i in range(P):
        for j in range(P):
            e, f = np.eye(P)[i] * h, np.eye(P)[j] * h
            hess[i, j] = (objective(theta + e + f) - objective(theta + e - f)
                          - objective(theta - e + f) + objective(theta - e - f)) / (4 * h * h)
    info = _one_coin_information(oc, crowd)
    np.testing.assert_allclose(info, -hess, atol=1e-4 * np.abs(hess).max())
    # the gradient vanishes at the fit (Fisher's identity: the score is the EM gradient)
    grad = np.array([(objective(theta + np.eye(P)[i] * h) - objective(theta - np.eye(P)[i] * h))
                     / (2 * h) for i in range(P)])
    assert np.abs(grad).max() < 1e-3


# -- coverage on simulated crowds --------------------------------------------------------------
def test_fisher_coverage_on_simulated_crowds():
    hits = []
    for seed in range(30):
        sim = one_coin_sim(100 + seed)
        oc = quiet_fit(OneCoinDawidSkene(), sim.labels)
        r = worker_quality_intervals(oc, sim.labels, method="fisher", level=0.9)
        assert ((r.accuracy_lower < r.accuracy) & (r.accuracy < r.accuracy_upper)).all()
        assert ((r.accuracy_lower > 0) & (r.accuracy_upper < 1)).all()
        hits.append(covers(r, ACC))
    rate = np.mean(hits)
    assert 0.75 <= rate <= 0.98, rate


@pytest.mark.parametrize("model_cls", [OneCoinDawidSkene, DawidSkene])
def test_bootstrap_coverage_on_simulated_crowds(model_cls):
    hits, conf_hits = [], []
    for seed in range(8):
        sim = one_coin_sim(200 + seed, K=2)
        model = quiet_fit(model_cls(), sim.labels)
        r = worker_quality_intervals(model, sim.labels, n_boot=80, level=0.9, random_state=seed)
        assert r.boot_accuracy.shape == (80, 6) and r.n_boot == 80
        hits.append(covers(r, ACC))
        conf_hits.append((r.confusion_lower <= sim.confusion)
                         & (sim.confusion <= r.confusion_upper))
    assert 0.7 <= np.mean(hits) <= 1.0, np.mean(hits)
    assert 0.7 <= np.mean(conf_hits) <= 1.0, np.mean(conf_hits)


def test_bootstrap_has_no_label_switching():
    # three classes, Dawid--Skene: every replicate is matched to the fitted classes
    sim = one_coin_sim(7, n_items=150, K=3)
    ds = quiet_fit(DawidSkene(), sim.labels)
    r = worker_quality_intervals(ds, sim.labels, n_boot=60, random_state=0)
    assert (r.boot_accuracy > 0.4).all()
    np.testing.assert_allclose(np.median(r.boot_accuracy, axis=0), r.accuracy, atol=0.06)
    # the diagonal of every bootstrap confusion interval sits above chance
    diag_lo = np.diagonal(r.confusion_lower, axis1=1, axis2=2)
    assert (diag_lo > 1 / 3).mean() > 0.8


def test_bootstrap_identity_resample_reproduces_the_fit():
    """A resample drawing every item once is the training set: EM warm-started at the
    fit stays there."""
    from crowdlearn.metrics._resample import _Resampler
    sim = one_coin_sim(5, n_items=200, K=3)
    for model in (quiet_fit(DawidSkene(tol=1e-13, max_iter=3000), sim.labels),
                  quiet_fit(OneCoinDawidSkene(alpha=1.0, tol=1e-13, max_iter=3000),
                            sim.labels)):
        crowd = _training_crowd(model, sim.labels)
        acc, conf = _Resampler(model, crowd, 50, 1e-9).run(np.arange(200)[None])
        np.testing.assert_allclose(conf[0], model.confusion_, atol=1e-5)
        np.testing.assert_allclose(acc[0], (np.diagonal(model.confusion_, axis1=1, axis2=2)
                                            * model.class_prior_).sum(axis=1), atol=1e-5)


def test_counts_intervals():
    sim = one_coin_sim(11, n_items=400, K=3)
    for model in (quiet_fit(DawidSkene(), sim.labels), quiet_fit(OneCoinDawidSkene(),
                                                                  sim.labels)):
        r = worker_quality_intervals(model, sim.labels, method="counts", level=0.9)
        K = 3
        assert r.confusion_lower.shape == r.confusion_upper.shape == (6, K, K)
        assert ((0 <= r.confusion_lower) & (r.confusion_lower <= r.confusion_upper)
                & (r.confusion_upper <= 1)).all()
        assert ((0 < r.accuracy_lower) & (r.accuracy_lower < r.accuracy_upper)
                & (r.accuracy_upper < 1)).all()
        assert np.mean(covers(r, ACC)) >= 0.5
        assert r.n_boot == 0 and r.boot_accuracy is None and r.method == "counts"


# -- widths ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["fisher", "bootstrap", "counts"])
def test_intervals_shrink_with_more_items(method):
    widths = []
    for n_items in (150, 1500):
        sim = one_coin_sim(3, n_items=n_items)
        oc = quiet_fit(OneCoinDawidSkene(), sim.labels)
        r = worker_quality_intervals(oc, sim.labels, method=method, n_boot=60, random_state=0)
        widths.append(width(r))
    # ten times the items: about a third of the width
    assert (widths[1] < 0.6 * widths[0]).all(), widths


@pytest.mark.parametrize("method", ["fisher", "bootstrap", "counts"])
def test_workers_with_few_labels_get_wider_intervals(method):
    rng = np.random.default_rng(4)
    sim = simulate_crowd(500, one_coin_confusion([0.75] * 6, 3), random_state=4)
    crowd = sim.labels
    # worker 5 keeps only about 8% of its labels
    keep = (crowd.expert != 5) | (rng.random(crowd.n_labels) < 0.08)
    few = crowd.subset(keep)
    oc = quiet_fit(OneCoinDawidSkene(), few)
    r = worker_quality_intervals(oc, few, method=method, n_boot=60, random_state=1)
    w = width(r)
    assert w[5] > 2 * w[:5].max(), w
    if method != "fisher":  # the one-coin model: the same widths for the confusion entries
        assert (r.confusion_upper - r.confusion_lower)[5, 0, 0] > \
            2 * (r.confusion_upper - r.confusion_lower)[:5, 0, 0].max()
    ds = quiet_fit(DawidSkene(), few)
    if method != "fisher":
        r = worker_quality_intervals(ds, few, method=method, n_boot=60, random_state=1)
        assert width(r)[5] > 2 * width(r)[:5].max()


# -- reproducibility ---------------------------------------------------------------------------
def test_same_seed_same_result_and_threads():
    sim = one_coin_sim(21, n_items=200, K=2)
    ds = quiet_fit(DawidSkene(), sim.labels)
    a = worker_quality_intervals(ds, sim.labels, n_boot=40, random_state=5)
    b = worker_quality_intervals(ds, sim.labels, n_boot=40, random_state=5)
    c = worker_quality_intervals(ds, sim.labels, n_boot=40, random_state=6)
    d = worker_quality_intervals(ds, sim.labels, n_boot=40, random_state=5, n_jobs=2)
    np.testing.assert_array_equal(a.boot_accuracy, b.boot_accuracy)
    np.testing.assert_array_equal(a.confusion_lower, b.confusion_lower)
    assert not np.array_equal(a.boot_accuracy, c.boot_accuracy)
    np.testing.assert_allclose(a.boot_accuracy, d.boot_accuracy, atol=1e-6)
    e = worker_quality_intervals(ds, sim.labels, n_boot=40,
                                 random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(a.boot_accuracy, e.boot_accuracy)


def test_results_layout_and_dataframe_input():
    sim = one_coin_sim(8, n_items=120, K=3)
    item, worker, label = sim.labels.to_table()
    df = pd.DataFrame({"task": item, "worker": [f"w{w}" for w in worker],
                       "label": np.array(["x", "y", "z"])[label]})
    oc = quiet_fit(OneCoinDawidSkene(), df)
    r = worker_quality_intervals(oc, df, method="fisher", level=0.8)
    assert isinstance(r, WorkerQualityIntervals)
    assert r.accuracy.shape == r.accuracy_lower.shape == r.accuracy_upper.shape == (6,)
    assert r.confusion.shape == (6, 3, 3) and r.level == 0.8 and r.method == "fisher"
    np.testing.assert_allclose(r.accuracy, oc.accuracy_)
    # one-coin: the confusion bounds follow from the accuracy bounds
    np.testing.assert_allclose(r.confusion_lower[:, 1, 1], r.accuracy_lower)
    np.testing.assert_allclose(r.confusion_upper[:, 0, 2], (1 - r.accuracy_lower) / 2)
    frame = r.to_frame()
    assert frame.index.name == "worker" and list(frame.index) == [f"w{j}" for j in range(6)]
    assert list(frame.columns) == ["accuracy", "lower", "upper"]
    # a narrower level gives narrower intervals
    r95 = worker_quality_intervals(oc, df, method="fisher", level=0.95)
    assert (width(r95) > width(r)).all()


# -- errors ------------------------------------------------------------------------------------
def test_errors():
    sim = one_coin_sim(9, n_items=80, K=3)
    oc = quiet_fit(OneCoinDawidSkene(), sim.labels)
    ds = quiet_fit(DawidSkene(), sim.labels)
    with pytest.raises(ValueError, match="not fitted"):
        worker_quality_intervals(OneCoinDawidSkene(), sim.labels)
    with pytest.raises(NotFittedError):
        worker_quality_intervals(DawidSkene(), sim.labels, method="counts")
    for level in (0, 1, 1.5, -0.1, float("nan"), True):
        with pytest.raises(ValueError, match="level"):
            worker_quality_intervals(oc, sim.labels, level=level)
    for n_boot in (0, -3, 2.5):
        with pytest.raises(ValueError, match="n_boot"):
            worker_quality_intervals(oc, sim.labels, n_boot=n_boot)
    with pytest.raises(ValueError, match="method"):
        worker_quality_intervals(oc, sim.labels, method="jackknife")
    with pytest.raises(ValueError, match="fisher"):
        worker_quality_intervals(ds, sim.labels, method="fisher")
    with pytest.raises(ValueError, match="n_jobs"):
        worker_quality_intervals(oc, sim.labels, n_jobs=0)
    with pytest.raises(ValueError, match="DawidSkene"):
        worker_quality_intervals(object(), sim.labels)
    dense = sim.labels.to_dense()
    # wrong number of experts
    with pytest.raises(ValueError, match="n_experts"):
        worker_quality_intervals(oc, np.hstack([dense, dense[:, :1]]))
    with pytest.raises(ValueError, match="n_experts"):
        worker_quality_intervals(oc, dense[:, :5], method="counts")
    # wrong number of items
    with pytest.raises(ValueError, match="n_items"):
        worker_quality_intervals(oc, dense[:70], method="fisher")
    # same shape, other labels
    other = dense.copy()
    other[other >= 0] = (other[other >= 0] + 1) % 3
    with pytest.raises(ValueError, match="do not match"):
        worker_quality_intervals(ds, other, method="counts")
    with pytest.raises(ValueError):
        worker_quality_intervals(oc, None)
    # the dense form of the training labels is accepted
    r = worker_quality_intervals(oc, dense, method="fisher")
    assert r.accuracy_lower.shape == (6,)
