"""Numbers a user hands the package by hand (parameters, starts, priors, penalties):
complex values, strings, ``None`` and other objects are refused with a ``ValueError``
naming the argument. A cast to float would drop an imaginary part (numpy only warns) or
read the string "0.5" as a number; neither may pass silently."""
import warnings

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn.aggregation.glad import glad_q_and_grad
from crowdlearn.aggregation.weighted_vote import log_odds_weights
from crowdlearn.features.logistic_annotators import observed_log_likelihood
from crowdlearn.simulate import simulate_crowd
from crowdlearn.simulate.izbicki_stern import expected_error
from crowdlearn.simulate.sparse import simulate_sparse_experts

SIM = simulate_sparse_experts(60, np.r_[2.0, -1.5, 0, 0], 0.3, [1.5, 1.0, 0.5],
                              np.r_[0, 0, 1.0, 0], random_state=0)
CONF = np.array([[[0.8, 0.2], [0.3, 0.7]]] * 3)
THETA = dict(coef=[1.0, 0, 0, 0], intercept=0.0, reliability_coef=np.ones((3, 4)),
             reliability_intercept=np.zeros(3))


def _with(value, name, base):
    """``base`` (a dict of good arguments) with ``name`` replaced by a hostile ``value``
    of the same shape as its good one."""
    return {**base, name: value}


def _hostile(good):
    """Hostile versions of a good numeric argument: complex, strings, None inside."""
    arr = np.asarray(good, dtype=float)
    obj = arr.astype(object)
    obj.flat[0] = None
    return {"complex": arr + 0.5j, "strings": arr.astype(str), "None": obj}


CALLS = {
    # name: (function of the keyword arguments, the good arguments, the names to spoil)
    "LogisticAnnotators init": (
        lambda init: cl.LogisticAnnotators(init=init).fit(SIM.labels, SIM.X),
        {"init": np.full(60, 0.5)}, ["init"]),
    "SparseExpertsEM init": (
        lambda init: cl.SparseExpertsEM(init=init).fit(SIM.labels, SIM.X),
        {"init": np.full(60, 0.5)}, ["init"]),
    "sparse_experts_path lambdas": (
        lambda lambdas: cl.sparse_experts_path(SIM.labels, SIM.X, lambdas),
        {"lambdas": [5.0, 1.0]}, ["lambdas"]),
    "observed_log_likelihood": (
        lambda **p: observed_log_likelihood(SIM.X, SIM.labels, **p),
        THETA, ["coef", "reliability_coef", "reliability_intercept"]),
    "simulate_crowd confusion": (
        lambda confusion: simulate_crowd(20, confusion, random_state=0),
        {"confusion": CONF}, ["confusion"]),
    "posterior_entropy": (
        lambda posterior: cl.posterior_entropy(posterior),
        {"posterior": np.full((3, 2), 0.5)}, ["posterior"]),
    "log_odds_weights": (
        lambda skills: log_odds_weights(skills, 2), {"skills": [0.7, 0.8]}, ["skills"]),
    "NaiveBayes.from_params": (
        lambda **p: cl.BernoulliNaiveBayes.from_params(**p),
        {"class_prior": [0.5, 0.5], "feature_prob": [[0.9, 0.2], [0.1, 0.6]]},
        ["class_prior", "feature_prob"]),
    "NaiveBayes sample_weight": (
        lambda sample_weight: cl.BernoulliNaiveBayes().fit(
            [[1, 0], [0, 1], [1, 1]], [0, 1, 1], sample_weight=sample_weight),
        {"sample_weight": [1.0, 1.0, 2.0]}, ["sample_weight"]),
    "expected_error": (
        lambda **p: expected_error(**p), {"pred": [0, 1], "proba": [0.2, 0.9]},
        ["pred", "proba"]),
    "glad_q_and_grad": (
        lambda **p: glad_q_and_grad(p["alpha"], p["b"], [0, 1], [0, 1], [0, 1], p["q"], 2),
        {"alpha": [1.0, 1.0], "b": [0.0, 0.0], "q": [[0.5, 0.5], [0.5, 0.5]]},
        ["alpha", "b", "q"]),
}


def test_the_good_arguments_work():
    """The table's good arguments are accepted, so each refusal below is the hostile value's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        for call, good, _ in CALLS.values():
            call(**good)


@pytest.mark.parametrize("what", ["complex", "strings", "None"])
@pytest.mark.parametrize("call_name", list(CALLS))
def test_hostile_numbers_are_refused_by_name(call_name, what):
    call, good, names = CALLS[call_name]
    for name in names:
        bad = _hostile(good[name])[what]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's ComplexWarning would be a silent drop
            with pytest.raises(ValueError, match=name):
                call(**_with(bad, name, good))


def test_a_complex_intercept_is_refused_not_a_type_error():
    with pytest.raises(ValueError, match="intercept"):
        observed_log_likelihood(SIM.X, SIM.labels, **{**THETA, "intercept": 1j})


@pytest.mark.parametrize("name, value, match", [
    ("coef", [1.0, 0, 0], r"coef must have shape \(4,\)"),
    ("reliability_intercept", [0.0, 0.0], r"reliability_intercept must have shape \(3,\)"),
    ("coef", [1.0, 0, 0, np.nan], "coef contains NaN"),
])
def test_observed_log_likelihood_checks_its_parameters(name, value, match):
    with pytest.raises(ValueError, match=match):
        observed_log_likelihood(SIM.X, SIM.labels, **{**THETA, name: value})
