"""Accuracy when annotators' reliability depends on the item: LogisticAnnotators vs
Dawid--Skene vs majority vote.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/compare_logistic_annotators.py

Simulated crowd (:func:`crowdlearn.simulate.annotators.simulate_logistic_annotators`):
2,000 items with 2 standard-normal features, truth :math:`P(z=1|x) = \\sigma(2x_1 - x_2)`,
and 5 annotators, right with probability :math:`\\eta_t(x) = \\sigma(w_t^\\top x - \\gamma_t)`:

* annotators 0, 1: :math:`w = (4, 0)`, :math:`\\gamma = -0.5` -- near perfect for
  :math:`x_1 > 0`, adversarial for :math:`x_1 < 0`;
* annotators 2, 3: :math:`w = (-4, 0)`, :math:`\\gamma = -0.5` -- the mirror image;
* annotator 4: :math:`w = (0, 0)`, :math:`\\gamma = -1` -- right 73% of the time everywhere.

Averaged over each annotator's items, annotators 0-3 are right only about 60% of
the time, so a model with one accuracy (or confusion matrix) per annotator cannot
tell where to trust them. Printed: accuracy against the truth of each method on
the training items (mean and standard deviation over 10 seeds), split by the sign
of :math:`x_1`; the "oracle" is Bayes' rule with the true parameters (the best any
method can do), and "classifier only" is LogisticAnnotators' :math:`P(z|x)` on 2,000
fresh items without labels. A second table drops 40% of the labels at random; a
third ("mild") uses :math:`w = (\pm 1.5, 0)`, :math:`\gamma = -1` for annotators 0-3.

Not a test: nothing is asserted. Takes a few seconds.
"""

from __future__ import annotations

import platform
import sys
import time
import warnings

import numpy as np
from scipy.special import expit

import crowdlearn
from crowdlearn import ConvergenceWarning, DawidSkene, MajorityVote
from crowdlearn.features.logistic_annotators import LogisticAnnotators
from crowdlearn.simulate.annotators import simulate_logistic_annotators

N_ITEMS = 2000
SEEDS = range(10)
COEF = np.array([2.0, -1.0])
INTERCEPT = 0.0
# strong: annotators 0-3 near perfect on one side of x_1 = 0, adversarial on the other
W = np.array([[4.0, 0.0], [4.0, 0.0], [-4.0, 0.0], [-4.0, 0.0], [0.0, 0.0]])
GAMMA = np.array([-0.5, -0.5, -0.5, -0.5, -1.0])
# mild: the same shape with a gentler slope and a higher baseline
W_MILD = np.array([[1.5, 0.0], [1.5, 0.0], [-1.5, 0.0], [-1.5, 0.0], [0.0, 0.0]])
GAMMA_MILD = np.array([-1.0, -1.0, -1.0, -1.0, -1.0])


def oracle_posterior(sim, W, GAMMA) -> np.ndarray:
    """P(z = 1 | x, labels) under the true parameters (log-odds a + sum_t s_t b_t)."""
    crowd = sim.labels
    a = sim.X @ COEF + INTERCEPT
    b = np.einsum("rd,rd->r", sim.X[crowd.item], W[crowd.expert]) - GAMMA[crowd.expert]
    log_odds = a + np.bincount(crowd.item, weights=(2 * crowd.label - 1) * b,
                               minlength=crowd.n_items)
    return expit(log_odds)


def run(name: str, W: np.ndarray, GAMMA: np.ndarray, missing: float):
    methods = ["majority vote", "Dawid-Skene", "LogisticAnnotators", "oracle (true params)",
               "classifier only (new items)"]
    acc = {m: [] for m in methods}
    acc_pos = {m: [] for m in methods[:4]}
    acc_neg = {m: [] for m in methods[:4]}
    seconds = {m: 0.0 for m in methods[:3]}
    not_converged = {"Dawid-Skene": 0, "LogisticAnnotators": 0}
    for seed in SEEDS:
        sim = simulate_logistic_annotators(N_ITEMS, COEF, INTERCEPT, W, GAMMA, missing=missing,
                                           random_state=seed)
        test = simulate_logistic_annotators(N_ITEMS, COEF, INTERCEPT, W, GAMMA,
                                            random_state=1000 + seed)
        preds = {}
        t0 = time.perf_counter()
        preds["majority vote"] = MajorityVote(unlabelled="uniform", random_state=seed) \
            .fit_predict(sim.labels)
        t1 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            preds["Dawid-Skene"] = DawidSkene().fit(sim.labels).predict()
            not_converged["Dawid-Skene"] += len(caught)
        t2 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model = LogisticAnnotators().fit(sim.labels, sim.X)
            not_converged["LogisticAnnotators"] += len(caught)
        preds["LogisticAnnotators"] = model.predict()
        t3 = time.perf_counter()
        preds["oracle (true params)"] = (oracle_posterior(sim, W, GAMMA) > 0.5).astype(int)
        seconds["majority vote"] += t1 - t0
        seconds["Dawid-Skene"] += t2 - t1
        seconds["LogisticAnnotators"] += t3 - t2
        pos = sim.X[:, 0] > 0
        for m, p in preds.items():
            right = p == sim.truth
            acc[m].append(right.mean())
            acc_pos[m].append(right[pos].mean())
            acc_neg[m].append(right[~pos].mean())
        acc["classifier only (new items)"].append(np.mean(model.predict(X=test.X) == test.truth))
    eta = simulate_logistic_annotators(100_000, COEF, INTERCEPT, W, GAMMA, random_state=0).eta
    print(f"\n[{name}] {N_ITEMS} items, 2 features, 5 annotators, {100 * missing:.0f}% of labels "
          f"missing; mean (sd) over {len(SEEDS)} seeds")
    print("average accuracy of each annotator over all items:",
          np.round(eta.mean(axis=0), 3).tolist())
    print(f"{'method':<30}{'accuracy':>16}{'x_1 > 0':>10}{'x_1 < 0':>10}{'fit time':>12}")
    for m in methods:
        a = np.array(acc[m])
        row = f"{m:<30}{a.mean():>9.3f} ({a.std():.3f})"
        if m in acc_pos:
            row += f"{np.mean(acc_pos[m]):>10.3f}{np.mean(acc_neg[m]):>10.3f}"
        else:
            row += " " * 20
        if m in seconds:
            row += f"{1000 * seconds[m] / len(SEEDS):>9.1f} ms"
        print(row)
    print("runs stopped by max_iter=200 before converging: "
          + ", ".join(f"{m} {k} of {len(SEEDS)}" for m, k in not_converged.items()))
    return acc


def main():
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}")
    start = time.perf_counter()
    run("strong", W, GAMMA, 0.0)
    run("strong", W, GAMMA, 0.4)
    run("mild", W_MILD, GAMMA_MILD, 0.0)
    print(f"\ntotal time: {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
