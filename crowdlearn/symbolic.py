r"""SymPy derivations used by the chapters and the tests alike.

Each function *derives* a result -- it sets up an objective and solves the
stationarity conditions with SymPy -- and returns the pieces, so that a chapter
can display and assert them and a test can evaluate them numerically against
the package's implementation. Nothing here hard-codes the answer it returns.

The docstrings use the book's notation (classes or states :math:`n = 1, \dots, N`,
items :math:`i`, features :math:`j`); the SymPy symbols keep the short names the
chapters and tests look up (``theta``, ``c``, ``a``, ``lam``, ``phi``, ``n``, ...),
and each docstring says which symbol stands for which quantity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

__all__ = [
    "Derivation",
    "lagrange_categorical",
    "bernoulli_mle",
    "naive_bayes_mle",
    "e_step_maximises_free_energy",
    "free_energy_decomposition",
    "check_maximum",
]


@dataclass
class Derivation:
    """The result of a symbolic derivation.

    Attributes
    ----------
    objective : sympy.Expr
        What was maximised (a Lagrangian when there are constraints).
    solution : dict
        Maps each parameter symbol to its derived closed form.
    symbols : dict
        Named symbols, so callers can substitute numbers or compare forms.
    """

    objective: sp.Expr
    solution: dict
    symbols: dict = field(default_factory=dict)

    def numeric(self, target, **values):
        """Evaluate ``solution[target]`` with symbols (by name) replaced by numbers.

        A name that stands for a tuple of symbols (e.g. the counts ``c``) takes a
        sequence of numbers of the same length.

        Examples
        --------
        >>> d = lagrange_categorical(3)
        >>> d.numeric(d.symbols["theta"][0], c=(1, 2, 5))
        0.125
        """
        subs = {}
        for name, value in values.items():
            sym = self.symbols[name]
            if isinstance(sym, (tuple, list)):
                value = list(value)
                if len(value) != len(sym):
                    raise ValueError(f"{name} has {len(sym)} entries, got {len(value)} values")
                subs.update(zip(sym, value))
            else:
                subs[sym] = value
        return float(self.solution[target].subs(subs))


def _positive(name, n):
    return sp.symbols(f"{name}_1:{n + 1}", positive=True)


def lagrange_categorical(n_states: int = 3, *, pseudo_count: bool = False) -> Derivation:
    r"""Maximise :math:`\sum_n (c_n + \alpha)\log\theta_n` subject to :math:`\sum_n\theta_n = 1`.

    This is the M-step of every categorical table in the book (class priors
    :math:`\phi_n`, confusion-matrix rows :math:`M^{(r)}_{n,\cdot}`, conditional
    probability tables): for one distribution :math:`\theta_1, \dots, \theta_N` over
    :math:`N` = ``n_states`` states, with expected counts :math:`c_n` and a
    pseudo-count :math:`\alpha` (the package's ``alpha``, a symmetric Dirichlet prior
    of concentration :math:`\alpha + 1`; ``pseudo_count=True``, :math:`\alpha = 0`
    otherwise), the Lagrangian
    :math:`\mathcal L = \sum_n (c_n + \alpha)\log\theta_n + \lambda(1 - \sum_n \theta_n)`
    is solved for :math:`\theta` and the multiplier :math:`\lambda` (a Lagrange
    multiplier here, not a penalty).

    Returns
    -------
    Derivation
        ``solution`` maps each :math:`\theta_n` (and :math:`\lambda`) to its
        closed form; ``symbols`` has ``theta`` (:math:`\theta_1, \dots, \theta_N`),
        ``c`` (:math:`c_1, \dots, c_N`), ``a`` (:math:`\alpha`) and ``lam``
        (:math:`\lambda`).

    Examples
    --------
    >>> d = lagrange_categorical(2)
    >>> d.solution[d.symbols["theta"][0]]
    c_1/(c_1 + c_2)
    """
    theta = _positive("theta", n_states)
    c = _positive("c", n_states)
    a = sp.Symbol("a", nonnegative=True) if pseudo_count else sp.Integer(0)
    lam = sp.Symbol("lambda")
    L = sum((ci + a) * sp.log(t) for ci, t in zip(c, theta)) + lam * (1 - sum(theta))
    eqs = [sp.diff(L, t) for t in theta] + [sp.diff(L, lam)]
    # as by hand: each stationarity condition gives theta_n in terms of lambda, and the
    # constraint then fixes lambda (sp.solve on the whole system finds the same, slower)
    each = {}
    for t, eq in zip(theta, eqs):
        roots = sp.solve(eq, t)
        if len(roots) != 1:
            raise ArithmeticError(f"expected one root of dL/d{t} = 0, got {roots}")
        each[t] = roots[0]
    lams = sp.solve(eqs[-1].subs(each), lam)
    if len(lams) != 1:
        raise ArithmeticError(f"expected a unique stationary point, got lambda in {lams}")
    solution = {lam: sp.simplify(lams[0])}  # in sp.solve's order: lambda, then theta
    solution.update((t, sp.simplify(v.subs(lam, lams[0]))) for t, v in each.items())
    if any(sp.cancel(eq.subs(solution)) != 0 for eq in eqs):
        raise ArithmeticError("the stationary point does not solve the Lagrange system")
    return Derivation(L, solution, {"theta": theta, "c": c, "a": a, "lam": lam})


def bernoulli_mle(*, pseudo_count: bool = False) -> Derivation:
    r"""Maximise the weighted Bernoulli log-likelihood of one probability :math:`\phi`.

    Here :math:`\phi` stands for a feature probability :math:`\phi_{j|n}` (or any
    other Bernoulli parameter). With item weights :math:`q_i` (short for
    :math:`q_i(n)`: :math:`1\{y^{(i)} = n\}` for hard labels, a posterior
    probability in EM), :math:`A = \sum_i q_i x^{(i)}_j` (weight of ones) and
    :math:`B = \sum_i q_i (1 - x^{(i)}_j)` (weight of zeros), the objective is
    :math:`(A + \alpha)\log\phi + (B + \alpha)\log(1-\phi)`, with :math:`\alpha` the
    pseudo-count of :func:`lagrange_categorical` (``pseudo_count=True``; :math:`\alpha = 0`
    otherwise); setting its derivative to zero gives
    :math:`\phi = (A + \alpha) / (A + B + 2\alpha)`. ``symbols`` has ``phi``, ``A``, ``B``
    and ``a`` (:math:`\alpha`).
    """
    phi = sp.Symbol("phi", positive=True)
    A, B = sp.symbols("A B", positive=True)
    a = sp.Symbol("a", nonnegative=True) if pseudo_count else sp.Integer(0)
    f = (A + a) * sp.log(phi) + (B + a) * sp.log(1 - phi)
    sol = sp.solve(sp.diff(f, phi), phi)
    if len(sol) != 1:
        raise ArithmeticError(f"expected a unique stationary point, got {sol}")
    return Derivation(f, {phi: sp.simplify(sol[0])}, {"phi": phi, "A": A, "B": B, "a": a})


def naive_bayes_mle(n_classes: int = 3) -> Derivation:
    r"""Derive the Naive Bayes MLE :math:`\phi_n` and :math:`\phi_{j|n}` from count statistics.

    The log-likelihood of hard-labelled data depends on the data only through
    :math:`m_n` (the number of items of class :math:`n`) and :math:`s_{jn}` (the
    number of items of class :math:`n` with :math:`x_j = 1`, for one feature
    :math:`j`):

    .. math::

        \ell = \sum_n m_n \log\phi_n
             + \sum_n \big[s_{jn}\log\phi_{j|n} + (m_n - s_{jn})\log(1 - \phi_{j|n})\big].

    Following the source, :math:`\phi_N = 1 - \sum_{n<N}\phi_n` is eliminated and
    the partial derivatives with respect to the free parameters are set to zero.
    ``symbols`` has ``phi`` (:math:`\phi_1, \dots, \phi_N`), ``phi_j``
    (:math:`\phi_{j|1}, \dots, \phi_{j|N}`), ``n`` (the counts
    :math:`m_1, \dots, m_N`; the SymPy symbols are named ``n_1``, ...) and ``s``
    (:math:`s_{j1}, \dots, s_{jN}`).
    """
    N = n_classes
    phi = _positive("phi", N)
    phij = _positive("phi_j", N)
    n = _positive("n", N)
    s = _positive("s", N)
    last = 1 - sum(phi[:-1])
    ell = sum(n[y] * sp.log(phi[y] if y < N - 1 else last) for y in range(N))
    ell += sum(s[y] * sp.log(phij[y]) + (n[y] - s[y]) * sp.log(1 - phij[y]) for y in range(N))
    free = list(phi[:-1]) + list(phij)
    sol = sp.solve([sp.diff(ell, v) for v in free], free, dict=True)
    if len(sol) != 1:
        raise ArithmeticError(f"expected a unique stationary point, got {sol}")
    solution = {k: sp.simplify(v) for k, v in sol[0].items()}
    solution[phi[-1]] = sp.simplify(last.subs(solution))
    return Derivation(ell, solution, {"phi": phi, "phi_j": phij, "n": n, "s": s})


def e_step_maximises_free_energy(n_states: int = 3) -> Derivation:
    r"""Maximise the free energy over :math:`q` for fixed parameters.

    For one item with observed data :math:`v` and a hidden variable :math:`H` with
    :math:`N` = ``n_states`` states, write :math:`P_i(n; \theta) = p(v, H = n \mid \theta)`
    (``p_n`` in the code). The free energy is
    :math:`F(q, \theta) = \sum_n q(n) \log P_i(n; \theta) - \sum_n q(n) \log q(n)`;
    under :math:`\sum_n q(n) = 1` (multiplier :math:`\lambda`) its stationary point
    is the posterior
    :math:`q(n) = P_i(n; \theta) / \sum_{n'} P_i(n'; \theta) = p(H = n \mid v, \theta)`.
    ``symbols`` has ``q`` (:math:`q(1), \dots, q(N)`), ``p``, ``lam`` and ``F``.
    """
    q = _positive("q", n_states)
    p = _positive("p", n_states)
    lam = sp.Symbol("lambda")
    F = sum(qk * sp.log(pk) - qk * sp.log(qk) for qk, pk in zip(q, p))
    L = F + lam * (1 - sum(q))
    # the stationarity conditions give q(n) = p_n exp(-1 - lambda); the constraint fixes lambda
    sol_q = {qk: sp.solve(sp.diff(L, qk), qk)[0] for qk in q}
    lam_sol = sp.solve(sp.Eq(sum(sol_q.values()), 1), lam)
    if len(lam_sol) != 1:
        raise ArithmeticError(f"expected a unique multiplier, got {lam_sol}")
    solution = {qk: sp.simplify(v.subs(lam, lam_sol[0])) for qk, v in sol_q.items()}
    return Derivation(L, solution, {"q": q, "p": p, "lam": lam, "F": F})


def free_energy_decomposition(n_states: int = 3):
    r"""The log-evidence as free energy plus a KL divergence, for one item.

    The identity is
    :math:`\log p(v \mid \theta) = F(q, \theta) + \mathrm{KL}(q \,\|\, p(H \mid v, \theta))`.
    Returns ``(log_evidence, free_energy, kl, symbols)`` as SymPy expressions in
    the joint probabilities :math:`P_i(n; \theta) = p(v, H = n \mid \theta)` (``p_n``),
    :math:`n = 1, \dots, N` (``n_states``), and a distribution :math:`q` whose last
    entry is :math:`q(N) = 1 - \sum_{n<N} q(n)`, so the constraint is built in.
    The caller asserts that ``log_evidence - free_energy - kl`` simplifies to 0.
    """
    q_free = _positive("q", n_states - 1)
    q = list(q_free) + [1 - sum(q_free)]
    p = _positive("p", n_states)
    Z = sum(p)
    log_evidence = sp.log(Z)
    free_energy = sum(qk * (sp.log(pk) - sp.log(qk)) for qk, pk in zip(q, p))
    kl = sum(qk * (sp.log(qk) - sp.log(pk / Z)) for qk, pk in zip(q, p))
    return log_evidence, free_energy, kl, {"q": q, "p": p}


def check_maximum(d: Derivation, variables) -> bool:
    """True if the Hessian of ``d.objective`` in ``variables`` is negative definite at the solution.

    Checked with the leading principal minors; the symbols must be declared
    positive so SymPy can decide their signs. Each minor is first factored, which usually
    shows its sign at once (a product of powers of positive symbols); only a minor whose
    factored form SymPy cannot sign is simplified in full (seconds for a 6 x 6 Hessian),
    so the answer is never ``False`` where the full simplification would decide ``True``.
    """
    H = sp.hessian(d.objective, list(variables)).subs(d.solution)
    H = sp.simplify(H)
    n = H.shape[0]
    for k in range(1, n + 1):
        minor = H[:k, :k].det() * (-1) ** k
        if sp.factor(minor).is_positive is True:
            continue
        if not (sp.simplify(minor).is_positive is True):
            return False
    return True
