"""Small pieces shared by the estimators."""

from __future__ import annotations

import numpy as np

from crowdlearn.exceptions import NotFittedError


class BaseEstimator:
    """scikit-learn style: ``__init__`` only stores, ``get_params``, a readable repr."""

    _param_names: tuple = ()

    def _store_params(self, values: dict) -> None:
        """Store the constructor arguments as they are (``__init__`` passes its
        ``locals()``), one attribute per name in ``_param_names``: no checks here, so
        ``set_params`` and ``clone`` behave as in scikit-learn; ``fit`` validates."""
        for name in self._param_names:
            setattr(self, name, values[name])

    def _keep_em_result(self, result, posterior=None, log_prior=None) -> None:
        """The attributes every EM estimator sets from its best run (an
        :class:`~crowdlearn.em.EMResult`): ``posterior_`` (``result.posterior`` unless
        another, e.g. re-oriented, posterior is given), ``log_likelihood_history_``,
        ``objective_``, ``n_iter_``, ``converged_`` and, given the log-prior (or minus
        the penalty) that the objective includes, ``log_likelihood_``."""
        self.posterior_ = result.posterior if posterior is None else posterior
        self.log_likelihood_history_ = result.history
        self.objective_ = result.objective
        if log_prior is not None:
            self.log_likelihood_ = result.objective - float(log_prior)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged

    def get_params(self) -> dict:
        """The constructor arguments, as stored."""
        return {name: getattr(self, name) for name in self._param_names}

    def set_params(self, **params):
        """Change constructor arguments; returns self."""
        for name, value in params.items():
            if name not in self._param_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; "
                                 f"valid ones are {list(self._param_names)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attr: str = "posterior_"):
        if not hasattr(self, attr):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")


def normalize_log(log_joint: np.ndarray):
    """Normalise rows of log joint probabilities.

    Returns ``(posterior, log_evidence)``: the row-wise softmax and the row-wise
    log-sum-exp, computed with the row maximum subtracted so nothing underflows.
    Rows that are ``-inf`` everywhere are refused with a ``ValueError`` by the
    callers; here they give ``log_evidence = -inf``.
    """
    m = np.max(log_joint, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(log_joint - m)
    s = p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_evidence = (np.log(s) + m)[:, 0]
    safe = np.where(s > 0, s, 1.0)
    return p / safe, log_evidence


def posterior_or_refuse(log_joint: np.ndarray, message: str) -> np.ndarray:
    """The normalised rows of ``log_joint``, refusing rows that are ``-inf`` under every
    class (no posterior exists there) or hold a NaN or ``+inf`` with a ``ValueError``:
    ``message`` names the cause, and its ``{rows}`` is replaced by the first five such
    row indices."""
    dead = ~np.isfinite(np.max(log_joint, axis=1))  # all -inf, or a NaN or +inf in the row
    if dead.any():
        raise ValueError(message.format(rows=np.flatnonzero(dead)[:5].tolist()))
    q, _ = normalize_log(log_joint)
    return q
