"""Tests for crowdlearn.labels: the three input forms, conversions and validation."""

import numpy as np
import pytest

from crowdlearn import CrowdLabels, as_crowd_labels, from_dense, from_table, from_triples

DENSE = np.array([[0, 1, -1],
                  [1, 1, 1],
                  [-1, -1, 2],
                  [-1, -1, -1]])


# -- the three forms -----------------------------------------------------------------------
def test_from_triples_stores_indices_and_infers_sizes():
    crowd = from_triples([0, 0, 1], [0, 1, 1], [2, 2, 0])
    assert isinstance(crowd, CrowdLabels)
    assert crowd.item.tolist() == [0, 0, 1]
    assert crowd.expert.tolist() == [0, 1, 1]
    assert crowd.label.tolist() == [2, 2, 0]
    assert (crowd.n_items, crowd.n_experts, crowd.n_classes, crowd.n_labels) == (2, 2, 3, 3)
    assert crowd.item_ids is None and crowd.expert_ids is None and crowd.class_ids is None


def test_from_triples_explicit_sizes_allow_unused_indices():
    crowd = from_triples([0], [1], [0], n_items=4, n_experts=3, n_classes=5)
    assert (crowd.n_items, crowd.n_experts, crowd.n_classes) == (4, 3, 5)
    assert crowd.unlabelled_items().tolist() == [1, 2, 3]
    assert crowd.vote_counts().shape == (4, 5)


def test_from_triples_accepts_whole_floats_and_numpy_sizes():
    crowd = from_triples(np.array([0.0, 1.0]), [0, 0], [1, 0], n_items=np.int64(3))
    assert crowd.item.dtype.kind == "i"
    assert crowd.n_items == 3


def test_from_dense_reads_rows_as_items_and_columns_as_experts():
    crowd = from_dense(DENSE)
    assert (crowd.n_items, crowd.n_experts, crowd.n_classes, crowd.n_labels) == (4, 3, 3, 6)
    triples = sorted(zip(crowd.item.tolist(), crowd.expert.tolist(), crowd.label.tolist()))
    assert triples == [(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 1), (1, 2, 1), (2, 2, 2)]


def test_dense_to_triples_to_dense_round_trip():
    crowd = from_dense(DENSE)
    np.testing.assert_array_equal(crowd.to_dense(), DENSE)
    again = from_triples(crowd.item, crowd.expert, crowd.label, n_items=crowd.n_items,
                         n_experts=crowd.n_experts, n_classes=crowd.n_classes)
    np.testing.assert_array_equal(again.to_dense(), DENSE)


def test_from_dense_with_another_missing_marker():
    m = np.where(DENSE == -1, 9, DENSE)
    crowd = from_dense(m, missing=9, n_classes=3)
    assert crowd.n_labels == 6
    np.testing.assert_array_equal(crowd.to_dense(missing=9), m)
    np.testing.assert_array_equal(crowd.to_dense(), DENSE)


def test_from_dense_n_classes_larger_than_used():
    crowd = from_dense([[0, 1]], n_classes=4)
    assert crowd.n_classes == 4
    assert crowd.vote_counts().tolist() == [[1.0, 1.0, 0.0, 0.0]]


def test_from_table_maps_arbitrary_ids_and_back():
    items = ["img7", "img7", "img2", "img9", "img2"]
    workers = [101, 5, 5, 101, 33]
    labels = ["dog", "cat", "cat", "bird", "dog"]
    crowd = from_table(items, workers, labels)
    # sorted distinct identifiers give the indices
    assert crowd.item_ids.tolist() == ["img2", "img7", "img9"]
    assert crowd.expert_ids.tolist() == [5, 33, 101]
    assert crowd.class_ids.tolist() == ["bird", "cat", "dog"]
    assert crowd.item.tolist() == [1, 1, 0, 2, 0]
    assert crowd.expert.tolist() == [2, 0, 0, 2, 1]
    assert crowd.label.tolist() == [2, 1, 1, 0, 2]
    back = crowd.to_table()
    assert [x.tolist() for x in back] == [items, workers, labels]


def test_from_table_with_numeric_ids():
    crowd = from_table([10.5, 3.0, 10.5], [7, 7, 8], [1, 0, 1])
    assert crowd.item_ids.tolist() == [3.0, 10.5]
    assert [x.tolist() for x in crowd.to_table()] == [[10.5, 3.0, 10.5], [7, 7, 8], [1, 0, 1]]


def test_to_table_without_ids_gives_indices():
    crowd = from_triples([0, 2], [1, 0], [1, 0])
    item, expert, label = crowd.to_table()
    assert item.tolist() == [0, 2] and expert.tolist() == [1, 0] and label.tolist() == [1, 0]
    item[0] = 99  # a copy, not a view of the stored arrays
    assert crowd.item[0] == 0


def test_from_table_classes_fix_the_class_order_and_unused_classes():
    crowd = from_table(["a", "b"], ["w", "w"], ["no", "yes"], classes=["yes", "maybe", "no"])
    assert crowd.n_classes == 3
    assert crowd.label.tolist() == [2, 0]
    assert crowd.to_table()[2].tolist() == ["no", "yes"]


def test_from_table_with_known_ids_maps_onto_them():
    fitted = from_table(["a", "b", "c"], ["w1", "w2", "w3"], ["x", "y", "x"])
    new = from_table(["c", "a"], ["w3", "w3"], ["y", "x"], item_ids=fitted.item_ids,
                     expert_ids=fitted.expert_ids, classes=fitted.class_ids)
    assert (new.n_items, new.n_experts, new.n_classes) == (3, 3, 2)
    assert new.item.tolist() == [2, 0]
    assert new.expert.tolist() == [2, 2]
    assert new.label.tolist() == [1, 0]


def test_from_table_known_ids_need_not_be_sorted():
    crowd = from_table(["b", "a"], ["w", "w"], [0, 1], item_ids=["z", "b", "a"])
    assert crowd.item.tolist() == [1, 2]
    assert crowd.to_table()[0].tolist() == ["b", "a"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(item_ids=["a", "b"]), r"unknown item: \['c'\]"),
    (dict(expert_ids=["w1"]), r"unknown worker: \['w2'\]"),
    (dict(classes=["x", "z"]), r"unknown label: \['y'\]"),
])
def test_from_table_unseen_id_is_unknown(kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_table(["a", "c"], ["w1", "w2"], ["x", "y"], **kwargs)


def test_from_table_unknown_id_of_another_type():
    with pytest.raises(ValueError, match="unknown item"):
        from_table([1, 2], ["w", "w"], ["x", "y"], item_ids=["a", "b"])


# -- summaries -----------------------------------------------------------------------------
def test_vote_counts_by_hand():
    crowd = from_dense(DENSE)
    expected = [[1, 1, 0],
                [0, 3, 0],
                [0, 0, 1],
                [0, 0, 0]]
    np.testing.assert_array_equal(crowd.vote_counts(), expected)
    assert crowd.vote_counts().dtype == float


def test_vote_counts_with_weights():
    crowd = from_triples([0, 0, 1], [0, 1, 0], [1, 1, 0])
    np.testing.assert_allclose(crowd.vote_counts(weights=[0.5, 2.0, 3.0]),
                               [[0.0, 2.5], [3.0, 0.0]])


def test_vote_counts_counts_repeated_labels():
    crowd = from_triples([0, 0, 0], [0, 0, 1], [1, 1, 0])
    np.testing.assert_array_equal(crowd.vote_counts(), [[1, 2]])


def test_labels_per_item_and_expert_and_unlabelled():
    crowd = from_dense(DENSE)
    assert crowd.labels_per_item().tolist() == [2, 3, 1, 0]
    assert crowd.labels_per_expert().tolist() == [2, 2, 2]
    assert crowd.unlabelled_items().tolist() == [3]
    assert from_dense(DENSE[:3]).unlabelled_items().tolist() == []


def test_to_dense_refuses_repeated_pairs():
    crowd = from_triples([0, 1, 0], [1, 0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="same item more than once"):
        crowd.to_dense()


def test_subset_keeps_sizes_and_ids():
    crowd = from_table(["a", "b", "c"], ["u", "v", "u"], ["x", "y", "x"])
    sub = crowd.subset([True, False, True])
    assert sub.n_labels == 2 and sub.n_items == 3 and sub.n_experts == 2
    assert [x.tolist() for x in sub.to_table()] == [["a", "c"], ["u", "u"], ["x", "x"]]
    with pytest.raises(ValueError, match="mask must have shape"):
        crowd.subset([True])


def test_repr_gives_sizes():
    assert repr(from_dense(DENSE)) == "CrowdLabels(n_items=4, n_experts=3, n_classes=3, n_labels=6)"


# -- as_crowd_labels -----------------------------------------------------------------------
def test_as_crowd_labels_accepts_every_form():
    crowd = from_dense(DENSE)
    assert as_crowd_labels(crowd) is crowd
    for other in (as_crowd_labels(DENSE), as_crowd_labels(DENSE.tolist()),
                  as_crowd_labels((crowd.item, crowd.expert, crowd.label), n_items=4)):
        np.testing.assert_array_equal(other.to_dense(), DENSE)


def test_as_crowd_labels_imposes_larger_sizes_on_crowd_labels():
    crowd = from_triples([0], [0], [1])
    grown = as_crowd_labels(crowd, n_items=3, n_experts=2, n_classes=4)
    assert (grown.n_items, grown.n_experts, grown.n_classes) == (3, 2, 4)
    assert (crowd.n_items, crowd.n_experts, crowd.n_classes) == (1, 1, 2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_experts=2), "unknown expert"),
    (dict(n_classes=2), "label out of range"),
    (dict(n_items=2), "n_items mismatch"),
])
def test_as_crowd_labels_refuses_smaller_sizes(kwargs, match):
    crowd = from_triples([0, 2], [0, 2], [0, 2])
    with pytest.raises(ValueError, match=match):
        as_crowd_labels(crowd, **kwargs)


@pytest.mark.parametrize("data, kwargs, match", [
    (None, {}, "labels is None"),
    (np.zeros((2, 2, 2)), {}, "2-D"),
    ([0, 1, 1], {}, r"shape \(3,\)"),
    (np.zeros((0, 3)), {}, "empty"),
    (DENSE, dict(n_items=5), "4 rows"),
    (DENSE, dict(n_experts=2), "3 columns"),
    (([0], [3], [1]), dict(n_experts=2), "unknown expert"),
])
def test_as_crowd_labels_bad_input(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        as_crowd_labels(data, **kwargs)


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("matrix, kwargs, match", [
    ([[0, np.nan], [1, 1]], {}, r"NaN at \(0, 1\); mark a missing label with -1"),
    ([[0, np.inf], [1, 1]], {}, r"inf at \(0, 1\)"),
    ([[0, -np.inf], [1, 1]], {}, "inf"),
    ([[0, 1.5], [1, 1]], {}, r"whole numbers.*\(0, 1\)"),
    ([0, 1, 1], {}, r"2-dimensional, got shape \(3,\)"),
    (np.zeros((2, 2, 2)), {}, "2-dimensional"),
    (np.zeros((0, 3)), {}, "empty"),
    (np.zeros((3, 0)), {}, "empty"),
    ([[-1, -1], [-1, -1]], {}, "no label at all"),
    ([[0, -2]], {}, r"below -1.*-2"),
    ([[0, 2]], dict(n_classes=2), r"label has values out of range: 2.*n_classes=2"),
    ([[0, 0]], {}, "at least 2 classes"),
    ([[0, 1]], dict(n_classes=0), "n_classes must be a positive integer"),
    ([[0, 1]], dict(n_classes=2.5), "n_classes must be a positive integer"),
    ([["a", "b"]], {}, "must hold integers"),
    ([[0, "x"]], {}, "must hold integers"),
    ([[0, 1], [1]], {}, "could not be read as a 2-D array|shape"),
    ([[0, -1]], dict(missing=9), r"below 0.*-1"),
    ([[0, -2]], dict(missing=-5), r"negative values other than the missing marker -5"),
])
def test_from_dense_bad_input(matrix, kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_dense(matrix, **kwargs)


@pytest.mark.parametrize("triples, kwargs, match", [
    (([0, 1], [0], [1]), {}, "same length, got 2, 1 and 1"),
    (([0, -1], [0, 0], [1, 0]), {}, r"item has values below 0.*-1"),
    (([0, 1], [0, -3], [1, 0]), {}, r"expert has values below 0.*-3"),
    (([0, 1], [0, 0], [1, -1]), {}, r"label has values below 0"),
    (([], [], []), {}, "item is empty"),
    (([0], [3], [1]), dict(n_experts=2), r"expert has values out of range: 3.*unknown expert"),
    (([5], [0], [1]), dict(n_items=2), r"item has values out of range: 5.*n_items=2"),
    (([0], [0], [3]), dict(n_classes=3), r"label has values out of range: 3.*n_classes=3"),
    (([0], [0], [0]), {}, "at least 2 classes"),
    (([0, np.nan], [0, 0], [1, 0]), {}, "item contains NaN"),
    (([0, 1], [0, np.inf], [1, 0]), {}, "expert contains inf"),
    (([0, 1], [0, 0], [1, 0.5]), {}, "label must hold whole numbers"),
    (([[0]], [[0]], [[1]]), {}, "item must be 1-dimensional"),
    (([0], [0], [1]), dict(n_items=0), "n_items must be a positive integer"),
    (([0], [0], [1]), dict(n_experts=True), "n_experts must be a positive integer"),
])
def test_from_triples_bad_input(triples, kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_triples(*triples, **kwargs)


@pytest.mark.parametrize("table, kwargs, match", [
    ((["a", "b"], ["w"], ["x", "y"]), {}, r"same length, got \[2, 1, 2\]"),
    (([], [], []), {}, "table is empty"),
    ((["a", "b"], ["w", "w"], ["x", "x"]), {}, "at least 2 classes"),
    (([1.0, np.nan], ["w", "w"], ["x", "y"]), {}, "item contains NaN at position 1"),
    ((np.array(["a", None], dtype=object), ["w", "w"], ["x", "y"]), {}, "item contains None"),
    ((np.array(["a", 1], dtype=object), ["w", "w"], ["x", "y"]), {}, "mix types"),
    (("a", "w", "x"), {}, "items must be a sequence of identifiers"),
    (([["a"]], ["w"], ["x"]), {}, "items must be 1-dimensional"),
    ((["a"], ["w"], ["x"]), dict(item_ids=[]), "non-empty"),
    ((["a"], ["w"], ["x"]), dict(item_ids=["a", "a"], classes=["x", "y"]), "duplicates"),
])
def test_from_table_bad_input(table, kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_table(*table, **kwargs)
