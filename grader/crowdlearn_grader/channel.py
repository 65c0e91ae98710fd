r"""The data-only channel between the grader and a submission's kernel: JSON with plain data,
numeric arrays, SymPy ``srepr`` text (rebuilt by an allowlist walker, :func:`parse_sympy`) and
*handles* for objects that stay in the kernel; no pickle, no code, bounded sizes. The kernel
side is :func:`serve` (over its stdin channel), the grader's :func:`decode` (strict).
"""

from __future__ import annotations

import ast
import base64
import json
import math
import re
import sys

__all__ = ["ChannelError", "RemoteError", "StudentText", "decode", "encode", "parse_sympy",
           "serve"]

MAX_TEXT = 200_000  # characters of one string or SymPy expression the grader accepts
MAX_NODES = 200_000  # values (list items, dict entries; an array counts once) in one answer
MAX_INT_DIGITS = 400
_DTYPES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8",
                     "c8", "c16"})
PROMPT = "\x00crowdlearn-channel"


class ChannelError(ValueError):
    """An answer the grader cannot read as data (too big, malformed, or not allowed)."""


class StudentText(str):
    """A string from the student's code, never read as code; ``replace``/``strip`` keep it."""

    def replace(self, *args):
        return StudentText(str.replace(self, *args))

    def strip(self, *args):
        return StudentText(str.strip(self, *args))


class RemoteError(Exception):
    """The student's code raised ``type``: ``message`` while the grader called it."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message


# -- encoding (both sides) ------------------------------------------------------------------------
def _dtype_code(dtype) -> str | None:
    code = f"{dtype.kind}{dtype.itemsize}"
    return code if code in _DTYPES else None


def encode(value, *, unknown, _depth=0):
    """``value`` as JSON-ready data; ``unknown(obj)`` encodes what is not plain data."""
    import numpy as np
    if _depth > 60:
        raise ChannelError("nested more than 60 levels deep")
    again = lambda v: encode(v, unknown=unknown, _depth=_depth + 1)  # noqa: E731
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if type(value) is complex:
        return {"$": "complex", "v": [again(value.real), again(value.imag)]}
    if isinstance(value, np.ndarray) and type(value) is np.ndarray:
        code = _dtype_code(value.dtype)
        if code is not None:
            data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
            return {"$": "ndarray", "dtype": code, "shape": list(value.shape),
                    "b64": base64.b64encode(data.tobytes()).decode("ascii")}
        if value.dtype == object:
            return {"$": "objarray", "shape": list(value.shape),
                    "v": [again(v) for v in value.ravel().tolist()]}
    if isinstance(value, np.generic):
        code = _dtype_code(value.dtype)
        if code is not None:
            return {"$": "scalar", "dtype": code, "b64": base64.b64encode(
                np.asarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()).decode()}
    if type(value) is list:
        return [again(v) for v in value]
    if type(value) is tuple:
        return {"$": "tuple", "v": [again(v) for v in value]}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return {"$": "record", "name": type(value).__name__,
                "fields": [str(f) for f in type(value)._fields],
                "v": [again(v) for v in value]}
    if type(value) is dict:
        return {"$": "dict", "v": [[again(k), again(v)] for k, v in value.items()]}
    if type(value) in (set, frozenset):
        return {"$": "set", "v": [again(v) for v in value]}
    sympy = sys.modules.get("sympy")  # loaded if the value can be SymPy
    if sympy is not None and isinstance(value, sympy.Basic):
        return {"$": "sympy", "srepr": sympy.srepr(value)}
    return unknown(value)


# -- decoding on the grader's side (strict) -------------------------------------------------------
class _Budget:
    def __init__(self):
        self.left = MAX_NODES

    def take(self, n: int = 1):
        self.left -= n
        if self.left < 0:
            raise ChannelError(f"an answer with more than {MAX_NODES} values")


_RECORDS: dict = {}


def _record_class(name: str, fields: list):
    from collections import namedtuple
    if not (isinstance(name, str) and name.isidentifier() and len(name) <= 80):
        name = "Record"
    if not (isinstance(fields, list) and all(isinstance(f, str) and len(f) <= 80
                                             for f in fields) and len(fields) <= 200):
        raise ChannelError("a record with malformed field names")
    key = (name, tuple(fields))
    if key not in _RECORDS:
        _RECORDS[key] = namedtuple(name, fields, rename=True)
    return _RECORDS[key]


def decode(data, *, handle, budget=None):
    """The value ``data`` encodes, allowed types only (handles via ``handle(id, info)``)."""
    import numpy as np
    budget = budget or _Budget()
    budget.take()
    again = lambda v: decode(v, handle=handle, budget=budget)  # noqa: E731
    if data is None or isinstance(data, bool):
        return data
    if isinstance(data, int):
        if abs(data) >= 10 ** MAX_INT_DIGITS:
            raise ChannelError("an integer with too many digits")
        return data
    if isinstance(data, float):
        return data
    if isinstance(data, str):
        if len(data) > MAX_TEXT:
            raise ChannelError(f"a string longer than {MAX_TEXT} characters")
        return StudentText(data)
    if isinstance(data, list):
        return [again(v) for v in data]
    if not isinstance(data, dict) or not isinstance(data.get("$"), str):
        raise ChannelError(f"not a value: {type(data).__name__}")
    tag = data["$"]
    if tag == "float":
        if data.get("v") not in ("nan", "inf", "-inf"):
            raise ChannelError("a malformed float")
        return float(data["v"])
    if tag == "complex":
        re_, im_ = (again(v) for v in _pair(data.get("v")))
        if not all(isinstance(x, (int, float)) for x in (re_, im_)):
            raise ChannelError("a malformed complex number")
        return complex(re_, im_)
    if tag in ("ndarray", "scalar"):
        return _decode_array(data, budget, np)
    if tag == "objarray":
        shape = _shape(data.get("shape"))
        items = [again(v) for v in _list(data.get("v"))]
        if len(items) != math.prod(shape):
            raise ChannelError("an object array whose size does not match its shape")
        out = np.empty(len(items), dtype=object)
        out[:] = items if items else []
        return out.reshape(shape)
    if tag == "tuple":
        return tuple(again(v) for v in _list(data.get("v")))
    if tag == "record":
        values = [again(v) for v in _list(data.get("v"))]
        cls = _record_class(data.get("name"), data.get("fields"))
        if len(values) != len(cls._fields):
            raise ChannelError("a record with a wrong number of values")
        return cls(*values)
    if tag == "dict":
        out = {}
        for pair in _list(data.get("v")):
            k, v = _pair(pair)
            key = again(k)
            try:
                hash(key)
            except TypeError:
                raise ChannelError("a dict key that cannot be hashed") from None
            out[key] = again(v)
        return out
    if tag == "set":
        try:
            return {again(v) for v in _list(data.get("v"))}
        except TypeError:
            raise ChannelError("a set item that cannot be hashed") from None
    if tag == "sympy":
        text = data.get("srepr")
        if not isinstance(text, str):
            raise ChannelError("a malformed SymPy expression")
        return parse_sympy(text)
    if tag == "handle":
        if not isinstance(data.get("id"), int):
            raise ChannelError("a malformed handle")
        return handle(data["id"], data)
    raise ChannelError(f"a value of unknown kind {tag[:40]!r}")


def _list(v) -> list:
    if not isinstance(v, list):
        raise ChannelError("a malformed value (expected a list)")
    return v


def _pair(v) -> list:
    if not (isinstance(v, list) and len(v) == 2):
        raise ChannelError("a malformed value (expected a pair)")
    return v


def _shape(shape) -> tuple:
    if not (isinstance(shape, list) and len(shape) <= 32
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2 ** 40
                    for n in shape)):
        raise ChannelError("an array with a malformed shape")
    return tuple(shape)


def _decode_array(data, budget, np):
    code = data.get("dtype")
    if code not in _DTYPES or not isinstance(data.get("b64"), str):
        raise ChannelError("an array of a type the grader does not read")
    dtype = np.dtype("?" if code == "b1" else "<" + code)
    raw = base64.b64decode(data["b64"], validate=True)
    shape = _shape(data.get("shape")) if data["$"] == "ndarray" else ()
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise ChannelError("an array whose data does not match its shape")
    budget.take(max(1, len(raw) // 64))
    out = np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    return out[()] if data["$"] == "scalar" else out


# -- SymPy expressions as text, rebuilt by an allowlist walker ---------------------------------
_SYMPY_CALLS = frozenset("""
Symbol Dummy Integer Rational Float Add Mul Pow log exp sin cos tan cot sec csc asin acos atan
atan2 sinh cosh tanh asinh acosh atanh Abs sign Max Min Piecewise ExprCondPair Eq Ne Lt Le Gt
Ge StrictLessThan StrictGreaterThan LessThan GreaterThan Equality Unequality And Or Not
Function Derivative Tuple Matrix ImmutableDenseMatrix MutableDenseMatrix ImmutableMatrix
Lambda Indexed IndexedBase Idx Sum Product KroneckerDelta Heaviside floor ceiling re im
conjugate erf sqrt
""".split())
_SYMPY_NAMES = frozenset({"pi", "E", "I", "oo", "zoo", "nan", "true", "false"})
_SYMPY_KEYWORDS = frozenset({"positive", "negative", "real", "integer", "nonnegative",
                             "nonpositive", "nonzero", "zero", "finite", "complex",
                             "rational", "commutative", "even", "odd", "prime", "extended_real",
                             "precision", "dummy_index", "imaginary", "infinite"})
_SAFE_NAME = re.compile(r"[A-Za-z_\\][\w|^{}\\,]{0,63}\Z")
_MAX_EXPONENT = 1000


def parse_sympy(text: str):
    """The ``srepr`` text rebuilt by calling only allowed SymPy classes on constants."""
    import sympy
    if len(text) > MAX_TEXT:
        raise ChannelError(f"a SymPy expression longer than {MAX_TEXT} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ChannelError("a SymPy expression the grader cannot read") from None
    count = [0]

    def build(node):
        count[0] += 1
        if count[0] > 50_000:
            raise ChannelError("a SymPy expression with more than 50000 parts")
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
            v = node.value
            if isinstance(v, int) and abs(v) >= 10 ** 60:
                raise ChannelError("an integer with more than 60 digits in an expression")
            if isinstance(v, str) and len(v) > 200:
                raise ChannelError("a long string in an expression")
            return v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = build(node.operand)
            if isinstance(v, (int, float)):
                return -v
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [build(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Name) and node.id in _SYMPY_NAMES:
            return getattr(sympy, "S").true if node.id == "true" else (
                sympy.S.false if node.id == "false" else getattr(sympy, node.id))
        if isinstance(node, ast.Call):
            return call(node)
        raise ChannelError("a SymPy expression with parts the grader does not read")

    def call(node):
        if isinstance(node.func, ast.Call):  # an undefined function applied: Function('f')(x)
            func = build(node.func)
            if not isinstance(func, sympy.core.function.UndefinedFunction):
                raise ChannelError("a SymPy expression with a call the grader does not read")
            return func(*[build(a) for a in node.args])
        if not (isinstance(node.func, ast.Name) and node.func.id in _SYMPY_CALLS):
            raise ChannelError("a SymPy expression with a call the grader does not read")
        name = node.func.id
        args = [build(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg not in _SYMPY_KEYWORDS:
                raise ChannelError("a SymPy expression with a keyword the grader does not read")
            kwargs[kw.arg] = build(kw.value)
        if name in ("Symbol", "Dummy", "Function", "IndexedBase", "Idx"):
            if not (args and isinstance(args[0], str) and _SAFE_NAME.match(args[0])):
                raise ChannelError("a SymPy name the grader does not accept (letters, digits, "
                                   "_ | ^ { } \\ and commas, at most 64)")
        if name == "Pow" and len(args) == 2 and getattr(args[1], "is_Integer", False) \
                and getattr(args[0], "is_Number", False) and abs(int(args[1])) > _MAX_EXPONENT:
            raise ChannelError("a number to a power above 1000 in an expression")
        try:
            return getattr(sympy, name)(*args, **kwargs)
        except ChannelError:
            raise
        except Exception as exc:
            raise ChannelError(f"a SymPy expression the grader cannot rebuild "
                               f"({type(exc).__name__})") from None
    try:
        return build(tree.body)
    except RecursionError:
        raise ChannelError("a SymPy expression nested too deeply") from None


# -- the kernel's side --------------------------------------------------------------------------
_HANDLES: dict = {}
_MAX_HANDLES = 100_000


def _kernel_unknown(obj):
    """A handle for an object that is not data (it stays in the kernel)."""
    if len(_HANDLES) >= _MAX_HANDLES:
        raise ChannelError("too many objects handed to the grader")
    key = len(_HANDLES) + 1
    _HANDLES[key] = obj
    cls = obj if isinstance(obj, type) else type(obj)
    mro = [f"{c.__module__}.{c.__qualname__}" for c in getattr(cls, "__mro__", ())][:20]
    return {"$": "handle", "id": key, "callable": callable(obj), "type": mro[0] if mro else "",
            "mro": mro}


def _kernel_encode(value):
    return encode(value, unknown=_kernel_unknown)


def _kernel_decode(data, ask):
    """The grader's data in the kernel (refs, callbacks to the grader, package objects)."""
    import numpy as np
    from types import SimpleNamespace
    again = lambda v: _kernel_decode(v, ask)  # noqa: E731
    if isinstance(data, list):
        return [again(v) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data["$"]
    if tag == "ref":
        return _HANDLES[data["id"]]
    if tag == "callback":
        key = data["id"]

        def callback(*args, **kwargs):
            reply = json.loads(ask(json.dumps({"callback": key, "args": _kernel_encode(list(args)),
                                               "kwargs": _kernel_encode(kwargs)})))
            if "error" in reply:
                raise RuntimeError(f"the grader's function raised {reply['error']}")
            return again(reply["ok"])
        return callback
    if tag == "object":
        state = {k: again(v) for k, v in data["state"]}
        try:
            import importlib
            cls = getattr(importlib.import_module(data["module"]), data["qualname"])
            obj = object.__new__(cls)
            for k, v in state.items():
                object.__setattr__(obj, k, v)
            return obj
        except Exception:
            return SimpleNamespace(**state)
    if tag == "record":
        from collections import namedtuple
        return namedtuple(data["name"], data["fields"], rename=True)(
            *[again(v) for v in data["v"]])
    if tag == "objarray":
        out = np.empty(len(data["v"]), dtype=object)
        out[:] = [again(v) for v in data["v"]]
        return out.reshape(data["shape"])
    if tag == "sympy":
        import sympy
        return sympy.sympify(data["srepr"])
    if tag == "tuple":
        return tuple(again(v) for v in data["v"])
    if tag == "dict":
        return {again(k): again(v) for k, v in data["v"]}
    if tag == "set":
        return {again(v) for v in data["v"]}
    if tag in ("ndarray", "scalar", "float", "complex"):
        return decode(data, handle=None)
    raise ChannelError(f"unknown kind {tag!r}")


def _dispatch(request: dict, namespace: dict, ask):
    op = request["op"]
    if op == "get":
        return {name: namespace[name] for name in request["names"] if name in namespace}
    target = _HANDLES[request["target"]]
    if op == "call":
        args = _kernel_decode(request.get("args", []), ask)
        kwargs = _kernel_decode(request.get("kwargs", {"$": "dict", "v": []}), ask)
        return target(*args, **kwargs)
    if op == "getattr":
        return getattr(target, request["name"])
    if op == "getitem":
        return target[_kernel_decode(request["key"], ask)]
    if op == "len":
        return len(target)
    if op == "iter":
        import itertools
        items = list(itertools.islice(iter(target), 100_001))
        if len(items) > 100_000:
            raise ChannelError("more than 100000 items to iterate over")
        return items
    if op == "array":
        import numpy as np
        return np.asarray(target)
    if op in ("str", "repr"):
        return (str if op == "str" else repr)(target)[:10_000]
    if op in ("float", "int", "bool", "complex"):
        return {"float": float, "int": int, "bool": bool, "complex": complex}[op](target)
    raise ChannelError(f"unknown request {op!r}")


def serve() -> None:
    """Answer one request of the grader (the grader runs this in the kernel, with stdin)."""
    import builtins
    from IPython import get_ipython
    ask = builtins.input
    request = json.loads(ask(PROMPT))
    try:
        result = _dispatch(request, get_ipython().user_ns, ask)
        reply = json.dumps({"ok": _kernel_encode(result)})
        most = request.get("max_bytes", 16 << 20)
        if len(reply) > most:
            raise ChannelError(f"the answer is {len(reply) / (1 << 20):.0f} MiB as data, more "
                               f"than the grader reads ({most / (1 << 20):.0f} MiB)")
    except BaseException as exc:  # the student's code failed: say how, not why it matters
        reply = json.dumps({"error": {"type": type(exc).__name__, "message": str(exc)[:2000]}})
    ask(reply)
