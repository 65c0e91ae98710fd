r"""Chapter 3's explorer: EM on a two-coin mixture, one half-step at a time.

Each item :math:`i = 1, \dots, m` is a batch of ``tosses`` tosses of one of two coins;
which coin is hidden. Coin :math:`n \in \{1, 2\}` is picked with probability
:math:`\phi_n` and shows heads with probability :math:`\phi_{\mathrm h\mid n}`, so the
number of heads :math:`h^{(i)}` of item :math:`i` has the mixture distribution

.. math:: p(h^{(i)} \mid \theta) = \sum_{n=1}^{2} \phi_n \binom{\mathrm{tosses}}{h^{(i)}}
   \phi_{\mathrm h\mid n}^{h^{(i)}} (1 - \phi_{\mathrm h\mid n})^{\mathrm{tosses} - h^{(i)}}.

The functions below are EM for this model in plain numpy: :func:`e_step` (the posteriors
:math:`Q_i(n)` and the log-likelihood :math:`\ell(\theta)`), :func:`m_step`,
:func:`free_energy` :math:`F(q, \theta)`, :func:`~crowdlearn.widgets.em_steps.half_steps` (the whole sequence start,
E, M, E, M, ... with :math:`\ell` and :math:`F` after each half-step), :func:`fixed_point`
(EM until it stops rising) and :func:`basin_map` (where EM ends from a grid of starts).

:class:`EMStepsExplorer` shows them live: an ``anywidget`` in Jupyter and, in the
rendered book, its text/html twin, the same ES module inline (``static/bundle_em_steps.js``:
``static/em_steps_engine.js``, this module's EM line for line, and the SVG view
``static/em_steps_view.js``), with no kernel.
``tests/js/test_js_em_steps.py`` checks the JavaScript against these functions to 1e-9, and
``tests/js/test_em_steps_explorer.py`` checks these functions against
:class:`~crowdlearn.LatentClassModel` and brute-force enumeration.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from crowdlearn._validation import check_int_array, check_scalar
from crowdlearn.widgets._explorer import MAX_ITER, STATIC, _LiveExplorer, _page_html, check_sizes

__all__ = ["HEADS", "TOSSES", "EMStepsExplorer", "basin_map", "e_step", "fixed_point",
           "free_energy", "half_steps", "live_em_steps_html", "live_em_steps_widget",
           "m_step"]

#: Heads in each of the chapter's five batches of ten tosses.
HEADS = (1, 2, 5, 6, 9)
#: Tosses per batch.
TOSSES = 10
#: The finest basin grid: :func:`basin_map` (and the page) run EM from ``n_grid**2`` starts.
MAX_GRID = 101


def _log_binom(heads, tosses: int) -> np.ndarray:
    """log C(tosses, h) for each h, as a sum of logs (the engine computes it the same way)."""
    out = []
    for h in np.asarray(heads, dtype=int):
        out.append(sum(np.log((tosses - h + k) / k) for k in range(1, h + 1)))
    return np.asarray(out, dtype=float)


def _log_joint(heads, theta, phi, tosses):
    """log p(h^{(i)}, coin = n | theta), shape (m, 2)."""
    h = np.asarray(heads, dtype=float)[:, None]
    theta = np.asarray(theta, dtype=float)
    prior = np.array([phi, 1.0 - phi])
    with np.errstate(divide="ignore"):
        return (np.log(prior) + h * np.log(theta) + (tosses - h) * np.log1p(-theta)
                + _log_binom(heads, tosses)[:, None])


def e_step(heads=HEADS, theta=(2 / 3, 1 / 3), phi: float = 0.5, tosses: int = TOSSES):
    r"""The E-step at :math:`\theta = (\phi_{\mathrm h\mid 1}, \phi_{\mathrm h\mid 2}, \phi_1)`.

    Returns
    -------
    Q : ndarray of shape (m, 2)
        :math:`Q_i(n) = P(\text{coin } n \mid h^{(i)}; \theta)`.
    log_lik : float
        :math:`\ell(\theta) = \sum_i \log p(h^{(i)} \mid \theta)`, binomial coefficients
        included.

    Examples
    --------
    >>> Q, ll = e_step([5, 6], theta=(2 / 3, 1 / 3), phi=0.5)
    >>> Q[:, 0].round(3).tolist()
    [0.5, 0.8]
    """
    lj = _log_joint(heads, theta, phi, tosses)
    top = lj.max(axis=1, keepdims=True)
    log_ev = top + np.log(np.exp(lj - top).sum(axis=1, keepdims=True))
    return np.exp(lj - log_ev), float(log_ev.sum())


def m_step(heads, q, tosses: int = TOSSES):
    r"""The M-step from distributions ``q`` (shape (m, 2)) over the coins.

    :math:`\phi_{\mathrm h\mid n}
    = \sum_i q_i(n) h^{(i)} \big/ \big(\mathrm{tosses} \sum_i q_i(n)\big)`
    (expected heads over expected tosses of coin :math:`n`) and
    :math:`\phi_1 = \frac1m \sum_i q_i(1)`. A coin with no weight keeps bias 1/2.

    Returns
    -------
    theta : ndarray of shape (2,)
    phi : float
    """
    q = np.asarray(q, dtype=float)
    h = np.asarray(heads, dtype=float)
    weight = q.sum(axis=0)
    heads_n = (q * h[:, None]).sum(axis=0)
    theta = np.where(weight > 0, heads_n / (tosses * np.where(weight > 0, weight, 1.0)), 0.5)
    return theta, float(q[:, 0].sum() / q.shape[0])


def free_energy(heads, q, theta, phi: float, tosses: int = TOSSES) -> float:
    r""":math:`F(q, \theta) = \sum_i \sum_n q_i(n)[\log p(h^{(i)}, n \mid \theta) - \log q_i(n)]`,
    with :math:`0 \log 0 = 0`."""
    q = np.asarray(q, dtype=float)
    lj = _log_joint(heads, theta, phi, tosses)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (lj - np.log(np.where(q > 0, q, 1.0))), 0.0)
    return float(terms.sum())


def half_steps(heads=HEADS, theta=(2 / 3, 1 / 3), phi: float = 0.5, n_half: int = 20,
               tosses: int = TOSSES) -> list[dict]:
    """EM from ``(theta, phi)`` for ``n_half`` half-steps, recording every state.

    State 0 is the start, with ``q`` uniform (nothing known yet); state ``2t - 1`` is
    after the ``t``-th E-step (``q`` is the posterior at the parameters of state
    ``2t - 2``) and state ``2t`` after the ``t``-th M-step. Each state is a dict with
    ``phase`` ("start", "E" or "M"), ``t``, ``theta`` (2,), ``phi``, ``q`` (m, 2),
    ``log_lik`` (at ``theta``, ``phi``) and ``free_energy`` (of ``q`` at them).
    ``n_half`` is at most ``MAX_ITER`` (10,000), as the page's step.
    """
    check_scalar(n_half, "n_half", kind=numbers.Integral, low=0, high=MAX_ITER)
    theta = np.asarray(theta, dtype=float)
    q = np.full((len(heads), 2), 0.5)
    states = []
    for k in range(n_half + 1):
        if k > 0 and k % 2 == 1:
            q, _ = e_step(heads, theta, phi, tosses)
        elif k > 0:
            theta, phi = m_step(heads, q, tosses)
        _, ll = e_step(heads, theta, phi, tosses)
        states.append({"phase": "start" if k == 0 else "EM"[(k + 1) % 2],
                       "t": (k + 1) // 2, "theta": theta.copy(), "phi": float(phi),
                       "q": q.copy(), "log_lik": ll,
                       "free_energy": free_energy(heads, q, theta, phi, tosses)})
    return states


def fixed_point(heads=HEADS, theta=(2 / 3, 1 / 3), phi: float = 0.5, *,
                tol: float = 1e-10, max_iter: int = 2000, tosses: int = TOSSES) -> dict:
    """EM from ``(theta, phi)`` until an iteration raises the log-likelihood by at most
    ``tol * max(1, |log-likelihood|)`` (the package's rule), or ``max_iter`` iterations.

    Returns a dict: ``theta``, ``phi``, ``log_lik`` (at the final parameters),
    ``n_iter`` (M-steps taken), ``converged`` and ``path`` (shape (n_iter + 1, 3): the
    parameters after every M-step, the start first). ``max_iter`` is at most
    ``MAX_ITER`` (10,000).
    """
    check_sizes(1, max_iter, tol)
    theta = np.asarray(theta, dtype=float)
    q, ll = e_step(heads, theta, phi, tosses)
    path = [(theta[0], theta[1], phi)]
    converged = False
    t = 0
    while t < max_iter:
        theta, phi = m_step(heads, q, tosses)
        t += 1
        path.append((theta[0], theta[1], phi))
        q, new = e_step(heads, theta, phi, tosses)
        rise, ll = new - ll, new
        if rise <= tol * max(1.0, abs(ll)):
            converged = True
            break
    return {"theta": theta, "phi": float(phi), "log_lik": ll, "n_iter": t,
            "converged": converged, "path": np.array(path)}


def basin_map(heads=HEADS, phi: float = 0.5, n_grid: int = 19, *, tol: float = 1e-10,
              max_iter: int = 2000, tosses: int = TOSSES) -> dict:
    """Where EM ends from each start ``(a, b)`` of an ``n_grid`` x ``n_grid`` grid of
    biases in [0.05, 0.95], with ``phi`` for coin 1.

    Returns ``grid`` (n_grid,), and ``theta`` (n_grid, n_grid, 2), ``phi`` and ``log_lik``
    (n_grid, n_grid), ``n_iter`` of each run: entry ``[a, b]`` starts from
    ``(grid[a], grid[b])``. ``n_grid`` is between 2 and ``MAX_GRID`` (101),
    ``max_iter`` at most ``MAX_ITER`` (10,000), as on the page.
    """
    check_scalar(n_grid, "n_grid", kind=numbers.Integral, low=2, high=MAX_GRID)
    check_sizes(1, max_iter, tol)
    grid = np.linspace(0.05, 0.95, n_grid)
    theta = np.empty((n_grid, n_grid, 2))
    phis, lls, iters = (np.empty((n_grid, n_grid)) for _ in range(3))
    for a, ta in enumerate(grid):
        for b, tb in enumerate(grid):
            r = fixed_point(heads, (ta, tb), phi, tol=tol, max_iter=max_iter, tosses=tosses)
            theta[a, b], phis[a, b], lls[a, b], iters[a, b] = (r["theta"], r["phi"],
                                                                r["log_lik"], r["n_iter"])
    return {"grid": grid, "theta": theta, "phi": phis, "log_lik": lls,
            "n_iter": iters.astype(int)}


def _live_settings(*, bias1: float = 2 / 3, bias2: float = 1 / 3, phi: float = 0.5,
                   step: int = 0, heads=HEADS, tosses: int = TOSSES, n_grid: int = 19,
                   tol: float = 1e-10, max_iter: int = 2000, **old) -> dict:
    bias1, bias2 = _renamed(old, bias1, bias2)
    for name, v in (("bias1", bias1), ("bias2", bias2), ("phi", phi)):
        check_scalar(v, name, low=0.05, high=0.95)
    check_scalar(step, "step", kind=numbers.Integral, low=0, high=MAX_ITER)
    check_scalar(tosses, "tosses", kind=numbers.Integral, low=1, high=1000)
    check_scalar(n_grid, "n_grid", kind=numbers.Integral, low=2, high=MAX_GRID)
    check_sizes(1, max_iter, tol)
    heads = check_int_array(heads, "heads").tolist()  # 1.5 heads refused, not read as 1
    if len(heads) > 1000 or min(heads) < 0 or max(heads) > tosses:
        raise ValueError(f"heads must be counts between 0 and tosses={tosses}, got {heads}")
    # the view's own keys: theta1, theta2 (its JavaScript state)
    return {"theta1": float(bias1), "theta2": float(bias2), "phi": float(phi),
            "step": int(step), "heads": heads, "tosses": int(tosses), "nGrid": int(n_grid),
            "tol": float(tol), "maxIter": int(max_iter)}


def _renamed(old: dict, bias1, bias2):
    """``theta1``/``theta2``, the former names of ``bias1``/``bias2`` (the book keeps
    :math:`\\theta` for all the parameters), accepted with a DeprecationWarning."""
    unknown = set(old) - {"theta1", "theta2"}
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {sorted(unknown)}")
    if old:
        names = " and ".join(sorted(old))
        warnings.warn(f"{names}: now called bias1 and bias2 (the coins' starting P(heads)); "
                      "the old names will be removed", DeprecationWarning, stacklevel=4)
    return old.get("theta1", bias1), old.get("theta2", bias2)


def live_em_steps_html(**settings) -> str:
    """The explorer as self-contained HTML that recomputes in the browser (no kernel, no
    network): ``static/bundle_em_steps.js`` inline. Keyword arguments: ``bias1``,
    ``bias2`` (the coins' starting probabilities of heads, :math:`\\phi_{\\mathrm h\\mid 1}` and
    :math:`\\phi_{\\mathrm h\\mid 2}`), ``phi`` (the starting probability of coin 1, :math:`\\phi_1`),
    ``step`` (half-steps shown at first), ``heads``, ``tosses``, ``n_grid``, ``tol``,
    ``max_iter``."""
    return _page_html("em_steps", _live_settings(**settings))


def live_em_steps_widget(**settings) -> EMStepsExplorer:
    """The same explorer as an ``anywidget`` (Jupyter): an :class:`EMStepsExplorer`, whose
    ``result`` receives the state shown after every change. Keyword arguments as for
    :func:`live_em_steps_html`."""
    return EMStepsExplorer(**settings)


class EMStepsExplorer(_LiveExplorer):
    """EM on the two-coin mixture, stepped by hand, live in Jupyter and in the book.

    Controls: the starting biases of the two coins and the starting probability of coin
    1; the number of half-steps taken (a slider, and buttons for one E- or M-step back
    or forward, and for running to the fixed point); presets for a symmetric start and
    for swapping the coins. The view: the path of the parameters over the basins of
    attraction of EM's fixed points, :math:`\\ell(\\theta)` and :math:`F(q, \\theta)`
    after every half-step, and the current :math:`q_i(1)` of every item.

    An ``anywidget`` (``static/bundle_em_steps.js``) whose ``text/html`` twin the rendered
    book shows. Parameters are those of :func:`live_em_steps_html`; :meth:`states`
    recomputes the sequence the page shows with
    :func:`~crowdlearn.widgets.em_steps.half_steps`.
    """

    _esm = STATIC / "bundle_em_steps.js"

    def __init__(self, **settings):
        super().__init__(view_settings=_live_settings(**settings))

    @property
    def settings(self) -> dict:
        """The view's settings (``bias1``, ``bias2``, ``phi``, ``step``, ``heads``,
        ``tosses``, ``nGrid``, ``tol``, ``maxIter``)."""
        s = dict(self.view_settings)
        s["bias1"], s["bias2"] = s.pop("theta1"), s.pop("theta2")
        return s

    def states(self, n_half: int | None = None) -> list[dict]:
        """The page's half-steps from the current start, computed by :func:`~crowdlearn.widgets.em_steps.half_steps`."""
        s = self.settings
        n = s["step"] if n_half is None else n_half
        return half_steps(s["heads"], (s["bias1"], s["bias2"]), s["phi"], n, s["tosses"])

    def widget(self):
        """The ``anywidget``: the explorer itself."""
        return self
