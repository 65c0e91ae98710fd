// annotators_em.js -- chapter 8's computations in the browser: annotators whose reliability
// depends on the item (crowdlearn.LogisticAnnotators), step for step.
//
// An ES module; it imports makeRng, runEm and fitDawidSkene from crowd_em.js. The EM is the package's: the soft majority-vote start fed to an M-step from
// all-zero parameters; E-step in log space (labels summed per item in the package's order,
// then the classifier's log prior added); the objective F = log-likelihood minus
// (l2 / 2) * |theta|^2; the stopping rule of crowdlearn.em.run_em; each M-step a set of
// ridge-penalised logistic regressions with soft targets solved by Newton's method from
// the current parameters exactly as crowdlearn._logistic.fit_weighted_logistic does it
// (epsilon-regularised Newton system, Armijo backtracking with at most 41 halvings, the
// half-squared-decrement stop at 1e-10 with its final "polish" step, at most 100 Newton
// iterations per problem, each problem stopping on its own); then the sign flip that makes
// the posterior agree with the vote. tests/test_js_engine.py checks agreement with the
// package (posteriors to 1e-9, same iteration count) in Node and in headless Chromium.

import { fitDawidSkene, makeRng, runEm } from "./crowd_em.js";

/** log(sigma(x)) without overflow (scipy.special.log_expit's formula). */
function logExpit(x) {
  return x < 0 ? x - Math.log1p(Math.exp(x)) : -Math.log1p(Math.exp(-x));
}

/** sigma(x) = 1 / (1 + exp(-x)) (scipy.special.expit). */
function expit(x) {
  return 1 / (1 + Math.exp(-x));
}

/** Standard normal draws from a uniform generator (Box-Muller, both values used). */
function makeNormal(rng) {
  let spare = null;
  return function () {
    if (spare !== null) { const z = spare; spare = null; return z; }
    const u = 1 - rng(), v = rng();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

/** Simulate crowdlearn.simulate_annotators.simulate_logistic_annotators's model with the
 * page's own generator: two standard-normal features, truth with P(z = 1 | x) =
 * sigma(coef . x + intercept), annotator t right with probability
 * sigma(slope_t x_1 - gamma), each (item, annotator) label missing with probability
 * `missing`. Labels come in (item, annotator) order. */
export function simulateAnnotators({ nItems, coef, intercept = 0, slopes, gamma, missing = 0,
                                     seed = 0 }) {
  const rng = makeRng(seed), normal = makeNormal(rng);
  const d = 2, T = slopes.length;
  const X = new Float64Array(nItems * d);
  for (let x = 0; x < X.length; x++) X[x] = normal();
  const truth = new Int32Array(nItems);
  for (let i = 0; i < nItems; i++) {
    truth[i] = rng() < expit(X[i * d] * coef[0] + X[i * d + 1] * coef[1] + intercept) ? 1 : 0;
  }
  const item = [], expert = [], label = [];
  for (let i = 0; i < nItems; i++) {
    for (let t = 0; t < T; t++) {
      const keep = rng() >= missing;
      const right = rng() < expit(slopes[t] * X[i * d] - gamma);
      if (!keep) continue;
      item.push(i); expert.push(t); label.push(right ? truth[i] : 1 - truth[i]);
    }
  }
  return {
    nItems, nExperts: T, nClasses: 2, d, X, truth,
    item: Int32Array.from(item), expert: Int32Array.from(expert), label: Int32Array.from(label),
  };
}

/** Solve the small dense system A x = b (A row-major p x p) by Gaussian elimination with
 * partial pivoting (LAPACK's gesv, which numpy.linalg.solve calls, does the same). */
function solveSmall(A, b, p) {
  const a = A.slice(), x = b.slice();
  for (let c = 0; c < p; c++) {
    let piv = c;
    for (let r = c + 1; r < p; r++) if (Math.abs(a[r * p + c]) > Math.abs(a[piv * p + c])) piv = r;
    if (piv !== c) {
      for (let k = 0; k < p; k++) { const s = a[c * p + k]; a[c * p + k] = a[piv * p + k]; a[piv * p + k] = s; }
      const s = x[c]; x[c] = x[piv]; x[piv] = s;
    }
    for (let r = c + 1; r < p; r++) {
      const f = a[r * p + c] / a[c * p + c];
      if (f === 0) continue;
      for (let k = c; k < p; k++) a[r * p + k] -= f * a[c * p + k];
      x[r] -= f * x[c];
    }
  }
  for (let c = p - 1; c >= 0; c--) {
    let s = x[c];
    for (let k = c + 1; k < p; k++) s -= a[c * p + k] * x[k];
    x[c] = s / a[c * p + c];
  }
  return x;
}

/** One ridge-penalised logistic regression with soft targets, by Newton's method
 * (crowdlearn._logistic.fit_weighted_logistic for one group, unit weights, intercept
 * penalised). Z holds R rows of p numbers (the features and a trailing 1). */
function fitLogistic(Z, target, R, p, l2, theta0, maxIter = 100, tol = 1e-10) {
  let theta = Float64Array.from(theta0);
  const objective = (th) => {
    let s = 0;
    for (let r = 0; r < R; r++) {
      let u = 0;
      for (let k = 0; k < p; k++) u += Z[r * p + k] * th[k];
      s += target[r] * u + logExpit(-u);
    }
    let pen = 0;
    for (let k = 0; k < p; k++) pen += l2 * th[k] * th[k];
    return s - 0.5 * pen;
  };
  const newton = (th) => {
    const grad = new Float64Array(p), hess = new Float64Array(p * p);
    for (let r = 0; r < R; r++) {
      let u = 0;
      for (let k = 0; k < p; k++) u += Z[r * p + k] * th[k];
      const e = expit(u), resid = target[r] - e, curv = e * expit(-u);
      for (let k = 0; k < p; k++) {
        grad[k] += resid * Z[r * p + k];
        for (let l = 0; l < p; l++) hess[k * p + l] += curv * Z[r * p + k] * Z[r * p + l];
      }
    }
    let big = -Infinity;
    for (let k = 0; k < p; k++) {
      grad[k] -= l2 * th[k];
      hess[k * p + k] += l2;
      big = Math.max(big, hess[k * p + k]);
    }
    const eps = 1e-12 * Math.max(big, 1);
    for (let k = 0; k < p; k++) hess[k * p + k] += eps;
    const step = solveSmall(hess, grad, p);
    let dec = 0;
    for (let k = 0; k < p; k++) dec += grad[k] * step[k];
    return { step, dec };
  };
  const plus = (th, t, step) => { const o = new Float64Array(p); for (let k = 0; k < p; k++) o[k] = th[k] + t * step[k]; return o; };
  let obj = objective(theta), nIter = 0, active = true;
  for (;;) {
    const { step, dec } = newton(theta);
    const done = 0.5 * dec <= tol;
    if (done && nIter < maxIter) {  // the polish step: a full Newton step, unless it loses
      const trial = plus(theta, 1, step), trialObj = objective(trial);  // more than rounding
      if (trialObj >= obj - 1e-12 * Math.max(1, Math.abs(obj))) { theta = trial; obj = trialObj; }
    }
    if (done) { active = false; break; }
    if (nIter >= maxIter) break;
    nIter++;
    let t = 1, accepted = false;
    for (let h = 0; h < 41; h++) {
      const trial = plus(theta, t, step), trialObj = objective(trial);
      if (trialObj >= obj + 1e-4 * t * dec) { theta = trial; obj = trialObj; accepted = true; break; }
      t *= 0.5;
    }
    if (!accepted) { active = false; break; }
  }
  return { theta, converged: !active };
}

/** Fraction of 1-labels per item, 0.5 for items without a label. */
function softVote(crowd) {
  const n = crowd.nItems, ones = new Float64Array(n), total = new Float64Array(n);
  for (let r = 0; r < crowd.item.length; r++) { ones[crowd.item[r]] += crowd.label[r]; total[crowd.item[r]] += 1; }
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++) v[i] = total[i] > 0 ? ones[i] / total[i] : 0.5;
  return { v, total };
}

/** crowdlearn.LogisticAnnotators(l2, max_iter, tol).fit(crowd, X) with one run from the soft
 * vote. Returns the posterior (Float64Array n*2), the parameters (coef, intercept,
 * reliabilityCoef T*d row-major, reliabilityIntercept), the objective after every E-step,
 * the number of M-steps, convergence and whether the solution was flipped. */
export function fitLogisticAnnotators(crowd, X, d, { l2 = 1, maxIter = 200, tol = 1e-8 } = {}) {
  const n = crowd.nItems, T = crowd.nExperts, L = crowd.item.length, p = d + 1;
  // the classifier's design [X, 1]
  const Zc = new Float64Array(n * p);
  for (let i = 0; i < n; i++) { for (let k = 0; k < d; k++) Zc[i * p + k] = X[i * d + k]; Zc[i * p + d] = 1; }
  // each annotator's rows (its labels, in the given order) and their design [x_item, 1]
  const rowsOf = Array.from({ length: T }, () => []);
  for (let r = 0; r < L; r++) rowsOf[crowd.expert[r]].push(r);
  const Za = rowsOf.map((rows) => {
    const Z = new Float64Array(rows.length * p);
    rows.forEach((r, m) => { const i = crowd.item[r]; for (let k = 0; k < d; k++) Z[m * p + k] = X[i * d + k]; Z[m * p + d] = 1; });
    return Z;
  });
  // labels grouped by item (stable), as the package's bincount sums them
  const ptr = new Int32Array(n + 1);
  for (let r = 0; r < L; r++) ptr[crowd.item[r] + 1]++;
  for (let i = 0; i < n; i++) ptr[i + 1] += ptr[i];
  const byItem = new Int32Array(L), fill = ptr.slice(0, n);
  for (let r = 0; r < L; r++) byItem[fill[crowd.item[r]]++] = r;

  const mStep = (mu, start) => {
    const clf = fitLogistic(Zc, mu, n, p, l2, [...start.coef, start.intercept]);
    const W = new Float64Array(T * d), gamma = new Float64Array(T);
    for (let t = 0; t < T; t++) {
      const rows = rowsOf[t];
      const right = new Float64Array(rows.length);
      rows.forEach((r, m) => { const q = mu[crowd.item[r]]; right[m] = crowd.label[r] === 1 ? q : 1 - q; });
      const init = [...start.reliabilityCoef.slice(t * d, t * d + d), -start.reliabilityIntercept[t]];
      const fit = fitLogistic(Za[t], right, rows.length, p, l2, init);
      for (let k = 0; k < d; k++) W[t * d + k] = fit.theta[k];
      gamma[t] = -fit.theta[d];
    }
    return { coef: Array.from(clf.theta.slice(0, d)), intercept: clf.theta[d],
             reliabilityCoef: W, reliabilityIntercept: gamma };
  };
  const penalty = (pr) => {
    if (l2 === 0) return 0;
    let c = 0, w = 0, g = 0;
    for (const v of pr.coef) c += v * v;
    for (const v of pr.reliabilityCoef) w += v * v;
    for (const v of pr.reliabilityIntercept) g += v * v;
    return 0.5 * l2 * (c + pr.intercept * pr.intercept + w + g);
  };
  const eStep = (pr) => {
    const q = new Float64Array(n * 2);
    let logLik = 0;
    for (let i = 0; i < n; i++) {
      let a = 0;
      for (let k = 0; k < d; k++) a += X[i * d + k] * pr.coef[k];
      a += pr.intercept;
      let s0 = 0, s1 = 0;
      for (let m = ptr[i]; m < ptr[i + 1]; m++) {
        const r = byItem[m], t = crowd.expert[r];
        let b = 0;
        for (let k = 0; k < d; k++) b += X[i * d + k] * pr.reliabilityCoef[t * d + k];
        const sb = (2 * crowd.label[r] - 1) * (b - pr.reliabilityIntercept[t]);
        s0 += logExpit(-sb); s1 += logExpit(sb);
      }
      const l0 = logExpit(-a) + s0, l1 = logExpit(a) + s1;
      const mx = Math.max(l0, l1);
      const p0 = Math.exp(l0 - mx), p1 = Math.exp(l1 - mx), s = p0 + p1;
      logLik += Math.log(s) + mx;
      q[2 * i] = p0 / s; q[2 * i + 1] = p1 / s;
    }
    return { q, objective: logLik - penalty(pr) };
  };

  const { v, total } = softVote(crowd);
  const zero = { coef: new Array(d).fill(0), intercept: 0, reliabilityCoef: new Float64Array(T * d),
                 reliabilityIntercept: new Float64Array(T) };
  const mu = new Float64Array(n);
  const run = runEm(mStep(v, zero), eStep, (post, pr) => {
    for (let i = 0; i < n; i++) mu[i] = post[2 * i + 1];
    return mStep(mu, pr);
  }, { maxIter, tol });
  let params = run.params;
  const { q, history, nIter, converged } = run;
  // the sign flip: agree with the vote on at least half of the labelled items
  let agreement = 0, labelled = 0;
  for (let i = 0; i < n; i++) {
    if (total[i] === 0) continue;
    labelled++;
    agreement += q[2 * i + 1] * v[i] + (1 - q[2 * i + 1]) * (1 - v[i]);
  }
  const flipped = agreement < 0.5 * labelled;
  if (flipped) {
    params = { coef: params.coef.map((c) => -c), intercept: -params.intercept,
               reliabilityCoef: params.reliabilityCoef.map((w) => -w),
               reliabilityIntercept: params.reliabilityIntercept.map((g) => -g) };
    for (let i = 0; i < n; i++) { const s = q[2 * i]; q[2 * i] = q[2 * i + 1]; q[2 * i + 1] = s; }
  }
  return { posterior: q, ...params, history, nIter, converged, flipped };
}

/** P(z = 1 | x, labels) under given parameters (crowdlearn.widgets_annotators.bayes_posterior):
 * log-odds a_i + sum_t s_it b_it. */
export function annotatorsPosterior(crowd, X, d, coef, intercept, W, gamma) {
  const n = crowd.nItems, out = new Float64Array(n), logOdds = new Float64Array(n);
  for (let r = 0; r < crowd.item.length; r++) {
    const i = crowd.item[r], t = crowd.expert[r];
    let b = -gamma[t];
    for (let k = 0; k < d; k++) b += X[i * d + k] * W[t * d + k];
    logOdds[i] += (2 * crowd.label[r] - 1) * b;
  }
  for (let i = 0; i < n; i++) {
    let a = intercept;
    for (let k = 0; k < d; k++) a += X[i * d + k] * coef[k];
    out[i] = expit(a + logOdds[i]);
  }
  return out;
}

/** Majority vote with ties (and items without a label) broken at random by `rng`, as
 * crowdlearn.MajorityVote(unlabelled="uniform") does with its own generator; `tied` marks
 * the items whose class was drawn. */
function binaryVote(crowd, rng) {
  const n = crowd.nItems, votes = new Int32Array(n * 2);
  for (let r = 0; r < crowd.item.length; r++) votes[crowd.item[r] * 2 + crowd.label[r]]++;
  const pred = new Int32Array(n), tied = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    if (votes[2 * i] === votes[2 * i + 1]) { tied[i] = 1; pred[i] = rng() < 0.5 ? 0 : 1; }
    else pred[i] = votes[2 * i + 1] > votes[2 * i] ? 1 : 0;
  }
  return { pred, tied };
}

/** Everything chapter 8's explorer shows for one setting of its sliders. */
export function compareAnnotators({ slopes, gamma, missing = 0, seed = 0, nItems = 600,
                                    coef = [2, -1], intercept = 0, l2 = 1, maxIter = 200,
                                    tol = 1e-6, grid = null }) {
  const crowd = simulateAnnotators({ nItems, coef, intercept, slopes, gamma, missing, seed });
  const T = slopes.length, d = crowd.d, n = nItems;
  const la = fitLogisticAnnotators(crowd, crowd.X, d, { l2, maxIter, tol });
  const ds = fitDawidSkene(crowd, { alpha: 0, maxIter, tol });
  const mv = binaryVote(crowd, makeRng(seed + 7919));
  const W = new Float64Array(T * d), gam = new Float64Array(T).fill(gamma);
  for (let t = 0; t < T; t++) W[t * d] = slopes[t];
  const oracle = annotatorsPosterior(crowd, crowd.X, d, coef, intercept, W, gam);
  let mvRight = 0, dsRight = 0, laRight = 0, oracleRight = 0;
  for (let i = 0; i < n; i++) {
    const z = crowd.truth[i];
    mvRight += mv.pred[i] === z;
    dsRight += (ds.posterior[2 * i + 1] > ds.posterior[2 * i] ? 1 : 0) === z;
    laRight += (la.posterior[2 * i + 1] > la.posterior[2 * i] ? 1 : 0) === z;
    oracleRight += (oracle[i] > 0.5 ? 1 : 0) === z;
  }
  const xs = grid || Array.from({ length: 61 }, (_, g) => -3 + g * 0.1);
  const trueEta = [], estimatedEta = [], dsReliability = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    trueEta.push(xs.map((x) => expit(slopes[t] * x - gamma)));
    estimatedEta.push(xs.map((x) => expit(la.reliabilityCoef[t * d] * x - la.reliabilityIntercept[t])));
    for (let k = 0; k < 2; k++) dsReliability[t] += ds.classPrior[k] * ds.confusion[(t * 2 + k) * 2 + k];
  }
  let nUnlabelled = 0;
  const seen = new Uint8Array(n);
  for (let r = 0; r < crowd.item.length; r++) seen[crowd.item[r]] = 1;
  for (let i = 0; i < n; i++) nUnlabelled += !seen[i];
  return {
    crowd, la, ds, mv, oracle, grid: xs, trueEta, estimatedEta, dsReliability,
    mvAccuracy: mvRight / n, dsAccuracy: dsRight / n, laAccuracy: laRight / n,
    oracleAccuracy: oracleRight / n, nUnlabelled,
  };
}
