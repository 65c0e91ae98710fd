"""GLAD's and MACE's class-prior settings on the bundled real crowds, and row-order independence.

    .venv/bin/python benchmarks/bench_glad_mace_defaults.py          # about a minute on 2 cores

Prints, all measured in this one run (seeded, so every run prints the same accuracies):

(a) accuracy against the truth on every bundled real crowd with a known truth, for
    ``GLAD`` with the class prior estimated (``fit_class_prior=True``) and kept uniform
    (``False``), ``MACE`` with it kept uniform (MACE's own choice) and estimated, and, for
    reference, ``MajorityVote`` (ties to the lowest class) and ``DawidSkene``; then the
    class prior each fitted model ends with, next to the truth's class frequencies. A ``*``
    marks the setting that is the model's current default, so the same table shows the
    accuracy before and after a change of default.
(b) row order: on random crowds (seeded), each model fitted on the labels and on the same
    labels with their rows shuffled; how many crowds give a different posterior, and the
    largest difference.

Nothing is asserted.
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np

import crowdlearn
from crowdlearn import GLAD, MACE, DawidSkene, MajorityVote
from crowdlearn.datasets import DATASETS, load_dataset
from crowdlearn.labels import from_triples

from _timing import Stopwatch

SETTINGS = {  # column name -> (model, constructor keywords)
    "GLAD fcp=True": (GLAD, {"fit_class_prior": True}),
    "GLAD fcp=False": (GLAD, {"fit_class_prior": False}),
    "MACE fcp=False": (MACE, {"fit_class_prior": False, "random_state": 0}),
    "MACE fcp=True": (MACE, {"fit_class_prior": True, "random_state": 0}),
}
REFERENCE = {
    "MajorityVote": lambda: MajorityVote(tie_break="lowest"),
    "DawidSkene": DawidSkene,
}


def is_default(model, keywords) -> bool:
    """Whether ``fit_class_prior`` in ``keywords`` is ``model``'s default."""
    default = inspect.signature(model.__init__).parameters["fit_class_prior"].default
    return keywords["fit_class_prior"] == default


def real_crowds():
    for name in DATASETS:
        data = load_dataset(name)
        if data.truth is not None and data.has_truth.any():
            yield name, data


def accuracy_table() -> None:
    print("(a) accuracy against the truth on the bundled real crowds (fcp = fit_class_prior; "
          "* = the model's current default)")
    names = [n + (" *" if is_default(*SETTINGS[n]) else "") for n in SETTINGS] + list(REFERENCE)
    print(f"    {'crowd':10s}" + "".join(f"{n:>17s}" for n in names))
    priors = []
    for name, data in real_crowds():
        row, fitted = f"    {name:10s}", {}
        for label, (model, keywords) in SETTINGS.items():
            fitted[label] = model(**keywords).fit(data.labels)
            row += f"{data.accuracy(fitted[label].predict()):17.4f}"
        for label, make in REFERENCE.items():
            row += f"{data.accuracy(make().fit(data.labels).predict()):17.4f}"
        print(row)
        truth = data.truth[data.has_truth]
        freq = np.bincount(truth, minlength=data.labels.n_classes) / truth.size
        priors.append((name, freq, {k: m.class_prior_ for k, m in fitted.items()
                                    if k.endswith("fcp=True")}))
    print("\n    fitted class priors (fcp=True) against the truth's class frequencies")
    for name, freq, fitted in priors:
        shown = "  ".join(f"{k}: {np.round(p, 3).tolist()}" for k, p in fitted.items())
        print(f"    {name:10s} truth: {np.round(freq, 3).tolist()}  {shown}")


def random_crowd(seed: int):
    """20 to 80 items, 3 to 9 experts of accuracy 0.3 to 0.95, 2 or 3 classes, 3 labels each."""
    rng = np.random.default_rng(seed)
    n, J, K = int(rng.integers(20, 80)), int(rng.integers(3, 10)), int(rng.integers(2, 4))
    truth = rng.integers(K, size=n)
    accuracy = rng.uniform(0.3, 0.95, J)
    item = np.repeat(np.arange(n), 3)
    expert = np.concatenate([rng.choice(J, 3, replace=False) for _ in range(n)])
    right = rng.random(item.size) < accuracy[expert]
    label = np.where(right, truth[item], rng.integers(K, size=item.size))
    perm = np.random.default_rng(10_000 + seed).permutation(item.size)
    return [from_triples(item[p], expert[p], label[p], n_items=n, n_experts=J, n_classes=K)
            for p in (np.arange(item.size), perm)]


def row_order(n_crowds: int = 40) -> None:
    print(f"\n(b) row order: {n_crowds} random crowds, each fitted as given and with its label "
          f"rows shuffled (defaults)")
    models = {"GLAD": GLAD, "MACE": lambda: MACE(random_state=0)}
    for name, make in models.items():
        changed, predictions, largest = 0, 0, 0.0
        for seed in range(n_crowds):
            a, b = (make().fit(crowd) for crowd in random_crowd(seed))
            diff = float(np.abs(a.posterior_ - b.posterior_).max())
            changed += diff > 0
            predictions += bool((a.predict() != b.predict()).any())
            largest = max(largest, diff)
        print(f"    {name}: posterior differs on {changed} of {n_crowds} crowds "
              f"(prediction on {predictions}); largest |difference| {largest:.1e}")


def main() -> None:
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    with warnings.catch_warnings(), Stopwatch() as sw:
        warnings.simplefilter("ignore", crowdlearn.ConvergenceWarning)
        accuracy_table()
        row_order()
    print(f"\ntotal benchmark time: {sw.wall:.0f} s wall, {sw.cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
