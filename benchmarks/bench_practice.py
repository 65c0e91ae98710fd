"""Benchmark: the practitioner's models against crowd-kit, side by side in one run.

crowd-kit is not a dependency of crowdlearn; run this in the benchmark environment::

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install crowd-kit "scikit-learn<1.6" -e .
    .bench-venv/bin/python benchmarks/bench_practice.py

(crowd-kit 1.4.2's Wawa and ZeroBasedSkill fail with scikit-learn 1.6 and later.)

Prints, all measured in this one run:

(a) accuracy on every bundled real crowd with known truth, each crowdlearn model next
    to crowd-kit's model of the same name (both with their defaults, both reading the
    same ``(task, worker, label)`` DataFrame), with crowdlearn's iterations and whether
    it converged (every crowdlearn EM model must have), and the fit times;
(b) Dawid--Skene whole fit at 1M labels: from the DataFrame to the labels, validation
    included, with each package's defaults (crowd-kit: at most 100 iterations, its own
    stopping rule; crowdlearn: SQUAREM, to its tolerance), and the ratio of the times;
(c) EM acceleration: iterations and time to convergence with and without SQUAREM for
    Dawid--Skene and one-coin, on the bundled sets and on simulated crowds;
(d) GLAD on 8,000 items: crowd-kit's GLAD against crowdlearn's, defaults, and the ratio;
(e) Krippendorff's alpha on the bundled sets, crowdlearn's next to crowd-kit's.

Wall and CPU times (``time.process_time``) are both given; only ratios measured side by
side in this run mean much on a shared machine. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings

# one BLAS thread for both packages: on 2 shared cores threaded BLAS only adds noise
# (scipy's L-BFGS-B, used by both GLADs, slows down several-fold with it)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import crowdlearn  # noqa: E402
from crowdlearn import DawidSkene, OneCoinDawidSkene  # noqa: E402
from crowdlearn.datasets import DATASETS, load_dataset  # noqa: E402
from crowdlearn.simulate import (one_coin_confusion, random_confusion,  # noqa: E402
                                 simulate_crowd)

from _timing import Stopwatch  # noqa: E402


class quiet(warnings.catch_warnings):
    """Silence warnings inside the block (the fits' own convergence is printed)."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore")
        return out


# -- (a) ---------------------------------------------------------------------------------------
def crowdlearn_models():
    from crowdlearn import GLAD, MACE, MajorityVote, Wawa, ZeroBasedSkill

    return {
        "MajorityVote": lambda: MajorityVote(tie_break="lowest"),
        "Wawa": Wawa,
        "ZeroBasedSkill": ZeroBasedSkill,
        "DawidSkene": lambda: DawidSkene(accelerate=True),
        "OneCoinDawidSkene": lambda: OneCoinDawidSkene(accelerate=True),
        "GLAD": GLAD,
        "MACE": lambda: MACE(random_state=0),
    }


def crowdkit_models():
    from crowdkit.aggregation import (GLAD, MACE, DawidSkene as CKDS, MajorityVote,
                                      OneCoinDawidSkene as CKOC, Wawa, ZeroBasedSkill)

    return {"MajorityVote": MajorityVote, "Wawa": Wawa, "ZeroBasedSkill": ZeroBasedSkill,
            "DawidSkene": lambda: CKDS(n_iter=100), "OneCoinDawidSkene": lambda: CKOC(n_iter=100),
            "GLAD": GLAD, "MACE": lambda: MACE(random_state=0)}


def accuracy_table(ck: bool) -> None:
    print("\n(a) accuracy against the truth on the bundled real crowds (defaults; time per fit)")
    ours = crowdlearn_models()
    theirs = crowdkit_models() if ck else {}
    head = f"    {'model':18s} {'set':10s} {'crowdlearn':>10s} {'iters':>6s} {'conv':>5s} " \
           f"{'time':>9s}"
    if ck:
        head += f"   {'crowd-kit':>9s} {'time':>9s}   {'ratio':>6s}"
    print(head)
    for name, make in ours.items():
        for ds_name in DATASETS:
            data = load_dataset(ds_name)
            if not data.has_truth.any():
                continue
            df = data.labels.to_frame()
            truth = dict(zip(data.item_ids[data.has_truth],
                             data.class_ids[data.truth[data.has_truth]]))
            with quiet(), Stopwatch() as sw:
                model = make().fit(df)
            pred = model.labels_
            acc = np.mean([pred[t] == y for t, y in truth.items()])
            iters = getattr(model, "n_iter_", None)
            conv = getattr(model, "converged_", None)
            line = (f"    {name:18s} {ds_name:10s} {acc:10.4f} "
                    f"{'' if iters is None else iters:>6} "
                    f"{'' if conv is None else ('yes' if conv else 'NO'):>5} "
                    f"{1000 * sw.wall:7.1f}ms")
            if ck and name in theirs:
                try:
                    with quiet(), Stopwatch() as sw2, np.errstate(all="ignore"):
                        ckpred = theirs[name]().fit_predict(df)
                except Exception as err:  # report, do not hide, a failing crowd-kit model
                    line += f"   failed: {type(err).__name__}: {str(err)[:60]}"
                else:
                    ckacc = np.mean([ckpred.get(t) == y for t, y in truth.items()])
                    line += (f"   {ckacc:9.4f} {1000 * sw2.wall:7.1f}ms   "
                             f"{sw2.wall / sw.wall:5.1f}x")
            print(line)


# -- (b) ---------------------------------------------------------------------------------------
def simulated_frame(n_labels: int, *, hard: bool, seed: int = 0):
    """A 5-class crowd of 100 workers as a DataFrame; ``hard``: 3 labels per task from weak
    workers (accuracy 0.3 to 0.6), where EM needs many iterations."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    K, J = 5, 100
    if hard:
        per = 3
        conf = one_coin_confusion(rng.uniform(0.3, 0.6, J), K)
        conf = 0.7 * conf + 0.3 * random_confusion(J, K, random_state=rng)
    else:
        per = 5
        conf = random_confusion(J, K, random_state=rng)
    sim = simulate_crowd(n_labels // per, conf, labels_per_item=per, random_state=rng)
    c = sim.labels
    return pd.DataFrame({"task": c.item, "worker": c.expert, "label": c.label}), sim.truth


def whole_fit(ck: bool, n_labels: int = 1_000_000) -> None:
    print(f"\n(b) Dawid--Skene whole fit on {n_labels:,} labels, from the DataFrame to the "
          f"labels (validation included)")
    print("    crowdlearn: tol 1e-8 (relative change of the log-likelihood); crowd-kit: its "
          "default (n_iter=100, tol=1e-5 on the\n    change of its objective per label), and "
          "again with the same stopping rule as crowdlearn (tol = 1e-8 x |objective| per "
          "label)")
    for hard in (False, True):
        df, truth = simulated_frame(n_labels, hard=hard)
        n = int(df["task"].max()) + 1
        name = "hard: 3 labels per task, weak workers" if hard else \
            "easy: 5 labels per task (the crowd of bench_crowdkit.py)"
        print(f"\n  {name}, {n:,} tasks")
        rows = []
        for label, make in (("crowdlearn DawidSkene()", lambda: DawidSkene(max_iter=10_000)),
                            ("crowdlearn DawidSkene(accelerate=True)",
                             lambda: DawidSkene(accelerate=True, max_iter=10_000))):
            times = []
            for _ in range(2):
                with quiet(), Stopwatch() as sw:
                    m = make().fit(df)
                    labels = m.labels_
                times.append((sw.wall, sw.cpu))
            t = np.median(times, axis=0)
            acc = np.mean(labels.reindex(np.arange(n)).to_numpy() == truth)
            rows.append((label, m.n_iter_, m.converged_, t, acc, labels))
        ell = abs(m.log_likelihood_)
        if ck:
            from crowdkit.aggregation import DawidSkene as CKDS

            for label, make in (("crowd-kit DawidSkene() default", lambda: CKDS(n_iter=100)),
                                ("crowd-kit, same stopping rule",
                                 lambda: CKDS(n_iter=10_000, tol=1e-8 * ell / len(df)))):
                with quiet(), Stopwatch() as sw, np.errstate(all="ignore"):
                    ckm = make().fit(df)
                acc = np.mean(ckm.labels_.reindex(np.arange(n)).to_numpy() == truth)
                rows.append((label, len(ckm.loss_history_), None, (sw.wall, sw.cpu), acc,
                             ckm.labels_))
        ref = rows[0][5].reindex(np.arange(n)).to_numpy()
        print(f"    {'':40s} {'iters':>6s} {'wall':>9s} {'CPU':>9s} {'accuracy':>9s} "
              f"{'same labels as crowdlearn':>26s}")
        for label, iters, conv, t, acc, lab in rows:
            same = np.mean(lab.reindex(np.arange(n)).to_numpy() == ref)
            flag = "" if conv is None else ("" if conv else " (not converged)")
            print(f"    {label:40s} {iters:>6} {t[0]:8.2f}s {t[1]:8.2f}s {acc:9.4f} "
                  f"{same:25.2%}{flag}")
        if ck:
            best = min(rows[0][3][0], rows[1][3][0]), min(rows[0][3][1], rows[1][3][1])
            for k in (2, 3):
                print(f"    {rows[k][0]} / fastest crowdlearn: {rows[k][3][0] / best[0]:.1f} x "
                      f"wall, {rows[k][3][1] / best[1]:.1f} x CPU")


# -- (c) ---------------------------------------------------------------------------------------
def acceleration() -> None:
    print("\n(c) EM to convergence (tol 1e-8, up to 10,000 iterations), plain and SQUAREM")
    print(f"    {'crowd':28s} {'model':18s} {'plain: iters':>12s} {'time':>9s}  "
          f"{'SQUAREM: iters':>14s} {'time':>9s}  {'|objective diff|':>16s}  {'speed-up':>8s}")
    crowds = []
    for name in DATASETS:
        data = load_dataset(name)
        crowds.append((f"{name} ({data.labels.n_labels:,} labels)", data.labels))
    for seed, (n, J, K, per) in enumerate([(20_000, 30, 4, 3), (200_000, 100, 5, 5)]):
        rng = np.random.default_rng(seed)
        sim = simulate_crowd(n, random_confusion(J, K, random_state=rng), labels_per_item=per,
                             random_state=rng)
        crowds.append((f"simulated {n * per:,} labels", sim.labels))
    for label, crowd in crowds:
        for Model in (DawidSkene, OneCoinDawidSkene):
            out = []
            for acc in (False, True):
                with quiet(), Stopwatch() as sw:
                    m = Model(accelerate=acc, max_iter=10_000).fit(crowd)
                out.append((m.n_iter_, sw.wall, m.objective_, m.converged_))
            (i0, t0, o0, c0), (i1, t1, o1, c1) = out
            print(f"    {label:28s} {Model.__name__:18s} {i0:>8}{'' if c0 else '!':1s}   "
                  f"{1000 * t0:7.1f}ms  {i1:>10}{'' if c1 else '!':1s}   {1000 * t1:7.1f}ms  "
                  f"{abs(o0 - o1):16.2e}  {t0 / t1:7.1f}x")


# -- (d) ---------------------------------------------------------------------------------------
def simulate_glad(n_items: int, n_workers: int, per_item: int, K: int, seed: int = 0):
    """A GLAD crowd: abilities ~ N(1, 1), log inverse difficulties ~ N(0, 0.5^2)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, n_items)
    alpha = rng.normal(1.0, 1.0, n_workers)
    beta = np.exp(rng.normal(0.0, 0.5, n_items))
    item = np.repeat(np.arange(n_items), per_item)
    worker = np.concatenate([rng.choice(n_workers, per_item, replace=False)
                             for _ in range(n_items)])
    p = 1.0 / (1.0 + np.exp(-alpha[worker] * beta[item]))
    right = rng.random(item.size) < p
    wrong = (truth[item] + rng.integers(1, K, item.size)) % K
    label = np.where(right, truth[item], wrong)
    return item, worker, label, truth


def glad(ck: bool, n_items: int = 8_000) -> None:
    import pandas as pd
    from crowdlearn import GLAD

    item, worker, label, truth = simulate_glad(n_items, 50, 5, 2)
    df = pd.DataFrame({"task": item, "worker": worker, "label": label})
    print(f"\n(d) GLAD on {n_items:,} tasks ({item.size:,} labels, 50 workers, 2 classes), "
          f"defaults")
    times = []
    for rep in range(2):
        with quiet(), Stopwatch() as sw:
            m = GLAD().fit(df)
        times.append((sw.wall, sw.cpu))
        if rep == 0 and ck:
            from crowdkit.aggregation import GLAD as CKGLAD

            with quiet(), Stopwatch() as sw2, np.errstate(all="ignore"):
                ckm = CKGLAD().fit(df)
    cl = np.median(times, axis=0)
    acc = np.mean(m.labels_.reindex(np.arange(n_items)).to_numpy() == truth)
    print(f"    crowdlearn GLAD: {m.n_iter_} iterations, converged {m.converged_}, "
          f"{cl[0]:.2f} s wall, {cl[1]:.2f} s CPU, accuracy {acc:.4f}")
    if ck:
        ckacc = np.mean(ckm.labels_.reindex(np.arange(n_items)).to_numpy() == truth)
        print(f"    crowd-kit GLAD:  {len(ckm.loss_history_)} iterations, {sw2.wall:.2f} s wall, "
              f"{sw2.cpu:.2f} s CPU, accuracy {ckacc:.4f}")
        print(f"    crowd-kit / crowdlearn: {sw2.wall / cl[0]:.1f} x wall, "
              f"{sw2.cpu / cl[1]:.1f} x CPU")


# -- (e) ---------------------------------------------------------------------------------------
def agreement(ck: bool) -> None:
    from crowdlearn.metrics import krippendorff_alpha

    print("\n(e) Krippendorff's alpha (nominal) on the bundled sets")
    for name in DATASETS:
        data = load_dataset(name)
        df = data.labels.to_frame()
        with Stopwatch() as sw:
            a = krippendorff_alpha(df)
        line = f"    {name:14s} crowdlearn {a:.6f} ({1000 * sw.wall:.1f} ms)"
        if ck:
            from crowdkit.metrics.data import alpha_krippendorff

            with Stopwatch() as sw2, quiet():
                b = alpha_krippendorff(df)
            line += f"   crowd-kit {b:.6f} ({1000 * sw2.wall:.1f} ms)"
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-crowdkit", action="store_true",
                        help="run only what needs crowdlearn alone")
    parser.add_argument("--parts", default="abcde", help="which parts to run, e.g. 'bc'")
    args = parser.parse_args()
    ck = not args.no_crowdkit
    versions = f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}"
    if ck:
        try:
            import crowdkit  # noqa: F401
            from importlib.metadata import version

            versions += f", crowd-kit {version('crowd-kit')}"
        except ImportError:
            print("crowd-kit is not installed here: see the docstring for the benchmark "
                  "environment, or pass --no-crowdkit")
            return 0
    print(f"{versions}, Python {platform.python_version()}, {os.cpu_count()} cores")
    with Stopwatch() as total:
        for part, run in (("a", lambda: accuracy_table(ck)), ("b", lambda: whole_fit(ck)),
                          ("c", acceleration), ("d", lambda: glad(ck)),
                          ("e", lambda: agreement(ck))):
            if part in args.parts:
                run()
                sys.stdout.flush()
    print(f"\ntotal benchmark time: {total.wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
