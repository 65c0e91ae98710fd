"""Izbicki & Stern (2013), section 4.1, reproduced: sparse EM with the penalty chosen by S-hat.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/izbicki_stern_sim.py               # scenario (i), 3 seeds
    /tmp/venv/bin/python benchmarks/izbicki_stern_sim.py --scenarios i ii iii --seeds 5

For each scenario and seed (:func:`crowdlearn.simulate_sparse.simulate_izbicki_stern`):

* a training crowd of n = 2500 items (55 features, 3 experts);
* a *validation* crowd of 2500 fresh items whose experts' labels (never their
  truth) choose the penalty by the surrogate risk S-hat;
* a *test* sample of 20,000 fresh items with their truth (for R-hat) and their
  experts' labels (for S-hat, the statistic of the paper's Table 2).

Methods (the paper's three, plus two references):

* ``EM``          -- SparseExpertsEM with lam = 0 (maximum likelihood);
* ``EM-Sparse``   -- the penalty path (20 values from lambda_max down to lambda_max/100,
  warm starts), lambda chosen by S-hat on the validation crowd;
* ``Majority``    -- L1 logistic regression on the majority-vote labels, lambda chosen
  the same way (20 values);
* ``True labels`` -- unpenalised logistic regression on the training items' truth;
* ``Bayes``       -- the Bayes rule 1{P(z=1|x) > 1/2} with the true parameters.

Printed: the wall time of the path, R-hat (test error) and S-hat on the test sample
(mean and standard deviation over seeds), the S-hat predicted by the identity
E[S-hat] = (1 - 2 eps_bar) R + eps_bar, the lambda chosen by S-hat and the one that
would minimise R-hat (oracle, not available in practice), and the paper's Table 2
values for comparison. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np

import crowdlearn
from crowdlearn import ConvergenceWarning
from crowdlearn._l1_logistic import fit_l1_logistic, l1_logistic_lambda_max
from crowdlearn.model_selection import expected_surrogate_risk, surrogate_risk, true_risk
from crowdlearn.simulate_sparse import simulate_izbicki_stern
from crowdlearn.sparse_experts import (MajorityVoteLogistic, SparseExpertsEM,
                                       sparse_experts_path)

# Table 2 of the paper, "Simulated" rows: S-hat of (EM-Sparse, EM, Majority). The column
# headers are lost in the extracted text; the order is inferred from section 4.1
# ("EM Sparse beats the other models ... plain EM does not give satisfactory results").
TABLE2 = {"i": (0.434, 0.485, 0.446), "ii": (0.459, 0.510, 0.483), "iii": (0.462, 0.463, 0.477)}


def predict_linear(coef, intercept, X):
    return (X @ coef + intercept >= 0).astype(int)


def run_one(scenario: str, seed: int, n: int, n_lambdas: int) -> dict:
    train = simulate_izbicki_stern(n, scenario, random_state=seed)
    valid = simulate_izbicki_stern(n, scenario, random_state=10_000 + seed)
    test = simulate_izbicki_stern(20_000, scenario, random_state=20_000 + seed)
    eps_bar = float(test.error_prob.mean())
    out = {"eps_bar": eps_bar}

    def record(name, pred_test):
        r = true_risk(pred_test, test.truth)
        out[name] = (r, surrogate_risk(pred_test, test.labels),
                     expected_surrogate_risk(r, test.error_prob))

    # EM-Sparse: the path, lambda by S-hat on the validation crowd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0, c0 = time.perf_counter(), time.process_time()
        path = sparse_experts_path(train.labels, train.X, n_lambdas=n_lambdas,
                                   lambda_min_ratio=1e-2)
        out["path_seconds"] = time.perf_counter() - t0
        out["path_cpu"] = time.process_time() - c0
        out["path_iters"] = int(path.n_iter.sum())
        s_valid = [surrogate_risk(m.predict(valid.X), valid.labels) for m in path.models]
        r_test = [true_risk(m.predict(test.X), test.truth) for m in path.models]
        best = int(np.argmin(s_valid))
        oracle = int(np.argmin(r_test))
        out["lambda"] = (path.lambdas[best], path.lambdas[oracle], path.lambdas[0])
        out["nnz"] = (int(np.count_nonzero(path.coef[best][:5])),
                      int(np.count_nonzero(path.coef[best][5:])))
        record("EM-Sparse", path.models[best].predict(test.X))
        out["EM-Sparse (oracle lambda)"] = (r_test[oracle], np.nan, np.nan)

        # EM without penalty
        t0, c0 = time.perf_counter(), time.process_time()
        em = SparseExpertsEM(lam=0.0).fit(train.labels, train.X)
        out["em_seconds"] = time.perf_counter() - t0
        out["em_cpu"] = time.process_time() - c0
        record("EM", em.predict(test.X))

    # Majority: L1 logistic regression on the vote, lambda by S-hat on the validation crowd
    mv = MajorityVoteLogistic(lam=0.0, random_state=seed).fit(train.labels, train.X)
    vote = mv.vote_
    lab = ~np.isnan(vote)
    lmax = l1_logistic_lambda_max(train.X[lab], vote[lab])
    best_s, best_pred = np.inf, None
    coef, icpt = None, None
    for lam in lmax * np.geomspace(1.0, 1e-2, n_lambdas):
        fit = fit_l1_logistic(train.X[lab], vote[lab], lam=lam, coef_init=coef,
                              intercept_init=icpt)
        coef, icpt = fit.coef, fit.intercept
        s = surrogate_risk(predict_linear(coef, icpt, valid.X), valid.labels)
        if s < best_s:
            best_s, best_pred = s, predict_linear(coef, icpt, test.X)
    record("Majority", best_pred)

    # references
    fit = fit_l1_logistic(train.X, train.truth, lam=0.0)
    record("True labels", predict_linear(fit.coef, fit.intercept, test.X))
    record("Bayes", (test.proba > 0.5).astype(int))
    return out


def say(*args):
    print(*args, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=["i"], choices=["i", "ii", "iii"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=2500)
    ap.add_argument("--n-lambdas", type=int, default=20)
    args = ap.parse_args()
    say(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    total0, cpu0 = time.perf_counter(), time.process_time()
    say(f"load average at start: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    names = ["EM-Sparse", "EM", "Majority", "True labels", "Bayes", "EM-Sparse (oracle lambda)"]
    for scenario in args.scenarios:
        runs = [run_one(scenario, seed, args.n, args.n_lambdas) for seed in range(args.seeds)]
        eps = np.mean([r["eps_bar"] for r in runs])
        say(f"\nScenario ({scenario}): n = {args.n} training items, 55 features, 3 experts "
              f"(mean error rate on the test items {eps:.3f}); {args.seeds} seeds")
        ps = np.array([r["path_seconds"] for r in runs])
        pc = np.array([r["path_cpu"] for r in runs])
        say(f"  penalty path, {args.n_lambdas} lambdas (warm starts + a vote restart at each): "
            f"{ps.mean():.1f} s wall, {pc.mean():.1f} s CPU per path (wall min {ps.min():.1f}, "
            f"max {ps.max():.1f}); {np.mean([r['path_iters'] for r in runs]):.0f} EM "
            f"iterations (best runs) per path")
        say(f"  EM at lambda=0: {np.mean([r['em_seconds'] for r in runs]):.1f} s wall, "
            f"{np.mean([r['em_cpu'] for r in runs]):.1f} s CPU")
        lam = np.array([r["lambda"] for r in runs])
        say("  lambda chosen by S-hat: " + ", ".join(f"{v:.3g}" for v in lam[:, 0])
              + "; minimising R-hat: " + ", ".join(f"{v:.3g}" for v in lam[:, 1])
              + "; lambda_max: " + ", ".join(f"{v:.3g}" for v in lam[:, 2]))
        nnz = np.array([r["nnz"] for r in runs])
        say("  non-zero beta at the chosen lambda (of 5 true / of 50 noise): "
              + ", ".join(f"{a}/{b}" for a, b in nnz))
        say(f"  {'method':27s} {'R-hat (test error)':>20s} {'S-hat (test)':>16s} "
              f"{'(1-2e)R+e':>10s} {'paper S-hat':>12s}")
        for j, name in enumerate(names):
            vals = np.array([r[name] for r in runs], dtype=float)
            mean, sd = vals.mean(axis=0), vals.std(axis=0)
            paper = TABLE2[scenario][j] if j < 3 else None
            s_txt = "" if np.isnan(mean[1]) else f"{mean[1]:.3f} ± {sd[1]:.3f}"
            e_txt = "" if np.isnan(mean[2]) else f"{mean[2]:.3f}"
            p_txt = "" if paper is None else f"{paper:.3f}"
            say(f"  {name:27s} {mean[0]:11.3f} ± {sd[0]:.3f}  {s_txt:>16s} {e_txt:>10s} "
                  f"{p_txt:>12s}")
    say(f"\ntotal benchmark time: {time.perf_counter() - total0:.1f} s wall, "
        f"{time.process_time() - cpu0:.1f} s CPU; load average at the end: "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
