"""A fake cluster of three brokers and broker states on in-memory storage, for the coordination tests."""

from __future__ import annotations

import itertools
import logging
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, Outbound, PartitionState
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.group_link import GroupAnswer, GroupLink
from kafka_wire.broker.internal_topics import internal_topic_specs
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.metadata import OFFSETS_TOPIC, ClusterMetadata, TopicInfo
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.codec.structs import Message
from kafka_wire.messages import RequestHeader
from kafka_wire.protocol.events import Request
from kafka_wire.testing.memory_storage import MemoryStorage

OFFSETS_ID = uuid.UUID(int=0xC0FFEE)
#: Partitions of __consumer_offsets in these tests.
PARTITIONS = 6
NOW = 1_700_000_000_000
DATA_TOPIC = "orders"


def endpoints(node_id: int) -> tuple[Endpoint, ...]:
    return (
        Endpoint("PLAINTEXT", f"broker{node_id}.example", 9000 + node_id),
        Endpoint("INTERNAL", f"internal{node_id}.example", 19000 + node_id),
    )


@dataclass
class FakeCluster:
    """A ClusterView of brokers 1, 2, 3 (node ``node_id`` is this one); requests are kept in
    :attr:`sent` for the test to answer."""

    node_id: int = 1
    controller_id: int = 3
    inter_broker_listener: str = "INTERNAL"
    controller_listener: str = "CONTROLLER"
    registered: dict[int, BrokerInfo] = field(
        default_factory=lambda: {
            n: BrokerInfo(n, epoch=10 + n, endpoints=endpoints(n), fenced=False) for n in (1, 2, 3)
        }
    )
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    sent: list[Outbound] = field(default_factory=list)

    def brokers(self) -> Sequence[BrokerInfo]:
        return [self.registered[n] for n in sorted(self.registered)]

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.registered.get(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self.partitions.get((topic, partition))

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return [p for (t, _), p in sorted(self.partitions.items()) if t == topic]

    def finalized_features(self) -> tuple[int, Mapping[str, int]]:
        return -1, {}

    def send(self, outbound: Outbound) -> None:
        self.sent.append(outbound)

    def lead_offsets(self, leaders: dict[int, int], count: int = PARTITIONS) -> None:
        """Register ``__consumer_offsets`` with ``count`` partitions led as ``leaders`` says
        (partition -> node; others led by node 2)."""
        for index in range(count):
            leader = leaders.get(index, 2)
            self.partitions[OFFSETS_TOPIC, index] = PartitionState(
                OFFSETS_TOPIC, index, OFFSETS_ID, (1, 2, 3), (1, 2, 3), leader, 1, 1
            )


def node_state(
    cluster: FakeCluster, storage: MemoryStorage, *, node_id: int = 1, partitions: int = PARTITIONS
) -> BrokerState:
    """A broker state whose ``__consumer_offsets`` has ``partitions`` partitions open, all led here
    (the replica's role; which ones the coordinator serves is the test's business)."""
    config = BrokerConfig(
        node_id=node_id, group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=partitions
    )
    state = BrokerState(
        config=config,
        storage=storage,
        rng=random.Random(5),
        metadata=ClusterMetadata(cluster_id="test-cluster", node_id=node_id),
        defaults=LogConfig.from_properties({}),
        fetch_sessions=FetchSessionCache(10, random.Random(6)),
        cluster=cluster,
    )
    spec = internal_topic_specs(config)[OFFSETS_TOPIC]
    topic = TopicInfo(
        name=OFFSETS_TOPIC, topic_id=OFFSETS_ID, partitions=partitions, configs=dict(spec.configs)
    )
    state.metadata.topics[OFFSETS_TOPIC] = topic
    # A topic for the groups to commit offsets of (its logs are not needed).
    state.metadata.topics[DATA_TOPIC] = TopicInfo(name=DATA_TOPIC, topic_id=uuid.UUID(int=7), partitions=3)
    sink = EffectSink()
    for index in range(partitions):
        state.open_partition(topic, index, NOW, sink)
    flush(state, sink)
    return state


def flush(state: BrokerState, sink: EffectSink) -> None:
    """Apply the storage effects queued so far, as a driver would."""
    state.collect_effects(sink)
    storage = state.storage
    assert isinstance(storage, MemoryStorage)
    for effect in sink.take():
        storage.apply_one(effect)


class Node:
    """A GroupLink over a node state, requests numbered, answers kept by correlation id."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.sink = EffectSink()
        self.timers = TimerQueue()
        members = itertools.count(1)
        self.link = GroupLink(
            state.config,
            state,
            self.sink,
            self.timers,
            _silent(),
            member_id_factory=lambda client_id: f"{client_id}-{next(members)}",
        )
        self.answers: dict[int, Message] = {}
        self._ids = itertools.count(1)
        self.now = NOW

    def replica(self, partition: int) -> PartitionReplica:
        replica = self.state.replica(OFFSETS_TOPIC, partition)
        assert replica is not None
        return replica

    def send(self, body: Message, version: int) -> int:
        correlation_id = next(self._ids)
        assert body.API_KEY is not None
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="c",
        )
        self.take(self.link.handle(1, Request(header, body), "/127.0.0.1", self.now))
        return correlation_id

    def call(self, body: Message, version: int) -> Message:
        correlation_id = self.send(body, version)
        return self.answers.pop(correlation_id)

    def advance(self, ms: int) -> None:
        """Move the clock, ticking the link at every deadline on the way."""
        target = self.now + ms
        while (deadline := self.link.next_deadline_ms()) is not None and deadline <= target:
            self.now = max(self.now, deadline)
            self.state.begin_call()
            self.take(self.link.tick(self.now))
        self.now = target
        self.state.begin_call()
        self.take(self.link.tick(self.now))

    def poll(self) -> None:
        """What the engine does after a call that may have moved a high watermark."""
        self.state.begin_call()
        self.take(self.link.poll(self.now))

    def take(self, answers: list[GroupAnswer]) -> None:
        flush(self.state, self.sink)
        for _, request, body in answers:
            assert request.correlation_id not in self.answers
            self.answers[request.correlation_id] = body


def _silent() -> logging.Logger:
    log = logging.getLogger("tests.coordination")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def follower_fetched(replica: PartitionReplica, now_ms: int, offset: int) -> None:
    """Node 2 (a follower in the ISR: added to it first if needed) fetched from ``offset``."""
    if replica.registration is None:  # opened as a single node's replica: lead as a registration says
        replica.make_leader(
            PartitionState(replica.topic, replica.partition, replica.topic_id, (1, 2, 3), (1,), 1, 1, 1),
            now_ms,
        )
    registration = replica.registration
    assert registration is not None
    if 2 not in registration.isr:
        replica.isr_committed((*registration.isr, 2), registration.partition_epoch + 1, now_ms)
    replica.record_follower_fetch(2, offset, now_ms)
