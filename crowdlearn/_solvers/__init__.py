"""Weighted and L1-penalised logistic regression, the M-steps of the feature models."""
