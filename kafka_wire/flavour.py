"""Which flavour of a module runs: its mypyc-compiled twin, or pure Python.

One rule for the records loops and the message codec: a compiled module is used when it was
built (its spec points at an extension, not a ``.py`` file), it loads, and ``KAFKA_WIRE_PURE`` is
unset. An uncompiled ``.py`` twin is never used: its source is written for mypyc and runs slower
than the pure flavour. A module whose one source both runs and compiles (the records loops) is
loaded from that source when its extension is not to be used (:func:`source_module`). See
``docs/internals/compiled.md``. The module loader of the core, too, for a third-party extension
loaded without its package's ``__init__`` (:func:`extension_alone`, ``crc32c``'s).
"""

from __future__ import annotations

import os
from importlib import import_module
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
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


def source_module(name: str) -> ModuleType:
    """Module ``name`` run from its ``.py`` source, even when its compiled extension is built.

    For a module whose one source is also what mypyc compiles: Python's import system prefers
    the extension, so with it built the source is loaded explicitly, as a module of its own
    that is not entered in ``sys.modules`` (one per name: later calls return the same module).
    Without an extension this is the ordinary import.
    """
    if not _has_extension(name):
        return import_module(name)
    if name not in _SOURCE_MODULES:
        package, _, leaf = name.rpartition(".")
        path = Path(import_module(package).__file__ or "").with_name(f"{leaf}.py")
        spec = spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no Python source for {name} at {path}", name=name)
        module = module_from_spec(spec)
        spec.loader.exec_module(module)
        _SOURCE_MODULES[name] = module
    return _SOURCE_MODULES[name]


_SOURCE_MODULES: dict[str, ModuleType] = {}


def _has_extension(name: str) -> bool:
    """Module ``name`` resolves to a built extension (whatever ``KAFKA_WIRE_PURE`` says)."""
    try:
        spec = find_spec(name)
    except ImportError:
        return False
    return spec is not None and spec.origin is not None and not spec.origin.endswith(".py")


def extension_alone(package: str, leaf: str) -> ModuleType | None:
    """The extension module ``package.leaf`` of a third-party package, loaded from its file
    without running the package's ``__init__`` (nor entering ``sys.modules``), or None when the
    package has no such file. For a package whose ``__init__`` costs more than the extension it
    exposes (``crc32c`` reads its distribution metadata)."""
    spec = find_spec(package)  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    name = f"{package}.{leaf}"
    for folder in spec.submodule_search_locations:
        for suffix in EXTENSION_SUFFIXES:
            path = Path(folder, f"{leaf}{suffix}")
            if not path.is_file():
                continue
            loader = ExtensionFileLoader(name, str(path))
            found = spec_from_file_location(name, path, loader=loader)
            if found is None:
                return None
            module = module_from_spec(found)
            loader.exec_module(module)
            return module
    return None
