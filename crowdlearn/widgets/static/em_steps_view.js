// em_steps_view.js -- chapter 3's explorer drawn in the page (SVG): EM on the two-coin
// mixture, one half-step at a time.
//
// Bundled with what it imports into bundle_em_steps.js (tools/build_widgets.mjs), the
// module of crowdlearn.widgets.EMStepsExplorer. The
// controls set the start (two biases, the probability of coin 1) and how many half-steps
// have been taken; three panels show the parameters' path over the basins of EM's fixed
// points, the log-likelihood and the free energy after every half-step, and q_i(coin 1).

import { coinBasins, coinClassify, coinFixedPoint, coinHalfSteps } from "./em_steps_engine.js";
import { accuracyBars, fmt, H, M, onSlider, panel, slider, W, yAxis } from "./_common.js";
import { explorer } from "./_widget.js";

const COIN_COLORS = ["#0072B2", "#56B4E9", "#D55E00", "#E69F00", "#009E73", "#CC79A7",
                     "#F0E442", "#000000"];
const COIN_SYMMETRIC = "#999999";
const COIN_LL = "#0072B2", COIN_F = "#D55E00";

function coinEndColor(ends, k) {
  if (ends[k].symmetric) return COIN_SYMMETRIC;
  let c = 0;
  for (let j = 0; j < k; j++) if (!ends[j].symmetric) c++;
  return COIN_COLORS[c % COIN_COLORS.length];
}

function coinPlane(s, basins, classes, fixed, shown) {
  const S = 300, L = 44, R = 10, T = 30, B = 40;
  const x = (v) => L + v * (S - L - R), y = (v) => S - B - v * (S - T - B);
  const n = basins.grid.length, cell = (S - L - R) * (0.9 / (n - 1)) + 0.5;
  let body = "";
  basins.runs.forEach((r, k) => {
    const a = basins.grid[Math.floor(k / n)], b = basins.grid[k % n];
    body += `<rect x="${x(a) - cell / 2}" y="${y(b) - cell / 2}" width="${cell}" height="${cell}" ` +
      `fill="${coinEndColor(classes.ends, classes.label[k])}" fill-opacity="0.3" ` +
      `shape-rendering="crispEdges"/>`;
  });
  for (const v of [0, 0.5, 1]) {
    body += `<text x="${x(v)}" y="${S - B + 15}" text-anchor="middle">${v}</text>` +
      `<text x="${L - 5}" y="${y(v) + 4}" text-anchor="end">${v}</text>`;
  }
  body += `<rect x="${x(0)}" y="${y(1)}" width="${x(1) - x(0)}" height="${y(0) - y(1)}" ` +
    `fill="none" class="cl-axis"/>` +
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" class="cl-chance"/>`;
  classes.ends.forEach((e, k) => {
    body += `<path d="M ${x(e.theta[0])} ${y(e.theta[1]) - 7} l 6 11 l -12 0 z" ` +
      `fill="${coinEndColor(classes.ends, k)}" stroke="#000" stroke-width="0.8" ` +
      `class="cl-end" data-loglik="${e.logLik}"/>`;
  });
  const path = fixed.path.slice(0, shown + 1);
  const pts = path.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
  const now = path[path.length - 1];
  body += `<polyline points="${pts}" fill="none" stroke="#000" stroke-width="1.5"/>` +
    path.map((p) => `<circle cx="${x(p[0])}" cy="${y(p[1])}" r="2" fill="#000"/>`).join("") +
    `<circle cx="${x(path[0][0])}" cy="${y(path[0][1])}" r="5" fill="none" stroke="#000" ` +
    `stroke-width="1.5"/><circle cx="${x(now[0])}" cy="${y(now[1])}" r="5" fill="#000" ` +
    `class="cl-now"/>`;
  return `<svg class="cl-panel" viewBox="0 0 ${S} ${S}" role="img" ` +
    `aria-label="path of the two biases over the basins of EM's fixed points">` +
    `<text x="${S / 2}" y="18" text-anchor="middle" class="cl-title">Biases: path and basins</text>` +
    body + `<text x="${(L + S - R) / 2}" y="${S - 6}" text-anchor="middle">P(heads | coin 1)</text>` +
    `<text transform="translate(12 ${(T + S - B) / 2}) rotate(-90)" text-anchor="middle" ` +
    `class="cl-small">P(heads | coin 2)</text></svg>`;
}

function coinBound(all) {
  // the last (at most) eight half-steps, so that the touch and the gap stay visible; the
  // start has no free energy drawn (its q is only a uniform placeholder)
  const first = Math.max(0, all.length - 8), states = all.slice(first);
  const hasF = (st) => st.phase !== "start";
  const ll = states.map((st) => st.logLik), f = states.filter(hasF).map((st) => st.freeEnergy);
  let lo = Math.min(...ll, ...f), hi = Math.max(...ll, ...f);
  if (!(hi - lo > 1e-9 * Math.max(1, Math.abs(hi)))) { lo -= 0.01; hi += 0.01; }
  const pad = (hi - lo) * 0.1;
  const digits = hi - lo < 0.02 ? 4 : hi - lo < 0.2 ? 3 : 2;
  const { s, y } = yAxis(lo - pad, hi + pad * 2.5, 4, (v) => fmt(v, digits).replace("-", "\u2212"),
    "cl-tick");
  const n = Math.max(states.length - 1, 4);
  const x = (k) => M.l + 10 + (k / n) * (W - M.l - M.r - 20);
  const line = (pts, color, dash) =>
    `<polyline points="${pts.map(([k, v]) => `${x(k).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}" ` +
    `fill="none" stroke="${color}" stroke-width="1.8"${dash ? ' stroke-dasharray="5 3"' : ""}/>`;
  const fPts = [];
  states.forEach((st, k) => { if (hasF(st)) fPts.push([k, st.freeEnergy]); });
  let body = s + line(ll.map((v, k) => [k, v]), COIN_LL, false) + line(fPts, COIN_F, true);
  states.forEach((st, k) => {
    body += `<circle cx="${x(k)}" cy="${y(st.logLik)}" r="3" fill="${COIN_LL}" class="cl-ll"/>`;
    if (hasF(st)) {
      body += `<rect x="${x(k) - 2.5}" y="${y(st.freeEnergy) - 2.5}" width="5" height="5" ` +
        `fill="${COIN_F}" class="cl-f"/>`;
    }
    const name = st.phase === "start" ? "0" : `${st.phase}${st.t}`;
    body += `<text x="${x(k)}" y="${H - M.b + 15}" text-anchor="middle" class="cl-small">${name}</text>`;
  });
  body += `<line x1="${M.l + 8}" x2="${M.l + 26}" y1="${M.t + 8}" y2="${M.t + 8}" stroke="${COIN_LL}" ` +
    `stroke-width="2"/><text x="${M.l + 30}" y="${M.t + 12}" class="cl-small">ℓ(θ)</text>` +
    `<line x1="${M.l + 78}" x2="${M.l + 96}" y1="${M.t + 8}" y2="${M.t + 8}" stroke="${COIN_F}" ` +
    `stroke-width="2" stroke-dasharray="5 3"/>` +
    `<text x="${M.l + 100}" y="${M.t + 12}" class="cl-small">F(q, θ)</text>`;
  return panel("ℓ(θ) and its bound F(q, θ)", body, "half-step (E or M, iteration t)", "");
}

function coinPosteriors(st, heads, tosses) {
  const bars = st.q.map((row, i) => [`${heads[i]}/${tosses}`, row[0], "#0072B2"]);
  const { body } = accuracyBars(bars, { at: 0.15, width: 0.7, mid: 0.35 });
  return panel(st.phase === "start" ? "q_i(coin 1): uniform start" : "q_i(coin 1) of each item",
               body, "heads in the batch", "q_i(coin 1)");
}

/** Build the explorer inside `el` for `init` (the Python explorer's settings). */
export function mountEMStepsExplorer(el, init, onUpdate) {
  const state = { theta1: init.theta1, theta2: init.theta2, phi: init.phi, step: init.step,
                  heads: init.heads.slice(), tosses: init.tosses, nGrid: init.nGrid,
                  tol: init.tol, maxIter: init.maxIter };
  const opts = { tol: state.tol, maxIter: state.maxIter };
  const button = (act, text) => `<button type="button" data-act="${act}">${text}</button>`;
  el.classList.add("cl-explorer", "cl-em-steps-explorer");
  el.innerHTML =
    `<div class="cl-controls"><fieldset><legend>Start θ⁰</legend>` +
    slider("P(heads | coin 1)", 0.05, 0.95, 0.01, state.theta1, "theta1", undefined,
           fmt(state.theta1, 2)) +
    slider("P(heads | coin 2)", 0.05, 0.95, 0.01, state.theta2, "theta2", undefined,
           fmt(state.theta2, 2)) +
    slider("P(coin 1) = φ₁", 0.05, 0.95, 0.01, state.phi, "phi", undefined, fmt(state.phi, 2)) +
    `<div class="cl-row">${button("symmetric", "symmetric start")}` +
    `${button("swap", "swap the coins")}</div>` +
    `</fieldset><fieldset><legend>Steps</legend>` +
    slider("half-steps", 0, 2, 1, state.step, "step") +
    `<div class="cl-row">${button("back", "◀ back")}${button("next", "E-step ▶")}` +
    `${button("end", "to the fixed point ▶▶")}</div>` +
    `</fieldset></div><p class="cl-summary" aria-live="polite"></p><div class="cl-panels"></div>`;
  const summary = el.querySelector(".cl-summary"), panels = el.querySelector(".cl-panels");
  const stepInput = el.querySelector('input[data-key="step"]');
  const input = (key) => el.querySelector(`input[data-key="${key}"]`);
  el.crowdlearn = { state, updates: 0, result: null, lastMs: 0 };
  let startKey = "", fixed = null, states = null, basins = null, classes = null, basinKey = "";

  function update() {
    const t0 = performance.now();
    const key = `${state.theta1},${state.theta2},${state.phi}`;
    if (key !== startKey) {
      startKey = key;
      fixed = coinFixedPoint(state.heads, state.tosses, [state.theta1, state.theta2], state.phi, opts);
      states = coinHalfSteps(state.heads, state.tosses, [state.theta1, state.theta2], state.phi,
                             2 * fixed.nIter);
      stepInput.max = String(2 * fixed.nIter);
    }
    if (String(state.phi) !== basinKey) {
      basinKey = String(state.phi);
      basins = coinBasins(state.heads, state.tosses, state.phi, state.nGrid, opts);
      classes = coinClassify(basins.runs);
    }
    state.step = Math.max(0, Math.min(state.step, 2 * fixed.nIter));
    stepInput.value = String(state.step);
    stepInput.nextElementSibling.textContent = String(state.step);
    const st = states[state.step];
    const next = state.step % 2 === 0 ? "E-step ▶" : "M-step ▶";
    el.querySelector('button[data-act="next"]').textContent = next;
    const gap = st.logLik - st.freeEnergy;
    const end = classes.ends.findIndex((e) => Math.abs(e.theta[0] - fixed.theta[0]) < 0.005 &&
                                              Math.abs(e.theta[1] - fixed.theta[1]) < 0.005);
    const where = end < 0 ? "" : classes.ends[end].symmetric
      ? " — a symmetric start: both coins stay equal, EM is stuck on the diagonal (a saddle)"
      : (end <= 1 ? " — the best fixed point found" : " — a worse local maximum");
    const said = st.phase === "start" ? "Start (q uniform)"
      : `After the ${st.phase}-step of iteration t = ${st.t}`;
    summary.innerHTML = `${said}: P(heads | coin 1) <b>${fmt(st.theta[0])}</b>, ` +
      `P(heads | coin 2) <b>${fmt(st.theta[1])}</b>, φ₁ <b>${fmt(st.phi)}</b> · ` +
      `ℓ(θ) ${fmt(st.logLik, 4)}, F(q, θ) ${fmt(st.freeEnergy, 4)}, ` +
      `gap (KL) ${gap < 5e-13 ? "0" : gap.toExponential(2)} · ` +
      `EM ends after ${fixed.nIter} iterations at ℓ = ${fmt(fixed.logLik, 4)}${where}`;
    panels.innerHTML = coinPlane(state, basins, classes, fixed, Math.floor(state.step / 2)) +
      coinBound(states.slice(0, state.step + 1)) + coinPosteriors(st, state.heads, state.tosses);
    el.crowdlearn.result = { states: states.slice(0, state.step + 1), current: st, fixed,
                             basins, classes, maxStep: 2 * fixed.nIter };
    el.crowdlearn.updates += 1;
    el.crowdlearn.lastMs = performance.now() - t0;
    if (onUpdate) {
      onUpdate({ settings: { ...state, heads: state.heads.slice() }, step: state.step,
                 phase: st.phase, t: st.t, theta: st.theta, phi: st.phi, q: st.q,
                 logLik: st.logLik, freeEnergy: st.freeEnergy, fixedTheta: fixed.theta,
                 fixedPhi: fixed.phi, fixedLogLik: fixed.logLik, nIter: fixed.nIter,
                 updates: el.crowdlearn.updates });
    }
  }

  function setStart(theta1, theta2, phi) {
    Object.assign(state, { theta1, theta2, phi });
    for (const k of ["theta1", "theta2", "phi"]) {
      input(k).value = String(state[k]);
      input(k).nextElementSibling.textContent = fmt(state[k], 2);
    }
  }

  el.addEventListener("click", (event) => {
    const b = event.target.closest ? event.target.closest("button[data-act]") : null;
    if (!b) return;
    const act = b.dataset.act;
    if (act === "back") state.step -= 1;
    else if (act === "next") state.step += 1;
    else if (act === "end") state.step = 2 * fixed.nIter;
    else if (act === "symmetric") setStart(state.theta1, state.theta1, state.phi);
    else if (act === "swap") {
      setStart(state.theta2, state.theta1, Math.round((1 - state.phi) * 100) / 100);
    }
    update();
  });
  onSlider(el, state, "", update);
  update();
  return el.crowdlearn;
}

// the module of the explorer's anywidget and of its text/html twin (see _widget.js); the name
// is kept by the bundler, and the twin calls crowdlearnExplorer.mount
const crowdlearnExplorer = explorer(mountEMStepsExplorer);
export default crowdlearnExplorer;
