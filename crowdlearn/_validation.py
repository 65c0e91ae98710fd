"""Input validation shared by every crowdlearn model.

Every public entry point funnels its arrays through these helpers, so that a
bad input fails early with a ``ValueError`` that names the argument and says
what is wrong with it (shape, dtype, NaN, out-of-range value, emptiness),
instead of surfacing later as a NaN deep inside EM.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_float_array",
    "check_em_params",
    "check_finite_array",
    "check_int_array",
    "check_binary_matrix",
    "check_probability_matrix",
    "check_scalar",
    "check_random_state",
    "check_bool",
    "read_only",
    "refuse_masked",
]


def _describe_positions(mask: np.ndarray, limit: int = 5) -> str:
    idx = np.argwhere(mask)
    shown = ", ".join(str(tuple(int(v) for v in row)) if len(row) > 1 else str(int(row[0]))
                      for row in idx[:limit])
    more = f" and {len(idx) - limit} more" if len(idx) > limit else ""
    return f"{shown}{more}"


_INDEX_MAX = 2 ** 62  # larger "indices" are refused before any cast could wrap them


def _object_to_numeric(arr: np.ndarray, name: str) -> np.ndarray:
    """An object array of Python/numpy numbers as an int64 or float64 array, or raise."""
    flat = arr.ravel().tolist()
    has_float = False
    for v in flat:
        if v is None:
            raise ValueError(f"{name} contains None; mark a missing label with -1")
        if isinstance(v, (bool, np.bool_, numbers.Integral)):
            if not isinstance(v, (bool, np.bool_)) and not -_INDEX_MAX <= int(v) <= _INDEX_MAX:
                raise ValueError(f"{name} has a value too large to be an index: {int(v)}")
        elif isinstance(v, numbers.Real):
            has_float = True
        else:
            raise ValueError(f"{name} must hold integers, got {type(v).__name__} values such "
                             f"as {v!r}" + _ID_HINT)
    if has_float:
        return np.array([float(v) for v in flat], dtype=float).reshape(arr.shape)
    return np.array([int(v) for v in flat], dtype=np.int64).reshape(arr.shape)


_ID_HINT = "; for arbitrary identifiers use from_table(items, workers, labels)"


def check_int_array(values, name: str, *, ndim: int = 1, allow_empty: bool = False,
                    low: int | None = None, high: int | None = None,
                    high_name: str | None = None) -> np.ndarray:
    """Return ``values`` as an integer array, or raise a ``ValueError`` saying why not.

    The result is always a new ``intp`` array (never the caller's), so changing
    the input afterwards cannot change it. Booleans count as 0 and 1; floats are
    accepted when they are whole numbers; strings, ``None``, NaN, infinities and
    values too large to be indices are refused (never wrapped round by a cast).

    Parameters
    ----------
    values : array-like
        The input.
    name : str
        How to call it in error messages.
    ndim : int
        Required number of dimensions.
    allow_empty : bool
        Whether a zero-size array is acceptable.
    low, high : int, optional
        Inclusive lower bound and exclusive upper bound on the values.
    high_name : str, optional
        What ``high`` stands for, used in the message (e.g. ``"n_classes=3"``).
    """
    arr = _read_numbers(values, name, ndim)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty: at least one entry is needed")
    _check_whole_and_small(arr, name, ndim)
    arr = arr.astype(np.intp, copy=False)
    _check_bounds(arr, name, low, high, high_name)
    return arr


def refuse_masked(values, name: str):
    """``values`` without its mask when nothing is masked; ``ValueError`` when something is.

    A numpy masked array read by ``np.array`` loses its mask, and the hidden values would
    be read as data. Where a masked entry has an unambiguous meaning (a missing label in a
    dense matrix) the caller fills it first; everywhere else it is refused here.
    """
    if not np.ma.isMaskedArray(values):
        return values
    n_masked = int(np.ma.count_masked(values))
    if n_masked:
        raise ValueError(f"{name} is a masked array with {n_masked} masked "
                         f"entr{'y' if n_masked == 1 else 'ies'}; the mask has no meaning "
                         f"here: drop those entries first (in a dense label matrix a masked "
                         f"entry is read as a missing label)")
    return np.ma.getdata(values)


def _read_numbers(values, name: str, ndim: int) -> np.ndarray:
    """``values`` as a new numeric array (booleans as integers); ``ValueError`` for strings,
    ``None``, masked entries, ragged rows and other non-numbers."""
    values = refuse_masked(values, name)
    if isinstance(values, (str, bytes, dict, set, frozenset)) or values is None:
        raise ValueError(f"{name} must be an array of integers, got "
                         f"{type(values).__name__} {values!r:.60}")
    try:
        arr = np.array(values, copy=True)
    except Exception:  # ragged lists, unconvertible objects and the like
        raise ValueError(f"{name} could not be read as a {ndim}-D array of integers (ragged "
                         f"rows or mixed contents?)") from None
    if arr.dtype == object:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be an array of integers, got "
                             f"{type(values).__name__}")
        arr = _object_to_numeric(arr, name)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.intp)
    if arr.dtype.kind in "US":
        example = arr.flat[0] if arr.size else ""
        raise ValueError(f"{name} must hold integers, got strings such as {str(example)!r}"
                         + _ID_HINT)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold integers, got values of type {arr.dtype.name}")
    return arr


def _check_whole_and_small(arr: np.ndarray, name: str, ndim: int) -> None:
    """``ValueError`` unless every value is a whole, finite number small enough to be an
    index (never wrapped round by a cast)."""
    if arr.dtype.kind == "f":
        bad = np.isnan(arr)
        if bad.any():
            raise ValueError(f"{name} contains NaN at {_describe_positions(bad)}"
                             + ("; mark a missing label with -1" if ndim == 2 else ""))
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"{name} contains inf at {_describe_positions(bad)}")
        bad = arr != np.round(arr)
        if bad.any():
            raise ValueError(f"{name} must hold whole numbers, got non-integer values at "
                             f"{_describe_positions(bad)}")
    if arr.size and (arr.dtype.itemsize >= 8 or arr.dtype.kind == "f"):
        big = (arr > _INDEX_MAX) | (arr < -_INDEX_MAX)
        if big.any():
            value = arr[big][0]
            value = int(value) if arr.dtype.kind in "iu" else float(value)
            raise ValueError(f"{name} has a value too large to be an index: {value} at "
                             f"{_describe_positions(big)}")


def _check_bounds(arr: np.ndarray, name: str, low, high, high_name) -> None:
    """``ValueError`` for a value below ``low`` or not below ``high`` (either may be None)."""
    if low is not None and arr.size:
        bad = arr < low
        if bad.any():
            raise ValueError(f"{name} has values below {low} at {_describe_positions(bad)} "
                             f"(e.g. {int(arr[bad][0])})")
    if high is not None and arr.size:
        bad = arr >= high
        if bad.any():
            what = f" ({high_name})" if high_name else ""
            raise ValueError(f"{name} has values out of range: {int(arr[bad].max())} "
                             f"at {_describe_positions(bad)}, but must be < {high}{what}")


def as_float_array(X, name: str) -> np.ndarray:
    """``X`` as a new float array, refusing what a cast would misread.

    Strings, complex numbers (whose imaginary part a cast drops), ``None`` and
    other objects give a ``ValueError`` in our words, never numpy's, and
    nothing emits a warning on the way.
    """
    X = refuse_masked(X, name)
    if isinstance(X, (str, bytes, dict, set, frozenset)) or X is None:
        raise ValueError(f"{name} must be a numeric array, got {type(X).__name__}")
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()  # pandas
    try:
        arr = np.array(X, copy=True)
    except Exception:
        raise ValueError(f"{name} could not be read as a numeric array (ragged rows or mixed "
                         f"contents?)") from None
    if arr.dtype == object:
        bad = [v for v in arr.ravel().tolist()
               if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)]
        if bad:
            raise ValueError(f"{name} must hold real numbers, got {type(bad[0]).__name__} "
                             f"values such as {bad[0]!r:.40}")
        arr = arr.astype(float)
    if arr.dtype.kind not in "biuf":
        what = {"U": "strings", "S": "bytes", "c": "complex numbers"}.get(
            arr.dtype.kind, f"values of type {arr.dtype.name}")
        raise ValueError(f"{name} must hold real numbers, got {what}")
    return arr.astype(float, copy=False)


def check_binary_matrix(X, name: str = "X", *, n_rows: int | None = None,
                        n_cols: int | None = None) -> np.ndarray:
    """Return ``X`` as a 2-D float array of zeros and ones, or raise ``ValueError``."""
    arr = as_float_array(X, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_items, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: it has no rows")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {arr.shape})")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at {_describe_positions(np.isnan(arr))}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(f"{name} must be binary (0/1), got {arr[bad][0]!r} at "
                         f"{_describe_positions(bad)}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} rows but there are {n_rows} items")
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"{name} has {arr.shape[1]} features but the model was fitted "
                         f"with {n_cols}")
    return arr


def check_probability_matrix(P, name: str, *, n_rows: int | None = None,
                             n_cols: int | None = None, atol: float = 1e-8) -> np.ndarray:
    """Return ``P`` as a 2-D array of non-negative rows summing to one, or raise."""
    arr = as_float_array(P, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf at {_describe_positions(~np.isfinite(arr))}")
    if (arr < 0).any():
        raise ValueError(f"{name} has negative entries at {_describe_positions(arr < 0)}")
    sums = arr.sum(axis=1)
    bad = np.abs(sums - 1) > atol
    if bad.any():
        raise ValueError(f"the rows of {name} must sum to 1; row {int(np.argmax(bad))} sums to "
                         f"{sums[bad][0]:.6g}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} rows, expected {n_rows}")
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"{name} has {arr.shape[1]} columns, expected {n_cols}")
    return arr


def check_scalar(value, name: str, *, kind=numbers.Real, low=None, high=None,
                 low_inclusive: bool = True, high_inclusive: bool = True):
    """Check a hyper-parameter: its type and its range."""
    if isinstance(value, bool) or not isinstance(value, kind):
        kind_name = "an integer" if kind is numbers.Integral else "a number"
        raise ValueError(f"{name} must be {kind_name}, got {value!r}")
    if isinstance(value, numbers.Real) and not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low}, got {value!r}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise ValueError(f"{name} must be {op} {high}, got {value!r}")
    return value


def read_only(arr: np.ndarray) -> np.ndarray:
    """A read-only copy of ``arr`` that nobody can make writeable again.

    Clearing ``flags.writeable`` on an array that owns its memory is not enough: the flag
    can be set back (on the array or on a view's ``.base``). The copy here lives in an
    immutable ``bytes`` object, so numpy refuses to unlock it. Object arrays (huge Python
    integers as identifiers) cannot live in bytes; they are only flagged read-only.
    """
    arr = np.asarray(arr)
    if arr.dtype.hasobject:
        out = arr.copy()
        out.flags.writeable = False
        return out
    return np.frombuffer(arr.tobytes(), dtype=arr.dtype).reshape(arr.shape)


def check_bool(value, name: str) -> bool:
    """``value`` as a bool, or ``ValueError``: a string such as ``'no'`` is truthy and would
    be read as ``True``; only ``True``, ``False`` (Python or numpy) and 0/1 are flags."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r}")


def check_flag(value, name: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (Python or numpy), else ``ValueError``: stricter
    than :func:`check_bool`, for options where 0 or 1 would be a slip, not a flag."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r:.60}")


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``None``, an int or a ``Generator`` into a ``np.random.Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


def check_finite_array(value, name: str, shape=None, ndim=None) -> np.ndarray:
    """Return ``value`` as a float array of finite numbers (optionally of a given shape/ndim)."""
    arr = as_float_array(value, name)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        want = "be one number" if tuple(shape) == () else f"have shape {tuple(shape)}"
        raise ValueError(f"{name} must {want}, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_em_params(estimator) -> None:
    """Check the EM hyper-parameters every estimator shares: ``n_init``, ``max_iter``,
    ``tol`` and, where it has them, ``callback``, ``progress`` and ``accelerate``."""
    check_scalar(estimator.n_init, "n_init", kind=numbers.Integral, low=1)
    check_scalar(estimator.max_iter, "max_iter", kind=numbers.Integral, low=0)
    check_scalar(estimator.tol, "tol", low=0.0)
    callback = getattr(estimator, "callback", None)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r}")
    progress = getattr(estimator, "progress", None)
    if progress not in (None, True, False):
        raise ValueError(f"progress must be None, True or False, got {progress!r}")
    check_flag(getattr(estimator, "accelerate", False), "accelerate")
