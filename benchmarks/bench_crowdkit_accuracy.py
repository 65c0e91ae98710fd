"""Benchmark: every model crowdlearn shares with crowd-kit, at both packages' defaults, on every
bundled real crowd -- accuracy, fit time and the speed ratio, in one table (issue 28).

crowd-kit is not a dependency of crowdlearn: it lives only in a separate benchmark environment.
From the repository root::

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install crowd-kit==1.4.2 "scikit-learn<1.6" -e .
    .bench-venv/bin/python benchmarks/bench_crowdkit_accuracy.py     # 3 to 6 minutes

(crowd-kit 1.4.2's ``Wawa`` and ``ZeroBasedSkill`` call scikit-learn's ``check_is_fitted``,
which from scikit-learn 1.6 on needs ``__sklearn_tags__`` that crowd-kit's classes lack: with a
newer scikit-learn those two fail with an AttributeError, shown in their rows.) Without
crowd-kit the script says so and exits with status 0.

Both packages get the same pandas DataFrame (columns ``task``, ``worker``, ``label``, the
crowd's original ids) and are called the way crowd-kit is called: ``Model().fit_predict(df)``
(``GoldMajorityVote``: ``fit_predict(df, gold)``, see below), every constructor argument left
at its default. The predicted labels (a Series by task id in both packages) are compared with
the truth by task id. Models (crowd-kit's name = crowdlearn's name): ``MajorityVote``,
``Wawa``, ``ZeroBasedSkill``, ``GoldMajorityVote``, ``DawidSkene``, ``OneCoinDawidSkene``,
``GLAD``, ``MACE``.

Printed per crowd and model: the accuracy of crowdlearn and of crowd-kit against the truth,
their difference (crowdlearn - crowd-kit; negative = crowdlearn less accurate, marked ``<<``),
the share of items on which the two predict the same class, the fit time of each
(``fit_predict``, wall; the median of 3 runs when a fit takes under 0.5 s) and the ratio
crowd-kit time / crowdlearn time. The crowd without a truth (anaesthetists) gets only the
agreement and the times. A crowdlearn default fit that issues a ``ConvergenceWarning`` or a
``DegenerateFitWarning`` is named at the end of its row and in a summary line (issue 43: a
default fit must converge without a warning on every bundled crowd).

``GoldMajorityVote`` needs known labels: a seeded 20% of the items with a truth, grown until
every worker has labelled at least one of them (both packages refuse a worker without a gold
label at their defaults), is given as gold -- a Series by task id, the second positional argument of
``fit_predict`` in both packages (crowd-kit's ``true_labels``, crowdlearn's ``gold``) -- and
accuracy is measured on the other items only.

Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

# one BLAS thread for both packages (as bench_practice.py): on 2 shared cores threaded BLAS
# only adds noise (scipy's L-BFGS-B, used by both GLADs, slows down several-fold with it)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import crowdlearn  # noqa: E402
from crowdlearn.datasets import DATASETS, load_dataset  # noqa: E402

from _timing import Stopwatch  # noqa: E402

MODELS = ("MajorityVote", "Wawa", "ZeroBasedSkill", "GoldMajorityVote", "DawidSkene",
          "OneCoinDawidSkene", "GLAD", "MACE")
# like for like beyond the defaults: (row name, crowdlearn model, crowd-kit model at defaults);
# crowd-kit's MACE is variational Bayes by default, crowdlearn's is EM (the row above)
EXTRA = (("MACE method=vb", lambda: crowdlearn.MACE(method="vb"), "MACE"),)
GOLD_SHARE = 0.2
REPEAT_BELOW = 0.5  # seconds: shorter fits are timed 3 times (median)
WARNINGS: list = []  # (crowd, model, warning names) of crowdlearn's default fits that warned

INSTALL_HINT = """\
crowd-kit is not installed in this environment, so there is nothing to compare against.
crowd-kit is not a dependency of crowdlearn; create the benchmark environment from the
repository root and run the script there:

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install crowd-kit==1.4.2 "scikit-learn<1.6" -e .
    .bench-venv/bin/python benchmarks/bench_crowdkit_accuracy.py"""


def crowdkit_aggregation():
    try:
        import crowdkit.aggregation
    except ImportError:
        return None
    return crowdkit.aggregation


def frame_of(data):
    """The crowd as crowd-kit's (task, worker, label) DataFrame with the original ids, and its
    truth as a Series of class ids by task id (None without a truth)."""
    import pandas as pd

    crowd = data.labels
    df = pd.DataFrame({"task": crowd.item_ids[crowd.item],
                       "worker": crowd.expert_ids[crowd.expert],
                       "label": crowd.class_ids[crowd.label]})
    truth = None
    if data.truth is not None:
        known = data.has_truth
        truth = pd.Series(crowd.class_ids[data.truth[known]], index=crowd.item_ids[known])
    return df, truth


def gold_split(df, truth, seed: int = 0):
    """A seeded ``GOLD_SHARE`` of the items with a truth, grown until every worker labelled
    one of them: (gold Series, the task ids to score on)."""
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(truth.index.to_numpy()))
    chosen = set(order[:int(np.ceil(GOLD_SHARE * len(order)))])
    with_truth = df[df["task"].isin(truth.index)]
    for _, rows in with_truth.groupby("worker", sort=True):
        if not chosen.intersection(rows["task"]):
            tasks = set(rows["task"])
            chosen.add(next(t for t in order if t in tasks))
    gold = truth[truth.index.isin(list(chosen))]
    return gold, truth.index[~truth.index.isin(list(chosen))]


def timed(call):
    """(result, median wall time): one run, or three when it takes under ``REPEAT_BELOW``."""
    times = []
    while True:
        with Stopwatch() as sw:
            result = call()
        times.append(sw.wall)
        if len(times) == 3 or (len(times) == 1 and sw.wall >= REPEAT_BELOW):
            return result, float(np.median(times))


def run(package_model, df, gold):
    """``(labels Series, seconds)`` of one default fit, or ``(error text, None)``; the names
    of the warnings crowdlearn's fits issue are added to ``WARNED``."""
    def call():
        model = package_model()
        return model.fit_predict(df) if gold is None else model.fit_predict(df, gold)

    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            warnings.simplefilter("always")
            result = timed(call)
        if package_model.__module__.startswith("crowdlearn"):
            WARNED.update(type(w.message).__name__ for w in caught
                          if issubclass(w.category, (crowdlearn.ConvergenceWarning,
                                                     crowdlearn.DegenerateFitWarning)))
        return result
    except Exception as exc:  # noqa: BLE001 -- shown in the table, not hidden
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:60]}", None


WARNED: set[str] = set()  # convergence / degenerate-fit warnings of the current crowdlearn fit


def accuracy(labels, truth, scored) -> float:
    return float(np.mean(labels.reindex(scored).to_numpy() == truth.loc[scored].to_numpy()))


HEADER = (f"    {'crowd':13s} {'model':17s} {'crowdlearn':>10s} {'crowd-kit':>9s} "
          f"{'diff':>7s} {'agree':>6s} {'fit crowdlearn':>14s} {'fit crowd-kit':>13s} "
          f"{'ck / cl':>8s}")


def row(dataset: str, name: str, ours, theirs, truth, scored) -> tuple[str, float | None]:
    """One line of the table and the accuracy difference (None when not measured)."""
    (cl_labels, cl_time), (ck_labels, ck_time) = ours, theirs
    start = f"    {dataset:13s} {name:17s} "
    for labels, who in ((cl_labels, "crowdlearn"), (ck_labels, "crowd-kit")):
        if isinstance(labels, str):
            return start + f"{who} failed: {labels}", None
    common = cl_labels.index.intersection(ck_labels.index)
    agree = float(np.mean(cl_labels.loc[common].to_numpy() == ck_labels.loc[common].to_numpy()))
    diff = None
    if truth is None:
        acc = f"{'-':>10s} {'-':>9s} {'-':>7s} "
    else:
        a, b = accuracy(cl_labels, truth, scored), accuracy(ck_labels, truth, scored)
        diff = a - b
        acc = f"{a:10.4f} {b:9.4f} {diff:+7.4f} "
    line = (start + acc + f"{agree:6.1%} {1000 * cl_time:11.1f} ms {1000 * ck_time:10.1f} ms "
            f"{ck_time / cl_time:7.1f}x")
    return line + ("  <<" if diff is not None and diff < -1e-12 else ""), diff


def table(ck) -> list[tuple[str, str, float]]:
    """Print the table; return the (crowd, model, difference) where crowdlearn is less
    accurate."""
    print(HEADER)
    worse = []
    for dataset in DATASETS:
        data = load_dataset(dataset)
        df, truth = frame_of(data)
        print(f"    {dataset} ({data.n_items} items, {data.n_experts} workers, "
              f"{data.n_labels:,} labels, {data.n_classes} classes, "
              f"{'truth' if truth is not None else 'no truth'})")
        for name in MODELS:
            gold, scored = None, None if truth is None else truth.index
            if name == "GoldMajorityVote":
                if truth is None:
                    continue
                gold, scored = gold_split(df, truth)
            WARNED.clear()
            ours = run(getattr(crowdlearn, name), df, gold)
            warned = sorted(WARNED)
            theirs = run(getattr(ck, name), df, gold)
            line, diff = row("", name, ours, theirs, truth, scored)
            print(line + (f"  crowdlearn warned: {', '.join(warned)}" if warned else ""))
            if warned:
                WARNINGS.append((dataset, name, warned))
            if diff is not None and diff < -1e-12:
                worse.append((dataset, name, diff))
        for name, ours_model, theirs_name in EXTRA:  # not defaults: not in `worse`
            ours = run(ours_model, df, None)
            theirs = run(getattr(ck, theirs_name), df, None)
            print(row("", name, ours, theirs, truth, None if truth is None else truth.index)[0])
        sys.stdout.flush()
    return worse


def tie_spread(ck, n_draws: int = 50) -> None:
    """MajorityVote's accuracy is a draw wherever votes tie: crowd-kit's over row orders
    (it gives a tie to the label met first), crowdlearn's over seeds (seeded random ties).
    Mean, min and max over ``n_draws`` draws of each, on every crowd with a truth."""
    print(f"\nMajorityVote where votes tie: accuracy over {n_draws} row orders (crowd-kit) "
          f"and {n_draws} seeds (crowdlearn)")
    for name in DATASETS:
        data = load_dataset(name)
        df, truth = frame_of(data)
        if truth is None:
            continue
        scored = truth.index
        theirs = [accuracy(ck.MajorityVote().fit_predict(df.sample(frac=1, random_state=s)),
                           truth, scored) for s in range(n_draws)]
        ours = [accuracy(crowdlearn.MajorityVote(random_state=s).fit_predict(df), truth,
                         scored) for s in range(n_draws)]
        print(f"    {name:13s} crowd-kit mean {np.mean(theirs):.4f} [{min(theirs):.4f}, "
              f"{max(theirs):.4f}]   crowdlearn mean {np.mean(ours):.4f} [{min(ours):.4f}, "
              f"{max(ours):.4f}]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ties-only", action="store_true",
                        help="only MajorityVote's spread over tie-breaks (seconds)")
    args = parser.parse_args(argv)
    ck = crowdkit_aggregation()
    if ck is None:
        print(INSTALL_HINT)
        return 0
    import crowdkit
    import pandas as pd
    import sklearn

    print(f"crowdlearn {crowdlearn.__version__}, crowd-kit {crowdkit.__version__}, numpy "
          f"{np.__version__}, pandas {pd.__version__}, scikit-learn {sklearn.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.2f}")
    print("\nEvery shared model at both packages' defaults, fit_predict on the same DataFrame; "
          "accuracy against the truth\n(GoldMajorityVote: on the items not given as gold), "
          "diff = crowdlearn - crowd-kit, agree = same class,\nfit = wall time of fit_predict, "
          "ck / cl = crowd-kit time / crowdlearn time; << marks crowdlearn less accurate\n")
    with Stopwatch() as sw:
        if not args.ties_only:
            worse = table(ck)
            print()
            if worse:
                print("crowdlearn less accurate than crowd-kit at defaults:")
                for dataset, name, diff in worse:
                    print(f"    {dataset} {name}: {diff:+.4f}")
            else:
                print("crowdlearn at least as accurate as crowd-kit everywhere at defaults.")
            print("crowdlearn default fits that warned (ConvergenceWarning, DegenerateFitWarning): "
                  + ("; ".join(f"{d} {n}: {', '.join(w)}" for d, n, w in WARNINGS) or "none"))
        tie_spread(ck)
    print(f"\ntotal benchmark time: {sw.wall:.0f} s wall, {sw.cpu:.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
