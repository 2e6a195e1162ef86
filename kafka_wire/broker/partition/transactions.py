"""A partition replica's transactions: producer state kept with the log, markers, the last stable
offset (Kafka's ``UnifiedLog`` producer-state duties).

- **Replay.** Every batch with a producer id updates the producer state
  (:class:`~kafka_wire.broker.txn.producers.ProducerStates`): a data batch its sequences (and
  opens a transaction when transactional), a COMMIT or ABORT control batch ends the producer's
  transaction. An aborted transaction with data here gets an entry in the ``.txnindex`` of the
  segment holding its marker, with the last stable offset of that moment.
- **Snapshots.** When the log rolls, the state as of the new segment's base offset is written to
  ``<base>.snapshot`` (Kafka's ``takeSnapshot`` at roll), and at a clean shutdown as of the log
  end. At start-up the newest snapshot between the log start and the log end is loaded and only
  the batches after it are replayed (their aborted transactions' index entries are written again
  where a crash lost them); with no usable snapshot the whole log is replayed. Snapshots above a
  truncation point or below the log start are deleted.
- **Markers** (WriteTxnMarkers on the leader): checked against the producer state (an older
  producer epoch: INVALID_PRODUCER_EPOCH; an older coordinator epoch:
  TRANSACTION_COORDINATOR_FENCED), appended as a control batch, replayed.
- **Last stable offset:** the first unstable offset (the first offset of the earliest transaction
  still open, or ended with its marker above the high watermark), not below the log start, or
  the high watermark when that is lower or there is none.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.log.segment import segment_path
from kafka_wire.broker.txn.producers import (
    BATCHES_RETAINED,
    BatchMetadata,
    CompletedTxn,
    ProducerEntry,
    ProducerStates,
)
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.names import SNAPSHOT_SUFFIX, parse_segment_name
from kafka_wire.logformat.producer_snapshot import SnapshotEntry, decode_snapshot, encode_snapshot
from kafka_wire.logformat.txn_index import AbortedTxn
from kafka_wire.records import RecordBatch, read_batches
from kafka_wire.records.control import ControlRecordType, decode_control_key, decode_end_txn_marker

if TYPE_CHECKING:
    from kafka_wire.broker.partition.replica import PartitionReplica

#: Chunk size when the producer state is replayed from the log.
_SCAN_BYTES: Final = 1 << 20
#: The most snapshot files a bad directory may make the replica read before it gives up on them.
_MAX_SNAPSHOT_BYTES: Final = 64 << 20


def marker_of(batch: RecordBatch[bytes]) -> tuple[bool, int] | None:
    """(commit, coordinator epoch) of a COMMIT/ABORT control batch; None for any other batch
    (an empty control batch, another control type, or one that cannot be read)."""
    if not batch.is_control:
        return None
    try:
        record = next(iter(batch.records()), None)
        if record is None:
            return None
        key = decode_control_key(record.key)
        if key.type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            return None
        return key.type is ControlRecordType.COMMIT, decode_end_txn_marker(record.value).coordinator_epoch
    except DecodeError:
        return None


class ProducerLog:
    """The producer state's persistence and replay for one replica (see the module docstring)."""

    def __init__(self) -> None:
        #: Offsets of the snapshot files, ascending.
        self.snapshots: list[int] = []
        #: The active segment's base offset when last looked at (a change means the log rolled).
        self.seen_base = -1

    # -- replay ---------------------------------------------------------------------------------

    @staticmethod
    def replay(replica: PartitionReplica, batch: RecordBatch[bytes], *, index_aborts: bool = True) -> None:
        """Apply one stored batch to the producer state (a follower's append, a rebuild)."""
        producers = replica.producers
        if batch.producer_id < 0:
            return
        if batch.is_control:
            marker = marker_of(batch)
            if marker is None:
                return
            commit, coordinator_epoch = marker
            completed = producers.observe_marker(
                batch.producer_id,
                batch.producer_epoch,
                coordinator_epoch,
                batch.base_offset,
                batch.max_timestamp,
                commit=commit,
            )
            if completed is not None and completed.aborted and index_aborts:
                index_abort(replica.log, producers, completed)
            return
        producers.observe(
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
            transactional=batch.is_transactional,
        )

    def rebuild(self, replica: PartitionReplica) -> None:
        """The producer state at the log end: from the newest usable snapshot, then the batches
        after it (see the module docstring)."""
        log = replica.log
        replica.producers = ProducerStates()
        self.snapshots = _list_snapshots(log)
        start = log.log_start_offset
        for offset in reversed(self.snapshots):
            if not log.log_start_offset <= offset <= log.log_end_offset:
                continue
            entries = _read_snapshot(log, offset)
            if entries is not None:
                _load(replica.producers, entries)
                start = offset
                break
        self._replay_from(replica, start)
        self.seen_base = log.segments[-1].base_offset

    def _replay_from(self, replica: PartitionReplica, offset: int) -> None:
        log = replica.log
        end = log.log_end_offset
        while offset < end:
            result = log.read(offset, _SCAN_BYTES, max_offset=end, min_one_batch=True)
            data = log.read_bytes(result)
            if result.error_code or not data:
                break
            start = offset
            for batch in read_batches(data, verify_crc=False):
                if isinstance(batch, RecordBatch) and batch.next_offset > offset:
                    self.replay(replica, batch)
                offset = max(offset, batch.next_offset)
            if offset == start:  # nothing readable: do not spin
                break

    # -- snapshots -----------------------------------------------------------------------------

    def after_append(self, replica: PartitionReplica) -> None:
        """Called after every append, before its batches are replayed: when the log rolled (with
        this append, or at a maintenance since the last append), the state is still the one as of
        the new segment's base, and is written."""
        base = replica.log.segments[-1].base_offset
        if base == self.seen_base:
            return
        self.seen_base = base
        if base not in self.snapshots:
            self._write(replica.log, base, snapshot_entries(replica.producers))

    def take(self, replica: PartitionReplica) -> None:
        """A snapshot as of the log end (a clean shutdown)."""
        end = replica.log.log_end_offset
        if end not in self.snapshots:
            self._write(replica.log, end, snapshot_entries(replica.producers))

    def _write(self, log: PartitionLog, offset: int, entries: list[SnapshotEntry]) -> None:
        log.queue.write_small_file(
            segment_path(log.directory, offset, SNAPSHOT_SUFFIX), encode_snapshot(entries)
        )
        self.snapshots = sorted({*self.snapshots, offset})

    def prune(self, log: PartitionLog) -> None:
        """Delete the snapshots above the log end (a truncation) and below the log start."""
        keep = [o for o in self.snapshots if log.log_start_offset <= o <= log.log_end_offset]
        for offset in self.snapshots:
            if offset not in keep:
                log.queue.delete(segment_path(log.directory, offset, SNAPSHOT_SUFFIX))
        self.snapshots = keep


def index_abort(log: PartitionLog, producers: ProducerStates, completed: CompletedTxn) -> None:
    """Record an aborted transaction in the ``.txnindex`` of the segment holding its marker."""
    entry = AbortedTxn(
        completed.producer_id,
        completed.first_offset,
        completed.last_offset,
        producers.last_stable_offset_of(completed),
    )
    segments = log.segments
    holder = max(
        (s for s in segments if s.base_offset <= completed.last_offset),
        key=lambda s: s.base_offset,
        default=segments[-1],
    )
    holder.txn_index.append(entry)


def last_stable_offset(replica: PartitionReplica) -> int:
    first = replica.producers.first_unstable_offset()
    if first is None or replica.hooks.planted("lso-ignores-open-txn"):  # planted bug: no hold
        return replica.high_watermark
    return min(max(first, replica.log.log_start_offset), replica.high_watermark)


def snapshot_entries(producers: ProducerStates) -> list[SnapshotEntry]:
    out = []
    for producer_id, entry in producers.entries():
        last = entry.batches[-1] if entry.batches else None
        out.append(
            SnapshotEntry(
                producer_id=producer_id,
                epoch=entry.epoch,
                last_sequence=last.last_sequence if last is not None else -1,
                last_offset=last.last_offset if last is not None else -1,
                offset_delta=last.last_offset - last.first_offset if last is not None else 0,
                timestamp=entry.last_timestamp,
                coordinator_epoch=entry.coordinator_epoch,
                txn_first_offset=entry.txn_first_offset,
            )
        )
    return out


def _load(producers: ProducerStates, entries: list[SnapshotEntry]) -> None:
    for e in entries:
        batches: deque[BatchMetadata] = deque(maxlen=BATCHES_RETAINED)
        if e.last_offset >= 0:
            first_sequence = e.last_sequence - e.offset_delta
            if first_sequence < 0:  # the sequence wrapped inside the batch
                first_sequence += 2**31
            batches.append(
                BatchMetadata(
                    first_sequence,
                    e.last_sequence,
                    e.last_offset - e.offset_delta,
                    e.last_offset,
                    e.timestamp,
                )
            )
        producers.load(
            e.producer_id,
            ProducerEntry(
                epoch=e.epoch,
                batches=batches,
                coordinator_epoch=e.coordinator_epoch,
                txn_first_offset=e.txn_first_offset,
                last_timestamp=e.timestamp,
            ),
        )


def _list_snapshots(log: PartitionLog) -> list[int]:
    offsets = []
    for name in log.storage.list_dir(log.directory):
        parsed = parse_segment_name(name)
        if parsed is not None and parsed[1] == SNAPSHOT_SUFFIX:
            offsets.append(parsed[0])
    return sorted(offsets)


def _read_snapshot(log: PartitionLog, offset: int) -> list[SnapshotEntry] | None:
    path = segment_path(log.directory, offset, SNAPSHOT_SUFFIX)
    size = log.storage.size(path)
    if size is None or size > _MAX_SNAPSHOT_BYTES:
        return None
    try:
        return decode_snapshot(log.storage.read(path, 0, size))
    except DecodeError:
        return None  # a torn or foreign file: replay from further back
