"""Progress bars by `tqdm <https://tqdm.github.io>`_: ``tqdm.auto`` shows a widget in
Jupyter and one text line on stderr elsewhere.

Used by long loops such as :func:`crowdlearn.features.sparse_experts.sparse_experts_path`, and
by the EM estimators through :class:`EMProgress`, a callback of the EM engine (which knows
nothing of it). A bar is off unless asked for (``progress=True``); nothing is printed or
displayed otherwise. tqdm is optional (it comes with ``crowdlearn[widgets]``, ``[book]`` and
``[all]``): without it, ``progress=True`` shows nothing and the results are the same.
"""

from __future__ import annotations

BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt}{postfix}"
"""What a bar shows: no elapsed time or rate, so that a page built with a finished bar (the
book's chapter 11) is the same at every build."""

PROGRESS_INTERVAL = 0.1
"""Least seconds between two redraws of a bar (tqdm's ``mininterval``); the end of every EM
run and the end of the loop are always drawn."""


def check_progress(progress) -> bool:
    """``bool(progress)``; ``ValueError`` unless ``progress`` is None, True or False."""
    if progress not in (None, True, False):
        raise ValueError(f"progress must be None, True or False, got {progress!r}")
    return bool(progress)


def _tqdm_class():
    """``tqdm.auto.tqdm`` (its notebook bar inside a Jupyter kernel, its text bar elsewhere),
    or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _new_bar(total: int, description: str):
    """A tqdm bar of ``total`` steps, or None without tqdm."""
    tqdm = _tqdm_class()
    if tqdm is None:
        return None
    # dynamic_ncols: the terminal's width; in a notebook the widget takes the page's width
    # and wraps on a phone
    return tqdm(total=max(int(total), 0), desc=description, mininterval=PROGRESS_INTERVAL,
                dynamic_ncols=True, bar_format=BAR_FORMAT)


class ProgressBar:
    """Show the progress of ``total`` steps (a tqdm bar, or nothing).

    Parameters
    ----------
    total : int
        Number of steps.
    description : str
        Shown before the bar.
    enabled : bool or None
        ``True`` shows the bar; ``None`` and ``False`` show nothing (``ValueError`` for
        anything else).

    Attributes
    ----------
    bar : tqdm.tqdm or None
        The bar shown; None when disabled or tqdm is not installed.

    Examples
    --------
    >>> bar = ProgressBar(4, "fit", enabled=False)
    >>> for _ in range(4):
    ...     bar.update(info="step")
    >>> bar.close()
    >>> bar.bar is None
    True
    """

    def __init__(self, total: int, description: str = "", *, enabled=None):
        self.bar = _new_bar(total, description) if check_progress(enabled) else None

    @property
    def count(self) -> int:
        """Steps done so far (0 when nothing is shown)."""
        return 0 if self.bar is None else self.bar.n

    def update(self, n: int = 1, info: str = "", *, refresh: bool = False):
        """Advance by ``n`` steps; ``info`` is shown after the counts; ``refresh`` draws
        now, whatever the time since the last redraw."""
        if self.bar is None:
            return
        if info:
            self.bar.set_postfix_str(info, refresh=False)
        self.bar.update(n)
        if refresh:
            self.bar.refresh()

    def close(self):
        """Draw the final state and let the bar go. In a notebook, tqdm turns a full bar
        green and one stopped short red, so a saved or rendered notebook never shows a bar
        that looks stuck."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class EMProgress:
    """The progress bar of an EM fit, as a callback of :func:`crowdlearn.em.fit_em`.

    A context manager: ``with EMProgress(progress, n_init, max_iter, name, callback) as
    cb: fit_em(..., n_init=n_init, max_iter=max_iter, callback=cb)``. The bar's length is
    the whole budget, ``n_init * (max_iter + 1)`` E-steps; a run that converges early
    jumps to the end of its share, and the text says which run and iteration EM is at
    and its objective (at the end, with restarts, the best run's objective). Redrawn at
    most every ``PROGRESS_INTERVAL`` seconds and at the end of every run. With
    ``progress`` false or None the callback is the user's ``callback`` itself and
    nothing is shown.

    Parameters
    ----------
    progress : bool or None
        Show the bar (``ValueError`` unless None, True or False).
    n_init, max_iter : int
        The runs and the M-steps per run the engine is given.
    name : str
        The bar's label (the estimator's name).
    callback : callable, optional
        The user's callback, called after every E-step as before; what it returns
        (``True`` stops the run) is passed on.
    """

    def __init__(self, progress, n_init: int, max_iter: int, name: str, callback=None):
        self.enabled = check_progress(progress)
        self.n_init, self.per_run, self.name = n_init, max_iter + 1, name
        self.user_callback = callback
        self.bar = None
        self._last = None   # the latest state seen (a run's last one is its final state)
        self._finals = {}   # restart -> final objective

    def __enter__(self):
        if not self.enabled:
            return self.user_callback
        self.bar = ProgressBar(self.n_init * self.per_run, self.name, enabled=True)
        return self._callback

    def _info(self, state) -> str:
        run = f"run {state.restart + 1}/{self.n_init} " if self.n_init > 1 else ""
        return f"{run}it {state.iteration} obj {state.objective:.6g}"

    def _run_ended(self, state) -> None:
        end = (state.restart + 1) * self.per_run
        self.bar.update(end - self.bar.count, self._info(state), refresh=True)

    def _callback(self, state):
        if self._last is not None and state.restart != self._last.restart:
            self._run_ended(self._last)
        self._last = state
        self._finals[state.restart] = state.objective
        position = state.restart * self.per_run + state.iteration + 1
        self.bar.update(position - self.bar.count, self._info(state))
        return self.user_callback(state) if self.user_callback is not None else None

    def __exit__(self, exc_type, exc, tb):
        if self.bar is None:
            return False
        try:
            if exc_type is None and self._last is not None:
                self._run_ended(self._last)
                if self.n_init > 1:
                    best = max(self._finals.values())
                    self.bar.update(0, f"best of {self.n_init} runs: obj {best:.6g}")
        finally:
            self.bar.close()
        return False
