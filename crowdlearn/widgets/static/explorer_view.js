// explorer_view.js -- the Dawid-Skene explorer drawn in the page (SVG), no kernel needed.
//
// Concatenated after crowd_em.js into one ES module (crowdlearn.widgets.live_explorer_html
// does it), so `compare` below is crowd_em.js's. Every control change re-simulates the crowd,
// refits majority vote and Dawid-Skene EM, and redraws three small SVG panels: accuracy of
// the vote, EM and the Bayes rule; each expert's true and estimated error rate; the EM
// objective per iteration. The panels wrap onto separate lines on a narrow screen.

const COLORS = { mv: "#E69F00", em: "#0072B2", oracle: "#7F7F7F", truth: "#C8C8C8" };

function fmt(x, d = 3) { return Number(x).toFixed(d); }

function slider(label, min, max, step, value, key, index) {
  const id = `cl-${Math.random().toString(36).slice(2)}`;
  return `<label class="cl-row" for="${id}"><span class="cl-label">${label}</span>` +
    `<input id="${id}" type="range" min="${min}" max="${max}" step="${step}" value="${value}" ` +
    `data-key="${key}"${index === undefined ? "" : ` data-index="${index}"`}>` +
    `<output class="cl-value">${value}</output></label>`;
}

function axisTicks(lo, hi, n) {
  const out = [];
  for (let i = 0; i <= n; i++) out.push(lo + ((hi - lo) * i) / n);
  return out;
}

const W = 300, H = 240, M = { l: 62, r: 10, t: 32, b: 46 };

function panel(title, body, xLabel, yLabel) {
  return `<svg class="cl-panel" viewBox="0 0 ${W} ${H}" role="img" aria-label="${title}">` +
    `<text x="${W / 2}" y="18" text-anchor="middle" class="cl-title">${title}</text>` + body +
    `<text x="${(M.l + W - M.r) / 2}" y="${H - 6}" text-anchor="middle">${xLabel}</text>` +
    `<text transform="translate(12 ${(M.t + H - M.b) / 2}) rotate(-90)" text-anchor="middle" class="cl-small">` +
    `${yLabel}</text></svg>`;
}

function yAxis(lo, hi, n, f) {
  const y = (v) => H - M.b - ((v - lo) / (hi - lo)) * (H - M.t - M.b);
  let s = `<line x1="${M.l}" x2="${M.l}" y1="${M.t}" y2="${H - M.b}" class="cl-axis"/>`;
  for (const v of axisTicks(lo, hi, n)) {
    s += `<line x1="${M.l - 4}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" class="cl-grid"/>` +
      `<text x="${M.l - 6}" y="${y(v) + 4}" text-anchor="end">${f(v)}</text>`;
  }
  return { s, y };
}

function drawAccuracy(r, K) {
  const { s, y } = yAxis(0, 1, 4, (v) => fmt(v, 2));
  const bars = [["vote", r.mvAccuracy, COLORS.mv], ["EM", r.emAccuracy, COLORS.em],
                ["Bayes", r.oracleAccuracy, COLORS.oracle]];
  const bw = (W - M.l - M.r) / 3;
  let body = s;
  bars.forEach(([name, v, c], i) => {
    const x = M.l + i * bw + bw * 0.18;
    body += `<rect x="${x}" y="${y(v)}" width="${bw * 0.64}" height="${y(0) - y(v)}" fill="${c}" ` +
      `data-method="${name}" data-value="${v}"/>` +
      `<text x="${x + bw * 0.32}" y="${y(v) - 4}" text-anchor="middle">${fmt(v)}</text>` +
      `<text x="${x + bw * 0.32}" y="${H - M.b + 17}" text-anchor="middle">${name}</text>`;
  });
  const chance = 1 / K;
  body += `<line x1="${M.l}" x2="${W - M.r}" y1="${y(chance)}" y2="${y(chance)}" ` +
    `class="cl-chance"/><text x="${W - M.r}" y="${y(chance) - 3}" text-anchor="end" ` +
    `class="cl-small">chance</text>`;
  return panel("Accuracy against the truth", body, "", "accuracy");
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

function drawObjective(r) {
  const h = r.em.history;
  let lo = Math.min(...h), hi = Math.max(...h);
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.08;
  lo -= pad; hi += pad;
  const { s, y } = yAxis(lo, hi, 3, (v) => Math.abs(v) >= 1e4 ? v.toExponential(2) : fmt(v, 0));
  const n = Math.max(h.length - 1, 1);
  const x = (i) => M.l + (i / n) * (W - M.l - M.r);
  const pts = h.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  let body = s + `<polyline points="${pts}" fill="none" stroke="${COLORS.em}" stroke-width="2"/>`;
  body += `<text x="${M.l}" y="${H - M.b + 17}" text-anchor="middle">0</text>` +
    `<text x="${W - M.r}" y="${H - M.b + 17}" text-anchor="end">${h.length - 1}</text>`;
  return panel("EM objective per iteration", body, "iteration", "");
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
  const expertRows = [...el.querySelectorAll('input[data-key="errorRates"]')]
    .map((input) => input.closest(".cl-row"));
  el.crowdlearn = { state, updates: 0, result: null, lastMs: 0 };

  function update() {
    const t0 = performance.now();
    expertRows.forEach((row, j) => { row.hidden = j >= state.nExperts; });
    const err = state.errorRates.slice(0, state.nExperts);
    const r = compare({ errorRates: err, nItems: state.nItems, nClasses: state.nClasses,
                        missing: state.missing, alpha: state.alpha, seed: state.seed,
                        maxIter: state.maxIter, tol: state.tol });
    const nLabels = r.crowd.item.length;
    summary.innerHTML = `Majority vote <b>${fmt(r.mvAccuracy)}</b>, Dawid–Skene EM ` +
      `<b>${fmt(r.emAccuracy)}</b>, Bayes rule with the true error rates ${fmt(r.oracleAccuracy)}` +
      ` · ${nLabels} labels · EM: ${r.em.nIter} iterations` +
      (r.em.converged ? "" : " (stopped at the iteration cap)") +
      ` · computed in your browser`;
    panels.innerHTML = drawAccuracy(r, state.nClasses) + drawErrorRates(r) + drawObjective(r);
    el.dataset.nExperts = String(state.nExperts);
    el.crowdlearn.result = r;
    el.crowdlearn.updates += 1;
    el.crowdlearn.lastMs = performance.now() - t0;
    if (onUpdate) {
      onUpdate({
        settings: { ...state, errorRates: state.errorRates.slice() },
        item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
        label: Array.from(r.crowd.label), truth: Array.from(r.crowd.truth),
        posterior: Array.from(r.em.posterior), history: r.em.history.slice(),
        nIter: r.em.nIter, converged: r.em.converged, mvAccuracy: r.mvAccuracy,
        emAccuracy: r.emAccuracy, oracleAccuracy: r.oracleAccuracy,
        updates: el.crowdlearn.updates,
      });
    }
  }

  el.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.key) return;
    const v = Number(input.value);
    if (input.dataset.key === "errorRates") state.errorRates[Number(input.dataset.index)] = v;
    else state[input.dataset.key] = v;
    input.nextElementSibling.textContent = input.value;
    update();
  });
  update();
  return el.crowdlearn;
}
