"""What a replica answers to an append and to a read (``PartitionReplica.append_as_leader`` and
``read``, :mod:`kafka_wire.broker.partition.replica`), before the API handlers shape them into
Produce and Fetch answers."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.broker.effects import FileRegion
from kafka_wire.broker.log.validation import RecordError
from kafka_wire.logformat.txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class ProduceOutcome:
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    #: The offset after the appended batch: acks=all waits for the high watermark to reach it.
    next_offset: int = -1
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
    #: A follower's log diverged: ``(epoch, end offset)`` to truncate to (Fetch v12+).
    diverging_epoch: tuple[int, int] | None = None
    #: read_committed: the aborted transactions overlapping the records (None: read_uncommitted).
    aborted: tuple[AbortedTxn, ...] | None = None
