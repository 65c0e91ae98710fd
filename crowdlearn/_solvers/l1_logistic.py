r"""Weighted L1-penalised logistic regression with soft targets, by proximal Newton steps.

The M-step of the sparse experts model (:mod:`crowdlearn.features.sparse_experts`) is two
weighted logistic regressions whose targets are posterior probabilities and
whose coefficients carry an L1 penalty. This module solves such problems. The letters
are those of :mod:`crowdlearn._solvers.logistic` (the ridge solver), with the book's
notation for features (:math:`j = 1, \dots, k`): in the sparse experts M-step the
classifier's problem has one row per item :math:`i`, targets :math:`\mu_i` and
coefficients :math:`(\beta, \beta_0)`; the reliability problem has one row per label
:math:`(i, r)`, targets :math:`c_{ir}`, coefficients :math:`w` (the shared slope, with
its penalty :math:`\lambda_w` in the role of :math:`\lambda` below) and one intercept
group per expert, :math:`\alpha_r`.

Below, written for the classifier's problem, row :math:`i` (an observation) has the soft
target :math:`\mu_i \in [0, 1]`, the weight :math:`v_i \ge 0`, a fixed offset
:math:`\mathrm{off}_i`, the features :math:`x^{(i)} \in \mathbb{R}^k` and an intercept
group :math:`g(i)`, whose intercept is :math:`\alpha_g`; the problem is

.. math::

    \begin{aligned}
    &\max_{\alpha, \beta}\; J(\alpha, \beta) = E(\alpha, \beta)
    - \lambda \sum_{j\ \mathrm{penalised}} |\beta_j|, \\
    &E = \sum_i v_i \big[ \mu_i \log\sigma(a_i) + (1 - \mu_i) \log\sigma(-a_i) \big], \\
    &a_i = \mathrm{off}_i + \alpha_{g(i)} + \beta^\top x^{(i)},
    \end{aligned}

where :math:`E` is the weighted log-likelihood (the unpenalised part of the
objective; in an M-step, the energy) and the intercepts :math:`\alpha_g` are never
penalised (one intercept, :math:`\beta_0`, by default; ``intercept_groups`` gives one per
group, e.g. one per expert, which is the same as one-hot indicator columns left
unpenalised). Since
:math:`\mu_i\log\sigma(a_i) + (1-\mu_i)\log\sigma(-a_i) = \mu_i a_i + \log\sigma(-a_i)`,

.. math::

    \begin{aligned}
    \frac{\partial E}{\partial \beta_j} &= \sum_i v_i (\mu_i - \sigma(a_i))\, x^{(i)}_j, \\
    \frac{\partial E}{\partial \alpha_g} &= \sum_{i:\, g(i) = g}
    v_i (\mu_i - \sigma(a_i)), \\
    -\nabla^2 E &= \sum_i v_i \sigma(a_i)\sigma(-a_i)\, \tilde x^{(i)} \tilde x^{(i)\top} ,
    \end{aligned}

with :math:`\tilde x^{(i)}` the row :math:`x^{(i)}` preceded by the one-hot indicator of
its intercept group :math:`g(i)`.

:math:`J` is concave, so :math:`(\alpha, \beta)` maximises it iff the KKT
(subgradient) conditions hold: :math:`\partial E/\partial \alpha_g = 0`,
:math:`\partial E/\partial\beta_j = 0` for unpenalised :math:`j`, and for
penalised :math:`j`

.. math::

    \Big|\frac{\partial E}{\partial \beta_j}\Big| \le \lambda \text{ if } \beta_j = 0,
    \qquad
    \frac{\partial E}{\partial \beta_j} = \lambda\, \operatorname{sign}(\beta_j)
    \text{ otherwise.}

:func:`kkt_violation` measures how far a point is from satisfying them.

**Algorithm** (glmnet-style, as a proximal Newton method). At the current point
the log-likelihood :math:`E` is replaced by its second-order Taylor expansion (the IRLS
quadratic), and the penalised quadratic is maximised by cyclic coordinate
descent on its Gram matrix :math:`\mathbf{H} = -\nabla^2 E` -- each coordinate update is a
soft-thresholding,
:math:`\beta_j \leftarrow
\operatorname{soft}(\mathbf{H}_{jj}\beta_j + \partial_j, \lambda)/\mathbf{H}_{jj}`
with :math:`\operatorname{soft}(h, \lambda) = \operatorname{sign}(h)\max(|h| - \lambda, 0)`
and :math:`\partial_j` the :math:`j`-th entry of the gradient of the quadratic model
(``c`` in the code). A few sweeps find the active set
(non-zero and unpenalised coordinates) and its signs; then the quadratic is
maximised exactly on the active set with the signs fixed (one linear solve,
stopping where a coordinate would cross zero), and the sweeps resume until the
model's KKT conditions hold. The intercepts share no observation, so their
block of the Hessian is diagonal: they are updated all at once, and eliminated
from the linear solve (a Schur complement), which keeps thousands of intercepts
cheap. Only the Gram columns of coordinates that move are computed, many at a
time by one BLAS product (all of them by one ``syrk`` when most are needed), and
the Cholesky factor of one round's solve is reused by the next (see
:class:`_ActiveSolver`). With :math:`\theta = (\alpha, \beta)` the current point,
the step :math:`\Delta` to the maximiser of the model is then damped by a backtracking
line search: the step
:math:`2^{-q}\Delta`, :math:`q = 0, 1, 2, \dots`, is accepted when
:math:`J(\theta + 2^{-q}\Delta) \ge J(\theta) + 10^{-4}\, 2^{-q}\, \Delta J` with
the predicted gain :math:`\Delta J`, :math:`\nabla E^\top \Delta` minus :math:`\lambda`
times the change of the penalised coefficients' L1 norm along :math:`\Delta`, positive;
so every accepted step raises :math:`J` and
the result is never worse than the start, up to rounding once the predicted gain is below
:math:`10^{-13}|J|` (which keeps the EM that calls it monotone). The columns are
centred internally (the intercepts absorb the shift), which makes coordinate
descent fast when the features have non-zero means; the problem solved is
unchanged. The outer loop stops when the largest KKT violation is at most
``tol`` times the total weight :math:`\sum_i v_i` (a tolerance on the gradient
of the *mean* log-likelihood).

``rows`` lets many observations share one feature row (in the sparse experts
M-step every (item, expert) label uses the item's features :math:`x^{(i)}`): the Gram
matrix is then accumulated over the distinct rows, not the observations.

An EM solves such problems again and again, with new targets and starts but the same
features, rows, weights and intercept groups (the M-steps of the sparse experts model):
:class:`_PreparedProblem` checks that fixed part and centres the features once for all of
them, and its ``point`` leaves out what only a report of the fit needs. The arithmetic is
that of :func:`fit_l1_logistic`, so are the results.

Examples
--------
>>> import numpy as np
>>> from crowdlearn._solvers.l1_logistic import fit_l1_logistic, kkt_violation
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 5))
>>> y = (rng.random(200) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
>>> fit = fit_l1_logistic(X, y, lam=20.0)
>>> np.flatnonzero(fit.coef).tolist(), fit.converged
([0], True)
>>> bool(kkt_violation(X, y, lam=20.0, coef=fit.coef, intercept=fit.intercept) < 1e-6)
True
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.linalg import cho_solve, solve_triangular
from scipy.linalg.blas import daxpy as axpy
from scipy.linalg.lapack import dpotrf as potrf
from scipy.special import expit, log_expit

from crowdlearn._validation import check_flag, check_scalar

__all__ = ["L1LogisticFit", "fit_l1_logistic", "kkt_violation", "l1_logistic_objective",
           "l1_logistic_gradient", "l1_logistic_lambda_max"]


class L1LogisticFit(NamedTuple):
    r"""The result of :func:`fit_l1_logistic`.

    ``coef`` (:math:`\beta`) has shape ``(k,)``; ``intercept`` (:math:`\beta_0`) is a
    float (``0.0`` without an intercept) or, with ``intercept_groups``, an array of shape
    ``(G,)``; ``objective`` is the penalised objective :math:`J` at the returned point;
    ``n_iter`` the number of (proximal Newton) iterations; ``converged`` whether
    the KKT tolerance was met; ``kkt`` the largest KKT violation at the returned
    point (in gradient units, i.e. not divided by the total weight).
    """

    coef: np.ndarray
    intercept: np.ndarray | float
    objective: float
    n_iter: int
    converged: bool
    kkt: float


class _Problem(NamedTuple):
    X: np.ndarray          # (n_rows, k) distinct feature rows
    rows: np.ndarray | None  # (U,) row of each observation, or None (observation u uses row u)
    target: np.ndarray     # (U,) the soft targets mu_i
    weight: np.ndarray     # (U,) the weights v_i
    offset: np.ndarray     # (U,) the offsets off_i
    groups: np.ndarray | None  # (U,) intercept group g(u), None for one intercept
    G: int                 # number of intercepts (0 without intercept)
    lam: np.ndarray        # (k,) penalty per column (0 for unpenalised)


def _as_float_vector(value, name, n):
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {value!r}") from None
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf at position "
                         f"{int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr


def _check_target(target, n: int) -> np.ndarray:
    target = _as_float_vector(target, "target", n)
    if (target < 0).any() or (target > 1).any():
        raise ValueError("target must hold probabilities in [0, 1]")
    return target


def _check_penalize(penalize, d: int) -> np.ndarray:
    if penalize is None:
        return np.ones(d, dtype=bool)
    pen = np.asarray(penalize)
    if pen.shape != (d,) or pen.dtype.kind != "b":
        raise ValueError(f"penalize must be a boolean array of shape ({d},), got "
                         f"{pen.dtype} of shape {pen.shape}")
    return pen


def _check_problem(X, target, weight, lam, offset, penalize, fit_intercept, intercept_groups,
                   n_intercepts, rows) -> _Problem:
    """The checked problem; ``target=None`` leaves it out (``None`` in the result), for a
    :class:`_PreparedProblem` that is given one target after another."""
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must be a numeric 2-D array: {exc}") from None
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (n_rows, n_features), got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or inf")
    d = X.shape[1]
    if rows is None:
        N = X.shape[0]
    else:
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError("rows must be a 1-D integer array (the feature row of each "
                             "observation)")
        rows = rows.astype(np.intp)
        N = rows.shape[0]
        if N and (rows.min() < 0 or rows.max() >= X.shape[0]):
            raise ValueError(f"rows must index the {X.shape[0]} rows of X, got values from "
                             f"{rows.min()} to {rows.max()}")
    if N == 0:
        raise ValueError("there are no observations")
    if target is not None:
        target = _check_target(target, N)
    weight = np.ones(N) if weight is None else _as_float_vector(weight, "weight", N)
    if (weight < 0).any():
        raise ValueError("weight must be non-negative")
    offset = np.zeros(N) if offset is None else _as_float_vector(offset, "offset", N)
    check_scalar(lam, "lam", low=0.0)
    lam_vec = np.where(_check_penalize(penalize, d), float(lam), 0.0)
    check_flag(fit_intercept, "fit_intercept")
    groups = None
    if not fit_intercept:
        if intercept_groups is not None:
            raise ValueError("intercept_groups needs fit_intercept=True")
        G = 0
    elif intercept_groups is None:
        G = 1
    else:
        groups = np.asarray(intercept_groups)
        if groups.shape != (N,) or groups.dtype.kind not in "iu":
            raise ValueError(f"intercept_groups must be an integer array of shape ({N},)")
        groups = groups.astype(np.intp)
        G = int(n_intercepts) if n_intercepts is not None else int(groups.max()) + 1
        if G < 1:
            raise ValueError("n_intercepts must be at least 1")
        if groups.min() < 0 or groups.max() >= G:
            raise ValueError(f"intercept_groups must lie in [0, {G}), got values from "
                             f"{groups.min()} to {groups.max()}")
        if G == 1:
            groups = None
    return _Problem(X, rows, target, weight, offset, groups, G, lam_vec)


def _row_sum(prob: _Problem, values: np.ndarray) -> np.ndarray:
    """Sum per-observation values onto the feature rows, shape ``(n_rows,)``."""
    if prob.rows is None:
        return values
    return np.bincount(prob.rows, weights=values, minlength=prob.X.shape[0])


def _group_sum(prob: _Problem, values: np.ndarray) -> np.ndarray:
    if prob.G == 0:
        return np.zeros(0)
    if prob.groups is None:
        return np.array([values.sum()])
    return np.bincount(prob.groups, weights=values, minlength=prob.G)


def _linear(prob: _Problem, Xc: np.ndarray, b: np.ndarray, beta: np.ndarray) -> np.ndarray:
    xb = Xc @ beta
    u = prob.offset + (xb if prob.rows is None else xb[prob.rows])
    if prob.G == 1:
        u = u + b[0]
    elif prob.G > 1:
        u = u + b[prob.groups]
    return u


def _loglik(prob: _Problem, u: np.ndarray) -> float:
    # z log sigma(a) + (1 - z) log sigma(-a) = z a + log sigma(-a), with the targets z
    # and the linear predictor a held in u
    return float(prob.weight @ (prob.target * u + log_expit(-u)))


def _penalty(prob: _Problem, beta: np.ndarray) -> float:
    return float(prob.lam @ np.abs(beta))


def _gradient(prob: _Problem, Xc: np.ndarray, u: np.ndarray, p: np.ndarray | None = None):
    """``(dE/d intercepts, dE/d beta)`` at the linear predictor ``u``; ``p`` is
    ``expit(u)`` if the caller has it."""
    r = prob.weight * (prob.target - (expit(u) if p is None else p))
    return _group_sum(prob, r), Xc.T @ _row_sum(prob, r)


def _violation(grad: np.ndarray, theta: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Per-coordinate KKT violation of ``max E(theta) - sum lam_j |theta_j|``."""
    nz = theta != 0
    return np.where(nz, np.abs(grad - lam * np.sign(theta)),
                    np.maximum(np.abs(grad) - lam, 0.0))


class _Design(NamedTuple):
    """What the fixed part of a problem -- features, rows, weights, offsets, intercept groups
    -- determines; computed once per :func:`fit_l1_logistic` call, or once for all the fits
    of a :class:`_PreparedProblem` (the M-steps of an EM differ only in targets and starts)."""

    c: np.ndarray      # (k,) the weighted column means the features are centred at
    Xc: np.ndarray     # (n_rows, k) the centred features X - c
    Xc_sq: np.ndarray  # (n_rows, k) Xc * Xc
    total: float       # sum of the weights
    pattern: tuple | None  # _group_pattern(prob), for _Curvature


def _group_pattern(prob: _Problem):
    """The sparsity pattern of :class:`_Curvature`'s ``(G, n_rows)`` matrix of group weights
    on the feature rows, as ``(order, M)``: with ``M.data`` set to ``w[order]`` for the
    observations' weights ``w``, ``M`` is the CSR matrix built from ``(w, (groups, rows))``
    -- the same matrix, stored in the same order -- without sorting the observations again
    at every call (``M`` is overwritten by every :class:`_Curvature` given it). ``None``
    with fewer than two groups, or when observations share both group and row (their
    weights would be summed)."""
    if prob.G < 2:
        return None
    U = prob.groups.shape[0]
    rows = np.arange(U) if prob.rows is None else prob.rows
    label = sparse.csr_array((np.arange(1.0, U + 1.0), (prob.groups, rows)),
                             shape=(prob.G, prob.X.shape[0]))
    if label.nnz != U:
        return None
    order = label.data.astype(np.intp) - 1
    label.data[:] = 0.0
    return order, label


def _design(prob: _Problem) -> _Design:
    """Centre the columns (the intercepts absorb the shift): ``u = offset + (b + c'beta) +
    (X - c) beta``."""
    Xraw, G = prob.X, prob.G
    d = Xraw.shape[1]
    if G > 0 and d > 0:
        w_rows = _row_sum(prob, prob.weight)
        c = (w_rows @ Xraw) / w_rows.sum() if w_rows.sum() > 0 else Xraw.mean(axis=0)
        Xc = Xraw - c
    else:
        c = np.zeros(d)
        Xc = Xraw
    return _Design(c, Xc, Xc * Xc, float(prob.weight.sum()), _group_pattern(prob))


class _Curvature:
    r"""``H = -Hessian`` of the log-likelihood :math:`E` in ``theta`` :math:`= (\alpha,
    \beta)`, by blocks.

    With the curvature weights :math:`v_i\sigma(a_i)\sigma(-a_i)` and the
    features :math:`x^{(i)}` centred (``Xc``), :math:`\mathbf{H} = -\nabla^2 E` has the blocks

    .. math::

        \mathbf{H}_{gg} = \sum_{i:\,g(i) = g} v_i\sigma(a_i)\sigma(-a_i),\quad
        \mathbf{H}_{jg} = \sum_{i:\,g(i) = g} v_i\sigma(a_i)\sigma(-a_i)\, x^{(i)}_j,\quad
        \mathbf{H}_{jj'} = \sum_i v_i\sigma(a_i)\sigma(-a_i)\, x^{(i)}_j x^{(i)}_{j'} :

    the intercept block is diagonal, since each observation has one intercept.
    ``D`` (its diagonal) and ``B`` (``Bt`` holds the block of the :math:`\mathbf{H}_{jg}`,
    transposed, shape ``(G, d)``) are formed at
    once -- one product of a sparse ``(G, n_rows)`` matrix of summed weights with
    the features, ``O(n k)`` -- and the diagonal of ``C`` too. Columns of ``C``
    are formed on demand, many at a time (:meth:`columns`): one BLAS product
    ``Xc.T @ (w_rows * Xc[:, J])``, ``O(n k |J|)``, or, when most are needed,
    the whole of ``C`` by one symmetric rank-k update (``syrk``). Coordinate
    descent on a sparse problem needs only the columns of the coordinates that
    move. A tiny ridge on the diagonal keeps empty columns and groups finite.

    ``pattern`` (:func:`_group_pattern`) spares building the sparse matrix afresh, and
    ``p``, ``expit(u)`` if the caller has it, one evaluation of the logistic function;
    neither changes a number.
    """

    def __init__(self, prob: _Problem, Xc: np.ndarray, Xc_sq: np.ndarray, u: np.ndarray,
                 pattern=None, p: np.ndarray | None = None):
        self.Xc = Xc
        w = prob.weight * (expit(u) if p is None else p) * expit(-u)
        self.w_rows = _row_sum(prob, w)
        G, d = prob.G, Xc.shape[1]
        self.G, self.d = G, d
        diag = np.empty(G + d)
        diag[G:] = Xc_sq.T @ self.w_rows
        if G == 0:
            self.Bt = np.zeros((0, d))
        elif G == 1:
            diag[0] = w.sum()
            self.Bt = (Xc.T @ self.w_rows)[None]
        else:
            diag[:G] = np.bincount(prob.groups, weights=w, minlength=G)
            # (G, n_rows): the weight of each group on each feature row (duplicates summed)
            if pattern is None:
                rows = np.arange(w.shape[0]) if prob.rows is None else prob.rows
                M = sparse.csr_array((w, (prob.groups, rows)), shape=(G, Xc.shape[0]))
            else:  # the same matrix, stored in the same order: only its values are new
                order, M = pattern
                np.take(w, order, out=M.data)
            self.Bt = np.asarray(M @ Xc).reshape(G, d)
        diag += 1e-12 * max(float(diag.max(initial=0.0)), 1e-300) + 1e-300
        self.diag = diag
        self.D = diag[:G]
        # row j holds column j of C (C is symmetric); rows are filled as they are needed
        self.C = np.empty((d, d))
        self.rows = list(self.C)  # views of the rows, for the coordinate-descent loop
        self.have = np.zeros(d, dtype=bool)

    def columns(self, J: np.ndarray) -> None:
        """Make sure the columns ``J`` (feature indices) of ``C`` are there."""
        missing = J[~self.have[J]]
        if missing.size == 0:
            return
        Xc, d = self.Xc, self.d
        if 2 * missing.size >= d:  # most of C: one symmetric rank-k update for all of it
            A = Xc * np.sqrt(self.w_rows)[:, None]
            if missing.size == d:
                np.matmul(A.T, A, out=self.C)
                self.C.reshape(d * d)[::d + 1] = self.diag[self.G:]
                self.have[:] = True
                return
            block = (A.T @ A)[missing]
        else:
            block = ((self.w_rows[:, None] * Xc[:, missing]).T @ Xc)
        block[np.arange(missing.size), missing] = self.diag[self.G + missing]
        self.C[missing] = block
        self.have[missing] = True

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``C`` (a feature index)."""
        if not self.have[j]:
            col = self.Xc.T @ (self.w_rows * self.Xc[:, j])
            col[j] = self.diag[self.G + j]
            self.C[j] = col
            self.have[j] = True
        return self.C[j]


class _ActiveSolver:
    r"""Solves the active-set systems of one coordinate descent, reusing factorizations.

    Eliminating the (diagonal) intercept block of :math:`\mathbf{H}` leaves its Schur
    complement ``S = C - B D^-1 B^T`` on the features; a round of
    :func:`_coordinate_descent` solves a linear system with the block ``S[A, A]`` of its
    active features ``A``. ``H`` does not change within one coordinate descent and the
    active set changes by a few coordinates from one round to the next, so the Cholesky
    factor of the previous round is kept, with its coordinates ordered by decreasing
    :math:`|\beta_j|` at the model's current iterate (unpenalised ones first): the coordinates most likely to leave sit at the end. The
    leading block of that factor whose coordinates are all still active is the factor
    of the same block of the new ``S[A, A]``; only the rows of the other coordinates
    are computed (one triangular solve and one Cholesky factorisation of their Schur
    complement) -- the arithmetic of a blocked Cholesky factorisation, so the result is
    the same up to rounding. When little would be reused, or a factorisation fails
    (a matrix singular to rounding), the whole block is factorised (LU as a last resort).
    The factors live in two buffers used in turn, so that no round allocates (and
    page-faults in) a new matrix.
    """

    def __init__(self, H: _Curvature):
        self.H = H
        self.order = None  # feature indices, in the order of the rows of L
        self.L = None      # lower Cholesky factor of S[order][:, order] (upper part unused)
        self._buffers = [np.empty(0), np.empty(0)]
        self._current = 0  # the buffer that holds L

    def _block(self, rows: np.ndarray, cols: np.ndarray, out=None) -> np.ndarray:
        """``S[rows][:, cols]``, into ``out`` (C-ordered) if given."""
        H = self.H
        out = np.take(H.C[rows], cols, axis=1, out=out, mode="clip")  # row j of H.C: column j
        if H.G:
            out -= (H.Bt[:, rows] / H.D[:, None]).T @ H.Bt[:, cols]
        return out

    def _spare(self, m: int) -> np.ndarray:
        """An ``(m, m)`` Fortran-ordered array in the buffer that does not hold ``L``."""
        k = 1 - self._current
        if self._buffers[k].size < m * m:
            self._buffers[k] = np.empty(m * m)
        return self._buffers[k][:m * m].reshape((m, m), order="F")

    def _extend(self, p0: int, tail: np.ndarray):
        """The factor for ``order[:p0]`` followed by ``tail``, from the current one."""
        L_old, m, t = self.L, p0 + tail.size, tail.size
        prefix = self.order[:p0]
        # rows of the new coordinates: L21 = S21 L11^-T; the first p0 rows of a forward
        # substitution with the whole old factor involve L11 alone
        rhs = np.zeros((L_old.shape[0], t), order="F")
        rhs[:p0] = self._block(tail, prefix).T                # S is symmetric
        L21t = solve_triangular(L_old, rhs, lower=True, overwrite_b=True,
                                check_finite=False)[:p0]
        S22 = self._block(tail, tail)
        S22 -= L21t.T @ L21t
        L22, info = potrf(S22, lower=1, clean=0)
        if info != 0:
            return None
        L = self._spare(m)
        L[p0:, p0:] = L22
        L[:p0, :p0] = L_old[:p0, :p0]
        L[p0:, :p0] = L21t.T
        return L

    def solve(self, act: np.ndarray, priority: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        """``x`` with ``S[act][:, act] x = r`` (``act`` sorted); ``None`` if that fails.

        ``priority`` (one per active coordinate) orders a new factorisation: larger first.
        """
        m = act.size
        if m == 0:
            return np.zeros(0)
        L = None
        if self.order is not None:
            in_act = np.zeros(self.H.d, dtype=bool)
            in_act[act] = True
            keep = in_act[self.order]
            p0 = self.order.size if keep.all() else int(np.argmin(keep))
            t, m_old = m - p0, self.order.size
            # cost of extending (triangular solve with the old factor, new block) against
            # factorising afresh
            if p0 and m_old * m_old * t + p0 * t * t + t ** 3 / 3 < 0.5 * m ** 3 / 3:
                in_act[self.order[:p0]] = False
                rest = np.flatnonzero(in_act[act])
                tail = act[rest[np.argsort(-priority[rest], kind="stable")]]
                L = self._extend(p0, tail)
                if L is not None:
                    order = np.concatenate([self.order[:p0], tail])
        if L is None:
            order = act[np.argsort(-priority, kind="stable")]
            L = self._spare(m)
            self._block(order, order, out=L.T)  # S is symmetric: fill L with S^T = S
            L, info = potrf(L, lower=1, overwrite_a=1, clean=0)
            if info != 0:
                self.order = self.L = None
                pos = np.searchsorted(act, order)
                try:
                    x = np.linalg.solve(self._block(order, order), r[pos])
                except np.linalg.LinAlgError:
                    return None
                out = np.empty(m)
                out[pos] = x
                return out
        self.order, self.L, self._current = order, L, 1 - self._current
        pos = np.searchsorted(act, order)  # where each row of L sits in act
        out = np.empty(m)
        out[pos] = cho_solve((L, True), r[pos], check_finite=False)
        return out


def _coordinate_descent(H: _Curvature, grad, theta, lam, tol, max_rounds=200, sweeps=3):
    """Maximise ``grad'(v - theta) - (v - theta)'H(v - theta)/2 - sum lam_j |v_j|`` over ``v``.

    Rounds of: a few sweeps of cyclic coordinate descent with soft-thresholding (which
    find the active set -- the non-zero and unpenalised coordinates -- and their
    signs), then the exact maximiser on the active set with those signs fixed, by one
    linear solve. If that solve would move a penalised coordinate through zero, the
    move stops where the first one reaches zero and that coordinate leaves the active
    set. Stops when the model's KKT violation is at most ``tol``. The linear solve
    makes ill-conditioned problems (small penalties, correlated columns) as fast as
    well-conditioned ones; coordinate descent alone can need thousands of sweeps.

    The intercepts come first in each sweep. They are unpenalised, and no two of
    them share an observation (their block of ``H`` is diagonal), so updating them
    one after the other is the same as updating them all at once: one vectorised
    step. The linear solve eliminates them the same way (a Schur complement on the
    active features), so neither costs more than linear time in the number of
    intercepts. The columns of ``H`` that the sweeps will need (the non-zero,
    unpenalised and KKT-violating coordinates) are formed at the start, by one
    BLAS product.
    """
    G = H.G
    v = theta.copy()
    c = grad.copy()  # gradient of the quadratic model at v
    vb, vf = v[:G], v[G:]  # views: intercepts, features
    cb, cf = c[:G], c[G:]
    D, Bt = H.D, H.Bt
    lam_f = lam[G:]
    d = lam_f.shape[0]
    diag_arr = H.diag[G:]
    diag_f = diag_arr.tolist()
    lam_l = lam_f.tolist()
    H.columns(np.flatnonzero((vf != 0.0) | (lam_f == 0.0) | (np.abs(cf) > lam_f)))
    solver = _ActiveSolver(H)

    def sweep():
        if G:
            new = (D * vb + cb) / D
            delta = new - vb
            vb[:] = new
            cb[:] -= delta * D
            cf[:] -= delta @ Bt
        have = H.have.tolist()
        values = vf.tolist()
        moved, moves = [], []
        for j, (hjj, lj, row) in enumerate(zip(diag_f, lam_l, H.rows)):
            vj = values[j]
            z = hjj * vj + cf.item(j)
            if z > lj:
                new = (z - lj) / hjj
            elif z < -lj:
                new = (z + lj) / hjj
            else:
                new = 0.0
            delta = new - vj
            if delta != 0.0:
                values[j] = new
                if not have[j]:
                    # form, in one product, the missing columns this sweep is likely
                    # to need: the coordinates from j on that are non-zero or violate
                    # their threshold now (j is one of them)
                    z_rest = diag_arr[j:] * vf[j:] + cf[j:]
                    likely = (vf[j:] != 0.0) | (np.abs(z_rest) > lam_f[j:])
                    H.columns(j + np.flatnonzero(likely))
                    have = H.have.tolist()
                axpy(row, cf, d, -delta)  # cf -= delta * C[:, j], in place
                moved.append(j)
                moves.append(delta)
        vf[:] = values
        if G and moved:  # the features' effect on the intercepts' gradient, at once
            cb[:] -= Bt[:, moved] @ np.array(moves)

    for _ in range(max_rounds):
        for _ in range(sweeps):
            sweep()
            if _violation(c, v, lam).max() <= tol:
                return v
        act_f = np.flatnonzero((vf != 0.0) | (lam_f == 0.0))
        if G + act_f.size == 0:
            continue
        H.columns(act_f)
        B_A = Bt[:, act_f]                                    # (G, |A_f|)
        # c_A must become lam_A sign(v_A): zero for the intercepts
        r_b = cb.copy()
        r_f = cf[act_f] - lam_f[act_f] * np.sign(vf[act_f])
        # eliminate the (diagonal) intercept block: the Schur complement on the features
        priority = np.where(lam_f[act_f] == 0.0, np.inf, np.abs(vf[act_f]))
        delta_f = solver.solve(act_f, priority, r_f - B_A.T @ (r_b / D))
        if delta_f is None:
            continue
        delta_b = (r_b - B_A @ delta_f) / D
        new = vf[act_f] + delta_f
        crossing = (lam_f[act_f] > 0) & (np.sign(new) != np.sign(vf[act_f]))
        t = 1.0
        if crossing.any():
            old_c = vf[act_f][crossing]
            ratios = old_c / (old_c - new[crossing])
            k = int(np.argmin(ratios))
            t = float(ratios[k])
        step_b, step_f = t * delta_b, t * delta_f
        vb += step_b
        vf[act_f] += step_f
        if crossing.any():
            vf[act_f[np.flatnonzero(crossing)[k]]] = 0.0
        cb -= D * step_b + B_A @ step_f
        if H.have.all():  # all of C is there: no need to copy the active rows out
            full = np.zeros(H.d)
            full[act_f] = step_f
            cf -= step_b @ Bt + full @ H.C
        else:
            cf -= step_b @ Bt + step_f @ H.C[act_f]
    return v


def fit_l1_logistic(X, target, weight=None, *, lam: float, offset=None, penalize=None,
                    fit_intercept: bool = True, intercept_groups=None, n_intercepts=None,
                    rows=None, coef_init=None, intercept_init=None, tol: float = 1e-8,
                    max_iter: int = 100) -> L1LogisticFit:
    r"""Maximise the L1-penalised weighted log-likelihood of a logistic regression.

    Parameters
    ----------
    X : array-like of shape (n_rows, k)
        Features (an intercept is added internally unless ``fit_intercept=False``).
        Observation ``u`` uses row ``u``, or row ``rows[u]`` when ``rows`` is given.
    target : array-like of shape (U,)
        Soft targets :math:`\mu_i \in [0, 1]`.
    weight : array-like of shape (U,), optional
        Non-negative weights :math:`v_i` (default one).
    lam : float
        The L1 penalty :math:`\lambda \ge 0` on the penalised coefficients.
    offset : array-like of shape (U,), optional
        Fixed offsets :math:`\mathrm{off}_i` added to the linear predictor :math:`a_i`.
    penalize : array-like of bool, shape (k,), optional
        Which columns are penalised (default all); unpenalised columns are fitted
        freely, like the intercepts.
    fit_intercept : bool, default True
    intercept_groups : array-like of int, shape (U,), optional
        One unpenalised intercept per group:
        :math:`a_i = \mathrm{off}_i + \alpha_{g(i)} + \beta^\top x^{(i)}`.
    n_intercepts : int, optional
        Number of groups (default ``max(intercept_groups) + 1``); a group with no
        observation keeps its initial intercept.
    rows : array-like of int, shape (U,), optional
        Feature row of each observation (several observations may share a row).
    coef_init, intercept_init : array-like, optional
        Warm start: shapes ``(k,)`` and scalar (or ``(G,)`` with groups); default
        zero coefficients and, for a single intercept without offsets, the
        intercept-only maximiser. The result is never worse than the start.
    tol : float, default 1e-8
        Stop when the largest KKT violation is at most ``tol * sum(weight)``.
    max_iter : int, default 100
        At most this many proximal Newton iterations.

    Returns
    -------
    L1LogisticFit

    Raises
    ------
    ValueError
        On shapes that do not match, NaN or inf, targets outside ``[0, 1]``,
        negative weights or penalty.

    Notes
    -----
    Without a penalty and with separable targets the maximiser does not exist; the
    iterates then grow until ``max_iter`` and ``converged`` is false.
    """
    prob = _check_problem(X, target, weight, lam, offset, penalize, fit_intercept,
                          intercept_groups, n_intercepts, rows)
    check_scalar(tol, "tol", low=0.0)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=0)
    return _fit(prob, _design(prob), coef_init, intercept_init, tol, max_iter)


class _PreparedProblem:
    """Problems of :func:`fit_l1_logistic` that share their fixed part and differ in their
    targets, penalty and starts -- the M-steps of an EM: the features, ``rows``, weights,
    offsets, penalised columns and intercept groups are checked, and the centred features
    formed, once; :meth:`fit` then gives what :func:`fit_l1_logistic` gives with the same
    arguments, by the same arithmetic.

    Parameters
    ----------
    X, weight, offset, penalize, fit_intercept, intercept_groups, n_intercepts, rows
        As in :func:`fit_l1_logistic`; the arrays are used, not copied.

    Raises
    ------
    ValueError
        As :func:`fit_l1_logistic`.
    """

    def __init__(self, X, weight=None, *, offset=None, penalize=None, fit_intercept=True,
                 intercept_groups=None, n_intercepts=None, rows=None):
        self.problem = _check_problem(X, None, weight, 0.0, offset, penalize, fit_intercept,
                                      intercept_groups, n_intercepts, rows)
        self.penalize = _check_penalize(penalize, self.problem.X.shape[1])
        self.design = _design(self.problem)

    def _with(self, target, lam, tol, max_iter) -> _Problem:
        check_scalar(lam, "lam", low=0.0)
        check_scalar(tol, "tol", low=0.0)
        check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=0)
        return self.problem._replace(target=_check_target(target, self.problem.weight.shape[0]),
                                     lam=np.where(self.penalize, float(lam), 0.0))

    def fit(self, target, *, lam: float, coef_init=None, intercept_init=None,
            tol: float = 1e-8, max_iter: int = 100) -> L1LogisticFit:
        """:func:`fit_l1_logistic` with this fixed part and these ``target``, ``lam``,
        starts and stopping rule."""
        prob = self._with(target, lam, tol, max_iter)
        return _fit(prob, self.design, coef_init, intercept_init, tol, max_iter)

    def point(self, target, *, lam: float, coef_init=None, intercept_init=None,
              tol: float = 1e-8, max_iter: int = 100):
        """``(coef, intercept)`` of :meth:`fit`, without what only a report of the fit
        needs: the gradient at the point that the ``max_iter``-th iteration reaches (which
        only says whether it converged), the KKT violation and the objective."""
        prob = self._with(target, lam, tol, max_iter)
        return _fit(prob, self.design, coef_init, intercept_init, tol, max_iter,
                    summary=False)


def _start(prob: _Problem, total: float, coef_init, intercept_init):
    """The starting ``(beta, b)`` (see :func:`fit_l1_logistic`'s ``coef_init``), as new
    arrays."""
    G, d = prob.G, prob.X.shape[1]
    beta = np.zeros(d)
    if coef_init is not None:
        beta = _as_float_vector(coef_init, "coef_init", d).copy()
    b = np.zeros(G)
    if intercept_init is not None:
        if G == 0:
            raise ValueError("intercept_init given but fit_intercept=False")
        b = np.asarray(intercept_init, dtype=float).reshape(-1).copy()
        if b.shape != (G,) or not np.isfinite(b).all():
            raise ValueError(f"intercept_init must be {G} finite number(s)")
    elif G == 1 and not prob.offset.any() and not beta.any() and total > 0:
        mean = float(prob.weight @ prob.target) / total
        mean = min(max(mean, 1e-10), 1 - 1e-10)
        b[0] = np.log(mean) - np.log1p(-mean)
    return beta, b


def _fit(prob: _Problem, design: _Design, coef_init, intercept_init, tol: float,
         max_iter: int, summary: bool = True):
    """:func:`fit_l1_logistic` on a checked problem and its design; ``summary=False`` gives
    ``(coef, intercept)`` alone (see :meth:`_PreparedProblem.point`)."""
    G = prob.G
    tol_abs = tol * max(design.total, 1e-300)
    b_init = _start(prob, design.total, coef_init, intercept_init)
    theta, n_iter, converged = _proximal_newton(prob, design, *b_init, tol_abs, max_iter,
                                                check_last=summary)
    beta = theta[G:].copy()
    b = theta[:G] - design.c @ beta
    if G > 1:  # a group without weight does not enter J: its intercept stays as it started
        empty = _group_sum(prob, prob.weight) == 0
        b[empty] = b_init[1][empty]
    intercept = b.copy() if G > 1 else (float(b[0]) if G == 1 else 0.0)
    if not summary:
        return beta, intercept
    # KKT in the original parameterisation (the same point, recomputed)
    vb, vbeta = _kkt_parts(prob, b, beta)
    kkt = float(max(vb.max(initial=0.0), vbeta.max(initial=0.0)))
    objective = _loglik(prob, _linear(prob, prob.X, b, beta)) - _penalty(prob, beta)
    return L1LogisticFit(beta, intercept, objective, n_iter, converged and kkt <= 10 * tol_abs,
                         kkt)


def _proximal_newton(prob: _Problem, design: _Design, beta: np.ndarray, b: np.ndarray,
                     tol_abs: float, max_iter: int, check_last: bool = True):
    """The iterations of :func:`fit_l1_logistic` from ``(beta, b)``, in the centred
    parameterisation: returns ``(theta, n_iter, converged)``, ``theta = (intercepts,
    beta)`` with the intercepts of the centred features. With ``check_last=False`` the
    point reached by the ``max_iter``-th iteration is returned without computing its
    gradient (``converged`` is then false: not known)."""
    G, Xc = prob.G, design.Xc
    b_t = b + design.c @ beta  # intercepts in the centred parameterisation
    theta = np.concatenate([b_t, beta])
    lam_full = np.concatenate([np.zeros(G), prob.lam])

    u = _linear(prob, Xc, b_t, beta)
    F = _loglik(prob, u) - _penalty(prob, beta)
    n_iter = 0
    converged = False
    while True:
        p = expit(u)
        gb, gbeta = _gradient(prob, Xc, u, p)
        grad = np.concatenate([gb, gbeta])
        viol = _violation(grad, theta, lam_full)
        kkt = float(viol.max()) if viol.size else 0.0
        if kkt <= tol_abs:
            converged = True
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        H = _Curvature(prob, Xc, design.Xc_sq, u, design.pattern, p)
        v = _coordinate_descent(H, grad, theta, lam_full, tol=max(0.1 * tol_abs, 1e-3 * kkt))
        step = v - theta
        # predicted gain, with the penalty change taken coordinate by coordinate (a
        # difference of two totals would drown it in rounding near the optimum)
        gain = float(grad @ step) - float(lam_full @ (np.abs(v) - np.abs(theta)))
        if not gain > 0:
            break  # no ascent direction left at floating-point precision
        # below this, changes of F are rounding noise and cannot be checked
        noise = 1e-13 * max(1.0, abs(F))
        t = 1.0
        accepted = False
        for _ in range(50):
            trial = theta + t * step
            u_trial = _linear(prob, Xc, trial[:G], trial[G:])
            F_trial = _loglik(prob, u_trial) - _penalty(prob, trial[G:])
            if F_trial >= F + 1e-4 * t * gain or (gain < noise and F_trial >= F - noise):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break  # at the limit of floating-point precision; J (the variable F) is concave
        theta, u, F = trial, u_trial, F_trial
        if n_iter >= max_iter and not check_last:
            break
    return theta, n_iter, converged


def _kkt_parts(prob: _Problem, b: np.ndarray, beta: np.ndarray):
    """Per-coordinate KKT violations at ``(b, beta)``: ``(intercepts (G,), coefs (k,))``."""
    gb, gbeta = _gradient(prob, prob.X, _linear(prob, prob.X, b, beta))
    return np.abs(gb), _violation(gbeta, beta, prob.lam)


def _point(prob: _Problem, coef, intercept):
    d = prob.X.shape[1]
    beta = _as_float_vector(coef, "coef", d)
    if prob.G == 0:
        if intercept is not None and np.any(np.asarray(intercept) != 0):
            raise ValueError("intercept given but fit_intercept=False")
        b = np.zeros(0)
    else:
        if intercept is None:
            raise ValueError("intercept is required when fit_intercept=True")
        b = np.asarray(intercept, dtype=float).reshape(-1)
        if b.shape != (prob.G,) or not np.isfinite(b).all():
            raise ValueError(f"intercept must be {prob.G} finite number(s)")
    return b, beta


def l1_logistic_gradient(X, target, weight=None, *, coef, intercept=None, offset=None,
                         fit_intercept=True, intercept_groups=None, n_intercepts=None,
                         rows=None):
    """Gradient of the (unpenalised) weighted log-likelihood :math:`E`.

    Returns ``(grad_intercept, grad_coef)`` with shapes ``(G,)`` and ``(k,)``.
    """
    prob = _check_problem(X, target, weight, 0.0, offset, None, fit_intercept,
                          intercept_groups, n_intercepts, rows)
    b, beta = _point(prob, coef, intercept)
    return _gradient(prob, prob.X, _linear(prob, prob.X, b, beta))


def l1_logistic_objective(X, target, weight=None, *, lam, coef, intercept=None, offset=None,
                          penalize=None, fit_intercept=True, intercept_groups=None,
                          n_intercepts=None, rows=None) -> float:
    """The penalised objective :math:`J = E - \\lambda\\sum_j|\\beta_j|` (the sum over the
    penalised :math:`j`) at a point."""
    prob = _check_problem(X, target, weight, lam, offset, penalize, fit_intercept,
                          intercept_groups, n_intercepts, rows)
    b, beta = _point(prob, coef, intercept)
    return _loglik(prob, _linear(prob, prob.X, b, beta)) - _penalty(prob, beta)


def kkt_violation(X, target, weight=None, *, lam, coef, intercept=None, offset=None,
                  penalize=None, fit_intercept=True, intercept_groups=None, n_intercepts=None,
                  rows=None, per_coordinate: bool = False):
    r"""How far ``(intercept, coef)`` is from maximising the penalised objective.

    For each coordinate: :math:`|\partial E/\partial \alpha_g|` for the intercepts
    and :math:`|\partial E/\partial \beta_j|` for the unpenalised columns; for
    penalised columns
    :math:`\max(|\partial E/\partial\beta_j| - \lambda, 0)` when :math:`\beta_j = 0`
    and :math:`|\partial E/\partial\beta_j - \lambda\operatorname{sign}\beta_j|`
    otherwise. All zero exactly at the maximiser.

    Returns
    -------
    float, or with ``per_coordinate=True`` a tuple ``(intercepts (G,), coefs (k,))``
        The largest violation (gradient units: a sum over observations).
    """
    prob = _check_problem(X, target, weight, lam, offset, penalize, fit_intercept,
                          intercept_groups, n_intercepts, rows)
    vb, vbeta = _kkt_parts(prob, *_point(prob, coef, intercept))
    if per_coordinate:
        return vb, vbeta
    return float(max(vb.max(initial=0.0), vbeta.max(initial=0.0)))


def l1_logistic_lambda_max(X, target, weight=None, *, offset=None, penalize=None,
                           fit_intercept=True, intercept_groups=None, n_intercepts=None,
                           rows=None) -> float:
    r"""The smallest :math:`\lambda` for which every penalised coefficient is zero.

    With the penalised coefficients at zero and the unpenalised parameters
    (intercepts, unpenalised columns) at their maximiser, the KKT
    conditions hold iff :math:`\lambda` is at least the largest
    :math:`|\partial E/\partial\beta_j|` of a penalised column :math:`j`;
    that maximum is returned. With one intercept, no offset and no unpenalised
    column, :math:`\hat\beta_0 = \operatorname{logit}(\bar \mu)`, :math:`\bar \mu = \sum_i
    v_i \mu_i / \sum_i v_i`, and :math:`\lambda_{\max} = \max_j |\sum_i v_i
    (\mu_i - \bar \mu) x^{(i)}_j|`.
    """
    prob = _check_problem(X, target, weight, 0.0, offset, penalize, fit_intercept,
                          intercept_groups, n_intercepts, rows)
    pen = (np.ones(prob.X.shape[1], dtype=bool) if penalize is None
           else np.asarray(penalize, dtype=bool))
    if not pen.any():
        return 0.0
    free = ~pen
    sub = fit_l1_logistic(prob.X[:, free], prob.target, prob.weight, lam=0.0,
                          offset=prob.offset, fit_intercept=prob.G > 0,
                          intercept_groups=prob.groups, n_intercepts=prob.G if prob.G > 1 else None,
                          rows=prob.rows, tol=1e-12, max_iter=200)
    beta = np.zeros(prob.X.shape[1])
    beta[free] = sub.coef
    b = np.atleast_1d(np.asarray(sub.intercept, dtype=float)) if prob.G else np.zeros(0)
    _, gbeta = _gradient(prob, prob.X, _linear(prob, prob.X, b, beta))
    return float(np.abs(gbeta[pen]).max())
