"""How long ``import crowdlearn`` takes, in fresh interpreters (issue 26: < 0.4 s).

Each measurement starts a new Python process (``-c``) that times ``import crowdlearn`` with
``time.perf_counter`` and reports which optional packages it loaded; the median of
``--repeat`` runs is printed, for the working tree and, with ``--before REV``, for the tree
of an earlier commit (``git archive REV`` into a temporary folder, imported the same way with
``PYTHONPATH``). A second line times ``import crowdlearn; crowdlearn.DawidSkene`` (the first
model: what a script that fits one pays).

    python3 benchmarks/bench_import.py                    # this tree
    python3 benchmarks/bench_import.py --before e33f347   # and the tree before issue 26

Recorded on 2026-11-26, Python 3.11.7, Linux x86_64, 2 cores busy with other jobs (load
average 11, so the absolute numbers are inflated several times; the issue measured 1.6 s for
the old tree on a quieter machine), ``--repeat 9 --before e33f347``::

    before   import crowdlearn          median 7.334 s  (min 3.381 s)  loaded: scipy, sympy
    before   + crowdlearn.DawidSkene    median 2.775 s  (min 1.732 s)  loaded: scipy, sympy
    after    import crowdlearn          median 0.013 s  (min 0.011 s)  loaded: none of ...
    after    + crowdlearn.DawidSkene    median 0.774 s  (min 0.727 s)  loaded: scipy

    and again at a load average of 3:

    before   import crowdlearn          median 3.536 s  (min 3.300 s)  loaded: scipy, sympy
    before   + crowdlearn.DawidSkene    median 3.251 s  (min 2.416 s)  loaded: scipy, sympy
    after    import crowdlearn          median 0.011 s  (min 0.010 s)  loaded: none of ...
    after    + crowdlearn.DawidSkene    median 1.486 s  (min 1.244 s)  loaded: scipy

``import crowdlearn`` now loads only the table of names (``crowdlearn/__init__.pyi``, read by
``lazy_loader``; ``crowdlearn/_lazy.py`` before issue 43); the first
model pays for NumPy and SciPy (``scipy.optimize``, ``scipy.special``), and SymPy is loaded only
by ``crowdlearn.symbolic``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("scipy", "sympy", "matplotlib", "ipywidgets", "anywidget", "pandas", "dask",
            "nbformat", "nbgrader")

PROBE = """
import sys, time, json, warnings
warnings.simplefilter("ignore")
t = time.perf_counter()
import crowdlearn
{extra}
elapsed = time.perf_counter() - t
print(json.dumps({{"seconds": elapsed, "file": crowdlearn.__file__,
                  "loaded": [m for m in {optional!r} if m in sys.modules]}}))
"""


def measure(tree: Path, extra: str = "", repeat: int = 7) -> dict:
    """Median seconds of ``import crowdlearn`` (then ``extra``) over ``repeat`` fresh runs
    with ``tree`` first on the path; and what the last run loaded."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = PROBE.format(extra=extra, optional=OPTIONAL)
    times, last = [], None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, check=True,
                             capture_output=True, text=True).stdout
        last = json.loads(out.strip().splitlines()[-1])
        if not Path(last["file"]).resolve().is_relative_to(tree.resolve()):
            raise RuntimeError(f"imported {last['file']}, not the tree {tree}")
        times.append(last["seconds"])
    return {"median": statistics.median(times), "min": min(times), "loaded": last["loaded"]}


def _report(label: str, tree: Path, repeat: int) -> None:
    for what, extra in (("import crowdlearn", ""),
                        ("+ crowdlearn.DawidSkene", "crowdlearn.DawidSkene")):
        r = measure(tree, extra, repeat)
        print(f"{label:<8} {what:<26} median {r['median']:.3f} s  (min {r['min']:.3f} s)  "
              f"loaded: {', '.join(r['loaded']) or 'none of ' + '/'.join(OPTIONAL)}",
              flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes per number")
    parser.add_argument("--before", metavar="REV",
                        help="also measure the tree of this git commit (git archive)")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, median of "
          f"{args.repeat} fresh processes")
    if args.before:
        with tempfile.TemporaryDirectory(prefix="crowdlearn-before-") as tmp:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before,
                                      "crowdlearn"], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            _report("before", Path(tmp), args.repeat)
    _report("after", ROOT, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
