"""A few brokers' replication parts in memory: a fake controller and a fake network that carries
``Outbound`` requests between them, on a virtual clock and MemoryStorage."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kafka_wire.broker.apis import HANDLERS
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, LeaderRecoveryState, Outbound, PartitionState
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.metadata import ClusterMetadata
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.replication.manager import ReplicaManager, ReplicationConfig
from kafka_wire.broker.state import BrokerState, Context, Spliced, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    REQUESTS,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
    ApiKey,
    ErrorCode,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    RequestHeader,
)
from kafka_wire.protocol.events import Request
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage

CONTROLLER = 100
TOPIC_ID = uuid.UUID(int=0xABC)
START_MS = 1_700_000_000_000


def latest(key: ApiKey) -> int:
    return max(REQUESTS[key].VERSIONS)


def _api_key(body: Message) -> ApiKey:
    for key, cls in REQUESTS.items():
        if isinstance(body, cls):
            return ApiKey(key)
    raise AssertionError(type(body))


class View:
    """One node's ClusterView: what the fake controller registered; sends go to the network."""

    def __init__(self, node_id: int, net: Network) -> None:
        self._node_id = node_id
        self.net = net

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def controller_id(self) -> int:
        return CONTROLLER

    @property
    def inter_broker_listener(self) -> str:
        return "PLAINTEXT"

    @property
    def controller_listener(self) -> str:
        return "CONTROLLER"

    def brokers(self) -> Sequence[BrokerInfo]:
        return [self.net.brokers[n] for n in sorted(self.net.brokers)]

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.net.brokers.get(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self.net.registrations.get((topic, partition))

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return [s for (t, _), s in sorted(self.net.registrations.items()) if t == topic]

    def finalized_features(self) -> tuple[int, Mapping[str, int]]:
        return -1, {}

    def send(self, outbound: Outbound) -> None:
        self.net.queue.append((self._node_id, outbound))


class Node:
    def __init__(
        self, node_id: int, net: Network, storage: MemoryStorage | None = None, min_isr: int = 1
    ) -> None:
        self.node_id = node_id
        self.net = net
        self.storage = storage or MemoryStorage()
        self.effects = EffectSink()
        config = BrokerConfig(
            node_id=node_id,
            zero_copy_fetch=False,
            topic_default_properties={"min.insync.replicas": str(min_isr)},
        )
        rng = random.Random(node_id)
        self.view = View(node_id, net)
        self.state = BrokerState(
            config=config,
            storage=self.storage,
            rng=rng,
            metadata=ClusterMetadata(cluster_id="test-cluster", node_id=node_id),
            defaults=LogConfig.from_properties(config.topic_default_properties),
            fetch_sessions=FetchSessionCache(100, rng),
            cluster=self.view,
            hooks=net.hooks,
        )
        self.manager = ReplicaManager(self.state, self.view, self.effects, net.config, now_ms=net.now_ms)
        #: Requests held here: (waiting, source node, outbound) or (waiting, None, None) for tests.
        self.held: list[tuple[Waiting, int | None, Outbound | None]] = []
        self.answers: dict[int, Message] = {}
        self._next_id = 0

    def flush(self) -> None:
        self.state.collect_effects(self.effects)
        self.storage.apply(self.effects.take())

    def call(self, body: Message, now_ms: int, version: int | None = None) -> Message | Waiting:
        key = _api_key(body)
        header = RequestHeader(
            request_api_key=key,
            request_api_version=latest(key) if version is None else version,
            client_id="t",
        )
        ctx = Context(self.state, self.effects, 0, Request(header, body), now_ms)
        answer = HANDLERS[key](ctx, body)
        self.flush()
        if isinstance(answer, Spliced):
            return answer.body
        assert isinstance(answer, Message) or hasattr(answer, "poll")
        return answer  # type: ignore[no-any-return]

    def submit(self, body: Message, now_ms: int, version: int | None = None) -> int:
        """A client request; its answer lands in ``answers[id]`` (now or once held ones settle)."""
        self._next_id += 1
        answer = self.call(body, now_ms, version)
        if isinstance(answer, Message):
            self.answers[self._next_id] = answer
        else:
            self.held.append((answer, -self._next_id, None))
        return self._next_id

    def replica(self, topic: str = "t", partition: int = 0) -> PartitionReplica:
        replica = self.state.replica(topic, partition)
        assert replica is not None
        return replica

    def produce(
        self,
        values: Sequence[bytes],
        now_ms: int,
        acks: int = -1,
        timeout_ms: int = 30_000,
        producer_id: int = -1,
        sequence: int = -1,
    ) -> int:
        batch = build_batch(
            [NewRecord(None, v) for v in values],
            default_timestamp=now_ms,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence,
        )
        request = ProduceRequest(
            acks=acks,
            timeout_ms=timeout_ms,
            topic_data=[
                ProduceRequestTopicProduceData(
                    name="t",
                    topic_id=TOPIC_ID,
                    partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)],
                )
            ],
        )
        return self.submit(request, now_ms, version=9)


def over_the_wire(body: Message) -> Message:
    """``body`` as the receiving node decodes it: sent at the newest version, as between two
    kafka_wire nodes (a field that version lacks fails here as it fails on a real link)."""
    version = max(type(body).VERSIONS)
    decoded: Message = type(body).decode(body.encode(version), version)
    return decoded


@dataclass
class Network:
    config: ReplicationConfig = field(default_factory=ReplicationConfig)
    now_ms: int = START_MS
    nodes: dict[int, Node] = field(default_factory=dict)
    down: set[int] = field(default_factory=set)
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    registrations: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    queue: list[tuple[int, Outbound]] = field(default_factory=list)
    #: AlterPartition requests the controller received.
    alter_requests: list[AlterPartitionRequest] = field(default_factory=list)
    #: While True AlterPartition fails (no reply: the link's timeout or a lost connection).
    controller_fails: bool = False
    #: While True the controller applies an AlterPartition but its answer is lost.
    answers_lost: bool = False
    #: While True the controller's changes reach no broker (their metadata lags).
    metadata_held: bool = False
    #: The BUGGIFY hooks every node's engine parts are built with.
    hooks: Hooks = OFF

    def add(self, node_id: int, storage: MemoryStorage | None = None, min_isr: int = 1) -> Node:
        self.brokers[node_id] = BrokerInfo(
            node_id,
            epoch=10 + node_id,
            endpoints=(Endpoint("PLAINTEXT", "127.0.0.1", 9000 + node_id),),
            fenced=False,
        )
        node = self.nodes[node_id] = Node(node_id, self, storage, min_isr)
        return node

    # -- the fake controller ----------------------------------------------------------------------
    def publish(self, *states: PartitionState) -> None:
        for s in states:
            self.registrations[s.topic, s.partition] = s
        for node_id, node in self.nodes.items():
            if node_id not in self.down:
                node.manager.apply(list(states), [], self.now_ms)
                node.flush()

    def create(self, replicas: tuple[int, ...], leader: int | None = None) -> PartitionState:
        state = PartitionState(
            "t", 0, TOPIC_ID, replicas, replicas, replicas[0] if leader is None else leader, 0, 0
        )
        self.publish(state)
        return state

    def elect(
        self, leader: int, isr: tuple[int, ...] | None = None, *, unclean: bool = False
    ) -> PartitionState:
        old = self.registrations["t", 0]
        new = replace(
            old,
            leader=leader,
            isr=old.isr if isr is None else isr,
            leader_epoch=old.leader_epoch + 1,
            partition_epoch=old.partition_epoch + 1,
            leader_recovery_state=LeaderRecoveryState.RECOVERING
            if unclean
            else LeaderRecoveryState.RECOVERED,
        )
        self.publish(new)
        return new

    def _alter(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        self.alter_requests.append(request)
        topics = []
        changed = []
        for topic in request.topics:
            results = []
            for data in topic.partitions:
                [old] = [
                    r
                    for r in self.registrations.values()
                    if r.topic_id == topic.topic_id and r.partition == data.partition_index
                ]
                result = AlterPartitionResponsePartitionData(partition_index=data.partition_index)
                if data.leader_epoch != old.leader_epoch:
                    result.error_code = ErrorCode.FENCED_LEADER_EPOCH
                elif data.partition_epoch != old.partition_epoch:
                    result.error_code = ErrorCode.INVALID_UPDATE_VERSION
                else:
                    new = replace(
                        old,
                        isr=tuple(b.broker_id for b in data.new_isr_with_epochs),
                        partition_epoch=old.partition_epoch + 1,
                        leader_recovery_state=LeaderRecoveryState(data.leader_recovery_state),
                    )
                    changed.append(new)
                    self.registrations[new.topic, new.partition] = new
                    result.leader_id, result.leader_epoch = new.leader, new.leader_epoch
                    result.isr, result.partition_epoch = list(new.isr), new.partition_epoch
                    result.leader_recovery_state = int(new.leader_recovery_state)
                results.append(result)
            topics.append(AlterPartitionResponseTopicData(topic_id=topic.topic_id, partitions=results))
        self._pending_publish.extend(changed)
        return AlterPartitionResponse(topics=topics)

    _pending_publish: list[PartitionState] = field(default_factory=list)

    # -- time -------------------------------------------------------------------------------------
    def step(self, ms: int = 10) -> None:
        """Deliver what was sent, answer held requests that are ready, tick every node."""
        self.now_ms += ms
        now = self.now_ms
        queue, self.queue = self.queue, []
        for sender, outbound in queue:
            if sender in self.down:
                continue
            outbound = replace(outbound, body=over_the_wire(outbound.body))
            if outbound.destination == CONTROLLER:
                if self.controller_fails:
                    outbound.on_reply(None, now)
                    self.nodes[sender].flush()
                    continue
                assert isinstance(outbound.body, AlterPartitionRequest)
                reply = self._alter(outbound.body)
                outbound.on_reply(None if self.answers_lost else reply, now)
                self.nodes[sender].flush()
                continue
            target = self.nodes.get(outbound.destination)
            if target is None or outbound.destination in self.down:
                outbound.on_reply(None, now)
                self.nodes[sender].flush()
                continue
            answer = target.call(outbound.body, now)
            if isinstance(answer, Message):
                outbound.on_reply(answer, now)
                self.nodes[sender].flush()
            else:
                target.held.append((answer, sender, outbound))
        if self._pending_publish and not self.metadata_held:
            changed, self._pending_publish = self._pending_publish, []
            self.publish(*changed)
        for node_id, node in self.nodes.items():
            if node_id in self.down:
                continue
            node.manager.tick(now)
            node.flush()
            still: list[tuple[Waiting, int | None, Outbound | None]] = []
            for held in node.held:
                waiting, origin, link = held
                body = waiting.poll(now)
                node.flush()
                if body is None:
                    still.append(held)
                    continue
                if isinstance(body, Spliced):
                    body = body.body
                assert origin is not None
                if link is None:
                    node.answers[-origin] = body
                elif origin not in self.down:
                    link.on_reply(body, now)
                    self.nodes[origin].flush()
            node.held = still

    def run(self, ms: int, step: int = 10) -> None:
        for _ in range(ms // step):
            self.step(step)

    def crash(self, node_id: int) -> None:
        """The node stops; what it holds is lost, its storage stays."""
        self.down.add(node_id)
        for node in self.nodes.values():
            node.held = [(w, s, o) for w, s, o in node.held if s != node_id]
        self.brokers[node_id] = replace(self.brokers[node_id], fenced=True)

    def restart(self, node_id: int) -> Node:
        storage = self.nodes[node_id].storage
        self.down.discard(node_id)
        self.brokers[node_id] = replace(
            self.brokers[node_id], epoch=self.brokers[node_id].epoch + 100, fenced=False
        )
        node = self.nodes[node_id] = Node(
            node_id, self, storage, self.nodes[node_id].state.defaults.min_insync_replicas
        )
        node.manager.apply(list(self.registrations.values()), [], self.now_ms)
        node.flush()
        return node
