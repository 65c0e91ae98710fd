"""The explorers in the rendered book recompute in the page, offline, with the package's numbers.

Opens the built chapter in headless Chromium (served from 127.0.0.1), moves every control of
every live explorer, and asserts that the view changed consistently with the new value
(the number of expert rows equals the experts slider, the error-rate panel follows each
expert's slider, ...), that no request left 127.0.0.1, and -- for several settings -- that
the crowd the page simulated, fitted by :class:`crowdlearn.DawidSkene`, gives the page's
posteriors to 1e-9 with the same iteration count. Needs the built book and Chromium
(skipped without them, except under CI).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import crowdlearn as cl

from support import CHROMIUM_ARGS, HTML, chromium_or_skip, serve, watched_page

CHAPTERS = ["book/04_many_experts.html", "book/05_missing_labels.html", "book/06_smoothing.html"]

READ_STATE = """(el) => {
  const r = el.crowdlearn.result, s = el.crowdlearn.state;
  return {state: s, updates: el.crowdlearn.updates, nExpertsShown:
    el.querySelectorAll('.cl-expert').length,
    visibleRows: [...el.querySelectorAll('input[data-key="errorRates"]')]
      .filter((i) => !i.closest('.cl-row').hidden).length,
    item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
    label: Array.from(r.crowd.label), posterior: Array.from(r.em.posterior),
    nIter: r.em.nIter, converged: r.em.converged,
    trueErrorRates: Array.from(r.trueErrorRates), summary: el.querySelector('.cl-summary').textContent};
}"""


def _set(page, explorer, selector, value):
    page.eval_on_selector(f"#{explorer} {selector}",
                          "(i, v) => { i.value = v; i.dispatchEvent(new Event('input', "
                          "{bubbles: true})); }", str(value))


def _check_with_package(got):
    s = got["state"]
    n, K, J = s["nItems"], s["nClasses"], s["nExperts"]
    if not got["item"]:
        return
    crowd = cl.from_triples(got["item"], got["expert"], got["label"], n_items=n,
                            n_experts=J, n_classes=K)

    def fit(max_iter, tol):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.ConvergenceWarning)
            warnings.simplefilter("ignore", cl.DegenerateFitWarning)
            return cl.DawidSkene(n_classes=K, alpha=s["alpha"], max_iter=max_iter,
                                 tol=tol).fit(crowd)

    ds = fit(s["maxIter"], s["tol"])
    # the page and the package compute the same steps, but the last bits of two
    # implementations may let one of them meet the tolerance one step before the other
    assert abs(got["nIter"] - ds.n_iter_) <= 1, s
    if got["nIter"] == ds.n_iter_:
        assert got["converged"] == ds.converged_, s
    else:  # the package's run of the page's length (every earlier step rose above 0)
        ds = fit(got["nIter"], 0.0)
        assert ds.n_iter_ == got["nIter"], s
    post = np.asarray(got["posterior"]).reshape(n, K)
    assert np.abs(post - ds.posterior_).max() < 1e-9, s


@pytest.mark.browser
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_control_of_every_live_explorer_recomputes(chapter):
    exe = chromium_or_skip(HTML / chapter, why=" and the built book (python3 run.py book)")
    playwright = pytest.importorskip("playwright.sync_api")
    foreign, errors = [], []
    with serve(HTML) as base:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            for width in (1280, 390):
                page = watched_page(browser, width, foreign, errors)
                page.goto(f"{base}/{chapter}", wait_until="load")
                ids = page.eval_on_selector_all(".cl-explorer", "els => els.map(e => e.id)")
                assert ids, f"no live explorer in {chapter}"
                for ex in ids:
                    el = page.query_selector(f"#{ex}")
                    state = el.evaluate(READ_STATE)
                    assert state["updates"] == 1 and state["nExpertsShown"] == \
                        state["state"]["nExperts"]
                    max_experts = len(state["state"]["errorRates"])
                    _check_with_package(state)
                    if width == 390:  # usable on a phone: nothing wider than the screen
                        assert page.evaluate("() => document.documentElement.scrollWidth") \
                            <= 390 + 1
                        continue
                    for n_experts in (1, max_experts, 3):
                        _set(page, ex, 'input[data-key="nExperts"]', n_experts)
                        got = el.evaluate(READ_STATE)
                        assert got["nExpertsShown"] == n_experts == got["visibleRows"]
                        _check_with_package(got)
                    for j in range(3):
                        _set(page, ex, f'input[data-key="errorRates"][data-index="{j}"]', 0.7)
                        got = el.evaluate(READ_STATE)
                        assert abs(got["trueErrorRates"][j] - 0.7) < 1e-12
                        assert got["state"]["errorRates"][j] == 0.7
                    before = got["summary"]
                    for key, value in (("missing", 0.5), ("alpha", 1.5), ("seed", 7)):
                        _set(page, ex, f'input[data-key="{key}"]', value)
                        got = el.evaluate(READ_STATE)
                        assert got["state"][key] == value and got["summary"] != before
                        before = got["summary"]
                    _check_with_package(got)
                    assert got["updates"] == 1 + 3 + 3 + 3
                page.close()
            browser.close()
    assert not errors, errors
    assert not foreign, f"requests to other hosts: {foreign[:5]}"


@pytest.mark.browser
def test_chapter_one_vote_explorer_recomputes_with_the_package_numbers():
    chapter = "book/01_introduction.html"
    exe = chromium_or_skip(HTML / chapter, why=" and the built book (python3 run.py book)")
    playwright = pytest.importorskip("playwright.sync_api")
    read = """(el) => ({state: el.crowdlearn.state, updates: el.crowdlearn.updates,
        mv: el.crowdlearn.result.mvAccuracy, oracle: el.crowdlearn.result.oracleAccuracy,
        item: Array.from(el.crowdlearn.result.crowd.item),
        expert: Array.from(el.crowdlearn.result.crowd.expert),
        label: Array.from(el.crowdlearn.result.crowd.label),
        truth: Array.from(el.crowdlearn.result.crowd.truth),
        bars: [...el.querySelectorAll('rect[data-method]')].map((r) => Number(r.dataset.value))})"""
    with serve(HTML) as base:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/{chapter}", wait_until="load")
            el = page.query_selector(".cl-vote-explorer")
            assert el is not None, "no live explorer in chapter 1"
            seen = []
            for key, value in (("nCareless", 20), ("carelessAccuracy", 0.7), ("seed", 3),
                               ("nCareless", 0)):
                el.eval_on_selector(f'input[data-key="{key}"]',
                                    "(i, v) => { i.value = v; i.dispatchEvent(new Event("
                                    "'input', {bubbles: true})); }", str(value))
                got = el.evaluate(read)
                assert got["state"][key] == value
                assert got["bars"] == [got["mv"], got["oracle"], 0.9]
                s = got["state"]
                n_experts = 3 + s["nCareless"]
                crowd = cl.from_triples(got["item"], got["expert"], got["label"],
                                        n_items=s["nItems"], n_experts=n_experts, n_classes=2)
                want = cl.widgets.VoteExplorer.compare(crowd, got["truth"],
                                                       s["carelessAccuracy"])
                assert want == {"mvAccuracy": got["mv"], "oracleAccuracy": got["oracle"]}
                seen.append((got["mv"], got["oracle"]))
            assert len(set(seen)) == len(seen)  # every move changed the view
            browser.close()


READ_ANNOTATORS = """(el) => {
  const r = el.crowdlearn.result, s = el.crowdlearn.state;
  return {state: s, updates: el.crowdlearn.updates,
    panels: [...el.querySelectorAll('.cl-curve')].map((p) => p.querySelector('.cl-title').textContent),
    visibleRows: [...el.querySelectorAll('input[data-key="slopes"]')]
      .filter((i) => !i.closest('.cl-row').hidden).length,
    bars: [...el.querySelectorAll('rect[data-method]')].map((b) => Number(b.dataset.value)),
    item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
    label: Array.from(r.crowd.label), truth: Array.from(r.crowd.truth), X: Array.from(r.crowd.X),
    posterior: Array.from(r.la.posterior), history: r.la.history, nIter: r.la.nIter,
    converged: r.la.converged, flipped: r.la.flipped, coef: r.la.coef,
    reliabilityCoef: Array.from(r.la.reliabilityCoef),
    reliabilityIntercept: Array.from(r.la.reliabilityIntercept),
    dsPosterior: Array.from(r.ds.posterior), dsNIter: r.ds.nIter,
    dsReliability: Array.from(r.dsReliability), estimatedEta: r.estimatedEta, trueEta: r.trueEta,
    grid: r.grid, mvPrediction: Array.from(r.mv.pred), mvTied: Array.from(r.mv.tied),
    mvAccuracy: r.mvAccuracy, dsAccuracy: r.dsAccuracy, laAccuracy: r.laAccuracy,
    oracleAccuracy: r.oracleAccuracy, summary: el.querySelector('.cl-summary').textContent};
}"""


def _check_annotators_with_package(got):
    from test_js_annotators import check_against_package

    s = got["state"]
    setting = dict(slopes=s["slopes"][:s["nAnnotators"]], gamma=s["gamma"],
                   missing=s["missing"], seed=s["seed"], nItems=s["nItems"], coef=s["coef"],
                   intercept=s["intercept"], l2=s["l2"], maxIter=s["maxIter"], tol=s["tol"])
    check_against_package(setting, got)


@pytest.mark.browser
def test_chapter_eight_explorer_recomputes_with_the_package_numbers():
    """Every control of chapter 8's explorer: the annotator count sets the number of panels
    and slope rows, each slope moves its annotator's true curve, the crowd sliders redraw,
    and the page's numbers are the package's on the page's crowd. Usable at 390 px."""
    chapter = "book/08_logistic_annotators.html"
    exe = chromium_or_skip(HTML / chapter, why=" and the built book (python3 run.py book)")
    playwright = pytest.importorskip("playwright.sync_api")
    foreign, errors = [], []
    with serve(HTML) as base:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = watched_page(browser, 390, foreign, errors)
            page.goto(f"{base}/{chapter}", wait_until="load")
            assert page.query_selector(".cl-annotators-explorer") is not None
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
            page.set_viewport_size({"width": 1280, "height": 900})
            el = page.query_selector(".cl-annotators-explorer")
            ex = el.get_attribute("id")
            got = el.evaluate(READ_ANNOTATORS)
            assert got["updates"] == 1
            _check_annotators_with_package(got)
            max_annotators = len(got["state"]["slopes"])
            for n in (2, max_annotators, 3):
                _set(page, ex, 'input[data-key="nAnnotators"]', n)
                got = el.evaluate(READ_ANNOTATORS)
                assert len(got["panels"]) == n == got["visibleRows"] == got["state"]["nAnnotators"]
                assert len(got["trueEta"]) == n
            _check_annotators_with_package(got)
            for t, w in enumerate((-4.0, 0.0, 2.5)):
                _set(page, ex, f'input[data-key="slopes"][data-index="{t}"]', w)
                got = el.evaluate(READ_ANNOTATORS)
                assert got["state"]["slopes"][t] == w
                shown = got["panels"][t].replace("\u2212", "-")
                assert shown.endswith(f"slope {w:+.2f}"), shown
                grid = np.asarray(got["grid"])
                want = 1 / (1 + np.exp(-(w * grid - got["state"]["gamma"])))
                np.testing.assert_allclose(got["trueEta"][t], want, atol=1e-12)
            _check_annotators_with_package(got)
            before = got["summary"]
            for key, value in (("gamma", 0.8), ("missing", 0.5), ("seed", 7)):
                _set(page, ex, f'input[data-key="{key}"]', value)
                got = el.evaluate(READ_ANNOTATORS)
                assert got["state"][key] == value and got["summary"] != before
                assert got["bars"] == [got["mvAccuracy"], got["dsAccuracy"],
                                       got["laAccuracy"], got["oracleAccuracy"]]
                before = got["summary"]
                _check_annotators_with_package(got)
            assert got["updates"] == 1 + 3 + 3 + 3
            browser.close()
    assert not errors, errors
    assert not foreign, f"requests to other hosts: {foreign[:5]}"
