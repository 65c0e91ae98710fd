r"""Weighted logistic regression with soft targets and a ridge penalty, by Newton's method.

The M-steps of the feature-based crowd models are weighted logistic
regressions whose targets are probabilities (posteriors from the E-step), not
hard 0/1 labels. This module fits them, one problem or a batch of independent
problems at once (one per annotator, say), and never returns parameters worse
than the ones it started from -- which is what makes the EM that calls it
monotone.

For rows :math:`r = 1, \dots, R` with features :math:`x_r \in \mathbb{R}^d`,
soft targets :math:`m_r \in [0, 1]` and weights :math:`s_r \ge 0`, the problem
maximises the penalised weighted log-likelihood

.. math::

    L(w, b) = \sum_r s_r \big[ m_r \log\sigma(u_r) + (1 - m_r)\log\sigma(-u_r) \big]
              - \frac{\lambda}{2}\big(\lVert w\rVert^2 + \rho\, b^2\big),
    \qquad u_r = w^\top x_r + b,

with :math:`\rho = 1` when the intercept is penalised, :math:`0` otherwise.
Its gradient and Hessian are

.. math::

    \nabla_w L = \sum_r s_r (m_r - \sigma(u_r))\, x_r - \lambda w, \quad
    \frac{\partial L}{\partial b} = \sum_r s_r (m_r - \sigma(u_r)) - \lambda\rho b, \quad
    \nabla^2 L = -\sum_r s_r \sigma(u_r)\sigma(-u_r)\, \tilde x_r \tilde x_r^\top
                 - \lambda\,\mathrm{diag}(1, \dots, 1, \rho),

with :math:`\tilde x_r = (x_r, 1)`. :math:`L` is concave (strictly so when
:math:`\lambda > 0` and :math:`\rho = 1`), so Newton's method with a
backtracking (Armijo) line search converges to its maximiser; every accepted
step raises :math:`L`, and a step that does not is never taken.

With ``groups``, rows belong to independent problems :math:`g = 0, \dots, G-1`
with parameters :math:`(w_g, b_g)`; the objective is the sum of the
per-group objectives, and the Newton steps, line searches and stopping rules
run for all groups at once (vectorised with ``np.bincount``), each group
stopping on its own.

Examples
--------
>>> import numpy as np
>>> from crowdlearn._logistic import fit_weighted_logistic
>>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
>>> fit = fit_weighted_logistic(X, [0.1, 0.3, 0.6, 0.9])
>>> np.round(fit.coef, 4), round(fit.intercept, 4), fit.converged
(array([1.4237]), -2.2942, True)
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from ._validation import check_scalar

__all__ = ["LogisticFit", "fit_weighted_logistic", "weighted_logistic_objective"]


class LogisticFit(NamedTuple):
    """The result of :func:`fit_weighted_logistic`.

    Without ``groups``: ``coef`` has shape ``(d,)``, ``intercept``, ``objective``
    are floats and ``n_iter`` an int. With ``groups``: ``coef`` is ``(G, d)``,
    ``intercept`` and ``objective`` are ``(G,)``; ``n_iter`` is the number of
    Newton iterations of the slowest group. ``converged`` says whether every
    group met the tolerance.
    """

    coef: np.ndarray
    intercept: np.ndarray | float
    objective: np.ndarray | float
    n_iter: int
    converged: bool


def _check_inputs(X, target, weight, groups, n_groups):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (n_rows, n_features), got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or inf")
    R = X.shape[0]
    target = np.asarray(target, dtype=float)
    if target.shape != (R,):
        raise ValueError(f"target must have shape ({R},), got {target.shape}")
    if not np.isfinite(target).all() or (target < 0).any() or (target > 1).any():
        raise ValueError("target must hold probabilities in [0, 1]")
    if weight is None:
        weight = np.ones(R)
    else:
        weight = np.asarray(weight, dtype=float)
        if weight.shape != (R,):
            raise ValueError(f"weight must have shape ({R},), got {weight.shape}")
        if not np.isfinite(weight).all() or (weight < 0).any():
            raise ValueError("weight must hold finite non-negative numbers")
    if groups is None:
        g = np.zeros(R, dtype=np.intp)
        G = 1
    else:
        g = np.asarray(groups)
        if g.shape != (R,) or (g.size and g.dtype.kind not in "iu"):
            raise ValueError(f"groups must be an integer array of shape ({R},)")
        g = g.astype(np.intp)
        G = int(n_groups) if n_groups is not None else (int(g.max()) + 1 if R else 0)
        if G < 1:
            raise ValueError("n_groups must be at least 1")
        if R and (g.min() < 0 or g.max() >= G):
            raise ValueError(f"groups must lie in [0, {G}), got values from {g.min()} to {g.max()}")
    return X, target, weight, g, G


def _design(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _group_sum(g: np.ndarray, values: np.ndarray, G: int) -> np.ndarray:
    """Sum the rows of ``values`` (shape ``(R,)`` or ``(R, k)``) within each group."""
    if G == 1:
        return values.sum(axis=0)[None]
    if values.ndim == 1:
        return np.bincount(g, weights=values, minlength=G)
    return np.stack([np.bincount(g, weights=values[:, c], minlength=G)
                     for c in range(values.shape[1])], axis=1).reshape(G, values.shape[1])


def _group_gram(g: np.ndarray, Z: np.ndarray, curv: np.ndarray, G: int) -> np.ndarray:
    """``sum_r curv_r z_r z_r^T`` within each group, shape ``(G, p, p)``."""
    if G == 1:
        return ((Z * curv[:, None]).T @ Z)[None]
    p = Z.shape[1]
    out = np.empty((G, p, p))
    cz = Z * curv[:, None]
    for j in range(p):
        for k in range(j, p):
            out[:, j, k] = out[:, k, j] = np.bincount(g, weights=cz[:, j] * Z[:, k],
                                                      minlength=G)
    return out


def _loglik_rows(u, target):
    # m log sigma(u) + (1 - m) log sigma(-u) = m u + log sigma(-u)
    return target * u + log_expit(-u)


def _objective(theta, Z, target, weight, g, G, pen):
    """Per-group penalised objective, shape ``(G,)``; ``theta`` is ``(G, d + 1)``."""
    u = np.einsum("rp,rp->r", Z, theta[g]) if G > 1 else Z @ theta[0]
    data = _group_sum(g, weight * _loglik_rows(u, target), G)
    return data - 0.5 * (pen * theta ** 2).sum(axis=1)


def _newton_step(theta, Z, target, weight, g, G, pen):
    """Newton direction and decrement per group, shapes ``(G, p)`` and ``(G,)``."""
    p = Z.shape[1]
    u = np.einsum("rp,rp->r", Z, theta[g]) if G > 1 else Z @ theta[0]
    sig = expit(u)
    grad = _group_sum(g, (weight * (target - sig))[:, None] * Z, G) - pen * theta
    curv = weight * sig * expit(-u)
    hess = _group_gram(g, Z, curv, G)
    hess = hess + np.diag(pen)
    eps = 1e-12 * np.maximum(np.max(np.diagonal(hess, axis1=1, axis2=2), axis=1), 1.0)
    hess = hess + eps[:, None, None] * np.eye(p)
    step = np.linalg.solve(hess, grad[..., None])[..., 0]
    return step, np.einsum("gp,gp->g", grad, step)


def weighted_logistic_objective(coef, intercept, X, target, weight=None, *, l2: float = 0.0,
                                penalize_intercept: bool = True, groups=None, n_groups=None):
    r"""The penalised weighted log-likelihood :math:`L(w, b)` and its gradient.

    Parameters
    ----------
    coef : array-like of shape (d,) or (G, d)
    intercept : float or array-like of shape (G,)
    X, target, weight, l2, penalize_intercept, groups, n_groups
        As in :func:`fit_weighted_logistic`.

    Returns
    -------
    value : float or ndarray of shape (G,)
    grad_coef : ndarray of shape (d,) or (G, d)
    grad_intercept : float or ndarray of shape (G,)
    """
    X, target, weight, g, G = _check_inputs(X, target, weight, groups, n_groups)
    theta = np.column_stack([np.atleast_2d(np.asarray(coef, dtype=float)).reshape(G, -1),
                             np.asarray(intercept, dtype=float).reshape(G)])
    Z = _design(X)
    pen = _penalty_vector(l2, X.shape[1], penalize_intercept)
    value = _objective(theta, Z, target, weight, g, G, pen)
    u = np.einsum("rp,rp->r", Z, theta[g])
    grad = _group_sum(g, (weight * (target - expit(u)))[:, None] * Z, G) - pen * theta
    if groups is None:
        return float(value[0]), grad[0, :-1], float(grad[0, -1])
    return value, grad[:, :-1], grad[:, -1]


def _penalty_vector(l2, d, penalize_intercept):
    pen = np.full(d + 1, float(l2))
    if not penalize_intercept:
        pen[-1] = 0.0
    return pen


def fit_weighted_logistic(X, target, weight=None, *, l2: float = 0.0,
                          penalize_intercept: bool = True, groups=None, n_groups=None,
                          coef_init=None, intercept_init=None, max_iter: int = 100,
                          tol: float = 1e-10) -> LogisticFit:
    r"""Maximise the penalised weighted log-likelihood of a logistic regression with soft targets.

    Parameters
    ----------
    X : array-like of shape (n_rows, d)
        Features of each row (an intercept column is added internally).
    target : array-like of shape (n_rows,)
        Soft targets :math:`m_r \in [0, 1]` (hard 0/1 labels are a special case).
    weight : array-like of shape (n_rows,), optional
        Non-negative row weights :math:`s_r` (default all one).
    l2 : float, default 0
        Ridge penalty :math:`\lambda \ge 0`: :math:`\frac{\lambda}{2}\lVert w\rVert^2`
        is subtracted (plus :math:`\frac{\lambda}{2} b^2` if ``penalize_intercept``).
    penalize_intercept : bool, default True
        Whether the intercept is penalised too.
    groups : array-like of int, shape (n_rows,), optional
        Fit independent problems at once: row ``r`` belongs to problem ``groups[r]``.
        A group with no rows keeps its initial parameters when ``l2 == 0`` and
        shrinks to zero otherwise.
    n_groups : int, optional
        Number of problems (default ``max(groups) + 1``).
    coef_init, intercept_init : array-like, optional
        Starting point (default zero), shapes ``(d,)`` / scalar, or ``(G, d)`` /
        ``(G,)`` with groups. The result is never worse than the start.
    max_iter : int, default 100
        At most this many Newton iterations.
    tol : float, default 1e-10
        A group stops when half its squared Newton decrement,
        :math:`\tfrac12 \nabla L^\top (-\nabla^2 L)^{-1} \nabla L` -- the
        predicted gain of a full Newton step -- is at most ``tol``; that last
        full step is still taken if it does not lower :math:`L`, which (Newton
        converging quadratically) leaves the gradient at rounding level.

    Returns
    -------
    LogisticFit
        ``coef``, ``intercept``, ``objective`` (the maximised :math:`L`),
        ``n_iter``, ``converged``.

    Notes
    -----
    Each iteration solves :math:`(-\nabla^2 L + \epsilon I)\,\Delta = \nabla L`
    per group, with a tiny :math:`\epsilon` (``1e-12`` times the largest
    diagonal entry, at least ``1e-12``) so that singular problems -- no rows,
    collinear features, ``l2 = 0`` -- still give an ascent direction. The step
    :math:`t\Delta` is halved from :math:`t = 1` until
    :math:`L(\theta + t\Delta) \ge L(\theta) + 10^{-4}\, t\, \nabla L^\top\Delta`;
    a group for which no step of size at least :math:`2^{-40}` passes stops
    where it is. Without a penalty and with separable hard targets the
    maximiser does not exist; the iterates then grow until ``max_iter``.
    """
    X, target, weight, g, G = _check_inputs(X, target, weight, groups, n_groups)
    check_scalar(l2, "l2", low=0.0)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=0)
    check_scalar(tol, "tol", low=0.0)
    d = X.shape[1]
    p = d + 1
    theta = np.zeros((G, p))
    if coef_init is not None:
        theta[:, :d] = np.asarray(coef_init, dtype=float).reshape(G, d)
    if intercept_init is not None:
        theta[:, d] = np.asarray(intercept_init, dtype=float).reshape(G)
    if not np.isfinite(theta).all():
        raise ValueError("the initial coefficients must be finite")
    Z = _design(X)
    pen = _penalty_vector(l2, d, penalize_intercept)
    obj = _objective(theta, Z, target, weight, g, G, pen)
    active = np.ones(G, dtype=bool)
    n_iter = 0
    while True:
        step, decrement = _newton_step(theta, Z, target, weight, g, G, pen)
        done = active & (0.5 * decrement <= tol)
        if done.any() and n_iter < max_iter:
            # polish: Newton converges quadratically, so one more full step from here
            # lands at the maximiser to rounding error; take it if it does not lose
            trial = theta + np.where(done, 1.0, 0.0)[:, None] * step
            trial_obj = _objective(trial, Z, target, weight, g, G, pen)
            ok = done & (trial_obj >= obj)
            theta[ok], obj[ok] = trial[ok], trial_obj[ok]
        active &= ~done
        if not active.any() or n_iter >= max_iter:
            break
        n_iter += 1
        # backtracking line search, all active groups at once
        t = np.where(active, 1.0, 0.0)
        pending = active.copy()
        new_theta, new_obj = theta.copy(), obj.copy()
        for _ in range(41):
            trial = theta + t[:, None] * step
            trial_obj = _objective(trial, Z, target, weight, g, G, pen)
            ok = pending & (trial_obj >= obj + 1e-4 * t * decrement)
            new_theta[ok], new_obj[ok] = trial[ok], trial_obj[ok]
            pending &= ~ok
            if not pending.any():
                break
            t = np.where(pending, 0.5 * t, 0.0)
        # a group whose line search failed sits at the limit of floating-point
        # precision (L is concave): it stops there and counts as converged
        active &= ~pending
        theta, obj = new_theta, new_obj
    converged = not active.any()
    if groups is None:
        return LogisticFit(theta[0, :d].copy(), float(theta[0, d]), float(obj[0]), n_iter,
                           converged)
    return LogisticFit(theta[:, :d].copy(), theta[:, d].copy(), obj, n_iter, converged)
