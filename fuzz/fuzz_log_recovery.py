"""Harness: a partition directory's files from an untrusted disk, then log recovery.

The input is the content of up to ten files of one partition directory in MemoryStorage: two
segments (``.log``, ``.index``, ``.timeindex``; the second at a base offset the input picks, its
log possibly left as a ``.log.swap`` of an interrupted compaction), a ``.cleaned`` leftover and
the ``log-start-offset`` and ``cleaner-offset`` files. Layout (libFuzzer's FuzzedDataProvider:
integers from the end, bytes from the front): a 16-bit mask of the files present, the second
segment's base offset, then per present file its length; the contents follow one another from
the front. :func:`pack` builds an input from files.

The rule: :meth:`PartitionLog.open` recovers the directory or raises a ``DecodeError``
subclass. After a recovery the log is usable: reads from the log start offset up return whole
batches, with valid CRCs in the last segment (closed segments are checked at their tail only,
as Kafka checks them after a clean shutdown); a new batch appends at the log end offset and a
consumer reading on from where it stopped gets it; and
opening the directory again (the recovery's effects applied) gives the same offsets and
segments (recovery is idempotent).

Run: ``python fuzz/fuzz_log_recovery.py [corpus dir] [libFuzzer flags]``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import atheris  # type: ignore[import-untyped]  # ships no annotations

from fuzz.common import Finding, MemorySampler, fuzz_main, instrumenting

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.broker.log", "kafka_wire.logformat")

with instrumenting(__name__ == "__main__", TARGETS):
    from kafka_wire.broker.log import LogConfig, PartitionLog
    from kafka_wire.errors import DecodeError
    from kafka_wire.messages import ErrorCode
    from kafka_wire.records import RecordsReader, build_batch
    from kafka_wire.testing.memory_storage import MemoryStorage

DIR: Final = "t-0"
NOW_MS: Final = 1_700_000_000_000
#: File names relative to DIR; ``{base}`` is the second segment's base offset (20 digits).
FILES: Final = (
    "00000000000000000000.log",
    "00000000000000000000.index",
    "00000000000000000000.timeindex",
    "{base}.log",
    "{base}.index",
    "{base}.timeindex",
    "{base}.log.swap",
    "00000000000000000000.log.cleaned",
    "log-start-offset",
    "cleaner-offset",
)
MAX_FILE_BYTES: Final = 0xFFFF
MAX_BASE: Final = 0xFFFF
_CONFIG: Final = LogConfig()
_memory = MemorySampler()


def file_names(base: int) -> list[str]:
    return [name.format(base=f"{base:020d}") for name in FILES]


def unpack(data: bytes) -> dict[str, bytes]:
    """The files an input stands for (name relative to the partition directory -> content)."""
    fdp = atheris.FuzzedDataProvider(data)
    mask = fdp.ConsumeIntInRange(0, 0xFFFF)
    base = fdp.ConsumeIntInRange(1, MAX_BASE)
    files: dict[str, bytes] = {}
    for bit, name in enumerate(file_names(base)):
        if mask >> bit & 1:
            files[name] = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, MAX_FILE_BYTES))
    return files


def _int16(value: int) -> bytes:
    """A 16-bit value as FuzzedDataProvider reads it from the end (high byte last)."""
    return bytes([value & 0xFF, value >> 8])


def pack(files: Mapping[str, bytes], base: int = 1) -> bytes:
    """The input whose :func:`unpack` gives ``files`` (names from :func:`file_names` of ``base``)."""
    names = file_names(base)
    unknown = set(files) - set(names)
    if unknown or not 1 <= base <= MAX_BASE or any(len(c) > MAX_FILE_BYTES for c in files.values()):
        raise ValueError(f"cannot pack {sorted(unknown) or 'these files'} with base {base}")
    mask = sum(1 << bit for bit, name in enumerate(names) if name in files)
    consumed = [mask, base - 1] + [len(files[name]) for name in names if name in files]
    tail = b"".join(_int16(v) for v in reversed(consumed))
    return b"".join(files[name] for name in names if name in files) + tail


def _state(log: PartitionLog) -> tuple[object, ...]:
    return (
        log.log_start_offset,
        log.log_end_offset,
        [(s.base_offset, s.next_offset) for s in log.segments],
    )


def _open(storage: MemoryStorage) -> PartitionLog:
    log = PartitionLog.open(DIR, _CONFIG, storage, NOW_MS)
    storage.apply(log.take_effects())
    return log


def read_from(log: PartitionLog, offset: int) -> tuple[list[tuple[int, bytes | None, bytes | None]], int]:
    """Every record from ``offset`` up as (offset, key, value), read as a consumer reads, and the
    offset where reading stopped (the log end offset, or where no batch follows: a gap that
    recovery or compaction left is normal, and a consumer waits there for new batches).

    Reads must return whole batches; those of the last segment (the one recovery checks batch by
    batch, as Kafka does after an unclean shutdown) must have valid CRCs."""
    checked_from = log.segments[-1].base_offset
    records: list[tuple[int, bytes | None, bytes | None]] = []
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        if result.error_code != ErrorCode.NONE:
            raise Finding(f"reading the recovered log at {offset}: error {result.error_code}")
        if not result.parts:
            break
        if result.next_offset <= offset:
            raise Finding(f"a read at {offset} returned batches but no progress")
        reader = RecordsReader(log.read_bytes(result), verify_crc=False)
        try:
            for batch in reader:
                if batch.base_offset >= checked_from and not batch.is_valid():
                    raise Finding(f"the batch at {batch.base_offset} of the recovered segment has a bad CRC")
                records += [(r.offset, r.key, r.value) for r in batch]
        except DecodeError:
            if offset >= checked_from:
                raise
        if reader.truncated_tail:
            raise Finding(f"a read at {offset} ended inside a batch after recovery")
        offset = result.next_offset
    return records, offset


def check_usable(log: PartitionLog, storage: MemoryStorage) -> None:
    """Reads work, and a batch appended at the log end offset is what a consumer reads next."""
    _, stopped = read_from(log, log.log_start_offset)
    end = log.log_end_offset
    appended = log.append(build_batch([(b"k", b"v", [], NOW_MS)]), NOW_MS)
    storage.apply(log.take_effects())
    if appended.error_code != ErrorCode.NONE or appended.base_offset != end:
        raise Finding(
            f"append after recovery: error {appended.error_code} at {appended.base_offset}, end {end}"
        )
    records, _ = read_from(log, stopped)
    if records[-1:] != [(end, b"k", b"v")] or any(offset >= end for offset, _, _ in records[:-1]):
        raise Finding(f"reading on from {stopped} after an append at {end} gives {records[-3:]}")


def run(files: Mapping[str, bytes]) -> PartitionLog | None:
    storage = MemoryStorage()
    storage.dirs.add(DIR)
    for name, content in files.items():
        storage.files[f"{DIR}/{name}"] = bytearray(content)
    try:
        log = _open(storage)
    except DecodeError:
        return None
    recovered = _state(log)
    again = _open(storage)
    if _state(again) != recovered:
        raise Finding(f"recovery is not idempotent: {recovered} then {_state(again)}")
    check_usable(again, storage)
    return again


def _check(data: bytes) -> None:
    run(unpack(data))


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input)


if __name__ == "__main__":  # pragma: no cover
    main()
