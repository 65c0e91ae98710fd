// annotators_view.js -- chapter 8's explorer drawn in the page (SVG), no kernel needed.
//
// Concatenated after crowd_em.js and annotators_em.js into one ES module, so
// `compareAnnotators` is annotators_em.js's. Every control change re-simulates the crowd,
// refits majority vote, Dawid-Skene and the logistic-annotator model, and redraws: one small
// panel per annotator (its true reliability curve along x1, the logistic model's estimate,
// Dawid-Skene's single number), the accuracy of each method, and the logistic model's
// objective per EM iteration. Panels wrap on a narrow screen.

const LA_COLORS = { mv: "#E69F00", ds: "#0072B2", la: "#009E73", oracle: "#7F7F7F",
                    truth: "#000000", chance: "#777777" };

function laFmt(x, d = 3) { return Number(x).toFixed(d); }

function laSigned(x, d = 2) { return (x >= 0 ? "+" : "\u2212") + Math.abs(x).toFixed(d); }

function laSlider(label, min, max, step, value, key, index, shown = value) {
  const id = `cl-${Math.random().toString(36).slice(2)}`;
  return `<label class="cl-row" for="${id}"><span class="cl-label">${label}</span>` +
    `<input id="${id}" type="range" min="${min}" max="${max}" step="${step}" value="${value}" ` +
    `data-key="${key}"${index === undefined ? "" : ` data-index="${index}"`}>` +
    `<output class="cl-value">${shown}</output></label>`;
}

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

// the wider panels: accuracy bars and the objective per iteration
const PW = 300, PH = 240, PM = { l: 62, r: 10, t: 32, b: 46 };

function laPanel(title, body, xLabel, yLabel) {
  return `<svg class="cl-panel cl-wide" viewBox="0 0 ${PW} ${PH}" role="img" aria-label="${title}">` +
    `<text x="${PW / 2}" y="18" text-anchor="middle" class="cl-title">${title}</text>` + body +
    `<text x="${(PM.l + PW - PM.r) / 2}" y="${PH - 6}" text-anchor="middle">${xLabel}</text>` +
    `<text transform="translate(14 ${(PM.t + PH - PM.b) / 2}) rotate(-90)" text-anchor="middle" ` +
    `class="cl-small">${yLabel}</text></svg>`;
}

function laYAxis(lo, hi, n, f) {
  const y = (v) => PH - PM.b - ((v - lo) / (hi - lo)) * (PH - PM.t - PM.b);
  let s = `<line x1="${PM.l}" x2="${PM.l}" y1="${PM.t}" y2="${PH - PM.b}" class="cl-axis"/>`;
  for (let i = 0; i <= n; i++) {
    const v = lo + ((hi - lo) * i) / n;
    s += `<line x1="${PM.l - 4}" x2="${PW - PM.r}" y1="${y(v)}" y2="${y(v)}" class="cl-grid"/>` +
      `<text x="${PM.l - 6}" y="${y(v) + 4}" text-anchor="end">${f(v)}</text>`;
  }
  return { s, y };
}

function drawMethodAccuracy(r) {
  const { s, y } = laYAxis(0, 1, 4, (v) => laFmt(v, 2));
  const bars = [["vote", r.mvAccuracy, LA_COLORS.mv], ["D\u2013S", r.dsAccuracy, LA_COLORS.ds],
                ["logistic", r.laAccuracy, LA_COLORS.la], ["Bayes", r.oracleAccuracy, LA_COLORS.oracle]];
  const bw = (PW - PM.l - PM.r) / bars.length;
  let body = s;
  bars.forEach(([name, v, c], i) => {
    const x = PM.l + i * bw + bw * 0.15;
    body += `<rect x="${x}" y="${y(v)}" width="${bw * 0.7}" height="${y(0) - y(v)}" fill="${c}" ` +
      `data-method="${name}" data-value="${v}"/>` +
      `<text x="${x + bw * 0.35}" y="${y(v) - 4}" text-anchor="middle" class="cl-small">${laFmt(v)}</text>` +
      `<text x="${x + bw * 0.35}" y="${PH - PM.b + 17}" text-anchor="middle">${name}</text>`;
  });
  body += `<line x1="${PM.l}" x2="${PW - PM.r}" y1="${y(0.5)}" y2="${y(0.5)}" class="cl-chance"/>`;
  return laPanel("Accuracy against the truth", body, "", "accuracy");
}

function drawLaObjective(r) {
  const h = r.la.history;
  let lo = Math.min(...h), hi = Math.max(...h);
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.08;
  lo -= pad; hi += pad;
  const { s, y } = laYAxis(lo, hi, 3, (v) => (Math.abs(v) >= 1e4 ? v.toExponential(2) : laFmt(v, 0)).replace("-", "\u2212"));
  const n = Math.max(h.length - 1, 1);
  const x = (i) => PM.l + (i / n) * (PW - PM.l - PM.r);
  const pts = h.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  let body = s + `<polyline points="${pts}" fill="none" stroke="${LA_COLORS.la}" stroke-width="2"/>`;
  body += `<text x="${PM.l}" y="${PH - PM.b + 17}" text-anchor="middle">0</text>` +
    `<text x="${PW - PM.r}" y="${PH - PM.b + 17}" text-anchor="end">${h.length - 1}</text>`;
  return laPanel("EM objective per iteration", body, "iteration", "");
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
    laSlider("annotators", 2, maxAnnotators, 1, state.nAnnotators, "nAnnotators") +
    state.slopes.map((w, t) => laSlider(`annotator ${t + 1}`, -5, 5, 0.25, w, "slopes", t,
                                        laSigned(w))).join("") +
    `</fieldset><fieldset><legend>The crowd</legend>` +
    laSlider("\u03b3 (base \u03c3(\u2212\u03b3))", -3, 3, 0.1, state.gamma, "gamma",
             undefined, laSigned(state.gamma, 1)) +
    laSlider("missing fraction", 0, 0.9, 0.05, state.missing, "missing") +
    laSlider("seed", 0, 99, 1, state.seed, "seed") +
    `</fieldset></div><p class="cl-summary" aria-live="polite"></p>` +
    `<p class="cl-legend">${LA_LEGEND}</p><div class="cl-curves"></div><div class="cl-panels"></div>`;
  const summary = el.querySelector(".cl-summary"), curves = el.querySelector(".cl-curves");
  const panels = el.querySelector(".cl-panels");
  const slopeRows = [...el.querySelectorAll('input[data-key="slopes"]')]
    .map((input) => input.closest(".cl-row"));
  el.crowdlearn = { state, updates: 0, result: null, lastMs: 0 };

  function update() {
    const t0 = performance.now();
    slopeRows.forEach((row, t) => { row.hidden = t >= state.nAnnotators; });
    const slopes = state.slopes.slice(0, state.nAnnotators);
    const r = compareAnnotators({ slopes, gamma: state.gamma, missing: state.missing,
                                  seed: state.seed, nItems: state.nItems, coef: state.coef,
                                  intercept: state.intercept, l2: state.l2,
                                  maxIter: state.maxIter, tol: state.tol });
    const nLabels = r.crowd.item.length;
    summary.innerHTML = `Majority vote <b>${laFmt(r.mvAccuracy)}</b>, Dawid\u2013Skene ` +
      `<b>${laFmt(r.dsAccuracy)}</b>, logistic annotators <b>${laFmt(r.laAccuracy)}</b>` +
      (r.la.flipped ? " (solution flipped to agree with the vote)" : "") +
      `, Bayes with the true parameters ${laFmt(r.oracleAccuracy)} \u00b7 ${nLabels} labels` +
      (r.nUnlabelled ? `, ${r.nUnlabelled} items without a label` : "") +
      ` \u00b7 EM: ${r.la.nIter} iterations` +
      (r.la.converged ? "" : " (stopped at the iteration cap)") + ` \u00b7 computed in your browser`;
    curves.innerHTML = slopes.map((w, t) => drawAnnotator(r, t, w)).join("");
    panels.innerHTML = drawMethodAccuracy(r) + drawLaObjective(r);
    el.dataset.nAnnotators = String(state.nAnnotators);
    el.crowdlearn.result = r;
    el.crowdlearn.updates += 1;
    el.crowdlearn.lastMs = performance.now() - t0;
    if (onUpdate) {
      onUpdate({
        settings: { ...state, slopes: state.slopes.slice(), coef: state.coef.slice() },
        item: Array.from(r.crowd.item), expert: Array.from(r.crowd.expert),
        label: Array.from(r.crowd.label), truth: Array.from(r.crowd.truth),
        X: Array.from(r.crowd.X), posterior: Array.from(r.la.posterior),
        history: r.la.history.slice(), nIter: r.la.nIter, converged: r.la.converged,
        flipped: r.la.flipped, dsPosterior: Array.from(r.ds.posterior), dsNIter: r.ds.nIter,
        mvPrediction: Array.from(r.mv.pred), mvTied: Array.from(r.mv.tied),
        mvAccuracy: r.mvAccuracy, dsAccuracy: r.dsAccuracy, laAccuracy: r.laAccuracy,
        oracleAccuracy: r.oracleAccuracy, updates: el.crowdlearn.updates,
      });
    }
  }

  el.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.key) return;
    const v = Number(input.value), key = input.dataset.key;
    if (key === "slopes") state.slopes[Number(input.dataset.index)] = v;
    else state[key] = v;
    input.nextElementSibling.textContent =
      key === "slopes" ? laSigned(v) : key === "gamma" ? laSigned(v, 1) : input.value;
    update();
  });
  update();
  return el.crowdlearn;
}
