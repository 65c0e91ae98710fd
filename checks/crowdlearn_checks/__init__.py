r"""What the assignments' check cells use: comparisons that later monkeypatching cannot change,
and (:mod:`crowdlearn_checks.references`) what some checks compare an answer with.

The book's assignments (``book/assignments/``) bind :data:`checks` in a locked cell before any
of the student's code runs::

    from crowdlearn_checks import checks as _checks

so in a student's own Jupyter, rebinding ``np.allclose`` after that cell changes nothing for the
visible checks. When a class is graded, the grader (the separate ``crowdlearn-grader``
distribution) runs every check in its own process with this same module. This distribution is
what a student needs besides ``crowdlearn`` to run the checks; it has no grading code.

Examples
--------
>>> checks.allclose([1.0, 2.0], [1.0, 2.0 + 1e-12])
True
>>> checks.assert_allclose([1.0], [1.5], err_msg="not the prior")
Traceback (most recent call last):
...
AssertionError: not the prior
"""

from __future__ import annotations

import numpy as _numpy

__all__ = ["checks"]


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
    answer = getattr(type(obj), "_answers_is_a", None)  # a grader's handle on a kernel's object
    return answer(obj, cls) if answer is not None else _isinstance(obj, cls)


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
        return "<crowdlearn_checks.checks: allclose, isclose, assert_allclose, " \
               "array_equal, isfinite, all, any, is_a, expression>"


checks = _Checks()
"""Comparison helpers for check cells, immune to monkeypatching of numpy after import:
``allclose``, ``isclose``, ``assert_allclose``, ``array_equal``, ``isfinite``, ``all``,
``any`` (numpy's semantics and defaults), and ``is_a`` (``isinstance`` that also answers for
an object in the student's kernel), ``expression`` (a SymPy expression or number, never
text)."""
