"""Writing partition directories in Kafka's on-disk format for the tests (no broker involved)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from kafka_wire.records import read_batches


def write_partition(
    data_dir: Path, topic: str, partition: int, segments: Sequence[Sequence[bytes]], *, index_every: int = 1
) -> Path:
    """One ``topic-partition`` folder whose segments hold the given batches, each segment's base
    offset being its first batch's, with a ``.index`` entry (last offset, position) every
    ``index_every`` batches, as Kafka's ``LogSegment.append`` writes them."""
    directory = data_dir / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=True)
    for batches in segments:
        base = next(iter(read_batches(batches[0]))).base_offset
        log = bytearray()
        index = bytearray()
        for n, raw in enumerate(batches):
            batch = next(iter(read_batches(raw)))
            last = batch.last_offset if batch.magic == 2 else batch.next_offset - 1
            if n % index_every == 0 and n:
                index += struct.pack(">ii", last - base, len(log))
            log += raw
        (directory / f"{base:020d}.log").write_bytes(bytes(log))
        (directory / f"{base:020d}.index").write_bytes(bytes(index) + bytes(80))  # preallocated zeros
        (directory / f"{base:020d}.timeindex").write_bytes(b"")
    return directory
