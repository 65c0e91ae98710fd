"""What the check cells compare a student's answers with, computed by the package in the
grader's process (a2, a4, a5). Nothing here takes a value from a student's object: the checks
pass these functions the data the student returned (arrays, numbers, SymPy expressions).

a2 asks for the Dawid--Skene steps of experts in teams that share one confusion matrix, with
repeated labels given as counts ``counts[i, r, p]`` (how often expert ``r`` gave item ``i``
the label ``p``). Its checks compare the student's functions with the package's steps on the
same labels read as triples, each label repeated as often as it was given and each team in the
place of an expert. That reading is part of what the student derives, so it lives here, not
in the notebook; the grader does not put it in the sandbox while an assignment is graded.

a4 asks for the annotators' gradient of a crowd as SymPy matrices in named symbols (so that
only a derivation produces it, not finite differences): :func:`a4_gradients_of` puts numbers
into them here and the checks compare the values with the grader's central differences of the
objective (:func:`a4_objective`), neither of which a released notebook contains.

a5 asks for the fitted classifiers' parameters, not the models: :func:`a5_reference_fits` fits
the penalty path here and :func:`a5_predict` predicts from parameters. The grader does not put this
module in the sandbox.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["pooled_crowd", "team_em_states", "team_e_step", "team_m_step", "a4_log_p_label",
           "a4_objective", "central_differences", "a4_fd_W", "a4_fd_G", "a4_random_problem",
           "a4_gradient_values", "a4_gradients_of", "a5_reference_models", "a5_reference_fits",
           "a5_predict"]


def pooled_crowd(counts, team):
    """``counts[i, r, p]`` as :class:`~crowdlearn.CrowdLabels` whose expert of each label is
    ``team[r]`` (a label given ``k`` times is ``k`` rows)."""
    from crowdlearn import from_triples

    counts, team = np.asarray(counts), np.asarray(team)
    if counts.ndim != 3 or team.shape != (counts.shape[1],):
        raise ValueError(f"counts must be (n_items, n_experts, K) and team (n_experts,), got "
                         f"{counts.shape} and {team.shape}")
    i, r, p = np.nonzero(counts)
    times = counts[i, r, p]
    return from_triples(np.repeat(i, times), np.repeat(team[r], times), np.repeat(p, times),
                        n_items=counts.shape[0], n_experts=int(team.max()) + 1,
                        n_classes=counts.shape[2])


def team_em_states(counts, team, alpha, n_states):
    """``(params, posterior)`` after each of the first ``n_states`` E-steps of
    :class:`~crowdlearn.DawidSkene` (smoothing ``alpha``) on the pooled crowd."""
    from crowdlearn.aggregation.dawid_skene import DawidSkene

    states = []
    DawidSkene(n_classes=np.shape(counts)[2], alpha=alpha,
               callback=lambda s: states.append((s.params, s.posterior.copy()))
               or len(states) >= n_states).fit(pooled_crowd(counts, team))
    return states


def team_m_step(Q, counts, team):
    """The package's M-step (no smoothing) on the pooled labels: ``(class_prior,
    confusion)``, one confusion matrix per team."""
    from crowdlearn.aggregation import dawid_skene as ds

    params = ds.m_step(*ds.expected_counts(pooled_crowd(counts, team), Q))
    return params.class_prior, params.confusion


def team_e_step(class_prior, confusion, counts, team):
    """The package's E-step on the pooled labels: the posteriors ``Q[i, n]``."""
    from crowdlearn.aggregation import dawid_skene as ds

    return ds.e_step(pooled_crowd(counts, team), (class_prior, confusion))[0]


# -- a4: the annotators' gradient for a crowd, given as SymPy expressions ------------------------
# a4's Task 3 asks for the gradient as SymPy matrices in the symbols mu_i, x_i_j, w_r_j, eta_l_n
# and lambda (eta_l_n standing for sigma(b_ln)), so that only a derivation produces it; the
# checks put numbers into the student's expressions here and compare them with central
# differences of the objective, computed here too.

_A4_SYMBOL = re.compile(r"(mu|x|w|eta)((?:_\d+)+)\Z")


def a4_log_p_label(W, G, X, item, annotator, label):
    """``log P(y_l | x^(i_l), truth n)`` of a4's model, column ``n`` for ``n = 0, 1``."""
    from scipy.special import log_expit

    b = np.sum(X[item] * W[annotator], axis=1)[:, None] - G[annotator]  # b[l, n]
    right = label[:, None] == np.arange(2)  # the label says n
    return np.where(right, log_expit(b), log_expit(-b))


def a4_objective(W, G, q_0, q_1, X, item, annotator, label, l2):
    """The annotators' part of a4's M-step objective, with the weights ``q_0``, ``q_1`` of
    each label's truth-0 and truth-1 terms (``1 - mu[item]`` and ``mu[item]``)."""
    log_p = a4_log_p_label(W, G, X, item, annotator, label)
    return float(np.sum(q_0 * log_p[:, 0] + q_1 * log_p[:, 1]) - l2 / 2 * np.sum(W**2))


def central_differences(f, v, h=1e-6):
    """The grader's central differences of ``f`` at the vector ``v``."""
    return np.array([(f(v + h * e) - f(v - h * e)) / (2 * h) for e in np.eye(v.size)])


def a4_fd_W(W, G, q_0, q_1, data, l2):
    """Central differences of :func:`a4_objective` with respect to ``W``."""
    def f(v):
        return a4_objective(v.reshape(W.shape), G, q_0, q_1, *data, l2)

    return central_differences(f, W.ravel()).reshape(W.shape)


def a4_fd_G(W, G, q_0, q_1, data, l2):
    """Central differences of :func:`a4_objective` with respect to ``G``."""
    def f(v):
        return a4_objective(W, v.reshape(G.shape), q_0, q_1, *data, l2)

    return central_differences(f, G.ravel()).reshape(G.shape)


def a4_random_problem(rng, n_items=16):
    """``W, G, mu, (X, item, annotator, label), l2`` on a simulated crowd."""
    from crowdlearn.simulate.annotators import simulate_logistic_annotators

    k, R = int(rng.integers(1, 4)), int(rng.integers(2, 5))
    sim = simulate_logistic_annotators(n_items, rng.normal(size=k), 0.2,
                                       rng.normal(size=(R, k)), rng.normal(size=R),
                                       missing=0.3, random_state=rng)
    data = (sim.X, sim.labels.item, sim.labels.expert, sim.labels.label)
    W, G = rng.normal(size=(R, k)), rng.normal(size=(R, 2))
    return W, G, rng.uniform(0.02, 0.98, size=n_items), data, float(rng.uniform(0.5, 2))


def _a4_rows(matrix, name):
    """The student's matrix as a list of rows of SymPy expressions (an AssertionError if it
    is not one)."""
    from crowdlearn_checks import checks

    rows = matrix if isinstance(matrix, list) else None
    if rows is None:
        try:
            rows = matrix.tolist()
        except Exception:
            rows = None
    if not (isinstance(rows, list) and rows and all(isinstance(r, list) for r in rows)
            and len({len(r) for r in rows}) == 1):
        raise AssertionError(f"{name} must be a SymPy matrix (sp.Matrix, sp.zeros), got a "
                             f"{type(matrix).__name__}")
    return [[checks.expression(e) for e in row] for row in rows]


def a4_gradient_values(matrix, point: dict, l2: float, name: str) -> np.ndarray:
    """The student's matrix of expressions ``name`` with the numbers of ``point`` (arrays
    ``mu``, ``x``, ``w``, ``eta`` indexed by the symbols' subscripts) and ``lambda = l2``."""
    import sympy as sp

    rows = _a4_rows(matrix, name)
    out = np.empty((len(rows), len(rows[0])))
    for a, row in enumerate(rows):
        for b, expr in enumerate(row):
            functions = expr.atoms(sp.Function)
            if functions:
                raise AssertionError(
                    f"{name}[{a}, {b}] contains {sorted(map(str, functions))[0]}: write the "
                    "gradient with eta_sym(l, n) for sigma(b_ln), without sigma, exp or log")
            values = {}
            for s in expr.free_symbols:
                values[s] = _a4_symbol_value(s, point, l2, f"{name}[{a}, {b}]")
            out[a, b] = float(expr.xreplace(values))
    return out


def _a4_symbol_value(symbol, point, l2, where):
    if str(symbol) == "lambda":
        return l2
    match = _A4_SYMBOL.match(str(symbol))
    if match is not None:
        array = point[match.group(1)]
        index = tuple(int(t) for t in match.group(2)[1:].split("_"))
        if len(index) == array.ndim and all(0 <= t < n for t, n in zip(index, array.shape)):
            return float(array[index])
    raise AssertionError(
        f"{where} uses the symbol {symbol}, which is not one of this crowd's: use mu_sym(i), "
        "x_sym(i, j), w_sym(r, j), eta_sym(l, n) (l numbers the labels) and lam")


def a4_gradients_of(annotator_gradients, W, G, mu, data, l2):
    """The student's ``annotator_gradients(item, annotator, label, R, k)`` for this crowd,
    evaluated at ``W, G, mu, l2``: ``(g_W, g_G)`` as float arrays (the shapes they gave)."""
    from scipy.special import expit

    X, item, annotator, label = data
    out = annotator_gradients(np.copy(item), np.copy(annotator), np.copy(label),
                              int(W.shape[0]), int(W.shape[1]))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise AssertionError("annotator_gradients must return a tuple (g_W, g_G) of SymPy "
                             f"matrices, got a {type(out).__name__}")
    b = np.sum(X[item] * W[annotator], axis=1)[:, None] - G[annotator]
    point = {"mu": np.asarray(mu), "x": np.asarray(X), "w": np.asarray(W), "eta": expit(b)}
    return (a4_gradient_values(out[0], point, l2, "g_W"),
            a4_gradient_values(out[1], point, l2, "g_G"))


# -- a5: the penalty path, fitted by the package -------------------------------------------------
_A5_MODELS: dict = {}


def a5_reference_models(lam_grid, model_params, Y, X) -> list:
    """``SparseExpertsEM(lam=lam, **model_params).fit(Y, X)`` for each ``lam`` of
    ``lam_grid``, fitted here (and kept for the next check on the same data)."""
    import hashlib
    import warnings

    from crowdlearn.features.sparse_experts import SparseExpertsEM

    key = hashlib.sha256(b"".join(np.ascontiguousarray(a, dtype=float).tobytes() for a in (
        lam_grid, Y, X)) + repr(sorted(model_params.items())).encode()).hexdigest()
    if key not in _A5_MODELS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _A5_MODELS[key] = [SparseExpertsEM(lam=float(lam), **model_params).fit(Y, X)
                               for lam in lam_grid]
    return list(_A5_MODELS[key])


def a5_reference_fits(lam_grid, model_params, Y, X):
    """``(coefs, intercepts)`` of :func:`a5_reference_models`: one row of slopes and one
    intercept per ``lam``."""
    models = a5_reference_models(lam_grid, model_params, Y, X)
    return (np.array([m.coef_ for m in models]),
            np.array([float(m.intercept_) for m in models]))


def a5_predict(coefs, intercepts, X):
    """The labels the fitted classifiers give the items ``X`` from their features alone, one
    row per model (as ``SparseExpertsEM.predict(X=X)``: ties go to class 1)."""
    from scipy.special import expit

    z = np.asarray(X, dtype=float) @ np.asarray(coefs, dtype=float).T + np.asarray(
        intercepts, dtype=float)
    return (expit(z) >= 0.5).T.astype(np.intp)
