r"""Choosing models without true labels: the surrogate risk :math:`\hat S`.

Izbicki and Stern (2013, section 2 and appendix B) score a classifier by how
often it disagrees with the experts on held-out items. Notation as in the book
(its notation page; the paper's letters in parentheses): :math:`\hat y^{(i)}` the
classifier's label of held-out item :math:`i` (``z_i``), :math:`y^{(i)}` the
(unknown) truth (``Z_i``), :math:`y^{(i)}_r` the label expert :math:`r` gave it
(``Y_ij``), :math:`R` experts (``d``), :math:`m'` held-out items
(``n'``) and :math:`\mathcal{R}` the true risk (``R``):

.. math::

    \hat{\mathcal{R}} = \frac{1}{m'}\sum_{i=1}^{m'} 1\{\hat y^{(i)} \ne y^{(i)}\}, \qquad
    \hat S = \frac{1}{m'}\sum_{i=1}^{m'} \frac{1}{|R_i|}\sum_{r \in R_i}
    1\{\hat y^{(i)} \ne y^{(i)}_r\},

where :math:`R_i` are the experts who labelled item :math:`i` (all :math:`R` of them
in the paper; items without any label are left out of :math:`\hat S`, and
:math:`m'` counts the labelled items).

**Lemma 1** (exact, for every sample, binary labels only). Since
:math:`1\{\hat y \ne y_r\} = 1\{\hat y \ne y\}(1 - 2\cdot 1\{y \ne y_r\}) + 1\{y \ne y_r\}`
for binary labels (check the four cases),

.. math::

    \begin{aligned}
    \hat S &= \frac{1}{m'}\sum_i (1 - 2\bar e_i)\, W_i + \frac{1}{m'}\sum_i \bar e_i, \\
    W_i &= 1\{\hat y^{(i)} \ne y^{(i)}\},\quad
    \bar e_i = \frac{1}{|R_i|}\sum_{r \in R_i} 1\{y^{(i)}_r \ne y^{(i)}\}
    \end{aligned}

(:func:`surrogate_decomposition`).

**Expectation.** Let :math:`\epsilon_r = P(y_r \ne y)` and
:math:`\bar\epsilon = \frac1R\sum_r\epsilon_r` (with missing labels, the average of
:math:`\frac{1}{|R_i|}\sum_{r\in R_i}\epsilon_r` over items). Taking expectations,

.. math::

    E[\hat S] = (1 - 2\bar\epsilon)\, \mathcal{R} + \bar\epsilon
    - 2\,\overline{\operatorname{Cov}}(W_i, \bar e_i),

so if the classifier's errors are uncorrelated with the experts' (the paper's
Assumption 3; e.g. experts whose errors do not depend on the item, as in
scenario (i) of its section 4.1), :math:`E[\hat S] = (1 - 2\bar\epsilon)\mathcal{R} +
\bar\epsilon` (:func:`expected_surrogate_risk`). When :math:`\bar\epsilon < \frac12` this
is increasing in :math:`\mathcal{R}`, so ranking models by :math:`\hat S` ranks them by
risk.

**Lemma 2, corrected.** If instead only the experts' errors are pairwise
uncorrelated (Assumption 4), Cauchy--Schwarz bounds the covariance term:

.. math::

    \big|E[\hat S] - (1 - 2\bar\epsilon)\mathcal{R} - \bar\epsilon\big|
    \le \sqrt{\mathcal{R}(1 - \mathcal{R})}\;
    \frac{\sqrt{\sum_r 4\epsilon_r(1 - \epsilon_r)}}{R}
    \le \frac{1}{2\sqrt R}

(:func:`surrogate_bias_bound`). The paper states the left side with
:math:`+\bar\epsilon` (a sign slip) and its Theorem 2 with :math:`\frac{1}{4\sqrt d}`;
but :math:`\operatorname{Var}(1 - 2\cdot 1\{y \ne y_r\}) = 4\epsilon_r(1-\epsilon_r)`
can be 1, not :math:`\frac14`, and the bound :math:`\frac{1}{2\sqrt R}` is attained:
with one expert (:math:`R = 1`, so Assumption 4 holds vacuously) whose label is a
function of :math:`x` and a classifier that learnt that function,
:math:`W = 1\{y \ne y_1\}`, :math:`\hat S = 0`, :math:`\mathcal{R} = \epsilon`, and the
gap is :math:`2\epsilon(1 - \epsilon)`, which exceeds :math:`\frac14` for
:math:`\epsilon \in (0.147, 0.5)`. With missing labels the same holds when which
experts label an item is independent of everything else.

Model selection: :func:`select_by_surrogate` (any candidates) and
:func:`select_penalty` (the penalty of :class:`~crowdlearn.features.sparse_experts.SparseExpertsEM`)
fit on training items and score by :math:`\hat S` on held-out items (or
held-out labels), once or by K-fold cross-validation.
"""

from __future__ import annotations

import numbers
import warnings
from typing import NamedTuple

import numpy as np

from crowdlearn._base import reissue_warnings
from crowdlearn._validation import (as_float_array, check_bool, check_random_state,
                                     check_scalar)
from crowdlearn.labels import CrowdLabels, as_crowd_labels
from crowdlearn.features.sparse_experts import SparseExpertsEM, sparse_experts_path
from crowdlearn.features._binary import _as_binary_labels, _read_input

__all__ = ["surrogate_risk", "true_risk", "surrogate_decomposition", "SurrogateDecomposition",
           "expected_surrogate_risk", "surrogate_bias_bound", "select_by_surrogate",
           "SelectionResult", "select_penalty", "PenaltySelection", "heldout_label_likelihood",
           "HeldoutLikelihood", "calibration_curve", "CalibrationCurve",
           "expected_calibration_error"]


# -- the scores ----------------------------------------------------------------------------------
def _binary_vector(values, name: str, n: int | None = None) -> np.ndarray:
    try:
        arr = as_float_array(values, name)
    except ValueError as exc:
        raise ValueError(f"{name} must be an array of 0/1 labels: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at position {int(np.flatnonzero(np.isnan(arr))[0])}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(f"{name} must hold 0/1 labels, got {arr[bad][0]!r} at position "
                         f"{int(np.flatnonzero(bad)[0])}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries, expected {n}")
    return arr.astype(np.intp)


def _labels_for(labels, n_items: int) -> CrowdLabels:
    """Binary CrowdLabels over exactly ``n_items`` items."""
    crowd = _as_binary_labels(labels)
    if crowd.n_items != n_items:
        if isinstance(labels, tuple) and crowd.n_items < n_items:
            return CrowdLabels(crowd.item, crowd.expert, crowd.label, n_items, crowd.n_experts,
                               2)
        raise ValueError(f"labels describe {crowd.n_items} items but there are {n_items} "
                         f"predictions")
    return crowd


def _item_weights(crowd: CrowdLabels, weighting: str):
    """Weight of each label in S-hat and the number of scored items."""
    if weighting not in ("item", "label"):
        raise ValueError(f"weighting must be 'item' or 'label', got {weighting!r}")
    per_item = crowd.labels_per_item()
    n_scored = int((per_item > 0).sum())
    if weighting == "item":
        return 1.0 / (n_scored * per_item[crowd.item]), n_scored
    return np.full(crowd.n_labels, 1.0 / crowd.n_labels), n_scored


def surrogate_risk(predictions, labels, *, weighting: str = "item") -> float:
    r"""The surrogate risk :math:`\hat S`: how often the predictions disagree with the experts.

    Parameters
    ----------
    predictions : array-like of 0/1, shape (n_items,)
        The classifier's labels :math:`\hat y^{(i)}` of the held-out items.
    labels : CrowdLabels, (item, expert, label) tuple or (n_items, n_experts) matrix
        The experts' labels of the same items (``-1`` = missing in a matrix).
    weighting : {"item", "label"}, default "item"
        ``"item"``: average over the experts who labelled each item, then over the
        labelled items -- :math:`\frac{1}{m'}\sum_i\frac{1}{|R_i|}\sum_{r\in R_i}
        1\{\hat y^{(i)} \ne y^{(i)}_r\}`, the paper's :math:`\hat S` when every expert
        labels every item. ``"label"``: the fraction of all labels that disagree.

    Returns
    -------
    float

    Examples
    --------
    >>> surrogate_risk([0, 1], [[0, 1, 1], [1, 1, -1]])   # (2/3 + 0/2) / 2
    0.3333333333333333
    >>> surrogate_risk([0, 1], [[0, 1, 1], [1, 1, -1]], weighting="label")   # 2/5
    0.4
    """
    pred = _binary_vector(predictions, "predictions")
    crowd = _labels_for(labels, pred.shape[0])
    w, _ = _item_weights(crowd, weighting)
    return float(w @ (pred[crowd.item] != crowd.label))


def true_risk(predictions, truth) -> float:
    r"""The empirical risk :math:`\hat{\mathcal{R}} = \frac{1}{m'}\sum_i 1\{\hat y^{(i)} \ne y^{(i)}\}`
    (needs the truth).

    Examples
    --------
    >>> true_risk([0, 1, 1, 0], [0, 1, 0, 0])
    0.25
    """
    pred = _binary_vector(predictions, "predictions")
    truth = _binary_vector(truth, "truth", n=pred.shape[0])
    return float(np.mean(pred != truth))


class SurrogateDecomposition(NamedTuple):
    """Lemma 1: ``surrogate == weighted_risk + expert_error`` (exactly)."""

    surrogate: float      # S-hat
    weighted_risk: float  # (1/m') sum_i (1 - 2 e_bar_i) W_i
    expert_error: float   # (1/m') sum_i e_bar_i: the experts' mean error on these items
    risk: float           # empirical true risk over the same (labelled) items


def surrogate_decomposition(predictions, labels, truth, *,
                            weighting: str = "item") -> SurrogateDecomposition:
    r"""Split :math:`\hat S` as in Lemma 1 (needs the truth; for checking and teaching).

    With :math:`W_i = 1\{\hat y^{(i)} \ne y^{(i)}\}` and :math:`\bar e_i` the fraction of
    item :math:`i`'s labels that are wrong,
    :math:`\hat S = \sum_i \omega_i (1 - 2\bar e_i) W_i + \sum_i \omega_i \bar e_i`
    with :math:`\omega_i = 1/m'` (``weighting="item"``) or :math:`|R_i|/L`, :math:`L`
    the number of labels (``"label"``).

    Examples
    --------
    >>> dec = surrogate_decomposition([0, 1], [[0, 1, 1], [1, 1, -1]], [1, 1])
    >>> dec.risk, dec.expert_error        # item 0 misclassified; item 0 has 1 wrong label of 3
    (0.5, 0.16666666666666666)
    >>> round(dec.weighted_risk + dec.expert_error, 12) == round(dec.surrogate, 12)
    True
    """
    pred = _binary_vector(predictions, "predictions")
    truth = _binary_vector(truth, "truth", n=pred.shape[0])
    crowd = _labels_for(labels, pred.shape[0])
    w, _ = _item_weights(crowd, weighting)
    n = pred.shape[0]
    omega = np.bincount(crowd.item, weights=w, minlength=n)          # weight of each item
    wrong = (crowd.label != truth[crowd.item]).astype(float)
    e_bar = np.bincount(crowd.item, weights=w * wrong, minlength=n)
    e_bar = np.divide(e_bar, omega, out=np.zeros(n), where=omega > 0)
    W = (pred != truth).astype(float)
    s_hat = float(w @ (pred[crowd.item] != crowd.label))
    return SurrogateDecomposition(s_hat, float(omega @ ((1 - 2 * e_bar) * W)),
                                  float(omega @ e_bar), float(omega @ W))


def _mean_error(error_rates, mask) -> tuple[np.ndarray, float]:
    eps = as_float_array(error_rates, "error_rates")
    if eps.ndim not in (1, 2) or eps.size == 0:
        raise ValueError(f"error_rates must be (n_experts,) or (n_items, n_experts), got shape "
                         f"{eps.shape}")
    if not np.isfinite(eps).all() or (eps < 0).any() or (eps > 1).any():
        raise ValueError("error_rates must hold probabilities in [0, 1]")
    if mask is None:
        return eps, float(eps.mean())
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2 or (eps.ndim == 2 and m.shape != eps.shape) or m.shape[1] != eps.shape[-1]:
        raise ValueError(f"mask must have shape (n_items, {eps.shape[-1]}), got {m.shape}")
    full = np.broadcast_to(eps, m.shape)
    counts = m.sum(axis=1)
    keep = counts > 0
    if not keep.any():
        raise ValueError("mask marks no label at all")
    per_item = (full * m).sum(axis=1)[keep] / counts[keep]
    return eps, float(per_item.mean())


def _risk_value(risk) -> float:
    if isinstance(risk, (str, bytes)):  # float('0.1') would read it as a number
        raise ValueError(f"risk must be a number, got {type(risk).__name__} {risk!r}")
    if np.ndim(risk) != 0:
        raise ValueError(f"risk must be a single number, got shape {np.shape(risk)}")
    risk = float(as_float_array(risk, "risk"))
    return check_scalar(risk, "risk", low=0.0, high=1.0)


def expected_surrogate_risk(risk, error_rates, *, mask=None) -> float:
    r""":math:`E[\hat S] = (1 - 2\bar\epsilon)\mathcal{R} + \bar\epsilon` when classifier and
    expert errors are uncorrelated (Assumption 3).

    Parameters
    ----------
    risk : float
        The classifier's true risk :math:`\mathcal{R}` (or :math:`\hat{\mathcal{R}}` on the
        scored items).
    error_rates : array-like, shape (n_experts,) or (n_items, n_experts)
        :math:`\epsilon_r = P(y_r \ne y)`, per expert or per item and expert.
    mask : array-like of bool, shape (n_items, n_experts), optional
        Which labels exist; :math:`\bar\epsilon` is then the mean over labelled items
        of the mean error of the experts who labelled them.

    Examples
    --------
    >>> expected_surrogate_risk(0.2, [0.5, 0.15, 0.47])   # eps_bar = 0.3733...
    0.42400000000000004
    """
    risk = _risk_value(risk)
    _, eps_bar = _mean_error(error_rates, mask)
    return float((1 - 2 * eps_bar) * risk + eps_bar)


def surrogate_bias_bound(risk, error_rates) -> float:
    r"""Lemma 2, corrected: a bound on
    :math:`|E[\hat S] - (1 - 2\bar\epsilon)\mathcal{R} - \bar\epsilon|` when the experts'
    errors are pairwise uncorrelated (Assumption 4).

    .. math:: \sqrt{\mathcal{R}(1-\mathcal{R})}\,
              \frac{\sqrt{\sum_r 4\epsilon_r(1-\epsilon_r)}}{R} \;\le\; \frac{1}{2\sqrt R}.

    Examples
    --------
    >>> surrogate_bias_bound(0.5, [0.5])    # R = 1: the worst case, 1 / (2 sqrt(1))
    0.5
    """
    risk = _risk_value(risk)
    eps = as_float_array(error_rates, "error_rates")
    if eps.ndim != 1 or eps.size == 0 or not np.isfinite(eps).all() or (eps < 0).any() \
            or (eps > 1).any():
        raise ValueError("error_rates must be a non-empty 1-D array of probabilities")
    d = eps.size
    return float(np.sqrt(risk * (1 - risk)) * np.sqrt(np.sum(4 * eps * (1 - eps))) / d)


# -- splitting -----------------------------------------------------------------------------------
def _restrict_items(crowd: CrowdLabels, items: np.ndarray) -> CrowdLabels:
    """The labels of ``items`` (sorted indices), re-indexed 0..len(items)-1."""
    pos = np.full(crowd.n_items, -1, dtype=np.intp)
    pos[items] = np.arange(items.size)
    keep = pos[crowd.item] >= 0
    return CrowdLabels(pos[crowd.item[keep]], crowd.expert[keep], crowd.label[keep],
                       int(items.size), crowd.n_experts, 2)


class _Split(NamedTuple):
    train_labels: CrowdLabels
    X_train: np.ndarray
    test_labels: CrowdLabels
    X_test: np.ndarray
    n_train_items: int  # labelled items in the training part


def _splits(crowd: CrowdLabels, X: np.ndarray, *, holdout, cv, split, rng) -> list[_Split]:
    if split not in ("items", "labels"):
        raise ValueError(f"split must be 'items' or 'labels', got {split!r}")
    if cv is None:
        check_scalar(holdout, "holdout", low=0.0, high=1.0, low_inclusive=False,
                     high_inclusive=False)
    else:
        check_scalar(cv, "cv", kind=numbers.Integral, low=2)
    labelled_items = np.flatnonzero(crowd.labels_per_item() > 0)
    units = labelled_items.size if split == "items" else crowd.n_labels
    perm = rng.permutation(units)
    if cv is None:
        n_test = int(round(holdout * units))
        if n_test < 1 or n_test >= units:
            raise ValueError(f"holdout={holdout} leaves no {split[:-1]} for training or testing "
                             f"({units} {split})")
        folds = [perm[:n_test]]
    else:
        if cv > units:
            raise ValueError(f"cv={cv} folds but only {units} {split}")
        folds = np.array_split(perm, cv)
    out = []
    for fold in folds:
        if split == "items":
            test_items = np.sort(labelled_items[fold])
            train_mask = np.ones(crowd.n_items, dtype=bool)
            train_mask[test_items] = False
            train_items = np.flatnonzero(train_mask)
            train = _restrict_items(crowd, train_items)
            test = _restrict_items(crowd, test_items)
            out.append(_Split(train, X[train_items], test, X[test_items],
                              int((train.labels_per_item() > 0).sum())))
        else:
            test_mask = np.zeros(crowd.n_labels, dtype=bool)
            test_mask[fold] = True
            train = crowd.subset(~test_mask)
            test = crowd.subset(test_mask)
            out.append(_Split(train, X, test, X, int((train.labels_per_item() > 0).sum())))
    return out


def _make(candidate):
    """A fresh, unfitted copy of a candidate (an estimator or a factory)."""
    if not isinstance(candidate, type) and hasattr(candidate, "fit") \
            and hasattr(candidate, "get_params"):
        return type(candidate)(**candidate.get_params())
    if callable(candidate):
        model = candidate()
        if not hasattr(model, "fit"):
            raise ValueError(f"the factory {candidate!r} did not return an estimator")
        return model
    raise ValueError(f"a candidate must be an estimator with fit/predict/get_params or a "
                     f"factory returning one, got {candidate!r}")


def _score(model, split: _Split, weighting: str) -> float:
    pred = np.asarray(model.predict(X=split.X_test))
    return surrogate_risk(pred, split.test_labels, weighting=weighting)


# -- selection -----------------------------------------------------------------------------------
class SelectionResult(NamedTuple):
    """What :func:`select_by_surrogate` returns."""

    scores: dict       # name -> mean S-hat over folds
    fold_scores: dict  # name -> ndarray (n_folds,)
    best: str          # the name with the lowest S-hat
    model: object      # the best candidate refitted on all the data (None if refit=False)


def select_by_surrogate(candidates: dict, labels, X, *, holdout: float = 0.3, cv=None,
                        split: str = "items", weighting: str = "item", refit: bool = True,
                        random_state=None) -> SelectionResult:
    r"""Pick, among candidate models, the one with the lowest surrogate risk :math:`\hat S`.

    Every candidate is fitted on the training part (``fit(labels, X)``) and scored by
    :math:`\hat S` of ``predict(X=X_test)`` -- the classifier from the features alone --
    against the experts' held-out labels.

    Parameters
    ----------
    candidates : dict of name -> estimator or factory
        Estimators with ``fit(labels, X)``, ``predict(X=X)`` and ``get_params()`` (a fresh
        copy is fitted for every split), or functions returning one; e.g.
        ``{"EM": SparseExpertsEM(lam=0), "EM-Sparse": SparseExpertsEM(lam=20),
        "Majority": MajorityVoteLogistic(lam=5)}``.
    labels, X
        The crowd's labels and the items' features.
    holdout : float, default 0.3
        Fraction held out for scoring (one split), when ``cv`` is None.
    cv : int, optional
        K-fold cross-validation instead: every fold is held out once, the score is
        the mean over folds.
    split : {"items", "labels"}, default "items"
        Hold out items (all their labels; the paper's protocol) or individual labels
        (the model is then scored on items whose other labels it was trained on).
    weighting : {"item", "label"}
        As in :func:`surrogate_risk`.
    refit : bool, default True
        Refit the winner on all the data.
    random_state : None, int or Generator
        For the split.

    Returns
    -------
    SelectionResult
    """
    if not isinstance(candidates, dict) or not candidates:
        raise ValueError("candidates must be a non-empty dict of name -> estimator")
    refit = check_bool(refit, "refit")
    crowd, X = _read_input(labels, X)
    rng = check_random_state(random_state)
    splits = _splits(crowd, X, holdout=holdout, cv=cv, split=split, rng=rng)
    fold_scores = {}
    for name, cand in candidates.items():
        fold_scores[name] = np.array([_score(_make(cand).fit(s.train_labels, s.X_train), s,
                                             weighting) for s in splits])
    scores = {name: float(v.mean()) for name, v in fold_scores.items()}
    best = min(scores, key=scores.get)
    model = _make(candidates[best]).fit(crowd, X) if refit else None
    return SelectionResult(scores, fold_scores, best, model)


class PenaltySelection(NamedTuple):
    """What :func:`select_penalty` returns. ``scores[t]`` belongs to ``lambdas[t]``."""

    lambdas: np.ndarray      # (L,), decreasing, as applied to the training parts
    scores: np.ndarray       # (L,): mean S-hat over folds
    fold_scores: np.ndarray  # (n_folds, L)
    best_index: int
    best_lambda: float       # lambdas[best_index]
    refit_lambda: float      # the penalty used for the refit on all the data
    model: object            # SparseExpertsEM refitted on all the data (None if refit=False)


def select_penalty(labels, X, lambdas=None, *, holdout: float = 0.3, cv=None,
                   split: str = "items", weighting: str = "item", refit: bool = True,
                   n_lambdas: int = 20, lambda_min_ratio: float = 1e-2, progress=None,
                   model_params: dict | None = None, random_state=None) -> PenaltySelection:
    r"""Choose the penalty :math:`\lambda` of :class:`~crowdlearn.features.sparse_experts.SparseExpertsEM`
    by the surrogate risk :math:`\hat S`, without true labels.

    On each training part the whole penalty path is fitted with warm starts
    (:func:`~crowdlearn.features.sparse_experts.sparse_experts_path`) and every fit is scored by
    :math:`\hat S` on the held-out part; the :math:`\lambda` with the lowest mean score wins.

    Parameters
    ----------
    labels, X
    lambdas : array-like, optional
        Penalties to try (default: ``n_lambdas`` values from :math:`\lambda_{\max}` of
        the first training part down to ``lambda_min_ratio`` times it, used for all folds).
    holdout, cv, split, weighting, random_state
        As in :func:`select_by_surrogate`.
    refit : bool, default True
        Refit on all the data. The penalty multiplies a *sum* over items, so the
        refit uses :math:`\lambda^*` times the number of labelled items over the number
        of them it was chosen on: the same penalty per item (``refit_lambda``).
    n_lambdas, lambda_min_ratio, progress
        As in :func:`~crowdlearn.features.sparse_experts.sparse_experts_path`.
    model_params : dict, optional
        Other parameters of :class:`SparseExpertsEM`.

    Returns
    -------
    PenaltySelection
    """
    refit = check_bool(refit, "refit")
    crowd, X = _read_input(labels, X)
    rng = check_random_state(random_state)
    splits = _splits(crowd, X, holdout=holdout, cv=cv, split=split, rng=rng)
    model_params = dict(model_params or {})
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in splits:
            path = sparse_experts_path(s.train_labels, s.X_train, lambdas, n_lambdas=n_lambdas,
                                       lambda_min_ratio=lambda_min_ratio, progress=progress,
                                       model_params=model_params)
            lambdas = path.lambdas  # later folds use the same grid
            rows.append([_score(m, s, weighting) for m in path.models])
    reissue_warnings(caught, f"the penalty paths of the {len(splits)} training part(s)")
    fold_scores = np.array(rows)
    scores = fold_scores.mean(axis=0)
    best = int(np.argmin(scores))
    best_lambda = float(lambdas[best])
    n_labelled = int((crowd.labels_per_item() > 0).sum())
    n_train = float(np.mean([s.n_train_items for s in splits]))
    refit_lambda = best_lambda * n_labelled / n_train
    model = None
    if refit:
        model = SparseExpertsEM(lam=refit_lambda, **model_params).fit(crowd, X)
    return PenaltySelection(np.asarray(lambdas), scores, fold_scores, best, best_lambda,
                            refit_lambda, model)


# -- choosing an aggregation model by the labels it predicts (Paun et al. 2018) ------------------
class HeldoutLikelihood(NamedTuple):
    """What :func:`heldout_label_likelihood` returns; every dict is keyed by model name."""

    scores: dict       # name -> mean held-out log-likelihood per label (all folds pooled)
    fold_scores: dict  # name -> ndarray (n_folds,): the mean per held-out label in each fold
    se: dict           # name -> standard error of the mean over folds
    best_: str         # the name with the highest score
    n_heldout: np.ndarray  # (n_folds,): how many labels each fold held out


def _canonical(crowd: CrowdLabels) -> CrowdLabels:
    """The same labels sorted by (item, expert, label): the input's row order is lost."""
    order = np.lexsort((crowd.label, crowd.expert, crowd.item))
    return CrowdLabels(crowd.item[order], crowd.expert[order], crowd.label[order],
                       crowd.n_items, crowd.n_experts, crowd.n_classes, crowd.item_ids,
                       crowd.expert_ids, crowd.class_ids)


def _label_folds(crowd: CrowdLabels, n_folds: int, rng) -> np.ndarray:
    """Fold of every label (-1: never held out). An item's labels, in random order, go to
    consecutive folds from a random one, so no fold takes all of an item's labels; an
    item's only label is never held out (nothing would be left to predict it from)."""
    per_item = crowd.labels_per_item()
    order = np.lexsort((rng.random(crowd.n_labels), crowd.item))  # crowd sorted by item
    rank = np.empty(crowd.n_labels, dtype=np.intp)
    start = np.cumsum(per_item) - per_item
    rank[order] = np.arange(crowd.n_labels) - start[crowd.item[order]]
    fold = (rng.integers(n_folds, size=crowd.n_items)[crowd.item] + rank) % n_folds
    fold[per_item[crowd.item] < 2] = -1
    sizes = np.bincount(fold[fold >= 0], minlength=n_folds)
    if (sizes == 0).any():
        raise ValueError(f"n_folds={n_folds} leaves a fold without labels: only "
                         f"{int(sizes.sum())} labels are on items with two labels or more")
    return fold


def _pooled(per_worker: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The average over workers (axis 0) weighted by their training labels."""
    return np.tensordot(weight, per_worker, axes=1) / weight.sum()


def _label_given_truth(model, train: CrowdLabels, test: CrowdLabels) -> np.ndarray:
    r"""``(n_test, K)``: :math:`P(\text{held-out label} \mid y = n)` under the fitted model.
    A worker without training labels gets the crowd's pooled matrix (the average of the
    others', weighted by their training labels)."""
    K = train.n_classes
    counts = train.labels_per_expert().astype(float)
    unseen = counts == 0
    if hasattr(model, "confusion_"):  # Dawid-Skene, one-coin, MACE: [worker, truth, label]
        conf = np.array(model.confusion_, dtype=float)
        if unseen.any():
            conf[unseen] = _pooled(conf[~unseen], counts[~unseen])
        return conf[test.expert, :, test.label]
    if hasattr(model, "ability_") and hasattr(model, "beta_"):  # GLAD
        ability, beta = np.asarray(model.ability_, float), np.asarray(model.beta_, float)
        right = 1.0 / (1.0 + np.exp(-ability[test.expert] * beta[test.item]))
        new = unseen[test.expert]
        if new.any():
            odds = ability[~unseen][None, :] * beta[test.item[new]][:, None]
            right[new] = (1.0 / (1.0 + np.exp(-odds))) @ counts[~unseen] / counts.sum()
    else:  # a vote: one accuracy shared by all, the training labels' mean agreement
        q = np.asarray(model.posterior_, dtype=float)[train.item, train.label]
        right = np.full(test.n_labels, (q.sum() + 1.0) / (train.n_labels + 2.0))
    hit = np.arange(K)[None, :] == test.label[:, None]
    return np.where(hit, right[:, None], ((1.0 - right) / (K - 1))[:, None])


def _heldout_logs(model, train: CrowdLabels, test: CrowdLabels, name: str,
                  smoothing: float) -> np.ndarray:
    r"""Log-probability of each held-out label under ``model`` fitted on ``train``, each
    worker's :math:`P(p \mid n)` shrunk towards 1/N by ``smoothing`` pseudo-labels."""
    post = getattr(model, "posterior_", None)
    shape = (train.n_items, train.n_classes)
    if post is None or np.shape(post) != shape:
        raise ValueError(f"model {name!r} has no posterior_ of shape {shape} after fit: "
                         f"it cannot predict held-out labels")
    q = np.asarray(post, dtype=float)[test.item]
    counts = train.labels_per_expert().astype(float)
    counts[counts == 0] = counts[counts > 0].mean()  # the pooled matrix: an average worker
    n = counts[test.expert][:, None]
    m = (n * _label_given_truth(model, train, test) + smoothing / train.n_classes) \
        / (n + smoothing)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(q * m, axis=1))


def _fold_logs(models: dict, crowd: CrowdLabels, fold, n_folds: int, smoothing) -> dict:
    """name -> the log-probability of every label when its fold was held out."""
    logs = {name: np.full(crowd.n_labels, np.nan) for name in models}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(n_folds):
            train, test = crowd.subset(fold != k), crowd.subset(fold == k)
            for name, cand in models.items():
                model = _make(cand).fit(train)
                logs[name][fold == k] = _heldout_logs(model, train, test, name, smoothing)
    reissue_warnings(caught, f"{len(models)} models on {n_folds} folds")
    return logs


def _summary(logs: dict, fold: np.ndarray, n_folds: int) -> HeldoutLikelihood:
    held = fold >= 0
    sizes = np.bincount(fold[held], minlength=n_folds)
    fold_scores = {name: np.bincount(fold[held], weights=v[held], minlength=n_folds) / sizes
                   for name, v in logs.items()}
    scores = {name: float(v[held].mean()) for name, v in logs.items()}
    with np.errstate(invalid="ignore"):
        se = {name: float(np.std(v, ddof=1) / np.sqrt(n_folds))
              for name, v in fold_scores.items()}
    best = max(scores, key=lambda name: -np.inf if np.isnan(scores[name]) else scores[name])
    return HeldoutLikelihood(scores, fold_scores, se, best, sizes)


def heldout_label_likelihood(models: dict, labels, *, n_folds: int = 5,
                             smoothing: float = 1.0, random_state=None) -> HeldoutLikelihood:
    r"""Compare aggregation models on a crowd without truth: how well each predicts the
    labels it did not see (the held-out likelihood of Paun et al. 2018, TACL 6, 571-585).

    The labels (not the items) are split into ``n_folds`` folds. Every model is fitted on
    all folds but one, and each held-out label :math:`y^{(i)}_r = p` is scored by

    .. math::

        \log \sum_{n=1}^{N} Q_i(n)\, P(y_r = p \mid y = n),

    with :math:`Q_i` the fitted model's posterior of item :math:`i` from its training
    labels (``posterior_``) and :math:`P(y_r = p \mid y = n)` read from its fitted
    attributes: the confusion matrices ``confusion_`` (Dawid--Skene, one-coin, MACE,
    whose ``confusion_`` is :math:`\rho_r 1\{p = n\} + (1 - \rho_r)\xi_{r,p}`); for GLAD
    :math:`\sigma(\alpha_r\tau_i)` on the true class and
    :math:`(1 - \sigma(\alpha_r\tau_i))/(N - 1)` on each other (``ability_``, ``beta_``);
    for a model without either (majority vote and the weighted votes), one accuracy
    ``acc`` shared by all workers: right with ``acc`` and each wrong class with
    ``(1 - acc) / (N - 1)``, where ``acc = (1 + sum of Q_i(p)) / (2 + L)`` over the
    :math:`L` training labels :math:`y^{(i)}_r = p` (their mean agreement with the vote's
    posterior, smoothed so that it is never 0 or 1). A point estimate can give a held-out
    label probability zero (a worker always right in training), and one such label makes
    the score :math:`-\infty`; so each worker's :math:`P(y_r = p \mid y = n)` becomes
    ``(|I_r| * P + smoothing / N) / (|I_r| + smoothing)``, with :math:`\lvert I_r\rvert`
    its training labels: a symmetric Dirichlet prior of weight ``smoothing`` on each row.

    Each item's labels go to different folds (in random order, from a random fold on),
    so an item with two labels or more keeps at least one for training in every fold;
    an item with a single label is never held out. A worker all of whose labels fall in
    the held-out fold gets the crowd's pooled :math:`P(y_r = p \mid y = n)`: the other
    workers' average, weighted by their training labels. The labels are sorted first,
    so the result does not depend on the order of the input rows.

    Parameters
    ----------
    models : dict of name -> estimator or factory
        Unfitted estimators with ``fit(labels)`` and ``get_params()`` (a fresh copy is
        fitted on every fold) or functions or classes returning one, e.g. ``{"DS":
        DawidSkene(), "MV": MajorityVote}``; a fitted model must have ``posterior_``.
    labels : CrowdLabels or any form :func:`~crowdlearn.as_crowd_labels` reads
    n_folds : int, default 5
        Number of folds (>= 2).
    smoothing : float, default 1.0
        Pseudo-labels per worker (>= 0); ``0`` scores the model's own probabilities.
    random_state : None, int or Generator
        For the folds (the same seed gives the same folds and scores).

    Returns
    -------
    HeldoutLikelihood
        ``scores[name]``: the mean log-probability per held-out label over all folds;
        ``fold_scores[name]``: the mean in each fold; ``se[name]``: their standard
        deviation divided by ``sqrt(n_folds)``; ``best_``: the name with the highest
        score; ``n_heldout``: the labels held out in each fold.

    Examples
    --------
    >>> from crowdlearn import DawidSkene, MajorityVote, datasets
    >>> crowd = datasets.load_dataset("wsd").labels
    >>> res = heldout_label_likelihood({"DS": DawidSkene(), "MV": MajorityVote}, crowd)
    >>> int(res.n_heldout.sum()) == crowd.n_labels, res.fold_scores["DS"].shape
    (True, (5,))
    """
    if not isinstance(models, dict) or not models:
        raise ValueError("models must be a non-empty dict of name -> estimator or factory")
    check_scalar(n_folds, "n_folds", kind=numbers.Integral, low=2)
    check_scalar(smoothing, "smoothing", low=0.0)
    crowd = _canonical(as_crowd_labels(labels))
    fold = _label_folds(crowd, int(n_folds), check_random_state(random_state))
    return _summary(_fold_logs(models, crowd, fold, int(n_folds), smoothing), fold,
                    int(n_folds))


# -- calibration of posteriors against truth -----------------------------------------------------
class CalibrationCurve(NamedTuple):
    """What :func:`calibration_curve` returns, one entry per confidence bin."""

    confidence: np.ndarray  # (n_bins,) mean top posterior in the bin (NaN if empty)
    accuracy: np.ndarray    # (n_bins,) fraction of its items whose top class is the truth
    count: np.ndarray       # (n_bins,) items in the bin
    edges: np.ndarray       # (n_bins + 1,) the bins' edges, 0 to 1


def _confidence_and_hits(posterior, truth) -> tuple[np.ndarray, np.ndarray]:
    post = as_float_array(posterior, "posterior")
    if post.ndim != 2 or post.shape[1] < 2 or post.shape[0] == 0:
        raise ValueError(f"posterior must be a non-empty (n_items, n_classes) array with "
                         f"n_classes >= 2, got shape {post.shape}")
    if not np.isfinite(post).all() or (post < 0).any() \
            or not np.allclose(post.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("posterior rows must be probabilities: finite, >= 0, summing to 1")
    truth = np.asarray(truth)
    if truth.shape != (post.shape[0],) or not np.issubdtype(truth.dtype, np.integer):
        raise ValueError(f"truth must be an integer array of shape ({post.shape[0]},), one "
                         f"class index per posterior row (-1 where unknown), got "
                         f"{truth.dtype} of shape {truth.shape}")
    if (truth >= post.shape[1]).any():
        raise ValueError(f"truth has class indices >= n_classes={post.shape[1]}")
    known = truth >= 0
    if not known.any():
        raise ValueError("truth is unknown (-1) for every item: nothing to calibrate against")
    post, truth = post[known], truth[known]
    return post.max(axis=1), np.argmax(post, axis=1) == truth


def calibration_curve(posterior, truth, *, n_bins: int = 10) -> CalibrationCurve:
    r"""The reliability curve of a model's posteriors: in each bin of confidence (the top
    posterior probability :math:`\max_n Q_i(n)` of an item), the mean confidence, the
    accuracy of the top class against the truth, and the number of items.

    Parameters
    ----------
    posterior : array-like of shape (n_items, n_classes)
        Rows of probabilities, e.g. a fitted model's ``predict_proba()``.
    truth : array-like of int, shape (n_items,)
        True class indices, ``-1`` where unknown (those items are left out).
    n_bins : int, default 10
        Equal-width bins on [0, 1]; the last one includes 1.

    Returns
    -------
    CalibrationCurve
        A calibrated model has ``accuracy`` close to ``confidence`` in every bin.

    Examples
    --------
    >>> post = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> curve = calibration_curve(post, [0, 1, 1, -1], n_bins=2)
    >>> curve.count.tolist(), curve.accuracy.round(3).tolist()
    ([0, 3], [nan, 0.667])
    >>> curve.confidence.round(3).tolist()
    [nan, 0.8]
    >>> round(expected_calibration_error(post, [0, 1, 1, -1], n_bins=2), 3)
    0.133
    """
    check_scalar(n_bins, "n_bins", kind=numbers.Integral, low=1)
    conf, hit = _confidence_and_hits(posterior, truth)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    b = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(b, weights=conf, minlength=n_bins) / count
        accuracy = np.bincount(b, weights=hit.astype(float), minlength=n_bins) / count
    return CalibrationCurve(mean_conf, accuracy, count, edges)


def expected_calibration_error(posterior, truth, *, n_bins: int = 10) -> float:
    r"""The expected calibration error (Guo et al. 2017): the gap between accuracy and
    confidence in each bin of the :func:`calibration_curve`, averaged over the bins
    weighted by their items, ``sum(count * |accuracy - confidence|) / sum(count)`` (empty
    bins left out) over the items with known truth. 0 for a calibrated model (up to the
    binning and the sample); at most 1. Arguments as in :func:`calibration_curve`.
    """
    curve = calibration_curve(posterior, truth, n_bins=n_bins)
    full = curve.count > 0
    gap = np.abs(curve.accuracy[full] - curve.confidence[full])
    return float(np.sum(curve.count[full] * gap) / curve.count.sum())
