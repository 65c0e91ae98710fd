r"""The checks run here, in the grader's own process; the student's code runs in the sandbox.

Instructor cells run in the kernel and here (:class:`TrustedRunner`), checks here only; a name a
check needs from the student comes over the :mod:`~crowdlearn_grader.channel` as data or as a
:class:`Remote` proxy. So every verdict is computed by the grader.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import queue
import signal
import symtable
import threading
import time
from functools import partialmethod

from crowdlearn_grader.channel import (PROMPT, ChannelError, RemoteError, StudentText, decode,
                                         encode)
from crowdlearn_grader.sandbox import _defined_names

__all__ = ["Remote", "TrustedRunner", "CheckTimeout", "KernelGone"]

_BOOT = "__import__('crowdlearn_grader.channel', fromlist=['serve']).serve()"


class CheckTimeout(Exception):
    """The check (or the student's code it called) ran longer than the time limit."""


class KernelGone(Exception):
    """The kernel died while the grader was waiting for it."""


class Remote:
    """An object in the student's kernel: using it is a request answered as data or Remote."""

    __slots__ = ("_channel", "_id", "_info")

    def __init__(self, channel, key: int, info: dict):
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_id", key)
        object.__setattr__(self, "_info", info)

    def _ask(self, op, **payload):
        return self._channel.request({"op": op, "target": self._id, **payload})

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name, value):
        raise AttributeError("the grader does not change the student's objects")

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=self._channel.encode(list(args)),
                         kwargs=self._channel.encode(dict(kwargs)))

    def __getitem__(self, key):
        return self._ask("getitem", key=self._channel.encode(key))

    def __len__(self):
        n = self._ask("len")
        if not (isinstance(n, int) and n >= 0):
            raise TypeError("len() of the student's object is not a non-negative integer")
        return n

    def __iter__(self):
        items = self._ask("iter")
        if not isinstance(items, list):
            raise TypeError("the student's object did not iterate to a list")
        return iter(items)

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        value = self._ask("array")
        if not isinstance(value, np.ndarray) or value.dtype == object:
            raise TypeError("the student's object is not a numeric array")
        return value.astype(dtype) if dtype is not None else value

    def _number(self, op, kind):
        value = self._ask(op)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise TypeError(f"{op}() of the student's object is not a {kind.__name__}")
        return value

    __float__ = partialmethod(_number, "float", float)
    __int__ = __index__ = partialmethod(_number, "int", int)
    __bool__ = partialmethod(_number, "bool", bool)
    __complex__ = partialmethod(_number, "complex", complex)

    def _text(self, op: str) -> str:
        """``str``/``repr`` as the kernel gives it, or a placeholder if it cannot."""
        try:
            text = self._ask(op)
        except Exception:
            text = None
        return text if isinstance(text, str) else f"<student's {self._info.get('type', '')}>"

    __str__ = partialmethod(_text, "str")
    __repr__ = partialmethod(_text, "repr")

    def __format__(self, spec):
        return format(str(self), spec) if spec else str(self)

    def _answers_is_a(self, cls) -> bool:
        """Whether the kernel says the object is an instance of a class named like ``cls``."""
        name = f"{cls.__module__}.{cls.__qualname__}"
        return name in self._info.get("mro", [])


class Channel:
    """Requests to one kernel over its stdin channel (see :mod:`~crowdlearn_grader.channel`)."""

    def __init__(self, client, km, timeout: float):
        self.client, self.km, self.timeout = client, km, timeout
        self.deadline, self.callbacks, self.busy = None, {}, False
        self.printed, self.kept, self.cap, self.idle = [], 0, 1 << 20, None

    # the grader's data for the kernel
    def _unknown(self, obj):
        import dataclasses
        if isinstance(obj, Remote):
            if obj._channel is not self:
                raise ChannelError("an object of another submission")
            return {"$": "ref", "id": obj._id}
        if callable(obj) and not isinstance(obj, type):
            key = len(self.callbacks) + 1
            self.callbacks[key] = obj
            return {"$": "callback", "id": key}
        module = getattr(type(obj), "__module__", "") or ""
        if module.split(".")[0] == "crowdlearn":
            if dataclasses.is_dataclass(obj):
                state = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            else:
                state = dict(vars(obj))
            return {"$": "object", "module": module, "qualname": type(obj).__qualname__,
                    "state": [[k, self.encode(v)] for k, v in state.items()]}
        raise ChannelError(f"the grader cannot send a {type(obj).__name__} to the student's "
                           "code")

    def encode(self, value):
        return encode(value, unknown=self._unknown)

    def _handle(self, key, info):
        return Remote(self, key, info)

    def request(self, payload: dict):
        """The kernel's answer to ``payload``, decoded (:class:`RemoteError` if it raised)."""
        from jupyter_core.utils import run_sync
        if self.busy:
            raise ChannelError("a check called the student's code from inside a callback")
        self.busy = True
        most = max(getattr(self.km, "max_message", 16 << 20) - (256 << 10), 1 << 20)
        try:
            answer = run_sync(self._exchange)({**payload, "max_bytes": most})
        finally:
            self.busy = False
        if "error" in answer:
            err = answer["error"] if isinstance(answer["error"], dict) else {}
            raise RemoteError(str(err.get("type", "Error"))[:100],
                              str(err.get("message", ""))[:2000])
        if "ok" not in answer:
            raise ChannelError("a malformed answer from the kernel")
        return decode(answer["ok"], handle=self._handle)

    def _remaining(self) -> float:
        end = self.deadline if self.deadline is not None else time.monotonic() + self.timeout
        return end - time.monotonic()

    async def _exchange(self, payload: dict) -> dict:
        kc = self.client.kc
        msg_id = kc.execute(_BOOT, silent=True, store_history=False, allow_stdin=True,
                            stop_on_error=False)
        end = time.monotonic() + max(self._remaining(), 0.0)
        answer = None
        while answer is None:
            await self._drain(kc.iopub_channel)
            try:
                msg = await kc.stdin_channel.get_msg(timeout=0.02)
            except queue.Empty:  # (the shell only looked at: stdin is what we wait for)
                if await self._replied(kc, msg_id, wait=0):
                    raise ChannelError("the kernel did not answer the grader (did the code "
                                       "replace input(), or the channel module?)")
                if time.monotonic() > end:
                    raise CheckTimeout()
                if not await self.km.is_alive():
                    raise KernelGone()
                continue
            prompt = str(msg.get("content", {}).get("prompt", ""))
            if prompt == PROMPT:
                kc.input(json.dumps(payload))
                continue
            try:
                said = json.loads(prompt)
            except (ValueError, RecursionError):
                kc.input("")
                raise ChannelError("the kernel asked for input the grader did not expect "
                                   "(does the code call input()?)") from None
            if isinstance(said, dict) and "callback" in said:
                kc.input(self._callback(said))
                continue
            kc.input("")
            answer = said if isinstance(said, dict) else {}
        while time.monotonic() < end and not await self._replied(kc, msg_id):
            pass
        settle = min(end, time.monotonic() + 2.0)  # the last output: before "idle" on iopub
        while self.idle != msg_id and time.monotonic() < settle:
            await self._drain(kc.iopub_channel, wait=0.02, until=msg_id)
        return answer

    async def _drain(self, channel, most: int = 1000, wait: float = 0, until=None) -> None:
        """Keep what the kernel printed (``self.printed``, ``self.cap`` characters); note
        whose "idle" arrived (``self.idle``); stop at ``until``'s."""
        for _ in range(most):
            if until is not None and self.idle == until:
                return
            try:
                msg = await channel.get_msg(timeout=wait)
            except queue.Empty:
                return
            if msg.get("msg_type") == "status" and msg.get("content", {}).get(
                    "execution_state") == "idle":
                self.idle = msg.get("parent_header", {}).get("msg_id")
            if msg.get("msg_type") == "stream":
                content = msg.get("content", {})
                text = str(content.get("text", ""))[: max(self.cap - self.kept, 0)]
                if text:
                    name = "stderr" if content.get("name") == "stderr" else "stdout"
                    self.printed.append((name, text))
                    self.kept += len(text)

    async def _replied(self, kc, msg_id, wait: float = 0.01) -> bool:
        try:
            reply = await kc.shell_channel.get_msg(timeout=wait)
        except queue.Empty:
            return False
        return reply.get("parent_header", {}).get("msg_id") == msg_id

    def _callback(self, said: dict) -> str:
        """Run the grader's function the student's code called back; the answer as JSON."""
        try:
            func = self.callbacks[said["callback"]]
            args = decode(said.get("args", []), handle=self._handle)
            kwargs = decode(said.get("kwargs", {"$": "dict", "v": []}), handle=self._handle)
            if not isinstance(args, list) or not isinstance(kwargs, dict) or not all(
                    isinstance(k, str) for k in kwargs):
                raise ChannelError("a malformed call")
            return json.dumps({"ok": self.encode(func(*args, **kwargs))})
        except Exception as exc:
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"[:500]})


def _free_names(source: str) -> set:
    """Names ``source`` reads that it does not bind at its top level (its globals)."""
    try:
        top = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return set()
    found, todo = set(), [top]
    while todo:
        t = todo.pop()
        todo.extend(t.get_children())
        found |= {s.get_name() for s in t.get_symbols()
                  if s.is_referenced() and (s.is_global() or t is top)}
    return found - _defined_names(source)


class TrustedRunner:
    """One submission's namespace in the grader; the student's names fetched as needed."""

    def __init__(self, client, km, timeout: float, output_cap: int = 1 << 20, instructor=()):
        self.channel = Channel(client, km, timeout)
        self.timeout, self.output_cap = timeout, output_cap
        self.ns = {"__name__": "__main__", "__builtins__": builtins}
        self.own = set()  # what the instructor's cells bind: never taken from the kernel
        for source in instructor:
            self.own |= _defined_names(source)

    def _fetch(self, source: str) -> dict:
        wanted = sorted(n for n in _free_names(source) if n not in self.ns
                        and n not in self.own and not hasattr(builtins, n))
        if not wanted:
            return {}
        found = self.channel.request({"op": "get", "names": wanted})
        if not isinstance(found, dict):
            raise ChannelError("a malformed answer to the grader's request for names")
        return {k: v for k, v in found.items() if k in wanted}

    def run(self, cell, *, check: bool) -> str | None:
        """Execute ``cell`` here, replacing its outputs; why the run must stop, or None."""
        import nbformat
        out, error, stop = io.StringIO(), None, None
        limit = f"ran longer than the time limit ({self.timeout:g} s)"
        self.channel.deadline = time.monotonic() + self.timeout
        self.channel.printed, self.channel.kept = [], 0
        self.channel.cap = self.output_cap
        with _alarm(self.timeout), _no_text_as_code(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            try:
                fetched = self._fetch(cell.source)
                ns = self.ns  # as in Jupyter, what a check binds stays for the next ones
                ns.update(fetched)
                try:
                    exec(compile(cell.source, f"<check {cell.get('id', '')}>", "exec"), ns)
                finally:  # the student's names are fetched afresh by the next cell
                    for k, v in fetched.items():
                        if ns.get(k) is v:
                            del ns[k]
            except CheckTimeout:
                stop = f"not run: an earlier cell {limit}"
                error = ("TimeLimit", f"this check {limit} and was stopped")
            except KernelGone:
                stop = "not run: the kernel died"
                error = ("KernelDied", "the kernel died while this check was calling your code")
            except RemoteError as exc:
                error = (exc.type_name, f"{exc.message} (raised by your code, called by the "
                                        "check)" if exc.message else "raised by your code")
            except ChannelError as exc:
                error = ("ChannelError", f"the grader could not read what your code returned: "
                                         f"{exc}")
            except BaseException as exc:  # noqa: BLE001 -- any failure is the check's verdict
                if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, _Alarm):
                    raise
                error = ((type(exc).__name__, str(exc)[:2000]) if not isinstance(exc, _Alarm)
                         else ("TimeLimit", f"this check {limit} and was stopped"))
        text = out.getvalue()[: self.output_cap]
        cell.outputs = []
        for name, printed in self.channel.printed:  # what the student's code printed
            cell.outputs.append(nbformat.v4.new_output("stream", name=name, text=printed))
        if text:
            cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=text))
        if error is not None:
            cell.outputs.append(nbformat.v4.new_output(
                "error", ename=error[0][:200], evalue=error[1][:2000], traceback=[]))
        _close_figures()
        return stop


class TextAsCode(ValueError):
    """A check tried to read text as SymPy (``sympify``/``lambdify`` of a string runs it)."""


@contextlib.contextmanager
def _no_text_as_code():
    """While a cell runs, ``sympify``/``lambdify`` of StudentText raise :class:`TextAsCode`."""
    import sympy
    import sympy.parsing.sympy_parser as parser
    real_parse, real_lambdify = parser.parse_expr, sympy.lambdify

    def parse_expr(s, *args, **kwargs):
        if isinstance(s, StudentText):
            raise TextAsCode("the grader does not read text as maths: give a SymPy expression")
        return real_parse(s, *args, **kwargs)

    def has_text(x, depth=0):
        if isinstance(x, StudentText):
            return True
        if isinstance(x, (list, tuple, set)) and depth < 20:
            return any(has_text(v, depth + 1) for v in x)
        if isinstance(x, dict) and depth < 20:
            return any(has_text(k, depth + 1) or has_text(v, depth + 1) for k, v in x.items())
        return False

    def lambdify(args, expr, *rest, **kwargs):
        if has_text(expr) or has_text(args):
            raise TextAsCode("the grader does not turn text into a function: give a SymPy "
                             "expression")
        return real_lambdify(args, expr, *rest, **kwargs)
    parser.parse_expr, sympy.lambdify = parse_expr, lambdify
    try:
        yield
    finally:
        parser.parse_expr, sympy.lambdify = real_parse, real_lambdify


class _Alarm(KeyboardInterrupt):
    """Raised in the grader's main thread when a check outlives the time limit."""


@contextlib.contextmanager
def _alarm(seconds: float):
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        raise _Alarm()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds + 5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _close_figures() -> None:
    import sys
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        with contextlib.suppress(Exception):
            plt.close("all")
