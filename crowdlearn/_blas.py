"""One BLAS thread while EM runs.

The problems EM solves here are small: matrix products of a few thousand rows by tens of
columns, thousands of times. Spread over several BLAS threads they gain nothing, and on a
busy machine the threads wait for each other: a 40-iteration ``SparseExpertsEM`` fit on
2,500 items took 13.3 s with OpenBLAS's default two threads and 1.3 s with one, with other
work on both cores (``benchmarks/bench_blas_threads.py``). :func:`one_blas_thread` limits BLAS to
one thread for the duration of a fit when ``threadpoolctl`` is installed (it is in
``requirements.txt``), and does nothing otherwise; the limit is lifted when the fit ends.
"""

from __future__ import annotations

import contextlib


def one_blas_thread():
    """A context manager: BLAS runs on one thread inside it (a no-op without
    ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is in requirements.txt
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
