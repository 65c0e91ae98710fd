// em_steps_engine.js -- EM on chapter 3's two-coin mixture, in the browser.
//
// The same computations as crowdlearn/widgets/em_steps.py, line for line: item i is a batch
// of `tosses` tosses of coin 1 (probability phi) or coin 2, which show heads with
// probabilities theta[0] and theta[1]; heads[i] is its number of heads. coinEStep gives the
// posteriors Q_i(n) and the log-likelihood (binomial coefficients included), coinMStep the
// new parameters, coinFreeEnergy F(q, theta), coinHalfSteps the states start, E, M, E, ...,
// coinFixedPoint EM until it stops rising (the package's rule) and coinBasins where EM ends
// from a grid of starts. tests/test_js_em_steps.py checks them against the Python to 1e-9.
//
// An ES module with no imports (its names carry the prefix `coin`); importable on its own
// from Node.

/** log C(tosses, h), as a sum of logs. */
export function coinLogBinom(tosses, h) {
  let s = 0;
  for (let k = 1; k <= h; k++) s += Math.log((tosses - h + k) / k);
  return s;
}

function coinLogJoint(heads, tosses, theta, phi) {
  const prior = [Math.log(phi), Math.log(1 - phi)];
  return heads.map((h) => [0, 1].map((n) => prior[n] + h * Math.log(theta[n]) +
    (tosses - h) * Math.log1p(-theta[n]) + coinLogBinom(tosses, h)));
}

/** The E-step: q (m rows of [Q_i(1), Q_i(2)]) and the log-likelihood. */
export function coinEStep(heads, tosses, theta, phi) {
  const lj = coinLogJoint(heads, tosses, theta, phi);
  let logLik = 0;
  const q = lj.map(([a, b]) => {
    const top = Math.max(a, b);
    const logEv = top + Math.log(Math.exp(a - top) + Math.exp(b - top));
    logLik += logEv;
    return [Math.exp(a - logEv), Math.exp(b - logEv)];
  });
  return { q, logLik };
}

/** The M-step: expected heads over expected tosses of each coin, and phi = mean Q_i(1). */
export function coinMStep(heads, tosses, q) {
  const theta = [0, 1].map((n) => {
    let w = 0, hn = 0;
    q.forEach((row, i) => { w += row[n]; hn += row[n] * heads[i]; });
    return w > 0 ? hn / (tosses * w) : 0.5;
  });
  let s = 0;
  q.forEach((row) => { s += row[0]; });
  return { theta, phi: s / q.length };
}

/** F(q, theta) = sum_i sum_n q_i(n) [log p(h_i, n | theta) - log q_i(n)], 0 log 0 = 0. */
export function coinFreeEnergy(heads, tosses, q, theta, phi) {
  const lj = coinLogJoint(heads, tosses, theta, phi);
  let f = 0;
  q.forEach((row, i) => row.forEach((v, n) => { if (v > 0) f += v * (lj[i][n] - Math.log(v)); }));
  return f;
}

/** The start (q uniform) and every state after nHalf half-steps: odd = E-step, even = M. */
export function coinHalfSteps(heads, tosses, theta0, phi0, nHalf) {
  let theta = theta0.slice(), phi = phi0, q = heads.map(() => [0.5, 0.5]);
  const states = [];
  for (let k = 0; k <= nHalf; k++) {
    if (k > 0 && k % 2 === 1) q = coinEStep(heads, tosses, theta, phi).q;
    else if (k > 0) ({ theta, phi } = coinMStep(heads, tosses, q));
    const { logLik } = coinEStep(heads, tosses, theta, phi);
    states.push({ phase: k === 0 ? "start" : (k % 2 === 1 ? "E" : "M"), t: Math.floor((k + 1) / 2),
                  theta: theta.slice(), phi, q: q.map((r) => r.slice()), logLik,
                  freeEnergy: coinFreeEnergy(heads, tosses, q, theta, phi) });
  }
  return states;
}

/** EM until an iteration raises the log-likelihood by at most tol * max(1, |ll|), or
 * maxIter iterations; path = the parameters [theta1, theta2, phi] after every M-step. */
export function coinFixedPoint(heads, tosses, theta0, phi0, { tol = 1e-10, maxIter = 2000 } = {}) {
  let theta = theta0.slice(), phi = phi0;
  let { q, logLik } = coinEStep(heads, tosses, theta, phi);
  const path = [[theta[0], theta[1], phi]];
  let converged = false, t = 0;
  while (t < maxIter) {
    ({ theta, phi } = coinMStep(heads, tosses, q));
    t += 1;
    path.push([theta[0], theta[1], phi]);
    const e = coinEStep(heads, tosses, theta, phi);
    const rise = e.logLik - logLik;
    q = e.q; logLik = e.logLik;
    if (rise <= tol * Math.max(1, Math.abs(logLik))) { converged = true; break; }
  }
  return { theta, phi, logLik, nIter: t, converged, path };
}

/** Where EM ends from each start (grid[a], grid[b]) of an nGrid x nGrid grid on
 * [0.05, 0.95], coin 1 picked with probability phi; entry a * nGrid + b. */
export function coinBasins(heads, tosses, phi, nGrid, opts = {}) {
  const grid = Array.from({ length: nGrid }, (_, k) => 0.05 + (0.9 * k) / (nGrid - 1));
  const runs = [];
  for (const a of grid) for (const b of grid) runs.push(coinFixedPoint(heads, tosses, [a, b], phi, opts));
  return { grid, runs };
}

/** The distinct end points of `runs` (biases within 0.005), best log-likelihood first;
 * each run gets the index of its end point. Symmetric ends (|theta1 - theta2| < 0.005) are
 * flagged. */
export function coinClassify(runs) {
  const ends = [];
  const label = runs.map((r) => {
    let k = ends.findIndex((e) => Math.abs(e.theta[0] - r.theta[0]) < 0.005 &&
                                 Math.abs(e.theta[1] - r.theta[1]) < 0.005);
    if (k < 0) {
      ends.push({ theta: r.theta.slice(), phi: r.phi, logLik: r.logLik, count: 0,
                  symmetric: Math.abs(r.theta[0] - r.theta[1]) < 0.005 });
      k = ends.length - 1;
    }
    ends[k].count += 1;
    return k;
  });
  const order = ends.map((_, k) => k).sort((x, y) => ends[y].logLik - ends[x].logLik ||
                                                      ends[y].theta[0] - ends[x].theta[0]);
  const rank = new Array(ends.length);
  order.forEach((k, r) => { rank[k] = r; });
  return { ends: order.map((k) => ends[k]), label: label.map((k) => rank[k]) };
}
