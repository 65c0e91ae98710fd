"""Where to spend the next label: replaying the bundled real crowds, policy against policy.

    .venv/bin/python benchmarks/bench_next_label.py            # about 2-3 minutes on 2 cores
    .venv/bin/python benchmarks/bench_next_label.py --seeds 10 --rounds 30
    .venv/bin/python benchmarks/bench_next_label.py --fit partial   # only the partial_fit path

For every bundled crowd with a known truth and every seed: the crowd's labels are shuffled
(seeded), each item starts with its first label in that order, and the other labels form the
pool that may be bought (a replay: a bought label is the one the worker really gave). Then,
in rounds of 5% of the items, each policy buys labels from the pool, one per item per round:

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
from crowdlearn import DawidSkene, expected_label_gains, from_triples
from crowdlearn.datasets import DATASETS, load_dataset
from crowdlearn.metrics import posterior_entropy

from _timing import Stopwatch

POLICIES = ("random", "round-robin", "uncertainty", "model")


def first_per_item(rows: np.ndarray, item: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` of ``rows`` (in their order) whose items have not come before."""
    first = np.sort(np.unique(item[rows], return_index=True)[1])
    return rows[first][:n]


def choose(policy, rng, pool, bought, model, labels, n):
    """Rows of the pool the policy buys this round (at most ``n``, one per item)."""
    item, worker = pool["item"], pool["worker"]
    free = np.flatnonzero(~bought)
    if policy == "random":
        return rng.choice(free, size=min(n, free.size), replace=False)
    shuffled = rng.permutation(free)  # a random worker per item, random ties
    if policy == "round-robin":
        count = np.bincount(item[bought], minlength=model.posterior_.shape[0])
        key = count[item[shuffled]]
    elif policy == "uncertainty":
        key = -posterior_entropy(model)[item[shuffled]]
    else:
        gains = expected_label_gains(model, labels)
        row = pool["row"][gains.item, gains.worker]
        ranked = row[row >= 0]
        return first_per_item(ranked[~bought[ranked]], item, n)
    return first_per_item(shuffled[np.argsort(key, kind="stable")], item, n)


def bought_labels(pool, bought, shape):
    return from_triples(pool["item"][bought], pool["worker"][bought], pool["label"][bought],
                        n_items=shape[0], n_experts=shape[1], n_classes=shape[2])


def take_in(model, pool, rows, labels, how: str, shape):
    """The model after a round that bought ``rows``: refitted from scratch on ``labels``
    (everything bought so far), or ``partial_fit`` on the new rows; the fit's CPU time (this
    process's: it barely moves with the load of other jobs, unlike the wall time)."""
    with Stopwatch() as watch:
        if how == "refit":
            model = DawidSkene(n_classes=shape[2]).fit(labels)
        elif rows.size:
            model.partial_fit((pool["item"][rows], pool["worker"][rows], pool["label"][rows]))
    return model, watch.cpu


def replay(data, policy: str, seed: int, rounds: int, step: int, how: str = "partial"):
    """Accuracy after 0, 1, ..., ``rounds`` rounds of one policy on one shuffled crowd, and
    the EM iterations of the rounds' fits, their CPU time, how many stopped at
    ``max_iter`` (``how``: "partial" or "refit") and, for "partial", the objective minus
    that of ``DawidSkene()`` fitted from scratch on the same labels (not timed)."""
    rng = np.random.default_rng(seed)
    crowd = data.labels
    order = rng.permutation(crowd.n_labels)
    item, worker, label = crowd.item[order], crowd.expert[order], crowd.label[order]
    keep = np.sort(np.unique(item * crowd.n_experts + worker, return_index=True)[1])
    pool = {"item": item[keep], "worker": worker[keep], "label": label[keep]}
    pool["row"] = np.full((crowd.n_items, crowd.n_experts), -1)
    pool["row"][pool["item"], pool["worker"]] = np.arange(keep.size)
    bought = np.zeros(keep.size, dtype=bool)
    bought[np.unique(pool["item"], return_index=True)[1]] = True  # one label per item
    shape = (crowd.n_items, crowd.n_experts, crowd.n_classes)
    labels = bought_labels(pool, bought, shape)
    model = DawidSkene(n_classes=shape[2]).fit(labels)
    accuracy = [data.accuracy(model.predict())]
    iterations, seconds, capped, gaps = 0, 0.0, 0, []
    for _ in range(rounds):
        rows = choose(policy, rng, pool, bought, model, labels, step)
        bought[rows] = True
        labels = bought_labels(pool, bought, shape)
        model, cpu = take_in(model, pool, np.asarray(rows, dtype=np.intp), labels, how,
                             shape)
        iterations += model.n_iter_
        seconds += cpu
        capped += not model.converged_
        accuracy.append(data.accuracy(model.predict()))
        if how == "partial":  # the objective against a fit from scratch on the same labels
            gaps.append(model.objective_ - DawidSkene(n_classes=shape[2]).fit(labels).objective_)
    return accuracy, iterations, seconds, capped, gaps


WHAT = {"refit": "refitting DawidSkene() from scratch", "partial": "DawidSkene.partial_fit"}


def accuracy_table(name, data, runs, rounds, step, how):
    """Accuracy (mean ± sd over the seeds) against labels per item, one column per policy."""
    results = {p: np.array([r[0] for r in runs[p]]) for p in POLICIES}
    print(f"  accuracy after every round, {WHAT[how]}:")
    print("  labels/item " + "".join(f"{p:>17}" for p in POLICIES))
    for r in range(0, rounds + 1, max(1, rounds // 10)):
        per_item = 1 + r * step / data.n_items
        cells = "".join(f"   {results[p][:, r].mean():.3f} ± {results[p][:, r].std():.3f}"
                        for p in POLICIES)
        print(f"  {per_item:11.2f} {cells}")
    mean = {p: results[p][:, 1:].mean() for p in POLICIES}
    print("  mean over rounds 1.." + f"{rounds}" + "".join(f"   {mean[p]:.3f}        "
                                                         for p in POLICIES))


def cost_table(runs, rounds: int, seeds: int) -> None:
    """Refit against partial_fit, policy by policy (``runs[how][policy]``: the replays)."""
    print("  the fits after the rounds, refit | partial_fit:")
    print("  policy         EM iterations/round      fit CPU time (s)       rounds at "
          "max_iter   mean accuracy     partial_fit objective - refit's, same labels")
    for p in POLICIES:
        it = {h: sum(r[1] for r in runs[h][p]) / (rounds * seeds) for h in runs}
        sec = {h: sum(r[2] for r in runs[h][p]) for h in runs}
        cap = {h: sum(r[3] for r in runs[h][p]) for h in runs}
        acc = {h: np.array([r[0] for r in runs[h][p]])[:, 1:].mean() for h in runs}
        print(f"  {p:<12} {it['refit']:6.1f} | {it['partial']:5.1f} "
              f"({it['refit'] / max(it['partial'], 1e-9):4.1f}x)   "
              f"{sec['refit']:5.2f} | {sec['partial']:5.2f} "
              f"({sec['refit'] / max(sec['partial'], 1e-9):4.1f}x)   "
              f"{cap['refit']:4d} | {cap['partial']:<4d} of {rounds * seeds:<4d}   "
              f"{acc['refit']:.3f} | {acc['partial']:.3f}     "
              f"{gap_summary([g for r in runs['partial'][p] for g in r[4]])}")


def gap_summary(gaps) -> str:
    """How the continued run's objective compares with a fit from scratch on the same
    labels: rounds where it is at least as high (to 1e-3), and the median gap."""
    gaps = np.asarray(gaps)
    return f"{(gaps >= -1e-3).sum():3d} of {gaps.size} >= ; median {np.median(gaps):+.2f}"


def report(name, data, seeds, rounds, fraction, fit_how="both"):
    step = max(1, int(round(fraction * data.n_items)))
    hows = ("refit", "partial") if fit_how == "both" else (fit_how,)
    runs = {h: {p: [replay(data, p, s, rounds, step, h) for s in range(seeds)]
                for p in POLICIES} for h in hows}
    print(f"\n{name}: {data.n_items} items, {data.labels.n_experts} workers, "
          f"{data.labels.n_labels} labels ({data.labels.n_labels / data.n_items:.1f} per "
          f"item); {step} labels per round, {seeds} seeds")
    for how in hows:
        accuracy_table(name, data, runs[how], rounds, step, how)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = data.accuracy(DawidSkene().fit(data.labels).predict())
    print(f"  DawidSkene on the whole crowd: {whole:.3f}")
    if fit_how == "both":
        cost_table(runs, rounds, seeds)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fraction", type=float, default=0.05,
                        help="labels bought per round, as a fraction of the items")
    parser.add_argument("--fit", choices=("both", "partial", "refit"), default="both",
                        help="after each round: partial_fit on the new labels, refit from "
                             "scratch, or both side by side (default)")
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
