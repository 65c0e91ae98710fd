"""The classroom loop of book/assignments/, end to end, with nbgrader.

* every assignment is a MyST notebook whose nbgrader cell metadata survives jupytext;
* the released (student) version has no solution and no hidden test, keeps every visible check,
  and scores nothing as released;
* the instructor version scores full marks;
* a submission with one typical mistake -- made from the instructor's solutions with one solution
  region replaced, pasted into the released notebook as a student would -- loses exactly the
  points of the checks that should catch it, and the feedback names the mistake. Because the
  submissions are built on the released notebook, the hidden tests that catch some mistakes can
  only come from the gradebook: this also tests that nbgrader restores them.

Everything is graded in one run of ``python -m crowdlearn_grader grade`` (module-scoped
fixture). Select these tests with ``pytest grader/tests/test_assignments.py`` or ``-k assignment``;
they are also marked ``notebook``.
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import NamedTuple

import pytest

from support import BOOK, released_assignments

nbformat = pytest.importorskip("nbformat")
jupytext = pytest.importorskip("jupytext")
pytest.importorskip("nbgrader")

import crowdlearn_grader as classroom  # noqa: E402

pytestmark = pytest.mark.notebook

SOURCE = BOOK / "assignments"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"   # what nbgrader leaves of a manually graded answer cell
NBGRADER_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution", "task"}


class Mistake(NamedTuple):
    name: str        # the submission's folder
    assignment: str
    cell: str        # grade_id of the solution cell whose region is replaced
    code: str        # the mistaken code
    lost: frozenset  # grade_ids of exactly the checks that must lose their points
    feedback: str    # a phrase the feedback of the first lost check must contain


A4_GRADIENT = """
        g_W = sp.Matrix(R, k, lambda r, j: -lam * w_sym(r, j))
        g_G = sp.zeros(R, 2)
        for l, (i, r, y) in enumerate(zip(item, annotator, label)):
            rho_0 = (1 - mu_sym(i)) * (1 - int(y) - eta_sym(l, 0))
            rho_1 = mu_sym(i) * (int(y) - eta_sym(l, 1))
            for j in range(k):
                g_W[r, j] += (rho_0 + rho_1) * x_sym(i, j)
            g_G[r, 0] -= rho_0
            g_G[r, 1] -= rho_1
        return g_W, g_G
        """


# a3's shrunk_m_step, right (the assignment's solution, its pooled centre in one line)
A3_SHRUNK = """
        counts = np.zeros((n_experts, K, K))
        for r in range(n_experts):
            for p in range(K):
                counts[r, :, p] = Q[Y[:, r] == p].sum(axis=0)
        centre = counts.sum(axis=0) / counts.sum(axis=(0, 2))[:, None]
        class_prior = (Q.sum(axis=0) + a) / (m + K * a)
        confusion = (counts + kappa * centre) / (counts.sum(axis=2, keepdims=True) + kappa)
        """


def _edited(right: str, *edits) -> str:
    """A right answer (``A3_SHRUNK``, ``A4_GRADIENT``) with each ``(line part, mistake)`` of
    ``edits`` made: a submission that differs from the right one in those lines only."""
    code = right
    for right_part, wrong in edits:
        assert right_part in code, right_part
        code = code.replace(right_part, wrong)
    return code


MISTAKES = [
    Mistake("a1_lambda_left", "a1_naive_bayes_mle", "prior_derivation", """
        lagrangian = sum(n_y * sp.log(phi_y) for n_y, phi_y in zip(n, phi)) + lam * (1 - sum(phi))
        phi_hat = {p: sp.solve(sp.diff(lagrangian, p), p)[0] for p in phi}
        lam_hat = lam
        """, frozenset({"check_prior"}), "still contains lambda"),
    Mistake("a1_feature_by_m", "a1_naive_bayes_mle", "estimator", """
        n_y = W.sum(axis=0)
        s = W.T @ X
        prior = n_y / n_y.sum()
        feature_prob = s / X.shape[0]
        """, frozenset({"check_estimator_hard", "check_estimator_soft"}),
        "divide s_jy by the number of items m"),
    Mistake("a1_prior_by_m", "a1_naive_bayes_mle", "estimator", """
        n_y = W.sum(axis=0)
        s = W.T @ X
        prior = n_y / X.shape[0]
        feature_prob = s / n_y[:, None]
        """, frozenset({"check_estimator_soft"}), "divide by the total weight"),
    Mistake("a1_log_odds_sign_of_b", "a1_naive_bayes_mle", "log_odds_derivation", """
        off = [sp.log((1 - p1) / (1 - p0)) for p1, p0 in zip(phi_j1, phi_j0)]
        beta_hat = [sp.log(p1 / p0) - o for p1, p0, o in zip(phi_j1, phi_j0, off)]
        beta_0_hat = sp.log(phi_1 / (1 - phi_1)) - sum(off)
        """, frozenset({"check_log_odds_symbolic"}), "not the log-odds of an item with x = 0"),
    Mistake("a1_log_odds_without_complement", "a1_naive_bayes_mle", "log_odds_function", """
        beta = np.log(feature_prob[1] / feature_prob[0])
        beta_0 = float(np.log(class_prior[1] / class_prior[0]))
        """, frozenset({"check_log_odds"}), "you left out the factors (1 - phi_j|n)^(1 - x_j)"),
    Mistake("a1_log_odds_of_class_0", "a1_naive_bayes_mle", "log_odds_function", """
        log_on = np.log(feature_prob[0]) - np.log(feature_prob[1])
        log_off = np.log1p(-feature_prob[0]) - np.log1p(-feature_prob[1])
        beta = log_on - log_off
        beta_0 = float(np.log(class_prior[0] / class_prior[1]) + log_off.sum())
        """, frozenset({"check_log_odds"}), "class 1 is row 1 of feature_prob"),
    Mistake("a2_majority_once", "a2_dawid_skene_by_hand", "majority", """
        votes = (counts > 0).sum(axis=1).astype(float)
        Q0 = votes / votes.sum(axis=1, keepdims=True)
        """, frozenset({"check_majority", "check_one_iteration"}),
        "you counted a repeated label once"),
    Mistake("a2_all_items_denominator", "a2_dawid_skene_by_hand", "m_step", """
        class_prior = Q.sum(axis=0) / n_items
        confusion = np.zeros((n_teams, K, K))
        for r in range(counts.shape[1]):
            confusion[team[r]] += Q.T @ counts[:, r, :]
        size = np.bincount(team, minlength=n_teams)
        confusion /= size[:, None, None] * Q.sum(axis=0)[None, :, None]
        """, frozenset({"check_m_step_rows", "check_m_step_package", "check_m_step_repeats",
                        "check_m_step_teams", "check_one_iteration"}),
        "did you normalise by the weighted number of labels"),
    Mistake("a2_repeats_once", "a2_dawid_skene_by_hand", "m_step", """
        class_prior = Q.sum(axis=0) / n_items
        confusion = np.zeros((n_teams, K, K))
        for r in range(counts.shape[1]):
            confusion[team[r]] += Q.T @ (counts[:, r, :] > 0)
        confusion /= confusion.sum(axis=2, keepdims=True)
        """, frozenset({"check_m_step_repeats", "check_m_step_teams", "check_one_iteration"}),
        "you counted a repeated label once"),
    Mistake("a2_team_averaged", "a2_dawid_skene_by_hand", "m_step", """
        class_prior = Q.sum(axis=0) / n_items
        own = np.stack([Q.T @ counts[:, r, :] for r in range(counts.shape[1])])
        own /= own.sum(axis=2, keepdims=True)
        confusion = np.stack([own[team == g].mean(axis=0) for g in range(n_teams)])
        """, frozenset({"check_m_step_teams", "check_one_iteration"}),
        "you averaged the members' own confusion matrices"),
    Mistake("a2_no_prior", "a2_dawid_skene_by_hand", "e_step", """
        with np.errstate(divide="ignore"):
            log_confusion = np.log(confusion)
        log_joint = np.zeros((n_items, K))
        for r in range(n_experts):
            for p in range(K):
                given = counts[:, r, p] > 0
                log_joint[given] += np.outer(counts[given, r, p],
                                             log_confusion[team[r], :, p])
        log_joint -= log_joint.max(axis=1, keepdims=True)
        Q = np.exp(log_joint)
        Q /= Q.sum(axis=1, keepdims=True)
        """, frozenset({"check_e_step_package", "check_e_step_teams", "check_e_step_zeros",
                        "check_one_iteration"}), "ignores the class prior"),
    Mistake("a2_expert_not_team", "a2_dawid_skene_by_hand", "e_step", """
        with np.errstate(divide="ignore"):
            log_prior, log_confusion = np.log(class_prior), np.log(confusion)
        log_joint = np.tile(log_prior, (n_items, 1))
        for r in range(n_experts):
            for p in range(K):
                given = counts[:, r, p] > 0
                log_joint[given] += np.outer(counts[given, r, p], log_confusion[r, :, p])
        log_joint -= log_joint.max(axis=1, keepdims=True)
        Q = np.exp(log_joint)
        Q /= Q.sum(axis=1, keepdims=True)
        """, frozenset({"check_e_step_rows", "check_e_step_teams", "check_e_step_zeros",
                        "check_e_step_stable", "check_one_iteration"}),
        "expert r's matrix is confusion[team[r]]"),
    Mistake("a2_zero_times_log_zero", "a2_dawid_skene_by_hand", "e_step", """
        with np.errstate(divide="ignore"):
            log_prior, log_confusion = np.log(class_prior), np.log(confusion)
        log_joint = log_prior + np.einsum("irp,rnp->in", counts, log_confusion[team])
        log_joint -= log_joint.max(axis=1, keepdims=True)
        Q = np.exp(log_joint)
        Q /= Q.sum(axis=1, keepdims=True)
        """, frozenset({"check_e_step_zeros", "check_one_iteration"}), "0 * log(0)"),
    Mistake("a2_probability_space", "a2_dawid_skene_by_hand", "e_step", """
        joint = np.tile(class_prior, (n_items, 1))
        for r in range(n_experts):
            joint *= np.prod(confusion[team[r]][None] ** counts[:, r, None, :], axis=2)
        Q = joint / joint.sum(axis=1, keepdims=True)
        """, frozenset({"check_e_step_stable"}), "underflows to 0"),
    Mistake("a3_posterior_mean", "a3_smoothing_map", "map_derivation", """
        log_prior = sum((A_p + 1) * sp.log(t) for A_p, t in zip(A, theta))
        log_posterior = sum(c_p * sp.log(t) for c_p, t in zip(c, theta)) + log_prior
        lagrangian = log_posterior + lam * (1 - sum(theta))
        in_lambda = {t: sp.solve(sp.diff(lagrangian, t), t)[0] for t in theta}
        lam_hat = sp.solve(sum(in_lambda.values()) - 1, lam)[0]
        theta_map = {t: sp.simplify(e.subs(lam, lam_hat)) for t, e in in_lambda.items()}
        """, frozenset({"check_log_posterior", "check_theta_map"}), "not A_p + 1"),
    Mistake("a3_symmetric_denominator", "a3_smoothing_map", "map_derivation", """
        log_posterior = sum((c_p + A_p) * sp.log(t) for c_p, A_p, t in zip(c, A, theta))
        theta_map = {t: (c_p + A_p) / (sum(c) + N * A_p) for c_p, A_p, t in zip(c, A, theta)}
        """, frozenset({"check_theta_map"}), "every cell's own pseudo-count"),
    Mistake("a3_kappa_not_in_denominator", "a3_smoothing_map", "shrunk_m_step", _edited(
        A3_SHRUNK, ("        confusion = (counts + kappa * centre) / (counts.sum(axis=2, "
                    "keepdims=True) + kappa)",
                    "        with np.errstate(divide=\"ignore\", invalid=\"ignore\"):\n"
                    "            confusion = (counts + kappa * centre) / counts.sum(axis=2, "
                    "keepdims=True)")),
        frozenset({"check_shrunk_rows", "check_shrunk_limits", "check_shrunk_package",
                   "check_newcomer_rows", "check_newcomer_posterior"}),
        "the denominator is sum_p C[r, n, p] + kappa"),
    Mistake("a3_uniform_centre", "a3_smoothing_map", "shrunk_m_step", _edited(
        A3_SHRUNK, ("        centre = counts.sum(axis=0) / counts.sum(axis=(0, 2))[:, None]\n", ""),
        ("kappa * centre", "kappa / K")),
        frozenset({"check_shrunk_limits", "check_shrunk_package", "check_newcomer_rows"}),
        "the uniform row of the chapter's symmetric prior"),
    Mistake("a3_all_items_denominator", "a3_smoothing_map", "shrunk_m_step", _edited(
        A3_SHRUNK, ("(counts.sum(axis=2, keepdims=True) + kappa)",
                    "(Q.sum(axis=0)[None, :, None] + kappa)")),
        frozenset({"check_shrunk_rows", "check_shrunk_limits", "check_shrunk_package",
                   "check_newcomer_rows"}), "the weight of the items expert r labelled"),
    Mistake("a3_newcomer_without_prior", "a3_smoothing_map", "newcomer", """
        prior_shrunk, confusion_shrunk = shrunk_m_step(Q0, Y_new, 5.0, 1.0)
        C_newcomer = np.stack([Q0[Y_new[:, 5] == p].sum(axis=0) for p in range(3)], axis=1)
        newcomer_laplace = (C_newcomer + 1) / (C_newcomer.sum(axis=1, keepdims=True) + 3)
        p_laplace = newcomer_laplace[:, 2] / newcomer_laplace[:, 2].sum()
        p_shrunk = confusion_shrunk[5, :, 2] / confusion_shrunk[5, :, 2].sum()
        """, frozenset({"check_newcomer_posterior"}), "has no class prior"),
    Mistake("a4_term_swapped", "a4_logistic_gradients", "sympy_term", """
        given_1 = sigma(b_1) if y == 1 else 1 - sigma(b_1)
        given_0 = sigma(b_0) if y == 0 else 1 - sigma(b_0)
        return (1 - mu) * sp.log(given_1) + mu * sp.log(given_0)
        """, frozenset({"check_E_label"}), "weights the truth-1 term by 1 - mu"),
    Mistake("a4_sympy_unweighted", "a4_logistic_gradients", "sympy_gradients", """
        rho_1 = y - eta_1
        rho_0 = 1 - y - eta_0
        return {w_1: (rho_0 + rho_1) * x_1, gamma_0: -rho_0, gamma_1: -rho_1}
        """, frozenset({"check_sympy_gradients"}), "leaves out the posterior weights"),
    Mistake("a4_unweighted", "a4_logistic_gradients", "crowd_gradient", _edited(A4_GRADIENT,
        ("rho_0 = (1 - mu_sym(i)) * (1 - int(y)", "rho_0 = (1 - int(y)"),
        ("rho_1 = mu_sym(i) * (int(y)", "rho_1 = (int(y)")),
        frozenset({"check_gradient_slopes", "check_gradient_intercepts",
                   "check_gradient_crowd"}), "leaves out the posterior weights"),
    Mistake("a4_gamma_sign", "a4_logistic_gradients", "crowd_gradient", _edited(A4_GRADIENT,
        ("g_G[r, 0] -= rho_0", "g_G[r, 0] += rho_0"),
        ("g_G[r, 1] -= rho_1", "g_G[r, 1] += rho_1")),
        frozenset({"check_gradient_intercepts", "check_gradient_crowd"}), "has the wrong sign"),
    Mistake("a4_no_prior", "a4_logistic_gradients", "crowd_gradient", _edited(A4_GRADIENT,
        ("-lam * w_sym(r, j)", "0")),
        frozenset({"check_gradient_slopes", "check_gradient_crowd"}), "leaves out the prior"),
    Mistake("a4_no_rows_for_the_silent", "a4_logistic_gradients", "crowd_gradient", _edited(
        A4_GRADIENT,
        ("g_W = sp.Matrix(", "R = int(annotator.max()) + 1\n        g_W = sp.Matrix(")),
        frozenset({"check_gradient_crowd"}), "still has its rows"),
    Mistake("a4_sigma_not_eta", "a4_logistic_gradients", "crowd_gradient", _edited(A4_GRADIENT,
        ("eta_sym(l, 0)", "sigma(w_sym(r, 0) - eta_sym(l, 0))")),
        frozenset({"check_gradient_slopes", "check_gradient_intercepts",
                   "check_gradient_crowd"}), "without sigma, exp or log"),
    Mistake("a4_fd_over_h", "a4_logistic_gradients", "finite_differences", """
        return np.array([(f(v + h * e) - f(v - h * e)) / h for e in np.eye(v.size)])
        """, frozenset({"check_finite_differences"}), "twice the derivative"),
    Mistake("a5_label_weighted", "a5_choosing_penalty", "surrogate", """
        given = Y >= 0
        disagree = given & (Y != pred[:, None])
        return float(disagree.sum() / given.sum())
        """, frozenset({"check_s_hat_missing"}), "average within each item first"),
    Mistake("a5_scored_on_train", "a5_choosing_penalty", "choose", """
        models = [SparseExpertsEM(lam=lam, **model_params).fit(Y_train, X_train)
                  for lam in lam_grid]
        coefs = np.array([model.coef_ for model in models])
        intercepts = np.array([model.intercept_ for model in models])
        scores = np.array([s_hat(model.predict(X=X_train), Y_train) for model in models])
        best_lam = lam_grid[np.argmin(scores)]
        """, frozenset({"check_scores", "check_choice"}), "S-hat on the training items"),
    Mistake("a5_fitted_on_everything", "a5_choosing_penalty", "choose", """
        models = [SparseExpertsEM(lam=lam, **model_params).fit(Y, X) for lam in lam_grid]
        coefs = np.array([model.coef_ for model in models])
        intercepts = np.array([model.intercept_ for model in models])
        scores = np.array([s_hat(model.predict(X=X_test), Y_test) for model in models])
        best_lam = lam_grid[np.argmin(scores)]
        """, frozenset({"check_models", "check_scores", "check_choice", "check_risks"}),
        "fitted on all 500 items"),
    Mistake("a2_team_unweighted", "a2_dawid_skene_by_hand", "team_derivation", """
        team_objective = sum(L[i, r, p] * sp.log(M_row[p])
                             for i in range(2) for r in range(2) for p in range(3))
        M_team_hat = {M: sum(L[i, r, p] for i in range(2) for r in range(2))
                      / sum(L[i, r, s] for i in range(2) for r in range(2) for s in range(3))
                      for p, M in enumerate(M_row)}
        """, frozenset({"check_team_objective", "check_team_m_step"}),
        "without their weights"),
    Mistake("a2_team_averaged_sympy", "a2_dawid_skene_by_hand", "team_derivation", """
        team_objective = sum(q[i] * L[i, r, p] * sp.log(M_row[p])
                             for i in range(2) for r in range(2) for p in range(3))
        own = [[sum(q[i] * L[i, r, p] for i in range(2))
                / sum(q[i] * L[i, r, s] for i in range(2) for s in range(3))
                for p in range(3)] for r in range(2)]
        M_team_hat = {M: (own[0][p] + own[1][p]) / 2 for p, M in enumerate(M_row)}
        """, frozenset({"check_team_m_step"}), "averaged the two experts"),
    Mistake("a5_sympy_no_flip", "a5_choosing_penalty", "sympy_expectation", """
        disagreement = w * (1 - 2 * e) + e
        expected_disagreement = R_ + eps_
        """, frozenset({"check_expectation_symbolic"}), "they agree"),
    Mistake("a5_sympy_squared", "a5_choosing_penalty", "sympy_expectation", """
        disagreement = (w - e) ** 2
        expected_disagreement = (1 - 2 * eps_) * R_ + eps_
        """, frozenset({"check_lemma1_identity"}), "not affine in w"),
    Mistake("a5_no_flip", "a5_choosing_penalty", "expectation", """
        return risk + eps_bar
        """, frozenset({"check_expectation"}), "a classifier mistake agrees with it"),
    Mistake("a6_errors_not_spread", "a6_multilabel_em", "e_step", """
        a = accuracy[crowd.expert, crowd.target]
        log_wrong = np.log(1 - a)
        log_joint = np.tile(np.log(class_prior), (n, 1, 1))
        np.add.at(log_joint, (crowd.item, crowd.target), log_wrong[:, None])
        np.add.at(log_joint, (crowd.item, crowd.target, crowd.label), np.log(a) - log_wrong)
        top = log_joint.max(axis=2, keepdims=True)
        log_z = top + np.log(np.exp(log_joint - top).sum(axis=2, keepdims=True))
        q = np.exp(log_joint - log_z)
        log_likelihood = float(log_z.sum())
        """, frozenset({"check_e_step_posterior", "check_e_step_likelihood",
                        "check_e_step_stable", "check_em_objective", "check_em_fit"}),
        "spread over the N - 1 other classes"),
    Mistake("a6_likelihood_of_the_votes", "a6_multilabel_em", "e_step", """
        a = accuracy[crowd.expert, crowd.target]
        log_joint = np.tile(np.log(class_prior), (n, 1, 1))
        weight = np.log(a * (K - 1) / (1 - a))
        np.add.at(log_joint, (crowd.item, crowd.target, crowd.label), weight)
        top = log_joint.max(axis=2, keepdims=True)
        log_z = top + np.log(np.exp(log_joint - top).sum(axis=2, keepdims=True))
        q = np.exp(log_joint - log_z)
        log_likelihood = float(log_z.sum())
        """, frozenset({"check_e_step_likelihood", "check_e_step_stable", "check_em_objective",
                        "check_em_fit"}),
        "your log-likelihood leaves out b_i^(d)"),
    Mistake("a6_probability_space", "a6_multilabel_em", "e_step", """
        a = accuracy[crowd.expert, crowd.target]
        wrong = (1 - a) / (K - 1)
        joint = np.tile(class_prior, (n, 1, 1))
        probs = np.where(np.arange(K) == crowd.label[:, None], a[:, None], wrong[:, None])
        np.multiply.at(joint, (crowd.item, crowd.target), probs)
        z = joint.sum(axis=2, keepdims=True)
        q = joint / z
        log_likelihood = float(np.log(z).sum())
        """, frozenset({"check_e_step_stable"}), "underflows to 0"),
    Mistake("a6_sympy_beta_prior", "a6_multilabel_em", "accuracy_derivation", """
        accuracy_hat = (C + a) / (L + 2 * a)
        """, frozenset({"check_accuracy_derivation"}), "Beta(alpha + 1, alpha + 1)"),
    Mistake("a6_all_items_denominator", "a6_multilabel_em", "m_step", """
        class_prior = q.sum(axis=0) / n
        right = np.zeros((J, M))
        np.add.at(right, (crowd.expert, crowd.target), q[crowd.item, crowd.target, crowd.label])
        given = np.zeros((J, M))
        np.add.at(given, (crowd.expert, crowd.target), 1.0)
        accuracy = np.where(given > 0, (right + K * alpha) / (n + K * K * alpha), 1 / K)
        """, frozenset({"check_m_step_missing", "check_m_step_smoothing",
                        "check_em_objective", "check_em_fit"}),
        "divide by L^(r,d), the number of answers"),
    Mistake("a6_prior_over_all_questions", "a6_multilabel_em", "m_step", """
        class_prior = q.sum(axis=0) / q.sum()
        right = np.zeros((J, M))
        given = np.zeros((J, M))
        np.add.at(right, (crowd.expert, crowd.target), q[crowd.item, crowd.target, crowd.label])
        np.add.at(given, (crowd.expert, crowd.target), 1.0)
        top, bottom = right + K * alpha, given + K * K * alpha
        accuracy = np.divide(top, bottom, out=np.full((J, M), 1 / K), where=bottom > 0)
        """, frozenset({"check_m_step_missing", "check_m_step_smoothing", "check_em_fit"}),
        "should sum to one over its classes"),
    Mistake("a6_beta_prior", "a6_multilabel_em", "m_step", """
        class_prior = q.sum(axis=0) / n
        right = np.zeros((J, M))
        given = np.zeros((J, M))
        np.add.at(right, (crowd.expert, crowd.target), q[crowd.item, crowd.target, crowd.label])
        np.add.at(given, (crowd.expert, crowd.target), 1.0)
        top, bottom = right + alpha, given + 2 * alpha
        accuracy = np.divide(top, bottom, out=np.full((J, M), 1 / K), where=bottom > 0)
        """, frozenset({"check_m_step_smoothing", "check_em_objective", "check_em_fit"}),
        "alpha right and alpha wrong pseudo-answers"),
    Mistake("a6_history_without_prior", "a6_multilabel_em", "em", """
        for _ in range(max_iter):
            class_prior, accuracy = m_step(crowd, q, alpha)
            q, log_likelihood = e_step(crowd, class_prior, accuracy)
            history.append(log_likelihood)
            if len(history) > 1 and history[-1] - history[-2] <= tol * max(1, abs(history[-1])):
                break
        """, frozenset({"check_em_objective", "check_em_fit"}), "without the prior term"),
]
# a student who also "fixed" a check cell: nbgrader grades with the instructor's check anyway
TAMPERED = Mistake("a1_tampered", "a1_naive_bayes_mle", "estimator", MISTAKES[1].code,
                   MISTAKES[1].lost, MISTAKES[1].feedback)


def _bundled(mistakes) -> dict:
    """The mistakes packed into few submissions (each grading costs a kernel): a bundle holds
    mistakes of one assignment, no two in the same cell and no check lost by two, so every
    lost check has exactly one cause. ``{submission folder: [mistakes]}``."""
    bundles: list = []
    for m in mistakes:
        home = next((b for b in bundles if b[0].assignment == m.assignment
                     and all(o.cell != m.cell and not o.lost & m.lost for o in b)), None)
        if home is None:
            bundles.append([m])
        else:
            home.append(m)
    return {f"{b[0].assignment[:2]}_mistakes_{k}": b for k, b in enumerate(bundles)}


BUNDLES = _bundled(MISTAKES)
BUNDLE_OF = {m.name: name for name, members in BUNDLES.items() for m in members}


def _cells_by_id(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if "nbgrader" in c.get("metadata", {})}


def _manual(nb) -> set:
    """grade_ids of the manually graded answer cells (written derivations, Markdown)."""
    return {c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.cell_type == "markdown" and c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def _auto(checks: dict, nb) -> dict:
    """The autograded checks of a graded submission (the written answers left out)."""
    manual = _manual(nb)
    return {cid: v for cid, v in checks.items() if cid not in manual}


def _student_submission(released, instructor, *mistakes, tamper=None):
    """The released notebook with every solution cell filled in from ``instructor`` (with
    ``mistakes`` applied), as a student would hand it in."""
    for mistake in mistakes:
        instructor = classroom.replace_solution(instructor, mistake.cell, mistake.code)
    filled = _cells_by_id(instructor)
    nb = copy.deepcopy(released)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            source = filled[meta["grade_id"]].source
            cell.source = "\n".join(line for line in source.splitlines()
                                    if line.strip() not in (classroom.BEGIN_SOLUTION,
                                                            classroom.END_SOLUTION))
        if tamper is not None and meta.get("grade_id") == tamper:
            cell.source = "pass  # all good"
    return nb


@pytest.fixture(scope="module")
def assignments():
    return {name: classroom.read_assignment(path)
            for name, path in classroom.find_assignments(SOURCE).items()}


@pytest.fixture(scope="module")
def released(assignments, tmp_path_factory):
    out = tmp_path_factory.mktemp("released")
    paths = released_assignments(out, tmp_path_factory)  # classroom.release, once a run
    assert sorted(p.name for p in paths) == sorted(f"{a}.ipynb" for a in assignments)
    return {p.stem: nbformat.read(str(p), as_version=4) for p in paths}


@pytest.fixture(scope="module")
def graded(assignments, released, tmp_path_factory):
    """Grade every submission with the command-line tool; the parsed CSV report."""
    subs = tmp_path_factory.mktemp("submissions")

    def put(student, name, nb):
        (subs / student).mkdir(exist_ok=True)
        nbformat.write(nb, str(subs / student / f"{name}.ipynb"))

    for name, nb in assignments.items():
        put("instructor", name, nb)
        put("blank", name, released[name])
    for bundle, members in BUNDLES.items():
        put(bundle, members[0].assignment,
            _student_submission(released[members[0].assignment],
                                assignments[members[0].assignment], *members))
    put(TAMPERED.name, TAMPERED.assignment,
        _student_submission(released[TAMPERED.assignment], assignments[TAMPERED.assignment],
                            TAMPERED, tamper="check_estimator_hard"))
    # a student who deleted a check they could not pass, and a file that is no notebook
    deleted = _student_submission(released["a3_smoothing_map"], assignments["a3_smoothing_map"])
    deleted.cells = [c for c in deleted.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id") != "check_theta_map"]
    put("deleted_check", "a3_smoothing_map", deleted)
    (subs / "unreadable").mkdir()
    (subs / "unreadable" / "a2_dawid_skene_by_hand.ipynb").write_text("my answers: 42\n")
    report = subs.parent / f"{subs.name}-grades.csv"
    assert classroom.main(["--source", str(SOURCE), "grade", str(subs), "--report",
                           str(report), "--jobs", "2"]) == 1  # 1: "unreadable" is no notebook
    with report.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for r in rows:
        out.setdefault((r["submission"], r["assignment"]), {})[r["check"]] = (
            float(r["points"]), float(r["max_points"]), r["feedback"])
    return {"rows": rows, "by_submission": out, "report": report}


# -- the sources ---------------------------------------------------------------------------------
def test_at_least_five_assignments_with_checks(assignments):
    assert len(assignments) >= 5
    for name, nb in assignments.items():
        checks = classroom.grade_cells(nb)
        assert len(checks) >= 3, name
        assert any(hidden for _, _, hidden in checks), f"{name} has no hidden test"
        assert classroom.solution_regions(nb), f"{name} has no solution region"


def test_nbgrader_metadata_survives_jupytext(assignments):
    """md -> notebook -> md -> notebook keeps every cell's source and metadata."""
    for name, path in classroom.find_assignments(SOURCE).items():
        nb = jupytext.read(path)
        again = jupytext.reads(jupytext.writes(nb, fmt="md:myst"), fmt="md:myst")
        assert len(again.cells) == len(nb.cells), name
        for a, b in zip(nb.cells, again.cells):
            assert (a.cell_type, a.source, a.metadata) == (b.cell_type, b.source, b.metadata)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            if meta is None:
                continue
            assert NBGRADER_KEYS <= set(meta) and meta["schema_version"] == 3, meta
            if cell.cell_type == "markdown":   # a manually graded answer cell
                assert meta["grade"] and meta["solution"] and not meta["task"], meta
                assert not meta["locked"] and meta["points"] > 0, meta
                continue
            assert cell.cell_type == "code"
            if meta["grade"]:
                assert meta["locked"] and meta["points"] > 0 and not meta["solution"], meta


def test_every_assignment_has_graded_derivations(assignments):
    """At least two written derivations per assignment, as nbgrader manually graded answer
    cells (Markdown, grade + solution) holding the instructor's model answer, each after a
    prompt; the new assignment on a later chapter is there."""
    assert "a6_multilabel_em" in assignments
    for name, nb in assignments.items():
        manual = [(i, c) for i, c in enumerate(nb.cells)
                  if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")]
        assert len(manual) >= 2, (name, len(manual))
        for i, cell in manual:
            assert "Model answer" in cell.source and "Grading:" in cell.source, (name, i)
            assert nb.cells[i - 1].cell_type == "markdown", (name, i)   # the prompt
            assert classroom.BEGIN_SOLUTION not in cell.source, (name, i)
        auto = [cid for cid, _, _ in classroom.grade_cells(nb) if cid not in _manual(nb)]
        assert len(auto) >= 3, name


def test_written_answers_are_released_blank(assignments, released):
    for name, nb in assignments.items():
        theirs = _cells_by_id(released[name])
        for grade_id in _manual(nb):
            got = theirs[grade_id]
            assert got.cell_type == "markdown" and got.source.strip() == TEXT_STUB, (name,
                                                                                     grade_id)
            meta = got.metadata["nbgrader"]
            assert meta["grade"] and meta["solution"] and not meta["locked"], meta
        text = "\n".join(c.source for c in released[name].cells)
        assert "Model answer" not in text and "Grading:" not in text, name


def test_replace_solution_keeps_the_rest(assignments):
    nb = assignments["a1_naive_bayes_mle"]
    changed = classroom.replace_solution(nb, "estimator", "prior = feature_prob = None")
    before, after = _cells_by_id(nb)["estimator"].source, _cells_by_id(changed)["estimator"].source
    assert "    prior = feature_prob = None\n" in after
    assert classroom.BEGIN_SOLUTION not in after and "W.T @ X" not in after
    assert after.splitlines()[:3] == before.splitlines()[:3]
    assert after.rstrip().endswith("return prior, feature_prob")
    with pytest.raises(ValueError, match="no solution cell"):
        classroom.replace_solution(nb, "nonexistent", "pass")


# -- release ---------------------------------------------------------------------------------------
def _strip_regions(source: str, begin: str, end: str, stub: str | None) -> str:
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        if line.strip() == begin:
            inside, indent = True, line[:len(line) - len(line.lstrip())]
            if stub is not None:
                out += [indent + s for s in stub.splitlines()]
        elif line.strip() == end:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def test_released_versions_hold_no_solution(assignments, released):
    for name, nb in assignments.items():
        student = released[name]
        text = "\n".join(c.source for c in student.cells)
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS",
                       "END HIDDEN TESTS"):
            assert marker not in text, (name, marker)
        solution_lines = {line.strip() for regions in classroom.solution_regions(nb).values()
                          for region in regions for line in region.splitlines()}
        theirs = _cells_by_id(student)
        for grade_id, cell in _cells_by_id(nb).items():
            meta = cell.metadata["nbgrader"]
            assert grade_id in theirs, f"{name}: cell {grade_id} was not released"
            got = theirs[grade_id]
            assert not got.get("outputs"), (name, grade_id)
            if cell.cell_type == "markdown":   # written answers: test_written_answers_...
                continue
            if meta["solution"]:   # exactly the instructor's cell, each region a stub
                assert got.source.strip() == _strip_regions(
                    cell.source, classroom.BEGIN_SOLUTION, classroom.END_SOLUTION,
                    STUB).strip(), (name, grade_id)
                template = {line.strip() for line in _strip_regions(
                    cell.source, classroom.BEGIN_SOLUTION, classroom.END_SOLUTION,
                    None).splitlines()}
                leaked = (solution_lines - template - {""}) & {
                    line.strip() for line in got.source.splitlines()}
                assert not leaked, (name, grade_id, leaked)
            if meta["grade"]:      # the visible checks, no hidden ones
                assert got.source.strip() == _strip_regions(
                    cell.source, classroom.BEGIN_HIDDEN, classroom.END_HIDDEN,
                    None).strip(), (name, grade_id)
                assert float(got.metadata["nbgrader"]["points"]) == float(meta["points"])


# -- grading ---------------------------------------------------------------------------------------
def test_instructor_versions_score_full_marks(assignments, graded):
    """Full marks on every autograded check; the written answers are in the report with
    their points possible, for the instructor to grade by hand (nbgrader leaves their score
    empty, which the report shows as 0)."""
    for name in assignments:
        nb = assignments[name]
        checks = graded["by_submission"][("instructor", name)]
        assert {cid for cid, _, _ in classroom.grade_cells(nb)} == set(checks)
        auto = _auto(checks, nb)
        failed = {cid: fb for cid, (pts, mx, fb) in auto.items() if pts != mx}
        assert not failed, (name, failed)
        assert all(fb == "ok" for _, _, fb in auto.values())
        points = {cid: pts for cid, pts, _ in classroom.grade_cells(nb)}
        for cid in _manual(nb):
            assert checks[cid][1] == points[cid] and checks[cid][0] == 0, (name, cid)


def test_released_versions_score_nothing(assignments, graded):
    for name in assignments:
        checks = graded["by_submission"][("blank", name)]
        passed = {cid for cid, (pts, _, _) in checks.items() if pts > 0}
        assert not passed, (name, passed)
        auto = _auto(checks, assignments[name])
        assert all(fb.startswith("not done yet") for _, _, fb in auto.values()), checks


def test_bundles_pack_the_mistakes_into_fewer_submissions():
    assert sorted(m.name for b in BUNDLES.values() for m in b) == sorted(m.name for m in MISTAKES)
    assert len(BUNDLES) < len(MISTAKES) * 2 / 3
    for members in BUNDLES.values():
        lost = [cid for m in members for cid in m.lost]
        assert len(lost) == len(set(lost)) and len({m.cell for m in members}) == len(members)


@pytest.mark.parametrize("mistake", MISTAKES + [TAMPERED], ids=lambda m: m.name)
def test_a_mistake_loses_exactly_its_checks(mistake, assignments, graded):
    """Graded in its bundle: the bundle loses exactly the union of its mistakes' checks (each
    lost by one mistake only), all or nothing per check, with this mistake's feedback."""
    members = BUNDLES.get(BUNDLE_OF.get(mistake.name), [mistake])
    submission = BUNDLE_OF.get(mistake.name, mistake.name)
    checks = _auto(graded["by_submission"][(submission, mistake.assignment)],
                   assignments[mistake.assignment])
    expected = set().union(*(m.lost for m in members))
    lost = {cid for cid, (pts, mx, _) in checks.items() if pts < mx}
    assert lost == expected, {cid: checks[cid][2] for cid in lost ^ expected}
    assert mistake.lost <= lost
    for cid, (pts, mx, _) in checks.items():
        assert pts == (0 if cid in expected else mx)   # all or nothing per check
    total = sum(pts for pts, _, _ in checks.values())
    possible = sum(mx for _, mx, _ in checks.values())
    assert possible - total == sum(checks[cid][1] for cid in expected)
    order = [cid for cid, _, _ in classroom.grade_cells(assignments[mistake.assignment])]
    first = min(mistake.lost, key=order.index)
    assert mistake.feedback in checks[first][2], checks[first][2]


def test_a_deleted_check_is_restored_and_graded_on_its_merits(assignments, graded):
    checks = _auto(graded["by_submission"][("deleted_check", "a3_smoothing_map")],
                   assignments["a3_smoothing_map"])
    assert checks["check_theta_map"][:2] == (2.0, 2.0)  # the answer is right
    assert "missing" in checks["check_theta_map"][2]
    assert all(pts == mx for cid, (pts, mx, _) in checks.items() if cid != "check_theta_map")


def test_a_file_that_is_no_notebook_scores_zero_with_the_reason(graded):
    checks = graded["by_submission"][("unreadable", "a2_dawid_skene_by_hand")]
    assert checks and all(pts == 0 for pts, _, _ in checks.values())
    assert all("not a notebook" in fb for _, _, fb in checks.values())


def test_mistakes_caught_only_by_hidden_tests_exist(assignments):
    """Some mistakes pass every visible check: only the gradebook's hidden tests catch them."""
    only_hidden = [m for m in MISTAKES
                   if all(dict((cid, h) for cid, _, h in
                               classroom.grade_cells(assignments[m.assignment]))[cid]
                          for cid in m.lost)]
    assert len(only_hidden) >= 3


def test_report_has_every_check_as_csv_and_json(assignments, graded):
    rows = graded["rows"]
    assert list(rows[0]) == list(classroom.CheckResult._fields)
    n_submissions = 2 * len(assignments) + len(BUNDLES) + 3
    assert len(graded["by_submission"]) == n_submissions
    expected = sum(len(classroom.grade_cells(assignments[a])) for _, a in graded["by_submission"])
    assert len(rows) == expected
    data = json.loads(Path(graded["report"]).with_suffix(".json").read_text())
    assert len(data["checks"]) == expected and len(data["totals"]) == n_submissions
    full = {(t["submission"], t["assignment"]): (t["points"], t["max_points"])
            for t in data["totals"]}
    auto = {a: sum(pts for cid, pts, _ in classroom.grade_cells(nb) if cid not in _manual(nb))
            for a, nb in assignments.items()}
    assert all(p == auto[a] and m == sum(pts for _, pts, _ in
                                          classroom.grade_cells(assignments[a]))
               for (s, a), (p, m) in full.items() if s == "instructor")


def test_list_command(capsys):
    assert classroom.main(["--source", str(SOURCE), "list"]) == 0
    out = capsys.readouterr().out
    for name in classroom.find_assignments(SOURCE):
        assert name in out
    assert "(has hidden tests)" in out
    hand = {line.split()[0] for line in out.splitlines() if line.endswith("(graded by hand)")}
    assert hand == {cid for path in classroom.find_assignments(SOURCE).values()
                    for cid in _manual(classroom.read_assignment(path))}
    assert "autograded + " in out and " by hand, " in out


def test_grade_refuses_a_folder_without_submissions(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "notes.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="no submissions found"):
        classroom.grade(tmp_path, SOURCE)
