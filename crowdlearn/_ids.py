r"""Identifiers to indices: the encoding behind :func:`~crowdlearn.from_table` and
:func:`~crowdlearn.from_dataframe` (pandas' columns: :func:`_factorize_columns`).

A column of identifiers (strings, numbers, ...) becomes the sorted distinct identifiers and
one integer code per label, the code of an identifier being its position among the sorted
distinct ones, so that the codes do not depend on the order of the rows. A column must hold
one kind of identifier (``'1'``, ``1`` and ``True`` are never merged).

Three paths give the same result (tests/core/test_id_encoding.py checks them against each
other): numpy's ``np.unique`` (pandas never imported), hashing (pandas' ``factorize`` or
pyarrow's ``dictionary_encode``) followed by a sort of the distinct identifiers only, and,
for ids made of one ASCII prefix and a decimal number (``t17``), the numbers parsed by
pyarrow and indexed in a table (:func:`_arrow_numbered_ids`).
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from crowdlearn._validation import refuse_masked

def _id_kind(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (str, np.str_)):
        return "str"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return type(value).__name__


_KIND_OF_DTYPE = {"U": "str", "S": "bytes", "b": "bool", "i": "int", "u": "int", "f": "float",
                  "M": "datetime64", "m": "timedelta64"}


def _refuse_trailing_nul(strings, name: str) -> None:
    """``ValueError`` for a string ending in ``'\\x00'``: numpy's strings drop trailing NUL
    characters, so ``'x'`` and ``'x\\x00'`` would become one identifier."""
    for v in strings:
        if isinstance(v, str) and v.endswith("\x00"):
            raise ValueError(f"{name} identifier {v!r} ends with a NUL character ('\\x00'), "
                             f"which numpy's strings drop, so it would be confused with "
                             f"{v.rstrip(chr(0))!r}; strip or replace it first")


def _object_kind(arr: np.ndarray, name: str) -> str:
    """The one kind of the identifiers in a 1-D object array (``'int'`` when empty).

    The types are collected in one C-level pass (pandas' ``infer_dtype`` when
    pandas is already imported); only when there are several
    (e.g. ``str`` and ``int``, or ``str`` and ``numpy.str_``) is every element
    inspected, as before, to name the first example of each kind.
    """
    pd = sys.modules.get("pandas")  # used only when already imported
    infer = getattr(getattr(getattr(pd, "api", None), "types", None), "infer_dtype", None)
    if infer is not None and arr.size and infer(arr, skipna=False) == "string":
        return "str"  # every element a str (numpy.str_ included): one C-level pass
    types = set(map(type, arr))
    if len(types) == 1:
        kinds = {_id_kind(arr[0]): arr[0]}
    else:
        kinds = {}
        for v in arr:
            kinds.setdefault(_id_kind(v), v)
    if "NoneType" in kinds:
        raise ValueError(f"{name} contains None")
    containers = kinds.keys() & {"list", "ndarray", "dict"}
    if containers:
        kind = containers.pop()
        raise ValueError(f"{name} identifiers must be scalars (strings, numbers, ...), got "
                         f"{kind} values such as {kinds[kind]!r:.40}. For several values "
                         f"per label use a multi-label crowd (MultiLabelDawidSkene); else "
                         f"make each one a string first")
    unordered = kinds.keys() & {"set", "frozenset"}
    if unordered:
        raise ValueError(f"{name} identifiers are {unordered.pop()}s: sets have no total "
                         f"order, so equal sets could not be found reliably. For set-valued "
                         f"labels use krippendorff_alpha(..., distance='masi') or a "
                         f"multi-label crowd (MultiLabelDawidSkene); or make each set one "
                         f"string first")
    if len(kinds) > 1:
        shown = ", ".join(f"{k} (e.g. {v!r})" for k, v in kinds.items())
        raise ValueError(f"{name} identifiers mix types: {shown}. Identifiers such as "
                         f"'1', 1 and True would be confused; convert them to one type "
                         f"first")
    return next(iter(kinds), "int")


def _kinds_match(kind: str, known_kind: str) -> bool:
    """Whether identifiers of ``kind`` may be looked up among ones of ``known_kind``: the
    same kind, or integers and floats (``1`` and ``1.0`` are the same number). ``True`` is
    never ``1``, nor ``'1'`` either, although Python finds ``True == 1``."""
    return kind == known_kind or {kind, known_kind} == {"int", "float"}


def _ids_kind(ids: np.ndarray | None, name: str = "identifiers") -> str:
    """The kind (``'str'``, ``'int'``, ``'bool'``, ...) of a 1-D array of identifiers a
    :class:`CrowdLabels` keeps; ``'int'`` for None (index-coded labels: the ids are
    the indices)."""
    if ids is None:
        return "int"
    if ids.dtype == object:
        return _object_kind(ids, name)
    return _KIND_OF_DTYPE.get(ids.dtype.kind, ids.dtype.name)


def _refuse_lost_nul(strings: np.ndarray, converted: np.ndarray, name: str) -> None:
    """:func:`_refuse_trailing_nul` without a Python-level test per element: numpy's
    strings drop exactly the trailing NULs, so a string lost some iff its length changed
    in ``converted`` (``strings`` as a fixed-width ``'U'`` array)."""
    lengths = np.fromiter(map(len, strings), dtype=np.intp, count=strings.size)
    if not np.array_equal(lengths, np.strings.str_len(converted)):
        _refuse_trailing_nul(strings, name)  # names the first such identifier


def _id_array(values, name: str, *, keep_str_objects: bool = False):
    """Identifiers as a 1-D array of one kind, and that kind (``'str'``, ``'int'``, ...).

    Python sequences and object columns are inspected (by type, see
    :func:`_object_kind`), so that ``'1'``, ``1`` and ``True`` -- which numpy
    would silently turn into equal strings, and Python considers equal numbers --
    are never merged. With ``keep_str_objects`` an object array of strings is
    returned as it is, unchecked for trailing NULs (:func:`_encode` then
    converts only the distinct ones).
    """
    values = refuse_masked(values, name)
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()  # pandas Series, Index, Categorical
    if isinstance(values, np.ndarray) and values.dtype != object:
        if values.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {values.shape}")
        kind = _KIND_OF_DTYPE.get(values.dtype.kind)
        if kind is None:
            raise ValueError(f"{name} identifiers of type {values.dtype.name} are not "
                             f"supported; use strings or integers")
        arr = values.copy()
    else:
        if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
            raise ValueError(f"{name} must be a sequence of identifiers, got "
                             f"{type(values).__name__}")
        try:
            if isinstance(values, np.ndarray) and values.ndim == 1:
                arr = values.copy()  # an object column: no element loop
            else:
                arr = np.empty(len(values), dtype=object)
                for i, v in enumerate(values):
                    arr[i] = v
        except TypeError:
            raise ValueError(f"{name} must be a sequence of identifiers") from None
        kind = _object_kind(arr, name)
        if kind == "str":
            if keep_str_objects:
                return arr, kind  # the caller checks NULs and converts
            converted = arr.astype(str)
            _refuse_lost_nul(arr, converted, name)
            arr = converted
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


def _factorize_strings(arr: np.ndarray, name: str):
    """Sorted distinct identifiers (a ``'U'`` array) and codes of an object array of
    strings, by pandas' hashing when pandas is already imported (sorting Python
    strings is slow), else by ``np.unique`` of the fixed-width strings. Both give
    the codes ``np.unique`` gives: Python and numpy order strings by code point."""
    numbered = _numbered_objects(arr)
    if numbered is not None:
        return numbered
    pd = sys.modules.get("pandas")
    if pd is None or not hasattr(pd, "factorize"):
        converted = arr.astype(str)
        _refuse_lost_nul(arr, converted, name)
        ids, codes = np.unique(converted, return_inverse=True)
        return ids, codes
    codes, uniques = pd.factorize(arr)
    strings = np.asarray(uniques, dtype=object)
    ids = strings.astype(str)
    lengths = np.fromiter(map(len, strings), dtype=np.intp, count=strings.size)
    if not np.array_equal(lengths, np.strings.str_len(ids)):
        _refuse_trailing_nul(arr, name)  # names the first such identifier in order
    return _sort_factorized(codes, ids)


def _numbered_objects(arr: np.ndarray):
    """:func:`_arrow_numbered_ids` (or :func:`_fixed_width_codes`) for an object array of
    strings, when pyarrow is already imported (it is with pandas) and the first ids look
    numbered (or all have one length of at least 8 characters, ASCII); else None."""
    pa = sys.modules.get("pyarrow")
    if pa is None or not hasattr(pa, "array") or arr.size < 64:
        return None
    prefix = arr[0].rstrip("0123456789")
    numbered = all(s.startswith(prefix) and s[len(prefix):].isdigit() for s in arr[:64])
    if not numbered and not (len(arr[0]) >= 8 and all(
            len(s) == len(arr[0]) and s.isascii() for s in arr[:64])):
        return None
    try:
        flat = pa.array(arr, type=pa.large_string())
    except (ValueError, TypeError):  # e.g. a lone surrogate: the general path decides
        return None
    return _arrow_numbered_ids(flat) if numbered else _fixed_width_codes(flat)


def _sort_factorized(codes: np.ndarray, uniques: np.ndarray):
    """Distinct identifiers in first-appearance order and their codes, re-coded in
    sorted order (as ``np.unique`` codes them): only the distinct ones are sorted."""
    order = np.argsort(uniques)
    rank = np.empty(order.size, dtype=np.intp)
    rank[order] = np.arange(order.size, dtype=np.intp)
    return uniques[order], rank[codes]


def _encode(values, name, known=None):
    arr, kind = _id_array(values, name, keep_str_objects=known is None)
    mixed = (f"{name} identifiers must be mutually comparable (e.g. all strings or all "
             f"numbers)")
    if known is None:
        if kind == "str" and arr.dtype == object:
            ids, codes = _factorize_strings(arr, name)
            return ids, codes.astype(np.intp, copy=False)
        try:
            ids, codes = np.unique(arr, return_inverse=True)
        except TypeError:
            raise ValueError(mixed) from None
        return ids, codes.astype(np.intp)
    known, known_kind = _id_array(known, f"the known {name}")
    if known.size == 0:
        raise ValueError(f"the known {name} identifiers must be a non-empty 1-D array")
    if not _kinds_match(kind, known_kind):
        raise ValueError(f"unknown {name}: {arr[:3].tolist()} are of type {kind} but the "
                         f"known {name} identifiers are of type {known_kind}")
    try:
        order = np.argsort(known, kind="stable")
        if (known[order][1:] == known[order][:-1]).any():
            raise ValueError(f"the known {name} identifiers contain duplicates")
        pos = np.searchsorted(known, arr, sorter=order)
    except TypeError:
        raise ValueError(mixed) from None
    pos = np.clip(pos, 0, known.size - 1)
    codes = order[pos]
    unknown = known[codes] != arr
    if unknown.any():
        raise ValueError(f"unknown {name}: {arr[unknown][:5].tolist()} not among the "
                         f"{known.size} known {name} identifiers")
    return known, codes.astype(np.intp)



def _factorize_arrow_strings(array, name: str):
    """Sorted identifiers (a ``'U'`` array) and codes of a pyarrow-backed pandas string
    column, as :func:`_sort_factorized` gives them: numbered ids by
    :func:`_arrow_numbered_ids`, ids of one length by :func:`_fixed_width_codes`, others by
    pyarrow's own kernels, one ``dictionary_encode`` (what ``pd.factorize`` calls, without
    its conversions) and a sort of the distinct strings only (UTF-8 bytes sort as numpy
    sorts code points)."""
    import pyarrow.compute as pc  # present whenever pandas stores strings in pyarrow

    chunked = array.__arrow_array__()
    flat = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    numbered = _arrow_numbered_ids(flat)
    if numbered is None:
        numbered = _fixed_width_codes(flat)
    if numbered is not None:
        return numbered
    encoded = flat.dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    strings = encoded.dictionary.take(order)
    if pc.any(pc.ends_with(strings, pattern="\x00")).as_py():
        _refuse_trailing_nul(encoded.dictionary.to_pylist(), name)  # first one in order
    ids = _arrow_ascii_to_unicode(strings)
    if ids is None:  # some non-ASCII string: through Python str objects
        ids = np.asarray(strings.to_numpy(zero_copy_only=False), dtype=str)
    rank = np.empty(order.size, dtype=np.intp)
    rank[order] = np.arange(order.size, dtype=np.intp)
    return ids, rank[encoded.indices.to_numpy(zero_copy_only=False)]


_POW10 = 10 ** np.arange(19, dtype=np.int64)
_LOW10 = np.concatenate([[0, 0], _POW10[1:18]])  # the least number with d digits, d = 0..18


def _arrow_numbered_ids(flat):
    """:func:`_factorize_arrow_strings`'s result without hashing a string, when every id is
    one ASCII prefix followed by a decimal number written the usual way (``t17``, ``w3``,
    ``12345``: no sign, space or leading zero) and the numbers are dense enough to index a
    table (at most four per label); None otherwise, and for low-cardinality columns, which
    hashing encodes faster. pyarrow parses the numbers (the prefix bytes overwritten with
    ``'0'`` in a copy of the data); their string order is the order of their digits
    aligned left (a shorter id first when it is a prefix of a longer one); each label
    finds its code in a table indexed by its number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(flat)
    if n < 64 or flat.type not in (pa.string(), pa.large_string()):
        return None
    head = flat.slice(0, 64).to_pylist()  # a look at the first ids before any full pass
    prefix = head[0].rstrip("0123456789")
    sample = flat.slice(0, 1 << 16)
    if not all(isinstance(s, str) and s.startswith(prefix) and s[len(prefix):].isdigit()
               for s in head) or 16 * len(sample.dictionary_encode().dictionary) < len(sample):
        return None
    first, prefix = head[0], prefix.encode("utf-8")
    p = len(prefix)
    if p == len(first.encode("utf-8")) or not prefix.isascii() or b"\x00" in prefix:
        return None
    offsets = np.frombuffer(flat.buffers()[1], dtype=np.int64 if flat.type == pa.large_string()
                            else np.int32)[flat.offset:flat.offset + n + 1]
    width = np.diff(offsets).astype(np.intp) - p  # digits per id
    if width.min() < 1 or width.max() > 18:
        return None
    data = np.frombuffer(flat.buffers()[2], dtype=np.uint8).copy()
    starts = offsets[:-1]
    for j, byte in enumerate(prefix):
        if not (data[starts + j] == byte).all():
            return None
        data[starts + j] = ord("0")
    # only ASCII digits are left (pyarrow would also read "0x1F", a sign or a space)
    if ((data[offsets[0]:offsets[-1]] - np.uint8(ord("0"))) > 9).any():
        return None
    try:
        values = pc.cast(pa.Array.from_buffers(flat.type, n, [None, flat.buffers()[1],
                                                              pa.py_buffer(data)],
                                               offset=flat.offset), pa.int64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    # "05", "+5", " 5", "-5" parse to numbers with fewer digits than they have: hashing
    if not ((values >= _LOW10[width]) & (values < _POW10[width])).all() or values.max() > 4 * n:
        return None
    return _numbered_codes(values, prefix.decode("ascii"))


_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd constant (2**64 / golden ratio)


def _fixed_width(flat):
    """``(buffer, start, n, w)`` of a pyarrow (large) string array without nulls whose
    strings all have the same length ``w`` >= 8 bytes (string ``r`` is the bytes
    ``start + r * w`` to ``start + (r + 1) * w`` of ``buffer``); None otherwise."""
    import pyarrow as pa

    n = len(flat)
    if n == 0 or flat.null_count or flat.type not in (pa.string(), pa.large_string()):
        return None
    offsets = np.frombuffer(flat.buffers()[1], dtype=np.int64 if flat.type == pa.large_string()
                            else np.int32)[flat.offset:flat.offset + n + 1]
    w = int(offsets[1] - offsets[0])
    if w < 8 or int(offsets[-1] - offsets[0]) != n * w or not (np.diff(offsets) == w).all():
        return None
    return flat.buffers()[2], int(offsets[0]), n, w


def _fixed_width_codes(flat):
    """:func:`_factorize_arrow_strings`'s result for ASCII ids all of one length of at
    least 8 bytes (UUIDs, hex digests, zero-padded codes), many distinct, pandas loaded;
    None otherwise. Each id's bytes, read in place as 64-bit words, are mixed into one
    integer key that pandas hashes (far cheaper than hashing strings); every id is then
    checked, word by word, to equal the first id with its key, so two different ids that
    share a key (possible, not expected) send the column to the string hashing, never
    merge. Only the distinct ids are sorted."""
    pd = sys.modules.get("pandas")
    shape = _fixed_width(flat)
    if shape is None or pd is None or len(flat) < 64 or \
            16 * len(flat.slice(0, 1 << 16).dictionary_encode().dictionary) < min(
                len(flat), 1 << 16):
        return None
    buffer, start, n, w = shape
    at = sorted({*range(0, w - 7, 8), w - 8})  # where the words start (the last may overlap)
    words = [np.ndarray((n,), dtype="<u8", buffer=buffer, offset=start + k, strides=(w,))
             for k in at]
    key = words[0].copy()
    for word in words[1:]:
        key *= _MIX
        key ^= word
    codes, uniques = pd.factorize(key)
    one = np.empty(uniques.size, dtype=np.intp)  # one row of each key
    one[codes] = np.arange(n, dtype=np.intp)
    rows = np.ndarray((n, w), dtype=np.uint8, buffer=buffer, offset=start, strides=(w, 1))[one]
    # every id equals its key's row in words 1, 2, ...; then in word 0 too, the key being
    # an invertible function of word 0 once the others are fixed (_MIX is odd)
    for k, word in zip(at[1:], words[1:]):
        table = np.ascontiguousarray(np.ndarray((rows.shape[0],), dtype="<u8", buffer=rows,
                                                offset=k, strides=(w,)))
        if not np.array_equal(word, table[codes]):
            return None  # two different ids with one key
    if (rows == 0).any() or (rows >= 128).any():
        return None  # NULs (refused with their message) or non-ASCII: the general path
    order = _sort_rows(rows)
    rank = np.empty(order.size, dtype=np.intp)
    rank[order] = np.arange(order.size, dtype=np.intp)
    return rows[order].astype(np.uint32).view(f"<U{w}").ravel(), rank[codes]


def _sort_rows(rows: np.ndarray) -> np.ndarray:
    """The order of distinct rows of bytes (ASCII, no NUL) as strings: by their first 8
    bytes read as one big-endian number, the rows that share those sorted again as bytes
    (byte order is code-point order for ASCII)."""
    head = np.ascontiguousarray(rows[:, :8]).view(">u8").ravel().astype(np.uint64)
    order = np.argsort(head)
    ties = head[order[1:]] == head[order[:-1]]
    if ties.any():
        tied = np.flatnonzero(np.append(ties, False) | np.insert(ties, 0, False))
        sub = order[tied]  # runs of equal heads, the runs in order
        order[tied] = sub[np.argsort(rows[sub].view(f"S{rows.shape[1]}").ravel())]
    return order


def _numbered_codes(values: np.ndarray, prefix: str):
    """Sorted ids ``prefix + str(v)`` (a ``'U'`` array) and the codes of ``values``, small
    non-negative integers, in the string order of the ids."""
    present = np.zeros(int(values.max()) + 1, dtype=bool)
    present[values] = True
    distinct = np.flatnonzero(present)
    digits = np.maximum(np.searchsorted(_POW10, distinct, side="right"), 1)
    top = int(digits.max())
    key = np.sort(distinct * _POW10[top - digits] * 32 + digits)  # string order, distinct
    digits = key % 32
    ordered = key // 32 // _POW10[top - digits]
    code_of = np.empty(present.size, dtype=np.intp)
    code_of[ordered] = np.arange(ordered.size, dtype=np.intp)
    p = len(prefix)
    chars = np.zeros((ordered.size, p + top), dtype=np.uint32)  # code points, NUL-padded
    chars[:, :p] = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    for j in range(top):  # digit j (from the left) of each number that has one
        chars[:, p + j] = np.where(digits > j, ordered // _POW10[np.maximum(digits - 1 - j, 0)]
                                   % 10 + ord("0"), 0)
    return chars.view(f"<U{p + top}").ravel(), code_of[values]


def _arrow_ascii_to_unicode(strings):
    """A pyarrow (large) string array without nulls as numpy's ``'U'`` array, straight from
    its buffers when every string is ASCII (a byte is then its code point), else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(strings) == 0 or not pc.all(pc.string_is_ascii(strings)).as_py():
        return None
    wide = pa.types.is_large_string(strings.type)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[strings.offset:strings.offset + len(strings) + 1].astype(np.intp)
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    lengths = np.diff(offsets)
    width = int(lengths.max())
    if width == 0:  # only empty strings: left to numpy (which makes them '<U1' or wider)
        return None
    if data.size == width * len(strings):  # every string as long as the longest
        return data.reshape(-1, width).astype(np.uint32).view(f"<U{width}").ravel()
    out = np.zeros(len(strings) * width, dtype=np.uint32)
    # byte b of string r goes to out[r * width + (b - offsets[r])]
    shift = np.arange(len(strings), dtype=np.intp) * width - (offsets[:-1] - offsets[0])
    out[np.arange(data.size, dtype=np.intp) + np.repeat(shift, lengths)] = data
    return out.view(f"<U{width}")


def _factorize_columns(df, columns):
    """Codes and sorted identifiers of typed pandas columns by hashing (pandas' factorize),
    or None when a column holds Python objects (then :func:`from_table` inspects every
    element, so that ``'1'``, ``1`` and ``True`` are never merged)."""
    import pandas as pd  # only reached with a DataFrame in hand

    out = []
    for name, c in zip(("item", "worker", "label"), columns):
        col = df[c]
        if col.dtype == object or isinstance(col.dtype, pd.CategoricalDtype):
            return None
        if isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow":
            ids, codes = _factorize_arrow_strings(col.array, name)
        elif isinstance(col.dtype, pd.StringDtype):  # every element is a str
            codes, uniques = pd.factorize(col)  # the distinct ones sorted below
            strings = uniques.to_numpy(dtype=object)
            ids = np.asarray(strings, dtype=str)
            _refuse_lost_nul(strings, ids, name)
            ids, codes = _sort_factorized(codes, ids)
        else:
            codes, uniques = pd.factorize(col, sort=True)
            ids, _ = _id_array(uniques, name)
        out.append((codes.astype(np.intp, copy=False), ids))
    return out

