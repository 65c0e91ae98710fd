"""The grading sandbox against hostile cells, as the grader runs on CI: as root.

* nobody inside has rights: uid 65534 (an unused uid on the host when the grader is root), no
  capabilities, ``no_new_privs``; ``mknod`` and ``mount`` fail; ``/etc/shadow``, the book and
  the grader's environment (pid 1's included) are out of reach;
* each limit (memory, processes, CPU time, file size, in-memory folders, output) stops the
  submission that hits it with a message saying which, and the next student is graded; the
  grader does not grow with a student's output; nothing is left running or on disk;
* failing loudly: a sandbox that cannot import the package stops grading before the first
  student, with exit status 2; every run ends with a status line per submission.

Small limits keep each test quick. Needs bubblewrap (skipped without it, failed under CI).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
from pathlib import Path

import pytest

from support import BOOK, bwrap  # noqa: F401  (a fixture)

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

import crowdlearn_grader as classroom  # noqa: E402
from crowdlearn_grader import grading, sandbox  # noqa: E402

pytestmark = pytest.mark.notebook

SOURCE = BOOK / "assignments"
A1 = "a1_naive_bayes_mle"
MiB = 1 << 20
LIMITS = sandbox.Limits(memory=2048 * MiB, processes=64, cpu=5, file_size=8 * MiB,
                        tmpfs=16 * MiB, output=256 * 1024)
SECRET = "GRADER_SECRET_h27_b9f1"


@pytest.fixture()
def box(monkeypatch):
    """A short temporary folder for the kernels' files (empty again after each run)."""
    folder = tempfile.mkdtemp(prefix="h27-", dir="/tmp")
    monkeypatch.setattr(sandbox, "_TMP", folder)
    monkeypatch.setenv(SECRET, "xyz-the-grader-secret")
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _sandbox_processes() -> list:
    """Processes of a sandbox's host uid, or still sleeping for a hostile cell."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if (sandbox._UID_BASE <= uid < sandbox._UID_BASE + (1 << 23) and _ours(uid)) \
                or "sleep 4444" in cmd:
            found.append((pid, uid, cmd[:100]))
    return found


def _ours(uid: int) -> bool:
    """Whether the sandbox uid ``uid`` is one of this test process's graders: its own, a
    grading process it started (alive, or gone and so leaving the sandbox orphaned); not a
    live grader of another test worker running at the same time."""
    grader = uid - sandbox._UID_BASE
    while grader > 1:
        if grader == os.getpid():
            return True
        try:
            status = Path(f"/proc/{grader}/status").read_text()
        except OSError:
            return True  # the grader is gone: what is left of its sandbox is a leftover
        grader = int(status.split("PPid:")[1].split()[0])
    return False


def _run(cells, bwrap, limits=LIMITS, timeout=30):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    sandbox._execute(nb, None, timeout=timeout, bwrap=bwrap, limits=limits)
    return nb


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stdout")


def _errors(cell) -> list:
    return [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]


PROBE = f"""
import json, os, subprocess
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
def fails(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True).returncode != 0
def unreadable(path):
    try:
        open(path, "rb").read(1)
    except OSError:
        return True
    return False
print(json.dumps({{
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "capeff": status["CapEff"].strip(), "capbnd": status["CapBnd"].strip(),
    "nnp": status["NoNewPrivs"].strip(),
    "mknod_fails": fails("mknod /tmp/sda b 8 0"),
    "mount_fails": fails("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m"),
    "shadow_unreadable": unreadable("/etc/shadow"),
    "book_hidden": not os.path.exists({str(BOOK)!r}),
    "pid1_environ": open("/proc/1/environ").read(),
    "environ": dict(os.environ),
    "network": os.listdir("/sys/class/net") if os.path.exists("/sys/class/net") else [],
}}))
"""


def test_nobody_inside_has_rights(bwrap, box):
    nb = _run([PROBE], bwrap)
    facts = json.loads(_text(nb.cells[0]))
    assert (facts["uid"], facts["gid"]) == (65534, 65534)
    assert int(facts["capeff"], 16) == 0 and int(facts["capbnd"], 16) == 0
    assert facts["nnp"] == "1"
    assert facts["mknod_fails"] and facts["mount_fails"]
    assert facts["shadow_unreadable"] and facts["book_hidden"]
    assert SECRET not in facts["pid1_environ"] and "xyz-the-grader" not in facts["pid1_environ"]
    assert SECRET not in facts["environ"]
    assert facts["environ"]["OPENBLAS_NUM_THREADS"] == "1"
    assert list(box.iterdir()) == [] and _sandbox_processes() == []


def test_the_kernel_runs_on_a_uid_of_its_own_when_the_grader_is_root(bwrap, box):
    if os.geteuid() != 0:
        pytest.skip("the grader is not root: the sandbox runs as the grader's user")
    nb = _run(["import subprocess; p = subprocess.Popen(['sleep', '4444'])",
               "print(open('/proc/self/uid_map').read())"], bwrap)
    assert not _errors(nb.cells[0])
    assert sandbox.sandbox_uid() == sandbox._UID_BASE + os.getpid()
    assert _sandbox_processes() == [] and list(box.iterdir()) == []


HOSTILE = {
    "fork": ("import os\n"
             "while True:\n"
             "    if os.fork() == 0:\n"
             "        import time; time.sleep(60); os._exit(0)\n",
             "exceeded the process limit"),
    "memory": ("x = bytearray(3 << 30)", "exceeded the memory limit"),
    "tmp": ("open('/tmp/f', 'wb').write(b'x' * (7 << 20)); "
            "open('/tmp/g', 'wb').write(b'x' * (7 << 20)); "
            "open('/tmp/h', 'wb').write(b'x' * (7 << 20))",
            "exceeded the in-memory folder size limit"),
    "shm": ("[open(f'/dev/shm/{i}', 'wb').write(b'x' * (7 << 20)) for i in range(3)]",
            "exceeded the in-memory folder size limit"),
    "cwd": ("[open(f'f{i}', 'wb').write(b'x' * (7 << 20)) for i in range(3)]",
            "exceeded the in-memory folder size limit"),
    "bigfile": ("open('/tmp/big', 'wb').write(b'x' * (9 << 20))",
                "exceeded the file size limit"),
    "cpu": ("while True: pass", "exceeded the CPU time limit"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_limit_stops_the_cell_with_a_clear_message(bwrap, box, kind):
    code, message = HOSTILE[kind]
    nb = _run([code, "print('next')"], bwrap)
    errors = _errors(nb.cells[0])
    assert errors and message in errors[0][1], errors
    assert _text(nb.cells[1]) == "next\n"  # in a fresh kernel after the CPU hog or fork bomb
    assert _sandbox_processes() == [] and list(box.iterdir()) == []


def test_daemons_and_parent_killers_leave_nothing(bwrap, box):
    nb = _run(["import os, subprocess\n"
               "subprocess.Popen(['sleep', '4444'], start_new_session=True)\n"
               "if os.fork() == 0:\n"
               "    os.setsid(); os.execvp('sleep', ['sleep', '4444'])\n"
               "os.kill(os.getppid(), 9); os.kill(1, 9)\n",
               "print('alive')",
               "import os, signal; os.killpg(0, signal.SIGKILL)",
               "print('again')"], bwrap)
    assert _text(nb.cells[1]) == "alive\n"
    assert _errors(nb.cells[2])[0][0] == "KernelDied"
    assert "the kernel died" in _errors(nb.cells[2])[0][1]
    assert _text(nb.cells[3]) == "again\n"  # a fresh kernel, the earlier cells run again
    assert _sandbox_processes() == [] and list(box.iterdir()) == []


def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024


def test_an_output_flood_is_cut_and_the_grader_does_not_grow(bwrap, box):
    try:
        _peak_rss_reset()
    except OSError:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs)")
    before = _peak_rss()
    nb = _run(["import sys\nfor i in range(256):\n"
               "    sys.stdout.write('x' * (1 << 20)); sys.stdout.flush()",
               "print('y' * (100 << 20))",  # one message too large to take: none later
               "raise ValueError('seen although the output is lost')"], bwrap)
    grown = _peak_rss() - before
    first = nb.cells[0].outputs
    assert sum(len(o.get("text", "")) for o in first) < 2 * LIMITS.output
    assert any("output truncated" in o.get("text", "") for o in first if o.get("name") == "stderr")
    assert _errors(nb.cells[2]) == [("ValueError", "seen although the output is lost")]
    assert grown < 300 * MiB, f"the grader grew by {grown / MiB:.0f} MiB"
    assert _sandbox_processes() == [] and list(box.iterdir()) == []


# -- a class, graded ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def instructor():
    nb = classroom.read_assignment(SOURCE / f"{A1}.md")
    nb.metadata.pop("jupytext", None)
    return nb


def _put(folder: Path, student: str, nb) -> None:
    (folder / student).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / student / f"{A1}.ipynb"))


def _spoil(nb, code: str):
    original = classroom.solution_regions(nb)["prior_derivation"][0]
    return classroom.replace_solution(nb, "prior_derivation", code + "\n" + original)


def test_a_class_with_bombs_is_graded_with_a_status_per_student(bwrap, instructor, tmp_path,
                                                                capsys, monkeypatch):
    monkeypatch.setenv(SECRET, "xyz-the-grader-secret")
    subs = tmp_path / "subs"
    _put(subs, "a_fork", _spoil(instructor, HOSTILE["fork"][0]))
    _put(subs, "b_memory", _spoil(instructor, HOSTILE["memory"][0]))
    _put(subs, "c_environ", _spoil(instructor, "assert False, open('/proc/1/environ').read()"))
    _put(subs, "z_honest", instructor)
    report = tmp_path / "grades.csv"
    flags = ["--memory-limit", "2G", "--process-limit", "64", "--cpu-limit", "30",
             "--tmpfs-limit", "16M", "--file-size-limit", "8M", "--output-limit", "256K"]
    assert classroom.main(["--source", str(SOURCE), "grade", str(subs), "--report",
                           str(report), "--timeout", "60", *flags]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[-6:-1]}
    assert "limit exceeded: " in lines["'a_fork'"]
    assert "exceeded the process limit" in lines["'a_fork'"]
    assert "limit exceeded: exceeded the memory limit (2048 MiB)" in lines["'b_memory'"]
    assert lines["'z_honest'"].rstrip().endswith("graded")
    assert out.splitlines()[-1].startswith("status: ")
    text = report.read_text() + "".join(p.read_text() for p in
                                        (tmp_path / "feedback").rglob("*.txt"))
    assert "xyz-the-grader-secret" not in text and SECRET not in text
    assert _sandbox_processes() == []


def test_a_sandbox_that_cannot_import_the_package_stops_grading(bwrap, instructor, tmp_path,
                                                                 capsys, monkeypatch):
    _put(tmp_path / "subs", "alice", instructor)
    monkeypatch.setattr(sandbox, "_PROBED", {})
    monkeypatch.setattr(sandbox, "_read_only_roots",
                        lambda real=sandbox._read_only_roots: [
                            r for r in real() if r.name != "crowdlearn"])
    monkeypatch.setattr(grading, "_execute", lambda *a, **k: pytest.fail("graded a student"))
    assert classroom.main(["--source", str(SOURCE), "grade", str(tmp_path / "subs"),
                           "--report", str(tmp_path / "grades.csv")]) == 2
    err = capsys.readouterr().err
    assert "before the first student" in err and "crowdlearn" in err
    assert not (tmp_path / "grades.csv").exists()


def test_limits_are_checked():
    with pytest.raises(ValueError, match="processes limit"):
        sandbox.Limits(processes=0).checked()
    with pytest.raises(ValueError, match="memory limit"):
        sandbox.Limits(memory=MiB).checked()
    with pytest.raises(SystemExit) as exit_:
        classroom.main(["grade", "x", "--memory-limit", "lots"])
    assert exit_.value.code == 2


def test_the_limits_reach_the_sandbox_process(bwrap, box):
    nb = _run(["import resource\n"
               "print([resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, "
               "resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC)])"], bwrap)
    got = json.loads(_text(nb.cells[0]))
    nproc = LIMITS.processes if os.geteuid() == 0 else resource.getrlimit(
        resource.RLIMIT_NPROC)[0]
    assert got == [LIMITS.memory, LIMITS.cpu, LIMITS.file_size, nproc]
