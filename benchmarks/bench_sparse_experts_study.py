"""Benchmark: chapter 10's replication study -- one replicate per setting, and its M-step.

Run from the repository root::

    .venv/bin/python benchmarks/bench_sparse_experts_study.py

Prints, all measured in this one run:

(a) wall and CPU seconds of one :func:`crowdlearn.simulate.izbicki_stern.replicate` (seed 0,
    the book's defaults: 4 penalties and lambda = 0, SQUAREM, one proximal Newton step per
    M-step problem) in each of the study's four settings; the full study is 8 seeds of each.
(b) one ``SparseExpertsEM`` M-step (``expert_prior=1``, one proximal Newton iteration per
    problem), replayed on the M-steps of a fit in setting (iii) with centred squares: the
    previous M-step, kept here as a small reference (two :func:`fit_l1_logistic` calls that
    check the whole problem, centre the features, build the prior's pseudo-labels and report
    the KKT violation and objective every time; it calls today's solver, so the reuse of
    ``expit(u)`` in the curvature is in both columns), against the current one (the fixed part of
    both problems checked and centred once per fit, ``_PreparedProblem.point``), alternated
    so that machine load hits both alike, with the largest difference of their results
    (zero: the arithmetic is the same).
(c) the E-step's normalisation of an ``(n_items, 2)`` log joint: the previous
    ``normalize_log`` (row reductions by ``np.max``/``np.sum`` along rows of two) against
    the current one, with the largest difference (zero).

Not a test: nothing is asserted. BLAS in one thread (set before NumPy is imported), as the
study's worker processes run it. Takes about a minute on 2 cores.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy is imported

import numpy as np  # noqa: E402

import crowdlearn  # noqa: E402
from crowdlearn import ConvergenceWarning  # noqa: E402
from crowdlearn._base import normalize_log  # noqa: E402
from crowdlearn._solvers.l1_logistic import fit_l1_logistic  # noqa: E402
from crowdlearn.features import sparse_experts  # noqa: E402
from crowdlearn.features._binary import _right_targets  # noqa: E402
from crowdlearn.features.sparse_experts import SparseExpertsEM, SparseExpertsParams  # noqa: E402
from crowdlearn.simulate.izbicki_stern import replicate  # noqa: E402
from crowdlearn.simulate.sparse import simulate_izbicki_stern  # noqa: E402

from _timing import Stopwatch  # noqa: E402

SETTINGS = {"(i)": ("i", "raw"), "(ii)": ("ii", "raw"), "(iii)": ("iii", "raw"),
            "(iii) centred": ("iii", "centered")}
REPEATS = 3


def say(*args):
    print(*args, flush=True)


# -- (a) one replicate per setting ----------------------------------------------------------------
def bench_replicates():
    say("(a) one replicate (seed 0) per setting")
    say(f"    {'setting':<16} {'wall s':>8} {'CPU s':>8}  EM fits converged")
    replicate("iii", 99)  # warm up: imports, first calls
    total_wall = total_cpu = 0.0
    for name, (scenario, squares) in SETTINGS.items():
        with Stopwatch() as sw:
            rep = replicate(scenario, 0, squares=squares)
        total_wall, total_cpu = total_wall + sw.wall, total_cpu + sw.cpu
        say(f"    {name:<16} {sw.wall:8.2f} {sw.cpu:8.2f}  "
            f"{sum(rep.converged.values())} of {len(rep.converged)}")
    say(f"    {'sum':<16} {total_wall:8.2f} {total_cpu:8.2f}  (the full study: 8 seeds each)")


# -- (b) the M-step, previous and current -------------------------------------------------------
def m_step_previous(model, data, q, start):
    """The previous ``SparseExpertsEM._m_step`` (without ``return_fits``): both problems
    checked, centred and reported in full at every call."""
    crowd = data.crowd
    lam, lam_rel, prior = model._lams
    mu = q[:, 1]
    clf = fit_l1_logistic(data.X, mu, lam=lam, coef_init=start.coef,
                          intercept_init=start.intercept, tol=model.m_step_tol,
                          max_iter=model.m_step_max_iter)
    target, X_rel, rows, groups, weight = _right_targets(crowd, mu), data.X, crowd.item, \
        crowd.expert, None
    if prior > 0:
        K = crowd.n_experts
        X_rel = np.vstack([data.X, np.zeros((1, data.X.shape[1]))])
        rows = np.concatenate([crowd.item, np.full(K, crowd.n_items)])
        groups = np.concatenate([crowd.expert, np.arange(K)])
        target = np.concatenate([target, np.full(K, 0.5)])
        weight = np.concatenate([np.ones(crowd.n_labels), np.full(K, 2.0 * prior)])
    rel = fit_l1_logistic(X_rel, target, weight, lam=lam_rel, rows=rows,
                          intercept_groups=groups, n_intercepts=crowd.n_experts,
                          coef_init=start.reliability_coef,
                          intercept_init=start.expert_intercept, tol=model.m_step_tol,
                          max_iter=model.m_step_max_iter)
    return SparseExpertsParams(clf.coef, float(clf.intercept),
                               np.atleast_1d(np.asarray(rel.intercept, dtype=float)),
                               rel.coef)


def recorded_m_steps(lam):
    """The (data, posterior, start) of every M-step of one study-like fit."""
    sim = simulate_izbicki_stern(2500, "iii", squares="centered", random_state=0)
    model = SparseExpertsEM(lam=lam, expert_prior=1.0, accelerate=True, tol=1e-6,
                            max_iter=3000, m_step_max_iter=1)
    calls = []
    original = SparseExpertsEM._m_step

    def record(self, data, q, start, return_fits=False):
        calls.append((data, q.copy(), start))
        return original(self, data, q, start, return_fits)

    SparseExpertsEM._m_step = record
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(sim.labels, sim.X)
    finally:
        SparseExpertsEM._m_step = original
    return model, calls


def flat(params) -> np.ndarray:
    return np.concatenate([np.ravel(x) for x in params])


def bench_m_step():
    say(f"\n(b) one M-step (expert_prior=1, one proximal Newton step per problem), replayed; "
        f"best of {REPEATS}")
    say(f"    {'fit':<26} {'M-steps':>7} {'previous':>11} {'current':>11} {'speed-up':>9} "
        f"{'(CPU)':>7} {'max diff':>9}")
    for lam in (10.0, 1.0, 0.0):
        model, calls = recorded_m_steps(lam)
        # one data object, as in a fit: the current M-step prepares its problems at the
        # first call and reuses them
        data0 = sparse_experts._new_data(calls[0][0].crowd, calls[0][0].X)
        fresh = [(data0, q, start) for _, q, start in calls]
        times, outputs = {"previous": [], "current": []}, {}
        for _ in range(REPEATS):
            for label in ("previous", "current"):
                data0.m_step_problems.clear()  # the current M-step prepares them once per fit
                with Stopwatch() as sw:
                    if label == "previous":
                        out = [m_step_previous(model, d, q, s) for d, q, s in fresh]
                    else:
                        out = [model._m_step(d, q, s) for d, q, s in fresh]
                times[label].append(sw)
                outputs[label] = out
        diff = max(float(np.max(np.abs(flat(a) - flat(b))))
                   for a, b in zip(outputs["previous"], outputs["current"]))
        old = min(times["previous"], key=lambda s: s.wall)
        new = min(times["current"], key=lambda s: s.wall)
        n = len(fresh)
        say(f"    {'(iii) centred, lambda=' + f'{lam:g}':<26} {n:7d} "
            f"{1e3 * old.wall / n:8.2f} ms {1e3 * new.wall / n:8.2f} ms "
            f"{old.wall / new.wall:8.1f}x {old.cpu / max(new.cpu, 1e-9):6.1f}x {diff:9.1e}")


# -- (c) the E-step's normalisation ---------------------------------------------------------------
def normalize_log_previous(log_joint):
    """The previous ``normalize_log``: reductions along the rows, whatever their length."""
    m = np.max(log_joint, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(log_joint - m)
    s = p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_evidence = (np.log(s) + m)[:, 0]
    safe = np.where(s > 0, s, 1.0)
    return p / safe, log_evidence


def bench_normalize(n=2500, calls=2000):
    say(f"\n(c) normalize_log of an ({n:,}, 2) log joint, {calls} calls; best of {REPEATS}")
    rng = np.random.default_rng(0)
    log_joint = rng.normal(size=(n, 2)) * 5.0 - 3.0
    times = {"previous": [], "current": []}
    for _ in range(REPEATS):
        for label, f in (("previous", normalize_log_previous), ("current", normalize_log)):
            with Stopwatch() as sw:
                for _ in range(calls):
                    out = f(log_joint)
            times[label].append(sw)
            if label == "previous":
                ref = out
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ref, out))
    old = min(times["previous"], key=lambda s: s.wall)
    new = min(times["current"], key=lambda s: s.wall)
    say(f"    previous {1e6 * old.wall / calls:7.1f} us, current {1e6 * new.wall / calls:7.1f} us"
        f" per call: {old.wall / new.wall:.1f}x (CPU {old.cpu / max(new.cpu, 1e-9):.1f}x); "
        f"max diff {diff:.1e}")


if __name__ == "__main__":
    say(f"crowdlearn {crowdlearn.__version__}, numpy {np.__version__}, Python "
        f"{sys.version.split()[0]}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    bench_replicates()
    bench_m_step()
    bench_normalize()
