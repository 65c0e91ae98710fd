"""A minimal progress bar: an ``ipywidgets.IntProgress`` in a notebook, one text line elsewhere.

Used by long loops such as :func:`crowdlearn.features.sparse_experts.sparse_experts_path`. It is
off unless asked for (``progress=True``); nothing is printed or displayed otherwise.
"""

from __future__ import annotations

import sys


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
