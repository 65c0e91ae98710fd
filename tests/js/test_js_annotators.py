"""Chapter 8's browser-side EM (crowdlearn/widgets/static/annotators_em.js) gives the package's numbers.

For many explorer settings the JavaScript simulates a crowd whose reliability depends on
the item, and fits majority vote, Dawid--Skene and the logistic-annotator model; the
package then fits :class:`crowdlearn.LogisticAnnotators` and :class:`crowdlearn.DawidSkene`
on that same crowd (:func:`crowdlearn.widgets.annotators.fit_explorer_crowd`). As in
``test_js_engine.py``, no check lets a stopping rule decide a comparison by rounding:
fixed-length runs (``tol=0`` and a ``maxIter`` over which both objectives keep rising by far
more than rounding) make the same number of iterations on both sides, with the same sign
flip, posteriors and objective history agreeing to 1e-9 (the fitted coefficients to 1e-7)
and the accuracies exactly but for items that rounding could tip; runs with the page's
tolerance converge, stop within one iteration of the package's, and give the numbers of
the package's run of the same length. Run in Node (whenever ``node`` is installed) and in
headless Chromium (skipped without it, except under CI).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.widgets.annotators import fit_explorer_crowd

from support import CHROMIUM_ARGS, chromium_or_skip, run_node_module, serve
from test_js_engine import CAP, check_accuracy, clear_steps

STATIC = Path(cl.__file__).parent / "widgets" / "static"
ENGINE = STATIC / "annotators_em.js"  # imports crowd_em.js

DEFAULT = [3.0, -3.0, 1.5, 0.0, -1.5, 2.0]
SETTINGS = (
    [dict(slopes=DEFAULT[:4], gamma=-0.5, missing=0.0, seed=0)]
    + [dict(slopes=DEFAULT[:T], gamma=g, missing=m, seed=s)
       for T, g, m, s in [(2, -0.5, 0.0, 1), (6, -0.5, 0.2, 2), (3, 0.8, 0.0, 3),
                          (5, -2.0, 0.5, 4), (4, 1.5, 0.3, 5), (6, 0.0, 0.85, 6),
                          (2, -3.0, 0.9, 7), (4, 3.0, 0.0, 8), (5, 0.0, 0.85, 3),
                          (4, 0.0, 0.85, 7)]]
    + [dict(slopes=[0.0] * 4, gamma=-1.0, missing=0.1, seed=9),
       dict(slopes=[5.0, -5.0, 5.0], gamma=-0.2, missing=0.0, seed=10)]
    + [dict(slopes=list(np.round(np.random.default_rng(s).uniform(-5, 5, 5), 2)),
            gamma=float(np.round(np.random.default_rng(s).uniform(-3, 3), 1)),
            missing=0.4, seed=20 + s) for s in range(6)]
)

DRIVER = """
const settings = JSON.parse(%s);
const out = settings.map((s) => {
  const r = em.compareAnnotators(s);
  return {
    item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
    label: Array.from(r.crowd.label), truth: Array.from(r.crowd.truth),
    X: Array.from(r.crowd.X), posterior: Array.from(r.la.posterior), history: r.la.history,
    nIter: r.la.nIter, converged: r.la.converged, flipped: r.la.flipped,
    coef: r.la.coef, intercept: r.la.intercept,
    reliabilityCoef: Array.from(r.la.reliabilityCoef),
    reliabilityIntercept: Array.from(r.la.reliabilityIntercept),
    dsPosterior: Array.from(r.ds.posterior), dsNIter: r.ds.nIter,
    dsConverged: r.ds.converged,
    dsReliability: Array.from(r.dsReliability), estimatedEta: r.estimatedEta,
    trueEta: r.trueEta, grid: r.grid,
    mvPrediction: Array.from(r.mv.pred), mvTied: Array.from(r.mv.tied),
    mvAccuracy: r.mvAccuracy, dsAccuracy: r.dsAccuracy, laAccuracy: r.laAccuracy,
    oracleAccuracy: r.oracleAccuracy,
  };
});
"""


def _fit(setting: dict, got: dict, max_iter: int, tol: float):
    """fit_explorer_crowd on the crowd the page drew for ``setting``."""
    n = setting.get("nItems", 600)
    T = len(setting["slopes"])
    crowd = cl.from_triples(got["item"], got["expert"], got["label"], n_items=n,
                            n_experts=T, n_classes=2)
    X = np.asarray(got["X"]).reshape(n, 2)
    settings = dict(slopes=setting["slopes"], gamma=setting["gamma"],
                    missing=setting.get("missing", 0.0), seed=setting.get("seed", 0),
                    n_items=n, coef=setting.get("coef", [2.0, -1.0]),
                    intercept=setting.get("intercept", 0.0), l2=setting.get("l2", 1.0))
    return fit_explorer_crowd(settings, X, crowd, np.asarray(got["truth"]),
                              np.asarray(got["grid"]), max_iter=max_iter, tol=tol)


def fixed_length(settings, results) -> list[dict]:
    """``settings`` with ``tol=0`` and a ``maxIter`` over which both the logistic-annotator
    and the Dawid--Skene objectives keep rising by far more than rounding (see
    test_js_engine.clear_steps), on the crowd each one drew (``results``)."""
    out = []
    for setting, got in zip(settings, results):
        steps = 0
        if got["item"]:
            want = _fit(setting, got, CAP, 0.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.ConvergenceWarning)
                warnings.simplefilter("ignore", cl.DegenerateFitWarning)
                ds = cl.DawidSkene(n_classes=2, max_iter=CAP, tol=0.0).fit(want.labels)
            steps = min(clear_steps(want.la_objective_history),
                        clear_steps(ds.log_likelihood_history_))
        out.append(dict(setting, tol=0, maxIter=steps))
    return out


def check_against_package(setting: dict, got: dict) -> None:
    """Assert that the page's numbers for ``setting`` are the package's on the same crowd.

    Each EM stops within one iteration of the package's run with the same ``maxIter`` and
    ``tol`` (with the same count and flag when both stop at the same step: the tolerance
    test may fall either way when the objective's rise is within rounding of it), and
    gives the numbers of the package's run of the page's length."""
    n = setting.get("nItems", 600)
    where = f"setting {setting}"
    if not got["item"]:
        pytest.skip("the simulated crowd gave no label")
    max_iter, tol = setting.get("maxIter", 200), setting.get("tol", 1e-6)
    want = _fit(setting, got, max_iter, tol)
    crowd, truth = want.labels, np.asarray(got["truth"])
    # the logistic-annotator EM
    assert abs(got["nIter"] - want.la_n_iter) <= 1, where
    if got["nIter"] == want.la_n_iter:
        assert got["converged"] == want.la_converged or want.la_n_iter == max_iter, where
        la = want
    else:  # the package's run of the page's length (tol=0: every earlier rise is far above 0)
        assert got["converged"] or want.la_converged, where
        la = _fit(setting, got, got["nIter"], 0.0)
        assert la.la_n_iter == got["nIter"], where
    # Dawid--Skene (pages that do not report its flag are checked without it)
    assert abs(got["dsNIter"] - want.ds_n_iter) <= 1, where
    if got["dsNIter"] == want.ds_n_iter:
        assert (got.get("dsConverged", want.ds_converged) == want.ds_converged
                or want.ds_n_iter == max_iter), where
        ds = want
    else:
        assert got.get("dsConverged", True) or want.ds_converged, where
        ds = _fit(setting, got, got["dsNIter"], 0.0)
        assert ds.ds_n_iter == got["dsNIter"], where
    post = np.asarray(got["posterior"]).reshape(n, 2)
    assert np.abs(post - la.la_posterior).max() < 1e-9, where
    assert got["flipped"] == la.la_flipped, where
    np.testing.assert_allclose(got["history"], la.la_objective_history, rtol=1e-9,
                               atol=1e-9, err_msg=where)
    np.testing.assert_allclose(got["coef"], la.la_coef, atol=1e-7, err_msg=where)
    np.testing.assert_allclose(got["reliabilityCoef"],
                               la.la_reliability_coef.ravel(), atol=1e-7, err_msg=where)
    np.testing.assert_allclose(got["reliabilityIntercept"], la.la_reliability_intercept,
                               atol=1e-7, err_msg=where)
    np.testing.assert_allclose(np.asarray(got["estimatedEta"]), la.estimated_eta,
                               atol=1e-9, err_msg=where)
    np.testing.assert_allclose(np.asarray(got["trueEta"]), want.true_eta, atol=1e-12)
    ds_post = np.asarray(got["dsPosterior"]).reshape(n, 2)
    assert np.abs(ds_post - ds.ds_posterior).max() < 1e-9, where
    np.testing.assert_allclose(got["dsReliability"], ds.ds_reliability, atol=1e-9)
    check_accuracy(got["laAccuracy"], post, la.la_posterior, la.la_accuracy, truth, where)
    check_accuracy(got["dsAccuracy"], ds_post, ds.ds_posterior, ds.ds_accuracy, truth, where)
    assert got["oracleAccuracy"] == want.oracle_accuracy, where
    # majority vote: the same class wherever the vote is not tied; ties (and items
    # without a label) are drawn by each side's own generator
    tied = np.asarray(got["mvTied"], dtype=bool)
    votes = np.zeros((n, 2))
    np.add.at(votes, (crowd.item, crowd.label), 1)
    assert np.array_equal(tied, votes[:, 0] == votes[:, 1]), where
    mv = np.asarray(got["mvPrediction"])
    assert np.array_equal(mv[~tied], want.mv_labels[~tied]), where
    assert got["mvAccuracy"] == np.mean(mv == truth)


def _check_fixed_length(setting: dict, got: dict) -> None:
    """A fixed-length run: both EMs make exactly ``maxIter`` steps on both sides."""
    where = f"setting {setting}"
    assert setting["tol"] == 0, where
    assert got["nIter"] == got["dsNIter"] == setting["maxIter"], where
    assert not got["converged"] and not got["dsConverged"], where
    check_against_package(setting, got)


def _check_default_tolerance(setting: dict, got: dict) -> None:
    """A run with the page's tolerance: converged, then as check_against_package."""
    assert "tol" not in setting and "maxIter" not in setting
    assert got["converged"], f"setting {setting}"
    check_against_package(setting, got)


def _run_node(settings) -> list[dict]:
    return run_node_module(f"import * as em from {json.dumps(ENGINE.as_uri())};\n"
                           + DRIVER % json.dumps(json.dumps(settings))
                           + "process.stdout.write(JSON.stringify(out));\n")


@pytest.fixture(scope="module")
def node_results():
    """The engine's runs as the page makes them (tol 1e-6, at most 200 iterations)."""
    return _run_node(SETTINGS)


@pytest.fixture(scope="module")
def fixed_settings(node_results):
    return fixed_length(SETTINGS, node_results)


@pytest.fixture(scope="module")
def node_fixed_results(fixed_settings):
    return _run_node(fixed_settings)


@pytest.mark.parametrize("index", range(len(SETTINGS)))
def test_node_annotators_engine_agrees_with_the_package(fixed_settings, node_fixed_results,
                                                        index):
    _check_fixed_length(fixed_settings[index], node_fixed_results[index])


@pytest.mark.parametrize("index", range(len(SETTINGS)))
def test_node_annotators_engine_converges_like_the_package(node_results, index):
    _check_default_tolerance(SETTINGS[index], node_results[index])


def test_node_results_cover_the_interesting_cases(node_results, fixed_settings,
                                                  node_fixed_results):
    """The settings reach a flipped solution, a fit at the iteration cap or a long one, and
    items without labels: the agreement above is not only checked on easy crowds. The
    fixed-length runs reach a flipped solution too, and run to the cap on some crowds."""
    assert any(r["flipped"] for r in node_results)
    assert max(r["nIter"] for r in node_results) >= 50
    assert any(r["mvTied"] and sum(r["mvTied"]) for r in node_results)
    assert any(r["flipped"] for r in node_fixed_results)
    assert max(s["maxIter"] for s in fixed_settings) == CAP


def test_js_annotator_simulation_follows_its_settings():
    """Standard-normal features, the truth's logistic model, each annotator right with
    probability sigma(slope * x1 - gamma), the missing fraction; same seed, same crowd."""
    slopes, gamma = [2.0, -1.0, 0.0], -0.5
    got = _run_node([dict(slopes=slopes, gamma=gamma, missing=0.3, seed=1, nItems=40_000,
                          maxIter=1)])[0]
    X = np.asarray(got["X"]).reshape(-1, 2)
    assert np.abs(X.mean(axis=0)).max() < 0.02 and np.abs(X.std(axis=0) - 1).max() < 0.02
    assert abs(np.corrcoef(X.T)[0, 1]) < 0.02
    truth = np.asarray(got["truth"])
    p1 = 1 / (1 + np.exp(-(2 * X[:, 0] - X[:, 1])))
    assert abs(truth.mean() - p1.mean()) < 0.01
    item, expert, label = (np.asarray(got[k]) for k in ("item", "expert", "label"))
    assert abs(item.size / (40_000 * 3) - 0.7) < 0.01
    for t, w in enumerate(slopes):
        mine = expert == t
        right = label[mine] == truth[item[mine]]
        eta = 1 / (1 + np.exp(-(w * X[item[mine], 0] - gamma)))
        assert abs(right.mean() - eta.mean()) < 0.01
    again = _run_node([dict(slopes=slopes, gamma=gamma, seed=1, nItems=100, maxIter=1)] * 2
                      + [dict(slopes=slopes, gamma=gamma, seed=2, nItems=100, maxIter=1)])
    assert again[0]["X"] == again[1]["X"] and again[0]["X"] != again[2]["X"]


def test_chromium_annotators_engine_agrees_with_the_package():
    """The same checks in headless Chromium, the module (and the crowd_em.js it imports)
    served from 127.0.0.1: runs with the page's tolerance, then fixed-length runs."""
    exe = chromium_or_skip()
    playwright = pytest.importorskip("playwright.sync_api")
    settings = SETTINGS[:6]
    with serve(STATIC) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(base + "/")

        def run(chosen):
            body = (f"const em = await import({json.dumps(base + '/' + ENGINE.name)});"
                    + DRIVER % json.dumps(json.dumps(chosen)))
            return page.evaluate(f"async () => {{ {body} return out; }}")

        results = run(settings)
        fixed = fixed_length(settings, results)
        fixed_results = run(fixed)
        browser.close()
    for setting, got in zip(settings, results):
        _check_default_tolerance(setting, got)
    for setting, got in zip(fixed, fixed_results):
        _check_fixed_length(setting, got)
