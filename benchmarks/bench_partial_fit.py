"""Streams taken in by ``partial_fit`` against refitting every batch: never behind a refit?

    .venv/bin/python benchmarks/bench_partial_fit.py                  # 100 random crowds + bundled
    .venv/bin/python benchmarks/bench_partial_fit.py --random 20 --orders 1   # a quick look

Every crowd is replayed as a stream: its labels in a random order, a first batch of 1% of
them (at least 3) given to ``fit``, the rest in ``--batches`` equal batches given to
``partial_fit`` with the default ``refit='auto'`` (a fit from the vote, kept if better, once
the labels have doubled since the last one). New items, workers and classes arrive as the
stream brings them. The last batch is taken twice, from copies of the same model:

* ``auto``: as every other batch (``refit_checked_`` then says whether it was checked);
* ``checked``: with ``refit=True``, what a user asks for when the answer must not be behind.

Against ``Model().fit`` of all the labels (the refit) each prints: the share of streams
whose final objective is within 1e-6 (relative) of the refit's or above, the worst gap
``(refit - final) / |refit|`` (negative: above the refit), the mean accuracy minus the
refit's (on items with known truth), and the CPU time of the whole stream against
refitting after every batch (``time.process_time``, which barely moves with other load).
DawidSkene and OneCoinDawidSkene, plain EM and ``incremental=True``. Random crowds: 100-600
items, 5-15 one-coin or confusion-matrix workers (spammers among them), 2-4 classes,
30-80% of the labels missing. Bundled crowds: each in ``--orders`` random orders. Large
crowds: 200,000 labels, beyond ``REFIT_SMALL``, where ``'auto'`` checks only on doubling.
Not a test: nothing is asserted; the README's table is this script's output.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import crowdlearn
from crowdlearn import DawidSkene, OneCoinDawidSkene
from crowdlearn.datasets import DATASETS, load_dataset
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

BOUND = 1e-6


def random_crowd(seed: int):
    """``(labels, truth)`` of a random crowd (see the module notes)."""
    rng = np.random.default_rng(seed)
    K, J = int(rng.integers(2, 5)), int(rng.integers(5, 16))
    confusion = np.empty((J, K, K))
    for j in range(J):
        if rng.random() < 0.15:  # a spammer: the same label distribution whatever the truth
            confusion[j] = rng.dirichlet(np.ones(K))
        else:
            confusion[j] = rng.dirichlet(np.ones(K), size=K) * 0.6
            confusion[j][np.diag_indices(K)] += 0.4
    sim = simulate_crowd(int(rng.integers(100, 601)), confusion,
                         missing=float(rng.uniform(0.3, 0.8)), random_state=seed)
    return sim.labels, sim.truth


def large_crowd(seed: int):
    """``(labels, truth)``: 40,000 items, 5 labels each from 100 one-coin workers of
    accuracy 0.45-0.9, 4 classes (200,000 labels: ``refit='auto'`` checks only on doubling)."""
    rng = np.random.default_rng(10_000 + seed)
    sim = simulate_crowd(40_000, one_coin_confusion(rng.uniform(0.45, 0.9, 100), 4),
                         labels_per_item=5, random_state=10_000 + seed)
    return sim.labels, sim.truth


def batches(c, n_batches: int, rng) -> list[np.ndarray]:
    """1% of the labels (at least 3, and longer until two classes are seen: ``fit`` needs
    two), then ``n_batches`` equal batches, in a random order."""
    order = rng.permutation(c.n_labels)
    first = max(3, c.n_labels // 100)
    while np.unique(c.label[order[:first]]).size < 2:
        first += 1
    return [order[:first]] + np.array_split(order[first:], n_batches)


def triples(c, rows):
    return c.item[rows], c.expert[rows], c.label[rows]


def accuracy(model, truth, rows_of_items) -> float:
    """Accuracy on the items with known truth that the model's fit indexes as ``c`` does."""
    predicted = model.predict()
    known = truth[rows_of_items] >= 0
    if not known.any():  # a crowd without truth (the anaesthetists)
        return np.nan
    return float((predicted[known] == truth[rows_of_items][known]).mean())


@dataclass
class Cell:
    gaps_auto: list = field(default_factory=list)
    gaps_checked: list = field(default_factory=list)
    checked_auto: list = field(default_factory=list)
    acc_auto: list = field(default_factory=list)
    acc_checked: list = field(default_factory=list)
    cpu_stream: float = 0.0
    cpu_refits: float = 0.0


def replay(Model, incremental: bool, c, truth, parts, cell: Cell) -> None:
    """One stream of ``parts`` through ``partial_fit``, and a refit after every batch."""
    t0 = time.process_time()
    model = Model().fit(triples(c, parts[0]))
    for rows in parts[1:-1]:
        model.partial_fit(triples(c, rows), incremental=incremental)
    spent = time.process_time() - t0
    auto, checked = model, copy.deepcopy(model)
    t0 = time.process_time()
    checked.partial_fit(triples(c, parts[-1]), incremental=incremental, refit=True)
    cell.cpu_stream += spent + time.process_time() - t0
    auto.partial_fit(triples(c, parts[-1]), incremental=incremental)
    t0 = time.process_time()
    seen = np.zeros(0, dtype=np.intp)
    for rows in parts:  # what refitting after every batch costs
        seen = np.concatenate([seen, rows])
        ref = Model().fit(triples(c, seen))
    cell.cpu_refits += time.process_time() - t0
    items = np.arange(ref.n_items_)  # every item of c labelled: indices as in c
    scale = abs(ref.objective_)
    for name, m in (("auto", auto), ("checked", checked)):
        getattr(cell, f"gaps_{name}").append((ref.objective_ - m.objective_) / scale)
        getattr(cell, f"acc_{name}").append(accuracy(m, truth, items)
                                            - accuracy(ref, truth, items))
    cell.checked_auto.append(bool(auto.refit_checked_))


def crowds(args):
    for seed in range(args.random):
        c, truth = random_crowd(seed)
        keep = np.isin(np.arange(c.n_items), c.item)  # drop unlabelled items: indices as fit's
        yield "random", *relabel(c, truth, keep), np.random.default_rng(seed)
    for seed in range(args.large):
        c, truth = large_crowd(seed)
        keep = np.isin(np.arange(c.n_items), c.item)
        yield "large", *relabel(c, truth, keep), np.random.default_rng(seed)
    for name in DATASETS:
        data = load_dataset(name)
        truth = data.truth if data.truth is not None else np.full(data.labels.n_items, -1)
        for order in range(args.orders):
            yield name, data.labels, truth, np.random.default_rng(1000 + order)


def relabel(c, truth, keep):
    new = np.cumsum(keep) - 1
    return crowdlearn.from_triples(new[c.item], c.expert, c.label), truth[keep]


def row(name, cell: Cell) -> str:
    ga, gc = np.array(cell.gaps_auto), np.array(cell.gaps_checked)
    return (f"| {name} | {len(ga)} | {np.mean(ga <= BOUND):.0%} ({np.mean(cell.checked_auto):.0%}"
            f" checked) | {ga.max():+.1e} | {np.nanmean(cell.acc_auto):+.4f} | "
            f"{np.mean(gc <= BOUND):.0%} | {gc.max():+.1e} | {np.nanmean(cell.acc_checked):+.4f} "
            f"| {cell.cpu_stream / cell.cpu_refits:.2f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=100, help="random crowds (default 100)")
    parser.add_argument("--large", type=int, default=3,
                        help="crowds of 200,000 labels (default 3)")
    parser.add_argument("--orders", type=int, default=4, help="orders per bundled crowd")
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"crowdlearn {crowdlearn.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}; first batch 1%, then {args.batches} batches")
    warnings.simplefilter("ignore")  # ConvergenceWarning of small first batches, degenerate fits
    cells: dict = {}
    for source, c, truth, rng in crowds(args):
        parts = batches(c, args.batches, rng)
        group = source if source in ("random", "large") else "bundled"
        for Model in (DawidSkene, OneCoinDawidSkene):
            for incremental in (False, True):
                key = (Model.__name__, "incremental" if incremental else "plain", group)
                replay(Model, incremental, c, truth, parts, cells.setdefault(key, Cell()))
    print(f"\nwithin: final objective >= refit's - {BOUND:g} x |refit's|; gap: worst "
          f"(refit - final) / |refit|; acc: mean accuracy - refit's; CPU: stream / refit "
          f"after every batch\n")
    print("| model, fit, crowds | streams | auto: within | auto: worst gap | auto: acc "
          "| checked: within | checked: worst gap | checked: acc | CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, cell in sorted(cells.items()):
        print(row(", ".join(key), cell))


if __name__ == "__main__":
    main()
