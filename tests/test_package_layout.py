"""The package's folders (issue 17): every public name imports as before, the 0.1 module
paths still work (the same module objects, with a DeprecationWarning), and no model module
imports another model module's private names."""

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import crowdlearn
from crowdlearn import _moved

PACKAGE = Path(crowdlearn.__file__).parent
MODEL_FOLDERS = ("aggregation", "features")

# every name crowdlearn 0.1 exported at the top level
OLD_PUBLIC = """BernoulliNaiveBayes ConvergenceWarning CrowdLabels DegenerateFitWarning DawidSkene
EMResult EMState LatentClassModel LogisticAnnotators MajorityVote MajorityVoteLogistic
MultiCrowdLabels MultiLabelDawidSkene NotFittedError OneCoinDawidSkene SizeLimits
SparseExpertsEM as_crowd_labels as_multi_labels datasets expected_surrogate_risk experiments
fit_em model_selection from_dense from_dense_multi from_quadruples from_table from_triples
get_size_limits run_em select_by_surrogate select_penalty set_size_limits simulate
simulate_annotators simulate_sparse size_limits sparse_experts_path surrogate_risk symbolic
true_risk widgets widgets_annotators GLAD MACE Wawa WeightedMajorityVote ZeroBasedSkill
krippendorff_alpha posterior_entropy worker_quality_intervals agreement from_dataframe""".split()


@pytest.mark.parametrize("name", OLD_PUBLIC)
def test_every_public_name_still_imports(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert getattr(crowdlearn, name) is not None


@pytest.mark.parametrize("old, new", sorted(_moved.OLD_TO_NEW.items()))
def test_old_module_paths_alias_the_new_modules_with_a_warning(old, new):
    # in a fresh interpreter, so the warning is not swallowed by an earlier import
    code = (f"import warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
            f"import crowdlearn, importlib\n"
            f"try:\n    importlib.import_module({old!r})\nexcept DeprecationWarning as w:\n"
            f"    assert {new!r} in str(w), w\nelse:\n    raise SystemExit('no warning')\n"
            f"warnings.simplefilter('ignore', DeprecationWarning)\n"
            f"assert importlib.import_module({old!r}) is importlib.import_module({new!r})\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_public_api_has_no_deprecation_warning():
    code = ("import warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
            "import crowdlearn\n"
            "for name in crowdlearn.__all__:\n    getattr(crowdlearn, name)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _private_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield node.module, alias.name


def test_no_model_imports_another_models_private_names():
    models = {f"crowdlearn.{folder}.{p.stem}"
              for folder in MODEL_FOLDERS for p in (PACKAGE / folder).glob("[!_]*.py")}
    offences = []
    for folder in MODEL_FOLDERS:
        for path in (PACKAGE / folder).glob("*.py"):
            me = f"crowdlearn.{folder}.{path.stem}"
            for module, name in _private_imports(path):
                if module in models and module != me:
                    offences.append(f"{me} imports {module}.{name}")
    assert not offences, offences


def test_folders_hold_what_the_api_page_says():
    for folder in ("aggregation", "features", "_solvers", "simulate", "widgets", "classroom",
                   "distributed", "datasets"):
        assert (PACKAGE / folder / "__init__.py").is_file(), folder
    assert (PACKAGE / "widgets" / "static" / "crowd_em.js").is_file()
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 16, flat  # the ground, not 27 modules side by side


def test_paths_the_classroom_reads_still_point_where_they_should():
    from crowdlearn.classroom import kit, policy

    # the policy's list of package internals is read from the whole package, every folder
    private = policy._package_private_names()
    assert {"_flat_indices", "_m_step", "_orient_by_vote", "_q_and_grad"} <= private
    assert (kit.ROOT / "pyproject.toml").is_file()  # the kit is built from the checkout
    assert (kit.ROOT / "book" / "assignments").is_dir()


def _estimators():
    from crowdlearn._base import BaseEstimator

    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    import crowdlearn.features.sparse_experts  # noqa: F401  (MajorityVoteLogistic)
    return sorted({c for c in walk(BaseEstimator) if not c.__name__.startswith("_")
                   and c.__module__ != "crowdlearn._base"},  # not the bases themselves
                  key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _estimators(), ids=lambda c: c.__name__)
def test_constructors_store_exactly_their_parameters(cls):
    """``__init__`` stores its arguments through ``_store_params(locals())``: the parameter
    names come from its signature alone (no list of them kept by hand), and every one
    round-trips."""
    import inspect

    names = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    assert "_param_names" not in vars(cls)
    model = cls()
    assert list(model.get_params()) == names
    marker = object()
    for name in names:
        assert getattr(cls(**{name: marker}), name) is marker


def test_em_label_models_share_one_fit_and_one_predict():
    """Every EM model of crowd labels runs ``fit`` through ``EMFitter._fit`` (check -> data ->
    engine -> fitted attributes) and gets ``predict``/``fit_predict`` from ``EMEstimator``,
    with the argument order ``(labels, X=None)``; none writes its own copy."""
    import inspect

    from crowdlearn import GLAD, MACE, DawidSkene, LatentClassModel, OneCoinDawidSkene
    from crowdlearn._base import EMEstimator, EMFitter
    from crowdlearn.aggregation.multilabel import MultiLabelDawidSkene

    for cls in (DawidSkene, OneCoinDawidSkene, GLAD, MACE, MultiLabelDawidSkene):
        assert issubclass(cls, EMEstimator), cls
        assert "fit_predict" not in vars(cls), cls
        own_predict = "predict" in vars(cls)
        assert not own_predict or cls is MultiLabelDawidSkene  # (n_items, n_targets): axis 2
        params = list(inspect.signature(cls.predict_proba).parameters)
        assert params[1:3] == ["labels", "X"], (cls, params)
    assert issubclass(LatentClassModel, EMFitter)
