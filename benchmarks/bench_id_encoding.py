"""Benchmark: encoding string task/worker ids into integer codes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_id_encoding.py            # numbered vs UUIDs, 1M and 10M
    .venv/bin/python benchmarks/bench_id_encoding.py --sizes 1000000 --repeats 3
    .venv/bin/python benchmarks/bench_id_encoding.py --vs-0.1 --big   # today vs 0.1.x

By default (issue 43) it prints, side by side in one run, ids that take the numbered-id
path (tasks ``t0``, ``t1``, ...) and UUID-like ids (``8-4-4-4-12`` hexadecimal digits,
random, as ``str(uuid.uuid4())`` gives them, which have to be hashed) for the same crowd
(``n_labels / 10`` tasks each labelled by 10 workers ``w0``..``w9``, 3 classes, 70 % of
labels right, rows shuffled): the encoding alone (a DataFrame of pandas' default string
columns, pyarrow-backed, and ``from_table`` on numpy object arrays of Python strings) and
the whole way to a fitted model, ``DawidSkene().fit(df)`` and
``DawidSkene().fit(from_table(...))`` at defaults, each the median CPU time (and its wall
time) of ``--repeats`` runs, and the ratio UUID / numbered. Both kinds of ids are checked
to give the same codes up to the renaming before anything is timed.

With ``--vs-0.1`` it prints instead, all measured in this one run (so the ratios compare
like with like on whatever the machine is doing at the time), for a crowd of
``n_labels / 10`` tasks labelled by each of 10 workers (ids ``f"t{i}"`` and ``f"w{j}"``, 3
classes, rows shuffled):

(a) encoding alone, the previous path (``OLD``: a private copy of the 0.1.x functions
    below, put in place of the package's for the measurement) next to the current one,
    for these input forms: a pandas DataFrame (``task``, ``worker``, ``label`` columns,
    pandas' default string dtype; the same with the task ids renamed to 12 hexadecimal
    digits, which are hashed as strings where ``t…`` ids are read as numbers; the same
    with object columns), ``from_table`` on numpy object arrays (with pandas
    imported, as in any session that has pandas loaded, and with pandas hidden: the
    numpy-only path) and ``from_table`` on fixed-width ``'U'`` arrays;
(b) the whole ``DawidSkene().fit(df)`` at defaults, old and new encoding.

Both paths are checked to give identical codes and ids before anything is timed. Times
are CPU time of this process (``time.process_time``, hardly moved by other load) and wall
time. Not a test: nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
import warnings
from unittest import mock

import numpy as np
import pandas as pd

import crowdlearn
from crowdlearn import DawidSkene, from_table
from crowdlearn import _ids as I
from crowdlearn import labels as L
from crowdlearn._validation import refuse_masked

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import Stopwatch  # noqa: E402

# ---------------------------------------------------------------------------------------
# The 0.1.x path, copied verbatim (only renamed): an element loop per id, np.unique on the
# converted strings, and an element loop over the distinct ids of a pandas string column.


def _old_id_array(values, name: str):
    values = refuse_masked(values, name)
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()  # pandas Series, Index, Categorical
    if isinstance(values, np.ndarray) and values.dtype != object:
        if values.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {values.shape}")
        kind = I._KIND_OF_DTYPE.get(values.dtype.kind)
        if kind is None:
            raise ValueError(f"{name} identifiers of type {values.dtype.name} are not "
                             f"supported; use strings or integers")
        arr = values.copy()
    else:
        if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
            raise ValueError(f"{name} must be a sequence of identifiers, got "
                             f"{type(values).__name__}")
        try:
            arr = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):
                arr[i] = v
        except TypeError:
            raise ValueError(f"{name} must be a sequence of identifiers") from None
        kinds: dict[str, object] = {}
        for v in arr:
            kinds.setdefault(I._id_kind(v), v)
        if "NoneType" in kinds:
            raise ValueError(f"{name} contains None")
        if len(kinds) > 1:
            shown = ", ".join(f"{k} (e.g. {v!r})" for k, v in kinds.items())
            raise ValueError(f"{name} identifiers mix types: {shown}. Identifiers such as "
                             f"'1', 1 and True would be confused; convert them to one type "
                             f"first")
        kind = next(iter(kinds), "int")
        if kind == "str":
            I._refuse_trailing_nul(arr, name)
            arr = arr.astype(str)
        elif kind == "float":
            arr = arr.astype(float)
        elif kind == "bool":
            arr = arr.astype(bool)
        elif kind == "int":
            try:
                arr = arr.astype(np.int64)
            except OverflowError:
                pass  # huge Python ints: kept as objects, still comparable
    if kind == "float" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at position {int(np.flatnonzero(np.isnan(arr))[0])}")
    if kind in ("datetime64", "timedelta64") and np.isnat(arr).any():
        raise ValueError(f"{name} contains NaT (a missing time) at position "
                         f"{int(np.flatnonzero(np.isnat(arr))[0])}")
    return arr, kind


def _old_encode(values, name, known=None):
    if known is not None:  # not benchmarked: mapping onto known ids is unchanged
        return _NEW["_encode"](values, name, known)
    arr, kind = _old_id_array(values, name)
    try:
        ids, codes = np.unique(arr, return_inverse=True)
    except TypeError:
        raise ValueError(f"{name} identifiers must be mutually comparable (e.g. all strings "
                         f"or all numbers)") from None
    return ids, codes.astype(np.intp)


def _old_factorize_columns(df, columns):
    out = []
    for name, c in zip(("item", "worker", "label"), columns):
        col = df[c]
        if col.dtype == object or isinstance(col.dtype, pd.CategoricalDtype):
            return None
        codes, uniques = pd.factorize(col, sort=True)
        if isinstance(col.dtype, pd.StringDtype):  # every element is a str
            I._refuse_trailing_nul(uniques, name)
            ids = np.asarray(uniques.to_numpy(dtype=object), dtype=str)
        else:
            ids, _ = _old_id_array(uniques, name)
        out.append((codes.astype(np.intp, copy=False), ids))
    return out


_NEW = {"_encode": L._encode, "_factorize_columns": L._factorize_columns}
_OLD = {"_encode": _old_encode, "_factorize_columns": _old_factorize_columns}


@contextlib.contextmanager
def path(which: str):
    """Run with the old (``"old"``) or the current (``"new"``) encoding functions."""
    with mock.patch.multiple(L, **(_OLD if which == "old" else _NEW)):
        yield


@contextlib.contextmanager
def without_pandas():
    """Hide pandas from crowdlearn's encoder (as in a session that never imported it)."""
    with mock.patch.dict(sys.modules, {"pandas": None}):
        yield


# ---------------------------------------------------------------------------------------


def make_crowd(n_labels: int, seed: int = 0):
    n_workers = 10
    n_tasks = n_labels // n_workers
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), n_workers)
    worker = np.tile(np.arange(n_workers), n_tasks)
    truth = rng.integers(0, 3, n_tasks)
    right = rng.random(task.size) < 0.7
    label = np.where(right, truth[task], rng.integers(0, 3, task.size))
    perm = rng.permutation(task.size)
    task_ids = np.array([f"t{i}" for i in range(n_tasks)], dtype=object)
    worker_ids = np.array([f"w{j}" for j in range(n_workers)], dtype=object)
    tasks, workers = task_ids[task[perm]], worker_ids[worker[perm]]
    labels = label[perm]
    df = pd.DataFrame({"task": tasks, "worker": workers, "label": labels})
    return df, (tasks, workers, labels)


def hex_ids(tasks):
    """The same tasks renamed to 12 hexadecimal digits (as a hash or a UUID part would name
    them): ids that are not a prefix and a number, so they are hashed as strings."""
    codes, uniques = pd.factorize(tasks)
    names = np.array([f"{h:012x}" for h in np.random.default_rng(1).choice(
        2**48, size=len(uniques), replace=False)], dtype=object)
    return pd.array(names[codes], dtype=tasks.dtype)


def timed(fn, repeats: int):
    """Best CPU time (and the wall time of that run) over ``repeats`` runs, and a result."""
    best, out = None, None
    for _ in range(repeats):
        out = None
        with Stopwatch() as sw:
            out = fn()
        if best is None or sw.cpu < best[0]:
            best = (sw.cpu, sw.wall)
    return best, out


def same(a, b) -> None:
    for f in ("item", "expert", "label", "item_ids", "expert_ids", "class_ids"):
        x, y = getattr(a, f), getattr(b, f)
        if x.dtype != y.dtype or not np.array_equal(x, y):
            raise SystemExit(f"old and new paths differ in {f}: this is a bug")


def row(label: str, old, new) -> None:
    (oc, ow), (nc, nw) = old, new
    print(f"    {label:38s} old {oc:7.2f} s CPU ({ow:6.2f} wall)   new {nc:7.2f} s CPU "
          f"({nw:6.2f} wall)   {oc / nc:5.1f}x")


def bench(n_labels: int, repeats: int, fit: bool) -> None:
    with Stopwatch() as sw:
        df, (tasks, workers, labels) = make_crowd(n_labels)
        utasks, uworkers = tasks.astype(str), workers.astype(str)
        odf = df.astype({"task": object, "worker": object})
        hdf = df.assign(task=hex_ids(df["task"]))
    print(f"\n{n_labels:,} labels: {n_labels // 10:,} tasks x 10 workers, 3 classes "
          f"(built in {sw.wall:.1f} s); task column dtype {df['task'].dtype}")
    forms = {
        "DataFrame (pandas string columns)": lambda: crowdlearn.as_crowd_labels(df),
        "DataFrame (string columns, hex ids)": lambda: crowdlearn.as_crowd_labels(hdf),
        "DataFrame (object columns)": lambda: crowdlearn.as_crowd_labels(odf),
        "from_table, object arrays": lambda: from_table(tasks, workers, labels),
        "from_table, object arrays, no pandas": lambda: from_table(tasks, workers, labels),
        "from_table, 'U' arrays": lambda: from_table(utasks, uworkers, labels),
    }
    print("  (a) encoding (best of %d)" % repeats)
    for name, fn in forms.items():
        hide = without_pandas() if "no pandas" in name else contextlib.nullcontext()
        with hide:
            with path("old"):
                old, old_crowd = timed(fn, repeats)
            with path("new"):
                new, new_crowd = timed(fn, repeats)
        same(old_crowd, new_crowd)
        del old_crowd, new_crowd
        row(name, old, new)
    if fit:
        print("  (b) DawidSkene().fit(df), whole fit at defaults (one run each)")
        times = {}
        for which in ("old", "new"):
            with path(which), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with Stopwatch() as sw:
                    model = DawidSkene().fit(df)
            times[which] = (sw.cpu, sw.wall)
            print(f"    {which}: {model.n_iter_} iterations")
        row("whole fit", times["old"], times["new"])


# ---------------------------------------------------------------------------------------
# Numbered ids against UUID-like ids (issue 43)


def uuid_like(k: int, seed: int = 2) -> np.ndarray:
    """``k`` distinct random ids formatted as UUIDs (36 characters), as an object array."""
    rng = np.random.default_rng(seed)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    chars = digits[rng.integers(0, 16, (k, 36))]
    chars[:, [8, 13, 18, 23]] = ord("-")
    ids = np.unique(chars.view("S36").ravel())  # distinct (a repeat has odds ~k^2 / 2^125)
    if ids.size != k:
        raise SystemExit("two UUIDs coincide: pick another seed")
    return rng.permutation(ids.astype(str).astype(object))


def median_time(fn, repeats: int):
    """Median CPU time of ``repeats`` runs, the wall time of that run, and a result."""
    runs, out = [], None
    for _ in range(repeats):
        out = None
        with Stopwatch() as sw:
            out = fn()
        runs.append((sw.cpu, sw.wall))
    runs.sort()
    return runs[len(runs) // 2], out


def compare_ids(n_labels: int, repeats: int) -> None:
    with Stopwatch() as sw:
        df, (tasks, workers, labels) = make_crowd(n_labels)
        codes, names = pd.factorize(tasks)
        uuids = uuid_like(len(names))[codes]
        udf = df.assign(task=pd.array(uuids, dtype=df["task"].dtype))
    print(f"\n{n_labels:,} labels: {n_labels // 10:,} tasks x 10 workers, 3 classes "
          f"(built in {sw.wall:.1f} s); task column dtype {df['task'].dtype}; median of "
          f"{repeats} runs, CPU s (wall s)")
    a, b = crowdlearn.as_crowd_labels(df), crowdlearn.as_crowd_labels(udf)
    if not (np.array_equal(a.expert, b.expert) and np.array_equal(a.label, b.label)
            and pd.factorize(a.item)[0].tolist() == pd.factorize(b.item)[0].tolist()):
        raise SystemExit("numbered and UUID ids give different crowds: this is a bug")
    del a, b
    forms = {
        "encode: DataFrame (string columns)": (lambda: crowdlearn.as_crowd_labels(df),
                                               lambda: crowdlearn.as_crowd_labels(udf)),
        "encode: from_table, object arrays": (lambda: from_table(tasks, workers, labels),
                                              lambda: from_table(uuids, workers, labels)),
        "DawidSkene().fit(df), whole fit": (lambda: DawidSkene().fit(df),
                                            lambda: DawidSkene().fit(udf)),
        "fit(from_table(object arrays))": (
            lambda: DawidSkene().fit(from_table(tasks, workers, labels)),
            lambda: DawidSkene().fit(from_table(uuids, workers, labels))),
    }
    print(f"    {'':36s} {'numbered (t123)':>22s} {'UUID-like':>22s}  {'ratio':>5s}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (numbered, hashed) in forms.items():
            (nc, nw), _ = median_time(numbered, repeats)
            (uc, uw), _ = median_time(hashed, repeats)
            print(f"    {name:36s} {nc:8.2f} s ({nw:6.2f} wall) {uc:8.2f} s ({uw:6.2f} wall)"
                  f"  {uc / nc:5.2f}x", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vs-0.1", dest="vs_old", action="store_true",
                        help="compare today's encoder with 0.1.x's instead")
    parser.add_argument("--big", action="store_true",
                        help="with --vs-0.1: also 10M labels (about 5 minutes and 6 GB)")
    parser.add_argument("--sizes", type=int, nargs="*", default=None,
                        help="label counts to run instead (multiples of 10)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timing runs per cell (with --vs-0.1: up to 2M labels, one above)")
    parser.add_argument("--no-fit", action="store_true", help="with --vs-0.1: no whole fits")
    args = parser.parse_args(argv)
    if args.vs_old:
        sizes = args.sizes or ([1_000_000, 10_000_000] if args.big else [1_000_000])
    else:
        sizes = args.sizes or [1_000_000, 10_000_000]
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, pandas "
          f"{pd.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    for n in sizes:
        if args.vs_old:
            bench(n, repeats=args.repeats if n <= 2_000_000 else 1, fit=not args.no_fit)
        else:
            compare_ids(n, args.repeats)
    print(f"\ntotal benchmark time: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
