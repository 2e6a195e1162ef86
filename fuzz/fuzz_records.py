"""Harness: records payloads (a Produce or Fetch ``records`` field, a segment's bytes).

The input is read as a records payload: batches of any magic (0, 1, 2) and any codec, each
batch's records decoded (decompressing the payload of a compressed batch or legacy wrapper). It
is read twice: checking CRCs (what a broker does), and with CRC checks off and zero-copy
records, so mutations behind a checksum still reach the record and decompression code.

The rule: every step gives a value or raises a ``DecodeError`` subclass. The round trip, where
it holds (a v2 batch with CreateTime and no delete horizon, or a legacy batch (v1: CreateTime)
whose offsets are consecutive and whose inner messages have the wrapper's magic; the builder accepts the values): the records rebuilt into a batch with the same
magic, codec and producer fields read back equal.

Memory: a compressed batch may inflate far beyond its input, up to the reader's
``max_decompressed_bytes``; the harness reads with that cap at :data:`MAX_DECOMPRESSED_BYTES`
and allows that much (times 8, for the records made from it) on top of the usual bound.

Run: ``python fuzz/fuzz_records.py [corpus dir] [libFuzzer flags]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import (
    MEMORY_SLACK_BYTES,
    Finding,
    MemorySampler,
    fuzz_main,
    instrumenting,
    structure_mutator,
)

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.records",)

with instrumenting(__name__ == "__main__", TARGETS):
    from kafka_wire.errors import DecodeError, EncodeError
    from kafka_wire.records import (
        LegacyBatch,
        ReadConfig,
        RecordBatch,
        RecordsReader,
        TimestampType,
        build_batch,
    )
    from kafka_wire.records.record import Record

#: The decompression cap the harness reads with (the library's default is 64 MiB).
MAX_DECOMPRESSED_BYTES: Final = 256 * 1024
_CHECKED = ReadConfig(max_decompressed_bytes=MAX_DECOMPRESSED_BYTES)
_STRICT_INNER_MAGIC = ReadConfig(max_decompressed_bytes=MAX_DECOMPRESSED_BYTES, strict_inner_magic=True)
_UNCHECKED = ReadConfig(max_decompressed_bytes=MAX_DECOMPRESSED_BYTES, verify_crc=False)
_memory = MemorySampler(slack=MEMORY_SLACK_BYTES + 8 * MAX_DECOMPRESSED_BYTES)


def _rebuilt(batch: RecordBatch[bytes] | LegacyBatch[bytes], records: list[Record[bytes]]) -> bytes | None:
    """The records built again into a batch like ``batch``, or None where no round trip holds."""
    if not records:
        return None
    items: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None]] = [
        (r.key, r.value, list(r.headers), r.timestamp) for r in records
    ]
    base = records[0].offset
    if isinstance(batch, RecordBatch):
        if batch.timestamp_type != TimestampType.CREATE_TIME or batch.has_delete_horizon:
            return None
        return build_batch(
            items,
            compression=batch.compression,
            base_offset=batch.base_offset,
            partition_leader_epoch=batch.partition_leader_epoch,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            offset_deltas=[r.offset - batch.base_offset for r in records],
            last_offset_delta=batch.last_offset_delta,
        )
    if batch.magic == 1 and batch.timestamp_type != TimestampType.CREATE_TIME:
        return None
    try:  # inner messages of another magic than their wrapper's (a consumer reads them) rebuild differently
        list(next(RecordsReader(bytes(batch.buffer), _STRICT_INNER_MAGIC)))
    except DecodeError:
        return None
    if batch.magic == 0:
        items = [(r.key, r.value, [], None) for r in records]  # magic 0 has no timestamps
    if [r.offset for r in records] != list(range(base, base + len(records))):
        return None
    return build_batch(items, magic=batch.magic, compression=batch.compression, base_offset=base)


def _round_trip(batch: RecordBatch[bytes] | LegacyBatch[bytes], records: list[Record[bytes]]) -> None:
    try:
        rebuilt = _rebuilt(batch, records)
    except EncodeError:
        return  # the builder refuses values the reader accepts (a negative timestamp delta, ...)
    if rebuilt is None:
        return
    again = [r for b in RecordsReader(rebuilt, _CHECKED) for r in b]
    if again != records:
        raise Finding(f"magic {batch.magic} {batch.compression} batch: records changed by a rebuild")


def _read(data: bytes, config: ReadConfig, zero_copy: bool) -> None:
    try:
        reader = (
            RecordsReader(data, config, zero_copy=zero_copy) if zero_copy else RecordsReader(data, config)
        )
        for batch in reader:
            _ = (batch.next_offset, batch.timestamp_type, batch.compression, batch.is_valid())
            try:
                records = list(batch)
            except DecodeError:
                continue
            if not zero_copy:
                _round_trip(batch, records)  # type: ignore[arg-type]  # zero_copy False: bytes records
    except DecodeError:
        return
    _ = reader.tail


def _check(data: bytes) -> None:
    _read(data, _CHECKED, False)
    _read(data, _UNCHECKED, True)


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input, structure_mutator("records"))


if __name__ == "__main__":  # pragma: no cover
    main()
