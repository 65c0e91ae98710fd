"""Small pieces shared by the estimators."""

from __future__ import annotations

import numpy as np

from crowdlearn.exceptions import NotFittedError


class BaseEstimator:
    """scikit-learn style: ``__init__`` only stores, ``get_params``, a readable repr."""

    _param_names: tuple = ()

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
