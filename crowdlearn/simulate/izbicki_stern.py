r"""The simulated experiment of Izbicki and Stern (2013, section 4.1), repeated over seeds.

Chapter 10 of the book and ``benchmarks/izbicki_stern_sim.py`` call these functions
instead of repeating the simulate-fit-select-score loop.

* :func:`replicate` -- one scenario, one seed: the penalty grid of
  :class:`~crowdlearn.features.sparse_experts.SparseExpertsEM`, the penalty chosen by the
  surrogate risk on fresh validation items, and the four methods scored on fresh test
  items (:class:`Replication`).
* :func:`replication_study` -- :func:`replicate` over scenarios and seeds, in parallel
  processes, with paired confidence intervals for the differences between methods
  (:class:`Study`).
* :func:`bayes_error` -- the *population* Bayes error of the design, by Monte Carlo.

Errors are **expected** errors given the test features: for a classifier :math:`h`,
:math:`\frac1m\sum_i [h(x^{(i)})(1 - \pi_i) + (1 - h(x^{(i)}))\pi_i]` over the
:math:`m` test items, with :math:`\pi_i = P(y^{(i)} = 1 \mid x^{(i)})` known in a
simulation. It has the same mean as counting mistakes against
drawn truths and a smaller variance, so differences between methods are measured more
precisely.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from crowdlearn._progress import ProgressBar
from crowdlearn._validation import as_float_array, check_scalar
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning
from crowdlearn.selection import surrogate_risk
from crowdlearn.simulate.sparse import simulate_izbicki_stern
from crowdlearn.features._binary import _classifier_proba
from crowdlearn.features.sparse_experts import (MajorityVoteLogistic, SparseExpertsEM,
                                                sparse_experts_lambda_max)

__all__ = ["METHODS", "Replication", "Study", "replicate", "replication_study", "bayes_error",
           "expected_error"]

METHODS = ("EM-Sparse", "EM", "Majority", "True labels", "Bayes")
"""The methods of the paper's Figure 1 (the first three) and two references."""


def expected_error(pred, proba) -> float:
    r"""Expected error of 0/1 predictions given :math:`\pi_i = P(y^{(i)} = 1 \mid x^{(i)})`."""
    pred = as_float_array(pred, "pred")
    proba = as_float_array(proba, "proba")
    return float(np.mean(pred * (1.0 - proba) + (1.0 - pred) * proba))


@dataclass
class Replication:
    """One scenario and seed of :func:`replicate`. Row ``t`` of the path arrays belongs to
    ``lambdas[t]`` (decreasing)."""

    scenario: str
    squares: str
    seed: int
    lambdas: np.ndarray          # (L,)
    s_valid: np.ndarray          # (L,) surrogate risk on the validation items
    s_test: np.ndarray           # (L,) surrogate risk on the test items
    r_test: np.ndarray           # (L,) expected test error
    expert_intercept: np.ndarray  # (L, n_experts)
    converged: dict              # fit name -> bool (every EM fit: "lambda[t]", "EM")
    diverging: dict              # fit name -> list of experts running off to infinity
    selected: int                # index of lambda chosen by S-hat
    R: dict                      # method -> expected test error
    S: dict                      # method -> surrogate risk on the test items
    eps_bar: float               # mean error rate of the experts on the test items
    seconds: float
    flat: dict = field(default_factory=dict)  # fit name -> True if SQUAREM ended flat


def replicate(scenario: str = "i", seed: int = 0, *, squares: str = "raw",
              n_train: int = 2500, n_valid: int = 2500, n_test: int = 20_000,
              n_lambdas: int = 4, lambda_min_ratio: float = 1e-2,
              expert_prior: float = 1.0, accelerate: bool = True, tol: float = 1e-6,
              max_iter: int = 3000, m_step_max_iter: int = 1) -> Replication:
    r"""Section 4.1 of Izbicki and Stern (2013) once, for one scenario and seed.

    Three independent draws of the design
    (:func:`~crowdlearn.simulate.sparse.simulate_izbicki_stern`, seeds ``seed``,
    ``seed + 1000`` and ``seed + 2000``): ``n_train`` training items (features and the
    experts' labels), ``n_valid`` validation items (their labels only, to choose the
    penalty) and ``n_test`` test items (their :math:`P(y = 1 \mid x)`, to score).

    * **EM-Sparse**: :class:`~crowdlearn.features.sparse_experts.SparseExpertsEM` at
      ``n_lambdas`` penalties log-spaced from :math:`\lambda_{\max}`
      (:func:`~crowdlearn.features.sparse_experts.sparse_experts_lambda_max`, excluded: all
      coefficients are zero there) down to ``lambda_min_ratio`` times it, each fitted from
      the majority-vote start; the penalty with the smallest surrogate risk on the
      validation items wins.
    * **EM**: the same model with :math:`\lambda = 0`.
    * **Majority**: L1 logistic regression on the training majority vote
      (:class:`~crowdlearn.features.sparse_experts.MajorityVoteLogistic`), its penalty chosen the
      same way on a grid of the same size.
    * **True labels**: unpenalised logistic regression on the training truths.
    * **Bayes**: :math:`1\{P(y = 1 \mid x) > 1/2\}`.

    Every EM fit uses ``expert_prior``, ``accelerate``, ``tol``, ``max_iter`` and
    ``m_step_max_iter`` (default one proximal Newton step per M-step problem: a
    generalised EM step, which still raises the objective and has the same fixed points,
    at a fraction of the cost); its convergence and any expert whose intercept runs off to
    infinity are recorded (no warning is silenced without being recorded).
    """
    start = time.perf_counter()
    check_scalar(n_lambdas, "n_lambdas", low=1)
    train, valid, test = (simulate_izbicki_stern(n, scenario, squares=squares,
                                                 random_state=seed + 1000 * k)
                          for k, n in enumerate([n_train, n_valid, n_test]))
    grid = np.geomspace(1.0, lambda_min_ratio, n_lambdas + 1)[1:]  # times a lambda_max
    fits = _em_fits(train, grid, dict(expert_prior=expert_prior, accelerate=accelerate,
                                      tol=tol, max_iter=max_iter,
                                      m_step_max_iter=m_step_max_iter))
    s_valid = np.array([surrogate_risk(_classify(m, valid.X), valid.labels)
                        for m in fits.models])
    preds = [_classify(m, test.X) for m in fits.models]
    best = int(np.argmin(s_valid))
    truth_fit = MajorityVoteLogistic(lam=0.0).fit(train.truth[:, None], train.X)
    final = {
        "EM-Sparse": preds[best],
        "EM": _classify(fits.em, test.X),
        "Majority": _classify(_majority(train, valid, grid, seed), test.X),
        "True labels": _classify(truth_fit, test.X),
        "Bayes": (test.proba > 0.5).astype(int),
    }
    return Replication(
        scenario=scenario, squares=squares, seed=int(seed), lambdas=fits.lambdas,
        s_valid=s_valid,
        s_test=np.array([surrogate_risk(p, test.labels) for p in preds]),
        r_test=np.array([expected_error(p, test.proba) for p in preds]),
        expert_intercept=np.array([m.expert_intercept_ for m in fits.models]),
        converged=fits.converged, diverging=fits.diverging, flat=fits.flat, selected=best,
        R={k: expected_error(p, test.proba) for k, p in final.items()},
        S={k: surrogate_risk(p, test.labels) for k, p in final.items()},
        eps_bar=float(test.error_prob.mean()), seconds=time.perf_counter() - start)


def _classify(model, X: np.ndarray) -> np.ndarray:
    """``model.predict(X=X)`` for a classifier with ``coef_`` and ``intercept_`` and features
    that need no checking (simulated ones): the same numbers, without checking the test
    features again for every model."""
    return (_classifier_proba(X, model.coef_, model.intercept_)[:, 1] >= 0.5).astype(np.intp)


class _EMFits(NamedTuple):
    lambdas: np.ndarray  # (L,) the penalty grid, decreasing
    models: list         # SparseExpertsEM at each penalty
    em: SparseExpertsEM  # and at lambda = 0
    converged: dict      # fit name -> bool ("lambda[t]", "EM")
    diverging: dict      # fit name -> list of experts running off to infinity
    flat: dict           # fit name -> whether SQUAREM stopped on a flat optimum


def _em_fits(train, grid: np.ndarray, params: dict) -> _EMFits:
    r"""EM-Sparse at ``grid`` times :math:`\lambda_{\max}` and EM (:math:`\lambda = 0`) on
    the training draw, each from the majority-vote start, with ``params``; their
    :class:`~crowdlearn.ConvergenceWarning` and flat-optimum warnings recorded, not shown."""
    converged, diverging, flat = {}, {}, {}

    def fit(name, lam):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # recorded below instead
            warnings.simplefilter("ignore", DegenerateFitWarning)  # flat_optimum_ below
            model = SparseExpertsEM(lam=lam, **params).fit(train.labels, train.X)
        converged[name] = bool(model.converged_)
        diverging[name] = [int(k) for k in model.diverging_experts_]
        flat[name] = bool(getattr(model, "flat_optimum_", False))
        return model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lam_max = sparse_experts_lambda_max(train.labels, train.X, **params)
    lambdas = lam_max * grid
    models = [fit(f"lambda[{t}]", float(lam)) for t, lam in enumerate(lambdas)]
    em = fit("EM", 0.0)
    return _EMFits(lambdas, models, em, converged, diverging, flat)


def _majority(train, valid, grid: np.ndarray, seed: int) -> MajorityVoteLogistic:
    """The Majority competitor: :class:`MajorityVoteLogistic` at ``grid`` times the penalty
    that zeroes all its coefficients, the one with the smallest surrogate risk on the
    validation items."""
    vote = MajorityVoteLogistic(lam=1e9, random_state=seed).fit(train.labels, train.X).vote_
    labelled = ~np.isnan(vote)
    centred = vote[labelled] - vote[labelled].mean()
    lam_mv = np.abs(train.X[labelled].T @ centred).max() * grid
    mv = [MajorityVoteLogistic(lam=float(lam), random_state=seed).fit(train.labels, train.X)
          for lam in lam_mv]
    return mv[int(np.argmin([surrogate_risk(_classify(m, valid.X), valid.labels)
                             for m in mv]))]


def _replicate_job(args):
    scenario, squares, seed, kwargs = args
    return replicate(scenario, seed, squares=squares, **kwargs)


@dataclass
class Study:
    """:func:`replication_study`'s results. ``runs[name]`` lists the replications of
    setting ``name`` in seed order."""

    runs: dict = field(default_factory=dict)
    seconds: float = 0.0

    def errors(self, name: str, method: str) -> np.ndarray:
        """Expected test error of ``method`` in setting ``name``, one per seed."""
        return np.array([r.R[method] for r in self.runs[name]])

    def interval(self, name: str, method: str, other: str | None = None,
                 level: float = 0.95) -> tuple[float, float, float]:
        """Mean and two-sided ``level`` t-interval, over seeds, of ``method``'s error (or
        of its paired difference from ``other``'s: positive means ``method`` errs more)."""
        from scipy import stats

        x = self.errors(name, method)
        if other is not None:
            x = x - self.errors(name, other)
        n = x.size
        mean = float(x.mean())
        if n < 2:
            return mean, float("nan"), float("nan")
        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / np.sqrt(n))
        return mean, mean - half, mean + half

    def n_fits(self) -> int:
        return sum(len(r.converged) for runs in self.runs.values() for r in runs)

    def not_converged(self) -> list:
        """``(setting, seed, fit)`` of every EM fit that did not meet the stopping rule."""
        return [(name, r.seed, fit) for name, runs in self.runs.items() for r in runs
                for fit, ok in r.converged.items() if not ok]

    def flat(self) -> list:
        """``(setting, seed, fit)`` of every fit whose SQUAREM run stopped on a flat
        optimum (``flat_optimum_``: another start could end elsewhere, same objective)."""
        return [(name, r.seed, fit) for name, runs in self.runs.items() for r in runs
                for fit, is_flat in r.flat.items() if is_flat]

    def diverging(self) -> list:
        """``(setting, seed, fit, experts)`` of every fit with an expert running off."""
        return [(name, r.seed, fit, ks) for name, runs in self.runs.items() for r in runs
                for fit, ks in r.diverging.items() if ks]


_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def replication_study(settings: dict, seeds, *, n_jobs: int = 1, progress=None,
                      **kwargs) -> Study:
    """:func:`replicate` for every setting and seed.

    Parameters
    ----------
    settings : dict
        Name -> ``(scenario, squares)``, e.g. ``{"(i)": ("i", "raw")}``.
    seeds : iterable of int
    n_jobs : int, default 1
        Worker processes (``"spawn"`` start method, safe in a Jupyter kernel), each with
        single-threaded BLAS (these problems are small: threads competing for the cores
        made them several times slower). Results do not depend on it.
    progress : None, True or False
        A progress bar over the replications (a widget in Jupyter, a text line on stderr
        elsewhere).
    **kwargs
        Passed to :func:`replicate`.
    """
    check_scalar(n_jobs, "n_jobs", low=1)
    start = time.perf_counter()
    seeds = [int(s) for s in seeds]
    jobs = [(scenario, squares, seed, kwargs)
            for scenario, squares in settings.values() for seed in seeds]
    names = [name for name in settings for _ in seeds]
    bar = ProgressBar(len(jobs), "replications", enabled=progress)
    results = [None] * len(jobs)
    try:
        if n_jobs == 1:
            for i, job in enumerate(jobs):
                results[i] = _replicate_job(job)
                bar.update(info=f"{names[i]} seed {job[2]}")
        else:
            context = multiprocessing.get_context("spawn")
            saved = {k: os.environ.get(k) for k in _THREAD_VARIABLES}
            os.environ.update({k: "1" for k in _THREAD_VARIABLES})  # inherited at spawn
            try:
                with concurrent.futures.ProcessPoolExecutor(n_jobs,
                                                            mp_context=context) as pool:
                    futures = {pool.submit(_replicate_job, job): i
                               for i, job in enumerate(jobs)}
                    for future in concurrent.futures.as_completed(futures):
                        i = futures[future]
                        results[i] = future.result()
                        bar.update(info=f"{names[i]} seed {jobs[i][2]}")
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
    finally:
        bar.close()
    study = Study()
    for name, result in zip(names, results):
        study.runs.setdefault(name, []).append(result)
    study.seconds = time.perf_counter() - start
    return study


def bayes_error(n: int = 1_000_000, *, random_state=0, chunk: int = 200_000):
    r"""The population Bayes error
    :math:`\mathbb{E}[\min(P(y = 1 \mid x), 1 - P(y = 1 \mid x))]` of the
    design, by Monte Carlo over ``n`` draws of the
    features :math:`x` (the truth model is the same in every scenario).

    Returns ``(estimate, standard_error)``.
    """
    check_scalar(n, "n", low=2)
    rng = np.random.default_rng(random_state)
    values = []
    done = 0
    while done < n:
        m = min(chunk, n - done)
        sim = simulate_izbicki_stern(m, "i", random_state=rng)
        values.append(np.minimum(sim.proba, 1.0 - sim.proba))
        done += m
    v = np.concatenate(values)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))
