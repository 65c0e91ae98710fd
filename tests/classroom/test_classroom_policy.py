"""crowdlearn.classroom.policy: the static audit of submissions and the checks' helpers.

* the instructor version of every assignment is clean (no false positive);
* a submission that calls the package's reference implementation instead of the student's own
  code has that task's checks flagged, with a reason naming what it used -- however the
  package is reached (alias, getattr, importlib, a name only a check cell binds, a private
  method, a callback, a tainted helper);
* a submission that monkeypatches numpy (or the builtins, or the checks' helpers) has every
  later check flagged;
* what the assignment allows (simulators, the model it asks to fit) is not flagged, nor is
  debugging in an added cell; hostile input never raises;
* ``checks`` keeps numpy's original behaviour after the student rebinds ``np.allclose``.

Fast: nothing is executed except one assignment's cells in the last test.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from support import BOOK

jupytext = pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")

from crowdlearn.classroom import policy  # noqa: E402
from crowdlearn.classroom import replace_solution  # noqa: E402

SOURCE = BOOK / "assignments"
ASSIGNMENTS = ["a1_naive_bayes_mle", "a2_dawid_skene_by_hand", "a3_smoothing_map",
               "a4_logistic_gradients", "a5_choosing_penalty"]
ALL_ASSIGNMENTS = sorted(p.stem for p in SOURCE.glob("a[0-9]*.md"))


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


@pytest.fixture(scope="module")
def notebooks():
    return {name: jupytext.read(SOURCE / f"{name}.md") for name in ALL_ASSIGNMENTS}


def checks_after(nb, grade_id, until=None):
    """grade_ids of the autograded checks after cell ``grade_id`` (up to cell ``until``)."""
    out, on = [], False
    for cell in nb.cells:
        meta = _meta(cell)
        if until is not None and meta.get("grade_id") == until:
            break
        if on and meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            out.append(meta["grade_id"])
        if meta.get("grade_id") == grade_id:
            on = True
    return out


def checks_before(nb, grade_id):
    out = []
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("grade_id") == grade_id:
            return out
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            out.append(meta["grade_id"])
    return out


def task_checks(nb, grade_id):
    """The checks between solution cell ``grade_id`` and the next solution code cell."""
    out, on = [], False
    for cell in nb.cells:
        meta = _meta(cell)
        if on and meta.get("solution") and cell.cell_type == "code":
            break
        if on and meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            out.append(meta["grade_id"])
        if meta.get("grade_id") == grade_id:
            on = True
    return out


# -- no false positives ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_ASSIGNMENTS)
def test_instructor_version_is_clean(notebooks, name):
    assert policy.flagged_checks(notebooks[name], name) == {}
    # also when the cells are trusted by their metadata alone (no instructor version at hand)
    assert policy.flagged_checks(notebooks[name], name, instructor=False) == {}


@pytest.mark.parametrize("name", ALL_ASSIGNMENTS)
def test_released_version_is_clean(notebooks, name):
    """The blank notebook (stubs that raise NotImplementedError, template code around them,
    such as a function's ``return prior, feature_prob``) is not cheating."""
    from crowdlearn.classroom import student_source

    blank = copy.deepcopy(notebooks[name])
    for cell in blank.cells:
        if _meta(cell).get("solution") and cell.cell_type == "code":
            cell.source = student_source(cell.source)
    assert policy.flagged_checks(blank, name) == {}
    assert policy.flagged_checks(blank, name, instructor=False) == {}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_assignment_binds_the_check_helpers_before_any_solution(notebooks, name):
    nb = notebooks[name]
    ids = [_meta(c).get("grade_id") for c in nb.cells]
    first_solution = next(i for i, c in enumerate(nb.cells) if _meta(c).get("solution"))
    helpers = ids.index("check_helpers")
    assert helpers < first_solution
    assert _meta(nb.cells[helpers]) == {"grade": False, "grade_id": "check_helpers",
                                        "locked": True, "schema_version": 3,
                                        "solution": False, "task": False}
    assert "from crowdlearn.classroom.policy import checks as _checks" in \
        nb.cells[helpers].source
    for cell in nb.cells:
        if _meta(cell).get("grade") and cell.cell_type == "code":
            for bare in ("np.allclose(", "np.isclose(", "np.testing.assert_allclose(",
                         "math.isclose("):
                assert bare not in cell.source, (_meta(cell)["grade_id"], bare)


# -- calls the package ----------------------------------------------------------------------------
CALLS_THE_PACKAGE = [
    # (assignment, solution cell, code, a phrase the reason must contain)
    ("a1_naive_bayes_mle", "prior_derivation", """
        from crowdlearn import symbolic
        ref = symbolic.lagrange_categorical(N)
        lagrangian = sum(n_y * sp.log(p) for n_y, p in zip(n, phi)) + lam * (1 - sum(phi))
        phi_hat = {p: ref.solution[t].subs(dict(zip(ref.symbols["c"], n)))
                   for p, t in zip(phi, ref.symbols["theta"])}
        lam_hat = sum(n)
        """, "crowdlearn.symbolic"),
    ("a1_naive_bayes_mle", "estimator", """
        from crowdlearn import BernoulliNaiveBayes
        model = BernoulliNaiveBayes(alpha=0).fit(X, W)
        prior, feature_prob = model.class_prior_, model.feature_prob_
        """, "BernoulliNaiveBayes"),
    ("a2_dawid_skene_by_hand", "m_step", """
        from crowdlearn import DawidSkene
        states = []
        DawidSkene(n_classes=K, alpha=0,
                   callback=lambda s: states.append(s.params) or True).fit(Y)
        class_prior, confusion = states[0].class_prior, states[0].confusion
        """, "DawidSkene"),
    ("a2_dawid_skene_by_hand", "e_step", """
        import crowdlearn
        model = crowdlearn.DawidSkene(n_classes=len(class_prior))
        Q = model._e_step(model._read_labels(Y, None, None), (class_prior, confusion))
        """, "DawidSkene"),
    ("a3_smoothing_map", "shrunk_m_step", """
        from crowdlearn.aggregation.dawid_skene import expected_counts, m_step
        counts, class_counts = expected_counts(Y, Q)
        prior = kappa * counts.sum(axis=0) / counts.sum(axis=(0, 2))[:, None]
        class_prior = m_step(counts, class_counts, alpha=a).class_prior
        confusion = m_step(counts, class_counts, confusion_prior=prior).confusion
        """, "crowdlearn.aggregation.dawid_skene"),
    ("a4_logistic_gradients", "crowd_gradient", """
        from crowdlearn._solvers.logistic import weighted_logistic_objective
        q = mu[item]
        _, g_W, g_1 = weighted_logistic_objective(W, -G[:, 1], X[item], label, q, l2=l2,
                                                  groups=annotator, n_groups=R)
        return g_W, np.column_stack([0 * g_1, -g_1])
        """, "crowdlearn._solvers.logistic"),
    ("a5_choosing_penalty", "surrogate", """
        from crowdlearn.selection import surrogate_risk
        return surrogate_risk(pred, Y)
        """, "surrogate_risk"),
    ("a5_choosing_penalty", "risks", """
        from crowdlearn import true_risk
        risks = np.array([true_risk(m.predict(X=X_test), truth_test) for m in models])
        """, "true_risk"),
]


@pytest.mark.parametrize("name,cell,code,phrase", CALLS_THE_PACKAGE,
                         ids=[f"{c[0][:2]}-{c[1]}" for c in CALLS_THE_PACKAGE])
def test_calling_the_package_flags_the_task(notebooks, name, cell, code, phrase):
    nb = notebooks[name]
    flagged = policy.flagged_checks(replace_solution(nb, cell, code), name)
    expected = task_checks(nb, cell)
    assert expected, f"no check follows {cell}"
    assert set(expected) <= set(flagged), (expected, flagged)
    assert not set(checks_before(nb, cell)) & set(flagged), "an earlier task was flagged"
    for gid in expected:
        assert phrase in flagged[gid] and repr(cell) in flagged[gid], flagged[gid]
        assert flagged[gid].endswith("."), "one sentence"


A1_ESTIMATOR_CHEATS = {
    "alias": "import crowdlearn as c\nm = c.naive_bayes.BernoulliNaiveBayes(alpha=0)",
    "alias_assignment": "import crowdlearn\nc = crowdlearn\nm = c.BernoulliNaiveBayes(alpha=0)",
    "submodule_alias": "import crowdlearn.features.naive_bayes as nbm\nm = nbm.BernoulliNaiveBayes()",
    "getattr_constant": "import crowdlearn\nm = getattr(crowdlearn, 'BernoulliNaiveBayes')",
    "getattr_computed": "import crowdlearn\nm = getattr(crowdlearn, 'sym' + 'bolic')",
    "importlib": "import importlib\nm = importlib.import_module('crowdlearn.symbolic')",
    "from_importlib": "from importlib import import_module\nm = import_module('crowdlearn')",
    "__import__": "m = __import__('crowdlearn').symbolic",
    "exec": "exec('from crowdlearn import symbolic')",
    "eval": "m = eval('__imp' + 'ort__(\"crowdlearn\")')",
    "compile": "code = compile('1', 'x', 'eval')",
    "globals": "m = globals()['Bernoulli' + 'NaiveBayes']",
    "check_only_name": "m = BernoulliNaiveBayes(alpha=0)",  # imported by a later check cell
    "check_result": "m = reference.numeric",  # bound by check_prior from crowdlearn.symbolic
    "star_import": "from crowdlearn import *",
    "private_module": "from crowdlearn._solvers.logistic import weighted_logistic_objective as f",
    "dunder": "m = np.__dict__",
    "sys_modules": "import sys\nm = sys.modules['crowdlearn.symbolic']",
    "ipython_magic": "%time m = BernoulliNaiveBayes(alpha=0)",
    "shell_escape": "!python -c 'import crowdlearn'",
    "get_ipython": "get_ipython().run_cell('from crowdlearn import symbolic')",
    "sympify_code": "m = sp.sympify('__import__(\"crowdlearn\")')",
    "pickle": "import pickle\nm = pickle.loads(b'')",
    "os_system": "import os\nos.system('cp /dev/null x')",
    "policy_module": "import crowdlearn.classroom.policy as cp\nm = cp.checks",
}


@pytest.mark.parametrize("variant", sorted(A1_ESTIMATOR_CHEATS))
def test_aliases_and_dynamic_tricks_are_flagged(notebooks, variant):
    name = "a1_naive_bayes_mle"
    nb = notebooks[name]
    code = A1_ESTIMATOR_CHEATS[variant] + "\nprior, feature_prob = W.sum(0), W.T @ X"
    flagged = policy.flagged_checks(replace_solution(nb, "estimator", code), name)
    assert set(task_checks(nb, "estimator")) <= set(flagged), (variant, flagged)
    assert "check_prior" not in flagged


def test_tainted_names_flag_the_tasks_that_use_them(notebooks):
    """Task 4 composes Task 2's m_step: if m_step calls the package, Task 4 is flagged too;
    so is a task that uses a module-level helper an added cell built on the package."""
    name = "a2_dawid_skene_by_hand"
    nb = notebooks[name]
    sub = replace_solution(nb, "m_step", """
        from crowdlearn import DawidSkene
        fit = DawidSkene(n_classes=K, alpha=0).fit(Y)
        class_prior, confusion = fit.class_prior_, fit.confusion_
        """)
    flagged = policy.flagged_checks(sub, name)
    assert set(task_checks(nb, "m_step")) <= set(flagged)
    assert "m_step" in flagged["check_one_iteration"]
    assert not set(task_checks(nb, "e_step")) & set(flagged)  # Task 3 does not use it

    sub = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(sub.cells) if _meta(c).get("grade_id") == "data") + 1
    sub.cells.insert(at, nbformat.v4.new_code_cell(
        "import crowdlearn as cl\n\n\ndef package_posterior(Y):\n"
        "    return cl.DawidSkene(n_classes=3).fit(Y).posterior_\n"))
    sub = replace_solution(sub, "one_iteration", "Q0 = soft_majority_vote(Y_small, K)\n"
                                                 "Q1 = package_posterior(Y_small)")
    flagged = policy.flagged_checks(sub, name)
    assert "package_posterior" in flagged["check_one_iteration"]
    assert set(task_checks(nb, "majority")) <= set(flagged)  # the added cell's own task
    assert not set(task_checks(nb, "e_step")) & set(flagged)


def test_a_check_cells_helper_is_a_reference(notebooks):
    """a4's check cell defines the model's term (``_model_E``); label_gradient() must not use
    it."""
    name = "a4_logistic_gradients"
    sub = replace_solution(notebooks[name], "sympy_gradients",
                           "return {p: sp.diff(_model_E(y), p) for p in PARAMETERS}")
    flagged = policy.flagged_checks(sub, name)
    assert "check_sympy_gradients" in flagged and "_model_E" in flagged[
        "check_sympy_gradients"]


def test_an_added_cell_is_audited(notebooks):
    name = "a3_smoothing_map"
    nb = copy.deepcopy(notebooks[name])
    at = next(i for i, c in enumerate(nb.cells) if _meta(c).get("grade_id") == "newcomer")
    nb.cells.insert(at, nbformat.v4.new_code_cell(
        "from crowdlearn import DawidSkene\nfit = DawidSkene(n_classes=3, alpha=1).fit(Y_new)"))
    flagged = policy.flagged_checks(nb, name)
    assert set(flagged) == {"check_newcomer_rows", "check_newcomer_posterior"}, flagged
    assert all("an added cell" in why for why in flagged.values())


def test_an_edited_locked_cell_is_audited(notebooks):
    """A student who hides the patch in the (locked) setup cell is caught too."""
    name = "a5_choosing_penalty"
    nb = copy.deepcopy(notebooks[name])
    setup = next(c for c in nb.cells if _meta(c).get("grade_id") == "setup")
    setup.source += "\nnp.isclose = lambda *a, **k: True\n"
    flagged = policy.flagged_checks(nb, name)
    assert set(flagged) == set(checks_after(nb, "setup"))


# -- monkeypatching -------------------------------------------------------------------------------
MONKEYPATCHES = {
    "np.allclose": "np.allclose = lambda *a, **k: True",
    "numpy.testing": "import numpy\nnumpy.testing.assert_allclose = lambda *a, **k: None",
    "math.isclose": "import math\nmath.isclose = lambda *a, **k: True",
    "setattr": "setattr(np, 'all' + 'close', lambda *a, **k: True)",
    "del": "del np.isclose",
    "builtins": "import builtins\nbuiltins.isinstance = lambda *a: True",
    "__builtins__": "__builtins__.isinstance = lambda *a: True",
    "sys.modules": "import sys\nsys.modules['numpy'] = None",
    "globals": "globals()['np'] = None",
    "rebind_np": "np = None",
    "rebind_builtin": "def isinstance(*a):\n    return True",
    "checks": "_checks = np",
    "checks_attr": "object.__setattr__(_checks, 'allclose', lambda *a: True)",
    "type_patch": "type(np.float64(1)).__eq__ = lambda *a: True",
    "in_a_function": "def f():\n    np.allclose = lambda *a, **k: True\nf()",
    "through_a_parameter": "def patch(m):\n    m.allclose = lambda *a, **k: True\n"
                           "patch(np)",
    "through_a_container": "box = [np]\nbox[0].allclose = lambda *a, **k: True",
    "through_an_alias": "m = np\nm.allclose = lambda *a, **k: True",
    "through_a_class": "class Box:\n    m = np\nBox.m.allclose = lambda *a, **k: True",
    "lying_class": "class Zero:\n    def __sub__(self, other):\n        return 0\n"
                   "    __rsub__ = __sub__\nbernoulli_objective = Zero()",
    "type_3_args": "Zero = type('Zero', (), {'__eq__': lambda *a: True})",
    "mock": "from unittest import mock\nmock.patch.object(np, 'allclose').start()",
    "pytest_monkeypatch": "import pytest\npytest.MonkeyPatch().setattr(np, 'allclose', len)",
    "bare_setattr": "f = setattr\nf(np, 'allclose', len)",
    "warnings": "import warnings\nwarnings.showwarning = print",
}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_monkeypatching_numpy_with_zero_answers_flags_every_later_check(notebooks, name):
    nb = notebooks[name]
    first = next(_meta(c)["grade_id"] for c in nb.cells if _meta(c).get("solution")
                 and c.cell_type == "code")
    sub = replace_solution(nb, first, "np.allclose = lambda *a, **k: True\n"
                                      + _zero_answer(name))
    flagged = policy.flagged_checks(sub, name)
    assert set(flagged) == set(checks_after(nb, first)), flagged
    assert all("np.allclose" in why for why in flagged.values())


def _zero_answer(name):
    return {"a1_naive_bayes_mle": "lagrangian = lam_hat = 0\nphi_hat = {p: 0 for p in phi}",
            "a2_dawid_skene_by_hand": "Q0 = np.zeros((len(Y), K))",
            "a3_smoothing_map": "log_posterior = 0\ntheta_map = {t: 0 for t in theta}",
            "a4_logistic_gradients": "return 0",
            "a5_choosing_penalty": "return 0.0"}[name]


@pytest.mark.parametrize("variant", sorted(MONKEYPATCHES))
def test_monkeypatch_variants_are_flagged(notebooks, variant):
    name = "a1_naive_bayes_mle"
    nb = notebooks[name]
    sub = replace_solution(nb, "feature_derivation", MONKEYPATCHES[variant])
    flagged = policy.flagged_checks(sub, name)
    assert set(checks_after(nb, "feature_derivation")) <= set(flagged), (variant, flagged)
    assert not set(checks_before(nb, "feature_derivation")) & set(flagged)


# -- what is allowed ------------------------------------------------------------------------------
ALLOWED = [
    # SymPy's simplify() of a sum or a difference of expressions (not of text)
    ("a6_multilabel_em", "accuracy_derivation", """
        part = C * sp.log(1 - eps) + (L - C) * sp.log(eps / (N - 1))
        prior = a * (N * sp.log(1 - eps) + N * (N - 1) * sp.log(eps / (N - 1)))
        eps_hat = sp.solve(sp.diff(sp.simplify(part + prior), eps), eps)[0]
        accuracy_hat = sp.simplify(1 - eps_hat)
        """),
    ("a1_naive_bayes_mle", "estimator", """
        import crowdlearn.simulate
        from crowdlearn.simulate import simulate_naive_bayes
        n_y = W.sum(axis=0)
        prior, feature_prob = n_y / n_y.sum(), (W.T @ X) / n_y[:, None]
        """),
    ("a3_smoothing_map", "shrunk_m_step", """
        from crowdlearn.simulate import simulate_crowd, random_confusion
        import numpy as np
        counts = np.zeros((n_experts, K, K))
        for j in range(n_experts):
            for l in range(K):
                counts[j, :, l] = Q[Y[:, j] == l].sum(axis=0)
        centre = counts.sum(axis=0)
        centre /= centre.sum(axis=1, keepdims=True)
        class_prior = (Q.sum(axis=0) + a) / (m + K * a)
        confusion = (counts + kappa * centre) / (counts.sum(axis=2, keepdims=True) + kappa)
        """),
    ("a4_logistic_gradients", "crowd_gradient", """
        from crowdlearn.simulate.annotators import simulate_logistic_annotators
        from scipy.special import expit
        slope = np.sum(X[item] * W[annotator], axis=1)
        q = mu[item]
        rho_0 = (1 - q) * (1 - label - expit(slope - G[annotator, 0]))
        rho_1 = q * (label - expit(slope - G[annotator, 1]))
        g_W = -l2 * W
        np.add.at(g_W, annotator, (rho_0 + rho_1)[:, None] * X[item])
        return g_W, -np.column_stack([np.bincount(annotator, rho_0, R),
                                      np.bincount(annotator, rho_1, R)])
        """),
    ("a4_logistic_gradients", "crowd_gradient", """
        import matplotlib.pyplot as plt
        plt.rcParams["figure.figsize"] = (4, 3)
        slope = np.sum(X[item] * W[annotator], axis=1)
        q = mu[item]
        rho = np.column_stack([(1 - q) * (1 - label - expit(slope - G[annotator, 0])),
                               q * (label - expit(slope - G[annotator, 1]))])
        g_W, g_G = -l2 * W, np.zeros_like(G)
        np.add.at(g_W, annotator, rho.sum(axis=1)[:, None] * X[item])
        np.add.at(g_G, annotator, -rho)
        return g_W, g_G
        """),
    ("a5_choosing_penalty", "choose", """
        import crowdlearn
        models = []
        for lam in lam_grid:
            models.append(crowdlearn.SparseExpertsEM(lam=lam, **model_params)
                          .fit(Y_train, X_train))
        scores = np.array([s_hat(m.predict(X=X_test), Y_test) for m in models])
        best_lam = lam_grid[int(np.argmin(scores))]
        """),
]


@pytest.mark.parametrize("name,cell,code", ALLOWED, ids=[f"{a[0][:2]}-{a[1]}" for a in ALLOWED])
def test_allowlisted_uses_are_not_flagged(notebooks, name, cell, code):
    assert policy.flagged_checks(replace_solution(notebooks[name], cell, code), name) == {}


def test_allowlists():
    assert "crowdlearn.features.sparse_experts.SparseExpertsEM" in policy.allowlist(
        "a5_choosing_penalty")
    assert "crowdlearn.features.logistic_annotators.LogisticAnnotatorsParams" in policy.allowlist(
        "a4_logistic_gradients")
    for name in ASSIGNMENTS:
        allowed = policy.allowlist(name)
        assert "crowdlearn.simulate" in allowed
        for reference in ("crowdlearn.symbolic", "crowdlearn.aggregation.dawid_skene.DawidSkene",
                          "crowdlearn.selection.surrogate_risk",
                          "crowdlearn._solvers.logistic", "crowdlearn.features.naive_bayes"):
            assert reference not in allowed


def test_debugging_in_an_added_cell_is_not_flagged(notebooks):
    """Printing the checks' data, calling one's own functions on it, plotting: fine."""
    name = "a2_dawid_skene_by_hand"
    nb = copy.deepcopy(notebooks[name])
    at = next(i for i, c in enumerate(nb.cells)
              if _meta(c).get("grade_id") == "check_m_step_package") + 1
    for code in ("print(Q.shape, Y[:3])", "m_step(Q, Y)", "%matplotlib inline",
                 "import matplotlib.pyplot as plt\nplt.plot(np.sort(Q[:, 0]))",
                 "class Helper:\n    def __init__(self):\n        self._cache = {}\n"
                 "    def get(self):\n        return self._cache"):
        nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    assert policy.flagged_checks(nb, name) == {}


# -- hostile input --------------------------------------------------------------------------------
def test_syntax_errors_and_garbage_never_raise(notebooks):
    name = "a1_naive_bayes_mle"
    nb = notebooks[name]
    assert policy.flagged_checks(replace_solution(nb, "estimator", "prior = ("), name) == {}
    assert policy.flagged_checks(replace_solution(nb, "estimator", "x = 1 +* 2\0"),
                                 name) == {}
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000
    assert isinstance(policy.flagged_checks(replace_solution(nb, "estimator", deep), name),
                      dict)
    deep_attr = "x = np" + ".a" * 20000
    assert isinstance(policy.flagged_checks(replace_solution(nb, "estimator", deep_attr),
                                            name), dict)
    garbage = [None, {}, {"cells": None}, {"cells": [None, 3, {"cell_type": "code"}]},
               {"cells": [{"cell_type": "code", "source": ["import ", "numpy"],
                           "metadata": {"nbgrader": "not a dict"}}]},
               {"cells": [{"cell_type": "code", "source": 7, "metadata": None}]}]
    for bad in garbage:
        assert policy.flagged_checks(bad, name) == {}
    assert policy.flagged_checks(nb, "no_such_assignment") == {}


# -- the checks' helpers --------------------------------------------------------------------------
def test_checks_match_numpy():
    rng = np.random.default_rng(0)
    cases = [(1.0, 1.0 + 1e-9), ([1, 2], [1, 2]), (rng.normal(size=(3, 4)),
                                                  rng.normal(size=4)),
             ([np.inf, 1], [np.inf, 1]), ([np.inf], [-np.inf]), ([np.nan], [np.nan]),
             ([1e-9], [0.0]), ([1 + 1j], [1 + 1j]), ([True, False], [1, 0]),
             (np.zeros((2, 3)), 0)]
    checks = policy.checks
    for a, b in cases:
        assert checks.allclose(a, b) == np.allclose(a, b), (a, b)
        assert np.array_equal(checks.isclose(a, b), np.isclose(a, b)), (a, b)
        assert checks.allclose(a, b, equal_nan=True) == np.allclose(a, b, equal_nan=True)
        assert checks.array_equal(a, b) == np.array_equal(a, b), (a, b)
    assert checks.allclose(1.0, 1.1, rtol=0.2) and not checks.allclose(1.0, 1.1)
    assert checks.all([True, True]) and not checks.all([[True, False]])
    assert checks.any([False, True]) and not checks.any([])
    assert isinstance(checks.allclose([1.0], [1.0]), bool)
    assert checks.isclose(1.0, 1.0 + 1e-12) and not checks.isclose(1.0, 2.0)
    checks.assert_allclose([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(AssertionError, match="shapes"):
        checks.assert_allclose(np.ones(2), np.ones(3))
    with pytest.raises(AssertionError, match="typical mistake"):
        checks.assert_allclose([1.0], [2.0], err_msg="typical mistake")
    with pytest.raises(ValueError):
        checks.allclose(np.ones(2), np.ones(3))  # as numpy: shapes that do not broadcast
    with pytest.raises(AttributeError):
        checks.allclose = lambda *a, **k: True


def test_checks_keep_numpy_after_the_student_rebinds_it():
    import numpy
    import numpy.testing

    saved = {(mod, attr): getattr(mod, attr) for mod, attr in [
        (numpy, "allclose"), (numpy, "isclose"), (numpy, "all"), (numpy, "any"),
        (numpy, "array_equal"), (numpy.testing, "assert_allclose"), (math, "isclose")]}
    try:
        numpy.allclose = lambda *a, **k: True
        numpy.isclose = lambda *a, **k: True
        numpy.all = numpy.any = lambda *a, **k: True
        numpy.array_equal = lambda *a, **k: True
        numpy.testing.assert_allclose = lambda *a, **k: None
        math.isclose = lambda *a, **k: True
        assert np.allclose(0, 1)  # the student's np lies...
        checks = policy.checks
        assert not checks.allclose(np.zeros(3), np.ones(3))  # ...the checks' helpers do not
        assert checks.allclose(np.ones(3), np.ones(3))
        assert not checks.isclose(0.0, 1.0)
        assert not checks.all([True, False])
        assert not checks.array_equal([1, 2], [1, 3])
        with pytest.raises(AssertionError):
            checks.assert_allclose([0.0], [1.0])
    finally:
        for (mod, attr), value in saved.items():
            setattr(mod, attr, value)
    assert not np.allclose(0, 1)


def test_a_patched_submission_fails_its_checks_at_run_time(notebooks):
    """End to end, in-process: a1's cells run in order with a solution cell that rebinds
    np.allclose and gives all-zero answers; the check that compares with the package fails."""
    import numpy

    name = "a1_naive_bayes_mle"
    sub = replace_solution(notebooks[name], "estimator",
                           "np.allclose = lambda *a, **k: True\n"
                           "np.isclose = lambda *a, **k: True\n"
                           "prior, feature_prob = np.zeros(W.shape[1]), "
                           "np.zeros((W.shape[1], X.shape[1]))")
    saved = numpy.allclose, numpy.isclose
    namespace, failed = {}, {}
    try:
        for cell in sub.cells:
            if cell.cell_type != "code" or _meta(cell).get("grade_id") in (
                    "prior_derivation", "symbols_prior", "feature_derivation",
                    "symbols_feature", "check_lagrangian", "check_prior", "check_bernoulli",
                    "check_curvature"):
                continue  # the SymPy tasks are slow and not what this test is about
            try:
                exec(compile(cell.source, _meta(cell).get("grade_id", "cell"), "exec"),
                     namespace)
            except AssertionError as err:
                failed[_meta(cell)["grade_id"]] = str(err)
    finally:
        numpy.allclose, numpy.isclose = saved
    assert {"check_estimator_shapes", "check_estimator_hard",
            "check_estimator_soft"} <= set(failed), failed


def test_a_global_declaration_does_not_hide_a_rebinding(notebooks):
    name = "a1_naive_bayes_mle"
    sub = replace_solution(notebooks[name], "feature_derivation",
                           "def f():\n    global np\n    np = None\n\n\nf()")
    flagged = policy.flagged_checks(sub, name)
    assert "check_bernoulli" in flagged and "rebinds np" in flagged["check_bernoulli"]
