"""The M-step solvers of the feature models, public: weighted logistic regression (Newton, with
optional ridge) and L1-penalised logistic regression (proximal Newton).

The chapters on logistic annotators and sparsity call these directly to show that an M-step *is*
a (weighted, penalised) logistic regression. The implementations live in ``crowdlearn._solvers``.
"""

from crowdlearn._solvers.l1_logistic import (
    L1LogisticFit,
    fit_l1_logistic,
    kkt_violation,
    l1_logistic_gradient,
    l1_logistic_lambda_max,
    l1_logistic_objective,
)
from crowdlearn._solvers.logistic import (
    LogisticFit,
    fit_weighted_logistic,
    weighted_logistic_objective,
)

__all__ = [
    "LogisticFit",
    "fit_weighted_logistic",
    "weighted_logistic_objective",
    "L1LogisticFit",
    "fit_l1_logistic",
    "kkt_violation",
    "l1_logistic_gradient",
    "l1_logistic_lambda_max",
    "l1_logistic_objective",
]
