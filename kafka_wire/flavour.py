"""Which flavour of a module runs: its mypyc-compiled twin, or pure Python.

One rule for the records loops and the message codec: a compiled module is used when it was
built (its spec points at an extension, not a ``.py`` file), it loads, and ``KAFKA_WIRE_PURE`` is
unset. An uncompiled ``.py`` twin is never used: its source is written for mypyc and runs slower
than the pure flavour. See ``docs/compiled.md``.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from importlib.util import find_spec, module_from_spec, spec_from_file_location
from pathlib import Path
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


def load(name: str) -> ModuleType:
    """Module ``name`` from one source that runs as Python and compiles: its extension when
    :func:`compiled_module` gives it, else its ``.py`` file (loaded explicitly when an extension
    beside it would shadow it, as under ``KAFKA_WIRE_PURE``)."""
    module = sys.modules.get(name) or compiled_module(name)
    if module is not None:
        return module
    spec = find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"no module named {name!r}", name=name)
    if spec.origin.endswith(".py"):
        return import_module(name)
    source = spec_from_file_location(name, Path(spec.origin).with_name(name.rpartition(".")[2] + ".py"))
    if source is None or source.loader is None:  # pragma: no cover - an extension without its source
        raise ImportError(f"no source for {name!r}", name=name)
    module = module_from_spec(source)
    sys.modules[name] = module
    try:
        source.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
