"""Izbicki & Stern (2013), section 4.1, over many seeds; and what SQUAREM buys on its fits.

Run from the repository root::

    .venv/bin/python benchmarks/izbicki_stern_sim.py                    # 8 seeds, 4 settings
    .venv/bin/python benchmarks/izbicki_stern_sim.py --seeds 30 --n-lambdas 8 --n-jobs 2

Part 1 runs :func:`crowdlearn.simulate.izbicki_stern.replication_study` (the protocol of chapter 10:
penalty grid, lambda chosen by S-hat on fresh validation items, expected error on 20,000
test items) and prints, per setting, each method's mean expected test error with a 95%
t-interval over seeds, and the paired differences with a verdict only where the interval
excludes zero, next to the paper's Table 2 (S-hat). Every fit's convergence is counted.

Part 2 times plain EM against SQUAREM (``accelerate=True``) side by side, on the same fits
(the first seed's grid in scenarios (i) and (ii), expert_prior=1, tol=1e-7, full M-steps),
alternating the two so that machine load hits both alike, and prints M-steps, seconds, the
ratio and the final objectives. Both stop by the same rule (a gain below tol); where the
objective is nearly flat (lambda = 0: 55 unpenalised coefficients) the two can stop at
different points of the ridge, and the printed objectives show by how much.
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
from crowdlearn.simulate.izbicki_stern import METHODS, bayes_error, replication_study
from crowdlearn.simulate.sparse import simulate_izbicki_stern
from crowdlearn.features.sparse_experts import SparseExpertsEM, sparse_experts_lambda_max

# Table 2 of the paper, "Simulated" rows: S-hat of (EM-Sparse, EM, Majority). The column
# headers are lost in the extracted text; the order is inferred from section 4.1.
TABLE2 = {"(i)": (0.434, 0.485, 0.446), "(ii)": (0.459, 0.510, 0.483),
          "(iii)": (0.462, 0.463, 0.477)}
SETTINGS = {"(i)": ("i", "raw"), "(ii)": ("ii", "raw"), "(iii)": ("iii", "raw"),
            "(iii) centred": ("iii", "centered")}
PAIRS = [("EM-Sparse", "EM"), ("EM-Sparse", "Majority"), ("Majority", "EM"),
         ("EM-Sparse", "True labels")]


def say(*args):
    print(*args, flush=True)


def part_one(args):
    study = replication_study(SETTINGS, range(args.seeds), n_jobs=args.n_jobs, progress=True,
                              n_lambdas=args.n_lambdas)
    bayes, se = bayes_error(1_000_000)
    say(f"\n{len(SETTINGS)} settings x {args.seeds} seeds, {args.n_lambdas} penalties: "
        f"{study.seconds:.1f} s wall with {args.n_jobs} process(es); {study.n_fits()} EM "
        f"fits, {len(study.not_converged())} not converged, {len(study.diverging())} "
        f"with an expert running off")
    say(f"population Bayes error {bayes:.4f} (s.e. {se:.4f})")
    for name, reps in study.runs.items():
        eps = np.mean([r.eps_bar for r in reps])
        say(f"\n{name}: mean expert error rate {eps:.3f}; lambda/lambda_max chosen: "
            + ", ".join(f"{r.lambdas[r.selected] / r.lambdas[0] / np.sqrt(10):.3g}"
                        for r in reps))
        say(f"  {'method':12s} {'expected error':>24s} {'S-hat (test)':>14s} {'paper':>7s}")
        for j, m in enumerate(METHODS):
            mean, low, high = study.interval(name, m)
            s = np.mean([r.S[m] for r in reps])
            paper = TABLE2.get(name, (None,) * 3)[j] if j < 3 else None
            say(f"  {m:12s} {mean:.4f} [{low:.4f}, {high:.4f}] {s:14.4f} "
                f"{'' if paper is None else f'{paper:.3f}':>7s}")
        for a, b in PAIRS:
            mean, low, high = study.interval(name, a, b)
            verdict = (f"{a} better" if high < 0 else f"{b} better" if low > 0
                       else "not resolved")
            say(f"  {a + ' - ' + b:24s} {mean:+.4f} [{low:+.4f}, {high:+.4f}]  {verdict}")


def part_two():
    say("\nPlain EM vs SQUAREM on the same fits (expert_prior=1, tol=1e-7):")
    say(f"  {'fit':22s} {'M-steps':>15s} {'seconds':>17s} {'ratio':>6s} {'F plain':>12s} "
        f"{'F SQUAREM':>12s}")
    totals = np.zeros(2)
    for scenario in ("i", "ii"):
        train = simulate_izbicki_stern(2500, scenario, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lam_max = sparse_experts_lambda_max(train.labels, train.X, expert_prior=1.0)
        for lam in [*(lam_max * np.geomspace(1, 1e-2, 5)[1:]), 0.0]:
            out = {}
            for accelerate in (False, True):  # alternated, one after the other
                t0 = time.perf_counter()
                m = SparseExpertsEM(lam=lam, expert_prior=1.0, accelerate=accelerate,
                                    max_iter=5000).fit(train.labels, train.X)
                out[accelerate] = (m.n_iter_, time.perf_counter() - t0, m.objective_,
                                   m.converged_)
            (n0, t0_, f0, c0), (n1, t1, f1, c1) = out[False], out[True]
            totals += (t0_, t1)
            say(f"  ({scenario}) lambda={lam:8.3f} {n0:6d} -> {n1:5d} {t0_:7.2f} -> {t1:6.2f} "
                f"{t0_ / t1:6.1f} {f0:12.3f} {f1:12.3f}"
                + ("" if c0 and c1 else "  (not converged)"))
    say(f"  total: {totals[0]:.1f} s plain, {totals[1]:.1f} s SQUAREM, ratio "
        f"{totals[0] / totals[1]:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--n-lambdas", type=int, default=4)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--skip-study", action="store_true", help="only part 2")
    args = ap.parse_args()
    say(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; load average "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if not args.skip_study:
        part_one(args)
    part_two()


if __name__ == "__main__":
    main()
