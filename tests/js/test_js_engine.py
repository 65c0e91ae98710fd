"""The browser-side EM (crowdlearn/widgets/static/crowd_em.js) gives the package's numbers.

For many explorer settings, the JavaScript simulates a crowd and fits Dawid--Skene;
the package then fits :class:`crowdlearn.DawidSkene` on that same crowd. No check
depends on the last bits of floating point, so none lets a stopping rule decide a
comparison by rounding:

* fixed-length runs (``tol=0`` and a ``maxIter`` chosen so that the objective still
  rises by far more than rounding at every step, :func:`clear_steps`) apply the same EM
  map the same number of times on both sides: the iteration counts are equal, and the
  posteriors, parameters, objective history and estimated error rates agree to 1e-9,
  and the accuracies exactly but for items that rounding could tip
  (:func:`check_accuracy`);
* runs with the page's own tolerance converge on both sides, stop within one
  iteration of each other (the tolerance test may fall either way when the objective's
  rise is within rounding of it), and give the numbers of the package's run of the same
  length, to 1e-9.

Run in Node (always, when ``node`` is installed) and in headless Chromium (as the
rendered page would run it; skipped without Chromium, except under CI).
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

from support import CHROMIUM_ARGS, chromium_or_skip, run_node_module, serve

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


# Fixed-length runs: at most CAP EM iterations, and only as many as keep every rise of the
# objective above MARGIN * max(1, |objective|). With tol=0 each side stops early only if
# its objective fails to rise; the two histories agree to far better than MARGIN (they are
# checked to rtol 1e-9 < MARGIN / 2), so neither side can stop before maxIter.
CAP = 30
MARGIN = 1e-8


def clear_steps(history, cap: int = CAP) -> int:
    """How many EM steps (at most ``cap``) keep the objective rising by at least
    ``MARGIN * max(1, |objective|)``, from an objective history run with ``tol=0``."""
    h = np.asarray(history, dtype=float)
    rises = np.diff(h) >= MARGIN * np.maximum(1.0, np.abs(h[1:]))
    n = int(np.argmin(rises)) if not rises.all() else rises.size
    return min(n, cap)


def _crowd(setting: dict, got: dict):
    err = np.asarray(setting["errorRates"], dtype=float)
    n, K = setting.get("nItems", 500), setting.get("nClasses", 3)
    if not got["item"]:
        return None
    return cl.from_triples(got["item"], got["expert"], got["label"], n_items=n,
                           n_experts=err.size, n_classes=K)


def _fit(setting: dict, crowd, max_iter: int, tol: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        warnings.simplefilter("ignore", cl.DegenerateFitWarning)
        return cl.DawidSkene(n_classes=setting.get("nClasses", 3),
                             alpha=setting.get("alpha", 0.0), max_iter=max_iter,
                             tol=tol).fit(crowd)


def fixed_length(settings, results) -> list[dict]:
    """``settings`` with ``tol=0`` and the ``maxIter`` of :func:`clear_steps` on the crowd
    each one drew (``results``: the engine's runs of ``settings``)."""
    out = []
    for setting, got in zip(settings, results):
        crowd = _crowd(setting, got)
        steps = 0 if crowd is None else clear_steps(
            _fit(setting, crowd, CAP, 0.0).log_likelihood_history_)
        out.append(dict(setting, tol=0, maxIter=steps))
    return out


def check_accuracy(accuracy, posterior, package_posterior, package_accuracy, truth,
                   where) -> None:
    """The page's accuracy is that of its posterior's most probable class (ties to the
    lowest), its class is the package's wherever the package's best class leads by more
    than 1e-9, and the two accuracies differ by no more than the closer calls could make
    (rounding decides those: symmetric crowds tie many items exactly)."""
    pred = np.argmax(posterior, axis=1)
    assert accuracy == np.mean(pred == truth), where
    top = np.sort(package_posterior, axis=1)
    close = top[:, -1] - top[:, -2] <= 1e-9
    assert np.array_equal(pred[~close], np.argmax(package_posterior, axis=1)[~close]), where
    assert abs(accuracy - package_accuracy) <= np.mean(close) + 1e-12, where


def _check_against_package(setting: dict, got: dict) -> None:
    """The engine's run of ``setting`` is the package's on the same crowd: it stops within
    one iteration of the package's run with the same ``maxIter`` and ``tol`` (with the
    same iteration count and flag when both stop at the same step), and its numbers are
    those of the package's run of the engine's length, to 1e-9."""
    err = np.asarray(setting["errorRates"], dtype=float)
    n, K = setting.get("nItems", 500), setting.get("nClasses", 3)
    J = err.size
    crowd = _crowd(setting, got)
    if crowd is None:
        pytest.skip("the simulated crowd gave no label")
    truth = np.asarray(got["truth"])
    where = f"setting {setting}"
    max_iter, tol = setting.get("maxIter", 200), setting.get("tol", 1e-6)
    ds = _fit(setting, crowd, max_iter, tol)
    assert abs(got["nIter"] - ds.n_iter_) <= 1, where
    if got["nIter"] == ds.n_iter_:  # (one side may meet the tolerance at the last step)
        assert got["converged"] == ds.converged_ or ds.n_iter_ == max_iter, where
    else:  # the tolerance test fell the other way on one side: the package's run of the
        # engine's length (tol=0: every rise before it exceeds the tolerance, far above 0)
        assert got["converged"] or ds.converged_, where
        ds = _fit(setting, crowd, got["nIter"], 0.0)
        assert ds.n_iter_ == got["nIter"], where
    post = np.asarray(got["posterior"]).reshape(n, K)
    assert np.abs(post - ds.posterior_).max() < 1e-9, where
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
    mv = cl.MajorityVote(n_classes=K, tie_break="lowest", unlabelled="uniform").fit(crowd)
    assert got["mvAccuracy"] == np.mean(mv.labels_ == truth), where
    check_accuracy(got["emAccuracy"], post, ds.posterior_, np.mean(ds.predict() == truth),
                   truth, where)
    post_oracle = oracle_posterior(crowd, true_conf, np.full(K, 1 / K))
    # ties (within 1e-9 of the best) go to the lowest class, as in the page
    oracle = np.argmax(post_oracle >= post_oracle.max(axis=1, keepdims=True) - 1e-9, axis=1)
    assert got["oracleAccuracy"] == np.mean(oracle == truth), where


def _check_fixed_length(setting: dict, got: dict) -> None:
    """A fixed-length run: both sides make exactly ``maxIter`` steps, none converged."""
    where = f"setting {setting}"
    assert setting["tol"] == 0, where
    assert got["nIter"] == setting["maxIter"] and not got["converged"], where
    _check_against_package(setting, got)


def _check_default_tolerance(setting: dict, got: dict) -> None:
    """A run with the page's tolerance: converged on both sides, within one iteration,
    the numbers of the package's run of the same length."""
    assert "tol" not in setting and "maxIter" not in setting
    assert got["converged"], f"setting {setting}"
    _check_against_package(setting, got)


def _run_node(settings) -> list[dict]:
    script = DRIVER % (json.dumps(ENGINE.as_uri()), json.dumps(json.dumps(settings)))
    return run_node_module(script + "process.stdout.write(JSON.stringify(out));\n")


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
def test_node_engine_agrees_with_the_package(fixed_settings, node_fixed_results, index):
    _check_fixed_length(fixed_settings[index], node_fixed_results[index])


@pytest.mark.parametrize("index", range(len(SETTINGS)))
def test_node_engine_converges_like_the_package(node_results, index):
    _check_default_tolerance(SETTINGS[index], node_results[index])


def test_fixed_length_runs_are_not_trivial(fixed_settings):
    """The fixed-length comparison runs EM well past its start on most crowds, and as far
    as the cap on some."""
    steps = sorted(s["maxIter"] for s in fixed_settings)
    assert steps[len(steps) // 2] >= 10 and steps[-1] == CAP


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
    """The same checks with the engine running in headless Chromium, loaded as an ES
    module from 127.0.0.1: runs with the page's tolerance, then fixed-length runs."""
    exe = chromium_or_skip()
    playwright = pytest.importorskip("playwright.sync_api")
    settings = SETTINGS[:8]
    with serve(STATIC) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(base + "/")

        def run(chosen):
            body = DRIVER % (json.dumps(base + "/crowd_em.js"), json.dumps(json.dumps(chosen)))
            body = body.replace("import * as em from", "const em = await import(")
            body = body.replace(".js\";\n", ".js\");\n", 1)
            return page.evaluate(f"async () => {{ {body} return out; }}")

        results = run(settings)
        fixed = fixed_length(settings, results)
        fixed_results = run(fixed)
        browser.close()
    for setting, got in zip(settings, results):
        _check_default_tolerance(setting, got)
    for setting, got in zip(fixed, fixed_results):
        _check_fixed_length(setting, got)
