"""Reading and writing the per-partition offset files through storage.

The files (``log-start-offset``, ``cleaner-offset``: a decimal offset and a newline) are
described in :mod:`kafka_wire.logformat.checkpoints`. They are replaced atomically (write
``<name>.tmp``, fsync, rename). A missing or unreadable file reads as None.
"""

from __future__ import annotations

from kafka_wire.broker.log.files import EffectQueue
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.checkpoints import MAX_OFFSET_FILE_BYTES, format_offset_file, parse_offset_file


def read_offset(storage: StorageReader, path: str) -> int | None:
    size = storage.size(path)
    if size is None or size > MAX_OFFSET_FILE_BYTES:
        return None
    return parse_offset_file(storage.read(path, 0, size))


def write_offset(queue: EffectQueue, path: str, offset: int) -> None:
    queue.write_small_file(path, format_offset_file(offset))
