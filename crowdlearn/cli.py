"""The command line: aggregate a file of crowd labels (``python -m crowdlearn`` or ``crowdlearn``).

::

    crowdlearn aggregate answers.csv --model ds [--gold gold.csv] [--out labels.csv]
                         [--probas probas.csv] [--skills skills.csv]
                         [--confusions confusions.csv]

``answers.csv`` holds one row per label, crowd-kit's layout: a task (item) id, a worker id
and the label, in columns named ``task``, ``worker`` and ``label`` unless ``--task-col``,
``--worker-col`` and ``--label-col`` say otherwise. CSV, TSV (``.tsv``, ``.tab``) and
parquet (``.parquet``, ``.pq``; needs pyarrow) are read by their extension; the output
files are written the same way. Task and worker ids are read from CSV/TSV as text, as
written (``007`` stays ``007``; only an empty cell is missing); labels keep the type
pandas infers. Results are given by the original ids: the labels file has one row per task
(the task column and the label column, under the input's names), the probabilities file
one column per class, the skills file one row per worker (``skill``): the model's skill of
the worker, or, for Dawid--Skene (which has a confusion matrix per worker, no single
skill), the worker's accuracy ``sum_n prior[n] * confusion_[r, n, n]``, the probability
that it gives the true label under the fitted class prior and confusion matrices. The
confusions file (``--confusions``; ``ds`` and ``onecoin``) has one row per worker, true
label and given label: the worker column, ``true_label``, ``given_label`` and
``probability``, the probability of the given label when the true label is
``true_label``. The gold file's columns are named like the answers' task and label columns
unless ``--gold-task-col`` and ``--gold-label-col`` say otherwise (a gold file without them
but with ``task`` and ``label`` columns is read by those). A task may have several gold rows
with ``--model gmv`` only: an answer (and an aggregate, in the accuracy printed) equal to any
of them is right.

Errors in the input (a missing file or column, an empty file, a missing label, an unknown
model...) print one line on stderr and exit with status 2. Every argument is checked before
anything is computed or written: an input must be a regular file (not a folder, a device
such as ``/dev/null`` or a pipe) that is not empty, whose header names at most
``MAX_COLUMNS`` columns and no column twice; an output must not be a folder, must be
writable in an existing folder, and must not be the same file as another output or as an
input. Labels must be single values (a parquet column of lists is refused). When stdout
is closed early (``crowdlearn aggregate answers.csv | head``) the command stops quietly
with exit status 141 (128 + SIGPIPE, as a shell reports a command killed by a closed pipe),
without a message. The command line needs pandas (``pip install 'crowdlearn[pandas]'``).
"""

from __future__ import annotations

import argparse
import collections
import csv
import inspect
import os
import sys
import warnings
from pathlib import Path

__all__ = ["main", "MODELS", "MAX_COLUMNS"]

MODELS = {
    "mv": "MajorityVote",
    "wawa": "Wawa",
    "zbs": "ZeroBasedSkill",
    "gmv": "GoldMajorityVote",
    "ds": "DawidSkene",
    "onecoin": "OneCoinDawidSkene",
    "glad": "GLAD",
    "mace": "MACE",
    "mace-vb": "MACE",
}
"""``--model`` short name -> the class of :mod:`crowdlearn` it fits."""

SETTINGS = {"mace-vb": {"method": "vb"}}
"""Constructor arguments a ``--model`` short name implies (MACE by variational Bayes)."""

_PARQUET = (".parquet", ".pq")
_TSV = (".tsv", ".tab")

MAX_COLUMNS = 10_000
"""Most columns an input file's header may name: a file of labels needs three, and pandas
would take minutes over a million; checked on the header alone, before the file is read."""

BROKEN_PIPE_STATUS = 141
"""The exit status when stdout is closed before the labels are written (128 + SIGPIPE)."""


class CLIError(Exception):
    """A mistake in the command or its input: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block) and exit status 2."""

    def error(self, message):
        """Raise :class:`CLIError` instead of printing the usage and exiting."""
        raise CLIError(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    """The ``crowdlearn`` argument parser, with its one command ``aggregate``."""
    from crowdlearn import __version__

    top = _Parser(prog="crowdlearn", description="Learn true labels from crowd labels.")
    top.add_argument("--version", action="version", version=f"crowdlearn {__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    agg = commands.add_parser(
        "aggregate", help="fit a label model to a file of (task, worker, label) rows",
        description="Fit a label model to a CSV/TSV/parquet file of (task, worker, label) "
                    "rows; write the labels by task id (stdout without --out).")
    agg.add_argument("answers", help="the labels: .csv, .tsv or .parquet, one row per label")
    agg.add_argument("--model", default="ds", choices=list(MODELS),
                     help="mv (majority vote), wawa, zbs (zero-based skill), gmv (gold "
                          "majority vote, needs --gold), ds (Dawid-Skene, default), onecoin, "
                          "glad, mace, mace-vb (MACE by variational Bayes, as MACE's tool "
                          "and crowd-kit)")
    agg.add_argument("--out", help="write the labels here (task, label) instead of stdout")
    agg.add_argument("--probas", help="write the class probabilities here (task, one column "
                                      "per class)")
    agg.add_argument("--skills", help="write each worker's skill here (worker, skill); for "
                                      "ds the worker's accuracy, sum_n prior_n M_nn")
    agg.add_argument("--confusions", help="write the confusion matrices here (worker, "
                                          "true_label, given_label, probability); ds, "
                                          "onecoin")
    agg.add_argument("--gold", help="known true labels (task, label): used by the models "
                                    "that take them, and the accuracy on them is printed")
    agg.add_argument("--score-only", action="store_true",
                     help="use --gold only to score the labels, not in the fit")
    for name, default in (("task", "task"), ("worker", "worker"), ("label", "label")):
        agg.add_argument(f"--{name}-col", default=default,
                         help=f"the answers' {name} column (default {default!r})")
    agg.add_argument("--gold-task-col", help="the gold file's task column (default: the "
                                             "answers' task column, else 'task')")
    agg.add_argument("--gold-label-col", help="the gold file's label column (default: the "
                                              "answers' label column, else 'label')")
    agg.add_argument("--classes", help="every class, comma-separated, in order (when some "
                                       "class never occurs in the answers)")
    agg.add_argument("--n-classes", type=int, help="the number of classes (passed to the model)")
    agg.add_argument("--random-state", type=int, help="seed of the models that draw at random "
                                                      "(ignored by the others)")
    agg.add_argument("--max-iter", type=int, help="most iterations (iterative models)")
    agg.add_argument("--tol", type=float, help="convergence tolerance (iterative models)")
    agg.add_argument("--progress", action="store_true",
                     help="show a progress bar on stderr (EM models; needs tqdm)")
    return top


# -- files ---------------------------------------------------------------------------------------
def _pandas():
    """Import pandas, or a :class:`CLIError` saying how to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise CLIError("the command line needs pandas: pip install 'crowdlearn[pandas]' "
                       "(or pip install pandas)") from None
    return pd


def _need_pyarrow(path: Path) -> None:
    """A :class:`CLIError` saying how to get pyarrow, unless it is installed."""
    try:
        import pyarrow  # noqa: F401 - only its presence is checked
    except ImportError:
        raise CLIError(f"{path}: parquet files need pyarrow: pip install pyarrow") from None


def _check_input_file(path) -> Path:
    """``path`` as a Path if it is a regular, non-empty file; else a :class:`CLIError`
    saying what it is (missing, a folder, a device or pipe, empty)."""
    path = Path(path)
    if not path.exists():
        raise CLIError(f"{path}: no such file")
    if path.is_dir():
        raise CLIError(f"{path}: is a directory, not a file of rows")
    if not path.is_file():
        raise CLIError(f"{path}: is not a regular file (a device, a pipe or a socket); save "
                       f"the rows to a file first")
    if path.stat().st_size == 0:
        raise CLIError(f"{path}: the file is empty")
    return path


def _csv_header(path: Path, sep: str) -> list:
    """The column names of a CSV/TSV file's first line, read alone (and refused as soon as
    it holds more than ``MAX_COLUMNS`` separators, before it is read to its end)."""
    chunks, n_sep, size = [], 0, 0
    with open(path, encoding="utf-8-sig", newline="") as f:
        while True:
            chunk = f.readline(2 ** 16)
            chunks.append(chunk)
            n_sep, size = n_sep + chunk.count(sep), size + len(chunk)
            if n_sep >= MAX_COLUMNS:
                raise CLIError(f"{path}: the header has more than {MAX_COLUMNS:,} columns; a "
                               f"file of labels needs three (task, worker, label)")
            if size > 2 ** 24:
                raise CLIError(f"{path}: the first line is longer than 16 MiB: not a header "
                               f"of column names")
            if not chunk or chunk.endswith(("\n", "\r")):
                break
    return next(csv.reader(["".join(chunks)], delimiter=sep), [])


def _header_names(path: Path) -> list:
    """The column names of a file's header (parquet: its schema), read alone."""
    suffix = path.suffix.lower()
    try:
        if suffix in _PARQUET:
            _need_pyarrow(path)
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        return _csv_header(path, "\t" if suffix in _TSV else ",")
    except (OSError, ValueError, csv.Error) as exc:  # UnicodeDecodeError, ArrowInvalid
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CLIError(f"{path}: cannot be read as {suffix or 'CSV'}: {first}") from None


def _check_header(path: Path) -> None:
    """Refuse a file whose header names more than ``MAX_COLUMNS`` columns, or a column
    twice (pandas would read the first and rename the other ``label.1``)."""
    names = _header_names(path)
    if len(names) > MAX_COLUMNS:
        raise CLIError(f"{path}: the header has {len(names):,} columns, more than "
                       f"{MAX_COLUMNS:,}; a file of labels needs three (task, worker, label)")
    twice = [n for n, k in collections.Counter(names).items() if k > 1 and n != ""]
    if twice:
        raise CLIError(f"{path}: the header names the column(s) "
                       f"{', '.join(map(repr, twice[:5]))} more than once; which one is "
                       f"meant is ambiguous: rename or drop the others")


def read_table(path, id_columns=()):
    """Read a CSV, TSV or parquet file into a DataFrame, by its extension.

    Parameters
    ----------
    path : str or Path
    id_columns : sequence of str
        Columns read as text from CSV/TSV (ids as written: ``007`` stays ``007``).

    Returns
    -------
    pandas.DataFrame
        The file's rows. A ``CLIError`` says what is wrong with a file that is missing, a
        folder, not a regular file (a device such as ``/dev/null``, a pipe), empty,
        unreadable, or parquet without pyarrow, and with a header that names a column
        twice or more than ``MAX_COLUMNS`` columns (checked on the header line alone,
        before the file is read).
    """
    pd = _pandas()
    path = _check_input_file(path)
    _check_header(path)
    suffix = path.suffix.lower()
    try:
        if suffix in _PARQUET:
            _need_pyarrow(path)
            return pd.read_parquet(path)
        sep = "\t" if suffix in _TSV else ","
        # only an empty cell is missing: a worker called "NA" or "null" stays one
        return pd.read_csv(path, sep=sep, keep_default_na=False, na_values=[""],
                           dtype={c: "string" for c in id_columns})
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path}: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot be read as {suffix or 'CSV'}: "
                       f"{str(exc).splitlines()[0]}") from None


def write_table(frame, path) -> None:
    """Write ``frame`` (without its index) as CSV, TSV or parquet, by the extension of ``path``;
    ``path`` None writes CSV to stdout."""
    if path is None:
        frame.to_csv(sys.stdout, index=False)
        return
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _PARQUET:
        _need_pyarrow(path)
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="\t" if suffix in _TSV else ",")


def _require_columns(frame, columns, path) -> None:
    """Refuse a table without one of ``columns`` (naming those it has), without rows, or
    with a missing value in one of ``columns`` (naming its line)."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns[:20]))
        raise CLIError(f"{path}: no column {', '.join(map(repr, missing))} (columns found: "
                       f"{found}); name the columns with --task-col/--worker-col/--label-col "
                       f"(gold: --gold-task-col/--gold-label-col)")
    if len(frame) == 0:
        raise CLIError(f"{path}: the file has no rows")
    for c in columns:
        empty = frame[c].isna().to_numpy()
        if empty.any():
            where = f"line {int(empty.argmax()) + 2}" if Path(path).suffix.lower() not in \
                _PARQUET else f"row {int(empty.argmax())}"
            raise CLIError(f"{path}: column {c!r} has a missing value ({where}); drop the "
                           f"rows without one (a missing label is a row that is not there)")


def _as_type(values, dtype, what: str, kind: str = "label"):
    """``values`` (a Series) converted to ``dtype``, the type of the answers' column."""
    try:
        return values.astype(dtype)
    except (TypeError, ValueError):
        bad = next((v for v in values if not _converts(v, dtype)), values.iloc[0])
        raise CLIError(f"{what}: the {kind} {bad!r} is not of the answers' {kind} type "
                       f"({dtype})") from None


def _converts(value, dtype) -> bool:
    """True if ``value`` can be cast to ``dtype`` (to name the first value that cannot)."""
    import numpy as np

    try:
        np.array([value]).astype(dtype)
    except (TypeError, ValueError):
        return False
    return True


# -- the fit ------------------------------------------------------------------------------------
def _read_answers(args):
    """The answers file as :class:`~crowdlearn.CrowdLabels` with their original ids, and the
    label column (to convert the gold labels and classes to its type)."""
    from crowdlearn.labels import from_dataframe

    cols = (args.task_col, args.worker_col, args.label_col)
    if len(set(cols)) != 3:
        raise CLIError(f"--task-col, --worker-col and --label-col must name three different "
                       f"columns, got {list(cols)}")
    frame = read_table(args.answers, id_columns=cols[:2])
    _require_columns(frame, cols, args.answers)
    label = frame[args.label_col]
    classes = None
    if args.classes is not None:
        pd = _pandas()
        given = pd.Series([c.strip() for c in args.classes.split(",")])
        classes = _as_type(given, label.dtype, "--classes").tolist()
    try:
        crowd = from_dataframe(frame, task=cols[0], worker=cols[1], label=cols[2],
                               classes=classes)
    except ValueError as exc:  # what is wrong with the rows: say in which file
        raise CLIError(f"{args.answers}: {exc}") from None
    return crowd, label


def _gold_columns(args) -> tuple:
    """The gold file's task and label columns: as given, else named like the answers'
    (``--task-col``, ``--label-col``), else ``task`` and ``label`` when the file has no
    column of the answers' name but one of those (the former defaults)."""
    names = None
    cols = []
    for given, answers_col, old_default in ((args.gold_task_col, args.task_col, "task"),
                                            (args.gold_label_col, args.label_col, "label")):
        if given is not None:
            cols.append(given)
            continue
        if names is None:
            names = set(_header_names(_check_input_file(args.gold)))
        cols.append(old_default if answers_col not in names and old_default in names
                    else answers_col)
    if cols[0] == cols[1]:
        raise CLIError(f"{args.gold}: the gold task and label columns are both {cols[0]!r}; "
                       f"name them with --gold-task-col and --gold-label-col")
    return tuple(cols)


def _read_gold(args, label, crowd) -> dict:
    """The gold file as ``{task id: label}``, restricted to the tasks of the answers; for
    ``--model gmv`` a task may have several rows, and then every task maps to the list of
    its gold labels (an answer equal to any of them is right)."""
    cols = _gold_columns(args)
    # text labels: the gold file's labels are text too ("1" stays "1", never the number 1)
    as_text = not _pandas().api.types.is_numeric_dtype(label.dtype)  # bool counts as numeric
    frame = read_table(args.gold, id_columns=cols if as_text else cols[:1])
    _require_columns(frame, cols, args.gold)
    task, truth = frame[cols[0]], frame[cols[1]]
    several = bool(task.duplicated().any())
    if several and args.model != "gmv":
        raise CLIError(f"{args.gold}: task {task[task.duplicated()].iloc[0]!r} is given "
                       f"more than once (several gold labels per task: --model gmv only)")
    truth = _as_type(truth, label.dtype, str(args.gold))
    if crowd.item_ids.dtype.kind in "biuf":  # numeric task ids (parquet): gold's the same
        task = _as_type(task, crowd.item_ids.dtype, str(args.gold), "task")
    known = set(crowd.item_ids.tolist())
    gold = {}
    for t, y in zip(task.tolist(), truth.tolist()):
        if t in known and not several:
            gold[t] = y
        elif t in known and y not in gold.setdefault(t, []):
            gold[t].append(y)
    if not gold:
        raise CLIError(f"{args.gold}: none of its {len(task)} tasks is among the answers' tasks")
    return gold


def _model(args, cls):
    """An instance of ``cls`` with the options the command line gave, where it takes them."""
    takes = set(inspect.signature(cls.__init__).parameters)
    options = {"n_classes": args.n_classes, "random_state": args.random_state,
               "max_iter": args.max_iter, "tol": args.tol,
               "progress": True if args.progress else None}
    kwargs = dict(SETTINGS.get(args.model, {}))
    for name, value in options.items():
        if value is None:
            continue
        if name not in takes:
            if name in ("progress", "random_state"):
                continue  # a deterministic vote: nothing drawn at random, nothing to show
            raise CLIError(f"--model {args.model} ({cls.__name__}) takes no "
                           f"--{name.replace('_', '-')}")
        kwargs[name] = value
    return cls(**kwargs)


def _fit(args, crowd, gold):
    """Fit the chosen model; gold items go to the fit where the model takes them."""
    import crowdlearn

    cls = getattr(crowdlearn, MODELS[args.model])
    if args.confusions is not None and not issubclass(cls, crowdlearn.DawidSkene):
        raise CLIError(f"--confusions: {cls.__name__} has no confusion matrices; use --model "
                       f"ds or onecoin (--skills writes one skill per worker)")
    model = _model(args, cls)
    use_gold = gold is not None and not args.score_only
    if args.model == "gmv":
        if not use_gold:
            raise CLIError("--model gmv (GoldMajorityVote) needs --gold (and no --score-only)")
        return model.fit(crowd, gold), True
    if use_gold and "gold" in inspect.signature(cls.fit).parameters:
        return model.fit(crowd, gold=gold), True
    return model.fit(crowd), False


# -- the outputs -------------------------------------------------------------------------------
def _check_output(option: str, path) -> None:
    """Refuse an output that is a folder, in a folder that does not exist or cannot be
    written, or not writable itself; parquet needs pyarrow."""
    path = Path(path)
    if path.is_dir():
        raise CLIError(f"--{option} {path}: is a directory; give a file name")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise CLIError(f"--{option} {path}: the folder {path.parent} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise CLIError(f"--{option} {path}: the file is not writable")
    if not path.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise CLIError(f"--{option} {path}: cannot write in the folder {path.parent}")
    if path.suffix.lower() in _PARQUET:
        _need_pyarrow(path)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same regular file (or one that does not exist yet):
    the same path once resolved, or a hard link. Devices such as /dev/null may repeat."""
    if a.exists() and not a.is_file():
        return False
    if a.resolve() == b.resolve():
        return True
    return a.exists() and b.exists() and os.path.samefile(a, b)


def _check_paths(args) -> None:
    """Every input and output checked before anything is read, computed or written."""
    inputs = [("the answers file", args.answers)] + \
        ([("--gold", args.gold)] if args.gold is not None else [])
    for _, path in inputs:
        _check_input_file(path)
    outputs = [(o, getattr(args, o)) for o in ("out", "probas", "skills", "confusions")
               if getattr(args, o) is not None]
    for option, path in outputs:
        _check_output(option, path)
    for k, (option, path) in enumerate(outputs):
        for other, other_path in outputs[:k]:
            if _same_file(Path(path), Path(other_path)):
                raise CLIError(f"--{option} {path} is the same file as --{other} "
                               f"{other_path}: one would overwrite the other; give each "
                               f"output its own file")
        for what, other_path in inputs:
            if _same_file(Path(path), Path(other_path)):
                raise CLIError(f"--{option} {path} is the same file as {what} "
                               f"({other_path}), an input: give the output another name")


def _worker_skills(model):
    """One skill per worker, a Series by worker id: the model's own, or, for a model with
    a confusion matrix per worker and no single skill (Dawid--Skene), the probability that
    the worker gives the true label, ``sum_n class_prior_[n] * confusion_[r, n, n]``."""
    try:
        return model.skills_
    except AttributeError:  # "no single skill per worker; see its confusion matrices"
        pass
    import numpy as np

    pd = _pandas()
    accuracy = np.einsum("n,rnn->r", model.class_prior_, model.confusion_)
    return pd.Series(accuracy, index=pd.Index(model.expert_ids_, name="worker"), name="skill")


def _confusion_table(args, model):
    """The confusion matrices in long format: one row per worker, true label and given
    label, with the probability of the given label under the true one (``confusion_``)."""
    import numpy as np

    J, K, _ = model.confusion_.shape
    return _pandas().DataFrame({
        args.worker_col: np.repeat(model.expert_ids_, K * K),
        "true_label": np.tile(np.repeat(model.class_ids_, K), J),
        "given_label": np.tile(model.class_ids_, J * K),
        "probability": model.confusion_.reshape(-1)})


def _write_outputs(args, model) -> None:
    """The labels (file or stdout), probabilities, skills and confusion matrices, by
    original id: every table is made before the first one is written."""
    labels = model.labels_
    tables = [(labels.rename(args.label_col).rename_axis(args.task_col).reset_index(),
               args.out)]
    if args.probas is not None:
        probas = model.probas_
        probas.columns = [str(c) for c in probas.columns]
        tables.append((probas.rename_axis(args.task_col).reset_index(), args.probas))
    if args.skills is not None:
        skills = _worker_skills(model)
        tables.append((skills.rename("skill").rename_axis(args.worker_col).reset_index(),
                       args.skills))
    if args.confusions is not None:
        tables.append((_confusion_table(args, model), args.confusions))
    for frame, path in tables:
        write_table(frame, path)
    if args.out is None:
        sys.stdout.flush()  # a closed pipe shows here, not at exit


def _report_gold(model, gold: dict, used_in_fit: bool) -> str:
    """One line: the accuracy of the labels on the gold tasks."""
    labels = model.labels_
    right = sum(labels[t] in y if isinstance(y, list) else labels[t] == y
                for t, y in gold.items())
    line = f"accuracy on {len(gold)} gold tasks: {right / len(gold):.4f} ({right}/{len(gold)})"
    if used_in_fit:
        line += "; the gold labels were used in the fit (not held out: see --score-only)"
    return line


def aggregate(args) -> None:
    """The ``aggregate`` command: check every path, read, fit, write, report."""
    _check_paths(args)  # before a long fit, and before anything is written
    crowd, label = _read_answers(args)
    if args.n_classes is not None and args.classes is None and args.n_classes != crowd.n_classes:
        raise CLIError(f"--n-classes {args.n_classes}, but the answers hold {crowd.n_classes} "
                       f"classes {crowd.class_ids.tolist()[:10]}: name every class with "
                       f"--classes (comma-separated)")
    gold = None if args.gold is None else _read_gold(args, label, crowd)
    model, used_in_fit = _fit(args, crowd, gold)
    _write_outputs(args, model)
    if gold is not None:
        print(_report_gold(model, gold, used_in_fit), file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning on one line of stderr, without the source line."""
    print(f"crowdlearn: {category.__name__}: {message}", file=sys.stderr)


def _detach_stdout() -> None:
    """Point stdout at /dev/null after a closed pipe, so that Python's flush at exit does
    not fail on it again (and print "Exception ignored ... BrokenPipeError")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (e.g. captured)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def main(argv=None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (``sys.argv[1:]`` by default), e.g.
        ``["aggregate", "answers.csv", "--model", "ds"]``.

    Returns
    -------
    int
        The exit status: 0; 2 after a mistake in the command or its input (one line on
        stderr, no traceback); 141 (``BROKEN_PIPE_STATUS``) when stdout was closed
        before the labels were written (``... | head``), without a message.
    """
    try:
        args = _parser().parse_args(argv)
        _pandas()
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            aggregate(args)
    except BrokenPipeError:
        _detach_stdout()
        return BROKEN_PIPE_STATUS
    except CLIError as exc:
        print(f"crowdlearn: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"crowdlearn: error: {message}", file=sys.stderr)
        return 2
    return 0
