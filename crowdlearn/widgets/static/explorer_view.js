// explorer_view.js -- the Dawid-Skene explorer drawn in the page (SVG), no kernel needed.
//
// Bundled with what it imports into bundle_dawid_skene.js (tools/build_widgets.mjs), the
// module of crowdlearn.widgets.DawidSkeneExplorer. Every control change
// re-simulates the crowd, refits majority vote and Dawid-Skene EM, and redraws three small
// SVG panels: accuracy of the vote, EM and the Bayes rule; each expert's true and estimated
// error rate; the EM objective per iteration. The panels wrap onto separate lines on a
// narrow screen.

import { compare } from "./crowd_em.js";
import {
  accuracyBars, activeEntries, crowdArrays, fmt, H, M, objectivePanel, onSlider, panel,
  recordUpdate, slider, W, yAxis,
} from "./_common.js";
import { explorer } from "./_widget.js";

const COLORS = { mv: "#E69F00", em: "#0072B2", oracle: "#7F7F7F", truth: "#C8C8C8" };

function drawAccuracy(r, K) {
  const bars = [["vote", r.mvAccuracy, COLORS.mv], ["EM", r.emAccuracy, COLORS.em],
                ["Bayes", r.oracleAccuracy, COLORS.oracle]];
  const { body, y } = accuracyBars(bars, { at: 0.18, width: 0.64, mid: 0.32 });
  const chance = 1 / K;
  const line = `<line x1="${M.l}" x2="${W - M.r}" y1="${y(chance)}" y2="${y(chance)}" ` +
    `class="cl-chance"/><text x="${W - M.r}" y="${y(chance) - 3}" text-anchor="end" ` +
    `class="cl-small">chance</text>`;
  return panel("Accuracy against the truth", body + line, "", "accuracy");
}

function drawErrorRates(r) {
  const J = r.trueErrorRates.length;
  const { s, y } = yAxis(0, 1, 4, (v) => fmt(v, 2));
  const step = (W - M.l - M.r) / J;
  let body = s;
  for (let j = 0; j < J; j++) {
    const cx = M.l + (j + 0.5) * step;
    const t = r.trueErrorRates[j], e = r.estimatedErrorRates[j];
    body += `<g class="cl-expert" data-expert="${j + 1}">` +
      `<rect x="${cx - step * 0.3}" y="${y(t)}" width="${step * 0.6}" height="${y(0) - y(t)}" ` +
      `fill="${COLORS.truth}"/><circle cx="${cx}" cy="${y(e)}" r="4.5" fill="${COLORS.em}"/>` +
      `<text x="${cx}" y="${H - M.b + 17}" text-anchor="middle">${j + 1}</text></g>`;
  }
  body += `<rect x="${M.l + 6}" y="${M.t + 2}" width="9" height="9" fill="${COLORS.truth}"/>` +
    `<text x="${M.l + 19}" y="${M.t + 10}" class="cl-small">true</text>` +
    `<circle cx="${M.l + 60}" cy="${M.t + 6.5}" r="4" fill="${COLORS.em}"/>` +
    `<text x="${M.l + 68}" y="${M.t + 10}" class="cl-small">EM estimate</text>`;
  return panel("Each expert's error rate", body, "expert", "error rate");
}

/** The warnings under the numbers; the same as crowdlearn.widgets.fit_warnings. */
export function fitWarnings(r, K, n) {
  const out = [], gap = r.mvAccuracy - r.emAccuracy;
  if (gap > 0) {
    const a = r.mvAccuracy, b = r.emAccuracy;
    const se = Math.sqrt((a * (1 - a) + b * (1 - b) + 1 / n) / n);
    if (gap <= 2 * se) {
      out.push(`EM is slightly below the majority vote: ${Math.round(gap * n)} of ${n} ` +
               "items, a gap chance alone gives two equally good methods");
    } else {
      out.push("EM is below the majority vote: with few or weak experts its estimated " +
               "confusion matrices can fit noise or a degenerate solution");
    }
  }
  const chance = 1 - 1 / K, rates = Array.from(r.estimatedErrorRates);
  if (rates.length && rates.every((e) => e >= chance - 0.05)) {
    out.push("Degenerate fit: EM rates every expert at chance or worse, so its " +
             "labels say almost nothing about the class in the fitted model");
  }
  return out;
}

function drawObjective(r) {
  return objectivePanel(r.em.history, COLORS.em);
}

/** Build the explorer inside `el` and draw it for `init` (the Python explorer's settings).
 * `onUpdate(payload)`, if given, receives the crowd and the EM results after every redraw
 * (the anywidget front-end sends them to the kernel). */
export function mountDawidSkeneExplorer(el, init, onUpdate) {
  const state = {
    nExperts: init.nExperts, errorRates: init.errorRates.slice(), missing: init.missing,
    alpha: init.alpha, seed: init.seed, nItems: init.nItems, nClasses: init.nClasses,
    maxIter: init.maxIter, tol: init.tol,
  };
  const maxExperts = state.errorRates.length;
  el.classList.add("cl-explorer");
  el.innerHTML =
    `<div class="cl-controls"><fieldset><legend>Crowd and model</legend>` +
    slider("experts", 1, maxExperts, 1, state.nExperts, "nExperts") +
    slider("missing fraction", 0, 0.95, 0.05, state.missing, "missing") +
    slider("pseudo-count α", 0, 5, 0.1, state.alpha, "alpha") +
    slider("seed", 0, 99, 1, state.seed, "seed") +
    `</fieldset><fieldset><legend>Error rate of each expert</legend>` +
    state.errorRates.map((e, j) => slider(`expert ${j + 1}`, 0, 0.9, 0.05, e, "errorRates", j)).join("") +
    `</fieldset></div><p class="cl-summary" aria-live="polite"></p><div class="cl-panels"></div>`;
  const summary = el.querySelector(".cl-summary"), panels = el.querySelector(".cl-panels");
  const activeRates = activeEntries(el, state, "errorRates", "nExperts");
  el.crowdlearn = { state, updates: 0, result: null, lastMs: 0 };

  function update() {
    const t0 = performance.now();
    const err = activeRates();
    const r = compare({ errorRates: err, nItems: state.nItems, nClasses: state.nClasses,
                        missing: state.missing, alpha: state.alpha, seed: state.seed,
                        maxIter: state.maxIter, tol: state.tol });
    const nLabels = r.crowd.item.length;
    summary.innerHTML = `Majority vote <b>${fmt(r.mvAccuracy)}</b>, Dawid–Skene EM ` +
      `<b>${fmt(r.emAccuracy)}</b>, Bayes rule with the true error rates ${fmt(r.oracleAccuracy)}` +
      ` · ${nLabels} labels · EM: ${r.em.nIter} iterations` +
      (r.em.converged ? "" : " (stopped at the iteration cap)") +
      ` · computed in your browser` +
      fitWarnings(r, state.nClasses, state.nItems).map((w) => `<br><span class="cl-warning">⚠ ${w}</span>`).join("");
    panels.innerHTML = drawAccuracy(r, state.nClasses) + drawErrorRates(r) + drawObjective(r);
    el.dataset.nExperts = String(state.nExperts);
    recordUpdate(el, r, t0);
    if (onUpdate) {
      onUpdate({
        settings: { ...state, errorRates: state.errorRates.slice() }, ...crowdArrays(r.crowd),
        posterior: Array.from(r.em.posterior), history: r.em.history.slice(),
        nIter: r.em.nIter, converged: r.em.converged, mvAccuracy: r.mvAccuracy,
        emAccuracy: r.emAccuracy, oracleAccuracy: r.oracleAccuracy,
        classPrior: Array.from(r.em.classPrior), confusion: Array.from(r.em.confusion),
        trueErrorRates: Array.from(r.trueErrorRates),
        estimatedErrorRates: Array.from(r.estimatedErrorRates),
        updates: el.crowdlearn.updates, ms: el.crowdlearn.lastMs,
      });
    }
  }

  onSlider(el, state, "errorRates", update);
  update();
  return el.crowdlearn;
}

// the module of the explorer's anywidget and of its text/html twin (see _widget.js); the name
// is kept by the bundler, and the twin calls crowdlearnExplorer.mount
const crowdlearnExplorer = explorer(mountDawidSkeneExplorer);
export default crowdlearnExplorer;
