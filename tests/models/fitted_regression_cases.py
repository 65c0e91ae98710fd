"""The fits whose results ``tests/models/test_fitted_regression.py`` compares with values recorded
before the estimator refactoring (issue 26), in ``tests/data/fitted_before_refactor.npz``.

Every EM model fitted at its defaults (with a fixed seed) on every bundled dataset, plus a
few variants that reach the other code paths (restarts, SQUAREM, smoothing, gold items, the
feature models on features drawn with a fixed seed). ``fitted_arrays(case)`` gives the
numbers kept of a fit: the posterior and every numeric fitted attribute (``name_``).

Run ``python tests/models/fitted_regression_cases.py`` to record the file again (only when a change
of the fitted results is intended), or ``python tests/models/fitted_regression_cases.py GLAD MACE``
to record again only the cases whose name starts with one of the given words, keeping every other
recorded array as it is.

Recorded again (issue 28): the ``GLAD*`` and ``MACE*`` cases, when GLAD and MACE came to fit on
their labels in a canonical order (that alone moved ``GLAD/rte`` by up to 6e-9 and
``MACE-accelerate/wsd`` by up to 2e-8, every other case by less than 1e-9) and their default
``fit_class_prior`` changed (GLAD: ``False``, MACE: ``True``); the former defaults are kept
as the ``GLAD-fitted-prior`` and ``MACE-uniform-prior`` cases.

Recorded again (issue 28, row order for every model): ``OneCoinDawidSkene-restarts/anaesthetists``,
``SparseExpertsEM/rte`` and ``SparseExpertsEM/temp``, when every model came to fit on its labels
in the canonical order. Rounding alone: the one-coin run stopped one iteration later (posterior
moved by up to 1e-8, accuracies by 1.3e-9) and the intercepts of the experts that run off to
infinity (about 28) moved by up to 3.3e-7; every other number of these cases by less than 1e-12,
every other case by less than 1e-12.

Recorded again (issue 43): the ``MACE*`` cases, which gained ``thetas_`` (crowd-kit's name for
``strategy_``) and whose EM now updates the trusts on the class alone (an ECM step, see
``MACE``'s Notes) so that it converges in 12 to 125 iterations instead of 16 to 293. Every
case's objective rose (by 8e-8 to 4.7e-3) and no item changed class; posteriors moved by at most
3.1e-3 (rte). Trusts moved by up to 9e-3 except on wsd, where workers whose every label is
right have a flat likelihood in the trust (only ``trust + (1 - trust) * strategy`` on the
diagonal is pinned down) and moved by up to 0.93 with the posterior unchanged (1e-106).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

RECORD = Path(__file__).resolve().parents[1] / "data" / "fitted_before_refactor.npz"
DATASETS = ("bluebirds", "rte", "temp", "wsd", "anaesthetists")
BINARY = ("bluebirds", "rte", "temp")


def _crowd(name):
    from crowdlearn.datasets import load_dataset

    return load_dataset(name).labels


def _features(crowd, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(crowd.n_items, d))


def _binary_features(crowd, d=6, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.random((crowd.n_items, d)) < 0.4).astype(float)


def _gold(crowd, seed=2):
    from crowdlearn.datasets import load_dataset  # noqa: F401

    rng = np.random.default_rng(seed)
    gold = np.full(crowd.n_items, -1)
    rows = rng.choice(crowd.n_items, size=max(2, crowd.n_items // 10), replace=False)
    gold[rows] = rng.integers(0, crowd.n_classes, size=rows.size)
    return gold


def _cases():
    from crowdlearn.aggregation.dawid_skene import DawidSkene
    from crowdlearn.aggregation.glad import GLAD
    from crowdlearn.aggregation.mace import MACE
    from crowdlearn.aggregation.multilabel import MultiLabelDawidSkene, from_quadruples
    from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
    from crowdlearn.aggregation.weighted_vote import ZeroBasedSkill
    from crowdlearn.features.latent_class import LatentClassModel
    from crowdlearn.features.logistic_annotators import LogisticAnnotators
    from crowdlearn.features.sparse_experts import SparseExpertsEM

    cases = {}
    for name in DATASETS:
        cases[f"DawidSkene/{name}"] = lambda c: DawidSkene(random_state=0).fit(c)
        cases[f"OneCoinDawidSkene/{name}"] = lambda c: OneCoinDawidSkene(random_state=0).fit(c)
        cases[f"GLAD/{name}"] = lambda c: GLAD(random_state=0).fit(c)
        cases[f"MACE/{name}"] = lambda c: MACE(random_state=0).fit(c)
        cases[f"ZeroBasedSkill/{name}"] = lambda c: ZeroBasedSkill().fit(c)
        cases[f"MultiLabelDawidSkene/{name}"] = lambda c: MultiLabelDawidSkene(
            random_state=0).fit(from_quadruples(c.item, c.expert, np.zeros_like(c.item),
                                                c.label, n_items=c.n_items,
                                                n_experts=c.n_experts,
                                                n_classes=[c.n_classes]))
    # the other paths: restarts, SQUAREM, smoothing, gold items, features
    cases["DawidSkene-restarts/wsd"] = lambda c: DawidSkene(
        n_init=3, alpha=1.0, accelerate=True, random_state=0).fit(c)
    cases["DawidSkene-gold/temp"] = lambda c: DawidSkene(random_state=0).fit(c, gold=_gold(c))
    cases["DawidSkene-prior/wsd"] = lambda c: DawidSkene(
        confusion_prior=4 * np.eye(c.n_classes) + 1, random_state=0).fit(c)
    cases["DawidSkene-X/bluebirds"] = lambda c: DawidSkene(alpha=1.0, random_state=0).fit(
        c, _binary_features(c))
    cases["OneCoinDawidSkene-restarts/anaesthetists"] = lambda c: OneCoinDawidSkene(
        n_init=3, accelerate=True, random_state=0).fit(c)
    cases["OneCoinDawidSkene-prior/wsd"] = lambda c: OneCoinDawidSkene(
        confusion_prior=4 * np.eye(c.n_classes) + 1, random_state=0).fit(c)
    for name in DATASETS:  # the defaults up to 0.2
        cases[f"GLAD-fitted-prior/{name}"] = lambda c: GLAD(fit_class_prior=True,
                                                             random_state=0).fit(c)
    for name in ("bluebirds", "wsd"):
        cases[f"MACE-uniform-prior/{name}"] = lambda c: MACE(fit_class_prior=False,
                                                              random_state=0).fit(c)
    cases["GLAD-restarts/wsd"] = lambda c: GLAD(n_init=3, random_state=0).fit(c)
    cases["MACE-accelerate/wsd"] = lambda c: MACE(n_init=3, accelerate=True,
                                                   random_state=0).fit(c)
    for name in BINARY:
        cases[f"LogisticAnnotators/{name}"] = lambda c: LogisticAnnotators(
            random_state=0).fit(c, _features(c))
        cases[f"SparseExpertsEM/{name}"] = lambda c: SparseExpertsEM(
            random_state=0).fit(c, _features(c))
    cases["LogisticAnnotators-restarts/bluebirds"] = lambda c: LogisticAnnotators(
        n_init=3, random_state=0).fit(c, _features(c))
    cases["SparseExpertsEM-accelerate/bluebirds"] = lambda c: SparseExpertsEM(
        accelerate=True, n_init=2, random_state=0).fit(c, _features(c))
    cases["LatentClassModel/anaesthetists"] = lambda c: LatentClassModel(
        n_classes=c.n_classes, random_state=0).fit(_first_labels(c))
    cases["LatentClassModel/wsd"] = lambda c: LatentClassModel(
        n_classes=c.n_classes, alpha=1.0, n_init=2, random_state=0).fit(_first_labels(c))
    return cases


def _first_labels(crowd, n_children=5):
    """A categorical matrix from the labels: the first label of the five busiest experts
    per item (``-1`` where they gave none); items with none dropped."""
    busiest = np.argsort(-crowd.labels_per_expert(), kind="stable")[:n_children]
    X = np.full((crowd.n_items, n_children), -1)
    for col, j in enumerate(busiest):
        mine = np.flatnonzero(crowd.expert == j)[::-1]  # the first label wins
        X[crowd.item[mine], col] = crowd.label[mine]
    return X[(X >= 0).any(axis=1)]


CASES = _cases()


def _numbers(value):
    """A float array of a fitted attribute, or None when it is not numeric."""
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, np.ndarray) for v in value):
        return np.concatenate([np.asarray(v, dtype=float).ravel() for v in value])
    if isinstance(value, (bool, np.bool_, int, float, np.integer, np.floating)):
        return np.asarray(float(value))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.astype(float)
    return None


NOT_RECORDED = frozenset({"flat_optimum_", "refit_checked_"})
"""Fitted attributes added after the record, with tests of their own: the fit's flag of a
flat SQUAREM optimum (issue 28; tests/models/test_mace.py, test_row_order.py) and whether the
fitted state was compared with a refit (issue 40; tests/models/test_partial_fit.py)."""


def fitted_arrays(case: str) -> dict:
    """Fit ``case`` and return ``{attribute: float array}`` of its fitted attributes."""
    dataset = case.split("/")[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CASES[case](_crowd(dataset))
    out = {}
    for name, value in sorted(vars(model).items()):
        if name in NOT_RECORDED:
            continue
        if name.endswith("_") and not name.startswith("_") and not name.endswith("ids_"):
            arr = _numbers(value)
            if arr is not None:
                out[name] = arr
    return out


def record(path: Path = RECORD, only: tuple = ()) -> None:
    """Record every case, or with ``only`` the cases whose name starts with one of its
    words (the other recorded arrays are kept as they are)."""
    arrays = {}
    if only:
        with np.load(path) as old:
            arrays = {key: old[key] for key in old.files if not key.startswith(only)}
    cases = [case for case in CASES if not only or case.startswith(only)]
    for case in cases:
        for name, arr in fitted_arrays(case).items():
            arrays[f"{case}:{name}"] = arr
    path.parent.mkdir(exist_ok=True)
    np.savez_compressed(path, **arrays)
    print(f"recorded {len(cases)} fits; {len(arrays)} arrays in {path}")


if __name__ == "__main__":
    import sys

    record(only=tuple(sys.argv[1:]))
