"""Taking a batch of labels in: refit, ``partial_fit`` and ``partial_fit(incremental=True)``.

    .venv/bin/python benchmarks/bench_incremental.py                 # 1M and 5M labels
    .venv/bin/python benchmarks/bench_incremental.py --items 20000 --fractions 0.01
    .venv/bin/python benchmarks/bench_incremental.py --frame        # a DataFrame of string ids

A simulated crowd (``--items`` items, 100 one-coin workers of accuracy 0.45-0.9, 4 classes,
5 labels per item) is fitted without a random ``fraction`` of its labels; the batch is then
taken in three ways, each on a copy of the same fitted model: a refit of ``DawidSkene()`` on
all the labels, ``partial_fit(batch)`` (EM on all the labels from the fitted parameters) and
``partial_fit(batch, incremental=True)`` (E-steps on the touched items only). Printed: CPU
time (``time.process_time``, best of ``--repeats``), EM iterations, the objective minus the
refit's, and the accuracy against the simulated truth. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
import warnings

import numpy as np

import crowdlearn
from crowdlearn import ConvergenceWarning, DawidSkene, from_triples
from crowdlearn.simulate import one_coin_confusion, simulate_crowd


def best_of(repeats, make):
    """``(cpu seconds, model)``: the fastest of ``repeats`` calls of ``make()``."""
    best = None
    for _ in range(repeats):
        t0 = time.process_time()
        model = make()
        spent = time.process_time() - t0
        if best is None or spent < best[0]:
            best = (spent, model)
    return best


def run(n_items: int, fraction: float, repeats: int, frame: bool = False) -> None:
    rng = np.random.default_rng(0)
    sim = simulate_crowd(n_items, one_coin_confusion(rng.uniform(0.45, 0.9, 100), 4),
                         labels_per_item=5, random_state=0)
    c = sim.labels
    late = rng.random(c.n_labels) < fraction
    if frame:  # a DataFrame of string ids t..., w...: batches are matched by id
        import pandas as pd

        df = pd.DataFrame({"task": np.char.add("t", c.item.astype(str)).astype(object),
                           "worker": np.char.add("w", c.expert.astype(str)).astype(object),
                           "label": c.label})
        c, batch, first_labels = df, df[late], df[~late]
        truth = pd.Series(sim.truth, index=[f"t{i}" for i in range(n_items)])
    else:
        batch = from_triples(c.item[late], c.expert[late], c.label[late], n_items=c.n_items,
                             n_experts=c.n_experts, n_classes=c.n_classes)
        first_labels = (c.item[~late], c.expert[~late], c.label[~late])
        truth = sim.truth
    first = DawidSkene().fit(first_labels)
    touched = np.unique(sim.labels.item[late]).size
    print(f"\n{late.size:,} labels ({n_items:,} items{', a DataFrame' if frame else ''}), "
          f"batch of {late.sum():,} labels ({fraction:g}) touching {touched:,} items")
    ways = {"refit": lambda: DawidSkene().fit(c),
            "partial_fit": lambda: copy.deepcopy(first).partial_fit(batch),
            "incremental": lambda: copy.deepcopy(first).partial_fit(batch, incremental=True)}
    results = {name: best_of(repeats, make) for name, make in ways.items()}
    ref = results["refit"][1].objective_
    for name, (spent, model) in results.items():
        predicted = model.labels_.reindex(truth.index).to_numpy() if frame else model.predict()
        print(f"    {name:12s} {spent:7.3f} s CPU  {model.n_iter_:4d} iterations  objective "
              f"- refit's {model.objective_ - ref:+10.3f}  accuracy "
              f"{(predicted == np.asarray(truth)).mean():.4f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.001, 0.01, 0.1])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--frame", action="store_true",
                        help="labels as a DataFrame of string ids (matched by id)")
    args = parser.parse_args(argv)
    print(f"crowdlearn {crowdlearn.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}")
    warnings.simplefilter("ignore", ConvergenceWarning)
    for n_items in args.items:
        for fraction in args.fractions:
            run(n_items, fraction, args.repeats, args.frame)


if __name__ == "__main__":
    main()
