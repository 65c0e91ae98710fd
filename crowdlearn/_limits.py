"""Size limits: refuse implausible problem sizes before anything is allocated.

Every crowd's sizes (items, experts, classes) are inferred from the largest
index when they are not given, so one stray id -- a label of ``10**7``, or
``(item, expert, label)`` triples passed as a dense matrix -- would make a model
allocate tens of GiB or run for minutes. :func:`check_crowd_size` refuses such
sizes up front with a ``ValueError`` that says what was inferred and why.

The limits are deliberately generous for real crowds (a thousand classes; about
half a GiB for the largest table a model keeps). To go past them on purpose::

    import crowdlearn as cl
    with cl.size_limits(max_classes=5000, max_cells=2**30):
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
           "check_crowd_size"]


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
    ``max_cells``, ``max_unused_ratio``, ``min_inferred``). ``set_size_limits()``
    with no argument restores the defaults.

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
