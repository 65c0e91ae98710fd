"""Fitting Dawid--Skene models on a dask DataFrame (crowdlearn.distributed.dask_backend): the same
answer as the in-memory fit, whatever the partitioning."""

import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from crowdlearn import DawidSkene, OneCoinDawidSkene  # noqa: E402
from crowdlearn.distributed.dask_backend import fit_dask  # noqa: E402
from crowdlearn.exceptions import ConvergenceWarning  # noqa: E402
from crowdlearn.simulate import one_coin_confusion, simulate_crowd  # noqa: E402

TOL = 1e-10

# Partitioning changes only the order of the sums, so the dask fit and the in-memory fit
# agree to rounding (~1e-15) iteration by iteration. With the usual stopping rule (a relative
# tolerance) one of them may still stop an iteration earlier on another CPU, which moves the
# result by up to ~1e-3. So the fits compared item for item run a fixed number of EM
# iterations: tol=0 and max_iter=STEPS, few enough that the objective still rises by orders
# of magnitude more than rounding at the last one, so both really do all STEPS (checked by
# `cut_off`). Then equal n_iter_ and a comparison at TOL are justified.
STEPS = 8


def fixed(model, **params):
    """``model(**params)`` set to run exactly STEPS EM iterations (``fit_dask`` reads
    ``tol`` and ``max_iter`` from the model too)."""
    return model(tol=0.0, max_iter=STEPS, **params)


def cut_off(fit, *args, **kwargs):
    """``fit(*args, **kwargs)`` for a model made by `fixed`: it must do all STEPS iterations
    and warn that it was cut off there."""
    with pytest.warns(ConvergenceWarning, match=f"max_iter={STEPS} "):
        m = fit(*args, **kwargs)
    assert m.n_iter_ == STEPS and not m.converged_
    return m


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def crowd_frame(ids="str", n=240, K=3, seed=0):
    sim = simulate_crowd(n, one_coin_confusion([0.9, 0.8, 0.7, 0.6, 0.55, 0.5], K),
                         random_state=seed)
    c = sim.labels
    df = pd.DataFrame({"task": c.item, "worker": c.expert, "label": c.label})
    if ids == "str":
        df["task"] = "t" + df["task"].astype(str)  # "t10" < "t2": not numeric order
        df["worker"] = "w" + df["worker"].astype(str)
        df["label"] = np.array(["cat", "dog", "eel", "fox"])[df["label"].to_numpy()]
    else:
        df["task"] = df["task"] * 7 + 100
        df["worker"] = 50 - df["worker"]
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def by_task(df, n_parts, empty_at=None):
    """A dask DataFrame whose partitions each hold whole tasks (tasks dealt round-robin)."""
    tasks = np.sort(df["task"].unique())
    where = dict(zip(tasks.tolist(), np.arange(tasks.size) % n_parts))
    frames = [df[df["task"].map(where) == i] for i in range(n_parts)]
    if empty_at is not None:
        frames.insert(empty_at, df.iloc[:0])
    return dd.from_map(lambda i: frames[i], range(len(frames)))


def assert_same_fit(a, b):
    assert a.n_iter_ == b.n_iter_
    assert a.converged_ == b.converged_
    np.testing.assert_allclose(b.log_likelihood_history_, a.log_likelihood_history_,
                               rtol=TOL, atol=TOL)
    np.testing.assert_allclose(b.posterior_, a.posterior_, atol=TOL)
    np.testing.assert_allclose(b.confusion_, a.confusion_, atol=TOL)
    np.testing.assert_allclose(b.class_prior_, a.class_prior_, atol=TOL)
    assert abs(b.log_likelihood_ - a.log_likelihood_) <= TOL * max(1, abs(a.log_likelihood_))
    assert abs(b.objective_ - a.objective_) <= TOL * max(1, abs(a.objective_))
    assert (b.n_items_, b.n_experts_, b.n_classes_) == (a.n_items_, a.n_experts_, a.n_classes_)
    assert b.item_ids_.tolist() == a.item_ids_.tolist()
    assert b.expert_ids_.tolist() == a.expert_ids_.tolist()
    assert b.class_ids_.tolist() == a.class_ids_.tolist()
    pd.testing.assert_frame_equal(b.probas_, a.probas_, atol=TOL, rtol=0)
    pd.testing.assert_series_equal(b.labels_, a.labels_)
    pd.testing.assert_frame_equal(b.errors_, a.errors_, atol=TOL, rtol=0)
    if hasattr(a, "accuracy_"):
        np.testing.assert_allclose(b.accuracy_, a.accuracy_, atol=TOL)


@pytest.mark.parametrize("model", [DawidSkene, OneCoinDawidSkene])
@pytest.mark.parametrize("n_parts, ids, alpha", [(1, "str", 0.0), (3, "int", 1.0),
                                                 (7, "str", 1.0), (7, "int", 0.0)])
def test_same_as_in_memory(client, model, n_parts, ids, alpha):
    df = crowd_frame(ids)
    ddf = by_task(df, n_parts)
    expected = cut_off(fixed(model, alpha=alpha).fit, df)
    got = cut_off(fit_dask, fixed(model, alpha=alpha), ddf, client=client)
    assert_same_fit(expected, got)
    assert (np.diff(got.log_likelihood_history_) >= 0).all()


def test_fit_hook_uses_the_dask_backend(client):
    df = crowd_frame("str", K=2)
    expected = cut_off(fixed(OneCoinDawidSkene).fit, df)
    got = cut_off(fixed(OneCoinDawidSkene).fit, by_task(df, 3))  # DawidSkene.fit -> fit_dask
    assert_same_fit(expected, got)


def test_empty_partition_and_a_worker_in_one_partition(client):
    df = crowd_frame("str")
    # a worker who labelled only tasks of partition 0
    tasks = np.sort(df["task"].unique())[0:9:3]  # dealt to partition 0
    extra = pd.DataFrame({"task": tasks, "worker": "lonely", "label": "dog"})
    df = pd.concat([df, extra], ignore_index=True)
    ddf = by_task(df, 3, empty_at=1)
    assert ddf.npartitions == 4 and len(ddf.partitions[1].compute()) == 0
    for model in (DawidSkene, OneCoinDawidSkene):
        assert_same_fit(cut_off(fixed(model, alpha=0.5).fit, df),
                        cut_off(fit_dask, fixed(model, alpha=0.5), ddf, client=client))


def test_task_split_across_partitions_is_refused_or_shuffled(client):
    df = crowd_frame("str").sort_values("worker").reset_index(drop=True)
    ddf = dd.from_pandas(df, npartitions=4, sort=False)  # a task's labels are spread out
    with pytest.raises(ValueError, match=r"more than one partition.*shuffle"):
        fit_dask(DawidSkene(), ddf, client=client)
    with pytest.raises(ValueError, match=r"task\(s\) \['t"):
        DawidSkene().fit(ddf)
    got = cut_off(fit_dask, fixed(DawidSkene), ddf, client=client, split_tasks="shuffle")
    assert_same_fit(cut_off(fixed(DawidSkene).fit, df), got)


def test_convergence_warning_when_max_iter_is_too_small(client):
    df = crowd_frame("int")
    with pytest.warns(ConvergenceWarning):
        expected = DawidSkene(max_iter=2).fit(df)
    with pytest.warns(ConvergenceWarning):
        got = fit_dask(DawidSkene(max_iter=2), by_task(df, 3), client=client)
    assert got.n_iter_ == 2 and not got.converged_
    assert_same_fit(expected, got)


def test_callback_sees_every_e_step(client):
    seen = []
    df = crowd_frame("int", K=2)
    got = fit_dask(DawidSkene(callback=lambda s: seen.append(s.objective)),
                   by_task(df, 2), client=client)
    np.testing.assert_array_equal(seen, got.log_likelihood_history_)


def test_parquet_round_trip(client, tmp_path):
    df = crowd_frame("str")
    by_task(df, 3).to_parquet(tmp_path / "crowd")
    ddf = dd.read_parquet(tmp_path / "crowd")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert fit_dask(DawidSkene(alpha=1.0), ddf, client=client).converged_
    got = cut_off(fit_dask, fixed(DawidSkene, alpha=1.0), ddf, client=client)
    assert_same_fit(cut_off(fixed(DawidSkene, alpha=1.0).fit, ddf.compute()), got)
    assert_same_fit(cut_off(fixed(DawidSkene, alpha=1.0).fit, df), got)


def test_collect_false_keeps_the_posterior_distributed(client):
    df = crowd_frame("str")
    expected = cut_off(fixed(DawidSkene).fit, df)
    got = cut_off(fit_dask, fixed(DawidSkene), by_task(df, 3), client=client, collect=False)
    assert not hasattr(got, "posterior_")
    assert got.n_items_ == expected.n_items_
    probas = got.probas_dask_.compute().sort_index()
    pd.testing.assert_frame_equal(probas, expected.probas_, atol=TOL, rtol=0)
    labels = got.labels_dask_.compute().sort_index()
    pd.testing.assert_series_equal(labels, expected.labels_)
    np.testing.assert_allclose(got.confusion_, expected.confusion_, atol=TOL)
    # the usual names give the distributed results too
    assert got.probas_ is got.probas_dask_ and got.labels_ is got.labels_dask_


def test_column_names(client):
    df = crowd_frame("int").rename(columns={"task": "item", "worker": "who", "label": "says"})
    ddf = dd.from_pandas(df.sort_values("item"), npartitions=1)
    got = cut_off(fit_dask, fixed(DawidSkene), ddf, task="item", worker="who", label="says",
                  client=client)
    expected = cut_off(fixed(DawidSkene).fit, df.rename(columns={"item": "task", "who": "worker",
                                                                 "says": "label"}))
    np.testing.assert_allclose(got.posterior_, expected.posterior_, atol=TOL)


def test_bad_input(client):
    df = crowd_frame("str")
    ddf = by_task(df, 2)
    with pytest.raises(ValueError, match=r"missing \['label'\]"):
        fit_dask(DawidSkene(), ddf.rename(columns={"label": "answer"}), client=client)
    with_nan = df.astype({"label": object})
    with_nan.loc[5, "label"] = None
    with pytest.raises(ValueError, match="column 'label' has 1 missing value"):
        fit_dask(DawidSkene(), by_task(with_nan, 2), client=client)
    with pytest.raises(ValueError, match="n_init must be 1"):
        fit_dask(DawidSkene(n_init=3), ddf, client=client)
    with pytest.raises(ValueError, match="accelerate"):
        DawidSkene(accelerate=True).fit(ddf)
    with pytest.raises(ValueError, match="confusion_prior"):
        DawidSkene(confusion_prior=np.eye(3)).fit(ddf)
    with pytest.raises(ValueError, match="X or gold"):
        DawidSkene().fit(ddf, gold={"t0": "cat"})
    with pytest.raises(ValueError, match="X or gold"):
        OneCoinDawidSkene().fit(ddf, np.ones((240, 2)))
    with pytest.raises(ValueError, match="split_tasks"):
        fit_dask(DawidSkene(), ddf, client=client, split_tasks="maybe")
    with pytest.raises(ValueError, match="alpha"):
        fit_dask(DawidSkene(alpha=-1), ddf, client=client)
    one_class = pd.DataFrame({"task": [1, 2], "worker": [1, 1], "label": [0, 0]})
    with pytest.raises(ValueError, match="at least 2 classes"):
        fit_dask(DawidSkene(), dd.from_pandas(one_class, npartitions=1), client=client)


@pytest.mark.parametrize("model", [DawidSkene, OneCoinDawidSkene])
def test_relabelling_without_a_cluster(monkeypatch, model):
    """Start EM from the vote with its two classes swapped: it ends in the swapped copy,
    which the fit relabels to agree with the vote, in memory and here alike. Runs in
    this process (no distributed client), so the patched start reaches the partitions."""
    from crowdlearn.distributed.dask_backend import _LocalClient

    start = DawidSkene._majority_start
    swapped = []

    def swapped_start(data, K):
        swapped.append(1)
        return start(data, K)[:, ::-1].copy()

    monkeypatch.setattr(DawidSkene, "_majority_start", staticmethod(swapped_start))
    df = crowd_frame("str", K=2)
    expected = cut_off(fixed(model, alpha=1.0).fit, df)
    got = cut_off(fit_dask, fixed(model, alpha=1.0), by_task(df, 3), client=_LocalClient())
    assert swapped
    assert_same_fit(expected, got)
    votes = df.groupby("task")["label"].agg(lambda s: s.value_counts().index[0])
    assert (got.labels_ == votes.loc[got.labels_.index]).mean() > 0.8
