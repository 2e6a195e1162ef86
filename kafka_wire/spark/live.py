"""A live cluster through kafka_wire's own client: metadata, offsets, one range's fetch loop, produce.

Synchronous calls (each runs its own asyncio loop, which is what a Spark task wants) over
:class:`kafka_wire.adapters.asyncio.KafkaClient`. The client looks partition leaders up with
Metadata and sends each request to the current leader; on NOT_LEADER_OR_FOLLOWER and the other
retriable leadership errors it refreshes metadata and retries until ``timeout_ms``.

Fetch follows Kafka's consumer: ``read_committed`` fetches with isolation level 1 (the broker stops
at the last stable offset and lists the aborted transactions) and skips a transactional batch of a
producer from its aborted transaction's first offset up to the ABORT marker; control batches are
never returned. An offset range is read as ``[start, end)``, so a retried task reads exactly it.
"""

from __future__ import annotations

import asyncio
import heapq
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    MetadataRequest,
    MetadataRequestTopic,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafka_wire.records import ControlRecordType, Record, decode_control_key, read_batches
from kafka_wire.spark.access import ClusterAccess
from kafka_wire.spark.ranges import EARLIEST, LATEST, DataLossError, TopicPartition

T = TypeVar("T")

# Highest versions this client speaks: the last ones that name topics (later ones use topic ids).
FETCH_VERSION: Final = 12
LIST_OFFSETS_VERSION: Final = 7
METADATA_VERSION: Final = 12
PRODUCE_VERSION: Final = 9

DEFAULT_TIMEOUT_MS: Final = 60_000
"""How long one call may keep retrying without progress (Spark's Kafka source polls for up to 2 minutes)."""
DEFAULT_PARTITION_MAX_BYTES: Final = 8 * 1024 * 1024
"""Bytes per Fetch (Kafka's consumer: 1 MiB per partition; one partition per task here)."""
_RETRY_BACKOFF_S: Final = 0.1
_PREFETCH_BATCHES: Final = 64
"""Batches the fetch thread may read ahead of the consumer of :func:`fetch_range`."""
_LEADERSHIP_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)


class KafkaCallError(RuntimeError):
    """A request failed with an error code that retrying does not fix (or retries ran out)."""


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host1:9092,host2:9093`` -> ``[("host1", 9092), ("host2", 9093)]``."""
    out = []
    for item in servers.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r} (expected host:port)")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("kafka.bootstrap.servers is empty")
    return out


@dataclass
class _Metadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    leaders: dict[TopicPartition, int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)


class _Session:
    """Connections to the brokers of one cluster, for the duration of one call."""

    def __init__(self, cluster: ClusterAccess, timeout_ms: int) -> None:
        self._access = cluster
        self._bootstrap = parse_bootstrap(cluster.bootstrap)
        self._clients: dict[tuple[str, int], KafkaClient] = {}
        self.metadata = _Metadata()
        self.timeout_s = timeout_ms / 1000
        self.deadline = time.monotonic() + self.timeout_s

    def progressed(self) -> None:
        """Retries may go on for ``timeout_ms`` from the last progress, not from the start."""
        self.deadline = time.monotonic() + self.timeout_s

    async def client(self, address: tuple[str, int]) -> KafkaClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = await KafkaClient.connect(*address, sasl=self._access.mechanism())
        return client

    async def drop(self, address: tuple[str, int]) -> None:
        client = self._clients.pop(address, None)
        if client is not None:
            await client.close()

    async def close(self) -> None:
        for address in list(self._clients):
            await self.drop(address)

    @staticmethod
    def version(client: KafkaClient, api: ApiKey, cap: int) -> int:
        low, high = client.api_versions.get(int(api), (0, cap))
        if low > cap:
            raise KafkaCallError(f"the broker needs {api.name} v{low}+, this client speaks up to v{cap}")
        return min(high, cap)

    async def any_client(self) -> KafkaClient:
        known = list(self.metadata.brokers.values()) + self._bootstrap
        errors = []
        for address in dict.fromkeys(known):
            try:
                return await self.client(address)
            except OSError as e:
                errors.append(f"{address[0]}:{address[1]}: {e}")
        raise ConnectionError("no broker reachable: " + "; ".join(errors))

    async def refresh(self, topics: Iterable[str] | None) -> _Metadata:
        client = await self.any_client()
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        response = await client.request(request, self.version(client, ApiKey.METADATA, METADATA_VERSION))
        meta = _Metadata(brokers={b.node_id: (b.host, b.port) for b in response.brokers})
        for topic in response.topics:
            if topic.error_code != ErrorCode.NONE or topic.name is None:
                continue
            meta.partitions[topic.name] = len(topic.partitions)
            for p in topic.partitions:
                meta.leaders[TopicPartition(topic.name, p.partition_index)] = p.leader_id
        self.metadata = meta
        return meta

    async def leader(self, tp: TopicPartition) -> tuple[tuple[str, int], KafkaClient]:
        node = self.metadata.leaders.get(tp, -1)
        if node < 0 or node not in self.metadata.brokers:
            await self.refresh([tp.topic])
            node = self.metadata.leaders.get(tp, -1)
        if node < 0 or node not in self.metadata.brokers:
            raise _Retry(f"no leader for {tp}")
        address = self.metadata.brokers[node]
        return address, await self.client(address)

    async def leader_or_wait(self, tp: TopicPartition) -> tuple[tuple[str, int], KafkaClient] | None:
        """:meth:`leader`, or None once a retry's wait is over when no leader is known yet."""
        try:
            return await self.leader(tp)
        except _Retry as e:
            await self.retry_wait(str(e))
            return None

    async def retry_wait(self, why: str) -> None:
        if time.monotonic() > self.deadline:
            raise KafkaCallError(f"gave up retrying: {why}")
        self.metadata.leaders.clear()
        await asyncio.sleep(_RETRY_BACKOFF_S)


class _Retry(Exception):
    pass


def _run(
    cluster: ClusterAccess | str, timeout_ms: int, body: Callable[[_Session], Coroutine[object, object, T]]
) -> T:
    async def main() -> T:
        session = _Session(ClusterAccess.of(cluster), timeout_ms)
        try:
            return await body(session)
        finally:
            await session.close()

    return asyncio.run(main())


def partitions_of(cluster: ClusterAccess | str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> list[TopicPartition]:
    """Every topic-partition of the cluster (internal topics included; selection drops them)."""

    async def body(session: _Session) -> list[TopicPartition]:
        return sorted((await session.refresh(None)).leaders)

    return _run(cluster, timeout_ms, body)


async def _list_offsets(
    session: _Session, queries: Mapping[TopicPartition, int], isolation_level: int
) -> dict[TopicPartition, int | None]:
    out: dict[TopicPartition, int | None] = {}
    pending = dict(queries)
    await session.refresh(sorted({tp.topic for tp in pending}))
    while pending:
        by_leader: dict[tuple[str, int], list[TopicPartition]] = {}
        for tp in pending:
            try:
                address, _ = await session.leader(tp)
            except _Retry as e:
                await session.retry_wait(str(e))
                break
            by_leader.setdefault(address, []).append(tp)
        for address, tps in by_leader.items():
            client = await session.client(address)
            topics: dict[str, list[ListOffsetsRequestPartition]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    ListOffsetsRequestPartition(partition_index=tp.partition, timestamp=pending[tp])
                )
            request = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=isolation_level,
                topics=[ListOffsetsRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
            )
            version = session.version(client, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION)
            response = await client.request(request, version)
            retry = None
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if p.error_code == ErrorCode.NONE:
                        out[tp] = None if p.offset < 0 else p.offset
                        pending.pop(tp, None)
                    elif p.error_code in _LEADERSHIP_ERRORS:
                        retry = f"ListOffsets {tp}: error {p.error_code}"
                    else:
                        raise KafkaCallError(f"ListOffsets {tp}: error {p.error_code}")
            if retry is not None:
                await session.retry_wait(retry)
    return out


def list_offsets(
    cluster: ClusterAccess | str,
    queries: Mapping[TopicPartition, int],
    *,
    read_committed: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[TopicPartition, int | None]:
    """ListOffsets per partition: ``EARLIEST``, ``LATEST`` (the last stable offset with
    ``read_committed``) or a timestamp in ms (the first offset at or after it; None if none)."""

    async def body(session: _Session) -> dict[TopicPartition, int | None]:
        return await _list_offsets(session, queries, 1 if read_committed else 0)

    return _run(cluster, timeout_ms, body)


def offset_bounds(
    cluster: ClusterAccess | str, tps: Sequence[TopicPartition], *, read_committed: bool = False, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> dict[TopicPartition, tuple[int, int]]:
    """``(earliest, latest)`` per partition in one session."""

    async def body(session: _Session) -> dict[TopicPartition, tuple[int, int]]:
        level = 1 if read_committed else 0
        low = await _list_offsets(session, dict.fromkeys(tps, EARLIEST), level)
        high = await _list_offsets(session, dict.fromkeys(tps, LATEST), level)
        return {tp: (low.get(tp) or 0, high.get(tp) or 0) for tp in tps}

    return _run(cluster, timeout_ms, body)


class _AbortedFilter:
    """Kafka consumer's rule for one fetch response's aborted transactions."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        self._heap = [(first, pid) for pid, first in aborted]
        heapq.heapify(self._heap)
        self._open: set[int] = set()

    def skip(self, producer_id: int, last_offset: int, is_control: bool, abort_marker: bool) -> bool:
        while self._heap and self._heap[0][0] <= last_offset:
            self._open.add(heapq.heappop(self._heap)[1])
        if is_control:
            if abort_marker:
                self._open.discard(producer_id)
            return True
        return producer_id in self._open


async def _fetch_range(
    session: _Session,
    tp: TopicPartition,
    start: int,
    end: int,
    read_committed: bool,
    max_bytes: int,
    fail_on_data_loss: bool,
) -> AsyncIterator[tuple[int, list[Record[bytes]]]]:
    offset = start
    await session.refresh([tp.topic])
    while offset < end:
        found = await session.leader_or_wait(tp)
        if found is None:
            continue
        address, client = found
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=1 if read_committed else 0,
            topics=[
                FetchRequestTopic(
                    topic=tp.topic,
                    partitions=[FetchRequestPartition(partition=tp.partition, fetch_offset=offset, partition_max_bytes=max_bytes)],
                )
            ],
        )
        try:
            version = session.version(client, ApiKey.FETCH, FETCH_VERSION)
            response = await client.request(request, version)
        except (TimeoutError, ConnectionError, OSError) as e:
            await session.drop(address)
            await session.retry_wait(f"Fetch {tp} from {address}: {e}")
            continue
        data = [p for t in response.responses for p in t.partitions if p.partition_index == tp.partition]
        if not data or data[0].error_code in _LEADERSHIP_ERRORS:
            await session.retry_wait(f"Fetch {tp}: error {data[0].error_code if data else 'no partition'}")
            continue
        part = data[0]
        if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            earliest = (await _list_offsets(session, {tp: EARLIEST}, 0)).get(tp)
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
        aborted = _AbortedFilter(
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
                session.progressed()
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
            await session.retry_wait(f"Fetch {tp}: waiting for offsets {offset}..{end} (log ends at {stable})")


def fetch_range(
    cluster: ClusterAccess | str,
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    fail_on_data_loss: bool = True,
) -> Iterator[tuple[int, list[Record[bytes]]]]:
    """The records of ``[start, end)`` as ``(timestamp type, records)`` per batch (as
    :func:`kafka_wire.spark.logs.read_range`). The fetch loop runs on its own thread and event
    loop, at most ``_PREFETCH_BATCHES`` batches ahead of the caller. Offsets of the range that
    retention or DeleteRecords removed raise :class:`DataLossError`, or are skipped when
    ``fail_on_data_loss`` is false."""
    items: queue.Queue[tuple[int, list[Record[bytes]]] | BaseException | None] = queue.Queue(_PREFETCH_BATCHES)
    stop = threading.Event()

    async def body(session: _Session) -> None:
        async for item in _fetch_range(session, tp, start, end, read_committed, max_bytes, fail_on_data_loss):
            while not stop.is_set():
                try:
                    items.put(item, timeout=0.1)
                    break
                except queue.Full:
                    await asyncio.sleep(0)
            if stop.is_set():
                return

    def run() -> None:
        try:
            _run(cluster, timeout_ms, body)
            outcome: BaseException | None = None
        except BaseException as e:  # handed to the caller's thread
            outcome = e
        while not stop.is_set():
            try:
                items.put(outcome, timeout=0.1)
                return
            except queue.Full:
                continue

    thread = threading.Thread(target=run, name=f"kafka_wire fetch {tp}", daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def murmur2(data: bytes) -> int:
    """Kafka's default partitioner hash (32-bit MurmurHash2, seed 0x9747b28c), as a signed int."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record: ``toPositive(murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


async def _produce(
    session: _Session, batches: Mapping[TopicPartition, Sequence[bytes]], acks: int
) -> dict[TopicPartition, int]:
    unknown = sorted({tp.topic for tp in batches if tp not in session.metadata.leaders})
    if unknown:
        await session.refresh(unknown)
    first: dict[TopicPartition, int] = {}
    for tp, items in batches.items():
        for raw in items:
            while True:
                found = await session.leader_or_wait(tp)
                if found is None:
                    continue
                client = found[1]
                request = ProduceRequest(
                    acks=acks,
                    timeout_ms=30_000,
                    topic_data=[
                        ProduceRequestTopicProduceData(
                            name=tp.topic,
                            partition_data=[ProduceRequestPartitionProduceData(index=tp.partition, records=raw)],
                        )
                    ],
                )
                version = session.version(client, ApiKey.PRODUCE, PRODUCE_VERSION)
                if acks == 0:  # no response: the offset is not known
                    await client.send_only(request, version)
                    first.setdefault(tp, -1)
                    break
                response = await client.request(request, version)
                result = response.responses[0].partition_responses[0]
                if result.error_code in _LEADERSHIP_ERRORS:
                    await session.retry_wait(f"Produce {tp}: error {result.error_code}")
                    continue
                if result.error_code != ErrorCode.NONE:
                    raise KafkaCallError(f"Produce {tp}: error {result.error_code} {result.error_message or ''}")
                first.setdefault(tp, result.base_offset)
                break
    return first


class Producer:
    """Produces record batches (built with :func:`kafka_wire.records.build_batch`) to partition
    leaders over connections kept open until :meth:`close`: one per Spark writer task."""

    def __init__(self, cluster: ClusterAccess | str, *, acks: int = -1, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        self._runner = asyncio.Runner()
        self._session = _Session(ClusterAccess.of(cluster), timeout_ms)
        self._acks = acks

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        """Partitions per existing topic (topics that do not exist are left out)."""
        self._session.progressed()
        meta = self._runner.run(self._session.refresh(sorted(set(topics))))
        return dict(meta.partitions)

    def send(self, batches: Mapping[TopicPartition, Sequence[bytes]]) -> dict[TopicPartition, int]:
        """Each partition's batches in order; returns the base offset the broker gave each
        partition's first batch (-1 with acks=0)."""
        self._session.progressed()
        return self._runner.run(_produce(self._session, batches, self._acks))

    def close(self) -> None:
        try:
            self._runner.run(self._session.close())
        finally:
            self._runner.close()


def produce(
    cluster: ClusterAccess | str,
    batches: Mapping[TopicPartition, Sequence[bytes]],
    *,
    acks: int = -1,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[TopicPartition, int]:
    """:meth:`Producer.send` over a connection of its own."""
    with Producer(cluster, acks=acks, timeout_ms=timeout_ms) as producer:
        return producer.send(batches)


__all__ = [
    "EARLIEST",
    "LATEST",
    "KafkaCallError",
    "Producer",
    "fetch_range",
    "list_offsets",
    "murmur2",
    "offset_bounds",
    "parse_bootstrap",
    "partition_for_key",
    "partitions_of",
    "produce",
]
