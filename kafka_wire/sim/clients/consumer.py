"""Simulated consumers' fetching, and the consumer by assignment.

:class:`Fetcher` keeps a position per partition it reads (a :class:`kafka_wire.client.RangeRead`
open-ended at the top) and keeps one Fetch in flight per leader, holding every partition that
node leads (no fetch session, the leader epoch from the metadata so that a stale leader answers
FENCED_LEADER_EPOCH), at read_uncommitted or, when asked, read_committed (the ``RangeRead`` then
drops the batches of aborted transactions). Each partition's records in a response are one
``poll`` op. Leadership errors and lost connections refresh the metadata and retry after a backoff;
``OFFSET_OUT_OF_RANGE`` is an ``info`` poll op and a reset to the log's start.

As Kafka's consumer (KIP-320), a position carries the leader epoch of the last record consumed
(its batch's), which the group members commit with the offset; a position read from a committed
offset takes its epoch, and the partition is not fetched until the metadata has a leader epoch at
least as high (older metadata, a node that has not heard of the newer leader, is asked again).
Kafka's consumer also validates such a position with the leader (OffsetsForLeaderEpoch, to find
a truncated log); the simulated ones do not.

:class:`AssignConsumer` reads every partition of its topics from offset 0.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from kafka_wire.client.fetch import RangeRead
from kafka_wire.client.types import TopicPartition
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponsePartitionData,
)
from kafka_wire.sim.clients.base import REQUEST_TIMEOUT_MS, RETRY_BACKOFF_MS, Address, ClientBase
from kafka_wire.sim.history import Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: Kafka's ``fetch.max.wait.ms``.
FETCH_MAX_WAIT_MS: Final = 500
#: Kafka's ``max.partition.fetch.bytes``.
PARTITION_MAX_BYTES: Final = 1024 * 1024
#: Reads have no end: the top of a RangeRead.
_NO_END: Final = 1 << 62

_REFRESH: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.OFFSET_NOT_AVAILABLE,
    }
)


def _value(raw: bytes | memoryview | None) -> str:
    return "" if raw is None else bytes(raw).decode("utf-8", "replace")


class Fetcher(ClientBase):
    """Positions and fetching, shared by both consumers."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
        *,
        read_committed: bool = False,
    ) -> None:
        super().__init__(name, history, rng, bootstrap, topics)
        #: Fetch at read_committed: up to the last stable offset, aborted transactions skipped.
        self.read_committed = read_committed
        self.reads: dict[tuple[str, int], RangeRead] = {}
        #: Per partition read, the leader epoch of the last record consumed, or the committed one
        #: its position started from (-1: unknown; Kafka's ``FetchPosition.offsetEpoch``).
        self.epochs: dict[tuple[str, int], int] = {}
        self.retry_at_ms: dict[tuple[str, int], int] = {}
        #: Addresses with a Fetch in flight.
        self.fetching: set[Address] = set()
        self.group = ""
        self.generation = -1

    def read_from(self, key: tuple[str, int], offset: int, epoch: int = -1) -> None:
        """Read ``key`` from ``offset``, whose record was written at leader ``epoch`` or later."""
        self.reads[key] = RangeRead(TopicPartition(*key), offset, _NO_END, read_committed=self.read_committed)
        self.epochs[key] = epoch

    def pump(self, now_ms: int) -> None:
        super().pump(now_ms)
        by_leader: dict[Address, list[tuple[tuple[str, int], RangeRead]]] = {}
        for key, read in self.reads.items():
            retry = self.retry_at_ms.get(key, 0)
            if now_ms < retry:
                self.wake_at(retry)
                continue
            address = self.leader_address(*key)
            if address is None or self.partitions[key].epoch < self.epochs.get(key, -1):
                self.want_metadata()
                continue
            if address not in self.fetching:
                by_leader.setdefault(address, []).append((key, read))
        for address, items in by_leader.items():
            self._fetch(address, items)

    def _fetch(self, address: Address, items: list[tuple[tuple[str, int], RangeRead]]) -> None:
        topics: dict[str, list[FetchRequestPartition]] = {}
        for (topic, partition), read in items:
            info = self.partitions.get((topic, partition))
            topics.setdefault(topic, []).append(
                FetchRequestPartition(
                    partition=partition,
                    current_leader_epoch=-1 if info is None else info.epoch,
                    fetch_offset=read.offset,
                    log_start_offset=-1,
                    partition_max_bytes=PARTITION_MAX_BYTES,
                )
            )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=FETCH_MAX_WAIT_MS,
            min_bytes=1,
            max_bytes=50 * PARTITION_MAX_BYTES,
            isolation_level=1 if self.read_committed else 0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequestTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        self.fetching.add(address)
        sent = dict(items)

        def answered(body: Message | None, now_ms: int) -> None:
            self._on_fetched(address, sent, body, now_ms)

        self.request(address, request, answered, timeout_ms=REQUEST_TIMEOUT_MS + FETCH_MAX_WAIT_MS)

    def _on_fetched(
        self, address: Address, sent: dict[tuple[str, int], RangeRead], body: Message | None, now_ms: int
    ) -> None:
        self.fetching.discard(address)
        if not isinstance(body, FetchResponse):
            self.want_metadata()
            for key in sent:
                self.retry_at_ms[key] = now_ms + RETRY_BACKOFF_MS
            return
        for topic in body.responses:
            for part in topic.partitions:
                key = (topic.topic, part.partition_index)
                read = sent.get(key)
                if read is None or self.reads.get(key) is not read:
                    continue  # not asked, or the partition was reassigned meanwhile
                self._on_partition(key, read, part, now_ms)

    def _on_partition(
        self, key: tuple[str, int], read: RangeRead, part: FetchResponsePartitionData, now_ms: int
    ) -> None:
        code = part.error_code
        if code == ErrorCode.NONE:
            before = read.offset
            records: tuple[tuple[int, str], ...] = ()
            for batch in read.take_batches(part):
                taken = tuple((r.offset, _value(r.value)) for r in batch.records() if r.offset >= before)
                if taken:
                    records += taken
                    self.epochs[key] = batch.partition_leader_epoch if batch.magic >= 2 else -1
            if records:
                self.record(self._op(OpType.OK, key, now_ms, records=records))
                self.took(key, records)
                self.polled(key, now_ms)
            elif read.offset != before:
                self.polled(key, now_ms)  # skipped control batches move the position too
            return
        self.retry_at_ms[key] = now_ms + RETRY_BACKOFF_MS
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.record(self._op(OpType.INFO, key, now_ms, offset=read.offset, error="OFFSET_OUT_OF_RANGE"))
            self.read_from(key, max(part.log_start_offset, 0))
            self.polled(key, now_ms)
        else:
            self.want_metadata()

    def polled(self, key: tuple[str, int], now_ms: int) -> None:
        """A partition's position moved (the group member commits it)."""

    def took(self, key: tuple[str, int], records: tuple[tuple[int, str], ...]) -> None:
        """A poll of ``key`` returned ``records`` (the consume-transform-produce worker keeps them)."""

    def _op(
        self,
        kind: OpType,
        key: tuple[str, int],
        now_ms: int,
        *,
        records: tuple[tuple[int, str], ...] = (),
        offset: int = -1,
        error: str = "",
    ) -> Op:
        return Op(
            now_ms,
            self.name,
            kind,
            OpKind.POLL,
            topic=key[0],
            partition=key[1],
            records=records,
            offset=offset,
            group=self.group,
            generation=self.generation,
            error=error,
            read_committed=self.read_committed,
        )


class AssignConsumer(Fetcher):
    """Reads every partition of its topics from offset 0 (partitions appear with the metadata)."""

    def pump(self, now_ms: int) -> None:
        if len(self.reads) < sum(self.partition_counts.values()):
            for topic in self.topics:
                for partition in range(self.partition_counts.get(topic, 0)):
                    if (topic, partition) not in self.reads:
                        self.read_from((topic, partition), 0)
        super().pump(now_ms)
