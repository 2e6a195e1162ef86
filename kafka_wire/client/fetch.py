"""Reading one partition's offset range with Fetch, as Kafka's consumer returns it.

``read_committed`` fetches with isolation level 1 (the broker stops at the last stable offset and
lists the aborted transactions) and skips a transactional batch of a producer from its aborted
transaction's first offset up to the ABORT marker; control batches are never returned. A range is
read as ``[start, end)``, so a retried read returns exactly it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Final

from kafka_wire.client.cluster import FETCH_VERSION, LEADERSHIP_ERRORS
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
    FetchResponsePartitionData,
)
from kafka_wire.records import Record, read_batches
from kafka_wire.records.aborted import AbortedFilter
from kafka_wire.records.reader import Batch

if TYPE_CHECKING:
    from kafka_wire.adapters.cluster import Cluster

DEFAULT_PARTITION_MAX_BYTES: Final = 8 * 1024 * 1024
"""Bytes per Fetch (Kafka's consumer: 1 MiB per partition; one partition per read here)."""
FETCH_MAX_WAIT_MS: Final = 500
"""How long the broker may hold a Fetch that has no data yet (Kafka's ``fetch.max.wait.ms``)."""


class RangeRead:
    """Where a read of one partition's ``[start, end)`` stands, and what each Fetch response
    gives it: no I/O, no clock. :func:`fetch_range` drives it over a :class:`Cluster`.

    Per response: :meth:`partition` finds the partition's data; when its error code is NONE,
    :meth:`take` yields the records inside the range batch by batch (advancing :attr:`offset`,
    setting :attr:`progressed`), then :meth:`ended` says whether the rest of the range is gone
    from the log (compaction, retention) rather than not written yet.
    """

    __slots__ = ("end", "max_bytes", "offset", "progressed", "read_committed", "start", "tp")

    def __init__(
        self,
        tp: TopicPartition,
        start: int,
        end: int,
        *,
        read_committed: bool = False,
        max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
    ) -> None:
        self.tp = tp
        self.start = start
        self.end = end
        self.read_committed = read_committed
        self.max_bytes = max_bytes
        self.offset = start
        """The next offset to fetch."""
        self.progressed = False
        """Whether the last :meth:`take` moved :attr:`offset`."""

    @property
    def done(self) -> bool:
        return self.offset >= self.end

    def request(self, leader_epoch: int = -1) -> FetchRequest:
        """The Fetch of the rest of the range, from :attr:`offset`, to the leader of
        ``leader_epoch`` (-1: any; a broker that leads another epoch answers FENCED_LEADER_EPOCH
        or UNKNOWN_LEADER_EPOCH, as to Kafka's consumer)."""
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=FETCH_MAX_WAIT_MS,
            min_bytes=1,
            max_bytes=self.max_bytes,
            isolation_level=READ_COMMITTED if self.read_committed else READ_UNCOMMITTED,
            topics=[
                FetchRequestTopic(
                    topic=self.tp.topic,
                    partitions=[
                        FetchRequestPartition(
                            partition=self.tp.partition,
                            current_leader_epoch=leader_epoch,
                            fetch_offset=self.offset,
                            partition_max_bytes=self.max_bytes,
                        )
                    ],
                )
            ],
        )

    def partition(self, response: FetchResponse) -> FetchResponsePartitionData | None:
        """This partition's data in ``response``; None when the broker left it out."""
        for topic in response.responses:
            for part in topic.partitions:
                if part.partition_index == self.tp.partition:
                    return part
        return None

    def take(self, part: FetchResponsePartitionData) -> Iterator[tuple[int, list[Record[bytes]]]]:
        """The records of the range in ``part`` as ``(timestamp type, records)`` per batch,
        decoded one batch at a time, with Kafka consumer's rules (see the module docstring)."""
        for batch in self.take_batches(part):
            records = [r for r in batch.records() if self.start <= r.offset < self.end]
            if records:
                yield int(batch.timestamp_type), records

    def take_batches(self, part: FetchResponsePartitionData) -> Iterator[Batch[bytes]]:
        """The batches of ``part`` that hold records of the range, with Kafka consumer's rules;
        a batch that straddles an end of the range is yielded whole (its records are not decoded here)."""
        self.progressed = False
        aborted = AbortedFilter(
            (a.producer_id, a.first_offset) for a in (part.aborted_transactions or ()) if self.read_committed
        )
        for batch in read_batches(part.records or b""):
            next_offset = batch.next_offset
            if next_offset <= self.offset:
                continue
            if batch.base_offset >= self.end:
                self.offset = self.end
                return
            self.progressed = True
            self.offset = next_offset
            if batch.magic == 2 and batch.is_control:
                aborted.skips(batch)
                continue
            if self.read_committed and aborted.skips(batch):
                continue
            yield batch

    def stable_end(self, part: FetchResponsePartitionData) -> int:
        """Where the log readable by this read ends: the last stable offset with read_committed,
        else the high watermark."""
        if self.read_committed and part.last_stable_offset >= 0:
            return part.last_stable_offset
        return part.high_watermark

    def ended(self, part: FetchResponsePartitionData) -> bool:
        """After a :meth:`take` that did not progress: whether the log already goes past
        :attr:`offset`, so the rest of the range was removed and the read is over."""
        return self.stable_end(part) > self.offset


async def fetch_batches(
    cluster: Cluster,
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
    fail_on_data_loss: bool = True,
) -> AsyncIterator[Batch[bytes]]:
    """The batches holding the records of ``[start, end)`` (:meth:`RangeRead.take_batches`: a
    batch that straddles an end of the range is whole). Offsets of the range that retention or
    DeleteRecords removed raise :class:`DataLossError`, or are skipped when ``fail_on_data_loss``
    is false; a range that the log does not reach yet is waited for."""
    read = RangeRead(tp, start, end, read_committed=read_committed, max_bytes=max_bytes)
    await cluster.refresh([tp.topic])
    while not read.done:
        found = await cluster.leader_or_wait(tp)
        if found is None:
            continue
        address, client = found
        try:
            version = cluster.version(client, ApiKey.FETCH, FETCH_VERSION)
            response = await client.request(read.request(cluster.metadata.epoch(tp)), version)
        except (TimeoutError, ConnectionError, OSError) as e:
            await cluster.drop(address)
            await cluster.retry_wait(f"Fetch {tp} from {address}: {e}")
            continue
        part = read.partition(response)
        if part is None or part.error_code in LEADERSHIP_ERRORS:
            await cluster.retry_wait(f"Fetch {tp}: error {part.error_code if part else 'no partition'}")
            continue
        if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            earliest = (await list_offsets(cluster, {tp: EARLIEST})).get(tp)
            if earliest is None or earliest <= read.offset:
                raise KafkaCallError(f"Fetch {tp}: offset {read.offset} is past the end of the log")
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp}: offsets {read.offset}..{earliest - 1} are no longer in the log "
                    "(set failOnDataLoss=false to skip them)"
                )
            read.offset = earliest
            continue
        if part.error_code != ErrorCode.NONE:
            raise KafkaCallError(f"Fetch {tp} at offset {read.offset}: error {part.error_code}")
        for batch in read.take_batches(part):
            yield batch
        if read.progressed:  # retries may go on for timeout_ms from here
            cluster.progressed()
        elif not read.done:
            if read.ended(part):  # nothing left below the end: removed (compaction, retention)
                return
            await cluster.retry_wait(
                f"Fetch {tp}: waiting for offsets {read.offset}..{end} (log ends at {read.stable_end(part)})"
            )


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
    """The records of ``[start, end)`` as ``(timestamp type, records)`` per batch
    (:func:`fetch_batches`, decoded)."""
    async for batch in fetch_batches(
        cluster,
        tp,
        start,
        end,
        read_committed=read_committed,
        max_bytes=max_bytes,
        fail_on_data_loss=fail_on_data_loss,
    ):
        records = [r for r in batch.records() if start <= r.offset < end]
        if records:
            yield int(batch.timestamp_type), records
