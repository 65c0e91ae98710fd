"""Nothing the student runs decides a score: the checks run in the grader's process.

A class of a2 (Dawid–Skene by hand), a1 and a4 submissions, graded in the sandbox (as root
where the tests run as root, as on CI): cheats that did none of the work -- IPython input
transformers that blank every later cell, hidden tracebacks, patched NumPy, a forged
``_checks``, the package's reference code reached through ``os.sys.modules`` or importlib,
text handed to ``sympify``/``lambdify`` as maths -- score 0 on every automatic check, and the
text never runs in the grader; honest submissions written in styles the old static audit
zeroed (SimpleNamespace, classes with dunders, pandas options, ``globals()``) score full
marks. Issue 42's cheats, which the answers' agreeing with themselves used to give full
marks -- an a5 subclass of ``SparseExpertsEM`` whose ``predict`` returns zeros, a4's gradients
by finite differences of the objective (the old release's or one typed in), numbers where a4
asks for SymPy expressions -- score only the tasks they did; honest a4 and a5 answers on the
new interfaces (parameters as arrays, gradients as SymPy matrices) in other styles score full
marks. Plus the data-only channel on its own: what it carries, what it refuses.
"""

from __future__ import annotations

import copy
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from support import BOOK, fail_or_skip

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader import channel, withheld  # noqa: E402

pytestmark = pytest.mark.notebook

SOURCE = BOOK / "assignments"
A1, A2, A4 = "a1_naive_bayes_mle", "a2_dawid_skene_by_hand", "a4_logistic_gradients"
A5 = "a5_choosing_penalty"
PLANTED = Path(f"/tmp/crowdlearn-planted-{uuid.uuid4().hex}")


def _instructor(name):
    nb = classroom.read_assignment(SOURCE / f"{name}.md")
    nb.metadata.pop("jupytext", None)
    return nb


def _no_work(nb, keep=()):
    """``nb`` with every solution region but those of ``keep`` back to the student's stub."""
    for gid, regions in classroom.solution_regions(nb).items():
        if gid not in keep:
            for i in range(len(regions)):
                nb = classroom.replace_solution(nb, gid, "raise NotImplementedError()",
                                                region=i)
    return nb


def _prepend(nb, gid, code):
    original = classroom.solution_regions(nb)[gid][0]
    return classroom.replace_solution(nb, gid, textwrap.dedent(code).strip("\n") + "\n"
                                      + textwrap.dedent(original))


def _put(folder: Path, student: str, name: str, nb) -> None:
    (folder / student).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / student / f"{name}.ipynb"))


TRANSFORMER = """
get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
"""
HIDE_TRACEBACKS = """
ip = get_ipython()
ip._showtraceback = lambda *a, **k: None
ip.showtraceback = lambda *a, **k: None
"""
PATCH_NUMPY = """
np.allclose = lambda *a, **k: True
np.isclose = lambda *a, **k: True
class _Yes:
    def __getattr__(self, name):
        return lambda *a, **k: True
_checks = _Yes()
"""
SYS_MODULES = """
import os
Q0 = os.sys.modules["crowdlearn"].MajorityVote(n_classes=K).fit(Y).posterior_
"""
IMPORTLIB = """
import importlib
vote = importlib.import_module("crowdlearn.aggregation.majority_vote")
Q0 = vote.MajorityVote(n_classes=K).fit(Y).posterior_
"""
PAYLOAD = f"__import__('pathlib').Path({str(PLANTED)!r}).touch() or 0"
SYMPIFY_TEXT = f"""
lagrangian = {PAYLOAD!r}
lam_hat = lagrangian
phi_hat = {{p: lagrangian for p in phi}}
in_terms_of_lambda = {{}}
"""
def _cheat(gid, code, *, prepend=False):
    """A submission that does none of the work but ``code`` in cell ``gid``."""
    def make(nb):
        nb = _prepend(nb, gid, code) if prepend else classroom.replace_solution(nb, gid, code)
        return _no_work(nb, keep={gid})
    return make


def _text_answers(nb):
    """a4 with text for maths: E_label and label_gradient return strings that would run
    code."""
    nb = classroom.replace_solution(nb, "sympy_term", f"return {PAYLOAD!r}")
    nb = classroom.replace_solution(nb, "sympy_gradients",
                                    f"return {{p: {PAYLOAD!r} for p in PARAMETERS}}")
    return _no_work(nb)


def _whole_cell(gid, code):
    """A submission whose answer cell ``gid`` is ``code`` (any signature), the rest the
    instructor's solutions."""
    def make(nb):
        nb = copy.deepcopy(nb)
        cell = next(c for c in nb.cells
                    if c.metadata.get("nbgrader", {}).get("grade_id") == gid)
        cell.source = textwrap.dedent(code).strip("\n") + "\n"
        return nb
    return make


def _answer(gid, code):
    """The instructor's solutions, but ``code`` in solution cell ``gid``."""
    return lambda nb: classroom.replace_solution(nb, gid, code)


# issue 42's cheats: the answer agrees with itself, or numbers stand in for a derivation
A5_SUBCLASS = """
    class Fitted(SparseExpertsEM):  # looks fitted, predicts class 0 everywhere
        def __init__(self, lam):
            super().__init__(lam=lam, **model_params)
            self.n_items_ = len(train)
            self.coef_ = np.zeros(X_train.shape[1])
            self.intercept_ = 0.0

        def predict(self, labels=None, X=None):
            return np.zeros(len(X if X is not None else labels), dtype=int)


    models = [Fitted(lam) for lam in lam_grid]
    coefs = np.array([m.coef_ for m in models])
    intercepts = np.array([m.intercept_ for m in models])
    scores = np.array([s_hat(m.predict(X=X_test), Y_test) for m in models])
    best_lam = lam_grid[np.argmin(scores)]
    """
A4_RELEASED_FD = """
    def annotator_gradients(W, G, mu, X, item, annotator, label, l2):
        # the locked cell of the old release put _objective and _fd into the kernel
        q = mu[item]
        data = (X, item, annotator, label)
        g_W = _fd(lambda v: _objective(v.reshape(W.shape), G, 1 - q, q, *data, l2),
                  W.ravel()).reshape(W.shape)
        g_G = _fd(lambda v: _objective(W, v.reshape(G.shape), 1 - q, q, *data, l2),
                  G.ravel()).reshape(G.shape)
        return g_W, g_G
    """
A4_TYPED_FD = """
    from scipy.special import log_expit


    def my_objective(W, G, mu, X, item, annotator, label, l2):
        b = np.sum(X[item] * W[annotator], axis=1)[:, None] - G[annotator]
        log_p = np.where(label[:, None] == np.arange(2), log_expit(b), log_expit(-b))
        q = mu[item]
        return float(np.sum((1 - q) * log_p[:, 0] + q * log_p[:, 1]) - l2 / 2 * np.sum(W**2))


    def annotator_gradients(W, G, mu, X, item, annotator, label, l2, *rest):
        v = np.concatenate([W.ravel(), G.ravel()])

        def f(v):
            return my_objective(v[:W.size].reshape(W.shape), v[W.size:].reshape(G.shape),
                                mu, X, item, annotator, label, l2)

        g = central_differences(f, v, h=1e-6)
        return g[:W.size].reshape(W.shape), g[W.size:].reshape(G.shape)
    """
A4_NUMBERS_AS_SYMPY = """
    def annotator_gradients(item, annotator, label, R, k):
        # numbers where the expressions should be: the gradient at some W, G and mu
        rng = np.random.default_rng(0)
        return sp.Matrix(rng.normal(size=(R, k))), sp.Matrix(rng.normal(size=(R, 2)))
    """
PARTIAL = {  # student -> (assignment, notebook, automatic points, the checks that score 0)
    "cheat_a5_subclass": (A5, _answer("choose", A5_SUBCLASS), 7,
                          {"check_models", "check_scores", "check_choice", "check_risks"}),
    "cheat_a4_released_fd": (A4, _whole_cell("crowd_gradient", A4_RELEASED_FD), 5,
                             {"check_gradient_slopes", "check_gradient_intercepts",
                              "check_gradient_crowd"}),
    "cheat_a4_typed_fd": (A4, _whole_cell("crowd_gradient", A4_TYPED_FD), 5,
                          {"check_gradient_slopes", "check_gradient_intercepts",
                           "check_gradient_crowd"}),
    "cheat_a4_numbers": (A4, _whole_cell("crowd_gradient", A4_NUMBERS_AS_SYMPY), 5,
                         {"check_gradient_slopes", "check_gradient_intercepts",
                          "check_gradient_crowd"}),
}
A4_SUMS = """
    rho = [((1 - mu_sym(i)) * (1 - int(y) - eta_sym(l, 0)), mu_sym(i) * (int(y) - eta_sym(l, 1)))
           for l, (i, y) in enumerate(zip(item, label))]
    mine = [[l for l in range(len(item)) if annotator[l] == r] for r in range(R)]
    g_W = sp.ImmutableMatrix(R, k, lambda r, j: sum(
        ((rho[l][0] + rho[l][1]) * x_sym(item[l], j) for l in mine[r]), -lam * w_sym(r, j)))
    g_G = [[-sum((rho[l][n] for l in mine[r]), sp.Integer(0)) for n in range(2)]
           for r in range(R)]
    return g_W, g_G  # an immutable matrix and a nested list: any matrix-like will do
    """
A5_LOOP = """
    coefs, intercepts, scores = [], [], []
    for lam in lam_grid:
        fit = SparseExpertsEM(lam=lam, **model_params).fit(Y_train, X_train)
        coefs.append(fit.coef_)
        intercepts.append(fit.intercept_)
        scores.append(s_hat(fit.predict(X=X_test), Y_test))
    coefs, intercepts, scores = np.vstack(coefs), np.array(intercepts), np.array(scores)
    best_lam = float(lam_grid[scores.argmin()])
    models = [SparseExpertsEM(lam=lam, **model_params).fit(Y_train, X_train)
              for lam in lam_grid]  # for Task 3
    """
HONEST_ELSEWHERE = {  # student -> (assignment, notebook, automatic points)
    "honest_a4_sums": (A4, _answer("crowd_gradient", A4_SUMS), 10),
    "honest_a5_loop": (A5, _answer("choose", A5_LOOP), 12),
}
CHEATS = {  # student -> (assignment, how to make the notebook from the instructor's)
    "cheat_transformer": (A2, _cheat("one_iteration", TRANSFORMER + "\nQ0 = Q1 = None")),
    "cheat_tracebacks": (A2, _cheat("one_iteration", HIDE_TRACEBACKS + "\nQ0 = Q1 = None")),
    "cheat_numpy": (A2, _cheat("one_iteration", PATCH_NUMPY + "\nQ0 = Q1 = None")),
    "cheat_sys_modules": (A2, _cheat("majority", SYS_MODULES)),
    "cheat_importlib": (A2, _cheat("majority", IMPORTLIB)),
    "cheat_lambdify": (A4, _text_answers),
    "cheat_sympify": (A1, _cheat("prior_derivation", SYMPIFY_TEXT)),
}
HONEST = {  # styles the old static audit zeroed: full marks now
    "honest_namespace": """
        from types import SimpleNamespace
        settings = SimpleNamespace(K=K, label="soft vote")
        """,
    "honest_class": """
        class Ballot:
            def __init__(self, votes):
                self.votes = list(votes)
            def __len__(self):
                return len(self.votes)
            def __repr__(self):
                return f"{self.__class__.__name__}({len(self)} votes)"
        print(Ballot([1, 2, 3]))
        """,
    "honest_pandas": """
        import pandas as pd
        pd.options.display.precision = 3
        """,
    "honest_globals": """
        if 'x' in globals():
            print("x is defined")
        """,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    try:
        classroom.check_sandbox()
    except classroom.SandboxUnavailable as err:
        fail_or_skip(str(err))
    base = tmp_path_factory.mktemp("trusted")
    subs = base / "subs"
    for student, (name, make) in CHEATS.items():
        _put(subs, student, name, make(_instructor(name)))
    # every honest style in one notebook: each grading costs a kernel, and a style that lost
    # points would cost this notebook its full marks
    styles = "\n".join(textwrap.dedent(code).strip("\n") for code in HONEST.values())
    _put(subs, "honest_styles", A2, _prepend(_instructor(A2), "majority", styles))
    _put(subs, "honest_plain", A2, _instructor(A2))
    for student, (name, make, *_) in {**PARTIAL, **HONEST_ELSEWHERE}.items():
        _put(subs, student, name, make(_instructor(name)))
    report = base / "grades.csv"
    results = classroom.grade(subs, SOURCE, timeout=60, report=report,
                              assignments=[A1, A2, A4, A5])
    by = {}
    for r in results:
        by.setdefault(r.submission, {})[r.check] = r
    return {"results": results, "by": by, "base": base}


def _automatic(rows):
    return {c: r for c, r in rows.items() if not r.feedback.startswith(classroom.UNMARKED)}


@pytest.mark.parametrize("student", sorted(CHEATS))
def test_a_cheat_scores_nothing_it_did_not_do(graded, student):
    rows = _automatic(graded["by"][student])
    assert rows, student
    assert sum(r.points for r in rows.values()) == 0, {
        c: (r.points, r.feedback[:120]) for c, r in rows.items() if r.points}


@pytest.mark.parametrize("student", sorted(PARTIAL))
def test_a_cheat_scores_only_the_work_it_did(graded, student):
    """Issue 42: a subclass whose predict agrees with itself, and finite differences in place
    of a derivation, score only the tasks they really did."""
    rows = _automatic(graded["by"][student])
    _, _, points, lost = PARTIAL[student]
    zero = {c for c, r in rows.items() if r.points == 0}
    assert zero == lost, {c: rows[c].feedback[:160] for c in zero ^ lost}
    assert sum(r.points for r in rows.values()) == points


@pytest.mark.parametrize("student", sorted(HONEST_ELSEWHERE))
def test_honest_work_on_the_new_interfaces_scores_full_marks(graded, student):
    rows = _automatic(graded["by"][student])
    lost = {c: r.feedback[:200] for c, r in rows.items() if r.points < r.max_points}
    assert not lost, lost
    assert sum(r.points for r in rows.values()) == HONEST_ELSEWHERE[student][2]


def test_no_released_notebook_hands_out_an_objective_or_differences():
    """What runs in the student's kernel (the instructor's locked cells) defines no
    objective or finite differences; a4's gradients are SymPy expressions."""
    for name in (A4, A5):
        nb = _instructor(name)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade"):
                for word in ("objective", "_fd", "differences", "gradient_check"):
                    assert word not in cell.source, (name, meta.get("grade_id"), word)


@pytest.mark.parametrize("student", ["honest_styles", "honest_plain"])
def test_honest_work_in_any_style_scores_full_marks(graded, student):
    rows = _automatic(graded["by"][student])
    lost = {c: r.feedback[:200] for c, r in rows.items() if r.points < r.max_points}
    assert not lost, lost
    assert sum(r.max_points for r in rows.values()) == 13


def test_text_from_the_student_never_runs_in_the_grader(graded):
    assert not PLANTED.exists()
    feedback = " ".join(r.feedback for r in graded["by"]["cheat_lambdify"].values())
    assert "SymPy expression" in feedback


def test_the_reference_is_withheld_with_a_clear_message(graded):
    feedback = " ".join(r.feedback for r in graded["by"]["cheat_sys_modules"].values())
    assert "is withheld while assignment 'a2_dawid_skene_by_hand' is graded" in feedback


def test_every_submission_is_graded_and_the_review_is_written(graded):
    status = classroom.submission_status(graded["results"])
    assert set(status.values()) == {"graded"}, status
    assert (graded["base"] / "grades-review.csv").is_file()


def test_the_review_lists_every_cheat_and_no_honest_notebook(graded):
    """grades-review.csv: each cheat of the class is listed with a reason, no honest one."""
    listed = {student for student, *_ in graded["results"].review}
    cheats = set(CHEATS) | {s for s in PARTIAL if s != "cheat_a4_numbers"}
    honest = set(HONEST_ELSEWHERE) | {"honest_styles", "honest_plain"}
    assert cheats <= listed, cheats - listed
    assert not listed & honest, listed & honest


# -- the channel on its own ------------------------------------------------------------------------
def _round_trip(value):
    import json

    data = json.loads(json.dumps(channel._kernel_encode(value)))
    return channel.decode(data, handle=lambda key, info: ("handle", info["type"]))


def test_the_channel_carries_data():
    import sympy as sp

    x = sp.Symbol("phi_j|n", positive=True)
    value = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": (1.5, float("nan"), None),
             x: sp.log(x) / (1 - x), "c": [np.float32(2.5), True, 3 + 4j, {1, 2}]}
    out = _round_trip(value)
    assert out["a"].dtype == np.int32 and (out["a"] == value["a"]).all()
    assert out["b"][0] == 1.5 and np.isnan(out["b"][1]) and out["b"][2] is None
    assert sp.simplify(out[x] - value[x]) == 0 and out[x].free_symbols == {x}
    assert out["c"][0] == np.float32(2.5) and out["c"][1:] == [True, 3 + 4j, {1, 2}]
    assert isinstance(out["a"], np.ndarray) and out["a"].flags.writeable


def test_the_channel_hands_objects_as_handles():
    out = _round_trip([len, object()])
    assert out[0] == ("handle", "builtins.builtin_function_or_method")
    assert out[1] == ("handle", "builtins.object")


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",
    "Symbol('x').__class__",
    "Function(\"os.system\")(Symbol('x'))",
    "Symbol('x; import os')",
    "Pow(Integer(10), Integer(100000))",
    "getattr(Symbol('x'), 'subs')",
    "Integer(" + "9" * 80 + ")",
    "Add(" * 5000 + ")" * 5000,
])
def test_sympy_text_is_rebuilt_only_from_allowed_parts(text):
    with pytest.raises(channel.ChannelError):
        channel.parse_sympy(text)


@pytest.mark.parametrize("data", [
    {"$": "ndarray", "dtype": "O", "shape": [1], "b64": ""},
    {"$": "ndarray", "dtype": "f8", "shape": [2], "b64": "AAAA"},
    {"$": "pickle", "v": "gASV"},
    {"$": "record", "name": "R", "fields": ["a"], "v": [1, 2]},
    {"$": "dict", "v": [[[1], 2]]},
    "x" * (channel.MAX_TEXT + 1),
    10 ** 500,
])
def test_malformed_or_oversized_answers_are_refused(data):
    with pytest.raises(channel.ChannelError):
        channel.decode(data, handle=lambda key, info: None)


def test_each_assignment_withholds_what_it_asks_for(tmp_path):
    """The sandbox's package copy: the reference is a stand-in that says why; the rest works."""
    import subprocess
    import sys

    names = classroom.withheld_names(_instructor(A2))
    assert "crowdlearn.aggregation.dawid_skene" in names
    top = withheld.package_copy(A2, names, parent=tmp_path)
    code = ("from crowdlearn import DawidSkene\n"
            "from crowdlearn.simulate import random_confusion, simulate_crowd\n"
            "crowd = simulate_crowd(5, random_confusion(3, 2, random_state=0), "
            "random_state=0)\n"
            "try:\n    DawidSkene(n_classes=2)\nexcept ImportError as e:\n    print(e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(top.parent), "PATH": "/usr/bin:/bin"},
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "crowdlearn.aggregation.dawid_skene.DawidSkene is withheld" in run.stdout
    assert "def log_joint" not in (top / "aggregation" / "_ds_kernel.py").read_text()
    assert not (top.parent / "crowdlearn_checks" / "references.py").exists()
    for name, path in classroom.find_assignments(SOURCE).items():  # public names, all found
        names = classroom.withheld_names(classroom.read_assignment(path))
        assert names and all(not p.startswith("_") for n in names for p in n.split("."))
        assert withheld.resolve(names), name


def test_a_hanging_or_huge_answer_costs_that_student_only(tmp_path):
    """A function that never returns while a check calls it: "time limit" on that check, the
    kernel restarted and the later ones graded; one that returns 200 MB: that check fails; the next student is graded
    as usual, and nothing of theirs is left running."""
    try:
        classroom.check_sandbox()
    except classroom.SandboxUnavailable as err:
        fail_or_skip(str(err))
    subs = tmp_path / "subs"
    nb = _instructor(A2)
    _put(subs, "a_hangs", A2, _prepend(nb, "majority", "import time\ntime.sleep(10_000)"))
    _put(subs, "b_huge", A2, classroom.replace_solution(nb, "majority",
                                                        "Q0 = np.ones((5000, 5000))"))
    _put(subs, "c_honest", A2, nb)
    # the time limit holds for the honest student too: 30 s, which no honest check comes near
    # even on a machine whose cores are busy (8 s failed there); the hanging one sleeps it out
    results = classroom.grade(subs, SOURCE, timeout=30)
    by = {}
    for r in results:
        by.setdefault(r.submission, {})[r.check] = r
    assert by["a_hangs"]["check_majority"].points == 0
    assert "time limit" in by["a_hangs"]["check_majority"].feedback
    assert by["a_hangs"]["check_m_step_rows"].points == 1  # graded in a fresh kernel
    assert by["b_huge"]["check_majority"].points == 0
    assert by["b_huge"]["check_m_step_rows"].points == 1
    assert sum(r.points for r in by["c_honest"].values()) == 13
    status = classroom.submission_status(results)
    assert status[("a_hangs", A2)].startswith("time limit")
    assert status[("c_honest", A2)] == "graded"


def test_a_notebook_from_an_earlier_release_is_not_called_edited():
    """A check cell the instructor changed after release: the student's copy still matches
    the checksum nbgrader stored at release, so one note says the notebook is from an earlier
    release -- not "your copy of this cell was edited" on every check. A cell the student
    did edit (source and checksum disagree) still gets that note."""
    import copy

    from nbgrader.utils import compute_checksum

    from crowdlearn_grader.submissions import _merge

    instructor = _instructor(A2)
    released = copy.deepcopy(instructor)
    for cell in released.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id"):
            cell.source = classroom.student_source(cell.source)
            if meta.get("locked") or meta.get("grade"):
                meta["checksum"] = compute_checksum(cell)
    newer = copy.deepcopy(instructor)
    for cell in newer.cells:  # the instructor edits every check after the release
        if classroom._is_check(cell.metadata.get("nbgrader", {})):
            cell.source += "\nassert True  # a later version"
    _, notes, _ = _merge(newer, released)
    text = " ".join(n for ns in notes.values() for n in ns)
    assert "edited" not in text, notes
    assert list(notes) == [None] and "earlier release" in notes[None][0]
    tampered = copy.deepcopy(released)
    check = next(c for c in tampered.cells if c.metadata.get("nbgrader", {}).get(
        "grade_id") == "check_majority")
    check.source = "pass"
    _, notes, _ = _merge(newer, tampered)
    assert any("was edited" in n for n in notes.get("check_majority", [])), notes


def test_grading_as_an_unprivileged_user():
    """The grader run by an ordinary user (not root; the sandbox is then built in one
    unprivileged step and binds the withheld package copy itself): an honest submission
    scores full marks and one that reaches for the reference gets the withheld message."""
    import os
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("already unprivileged: every other test here runs this way")
    try:
        classroom.check_sandbox()
    except classroom.SandboxUnavailable as err:
        fail_or_skip(str(err))
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is not installed")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(drop + [sys.executable, "-c", "import crowdlearn_grader"],
                           capture_output=True, text=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip(f"this checkout is not readable by an unprivileged user: {probe.stderr}")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="crowdlearn-nonroot-") as tmp:
        _grade_unprivileged(Path(tmp), drop)


def _grade_unprivileged(tmp_path: Path, drop: list) -> None:
    import json
    import os
    import subprocess
    import sys

    os.chmod(tmp_path, 0o777)
    subs = tmp_path / "subs"
    _put(subs, "honest", A2, _instructor(A2))
    _put(subs, "reaches", A2, _cheat("majority", SYS_MODULES)(_instructor(A2)))
    for path in [subs, *subs.rglob("*")]:
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    script = (
        "import json, sys\n"
        "import crowdlearn_grader as classroom\n"
        f"res = classroom.grade({str(subs)!r}, {str(SOURCE)!r}, timeout=60)\n"
        "print(json.dumps([list(r) for r in res]))\n")
    run = subprocess.run(drop + [sys.executable, "-c", script], capture_output=True,
                         text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin",
                                                       "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [classroom.CheckResult(*r) for r in json.loads(run.stdout.splitlines()[-1])]
    auto = [r for r in rows if not r.feedback.startswith(classroom.UNMARKED)]
    honest = [r for r in auto if r.submission == "honest"]
    assert sum(r.points for r in honest) == sum(r.max_points for r in honest) == 13
    majority = next(r for r in auto if r.submission == "reaches" and r.check == "check_majority")
    assert majority.points == 0 and "is withheld while assignment" in majority.feedback
