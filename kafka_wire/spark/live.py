"""A live cluster for Spark tasks: synchronous calls over :mod:`kafka_wire.client`.

Each call runs its own asyncio loop (what a Spark task wants) over a
:class:`kafka_wire.adapters.cluster.Cluster` reached as a :class:`ClusterAccess` says (bootstrap servers,
SASL, TLS). What the calls do (leaders, retries, read_committed, aborted transactions) is the
client's; this module adds the threads and loops, and :class:`Producer`, which keeps its
connections across a writer task's calls.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Final, TypeVar

from kafka_wire import client
from kafka_wire.adapters.cluster import Cluster
from kafka_wire.client import DEFAULT_PARTITION_MAX_BYTES, DEFAULT_TIMEOUT_MS, TopicPartition
from kafka_wire.records import Record
from kafka_wire.records.reader import Batch
from kafka_wire.spark.access import ClusterAccess

T = TypeVar("T")

_PREFETCH_BATCHES: Final = 64
"""Batches the fetch thread may read ahead of the consumer of :func:`fetch_range`."""


def connect(cluster: ClusterAccess | str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Cluster:
    """A client :class:`Cluster` for the access (no connection is opened yet)."""
    access = ClusterAccess.of(cluster)
    return Cluster(access.bootstrap, sasl=access.mechanism, timeout_ms=timeout_ms, ssl=access.ssl_context())


def _run(
    cluster: ClusterAccess | str, timeout_ms: int, body: Callable[[Cluster], Coroutine[object, object, T]]
) -> T:
    async def main() -> T:
        async with connect(cluster, timeout_ms) as session:
            return await body(session)

    return asyncio.run(main())


def _isolation(read_committed: bool) -> int:
    return client.READ_COMMITTED if read_committed else client.READ_UNCOMMITTED


def partitions_of(
    cluster: ClusterAccess | str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> list[TopicPartition]:
    """Every topic-partition of the cluster (internal topics included; selection drops them)."""
    return _run(cluster, timeout_ms, Cluster.partitions)


def list_offsets(
    cluster: ClusterAccess | str,
    queries: Mapping[TopicPartition, int],
    *,
    read_committed: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[TopicPartition, int | None]:
    """:func:`kafka_wire.client.list_offsets`: ``EARLIEST``, ``LATEST`` or a timestamp per partition."""

    async def body(session: Cluster) -> dict[TopicPartition, int | None]:
        return await client.list_offsets(session, queries, _isolation(read_committed))

    return _run(cluster, timeout_ms, body)


def offset_bounds(
    cluster: ClusterAccess | str,
    tps: Sequence[TopicPartition],
    *,
    read_committed: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[TopicPartition, tuple[int, int]]:
    """``(earliest, latest)`` per partition in one session."""

    async def body(session: Cluster) -> dict[TopicPartition, tuple[int, int]]:
        return await client.offset_bounds(session, tps, _isolation(read_committed))

    return _run(cluster, timeout_ms, body)


def fetch_batches(
    cluster: ClusterAccess | str,
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    fail_on_data_loss: bool = True,
) -> Iterator[Batch[bytes]]:
    """The batches holding the records of ``[start, end)`` (as
    :func:`kafka_wire.spark.logs.read_batches`), by :func:`kafka_wire.client.fetch_batches`. The
    fetch loop runs on its own thread and event loop, at most ``_PREFETCH_BATCHES`` batches ahead
    of the caller."""
    items: queue.Queue[Batch[bytes] | BaseException | None] = queue.Queue(_PREFETCH_BATCHES)
    stop = threading.Event()

    async def body(session: Cluster) -> None:
        batches = client.fetch_batches(
            session,
            tp,
            start,
            end,
            read_committed=read_committed,
            max_bytes=max_bytes,
            fail_on_data_loss=fail_on_data_loss,
        )
        async for item in batches:
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
    """The records of ``[start, end)`` as ``(timestamp type, records)`` per batch
    (:func:`fetch_batches`, decoded)."""
    for batch in fetch_batches(
        cluster,
        tp,
        start,
        end,
        read_committed=read_committed,
        max_bytes=max_bytes,
        timeout_ms=timeout_ms,
        fail_on_data_loss=fail_on_data_loss,
    ):
        records = [r for r in batch.records() if start <= r.offset < end]
        if records:
            yield int(batch.timestamp_type), records


class Producer:
    """Produces record batches (built with :func:`kafka_wire.records.build_batch`) to partition
    leaders over connections kept open until :meth:`close`: one per Spark writer task."""

    def __init__(
        self, cluster: ClusterAccess | str, *, acks: int = -1, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> None:
        self._runner = asyncio.Runner()
        self._session = connect(cluster, timeout_ms)
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
        return self._runner.run(client.produce(self._session, batches, self._acks))

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
    "Producer",
    "connect",
    "fetch_batches",
    "fetch_range",
    "list_offsets",
    "offset_bounds",
    "partitions_of",
    "produce",
]
