"""Shared helpers of the log tests: a log driven over MemoryStorage, batch builders, readers."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

from kafka_wire.broker.effects import StorageEffect
from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.broker.log.config import MIN_SEGMENT_BYTES
from kafka_wire.broker.storage import StorageReader
from kafka_wire.records import build_batch, read_batches
from kafka_wire.records.record import Record
from kafka_wire.testing.memory_storage import MemoryStorage

DIR = "t-0"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: Kafka 4.0's smallest ``segment.bytes`` (KIP-1030): tests that need several segments write values
#: in the hundreds of KiB so that a few batches fill one.
MIB: Final = MIN_SEGMENT_BYTES


def noise(size: int, seed: bytes = b"") -> bytes:
    """``size`` deterministic bytes no codec can shrink: compressed batches stay as large as plain ones."""
    return hashlib.shake_128(seed).digest(size)


class Driven:
    """A PartitionLog whose effects are applied to its storage after every call (as a driver does)."""

    def __init__(self, config: LogConfig | None = None, storage: Any = None, now_ms: int = 0) -> None:
        self.storage: Any = storage if storage is not None else MemoryStorage()
        self.config = config or LogConfig()
        self.now_ms = now_ms
        self.log = PartitionLog.open(DIR, self.config, self.storage, now_ms)
        self.effects: list[StorageEffect] = []
        self.apply()

    def apply(self) -> list[StorageEffect]:
        effects = self.log.take_effects()
        self.effects += effects
        self.storage.apply(effects)
        return effects

    def append(self, records: bytes, now_ms: int | None = None, **kw: Any) -> Any:
        if now_ms is not None:
            self.now_ms = now_ms
        result = self.log.append(records, self.now_ms, **kw)
        self.apply()
        return result

    def maintain(self, now_ms: int, **kw: Any) -> None:
        self.now_ms = now_ms
        self.log.maintain(now_ms, **kw)
        self.apply()

    def reopen(self, now_ms: int | None = None, config: LogConfig | None = None) -> PartitionLog:
        if now_ms is not None:
            self.now_ms = now_ms
        self.log = PartitionLog.open(DIR, config or self.config, self.storage, self.now_ms)
        self.apply()
        return self.log


def batch(
    n: int = 1,
    *,
    key: bytes | None = b"k",
    value_size: int = 10,
    ts: int = 1000,
    compression: str = "none",
    **kw: Any,
) -> bytes:
    """A v2 batch of ``n`` records (base offset 0, as a producer sends it)."""
    return build_batch(
        [(key if key is None else key + b"%d" % i, b"v" * value_size, (), ts + i) for i in range(n)],
        compression=compression,
        **kw,
    )


def all_records(log: PartitionLog, start: int | None = None) -> list[Record[bytes]]:
    """Every record from ``start`` (the log start) to the log end, read through the log."""
    offset = log.log_start_offset if start is None else start
    out: list[Record[bytes]] = []
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        assert result.error_code == 0
        data = log.read_bytes(result)
        if not data:
            break
        for b in read_batches(data):
            out.extend(r for r in b.records() if r.offset >= offset)
        offset = result.next_offset
    return out


def contents(log: PartitionLog) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in all_records(log)]


def segment_files(storage: StorageReader, directory: str = DIR) -> list[str]:
    return [n for n in storage.list_dir(directory) if n[:1].isdigit()]


def file_bytes(storage: MemoryStorage, name: str) -> bytes:
    return bytes(storage.files[f"{DIR}/{name}"])


def offsets(records: Sequence[Record[bytes]]) -> list[int]:
    return [r.offset for r in records]
