"""Packages whose public names are imported on first use (PEP 562).

A package that re-exports the names of its submodules loads all of them when it is imported,
though most callers need one. Such a package keeps a map of where each name lives and lets
:func:`on_first_use` make its ``__getattr__`` and ``__dir__``: a name's submodule is imported
when the name is first asked for (``from isccd.results import DUPES_LIMIT`` loads the queries
alone), then the name is kept in the package like any other. ``tests/test_lazy_packages.py``
keeps each package's map, its typed imports and ``__all__`` equal.

Imports nothing of isccd. (:mod:`isccd.iscc` has the same two functions of its own: the
algorithms import nothing outside their package.)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def on_first_use(
    package: str, submodules: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``namespace`` (its
    ``globals()``) gets each name of ``submodules`` (submodule -> names) on first use."""
    home = {name: module for module, names in submodules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__
