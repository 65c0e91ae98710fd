"""Benchmark: crowdlearn's DawidSkene against crowd-kit's, against the machine, and at scale.

crowd-kit is not a dependency of crowdlearn: it lives only in a separate benchmark
environment. From the repository root::

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install crowd-kit -e .
    .bench-venv/bin/python benchmarks/bench_crowdkit.py

Without crowd-kit the script says so and exits with status 0; ``--no-crowdkit``
runs the parts that need only crowdlearn, (b) to (d), in any environment.

Prints, all measured in this one run (on a shared machine only ratios measured
side by side mean much):

(a) crowdlearn's ``DawidSkene`` against ``crowdkit.aggregation.DawidSkene`` on the
    same simulated crowds (5 classes, 100 workers, 5 labels per item) of 100k and
    1M labels. Both start from the soft majority vote (crowd-kit's
    ``MajorityVote`` probabilities are the vote fractions, checked below), take
    their first M-step from it and then run exactly 100 EM iterations, ending
    with the posterior under the 100th parameter update: crowdlearn with
    ``max_iter=100, tol=0`` (ConvergenceWarning silenced), crowd-kit with
    ``n_iter=101, tol=-inf`` (its loop ends with an M-step whose parameters its
    returned posterior does not use, so 101 of its iterations give that
    posterior; ``tol=-inf`` because with ``tol=0`` it stops as soon as rounding
    makes its objective dip). No smoothing: crowdlearn ``alpha=0``; crowd-kit
    has none but clips every expected count, the class prior and (in place,
    while computing its objective) the returned posterior from below at 1e-10.
    Printed: time per iteration (median over iterations; one iteration is an
    E-step and an M-step, plus the objective each package computes -- crowdlearn
    gets its log-likelihood from the E-step's normalisers, crowd-kit evaluates
    an evidence lower bound in a separate pass, timed on its own and also left
    out in a second ratio), the whole fit, the ratios, and the largest absolute
    difference between the two posteriors -- also, at 100k, with crowd-kit's
    1e-10 clipping switched off, which isolates its effect.
(b) how close to the machine: crowdlearn's time per iteration over the time of
    one *read pass*, a single ``np.bincount`` of the label arrays into an
    ``(n_items, K)`` array (it reads the labels and writes a posterior-sized
    array, the least any pass of EM can do), at every size of (c).
(c) scaling: crowdlearn's time per iteration at 10k, 100k, 1M and 10M labels,
    and per label.
(d) peak memory of ``DawidSkene.fit`` at 10M labels: the most memory allocated
    at once during the fit beyond its input (``tracemalloc``), next to the size
    of the label arrays.

Wall and CPU (``time.process_time``) times are both given: both packages run in
one thread here, and the CPU time hardly moves with other load on the machine.
Nothing is asserted. Takes 1 to 2.5 minutes on 2 shared cores (crowd-kit at 1M labels
is most of it; the 10M-label crowd needs about 2 GB of memory while it is simulated).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import tracemalloc
import warnings

import numpy as np

import crowdlearn
from crowdlearn import ConvergenceWarning, DawidSkene
from crowdlearn.simulate import random_confusion, simulate_crowd

N_CLASSES = 5
N_WORKERS = 100
LABELS_PER_ITEM = 5
N_ITER = 100                     # EM iterations in the comparison
COMPARE_SIZES = (100_000, 1_000_000)
SCALING = ((10_000, 100), (100_000, 50), (1_000_000, 20), (10_000_000, 5))  # (labels, iters)
MEMORY_SIZE = 10_000_000

INSTALL_HINT = """\
crowd-kit is not installed in this environment, so there is nothing to compare against.
crowd-kit is not a dependency of crowdlearn; create the benchmark environment from the
repository root and run the script there:

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install crowd-kit -e .
    .bench-venv/bin/python benchmarks/bench_crowdkit.py

(or run this script with --no-crowdkit for the parts that need only crowdlearn)"""


from _timing import Stopwatch  # noqa: E402


def now():
    return time.perf_counter(), time.process_time()


def ms(seconds: float) -> str:
    return f"{1000 * seconds:9.2f} ms"


def simulate(n_labels: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    conf = random_confusion(N_WORKERS, N_CLASSES, random_state=rng)
    return simulate_crowd(n_labels // LABELS_PER_ITEM, conf, labels_per_item=LABELS_PER_ITEM,
                          random_state=rng)


def fit_crowdlearn(crowd, n_iter: int):
    """Fit with exactly ``n_iter`` iterations; returns the model, per-iteration (wall, cpu)
    times (between consecutive E-steps) and the whole fit's Stopwatch."""
    stamps = []
    ds = DawidSkene(alpha=0.0, max_iter=n_iter, tol=0.0,
                    callback=lambda state: stamps.append(now()))
    with Stopwatch() as sw, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds.fit(crowd)
    assert ds.n_iter_ == n_iter
    return ds, np.diff(np.array(stamps), axis=0), sw


def read_pass(crowd, repeats: int = 7):
    """Median (wall, cpu) of one bincount of the labels into an (n_items, K) array."""
    K, n = crowd.n_classes, crowd.n_items
    times = []
    for _ in range(repeats):
        with Stopwatch() as sw:
            out = np.bincount(crowd.item * K + crowd.label, minlength=n * K).reshape(n, K)
        times.append((sw.wall, sw.cpu))
    assert out.shape == (n, K)
    return np.median(np.array(times), axis=0)


# -- (a) crowd-kit -----------------------------------------------------------------------------
def crowdkit_module():
    try:
        from crowdkit.aggregation.classification import dawid_skene
    except ImportError:
        return None
    return dawid_skene


def fit_crowdkit(ck, df, n_iter: int, *, clip=True):
    """crowd-kit's DawidSkene with exactly ``n_iter`` loop iterations, timed between E-steps.

    ``clip=False`` sets crowd-kit's clipping constant ``_EPS`` (1e-10) to 0 for this fit.
    """
    stamps, objective = [], []

    class TimedDawidSkene(ck.DawidSkene):
        @staticmethod
        def _e_step(data, priors, errors):
            stamps.append(now())
            return ck.DawidSkene._e_step(data, priors, errors)

        def _evidence_lower_bound(self, *args):
            start = now()
            try:
                return super()._evidence_lower_bound(*args)
            finally:
                objective.append(np.subtract(now(), start))

    eps = ck._EPS
    try:
        if not clip:
            ck._EPS = 0.0
        with Stopwatch() as sw, np.errstate(all="ignore"), warnings.catch_warnings():
            # without clipping, its objective takes log(0) and 0 * log(0)
            warnings.simplefilter("ignore")
            model = TimedDawidSkene(n_iter=n_iter, tol=float("-inf")).fit(df)
    finally:
        ck._EPS = eps
    assert len(model.loss_history_) == n_iter
    model.objective_times = np.array(objective)  # (wall, cpu) of every objective evaluation
    return model, np.diff(np.array(stamps), axis=0), sw


def as_matrix(frame, n_items: int, K: int) -> np.ndarray:
    """crowd-kit's (task x label) DataFrame as an (n_items, K) array in crowdlearn's order."""
    return frame.reindex(index=np.arange(n_items), columns=np.arange(K)).to_numpy(dtype=float)


def compare(ck, n_labels: int, sims: dict) -> None:
    import pandas as pd
    from crowdkit.aggregation import MajorityVote

    with Stopwatch() as sim_sw:
        sim = sims.setdefault(n_labels, simulate(n_labels))
    crowd = sim.labels
    n, K = crowd.n_items, crowd.n_classes
    df = pd.DataFrame({"task": crowd.item, "worker": crowd.expert, "label": crowd.label})
    print(f"\n  {crowd.n_labels:,} labels: {n:,} items, {N_WORKERS} workers, {K} classes, "
          f"{LABELS_PER_ITEM} labels per item (simulated in {sim_sw.wall:.1f} s)")

    # the same start: crowd-kit's majority-vote probabilities are the vote fractions
    votes = crowd.vote_counts()
    mv = as_matrix(MajorityVote().fit_predict_proba(df), n, K)
    start_diff = np.abs(mv - votes / votes.sum(axis=1, keepdims=True)).max()
    print(f"    start: max |crowd-kit MajorityVote - soft vote| = {start_diff:.1e}")

    # crowdlearn before and after crowd-kit, so both see the machine in a similar state
    ds, per_cl1, sw_cl1 = fit_crowdlearn(crowd, N_ITER)
    model, per_ck, sw_ck = fit_crowdkit(ck, df, N_ITER + 1)
    _, per_cl2, sw_cl2 = fit_crowdlearn(crowd, N_ITER)
    it_cl = np.median(np.vstack([per_cl1, per_cl2]), axis=0)
    it_ck = np.median(per_ck, axis=0)
    fit_cl = np.median([[sw_cl1.wall, sw_cl1.cpu], [sw_cl2.wall, sw_cl2.cpu]], axis=0)
    fit_ck = np.array([sw_ck.wall, sw_ck.cpu])
    diff = np.abs(as_matrix(model.probas_, n, K) - ds.posterior_).max()
    print(f"    {'':24s} {'per iteration (median)':>30s}   {'whole fit, 100 iterations':>30s}")
    print(f"    {'':24s} {'wall':>14s} {'CPU':>15s}   {'wall':>14s} {'CPU':>15s}")
    print(f"    {'crowdlearn DawidSkene':24s} {ms(it_cl[0])} {ms(it_cl[1])}    "
          f"{ms(fit_cl[0])} {ms(fit_cl[1])}")
    print(f"    {'crowd-kit DawidSkene':24s} {ms(it_ck[0])} {ms(it_ck[1])}    "
          f"{ms(fit_ck[0])} {ms(fit_ck[1])}")
    obj = np.median(model.objective_times, axis=0)
    print(f"    {'  of which its objective':24s} {ms(obj[0])} {ms(obj[1])}")
    print(f"    {'crowd-kit / crowdlearn':24s} {it_ck[0] / it_cl[0]:11.1f} x "
          f"{it_ck[1] / it_cl[1]:12.1f} x    {fit_ck[0] / fit_cl[0]:11.1f} x "
          f"{fit_ck[1] / fit_cl[1]:12.1f} x")
    print(f"    {'  without its objective':24s} {(it_ck[0] - obj[0]) / it_cl[0]:11.1f} x "
          f"{(it_ck[1] - obj[1]) / it_cl[1]:12.1f} x")
    print(f"    posteriors: max |crowdlearn - crowd-kit| = {diff:.1e}; same predicted class for "
          f"{np.mean(ds.predict() == model.labels_.reindex(np.arange(n)).to_numpy()):.2%} of items")
    if n_labels == COMPARE_SIZES[0]:
        noclip, _, _ = fit_crowdkit(ck, df, N_ITER + 1, clip=False)
        diff0 = np.abs(as_matrix(noclip.probas_, n, K) - ds.posterior_).max()
        print(f"    with crowd-kit's 1e-10 clipping off (_EPS = 0): max |difference| = {diff0:.1e}")


# -- (e) whole fits at both packages' defaults --------------------------------------------------
def at_defaults(ck, sizes, sims: dict) -> None:
    """``DawidSkene().fit(df)`` of each package at its defaults on the same DataFrame of
    string ids (the encoding of the ids included), wall and CPU time, iterations run and
    accuracy against the simulated truth."""
    import pandas as pd

    print("\n(e) whole fit at each package's defaults, DawidSkene().fit(df) on string ids "
          "(crowdlearn: tol=1e-8, max_iter=200; crowd-kit: tol=1e-5, n_iter=100)")
    for n_labels in sizes:
        with Stopwatch() as sim_sw:
            sim = sims.setdefault(n_labels, simulate(n_labels))
        crowd = sim.labels
        df = pd.DataFrame({"task": np.char.add("t", crowd.item.astype(str)).astype(object),
                           "worker": np.char.add("w", crowd.expert.astype(str)).astype(object),
                           "label": crowd.label})
        truth = pd.Series(sim.truth, index=np.char.add("t", np.arange(crowd.n_items)
                                                       .astype(str)))
        with Stopwatch() as sw_cl, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours = DawidSkene().fit(df)
        with Stopwatch() as sw_ck:
            theirs = ck.DawidSkene().fit(df)
        ours_labels = pd.Series(ours.predict(), index=ours.item_ids_)
        acc_cl = float(np.mean(ours_labels.reindex(truth.index).to_numpy()
                               == truth.to_numpy()))
        acc_ck = float(np.mean(theirs.labels_.reindex(truth.index).to_numpy()
                               == truth.to_numpy()))
        print(f"    {n_labels:>11,} labels (simulated in {sim_sw.wall:.0f} s): crowdlearn "
              f"{sw_cl.wall:7.2f} s wall {sw_cl.cpu:7.2f} s CPU, {ours.n_iter_} iterations, "
              f"accuracy {acc_cl:.4f}; crowd-kit {sw_ck.wall:8.2f} s wall {sw_ck.cpu:8.2f} s "
              f"CPU, {len(getattr(theirs, 'loss_history_', []))} iterations, "
              f"accuracy {acc_ck:.4f}; crowd-kit / crowdlearn {sw_ck.wall / sw_cl.wall:.1f}x "
              f"wall, {sw_ck.cpu / sw_cl.cpu:.1f}x CPU")


# -- (b), (c), (d) -------------------------------------------------------------------------------
def scaling(sims: dict) -> None:
    print("\n(b, c) crowdlearn DawidSkene: time per EM iteration, read pass and scaling")
    print(f"    {'labels':>11s} {'items':>10s} {'iters':>5s} {'set-up':>10s} "
          f"{'per iteration':>22s} {'per label':>10s} {'read pass':>22s} {'iteration/read':>15s}")
    print(f"    {'':>11s} {'':>10s} {'':>5s} {'(wall)':>10s} {'wall':>11s} {'CPU':>10s} "
          f"{'(CPU)':>10s} {'wall':>11s} {'CPU':>10s} {'wall':>7s} {'CPU':>7s}")
    for n_labels, n_iter in SCALING:
        sim_sw = None
        if n_labels not in sims:
            with Stopwatch() as sim_sw:
                sims[n_labels] = simulate(n_labels)
        crowd = sims[n_labels].labels
        _, per, sw = fit_crowdlearn(crowd, n_iter)
        it = np.median(per, axis=0)
        setup = sw.wall - per[:, 0].sum()  # set-up, start, first E-step and final relabelling
        rp = read_pass(crowd)
        print(f"    {crowd.n_labels:>11,} {crowd.n_items:>10,} {n_iter:>5d} "
              f"{1000 * setup:7.1f} ms {1000 * it[0]:8.2f} ms {1000 * it[1]:7.2f} ms "
              f"{1e9 * it[1] / crowd.n_labels:7.1f} ns {1000 * rp[0]:8.2f} ms "
              f"{1000 * rp[1]:7.2f} ms {it[0] / rp[0]:7.1f} {it[1] / rp[1]:7.1f}"
              + ("" if sim_sw is None else f"   (simulated in {sim_sw.wall:.0f} s)"))


def peak_memory(sims: dict) -> None:
    crowd = sims[MEMORY_SIZE].labels
    inputs = crowd.item.nbytes + crowd.expert.nbytes + crowd.label.nbytes
    posterior = crowd.n_items * crowd.n_classes * 8
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ds = DawidSkene(max_iter=3, tol=0.0).fit(crowd)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    mb = 2.0 ** 20
    print(f"\n(d) peak memory of DawidSkene.fit on {crowd.n_labels:,} labels "
          f"({crowd.n_items:,} items, {ds.n_iter_} iterations; tracemalloc)")
    print(f"    label arrays (input, int64 item/expert/label): {inputs / mb:8.0f} MB")
    print(f"    peak allocated during fit, beyond the input  : {peak / mb:8.0f} MB "
          f"({peak / crowd.n_labels:.0f} bytes per label)")
    print(f"    still held after fit (posterior_ {posterior / mb:.0f} MB etc.)  : "
          f"{current / mb:8.0f} MB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-crowdkit", action="store_true",
                        help="skip the comparison with crowd-kit, run (b) to (d) only")
    parser.add_argument("--defaults-only", type=int, nargs="+", metavar="N_LABELS",
                        help="only (e): whole fits at both packages' defaults at these sizes "
                             "(e.g. 1000000 10000000)")
    args = parser.parse_args(argv)
    ck = None
    if not args.no_crowdkit:
        ck = crowdkit_module()
        if ck is None:
            print(INSTALL_HINT)
            return 0
    t0 = time.perf_counter()
    versions = f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}"
    if ck is not None:
        import crowdkit
        import pandas as pd
        versions += f", crowd-kit {crowdkit.__version__}, pandas {pd.__version__}"
    print(f"{versions}, Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}")
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    sims: dict = {}
    if args.defaults_only:
        if ck is None:
            print("--defaults-only needs crowd-kit")
            return 0
        at_defaults(ck, args.defaults_only, sims)
        print(f"\ntotal benchmark time: {time.perf_counter() - t0:.0f} s")
        return 0
    if ck is not None:
        print(f"\n(a) crowdlearn vs crowd-kit DawidSkene, {N_ITER} EM iterations from the soft "
              f"majority vote, no smoothing")
        for n_labels in COMPARE_SIZES:
            compare(ck, n_labels, sims)
    scaling(sims)
    peak_memory(sims)
    print(f"\ntotal benchmark time: {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
