"""Chapter 3's two-coin EM (:mod:`crowdlearn.widgets.em_steps`) and its live explorer.

* The numpy EM is the package's: a batch of ``T`` tosses, written as ``T`` binary children
  in all ``T`` rotations, is a :class:`~crowdlearn.LatentClassModel` whose tables stay tied,
  so the package's log-likelihood history is ``T`` times ours (less the binomial
  coefficients), step for step; and it is brute force: the posteriors and the likelihood
  by enumerating every assignment of coins, the M-step as the maximiser of the energy.
* EM's half-steps behave as chapter 3 says: the bound touches after each E-step, rises in
  each M-step, never exceeds the log-likelihood; the fixed points are two local maxima
  (each with its mirror image) and a saddle on the diagonal.
* The explorer's page (its text/html twin in a temporary file, and chapter 3 of the built
  book when it exists) is moved through every control in headless Chromium, and every
  state it shows is the numpy one.
"""

from __future__ import annotations

import itertools
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.widgets import EMStepsExplorer, live_em_steps_html
from crowdlearn.widgets import em_steps as es

from support import CHROMIUM_ARGS, HTML, chromium_or_skip, serve, watched_page

H = np.array(es.HEADS)
T = es.TOSSES


def _brute(heads, theta, phi, tosses):
    """p(h, z) summed over every assignment z of coins: the likelihood and Q_i(1)."""
    from math import comb

    heads = list(heads)
    total, post = 0.0, np.zeros(len(heads))
    for z in itertools.product((0, 1), repeat=len(heads)):
        p = 1.0
        for h, n in zip(heads, z):
            p *= ((phi, 1 - phi)[n] * comb(tosses, h) * theta[n] ** h
                  * (1 - theta[n]) ** (tosses - h))
        total += p
        post += p * (np.array(z) == 0)
    return np.log(total), post / total


@pytest.mark.parametrize("theta, phi", [((2 / 3, 1 / 3), 0.5), ((0.2, 0.9), 0.3),
                                        ((0.5, 0.5), 0.7)])
def test_e_step_is_brute_force(theta, phi):
    Q, ll = es.e_step(H, theta, phi)
    ll_b, q1 = _brute(H, theta, phi, T)
    assert abs(ll - ll_b) < 1e-10
    np.testing.assert_allclose(Q[:, 0], q1, atol=1e-12)
    np.testing.assert_allclose(Q.sum(axis=1), 1)


def test_m_step_maximises_the_energy():
    Q, _ = es.e_step(H, (2 / 3, 1 / 3), 0.5)
    theta, phi = es.m_step(H, Q)

    def energy(t1, t2, f):
        return es.free_energy(H, Q, (t1, t2), f) + 0.0

    best = energy(*theta, phi)
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = rng.normal(scale=0.02, size=3)
        assert energy(theta[0] + d[0], theta[1] + d[1], phi + d[2]) < best


def test_two_coin_em_is_the_packages_latent_class_model_with_tied_tables():
    rows, q_rows = [], []
    Q, _ = es.e_step(H, (2 / 3, 1 / 3), 0.5)  # q^1, from theta^0
    for h, q in zip(H, Q):
        batch = np.array([1] * h + [0] * (T - h))
        for k in range(T):
            rows.append(np.roll(batch, k))
            q_rows.append(q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        lcm = cl.LatentClassModel(n_classes=2, init=np.array(q_rows), max_iter=12,
                                  tol=0.0).fit(np.array(rows))
    states = es.half_steps(H, (2 / 3, 1 / 3), 0.5, 2 * 13)
    ours = np.array([s["log_lik"] for s in states[2::2]])  # l(theta^1), l(theta^2), ...
    log_binom = sum(np.log(float(__import__("math").comb(T, int(h)))) for h in H)
    np.testing.assert_allclose(lcm.log_likelihood_history_, T * (ours - log_binom),
                               rtol=1e-10)
    tables = np.array([t[:, 1] for t in lcm.cond_prob_])  # (children, classes)
    np.testing.assert_allclose(tables, np.tile(states[-1]["theta"], (T, 1)), rtol=1e-10)
    np.testing.assert_allclose(lcm.class_prior_[0], states[-1]["phi"], rtol=1e-10)


def test_half_steps_touch_then_climb_the_bound():
    for start in [((2 / 3, 1 / 3), 0.5), ((0.5, 0.9), 0.5), ((0.3, 0.31), 0.8)]:
        st = es.half_steps(H, *start, n_half=40)
        for a, b in zip(st, st[1:]):
            assert b["free_energy"] <= b["log_lik"] + 1e-12
            if b["phase"] == "E":
                assert abs(b["free_energy"] - b["log_lik"]) < 1e-12  # touches
                assert b["log_lik"] == a["log_lik"]
            else:
                assert b["free_energy"] >= a["free_energy"] - 1e-12  # the M-step climbs F
                assert b["log_lik"] >= a["log_lik"] - 1e-12


def _hessian(f, x, h=1e-4):
    x = np.asarray(x, float)
    n = x.size
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j)
                         + f(x - e_i - e_j)) / (4 * h * h)
    return out


def test_fixed_points_two_maxima_their_mirror_images_and_a_saddle():
    def ll(x):
        return es.e_step(H, x[:2], x[2])[1]

    best = es.fixed_point(H, (2 / 3, 1 / 3), 0.5)
    other = es.fixed_point(H, (0.9, 0.5), 0.5)
    sym = es.fixed_point(H, (0.4, 0.4), 0.5)
    mirror = es.fixed_point(H, (1 / 3, 2 / 3), 0.5)
    assert best["log_lik"] > other["log_lik"] + 0.5
    for r in (best, other):
        x = [*r["theta"], r["phi"]]
        assert np.linalg.eigvalsh(_hessian(ll, x)).max() < 0  # a local maximum
    np.testing.assert_allclose(mirror["theta"], best["theta"][::-1], atol=1e-6)
    assert abs(mirror["phi"] - (1 - best["phi"])) < 1e-6
    np.testing.assert_allclose(sym["theta"], H.mean() / T, atol=1e-12)
    eig = np.linalg.eigvalsh(_hessian(ll, [*sym["theta"], 0.5]))
    assert eig.min() < 0 < eig.max()  # a saddle
    grid = es.basin_map(H, 0.5, 7)
    ends = {tuple(np.round(t, 3)) for t in grid["theta"].reshape(-1, 2)}
    assert len(ends) >= 5  # two maxima, their mirror images, and the diagonal


def test_explorer_object_gives_both_twins():
    ex = EMStepsExplorer(step=3)
    assert [s["phase"] for s in ex.states()] == ["start", "E", "M", "E"]
    with pytest.raises(ValueError, match="bias1"):
        EMStepsExplorer(bias1=0.99)
    with pytest.raises(TypeError, match="theta3"):
        EMStepsExplorer(theta3=0.5)
    bundle = ex._repr_mimebundle_()
    assert "mountEMStepsExplorer" in bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    ex.widget().close()


def test_explorer_starts_exactly_where_the_worked_example_does():
    """Chapter 3's two coins start at (2/3, 1/3): the explorer keeps the start exactly (its
    sliders move in steps of 0.01 but do not round a start they did not set), so its first
    E-step shows the worked example's log-likelihood, -12.5219, not 0.67/0.33's -12.4762."""
    ex = EMStepsExplorer(bias1=2 / 3, bias2=1 / 3, phi=0.5, step=1)
    assert ex.settings["bias1"] == 2 / 3 and ex.settings["bias2"] == 1 / 3
    assert round(ex.states()[-1]["log_lik"], 4) == -12.5219
    assert ex.settings == EMStepsExplorer(step=1).settings  # the default start
    with pytest.warns(DeprecationWarning, match="bias1"):
        old = EMStepsExplorer(theta1=2 / 3, theta2=1 / 3, step=1)
    assert old.settings == ex.settings


READ = """(el) => {
  const r = el.crowdlearn.result, s = el.crowdlearn.state;
  return {state: {...s}, updates: el.crowdlearn.updates, maxStep: r.maxStep,
    current: r.current, nIter: r.fixed.nIter, fixedTheta: r.fixed.theta,
    ends: r.classes.ends, stepMax: Number(el.querySelector('input[data-key="step"]').max),
    next: el.querySelector('button[data-act="next"]').textContent,
    nBars: el.querySelectorAll('rect[data-method]').length,
    nPath: el.querySelectorAll('.cl-panel circle[r="2"]').length,
    summary: el.querySelector('.cl-summary').textContent};
}"""


def _check(got):
    s = got["state"]
    want = es.half_steps(s["heads"], (s["theta1"], s["theta2"]), s["phi"], s["step"],
                         s["tosses"])[-1]
    cur = got["current"]
    assert cur["phase"] == want["phase"] and cur["t"] == want["t"]
    np.testing.assert_allclose(cur["theta"], want["theta"], atol=1e-9)
    np.testing.assert_allclose(cur["q"], want["q"], atol=1e-9)
    assert abs(cur["logLik"] - want["log_lik"]) < 1e-9
    assert abs(cur["freeEnergy"] - want["free_energy"]) < 1e-9
    full = es.fixed_point(s["heads"], (s["theta1"], s["theta2"]), s["phi"])
    assert abs(got["nIter"] - full["n_iter"]) <= 1
    assert got["stepMax"] == got["maxStep"] == 2 * got["nIter"]
    assert got["nBars"] == len(s["heads"])
    assert got["next"].startswith("E-step" if s["step"] % 2 == 0 else "M-step")


def _move_every_control(page, el):
    def slide(key, value):
        el.eval_on_selector(f'input[data-key="{key}"]',
                            "(i, v) => { i.value = v; i.dispatchEvent(new Event('input', "
                            "{bubbles: true})); }", str(value))
        return el.evaluate(READ)

    def click(act):
        el.eval_on_selector(f'button[data-act="{act}"]', "(b) => b.click()")
        return el.evaluate(READ)

    got = el.evaluate(READ)
    n0 = got["updates"]
    _check(got)
    step0 = got["state"]["step"]
    got = click("next")
    assert got["state"]["step"] == step0 + 1
    _check(got)
    got = click("back")
    assert got["state"]["step"] == step0
    got = click("end")
    assert got["state"]["step"] == got["maxStep"]
    _check(got)
    assert "best fixed point" in got["summary"]
    got = slide("step", 1)
    assert got["state"]["step"] == 1 and got["current"]["phase"] == "E"
    assert abs(got["current"]["logLik"] - got["current"]["freeEnergy"]) < 1e-12
    _check(got)
    for key, value in (("theta1", 0.9), ("theta2", 0.5), ("phi", 0.4)):
        got = slide(key, value)
        assert got["state"][key] == value
        _check(got)
    got = click("end")
    assert "worse local maximum" in got["summary"]
    _check(got)
    got = click("swap")
    assert (got["state"]["theta1"], got["state"]["theta2"], got["state"]["phi"]) == \
        (0.5, 0.9, 0.6)
    _check(got)
    got = click("symmetric")
    assert got["state"]["theta1"] == got["state"]["theta2"] == 0.5
    got = click("end")
    assert "saddle" in got["summary"]
    _check(got)
    assert abs(got["fixedTheta"][0] - got["fixedTheta"][1]) < 1e-12
    assert got["updates"] == n0 + 11


def _open_and_move(url: str, root: Path, start=None):
    exe = chromium_or_skip()
    playwright = pytest.importorskip("playwright.sync_api")
    foreign, errors = [], []
    with serve(root) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        for width in (390, 1280):
            page = watched_page(browser, width, foreign, errors)
            page.goto(f"{base}/{url}", wait_until="load")
            els = page.query_selector_all(".cl-em-steps-explorer")
            assert els, f"no two-coin explorer in {url}"
            if width == 390:
                assert page.evaluate("() => document.documentElement.scrollWidth") <= 391
            else:
                if start is not None:  # where the page's first explorer starts, exactly
                    got = els[0].evaluate(READ)
                    assert (got["state"]["theta1"], got["state"]["theta2"]) == start[:2]
                    assert round(got["current"]["logLik"], 4) == start[2]
                for el in els:
                    _move_every_control(page, el)
            page.close()
        browser.close()
    assert not errors, errors
    assert not foreign, foreign[:5]


@pytest.mark.browser
def test_html_twin_moves_through_every_control():
    with tempfile.TemporaryDirectory() as tmp:
        html = live_em_steps_html(step=3)
        (Path(tmp) / "ex.html").write_text(
            '<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" '
            'content="width=device-width, initial-scale=1"></head><body>'
            f"{html}</body></html>", encoding="utf-8")
        _open_and_move("ex.html", Path(tmp))


CHAPTERS = ["book/03_em.html"]


@pytest.mark.browser
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_explorer_moves_through_every_control(chapter):
    chromium_or_skip(HTML / chapter, why=" and the built book (python3 run.py book)")
    _open_and_move(chapter, HTML, start=(2 / 3, 1 / 3, -12.5219))
