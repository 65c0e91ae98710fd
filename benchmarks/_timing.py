"""Timing shared by the benchmark scripts (run as `python benchmarks/<script>.py`, so this
folder is on the import path)."""

from __future__ import annotations

import time


class Stopwatch:
    """Wall time and this process's CPU time (the latter barely moves with other load)."""

    def __enter__(self):
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
