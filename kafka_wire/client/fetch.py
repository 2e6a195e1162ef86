"""Reading one partition's offset range with Fetch, as Kafka's consumer returns it.

``read_committed`` fetches with isolation level 1 (the broker stops at the last stable offset and
lists the aborted transactions) and skips a transactional batch of a producer from its aborted
transaction's first offset up to the ABORT marker; control batches are never returned. A range is
read as ``[start, end)``, so a retried read returns exactly it.
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator, Iterable
from typing import Final, cast

from kafka_wire.client.cluster import FETCH_VERSION, LEADERSHIP_ERRORS, Cluster
from kafka_wire.client.offsets import list_offsets
from kafka_wire.client.types import (
    EARLIEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    DataLossError,
    KafkaCallError,
    TopicPartition,
)
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
)
from kafka_wire.records import ControlRecordType, Record, decode_control_key, read_batches

DEFAULT_PARTITION_MAX_BYTES: Final = 8 * 1024 * 1024
"""Bytes per Fetch (Kafka's consumer: 1 MiB per partition; one partition per read here)."""
FETCH_MAX_WAIT_MS: Final = 500
"""How long the broker may hold a Fetch that has no data yet (Kafka's ``fetch.max.wait.ms``)."""


class AbortedFilter:
    """Kafka consumer's rule for one fetch response's aborted transactions."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """``aborted``: ``(producer id, first offset)`` of each aborted transaction."""
        self._heap = [(first, pid) for pid, first in aborted]
        heapq.heapify(self._heap)
        self._open: set[int] = set()

    def skip(self, producer_id: int, last_offset: int, is_control: bool, abort_marker: bool) -> bool:
        """Whether the batch is left out (a control batch always is)."""
        while self._heap and self._heap[0][0] <= last_offset:
            self._open.add(heapq.heappop(self._heap)[1])
        if is_control:
            if abort_marker:
                self._open.discard(producer_id)
            return True
        return producer_id in self._open


async def fetch_range(
    cluster: Cluster,
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
    fail_on_data_loss: bool = True,
) -> AsyncIterator[tuple[int, list[Record[bytes]]]]:
    """The records of ``[start, end)`` as ``(timestamp type, records)`` per batch. Offsets of the
    range that retention or DeleteRecords removed raise :class:`DataLossError`, or are skipped
    when ``fail_on_data_loss`` is false; a range that the log does not reach yet is waited for."""
    offset = start
    await cluster.refresh([tp.topic])
    while offset < end:
        found = await cluster.leader_or_wait(tp)
        if found is None:
            continue
        address, client = found
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=FETCH_MAX_WAIT_MS,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=READ_COMMITTED if read_committed else READ_UNCOMMITTED,
            topics=[
                FetchRequestTopic(
                    topic=tp.topic,
                    partitions=[
                        FetchRequestPartition(partition=tp.partition, fetch_offset=offset, partition_max_bytes=max_bytes)
                    ],
                )
            ],
        )
        try:
            version = cluster.version(client, ApiKey.FETCH, FETCH_VERSION)
            response = cast(FetchResponse, (await client.request(request, version)).body)
        except (TimeoutError, ConnectionError, OSError) as e:
            await cluster.drop(address)
            await cluster.retry_wait(f"Fetch {tp} from {address}: {e}")
            continue
        data = [p for t in response.responses for p in t.partitions if p.partition_index == tp.partition]
        if not data or data[0].error_code in LEADERSHIP_ERRORS:
            await cluster.retry_wait(f"Fetch {tp}: error {data[0].error_code if data else 'no partition'}")
            continue
        part = data[0]
        if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            earliest = (await list_offsets(cluster, {tp: EARLIEST})).get(tp)
            if earliest is None or earliest <= offset:
                raise KafkaCallError(f"Fetch {tp}: offset {offset} is past the end of the log")
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp}: offsets {offset}..{earliest - 1} are no longer in the log "
                    "(set failOnDataLoss=false to skip them)"
                )
            offset = earliest
            continue
        if part.error_code != ErrorCode.NONE:
            raise KafkaCallError(f"Fetch {tp} at offset {offset}: error {part.error_code}")
        aborted = AbortedFilter(
            (a.producer_id, a.first_offset) for a in (part.aborted_transactions or ()) if read_committed
        )
        progressed = False
        for batch in read_batches(part.records or b""):
            next_offset = batch.next_offset
            if next_offset <= offset:
                continue
            if batch.base_offset >= end:
                offset = end
                break
            if not progressed:
                progressed = True
                cluster.progressed()
            offset = next_offset
            if batch.magic == 2 and (batch.is_control or (read_committed and batch.is_transactional)):
                abort = batch.is_control and any(
                    decode_control_key(r.key).type == ControlRecordType.ABORT for r in batch.records()
                )
                if aborted.skip(batch.producer_id, batch.last_offset, batch.is_control, abort):
                    continue
            records = [r for r in batch.records() if start <= r.offset < end]
            if records:
                yield int(batch.timestamp_type), records
        if not progressed and offset < end:
            stable = part.last_stable_offset if read_committed and part.last_stable_offset >= 0 else part.high_watermark
            if stable > offset:  # nothing left below the end: removed (compaction, retention)
                return
            await cluster.retry_wait(f"Fetch {tp}: waiting for offsets {offset}..{end} (log ends at {stable})")
