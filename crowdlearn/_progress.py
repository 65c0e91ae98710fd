"""A minimal progress bar: an ``ipywidgets.IntProgress`` in a notebook, one text line elsewhere.

Used by long loops such as :func:`crowdlearn.features.sparse_experts.sparse_experts_path`, and
by the EM estimators through :class:`EMProgress`, a callback of the EM engine. It is off
unless asked for (``progress=True``); nothing is printed or displayed otherwise.
"""

from __future__ import annotations

import sys
import time


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can be displayed)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - exotic IPython set-ups
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class ProgressBar:
    """Show the progress of ``total`` steps.

    Parameters
    ----------
    total : int
        Number of steps.
    description : str
        Shown before the bar.
    enabled : bool or None
        ``True`` shows the bar; ``None`` and ``False`` show nothing.
    file : file-like, optional
        Where the text bar goes (default ``sys.stderr``).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgressBar(4, "fit", enabled=True, file=out)
    >>> for _ in range(4):
    ...     bar.update()
    >>> bar.close()
    >>> out.getvalue().splitlines()[-1].split("\\r")[-1]
    'fit [##############################] 4/4'
    """

    width = 30

    def __init__(self, total: int, description: str = "", *, enabled=None, file=None):
        if enabled not in (None, True, False):
            raise ValueError(f"progress must be None, True or False, got {enabled!r}")
        self.total = max(int(total), 0)
        self.description = description
        self.count = 0
        self.enabled = bool(enabled)
        self._widget = None
        self._file = file
        self._info = ""
        if not self.enabled:
            return
        if file is None and _in_notebook():
            try:
                import ipywidgets
                from IPython.display import display
            except ImportError:  # pragma: no cover - ipywidgets is a dependency
                pass
            else:
                self._widget = ipywidgets.IntProgress(
                    value=0, min=0, max=max(self.total, 1), description=description,
                    style={"description_width": "initial"},  # the whole text, never cut
                    layout={"max_width": "100%", "flex_flow": "row wrap"})  # wraps on a phone
                display(self._widget)
                return
        if self._file is None:
            self._file = sys.stderr
        self._draw()

    def _draw(self, info: str = ""):
        filled = self.width * self.count // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        text = f"{self.description} [{bar}] {self.count}/{self.total}"
        if info:
            text += f" {info}"
        self._file.write("\r" + text)
        self._file.flush()

    def update(self, n: int = 1, info: str = ""):
        """Advance by ``n`` steps; ``info`` is appended to the text line."""
        self.count = min(self.count + n, self.total)
        self._info = info or self._info
        if not self.enabled:
            return
        if self._widget is not None:
            self._widget.value = self.count
            if info:
                self._widget.description = f"{self.description} {info}"
        else:
            self._draw(info)

    def close(self):
        """Finish the line (text), or mark the widget finished: its text says how many
        steps ran ("replications: 32 of 32 done") and the bar turns green, so a saved or
        rendered notebook never shows a bar that looks stuck."""
        if self.enabled and self._widget is None:
            self._file.write("\n")
            self._file.flush()
        elif self.enabled:
            self._widget.value = self.count
            self._widget.description = (f"{self.description}: {self.count} of {self.total} "
                                        "done" + (f", {self._info}" if self._info else ""))
            self._widget.bar_style = "success" if self.count == self.total else "warning"
        self.enabled = False


PROGRESS_INTERVAL = 0.1
"""Seconds between two redraws of :class:`EMProgress`'s bar (besides the end of each run)."""


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
        if progress not in (None, True, False):
            raise ValueError(f"progress must be None, True or False, got {progress!r}")
        self.enabled = bool(progress)
        self.n_init, self.per_run, self.name = n_init, max_iter + 1, name
        self.user_callback = callback
        self.bar = None
        self._last = None   # the latest state seen (a run's last one is its final state)
        self._finals = {}   # restart -> final objective

    def __enter__(self):
        if not self.enabled:
            return self.user_callback
        self.bar = ProgressBar(self.n_init * self.per_run, self.name, enabled=True)
        self._last_draw = time.monotonic()
        return self._callback

    def _info(self, state) -> str:
        run = f"run {state.restart + 1}/{self.n_init} " if self.n_init > 1 else ""
        return f"{run}it {state.iteration} obj {state.objective:.6g}"

    def _run_ended(self, state) -> None:
        self.bar.update((state.restart + 1) * self.per_run - self.bar.count, self._info(state))

    def _callback(self, state):
        if self._last is not None and state.restart != self._last.restart:
            self._run_ended(self._last)
        self._last = state
        self._finals[state.restart] = state.objective
        now = time.monotonic()
        if now - self._last_draw >= PROGRESS_INTERVAL:
            position = state.restart * self.per_run + state.iteration + 1
            self.bar.update(position - self.bar.count, self._info(state))
            self._last_draw = now
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
