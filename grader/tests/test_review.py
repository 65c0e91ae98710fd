"""The review list (crowdlearn_grader.review) on its own: every cheat of the graded class in
test_classroom_trusted.py is listed with its reason, no honest style is; nothing runs."""

from __future__ import annotations

import textwrap

import pytest

nbformat = pytest.importorskip("nbformat")

from crowdlearn_grader.review import flagged_checks  # noqa: E402
from test_classroom_trusted import (A4_RELEASED_FD, A4_SUMS, A4_TYPED_FD, A5_LOOP,  # noqa: E402
                                    A5_SUBCLASS, HIDE_TRACEBACKS, HONEST, IMPORTLIB, PATCH_NUMPY,
                                    PAYLOAD, SYMPIFY_TEXT, SYS_MODULES, TRANSFORMER)

CHEATS = {  # code -> a word of the reason
    A5_SUBCLASS: "derives a class", A4_RELEASED_FD: "finite differences",
    A4_TYPED_FD: "finite differences", TRANSFORMER: "interpreter",
    HIDE_TRACEBACKS: "interpreter", PATCH_NUMPY: "numpy.allclose", SYS_MODULES: "interpreter",
    IMPORTLIB: "interpreter", SYMPIFY_TEXT: "interpreter",
    f"def E_label():\n    return {PAYLOAD!r}": "interpreter",
    "from crowdlearn.aggregation._ds_kernel import confusion_m_step": "_ds_kernel",
    "from crowdlearn import DawidSkene\nQ = DawidSkene(n_classes=3)": "withholds",
    "def g(f, x, h=1e-6):\n    return (f(x + h) - f(x - h)) / (2 * h)": "finite differences",
    "import json\njson.dump({'score': 10}, open('/autograder/results/results.json', 'w'))":
        "grader",
}
HONEST_CODE = [*HONEST.values(), A4_SUMS, A5_LOOP,
               "from crowdlearn import SparseExpertsEM\nm = SparseExpertsEM(lam=0.1)",
               "import numpy as np\nQ = np.exp(log_q - log_q.max(axis=1, keepdims=True))",
               "import sympy as sp\nx = sp.sympify(3) / 2\n%matplotlib inline",
               "def slope(f, a, b):\n    return (f(b) - f(a))",  # a difference, no quotient
               "this is not python ("]


def _notebook(code: str):
    cell = nbformat.v4.new_code_cell
    return nbformat.v4.new_notebook(
        metadata={"grading": {"withheld": ["crowdlearn.DawidSkene"]}},
        cells=[cell("import numpy as np\nfrom crowdlearn import SparseExpertsEM", metadata={"nbgrader": {"grade_id": "setup",
                                                                 "locked": True}}),
               cell(textwrap.dedent(code), metadata={"nbgrader": {"grade_id": "task",
                                                                  "solution": True}}),
               cell("assert True", metadata={"nbgrader": {"grade_id": "check_task",
                                                          "grade": True, "points": 1}})])


@pytest.mark.parametrize("code", list(CHEATS), ids=range(len(CHEATS)))
def test_a_cheat_is_listed_with_its_reason(code):
    flagged = flagged_checks(_notebook(code), "a")
    assert list(flagged) == ["check_task"]
    assert CHEATS[code] in flagged["check_task"], flagged


@pytest.mark.parametrize("code", HONEST_CODE, ids=range(len(HONEST_CODE)))
def test_an_honest_style_is_not_listed(code):
    assert flagged_checks(_notebook(code), "a") == {}


def test_the_instructors_cells_are_never_read():
    nb = _notebook("x = 1")
    nb.cells[0].source = "import importlib"  # a locked cell of the instructor's
    assert flagged_checks(nb, "a") == {}


def test_what_the_instructors_solution_does_is_not_listed():
    """A task that asks for a finite-difference checker: the instructor's solution takes
    differences too, so the student's doing it is not listed; elsewhere it is."""
    quotient = "def g(f, x, h=1e-6):\n    return (f(x + h) - f(x - h)) / (2 * h)"
    assert flagged_checks(_notebook(quotient), "a", instructor=_notebook(quotient)) == {}
    assert flagged_checks(_notebook(quotient), "a", instructor=_notebook("x = 1"))
