"""Package exports that load their module on first use (PEP 562's module ``__getattr__``).

A package lists each exported name and the module that defines it; importing the package imports
none of them, so a program that needs one module of a package (``kafka-wire serve`` needs the
broker's config before the engine, and the server side of the protocol without the client side)
does not pay for the rest.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``module_of[name]`` imported, ``name`` taken from it."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
