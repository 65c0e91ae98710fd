r"""A static audit of classroom submissions (read, never run), and the check cells' helpers.

The assignments in ``book/assignments/`` ask students to write, by hand, what the package
already does (a Naive Bayes estimator, Dawid--Skene's E- and M-steps, the surrogate risk...).
Their checks compare the student's answer with the package. When a class is graded, that
comparison is made in the grader's own process (:mod:`crowdlearn.classroom.trusted`) and the
sandbox's package has the reference implementations withheld
(:mod:`crowdlearn.classroom.withheld`): nothing a submission runs can call the reference or
make a comparison lie. What is left here:

* :data:`checks` -- the comparison helpers the check cells use (``_checks.allclose(...)``),
  built from references captured when this module is first imported (so in a student's own
  Jupyter, rebinding ``np.allclose`` after the setup cell changes nothing for the visible
  checks either); ``_checks.is_a`` and ``_checks.expression`` for objects and SymPy
  answers that come over the grader's channel.
* :func:`flagged_checks` -- a static audit (Python's :mod:`ast`) of every cell a student can
  edit: the solution cells, and any code cell that is not the instructor's. It names checks
  whose task's code looks like it reaches for the package or tampers with modules, each with
  a one-sentence reason. The grader only *lists* them for the instructor to review
  (``grades-review.csv``): they change no score, since the audit can be wrong both ways.

What the audit flags (``RULES`` lists them):

``package``
    An import of, or a reference to, anything in ``crowdlearn`` that is not on the
    assignment's allowlist (:data:`ALLOWLIST` plus what the assignment's own locked cells
    import: data loaders, simulators, the model the assignment asks to fit), however it is
    spelled: ``from crowdlearn import X``, ``import crowdlearn as c; c.symbolic``, an alias
    ``m = crowdlearn``, ``getattr(crowdlearn, "symbolic")``. Also: names that only the check
    cells bind (the checks' imports, their helper functions, results computed by the
    package), private attributes such as ``model._m_step``, and ``callback=`` hooks into the
    package's EM. A module-level name bound in a flagged cell is tainted: a later cell that
    uses it is flagged too.
``dynamic``
    Code the audit cannot read: ``exec``/``eval``/``compile``/``__import__``,
    ``importlib``, ``globals()``/``locals()``/``vars()``, ``getattr`` with a computed name on a
    module, ``sys.modules``, frame and introspection attributes (``__globals__``,
    ``__dict__``, ``f_back``...), ``pickle``/``marshal``/``ctypes``/``subprocess``/
    ``os.system``, IPython magics other than harmless ones and shell escapes, and
    ``sympy.sympify``/``parse_expr`` of a string that smuggles code.
``tamper``
    Monkeypatching: an assignment to (or ``del``, ``setattr``, ``delattr`` of) an attribute of
    anything that is not a plain object the student created -- a module (``np.allclose =``,
    ``numpy.testing.assert_allclose =``, ``math.isclose =``), a class or function of the
    package or of the instructor's cells, a builtin; ``import builtins``; ``__builtins__``;
    ``globals()[...] =``; any use of ``_checks`` or ``crowdlearn.classroom.policy``;
    rebinding at module level (or through ``global``) a name the checks rely on (``np``,
    ``sp``, a builtin the checks call, a function of the instructor's cells); an attribute
    assignment through a container, a function parameter or a nested attribute
    (``box[0].allclose =``, ``def patch(m): m.allclose = ...``); a module passed around as a
    value; ``unittest.mock``/``pytest``'s monkeypatching; ``type(name, bases, dict)``; and a
    class with its own comparison or arithmetic (``__eq__``, ``__sub__``, ``__array__``...),
    which can make a check's comparison lie.

Only the checks' *data* is judged with the instructor's version at hand: a name that the
check cells computed with the package (``reference`` in Assignment 1) is flagged when a
solution uses it, unless the instructor's own solution cells use that name (their template
code, e.g. a stub's ``return prior, feature_prob``), or it is only looked at in a
module-level expression (``print(Q)`` while debugging).

``package`` findings withhold the checks of the task the cell belongs to: the check cells
that follow it, up to the next solution cell (or, for a cell with no check before the next
solution cell, the next task's checks). ``dynamic`` and ``tamper`` findings can change any
later check, so they withhold every check after the cell.

Examples
--------
>>> import nbformat
>>> def cell(src, **meta):
...     return nbformat.v4.new_code_cell(src, metadata={"nbgrader": meta} if meta else {})
>>> nb = nbformat.v4.new_notebook(cells=[
...     cell("import numpy as np", grade_id="setup", locked=True),
...     cell("from crowdlearn.selection import surrogate_risk\n"
...          "def s_hat(pred, Y):\n    return surrogate_risk(pred, Y)\n",
...          grade_id="surrogate", solution=True),
...     cell("assert s_hat([0], [[0]]) == 0", grade_id="check_s_hat", grade=True, points=1),
... ])
>>> flagged_checks(nb, "some_assignment", instructor=False)  # doctest: +NORMALIZE_WHITESPACE
{'check_s_hat': "cell 'surrogate' imports crowdlearn.selection.surrogate_risk, the
package's own implementation, which this assignment asks you to write yourself."}
>>> checks.allclose([1.0, 2.0], [1.0, 2.0 + 1e-12])
True
"""

from __future__ import annotations

import ast as _ast
import builtins as _builtins
import sys as _sys
import types as _types
from pathlib import Path as _Path
from typing import NamedTuple as _NamedTuple

import numpy as _numpy

__all__ = ["checks", "flagged_checks", "audit", "allowlist", "Finding", "ALLOWLIST", "RULES"]


# -- comparison helpers, bound at import time ----------------------------------------------------
# Only C-level callables (ufuncs, builtins) and their bound methods are kept: a student who
# rebinds numpy's Python-level functions (np.allclose, np.isclose, np.all...) after this
# module was imported cannot change what these helpers compute.
_asanyarray = _numpy.asanyarray
_asarray = _numpy.asarray
_result_type = _numpy.result_type
_absolute = _numpy.absolute
_subtract = _numpy.subtract
_multiply = _numpy.multiply
_add = _numpy.add
_less_equal = _numpy.less_equal
_equal = _numpy.equal
_isfinite = _numpy.isfinite
_isnan = _numpy.isnan
_logical_and = _numpy.logical_and
_logical_or = _numpy.logical_or
_where = _numpy.where
_errstate = _numpy.errstate
_inexact = _numpy.inexact
_issubdtype = _numpy.issubdtype
_float64 = _numpy.float64
_bool, _isinstance, _str = bool, isinstance, str
_AssertionError = AssertionError


def _as_float_arrays(a, b):
    x, y = _asanyarray(a), _asanyarray(b)
    dtype = _result_type(x, y, 1.0)
    if not _issubdtype(dtype, _inexact):  # e.g. object arrays: let numpy raise as it would
        dtype = _float64
    return _asarray(x, dtype=dtype), _asarray(y, dtype=dtype)


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol |b|`` (numpy's ``isclose``, same defaults)."""
    x, y = _as_float_arrays(a, b)
    with _errstate(invalid="ignore", over="ignore"):
        close = _less_equal(_absolute(_subtract(x, y)), _add(atol, _multiply(rtol,
                                                                             _absolute(y))))
        both_finite = _logical_and(_isfinite(x), _isfinite(y))
        result = _where(both_finite, close, _equal(x, y))  # infinities: equal or not
        if equal_nan:
            result = _logical_or(result, _logical_and(_isnan(x), _isnan(y)))
    return result[()]


def _all(a) -> bool:
    """``True`` if every element of ``a`` is true (numpy's ``all`` over the whole array)."""
    return _bool(_logical_and.reduce(_asanyarray(a), axis=None))


def _any(a) -> bool:
    """``True`` if some element of ``a`` is true."""
    return _bool(_logical_or.reduce(_asanyarray(a), axis=None))


def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """numpy's ``allclose``: ``a`` and ``b`` broadcast, and every pair is close."""
    return _all(_isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _array_equal(a, b) -> bool:
    """numpy's ``array_equal``: same shape, same elements."""
    x, y = _asanyarray(a), _asanyarray(b)
    if x.shape != y.shape:
        return False
    return _all(_equal(x, y))


def _assert_allclose(actual, desired, rtol=1e-07, atol=0.0, equal_nan=True, err_msg=""):
    """numpy.testing's ``assert_allclose``: raise ``AssertionError`` (with ``err_msg``) unless
    ``actual`` and ``desired`` have the same shape (or one is a scalar) and are close."""
    x, y = _asanyarray(actual), _asanyarray(desired)
    if x.shape != y.shape and x.ndim and y.ndim:
        raise _AssertionError(err_msg or f"shapes differ: {x.shape} != {y.shape}")
    if not _allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan):
        raise _AssertionError(err_msg or "arrays are not close (rtol={}, atol={})".format(
            rtol, atol))


def _is_a(obj, cls) -> bool:
    """``isinstance(obj, cls)``, also for an object the grader sees in the student's kernel."""
    from crowdlearn.classroom.trusted import is_a

    return is_a(obj, cls)


def _expression(value):
    """``value`` as a SymPy expression if it is one (or a number); an AssertionError for
    anything else -- text is never parsed (``sympify`` of a string runs code)."""
    import numbers

    import sympy

    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return sympy.sympify(value)
    raise AssertionError(f"expected a SymPy expression, got a {type(value).__name__}: build "
                         "it from the symbols given (text is not read as maths)")


class _Checks:
    """The check cells' comparison helpers, frozen (``checks.allclose = ...`` raises)."""

    __slots__ = ()
    allclose = staticmethod(_allclose)
    isclose = staticmethod(_isclose)
    assert_allclose = staticmethod(_assert_allclose)
    array_equal = staticmethod(_array_equal)
    isfinite = staticmethod(_isfinite)
    all = staticmethod(_all)
    any = staticmethod(_any)
    is_a = staticmethod(_is_a)
    expression = staticmethod(_expression)

    def __setattr__(self, name, value):
        raise AttributeError("the check helpers are read-only")

    def __delattr__(self, name):
        raise AttributeError("the check helpers are read-only")

    def __repr__(self):
        return "<crowdlearn.classroom.policy.checks: allclose, isclose, assert_allclose, " \
               "array_equal, isfinite, all, any, is_a, expression>"


checks = _Checks()
"""Comparison helpers for check cells, immune to monkeypatching of numpy after import:
``allclose``, ``isclose``, ``assert_allclose``, ``array_equal``, ``isfinite``, ``all``,
``any`` (numpy's semantics and defaults), and ``is_a`` (``isinstance`` that also answers for
an object in the student's kernel), ``expression`` (a SymPy expression or number, never
text)."""


# -- the allowlist -------------------------------------------------------------------------------
_COMMON = frozenset({
    "crowdlearn.simulate",             # simulators: data, not answers
    "crowdlearn.simulate.annotators",
    "crowdlearn.simulate.sparse",
    "crowdlearn.datasets",             # data loaders
    "crowdlearn.exceptions",           # warning classes, e.g. for warnings.filterwarnings
})

ALLOWLIST = {
    "a1_naive_bayes_mle": _COMMON,
    "a2_dawid_skene_by_hand": _COMMON,
    "a3_smoothing_map": _COMMON | {"crowdlearn.simulate.simulate_crowd"},
    "a4_logistic_gradients": _COMMON | {
        "crowdlearn.features.logistic_annotators.LogisticAnnotatorsParams",
        "crowdlearn.simulate.annotators.simulate_logistic_annotators"},
    "a5_choosing_penalty": _COMMON | {
        "crowdlearn.features.sparse_experts.SparseExpertsEM",
        "crowdlearn.simulate.sparse.simulate_sparse_experts",
        "crowdlearn.selection.expected_surrogate_risk"},
}
"""Assignment -> what in ``crowdlearn`` its solution cells may use (a module allows all of
it). Whatever the assignment's locked (non-check) cells import is allowed too, so an
assignment not listed here gets ``_COMMON`` plus its setup cells' imports."""

RULES = {
    "package": "imports or uses the package's reference implementations (not on the "
               "allowlist), directly, by an alias, by a name only the checks bind, by a "
               "private attribute or a callback= hook, or through a tainted name",
    "dynamic": "runs code the audit cannot read: exec/eval/compile/__import__/importlib, "
               "globals()/locals()/vars(), computed getattr on a module, sys.modules, "
               "introspection attributes, pickle/marshal/ctypes/subprocess/os.system, IPython "
               "magics and shell escapes, sympify of smuggled code",
    "tamper": "monkeypatches: assigns/deletes/setattr an attribute of a module, a builtin, "
              "the package or the instructor's objects, or of an object reached through a "
              "container, a parameter or a nested attribute; imports builtins, unittest.mock "
              "or pytest; touches __builtins__, _checks or crowdlearn.classroom.policy; "
              "rebinds at module level a name the checks use; passes a module around; "
              "defines a class whose comparisons or arithmetic can lie",
}

_POLICY_MODULE = "crowdlearn.classroom.policy"
_CHECKS_NAME = "_checks"
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars",
                  "breakpoint", "execfile", "reload"}
_DYNAMIC_MODULES = {"importlib", "imp", "runpy", "ctypes", "gc", "inspect", "pickle",
                    "marshal", "dill", "cloudpickle", "shelve", "subprocess", "pty", "code",
                    "codeop", "multiprocessing", "_thread", "threading", "asyncio", "ast",
                    "types", "sysconfig", "pydoc", "sys.monitoring", "joblib", "_pickle"}
_TAMPER_MODULES = {"builtins", "__builtin__", _POLICY_MODULE,
                   "unittest.mock", "mock", "pytest", "_pytest", "monkeypatch"}
# a class that defines these can make a comparison lie (x - y == 0, x == y, |x| <= tol)
_LYING_DUNDERS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__sub__",
                  "__rsub__", "__abs__", "__bool__", "__float__", "__array__",
                  "__array_ufunc__", "__array_function__", "__array_priority__",
                  "__array_interface__", "__array_struct__", "__instancecheck__",
                  "__subclasscheck__", "__getattr__", "__getattribute__", "__len__",
                  "__index__", "__int__", "__complex__", "__neg__", "__pos__", "__add__",
                  "__radd__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
                  "__contains__", "__hash__", "_sympy_", "_sympystr", "__sympy__",
                  "__new__", "__class_getitem__", "__mro_entries__", "__set_name__",
                  "__init_subclass__", "__prepare__"}
_INTROSPECTION = {"__globals__", "__builtins__", "__dict__", "__code__", "__closure__",
                  "__subclasses__", "__bases__", "__base__", "__mro__", "__class__",
                  "__import__", "__loader__", "__spec__", "__self__", "__func__",
                  "__wrapped__", "__module__", "__setattr__", "__delattr__",
                  "__getattribute__", "__reduce__", "__reduce_ex__", "__kwdefaults__",
                  "__defaults__", "__init_subclass__", "__set_name__", "f_back", "f_globals",
                  "f_locals", "f_builtins", "gi_frame", "cr_frame", "ag_frame", "tb_frame",
                  "tb_next", "func_globals", "co_code"}
_OS_EXEC = {"system", "popen", "execv", "execve", "execl", "execle", "execlp", "execlpe",
            "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv",
            "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "fork",
            "forkpty"}
_SAFE_MAGICS = {"matplotlib", "precision", "pprint", "who", "whos", "who_ls", "pwd",
                "config", "autoreload"}
_CODE_MAGICS = {"time", "timeit", "prun", "capture"}
_SYMPY_PARSERS = {"sympify", "parse_expr", "S", "parse_latex", "simplify"}


def _builds_text(node) -> bool:
    """Whether ``node`` is an expression that joins text: ``"..." + x``, ``x + f"..."``,
    ``"%s" % x`` (not ``1 - x`` or ``a + b`` of names, which SymPy expressions are too)."""
    if isinstance(node, _ast.JoinedStr) or (isinstance(node, _ast.Constant)
                                            and isinstance(node.value, str)):
        return True
    if isinstance(node, _ast.BinOp) and isinstance(node.op, _ast.Add):
        return _builds_text(node.left) or _builds_text(node.right)
    if isinstance(node, _ast.BinOp) and isinstance(node.op, _ast.Mod):
        return _builds_text(node.left)
    return False
_BUILTIN_NAMES = frozenset(dir(_builtins))
_NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
_PACKAGE_PRIVATE = None


def _package_private_names() -> frozenset:
    """Private names (``_m_step``, ``_e_step``, ``_log_joint``...) the package's source defines
    or uses as attributes: reaching one of them on an object is using a package internal."""
    global _PACKAGE_PRIVATE
    if _PACKAGE_PRIVATE is None:
        import re

        names = set()
        pattern = re.compile(r"(?:def|class)\s+(_[A-Za-z]\w*)|\.(_[A-Za-z]\w*)|"
                             r"^\s*(_[A-Za-z]\w*)\s*=", re.MULTILINE)
        for path in _Path(__file__).resolve().parents[1].rglob("*.py"):  # the whole package
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue
            for m in pattern.finditer(text):
                names.add(next(g for g in m.groups() if g))
        _PACKAGE_PRIVATE = frozenset(n for n in names if not n.endswith("__")) - \
            _NAMEDTUPLE_API
    return _PACKAGE_PRIVATE


def _lazy_name(module, name: str) -> tuple:
    """A name ``module`` imports on first use (its ``_NAMES`` table, PEP 562):
    ``(object, None)`` if its module is imported already, else ``(None, dotted path)``;
    ``(None, None)`` if ``name`` is not such a name. Imports nothing."""
    table = vars(module).get("_NAMES")
    target = table.get(name) if _isinstance(table, dict) else None
    if not _isinstance(target, str):
        return None, None
    submodule = target == f"{module.__name__}.{name}"
    loaded = _sys.modules.get(target)
    if loaded is None:
        return None, target if submodule else f"{target}.{name}"
    return (loaded if submodule else vars(loaded).get(name)), None


def _canonical(dotted: str) -> str:
    """``crowdlearn.X.Y`` resolved through the package's re-exports (``crowdlearn.DawidSkene``
    -> ``crowdlearn.aggregation.dawid_skene.DawidSkene``), without importing anything new."""
    parts = dotted.split(".")
    if parts[0] != "crowdlearn":
        return dotted
    obj, known = _sys.modules.get("crowdlearn"), 1
    if obj is None:
        return dotted
    for k in range(1, len(parts)):
        nxt = _sys.modules.get(".".join(parts[:k + 1]))
        if nxt is None:
            try:
                if _isinstance(obj, _types.ModuleType):
                    nxt = vars(obj).get(parts[k])
                    if nxt is None:
                        nxt, path = _lazy_name(obj, parts[k])
                        if nxt is None and path is not None:  # not imported yet
                            return ".".join([path, *parts[k + 1:]])
                elif _isinstance(obj, type):
                    nxt = next((vars(c)[parts[k]] for c in obj.__mro__
                                if parts[k] in vars(c)), None)
            except Exception:
                nxt = None
        if nxt is None:
            break
        obj, known = nxt, k + 1
    rest = parts[known:]
    if _isinstance(obj, _types.ModuleType):
        head = obj.__name__
    elif _isinstance(obj, (type, _types.FunctionType)) and _str(
            getattr(obj, "__module__", "")).startswith("crowdlearn"):
        head = f"{obj.__module__}.{obj.__qualname__}"
    else:
        head = ".".join(parts[:known])
    return ".".join([head, *rest])


def allowlist(assignment_name: str, instructor=None) -> frozenset:
    """What in ``crowdlearn`` the solution cells of ``assignment_name`` may use: the fixed
    :data:`ALLOWLIST` entry (default: simulators, data loaders, exceptions), plus every
    ``crowdlearn`` name the instructor's locked non-check cells import. Canonical names."""
    names = set(ALLOWLIST.get(assignment_name, _COMMON))
    if instructor is not None:
        for cell in _cells(instructor):
            meta = _meta(cell)
            if cell.get("cell_type") != "code" or meta.get("grade") or meta.get("solution"):
                continue
            tree = _parse(_source(cell))
            for node in (_ast.walk(tree) if tree is not None else ()):
                if isinstance(node, _ast.Import):
                    names.update(a.name for a in node.names if a.name.startswith("crowdlearn"))
                elif isinstance(node, _ast.ImportFrom) and not node.level and (
                        node.module or "").startswith("crowdlearn"):
                    names.update(f"{node.module}.{a.name}" for a in node.names
                                 if a.name != "*")
    return frozenset(_canonical(n) for n in names)


# -- reading notebooks ---------------------------------------------------------------------------
def _cells(nb):
    cells = nb.get("cells", []) if isinstance(nb, dict) else getattr(nb, "cells", [])
    return [c for c in (cells or []) if isinstance(c, dict)]


def _meta(cell) -> dict:
    meta = cell.get("metadata") or {}
    out = meta.get("nbgrader") if isinstance(meta, dict) else None
    return out if isinstance(out, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _normalised(src: str) -> str:
    return "\n".join(line.rstrip() for line in src.strip().splitlines())


def _ipython_to_python(src: str) -> str:
    """Cell code as IPython runs it (magics become ``get_ipython().run_*magic(...)`` calls)."""
    if "%" not in src and "!" not in src and "?" not in src:
        return src
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(src)
    except Exception:
        return src


def _parse(src: str):
    try:
        return _ast.parse(_ipython_to_python(src))
    except Exception:  # SyntaxError, ValueError (null bytes), RecursionError...
        return None


def _instructor_notebook(assignment_name: str, source=None):
    import re

    if not isinstance(assignment_name, str) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*",
                                                                  assignment_name):
        return None
    roots = [_Path(source)] if source is not None else [
        _Path.cwd() / "book" / "assignments",
        _Path(__file__).resolve().parents[2] / "book" / "assignments"]
    for root in roots:
        path = root / f"{assignment_name}.md"
        if path.is_file():
            import jupytext

            return jupytext.read(path)
        path = root / f"{assignment_name}.ipynb"
        if path.is_file():
            import nbformat

            return nbformat.read(str(path), as_version=4)
    return None


# -- the audit -----------------------------------------------------------------------------------
class Finding(_NamedTuple):
    """One thing the audit found in a student-editable cell."""

    cell: int     # index of the cell in the notebook
    kind: str     # "package", "dynamic" or "tamper" (see RULES)
    reason: str   # one sentence, naming the cell and what it does


class _Binding:
    """What a name refers to: ``qualified`` (an imported module/object, dotted), how it was
    bound (``import``, ``def``, ``data``), who bound it (``student``, ``setup``, ``check``) and,
    for student names, the finding that taints it."""

    __slots__ = ("qualified", "how", "who", "taint")

    def __init__(self, qualified=None, how="data", who="student", taint=None):
        self.qualified, self.how, self.who, self.taint = qualified, how, who, taint


def _dotted(node):
    """``a.b.c`` -> ``["a", "b", "c"]`` if the chain is rooted at a Name, else ``None``."""
    parts = []
    while isinstance(node, _ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, _ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _root(node):
    while isinstance(node, (_ast.Attribute, _ast.Subscript, _ast.Starred)):
        node = node.value
    return node


def _target_names(target):
    if isinstance(target, _ast.Name):
        yield target.id
    elif isinstance(target, (_ast.Tuple, _ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, _ast.Starred):
        yield from _target_names(target.value)


def _local_names(func) -> set:
    """Names local to a function or lambda: its parameters and what its body binds."""
    args = func.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    body = func.body if isinstance(func.body, list) else [func.body]
    declared = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (_ast.Global, _ast.Nonlocal)):
            declared.update(node.names)
            continue
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue  # its own scope
        if isinstance(node, _ast.Lambda):
            continue
        if isinstance(node, _ast.Name) and isinstance(node.ctx, (_ast.Store, _ast.Del)):
            names.add(node.id)
        elif isinstance(node, (_ast.Import, _ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, _ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, _ast.MatchAs) and node.name:
            names.add(node.name)
        stack.extend(_ast.iter_child_nodes(node))
    return names - declared


class _CellAuditor(_ast.NodeVisitor):
    """Walks one student cell; appends ``(kind, reason)`` to ``self.found``."""

    def __init__(self, label, module, trusted, allowed, check_names, private_ok,
                 answer_names=None):
        self.label = label            # "cell 'estimator'"
        self.module = module          # name -> _Binding, student module-level (mutated)
        self.trusted = trusted        # name -> _Binding, the instructor's cells
        self.allowed = allowed        # canonical allowlist
        self.check_names = check_names  # names the check cells load (builtins included)
        self.private_ok = private_ok  # private attribute names the student defines
        self.answer_names = answer_names  # names the instructor's solution cells use;
        # None: unknown, so the checks' data is not flagged (their functions/imports are)
        self.scopes = []              # function scopes: dict name -> _Binding
        self.kinds = []               # "function" or "class", parallel to scopes
        self.declared_global = [set()]  # names declared `global`, per function scope
        self.found = []
        self.bound_here = set()       # module-level names this cell binds
        self.inspecting = False       # inside a module-level expression statement

    # ---- helpers
    def flag(self, kind, what):
        self.found.append((kind, f"{self.label} {what}"))

    def lookup(self, name):
        """The binding a name load sees, or ``None`` for a builtin/unknown name."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.module:
            return self.module[name]
        return self.trusted.get(name)

    def qualified(self, node):
        """The dotted import path an expression denotes (``np.testing`` ->
        ``numpy.testing``), or ``None``."""
        parts = _dotted(node)
        if parts is None:
            return None
        binding = self.lookup(parts[0])
        if binding is None or binding.qualified is None:
            return None
        return ".".join([binding.qualified, *parts[1:]])

    def is_allowed(self, canonical):
        if any(part.startswith("_") for part in canonical.split(".")[1:]):
            return False  # crowdlearn._solvers.logistic, crowdlearn.simulate.__dict__, ._rng...
        return any(canonical == a or canonical.startswith(a + ".") for a in self.allowed)

    def is_stepping_stone(self, canonical):
        return canonical == "crowdlearn" or any(a.startswith(canonical + ".")
                                                for a in self.allowed)

    def check_package(self, dotted, how, node=None):
        """Flag a reference to ``crowdlearn`` outside the allowlist; ``how`` says how it
        was reached (``imports``, ``uses``)."""
        if not (dotted == "crowdlearn" or dotted.startswith("crowdlearn.")):
            return
        canonical = _canonical(dotted)
        if canonical == _POLICY_MODULE or canonical.startswith(_POLICY_MODULE + ".") or \
                dotted.startswith(_POLICY_MODULE):
            self.flag("tamper", f"{how} {dotted}, the module of the checks' own helpers")
            return
        if self.is_allowed(canonical):
            return
        if self.is_stepping_stone(canonical) and how == "imports":
            return
        if self.is_stepping_stone(canonical):
            # the bare package (or a module on the way to an allowed name) used as a value
            # (a maximal attribute chain, not an alias assignment): it can reach anything
            self.flag("package", f"uses the module {dotted} as a value, which can reach the "
                                 "package's reference implementations")
            return
        shown = dotted if dotted == canonical else f"{dotted} ({canonical})"
        self.flag("package", f"{how} {shown}, the package's own implementation, which this "
                             "assignment asks you to write yourself")

    def bind(self, name, binding, node=None):
        """A store of ``name`` in the current scope (module level: checked for tampering)."""
        if name == _CHECKS_NAME:
            self.flag("tamper", f"rebinds {_CHECKS_NAME}, the checks' comparison helpers")
        if name == "__builtins__":
            self.flag("tamper", "assigns __builtins__")
        if self.scopes and name not in self.declared_global[-1]:
            self.scopes[-1][name] = binding
            return
        old = self.trusted.get(name)
        same_import = (old is not None and old.qualified is not None
                       and binding.qualified == old.qualified)
        if not same_import and old is not None and old.how in ("import", "module", "def") \
                and \
                name in self.check_names:
            self.flag("tamper", f"rebinds {name}, which the instructor's cells define and "
                                "the checks rely on")
        elif not same_import and old is None and name in _BUILTIN_NAMES and \
                name in self.check_names:
            self.flag("tamper", f"rebinds the builtin {name}, which the checks call")
        self.module[name] = binding
        self.bound_here.add(name)

    def store_target(self, target, value_binding_of=None):
        """Assignment targets: names are bound, attributes/subscripts checked for
        monkeypatching."""
        if isinstance(target, _ast.Name):
            self.bind(target.id, value_binding_of(target.id) if value_binding_of else
                      _Binding())
        elif isinstance(target, (_ast.Tuple, _ast.List)):
            for elt in target.elts:
                self.store_target(elt)
        elif isinstance(target, _ast.Starred):
            self.store_target(target.value)
        elif isinstance(target, (_ast.Attribute, _ast.Subscript)):
            self.check_mutation(target, "assigns")
            self.visit(target)  # the loads inside (a.b[c] loads a, b, c)

    def describe(self, node):
        try:
            return _ast.unparse(node)[:60]
        except Exception:
            return "an object"

    def check_mutation(self, target, verb):
        """``target`` (an Attribute or Subscript) is assigned, deleted or setattr'd."""
        root = _root(target)
        shown = self.describe(target)
        attribute = isinstance(target, _ast.Attribute) or (
            isinstance(target, _ast.Subscript) and isinstance(target.value, _ast.Attribute)
            and isinstance(_root(target.value), _ast.Name)
            and self._is_module_like(_root(target.value).id))
        if not isinstance(root, _ast.Name):
            if isinstance(root, _ast.Call) and isinstance(target, _ast.Subscript) and \
                    isinstance(root.func, _ast.Name) and root.func.id == "globals":
                self.flag("tamper", f"{verb} {shown}, which patches a namespace")
            elif isinstance(root, _ast.Call) and isinstance(root.func, _ast.Name) and \
                    root.func.id in ("globals", "locals", "vars", "getattr", "type",
                                     "__import__"):
                self.flag("tamper", f"{verb} {shown}, which patches a namespace")
            elif attribute and isinstance(target, _ast.Attribute):
                self.flag("tamper", f"{verb} {shown}, an attribute of an object it did not "
                                    "create (monkeypatching)")
            return
        name = root.id
        if name in (_CHECKS_NAME, "__builtins__"):
            self.flag("tamper", f"{verb} {shown}, which tampers with the checks")
            return
        binding = self.lookup(name)
        if binding is None:
            if name in _BUILTIN_NAMES or isinstance(target, _ast.Attribute):
                self.flag("tamper", f"{verb} {shown}, an attribute of {name} (monkeypatching)")
            return
        if binding.qualified is not None:
            if isinstance(target, _ast.Subscript) and binding.qualified.split(".")[0] in (
                    "matplotlib",) and verb == "assigns":
                return  # plt.rcParams["figure.figsize"] = ...: a setting, not a patch
            self.flag("tamper", f"{verb} {shown}, monkeypatching the module or object "
                                f"{binding.qualified}")
            return
        if binding.who != "student" and (isinstance(target, _ast.Attribute)
                                         or binding.how in ("def", "import", "module")):
            self.flag("tamper", f"{verb} {shown}, an attribute of {name} from the "
                                "instructor's cells (monkeypatching)")
            return
        if isinstance(target, _ast.Attribute) and binding.how != "self" and (
                not isinstance(target.value, _ast.Name) or binding.how == "param"):
            # x[0].allclose = ..., ns.m.allclose = ..., def patch(m): m.allclose = ...:
            # the object may be a module the student smuggled in
            self.flag("tamper", f"{verb} {shown}, an attribute of an object that may not be "
                                "its own (monkeypatching)")

    def _is_module_like(self, name):
        b = self.lookup(name)
        return b is not None and b.qualified is not None

    def value_binding(self, value):
        """The binding an assignment ``x = value`` gives ``x``: an alias if ``value`` denotes
        an imported module/object, else data (tainted if it uses a tainted name)."""
        q = self.qualified(value) if isinstance(value, (_ast.Name, _ast.Attribute)) else None
        if q is None:
            return _Binding()
        module = isinstance(value, _ast.Name) and self.lookup(value.id).how == "module" or \
            q in _sys.modules
        return _Binding(qualified=q, how="module" if module else "import")

    # ---- statements
    def visit_Expr(self, node):
        # print(Q), m_step(Q, Y) at module level: looking at the checks' data is debugging
        old = self.inspecting
        self.inspecting = not self.scopes
        try:
            self.visit(node.value)
        finally:
            self.inspecting = old

    def visit_Import(self, node):
        for alias in node.names:
            self.check_module_name(alias.name)
            if alias.asname:
                self.bind(alias.asname, _Binding(alias.name, "module"))
            else:
                top = alias.name.split(".")[0]
                self.bind(top, _Binding(top, "module"))

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:
            self.flag("dynamic", f"uses a relative import (from {'.' * node.level}{module})")
            return
        self.check_module_name(module, imported_names=[a.name for a in node.names])
        for alias in node.names:
            if alias.name == "*":
                if module.startswith("crowdlearn") or module in _DYNAMIC_MODULES | \
                        _TAMPER_MODULES:
                    self.flag("package" if module.startswith("crowdlearn") else "dynamic",
                              f"imports * from {module}")
                continue
            full = f"{module}.{alias.name}"
            if full in _TAMPER_MODULES:
                self.flag("tamper", f"imports {full}, which can rebind what the checks use")
            elif full in _DYNAMIC_MODULES:
                self.flag("dynamic", f"imports {full}, which runs or reaches code the audit "
                                     "cannot read")
            self.check_package(full, "imports")
            if module in ("os", "posix", "nt") and alias.name in _OS_EXEC:
                self.flag("dynamic", f"imports {full}, which runs other programs")
            if module == "sys" and alias.name in ("modules", "_getframe", "settrace",
                                                  "setprofile", "meta_path", "path_hooks"):
                self.flag("dynamic", f"imports {full}")
            self.bind(alias.asname or alias.name, _Binding(
                full, "module" if full in _sys.modules else "import"))

    def check_module_name(self, name, imported_names=()):
        top = name.split(".")[0]
        if name in _TAMPER_MODULES or top in ("builtins", "__builtin__"):
            self.flag("tamper", f"imports {name}, which can rebind what the checks use")
        elif name in _DYNAMIC_MODULES or top in _DYNAMIC_MODULES:
            self.flag("dynamic", f"imports {name}, which runs or reaches code the audit "
                                 "cannot read")
        elif name.startswith("crowdlearn") and not imported_names:
            self.check_package(name, "imports")
        elif name.startswith("crowdlearn") and name.startswith(_POLICY_MODULE):
            self.check_package(name, "imports")

    def visit_Assign(self, node):
        binding = self.value_binding(node.value)
        if binding.qualified is None or binding.qualified.startswith(_POLICY_MODULE) or (
                isinstance(node.value, _ast.Attribute)
                and not binding.qualified.startswith("crowdlearn")):
            # an alias (m = crowdlearn, f = np, s = crowdlearn.symbolic) is judged where it
            # is used; np.testing or np.__dict__ is judged here
            self.visit(node.value)
        for target in node.targets:
            if isinstance(target, _ast.Name):
                self.bind(target.id, binding)
            else:
                self.store_target(target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.annotation)
        if isinstance(node.target, _ast.Name):
            if node.value is not None or self.scopes:
                self.bind(node.target.id, self.value_binding(node.value)
                          if node.value is not None else _Binding())
        else:
            self.store_target(node.target)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, _ast.Name):
            self.visit(_ast.Name(id=node.target.id, ctx=_ast.Load()))
            self.bind(node.target.id, _Binding())
        else:
            self.store_target(node.target)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.store_target(node.target)

    def visit_Delete(self, node):
        for target in node.targets:
            if isinstance(target, (_ast.Attribute, _ast.Subscript)):
                self.check_mutation(target, "deletes")
                self.visit(target)
            else:
                for name in _target_names(target):
                    if name == _CHECKS_NAME or (not self.scopes and name in self.trusted
                                                and self.trusted[name].how != "data"):
                        self.flag("tamper", f"deletes {name}, which the checks use")
                    (self.scopes[-1] if self.scopes else self.module).pop(name, None)

    def visit_For(self, node):
        self.visit(node.iter)
        self.store_target(node.target)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.store_target(item.optional_vars)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_ExceptHandler(self, node):
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bind(node.name, _Binding())
        for stmt in node.body:
            self.visit(stmt)

    def visit_Global(self, node):
        for name in node.names:
            if self.scopes:
                self.scopes[-1].pop(name, None)
                if isinstance(node, _ast.Global):
                    self.declared_global[-1].add(name)
            if name in (_CHECKS_NAME, "__builtins__"):
                self.flag("tamper", f"declares global {name}")

    visit_Nonlocal = visit_Global

    def _function(self, node, name=None):
        for dec in getattr(node, "decorator_list", []):
            self.visit(dec)
        args = node.args
        for default in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(default)
        if name is not None:
            self.bind(name, _Binding(how="def"))
        scope = {n: _Binding() for n in _local_names(node)}
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs,
                  *[a for a in (args.vararg, args.kwarg) if a is not None]]
        in_class = bool(self.kinds) and self.kinds[-1] == "class"
        for k, a in enumerate(params):
            scope[a.arg] = _Binding(how="self" if (k == 0 and in_class and name) else "param")
        self.scopes.append(scope)
        self.kinds.append("function")
        self.declared_global.append(set())
        try:
            if isinstance(node.body, list):
                for stmt in node.body:
                    self.visit(stmt)
            else:
                self.visit(node.body)
        finally:
            self.scopes.pop()
            self.kinds.pop()
            self.declared_global.pop()

    def visit_FunctionDef(self, node):
        self._function(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._function(node)

    def visit_ClassDef(self, node):
        for expr in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.visit(expr)
        self.bind(node.name, _Binding(how="def"))
        lying = sorted({n for stmt in node.body for n in (
            [stmt.name] if isinstance(stmt, (_ast.FunctionDef, _ast.AsyncFunctionDef)) else
            [t for t in (stmt.targets if isinstance(stmt, _ast.Assign) else
                         [stmt.target] if isinstance(stmt, _ast.AnnAssign) else [])
             for t in _target_names(t)]) if n in _LYING_DUNDERS})
        if lying:
            self.flag("tamper", f"defines the class {node.name} with its own "
                                f"{', '.join(lying[:3])}, which can make a check's "
                                "comparison lie")
        self.scopes.append({})
        self.kinds.append("class")
        self.declared_global.append(set())
        try:
            for stmt in node.body:
                self.visit(stmt)
        finally:
            self.scopes.pop()
            self.kinds.pop()
            self.declared_global.pop()

    def _comprehension(self, node):
        self.scopes.append({})
        self.kinds.append("function")
        self.declared_global.append(set())
        try:
            for gen in node.generators:
                self.visit(gen.iter)
                self.store_target(gen.target)
                for cond in gen.ifs:
                    self.visit(cond)
            for field in ("elt", "key", "value"):
                if getattr(node, field, None) is not None:
                    self.visit(getattr(node, field))
        finally:
            self.scopes.pop()
            self.kinds.pop()
            self.declared_global.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # ---- expressions
    def visit_Name(self, node):
        if not isinstance(node.ctx, _ast.Load):
            return
        name = node.id
        if name == _CHECKS_NAME:
            self.flag("tamper", f"uses {_CHECKS_NAME}, the checks' own helpers")
            return
        if name == "__builtins__":
            self.flag("tamper", "uses __builtins__")
            return
        if name == "get_ipython" and self.lookup(name) is None:
            self.flag("dynamic", "uses get_ipython(), which runs code the audit cannot read")
            return
        if name in ("setattr", "delattr", "getattr") and self.lookup(name) is None:
            self.flag("dynamic", f"passes {name} around as a value")
            return
        if name in _DYNAMIC_CALLS and self.lookup(name) is None:
            self.flag("dynamic", f"uses {name}(), dynamic code execution or namespace access")
            return
        binding = self.lookup(name)
        if binding is None:
            return
        if binding.qualified is not None:
            if binding.how == "module" and not binding.qualified.startswith("crowdlearn"):
                self.flag("tamper", f"uses the module {name} as a value (passed around, it "
                                    "can be patched)")
                return
            self.check_package(binding.qualified, "uses", node)
            return
        if binding.who == "student" and binding.taint:
            self.flag("package", f"uses {name}, {binding.taint}")
        elif binding.who == "check" and (binding.how in ("def", "import") or (
                binding.taint and self.answer_names is not None
                and name not in self.answer_names
                and not (self.inspecting and not self.scopes))):
            self.flag("package", f"uses {name}, which only the autograder's check cells "
                                 "define" + (f" ({binding.taint})" if binding.taint else ""))

    def visit_Attribute(self, node):
        parts = _dotted(node)
        attr = node.attr
        if attr in _INTROSPECTION:
            self.flag("dynamic", f"uses .{attr}, introspection that reaches code and "
                                 "namespaces the audit cannot read")
            return
        if attr.startswith("_") and not attr.startswith("__") and attr not in \
                self.private_ok and attr in _package_private_names():
            self.flag("package", f"uses the private attribute .{attr} of "
                                 f"{self.describe(node.value)} (a package internal)")
            return
        if parts is not None:
            binding = self.lookup(parts[0])
            if binding is not None and binding.qualified is not None:
                q = ".".join([binding.qualified, *parts[1:]])
                if q.split(".")[0] in ("os", "posix", "nt") and parts[-1] in _OS_EXEC:
                    self.flag("dynamic", f"calls {q}, which runs other programs")
                    return
                if q.startswith("sys.") and parts[-1] in ("modules", "_getframe",
                                                         "settrace", "setprofile",
                                                         "meta_path", "path_hooks"):
                    self.flag("dynamic", f"uses {q}")
                    return
                if q.split(".")[0] == "crowdlearn":
                    self.check_package(q, "uses", node)
                    return
                if q.startswith(_POLICY_MODULE):
                    self.check_package(q, "uses", node)
                    return
                return  # numpy.linalg.norm and the like: fine to read
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        name = func.id if isinstance(func, _ast.Name) else None
        unbound = name is not None and self.lookup(name) is None
        if unbound and name in ("setattr", "delattr") and node.args:
            attr = node.args[1].value if len(node.args) > 1 and isinstance(
                node.args[1], _ast.Constant) and isinstance(node.args[1].value, str) else "?"
            target = _ast.Attribute(value=node.args[0], attr=attr, ctx=_ast.Store())
            self.check_mutation(target, f"calls {name} on")
        if unbound and name == "getattr" and len(node.args) >= 2:
            obj, attr = node.args[0], node.args[1]
            q = self.qualified(obj) if isinstance(obj, (_ast.Name, _ast.Attribute)) else None
            if isinstance(attr, _ast.Constant) and isinstance(attr.value, str):
                if q is not None:
                    fake = _ast.Attribute(value=obj, attr=attr.value, ctx=_ast.Load())
                    self.visit(fake)
                    for extra in node.args[2:]:
                        self.visit(extra)
                    return
            elif q is not None or not isinstance(obj, _ast.Name) or self.lookup(
                    obj.id) is None or self.lookup(obj.id).who != "student":
                self.flag("dynamic", f"calls getattr({self.describe(obj)}, "
                                     f"{self.describe(attr)}) with a computed name")
        if isinstance(func, _ast.Attribute) and isinstance(func.value, _ast.Call) and \
                isinstance(func.value.func, _ast.Name) and func.value.func.id == "get_ipython":
            self.ipython_call(node)
            return
        # callback= hooks into the package's EM
        q = self.qualified(func) if isinstance(func, (_ast.Name, _ast.Attribute)) else None
        if q is not None and q.startswith("crowdlearn") and any(
                k.arg == "callback" for k in node.keywords):
            self.flag("package", f"passes callback= to {q}, hooking into the package's EM")
        # sympify of strings smuggling code
        last = func.attr if isinstance(func, _ast.Attribute) else name
        if last in _SYMPY_PARSERS and node.args:
            arg = node.args[0]
            if isinstance(arg, _ast.JoinedStr) or _builds_text(arg) or (
                    isinstance(arg, _ast.Constant) and isinstance(arg.value, str) and any(
                    s in arg.value for s in ("__", "import", "crowdlearn", "lambda",
                                             "exec", "eval", "open", "getattr"))):
                self.flag("dynamic", f"passes code as a string to {last}(), which "
                                     "evaluates it")
        if unbound and name == "type" and len(node.args) == 3:
            self.flag("dynamic", "builds a class with type(name, bases, namespace)")
        if not (unbound and name in ("setattr", "delattr", "getattr")):
            self.visit(func)
        for arg in [*node.args, *[k.value for k in node.keywords]]:
            self.visit(arg)

    def ipython_call(self, node):
        func = node.func
        method = func.attr if isinstance(func, _ast.Attribute) else ""
        args = [a.value if isinstance(a, _ast.Constant) else None for a in node.args]
        magic = args[0] if args and isinstance(args[0], str) else None
        if method in ("run_line_magic", "run_cell_magic") and magic in _SAFE_MAGICS:
            return
        if method == "run_line_magic" and magic == "load_ext" and len(args) > 1 and \
                args[1] == "autoreload":
            return
        if method in ("run_line_magic", "run_cell_magic") and magic in _CODE_MAGICS:
            code = args[-1] if isinstance(args[-1], str) else None
            if method == "run_line_magic" and code is not None:
                code = code.split(" ", 1)[-1] if code.startswith("-") else code
            tree = _parse(code) if code is not None else None
            if tree is not None:
                for stmt in tree.body:
                    self.visit(stmt)
                return
        what = {"system": "runs a shell command (!)", "getoutput": "runs a shell command (!)"}
        self.flag("dynamic", what.get(method, f"uses IPython's {method or 'get_ipython'}"
                                               f"{f' %{magic}' if magic else ''}, code the "
                                               "audit cannot read"))


def _banned(dotted, allowed) -> bool:
    if not (dotted == "crowdlearn" or dotted.startswith("crowdlearn.")):
        return False
    canonical = _canonical(dotted)
    return not any(canonical == a or canonical.startswith(a + ".") for a in allowed)


def _trusted_bindings(cells, trusted_idx, allowed):
    """name -> _Binding for what the instructor's cells bind at module level; names the check
    cells load."""
    out, check_loads = {}, set()
    order = sorted(trusted_idx)
    for i in order:
        cell = cells[i]
        is_check = bool(_meta(cell).get("grade"))
        who = "check" if is_check else "setup"
        tree = _parse(_source(cell))
        if tree is None:
            continue
        tainted_here = set()
        if is_check:
            for node in _ast.walk(tree):
                if isinstance(node, _ast.Name) and isinstance(node.ctx, _ast.Load):
                    check_loads.add(node.id)
        for stmt in tree.body:
            found = []
            for node in _ast.walk(stmt):
                if isinstance(node, _ast.Import):
                    for a in node.names:
                        found.append(((a.asname or a.name.split(".")[0]),
                                      _Binding(a.name if a.asname else a.name.split(".")[0],
                                               "module", who)))
                elif isinstance(node, _ast.ImportFrom) and not node.level:
                    for a in node.names:
                        if a.name != "*":
                            full = f"{node.module}.{a.name}"
                            found.append((a.asname or a.name, _Binding(
                                full, "module" if full in _sys.modules else "import", who)))
                elif isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef,
                                       _ast.ClassDef)):
                    found.append((node.name, _Binding(None, "def", who)))
            if isinstance(stmt, (_ast.Assign, _ast.AnnAssign, _ast.AugAssign, _ast.For,
                                 _ast.With)) or isinstance(stmt, _ast.Expr):
                # a statement that reaches the package taints the names it stores (and the
                # receivers of .append(...) in it: the callback's `states`)
                loads = {n.id for n in _ast.walk(stmt) if isinstance(n, _ast.Name)}
                reaches = any(out.get(n) is not None and out[n].qualified is not None
                              and _banned(out[n].qualified, allowed)
                              or n in tainted_here for n in loads)
                targets = []
                for node in _ast.walk(stmt):
                    if isinstance(node, _ast.Name) and isinstance(node.ctx, _ast.Store):
                        targets.append(node.id)
                    elif isinstance(node, _ast.Call) and isinstance(
                            node.func, _ast.Attribute) and isinstance(
                            node.func.value, _ast.Name) and node.func.attr in (
                            "append", "extend", "update", "add", "insert"):
                        targets.append(node.func.value.id)
                for t in targets:
                    if reaches and is_check:
                        tainted_here.add(t)
                    if t not in out or out[t].who == "check":
                        out[t] = _Binding(None, "data", who,
                                          "a result the checks computed with the package"
                                          if (reaches and is_check) else None)
            for name, binding in found:
                if name in out and out[name].who == "setup" and who == "check":
                    continue  # a name the setup binds stays the setup's
                out[name] = binding
    return out, check_loads


def _private_names_defined(trees) -> set:
    """Private attribute names the student's own code defines (``self._x = ...``, methods)."""
    names = set()
    for tree in trees:
        for node in _ast.walk(tree):
            if isinstance(node, _ast.Attribute) and isinstance(node.ctx, _ast.Store) and \
                    isinstance(node.value, _ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
            elif isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)):
                names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _instructor_reference(instructor) -> tuple:
    """``(grade_id -> normalised code of the instructor's non-solution cell, names the
    solution cells use)``; both empty without an instructor notebook."""
    reference, answer_names = {}, set()
    if instructor:
        for cell in _cells(instructor):
            meta = _meta(cell)
            if cell.get("cell_type") == "code" and meta.get("solution"):
                # names the template and the solution use (e.g. the stub's `return prior`)
                tree = _parse(_source(cell))
                answer_names.update(n.id for n in (_ast.walk(tree) if tree else ())
                                    if isinstance(n, _ast.Name))
            if cell.get("cell_type") == "code" and not meta.get("solution") and \
                    meta.get("grade_id"):
                reference[meta["grade_id"]] = _normalised(_source(cell))
    return reference, answer_names


def _split_cells(cells, instructor, reference: dict) -> tuple:
    """``(indices of trusted code cells, indices of the code cells to audit)``: a cell is
    trusted if it repeats the instructor's cell of its grade_id exactly (without an
    instructor notebook: if its metadata marks it a check or locked), never a solution."""
    trusted_idx, student_idx = set(), []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        if meta.get("solution"):
            student_idx.append(i)
        elif instructor:
            gid = meta.get("grade_id")
            if gid in reference and reference[gid] == _normalised(_source(cell)):
                trusted_idx.add(i)
            else:
                student_idx.append(i)
        elif meta.get("grade") or meta.get("locked"):
            trusted_idx.add(i)
        else:
            student_idx.append(i)
    return trusted_idx, student_idx


def audit(nb, assignment_name: str, *, instructor=None, source=None) -> list:
    """Every :class:`Finding` in the student-editable code cells of ``nb``, in cell order.

    ``instructor`` is the instructor's notebook (default: ``<source>/<assignment_name>.md``,
    ``source`` defaulting to ``book/assignments``). Its non-solution cells whose code a cell
    of ``nb`` repeats exactly (same ``grade_id``) are trusted; every other code cell is
    audited. Pass ``instructor=False`` to trust cells by their nbgrader metadata alone
    (locked or check cells that are not solution cells).
    """
    try:
        cells = _cells(nb)
    except Exception:
        return []
    if instructor is None:
        try:
            instructor = _instructor_notebook(assignment_name, source)
        except Exception:
            instructor = None
    reference, answer_names = _instructor_reference(instructor)
    trusted_idx, student_idx = _split_cells(cells, instructor, reference)
    try:
        allowed = allowlist(assignment_name, instructor if instructor else
                            {"cells": [cells[i] for i in sorted(trusted_idx)]})
    except Exception:
        allowed = frozenset(_canonical(n) for n in ALLOWLIST.get(assignment_name, _COMMON))
    trusted, check_loads = _trusted_bindings(cells, trusted_idx, allowed)
    if not instructor:
        # without the instructor's version the template's names are unknown: the checks'
        # data (not their functions or imports) is then left to the checks
        answer_names = None
    trees = {i: _parse(_source(cells[i])) for i in student_idx}
    private_ok = _private_names_defined(t for t in trees.values() if t is not None)
    module = {}
    findings = []
    for i in student_idx:
        tree = trees[i]
        if tree is None:
            continue  # a syntax error: the cell fails, and so do the checks that need it
        gid = _meta(cells[i]).get("grade_id")
        label = f"cell {gid!r}" if gid and _meta(cells[i]).get("solution") else \
            f"an added cell (#{i + 1})"
        auditor = _CellAuditor(label, module, trusted, allowed, check_loads, private_ok,
                               answer_names)
        try:
            for stmt in tree.body:
                auditor.visit(stmt)
        except RecursionError:
            auditor.found.append(("dynamic", f"{label} is too deeply nested to audit"))
        except Exception as exc:  # fail closed: code the audit cannot read is not trusted
            auditor.found.append(("dynamic", f"{label} could not be audited "
                                             f"({type(exc).__name__})"))
        seen = set()
        for kind, reason in auditor.found:
            if (kind, reason) not in seen:
                seen.add((kind, reason))
                findings.append(Finding(i, kind, reason))
        if auditor.found:
            taint = f"which {label} computed with the package or a forbidden trick"
            for name in auditor.bound_here:
                b = module.get(name)
                if b is not None and b.qualified is None:
                    b.taint = taint
    return findings


def _grade_checks(cells):
    """Indices of the autograded checks (code cells with grade and not solution)."""
    return [i for i, c in enumerate(cells) if c.get("cell_type") == "code"
            and _meta(c).get("grade") and not _meta(c).get("solution")
            and _meta(c).get("grade_id")]


def _task_checks(cells, index):
    """The checks of the task of cell ``index``: the checks after it up to the next solution
    code cell; if there are none, those of the next task."""
    solutions = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"
                 and _meta(c).get("solution")]
    checks = _grade_checks(cells)
    start = index
    for _ in range(len(cells)):
        nxt = min([s for s in solutions if s > start], default=len(cells))
        group = [i for i in checks if start < i < nxt]
        if group or nxt >= len(cells):
            return group
        start = nxt
    return []


def flagged_checks(nb, assignment_name: str, *, instructor=None, source=None) -> dict:
    """The checks of a submission to review, and why: ``{check grade_id: reason}`` (the
    grader lists them in ``grades-review.csv``; they change no score).

    Parameters
    ----------
    nb : nbformat notebook (or its dict)
        A student's submission, after the grader restored the instructor's check cells.
        Nothing in it is executed: its code is parsed with :mod:`ast` (IPython magics
        translated first) and read.
    assignment_name : str
        The assignment, e.g. ``"a5_choosing_penalty"``: selects the allowlist and the
        instructor's version.
    instructor : notebook, optional
        The instructor's version (default: read from ``source``). Its non-solution code cells
        are trusted where ``nb`` repeats them; ``False`` trusts cells by metadata alone.
    source : path, optional
        The folder of instructor versions (default ``book/assignments``).

    Returns
    -------
    dict
        ``grade_id -> one-sentence reason`` for every check whose points are withheld; ``{}``
        for a clean submission. Never raises: unreadable cells (syntax errors) are skipped
        -- they fail at run time, and so do the checks that need them.

    Notes
    -----
    ``package`` findings withhold the checks of their own task (and of later tasks that use
    a name the flagged cell bound); ``dynamic`` and ``tamper`` findings withhold every later
    check. See :data:`RULES` and the module docstring.
    """
    try:
        findings = audit(nb, assignment_name, instructor=instructor, source=source)
        cells = _cells(nb)
        if not findings:
            return {}
        checks_idx = _grade_checks(cells)
        out = {}
        for index, kind, reason in findings:  # a Finding
            if kind == "package":
                targets = _task_checks(cells, index)
            else:
                targets = [i for i in checks_idx if i > index]
            sentence = reason.rstrip(".") + (
                "." if kind == "package" else ", which can change every later check.")
            for i in targets:
                gid = _meta(cells[i])["grade_id"]
                if gid not in out:
                    out[gid] = sentence
        return out
    except Exception as exc:  # never raise on hostile input: withhold nothing we cannot see
        import logging

        logging.getLogger(__name__).warning("classroom_policy could not audit %s: %r",
                                            assignment_name, exc)
        return {}
