"""Benchmark: the feature models' time per EM iteration, against targets, and the Gram matrices.

Run from the repository root::

    .venv/bin/python benchmarks/bench_feature_models.py

Prints, all measured in this one run:

(a) the per-group Gram (Hessian) matrices of the weighted logistic regressions, at a
    moderate size (20,000 rows, 10 groups, 100 features): the previous implementation,
    kept here as a tiny reference (one ``np.bincount`` per pair of columns, a Python
    loop over ``p (p + 1) / 2`` pairs), against the current one
    (:func:`crowdlearn._solvers.logistic._group_gram`: one BLAS ``syrk`` per group), with their
    largest relative difference; and the same for the curvature of the L1 solver (the
    previous one formed one column at a time, one ``O(n d)`` product each; the current
    :class:`crowdlearn._solvers.l1_logistic._Curvature` forms a block of columns, here all of
    them, in one product).
(b) seconds per EM iteration of ``LogisticAnnotators`` (``l2=1``) and
    ``SparseExpertsEM`` (``lam=1``) at (features, items, experts) = (50, 2000, 10),
    (250, 2000, 10), (500, 2000, 10), and 20 features with 10,000 items and 10,000
    experts who give one label each: the wall time of ``fit`` with ``max_iter=k,
    tol=0`` (``ConvergenceWarning`` silenced) divided by ``k`` -- it includes the
    set-up and the first M-step from the majority vote, so it slightly overstates the
    cost of one iteration.
(c) ``MajorityVoteLogistic`` with 2,000 features on 2,000 items (10 experts): at its
    default ``lam=1`` about 1,160 coefficients are non-zero, the hardest case for the
    L1 solver; and at ``lam=10`` (about 780).

Next to each time: the target and PASS/FAIL. Wall and CPU (``time.process_time``)
times are both given.

BLAS threads: by default the script runs the BLAS in one thread (it sets
``OPENBLAS_NUM_THREADS`` and friends before NumPy is imported). On a machine shared
with other work, multi-threaded OpenBLAS waits for busy cores and every large
linear-algebra call can become several times slower; one thread gives times that
hardly depend on the other load. ``--threads 0`` leaves the library's default,
``--threads N`` sets N. Not a test: nothing is asserted. Takes about 25 s on 2
cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (default 1; 0 leaves the library's default)")
    return parser.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else parse_args([])
if ARGS.threads > 0:  # before NumPy is imported
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(ARGS.threads)

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

import crowdlearn  # noqa: E402
from crowdlearn import ConvergenceWarning  # noqa: E402
from crowdlearn._solvers.l1_logistic import _check_problem, _Curvature  # noqa: E402
from crowdlearn._solvers.logistic import _group_gram  # noqa: E402
from crowdlearn.features.logistic_annotators import LogisticAnnotators  # noqa: E402
from crowdlearn.simulate.annotators import simulate_logistic_annotators  # noqa: E402
from crowdlearn.simulate.sparse import simulate_sparse_experts  # noqa: E402
from crowdlearn.features.sparse_experts import MajorityVoteLogistic, SparseExpertsEM  # noqa: E402

SIZES = ((50, 2000, 10), (250, 2000, 10), (500, 2000, 10))  # (features, items, experts)
MANY = (20, 10_000, 10_000)                                  # one label per expert
N_ITER = 5                                                   # EM iterations per fit
TARGET_FEATURES = 2.0   # s per EM iteration, up to 500 features x 2,000 items x 10 experts
TARGET_MANY = 1.0       # s per EM iteration, 10,000 experts with one label each
TARGET_MAJORITY = 10.0  # s for MajorityVoteLogistic at 2,000 features (136 s reported in issue 10; our bound)


from _timing import Stopwatch  # noqa: E402


def verdict(seconds: float, target: float) -> str:
    return f"target < {target:g} s  {'PASS' if seconds < target else 'FAIL'}"


# -- (a) the Gram matrices: the previous loops, kept as references ------------------------------
def gram_pair_loop(g, Z, curv, G):
    """The previous ``_group_gram``: one ``np.bincount`` per pair of columns."""
    p = Z.shape[1]
    out = np.empty((G, p, p))
    cz = Z * curv[:, None]
    for j in range(p):
        for k in range(j, p):
            out[:, j, k] = out[:, k, j] = np.bincount(g, weights=cz[:, j] * Z[:, k],
                                                      minlength=G)
    return out


def curvature_column_loop(Xc, w):
    """The previous L1 curvature: the feature block one column at a time."""
    return np.column_stack([Xc.T @ (w * Xc[:, j]) for j in range(Xc.shape[1])])


def best_of(f, repeats):
    times = []
    for _ in range(repeats):
        with Stopwatch() as sw:
            out = f()
        times.append(sw)
    return out, min(times, key=lambda s: s.wall)


def comparison_line(label, t_old, t_new, rel):
    print(f"    {label:<44} {1000 * t_old.wall:9.1f} ms {1000 * t_new.wall:9.1f} ms "
          f"{t_old.wall / t_new.wall:8.1f}x {t_old.cpu / max(t_new.cpu, 1e-9):8.1f}x "
          f"{rel:11.1e}")


def bench_gram(rows=20_000, groups=10, features=100):
    rng = np.random.default_rng(0)
    print("(a) Gram matrices: previous loop against current code, best of 3")
    print(f"    {'':<44} {'previous':>12} {'current':>12} {'speed-up':>9} {'(CPU)':>9} "
          f"{'max rel diff':>12}")
    g = rng.integers(0, groups, rows)
    Z = np.hstack([rng.normal(size=(rows, features)), np.ones((rows, 1))])
    curv = rng.uniform(0.0, 0.25, rows)
    old, t_old = best_of(lambda: gram_pair_loop(g, Z, curv, groups), 3)
    new, t_new = best_of(lambda: _group_gram(g, Z, curv, groups), 3)
    rel = np.abs(new - old).max() / np.abs(old).max()
    comparison_line(f"per-group Gram, {rows:,} rows, {groups} groups, p={features + 1}",
                    t_old, t_new, rel)
    # the L1 solver's curvature (feature block) on 2,000 items
    for d in (features, 5 * features):
        X = rng.normal(size=(2000, d))
        prob = _check_problem(X, rng.random(2000), None, 1.0, None, None, True, None, None,
                              None)
        Xc = X - X.mean(axis=0)
        u = rng.normal(size=2000)
        w = expit(u) * expit(-u)

        def current():
            H = _Curvature(prob, Xc, Xc * Xc, u)
            H.columns(np.arange(d))
            return H.C

        old, t_old = best_of(lambda: curvature_column_loop(Xc, w), 3)
        new, t_new = best_of(current, 3)
        off = ~np.eye(d, dtype=bool)  # the current diagonal carries a 1e-12 ridge
        rel = np.abs(new - old)[off].max() / np.abs(old).max()
        comparison_line(f"L1 curvature, 2,000 rows, {d} features", t_old, t_new, rel)


# -- (b) time per EM iteration ----------------------------------------------------------------
def annotator_crowd(d, n, K, seed=0):
    rng = np.random.default_rng(seed)
    coef = np.zeros(d)
    coef[:5] = [2.0, -1.5, 1.0, 0.5, -0.5]
    W = np.zeros((K, d))
    W[:, 0] = 1.0
    sim = simulate_logistic_annotators(n, coef, 0.0, W, rng.normal(-1.0, 0.3, K),
                                       random_state=seed)
    return sim.labels, sim.X


def sparse_crowd(d, n, K, seed=0):
    rng = np.random.default_rng(seed)
    coef = np.zeros(d)
    coef[:5] = [2.0, -1.5, 1.0, 0.5, -0.5]
    gamma = np.zeros(d)
    gamma[3] = 1.0
    sim = simulate_sparse_experts(n, coef, 0.3, rng.normal(1.0, 0.5, K), gamma,
                                  random_state=seed)
    return sim.labels, sim.X


def one_label_each(d, n, seed=0):
    """n items, n experts; expert e labels one item, right with probability 0.8."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    truth = (rng.random(n) < expit(X[:, 0] - X[:, 1])).astype(np.intp)
    label = np.where(rng.random(n) < 0.8, truth, 1 - truth)
    return (np.arange(n), rng.permutation(n), label), X


def per_iteration(model, labels, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Stopwatch() as sw:
            model.fit(labels, X)
    k = model.n_iter_
    return sw.wall / k, sw.cpu / k, k


def bench_em():
    print(f"\n(b) seconds per EM iteration: fit with max_iter={N_ITER}, tol=0, "
          f"time / iterations")
    print("    model                features   items  experts    wall/iter   CPU/iter")
    models = (("LogisticAnnotators", lambda: LogisticAnnotators(l2=1.0, max_iter=N_ITER,
                                                                 tol=0.0), annotator_crowd),
              ("SparseExpertsEM", lambda: SparseExpertsEM(lam=1.0, max_iter=N_ITER, tol=0.0),
               sparse_crowd))
    for name, make, crowd in models:
        for d, n, K in SIZES:
            labels, X = crowd(d, n, K)
            wall, cpu, k = per_iteration(make(), labels, X)
            print(f"    {name:<20} {d:8d} {n:7,d} {K:8,d} {wall:10.3f} s {cpu:8.3f} s   "
                  f"{verdict(wall, TARGET_FEATURES)}")
        d, n, K = MANY
        labels, X = one_label_each(d, n)
        wall, cpu, k = per_iteration(make(), labels, X)
        print(f"    {name:<20} {d:8d} {n:7,d} {K:8,d} {wall:10.3f} s {cpu:8.3f} s   "
              f"{verdict(wall, TARGET_MANY)}  (one label per expert)")


# -- (c) the majority-vote competitor -------------------------------------------------------------
def bench_majority(d=2000, n=2000, K=10):
    labels, X = sparse_crowd(d, n, K)
    print(f"\n(c) MajorityVoteLogistic, {d:,} features, {n:,} items, {K} experts")
    for lam in (1.0, 10.0):
        model = MajorityVoteLogistic(lam=lam, random_state=0)
        with Stopwatch() as sw:
            model.fit(labels, X)
        nnz = int(np.count_nonzero(model.coef_))
        line = (f"    lam={lam:<4g} {nnz:5d} non-zero coefficients: {sw.wall:7.2f} s wall, "
                f"{sw.cpu:7.2f} s CPU")
        if lam == 1.0:
            line += f"   {verdict(sw.wall, TARGET_MAJORITY)}  (the default penalty)"
        print(line)


def main() -> int:
    t0 = time.perf_counter()
    threads = "library default" if ARGS.threads <= 0 else str(ARGS.threads)
    print(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} cores, BLAS threads: "
          f"{threads}, {time.strftime('%Y-%m-%d')}")
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    bench_gram()
    bench_em()
    bench_majority()
    print(f"\ntotal benchmark time: {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
