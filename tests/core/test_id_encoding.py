"""The id encoder (0.2.0: hashing, no per-element loops) gives exactly what the 0.1.x encoder
gave -- the same codes, the same sorted ids of the same dtype, the same refusals with the
same messages -- for every input form, with pandas imported or not. The 0.1.x functions
are the private copies kept in ``benchmarks/bench_id_encoding.py``."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crowdlearn as cl

pd = pytest.importorskip("pandas")

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_id_encoding.py"
_spec = importlib.util.spec_from_file_location("_bench_id_encoding", _BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

FIELDS = ("item", "expert", "label", "item_ids", "expert_ids", "class_ids",
          "n_items", "n_experts", "n_classes")


def outcome(fn):
    """What ``fn()`` gives: the crowd's fields, or the refusal (type and message)."""
    try:
        crowd = fn()
    except (ValueError, TypeError) as exc:
        return ("raised", type(exc).__name__, str(exc))
    return tuple((f, str(getattr(crowd, f).dtype), getattr(crowd, f).tolist())
                 if isinstance(getattr(crowd, f), np.ndarray) else (f, getattr(crowd, f))
                 for f in FIELDS)


def old_and_new(fn, hide_pandas=False):
    """``fn()``'s outcome with the 0.1.x encoder and with the current one."""
    hide = mock.patch.dict(sys.modules, {"pandas": None}) if hide_pandas \
        else contextlib.nullcontext()
    with hide:
        with bench.path("old"):
            old = outcome(fn)
        with bench.path("new"):
            new = outcome(fn)
    return old, new


def assert_same(fn):
    for hide in (False, True):
        old, new = old_and_new(fn, hide_pandas=hide)
        assert new == old, f"pandas hidden: {hide}"


def table_forms(items, workers, labels):
    """The ways one table can be given: lists, object arrays, Series, fixed-width arrays."""
    yield lambda: cl.from_table(items, workers, labels)
    yield lambda: cl.from_table(np.array(items, dtype=object), np.array(workers, dtype=object),
                                np.array(labels, dtype=object))
    yield lambda: cl.from_table(pd.Series(items, dtype=object), pd.Series(workers, dtype=object),
                                labels)
    if all(isinstance(v, str) for v in items) and not any(v.endswith("\x00") for v in items):
        yield lambda: cl.from_table(np.array(items, dtype=str), workers, labels)


# ids that are prefixes of each other, the empty string, unicode beyond the BMP, NULs inside
_words = st.sampled_from(["", "a", "ab", "abc", "b", "a b", "é", "e\u0301", "\U0001f600",
                          "a\x00b", "t1", "t10", "t2", "T1", "\ud800"])
_text = st.one_of(_words, st.text(max_size=4))


@settings(max_examples=60, deadline=None)
@given(st.lists(_text, min_size=1, max_size=25), st.data())
def test_string_ids_encode_as_before(items, data):
    n = len(items)
    workers = data.draw(st.lists(_text, min_size=n, max_size=n))
    labels = data.draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    for form in table_forms(items, workers, labels):
        assert_same(form)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(-5, 5), st.integers(), st.floats(allow_nan=True),
                          st.booleans(), _words, st.none()), min_size=1, max_size=12),
       st.data())
def test_any_ids_are_accepted_or_refused_as_before(items, data):
    """Ints, huge ints, floats (NaN), bools, strings, None, and mixtures of them."""
    n = len(items)
    if data.draw(st.booleans()):  # often one type, so that most cases get through
        items = [items[0]] * n if items[0] is None else [type(items[0])(v) if isinstance(
            v, type(items[0])) else items[0] for v in items]
    workers = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    labels = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    for form in table_forms(items, workers, labels):
        assert_same(form)


@pytest.mark.parametrize("items", [
    ["b", "a", "b", "c\x00", "a\x00"],  # two trailing NULs: the first in row order is named
    ["a", 1, "b"], ["a", None], [np.str_("a"), "a", "b"], ["1", True], [1.0, float("nan")],
    [1, 2**70, 3], [True, False, True], [], ["\U0001f600", "\ud7ff", "\ue000"],
])
def test_edge_cases_encode_or_refuse_as_before(items):
    n = len(items)
    for form in table_forms(items, ["w"] * n, ([0, 1] * n)[:n]):
        assert_same(form)


@pytest.mark.parametrize("dtype", ["str", object, "string[python]"])
def test_dataframes_encode_as_before(dtype):
    rng = np.random.default_rng(3)
    tasks = np.array(["t10", "t1", "", "t2", "é", "t1\x00x"], dtype=object)[rng.integers(0, 6, 300)]
    workers = np.array(["w1", "w10", "w", "W"], dtype=object)[rng.integers(0, 4, 300)]
    df = pd.DataFrame({"task": pd.array(tasks, dtype=dtype),
                       "worker": pd.array(workers, dtype=dtype),
                       "label": rng.integers(0, 3, 300)})
    old, new = old_and_new(lambda: cl.as_crowd_labels(df))
    assert new == old and old[0] != "raised"
    bad = df.assign(task=pd.array(["a\x00"] + list(tasks[1:]), dtype=dtype))
    old, new = old_and_new(lambda: cl.as_crowd_labels(bad))
    assert new == old and "NUL" in old[2]


def test_whole_fit_is_the_same_as_before():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 400)
    task = np.repeat(np.arange(400), 5)
    worker = rng.integers(0, 20, task.size)
    label = np.where(rng.random(task.size) < 0.7, truth[task], rng.integers(0, 3, task.size))
    perm = rng.permutation(task.size)
    df = pd.DataFrame({"task": np.array([f"t{i}" for i in task[perm]], dtype=object),
                       "worker": np.array([f"w{j}" for j in worker[perm]], dtype=object),
                       "label": label[perm]})
    fits = {}
    for frame in (df, df.astype({"task": "str", "worker": "str"})):
        for which in ("old", "new"):
            with bench.path(which), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = cl.DawidSkene().fit(frame)
            fits[which] = (np.asarray(model.predict_proba(frame)), model.labels_,
                           model.probas_)
        np.testing.assert_array_equal(fits["old"][0], fits["new"][0])
        for old, new in zip(fits["old"][1:], fits["new"][1:]):
            assert type(old) is type(new) and old.equals(new)


# --- numbered ids (a prefix and a number: t17, w3, 12345) skip the hashing of strings ------

_prefixes = st.sampled_from(["t", "", "task_", "T", "é", "a b", "t0x", "\x00", "w"])
_numbers = st.one_of(st.integers(0, 300), st.integers(0, 10**19), st.integers(-3, 3))
_forms = st.sampled_from(["{}", "{}", "{}", "0{}", "+{}", " {}", "{} ", "{}x", "{:,}",
                          "0x{:X}", "x{:X}", "0b{:b}", "{:e}"])  # pyarrow reads 0x.. as hex


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_prefixes, _numbers, _forms), min_size=1, max_size=6), st.data())
def test_numbered_string_columns_encode_as_before(kinds, data):
    """Mostly-canonical numbered ids (with high cardinality, so that the numbered path is
    tried) mixed with what must send a column back to hashing: leading zeros, signs, spaces,
    other prefixes, numbers too long or too sparse, non-ASCII or NUL prefixes; in pandas'
    string columns, object columns and object arrays."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n = data.draw(st.integers(64, 400))
    main_prefix = kinds[0][0]
    ids = [f"{main_prefix}{v}" for v in rng.integers(0, n, n)]
    for prefix, number, form in kinds[1:]:
        ids[int(rng.integers(n))] = prefix + form.format(number)
    workers = [f"w{j}" for j in rng.integers(0, 5, n)]
    labels = rng.integers(0, 3, n)
    for dtype in ("str", object):
        df = pd.DataFrame({"task": pd.array(ids, dtype=dtype),
                           "worker": pd.array(workers, dtype=dtype), "label": labels})
        old, new = old_and_new(lambda: cl.as_crowd_labels(df))
        assert new == old
    assert_same(lambda: cl.from_table(np.array(ids, dtype=object), workers, labels))


def test_numbered_ids_take_the_numbered_path_and_agree_with_hashing():
    """The numbered path is taken for canonical ids (so the test above tests it) and is not
    for low-cardinality or sparse columns; where taken it equals pyarrow's hashing."""
    import pyarrow as pa

    from crowdlearn import _ids as I

    rng = np.random.default_rng(5)
    for prefix, kind, start in (("t", pa.large_string(), 0), ("", pa.string(), 0),
                                ("item-", pa.large_string(), 7), ("w", pa.string(), 13)):
        values = rng.permutation(np.repeat(np.arange(2000), 3))
        flat = pa.array([f"{prefix}{v}" for v in values], type=kind)[start:]  # offset
        got = I._arrow_numbered_ids(flat)
        assert got is not None
        with mock.patch.object(I, "_arrow_numbered_ids", lambda flat: None):
            want = I._factorize_arrow_strings(pd.array(flat, dtype="str"), "item")
        assert got[0].dtype == want[0].dtype
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # pyarrow parses "0xF" as 15: "txA" (prefix t) must not become "t10", nor "0xF4240" 1000000
    for ids in ([f"t{i}" for i in range(100)] + ["txA"],
                [str(i) for i in range(2500)] + ["0xF4240"]):
        assert I._arrow_numbered_ids(pa.array(ids)) is None
        crowd = cl.from_table(np.array(ids, dtype=object), ["w"] * len(ids), [0, 1] * (
            len(ids) // 2) + [0] * (len(ids) % 2))
        assert crowd.n_items == len(ids) and ids[-1] in crowd.item_ids.tolist()
    few = pa.array([f"w{v}" for v in rng.integers(0, 10, 5000)])
    sparse = pa.array([f"t{v}" for v in rng.integers(0, 10**12, 5000)])
    assert I._arrow_numbered_ids(few) is None and I._arrow_numbered_ids(sparse) is None


def test_fixed_width_ids_take_their_path_and_agree_with_hashing():
    """Ids of one length (UUIDs, zero-padded codes) are encoded from integer keys of their
    bytes; where taken that path equals pyarrow's string hashing, whatever the row order;
    a shared key (forced here) or a NUL or non-ASCII byte falls back to string hashing."""
    import pyarrow as pa

    from crowdlearn import _ids as I

    rng = np.random.default_rng(7)
    hexes = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    for width, k in ((36, 3000), (8, 500), (13, 2000)):
        chars = hexes[rng.integers(0, 16, (k, width))]
        chars[:, min(8, width - 1)] = ord("-")
        ids = np.unique(chars.view(f"S{width}").ravel()).astype(str).astype(object)
        values = ids[rng.integers(0, ids.size, 5 * k)]
        flat = pa.array(values, type=pa.large_string())
        got = I._fixed_width_codes(flat)
        assert got is not None
        with mock.patch.object(I, "_fixed_width_codes", lambda flat: None):
            want = I._factorize_arrow_strings(pd.array(values, dtype="str"), "item")
        assert got[0].dtype == want[0].dtype
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        perm = rng.permutation(values.size)
        again = I._fixed_width_codes(pa.array(values[perm], type=pa.large_string()))
        np.testing.assert_array_equal(again[0], got[0])
        np.testing.assert_array_equal(again[1], got[1][perm])
        crowd = cl.from_table(values, ["w"] * values.size, [0, 1] * (values.size // 2) +
                              [0] * (values.size % 2))  # object arrays take it too
        np.testing.assert_array_equal(crowd.item_ids, want[0])
        np.testing.assert_array_equal(crowd.item, want[1])
    # ids whose two 8-byte halves are swapped: with the multiplier 1 the key is the XOR of
    # the halves, the same for both, and the check finds them apart
    halves = [f"{i:08d}" for i in range(150)]
    values = np.array([a + b for a, b in zip(halves, halves[::-1])] * 3, dtype=object)
    flat = pa.array(values, type=pa.large_string())
    assert I._fixed_width_codes(flat) is not None
    with mock.patch.object(I, "_MIX", np.uint64(1)):
        assert I._fixed_width_codes(flat) is None
        crowd = cl.from_dataframe(pd.DataFrame({"task": pd.array(values, dtype="str"),
                                                "worker": "w", "label": [0, 1, 1] * 150}))
    assert crowd.n_items == 150 and crowd.item_ids[0] == "0000000000000149"
    for odd in (["abcdefg\x00"], ["abcdefgé"]):
        values = np.array([f"{i:08d}" for i in range(200)] + odd, dtype=object)
        assert I._fixed_width_codes(pa.array(values, type=pa.large_string())) is None
    assert I._fixed_width_codes(pa.array(["abcdefgh", "abcdefghi"] * 100)) is None
