"""``__consumer_offsets`` between the broker and its group coordinator: the replay at start-up and
the append of each group write.

Replay never fails the start: a batch or record that cannot be read (a decode error, a key or
value of a version Kafka does not define, a record without a key) is logged at WARNING with its
partition and offset and skipped, and the rest loads. A write the log refuses is logged at
WARNING; its error code goes back to the coordinator (:meth:`GroupCoordinator.persisted`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group import GroupCoordinator, Persist
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.state import BrokerState
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.batch_header import BatchHeader, parse_header
from kafka_wire.messages import ErrorCode
from kafka_wire.records import NewRecord, build_batch, read_batches
from kafka_wire.records.constants import COMPRESSION_NAMES

#: Bytes read per call while replaying a partition (whole batches; a larger batch comes whole).
REPLAY_READ_BYTES: Final = 1 << 20
#: Skipped records logged one by one per partition; past that, one line gives the count.
MAX_SKIPPED_LOGGED: Final = 10


def replay(state: BrokerState, coordinator: GroupCoordinator, log: logging.Logger) -> None:
    """Feed every record of ``__consumer_offsets`` to ``coordinator``, oldest first per partition."""
    topic = state.topic_named(OFFSETS_TOPIC)
    if topic is None:
        return
    for index in range(topic.partitions):
        replica = state.replica(OFFSETS_TOPIC, index)
        if replica is not None:
            _replay_partition(replica, coordinator, log)


def _replay_partition(replica: PartitionReplica, coordinator: GroupCoordinator, log: logging.Logger) -> None:
    skipped = 0

    def skip(offset: int, why: str) -> None:
        nonlocal skipped
        skipped += 1
        if skipped <= MAX_SKIPPED_LOGGED:
            log.warning(
                "%s-%d offset %d: skipped at load (%s)", OFFSETS_TOPIC, replica.partition, offset, why
            )

    offset = replica.log_start_offset
    while offset < replica.high_watermark:
        outcome = replica.read(offset, REPLAY_READ_BYTES, isolation_level=0, min_one_batch=True)
        if outcome.error_code or not outcome.records:
            break
        start = offset
        for header, data in _batches(outcome.records):
            offset = max(offset, header.next_offset)
            if header.is_control:
                continue
            try:
                records = [r for batch in read_batches(data) for r in batch]
            except DecodeError as exc:
                skip(header.base_offset, f"unreadable batch: {exc}")
                continue
            for record in records:
                if record.key is None:
                    skip(record.offset, "a record without a key")
                    continue
                try:
                    coordinator.replay(
                        bytes(record.key), None if record.value is None else bytes(record.value)
                    )
                except DecodeError as exc:
                    skip(record.offset, str(exc))
        if offset == start:  # nothing readable: do not spin
            skip(offset, "unreadable data; the rest of the partition is not loaded")
            break
    if skipped > MAX_SKIPPED_LOGGED:
        log.warning("%s-%d: %d records skipped at load in all", OFFSETS_TOPIC, replica.partition, skipped)


def append(state: BrokerState, effects: EffectSink, write: Persist, now_ms: int, log: logging.Logger) -> int:
    """Append one group write as one batch (compressed with ``offsets.topic.compression.codec``);
    the log's error code, 0 when it was appended (creating the topic emits to ``effects``; the
    batch itself waits in the log until the end of the call)."""
    state.offsets_topic(now_ms, effects)
    replica = state.replica(OFFSETS_TOPIC, write.partition)
    if replica is None:  # the coordinator places groups by the topic's own partition count
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    records = [NewRecord(key, value, (), now_ms) for key, value in write.records]
    codec = COMPRESSION_NAMES[state.config.offsets_topic_compression_codec]
    outcome = replica.append_as_leader(
        build_batch(records, compression=codec, default_timestamp=now_ms), now_ms
    )
    state.touch(replica)
    if outcome.error_code:
        log.warning(
            "%s-%d: the write of group %s was refused (%s): %s",
            OFFSETS_TOPIC,
            write.partition,
            write.group_id,
            _error_name(outcome.error_code),
            outcome.error_message,
        )
    return outcome.error_code


def _batches(data: bytes) -> Iterator[tuple[BatchHeader, bytes]]:
    """Each whole batch of ``data`` with its header (the header alone names the next offset, so a
    batch whose body cannot be decoded can be skipped)."""
    pos = 0
    while pos < len(data):
        try:
            header = parse_header(data, pos, pos)
        except DecodeError:
            return
        if header is None or header.end > len(data):
            return
        yield header, data[pos : header.end]
        pos = header.end


def _error_name(code: int) -> str:
    known = ErrorCode.lookup(code)
    return known.name if isinstance(known, ErrorCode) else str(code)
