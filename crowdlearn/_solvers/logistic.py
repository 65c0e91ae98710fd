r"""Weighted logistic regression with soft targets and a ridge penalty, by Newton's method.

The M-steps of the feature-based crowd models are weighted logistic
regressions whose targets are probabilities (posteriors from the E-step), not
hard 0/1 labels. This module fits them, one problem or a batch of independent
problems at once (one per annotator, say), and never returns parameters worse
than the ones it started from -- which is what makes the EM that calls it
monotone.

For rows :math:`i` (observations: items, or labels) with features
:math:`x^{(i)} \in \mathbb{R}^k`, soft targets :math:`\mu_i \in [0, 1]` and weights
:math:`v_i \ge 0`, the problem
maximises the penalised weighted log-likelihood (the M-step's objective; :math:`\beta`,
:math:`\beta_0` stand for whichever regression the M-step fits: the classifier's,
or an expert's reliability :math:`w_r`, :math:`-\gamma_r`)

.. math::

    \begin{aligned}
    J(\beta, \beta_0) &= \sum_i v_i \big[ \mu_i \log\sigma(a_i)
    + (1 - \mu_i)\log\sigma(-a_i) \big] \\
    &\quad - \frac{\lambda}{2}\lVert \beta\rVert^2 - \frac{\lambda_0}{2}\beta_0^2,
    \qquad a_i = \beta^\top x^{(i)} + \beta_0,
    \end{aligned}

with :math:`\lambda_0 = \lambda` when the intercept is penalised, :math:`0` otherwise.
Its gradient and Hessian are

.. math::

    \begin{aligned}
    \nabla_\beta J &= \sum_i v_i (\mu_i - \sigma(a_i))\, x^{(i)} - \lambda \beta, \\
    \frac{\partial J}{\partial \beta_0} &= \sum_i v_i (\mu_i - \sigma(a_i))
    - \lambda_0 \beta_0, \\
    \nabla^2 J &= -\sum_i v_i \sigma(a_i)\sigma(-a_i)\, \tilde x^{(i)} \tilde x^{(i)\top}
    - \mathrm{diag}(\lambda, \dots, \lambda, \lambda_0),
    \end{aligned}

with :math:`\tilde x^{(i)} = (x^{(i)}, 1)`. :math:`J` is concave (strictly so when
:math:`\lambda_0 = \lambda > 0`), so Newton's method with a
backtracking (Armijo) line search converges to its maximiser; every accepted
step raises :math:`J`, and a step that does not is never taken.

With ``groups``, rows belong to independent problems :math:`g = 0, 1, \dots`,
each with its own parameters :math:`(\beta, \beta_0)`; the objective is the sum of the
per-group objectives, and the Newton steps, line searches and stopping rules
run for all groups at once, each group stopping on its own. The rows are
sorted by group once per call, so that each group's Hessian
:math:`\sum_i v_i\sigma(a_i)\sigma(-a_i)\,\tilde x^{(i)}\tilde x^{(i)\top}` is one BLAS
product on a contiguous block (groups with very few rows, such as annotators
with one label each, are handled together by vectorised NumPy instead). An
iteration therefore costs :math:`O((k + 1)^2)` per row, with
:math:`k + 1` parameters per group, whatever the number of groups.

Examples
--------
>>> import numpy as np
>>> from crowdlearn._solvers.logistic import fit_weighted_logistic
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

from crowdlearn._validation import check_scalar

__all__ = ["LogisticFit", "fit_weighted_logistic", "weighted_logistic_objective"]


class LogisticFit(NamedTuple):
    """The result of :func:`fit_weighted_logistic`.

    Without ``groups``: ``coef`` has shape ``(k,)``, ``intercept``, ``objective``
    are floats and ``n_iter`` an int. With ``groups``: ``coef`` is ``(G, k)``,
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


# a group with n_rows * p * p <= _SMALL_GROUP_ENTRIES is "small": its rows are handled together
# with those of the other small groups (outer products summed by segment) rather than by BLAS
# calls of its own, whose fixed cost (a few microseconds) would then dominate
_SMALL_GROUP_ENTRIES = 8192
# the final full Newton step is taken unless it lowers J by more than this, relative to
# max(1, |J|): far above the rounding error of J, far below any real loss
POLISH_SLACK = 1e-12
# at most about this many entries of outer products are formed at once for the small groups
_OUTER_CHUNK_ENTRIES = 1 << 21


class _GroupLayout:
    """Where the rows of each group lie, for rows sorted by group.

    With the rows of group ``j`` at positions ``starts[j]:starts[j + 1]``, every
    per-group product is one BLAS call on a contiguous slice. Groups whose block
    ``count * p * p`` has at most ``_SMALL_GROUP_ENTRIES`` entries (e.g. many
    annotators with one label each) are handled together instead, by vectorised
    NumPy over all of their rows, so that the cost stays linear in the number of
    rows and of groups.

    Parameters
    ----------
    g : ndarray of int, shape (R,)
        Group of each row, non-decreasing.
    G : int
        Number of groups (some may have no row).
    p : int
        Number of columns of the design.
    """

    def __init__(self, g: np.ndarray, G: int, p: int):
        counts = np.bincount(g, minlength=G)
        self.g, self.G = g, G
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        small = (counts > 0) & (counts * p * p <= _SMALL_GROUP_ENTRIES)
        self.big = np.flatnonzero((counts > 0) & ~small)
        self.small = np.flatnonzero(small)
        self.small_rows = np.flatnonzero(small[g]) if self.small.size else np.zeros(0, np.intp)
        # where each small group starts among the small rows
        self.small_starts = np.concatenate([[0], np.cumsum(counts[self.small])])

    def linear(self, Z: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """``u_r = z_r^T theta_{g(r)}``, shape ``(R,)``."""
        u = np.empty(Z.shape[0])
        st = self.starts
        for j in self.big.tolist():
            u[st[j]:st[j + 1]] = Z[st[j]:st[j + 1]] @ theta[j]
        if self.small.size:
            rows = self.small_rows
            u[rows] = np.einsum("rp,rp->r", Z[rows], theta[self.g[rows]])
        return u

    def sum(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-row vector within each group, shape ``(G,)``."""
        return np.bincount(self.g, weights=values, minlength=self.G)

    def weighted_sum(self, Z: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``sum_r r_r z_r`` within each group, shape ``(G, p)``."""
        out = np.zeros((self.G, Z.shape[1]))
        st = self.starts
        for j in self.big.tolist():
            out[j] = r[st[j]:st[j + 1]] @ Z[st[j]:st[j + 1]]
        if self.small.size:
            rows = self.small_rows
            out[self.small] = np.add.reduceat(r[rows, None] * Z[rows], self.small_starts[:-1],
                                              axis=0)
        return out

    def gram(self, Z: np.ndarray, curv: np.ndarray, which: np.ndarray | None = None
             ) -> np.ndarray:
        """``sum_r curv_r z_r z_r^T`` within each group; ``curv >= 0``.

        One symmetric rank-k update (``A.T @ A`` with ``A`` the group's rows scaled
        by ``sqrt(curv)``, which NumPy hands to BLAS ``syrk``) per large group;
        outer products summed by segment (``np.add.reduceat``), in chunks, for the
        rows of the small groups. Groups without rows get zeros.

        Returns shape ``(G, p, p)``, or with ``which`` (a boolean mask of shape
        ``(G,)``) only the selected groups, shape ``(which.sum(), p, p)``.
        """
        p = Z.shape[1]
        big, small, bounds, small_rows = self.big, self.small, self.small_starts, self.small_rows
        if which is None:
            out = np.zeros((self.G, p, p))
            slot = np.arange(self.G)
        else:
            out = np.zeros((int(which.sum()), p, p))
            slot = np.cumsum(which) - 1  # where group j goes in out, if selected
            big = big[which[big]]
            keep = which[small]
            if not keep.all():
                lengths = np.diff(bounds)[keep]
                first = bounds[:-1][keep]
                small = small[keep]
                bounds = np.concatenate([[0], np.cumsum(lengths)])
                small_rows = small_rows[np.repeat(first - bounds[:-1], lengths)
                                        + np.arange(bounds[-1])]
        st = self.starts
        for j in big.tolist():
            block = Z[st[j]:st[j + 1]] * np.sqrt(curv[st[j]:st[j + 1]])[:, None]
            out[slot[j]] = block.T @ block
        if small.size:
            S = Z[small_rows] * np.sqrt(curv[small_rows])[:, None]
            # whole groups per chunk, about _OUTER_CHUNK_ENTRIES entries of outer products each
            per_chunk = max(1, _OUTER_CHUNK_ENTRIES // (p * p))
            k = 0
            while k < small.size:
                stop = int(np.searchsorted(bounds, bounds[k] + per_chunk, side="right")) - 1
                stop = min(max(stop, k + 1), small.size)
                lo, hi = bounds[k], bounds[stop]
                outer = S[lo:hi, :, None] * S[lo:hi, None, :]
                if hi - lo > stop - k:  # some group has several rows: sum them
                    outer = np.add.reduceat(outer, bounds[k:stop] - lo, axis=0)
                out[slot[small[k:stop]]] = outer
                k = stop
        return out


def _sort_by_group(g: np.ndarray, *arrays):
    """``g`` and ``arrays`` with their rows sorted by group (a stable sort, so the rows of a
    group keep their order); unchanged if already sorted."""
    if g.size < 2 or bool((g[1:] >= g[:-1]).all()):
        return (g,) + arrays
    order = np.argsort(g, kind="stable")
    return (g[order],) + tuple(a[order] for a in arrays)


def _group_gram(g: np.ndarray, Z: np.ndarray, curv: np.ndarray, G: int,
                layout: _GroupLayout | None = None) -> np.ndarray:
    """``sum_r curv_r z_r z_r^T`` within each group, shape ``(G, p, p)``; ``curv >= 0``.

    Parameters
    ----------
    g : ndarray of int, shape (R,)
        Group of each row (any order unless ``layout`` is given).
    Z : ndarray of shape (R, p)
    curv : ndarray of shape (R,)
        Non-negative row weights.
    G : int
        Number of groups.
    layout : _GroupLayout, optional
        The layout of ``g`` when the rows are already sorted by group.

    Returns
    -------
    ndarray of shape (G, p, p)
        Exactly symmetric; zero for groups without rows. One BLAS ``syrk`` per
        group (see :meth:`_GroupLayout.gram`), so the cost is
        :math:`O(R p^2)` whatever the number of groups.
    """
    if G == 1:
        A = Z * np.sqrt(curv)[:, None]
        return (A.T @ A)[None]
    if layout is None:
        g, Z, curv = _sort_by_group(g, Z, curv)
        layout = _GroupLayout(g, G, Z.shape[1])
    return layout.gram(Z, curv)


def _loglik_rows(u, target):
    # m log sigma(u) + (1 - m) log sigma(-u) = m u + log sigma(-u)
    return target * u + log_expit(-u)


def _linear(theta, Z, layout):
    return Z @ theta[0] if layout is None else layout.linear(Z, theta)


def _objective(theta, Z, target, weight, layout, pen):
    """Per-group penalised objective, shape ``(G,)``; ``theta`` is ``(G, d + 1)``.

    ``layout`` is the :class:`_GroupLayout` of the rows (sorted by group), or
    ``None`` for a single group.
    """
    rows = weight * _loglik_rows(_linear(theta, Z, layout), target)
    data = rows.sum()[None] if layout is None else layout.sum(rows)
    return data - 0.5 * (pen * theta ** 2).sum(axis=1)


def _gradient(theta, Z, target, weight, layout, pen):
    """Per-group gradient, shape ``(G, p)``, and the linear predictor."""
    u = _linear(theta, Z, layout)
    resid = weight * (target - expit(u))
    data = (resid @ Z)[None] if layout is None else layout.weighted_sum(Z, resid)
    return data - pen * theta, u


def _newton_step(theta, Z, target, weight, layout, pen, active):
    """Newton direction and decrement per group, shapes ``(G, p)`` and ``(G,)``.

    Only the groups in the boolean mask ``active`` are computed (the Hessian of
    a group that has stopped is never formed); the others get zeros.
    """
    G, p = theta.shape
    step = np.zeros((G, p))
    if not active.any():
        return step, np.zeros(G)
    grad, u = _gradient(theta, Z, target, weight, layout, pen)
    curv = weight * expit(u) * expit(-u)
    if layout is None:
        hess = _group_gram(None, Z, curv, 1)
    else:
        hess = layout.gram(Z, curv, which=active)
    diag = hess.reshape(hess.shape[0], p * p)[:, ::p + 1]  # a view of the diagonals
    diag += pen
    diag += (1e-12 * np.maximum(diag.max(axis=1), 1.0))[:, None]
    step[active] = np.linalg.solve(hess, grad[active][..., None])[..., 0]
    return step, np.einsum("gp,gp->g", grad, step)


def _prepare(X, target, weight, g, G):
    """The design with its intercept column, rows sorted by group, and their layout."""
    if G == 1:
        return _design(X), target, weight, None
    R, d = X.shape
    if R < 2 or bool((g[1:] >= g[:-1]).all()):
        order = None
    else:
        order = np.argsort(g, kind="stable")
        g, target, weight = g[order], target[order], weight[order]
    Z = np.empty((R, d + 1))  # one copy of X, sorted straight into the design
    if order is None:
        Z[:, :d] = X
    else:
        np.take(X, order, axis=0, out=Z[:, :d], mode="clip")
    Z[:, d] = 1.0
    return Z, target, weight, _GroupLayout(g, G, d + 1)


def weighted_logistic_objective(coef, intercept, X, target, weight=None, *, l2: float = 0.0,
                                penalize_intercept: bool = True, groups=None, n_groups=None):
    r"""The penalised weighted log-likelihood :math:`J(\beta, \beta_0)` and its gradient.

    Parameters
    ----------
    coef : array-like of shape (k,) or (G, k)
    intercept : float or array-like of shape (G,)
    X, target, weight, l2, penalize_intercept, groups, n_groups
        As in :func:`fit_weighted_logistic`.

    Returns
    -------
    value : float or ndarray of shape (G,)
    grad_coef : ndarray of shape (k,) or (G, k)
    grad_intercept : float or ndarray of shape (G,)
    """
    X, target, weight, g, G = _check_inputs(X, target, weight, groups, n_groups)
    theta = np.column_stack([np.atleast_2d(np.asarray(coef, dtype=float)).reshape(G, -1),
                             np.asarray(intercept, dtype=float).reshape(G)])
    Z, target, weight, layout = _prepare(X, target, weight, g, G)
    pen = _penalty_vector(l2, X.shape[1], penalize_intercept)
    value = _objective(theta, Z, target, weight, layout, pen)
    grad, _ = _gradient(theta, Z, target, weight, layout, pen)
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
    X : array-like of shape (n_rows, k)
        Features of each row (an intercept column is added internally).
    target : array-like of shape (n_rows,)
        Soft targets :math:`\mu_i \in [0, 1]` (hard 0/1 labels are a special case).
    weight : array-like of shape (n_rows,), optional
        Non-negative row weights :math:`v_i` (default all one).
    l2 : float, default 0
        Ridge penalty :math:`\lambda \ge 0`: :math:`\frac{\lambda}{2}\lVert \beta\rVert^2`
        is subtracted (plus :math:`\frac{\lambda}{2} \beta_0^2` if ``penalize_intercept``).
    penalize_intercept : bool, default True
        Whether the intercept is penalised too.
    groups : array-like of int, shape (n_rows,), optional
        Fit independent problems at once: row ``r`` belongs to problem ``groups[r]``.
        A group with no rows keeps its initial parameters when ``l2 == 0`` and
        shrinks to zero otherwise.
    n_groups : int, optional
        Number of problems (default ``max(groups) + 1``).
    coef_init, intercept_init : array-like, optional
        Starting point (default zero), shapes ``(k,)`` / scalar, or ``(G, k)`` /
        ``(G,)`` with groups. The result is never worse than the start (the last,
        polishing step excepted, by at most ``1e-12 * max(1, |J|)``, rounding level).
    max_iter : int, default 100
        At most this many Newton iterations.
    tol : float, default 1e-10
        A group stops when half its squared Newton decrement,
        :math:`\tfrac12 \nabla J^\top (-\nabla^2 J)^{-1} \nabla J` -- the
        predicted gain of a full Newton step -- is at most ``tol``; that last
        full step is still taken unless it lowers :math:`J` by more than rounding
        (``1e-12 * max(1, |J|)``), which (Newton converging quadratically) leaves
        the gradient at rounding level. (Its predicted gain is below the rounding
        error of :math:`J`, so a strict "does not lower" test would let the order
        of floating-point summation decide, and the fit differ between machines.)

    Returns
    -------
    LogisticFit
        ``coef``, ``intercept``, ``objective`` (the maximised :math:`J`),
        ``n_iter``, ``converged``.

    Notes
    -----
    Each iteration solves :math:`-\nabla^2 J\,\Delta = \nabla J` for the step
    :math:`\Delta` per group, with a tiny amount (``1e-12`` times the largest
    diagonal entry, at least ``1e-12``) added to the diagonal so that singular problems -- no rows,
    collinear features, ``l2 = 0`` -- still give an ascent direction. With
    :math:`\theta = (\beta, \beta_0)`, the step :math:`2^{-q}\Delta` is tried for
    :math:`q = 0, 1, 2, \dots` until
    :math:`J(\theta + 2^{-q}\Delta) \ge J(\theta) + 10^{-4}\, 2^{-q}\, \nabla J^\top\Delta`;
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
    Z, target, weight, layout = _prepare(X, target, weight, g, G)
    pen = _penalty_vector(l2, d, penalize_intercept)
    obj = _objective(theta, Z, target, weight, layout, pen)
    active = np.ones(G, dtype=bool)
    n_iter = 0
    while True:
        step, decrement = _newton_step(theta, Z, target, weight, layout, pen, active)
        done = active & (0.5 * decrement <= tol)
        if done.any() and n_iter < max_iter:
            # polish: Newton converges quadratically, so one more full step from here
            # lands at the maximiser to rounding error; take it unless it loses more than
            # rounding. Its predicted gain (at most tol) is below the rounding error of J
            # itself, so "trial_obj >= obj" would be decided by rounding: the fit would
            # then depend on the order of summation (BLAS, CPU), which it must not
            trial = theta + np.where(done, 1.0, 0.0)[:, None] * step
            trial_obj = _objective(trial, Z, target, weight, layout, pen)
            ok = done & (trial_obj >= obj - POLISH_SLACK * np.maximum(1.0, np.abs(obj)))
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
            trial_obj = _objective(trial, Z, target, weight, layout, pen)
            ok = pending & (trial_obj >= obj + 1e-4 * t * decrement)
            new_theta[ok], new_obj[ok] = trial[ok], trial_obj[ok]
            pending &= ~ok
            if not pending.any():
                break
            t = np.where(pending, 0.5 * t, 0.0)
        # a group whose line search failed sits at the limit of floating-point
        # precision (J is concave): it stops there and counts as converged
        active &= ~pending
        theta, obj = new_theta, new_obj
    converged = not active.any()
    if groups is None:
        return LogisticFit(theta[0, :d].copy(), float(theta[0, d]), float(obj[0]), n_iter,
                           converged)
    return LogisticFit(theta[:, :d].copy(), theta[:, d].copy(), obj, n_iter, converged)
