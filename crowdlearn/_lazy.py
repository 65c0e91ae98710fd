"""Names a package exports but imports only on first use (PEP 562).

``import crowdlearn`` reads this table and nothing else: a model, a simulator or the widgets
are imported when a program first asks for them (``crowdlearn.DawidSkene``, ``from crowdlearn
import symbolic``), so a script that needs only the labels never pays for SymPy, Matplotlib
or ipywidgets.
"""

from __future__ import annotations

import importlib

__all__ = ["attach"]


def attach(package: str, names: dict):
    """``(__getattr__, __dir__)`` for the package ``package``.

    Parameters
    ----------
    package : str
        The package's name (its ``__name__``).
    names : dict
        ``name -> module``: the attribute ``name`` of the package is the attribute ``name``
        of ``module``, or, when ``module`` is ``package + "." + name``, that submodule.

    Examples
    --------
    >>> getattr_, dir_ = attach("crowdlearn", {"metrics": "crowdlearn.metrics"})
    >>> getattr_("metrics").__name__
    'crowdlearn.metrics'
    """
    import sys

    def __getattr__(name):
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == f"{package}.{name}":
            value = importlib.import_module(module)
        else:
            value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # once loaded, an ordinary attribute
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
