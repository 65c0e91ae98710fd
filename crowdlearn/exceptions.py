"""Warnings and errors raised by crowdlearn."""

__all__ = ["ConvergenceWarning", "NotFittedError"]


class ConvergenceWarning(UserWarning):
    """EM stopped at ``max_iter`` before the objective changed by less than ``tol``."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit`` was called."""
