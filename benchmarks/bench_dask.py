"""Benchmark: Dawid--Skene on a dask cluster, out of core, next to the in-memory fit.

From the repository root, in the project's .venv (``python3 run.py book`` makes it)::

    .venv/bin/python benchmarks/bench_dask.py                   # 100M labels, ~5 minutes
    .venv/bin/python benchmarks/bench_dask.py --labels 20000000  # a quicker look

Prints, measured in this one run on this machine:

(a) a synthetic crowd of ``--labels`` labels (3 classes, 1,000 one-coin workers with
    accuracies in [0.55, 0.95], 5 labels per task) written to parquet in files of 2M labels,
    each holding whole tasks: time and size on disk;
(b) ``DawidSkene`` fitted with ``fit_dask`` on a ``distributed.LocalCluster`` of 2 worker
    processes (1 thread each) reading those files: the first pass (ids, checks) and the
    encoding, the median time per EM iteration, iterations, and the peak memory of the whole
    process tree (this driver, the scheduler, the nannies and the workers: the sum of their
    resident set sizes, sampled every 0.1 s);
(c) the in-memory ``DawidSkene.fit`` on a crowd of 10M labels from the same generator: median
    time per iteration, and the ratio of the cluster's time per label to it;
(d) what travels per iteration: the parameters out to every partition and the expected
    counts back, against the labels that stay where they are, here and for a 10B-label crowd.

Nothing is asserted. The parquet files go to a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# pyarrow's own allocator keeps the buffers of every parquet file it read; the system
# allocator gives them back (the worker processes inherit this)
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import numpy as np  # noqa: E402

K, J, PER_TASK, FILE_LABELS = 3, 1000, 5, 2_000_000


def simulate_chunk(rng, first_task: int, n_tasks: int):
    """``n_tasks`` tasks from ``first_task`` on, with PER_TASK labels each (one-coin workers)."""
    accuracy = np.random.default_rng(12345).uniform(0.55, 0.95, J)  # the same crowd everywhere
    truth = rng.integers(0, K, n_tasks)
    task = np.repeat(np.arange(first_task, first_task + n_tasks, dtype=np.int64), PER_TASK)
    worker = rng.integers(0, J, task.size)
    right = rng.random(task.size) < accuracy[worker]
    t = np.repeat(truth, PER_TASK)
    label = np.where(right, t, (t + rng.integers(1, K, task.size)) % K)
    return task, worker.astype(np.int64), label.astype(np.int64)


def write_parquet(path: str, n_labels: int, seed: int = 0) -> float:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    tasks_per_file = FILE_LABELS // PER_TASK
    n_tasks = n_labels // PER_TASK
    start = time.perf_counter()
    for i, first in enumerate(range(0, n_tasks, tasks_per_file)):
        n = min(tasks_per_file, n_tasks - first)
        task, worker, label = simulate_chunk(rng, first, n)
        table = pa.table({"task": task, "worker": worker, "label": label})
        pq.write_table(table, os.path.join(path, f"part-{i:05d}.parquet"),
                       row_group_size=len(task))
    return time.perf_counter() - start


class PeakMemory:
    """Peak of the summed resident set size of this process and all its descendants."""

    def __init__(self, interval: float = 0.1):
        import psutil

        self.root = psutil.Process()
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self.samples = []  # (time, total rss)

    def _sample(self):
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self.root] + self.root.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self.samples.append((time.perf_counter(), total))
            time.sleep(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def peak_between(self, t0: float, t1: float) -> float:
        inside = [m for t, m in self.samples if t0 <= t <= t1]
        return max(inside) if inside else 0


def stamped(stamps):
    def callback(state):
        stamps.append(time.perf_counter())
    return callback


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, default=100_000_000)
    parser.add_argument("--memory-labels", type=int, default=10_000_000,
                        help="size of the in-memory comparison")
    args = parser.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from crowdlearn import DawidSkene
    from crowdlearn.distributed.dask_backend import fit_dask

    print(f"crowdlearn DawidSkene on dask: {args.labels:,} labels, {K} classes, {J:,} workers, "
          f"{PER_TASK} labels per task, {os.cpu_count()} cores")
    tmp = tempfile.mkdtemp(prefix="crowdlearn-dask-bench-")
    try:
        seconds = write_parquet(tmp, args.labels)
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        n_files = len(os.listdir(tmp))
        print(f"\n(a) written to parquet in {seconds:.0f} s: {n_files} files, "
              f"{size / 2**30:.2f} GiB on disk")

        before = time.perf_counter()
        with PeakMemory() as mem, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dask's own deprecation notices under pandas 3
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
                    Client(cluster) as client:
                ddf = dd.read_parquet(tmp)
                stamps = []
                start = time.perf_counter()
                model = fit_dask(DawidSkene(callback=stamped(stamps)), ddf, client=client,
                                 collect=False)
                fitted = time.perf_counter()
                total = fitted - start
                per_iter = float(np.median(np.diff(stamps)))
                setup = stamps[0] - start
                counts = model.labels_.value_counts().compute()
                done = time.perf_counter()
        print(f"\n(b) fit_dask on a LocalCluster (2 worker processes, 1 thread each), "
              f"{ddf.npartitions} partitions")
        print(f"    first pass, encoding and the first E-step: {setup:.1f} s")
        print(f"    per EM iteration (median): {per_iter:.2f} s "
              f"({1e9 * per_iter / args.labels:.1f} ns per label)")
        print(f"    {model.n_iter_} iterations, converged {model.converged_}, whole fit "
              f"{total:.0f} s; predicted classes {counts.sort_index().to_dict()}")
        fit_peak = mem.peak_between(before, fitted)
        print(f"    peak memory of all processes during the fit: {fit_peak / 2**30:.2f} GiB = "
              f"{fit_peak / 1e9:.2f} GB (the labels as int64 columns would be "
              f"{24 * args.labels / 2**30:.2f} GiB); with the label counts read afterwards: "
              f"{mem.peak / 2**30:.2f} GiB")
        phases = [("cluster start, first pass, encoding", before, stamps[0]),
                  ("EM iterations", stamps[0], stamps[-1]),
                  ("final posteriors", stamps[-1], fitted),
                  ("labels_.value_counts() afterwards", fitted, done)]
        print("    peak by phase: " + "; ".join(
            f"{name} {mem.peak_between(a, b) / 2**30:.2f} GiB" for name, a, b in phases))

        # -- (c) in memory at 10M ---------------------------------------------------------
        rng = np.random.default_rng(1)
        task, worker, label = simulate_chunk(rng, 0, args.memory_labels // PER_TASK)
        stamps = []
        DawidSkene(callback=stamped(stamps)).fit((task, worker, label))
        mem_iter = float(np.median(np.diff(stamps)))
        ratio = (per_iter / args.labels) / (mem_iter / args.memory_labels)
        print(f"\n(c) in memory, {args.memory_labels:,} labels: {mem_iter:.3f} s per iteration "
              f"({1e9 * mem_iter / args.memory_labels:.1f} ns per label)")
        print(f"    cluster / in memory, time per label per iteration: {ratio:.2f}")

        # -- (d) what travels ---------------------------------------------------------------
        out_floats = J * K * K + K          # the parameters, to every partition
        back_floats = (J * K + 1) * K + 1   # expected counts and the log-evidence, back
        per_part = 8 * (out_floats + back_floats)
        print(f"\n(d) per iteration and partition: {8 * out_floats / 1e3:.0f} kB of parameters "
              f"out, {8 * back_floats / 1e3:.0f} kB of expected counts back; over the "
              f"{ddf.npartitions} partitions {ddf.npartitions * per_part / 1e6:.1f} MB, "
              f"against {12 * args.labels / 1e9:.1f} GB of encoded labels that never move")
        big, parts, workers = 10_000_000_000, 500, 10_000
        per_part_big = 8 * ((workers * K * K + K) + (workers * K + 1) * K + 1)
        print(f"    10B labels in {parts:,} partitions of 20M, {workers:,} workers, {K} classes: "
              f"{parts * per_part_big / 1e9:.1f} GB over the network per iteration (tree-"
              f"reduced by dask), against {12 * big / 1e12:.2f} TB of labels read in place")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
