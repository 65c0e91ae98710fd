"""Warnings and errors raised by crowdlearn."""

__all__ = ["ConvergenceWarning", "DegenerateFitWarning", "NotFittedError"]


class ConvergenceWarning(UserWarning):
    """EM stopped at ``max_iter`` before the objective changed by less than ``tol``."""


class DegenerateFitWarning(UserWarning):
    """A fit that says little: the parameters are not identified by the data (e.g. every
    item gets the same posterior although the labels differ), or EM did not move from
    its starting point. The message says why and what to do (smoothing, fewer
    parameters, rescaled features)."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit`` was called."""
