"""What log compaction does with transactions, by Kafka's rules (its cleaner's
``CleanedTransactionMetadata`` and batch retention):

* A pass never reaches an open transaction: it covers offsets below the last stable offset only
  (``PartitionLog.maintain``'s ``stable_offset``), so every transactional batch it reads is
  committed or aborted.
* The records of aborted transactions are never mapped and are removed. Which batches are
  aborted, the ``.txnindex`` entries of the whole log say (a producer's batches from an entry's
  first offset up to its marker).
* Committed transactional records are compacted like any other records.
* A transactional batch left without records is removed, unless it is the last data batch of a
  producer still active (the producer's state starts from it).
* A marker (control batch) stays while any batch of its transaction does (so that no batch is
  ever left without the marker that ends its transaction). In the first pass that finds none
  left, it gets a delete horizon (now + ``delete.retention.ms``, KIP-534, as a tombstone does);
  the first pass after the horizon removes it, and with an ABORT marker its ``.txnindex`` entry.
  A marker that is the last entry of a producer still active at its epoch stays (it carries the
  epoch that fences the producer's zombies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from kafka_wire.logformat.batch_header import BatchHeader
from kafka_wire.logformat.txn_index import AbortedTxn
from kafka_wire.records import RecordBatch


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """A producer the partition's producer state still holds."""

    #: The last offset of its last data batch at its current epoch (-1: none since the epoch).
    last_data_offset: int
    epoch: int


#: The partition's active producer of a producer id (None: not active, or no producer state).
ProducerLookup = Callable[[int], ActiveProducer | None]

MarkerVerdict = Literal["keep", "set-horizon", "drop"]


def no_producers(_producer_id: int) -> ActiveProducer | None:
    return None


class AbortedRanges:
    """The offsets of each producer's aborted transactions (first offset to marker)."""

    def __init__(self, entries: Iterable[AbortedTxn]) -> None:
        self._ranges: dict[int, list[tuple[int, int]]] = {}
        for entry in entries:
            self._ranges.setdefault(entry.producer_id, []).append((entry.first_offset, entry.last_offset))

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def holds(self, header: BatchHeader) -> bool:
        """Whether a transactional data batch belongs to an aborted transaction."""
        if not header.is_transactional or header.is_control or header.producer_id < 0:
            return False
        offset = header.base_offset
        return any(first <= offset <= last for first, last in self._ranges.get(header.producer_id, ()))


@dataclass(slots=True)
class TxnCleaning:
    """The transactional side of one pass, fed the batches it rewrites in offset order."""

    aborted: AbortedRanges
    producers: ProducerLookup = no_producers
    #: Batches kept so far of each producer's transaction that has not met its marker yet.
    _kept: dict[int, int] = field(default_factory=dict)
    #: Offsets of the markers this pass removes.
    dropped_markers: set[int] = field(default_factory=set)

    def keeps(self, batch: RecordBatch[bytes], records: int) -> bool:
        """Whether a transactional data batch left with ``records`` records stays (and counts
        against its marker's removal)."""
        producer_id = batch.producer_id
        if records == 0:
            active = self.producers(producer_id)
            if active is None or active.last_data_offset != batch.last_offset:
                return False
        self._kept[producer_id] = self._kept.get(producer_id, 0) + 1
        return True

    def marker(self, marker: RecordBatch[bytes], now_ms: int) -> MarkerVerdict:
        """What becomes of a marker (a transactional control batch)."""
        producer_id = marker.producer_id
        if self._kept.pop(producer_id, 0) > 0 or producer_id < 0:
            return "keep"
        active = self.producers(producer_id)
        if active is not None and active.last_data_offset < 0 and active.epoch == marker.producer_epoch:
            return "keep"  # the producer's last entry: its epoch fences zombies
        horizon_ms = marker.delete_horizon_ms
        if horizon_ms is None:
            return "set-horizon"
        if now_ms >= horizon_ms:
            self.dropped_markers.add(marker.base_offset)
            return "drop"
        return "keep"
