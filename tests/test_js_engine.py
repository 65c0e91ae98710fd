"""The browser-side EM (crowdlearn/widgets/static/crowd_em.js) gives the package's numbers.

For many explorer settings, the JavaScript simulates a crowd and fits Dawid--Skene;
the package then fits :class:`crowdlearn.DawidSkene` on that same crowd, and the
posteriors must agree to 1e-9, with the same iteration count and convergence flag,
the same objective history, the same majority-vote and Bayes-rule accuracies and the
same estimated error rates. Run in Node (always, when ``node`` is installed) and in
headless Chromium (as the rendered page would run it; skipped without Chromium,
except under CI).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.experiments import expert_error_rates, oracle_posterior
from crowdlearn.simulate import one_coin_confusion

from conftest import CHROMIUM_ARGS, chromium_or_skip, run_node_module, serve

STATIC = Path(cl.__file__).parent / "widgets" / "static"
ENGINE = STATIC / "crowd_em.js"

SETTINGS = (
    [dict(errorRates=[0.1, 0.2, 0.5, 0.6, 0.6], seed=0)]
    + [dict(errorRates=[0.1, 0.2, 0.5, 0.6, 0.6, 0.3, 0.45, 0.6, 0.25][:J], nClasses=K,
            missing=m, alpha=a, seed=s)
       for J, K, m, a, s in [(3, 2, 0.0, 0.0, 1), (9, 3, 0.0, 0.0, 2), (9, 3, 0.5, 0.0, 3),
                             (5, 4, 0.3, 1.0, 4), (4, 3, 0.85, 0.0, 5), (2, 2, 0.0, 0.5, 6),
                             (7, 5, 0.2, 0.1, 7), (9, 3, 0.0, 2.0, 8), (6, 2, 0.6, 0.0, 9),
                             (9, 3, 0.95, 1.0, 10), (1, 3, 0.0, 0.0, 11)]]
    + [dict(errorRates=list(np.round(np.random.default_rng(s).uniform(0, 0.7, 6), 3)),
            nClasses=3, missing=0.2, alpha=0.0, seed=100 + s) for s in range(8)]
)

DRIVER = """
import * as em from %s;
const settings = JSON.parse(%s);
const out = settings.map((s) => {
  const r = em.compare(s);
  return {
    item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
    label: Array.from(r.crowd.label), truth: Array.from(r.crowd.truth),
    posterior: Array.from(r.em.posterior), history: r.em.history, nIter: r.em.nIter,
    converged: r.em.converged, confusion: Array.from(r.em.confusion),
    classPrior: Array.from(r.em.classPrior),
    mvAccuracy: r.mvAccuracy, emAccuracy: r.emAccuracy, oracleAccuracy: r.oracleAccuracy,
    estimatedErrorRates: Array.from(r.estimatedErrorRates),
    trueErrorRates: Array.from(r.trueErrorRates),
  };
});
"""


def _check_against_package(setting: dict, got: dict) -> None:
    err = np.asarray(setting["errorRates"], dtype=float)
    n, K = setting.get("nItems", 500), setting.get("nClasses", 3)
    J = err.size
    crowd = cl.from_triples(got["item"], got["expert"], got["label"], n_items=n,
                            n_experts=J, n_classes=K) if got["item"] else None
    if crowd is None:
        pytest.skip("the simulated crowd gave no label")
    truth = np.asarray(got["truth"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        warnings.simplefilter("ignore", cl.DegenerateFitWarning)
        ds = cl.DawidSkene(n_classes=K, alpha=setting.get("alpha", 0.0), max_iter=200,
                           tol=1e-6).fit(crowd)
    post = np.asarray(got["posterior"]).reshape(n, K)
    where = f"setting {setting}"
    assert np.abs(post - ds.posterior_).max() < 1e-9, where
    assert got["nIter"] == ds.n_iter_ and got["converged"] == ds.converged_, where
    np.testing.assert_allclose(got["history"], ds.log_likelihood_history_, rtol=1e-9,
                               atol=1e-9, err_msg=where)
    conf = np.asarray(got["confusion"]).reshape(J, K, K)
    assert np.abs(conf - ds.confusion_).max() < 1e-9, where
    assert np.abs(np.asarray(got["classPrior"]) - ds.class_prior_).max() < 1e-9, where
    np.testing.assert_allclose(got["estimatedErrorRates"],
                               expert_error_rates(ds.confusion_, ds.class_prior_), atol=1e-9)
    true_conf = one_coin_confusion(1 - err, K)
    np.testing.assert_allclose(got["trueErrorRates"],
                               expert_error_rates(true_conf, np.full(K, 1 / K)), atol=1e-12)
    mv = cl.MajorityVote(tie_break="lowest", unlabelled="uniform").fit(crowd, n_classes=K)
    assert got["mvAccuracy"] == np.mean(mv.labels_ == truth), where
    assert got["emAccuracy"] == np.mean(ds.predict() == truth), where
    post_oracle = oracle_posterior(crowd, true_conf, np.full(K, 1 / K))
    # ties (within 1e-9 of the best) go to the lowest class, as in the page
    oracle = np.argmax(post_oracle >= post_oracle.max(axis=1, keepdims=True) - 1e-9, axis=1)
    assert got["oracleAccuracy"] == np.mean(oracle == truth), where


def _run_node(settings) -> list[dict]:
    script = DRIVER % (json.dumps(ENGINE.as_uri()), json.dumps(json.dumps(settings)))
    return run_node_module(script + "process.stdout.write(JSON.stringify(out));\n")


@pytest.fixture(scope="module")
def node_results():
    return _run_node(SETTINGS)


@pytest.mark.parametrize("index", range(len(SETTINGS)))
def test_node_engine_agrees_with_the_package(node_results, index):
    _check_against_package(SETTINGS[index], node_results[index])


def test_js_simulation_follows_its_settings():
    """The front-end's crowd is drawn as asked: uniform classes, the error rates, the
    missing fraction, and errors spread evenly over the other classes."""
    err = [0.1, 0.4, 0.7]
    got = _run_node([dict(errorRates=err, nItems=30_000, nClasses=3, missing=0.25,
                          seed=1)])[0]
    item, expert, label = (np.asarray(got[k]) for k in ("item", "expert", "label"))
    truth = np.asarray(got["truth"])
    assert np.abs(np.bincount(truth, minlength=3) / truth.size - 1 / 3).max() < 0.01
    assert abs(item.size / (30_000 * 3) - 0.75) < 0.01
    for j, e in enumerate(err):
        mine = expert == j
        wrong = label[mine] != truth[item[mine]]
        assert abs(wrong.mean() - e) < 0.015
        # the wrong labels are spread evenly over the two other classes
        shift = (label[mine][wrong] - truth[item[mine]][wrong]) % 3
        assert abs((shift == 1).mean() - 0.5) < 0.03
    # same seed, same crowd; another seed, another crowd
    again = _run_node([dict(errorRates=err, nItems=200, seed=1),
                       dict(errorRates=err, nItems=200, seed=1),
                       dict(errorRates=err, nItems=200, seed=2)])
    assert again[0]["label"] == again[1]["label"] and again[0]["label"] != again[2]["label"]


def test_chromium_engine_agrees_with_the_package():
    """The same check with the engine running in headless Chromium, loaded as an ES
    module from 127.0.0.1."""
    exe = chromium_or_skip()
    playwright = pytest.importorskip("playwright.sync_api")
    settings = SETTINGS[:8]
    with serve(STATIC) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(base + "/")
        body = DRIVER % (json.dumps(base + "/crowd_em.js"), json.dumps(json.dumps(settings)))
        body = body.replace("import * as em from", "const em = await import(")
        body = body.replace(".js\";\n", ".js\");\n", 1)
        results = page.evaluate(f"async () => {{ {body} return out; }}")
        browser.close()
    for setting, got in zip(settings, results):
        _check_against_package(setting, got)
