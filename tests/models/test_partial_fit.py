"""``partial_fit`` and ``warm_start`` of the Dawid--Skene models: EM continued from the
fitted parameters when labels are added (issue 28, where to spend the next label).

Iterations are counted, never timed; answers are compared to a tolerance, never to the
last bit (except where the same arithmetic is done twice)."""

import copy
import warnings

import numpy as np
import pytest

from crowdlearn import DawidSkene, OneCoinDawidSkene
from crowdlearn.labels import from_triples
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

MODELS = [DawidSkene, OneCoinDawidSkene]
TIGHT = dict(tol=1e-12, max_iter=5000)


def crowd(seed=0, n_items=600, n_classes=3, missing=0.3):
    accuracies = [0.9, 0.8, 0.75, 0.7, 0.65, 0.6]
    return simulate_crowd(n_items, one_coin_confusion(accuracies, n_classes),
                          missing=missing, random_state=seed).labels


def triples(c, mask):
    return c.item[mask], c.expert[mask], c.label[mask]


def split(c, fraction, seed=0):
    """A mask of about ``fraction`` of the labels (the new batch)."""
    rng = np.random.default_rng(seed)
    new = np.zeros(c.n_labels, dtype=bool)
    new[rng.choice(c.n_labels, size=max(1, int(fraction * c.n_labels)), replace=False)] = True
    return new


def assert_monotone(model):
    h = model.log_likelihood_history_
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:])), np.diff(h).min()
    assert model.objective_ == h[-1]


def fit_then_add(Model, c, new, **kw):
    """The continued run alone (``refit=False``: no comparison with a refit)."""
    first = Model(**kw).fit(triples(c, ~new))
    before = first.n_iter_
    return first.partial_fit(triples(c, new), refit=False), before


# -- fixed point -------------------------------------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
def test_a_warm_refit_on_the_same_labels_is_a_fixed_point(Model):
    c = crowd(1)
    model = Model(**TIGHT).fit(c)
    q, prior, conf = model.posterior_.copy(), model.class_prior_.copy(), model.confusion_.copy()
    objective = model.objective_
    model.set_params(warm_start=True).fit(c)
    assert model.n_iter_ <= 1 and model.converged_
    # the continued run starts where the fit ended, and stays there (to EM's tolerance)
    assert model.log_likelihood_history_[0] == pytest.approx(objective, rel=1e-12)
    np.testing.assert_allclose(model.posterior_, q, atol=1e-4)
    np.testing.assert_allclose(model.class_prior_, prior, atol=1e-4)
    np.testing.assert_allclose(model.confusion_, conf, atol=1e-4)
    assert_monotone(model)


@pytest.mark.parametrize("Model", MODELS)
def test_partial_fit_is_a_warm_fit_on_the_union(Model):
    """partial_fit(batch) is EM from the fitted parameters on all the labels: the same
    run as fit(all labels) with warm_start=True, number for number."""
    c = crowd(2)
    new = split(c, 0.1)
    first = Model().fit(triples(c, ~new))
    warm = copy.deepcopy(first).set_params(warm_start=True).fit(
        from_triples(*(np.concatenate([a, b]) for a, b in zip(triples(c, ~new),
                                                               triples(c, new)))))
    added = first.partial_fit(triples(c, new))
    assert added.n_iter_ == warm.n_iter_
    np.testing.assert_allclose(added.posterior_, warm.posterior_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(added.log_likelihood_history_, warm.log_likelihood_history_,
                               rtol=1e-12)


# -- the same optimum, in fewer iterations -----------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("seed", range(6))
def test_a_few_labels_more_converge_in_fewer_iterations(Model, seed):
    """1% more labels: fewer M-steps than a fit from the majority vote, at the default
    tolerance, to an objective at least as high (to the tolerance)."""
    c = crowd(seed)
    added, _ = fit_then_add(Model, c, split(c, 0.01, seed))
    fresh = Model().fit(c)
    assert added.converged_ and added.n_iter_ < fresh.n_iter_
    assert added.objective_ >= fresh.objective_ - 1e-7 * abs(fresh.objective_)
    assert_monotone(added)


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_batch_reaches_the_optimum_of_a_fresh_fit(Model, seed):
    c = crowd(seed)
    added, _ = fit_then_add(Model, c, split(c, 0.05, seed), **TIGHT)
    fresh = Model(**TIGHT).fit(c)
    assert added.converged_ and fresh.converged_
    assert added.objective_ == pytest.approx(fresh.objective_, rel=1e-9)
    np.testing.assert_allclose(added.posterior_, fresh.posterior_, atol=1e-4)
    np.testing.assert_allclose(added.confusion_, fresh.confusion_, atol=1e-4)
    assert_monotone(added)


@pytest.mark.parametrize("Model", MODELS)
def test_batches_one_after_another_reach_the_optimum_of_all_labels(Model):
    """Half the labels, then five batches of a tenth: the optimum of all the labels."""
    c = crowd(3)
    order = np.random.default_rng(3).permutation(c.n_labels)
    chunks = [order[:c.n_labels // 2]] + np.array_split(order[c.n_labels // 2:], 5)
    model = Model(**TIGHT)
    for chunk in chunks:
        mask = np.zeros(c.n_labels, dtype=bool)
        mask[chunk] = True
        model.partial_fit(triples(c, mask))  # the first call, unfitted, is a fit
        assert_monotone(model)
    fresh = Model(**TIGHT).fit(c)
    assert model.n_items_ == c.n_items and model.n_experts_ == c.n_experts
    assert model.objective_ == pytest.approx(fresh.objective_, rel=1e-9)
    np.testing.assert_allclose(model.posterior_, fresh.posterior_, atol=1e-4)


@pytest.mark.parametrize("accelerate", [False, True])
def test_the_continued_objective_never_decreases(accelerate):
    c = crowd(4, n_items=300)
    for fraction in (0.01, 0.2, 0.5):
        added, _ = fit_then_add(DawidSkene, c, split(c, fraction, 4), accelerate=accelerate,
                                alpha=0.5)
        assert_monotone(added)
        assert np.isclose(added.log_likelihood_,
                          added.objective_ - added._log_prior_term(added._params))


# -- new items, workers, classes ---------------------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
def test_new_items_and_a_new_worker(Model):
    c = crowd(5)
    new = (c.item >= 550) | (c.expert == c.n_experts - 1)  # the last worker joins late
    first = Model().fit(from_triples(*triples(c, ~new), n_experts=c.n_experts - 1))
    assert first.n_items_ <= 550 and first.n_experts_ == c.n_experts - 1
    first.partial_fit(triples(c, new))
    assert first.n_items_ == c.n_items and first.n_experts_ == c.n_experts
    assert first.confusion_.shape == (c.n_experts, 3, 3)
    np.testing.assert_allclose(first.confusion_.sum(axis=2), 1.0)
    assert_monotone(first)
    fresh = Model(**TIGHT).fit(c)
    assert first.objective_ >= fresh.objective_ - 1e-6 * abs(fresh.objective_)
    assert (first.predict() == fresh.predict()).mean() > 0.99


def test_a_new_worker_starts_from_the_mean_confusion():
    from crowdlearn.aggregation._warm import start_on

    c = crowd(6)
    model = DawidSkene().fit(c)
    more = from_triples(c.item, c.expert, c.label, n_experts=c.n_experts + 1)
    start = start_on(model, more, model._params)
    weights = c.labels_per_expert() / c.n_labels
    np.testing.assert_allclose(start.confusion[:-1], model.confusion_)
    np.testing.assert_allclose(start.confusion[-1],
                               np.tensordot(weights, model.confusion_, axes=1))
    np.testing.assert_allclose(start.class_prior, model.class_prior_)


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("incremental", [False, True])
def test_a_new_class_is_added_after_the_fitted_ones(Model, incremental):
    """Items of a third class arrive after a fit that saw two: partial_fit adds the class
    (index 2), EM's objective never decreases, and the result is as accurate as a fit of
    all the labels (to 0.5 points; the full partial_fit reaches its objective)."""
    sim = simulate_crowd(900, one_coin_confusion([0.9, 0.8, 0.75, 0.7, 0.85, 0.6], 3),
                         missing=0.2, random_state=3)
    c = sim.labels
    first = (sim.truth[c.item] < 2) & (c.label < 2)
    model = Model().fit(triples(c, first))
    assert model.n_classes_ == 2
    model.partial_fit(triples(c, ~first), incremental=incremental)
    fresh = Model().fit(c)
    assert model.n_classes_ == 3 and model.confusion_.shape[1:] == (3, 3)
    assert_monotone(model)
    assert (model.predict() == sim.truth).mean() >= (fresh.predict() == sim.truth).mean() - 0.005
    if not incremental:
        assert model.objective_ >= fresh.objective_ - 1e-4 * abs(fresh.objective_)
    if Model is OneCoinDawidSkene:  # still one accuracy per worker, spread over 2 wrong labels
        conf = model.confusion_
        np.testing.assert_allclose(conf[:, 0, 1], (1 - conf[:, 0, 0]) / 2, atol=1e-12)


def test_a_new_class_is_refused_when_the_settings_fix_the_classes():
    c = crowd(7)
    for kw in ({"n_classes": 3}, {"confusion_prior": np.ones((3, 3))}):
        model = DawidSkene(**kw).fit(c)
        with pytest.raises(ValueError, match="class\\(es\\) \\[3\\].*fixes its 3 classes"):
            model.partial_fit(([0], [0], [3]))
        n_iter = model.n_iter_
        model.partial_fit(([0], [0], [2]))  # a known class is fine; the refusal changed nothing
        assert model.n_items_ == c.n_items and model.n_classes_ == 3 and n_iter >= 0
    model = DawidSkene().fit(c)
    model.partial_fit(np.array([[3, -1]]))  # a matrix row: item 0, worker 0, class 3
    assert model.n_classes_ == 4 and model.class_prior_.shape == (4,)


def test_tables_are_matched_by_identifier():
    pd = pytest.importorskip("pandas")
    c = crowd(8, n_items=300)
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item],
                       "worker": [f"w{j}" for j in c.expert],
                       "label": np.array(["cat", "dog", "emu"])[c.label]})
    late = (c.item >= 280) | (c.expert == 0)  # new tasks, and worker w0 joins late
    model = DawidSkene(**TIGHT).fit(df[~late])
    assert "w0" not in model.expert_ids_.tolist()
    model.partial_fit(df[late])
    fresh = DawidSkene(**TIGHT).fit(df)
    assert model.expert_ids_.tolist() == fresh.expert_ids_.tolist()
    assert model.item_ids_.tolist() == fresh.item_ids_.tolist()
    assert model.class_ids_.tolist() == ["cat", "dog", "emu"]
    pd.testing.assert_index_equal(model.probas_.index, fresh.probas_.index)
    np.testing.assert_allclose(model.probas_.to_numpy(), fresh.probas_.to_numpy(), atol=1e-4)
    assert (model.labels_ == fresh.labels_).all()
    assert_monotone(model)
    # a batch of one class, of known tasks and workers, is read onto the fitted classes
    model.partial_fit(df.iloc[:3].assign(label="emu"))
    assert model.n_items_ == fresh.n_items_
    # a new class takes its place in sorted order, as a fit of all the labels would put it
    grown = copy.deepcopy(model).partial_fit(df.iloc[:2].assign(label="aardvark"))
    assert grown.class_ids_.tolist() == ["aardvark", "cat", "dog", "emu"]
    assert grown.probas_.columns.tolist() == ["aardvark", "cat", "dog", "emu"]
    with pytest.raises(ValueError, match="of type int, but the fitted classes"):
        copy.deepcopy(model).partial_fit(df.iloc[:2].assign(label=7))
    with pytest.raises(ValueError, match="without identifiers|have none"):
        model.partial_fit((np.array([0]), np.array([0]), np.array([1])))
    with pytest.raises(ValueError, match="mix types"):
        model.partial_fit(pd.DataFrame({"task": [7], "worker": ["w1"], "label": ["cat"]}))


# -- bad input ---------------------------------------------------------------------------------
def test_bad_input_is_refused_with_a_clear_message():
    pd = pytest.importorskip("pandas")
    c = crowd(9, n_items=200)
    model = DawidSkene().fit(c)
    with pytest.raises(ValueError, match="labels is None"):
        model.partial_fit(None)
    with pytest.raises(ValueError, match="without identifiers"):
        model.partial_fit(pd.DataFrame({"task": ["a"], "worker": ["w"], "label": [0]}))
    with pytest.raises(ValueError, match="warm_start must be True or False"):
        DawidSkene(warm_start="yes").fit(c)
    warm = DawidSkene(warm_start=True).fit(c)
    with pytest.raises(ValueError, match="classes"):
        warm.fit(from_triples(c.item, c.expert, c.label, n_classes=4))
    with pytest.raises(ValueError, match="n_classes fixes its 3 classes"):
        DawidSkene(n_classes=3).fit(c).partial_fit(from_triples([0], [0], [3]))
    X = np.random.default_rng(0).integers(0, 2, size=(c.n_items, 4))
    with pytest.raises(ValueError, match="features"):
        DawidSkene(warm_start=True).fit(c, X).fit(c)
    with pytest.raises(ValueError, match="without features"):
        DawidSkene().fit(c).partial_fit(([0], [0], [1]), X[:1])


def featured_crowd(seed=0, n_items=400):
    """A crowd whose items have binary features that depend on the true class."""
    rng = np.random.default_rng(seed)
    sim = simulate_crowd(n_items, one_coin_confusion([0.8, 0.7, 0.65, 0.6], 2),
                         labels_per_item=2, random_state=rng)
    p = np.array([[0.2, 0.7, 0.4], [0.8, 0.3, 0.45]])      # P(x_f = 1 | class)
    X = (rng.random((n_items, 3)) < p[sim.truth]).astype(int)
    return sim.labels, X


def test_partial_fit_with_features_by_index():
    """Fitted items keep their features; the new items' rows come in X, in index order.
    The continued run never decreases and lands where a fit of everything does."""
    c, X = featured_crowd()
    first = c.item < 300
    model = DawidSkene().fit(triples(c, first), X[:300])
    with pytest.raises(ValueError, match="new item"):
        model.partial_fit(triples(c, ~first))
    with pytest.raises(ValueError, match=r"shape \(100, 3\)"):
        model.partial_fit(triples(c, ~first), X[300:350])
    with pytest.raises(ValueError, match="0 or 1|binary"):
        model.partial_fit(triples(c, ~first), X[300:] + 2)
    model.partial_fit(triples(c, ~first), X[300:])
    assert model.n_items_ == 400 and model.n_features_in_ == 3
    assert_monotone(model)
    fresh = DawidSkene().fit(c, X)
    assert (model.predict() == fresh.predict()).mean() > 0.98
    np.testing.assert_allclose(model.feature_prob_, fresh.feature_prob_, atol=0.02)
    # labels for fitted items only: no X needed
    again = copy.deepcopy(model).partial_fit(triples(c, c.item < 5))
    assert again.n_items_ == 400


def test_partial_fit_with_features_by_task_id():
    pd = pytest.importorskip("pandas")
    c, X = featured_crowd(1)
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item], "worker": c.expert,
                       "label": c.label})
    feats = pd.DataFrame(X, index=[f"t{i:03d}" for i in range(400)], columns=["a", "b", "c"])
    old, new = df[c.item < 300], df[c.item >= 300]
    model = DawidSkene().fit(old, feats.iloc[:300])
    with pytest.raises(ValueError, match="DataFrame indexed by task id"):
        model.partial_fit(new, X[300:])
    with pytest.raises(ValueError, match="no row for the new task"):
        model.partial_fit(new, feats.iloc[300:399])
    changed = feats.iloc[[0] + list(range(300, 400))].copy()
    changed.iloc[0] = 1 - changed.iloc[0]
    with pytest.raises(ValueError, match="other features"):
        model.partial_fit(new, changed)
    with pytest.raises(ValueError, match="no label"):
        model.partial_fit(new[new.task != "t399"], feats.iloc[300:])
    with pytest.raises(ValueError, match="not the features the model was fitted with"):
        model.partial_fit(new, feats.iloc[300:].rename(columns={"c": "d"}))
    # columns are matched by name: the same features in another column order, same fit
    swapped = copy.deepcopy(model).partial_fit(new, feats.iloc[300:][["c", "a", "b"]])
    model.partial_fit(new, feats.iloc[299:])          # a fitted task's row, unchanged: fine
    np.testing.assert_array_equal(swapped.posterior_, model.posterior_)
    assert_monotone(model)
    fresh = DawidSkene().fit(df, feats)
    assert list(model.labels_.index) == list(fresh.labels_.index)
    assert (model.labels_ == fresh.labels_).mean() > 0.98


def test_an_unfitted_partial_fit_is_a_fit():
    c = crowd(10, n_items=200)
    a = DawidSkene(n_init=2, random_state=0).partial_fit(c)
    b = DawidSkene(n_init=2, random_state=0).fit(c)
    np.testing.assert_array_equal(a.posterior_, b.posterior_)
    assert a.n_iter_ == b.n_iter_


# -- invariances -------------------------------------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
def test_the_order_of_the_rows_does_not_matter(Model):
    c = crowd(11)
    new = split(c, 0.05, 11)
    a, _ = fit_then_add(Model, c, new)
    rng = np.random.default_rng(11)
    old_rows, new_rows = np.flatnonzero(~new), np.flatnonzero(new)
    old_rows, new_rows = rng.permutation(old_rows), rng.permutation(new_rows)
    b = Model().fit((c.item[old_rows], c.expert[old_rows], c.label[old_rows]))
    b.partial_fit((c.item[new_rows], c.expert[new_rows], c.label[new_rows]), refit=False)
    assert abs(a.n_iter_ - b.n_iter_) <= 1
    np.testing.assert_allclose(a.posterior_, b.posterior_, atol=1e-6)
    np.testing.assert_allclose(a.confusion_, b.confusion_, atol=1e-6)


def test_the_same_seed_gives_the_same_result():
    c = crowd(12)
    new = split(c, 0.05, 12)
    runs = [fit_then_add(DawidSkene, c, new, n_init=3, random_state=5)[0] for _ in range(2)]
    np.testing.assert_array_equal(runs[0].posterior_, runs[1].posterior_)
    np.testing.assert_array_equal(runs[0].log_likelihood_history_,
                                  runs[1].log_likelihood_history_)


def test_gold_items_stay_clamped():
    c = crowd(13, n_items=300)
    gold = np.full(c.n_items, -1)
    gold[:20] = 2  # claimed truths, whatever the labels say
    new = split(c, 0.05, 13)
    model = DawidSkene().fit(from_triples(*triples(c, ~new), n_items=c.n_items), gold=gold)
    model.partial_fit(triples(c, new))
    np.testing.assert_allclose(model.posterior_[:20, 2], 1.0)
    assert (model.gold_[:20] == 2).all() and (model.gold_[20:] == -1).all()
    assert_monotone(model)


def test_one_coin_accuracies_follow_the_continued_fit():
    c = crowd(14)
    added, _ = fit_then_add(OneCoinDawidSkene, c, split(c, 0.05, 14))
    np.testing.assert_allclose(added.accuracy_, added.confusion_[:, 0, 0])
    conf = added.confusion_
    off = conf[:, 0, 1]
    np.testing.assert_allclose(conf[:, 1, 2], off)  # still one-coin matrices


def test_no_warning_for_a_converged_continuation():
    c = crowd(15)
    model = DawidSkene().fit(c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.partial_fit(triples(c, split(c, 0.01, 15)))


def test_a_label_the_fit_gave_probability_zero_starts_from_a_finite_objective():
    """With alpha=0 a worker who always said 0 has P(says 1) = 0 under every class; when
    they now say 1, EM starts from the fitted matrices mixed with a little uniform."""
    item = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    expert = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    label = np.array([0, 0, 0, 1, 0, 1, 0, 0])
    model = DawidSkene(n_classes=2).fit((item, expert, label))
    assert model.confusion_[0, :, 1].max() == 0.0  # worker 0 never said 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny crowd may be degenerate
        model.partial_fit(([4, 4], [0, 1], [1, 1]))
    assert np.isfinite(model.log_likelihood_history_).all()
    assert_monotone(model)
    np.testing.assert_allclose(model.posterior_.sum(axis=1), 1.0)


def test_a_confusion_prior_is_kept_and_a_per_worker_one_needs_every_worker():
    c = crowd(16, n_items=300)
    new = c.expert == c.n_experts - 1
    prior = 4 * np.eye(3) + 1
    shared = DawidSkene(confusion_prior=prior).fit(
        from_triples(*triples(c, ~new), n_experts=c.n_experts - 1))
    shared.partial_fit(triples(c, new))
    fresh = DawidSkene(confusion_prior=prior, **TIGHT).fit(c)
    assert shared.objective_ >= fresh.objective_ - 1e-6 * abs(fresh.objective_)
    assert_monotone(shared)
    per_worker = DawidSkene(confusion_prior=np.broadcast_to(prior, (c.n_experts - 1, 3, 3)))
    per_worker.fit(from_triples(*triples(c, ~new), n_experts=c.n_experts - 1))
    with pytest.raises(ValueError, match="confusion_prior must have shape"):
        per_worker.partial_fit(triples(c, new))


# -- incremental EM (Neal and Hinton): partial_fit(..., incremental=True) ----------------------
def _steps_after_an_e_step(seed=20, alpha=0.0):
    """A fitted model, the labels with a batch added, and the incremental steps after one
    partial E-step from the fitted parameters."""
    from crowdlearn.aggregation._incremental import IncrementalSteps

    c = crowd(seed, n_items=300)
    new = split(c, 0.1, seed)
    model = DawidSkene(alpha=alpha).fit(from_triples(*triples(c, ~new), n_items=c.n_items))
    data = model._data_from(from_triples(*(np.concatenate([a[~new], a[new]]) for a in (
        c.item, c.expert, c.label)), n_items=c.n_items, n_experts=c.n_experts,
        n_classes=c.n_classes))
    rows = np.unique(c.item[new])
    steps = IncrementalSteps(model, data, model.posterior_.copy(), rows)
    before = steps.q.copy()
    steps.e_step(model._params)
    return model, data, steps, rows, before


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_incremental_steps_keep_their_counts_equal_to_the_posteriors(alpha):
    """The invariant the incremental M-step relies on: after partial E-steps, the kept
    counts are those of the current posteriors (votes^T q), the entropy is theirs, and
    only the touched items' posteriors moved."""
    from scipy.special import entr

    model, data, steps, rows, before = _steps_after_an_e_step(alpha=alpha)
    for _ in range(3):
        steps.e_step(steps.m_step(steps.q))
    untouched = np.setdiff1d(np.arange(data.crowd.n_items), rows)
    assert rows.size and untouched.size
    np.testing.assert_array_equal(steps.q[untouched], before[untouched])
    assert not np.allclose(steps.q[rows], before[rows])
    np.testing.assert_allclose(steps.counts, data.votes_t @ steps.q, rtol=1e-10, atol=1e-9)
    assert np.isclose(steps.entropy, entr(steps.q).sum(), rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_the_free_energy_at_exact_posteriors_is_the_objective(alpha):
    """F(q, theta) = sum_i sum_k q_ik log P(y_i = k, labels_i) + H(q) + log prior: at the
    exact posteriors of every item it is the log-likelihood plus the log-prior, which the
    model's E-step computes another way (from the normalisers); at other posteriors it is
    lower."""
    from crowdlearn.aggregation._incremental import IncrementalSteps

    model, data, steps, rows, _ = _steps_after_an_e_step(alpha=alpha)
    params = steps.m_step(steps.q)
    q, objective = model._e_step(data, params)
    exact = IncrementalSteps(model, data, q, rows)
    assert np.isclose(exact.free_energy(params), objective, rtol=1e-12, atol=1e-9)
    assert steps.free_energy(params) < objective


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.5])
def test_incremental_partial_fit_never_lowers_the_free_energy(Model, fraction):
    """The history is the free energy after each partial E-step, then the objective after
    the final E-step of every item: never decreasing, and the last entry the objective of
    the final parameters on all the labels (log_likelihood_ is their log-likelihood)."""
    from crowdlearn.aggregation.dawid_skene import e_step

    c = crowd(21, n_items=400)
    new = split(c, fraction, 21)
    model = Model(alpha=0.3).fit(triples(c, ~new))
    model.partial_fit(triples(c, new), incremental=True)
    assert_monotone(model)
    q, log_likelihood = e_step(c, model.params_)
    assert np.isclose(model.log_likelihood_, log_likelihood, rtol=1e-10)
    np.testing.assert_allclose(model.posterior_, q, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incremental_batches_agree_with_a_fresh_fit(seed):
    """Batch after batch, incremental EM lands near where a fit of all the labels does: the
    same answers on nearly every item (98-100% on these crowds; the full partial_fit
    99-100%) and an objective lower by a small fraction of a nat per label (0.07 to 2.3
    nats on about 3,800 labels): the items a batch does not touch keep their posteriors
    during its M-steps, so its optimum is not quite the full one."""
    c = crowd(seed, n_items=800, missing=0.2)
    rng = np.random.default_rng(seed)
    batch = np.maximum(rng.integers(-5, 5, c.n_labels), 0)  # 60% fitted, then 4 x 10%
    model = DawidSkene().fit(from_triples(*triples(c, batch == 0), n_items=c.n_items))
    for b in range(1, 5):
        model.partial_fit(triples(c, batch == b), incremental=True)
        assert_monotone(model)
    fresh = DawidSkene().fit(c)
    assert (model.predict() == fresh.predict()).mean() >= 0.97
    assert fresh.objective_ - model.objective_ < 0.002 * c.n_labels


def test_incremental_partial_fit_with_gold_features_and_ids():
    """Known truths stay clamped; features of new items come in X; DataFrames are matched
    by identifier, as in the full partial_fit."""
    pd = pytest.importorskip("pandas")
    c = crowd(22, n_items=300)
    gold = np.full(c.n_items, -1)
    gold[:15] = 1
    new = split(c, 0.1, 22)
    model = DawidSkene().fit(from_triples(*triples(c, ~new), n_items=c.n_items), gold=gold)
    model.partial_fit(triples(c, new), incremental=True)
    np.testing.assert_allclose(model.posterior_[:15, 1], 1.0)
    assert_monotone(model)

    rng = np.random.default_rng(22)
    X = (rng.random((c.n_items, 4)) < 0.3).astype(int)
    old_items = c.item < 250
    model = DawidSkene(alpha=1.0).fit(triples(c, old_items), X=X[:250])
    model.partial_fit(triples(c, ~old_items), X[250:], incremental=True)
    assert model.n_items_ == c.n_items and model.feature_prob_.shape == (3, 4)
    assert_monotone(model)

    df = pd.DataFrame({"task": [f"t{i}" for i in c.item], "worker": [f"w{j}" for j in c.expert],
                       "label": c.label})
    by_ids = DawidSkene().fit(df[~new]).partial_fit(df[new], incremental=True)
    by_index = DawidSkene().fit(from_triples(*triples(c, ~new), n_items=c.n_items)) \
        .partial_fit(triples(c, new), incremental=True)
    order = np.argsort([f"t{i}" for i in range(c.n_items)], kind="stable")
    np.testing.assert_allclose(by_ids.posterior_, by_index.posterior_[order], atol=1e-8)


def test_incremental_is_independent_of_row_order_and_checked():
    c = crowd(23, n_items=300)
    new = split(c, 0.2, 23)
    first = DawidSkene().fit(triples(c, ~new))
    a = copy.deepcopy(first).partial_fit(triples(c, new), incremental=True)
    perm = np.random.default_rng(0).permutation(int(new.sum()))
    b = copy.deepcopy(first).partial_fit(tuple(x[perm] for x in triples(c, new)),
                                         incremental=True)
    np.testing.assert_allclose(a.posterior_, b.posterior_, atol=1e-12)
    np.testing.assert_allclose(a.log_likelihood_history_, b.log_likelihood_history_,
                               rtol=1e-12)
    for bad in ("yes", 2, None):
        with pytest.raises(ValueError, match="incremental"):
            copy.deepcopy(first).partial_fit(triples(c, new), incremental=bad)


def test_incremental_survives_exact_zeros_and_ones():
    """alpha=0 leaves probabilities of exactly 0 (one-coin accuracies of 1) or 1 + 1e-16
    (feature probabilities): the counts the incremental updates leave there (about 1e-16)
    must not make the free energy -inf or NaN (found by review: a -inf in the history, a
    NaN error)."""
    from crowdlearn import OneCoinDawidSkene

    item, exp, lab = np.array([3, 0, 1, 3, 2, 2]), np.array([1, 1, 2, 0, 0, 0]), \
        np.array([1, 0, 1, 1, 1, 0])
    new = np.isin(np.arange(6), [2, 3, 5])
    model = OneCoinDawidSkene(n_classes=2).fit(from_triples(
        item[~new], exp[~new], lab[~new], n_items=6, n_experts=3, n_classes=2))
    model.partial_fit((item[new], exp[new], lab[new]), incremental=True)
    assert np.isfinite(model.log_likelihood_history_).all()
    assert_monotone(model)

    item = np.array([0, 1, 2, 3, 4, 5, 2, 2, 0, 5, 0, 2])
    exp = np.array([0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0])
    lab = np.array([0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0])
    X, old = np.ones((6, 1), int), item < 5
    model = DawidSkene(n_classes=2).fit(from_triples(
        item[old], exp[old], lab[old], n_items=5, n_experts=2, n_classes=2), X=X[:5])
    model.partial_fit(from_triples(item[~old], exp[~old], lab[~old], n_items=6, n_experts=2,
                                   n_classes=2), X[5:], incremental=True)
    assert np.isfinite(model.log_likelihood_history_).all()
    assert_monotone(model)


@pytest.mark.parametrize("accelerate", [False, True])
def test_incremental_calls_the_callback_and_runs_plain_em(accelerate):
    """The model's callback sees every incremental E-step and can stop the run, as in a
    fit; SQUAREM (accelerate=True) is not used: its extrapolated steps would move the
    kept counts."""
    c = crowd(24, n_items=300)
    new = split(c, 0.1, 24)
    seen = []
    model = DawidSkene(accelerate=accelerate).fit(triples(c, ~new))
    model.set_params(callback=lambda state: seen.append(state.objective) or None)
    model.partial_fit(triples(c, new), incremental=True, refit=False)
    assert len(seen) == model.n_iter_ + 1 and seen == list(model.log_likelihood_history_[:-1])
    assert_monotone(model)
    stopped = DawidSkene(accelerate=accelerate).fit(triples(c, ~new))
    stopped.set_params(callback=lambda state: True)
    stopped.partial_fit(triples(c, new), incremental=True, refit=False)
    assert stopped.n_iter_ == 0


def test_a_grown_model_reads_labels_as_a_fresh_fit_would():
    """After a class is added that sorts before the fitted ones: the parameters follow the
    classes' sorted order, so that e_step on freshly read labels reproduces the posterior,
    a warm-start fit on the same labels is accepted, and known truths keep their class
    (found by review: the new class used to be appended, and both misread)."""
    pd = pytest.importorskip("pandas")
    from crowdlearn import from_table
    from crowdlearn.aggregation.dawid_skene import e_step

    old = pd.DataFrame({"task": list("aabbcc"), "worker": ["u", "v"] * 3,
                        "label": ["cat", "cat", "dog", "dog", "cat", "dog"]})
    new = pd.DataFrame({"task": ["d", "d"], "worker": ["u", "v"], "label": ["ant", "ant"]})
    for incremental in (False, True):
        model = DawidSkene(warm_start=True).fit(old, gold={"a": "cat"})
        model.partial_fit(new, incremental=incremental)
        assert model.class_ids_.tolist() == ["ant", "cat", "dog"]
        assert model.gold_.tolist()[0] == 1 and model.labels_["a"] == "cat"
        both = pd.concat([old, new])
        q, log_likelihood = e_step(from_table(both.task, both.worker, both.label),
                                   model.params_)
        np.testing.assert_allclose(q[1:], model.posterior_[1:], atol=1e-8)  # item 0: gold
        assert model.labels_["d"] == "ant"
        model.fit(both)  # a warm start: the same classes in the same order
        assert model.class_ids_.tolist() == ["ant", "cat", "dog"]


def test_a_new_class_with_no_label_and_a_prior_starts_finite():
    """A batch that skips a class index (fitted 0..1, a label 4: classes 2 and 3 have no
    label) with alpha > 0: every class gets a positive prior share at the start, so the
    history starts finite (found by review: -inf); integer and float classes are not
    mixed."""
    pd = pytest.importorskip("pandas")
    item, worker, label = [0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1, 0, 1], \
        [0, 0, 1, 1, 0, 1, 1, 1]
    for Model in MODELS:
        model = Model(alpha=1.0).fit((item, worker, label)).partial_fit(([4, 4], [0, 1], [4, 4]))
        assert model.n_classes_ == 5 and np.isfinite(model.log_likelihood_history_).all()
        assert_monotone(model)
    df = pd.DataFrame({"task": list("aabbcc"), "worker": ["u", "v"] * 3,
                       "label": [0, 0, 1, 1, 0, 1]})
    with pytest.raises(ValueError, match="of type float, but the fitted classes"):
        DawidSkene().fit(df).partial_fit(pd.DataFrame({"task": ["d", "d"], "worker": ["u", "v"],
                                                       "label": [2.0, 2.0]}))
    with pytest.raises(ValueError, match="at most"):  # the size limit, not "< n_classes"
        DawidSkene().fit((item, worker, label)).partial_fit(([0], [0], [5000]))


@pytest.mark.parametrize("seed", range(6))
def test_merging_by_codes_is_reading_the_two_tables_as_one(seed):
    """partial_fit merges a batch into the fitted labels from their codes (the sorted union
    of the ids, the codes moved onto it), which must give exactly what from_table gives on
    the two tables concatenated: the same codes, ids and dtypes, for string and integer
    ids, new and known tasks and workers, and new classes."""
    pd = pytest.importorskip("pandas")
    from crowdlearn import from_table
    from crowdlearn.aggregation import _warm

    rng = np.random.default_rng(seed)
    n = 300
    as_str = seed % 2 == 0
    task = rng.integers(0, 80, n)
    worker = rng.integers(0, 12, n)
    label = rng.integers(0, 4, n)
    frame = pd.DataFrame({"task": [f"t{v}" for v in task] if as_str else task * 7,
                          "worker": [f"w{v:02d}" for v in worker] if as_str else worker - 5,
                          "label": np.array(["ant", "cat", "dog", "emu"])[label]})
    old = (label < 3) & (rng.random(n) < 0.8)
    with warnings.catch_warnings():  # random labels: only the fitted crowd matters here
        warnings.simplefilter("ignore")
        fitted = DawidSkene(max_iter=3).fit(frame[old])._train_crowd
    merged = _warm.merge_crowds(fitted, frame[~old])
    both = pd.concat([frame[old], frame[~old]])
    expected = from_table(both.task, both.worker, both.label,
                          classes=merged.class_ids)  # the classes' order is partial_fit's
    for name in ("item", "expert", "label", "item_ids", "expert_ids", "class_ids"):
        got, want = getattr(merged, name), getattr(expected, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert sorted(merged.class_ids.tolist()) == merged.class_ids.tolist()


def test_merging_keeps_longer_new_ids_whole():
    """Fitted ids of 2 characters, new ones of 9: the union is wide enough for both (a
    narrower array would cut the new ids and merge them silently)."""
    pd = pytest.importorskip("pandas")
    old = pd.DataFrame({"task": ["a1", "a1", "b2", "b2"], "worker": ["u", "v"] * 2,
                        "label": [0, 0, 1, 1]})
    new = pd.DataFrame({"task": ["a1-second", "a1-third"], "worker": ["uuuuuuuuu", "u"],
                        "label": [0, 1]})
    model = DawidSkene().fit(old).partial_fit(new)
    assert model.item_ids_.tolist() == ["a1", "a1-second", "a1-third", "b2"]
    assert model.expert_ids_.tolist() == ["u", "uuuuuuuuu", "v"]
    assert model.labels_.index.tolist() == ["a1", "a1-second", "a1-third", "b2"]


# -- never behind a refit (issue 40) ------------------------------------------------------------
def hard_crowd(seed):
    """A crowd on which a fit of its first 1% of labels often leads a continued run into a
    worse optimum than a fit of all the labels (sparse: 70% of the labels missing)."""
    rng = np.random.default_rng(seed)
    sim = simulate_crowd(300, one_coin_confusion(rng.uniform(0.5, 0.9, size=8), 3),
                         missing=0.7, random_state=seed)
    return sim.labels


def stream(c, n_batches=20, seed=0):
    """Label masks: a first batch of 1% of the labels, then ``n_batches`` geometric ones."""
    order = np.random.default_rng(seed).permutation(c.n_labels)
    cuts = np.unique(np.r_[0, np.geomspace(max(3, c.n_labels // 100), c.n_labels,
                                           n_batches + 1).astype(int)])
    return [order[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def sub(c, rows):
    return c.item[rows], c.expert[rows], c.label[rows]


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("incremental", [False, True])
def test_a_checked_stream_ends_no_lower_than_a_refit(Model, incremental):
    behind = 0
    for seed in range(6):
        c = hard_crowd(seed)
        batches = stream(c)
        model = Model().fit(sub(c, batches[0]))
        for rows in batches[1:-1]:
            model.partial_fit(sub(c, rows), incremental=incremental)
        model.partial_fit(sub(c, batches[-1]), incremental=incremental)  # a small crowd
        fresh = Model().fit(c)
        assert model.refit_checked_ is True
        assert model.objective_ >= fresh.objective_ - 1e-6 * abs(fresh.objective_)
        assert_monotone(model)
        np.testing.assert_allclose(model.posterior_.sum(axis=1), 1.0)
        unchecked = Model().fit(sub(c, batches[0]))
        for rows in batches[1:]:
            unchecked.partial_fit(sub(c, rows), incremental=incremental, refit=False)
        behind += unchecked.objective_ < fresh.objective_ - 1e-6 * abs(fresh.objective_)
    if Model is DawidSkene:  # the check is not idle: unchecked streams do end behind
        assert behind >= 1


@pytest.mark.parametrize("Model", MODELS)
def test_auto_refits_when_the_labels_have_doubled(Model, monkeypatch):
    from crowdlearn.aggregation import dawid_skene

    monkeypatch.setattr(dawid_skene, "REFIT_SMALL", 0)  # as on a crowd of many labels
    c = crowd(3, n_items=400)
    order = np.random.default_rng(0).permutation(c.n_labels)
    n = c.n_labels
    model = Model().fit(sub(c, order[:n // 8]))
    assert model.refit_checked_ is True
    seen, last_refit, checked = n // 8, n // 8, []
    for a, b in [(n // 8, n // 6), (n // 6, n // 4), (n // 4, n // 3), (n // 3, n // 2 + 1),
                 (n // 2 + 1, n)]:
        model.partial_fit(sub(c, order[a:b]))
        seen = b
        due = seen >= 2 * last_refit
        assert model.refit_checked_ is due
        if due:
            last_refit = seen
        checked.append(due)
    assert any(checked) and not all(checked)


def test_a_refit_that_wins_replaces_the_continued_run():
    # a first batch of 1% of a hard crowd: the continued run ends in a worse optimum and
    # refit=True must hand back the refit's parameters and posteriors exactly
    for seed in range(10):
        c = hard_crowd(seed)
        batches = stream(c, n_batches=2)
        warm = DawidSkene().fit(sub(c, batches[0]))
        warm.partial_fit(sub(c, np.concatenate(batches[1:])), refit=False)
        fresh = DawidSkene().fit(sub(c, np.arange(c.n_labels)))  # the items labelled
        if warm.objective_ < fresh.objective_ - 1e-6 * abs(fresh.objective_):
            break
    else:
        pytest.fail("no crowd on which the continued run ends behind the refit")
    model = DawidSkene().fit(sub(c, batches[0]))
    model.partial_fit(sub(c, np.concatenate(batches[1:])), refit=True)
    assert model.objective_ >= fresh.objective_ - 1e-9 * abs(fresh.objective_)
    np.testing.assert_allclose(model.posterior_, fresh.posterior_, atol=1e-6)
    np.testing.assert_allclose(model.confusion_, fresh.confusion_, atol=1e-6)


@pytest.mark.parametrize("Model", MODELS)
def test_a_stream_with_new_items_workers_and_classes_can_be_checked(Model):
    c = crowd(5, n_items=300, n_classes=4)
    first = (c.label < 3) & (c.expert < 4)  # classes 0-2 and four workers first
    model = Model().fit(sub(c, np.flatnonzero(first)))
    rest = np.flatnonzero(~first)
    for rows in np.array_split(rest, 20)[:-1]:
        model.partial_fit(sub(c, rows))
    model.partial_fit(sub(c, np.array_split(rest, 20)[-1]), refit=True)
    fresh = Model().fit(c)
    assert model.n_classes_ == 4 and model.n_experts_ == c.n_experts
    assert model.objective_ >= fresh.objective_ - 1e-6 * abs(fresh.objective_)


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_flags_are_booleans(value):
    c = crowd(0, n_items=100)
    model = DawidSkene().fit(c)
    with pytest.raises(ValueError, match="incremental must be True or False"):
        model.partial_fit(triples(c, c.item < 5), incremental=value)
    with pytest.raises(ValueError, match="refit must be 'auto', True or False"):
        model.partial_fit(triples(c, c.item < 5), refit=value)


def test_an_incremental_callback_gets_a_copy_at_every_step():
    c = crowd(2, n_items=300)
    new = split(c, 0.2)
    states = []
    model = DawidSkene(callback=lambda state: states.append(state.posterior)).fit(
        triples(c, ~new))
    states.clear()
    model.partial_fit(triples(c, new), incremental=True, refit=False)
    assert len(states) >= 2
    assert len({id(q) for q in states}) == len(states)
    assert not np.array_equal(states[0], states[-1])


def test_warnings_are_those_of_the_run_kept():
    c = hard_crowd(1)
    batches = stream(c, n_batches=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = DawidSkene(max_iter=2).fit(sub(c, batches[0]))
        caught.clear()
        model.partial_fit(sub(c, np.concatenate(batches[1:])), refit=True)
    names = [type(w.message).__name__ for w in caught]
    assert names.count("ConvergenceWarning") == 1, names


def test_the_one_coin_m_step_of_perfect_workers_is_a_probability():
    """Where every label of a worker is right the trace and the total of their counts are
    summed in different orders, and their quotient came out 1 + 1e-16: the off-diagonal
    1 - accuracy was -7e-17, whose log made an incremental fit's objective NaN (found by
    bench_partial_fit.py on a random crowd with perfect workers)."""
    from crowdlearn.aggregation._common import _one_coin_matrices
    from crowdlearn.aggregation._ds_kernel import one_coin_m_step

    rng = np.random.default_rng(0)
    for _ in range(50):
        counts = np.zeros((50, 4, 4))
        counts[:, np.arange(4), np.arange(4)] = (rng.random((50, 4))
                                                 * rng.choice([1e-3, 1.0, 1e3], (50, 4)))
        _, accuracy = one_coin_m_step(counts, counts.sum(axis=(0, 2)), 0.0)
        assert (accuracy <= 1.0).all() and (accuracy >= 0.0).all()
        assert (_one_coin_matrices(accuracy, 4) >= 0.0).all()
