"""Small per-partition state files: the log start offset and the cleaner's first dirty offset.

Kafka keeps these as checkpoint files per log directory (``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint``); here each partition directory holds its own one-line text files,
``log-start-offset`` and ``cleaner-offset``, holding a decimal offset and a newline. They are
replaced atomically (write ``<name>.tmp``, fsync, rename). A missing or unreadable file reads as
None.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.log.files import EffectQueue
from kafka_wire.broker.storage import StorageReader

LOG_START_OFFSET_FILE: Final = "log-start-offset"
CLEANER_OFFSET_FILE: Final = "cleaner-offset"
STATE_FILES: Final = (LOG_START_OFFSET_FILE, CLEANER_OFFSET_FILE)
_MAX_BYTES: Final = 32


def read_offset(storage: StorageReader, path: str) -> int | None:
    size = storage.size(path)
    if size is None or size > _MAX_BYTES:
        return None
    text = storage.read(path, 0, size).strip()
    if not text.isdigit() or len(text) > 19:
        return None
    return int(text)


def write_offset(queue: EffectQueue, path: str, offset: int) -> None:
    queue.write_small_file(path, f"{offset}\n".encode("ascii"))
