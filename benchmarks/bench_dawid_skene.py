"""Benchmark: the explorer's update latency and Dawid--Skene EM on large crowds.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_dawid_skene.py

Prints, all measured in this one run (so the ratios compare like with like on
whatever the machine is doing at the time):

(a) the latency of one update of :class:`crowdlearn.widgets.DawidSkeneExplorer`
    at its defaults (simulate + majority vote + EM + redraw + PNG), median over
    slider changes, split into EM, drawing and the rest;
(b) DawidSkene EM time per iteration on simulated crowds of 100k and 1M labels
    (5 classes, 100 workers, 5 labels per item), with a fixed number of
    iterations (``tol=0``, ``max_iter=50``), against one "read pass": a single
    ``np.bincount`` over the label arrays into an ``(n_items, K)`` array, the
    least work any pass over the labels producing a posterior-sized array can
    do. The ratio EM-iteration / read-pass says how many such passes one EM
    iteration costs.

Not a test: nothing is asserted. Finishes in well under two minutes on 2 cores.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import crowdlearn  # noqa: E402
from crowdlearn import ConvergenceWarning, DawidSkene  # noqa: E402
from crowdlearn.simulate import random_confusion, simulate_crowd  # noqa: E402
from crowdlearn.widgets import DawidSkeneExplorer  # noqa: E402

N_CLASSES = 5
N_WORKERS = 100
LABELS_PER_ITEM = 5
N_ITER = 50


def ms(seconds: float) -> str:
    return f"{1000 * seconds:8.1f} ms"


def both(wall: float, cpu: float) -> str:
    return f"{ms(wall)} wall, {ms(cpu)} CPU"


from _timing import Stopwatch  # noqa: E402


def bench_widget(n_changes: int = 10) -> None:
    print("(a) explorer update at defaults (500 items, 3 classes, 5 experts)")
    ex = DawidSkeneExplorer()
    wall, cpu, em, draw = [], [], [], []
    for seed in range(1, n_changes + 1):
        with Stopwatch() as sw:
            ex.seed_slider.value = seed  # the callback runs synchronously
        wall.append(sw.wall)
        cpu.append(sw.cpu)
        em.append(ex.last_result.em_seconds)
        draw.append(ex.last_result.draw_seconds)
    ex.close()
    wall, cpu, em, draw = (float(np.median(x)) for x in (wall, cpu, em, draw))
    print(f"    update, median of {n_changes} seed changes: {both(wall, cpu)}")
    print(f"      EM fit only (wall)                : {ms(em)}  ({em / wall:.0%})")
    print(f"      redraw + PNG encoding (wall)      : {ms(draw)}  ({draw / wall:.0%})")
    print(f"      simulate + vote + oracle + rest   : {ms(wall - em - draw)}")


def read_pass(crowd, K: int, repeats: int = 7):
    """Median wall and CPU time of one bincount of the labels into an (n_items, K) array."""
    wall, cpu = [], []
    for _ in range(repeats):
        with Stopwatch() as sw:
            out = np.bincount(crowd.item * K + crowd.label,
                              minlength=crowd.n_items * K).reshape(crowd.n_items, K)
        wall.append(sw.wall)
        cpu.append(sw.cpu)
    assert out.shape == (crowd.n_items, K)
    return float(np.median(wall)), float(np.median(cpu))


def step_times(ds: DawidSkene, crowd, repeats: int = 5):
    """CPU time of the E-step and the M-step alone (private API: skipped if it changes)."""
    try:
        from crowdlearn.aggregation.dawid_skene import _Data, _flat_indices
        data = _Data(crowd, None, *_flat_indices(crowd, ds.n_classes_))
        e, m = [], []
        for _ in range(repeats):
            with Stopwatch() as sw:
                q, _ = ds._e_step(data, ds._params)
            e.append(sw.cpu)
            with Stopwatch() as sw:
                ds._m_step(data, q)
            m.append(sw.cpu)
        return float(np.median(e)), float(np.median(m))
    except Exception as exc:  # noqa: BLE001 -- a diagnostic, not a requirement
        print(f"      (E/M split skipped: {type(exc).__name__}: {exc})")
        return None


def bench_em(n_labels: int, seed: int = 0) -> None:
    n_items = n_labels // LABELS_PER_ITEM
    rng = np.random.default_rng(seed)
    with Stopwatch() as sim_sw:
        conf = random_confusion(N_WORKERS, N_CLASSES, random_state=rng)
        sim = simulate_crowd(n_items, conf, labels_per_item=LABELS_PER_ITEM, random_state=rng)
    crowd = sim.labels
    print(f"\n(b) DawidSkene on {crowd.n_labels:,} labels: {n_items:,} items, {N_WORKERS} "
          f"workers, {N_CLASSES} classes, {LABELS_PER_ITEM} labels per item "
          f"(simulated in {sim_sw.wall:.1f} s)")

    stamps = []  # (wall, cpu) after every E-step
    ds = DawidSkene(tol=0.0, max_iter=N_ITER, callback=lambda state: stamps.append(
        (time.perf_counter(), time.process_time())))
    with Stopwatch() as fit_sw, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds.fit(crowd)
    per_iter = np.diff(np.array(stamps), axis=0)  # M-step + E-step, per iteration
    it_wall, it_cpu = np.median(per_iter, axis=0)
    rp_wall, rp_cpu = read_pass(crowd, N_CLASSES)
    acc = float(np.mean(ds.predict() == sim.truth))
    print(f"    fit: {ds.n_iter_} iterations in {fit_sw.wall:.2f} s wall, {fit_sw.cpu:.2f} s "
          f"CPU (accuracy {acc:.3f})")
    print(f"    EM iteration (M-step + E-step), median: {both(it_wall, it_cpu)}")
    print(f"    set-up + first E-step + final steps   : "
          f"{both(fit_sw.wall - per_iter[:, 0].sum(), fit_sw.cpu - per_iter[:, 1].sum())}")
    split = step_times(ds, crowd)
    if split is not None:
        print(f"      E-step alone: {ms(split[0])} CPU   M-step alone: {ms(split[1])} CPU")
    print(f"    read pass, one bincount into ({n_items:,}, {N_CLASSES}): {both(rp_wall, rp_cpu)}")
    print(f"    ratio EM iteration / read pass: {it_wall / rp_wall:.1f} (wall), "
          f"{it_cpu / rp_cpu:.1f} (CPU)")


def main() -> None:
    t0 = time.perf_counter()
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, "
          f"matplotlib {matplotlib.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    bench_widget()
    bench_em(100_000)
    bench_em(1_000_000)
    print(f"\ntotal benchmark time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
