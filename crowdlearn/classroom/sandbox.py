"""The bubblewrap sandbox, and executing one notebook in a fresh kernel inside it (see
the :mod:`crowdlearn.classroom` docstring for what the sandbox isolates)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["SandboxUnavailable", "check_sandbox", "sandbox_command"]


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces."""


def _bwrap() -> str | None:
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap") else None


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


def _read_only_roots() -> list:
    """What the kernel needs to see, read-only: the system, Python, the venv, the package."""
    import crowdlearn

    roots = [Path("/usr"), Path("/etc"), Path("/opt")]
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                 os.path.realpath(sys.executable) + "/../..",
                 Path(crowdlearn.__file__).resolve().parent):
        roots.append(Path(os.path.realpath(path)))
        roots.append(Path(path).absolute())
    out = []
    for root in sorted(set(roots), key=lambda p: (len(p.parts), str(p))):
        if root.exists() and not any(root.is_relative_to(o) for o in out):
            out.append(root)
    return out


def sandbox_command(bwrap: str, *, writable=(), workdir=None, home=None) -> list:
    """The bubblewrap prefix that runs a command isolated (see the module docstring)."""
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grader",
           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
           "--tmpfs", "/var/tmp"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    for root in _read_only_roots():
        cmd += ["--ro-bind", str(root), str(root)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    venv_bin = str(Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": str(home or "/tmp"), "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if home is not None:
        env["IPYTHONDIR"] = str(Path(home) / ".ipython")
        env["MPLCONFIGDIR"] = str(Path(home) / ".matplotlib")
        env["JUPYTER_RUNTIME_DIR"] = str(Path(home) / ".jupyter-runtime")
    cmd.append("--clearenv")
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    if workdir is not None:
        cmd += ["--chdir", str(workdir)]
    return cmd + ["--"]



def _error(ename: str, evalue: str) -> dict:
    import nbformat

    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


class _NotGraded(Exception):
    """The grader (not the student's code) failed on this submission."""


def _execute(nb, original, *, timeout: int, bwrap: str | None) -> None:
    """Run ``nb``'s code cells in a fresh kernel (in place); inside bubblewrap unless
    ``bwrap`` is None. ``original`` (the student's file, as handed in) is the only file in the
    kernel's working directory. A cell that runs longer than ``timeout`` seconds, or a kernel
    that dies, ends the run: the cells not run get an error output saying why."""
    import subprocess

    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="clg-", dir="/tmp" if os.path.isdir("/tmp")
                                     else None) as tmp:
        box = Path(tmp)
        km, work = _kernel_manager(box, original, bwrap)
        client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=True,
                                startup_timeout=120, record_timing=False,
                                shutdown_kernel="immediate")
        log_path = box / "kernel.log"
        with log_path.open("w") as log:
            try:
                try:
                    cm = client.setup_kernel(cwd=str(work), stdout=log, stderr=subprocess.STDOUT)
                    cm.__enter__()
                except Exception as exc:
                    text = log_path.read_text(errors="replace").strip()[-600:]
                    raise _NotGraded(f"the kernel did not start ({type(exc).__name__}: {exc}) "
                                     f"{text}".strip()) from None
                try:
                    _run_cells(client, nb, timeout)
                finally:
                    with contextlib.suppress(Exception):
                        cm.__exit__(None, None, None)
            finally:
                _stop_kernel(client, km)


def _kernel_manager(box: Path, original, bwrap: str | None) -> tuple:
    """A kernel manager for a kernel that runs in ``box`` (sandboxed unless ``bwrap`` is None),
    talking over Unix sockets in ``box/c``; and its working folder, which holds only a copy of
    ``original``."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    conn, work, home, specs = box / "c", box / "w", box / "h", box / "k" / "grading"
    for d in (conn, work, home, specs):
        d.mkdir(parents=True)
    if original is not None:
        shutil.copyfile(original, work / Path(original).name, follow_symlinks=False)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    if bwrap is not None:
        argv = sandbox_command(bwrap, writable=[conn, work, home], workdir=work,
                               home=home) + argv
    (specs / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "grading", "language": "python",
         "env": {} if bwrap is not None else {"HOME": str(home),
                                               "IPYTHONDIR": str(home / ".ipython"),
                                               "MPLBACKEND": "Agg"}}))
    ksm = KernelSpecManager(kernel_dirs=[str(box / "k")])
    km = AsyncKernelManager(kernel_spec_manager=ksm, kernel_name="grading", transport="ipc",
                            ip=str(conn / "s"), connection_file=str(conn / "kernel.json"))
    return km, work


def _run_cells(client, nb, timeout: int) -> None:
    """Execute the code cells in order; after a time-out or a dead kernel, the rest get an
    error output saying why they did not run."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    stop = None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if stop is not None:
            cell.outputs = [_error("NotRun", stop)]
            continue
        try:
            client.execute_cell(cell, index)
        except CellTimeoutError:
            cell.outputs.append(_error(
                "TimeLimit", f"this cell ran longer than the time limit "
                             f"({timeout} s) and was stopped"))
            stop = (f"not run: an earlier cell ran longer than the time limit "
                    f"({timeout} s)")
        except DeadKernelError:
            cell.outputs.append(_error(
                "KernelDied", "the Python process died while running this "
                              "cell (os._exit, a crash, or out of memory?)"))
            stop = "not run: the Python process died in an earlier cell"


def _stop_kernel(client, km) -> None:
    """Close the channels, shut the kernel down, and kill its process group if it lingers."""
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
