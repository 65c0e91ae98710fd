"""CPU time of the test run, and the grader's share of it.

    sudo .venv/bin/python benchmarks/bench_test_cpu.py            # grader tests, then run.py test
    sudo .venv/bin/python benchmarks/bench_test_cpu.py --grader-only
    sudo .venv/bin/python benchmarks/bench_test_cpu.py --total-of "bash .ci/run"

Each command runs in a control group of its own (cgroup v1 ``cpuacct`` or v2 ``cpu.stat``), whose
counter adds up the CPU time of every process started inside it -- the grader's kernels, which
run in bubblewrap sandboxes that no parent waits for (so ``time`` and ``getrusage`` miss them),
Chromium, pip and the book build's kernels included. The grader's tests (``grader/tests``) are
run alone once; ``python3 run.py test`` (the README's test command: book build, every test, the
PDF) once; the share printed is the first over the second. CPU time hardly changes with other
load on the machine, wall time does: both are printed. Needs root (to make a control group).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")


def _new_group(name: str) -> tuple[Path, callable]:
    """A fresh control group and a function reading its CPU seconds."""
    if (V1 / "cpuacct.usage").exists():
        group = V1 / name
        group.mkdir(exist_ok=True)
        return group, lambda: int((group / "cpuacct.usage").read_text()) / 1e9
    if (V2 / "cgroup.controllers").exists():
        group = V2 / name
        group.mkdir(exist_ok=True)

        def usage():
            stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return group, usage
    raise SystemExit("no cgroup cpuacct (v1) or cpu.stat (v2) here: cannot count the CPU time")


def cpu_of(command: list, name: str) -> tuple[float, float, int]:
    """``(CPU seconds, wall seconds, exit status)`` of ``command`` and all it starts."""
    group, usage = _new_group(f"crowdlearn-bench-{name}-{os.getpid()}")
    before, start = usage(), time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, preexec_fn=lambda: (
        group / "cgroup.procs").write_text(str(os.getpid())))
    status = proc.wait()
    wall = time.perf_counter() - start
    time.sleep(1)  # processes the command left behind are killed by its own teardown
    return usage() - before, wall, status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grader-only", action="store_true")
    parser.add_argument("--total-of", default=f"{sys.executable} run.py test",
                        help="the whole test run (default: run.py test)")
    args = parser.parse_args(argv)
    py = str(ROOT / ".venv" / "bin" / "python")
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load average at start {os.getloadavg()[0]:.1f}")
    grader, g_wall, g_status = cpu_of([py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                       "grader/tests"], "grader")
    print(f"grader/tests alone     : {grader:7.0f} s CPU, {g_wall:6.0f} s wall, exit {g_status}")
    if args.grader_only:
        return g_status
    total, t_wall, t_status = cpu_of(shlex.split(args.total_of), "total")
    print(f"{args.total_of:23s}: {total:7.0f} s CPU, {t_wall:6.0f} s wall, exit {t_status}")
    print(f"the grader's tests     : {100 * grader / total:5.1f} % of the test run's CPU")
    return g_status or t_status


if __name__ == "__main__":
    sys.exit(main())
