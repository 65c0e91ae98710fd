"""The order of the label rows is made irrelevant where the labels are read.

Two steps make every fit independent of the row order, and both are tested here on many
random crowds (cheaply: no model is fitted; ``tests/models/test_row_order.py`` fits every
model on a sample):

1. the readers (``from_table``, ``from_dataframe``, ``as_crowd_labels``) code identifiers by
   their sorted distinct values, so a row's codes do not depend on where the row is: the
   permuted input gives the same identifiers and the original codes, permuted (strings,
   numbered strings such as ``t12`` (their own fast path), integers, floats and booleans, a
   different kind in each column; lists, arrays and DataFrame columns of every dtype);
2. the models put the coded labels in one canonical order before any arithmetic
   (``_canonical_order``: GLAD, MACE, the votes, the binary feature models;
   ``_flat_indices``: the Dawid--Skene family's label matrix; ``_canonical_quadruples``: the
   multi-label model), so the permuted labels give the same arrays, hence the same sums in
   the same order and a bit-identical fit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crowdlearn as cl
from crowdlearn.aggregation._common import _canonical_order, _flat_indices, _triple_order
from crowdlearn.aggregation.multilabel import _canonical_quadruples, from_quadruples
from crowdlearn.labels import from_triples

pd = pytest.importorskip("pandas")

FEW = settings(deadline=None, max_examples=40)
MANY = settings(deadline=None, max_examples=100)

# awkward strings: empty, case, non-ASCII, digits that sort as text, spaces
WORDS = ["", "a", "B", "b", "ä", "日本", "a b", "10", "9", "z" * 12, "Ω", "t1"]
KINDS = ("int", "float", "str", "numbered", "bool")


def as_ids(kind: str, codes: list[int]) -> list:
    """Identifiers of one kind for small integers (equal integers give equal ids)."""
    if kind == "int":
        return [7 * v - 20 for v in codes]
    if kind == "float":
        return [v / 2 - 1.5 for v in codes]
    if kind == "str":
        return [WORDS[v % len(WORDS)] + "#" * (v // len(WORDS)) for v in codes]
    if kind == "numbered":  # "t3" and "t03" are two ids; "t10" sorts before "t9"
        return [f"t0{v}" if v % 3 == 0 else f"t{v}" for v in codes]
    return [v % 2 == 1 for v in codes]


@st.composite
def id_tables(draw):
    """(items, workers, labels) as lists of ids, a kind per column, and a permutation."""
    n = draw(st.integers(2, 150))  # 64 and more: the numbered ids' fast path
    columns = []
    for name in ("items", "workers", "labels"):
        kind = draw(st.sampled_from(KINDS))
        top = draw(st.integers(1, 40 if kind != "bool" else 1))
        codes = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
        if name == "labels":
            codes[:2] = [0, 1]  # at least two classes
        columns.append(as_ids(kind, codes))
    perm = draw(st.permutations(range(n)))
    return columns, np.asarray(perm, dtype=np.intp)


def assert_same_reading(a, b, perm):
    """``b`` read from the rows of ``a``'s input in the order ``perm``."""
    for name in ("item_ids", "expert_ids", "class_ids"):
        ids_a, ids_b = getattr(a, name), getattr(b, name)
        assert ids_a.dtype == ids_b.dtype, name
        np.testing.assert_array_equal(ids_a, ids_b, err_msg=name)
    for name in ("item", "expert", "label"):
        np.testing.assert_array_equal(getattr(a, name)[perm], getattr(b, name), err_msg=name)
    assert (a.n_items, a.n_experts, a.n_classes) == (b.n_items, b.n_experts, b.n_classes)


def assert_decodes_to(crowd, columns):
    for ids, codes, given_ids in zip((crowd.item_ids, crowd.expert_ids, crowd.class_ids),
                                     (crowd.item, crowd.expert, crowd.label), columns):
        assert ids[codes].tolist() == list(given_ids)
        assert all(x < y for x, y in zip(ids.tolist(), ids.tolist()[1:]))  # sorted, distinct


# -- 1. the readers ------------------------------------------------------------------------
@MANY
@given(table=id_tables(), form=st.sampled_from(["lists", "arrays", "objects"]))
def test_from_table_codes_each_row_whatever_its_position(table, form):
    columns, perm = table
    if form == "arrays":
        columns = [np.asarray(c) for c in columns]
    elif form == "objects":
        columns = [np.asarray(c, dtype=object) for c in columns]
    a = cl.from_table(*columns)
    b = cl.from_table(*([c[i] for i in perm] if form == "lists" else c[perm] for c in columns))
    assert_same_reading(a, b, perm)
    assert_decodes_to(a, columns)


def _column(ids: list, dtype: str):
    if dtype != "default" and not isinstance(ids[0], str):
        dtype = "category" if dtype == "category" else "default"
    if dtype == "default":
        return pd.Series(ids)
    if dtype == "string[pyarrow]":
        pytest.importorskip("pyarrow")
    return pd.Series(ids, dtype=dtype)


@FEW
@given(table=id_tables(), dtype=st.sampled_from(["default", "category", "string",
                                                 "string[pyarrow]"]))
def test_from_dataframe_codes_each_row_whatever_its_position(table, dtype):
    columns, perm = table
    df = pd.DataFrame({name: _column(ids, dtype)
                       for name, ids in zip(("task", "worker", "label"), columns)})
    a = cl.as_crowd_labels(df)
    b = cl.as_crowd_labels(df.iloc[perm])
    assert_same_reading(a, b, perm)
    assert_decodes_to(a, columns)
    shuffled = df.sample(frac=1.0, random_state=0)  # its index shuffled too
    assert_same_reading(a, cl.from_dataframe(shuffled),
                        shuffled.index.to_numpy().astype(np.intp))


def test_known_ids_code_new_rows_whatever_their_position():
    # how a fitted model reads new labels: onto its own ids
    items, workers, labels = ["b", "a", "c", "a"], [3, 1, 2, 3], ["no", "yes", "no", "no"]
    perm = np.array([2, 0, 3, 1])
    known = dict(item_ids=["a", "b", "c", "d"], expert_ids=[1, 2, 3, 4], classes=["no", "yes"])
    a = cl.from_table(items, workers, labels, **known)
    b = cl.from_table(*(np.asarray(c, dtype=object)[perm] for c in (items, workers, labels)),
                      **known)
    assert_same_reading(a, b, perm)
    assert a.item.tolist() == [1, 0, 2, 0] and a.expert.tolist() == [2, 0, 1, 2]


# -- 2. the canonical order of the coded labels ----------------------------------------------
@st.composite
def coded_crowds(draw):
    """Coded triples (some labels repeated, some items unlabelled) and a permutation."""
    n, J, K = draw(st.integers(1, 30)), draw(st.integers(1, 8)), draw(st.integers(2, 5))
    size = draw(st.integers(1, 80))
    item, expert, label = (np.asarray(draw(st.lists(st.integers(0, top - 1), min_size=size,
                                                    max_size=size)), dtype=np.intp)
                           for top in (n, J, K))
    perm = np.asarray(draw(st.permutations(range(size))), dtype=np.intp)
    return (item, expert, label, n, J, K), perm


def _crowd(triples, order):
    item, expert, label, n, J, K = triples
    return from_triples(item[order], expert[order], label[order], n_items=n, n_experts=J,
                        n_classes=K)


@MANY
@given(data=coded_crowds())
def test_canonical_order_and_label_matrix_are_the_same_for_every_row_order(data):
    triples, perm = data
    given_, shuffled = _crowd(triples, np.arange(perm.size)), _crowd(triples, perm)
    a, b = _canonical_order(given_), _canonical_order(shuffled)
    for name in ("item", "expert", "label"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    K = given_.n_classes
    (va, ta), (vb, tb) = _flat_indices(given_, K), _flat_indices(shuffled, K)
    assert va.has_sorted_indices and vb.has_sorted_indices
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(va, name), getattr(vb, name), err_msg=name)
        np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name), err_msg=name)


@FEW
@given(data=coded_crowds(), targets=st.data())
def test_multi_label_canonical_order_is_the_same_for_every_row_order(data, targets):
    (item, expert, label, n, J, K), perm = data
    target = np.asarray(targets.draw(st.lists(st.integers(0, 1), min_size=item.size,
                                              max_size=item.size)), dtype=np.intp)
    label = np.where(target == 1, label % 2, label)  # target 1 has 2 classes

    def quadruples(order):
        return from_quadruples(item[order], expert[order], target[order], label[order],
                               n_items=n, n_experts=J, n_targets=2, n_classes=[K, 2])

    a = _canonical_quadruples(quadruples(np.arange(perm.size)))
    b = _canonical_quadruples(quadruples(perm))
    for name in ("item", "expert", "target", "label"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@FEW
@given(data=coded_crowds())
def test_canonical_order_sorts_by_item_expert_label_and_keeps_everything(data):
    triples, perm = data
    for crowd in (_crowd(triples, np.arange(perm.size)), _crowd(triples, perm)):
        out = _canonical_order(crowd)
        key = np.stack([out.item, out.expert, out.label])
        order = np.lexsort(key[::-1])
        np.testing.assert_array_equal(order, np.arange(out.n_labels))  # already sorted
        assert sorted(zip(crowd.item, crowd.expert, crowd.label)) == \
            list(zip(out.item, out.expert, out.label))
        assert (out.n_items, out.n_experts, out.n_classes) == \
            (crowd.n_items, crowd.n_experts, crowd.n_classes)
        assert _canonical_order(out) is out  # sorted input is returned as it is


def test_canonical_order_keeps_the_ids():
    df = pd.DataFrame({"task": ["b", "a", "b", "c"], "worker": ["y", "x", "x", "y"],
                       "label": ["no", "yes", "yes", "no"]})
    crowd = cl.as_crowd_labels(df)
    out = _canonical_order(crowd)
    assert out is not crowd and getattr(out, "_from_frame", False) is True  # results by id
    for name in ("item_ids", "expert_ids", "class_ids"):
        np.testing.assert_array_equal(getattr(out, name), getattr(crowd, name))
    assert sorted(zip(*crowd.to_table())) == list(zip(*out.to_table()))


@FEW
@given(data=coded_crowds())
def test_the_int64_key_and_lexsort_give_the_same_order(data):
    triples, perm = data
    for crowd in (_crowd(triples, np.arange(perm.size)), _crowd(triples, perm)):
        args = (crowd.item, crowd.expert, crowd.label, crowd.n_items, crowd.n_experts,
                crowd.n_classes)
        by_key = _triple_order(*args)
        by_lexsort = _triple_order(*args, max_key=0)
        np.testing.assert_array_equal(by_key, by_lexsort)  # both stable: the same permutation
