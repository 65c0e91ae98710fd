"""Tests of the bundled real data sets (crowdlearn.datasets)."""

import csv
from importlib import resources

import numpy as np
import pytest

from crowdlearn.datasets import (DATASETS, CrowdDataset, load_anaesthetists, load_bluebirds,
                                 load_dataset, load_rte, load_temp, load_wsd)
from crowdlearn.labels import CrowdLabels

# the table of the data sets' README: items, workers, labels, classes, truth known
EXPECTED = {
    "bluebirds": (108, 39, 4212, 2, True),
    "rte": (800, 164, 8000, 2, True),
    "temp": (462, 76, 4620, 2, True),
    "wsd": (177, 34, 1770, 3, True),
    "anaesthetists": (45, 5, 315, 4, False),
}
LOADERS = {"bluebirds": load_bluebirds, "rte": load_rte, "temp": load_temp, "wsd": load_wsd,
           "anaesthetists": load_anaesthetists}


def data_dir(name):
    return resources.files("crowdlearn.datasets") / "data" / name


def test_dataset_names():
    assert set(DATASETS) == set(EXPECTED) == set(LOADERS)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_sizes_match_the_readme(name):
    n_items, n_workers, n_labels, n_classes, has_truth = EXPECTED[name]
    data = LOADERS[name]()
    assert isinstance(data, CrowdDataset) and data.name == name
    assert isinstance(data.labels, CrowdLabels)
    assert (data.n_items, data.n_experts, data.n_labels, data.n_classes) == \
        (n_items, n_workers, n_labels, n_classes)
    assert data.labels.n_items == n_items and data.labels.n_labels == n_labels
    assert len(data.item_ids) == n_items and len(data.expert_ids) == n_workers
    assert len(data.class_ids) == n_classes
    assert (data.labels.labels_per_item() > 0).all()
    assert (data.labels.labels_per_expert() > 0).all()
    assert data.description and name.lower() in data.description.lower()
    if has_truth:
        assert data.truth.shape == (n_items,) and data.truth.dtype.kind == "i"
        assert data.has_truth.all()
        assert ((data.truth >= 0) & (data.truth < n_classes)).all()
    else:
        assert data.truth is None and not data.has_truth.any()


@pytest.mark.parametrize("name", list(EXPECTED))
def test_labels_and_truth_match_the_csv_files(name):
    data = load_dataset(name)
    with (data_dir(name) / "labels.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    items, workers, labels = data.labels.to_table()
    assert [str(v) for v in items] == [r["item"] for r in rows]
    assert [str(v) for v in workers] == [r["worker"] for r in rows]
    assert [str(v) for v in labels] == [r["label"] for r in rows]
    if data.truth is not None:
        with (data_dir(name) / "truth.csv").open(newline="", encoding="utf-8") as fh:
            truth = {r["item"]: r["label"] for r in csv.DictReader(fh)}
        got = {str(i): str(data.class_ids[k]) for i, k in zip(data.item_ids, data.truth)}
        assert got == truth


def test_identifiers_are_kept():
    birds = load_bluebirds()
    assert birds.item_ids.dtype.kind == "i" and 11573 in birds.item_ids.tolist()
    assert birds.class_ids.tolist() == [0, 1]
    temp = load_temp()
    assert temp.class_ids.tolist() == ["after", "before"]
    i = temp.item_ids.tolist().index("100_1")
    assert temp.class_ids[temp.truth[i]] == "before"
    rte = load_rte()
    assert "A2K5ICP43ML4PW" in rte.expert_ids.tolist()
    assert rte.item_ids.tolist() == sorted(rte.item_ids.tolist())     # numeric order
    assert load_wsd().class_ids.tolist() == [1, 2, 3]


def test_anaesthetists_has_repeated_labels():
    data = load_anaesthetists()
    pairs = data.labels.item * data.n_experts + data.labels.expert
    assert np.unique(pairs).size == 45 * 5
    assert data.labels.labels_per_expert().tolist() == [135, 45, 45, 45, 45]
    with pytest.raises(ValueError, match="more than once"):
        data.labels.to_dense()
    with pytest.raises(ValueError, match="no truth"):
        data.accuracy(np.zeros(45, dtype=int))


def test_accuracy_helper():
    data = load_wsd()
    assert data.accuracy(data.truth) == 1.0
    with pytest.raises(ValueError, match="shape"):
        data.accuracy(data.truth[:-1])


def test_loaders_return_fresh_objects():
    a, b = load_bluebirds(), load_bluebirds()
    a.truth[:] = 0
    assert b.truth.sum() > 0


@pytest.mark.parametrize("name", list(EXPECTED))
def test_provenance_files_are_bundled(name):
    readme = (data_dir(name) / "README.md").read_text(encoding="utf-8")
    assert "Licence" in readme and "Original study" in readme
    if name == "bluebirds":
        assert "BSD" in readme
        assert "Peter Welinder" in (data_dir(name) / "LICENSE.txt").read_text(encoding="utf-8")


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'birds'; available: bluebirds"):
        load_dataset("birds")
