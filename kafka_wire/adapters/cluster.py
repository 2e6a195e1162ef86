"""Connections to the brokers of one cluster, its metadata, and the retry rule of every call.

A :class:`Cluster` opens a :class:`kafka_wire.adapters.asyncio.KafkaClient` per broker on first
use (over TLS with ``ssl``; SASL from a factory, a fresh mechanism per connection), looks partition leaders up with
Metadata and sends each request to the current leader. On NOT_LEADER_OR_FOLLOWER and the other
retriable leadership errors a call forgets the leaders, waits a backoff and asks again, until
``timeout_ms`` pass without progress (each call that moves forward calls :meth:`progressed`).
The calls of :mod:`kafka_wire.client` take a :class:`Cluster`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from ssl import SSLContext

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.client.cluster import (
    DEFAULT_TIMEOUT_MS,
    METADATA_VERSION,
    RETRY_BACKOFF_MS,
    Address,
    ClusterMetadata,
    Leadership,
    NoLeader,
    SaslFactory,
    metadata_from,
    parse_bootstrap,
)
from kafka_wire.client.types import KafkaCallError, TopicPartition
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataRequestTopic


class Cluster:
    """Connections to the brokers of one cluster, kept until :meth:`close`."""

    def __init__(
        self,
        bootstrap: str,
        *,
        sasl: SaslFactory | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        ssl: SSLContext | None = None,
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap)
        self._sasl = sasl
        self._ssl = ssl
        self._clients: dict[Address, KafkaClient] = {}
        self.metadata = ClusterMetadata()
        #: Each partition's leader of the newest epoch any answer named (kept across refreshes).
        self._newest: dict[TopicPartition, Leadership] = {}
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def progressed(self) -> None:
        """Retries may go on for ``timeout_ms`` from the last progress, not from the start."""
        self.deadline = time.monotonic() + self.timeout_ms / 1000

    async def client(self, address: Address) -> KafkaClient:
        """The connection to ``address``, opened (and authenticated) on first use."""
        client = self._clients.get(address)
        if client is None:
            sasl = self._sasl() if self._sasl is not None else None
            client = self._clients[address] = await KafkaClient.connect(*address, sasl=sasl, ssl=self._ssl)
        return client

    async def drop(self, address: Address) -> None:
        """Close the connection to ``address`` (the next call opens a new one)."""
        client = self._clients.pop(address, None)
        if client is not None:
            await client.close()

    async def close(self) -> None:
        for address in list(self._clients):
            await self.drop(address)

    @staticmethod
    def version(client: KafkaClient, api: ApiKey, cap: int) -> int:
        """The highest version of ``api`` both sides speak, at most ``cap``."""
        low, high = client.api_versions.get(int(api), (0, cap))
        if low > cap:
            raise KafkaCallError(f"the broker needs {api.name} v{low}+, this client speaks up to v{cap}")
        return min(high, cap)

    async def any_client(self) -> KafkaClient:
        """A connection to any broker: known ones first, then the bootstrap servers."""
        known = list(self.metadata.brokers.values()) + self._bootstrap
        errors = []
        for address in dict.fromkeys(known):
            try:
                return await self.client(address)
            except OSError as e:
                errors.append(f"{address[0]}:{address[1]}: {e}")
        raise ConnectionError("no broker reachable: " + "; ".join(errors))

    async def refresh(self, topics: Iterable[str] | None) -> ClusterMetadata:
        """Metadata of ``topics`` (None: every topic); topics are never created by asking."""
        client = await self.any_client()
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        response = await client.request(request, self.version(client, ApiKey.METADATA, METADATA_VERSION))
        self.metadata = metadata_from(response, self._newest)
        return self.metadata

    async def partitions(self) -> list[TopicPartition]:
        """Every topic-partition of the cluster (internal topics included), sorted."""
        return sorted((await self.refresh(None)).leadership)

    async def leader(self, tp: TopicPartition) -> tuple[Address, KafkaClient]:
        """The leader of ``tp`` and a connection to it; :class:`NoLeader` when none is known."""
        node = self.metadata.leader(tp)
        if node < 0 or node not in self.metadata.brokers:
            await self.refresh([tp.topic])
            node = self.metadata.leader(tp)
        if node < 0 or node not in self.metadata.brokers:
            raise NoLeader(f"no leader for {tp}")
        address = self.metadata.brokers[node]
        return address, await self.client(address)

    async def leader_or_wait(self, tp: TopicPartition) -> tuple[Address, KafkaClient] | None:
        """:meth:`leader`, or None once a retry's wait is over when no leader is known yet."""
        try:
            return await self.leader(tp)
        except NoLeader as e:
            await self.retry_wait(str(e))
            return None

    async def retry_wait(self, why: str) -> None:
        """Forget the leaders and wait a backoff; :class:`KafkaCallError` once the time is up."""
        if time.monotonic() > self.deadline:
            raise KafkaCallError(f"gave up retrying: {why}")
        self.metadata.leadership.clear()
        await asyncio.sleep(RETRY_BACKOFF_MS / 1000)
