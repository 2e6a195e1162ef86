"""A coordinator's internal topic (``__consumer_offsets`` for the group coordinator,
``__transaction_state`` for the transaction coordinator) between the broker and the coordinator:
the replay of a partition when this node becomes its leader (:class:`PartitionLoad`), the append
of each write, and its replication (:func:`replication_outcome`).

Replay never fails the start: a batch or record that cannot be read (a decode error, a key or
value of a version Kafka does not define, a record without a key) is logged at WARNING with its
partition and offset and skipped, and the rest loads. A write the log refuses is logged at
WARNING; its error code goes back to the coordinator (:meth:`GroupCoordinator.persisted`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Protocol

from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.work import WorkBudget
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.batch_header import BatchHeader, parse_header
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records import NewRecord, RecordBatch, build_batch, read_batches
from kafka_wire.records.constants import COMPRESSION_NAMES

if TYPE_CHECKING:
    from kafka_wire.broker.group import Persist
    from kafka_wire.broker.partition.replica import PartitionReplica

#: Skipped records logged one by one per partition; past that, one line gives the count.
MAX_SKIPPED_LOGGED: Final = 10


class Replayer(Protocol):
    """What a load feeds: each record of the partition, oldest first (``DecodeError`` when one
    cannot be read: it is logged and skipped); the records of a transactional batch (a
    transactional offset commit) with their producer, and the COMMIT / ABORT markers."""

    def replay(self, key: bytes, value: bytes | None) -> None: ...

    def replay_transactional(self, producer_id: int, key: bytes, value: bytes | None) -> None: ...

    def replay_marker(self, partition: int, producer_id: int, commit: bool) -> None: ...


class PartitionLoad:
    """The replay of one partition, a read of up to ``max_bytes`` per :meth:`step`, up to the log
    end (a coordinator that has just become the partition's leader: the new leader's log defines
    it)."""

    def __init__(
        self,
        replica: PartitionReplica,
        coordinator: Replayer,
        log: logging.Logger,
        topic: str = OFFSETS_TOPIC,
    ) -> None:
        self.replica = replica
        self._coordinator = coordinator
        self._log = log
        self._topic = topic
        self.offset = replica.log_start_offset
        self.skipped = 0
        self.done = False
        #: Bytes the last :meth:`step` read.
        self.last_read = 0

    @property
    def partition(self) -> int:
        return self.replica.partition

    def step(self, max_bytes: int) -> bool:
        """Replay the next batches (whole ones, at least one); True once the partition is loaded."""
        self.last_read = 0
        if self.done:
            return True
        replica = self.replica
        limit = replica.log_end_offset
        self.offset = max(self.offset, replica.log_start_offset)
        if self.offset >= limit:
            return self._finish()
        result = replica.log.read(self.offset, max_bytes, max_offset=limit, min_one_batch=True)
        data = b"" if result.error_code else replica.log.read_bytes(result)
        if not data:
            return self._finish()
        self.last_read = len(data)
        start = self.offset
        for header, batch in _batches(data):
            self.offset = max(self.offset, header.next_offset)
            try:
                batches = list(read_batches(batch))
                records = [(b, r) for b in batches for r in b]
            except DecodeError as exc:
                self._skip(header.base_offset, f"unreadable batch: {exc}")
                continue
            if header.is_control:
                from kafka_wire.broker.partition.transactions import marker_of  # loaded with the replica

                for control in batches:
                    marker = marker_of(control) if isinstance(control, RecordBatch) else None
                    if marker is not None and control.producer_id >= 0:
                        self._coordinator.replay_marker(self.partition, control.producer_id, marker[0])
                continue
            for owner, record in records:
                if record.key is None:
                    self._skip(record.offset, "a record without a key")
                    continue
                key, value = bytes(record.key), None if record.value is None else bytes(record.value)
                try:
                    if isinstance(owner, RecordBatch) and owner.is_transactional and owner.producer_id >= 0:
                        self._coordinator.replay_transactional(owner.producer_id, key, value)
                    else:
                        self._coordinator.replay(key, value)
                except DecodeError as exc:
                    self._skip(record.offset, str(exc))
        if self.offset == start:  # nothing readable: do not spin
            self._skip(self.offset, "unreadable data; the rest of the partition is not loaded")
            return self._finish()
        return False

    def _skip(self, offset: int, why: str) -> None:
        self.skipped += 1
        if self.skipped <= MAX_SKIPPED_LOGGED:
            self._log.warning(
                "%s-%d offset %d: skipped at load (%s)", self._topic, self.partition, offset, why
            )

    def _finish(self) -> bool:
        self.done = True
        if self.skipped > MAX_SKIPPED_LOGGED:
            self._log.warning(
                "%s-%d: %d records skipped at load in all", self._topic, self.partition, self.skipped
            )
        return True


#: Bytes one load step reads from a partition being loaded (whole batches; Kafka's
#: ``offsets.load.buffer.size`` default, 5 MiB).
LOAD_READ_BYTES: Final = 5 * 1024 * 1024


def step_loads(loads: dict[int, PartitionLoad], budget: WorkBudget) -> list[int]:
    """Step ``loads`` as far as the call's work budget allows (at least one step per call); the
    partitions whose load finished, removed from ``loads``."""
    finished: list[int] = []
    stepped = False
    for partition, load in list(loads.items()):
        while not stepped or not budget.exhausted:
            stepped = True
            done = load.step(LOAD_READ_BYTES)
            budget.spend(load.last_read)
            if done:
                del loads[partition]
                finished.append(partition)
                break
        if budget.exhausted:
            break
    return finished


@dataclass(frozen=True, slots=True)
class Appended:
    """The outcome of one group write's append."""

    #: The log's error code, 0 when the batch was appended.
    error_code: int
    #: The log end offset after the batch (-1 when refused): in a cluster the write counts once
    #: the partition's high watermark reaches it (:func:`replication_outcome`).
    end_offset: int = -1


def append(state: BrokerState, write: Persist, now_ms: int, log: logging.Logger) -> Appended:
    """Append one group write as one batch (compressed with ``offsets.topic.compression.codec``)."""
    codec = COMPRESSION_NAMES[state.config.offsets_topic_compression_codec]
    return append_records(
        state,
        OFFSETS_TOPIC,
        write.partition,
        write.records,
        codec,
        now_ms,
        log,
        f"group {write.group_id}",
        producer=(write.producer_id, write.producer_epoch),
    )


def append_records(
    state: BrokerState,
    topic_name: str,
    partition: int,
    records: list[tuple[bytes, bytes | None]],
    codec: str,
    now_ms: int,
    log: logging.Logger,
    whose: str,
    producer: tuple[int, int] = (-1, -1),
) -> Appended:
    """Append a coordinator's write to its internal topic as one batch (a transactional batch of
    ``producer``'s id and epoch when it has one: a transactional offset commit).

    The topic is the controller's to create (UNKNOWN_TOPIC_OR_PARTITION until it is), and the
    append is Kafka's acks=-1 one: refused with NOT_ENOUGH_REPLICAS while the ISR is smaller than
    the topic's ``min.insync.replicas``.
    """
    replica = state.replica(topic_name, partition)
    topic = state.topic_named(topic_name)
    if replica is None or topic is None:  # the coordinator places its keys by the topic's own partition count
        return _refused(
            topic_name, partition, whose, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such partition here", log
        )
    if len(replica.isr) < (min_isr := state.log_config(topic).min_insync_replicas):
        return _refused(
            topic_name,
            partition,
            whose,
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"the ISR {replica.isr} is below min.insync.replicas={min_isr}",
            log,
        )
    batch = [NewRecord(key, value, (), now_ms) for key, value in records]
    outcome = replica.append_as_leader(
        build_batch(batch, compression=codec, default_timestamp=now_ms), now_ms
    )
    state.touch(replica)
    if outcome.error_code:
        return _refused(topic_name, partition, whose, outcome.error_code, outcome.error_message, log)
    return Appended(ErrorCode.NONE, replica.log_end_offset)


def replication_outcome(
    state: BrokerState, partition: int, end_offset: int, topic_name: str = OFFSETS_TOPIC
) -> int | None:
    """Where a write appended up to ``end_offset`` stands (Kafka's acks=-1 completion): None while
    the high watermark is below it; then 0, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR has
    shrunk below ``min.insync.replicas``; NOT_LEADER_OR_FOLLOWER once this node no longer leads."""
    replica = state.replica(topic_name, partition)
    topic = state.topic_named(topic_name)
    if replica is None or topic is None or not replica.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if replica.high_watermark < end_offset:
        return None
    if len(replica.isr) < state.log_config(topic).min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE


def _refused(
    topic: str, partition: int, whose: str, code: int, why: str | None, log: logging.Logger
) -> Appended:
    log.warning(
        "%s-%d: the write of %s was refused (%s): %s", topic, partition, whose, _error_name(code), why
    )
    return Appended(code)


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
