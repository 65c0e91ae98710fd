// annotators_view.js -- chapter 8's explorer drawn in the page (SVG), no kernel needed.
//
// Bundled with what it imports into bundle_annotators.js (tools/build_widgets.mjs), the
// module of crowdlearn.widgets.annotators.LogisticAnnotatorsExplorer. Every control change re-simulates the crowd, refits majority vote,
// Dawid-Skene and the logistic-annotator model, and redraws: one small panel per annotator
// (its true reliability curve along x1, the logistic model's estimate, Dawid-Skene's single
// number), the accuracy of each method, and the logistic model's objective per EM
// iteration. Panels wrap on a narrow screen.

import { compareAnnotators } from "./annotators_em.js";
import {
  accuracyBars, activeEntries, crowdArrays, fmt, M, objectivePanel, onSlider, panel,
  recordUpdate, slider, W,
} from "./_common.js";
import { explorer } from "./_widget.js";

const LA_COLORS = { mv: "#E69F00", ds: "#0072B2", la: "#009E73", oracle: "#7F7F7F",
                    truth: "#000000", chance: "#777777" };

function laSigned(x, d = 2) { return (x >= 0 ? "+" : "\u2212") + Math.abs(x).toFixed(d); }

// one annotator's panel
const CW = 180, CH = 160, CM = { l: 30, r: 8, t: 24, b: 32 };

function drawAnnotator(r, t, slope) {
  const x = (v) => CM.l + ((v + 3) / 6) * (CW - CM.l - CM.r);
  const y = (v) => CH - CM.b - v * (CH - CM.t - CM.b);
  const line = (ys) => r.grid.map((g, k) => `${x(g).toFixed(1)},${y(ys[k]).toFixed(1)}`).join(" ");
  let s = `<svg class="cl-curve" viewBox="0 0 ${CW} ${CH}" role="img" data-annotator="${t + 1}" ` +
    `aria-label="Annotator ${t + 1}: true and estimated probability of a correct label along x1">` +
    `<text x="${CW / 2}" y="15" text-anchor="middle" class="cl-title">annotator ${t + 1}: ` +
    `slope ${laSigned(slope)}</text>`;
  for (const v of [0, 0.5, 1]) {
    s += `<line x1="${CM.l - 3}" x2="${CW - CM.r}" y1="${y(v)}" y2="${y(v)}" ` +
      `class="${v === 0.5 ? "cl-chance" : "cl-grid"}"/>` +
      `<text x="${CM.l - 5}" y="${y(v) + 4}" text-anchor="end">${v}</text>`;
  }
  for (const v of [-2, 0, 2]) {
    s += `<text x="${x(v)}" y="${CH - CM.b + 14}" text-anchor="middle">${v < 0 ? "\u2212" + -v : v}</text>`;
  }
  s += `<text x="${(CM.l + CW - CM.r) / 2}" y="${CH - 3}" text-anchor="middle" class="cl-small">` +
    `feature x\u2081</text>`;
  const ds = r.dsReliability[t];
  s += `<line x1="${x(-3)}" x2="${x(3)}" y1="${y(ds)}" y2="${y(ds)}" stroke="${LA_COLORS.ds}" ` +
    `stroke-width="2" stroke-dasharray="2 3" data-series="ds" data-value="${ds}"/>` +
    `<polyline points="${line(r.trueEta[t])}" fill="none" stroke="${LA_COLORS.truth}" ` +
    `stroke-width="1.6" stroke-dasharray="6 4" data-series="truth"/>` +
    `<polyline points="${line(r.estimatedEta[t])}" fill="none" stroke="${LA_COLORS.la}" ` +
    `stroke-width="2.4" data-series="la"/></svg>`;
  return s;
}

// the wider panels (_common.js's, wide here): accuracy bars and the objective per iteration
const WIDE = { cls: "cl-panel cl-wide", labelX: 14 };

function drawMethodAccuracy(r) {
  const bars = [["vote", r.mvAccuracy, LA_COLORS.mv], ["D\u2013S", r.dsAccuracy, LA_COLORS.ds],
                ["logistic", r.laAccuracy, LA_COLORS.la],
                ["Bayes", r.oracleAccuracy, LA_COLORS.oracle]];
  const { body, y } = accuracyBars(bars, { at: 0.15, width: 0.7, mid: 0.35,
                                           valueClass: ' class="cl-small"' });
  const chance = `<line x1="${M.l}" x2="${W - M.r}" y1="${y(0.5)}" y2="${y(0.5)}" ` +
    `class="cl-chance"/>`;
  return panel("Accuracy against the truth", body + chance, "", "accuracy", WIDE);
}

function drawLaObjective(r) {
  return objectivePanel(r.la.history, LA_COLORS.la, WIDE, (text) => text.replace("-", "\u2212"));
}

const LA_LEGEND =
  `<svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" y2="5" ` +
  `stroke="${LA_COLORS.truth}" stroke-width="1.6" stroke-dasharray="6 4"/></svg> true reliability ` +
  `<svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" y2="5" ` +
  `stroke="${LA_COLORS.la}" stroke-width="2.4"/></svg> logistic annotators ` +
  `<svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" y2="5" ` +
  `stroke="${LA_COLORS.ds}" stroke-width="2" stroke-dasharray="2 3"/></svg> Dawid\u2013Skene (one number)`;

/** Build chapter 8's explorer inside `el` and draw it for `init` (the Python explorer's
 * settings). `onUpdate(payload)`, if given, receives the crowd and the results after every
 * redraw (the anywidget front-end sends them to the kernel). */
export function mountAnnotatorsExplorer(el, init, onUpdate) {
  const state = {
    nAnnotators: init.nAnnotators, slopes: init.slopes.slice(), gamma: init.gamma,
    missing: init.missing, seed: init.seed, nItems: init.nItems, coef: init.coef.slice(),
    intercept: init.intercept, l2: init.l2, maxIter: init.maxIter, tol: init.tol,
  };
  const maxAnnotators = state.slopes.length;
  el.classList.add("cl-explorer", "cl-annotators-explorer");
  el.innerHTML =
    `<div class="cl-controls"><fieldset><legend>Slope of each annotator's reliability along ` +
    `x\u2081</legend>` +
    slider("annotators", 2, maxAnnotators, 1, state.nAnnotators, "nAnnotators") +
    state.slopes.map((w, t) => slider(`annotator ${t + 1}`, -5, 5, 0.25, w, "slopes", t,
                                        laSigned(w))).join("") +
    `</fieldset><fieldset><legend>The crowd</legend>` +
    slider("\u03b3 (base \u03c3(\u2212\u03b3))", -3, 3, 0.1, state.gamma, "gamma",
             undefined, laSigned(state.gamma, 1)) +
    slider("missing fraction", 0, 0.9, 0.05, state.missing, "missing") +
    slider("seed", 0, 99, 1, state.seed, "seed") +
    `</fieldset></div><p class="cl-summary" aria-live="polite"></p>` +
    `<p class="cl-legend">${LA_LEGEND}</p><div class="cl-curves"></div><div class="cl-panels"></div>`;
  const summary = el.querySelector(".cl-summary"), curves = el.querySelector(".cl-curves");
  const panels = el.querySelector(".cl-panels");
  const activeSlopes = activeEntries(el, state, "slopes", "nAnnotators");
  el.crowdlearn = { state, updates: 0, result: null, lastMs: 0 };

  function update() {
    const t0 = performance.now();
    const slopes = activeSlopes();
    const r = compareAnnotators({ slopes, gamma: state.gamma, missing: state.missing,
                                  seed: state.seed, nItems: state.nItems, coef: state.coef,
                                  intercept: state.intercept, l2: state.l2,
                                  maxIter: state.maxIter, tol: state.tol });
    const nLabels = r.crowd.item.length;
    summary.innerHTML = `Majority vote <b>${fmt(r.mvAccuracy)}</b>, Dawid\u2013Skene ` +
      `<b>${fmt(r.dsAccuracy)}</b>, logistic annotators <b>${fmt(r.laAccuracy)}</b>` +
      (r.la.flipped ? " (solution flipped to agree with the vote)" : "") +
      `, Bayes with the true parameters ${fmt(r.oracleAccuracy)} \u00b7 ${nLabels} labels` +
      (r.nUnlabelled ? `, ${r.nUnlabelled} items without a label` : "") +
      ` \u00b7 EM: ${r.la.nIter} iterations` +
      (r.la.converged ? "" : " (stopped at the iteration cap)") + ` \u00b7 computed in your browser`;
    curves.innerHTML = slopes.map((w, t) => drawAnnotator(r, t, w)).join("");
    panels.innerHTML = drawMethodAccuracy(r) + drawLaObjective(r);
    el.dataset.nAnnotators = String(state.nAnnotators);
    recordUpdate(el, r, t0);
    if (onUpdate) {
      onUpdate({
        settings: { ...state, slopes: state.slopes.slice(), coef: state.coef.slice() },
        ...crowdArrays(r.crowd), X: Array.from(r.crowd.X), posterior: Array.from(r.la.posterior),
        history: r.la.history.slice(), nIter: r.la.nIter, converged: r.la.converged,
        flipped: r.la.flipped, dsPosterior: Array.from(r.ds.posterior), dsNIter: r.ds.nIter,
        mvPrediction: Array.from(r.mv.pred), mvTied: Array.from(r.mv.tied),
        mvAccuracy: r.mvAccuracy, dsAccuracy: r.dsAccuracy, laAccuracy: r.laAccuracy,
        oracleAccuracy: r.oracleAccuracy, dsConverged: r.ds.converged,
        laCoef: Array.from(r.la.coef), laIntercept: r.la.intercept,
        laReliabilityCoef: Array.from(r.la.reliabilityCoef),
        laReliabilityIntercept: Array.from(r.la.reliabilityIntercept),
        dsReliability: Array.from(r.dsReliability), updates: el.crowdlearn.updates,
        ms: el.crowdlearn.lastMs,
      });
    }
  }

  onSlider(el, state, "slopes", update, (key, v, text) =>
    key === "slopes" ? laSigned(v) : key === "gamma" ? laSigned(v, 1) : text);
  update();
  return el.crowdlearn;
}

// the module of the explorer's anywidget and of its text/html twin (see _widget.js); the name
// is kept by the bundler, and the twin calls crowdlearnExplorer.mount
const crowdlearnExplorer = explorer(mountAnnotatorsExplorer);
export default crowdlearnExplorer;
