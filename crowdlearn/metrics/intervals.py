"""Confidence intervals for every worker's quality under a fitted Dawid--Skene or one-coin
model: bootstrap, observed (Louis) information, Beta/Dirichlet counts (the methods are told
in the notes of :mod:`crowdlearn.metrics`)."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass

import numpy as np
from scipy import sparse, stats
from scipy.special import expit

from crowdlearn._limits import get_size_limits
from crowdlearn._validation import check_scalar
from crowdlearn.aggregation._ds_kernel import one_coin_matrices
from crowdlearn.aggregation.dawid_skene import DawidSkene, e_step, expected_counts
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.labels import CrowdLabels, _is_dataframe, _reindex_onto, as_crowd_labels
from crowdlearn.metrics._resample import _accuracy, _bootstrap

__all__ = ["WorkerQualityIntervals", "worker_quality_intervals"]


# -- worker quality intervals -----------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class WorkerQualityIntervals:
    r"""Confidence intervals for every worker's quality (see :func:`worker_quality_intervals`).

    Attributes
    ----------
    accuracy, accuracy_lower, accuracy_upper : ndarray of shape (n_experts,)
        The fitted accuracy :math:`\sum_n \phi_n M^{(r)}_{n,n}` (``accuracy_``
        for one-coin) and the interval around it.
    confusion, confusion_lower, confusion_upper : ndarray of shape (n_experts, K, K)
        The fitted confusion matrices and entry-wise intervals
        (``[j, k, l]``: P(worker j says l | true class k)).
    level : float
        Nominal coverage of every interval (each one on its own, not jointly).
    method : str
        ``"bootstrap"``, ``"fisher"`` or ``"counts"``.
    n_boot : int
        Bootstrap replicates used (0 for the other methods).
    boot_accuracy : ndarray of shape (n_boot, n_experts) or None
        The bootstrap replicates of the accuracies (aligned to the fitted classes).
    expert_ids : ndarray or None
        The workers' original identifiers when the model was fitted on a table.
    n_relabelled : int
        Bootstrap replicates whose hidden classes came back permuted and were
        matched to the fitted ones (0 for the other methods, and with
        ``match_classes=False``).
    """

    accuracy: np.ndarray
    accuracy_lower: np.ndarray
    accuracy_upper: np.ndarray
    confusion: np.ndarray
    confusion_lower: np.ndarray
    confusion_upper: np.ndarray
    level: float
    method: str
    n_boot: int = 0
    boot_accuracy: np.ndarray | None = None
    expert_ids: np.ndarray | None = None
    n_relabelled: int = 0

    def to_frame(self):
        """The accuracy intervals as a pandas DataFrame indexed by worker."""
        from crowdlearn.frames import require_pandas
        pd = require_pandas()
        ids = np.arange(self.accuracy.shape[0]) if self.expert_ids is None else self.expert_ids
        return pd.DataFrame({"accuracy": self.accuracy, "lower": self.accuracy_lower,
                             "upper": self.accuracy_upper},
                            index=pd.Index(ids, name="worker"))


def _training_crowd(model, labels) -> CrowdLabels:
    """The labels as CrowdLabels indexed like the fitted model; refuse other labels."""
    if not isinstance(model, DawidSkene):
        raise ValueError(f"model must be a fitted DawidSkene or OneCoinDawidSkene, got "
                         f"{type(model).__name__}")
    model.check_is_fitted()
    if getattr(model, "n_features_in_", 0):
        raise ValueError("worker_quality_intervals does not support models fitted with "
                         "features X")
    prior = model.prior_counts_
    extras = [what for what, used in (
        ("gold", getattr(model, "gold_", None) is not None),
        ("confusion_prior", prior is not None and not isinstance(prior, tuple)),
        ("an accuracy prior", isinstance(prior, tuple))) if used]
    if extras:
        raise ValueError(f"worker_quality_intervals supports models fitted with alpha as "
                         f"their only prior; this one was fitted with {', '.join(extras)}")
    J, K, n = model.n_experts_, model.n_classes_, model.n_items_
    if labels is None:
        raise ValueError("labels is None: pass the labels the model was fitted on")
    dense = isinstance(labels, np.ndarray) or isinstance(labels, list)
    from_ids = isinstance(labels, CrowdLabels) or _is_dataframe(labels)
    crowd = as_crowd_labels(labels, n_classes=None if from_ids else K)
    if crowd.expert_ids is not None or crowd.class_ids is not None:
        crowd = _reindex_onto(crowd, model.expert_ids_, model.class_ids_)
    if crowd.n_experts > J or (dense and crowd.n_experts != J):
        raise ValueError(f"the labels come from {crowd.n_experts} experts but the model was "
                         f"fitted on n_experts={J}: pass the labels it was fitted on")
    if crowd.n_classes > K:
        raise ValueError(f"the labels have {crowd.n_classes} classes but the model was "
                         f"fitted with n_classes={K}")
    if crowd.n_items > n or (crowd.n_items != n and not isinstance(labels, tuple)):
        raise ValueError(f"the labels describe {crowd.n_items} items but the model was "
                         f"fitted on n_items={n}: pass the labels it was fitted on")
    crowd = CrowdLabels(crowd.item, crowd.expert, crowd.label, n, J, K)
    q, _ = e_step(crowd, model.params_)
    if not np.allclose(q, model.posterior_, atol=1e-6, rtol=0):
        raise ValueError("these labels do not match the fitted model (its posterior on them "
                         "differs from posterior_): pass the labels the model was fitted on")
    return crowd


def _check_common(level, n_boot):
    check_scalar(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    check_scalar(n_boot, "n_boot", kind=numbers.Integral, low=1)


def worker_quality_intervals(model, labels, *, method: str = "bootstrap", n_boot: int = 200,
                             level: float = 0.95, random_state=None, n_jobs=None,
                             max_iter: int = 200, tol: float = 1e-8,
                             match_classes: bool = True) -> WorkerQualityIntervals:
    r"""Confidence intervals for each worker's accuracy and confusion matrix.

    Parameters
    ----------
    model : fitted DawidSkene or OneCoinDawidSkene
        Fitted without features.
    labels : labels the model was fitted on, in any form ``fit`` accepts
        Checked against the model: sizes, identifiers, and the posterior they
        give under the fitted parameters must be ``posterior_``.
    method : {"bootstrap", "fisher", "counts"}, default "bootstrap"
        ``"bootstrap"``: percentile intervals from a bootstrap over items (any
        model). ``"fisher"``: observed-information (Wald) intervals on the logit
        scale, :class:`~crowdlearn.OneCoinDawidSkene` only. ``"counts"``:
        Beta/Dirichlet intervals from the expected counts (fast; any model).
    n_boot : int, default 200
        Bootstrap replicates (``method="bootstrap"`` only; must be >= 1 always).
    level : float in (0, 1), default 0.95
        Coverage of every single interval.
    random_state : None, int or Generator
        Seed of the bootstrap; the same seed gives the same intervals, whatever
        ``n_jobs``.
    n_jobs : int, optional
        Threads running bootstrap replicates (``-1``: all CPUs; default 1).
    max_iter, tol : int, float
        EM on each bootstrap sample stops after ``max_iter`` iterations or by the
        models' rule: when its objective (the log-likelihood of the resample plus the
        ``alpha`` prior term) rises by at most ``tol * max(1, |objective|)``
        (:func:`crowdlearn.em.objective_converged`; the default is the models' ``tol``).
    match_classes : bool, default True
        Match each bootstrap replicate's hidden classes to the fitted ones
        before taking percentiles (see the module's notes). ``False`` skips the matching, to
        show what it does: a replicate that came back with its classes
        permuted then reports the accuracies of the permuted classes.

    Returns
    -------
    WorkerQualityIntervals
        ``accuracy*`` of shape ``(n_experts,)``, ``confusion*`` of shape
        ``(n_experts, K, K)``; the estimates are the fitted ones.

    Notes
    -----
    Accuracy of worker :math:`r` means :math:`\sum_n \phi_n M^{(r)}_{n,n}`,
    the probability that its label is right on a random item (for the one-coin
    model :math:`\eta_r`, ``accuracy_``).

    How each method works (bootstrap, Louis' observed information, Beta/Dirichlet
    counts), and what each ignores, is told in the module's notes
    (:mod:`crowdlearn.metrics`).
    """
    n_jobs = _check_interval_args(method, level, n_boot, max_iter, tol, n_jobs, match_classes)
    one_coin = isinstance(model, OneCoinDawidSkene)
    crowd = _training_crowd(model, labels)
    if method == "fisher" and not one_coin:
        raise ValueError("method='fisher' is implemented for OneCoinDawidSkene accuracies; "
                         "use method='bootstrap' or 'counts' for DawidSkene")
    est_conf = np.array(model.confusion_, dtype=float)
    est_acc = _accuracy(np.asarray(model.class_prior_, float), est_conf)
    common = dict(accuracy=est_acc, confusion=est_conf, level=float(level), method=method,
                  expert_ids=model.expert_ids_)
    if method == "bootstrap":
        return _bootstrap_intervals(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
                                    bool(match_classes), level, common)
    if method == "fisher":
        a_lo, a_hi = _fisher_one_coin(model, crowd, level)
    else:
        a_lo, a_hi, c_lo, c_hi = _counts(model, crowd, level, one_coin)
    if one_coin:
        c_lo, c_hi = _one_coin_bounds(a_lo, a_hi, model.n_classes_)
    return WorkerQualityIntervals(accuracy_lower=a_lo, accuracy_upper=a_hi,
                                  confusion_lower=c_lo, confusion_upper=c_hi, **common)


def _check_interval_args(method, level, n_boot, max_iter, tol, n_jobs, match_classes) -> int:
    """``ValueError`` for an argument :func:`worker_quality_intervals` cannot take; the
    number of threads (``n_jobs``: None is 1, -1 is every CPU)."""
    if method not in ("bootstrap", "fisher", "counts"):
        raise ValueError(f"method must be 'bootstrap', 'fisher' or 'counts', got {method!r}")
    _check_common(level, n_boot)
    check_scalar(max_iter, "max_iter", kind=numbers.Integral, low=1)
    check_scalar(tol, "tol", low=0.0)
    if n_jobs is None:
        n_jobs = 1
    check_scalar(n_jobs, "n_jobs", kind=numbers.Integral)
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
    if match_classes not in (True, False):
        raise ValueError(f"match_classes must be True or False, got {match_classes!r}")
    return n_jobs


def _check_boot_size(n_boot: int, crowd: CrowdLabels) -> None:
    """``ValueError`` when the bootstrap's tables -- the resampled item indices
    ``(n_boot, n_items)`` and the replicates' confusion matrices
    ``(n_boot, n_experts, K, K)`` -- exceed the size limits' ``max_cells``."""
    K = crowd.n_classes
    cells = n_boot * max(crowd.n_items, crowd.n_experts * K * K)
    limit = get_size_limits().max_cells
    if cells > limit:
        raise ValueError(f"n_boot={n_boot:,} would keep {cells:,} numbers per table "
                         f"({cells * 8 / 2 ** 30:.1f} GiB) for {crowd.n_items:,} items, "
                         f"{crowd.n_experts:,} experts and {K} classes, beyond the size "
                         f"limits' max_cells={limit:,}; use fewer replicates (a few hundred "
                         f"give percentile intervals) or raise the limit with "
                         f"crowdlearn.size_limits(max_cells=...)")


def _bootstrap_intervals(model, crowd, n_boot, random_state, n_jobs, max_iter, tol,
                         match_classes, level, common) -> WorkerQualityIntervals:
    """The percentile intervals of ``n_boot`` bootstrap refits (see :func:`_bootstrap`)."""
    _check_boot_size(int(n_boot), crowd)
    acc, conf, n_relabelled = _bootstrap(model, crowd, n_boot, random_state, n_jobs,
                                         max_iter, tol, match_classes)
    tail = (1.0 - level) / 2
    a_lo, a_hi = np.quantile(acc, [tail, 1 - tail], axis=0)
    c_lo, c_hi = np.quantile(conf, [tail, 1 - tail], axis=0)
    return WorkerQualityIntervals(accuracy_lower=a_lo, accuracy_upper=a_hi,
                                  confusion_lower=c_lo, confusion_upper=c_hi,
                                  n_boot=int(n_boot), boot_accuracy=acc,
                                  n_relabelled=n_relabelled, **common)


def _one_coin_bounds(lo, hi, K):
    """Entry-wise bounds of one-coin confusion matrices from bounds on the accuracy."""
    c_lo = one_coin_matrices(lo, K)
    c_hi = one_coin_matrices(hi, K)
    off = ~np.eye(K, dtype=bool)
    c_lo[:, off], c_hi[:, off] = c_hi[:, off], c_lo[:, off]  # off-diagonal decreases in p
    return c_lo, c_hi


# -- counts ------------------------------------------------------------------------------------
def _expected(model, crowd):
    counts, _ = expected_counts(crowd, model.posterior_)
    return counts  # (J, K true, K label)


def _counts(model, crowd, level, one_coin):
    tail = (1.0 - level) / 2
    a = float(model.alpha)
    counts = _expected(model, crowd)
    J, K, _ = counts.shape
    if one_coin:
        correct = np.einsum("jkk->j", counts)
        n_r = counts.sum(axis=(1, 2))
        lo, hi = _beta_bounds(correct + a + 1, n_r - correct + a + 1, tail)
        lo[n_r == 0], hi[n_r == 0] = 0.0, 1.0
        return lo, hi, None, None
    conc = counts + a + 1.0                                 # Dirichlet parameters per row
    total = conc.sum(axis=2, keepdims=True)
    c_lo, c_hi = _beta_bounds(conc, total - conc, tail)
    phi = np.asarray(model.class_prior_, float)
    d = np.einsum("jkk->jk", conc)
    tot = total[..., 0]
    mean_kk = d / tot
    var_kk = d * (tot - d) / (tot ** 2 * (tot + 1))
    mean = (phi * mean_kk).sum(axis=1)
    var = (phi ** 2 * var_kk).sum(axis=1)
    # the Beta with this mean and variance: a + b = m (1 - m) / v - 1
    s = mean * (1 - mean) / np.maximum(var, 1e-300) - 1.0
    s = np.maximum(s, 1e-6)
    lo, hi = _beta_bounds(mean * s, (1 - mean) * s, tail)
    return lo, hi, c_lo, c_hi


def _beta_bounds(a, b, tail):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    lo = np.where(a > 0, stats.beta.ppf(tail, np.maximum(a, 1e-300), np.maximum(b, 1e-300)), 0.0)
    hi = np.where(b > 0, stats.beta.ppf(1 - tail, np.maximum(a, 1e-300),
                                        np.maximum(b, 1e-300)), 1.0)
    return np.asarray(lo, float), np.asarray(hi, float)


# -- Fisher (one-coin) -------------------------------------------------------------------------
def _one_coin_information(model, crowd) -> np.ndarray:
    """Observed information (Louis) in (logits alpha_r of the accuracies, prior logits beta_0a)."""
    q = np.asarray(model.posterior_, float)
    n, K = q.shape
    J = model.n_experts_
    p = np.asarray(model.accuracy_, float)
    phi = np.asarray(model.class_prior_, float)
    a = float(model.alpha)
    P = J + K - 1
    item, expert, label = crowd.item, crowd.expert, crowd.label
    ks = np.arange(K)
    # centred scores S[(i, k), r] = sum_{t in (i, r)} (1{l_t = k} - q_i(l_t))
    rows_l = (item[:, None] * K + ks[None, :]).ravel()
    cols_l = np.repeat(expert, K)
    vals_l = ((label[:, None] == ks[None, :]) - q[item, label][:, None]).ravel()
    # S[(i, k), J + a] = 1{k = a} - q_i(a), a < K - 1
    ii, kk, aa = np.meshgrid(np.arange(n), ks, np.arange(K - 1), indexing="ij")
    rows_p = (ii * K + kk).ravel()
    cols_p = J + aa.ravel()
    vals_p = ((kk == aa).astype(float) - q[ii, aa]).ravel()
    S = sparse.csr_array((np.concatenate([vals_l, vals_p]),
                          (np.concatenate([rows_l, rows_p]), np.concatenate([cols_l, cols_p]))),
                         shape=(n * K, P))
    lost = S.T @ (S * q.reshape(-1, 1))
    lost = lost.toarray() if sparse.issparse(lost) else np.asarray(lost)
    n_r = np.bincount(expert, minlength=J).astype(float)
    info = -lost
    info[np.arange(J), np.arange(J)] += (n_r + 2 * a) * p * (1 - p)
    cov_phi = np.diag(phi) - np.outer(phi, phi)
    info[J:, J:] += (n + a * K) * cov_phi[:K - 1, :K - 1]
    return info


def _fisher_one_coin(model, crowd, level):
    z = stats.norm.ppf(0.5 + level / 2)
    J, K = model.n_experts_, model.n_classes_
    p = np.asarray(model.accuracy_, float)
    info = _one_coin_information(model, crowd)
    n_r = np.bincount(crowd.expert, minlength=J)
    eps = 1e-10
    phi = np.asarray(model.class_prior_, float)
    regular = np.concatenate([(n_r > 0) & (p > eps) & (p < 1 - eps),
                              np.full(K - 1, bool((phi > eps).all()))])
    var = np.full(J, np.inf)
    idx = np.flatnonzero(regular)
    if idx.size:
        sub = info[np.ix_(idx, idx)]
        try:
            cov = np.linalg.inv(np.linalg.cholesky(sub))
            diag = (cov ** 2).sum(axis=0)
        except np.linalg.LinAlgError:  # not positive definite: keep each worker alone
            d = np.diag(sub)
            diag = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), np.inf)
        workers = idx < J
        var[idx[workers]] = diag[workers]
    ok = np.isfinite(var) & (var > 0)
    eta = np.log(np.clip(p, eps, 1 - eps)) - np.log1p(-np.clip(p, eps, 1 - eps))
    half = z * np.sqrt(np.where(ok, var, 0.0))
    lo, hi = expit(eta - half), expit(eta + half)  # no overflow for huge half-widths
    if not ok.all():  # boundary estimates or no labels: the counts interval
        c_lo, c_hi, _, _ = _counts(model, crowd, level, True)
        lo = np.where(ok, lo, c_lo)
        hi = np.where(ok, hi, c_hi)
    return lo, hi
