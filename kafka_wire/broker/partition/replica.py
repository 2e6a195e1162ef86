"""One partition's replica: its log, leader epoch, ISR, high watermark and producer state.

The broker is one node today, so every partition is led here and the ISR is this node alone; the
high watermark still follows Kafka's rule, and the role (``roles.Leadership``: leader, follower or
offline, with the leader epoch and its epoch cache) is a state machine of its own (the smallest log end offset across the ISR), so
followers can join without a redesign: they would report their log end offsets through
``record_follower_fetch`` and move the high watermark the same way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.effects import FileRegion
from kafka_wire.broker.log.log import AppendResult, PartitionLog, ReadResult
from kafka_wire.broker.log.validation import RecordError
from kafka_wire.broker.partition.roles import Leadership, ReplicaRole
from kafka_wire.broker.txn.producers import ProducerStates
from kafka_wire.errors import DecodeError
from kafka_wire.messages import ErrorCode
from kafka_wire.records import RecordBatch, read_batches, validate_batch

#: Chunk size when the producer state is rebuilt from the log at start-up.
_SCAN_BYTES: Final = 1 << 20
#: Where the magic byte sits in a batch or legacy message set.
_MAGIC_AT: Final = 16
READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1


@dataclass(frozen=True, slots=True)
class ProduceOutcome:
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    #: The records of a refused batch that caused the refusal (Produce v8+ ``record_errors``).
    record_errors: tuple[RecordError, ...] = ()
    #: Decoding the append did (see ``validation.ValidRecords.work_bytes``).
    work_bytes: int = 0


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    #: With ``zero_copy``: the stored regions (and not yet stored bytes) instead of ``records``.
    parts: tuple[FileRegion | bytes, ...] = ()
    size: int = 0


@dataclass(slots=True)
class PartitionReplica:
    topic: str
    partition: int
    topic_id: uuid.UUID
    log: PartitionLog
    node_id: int
    leadership: Leadership = field(init=False)
    producers: ProducerStates = field(default_factory=ProducerStates)
    high_watermark: int = 0
    #: Follower log end offsets by node id (empty while the cluster has one broker).
    follower_leos: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.leadership = Leadership(self.node_id)

    @property
    def leader_epoch(self) -> int:
        return self.leadership.epoch

    @property
    def is_leader(self) -> bool:
        return self.leadership.role is ReplicaRole.LEADER

    @property
    def replicas(self) -> list[int]:
        return [self.node_id, *sorted(self.follower_leos)]

    @property
    def isr(self) -> list[int]:
        return self.replicas

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        # No transactions are open on this broker (it has no transaction coordinator yet).
        return self.high_watermark

    def open(self) -> None:
        """Rebuild the producer state from the log's batch headers and set the high watermark."""
        offset, end = self.log.log_start_offset, self.log.log_end_offset
        while offset < end:
            result = self.log.read(offset, _SCAN_BYTES, max_offset=end, min_one_batch=True)
            data = self.log.read_bytes(result)
            if result.error_code or not data:
                break
            start = offset
            for batch in read_batches(data, verify_crc=False):
                if isinstance(batch, RecordBatch) and batch.producer_id >= 0:
                    self.producers.observe(
                        batch.producer_id,
                        batch.producer_epoch,
                        batch.base_sequence,
                        batch.last_sequence,
                        batch.base_offset,
                        batch.last_offset,
                        batch.max_timestamp,
                    )
                offset = max(offset, batch.next_offset)
            if offset == start:  # nothing readable: do not spin
                break
        self._advance_high_watermark()

    def _advance_high_watermark(self) -> None:
        new = min([self.log.log_end_offset, *self.follower_leos.values()])
        self.high_watermark = max(self.high_watermark, new, self.log.log_start_offset)

    def record_follower_fetch(self, node_id: int, log_end_offset: int) -> None:
        self.follower_leos[node_id] = log_end_offset
        self._advance_high_watermark()

    def append_as_leader(self, records: bytes, now_ms: int) -> ProduceOutcome:
        """Validate, de-duplicate and append one produce request's records for this partition."""
        if not self.is_leader:
            return ProduceOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        producer = None
        try:
            header = validate_batch(records, verify_crc=False)
        except DecodeError:
            if len(records) > _MAGIC_AT and records[_MAGIC_AT] < 2:
                return ProduceOutcome(
                    ErrorCode.INVALID_RECORD,
                    error_message="Produce v3 and later carry record batches of magic 2 only",
                )
            header = None  # garbage: the log refuses it with its own error
        if header is not None:
            if header.size_in_bytes != len(records):
                return ProduceOutcome(
                    ErrorCode.INVALID_RECORD,
                    error_message="a produce request must hold exactly one record batch per partition",
                )
            if header.producer_id >= 0:
                verdict = self.producers.check(
                    header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence
                )
                if verdict.error_code:
                    return ProduceOutcome(verdict.error_code, error_message=verdict.message)
                if verdict.duplicate is not None:
                    return ProduceOutcome(
                        ErrorCode.NONE,
                        base_offset=verdict.duplicate.first_offset,
                        log_start_offset=self.log.log_start_offset,
                    )
                producer = header
        result: AppendResult = self.log.append(records, now_ms, leader_epoch=self.leadership.epoch)
        if result.error_code:
            return ProduceOutcome(
                result.error_code,
                error_message=result.error_message,
                record_errors=result.record_errors,
                work_bytes=result.work_bytes,
            )
        if producer is not None:
            self.producers.observe(
                producer.producer_id,
                producer.producer_epoch,
                producer.base_sequence,
                producer.last_sequence,
                result.base_offset,
                result.last_offset,
                now_ms if result.log_append_time >= 0 else producer.max_timestamp,
            )
        self._advance_high_watermark()
        return ProduceOutcome(
            ErrorCode.NONE,
            base_offset=result.base_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=self.log.log_start_offset,
            work_bytes=result.work_bytes,
        )

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        isolation_level: int,
        min_one_batch: bool,
        zero_copy: bool = False,
    ) -> FetchOutcome:
        """Records from ``fetch_offset`` up to the high watermark (or last stable offset): their
        bytes, or with ``zero_copy`` the file regions holding them."""
        if not self.is_leader:
            return FetchOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        limit = self.last_stable_offset if isolation_level == READ_COMMITTED else self.high_watermark
        base = FetchOutcome(
            ErrorCode.NONE,
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log.log_start_offset,
        )
        if fetch_offset < self.log.log_start_offset or fetch_offset > self.log.log_end_offset:
            return FetchOutcome(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                high_watermark=base.high_watermark,
                last_stable_offset=base.last_stable_offset,
                log_start_offset=base.log_start_offset,
            )
        if fetch_offset >= limit or (max_bytes <= 0 and not min_one_batch):
            return base
        result: ReadResult = self.log.read(
            fetch_offset, max_bytes, max_offset=limit, min_one_batch=min_one_batch
        )
        if result.error_code:
            return FetchOutcome(
                result.error_code, base.high_watermark, base.last_stable_offset, base.log_start_offset
            )
        if zero_copy:
            return FetchOutcome(
                ErrorCode.NONE,
                base.high_watermark,
                base.last_stable_offset,
                base.log_start_offset,
                parts=result.parts,
                size=result.size,
            )
        records = self.log.read_bytes(result)
        return FetchOutcome(
            ErrorCode.NONE,
            base.high_watermark,
            base.last_stable_offset,
            base.log_start_offset,
            records,
            size=len(records),
        )

    def delete_records_before(self, offset: int) -> tuple[int, int]:
        """(error code, low watermark) for DeleteRecords; -1 means up to the high watermark."""
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        result = self.log.delete_records_before(target)
        if result.error_code:
            return result.error_code, -1
        self.producers.truncate_before(self.log.log_start_offset)
        return ErrorCode.NONE, self.log.log_start_offset
