"""Headless tests of the interactive explorer and the experiments behind it.

An explorer's ``set`` recomputes in the kernel at once and hands the view its new settings;
no kernel or browser is needed. What the view does with them in a browser is tested by
test_js_*.py, test_live_explorers.py and test_jupyterlab.py.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from crowdlearn.experiments import (  # noqa: E402
    accuracy_sweep,
    compare_on_simulated_crowd,
    expert_error_rates,
    oracle_posterior,
)
from crowdlearn.simulate import one_coin_confusion, simulate_crowd  # noqa: E402
from crowdlearn.widgets import (  # noqa: E402
    DawidSkeneExplorer,
    _live_settings,
    dawid_skene_explorer,
    draw_comparison,
    plot_sweep,
)


@pytest.fixture
def explorer():
    ex = DawidSkeneExplorer(n_items=300, seed=1)
    yield ex
    ex.close()


# -- the explorer ----------------------------------------------------------------------------

def test_initial_state(explorer):
    r = explorer.last_result
    assert explorer.n_updates == 1 and r.update == 1
    assert explorer.last_error is None
    assert r.estimated_confusion.shape == (5, 3, 3)
    np.testing.assert_allclose(r.estimated_confusion.sum(axis=2), 1.0)
    assert r.settings["n_items"] == 300 and r.settings["seed"] == 1
    assert 0 <= r.mv_accuracy <= 1 and 0 <= r.em_accuracy <= 1
    assert r.em_accuracy > r.mv_accuracy  # the default crowd has near-random experts
    assert r.log_likelihood_history.ndim == 1 and r.n_iter + 1 == r.log_likelihood_history.size
    assert np.all(np.diff(r.log_likelihood_history) >= -1e-9)
    # the view starts from the explorer's settings; displayed, it is the anywidget, and its
    # text/html twin mounts the same bundle
    assert explorer.view_settings["nItems"] == 300 and explorer.view_settings["seed"] == 1
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert explorer._esm in bundle["text/html"]
    assert "crowdlearnExplorer.mount(" in bundle["text/html"]
    assert explorer.live_widget() is explorer


def test_error_rate_slider_recomputes(explorer):
    before = explorer.last_result
    explorer.set(error_rates=[0.45])
    after = explorer.last_result
    assert explorer.n_updates == 2 and after is not before
    assert after.settings["error_rates"][0] == pytest.approx(0.45)
    assert after.true_error_rates[0] == pytest.approx(0.45)
    assert after.estimated_error_rates[0] > before.estimated_error_rates[0] + 0.2


def test_raising_every_error_rate_lowers_accuracy(explorer):
    explorer.set(error_rates=[0.1] * 5)
    good = explorer.last_result
    explorer.set(error_rates=[0.5] * 5)
    bad = explorer.last_result
    assert explorer.n_updates == 3  # one update per set()
    for name in ("mv_accuracy", "em_accuracy", "oracle_accuracy"):
        assert getattr(bad, name) < getattr(good, name) - 0.1
    assert np.all(bad.estimated_error_rates > good.estimated_error_rates)


def test_number_of_experts(explorer):
    for n in (3, 8, 1):
        explorer.set(n_experts=n)
        r = explorer.last_result
        assert r.estimated_confusion.shape == (n, 3, 3)
        assert r.true_confusion.shape == (n, 3, 3)
        assert r.estimated_error_rates.shape == (n,)
        assert explorer.error_rates.shape == (n,)
        # the view gets every expert's rate and shows the first n
        assert explorer.view_settings["nExperts"] == n
        assert explorer.view_settings["errorRates"] == explorer.all_error_rates
        assert len(explorer.all_error_rates) == 8
    assert explorer.n_updates == 4


def test_hidden_expert_changes_nothing_until_it_joins(explorer):
    explorer.set(n_experts=2)
    before = explorer.last_result
    explorer.set(error_rates=explorer.all_error_rates[:5] + [0.8])  # expert 6 is hidden
    after = explorer.last_result
    np.testing.assert_array_equal(after.labels.label, before.labels.label)
    np.testing.assert_array_equal(after.estimated_confusion, before.estimated_confusion)
    assert explorer.view_settings["errorRates"][5] == 0.8
    explorer.set(n_experts=6)  # ...until it joins the crowd
    assert explorer.last_result.true_error_rates[5] == pytest.approx(0.8)


def test_missing_fraction(explorer):
    full = explorer.last_result
    explorer.set(missing=0.6)
    r = explorer.last_result
    assert explorer.n_updates == 2 and r.settings["missing"] == pytest.approx(0.6)
    assert r.n_labels < 0.6 * full.n_labels
    assert r.em_accuracy < full.em_accuracy


def test_alpha(explorer):
    explorer.set(missing=0.7)
    ml = explorer.last_result
    explorer.set(alpha=3.0)
    smoothed = explorer.last_result
    assert explorer.n_updates == 3
    # same crowd (same seed), different fit
    np.testing.assert_array_equal(smoothed.labels.label, ml.labels.label)
    assert not np.allclose(smoothed.estimated_confusion, ml.estimated_confusion)
    # pseudo-counts pull every confusion entry away from 0 (and from 1)
    assert smoothed.estimated_confusion.min() > ml.estimated_confusion.min()
    assert smoothed.estimated_confusion.max() < ml.estimated_confusion.max()


def test_seed_redraws_the_crowd(explorer):
    first = explorer.last_result
    explorer.set(seed=7)
    second = explorer.last_result
    assert explorer.n_updates == 2
    assert not np.array_equal(first.truth, second.truth)
    assert explorer.view_settings["seed"] == 7  # the view redraws too
    explorer.set(seed=1)  # back: the same crowd and the same fit
    np.testing.assert_array_equal(explorer.last_result.truth, first.truth)
    np.testing.assert_allclose(explorer.last_result.estimated_confusion,
                               first.estimated_confusion)


def test_high_missing_fraction_with_few_experts_does_not_crash():
    ex = DawidSkeneExplorer(n_items=300, n_experts=2, missing=0.9, seed=3)
    try:
        r = ex.last_result
        assert ex.last_error is None
        assert r.n_unlabelled > 200  # about 0.81 of the items
        assert r.estimated_confusion.shape == (2, 3, 3)
        for alpha in (0.0, 1.0):
            ex.set(alpha=alpha)
            assert np.isfinite(ex.last_result.log_likelihood_history).all()
        ex.set(n_experts=1, missing=0.95)
        assert ex.last_error is None and ex.last_result.n_labels > 0
    finally:
        ex.close()


def test_no_label_at_all_is_reported_not_raised():
    ex = DawidSkeneExplorer(n_items=1, n_experts=1, missing=0.0, seed=0)
    try:
        count = ex.n_updates
        for seed in range(100):  # with one item and one expert, 95% missing often leaves nothing
            ex.set(missing=0.95, seed=seed)
            if ex.last_error is not None:
                break
        assert ex.last_error is not None and "no label" in ex.last_error
        assert "Cannot fit" in ex.summary and "no label" in ex.summary
        ex.set(missing=0.0)  # recovers
        assert ex.last_error is None and ex.n_updates > count
    finally:
        ex.close()


def test_every_update_hands_the_view_its_settings_and_draws_nothing(explorer):
    open_before = len(plt.get_fignums())
    for seed in range(3):
        explorer.set(seed=seed + 10, n_experts=2 + seed % 3, alpha=0.5 * seed)
        s = explorer.settings
        assert explorer.view_settings == dict(_live_settings(
            n_experts=s["n_experts"], error_rates=explorer.all_error_rates,
            missing=s["missing"], alpha=s["alpha"], seed=s["seed"], n_items=300,
            n_classes=3, max_iter=explorer.max_iter, tol=explorer.tol),
            revision=explorer.n_updates)
        assert len(explorer.view_settings["errorRates"]) == explorer.max_experts == 8
    assert len(plt.get_fignums()) == open_before


def test_set_clips_to_the_sliders_ranges_and_rejects_non_numbers(explorer):
    explorer.set(missing=2.0, alpha=-1.0, n_experts=20, seed=150, error_rates=[1.5])
    s = explorer.settings
    assert (s["missing"], s["alpha"], s["n_experts"], s["seed"]) == (0.95, 0.0, 8, 99)
    assert s["error_rates"][0] == 0.9
    count = explorer.n_updates
    for bad in ({"seed": 1.5}, {"missing": float("nan")}, {"alpha": "1"}):
        with pytest.raises(ValueError):
            explorer.set(**bad)
    assert explorer.n_updates == count and explorer.settings == s


def test_constructor_arguments():
    ex = dawid_skene_explorer(n_items=100, n_classes=2, n_experts=3, error_rates=[0.2, 0.3],
                              max_experts=4, alpha=0.5)
    try:
        assert len(ex.all_error_rates) == len(ex.view_settings["errorRates"]) == 4
        assert ex.error_rates[:2].tolist() == pytest.approx([0.2, 0.3])
        assert ex.last_result.estimated_confusion.shape == (3, 2, 2)
        assert ex.last_result.settings["alpha"] == 0.5
        assert "log-posterior" in draw_comparison(ex.last_result).axes[2].get_ylabel()
    finally:
        ex.close()
    with pytest.raises(ValueError, match="max_experts"):
        DawidSkeneExplorer(n_experts=5, max_experts=3)
    with pytest.raises(ValueError, match="error_rates"):
        DawidSkeneExplorer(error_rates=[0.2, 1.5])
    with pytest.raises(ValueError, match="missing"):
        DawidSkeneExplorer(missing=0.99)
    with pytest.raises(ValueError, match="n_classes"):
        DawidSkeneExplorer(n_classes=1)


def test_set_validates_and_holds():
    ex = DawidSkeneExplorer(n_items=100, max_experts=3, n_experts=3)
    try:
        with pytest.raises(ValueError, match="3 expert sliders"):
            ex.set(error_rates=[0.1] * 4)
        count = ex.n_updates
        with ex.hold():
            ex.set(seed=5)
            ex.set(missing=0.2)
            ex.set(alpha=1.0)
            assert ex.n_updates == count
        assert ex.n_updates == count + 1
        assert ex.last_result.settings["seed"] == 5
    finally:
        ex.close()


# -- drawing ---------------------------------------------------------------------------------

def test_draw_comparison_on_a_given_figure():
    res = compare_on_simulated_crowd([0.1, 0.4, 0.6, 0.6], n_items=200, random_state=2)
    fig = Figure(figsize=(8, 3))
    assert draw_comparison(res, fig, title="a title") is fig
    assert len(fig.axes) == 3 and fig.get_suptitle() == "a title"
    acc_texts = [t.get_text() for t in fig.axes[0].texts]
    assert f"{res.mv_accuracy:.3f}" in acc_texts and f"{res.em_accuracy:.3f}" in acc_texts
    for ax in fig.axes:
        assert ax.get_ylabel() and ax.get_title(loc="left")
    assert fig.axes[1].get_xlabel() == "expert" and fig.axes[2].get_xlabel() == "EM iteration"
    # a figure with other axes is cleared first
    other = Figure()
    other.subplots(2, 2)
    draw_comparison(res, other)
    assert len(other.axes) == 3


def test_plot_sweep():
    sw = accuracy_sweep("alpha", [0.0, 2.0], [0.1, 0.3, 0.6], n_repeats=2, n_items=100)
    ax = plot_sweep(sw, xlabel="pseudo-count α")
    assert ax.get_xlabel() == "pseudo-count α"
    assert len(ax.get_lines()) == 3 and len(plt.get_fignums()) == 0


# -- experiments -----------------------------------------------------------------------------

def test_compare_is_reproducible_and_consistent():
    a = compare_on_simulated_crowd([0.1, 0.3, 0.6], n_items=300, missing=0.2, random_state=4)
    b = compare_on_simulated_crowd([0.1, 0.3, 0.6], n_items=300, missing=0.2, random_state=4)
    np.testing.assert_array_equal(a.truth, b.truth)
    np.testing.assert_allclose(a.estimated_confusion, b.estimated_confusion)
    assert a.mv_accuracy == b.mv_accuracy and a.em_accuracy == b.em_accuracy
    assert a.n_labels == a.labels.n_labels
    assert a.n_unlabelled == a.labels.unlabelled_items().size
    np.testing.assert_allclose(a.true_error_rates, [0.1, 0.3, 0.6])
    assert a.confusion_mae == pytest.approx(np.abs(a.estimated_confusion
                                                   - a.true_confusion).mean())


def test_compare_recovers_error_rates_on_a_large_crowd():
    res = compare_on_simulated_crowd([0.1, 0.2, 0.4, 0.5, 0.6], n_items=5000, random_state=0)
    np.testing.assert_allclose(res.estimated_error_rates, res.true_error_rates, atol=0.03)
    assert res.em_accuracy >= res.oracle_accuracy - 0.01
    assert res.converged


def test_compare_rejects_bad_input():
    with pytest.raises(ValueError, match="error_rates"):
        compare_on_simulated_crowd([])
    with pytest.raises(ValueError, match="error_rates"):
        compare_on_simulated_crowd([0.2, np.nan])
    with pytest.raises(ValueError, match="n_classes"):
        compare_on_simulated_crowd([0.2], n_classes=1)


def test_oracle_posterior_matches_bayes_rule_by_hand():
    conf = one_coin_confusion([0.9, 0.6], 2)
    post = oracle_posterior(([0, 0, 1], [0, 1, 1], [0, 1, 1]), conf, [0.3, 0.7])
    # item 0: expert 0 says 0, expert 1 says 1; item 1: expert 1 says 1
    p0 = np.array([0.3 * 0.9 * 0.4, 0.7 * 0.1 * 0.6])
    p1 = np.array([0.3 * 0.4, 0.7 * 0.6])
    np.testing.assert_allclose(post, [p0 / p0.sum(), p1 / p1.sum()])


def test_oracle_posterior_unlabelled_items_get_the_prior_and_sizes_are_checked():
    sim = simulate_crowd(50, one_coin_confusion([0.8], 3), missing=0.8, random_state=0)
    post = oracle_posterior(sim.labels, sim.confusion, [0.2, 0.3, 0.5])
    empty = sim.labels.unlabelled_items()
    assert empty.size > 0
    np.testing.assert_allclose(post[empty], np.tile([0.2, 0.3, 0.5], (empty.size, 1)))
    with pytest.raises(ValueError, match="experts"):
        oracle_posterior(([0], [1], [0]), one_coin_confusion([0.8], 2), [0.5, 0.5])
    with pytest.raises(ValueError, match="shape"):
        oracle_posterior(([0], [0], [0]), one_coin_confusion([0.8], 2), [1.0])


def test_expert_error_rates_weights_rows_by_the_prior():
    conf = np.array([[[0.9, 0.1], [0.4, 0.6]]])
    assert expert_error_rates(conf).tolist() == pytest.approx([0.25])
    assert expert_error_rates(conf, [1.0, 0.0]).tolist() == pytest.approx([0.1])
    with pytest.raises(ValueError, match="class_prior"):
        expert_error_rates(conf, [1.0])


def test_accuracy_sweep_over_missing_fractions():
    grid = [0.0, 0.5, 0.85]
    sw = accuracy_sweep("missing", grid, [0.1, 0.2, 0.5, 0.6, 0.6], n_repeats=2, n_items=300)
    assert sw.parameter == "missing" and sw.values.tolist() == grid
    assert sw.mv_accuracy.shape == sw.em_accuracy.shape == (3, 2)
    assert sw.n_unlabelled[0].tolist() == [0, 0] and (sw.n_unlabelled[2] > 0).all()
    em, mv = sw.em_accuracy.mean(axis=1), sw.mv_accuracy.mean(axis=1)
    assert em[0] > em[-1] and mv[0] > mv[-1]  # losing labels hurts both
    assert em[0] > mv[0]
    with pytest.raises(ValueError, match="parameter"):
        accuracy_sweep("seed", [0, 1], [0.1])
    with pytest.raises(ValueError, match="swept"):
        accuracy_sweep("alpha", [0, 1], [0.1], alpha=1.0)


def test_close_releases_the_widget():
    ex = DawidSkeneExplorer(n_items=100)
    assert ex.comm is not None
    ex.close()
    assert ex.comm is None


# -- what the browser computes becomes the kernel's result ------------------------------------

def _ds_payload(error_rates, n_experts, *, n_items, n_classes=3, missing=0.0, alpha=0.0,
                seed=0, updates=1):
    """A view's ``result`` in the front-end's format (``explorer_view.js``), for a crowd the
    package simulates and fits (the browser's own crowd would differ, not its format)."""
    import crowdlearn as cl

    rates = list(error_rates)
    r = compare_on_simulated_crowd(rates[:n_experts], n_items=n_items, n_classes=n_classes,
                                   missing=missing, alpha=alpha, random_state=seed)
    ds = cl.DawidSkene(n_classes=n_classes, alpha=alpha).fit(r.labels)
    return {
        "settings": {"nExperts": n_experts, "errorRates": rates, "missing": missing,
                     "alpha": alpha, "seed": seed, "nItems": n_items, "nClasses": n_classes,
                     "maxIter": 200, "tol": 1e-6},
        "item": r.labels.item.tolist(), "expert": r.labels.expert.tolist(),
        "label": r.labels.label.tolist(), "truth": r.truth.tolist(),
        "posterior": ds.posterior_.ravel().tolist(),
        "history": r.log_likelihood_history.tolist(), "nIter": r.n_iter,
        "converged": r.converged, "mvAccuracy": r.mv_accuracy, "emAccuracy": r.em_accuracy,
        "oracleAccuracy": r.oracle_accuracy, "classPrior": r.class_prior.tolist(),
        "confusion": r.estimated_confusion.ravel().tolist(),
        "trueErrorRates": r.true_error_rates.tolist(),
        "estimatedErrorRates": r.estimated_error_rates.tolist(), "updates": updates,
        "ms": 21.5,
    }


def test_the_browser_result_becomes_last_result():
    """Displayed in Jupyter, the explorer is its anywidget, which recomputes in the browser and
    sets its ``result`` trait; the kernel adopts it as ``last_result``, counts it in
    ``n_updates`` and moves its settings to the browser's without recomputing."""
    ex = DawidSkeneExplorer(n_items=200, n_experts=4, seed=0)
    widget = ex.live_widget()
    assert widget is ex
    assert ex.n_updates == 1 and ex.last_result.computed_in == "kernel"
    rates = [0.1, 0.3, 0.5, 0.2, 0.25, 0.3, 0.35, 0.4]
    for k, (n_experts, missing, seed) in enumerate([(3, 0.2, 7), (5, 0.0, 8), (2, 0.5, 9)]):
        payload = _ds_payload(rates, n_experts, n_items=200, missing=missing, alpha=1.0,
                              seed=seed, updates=k + 1)
        widget.set_state({"result": payload})  # what a comm update from the front-end does
        r = ex.last_result
        assert ex.n_updates == 2 + k and r.update == ex.n_updates  # no kernel recomputation
        assert r.computed_in == "browser" and ex.last_error is None
        assert r.settings == {"error_rates": rates[:n_experts], "n_experts": n_experts,
                              "n_items": 200, "n_classes": 3, "missing": missing,
                              "alpha": 1.0, "seed": seed, "max_iter": 200, "tol": 1e-6}
        assert (r.mv_accuracy, r.em_accuracy, r.oracle_accuracy) == (
            payload["mvAccuracy"], payload["emAccuracy"], payload["oracleAccuracy"])
        assert r.estimated_confusion.shape == (n_experts, 3, 3) and r.n_iter == payload["nIter"]
        np.testing.assert_array_equal(r.estimated_confusion.ravel(), payload["confusion"])
        np.testing.assert_array_equal(r.labels.item, payload["item"])
        assert r.n_labels == len(payload["item"]) and r.em_seconds == pytest.approx(0.0215)
        # the kernel's view of the same crowd: the true confusion of the reported error rates
        np.testing.assert_allclose(r.true_confusion, one_coin_confusion(
            1 - np.array(rates[:n_experts]), 3))
        # the kernel's settings are the browser's
        assert {k: v for k, v in ex.settings.items() if k != "error_rates"} == {
            "n_experts": n_experts, "missing": missing, "alpha": 1.0, "seed": seed,
            "n_items": 200, "n_classes": 3}
        assert ex.error_rates.tolist() == rates[:n_experts]
    # a kernel-side change starts from the browser's settings and redraws the view
    ex.set(seed=3)
    assert ex.n_updates == 5 and ex.last_result.computed_in == "kernel"
    assert ex.last_result.settings["n_experts"] == 2 and ex.last_result.settings["missing"] == 0.5
    assert widget.view_settings["seed"] == 3 and widget.view_settings["nExperts"] == 2
    # a burst of redraws that reaches the kernel as one message counts them all; a new view
    # (the explorer displayed again) counts from 1
    widget.set_state({"result": _ds_payload(rates, 2, n_items=200, seed=3, updates=6)})
    assert ex.n_updates == 8 and ex.last_result.update == 8
    widget.set_state({"result": _ds_payload(rates, 2, n_items=200, seed=4, updates=1)})
    assert ex.n_updates == 9 and ex.last_result.settings["seed"] == 4
    # a result that cannot be read changes nothing but says so
    before = ex.last_result
    widget.set_state({"result": {"settings": {"nExperts": 2}, "updates": 9}})
    assert ex.last_result is before and ex.n_updates == 9
    assert "could not be read" in ex.last_error
    # the browser is at seed 4; setting the kernel to the seed it last sent the view (3)
    # still redraws the view: every kernel-side update sends a new revision
    sent = dict(widget.view_settings)
    assert sent["seed"] == 3
    ex.set(seed=3)
    assert widget.view_settings != sent and widget.view_settings["seed"] == 3
    assert widget.view_settings["revision"] == sent["revision"] + 1
    ex.close()


def test_the_browser_result_of_the_annotators_explorer_becomes_last_result():
    """The same for chapter 8's explorer: the browser's crowd, fits and accuracies, read back,
    equal what the package computes on that crowd with the same parameters."""
    from crowdlearn.widgets.annotators import (LogisticAnnotatorsExplorer, _simulate_and_fit,
                                               DEFAULT_SLOPES)

    ex = LogisticAnnotatorsExplorer(n_items=300, seed=0)
    widget = ex.live_widget()
    T = 5  # the page lets the reader choose the number of annotators
    slopes = [1.0, -2.0, 0.5, 0.0, 2.5]
    settings = {"slopes": slopes, "gamma": -1.0, "missing": 0.3, "seed": 4, "n_items": 300,
                "coef": [2.0, -1.0], "intercept": 0.0, "l2": 1.0}
    want = _simulate_and_fit(settings, ex.grid, ex.max_iter, ex.tol)
    payload = {
        "settings": {"nAnnotators": T, "slopes": slopes + list(DEFAULT_SLOPES[T:]),
                     "gamma": -1.0, "missing": 0.3, "seed": 4, "nItems": 300,
                     "coef": [2.0, -1.0], "intercept": 0.0, "l2": 1.0, "maxIter": 200,
                     "tol": 1e-6},
        "item": want.labels.item.tolist(), "expert": want.labels.expert.tolist(),
        "label": want.labels.label.tolist(), "truth": want.truth.tolist(),
        "X": want.X.ravel().tolist(), "posterior": want.la_posterior.ravel().tolist(),
        "history": want.la_objective_history.tolist(), "nIter": want.la_n_iter,
        "converged": want.la_converged, "flipped": want.la_flipped,
        "dsPosterior": want.ds_posterior.ravel().tolist(), "dsNIter": want.ds_n_iter,
        "mvPrediction": want.mv_labels.tolist(), "mvTied": [],
        "mvAccuracy": want.mv_accuracy, "dsAccuracy": want.ds_accuracy,
        "laAccuracy": want.la_accuracy, "oracleAccuracy": want.oracle_accuracy,
        "dsConverged": want.ds_converged, "laCoef": want.la_coef.tolist(),
        "laIntercept": want.la_intercept,
        "laReliabilityCoef": want.la_reliability_coef.ravel().tolist(),
        "laReliabilityIntercept": want.la_reliability_intercept.tolist(),
        "dsReliability": want.ds_reliability.tolist(), "updates": 1, "ms": 30.0,
    }
    widget.set_state({"result": payload})
    r = ex.last_result
    assert ex.n_updates == 2 and r.update == 2 and r.computed_in == "browser"
    assert r.settings == settings and r.labels.n_experts == T
    for name in ("true_eta", "estimated_eta", "ds_reliability", "la_posterior", "ds_posterior",
                 "mv_labels", "X", "truth"):
        np.testing.assert_allclose(getattr(r, name), getattr(want, name), atol=1e-12,
                                   err_msg=name)
    np.testing.assert_array_equal(r.empirical_reliability, want.empirical_reliability)
    assert r.accuracies == want.accuracies and r.n_labels == want.n_labels
    assert (r.la_n_iter, r.ds_n_iter, r.la_flipped) == (want.la_n_iter, want.ds_n_iter,
                                                        want.la_flipped)
    # the kernel's four slopes are the first four of the page's
    assert ex.settings["slopes"] == slopes[:4] and ex.settings["missing"] == 0.3
    assert ex.settings["gamma"] == -1.0 and ex.settings["seed"] == 4
    ex.close()


# -- issue 28: every builder checks its settings in Python before any page is built ----------
@pytest.mark.parametrize("builder, settings, match", [
    ("ds", dict(n_items=-5), "n_items must be >= 1"),
    ("ds", dict(n_items=10 ** 9), "n_items must be <= 20000"),
    ("ds", dict(error_rates=[2.0]), "error_rates must lie in"),
    ("ds", dict(error_rates="0.1"), "error_rates"),
    ("ds", dict(missing=1.5), "missing must be <="),
    ("ds", dict(alpha=float("nan")), "alpha must be finite"),
    ("ds", dict(n_experts=10 ** 6), "n_experts must be <= 50"),
    ("ds", dict(tol=float("nan")), "tol must be finite"),
    ("ann", dict(n_items=10 ** 9), "n_items must be <="),
    ("ann", dict(missing=1.5), "missing must be <="),
    ("ann", dict(gamma=float("nan")), "gamma must be finite"),
    ("ann", dict(max_iter=10 ** 9), "max_iter must be <="),
    ("em", dict(heads=[1.5, 2]), "whole numbers"),
    ("em", dict(n_grid=10 ** 6), "n_grid must be <="),
])
def test_live_pages_refuse_bad_settings(builder, settings, match):
    from crowdlearn.widgets import live_explorer_html
    from crowdlearn.widgets.annotators import live_annotators_html
    from crowdlearn.widgets.em_steps import live_em_steps_html
    make_page = {"ds": live_explorer_html, "ann": live_annotators_html,
                 "em": live_em_steps_html}[builder]
    with pytest.raises(ValueError, match=match):
        make_page(**settings)
    assert "<script" in make_page()  # the defaults still build a page


def test_explorer_refuses_more_experts_than_it_has_sliders_for():
    with pytest.raises(ValueError, match="n_experts must be <= 50"):
        DawidSkeneExplorer(n_experts=10 ** 5)
    with pytest.raises(ValueError, match="max_experts must be <= 50"):
        DawidSkeneExplorer(max_experts=10 ** 5)


# The explorer's warning under its numbers tells sampling noise from EM failing (issue 41):
# the reported cases, 0.978 vs 0.986 and 0.998 vs 1.000 on 500 items (noise) and 0.418 vs
# 0.590 (failure); the page's JavaScript says exactly what the Python summary says.
WARNING_CASES = [(0.986, 0.978, [0.1, 0.2, 0.3], 3, 500), (1.0, 0.998, [0.0, 0.1], 3, 500),
                 (0.590, 0.418, [0.5, 0.6], 3, 500), (1.0, 0.4, [0.66], 3, 500),
                 (0.9, 0.95, [0.1, 0.3], 3, 500), (0.70, 0.64, [0.4, 0.5], 2, 100),
                 (0.70, 0.60, [0.4, 0.45], 2, 1000)]


def test_explorer_warning_tells_noise_from_failure():
    from crowdlearn.widgets import fit_warnings

    def first(case):
        found = fit_warnings(*case)
        return found[0].split(":")[0] if found else None

    assert first(WARNING_CASES[0]) == first(WARNING_CASES[1]) == \
        "EM is slightly below the majority vote"
    assert first(WARNING_CASES[2]) == "EM is below the majority vote"
    assert fit_warnings(*WARNING_CASES[3])[1].startswith("Degenerate fit")
    assert fit_warnings(*WARNING_CASES[4]) == []
    assert first(WARNING_CASES[5]) == "EM is slightly below the majority vote"  # 6 of 100
    assert first(WARNING_CASES[6]) == "EM is below the majority vote"  # 100 of 1000
    # without the number of items, any gap is reported as before
    assert first(WARNING_CASES[0][:4]) == "EM is below the majority vote"


def test_explorer_warning_is_the_same_in_the_page():
    import json

    from crowdlearn.widgets import fit_warnings
    from support import run_node_module

    from pathlib import Path

    view = Path(__file__).resolve().parents[2] / "crowdlearn/widgets/static/explorer_view.js"
    cases = [dict(mvAccuracy=a, emAccuracy=b, estimatedErrorRates=r, K=k, n=n)
             for a, b, r, k, n in WARNING_CASES]
    got = run_node_module(
        f"import {{fitWarnings}} from {json.dumps(str(view))};\n"
        f"const cases = {json.dumps(cases)};\n"
        "console.log(JSON.stringify(cases.map((c) => fitWarnings(c, c.K, c.n))));")
    assert got == [fit_warnings(*case) for case in WARNING_CASES]
