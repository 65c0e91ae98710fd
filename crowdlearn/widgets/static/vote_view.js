// vote_view.js -- chapter 1's explorer in the page: majority vote against the Bayes rule.
//
// Concatenated after crowd_em.js into one ES module. Three good experts (accuracy 0.9) and
// `nCareless` careless ones label 2,000 binary items; the view shows the accuracy of the
// majority vote (ties to class 0), of the Bayes rule with the true accuracies, and of the
// best single expert, as bars.

const VOTE_COLORS = { mv: "#E69F00", oracle: "#7F7F7F", best: "#009E73" };

export function mountVoteExplorer(el, init, onUpdate) {
  const state = { nCareless: init.nCareless, carelessAccuracy: init.carelessAccuracy,
                  seed: init.seed, nItems: init.nItems };
  const row = (label, min, max, step, value, key) =>
    `<label class="cl-row"><span class="cl-label">${label}</span><input type="range" ` +
    `min="${min}" max="${max}" step="${step}" value="${value}" data-key="${key}">` +
    `<output class="cl-value">${value}</output></label>`;
  el.classList.add("cl-explorer", "cl-vote-explorer");
  el.innerHTML = `<div class="cl-controls"><fieldset><legend>The crowd</legend>` +
    row("careless experts", 0, 30, 1, state.nCareless, "nCareless") +
    row("their accuracy", 0.5, 0.9, 0.05, state.carelessAccuracy, "carelessAccuracy") +
    row("seed", 0, 9, 1, state.seed, "seed") +
    `</fieldset></div><p class="cl-summary" aria-live="polite"></p><div class="cl-panels"></div>`;
  const summary = el.querySelector(".cl-summary"), panels = el.querySelector(".cl-panels");
  el.crowdlearn = { state, updates: 0, result: null };

  function update() {
    const err = [0.1, 0.1, 0.1, ...Array(state.nCareless).fill(1 - state.carelessAccuracy)];
    const crowd = simulateCrowd({ nItems: state.nItems, errorRates: err, nClasses: 2,
                                  seed: state.seed });
    const mv = majorityVote(crowd), oracle = oraclePredict(crowd, oneCoinConfusion(err, 2));
    let a = 0, b = 0;
    for (let i = 0; i < state.nItems; i++) {
      a += mv[i] === crowd.truth[i];
      b += oracle[i] === crowd.truth[i];
    }
    const r = { mvAccuracy: a / state.nItems, oracleAccuracy: b / state.nItems, best: 0.9 };
    summary.innerHTML = `Majority vote <b>${r.mvAccuracy.toFixed(3)}</b>, Bayes rule with the ` +
      `true accuracies <b>${r.oracleAccuracy.toFixed(3)}</b>, best single expert 0.900 · ` +
      `${3 + state.nCareless} experts · computed in your browser`;
    const W = 420, H = 200, L = 150, R = 50;
    const bars = [["majority vote", r.mvAccuracy, VOTE_COLORS.mv],
                  ["Bayes rule", r.oracleAccuracy, VOTE_COLORS.oracle],
                  ["best expert", r.best, VOTE_COLORS.best]];
    const x = (v) => L + ((v - 0.5) / 0.5) * (W - L - R);
    let body = "";
    for (const t of [0.5, 0.75, 1]) {
      body += `<line x1="${x(t)}" x2="${x(t)}" y1="16" y2="${H - 18}" class="cl-grid"/>` +
        `<text x="${x(t)}" y="${H - 4}" text-anchor="middle">${t.toFixed(2)}</text>`;
    }
    bars.forEach(([name, v, c], i) => {
      const y = 24 + i * 56;
      body += `<text x="${L - 8}" y="${y + 24}" text-anchor="end">${name}</text>` +
        `<rect x="${L}" y="${y}" width="${Math.max(0, x(v) - L)}" height="36" fill="${c}" ` +
        `data-method="${name}" data-value="${v}"/>` +
        `<text x="${x(v) + 6}" y="${y + 24}">${v.toFixed(3)}</text>`;
    });
    panels.innerHTML = `<svg class="cl-panel cl-wide" viewBox="0 0 ${W} ${H}" role="img" ` +
      `aria-label="accuracy of the majority vote, the Bayes rule and the best expert">${body}</svg>`;
    el.crowdlearn.updates += 1;
    el.crowdlearn.result = { ...r, crowd };
    if (onUpdate) {
      onUpdate({ settings: { ...state }, item: Array.from(crowd.item),
                 expert: Array.from(crowd.expert), label: Array.from(crowd.label),
                 truth: Array.from(crowd.truth), mvAccuracy: r.mvAccuracy,
                 oracleAccuracy: r.oracleAccuracy, updates: el.crowdlearn.updates });
    }
  }

  el.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.key) return;
    state[input.dataset.key] = Number(input.value);
    input.nextElementSibling.textContent = input.value;
    update();
  });
  update();
  return el.crowdlearn;
}
