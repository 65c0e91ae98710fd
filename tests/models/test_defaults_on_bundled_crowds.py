"""Issue 43: a default fit converges without a warning on every bundled crowd and is at least
as accurate as crowd-kit 1.4.2's same model at its defaults (the share of items right, from
benchmarks/bench_crowdkit_accuracy.py; anaesthetists has no truth). MACE, whose test also
covers tight tolerances, is in test_mace.py."""

from __future__ import annotations

import warnings

import pytest

from crowdlearn import GLAD, DawidSkene, OneCoinDawidSkene
from crowdlearn.datasets import load_dataset

CROWDKIT = {
    DawidSkene: {"bluebirds": 96 / 108, "rte": 742 / 800, "temp": 435 / 462, "wsd": 176 / 177},
    OneCoinDawidSkene: {"bluebirds": 63 / 108, "rte": 740 / 800, "temp": 434 / 462,
                        "wsd": 176 / 177},
    GLAD: {"bluebirds": 78 / 108, "rte": 740 / 800, "temp": 432 / 462, "wsd": 176 / 177},
}
CASES = [(model, name) for model in CROWDKIT
         for name in ("anaesthetists", "bluebirds", "rte", "temp", "wsd")]


@pytest.mark.parametrize("model, name", CASES,
                         ids=[f"{m.__name__}-{n}" for m, n in CASES])
def test_default_fit_converges_without_warning_on_bundled_crowds(model, name):
    data = load_dataset(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = model().fit(data.labels)
    assert fitted.converged_ and fitted.n_iter_ < 100
    if name in CROWDKIT[model]:
        assert data.accuracy(fitted.predict()) >= CROWDKIT[model][name] - 1e-9
