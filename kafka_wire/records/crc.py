"""Checksums of record data: CRC-32C for RecordBatch v2, CRC-32 (IEEE) for legacy messages.

The ``crc32c`` package's extension module loads on the first CRC-32C, and on its own: the
package's ``__init__`` reads its distribution metadata (``importlib.metadata``, which brings
``email``, ``zipfile`` and more), 30-120 ms of CPU that a broker start (whose one-voter quorum
writes its first batch at once) need not pay. When the extension cannot be loaded apart (another
layout of the package), the package is imported.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
from importlib.util import find_spec, module_from_spec, spec_from_file_location
from pathlib import Path

from kafka_wire.records.record import BufferLike

_Crc32c = Callable[[BufferLike, int], int]
#: ``crc32c.crc32c`` once loaded.
_impl: _Crc32c | None = None


def _extension() -> _Crc32c | None:
    """``crc32c._crc32c.crc32c`` loaded from its file without the package's ``__init__``, or None."""
    package = find_spec("crc32c")  # finds the package without running it
    if package is None or not package.submodule_search_locations:
        return None
    for folder in package.submodule_search_locations:
        for suffix in EXTENSION_SUFFIXES:
            path = Path(folder, f"_crc32c{suffix}")
            if not path.is_file():
                continue
            loader = ExtensionFileLoader("crc32c._crc32c", str(path))
            spec = spec_from_file_location("crc32c._crc32c", path, loader=loader)
            if spec is None:
                return None
            module = module_from_spec(spec)
            loader.exec_module(module)
            found: _Crc32c = module.crc32c
            return found
    return None


def _load() -> _Crc32c:
    global _impl
    try:
        _impl = _extension()
    except ImportError:
        _impl = None
    if _impl is None:
        import crc32c as _crc32c

        _impl = _crc32c.crc32c
    return _impl


def crc32c(data: BufferLike) -> int:
    """CRC-32C (Castagnoli) as Kafka's ``Crc32C``; ``data`` may be any contiguous buffer."""
    return (_impl or _load())(data, 0)


def crc32c_update(data: BufferLike, crc: int = 0) -> int:
    """CRC-32C of ``data`` continuing from the CRC-32C ``crc`` of the bytes before it."""
    return (_impl or _load())(data, crc)


def crc32(data: BufferLike) -> int:
    """CRC-32 (IEEE, ``java.util.zip.CRC32``) of a legacy message body."""
    return zlib.crc32(data)
