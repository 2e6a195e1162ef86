"""The simulated clients against one in-memory broker, through a tiny ClientIO that passes
bytes straight through on a virtual clock."""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Callable

from kafka_wire.broker import Broker, BrokerConfig
from kafka_wire.broker.driving import settle
from kafka_wire.broker.effects import CloseConnection, Effect, FileRegion, Send
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    FindCoordinatorRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kafka_wire.sim.clients.admin import AdminClient, TopicSpec
from kafka_wire.sim.clients.base import Address, ClientBase, Handler
from kafka_wire.sim.clients.consumer import AssignConsumer
from kafka_wire.sim.clients.consumer_member import ConsumerProtocolMember
from kafka_wire.sim.clients.group import SESSION_TIMEOUT_MS, GroupMember, MemberState
from kafka_wire.sim.clients.producer import DELIVERY_TIMEOUT_MS, Producer
from kafka_wire.sim.clients.workload import Workload, clients_for, default_clients
from kafka_wire.sim.contracts import SimClient
from kafka_wire.sim.history import History, Op, OpKind, OpType
from kafka_wire.testing.memory_storage import MemoryStorage

ADDRESS = ("node1", 9092)
START_MS = 1_000_000
LATENCY_MS = 1


class OneNode:
    """A ClientIO over one Broker: every send arrives LATENCY_MS later; ``drop_response`` drops
    the next response bytes on a connection and resets it (as a lost connection would)."""

    def __init__(self, seed: int = 1) -> None:
        self.storage = MemoryStorage()
        self.broker = Broker(
            BrokerConfig(
                host=ADDRESS[0],
                port=ADDRESS[1],
                group_initial_rebalance_delay_ms=0,
                group_min_session_timeout_ms=1000,
            ),
            self.storage,
            rng=random.Random(seed),
        )
        self.now_ms = START_MS
        self.clients: list[SimClient] = []
        self.owner: dict[int, SimClient] = {}
        self.next_conn = 1
        self.queue: list[tuple[int, int, Callable[[], None]]] = []
        self.seq = 0
        #: Connections whose next response is lost, with the connection.
        self.lose_next_response: set[int] = set()
        self.history = History()
        self._apply(self.broker.start(self.now_ms))

    # -- ClientIO ------------------------------------------------------------------------------

    def connect(self, client: SimClient, host: str, port: int) -> int:
        conn = self.next_conn
        self.next_conn += 1
        self.owner[conn] = client
        if (host, port) != ADDRESS:
            self._at(LATENCY_MS, lambda: client.closed(conn, self.now_ms))
            return conn

        def opened() -> None:
            self._apply(self.broker.connection_opened(conn, self.now_ms, host="client"))
            client.connected(conn, self.now_ms)

        self._at(LATENCY_MS, opened)
        return conn

    def send(self, conn: int, data: bytes) -> None:
        def arrive() -> None:
            if conn in self.owner:
                self._apply(self.broker.receive_data(conn, data, self.now_ms))

        self._at(LATENCY_MS, arrive)

    def close(self, conn: int) -> None:
        if self.owner.pop(conn, None) is not None:
            self._apply(self.broker.connection_closed(conn, self.now_ms))

    # -- driving -------------------------------------------------------------------------------

    def add(self, client: SimClient) -> None:
        self.clients.append(client)
        client.start(self, self.now_ms)

    def crash(self, client: SimClient) -> None:
        """The client's process dies: its connections close and it runs no more."""
        self.clients.remove(client)
        for conn in [c for c, owner in self.owner.items() if owner is client]:
            self.close(conn)

    def _at(self, delay_ms: int, action: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (self.now_ms + delay_ms, self.seq, action))

    def _apply(self, effects: list[Effect]) -> None:
        for effect in settle(self.broker, effects, self.storage.apply_one, self.now_ms):
            if isinstance(effect, Send):
                data = b"".join(
                    self.storage.read(p.path, p.position, p.size) if isinstance(p, FileRegion) else bytes(p)
                    for p in effect.parts
                )
                self._deliver(effect.conn_id, data)
            elif isinstance(effect, CloseConnection):
                self._reset(effect.conn_id, tell_broker=False)

    def _deliver(self, conn: int, data: bytes) -> None:
        if conn in self.lose_next_response:
            self.lose_next_response.discard(conn)
            self._reset(conn, tell_broker=True)
            return

        def arrive() -> None:
            client = self.owner.get(conn)
            if client is not None:
                client.received(conn, data, self.now_ms)

        self._at(LATENCY_MS, arrive)

    def _reset(self, conn: int, *, tell_broker: bool) -> None:
        client = self.owner.pop(conn, None)
        if client is None:
            return
        if tell_broker:
            self._apply(self.broker.connection_closed(conn, self.now_ms))
        self._at(LATENCY_MS, lambda: client.closed(conn, self.now_ms))

    def run(self, duration_ms: int, until: Callable[[], bool] | None = None) -> None:
        end = self.now_ms + duration_ms
        while self.now_ms < end:
            if until is not None and until():
                return
            times = [(t, 0, i) for i, c in enumerate(self.clients) if (t := c.next_deadline_ms()) is not None]
            broker_at = self.broker.next_deadline_ms()
            if broker_at is not None:
                times.append((broker_at, 1, -1))
            if self.queue:
                times.append((self.queue[0][0], 2, -1))
            if not times:
                return
            when, kind, index = min(times)
            self.now_ms = max(self.now_ms, min(when, end))
            if when > end:
                return
            if kind == 0:
                self.clients[index].tick(self.now_ms)
            elif kind == 1:
                self._apply(self.broker.tick(self.now_ms))
            else:
                heapq.heappop(self.queue)[2]()


SPECS = [
    TopicSpec("t1", 3, 1, {"min.insync.replicas": "1"}),
    TopicSpec("t2", 2, 1),
    #: More in-sync replicas asked than there are replicas: capped by the replicas (Kafka's
    #: effective min ISR), so acks=all is accepted.
    TopicSpec("tight", 1, 1, {"min.insync.replicas": "2"}),
]


def _created(world: OneNode) -> AdminClient:
    admin = AdminClient("admin", world.history, random.Random(1), [ADDRESS], SPECS)
    world.add(admin)
    world.run(5_000, until=lambda: admin.done)
    return admin


def test_admin_creates_the_topics_and_counts_existing_ones_as_made() -> None:
    world = OneNode()
    admin = _created(world)
    assert admin.done and admin.idle()
    assert sorted({t for t, _ in world.broker.state.partitions}) == ["t1", "t2", "tight"]
    again = AdminClient("admin-2", world.history, random.Random(2), [ADDRESS], SPECS)
    world.add(again)
    world.run(5_000, until=lambda: again.done)
    assert again.done  # TOPIC_ALREADY_EXISTS


def test_admin_retries_while_no_node_answers() -> None:
    world = OneNode()
    admin = AdminClient("admin", world.history, random.Random(1), [("node9", 9092), ADDRESS], SPECS)
    world.add(admin)
    world.run(10_000, until=lambda: admin.done)
    assert admin.done


def _is_client(c: ClientBase) -> SimClient:
    return c


def _sends(history: History, process: str) -> dict[str, list[Op]]:
    out: dict[str, list[Op]] = {}
    for op in history.ops:
        if op.process == process and op.kind is OpKind.SEND:
            out.setdefault(op.value, []).append(op)
    return out


def _polled(history: History, process: str) -> dict[tuple[str, int], list[tuple[int, str]]]:
    out: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for op in history.ops:
        if op.process == process and op.kind is OpKind.POLL and op.type is OpType.OK:
            out.setdefault((op.topic, op.partition), []).extend(op.records)
    return out


def test_acked_offsets_are_what_the_consumer_polls() -> None:
    world = OneNode()
    _created(world)
    rng = random.Random(3)
    producers = [
        Producer(
            "p-idem", world.history, random.Random(4), [ADDRESS], ["t1", "t2"], acks=-1, idempotent=True
        ),
        Producer("p-all", world.history, random.Random(5), [ADDRESS], ["t1"], acks=-1, interval_ms=50),
        Producer("p-one", world.history, random.Random(6), [ADDRESS], ["t2"], acks=1, acks0_share=0.2),
    ]
    consumer = AssignConsumer("consumer", world.history, rng, [ADDRESS], ["t1", "t2"])
    for c in [*producers, consumer]:
        world.add(c)
    world.run(3_000)
    for p in producers:
        p.quiesce(world.now_ms)
    world.run(10_000, until=lambda: all(p.idle() for p in producers))
    world.run(1_000)
    assert all(p.idle() for p in producers)
    polled = _polled(world.history, "consumer")
    by_value = {value: (tp, offset) for tp, records in polled.items() for offset, value in records}
    assert len(by_value) == sum(len(r) for r in polled.values())  # no value polled twice
    for tp, records in polled.items():
        offsets = [o for o, _ in records]
        assert offsets == list(range(len(offsets))), tp  # from 0, contiguous
    acks0 = 0
    for p in producers:
        sends = _sends(world.history, p.name)
        assert len(sends) > 10
        for value, ops in sends.items():
            assert ops[0].type is OpType.INVOKE and len(ops) == 2, ops
            done = ops[1]
            if done.acks == 0:
                assert done.type is OpType.INFO
                acks0 += 1
            else:
                assert done.type is OpType.OK, done
                assert by_value[value] == ((done.topic, done.partition), done.offset)
            assert value in by_value
    assert acks0 > 0


def test_group_members_split_the_partitions_and_commit_what_they_poll() -> None:
    world = OneNode()
    _created(world)
    producer = Producer("p", world.history, random.Random(4), [ADDRESS], ["t1"], acks=-1, interval_ms=30)
    members = [
        GroupMember(f"m{i}", world.history, random.Random(10 + i), [ADDRESS], ["t1"], "g") for i in (1, 2)
    ]
    for c in [producer, *members]:
        world.add(c)
    world.run(4_000)
    producer.quiesce(world.now_ms)
    world.run(10_000, until=lambda: producer.idle() and all(m.idle() for m in members))
    assert producer.idle() and all(m.idle() for m in members)
    ops = world.history.ops
    assigned = [m.assignment for m in members]
    assert sorted(assigned[0] + assigned[1]) == [("t1", 0), ("t1", 1), ("t1", 2)]
    assert all(assigned)
    final = {m.name: [o for o in ops if o.process == m.name and o.kind is OpKind.ASSIGN][-1] for m in members}
    assert final["m1"].generation == final["m2"].generation > 0
    acked = {o.value: (o.partition, o.offset) for o in ops if o.process == "p" and o.type is OpType.OK}
    polled = {
        value: (op.partition, offset)
        for op in ops
        if op.kind is OpKind.POLL and op.process in final
        for offset, value in op.records
    }
    assert polled == acked
    ends = {p: max(o for q, o in acked.values() if q == p) + 1 for p in (0, 1, 2)}
    commits = {(o.partition): o.offset for o in ops if o.kind is OpKind.COMMIT}
    assert commits == ends
    assert all(o.group == "g" and o.generation > 0 for o in ops if o.kind in (OpKind.POLL, OpKind.COMMIT))


def _lose_a_produce_response(idempotent: bool) -> History:
    """A producer's batch is written, its response lost with the connection; the batch is sent
    again."""
    world = OneNode()
    _created(world)
    producer = Producer(
        "p", world.history, random.Random(4), [ADDRESS], ["t1"], acks=-1, idempotent=idempotent
    )
    world.add(producer)
    world.run(5_000, until=lambda: any(b.in_flight for b in producer.batches.values()) and producer.sent > 3)
    world.lose_next_response.add(producer._by_address[ADDRESS])
    world.run(2_000)
    producer.quiesce(world.now_ms)
    world.run(5_000, until=producer.idle)
    consumer = AssignConsumer("c", world.history, random.Random(5), [ADDRESS], ["t1"])
    world.add(consumer)
    world.run(2_000)
    return world.history


def _polled_values(history: History) -> list[str]:
    return [value for op in history.ops if op.kind is OpKind.POLL for _, value in op.records]


def test_an_idempotent_retry_after_a_lost_response_writes_once() -> None:
    history = _lose_a_produce_response(idempotent=True)
    sends = _sends(history, "p")
    assert all([o.type for o in ops] == [OpType.INVOKE, OpType.OK] for ops in sends.values())
    values = _polled_values(history)
    assert sorted(values) == sorted(sends) and len(values) == len(set(values))
    acked = {ops[1].value: ops[1].offset for ops in sends.values()}
    polled = {value: offset for op in history.ops if op.kind is OpKind.POLL for offset, value in op.records}
    assert acked == polled


def test_a_plain_retry_after_a_lost_response_writes_twice() -> None:
    """The same scenario without idempotence: the retry is written again (this is what the test
    above rules out)."""
    history = _lose_a_produce_response(idempotent=False)
    values = _polled_values(history)
    assert len(values) == len(set(values)) + 1


def test_the_default_workload_runs_deterministically() -> None:
    def run() -> list[str]:
        world = OneNode()
        workload = Workload(nodes=1, replication_factor=1, min_insync_replicas=1)
        clients = default_clients(workload, world.history, random.Random(99))
        for client in clients:
            world.add(client)
        world.run(5_000)
        for client in clients:
            client.quiesce(world.now_ms)
        world.run(20_000, until=lambda: all(c.idle() for c in clients))
        assert all(c.idle() for c in clients)
        return [op.line() for op in world.history.ops]

    lines = run()
    assert lines == run()
    text = "\n".join(lines)
    for process in ("producer-idem", "producer-all", "producer-one", "consumer", "member-1", "member-2"):
        assert f" {process} " in text, process
    assert " assign " in text and " commit " in text
    acked = sum(1 for line in lines if " ok send " in line)
    assert 50 < acked < 500


def test_a_send_refused_before_the_append_until_the_producer_gives_up_fails() -> None:
    world = OneNode()
    _created(world)
    # Every produce is refused as a leader short of in-sync replicas refuses it (one node cannot
    # be: Kafka caps min.insync.replicas by the replicas, so the broker is told to).
    world.broker.faults.push_errors(ApiKey.PRODUCE, ErrorCode.NOT_ENOUGH_REPLICAS, forever=True)
    refused = Producer(
        "p-all", world.history, random.Random(4), [ADDRESS], ["tight"], acks=-1, interval_ms=1_000
    )
    world.add(refused)
    world.run(3_000)
    refused.quiesce(world.now_ms)
    world.run(DELIVERY_TIMEOUT_MS + 5_000, until=refused.idle)
    assert refused.idle()
    done = [ops[-1] for ops in _sends(world.history, "p-all").values()]
    assert done and all(
        o.type is OpType.FAIL and o.error == "DELIVERY_TIMEOUT:NOT_ENOUGH_REPLICAS" for o in done
    )


def test_a_position_past_the_log_is_an_info_poll_and_a_reset_to_the_start() -> None:
    world = OneNode()
    _created(world)
    producer = Producer("p", world.history, random.Random(4), [ADDRESS], ["t2"], acks=-1)
    world.add(producer)
    world.run(1_000)
    producer.quiesce(world.now_ms)
    world.run(2_000, until=producer.idle)
    consumer = AssignConsumer("c", world.history, random.Random(5), [ADDRESS], ["t2"])
    consumer.read_from(("t2", 0), 1_000)
    world.add(consumer)
    world.run(1_000)
    ops = [o for o in world.history.ops if o.process == "c" and o.partition == 0]
    assert ops[0].type is OpType.INFO and ops[0].error == "OFFSET_OUT_OF_RANGE" and ops[0].offset == 1_000
    polled = [offset for o in ops[1:] for offset, _ in o.records]
    acked = sorted(
        o.offset
        for o in world.history.ops
        if o.kind is OpKind.SEND and o.type is OpType.OK and o.partition == 0
    )
    assert polled == acked == list(range(len(acked))) and acked


def test_metadata_from_a_node_behind_does_not_move_a_leader_back_to_an_older_epoch() -> None:
    """Seed 9839 of the transactional workload: a node cut off from the quorum still answered
    Metadata naming itself leader at epoch 0 after another node led at epoch 1; the worker fetched
    from it past its log end, got OFFSET_OUT_OF_RANGE and read its inputs again from the start.
    Kafka's clients keep the newer leader of a partition (KIP-320); a new topic id starts afresh."""
    client = ClientBase("c", History(), random.Random(1), [ADDRESS], ["t1"])
    first, second = uuid.uuid4(), uuid.uuid4()

    def answer(topic_id: uuid.UUID, leader: int, epoch: int) -> None:
        partition = MetadataResponsePartition(partition_index=0, leader_id=leader, leader_epoch=epoch)
        topic = MetadataResponseTopic(name="t1", topic_id=topic_id, partitions=[partition])
        brokers = [MetadataResponseBroker(node_id=n, host=f"node{n}", port=9092) for n in (1, 2)]
        client._on_metadata(MetadataResponse(brokers=brokers, topics=[topic]), START_MS)

    answer(first, 1, 0)
    answer(first, 2, 1)
    answer(first, 1, 0)  # from the node behind
    assert (client.partitions["t1", 0].leader, client.partitions["t1", 0].epoch) == (2, 1)
    answer(first, 1, 2)
    assert client.partitions["t1", 0].leader == 1
    answer(second, 2, 0)  # deleted and created again
    assert (client.partitions["t1", 0].leader, client.partitions["t1", 0].epoch) == (2, 0)


def test_a_member_that_dies_leaves_its_partitions_to_the_other_from_the_committed_offsets() -> None:
    world = OneNode()
    _created(world)
    producer = Producer("p", world.history, random.Random(4), [ADDRESS], ["t1"], acks=-1, interval_ms=50)
    first, second = (
        GroupMember(f"m{i}", world.history, random.Random(10 + i), [ADDRESS], ["t1"], "g") for i in (1, 2)
    )
    for c in (producer, first, second):
        world.add(c)
    world.run(3_000, until=lambda: bool(first.assignment and second.assignment))
    world.run(2_000)
    dead = first if first.assignment else second
    alive = second if dead is first else first
    world.crash(dead)
    world.run(SESSION_TIMEOUT_MS + 5_000, until=lambda: len(alive.assignment) == 3)
    producer.quiesce(world.now_ms)
    world.run(10_000, until=lambda: producer.idle() and alive.idle())
    world.run(1_000)
    assert alive.assignment == [("t1", 0), ("t1", 1), ("t1", 2)] and alive.idle()
    assigns = [o for o in world.history.ops if o.process == alive.name and o.kind is OpKind.ASSIGN]
    assert assigns[-1].generation > assigns[0].generation
    acked = {o.value for o in world.history.ops if o.process == "p" and o.type is OpType.OK}
    polled: dict[tuple[int, int], str] = {}
    for op in world.history.ops:
        if op.kind is OpKind.POLL:
            for offset, value in op.records:
                assert polled.setdefault((op.partition, offset), value) == value
    assert set(polled.values()) == acked  # nothing skipped: the survivor went on from the commits


class _World:
    """The parts of a WorldView that clients_for reads."""

    def __init__(self) -> None:
        self.rng = random.Random(1)
        self.history = History()

    def nodes(self) -> list[int]:
        return [1, 2, 3, 4]

    def topics(self) -> list[tuple[str, int]]:
        return [("a", 2), ("b", 5)]

    def unclean_elections(self) -> bool:
        return True


def test_clients_for_a_world_take_its_nodes_topics_and_unclean_setting() -> None:
    world = _World()
    clients = clients_for(world, replication_factor=None)  # type: ignore[arg-type]  # a partial WorldView
    admin = clients[0]
    assert isinstance(admin, AdminClient)
    assert admin.bootstrap == [(f"node{n}", 9092) for n in (1, 2, 3, 4)]
    assert [(s.name, s.partitions, s.replication_factor) for s in admin.specs.values()] == [
        ("a", 2, 3),
        ("b", 5, 3),
    ]
    assert admin.specs["a"].configs == {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    classic = [c for c in clients if type(c) is GroupMember]
    assert [m.topics for m in classic] == [["a"], ["a"]]
    kip848 = [c for c in clients if isinstance(c, ConsumerProtocolMember)]
    assert [m.topics for m in kip848] == [["a", "b"], ["a", "b"]]


class _Recording(GroupMember):
    """A member whose requests are kept, with their handlers, instead of sent."""

    def __init__(self) -> None:
        super().__init__("m", History(), random.Random(1), [ADDRESS], ["t1"], "g")
        self.partition_counts = {"t1": 1}
        self.sent: list[tuple[Address, Message, Handler | None]] = []

    def request(
        self, address: Address, message: Message, handler: Handler | None, *, timeout_ms: int | None = None
    ) -> None:
        self.sent.append((address, message, handler))


def test_a_join_answered_after_a_commit_lost_the_coordinator_waits_for_the_coordinator() -> None:
    """Seed 209: a stable member's OffsetCommit is in flight when a heartbeat says
    REBALANCE_IN_PROGRESS; the member sends JoinGroup; then the commit's answer,
    COORDINATOR_NOT_AVAILABLE (its offsets append failed), marks the coordinator unknown; then the
    JoinGroup is answered. Kafka's consumer disconnects from a coordinator it marks unknown, which
    fails the JoinGroup: the member finds the coordinator again and joins again."""
    member = _Recording()
    member.coordinator = ADDRESS
    member.member_id = "m-1"
    member.pump(START_MS)
    ((_, _, joined),) = [s for s in member.sent if isinstance(s[1], JoinGroupRequest)]
    assert joined is not None
    member._group_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, START_MS + 1)  # the commit's answer
    answer = JoinGroupResponse(
        generation_id=2, protocol_name="range", leader="m-1", member_id="m-1", members=[]
    )
    joined(answer, START_MS + 2)
    assert member.coordinator is None and member.state is MemberState.JOINING
    member.pump(START_MS + 200)
    assert isinstance(member.sent[-1][1], FindCoordinatorRequest)


def _commit_answered(answer: OffsetCommitResponse | None) -> list[Op]:
    """A stable member of generation 3 commits t1-0 at 5; ``answer`` comes back (None: none)."""
    member = _Recording()
    member.coordinator = ADDRESS
    member.member_id = "m-1"
    member.generation = 3
    member.state = MemberState.STABLE
    member.read_from(("t1", 0), 5)
    member._commit(START_MS)
    ((_, _, handler),) = [s for s in member.sent if isinstance(s[1], OffsetCommitRequest)]
    assert handler is not None
    handler(answer, START_MS + 7)
    return [o for o in member.history.ops if o.kind is OpKind.COMMIT]


def _answer(code: ErrorCode) -> OffsetCommitResponse:
    partition = OffsetCommitResponsePartition(partition_index=0, error_code=code)
    return OffsetCommitResponse(topics=[OffsetCommitResponseTopic(name="t1", partitions=[partition])])


def test_a_commit_whose_fate_is_unknown_is_an_info_commit() -> None:
    """Seed 815: a commit whose answer is lost may still be stored, even after later commits
    (the coordinator reads it late from the dead connection): the history says so, with the
    time it was sent, so that the checker allows a member to resume there."""
    (lost,) = _commit_answered(None)
    assert (lost.type, lost.offset, lost.invoked_ms, lost.time_ms) == (OpType.INFO, 5, START_MS, START_MS + 7)
    assert (lost.topic, lost.partition, lost.group, lost.generation) == ("t1", 0, "g", 3)
    # The coordinator may have appended it before answering so (a timed-out replication).
    (failed,) = _commit_answered(_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    assert (failed.type, failed.offset, failed.error) == (OpType.INFO, 5, "COORDINATOR_NOT_AVAILABLE")
    (stored,) = _commit_answered(_answer(ErrorCode.NONE))
    assert (stored.type, stored.offset, stored.invoked_ms) == (OpType.OK, 5, START_MS)
    assert _commit_answered(_answer(ErrorCode.ILLEGAL_GENERATION)) == []  # refused: not stored
