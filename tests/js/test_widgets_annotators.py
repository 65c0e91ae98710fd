"""Headless tests of LogisticAnnotatorsExplorer (crowdlearn.widgets.annotators).

The explorer's ``set`` recomputes in the kernel at once and hands the view its new
settings; no kernel or browser is needed.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.special import expit  # noqa: E402

from crowdlearn import LogisticAnnotators, from_triples  # noqa: E402
from crowdlearn.simulate.annotators import simulate_logistic_annotators  # noqa: E402
from crowdlearn.widgets.annotators import (  # noqa: E402
    DEFAULT_SLOPES,
    LogisticAnnotatorsExplorer,
    bayes_posterior,
)


@pytest.fixture
def explorer():
    ex = LogisticAnnotatorsExplorer(n_items=400, seed=1)
    yield ex
    ex.close()


def test_initial_state(explorer):
    r = explorer.last_result
    assert explorer.n_updates == 1 and r.update == 1 and explorer.last_error is None
    T, G = 4, explorer.grid.size
    assert r.true_eta.shape == r.estimated_eta.shape == (T, G)
    assert r.ds_reliability.shape == r.empirical_reliability.shape == (T,)
    assert r.settings["slopes"] == list(DEFAULT_SLOPES[:T])
    assert r.settings["n_items"] == 400 and r.settings["seed"] == 1
    assert r.X.shape == (400, 2) and r.truth.shape == (400,)
    assert r.n_labels == 4 * 400 and r.n_unlabelled == 0
    for v in r.accuracies.values():
        assert 0 <= v <= 1
    # reliability varies strongly along x_1: the model that knows it wins, and is close to
    # the ceiling set by Bayes' rule with the true parameters
    assert r.la_accuracy > r.ds_accuracy + 0.1 and r.la_accuracy > r.mv_accuracy + 0.1
    assert r.la_accuracy > r.oracle_accuracy - 0.03
    assert r.eta_error < 0.06
    hist = r.la_objective_history
    assert np.all(np.diff(hist) >= -1e-9 * np.abs(hist[1:]))
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "mountAnnotatorsExplorer" in bundle["text/html"]
    assert explorer.view_settings["nAnnotators"] == 4 and explorer.view_settings["seed"] == 1
    assert "logistic annotators" in explorer.summary


def test_true_curves_follow_the_settings(explorer):
    r = explorer.last_result
    slopes, gamma = np.array(r.settings["slopes"]), r.settings["gamma"]
    np.testing.assert_allclose(r.true_eta, expit(slopes[:, None] * r.grid[None, :] - gamma))
    # the simulated labels are right with about the average true reliability
    x1 = r.X[r.labels.item, 0]
    expected = expit(slopes[r.labels.expert] * x1 - gamma)
    for t in range(4):
        mine = r.labels.expert == t
        assert abs(r.empirical_reliability[t] - expected[mine].mean()) < 0.05


def test_slope_recomputes_and_moves_the_estimate(explorer):
    before = explorer.last_result
    explorer.set(slopes=[3.0, -3.0, 1.5, -4.0])
    after = explorer.last_result
    assert explorer.n_updates == 2 and after is not before and after.update == 2
    assert after.settings["slopes"][3] == -4.0
    # the same items and truth (same seed), a new annotator 4
    np.testing.assert_allclose(after.X, before.X, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(after.truth, before.truth)
    est_slope = after.la_reliability_coef[3, 0]
    assert est_slope < -2.5 and abs(before.la_reliability_coef[3, 0]) < 0.5
    # on the left the new annotator is nearly always right, on the right nearly always wrong
    assert after.estimated_eta[3, 0] > 0.9 and after.estimated_eta[3, -1] < 0.1
    # annotators 1-3 did not change, nor did their estimated curves much
    np.testing.assert_allclose(after.true_eta[:3], before.true_eta[:3])
    assert np.abs(after.estimated_eta[:3] - before.estimated_eta[:3]).max() < 0.15


def test_flat_reliability_removes_the_advantage(explorer):
    """With every slope 0 reliability does not depend on the item: Dawid-Skene's one number
    per annotator is the right model of the annotators, and it comes close to the ceiling
    (LogisticAnnotators keeps only the small edge its classifier p(z | x) gives)."""
    sloped = explorer.last_result
    explorer.set(slopes=[0.0] * 4, gamma=-1.5)
    r = explorer.last_result
    assert explorer.n_updates == 2
    np.testing.assert_allclose(r.true_eta, expit(1.5))
    assert r.ds_accuracy > r.oracle_accuracy - 0.04
    assert r.la_accuracy - r.ds_accuracy < 0.04 < sloped.la_accuracy - sloped.ds_accuracy
    # both recover each annotator's reliability (up to sampling noise): at x_1 = 0 the
    # curve passes through the fraction of correct labels, and it is nearly flat
    assert np.abs(r.ds_reliability - r.empirical_reliability).max() < 0.03
    centre = np.argmin(np.abs(r.grid))
    assert np.abs(r.estimated_eta[:, centre] - r.empirical_reliability).max() < 0.03
    assert np.abs(r.la_reliability_coef[:, 0]).max() < 0.4


def test_gamma_changes_base_reliability(explorer):
    explorer.set(slopes=[0.0] * 4, gamma=-2.0)
    good = explorer.last_result
    explorer.set(gamma=-0.3)
    poor = explorer.last_result
    assert explorer.n_updates == 3
    assert np.all(poor.empirical_reliability < good.empirical_reliability - 0.1)
    for name in ("mv_accuracy", "ds_accuracy", "la_accuracy", "oracle_accuracy"):
        assert getattr(poor, name) < getattr(good, name) - 0.05


def test_missing(explorer):
    full = explorer.last_result
    explorer.set(missing=0.7)
    r = explorer.last_result
    assert explorer.n_updates == 2 and r.settings["missing"] == pytest.approx(0.7)
    assert 0.2 * full.n_labels < r.n_labels < 0.4 * full.n_labels
    assert r.n_unlabelled > 0
    assert r.oracle_accuracy < full.oracle_accuracy
    assert np.isfinite(r.la_objective_history).all()


def test_seed_redraws_the_crowd(explorer):
    first = explorer.last_result
    explorer.set(seed=7)
    second = explorer.last_result
    assert not np.array_equal(first.truth, second.truth)
    assert explorer.view_settings["seed"] == 7  # the view redraws too
    explorer.set(seed=1)  # back: the same crowd and the same fit
    third = explorer.last_result
    np.testing.assert_array_equal(third.truth, first.truth)
    np.testing.assert_allclose(third.estimated_eta, first.estimated_eta)
    assert third.accuracies == first.accuracies
    assert explorer.n_updates == 3


def test_adversarial_crowd_ends_in_the_mirror_image(explorer):
    """Base reliability below 1/2 (gamma > 0): the crowd is mostly wrong, the likelihood cannot
    tell, and the fit agrees with the (wrong) vote; only Bayes' rule with the true
    parameters escapes."""
    explorer.set(slopes=[0.0] * 4, gamma=1.0)
    r = explorer.last_result
    assert r.mv_accuracy < 0.5 and r.la_accuracy < 0.5
    assert r.oracle_accuracy > 0.5
    assert np.mean(np.abs(r.estimated_eta - (1 - r.true_eta))) < 0.06
    assert np.mean(np.abs(r.estimated_eta - r.true_eta)) > 0.3


def test_results_match_a_direct_fit(explorer):
    explorer.set(slopes=[2.0, -1.0, 0.5, 0.0], missing=0.2, seed=4)
    r = explorer.last_result
    s = r.settings
    W = np.column_stack([s["slopes"], np.zeros(4)])
    sim = simulate_logistic_annotators(400, s["coef"], s["intercept"], W, np.full(4, s["gamma"]),
                                       missing=0.2, random_state=4)
    np.testing.assert_array_equal(sim.truth, r.truth)
    model = LogisticAnnotators(l2=s["l2"], tol=explorer.tol).fit(sim.labels, sim.X)
    assert r.la_accuracy == np.mean(model.predict() == sim.truth)
    grid = np.column_stack([r.grid, np.zeros_like(r.grid)])
    np.testing.assert_allclose(r.estimated_eta, model.reliability(grid).T)


def test_every_update_hands_the_view_its_settings_and_draws_nothing(explorer):
    open_before = len(plt.get_fignums())
    for seed in range(3):
        explorer.set(seed=seed + 10, slopes=[seed - 1.0] * 4, missing=0.1 * seed)
        v, s = explorer.view_settings, explorer.settings
        assert v["slopes"][:4] == s["slopes"] == [seed - 1.0] * 4
        assert v["slopes"][4:] == list(DEFAULT_SLOPES[4:])
        assert (v["seed"], v["missing"], v["gamma"]) == (s["seed"], s["missing"], s["gamma"])
        assert v["nAnnotators"] == 4 and v["nItems"] == 400
    assert len(plt.get_fignums()) == open_before


def test_update_records_its_timings():
    """Speed is measured in benchmarks/, never asserted here: only that timings are recorded."""
    ex = LogisticAnnotatorsExplorer()  # the defaults: 600 items, 4 annotators
    try:
        r = ex.last_result
        assert r.settings["n_items"] == 600
        assert r.fit_seconds > 0
    finally:
        ex.close()


def test_hold_and_set_make_one_update():
    ex = LogisticAnnotatorsExplorer(n_items=200, n_annotators=3)
    try:
        assert len(ex.slopes) == 3 and ex.last_result.true_eta.shape[0] == 3
        count = ex.n_updates
        with ex.hold():
            ex.set(seed=5)
            ex.set(missing=0.2)
            ex.set(slopes=[-1.0])
            assert ex.n_updates == count
        assert ex.n_updates == count + 1
        assert ex.last_result.settings["seed"] == 5
        assert ex.last_result.settings["slopes"][0] == -1.0
        with pytest.raises(ValueError, match="3 annotators"):
            ex.set(slopes=[0.0] * 4)
        ex.set(gamma=9.0)  # clipped to the slider's range
        assert ex.last_result.settings["gamma"] == 3.0
    finally:
        ex.close()


def test_constructor_arguments():
    ex = LogisticAnnotatorsExplorer(n_items=150, n_annotators=5, slopes=[1.0, 2.0], gamma=-1.0,
                                    missing=0.1, seed=3, coef=(1.0, 0.0), intercept=0.5, l2=0.5)
    try:
        s = ex.last_result.settings
        assert s["slopes"] == [1.0, 2.0] + list(DEFAULT_SLOPES[2:5])
        assert s["coef"] == [1.0, 0.0] and s["intercept"] == 0.5 and s["l2"] == 0.5
        assert ex.view_settings["nAnnotators"] == 5 and len(ex.slopes) == 5
    finally:
        ex.close()
    for kwargs, match in (({"n_annotators": 1}, "n_annotators"),
                          ({"n_annotators": 7}, "n_annotators"),
                          ({"slopes": [6.0]}, "slopes"),
                          ({"slopes": [0.0] * 5}, "slopes"),
                          ({"gamma": 4.0}, "gamma"),
                          ({"missing": 0.95}, "missing"),
                          ({"seed": 100}, "seed"),
                          ({"coef": (1.0,)}, "coef"),
                          ({"l2": -1.0}, "l2")):
        with pytest.raises(ValueError, match=match):
            LogisticAnnotatorsExplorer(**kwargs)


def test_no_label_at_all_is_reported_not_raised():
    ex = LogisticAnnotatorsExplorer(n_items=1, n_annotators=2)
    try:
        count = ex.n_updates
        for seed in range(100):  # one item, two annotators, 90% missing: often nothing
            ex.set(missing=0.9, seed=seed)
            if ex.last_error is not None:
                break
        assert ex.last_error is not None and "no label" in ex.last_error
        assert "Cannot fit" in ex.summary
        ex.set(missing=0.0)
        assert ex.last_error is None and ex.n_updates > count
    finally:
        ex.close()


def test_bayes_posterior_by_hand():
    crowd = from_triples([0, 0, 1], [0, 1, 1], [1, 0, 1], n_items=3, n_experts=2, n_classes=2)
    X = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 1.0]])
    coef, W = np.array([1.0, -0.5]), np.array([[2.0, 0.0], [0.0, 1.0]])
    gamma = np.array([0.0, -1.0])
    got = bayes_posterior(X, crowd, coef, 0.25, W, gamma)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    a = X @ coef + 0.25
    eta = sig(X @ W.T - gamma)  # [i, t]
    p1 = [sig(a[0]) * eta[0, 0] * (1 - eta[0, 1]), sig(a[1]) * eta[1, 1], sig(a[2])]
    p0 = [(1 - sig(a[0])) * (1 - eta[0, 0]) * eta[0, 1], (1 - sig(a[1])) * (1 - eta[1, 1]),
          1 - sig(a[2])]
    np.testing.assert_allclose(got, np.array(p1) / (np.array(p1) + np.array(p0)))


def test_close_releases_the_widget():
    ex = LogisticAnnotatorsExplorer(n_items=100)
    assert ex.comm is not None
    ex.close()
    assert ex.comm is None
