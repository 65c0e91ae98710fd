"""The command line: aggregate a file of crowd labels (``python -m crowdlearn`` or ``crowdlearn``).

::

    crowdlearn aggregate answers.csv --model ds [--gold gold.csv] [--out labels.csv]
                         [--probas probas.csv] [--skills skills.csv]

``answers.csv`` holds one row per label, crowd-kit's layout: a task (item) id, a worker id
and the label, in columns named ``task``, ``worker`` and ``label`` unless ``--task-col``,
``--worker-col`` and ``--label-col`` say otherwise. CSV, TSV (``.tsv``, ``.tab``) and
parquet (``.parquet``, ``.pq``; needs pyarrow) are read by their extension; the output
files are written the same way. Task and worker ids are read from CSV/TSV as text, as
written (``007`` stays ``007``; only an empty cell is missing); labels keep the type
pandas infers. Results are given by the original ids: the labels file has one row per task
(the task column and the label column, under the input's names), the probabilities file
one column per class, the skills file one row per worker (``skill``).

Errors in the input (a missing file or column, an empty file, a missing label, an unknown
model...) print one line on stderr and exit with status 2. The command line needs pandas
(``pip install 'crowdlearn[pandas]'``).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import warnings
from pathlib import Path

__all__ = ["main", "MODELS"]

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
    agg.add_argument("--skills", help="write each worker's skill here (worker, skill)")
    agg.add_argument("--gold", help="known true labels (task, label): used by the models "
                                    "that take them, and the accuracy on them is printed")
    agg.add_argument("--score-only", action="store_true",
                     help="use --gold only to score the labels, not in the fit")
    for name, default in (("task", "task"), ("worker", "worker"), ("label", "label")):
        agg.add_argument(f"--{name}-col", default=default,
                         help=f"the answers' {name} column (default {default!r})")
    agg.add_argument("--gold-task-col", default="task", help="the gold file's task column")
    agg.add_argument("--gold-label-col", default="label", help="the gold file's label column")
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
        The file's rows; a file that is missing, empty or unreadable (or parquet without
        pyarrow) is a ``CLIError`` that says so.
    """
    pd = _pandas()
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{path}: no such file")
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
    crowd = from_dataframe(frame, task=cols[0], worker=cols[1], label=cols[2], classes=classes)
    return crowd, label


def _read_gold(args, label, crowd) -> dict:
    """The gold file as ``{task id: label}``, restricted to the tasks of the answers."""
    cols = (args.gold_task_col, args.gold_label_col)
    # text labels: the gold file's labels are text too ("1" stays "1", never the number 1)
    as_text = not _pandas().api.types.is_numeric_dtype(label.dtype)  # bool counts as numeric
    frame = read_table(args.gold, id_columns=cols if as_text else cols[:1])
    _require_columns(frame, cols, args.gold)
    task, truth = frame[cols[0]], frame[cols[1]]
    if task.duplicated().any():
        raise CLIError(f"{args.gold}: task {task[task.duplicated()].iloc[0]!r} is given "
                       f"more than once")
    truth = _as_type(truth, label.dtype, str(args.gold))
    if crowd.item_ids.dtype.kind in "biuf":  # numeric task ids (parquet): gold's the same
        task = _as_type(task, crowd.item_ids.dtype, str(args.gold), "task")
    known = set(crowd.item_ids.tolist())
    gold = {t: y for t, y in zip(task.tolist(), truth.tolist()) if t in known}
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
    if args.skills is not None and getattr(cls, "_skills", None) is None:
        raise CLIError(f"--skills: {cls.__name__} has no single skill per worker (it has "
                       f"confusion matrices); use --model onecoin, glad, mace, mv, wawa or zbs")
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
def _write_outputs(args, model) -> None:
    """The labels (file or stdout), probabilities and skills, by original id."""
    labels = model.labels_
    write_table(labels.rename(args.label_col).rename_axis(args.task_col).reset_index(),
                args.out)
    if args.probas is not None:
        probas = model.probas_
        probas.columns = [str(c) for c in probas.columns]
        write_table(probas.rename_axis(args.task_col).reset_index(), args.probas)
    if args.skills is not None:
        skills = model.skills_
        write_table(skills.rename("skill").rename_axis(args.worker_col).reset_index(),
                    args.skills)


def _report_gold(model, gold: dict, used_in_fit: bool) -> str:
    """One line: the accuracy of the labels on the gold tasks."""
    labels = model.labels_
    right = sum(labels[t] == y for t, y in gold.items())
    line = f"accuracy on {len(gold)} gold tasks: {right / len(gold):.4f} ({right}/{len(gold)})"
    if used_in_fit:
        line += "; the gold labels were used in the fit (not held out: see --score-only)"
    return line


def aggregate(args) -> None:
    """The ``aggregate`` command: read, fit, write, report."""
    for option in ("out", "probas", "skills"):  # before a long fit, not after it
        path = getattr(args, option)
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise CLIError(f"--{option} {path}: the folder {Path(path).parent} does not exist")
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
        The exit status: 0, or 2 after a mistake in the command or its input (one line
        on stderr, no traceback).
    """
    try:
        args = _parser().parse_args(argv)
        _pandas()
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            aggregate(args)
    except CLIError as exc:
        print(f"crowdlearn: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"crowdlearn: error: {message}", file=sys.stderr)
        return 2
    return 0
