"""The Node inside a Broker, with stand-in parts: what it wires, and where requests go."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka_wire.broker.broker import Broker
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, Outbound, PartitionState
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.controller.quotas_image import ClientQuotasImage
from kafka_wire.broker.controller.scram_image import ScramImage
from kafka_wire.broker.controller.tokens_image import DelegationTokenImage
from kafka_wire.broker.driving import settle
from kafka_wire.broker.effects import Effect, OpenConnection, Send
from kafka_wire.broker.node import MetadataView, Node, NodeParts, PartsContext
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.broker.state import Waiting
from kafka_wire.broker.work import Steps
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    MetadataRequest,
    MetadataResponse,
    VoteRequest,
    VoteResponse,
)
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, Response
from kafka_wire.testing.memory_storage import MemoryStorage

CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"
TOPIC_ID = uuid.UUID(int=7)


def cluster_config() -> BrokerConfig:
    return load_server_properties(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "cluster.id": CLUSTER_ID,
            "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097",
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "group.initial.rebalance.delay.ms": "0",
        }
    ).config


@dataclass
class Batch:
    last_offset: int
    records: tuple[bytes, ...]


@dataclass
class Delta:
    partitions: tuple[PartitionState, ...] = ()
    removed_topics: tuple[tuple[str, uuid.UUID], ...] = ()
    configs: tuple[tuple[int, str], ...] = ()


@dataclass
class FakeRaft:
    leader_id: int = 2
    epoch: int = 1
    high_watermark: int = 0
    leader_ready: bool = False
    caught_up: bool = True
    committed: list[object] = field(default_factory=list)
    handled: list[Message] = field(default_factory=list)
    outbound: list[Outbound] = field(default_factory=list)
    started: bool = False

    def start(self, now_ms: int) -> None:
        self.started = True

    def take_committed(self) -> Sequence[object]:
        taken, self.committed = self.committed, []
        return taken

    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        self.handled.append(body)
        return VoteResponse()

    def poll_outbound(self, now_ms: int) -> list[Outbound]:
        out, self.outbound = self.outbound, []
        return out

    def next_deadline_ms(self) -> int | None:
        return None

    def tick(self, now_ms: int) -> None:
        pass


@dataclass
class FakeImage:
    """Applies "records" naming the delta to return (records decode to ApiVersionsRequest whose
    software name is the key)."""

    deltas: dict[str, Delta] = field(default_factory=dict)
    offset: int = -1
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    registered: dict[int, BrokerInfo] = field(default_factory=dict)
    client_quotas: ClientQuotasImage = field(default_factory=ClientQuotasImage)
    scram: ScramImage = field(default_factory=ScramImage)
    tokens: DelegationTokenImage = field(default_factory=DelegationTokenImage)

    def brokers(self) -> Sequence[BrokerInfo]:
        return list(self.registered.values())

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.registered.get(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return None

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return []

    @property
    def features(self) -> Mapping[str, int]:
        return {}

    def topic_configs(self, topic: str) -> dict[str, str]:
        return dict(self.configs.get(topic, {}))

    def configs_of(self, resource_type: int, name: str) -> dict[str, str]:
        return self.topic_configs(name) if resource_type == 2 else {}

    def apply_batch(self, offset: int, records: Sequence[Message]) -> Delta:
        self.offset = offset
        names = [r.client_software_name for r in records if isinstance(r, ApiVersionsRequest)]
        return self.deltas[names[0]]

    def apply_steps(self, offset: int, records: Sequence[Message]) -> Steps[Delta]:
        yield len(records)
        return self.apply_batch(offset, records)

    def load_snapshot(self, offset: int, records: Sequence[Message]) -> Delta:
        return self.apply_batch(offset, records)


def decode(data: bytes) -> Message:
    """The fake metadata records: an ApiVersionsRequest naming the delta the image returns."""
    return ApiVersionsRequest(client_software_name=data.decode())


@dataclass
class FakeController:
    """Its committed image is the node's (as the real one's is): replay applies to it."""

    image: FakeImage
    handled: list[Message] = field(default_factory=list)
    replayed: list[int] = field(default_factory=list)
    #: When it was ticked (the node ticks it when the raft leadership changes).
    ticks: list[int] = field(default_factory=list)

    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        self.handled.append(body)
        return BrokerHeartbeatResponse(is_fenced=False)

    def replay(self, offset: int, records: Sequence[bytes], now_ms: int) -> Delta:
        self.replayed.append(offset)
        return self.image.apply_batch(offset, [decode(r) for r in records])

    def replay_steps(self, offset: int, records: Sequence[bytes], now_ms: int) -> Steps[Delta]:
        yield len(records)
        return self.replay(offset, records, now_ms)

    def load_snapshot(self, offset: int, records: Sequence[bytes]) -> Delta:
        self.replayed.append(offset)
        return self.image.load_snapshot(offset, [decode(r) for r in records])

    def next_deadline_ms(self) -> int | None:
        return None

    def tick(self, now_ms: int) -> None:
        self.ticks.append(now_ms)

    def local_broker(self, incarnation_id: uuid.UUID) -> None:
        self.local_incarnation = incarnation_id


@dataclass
class FakeReplication:
    applied: list[tuple[tuple[str, ...], list[tuple[str, int]]]] = field(default_factory=list)
    states: list[PartitionState] = field(default_factory=list)
    untaken: list[PartitionState] = field(default_factory=list)
    closed_with: int | None = None

    def apply(
        self, states: Sequence[PartitionState], removed: Sequence[tuple[str, int]], now_ms: int
    ) -> None:
        self.applied.append((tuple(f"{s.topic}-{s.partition}" for s in states), list(removed)))
        self.states += states
        self.untaken += states

    def take_applied(self) -> list[PartitionState]:
        taken, self.untaken = self.untaken, []
        return taken

    def next_deadline_ms(self) -> int | None:
        return None

    def tick(self, now_ms: int) -> None:
        pass

    def close(self, broker_epoch: int) -> None:
        self.closed_with = broker_epoch


class Harness:
    def __init__(self) -> None:
        self.raft = FakeRaft()
        self.image = FakeImage()
        self.controller = FakeController(self.image)
        self.replication = FakeReplication()
        self.context: PartsContext | None = None
        self.node = Node(
            cluster_config(),
            rng=random.Random(3),
            build_parts=self._parts,
            decode_record=decode,
        )
        self.storage = MemoryStorage()
        self.broker = Broker(self.node.config, self.storage, rng=random.Random(3), cluster=self.node)
        self.now_ms = 1000
        self.effects: list[Effect] = []
        self.outbox: dict[int, bytearray] = {}
        self.apply(self.broker.start(self.now_ms))
        self.registered(epoch=0)

    def registered(self, epoch: int) -> None:
        """As if the controller had answered the lifecycle's registration with ``epoch`` (the
        offset of its registration record)."""
        assert self.node.lifecycle is not None
        self.node.lifecycle.broker_epoch = epoch

    def _parts(self, context: PartsContext) -> NodeParts:
        self.context = context
        return NodeParts(self.raft, self.image, self.controller, self.replication)

    def apply(self, effects: list[Effect]) -> None:
        done = settle(self.broker, effects, self.storage.apply_one, self.now_ms)
        self.effects += done
        for effect in done:
            if isinstance(effect, Send):
                for part in effect.parts:
                    assert isinstance(part, bytes)
                    self.outbox.setdefault(effect.conn_id, bytearray()).extend(part)

    def tick(self) -> None:
        self.apply(self.broker.tick(self.now_ms))

    def request(self, conn_id: int, listener: str, body: Message) -> Message:
        client = ClientConnection(ClientConfig(client_id="peer"))
        self.apply(self.broker.connection_opened(conn_id, self.now_ms, host="127.0.0.1", listener=listener))
        for _ in range(10):
            if data := client.data_to_send():
                self.apply(self.broker.receive_data(conn_id, data, self.now_ms))
            reply = bytes(self.outbox.pop(conn_id, b""))
            if reply:
                client.receive_data(reply)
            while (event := client.next_event()) is not NEED_DATA:
                if isinstance(event, Response):
                    return event.body
                self.apply(self.broker.receive_data(conn_id, client.send(body), self.now_ms))
        raise AssertionError("no answer")


def test_start_builds_the_parts_and_registers_with_the_active_controller() -> None:
    h = Harness()
    assert h.raft.started and h.context is not None
    assert h.broker.state.cluster is h.node.view
    assert h.context.view is h.node.view and h.context.state is h.broker.state
    assert h.node.view.controller_id == 2
    # The lifecycle's registration goes out to controller 2 on the controller listener.
    opened = [e for e in h.effects if isinstance(e, OpenConnection)]
    assert opened == [OpenConnection(-1, "127.0.0.1", 9095, "CONTROLLER")]
    assert h.node.lifecycle is not None and h.node.lifecycle.state.value == "STARTING"


def test_committed_batches_update_the_topics_and_the_replicas() -> None:
    h = Harness()
    states = tuple(
        PartitionState(
            "orders",
            p,
            TOPIC_ID,
            replicas=(1, 2, 3),
            isr=(1, 2, 3),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        )
        for p in range(2)
    )
    h.image.deltas["create"] = Delta(partitions=states)
    h.image.configs["orders"] = {"retention.ms": "1000"}
    h.raft.committed.append(Batch(5, (b"create",)))
    h.raft.high_watermark = 6
    h.tick()
    topic = h.broker.state.metadata.topics["orders"]
    assert (topic.topic_id, topic.partitions, topic.configs) == (TOPIC_ID, 2, {"retention.ms": "1000"})
    assert h.replication.applied == [(("orders-0", "orders-1"), [])]
    assert h.controller.replayed == [5]
    h.image.deltas["delete"] = Delta(removed_topics=(("orders", TOPIC_ID),))
    h.raft.committed.append(Batch(6, (b"delete",)))
    h.tick()
    assert "orders" not in h.broker.state.metadata.topics
    assert h.replication.applied[-1] == ((), [("orders", 0), ("orders", 1)])


def test_batches_committed_together_reach_the_replicas_as_one_delta() -> None:
    """A restarted node replays many batches at once: its replicas see only where they end."""
    h = Harness()
    first, last = (
        PartitionState(
            "orders",
            0,
            TOPIC_ID,
            replicas=(1, 2, 3),
            isr=(1, 2, 3),
            leader=leader,
            leader_epoch=epoch,
            partition_epoch=epoch,
        )
        for leader, epoch in ((1, 0), (2, 1))
    )
    h.image.deltas["old"] = Delta(partitions=(first,))
    h.image.deltas["new"] = Delta(partitions=(last,))
    h.raft.committed += [Batch(5, (b"old",)), Batch(6, (b"new",))]
    h.raft.high_watermark = 7
    h.tick()
    assert h.replication.applied == [(("orders-0",), [])]
    assert h.replication.states == [last]
    assert h.controller.replayed == [5, 6]


def test_a_node_behind_the_quorum_publishes_nothing_until_it_has_caught_up() -> None:
    h = Harness()
    state = PartitionState(
        "orders", 0, TOPIC_ID, (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=0, partition_epoch=0
    )
    h.image.deltas["create"] = Delta(partitions=(state,))
    h.image.deltas["noop"] = Delta()
    h.raft.caught_up = False  # restarted: the leader's high watermark is ahead of what it has
    h.raft.committed.append(Batch(5, (b"create",)))
    h.tick()
    assert h.controller.replayed == [5]  # the image follows the log at once
    assert h.replication.applied == [] and "orders" not in h.broker.state.metadata.topics
    h.raft.caught_up = True
    h.raft.committed.append(Batch(6, (b"noop",)))
    h.tick()
    assert h.replication.applied == [(("orders-0",), [])]
    assert "orders" in h.broker.state.metadata.topics


def test_leadership_changes_reach_the_controller() -> None:
    h = Harness()
    seen = len(h.controller.ticks)
    assert seen >= 1  # the first leadership seen at start
    h.now_ms += 10
    h.raft.leader_id, h.raft.epoch = 1, 2
    h.tick()
    assert h.controller.ticks.count(h.now_ms) == 2  # the node's tick, and the change of leader
    assert h.node.view.controller_id == 1
    h.now_ms += 10
    h.raft.leader_ready = True  # this node's raft leads with its epoch committed: it may act
    h.apply(h.broker.receive_data(-1, b"", h.now_ms))
    assert h.controller.ticks[-1] == h.now_ms


def test_controller_listener_requests_go_to_raft_and_controller() -> None:
    h = Harness()
    versions = h.request(11, "CONTROLLER", ApiVersionsRequest())
    assert isinstance(versions, ApiVersionsResponse)
    keys = {k.api_key for k in versions.api_keys}
    assert {ApiKey.VOTE, ApiKey.BROKER_HEARTBEAT, ApiKey.FETCH} <= keys and ApiKey.PRODUCE not in keys
    assert isinstance(h.request(12, "CONTROLLER", VoteRequest(cluster_id=CLUSTER_ID)), VoteResponse)
    assert [type(b).__name__ for b in h.raft.handled] == ["VoteRequest"]
    heartbeat = h.request(13, "CONTROLLER", BrokerHeartbeatRequest(broker_id=2, broker_epoch=1))
    assert isinstance(heartbeat, BrokerHeartbeatResponse)
    assert [type(b).__name__ for b in h.controller.handled] == ["BrokerHeartbeatRequest"]
    # The broker listener is the broker's, as ever.
    assert isinstance(h.request(14, "PLAINTEXT", MetadataRequest(topics=[])), MetadataResponse)
    assert h.raft.handled and len(h.controller.handled) == 1


def test_raft_requests_go_out_through_the_links() -> None:
    h = Harness()
    got: list[Message | None] = []
    h.raft.outbound.append(Outbound(3, "CONTROLLER", VoteRequest(), lambda body, now: got.append(body)))
    h.tick()
    assert OpenConnection(-2, "127.0.0.1", 9097, "CONTROLLER") in h.effects
    # A refused connection answers None.
    h.apply(h.broker.connection_closed(-2, h.now_ms))
    assert got == [None]


def test_the_registration_reaches_the_controller_over_a_link() -> None:
    h = Harness()
    # Play controller 2: accept the link, answer ApiVersions, read the registration.
    from kafka_wire.broker.apis import SUPPORTED
    from kafka_wire.protocol.events import Request
    from kafka_wire.protocol.server import ServerConfig, ServerConnection, api_versions_response

    server = ServerConnection(ServerConfig(api_versions=None))
    h.apply(h.broker.connection_established(-1, h.now_ms))
    seen: list[Message] = []
    for _ in range(5):
        server.receive_data(bytes(h.outbox.pop(-1, b"")))
        while (event := server.next_event()) is not NEED_DATA:
            assert isinstance(event, Request)
            seen.append(event.body)
            if event.api_key == ApiKey.API_VERSIONS:
                h.apply(
                    h.broker.receive_data(
                        -1,
                        server.send(event.reply(api_versions_response(SUPPORTED | {62: (0, 4), 63: (0, 1)}))),
                        h.now_ms,
                    )
                )
    assert any(isinstance(b, BrokerRegistrationRequest) for b in seen)


def test_the_view_finds_controllers_by_the_voters_and_brokers_by_registration() -> None:
    h = Harness()
    view: MetadataView = h.node.view
    assert view.endpoint_of(3, "CONTROLLER") == Endpoint("CONTROLLER", "127.0.0.1", 9097)
    assert view.endpoint_of(5, "CONTROLLER") is None
    assert view.endpoint_of(2, "PLAINTEXT") is None
    h.image.registered[2] = BrokerInfo(2, 1, (Endpoint("PLAINTEXT", "h2", 9094),), fenced=False)
    assert view.endpoint_of(2, "PLAINTEXT") == Endpoint("PLAINTEXT", "h2", 9094)
    assert [b.node_id for b in view.brokers()] == [2]
    assert (view.inter_broker_listener, view.controller_listener) == ("PLAINTEXT", "CONTROLLER")


def test_bytes_of_a_link_given_up_are_dropped() -> None:
    h = Harness()
    assert h.node.owns(-1)
    h.apply(h.broker.connection_closed(-1, h.now_ms))  # refused: the link backs off
    assert not h.node.owns(-1)
    assert h.broker.receive_data(-1, b"late", h.now_ms) == []


def test_a_restarted_broker_publishes_nothing_until_its_registration_is_in_the_image() -> None:
    """Its image then holds the fencing of its previous incarnation, whose leaderships moved: it
    never leads again on the states it had before it restarted."""
    h = Harness()
    h.registered(epoch=-1)  # the registration is not answered yet
    stale = PartitionState(
        "orders", 0, TOPIC_ID, (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=0, partition_epoch=0
    )
    moved = PartitionState(
        "orders", 0, TOPIC_ID, (1, 2, 3), (2, 3), leader=2, leader_epoch=1, partition_epoch=1
    )
    h.image.deltas["stale"] = Delta(partitions=(stale,))
    h.image.deltas["moved"] = Delta(partitions=(moved,))
    h.raft.committed.append(Batch(5, (b"stale",)))
    h.raft.high_watermark = 6
    h.tick()
    assert h.replication.applied == []
    h.registered(epoch=6)  # the registration record will be at offset 6
    h.tick()
    assert h.replication.applied == []
    h.raft.committed.append(Batch(6, (b"moved",)))
    h.raft.high_watermark = 7
    h.tick()
    assert h.replication.applied == [(("orders-0",), [])]
    assert h.replication.states == [moved]


def test_a_broker_asks_to_be_unfenced_though_control_batches_end_the_committed_log() -> None:
    """A new quorum leader's LeaderChangeMessage after the broker's registration never reaches
    the image (control batches are not handed out), so the image's offset stays below the HW for
    as long as no record follows: the broker is ready once its first metadata is published."""
    h = Harness()
    h.registered(epoch=5)
    h.image.deltas["registration"] = Delta()
    h.raft.committed.append(Batch(5, (b"registration",)))
    h.raft.high_watermark = 8  # offsets 6 and 7: LeaderChangeMessages, never handed out
    h.tick()
    assert h.image.offset == 5
    lifecycle = h.node.lifecycle
    assert lifecycle is not None and lifecycle.ready_to_unfence


def test_a_broker_behind_the_quorum_is_not_ready_to_be_unfenced() -> None:
    h = Harness()
    h.registered(epoch=5)
    h.image.deltas["registration"] = Delta()
    h.raft.caught_up = False
    h.raft.committed.append(Batch(5, (b"registration",)))
    h.raft.high_watermark = 6
    h.tick()
    lifecycle = h.node.lifecycle
    assert lifecycle is not None and not lifecycle.ready_to_unfence
