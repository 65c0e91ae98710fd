"""Chapter 3's browser-side EM (crowdlearn/widgets/static/em_steps_engine.js) gives the
numbers of :mod:`crowdlearn.widgets.em_steps`, to 1e-9.

For several starts (the chapter's, symmetric ones, swapped coins, other data) the engine's
half-steps (parameters, posteriors, log-likelihood and free energy after every E- and
M-step), its run to the fixed point and its map of basins are compared with the numpy
functions, which ``tests/js/test_em_steps_explorer.py`` checks against the package and brute
force. Run in Node and, as the page runs it, in headless Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.widgets import em_steps as es

from support import CHROMIUM_ARGS, chromium_or_skip, run_node_module, serve

STATIC = Path(cl.__file__).parent / "widgets" / "static"
ENGINE = STATIC / "em_steps_engine.js"

STARTS = [
    dict(heads=list(es.HEADS), tosses=10, theta=[2 / 3, 1 / 3], phi=0.5),
    dict(heads=list(es.HEADS), tosses=10, theta=[0.5, 0.9], phi=0.5),
    dict(heads=list(es.HEADS), tosses=10, theta=[0.9, 0.5], phi=0.5),
    dict(heads=list(es.HEADS), tosses=10, theta=[0.4, 0.4], phi=0.3),
    dict(heads=list(es.HEADS), tosses=10, theta=[0.05, 0.95], phi=0.05),
    dict(heads=list(es.HEADS), tosses=10, theta=[0.95, 0.94], phi=0.95),
    dict(heads=[5, 9, 8, 4, 7], tosses=10, theta=[0.6, 0.5], phi=0.5),
    dict(heads=[0, 3, 3, 20, 17, 1], tosses=20, theta=[0.2, 0.7], phi=0.6),
]
N_HALF = 30

DRIVER = """
import * as em from %s;
const starts = JSON.parse(%s);
const out = starts.map((s) => ({
  half: em.coinHalfSteps(s.heads, s.tosses, s.theta, s.phi, %d),
  fixed: em.coinFixedPoint(s.heads, s.tosses, s.theta, s.phi),
  fixedShort: em.coinFixedPoint(s.heads, s.tosses, s.theta, s.phi, { tol: 0, maxIter: 7 }),
}));
const basins = em.coinBasins(%s, 10, 0.5, 7);
const classes = em.coinClassify(basins.runs);
"""


def _script(module: str) -> str:
    return DRIVER % (module, json.dumps(json.dumps(STARTS)), N_HALF, json.dumps(list(es.HEADS)))


def check(got: dict, basins: dict, classes: dict) -> None:
    for s, g in zip(STARTS, got):
        want = es.half_steps(s["heads"], s["theta"], s["phi"], N_HALF, s["tosses"])
        assert len(g["half"]) == len(want) == N_HALF + 1
        for a, b in zip(g["half"], want):
            assert a["phase"] == b["phase"] and a["t"] == b["t"], s
            np.testing.assert_allclose(a["theta"], b["theta"], rtol=0, atol=1e-9)
            assert abs(a["phi"] - b["phi"]) < 1e-9
            np.testing.assert_allclose(a["q"], b["q"], rtol=0, atol=1e-9)
            assert abs(a["logLik"] - b["log_lik"]) < 1e-9, s
            assert abs(a["freeEnergy"] - b["free_energy"]) < 1e-9, s
        short = es.fixed_point(s["heads"], s["theta"], s["phi"], tol=0, max_iter=7,
                               tosses=s["tosses"])
        assert g["fixedShort"]["nIter"] == short["n_iter"]
        np.testing.assert_allclose(g["fixedShort"]["path"], short["path"], rtol=0, atol=1e-9)
        full = es.fixed_point(s["heads"], s["theta"], s["phi"], tosses=s["tosses"])
        # the stopping test may fall one step apart on the two sides (rounding)
        assert abs(g["fixed"]["nIter"] - full["n_iter"]) <= 1, s
        assert g["fixed"]["converged"] and full["converged"]
        np.testing.assert_allclose(g["fixed"]["theta"], full["theta"], atol=1e-6)
        assert abs(g["fixed"]["logLik"] - full["log_lik"]) < 1e-9
    grid = es.basin_map(es.HEADS, 0.5, 7)
    np.testing.assert_allclose(basins["grid"], grid["grid"], atol=1e-12)
    ends = np.array([r["theta"] for r in basins["runs"]]).reshape(7, 7, 2)
    np.testing.assert_allclose(ends, grid["theta"], atol=1e-5)
    # the classification: one label per distinct end point, best log-likelihood first
    lab = np.asarray(classes["label"]).reshape(7, 7)
    for k, e in enumerate(classes["ends"]):
        np.testing.assert_allclose(grid["theta"][lab == k], np.tile(e["theta"], ((lab == k).sum(), 1)),
                                   atol=0.006)
        assert e["symmetric"] == (abs(e["theta"][0] - e["theta"][1]) < 0.005)
    lls = [e["logLik"] for e in classes["ends"]]
    assert lls == sorted(lls, reverse=True)


def test_node_engine_agrees_with_numpy():
    out = run_node_module(_script(json.dumps(ENGINE.as_uri())) +
                          "process.stdout.write(JSON.stringify({out, basins, classes}));\n")
    check(out["out"], out["basins"], out["classes"])


def test_chromium_engine_agrees_with_numpy():
    exe = chromium_or_skip()
    playwright = pytest.importorskip("playwright.sync_api")
    with serve(STATIC) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(base + "/")
        body = _script(json.dumps(base + "/em_steps_engine.js"))
        body = body.replace("import * as em from", "const em = await import(")
        body = body.replace(".js\";\n", ".js\");\n", 1)
        out = page.evaluate(f"async () => {{ {body} return {{out, basins, classes}}; }}")
        browser.close()
    check(out["out"], out["basins"], out["classes"])
