"""One BLAS thread against the default, side by side in one run: a SparseExpertsEM fit of
scenario (i) of Izbicki and Stern (2,500 items, 55 features, 40 EM iterations) in a fresh
process per setting, so that the thread count is fixed before numpy loads.

    python benchmarks/bench_blas_threads.py [--repeat 3]

Prints the wall time per setting and the ratio. ``crowdlearn.em.fit_em`` runs EM with one
BLAS thread (``crowdlearn._blas``); the "default threads, limit off" row shows what that
limit avoids.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

FIT = r"""
import time, warnings, numpy as np
import crowdlearn._blas as blas
if {off}:
    import contextlib
    blas.one_blas_thread = contextlib.nullcontext
    import crowdlearn.em as em
    em.one_blas_thread = contextlib.nullcontext
from crowdlearn.features.sparse_experts import SparseExpertsEM, sparse_experts_lambda_max
from crowdlearn.simulate.sparse import simulate_izbicki_stern
train = simulate_izbicki_stern(2500, "i", random_state=0)
lam = sparse_experts_lambda_max(train.labels, train.X, expert_prior=1.0) / np.sqrt(10)
warnings.simplefilter("ignore")
t = time.perf_counter()
SparseExpertsEM(lam=lam, expert_prior=0.0, max_iter=40).fit(train.labels, train.X)
print(time.perf_counter() - t)
"""


def run(threads: str | None, off: bool) -> float:
    env = dict(os.environ)
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
        if threads:
            env[k] = threads
    out = subprocess.run([sys.executable, "-c", FIT.format(off=off)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = [("default threads, limit off", None, True),
                ("default threads, one_blas_thread (the package)", None, False),
                ("OPENBLAS_NUM_THREADS=1", "1", True)]
    times = {name: min(run(t, off) for _ in range(args.repeat)) for name, t, off in settings}
    base = times[settings[1][0]]
    for name, t in times.items():
        print(f"{name:48s} {t:7.2f} s   {t / base:5.2f}x the package's")


if __name__ == "__main__":
    main()
