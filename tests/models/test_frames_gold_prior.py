"""Results by original id (pandas in and out), gold items, Dirichlet priors on the
confusion matrices and SQUAREM for Dawid--Skene and one-coin."""

import io
import math
import warnings

import numpy as np
import pytest

from crowdlearn import DawidSkene, OneCoinDawidSkene, from_dataframe, from_triples
from crowdlearn.aggregation.dawid_skene import _Data, _flat_indices
from crowdlearn.exceptions import ConvergenceWarning
from crowdlearn.simulate import one_coin_confusion, random_confusion, simulate_crowd

pd = pytest.importorskip("pandas")

MODELS = [DawidSkene, OneCoinDawidSkene]

# Two fits of the same data given in another order do the same computation up to the order
# of the sums, i.e. up to rounding. With the usual stopping rule (a relative tolerance) one
# of them may stop an iteration earlier on another CPU, which moves the result by far more
# than rounding. So such fits run a fixed number of EM iterations: tol=0 and max_iter=STEPS,
# few enough that the objective still rises by orders of magnitude more than rounding at
# the last one (checked: neither run counts as converged), so both really do STEPS.
STEPS = 8


def fit_fixed(Model, *args, steps=STEPS, **kwargs):
    """``Model`` fitted by exactly ``steps`` EM iterations (cut off: a ConvergenceWarning)."""
    with pytest.warns(ConvergenceWarning, match=f"max_iter={steps} "):
        m = Model(tol=0.0, max_iter=steps).fit(*args, **kwargs)
    assert m.n_iter_ == steps and not m.converged_
    return m


def crowd(n=600, acc=(0.9, 0.75, 0.65, 0.6, 0.8), K=3, seed=0):
    return simulate_crowd(n, one_coin_confusion(list(acc), K), random_state=seed)


def as_frame(c, *, prefix=True):
    classes = np.array(["cat", "dog", "eel", "fox"])[: c.n_classes]
    if prefix:
        return pd.DataFrame({"task": [f"t{i:04d}" for i in c.item],
                             "worker": [f"w{j}" for j in c.expert],
                             "label": classes[c.label]})
    return pd.DataFrame({"task": c.item, "worker": c.expert, "label": c.label})


# -- pandas in and out -----------------------------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
def test_frame_results_are_indexed_by_original_ids(Model):
    sim = crowd()
    df = as_frame(sim.labels).sample(frac=1.0, random_state=1)  # row order must not matter
    m = fit_fixed(Model, df)
    ref = fit_fixed(Model, sim.labels)
    # tasks t0000.. sort like the indices, so the fits are the same item for item (the same
    # iterations, up to the order of the sums: see STEPS)
    assert np.allclose(m.posterior_, ref.posterior_, atol=1e-9)
    labels, probas = m.labels_, m.probas_
    assert isinstance(labels, pd.Series) and labels.index.name == "task"
    assert list(labels.index) == [f"t{i:04d}" for i in range(sim.labels.n_items)]
    assert list(probas.columns) == ["cat", "dog", "eel"]
    assert (labels.to_numpy() == np.array(["cat", "dog", "eel"])[ref.predict()]).all()
    assert np.allclose(probas.to_numpy().sum(axis=1), 1.0)
    assert (probas.idxmax(axis=1) == labels).all()
    # numpy attributes stay numpy
    assert isinstance(m.posterior_, np.ndarray) and isinstance(m.confusion_, np.ndarray)


def test_errors_layout_matches_crowdkit():
    sim = crowd()
    m = DawidSkene().fit(as_frame(sim.labels))
    errors = m.errors_
    assert list(errors.index.names) == ["worker", "label"]
    assert errors.shape == (5 * 3, 3)
    for j, w in enumerate(m.expert_ids_):
        for k, true in enumerate(m.class_ids_):
            for l, said in enumerate(m.class_ids_):
                assert errors.loc[(w, said), true] == m.confusion_[j, k, l]
    # each worker's block: every column (true class) sums to one
    sums = errors.groupby(level="worker").sum().to_numpy()
    assert np.allclose(sums, 1.0)


def test_one_coin_skills_by_worker():
    sim = crowd()
    m = OneCoinDawidSkene().fit(as_frame(sim.labels))
    skills = m.skills_
    assert list(skills.index) == [f"w{j}" for j in range(5)]
    assert np.array_equal(skills.to_numpy(), m.accuracy_)


def test_numpy_input_gives_numpy_results():
    sim = crowd()
    m = DawidSkene().fit(sim.labels)
    assert isinstance(m.labels_, np.ndarray) and np.array_equal(m.labels_, m.predict())
    assert isinstance(m.probas_, np.ndarray) and np.array_equal(m.probas_, m.posterior_)
    assert m.errors_.shape == (5, 3, 3)
    with pytest.raises(AttributeError, match="no single skill"):
        m.skills_


@pytest.mark.parametrize("Model", MODELS)
def test_integer_dataframe_is_never_misread(Model):
    sim = crowd(n=50)
    df = as_frame(sim.labels, prefix=False)  # all-integer columns task, worker, label
    m = Model().fit(df)
    ref = Model().fit((sim.labels.item, sim.labels.expert, sim.labels.label))
    assert m.posterior_.shape == (50, 3)  # not (n_labels, 3): the rows are labels
    assert np.allclose(m.posterior_, ref.posterior_)
    assert list(m.labels_.index) == list(range(50))
    # without the named columns a DataFrame is refused, never read as a dense matrix
    with pytest.raises(ValueError, match="needs the columns"):
        Model().fit(pd.DataFrame(df.to_numpy()))
    with pytest.raises(ValueError, match="needs the columns"):
        Model().fit(df.rename(columns={"task": "item"}))
    wide = pd.DataFrame(sim.labels.to_dense())
    with pytest.raises(ValueError, match="wide"):
        Model().fit(wide)


def test_frame_refusals():
    df = pd.DataFrame({"task": [1, 1, 2], "worker": ["a", "b", "a"], "label": [0, 1, None]})
    with pytest.raises(ValueError, match="'label' has a missing value"):
        DawidSkene().fit(df)
    with pytest.raises(ValueError, match="no rows"):
        DawidSkene().fit(df.iloc[:0])
    mixed = pd.DataFrame({"task": [1, "1", 2], "worker": ["a", "b", "a"], "label": [0, 1, 1]})
    with pytest.raises(ValueError, match="identifiers"):
        DawidSkene().fit(mixed)
    with pytest.raises(ValueError, match="DataFrame"):
        from_dataframe({"task": [1]})


def test_configurable_columns_and_round_trip(tmp_path):
    sim = crowd(n=80)
    df = as_frame(sim.labels).rename(columns={"task": "item", "worker": "annotator",
                                              "label": "answer"})
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    back = pd.read_csv(path)
    ds = DawidSkene().fit(from_dataframe(back, task="item", worker="annotator",
                                         label="answer"))
    out = tmp_path / "result.csv"
    ds.labels_.to_csv(out)
    result = pd.read_csv(out, index_col="task")["agg_label"]
    assert result.index.tolist() == sorted(set(df["item"]))
    assert (result.to_numpy() == ds.labels_.to_numpy()).all()


# -- gold items ------------------------------------------------------------------------------
def brute_objective_with_gold(model, c, gold):
    """Sum over items of log P(labels_i) (or log P(labels_i, y_i) for gold items)."""
    K = c.n_classes
    data = _Data(c, None, *_flat_indices(c, K))
    lj = model._log_joint(data, model._params)
    fit_data = model._make_data(c, gold=gold)  # the fit's data: its prior and known truths
    total = 0.0
    for i in range(c.n_items):
        if gold[i] >= 0:
            total += lj[i, gold[i]]
        else:
            m = lj[i].max()
            total += m + math.log(sum(math.exp(v - m) for v in lj[i]))
    return total + model._log_prior_term(model._params, fit_data.prior)


@pytest.mark.parametrize("Model", MODELS)
def test_gold_items_are_clamped_and_counted(Model):
    sim = crowd(n=300)
    gold = np.full(300, -1)
    gold[:30] = sim.truth[:30]
    m = Model(alpha=0.5, tol=1e-13, max_iter=5000).fit(sim.labels, gold=gold)
    assert np.array_equal(m.posterior_[:30].argmax(axis=1), sim.truth[:30])
    assert np.allclose(m.posterior_[:30].max(axis=1), 1.0)
    assert np.allclose(m.posterior_.sum(axis=1), 1.0)
    h = m.log_likelihood_history_
    assert np.diff(h).min() >= -1e-9 * abs(h[-1])
    assert m.objective_ == pytest.approx(brute_objective_with_gold(m, sim.labels, gold),
                                         rel=1e-10)
    # at convergence the parameters are a fixed point of the gold-clamped EM map (the
    # known truths travel in the fit's data)
    data = m._make_data(sim.labels, gold=gold)
    again = m._m_step(data, m._e_step(data, m._params)[0])
    assert np.allclose(again.confusion, m.confusion_, atol=1e-5)


@pytest.mark.parametrize("Model", MODELS)
def test_gold_rescues_an_adversarial_crowd(Model):
    # most workers are wrong more often than right: the votes point the wrong way
    sim = simulate_crowd(800, one_coin_confusion([0.2, 0.25, 0.3, 0.25, 0.9], 2),
                         random_state=3)
    plain = Model().fit(sim.labels)
    assert (plain.predict() == sim.truth).mean() < 0.5
    gold = {i: int(sim.truth[i]) for i in range(20)}
    m = Model().fit(sim.labels, gold=gold)
    assert (m.predict() == sim.truth).mean() > 0.9


def test_gold_by_id_equals_gold_by_index():
    sim = crowd(n=200)
    df = as_frame(sim.labels)
    names = np.array(["cat", "dog", "eel"])
    series = pd.Series(names[sim.truth[:15]], index=[f"t{i:04d}" for i in range(15)])
    by_id = DawidSkene().fit(df, gold=series)
    by_index = DawidSkene().fit(sim.labels, gold={i: int(sim.truth[i]) for i in range(15)})
    assert np.allclose(by_id.posterior_, by_index.posterior_)


@pytest.mark.parametrize("gold, message", [
    ({"nope": "cat"}, "not among the labelled items"),
    ({"t0001": "yak"}, "not a class"),
    ({"t0001": float("nan")}, "missing class"),
    ({"t0001": True}, "not a class"),
])
def test_bad_gold_by_id(gold, message):
    df = as_frame(crowd(n=20).labels)
    with pytest.raises(ValueError, match=message):
        DawidSkene().fit(df, gold=gold)


@pytest.mark.parametrize("gold, message", [
    (np.full(20, -1), "no known class"),
    (np.zeros(19, dtype=int), "19 entries"),
    (np.full(20, 5), "out of range"),
    (np.array([np.nan] * 20), "gold"),
    ("abc", "gold must be"),
    ({25: 0}, "indices 0 to 19"),
])
def test_bad_gold_by_index(gold, message):
    with pytest.raises(ValueError, match=message):
        OneCoinDawidSkene().fit(crowd(n=20).labels, gold=gold)


# -- Dirichlet priors on the confusion matrices ---------------------------------------------
def test_confusion_prior_is_map_with_the_log_posterior_tracked():
    sim = crowd(n=400)
    prior = np.full((3, 3), 1.0) + 8.0 * np.eye(3)
    m = DawidSkene(confusion_prior=prior, max_iter=5000, tol=1e-13).fit(sim.labels)
    h = m.log_likelihood_history_
    assert np.diff(h).min() >= -1e-9 * abs(h[-1])
    log_prior = float((prior[None] * np.log(m.confusion_)).sum())
    assert m.objective_ - m.log_likelihood_ == pytest.approx(log_prior, rel=1e-10)
    # the M-step is the MAP update: expected counts plus pseudo-counts, normalised (the
    # pseudo-counts travel in the fit's data)
    data = m._make_data(sim.labels)
    q = m.posterior_
    counts = np.zeros((5, 3, 3))
    for i, j, l in zip(sim.labels.item, sim.labels.expert, sim.labels.label):
        counts[j, :, l] += q[i]
    expected = (counts + prior) / (counts + prior).sum(axis=2, keepdims=True)
    assert np.allclose(m._m_step(data, q).confusion, expected)
    assert np.allclose(m.confusion_, expected, atol=1e-6)  # a fixed point


def test_strong_prior_dominates_and_weak_prior_hardly_matters():
    sim = crowd(n=300)
    target = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]])
    strong = DawidSkene(confusion_prior=1e7 * target).fit(sim.labels)
    assert np.allclose(strong.confusion_, target[None], atol=1e-3)
    # the weak prior moves the confusion by ~4e-8 (same iterations with and without it), but
    # EM crawls here (one confusion entry heads for 0): at the default tol one more iteration
    # moves the confusion by ~1e-5, as much as the tolerance below. So run both far closer to
    # their optima (an iteration there moves it by ~1e-7, and the two may stop at different
    # iterations) and compare well above that.
    kw = dict(tol=1e-13, max_iter=5000)
    weak = DawidSkene(confusion_prior=1e-6 * np.ones((3, 3)), **kw).fit(sim.labels)
    plain = DawidSkene(**kw).fit(sim.labels)
    assert weak.converged_ and plain.converged_
    assert np.allclose(weak.confusion_, plain.confusion_, atol=1e-5)


def test_one_coin_prior_is_a_beta_on_the_accuracy():
    sim = crowd(n=300)
    A = np.array([[5.0, 1.0, 0.0], [0.5, 5.0, 1.0], [0.0, 0.0, 5.0]])
    m = OneCoinDawidSkene(confusion_prior=A, max_iter=1000, tol=1e-12).fit(sim.labels)
    h = m.log_likelihood_history_
    assert np.diff(h).min() >= -1e-9 * abs(h[-1])
    right, wrong = np.trace(A), A.sum() - np.trace(A)
    q = m.posterior_
    correct = np.zeros(5)
    n = np.bincount(sim.labels.expert, minlength=5)
    for i, j, l in zip(sim.labels.item, sim.labels.expert, sim.labels.label):
        correct[j] += q[i, l]
    assert np.allclose(m.accuracy_, (correct + right) / (n + right + wrong), atol=1e-6)
    p = m.accuracy_
    log_prior = float((right * np.log(p) + wrong * np.log((1 - p) / 2)).sum())
    assert m.objective_ - m.log_likelihood_ == pytest.approx(log_prior, rel=1e-9)


def test_prior_in_crowdkit_layout_equals_the_array():
    sim = crowd(n=200)
    df = as_frame(sim.labels)
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 3, size=(5, 3, 3))
    ids, classes = [f"w{j}" for j in range(5)], ["cat", "dog", "eel"]
    index = pd.MultiIndex.from_product([ids, classes], names=["worker", "label"])
    frame = pd.DataFrame(A.transpose(0, 2, 1).reshape(15, 3), index=index, columns=classes)
    by_frame = DawidSkene(confusion_prior=frame).fit(df)
    by_array = DawidSkene(confusion_prior=A).fit(sim.labels)
    assert np.allclose(by_frame.confusion_, by_array.confusion_)
    bad = frame.rename(index={"w0": "stranger"})
    with pytest.raises(ValueError, match="stranger"):
        DawidSkene(confusion_prior=bad).fit(df)


@pytest.mark.parametrize("prior, message", [
    (-np.ones((3, 3)), "negative"),
    (np.full((3, 3), np.nan), "NaN"),
    (np.ones((2, 2)), "shape"),
    (np.ones((4, 3, 3)), "shape"),
    ("strong", "pseudo-counts|shape"),
])
def test_bad_prior(prior, message):
    with pytest.raises(ValueError, match=message):
        DawidSkene(confusion_prior=prior).fit(crowd(n=30).labels)


# -- SQUAREM -----------------------------------------------------------------------------------
@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_squarem_reaches_the_same_optimum_monotonically(Model, alpha):
    rng = np.random.default_rng(5)
    conf = random_confusion(20, 4, random_state=rng)
    sim = simulate_crowd(1500, conf, labels_per_item=3, random_state=rng)
    kw = dict(alpha=alpha, tol=1e-12, max_iter=5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = Model(**kw).fit(sim.labels)
        fast = Model(accelerate=True, **kw).fit(sim.labels)
    assert plain.converged_ and fast.converged_
    h = fast.log_likelihood_history_
    assert np.diff(h).min() >= -1e-9 * abs(h[-1])
    assert fast.objective_ == pytest.approx(plain.objective_, rel=1e-7)
    assert np.abs(fast.posterior_ - plain.posterior_).max() < 1e-2


def test_squarem_with_features_gold_and_prior():
    sim = crowd(n=400)
    X = (np.random.default_rng(0).random((400, 6)) < 0.3 + 0.2 * sim.truth[:, None]) * 1
    gold = np.full(400, -1)
    gold[:10] = sim.truth[:10]
    kw = dict(alpha=0.5, confusion_prior=2 * np.eye(3), tol=1e-12, max_iter=3000)
    plain = DawidSkene(**kw).fit(sim.labels, X, gold=gold)
    fast = DawidSkene(accelerate=True, **kw).fit(sim.labels, X, gold=gold)
    assert fast.objective_ == pytest.approx(plain.objective_, rel=1e-8)
    assert np.diff(fast.log_likelihood_history_).min() >= -1e-9 * abs(fast.objective_)
    assert np.allclose(fast.posterior_[:10].max(axis=1), 1.0)


def test_bad_accelerate():
    with pytest.raises(ValueError, match="accelerate"):
        DawidSkene(accelerate="yes").fit(crowd(n=20).labels)


def test_numpy_core_does_not_import_pandas():
    import subprocess
    import sys

    code = ("import sys, numpy as np, crowdlearn as cl\n"
            "from crowdlearn.simulate import one_coin_confusion, simulate_crowd\n"
            "sim = simulate_crowd(50, one_coin_confusion([0.8, 0.7, 0.6], 2), random_state=0)\n"
            "m = cl.DawidSkene().fit(sim.labels); m.labels_; m.probas_; m.errors_\n"
            "cl.OneCoinDawidSkene().fit(sim.labels).skills_\n"
            "assert 'pandas' not in sys.modules, 'pandas was imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_features_are_matched_to_tasks_by_id():
    from crowdlearn import LogisticAnnotators, SparseExpertsEM

    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3))
    truth = (X[:, 0] > 0).astype(int)
    item = np.repeat(np.arange(n), 3)
    worker = np.tile(np.arange(3), n)
    label = np.where(rng.random(item.size) < 0.85, truth[item], 1 - truth[item])
    names = np.array([f"task-{(7 * i) % n:03d}" for i in range(n)])  # ids not in row order
    df = pd.DataFrame({"task": names[item], "worker": worker, "label": label})
    Xdf = pd.DataFrame(X, index=names)
    for Model in (LogisticAnnotators, SparseExpertsEM):
        # a fixed number of EM iterations: the same computation up to rounding, see STEPS
        ref = fit_fixed(Model, (item, worker, label), X)
        m = fit_fixed(Model, df, Xdf.sample(frac=1.0, random_state=2))  # any row order
        order = np.argsort(names)  # the fitted items are the sorted task ids
        assert np.allclose(m.posterior_, ref.posterior_[order], atol=1e-6)
        with pytest.raises(ValueError, match="cannot be matched"):
            Model().fit(df, X)  # a bare array would have to be guessed at
        with pytest.raises(ValueError, match="no row for task"):
            Model().fit(df, Xdf.iloc[1:])
    Xb = (X > 0).astype(int)
    ref = fit_fixed(DawidSkene, (item, worker, label), Xb)
    m = fit_fixed(DawidSkene, df, pd.DataFrame(Xb, index=names))
    assert np.allclose(m.posterior_, ref.posterior_[np.argsort(names)], atol=1e-8)
    # integer task ids 0..n-1: a bare array is unambiguous
    dfi = pd.DataFrame({"task": item, "worker": worker, "label": label})
    assert np.allclose(fit_fixed(DawidSkene, dfi, Xb).posterior_, ref.posterior_)


def test_readme_round_trip_runs(tmp_path, monkeypatch):
    """The README's DataFrame snippet, run as written on a real crowd written to labels.csv."""
    import re
    from pathlib import Path

    from crowdlearn.datasets import load_dataset

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### A DataFrame in, a DataFrame out", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    data = load_dataset("rte")
    task = data.labels.to_table()[0]
    data.labels.to_frame().to_csv(tmp_path / "labels.csv", index=False)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    result = pd.read_csv(tmp_path / "result.csv", index_col="task")["agg_label"]
    assert sorted(result.index) == sorted(set(task))
    truth = dict(zip(data.item_ids, data.class_ids[data.truth]))
    assert np.mean([result[t] == truth[t] for t in result.index]) > 0.9


def test_to_frame_round_trips_through_fit():
    from crowdlearn.datasets import load_dataset

    crowd = load_dataset("temp").labels
    frame = crowd.to_frame()
    assert list(frame.columns) == ["task", "worker", "label"] and len(frame) == crowd.n_labels
    again = from_dataframe(frame)
    assert np.array_equal(again.item_ids, crowd.item_ids)
    assert np.allclose(DawidSkene().fit(frame).posterior_, DawidSkene().fit(crowd).posterior_)


@pytest.mark.parametrize("Model", [DawidSkene, OneCoinDawidSkene])
def test_new_table_with_one_class_is_scored_on_the_fitted_ids(Model):
    from crowdlearn import MajorityVote

    sim = crowd(n=200)
    m = Model().fit(as_frame(sim.labels))
    new = pd.DataFrame({"task": ["n", "n", "m"], "worker": ["w0", "w1", "w2"],
                        "label": ["dog", "dog", "dog"]})  # every new label says "dog"
    q = m.predict_proba(new)
    assert q.shape == (2, 3) and np.allclose(q.sum(axis=1), 1.0)
    assert list(q.index) == ["m", "n"] and list(q.columns) == ["cat", "dog", "eel"]
    assert (q.to_numpy().argmax(axis=1) == 1).all()  # "dog" is the fitted class 1
    with pytest.raises(ValueError, match="zz"):
        m.predict_proba(new.assign(worker=["w0", "zz", "w2"]))
    mv = MajorityVote(tie_break="lowest").fit(as_frame(sim.labels))
    assert (mv.predict(new) == 1).all()


def test_new_features_are_matched_to_new_tasks_by_id():
    sim = crowd(n=120, K=2, acc=(0.8, 0.7, 0.75))
    X = (np.random.default_rng(1).random((120, 4)) < 0.3 + 0.4 * sim.truth[:, None]) * 1
    df = as_frame(sim.labels)
    m = DawidSkene().fit(df, pd.DataFrame(X, index=[f"t{i:04d}" for i in range(120)]))
    new = pd.DataFrame({"task": ["u", "v"], "worker": ["w0", "w1"], "label": ["cat", "dog"]})
    xu, xv = [1, 1, 0, 1], [0, 0, 1, 0]
    a = m.predict_proba(new, pd.DataFrame([xu, xv], index=["u", "v"]))
    b = m.predict_proba(new, pd.DataFrame([xv, xu], index=["v", "u"]))
    assert np.allclose(a, b)  # rows matched by task id, whatever their order
    with pytest.raises(ValueError, match="cannot be matched"):
        m.predict_proba(new, np.array([xu, xv]))
