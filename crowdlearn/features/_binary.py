"""What the binary-label feature models share: reading features and binary labels,
the soft-vote start and the sign-flip orientation."""

from __future__ import annotations

import numpy as np

from crowdlearn._validation import _describe_positions, as_float_array
from crowdlearn.labels import CrowdLabels, _reindex_onto, as_crowd_labels


MAX_FEATURE_MAGNITUDE = 1e8


def _check_features(X, name: str = "X", n_features: int | None = None) -> np.ndarray:
    arr = as_float_array(X, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_items, n_features), got shape "
                         f"{arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: it has no rows")
    bad = np.isnan(arr)
    if bad.any():
        raise ValueError(f"{name} contains NaN at {_describe_positions(bad)}")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} contains inf at {_describe_positions(bad)}")
    bad = np.abs(arr) > MAX_FEATURE_MAGNITUDE
    if bad.any():
        raise ValueError(f"{name} has values of magnitude up to {np.abs(arr).max():.3g} "
                         f"(at {_describe_positions(bad)}); the logistic models accept at "
                         f"most {MAX_FEATURE_MAGNITUDE:.0e}, beyond which w @ x loses "
                         f"precision or overflows and EM cannot move. Standardise the "
                         f"features (subtract each column's mean, divide by its standard "
                         f"deviation)")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features but the model was fitted "
                         f"with {n_features}")
    return arr


def _soft_vote(crowd: CrowdLabels) -> np.ndarray:
    """Fraction of 1-labels per item; 0.5 for items without labels."""
    ones = np.bincount(crowd.item, weights=crowd.label.astype(float), minlength=crowd.n_items)
    total = crowd.labels_per_item()
    return np.where(total > 0, ones / np.maximum(total, 1), 0.5)


def _orient_by_vote(crowd: CrowdLabels, params, posterior: np.ndarray):
    """Resolve the sign flip: rename z -> 1 - z if the posterior disagrees with the vote.

    ``params`` must have a ``flipped()`` method giving the same likelihood with the
    classes renamed. Returns ``(params, posterior, flipped)``.
    """
    flipped = _disagrees_with_vote(crowd, posterior[:, 1])
    if flipped:
        params, posterior = params.flipped(), posterior[:, ::-1].copy()
    return params, posterior, flipped


def _disagrees_with_vote(crowd: CrowdLabels, mu: np.ndarray) -> bool:
    """True if the posterior agrees with the soft majority vote on fewer than half the
    labelled items (in expectation)."""
    labelled = crowd.labels_per_item() > 0
    v = _soft_vote(crowd)[labelled]
    m = mu[labelled]
    agreement = np.sum(m * v + (1.0 - m) * (1.0 - v))
    return bool(agreement < 0.5 * labelled.sum())


def _as_binary_labels(labels) -> CrowdLabels:
    """Any accepted label form as binary CrowdLabels (``n_classes == 2`` even if every
    label is 0), with a clear error for other labels."""
    if labels is None:
        raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) tuple "
                         "or an (n_items, n_experts) matrix with -1 for missing")
    if isinstance(labels, CrowdLabels):
        crowd = labels
    else:
        try:
            crowd = as_crowd_labels(labels, n_classes=2)
        except ValueError as exc:
            if "label has values out of range" in str(exc):
                raise ValueError(f"labels must be binary (0 or 1); {exc}") from None
            raise
    if crowd.n_labels == 0:
        raise ValueError("labels holds no label at all")
    if crowd.label.max() > 1 or crowd.n_classes > 2:
        bad = crowd.label > 1
        if bad.any():
            raise ValueError(f"labels must be binary (0 or 1), got label "
                             f"{int(crowd.label[bad][0])} at label position(s) "
                             f"{_describe_positions(bad)}")
        raise ValueError(f"labels must be binary, got n_classes={crowd.n_classes}")
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, crowd.n_items, crowd.n_experts,
                       2, crowd.item_ids, crowd.expert_ids, crowd.class_ids)


def _read_labels(labels, X: np.ndarray, n_experts: int | None = None, ids=None) -> CrowdLabels:
    """Binary CrowdLabels whose items are the rows of ``X``, with clear errors; with ``ids``
    (a fitted model's ``(expert_ids_, class_ids_)``) new table ids are mapped onto them."""
    crowd = _as_binary_labels(labels)
    if ids is not None:
        crowd = _reindex_onto(crowd, *ids)
    if n_experts is not None and crowd.expert.max() >= n_experts:
        raise ValueError(f"unknown expert {int(crowd.expert.max())}: the model was fitted on "
                         f"{n_experts} experts (indices 0 to {n_experts - 1})")
    if n_experts is not None and crowd.n_experts > n_experts:
        raise ValueError(f"unknown experts: the labels come from {crowd.n_experts} experts but "
                         f"the model was fitted on {n_experts}")
    n_items = crowd.n_items
    if X.shape[0] != n_items:
        if isinstance(labels, tuple) and X.shape[0] > n_items:
            n_items = X.shape[0]  # items beyond the largest index simply have no label
        else:
            raise ValueError(f"X has {X.shape[0]} rows but the labels describe {n_items} items")
    K = crowd.n_experts if n_experts is None else n_experts
    return CrowdLabels(crowd.item, crowd.expert, crowd.label, n_items, K, 2,
                       crowd.item_ids, crowd.expert_ids, crowd.class_ids)
