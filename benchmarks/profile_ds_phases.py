"""CPU time per phase of ``DawidSkene().fit(df)`` on a DataFrame of string ids.

From the repository root::

    python benchmarks/profile_ds_phases.py 1000000 10000000 [--repeats 2]

The crowds and the DataFrame are those of ``bench_crowdkit.py --defaults-only`` (section
(e) of benchmarks/README.md: ids ``t…``/``w…``, pandas' default string columns). The
package's own phases are wrapped with ``time.process_time`` for the measurement: encoding
the ids, reading the frame into ``CrowdLabels`` (encoding included), building the sparse
label matrix, the E-steps (with the objective, which comes from the E-step's normalisers),
the M-steps and the outputs. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_crowdkit  # noqa: E402  (the same simulated crowds)

import crowdlearn  # noqa: E402
import crowdlearn.labels as labels_module  # noqa: E402
from crowdlearn import ConvergenceWarning, DawidSkene  # noqa: E402
from crowdlearn.aggregation import dawid_skene  # noqa: E402

PHASES = ((labels_module, "_factorize_columns", "encode ids (factorize + sort)"),
          (dawid_skene.DawidSkene, "_read_labels", "read frame -> CrowdLabels (incl. encode)"),
          (dawid_skene.DawidSkene, "_data_from", "build the sparse label matrix"),
          (dawid_skene.DawidSkene, "_e_step", "E-steps (incl. objective)"),
          (dawid_skene.DawidSkene, "_m_step", "M-steps"),
          (dawid_skene.DawidSkene, "_set_fitted", "outputs (align, store, checks)"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    spent, calls = collections.defaultdict(float), collections.Counter()
    for owner, name, label in PHASES:
        def timed(*a, _f=getattr(owner, name), _label=label, **k):
            t0 = time.process_time()
            try:
                return _f(*a, **k)
            finally:
                spent[_label] += time.process_time() - t0
                calls[_label] += 1
        setattr(owner, name, timed)
    print(f"crowdlearn {crowdlearn.__version__} ({crowdlearn.__file__}), pandas "
          f"{pd.__version__}, load average {os.getloadavg()[0]:.1f}")
    warnings.simplefilter("ignore", ConvergenceWarning)
    for n_labels in args.sizes:
        crowd = bench_crowdkit.simulate(n_labels).labels
        df = pd.DataFrame({"task": np.char.add("t", crowd.item.astype(str)).astype(object),
                           "worker": np.char.add("w", crowd.expert.astype(str)).astype(object),
                           "label": crowd.label})
        for rep in range(args.repeats):
            spent.clear()
            calls.clear()
            t0 = time.process_time()
            ds = DawidSkene().fit(df)
            total = time.process_time() - t0
            print(f"{n_labels:,} labels, run {rep + 1}: {total:.3f} s CPU, "
                  f"{ds.n_iter_} iterations")
            for _, _, label in PHASES:
                print(f"    {label:42s} {spent[label]:7.3f} s ({calls[label]} calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
