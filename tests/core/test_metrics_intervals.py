"""Tests of the confidence intervals for the workers' quality
(``crowdlearn.metrics.worker_quality_intervals``): Louis' observed information against a
numerical Hessian, coverage on simulated crowds, widths, the bootstrap's resampler on the
Dawid--Skene kernel's batch axis, reproducibility, and the errors."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from crowdlearn import DawidSkene, OneCoinDawidSkene, worker_quality_intervals
from crowdlearn.aggregation._ds_kernel import (confusion_m_step, count_table, label_matrix,
                                               log_joint, log_param_sum, one_coin_m_step,
                                               one_coin_matrices, softmax_rows, split_counts)
from crowdlearn.aggregation.dawid_skene import DawidSkeneParams, e_step
from crowdlearn.exceptions import NotFittedError
from crowdlearn.metrics import WorkerQualityIntervals
from crowdlearn.metrics._resample import _Resampler
from crowdlearn.metrics.intervals import _one_coin_information, _training_crowd
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

from metrics_crowds import quiet_fit


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

    def objective(theta):  # log-likelihood (+ log prior) in (logit p, prior logits)
        p = 1 / (1 + np.exp(-theta[:J]))
        g = np.r_[theta[J:], 0.0]
        phi = np.exp(g - logsumexp(g))
        _, log_likelihood = e_step(crowd, DawidSkeneParams(phi, one_coin_matrices(p, K), None))
        return log_likelihood + alpha * (np.log(phi).sum() + np.log(p).sum()
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
    sim = one_coin_sim(5, n_items=200, K=3)
    for model in (quiet_fit(DawidSkene(tol=1e-13, max_iter=3000), sim.labels),
                  quiet_fit(OneCoinDawidSkene(alpha=1.0, tol=1e-13, max_iter=3000),
                            sim.labels)):
        crowd = _training_crowd(model, sim.labels)
        acc, conf = _Resampler(model, crowd, 50, 1e-9).run(np.arange(200)[None])
        np.testing.assert_allclose(conf[0], model.confusion_, atol=1e-5)
        np.testing.assert_allclose(acc[0], (np.diagonal(model.confusion_, axis1=1, axis2=2)
                                            * model.class_prior_).sum(axis=1), atol=1e-5)


# -- the resampler: the Dawid--Skene kernel on its batch axis, the engine's stopping rule ------
def random_params(rng, B, J, K):
    return DawidSkeneParams(rng.dirichlet(np.ones(K), size=B),
                            rng.dirichlet(np.ones(K), size=(B, J, K)), None)


def test_batched_kernel_is_every_resample_on_its_own():
    sim = one_coin_sim(12, n_items=60, K=3)
    ds = quiet_fit(DawidSkene(), sim.labels)
    crowd = _training_crowd(ds, sim.labels)
    resampler = _Resampler(ds, crowd, max_iter=10, tol=1e-8)
    n, J, K, B = 60, crowd.n_experts, 3, 4
    width_ = J * K + 1
    # every item once, in order: one problem in the kernel's own layout
    identity = resampler.votes(np.arange(n)[None])
    assert (identity != label_matrix(crowd, K)[0]).nnz == 0
    rng = np.random.default_rng(0)
    idx = rng.integers(0, n, size=(B, n))
    votes = resampler.votes(idx)
    assert votes.shape == (B * n, B * width_)
    params = random_params(rng, B, J, K)
    q, _ = softmax_rows(log_joint(votes, params))
    table = (votes.T.tocsr() @ q).reshape(B, width_, K)
    counts, class_counts = split_counts(table, J)
    prior, conf = confusion_m_step(counts, class_counts, 1.0)
    one_prior, accuracy = one_coin_m_step(counts, class_counts, 1.0)
    logs = log_param_sum(params.class_prior, params.confusion)
    for b in range(B):
        alone = resampler.votes(idx[b:b + 1])
        block = votes[b * n:(b + 1) * n][:, b * width_:(b + 1) * width_]
        assert (block != alone).nnz == 0 and votes[b * n:(b + 1) * n].nnz == alone.nnz
        params_b = DawidSkeneParams(params.class_prior[b], params.confusion[b], None)
        q_b, _ = softmax_rows(log_joint(alone, params_b))
        np.testing.assert_allclose(q[b * n:(b + 1) * n], q_b, rtol=0, atol=1e-12)
        counts_b, class_b = split_counts(count_table(alone.T.tocsr(), q_b), J)
        np.testing.assert_allclose(table[b], count_table(alone.T.tocsr(), q_b), atol=1e-9)
        prior_b, conf_b = confusion_m_step(counts_b, class_b, 1.0)
        np.testing.assert_allclose(prior[b], prior_b, atol=1e-12)
        np.testing.assert_allclose(conf[b], conf_b, atol=1e-12)
        one_b, acc_b = one_coin_m_step(counts_b, class_b, 1.0)
        np.testing.assert_allclose(one_prior[b], one_b, atol=1e-12)
        np.testing.assert_allclose(accuracy[b], acc_b, atol=1e-12)
        assert logs[b] == pytest.approx(log_param_sum(params_b.class_prior,
                                                      params_b.confusion), abs=1e-9)


@pytest.mark.parametrize("model_cls", [DawidSkene, OneCoinDawidSkene])
def test_resampler_runs_the_engine_with_its_stopping_rule(model_cls):
    """Each replicate's EM is the engine's (crowdlearn.em.run_em) on its resample, with the
    model's M-step, objective and stopping rule; and it does not depend on the other
    replicates of its block."""
    from crowdlearn.em import run_em

    sim = one_coin_sim(13, n_items=80, K=3)
    model = quiet_fit(model_cls(alpha=0.5), sim.labels)
    crowd = _training_crowd(model, sim.labels)
    tol, J, K = 1e-7, crowd.n_experts, 3
    resampler = _Resampler(model, crowd, max_iter=500, tol=tol)
    idx = np.random.default_rng(1).integers(0, 80, size=(5, 80))
    start = model.params_
    B = idx.shape[0]
    prior, conf = resampler.em(idx, np.repeat(start.class_prior[None], B, axis=0),
                               np.repeat(start.confusion[None], B, axis=0), 500)
    for b in range(B):
        votes = resampler.votes(idx[b:b + 1])

        def e_step(params):
            q, log_evidence = softmax_rows(log_joint(votes, params))
            return q, log_evidence.sum() + model.alpha * log_param_sum(
                params.class_prior, params.confusion, model_cls is OneCoinDawidSkene)

        def m_step(q):
            counts, class_counts = split_counts(count_table(votes.T.tocsr(), q), J)
            if model_cls is OneCoinDawidSkene:
                phi, acc = one_coin_m_step(counts, class_counts, model.alpha)
                return DawidSkeneParams(phi, one_coin_matrices(acc, K), None)
            return DawidSkeneParams(*confusion_m_step(counts, class_counts, model.alpha), None)

        result = run_em(start, e_step, m_step, tol=tol, max_iter=500)
        assert result.converged and result.n_iter >= 2
        np.testing.assert_allclose(prior[b], result.params.class_prior, rtol=0, atol=1e-10)
        np.testing.assert_allclose(conf[b], result.params.confusion, rtol=0, atol=1e-10)
        # one M-step less ends elsewhere: the test sees where the rule stops
        before = run_em(start, e_step, m_step, tol=tol, max_iter=result.n_iter - 1)
        assert np.abs(before.params.confusion - conf[b]).max() > 1e-9


def test_intervals_refuse_models_with_other_priors():
    sim = one_coin_sim(14, n_items=80, K=3)
    gold = np.full(80, -1)
    gold[:5] = sim.truth[:5]
    ds = quiet_fit(DawidSkene(), sim.labels)
    assert ds.prior_counts_ is None
    for model, fit_kwargs in ((DawidSkene(confusion_prior=np.eye(3) + 1), {}),
                              (OneCoinDawidSkene(confusion_prior=np.eye(3) + 1), {}),
                              (DawidSkene(), {"gold": gold})):
        quiet_fit(model, sim.labels, **fit_kwargs)
        with pytest.raises(ValueError, match="alpha as their only prior"):
            worker_quality_intervals(model, sim.labels, method="counts")
    X = np.random.default_rng(0).integers(0, 2, size=(80, 4))
    with_features = quiet_fit(DawidSkene(), sim.labels, X)
    with pytest.raises(ValueError, match="features X"):
        worker_quality_intervals(with_features, sim.labels, method="counts")


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
