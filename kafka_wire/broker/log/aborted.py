"""The aborted transactions a read_committed Fetch lists beside the batches it returns (Kafka's
``LocalLog.addAbortedTransactions``).

The upper bound of a read is found as Kafka finds it: the offset of the first offset-index entry
of the segment at or after the position where the read ended (the index is sparse, so it may lie
beyond the last batch returned), else the next segment's base offset, else the log end offset.
From the segment holding the fetch offset on, each segment's ``.txnindex`` adds the aborted
transactions that overlap ``[fetch offset, upper bound)``, until an entry's last stable offset
reaches the upper bound. Kafka's reads stop at a segment's end; a read here may go on into the
next segments, and then the bound is found in the segment where it ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.logformat.txn_index import AbortedTxn

if TYPE_CHECKING:
    from kafka_wire.broker.log.log import PartitionLog, ReadResult


def upper_bound_offset(log: PartitionLog, result: ReadResult) -> int:
    segments = log.segments
    at = next(i for i, s in enumerate(segments) if s.base_offset == result.end_segment)
    segment = segments[at]
    slot = segment.index.entries_before_position(log.storage, result.end_position)
    if slot < segment.index.entries:
        return segment.index.entry(log.storage, slot)[0]
    return segments[at + 1].base_offset if at + 1 < len(segments) else log.log_end_offset


def aborted_transactions(log: PartitionLog, fetch_offset: int, result: ReadResult) -> list[AbortedTxn]:
    """The aborted transactions to list for ``result``, a read from ``fetch_offset`` (none when it
    returned nothing)."""
    if result.end_segment < 0:
        return []
    upper = upper_bound_offset(log, result)
    found: list[AbortedTxn] = []
    segments = log.segments
    start = max((i for i, s in enumerate(segments) if s.base_offset <= fetch_offset), default=0)
    for segment in segments[start:]:
        txns, complete = segment.txn_index.collect(log.storage, fetch_offset, upper)
        found += txns
        if complete:
            break
    return found
