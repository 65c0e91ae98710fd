"""Size limits: refuse implausible problem sizes before anything is allocated.

Every crowd's sizes (items, experts, classes) are inferred from the largest
index when they are not given, so one stray id -- a label of ``10**7``, or
``(item, expert, label)`` triples passed as a dense matrix -- would make a model
allocate tens of GiB or run for minutes. :func:`check_crowd_size` refuses such
sizes up front with a ``ValueError`` that says what was inferred and why.

The limits are deliberately generous for real crowds (a thousand classes; about
half a GiB for the largest table a model keeps; 4 GiB for all the working memory of a
fit, see ``fit_memory``). To go past them on purpose::

    import crowdlearn as cl
    with cl.size_limits(max_classes=5000, max_cells=2**30, max_memory=2**34):
        cl.DawidSkene().fit(crowd)

or set them for the whole session with :func:`set_size_limits`.

The limits of a ``with size_limits(...)`` block hold in its own context only
(:mod:`contextvars`): another thread, or another asyncio task, keeps its own limits while
the block runs. :func:`set_size_limits` changes the session's limits, which every thread
sees outside such blocks.
"""

from __future__ import annotations

import numbers
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

__all__ = ["SizeLimits", "get_size_limits", "set_size_limits", "size_limits",
           "check_crowd_size", "fit_memory"]


class SizeLimits(NamedTuple):
    """The limits in force (see :func:`set_size_limits`)."""

    max_classes: int = 1000
    """Most classes a crowd may have."""
    max_cells: int = 2 ** 26
    """Most numbers in one table a model allocates: ``n_items * n_classes`` (the
    posterior) and ``n_experts * n_classes**2`` (the confusion matrices); 2**26
    float64 numbers are 512 MiB."""
    max_unused_ratio: int = 10
    """An index range inferred from the largest id (no size given) may exceed
    ``max(min_inferred, max_unused_ratio * n_labels)`` only when the size is given
    explicitly: otherwise most indices would have no label, which means the ids
    are not ``0..n-1`` indices."""
    min_inferred: int = 100_000
    max_memory: int = 2 ** 32
    """Most working memory, in bytes, a model's fit of a crowd of these sizes may need
    (``fit_memory``: every table a model keeps and its working copies, and per-item
    and per-expert parameters; 4 GiB by default). A crowd whose sizes pass the limits
    fits in this memory, plus at most about 200 bytes per label given."""


# Working memory of a fit, in float64 numbers, measured (peak resident and traced memory
# of fits at the limits, issue 28) for every model of crowdlearn.aggregation, with restarts
# and acceleration: at most ~14 per posterior cell and confusion cell (DawidSkene with
# accelerate=True and restarts: the best run, the current one and SQUAREM's copies; it does
# not grow with n_init), ~40 per item and per expert (GLAD's L-BFGS-B over the item
# difficulties and expert abilities), plus up to ~17 per label given (GLAD). The factors
# below bound these with a margin; the labels' own share is not counted (it is the data).
# tests/core/test_size_limits.py fits every model at the largest sizes admitted.
_NUMBERS_PER_CELL = 16
_NUMBERS_PER_ID = 48


def fit_memory(n_items: int, n_experts: int, n_classes: int) -> int:
    """Bytes of working memory a fit may need for a crowd of these sizes (an upper bound
    over the models of :mod:`crowdlearn.aggregation`, beyond the labels themselves).

    ``8 * (16 * (n_items * n_classes + n_experts * n_classes**2) + 48 * (n_items +
    n_experts))``: 16 copies of the posterior and the confusion matrices, and a few dozen
    numbers per item and per expert. Checked against
    :attr:`SizeLimits.max_memory` by :func:`check_crowd_size`.

    Examples
    --------
    >>> from crowdlearn._limits import fit_memory
    >>> round(fit_memory(1_000_000, 100, 5) / 2**30, 2)  # a million items, 5 classes: GiB
    0.95
    """
    cells = n_items * n_classes + n_experts * n_classes * n_classes
    return 8 * (_NUMBERS_PER_CELL * cells + _NUMBERS_PER_ID * (n_items + n_experts))


_DEFAULT = SizeLimits()
_session_limits = _DEFAULT  # set_size_limits: the whole session, every thread
_block_limits: ContextVar[SizeLimits | None] = ContextVar("crowdlearn_size_limits", default=None)
"""The limits of the innermost ``with size_limits(...)`` of this context (None: none)."""


def get_size_limits() -> SizeLimits:
    """The size limits in force."""
    block = _block_limits.get()
    return _session_limits if block is None else block


def _checked(**changes) -> SizeLimits:
    for name, value in changes.items():
        if name not in SizeLimits._fields:
            raise ValueError(f"unknown size limit {name!r}; valid ones are "
                             f"{list(SizeLimits._fields)}")
        if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return get_size_limits()._replace(**{k: int(v) for k, v in changes.items()})


def set_size_limits(**limits) -> SizeLimits:
    """Change the size limits for the rest of the session; returns the old ones.

    Inside a ``with size_limits(...)`` block the block's limits apply until it ends.
    Keyword arguments are fields of :class:`SizeLimits` (``max_classes``,
    ``max_cells``, ``max_unused_ratio``, ``min_inferred``, ``max_memory``).
    ``set_size_limits()`` with no argument restores the defaults.

    Examples
    --------
    >>> import crowdlearn as cl
    >>> old = cl.set_size_limits(max_classes=5000)
    >>> cl.get_size_limits().max_classes
    5000
    >>> _ = cl.set_size_limits(**old._asdict())
    """
    global _session_limits
    old = get_size_limits()
    _session_limits = _checked(**limits) if limits else _DEFAULT
    return old


@contextmanager
def size_limits(**limits):
    """Context manager: other size limits inside the ``with`` block only.

    Examples
    --------
    >>> import crowdlearn as cl
    >>> with cl.size_limits(max_classes=2000):
    ...     crowd = cl.from_triples([0, 1], [0, 0], [0, 1999])
    >>> crowd.n_classes
    2000
    """
    token = _block_limits.set(_checked(**limits))
    try:
        yield _block_limits.get()
    finally:
        _block_limits.reset(token)


_HOW_TO = ("to go past the limit on purpose, use `with crowdlearn.size_limits({arg}=...):` "
           "or crowdlearn.set_size_limits({arg}=...)")


def check_crowd_size(n_items: int, n_experts: int, n_classes: int, n_labels: int, *,
                     inferred=(), source: str = "labels") -> None:
    """Refuse sizes a crowd of ``n_labels`` labels cannot plausibly have.

    Parameters
    ----------
    n_items, n_experts, n_classes, n_labels : int
        The sizes.
    inferred : collection of str
        Which of ``"n_items"``, ``"n_experts"``, ``"n_classes"`` were inferred
        from the largest index rather than given.
    source : str
        ``"dense"`` when the crowd came from a dense matrix (the message then
        suggests triples passed as a matrix).
    """
    lim = get_size_limits()
    largest = {"n_items": "item index", "n_experts": "expert index",
               "n_classes": "label"}

    def origin(name, size):
        if name in inferred:
            return f" (inferred from the largest {largest[name]}, {size - 1:,})"
        return ""

    if n_classes > lim.max_classes:
        hint = ""
        if source == "dense":
            hint = (" Did you pass (item, expert, label) triples as a dense matrix? A dense "
                    "matrix holds one column per expert; for triples use "
                    "from_triples(item, expert, label).")
        elif "n_classes" in inferred:
            hint = (" Labels must be class indices 0..K-1; for arbitrary label values use "
                    "from_table(items, workers, labels).")
        raise ValueError(
            f"the labels imply {n_classes:,} classes{origin('n_classes', n_classes)} for "
            f"{n_items:,} items and {n_experts:,} experts; at most {lim.max_classes:,} "
            f"classes are accepted.{hint} ({_HOW_TO.format(arg='max_classes')})")
    for name, size in (("n_items", n_items), ("n_experts", n_experts)):
        cap = max(lim.min_inferred, lim.max_unused_ratio * n_labels)
        if name in inferred and size > cap:
            what = "items" if name == "n_items" else "experts"
            raise ValueError(
                f"the {largest[name].replace('index', 'indices')} imply {size:,} {what}{origin(name, size)} but only "
                f"{n_labels:,} labels were given, so almost every {what[:-1]} would have no "
                f"label: indices must run over 0..n-1. For arbitrary identifiers use "
                f"from_table(items, workers, labels); if the {what} without labels are "
                f"meant, pass {name}= explicitly.")
    cells = {"posterior (n_items x n_classes)": n_items * n_classes,
             "confusion matrices (n_experts x n_classes x n_classes)":
                 n_experts * n_classes * n_classes}
    for what, count in cells.items():
        if count > lim.max_cells:
            raise ValueError(
                f"the {what} would hold {count:,} numbers ({count * 8 / 2**30:.1f} GiB) for "
                f"n_items={n_items:,}{origin('n_items', n_items)}, "
                f"n_experts={n_experts:,}{origin('n_experts', n_experts)}, "
                f"n_classes={n_classes:,}{origin('n_classes', n_classes)}; at most "
                f"{lim.max_cells:,} are accepted. Check that the ids are indices 0..n-1 "
                f"(use from_table for arbitrary identifiers). "
                f"({_HOW_TO.format(arg='max_cells')})")
    need = fit_memory(n_items, n_experts, n_classes)
    if need > lim.max_memory:
        raise ValueError(
            f"fitting a crowd of n_items={n_items:,}{origin('n_items', n_items)}, "
            f"n_experts={n_experts:,}{origin('n_experts', n_experts)} and "
            f"n_classes={n_classes:,}{origin('n_classes', n_classes)} may need "
            f"{need / 2**30:.1f} GiB of working memory (posterior, confusion matrices and "
            f"their working copies, per-item and per-expert parameters), more than the "
            f"limit of {lim.max_memory / 2**30:.1f} GiB. Check that the ids are indices "
            f"0..n-1 (use from_table for arbitrary identifiers). "
            f"({_HOW_TO.format(arg='max_memory')})")
