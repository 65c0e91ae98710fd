"""Where to spend the next label: replaying the bundled real crowds, policy against policy.

    .venv/bin/python benchmarks/bench_next_label.py            # about 1-2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_next_label.py --seeds 10 --rounds 30

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

After every round ``DawidSkene()`` is refitted from scratch on the labels bought so far, and
its accuracy against the truth is recorded. The table gives the accuracy (mean and standard
deviation over the seeds) against the number of labels bought per item; the last line is
``DawidSkene`` on the whole crowd. Nothing is asserted.
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


def fit(pool, bought, shape):
    labels = from_triples(pool["item"][bought], pool["worker"][bought],
                          pool["label"][bought], n_items=shape[0], n_experts=shape[1],
                          n_classes=shape[2])
    return DawidSkene(n_classes=shape[2]).fit(labels), labels


def replay(data, policy: str, seed: int, rounds: int, step: int) -> list[float]:
    """Accuracy after 0, 1, ..., ``rounds`` rounds of one policy on one shuffled crowd."""
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
    model, labels = fit(pool, bought, shape)
    accuracy = [data.accuracy(model.predict())]
    for _ in range(rounds):
        bought[choose(policy, rng, pool, bought, model, labels, step)] = True
        model, labels = fit(pool, bought, shape)
        accuracy.append(data.accuracy(model.predict()))
    return accuracy


def report(name, data, seeds, rounds, fraction):
    step = max(1, int(round(fraction * data.n_items)))
    results = {p: np.array([replay(data, p, s, rounds, step) for s in range(seeds)])
               for p in POLICIES}
    print(f"\n{name}: {data.n_items} items, {data.labels.n_experts} workers, "
          f"{data.labels.n_labels} labels ({data.labels.n_labels / data.n_items:.1f} per "
          f"item); {step} labels per round, {seeds} seeds")
    print("  labels/item " + "".join(f"{p:>17}" for p in POLICIES))
    for r in range(0, rounds + 1, max(1, rounds // 10)):
        per_item = 1 + r * step / data.n_items
        cells = "".join(f"   {results[p][:, r].mean():.3f} ± {results[p][:, r].std():.3f}"
                        for p in POLICIES)
        print(f"  {per_item:11.2f} {cells}")
    mean = {p: results[p][:, 1:].mean() for p in POLICIES}
    print("  mean over rounds 1.." + f"{rounds}" + "".join(f"   {mean[p]:.3f}        "
                                                         for p in POLICIES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = data.accuracy(DawidSkene().fit(data.labels).predict())
    print(f"  DawidSkene on the whole crowd: {whole:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fraction", type=float, default=0.05,
                        help="labels bought per round, as a fraction of the items")
    args = parser.parse_args(argv)
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} cores; load average at start: {os.getloadavg()[0]:.2f}")
    with Stopwatch() as total, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning/DegenerateFitWarning on tiny crowds
        for name in DATASETS:
            data = load_dataset(name)
            if data.truth is not None and data.has_truth.any():
                report(name, data, args.seeds, args.rounds, args.fraction)
    print(f"\ntotal: {total.wall:.1f} s wall, {total.cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
