"""SymPy derivations used by the chapters and the tests alike.

Each function *derives* a result -- it sets up an objective and solves the
stationarity conditions with SymPy -- and returns the pieces, so that a chapter
can display and assert them and a test can evaluate them numerically against
the package's implementation. Nothing here hard-codes the answer it returns.
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
    r"""Maximise :math:`\sum_s (c_s + a)\log\theta_s` subject to :math:`\sum_s\theta_s = 1`.

    This is the M-step of every categorical table in the book (class priors,
    confusion-matrix rows, conditional probability tables): with expected counts
    :math:`c_s` and a Dirichlet pseudo-count :math:`a` (``pseudo_count=True``;
    :math:`a = 0` otherwise), the Lagrangian
    :math:`\mathcal L = \sum_s (c_s + a)\log\theta_s + \lambda(1 - \sum_s \theta_s)`
    is solved for :math:`\theta` and :math:`\lambda`.

    Returns
    -------
    Derivation
        ``solution`` maps each :math:`\theta_s` (and :math:`\lambda`) to its
        closed form; ``symbols`` has ``theta``, ``c``, ``a``, ``lam``.

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
    sol = sp.solve(eqs, list(theta) + [lam], dict=True)
    if len(sol) != 1:
        raise ArithmeticError(f"expected a unique stationary point, got {sol}")
    solution = {k: sp.simplify(v) for k, v in sol[0].items()}
    return Derivation(L, solution, {"theta": theta, "c": c, "a": a, "lam": lam})


def bernoulli_mle(*, pseudo_count: bool = False) -> Derivation:
    r"""Maximise the weighted Bernoulli log-likelihood of one probability :math:`\phi`.

    With :math:`A = \sum_i w_i x_i` (weight of ones) and
    :math:`B = \sum_i w_i (1 - x_i)` (weight of zeros) the objective is
    :math:`(A + a)\log\phi + (B + a)\log(1-\phi)`; setting its derivative to
    zero gives :math:`\phi = (A + a) / (A + B + 2a)`.
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
    r"""Derive the Naive Bayes MLE :math:`\phi_y` and :math:`\phi_{j|y}` from count statistics.

    The log-likelihood of hard-labelled data depends on the data only through
    :math:`n_y` (items of class :math:`y`) and :math:`s_y` (items of class
    :math:`y` with :math:`x_j = 1`, for one feature :math:`j`):

    .. math::

        \ell = \sum_y n_y \log\phi_y
             + \sum_y \big[s_y\log\phi_{j|y} + (n_y - s_y)\log(1 - \phi_{j|y})\big].

    Following the source, :math:`\phi_N = 1 - \sum_{y<N}\phi_y` is eliminated and
    the partial derivatives with respect to the free parameters are set to zero.
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

    With :math:`p_k = p(v, h = k \mid \theta)`, the free energy is
    :math:`F(q) = \sum_k q_k \log p_k - \sum_k q_k \log q_k`; under
    :math:`\sum_k q_k = 1` its stationary point is the posterior
    :math:`q_k = p_k / \sum_{k'} p_{k'} = p(h = k \mid v, \theta)`.
    """
    q = _positive("q", n_states)
    p = _positive("p", n_states)
    lam = sp.Symbol("lambda")
    F = sum(qk * sp.log(pk) - qk * sp.log(qk) for qk, pk in zip(q, p))
    L = F + lam * (1 - sum(q))
    # the stationarity conditions give q_k = p_k exp(-1 - lambda); the constraint fixes lambda
    sol_q = {qk: sp.solve(sp.diff(L, qk), qk)[0] for qk in q}
    lam_sol = sp.solve(sp.Eq(sum(sol_q.values()), 1), lam)
    if len(lam_sol) != 1:
        raise ArithmeticError(f"expected a unique multiplier, got {lam_sol}")
    solution = {qk: sp.simplify(v.subs(lam, lam_sol[0])) for qk, v in sol_q.items()}
    return Derivation(L, solution, {"q": q, "p": p, "lam": lam, "F": F})


def free_energy_decomposition(n_states: int = 3):
    r"""The identity :math:`\log p(v) = F(q, \theta) + \mathrm{KL}(q \,\|\, p(h \mid v, \theta))`.

    Returns ``(log_evidence, free_energy, kl, symbols)`` as SymPy expressions in
    the joint probabilities :math:`p_k = p(v, h=k)` and a distribution :math:`q`
    whose last entry is :math:`1 - \sum_{k<K} q_k`, so the constraint is built in.
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
    positive so SymPy can decide their signs.
    """
    H = sp.hessian(d.objective, list(variables)).subs(d.solution)
    H = sp.simplify(H)
    n = H.shape[0]
    for k in range(1, n + 1):
        minor = sp.simplify(H[:k, :k].det() * (-1) ** k)
        if not (minor.is_positive is True):
            return False
    return True
