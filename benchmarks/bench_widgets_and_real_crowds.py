"""Widget latency for each widget chapter's default view, and accuracy on the bundled real crowds.

    .venv/bin/python benchmarks/bench_widgets_and_real_crowds.py

(a) For each explorer used in the book (chapters 4-6: DawidSkeneExplorer; chapter 8:
    LogisticAnnotatorsExplorer), the median over 10 changes of the seed of one kernel-side
    update (simulate, fit every model; the view draws in the browser), as wall and CPU time.
(b) Accuracy against the truth on every bundled real crowd with a truth, for majority vote
    (random ties, seed 0), one-coin and full Dawid-Skene from the majority-vote start: the
    figures chapter 11 computes at build time and asserts.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings

import matplotlib

matplotlib.use("Agg")

import crowdlearn as cl  # noqa: E402
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene  # noqa: E402


def latency(make, n: int = 10):
    explorer = make()
    wall, cpu = [], []
    for seed in range(1, n + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        explorer.set(seed=seed)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    explorer.close()
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def main():
    print(f"crowdlearn {cl.__version__}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("(a) widget update at the chapter's default view, median of 10 seed changes")
    from crowdlearn.widgets import DawidSkeneExplorer
    from crowdlearn.widgets.annotators import LogisticAnnotatorsExplorer
    for name, make in [("DawidSkeneExplorer (chapters 4-6)", DawidSkeneExplorer),
                       ("LogisticAnnotatorsExplorer (chapter 8)", LogisticAnnotatorsExplorer)]:
        w, c = latency(make)
        print(f"    {name:40s} {w:7.1f} ms wall {c:7.1f} ms CPU")

    print("(b) accuracy against the truth on the bundled real crowds")
    print(f"    {'data':10s} {'majority vote':>14s} {'one-coin':>9s} {'Dawid-Skene':>12s}")
    for name in ("bluebirds", "rte", "temp", "wsd"):
        data = cl.datasets.load_dataset(name)
        mv = cl.MajorityVote(random_state=0).fit_predict(data.labels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.ConvergenceWarning)
            oc = OneCoinDawidSkene().fit(data.labels).predict()
            ds = cl.DawidSkene().fit(data.labels).predict()
        print(f"    {name:10s} {data.accuracy(mv):14.4f} {data.accuracy(oc):9.4f} "
              f"{data.accuracy(ds):12.4f}")


if __name__ == "__main__":
    main()
