"""Where to spend the next label: replaying the bundled real crowds, policy against policy.

    .venv/bin/python benchmarks/bench_next_label.py            # about 2-3 minutes on 2 cores
    .venv/bin/python benchmarks/bench_next_label.py --seeds 10 --rounds 30
    .venv/bin/python benchmarks/bench_next_label.py --fit partial   # only the partial_fit path
    .venv/bin/python benchmarks/bench_next_label.py --fit all       # refit, partial, incremental

For every bundled crowd with a known truth and every seed: the crowd's labels are shuffled
(seeded), each item starts with its first label in that order, and the other labels form the
pool that may be bought (a replay: a bought label is the one the worker really gave). Then,
in rounds of 5% of the items, each policy buys labels from the pool, one per item per round
(``crowdlearn.replay_policies``, the replay the chapter runs; this script adds what its
callback sees):

* ``random``       -- pairs drawn uniformly from the pool;
* ``round-robin``  -- the items with the fewest labels so far (ties at random), a random
                      worker of the pool for each;
* ``uncertainty``  -- the items whose Dawid--Skene posterior has the highest entropy, a
                      random worker of the pool for each;
* ``model``        -- the pairs of the pool with the highest expected reduction of the
                      posterior error under the fitted model
                      (:func:`crowdlearn.expected_label_gains`, one per item, as
                      :func:`crowdlearn.recommend_labels` chooses them).

After every round the model takes in the labels bought so far -- ``--fit partial``:
``DawidSkene.partial_fit`` of the round's new labels, EM continued from the fitted
parameters; ``--fit refit``: ``DawidSkene()`` refitted from scratch on all of them, as before
0.3; ``--fit both`` (the default): each replay run both ways -- and its accuracy against the
truth is recorded. A table gives the accuracy (mean and standard deviation over the seeds)
against the number of labels bought per item, one per path run (the refit table is the one
printed before 0.3); then ``DawidSkene`` on the whole crowd. With ``both``, a last table puts
the two paths side by side for every policy: EM iterations per round, the CPU time spent
in fitting (the policies' own work not counted), the fits that stopped at ``max_iter``, the
mean accuracy over the rounds, and how often the objective partial_fit reached is at least
that of a fit from scratch on the same labels (to 1e-3, the objectives being about -1e2 to
-1e4; that fit is made only for this comparison and not timed). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np

import crowdlearn
from crowdlearn import DawidSkene
from crowdlearn.active import POLICIES, replay_policies
from crowdlearn.datasets import DATASETS, load_dataset

from _timing import Stopwatch


def replay(data, seeds: int, rounds: int, fraction: float, how: str):
    """Every policy replayed ``seeds`` times on the crowd, taking in each round's labels by
    ``how`` ("refit", "partial" or "incremental"): ``crowdlearn.replay_policies`` and,
    gathered by its callback, the EM iterations of the rounds' fits and, but for "refit", the
    objective minus
    that of ``DawidSkene()`` fitted from scratch on the same labels (not timed)."""
    K = data.labels.n_classes
    iterations = {p: 0 for p in POLICIES}
    gaps = {p: [] for p in POLICIES}

    def watch(policy, replay_index, round_index, model, labels):
        if round_index == 0:  # the start: a fit from scratch either way
            return
        iterations[policy] += model.n_iter_
        if how != "refit":
            gaps[policy].append(model.objective_ - DawidSkene(n_classes=K).fit(labels).objective_)

    result = replay_policies(data.labels, data.truth, n_replays=seeds, n_rounds=rounds,
                             per_round=fraction, fit=how, callback=watch)
    return {"result": result, "iterations": iterations, "gaps": gaps}


WHAT = {"refit": "refitting DawidSkene() from scratch", "partial": "DawidSkene.partial_fit",
        "incremental": "DawidSkene.partial_fit(..., incremental=True)"}


def accuracy_table(run, rounds, how):
    """Accuracy (mean ± sd over the seeds) against labels per item, one column per policy."""
    results = run["result"].accuracy
    print(f"  accuracy after every round, {WHAT[how]}:")
    print("  labels/item " + "".join(f"{p:>17}" for p in POLICIES))
    for r in range(0, rounds + 1, max(1, rounds // 10)):
        per_item = run["result"].labels_per_item[r]
        cells = "".join(f"   {results[p][:, r].mean():.3f} ± {results[p][:, r].std():.3f}"
                        for p in POLICIES)
        print(f"  {per_item:11.2f} {cells}")
    mean = {p: results[p][:, 1:].mean() for p in POLICIES}
    print("  mean over rounds 1.." + f"{rounds}" + "".join(f"   {mean[p]:.3f}        "
                                                         for p in POLICIES))


def cost_table(runs, rounds: int, seeds: int, how: str = "partial") -> None:
    """Refit against ``how`` (partial_fit, or partial_fit with ``incremental=True``), policy
    by policy (``runs[how][policy]``: the replays)."""
    print(f"  the fits after the rounds, refit | {how}:")
    print("  policy         EM iterations/round      fit CPU time (s)       rounds at "
          f"max_iter   mean accuracy     {how} objective - refit's, same labels")
    for p in POLICIES:
        it = {h: runs[h]["iterations"][p] / (rounds * seeds) for h in runs}
        sec = {h: runs[h]["result"].fit_seconds[p] for h in runs}
        cap = {h: runs[h]["result"].n_capped[p] for h in runs}
        acc = {h: runs[h]["result"].accuracy[p][:, 1:].mean() for h in runs}
        print(f"  {p:<12} {it['refit']:6.1f} | {it[how]:5.1f} "
              f"({it['refit'] / max(it[how], 1e-9):4.1f}x)   "
              f"{sec['refit']:5.2f} | {sec[how]:5.2f} "
              f"({sec['refit'] / max(sec[how], 1e-9):4.1f}x)   "
              f"{cap['refit']:4d} | {cap[how]:<4d} of {rounds * seeds:<4d}   "
              f"{acc['refit']:.3f} | {acc[how]:.3f}     "
              f"{gap_summary(runs[how]['gaps'][p])}")


def gap_summary(gaps) -> str:
    """How the continued run's objective compares with a fit from scratch on the same
    labels: rounds where it is at least as high (to 1e-3), and the median gap."""
    gaps = np.asarray(gaps)
    return f"{(gaps >= -1e-3).sum():3d} of {gaps.size} >= ; median {np.median(gaps):+.2f}"


def report(name, data, seeds, rounds, fraction, fit_how="both"):
    step = max(1, int(round(fraction * data.n_items)))
    hows = {"both": ("refit", "partial"), "all": ("refit", "partial", "incremental")}.get(
        fit_how, (fit_how,))
    runs = {h: replay(data, seeds, rounds, fraction, h) for h in hows}
    print(f"\n{name}: {data.n_items} items, {data.labels.n_experts} workers, "
          f"{data.labels.n_labels} labels ({data.labels.n_labels / data.n_items:.1f} per "
          f"item); {step} labels per round, {seeds} seeds")
    for how in hows:
        accuracy_table(runs[how], rounds, how)
    print(f"  DawidSkene on the whole crowd: {runs[hows[0]]['result'].whole_crowd:.3f}")
    for how in hows[1:] if hows[0] == "refit" else ():
        cost_table(runs, rounds, seeds, how)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fraction", type=float, default=0.05,
                        help="labels bought per round, as a fraction of the items")
    parser.add_argument("--fit", choices=("both", "all", "partial", "incremental", "refit"),
                        default="both",
                        help="after each round: partial_fit on the new labels (with "
                             "incremental=True: incremental), refit from scratch, refit "
                             "and partial side by side (both, the default), or all three")
    args = parser.parse_args(argv)
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} cores; load average at start: {os.getloadavg()[0]:.2f}")
    with Stopwatch() as total, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning/DegenerateFitWarning on tiny crowds
        for name in DATASETS:
            data = load_dataset(name)
            if data.truth is not None and data.has_truth.any():
                report(name, data, args.seeds, args.rounds, args.fraction, args.fit)
    print(f"\ntotal: {total.wall:.1f} s wall, {total.cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
