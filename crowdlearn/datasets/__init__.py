"""Real crowdsourced label sets, bundled with the package so that everything works offline.

=============== ======= ======= ====== ======= ======================================
name            items   workers labels classes truth
=============== ======= ======= ====== ======= ======================================
bluebirds       108     39      4,212  2       all (Welinder et al. 2010)
rte             800     164     8,000  2       all (Snow et al. 2008)
temp            462     76      4,620  2       all (Snow et al. 2008)
wsd             177     34      1,770  3       all (Snow et al. 2008)
anaesthetists   45      5       315    4       none (Dawid & Skene 1979, Table 1)
=============== ======= ======= ====== ======= ======================================

Each loader returns a :class:`CrowdDataset` whose ``labels`` keep the original
identifiers (built with :func:`~crowdlearn.from_table`) and whose
``truth`` is aligned with the labels' item indices. Identifiers that are all
plain decimal integers in the files are read as integers (so they sort
numerically); the others stay strings. Provenance and licence notes are in
``crowdlearn/datasets/data/<name>/README.md`` (bluebirds also has its
``LICENSE.txt``) and in :attr:`CrowdDataset.description`.

Examples
--------
>>> from crowdlearn.datasets import load_bluebirds
>>> data = load_bluebirds()
>>> data.labels
CrowdLabels(n_items=108, n_experts=39, n_classes=2, n_labels=4212)
>>> data.truth.shape, data.class_ids.tolist()
((108,), [0, 1])
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .._validation import check_int_array
from ..labels import CrowdLabels, from_table

__all__ = [
    "CrowdDataset",
    "DATASETS",
    "load_anaesthetists",
    "load_bluebirds",
    "load_dataset",
    "load_rte",
    "load_temp",
    "load_wsd",
]

_SNOW = ("R. Snow, B. O'Connor, D. Jurafsky and A. Y. Ng, \"Cheap and Fast - But is it Good? "
         "Evaluating Non-Expert Annotations for Natural Language Tasks\", EMNLP 2008")
_SNOW_COPY = ("Copy from GitHub CrowdTruth/CrowdTruth-core, tutorial/data/{}.standardized.csv. "
              "Licence: that repository is Apache-2.0; the original data carry no licence "
              "statement and are widely redistributed for research.")

_DESCRIPTIONS = {
    "bluebirds": (
        "Bluebirds: 108 bird images, 39 workers, 4,212 labels; 2 classes (1 = the image shows an "
        "Indigo Bunting, 0 = it does not); truth for all images. Welinder, Branson, Belongie & "
        "Perona, \"The Multidimensional Wisdom of Crowds\", NeurIPS 2010. Copy from GitHub "
        "welinder/cubam, demo/bluebirds/labels.yaml and gt.yaml. Licence: BSD-3-Clause-Clear "
        "(text in data/bluebirds/LICENSE.txt)."),
    "rte": (
        "RTE: 800 sentence pairs, 164 workers, 8,000 labels; 2 classes (recognising textual "
        "entailment: 1 = the first sentence entails the second); truth for all items. "
        + _SNOW + ". " + _SNOW_COPY.format("rte")),
    "temp": (
        "TEMP: 462 event pairs, 76 workers, 4,620 labels; 2 classes ('after', 'before': "
        "temporal ordering of two events); truth for all items. "
        + _SNOW + ". " + _SNOW_COPY.format("temp")),
    "wsd": (
        "WSD: 177 word occurrences, 34 workers, 1,770 labels; 3 classes (word-sense "
        "disambiguation, senses 1, 2, 3); truth for all items. "
        + _SNOW + ". " + _SNOW_COPY.format("wsd")),
    "anaesthetists": (
        "Anaesthetists: 45 patients, 5 observers, 315 labels; 4 classes (fitness for "
        "anaesthesia, 1 to 4); no truth. Observer 1 rated every patient three times, so some "
        "(patient, observer) pairs repeat. Dawid & Skene, \"Maximum likelihood estimation of "
        "observer error-rates using the EM algorithm\", Applied Statistics 28(1), 1979, "
        "Table 1. Copy from GitHub dallascard/dawid_skene (MIT), generate_sample_data(); the "
        "1979 table is published data."),
}

DATASETS = ("bluebirds", "rte", "temp", "wsd", "anaesthetists")
"""Names accepted by :func:`load_dataset`."""


@dataclass(frozen=True, eq=False)
class CrowdDataset:
    """A real crowd: its labels, the truth where known, and where it comes from.

    Attributes
    ----------
    name : str
    labels : CrowdLabels
        The labels, with the original identifiers in ``item_ids``,
        ``expert_ids`` and ``class_ids``.
    truth : ndarray of int, shape (n_items,), or None
        True class index of each item (aligned with ``labels.item``); ``-1``
        where an item's truth is unknown; ``None`` when no truth is known.
    description : str
        What the data are, the original study, where the copy comes from, the licence.
    """

    name: str
    labels: CrowdLabels
    truth: np.ndarray | None
    description: str

    @property
    def item_ids(self) -> np.ndarray:
        """Original item identifiers, one per item index."""
        return self.labels.item_ids

    @property
    def expert_ids(self) -> np.ndarray:
        """Original worker identifiers, one per expert index."""
        return self.labels.expert_ids

    @property
    def class_ids(self) -> np.ndarray:
        """Original class identifiers, one per class index."""
        return self.labels.class_ids

    @property
    def n_items(self) -> int:
        return self.labels.n_items

    @property
    def n_experts(self) -> int:
        return self.labels.n_experts

    @property
    def n_labels(self) -> int:
        return self.labels.n_labels

    @property
    def n_classes(self) -> int:
        return self.labels.n_classes

    @property
    def has_truth(self) -> np.ndarray:
        """Boolean mask of the items whose truth is known, shape ``(n_items,)``."""
        if self.truth is None:
            return np.zeros(self.n_items, dtype=bool)
        return self.truth >= 0

    def accuracy(self, predicted) -> float:
        """Fraction of the items with known truth whose predicted class index is right."""
        if self.truth is None:
            raise ValueError(f"dataset {self.name!r} has no truth to compare with")
        predicted = check_int_array(predicted, "predicted", allow_empty=True)  # no NaN
        if predicted.shape != (self.n_items,):
            raise ValueError(f"predicted must have shape ({self.n_items},), got {predicted.shape}")
        known = self.has_truth
        return float(np.mean(predicted[known] == self.truth[known]))

    def __repr__(self) -> str:
        truth = "none" if self.truth is None else f"{int(self.has_truth.sum())} items"
        return (f"CrowdDataset(name={self.name!r}, n_items={self.n_items}, "
                f"n_experts={self.n_experts}, n_classes={self.n_classes}, "
                f"n_labels={self.n_labels}, truth={truth})")


_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _ids(column: list[str]) -> np.ndarray:
    """Integers when every identifier is a plain decimal integer, strings otherwise."""
    if column and all(_INT.match(v) for v in column):
        return np.array([int(v) for v in column], dtype=np.int64)
    return np.array(column, dtype=str)


def _read_csv(name: str, filename: str, header: tuple) -> list[list[str]] | None:
    path = resources.files(__name__) / "data" / name / filename
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or tuple(c.strip() for c in rows[0]) != header:
        raise ValueError(f"{name}/{filename}: expected the header {','.join(header)}, "
                         f"got {rows[0] if rows else 'an empty file'}")
    body = [[c.strip() for c in r] for r in rows[1:] if r]
    bad = [i + 2 for i, r in enumerate(body) if len(r) != len(header)]
    if bad:
        raise ValueError(f"{name}/{filename}: line(s) {bad[:5]} do not have {len(header)} fields")
    return body


def load_dataset(name: str) -> CrowdDataset:
    """Load one of the bundled data sets by name (see :data:`DATASETS`).

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`DATASETS`.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; available: {', '.join(DATASETS)}")
    rows = _read_csv(name, "labels.csv", ("item", "worker", "label"))
    truth_rows = _read_csv(name, "truth.csv", ("item", "label")) or []
    if not rows:
        raise ValueError(f"{name}/labels.csv holds no label")
    items, workers = _ids([r[0] for r in rows]), _ids([r[1] for r in rows])
    # labels and true classes are read together, so that they get the same type and a
    # class only the truth uses still gets an index
    all_classes = _ids([r[2] for r in rows] + [r[1] for r in truth_rows])
    labels, truth_classes = all_classes[:len(rows)], all_classes[len(rows):]
    crowd = from_table(items, workers, labels, classes=np.unique(all_classes))
    truth = None
    if truth_rows:
        item_index = {v: i for i, v in enumerate(crowd.item_ids.tolist())}
        class_index = {v: k for k, v in enumerate(crowd.class_ids.tolist())}
        truth = np.full(crowd.n_items, -1, dtype=np.intp)
        truth_items = _ids([r[0] for r in truth_rows])
        for item, label in zip(truth_items.tolist(), truth_classes.tolist()):
            i = item_index.get(item)
            if i is not None:  # truth for an item nobody labelled is not kept
                truth[i] = class_index[label]
    return CrowdDataset(name, crowd, truth, _DESCRIPTIONS[name])


def load_bluebirds() -> CrowdDataset:
    """Bluebirds (Welinder et al. 2010): 108 images, 39 workers, 4,212 labels, 2 classes."""
    return load_dataset("bluebirds")


def load_rte() -> CrowdDataset:
    """RTE (Snow et al. 2008): 800 items, 164 workers, 8,000 labels, 2 classes."""
    return load_dataset("rte")


def load_temp() -> CrowdDataset:
    """TEMP (Snow et al. 2008): 462 items, 76 workers, 4,620 labels, 2 classes."""
    return load_dataset("temp")


def load_wsd() -> CrowdDataset:
    """WSD (Snow et al. 2008): 177 items, 34 workers, 1,770 labels, 3 classes."""
    return load_dataset("wsd")


def load_anaesthetists() -> CrowdDataset:
    """Dawid & Skene (1979) Table 1: 45 patients, 5 observers, 315 labels, 4 classes, no truth."""
    return load_dataset("anaesthetists")
