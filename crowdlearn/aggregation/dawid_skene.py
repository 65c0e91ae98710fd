"""Dawid--Skene: one confusion matrix per expert, optional binary features, fitted by EM."""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import expit

from crowdlearn._base import (EMEstimator, posterior_or_refuse, user_stacklevel,
                              warn_if_not_converged)
from crowdlearn._validation import (as_float_array, check_binary_matrix, check_bool, check_flag,
                                     check_em_params, check_scalar)
from crowdlearn.frames import ClassPrior, IdResults, features_by_task, refuse_gold_as_features
from crowdlearn.exceptions import DegenerateFitWarning
from crowdlearn.labels import CrowdLabels, _is_dataframe, _reindex_onto, as_crowd_labels
from crowdlearn.aggregation._common import (_Data, _flat_indices,  # noqa: F401
                                            _ids_or_range, _new_crowd, _read_gold,
                                            _softmax_last, _softmax_rows_inplace)
from crowdlearn.aggregation._warm import (check_same_classes, class_positions, features_on,
                                          gold_on, item_positions, merge_crowds, start_on)
from crowdlearn.aggregation._incremental import IncrementalSteps
from crowdlearn.aggregation._ds_kernel import (align_with_vote, confusion_m_step, count_table,
                                               feature_m_step, log_joint, log_param_sum,
                                               log_prior_density, majority_start, split_counts)

__all__ = ["DawidSkene", "DawidSkeneParams", "e_step", "expected_counts", "m_step"]


class DawidSkeneParams(NamedTuple):
    """The parameters EM iterates on (what a callback sees as ``state.params``)."""

    class_prior: np.ndarray          # (K,)
    confusion: np.ndarray            # (n_experts, K, K)
    feature_prob: np.ndarray | None  # (K, n_features) or None


def _is_dask_frame(labels) -> bool:
    """A dask DataFrame (fitted by :func:`crowdlearn.distributed.dask_backend.fit_dask`)."""
    return type(labels).__module__.startswith("dask") and hasattr(labels, "npartitions")


def _is_tuple_input(labels) -> bool:
    return isinstance(labels, tuple) and len(labels) == 3


# Pseudo-counts beyond this (a trillion imagined labels) overflow the objective's sums of
# count x log-probability towards -inf; nobody means them, so they are refused.
MAX_PSEUDO_COUNT = 1e12

# partial_fit's refit="auto" fits from the vote again once the labels have grown by this
# factor since the last start from the vote (a few refits per doubling, amortised), and
# always on a crowd of at most REFIT_SMALL labels, whose refit takes milliseconds
REFIT_GROWTH = 2.0
REFIT_SMALL = 50_000


def _reissue(caught: list) -> None:
    """Warn again the warnings ``caught`` by ``warnings.catch_warnings(record=True)``, at
    the places they were first raised (the user's filters apply)."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _read_prior(prior, K: int, J: int) -> np.ndarray:
    """``prior`` as a float array; complex numbers, strings and masks refused (never cast)."""
    try:
        return as_float_array(prior, "confusion_prior")
    except ValueError as exc:
        raise ValueError(f"confusion_prior must be an array of real pseudo-counts of shape "
                         f"({K}, {K}) or ({J}, {K}, {K}): {exc}") from None


def _check_prior_values(arr: np.ndarray) -> None:
    if not np.isfinite(arr).all():
        raise ValueError("confusion_prior has NaN or infinite pseudo-counts")
    if (arr < 0).any():
        raise ValueError("confusion_prior has negative pseudo-counts; they must be >= 0")
    if (arr > MAX_PSEUDO_COUNT).any():
        raise ValueError(f"confusion_prior has pseudo-counts up to {arr.max():.3g}; at most "
                         f"{MAX_PSEUDO_COUNT:.0e} are accepted (larger ones overflow the "
                         f"objective; 1e7 already pins a confusion matrix)")


def _prior_counts(prior, crowd: CrowdLabels):
    """Read ``confusion_prior``: pseudo-counts ``(K, K)`` or ``(n_experts, K, K)``, or a
    DataFrame in crowd-kit's ``errors_`` layout; return ``(n_experts, K, K)`` or None."""
    if prior is None:
        return None
    J, K = crowd.n_experts, crowd.n_classes
    if type(prior).__module__.split(".")[0] == "pandas":
        prior = _prior_from_frame(prior, crowd)
    arr = _read_prior(prior, K, J)
    if arr.shape == (K, K):
        arr = np.broadcast_to(arr, (J, K, K)).copy()
    if arr.shape != (J, K, K):
        raise ValueError(f"confusion_prior must have shape ({K}, {K}) (one prior for every "
                         f"expert) or ({J}, {K}, {K}) (n_experts, true class, label), got "
                         f"{arr.shape}")
    _check_prior_values(arr)
    return arr if arr.any() else None


def _prior_from_frame(frame, crowd: CrowdLabels) -> np.ndarray:
    """A crowd-kit ``errors_``-style DataFrame (rows (worker, label), columns true class)."""
    J, K = crowd.n_experts, crowd.n_classes
    index = getattr(frame, "index", None)
    if getattr(index, "nlevels", 1) != 2:
        raise ValueError("a DataFrame confusion_prior must be in crowd-kit's errors_ layout: "
                         "rows indexed by (worker, label), columns the true classes")
    workers = {w: j for j, w in enumerate(_ids_or_range(crowd.expert_ids, J))}
    classes = {c: k for k, c in enumerate(_ids_or_range(crowd.class_ids, K))}
    out = np.zeros((J, K, K))
    unknown_cols = [c for c in frame.columns if c not in classes]
    if unknown_cols:
        raise ValueError(f"confusion_prior has columns that are not classes of the labels: "
                         f"{unknown_cols[:5]}")
    values = frame.to_numpy(dtype=float)
    for row, (w, l) in enumerate(index):
        if w not in workers:
            raise ValueError(f"confusion_prior names worker {w!r}, who gave no label")
        if l not in classes:
            raise ValueError(f"confusion_prior names label {l!r}, which is not a class")
        for col, c in enumerate(frame.columns):
            out[workers[w], classes[c], classes[l]] = values[row, col]
    return out


class DawidSkene(ClassPrior, IdResults, EMEstimator):
    r"""The Dawid--Skene model: one confusion matrix per expert, fitted by EM.

    Each item :math:`i` has a hidden true class :math:`y^{(i)} \in \{1, \dots, N\}`
    drawn from the class prior :math:`\phi_n = P(y = n)`. Expert :math:`r`
    labels it :math:`p` with probability :math:`M^{(r)}_{n,p} = P(y_r = p \mid y = n)`
    -- row :math:`n` of the expert's confusion
    matrix -- independently of the other experts. Optionally each item also has
    binary features :math:`x^{(i)}_j`, independent given the class (Naive Bayes),
    with :math:`\phi_{j\mid n} = P(x_j = 1 \mid y = n)`. Each item may be
    labelled by any subset :math:`R_i` of the experts, including none, and an
    expert may label an item more than once (each label counts as one draw).

    Parameters
    ----------
    n_classes : int, optional
        Number of classes :math:`N` (>= 2). Inferred from the labels when omitted;
        give it when some class was never used by any expert.
    alpha : float, default 0.0
        Dirichlet pseudo-count (>= 0) added to every expected count in the
        M-step. ``alpha=0`` is maximum likelihood (exact zero probabilities are
        handled: they give ``-inf`` log-probabilities, never NaN); ``alpha=1``
        gives the Laplace-smoothed formulas of the source; in general the fit is
        MAP-EM under symmetric Dirichlet(:math:`\alpha+1`) priors on the class
        prior and on every confusion row, and Beta(:math:`\alpha+1, \alpha+1`)
        priors on the feature probabilities.
    confusion_prior : array-like or DataFrame, optional
        Informative Dirichlet pseudo-counts :math:`A^{(r)}_{n,p} \ge 0` on the
        confusion rows, added to the expected counts at *every* M-step (MAP-EM,
        with :math:`\sum_{r,n,p} A^{(r)}_{n,p}\log M^{(r)}_{n,p}` added to the
        tracked objective): shape ``(K, K)`` for one prior shared by all experts
        or ``(n_experts, K, K)`` indexed ``[expert, true class, label]``, or a
        DataFrame in crowd-kit's ``errors_`` layout (rows ``(worker, label)``,
        columns the true class) when fitting a DataFrame. E.g.
        ``8 * np.eye(K) + 1`` says "every expert was right 8 times and made each
        mistake once" before seeing any label. (crowd-kit's ``initial_error``
        is added once, to the first M-step only, so its fit is neither the
        maximum likelihood nor the MAP estimate.) With ``OneCoinDawidSkene`` the
        diagonal counts as right answers and the rest as wrong ones.
    n_init : int, default 1
        Number of EM runs; the run with the highest final objective is kept.
        Run 0 starts from the soft majority vote, the others from random
        responsibilities drawn from a flat Dirichlet. With ``gold`` items one
        more run starts from the parameters the gold items alone suggest.
    max_iter : int, default 1000
        At most this many M-steps per run: a cap against a run that never settles, not a
        stopping rule (``tol`` is). Most crowds meet ``tol`` in 5 to 40 iterations (every
        bundled one does), but a large crowd with a rare class and many workers who label
        a handful of items converges slowly: on simulated product-matching crowds like
        crowd-kit's (8,000 items, 12% positive, 176 workers, 3 labels per item) the
        default ``tol`` took 35 to 281 iterations, so the former cap of 200 ended such a fit
        with a ``ConvergenceWarning``. An iteration costs about one pass over the labels.
    tol : float, default 1e-8
        A run stops when the objective rises by at most ``tol * max(1, |objective|)``: a
        relative change, so the same ``tol`` means the same on 300 labels and on 10M. It
        is not loosened to make slow fits stop sooner: where EM is slow, the objective is
        nearly flat along the direction in which the posterior still moves, and a looser
        rule stops far from the optimum (on the simulated crowd above ``tol=1e-6`` stopped
        after 78 iterations with 72 items on the other class than at the optimum; on the
        bundled crowds ``1e-8`` leaves every posterior within 2e-3 of it).
    accelerate : bool, default False
        Use SQUAREM (Varadhan and Roland 2008) on the log-parameters, with the
        engine's monotonicity safeguard: the objective still never decreases,
        the fixed point is the same, and on slowly converging crowds it takes a
        fraction of the iterations (``benchmarks/bench_practice.py``).
    random_state : None, int or numpy Generator
        Seed for the random restarts (turned into a ``Generator`` inside ``fit``).
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step; its
        ``params`` has fields ``class_prior``, ``confusion`` and
        ``feature_prob``. Returning ``True`` stops the run.
    progress : bool, default False
        ``True`` shows a progress bar over the restarts and iterations (an
        ``ipywidgets`` bar in a Jupyter kernel, one text line on ``sys.stderr``
        elsewhere); see :func:`~crowdlearn.fit_em`. Off by default.
    warm_start : bool, default False
        scikit-learn's ``warm_start``: when the model is already fitted (in memory),
        ``fit`` makes one EM run from the fitted parameters instead of ``n_init`` runs
        from the majority vote and random starts. Give it the *whole* crowd so far,
        e.g. the same labels plus some new ones: workers are matched by identifier
        (or by index), a new worker starts from the label-weighted mean of the fitted
        confusion matrices. The classes (and the number of features) must be those
        of the fit. :meth:`partial_fit` does the same with only the new labels.

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_classes,)
        :math:`\phi_n = P(y = n)`.
    priors_ : ndarray or pandas Series
        A copy of ``class_prior_`` under crowd-kit's name: a Series named ``"prior"``
        indexed by class id when fitted on a DataFrame.
    confusion_ : ndarray of shape (n_experts, n_classes, n_classes)
        ``confusion_[r, n, p]`` :math:`= M^{(r)}_{n,p} = P(y_r = p \mid y = n)`, the
        probability that expert ``r`` says ``p`` when the true class is ``n``. Rows sum to
        one; experts
        (or classes) with no expected count get uniform rows.
    feature_prob_ : ndarray of shape (n_classes, n_features)
        ``feature_prob_[n, j]`` :math:`= \phi_{j\mid n} = P(x_j = 1 \mid y = n)`;
        only when ``fit`` was given ``X``.
    posterior_ : ndarray of shape (n_items, n_classes)
        :math:`Q_i(n) = P(y^{(i)} = n \mid \text{labels}, x^{(i)})` under the fitted
        parameters (items with no label and no features get the class prior).
    log_likelihood_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective EM maximises, after every E-step of the best run: the
        log-posterior :math:`J(\theta) = \ell(\theta) + \alpha \sum \log(\text{parameters})`
        (up to the constant log-normalisers of the Dirichlet priors), which is
        the plain observed-data log-likelihood when ``alpha=0``. Never decreases.
    log_likelihood_ : float
        The plain observed-data log-likelihood :math:`\ell(\theta)` at the
        fitted parameters (without the prior term).
    objective_ : float
        ``log_likelihood_history_[-1]``.
    n_iter_ : int
        M-steps taken by the best run (after :meth:`partial_fit` or a warm start:
        by the continued run, whose history this also is).
    converged_ : bool
        Whether the best run met the tolerance before ``max_iter``.
    flat_optimum_ : bool
        Whether the best run, with ``accelerate=True``, ended on a flat optimum: its last
        SQUAREM cycle moved a posterior probability by more than 0.05 while the objective
        rose by at most ``tol`` (a ``DegenerateFitWarning`` says so too; see
        :func:`~crowdlearn.run_em`). Always False without ``accelerate``.
    refit_checked_ : bool
        True after ``fit`` from the default start, and after a :meth:`partial_fit` that
        compared its result with such a fit of all the labels (keeping the better);
        False when the fitted state was not checked against one (see ``refit``).
    n_experts_, n_classes_, n_items_ : int
    n_features_in_ : int
        Number of features (0 when fitted without ``X``).
    expert_ids_, class_ids_ : ndarray or None
        Original identifiers when the labels came from a table
        (:func:`~crowdlearn.from_table`); new labels built from a table are
        mapped onto them in :meth:`predict_proba`.
    params_ : DawidSkeneParams
        The fitted parameters as one tuple (see the property).
    prior_counts_ : ndarray, tuple or None
        The informative pseudo-counts the fit added to its counts (see the property).

    Notes
    -----
    Write :math:`l = 1, \dots, L` for the labels given, label :math:`l` being
    expert :math:`r_l` putting item :math:`i_l` in class :math:`y_l`.

    **Likelihood.** With :math:`\theta` the prior :math:`\phi`, the confusion matrices
    :math:`M` and the feature probabilities :math:`\phi_{j\mid n}`,

    .. math::

        \ell(\theta) = \sum_{i=1}^{m} \log \sum_{n=1}^{N} \phi_n
        \prod_{l:\, i_l = i} M^{(r_l)}_{n, y_l}
        \prod_{j} \phi_{j\mid n}^{x^{(i)}_j} (1 - \phi_{j\mid n})^{1 - x^{(i)}_j} .

    **Objective** (what ``log_likelihood_history_`` records):

    .. math::

        \begin{aligned}
        J(\theta) = \ell(\theta) + \alpha \Big( &\sum_n \log\phi_n
        + \sum_{r,n,p} \log M^{(r)}_{n,p} \\
        &+ \sum_{n,j} \big[\log\phi_{j\mid n} + \log(1 - \phi_{j\mid n})\big] \Big).
        \end{aligned}

    **E-step**, in log space with the row maximum subtracted before
    exponentiating:

    .. math::

        \begin{aligned}
        \log Q_i(n) = {}& \log\phi_n + \sum_{l:\, i_l = i} \log M^{(r_l)}_{n, y_l} \\
        &+ \sum_j \big[x^{(i)}_j\log\phi_{j\mid n}
        + (1 - x^{(i)}_j)\log(1 - \phi_{j\mid n})\big] - \log Z_i,
        \end{aligned}

    where :math:`\log Z_i` is the row's log-sum-exp and
    :math:`\ell(\theta) = \sum_i \log Z_i`. The labels are stored once per fit
    as a sparse ``(n_items, n_experts * N + 1)`` count matrix ``V`` over the
    flat index ``expert * N + label`` (last column: 1 for every item), so the
    sums over an item's labels and its log prior are one sparse product
    ``V @ T`` with the small table ``T[r * N + p, n]`` :math:`= \log M^{(r)}_{n,p}`
    (last row :math:`\log\phi_n`): the cost grows with the number of labels,
    not with items x experts.

    **M-step** (expected counts plus pseudo-counts; the expected counts of every
    ``(expert, label, true class)`` and of every class are the one product
    ``V.T @ Q``):

    .. math::

        \begin{aligned}
        \phi_n &= \frac{\sum_i Q_i(n) + \alpha}{m + N\alpha}, \qquad
        \phi_{j\mid n} = \frac{\sum_i Q_i(n)\, x^{(i)}_j + \alpha}{\sum_i Q_i(n) + 2\alpha}, \\
        M^{(r)}_{n,p} &= \frac{\sum_{l:\, r_l = r,\, y_l = p} Q_{i_l}(n) + \alpha}
                              {\sum_{l:\, r_l = r} Q_{i_l}(n) + N\alpha}.
        \end{aligned}

    With :math:`\alpha = 0` these are equations (2)-(4) of the source, and a
    row whose denominator is zero (no expected count at all) does not enter the
    objective, so it is set to the uniform distribution. With :math:`\alpha = 1`
    they are its Laplace-smoothed formulas.

    **Start.** Run 0 starts from the soft majority vote
    :math:`Q_i(n) = |R_i|^{-1}\sum_{r \in R_i} 1\{y^{(i)}_r = n\}`; items nobody
    labelled start from the (Laplace-smoothed) class frequencies of the vote,
    or, with features, from a Naive Bayes posterior fitted to the voted items.
    The first M-step turns this start into parameters.

    **Relabelling.** The model is identified only up to a permutation of the
    hidden classes: permuting :math:`\phi`, the rows of every
    :math:`M^{(r)}`, the rows of the feature probabilities and the columns of
    :math:`Q` together changes neither :math:`\ell` nor :math:`J`, and a random
    restart may end in such a permuted copy. After the best run is chosen, its
    classes are therefore permuted to maximise the expected agreement
    :math:`\sum_l \sum_n Q_{i_l}(n)\,1\{y_l = \text{perm}(n)\}` with the votes (usually
    the identity), so class ``n`` keeps meaning label ``n``.

    References
    ----------
    A. P. Dawid and A. M. Skene, "Maximum likelihood estimation of observer
    error-rates using the EM algorithm", Applied Statistics 28(1), 1979.

    Y. Jin and L. Zhang, "Multiple experts with binary features", 2010 (section 4).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.dawid_skene import DawidSkene
    >>> from crowdlearn.simulate import one_coin_confusion, simulate_crowd
    >>> sim = simulate_crowd(2000, one_coin_confusion([0.9, 0.8, 0.7, 0.6, 0.55], 2),
    ...                      class_prior=[0.3, 0.7], random_state=0)
    >>> ds = DawidSkene().fit(sim.labels)
    >>> ds.confusion_.shape, ds.posterior_.shape
    ((5, 2, 2), (2000, 2))
    >>> np.round(np.diagonal(ds.confusion_, axis1=1, axis2=2).mean(axis=1), 1)
    array([0.9, 0.8, 0.7, 0.6, 0.6])
    >>> bool((np.diff(ds.log_likelihood_history_) >= 0).all())
    True
    >>> bool((ds.predict() == sim.truth).mean() > 0.9)
    True

    New items are scored under the fitted parameters (-1 marks a missing label):

    >>> ds.predict([[1, 1, 0, -1, -1], [-1, -1, -1, -1, -1]]).tolist()
    [1, 1]
    """

    def __init__(self, *, n_classes: int | None = None, alpha: float = 0.0,
                 confusion_prior=None, n_init: int = 1, max_iter: int = 1000, tol: float = 1e-8,
                 accelerate: bool = False, random_state=None, callback=None,
                 progress: bool = False, warm_start: bool = False):
        self._store_params(locals())

    # -- input ---------------------------------------------------------------------------
    def _check_params(self):
        if self.n_classes is not None:
            check_scalar(self.n_classes, "n_classes", kind=numbers.Integral, low=2)
        check_scalar(self.alpha, "alpha", low=0.0)
        check_em_params(self)
        check_flag(self.warm_start, "warm_start")

    def _resolve_prior(self, crowd: CrowdLabels):
        """``confusion_prior`` as pseudo-counts of shape ``(n_experts, K, K)``, or None."""
        return _prior_counts(self.confusion_prior, crowd)

    @staticmethod
    def _resize(crowd: CrowdLabels, n_items: int) -> CrowdLabels:
        return CrowdLabels(crowd.item, crowd.expert, crowd.label, n_items, crowd.n_experts,
                           crowd.n_classes, crowd.item_ids, crowd.expert_ids, crowd.class_ids)

    def _read_labels(self, labels, X, n_classes):
        """Labels as CrowdLabels, with the items matched to the rows of ``X``."""
        if labels is None:
            raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) "
                             "tuple or an (n_items, n_experts) matrix with -1 for missing")
        crowd = as_crowd_labels(labels, n_classes=n_classes)
        if crowd.n_labels == 0:
            raise ValueError("labels holds no label at all")
        if X is not None and X.shape[0] != crowd.n_items:
            if _is_tuple_input(labels) and X.shape[0] > crowd.n_items:
                # items beyond the largest index in the triples simply have no label
                crowd = self._resize(crowd, X.shape[0])
            else:
                raise ValueError(f"X has {X.shape[0]} rows but the labels describe "
                                 f"{crowd.n_items} items")
        return crowd

    def _map_ids(self, crowd: CrowdLabels) -> CrowdLabels:
        """Re-index new labels built from a table onto the identifiers seen in ``fit``."""
        return _reindex_onto(crowd, self.expert_ids_, self.class_ids_)

    def _make_data(self, labels, X=None, gold=None) -> _Data:
        """The fit's data: the labels' sparse matrix, the features, the prior pseudo-counts
        (in the model's form) and the known truths ``(rows, clamp, classes)``."""
        X = features_by_task(labels, X)
        if X is not None:
            X = check_binary_matrix(X, "X")
        crowd = self._read_labels(labels, X, self.n_classes)
        return self._data_from(crowd, X, _read_gold(gold, crowd))

    def _data_from(self, crowd: CrowdLabels, X=None, gold_classes=None) -> _Data:
        """The fit's data from labels already read (see :meth:`_make_data`);
        ``gold_classes`` holds a class index per item, -1 where unknown (or is None)."""
        K = crowd.n_classes
        prior = self._resolve_prior(crowd)
        known = None
        if gold_classes is not None:
            rows = np.flatnonzero(gold_classes >= 0)
            clamp = np.full((rows.size, K), -np.inf)
            clamp[np.arange(rows.size), gold_classes[rows]] = 0.0
            known = (rows, clamp, gold_classes)
        return _Data(crowd, X, *_flat_indices(crowd, K), prior=prior, gold=known)

    # -- EM pieces -------------------------------------------------------------------------
    @staticmethod
    def _log_joint(data: _Data, params: DawidSkeneParams) -> np.ndarray:
        """``log P(y_i = k, labels_i, x_i)``, shape ``(n_items, K)`` (a new array)."""
        return log_joint(data.votes, params, data.X)

    def _log_prior_term(self, params: DawidSkeneParams, prior=None) -> float:
        """What the objective adds to the log-likelihood: the symmetric Dirichlet term and
        the confusion prior's (pseudo-counts ``prior``, in the model's form)."""
        a = float(self.alpha)
        extra = log_prior_density(prior, params.confusion)
        if a == 0:
            return extra
        total = log_param_sum(params.class_prior, params.confusion)
        if params.feature_prob is not None:
            total += np.log(params.feature_prob).sum() + np.log1p(-params.feature_prob).sum()
        return a * float(total) + extra

    def _e_step(self, data: _Data, params: DawidSkeneParams):
        log_joint_ = self._log_joint(data, params)
        if data.gold is not None:  # known truths: all the mass on the given class
            log_joint_[data.gold[0]] += data.gold[1]
        q, log_evidence = _softmax_rows_inplace(log_joint_)
        return q, float(log_evidence.sum()) + self._log_prior_term(params, data.prior)

    @staticmethod
    def _expected_counts(data: _Data, q: np.ndarray):
        """Expected counts ``(n_experts, K true, K label)`` and per class, in one pass."""
        return split_counts(count_table(data.votes_t, q), data.crowd.n_experts)

    def _params_from_counts(self, table: np.ndarray, n_experts: int, prior=None):
        """The M-step without features from a count table ``votes_t @ q`` (summed over
        any blocks of items: the Dask backend adds up its partitions' tables)."""
        counts, class_counts = split_counts(table, n_experts)
        class_prior, confusion = confusion_m_step(counts, class_counts, self.alpha, prior)
        return DawidSkeneParams(class_prior, confusion, None)

    def _m_step(self, data: _Data, q: np.ndarray) -> DawidSkeneParams:
        table = count_table(data.votes_t, q)
        params = self._params_from_counts(table, data.crowd.n_experts, data.prior)
        if data.X is None:
            return params
        return params._replace(feature_prob=feature_m_step(q, data.X, table[-1], self.alpha))

    def _gold_start(self, data: _Data, K: int) -> np.ndarray:
        """Responsibilities from Laplace-smoothed parameters estimated on the gold items alone."""
        rows, clamp = data.gold[:2]
        q = np.zeros((data.crowd.n_items, K))
        q[rows] = np.exp(clamp)
        counts, class_count = self._expected_counts(data, q)
        confusion = (counts + 1.0) / (counts.sum(axis=2, keepdims=True) + K)
        prior = (class_count + 1.0) / (class_count.sum() + K)
        phi = None if data.X is None else \
            (q.T @ data.X + 1.0) / (class_count[:, None] + 2.0)
        return self._e_step(data, DawidSkeneParams(prior, confusion, phi))[0]

    @staticmethod
    def _majority_start(data: _Data, K: int) -> np.ndarray:
        return majority_start(data.votes, data.crowd.n_experts, K, data.X)

    @classmethod
    def _align_with_vote(cls, data: _Data, params: DawidSkeneParams, q: np.ndarray):
        """Relabel the hidden classes to agree best with the majority vote (see
        :func:`crowdlearn.aggregation._ds_kernel.align_with_vote`)."""
        agreement = cls._expected_counts(data, q)[0].sum(axis=0)
        return cls._align_params(agreement, params, q)

    @staticmethod
    def _align_params(agreement: np.ndarray, params: DawidSkeneParams, q=None):
        """:func:`~crowdlearn.aggregation._ds_kernel.align_with_vote` (``agreement[k, l]``:
        expected votes for ``l`` of items in hidden class ``k``)."""
        return align_with_vote(agreement, params, q)

    # -- the engine's hooks (crowdlearn._base.EMEstimator) ----------------------------------
    def _n_runs(self, data: _Data) -> int:
        # with gold items, run 1 starts from what the gold items alone say (the
        # majority vote may point the wrong way); the best objective wins as usual
        return self.n_init + (data.gold is not None)

    def _init_params(self, data: _Data, restart: int, rng) -> DawidSkeneParams:
        K = data.crowd.n_classes
        if restart == 0:
            q = self._majority_start(data, K)
        elif restart == 1 and data.gold is not None:
            q = self._gold_start(data, K)
        else:
            q = rng.dirichlet(np.ones(K), size=data.crowd.n_items)
        if data.gold is not None:
            q[data.gold[0]] = np.exp(data.gold[1])
        return self._m_step(data, q)

    def _accelerator(self, data: _Data):
        if not self.accelerate:
            return None
        return self._flatten, self._unflatten(data.crowd.n_classes, data.crowd.n_experts,
                                              data.X)

    def _set_fitted(self, data: _Data, result) -> None:
        if data.gold is None and data.prior is None:
            params, posterior = self._align_with_vote(data, result.params, result.posterior)
        else:  # known truths or an informative prior fix what each class means
            params, posterior = result.params, result.posterior
        crowd = data.crowd
        self._store_fit(result, params, posterior,
                        sizes=(crowd.n_items, crowd.n_experts, crowd.n_classes),
                        ids=(crowd.item_ids, crowd.expert_ids, crowd.class_ids,
                             getattr(crowd, "_from_frame", False) is True),
                        prior=data.prior, n_features=0 if data.X is None else data.X.shape[1],
                        gold=None if data.gold is None else data.gold[2])
        self._train_crowd = crowd  # what partial_fit adds new labels to
        self._train_X = data.X     # and the items' features, if any
        self._warn_if_degenerate(crowd, posterior)

    def _store_fit(self, result, params: DawidSkeneParams, posterior, *, sizes, ids,
                   prior=None, n_features: int = 0, gold=None, lazy=None) -> None:
        """Every fitted attribute, from an in-memory fit or the Dask backend: the
        parameters, EM's record of the best run (``result``), ``posterior_`` (not set when
        None: a distributed posterior left on the cluster, then ``lazy`` holds the dask
        ``(probas_dask_, labels_dask_)``), ``sizes`` ``(n_items, n_experts, n_classes)``
        and ``ids`` ``(item_ids, expert_ids, class_ids, as_frame)``."""
        self._params = params
        vars(self).pop("_train_crowd", None)  # set again by an in-memory fit
        vars(self).pop("_train_X", None)
        self.class_prior_ = params.class_prior
        self.confusion_ = params.confusion
        if params.feature_prob is not None:
            self.feature_prob_ = params.feature_prob
        elif hasattr(self, "feature_prob_"):
            del self.feature_prob_
        self._keep_em_result(result, posterior, log_prior=self._log_prior_term(params, prior))
        if posterior is None:
            del self.posterior_
        for name in ("probas_dask_", "labels_dask_"):
            if name in vars(self):
                delattr(self, name)
        if lazy is not None:
            self.probas_dask_, self.labels_dask_ = lazy
        self.n_items_, self.n_experts_, self.n_classes_ = sizes
        self._set_ids(*ids)
        self.n_features_in_ = n_features
        self.gold_ = gold
        self._prior_counts = prior  # prior_counts_

    # -- public API --------------------------------------------------------------------------
    def fit(self, labels, X=None, *, gold=None):
        """Fit the class prior, the confusion matrices (and feature probabilities) by EM.

        Parameters
        ----------
        labels : CrowdLabels, (item, expert, label) tuple, (n_items, n_experts) matrix or DataFrame
            The crowd's labels; in a matrix ``-1`` marks a missing label; a pandas
            DataFrame has one row per label and columns ``task``, ``worker``,
            ``label`` (see :func:`~crowdlearn.from_dataframe`), and then the
            results by id (``labels_``, ``probas_``, ``errors_``) are pandas
            objects indexed by the original identifiers.
        X : array-like of shape (n_items, n_features), optional
            Binary features of the items (0/1), modelled by Naive Bayes given the
            true class. With triples, ``X`` may have more rows than the largest
            item index: the extra items simply have no label.
        gold : dict, pandas Series or array, optional
            Known true classes of some items ("gold" or "honeypot" items). A dict
            or Series maps item to class, by original identifiers when the labels
            came with them (a DataFrame or :func:`~crowdlearn.from_table`), by
            index otherwise; an array of length ``n_items`` holds a class index
            per item and ``-1`` where the truth is unknown. A gold item's
            posterior is clamped to its class in every E-step, so its labels
            count in the M-step with the true class, and the objective is the
            log-likelihood of the labels *and* the known truths.

        Returns
        -------
        self

        Notes
        -----
        With ``warm_start=True`` and a fitted model, one EM run starts from the
        fitted parameters (see the ``warm_start`` parameter and :meth:`partial_fit`).
        """
        refuse_gold_as_features(labels, X, type(self).__name__)
        if _is_dask_frame(labels):
            if X is not None or gold is not None:
                raise ValueError("fitting a dask DataFrame does not support X or gold yet; "
                                 "fit a pandas DataFrame (ddf.compute()) for those")
            from crowdlearn.distributed.dask_backend import fit_dask
            return fit_dask(self, labels)
        if self.warm_start and self._fitted_in_memory():
            self._fit_warm(labels, X, gold)
            self.refit_checked_ = False
        else:
            self._fit(labels, X, gold=gold)
            self.refit_checked_ = True  # this is the fit from the default start
            if self._fitted_in_memory():
                self._labels_at_refit = self._train_crowd.n_labels
        # what partial_fit matches a DataFrame of new features' columns to
        self._x_columns = list(X.columns) if _is_dataframe(X) else None
        return self

    def partial_fit(self, labels, X=None, *, incremental=False, refit="auto"):
        r"""Add new labels to those the model was fitted on and continue EM from the fitted
        parameters (instead of refitting from the majority vote).

        As in scikit-learn, ``labels`` is a *batch of new label rows*, added to those the
        model keeps; EM on all of them starts from the current parameters (see ``refit``).

        Parameters
        ----------
        labels : DataFrame, CrowdLabels, (item, expert, label) tuple or (n_items, n_experts) matrix
            The new labels only, in the form the model was fitted on: a model fitted on
            a DataFrame (or labels built by :func:`~crowdlearn.from_table`) matches
            tasks, workers and classes by identifier, and the union is indexed in
            sorted order as ``fit`` would index it; a model fitted on indices reads
            them as indices (items and experts beyond the fitted ones are new, a
            matrix's row ``i`` is item ``i``). A repeated label counts again, as in
            ``fit``.
        X : array-like or DataFrame, optional
            For a model fitted with features: those of the *new* items (the fitted ones
            keep theirs), by task id in a DataFrame when the model has identifiers, else
            one row per new item (items ``n_items_``, ``n_items_ + 1``, ...).
        incremental : bool, default False
            Neal and Hinton's incremental EM (chapter 14): the E-steps re-estimate only
            the items the new labels touch, the M-steps read counts updated by their
            change; the history holds the free energy (never decreasing, at most the
            objective), then, after one E-step of every item, the objective. It ends
            near, not on, a full run's optimum; worth it for a batch small against the
            crowd (``benchmarks/README.md``).
        refit : 'auto', True or False, default 'auto'
            Also fit all the labels from the default start (as ``fit`` does) and keep the
            run with the higher objective: a continued run stays in its start's basin,
            which may hold a lower optimum. ``'auto'``: on a crowd of at most
            ``REFIT_SMALL`` (50,000) labels, else once they have doubled
            (``REFIT_GROWTH``) since the last start from the vote; ``True``: now.

        Returns
        -------
        self
            ``refit_checked_`` True: ``objective_`` is at least the refit's; False: not
            checked, it may be lower (how often: ``benchmarks/bench_partial_fit.py``).

        Raises
        ------
        ValueError
            For a new class when ``n_classes`` or ``confusion_prior`` fixes the classes (else
            it is added, sorted), ids on one side only, a new item without features in X.

        Notes
        -----
        A known worker starts from their fitted confusion matrix, a new one from the
        label-weighted mean of the fitted ones; the class prior (and feature probabilities)
        are kept; gold items stay clamped. ``n_iter_``, ``converged_``, the history (never
        decreasing) and warnings are the run kept. Unfitted, this is ``fit(labels, X)``.

        Examples
        --------
        >>> import numpy as np
        >>> from crowdlearn import DawidSkene
        >>> from crowdlearn.simulate import one_coin_confusion, simulate_crowd
        >>> sim = simulate_crowd(500, one_coin_confusion([0.9, 0.8, 0.7, 0.6], 2),
        ...                      random_state=0)
        >>> c = sim.labels
        >>> first = c.item < 450
        >>> ds = DawidSkene().fit((c.item[first], c.expert[first], c.label[first]))
        >>> ds = ds.partial_fit((c.item[~first], c.expert[~first], c.label[~first]))
        >>> fresh = DawidSkene().fit(c)
        >>> ds.n_items_, ds.refit_checked_, bool(ds.objective_ >= fresh.objective_)
        (500, True, True)
        >>> bool((np.diff(ds.log_likelihood_history_) >= 0).all())
        True
        """
        if _is_dask_frame(labels):
            raise ValueError("partial_fit reads no dask DataFrame: pass a pandas DataFrame")
        check_flag(incremental, "incremental")
        if not (refit == "auto" or isinstance(refit, (bool, np.bool_))):
            raise ValueError(f"refit must be 'auto', True or False, got {refit!r}")
        if not hasattr(self, "confusion_"):
            return self.fit(labels, X)
        return self._take_in(labels, X, incremental, refit)

    def _take_in(self, labels, X, incremental: bool, refit) -> DawidSkene:
        """:meth:`partial_fit` on a fitted model, its arguments checked."""
        self._check_can_continue()
        crowd = merge_crowds(self._train_crowd, labels)
        self._check_new_classes(crowd)
        data = self._data_from(crowd, self._features_on(crowd, X), gold_on(self, crowd))
        n_old = self._train_crowd.n_labels
        since = getattr(self, "_labels_at_refit", n_old)
        check = bool(refit) if refit != "auto" else (crowd.n_labels <= REFIT_SMALL or
                                                    crowd.n_labels >= REFIT_GROWTH * since)
        with warnings.catch_warnings(record=True) as warm_warnings:
            warnings.simplefilter("always")
            if incremental:
                self._continue_incremental(data, n_old)
            else:
                self._continue(data)
        if check:
            warm_warnings = self._keep_better_of_refit(data, warm_warnings)
        _reissue(warm_warnings)
        self.refit_checked_ = check
        return self

    def _keep_better_of_refit(self, data: _Data, warm_warnings: list) -> list:
        """Fit ``data`` from the default start (the vote, and ``n_init`` runs as ``fit``
        makes), keep it if its objective beats the continued run's (just fitted), and
        return the warnings of the run kept."""
        continued = dict(vars(self))
        with warnings.catch_warnings(record=True) as refit_warnings:
            warnings.simplefilter("always")
            self._fit_data(data)
        kept = refit_warnings
        if continued["objective_"] >= self.objective_:  # ties: the continued run stays
            vars(self).clear()
            vars(self).update(continued)
            kept = warm_warnings
        self._labels_at_refit = data.crowd.n_labels
        return kept

    def _check_new_classes(self, crowd: CrowdLabels) -> None:
        """``ValueError`` when ``crowd`` has classes the model was not fitted with and the
        model's settings fix its classes (``n_classes``, ``confusion_prior``)."""
        K = self.n_classes_
        if crowd.n_classes <= K:
            return
        labels = np.unique(crowd.label)
        new = np.setdiff1d(labels, class_positions(self, crowd))
        new = new.tolist() if crowd.class_ids is None else crowd.class_ids[new].tolist()
        fixed = ("n_classes" if self.n_classes is not None else
                 "confusion_prior" if self.confusion_prior is not None else None)
        if fixed:
            raise ValueError(f"the new labels bring the class(es) {new[:5]}, but this model's "
                             f"{fixed} fixes its {K} classes: partial_fit can add a class "
                             f"only to a model built with n_classes=None and no "
                             f"confusion_prior; fit again on all the labels")

    def _continue_incremental(self, data: _Data, n_old_labels: int):
        """Incremental EM (:mod:`crowdlearn.aggregation._incremental`) on ``data``, whose
        label rows from ``n_old_labels`` on are the new ones: the items they touch (and any
        new item) are re-estimated, the others keep their fitted posteriors."""
        crowd = data.crowd
        src = item_positions(self, crowd)
        q = np.zeros((crowd.n_items, crowd.n_classes))  # a new class: 0 until re-estimated
        q[np.ix_(src >= 0, class_positions(self, crowd))] = self.posterior_[src[src >= 0]]
        rows = np.union1d(crowd.item[n_old_labels:], np.flatnonzero(src < 0))
        steps = IncrementalSteps(self, data, q, rows)
        # only the touched items have labels by new workers or new labels at all: the
        # start needs checking (see _possible_start) on them alone
        start = self._possible_start(data._replace(votes=steps.sub, X=steps.X_sub, gold=None)
                                     if steps.clamp is None else data,
                                     start_on(self, crowd, self._params))
        # plain EM (SQUAREM's extrapolated steps would move the kept counts), with the
        # model's callback and progress bar as in any fit
        e_step = steps.e_step
        if self.callback is not None:  # steps.e_step updates one array: the callback gets
            def e_step(params):        # a copy of it at every step
                q, free = steps.e_step(params)
                return q.copy(), free
        result = self._run_engine(data, init=lambda restart: start, e_step=e_step,
                                  m_step=lambda q, *_: steps.m_step(q), n_runs=1,
                                  accelerate=False)
        warn_if_not_converged(result, type(self).__name__, self.max_iter, self.tol)
        # one E-step of every item at the final parameters: the posteriors agree with them,
        # and the free energy becomes the objective itself (never lower: F <= objective)
        posterior, objective = self._e_step(data, result.params)
        result = dataclasses.replace(result, posterior=posterior,
                                     history=np.append(result.history, objective))
        self._set_fitted(data, result)
        return self

    def _features_on(self, crowd: CrowdLabels, X):
        """The features of ``crowd``'s items for :meth:`partial_fit` (None without any)."""
        if self.n_features_in_:
            return features_on(self, crowd, X)
        if X is not None:
            raise ValueError("this model was fitted without features; partial_fit cannot "
                             "add X (fit again on all the labels with X)")
        return None

    def _check_can_continue(self) -> None:
        """``ValueError`` unless :meth:`partial_fit` can continue this fitted model."""
        self._check_params()
        if not self._fitted_in_memory():
            raise ValueError(f"this {type(self).__name__} was fitted on a dask DataFrame, "
                             f"whose labels it does not keep; partial_fit needs a model "
                             f"fitted in memory")
        if self.n_features_in_ and getattr(self, "_train_X", None) is None:
            raise ValueError("this model has features but does not keep the fitted items' "
                             "features; fit again on all the labels and features")

    def _fitted_in_memory(self) -> bool:
        """True when the model holds the parameters and labels of an in-memory fit."""
        return "_train_crowd" in vars(self) and "_params" in vars(self)

    def _fit_warm(self, labels, X, gold):
        """``fit`` with ``warm_start=True`` on a fitted model: one EM run on ``labels``
        from the fitted parameters, carried onto its workers (see :meth:`partial_fit`)."""
        refuse_gold_as_features(labels, X, type(self).__name__)
        self._check_params()
        data = self._make_data(labels, X, gold=gold)
        check_same_classes(self, data.crowd)
        n_features = 0 if data.X is None else data.X.shape[1]
        if n_features != self.n_features_in_:
            raise ValueError(f"X has {n_features} features but the model was fitted with "
                             f"{self.n_features_in_}; a warm start keeps them (set "
                             f"warm_start=False to fit from scratch)")
        return self._continue(data)

    def _possible_start(self, data: _Data, start: DawidSkeneParams) -> DawidSkeneParams:
        """``start``, or, if some item's labels have probability 0 under every class
        with it (with ``alpha=0`` a worker's fitted matrix gives 0 to a label they never
        gave), ``start`` mixed with 0.1% of the uniform distributions, so that EM starts
        at a finite objective (a fit from scratch starts from the votes, never there)."""
        log_joint_ = self._log_joint(data, start)
        if data.gold is not None:
            log_joint_[data.gold[0]] += data.gold[1]
        if np.isfinite(log_joint_.max(axis=1)).all():
            return start
        eps, K = 1e-3, data.crowd.n_classes
        phi = start.feature_prob
        return DawidSkeneParams((1 - eps) * start.class_prior + eps / K,
                                (1 - eps) * start.confusion + eps / K,
                                None if phi is None else (1 - eps) * phi + eps / 2)

    def _continue(self, data: _Data):
        """One EM run on ``data`` from the fitted parameters; sets the fitted attributes."""
        start = self._possible_start(data, start_on(self, data.crowd, self._params))
        result = self._run_engine(data, init=lambda restart: start, n_runs=1)
        warn_if_not_converged(result, type(self).__name__, self.max_iter, self.tol)
        self._set_fitted(data, result)
        return self

    # -- SQUAREM: the parameters as one unconstrained vector --------------------------------
    @staticmethod
    def _flatten(params: DawidSkeneParams) -> np.ndarray:
        """Log-probabilities (logits for the features), clipped so they stay finite."""
        with np.errstate(divide="ignore"):
            parts = [np.log(params.class_prior), np.log(params.confusion).ravel()]
            if params.feature_prob is not None:
                phi = params.feature_prob.ravel()
                parts.append(np.log(phi) - np.log1p(-phi))
        return np.maximum(np.concatenate(parts), -700.0).clip(max=700.0)

    def _unflatten(self, K: int, J: int, X):
        def unflatten(x: np.ndarray) -> DawidSkeneParams:
            prior = _softmax_last(x[:K])
            confusion = _softmax_last(x[K:K + J * K * K].reshape(J, K, K))
            phi = None if X is None else expit(x[K + J * K * K:].reshape(K, X.shape[1]))
            return DawidSkeneParams(prior, confusion, phi)
        return unflatten

    @property
    def params_(self) -> DawidSkeneParams:
        r"""The fitted parameters as one ``DawidSkeneParams``.

        ``(class_prior_, confusion_, feature_prob_)`` (the last None without
        features): shapes ``(N,)``, ``(R, N, N)`` and ``(N, k)``. This is what
        :func:`~crowdlearn.aggregation.dawid_skene.e_step` takes, so ``e_step(labels, model.params_)`` gives back
        ``posterior_`` and ``log_likelihood_`` (for a fit without gold items).
        Copies: changing them does not change the model.
        """
        self._check_fitted("confusion_")
        phi = getattr(self, "feature_prob_", None)
        return DawidSkeneParams(np.array(self.class_prior_, dtype=float),
                                np.array(self.confusion_, dtype=float),
                                None if phi is None else np.array(phi, dtype=float))

    @property
    def prior_counts_(self):
        """The informative Dirichlet pseudo-counts the fit added to its expected counts at
        every M-step: ``confusion_prior`` read onto the workers, shape ``(n_experts, K,
        K)`` (for :class:`~crowdlearn.OneCoinDawidSkene` a pair ``(right, wrong)`` of
        pseudo-counts per worker), or None when ``alpha`` was the only prior (no
        ``confusion_prior``, or one of zeros)."""
        self._check_fitted("confusion_")
        return getattr(self, "_prior_counts", None)

    def fit_from_counts(self, source):
        """Fit by EM on labels kept elsewhere, which ``source`` reduces to expected counts.

        This is how :func:`~crowdlearn.distributed.dask_backend.fit_dask` fits a dask
        DataFrame: the labels stay where they are and only count tables travel. The model runs its
        own EM (engine, M-step, objective, stopping rule, callback, progress bar) from the
        soft majority vote, relabels the hidden classes as an in-memory fit does, and sets
        its fitted attributes. ``n_init`` (1), ``confusion_prior`` and ``accelerate`` are
        for ``source`` to refuse or support (``source.start`` is called after the
        hyper-parameters are checked).

        Parameters
        ----------
        source : object with three methods
            ``start()``: the count table ``(n_experts * K + 1, K)`` (the layout of
            ``count_table`` of the DS kernel) of the soft majority
            vote; called once, first. ``e_step(params)``: ``(posterior, log_evidence)``,
            a handle whose ``counts`` is the count table of the E-step under ``params``
            (what a callback sees as ``state.posterior``) and the sum of the items' log
            evidences. ``finish(params)``: called once with the final parameters, a dict
            with ``posterior`` (``(n_items, K)``, or None when it stays where the labels
            are), ``sizes`` ``(n_items, n_experts, K)``, ``ids`` ``(item_ids, expert_ids,
            class_ids, as_frame)`` and ``lazy`` (None, or the dask ``(probas_dask_,
            labels_dask_)``).

        Returns
        -------
        self
        """
        self._check_params()
        start = source.start()
        K = start.shape[1]
        J = (start.shape[0] - 1) // K

        def e_step(params):
            handle, log_evidence = source.e_step(params)
            return handle, log_evidence + self._log_prior_term(params)

        result = self._run_engine(
            None, init=lambda restart: self._params_from_counts(start, J), e_step=e_step,
            m_step=lambda handle: self._params_from_counts(handle.counts, J), n_runs=1)
        warn_if_not_converged(result, type(self).__name__, self.max_iter, self.tol)
        # relabel as in memory (the agreement table: the summed counts over the experts)
        agreement = split_counts(result.posterior.counts, J)[0].sum(axis=0)
        params, _ = self._align_params(agreement, result.params)
        final = source.finish(params)
        self._store_fit(result, params, final["posterior"], sizes=final["sizes"],
                        ids=final["ids"], lazy=final["lazy"])
        return self

    @property
    def errors_(self):
        r"""The confusion matrices in crowd-kit's layout.

        Fitted on a DataFrame: a ``DataFrame`` whose rows are ``(worker, label)``
        pairs (the label the worker gives), whose columns are the true classes,
        and whose entries are :math:`P(\text{label} \mid \text{true class})`:
        ``errors_.loc[(w, l), k] == confusion_[j, k, l]`` where ``j`` is the
        index of worker ``w``. Each *column* block of one worker sums to one
        (crowdlearn's ``confusion_`` rows are crowd-kit's columns). Fitted on
        anything else: ``confusion_`` transposed to ``(n_experts, label, true)``.
        """
        self._check_fitted()
        flipped = self.confusion_.transpose(0, 2, 1)
        if not self._frame_out():
            return flipped.copy()
        from crowdlearn.frames import require_pandas

        pd = require_pandas()
        J, K, _ = flipped.shape
        workers, classes = self._ids("expert", J), self._ids("class", K)
        index = pd.MultiIndex.from_arrays([np.repeat(workers, K), np.tile(classes, J)],
                                          names=["worker", "label"])
        return pd.DataFrame(flipped.reshape(J * K, K), index=index,
                            columns=pd.Index(classes, name="label"))

    def _warn_if_degenerate(self, crowd: CrowdLabels, posterior: np.ndarray) -> None:
        """Warn when the fit cannot tell the items apart although their votes differ.

        This is what an unidentifiable fit looks like: e.g. with ``alpha=0`` and
        experts who each gave one label, every expert's confusion row fits its
        own label exactly, the labels then carry no evidence about the true
        class, and every item gets the class prior as its posterior.
        """
        labelled = crowd.labels_per_item() > 0
        n_labelled = int(np.count_nonzero(labelled))
        if n_labelled < 2:
            return
        # the posteriors' spread first: when they differ (nearly always) nothing else is needed
        shown = posterior if n_labelled == labelled.size else posterior[labelled]
        for block in (shown[:4096], shown):  # the first few thousand items nearly always tell
            if float(np.ptp(block, axis=0).max()) > 1e-6:
                return
        votes = crowd.vote_counts()[labelled]
        votes /= votes.sum(axis=1, keepdims=True)
        if float(np.ptp(votes, axis=0).max()) == 0.0:
            return
        per_expert = crowd.labels_per_expert()
        few = int((per_expert[per_expert > 0] <= 1).sum())
        n_active = int((per_expert > 0).sum())
        reason = (f" {few} of the {n_active} experts gave a single label, and with "
                  f"alpha={self.alpha:g} each such expert's confusion row fits its label "
                  f"exactly." if few else "")
        q0 = np.round(posterior[labelled][0], 3).tolist()
        if max(q0) > 0.999:
            why = (" EM collapsed onto one class: the class prior went to 1, after which no "
                   "label can move any item (a degenerate local optimum).")
            todo = ("Try restarts (n_init > 1), smoothing (alpha > 0, e.g. alpha=1), or "
                    "MajorityVote.")
        else:
            why = (" The expert parameters explain the labels on their own, so the labels "
                   "carry no evidence about the true classes." + reason)
            todo = "Use smoothing (alpha > 0, e.g. alpha=1), "
            todo += ("fewer parameters (OneCoinDawidSkene: one accuracy per expert), "
                     if type(self).__name__ == "DawidSkene" else "")
            todo += "or MajorityVote."
        warnings.warn(
            f"{type(self).__name__}: degenerate fit -- every labelled item got the same "
            f"posterior {q0} although the votes differ.{why} {todo}",
            DegenerateFitWarning, stacklevel=user_stacklevel())

    def predict_proba(self, labels=None, X=None) -> np.ndarray:
        """Posterior class probabilities, shape ``(n_items, n_classes)``.

        Parameters
        ----------
        labels : labels of NEW items, optional
            Any form ``fit`` accepts; the experts must be among those seen in
            ``fit`` (an unknown expert raises ``ValueError``).
        X : array-like of shape (n_new_items, n_features), optional
            Binary features of the new items (only if the model was fitted with
            features). Without it, the features of the new items count as
            unobserved and drop out of the posterior.

        Returns
        -------
        ndarray or pandas DataFrame
            With no argument, the training posterior ``posterior_``; otherwise
            :math:`P(y = k \\mid \\text{labels}, x)` for the new items under the
            fitted parameters (the class prior for an item with neither). New labels
            given as a pandas DataFrame give a DataFrame indexed by task id with one
            column per class id.
        """
        return super().predict_proba(labels, X)

    def _proba_new(self, labels, X) -> np.ndarray:
        """The posterior of new items (see :meth:`predict_proba`)."""
        K, J = self.n_classes_, self.n_experts_
        if X is not None:
            if self.n_features_in_ == 0:
                raise ValueError("X was given but the model was fitted without features")
            X = features_by_task(labels, X)
            X = check_binary_matrix(X, "X", n_cols=self.n_features_in_)
        if labels is None:
            crowd = CrowdLabels(*(np.zeros(0, dtype=np.intp),) * 3, X.shape[0], J, K)
        else:
            # read onto the fitted workers and classes (a new table may use one class only)
            crowd = _new_crowd(labels, self.expert_ids_, self.class_ids_, J, K)
            if X is not None and X.shape[0] != crowd.n_items:
                if _is_tuple_input(labels) and X.shape[0] > crowd.n_items:
                    crowd = self._resize(crowd, X.shape[0])  # extra items have no label
                else:
                    raise ValueError(f"X has {X.shape[0]} rows but the labels describe "
                                     f"{crowd.n_items} items")
        data = _Data(crowd, X, *_flat_indices(crowd, K))
        return posterior_or_refuse(
            self._log_joint(data, self._params),
            "item(s) {rows} have probability 0 under every class (an expert's label or a "
            "feature value that had zero probability when fitting with alpha=0); use alpha > 0")


# -- the two EM steps as pure functions ---------------------------------------------------------
def _data_of(labels, n_classes: int, X=None) -> _Data:
    """Labels in any form ``fit`` accepts, read with ``n_classes`` classes, as the label
    matrix both steps use."""
    if labels is None:
        raise ValueError("labels is None: pass a CrowdLabels, an (item, expert, label) tuple, "
                         "a DataFrame or an (n_items, n_experts) matrix with -1 for missing")
    crowd = as_crowd_labels(labels, n_classes=None if isinstance(labels, CrowdLabels)
                            else n_classes)
    if crowd.n_classes > n_classes:
        raise ValueError(f"the labels have {crowd.n_classes} classes but the parameters "
                         f"describe {n_classes}")
    if crowd.n_classes < n_classes:
        crowd = CrowdLabels(crowd.item, crowd.expert, crowd.label, crowd.n_items,
                            crowd.n_experts, n_classes)
    return _Data(crowd, X, *_flat_indices(crowd, n_classes))


def _as_params(params) -> DawidSkeneParams:
    if isinstance(params, DawidSkeneParams):
        return params
    if isinstance(params, tuple) and len(params) in (2, 3):
        return DawidSkeneParams(*params, *((None,) * (3 - len(params))))
    raise ValueError(f"params must be a DawidSkeneParams (class_prior, confusion, "
                     f"feature_prob) or a pair (class_prior, confusion), got "
                     f"{type(params).__name__}")


def e_step(labels, params, *, X=None):
    r"""The Dawid--Skene E-step: every item's posterior, and the log-likelihood.

    Parameters
    ----------
    labels : CrowdLabels, (item, expert, label) tuple or (m, R) matrix
        The crowd's labels (``-1`` marks a missing label in a matrix), indexed
        like the parameters: expert ``r`` is ``confusion[r]``.
    params : DawidSkeneParams or (class_prior, confusion)
        ``class_prior`` of shape ``(N,)`` (:math:`\phi_n`), ``confusion`` of
        shape ``(R, N, N)`` (:math:`M^{(r)}_{n,p}`, rows summing to one), and
        optionally ``feature_prob`` of shape ``(N, k)`` (then give ``X``). A
        fitted model's ``params_`` will do.
    X : ndarray of shape (m, k), optional
        Binary features, when ``params`` has feature probabilities.

    Returns
    -------
    posterior : ndarray of shape (m, N)
        :math:`Q_i(n) = \phi_n \prod_{r \in R_i} M^{(r)}_{n, y^{(i)}_r} / Z_i`.
    log_likelihood : float
        :math:`\ell(\theta) = \sum_i \log Z_i`, where
        :math:`Z_i = \sum_n \phi_n \prod_{r \in R_i} M^{(r)}_{n, y^{(i)}_r}` is
        the probability of item :math:`i`'s labels. No prior term, no gold
        items: what :class:`DawidSkene` computes inside ``fit`` with
        ``alpha=0``.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.aggregation.dawid_skene import DawidSkene, e_step
    >>> labels = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0]])
    >>> ds = DawidSkene().fit(labels)
    >>> q, ll = e_step(labels, ds.params_)
    >>> bool(np.allclose(q, ds.posterior_)), bool(np.isclose(ll, ds.log_likelihood_))
    (True, True)
    """
    params = _as_params(params)
    K = int(np.shape(params.class_prior)[0])
    if X is not None:
        X = check_binary_matrix(X, "X")
    data = _data_of(labels, K, X)
    if data.crowd.n_experts > params.confusion.shape[0]:
        raise ValueError(f"the labels come from {data.crowd.n_experts} experts but the "
                         f"parameters describe {params.confusion.shape[0]}")
    if data.crowd.n_experts < params.confusion.shape[0]:  # experts with no label here
        c = data.crowd
        data = _data_of(CrowdLabels(c.item, c.expert, c.label, c.n_items,
                                    params.confusion.shape[0], K), K, X)
    q, log_evidence = _softmax_rows_inplace(log_joint(data.votes, params, data.X))
    return q, float(log_evidence.sum())


def expected_counts(labels, posterior):
    r"""The expected counts the Dawid--Skene M-step normalises.

    Parameters
    ----------
    labels : CrowdLabels, (item, expert, label) tuple or (m, R) matrix
        The labels, as for :func:`~crowdlearn.aggregation.dawid_skene.e_step`.
    posterior : ndarray of shape (m, N)
        Any distribution :math:`q_i(n)` over each item's class (the E-step's
        :math:`Q_i`).

    Returns
    -------
    counts : ndarray of shape (R, N, N)
        ``counts[r, n, p]`` :math:`= \sum_{i:\, y^{(i)}_r = p} q_i(n)`, the
        expected number of items of true class :math:`n` that expert :math:`r`
        labelled :math:`p` (a repeated label counts each time).
    class_counts : ndarray of shape (N,)
        :math:`\sum_i q_i(n)`, the expected number of items in each class.

    Both are sums over items, so the counts of disjoint sets of items add up
    to the counts of their union.
    """
    q = np.asarray(posterior, dtype=float)
    if q.ndim != 2:
        raise ValueError(f"posterior must have shape (n_items, n_classes), got {q.shape}")
    data = _data_of(labels, q.shape[1])
    if data.crowd.n_items != q.shape[0]:
        raise ValueError(f"posterior has {q.shape[0]} rows but the labels describe "
                         f"{data.crowd.n_items} items")
    counts, class_counts = DawidSkene._expected_counts(data, q)
    return np.ascontiguousarray(counts), np.asarray(class_counts, dtype=float).copy()


def m_step(counts, class_counts, *, alpha: float = 0.0, confusion_prior=None):
    r"""The Dawid--Skene M-step: normalised expected counts (plus pseudo-counts).

    Parameters
    ----------
    counts : ndarray of shape (R, N, N)
        Expected counts ``[r, n, p]``, as :func:`expected_counts` returns them
        (possibly summed over several blocks of items).
    class_counts : ndarray of shape (N,)
        Expected class counts.
    alpha : float, default 0.0
        The symmetric pseudo-count of :class:`DawidSkene` (``alpha``).
    confusion_prior : ndarray of shape (N, N) or (R, N, N), optional
        Dirichlet pseudo-counts :math:`A^{(r)}_{n,p}` added to the counts, as
        :class:`DawidSkene` (``confusion_prior``) does at every M-step.

    Returns
    -------
    DawidSkeneParams
        :math:`\phi_n = (\sum_i q_i(n) + \alpha)/(m + N\alpha)` and
        :math:`M^{(r)}_{n,p} = (\text{counts}_{r,n,p} + A^{(r)}_{n,p} + \alpha)
        / \sum_{p'} (\cdots)`; a row with no count at all is uniform.
        ``feature_prob`` is None. Equal to what ``DawidSkene(alpha=alpha,
        confusion_prior=confusion_prior)`` computes inside ``fit`` (without
        features).
    """
    counts = np.array(counts, dtype=float)
    class_counts = np.asarray(class_counts, dtype=float)
    if counts.ndim != 3 or counts.shape[1] != counts.shape[2] \
            or class_counts.shape != (counts.shape[1],):
        raise ValueError(f"counts must have shape (R, N, N) and class_counts (N,), got "
                         f"{counts.shape} and {class_counts.shape}")
    check_scalar(alpha, "alpha", low=0.0)
    R, K, _ = counts.shape
    prior = None
    if confusion_prior is not None:
        prior = _read_prior(confusion_prior, K, R)
        if prior.shape == (K, K):
            prior = np.broadcast_to(prior, (R, K, K))
        if prior.shape != (R, K, K) or not np.isfinite(prior).all() or (prior < 0).any():
            raise ValueError(f"confusion_prior must be finite pseudo-counts >= 0 of shape "
                             f"({K}, {K}) or ({R}, {K}, {K}), got shape {prior.shape}")
        _check_prior_values(prior)
    return DawidSkeneParams(*confusion_m_step(counts, class_counts, alpha, prior), None)
