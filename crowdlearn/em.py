"""The one EM engine every crowdlearn model runs on.

A model supplies three functions of its own -- an initialiser, an E-step and an
M-step -- and the engine does the rest: the loop, the objective history, the
stopping rule, restarts that keep the best run, and the callback hook used by
widgets and progress bars. It knows nothing of the user interface: the estimators
(:class:`crowdlearn._base.EMEstimator`) pass their progress bar as a callback and
issue the ``ConvergenceWarning`` from the result (``converged``, ``stopped``).

The loop, for parameters :math:`\\theta^{0}` from the initialiser, is::

    for t = 1, 2, ..., max_iter:
        q, J_t = e_step(theta)        # posterior of the hidden variables and
                                      # the objective J(theta) at these parameters
        stop if J_t - J_{t-1} <= tol * max(1, |J_t|)
        theta = m_step(q)

so the history holds :math:`J(\\theta^{0}), J(\\theta^{1}), \\dots` (:math:`\\theta^{t}` the
parameters after :math:`t` M-steps) and the
posterior returned always belongs to the parameters returned. For maximum
likelihood the objective is the observed-data log-likelihood; for MAP or
penalised variants it is the log-posterior or penalised likelihood. EM never
lets it decrease, which the tests check one step at a time.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from crowdlearn._blas import one_blas_thread
from crowdlearn._validation import check_scalar

__all__ = ["EMState", "EMResult", "run_em", "fit_em", "objective_converged"]


@dataclass
class EMState:
    """What a callback sees after each E-step."""

    restart: int
    iteration: int
    objective: float
    params: Any
    posterior: np.ndarray


@dataclass
class EMResult:
    """The outcome of one EM run (or the best of several).

    ``converged`` is true when the objective rose by at most ``tol``; ``stopped``
    is true when the callback ended the run (which is then neither converged nor
    cut off by ``max_iter``). ``last_move`` (SQUAREM runs only, 0 otherwise) is the
    largest change of any posterior probability over the last cycle of a run that
    converged; ``flat`` says it exceeds ``crowdlearn.em.FLAT_MOVE`` (see :func:`run_em`).
    """

    params: Any
    posterior: np.ndarray
    history: np.ndarray
    n_iter: int
    converged: bool
    restart: int = 0
    all_objectives: np.ndarray | None = None
    stopped: bool = False
    last_move: float = 0.0

    @property
    def objective(self) -> float:
        return float(self.history[-1])

    @property
    def flat(self) -> bool:
        """A SQUAREM run that ended on a flat optimum (``last_move > FLAT_MOVE``)."""
        return self.last_move > FLAT_MOVE


FLAT_MOVE = 0.05
"""How far (the largest change of any posterior probability) the last SQUAREM cycle of a
converged run may move the posterior, while the objective rises by at most ``tol``, before
the run is said to end on a flat optimum (``EMResult.flat``). A SQUAREM extrapolation can
travel far along a direction in which the objective is flat, and the stopping rule then
ends the run wherever it is, at a posterior the data do not pin down. Near an optimum
where the objective curves, a rise of ``tol`` comes with a posterior change of order
``sqrt(tol)`` (at most 2.4e-3 in 800 SQUAREM fits of DawidSkene, OneCoinDawidSkene, MACE
and SparseExpertsEM on 200 random crowds); a move of more than 0.05 at no gain in the
objective says that it is flat along the move, and that another start could stop
elsewhere on it."""


def objective_converged(previous, current, tol: float):
    """The engine's stopping rule: the objective rose from ``previous`` to ``current`` by at
    most ``tol * max(1, |current|)`` (a relative change, so that one ``tol`` means the same
    on a small crowd and a large one). Element-wise on arrays (one objective per problem
    of a batch); a bool for numbers."""
    return current - previous <= tol * np.maximum(1.0, np.abs(current))


def _checked_objective(objective, n_iter: int, model: str | None) -> float:
    """The E-step's objective as a float. NaN is the caller's ``ValueError`` (their own
    ``e_step`` returned it) or, inside a crowdlearn model (``model`` names it), a bug."""
    try:
        value = float(objective)
    except (TypeError, ValueError):
        raise TypeError(f"e_step must return (posterior, objective) with the objective a "
                        f"number, got {type(objective).__name__} {objective!r:.40}") from None
    if math.isnan(value):
        if model is not None:
            raise FloatingPointError(f"{model}: the EM objective became NaN at iteration "
                                     f"{n_iter}; this is a bug, please report it")
        raise ValueError(f"the objective returned by e_step is NaN at iteration {n_iter} "
                         f"(after {n_iter} M-step(s)): the e_step and m_step given to EM "
                         f"must keep it a number")
    return value


def run_em(params, e_step: Callable, m_step: Callable, *, tol: float = 1e-6,
           max_iter: int = 100, callback: Callable | None = None,
           restart: int = 0, warm_start: bool = False, accelerate=None,
           _model: str | None = None) -> EMResult:
    r"""Run EM from ``params`` until the objective stops rising or ``max_iter`` M-steps.

    Parameters
    ----------
    params : object
        Initial parameters, in whatever form ``e_step`` accepts.
    e_step : callable ``params -> (posterior, objective)``
        Posterior of the hidden variables under ``params`` and the objective at ``params``.
    m_step : callable ``posterior -> params``
        Parameters maximising the expected complete-data objective.
        With ``warm_start=True`` it is called as ``m_step(posterior, params)``,
        with the parameters the posterior was computed from, so that an
        iterative M-step (Newton, coordinate descent) can start there and
        accept only steps that improve on them.
    tol : float
        Stop when the objective rises by at most ``tol * max(1, |objective|)``.
    max_iter : int
        At most this many M-steps.
    callback : callable ``EMState -> bool | None``, optional
        Called after every E-step; returning ``True`` stops the run.
    restart : int
        Index of this run among restarts, passed to the callback.
    warm_start : bool, default False
        Pass the current parameters to ``m_step`` as a second argument.
    accelerate : ``(flatten, unflatten)`` pair of callables, optional
        Run SQUAREM (Varadhan and Roland 2008, scheme S3) instead of plain EM:
        ``flatten(params)`` gives a 1-D float array, ``unflatten(array)`` the params
        back. Each cycle takes two EM steps :math:`\theta^{t+1}, \theta^{t+2}` from
        :math:`\theta^{t}`, extrapolates along :math:`\Delta = \theta^{t+1} - \theta^{t}`,
        :math:`\Delta_2 = \theta^{t+2} - 2\theta^{t+1} + \theta^{t}` to
        :math:`\theta^{t} - 2\varsigma\Delta + \varsigma^2\Delta_2`
        with :math:`\varsigma = -\lVert \Delta\rVert/\lVert \Delta_2\rVert`, and takes one more
        EM step from there. The monotonicity safeguard: an extrapolated point is used only if
        its objective is at least that of :math:`\theta^{t+2}`, otherwise the step length is
        halved towards :math:`\varsigma = -1` (which *is* :math:`\theta^{t+2}`) -- so the history
        never decreases and the fixed points are EM's. ``n_iter`` still counts M-steps
        (about three per cycle), and the history holds the objective at each cycle's
        end (plus the start), so it is shorter than ``n_iter + 1``.
        A run ending on a flat optimum is flagged (``EMResult.flat``, see
        ``crowdlearn.em.FLAT_MOVE``).

    Returns
    -------
    EMResult

    Raises
    ------
    ValueError, TypeError
        If ``tol`` or ``max_iter`` is negative or not a number; if ``e_step`` returns a
        NaN objective (``ValueError`` naming the iteration) or not a number (``TypeError``).
    """
    check_scalar(tol, "tol", low=0.0)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=0)
    if accelerate is not None:
        return _run_squarem(params, e_step, m_step, tol=tol, max_iter=max_iter,
                            callback=callback, restart=restart, warm_start=warm_start,
                            flatten=accelerate[0], unflatten=accelerate[1], model=_model)
    history = []
    converged = False
    n_iter = 0
    while True:
        posterior, objective = e_step(params)
        objective = _checked_objective(objective, n_iter, _model)
        history.append(objective)
        if len(history) > 1 and objective_converged(history[-2], objective, tol):
            converged = True
        stop = bool(callback(EMState(restart, n_iter, objective, params, posterior))) \
            if callback is not None else False
        if converged or stop or n_iter >= max_iter:
            break
        params = m_step(posterior, params) if warm_start else m_step(posterior)
        n_iter += 1
    return EMResult(params, posterior, np.asarray(history), n_iter, converged, restart,
                    stopped=stop and not converged)


def _run_squarem(params, e_step, m_step, *, tol, max_iter, callback, restart, warm_start,
                 flatten, unflatten, model=None) -> EMResult:
    """SQUAREM with a monotonicity safeguard (see :func:`run_em`'s ``accelerate``)."""

    def evaluate(theta):
        posterior, objective = e_step(theta)
        return posterior, _checked_objective(objective, n_iter, model)

    def step(posterior, theta):
        return m_step(posterior, theta) if warm_start else m_step(posterior)

    n_iter = 0
    posterior, objective = evaluate(params)
    history = [objective]
    converged = stop = False
    last_move = 0.0
    while True:
        stop = bool(callback(EMState(restart, n_iter, objective, params, posterior))) \
            if callback is not None else False
        if converged or stop or n_iter >= max_iter:
            break
        theta1 = step(posterior, params)
        n_iter += 1
        post1, obj1 = evaluate(theta1)
        best = (theta1, post1, obj1)
        if n_iter < max_iter:
            theta2 = step(post1, theta1)
            n_iter += 1
            post2, obj2 = evaluate(theta2)
            best = (theta2, post2, obj2)
            x0 = np.asarray(flatten(params), dtype=float)
            r = np.asarray(flatten(theta1), dtype=float) - x0
            v = np.asarray(flatten(theta2), dtype=float) - x0 - 2.0 * r
            norm_v = float(np.linalg.norm(v))
            s = -float(np.linalg.norm(r)) / norm_v if norm_v > 0 else -1.0
            # the safeguard: halve the extrapolation towards s = -1 (theta2 itself) until
            # the objective is at least theta2's; then one EM step from the new point
            while s < -1.0 and n_iter < max_iter:
                x = x0 - 2.0 * s * r + s * s * v
                if np.isfinite(x).all():
                    theta_x = unflatten(x)
                    post_x, obj_x = evaluate(theta_x)
                    if obj_x >= obj2:
                        theta3 = step(post_x, theta_x)
                        n_iter += 1
                        post3, obj3 = evaluate(theta3)
                        best = (theta3, post3, obj3) if obj3 >= obj_x else \
                            (theta_x, post_x, obj_x)
                        break
                s = (s - 1.0) / 2.0 if s < -1.5 else -1.0
        previous = posterior
        params, posterior, objective = best
        history.append(objective)
        if objective_converged(history[-2], objective, tol):
            converged = True
            # how far the posterior moved at (almost) no gain: large on a flat optimum
            last_move = float(np.max(np.abs(np.asarray(posterior) - np.asarray(previous)),
                                     initial=0.0))
    return EMResult(params, posterior, np.asarray(history), n_iter, converged, restart,
                    stopped=stop and not converged, last_move=last_move)


def fit_em(init: Callable, e_step: Callable, m_step: Callable, *, n_init: int = 1,
           tol: float = 1e-6, max_iter: int = 100, callback: Callable | None = None,
           warm_start: bool = False, accelerate=None, _model: str | None = None) -> EMResult:
    """Run EM from ``n_init`` starts and keep the run with the highest final objective.

    Parameters
    ----------
    init : callable ``restart -> params``
        Initial parameters for restart ``0, 1, ..., n_init - 1`` (restart 0 is the
        model's deterministic start, the others its random ones).
    e_step, m_step, tol, max_iter, callback, warm_start, accelerate
        As in :func:`run_em`. The callback sees every E-step of every run (its
        ``restart`` says which run); the estimators pass their progress bar this way.
    n_init : int
        Number of runs.

    Returns
    -------
    EMResult
        The best run; ``all_objectives`` holds every run's final objective. Whether it
        converged is ``converged`` (no warning is issued here: the estimators issue
        :class:`~crowdlearn.ConvergenceWarning` when the best run reached ``max_iter``
        without converging, see ``crowdlearn._base.warn_if_not_converged``).

    Raises
    ------
    ValueError
        If ``n_init < 1``, ``max_iter < 0`` or ``tol < 0``, or if ``e_step`` returns a
        NaN objective (as in :func:`run_em`; inside a crowdlearn model, where ``_model``
        names it, a NaN objective is a bug of the package: ``FloatingPointError``).
    """
    check_scalar(n_init, "n_init", kind=numbers.Integral, low=1)
    check_scalar(tol, "tol", low=0.0)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=0)
    best = None
    finals = []
    with one_blas_thread():  # small products: one BLAS thread (crowdlearn._blas)
        for r in range(n_init):
            result = run_em(init(r), e_step, m_step, tol=tol, max_iter=max_iter,
                            callback=callback, restart=r, warm_start=warm_start,
                            accelerate=accelerate, _model=_model)
            finals.append(result.objective)
            if best is None or result.objective > best.objective:
                best = result
    best.all_objectives = np.asarray(finals)
    return best
