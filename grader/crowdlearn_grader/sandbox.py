"""The bubblewrap sandbox, its limits, and executing one notebook in a fresh kernel in it.

Nobody inside has rights: the kernel runs as uid 65534 in a user namespace without
capabilities; a root grader maps it to an unused host uid (``2**30 + pid``) through a first,
privileged bubblewrap that gathers the read-only roots and drops to it with ``setpriv``.
:class:`Limits` bounds memory, processes, CPU time, file size, in-memory folders and output."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

__all__ = ["Limits", "SandboxUnavailable", "check_sandbox", "probe_sandbox", "sandbox_command"]
MiB = 1 << 20
_UID_BASE = 1 << 30
_MASKED = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-",
           "/etc/ssh", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d")
_IN_SANDBOX = ("crowdlearn", "crowdlearn_checks", "crowdlearn_grader")
_PROBED: dict = {}
_TMP = "/tmp"  # short paths: the kernel's Unix sockets are in there
_RESTARTS = 3  # fresh kernels after fatal cells; then the remaining cells are not run
_LIMIT_ERRORS = (
    ("MemoryError", "", "memory", lambda lim: _human(lim.memory)),
    ("BlockingIOError", "Resource temporarily unavailable", "process",
     lambda lim: f"{lim.processes} processes and threads"),
    ("RuntimeError", "can't start new thread", "process",
     lambda lim: f"{lim.processes} processes and threads"),
    ("", "No space left on device", "in-memory folder size",
     lambda lim: f"{_human(lim.tmpfs)} each for /tmp, /dev/shm and the working folder"),
    ("", "File too large", "file size", lambda lim: _human(lim.file_size)))


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces."""


def _bwrap() -> str | None:
    return shutil.which("bwrap") or ("/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap")
                                     else None)


def check_sandbox() -> str:
    """Path of a working ``bwrap``, or :class:`SandboxUnavailable` with what to do."""
    import subprocess
    exe = _bwrap()
    if exe is None:
        raise SandboxUnavailable(
            "grading runs every submission in a bubblewrap sandbox, and bwrap is not "
            "installed: apt-get install bubblewrap (Debian/Ubuntu), or grade without "
            "isolation with --no-sandbox (grade(..., sandbox=False)) on a machine you do "
            "not mind the students' code running on")
    probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid",
                            "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bwrap ({exe}) cannot create a sandbox here: {probe.stderr.strip()} -- "
            "unprivileged user namespaces may be disabled (sysctl "
            "kernel.unprivileged_userns_clone=1) or restricted by AppArmor; or grade "
            "without isolation with --no-sandbox")
    return exe


class Limits(NamedTuple):
    """What one submission's sandbox may use (``--memory-limit`` etc. on the command line):
    ``memory`` (bytes of address space per process, ``RLIMIT_AS``: the kernel takes about
    1.5 GiB), ``processes`` (``RLIMIT_NPROC``, enforced only as root), ``cpu`` (seconds per
    process), ``file_size`` (bytes per file), ``tmpfs`` (bytes of each in-memory folder:
    /tmp, /dev/shm, the working folder) and ``output`` (bytes kept per cell, 8 times that per
    notebook; a message over max(16 MiB, twice this) ends the notebook's output)."""
    memory: int = 4096 * MiB
    processes: int = 128
    cpu: int = 600
    file_size: int = 256 * MiB
    tmpfs: int = 256 * MiB
    output: int = 4 * MiB

    def checked(self) -> "Limits":
        """These limits, or a ValueError naming the one that is not a positive integer."""
        for name, value in self._asdict().items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"the {name} limit must be a positive integer, got {value!r}")
        if self.memory < 64 * MiB:
            raise ValueError(f"the memory limit must be at least 64 MiB, got {self.memory}")
        return self


def _read_only_roots() -> list:
    """What the kernel needs to see, read-only: the system, Python, the venv, the package."""
    roots = [Path("/usr"), Path("/etc"), Path("/opt")]
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                 os.path.realpath(sys.executable) + "/../..", *_package_dirs()):
        roots.append(Path(os.path.realpath(path)))
        roots.append(Path(path).absolute())
    out = []
    for root in sorted(set(roots), key=lambda p: (len(p.parts), str(p))):
        if root.exists() and not any(root.is_relative_to(o) for o in out):
            out.append(root)
    return out


def sandbox_uid() -> int | None:
    """The sandbox's host uid when the grader is root (one per process), else None."""
    return _UID_BASE + os.getpid() if os.geteuid() == 0 else None


def _package_parent() -> str:
    import crowdlearn
    return str(Path(crowdlearn.__file__).resolve().parent.parent)


def sandbox_env(home="/tmp") -> dict:
    """The whole environment of every process in the sandbox, bubblewrap's own included."""
    venv_bin, home = str(Path(sys.executable).parent), str(home)
    return {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "HOME": home, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
            "PYTHONPATH": _package_parent(), "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "IPYTHONDIR": f"{home}/.ipython", "MPLCONFIGDIR": f"{home}/.matplotlib",
            "JUPYTER_RUNTIME_DIR": f"{home}/.jupyter-runtime"}


def _system_links() -> list:
    """/bin, /lib ... as the host has them (symbolic links, or read-only folders)."""
    cmd = []
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    return cmd


def sandbox_command(bwrap: str, *, writable=(), workdir=None, limits=None, uid=None,
                    package=None) -> list:
    """The bubblewrap prefix that runs a command isolated: ``writable`` host paths bound
    writable, ``workdir`` an in-memory folder, ``uid`` (root only, :func:`sandbox_uid`) a
    first privileged bubblewrap that drops to it, ``package`` a copy bound where the package
    is (:func:`~crowdlearn_grader.withheld.package_copy`)."""
    limits = limits or Limits()
    roots = [str(r) for r in _read_only_roots()]
    size = str(limits.tmpfs)
    cmd = [bwrap, "--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
           "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grader",
           "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm",
           "--remount-ro", "/dev", "--size", size, "--tmpfs", "/tmp",
           "--size", str(MiB), "--tmpfs", "/run", "--symlink", "../tmp", "/var/tmp"]
    cmd += _system_links()
    for root in roots:
        cmd += ["--ro-bind", root, root]
    if package is not None and uid is None:  # as root, the first bubblewrap puts it there
        cmd += _package_binds(package)
    cmd += _masks(roots)
    if workdir is not None:
        cmd += ["--size", size, "--tmpfs", str(workdir)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    cmd.append("--clearenv")
    for key, value in sandbox_env().items():
        cmd += ["--setenv", key, value]
    if workdir is not None:
        cmd += ["--chdir", str(workdir)]
    if uid is not None:
        cmd = _gatherer(bwrap, roots, writable, package) + [
            shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}",
            f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
            "--"] + cmd
    return cmd + ["--"]


def _masks(roots) -> list:
    """Secrets under the read-only roots (``/etc/shadow``, ssh keys ...) covered up."""
    cmd = []
    for path in _MASKED:
        if os.path.lexists(path) and any(Path(path).is_relative_to(r) for r in roots):
            cmd += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    return cmd


def _package_dirs() -> list:
    """Where ``crowdlearn``, ``crowdlearn_checks`` and this package are installed."""
    import crowdlearn
    import crowdlearn_checks
    return [str(Path(m.__file__).resolve().parent) for m in (crowdlearn, crowdlearn_checks)] + [
        str(Path(__file__).resolve().parent)]


def _package_binds(package) -> list:
    """``package`` and its siblings (``withheld.package_copy``) bound over the originals."""
    package = Path(package)
    return [arg for name, where in zip(_IN_SANDBOX, _package_dirs())
            for arg in ("--ro-bind", str(package.parent / name), where)]


def _gatherer(bwrap: str, roots, writable, package=None) -> list:
    """The privileged first bubblewrap (root): roots and writable paths, /proc, /dev."""
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--bind", "/proc", "/proc", "--dev", "/dev",
           "--size", str(MiB), "--tmpfs", "/tmp"] + _system_links()
    made = set()
    for path in [*roots, *map(str, writable)]:
        for parent in reversed(Path(path).parents[:-1] if len(Path(path).parts) > 1 else []):
            if str(parent) not in made and not any(parent.is_relative_to(r) for r in roots):
                made.add(str(parent))
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind" if path in roots else "--bind", path, path]
    if package is not None:
        cmd += _package_binds(package)
    return cmd + ["--"]


def launch_options(limits=None, uid=None) -> dict:
    """``subprocess.Popen`` keywords: the limits (set in the child) and a minimal env."""
    limits = (limits or Limits()).checked()
    rlimits = [(resource.RLIMIT_AS, limits.memory), (resource.RLIMIT_CPU, limits.cpu),
               (resource.RLIMIT_FSIZE, limits.file_size), (resource.RLIMIT_CORE, 0)]
    if uid is not None:
        rlimits.append((resource.RLIMIT_NPROC, limits.processes))

    def set_limits():  # runs in the child: nothing to import, nothing to allocate
        for which, value in rlimits:
            hard = value + 1 if which == resource.RLIMIT_CPU else value  # SIGXCPU first
            resource.setrlimit(which, (value, hard))
    return {"env": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, "preexec_fn": set_limits}


def probe_sandbox(bwrap: str, limits=None, modules=(), package=None) -> str:
    """Import the kernel, the package and ``modules`` in the sandbox once; the package folder
    it imported, or :class:`SandboxUnavailable` (before the first student)."""
    import subprocess
    uid = sandbox_uid()
    key = (bwrap, limits, tuple(modules), uid, _package_parent(), str(package))
    if key in _PROBED:
        return _PROBED[key]
    with tempfile.TemporaryDirectory(prefix="clg-probe-") as tmp:
        work = Path(tmp) / "w"
        work.mkdir()
        if uid is not None:
            os.chown(tmp, uid, uid)
        code = ("import importlib, os, sys\n"
                f"for m in {['ipykernel', 'numpy', 'crowdlearn', *modules]!r}:\n"
                "    importlib.import_module(m)\n"
                "import crowdlearn\n"
                "top = os.path.dirname(crowdlearn.__file__)\n"
                "for d, _, fs in os.walk(top):\n"
                "    for f in fs:\n"
                "        open(os.path.join(d, f), 'rb').close()\n"
                "print(top)\n")
        cmd = sandbox_command(bwrap, workdir=work, limits=limits, uid=uid,
                              package=package) + [sys.executable, "-c", code]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                                 **launch_options(limits, uid))
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"the sandbox could not be started: {exc}") from None
    if run.returncode != 0:
        raise SandboxUnavailable(
            "grading stopped before the first student: the sandbox cannot run a kernel "
            f"(exit {run.returncode}): {run.stderr.strip()[-1500:]}")
    inside = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    mine = str(Path(_package_parent()) / "crowdlearn")
    if os.path.realpath(inside) != os.path.realpath(mine):
        raise SandboxUnavailable(f"the sandbox imports crowdlearn from {inside!r}, not the "
                                 f"grader's {mine!r}")
    _PROBED[key] = inside
    return inside


def _error(ename: str, evalue: str) -> dict:
    import nbformat
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


class _NotGraded(Exception):
    """The grader (not the student's code) failed on this submission."""


def _execute(nb, original, *, timeout: int, bwrap: str | None, limits=None, package=None) -> None:
    """Run ``nb``'s code cells in place in a fresh (sandboxed) kernel beside ``original``."""
    limits = (limits or Limits()).checked()
    kernel = _Kernel(original, bwrap, limits, package)
    client = kernel.client = _client(nb, None, timeout, limits)
    try:
        kernel.start()
        _run_cells(client, nb, timeout, limits, kernel)
    finally:
        kernel.stop()


class _Kernel:
    """The sandboxed kernel a notebook runs in: :meth:`start` a fresh one, :meth:`stop` it."""

    def __init__(self, original, bwrap, limits, package):
        self.original, self.bwrap, self.limits, self.package = original, bwrap, limits, package
        self.client = self.km = self.cm = self.log = self.box = None
        self.started = 0

    def start(self):
        import subprocess
        self.stop()
        self.started += 1
        self.box = Path(tempfile.mkdtemp(prefix="clg-", dir=_TMP if os.path.isdir(_TMP) else None))
        km, work = _kernel_manager(self.box, self.original, self.bwrap, self.limits, self.package)
        self.client.km, self.client.kc, self.km = km, None, km
        log_path = self.box / "kernel.log"
        self.log = log_path.open("w")
        try:
            cm = self.client.setup_kernel(cwd=str(work), stdout=self.log,
                                          stderr=subprocess.STDOUT, cleanup_kc=False,
                                          **km.launch_options)
            cm.__enter__()
        except Exception as exc:
            text = log_path.read_text(errors="replace").strip()[-600:]
            raise _NotGraded(f"the kernel did not start ({type(exc).__name__}: {exc}) "
                             f"{text}".strip()) from None
        self.cm = cm
        km.lock_sockets()
        return km

    def stop(self) -> None:
        if self.cm is not None:
            with contextlib.suppress(Exception):
                self.cm.__exit__(None, None, None)
        if self.km is not None:
            _stop_kernel(self.client, self.km)
        if self.log is not None:
            self.log.close()
        if self.box is not None:
            shutil.rmtree(self.box, ignore_errors=True)
        self.km = self.cm = self.log = self.box = None
        if self.client is not None:
            self.client.kc = None


def _kernel_manager(box: Path, original, bwrap: str | None, limits, package=None) -> tuple:
    """``(kernel manager, working folder holding only a copy of original)`` in ``box``."""
    from jupyter_client.kernelspec import KernelSpecManager
    conn, work, home, specs = box / "c", box / "w", box / "h", box / "k" / "grading"
    for d in (conn, work, home, specs):
        d.mkdir(parents=True)
    uid = sandbox_uid() if bwrap is not None else None
    writable = [conn]
    if original is not None:
        copy = work / Path(original).name
        shutil.copyfile(original, copy, follow_symlinks=False)
        writable.append(copy)
    if uid is not None:
        for path in [box, *writable]:
            os.chown(path, uid, uid)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
            "--HistoryManager.enabled=False"]
    if bwrap is not None:
        argv = sandbox_command(bwrap, writable=writable, workdir=work, limits=limits,
                               uid=uid, package=package) + argv
    (specs / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "grading", "language": "python",
         "env": {} if bwrap is not None else {"HOME": str(home),
                                               "IPYTHONDIR": str(home / ".ipython"),
                                               "MPLBACKEND": "Agg"}}))
    ksm = KernelSpecManager(kernel_dirs=[str(box / "k")])
    km = _manager_class()(kernel_spec_manager=ksm, kernel_name="grading", transport="ipc",
                          ip=str(conn / "s"), connection_file=str(conn / "kernel.json"))
    km.sandbox_uid, km.max_message = uid, max(16 * MiB, 2 * limits.output)
    km.launch_options = launch_options(limits, uid) if bwrap is not None else {}
    return km, work


def _manager_class():
    """AsyncKernelManager for the sandbox's uid, refusing messages over ``max_message``."""
    import zmq.asyncio
    from jupyter_client import AsyncKernelManager

    class SandboxKernelManager(AsyncKernelManager):
        sandbox_uid, max_message, launch_options, contexts = None, 8 * MiB, {}, ()

        def write_connection_file(self, **kw):
            super().write_connection_file(**kw)
            if self.sandbox_uid is not None:
                os.chown(self.connection_file, self.sandbox_uid, self.sandbox_uid)

        def lock_sockets(self):
            """The socket folder and connection file back to the grader's uid."""
            if self.sandbox_uid is not None:
                folder = Path(self.connection_file).parent
                for path in (folder, Path(self.connection_file)):
                    os.chown(path, os.geteuid(), os.getegid())
                os.chmod(folder, 0o755)
                os.chmod(self.connection_file, 0o600)

        def client(self, **kwargs):
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.MAXMSGSIZE, self.max_message)
            self.contexts = (*self.contexts, context)
            return super().client(context=context, **kwargs)
    return SandboxKernelManager


def _client(nb, km, timeout: int, limits):
    """The notebook client: output capped, errors kept even if their output was lost."""
    from nbclient import NotebookClient

    class Client(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            return _capped_output(self, super().output, outs, msg, display_id, cell_index,
                                  limits.output)

        def process_message(self, msg, cell, cell_index):
            kind = msg.get("msg_type", "")
            if kind.startswith("comm") or kind == "update_display_data":  # count, or drop
                size = len(json.dumps(msg.get("content", {})))
                if self.kept.get("all", 0) + size > 8 * limits.output:
                    return None
                self.kept["all"] = self.kept.get("all", 0) + size
            return super().process_message(msg, cell, cell_index)

        def _check_raise_for_error(self, cell, cell_index, exec_reply):
            content = (exec_reply or {}).get("content", {})
            if content.get("status") == "error" and not any(
                    o.get("output_type") == "error" for o in cell.outputs):
                cell.outputs.append(_error(str(content.get("ename", "Error"))[:200],
                                           str(content.get("evalue", ""))[:2000]))
            return super()._check_raise_for_error(cell, cell_index, exec_reply)
    client = Client(nb, km=km, timeout=timeout, allow_errors=True, startup_timeout=120,
                    record_timing=False, shutdown_kernel="immediate", store_widget_state=False)
    client.kept = {}
    return client


def _capped_output(client, output, outs, msg, display_id, cell_index, cap):
    """``output(...)`` within ``cap`` bytes a cell, 8 times that a notebook; errors kept."""
    content = msg.get("content", {})
    if msg.get("msg_type") == "error":
        content["evalue"] = str(content.get("evalue", ""))[:2000]
        content["traceback"] = [str(t)[:2000] for t in content.get("traceback", [])[-20:]]
        return output(outs, msg, display_id, cell_index)
    size = len(json.dumps(content.get("data", content.get("text", ""))))
    kept = client.kept
    room = min(cap - kept.get(cell_index, 0), 8 * cap - kept.get("all", 0))
    if size > room:
        if msg.get("msg_type") == "stream" and room > 0:
            content["text"] = str(content.get("text", ""))[:room]
            output(outs, msg, display_id, cell_index)
        if kept.get(("noted", cell_index)) is None:
            kept[("noted", cell_index)] = True
            outs.append(_note(f"[output truncated: this cell printed more than the output "
                              f"limit ({_human(cap)} per cell, {_human(8 * cap)} per "
                              f"notebook); the rest was dropped]"))
        size = max(room, 0)
        kept[cell_index], kept["all"] = kept.get(cell_index, 0) + size, kept.get("all", 0) + size
        return None
    kept[cell_index], kept["all"] = kept.get(cell_index, 0) + size, kept.get("all", 0) + size
    return output(outs, msg, display_id, cell_index)


def _note(text: str):
    import nbformat
    return nbformat.v4.new_output("stream", name="stderr", text=text + "\n")


def _human(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n} bytes"


def _name_limits(cell, limits) -> None:
    """An error output that a limit caused gets ename ``LimitExceeded`` and says which."""
    for out in cell.get("outputs", []):
        if out.get("output_type") != "error":
            continue
        for ename, text, what, amount in _LIMIT_ERRORS:
            if (not ename or out.get("ename") == ename) and text in out.get("evalue", ""):
                out["evalue"] = (f"exceeded the {what} limit ({amount(limits)}): "
                                 f"{out.get('ename')}: {out.get('evalue', '')}"[:2000])
                out["ename"] = "LimitExceeded"
                break


def _death(km, limits) -> str:
    """Why the kernel died, from the sandbox's exit status."""
    import signal
    import time
    proc = getattr(getattr(km, "provisioner", None), "process", None)
    code = None
    for _ in range(20):
        code = proc.poll() if proc is not None else None
        if code is not None:
            break
        time.sleep(0.1)
    sig = -code if code is not None and code < 0 else (code - 128 if code and code > 128 else None)
    if sig == signal.SIGXCPU:
        return f"exceeded the CPU time limit ({limits.cpu} s): the kernel was stopped"
    if sig == signal.SIGXFSZ:
        return f"exceeded the file size limit ({_human(limits.file_size)})"
    if sig == signal.SIGKILL:
        return ("the kernel died: it was killed (SIGKILL: by its own code, or out of "
                f"memory; the memory limit is {_human(limits.memory)})")
    return ("the kernel died while running this cell (os._exit, a crash, or out of memory?)"
            + (f" [exit status {code}]" if code is not None else ""))


def _run_cells(client, nb, timeout: int, limits=None, kernel=None) -> None:
    """Execute the code cells in order; after a fatal cell a fresh kernel replays the earlier
    ones and the run goes on (up to :data:`_RESTARTS` times)."""
    limits = limits or Limits()
    stop, runner, done, lost = None, None, [], {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if stop is not None:
            cell.outputs = [_error("NotRun", stop)]
            continue
        role = _role(cell)
        if role != "student" and runner is None:
            runner = _trusted_runner(client, kernel.km if kernel else None, nb, timeout, limits)
        if role == "check":  # the grader's process judges: never in the kernel
            failed = runner.run(cell, check=True)
            _explain_lost(cell, lost)
            failed = _stopped(failed)
        else:
            failed = _run_in_kernel(client, cell, index, timeout, limits, kernel, runner, role)
            _explain_lost(cell, lost)
            if failed is None:
                done.append(index)
            else:
                why = f"the cell that defines it (cell {index + 1}) {failed}"
                lost.update(dict.fromkeys(_defined_names(cell.source), why))
        if failed is not None:
            stop = _restart(client, nb, kernel, runner, done, timeout, failed)


def _run_in_kernel(client, cell, index, timeout, limits, kernel, runner, role) -> str | None:
    """Run a kernel cell (an instructor's in the grader too); why the kernel is unusable."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    try:
        client.execute_cell(cell, index)
    except CellTimeoutError:
        cell.outputs.append(_error(
            "TimeLimit", f"this cell ran longer than the time limit ({timeout} s) and was "
                         "stopped"))
        return f"ran longer than the time limit ({timeout} s)"
    except DeadKernelError:
        why = _death(kernel.km if kernel else None, limits)
        cell.outputs.append(_error("KernelDied", why))
        return f"ended the kernel ({why})"
    _name_limits(cell, limits)
    if any(o.get("ename") == "LimitExceeded" and "process limit" in o.get("evalue", "")
           for o in cell.outputs):  # its processes hold the limit: a fresh kernel
        return "exceeded the process limit"
    if role == "instructor":  # and the grader's copy of the instructor's data
        return _stopped(runner.run(copy.deepcopy(cell), check=False))
    return None


def _stopped(why: str | None) -> str | None:
    """The runner's reason to stop, as "ran longer than ..." or "ended the kernel"."""
    if why is None:
        return None
    if "kernel died" in why:
        return "ended the kernel"
    return why.removeprefix("not run: ").removeprefix("an earlier cell ")


def _restart(client, nb, kernel, runner, done, timeout, failed) -> str | None:
    """A fresh kernel with the cells ``done`` replayed; None, or why the rest cannot run."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    stop = f"not run: an earlier cell {failed}"
    if kernel is None or kernel.started > _RESTARTS:
        return stop + f" (the kernel was restarted {_RESTARTS} times already)"
    kept = dict(client.kept)
    try:
        kernel.start()
        if runner is not None:  # the checks' requests go to the new kernel
            channel = runner.channel
            channel.km, channel.busy, channel.idle = kernel.km, False, None
        for index in done:
            cell = nb.cells[index]
            try:
                client.execute_cell(copy.deepcopy(cell), index)
            finally:
                nb.cells[index] = cell
    except (CellTimeoutError, DeadKernelError, _NotGraded) as exc:
        return stop + f" (the kernel was restarted, but running the earlier cells again " \
                      f"failed: {type(exc).__name__})"
    finally:
        client.kept = kept
    return None


def _defined_names(source: str) -> set:
    """The names a cell binds at its top level (what later cells may need from it)."""
    import symtable
    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return set()
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


def _explain_lost(cell, lost: dict) -> None:
    """A ``NameError`` for a name a failed cell would have defined says so."""
    for out in cell.get("outputs", []):
        if out.get("output_type") != "error" or out.get("ename") != "NameError":
            continue
        found = re.search(r"name '(\w+)' is not defined", out.get("evalue", ""))
        if found and found.group(1) in lost:
            name = found.group(1)
            out["evalue"] = (f"{name!r} is not defined: {lost[name]}, so it was skipped; "
                             "the kernel was restarted and grading went on without it")


def _role(cell) -> str:
    """``"check"``, ``"instructor"`` or ``"student"``, from the metadata the merge wrote."""
    from crowdlearn_grader.assignments import _nbgrader_meta
    from crowdlearn_grader.submissions import _is_check
    meta = cell.get("metadata", {})
    if meta.get("crowdlearn") not in ("instructor", "answer"):
        return "student"
    if _is_check(_nbgrader_meta(cell)):
        return "check"
    return "instructor" if meta.get("crowdlearn") == "instructor" else "student"


def _trusted_runner(client, km, nb, timeout, limits):
    from crowdlearn_grader.trusted import TrustedRunner
    instructor = [c.source for c in nb.cells if c.cell_type == "code" and _role(c) == "instructor"]
    return TrustedRunner(client, km, timeout, limits.output, instructor=instructor)


def _processes_of(uid: int) -> list:
    """Pids of the processes whose real uid is ``uid``."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError, ValueError):
            status = Path(f"/proc/{pid}/status").read_text()
            if int(status.split("Uid:")[1].split()[0]) == uid:
                pids.append(int(pid))
    return pids


def _reap(uid: int, wait: float = 10.0) -> None:
    """Kill every process of the sandbox's host uid until none is left (or ``wait`` s)."""
    import time
    end = time.monotonic() + wait
    while (pids := _processes_of(uid)) and time.monotonic() < end:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        time.sleep(0.05)


def _stop_kernel(client, km) -> None:
    """Close the channels, shut the kernel down, kill the sandbox if it lingers."""
    from jupyter_core.utils import run_sync
    with contextlib.suppress(Exception):
        if client.kc is not None:
            client.kc.stop_channels()
    with contextlib.suppress(Exception):
        run_sync(km.shutdown_kernel)(now=True)
    proc = getattr(getattr(km, "provisioner", None), "process", None)
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(Exception):
            os.killpg(proc.pid, 9)
        with contextlib.suppress(Exception):
            proc.kill()
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)
    if getattr(km, "sandbox_uid", None) is not None:
        _reap(km.sandbox_uid)
    for context in getattr(km, "contexts", ()):
        with contextlib.suppress(Exception):
            context.destroy(linger=0)
