"""Tests of the weighted logistic regression solver (crowdlearn._solvers.logistic)."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import approx_fprime, minimize
from scipy.special import expit, log_expit

from crowdlearn._solvers.logistic import fit_weighted_logistic, weighted_logistic_objective


# -- the objective, written out independently of the package ------------------------------------
def objective(theta, X, m, s, l2, penalize_intercept=True):
    """L(w, b) = sum_r s_r [m_r log sigma(u_r) + (1 - m_r) log sigma(-u_r)] - l2/2 |theta|^2."""
    w, b = theta[:-1], theta[-1]
    u = X @ w + b
    value = np.sum(s * (m * log_expit(u) + (1 - m) * log_expit(-u)))
    return value - 0.5 * l2 * (w @ w + (b * b if penalize_intercept else 0.0))


def gradient(theta, X, m, s, l2, penalize_intercept=True):
    w, b = theta[:-1], theta[-1]
    resid = s * (m - expit(X @ w + b))
    return np.concatenate([X.T @ resid - l2 * w,
                           [resid.sum() - (l2 * b if penalize_intercept else 0.0)]])


def problem(seed=0, n=200, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 2.0, 0.5][:d]
    truth = expit(X @ rng.normal(size=d) + 0.3)
    m = np.clip(truth + rng.normal(scale=0.2, size=n), 0, 1)   # soft targets
    s = rng.uniform(0.1, 2.0, size=n)
    return X, m, s


def theta_of(fit):
    return np.append(fit.coef, fit.intercept)


# -- it finds the maximiser ----------------------------------------------------------------------
@pytest.mark.parametrize("l2", [0.0, 0.1, 5.0])
@pytest.mark.parametrize("penalize_intercept", [True, False])
def test_matches_scipy_minimize(l2, penalize_intercept):
    X, m, s = problem()
    fit = fit_weighted_logistic(X, m, s, l2=l2, penalize_intercept=penalize_intercept)
    assert fit.converged
    ref = minimize(lambda th: -objective(th, X, m, s, l2, penalize_intercept), np.zeros(4),
                   jac=lambda th: -gradient(th, X, m, s, l2, penalize_intercept),
                   method="BFGS", options={"gtol": 1e-10, "maxiter": 1000})
    np.testing.assert_allclose(theta_of(fit), ref.x, atol=1e-6)
    assert fit.objective == pytest.approx(objective(ref.x, X, m, s, l2, penalize_intercept),
                                          rel=1e-12)
    assert fit.objective >= -ref.fun - 1e-9


@pytest.mark.parametrize("l2", [0.0, 0.5])
def test_gradient_vanishes_at_the_solution(l2):
    """KKT for an unconstrained concave problem: the gradient is zero (checked with the
    gradient written in the test and with finite differences of the objective)."""
    X, m, s = problem(seed=1)
    fit = fit_weighted_logistic(X, m, s, l2=l2)
    theta = theta_of(fit)
    assert np.abs(gradient(theta, X, m, s, l2)).max() < 1e-7
    fd = approx_fprime(theta, objective, 1e-6, X, m, s, l2)
    assert np.abs(fd).max() < 1e-3
    # and the package's own gradient agrees
    _, gw, gb = weighted_logistic_objective(fit.coef, fit.intercept, X, m, s, l2=l2)
    assert np.abs(np.append(gw, gb)).max() < 1e-7


def test_objective_and_gradient_match_finite_differences():
    X, m, s = problem(seed=2)
    rng = np.random.default_rng(0)
    for l2, pen_b in [(0.0, True), (0.7, True), (0.7, False)]:
        theta = rng.normal(size=4)
        value, gw, gb = weighted_logistic_objective(theta[:3], theta[3], X, m, s, l2=l2,
                                                    penalize_intercept=pen_b)
        assert value == pytest.approx(objective(theta, X, m, s, l2, pen_b), rel=1e-12)
        h = 1e-5
        fd = np.array([(objective(theta + h * e, X, m, s, l2, pen_b)
                        - objective(theta - h * e, X, m, s, l2, pen_b)) / (2 * h)
                       for e in np.eye(4)])
        np.testing.assert_allclose(np.append(gw, gb), fd, rtol=1e-6, atol=1e-6)


def test_soft_targets_equal_two_weighted_hard_rows():
    """A row with soft target m and weight s is the same as a row labelled 1 with weight
    s*m plus a row labelled 0 with weight s*(1 - m)."""
    X, m, s = problem(seed=3, n=80)
    soft = fit_weighted_logistic(X, m, s, l2=0.1)
    hard = fit_weighted_logistic(np.vstack([X, X]), np.r_[np.ones(80), np.zeros(80)],
                                 np.r_[s * m, s * (1 - m)], l2=0.1)
    np.testing.assert_allclose(theta_of(soft), theta_of(hard), atol=1e-9)
    assert soft.objective == pytest.approx(hard.objective, rel=1e-10)


def test_unit_weights_are_the_default():
    X, m, _ = problem(seed=4, n=60)
    np.testing.assert_allclose(theta_of(fit_weighted_logistic(X, m)),
                               theta_of(fit_weighted_logistic(X, m, np.ones(60))), atol=1e-12)


def test_ridge_shrinks():
    X, m, s = problem(seed=5)
    norms = [np.linalg.norm(theta_of(fit_weighted_logistic(X, m, s, l2=l2)))
             for l2 in [0.0, 1.0, 10.0, 100.0, 1e6]]
    assert all(a > b for a, b in zip(norms, norms[1:]))
    assert norms[-1] < 1e-3
    # without an intercept penalty the intercept is free: a huge penalty leaves the
    # intercept-only logistic regression, sigma(b) = weighted mean target
    fit = fit_weighted_logistic(X, m, s, l2=1e9, penalize_intercept=False)
    assert np.abs(fit.coef).max() < 1e-6
    assert expit(fit.intercept) == pytest.approx(np.sum(s * m) / np.sum(s), abs=1e-6)


def test_hand_computed_intercept_only():
    """With no features, sigma(b) is the weighted mean of the targets: b = logit(0.3)."""
    fit = fit_weighted_logistic(np.zeros((3, 0)), [0.1, 0.2, 0.9], [1.0, 3.0, 0.5])
    assert fit.coef.shape == (0,)
    mean = (0.1 + 0.6 + 0.45) / 4.5
    assert fit.intercept == pytest.approx(np.log(mean / (1 - mean)), abs=1e-10)


# -- groups: independent problems at once --------------------------------------------------------
def test_groups_equal_separate_fits():
    X, m, s = problem(seed=6, n=300)
    g = np.random.default_rng(0).integers(0, 4, size=300)
    g[g == 2] = 3          # group 2 has no rows
    fit = fit_weighted_logistic(X, m, s, l2=0.3, groups=g, n_groups=5)
    assert fit.coef.shape == (5, 3) and fit.intercept.shape == (5,)
    assert fit.objective.shape == (5,)
    for k in [0, 1, 3]:
        one = fit_weighted_logistic(X[g == k], m[g == k], s[g == k], l2=0.3)
        np.testing.assert_allclose(theta_of(one), np.append(fit.coef[k], fit.intercept[k]),
                                   atol=1e-8)
        assert fit.objective[k] == pytest.approx(one.objective, rel=1e-10)
    # empty groups: only the penalty, maximised at zero
    np.testing.assert_array_equal(fit.coef[[2, 4]], 0.0)
    np.testing.assert_array_equal(fit.intercept[[2, 4]], 0.0)
    value, _, _ = weighted_logistic_objective(fit.coef, fit.intercept, X, m, s, l2=0.3,
                                              groups=g, n_groups=5)
    np.testing.assert_allclose(value, fit.objective, rtol=1e-12)


def test_empty_group_keeps_its_start_without_penalty():
    X, m, s = problem(seed=7, n=50)
    g = np.zeros(50, dtype=int)
    fit = fit_weighted_logistic(X, m, s, groups=g, n_groups=2,
                                coef_init=[[0, 0, 0], [1.0, 2.0, 3.0]], intercept_init=[0, -1.0])
    np.testing.assert_array_equal(fit.coef[1], [1.0, 2.0, 3.0])
    assert fit.intercept[1] == -1.0


# -- monotone: never worse than the start --------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), l2=st.sampled_from([0.0, 1e-3, 1.0]),
       max_iter=st.integers(0, 3), scale=st.sampled_from([0.1, 1.0, 10.0]))
def test_never_worse_than_the_start(seed, l2, max_iter, scale):
    rng = np.random.default_rng(seed)
    X, m, s = problem(seed=seed, n=40, d=2)
    start = rng.normal(scale=scale, size=3)
    fit = fit_weighted_logistic(X, m, s, l2=l2, coef_init=start[:2], intercept_init=start[2],
                                max_iter=max_iter)
    assert fit.objective >= objective(start, X, m, s, l2) - 1e-12 * abs(fit.objective)
    assert fit.objective == pytest.approx(objective(theta_of(fit), X, m, s, l2), rel=1e-12,
                                          abs=1e-12)
    assert fit.n_iter <= max_iter


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), l2=st.sampled_from([1e-2, 1.0]))
def test_solution_beats_random_points(seed, l2):
    X, m, s = problem(seed=seed, n=30, d=2)
    fit = fit_weighted_logistic(X, m, s, l2=l2)
    rng = np.random.default_rng(seed)
    for theta in theta_of(fit) + rng.normal(scale=0.3, size=(20, 3)):
        assert objective(theta, X, m, s, l2) <= fit.objective + 1e-10


def test_separable_hard_targets_stay_finite_and_quiet():
    """No maximiser exists without a penalty; the iterates grow but nothing overflows
    (RuntimeWarnings are errors in this test suite)."""
    X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_weighted_logistic(X, [0, 0, 1, 1], max_iter=60)
    assert np.isfinite(fit.coef).all() and fit.coef[0] > 5
    assert fit.objective <= 0
    bounded = fit_weighted_logistic(X, [0, 0, 1, 1], l2=1.0)
    assert bounded.converged and 0 < bounded.coef[0] < 5


def test_collinear_features_without_penalty():
    X, m, s = problem(seed=8, n=100, d=2)
    Xc = np.column_stack([X, X[:, 0]])          # third column = first
    fit = fit_weighted_logistic(Xc, m, s)
    base = fit_weighted_logistic(X, m, s)
    assert fit.objective == pytest.approx(base.objective, rel=1e-9)
    assert fit.coef[0] + fit.coef[2] == pytest.approx(base.coef[0], abs=1e-5)


# -- the per-group Hessian (Gram) matrices, against a plain reference --------------------------
def reference_gram(g, Z, curv, G):
    """sum_r curv_r z_r z_r^T within each group, one group at a time, written out plainly."""
    out = np.zeros((G, Z.shape[1], Z.shape[1]))
    for j in range(G):
        rows = g == j
        out[j] = np.einsum("r,ri,rk->ik", curv[rows], Z[rows], Z[rows])
    return out


def group_structure(kind, rng):
    """(groups, n_groups, p): groups in random row order, some of them empty."""
    if kind == "one group":
        return np.zeros(300, dtype=int), 1, 5
    if kind == "few large groups, one empty":
        g = rng.integers(0, 5, 3000)
        g[g == 2] = 4
        return g, 5, 30
    if kind == "one row per group, many empty":
        return rng.permutation(400)[:250], 400, 6
    if kind == "mixed sizes":
        sizes = np.r_[[600, 0, 1, 2, 3], rng.integers(0, 40, 60), [0, 0, 900]]
        g = np.repeat(np.arange(sizes.size), sizes)
        return rng.permutation(g), sizes.size, 12
    if kind == "wide, few rows per group":
        return rng.integers(0, 40, 70), 43, 101
    raise ValueError(kind)


GROUP_KINDS = ["one group", "few large groups, one empty", "one row per group, many empty",
               "mixed sizes", "wide, few rows per group"]


@pytest.mark.parametrize("kind", GROUP_KINDS)
@pytest.mark.parametrize("chunk", [None, 50])
def test_group_gram_equals_reference(kind, chunk, monkeypatch):
    from crowdlearn._solvers import logistic as _logistic
    if chunk is not None:   # tiny chunks: the small groups are summed in many pieces
        monkeypatch.setattr(_logistic, "_OUTER_CHUNK_ENTRIES", chunk)
    rng = np.random.default_rng(len(kind))
    g, G, p = group_structure(kind, rng)
    Z = rng.normal(size=(g.size, p)) * rng.uniform(0.1, 10.0, p)
    curv = rng.uniform(0.0, 0.25, g.size)
    curv[rng.random(g.size) < 0.3] = 0.0          # zero weights
    if G > 1:
        curv[g == g[0]] = 0.0                     # a group whose weights are all zero
    got = _logistic._group_gram(g, Z, curv, G)
    ref = reference_gram(g, Z, curv, G)
    assert got.shape == (G, p, p)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_array_equal(got, got.transpose(0, 2, 1))   # exactly symmetric
    np.testing.assert_array_equal(got[np.bincount(g, minlength=G) == 0], 0.0)
    # the layout used by the solver: rows sorted by group; only some groups computed
    if G > 1:
        order = np.argsort(g, kind="stable")
        layout = _logistic._GroupLayout(g[order], G, p)
        which = rng.random(G) < 0.5
        part = layout.gram(Z[order], curv[order], which=which)
        np.testing.assert_allclose(part, ref[which], rtol=1e-10,
                                   atol=1e-10 * np.abs(ref).max())
        theta = rng.normal(size=(G, p))
        np.testing.assert_allclose(layout.linear(Z[order], theta),
                                   np.einsum("rp,rp->r", Z, theta[g])[order], rtol=1e-10,
                                   atol=1e-10 * np.abs(Z).max())
        r = rng.normal(size=g.size)
        ref_sum = np.array([r[g == j] @ Z[g == j] for j in range(G)]).reshape(G, p)
        np.testing.assert_allclose(layout.weighted_sum(Z[order], r[order]), ref_sum,
                                   rtol=1e-10, atol=1e-10 * np.abs(ref_sum).max())


def test_many_small_groups_equal_separate_fits():
    """Groups of 0 to 3 rows next to large ones (two code paths in one fit)."""
    rng = np.random.default_rng(11)
    sizes = np.r_[[0, 1, 2, 3, 1, 0, 2], [400, 250]]
    g = rng.permutation(np.repeat(np.arange(sizes.size), sizes))
    X = rng.normal(size=(g.size, 3))
    m = expit(X @ [1.0, -0.5, 0.2] + rng.normal(size=g.size))
    s = rng.uniform(0.0, 2.0, g.size)
    fit = fit_weighted_logistic(X, m, s, l2=0.5, groups=g, n_groups=sizes.size)
    assert fit.converged
    for k in range(sizes.size):
        rows = g == k
        one = fit_weighted_logistic(X[rows], m[rows], s[rows], l2=0.5)
        np.testing.assert_allclose(theta_of(one), np.append(fit.coef[k], fit.intercept[k]),
                                   atol=1e-8)
        assert fit.objective[k] == pytest.approx(one.objective, rel=1e-10, abs=1e-12)


# -- bad inputs ------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.ones(3), target=[0.5] * 3), "2-dimensional"),
    (dict(X=[[np.nan], [1.0]], target=[0.5, 0.5]), "NaN"),
    (dict(X=[[1.0], [2.0]], target=[0.5]), r"target must have shape \(2,\)"),
    (dict(X=[[1.0], [2.0]], target=[0.5, 1.5]), r"probabilities in \[0, 1\]"),
    (dict(X=[[1.0], [2.0]], target=[0.5, 0.5], weight=[1.0, -1.0]), "non-negative"),
    (dict(X=[[1.0], [2.0]], target=[0.5, 0.5], l2=-1.0), "l2 must be >= 0"),
    (dict(X=[[1.0], [2.0]], target=[0.5, 0.5], groups=[0, 3], n_groups=2), "groups must lie"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_weighted_logistic(**kwargs)
