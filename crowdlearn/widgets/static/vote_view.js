// vote_view.js -- chapter 1's explorer in the page: majority vote against the Bayes rule.
//
// Bundled with what it imports into bundle_vote.js (tools/build_widgets.mjs), the module of
// crowdlearn.widgets.VoteExplorer. Three good experts (accuracy 0.9) and
// `nCareless` careless ones label 2,000 binary items; the view shows the accuracy of the
// majority vote, of the Bayes rule with the true accuracies, and of the best single expert,
// as bars. Ties are broken at random, as crowdlearn.MajorityVote does by default, and scored
// by their expectation: an item whose top classes tie counts 1 / (number tied) when its true
// class is among them (what a fair coin scores on average), so the score is exact and the
// package reproduces it (VoteExplorer.compare).

import { eStep, groupByItem, oneCoinConfusion, simulateCrowd } from "./crowd_em.js";
import { explorer } from "./_widget.js";

const VOTE_COLORS = { mv: "#E69F00", oracle: "#7F7F7F", best: "#009E73" };

/** Expected accuracy when ties are broken uniformly at random: `scores` is (n, K) row-major;
 * classes within `tol` of an item's best score tie. Returns { accuracy, ties }. */
function accuracyWithRandomTies(scores, K, truth, tol) {
  let total = 0, ties = 0;
  for (let i = 0; i < truth.length; i++) {
    let m = -Infinity;
    for (let k = 0; k < K; k++) m = Math.max(m, scores[i * K + k]);
    let nTied = 0;
    for (let k = 0; k < K; k++) if (scores[i * K + k] >= m - tol) nTied++;
    if (nTied > 1) ties++;
    if (scores[i * K + truth[i]] >= m - tol) total += 1 / nTied;
  }
  return { accuracy: total / truth.length, ties };
}

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
    const votes = new Float64Array(state.nItems * 2);
    for (let t = 0; t < crowd.item.length; t++) votes[crowd.item[t] * 2 + crowd.label[t]] += 1;
    const d = groupByItem(crowd);
    const { q } = eStep(d, { prior: new Float64Array([0.5, 0.5]),
                             conf: oneCoinConfusion(err, 2) }, 0);
    const mv = accuracyWithRandomTies(votes, 2, crowd.truth, 0);
    const oracle = accuracyWithRandomTies(q, 2, crowd.truth, 1e-9);
    const r = { mvAccuracy: mv.accuracy, oracleAccuracy: oracle.accuracy, best: 0.9,
                mvTies: mv.ties };
    summary.innerHTML = `Majority vote <b>${r.mvAccuracy.toFixed(3)}</b>, Bayes rule with the ` +
      `true accuracies <b>${r.oracleAccuracy.toFixed(3)}</b>, best single expert 0.900 · ` +
      `${3 + state.nCareless} experts, ${r.mvTies} tied votes (a tie counts ½: a fair ` +
      `coin's average) · computed in your browser`;
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

// the module of the explorer's anywidget and of its text/html twin (see _widget.js); the name
// is kept by the bundler, and the twin calls crowdlearnExplorer.mount
const crowdlearnExplorer = explorer(mountVoteExplorer);
export default crowdlearnExplorer;
