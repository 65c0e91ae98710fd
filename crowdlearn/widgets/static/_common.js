// _common.js -- what the explorer views share: slider rows, the 300 x 240 SVG panel with its
// y axis, the accuracy bars and the EM objective, and the wiring of the sliders.
//
// An ES module: the views import what they use from it (tools/build_widgets.mjs bundles each
// view with what it imports into one file, crowdlearn/widgets/static/bundle_*.js).

export function fmt(x, d = 3) { return Number(x).toFixed(d); }

// one slider row; `shown` is the text of its readout (the value by default)
export function slider(label, min, max, step, value, key, index, shown = value) {
  const id = `cl-${Math.random().toString(36).slice(2)}`;
  return `<label class="cl-row" for="${id}"><span class="cl-label">${label}</span>` +
    `<input id="${id}" type="range" min="${min}" max="${max}" step="${step}" value="${value}" ` +
    `data-key="${key}"${index === undefined ? "" : ` data-index="${index}"`}>` +
    `<output class="cl-value">${shown}</output></label>`;
}

// made once per view: a function that hides the rows of the sliders of `state[key]` beyond
// the first `state[countKey]` and returns those first entries (the active experts' values)
export function activeEntries(el, state, key, countKey) {
  const rows = [...el.querySelectorAll(`input[data-key="${key}"]`)]
    .map((input) => input.closest(".cl-row"));
  return () => {
    rows.forEach((row, j) => { row.hidden = j >= state[countKey]; });
    return state[key].slice(0, state[countKey]);
  };
}

export const W = 300, H = 240, M = { l: 62, r: 10, t: 32, b: 46 };

// `cls` and `labelX` (where the rotated y label stands) are the only differences between
// the views' panels
export function panel(title, body, xLabel, yLabel, { cls = "cl-panel", labelX = 12 } = {}) {
  return `<svg class="${cls}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${title}">` +
    `<text x="${W / 2}" y="18" text-anchor="middle" class="cl-title">${title}</text>` + body +
    `<text x="${(M.l + W - M.r) / 2}" y="${H - 6}" text-anchor="middle">${xLabel}</text>` +
    `<text transform="translate(${labelX} ${(M.t + H - M.b) / 2}) rotate(-90)" ` +
    `text-anchor="middle" class="cl-small">${yLabel}</text></svg>`;
}

export function yAxis(lo, hi, n, f, labelClass = "") {
  const y = (v) => H - M.b - ((v - lo) / (hi - lo)) * (H - M.t - M.b);
  const cls = labelClass ? ` class="${labelClass}"` : "";
  let s = `<line x1="${M.l}" x2="${M.l}" y1="${M.t}" y2="${H - M.b}" class="cl-axis"/>`;
  for (let i = 0; i <= n; i++) {
    const v = lo + ((hi - lo) * i) / n;
    s += `<line x1="${M.l - 4}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" class="cl-grid"/>` +
      `<text x="${M.l - 6}" y="${y(v) + 4}" text-anchor="end"${cls}>${f(v)}</text>`;
  }
  return { s, y };
}

// the y axis and one bar per [name, accuracy, colour]; a bar starts `at` of its slot and is
// `width` of it wide (its middle is at `mid`, given rather than computed so that the
// coordinates are the numbers the views always wrote); `valueClass` styles the values
export function accuracyBars(bars, { at, width, mid, valueClass = "" }) {
  const { s, y } = yAxis(0, 1, 4, (v) => fmt(v, 2));
  const bw = (W - M.l - M.r) / bars.length;
  let body = s;
  bars.forEach(([name, v, c], i) => {
    const x = M.l + i * bw + bw * at;
    body += `<rect x="${x}" y="${y(v)}" width="${bw * width}" height="${y(0) - y(v)}" ` +
      `fill="${c}" data-method="${name}" data-value="${v}"/>` +
      `<text x="${x + bw * mid}" y="${y(v) - 4}" text-anchor="middle"${valueClass}>` +
      `${fmt(v)}</text>` +
      `<text x="${x + bw * mid}" y="${H - M.b + 17}" text-anchor="middle">${name}</text>`;
  });
  return { body, y };
}

// the objective `h` at every EM iteration, as a line of `color`; `sign` rewrites the tick
// labels (the annotators' view writes a true minus sign)
export function objectivePanel(h, color, opts, sign = (text) => text) {
  let lo = Math.min(...h), hi = Math.max(...h);
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.08;
  lo -= pad; hi += pad;
  const { s, y } = yAxis(lo, hi, 3,
                         (v) => sign(Math.abs(v) >= 1e4 ? v.toExponential(2) : fmt(v, 0)));
  const n = Math.max(h.length - 1, 1);
  const x = (i) => M.l + (i / n) * (W - M.l - M.r);
  const pts = h.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  let body = s + `<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2"/>`;
  body += `<text x="${M.l}" y="${H - M.b + 17}" text-anchor="middle">0</text>` +
    `<text x="${W - M.r}" y="${H - M.b + 17}" text-anchor="end">${h.length - 1}</text>`;
  return panel("EM objective per iteration", body, "iteration", "", opts);
}

// every slider writes its number into `state` (into `state[listKey]` at its index for the
// sliders of that array), its readout shows `shown(key, value, text)`, then `update()`
export function onSlider(el, state, listKey, update, shown = (key, v, text) => text) {
  el.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.key) return;
    const v = Number(input.value), key = input.dataset.key;
    if (key === listKey) state[listKey][Number(input.dataset.index)] = v;
    else state[key] = v;
    input.nextElementSibling.textContent = shown(key, v, input.value);
    update();
  });
}

// the crowd as plain arrays, for the payload sent to the kernel
export function crowdArrays(crowd) {
  return { item: Array.from(crowd.item), expert: Array.from(crowd.expert),
           label: Array.from(crowd.label), truth: Array.from(crowd.truth) };
}

// what every redraw records on the element: its result, the count and how long it took
export function recordUpdate(el, result, t0) {
  el.crowdlearn.result = result;
  el.crowdlearn.updates += 1;
  el.crowdlearn.lastMs = performance.now() - t0;
}
