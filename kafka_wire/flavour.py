"""Which flavour of a module runs: its mypyc-compiled twin, or pure Python.

One rule for the records loops and the message codec: a compiled module is used when it was
built (its spec points at an extension, not a ``.py`` file), it loads, and ``KAFKA_WIRE_PURE`` is
unset. An uncompiled ``.py`` twin is never used: its source is written for mypyc and runs slower
than the pure flavour. See ``docs/internals/compiled.md``.
"""

from __future__ import annotations

import os
from importlib import import_module
from importlib.util import find_spec
from types import ModuleType


def pure_forced() -> bool:
    """``KAFKA_WIRE_PURE`` is set: compiled modules are ignored."""
    return bool(os.environ.get("KAFKA_WIRE_PURE"))


def is_compiled(name: str) -> bool:
    """Module ``name`` is a built extension and the pure flavour is not forced."""
    if pure_forced():
        return False
    try:
        spec = find_spec(name)
    except ImportError:
        return False
    return spec is not None and spec.origin is not None and not spec.origin.endswith(".py")


def compiled_module(name: str) -> ModuleType | None:
    """Module ``name`` when :func:`is_compiled` and it imports, else None (pure Python)."""
    if not is_compiled(name):
        return None
    try:
        return import_module(name)
    except ImportError:  # built for another interpreter, or librt missing: stay pure
        return None
