"""Choosing an aggregation model without truth: the held-out likelihood of labels on every
bundled crowd, next to each model's accuracy and calibration against the bundled truth.

    .venv/bin/python benchmarks/bench_model_choice.py        # about half a minute on 2 cores

For every crowd of ``crowdlearn.datasets`` and every model at its defaults (majority vote,
Wawa, Dawid--Skene, one-coin, GLAD, MACE), prints

* the held-out log-likelihood per label, ``heldout_label_likelihood`` with 5 folds over the
  labels (seed 0): the mean over all held-out labels and its standard error over the folds;
* the accuracy of the model fitted on all the labels against the truth, and the expected
  calibration error (10 bins) of its posterior (``n/a`` where the crowd has no truth);

then which model the held-out likelihood picks (``*``), which one is the most accurate
(``+``; ties share it) and whether the choice is among the most accurate. Nothing is asserted.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from crowdlearn import (GLAD, MACE, DawidSkene, MajorityVote, OneCoinDawidSkene, Wawa,
                        expected_calibration_error, heldout_label_likelihood)
from crowdlearn.datasets import load_dataset

CROWDS = ("anaesthetists", "bluebirds", "rte", "temp", "wsd")


def models() -> dict:
    return {"MajorityVote": MajorityVote(), "Wawa": Wawa(), "DawidSkene": DawidSkene(),
            "OneCoin": OneCoinDawidSkene(), "GLAD": GLAD(), "MACE": MACE()}


def truth_scores(data) -> dict:
    """name -> (accuracy, ECE) of the model fitted on all the labels (None: no truth)."""
    out = {}
    for name, model in models().items():
        if data.truth is None:
            out[name] = None
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.labels)
        post = model.predict_proba()
        out[name] = (data.accuracy(model.predict()),
                     expected_calibration_error(post, data.truth))
    return out


def report(name: str) -> None:
    data = load_dataset(name)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = heldout_label_likelihood(models(), data.labels, n_folds=5, random_state=0)
    seconds = time.perf_counter() - start
    truth = truth_scores(data)
    accs = {m: v[0] for m, v in truth.items() if v is not None}
    top = max(accs.values()) if accs else None
    print(f"\n{name}: {data.labels.n_labels} labels, {res.n_heldout.sum()} held out once "
          f"over 5 folds ({seconds:.1f} s)")
    print(f"  {'model':<14}{'held-out loglik':>20}{'accuracy':>10}{'ECE':>8}")
    for m, score in res.scores.items():
        mark = ("*" if m == res.best_ else " ") + ("+" if accs and accs[m] == top else " ")
        acc, ece = ("n/a", "n/a") if truth[m] is None else (f"{truth[m][0]:.3f}",
                                                              f"{truth[m][1]:.3f}")
        print(f"{mark}{m:<14}{score:>11.4f} ± {res.se[m]:.4f}{acc:>10}{ece:>8}")
    if accs:
        verdict = "yes" if accs[res.best_] == top else \
            f"no ({accs[res.best_]:.3f} against {top:.3f})"
        print(f"  held-out choice {res.best_}; among the most accurate: {verdict}")
    else:
        print(f"  held-out choice {res.best_}; no truth to check it against")


def main() -> None:
    print("held-out log-likelihood per label (5 folds over labels, seed 0; mean ± s.e. over "
          "folds); accuracy and ECE (10 bins) of the fit on all labels against the truth")
    print("* the held-out choice, + the most accurate")
    for name in CROWDS:
        report(name)


if __name__ == "__main__":
    main()
