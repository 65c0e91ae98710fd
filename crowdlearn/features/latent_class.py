"""EM for a latent-class network: a hidden class H with categorical observed children."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from crowdlearn._base import EMFitter, normalize_log, posterior_or_refuse
from crowdlearn._validation import (check_em_params, check_int_array, check_probability_matrix,
                                    check_scalar)
from crowdlearn._limits import get_size_limits

__all__ = ["LatentClassModel"]


class _LCData(NamedTuple):
    """What EM reads of ``X``: one-hot states, which children are observed, the child of
    each flat state, the number of states per child, and the starting responsibilities
    given as ``init`` (or None)."""

    onehot: sp.csr_matrix
    observed: sp.csr_matrix
    owner: np.ndarray
    n_states: np.ndarray
    start: np.ndarray | None = None


class LatentClassModel(EMFitter):
    """A hidden class with observed categorical children, fitted by EM.

    This is the Bayesian network of the book's EM chapter: the hidden class
    :math:`y` of an item takes one of :math:`N` = ``n_classes`` states and each
    child :math:`x_j`, :math:`j = 1, \\dots, k` (e.g. :math:`C, X_1, X_2, X_3`),
    depends on :math:`y` alone, so

    .. math:: p(y, x_1, \\dots, x_k) = p(y) \\prod_{j} p(x_j \\mid y).

    **E-step.** For each item :math:`i`,
    :math:`Q_i(n) \\propto p(y = n)\\prod_{j \\text{ observed}} p(x^{(i)}_j \\mid y = n)`,
    computed in log space.

    **M-step.** Expected counts under the responsibilities :math:`q_i(n)` (the
    E-step's :math:`Q_i(n)`) replace the indicator counts of ordinary maximum
    likelihood (the Lagrange-multiplier solution):

    .. math::

        \\begin{aligned}
        p(x_j = v \\mid y = n) &= \\frac{\\sum_i 1\\{x^{(i)}_j = v\\}\\, q_i(n) + \\alpha}
        {\\sum_i 1\\{x^{(i)}_j \\text{ observed}\\}\\, q_i(n) + S_j\\alpha}, \\\\
        p(y = n) &= \\frac{\\sum_i q_i(n) + \\alpha}{m + N\\alpha},
        \\end{aligned}

    where child :math:`j` has :math:`S_j` states :math:`v` and :math:`m` is the
    number of items. With ``alpha > 0`` this is MAP-EM under symmetric
    Dirichlet(:math:`\\alpha+1`) priors and the objective tracked is the
    log-posterior :math:`J(\\theta)` (up to a constant).

    Parameters
    ----------
    n_classes : int, default 2
        Number of states :math:`N` of the hidden class.
    alpha : float, default 0.0
        Dirichlet pseudo-count.
    init : "random" or array of shape (n_items, n_classes), default "random"
        Starting responsibilities for the first run; "random" draws them from a
        flat Dirichlet. Further restarts (``n_init > 1``) always start at random.
    n_init, max_iter, tol : int, int, float
        Restarts (the best final objective is kept), iteration cap, stopping tolerance.
    random_state : None, int or Generator
    callback : callable, optional
        Called with an :class:`~crowdlearn.em.EMState` after every E-step.

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_classes,)
    cond_prob_ : list of ndarray of shape (n_classes, n_states[j])
        ``cond_prob_[j][n, v] = P(x_j = v | y = n)``.
    posterior_ : ndarray of shape (n_items, n_classes)
    log_likelihood_history_ : ndarray
        The objective after each E-step (never decreasing).
    objective_ : float
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    The classes found are defined only up to relabelling (label switching).
    A start in which every item has the same responsibilities is a fixed point
    of EM: every conditional table gets identical rows and EM never leaves it.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn import LatentClassModel
    >>> from crowdlearn.simulate import simulate_latent_class
    >>> tables = [np.array([[0.9, 0.1], [0.2, 0.8]])] * 4
    >>> X, h = simulate_latent_class(2000, [0.4, 0.6], tables, random_state=0)
    >>> lcm = LatentClassModel(n_classes=2, n_init=3, random_state=0).fit(X)
    >>> agree = (lcm.predict(X) == h).mean()
    >>> bool(max(agree, 1 - agree) > 0.9)
    True
    """

    def __init__(self, *, n_classes: int = 2, alpha: float = 0.0, init="random",
                 n_init: int = 1, max_iter: int = 200, tol: float = 1e-8,
                 random_state=None, callback=None):
        self._store_params(locals())

    # -- data ------------------------------------------------------------------------
    def _encode(self, X, fitting: bool) -> "_LCData":
        """``X`` as the data EM reads; fitting, the numbers of states come from ``X``,
        otherwise from the fitted ``n_states_``."""
        columns = getattr(X, "columns", None)
        if type(X).__module__.split(".")[0] == "pandas" and columns is not None \
                and {"task", "worker", "label"} <= set(map(str, columns)):
            raise ValueError("X looks like a long table of crowd labels (columns task, worker, "
                             "label); LatentClassModel takes one row per item and one column "
                             "per observed child: use DawidSkene for crowd labels, or "
                             "from_dataframe(df).to_dense()")
        X = check_int_array(X, "X", ndim=2, low=-1)
        if X.shape[1] == 0:
            raise ValueError(f"X has no observed children (shape {X.shape})")
        if fitting:
            n_states = np.maximum(X.max(axis=0) + 1, 2)
            lim = get_size_limits()
            big = int(np.argmax(n_states))
            if n_states[big] > lim.max_classes:
                raise ValueError(f"child {big} would have {int(n_states[big]):,} states "
                                 f"(inferred from its largest value); at most "
                                 f"{lim.max_classes:,} are accepted. States must be indices "
                                 f"0..S-1 (-1 for unobserved); to go past the limit on purpose "
                                 f"use crowdlearn.size_limits(max_classes=...)")
            K = int(self.n_classes)
            for what, cells in (("class", K), ("conditional-probability table",
                                               K * int(n_states.sum())),
                                ("posterior", K * X.shape[0])):
                if K > lim.max_classes or cells > lim.max_cells:
                    raise ValueError(f"n_classes={K:,} with {X.shape[0]:,} items and "
                                     f"{int(n_states.sum()):,} child states is beyond the "
                                     f"size limits (the {what} table would hold {cells:,} "
                                     f"numbers); raise them on purpose with "
                                     f"crowdlearn.size_limits(...)")
        else:
            n_states = self.n_states_
            if X.shape[1] != len(self.n_states_):
                raise ValueError(f"X has {X.shape[1]} columns but the model was fitted with "
                                 f"{len(self.n_states_)}")
            for c, S in enumerate(self.n_states_):
                check_int_array(X[:, c], f"X[:, {c}]", high=int(S),
                                high_name=f"child {c} has {int(S)} states")
        offsets = np.concatenate([[0], np.cumsum(n_states)[:-1]])
        rows, cols = np.nonzero(X >= 0)
        flat = offsets[cols] + X[rows, cols]
        total = int(np.sum(n_states))
        onehot = sp.csr_matrix((np.ones(rows.size), (rows, flat)), shape=(X.shape[0], total))
        # which child each flat state belongs to
        owner = np.repeat(np.arange(X.shape[1]), n_states)
        observed = sp.csr_matrix((np.ones(rows.size), (rows, cols)),
                                 shape=(X.shape[0], X.shape[1]))
        return _LCData(onehot, observed, owner, n_states)

    # -- EM pieces ---------------------------------------------------------------------
    def _m_step(self, data, q):
        onehot, observed, owner, n_states = data[:4]
        a = float(self.alpha)
        counts = np.asarray((onehot.T @ q).T)                      # (K, S_total)
        per_child = np.asarray((observed.T @ q).T)                # (K, C)
        denom = per_child[:, owner] + a * n_states[owner]
        # With alpha = 0 a class can carry no weight for a child (its responsibilities
        # underflowed to 0 on every item observing that child). Any row maximises the
        # expected complete log-likelihood then, since it is multiplied by 0; take the
        # uniform row rather than 0/0.
        empty = denom <= 0
        table = (counts + a) / np.where(empty, 1.0, denom)
        if empty.any():
            table = np.where(empty, 1.0 / n_states[owner], table)
        prior = (q.sum(axis=0) + a) / (q.shape[0] + q.shape[1] * a)
        with np.errstate(divide="ignore"):
            return np.log(prior), np.log(table)

    def _log_joint(self, data, params):
        onehot = data.onehot
        log_prior, log_table = params
        # onehot @ log_table.T with exact zeros: -inf only where observed
        finite = np.where(np.isfinite(log_table), log_table, 0.0)
        out = np.asarray(onehot @ finite.T) + log_prior
        if not np.isfinite(log_table).all():
            impossible = np.asarray(onehot @ (~np.isfinite(log_table)).T.astype(float)) > 0
            out = np.where(impossible, -np.inf, out)
        return out

    def _objective_prior(self, params):
        if self.alpha == 0:
            return 0.0
        log_prior, log_table = params
        return float(self.alpha * (log_prior.sum() + log_table.sum()))

    def _e_step(self, data, params):
        q, log_ev = normalize_log(self._log_joint(data, params))
        return q, float(log_ev.sum()) + self._objective_prior(params)

    # -- the engine's hooks (crowdlearn._base.EMFitter) ---------------------------------
    def _check_params(self):
        check_scalar(self.n_classes, "n_classes", kind=numbers.Integral, low=1)
        check_scalar(self.alpha, "alpha", low=0.0)
        check_em_params(self)

    def _make_data(self, X) -> "_LCData":
        data = self._encode(X, fitting=True)
        n, K = data.onehot.shape[0], self.n_classes
        never = np.flatnonzero(np.asarray(data.observed.sum(axis=0)).ravel() == 0)
        if never.size:
            raise ValueError(f"child(ren) {never.tolist()} are never observed (every entry is "
                             f"-1); drop those columns")
        unobserved = np.flatnonzero(np.asarray(data.observed.sum(axis=1)).ravel() == 0)
        if unobserved.size:
            raise ValueError(f"item(s) {unobserved[:5].tolist()} have no observed child; "
                             f"drop them before fitting")
        given = None
        if not (isinstance(self.init, str) and self.init == "random"):
            if isinstance(self.init, str):
                raise ValueError(f"init must be 'random' or an array of responsibilities, "
                                 f"got {self.init!r}")
            given = check_probability_matrix(self.init, "init", n_rows=n, n_cols=K)
        return data._replace(start=given)

    def _init_params(self, data: "_LCData", restart: int, rng):
        n, K = data.onehot.shape[0], self.n_classes
        given = data.start
        q = given if (restart == 0 and given is not None) else rng.dirichlet(np.ones(K), size=n)
        return self._m_step(data, q)

    def _set_fitted(self, data: "_LCData", result) -> None:
        self.n_states_ = data.n_states
        log_prior, log_table = result.params
        self.class_prior_ = np.exp(log_prior)
        table = np.exp(log_table)
        bounds = np.cumsum(self.n_states_)[:-1]
        self.cond_prob_ = np.split(table, bounds, axis=1)
        self._params = result.params
        self._keep_em_result(result)

    # -- public API --------------------------------------------------------------------
    def fit(self, X):
        """Fit by EM.

        Parameters
        ----------
        X : array-like of int, shape (n_items, n_children)
            Observed states, ``-1`` where a child was not observed.
        """
        return self._fit(X)

    def predict_proba(self, X) -> np.ndarray:
        """Posterior ``P(y = n | observed children)`` for each row of ``X``."""
        self._check_fitted()
        data = self._encode(X, fitting=False)
        return posterior_or_refuse(
            self._log_joint(data, self._params),
            "row(s) {rows} of X have probability 0 under every class (a state never seen in "
            "training with alpha=0); use alpha > 0")

    def predict(self, X) -> np.ndarray:
        """Most probable hidden class of each row of ``X``."""
        return np.argmax(self.predict_proba(X), axis=1)

    def log_likelihood(self, X) -> float:
        """Observed-data log-likelihood ``sum_i log p(x^(i))`` under the fitted parameters."""
        self._check_fitted()
        data = self._encode(X, fitting=False)
        _, log_ev = normalize_log(self._log_joint(data, self._params))
        return float(log_ev.sum())

    def free_energy(self, X, resp) -> float:
        r"""The free energy :math:`F(q, \theta)` of responsibilities ``resp`` at the fitted parameters.

        For any distributions :math:`q_i` over the hidden class of item :math:`i`,

        .. math::

            \begin{aligned}
            F(q, \theta) &= \sum_i \sum_n q_i(n)
            \big[\log p(y = n, x^{(i)} \mid \theta) - \log q_i(n)\big] \\
            &= \ell(\theta) - \sum_i \mathrm{KL}\big(q_i \,\Vert\,
            p(y \mid x^{(i)}, \theta)\big),
            \end{aligned}

        with :math:`\ell(\theta) = \log p(\mathcal{D} \mid \theta)`; so it is a lower
        bound on :meth:`log_likelihood`, equal to it exactly when ``resp`` is the
        posterior. The E-step maximises it over :math:`q`, the
        M-step over :math:`\theta`. With ``alpha > 0`` the Dirichlet prior is not
        included: this is the bound on the log-likelihood, not on the log-posterior.

        Parameters
        ----------
        X : array-like of int, shape (n_items, n_children)
            Observed states, ``-1`` where a child was not observed.
        resp : array-like of shape (n_items, n_classes)
            Rows are distributions :math:`q_i(n)`; zero entries contribute nothing
            (:math:`0 \log 0 = 0`).

        Returns
        -------
        float
            :math:`F(q, \theta)`; ``-inf`` if ``resp`` puts weight on a class
            under which an item is impossible.

        Examples
        --------
        >>> import numpy as np
        >>> from crowdlearn import LatentClassModel
        >>> from crowdlearn.simulate import simulate_latent_class
        >>> tables = [np.array([[0.9, 0.1], [0.2, 0.8]])] * 3
        >>> X, _ = simulate_latent_class(300, [0.5, 0.5], tables, random_state=0)
        >>> lcm = LatentClassModel(n_classes=2, random_state=0).fit(X)
        >>> bool(np.isclose(lcm.free_energy(X, lcm.posterior_), lcm.log_likelihood(X)))
        True
        >>> flat = np.full((300, 2), 0.5)
        >>> bool(lcm.free_energy(X, flat) < lcm.log_likelihood(X))
        True
        """
        self._check_fitted()
        data = self._encode(X, fitting=False)
        q = check_probability_matrix(resp, "resp", n_rows=data.onehot.shape[0],
                                     n_cols=len(self.class_prior_))
        log_joint = self._log_joint(data, self._params)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(q > 0, q * (log_joint - np.log(np.where(q > 0, q, 1.0))), 0.0)
        return float(terms.sum())
