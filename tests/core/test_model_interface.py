"""The small public interface of the models that ``crowdlearn.metrics`` and
``crowdlearn.distributed`` use (``check_is_fitted()``, ``by_id()``, ``params_``,
``prior_counts_``, ``fit_from_counts()``), and that those two use other modules through
public names only (issue 43), never the models' private attributes.

The second is an ast scan of their source: no ``obj._name`` (nor ``getattr(obj, "_name")``)
of a private name that another crowdlearn module defines and their own package does not, and
no ``from crowdlearn.x import _name`` from outside their own package. Their own package's
private names are theirs to use."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import crowdlearn
from crowdlearn import (CrowdLabels, DawidSkene, MajorityVote, NotFittedError,
                        OneCoinDawidSkene)
from crowdlearn.aggregation._ds_kernel import (count_table, label_matrix, log_joint,
                                               majority_start, softmax_rows)
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

PACKAGE = Path(crowdlearn.__file__).parent
SCANNED = ("metrics", "distributed")

# private helpers of crowdlearn.labels the two packages still import: the id encoding is
# leaving labels.py for a module of its own (issue 43, item 4), which gives them public names
LABELS_PENDING = frozenset({"_encode", "_object_kind", "_is_dataframe",
                            "_refuse_duplicate_columns", "_reindex_onto"})
# the public methods of every namedtuple, named with an underscore to keep out of the fields'
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
# private attributes of other libraries' objects, whose names a crowdlearn module also uses
THIRD_PARTY = frozenset({("distributed", "_data")})  # dask wraps the frame of from_pandas
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.AST) -> set:
    """The private names a module defines: functions, classes, assigned names and
    attributes it assigns (``self._x = ...``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if _private(name)}


def _subpackage(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _sources() -> dict:
    return {path: ast.parse(path.read_text(), filename=str(path))
            for path in sorted(PACKAGE.rglob("*.py"))}


def _private_reads(tree: ast.AST, own: set, elsewhere: set, package: str) -> list:
    """``(line, what)`` of every read of another module's private name in ``tree``."""
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ATTRIBUTE_FUNCTIONS and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            name = node.args[1].value
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("crowdlearn"):
            if node.module.split(".")[:2] == ["crowdlearn", package]:
                continue
            for alias in node.names:
                if _private(alias.name) and not (node.module == "crowdlearn.labels"
                                                 and alias.name in LABELS_PENDING):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
            continue
        if name is None or not _private(name) or name in NAMEDTUPLE_API \
                or (package, name) in THIRD_PARTY:
            continue
        if name not in own and name in elsewhere:
            found.append((node.lineno, f".{name}"))
    return found


def _scan(package: str, sources: dict) -> list:
    own, elsewhere = set(), set()
    for path, tree in sources.items():
        (own if _subpackage(path) == package else elsewhere).update(_defined(tree))
    return [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
            for path, tree in sources.items() if _subpackage(path) == package
            for line, what in _private_reads(tree, own, elsewhere, package)]


@pytest.fixture(scope="module")
def sources():
    return _sources()


@pytest.mark.parametrize("package", SCANNED)
def test_no_private_reads_across_modules(package, sources):
    assert any(_subpackage(path) == package for path in sources), f"no crowdlearn.{package}"
    assert _scan(package, sources) == []


def test_the_scan_finds_private_reads():
    """What the scan looks for, on code written like the metrics before issue 43."""
    code = ast.parse(
        "from crowdlearn.aggregation._common import _flat_indices\n"
        "from crowdlearn.labels import _encode\n"
        "from crowdlearn.metrics._resample import _bootstrap\n"
        "def f(model, data):\n"
        "    model._check_fitted()\n"
        "    prior = getattr(model, '_fitted_prior', None)\n"
        "    q = model._log_joint(data, model._params)\n"
        "    return model._own_helper, data._replace(X=None)\n")
    reads = _private_reads(code, own={"_own_helper"},
                           elsewhere={"_check_fitted", "_fitted_prior", "_log_joint",
                                      "_params", "_own_helper"}, package="metrics")
    assert sorted(what for _, what in reads) == [
        "._check_fitted", "._fitted_prior", "._log_joint", "._params",
        "from crowdlearn.aggregation._common import _flat_indices"]


# -- the interface ------------------------------------------------------------------------------
def crowd_frame(seed=0, n_items=60):
    sim = simulate_crowd(n_items, one_coin_confusion([0.85, 0.75, 0.7, 0.6], 3),
                         random_state=seed)
    item, worker, label = sim.labels.to_table()
    frame = pd.DataFrame({"task": [f"t{i:02d}" for i in item],
                          "worker": [f"w{w}" for w in worker],
                          "label": np.array(["a", "b", "c"])[label]})
    return sim.labels, frame


@pytest.mark.parametrize("model", [DawidSkene(), OneCoinDawidSkene(), MajorityVote()])
def test_check_is_fitted(model):
    with pytest.raises(NotFittedError, match="not fitted"):
        model.check_is_fitted()
    labels, _ = crowd_frame()
    model.fit(labels)
    assert model.check_is_fitted() is None


def test_by_id_gives_the_results_form():
    labels, frame = crowd_frame()
    values = np.arange(60.0)
    on_indices = DawidSkene().fit(labels)
    assert on_indices.by_id(values) is values
    on_ids = DawidSkene().fit(frame)
    by_task = on_ids.by_id(values, "task", "score")
    assert isinstance(by_task, pd.Series) and by_task.name == "score"
    assert by_task.index.name == "task" and list(by_task.index[:2]) == ["t00", "t01"]
    pd.testing.assert_index_equal(by_task.index, on_ids.labels_.index)
    by_worker = on_ids.by_id(np.arange(4.0), "worker")
    assert by_worker.index.name == "worker" and list(by_worker.index) == ["w0", "w1", "w2",
                                                                        "w3"]
    with pytest.raises(ValueError, match="by must be"):
        on_ids.by_id(values, "item")


def test_prior_counts_are_those_of_the_fit():
    labels, _ = crowd_frame()
    with pytest.raises(NotFittedError):
        DawidSkene().prior_counts_
    assert DawidSkene(alpha=1.0).fit(labels).prior_counts_ is None
    assert DawidSkene(confusion_prior=np.zeros((3, 3))).fit(labels).prior_counts_ is None
    prior = 4 * np.eye(3) + 1
    counts = DawidSkene(confusion_prior=prior).fit(labels).prior_counts_
    np.testing.assert_array_equal(counts, np.broadcast_to(prior, (4, 3, 3)))
    right, wrong = OneCoinDawidSkene(confusion_prior=prior).fit(labels).prior_counts_
    np.testing.assert_array_equal(right, [15.0] * 4)
    np.testing.assert_array_equal(wrong, [6.0] * 4)


class CountsInMemory:
    """A count source for ``fit_from_counts`` that keeps the labels here, in two blocks of
    items (as a cluster keeps partitions)."""

    def __init__(self, crowd):
        half = crowd.n_items // 2
        self.K, self.J = crowd.n_classes, crowd.n_experts
        self.blocks = [label_matrix(CrowdLabels(*self._rows(crowd, lo, hi)), self.K)
                       for lo, hi in ((0, half), (half, crowd.n_items))]
        self.n_items = crowd.n_items

    @staticmethod
    def _rows(crowd, lo, hi):
        keep = (crowd.item >= lo) & (crowd.item < hi)
        return (crowd.item[keep] - lo, crowd.expert[keep], crowd.label[keep], hi - lo,
                crowd.n_experts, crowd.n_classes)

    def start(self):
        return sum(count_table(vt, majority_start(v, self.J, self.K)) for v, vt in self.blocks)

    def e_step(self, params):
        tables, log_evidence = [], 0.0
        for votes, votes_t in self.blocks:
            q, evidence = softmax_rows(log_joint(votes, params))
            tables.append(count_table(votes_t, q))
            log_evidence += float(evidence.sum())
        return SimpleNamespace(counts=sum(tables)), log_evidence

    def finish(self, params):
        q = np.vstack([softmax_rows(log_joint(votes, params))[0] for votes, _ in self.blocks])
        return dict(posterior=q, sizes=(self.n_items, self.J, self.K),
                    ids=(None, None, None, False), lazy=None)


@pytest.mark.parametrize("model_cls", [DawidSkene, OneCoinDawidSkene])
def test_fit_from_counts_is_the_in_memory_fit(model_cls):
    labels, _ = crowd_frame(seed=3, n_items=80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        in_memory = model_cls(alpha=0.5).fit(labels)
        from_counts = model_cls(alpha=0.5).fit_from_counts(CountsInMemory(labels))
    assert from_counts.n_iter_ == in_memory.n_iter_
    for name in ("posterior_", "confusion_", "class_prior_", "log_likelihood_history_"):
        np.testing.assert_allclose(getattr(from_counts, name), getattr(in_memory, name),
                                   rtol=1e-9, atol=1e-9, err_msg=name)
    with pytest.raises(ValueError, match="alpha"):
        model_cls(alpha=-1.0).fit_from_counts(CountsInMemory(labels))
