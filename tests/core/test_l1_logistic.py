"""Tests of the weighted L1-penalised logistic regression solver (crowdlearn._solvers.l1_logistic)."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from crowdlearn._solvers.l1_logistic import (fit_l1_logistic, kkt_violation, l1_logistic_gradient,
                                     l1_logistic_lambda_max, l1_logistic_objective)
from crowdlearn._solvers.logistic import fit_weighted_logistic


def random_problem(seed, n=300, d=6, n_rows=None, G=1, shift=True):
    """Soft targets, weights, offsets; optionally shared rows and intercept groups."""
    rng = np.random.default_rng(seed)
    n_rows = n if n_rows is None else n_rows
    X = rng.normal(size=(n_rows, d)) + (np.arange(d) if shift else 0.0)
    rows = None if n_rows == n else rng.integers(0, n_rows, n)
    Xo = X if rows is None else X[rows]
    true = np.r_[1.5, -1.0, np.zeros(max(d - 2, 0))][:d]
    m = expit(Xo @ true - Xo.mean(axis=0) @ true + 0.3 * rng.normal(size=n))
    m = np.clip(m + 0.2 * rng.normal(size=n), 0, 1)
    s = rng.uniform(0.2, 2.0, n)
    groups = rng.integers(0, G, n) if G > 1 else None
    offset = 0.3 * rng.normal(size=n)
    return dict(X=X, target=m, weight=s, offset=offset, rows=rows, intercept_groups=groups)


def lbfgs_split(prob, lam, penalize, G):
    """The same problem solved by L-BFGS-B with beta = pos - neg, pos, neg >= 0."""
    X, m, s, off = prob["X"], prob["target"], prob["weight"], prob["offset"]
    Xo = X if prob["rows"] is None else X[prob["rows"]]
    g = prob["intercept_groups"] if prob["intercept_groups"] is not None else np.zeros(len(m),
                                                                                      int)
    d = X.shape[1]
    pen = np.asarray(penalize)
    P = int(pen.sum())

    def unpack(z):
        b, free, pos, neg = z[:G], z[G:G + d - P], z[G + d - P:G + d], z[G + d:]
        beta = np.zeros(d)
        beta[~pen] = free
        beta[pen] = pos - neg
        return b, beta, pos, neg

    def f(z):
        b, beta, pos, neg = unpack(z)
        u = off + b[g] + Xo @ beta
        r = s * (m - expit(u))
        gb, gbeta = np.bincount(g, r, G), Xo.T @ r
        val = -(s @ (m * u + log_expit(-u))) + lam * (pos.sum() + neg.sum())
        return val, np.concatenate([-gb, -gbeta[~pen], -gbeta[pen] + lam, gbeta[pen] + lam])

    z0 = np.zeros(G + d + P)
    res = minimize(f, z0, jac=True, method="L-BFGS-B",
                   bounds=[(None, None)] * (G + d - P) + [(0, None)] * (2 * P),
                   options=dict(maxiter=20000, ftol=1e-15, gtol=1e-10))
    b, beta, _, _ = unpack(res.x)
    return b, beta, -res.fun


CASES = [
    dict(n=300, d=6, G=1, pen=[True] * 6),
    dict(n=400, d=5, G=3, n_rows=120, pen=[True, True, False, True, True]),
    dict(n=250, d=8, G=1, pen=[False, True, True, True, True, True, True, True]),
]


# -- optimality --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("lam", [0.5, 5.0, 30.0])
def test_kkt_holds_and_equals_lbfgs(case, lam):
    c = CASES[case]
    prob = random_problem(case, n=c["n"], d=c["d"], n_rows=c.get("n_rows"), G=c["G"])
    pen = np.array(c["pen"])
    fit = fit_l1_logistic(**prob, lam=lam, penalize=pen, tol=1e-12)
    assert fit.converged
    total = prob["weight"].sum()
    viol = kkt_violation(**prob, lam=lam, penalize=pen, coef=fit.coef, intercept=fit.intercept)
    assert viol == pytest.approx(fit.kkt)
    assert viol <= 1e-10 * total
    # the KKT conditions written out by hand from the gradient
    gb, gbeta = l1_logistic_gradient(**prob, coef=fit.coef, intercept=fit.intercept)
    assert np.abs(gb).max() < 1e-8
    zero = fit.coef == 0
    assert np.all(np.abs(gbeta[pen & zero]) <= lam + 1e-8)
    nz = pen & ~zero
    np.testing.assert_allclose(gbeta[nz], lam * np.sign(fit.coef[nz]), atol=1e-8)
    np.testing.assert_allclose(gbeta[~pen], 0.0, atol=1e-8)
    # the same optimum as a general-purpose solver on the split formulation
    b, beta, obj = lbfgs_split(prob, lam, pen, c["G"])
    assert fit.objective >= obj - 1e-9 * abs(obj)
    np.testing.assert_allclose(fit.coef, beta, atol=2e-4)
    np.testing.assert_allclose(np.atleast_1d(fit.intercept), b, atol=2e-4)
    assert fit.objective == pytest.approx(
        l1_logistic_objective(**prob, lam=lam, penalize=pen, coef=fit.coef,
                              intercept=fit.intercept), rel=1e-14)


def test_lambda_zero_equals_unpenalised_newton():
    prob = random_problem(7, n=500, d=4)
    fit = fit_l1_logistic(prob["X"], prob["target"], prob["weight"], lam=0.0, tol=1e-13)
    ref = fit_weighted_logistic(prob["X"], prob["target"], prob["weight"], l2=0.0)
    np.testing.assert_allclose(fit.coef, ref.coef, atol=1e-9)
    assert fit.intercept == pytest.approx(ref.intercept, abs=1e-9)
    assert fit.objective == pytest.approx(ref.objective, rel=1e-12)
    assert np.all(fit.coef != 0)


def test_lambda_max_formula_and_all_zero_beyond_it():
    prob = random_problem(3, n=400, d=6)
    X, m, s = prob["X"], prob["target"], prob["weight"]
    # one intercept, no offset: b = logit(m_bar), lambda_max = max_j |sum_o s_o (m_o - m_bar) x_oj|
    m_bar = s @ m / s.sum()
    by_hand = np.abs(X.T @ (s * (m - m_bar))).max()
    lmax = l1_logistic_lambda_max(X, m, s)
    assert lmax == pytest.approx(by_hand, rel=1e-9)
    above = fit_l1_logistic(X, m, s, lam=lmax * (1 + 1e-6), tol=1e-12)
    assert np.all(above.coef == 0)
    assert above.intercept == pytest.approx(np.log(m_bar / (1 - m_bar)), abs=1e-9)
    below = fit_l1_logistic(X, m, s, lam=lmax * 0.95, tol=1e-12)
    assert np.count_nonzero(below.coef) >= 1
    # with offsets, groups and an unpenalised column: the fitted unpenalised part decides
    p2 = random_problem(4, n=300, d=5, G=2)
    pen = np.array([False, True, True, True, True])
    lmax2 = l1_logistic_lambda_max(**p2, penalize=pen)
    f_above = fit_l1_logistic(**p2, lam=lmax2 * (1 + 1e-6), penalize=pen, tol=1e-12)
    assert np.all(f_above.coef[pen] == 0) and f_above.coef[0] != 0
    f_below = fit_l1_logistic(**p2, lam=lmax2 * 0.95, penalize=pen, tol=1e-12)
    assert np.count_nonzero(f_below.coef[pen]) >= 1


def test_huge_penalty_and_path_monotone_sparsity():
    prob = random_problem(5, n=300, d=8)
    lmax = l1_logistic_lambda_max(prob["X"], prob["target"], prob["weight"],
                                  offset=prob["offset"])
    nnz, coef, icpt = [], None, None
    for lam in lmax * np.geomspace(2.0, 0.01, 12):   # warm starts down the path
        fit = fit_l1_logistic(prob["X"], prob["target"], prob["weight"], lam=lam,
                              offset=prob["offset"], coef_init=coef, intercept_init=icpt,
                              tol=1e-11)
        assert fit.converged
        coef, icpt = fit.coef, fit.intercept
        nnz.append(np.count_nonzero(coef))
    assert nnz[0] == nnz[1] == 0 and nnz[-1] == 8
    assert nnz[-1] >= nnz[len(nnz) // 2] >= nnz[1]


# -- warm starts and monotonicity ----------------------------------------------------------------
def test_never_worse_than_start_and_warm_start():
    prob = random_problem(11, n=300, d=6, G=2)
    rng = np.random.default_rng(0)
    coef0, icpt0 = rng.normal(size=6), rng.normal(size=2)
    start = l1_logistic_objective(**prob, lam=3.0, coef=coef0, intercept=icpt0)
    objs = []
    for it in range(0, 8):
        fit = fit_l1_logistic(**prob, lam=3.0, coef_init=coef0, intercept_init=icpt0,
                              max_iter=it, tol=1e-12)
        objs.append(fit.objective)
        assert fit.n_iter <= it
    assert objs[0] == pytest.approx(start, rel=1e-12)
    assert np.all(np.diff(objs) >= -1e-9 * abs(start))
    best = fit_l1_logistic(**prob, lam=3.0, tol=1e-12)
    again = fit_l1_logistic(**prob, lam=3.0, coef_init=best.coef, intercept_init=best.intercept,
                            tol=1e-10)
    assert again.n_iter == 0 and again.converged
    np.testing.assert_array_equal(again.coef, best.coef)


# -- equivalent formulations ---------------------------------------------------------------------
def test_rows_groups_and_weights_are_equivalent_formulations():
    prob = random_problem(13, n=360, d=4, n_rows=90, G=3)
    fit = fit_l1_logistic(**prob, lam=2.0, tol=1e-12)
    # rows: the same as repeating the feature rows
    expanded = dict(prob, X=prob["X"][prob["rows"]], rows=None)
    fit2 = fit_l1_logistic(**expanded, lam=2.0, tol=1e-12)
    np.testing.assert_allclose(fit.coef, fit2.coef, atol=1e-8)
    np.testing.assert_allclose(fit.intercept, fit2.intercept, atol=1e-8)
    # group intercepts: the same as unpenalised one-hot columns without an intercept
    onehot = np.eye(3)[prob["intercept_groups"]]
    fit3 = fit_l1_logistic(np.hstack([onehot, expanded["X"]]), prob["target"], prob["weight"],
                           lam=2.0, offset=prob["offset"], fit_intercept=False,
                           penalize=np.r_[[False] * 3, [True] * 4], tol=1e-12)
    np.testing.assert_allclose(fit3.coef[3:], fit.coef, atol=1e-8)
    np.testing.assert_allclose(fit3.coef[:3], fit.intercept, atol=1e-8)
    assert fit3.intercept == 0.0
    # a weight of 2 is the same as the observation twice; soft target m = 2 rows weighted m, 1-m
    p = random_problem(14, n=200, d=3)
    X, m, s = p["X"], p["target"], p["weight"]
    a = fit_l1_logistic(X, m, 2 * s, lam=1.0, tol=1e-12)
    b = fit_l1_logistic(np.vstack([X, X]), np.r_[m, m], np.r_[s, s], lam=1.0, tol=1e-12)
    c = fit_l1_logistic(np.vstack([X, X]), np.r_[np.ones(200), np.zeros(200)],
                        np.r_[2 * s * m, 2 * s * (1 - m)], lam=1.0, tol=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-8)
    np.testing.assert_allclose(a.coef, c.coef, atol=1e-8)


def test_features_with_large_means_and_correlations_converge():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(1000, 1))
    X = 100.0 + np.hstack([z + 0.01 * rng.normal(size=(1000, 1)) for _ in range(4)])
    y = (rng.random(1000) < expit(2 * z[:, 0])).astype(float)
    fit = fit_l1_logistic(X, y, lam=1.0, tol=1e-10)
    assert fit.converged and fit.kkt <= 1e-10 * 1000


def test_separable_without_penalty_stops_at_max_iter_quietly():
    X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_l1_logistic(X, y, lam=0.0, max_iter=30, tol=0.0)
    assert not fit.converged and np.isfinite(fit.coef).all() and fit.coef[0] > 5
    # any penalty makes the solution finite and unique
    pen = fit_l1_logistic(X, y, lam=0.5, tol=1e-12)
    assert pen.converged and 0 < pen.coef[0] < 20


def test_no_intercept_and_empty_group():
    prob = random_problem(21, n=200, d=3, shift=False)
    fit = fit_l1_logistic(prob["X"], prob["target"], lam=1.0, fit_intercept=False, tol=1e-12)
    assert fit.intercept == 0.0 and fit.converged
    assert kkt_violation(prob["X"], prob["target"], lam=1.0, coef=fit.coef,
                         fit_intercept=False) < 1e-8
    # group 2 of 3 has no observation: its intercept stays where it started
    g = np.random.default_rng(0).integers(0, 2, 200)
    fit = fit_l1_logistic(prob["X"], prob["target"], lam=1.0, intercept_groups=g,
                          n_intercepts=3, intercept_init=[0.0, 0.0, 0.7], tol=1e-12)
    assert fit.converged and fit.intercept[2] == pytest.approx(0.7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), lam=st.floats(0.01, 50.0), d=st.integers(1, 6),
       G=st.integers(1, 3))
def test_property_kkt_and_no_better_point_nearby(seed, lam, d, G):
    prob = random_problem(seed, n=80, d=d, G=G)
    fit = fit_l1_logistic(**prob, lam=lam, tol=1e-11)
    assert fit.converged
    assert fit.kkt <= 1e-11 * prob["weight"].sum() * 10
    rng = np.random.default_rng(seed)
    for _ in range(5):   # concave: no small move improves the objective
        dc, di = 1e-4 * rng.normal(size=d), 1e-4 * rng.normal(size=G)
        other = l1_logistic_objective(**prob, lam=lam, coef=fit.coef + dc,
                                      intercept=np.atleast_1d(fit.intercept) + di)
        assert other <= fit.objective + 1e-9


# -- the curvature (Hessian) blocks, against a plain reference ----------------------------------
CURVATURE_CASES = {
    "no intercept": dict(n=200, d=7, G=0),
    "one intercept, zero weights": dict(n=300, d=9, G=1, zero_weights=True),
    "groups, shared rows, empty groups": dict(n=500, n_rows=120, d=6, G=9, empty=[2, 5]),
    "one observation per group": dict(n=150, d=5, G=170, one_each=True),
    "wide": dict(n=60, d=140, G=3, zero_weights=True),
}


@pytest.mark.parametrize("name", list(CURVATURE_CASES))
def test_curvature_equals_reference_hessian(name):
    from crowdlearn._solvers.l1_logistic import _check_problem, _Curvature
    spec = CURVATURE_CASES[name]
    rng = np.random.default_rng(len(name))
    n, d, G = spec["n"], spec["d"], spec["G"]
    n_rows = spec.get("n_rows", n)
    X = rng.normal(size=(n_rows, d)) * rng.uniform(0.2, 5.0, d) + rng.normal(0, 3, d)
    rows = None if n_rows == n else rng.integers(0, n_rows, n)
    if spec.get("one_each"):
        groups = rng.permutation(G)[:n]
    elif G > 1:
        groups = rng.integers(0, G, n)
        for e in spec.get("empty", []):
            groups[groups == e] = (e + 1) % G
    else:
        groups = None
    weight = rng.uniform(0.0, 2.0, n)
    if spec.get("zero_weights"):
        weight[rng.random(n) < 0.3] = 0.0
    if G > 1:
        weight[groups == groups[0]] = 0.0      # a group with weight zero
    prob = _check_problem(X, rng.random(n), weight, 1.0, None, None, G > 0, groups,
                          G if G > 1 else None, rows)
    Xc = X - X.mean(axis=0)
    u = rng.normal(size=n)
    H = _Curvature(prob, Xc, Xc * Xc, u)
    # the reference: Z' diag(w) Z with Z = [one-hot intercept group | centred features]
    w = weight * expit(u) * expit(-u)
    Xo = Xc if rows is None else Xc[rows]
    onehot = (np.eye(G)[groups] if G > 1 else np.ones((n, G)))
    Z = np.hstack([onehot, Xo])
    ref = Z.T @ (w[:, None] * Z)
    scale = np.abs(ref).max()

    def close(got, want):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * scale)

    close(H.diag, np.diagonal(ref))            # (with a ridge of 1e-12 of the largest)
    close(H.D, np.diagonal(ref)[:G])
    close(H.Bt, ref[:G, G:])
    if G > 1:
        np.testing.assert_array_equal(ref[:G, :G], np.diag(np.diagonal(ref)[:G]))  # diagonal
    # columns of the feature block: one at a time, a block by one product, all by syrk
    H.column(3)
    H.columns(np.array([0, 1, 3, 4]))
    assert H.have.sum() == 4
    close(H.C[[0, 1, 3, 4]], ref[G:, G:][[0, 1, 3, 4]])
    H.columns(np.arange(d))
    assert H.have.all()
    close(H.C, ref[G:, G:])
    np.testing.assert_array_equal(np.diagonal(H.C), H.diag[G:])


def test_coordinate_descent_solves_the_penalised_quadratic():
    """The model maximised by each proximal Newton step: its KKT conditions hold at the
    result, with many intercepts (vectorised sweep, Schur-complement solve)."""
    from crowdlearn._solvers.l1_logistic import (_check_problem, _coordinate_descent, _Curvature,
                                         _violation)
    rng = np.random.default_rng(5)
    n, d, G = 400, 12, 60
    X = rng.normal(size=(n, d))
    groups = rng.integers(0, G + 1, n)
    groups[groups == G] = 7                    # some group sizes vary
    prob = _check_problem(X, rng.random(n), rng.uniform(0, 2, n), 20.0, None, None, True,
                          groups, G, None)
    Xc = X - X.mean(axis=0)
    H = _Curvature(prob, Xc, Xc * Xc, rng.normal(size=n))
    lam = np.r_[np.zeros(G), np.full(d, 20.0)]
    lam[G + 2] = 0.0                           # an unpenalised feature
    grad = rng.normal(scale=10.0, size=G + d)
    theta = np.r_[rng.normal(size=G), rng.normal(size=d) * (rng.random(d) < 0.5)]
    v = _coordinate_descent(H, grad, theta, lam, tol=1e-9)
    H.columns(np.arange(d))
    full = np.zeros((G + d, G + d))
    full[:G, :G] = np.diag(H.D)
    full[:G, G:] = H.Bt
    full[G:, :G] = H.Bt.T
    full[G:, G:] = H.C
    c = grad - full @ (v - theta)              # the model's gradient at v
    assert _violation(c, v, lam).max() <= 1e-9
    assert 0 < np.count_nonzero(v[G:]) < d     # the penalty bites, not everywhere


# -- bad input -----------------------------------------------------------------------------------
def test_bad_inputs():
    X = np.zeros((4, 2))
    y = np.array([0.0, 1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="2-dimensional"):
        fit_l1_logistic(np.zeros(4), y, lam=1.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        fit_l1_logistic(np.array([[np.nan, 0]] * 4), y, lam=1.0)
    with pytest.raises(ValueError, match=r"target must have shape \(4,\)"):
        fit_l1_logistic(X, y[:3], lam=1.0)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        fit_l1_logistic(X, y + 0.5, lam=1.0)
    with pytest.raises(ValueError, match="weight must be non-negative"):
        fit_l1_logistic(X, y, -np.ones(4), lam=1.0)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        fit_l1_logistic(X, y, lam=-1.0)
    with pytest.raises(ValueError, match="penalize must be a boolean array"):
        fit_l1_logistic(X, y, lam=1.0, penalize=[1, 0])
    with pytest.raises(ValueError, match="intercept_groups must lie"):
        fit_l1_logistic(X, y, lam=1.0, intercept_groups=[0, 1, 2, 3], n_intercepts=2)
    with pytest.raises(ValueError, match="rows must index"):
        fit_l1_logistic(X, y, lam=1.0, rows=[0, 1, 2, 9])
    with pytest.raises(ValueError, match="coef_init must have shape"):
        fit_l1_logistic(X, y, lam=1.0, coef_init=[0.0])
    with pytest.raises(ValueError, match="offset contains NaN"):
        fit_l1_logistic(X, y, lam=1.0, offset=[0, np.nan, 0, 0])
    with pytest.raises(ValueError, match="no observations"):
        fit_l1_logistic(np.zeros((0, 2)), [], lam=1.0)


PREPARED_CASES = {
    "one intercept": dict(G=1),
    "shared rows, groups": dict(n_rows=80, G=4),
    "groups, one row each": dict(G=5),
    "no intercept": dict(G=0),
}


@pytest.mark.parametrize("name", list(PREPARED_CASES))
def test_prepared_problem_gives_what_fit_l1_logistic_gives(name):
    """Checked and centred once, fitted for target after target (as the M-steps of an EM
    are): the same fits as fit_l1_logistic, the point alone included, and the same errors."""
    from crowdlearn._solvers.l1_logistic import _PreparedProblem
    spec = PREPARED_CASES[name]
    G = spec["G"]
    prob = random_problem(11, n=200, d=5, n_rows=spec.get("n_rows"), G=max(G, 1))
    fixed = dict(offset=prob["offset"], rows=prob["rows"], fit_intercept=G > 0,
                 intercept_groups=prob["intercept_groups"], penalize=np.r_[True, False, True,
                                                                          True, True])
    prepared = _PreparedProblem(prob["X"], prob["weight"], **fixed)
    rng = np.random.default_rng(3)
    coef = np.zeros(5)
    intercept = None
    for step, lam in enumerate([5.0, 2.0, 0.5]):
        target = np.clip(prob["target"] + 0.1 * rng.normal(size=200), 0.0, 1.0)
        for max_iter in (1, 100):
            kw = dict(lam=lam, coef_init=coef, intercept_init=intercept, tol=1e-9,
                      max_iter=max_iter)
            want = fit_l1_logistic(prob["X"], target, prob["weight"], **fixed, **kw)
            got = prepared.fit(target, **kw)
            point = prepared.point(target, **kw)
            for fit in (got, point):
                np.testing.assert_allclose(fit[0], want.coef, rtol=1e-13, atol=1e-13)
                np.testing.assert_allclose(fit[1], want.intercept, rtol=1e-13, atol=1e-13)
            assert (got.n_iter, got.converged) == (want.n_iter, want.converged)
            assert got.objective == pytest.approx(want.objective, rel=1e-13)
            assert got.kkt == pytest.approx(want.kkt, rel=1e-9, abs=1e-12)
        coef, intercept = want.coef, (want.intercept if G else None)  # a warm start next
    with pytest.raises(ValueError, match=r"target must have shape \(200,\)"):
        prepared.fit(prob["target"][:5], lam=1.0)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        prepared.point(prob["target"] + 1.0, lam=1.0)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        prepared.fit(prob["target"], lam=-1.0)
    with pytest.raises(ValueError, match="weight must be non-negative"):
        _PreparedProblem(prob["X"], -prob["weight"], **fixed)


def test_group_pattern_gives_the_same_curvature():
    """The CSR pattern of the group weights, kept from one curvature to the next, gives the
    curvature built afresh; labels sharing both group and row have no pattern (summed)."""
    from crowdlearn._solvers.l1_logistic import _check_problem, _Curvature, _group_pattern
    rng = np.random.default_rng(4)
    n_rows, G = 50, 3
    rows = np.repeat(np.arange(n_rows), G)
    groups = np.tile(np.arange(G), n_rows)
    order = rng.permutation(rows.size)
    X = rng.normal(size=(n_rows, 4))
    prob = _check_problem(X, rng.random(rows.size), rng.uniform(0, 2, rows.size), 1.0, None,
                          None, True, groups[order], G, rows[order])
    pattern = _group_pattern(prob)
    Xc = X - X.mean(axis=0)
    for _ in range(2):  # the pattern's matrix is overwritten: used twice
        u = rng.normal(size=rows.size)
        fresh = _Curvature(prob, Xc, Xc * Xc, u)
        kept = _Curvature(prob, Xc, Xc * Xc, u, pattern)
        np.testing.assert_allclose(kept.Bt, fresh.Bt, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(kept.diag, fresh.diag, rtol=1e-14)
    twice = _check_problem(X, np.full(4, 0.5), None, 1.0, None, None, True, [0, 1, 1, 2], G,
                           [0, 1, 1, 2])
    assert _group_pattern(twice) is None
