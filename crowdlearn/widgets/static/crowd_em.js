// crowd_em.js -- the Dawid-Skene explorer's computations, in the browser.
//
// The same EM as crowdlearn.DawidSkene (crowdlearn/dawid_skene.py), step for step, so
// that an explorer can recompute in a page with no Python kernel: the soft majority-vote
// start, the M-step with Dirichlet pseudo-count alpha, the E-step in log space with the
// row maximum subtracted, the objective (log-likelihood, plus alpha * sum of log
// parameters when alpha > 0), the stopping rule of crowdlearn.em.run_em (stop when the
// objective rises by at most tol * max(1, |objective|), or after max_iter M-steps), and
// the relabelling of hidden classes to agree best with the vote. Labels are summed per
// item in the order the package sums them (grouped by item, given order, then the log
// prior), so the posteriors agree with the package's to rounding; tests/test_js_engine.py
// checks that on many crowds, in Node and in headless Chromium.
//
// No dependencies; an ES module usable from Node, a page, or an anywidget front-end.

/** A seeded pseudo-random generator (mulberry32): returns uniforms in [0, 1). */
export function makeRng(seed) {
  let a = (seed >>> 0) ^ 0x9e3779b9;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One-coin confusion matrices: expert j is right with probability 1 - err[j], and
 * spreads its errors evenly over the other classes. Returns Float64Array (J*K*K),
 * entry [j, k, l] at (j * K + k) * K + l. */
export function oneCoinConfusion(errorRates, K) {
  const J = errorRates.length;
  const conf = new Float64Array(J * K * K);
  for (let j = 0; j < J; j++) {
    const acc = 1 - errorRates[j];
    const off = (1 - acc) / (K - 1);
    for (let k = 0; k < K; k++)
      for (let l = 0; l < K; l++) conf[(j * K + k) * K + l] = k === l ? acc : off;
  }
  return conf;
}

/** Simulate a crowd of one-coin experts: uniform true classes, each (item, expert)
 * label dropped with probability `missing`. Labels come in (item, expert) order. */
export function simulateCrowd({ nItems, errorRates, nClasses, missing = 0, seed = 0 }) {
  const rng = makeRng(seed);
  const K = nClasses, J = errorRates.length;
  const truth = new Int32Array(nItems);
  for (let i = 0; i < nItems; i++) truth[i] = Math.min(K - 1, Math.floor(rng() * K));
  const item = [], expert = [], label = [];
  for (let i = 0; i < nItems; i++) {
    for (let j = 0; j < J; j++) {
      const keep = rng() >= missing;
      const right = rng() >= errorRates[j];
      const pick = rng();
      if (!keep) continue;
      let l = truth[i];
      if (!right) {  // one of the K - 1 other classes, uniformly
        const other = Math.min(K - 2, Math.floor(pick * (K - 1)));
        l = other >= truth[i] ? other + 1 : other;
      }
      item.push(i); expert.push(j); label.push(l);
    }
  }
  return {
    nItems, nExperts: J, nClasses: K, truth,
    item: Int32Array.from(item), expert: Int32Array.from(expert), label: Int32Array.from(label),
  };
}

/** Labels grouped by item (stable), with row pointers: the package's sparse layout. */
export function groupByItem(crowd) {
  const n = crowd.nItems, T = crowd.item.length;
  const ptr = new Int32Array(n + 1);
  for (let t = 0; t < T; t++) ptr[crowd.item[t] + 1]++;
  for (let i = 0; i < n; i++) ptr[i + 1] += ptr[i];
  const fill = ptr.slice(0, n);
  const expert = new Int32Array(T), label = new Int32Array(T);
  for (let t = 0; t < T; t++) {
    const pos = fill[crowd.item[t]]++;
    expert[pos] = crowd.expert[t];
    label[pos] = crowd.label[t];
  }
  return { n, J: crowd.nExperts, K: crowd.nClasses, ptr, expert, label };
}

function majorityStart(d) {
  const { n, K, ptr, label } = d;
  const q = new Float64Array(n * K);
  const voted = new Uint8Array(n);
  let nVoted = 0;
  const w = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    const total = ptr[i + 1] - ptr[i];
    if (total === 0) continue;
    voted[i] = 1; nVoted++;
    for (let t = ptr[i]; t < ptr[i + 1]; t++) q[i * K + label[t]] += 1;
    for (let k = 0; k < K; k++) { q[i * K + k] /= total; w[k] += q[i * K + k]; }
  }
  if (nVoted < n) {  // items nobody labelled: the Laplace-smoothed vote frequencies
    for (let i = 0; i < n; i++) {
      if (voted[i]) continue;
      for (let k = 0; k < K; k++) q[i * K + k] = (w[k] + 1) / (nVoted + K);
    }
  }
  return q;
}

/** Expected counts: counts[(j*K + l)*K + k] (true class k, label l) and per class. */
function expectedCounts(d, q) {
  const { n, J, K, ptr, expert, label } = d;
  const counts = new Float64Array(J * K * K);
  const classCount = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    for (let t = ptr[i]; t < ptr[i + 1]; t++) {
      const base = (expert[t] * K + label[t]) * K;
      for (let k = 0; k < K; k++) counts[base + k] += q[i * K + k];
    }
    for (let k = 0; k < K; k++) classCount[k] += q[i * K + k];
  }
  return { counts, classCount };
}

function mStep(d, q, alpha) {
  const { J, K } = d;
  const { counts, classCount } = expectedCounts(d, q);
  let total = 0;
  for (let k = 0; k < K; k++) total += classCount[k];
  const prior = new Float64Array(K);
  for (let k = 0; k < K; k++) prior[k] = (classCount[k] + alpha) / (total + K * alpha);
  const conf = new Float64Array(J * K * K);  // [j, k, l] at (j*K + k)*K + l
  for (let j = 0; j < J; j++) {
    for (let k = 0; k < K; k++) {
      let denom = 0;
      for (let l = 0; l < K; l++) denom += counts[(j * K + l) * K + k] + alpha;
      for (let l = 0; l < K; l++) {
        conf[(j * K + k) * K + l] = denom <= 0 ? 1 / K
          : (counts[(j * K + l) * K + k] + alpha) / denom;
      }
    }
  }
  return { prior, conf };
}

export function eStep(d, params, alpha) {
  const { n, J, K, ptr, expert, label } = d;
  const logConf = new Float64Array(J * K * K);
  for (let x = 0; x < logConf.length; x++) logConf[x] = Math.log(params.conf[x]);
  const logPrior = new Float64Array(K);
  for (let k = 0; k < K; k++) logPrior[k] = Math.log(params.prior[k]);
  const q = new Float64Array(n * K);
  let objective = 0;
  const row = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    row.fill(0);
    for (let t = ptr[i]; t < ptr[i + 1]; t++) {
      const base = expert[t] * K * K + label[t];
      for (let k = 0; k < K; k++) row[k] += logConf[base + k * K];
    }
    for (let k = 0; k < K; k++) row[k] += logPrior[k];
    let m = row[0];
    for (let k = 1; k < K; k++) m = Math.max(m, row[k]);
    if (!Number.isFinite(m)) m = 0;
    let s = 0;
    for (let k = 0; k < K; k++) { row[k] = Math.exp(row[k] - m); s += row[k]; }
    objective += Math.log(s) + m;
    const div = s > 0 ? s : 1;
    for (let k = 0; k < K; k++) q[i * K + k] = row[k] / div;
  }
  if (alpha > 0) {
    let total = 0;
    for (let k = 0; k < K; k++) total += logPrior[k];
    for (let x = 0; x < logConf.length; x++) total += logConf[x];
    objective += alpha * total;
  }
  return { q, objective };
}

function permutations(K) {
  if (K === 1) return [[0]];
  const out = [];
  for (const p of permutations(K - 1)) {
    for (let pos = 0; pos <= p.length; pos++) out.push([...p.slice(0, pos), K - 1, ...p.slice(pos)]);
  }
  return out;
}

/** Relabel the hidden classes to agree best with the votes (as the package does). */
function alignWithVote(d, params, q) {
  const { J, K, n } = d;
  if (K > 7) return { params, q };  // the explorer has at most a few classes
  const { counts } = expectedCounts(d, q);
  const agree = new Float64Array(K * K);  // [k, l]: expected votes for l of hidden class k
  for (let j = 0; j < J; j++)
    for (let l = 0; l < K; l++)
      for (let k = 0; k < K; k++) agree[k * K + l] += counts[(j * K + l) * K + k];
  let best = null, bestScore = -Infinity;
  const identity = [...Array(K).keys()];
  let idScore = 0;
  for (let k = 0; k < K; k++) idScore += agree[k * K + k];
  for (const p of permutations(K)) {
    let s = 0;
    for (let k = 0; k < K; k++) s += agree[k * K + p[k]];
    if (s > bestScore) { bestScore = s; best = p; }
  }
  if (!(bestScore > idScore)) best = identity;
  if (best.every((v, k) => v === k)) return { params, q };
  const inv = new Array(K);  // new class best[k] is old class k
  for (let k = 0; k < K; k++) inv[best[k]] = k;
  const prior = new Float64Array(K), conf = new Float64Array(J * K * K), q2 = new Float64Array(n * K);
  for (let k = 0; k < K; k++) prior[k] = params.prior[inv[k]];
  for (let j = 0; j < J; j++)
    for (let k = 0; k < K; k++)
      for (let l = 0; l < K; l++) conf[(j * K + k) * K + l] = params.conf[(j * K + inv[k]) * K + l];
  for (let i = 0; i < n; i++)
    for (let k = 0; k < K; k++) q2[i * K + k] = q[i * K + inv[k]];
  return { params: { prior, conf }, q: q2 };
}

/** Dawid-Skene EM, as crowdlearn.DawidSkene(alpha, max_iter, tol).fit(crowd) with one run
 * from the soft majority vote. Returns the posterior (Float64Array n*K), the class prior,
 * the confusion matrices ([j, k, l] at (j*K + k)*K + l), the objective after every E-step,
 * the number of M-steps and whether the tolerance was met. */
export function fitDawidSkene(crowd, { alpha = 0, maxIter = 200, tol = 1e-6 } = {}) {
  const d = groupByItem(crowd);
  const run = runEm(mStep(d, majorityStart(d), alpha), (p) => eStep(d, p, alpha),
                    (q) => mStep(d, q, alpha), { maxIter, tol });
  const aligned = alignWithVote(d, run.params, run.q);
  return {
    posterior: aligned.q, classPrior: aligned.params.prior, confusion: aligned.params.conf,
    history: run.history, nIter: run.nIter, converged: run.converged,
  };
}

/** The loop of crowdlearn.em.run_em: E-step (`eStep(params)` gives `{q, objective}`), stop
 * when the objective rises by at most tol * max(1, |objective|) or after maxIter M-steps,
 * else M-step (`mStep(q, params)`, the parameters the posterior came from passed along for
 * warm starts). Returns the last parameters, their posterior, the objective history, the
 * number of M-steps and whether the tolerance was met. */
export function runEm(params, eStep, mStep, { maxIter, tol }) {
  const history = [];
  let converged = false, nIter = 0, q;
  for (;;) {
    const e = eStep(params);
    q = e.q;
    history.push(e.objective);
    if (history.length > 1) {
      const change = history[history.length - 1] - history[history.length - 2];
      if (change <= tol * Math.max(1, Math.abs(e.objective))) converged = true;
    }
    if (converged || nIter >= maxIter) break;
    params = mStep(q, params);
    nIter++;
  }
  return { params, q, history, nIter, converged };
}

/** Hard majority vote with ties to the lowest class; unlabelled items get class 0
 * (crowdlearn.MajorityVote(tie_break="lowest", unlabelled="uniform")). */
export function majorityVote(crowd) {
  const { nItems: n, nClasses: K } = crowd;
  const counts = new Float64Array(n * K);
  for (let t = 0; t < crowd.item.length; t++) counts[crowd.item[t] * K + crowd.label[t]] += 1;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = argmaxRow(counts, i, K);
  return out;
}

function argmaxRow(a, i, K) {
  let best = 0;
  for (let k = 1; k < K; k++) if (a[i * K + k] > a[i * K + best]) best = k;
  return best;
}

/** The Bayes rule with the true parameters: the most probable class under a uniform
 * prior; classes within 1e-9 of the best count as tied, and ties go to the lowest class
 * (exact ties are common with equal error rates, and rounding must not decide them). */
export function oraclePredict(crowd, trueConf) {
  const d = groupByItem(crowd);
  const prior = new Float64Array(d.K).fill(1 / d.K);
  const { q } = eStep(d, { prior, conf: trueConf }, 0);
  const out = new Int32Array(d.n);
  for (let i = 0; i < d.n; i++) {
    let m = -Infinity;
    for (let k = 0; k < d.K; k++) m = Math.max(m, q[i * d.K + k]);
    let k = 0;
    while (q[i * d.K + k] < m - 1e-9) k++;
    out[i] = k;
  }
  return out;
}

/** Error rate of each expert, sum_k prior_k (1 - conf[j, k, k]). */
export function errorRates(conf, prior, J, K) {
  const out = new Float64Array(J);
  for (let j = 0; j < J; j++) {
    let e = 0;
    for (let k = 0; k < K; k++) e += prior[k] * (1 - conf[(j * K + k) * K + k]);
    out[j] = e;
  }
  return out;
}

/** Everything one explorer view shows, for one setting of its sliders. */
export function compare({ errorRates: err, nItems = 500, nClasses = 3, missing = 0, alpha = 0,
                          seed = 0, maxIter = 200, tol = 1e-6 }) {
  const crowd = simulateCrowd({ nItems, errorRates: err, nClasses, missing, seed });
  const K = nClasses, J = err.length;
  const em = fitDawidSkene(crowd, { alpha, maxIter, tol });
  const emPred = new Int32Array(nItems);
  for (let i = 0; i < nItems; i++) emPred[i] = argmaxRow(em.posterior, i, K);
  const trueConf = oneCoinConfusion(err, K);
  const mv = majorityVote(crowd), oracle = oraclePredict(crowd, trueConf);
  const acc = (pred) => { let c = 0; for (let i = 0; i < nItems; i++) c += pred[i] === crowd.truth[i]; return c / nItems; };
  const uniform = new Float64Array(K).fill(1 / K);
  return {
    crowd, em,
    mvAccuracy: acc(mv), emAccuracy: acc(emPred), oracleAccuracy: acc(oracle),
    trueErrorRates: errorRates(trueConf, uniform, J, K),
    estimatedErrorRates: errorRates(em.confusion, em.classPrior, J, K),
  };
}
