"""One BLAS thread while EM runs.

The problems EM solves here are small: matrix products of a few thousand rows by tens of
columns, thousands of times. Spread over several BLAS threads they gain nothing, and on a
busy machine the threads wait for each other: a 40-iteration ``SparseExpertsEM`` fit on
2,500 items took 13.3 s with OpenBLAS's default two threads and 1.3 s with one, with other
work on both cores (``benchmarks/bench_blas_threads.py``). :func:`one_blas_thread` limits BLAS to
one thread for the duration of a fit when ``threadpoolctl`` is installed (it is in
``requirements.txt``), and does nothing otherwise; the limit is lifted when the fit ends.

Finding the thread pools means walking every shared library the process has loaded, which
costs milliseconds -- more than a whole fit of a small crowd, and chapters fit hundreds of
them. So the :class:`threadpoolctl.ThreadpoolController` that holds them is kept, and
built again only when a module has been imported since (a new BLAS comes with an extension
module).
"""

from __future__ import annotations

import contextlib
import sys

_controller = None  # (len(sys.modules) when it was built, the ThreadpoolController)


def _blas_controller():
    """The kept ``ThreadpoolController``, rebuilt if modules were imported since; None
    without ``threadpoolctl``."""
    global _controller
    n_modules = len(sys.modules)
    if _controller is None or _controller[0] != n_modules:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl is in requirements.txt
            return None
        _controller = (len(sys.modules), ThreadpoolController())
    return _controller[1]


def one_blas_thread():
    """A context manager: BLAS runs on one thread inside it (a no-op without
    ``threadpoolctl``)."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover - threadpoolctl is in requirements.txt
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")
