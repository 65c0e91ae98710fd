"""crowdlearn.simulate.izbicki_stern: the chapter 10 study, scored and summarised correctly."""

import dataclasses
import os

import numpy as np
import pytest
from scipy import stats

from crowdlearn.simulate.izbicki_stern import (METHODS, Study, bayes_error, expected_error, replicate,
                                      replication_study)

SMALL = dict(n_train=300, n_valid=300, n_test=2000, n_lambdas=2)


@pytest.fixture(scope="module")
def small_study():
    return replication_study({"(i)": ("i", "raw"), "(ii)": ("ii", "raw")}, [0, 1, 2],
                             **SMALL)


def test_expected_error_by_hand():
    assert expected_error([1, 0, 1], [0.9, 0.2, 0.4]) == pytest.approx((0.1 + 0.2 + 0.6) / 3)
    assert expected_error([0, 0], [0.0, 1.0]) == pytest.approx(0.5)


def test_replication_fields_and_the_bayes_rule_is_best(small_study):
    for reps in small_study.runs.values():
        for r in reps:
            L = r.lambdas.size
            assert L == 2 and (np.diff(r.lambdas) < 0).all()
            for a in (r.s_valid, r.s_test, r.r_test):
                assert a.shape == (L,) and np.isfinite(a).all()
                assert ((a >= 0) & (a <= 1)).all()
            assert r.expert_intercept.shape == (L, 3)
            assert set(r.converged) == {"lambda[0]", "lambda[1]", "EM"}
            assert 0 <= r.selected < L and r.s_valid[r.selected] == r.s_valid.min()
            assert r.R["EM-Sparse"] == r.r_test[r.selected]
            assert set(r.R) == set(METHODS) == set(r.S)
            # the Bayes rule minimises the expected error given x, item by item
            assert all(r.R["Bayes"] <= v + 1e-15 for v in r.R.values())


def test_interval_is_a_paired_t_interval(small_study):
    a = small_study.errors("(i)", "EM-Sparse")
    b = small_study.errors("(i)", "EM")
    x = a - b
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    mean, low, high = small_study.interval("(i)", "EM-Sparse", "EM")
    assert mean == pytest.approx(x.mean()) and low == pytest.approx(x.mean() - half)
    assert high == pytest.approx(x.mean() + half)
    m2, l2, h2 = small_study.interval("(i)", "EM", "EM-Sparse")
    assert m2 == pytest.approx(-mean) and l2 == pytest.approx(-high)
    wide = small_study.interval("(i)", "EM-Sparse", "EM", level=0.99)
    assert wide[1] <= low and wide[2] >= high


def test_one_seed_has_no_interval():
    study = Study(runs={"x": [replicate("i", 0, **SMALL)]})
    mean, low, high = study.interval("x", "EM")
    assert np.isfinite(mean) and np.isnan(low) and np.isnan(high)


def test_same_seed_same_result_and_processes_do_not_change_it(small_study):
    before = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    again = replication_study({"(ii)": ("ii", "raw")}, [1, 2], n_jobs=2, **SMALL)
    assert {k: os.environ.get(k) for k in before} == before  # restored
    for r, s in zip(again.runs["(ii)"], small_study.runs["(ii)"][1:]):
        assert r.seed == s.seed and r.selected == s.selected
        assert r.R == s.R and r.S == s.S
        np.testing.assert_array_equal(r.r_test, s.r_test)


def test_bookkeeping_of_convergence_and_divergence(small_study):
    assert small_study.n_fits() == 2 * 3 * 3
    assert small_study.not_converged() == [] and small_study.diverging() == []
    # without the prior, a strong penalty makes an expert run off; it is recorded
    r = replicate("i", 0, n_valid=300, n_test=1000, n_lambdas=1,
                  lambda_min_ratio=10**-0.5, expert_prior=0.0)
    study = Study(runs={"(i)": [r]})
    assert any(fit == "lambda[0]" for _, _, fit, _ in study.diverging())


def test_flat_optima_are_recorded_per_fit_not_warned(small_study):
    """Every fit has a flat-optimum flag beside its convergence flag; a flagged fit shows
    up in Study.flat() and no DegenerateFitWarning escapes the study."""
    for runs in small_study.runs.values():
        for r in runs:
            assert set(r.flat) == set(r.converged)
            assert all(isinstance(v, bool) for v in r.flat.values())
    r = small_study.runs["(ii)"][0]
    flagged = dict(r.flat, EM=True)
    fake = Study(runs={"x": [dataclasses.replace(r, flat=flagged)]})
    assert ("x", r.seed, "EM") in fake.flat()
    import warnings
    from crowdlearn.exceptions import DegenerateFitWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        replicate("ii", 3, **SMALL)


def test_bayes_error_population_value_and_reproducibility():
    v, se = bayes_error(200_000, random_state=1)
    assert (v, se) == bayes_error(200_000, random_state=1)
    assert 0 < se < 1e-3 and 0.33 < v < 0.36
    v2, se2 = bayes_error(200_000, random_state=2)
    assert abs(v - v2) < 5 * np.hypot(se, se2)


@pytest.mark.parametrize("call", [
    lambda: replication_study({"(i)": ("i", "raw")}, [0], n_jobs=0),
    lambda: replicate("i", 0, n_lambdas=0),
    lambda: bayes_error(1),
    lambda: replicate("iv", 0, **SMALL),
])
def test_bad_input(call):
    with pytest.raises(ValueError):
        call()
